//! State records: what the state step writes per character and layer instead of sample lists,
//! and the one expansion of a record into the layer's [`LayerProgram`] and [`ClipSample`]s that
//! both evaluators run (`eval::expand` on the CPU, `shaders/expand.wgsl` on the GPU).
//!
//! ```text
//!  state step ──► LayerRecord per layer   ──► expand: blend_space weights of the active ──► LayerProgram
//!                 (+ its ShotRecord)          (and source) state's tree from the inputs,    + ClipSamples
//!                 + blend inputs per          clip times from the clocks (played_seconds)
//!                   character
//! ```
//!
//! A record (56 bytes) holds what only the state step knows: the active state and its clock
//! (phase and whole loops), the source state and its clock while a crossfade runs (or the
//! destination's clock one step back on an inertialized switch), the clocks' advance this
//! update, the transition, switch mode, flags and eased weight (the destination's share), and
//! the layer's weight; a one-shot's clip, time and shares are in the [`ShotRecord`] beside it,
//! read only while one plays. [`RecordFrame`] carries an archetype's records to an evaluator,
//! with when each changed. The leaves' weights are not in it: expansion computes them
//! from the character's parameters through [`BlendTrees::leaf_weights`], the definition the
//! `blend_space` stage runs. Clip times come from the clocks through [`played_seconds`], one f32
//! formula that the shader repeats operation for operation, whole loops in integer arithmetic
//! so that a clock millions of loops old keeps its sub-microsecond precision.

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::blend_space::{BlendTrees, MAX_BLEND_CHILDREN, TreeScratch};

use super::{ClipSample, LayerProgram, ProgramError, SwitchMode, weighs};

/// No state: a record's `source` when no crossfade's source is sampled.
pub const NO_STATE: u16 = u16::MAX;

/// No transition: a record's `transition` when none is in flight or switched (the program's
/// `u32::MAX`).
pub const NO_TRANSITION: u16 = u16::MAX;

/// One layer of one character as the state step leaves it after an update: 56 bytes. A
/// one-shot's clip, time and shares live beside it, in its [`ShotRecord`], read only under the
/// `SHOT_*` sets.
///
/// Keep in sync with `LayerRecord` in `shaders/expand.wgsl`, whose words pack the 16-bit
/// fields in pairs (`state` and `source`; `transition` and `anchor`) and the 8-bit ones in one
/// (`mode`, `flags`, `sets`), low bytes first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LayerRecord {
    /// The state shown (a transition's destination): an index of the graph's states.
    pub state: u16,
    /// A crossfade's source state, sampled beside the destination ([`NO_STATE`] otherwise).
    pub source: u16,
    /// As [`LayerProgram::transition`], [`NO_TRANSITION`] for none.
    pub transition: u16,
    /// The update the active clock was anchored on ([`RecordClock::now`] then, its low 16
    /// bits): its clock at any later update is `phase + rate × seconds since` ([`clock_at`]).
    /// At most [`CLOCK_SLOTS`] − 1 updates old.
    pub anchor: u16,
    /// The active state's clock at the anchor: phase in [0, 1] (fraction of its cycle).
    pub phase: f32,
    /// The active state's whole loops played at the anchor.
    pub loops: u32,
    /// The secondary clock's phase: the source state's ([`LayerRecord::SECONDARY_SOURCE`]), or
    /// the destination's one step back ([`LayerRecord::SECONDARY_BACK`]).
    pub src_phase: f32,
    /// The secondary clock's whole loops (0 for the step back).
    pub src_loops: u32,
    /// Progress the active clock advanced in the anchor's update (0 on a switch): root
    /// motion's span on that update; later updates' is `rate ×` their seconds.
    pub advance: f32,
    /// Progress the source clock advanced this update.
    pub src_advance: f32,
    /// As [`LayerProgram::target_weight`]; also the destination samples' share of the layer
    /// (a source gets the rest), except under [`LayerRecord::SHOT_OVER_GRAPH`] and
    /// [`LayerRecord::SHOT_HANDBACK`], where the shot record's `graph_share` is.
    pub target_weight: f32,
    /// As [`LayerProgram::progress`].
    pub progress: f32,
    /// As [`LayerProgram::weight`].
    pub weight: f32,
    /// As [`LayerProgram::decay_s`].
    pub decay_s: f32,
    /// The active clock's progress per second of the crowd's time (speed, tree rate and the
    /// character's time scale together), finite and non-negative.
    pub rate: f32,
    /// As [`LayerProgram::mode`].
    pub mode: u8,
    /// As [`LayerProgram::flags`].
    pub flags: u8,
    /// Bit set of the sample sets: [`LayerRecord::SECONDARY_SOURCE`],
    /// [`LayerRecord::SECONDARY_BACK`], [`LayerRecord::SHOT_ALONE`],
    /// [`LayerRecord::SHOT_OVER_GRAPH`], [`LayerRecord::SHOT_HANDBACK`].
    pub sets: u8,
    /// Padding to a whole word.
    pub pad: u8,
}

