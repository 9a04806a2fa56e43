//! The state step: compiled graphs run for whole crowds in SoA columns, emitting pose programs.
//!
//! ```text
//! set_float / set_trigger / columns ──► Crowd::update(dt) ──► programs() + samples()
//!        (per parameter, batched)         rayon over chunks       (program::LayerProgram,
//!                                          of characters           program::ClipSample)
//!                                                              + events() (AnimationEvent)
//!                                                              + due() (animation LOD)
//! ```
//!
//! Characters are grouped by [`Archetype`] (a graph plus a clip for each of its leaves). Each
//! group stores one `Vec` per field: per character and layer (index `row * layers + layer`)
//! the active and previous state, the state clock as phase and loop count, the source
//! state's clock, the transition in flight with its clock and duration; per parameter one
//! column (floats, integers, booleans); triggers as one 64-bit word per character, because
//! the step clears consumed triggers inside the parallel pass. Handles are stable: removing a
//! character moves another's row, never its handle. There is no GPU and no pose maths here.
//!
//! # Example
//! ```
//! use std::sync::{Arc, OnceLock};
//! use throng::graph::CompiledGraph;
//! use throng::state::{Archetype, ClipBinding, Crowd};
//!
//! let graph = Arc::new(CompiledGraph::from_json(r#"{
//!     "layers": [{ "name": "Base",
//!         "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
//!         "transitions": [
//!             { "from": "START", "to": "Idle" },
//!             { "from": "Idle", "to": "Walk", "time": 0.25,
//!               "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }] }
//!         ] }],
//!     "parameters": { "speed": { "name": "speed", "type": "FLOAT", "value": 0 } }
//! }"#).unwrap());
//! let archetype = Archetype::from_bindings(graph, &[
//!     ("Idle", ClipBinding { clip: 0, duration_s: 2.0 }),
//!     ("Walk", ClipBinding { clip: 1, duration_s: 1.0 }),
//! ]).unwrap();
//! let mut crowd = Crowd::new();
//! let kind = crowd.add_archetype(archetype);
//! let hero = crowd.spawn(kind).unwrap();
//! let speed = crowd.param(kind, "speed").unwrap();
//! crowd.set_float(speed, &[hero], &[1.2]).unwrap();
//! crowd.update(1.0 / 60.0).unwrap();
//! let layer = crowd.readback(hero, 0).unwrap();
//! assert_eq!(crowd.state_name(kind, layer.active_state), Some("Walk"));
//! assert!(layer.transitioning);
//! ```

mod step;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::clip::{Clip, ClipEvent, first_bad_event};
use crate::graph::{CompiledGraph, NO_INDEX, ParamKind, ParamSlot, ParamValue};
use crate::program::{swap_remove_row, ClipSample, DueRows, LayerProgram};

pub use step::MAX_EVENTS_PER_LAYER_UPDATE;
use step::{EventSink, LayerSlot, Lod, ParamView, Scratch, StepContext};

/// The evaluation rates [`Crowd::set_update_rate`] accepts: a character at rate `r` is
/// evaluated every `r`-th update (its state machine still steps every update).
pub const UPDATE_RATES: [u8; 5] = [1, 2, 4, 8, 16];

/// Stagger phases: a character's phase is its handle index modulo this (a multiple of every
/// rate), so characters spawned together spread over the frames of any rate.
const LOD_PHASES: u32 = 16;

/// Characters per rayon task: enough to amortise task overhead (the step costs tens of
/// nanoseconds per character), few enough to balance two to sixteen cores at 10k characters.
pub const CHARACTERS_PER_CHUNK: usize = 512;

/// Why a state-step call was refused. Nothing changes when one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A graph leaf has no clip.
    #[error("leaf {path:?} of the graph has no clip bound")]
    UnboundLeaf {
        /// `"State"` or `"State.Child"`.
        path: String,
    },
    /// A binding names a leaf the graph does not have.
    #[error("no leaf {path:?} in the graph (leaves are \"State\" or \"State.Child\")")]
    UnknownLeaf {
        /// The path given.
        path: String,
    },
    /// A clip duration is zero, negative or not finite.
    #[error("leaf {path:?}: clip duration {duration_s} s must be finite and > 0")]
    BadClipDuration {
        /// The leaf.
        path: String,
        /// The duration given.
        duration_s: f32,
    },
    /// The archetype id does not belong to this crowd.
    #[error("archetype {0} does not exist in this crowd")]
    UnknownArchetype(u32),
    /// The handle's character was removed, or never existed.
    #[error("character handle {index}/{generation} is stale or unknown")]
    StaleHandle {
        /// Slot index.
        index: u32,
        /// Generation given.
        generation: u32,
    },
    /// The handle was spawned by another crowd.
    #[error("character handle {index}/{generation} belongs to crowd {handle_crowd}, not to this crowd ({crowd})")]
    ForeignHandle {
        /// Slot index.
        index: u32,
        /// Generation given.
        generation: u32,
        /// The tag of the crowd that spawned the handle.
        handle_crowd: u32,
        /// This crowd's tag.
        crowd: u32,
    },
    /// Every one of the crowd's [`MAX_CHARACTER_SLOTS`] slots is live or retired.
    #[error("the crowd has used all {slots} character slots (live and retired)")]
    CrowdFull {
        /// Slots the crowd holds.
        slots: u32,
    },
    /// The graph has no parameter of that name.
    #[error("no parameter named {0:?}")]
    UnknownParameter(String),
    /// The parameter belongs to a graph the character's archetype does not use.
    #[error("character {index}: its archetype's graph does not have this parameter")]
    WrongGraph {
        /// The character's slot index.
        index: u32,
    },
    /// The parameter is another type than the setter's.
    #[error("parameter is {got}, the setter is for {expected}")]
    ParamKind {
        /// The setter's type.
        expected: &'static str,
        /// The parameter's type.
        got: &'static str,
    },
    /// A parameter value is NaN or infinite.
    #[error("value {value} at batch index {at} is not finite")]
    NonFiniteValue {
        /// Index in the batch.
        at: usize,
        /// The value.
        value: f32,
    },
    /// `dt` is negative, NaN or infinite.
    #[error("dt {0} s must be finite and ≥ 0")]
    BadDt(f32),
    /// Handles and values differ in length.
    #[error("{handles} handles but {values} values")]
    LengthMismatch {
        /// Handles given.
        handles: usize,
        /// Values given.
        values: usize,
    },
    /// A layer index past the graph's layers.
    #[error("layer {layer} does not exist; the graph has {layers}")]
    UnknownLayer {
        /// The index given.
        layer: usize,
        /// Layers in the graph.
        layers: usize,
    },
    /// Events were given for a clip that no leaf of the archetype plays.
    #[error("events for clip {clip}, which no leaf of the archetype is bound to")]
    UnboundEventClip {
        /// The clip index given.
        clip: u32,
    },
    /// An animation event has an empty name, or a time that is not finite or lies outside
    /// the clip (`[0, duration]` of every leaf bound to it).
    #[error("clip {clip} event {index} ({name:?}) at {time_s} s: {what} (leaf {path:?} plays the clip for {duration_s} s)")]
    BadEvent {
        /// The clip index.
        clip: u32,
        /// Index of the event in the list given.
        index: usize,
        /// The event's name.
        name: String,
        /// The event's time.
        time_s: f32,
        /// A leaf bound to the clip, whose duration the time was checked against.
        path: String,
        /// That leaf's clip duration.
        duration_s: f32,
        /// What is wrong.
        what: &'static str,
    },
    /// An event weight threshold outside `[0, 1]`, or NaN.
    #[error("event weight threshold {0} must lie in [0, 1]")]
    BadEventThreshold(f32),
    /// An update rate other than those of [`UPDATE_RATES`].
    #[error("character {index}: update rate {rate} is not one of 1, 2, 4, 8, 16")]
    BadUpdateRate {
        /// The character's slot index.
        index: u32,
        /// The rate given.
        rate: u8,
    },
}

/// The clip an archetype plays for one graph leaf (PlayCanvas's `assignAnimation`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipBinding {
    /// Index into the archetype's clip table (what [`ClipSample::clip`] holds).
    pub clip: u32,
    /// The clip's duration, seconds, > 0.
    pub duration_s: f32,
}

