//! Loading state graphs: both PlayCanvas forms, throng's extensions, and validation errors
//! that say where they are.

use throng::graph::{
    CompiledGraph, GraphError, GraphProblem, Inertialization, LayerBlend, LayerSpace, MAX_TRIGGERS, ProblemKind,
    SwitchMode,
};

mod support;
use support::graph_problems;

const RUNTIME_FORM: &str = r#"{
    "layers": [{
        "name": "Base",
        "states": [
            { "name": "START" },
            { "name": "Idle", "loop": true },
            { "name": "Move", "speed": 1.5, "blendTree": { "type": "1D", "parameter": "speed", "children": [
                { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0, "speed": 1.2 } ] } },
            { "name": "ANY" }
        ],
        "transitions": [
            { "from": "START", "to": "Idle" },
            { "from": "Idle", "to": "Move", "time": 0.2, "priority": 1, "interruptionSource": "NEXT_STATE",
              "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 },
                             { "parameterName": "crouch", "predicate": "EQUAL_TO", "value": false }] },
            { "from": "Move", "to": "Idle", "time": 0.2, "exitTime": 0.5, "transitionOffset": 0.25,
              "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN_EQUAL_TO", "value": 0.5 }] }
        ]
    }, {
        "name": "Upper", "blendType": "ADDITIVE", "weight": 0.5,
        "states": [ { "name": "START" }, { "name": "Rest" }, { "name": "Wave", "loop": false }, { "name": "END" } ],
        "transitions": [
            { "from": "START", "to": "Rest" },
            { "from": "Rest", "to": "Wave", "time": 0.1, "conditions": [{ "parameterName": "wave", "predicate": "EQUAL_TO", "value": true }] },
            { "from": "Wave", "to": "END", "time": 0.3, "exitTime": 1 }
        ]
    }],
    "parameters": {
        "speed": { "name": "speed", "type": "FLOAT", "value": 0 },
        "crouch": { "name": "crouch", "type": "BOOLEAN", "value": false },
        "wave": { "name": "wave", "type": "TRIGGER", "value": false }
    }
}"#;

/// The same graph as the PlayCanvas editor stores it: everything keyed by id, `from`/`to`
/// as state ids, conditions as an object (with an unfinished, parameterless one to skip).
const EDITOR_FORM: &str = r#"{
    "layers": {
        "0": { "name": "Base", "states": [0, 1, 2, 3], "transitions": [0, 1, 2] },
        "1": { "name": "Upper", "blendType": "ADDITIVE", "weight": 0.5, "states": [4, 5, 6, 7], "transitions": [3, 4, 5] }
    },
    "states": {
        "0": { "name": "START", "speed": 1, "posX": 10, "posY": 20 },
        "1": { "name": "Idle", "speed": 1, "loop": true },
        "2": { "name": "Move", "speed": 1.5, "blendTree": { "type": "1D", "parameter": "speed", "children": [
                { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0, "speed": 1.2 } ] } },
        "3": { "name": "ANY" },
        "4": { "name": "START" },
        "5": { "name": "Rest" },
        "6": { "name": "Wave", "loop": false },
        "7": { "name": "END" }
    },
    "transitions": {
        "0": { "from": 0, "to": 1, "conditions": {} },
        "1": { "from": 1, "to": 2, "time": 0.2, "priority": 1, "interruptionSource": "NEXT_STATE", "conditions": {
                "0": { "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 },
                "1": { "parameterName": "crouch", "predicate": "EQUAL_TO", "value": false },
                "2": { "predicate": "GREATER_THAN" } } },
        "2": { "from": 2, "to": 1, "time": 0.2, "exitTime": 0.5, "transitionOffset": 0.25, "conditions": {
                "0": { "parameterName": "speed", "predicate": "LESS_THAN_EQUAL_TO", "value": 0.5 } } },
        "3": { "from": 4, "to": 5 },
        "4": { "from": 5, "to": 6, "time": 0.1, "conditions": { "0": { "parameterName": "wave", "predicate": "EQUAL_TO", "value": true } } },
        "5": { "from": 6, "to": 7, "time": 0.3, "exitTime": 1 }
    },
    "parameters": {
        "0": { "name": "speed", "type": "FLOAT", "value": 0 },
        "1": { "name": "wave", "type": "TRIGGER", "value": false },
        "2": { "name": "crouch", "type": "BOOLEAN", "value": false }
    }
}"#;

