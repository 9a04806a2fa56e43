//! Pose programs: what the state step asks the evaluators to compute for each character.
//!
//! This is the contract between `state` (which writes programs) and the two evaluators, `eval`
//! on the CPU and `gpu` on the device, which read them and never each other. Structs here are
//! `#[repr(C)]` and `Pod` because they are uploaded as they are.
//!
//! The state step writes state records (`record.rs`: [`LayerRecord`]), which both evaluators
//! expand into programs and samples with the one expansion here ([`expand_character`]).
//!
//! Beside them sits the rest of what describes the frame both evaluators run: the archetype's
//! layer setup (blend, space, mask, evaluation order: `layer_setup.rs`), the output layout,
//! and the checks both apply, so neither evaluator reaches into the other for them.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::clip::Clip;
use crate::rig::{MAX_CHAIN_SCALE, MAX_JOINTS, MAX_TRANSLATION_M, Rig};

mod layer_setup;
mod procedural;
mod record;

pub use layer_setup::{
    LayerBlend, LayerSetup, LayerSpace, MAX_LAYERS, Mask, MaskEntry, MaskError, evaluation_order,
    evaluation_order_iter, memory_slots, num_additive_layers, validate_layer_setups, validate_memoryless_programs,
    validate_memoryless_records,
};
pub use procedural::{
    ChainPart, ChainWeightBinding, ChainWeightInput, EndRotation, FootGround, FootSetup, GroundSetup, LookAtChain,
    LookAtTargets, MAX_FEET, ProceduralError, ProceduralRig, ProceduralSetup, ProceduralTargets, TwoBoneChain,
    TwoBoneTargets,
};
pub use record::{
    CHARACTERS_PER_TASK, CLOCK_SLOTS, ExpandLeaf, ExpandState, ExpandTables, LayerRecord, NO_STATE, NO_TRANSITION,
    OwnedRecordFrame, RecordClock, RecordFrame, ShotRecord, clock_at, expand_character, expand_frame, expand_layer,
    expand_words, mul_hi, played_seconds, validate_records,
};
pub(crate) use record::{RecordChanges, changed_after};

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
    /// A weight below `f32::MIN_POSITIVE` (a subnormal one) counts as zero ([`weighs`]).
    pub weight: f32,
    /// Clip seconds advanced since last frame (non-negative): root motion is read between
    /// `time_s - advance_s` and `time_s`, across loop wraps. Root motion is the CPU's: on the
    /// device this word of each uploaded sample is overwritten with its frame coordinate
    /// ([`crate::Clip::frame_coordinate`]), which the GPU's kernels read (`position` in
    /// `shaders/shared/types.wgsl`).
    pub advance_s: f32,
}

/// Whether a blend weight counts: at least `f32::MIN_POSITIVE` (2⁻¹²⁶). Both evaluators give a
/// sample or a layer whose weight is zero or subnormal no share, so that they agree on every GPU:
/// Vulkan leaves it to the driver whether subnormal floats are flushed to zero (lavapipe's and
/// AMD's are), where a subnormal weight could vanish from a sum but not from a comparison, and
/// its share `w / Σw` become `0 / 0`. Weights that count sum to at least 2⁻¹²⁶, so a blend never
/// divides by a subnormal. NaN does not count.
///
/// ```
/// use throng::program::weighs;
/// assert!(weighs(1e-30));
/// assert!(!weighs(1e-40) && !weighs(0.0) && !weighs(f32::NAN));
/// ```
#[must_use]
#[inline]
pub fn weighs(weight: f32) -> bool {
    weight >= f32::MIN_POSITIVE
}

/// The samples whose weights count ([`weighs`]), the only ones a blend reads.
pub(crate) fn counted(samples: &[ClipSample]) -> impl Iterator<Item = &ClipSample> {
    samples.iter().filter(|s| weighs(s.weight))
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

/// How each skinning matrix is written to the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputLayout {
    /// Column-major `mat4x4<f32>`: 16 floats, column 0 first.
    #[default]
    Mat4,
    /// Affine 3×4: the matrix's top three rows, row by row (12 floats). A point transforms as
    /// `p' = (dot(row0, p), dot(row1, p), dot(row2, p))` with `p = (x, y, z, 1)`; in WGSL,
    /// `p * mat3x4<f32>(row0, row1, row2)`. 25 % less to write than `Mat4`.
    Affine3x4,
}