/// A graph with a clip bound to each of its leaves, shared by many characters.
#[derive(Clone, Debug)]
pub struct Archetype {
    graph: Arc<CompiledGraph>,
    leaf_clip: Vec<u32>,
    leaf_duration_s: Vec<f32>,
    /// `speed / duration` per leaf: progress per second at weight 1.
    leaf_rate: Vec<f32>,
    /// Longest `duration / speed` of each state's leaves: an unsynced state's cycle.
    state_longest_s: Vec<f32>,
    state_unsynced_rate: Vec<f32>,
    /// Per layer: first sample slot of the layer within a character's samples.
    layer_sample_offset: Vec<u32>,
    samples_per_character: u32,
    /// Animation events as given, per clip index (sorted by time); the source of the leaf tables.
    clip_events: Vec<Vec<(f32, EventId)>>,
    /// Per leaf: its clip's events, a range of `event_time_s` / `event_id` sorted by time, and
    /// what turns its state's progress into clip seconds.
    leaf_events: Vec<step::LeafEvents>,
    event_time_s: Vec<f32>,
    event_id: Vec<EventId>,
    /// Event names, indexed by [`EventId`].
    event_names: Vec<String>,
    event_weight_threshold: f32,
}

impl Archetype {
    /// Binds every leaf with `bind`, which gets each leaf's path (`"State"`, `"State.Child"`).
    ///
    /// # Errors
    /// [`StateError::UnboundLeaf`] when `bind` returns `None`, [`StateError::BadClipDuration`].
    pub fn new(graph: Arc<CompiledGraph>, mut bind: impl FnMut(&str) -> Option<ClipBinding>) -> Result<Self, StateError> {
        let mut bindings = Vec::with_capacity(graph.leaves().len());
        for leaf in graph.leaves() {
            let b = bind(&leaf.path).ok_or_else(|| StateError::UnboundLeaf { path: leaf.path.clone() })?;
            if !(b.duration_s.is_finite() && b.duration_s > 0.0) {
                return Err(StateError::BadClipDuration { path: leaf.path.clone(), duration_s: b.duration_s });
            }
            bindings.push(b);
        }
        let leaf_rate: Vec<f32> =
            graph.leaves().iter().zip(&bindings).map(|(l, b)| l.speed / b.duration_s).collect();
        let state_longest_s: Vec<f32> = graph
            .states()
            .iter()
            .map(|s| leaf_rate[s.leaves.range()].iter().map(|r| 1.0 / r).fold(0.0, f32::max))
            .collect();
        let state_unsynced_rate = state_longest_s.iter().map(|d| 1.0 / d).collect();
        let mut layer_sample_offset = Vec::with_capacity(graph.layers().len());
        let mut samples_per_character = 0;
        for layer in graph.layers() {
            layer_sample_offset.push(samples_per_character);
            samples_per_character += 2 * layer.max_leaves;
        }
        Ok(Self {
            leaf_clip: bindings.iter().map(|b| b.clip).collect(),
            leaf_duration_s: bindings.iter().map(|b| b.duration_s).collect(),
            leaf_rate,
            state_longest_s,
            state_unsynced_rate,
            layer_sample_offset,
            samples_per_character,
            clip_events: Vec::new(),
            leaf_events: vec![step::LeafEvents::default(); graph.leaves().len()],
            event_time_s: Vec::new(),
            event_id: Vec::new(),
            event_names: Vec::new(),
            event_weight_threshold: 0.0,
            graph,
        })
    }

    /// Binds leaves by path, as PlayCanvas's `layer.assignAnimation(path, track)`.
    ///
    /// # Errors
    /// [`StateError::UnknownLeaf`] for a path the graph lacks, [`StateError::UnboundLeaf`] for
    /// a leaf left without a clip, [`StateError::BadClipDuration`].
    pub fn from_bindings(graph: Arc<CompiledGraph>, bindings: &[(&str, ClipBinding)]) -> Result<Self, StateError> {
        if let Some((path, _)) = bindings.iter().find(|(p, _)| graph.leaves().iter().all(|l| l.path != *p)) {
            return Err(StateError::UnknownLeaf { path: (*path).to_owned() });
        }
        Self::new(graph, |path| bindings.iter().rev().find(|(p, _)| *p == path).map(|(_, b)| *b))
    }

    /// The graph.
    #[must_use]
    pub fn graph(&self) -> &Arc<CompiledGraph> {
        &self.graph
    }

    /// Layer `layer`'s sample slots within a character's: twice its largest state, from where
    /// the layers before it end. The state step and a spawn's first program write there.
    fn layer_samples(&self, layer: usize) -> std::ops::Range<usize> {
        let start = self.layer_sample_offset[layer] as usize;
        start..start + 2 * self.graph.layers()[layer].max_leaves as usize
    }

    /// Sample slots each character reserves: twice the largest state of each layer.
    #[must_use]
    pub fn samples_per_character(&self) -> usize {
        self.samples_per_character as usize
    }

    /// The archetype with `events` on clip `clip` (an index of its clip table, as in
    /// [`ClipBinding::clip`]) in place of any given before. Every leaf bound to the clip fires
    /// them (see [`Crowd::events`]); names shared by several clips share one [`EventId`].
    ///
    /// # Errors
    /// [`StateError::UnboundEventClip`] when no leaf plays `clip`; [`StateError::BadEvent`] for
    /// an empty name, or a time that is not finite or lies outside `[0, duration]` of a leaf
    /// bound to the clip. The archetype is unchanged on error.
    pub fn with_clip_events(mut self, clip: u32, events: &[ClipEvent]) -> Result<Self, StateError> {
        let mut bound = false;
        for (leaf, (&c, &duration_s)) in self.leaf_clip.iter().zip(&self.leaf_duration_s).enumerate() {
            if c != clip {
                continue;
            }
            bound = true;
            if let Some((index, what)) = first_bad_event(events, duration_s) {
                let e = &events[index];
                let path = self.graph.leaves().get(leaf).map(|l| l.path.clone()).unwrap_or_default();
                return Err(StateError::BadEvent { clip, index, name: e.name.clone(), time_s: e.time_s, path, duration_s, what });
            }
        }
        if !bound {
            return Err(StateError::UnboundEventClip { clip });
        }
        let mut list: Vec<(f32, EventId)> = events
            .iter()
            .map(|e| {
                let id = match self.event_names.iter().position(|n| *n == e.name) {
                    Some(i) => i,
                    None => {
                        self.event_names.push(e.name.clone());
                        self.event_names.len() - 1
                    }
                };
                (e.time_s, EventId(id as u32))
            })
            .collect();
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        let slot = clip as usize;
        if self.clip_events.len() <= slot {
            self.clip_events.resize_with(slot + 1, Vec::new);
        }
        self.clip_events[slot] = list;
        self.event_time_s.clear();
        self.event_id.clear();
        for (leaf, &c) in self.leaf_clip.iter().enumerate() {
            let start = self.event_time_s.len() as u32;
            for &(t, id) in self.clip_events.get(c as usize).map_or(&[][..], Vec::as_slice) {
                self.event_time_s.push(t);
                self.event_id.push(id);
            }
            let state = self.graph.leaves()[leaf].state as usize;
            self.leaf_events[leaf] = step::LeafEvents::new(start..self.event_time_s.len() as u32, self.leaf_duration_s[leaf], step::seconds_per_progress(&self, state, leaf));
        }
        Ok(self)
    }

    /// The archetype with each bound clip's [`Clip::events`] (as imported from glTF), `clips`
    /// being its clip table (indexed by [`ClipBinding::clip`]). Clips no leaf plays, and
    /// clips without events, are skipped.
    ///
    /// # Errors
    /// As [`Archetype::with_clip_events`].
    pub fn with_events_from_clips(mut self, clips: &[Clip]) -> Result<Self, StateError> {
        for (index, clip) in clips.iter().enumerate() {
            if !clip.events().is_empty() && self.leaf_clip.contains(&(index as u32)) {
                self = self.with_clip_events(index as u32, clip.events())?;
            }
        }
        Ok(self)
    }

