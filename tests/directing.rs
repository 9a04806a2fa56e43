//! Directing a crowd (issue #20): per-state speed from a parameter, per-character time scales,
//! and start phases at spawn — on bare state steps for clocks and events, and on the built-in
//! humanoid through a `CrowdRuntime` for the pose a paused character holds.

use std::sync::Arc;

use support::compare::{GPU_TOLERANCE, assert_matrices_close, joint_jumps, largest, worst_abs_diff};
use throng::clip::ClipEvent;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::gpu::{GpuCrowd, GpuCrowdOptions};
use throng::graph::{CompiledGraph, ProblemKind};
use throng::graph::{Interruption, SwitchMode};
use throng::program::OutputLayout;
use throng::program::{LayerProgram, SwitchMode as ProgramSwitch};
use throng::runtime::CrowdRuntime;
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd, StartPhases, StateError, TransitionCommand};

#[path = "support/gpu.rs"]
mod gpu_support;
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

/// Idle, Walk and Cheer, Idle → Walk on `go` (0.5 s, interruptible by nothing); Cheer, only
/// reached by command, leaves to Idle by exit time at its end. Cheer's clip has an event at 0.
const STAGE: &str = r#"{ "layers": [{ "name": "Base",
    "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }, { "name": "Cheer", "loop": false }],
    "transitions": [{ "from": "START", "to": "Idle" },
        { "from": "Idle", "to": "Walk", "time": 0.5, "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Cheer", "to": "Idle", "time": 0.2, "exitTime": 1 }] }],
    "parameters": { "go": { "name": "go", "type": "BOOLEAN", "value": false } } }"#;

fn stage_crowd() -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(STAGE).expect("the stage graph loads"));
    let arch = Archetype::from_bindings(
        graph,
        &[
            ("Idle", ClipBinding { clip: 0, duration_s: 2.0 }),
            ("Walk", ClipBinding { clip: 1, duration_s: 1.0 }),
            ("Cheer", ClipBinding { clip: 2, duration_s: 1.0 }),
        ],
    )
    .expect("every state binds")
    .with_clip_events(2, &[ClipEvent::new("cheer", 0.0)])
    .expect("the event lies in the clip");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    (crowd, kind)
}

/// A command taken mid-flight of a non-interruptible authored transition: the readback shows
/// the switch, the events fire from the new state's start, the program freezes the displayed
/// mix, and the graph takes over again from the commanded state.
#[test]
fn an_imperative_transition_interrupts_readback_and_events_report_it() {
    let (mut crowd, kind) = stage_crowd();
    let who = crowd.spawn(kind).unwrap();
    let bystander = crowd.spawn(kind).unwrap();
    let go = crowd.param(kind, "go").unwrap();
    crowd.set_bool(go, &[who, bystander], &[true, true]).unwrap();
    crowd.update(0.1).unwrap();
    crowd.update(0.1).unwrap();
    let name = |crowd: &Crowd, s: usize| crowd.state_name(kind, s).unwrap().to_owned();
    let walking = crowd.readback(who, 0).unwrap();
    assert!(walking.transitioning && name(&crowd, walking.active_state) == "Walk");
    crowd.transition_to(&[who], 0, "Cheer", TransitionCommand::blend(0.25)).unwrap();
    crowd.update(0.1).unwrap();
    let cheering = crowd.readback(who, 0).unwrap();
    assert_eq!(name(&crowd, cheering.active_state), "Cheer");
    assert_eq!(cheering.previous_state.map(|s| name(&crowd, s)).as_deref(), Some("Walk"));
    assert!(cheering.transitioning && cheering.transition_progress == 0.0, "{cheering:?}");
    let programs = crowd.programs(kind).unwrap();
    let row = crowd.row_of(who).unwrap().1;
    let program = &programs[row];
    assert_ne!(program.flags & LayerProgram::SWITCHED, 0);
    assert_ne!(program.flags & LayerProgram::SOURCE_SNAPSHOT, 0, "the displayed mix is frozen and faded out");
    assert_eq!(program.switch_mode(), ProgramSwitch::Crossfade, "the graph's default switch");
    // Entered on this update, Cheer fires from its starting point on its first advance, the
    // next update, as after an authored switch.
    crowd.update(0.1).unwrap();
    let cheer = crowd.archetype(kind).unwrap().event_id("cheer");
    let fired: Vec<u32> =
        crowd.events(kind).unwrap().iter().filter(|e| Some(e.event) == cheer).map(|e| e.row).collect();
    assert_eq!(fired, [row as u32], "the new state's start fires, for the commanded character only");
    let other = crowd.readback(bystander, 0).unwrap();
    assert_eq!(name(&crowd, other.active_state), "Walk", "the bystander is not commanded");
    // The graph takes over: Cheer leaves for Idle at its end.
    for _ in 0..9 {
        crowd.update(0.1).unwrap();
    }
    let after = crowd.readback(who, 0).unwrap();
    assert_eq!(name(&crowd, after.active_state), "Idle", "{after:?}");
}