/// A one-shot's part of a layer's record (`state::Crowd::play_one_shot`), per character and
/// layer beside the [`LayerRecord`]s, read only under the record's `SHOT_*` sets.
///
/// Keep in sync with `ShotRecord` in `shaders/expand.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ShotRecord {
    /// The one-shot's clip (an index of the archetype's clip table).
    pub clip: u32,
    /// Its time in its clip, seconds.
    pub time_s: f32,
    /// The clip's share of the layer while it blends out over the graph's pose
    /// ([`LayerRecord::SHOT_OVER_GRAPH`]).
    pub share: f32,
    /// The graph's destination share under the one-shot (the record's `target_weight` holds
    /// the one-shot's fade): what weighs the destination's samples under
    /// [`LayerRecord::SHOT_OVER_GRAPH`] and [`LayerRecord::SHOT_HANDBACK`].
    pub graph_share: f32,
}

impl LayerRecord {
    /// The record's program transition, [`LayerProgram::transition`]'s `u32::MAX` for none.
    #[must_use]
    pub fn program_transition(&self) -> u32 {
        if self.transition == NO_TRANSITION { u32::MAX } else { u32::from(self.transition) }
    }

    /// Whether two records are the same bit for bit (a NaN equals itself, −0 is not 0): word
    /// by word, without a call, as the state step asks whether it changed one.
    #[inline]
    #[must_use]
    pub fn same_bits(&self, other: &Self) -> bool {
        let (a, b): ([u64; 7], [u64; 7]) = (bytemuck::cast(*self), bytemuck::cast(*other));
        a.iter().zip(&b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
    }

    /// What a record holds beside its state, active clock, flags and weight when no transition
    /// shows: no source or transition, a cut, no secondary clock or sample sets, the
    /// destination's whole share.
    const SETTLED: Self = Self {
        state: 0,
        source: NO_STATE,
        transition: NO_TRANSITION,
        anchor: 0,
        phase: 0.0,
        loops: 0,
        src_phase: 0.0,
        src_loops: 0,
        advance: 0.0,
        src_advance: 0.0,
        target_weight: 1.0,
        progress: 1.0,
        weight: 0.0,
        decay_s: 0.0,
        rate: 0.0,
        mode: SwitchMode::Cut as u8,
        flags: 0,
        sets: 0,
        pad: 0,
    };

    /// Every bit of the fields [`LayerRecord::is_settled`] reads: all but the state and the
    /// active clock (`anchor`, `phase`, `loops`, `advance`, `rate`).
    const SETTLED_FIELDS: Self = {
        let all = f32::from_bits(u32::MAX);
        Self {
            state: 0,
            source: u16::MAX,
            transition: u16::MAX,
            anchor: 0,
            phase: 0.0,
            loops: 0,
            src_phase: all,
            src_loops: u32::MAX,
            advance: 0.0,
            src_advance: all,
            target_weight: all,
            progress: all,
            weight: all,
            decay_s: all,
            rate: 0.0,
            mode: u8::MAX,
            flags: u8::MAX,
            sets: u8::MAX,
            pad: u8::MAX,
        }
    };

    /// Whether the record holds, bit for bit, what [`LayerRecord::settle`] writes with `flags`
    /// and `weight`; its state and active clock are not read. Word by word against constants:
    /// the state step asks it of a layer that shows no transition, rather than comparing the
    /// record with a copy of what it held.
    #[inline]
    #[must_use]
    pub(crate) fn is_settled(&self, flags: u8, weight: f32) -> bool {
        let want: [u64; 7] = bytemuck::cast(Self { flags, weight, ..Self::SETTLED });
        let fields: [u64; 7] = bytemuck::cast(Self::SETTLED_FIELDS);
        let held: [u64; 7] = bytemuck::cast(*self);
        (0..7).fold(0, |d, i| d | ((held[i] ^ want[i]) & fields[i])) == 0
    }

    /// Writes what a record holds when no transition shows (no source or transition, a cut,
    /// no secondary clock or sample sets, the destination's whole share), with `flags` and
    /// the layer's `weight`; its state and active clock are left as they are.
    #[inline]
    pub(crate) fn settle(&mut self, flags: u8, weight: f32) {
        let s = Self::SETTLED;
        (self.source, self.transition, self.mode, self.decay_s) = (s.source, s.transition, s.mode, s.decay_s);
        (self.src_phase, self.src_loops, self.src_advance, self.sets) =
            (s.src_phase, s.src_loops, s.src_advance, s.sets);
        (self.target_weight, self.progress, self.pad) = (s.target_weight, s.progress, s.pad);
        (self.flags, self.weight) = (flags, weight);
    }

    /// Whether the record reads its [`ShotRecord`].
    #[must_use]
    pub fn reads_shot(&self) -> bool {
        self.sets & (Self::SHOT_ALONE | Self::SHOT_OVER_GRAPH | Self::SHOT_HANDBACK) != 0
    }

    /// The destination samples' share of the layer: `target_weight`, or under a one-shot over
    /// the graph's pose the graph's own (`shot.graph_share`).
    #[must_use]
    pub fn share(&self, shot: &ShotRecord) -> f32 {
        if self.sets & (Self::SHOT_OVER_GRAPH | Self::SHOT_HANDBACK) != 0 {
            shot.graph_share
        } else {
            self.target_weight
        }
    }
}

/// Updates a record's anchor may be old: the state step re-anchors each character at least
/// this often (by the anchor's own age), so that the anchored clocks' f32 error stays bounded
/// and the seconds since any live anchor fit a table of this many entries ([`RecordClock`]).
pub const CLOCK_SLOTS: usize = 128;

/// The crowd's time as the records' anchors read it: the update now, and the seconds from each
/// of the last [`CLOCK_SLOTS`] updates to now (`elapsed_s[k % CLOCK_SLOTS]` for update `k`;
/// 0 for `now`). The state step keeps it per archetype (`state::Crowd::record_clock`).
///
/// Keep in sync with `RecordClock` in `shaders/expand.wgsl` (`elapsed_s` as 32 `vec4<f32>`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct RecordClock {
    /// Updates so far (wrapping).
    pub now: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 3],
    /// Per update of the last [`CLOCK_SLOTS`], seconds from it to now, finite, non-negative.
    pub elapsed_s: [f32; CLOCK_SLOTS],
}