    /// The archetype with a weight below which events do not fire (0 when not set: every clip
    /// that shows in the pose fires). See [`Crowd::events`] for the weight compared.
    ///
    /// # Errors
    /// [`StateError::BadEventThreshold`] for a threshold outside `[0, 1]` or NaN.
    pub fn with_event_weight_threshold(mut self, weight: f32) -> Result<Self, StateError> {
        if !(0.0..=1.0).contains(&weight) {
            return Err(StateError::BadEventThreshold(weight));
        }
        self.event_weight_threshold = weight;
        Ok(self)
    }

    /// The weight below which events do not fire, in `[0, 1]`.
    #[must_use]
    pub fn event_weight_threshold(&self) -> f32 {
        self.event_weight_threshold
    }

    /// Whether any leaf's clip has events; without any, the state step skips event work.
    #[must_use]
    pub fn has_events(&self) -> bool {
        !self.event_time_s.is_empty()
    }

    /// The name of an event id.
    #[must_use]
    pub fn event_name(&self, id: EventId) -> Option<&str> {
        self.event_names.get(id.0 as usize).map(String::as_str)
    }

    /// The id of an event name, if any clip of the archetype has an event of that name.
    #[must_use]
    pub fn event_id(&self, name: &str) -> Option<EventId> {
        self.event_names.iter().position(|n| n == name).map(|i| EventId(i as u32))
    }

    /// Every event name, indexed by [`EventId::index`].
    #[must_use]
    pub fn event_names(&self) -> &[String] {
        &self.event_names
    }
}

/// An event name of one archetype: an index into [`Archetype::event_names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u32);

impl EventId {
    /// The index into [`Archetype::event_names`].
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One animation event fired by one character's update, as [`Crowd::events`] reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnimationEvent {
    /// The character.
    pub character: CharacterHandle,
    /// Its row in the archetype's columns at the update (as [`Crowd::row_of`] said then).
    pub row: u32,
    /// The layer whose state played the clip.
    pub layer: u32,
    /// The graph state that played it (an index into the graph's states).
    pub state: u32,
    /// The event's name ([`Archetype::event_name`]).
    pub event: EventId,
    /// The clip, an index of the archetype's clip table.
    pub clip: u32,
    /// The event's time in the clip, seconds.
    pub time_s: f32,
    /// The clip's weight in the character's pose at this update, in (0, 1]: its blend weight
    /// times its side's share of a transition, times the layer's weight above the base layer.
    pub weight: f32,
    /// Times the update crossed the event, ≥ 1: more than 1 only when one step spanned several
    /// loops of the clip, which is reported once.
    pub count: u32,
}

/// Bits of a handle's slot index, its generation and its crowd's tag, packed in 64 bits.
const INDEX_BITS: u32 = 24;
const GENERATION_BITS: u32 = 20;
const CROWD_BITS: u32 = 64 - INDEX_BITS - GENERATION_BITS;

/// Most character slots one crowd holds, live, free and retired together (2²⁴): a handle's
/// index has 24 bits. [`Crowd::spawn`] past it is refused as [`StateError::CrowdFull`].
pub const MAX_CHARACTER_SLOTS: u32 = 1 << INDEX_BITS;

/// A slot's last generation (2²⁰ − 1). A character despawned at it retires its slot for good
/// rather than wrap to generation 0, so that no stale handle ever names a live character.
pub const MAX_GENERATION: u32 = (1 << GENERATION_BITS) - 1;

/// The next crowd's tag. Tags run 1 to 2²⁰ − 1 and then start again, so crowds made
/// 2²⁰ − 1 apart share one; that a handle from one of them is taken for the other's then
/// needs the same slot at the same generation too.
static NEXT_CROWD_TAG: AtomicU32 = AtomicU32::new(0);

fn next_crowd_tag() -> u32 {
    1 + NEXT_CROWD_TAG.fetch_add(1, Ordering::Relaxed) % ((1 << CROWD_BITS) - 1)
}

/// A character: its crowd's tag, slot index and generation. Stays valid until the character is
/// removed, and only in the crowd that spawned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CharacterHandle {
    index: u32,
    generation: u32,
    crowd: u32,
}

impl CharacterHandle {
    /// The handle as one integer, `crowd << 44 | generation << 24 | index` (a 20-bit crowd tag,
    /// never 0, so no handle is 0; a 20-bit generation; a 24-bit slot index): for a C caller
    /// (`throng::capi`) or a save file.
    #[must_use]
    pub const fn to_bits(self) -> u64 {
        (self.crowd as u64) << (INDEX_BITS + GENERATION_BITS) | (self.generation as u64) << INDEX_BITS | self.index as u64
    }

    /// The handle [`CharacterHandle::to_bits`] gave. Any integer is accepted: one that names no
    /// live character is refused by the [`Crowd`] as [`StateError::StaleHandle`], one of
    /// another crowd as [`StateError::ForeignHandle`].
    #[must_use]
    pub const fn from_bits(bits: u64) -> Self {
        Self {
            index: (bits & ((1 << INDEX_BITS) - 1)) as u32,
            generation: (bits >> INDEX_BITS & ((1 << GENERATION_BITS) - 1)) as u32,
            crowd: (bits >> (INDEX_BITS + GENERATION_BITS)) as u32,
        }
    }
}

/// An archetype registered in a [`Crowd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArchetypeId(u32);

/// Bytes of CPU state per character of an archetype, by what holds them
/// ([`Crowd::memory_per_character`]); the evaluators' memory comes on top
/// (`eval::frame::EvalContext::bytes_per_character`, `gpu::GpuCrowd::memory_bytes_per_character`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CharacterBytes {
    /// Per layer: active, previous and transition indices, clocks, flags.
    pub layer_state: usize,
    /// Parameter columns (float, int, bool) and the two trigger words (set, single-frame).
    pub parameters: usize,
    /// The handle's slot and generation.
    pub bookkeeping: usize,
    /// Animation LOD's schedule ([`Crowd::set_update_rate`]): rate, phase, frames skipped, the
    /// due flag and the seconds since the last evaluation.
    pub update_schedule: usize,
    /// One [`LayerProgram`] per layer, rewritten every update.
    pub programs: usize,
    /// The [`ClipSample`]s reserved per character (twice the most leaves of any state, per layer).
    pub samples: usize,
}

impl CharacterBytes {
    /// Every part together.
    #[must_use]
    pub fn total(&self) -> usize {
        self.layer_state + self.parameters + self.bookkeeping + self.update_schedule + self.programs + self.samples
    }
}

/// A parameter of one graph, resolved once by name for fast batch setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamId {
    slot: ParamSlot,
    graph: u64,
}

/// What a layer of a character is doing, after the last update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerReadback {
    /// The active state, an index into the graph's states.
    pub active_state: usize,
    /// The state the last transition left, if any.
    pub previous_state: Option<usize>,
    /// Whether a transition is in flight.
    pub transitioning: bool,
    /// Its linear progress in [0, 1]; 1 when none is in flight.
    pub transition_progress: f32,
    /// The active state's share of the layer's pose.
    pub active_weight: f32,
    /// The previous state's share (the snapshot's, after an interruption); 0 when not transitioning.
    pub previous_weight: f32,
    /// Fraction of the active state's duration played in this loop, in [0, 1] (1 only for a
    /// state that does not loop, held at its end). Its clips are sampled at `phase × duration`,
    /// or `(1 − phase) × duration` for a state with a negative speed.
    pub phase: f32,
    /// Whole loops the active state has completed since it was entered.
    pub loops: u32,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    group: u32,
    row: u32,
    live: bool,
}

