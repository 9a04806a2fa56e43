//! Directing a crowd (`docs/state-machine.md#directing-a-crowd`): imperative transitions,
//! per-character time scales and start phases, batch calls beside the parameter setters.

use crate::graph::{
    Easing, Inertialization, Interruption, NO_INDEX, PhaseSync, Source, Span, SwitchMode, Target, Transition,
};

use super::columns::Group;
use super::{ArchetypeId, CharacterHandle, Crowd, MAX_CHARACTER_SLOTS, StateError};

/// Most distinct imperative transitions an archetype holds at once (pending or in flight):
/// commands that agree in every option share one entry, and entries nobody uses any more are
/// dropped when the table fills.
pub const MAX_COMMANDS: usize = 4096;

/// An imperative transition ([`Crowd::transition_to`]): what an authored transition to the
/// named state would say, given in the call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransitionCommand {
    /// Seconds, finite and ≥ 0; 0 is a cut.
    pub duration_s: f32,
    /// The switch mode; the graph's `defaultSwitch` when `None`.
    pub switch: Option<SwitchMode>,
    /// The weight's easing (crossfade and frozen); the graph's `defaultSwitch`'s when `None`.
    pub easing: Option<Easing>,
    /// Where the destination starts, a fraction of its duration in [0, 1] (`transitionOffset`).
    pub offset: f32,
    /// What may interrupt it while it runs: [`Interruption::None`] (as PlayCanvas's
    /// `layer.transition`) lets it finish before the graph's transitions are looked at again.
    pub interruption: Interruption,
    /// Where the destination starts from the source's position ([`PhaseSync::Offset`]: at
    /// `offset`), as an authored transition's `sync`.
    pub sync: PhaseSync,
}

impl TransitionCommand {
    /// A jump with no blend, for teleports and respawns.
    pub const CUT: Self = Self {
        duration_s: 0.0,
        switch: Some(SwitchMode::Cut),
        easing: None,
        offset: 0.0,
        interruption: Interruption::None,
        sync: PhaseSync::Offset,
    };

    /// A blend of `duration_s` seconds in the graph's default switch mode, from the start of
    /// the destination, not interruptible.
    #[must_use]
    pub const fn blend(duration_s: f32) -> Self {
        Self {
            duration_s,
            switch: None,
            easing: None,
            offset: 0.0,
            interruption: Interruption::None,
            sync: PhaseSync::Offset,
        }
    }

    /// What is wrong with the options, if anything.
    fn problem(&self) -> Option<&'static str> {
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0) {
            Some("duration_s is seconds, finite and ≥ 0")
        } else if !(0.0..=1.0).contains(&self.offset) {
            Some("offset is a fraction of the destination's duration in [0, 1]")
        } else if let Some(SwitchMode::Inertialize(Inertialization::Spring { halflife_s })) = self.switch
            && !(halflife_s.is_finite() && halflife_s >= 0.0)
        {
            Some("a spring's halflife_s is seconds, finite and ≥ 0")
        } else {
            None
        }
    }
}

impl Group {
    /// The index the step knows imperative transition `tr` by, adding it to the table if it
    /// is new (and, when the table is full, first dropping the entries no row uses).
    pub(super) fn intern_command(&mut self, tr: Transition) -> Result<u16, StateError> {
        let base = self.arch.graph.transitions().len();
        if let Some(k) = self.commands.iter().position(|c| *c == tr) {
            return Ok((base + k) as u16);
        }
        if self.commands.len() >= MAX_COMMANDS {
            self.drop_unused_commands();
        }
        if self.commands.len() >= MAX_COMMANDS {
            return Err(StateError::TooManyCommands { limit: MAX_COMMANDS });
        }
        self.commands.push(tr);
        // The graph holds at most `MAX_TRANSITIONS`, so the sum stays below `NO_INDEX`.
        Ok((base + self.commands.len() - 1) as u16)
    }

    /// Drops the imperative transitions no layer has pending or in flight, renumbering the rest.
    fn drop_unused_commands(&mut self) {
        let base = self.arch.graph.transitions().len();
        let mut used = vec![false; self.commands.len()];
        for &t in self.transition.iter().chain(&self.pending) {
            if t != NO_INDEX && t as usize >= base {
                used[t as usize - base] = true;
            }
        }
        let mut renumbered = vec![NO_INDEX; self.commands.len()];
        let mut kept = Vec::with_capacity(self.commands.len());
        for (k, command) in self.commands.drain(..).enumerate() {
            if used[k] {
                renumbered[k] = (base + kept.len()) as u16;
                kept.push(command);
            }
        }
        self.commands = kept;
        for t in self.transition.iter_mut().chain(self.pending.iter_mut()) {
            if *t != NO_INDEX && *t as usize >= base {
                *t = renumbered[*t as usize - base];
            }
        }
    }
}