impl Default for RecordClock {
    fn default() -> Self {
        Self { now: 0, pad: [0; 3], elapsed_s: [0.0; CLOCK_SLOTS] }
    }
}

/// A record's active clock at `clock.now`: (phase, whole loops, progress advanced on this
/// update). The anchor's own update reads the record as written; a later one
/// `phase + rate × elapsed` (whole loops carried for a looping state, held at 1 for one that
/// does not loop), its advance the progress since the update before. The shader computes the
/// same, operation for operation.
#[inline]
#[must_use]
pub fn clock_at(record: &LayerRecord, looping: bool, clock: &RecordClock) -> (f32, u32, f32) {
    let age = (clock.now as u16).wrapping_sub(record.anchor);
    if age == 0 {
        return (record.phase, record.loops, record.advance);
    }
    if record.rate == 0.0 {
        return (record.phase, record.loops, 0.0);
    }
    let slots = CLOCK_SLOTS as u32;
    let elapsed = clock.elapsed_s[(u32::from(record.anchor) % slots) as usize];
    let step = clock.elapsed_s[(clock.now.wrapping_sub(1) % slots) as usize];
    let x = record.phase + record.rate * elapsed;
    if looping {
        let whole = x.floor();
        // The float-to-int cast saturates, as the state step's does.
        return (x - whole, record.loops.saturating_add(whole as u32), record.rate * step);
    }
    let before = (record.phase + record.rate * (elapsed - step)).min(1.0);
    let phase = x.min(1.0);
    (phase, 0, phase - before)
}

impl LayerRecord {
    /// A crossfade: the source state's samples follow the destination's as the program's
    /// secondary set, weighted by `1 - share`.
    pub const SECONDARY_SOURCE: u8 = 1;
    /// An inertialized switch: the destination one step back (`src_phase`) is the secondary
    /// set, at full weight, for the evaluator's velocity.
    pub const SECONDARY_BACK: u8 = 2;
    /// A one-shot shows alone: its clip is the layer's only sample.
    pub const SHOT_ALONE: u8 = 4;
    /// A one-shot blends out over the graph's pose: the graph's samples (both sides of a
    /// crossfade, the destination's at the shot record's `graph_share`) weighted by
    /// `1 - share`, then the clip at the shot record's `share`, all as the program's target set.
    pub const SHOT_OVER_GRAPH: u8 = 8;
    /// A one-shot hands back to the graph from the frozen pose it showed: the graph's
    /// destination alone, at the shot record's `graph_share`.
    pub const SHOT_HANDBACK: u8 = 16;
}

/// One archetype's records after an update, as an evaluator reads them: the records, their
/// one-shot parts, the blend inputs, the clock, and, from the crowd that wrote them
/// (`state::Crowd::record_frame`), when each record and each character's inputs last changed,
/// so that `gpu::GpuCrowd::set_frame_records` sends only what changed since its last upload.
/// The stamps travel with the records they describe: a caller cannot pair one crowd's stamps
/// with another's records.
#[derive(Clone, Copy, Debug)]
pub struct RecordFrame<'a> {
    records: &'a [LayerRecord],
    shots: &'a [ShotRecord],
    inputs: &'a [f32],
    clock: RecordClock,
    changes: Option<RecordChanges<'a>>,
}

/// When each record (with its shot record) and each character's inputs last changed: the
/// version of the records that changed them, a count the crowd moves on by one with each
/// update, spawn and despawn, and is at `version` now. `source` names whose they are (a
/// crowd's tag and an archetype), so that an upload of another source's frame sends everything.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordChanges<'a> {
    pub(crate) source: (u32, u32),
    pub(crate) version: u32,
    pub(crate) record_stamps: &'a [u32],
    pub(crate) input_stamps: &'a [u32],
}

/// Whether a change stamped `stamp` came after version `last` (wrapping: stamps are compared
/// within 2^31 versions of each other).
#[inline]
#[must_use]
pub(crate) fn changed_after(stamp: u32, last: u32) -> bool {
    (stamp.wrapping_sub(last) as i32) > 0
}

impl<'a> RecordFrame<'a> {
    /// A frame of `records` (per character and layer), their one-shot parts `shots` (one per
    /// record), the blend `inputs` (per character) and the `clock` they are anchored against,
    /// with no record of what changed: an upload of it sends everything. For records a caller
    /// made or edited itself; a crowd's own come from `state::Crowd::record_frame`.
    #[must_use]
    pub fn new(records: &'a [LayerRecord], shots: &'a [ShotRecord], inputs: &'a [f32], clock: RecordClock) -> Self {
        Self { records, shots, inputs, clock, changes: None }
    }

