//! throng's condition extensions and easing curves: OR groups of conditions
//! (`conditionGroups`), conditions comparing two parameters, and CSS cubic-Bézier easing.

mod support;

use std::sync::Arc;

use support::compare::largest;
use support::*;
use throng::graph::{CompiledGraph, CubicBezier, Easing, GraphError, ProblemKind};
use throng::state::{Archetype, ClipBinding, Crowd};

const ONE_S: &str = r#"{ "*": 1.0 }"#;

/// States START, A, B, C; START leads to A, then `transitions`.
fn abc(transitions: &str, params: &str) -> String {
    graph(
        r#"{ "name": "START" }, { "name": "A" }, { "name": "B" }, { "name": "C" }"#,
        &format!(r#"{{ "from": "START", "to": "A" }}, {transitions}"#),
        params,
    )
}

fn param(name: &str, kind: &str, value: &str) -> String {
    format!(r#""{name}": {{ "name": "{name}", "type": "{kind}", "value": {value} }}"#)
}

fn float_above(name: &str, value: f32) -> String {
    format!(r#"{{ "parameterName": "{name}", "predicate": "GREATER_THAN", "value": {value} }}"#)
}

/// `a && x > 0.5` OR `b`, from A to B.
fn or_graph() -> String {
    abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditionGroups": [[{a}, {x}], [{b}]] }}"#,
            a = is_true("a"),
            x = float_above("x", 0.5),
            b = is_true("b")
        ),
        &[param("a", "BOOLEAN", "false"), param("b", "BOOLEAN", "false"), param("x", "FLOAT", "0")].join(", "),
    )
}

fn run(graph: &str, set: &str) -> Vec<String> {
    actives(&trace(graph, ONE_S, 0.125, 3, &format!(r#"{{ "frame": 1, "set": {set} }}"#)), "Base")
}

#[test]
fn each_group_alone_fires_the_transition() {
    let g = or_graph();
    assert_eq!(run(&g, r#"{ "a": true, "x": 1.0 }"#), ["A", "B", "B"], "first group");
    assert_eq!(run(&g, r#"{ "b": true }"#), ["A", "B", "B"], "second group");
    assert_eq!(run(&g, r#"{ "a": true, "x": 1.0, "b": true }"#), ["A", "B", "B"], "both groups");
}

#[test]
fn no_group_holding_fires_nothing() {
    let g = or_graph();
    assert_eq!(run(&g, r#"{ "x": 0.0 }"#), ["A", "A", "A"], "nothing set");
    assert_eq!(run(&g, r#"{ "a": true }"#), ["A", "A", "A"], "half of the first group");
    assert_eq!(run(&g, r#"{ "x": 1.0 }"#), ["A", "A", "A"], "the other half of the first group");
}

#[test]
fn plain_conditions_beside_groups_must_hold_too() {
    let g = abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditions": [{go}], "conditionGroups": [[{a}], [{b}]] }}"#,
            go = is_true("go"),
            a = is_true("a"),
            b = is_true("b")
        ),
        &[param("go", "BOOLEAN", "false"), param("a", "BOOLEAN", "false"), param("b", "BOOLEAN", "false")].join(", "),
    );
    assert_eq!(run(&g, r#"{ "a": true }"#), ["A", "A", "A"], "a group without `conditions`");
    assert_eq!(run(&g, r#"{ "go": true }"#), ["A", "A", "A"], "`conditions` without a group");
    assert_eq!(run(&g, r#"{ "go": true, "b": true }"#), ["A", "B", "B"], "both");
}

#[test]
fn only_the_groups_that_held_consume_their_triggers() {
    // A → B by `t && x > 0.5` or by `go`; B → C by `t`. Taking A → B through `go` while `x`
    // is 0 leaves `t` set, so B moves on to C at once.
    let g = abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditionGroups": [[{t}, {x}], [{go}]] }},
               {{ "from": "B", "to": "C", "conditions": [{t}] }}"#,
            t = is_true("t"),
            x = float_above("x", 0.5),
            go = is_true("go")
        ),
        &[param("t", "TRIGGER", "false"), param("go", "BOOLEAN", "false"), param("x", "FLOAT", "0")].join(", "),
    );
    let by_go = trace(&g, ONE_S, 0.125, 3, r#"{ "frame": 1, "set": { "go": true }, "trigger": ["t"] }"#);
    assert_eq!(actives(&by_go, "Base"), ["A", "B", "C"]);
    // Through the trigger's own group it is consumed, and B stays.
    let by_t = trace(&g, ONE_S, 0.125, 3, r#"{ "frame": 1, "set": { "x": 1.0 }, "trigger": ["t"] }"#);
    assert_eq!(actives(&by_t, "Base"), ["A", "B", "B"]);
}

#[test]
fn groups_choose_a_sub_machine_entry() {
    // The entry picks `Fast` when either group holds, `Slow` otherwise.
    let g = graph(
        &format!(
            r#"{{ "name": "START" }}, {{ "name": "A" }},
               {{ "name": "M", "states": [{{ "name": "START" }}, {{ "name": "Slow" }}, {{ "name": "Fast" }}],
                 "transitions": [
                   {{ "from": "START", "to": "Fast", "conditionGroups": [[{a}], [{b}]] }},
                   {{ "from": "START", "to": "Slow", "priority": 1 }}] }}"#,
            a = is_true("a"),
            b = is_true("b")
        ),
        &format!(
            r#"{{ "from": "START", "to": "A" }}, {{ "from": "A", "to": "M", "conditions": [{}] }}"#,
            is_true("go")
        ),
        &[param("go", "BOOLEAN", "false"), param("a", "BOOLEAN", "false"), param("b", "BOOLEAN", "false")].join(", "),
    );
    assert_eq!(run(&g, r#"{ "go": true, "b": true }"#), ["A", "M.Fast", "M.Fast"]);
    assert_eq!(run(&g, r#"{ "go": true }"#), ["A", "M.Slow", "M.Slow"]);
}

fn shape_error(json: &str) -> (String, String) {
    match CompiledGraph::from_json(json) {
        Err(GraphError::Shape { path, message }) => (path, message),
        other => panic!("expected a shape error, got {other:?}"),
    }
}

fn with_groups(groups: &str) -> String {
    abc(&format!(r#"{{ "from": "A", "to": "B", "conditionGroups": {groups} }}"#), &param("a", "BOOLEAN", "false"))
}

#[test]
fn malformed_groups_say_where_and_what() {
    let (path, message) = shape_error(&with_groups("[]"));
    assert_eq!(path, "layers[0].transitions[1].conditionGroups");
    assert!(message.contains("non-empty array of groups"), "{message}");

    let (path, _) = shape_error(&with_groups(r#"{ "0": [] }"#));
    assert_eq!(path, "layers[0].transitions[1].conditionGroups");

    let (path, message) = shape_error(&with_groups(&format!("[[{}], []]", is_true("a"))));
    assert_eq!(path, "layers[0].transitions[1].conditionGroups[1]");
    assert!(message.contains("non-empty array of conditions"), "{message}");

    let (path, message) = shape_error(&with_groups(&format!("[[{}], {}]", is_true("a"), is_true("a"))));
    assert_eq!(path, "layers[0].transitions[1].conditionGroups[1]", "{message}");

    let (path, message) = shape_error(&with_groups(
        r#"[[{ "parameterName": "a", "predicate": "EQUAL_TO", "value": true }, { "parameterName": "a", "predicate": "MAYBE", "value": true }]]"#,
    ));
    assert_eq!(path, "layers[0].transitions[1].conditionGroups[0][1]");
    assert!(message.contains("MAYBE"), "{message}");
}

#[test]
fn problems_inside_groups_name_the_group_and_condition() {
    let problems =
        graph_problems(&with_groups(&format!("[[{}], [{}, {}]]", is_true("a"), is_true("a"), is_true("missing"))));
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!((p.at.transition, p.at.group, p.at.condition), (Some(1), Some(1), Some(1)), "{p}");
    assert!(matches!(&p.kind, ProblemKind::UnknownParameter { name } if name == "missing"), "{p}");
    assert!(p.to_string().contains("condition group 1, condition 1"), "{p}");
}

#[test]
fn groups_count_towards_the_condition_limit() {
    let many = vec![is_true("a"); 17].join(", ");
    let problems = graph_problems(&abc(
        &format!(r#"{{ "from": "A", "to": "B", "conditions": [{many}], "conditionGroups": [[{many}]] }}"#),
        &param("a", "BOOLEAN", "false"),
    ));
    assert!(
        problems.iter().any(|p| matches!(p.kind, ProblemKind::TooMany { what: "conditions", count: 34, .. })),
        "{problems:?}"
    );
}

fn against(name: &str, predicate: &str, other: &str) -> String {
    format!(r#"{{ "parameterName": "{name}", "predicate": "{predicate}", "value": {{ "parameter": "{other}" }} }}"#)
}

#[test]
fn parameters_compare_with_parameters_of_their_type() {
    let floats = abc(
        &format!(r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#, against("speed", "GREATER_THAN", "target")),
        &[param("speed", "FLOAT", "0"), param("target", "FLOAT", "2")].join(", "),
    );
    assert_eq!(run(&floats, r#"{ "speed": 1.5 }"#), ["A", "A", "A"]);
    assert_eq!(run(&floats, r#"{ "speed": 2.0 }"#), ["A", "A", "A"], "equal is not greater");
    assert_eq!(run(&floats, r#"{ "speed": 2.5 }"#), ["A", "B", "B"]);
    assert_eq!(run(&floats, r#"{ "speed": 1.5, "target": 1.0 }"#), ["A", "B", "B"], "the other side moves too");

    let ints = abc(
        &format!(r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#, against("ammo", "EQUAL_TO", "capacity")),
        &[param("ammo", "INTEGER", "0"), param("capacity", "INTEGER", "30")].join(", "),
    );
    assert_eq!(run(&ints, r#"{ "ammo": 29 }"#), ["A", "A", "A"]);
    assert_eq!(run(&ints, r#"{ "ammo": 30 }"#), ["A", "B", "B"]);

    let bools = abc(
        &format!(r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#, against("left", "NOT_EQUAL_TO", "right")),
        &[param("left", "BOOLEAN", "false"), param("right", "BOOLEAN", "false")].join(", "),
    );
    assert_eq!(run(&bools, r#"{ "left": false }"#), ["A", "A", "A"]);
    assert_eq!(run(&bools, r#"{ "right": true }"#), ["A", "B", "B"]);
}

#[test]
fn parameter_comparisons_work_inside_groups() {
    let g = abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditionGroups": [[{}], [{}]] }}"#,
            against("speed", "GREATER_THAN", "target"),
            is_true("b")
        ),
        &[param("speed", "FLOAT", "0"), param("target", "FLOAT", "2"), param("b", "BOOLEAN", "false")].join(", "),
    );
    assert_eq!(run(&g, r#"{ "speed": 1.0 }"#), ["A", "A", "A"]);
    assert_eq!(run(&g, r#"{ "speed": 3.0 }"#), ["A", "B", "B"]);
    assert_eq!(run(&g, r#"{ "b": true }"#), ["A", "B", "B"]);
}

#[test]
fn compared_parameters_of_different_types_are_refused() {
    let params = [
        param("speed", "FLOAT", "0"),
        param("count", "INTEGER", "0"),
        param("flag", "BOOLEAN", "false"),
        param("other", "BOOLEAN", "false"),
    ]
    .join(", ");
    let problems = graph_problems(&abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "conditions": [{}, {}, {}, {}] }}"#,
            against("speed", "GREATER_THAN", "count"),
            against("flag", "EQUAL_TO", "count"),
            against("flag", "LESS_THAN", "other"),
            against("speed", "EQUAL_TO", "nowhere"),
        ),
        &params,
    ));
    assert_eq!(problems.len(), 4, "{problems:?}");
    let compared = |i: usize, left: &str, right: &str| {
        let p = &problems[i];
        assert_eq!((p.at.transition, p.at.condition), (Some(1), Some(i)), "{p}");
        match &p.kind {
            ProblemKind::ComparedParameters { parameter_type, other_type, .. } => {
                assert_eq!((*parameter_type, *other_type), (left, right), "{p}");
            }
            other => panic!("{other:?}"),
        }
    };
    compared(0, "FLOAT", "INTEGER");
    compared(1, "BOOLEAN", "INTEGER");
    compared(2, "BOOLEAN", "BOOLEAN");
    assert!(matches!(&problems[3].kind, ProblemKind::UnknownParameter { name } if name == "nowhere"), "{problems:?}");

    let (path, _) = shape_error(&abc(
        r#"{ "from": "A", "to": "B", "conditions": [{ "parameterName": "speed", "predicate": "EQUAL_TO", "value": { "parameter": "speed", "scale": 2 } }] }"#,
        &params,
    ));
    assert_eq!(path, "layers[0].transitions[1].conditions[0]");
}

/// `y` of CSS's `cubic-bezier(x1, y1, x2, y2)` at `x`, from 50-digit decimal bisection (Python's
/// `decimal`, 200 halvings), for the points 0.1, 0.25, 0.5, 0.75, 0.9.
const EASE: [(f32, f64); 5] = [
    (0.1, 0.094_796_305_716_043_25),
    (0.25, 0.408_510_591_355_395_9),
    (0.5, 0.802_403_387_584_857),
    (0.75, 0.960_458_978_348_974_1),
    (0.9, 0.994_316_477_484_556_4),
];
const EASE_IN_OUT: [(f32, f64); 5] = [
    (0.1, 0.019_722_453_548_311_2),
    (0.25, 0.129_161_931_047_319_8),
    (0.5, 0.5),
    (0.75, 0.870_838_068_952_680_2),
    (0.9, 0.980_277_546_451_688_8),
];

#[test]
fn cubic_bezier_matches_css_at_known_points() {
    let ease = CubicBezier::new(0.25, 0.1, 0.25, 1.0).unwrap();
    let ease_in_out = CubicBezier::new(0.42, 0.0, 0.58, 1.0).unwrap();
    for (curve, table) in [(ease, EASE), (ease_in_out, EASE_IN_OUT)] {
        for (x, y) in table {
            let got = curve.apply(x);
            assert!((f64::from(got) - y).abs() <= 1e-6, "{curve:?} at {x}: {got}, CSS {y}");
        }
        assert_eq!(curve.apply(0.0), 0.0);
        assert_eq!(curve.apply(1.0), 1.0);
        assert_eq!(curve.apply(-3.0), 0.0, "clamped below");
        assert_eq!(curve.apply(7.0), 1.0, "clamped above");
        assert_eq!(curve.apply(f32::NAN), 0.0, "NaN progress reads as the start");
    }
    // Control points on the diagonal make the identity.
    let diagonal = CubicBezier::new(0.3, 0.3, 0.8, 0.8).unwrap();
    let worst = largest((0..=1000).map(|i| i as f32 / 1000.0).map(|x| (diagonal.apply(x) - x).abs()));
    assert!(worst <= 1e-6, "diagonal curve off the identity by {worst}");
}

#[test]
fn cubic_bezier_is_monotone_and_nan_free_at_the_extremes() {
    let corners = [0.0, 1.0, 0.5, 1e-7, 1.0 - 1e-7];
    for &x1 in &corners {
        for &y1 in &corners {
            for &x2 in &corners {
                for &y2 in &corners {
                    let curve = CubicBezier::new(x1, y1, x2, y2).unwrap();
                    let mut last = 0.0_f32;
                    for i in 0..=2000 {
                        let y = curve.apply(i as f32 / 2000.0);
                        assert!((0.0..=1.0).contains(&y), "{curve:?} at step {i}: {y}");
                        assert!(y >= last, "{curve:?} falls at step {i}: {last} then {y}");
                        last = y;
                    }
                    assert_eq!(last, 1.0, "{curve:?}");
                }
            }
        }
    }
    for bad in [[1.5, 0.0, 0.5, 1.0], [0.0, -0.1, 0.5, 1.0], [0.0, 0.0, f32::NAN, 1.0], [0.0, 0.0, 0.5, f32::INFINITY]]
    {
        assert!(CubicBezier::new(bad[0], bad[1], bad[2], bad[3]).is_none(), "{bad:?}");
    }
}

fn eased_graph(easing: &str) -> String {
    abc(
        &format!(
            r#"{{ "from": "A", "to": "B", "time": 1.0, "conditions": [{}],
                 "switch": {{ "mode": "crossfade", "easing": {easing} }} }}"#,
            is_true("go")
        ),
        &param("go", "BOOLEAN", "false"),
    )
}

#[test]
fn cubic_bezier_easing_loads_and_shapes_the_crossfade() {
    let graph = Arc::new(CompiledGraph::from_json(&eased_graph(r#"{ "cubicBezier": [0.25, 0.1, 0.25, 1] }"#)).unwrap());
    let Easing::CubicBezier(curve) = graph.transitions()[1].easing else {
        panic!("{:?}", graph.transitions()[1].easing);
    };
    assert_eq!(curve.points(), [0.25, 0.1, 0.25, 1.0]);

    let mut crowd = Crowd::new();
    let arch = crowd.add_archetype(Archetype::new(graph, |_| Some(ClipBinding { clip: 0, duration_s: 1.0 })).unwrap());
    let who = crowd.spawn(arch).unwrap();
    crowd.update(0.25).unwrap();
    let go = crowd.param(arch, "go").unwrap();
    crowd.set_bool(go, &[who], &[true]).unwrap();
    crowd.update(0.25).unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        crowd.update(0.25).unwrap();
        let p = crowd.programs(arch).unwrap()[0];
        seen.push((p.progress, p.target_weight));
    }
    let expected = [(0.25, EASE[1].1), (0.5, EASE[2].1), (0.75, EASE[3].1)];
    for ((progress, weight), (p, w)) in seen.iter().zip(expected) {
        assert_eq!(*progress, p, "{seen:?}");
        assert!((f64::from(*weight) - w).abs() <= 1e-6, "progress {p}: weight {weight}, CSS {w}; {seen:?}");
    }
}

#[test]
fn cubic_bezier_out_of_bounds_is_refused() {
    for bad in ["[1.2, 0, 0.5, 1]", "[0.2, 0, -0.5, 1]", "[0.2, 1.5, 0.5, 1]"] {
        let problems = graph_problems(&eased_graph(&format!(r#"{{ "cubicBezier": {bad} }}"#)));
        assert_eq!(problems.len(), 1, "{bad}: {problems:?}");
        assert_eq!(problems[0].at.transition, Some(1), "{bad}");
        assert!(
            matches!(&problems[0].kind, ProblemKind::BadSwitch { message } if message.contains("cubicBezier")),
            "{bad}: {problems:?}"
        );
    }
    let (path, _) = shape_error(&eased_graph(r#"{ "cubicBezier": [0.2, 0, 0.5] }"#));
    assert_eq!(path, "layers[0].transitions[1].switch");
}