#[test]
fn a_cut_switches_at_once_and_a_command_to_the_active_state_restarts_it() {
    let (mut crowd, kind) = stage_crowd();
    let who = crowd.spawn(kind).unwrap();
    crowd.update(0.7).unwrap();
    crowd.cut_to(&[who], 0, "Walk").unwrap();
    crowd.update(0.1).unwrap();
    let cut = crowd.readback(who, 0).unwrap();
    assert_eq!(crowd.state_name(kind, cut.active_state), Some("Walk"));
    assert!(!cut.transitioning, "a cut has no blend");
    assert_eq!(crowd.programs(kind).unwrap()[0].switch_mode(), ProgramSwitch::Cut);
    assert_eq!(cut.phase, 0.0, "the destination starts at its offset, and a switch does not advance it");
    crowd.update(0.5).unwrap();
    let restart = TransitionCommand {
        switch: Some(SwitchMode::Frozen),
        offset: 0.25,
        interruption: Interruption::Next,
        ..TransitionCommand::blend(0.2)
    };
    crowd.transition_to(&[who], 0, "Walk", restart).unwrap();
    crowd.update(0.1).unwrap();
    let again = crowd.readback(who, 0).unwrap();
    assert_eq!(crowd.state_name(kind, again.active_state), Some("Walk"));
    assert_eq!((again.phase, again.transitioning), (0.25, true), "restarted at the offset, blending");
    assert_eq!(crowd.programs(kind).unwrap()[0].switch_mode(), ProgramSwitch::Frozen);
}

#[test]
fn bad_transition_commands_are_refused_and_command_nobody() {
    let (mut crowd, kind) = stage_crowd();
    let pair = [crowd.spawn(kind).unwrap(), crowd.spawn(kind).unwrap()];
    let refused = |got: Result<(), StateError>| got.expect_err("refused");
    assert!(matches!(
        refused(crowd.transition_to(&pair, 0, "Dance", TransitionCommand::blend(0.2))),
        StateError::UnknownState { name, layer: 0, .. } if name == "Dance"
    ));
    assert!(matches!(
        refused(crowd.transition_to(&pair, 1, "Walk", TransitionCommand::blend(0.2))),
        StateError::UnknownLayer { layer: 1, layers: 1 }
    ));
    for bad in [
        TransitionCommand::blend(f32::NAN),
        TransitionCommand::blend(-1.0),
        TransitionCommand { offset: 1.5, ..TransitionCommand::blend(0.2) },
        TransitionCommand { offset: f32::NAN, ..TransitionCommand::blend(0.2) },
    ] {
        assert!(matches!(refused(crowd.transition_to(&pair, 0, "Walk", bad)), StateError::BadCommand { .. }));
    }
    crowd.despawn(pair[1]).unwrap();
    assert!(matches!(
        refused(crowd.transition_to(&pair, 0, "Walk", TransitionCommand::blend(0.2))),
        StateError::StaleHandle { .. }
    ));
    crowd.update(0.1).unwrap();
    let idle = crowd.readback(pair[0], 0).unwrap();
    assert_eq!(crowd.state_name(kind, idle.active_state), Some("Idle"), "no refused batch commanded anyone");
}