    /// A frame with the stamps of what changed (`state::Crowd::record_frame`).
    #[must_use]
    pub(crate) fn with_changes(self, changes: RecordChanges<'a>) -> Self {
        Self { changes: Some(changes), ..self }
    }

    /// The records, `row * layers + layer`.
    #[must_use]
    pub fn records(&self) -> &'a [LayerRecord] {
        self.records
    }

    /// The records' one-shot parts, one per record.
    #[must_use]
    pub fn shots(&self) -> &'a [ShotRecord] {
        self.shots
    }

    /// The blend inputs, per character.
    #[must_use]
    pub fn inputs(&self) -> &'a [f32] {
        self.inputs
    }

    /// The clock the records are anchored against.
    #[must_use]
    pub fn clock(&self) -> &RecordClock {
        &self.clock
    }

    /// What changed when, if the frame came from a crowd.
    #[must_use]
    pub(crate) fn changes(&self) -> Option<&RecordChanges<'a>> {
        self.changes.as_ref()
    }
}

/// A [`RecordFrame`] copied out of its crowd, stamps included, for a caller that hands the
/// frame to another thread or world before it is uploaded (an engine's render world): its
/// [`frame`](Self::frame) uploads only what changed, as the crowd's own would. Kept from frame
/// to frame, [`copy_from`](Self::copy_from) reuses its buffers.
#[derive(Clone, Debug, Default)]
pub struct OwnedRecordFrame {
    records: Vec<LayerRecord>,
    shots: Vec<ShotRecord>,
    inputs: Vec<f32>,
    clock: RecordClock,
    /// The stamps' source and version, when the frame had them.
    changes: Option<((u32, u32), u32)>,
    record_stamps: Vec<u32>,
    input_stamps: Vec<u32>,
}

impl OwnedRecordFrame {
    /// A copy of `frame`.
    #[must_use]
    pub fn new(frame: &RecordFrame<'_>) -> Self {
        let mut owned = Self::default();
        owned.copy_from(frame);
        owned
    }

    /// Makes this a copy of `frame`, in the buffers it has.
    pub fn copy_from(&mut self, frame: &RecordFrame<'_>) {
        self.records.clear();
        self.records.extend_from_slice(frame.records);
        self.shots.clear();
        self.shots.extend_from_slice(frame.shots);
        self.inputs.clear();
        self.inputs.extend_from_slice(frame.inputs);
        self.clock = frame.clock;
        self.changes = frame.changes.map(|c| (c.source, c.version));
        let (records, inputs) = frame.changes.map_or((&[][..], &[][..]), |c| (c.record_stamps, c.input_stamps));
        self.record_stamps.clear();
        self.record_stamps.extend_from_slice(records);
        self.input_stamps.clear();
        self.input_stamps.extend_from_slice(inputs);
    }

    /// The frame, stamps included.
    #[must_use]
    pub fn frame(&self) -> RecordFrame<'_> {
        let frame = RecordFrame::new(&self.records, &self.shots, &self.inputs, self.clock);
        match self.changes {
            Some((source, version)) => frame.with_changes(RecordChanges {
                source,
                version,
                record_stamps: &self.record_stamps,
                input_stamps: &self.input_stamps,
            }),
            None => frame,
        }
    }
}

/// Per state of a graph, how expansion reads it. Flags: [`ExpandTables::SYNC`],
/// [`ExpandTables::LOOPING`], [`ExpandTables::REVERSE`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpandState {
    /// First leaf, an index of [`ExpandTables::leaves`].
    pub first_leaf: u32,
    /// Leaves, in `1..=MAX_BLEND_CHILDREN`: the blend tree's leaf slots in order.
    pub num_leaves: u32,
    /// Bit set of the state's flags.
    pub flags: u32,
}

/// Per leaf, the clip it plays and how its state's clock turns into that clip's seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExpandLeaf {
    /// Index into the archetype's clip table.
    pub clip: u32,
    /// The clip's duration, seconds, > 0.
    pub duration_s: f32,
    /// Clip seconds per unit of the state's progress (an unsynced state's leaves run at their
    /// own rates).
    pub seconds_per_progress: f32,
    /// `seconds_per_progress / duration_s`: loops of the clip per unit of progress.
    pub loops_per_progress: f32,
    /// The fractional part of `loops_per_progress` as a 64-bit fixed-point fraction (high word,
    /// then low): whole loops of the state turn the clip by `loops × turn mod 1`, exactly.
    pub turn: [u32; 2],
}

impl ExpandLeaf {
    /// The leaf of a clip lasting `duration_s` (> 0) played at `seconds_per_progress`.
    #[must_use]
    pub fn new(clip: u32, duration_s: f32, seconds_per_progress: f32) -> Self {
        let q = f64::from(seconds_per_progress) / f64::from(duration_s);
        let fraction = if q.is_finite() { q - q.floor() } else { 0.0 };
        let scaled = fraction * 4_294_967_296.0;
        let hi = scaled.floor();
        let lo = ((scaled - hi) * 4_294_967_296.0).floor();
        Self {
            clip,
            duration_s,
            seconds_per_progress,
            loops_per_progress: q as f32,
            // Casts saturate: a fraction in [0, 1) gives words in [0, 2^32).
            turn: [hi as u32, lo as u32],
        }
    }
}

