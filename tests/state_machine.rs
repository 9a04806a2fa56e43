//! One test per rule of DESIGN.md's state-machine semantics, each a small graph and a frame
//! script with the expected states and transition progress frame by frame.
//!
//! Steps are binary fractions (0.125, 0.25 s) so that exit-time crossings are exact.

mod support;

use std::sync::Arc;

use support::*;
use throng::graph::CompiledGraph;
use throng::state::{Archetype, ClipBinding, Crowd};

const ONE_S: &str = r#"{ "*": 1.0 }"#;

fn abc(transitions: &str, params: &str) -> String {
    graph(
        r#"{ "name": "START" }, { "name": "A" }, { "name": "B" }, { "name": "C" }, { "name": "ANY" }, { "name": "END" }"#,
        &format!(r#"{{ "from": "START", "to": "A" }}, {transitions}"#),
        params,
    )
}

const GO: &str = r#""go": { "name": "go", "type": "BOOLEAN", "value": false }"#;

#[test]
fn lower_priority_wins_then_list_order() {
    let by_priority = abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "priority": 1, "conditions": [{go}] }},
               {{ "from": "A", "to": "C", "priority": 0, "conditions": [{go}] }}"#,
            go = is_true("go")
        ),
        GO,
    );
    let lines = trace(&by_priority, ONE_S, 0.125, 3, r#"{ "frame": 1, "set": { "go": true } }"#);
    assert_eq!(actives(&lines, "Base"), ["A", "C", "C"]);

    let by_order = abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditions": [{go}] }},
               {{ "from": "A", "to": "C", "conditions": [{go}] }}"#,
            go = is_true("go")
        ),
        GO,
    );
    let lines = trace(&by_order, ONE_S, 0.125, 3, r#"{ "frame": 1, "set": { "go": true } }"#);
    assert_eq!(actives(&lines, "Base"), ["A", "B", "B"]);
}

#[test]
fn any_comes_after_the_states_own_transitions_whatever_the_priority() {
    let g = abc(
        &format!(
            r#"{{ "from": "ANY", "to": "C", "priority": -5, "conditions": [{go}] }},
               {{ "from": "A", "to": "B", "priority": 10, "conditions": [{go}] }}"#,
            go = is_true("go")
        ),
        GO,
    );
    let lines = trace(&g, ONE_S, 0.125, 3, r#"{ "frame": 1, "set": { "go": true } }"#);
    assert_eq!(actives(&lines, "Base"), ["A", "B", "C"], "B first from A; from B only ANY applies");
}

#[test]
fn any_never_re_enters_the_active_state_and_an_unusable_trigger_stays_set() {
    let g = abc(
        &format!(
            r#"{{ "from": "ANY", "to": "B", "conditions": [{t}] }},
               {{ "from": "B", "to": "A", "conditions": [{go}] }}"#,
            t = is_true("t"),
            go = is_true("go")
        ),
        &format!(r#"{GO}, "t": {{ "name": "t", "type": "TRIGGER", "value": false }}"#),
    );
    let lines = trace(
        &g,
        ONE_S,
        0.125,
        8,
        r#"{ "frame": 0, "trigger": ["t"] }, { "frame": 3, "trigger": ["t"] },
           { "frame": 5, "set": { "go": true } }, { "frame": 6, "set": { "go": false } }"#,
    );
    // Frame 3's trigger cannot be used while B is active, so it waits; from A at frame 6 it is.
    assert_eq!(actives(&lines, "Base"), ["B", "B", "B", "B", "B", "A", "B", "B"]);
    assert_eq!(lines[4].previous_state.as_deref(), Some("A"), "no transition B → B was taken");
}

/// A crowd of one character for tests that read clip times.
struct One {
    crowd: Crowd,
    kind: throng::state::ArchetypeId,
    hero: throng::state::CharacterHandle,
}

impl One {
    fn new(graph_json: &str, clips: &[(&str, f32)]) -> Self {
        let graph = Arc::new(CompiledGraph::from_json(graph_json).unwrap());
        let bindings: Vec<(&str, ClipBinding)> =
            clips.iter().enumerate().map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d })).collect();
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(Archetype::from_bindings(graph, &bindings).unwrap());
        let hero = crowd.spawn(kind).unwrap();
        Self { crowd, kind, hero }
    }

    fn step(&mut self, dt: f32) {
        self.crowd.update(dt).unwrap();
    }

    /// (clip, time, weight) of layer `layer`'s samples.
    fn samples(&self, layer: usize) -> Vec<(u32, f32, f32)> {
        let programs = self.crowd.programs(self.kind).unwrap();
        let layers = self.crowd.archetype(self.kind).unwrap().graph().layers().len();
        let (_, row) = self.crowd.row_of(self.hero).unwrap();
        let p = programs[row * layers + layer];
        let samples = self.crowd.samples(self.kind).unwrap();
        samples[p.sample_range().start as usize..p.sample_range().end as usize]
            .iter()
            .map(|s| (s.clip, s.time_s, s.weight))
            .collect()
    }

    fn trigger(&mut self, name: &str) {
        let p = self.crowd.param(self.kind, name).unwrap();
        self.crowd.set_trigger(p, &[self.hero], false).unwrap();
    }
}