impl OutputLayout {
    /// Floats written per joint.
    #[must_use]
    pub const fn floats_per_joint(self) -> usize {
        match self {
            Self::Mat4 => 16,
            Self::Affine3x4 => 12,
        }
    }

    /// Some joints' skinning matrices out of `rows`, each character's floats in this layout for
    /// its joints `first_joint ..` (a whole character from `first_joint` 0, or the span a
    /// readback copied): per character, each of `joints` in the order listed, `joints.len() ×
    /// floats_per_joint()` floats. Every listed joint must lie in each row.
    ///
    /// ```
    /// use throng::program::OutputLayout;
    ///
    /// // Two characters of three joints, each joint's 16 floats its character × 10 + joint.
    /// let rows: Vec<f32> = (0..2).flat_map(|c| (0..3).flat_map(move |j| [(10 * c + j) as f32; 16])).collect();
    /// let picked = OutputLayout::Mat4.select_joints(&rows, 3, 0, &[2, 0]);
    /// let firsts: Vec<f32> = picked.chunks(16).map(|m| m[0]).collect();
    /// assert_eq!(firsts, [2.0, 0.0, 12.0, 10.0]);
    /// ```
    #[must_use]
    pub fn select_joints(self, rows: &[f32], joints_per_row: usize, first_joint: usize, joints: &[usize]) -> Vec<f32> {
        let floats = self.floats_per_joint();
        let per_character = joints_per_row * floats;
        let mut out = Vec::with_capacity(rows.len() / per_character.max(1) * joints.len() * floats);
        for character in rows.chunks_exact(per_character) {
            for &joint in joints {
                let at = (joint - first_joint) * floats;
                out.extend_from_slice(&character[at..at + floats]);
            }
        }
        out
    }
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
    #[error(
        "character {character}: sample {sample} has time {time_s} s and weight {weight}; both must be finite and the weight non-negative"
    )]
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
    /// The layer setup is unusable (no layers, or a mask sized for another rig).
    #[error("layers: {0}")]
    Layers(String),
    /// The frame's time step is NaN, infinite or negative.
    #[error("dt {0} s: the time step must be finite and non-negative")]
    BadDt(f32),
    /// A due list's rows and seconds differ in length.
    #[error("due list: {rows} rows but {dt} seconds")]
    DueLength {
        /// Rows given.
        rows: usize,
        /// Seconds given.
        dt: usize,
    },
    /// A due list's entry names a row past the crowd, repeats or goes back (rows must
    /// ascend), or carries seconds that are NaN, infinite or negative.
    #[error("due list entry {index}: row {row} with {dt_s} s: {what}")]
    BadDueRow {
        /// Index in the due list.
        index: usize,
        /// The row given.
        row: u32,
        /// Its seconds since the last evaluation.
        dt_s: f32,
        /// What is wrong.
        what: &'static str,
    },
    /// The layer programs are not a whole number of characters.
    #[error("{programs} layer programs is not a whole number of characters of {layers} layers")]
    LayerProgramCount {
        /// Programs given.
        programs: usize,
        /// Layers per character.
        layers: usize,
    },
    /// A layer program holds a NaN, an infinity, a weight outside [0, 1] or a negative
    /// curve parameter.
    #[error("character {character} layer {layer}: bad program {what}")]
    BadProgram {
        /// The character.
        character: usize,
        /// The layer.
        layer: usize,
        /// The program, printed.
        what: String,
    },
    /// A layer set up without memory (`eval::frame_layers::LayerSetup::needs_memory` false) was given
    /// a program that needs it: a switch mode other than cut, or a fade from the snapshot.
    #[error(
        "character {character} layer {layer}: switch mode {mode} (flags {flags:#x}) needs per-character memory, but the layer was set up without it (its graph has only cuts)"
    )]
    NeedsMemory {
        /// The character.
        character: usize,
        /// The layer.
        layer: usize,
        /// The program's `mode` code.
        mode: u32,
        /// The program's `flags`.
        flags: u32,
    },
    /// What the rig's rest pose and the clips hold could overflow once blended and layered:
    /// the product of scales down to a joint, each joint's largest scale over the rest pose
    /// and every clip raised to one more than the number of additive layers, is beyond
    /// [`MAX_CHAIN_SCALE`]; or a clip's translation (an additive delta is a difference of two
    /// translations) is beyond twice [`crate::rig::MAX_TRANSLATION_M`]; or a clip's rotation is
    /// not a rotation (an additive delta against a reference rotation of zero or overflowing
    /// squared length; `value` NaN).
    /// See `docs/errors.md`, "Numeric bounds".
    #[error("joint {joint}: {what} is {value}, beyond the limit {limit}")]
    OutOfBounds {
        /// The joint.
        joint: usize,
        /// What is past its bound.
        what: String,
        /// The worst value found (infinite for a product past `f32`, NaN for a NaN delta).
        value: f32,
        /// The bound.
        limit: f32,
    },
}

