//! The CPU evaluator: the reference for every GPU stage and the fallback without an adapter.
//!
//! Each submodule mirrors one shader in `shaders/` and has its name (stage parity):
//!
//! ```text
//! pose program ──► sample ──► local_to_model ──► skinning ──► output buffer
//!  (ClipSample)    clips at     parent-first      model ×        mat4 or
//!                  times,       walk              inverse bind   affine 3×4
//!                  weighted
//!                  blend
//! ```
//!
//! [`EvalCrowdJob`] runs the stages for many characters in parallel with rayon; each
//! character is independent, so the output is bitwise identical for any thread count.

pub mod frame;
pub mod inertialize;
pub mod layers;
pub mod local_to_model;
pub mod procedural;
pub mod root_motion;
pub mod sample;
pub mod skinning;
pub mod transition;

use std::ops::Range;

use glam::Mat4;
use rayon::prelude::*;

use crate::clip::Clip;
use crate::program::{ClipSample, ProceduralError, ProgramError, validate_clips, validate_samples};

use crate::program::OutputLayout;
use crate::rig::{Rig, Transform};

/// Why an evaluation job was refused. Nothing is written when validation fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The output slice does not hold exactly one matrix per joint per character.
    #[error(
        "output holds {got} floats; {characters} characters × {joints} joints × {floats_per_joint} floats = {expected} expected"
    )]
    OutputSize {
        /// Characters in the job.
        characters: usize,
        /// Joints per character.
        joints: usize,
        /// Floats per joint of the layout.
        floats_per_joint: usize,
        /// Floats needed.
        expected: usize,
        /// Floats given.
        got: usize,
    },
    /// The root-motion slice is neither empty nor one entry per character.
    #[error("{got} root motion entries for {characters} characters (give none, or one per character)")]
    RootMotionCount {
        /// Entries given.
        got: usize,
        /// Characters in the job.
        characters: usize,
    },
    /// The clips, samples, layers or programs were refused by the checks both evaluators share.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The procedural setup or targets were refused, or do not fit the frame.
    #[error(transparent)]
    Procedural(#[from] ProceduralError),
    /// A slice of local poses is not a whole number of characters.
    #[error("{transforms} transforms is not a whole number of characters of {joints} joints")]
    PoseCount {
        /// Transforms given.
        transforms: usize,
        /// Joints per character.
        joints: usize,
    },
    /// Programs, context and counters are sized for different crowds.
    #[error(
        "{programs} layer programs, {characters} characters × {layers} layers expected; the context holds {context_characters} characters"
    )]
    ProgramCount {
        /// Programs given.
        programs: usize,
        /// Characters (length of the per-character counters).
        characters: usize,
        /// Layers in the setup.
        layers: usize,
        /// Characters the context was sized for.
        context_characters: usize,
    },
    /// The `frame::EvalContext` was made for another joint count than the rig's.
    #[error("the evaluation context holds {context_joints} joints per character; the rig has {rig_joints}")]
    ContextJoints {
        /// Joints the context was made for.
        context_joints: usize,
        /// Joints of the job's rig.
        rig_joints: usize,
    },
    /// The `frame::EvalContext` was made for another layer count than the job's setup.
    #[error("the evaluation context holds {context_layers} layers per character; the job has {layers}")]
    ContextLayers {
        /// Layers the context was made for.
        context_layers: usize,
        /// Layers in the job's setup.
        layers: usize,
    },
    /// A layer that needs memory (`program::LayerSetup::needs_memory`) has none in the context:
    /// it was built with `EvalContext::for_layers` for a setup where that layer had only cuts.
    #[error(
        "layer {layer} needs per-character memory but the context holds none for it; build the context with EvalContext::for_layers from these layers"
    )]
    ContextMemory {
        /// The layer.
        layer: usize,
    },
}

/// Characters per rayon task: large enough to amortise the scratch pose, small enough to
/// balance two to sixteen cores on a few thousand characters.
pub const CHARACTERS_PER_CHUNK: usize = 64;