#[test]
fn an_authored_self_transition_restarts_the_state() {
    let g = abc(
        &format!(r#"{{ "from": "A", "to": "A", "conditions": [{t}] }}"#, t = is_true("t")),
        r#""t": { "name": "t", "type": "TRIGGER", "value": false }"#,
    );
    let mut one = One::new(&g, &[("A", 1.0), ("B", 1.0), ("C", 1.0)]);
    one.step(0.25);
    one.step(0.25);
    assert_eq!(one.samples(0), [(0, 0.5, 1.0)]);
    one.trigger("t");
    one.step(0.25);
    assert_eq!(one.samples(0), [(0, 0.0, 1.0)], "restarted on the update the trigger was set");
    one.step(0.25);
    assert_eq!(one.samples(0), [(0, 0.25, 1.0)]);
}

#[test]
fn exit_time_below_one_opens_each_loop_and_a_missed_crossing_waits() {
    let g =
        abc(&format!(r#"{{ "from": "A", "to": "B", "exitTime": 0.5, "conditions": [{go}] }}"#, go = is_true("go")), GO);
    // Crossings of 0.5 land on frames 3 and 11 (progress 0.125 per frame).
    let lines = trace(&g, ONE_S, 0.125, 13, r#"{ "frame": 5, "set": { "go": true } }"#);
    let mut expected = many("A", 11);
    expected.extend(many("B", 2));
    assert_eq!(actives(&lines, "Base"), expected);

    let lines = trace(&g, ONE_S, 0.125, 5, r#"{ "frame": 0, "set": { "go": true } }"#);
    assert_eq!(actives(&lines, "Base"), ["A", "A", "A", "B", "B"]);
}

#[test]
fn exit_time_of_one_or_more_on_a_looping_state_opens_once() {
    let g = abc(r#"{ "from": "A", "to": "B", "exitTime": 2.5 }"#, "");
    let lines = trace(&g, ONE_S, 0.25, 11, "");
    let mut expected = many("A", 9);
    expected.extend(many("B", 2));
    assert_eq!(actives(&lines, "Base"), expected, "halfway through the third loop");

    let g =
        abc(&format!(r#"{{ "from": "A", "to": "B", "exitTime": 1.5, "conditions": [{go}] }}"#, go = is_true("go")), GO);
    let lines = trace(&g, ONE_S, 0.25, 24, r#"{ "frame": 8, "set": { "go": true } }"#);
    assert_eq!(actives(&lines, "Base"), many("A", 24), "1.5 passed before go; it never comes again");
}

#[test]
fn a_non_looping_state_keeps_its_gate_open_while_it_holds_its_last_frame() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "A", "loop": false }, { "name": "B" }"#,
        &format!(
            r#"{{ "from": "START", "to": "A" }}, {{ "from": "A", "to": "B", "exitTime": 2.0, "conditions": [{go}] }}"#,
            go = is_true("go")
        ),
        GO,
    );
    let lines = trace(&g, ONE_S, 0.25, 10, r#"{ "frame": 8, "set": { "go": true } }"#);
    let mut expected = many("A", 8);
    expected.extend(many("B", 2));
    assert_eq!(actives(&lines, "Base"), expected, "exit time 2 on a one-shot opens at its end");

    let mut one = One::new(&g, &[("A", 1.0), ("B", 1.0)]);
    for _ in 0..7 {
        one.step(0.25);
    }
    assert_eq!(one.samples(0), [(0, 1.0, 1.0)], "holds the last frame");
}

#[test]
fn durations_in_seconds_and_normalized_with_state_speed() {
    let seconds = abc(
        r#"{ "from": "A", "to": "B", "time": 0.5, "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] }"#,
        GO,
    );
    let lines = trace(&seconds, r#"{ "A": 2.0, "*": 1.0 }"#, 0.125, 6, r#"{ "frame": 1, "set": { "go": true } }"#);
    assert_eq!(
        steps(&lines),
        expect(&[
            ("A", false, 1.0),
            ("B", true, 0.0),
            ("B", true, 0.25),
            ("B", true, 0.5),
            ("B", true, 0.75),
            ("B", false, 1.0)
        ])
    );
    // A quarter of A's 2 s at speed 2 is 0.25 s.
    let normalized = graph(
        r#"{ "name": "START" }, { "name": "A", "speed": 2 }, { "name": "B" }"#,
        r#"{ "from": "START", "to": "A" },
           { "from": "A", "to": "B", "time": 0.25, "durationUnit": "normalized",
             "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] }"#,
        GO,
    );
    let lines = trace(&normalized, r#"{ "A": 2.0, "*": 1.0 }"#, 0.125, 4, r#"{ "frame": 1, "set": { "go": true } }"#);
    assert_eq!(steps(&lines), expect(&[("A", false, 1.0), ("B", true, 0.0), ("B", true, 0.5), ("B", false, 1.0)]));
}

#[test]
fn state_speed_scales_progress_and_exit_time() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "A", "speed": 2 }, { "name": "B" }"#,
        r#"{ "from": "START", "to": "A" }, { "from": "A", "to": "B", "exitTime": 1 }"#,
        "",
    );
    let lines = trace(&g, ONE_S, 0.125, 5, "");
    assert_eq!(actives(&lines, "Base"), ["A", "A", "A", "B", "B"], "1 s clip at speed 2 ends after 0.5 s");
}

#[test]
fn offset_starts_the_destination_part_way() {
    let g = abc(r#"{ "from": "A", "to": "B", "transitionOffset": 0.5, "exitTime": 0.25 }"#, "");
    let mut one = One::new(&g, &[("A", 1.0), ("B", 2.0), ("C", 1.0)]);
    one.step(0.25);
    assert_eq!(one.samples(0), [(1, 1.0, 1.0)], "half of B's 2 s");
    one.step(0.25);
    assert_eq!(one.samples(0), [(1, 1.25, 1.0)]);
}

#[test]
fn end_returns_to_start_and_the_default_state() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "A" }, { "name": "B", "loop": false }, { "name": "END" }"#,
        &format!(
            r#"{{ "from": "START", "to": "A" }},
               {{ "from": "A", "to": "B", "conditions": [{go}] }},
               {{ "from": "B", "to": "END", "exitTime": 1 }}"#,
            go = is_true("go")
        ),
        GO,
    );
    let lines = trace(
        &g,
        r#"{ "A": 1.0, "B": 0.5 }"#,
        0.125,
        7,
        r#"{ "frame": 1, "set": { "go": true } }, { "frame": 2, "set": { "go": false } }"#,
    );
    assert_eq!(actives(&lines, "Base"), ["A", "B", "B", "B", "B", "A", "A"]);
    assert_eq!(lines[5].previous_state.as_deref(), Some("B"));
}

/// A → B runs 1 s with `source`; at frame 2 the parameters in `set` become true.
fn interrupted(source: &str, set: &str) -> Vec<String> {
    let g = graph(
        r#"{ "name": "START" }, { "name": "A" }, { "name": "B" }, { "name": "C" }, { "name": "D" }, { "name": "E" }, { "name": "ANY" }"#,
        &format!(
            r#"{{ "from": "START", "to": "A" }},
               {{ "from": "A", "to": "B", "time": 1.0, "interruptionSource": "{source}", "conditions": [{go}] }},
               {{ "from": "A", "to": "C", "conditions": [{p}] }},
               {{ "from": "B", "to": "D", "conditions": [{n}] }},
               {{ "from": "ANY", "to": "E", "conditions": [{a}] }}"#,
            go = is_true("go"),
            p = is_true("p"),
            n = is_true("n"),
            a = is_true("a")
        ),
        r#""go": { "name": "go", "type": "BOOLEAN" }, "p": { "name": "p", "type": "BOOLEAN" },
           "n": { "name": "n", "type": "BOOLEAN" }, "a": { "name": "a", "type": "BOOLEAN" }"#,
    );
    let lines = trace(
        &g,
        ONE_S,
        0.25,
        6,
        &format!(r#"{{ "frame": 0, "set": {{ "go": true }} }}, {{ "frame": 2, "set": {set} }}"#),
    );
    actives(&lines, "Base")
}

#[test]
fn each_interruption_source_picks_its_transitions() {
    let both = r#"{ "p": true, "n": true }"#;
    // NONE: the transition runs its 1 s (ends on frame 4), then B's own transition is taken.
    assert_eq!(interrupted("NONE", both), ["B", "B", "B", "B", "D", "D"]);
    assert_eq!(interrupted("PREV_STATE", both), ["B", "B", "C", "C", "C", "C"]);
    assert_eq!(interrupted("NEXT_STATE", both), ["B", "B", "D", "D", "D", "D"]);
    assert_eq!(interrupted("PREV_STATE_NEXT_STATE", both), ["B", "B", "C", "C", "C", "C"]);
    assert_eq!(interrupted("NEXT_STATE_PREV_STATE", both), ["B", "B", "D", "D", "D", "D"]);
    // ANY's transitions interrupt unless the source is NONE.
    let any = r#"{ "a": true }"#;
    assert_eq!(interrupted("NONE", any), ["B", "B", "B", "B", "E", "E"]);
    assert_eq!(interrupted("PREV_STATE", any), ["B", "B", "E", "E", "E", "E"]);
    assert_eq!(interrupted("NEXT_STATE", any), ["B", "B", "E", "E", "E", "E"]);
}

#[test]
fn an_interrupted_crossfade_fades_from_the_snapshot() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "A" }, { "name": "B" }, { "name": "C" }"#,
        &format!(
            r#"{{ "from": "START", "to": "A" }},
               {{ "from": "A", "to": "B", "time": 1.0, "interruptionSource": "NEXT_STATE", "conditions": [{go}] }},
               {{ "from": "B", "to": "C", "time": 0.5, "conditions": [{n}] }}"#,
            go = is_true("go"),
            n = is_true("n")
        ),
        r#""go": { "name": "go", "type": "BOOLEAN" }, "n": { "name": "n", "type": "BOOLEAN" }"#,
    );
    let mut one = One::new(&g, &[("A", 1.0), ("B", 1.0), ("C", 1.0)]);
    let go = one.crowd.param(one.kind, "go").unwrap();
    one.crowd.set_bool(go, &[one.hero], &[true]).unwrap();
    one.step(0.25);
    one.step(0.25);
    assert_eq!(one.samples(0).len(), 2, "A and B both sampled during the crossfade");
    let n = one.crowd.param(one.kind, "n").unwrap();
    one.crowd.set_bool(n, &[one.hero], &[true]).unwrap();
    one.step(0.25);
    let programs = one.crowd.programs(one.kind).unwrap();
    let p = programs[0];
    use throng::program::LayerProgram;
    assert_ne!(p.flags & LayerProgram::SWITCHED, 0, "the evaluator is told to capture the displayed pose");
    assert_ne!(p.flags & LayerProgram::SOURCE_SNAPSHOT, 0);
    assert_eq!(p.num_secondary, 0, "neither A nor B is sampled any more");
    one.step(0.25);
    let samples = one.samples(0);
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].0, 2, "C fades in over the snapshot");
    assert!((samples[0].2 - 0.5).abs() < 1e-6);
}

#[test]
fn triggers_are_cleared_after_every_layer_has_seen_them() {
    let layer = |name: &str, state: &str| {
        format!(
            r#"{{ "name": "{name}", "states": [{{ "name": "START" }}, {{ "name": "Rest{name}" }}, {{ "name": "{state}" }}, {{ "name": "ANY" }}],
                 "transitions": [{{ "from": "START", "to": "Rest{name}" }},
                                 {{ "from": "ANY", "to": "{state}", "conditions": [{t}] }}] }}"#,
            t = is_true("t")
        )
    };
    let g = format!(
        r#"{{ "layers": [{}, {}], "parameters": {{ "t": {{ "name": "t", "type": "TRIGGER" }} }} }}"#,
        layer("Base", "Jump"),
        layer("Upper", "Wave")
    );
    let lines = trace(&g, ONE_S, 0.125, 2, r#"{ "frame": 1, "trigger": ["t"] }"#);
    assert_eq!(actives(&lines, "Base"), ["RestBase", "Jump"]);
    assert_eq!(actives(&lines, "Upper"), ["RestUpper", "Wave"], "the second layer saw the trigger too");

    let mut one = One::new(&g, &[("RestBase", 1.0), ("Jump", 1.0), ("RestUpper", 1.0), ("Wave", 1.0)]);
    one.trigger("t");
    one.step(0.125);
    let t = one.crowd.param(one.kind, "t").unwrap();
    assert_eq!(one.crowd.get(t, one.hero).unwrap(), throng::graph::ParamValue::Trigger(false));
}

