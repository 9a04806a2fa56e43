//! Editing a compiled graph's transition timings (duration, switch mode, easing) without
//! compiling it again: what a live editor needs to change a blend under running characters
//! (`state::Crowd::replace_graph` swaps the edited copy in).
//!
//! An edit keeps the graph's shape (states, parameters, layers, conditions, every index) and its
//! identity ([`CompiledGraph::id`]), so parameter ids resolved against the original still work
//! with the copy, and [`CompiledGraph::shape_difference`] tells an edit from a different graph.

use super::compile::zero_duration_cycles;
use super::{CompiledGraph, Easing, GraphProblem, Inertialization, Location, ProblemKind, SwitchMode, Transition};

/// A transition's timing: everything an edit may change, and nothing that decides whether or
/// where it is taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransitionTiming {
    /// Duration, seconds, or a fraction of the source state's duration with `normalized`;
    /// finite and ≥ 0 (0 is a cut).
    pub duration: f32,
    /// Whether `duration` is a fraction of the source state's duration.
    pub normalized: bool,
    /// How the pose moves from the old state to the new one.
    pub switch: SwitchMode,
    /// How the weight moves from 0 to 1 (crossfade and frozen).
    pub easing: Easing,
}

impl TransitionTiming {
    /// The timing `transition` has.
    #[must_use]
    pub fn of(transition: &Transition) -> Self {
        Self {
            duration: transition.duration,
            normalized: transition.normalized,
            switch: transition.switch,
            easing: transition.easing,
        }
    }

    /// What is wrong with the timing, if anything: the rules the compiler applies to an
    /// authored transition's `time` and `switch`.
    fn problem(&self) -> Option<ProblemKind> {
        if !(self.duration.is_finite() && self.duration >= 0.0) {
            return Some(ProblemKind::BadDuration { time: self.duration });
        }
        if let SwitchMode::Inertialize(Inertialization::Spring { halflife_s }) = self.switch
            && !(halflife_s.is_finite() && halflife_s >= 0.0)
        {
            return Some(ProblemKind::BadSwitch {
                message: "spring `halflife` is seconds, finite and ≥ 0".to_owned()
            });
        }
        None
    }
}

/// Why a graph edit was refused. The graph edited is never changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The transition index is not one of the graph's ([`CompiledGraph::transitions`]).
    #[error("no transition {index}: the graph has {count}")]
    NoTransition {
        /// The index given.
        index: usize,
        /// Transitions the graph holds.
        count: usize,
    },
    /// The edited graph would break a rule the compiler enforces: a bad duration or switch, or
    /// a cycle of zero-duration transitions the edit closed.
    #[error("the edit breaks the graph's rules: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        /// Every rule broken, with where.
        problems: Vec<GraphProblem>,
    },
}

