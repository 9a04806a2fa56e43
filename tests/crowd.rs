//! Crowds: a batch gives each character what the trace tool gives it alone, results do not
//! depend on the thread count, handles stay stable, and bad input is refused.

use std::sync::Arc;

use throng::graph::{CompiledGraph, ParamValue};
use throng::state::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, StateError};
use throng::trace::{TraceLine, run_script};

mod support;
use support::drive::{drive, locomotion_bindings, profile_jumps, profile_speed, profile_waves};
use support::files::TempDir;
use support::locomotion::{LOCOMOTION as GRAPH, LOCOMOTION_CLIPS as CLIPS};

const DT: f32 = 1.0 / 30.0;
const FRAMES: usize = 90;
const PROFILES: usize = 101;

fn archetype() -> Archetype {
    let graph = Arc::new(CompiledGraph::from_json(GRAPH).unwrap());
    Archetype::from_bindings(graph, &locomotion_bindings()).unwrap()
}

fn crowd(n: usize) -> (Crowd, ArchetypeId, Vec<CharacterHandle>) {
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(archetype());
    let handles = (0..n).map(|_| crowd.spawn(kind).unwrap()).collect();
    (crowd, kind, handles)
}

/// The trace script for profile `p`, as a user would write it.
fn script(p: usize) -> String {
    let clips: Vec<String> = CLIPS.iter().map(|(k, d)| format!("\"{k}\": {d}")).collect();
    let events: Vec<String> = (0..FRAMES)
        .map(|f| {
            let mut e = format!(r#"{{ "frame": {f}, "set": {{ "speed": {} }}"#, profile_speed(p, f));
            if profile_jumps(p, f) {
                e.push_str(r#", "trigger": ["jump"]"#);
            }
            if profile_waves(p, f) {
                e.push_str(r#", "triggerSingleFrame": ["wave"]"#);
            }
            e + " }"
        })
        .collect();
    format!(
        r#"{{ "stateGraph": {GRAPH}, "clips": {{ {} }}, "dts": [{}], "events": [{}] }}"#,
        clips.join(","),
        vec![DT.to_string(); FRAMES].join(","),
        events.join(",")
    )
}

#[test]
fn a_crowd_of_ten_thousand_gives_each_character_its_trace() {
    let traces: Vec<Vec<TraceLine>> = (0..PROFILES).map(|p| run_script(&script(p)).unwrap()).collect();
    let (mut crowd, kind, handles) = crowd(10_000);
    let mut visited = std::collections::HashSet::new();
    for f in 0..FRAMES {
        drive(&mut crowd, kind, &handles, |i| (i % PROFILES, f));
        crowd.update(DT).unwrap();
        for (i, &h) in handles.iter().enumerate() {
            let lines = &traces[i % PROFILES];
            for layer in 0..2 {
                let want = &lines[f * 2 + layer];
                let got = crowd.readback(h, layer).unwrap();
                let name = |s: usize| crowd.state_name(kind, s).unwrap();
                assert_eq!(name(got.active_state), want.active_state, "character {i}, frame {f}, layer {layer}");
                assert_eq!(got.previous_state.map(name), want.previous_state.as_deref(), "character {i}, frame {f}");
                assert_eq!(got.transitioning, want.transitioning, "character {i}, frame {f}");
                assert_eq!(
                    got.transition_progress.to_bits(),
                    want.transition_progress.to_bits(),
                    "character {i}, frame {f}"
                );
                visited.insert(want.active_state.clone());
            }
        }
    }
    for state in ["Idle", "Move", "Jump", "Rest", "Wave"] {
        assert!(visited.contains(state), "the schedule never reached {state}");
    }
}

#[test]
fn results_are_bitwise_identical_with_one_two_and_four_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let (mut crowd, kind, handles) = crowd(3000);
            let mut frames = Vec::new();
            for f in 0..40 {
                drive(&mut crowd, kind, &handles, |i| (i % PROFILES, f));
                crowd.update(DT).unwrap();
                let programs: Vec<u8> = bytemuck::cast_slice(crowd.programs(kind).unwrap()).to_vec();
                let samples: Vec<u8> = bytemuck::cast_slice(crowd.samples(kind).unwrap()).to_vec();
                frames.push((programs, samples));
            }
            frames
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(4));
}

#[test]
fn handles_survive_removal_of_others_and_stale_handles_are_refused() {
    let (mut crowd, kind, handles) = crowd(3);
    let speed = crowd.param(kind, "speed").unwrap();
    crowd.set_float(speed, &handles, &[1.0, 2.0, 3.0]).unwrap();
    crowd.despawn(handles[0]).unwrap();
    assert_eq!(crowd.get(speed, handles[1]).unwrap(), ParamValue::Float(2.0));
    assert_eq!(crowd.get(speed, handles[2]).unwrap(), ParamValue::Float(3.0));
    assert!(matches!(crowd.readback(handles[0], 0), Err(StateError::StaleHandle { .. })));
    let again = crowd.spawn(kind).unwrap();
    assert!(
        matches!(crowd.get(speed, handles[0]), Err(StateError::StaleHandle { .. })),
        "slot reused, old handle still stale"
    );
    assert_eq!(crowd.get(speed, again).unwrap(), ParamValue::Float(0.0));
    assert_eq!(crowd.num_characters(kind).unwrap(), 3);
    crowd.update(DT).unwrap();
    assert_eq!(crowd.get(speed, handles[2]).unwrap(), ParamValue::Float(3.0));
}

#[test]
fn bad_values_and_steps_are_refused_and_change_nothing() {
    let (mut crowd, kind, handles) = crowd(2);
    let speed = crowd.param(kind, "speed").unwrap();
    let jump = crowd.param(kind, "jump").unwrap();
    assert!(matches!(
        crowd.set_float(speed, &handles, &[1.0, f32::NAN]),
        Err(StateError::NonFiniteValue { at: 1, .. })
    ));
    assert!(matches!(
        crowd.set_float(speed, &handles, &[1.0, f32::INFINITY]),
        Err(StateError::NonFiniteValue { at: 1, .. })
    ));
    assert_eq!(crowd.get(speed, handles[0]).unwrap(), ParamValue::Float(0.0), "all or nothing");
    assert!(matches!(crowd.set_float(jump, &handles, &[1.0, 1.0]), Err(StateError::ParamKind { .. })));
    assert!(matches!(crowd.set_float(speed, &handles, &[1.0]), Err(StateError::LengthMismatch { .. })));
    for dt in [f32::NAN, f32::INFINITY, -0.1] {
        assert!(matches!(crowd.update(dt), Err(StateError::BadDt(_))), "dt {dt}");
    }
    assert!(matches!(crowd.param(kind, "sped"), Err(StateError::UnknownParameter(_))));
}

#[test]
fn the_trace_tool_names_the_json_path_and_exits_with_code_2() {
    let bad = format!(
        r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1.0 }}, "dt": 0.1, "frames": 3,
             "events": [{{ "frame": 1, "set": {{ "sped": 1.0 }} }}] }}"#
    );
    let err = run_script(&bad).unwrap_err().to_string();
    assert!(err.contains("events[0].set.sped"), "{err}");
    let zero = format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1.0, "Jump": 0 }}, "dt": 0.1, "frames": 3 }}"#);
    let err = run_script(&zero).unwrap_err().to_string();
    assert!(err.contains("clips.Jump"), "{err}");
    let no_clip = format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "Idle": 1.0 }}, "dt": 0.1, "frames": 3 }}"#);
    let err = run_script(&no_clip).unwrap_err().to_string();
    assert!(err.contains("clips") && err.contains("Move.Idle"), "{err}");

    let dir = TempDir::new("crowd-trace");
    let path = dir.join("bad.json");
    std::fs::write(&path, &bad).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_throng-trace")).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("events[0].set.sped"));
    let good = dir.join("good.json");
    std::fs::write(&good, script(3)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_throng-trace")).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), FRAMES * 2, "one line per layer per frame");
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["layer"], "Base");
    assert_eq!(first["activeState"], "Move");
}