/// Where the default states of a batch of new characters start ([`Crowd::spawn_phased`]), as a
/// fraction of each state's duration (every layer of a character starts at the same phase, so
/// its layers stay in step with one another).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StartPhases<'a> {
    /// One character per phase, each in `[0, 1)`, honoured exactly.
    Explicit(&'a [f32]),
    /// `count` characters at phases spread uniformly over `[0, 1)` by `seed`: the same seed
    /// gives the same phases, character `i` of the batch the `i`-th of the sequence.
    Spread {
        /// Characters to spawn.
        count: usize,
        /// The sequence's seed.
        seed: u64,
    },
}

impl StartPhases<'_> {
    /// Characters the batch spawns.
    #[must_use]
    pub fn count(&self) -> usize {
        match *self {
            Self::Explicit(phases) => phases.len(),
            Self::Spread { count, .. } => count,
        }
    }

    /// Phase `i` of the batch (`i < count()`).
    fn phase(&self, i: usize) -> f32 {
        match *self {
            Self::Explicit(phases) => phases[i],
            Self::Spread { seed, .. } => spread_phase(seed, i as u64),
        }
    }
}

/// Element `i` of the spread sequence of `seed`: SplitMix64 of the `i`-th step from the seed,
/// its top 24 bits over 2²⁴, so the phase is exactly representable and below 1.
fn spread_phase(seed: u64, i: u64) -> f32 {
    let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u32 << 24) as f32
}