/// Checks that every clip has the rig's joint count ([`ProgramError::ClipRigMismatch`] names
/// the first that does not), and that nothing the evaluators can build from the rig's rest
/// pose and the clips, through `additive_layers` additive layers, can overflow
/// ([`ProgramError::OutOfBounds`]): the chain bound of `docs/errors.md`, "Numeric bounds".
pub fn validate_clips(rig: &Rig, clips: &[Clip], additive_layers: usize) -> Result<(), ProgramError> {
    let rig_joints = rig.num_joints();
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
    // Each joint's scale after blending is at most the largest of what it blends, and each
    // additive layer multiplies it by at most that again: at most `widest^(1 + additive)`.
    // In f64 so that the check itself cannot overflow (256 joints × 16 layers × 4 decimal
    // digits of the largest scale stay far inside f64's range).
    let factors = 1 + additive_layers as i32;
    let max_delta_m = 2.0 * MAX_TRANSLATION_M;
    let mut chain = [1.0f64; MAX_JOINTS];
    for (joint, rest) in rig.rest_pose().iter().enumerate() {
        let mut widest = f64::from(rest.scale.abs().max_element()).max(1.0);
        for (i, clip) in clips.iter().enumerate() {
            let e = clip.extent(joint);
            if e.bad_rotation {
                let what = format!(
                    "clip {i} ({:?})'s rotation (an additive delta against a reference rotation of zero or overflowing length)",
                    clip.name()
                );
                return Err(ProgramError::OutOfBounds { joint, what, value: f32::NAN, limit: 1.0 });
            }
            if !(e.translation_m <= max_delta_m) {
                let what = format!("clip {i} ({:?})'s largest translation component", clip.name());
                return Err(ProgramError::OutOfBounds { joint, what, value: e.translation_m, limit: max_delta_m });
            }
            // NaN fails the comparison and is reported below as the product.
            widest = if f64::from(e.scale) <= widest { widest } else { f64::from(e.scale) };
        }
        let parent = rig.parent(joint).map_or(1.0, |p| chain[p]);
        chain[joint] = parent * widest.powi(factors);
        if !(chain[joint] <= f64::from(MAX_CHAIN_SCALE)) {
            let what = format!(
                "the product of scales down to it, over the rest pose and {} clips, through {additive_layers} additive layers",
                clips.len()
            );
            return Err(ProgramError::OutOfBounds { joint, what, value: chain[joint] as f32, limit: MAX_CHAIN_SCALE });
        }
    }
    Ok(())
}

/// Checks a crowd's programs against a table of `num_clips` clips, character by character
/// (see [`validate_sample_range`]).
pub fn validate_samples(
    samples: &[ClipSample],
    sample_ranges: &[Range<u32>],
    num_clips: usize,
) -> Result<(), ProgramError> {
    for (character, range) in sample_ranges.iter().enumerate() {
        validate_sample_range(character, range.clone(), samples, num_clips)?;
    }
    Ok(())
}

/// Checks one range of `character`'s samples: it lies inside `samples`
/// ([`ProgramError::SampleRange`]); every sample in it names one of `num_clips` clips
/// ([`ProgramError::UnknownClip`]) and has a finite time and a finite non-negative weight
/// ([`ProgramError::BadSample`]).
pub fn validate_sample_range(
    character: usize,
    range: Range<u32>,
    samples: &[ClipSample],
    num_clips: usize,
) -> Result<(), ProgramError> {
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
    Ok(())
}