/// Many distinct commands over time: entries nobody uses any more are dropped, so the table
/// never refuses a game that varies its durations.
#[test]
fn distinct_commands_past_the_table_size_reuse_finished_entries() {
    let (mut crowd, kind) = stage_crowd();
    let who = crowd.spawn(kind).unwrap();
    for k in 0..throng::state::MAX_COMMANDS + 10 {
        let command = TransitionCommand::blend(0.001 * (k + 1) as f32);
        crowd.transition_to(&[who], 0, if k % 2 == 0 { "Walk" } else { "Idle" }, command).unwrap();
        crowd.update(0.5).unwrap();
    }
    let layer = crowd.readback(who, 0).unwrap();
    assert_eq!(crowd.state_name(kind, layer.active_state), Some("Idle"));
}

/// An imperative crossfade to Jump taken mid-flight of an authored crossfade (Idle → Move) on
/// the humanoid shows no pop: its worst joint jump stays under that of the authored crossfade
/// to Jump from a settled Idle, on the CPU and on the GPU, where a cut in its place jumps well
/// past it (so the measure sees pops).
#[test]
fn an_imperative_transition_mid_flight_does_not_pop_on_either_evaluator() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let default = r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#;
    assert!(LOCOMOTION_GRAPH.contains(default), "the demo graph's default switch is where this test edits it");
    let json = LOCOMOTION_GRAPH.replacen(default, r#""defaultSwitch": { "mode": "crossfade" }"#, 1);
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json).unwrap())).unwrap();
    let mut runtime = CrowdRuntime::new();
    let kind = runtime
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .unwrap();
    // 0: the authored Idle → Jump crossfade (0.25 s); 1: a 0.25 s crossfade to Jump commanded
    // 0.1 s into the authored Idle → Move crossfade; 2: a cut to Jump at the same moment.
    let crowd = runtime.spawn_many(kind, 3).unwrap();
    let (speed, jump) = (runtime.param(kind, "speed").unwrap(), runtime.param(kind, "jump").unwrap());
    let mut gpu = gpu_support::gpu().map(|context| {
        let crowd = GpuCrowd::with_layers(
            &context.device,
            &context.queue,
            &demo.rig,
            &bound.clips,
            &bound.layers,
            GpuCrowdOptions::default(),
        )
        .expect("the demo fits the device");
        (context, crowd)
    });
    let dt = 1.0 / 60.0;
    let (mut cpu_frames, mut gpu_frames) = (Vec::new(), Vec::new());
    for frame in 0..60 {
        if frame == 20 {
            runtime.set_float(speed, &crowd[1..], &[1.5; 2]).unwrap();
        }
        if frame == 26 {
            runtime.transition_to(&crowd[1..2], 0, "Jump", TransitionCommand::blend(0.25)).unwrap();
            runtime.cut_to(&crowd[2..], 0, "Jump").unwrap();
            runtime.set_trigger(jump, &crowd[..1], false).unwrap();
        }
        runtime.update(dt).unwrap();
        let mut out = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
        runtime.evaluate(kind, OutputLayout::Mat4, &mut out, &mut []).unwrap();
        if let Some((context, gpu_crowd)) = &mut gpu {
            let (samples, programs) = (runtime.crowd().samples(kind).unwrap(), runtime.crowd().programs(kind).unwrap());
            gpu_crowd.set_frame(samples, programs, dt).expect("the GPU takes what the CPU takes");
            let shown = gpu_support::encode_and_read(&context.device, &context.queue, gpu_crowd);
            assert_matrices_close(&out, &shown, 16, joints, GPU_TOLERANCE, &format!("GPU against CPU, frame {frame}"));
            gpu_frames.push(shown);
        }
        cpu_frames.push(out);
    }
    let commanded = runtime.readback(crowd[1], 0).unwrap();
    assert_eq!(runtime.crowd().state_name(kind, commanded.active_state), Some("Jump"));
    for (what, frames) in [("CPU", &cpu_frames), ("GPU", &gpu_frames)] {
        if frames.is_empty() {
            continue;
        }
        // From the frame before the authored switch to well after the command.
        let window = |c: usize| largest(joint_jumps(frames, c, joints)[16..50].iter().copied());
        let (authored, imperative, cut) = (window(0), window(1), window(2));
        // Both windows' worst frame is the jump clip's own motion: the commanded blend may
        // match it to a few per cent, where a pop multiplies it.
        assert!(
            imperative <= 1.05 * authored,
            "{what}: commanded mid-flight {imperative} m, the authored crossfade {authored} m"
        );
        assert!(cut > 2.0 * authored, "{what}: a cut {cut} m should pop past the crossfade's {authored} m");
    }
}

