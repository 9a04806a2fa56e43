//! Replacing an archetype's graph under running characters with an edit of its transition
//! timings (`graph::CompiledGraph::with_transition_timing`): a live editor's blend times,
//! switch modes and easings.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::graph::{CompiledGraph, NO_INDEX};

use super::{ArchetypeId, Crowd, MAX_COMMANDS, StateError};

impl Crowd {
    /// Gives archetype `id` the graph `graph`, which must differ from its own in transition
    /// timings alone ([`CompiledGraph::shape_difference`]); the other archetypes keep theirs.
    ///
    /// `graph` takes the archetype's graph identity, so parameter ids resolved before stay
    /// valid. Characters keep their states, clocks and parameters. A transition in flight runs
    /// to its end with the timing it was taken with (a copy of it joins the archetype's
    /// imperative transitions, see [`Crowd::transition_to`]), so nobody's pose jumps; the
    /// transitions taken from the next update on use the new timings.
    ///
    /// The evaluators' layer setups (`setup::layer_setups`) read switch modes: a layer whose
    /// transitions were all cuts keeps no memory, so when an edit gives one of its transitions
    /// a blend, build the setups again from the new graph.
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`]; [`StateError::IncompatibleGraph`] when the graphs
    /// differ in more than timings; [`StateError::TooManyCommands`] when the transitions in
    /// flight whose timing changes do not fit the imperative transitions' table. Nothing
    /// changes on error.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::graph::{CompiledGraph, Easing, TransitionTiming};
    /// use throng::state::{Archetype, ClipBinding, Crowd};
    ///
    /// let graph = CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
    ///     "transitions": [{ "from": "START", "to": "Idle" },
    ///                     { "from": "Idle", "to": "Walk", "time": 0.25, "exitTime": 0.5 }] }] }"#)?;
    /// let t = graph.transitions().iter().position(|t| t.duration == 0.25).expect("Idle → Walk");
    /// let slow = TransitionTiming { duration: 1.0, easing: Easing::Smoothstep, ..TransitionTiming::of(&graph.transitions()[t]) };
    /// let edited = graph.with_transition_timing(t, slow)?;
    /// let clips = [("Idle", ClipBinding { clip: 0, duration_s: 1.0 }), ("Walk", ClipBinding { clip: 1, duration_s: 1.0 })];
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(Archetype::from_bindings(Arc::new(graph), &clips)?);
    /// let hero = crowd.spawn(kind)?;
    /// crowd.replace_graph(kind, edited)?;
    /// assert_eq!(crowd.archetype(kind)?.graph().transitions()[t].duration, 1.0);
    /// for _ in 0..36 {
    ///     crowd.update(1.0 / 60.0)?;
    /// }
    /// let layer = crowd.readback(hero, 0)?;
    /// assert_eq!(crowd.state_name(kind, layer.active_state), Some("Walk"));
    /// assert!(layer.transitioning, "a 1 s blend is still running after 0.1 s");
    ///
    /// let other = CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Idle" }], "transitions": [{ "from": "START", "to": "Idle" }] }] }"#)?;
    /// assert!(crowd.replace_graph(kind, other).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace_graph(&mut self, id: ArchetypeId, mut graph: CompiledGraph) -> Result<(), StateError> {
        let group = self.groups.get_mut(id.0 as usize).ok_or(StateError::UnknownArchetype(id.0))?;
        let old = Arc::clone(&group.arch.graph);
        if let Some(what) = old.shape_difference(&graph) {
            return Err(StateError::IncompatibleGraph { archetype: id.0, what });
        }
        graph.id = old.id();
        let base = old.transitions().len();
        let retimed = |t: u16| {
            t != NO_INDEX && (t as usize) < base && old.transitions[t as usize] != graph.transitions[t as usize]
        };
        let in_flight: BTreeSet<u16> = group.transition.iter().copied().filter(|&t| retimed(t)).collect();
        // Checked first so that nothing changes on error: with this much room, interning never
        // fails (a full table drops the entries no row uses, and each copy is used at once).
        let commands_used: BTreeSet<u16> = group
            .transition
            .iter()
            .chain(&group.pending)
            .copied()
            .filter(|&t| t != NO_INDEX && t as usize >= base)
            .collect();
        if commands_used.len() + in_flight.len() > MAX_COMMANDS {
            return Err(StateError::TooManyCommands { limit: MAX_COMMANDS });
        }
        for t in in_flight {
            let copy = group.intern_command(old.transitions[t as usize].clone())?;
            for running in group.transition.iter_mut().filter(|r| **r == t) {
                *running = copy;
            }
        }
        group.arch.graph = Arc::new(graph);
        Ok(())
    }
}
