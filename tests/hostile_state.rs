//! Hostile input to the state step and the trace tool (issue #25): handles from another crowd,
//! clip events on a tiny clip under a huge `dt`, trace scripts with extreme values and long
//! names, and work that must stay linear in a script's size.

use std::sync::Arc;

use throng::clip::ClipEvent;
use throng::graph::{CompiledGraph, ParamValue};
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd, StateError};

const WALK: &str = r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "Walk" }],
    "transitions": [{ "from": "START", "to": "Walk" }] }],
    "parameters": { "speed": { "name": "speed", "type": "FLOAT", "value": 0 } } }"#;

fn walk_crowd(duration_s: f32, events: &[ClipEvent]) -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(WALK).unwrap());
    let mut arch = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s })]).unwrap();
    if !events.is_empty() {
        arch = arch.with_clip_events(0, events).unwrap();
    }
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    (crowd, kind)
}

#[test]
fn a_handle_from_another_crowd_is_refused_and_changes_nothing() {
    let (mut a, kind_a) = walk_crowd(1.0, &[]);
    let (mut b, kind_b) = walk_crowd(1.0, &[]);
    let mine = a.spawn(kind_a).unwrap();
    let theirs = b.spawn(kind_b).unwrap();
    assert_ne!(mine, theirs, "the same slot and generation in two crowds still differ");
    let speed = a.param(kind_a, "speed").unwrap();
    let foreign =
        |r: Result<(), StateError>| matches!(r, Err(StateError::ForeignHandle { index: 0, generation: 0, .. }));
    assert!(foreign(a.set_float(speed, &[theirs], &[3.0])), "set_float with crowd B's handle");
    assert!(foreign(a.set(speed, theirs, ParamValue::Float(3.0))));
    assert!(foreign(a.despawn(theirs)), "despawn with crowd B's handle");
    assert!(foreign(a.set_update_rate(&[theirs], &[2])));
    assert!(matches!(a.readback(theirs, 0), Err(StateError::ForeignHandle { .. })));
    assert!(matches!(a.row_of(theirs), Err(StateError::ForeignHandle { .. })));
    assert_eq!(a.get(speed, mine), Ok(ParamValue::Float(0.0)), "crowd A's character is untouched");
    assert_eq!(a.num_characters(kind_a), Ok(1));
    assert_eq!(a.update_rate(mine), Ok(1));
    let err = a.despawn(theirs).unwrap_err().to_string();
    assert!(err.contains("another") || err.contains("not to this crowd"), "{err}");
    // Handles survive the trip through their bits with their crowd.
    assert!(matches!(
        a.row_of(throng::state::CharacterHandle::from_bits(theirs.to_bits())),
        Err(StateError::ForeignHandle { .. })
    ));
    assert_eq!(a.row_of(throng::state::CharacterHandle::from_bits(mine.to_bits())), Ok((kind_a, 0)));
    assert_ne!(mine.to_bits(), 0, "no handle is 0");
}

#[cfg(feature = "capi")]
#[test]
fn the_c_abi_refuses_another_crowds_handle() {
    use std::ptr;
    use throng::capi::*;

    let graph = include_str!("../src/demo/locomotion.json");
    // SAFETY: every pointer below is a live local or one the calls returned.
    unsafe {
        let mut humanoid = ptr::null_mut();
        assert_eq!(throng_character_humanoid(26, &mut humanoid), ThrongStatus::Ok);
        let mut crowds = [ptr::null_mut(); 2];
        let mut kinds = [0u32; 2];
        let mut handles = [[0u64; 1]; 2];
        for c in 0..2 {
            assert_eq!(throng_crowd_create(&mut crowds[c]), ThrongStatus::Ok);
            assert_eq!(
                throng_crowd_add_archetype(crowds[c], humanoid, graph.as_ptr(), graph.len(), &mut kinds[c]),
                ThrongStatus::Ok
            );
            assert_eq!(throng_crowd_spawn(crowds[c], kinds[c], 1, handles[c].as_mut_ptr()), ThrongStatus::Ok);
        }
        let mut speed = 0;
        assert_eq!(throng_crowd_find_param(crowds[0], kinds[0], c"speed".as_ptr(), &mut speed), ThrongStatus::Ok);
        assert_eq!(
            throng_crowd_set_float(crowds[0], speed, handles[1].as_ptr(), [2.0f32].as_ptr(), 1),
            ThrongStatus::StaleHandle
        );
        assert_eq!(throng_crowd_despawn(crowds[0], handles[1].as_ptr(), 1), ThrongStatus::StaleHandle);
        let mut count = 0;
        assert_eq!(throng_crowd_num_characters(crowds[0], kinds[0], &mut count), ThrongStatus::Ok);
        assert_eq!(count, 1, "crowd A keeps its character");
        assert_eq!(throng_crowd_despawn(crowds[0], handles[0].as_ptr(), 1), ThrongStatus::Ok, "its own handle works");
        for crowd in crowds {
            throng_crowd_destroy(crowd);
        }
        throng_character_destroy(humanoid);
    }
}

