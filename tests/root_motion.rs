//! Root motion from the state step's records (`eval::root_motion::records_root_motion`, what a
//! caller expanding records on the GPU runs: the viewer, throng-bevy) against the same from the
//! programs `Crowd::programs` expands (`crowd_root_motion`): bit for bit, every frame of a
//! script that walks, runs, jumps and crossfades, under animation LOD too; and its refusals.

use std::sync::Arc;

use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalError;
use throng::eval::expand::ExpandError;
use throng::eval::root_motion::{RootDelta, crowd_root_motion, records_root_motion};
use throng::graph::CompiledGraph;
use throng::program::{LayerRecord, ProgramError, RecordClock, RecordFrame};
use throng::runtime::CrowdRuntime;

mod support;
use support::Rng;
use support::drive::{DemoInputs, demo_runtime, drive_demo};

const DT: f32 = 1.0 / 60.0;

#[test]
fn records_root_motion_equals_the_programs_root_motion() {
    let num_characters = 400;
    // The demo graph with every transition a crossfade, so that base layers show two sides.
    let demo = DemoCharacter::humanoid();
    let mut json: serde_json::Value = serde_json::from_str(LOCOMOTION_GRAPH).unwrap();
    json["defaultSwitch"] = serde_json::json!({ "mode": "crossfade" });
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json.to_string()).unwrap())).unwrap();
    let mut runtime = CrowdRuntime::new();
    let kind = runtime
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .unwrap();
    let handles = runtime.spawn_many(kind, num_characters).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    // Half the crowd at lower rates: the records of rows not due still give their root motion.
    let rates: Vec<u8> = (0..num_characters).map(|i| [1, 1, 2, 4][i % 4]).collect();
    runtime.set_update_rate(&handles, &rates).unwrap();
    let mut rng = Rng(21);
    let mut speeds = vec![0.0; num_characters];
    let mut targets = vec![0.0f32; num_characters];
    let (mut moving, mut crossfading) = (0, 0);
    for frame in 0..240 {
        if frame % 20 == 0 {
            for t in &mut targets {
                *t = [0.0, 1.5, 2.75, 4.0][rng.below(4)];
            }
        }
        let asked: Vec<DemoInputs> = (0..num_characters)
            .map(|c| DemoInputs {
                target_speed_mps: targets[c],
                jump: rng.below(120) == 0,
                lean: rng.range(0.0, 1.0),
                wave: rng.range(0.0, 1.0),
            })
            .collect();
        drive_demo(&mut runtime, kind, &handles, &mut speeds, DT, |row| asked[row]);
        runtime.update(DT).unwrap();
        let crowd = runtime.crowd();
        let frame_records = crowd.record_frame(kind).unwrap();
        let records = frame_records.records();
        let mut got = vec![RootDelta::default(); num_characters];
        records_root_motion(&bound.clips, tables, trees, &frame_records, &mut got).unwrap();
        let mut expected = vec![RootDelta::default(); num_characters];
        let (samples, programs) = (crowd.samples(kind).unwrap(), crowd.programs(kind).unwrap());
        crowd_root_motion(&bound.clips, samples, programs, tables.num_layers(), &mut expected).unwrap();
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            let bits = |d: &RootDelta| [d.translation.x, d.translation.y, d.translation.z, d.yaw].map(f32::to_bits);
            assert!(
                g.translation.is_finite() && g.yaw.is_finite() && bits(g) == bits(e),
                "frame {frame} character {i}: expected {e:?}, got {g:?} (base record {:?})",
                records[i * tables.num_layers()]
            );
        }
        moving += got.iter().filter(|d| d.translation.length() > 0.0).count();
        crossfading += records
            .chunks_exact(tables.num_layers())
            .filter(|layers| layers[0].sets & LayerRecord::SECONDARY_SOURCE != 0)
            .count();
    }
    // The script exercised what it is for: travel, and crossfades' two sides.
    assert!(moving > 240 * num_characters / 2, "only {moving} moving character-frames");
    assert!(crossfading > 1_000, "only {crossfading} crossfading base layers");
}

#[test]
fn records_root_motion_refuses_what_the_expansion_refuses() {
    let (_, bound, mut runtime, kind, _) = demo_runtime(3);
    runtime.update(DT).unwrap();
    let crowd = runtime.crowd();
    let (tables, trees) = bound.archetype.expansion();
    let frame = crowd.record_frame(kind).unwrap();
    let (records, shots, inputs, clock) = (frame.records(), frame.shots(), frame.inputs(), *frame.clock());
    let clips = &bound.clips;
    let mut out = vec![RootDelta::default(); 3];
    let run = |records: &[LayerRecord], inputs: &[f32], clock: &RecordClock, clips, out: &mut [RootDelta]| {
        records_root_motion(clips, tables, trees, &RecordFrame::new(records, shots, inputs, *clock), out)
    };
    assert!(matches!(
        run(records, inputs, &clock, clips, &mut out[..2]),
        Err(EvalError::RootMotionCount { got: 2, characters: 3 })
    ));
    assert!(matches!(
        run(&records[1..], inputs, &clock, clips, &mut out),
        Err(EvalError::Expand(ExpandError::Sizes { .. }))
    ));
    assert!(matches!(
        run(records, &inputs[1..], &clock, clips, &mut out),
        Err(EvalError::Expand(ExpandError::Inputs { .. }))
    ));
    let mut stale = records.to_vec();
    stale[4].anchor = (clock.now as u16).wrapping_sub(10_000);
    assert!(matches!(
        run(&stale, inputs, &clock, clips, &mut out),
        Err(EvalError::Expand(ExpandError::Anchor { character: 1, .. }))
    ));
    let mut nan = records.to_vec();
    nan[3].phase = f32::NAN;
    assert!(matches!(
        run(&nan, inputs, &clock, clips, &mut out),
        Err(EvalError::Program(ProgramError::BadProgram { character: 1, layer: 0, .. }))
    ));
    let few = &clips[..1];
    assert!(matches!(
        run(records, inputs, &clock, few, &mut out),
        Err(EvalError::Expand(ExpandError::LeafClip { num_clips: 1, .. }))
    ));
    // Refusals write nothing.
    let marker = RootDelta { yaw: 7.0, ..RootDelta::default() };
    let mut kept = vec![marker; 3];
    assert!(run(&nan, inputs, &clock, clips, &mut kept).is_err());
    assert!(kept.iter().all(|d| *d == marker));
}