/// An archetype's tables for expansion: per state its leaves and flags, per leaf its clip and
/// clock rates, per layer its sample slots. Built once per archetype (`state::Archetype`);
/// [`ExpandTables::words`] is the same as the GPU reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExpandTables {
    states: Vec<ExpandState>,
    leaves: Vec<ExpandLeaf>,
    /// Per layer, its sample slots within a character's: (first, count).
    layer_slots: Vec<(u32, u32)>,
    samples_per_character: u32,
    words: Vec<u32>,
}

/// The word layout of [`ExpandTables::words`], as `shaders/expand.wgsl` reads it (keep in sync
/// with the constants there; `tests/gpu_expand.rs` checks them).
///
/// | words | what |
/// | --- | --- |
/// | `HEADER_LEN` | states, leaves, layers, samples per character, where the states, leaves and layers start |
/// | `STATE_LEN` per state | first leaf, leaves, flags |
/// | `LEAF_LEN` per leaf | clip, duration, seconds per progress, loops per progress (f32 bits), turn high, turn low |
/// | `LAYER_LEN` per layer | first sample slot, slots |
pub mod expand_words {
    /// Words of the header.
    pub const HEADER_LEN: usize = 8;
    /// Words per state.
    pub const STATE_LEN: usize = 4;
    /// Words per leaf.
    pub const LEAF_LEN: usize = 8;
    /// Words per layer.
    pub const LAYER_LEN: usize = 2;
}

impl ExpandTables {
    /// The state is phase-synced: every leaf at `phase × duration`.
    pub const SYNC: u32 = 1;
    /// The state loops (else it holds its last frame).
    pub const LOOPING: u32 = 2;
    /// The state plays backwards: clip time is `duration − played`, and reads no root motion.
    pub const REVERSE: u32 = 4;

    /// The tables of `states` over `leaves`, layer `l` writing `layer_slots[l]` = (first slot,
    /// slots) of each character's `samples_per_character`.
    #[must_use]
    pub fn new(
        states: Vec<ExpandState>,
        leaves: Vec<ExpandLeaf>,
        layer_slots: Vec<(u32, u32)>,
        samples_per_character: u32,
    ) -> Self {
        let mut tables = Self { states, leaves, layer_slots, samples_per_character, words: Vec::new() };
        tables.words = tables.encode();
        tables
    }

    /// The states.
    #[must_use]
    pub fn states(&self) -> &[ExpandState] {
        &self.states
    }

    /// The leaves.
    #[must_use]
    pub fn leaves(&self) -> &[ExpandLeaf] {
        &self.leaves
    }

    /// Layers per character.
    #[must_use]
    pub fn num_layers(&self) -> usize {
        self.layer_slots.len()
    }

    /// Layer `layer`'s sample slots within a character's, as a range (empty past the layers).
    #[must_use]
    pub fn layer_slots(&self, layer: usize) -> std::ops::Range<usize> {
        self.layer_slots.get(layer).map_or(0..0, |&(first, count)| first as usize..(first + count) as usize)
    }

    /// Sample slots per character.
    #[must_use]
    pub fn samples_per_character(&self) -> usize {
        self.samples_per_character as usize
    }

    /// The tables as `shaders/expand.wgsl` reads them ([`expand_words`]).
    #[must_use]
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    fn encode(&self) -> Vec<u32> {
        use expand_words::*;
        let states_at = HEADER_LEN;
        let leaves_at = states_at + STATE_LEN * self.states.len();
        let layers_at = leaves_at + LEAF_LEN * self.leaves.len();
        let mut words = vec![0u32; layers_at + LAYER_LEN * self.layer_slots.len()];
        words[..7].copy_from_slice(&[
            self.states.len() as u32,
            self.leaves.len() as u32,
            self.layer_slots.len() as u32,
            self.samples_per_character,
            states_at as u32,
            leaves_at as u32,
            layers_at as u32,
        ]);
        for (s, st) in self.states.iter().enumerate() {
            words[states_at + STATE_LEN * s..][..3].copy_from_slice(&[st.first_leaf, st.num_leaves, st.flags]);
        }
        for (l, leaf) in self.leaves.iter().enumerate() {
            words[leaves_at + LEAF_LEN * l..][..6].copy_from_slice(&[
                leaf.clip,
                leaf.duration_s.to_bits(),
                leaf.seconds_per_progress.to_bits(),
                leaf.loops_per_progress.to_bits(),
                leaf.turn[0],
                leaf.turn[1],
            ]);
        }
        for (l, &(first, count)) in self.layer_slots.iter().enumerate() {
            words[layers_at + LAYER_LEN * l..][..2].copy_from_slice(&[first, count]);
        }
        words
    }
}

