//! Archetypes: a compiled graph with a clip bound to each leaf, and the animation events its clips carry.

use std::sync::Arc;

use crate::blend_space::BlendTrees;
use crate::clip::{Clip, ClipEvent, first_bad_event};
use crate::graph::CompiledGraph;
use crate::program::{ExpandLeaf, ExpandState, ExpandTables};

use super::step;
use super::{CharacterHandle, StateError};
// Only named in docs.
#[cfg(doc)]
use super::Crowd;
#[cfg(doc)]
use crate::program::ClipSample;

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
    pub(super) graph: Arc<CompiledGraph>,
    pub(super) leaf_clip: Vec<u32>,
    pub(super) leaf_duration_s: Vec<f32>,
    /// `speed / duration` per leaf: progress per second at weight 1.
    pub(super) leaf_rate: Vec<f32>,
    /// Longest `duration / speed` of each state's leaves: an unsynced state's cycle.
    pub(super) state_longest_s: Vec<f32>,
    pub(super) state_unsynced_rate: Vec<f32>,
    pub(super) samples_per_character: u32,
    /// Animation events as given, per clip index (sorted by time); the source of the leaf tables.
    pub(super) clip_events: Vec<Vec<(f32, EventId)>>,
    /// Per leaf: its clip's events, a range of `event_time_s` / `event_id` sorted by time, and
    /// what turns its state's progress into clip seconds.
    pub(super) leaf_events: Vec<step::LeafEvents>,
    pub(super) event_time_s: Vec<f32>,
    pub(super) event_id: Vec<EventId>,
    /// Event names, indexed by [`EventId`].
    pub(super) event_names: Vec<String>,
    pub(super) event_weight_threshold: f32,
    /// Per clip of the table, its duration in seconds when one-shots may play it
    /// ([`Archetype::with_clip_durations`]); 0 (or past the end) when they may not.
    pub(super) clip_duration_s: Vec<f32>,
    /// Sync markers per clip index, sorted by time, as (time, index into `marker_names`).
    pub(super) clip_markers: Vec<Vec<(f32, u32)>>,
    /// Sync marker names.
    pub(super) marker_names: Vec<String>,
    /// What expands the state step's records into programs and samples: the graph's blend
    /// trees and the archetype's leaves, clocks and sample slots (built once).
    pub(super) expansion: Arc<(ExpandTables, BlendTrees)>,
}

