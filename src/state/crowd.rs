//! The crowd: every character of every archetype, stable handles, batched parameters, and the update.

use crate::graph::format::ChainRef;
use crate::graph::{ChainWeightSource, ParamKind, ParamValue};
use crate::program::{
    ChainPart, ChainWeightBinding, ChainWeightInput, ClipSample, LayerProgram, LayerRecord, RecordChanges, RecordClock,
    RecordFrame, ShotRecord,
};

use super::columns::Group;
use super::handle::next_crowd_tag;
use super::{
    AnimationEvent, Archetype, ArchetypeId, CharacterHandle, MAX_CHARACTER_SLOTS, MAX_GENERATION, ParamId, StateError,
};
// Only named in docs.
#[cfg(doc)]
use super::MAX_EVENTS_PER_LAYER_UPDATE;

/// Bytes of CPU state per character of an archetype, by what holds them
/// ([`Crowd::memory_per_character`]); the evaluators' memory comes on top
/// (`eval::frame_layers::EvalContext::bytes_per_character`, `gpu::GpuCrowd::memory_bytes_per_character`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CharacterBytes {
    /// Per layer: active, previous, transition and pending imperative transition indices,
    /// clocks, flags.
    pub layer_state: usize,
    /// Parameter columns (float, int, bool) and the two trigger words (set, single-frame).
    pub parameters: usize,
    /// The handle's slot and generation.
    pub bookkeeping: usize,
    /// Animation LOD's schedule ([`Crowd::set_update_rate`]): rate, phase, frames skipped, the
    /// due flag and the seconds since the last evaluation; and the time scale
    /// ([`Crowd::set_time_scale`]).
    pub update_schedule: usize,
    /// One [`LayerRecord`] and one [`ShotRecord`] per layer, rewritten every update, the blend
    /// inputs ([`Crowd::blend_inputs`]), and when each last changed ([`Crowd::record_frame`]).
    pub records: usize,
    /// One [`LayerProgram`] per layer, expanded from the records when asked for
    /// ([`Crowd::programs`]).
    pub programs: usize,
    /// The [`ClipSample`]s reserved per character (twice the most leaves of any state, per
    /// layer), expanded with the programs.
    pub samples: usize,
}

impl CharacterBytes {
    /// Every part together.
    #[must_use]
    pub fn total(&self) -> usize {
        self.layer_state
            + self.parameters
            + self.bookkeeping
            + self.update_schedule
            + self.records
            + self.programs
            + self.samples
    }
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
pub(super) struct Slot {
    pub(super) generation: u32,
    pub(super) group: u32,
    pub(super) row: u32,
    pub(super) live: bool,
}

/// Every character of every archetype, with stable handles.
#[derive(Debug)]
pub struct Crowd {
    pub(super) groups: Vec<Group>,
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

    pub(super) fn group(&self, id: ArchetypeId) -> Result<&Group, StateError> {
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
        self.spawn_at_phase(id, 0.0)
    }