/// Checks a crowd's records and their one-shot parts, `num_layers` per character, against
/// `tables` and a table of `num_clips` clips, as the checks of the programs they expand into
/// would ([`super::validate_layer_programs`]): a whole number of characters, a shot record per
/// record ([`ProgramError::LayerProgramCount`]); every state a record samples among the tables'
/// states, every number finite, the target weight and layer weight in [0, 1], the decay and
/// the rate non-negative, the anchor fewer than [`CLOCK_SLOTS`] updates before `clock.now`,
/// and where the record reads its shot record ([`LayerRecord::reads_shot`]) the shot's clip
/// among the clips, its numbers finite and its shares in [0, 1] ([`ProgramError::BadProgram`],
/// the record printed); and the clock's seconds finite and non-negative
/// ([`ProgramError::BadDt`]). The GPU checks records with it before expanding them on the
/// device.
pub fn validate_records(
    records: &[LayerRecord],
    shots: &[ShotRecord],
    num_layers: usize,
    tables: &ExpandTables,
    num_clips: usize,
    clock: &RecordClock,
) -> Result<(), ProgramError> {
    if num_layers == 0 || !records.len().is_multiple_of(num_layers) || shots.len() != records.len() {
        return Err(ProgramError::LayerProgramCount { programs: records.len(), layers: num_layers });
    }
    if let Some(&bad) = clock.elapsed_s.iter().find(|e| !(e.is_finite() && **e >= 0.0)) {
        return Err(ProgramError::BadDt(bad));
    }
    let num_states = tables.states.len();
    let unit = |v: f32| (0.0..=1.0).contains(&v);
    let now = clock.now as u16;
    for (i, (r, shot)) in records.iter().zip(shots).enumerate() {
        let numbers =
            [r.phase, r.src_phase, r.advance, r.src_advance, r.target_weight, r.progress, r.weight, r.decay_s, r.rate];
        let good_shot = !r.reads_shot()
            || ((shot.clip as usize) < num_clips
                && shot.time_s.is_finite()
                && unit(shot.share)
                && unit(shot.graph_share));
        let good = numbers.iter().all(|v| v.is_finite())
            && (r.sets & LayerRecord::SHOT_ALONE != 0 || (r.state as usize) < num_states)
            && (r.sets & LayerRecord::SECONDARY_SOURCE == 0 || (r.source as usize) < num_states)
            && good_shot
            && [r.target_weight, r.weight].into_iter().all(unit)
            && r.decay_s >= 0.0
            && r.rate >= 0.0
            && (now.wrapping_sub(r.anchor) as usize) < CLOCK_SLOTS;
        if !good {
            let what = if r.reads_shot() { format!("{r:?}, {shot:?}") } else { format!("{r:?}") };
            return Err(ProgramError::BadProgram { character: i / num_layers, layer: i % num_layers, what });
        }
    }
    Ok(())
}

/// The high 32 bits of `a × b`: the shader builds the same from 16-bit halves.
#[inline]
#[must_use]
pub fn mul_hi(a: u32, b: u32) -> u32 {
    ((u64::from(a) * u64::from(b)) >> 32) as u32
}

/// `x − floor(x)`, WGSL's `fract`.
#[inline]
fn fract(x: f32) -> f32 {
    x - x.floor()
}

/// Seconds of a leaf's clip played at a state clock of `loops` whole loops and `phase`, before
/// reverse playback turns it around: `phase × duration` for a synced state; for one that does
/// not loop, `phase × seconds_per_progress` up to the clip's end; for a looping unsynced state
/// `frac(loops × turn + phase × loops_per_progress) × duration`, the whole loops' turn in 64-bit
/// fixed point (`turn`), so that the error stays about one f32 rounding of the clip whatever the
/// loop count. The shader computes the same, operation for operation.
#[inline]
#[must_use]
pub fn played_seconds(state_flags: u32, leaf: &ExpandLeaf, phase: f32, loops: u32) -> f32 {
    if state_flags & ExpandTables::SYNC != 0 {
        return phase * leaf.duration_s;
    }
    if state_flags & ExpandTables::LOOPING == 0 {
        return (phase * leaf.seconds_per_progress).min(leaf.duration_s);
    }
    let top = loops.wrapping_mul(leaf.turn[0]).wrapping_add(mul_hi(loops, leaf.turn[1]));
    // The top 24 bits, exactly representable: a fraction in [0, 1).
    let whole = (top >> 8) as f32 * (1.0 / 16_777_216.0);
    let f = fract(whole + fract(phase * leaf.loops_per_progress));
    // `fract` of a value a rounding below an integer can come out as 1: the clip's end, which
    // the sample stage wraps to its start as it does any time past the end.
    f * leaf.duration_s
}

/// One side of a layer for [`write_state`]: a state at a clock, its advance and share.
#[derive(Clone, Copy, Debug)]
struct Side {
    state: u16,
    phase: f32,
    loops: u32,
    advance: f32,
    share: f32,
}

/// Writes `side`'s state's clips whose weights count ([`weighs`]) into `out` from `out[n]`; returns the new count.
fn write_state(tables: &ExpandTables, weights: &[f32], side: Side, out: &mut [ClipSample], mut n: usize) -> usize {
    let Some(st) = tables.states.get(side.state as usize) else { return n };
    let first = st.first_leaf as usize;
    let Some(leaves) = tables.leaves.get(first..first + st.num_leaves as usize) else { return n };
    let reverse = st.flags & ExpandTables::REVERSE != 0;
    for (leaf, &w) in leaves.iter().zip(weights) {
        let weight = w * side.share;
        if !weighs(weight) {
            continue;
        }
        let played_s = played_seconds(st.flags, leaf, side.phase, side.loops);
        let time_s = if reverse { leaf.duration_s - played_s } else { played_s };
        // Reverse playback reads no root motion (its clip time runs backwards).
        let advance_s = if reverse { 0.0 } else { side.advance * leaf.seconds_per_progress };
        if let Some(o) = out.get_mut(n) {
            *o = ClipSample { clip: leaf.clip, time_s, weight, advance_s };
            n += 1;
        }
    }
    n
}

