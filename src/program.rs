//! Pose programs: what the state step asks the evaluators to compute for each character.
//!
//! This is the contract between `state` (which writes programs) and the two evaluators, `eval`
//! on the CPU and `gpu` on the device, which read them and never each other. Structs here are
//! `#[repr(C)]` and `Pod` because they are uploaded as they are.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::clip::Clip;

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

/// Why a set of pose programs was refused; shared by both evaluators so that the CPU and the GPU
/// accept exactly the same programs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramError {
    /// A clip was built for a rig with a different joint count.
    #[error("clip {clip} ({name:?}) has {clip_joints} joints; the rig has {rig_joints}")]
    ClipRigMismatch {
        /// The clip index.
        clip: usize,
        /// The clip's name.
        name: String,
        /// The clip's joint count.
        clip_joints: usize,
        /// The rig's joint count.
        rig_joints: usize,
    },
    /// A character's sample range lies outside the sample slice or runs backwards.
    #[error("character {character}: sample range {start}..{end} is outside the {num_samples} samples")]
    SampleRange {
        /// The character.
        character: usize,
        /// Range start.
        start: u32,
        /// Range end.
        end: u32,
        /// Samples given.
        num_samples: usize,
    },
    /// A sample names a clip that does not exist.
    #[error("character {character}: sample {sample} names clip {clip}, but there are {num_clips} clips")]
    UnknownClip {
        /// The character.
        character: usize,
        /// Index into the sample slice.
        sample: usize,
        /// The clip index given.
        clip: u32,
        /// Clips given.
        num_clips: usize,
    },
    /// A sample's time or weight is NaN or infinite, or its weight is negative.
    #[error("character {character}: sample {sample} has time {time_s} s and weight {weight}; both must be finite and the weight non-negative")]
    BadSample {
        /// The character.
        character: usize,
        /// Index into the sample slice.
        sample: usize,
        /// The time given.
        time_s: f32,
        /// The weight given.
        weight: f32,
    },
}

/// Checks that every clip has the rig's joint count ([`ProgramError::ClipRigMismatch`] names
/// the first that does not).
pub fn validate_clips(rig_joints: usize, clips: &[Clip]) -> Result<(), ProgramError> {
    for (i, clip) in clips.iter().enumerate() {
        if clip.num_joints() != rig_joints {
            return Err(ProgramError::ClipRigMismatch {
                clip: i,
                name: clip.name().to_owned(),
                clip_joints: clip.num_joints(),
                rig_joints,
            });
        }
    }
    Ok(())
}

/// Checks a crowd's programs against a table of `num_clips` clips, character by character
/// (see [`validate_sample_range`]).
pub fn validate_samples(samples: &[ClipSample], sample_ranges: &[Range<u32>], num_clips: usize) -> Result<(), ProgramError> {
    for (character, range) in sample_ranges.iter().enumerate() {
        validate_sample_range(character, range.clone(), samples, num_clips)?;
    }
    Ok(())
}

/// Checks one range of `character`'s samples: it lies inside `samples`
/// ([`ProgramError::SampleRange`]); every sample in it names one of `num_clips` clips
/// ([`ProgramError::UnknownClip`]) and has a finite time and a finite non-negative weight
/// ([`ProgramError::BadSample`]).
pub fn validate_sample_range(character: usize, range: Range<u32>, samples: &[ClipSample], num_clips: usize) -> Result<(), ProgramError> {
    let Some(character_samples) = samples.get(range.start as usize..range.end as usize) else {
        return Err(ProgramError::SampleRange { character, start: range.start, end: range.end, num_samples: samples.len() });
    };
    for (k, s) in character_samples.iter().enumerate() {
        let sample = range.start as usize + k;
        if s.clip as usize >= num_clips {
            return Err(ProgramError::UnknownClip { character, sample, clip: s.clip, num_clips });
        }
        if !(s.time_s.is_finite() && s.weight.is_finite() && s.weight >= 0.0) {
            return Err(ProgramError::BadSample { character, sample, time_s: s.time_s, weight: s.weight });
        }
    }
    Ok(())
}
