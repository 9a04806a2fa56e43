//! Hostile graphs (issue #25): counts far over their limits are refused by the count check
//! before any per-element work, values built in code nested 100,000 levels deep are refused
//! without recursing, names whose dots spell another entry's path are refused naming both,
//! and a state cannot be a blend tree and a sub-machine at once.

use serde_json::{Map, Value};
use throng::graph::format::GraphDesc;
use throng::graph::fuzzing::drop_value;
use throng::graph::{CompiledGraph, GraphError, GraphProblem, MAX_JSON_DEPTH, ProblemKind};

mod support;
use support::graph_problems;

const HUGE: usize = 100_000;

/// Every problem is a count problem, and one counts `what` at `count`. Each input names its
/// elements alike, so a check that ran per element first would report duplicates or unknown
/// names (and take quadratic time over a blend tree's children) before the count.
fn only_too_many(problems: &[GraphProblem], what: &str, count: usize) {
    assert!(
        problems.iter().all(|p| matches!(p.kind, ProblemKind::TooMany { .. })),
        "{:?}",
        &problems[..problems.len().min(4)]
    );
    assert!(
        problems
            .iter()
            .any(|p| matches!(p.kind, ProblemKind::TooMany { what: w, count: c, .. } if w == what && c == count)),
        "no {what} count of {count} in {problems:?}"
    );
}

fn layer(states: &str, transitions: &str, parameters: &str) -> String {
    format!(
        r#"{{ "layers": [{{ "name": "Base", "states": [{states}], "transitions": [{transitions}] }}], "parameters": {{ {parameters} }} }}"#
    )
}

fn repeat(item: &str, n: usize) -> String {
    vec![item; n].join(",")
}