/// One archetype's characters, one column per field.
#[derive(Debug)]
struct Group {
    arch: Archetype,
    slots: Vec<u32>,
    // Per character × layer (index row * layers + layer).
    active: Vec<u16>,
    previous: Vec<u16>,
    phase: Vec<f32>,
    loops: Vec<u32>,
    src_phase: Vec<f32>,
    src_loops: Vec<u32>,
    transition: Vec<u16>,
    trans_time_s: Vec<f32>,
    trans_duration_s: Vec<f32>,
    flags: Vec<u8>,
    // Per parameter.
    floats: Vec<Vec<f32>>,
    ints: Vec<Vec<i32>>,
    bools: Vec<Vec<bool>>,
    // Per character.
    triggers: Vec<u64>,
    single_frame: Vec<u64>,
    // Animation LOD, per character: evaluation rate, stagger phase, updates skipped since the
    // last evaluation (`u8::MAX` before the first), seconds since then, due this update.
    lod_rate: Vec<u8>,
    lod_phase: Vec<u8>,
    lod_skipped: Vec<u8>,
    lod_elapsed_s: Vec<f32>,
    lod_due: Vec<bool>,
    /// Updates so far; with a character's phase, picks its due updates.
    lod_frame: u32,
    // Output.
    programs: Vec<LayerProgram>,
    samples: Vec<ClipSample>,
    /// The last update's animation events, in row order.
    events: Vec<AnimationEvent>,
    /// Events the last update did not report, past [`MAX_EVENTS_PER_LAYER_UPDATE`].
    events_dropped: u64,
    /// One list per chunk of the parallel step, with the events it dropped, concatenated into
    /// `events` after it; kept so that their capacity is reused from update to update.
    chunk_events: Vec<(Vec<AnimationEvent>, u64)>,
    /// The due rows (`lod_due`), ascending, with their `lod_elapsed_s`: built by each update,
    /// dropped by a spawn or despawn (which change rows) and built again when next asked for, so
    /// that neither costs more than moving a row.
    due: OnceLock<DueList>,
    /// A dropped list's buffers, for the next update to fill.
    spare_due: DueList,
    /// Per chunk of the parallel step, the rows it found switching on an update they would
    /// have skipped, to be made due after it (LOD never defers a switch).
    chunk_promoted: Vec<Vec<u32>>,
}

/// A group's due rows and their seconds since their last evaluation ([`Crowd::due`]).
#[derive(Clone, Debug, Default)]
struct DueList {
    rows: Vec<u32>,
    dt_s: Vec<f32>,
}

impl DueList {
    /// Fills the list from the LOD columns, keeping its buffers.
    fn fill(mut self, due: &[bool], elapsed_s: &[f32]) -> Self {
        self.rows.clear();
        self.dt_s.clear();
        for (row, (&due, &elapsed_s)) in due.iter().zip(elapsed_s).enumerate() {
            if due {
                self.rows.push(row as u32);
                self.dt_s.push(elapsed_s);
            }
        }
        self
    }
}

impl Group {
    /// What layer slot `i` (`row * layers + layer`, in range) is doing.
    fn layer_readback(&self, i: usize) -> LayerReadback {
        let program = &self.programs[i];
        LayerReadback {
            active_state: self.active[i] as usize,
            previous_state: (self.previous[i] != NO_INDEX).then_some(self.previous[i] as usize),
            transitioning: self.transition[i] != NO_INDEX,
            transition_progress: program.progress,
            active_weight: program.target_weight,
            previous_weight: 1.0 - program.target_weight,
            phase: self.phase[i],
            loops: self.loops[i],
        }
    }

    fn new(arch: Archetype) -> Self {
        let g = &arch.graph;
        Self {
            slots: Vec::new(),
            active: Vec::new(),
            previous: Vec::new(),
            phase: Vec::new(),
            loops: Vec::new(),
            src_phase: Vec::new(),
            src_loops: Vec::new(),
            transition: Vec::new(),
            trans_time_s: Vec::new(),
            trans_duration_s: Vec::new(),
            flags: Vec::new(),
            floats: vec![Vec::new(); g.num_columns(ParamKind::Float)],
            ints: vec![Vec::new(); g.num_columns(ParamKind::Int)],
            bools: vec![Vec::new(); g.num_columns(ParamKind::Bool)],
            triggers: Vec::new(),
            single_frame: Vec::new(),
            lod_rate: Vec::new(),
            lod_phase: Vec::new(),
            lod_skipped: Vec::new(),
            lod_elapsed_s: Vec::new(),
            lod_due: Vec::new(),
            lod_frame: 0,
            programs: Vec::new(),
            samples: Vec::new(),
            events: Vec::new(),
            events_dropped: 0,
            chunk_events: Vec::new(),
            due: OnceLock::new(),
            spare_due: DueList::default(),
            chunk_promoted: Vec::new(),
            arch,
        }
    }

    fn num_layers(&self) -> usize {
        self.arch.graph.layers().len()
    }

    fn push(&mut self, slot: u32) {
        let g = Arc::clone(&self.arch.graph);
        let row = self.slots.len();
        self.slots.push(slot);
        let mut trig = 0u64;
        for p in g.parameters() {
            let col = p.slot.column as usize;
            match p.default {
                ParamValue::Float(v) => self.floats[col].push(v),
                ParamValue::Int(v) => self.ints[col].push(v),
                ParamValue::Bool(v) => self.bools[col].push(v),
                ParamValue::Trigger(v) => trig |= u64::from(v) << (col % 64),
            }
        }
        self.triggers.push(trig);
        self.single_frame.push(0);
        self.lod_rate.push(1);
        self.lod_phase.push((slot % LOD_PHASES) as u8);
        self.lod_skipped.push(u8::MAX);
        self.lod_elapsed_s.push(0.0);
        // Due at once: evaluated between this update and the next, it shows its first pose
        // rather than an output row nobody wrote (the next update lists it again, as new).
        self.lod_due.push(true);
        self.drop_due();
        let per = self.arch.samples_per_character();
        self.samples.extend(std::iter::repeat_n(ClipSample::default(), per));
        for layer in 0..g.layers().len() {
            let view = ParamView { floats: &self.floats, ints: &self.ints, bools: &self.bools, row };
            let start = step::initial_state(&g, layer, &view, trig);
            // Shown if the character is evaluated before the next update (animation LOD makes
            // it due at once): its start state's first frame, not the rig's rest pose.
            let slots = self.arch.layer_samples(layer);
            let first_sample = row * per + slots.start;
            let program = step::start_program(&self.arch, layer, usize::from(start), &view, trig, first_sample as u32, &mut self.samples[first_sample..row * per + slots.end]);
            self.active.push(start);
            self.previous.push(NO_INDEX);
            self.phase.push(0.0);
            self.loops.push(0);
            self.src_phase.push(0.0);
            self.src_loops.push(0);
            self.transition.push(NO_INDEX);
            self.trans_time_s.push(0.0);
            self.trans_duration_s.push(0.0);
            self.flags.push(step::FLAG_ENTERED);
            self.programs.push(program);
        }
    }

    /// Swap-removes `row`; returns the slot of the character that moved into it, if any.
    fn swap_remove(&mut self, row: usize) -> Option<u32> {
        let layers = self.num_layers();
        let last = self.slots.len() - 1;
        self.slots.swap_remove(row);
        for col in &mut self.floats {
            col.swap_remove(row);
        }
        for col in &mut self.ints {
            col.swap_remove(row);
        }
        for col in &mut self.bools {
            col.swap_remove(row);
        }
        self.triggers.swap_remove(row);
        self.single_frame.swap_remove(row);
        self.lod_rate.swap_remove(row);
        self.lod_phase.swap_remove(row);
        self.lod_skipped.swap_remove(row);
        self.lod_elapsed_s.swap_remove(row);
        self.lod_due.swap_remove(row);
        self.drop_due();
        swap_remove_row(&mut self.active, row, layers);
        swap_remove_row(&mut self.previous, row, layers);
        swap_remove_row(&mut self.phase, row, layers);
        swap_remove_row(&mut self.loops, row, layers);
        swap_remove_row(&mut self.src_phase, row, layers);
        swap_remove_row(&mut self.src_loops, row, layers);
        swap_remove_row(&mut self.transition, row, layers);
        swap_remove_row(&mut self.trans_time_s, row, layers);
        swap_remove_row(&mut self.trans_duration_s, row, layers);
        swap_remove_row(&mut self.flags, row, layers);
        swap_remove_row(&mut self.programs, row, layers);
        let per = self.arch.samples_per_character();
        swap_remove_row(&mut self.samples, row, per);
        // The moved character's programs point at its old sample slots; repoint them.
        for (l, program) in self.programs.iter_mut().skip(row * layers).take(layers).enumerate() {
            program.first_sample = (row * per + self.arch.layer_samples(l).start) as u32;
        }
        (row != last).then(|| self.slots[row])
    }

    /// Forgets the due list after rows changed; [`Crowd::due`] builds it again from the columns.
    fn drop_due(&mut self) {
        if let Some(list) = self.due.take() {
            self.spare_due = list;
        }
    }