    /// [`Crowd::spawn`] with every layer's default state `phase` (in [0, 1), checked by the
    /// caller) into its clock.
    pub(super) fn spawn_at_phase(&mut self, id: ArchetypeId, phase: f32) -> Result<CharacterHandle, StateError> {
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
        group.push(index, phase);
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
    /// `eval::frame_layers::EvalContext`, follows with its own `swap_remove(row)`.
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

    pub(super) fn locate(&self, h: CharacterHandle) -> Result<(usize, usize), StateError> {
        if h.crowd != self.tag {
            return Err(StateError::ForeignHandle {
                index: h.index,
                generation: h.generation,
                handle_crowd: h.crowd,
                crowd: self.tag,
            });
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

    /// Number of live characters of an archetype.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn num_characters(&self, id: ArchetypeId) -> Result<usize, StateError> {
        Ok(self.group(id)?.slots.len())
    }

    /// The procedural chain weights archetype `id`'s graph binds (`chainWeights`), each with
    /// its input in this crowd: a FLOAT parameter's column (one value per row), or a curve by
    /// name and the layer whose pose weights blend it. `eval::procedural::ChainWeightsJob`
    /// writes them into the archetype's procedural targets before each frame's stage.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn chain_weight_bindings(&self, id: ArchetypeId) -> Result<Vec<ChainWeightBinding<'_>>, StateError> {
        let group = self.group(id)?;
        Ok(group
            .arch
            .graph
            .chain_weights()
            .iter()
            .map(|w| ChainWeightBinding {
                part: match w.chain {
                    ChainRef::LookAt(i) => ChainPart::LookAt(usize::from(i)),
                    ChainRef::TwoBone(i) => ChainPart::TwoBone(usize::from(i)),
                    ChainRef::Ground => ChainPart::Ground,
                },
                input: match &w.source {
                    ChainWeightSource::Parameter(slot) => {
                        ChainWeightInput::Parameter(&group.floats[usize::from(slot.column)])
                    }
                    ChainWeightSource::Curve { curve, layer } => {
                        ChainWeightInput::Curve { name: curve, layer: usize::from(*layer) }
                    }
                },
            })
            .collect())
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
        self.batch(
            param,
            ParamKind::Float,
            handles,
            values.len(),
            |i| values[i],
            |v| (!v.is_finite()).then_some(v),
            |g, row, v| {
                g.floats[col][row] = v;
            },
        )
    }

    /// Sets an INTEGER parameter for many characters. All-or-nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_float`], without the finiteness check.
    pub fn set_int(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[i32]) -> Result<(), StateError> {
        let col = param.slot.column as usize;
        self.batch(
            param,
            ParamKind::Int,
            handles,
            values.len(),
            |i| values[i],
            |_| None,
            |g, row, v| g.ints[col][row] = v,
        )
    }

    /// Sets a BOOLEAN parameter for many characters. All-or-nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn set_bool(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[bool]) -> Result<(), StateError> {
        let col = param.slot.column as usize;
        self.batch(
            param,
            ParamKind::Bool,
            handles,
            values.len(),
            |i| values[i],
            |_| None,
            |g, row, v| g.bools[col][row] = v,
        )
    }

    /// Sets a TRIGGER for many characters. It stays set until a taken transition whose
    /// conditions name it consumes it; with `single_frame` it is also cleared at the end of
    /// the next update even if nothing used it.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn set_trigger(
        &mut self,
        param: ParamId,
        handles: &[CharacterHandle],
        single_frame: bool,
    ) -> Result<(), StateError> {
        let bit = 1u64 << (param.slot.column % 64);
        self.batch(
            param,
            ParamKind::Trigger,
            handles,
            handles.len(),
            |_| single_frame,
            |_| None,
            |g, row, single| {
                g.triggers[row] |= bit;
                if single {
                    g.single_frame[row] |= bit;
                } else {
                    g.single_frame[row] &= !bit;
                }
            },
        )
    }

    /// Clears a TRIGGER for many characters.
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn reset_trigger(&mut self, param: ParamId, handles: &[CharacterHandle]) -> Result<(), StateError> {
        let bit = 1u64 << (param.slot.column % 64);
        self.batch(
            param,
            ParamKind::Trigger,
            handles,
            handles.len(),
            |_| (),
            |_| None,
            |g, row, ()| {
                g.triggers[row] &= !bit;
                g.single_frame[row] &= !bit;
            },
        )
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

    /// An archetype's state records after the last update, `row * layers + layer`: what the
    /// state step writes, and what both evaluators expand into pose programs and samples
    /// (`eval::expand`, `gpu::GpuCrowd::set_frame_records`) with
    /// [`blend_inputs`](Self::blend_inputs) and [`Archetype::expansion`].
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn records(&self, id: ArchetypeId) -> Result<&[LayerRecord], StateError> {
        Ok(&self.group(id)?.records)
    }

    /// An archetype's one-shot records after the last update, one per record
    /// ([`records`](Self::records)): a one-shot's clip, time and shares, read where the record's
    /// `SHOT_*` sets say so.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn shots(&self, id: ArchetypeId) -> Result<&[ShotRecord], StateError> {
        Ok(&self.group(id)?.shots)
    }

