//! The seed documents' state machines, run through the trace function.

mod support;

use std::sync::Arc;

use support::*;
use throng::graph::CompiledGraph;
use throng::program::LayerProgram;
use throng::state::{Archetype, ClipBinding, Crowd};

/// Seed 003's graph, exactly as PlayCanvas's manual lists it.
const SEED_003: &str = r#"{
    "layers": [{
        "name": "Base",
        "states": [
            { "name": "START" },
            { "name": "Idle", "loop": true, "defaultState": true },
            { "name": "Walk", "loop": true },
            { "name": "Jump", "loop": false },
            { "name": "ANY" },
            { "name": "END" }
        ],
        "transitions": [
            { "from": "START", "to": "Idle" },
            { "from": "Idle", "to": "Walk", "time": 0.2, "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }] },
            { "from": "Walk", "to": "Idle", "time": 0.2, "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN_EQUAL_TO", "value": 0.5 }] },
            { "from": "ANY", "to": "Jump", "time": 0.1, "conditions": [{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }] },
            { "from": "Jump", "to": "END", "time": 0.2, "exitTime": 1 }
        ]
    }],
    "parameters": {
        "speed": { "name": "speed", "type": "FLOAT", "value": 0 },
        "jump": { "name": "jump", "type": "TRIGGER", "value": false }
    }
}"#;

#[test]
fn seed_003_idle_walk_jump_and_back_through_end() {
    // dt 0.05 s: the 0.2 s blends take 4 updates, the 0.1 s jump blend 2, the 0.5 s jump 10.
    let lines = trace(
        SEED_003,
        r#"{ "Idle": 2.0, "Walk": 1.0, "Jump": 0.5 }"#,
        0.05,
        24,
        r#"{ "frame": 1, "set": { "speed": 1.2 } }, { "frame": 7, "trigger": ["jump"] }"#,
    );
    let mut expected = expect(&[("Idle", false, 1.0)]);
    expected.extend(expect(&[("Walk", true, 0.0), ("Walk", true, 0.25), ("Walk", true, 0.5), ("Walk", true, 0.75)]));
    expected.extend(repeat(("Walk", false, 1.0), 2));
    expected.extend(expect(&[("Jump", true, 0.0), ("Jump", true, 0.5)]));
    expected.extend(repeat(("Jump", false, 1.0), 8));
    // The jump ends on frame 17: END returns to START, so to Idle, with Jump's 0.2 s blend;
    // speed is still 1.2, so once that blend is over Idle leads on to Walk.
    expected.extend(expect(&[("Idle", true, 0.0), ("Idle", true, 0.25), ("Idle", true, 0.5), ("Idle", true, 0.75)]));
    expected.extend(expect(&[("Walk", true, 0.0), ("Walk", true, 0.25), ("Walk", true, 0.5)]));
    let got = steps(&lines);
    assert_eq!(got.len(), expected.len());
    for (frame, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.0, e.0, "frame {frame}");
        assert_eq!(g.1, e.1, "frame {frame}");
        assert!((g.2 - e.2).abs() < 1e-4, "frame {frame}: progress {} expected {}", g.2, e.2);
    }
    assert_eq!(lines[17].previous_state.as_deref(), Some("Jump"));
}

const ROBOT_ARM: &str = r#"{
    "layers": [{
        "name": "Base",
        "states": [
            { "name": "START" },
            { "name": "Idle", "loop": true },
            { "name": "Pick", "loop": false },
            { "name": "Place", "loop": false }
        ],
        "transitions": [
            { "from": "START", "to": "Idle" },
            { "from": "Idle", "to": "Pick", "time": 0.4, "conditions": [{ "parameterName": "work", "predicate": "EQUAL_TO", "value": true }] },
            { "from": "Pick", "to": "Place", "time": 0.4, "exitTime": 1 },
            { "from": "Place", "to": "Idle", "time": 0.4, "exitTime": 1 }
        ]
    }],
    "parameters": { "work": { "name": "work", "type": "TRIGGER", "value": false } }
}"#;

#[test]
fn seed_003_robot_arm_a_click_during_a_cycle_starts_another() {
    // Pick and Place last 1 s; dt 0.2 s. A second click during Pick stays set until Idle.
    let lines = trace(
        ROBOT_ARM,
        r#"{ "*": 1.0 }"#,
        0.2,
        16,
        r#"{ "frame": 0, "trigger": ["work"] }, { "frame": 2, "trigger": ["work"] }"#,
    );
    let a = actives(&lines, "Base");
    assert_eq!(&a[..5], ["Pick"; 5], "Pick runs its 1 s");
    assert_eq!(&a[5..10], ["Place"; 5], "Place follows by exit time 1");
    assert_eq!(&a[10..12], ["Idle"; 2], "back to Idle, blending 0.4 s");
    assert_eq!(&a[12..], ["Pick"; 4], "the second click, still set, starts another cycle");
}

