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
//! On the GPU, [`sample_positions`] comes first: each sample's frame coordinate in its clip,
//! resolved once a frame so that no joint repeats the clip's time arithmetic.
//!
//! The fused frames are stages too: [`EvalCrowdJob`] ([`frame`], mirrored by
//! `shaders/frame.wgsl`) runs the stages above for many characters in parallel with rayon, and
//! [`frame_layers::FrameJob`] (`shaders/frame_layers.wgsl`) every layer with its memory. Each
//! character is independent, so the output is bitwise identical for any thread count.
//! `tests/stage_parity.rs` checks the names: every `shaders/X.wgsl` has `eval::X`, a pipeline
//! field `X` and a test `X_matches_cpu`.

pub mod blend_space;
pub mod expand;
pub mod frame;
pub mod frame_layers;
pub mod inertialize;
pub mod layers;
pub mod local_to_model;
pub mod procedural;
pub mod root_motion;
pub mod sample;
pub mod sample_positions;
pub mod skinning;
pub mod transition;

pub use frame::EvalCrowdJob;

use crate::program::{OutputLayout, ProceduralError, ProgramError};

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
    /// The state records or blend inputs were refused by the expand stage.
    #[error(transparent)]
    Expand(#[from] expand::ExpandError),
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
    /// The `frame_layers::EvalContext` was made for another joint count than the rig's.
    #[error("the evaluation context holds {context_joints} joints per character; the rig has {rig_joints}")]
    ContextJoints {
        /// Joints the context was made for.
        context_joints: usize,
        /// Joints of the job's rig.
        rig_joints: usize,
    },
    /// The `frame_layers::EvalContext` was made for another layer count than the job's setup.
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

/// Runs `f` compiled for AVX where the CPU has it (checked at run time), else for the
/// target's baseline: the same arithmetic either way, with AVX's three-operand instructions
/// and broadcasts from memory doing it in fewer instructions. No FMA, which would round
/// differently: the output is the same to the bit on every CPU.
#[inline(always)]
fn with_avx<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        #[target_feature(enable = "avx")]
        fn avx<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // SAFETY: the CPU has AVX, checked just above.
        return unsafe { avx(f) };
    }
    f()
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