    /// The due list, built from the columns if a spawn or despawn dropped it.
    fn due_list(&self) -> &DueList {
        self.due.get_or_init(|| DueList::default().fill(&self.lod_due, &self.lod_elapsed_s))
    }

    /// Picks this update's due characters (animation LOD): a rate-`r` character is due when
    /// `(update + phase) % r == 0`, or when skipping once more would leave it unevaluated for
    /// longer than `r` updates (after a rate change, or before its first evaluation).
    fn schedule(&mut self, dt_s: f32) {
        self.drop_due();
        let frame = self.lod_frame;
        self.lod_frame = frame.wrapping_add(1);
        let columns = self.lod_rate.iter().zip(&self.lod_phase).zip(&mut self.lod_skipped).zip(&mut self.lod_elapsed_s).zip(&mut self.lod_due);
        for ((((&rate, &phase), skipped), elapsed_s), due) in columns {
            let rate = u32::from(rate);
            // Saturating: the skipped updates' dts (each finite) must not add up to infinity,
            // which the evaluators refuse as a row's seconds.
            *elapsed_s = if *due { dt_s } else { (*elapsed_s + dt_s).min(f32::MAX) };
            *due = frame.wrapping_add(u32::from(phase)) % rate == 0 || u32::from(*skipped) + 1 >= rate;
            if *due {
                *skipped = 0;
            } else {
                *skipped += 1;
            }
        }
    }

    /// Steps every character; `slots` (the crowd's) supply the generations of event handles.
    fn update(&mut self, dt_s: f32, slots: &[Slot], crowd: u32) {
        self.schedule(dt_s);
        let layers = self.num_layers();
        let per = self.arch.samples_per_character();
        let chunk = CHARACTERS_PER_CHUNK;
        let num_chunks = self.slots.len().div_ceil(chunk);
        if self.chunk_events.len() < num_chunks {
            self.chunk_events.resize_with(num_chunks, Default::default);
        }
        if self.chunk_promoted.len() < num_chunks {
            self.chunk_promoted.resize_with(num_chunks, Vec::new);
        }
        let ctx = StepContext { arch: &self.arch, dt_s };
        let with_events = self.arch.has_events();
        let (floats, ints, bools, rows) = (&self.floats, &self.ints, &self.bools, &self.slots);
        let (lod_due, lod_elapsed_s) = (&self.lod_due, &self.lod_elapsed_s);
        self.active
            .par_chunks_mut(chunk * layers)
            .zip(self.previous.par_chunks_mut(chunk * layers))
            .zip(self.phase.par_chunks_mut(chunk * layers))
            .zip(self.loops.par_chunks_mut(chunk * layers))
            .zip(self.src_phase.par_chunks_mut(chunk * layers))
            .zip(self.src_loops.par_chunks_mut(chunk * layers))
            .zip(self.transition.par_chunks_mut(chunk * layers))
            .zip(self.trans_time_s.par_chunks_mut(chunk * layers))
            .zip(self.trans_duration_s.par_chunks_mut(chunk * layers))
            .zip(self.flags.par_chunks_mut(chunk * layers))
            .zip(self.triggers.par_chunks_mut(chunk))
            .zip(self.single_frame.par_chunks_mut(chunk))
            .zip(self.programs.par_chunks_mut(chunk * layers))
            .zip(self.samples.par_chunks_mut((chunk * per).max(1)))
            .zip(self.chunk_events[..num_chunks].par_iter_mut().zip(self.chunk_promoted[..num_chunks].par_iter_mut()))
            .enumerate()
            .for_each(
                |(c, ((((((((((((((active, previous), phase), loops), src_phase), src_loops), transition), trans_time_s), trans_duration_s), flags), triggers), single), programs), samples), (fired, promoted)))| {
                    let zone = crate::zone!("throng.state_step.chunk");
                    zone.value(c as u64);
                    let mut scratch = Scratch::new();
                    let (fired, dropped) = (&mut fired.0, &mut fired.1);
                    fired.clear();
                    *dropped = 0;
                    promoted.clear();
                    for k in 0..triggers.len() {
                        let row = c * chunk + k;
                        let view = ParamView { floats, ints, bools, row };
                        let trig = triggers[k];
                        let mut consumed = 0u64;
                        let character = if with_events {
                            let index = rows[row];
                            CharacterHandle { index, generation: slots.get(index as usize).map_or(0, |s| s.generation), crowd }
                        } else {
                            CharacterHandle { index: u32::MAX, generation: 0, crowd }
                        };
                        let mut sink = EventSink { out: &mut *fired, character, row: row as u32, layer_first: 0, dropped: 0 };
                        let lod = Lod { elapsed_s: lod_elapsed_s[row] };
                        for l in 0..layers {
                            let i = k * layers + l;
                            let slot = LayerSlot {
                                active: &mut active[i],
                                previous: &mut previous[i],
                                phase: &mut phase[i],
                                loops: &mut loops[i],
                                src_phase: &mut src_phase[i],
                                src_loops: &mut src_loops[i],
                                transition: &mut transition[i],
                                trans_time_s: &mut trans_time_s[i],
                                trans_duration_s: &mut trans_duration_s[i],
                                flags: &mut flags[i],
                            };
                            let slots = ctx.arch.layer_samples(l);
                            let first_sample = (row * per + slots.start) as u32;
                            step::step_layer(
                                &ctx,
                                l,
                                slot,
                                &view,
                                trig,
                                &mut consumed,
                                &mut scratch,
                                first_sample,
                                &mut programs[i],
                                &mut samples[k * per + slots.start..k * per + slots.end],
                                &mut sink,
                                lod,
                            );
                        }
                        *dropped += sink.dropped;
                        triggers[k] = trig & !consumed & !single[k];
                        single[k] = 0;
                        if !lod_due[row] && programs[k * layers..(k + 1) * layers].iter().any(|p| p.flags & LayerProgram::SWITCHED != 0) {
                            promoted.push(row as u32);
                        }
                    }
                    #[cfg(feature = "tracy")]
                    crate::profile::count_step_chunk(triggers.len(), programs);
                },
            );
        // Chunks in row order, whatever thread ran each: the list is the same at any thread count.
        self.events.clear();
        self.events_dropped = 0;
        for (fired, dropped) in &self.chunk_events[..num_chunks] {
            self.events.extend_from_slice(fired);
            self.events_dropped += dropped;
        }
        // The rows that switched on an update they would have skipped are evaluated on it; their
        // count of skipped updates starts afresh.
        for &row in self.chunk_promoted[..num_chunks].iter().flatten() {
            self.lod_due[row as usize] = true;
            self.lod_skipped[row as usize] = 0;
        }
        let list = std::mem::take(&mut self.spare_due).fill(&self.lod_due, &self.lod_elapsed_s);
        self.due = OnceLock::from(list);
    }
}

/// Every character of every archetype, with stable handles.
#[derive(Debug)]
pub struct Crowd {
    groups: Vec<Group>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// This crowd's tag, in every handle it gives: handles of other crowds are refused.
    tag: u32,
}

impl Default for Crowd {
    fn default() -> Self {
        Self { groups: Vec::new(), slots: Vec::new(), free: Vec::new(), tag: next_crowd_tag() }
    }
}

impl Crowd {
    /// An empty crowd, with a tag of its own that its handles carry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an archetype; its characters are stored and stepped together.
    pub fn add_archetype(&mut self, archetype: Archetype) -> ArchetypeId {
        self.groups.push(Group::new(archetype));
        ArchetypeId(self.groups.len() as u32 - 1)
    }