/// Expands one layer's record: writes the layer's samples into `slots` (the layer's sample
/// slots of its character, which start at `first_sample` of the crowd's samples) and returns
/// its program; `shot` is the record's one-shot part, read under its `SHOT_*` sets. `inputs`
/// are the character's blend inputs ([`BlendTrees::num_inputs`]);
/// `scratch` the tree walk's working weights, reused from layer to layer; `clock` the crowd's
/// time the record's anchor is read against ([`clock_at`]).
/// States past the tables write nothing; a record's numbers are taken as they are (the
/// evaluators check the programs this makes).
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn expand_layer(
    tables: &ExpandTables,
    trees: &BlendTrees,
    inputs: &[f32],
    clock: &RecordClock,
    record: &LayerRecord,
    shot: &ShotRecord,
    first_sample: u32,
    slots: &mut [ClipSample],
    scratch: &mut TreeScratch,
) -> LayerProgram {
    let mut weights = [0.0f32; MAX_BLEND_CHILDREN];
    let max_leaves = trees.max_leaves().min(MAX_BLEND_CHILDREN);
    let sets = record.sets;
    let mut num_target = 0;
    let mut num_secondary = 0;
    if sets & LayerRecord::SHOT_ALONE != 0 {
        if let Some(o) = slots.first_mut() {
            *o = ClipSample::new(shot.clip, shot.time_s, 1.0);
            num_target = 1;
        }
    } else {
        trees.leaf_weights_in(u32::from(record.state), inputs, &mut weights[..max_leaves], scratch);
        let looping = tables.states.get(record.state as usize).is_some_and(|s| s.flags & ExpandTables::LOOPING != 0);
        let (phase, loops, advance) = clock_at(record, looping, clock);
        let share = record.share(shot);
        let target = Side { state: record.state, phase, loops, advance, share };
        num_target = write_state(tables, &weights, target, slots, 0);
        if sets & LayerRecord::SECONDARY_SOURCE != 0 {
            trees.leaf_weights_in(u32::from(record.source), inputs, &mut weights[..max_leaves], scratch);
            let source = Side {
                state: record.source,
                phase: record.src_phase,
                loops: record.src_loops,
                advance: record.src_advance,
                share: 1.0 - share,
            };
            num_secondary = write_state(tables, &weights, source, slots, num_target) - num_target;
        } else if sets & LayerRecord::SECONDARY_BACK != 0 {
            let back = Side { state: record.state, phase: record.src_phase, loops: 0, advance: 0.0, share: 1.0 };
            num_secondary = write_state(tables, &weights, back, slots, num_target) - num_target;
        }
        if sets & LayerRecord::SHOT_OVER_GRAPH != 0 {
            let graph = num_target + num_secondary;
            for s in &mut slots[..graph] {
                s.weight *= 1.0 - shot.share;
            }
            if let Some(o) = slots.get_mut(graph) {
                *o = ClipSample { weight: shot.share, ..ClipSample::new(shot.clip, shot.time_s, 1.0) };
                num_target = graph + 1;
                num_secondary = 0;
            }
        }
    }
    LayerProgram {
        first_sample,
        num_target: num_target as u32,
        num_secondary: num_secondary as u32,
        transition: record.program_transition(),
        mode: u32::from(record.mode),
        flags: u32::from(record.flags),
        target_weight: record.target_weight,
        progress: record.progress,
        weight: record.weight,
        decay_s: record.decay_s,
    }
}

/// Characters one rayon task of [`expand_frame`] expands: a character is a few hundred flops
/// per layer.
pub const CHARACTERS_PER_TASK: usize = 256;

/// Expands every character of `frame` into `programs` (one per record) and `samples`
/// ([`ExpandTables::samples_per_character`] per character), in parallel, by
/// [`expand_character`]: what `eval::expand::ExpandJob` runs after its checks, and what
/// `gpu::GpuCrowd::set_frame_records` runs for a crowd too large for its expand pass. The
/// frame must be valid for the tables and trees (`ExpandJob::validate`'s checks): records whole
/// characters, one shot record per record, the trees' inputs per character, outputs sized.
pub fn expand_frame(
    tables: &ExpandTables,
    trees: &BlendTrees,
    frame: &RecordFrame<'_>,
    programs: &mut [LayerProgram],
    samples: &mut [ClipSample],
) {
    let (records, shots, inputs, clock) = (frame.records(), frame.shots(), frame.inputs(), frame.clock());
    let layers = tables.num_layers();
    let per = tables.samples_per_character();
    let num_inputs = trees.num_inputs();
    let task = CHARACTERS_PER_TASK;
    programs
        .par_chunks_mut((task * layers).max(1))
        .zip(samples.par_chunks_mut((task * per).max(1)))
        .enumerate()
        .for_each(|(t, (programs, samples))| {
            let mut scratch = TreeScratch::new();
            for (k, programs) in programs.chunks_exact_mut(layers).enumerate() {
                let row = t * task + k;
                let own = &inputs[row * num_inputs..(row + 1) * num_inputs];
                let block = samples.get_mut(k * per..(k + 1) * per).unwrap_or_default();
                expand_character(
                    tables,
                    trees,
                    own,
                    clock,
                    row * per,
                    &records[row * layers..][..layers],
                    &shots[row * layers..][..layers],
                    programs,
                    block,
                    &mut scratch,
                );
            }
        });
}