impl CompiledGraph {
    /// A copy of the graph with transition `index` (into [`CompiledGraph::transitions`]) timed
    /// by `timing`, every other table the same, and the same identity ([`CompiledGraph::id`]).
    ///
    /// Editing a transition back to the timing it was compiled with gives a graph equal to the
    /// original (`==`, every float bit for bit).
    ///
    /// # Errors
    /// [`EditError::NoTransition`] for an index past the transitions; [`EditError::Invalid`]
    /// for a duration that is negative or not finite, a spring halflife that is negative or not
    /// finite, or a cut or zero duration that closes a cycle of transitions taken at once.
    ///
    /// ```
    /// use throng::graph::{CompiledGraph, Easing, SwitchMode, TransitionTiming};
    ///
    /// let graph = CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
    ///     "transitions": [{ "from": "START", "to": "Idle" },
    ///                     { "from": "Idle", "to": "Walk", "time": 0.25, "exitTime": 0.5 }] }] }"#)?;
    /// let t = graph.transitions().iter().position(|t| t.duration == 0.25).expect("Idle → Walk");
    /// let slow = TransitionTiming { duration: 0.6, easing: Easing::Smoothstep, ..TransitionTiming::of(&graph.transitions()[t]) };
    /// let edited = graph.with_transition_timing(t, slow)?;
    /// assert_eq!(edited.transitions()[t].duration, 0.6);
    /// assert_eq!(edited.id(), graph.id());
    /// assert!(edited.shape_difference(&graph).is_none());
    ///
    /// let reset = edited.with_transition_timing(t, TransitionTiming::of(&graph.transitions()[t]))?;
    /// assert!(reset == graph);
    /// assert!(graph.with_transition_timing(t, TransitionTiming { duration: -1.0, ..slow }).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_transition_timing(&self, index: usize, timing: TransitionTiming) -> Result<Self, EditError> {
        let count = self.transitions.len();
        let tr = self.transitions.get(index).ok_or(EditError::NoTransition { index, count })?;
        let at = self.transition_location(tr);
        if let Some(kind) = timing.problem() {
            return Err(EditError::Invalid { problems: vec![GraphProblem { at, kind }] });
        }
        let mut copy = self.duplicate();
        let edited = &mut copy.transitions[index];
        edited.duration = timing.duration;
        edited.normalized = timing.normalized;
        edited.switch = timing.switch;
        edited.easing = timing.easing;
        let (copy, problems) = zero_duration_cycles(copy);
        if problems.is_empty() { Ok(copy) } else { Err(EditError::Invalid { problems }) }
    }

    /// What besides transition timings ([`TransitionTiming`]) tells this graph from `other`:
    /// `None` when they differ in timings alone, so that characters running one can go on with
    /// the other (`state::Crowd::replace_graph`); otherwise the first table that differs, named.
    #[must_use]
    pub fn shape_difference(&self, other: &Self) -> Option<&'static str> {
        let untimed = |t: &Transition| Transition {
            duration: 0.0,
            normalized: false,
            switch: SwitchMode::Cut,
            easing: Easing::Linear,
            ..t.clone()
        };
        let transitions_match = self.transitions.len() == other.transitions.len()
            && self.transitions.iter().zip(&other.transitions).all(|(a, b)| untimed(a) == untimed(b));
        [
            ("parameters", self.parameters == other.parameters),
            ("layers", self.layers == other.layers),
            ("states", self.states == other.states),
            ("machines", self.machines == other.machines),
            ("transitions", transitions_match),
            ("transition order", self.candidates == other.candidates),
            ("conditions", self.conditions == other.conditions && self.condition_groups == other.condition_groups),
            ("motion nodes", self.nodes == other.nodes && self.direct_params == other.direct_params),
            ("blend spaces", self.space_info == other.space_info),
            ("leaves", self.leaves == other.leaves),
            ("default switch", self.default_switch == other.default_switch),
        ]
        .into_iter()
        .find(|(_, same)| !same)
        .map(|(what, _)| what)
    }

    /// Where `tr` was authored, for its problems.
    fn transition_location(&self, tr: &Transition) -> Location {
        let machine = self.machines.get(tr.machine as usize).map(|m| m.name.clone()).filter(|m| !m.is_empty());
        Location {
            layer: self.layers.get(tr.layer as usize).map(|l| l.name.clone()),
            machine,
            transition: (tr.index != u32::MAX).then_some(tr.index as usize),
            ..Location::default()
        }
    }

    /// A field-by-field copy keeping the identity: the graph is not `Clone`, so that a copy
    /// sharing an id is only ever an edit of it.
    fn duplicate(&self) -> Self {
        Self {
            id: self.id,
            parameters: self.parameters.clone(),
            num_columns: self.num_columns,
            layers: self.layers.clone(),
            states: self.states.clone(),
            machines: self.machines.clone(),
            transitions: self.transitions.clone(),
            candidates: self.candidates.clone(),
            conditions: self.conditions.clone(),
            condition_groups: self.condition_groups.clone(),
            nodes: self.nodes.clone(),
            spaces: self.spaces.clone(),
            space_info: self.space_info.clone(),
            direct_params: self.direct_params.clone(),
            leaves: self.leaves.clone(),
            default_switch: self.default_switch,
            chain_weights: self.chain_weights.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAPH: &str = r#"{ "layers": [{ "name": "Base",
        "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
        "transitions": [
            { "from": "START", "to": "Idle" },
            { "from": "Idle", "to": "Walk", "time": 0.2,
              "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] },
            { "from": "Walk", "to": "Idle", "time": 0.3,
              "switch": { "mode": "inertialize", "spring": { "halflife": 0.05 } } }
        ] }],
        "parameters": { "go": { "name": "go", "type": "BOOLEAN", "value": false } } }"#;

    fn graph() -> CompiledGraph {
        CompiledGraph::from_json(GRAPH).expect("the test graph compiles")
    }

    fn index_of(g: &CompiledGraph, duration: f32) -> usize {
        g.transitions().iter().position(|t| t.duration == duration).expect("the transition is in the graph")
    }

    #[test]
    fn an_edit_changes_that_transitions_timing_and_nothing_else() {
        let g = graph();
        let t = index_of(&g, 0.2);
        let curve = crate::graph::CubicBezier::new(0.42, 0.0, 0.58, 1.0).expect("in bounds");
        let timing = TransitionTiming {
            duration: 0.75,
            normalized: true,
            switch: SwitchMode::Frozen,
            easing: Easing::CubicBezier(curve),
        };
        let e = g.with_transition_timing(t, timing).expect("a valid edit");
        assert_eq!(TransitionTiming::of(&e.transitions()[t]), timing);
        assert_eq!(e.id(), g.id());
        assert_eq!(e.shape_difference(&g), None);
        for (k, (a, b)) in g.transitions().iter().zip(e.transitions()).enumerate() {
            if k != t {
                assert_eq!(a, b, "transition {k} changed");
            }
        }
        assert_eq!(e.transitions()[t].conditions, g.transitions()[t].conditions);
        assert!(e != g);
    }

    #[test]
    fn resetting_restores_the_compiled_timing_bit_for_bit() {
        let g = graph();
        let t = index_of(&g, 0.3);
        let original = TransitionTiming::of(&g.transitions()[t]);
        let edited = g
            .with_transition_timing(t, TransitionTiming { duration: 0.1, switch: SwitchMode::Crossfade, ..original })
            .expect("a valid edit");
        let reset = edited.with_transition_timing(t, original).expect("the original timing is valid");
        assert!(reset == g);
        let (a, b) = (&reset.transitions()[t], &g.transitions()[t]);
        assert_eq!(a.duration.to_bits(), b.duration.to_bits());
        let halflife = |s: SwitchMode| match s {
            SwitchMode::Inertialize(Inertialization::Spring { halflife_s }) => halflife_s.to_bits(),
            other => panic!("expected the spring back, got {other:?}"),
        };
        assert_eq!(halflife(a.switch), halflife(b.switch));
    }

    #[test]
    fn bad_timings_are_refused_with_where() {
        let g = graph();
        let t = index_of(&g, 0.2);
        let ok = TransitionTiming::of(&g.transitions()[t]);
        for duration in [f32::NAN, -0.1, f32::INFINITY] {
            let e = g.with_transition_timing(t, TransitionTiming { duration, ..ok });
            let Err(EditError::Invalid { problems }) = e else { panic!("duration {duration} accepted") };
            assert!(matches!(problems[0].kind, ProblemKind::BadDuration { .. }));
            assert_eq!(problems[0].at.layer.as_deref(), Some("Base"));
            // Idle → Walk, second in the layer's authored list.
            assert_eq!(problems[0].at.transition, Some(1));
        }
        for halflife_s in [f32::NAN, -1.0] {
            let switch = SwitchMode::Inertialize(Inertialization::Spring { halflife_s });
            let e = g.with_transition_timing(t, TransitionTiming { switch, ..ok });
            assert!(
                matches!(&e, Err(EditError::Invalid { problems }) if matches!(problems[0].kind, ProblemKind::BadSwitch { .. })),
                "halflife {halflife_s}: {e:?}"
            );
        }
        let count = g.transitions().len();
        assert_eq!(g.with_transition_timing(count, ok).err(), Some(EditError::NoTransition { index: count, count }));
    }

    #[test]
    fn an_edit_that_closes_a_zero_duration_cycle_is_refused() {
        let g = CompiledGraph::from_json(
            r#"{ "layers": [{ "name": "Base",
                "states": [{ "name": "START" }, { "name": "A" }, { "name": "B" }],
                "transitions": [
                    { "from": "START", "to": "A" },
                    { "from": "A", "to": "B", "time": 0.0 },
                    { "from": "B", "to": "A", "time": 0.2 }
                ] }] }"#,
        )
        .expect("a cycle with one timed transition compiles");
        let t = index_of(&g, 0.2);
        let cut = TransitionTiming { duration: 0.0, ..TransitionTiming::of(&g.transitions()[t]) };
        let e = g.with_transition_timing(t, cut);
        assert!(
            matches!(&e, Err(EditError::Invalid { problems }) if matches!(problems[0].kind, ProblemKind::ZeroDurationCycle { .. })),
            "{e:?}"
        );
    }

    #[test]
    fn a_different_graph_is_a_shape_difference() {
        let g = graph();
        let other = CompiledGraph::from_json(&GRAPH.replace("\"Walk\"", "\"Run\"")).expect("compiles");
        assert_eq!(g.shape_difference(&other), Some("states"));
        let more = CompiledGraph::from_json(&GRAPH.replace("\"value\": true", "\"value\": false")).expect("compiles");
        assert_eq!(g.shape_difference(&more), Some("conditions"));
    }
}