/// Checks a frame's time step: finite and non-negative ([`ProgramError::BadDt`]).
pub fn validate_dt(dt_s: f32) -> Result<(), ProgramError> {
    if dt_s.is_finite() && dt_s >= 0.0 { Ok(()) } else { Err(ProgramError::BadDt(dt_s)) }
}

/// The characters a frame evaluates (animation LOD), as `state::Crowd::due` gives them:
/// rows ascending, and per row the real seconds since the evaluator last showed it, which
/// replace the frame's `dt_s` for that row (inertialization's velocity and decay read it).
/// Rows not listed are not evaluated: their output and memory keep the last pose shown.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DueRows<'a> {
    /// Rows due this frame, strictly ascending, each below the crowd's character count.
    pub rows: &'a [u32],
    /// Per row, seconds since its last evaluation: finite and non-negative.
    pub dt_s: &'a [f32],
}

impl DueRows<'_> {
    /// Rows due.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is due.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Removes row `row` of `data` (rows of `row_len` elements) as a despawn does: the last row moves
/// into it and `data` shrinks by one row. Nothing happens for a row past the end or a
/// `row_len` of 0. The state step and the CPU evaluator move their per-character blocks with it;
/// a caller evaluating with animation LOD on the CPU moves its output with it too, so that the
/// character that took the row keeps showing its held pose (`docs/lod.md`).
///
/// ```
/// let mut rows = vec![0, 0, 1, 1, 2, 2];
/// throng::program::swap_remove_row(&mut rows, 0, 2);
/// assert_eq!(rows, [2, 2, 1, 1]);
/// ```
pub fn swap_remove_row<T: Copy>(data: &mut Vec<T>, row: usize, row_len: usize) {
    let Some(rows) = data.len().checked_div(row_len) else { return };
    if row >= rows {
        return;
    }
    let last = rows - 1;
    data.copy_within(last * row_len..rows * row_len, row * row_len);
    data.truncate(last * row_len);
}

/// Checks a due list against a crowd of `num_characters`: as many seconds as rows
/// ([`ProgramError::DueLength`]); rows strictly ascending and below `num_characters`, seconds
/// finite and non-negative ([`ProgramError::BadDueRow`]).
pub fn validate_due(due: DueRows<'_>, num_characters: usize) -> Result<(), ProgramError> {
    if due.rows.len() != due.dt_s.len() {
        return Err(ProgramError::DueLength { rows: due.rows.len(), dt: due.dt_s.len() });
    }
    let mut next = 0u64;
    for (index, (&row, &dt_s)) in due.rows.iter().zip(due.dt_s).enumerate() {
        let what = if row as usize >= num_characters {
            "past the last character"
        } else if u64::from(row) < next {
            "rows must ascend without repeats"
        } else if !(dt_s.is_finite() && dt_s >= 0.0) {
            "seconds must be finite and non-negative"
        } else {
            next = u64::from(row) + 1;
            continue;
        };
        return Err(ProgramError::BadDueRow { index, row, dt_s, what });
    }
    Ok(())
}

/// Checks a crowd's layer programs, `num_layers` per character (character `i`'s layer `l` at
/// `i * num_layers + l`): a whole number of characters ([`ProgramError::LayerProgramCount`]);
/// every program's samples inside `samples` and valid (see [`validate_sample_range`]); its
/// target weight and weight in [0, 1] and its `decay_s` finite and non-negative
/// ([`ProgramError::BadProgram`]).
pub fn validate_layer_programs(
    programs: &[LayerProgram],
    num_layers: usize,
    samples: &[ClipSample],
    num_clips: usize,
) -> Result<(), ProgramError> {
    if num_layers == 0 || !programs.len().is_multiple_of(num_layers) {
        return Err(ProgramError::LayerProgramCount { programs: programs.len(), layers: num_layers });
    }
    for (i, p) in programs.iter().enumerate() {
        let character = i / num_layers;
        let end = p.first_sample.saturating_add(p.num_target).saturating_add(p.num_secondary);
        validate_sample_range(character, p.first_sample..end, samples, num_clips)?;
        let numbers = [p.target_weight, p.weight, p.decay_s];
        if numbers.iter().any(|v| !v.is_finite())
            || !(0.0..=1.0).contains(&p.target_weight)
            || !(0.0..=1.0).contains(&p.weight)
            || p.decay_s < 0.0
        {
            return Err(ProgramError::BadProgram { character, layer: i % num_layers, what: format!("{p:?}") });
        }
    }
    Ok(())
}