/// Expands one character's records (`records.len()` layers, their one-shot parts `shots`) into
/// its programs and its block of
/// samples (`samples_per_character` of them), the block starting at sample `block_start` of the
/// crowd's samples (`row × samples_per_character`), which the programs index. `scratch` is the
/// tree walk's working weights, reused from character to character.
#[allow(clippy::too_many_arguments)]
pub fn expand_character(
    tables: &ExpandTables,
    trees: &BlendTrees,
    inputs: &[f32],
    clock: &RecordClock,
    block_start: usize,
    records: &[LayerRecord],
    shots: &[ShotRecord],
    programs: &mut [LayerProgram],
    block: &mut [ClipSample],
    scratch: &mut TreeScratch,
) {
    for (layer, ((record, shot), program)) in records.iter().zip(shots).zip(programs.iter_mut()).enumerate() {
        let slots = tables.layer_slots(layer);
        let first_sample = (block_start + slots.start) as u32;
        let Some(out) = block.get_mut(slots) else { continue };
        *program = expand_layer(tables, trees, inputs, clock, record, shot, first_sample, out, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn played_seconds_keeps_long_loops_precise() {
        // A leaf of 0.7 s in a state whose progress is 1.1 s of it: each loop turns the clip
        // by 1.1 / 0.7 of a turn.
        let leaf = ExpandLeaf::new(0, 0.7, 1.1);
        let flags = ExpandTables::LOOPING;
        for loops in [0u32, 1, 7, 1_000, 1_000_003, u32::MAX] {
            for phase in [0.0f32, 0.25, 0.999] {
                let exact = ((f64::from(loops) + f64::from(phase)) * 1.1f32 as f64) % 0.7f32 as f64;
                let got = f64::from(played_seconds(flags, &leaf, phase, loops));
                // Same point of the loop, either side of its wrap.
                let d = (got - exact).abs();
                let err = d.min((d - 0.7f32 as f64).abs());
                assert!(err <= 2e-6, "loops {loops} phase {phase}: expected {exact}, got {got}");
            }
        }
    }

    #[test]
    fn played_seconds_synced_and_once() {
        let leaf = ExpandLeaf::new(3, 2.0, 0.5);
        assert_eq!(played_seconds(ExpandTables::SYNC | ExpandTables::LOOPING, &leaf, 0.25, 9), 0.5);
        assert_eq!(played_seconds(0, &leaf, 0.5, 0), 0.25);
        let long = ExpandLeaf::new(3, 2.0, 5.0);
        assert_eq!(played_seconds(0, &long, 1.0, 0), 2.0);
    }

    #[test]
    fn is_settled_reads_every_bit_but_the_state_and_the_active_clock() {
        use std::mem::{offset_of, size_of_val};
        let mut record = LayerRecord {
            state: 3,
            anchor: 9,
            phase: 0.25,
            loops: 7,
            advance: 0.01,
            rate: 0.5,
            ..LayerRecord::default()
        };
        let flags = LayerProgram::ROOT_MOTION as u8;
        record.settle(flags, 0.75);
        assert!(record.is_settled(flags, 0.75));
        assert!(!record.is_settled(0, 0.75) && !record.is_settled(flags, 0.5) && !record.is_settled(flags, -0.0));
        let r = record;
        let unread = [
            offset_of!(LayerRecord, state)..offset_of!(LayerRecord, state) + size_of_val(&r.state),
            offset_of!(LayerRecord, anchor)..offset_of!(LayerRecord, anchor) + size_of_val(&r.anchor),
            offset_of!(LayerRecord, phase)..offset_of!(LayerRecord, phase) + size_of_val(&r.phase),
            offset_of!(LayerRecord, loops)..offset_of!(LayerRecord, loops) + size_of_val(&r.loops),
            offset_of!(LayerRecord, advance)..offset_of!(LayerRecord, advance) + size_of_val(&r.advance),
            offset_of!(LayerRecord, rate)..offset_of!(LayerRecord, rate) + size_of_val(&r.rate),
        ];
        for byte in 0..size_of::<LayerRecord>() {
            for bit in 0..8 {
                let mut bytes = bytemuck::bytes_of(&record).to_vec();
                bytes[byte] ^= 1 << bit;
                let flipped: LayerRecord = bytemuck::pod_read_unaligned(&bytes);
                let read = !unread.iter().any(|r| r.contains(&byte));
                assert_eq!(flipped.is_settled(flags, 0.75), !read, "byte {byte} bit {bit}");
            }
        }
    }

    #[test]
    fn mul_hi_is_the_product_high_word() {
        assert_eq!(mul_hi(u32::MAX, u32::MAX), u32::MAX - 1);
        assert_eq!(mul_hi(1 << 16, 1 << 16), 1);
        assert_eq!(mul_hi(12_345, 6_789), 0);
    }
}
