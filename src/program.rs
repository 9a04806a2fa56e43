//! Pose programs: what the state step asks the evaluators to compute for each character.
//!
//! This is the contract between `state` (which writes programs) and the two evaluators, `eval`
//! on the CPU and `gpu` on the device, which read them and never each other. Structs here are
//! `#[repr(C)]` and `Pod` because they are uploaded as they are.

use bytemuck::{Pod, Zeroable};

/// One clip to sample for a character: which clip, at what time, with what weight.
///
/// Keep in sync with `ClipSample` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ClipSample {
    /// Index into the archetype's clip table.
    pub clip: u32,
    /// Time in the clip, seconds; wrapped or clamped by the clip's loop flag.
    pub time_s: f32,
    /// Blend weight, finite and non-negative; a character's weights are normalised to sum to one.
    pub weight: f32,
}