#[test]
fn any_float_values_written_directly_give_finite_weights_that_sum_to_one() {
    let (mut crowd, kind, handles) = crowd(512);
    let speed = crowd.param(kind, "speed").unwrap();
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1e30, 1e30, 0.1, 0.100_000_01, -0.0];
    let mut seed = 0x9E37_79B9u32;
    for f in 0..60 {
        drive(&mut crowd, kind, &handles, |i| (i % PROFILES, f));
        let column = crowd.float_column_mut(kind, speed).unwrap();
        for v in column.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            *v = if seed.is_multiple_of(4) {
                specials[(seed >> 8) as usize % specials.len()]
            } else {
                (seed % 1000) as f32 / 200.0
            };
        }
        crowd.update(DT).unwrap();
        let samples = crowd.samples(kind).unwrap();
        for (i, p) in crowd.programs(kind).unwrap().iter().enumerate() {
            let range = p.sample_range();
            let layer = &samples[range.start as usize..range.end as usize];
            assert!(
                layer.iter().all(|s| s.weight.is_finite() && s.weight >= 0.0 && s.time_s.is_finite()),
                "program {i}: {layer:?}"
            );
            let snapshot =
                if p.flags & throng::program::LayerProgram::SOURCE_SNAPSHOT != 0 { 1.0 - p.target_weight } else { 0.0 };
            let sum: f32 = layer.iter().map(|s| s.weight).sum::<f32>() + snapshot;
            assert!((sum - 1.0).abs() < 1e-5, "program {i}, frame {f}: weights sum to {sum}");
        }
    }
}

