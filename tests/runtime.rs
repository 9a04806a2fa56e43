//! The crowd runtime (`throng::runtime::CrowdRuntime`): removing one character never disturbs
//! another (its matrices bit for bit what a crowd without the churn shows), animation LOD's held
//! rows move with their characters, root motion is every row's, events name live characters,
//! and bad calls are typed errors that change nothing.

use std::sync::Arc;

use throng::ClipEvent;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH, WALK};
use throng::eval::EvalError;
use throng::eval::root_motion::RootDelta;
use throng::graph::{CompiledGraph, ParamValue};
use throng::program::OutputLayout;
use throng::runtime::{CrowdRuntime, RuntimeError};
use throng::state::{ArchetypeId, CharacterHandle, StateError};

const DT: f32 = 1.0 / 60.0;
const JOINTS: usize = 26;
const PER_ROW: usize = JOINTS * 16;

/// A runtime with the demo archetype, its walk clip firing `footstep` at 0.25 s.
fn demo_runtime() -> (CrowdRuntime, ArchetypeId) {
    let mut demo = DemoCharacter::humanoid();
    let walk = demo.clip_index(WALK).expect("the demo has a walk");
    demo.clips[walk] =
        demo.clips[walk].clone().with_events(vec![ClipEvent::new("footstep", 0.25)]).expect("a valid event");
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("the demo graph compiles"));
    let bound = demo.bind(graph).expect("the demo graph binds");
    let archetype = bound.archetype.with_events_from_clips(&bound.clips).expect("the walk's event fits the clip");
    let mut runtime = CrowdRuntime::new();
    let id = runtime.add_archetype(archetype, demo.rig, bound.clips, bound.layers).expect("one setup per layer");
    (runtime, id)
}

/// Spawns `count` characters with speeds spread over idle, walk and run, so that transitions
/// are in flight at different moments.
fn spawn_spread(runtime: &mut CrowdRuntime, id: ArchetypeId, count: usize) -> Vec<CharacterHandle> {
    let handles = runtime.spawn_many(id, count).expect("slots");
    let speed = runtime.param(id, "speed").expect("the demo has speed");
    let speeds: Vec<f32> = (0..count).map(|i| (i % 5) as f32).collect();
    runtime.set_float(speed, &handles, &speeds).expect("finite speeds");
    handles
}

fn evaluate(runtime: &mut CrowdRuntime, id: ArchetypeId, root_motion: bool) -> (Vec<f32>, Vec<RootDelta>) {
    let mut matrices = vec![0.0; runtime.floats_needed(id, OutputLayout::Mat4).expect("known archetype")];
    let rows = runtime.crowd().num_characters(id).expect("known archetype");
    let mut root = vec![RootDelta::default(); if root_motion { rows } else { 0 }];
    runtime.evaluate(id, OutputLayout::Mat4, &mut matrices, &mut root).expect("the frame evaluates");
    (matrices, root)
}

fn row<'a>(runtime: &CrowdRuntime, matrices: &'a [f32], handle: CharacterHandle) -> &'a [f32] {
    let (_, r) = runtime.crowd().row_of(handle).expect("a live character");
    &matrices[r * PER_ROW..(r + 1) * PER_ROW]
}

/// `got` is bit for bit `expected` (one character's matrices), and holds no NaN; a failure
/// names the joint, the float, and both values.
fn assert_same_bits(got: &[f32], expected: &[f32], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != expected[i].to_bits() || got[i].is_nan()) {
        panic!("{what}: joint {}, float {}: expected {}, got {}", i / 16, i % 16, expected[i], got[i]);
    }
}