#[test]
fn both_playcanvas_forms_compile_to_the_same_graph() {
    let runtime = CompiledGraph::from_json(RUNTIME_FORM).unwrap();
    let editor = CompiledGraph::from_json(EDITOR_FORM).unwrap();
    assert_eq!(runtime, editor);
    assert_eq!(runtime.layers().len(), 2);
    assert_eq!(runtime.layers()[1].blend, LayerBlend::Additive);
    assert_eq!(runtime.layers()[1].weight, 0.5);
    let leaves: Vec<&str> = runtime.leaves().iter().map(|l| l.path.as_str()).collect();
    assert_eq!(leaves, ["Idle", "Move.Walk", "Move.Run", "Rest", "Wave"]);
    let t = runtime.transitions().iter().find(|t| t.exit_time == 0.5).unwrap();
    assert_eq!((t.offset, t.conditions.len()), (0.25, 1));
    assert_eq!(t.switch, SwitchMode::Crossfade, "PlayCanvas graphs crossfade by default");
}

#[test]
fn extensions_are_parsed_and_stored() {
    let g = CompiledGraph::from_json(
        r#"{ "defaultSwitch": { "mode": "inertialize", "spring": { "halflife": 0.08 } },
            "layers": [{ "name": "Upper", "blendType": "OVERWRITE", "space": "mesh",
              "mask": { "spine": 0.5, "arm_r": 1.0 },
              "states": [{ "name": "START" }, { "name": "A" }, { "name": "B" }],
              "transitions": [
                { "from": "START", "to": "A" },
                { "from": "A", "to": "B", "time": 0.5, "durationUnit": "normalized", "exitTime": 0.9,
                  "switch": { "mode": "crossfade", "easing": "smoothstep" } },
                { "from": "B", "to": "B", "time": 0.2, "exitTime": 0.5, "switch": { "mode": "inertialize", "quintic": { "overshootControl": true } } },
                { "from": "B", "to": "A", "time": 0.2, "exitTime": 0.95, "switch": "frozen" },
                { "from": "A", "to": "A", "time": 0.2, "exitTime": 0.5 } ] }] }"#,
    )
    .unwrap();
    let layer = &g.layers()[0];
    assert_eq!(layer.space, LayerSpace::Mesh);
    assert_eq!(layer.mask_weights(&["hips", "spine", "arm_r"]).unwrap(), [0.0, 0.5, 1.0]);
    assert_eq!(layer.mask_weights(&["hips"]).unwrap_err(), "arm_r");
    let t = |i: u32| g.transitions().iter().find(|t| t.index == i).unwrap();
    assert!(t(1).normalized);
    assert_eq!(t(1).easing, throng::graph::Easing::Smoothstep);
    assert!(t(2).self_transition);
    assert_eq!(t(2).switch, SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: true }));
    assert_eq!(t(3).switch, SwitchMode::Frozen);
    assert_eq!(t(4).switch, SwitchMode::Inertialize(Inertialization::Spring { halflife_s: 0.08 }), "graph default");
}

fn has(problems: &[GraphProblem], pred: impl Fn(&GraphProblem) -> bool, what: &str) {
    assert!(problems.iter().any(pred), "missing: {what}\nall problems:\n{problems:#?}");
}