#[test]
fn a_tiny_clip_under_a_huge_step_fires_each_event_once_and_a_layer_reports_at_most_the_cap() {
    use throng::state::MAX_EVENTS_PER_LAYER_UPDATE;
    // 0.1 ms of clip with 10 events, stepped by 3.4e38 s: billions of loops in one update.
    let few: Vec<ClipEvent> = (0..10).map(|i| ClipEvent::new(format!("e{i}"), i as f32 * 1.0e-5)).collect();
    let (mut crowd, kind) = walk_crowd(1.0e-4, &few);
    crowd.spawn(kind).unwrap();
    crowd.spawn(kind).unwrap();
    crowd.update(3.4e38).unwrap();
    let fired = crowd.events(kind).unwrap();
    assert_eq!(fired.len(), 2 * few.len(), "each event once per character, however many loops");
    assert!(fired.iter().all(|e| e.count > 1_000_000), "the loops are counted, not repeated");
    assert_eq!(crowd.events_dropped(kind), Ok(0));

    // A clip holding more events than the cap: the layer reports the cap and counts the rest.
    let many: Vec<ClipEvent> = (0..1000).map(|i| ClipEvent::new("step", i as f32 * 1.0e-7)).collect();
    let (mut crowd, kind) = walk_crowd(1.0e-4, &many);
    crowd.spawn(kind).unwrap();
    crowd.update(1.0e6).unwrap();
    assert_eq!(crowd.events(kind).unwrap().len(), MAX_EVENTS_PER_LAYER_UPDATE);
    assert_eq!(crowd.events_dropped(kind), Ok((many.len() - MAX_EVENTS_PER_LAYER_UPDATE) as u64));
    crowd.update(0.0).unwrap();
    assert_eq!(crowd.events_dropped(kind), Ok(0), "the count is the last update's");
}