#[test]
fn programs_of_a_moved_character_point_at_its_own_samples() {
    let (mut crowd, kind, handles) = crowd(3);
    let speed = crowd.param(kind, "speed").unwrap();
    crowd.set_float(speed, &handles, &[0.0, 0.0, 3.0]).unwrap();
    for _ in 0..30 {
        crowd.update(DT).unwrap();
    }
    let before: Vec<_> = {
        let (_, row) = crowd.row_of(handles[2]).unwrap();
        let p = crowd.programs(kind).unwrap()[row * 2];
        crowd.samples(kind).unwrap()[p.sample_range().start as usize..p.sample_range().end as usize].to_vec()
    };
    crowd.despawn(handles[0]).unwrap();
    let (_, row) = crowd.row_of(handles[2]).unwrap();
    assert_eq!(row, 0, "the last character moved into the freed row");
    let p = crowd.programs(kind).unwrap()[row * 2];
    let after = &crowd.samples(kind).unwrap()[p.sample_range().start as usize..p.sample_range().end as usize];
    assert_eq!(after, before.as_slice(), "its program still reads its own (moving) samples");
    assert!(after.iter().any(|s| s.clip == 3), "it runs: Move.Run is sampled");
}

#[test]
fn crossfades_sample_both_states_and_inertialization_only_the_new_one() {
    let graph = |switch: &str| {
        format!(
            r#"{{ "defaultSwitch": {switch}, "layers": [{{ "name": "Base",
                "states": [{{ "name": "START" }}, {{ "name": "A" }}, {{ "name": "B" }}],
                "transitions": [{{ "from": "START", "to": "A" }},
                  {{ "from": "A", "to": "B", "time": 0.5, "conditions": [{{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }}] }}] }}],
              "parameters": {{ "go": {{ "name": "go", "type": "BOOLEAN" }} }} }}"#
        )
    };
    let sampled = |switch: &str| {
        let g = Arc::new(CompiledGraph::from_json(&graph(switch)).unwrap());
        let arch = Archetype::new(g, |_| Some(ClipBinding { clip: 0, duration_s: 1.0 })).unwrap();
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(arch);
        let handles: Vec<_> = (0..10).map(|_| crowd.spawn(kind).unwrap()).collect();
        let go = crowd.param(kind, "go").unwrap();
        crowd.set_bool(go, &handles, &[true; 10]).unwrap();
        crowd.update(0.1).unwrap();
        crowd.update(0.1).unwrap();
        let flags = throng::program::LayerProgram::TRANSITIONING;
        let in_flight = crowd.programs(kind).unwrap().iter().filter(|p| p.flags & flags != 0).count();
        (crowd.clips_sampled(kind).unwrap(), in_flight)
    };
    assert_eq!(sampled(r#""crossfade""#), (20, 10));
    assert_eq!(sampled(r#"{ "mode": "inertialize" }"#), (10, 10));
    assert_eq!(sampled(r#""frozen""#), (10, 10), "the snapshot is not a clip");
    assert_eq!(sampled(r#"{ "mode": "inertialize", "spring": { "halflife": 0 } }"#), (10, 0), "halflife 0 is a cut");
}

#[test]
fn a_parameter_of_one_graph_is_refused_for_characters_of_another() {
    let mut crowd = Crowd::new();
    let first = crowd.add_archetype(archetype());
    let second = crowd.add_archetype(archetype());
    let a = crowd.spawn(first).unwrap();
    let b = crowd.spawn(second).unwrap();
    let speed_first = crowd.param(first, "speed").unwrap();
    assert!(matches!(crowd.set_float(speed_first, &[a, b], &[1.0, 1.0]), Err(StateError::WrongGraph { .. })));
    assert_eq!(crowd.get(speed_first, a).unwrap(), ParamValue::Float(0.0), "nothing written");
    // Archetypes sharing one compiled graph share its parameters.
    let shared = crowd.archetype(first).unwrap().clone();
    let third = crowd.add_archetype(shared);
    let c = crowd.spawn(third).unwrap();
    crowd.set_float(speed_first, &[a, c], &[1.0, 2.0]).unwrap();
    assert_eq!(crowd.get(speed_first, c).unwrap(), ParamValue::Float(2.0));
}

#[test]
fn enormous_steps_keep_every_output_finite() {
    let (mut crowd, kind, handles) = crowd(64);
    for (f, dt) in [1e-30f32, 1e30, f32::MAX, 0.0, 3.0e38, 1.0 / 60.0].into_iter().enumerate() {
        drive(&mut crowd, kind, &handles, |i| (i % PROFILES, f));
        crowd.update(dt).unwrap();
        for p in crowd.programs(kind).unwrap() {
            assert!(p.progress.is_finite() && p.target_weight.is_finite(), "dt {dt}: {p:?}");
        }
        for s in crowd.samples(kind).unwrap() {
            assert!(s.time_s.is_finite() && s.weight.is_finite(), "dt {dt}: {s:?}");
        }
    }
}