#[test]
fn removing_one_character_never_disturbs_another() {
    const CHARACTERS: usize = 12;
    let (mut calm, calm_id) = demo_runtime();
    let (mut churn, churn_id) = demo_runtime();
    let calm_handles = spawn_spread(&mut calm, calm_id, CHARACTERS);
    let churn_handles = spawn_spread(&mut churn, churn_id, CHARACTERS);
    // In the churned crowd, characters 3 and 0 leave (the last rows moving into theirs) and a
    // newcomer arrives, at different frames, while the others walk, run and switch.
    let mut gone = [false; CHARACTERS];
    for frame in 0..90 {
        if frame == 20 {
            churn.despawn(churn_handles[3]).expect("live");
            gone[3] = true;
        }
        if frame == 45 {
            churn.spawn(churn_id).expect("a free slot");
            churn.despawn(churn_handles[0]).expect("live");
            gone[0] = true;
        }
        calm.update(DT).expect("finite dt");
        churn.update(DT).expect("finite dt");
        let (calm_out, calm_root) = evaluate(&mut calm, calm_id, true);
        let (churn_out, churn_root) = evaluate(&mut churn, churn_id, true);
        assert!(churn_out.iter().all(|v| v.is_finite()), "frame {frame}: a matrix that is not finite");
        for i in (0..CHARACTERS).filter(|&i| !gone[i]) {
            let (calm_row, churn_row) =
                (row(&calm, &calm_out, calm_handles[i]), row(&churn, &churn_out, churn_handles[i]));
            assert_same_bits(churn_row, calm_row, &format!("frame {frame}, character {i}, despawns around it"));
            let (_, a) = calm.crowd().row_of(calm_handles[i]).expect("live");
            let (_, b) = churn.crowd().row_of(churn_handles[i]).expect("live");
            assert_eq!(churn_root[b], calm_root[a], "frame {frame}, character {i}: root motion");
        }
    }
}

/// At rate 16 a character is due on one update in sixteen, so most updates hold its row. Each
/// despawn of row 0 moves the last row's character there: on the updates it is not due, row 0
/// must show exactly what that character showed before (its held matrices moved with it, not
/// zeros and not the removed character's).
#[test]
fn lod_held_rows_follow_their_characters_through_despawns() {
    const CHARACTERS: usize = 8;
    let (mut runtime, id) = demo_runtime();
    let handles = spawn_spread(&mut runtime, id, CHARACTERS);
    runtime.set_update_rate(&handles, &[16; CHARACTERS]).expect("a valid rate");
    // Past the first update (everyone new) and the switches out of idle, which are never held.
    let mut before = Vec::new();
    for _ in 0..40 {
        runtime.update(DT).expect("finite dt");
        before = evaluate(&mut runtime, id, false).0;
    }
    let mut held_checks = 0;
    for removed in 0..CHARACTERS - 1 {
        let rows = CHARACTERS - removed;
        let last = runtime.crowd().handle_at(id, rows - 1).expect("a last row");
        let last_before = row(&runtime, &before, last).to_vec();
        let first = runtime.crowd().handle_at(id, 0).expect("a first row");
        runtime.despawn(first).expect("live");
        assert_eq!(runtime.crowd().row_of(last).expect("live").1, 0, "the last character moved into row 0");
        runtime.update(DT).expect("finite dt");
        let due_now = runtime.crowd().due(id).expect("known archetype").rows.contains(&0);
        let (after, root) = evaluate(&mut runtime, id, true);
        assert_eq!(after.len(), (rows - 1) * PER_ROW, "every row written");
        assert!(after.iter().all(|v| v.is_finite()), "a matrix that is not finite");
        if !due_now {
            assert_same_bits(
                &after[..PER_ROW],
                &last_before,
                &format!("after despawn {removed}, row 0 (not due) shows what its character showed"),
            );
            held_checks += 1;
        }
        // Root motion is every row's, due or not: the walkers and runners move forward.
        let speed = runtime.param(id, "speed").expect("the demo has speed");
        for (r, delta) in root.iter().enumerate() {
            let handle = runtime.crowd().handle_at(id, r).expect("a row");
            let moving = matches!(runtime.crowd().get(speed, handle).expect("live"), ParamValue::Float(s) if s >= 1.0);
            assert_eq!(delta.translation.z > 0.0, moving, "row {r}: root motion {delta:?}");
        }
        before = after;
    }
    assert!(held_checks > 0, "at rate 16 the moved character skips most updates");
}

/// A walker at 1.5 m/s travels 1.5 m in one second of root motion; an idle one none.
#[test]
fn root_motion_is_reported_per_row() {
    let (mut runtime, id) = demo_runtime();
    let handles = runtime.spawn_many(id, 2).expect("slots");
    let speed = runtime.param(id, "speed").expect("the demo has speed");
    runtime.set_float(speed, &handles, &[1.5, 0.0]).expect("finite speeds");
    // Let the walker finish its transition out of idle before measuring.
    for _ in 0..60 {
        runtime.update(DT).expect("finite dt");
        evaluate(&mut runtime, id, true);
    }
    let mut travelled = [0.0f32; 2];
    for _ in 0..60 {
        runtime.update(DT).expect("finite dt");
        let (_, root) = evaluate(&mut runtime, id, true);
        for (h, &handle) in handles.iter().enumerate() {
            let (_, r) = runtime.crowd().row_of(handle).expect("live");
            travelled[h] += root[r].translation.z;
        }
    }
    assert!((travelled[0] - 1.5).abs() < 0.05, "the walker travelled {} m in 1 s", travelled[0]);
    assert!(travelled[1].abs() < 1e-4, "the idle character travelled {} m", travelled[1]);
}