#[test]
fn a_blend_tree_of_100k_children_is_refused_by_its_count() {
    let children = repeat(r#"{ "name": "Walk", "point": 0 }"#, HUGE);
    let text = layer(
        &format!(
            r#"{{ "name": "START" }}, {{ "name": "Move", "blendTree": {{ "type": "1D", "parameter": "speed", "children": [{children}] }} }}"#
        ),
        r#"{ "from": "START", "to": "Move" }"#,
        r#""speed": { "type": "FLOAT" }"#,
    );
    let p = graph_problems(&text);
    only_too_many(&p, "children in one blend tree", HUGE);
    only_too_many(&p, "clips in one state", HUGE);
    assert!(p.iter().all(|p| p.at.state.as_deref() == Some("Move")), "{p:?}");
}

#[test]
fn other_counts_far_over_their_limits_are_refused_by_their_count() {
    let start = r#"{ "name": "START" }, { "name": "A" }"#;
    let entry = r#"{ "from": "START", "to": "A" }"#;
    // States all named S: per-element checks would report 99,999 duplicates.
    only_too_many(&graph_problems(&layer(&repeat(r#"{ "name": "S" }"#, HUGE), "", "")), "states", HUGE);
    // Transitions between states that do not exist: 200,000 unknown names.
    let transitions = repeat(r#"{ "from": "X", "to": "X" }"#, HUGE);
    only_too_many(&graph_problems(&layer(start, &transitions, "")), "transitions", HUGE);
    // Conditions on parameters that do not exist.
    let conditions = repeat(r#"{ "parameterName": "nope", "predicate": "EQUAL_TO", "value": 1 }"#, HUGE);
    let text = layer(start, &format!(r#"{{ "from": "START", "to": "A", "conditions": [{conditions}] }}"#), "");
    let p = graph_problems(&text);
    only_too_many(&p, "conditions", HUGE);
    assert_eq!(p[0].at.transition, Some(0));
    // Parameters all named p, with defaults that do not suit their type.
    let parameters: Vec<String> =
        (0..HUGE).map(|i| format!(r#""{i}": {{ "name": "p", "type": "TRIGGER", "value": 3 }}"#)).collect();
    let p = graph_problems(&layer(start, entry, &parameters.join(",")));
    only_too_many(&p, "parameters", HUGE);
    only_too_many(&p, "TRIGGER parameters", HUGE);
    // Layers all named Base.
    let one = r#"{ "name": "Base", "states": [{ "name": "START" }] }"#;
    only_too_many(&graph_problems(&format!(r#"{{ "layers": [{}] }}"#, repeat(one, HUGE))), "layers", HUGE);
}

/// `inner` wrapped `levels` times by `wrap`, built iteratively.
fn nest(levels: usize, inner: Value, wrap: impl Fn(Value) -> Value) -> Value {
    (0..levels).fold(inner, |v, _| wrap(v))
}

/// An object of `entries`. Built by hand: `json!` serializes the values it interpolates,
/// which recurses through a deep value.
fn obj(entries: Vec<(&str, Value)>) -> Value {
    Value::Object(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
}

fn arr(item: Value) -> Value {
    Value::Array(vec![item])
}

fn s(text: &str) -> Value {
    Value::from(text)
}

/// A graph of one layer `Base` whose states are `[state]`.
fn one_state(state: Value) -> Value {
    obj(vec![("layers", arr(obj(vec![("name", s("Base")), ("states", arr(state))])))])
}

/// Reads `value`, expecting the depth error at a path starting `prefix`, then takes the value
/// apart without recursing.
fn refused_as_too_deep(value: Value, prefix: &str) {
    let result = GraphDesc::from_value(&value);
    drop_value(value);
    match result {
        Err(GraphError::TooDeep { path, limit }) => {
            assert_eq!(limit, MAX_JSON_DEPTH);
            assert!(path.starts_with(prefix), "{path}");
        }
        other => panic!("expected TooDeep, got {other:?}"),
    }
}

#[test]
fn values_nested_100k_levels_deep_are_refused_without_recursing() {
    let machines = nest(HUGE, obj(vec![("name", s("Idle"))]), |v| obj(vec![("name", s("Combat")), ("states", arr(v))]));
    refused_as_too_deep(one_state(machines), "layers[0].states[0].states[0].states[0]");

    let tree = |children| obj(vec![("type", s("1D")), ("parameter", s("speed")), ("children", arr(children))]);
    let leaf = obj(vec![("name", s("Walk")), ("point", Value::from(0))]);
    let children = nest(HUGE, leaf, |v| {
        let Value::Object(mut child) = tree(v) else { unreachable!() };
        child.insert("name".to_owned(), s("Move"));
        Value::Object(child)
    });
    let state = obj(vec![("name", s("Move")), ("blendTree", tree(children))]);
    refused_as_too_deep(one_state(state), "layers[0].states[0].blendTree.children[0].children[0]");

    // Depth anywhere counts, even under a key the reader ignores.
    let junk = nest(HUGE, Value::Null, arr);
    refused_as_too_deep(obj(vec![("layers", Value::Array(Vec::new())), ("junk", junk)]), "junk[0][0]");
}

#[test]
fn the_depth_limit_counts_every_array_and_object() {
    // The root object is level 1, so `junk` may hold MAX_JSON_DEPTH - 1 nested arrays.
    let graph = |junk| obj(vec![("layers", Value::Array(Vec::new())), ("junk", junk)]);
    assert!(GraphDesc::from_value(&graph(nest(MAX_JSON_DEPTH - 1, Value::Null, arr))).is_ok());
    let past = graph(nest(MAX_JSON_DEPTH, Value::Null, arr));
    let path = format!("junk{}", "[0]".repeat(MAX_JSON_DEPTH - 1));
    assert_eq!(GraphDesc::from_value(&past), Err(GraphError::TooDeep { path, limit: MAX_JSON_DEPTH }));
}

/// The only problem of `text` is an ambiguous `path` naming `first` and `second`.
fn ambiguous(text: &str, path: &str, first: &str, second: &str) {
    let p = graph_problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    match &p[0].kind {
        ProblemKind::AmbiguousPath { path: got, first: f, second: s } => {
            assert_eq!((got.as_str(), f.as_str(), s.as_str()), (path, first, second));
        }
        other => panic!("{other:?}"),
    }
    let message = GraphError::Invalid { problems: p }.to_string();
    assert!(message.contains(first) && message.contains(second), "{message}");
}

const MOVE: &str = r#"{ "name": "Move", "blendTree": { "type": "1D", "parameter": "speed",
    "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] } }"#;
const COMBAT: &str = r#"{ "name": "Combat", "states": [{ "name": "START" }, { "name": "Aim" }],
    "transitions": [{ "from": "START", "to": "Aim" }] }"#;
const SPEED: &str = r#""speed": { "type": "FLOAT" }"#;

#[test]
fn a_dotted_state_name_beside_a_blend_child_of_that_path_is_refused() {
    let entry = r#"{ "from": "START", "to": "Move" }"#;
    let text = layer(&format!(r#"{{ "name": "START" }}, {{ "name": "Move.Walk" }}, {MOVE}"#), entry, SPEED);
    ambiguous(&text, "Move.Walk", r#"state "Move.Walk""#, r#"blend child "Walk" of "Move""#);
    // Either order.
    let text = layer(&format!(r#"{{ "name": "START" }}, {MOVE}, {{ "name": "Move.Walk" }}"#), entry, SPEED);
    ambiguous(&text, "Move.Walk", r#"blend child "Walk" of "Move""#, r#"state "Move.Walk""#);
}

#[test]
fn a_dotted_state_name_beside_a_sub_machine_state_of_that_path_is_refused() {
    let entry = r#"{ "from": "START", "to": "Combat" }"#;
    let text = layer(&format!(r#"{{ "name": "START" }}, {{ "name": "Combat.Aim" }}, {COMBAT}"#), entry, "");
    ambiguous(&text, "Combat.Aim", r#"state "Combat.Aim""#, r#"state "Aim" of sub-machine "Combat""#);
}

#[test]
fn dotted_names_that_spell_no_other_path_still_load() {
    // PlayCanvas allows any name; only a collision makes a path ambiguous.
    let text = layer(
        &format!(r#"{{ "name": "START" }}, {{ "name": "Move.Jog" }}, {{ "name": "Combat.Idle" }}, {MOVE}, {COMBAT}"#),
        r#"{ "from": "START", "to": "Move" }"#,
        SPEED,
    );
    let graph = CompiledGraph::from_json(&text).unwrap();
    let paths: Vec<&str> = graph.leaves().iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, ["Move.Jog", "Combat.Idle", "Move.Walk", "Move.Run", "Combat.Aim"]);
    // The same path in two layers is two entries, one per layer.
    let two = r#"{ "layers": [
        { "name": "Base", "states": [{ "name": "START" }, { "name": "Idle" }], "transitions": [{ "from": "START", "to": "Idle" }] },
        { "name": "Upper", "states": [{ "name": "START" }, { "name": "Idle" }], "transitions": [{ "from": "START", "to": "Idle" }] }
    ] }"#;
    assert!(CompiledGraph::from_json(two).is_ok());
}

#[test]
fn a_state_with_a_blend_tree_and_a_sub_machine_is_refused() {
    let both = r#"{ "name": "Move", "blendTree": { "type": "1D", "parameter": "speed",
        "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] },
        "states": [{ "name": "START" }, { "name": "Aim" }], "transitions": [{ "from": "START", "to": "Aim" }] }"#;
    let text = layer(&format!(r#"{{ "name": "START" }}, {both}"#), r#"{ "from": "START", "to": "Move" }"#, SPEED);
    let p = graph_problems(&text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].kind, ProblemKind::TreeAndMachine);
    assert_eq!(p[0].at.state.as_deref(), Some("Move"));
    assert!(p[0].to_string().contains(r#"state "Move""#), "{}", p[0]);
}
