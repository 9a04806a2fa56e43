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
    /// Clip seconds advanced since last frame (non-negative): root motion is read between
    /// `time_s - advance_s` and `time_s`, across loop wraps.
    pub advance_s: f32,
}

impl ClipSample {
    /// A sample that did not advance (no root motion).
    #[must_use]
    pub const fn new(clip: u32, time_s: f32, weight: f32) -> Self {
        Self { clip, time_s, weight, advance_s: 0.0 }
    }
}

/// How a layer's pose moves from the source to the destination while a transition runs.
/// Stored as `u32` in [`LayerProgram::mode`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SwitchMode {
    /// No transition in flight, or a cut: the destination alone.
    #[default]
    Cut = 0,
    /// Fade from a snapshot of the pose displayed at the switch to the destination.
    Frozen = 1,
    /// Fade from the source state (still evaluated) to the destination.
    Crossfade = 2,
    /// The destination alone plus a quintic offset with zero starting acceleration (seed 000).
    InertializeQuintic = 3,
    /// The destination alone plus Bollo's overshoot-free quintic offset.
    InertializeQuinticOvershootControl = 4,
    /// The destination alone plus a critically damped spring offset.
    InertializeSpring = 5,
}

impl SwitchMode {
    /// The mode for a stored code; unknown codes read as a cut.
    #[must_use]
    pub fn from_code(code: u32) -> Self {
        match code {
            1 => Self::Frozen,
            2 => Self::Crossfade,
            3 => Self::InertializeQuintic,
            4 => Self::InertializeQuinticOvershootControl,
            5 => Self::InertializeSpring,
            _ => Self::Cut,
        }
    }

    /// Whether this mode inertializes.
    #[must_use]
    pub fn is_inertialization(self) -> bool {
        matches!(self, Self::InertializeQuintic | Self::InertializeQuinticOvershootControl | Self::InertializeSpring)
    }
}

/// [`LayerProgram::flags`]: a transition started on this frame; the evaluator captures the
/// frozen snapshot or the inertialization offsets from the pose displayed last frame.
pub const FLAG_SWITCHED: u32 = 1;

/// [`LayerProgram::flags`]: this layer's states extract root motion (base layer only): the
/// root's horizontal travel and yaw are reported to the caller and removed from the pose.
pub const FLAG_ROOT_MOTION: u32 = 2;

/// What one layer of one character shows this frame.
///
/// The layer's pose is the destination samples, blended; while a transition runs, `mode` says
/// how the source is mixed in:
///
/// | mode | `second` samples | `blend` | `elapsed_s`, `duration_s` |
/// |---|---|---|---|
/// | cut | unused | 1 | unused |
/// | frozen | unused | eased weight of the destination | unused |
/// | crossfade | the source state | eased weight of the destination | unused |
/// | inertialize | on the switch frame only: the destination one step earlier, for its velocity | 1 | time since the switch; quintic duration or spring halflife |
///
/// Keep in sync with `LayerProgram` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LayerProgram {
    /// First destination sample in the frame's sample array.
    pub start: u32,
    /// Number of destination samples; 0 shows the rest pose (identity for additive layers).
    pub count: u32,
    /// First of the second sample set (see the table).
    pub second_start: u32,
    /// Number of samples in the second set.
    pub second_count: u32,
    /// Eased weight of the destination in [0, 1].
    pub blend: f32,
    /// The layer's weight in [0, 1].
    pub weight: f32,
    /// A [`SwitchMode`] code.
    pub mode: u32,
    /// [`FLAG_SWITCHED`], [`FLAG_ROOT_MOTION`].
    pub flags: u32,
    /// Real seconds since the inertialization switch.
    pub elapsed_s: f32,
    /// Quintic duration or spring halflife, seconds.
    pub duration_s: f32,
}