/// The walk's `footstep` fires for walkers only, each naming a live character and its row.
#[test]
fn events_name_the_characters_that_fired_them() {
    let (mut runtime, id) = demo_runtime();
    let handles = runtime.spawn_many(id, 3).expect("slots");
    let speed = runtime.param(id, "speed").expect("the demo has speed");
    runtime.set_float(speed, &handles, &[1.5, 0.0, 1.5]).expect("finite speeds");
    runtime.despawn(handles[0]).expect("live");
    let footstep =
        runtime.crowd().archetype(id).expect("known").event_id("footstep").expect("the event was registered");
    let mut fired = 0;
    for _ in 0..120 {
        runtime.update(DT).expect("finite dt");
        evaluate(&mut runtime, id, false);
        for event in runtime.events(id).expect("known archetype") {
            assert_eq!(event.character, handles[2], "only the live walker steps: {event:?}");
            assert_eq!(runtime.crowd().row_of(event.character).expect("live").1, event.row as usize);
            assert_eq!(event.event, footstep);
            fired += event.count;
        }
    }
    assert!(
        (1..=3).contains(&fired),
        "two seconds of walking crosses 0.25 s of the 1 s walk about twice; fired {fired}"
    );
}

#[test]
fn bad_calls_are_typed_errors_that_change_nothing() {
    let (mut runtime, id) = demo_runtime();
    let handles = runtime.spawn_many(id, 2).expect("slots");
    runtime.update(DT).expect("finite dt");

    let mut short = vec![7.0f32; 2 * PER_ROW - 1];
    let err = runtime.evaluate(id, OutputLayout::Mat4, &mut short, &mut []).expect_err("one float short");
    assert!(
        matches!(err, RuntimeError::Eval(EvalError::OutputSize { expected, got, .. }) if expected == 2 * PER_ROW && got == 2 * PER_ROW - 1),
        "{err}"
    );
    assert!(short.iter().all(|&v| v == 7.0), "nothing written on a refused frame");
    let mut out = vec![0.0f32; 2 * PER_ROW];
    let err = runtime
        .evaluate(id, OutputLayout::Mat4, &mut out, &mut [RootDelta::default()])
        .expect_err("one root entry for two rows");
    assert!(matches!(err, RuntimeError::Eval(EvalError::RootMotionCount { got: 1, characters: 2 })), "{err}");

    let err = runtime.despawn_many(&[handles[1], handles[1]]).expect_err("a handle twice");
    assert!(matches!(err, RuntimeError::DuplicateHandle { handle } if handle == handles[1]), "{err}");
    assert_eq!(runtime.crowd().num_characters(id), Ok(2), "a refused batch removes none");

    let err = runtime.update(f32::NAN).expect_err("NaN dt");
    assert!(matches!(err, RuntimeError::State(StateError::BadDt(_))), "{err}");
    let err = runtime.set_update_rate(&handles[..1], &[3]).expect_err("rate 3");
    assert!(matches!(err, RuntimeError::State(StateError::BadUpdateRate { rate: 3, .. })), "{err}");

    // An id from a runtime with more archetypes names none here.
    let (mut other, _) = demo_runtime();
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("compiles"))).expect("binds");
    let second = other
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .expect("one setup per layer");
    let err = runtime.spawn(second).expect_err("another runtime's archetype");
    assert!(matches!(err, RuntimeError::UnknownArchetype { .. }), "{err}");

    let err = runtime
        .add_archetype(bound.archetype, demo.rig, bound.clips, bound.layers[..1].to_vec())
        .expect_err("one setup for three layers");
    assert!(matches!(err, RuntimeError::LayerCount { layers: 1, graph_layers: 3 }), "{err}");

    // Still whole: the frame evaluates.
    runtime.evaluate(id, OutputLayout::Mat4, &mut out, &mut []).expect("the frame evaluates");
    assert!(out.iter().all(|v| v.is_finite()));
}