    /// Everything an evaluator expands of archetype `id` after the last update, in one bundle:
    /// its [`records`](Self::records), [`shots`](Self::shots),
    /// [`blend_inputs`](Self::blend_inputs) and [`record_clock`](Self::record_clock), with when
    /// each record and each character's inputs last changed, so that
    /// `gpu::GpuCrowd::set_frame_records` sends only what changed since its last upload.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn record_frame(&self, id: ArchetypeId) -> Result<RecordFrame<'_>, StateError> {
        let group = self.group(id)?;
        let changes = RecordChanges {
            source: (self.tag, id.0),
            version: group.version,
            record_stamps: &group.record_stamps,
            input_stamps: &group.input_stamps,
        };
        Ok(RecordFrame::new(&group.records, &group.shots, &group.inputs, group.record_clock()).with_changes(changes))
    }

    /// The clock an archetype's records are anchored against after the last update: the update's
    /// index and the seconds since each of the last `program::CLOCK_SLOTS` updates. Pass it with
    /// the records to either evaluator's expansion.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn record_clock(&self, id: ArchetypeId) -> Result<RecordClock, StateError> {
        Ok(self.group(id)?.record_clock())
    }

    /// An archetype's blend inputs after the last update: per character (row), the values of
    /// the parameters its graph's blend trees read (`CompiledGraph::blend_inputs`), canonical,
    /// as the update read them.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn blend_inputs(&self, id: ArchetypeId) -> Result<&[f32], StateError> {
        Ok(&self.group(id)?.inputs)
    }

    /// An archetype's pose programs after the last update, `row * layers + layer`: its records
    /// expanded ([`crate::program::expand_character`]), once per update, when first asked for.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn programs(&self, id: ArchetypeId) -> Result<&[LayerProgram], StateError> {
        Ok(&self.group(id)?.expanded().programs)
    }

    /// An archetype's clip samples after the last update; programs index into it. Expanded
    /// with [`programs`](Self::programs).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn samples(&self, id: ArchetypeId) -> Result<&[ClipSample], StateError> {
        Ok(&self.group(id)?.expanded().samples)
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
            layer_state: layers * (4 * size_of::<u16>() + 6 * size_of::<f32>() + size_of::<u8>()),
            parameters: g.num_columns(ParamKind::Float) * size_of::<f32>()
                + g.num_columns(ParamKind::Int) * size_of::<i32>()
                + g.num_columns(ParamKind::Bool) * size_of::<bool>()
                + 2 * size_of::<u64>(),
            bookkeeping: size_of::<u32>() + size_of::<Slot>(),
            update_schedule: 3 * size_of::<u8>() + size_of::<bool>() + 2 * size_of::<f32>(),
            records: layers * (size_of::<LayerRecord>() + size_of::<ShotRecord>() + size_of::<u32>())
                + group.blend_slots.len() * size_of::<f32>()
                + size_of::<u32>(),
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
        Ok(self.group(id)?.expanded().programs.iter().map(|p| (p.num_target + p.num_secondary) as usize).sum())
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
    use std::sync::Arc;

    use super::*;
    use crate::graph::CompiledGraph;
    use crate::state::ClipBinding;

    /// Every graph's layers make a stack the evaluators accept: the graph's limit is the
    /// stack's.
    #[test]
    fn a_graphs_most_layers_are_a_stacks_most() {
        assert_eq!(crate::graph::MAX_LAYERS, crate::program::MAX_LAYERS);
    }

    fn one_state_crowd() -> (Crowd, ArchetypeId) {
        let json = r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "Idle" }],
            "transitions": [{ "from": "START", "to": "Idle" }] }] }"#;
        let graph = Arc::new(CompiledGraph::from_json(json).expect("the graph loads"));
        let arch = Archetype::from_bindings(graph, &[("Idle", ClipBinding { clip: 0, duration_s: 1.0 })])
            .expect("the leaf binds");
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
        crowd
            .slots
            .resize(MAX_CHARACTER_SLOTS as usize, Slot { generation: MAX_GENERATION, group: 0, row: 0, live: false });
        assert_eq!(crowd.spawnable(), 1);
        let again = crowd.spawn(kind).unwrap();
        assert_eq!(again.index, h.index);
        assert_eq!(crowd.spawn(kind), Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS }));
        assert_eq!(crowd.num_characters(kind), Ok(1), "the refused spawn added nobody");
    }
}