#[test]
fn a_single_frame_trigger_is_cleared_even_if_unused() {
    let g = abc(
        &format!(r#"{{ "from": "A", "to": "B", "conditions": [{t}, {go}] }}"#, t = is_true("t"), go = is_true("go")),
        &format!(r#"{GO}, "t": {{ "name": "t", "type": "TRIGGER" }}"#),
    );
    let events = |key: &str| format!(r#"{{ "frame": 1, "{key}": ["t"] }}, {{ "frame": 2, "set": {{ "go": true }} }}"#);
    let lines = trace(&g, ONE_S, 0.125, 4, &events("triggerSingleFrame"));
    assert_eq!(actives(&lines, "Base"), ["A", "A", "A", "A"]);
    let lines = trace(&g, ONE_S, 0.125, 4, &events("trigger"));
    assert_eq!(actives(&lines, "Base"), ["A", "A", "B", "B"]);
    let lines = trace(
        &g,
        ONE_S,
        0.125,
        4,
        r#"{ "frame": 1, "trigger": ["t"] }, { "frame": 2, "set": { "go": true }, "resetTrigger": ["t"] }"#,
    );
    assert_eq!(actives(&lines, "Base"), ["A", "A", "A", "A"], "resetTrigger clears it");
}

#[test]
fn a_synced_blend_tree_advances_one_phase_by_its_weighted_rates() {
    let g = graph(
        r#"{ "name": "START" },
           { "name": "Move", "blendTree": { "type": "1D", "parameter": "speed", "children": [
               { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0 } ] } }"#,
        r#"{ "from": "START", "to": "Move" }"#,
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 2.75 }"#,
    );
    let mut one = One::new(&g, &[("Move.Walk", 1.0), ("Move.Run", 0.5)]);
    one.step(0.125);
    one.step(0.125);
    // φ' = 0.5/1 + 0.5/0.5 = 1.5 per second → φ = 0.375 after 0.25 s.
    assert_eq!(one.samples(0), [(0, 0.375, 0.5), (1, 0.1875, 0.5)]);
}

#[test]
fn seed_001_walk_run_blend_at_three_metres_per_second() {
    let g = graph(
        r#"{ "name": "START" },
           { "name": "Move", "blendTree": { "type": "1D", "parameter": "speed", "children": [
               { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0 } ] } }"#,
        r#"{ "from": "START", "to": "Move" }"#,
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 3.0 }"#,
    );
    let mut one = One::new(&g, &[("Move.Walk", 1.0), ("Move.Run", 0.7)]);
    one.step(0.0);
    let w = one.samples(0);
    assert!((w[0].2 - 0.4).abs() < 1e-6 && (w[1].2 - 0.6).abs() < 1e-6, "walk 0.4, run 0.6: {w:?}");
}

#[test]
fn a_four_corner_grid_at_its_centre_weighs_each_corner_a_quarter() {
    let g = graph(
        r#"{ "name": "START" },
           { "name": "Aim", "blendTree": { "type": "2D_GRID", "parameters": ["x", "y"], "children": [
               { "name": "UL", "point": [0, 1] }, { "name": "UR", "point": [1, 1] },
               { "name": "DL", "point": [0, 0] }, { "name": "DR", "point": [1, 0] } ] } }"#,
        r#"{ "from": "START", "to": "Aim" }"#,
        r#""x": { "name": "x", "type": "FLOAT", "value": 0.5 }, "y": { "name": "y", "type": "FLOAT", "value": 0.5 }"#,
    );
    let mut one = One::new(&g, &[("Aim.UL", 1.0), ("Aim.UR", 1.0), ("Aim.DL", 1.0), ("Aim.DR", 1.0)]);
    one.step(0.0);
    let w = one.samples(0);
    assert_eq!(w.len(), 4);
    assert!(w.iter().all(|s| (s.2 - 0.25).abs() < 1e-6), "{w:?}");
}

/// Idle ↔ Move around a speed threshold; `speed` hovers 0.09/0.11 every frame.
fn flicker(up: &str, down: &str, interruption: &str) -> usize {
    let cond = |op: &str, v: &str| format!(r#"{{ "parameterName": "speed", "predicate": "{op}", "value": {v} }}"#);
    let g = graph(
        r#"{ "name": "START" }, { "name": "Idle" }, { "name": "Move" }"#,
        &format!(
            r#"{{ "from": "START", "to": "Idle" }},
               {{ "from": "Idle", "to": "Move", "time": 0.25, "interruptionSource": "{interruption}", "conditions": [{}] }},
               {{ "from": "Move", "to": "Idle", "time": 0.25, "interruptionSource": "{interruption}", "conditions": [{}] }}"#,
            cond("GREATER_THAN", up),
            cond("LESS_THAN_EQUAL_TO", down)
        ),
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }"#,
    );
    let events: Vec<String> = (0..40)
        .map(|f| format!(r#"{{ "frame": {f}, "set": {{ "speed": {} }} }}"#, if f % 2 == 0 { 0.11 } else { 0.09 }))
        .collect();
    let lines = trace(&g, ONE_S, 0.0625, 40, &events.join(","));
    let a = actives(&lines, "Base");
    a.windows(2).filter(|w| w[0] != w[1]).count()
}

#[test]
fn flicker_at_a_threshold_and_both_cures() {
    let bouncing = flicker("0.1", "0.1", "NEXT_STATE");
    assert!(bouncing >= 38, "interruptible transitions on one threshold switch every frame: {bouncing}");
    let hysteresis = flicker("0.15", "0.05", "NEXT_STATE");
    assert_eq!(hysteresis, 0, "distinct thresholds never switch on a hovering value");
    let uninterruptible = flicker("0.1", "0.1", "NONE");
    assert!(uninterruptible <= 8, "a transition that must finish switches at most once per blend: {uninterruptible}");
}

#[test]
fn sub_state_machines_enter_and_exit_through_the_parent() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "Idle" },
           { "name": "Combat", "states": [
               { "name": "START" }, { "name": "Aim" }, { "name": "Fire", "loop": false }, { "name": "END" } ],
             "transitions": [
               { "from": "START", "to": "Aim" },
               { "from": "Aim", "to": "Fire", "conditions": [{ "parameterName": "fire", "predicate": "EQUAL_TO", "value": true }] },
               { "from": "Fire", "to": "END", "exitTime": 1 } ] }"#,
        &format!(
            r#"{{ "from": "START", "to": "Idle" }},
               {{ "from": "Idle", "to": "Combat", "conditions": [{c}] }},
               {{ "from": "Combat", "to": "Idle", "conditions": [{{ "parameterName": "combat", "predicate": "EQUAL_TO", "value": false }}] }}"#,
            c = is_true("combat")
        ),
        r#""combat": { "name": "combat", "type": "BOOLEAN" }, "fire": { "name": "fire", "type": "TRIGGER" }"#,
    );
    let lines = trace(
        &g,
        r#"{ "*": 1.0, "Combat.Fire": 0.5 }"#,
        0.25,
        10,
        r#"{ "frame": 1, "set": { "combat": true } }, { "frame": 2, "trigger": ["fire"] },
           { "frame": 5, "trigger": ["fire"] }, { "frame": 6, "set": { "combat": false } }"#,
    );
    // Fire ends on frame 4; combat is still true, so the exit re-enters Combat at Aim.
    // The second Fire ends on frame 7 with combat false: the exit leads to Idle.
    assert_eq!(
        actives(&lines, "Base"),
        [
            "Idle",
            "Combat.Aim",
            "Combat.Fire",
            "Combat.Fire",
            "Combat.Aim",
            "Combat.Fire",
            "Combat.Fire",
            "Idle",
            "Idle",
            "Idle"
        ]
    );
}