/// Evaluates skinning matrices for a crowd of characters sharing one rig and clip table.
///
/// Character `i`'s clips are `samples[sample_ranges[i]]`; its joint `j` is written at
/// `(i * num_joints + j) * layout.floats_per_joint()` in `output`. A character with no samples
/// (or weights summing to zero) shows the rest pose.
#[derive(Debug)]
pub struct EvalCrowdJob<'a> {
    /// The rig every character uses.
    pub rig: &'a Rig,
    /// The clip table `ClipSample::clip` indexes.
    pub clips: &'a [Clip],
    /// Every character's samples, back to back.
    pub samples: &'a [ClipSample],
    /// Each character's range in `samples`; its length is the number of characters.
    pub sample_ranges: &'a [Range<u32>],
    /// The output matrix layout.
    pub layout: OutputLayout,
    /// Output, `characters × joints × layout.floats_per_joint()` floats.
    pub output: &'a mut [f32],
}

/// [`EvalError::OutputSize`] unless `got` floats hold `characters` × `joints` joints in
/// `layout`: the one output check of every CPU job and of `runtime::CrowdRuntime::evaluate`.
pub(crate) fn check_output_size(
    got: usize,
    characters: usize,
    joints: usize,
    layout: OutputLayout,
) -> Result<(), EvalError> {
    let floats_per_joint = layout.floats_per_joint();
    let expected = characters * joints * floats_per_joint;
    if got == expected {
        Ok(())
    } else {
        Err(EvalError::OutputSize { characters, joints, floats_per_joint, expected, got })
    }
}

impl EvalCrowdJob<'_> {
    /// Checks the job, in this order:
    /// - every clip has the rig's joint count ([`ProgramError::ClipRigMismatch`]);
    /// - the output size matches ([`EvalError::OutputSize`]);
    /// - every range lies inside `samples` ([`ProgramError::SampleRange`]);
    /// - every sample names a clip ([`ProgramError::UnknownClip`]) and has a finite time and a
    ///   finite non-negative weight ([`ProgramError::BadSample`]).
    pub fn validate(&self) -> Result<(), EvalError> {
        let joints = self.rig.num_joints();
        validate_clips(self.rig, self.clips, 0)?;
        check_output_size(self.output.len(), self.sample_ranges.len(), joints, self.layout)?;
        validate_samples(self.samples, self.sample_ranges, self.clips.len())?;
        Ok(())
    }

    /// Validates, then evaluates every character in parallel.
    pub fn run(self) -> Result<(), EvalError> {
        self.validate()?;
        let joints = self.rig.num_joints();
        let per_character = joints * self.layout.floats_per_joint();
        let Self { rig, clips, samples, sample_ranges, layout, output } = self;
        #[cfg(feature = "tracy")]
        crate::profile::count_sample_lists(sample_ranges);
        output.par_chunks_mut(per_character * CHARACTERS_PER_CHUNK).enumerate().for_each_init(
            || Scratch::new(joints),
            |scratch, (chunk, out)| {
                let first = chunk * CHARACTERS_PER_CHUNK;
                for (k, out) in out.chunks_exact_mut(per_character).enumerate() {
                    let range = &sample_ranges[first + k];
                    let samples = &samples[range.start as usize..range.end as usize];
                    evaluate_character(rig, clips, samples, layout, scratch, out);
                }
            },
        );
        Ok(())
    }
}

/// Per-thread working poses, reused across characters.
struct Scratch {
    local: Vec<Transform>,
    model: Vec<Mat4>,
}

impl Scratch {
    fn new(joints: usize) -> Self {
        Self { local: vec![Transform::IDENTITY; joints], model: vec![Mat4::IDENTITY; joints] }
    }
}

/// One character through every stage: the shape of the fused GPU frame.
fn evaluate_character(
    rig: &Rig,
    clips: &[Clip],
    samples: &[ClipSample],
    layout: OutputLayout,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    sample::sample_blend(clips, samples, rig.rest_pose(), &mut scratch.local);
    local_to_model::local_to_model(rig.parents(), rig.joints_by_depth(), &scratch.local, &mut scratch.model);
    skinning::skinning(&scratch.model, rig.inverse_bind(), layout, out);
}