/// One layer of one character's pose program, written by the state step each update.
///
/// The layer's samples lie at `first_sample..first_sample + num_target + num_secondary` in the
/// step's sample buffer: first the active (destination) state's clips, then a secondary set whose
/// meaning depends on the mode. Sample weights are premultiplied by their side's share.
///
/// | `mode` | secondary set (`num_secondary`) | `target_weight` | the evaluator shows |
/// |---|---|---|---|
/// | cut | none | 1 | the destination |
/// | frozen, or [`LayerProgram::SOURCE_SNAPSHOT`] | none | eased share of the destination | mix(snapshot, destination); the snapshot is taken from the displayed pose on the [`LayerProgram::SWITCHED`] update |
/// | crossfade | the source state, weights × (1 − `target_weight`) | eased share | every sample blended at once: the two sides' weights sum to one |
/// | inertialize (any curve) | on the switch update only: the destination one step earlier, for its velocity | 1 | the destination plus an offset captured on the switch update and decayed by the evaluator in real time with `decay_s` |
///
/// Layer blend mode, mask and space are the graph's (`graph::Layer`), the same for every
/// character; the layer's weight is here so that it may vary per character.
///
/// Keep in sync with `LayerProgram` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LayerProgram {
    /// Index of the layer's first sample in the sample buffer.
    pub first_sample: u32,
    /// Samples of the active state, starting at `first_sample`.
    pub num_target: u32,
    /// Samples of the secondary set, after the active state's: a crossfade's source state, or
    /// under inertialization, on the switch update, the destination one step earlier (see the
    /// table); 0 for the other modes.
    pub num_secondary: u32,
    /// Index of the graph transition in flight or switched this update; `u32::MAX` for none.
    pub transition: u32,
    /// A [`SwitchMode`] code.
    pub mode: u32,
    /// Bit set of [`LayerProgram::TRANSITIONING`], [`LayerProgram::SOURCE_SNAPSHOT`],
    /// [`LayerProgram::SWITCHED`], [`LayerProgram::ROOT_MOTION`].
    pub flags: u32,
    /// Eased share of the active state in [0, 1]; 1 when no transition is in flight and for
    /// inertialization, which evaluates the new state alone.
    pub target_weight: f32,
    /// Linear progress of the transition in [0, 1]; 1 when none is in flight.
    pub progress: f32,
    /// The layer's weight in [0, 1] (layer 0, the base, always shows fully); a layer whose weight
    /// does not count ([`weighs`]) does not show.
    pub weight: f32,
    /// Inertialization's decay time, seconds, by curve ([`SwitchMode`]): the quintic's duration,
    /// or the spring's halflife (read on the switch update). One field for both keeps the
    /// GPU layout; the CPU evaluator names each in its `Decay`.
    pub decay_s: f32,
}

impl LayerProgram {
    /// A transition is in flight.
    pub const TRANSITIONING: u32 = 1;
    /// The transition's source is the frozen snapshot (frozen mode, or an interrupted crossfade).
    pub const SOURCE_SNAPSHOT: u32 = 2;
    /// A transition was taken this update: capture the snapshot from the last displayed pose
    /// (frozen, interrupted crossfade) or seed inertialization offsets.
    pub const SWITCHED: u32 = 4;
    /// The base layer's active state extracts root motion: the root's horizontal travel and yaw
    /// are reported to the caller and removed from the pose.
    pub const ROOT_MOTION: u32 = 8;

    /// The layer's samples as a range of the sample buffer, for the evaluators.
    #[must_use]
    pub fn sample_range(&self) -> std::ops::Range<u32> {
        self.first_sample..self.first_sample + self.num_target + self.num_secondary
    }

    /// The active state's samples.
    #[must_use]
    pub fn target_range(&self) -> std::ops::Range<u32> {
        self.first_sample..self.first_sample + self.num_target
    }

    /// The secondary set's samples.
    #[must_use]
    pub fn secondary_range(&self) -> std::ops::Range<u32> {
        let start = self.first_sample + self.num_target;
        start..start + self.num_secondary
    }

    /// The switch mode.
    #[must_use]
    pub fn switch_mode(&self) -> SwitchMode {
        SwitchMode::from_code(self.mode)
    }
}