impl Archetype {
    /// Binds every leaf with `bind`, which gets each leaf's path (`"State"`, `"State.Child"`).
    ///
    /// # Errors
    /// [`StateError::UnboundLeaf`] when `bind` returns `None`, [`StateError::BadClipDuration`].
    pub fn new(
        graph: Arc<CompiledGraph>,
        mut bind: impl FnMut(&str) -> Option<ClipBinding>,
    ) -> Result<Self, StateError> {
        let mut bindings = Vec::with_capacity(graph.leaves().len());
        for leaf in graph.leaves() {
            let b = bind(&leaf.path).ok_or_else(|| StateError::UnboundLeaf { path: leaf.path.clone() })?;
            if !(b.duration_s.is_finite() && b.duration_s > 0.0) {
                return Err(StateError::BadClipDuration { path: leaf.path.clone(), duration_s: b.duration_s });
            }
            bindings.push(b);
        }
        let leaf_rate: Vec<f32> = graph.leaves().iter().zip(&bindings).map(|(l, b)| l.speed / b.duration_s).collect();
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
            samples_per_character += layer_sample_count(layer);
        }
        let trees = graph.blend_trees().map_err(|e| StateError::BlendTrees(e.to_string()))?;
        let leaf_clip: Vec<u32> = bindings.iter().map(|b| b.clip).collect();
        let leaf_duration_s: Vec<f32> = bindings.iter().map(|b| b.duration_s).collect();
        let mut states = Vec::with_capacity(graph.states().len());
        let mut leaves = vec![ExpandLeaf::default(); graph.leaves().len()];
        for (s, st) in graph.states().iter().enumerate() {
            let flags = if st.sync { ExpandTables::SYNC } else { 0 }
                | if st.looping { ExpandTables::LOOPING } else { 0 }
                | if st.speed < 0.0 { ExpandTables::REVERSE } else { 0 };
            states.push(ExpandState { first_leaf: st.leaves.start, num_leaves: st.leaves.len() as u32, flags });
            for leaf in st.leaves.range() {
                let d = leaf_duration_s[leaf];
                let seconds_per_progress = if st.sync { d } else { state_longest_s[s] * graph.leaves()[leaf].speed };
                leaves[leaf] = ExpandLeaf::new(leaf_clip[leaf], d, seconds_per_progress);
            }
        }
        let layer_slots = graph
            .layers()
            .iter()
            .zip(&layer_sample_offset)
            .map(|(layer, &first)| (first, layer_sample_count(layer)))
            .collect();
        let tables = ExpandTables::new(states, leaves, layer_slots, samples_per_character);
        Ok(Self {
            expansion: Arc::new((tables, trees)),
            leaf_clip,
            leaf_duration_s,
            leaf_rate,
            state_longest_s,
            state_unsynced_rate,
            samples_per_character,
            clip_events: Vec::new(),
            leaf_events: vec![step::LeafEvents::default(); graph.leaves().len()],
            event_time_s: Vec::new(),
            event_id: Vec::new(),
            event_names: Vec::new(),
            event_weight_threshold: 0.0,
            clip_duration_s: Vec::new(),
            clip_markers: Vec::new(),
            marker_names: Vec::new(),
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

    /// What expands the state step's records ([`crate::program::LayerRecord`]) into pose
    /// programs and samples: the archetype's tables and the graph's blend trees, whose inputs
    /// are [`CompiledGraph::blend_inputs`].
    #[must_use]
    pub fn expansion(&self) -> (&ExpandTables, &BlendTrees) {
        (&self.expansion.0, &self.expansion.1)
    }

    /// Sample slots each character reserves: twice the largest state of each layer, and one
    /// more per slot.
    #[must_use]
    pub fn samples_per_character(&self) -> usize {
        self.samples_per_character as usize
    }

    /// The archetype with the durations of its whole clip table, one per clip index as in
    /// [`ClipBinding::clip`], so that one-shots may play any clip of it
    /// ([`Crowd::play_one_shot`]) and events may be given for clips no leaf plays. A duration
    /// of 0 leaves that clip out. [`crate::setup::bind_archetype`] gives every clip's.
    ///
    /// # Errors
    /// [`StateError::BadClipDuration`] (its `path` `"clip N"`) for a duration that is negative
    /// or not finite. The archetype is unchanged on error.
    pub fn with_clip_durations(mut self, durations_s: &[f32]) -> Result<Self, StateError> {
        if let Some((i, &d)) = durations_s.iter().enumerate().find(|(_, d)| !(d.is_finite() && **d >= 0.0)) {
            return Err(StateError::BadClipDuration { path: format!("clip {i}"), duration_s: d });
        }
        self.clip_duration_s = durations_s.to_vec();
        Ok(self)
    }

    /// The duration of clip `clip` when one-shots may play it ([`Archetype::with_clip_durations`]).
    #[must_use]
    pub fn one_shot_duration_s(&self, clip: u32) -> Option<f32> {
        self.clip_duration_s.get(clip as usize).copied().filter(|&d| d > 0.0)
    }

    /// The archetype with `events` on clip `clip` (an index of its clip table, as in
    /// [`ClipBinding::clip`]) in place of any given before. Every leaf bound to the clip fires
    /// them, and so does a one-shot playing it (see [`Crowd::events`]); names shared by several
    /// clips share one [`EventId`].
    ///
    /// # Errors
    /// [`StateError::UnboundEventClip`] when no leaf plays `clip` and one-shots may not either;
    /// [`StateError::BadEvent`] for an empty name, or a time that is not finite or lies outside
    /// `[0, duration]` of a leaf bound to the clip or of the clip's one-shot duration. The
    /// archetype is unchanged on error.
    pub fn with_clip_events(mut self, clip: u32, events: &[ClipEvent]) -> Result<Self, StateError> {
        if let Some(duration_s) = self.one_shot_duration_s(clip)
            && let Some(bad) = first_bad_event(events, duration_s)
        {
            return Err(bad_event(clip, events, bad, format!("clip {clip} (one-shots)"), duration_s));
        }
        if !(self.check_leaf_moments(clip, events)? || self.one_shot_duration_s(clip).is_some()) {
            return Err(StateError::UnboundEventClip { clip });
        }
        let mut list: Vec<(f32, EventId)> =
            events.iter().map(|e| (e.time_s, EventId(intern(&mut self.event_names, &e.name)))).collect();
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
            self.leaf_events[leaf] = step::LeafEvents::new(
                start..self.event_time_s.len() as u32,
                self.leaf_duration_s[leaf],
                step::seconds_per_progress(&self, state, leaf),
            );
        }
        Ok(self)
    }

    /// Checks `moments` (events or markers) against every leaf bound to `clip`: names not empty,
    /// times finite and within the leaf's duration ([`StateError::BadEvent`], naming the leaf).
    /// Returns whether any leaf plays the clip.
    fn check_leaf_moments(&self, clip: u32, moments: &[ClipEvent]) -> Result<bool, StateError> {
        let mut bound = false;
        for (leaf, (&c, &duration_s)) in self.leaf_clip.iter().zip(&self.leaf_duration_s).enumerate() {
            if c != clip {
                continue;
            }
            bound = true;
            if let Some(bad) = first_bad_event(moments, duration_s) {
                let path = self.graph.leaves().get(leaf).map(|l| l.path.clone()).unwrap_or_default();
                return Err(bad_event(clip, moments, bad, path, duration_s));
            }
        }
        Ok(bound)
    }

    /// The archetype with sync `markers` (left and right foot down…) on clip `clip` (an index
    /// of its clip table) in place of any given before: transitions that sync by marker
    /// (`"sync": "marker"`) line their destination up with their source by them
    /// (`docs/state-machine.md#sync`). Markers of one name on different clips match.
    ///
    /// # Errors
    /// [`StateError::BadEvent`] for an empty name, or a time that is not finite or lies outside
    /// `[0, duration]` of a leaf bound to the clip; [`StateError::UnboundEventClip`] when no
    /// leaf plays the clip. The archetype is unchanged on error.
    pub fn with_clip_markers(mut self, clip: u32, markers: &[ClipEvent]) -> Result<Self, StateError> {
        if !self.check_leaf_moments(clip, markers)? {
            return Err(StateError::UnboundEventClip { clip });
        }
        let mut list: Vec<(f32, u32)> =
            markers.iter().map(|m| (m.time_s, intern(&mut self.marker_names, &m.name))).collect();
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        if self.clip_markers.len() <= clip as usize {
            self.clip_markers.resize_with(clip as usize + 1, Vec::new);
        }
        self.clip_markers[clip as usize] = list;
        Ok(self)
    }

    /// The archetype with each bound clip's [`Clip::markers`] (as imported from glTF), `clips`
    /// being its clip table; clips no leaf plays are skipped.
    ///
    /// # Errors
    /// As [`Archetype::with_clip_markers`].
    pub fn with_markers_from_clips(mut self, clips: &[Clip]) -> Result<Self, StateError> {
        for (index, clip) in clips.iter().enumerate() {
            if !clip.markers().is_empty() && self.leaf_clip.contains(&(index as u32)) {
                self = self.with_clip_markers(index as u32, clip.markers())?;
            }
        }
        Ok(self)
    }

    /// Clip `clip`'s sync markers, sorted by time, as (time, marker id).
    pub(super) fn markers_of_clip(&self, clip: u32) -> &[(f32, u32)] {
        self.clip_markers.get(clip as usize).map_or(&[], Vec::as_slice)
    }

    /// The archetype with each bound clip's [`Clip::events`] (as imported from glTF), `clips`
    /// being its clip table (indexed by [`ClipBinding::clip`]). Clips neither a leaf nor a
    /// one-shot can play, and clips without events, are skipped.
    ///
    /// # Errors
    /// As [`Archetype::with_clip_events`].
    pub fn with_events_from_clips(mut self, clips: &[Clip]) -> Result<Self, StateError> {
        for (index, clip) in clips.iter().enumerate() {
            let playable = self.leaf_clip.contains(&(index as u32)) || self.one_shot_duration_s(index as u32).is_some();
            if !clip.events().is_empty() && playable {
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

    /// Clip `clip`'s events as given, sorted by time (none when it has none).
    pub(super) fn events_of_clip(&self, clip: u32) -> &[(f32, EventId)] {
        self.clip_events.get(clip as usize).map_or(&[], Vec::as_slice)
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

impl AnimationEvent {
    /// [`AnimationEvent::state`] of an event a one-shot fired: no graph state played it.
    pub const ONE_SHOT: u32 = u32::MAX;
}

/// Sample slots a layer reserves per character: twice its largest state, one more on a slot.
fn layer_sample_count(layer: &crate::graph::Layer) -> u32 {
    2 * layer.max_leaves + u32::from(layer.slot)
}

/// An event name of one archetype: an index into [`Archetype::event_names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub(super) u32);

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
    /// The graph state that played it (an index into the graph's states), or
    /// [`AnimationEvent::ONE_SHOT`] for a one-shot's clip ([`Crowd::play_one_shot`]).
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

/// [`StateError::BadEvent`] for `moments[index]` on `clip`, found wrong (`what`) against the
/// `duration_s` of the leaf or one-shot at `path`.
fn bad_event(
    clip: u32,
    moments: &[ClipEvent],
    (index, what): (usize, &'static str),
    path: String,
    duration_s: f32,
) -> StateError {
    let e = &moments[index];
    StateError::BadEvent { clip, index, name: e.name.clone(), time_s: e.time_s, path, duration_s, what }
}

/// `name`'s index in `names`, appended when new.
fn intern(names: &mut Vec<String>, name: &str) -> u32 {
    let index = names.iter().position(|n| n == name).unwrap_or_else(|| {
        names.push(name.to_owned());
        names.len() - 1
    });
    index as u32
}