/// A one-layer script over `WALK` with `extra` keys (steps, events…).
fn script(layer: &str, state: &str, extra: &str) -> String {
    let graph = WALK.replace("\"Base\"", &format!("{layer:?}")).replace("\"Walk\"", &format!("{state:?}"));
    format!(r#"{{ "stateGraph": {graph}, "clips": {{ "*": 1.0 }}, {extra} }}"#)
}

#[test]
fn trace_scripts_whose_numbers_overflow_an_f32_are_refused_with_the_field_named() {
    use throng::trace::{Script, TraceError, run_script};
    let cases = [
        (r#""dt": 1e39, "frames": 2"#, "dt"),
        (r#""dt": 3.4e38, "frames": 3"#, "dt"),
        (r#""dts": [0.1, 3.4e38, 3.4e38]"#, "dts[2]"),
        (r#""dt": 0.1, "frames": 2, "speed": 1e39"#, "speed"),
        (r#""dts": [0.1, 1e30], "speed": 1e10"#, "dts[1]"),
    ];
    for (extra, field) in cases {
        match Script::parse(&script("Base", "Walk", extra)) {
            Err(TraceError::Overflow { path, .. }) => assert_eq!(path, field, "{extra}"),
            other => panic!("{extra}: expected an overflow at {field}, got {other:?}"),
        }
    }
    // Extreme values that fit are accepted, and every line they print is JSON.
    for extra in [r#""dt": 3.0e38, "frames": 1"#, r#""dt": 1e-45, "frames": 3"#, r#""dts": [1e38, 1e38, 1e38]"#] {
        let lines = run_script(&script("Base", "Walk", extra)).unwrap_or_else(|e| panic!("{extra}: {e}"));
        for line in lines {
            let json = line.to_json();
            let value: serde_json::Value =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("{extra}: {e}: {json}"));
            assert!(value["t"].is_f64() || value["t"].is_u64(), "{json}");
        }
    }
}

/// A writer that keeps what it was given and fails once it holds a whole line.
struct Failing {
    written: Vec<u8>,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written.contains(&b'\n') {
            return Err(std::io::Error::other("disk full"));
        }
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_trace_is_written_line_by_line_as_its_frames_run() {
    use throng::trace::{MAX_TRACE_FRAMES, Script, TraceError};
    // Long names over the longest run a script may ask for: collected, the lines would copy
    // the names for every frame (gigabytes); written, each frame goes out as it runs.
    let long = "x".repeat(10_000);
    let text = script(&long, &format!("{long}y"), &format!(r#""dt": 0.016, "frames": {MAX_TRACE_FRAMES}"#));
    let script = Script::parse(&text).unwrap();
    let mut out = Failing { written: Vec::new() };
    match script.write_json(&mut out) {
        Err(TraceError::Write { frame: 1, message }) => assert!(message.contains("disk full"), "{message}"),
        other => panic!("the writer failed on frame 1's line, got {other:?}"),
    }
    // Frame 0's line was written whole before frame 1 ran, and it is JSON.
    let text = String::from_utf8(out.written).unwrap();
    let first = text.lines().next().unwrap();
    let line: serde_json::Value = serde_json::from_str(first).unwrap();
    assert_eq!(line["frame"], 0);
    assert_eq!(line["layer"].as_str(), Some(long.as_str()));
    assert_eq!(text.matches('\n').count(), 1, "one line, frame 0's");
}

#[test]
fn the_trace_output_matches_the_collected_lines_and_counts_events_crossed_more_than_once() {
    use throng::trace::{Script, run_script};
    let extra = r#""dts": [0.5, 2.6], "clipEvents": { "*": [{ "name": "step", "time": 0.25 }] }"#;
    let text = script("Base", "Walk", extra);
    let lines = run_script(&text).unwrap();
    let mut out = Vec::new();
    Script::parse(&text).unwrap().write_json(&mut out).unwrap();
    let written = String::from_utf8(out).unwrap();
    let collected: Vec<String> = lines.iter().map(|l| l.to_json()).collect();
    assert_eq!(written.lines().collect::<Vec<_>>(), collected);
    assert_eq!(lines[0].events, [("step".to_owned(), 1.0, 1)]);
    // 0.5 s → 3.1 s crosses 0.25 s of the second and third loops: once, counted twice.
    assert_eq!(lines[1].events, [("step".to_owned(), 1.0, 2)]);
    assert!(collected[1].ends_with(r#","events":[{"name":"step","weight":1,"count":2}]}"#), "{}", collected[1]);
    assert!(!collected[0].contains("count"), "a single crossing prints as before");
}

#[test]
fn a_frame_job_context_for_another_joint_count_says_so() {
    use throng::demo::DemoCharacter;
    use throng::eval::EvalError;
    use throng::eval::frame_layers::{EvalContext, FrameJob};
    use throng::program::{LayerProgram, LayerSetup, OutputLayout};
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let layers = [LayerSetup::default()];
    let mut context = EvalContext::new(1, 1, joints - 1);
    let mut output = vec![0.5; joints * 16];
    // The low-level job: the test is about the job refusing a context the caller built wrong.
    let job = FrameJob {
        rig: &demo.rig,
        clips: &[],
        layers: &layers,
        samples: &[],
        programs: &[LayerProgram::default()],
        dt_s: 0.0,
        context: &mut context,
        layout: OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut [0],
        root_motion: &mut [],
    };
    let err = job.run().unwrap_err();
    assert_eq!(err, EvalError::ContextJoints { context_joints: joints - 1, rig_joints: joints });
    assert!(
        err.to_string().contains(&format!("{} joints", joints - 1)) && err.to_string().contains(&joints.to_string()),
        "{err}"
    );
    assert!(output.iter().all(|&v| v == 0.5), "a refused job writes nothing");
}
