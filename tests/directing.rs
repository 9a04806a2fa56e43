//! Directing a crowd (issue #20): per-state speed from a parameter, per-character time scales,
//! and start phases at spawn — on bare state steps for clocks and events, and on the built-in
//! humanoid through a `CrowdRuntime` for the pose a paused character holds.

use std::sync::Arc;

use support::compare::{GPU_TOLERANCE, assert_matrices_close, largest, worst_abs_diff};
use throng::clip::ClipEvent;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::graph::{CompiledGraph, ProblemKind};
use throng::program::OutputLayout;
use throng::runtime::CrowdRuntime;
use throng::state::{ArchetypeId, Archetype, ClipBinding, Crowd, StartPhases, StateError};

mod support;

/// One looping state `Walk` (a 1 s clip with events at 0.25 s and 0.75 s) whose speed is the
/// FLOAT parameter `rate` times 1 (`speedParameter`).
const WALK: &str = r#"{ "layers": [{ "name": "Base",
    "states": [{ "name": "START" }, { "name": "Walk", "speedParameter": "rate" }],
    "transitions": [{ "from": "START", "to": "Walk" }] }],
    "parameters": { "rate": { "name": "rate", "type": "FLOAT", "value": 1 } } }"#;

fn walk_crowd() -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(WALK).expect("the walk graph loads"));
    let walk = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 })])
        .expect("Walk binds")
        .with_clip_events(0, &[ClipEvent::new("left", 0.25), ClipEvent::new("right", 0.75)])
        .expect("the events lie in the clip");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(walk);
    (crowd, kind)
}

#[test]
fn time_scale_one_half_plays_the_clock_and_the_events_at_half_speed() {
    let (mut crowd, kind) = walk_crowd();
    let full = crowd.spawn(kind).unwrap();
    let half = crowd.spawn(kind).unwrap();
    crowd.set_time_scale(&[half], &[0.5]).unwrap();
    assert_eq!(crowd.time_scale(half), Ok(0.5));
    assert_eq!(crowd.time_scale(full), Ok(1.0), "a new character plays in real time");
    let fired = |crowd: &Crowd, who| {
        let row = crowd.row_of(who).unwrap().1 as u32;
        crowd.events(kind).unwrap().iter().filter(|e| e.row == row).map(|e| e.count).sum::<u32>()
    };
    let (mut full_events, mut half_events) = (0, 0);
    for _ in 0..8 {
        crowd.update(0.125).unwrap();
        full_events += fired(&crowd, full);
        half_events += fired(&crowd, half);
    }
    // One second of real time: a whole loop at full speed, half of one at half speed.
    let (f, h) = (crowd.readback(full, 0).unwrap(), crowd.readback(half, 0).unwrap());
    assert_eq!((f.loops, f.phase), (1, 0.0));
    assert_eq!((h.loops, h.phase), (0, 0.5));
    assert_eq!(full_events, 2, "0.25 s and 0.75 s in the first second");
    assert_eq!(half_events, 1, "only 0.25 s in the first half second of clip time");
    for _ in 0..8 {
        crowd.update(0.125).unwrap();
        half_events += fired(&crowd, half);
    }
    assert_eq!(half_events, 2, "0.75 s in the second second");
}

#[test]
fn time_scale_zero_pauses_clocks_transitions_and_events() {
    let (mut crowd, kind) = walk_crowd();
    let who = crowd.spawn(kind).unwrap();
    crowd.update(0.1).unwrap();
    crowd.set_time_scale(&[who], &[0.0]).unwrap();
    let before = crowd.readback(who, 0).unwrap();
    for _ in 0..10 {
        crowd.update(0.2).unwrap();
        assert!(crowd.events(kind).unwrap().is_empty(), "a paused character crosses no event");
    }
    assert_eq!(crowd.readback(who, 0).unwrap(), before, "the clock holds");
    let due = crowd.due(kind).unwrap();
    assert_eq!(due.dt_s, &[0.0], "its evaluation is given no time either");
}

#[test]
fn state_speed_follows_its_parameter_each_update() {
    let (mut crowd, kind) = walk_crowd();
    let who = crowd.spawn(kind).unwrap();
    let rate = crowd.param(kind, "rate").unwrap();
    let mut expected = 0.0f32;
    // Each update's speed is the parameter's value at that update; below 0 holds.
    for (value, dt) in [(2.0, 0.1), (0.5, 0.2), (0.0, 0.3), (-3.0, 0.1), (1.0, 0.05), (3.0, 0.1)] {
        crowd.set_float(rate, &[who], &[value]).unwrap();
        crowd.update(dt).unwrap();
        expected += dt * f32::max(value, 0.0);
        let got = crowd.readback(who, 0).unwrap();
        assert!(
            (got.loops as f32 + got.phase - expected).abs() < 1e-5,
            "speed {value} for {dt} s: progress {} + {}, expected {expected}",
            got.loops,
            got.phase
        );
    }
}