#[test]
fn validation_reports_every_problem_with_where_it_is() {
    let p = graph_problems(
        r#"{ "layers": [{ "name": "Base",
              "states": [ { "name": "START" }, { "name": "A", "speed": 0 }, { "name": "B" }, { "name": "B" },
                          { "name": "ANY" }, { "name": "END" },
                          { "name": "Sub", "states": [{ "name": "START" }, { "name": "X" }],
                            "transitions": [{ "from": "START", "to": "X",
                               "conditions": [{ "parameterName": "flag", "predicate": "EQUAL_TO", "value": true }] }] } ],
              "transitions": [
                { "from": "START", "to": "A" },
                { "from": "A", "to": "Nowhere" },
                { "from": "A", "to": "B", "conditions": [{ "parameterName": "nope", "predicate": "EQUAL_TO", "value": 1 }] },
                { "from": "A", "to": "B", "conditions": [{ "parameterName": "flag", "predicate": "GREATER_THAN", "value": true }] },
                { "from": "A", "to": "ANY" },
                { "from": "END", "to": "A" },
                { "from": "B", "to": "A", "time": -1 },
                { "from": "A", "to": "B", "exitTime": 0.5 },
                { "from": "B", "to": "A", "transitionOffset": 1.5 },
                { "from": "B", "to": "A", "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN", "value": true }] } ] },
            { "name": "Base", "states": [{ "name": "START" }, { "name": "Z" }], "transitions": [{ "from": "START", "to": "Z" }] }],
          "parameters": { "flag": { "name": "flag", "type": "BOOLEAN" }, "speed": { "name": "speed", "type": "FLOAT", "value": true } } }"#,
    );
    let at =
        |p: &GraphProblem, layer: &str, t: Option<usize>| p.at.layer.as_deref() == Some(layer) && p.at.transition == t;
    has(
        &p,
        |p| {
            matches!(&p.kind, ProblemKind::DuplicateName { what: "state", name } if name == "B")
                && p.at.state.as_deref() == Some("B")
        },
        "duplicate state",
    );
    has(&p, |p| matches!(&p.kind, ProblemKind::DuplicateName { what: "layer", .. }), "duplicate layer");
    has(
        &p,
        |p| matches!(&p.kind, ProblemKind::UnknownState { name } if name == "Nowhere") && at(p, "Base", Some(1)),
        "unknown state",
    );
    has(
        &p,
        |p| {
            matches!(&p.kind, ProblemKind::UnknownParameter { name } if name == "nope")
                && at(p, "Base", Some(2))
                && p.at.condition == Some(0)
        },
        "unknown parameter",
    );
    has(
        &p,
        |p| matches!(p.kind, ProblemKind::ConditionType { parameter_type: "BOOLEAN", .. }) && at(p, "Base", Some(3)),
        "ordered boolean",
    );
    has(&p, |p| p.kind == ProblemKind::TransitionToAny && at(p, "Base", Some(4)), "to ANY");
    has(&p, |p| p.kind == ProblemKind::TransitionFromEnd && at(p, "Base", Some(5)), "from END");
    has(&p, |p| matches!(p.kind, ProblemKind::BadDuration { .. }) && at(p, "Base", Some(6)), "negative duration");
    has(
        &p,
        |p| matches!(p.kind, ProblemKind::UnreachableExitTime { .. }) && at(p, "Base", Some(7)),
        "exit time on a speed-0 state",
    );
    has(&p, |p| matches!(p.kind, ProblemKind::BadOffset { .. }) && at(p, "Base", Some(8)), "offset");
    has(
        &p,
        |p| matches!(p.kind, ProblemKind::ConditionType { parameter_type: "FLOAT", .. }) && at(p, "Base", Some(9)),
        "float vs bool",
    );
    has(
        &p,
        |p| matches!(p.kind, ProblemKind::ParameterDefault { .. }) && p.at.parameter.as_deref() == Some("speed"),
        "default value type",
    );
    has(
        &p,
        |p| p.kind == ProblemKind::NoAlwaysTakableEntry && p.at.machine.as_deref() == Some("Sub"),
        "hovering sub-machine entry",
    );
    let message = CompiledGraph::from_json("{\"layers\": []}").unwrap_err().to_string();
    assert!(message.contains("no layers"), "{message}");
}

#[test]
fn zero_duration_unconditional_cycles_are_refused() {
    let p = graph_problems(
        r#"{ "layers": [{ "name": "Base",
              "states": [{ "name": "START" }, { "name": "A" }, { "name": "B" }, { "name": "C" }],
              "transitions": [
                { "from": "START", "to": "A" },
                { "from": "A", "to": "B" },
                { "from": "B", "to": "C", "time": 0 },
                { "from": "C", "to": "A" } ] }] }"#,
    );
    has(
        &p,
        |p| {
            matches!(&p.kind, ProblemKind::ZeroDurationCycle { states } if states.len() == 3)
                && p.at.layer.as_deref() == Some("Base")
        },
        "A → B → C → A",
    );
    // The same loop with a blend time, or with a condition anywhere, is fine.
    let blended = r#"{ "layers": [{ "name": "Base",
              "states": [{ "name": "START" }, { "name": "A" }, { "name": "B" }],
              "transitions": [ { "from": "START", "to": "A" }, { "from": "A", "to": "B", "time": 0.1 }, { "from": "B", "to": "A" } ] }] }"#;
    assert!(CompiledGraph::from_json(blended).is_ok());
}

