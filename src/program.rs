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

/// One layer of one character's pose program, written by the state step each update.
///
/// The layer's samples lie at `first_sample..first_sample + num_target + num_source` in the
/// step's sample buffer: first the active (destination) state's clips, then the transition
/// source state's clips. Sample weights are premultiplied by their side's share, so while a
/// crossfade runs between two states the layer's weights sum to one. When
/// [`LayerProgram::SOURCE_SNAPSHOT`] is set the source is the character's frozen snapshot
/// instead, with share `1 − target_weight`. Layer weight, blend mode, mask and space are the
/// graph's (`graph::Layer`), the same for every character.
///
/// Keep in sync with `LayerProgram` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LayerProgram {
    /// Index of the layer's first sample in the sample buffer.
    pub first_sample: u32,
    /// Samples of the active state, starting at `first_sample`.
    pub num_target: u32,
    /// Samples of the transition's source state, after the active state's; 0 when not
    /// crossfading between two states.
    pub num_source: u32,
    /// Index of the graph transition in flight or switched this update; `u32::MAX` for none.
    pub transition: u32,
    /// Switch mode of `transition`: 0 cut, 1 frozen, 2 crossfade, 3 inertialize.
    pub mode: u32,
    /// Bit set of `TRANSITIONING`, `SOURCE_SNAPSHOT`, `SWITCHED`.
    pub flags: u32,
    /// Eased share of the active state in [0, 1]; 1 when no transition is in flight and for
    /// inertialization, which evaluates the new state alone.
    pub target_weight: f32,
    /// Linear progress of the transition in [0, 1]; 1 when none is in flight.
    pub progress: f32,
}

impl LayerProgram {
    /// A transition is in flight.
    pub const TRANSITIONING: u32 = 1;
    /// The transition's source is the frozen snapshot (frozen mode, or an interrupted crossfade).
    pub const SOURCE_SNAPSHOT: u32 = 2;
    /// A transition was taken this update: capture the snapshot from the last displayed pose
    /// (frozen, interrupted crossfade) or seed inertialization offsets.
    pub const SWITCHED: u32 = 4;

    /// The layer's samples as a range of the sample buffer, for the evaluators.
    #[must_use]
    pub fn sample_range(&self) -> std::ops::Range<u32> {
        self.first_sample..self.first_sample + self.num_target + self.num_source
    }
}