#[test]
fn a_speed_parameter_must_be_a_float_the_graph_declares() {
    let problems = |json: &str| support::graph_problems(json).into_iter().map(|p| p.kind).collect::<Vec<_>>();
    let boolean = WALK.replace(r#""type": "FLOAT", "value": 1"#, r#""type": "BOOLEAN", "value": true"#);
    assert!(
        problems(&boolean).iter().any(|k| matches!(k, ProblemKind::SpeedParameterType { parameter_type: "BOOLEAN" })),
        "a BOOLEAN speed parameter is refused"
    );
    let unknown = WALK.replace(r#""speedParameter": "rate""#, r#""speedParameter": "pace""#);
    assert!(
        problems(&unknown).iter().any(|k| matches!(k, ProblemKind::UnknownParameter { name } if name == "pace")),
        "an undeclared speed parameter is refused"
    );
}

#[test]
fn bad_time_scales_are_refused_and_change_nothing() {
    let (mut crowd, kind) = walk_crowd();
    let pair = [crowd.spawn(kind).unwrap(), crowd.spawn(kind).unwrap()];
    for bad in [f32::NAN, -0.5, f32::INFINITY, f32::NEG_INFINITY] {
        let got = crowd.set_time_scale(&pair, &[0.5, bad]);
        assert!(matches!(got, Err(StateError::BadTimeScale { at: 1, value }) if value.to_bits() == bad.to_bits()));
        assert_eq!(crowd.time_scale(pair[0]), Ok(1.0), "all or nothing: the valid entry is not applied");
    }
    assert_eq!(crowd.set_time_scale(&pair, &[1.0]), Err(StateError::LengthMismatch { handles: 2, values: 1 }));
    crowd.despawn(pair[1]).unwrap();
    assert!(matches!(crowd.set_time_scale(&pair, &[0.5, 0.5]), Err(StateError::StaleHandle { .. })));
    assert_eq!(crowd.time_scale(pair[0]), Ok(1.0));
}

#[test]
fn spread_start_phases_cover_the_unit_interval() {
    let (mut crowd, kind) = walk_crowd();
    let handles = crowd.spawn_phased(kind, StartPhases::Spread { count: 10_000, seed: 20 }).unwrap();
    assert_eq!(handles.len(), 10_000);
    let phases: Vec<f32> = handles.iter().map(|&h| crowd.readback(h, 0).unwrap().phase).collect();
    assert!(phases.iter().all(|p| (0.0..1.0).contains(p)), "every phase lies in [0, 1)");
    // Ten bins of a uniform spread hold 1,000 each; chi-square with 9 degrees of freedom stays
    // under 27.9 with probability 0.999 (the seed is fixed, so this is one draw, checked).
    let mut bins = [0u32; 10];
    for p in &phases {
        bins[(p * 10.0) as usize] += 1;
    }
    let chi2: f64 = bins.iter().map(|&n| (f64::from(n) - 1000.0).powi(2) / 1000.0).sum();
    assert!(chi2 < 27.9, "bins {bins:?}: chi-square {chi2}");
    let mean = phases.iter().map(|&p| f64::from(p)).sum::<f64>() / phases.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "mean phase {mean}");
    // The same seed spreads the same way; the programs sample the clip at each phase.
    let (mut again, kind_again) = walk_crowd();
    let repeat = again.spawn_phased(kind_again, StartPhases::Spread { count: 10_000, seed: 20 }).unwrap();
    let repeated: Vec<f32> = repeat.iter().map(|&h| again.readback(h, 0).unwrap().phase).collect();
    assert_eq!(phases, repeated);
    let samples = crowd.samples(kind).unwrap();
    for (row, program) in crowd.programs(kind).unwrap().iter().enumerate().take(100) {
        let sample = samples[program.first_sample as usize];
        assert_eq!(sample.time_s, phases[row], "row {row} shows its start phase before any update");
    }
}

#[test]
fn explicit_start_phases_are_honoured_exactly() {
    let (mut crowd, kind) = walk_crowd();
    let wanted = [0.0, 0.25, 0.3, 0.999_999_94];
    let handles = crowd.spawn_phased(kind, StartPhases::Explicit(&wanted)).unwrap();
    for (&h, &p) in handles.iter().zip(&wanted) {
        assert_eq!(crowd.readback(h, 0).unwrap().phase, p);
    }
    // The first update plays on from there, its starting point's events included.
    crowd.update(0.5).unwrap();
    let rows_firing_left: Vec<u32> = crowd
        .events(kind)
        .unwrap()
        .iter()
        .filter(|e| Some(e.event) == crowd.archetype(kind).unwrap().event_id("left"))
        .map(|e| e.row)
        .collect();
    assert_eq!(rows_firing_left, [0, 1, 3], "0 → 0.5 and 0.25 → 0.75 reach 0.25 s, 0.999… wraps past it");
    for bad in [1.0, -0.1, f32::NAN] {
        let got = crowd.spawn_phased(kind, StartPhases::Explicit(&[0.5, bad]));
        assert!(matches!(got, Err(StateError::BadStartPhase { at: 1, value }) if value.to_bits() == bad.to_bits()));
    }
    assert_eq!(crowd.num_characters(kind), Ok(4), "a refused batch spawns nobody");
}

/// A paused character holds its pose on both sides of an inertialized switch: the switch
/// captures the displayed pose and zero velocity, and nothing decays while it is paused.
#[test]
fn a_paused_character_holds_its_pose_through_an_inertialized_switch() {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap())).unwrap();
    let mut runtime = CrowdRuntime::new();
    let joints = demo.rig.num_joints();
    let kind = runtime.add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers).unwrap();
    let pair = runtime.spawn_many(kind, 2).unwrap();
    let speed = runtime.param(kind, "speed").unwrap();
    let mut held = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    for _ in 0..20 {
        runtime.update(1.0 / 60.0).unwrap();
        runtime.evaluate(kind, OutputLayout::Mat4, &mut held, &mut []).unwrap();
    }
    runtime.set_time_scale(&pair[1..], &[0.0]).unwrap();
    runtime.update(1.0 / 60.0).unwrap();
    runtime.evaluate(kind, OutputLayout::Mat4, &mut held, &mut []).unwrap();
    // Both start walking: Idle → Move, inertialized.
    runtime.set_float(speed, &pair, &[1.5, 1.5]).unwrap();
    let per = joints * 16;
    let mut now = held.clone();
    for frame in 0..30 {
        runtime.update(1.0 / 60.0).unwrap();
        runtime.evaluate(kind, OutputLayout::Mat4, &mut now, &mut []).unwrap();
        assert_matrices_close(&held[per..], &now[per..], 16, joints, GPU_TOLERANCE, &format!("paused, frame {frame}"));
    }
    let paused = runtime.readback(pair[1], 0).unwrap();
    assert!(paused.transitioning && paused.transition_progress == 0.0, "switched, and the blend waits: {paused:?}");
    assert!(worst_abs_diff(&held[..per], &now[..per]) > 0.01, "the other one walks on");
    // Played again, it walks off from the held pose with no jump larger than the walk's own
    // frame-to-frame motion.
    runtime.set_time_scale(&pair[1..], &[1.0]).unwrap();
    let (mut resumed, mut walk) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        runtime.update(1.0 / 60.0).unwrap();
        let mut next = now.clone();
        runtime.evaluate(kind, OutputLayout::Mat4, &mut next, &mut []).unwrap();
        walk.push(worst_abs_diff(&now[..per], &next[..per]));
        resumed.push(worst_abs_diff(&now[per..], &next[per..]));
        now = next;
    }
    let walking = largest(walk.iter().copied());
    assert!(resumed[0] <= walking, "no jump on resuming: steps {resumed:?}, walking steps {walk:?}");
    // Catching up with the walk (the inertialization decaying) adds a little to its steps.
    assert!(largest(resumed.iter().copied()) <= 1.25 * walking, "steps {resumed:?}, walking steps {walk:?}");
}