#[test]
fn malformed_json_says_where() {
    match CompiledGraph::from_json("{ \"layers\": [ }") {
        Err(GraphError::Json { line: 1, column, .. }) => assert!(column > 10),
        other => panic!("{other:?}"),
    }
    let err = CompiledGraph::from_json(
        r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }],
             "transitions": [{ "from": "START", "to": "A" }, { "from": "A", "to": "B", "interruptionSource": "SOMETIMES" }] }] }"#,
    )
    .unwrap_err();
    match err {
        GraphError::Shape { path, message } => {
            assert_eq!(path, "layers[0].transitions[1]");
            assert!(message.contains("SOMETIMES"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn limits_are_errors() {
    let params: Vec<String> =
        (0..=MAX_TRIGGERS).map(|i| format!(r#""t{i}": {{ "name": "t{i}", "type": "TRIGGER" }}"#)).collect();
    let p = graph_problems(&format!(
        r#"{{ "layers": [{{ "name": "Base", "states": [{{ "name": "START" }}, {{ "name": "A" }}],
              "transitions": [{{ "from": "START", "to": "A" }}] }}], "parameters": {{ {} }} }}"#,
        params.join(",")
    ));
    has(&p, |p| matches!(p.kind, ProblemKind::TooMany { what: "TRIGGER parameters", .. }), "trigger limit");
}

/// The complete example in `docs/graph-format.md` loads.
#[test]
fn the_documented_example_loads() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/graph-format.md")).unwrap();
    let start = doc.find("## Complete example").expect("the doc has a complete example");
    let block = &doc[start..];
    let open = block.find("```json\n").unwrap() + "```json\n".len();
    let close = block[open..].find("```").unwrap();
    let graph = CompiledGraph::from_json(&block[open..open + close]).unwrap();
    assert_eq!(graph.layers().len(), 2);
    assert!(graph.machines().len() > 2, "the example shows a sub-state machine");
}

#[test]
fn default_state_comes_from_start_or_from_the_default_state_flag() {
    let flagged = CompiledGraph::from_json(
        r#"{ "layers": [{ "name": "Base", "states": [{ "name": "A" }, { "name": "B", "defaultState": true }], "transitions": [] }] }"#,
    )
    .unwrap();
    let entry = flagged.machines()[0].entry;
    let t = &flagged.transitions()[flagged.candidates()[entry.start as usize] as usize];
    assert_eq!(t.to, throng::graph::Target::State(1));
    let p = graph_problems(
        r#"{ "layers": [{ "name": "Base", "states": [{ "name": "A", "defaultState": true }, { "name": "B", "defaultState": true }] },
                        { "name": "Upper", "states": [{ "name": "A" }] }] }"#,
    );
    has(
        &p,
        |p| matches!(p.kind, ProblemKind::AmbiguousDefaultState { .. }) && p.at.layer.as_deref() == Some("Base"),
        "two defaults",
    );
    has(&p, |p| p.kind == ProblemKind::NoDefaultState && p.at.layer.as_deref() == Some("Upper"), "no default");
}

#[test]
fn blend_tree_problems_name_the_tree() {
    let p = graph_problems(
        r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" },
              { "name": "Face", "blendTree": { "type": "DIRECT", "parameters": ["smile"], "children": [{ "name": "A" }, { "name": "B" }] } },
              { "name": "Aim", "blendTree": { "type": "2D_GRID", "parameters": ["smile", "smile"], "children": [
                  { "name": "A", "point": [0, 0] }, { "name": "B", "point": [1, 0] }, { "name": "C", "point": [0, 1] } ] } },
              { "name": "Move", "blendTree": { "type": "1D", "parameter": "crouch", "children": [{ "name": "A", "point": 0 }, { "name": "A", "point": 1 }] } } ],
            "transitions": [{ "from": "START", "to": "Face" }] }],
          "parameters": { "smile": { "name": "smile", "type": "FLOAT" }, "crouch": { "name": "crouch", "type": "BOOLEAN" } } }"#,
    );
    let tree = |p: &GraphProblem, node: &str| matches!(&p.kind, ProblemKind::BlendTree { node: n, .. } if n == node);
    has(&p, |p| tree(p, "Face") && p.at.state.as_deref() == Some("Face"), "DIRECT needs one parameter per child");
    has(&p, |p| tree(p, "Aim"), "an incomplete grid");
    has(&p, |p| tree(p, "Move"), "duplicate child names");
    has(
        &p,
        |p| {
            matches!(p.kind, ProblemKind::BlendParameterType { parameter_type: "BOOLEAN" })
                && p.at.parameter.as_deref() == Some("crouch")
        },
        "a boolean cannot drive a blend tree",
    );
}