#[test]
fn nested_blend_trees_multiply_weights_down_the_tree() {
    // Root 1D on `speed` between Idle (0) and a 1D Locomotion tree (1) on `lean`.
    let g = graph(
        r#"{ "name": "START" },
           { "name": "Move", "blendTree": { "type": "1D", "parameter": "speed", "children": [
               { "name": "Idle", "point": 0.0 },
               { "name": "Loco", "point": 1.0, "type": "1D", "parameter": "lean", "children": [
                   { "name": "Left", "point": -1.0 }, { "name": "Right", "point": 1.0 } ] } ] } }"#,
        r#"{ "from": "START", "to": "Move" }"#,
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 0.75 }, "lean": { "name": "lean", "type": "FLOAT", "value": 0.5 }"#,
    );
    let mut one = One::new(&g, &[("Move.Idle", 1.0), ("Move.Loco.Left", 1.0), ("Move.Loco.Right", 1.0)]);
    one.step(0.0);
    // Idle 0.25; Loco 0.75 split 0.25 / 0.75 between Left and Right.
    assert_eq!(one.samples(0), [(0, 0.0, 0.25), (1, 0.0, 0.1875), (2, 0.0, 0.5625)]);
}

#[test]
fn a_step_longer_than_a_loop_still_crosses_the_exit_time() {
    let g = abc(r#"{ "from": "A", "to": "B", "exitTime": 0.5 }"#, "");
    // 0 → 0.25 (no crossing), then 0.25 → 2.5 (crosses 0.5, 1.5 and 2.5: the gate opens once).
    let script = format!(r#"{{ "stateGraph": {g}, "clips": {ONE_S}, "dts": [0.25, 2.25, 0.25] }}"#);
    let lines = throng::trace::run_script(&script).unwrap();
    assert_eq!(actives(&lines, "Base"), ["A", "B", "B"]);
}

#[test]
fn integer_conditions_compare_exactly() {
    let g = abc(
        r#"{ "from": "A", "to": "B", "conditions": [{ "parameterName": "weapon", "predicate": "EQUAL_TO", "value": 2 }] },
           { "from": "B", "to": "C", "conditions": [{ "parameterName": "weapon", "predicate": "GREATER_THAN_EQUAL_TO", "value": 16777217 }] }"#,
        r#""weapon": { "name": "weapon", "type": "INTEGER", "value": 0 }"#,
    );
    let lines = trace(
        &g,
        ONE_S,
        0.125,
        4,
        r#"{ "frame": 1, "set": { "weapon": 2 } }, { "frame": 2, "set": { "weapon": 16777216 } }, { "frame": 3, "set": { "weapon": 16777217 } }"#,
    );
    // 16777216 and 16777217 are the same f32; compared as integers they differ.
    assert_eq!(actives(&lines, "Base"), ["A", "B", "B", "C"]);
}

#[test]
fn a_previous_state_interruption_gates_exit_times_on_the_source_clock() {
    let g = |source: &str| {
        abc(
            &format!(
                r#"{{ "from": "A", "to": "B", "time": 1.0, "interruptionSource": "{source}", "conditions": [{go}] }},
                   {{ "from": "A", "to": "C", "exitTime": 0.5 }}"#,
                go = is_true("go")
            ),
            GO,
        )
    };
    // A is at 0.25 when A → B starts; A keeps playing under the crossfade and crosses 0.5 next frame.
    let events = r#"{ "frame": 0, "set": { "go": true } }"#;
    assert_eq!(actives(&trace(&g("PREV_STATE"), ONE_S, 0.25, 3, events), "Base"), ["B", "C", "C"]);
    assert_eq!(actives(&trace(&g("NONE"), ONE_S, 0.25, 3, events), "Base"), ["B", "B", "B"]);
}

#[test]
fn readback_reports_phase_and_loops() {
    let g = abc(r#"{ "from": "A", "to": "B", "exitTime": 9 }"#, "");
    let mut one = One::new(&g, &[("A", 2.0), ("B", 1.0), ("C", 1.0)]);
    for _ in 0..10 {
        one.step(0.5);
    }
    let r = one.crowd.readback(one.hero, 0).unwrap();
    assert_eq!((r.phase, r.loops), (0.5, 2), "5 s into a 2 s loop");
}

#[test]
fn a_direct_tree_weighs_children_by_their_parameters() {
    let g = graph(
        r#"{ "name": "START" },
           { "name": "Face", "blendTree": { "type": "DIRECT", "parameters": ["smile", "frown"], "children": [
               { "name": "Smile" }, { "name": "Frown" } ] } }"#,
        r#"{ "from": "START", "to": "Face" }"#,
        r#""smile": { "name": "smile", "type": "FLOAT", "value": 1 }, "frown": { "name": "frown", "type": "FLOAT", "value": 3 }"#,
    );
    let mut one = One::new(&g, &[("Face.Smile", 1.0), ("Face.Frown", 1.0)]);
    one.step(0.0);
    assert_eq!(one.samples(0), [(0, 0.0, 0.25), (1, 0.0, 0.75)]);
    let smile = one.crowd.param(one.kind, "smile").unwrap();
    let frown = one.crowd.param(one.kind, "frown").unwrap();
    one.crowd.set_float(smile, &[one.hero], &[0.0]).unwrap();
    one.crowd.set_float(frown, &[one.hero], &[-2.0]).unwrap();
    one.step(0.0);
    assert_eq!(one.samples(0), [(0, 0.0, 0.5), (1, 0.0, 0.5)], "nothing set: equal shares, never all zero");
}

#[test]
fn a_negative_speed_plays_backwards_from_the_end_and_exit_times_count_what_was_played() {
    let g = graph(
        r#"{ "name": "START" }, { "name": "Rewind", "speed": -2, "loop": false }, { "name": "B" }"#,
        r#"{ "from": "START", "to": "Rewind" }, { "from": "Rewind", "to": "B", "exitTime": 1 }"#,
        "",
    );
    let mut one = One::new(&g, &[("Rewind", 1.0), ("B", 1.0)]);
    let mut times = Vec::new();
    for _ in 0..4 {
        one.step(0.125);
        times.push(one.samples(0)[0]);
    }
    assert_eq!(times[..3], [(0, 0.75, 1.0), (0, 0.5, 1.0), (0, 0.25, 1.0)], "from 1 s down at twice the speed");
    assert_eq!(times[3].0, 1, "played through after 0.5 s: exit time 1 reached, now in B");
}
