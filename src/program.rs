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

/// Checks a crowd's programs against a table of `num_clips` clips, character by character:
/// every range lies inside `samples` ([`ProgramError::SampleRange`]); every sample names a clip
/// ([`ProgramError::UnknownClip`]) and has a finite time and a finite non-negative weight
/// ([`ProgramError::BadSample`]).
pub fn validate_samples(samples: &[ClipSample], sample_ranges: &[Range<u32>], num_clips: usize) -> Result<(), ProgramError> {
    for (character, range) in sample_ranges.iter().enumerate() {
        let Some(character_samples) = samples.get(range.start as usize..range.end as usize) else {
            return Err(ProgramError::SampleRange {
                character,
                start: range.start,
                end: range.end,
                num_samples: samples.len(),
            });
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
    }
    Ok(())
}