/// `transitionTo` and `cutTo` in `throng-trace` scripts: the line of the frame shows the switch.
#[test]
fn trace_scripts_command_transitions() {
    let script = |events: &str| {
        format!(r#"{{ "stateGraph": {STAGE}, "clips": {{ "*": 1.0 }}, "dt": 0.1, "frames": 6, "events": [{events}] }}"#)
    };
    let run = |events: &str| throng::trace::run_script(&script(events)).unwrap_or_else(|e| panic!("{e}"));
    let lines =
        run(r#"{ "frame": 2, "transitionTo": { "layer": "Base", "state": "Cheer", "time": 0.3, "mode": "frozen" } }"#);
    let at = |frame: usize| lines.iter().find(|l| l.frame == frame).expect("a line per frame");
    assert_eq!(at(1).active_state, "Idle");
    assert_eq!((at(2).active_state.as_str(), at(2).transitioning), ("Cheer", true));
    assert_eq!(at(2).previous_state.as_deref(), Some("Idle"));
    let lines = run(r#"{ "frame": 3, "cutTo": { "state": "Walk" } }"#);
    let cut = lines.iter().find(|l| l.frame == 3).expect("frame 3");
    assert_eq!((cut.active_state.as_str(), cut.transitioning), ("Walk", false));
    for (bad, path) in [
        (r#"{ "frame": 1, "cutTo": { "state": "Dance" } }"#, "events[0].cutTo"),
        (r#"{ "frame": 1, "transitionTo": { "state": "Walk", "mode": "blend" } }"#, "events[0].transitionTo.mode"),
        (r#"{ "frame": 1, "transitionTo": { "state": "Walk", "layer": "Top" } }"#, "events[0].transitionTo.layer"),
        (r#"{ "frame": 1, "cutTo": { "state": "Walk", "time": 1 } }"#, "events[0].cutTo.time"),
        (r#"{ "frame": 1, "transitionTo": { "state": "Walk", "sync": "feet" } }"#, "events[0].transitionTo.sync"),
        (r#"{ "frame": 1, "cutTo": { "state": "Walk", "sync": "phase" } }"#, "events[0].cutTo.sync"),
    ] {
        match throng::trace::run_script(&script(bad)) {
            Err(
                throng::trace::TraceError::State { path: p, .. } | throng::trace::TraceError::Script { path: p, .. },
            ) => {
                assert_eq!(p, path, "{bad}")
            }
            other => panic!("{bad}: expected a refusal at {path}, got {other:?}"),
        }
    }
}

/// `"sync"` on a script's `transitionTo`: with `"phase"` the one-shot Cheer starts where Idle
/// stood (about 0.3 of 1 s), so of its events at 0.05 s and 0.45 s only the later one fires in
/// the 0.3 s it plays; without, it starts at 0 and only the earlier one fires.
#[test]
fn trace_scripts_sync_command_transitions() {
    let fired = |sync: &str| {
        let script = format!(
            r#"{{ "stateGraph": {STAGE}, "clips": {{ "*": 1.0 }}, "dt": 0.1, "frames": 6,
            "clipEvents": {{ "Cheer": [{{ "name": "early", "time": 0.05 }}, {{ "name": "late", "time": 0.45 }}] }},
            "events": [{{ "frame": 2, "transitionTo": {{ "state": "Cheer", "time": 0.3, "mode": "crossfade"{sync} }} }}] }}"#
        );
        let lines = throng::trace::run_script(&script).unwrap_or_else(|e| panic!("{e}"));
        let at = lines.iter().find(|l| l.frame == 2).expect("frame 2");
        assert_eq!((at.active_state.as_str(), at.transitioning), ("Cheer", true), "{sync}");
        lines.iter().flat_map(|l| l.events.iter().map(|(name, ..)| name.clone())).collect::<Vec<_>>()
    };
    assert_eq!(fired(r#", "sync": "phase""#), ["late"]);
    assert_eq!(fired(""), ["early"]);
}

/// Walk (1 s: left foot down at 0.1 s, right at 0.6 s) and Run (0.7 s: left at 0.05 s, right
/// at 0.4 s); Walk → Run on `run`, synced by `SYNC`.
const SYNCED: &str = r#"{ "layers": [{ "name": "Base",
    "states": [{ "name": "START" }, { "name": "Walk" }, { "name": "Run" }],
    "transitions": [{ "from": "START", "to": "Walk" },
        { "from": "Walk", "to": "Run", "time": 0.2, "sync": "SYNC",
          "conditions": [{ "parameterName": "run", "predicate": "EQUAL_TO", "value": true }] }] }],
    "parameters": { "run": { "name": "run", "type": "BOOLEAN", "value": false } } }"#;

/// Where Run starts when the walkers at `phases` (after one 0.1 s update) switch, synced by `sync`.
fn synced_run_phases(sync: &str, phases: &[f32]) -> Vec<f32> {
    let graph = Arc::new(CompiledGraph::from_json(&SYNCED.replace("SYNC", sync)).expect("the synced graph loads"));
    let feet = |left: f32, right: f32| [ClipEvent::new("left", left), ClipEvent::new("right", right)];
    let arch = Archetype::from_bindings(
        graph,
        &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 }), ("Run", ClipBinding { clip: 1, duration_s: 0.7 })],
    )
    .unwrap()
    .with_clip_markers(0, &feet(0.1, 0.6))
    .unwrap()
    .with_clip_markers(1, &feet(0.05, 0.4))
    .unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let walkers = crowd.spawn_phased(kind, StartPhases::Explicit(phases)).unwrap();
    let run = crowd.param(kind, "run").unwrap();
    crowd.set_bool(run, &walkers, &vec![true; walkers.len()]).unwrap();
    crowd.update(0.1).unwrap();
    walkers
        .iter()
        .map(|&h| {
            let layer = crowd.readback(h, 0).unwrap();
            assert_eq!(crowd.state_name(kind, layer.active_state), Some("Run"));
            layer.phase
        })
        .collect()
}

/// Marker sync starts the run as far before its marker as the walk was before the same
/// marker, in fractions of each clip, checked against the marker times; phase sync at the
/// walk's phase; without sync, at the offset (0).
#[test]
fn a_synced_walk_to_run_starts_at_the_matching_marker_or_phase() {
    let phases = [0.3, 0.05, 0.8, 0.55];
    // After the 0.1 s update the walk stands at 0.4, 0.15, 0.9 and 0.65 s.
    let (walk, run) = (1.0f32, 0.7f32);
    let expected = [
        (0.4 - 0.6 / walk) + 0.4 / run,         // right foot next, 0.2 of the walk away
        (0.15 - 0.6 / walk) + 0.4 / run,        // right foot next, 0.45 away
        (0.9 - 1.1 / walk) + 0.05 / run + 1.0,  // the next loop's left foot, 0.2 away
        (0.65 - 1.1 / walk) + 0.05 / run + 1.0, // past the right foot: the next left, 0.45 away
    ];
    let got = synced_run_phases("marker", &phases);
    for ((&g, &e), &p) in got.iter().zip(&expected).zip(&phases) {
        assert!((g - e).abs() < 1e-5, "walk from {p}: run starts at {g}, expected {e}");
    }
    assert!((got[0] * run - (0.4 - 0.2 * run)).abs() < 1e-5, "0.2 of the run before its right foot at 0.4 s");
    let by_phase = synced_run_phases("phase", &phases);
    for (&g, e) in by_phase.iter().zip([0.4, 0.15, 0.9, 0.65]) {
        assert!((g - e).abs() < 1e-6, "phase sync: {g}, expected {e}");
    }
    let unsynced = SYNCED.replace(r#""sync": "SYNC","#, "");
    let graph = Arc::new(CompiledGraph::from_json(&unsynced).unwrap());
    assert_eq!(graph.transitions().iter().filter(|t| t.sync != throng::graph::PhaseSync::Offset).count(), 0);
    let refused = CompiledGraph::from_json(&SYNCED.replace("SYNC", "feet"));
    assert!(
        matches!(&refused, Err(throng::graph::GraphError::Shape { path, .. }) if path.contains("transitions[1]")),
        "{refused:?}"
    );
}