#[test]
fn seed_000_jump_leaves_by_exit_time_so_its_blend_ends_as_the_clip_ends() {
    let blend_s = 0.25f32;
    let jump_s = 1.0f32;
    let g = format!(
        r#"{{ "layers": [{{ "name": "Base",
            "states": [
                {{ "name": "START" }}, {{ "name": "Idle" }}, {{ "name": "Jump", "loop": false }}, {{ "name": "ANY" }},
                {{ "name": "Move", "blendTree": {{ "type": "1D", "parameter": "speed", "children": [
                    {{ "name": "Idle", "point": 0.0 }}, {{ "name": "Walk", "point": 1.4 }}, {{ "name": "Run", "point": 4.0 }} ] }} }} ],
            "transitions": [
                {{ "from": "START", "to": "Idle" }},
                {{ "from": "Idle", "to": "Move", "time": {blend_s}, "conditions": [{{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.1 }}] }},
                {{ "from": "Move", "to": "Idle", "time": {blend_s}, "conditions": [{{ "parameterName": "speed", "predicate": "LESS_THAN_EQUAL_TO", "value": 0.1 }}] }},
                {{ "from": "ANY", "to": "Jump", "time": {blend_s}, "conditions": [{}] }},
                {{ "from": "Jump", "to": "Move", "time": {blend_s}, "exitTime": {exit},
                   "conditions": [{{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.1 }}] }},
                {{ "from": "Jump", "to": "Idle", "time": {blend_s}, "exitTime": {exit} }} ] }}],
          "parameters": {{ "speed": {{ "name": "speed", "type": "FLOAT" }}, "jump": {{ "name": "jump", "type": "TRIGGER" }} }} }}"#,
        is_true("jump"),
        exit = 1.0 - blend_s / jump_s,
    );
    let graph = Arc::new(CompiledGraph::from_json(&g).unwrap());
    let clip = |c, d| ClipBinding { clip: c, duration_s: d };
    let arch = Archetype::from_bindings(
        graph,
        &[
            ("Idle", clip(0, 2.0)),
            ("Jump", clip(1, jump_s)),
            ("Move.Idle", clip(0, 2.0)),
            ("Move.Walk", clip(2, 1.1)),
            ("Move.Run", clip(3, 0.7)),
        ],
    )
    .unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let hero = crowd.spawn(kind).unwrap();
    let speed = crowd.param(kind, "speed").unwrap();
    let jump = crowd.param(kind, "jump").unwrap();
    crowd.set_float(speed, &[hero], &[2.0]).unwrap();
    let dt = 1.0 / 64.0;
    for _ in 0..40 {
        crowd.update(dt).unwrap();
    }
    crowd.set_trigger(jump, &[hero], false).unwrap();
    let mut jump_blend_frames = 0;
    let mut ended = false;
    for _ in 0..200 {
        crowd.update(dt).unwrap();
        let r = crowd.readback(hero, 0).unwrap();
        let name = crowd.state_name(kind, r.active_state).unwrap();
        if name == "Move" && r.previous_state.and_then(|p| crowd.state_name(kind, p)) == Some("Jump") {
            let p: LayerProgram = crowd.programs(kind).unwrap()[0];
            let samples = crowd.samples(kind).unwrap();
            let range = p.sample_range();
            let jump_sample = samples[range.start as usize..range.end as usize].iter().find(|s| s.clip == 1);
            if r.transitioning {
                let jump_time = jump_sample.expect("Jump is still sampled during its blend").time_s;
                let clip_left = jump_s - jump_time;
                let blend_left = blend_s * (1.0 - r.transition_progress);
                assert!((clip_left - blend_left).abs() < 1e-5, "clip has {clip_left} s left, blend {blend_left} s");
                jump_blend_frames += 1;
            } else {
                assert!(jump_sample.is_none());
                ended = true;
                break;
            }
        }
    }
    assert!(ended, "Jump → Move completed");
    assert_eq!(jump_blend_frames, (blend_s / dt) as usize, "the blend ran its 0.25 s");
}