impl Crowd {
    /// Moves layer `layer` of each character to the state named `state` (its path inside
    /// sub-machines) at the next update, through the transition `command` describes, exactly
    /// as if an authored transition had fired then: it interrupts a transition in flight
    /// without a pop (a crossfade's displayed pose is frozen and faded out, an inertialization
    /// re-captured), fires the events and shows in the readback as any switch does, and the
    /// graph's own transitions take over from the new state. Commanding the active state
    /// restarts it, as an authored self-transition does. A second command for a layer before
    /// the update replaces the first. All or nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::graph::CompiledGraph;
    /// use throng::state::{Archetype, ClipBinding, Crowd, TransitionCommand};
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Cheer" }],
    ///     "transitions": [{ "from": "START", "to": "Idle" }] }] }"#)?);
    /// let arch = Archetype::from_bindings(graph, &[
    ///     ("Idle", ClipBinding { clip: 0, duration_s: 2.0 }),
    ///     ("Cheer", ClipBinding { clip: 1, duration_s: 1.5 }),
    /// ])?;
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(arch);
    /// let fans = [crowd.spawn(kind)?, crowd.spawn(kind)?];
    /// crowd.transition_to(&fans, 0, "Cheer", TransitionCommand::blend(0.25))?;
    /// crowd.update(0.1)?;
    /// let layer = crowd.readback(fans[1], 0)?;
    /// assert_eq!(crowd.state_name(kind, layer.active_state), Some("Cheer"));
    /// assert!(layer.transitioning);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StateError::BadCommand`] for a duration, offset or halflife out of range;
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::UnknownLayer`],
    /// [`StateError::UnknownState`] for a character whose graph lacks the state in that layer;
    /// [`StateError::TooManyCommands`].
    pub fn transition_to(
        &mut self,
        handles: &[CharacterHandle],
        layer: usize,
        state: &str,
        command: TransitionCommand,
    ) -> Result<(), StateError> {
        if let Some(what) = command.problem() {
            return Err(StateError::BadCommand { what });
        }
        let mut targets = Vec::with_capacity(handles.len());
        for &h in handles {
            let (g, row) = self.locate(h)?;
            let graph = self.groups[g].arch.graph();
            let layers = graph.layers().len();
            if layer >= layers {
                return Err(StateError::UnknownLayer { layer, layers });
            }
            let to = graph
                .states()
                .iter()
                .position(|s| s.name == state && usize::from(s.layer) == layer)
                .ok_or_else(|| StateError::UnknownState { index: h.index, name: state.to_owned(), layer })?;
            targets.push((g, row, to));
        }
        // One table entry per archetype the batch touches.
        let mut entries: Vec<(usize, u16)> = Vec::new();
        for &(g, _, to) in &targets {
            if entries.iter().any(|&(seen, _)| seen == g) {
                continue;
            }
            let group = &mut self.groups[g];
            let graph = group.arch.graph();
            let (default_switch, default_easing) = graph.default_switch();
            let dest = &graph.states()[to];
            let tr = Transition {
                layer: dest.layer,
                machine: dest.machine,
                index: u32::MAX,
                from: Source::Any(dest.machine),
                to: Target::State(to as u16),
                self_transition: true,
                duration: command.duration_s,
                normalized: false,
                exit_time: 0.0,
                offset: command.offset,
                interruption: command.interruption,
                priority: 0.0,
                conditions: Span::default(),
                triggers: 0,
                groups: Span::default(),
                compares_parameters: false,
                switch: command.switch.unwrap_or(default_switch),
                easing: command.easing.unwrap_or(default_easing),
                sync: command.sync,
            };
            entries.push((g, group.intern_command(tr)?));
        }
        for (g, row, _) in targets {
            let group = &mut self.groups[g];
            let layers = group.num_layers();
            if let Some(&(_, t)) = entries.iter().find(|&&(seen, _)| seen == g) {
                group.pending[row * layers + layer] = t;
            }
        }
        Ok(())
    }

    /// Moves a layer of each character to `state` at the next update with no blend (a cut),
    /// for teleports and respawns: [`Crowd::transition_to`] with [`TransitionCommand::CUT`].
    ///
    /// # Errors
    /// As [`Crowd::transition_to`].
    pub fn cut_to(&mut self, handles: &[CharacterHandle], layer: usize, state: &str) -> Result<(), StateError> {
        self.transition_to(handles, layer, state, TransitionCommand::CUT)
    }

    /// Adds characters as [`Crowd::spawn`] does, each layer's default state started at a phase
    /// of its own rather than at 0, so that a crowd spawned at once does not move in lockstep:
    /// explicit phases, or phases spread by a seed. The first update fires the events from that
    /// phase on (the starting point included). All or nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::graph::CompiledGraph;
    /// use throng::state::{Archetype, ClipBinding, Crowd, StartPhases};
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Walk" }],
    ///     "transitions": [{ "from": "START", "to": "Walk" }] }] }"#)?);
    /// let walk = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 })])?;
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(walk);
    /// let pair = crowd.spawn_phased(kind, StartPhases::Explicit(&[0.0, 0.5]))?;
    /// assert_eq!(crowd.readback(pair[1], 0)?.phase, 0.5);
    /// let many = crowd.spawn_phased(kind, StartPhases::Spread { count: 100, seed: 7 })?;
    /// assert_eq!(many.len(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`]; [`StateError::BadStartPhase`] for an explicit phase
    /// outside `[0, 1)`; [`StateError::CrowdFull`] when the batch does not fit. Nothing is
    /// spawned then.
    pub fn spawn_phased(
        &mut self,
        id: ArchetypeId,
        phases: StartPhases<'_>,
    ) -> Result<Vec<CharacterHandle>, StateError> {
        self.group(id)?;
        if let StartPhases::Explicit(list) = phases
            && let Some((at, &value)) = list.iter().enumerate().find(|(_, p)| !(0.0..1.0).contains(*p))
        {
            return Err(StateError::BadStartPhase { at, value });
        }
        if phases.count() > self.spawnable() {
            return Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS });
        }
        (0..phases.count()).map(|i| self.spawn_at_phase(id, phases.phase(i))).collect()
    }

    /// Sets characters' time scales: `scales[i]` multiplies `dt` for `handles[i]` from the next
    /// update on — its clocks, transitions, exit times and events, and the seconds its evaluation
    /// is given ([`Crowd::due`]), so that its inertializations decay in its own time. 1 is real
    /// time (a new character's), 0.5 half speed, 0 pauses: the pose holds, and an
    /// inertialization taken while paused captures zero velocity. All or nothing.
    ///
    /// # Errors
    /// [`StateError::LengthMismatch`], [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`StateError::BadTimeScale`] for a negative, NaN or infinite scale.
    pub fn set_time_scale(&mut self, handles: &[CharacterHandle], scales: &[f32]) -> Result<(), StateError> {
        if handles.len() != scales.len() {
            return Err(StateError::LengthMismatch { handles: handles.len(), values: scales.len() });
        }
        for (at, (&h, &value)) in handles.iter().zip(scales).enumerate() {
            self.locate(h)?;
            if !(value.is_finite() && value >= 0.0) {
                return Err(StateError::BadTimeScale { at, value });
            }
        }
        for (&h, &scale) in handles.iter().zip(scales) {
            let (g, row) = self.locate(h)?;
            self.groups[g].time_scale[row] = scale;
        }
        Ok(())
    }

    /// A character's time scale ([`Crowd::set_time_scale`]).
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn time_scale(&self, handle: CharacterHandle) -> Result<f32, StateError> {
        let (g, row) = self.locate(handle)?;
        Ok(self.groups[g].time_scale[row])
    }
}

#[cfg(test)]
mod tests {
    use super::spread_phase;

    #[test]
    fn spread_phases_lie_in_the_unit_interval_and_follow_the_seed() {
        let a: Vec<f32> = (0..1000).map(|i| spread_phase(42, i)).collect();
        assert!(a.iter().all(|p| (0.0..1.0).contains(p)), "every phase in [0, 1)");
        assert_eq!(a, (0..1000).map(|i| spread_phase(42, i)).collect::<Vec<_>>(), "the same seed, the same phases");
        assert_ne!(a, (0..1000).map(|i| spread_phase(43, i)).collect::<Vec<_>>(), "another seed, other phases");
    }
}