    fn group(&self, id: ArchetypeId) -> Result<&Group, StateError> {
        self.groups.get(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))
    }

    /// The archetype registered as `id`.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn archetype(&self, id: ArchetypeId) -> Result<&Archetype, StateError> {
        Ok(&self.group(id)?.arch)
    }

    /// Adds a character in each layer's default state with the graph's default parameters.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`]; [`StateError::CrowdFull`] when no slot is free and the
    /// crowd holds [`MAX_CHARACTER_SLOTS`].
    pub fn spawn(&mut self, id: ArchetypeId) -> Result<CharacterHandle, StateError> {
        let group = self.groups.get_mut(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))?;
        let row = group.slots.len() as u32;
        if self.free.is_empty() && self.slots.len() >= MAX_CHARACTER_SLOTS as usize {
            return Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS });
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot { generation: 0, group: id.0, row, live: false });
                self.slots.len() as u32 - 1
            }
        };
        group.push(index);
        let slot = &mut self.slots[index as usize];
        slot.group = id.0;
        slot.row = row;
        slot.live = true;
        Ok(CharacterHandle { index, generation: slot.generation, crowd: self.tag })
    }

    /// How many more characters the crowd can spawn: its free slots, plus those of
    /// [`MAX_CHARACTER_SLOTS`] it has not used yet.
    #[must_use]
    pub fn spawnable(&self) -> usize {
        self.free.len() + (MAX_CHARACTER_SLOTS as usize).saturating_sub(self.slots.len())
    }

    /// Removes a character; every other handle stays valid. Rows are swap-removed: the
    /// archetype's last row moves into the removed character's row ([`Crowd::row_of`] before
    /// the call tells which), so per-row data the caller keeps, such as the evaluator's
    /// `eval::frame::EvalContext`, follows with its own `swap_remove(row)`.
    ///
    /// A slot is reused with the next generation, up to [`MAX_GENERATION`]; a character
    /// despawned at it retires the slot, so its handles stay stale for good.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn despawn(&mut self, handle: CharacterHandle) -> Result<(), StateError> {
        let (group, row) = self.locate(handle)?;
        if let Some(moved) = self.groups[group].swap_remove(row) {
            self.slots[moved as usize].row = row as u32;
        }
        let slot = &mut self.slots[handle.index as usize];
        slot.live = false;
        if slot.generation < MAX_GENERATION {
            slot.generation += 1;
            self.free.push(handle.index);
        }
        Ok(())
    }

    fn locate(&self, h: CharacterHandle) -> Result<(usize, usize), StateError> {
        if h.crowd != self.tag {
            return Err(StateError::ForeignHandle { index: h.index, generation: h.generation, handle_crowd: h.crowd, crowd: self.tag });
        }
        match self.slots.get(h.index as usize) {
            Some(s) if s.live && s.generation == h.generation => Ok((s.group as usize, s.row as usize)),
            _ => Err(StateError::StaleHandle { index: h.index, generation: h.generation }),
        }
    }

    /// The archetype and row (index into that archetype's columns and outputs) of a character.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn row_of(&self, handle: CharacterHandle) -> Result<(ArchetypeId, usize), StateError> {
        self.locate(handle).map(|(g, r)| (ArchetypeId(g as u32), r))
    }

    /// The character in `row` of an archetype (rows are what [`Crowd::programs`], the
    /// evaluators' outputs and [`Crowd::readback_rows`] are indexed by), or `None` past the last
    /// row. A renderer placing instance `i` with the GPU's matrices of row `i` asks here whose
    /// they are; rows change only when a character is despawned.
    #[must_use]
    pub fn handle_at(&self, id: ArchetypeId, row: usize) -> Option<CharacterHandle> {
        let index = *self.group(id).ok()?.slots.get(row)?;
        let slot = self.slots.get(index as usize)?;
        Some(CharacterHandle { index, generation: slot.generation, crowd: self.tag })
    }

    /// Steps only the characters of archetype `id` by `dt_s` seconds: [`Crowd::update`] for one
    /// archetype, for engines that step some crowds less often than others (distant ones every
    /// other frame, with twice the `dt_s`). Other archetypes' programs stay as their last update
    /// left them. Per-character evaluation rates ([`Crowd::set_update_rate`]) are the finer
    /// form of that, and keep states and events exact.
    ///
    /// # Errors
    /// [`StateError::BadDt`], [`StateError::UnknownArchetype`]; nothing is stepped.
    pub fn update_archetype(&mut self, id: ArchetypeId, dt_s: f32) -> Result<(), StateError> {
        if !(dt_s.is_finite() && dt_s >= 0.0) {
            return Err(StateError::BadDt(dt_s));
        }
        let group = self.groups.get_mut(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))?;
        group.update(dt_s, &self.slots, self.tag);
        Ok(())
    }

    /// Sets how often characters are evaluated (animation LOD, as Unreal's update-rate
    /// optimisation): a character at rate `r` (1, 2, 4, 8 or 16, [`UPDATE_RATES`]) is due for
    /// evaluation every `r`-th update, staggered by a phase taken from its handle so that an
    /// archetype's evaluation work per update is about `Σ 1/r` characters. Its state machine
    /// still steps every update: states, transitions, events and root motion stay exact. New
    /// characters are rate 1. A change takes effect at the next update, and never leaves a
    /// character unevaluated for longer than its new rate: after 4 → 1 it is due at once.
    /// All-or-nothing. See [`Crowd::due`] and `docs/lod.md`.
    ///
    /// # Errors
    /// [`StateError::LengthMismatch`], [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`StateError::BadUpdateRate`] naming the first character given a rate outside
    /// [`UPDATE_RATES`].
    pub fn set_update_rate(&mut self, handles: &[CharacterHandle], rates: &[u8]) -> Result<(), StateError> {
        if handles.len() != rates.len() {
            return Err(StateError::LengthMismatch { handles: handles.len(), values: rates.len() });
        }
        for (&h, &rate) in handles.iter().zip(rates) {
            self.locate(h)?;
            if !UPDATE_RATES.contains(&rate) {
                return Err(StateError::BadUpdateRate { index: h.index, rate });
            }
        }
        for (&h, &rate) in handles.iter().zip(rates) {
            let (g, row) = self.locate(h)?;
            self.groups[g].lod_rate[row] = rate;
        }
        Ok(())
    }

    /// A character's evaluation rate ([`Crowd::set_update_rate`]).
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn update_rate(&self, handle: CharacterHandle) -> Result<u8, StateError> {
        let (g, row) = self.locate(handle)?;
        Ok(self.groups[g].lod_rate[row])
    }

    /// The characters of an archetype due for evaluation after the last update (animation
    /// LOD): their rows ascending, and per row the seconds since it was last evaluated (the
    /// updates it skipped plus the last one). Pass it to `eval::frame::FrameJob::run_due` or
    /// `gpu::GpuCrowd::set_frame_due`: rows not listed are not evaluated and keep showing their
    /// last pose. A character that switched state on the update is listed whatever its rate (a
    /// switch is never deferred); one spawned since is listed with 0 s; with every rate 1, every
    /// row is listed with the update's `dt`. Spawns and despawns after the update keep the list
    /// true for the rows as they are now (it is rebuilt from per-row columns when next asked
    /// for, so a despawn costs no more than moving a row).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn due(&self, id: ArchetypeId) -> Result<DueRows<'_>, StateError> {
        let group = self.group(id)?;
        let list = group.due_list();
        Ok(DueRows { rows: &list.rows, dt_s: &list.dt_s })
    }

    /// Number of live characters of an archetype.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn num_characters(&self, id: ArchetypeId) -> Result<usize, StateError> {
        Ok(self.group(id)?.slots.len())
    }

    /// Resolves a parameter by name for the batch setters.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`], [`StateError::UnknownParameter`].
    pub fn param(&self, id: ArchetypeId, name: &str) -> Result<ParamId, StateError> {
        let graph = &self.group(id)?.arch.graph;
        let p = graph.parameter(name).ok_or_else(|| StateError::UnknownParameter(name.to_owned()))?;
        Ok(ParamId { slot: p.slot, graph: graph.id() })
    }

    /// Checks a whole batch, then writes it: all or nothing. `value(i)` is the i-th value.
    #[allow(clippy::too_many_arguments)]
    fn batch<T: Copy>(
        &mut self,
        param: ParamId,
        kind: ParamKind,
        handles: &[CharacterHandle],
        num_values: usize,
        value: impl Fn(usize) -> T,
        check: impl Fn(T) -> Option<f32>,
        mut write: impl FnMut(&mut Group, usize, T),
    ) -> Result<(), StateError> {
        let zone = crate::zone!("throng.params");
        zone.value(handles.len() as u64);
        if handles.len() != num_values {
            return Err(StateError::LengthMismatch { handles: handles.len(), values: num_values });
        }
        if param.slot.kind != kind {
            return Err(StateError::ParamKind { expected: kind.name(), got: param.slot.kind.name() });
        }
        for (at, &h) in handles.iter().enumerate() {
            let (g, _) = self.locate(h)?;
            if self.groups[g].arch.graph.id() != param.graph {
                return Err(StateError::WrongGraph { index: h.index });
            }
            if let Some(bad) = check(value(at)) {
                return Err(StateError::NonFiniteValue { at, value: bad });
            }
        }
        for (at, &h) in handles.iter().enumerate() {
            let (g, row) = self.locate(h)?;
            write(&mut self.groups[g], row, value(at));
        }
        Ok(())
    }

    /// Sets a FLOAT parameter for many characters. All-or-nothing.
    ///
    /// # Errors
    /// [`StateError::LengthMismatch`], [`StateError::ParamKind`], [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`StateError::WrongGraph`], [`StateError::NonFiniteValue`].
    pub fn set_float(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[f32]) -> Result<(), StateError> {
        let col = param.slot.column as usize;
        self.batch(param, ParamKind::Float, handles, values.len(), |i| values[i], |v| (!v.is_finite()).then_some(v), |g, row, v| {
            g.floats[col][row] = v;
        })
    }

    /// Sets an INTEGER parameter for many characters. All-or-nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_float`], without the finiteness check.
    pub fn set_int(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[i32]) -> Result<(), StateError> {
        let col = param.slot.column as usize;
        self.batch(param, ParamKind::Int, handles, values.len(), |i| values[i], |_| None, |g, row, v| g.ints[col][row] = v)
    }

    /// Sets a BOOLEAN parameter for many characters. All-or-nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn set_bool(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[bool]) -> Result<(), StateError> {
        let col = param.slot.column as usize;
        self.batch(param, ParamKind::Bool, handles, values.len(), |i| values[i], |_| None, |g, row, v| g.bools[col][row] = v)
    }

    /// Sets a TRIGGER for many characters. It stays set until a taken transition whose
    /// conditions name it consumes it; with `single_frame` it is also cleared at the end of
    /// the next update even if nothing used it.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn set_trigger(&mut self, param: ParamId, handles: &[CharacterHandle], single_frame: bool) -> Result<(), StateError> {
        let bit = 1u64 << (param.slot.column % 64);
        self.batch(param, ParamKind::Trigger, handles, handles.len(), |_| single_frame, |_| None, |g, row, single| {
            g.triggers[row] |= bit;
            if single {
                g.single_frame[row] |= bit;
            } else {
                g.single_frame[row] &= !bit;
            }
        })
    }

    /// Clears a TRIGGER for many characters.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn reset_trigger(&mut self, param: ParamId, handles: &[CharacterHandle]) -> Result<(), StateError> {
        let bit = 1u64 << (param.slot.column % 64);
        self.batch(param, ParamKind::Trigger, handles, handles.len(), |_| (), |_| None, |g, row, ()| {
            g.triggers[row] &= !bit;
            g.single_frame[row] &= !bit;
        })
    }

    /// Sets one parameter of one character: the single-character form of the batch setters.
    /// `ParamValue::Trigger(true)` sets a trigger (not single-frame), `Trigger(false)` resets it.
    ///
    /// # Errors
    /// As the batch setters; [`StateError::ParamKind`] when `value`'s type is not the parameter's.
    pub fn set(&mut self, param: ParamId, handle: CharacterHandle, value: ParamValue) -> Result<(), StateError> {
        match value {
            ParamValue::Float(v) => self.set_float(param, &[handle], &[v]),
            ParamValue::Int(v) => self.set_int(param, &[handle], &[v]),
            ParamValue::Bool(v) => self.set_bool(param, &[handle], &[v]),
            ParamValue::Trigger(true) => self.set_trigger(param, &[handle], false),
            ParamValue::Trigger(false) => self.reset_trigger(param, &[handle]),
        }
    }

    /// A parameter's value for one character.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::WrongGraph`].
    pub fn get(&self, param: ParamId, handle: CharacterHandle) -> Result<ParamValue, StateError> {
        let (g, row) = self.locate(handle)?;
        let group = &self.groups[g];
        if group.arch.graph.id() != param.graph {
            return Err(StateError::WrongGraph { index: handle.index });
        }
        let col = param.slot.column as usize;
        Ok(match param.slot.kind {
            ParamKind::Float => ParamValue::Float(group.floats[col][row]),
            ParamKind::Int => ParamValue::Int(group.ints[col][row]),
            ParamKind::Bool => ParamValue::Bool(group.bools[col][row]),
            ParamKind::Trigger => ParamValue::Trigger(group.triggers[row] >> (col % 64) & 1 == 1),
        })
    }

    fn column_group(&mut self, id: ArchetypeId, param: ParamId, kind: ParamKind) -> Result<&mut Group, StateError> {
        let group = self.groups.get_mut(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))?;
        if group.arch.graph.id() != param.graph {
            return Err(StateError::WrongGraph { index: u32::MAX });
        }
        if param.slot.kind != kind {
            return Err(StateError::ParamKind { expected: kind.name(), got: param.slot.kind.name() });
        }
        Ok(group)
    }

    /// A FLOAT parameter's column, indexed by row ([`Crowd::row_of`]), for direct writes.
    /// Values written here are not checked: the step reads a NaN as 0.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`], [`StateError::WrongGraph`], [`StateError::ParamKind`].
    pub fn float_column_mut(&mut self, id: ArchetypeId, param: ParamId) -> Result<&mut [f32], StateError> {
        let col = param.slot.column as usize;
        Ok(&mut self.column_group(id, param, ParamKind::Float)?.floats[col])
    }

    /// An INTEGER parameter's column, indexed by row, for direct writes.
    ///
    /// # Errors
    /// As [`Crowd::float_column_mut`].
    pub fn int_column_mut(&mut self, id: ArchetypeId, param: ParamId) -> Result<&mut [i32], StateError> {
        let col = param.slot.column as usize;
        Ok(&mut self.column_group(id, param, ParamKind::Int)?.ints[col])
    }

    /// A BOOLEAN parameter's column, indexed by row, for direct writes.
    ///
    /// # Errors
    /// As [`Crowd::float_column_mut`].
    pub fn bool_column_mut(&mut self, id: ArchetypeId, param: ParamId) -> Result<&mut [bool], StateError> {
        let col = param.slot.column as usize;
        Ok(&mut self.column_group(id, param, ParamKind::Bool)?.bools[col])
    }

    /// The trigger words of an archetype's characters (bit = trigger column), for direct writes.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn trigger_column_mut(&mut self, id: ArchetypeId) -> Result<&mut [u64], StateError> {
        let group = self.groups.get_mut(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))?;
        Ok(&mut group.triggers)
    }

    /// Steps every character of every archetype by `dt_s` seconds, in parallel.
    ///
    /// # Errors
    /// [`StateError::BadDt`] for a negative, NaN or infinite `dt_s`; nothing is stepped.
    pub fn update(&mut self, dt_s: f32) -> Result<(), StateError> {
        if !(dt_s.is_finite() && dt_s >= 0.0) {
            return Err(StateError::BadDt(dt_s));
        }
        let zone = crate::zone!("throng.state_step");
        zone.value(self.groups.iter().map(|g| g.triggers.len() as u64).sum());
        for group in &mut self.groups {
            group.update(dt_s, &self.slots, self.tag);
        }
        Ok(())
    }

    /// The animation events an archetype's characters fired in the last update, in row order
    /// (then layer; a layer's active state before its transition's source; each clip's events
    /// in the order they were first crossed). Refilled by every update.
    ///
    /// The rules (`docs/graph-format.md#animation-events`):
    /// - An event fires when a state's playback crosses its time: over the clip time the
    ///   state advanced this update, `(before, now]`. A looping clip fires it on every loop; a
    ///   step spanning several loops reports it once, with [`AnimationEvent::count`] the times
    ///   it was crossed (as Unreal fires a notify once per tick), so that no `dt` multiplies
    ///   events. A clip that does not loop fires it once, up to and including its end. The
    ///   first advance after a state is entered (or the character spawned) includes its
    ///   starting point, so an event at the entry time fires too.
    /// - One layer of one character reports at most [`MAX_EVENTS_PER_LAYER_UPDATE`] events per
    ///   update; the rest are dropped and counted ([`Crowd::events_dropped`]).
    /// - Each event carries its clip's weight in this update's pose: blend weight × its side's
    ///   share of a transition (crossfade and frozen: the eased weight; inertialization: the
    ///   destination 1, the source `1 − progress`) × the layer's weight (above the base layer).
    ///   A clip whose weight is 0 or below [`Archetype::event_weight_threshold`] fires nothing.
    /// - A transition's source keeps firing until the transition ends, in every switch mode
    ///   (a frozen fade's source is not sampled, but its clock runs for its events). On the
    ///   update a transition is taken, the state left fires what it played that update with
    ///   the weight the last pose showed it at.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::clip::ClipEvent;
    /// use throng::graph::CompiledGraph;
    /// use throng::state::{Archetype, ClipBinding, Crowd};
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Walk" }],
    ///     "transitions": [{ "from": "START", "to": "Walk" }] }] }"#)?);
    /// let walk = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 })])?
    ///     .with_clip_events(0, &[ClipEvent::new("footstep", 0.25), ClipEvent::new("footstep", 0.75)])?;
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(walk);
    /// crowd.spawn(kind)?;
    /// crowd.update(0.5)?;
    /// let footstep = crowd.archetype(kind)?.event_id("footstep");
    /// let steps = crowd.events(kind)?.iter().filter(|e| Some(e.event) == footstep).count();
    /// assert_eq!(steps, 1); // 0 → 0.5 s crosses 0.25 s
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn events(&self, id: ArchetypeId) -> Result<&[AnimationEvent], StateError> {
        Ok(&self.group(id)?.events)
    }

    /// Events the last update of an archetype did not report because a layer of a character
    /// had reported [`MAX_EVENTS_PER_LAYER_UPDATE`] already (0 unless its clips hold that many
    /// events).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn events_dropped(&self, id: ArchetypeId) -> Result<u64, StateError> {
        Ok(self.group(id)?.events_dropped)
    }

    /// An archetype's pose programs after the last update, `row * layers + layer`.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn programs(&self, id: ArchetypeId) -> Result<&[LayerProgram], StateError> {
        Ok(&self.group(id)?.programs)
    }

    /// An archetype's clip samples after the last update; programs index into it.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn samples(&self, id: ArchetypeId) -> Result<&[ClipSample], StateError> {
        Ok(&self.group(id)?.samples)
    }

    /// Bytes of CPU state one character of an archetype occupies: its layer columns,
    /// parameter columns, trigger words, slot bookkeeping and its pose programs and samples
    /// ([`memory_per_character`](Self::memory_per_character) says which is which).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn bytes_per_character(&self, id: ArchetypeId) -> Result<usize, StateError> {
        Ok(self.memory_per_character(id)?.total())
    }

    /// Bytes of CPU state one character of an archetype occupies, by what holds them.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn memory_per_character(&self, id: ArchetypeId) -> Result<CharacterBytes, StateError> {
        let group = self.group(id)?;
        let g = &group.arch.graph;
        let layers = g.layers().len();
        Ok(CharacterBytes {
            layer_state: layers * (3 * size_of::<u16>() + 6 * size_of::<f32>() + size_of::<u8>()),
            parameters: g.num_columns(ParamKind::Float) * size_of::<f32>()
                + g.num_columns(ParamKind::Int) * size_of::<i32>()
                + g.num_columns(ParamKind::Bool) * size_of::<bool>()
                + 2 * size_of::<u64>(),
            bookkeeping: size_of::<u32>() + size_of::<Slot>(),
            update_schedule: 3 * size_of::<u8>() + size_of::<bool>() + size_of::<f32>(),
            programs: layers * size_of::<LayerProgram>(),
            samples: group.arch.samples_per_character() * size_of::<ClipSample>(),
        })
    }

    /// Clips the last update asked the evaluators to sample for an archetype, over all its
    /// characters and layers: the cost that a crossfade doubles and inertialization does not.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn clips_sampled(&self, id: ArchetypeId) -> Result<usize, StateError> {
        Ok(self.group(id)?.programs.iter().map(|p| (p.num_target + p.num_source) as usize).sum())
    }

    /// Name of a graph state (path inside sub-machines).
    #[must_use]
    pub fn state_name(&self, id: ArchetypeId, state: usize) -> Option<&str> {
        self.group(id).ok()?.arch.graph.states().get(state).map(|s| s.name.as_str())
    }

    /// What one layer of every character of an archetype is doing, by row: the batch form of
    /// [`Crowd::readback`]. `out` is cleared and filled with one entry per row, `out[row]` (a
    /// vector kept across frames allocates nothing after the first).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`], [`StateError::UnknownLayer`]; `out` is left empty then.
    pub fn readback_rows(&self, id: ArchetypeId, layer: usize, out: &mut Vec<LayerReadback>) -> Result<(), StateError> {
        out.clear();
        let group = self.group(id)?;
        let layers = group.num_layers();
        if layer >= layers {
            return Err(StateError::UnknownLayer { layer, layers });
        }
        out.extend((0..group.slots.len()).map(|row| group.layer_readback(row * layers + layer)));
        Ok(())
    }

    /// What one layer of a character is doing.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::UnknownLayer`].
    pub fn readback(&self, handle: CharacterHandle, layer: usize) -> Result<LayerReadback, StateError> {
        let (g, row) = self.locate(handle)?;
        let group = &self.groups[g];
        let layers = group.num_layers();
        if layer >= layers {
            return Err(StateError::UnknownLayer { layer, layers });
        }
        Ok(group.layer_readback(row * layers + layer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_state_crowd() -> (Crowd, ArchetypeId) {
        let json = r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "Idle" }],
            "transitions": [{ "from": "START", "to": "Idle" }] }] }"#;
        let graph = Arc::new(CompiledGraph::from_json(json).expect("the graph loads"));
        let arch = Archetype::from_bindings(graph, &[("Idle", ClipBinding { clip: 0, duration_s: 1.0 })]).expect("the leaf binds");
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(arch);
        (crowd, kind)
    }

    #[test]
    fn a_slot_despawned_at_its_last_generation_retires_instead_of_wrapping() {
        let (mut crowd, kind) = one_state_crowd();
        let first = crowd.spawn(kind).unwrap();
        // Stand in for MAX_GENERATION − 1 despawns of the slot.
        crowd.slots[first.index as usize].generation = MAX_GENERATION - 1;
        let near = CharacterHandle { generation: MAX_GENERATION - 1, ..first };
        crowd.despawn(near).unwrap();
        let last = crowd.spawn(kind).unwrap();
        assert_eq!((last.index, last.generation), (first.index, MAX_GENERATION), "the slot is reused once more");
        assert_eq!(CharacterHandle::from_bits(last.to_bits()), last, "the last generation fits the handle's bits");
        crowd.despawn(last).unwrap();
        let next = crowd.spawn(kind).unwrap();
        assert_ne!(next.index, first.index, "the retired slot is not reused");
        for old in [first, near, last] {
            assert!(matches!(crowd.row_of(old), Err(StateError::StaleHandle { .. })), "{old:?} stays stale");
            assert!(matches!(crowd.despawn(old), Err(StateError::StaleHandle { .. })));
        }
        assert_eq!(crowd.num_characters(kind), Ok(1));
        assert_eq!(crowd.spawnable(), MAX_CHARACTER_SLOTS as usize - 2, "one slot live, one retired");
    }

    #[test]
    fn a_crowd_with_every_slot_used_refuses_a_spawn() {
        let (mut crowd, kind) = one_state_crowd();
        let h = crowd.spawn(kind).unwrap();
        crowd.despawn(h).unwrap();
        // Stand in for a crowd that has handed out every slot index: only the free one is left.
        crowd.slots.resize(MAX_CHARACTER_SLOTS as usize, Slot { generation: MAX_GENERATION, group: 0, row: 0, live: false });
        assert_eq!(crowd.spawnable(), 1);
        let again = crowd.spawn(kind).unwrap();
        assert_eq!(again.index, h.index);
        assert_eq!(crowd.spawn(kind), Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS }));
        assert_eq!(crowd.num_characters(kind), Ok(1), "the refused spawn added nobody");
    }
}