/// `throng-trace` scripts start the character at `startPhase` and change its time scale with
/// `timeScale` events: an event at 0.6 s of a 1 s walk fires on the frame that reaches it.
#[test]
fn trace_scripts_set_start_phases_and_time_scales() {
    let run = |extra: &str, events: &str| {
        let script = format!(
            r#"{{ "stateGraph": {WALK}, "clips": {{ "Walk": 1.0 }}, "dt": 0.125, "frames": 8, {extra}
                "clipEvents": {{ "Walk": [{{ "name": "step", "time": 0.6 }}] }}, "events": [{events}] }}"#
        );
        let lines = throng::trace::run_script(&script).unwrap_or_else(|e| panic!("{e}\n{script}"));
        lines.iter().filter(|l| !l.events.is_empty()).map(|l| l.frame).collect::<Vec<_>>()
    };
    assert_eq!(run("", ""), [4], "from 0: 0.5 → 0.625 on frame 4");
    assert_eq!(run(r#""startPhase": 0.5,"#, ""), [0], "from 0.5: 0.5 → 0.625 on frame 0");
    let half = r#"{ "frame": 0, "timeScale": 0.5 }"#;
    assert_eq!(run(r#""startPhase": 0.5,"#, half), [1], "at half speed: 0.5625 → 0.625 on frame 1");
    let pause = r#"{ "frame": 0, "timeScale": 0 }, { "frame": 6, "timeScale": 1 }"#;
    assert_eq!(run(r#""startPhase": 0.5,"#, pause), [6], "paused until frame 6");
    let refused = r#"{ "stateGraph": WALK, "clips": { "Walk": 1.0 }, "dt": 0.1, "frames": 2, "startPhase": 1.5 }"#;
    let got = throng::trace::run_script(&refused.replace("WALK", WALK));
    assert!(
        matches!(&got, Err(throng::trace::TraceError::State { path, source: StateError::BadStartPhase { .. } }) if path == "startPhase"),
        "{got:?}"
    );
}
