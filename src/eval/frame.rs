//! The plain frame: every character's one blended sample list through sample →
//! local_to_model → skinning, mirrored by the GPU's fused `shaders/frame.wgsl`
//! (`GpuCrowd::set_samples`). The layered frame is [`super::frame_layers`].

use std::ops::Range;

use glam::Mat4;
use rayon::prelude::*;

use super::{CHARACTERS_PER_CHUNK, EvalError, check_output_size, sample, skinning};
use crate::clip::Clip;
use crate::program::{ClipSample, OutputLayout, validate_clips, validate_samples};
use crate::rig::{Rig, Transform};

/// Evaluates skinning matrices for a crowd of characters sharing one rig and clip table.
///
/// Character `i`'s clips are `samples[sample_ranges[i]]`; its joint `j` is written at
/// `(i * num_joints + j) * layout.floats_per_joint()` in `output`. A character with no samples
/// (or no weight that counts, [`crate::program::weighs`]) shows the rest pose.
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

impl EvalCrowdJob<'_> {
    /// Checks the job, in this order:
    /// - every clip has the rig's joint count ([`crate::program::ProgramError::ClipRigMismatch`]);
    /// - the output size matches ([`EvalError::OutputSize`]);
    /// - every range lies inside `samples` ([`crate::program::ProgramError::SampleRange`]);
    /// - every sample names a clip ([`crate::program::ProgramError::UnknownClip`]) and has a finite time and a
    ///   finite non-negative weight ([`crate::program::ProgramError::BadSample`]).
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
    skinning::local_to_model_skinning(
        rig.parents(),
        &scratch.local,
        rig.inverse_bind(),
        layout,
        &mut scratch.model,
        out,
    );
}
