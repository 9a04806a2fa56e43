//! One-shots on slots (issue #20): a clip outside the graph's states played on the humanoid's
//! upper-body layer, declared a slot, blending in, playing, firing its events and blending out
//! to the graph's own pose; an interrupting one-shot shows no pop on either evaluator.

use std::sync::Arc;

use support::compare::{GPU_TOLERANCE, assert_matrices_close, joint_jumps, largest, worst_abs_diff};
use throng::clip::ClipEvent;
use throng::demo::{DemoCharacter, JUMP, LOCOMOTION_GRAPH, WAVE};
use throng::gpu::{GpuCrowd, GpuCrowdOptions};
use throng::graph::{CompiledGraph, ProblemKind};
use throng::program::OutputLayout;
use throng::runtime::CrowdRuntime;
use throng::setup::BoundArchetype;
use throng::state::{AnimationEvent, ArchetypeId, Crowd, OneShot, StateError};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

const DT: f32 = 1.0 / 60.0;

/// The demo graph with its masked upper-body layer, `Wave` (weight × `wave`, 0 by default),
/// declared a slot.
fn slot_graph() -> String {
    let wave = r#""name": "Wave","#;
    assert!(LOCOMOTION_GRAPH.contains(wave), "the demo graph's wave layer is where this test edits it");
    LOCOMOTION_GRAPH.replacen(wave, r#""name": "Wave", "slot": true,"#, 1)
}

/// The humanoid bound to the slot graph, the jump clip carrying events at 30 % and 70 %.
fn bound(demo: &DemoCharacter) -> (BoundArchetype, u32) {
    let mut bound = demo.bind(Arc::new(CompiledGraph::from_json(&slot_graph()).unwrap())).unwrap();
    let jump = demo.clip_index(JUMP).unwrap() as u32;
    let duration_s = bound.clips[jump as usize].duration_s();
    let events = [ClipEvent::new("lift", 0.3 * duration_s), ClipEvent::new("land", 0.7 * duration_s)];
    bound.archetype = bound.archetype.with_clip_events(jump, &events).unwrap();
    (bound, jump)
}

fn runtime(demo: &DemoCharacter, bound: &BoundArchetype) -> (CrowdRuntime, ArchetypeId) {
    let mut runtime = CrowdRuntime::new();
    let kind = runtime
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .unwrap();
    (runtime, kind)
}

fn step(runtime: &mut CrowdRuntime, kind: ArchetypeId) -> Vec<f32> {
    runtime.update(DT).unwrap();
    let mut out = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    runtime.evaluate(kind, OutputLayout::Mat4, &mut out, &mut []).unwrap();
    out
}

/// 1,000 walking humanoids play the jump clip once on the upper-body slot; the same crowd
/// without it runs beside them. The one-shot blends in and out (its weight rising to 1 and
/// falling to 0), shows (the poses differ), fires each event once per character, and leaves the
/// pose the graph's own within 1e-5.
#[test]
fn a_one_shot_on_a_thousand_humanoids_blends_in_plays_fires_and_blends_out() {
    let demo = DemoCharacter::humanoid();
    let (bound, jump) = bound(&demo);
    let (mut shot, kind) = runtime(&demo, &bound);
    let (mut graph, graph_kind) = runtime(&demo, &bound);
    let crowd = shot.spawn_many(kind, 1000).unwrap();
    let same = graph.spawn_many(graph_kind, 1000).unwrap();
    let speed = shot.param(kind, "speed").unwrap();
    shot.set_float(speed, &crowd, &vec![1.5; 1000]).unwrap();
    graph.set_float(speed, &same, &vec![1.5; 1000]).unwrap();
    let duration_s = bound.clips[jump as usize].duration_s();
    let play = OneShot { blend_in_s: 0.2, blend_out_s: 0.25, ..OneShot::new(jump) };
    let (lift, land) = {
        let arch = shot.crowd().archetype(kind).unwrap();
        (arch.event_id("lift").unwrap(), arch.event_id("land").unwrap())
    };
    let mut fired = vec![[0u32; 2]; 1000];
    let mut weights = Vec::new();
    let mut worst_while_playing = 0.0f32;
    let frames = ((duration_s + 0.5) / DT) as usize + 30;
    let mut last = (Vec::new(), Vec::new());
    for frame in 0..frames {
        if frame == 10 {
            shot.play_one_shot(&crowd, "Wave", play).unwrap();
        }
        let (ours, theirs) = (step(&mut shot, kind), step(&mut graph, graph_kind));
        for e in shot.crowd().events(kind).unwrap().iter().filter(|e| e.state == AnimationEvent::ONE_SHOT) {
            assert_eq!((e.layer, e.clip, e.count), (2, jump, 1), "{e:?}");
            assert!(e.weight > 0.0 && e.weight <= 1.0, "{e:?}");
            fired[e.row as usize][usize::from(e.event == land)] += 1;
            assert!(e.event == lift || e.event == land);
        }
        if let Some(now) = shot.one_shot(crowd[0], "Wave").unwrap() {
            weights.push(now.weight);
            worst_while_playing = worst_while_playing.max(worst_abs_diff(&ours, &theirs));
        }
        last = (ours, theirs);
    }
    assert!(fired.iter().all(|f| *f == [1, 1]), "each event once per character: {:?}", &fired[..4]);
    let peak = weights.iter().position(|&w| w == 1.0).expect("the blend-in reaches full weight");
    assert!(weights[..=peak].windows(2).all(|w| w[1] > w[0]), "blending in: {weights:?}");
    let out = weights.iter().rposition(|&w| w == 1.0).unwrap();
    assert!(weights[out..].windows(2).all(|w| w[1] < w[0]), "blending out: {weights:?}");
    assert!((11..=13).contains(&peak), "0.2 s at 60 Hz: full weight after 12 updates, got {peak}");
    assert!(worst_while_playing > 0.05, "the one-shot shows: {worst_while_playing} m at most");
    for &h in &crowd {
        assert_eq!(shot.one_shot(h, "Wave").unwrap(), None, "done");
    }
    let joints = demo.rig.num_joints();
    assert_matrices_close(&last.1, &last.0, 16, joints, 1e-5, "after the one-shot, the graph's own pose");
}

/// A wave one-shot interrupting a jump one-shot mid-play shows no pop on the CPU or the GPU
/// (which takes the same programs): its worst joint jump stays near that of the same wave
/// blending in over the graph's pose, where a wave cutting in (no blend-in) jumps well past it.
#[test]
fn a_one_shot_interrupting_another_does_not_pop_on_either_evaluator() {
    let demo = DemoCharacter::humanoid();
    let (bound, jump) = bound(&demo);
    let wave = demo.clip_index(WAVE).unwrap() as u32;
    let (mut runtime, kind) = runtime(&demo, &bound);
    let joints = demo.rig.num_joints();
    // 0: jump, then the wave blending in over it; 1: the wave alone, over the graph's pose;
    // 2: jump, then the wave cutting in.
    let crowd = runtime.spawn_many(kind, 3).unwrap();
    let mut gpu = gpu_support::gpu().map(|context| {
        let mut crowd = GpuCrowd::with_layers(
            &context.device,
            &context.queue,
            &demo.rig,
            &bound.clips,
            &bound.layers,
            GpuCrowdOptions::default(),
        )
        .expect("the demo fits the device");
        let (tables, trees) = bound.archetype.expansion();
        crowd.set_expansion(tables, trees).expect("the archetype's own expansion");
        (context, crowd)
    });
    let blend = |clip| OneShot { blend_in_s: 0.3, blend_out_s: 0.3, ..OneShot::new(clip) };
    let (mut cpu_frames, mut gpu_frames) = (Vec::new(), Vec::new());
    for frame in 0..70 {
        if frame == 5 {
            runtime.play_one_shot(&[crowd[0], crowd[2]], "Wave", blend(jump)).unwrap();
        }
        if frame == 30 {
            runtime.play_one_shot(&crowd[..2], "Wave", blend(wave)).unwrap();
            runtime.play_one_shot(&crowd[2..], "Wave", OneShot { blend_in_s: 0.0, ..blend(wave) }).unwrap();
        }
        let out = step(&mut runtime, kind);
        if let Some((context, gpu_crowd)) = &mut gpu {
            let records = runtime.crowd().record_frame(kind).unwrap();
            gpu_crowd.set_frame_records(&records, DT).expect("the GPU takes what the CPU takes");
            let shown = gpu_support::encode_and_read(&context.device, &context.queue, gpu_crowd);
            assert_matrices_close(&out, &shown, 16, joints, GPU_TOLERANCE, &format!("GPU against CPU, frame {frame}"));
            gpu_frames.push(shown);
        }
        cpu_frames.push(out);
    }
    for (what, frames) in [("CPU", &cpu_frames), ("GPU", &gpu_frames)] {
        if frames.is_empty() {
            continue;
        }
        // `jumps` starts at frame 3: entries 24..60 are frames 27..63, around the interrupt.
        let window = |c: usize| largest(joint_jumps(frames, c, joints)[24..60].iter().copied());
        let (interrupted, alone, cut) = (window(0), window(1), window(2));
        assert!(interrupted <= 1.25 * alone, "{what}: interrupting {interrupted} m, blending in alone {alone} m");
        assert!(cut > 2.0 * alone, "{what}: a cut-in {cut} m should pop past the blend's {alone} m");
    }
}

#[test]
fn bad_one_shots_are_refused_and_play_nothing() {
    let demo = DemoCharacter::humanoid();
    let (bound, jump) = bound(&demo);
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype);
    let pair = [crowd.spawn(kind).unwrap(), crowd.spawn(kind).unwrap()];
    let refused = |got: Result<(), StateError>| got.expect_err("refused");
    for slot in ["Base", "Lean", "Gesture"] {
        assert!(matches!(
            refused(crowd.play_one_shot(&pair, slot, OneShot::new(jump))),
            StateError::UnknownSlot { name } if name == slot
        ));
    }
    for bad in [
        OneShot { blend_in_s: f32::NAN, ..OneShot::new(jump) },
        OneShot { blend_out_s: -1.0, ..OneShot::new(jump) },
        OneShot { weight: 1.5, ..OneShot::new(jump) },
        OneShot { weight: f32::NAN, ..OneShot::new(jump) },
    ] {
        assert!(matches!(refused(crowd.play_one_shot(&pair, "Wave", bad)), StateError::BadOneShot { .. }));
    }
    assert_eq!(
        refused(crowd.play_one_shot(&pair, "Wave", OneShot::new(999))),
        StateError::UnknownOneShotClip { clip: 999 }
    );
    crowd.despawn(pair[1]).unwrap();
    assert!(matches!(refused(crowd.play_one_shot(&pair, "Wave", OneShot::new(jump))), StateError::StaleHandle { .. }));
    crowd.update(DT).unwrap();
    crowd.update(DT).unwrap();
    assert_eq!(crowd.one_shot(pair[0], "Wave"), Ok(None), "no refused batch played anything");
    let problems =
        support::graph_problems(&slot_graph().replacen(r#""name": "Base","#, r#""name": "Base", "slot": true,"#, 1));
    assert!(problems.iter().any(|p| matches!(p.kind, ProblemKind::BaseLayerSlot)), "{problems:?}");
}

/// A looping one-shot plays until stopped, then blends out; despawning a character moves the
/// play of the one that takes its row with it; a paused character's one-shot holds.
#[test]
fn looping_one_shots_stop_on_command_follow_despawns_and_pause() {
    let demo = DemoCharacter::humanoid();
    let (bound, jump) = bound(&demo);
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype);
    let trio = [crowd.spawn(kind).unwrap(), crowd.spawn(kind).unwrap(), crowd.spawn(kind).unwrap()];
    let looping = OneShot { looping: true, blend_in_s: 0.1, blend_out_s: 0.1, ..OneShot::new(jump) };
    crowd.play_one_shot(&trio[1..], "Wave", looping).unwrap();
    let duration_s = crowd.archetype(kind).unwrap().one_shot_duration_s(jump).unwrap();
    let updates = (2.5 * duration_s / DT) as usize;
    for _ in 0..updates {
        crowd.update(DT).unwrap();
    }
    let playing = crowd.one_shot(trio[2], "Wave").unwrap().expect("a looping one-shot plays on");
    assert!(!playing.blending_out && playing.weight == 1.0, "{playing:?}");
    crowd.despawn(trio[0]).unwrap();
    assert_eq!(crowd.row_of(trio[2]).unwrap().1, 0, "the last row moved into the freed one");
    assert_eq!(crowd.one_shot(trio[2], "Wave").unwrap(), Some(playing), "its play moved with it");
    crowd.set_time_scale(&trio[2..], &[0.0]).unwrap();
    crowd.update(DT).unwrap();
    assert_eq!(crowd.one_shot(trio[2], "Wave").unwrap(), Some(playing), "paused, it holds");
    crowd.stop_one_shot(&trio[1..], "Wave").unwrap();
    for _ in 0..4 {
        crowd.update(DT).unwrap();
    }
    assert!(crowd.one_shot(trio[1], "Wave").unwrap().is_some_and(|p| p.blending_out));
    assert!(crowd.one_shot(trio[2], "Wave").unwrap().is_some_and(|p| p.blending_out && p.weight == 1.0));
    for _ in 0..4 {
        crowd.update(DT).unwrap();
    }
    assert_eq!(crowd.one_shot(trio[1], "Wave").unwrap(), None, "0.1 s of blend-out, then the graph");
}

/// `playOneShot` and `stopOneShot` in `throng-trace` scripts: a 1 s one-shot clip with an
/// event at 0.5 s, started on frame 2 at 0.1 s steps, fires it on frame 7 (its clock reaches
/// 0.5 s five updates after the start) on the slot layer's line.
#[test]
fn trace_scripts_play_and_stop_one_shots() {
    let graph = r#"{ "layers": [
        { "name": "Base", "states": [{ "name": "START" }, { "name": "Idle", "defaultState": true }] },
        { "name": "Gesture", "slot": true, "weight": 0,
          "states": [{ "name": "START" }, { "name": "Rest", "defaultState": true }] }] }"#;
    let script = |events: &str| {
        format!(
            r#"{{ "stateGraph": {graph}, "clips": {{ "*": 2.0 }}, "oneShotClips": {{ "cheer": 1.0 }},
                "clipEvents": {{ "cheer": [{{ "name": "clap", "time": 0.5 }}] }},
                "dt": 0.1, "frames": 12, "events": [{events}] }}"#
        )
    };
    let run = |events: &str| throng::trace::run_script(&script(events)).unwrap_or_else(|e| panic!("{e}"));
    let play = r#"{ "frame": 2, "playOneShot": { "slot": "Gesture", "clip": "cheer", "blendIn": 0.1 } }"#;
    let fired: Vec<(usize, String)> =
        run(play).iter().filter(|l| !l.events.is_empty()).map(|l| (l.frame, l.layer.clone())).collect();
    assert_eq!(fired, [(7, "Gesture".to_owned())]);
    let stopped = format!(r#"{play}, {{ "frame": 4, "stopOneShot": {{ "slot": "Gesture" }} }}"#);
    assert!(run(&stopped).iter().all(|l| l.events.is_empty()), "stopped before 0.5 s, and blended out by then");
    for (bad, path) in [
        (r#"{ "frame": 1, "playOneShot": { "slot": "Gesture", "clip": "wave" } }"#, "events[0].playOneShot.clip"),
        (r#"{ "frame": 1, "playOneShot": { "slot": "Base", "clip": "cheer" } }"#, "events[0].playOneShot"),
        (
            r#"{ "frame": 1, "playOneShot": { "slot": "Gesture", "clip": "cheer", "fade": 1 } }"#,
            "events[0].playOneShot.fade",
        ),
        (r#"{ "frame": 1, "stopOneShot": { "slot": "Nope" } }"#, "events[0].stopOneShot"),
    ] {
        match throng::trace::run_script(&script(bad)) {
            Err(
                throng::trace::TraceError::State { path: p, .. } | throng::trace::TraceError::Script { path: p, .. },
            ) => assert_eq!(p, path, "{bad}"),
            other => panic!("{bad}: expected a refusal at {path}, got {other:?}"),
        }
    }
}
