//! Compact clip storage: every clip of the built-in character and of `../shared/data`
//! round-trips within its error bound (model space, worst joint, every frame); the bound
//! decides the format; bad bounds are typed errors; sampling a compact clip equals sampling its
//! decoded frames; and the GPU evaluates compact clips as the CPU does.
//!
//! The data tests skip with a message when `../shared/data` is absent, unless
//! `THRONG_REQUIRE_DATA=1`; the GPU tests skip without an adapter, unless `THRONG_REQUIRE_GPU=1`.

// One character's samples are one range: `&[0..1]` is a crowd of one, not a typo.
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec3};
use throng::clip::compact::{CompressionReport, DEFAULT_MAX_ERROR_M, KeptFull};
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalCrowdJob;
use throng::eval::local_to_model::local_to_model;
use throng::eval::root_motion::{RootDelta, clip_root_delta};
use throng::eval::sample::sample_blend;
use throng::gpu::{GpuCrowd, GpuCrowdOptions};
use throng::graph::CompiledGraph;
use throng::import::bvh::{BvhOptions, load_bvh};
use throng::import::gltf::{GltfOptions, load_gltf};
use throng::program::{ClipSample, OutputLayout};
use throng::runtime::CrowdRuntime;
use throng::{Clip, ClipError, MAX_TRANSLATION_M, Rig, Transform};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;
use support::Rng;
use support::compare::{GPU_TOLERANCE, assert_matrices_close_with, largest, nan_max};

/// Model-space joint positions of frame `frame` of `clip` on `rig`.
fn model_positions(rig: &Rig, clip: &Clip, frame: usize) -> Vec<Vec3> {
    let mut model = vec![Mat4::IDENTITY; rig.num_joints()];
    local_to_model(rig.parents(), &clip.frame(frame), &mut model);
    model.iter().map(|m| m.w_axis.truncate()).collect()
}

/// The worst model-space joint distance between two clips over every joint of every frame,
/// with its frame and joint, measured through the public API (decoded frames).
fn worst_error(rig: &Rig, original: &Clip, compact: &Clip) -> (f32, usize, usize) {
    let mut worst = (0.0, 0, 0);
    for frame in 0..original.num_frames() {
        let (a, b) = (model_positions(rig, original, frame), model_positions(rig, compact, frame));
        for (joint, (a, b)) in a.iter().zip(&b).enumerate() {
            let d = a.distance(*b);
            assert!(d.is_finite(), "{} frame {frame} joint {joint}: decoded to {b}", original.name());
            if d > worst.0 {
                worst = (d, frame, joint);
            }
        }
    }
    worst
}

/// Compresses `clip` within `max_error_m` and checks, independently of the report, that every
/// joint of every frame lies within the bound; returns the report.
#[track_caller]
fn round_trip(rig: &Rig, clip: &Clip, max_error_m: f32) -> CompressionReport {
    let (compact, report) = clip.compress(rig, max_error_m).unwrap();
    let (error, frame, joint) = worst_error(rig, clip, &compact);
    assert!(
        error <= max_error_m,
        "{}: frame {frame} joint {joint} is {:.4} mm off, over the {:.4} mm bound ({report:?})",
        clip.name(),
        error * 1e3,
        max_error_m * 1e3
    );
    assert!(
        (error - report.worst_error_m).abs() <= 1e-6,
        "{}: measured {error} m, reported {} m",
        clip.name(),
        report.worst_error_m
    );
    assert_eq!(compact.compact_format(), report.format, "{}", clip.name());
    assert_eq!(compact.storage_bytes(), report.storage_bytes, "{}", clip.name());
    assert_eq!(
        (compact.num_frames(), compact.duration_s(), compact.is_looping()),
        (clip.num_frames(), clip.duration_s(), clip.is_looping())
    );
    report
}

fn print_report(rig_name: &str, r: &CompressionReport) {
    let bits = r.format.map_or_else(
        || format!("full ({:?})", r.kept_full),
        |f| format!("{}/{}", f.rotation_bits(), f.translation_bits()),
    );
    eprintln!(
        "{rig_name:>24} {:>20}  bits {bits:>6}  {:>4.1} B/joint-frame  worst {:.4} mm (joint {}, frame {})  {} -> {} bytes",
        r.clip,
        r.bytes_per_joint_frame,
        r.worst_error_m * 1e3,
        r.worst_joint,
        r.worst_frame,
        r.full_storage_bytes,
        r.storage_bytes
    );
}

/// The shared data's rigs and clips: both glTF sample models and the three BVH takes (all in
/// centimetres, read as metres with `unit_scale` 0.01). `None` after saying so when the folder
/// is absent, a failure under `THRONG_REQUIRE_DATA=1`.
fn data_assets() -> Option<Vec<(String, Rig, Vec<Clip>)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if !dir.is_dir() {
        assert!(
            std::env::var("THRONG_REQUIRE_DATA").as_deref() != Ok("1"),
            "THRONG_REQUIRE_DATA=1 but {} is missing",
            dir.display()
        );
        eprintln!("skipping: shared data not found at {}", dir.display());
        return None;
    }
    let mut assets = Vec::new();
    for model in ["RiggedSimple", "RiggedFigure"] {
        let path = dir.join("gltf").join(model).join(format!("{model}.gltf"));
        let asset = load_gltf(&path, &GltfOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assets.push((model.to_owned(), asset.rig, asset.clips));
    }
    for take in ["test_mocapbank", "test_freebvh", "locomotion_long"] {
        let path = dir.join("bvh").join(format!("{take}.bvh"));
        let bvh = load_bvh(&path, &BvhOptions { unit_scale: 0.01, ..BvhOptions::default() })
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assets.push((take.to_owned(), bvh.rig, vec![bvh.clip]));
    }
    Some(assets)
}

#[test]
fn built_in_clips_round_trip_within_their_bound() {
    for (rig_name, demo) in [("humanoid", DemoCharacter::humanoid()), ("humanoid_64", DemoCharacter::humanoid_64())] {
        for clip in &demo.clips {
            for max_error_m in [DEFAULT_MAX_ERROR_M, 1e-3] {
                let report = round_trip(&demo.rig, clip, max_error_m);
                print_report(rig_name, &report);
                // The built-in clips animate no scale and span a few metres at most: the
                // default bound is met by a compact format, not by falling back.
                assert!(report.format.is_some(), "{rig_name} {}: kept full ({:?})", clip.name(), report.kept_full);
                assert!(report.storage_bytes * 3 < report.full_storage_bytes, "{rig_name} {}: {report:?}", clip.name());
            }
        }
    }
}

#[test]
fn shared_data_clips_round_trip_within_their_bound() {
    let Some(assets) = data_assets() else { return };
    let mut compact = 0;
    for (name, rig, clips) in &assets {
        assert!(!clips.is_empty(), "{name} has no clip");
        for clip in clips {
            let report = round_trip(rig, clip, DEFAULT_MAX_ERROR_M);
            print_report(name, &report);
            compact += usize::from(report.format.is_some());
        }
    }
    assert!(compact > 0, "no imported clip compressed at the default bound");
}

#[test]
fn a_tighter_bound_takes_more_bits_or_keeps_the_clip_full() {
    let demo = DemoCharacter::humanoid();
    let jump = demo.clip("jump").unwrap();
    let loose = round_trip(&demo.rig, jump, 1e-3);
    let loose_format = loose.format.expect("jump compresses within 1 mm");
    assert!(loose.bytes_per_joint_frame < 8.0, "1 mm is met in about a word a joint-frame: {loose:?}");
    // Just under what the loose format achieved: nothing as cheap qualifies any more.
    let tight = round_trip(&demo.rig, jump, loose.worst_error_m * 0.5);
    match tight.format {
        Some(f) => {
            assert_ne!(f, loose_format);
            assert!(tight.bytes_per_joint_frame > loose.bytes_per_joint_frame, "{tight:?} vs {loose:?}");
        }
        None => assert!(matches!(tight.kept_full, Some(KeptFull::OverBound { .. }))),
    }
    // Nothing quantised reproduces a moving clip exactly.
    let exact = round_trip(&demo.rig, jump, 0.0);
    assert_eq!(exact.format, None);
    let Some(KeptFull::OverBound { best_error_m }) = exact.kept_full else { panic!("{exact:?}") };
    assert!(
        best_error_m > 0.0 && best_error_m <= nan_max(tight.worst_error_m, loose.worst_error_m),
        "{best_error_m} vs {tight:?}, {loose:?}"
    );
    assert_eq!(exact.bytes_per_joint_frame, size_of::<Transform>() as f32);
}

#[test]
fn animated_scale_keeps_the_clip_full() {
    let rig =
        Rig::new(vec!["root".into(), "arm".into()], vec![None, Some(0)], vec![Transform::IDENTITY; 2], None).unwrap();
    let poses: Vec<Transform> = (0..10)
        .flat_map(|f| {
            let arm = Transform {
                translation: Vec3::X,
                rotation: Quat::from_rotation_z(f as f32 * 0.1),
                scale: Vec3::splat(1.0 + f as f32 * 0.1),
            };
            [Transform::IDENTITY, arm]
        })
        .collect();
    let clip = Clip::from_poses("grow", 2, poses, 0.3, true).unwrap();
    let (kept, report) = clip.compress(&rig, 1.0).unwrap();
    assert_eq!(report.kept_full, Some(KeptFull::ScaleAnimated { joint: 1, frame: 1 }));
    assert_eq!(kept, clip, "kept full, unchanged");
}

#[test]
fn a_static_pose_takes_a_word_a_joint_and_extreme_values_stay_full() {
    let rig =
        Rig::new(vec!["root".into(), "arm".into()], vec![None, Some(0)], vec![Transform::IDENTITY; 2], None).unwrap();
    let pose = [
        Transform::from_translation_rotation(Vec3::new(0.3, 1.0, -2.0), Quat::from_rotation_y(2.0)),
        Transform::from_translation_rotation(Vec3::X * 0.4, Quat::from_rotation_z(-0.7)),
    ];
    let still = Clip::from_poses("still", 2, pose.to_vec(), 0.0, false).unwrap();
    // Every range is empty: the cheapest candidate, one word a joint-frame, and an error of
    // float rounding alone (the largest quaternion component is rebuilt from the others).
    // Joint-frames are stored four joints to a group, so the two joints' frame takes a group
    // of four words: 16 bytes, 8 a joint.
    let report = round_trip(&rig, &still, 1e-6);
    assert_eq!(report.bytes_per_joint_frame, 8.0, "{report:?}");
    // Translations at the bound a clip may hold (`MAX_TRANSLATION_M` either way; nothing past
    // it is a clip, so no range can overflow) compress like any other: finite, within bound.
    let far = [
        Transform::from_translation(Vec3::splat(-MAX_TRANSLATION_M)),
        Transform::from_translation(Vec3::splat(MAX_TRANSLATION_M)),
    ];
    let poses: Vec<Transform> = far.iter().flat_map(|t| [*t, pose[1]]).collect();
    let clip = Clip::from_poses("far", 2, poses, 1.0, false).unwrap();
    let (compact, report) = clip.compress(&rig, 1.0).unwrap();
    assert!(report.kept_full.is_none() && report.worst_error_m <= 1.0, "{report:?}");
    assert!(compact.poses().iter().all(|p| p.is_finite()), "{report:?}");
}

#[test]
fn bad_compression_arguments_are_typed_errors() {
    let demo = DemoCharacter::humanoid();
    let idle = demo.clip("idle").unwrap();
    for bad in [f32::NAN, -1e-4, f32::INFINITY, f32::NEG_INFINITY] {
        match idle.compress(&demo.rig, bad) {
            Err(ClipError::BadErrorBound { clip, max_error_m }) => {
                assert_eq!(clip, "idle");
                assert!(max_error_m.to_bits() == bad.to_bits());
            }
            other => panic!("bound {bad}: {other:?}"),
        }
    }
    let other_rig = DemoCharacter::humanoid_64().rig;
    assert!(matches!(idle.compress(&other_rig, 1e-4), Err(ClipError::JointCount { tracks: 26, rig_joints: 64, .. })));
    let (compact, _) = idle.compress(&demo.rig, 1e-4).unwrap();
    assert!(matches!(compact.compress(&demo.rig, 1e-4), Err(ClipError::AlreadyCompact { .. })));
    let reference = idle.frame(0).into_owned();
    assert!(matches!(
        idle.compress_additive(&demo.rig, &reference[1..], 1e-4),
        Err(ClipError::JointCount { tracks: 25, rig_joints: 26, .. })
    ));
}

/// An additive delta is not a pose: its translations are about zero, so measured as one, a
/// rotation's error moves no joint, and the bound means nothing where the delta is seen.
/// `compress_additive` measures each frame applied onto the reference: there, every joint of
/// every compressed delta stays within the bound.
#[test]
fn compressed_additive_deltas_stay_within_the_bound_where_they_are_applied() {
    use throng::eval::layers::apply_additive;
    let demo = DemoCharacter::humanoid();
    let rig = &demo.rig;
    let positions = |pose: &[Transform]| {
        let mut model = vec![Mat4::IDENTITY; rig.num_joints()];
        local_to_model(rig.parents(), pose, &mut model);
        model.iter().map(|m| m.w_axis.truncate()).collect::<Vec<Vec3>>()
    };
    let mut compressed = 0;
    for clip in &demo.clips {
        let reference = clip.frame(0).into_owned();
        let delta = clip.to_additive(&reference);
        let (compact, report) = delta.compress_additive(rig, &reference, DEFAULT_MAX_ERROR_M).unwrap();
        if compact.compact_format().is_none() {
            continue;
        }
        compressed += 1;
        assert!(report.worst_error_m <= DEFAULT_MAX_ERROR_M, "{report:?}");
        for f in 0..delta.num_frames() {
            let (mut exact, mut decoded) = (reference.clone(), reference.clone());
            apply_additive(&mut exact, &delta.frame(f), 1.0, None);
            apply_additive(&mut decoded, &compact.frame(f), 1.0, None);
            let error = largest(positions(&exact).iter().zip(positions(&decoded)).map(|(a, b)| a.distance(b)));
            assert!(
                error <= DEFAULT_MAX_ERROR_M * 1.001,
                "{} frame {f}: {:.4} mm applied (bound {} mm)",
                clip.name(),
                error * 1e3,
                DEFAULT_MAX_ERROR_M * 1e3
            );
        }
    }
    assert!(compressed >= 3, "only {compressed} of the built-in clips' deltas compressed");
}

/// Characters sampling one to three clips of `num_clips` at random times (past either end
/// too) and weights.
fn random_programs(num_characters: usize, num_clips: usize, seed: u64) -> (Vec<ClipSample>, Vec<Range<u32>>) {
    let mut rng = Rng(seed);
    let mut samples = Vec::new();
    let ranges = (0..num_characters)
        .map(|c| {
            let start = samples.len() as u32;
            for _ in 0..=(c % 3) {
                let clip = rng.next_u32() % num_clips as u32;
                samples.push(ClipSample::new(clip, rng.range(-2.0, 4.0), rng.range(0.1, 1.0)));
            }
            start..samples.len() as u32
        })
        .collect();
    (samples, ranges)
}

fn compressed(rig: &Rig, clips: &[Clip]) -> Vec<Clip> {
    clips.iter().map(|c| c.compress(rig, DEFAULT_MAX_ERROR_M).unwrap().0).collect()
}

#[test]
fn sampling_a_compact_clip_equals_sampling_its_decoded_frames() {
    let demo = DemoCharacter::humanoid_64();
    let compact = compressed(&demo.rig, &demo.clips);
    assert!(compact.iter().all(|c| c.compact_format().is_some()));
    let decoded: Vec<Clip> = compact.iter().map(Clip::decompressed).collect();
    let (samples, ranges) = random_programs(64, compact.len(), 7);
    let joints = demo.rig.num_joints();
    let (mut a, mut b, mut original) =
        (vec![Transform::IDENTITY; joints], vec![Transform::IDENTITY; joints], vec![Transform::IDENTITY; joints]);
    for range in &ranges {
        let s = &samples[range.start as usize..range.end as usize];
        sample_blend(&compact, s, demo.rig.rest_pose(), &mut a);
        sample_blend(&decoded, s, demo.rig.rest_pose(), &mut b);
        assert_eq!(a, b, "samples {s:?}");
        // And both stay near the authored clips: a quantum is far below a millimetre.
        sample_blend(&demo.clips, s, demo.rig.rest_pose(), &mut original);
        for (j, (a, o)) in a.iter().zip(&original).enumerate() {
            assert!(a.translation.distance(o.translation) < 1e-3, "joint {j}: {a:?} vs {o:?}");
            assert!(a.rotation.dot(o.rotation).abs() > 1.0 - 1e-5, "joint {j}: {a:?} vs {o:?}");
        }
    }
    // Root motion reads single joints of compact clips the same way.
    for (c, d) in compact.iter().zip(&decoded) {
        let (rc, rd) = (clip_root_delta(c, 0, 0.1, 2.7), clip_root_delta(d, 0, 0.1, 2.7));
        assert_eq!(rc, rd, "{}", c.name());
    }
}

#[test]
fn gpu_evaluates_compact_clips_as_the_cpu_does() {
    let Some(gpu) = gpu() else { return };
    let demo = DemoCharacter::humanoid_64();
    let rig = &demo.rig;
    // Compact clips beside full ones in one table, so that both reads are exercised.
    let mut clips = compressed(rig, &demo.clips);
    clips.extend(demo.clips.iter().cloned());
    let (samples, ranges) = random_programs(96, clips.len(), 11);
    let mut expected = vec![0.0; ranges.len() * rig.num_joints() * 16];
    EvalCrowdJob {
        rig,
        clips: &clips,
        samples: &samples,
        sample_ranges: &ranges,
        layout: OutputLayout::Mat4,
        output: &mut expected,
    }
    .run()
    .unwrap();
    let options = GpuCrowdOptions { max_chunk_characters: Some(40), ..Default::default() };
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, &clips, options).unwrap();
    let got = gpu_support::frame(&gpu, &mut crowd, &samples, &ranges);
    assert_matrices_close_with(&expected, &got, 16, rig.num_joints(), GPU_TOLERANCE, "fused frame", |c| {
        format!("{:?}", &samples[ranges[c].start as usize..ranges[c].end as usize])
    });
}

#[test]
fn gpu_layered_frame_with_compact_clips_matches_frame_job() {
    let Some(gpu) = gpu() else { return };
    let demo = DemoCharacter::humanoid();
    let rig = &demo.rig;
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap());
    let bound = demo.bind(graph).unwrap();
    // Every clip of the archetype compact, additive deltas included.
    let clips = compressed(rig, &bound.clips);
    assert!(
        clips.iter().all(|c| c.compact_format().is_some()),
        "{:?}",
        clips.iter().map(Clip::compact_format).collect::<Vec<_>>()
    );
    let num_characters = 48;
    let mut runtime = CrowdRuntime::new();
    let kind =
        runtime.add_archetype(bound.archetype.clone(), rig.clone(), clips.clone(), bound.layers.clone()).unwrap();
    let handles = runtime.spawn_many(kind, num_characters).unwrap();
    let speed = runtime.param(kind, "speed").unwrap();
    let jump = runtime.param(kind, "jump").unwrap();
    let mut gpu_crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, &clips, &bound.layers, GpuCrowdOptions::default()).unwrap();
    let dt_s = 1.0 / 60.0;
    for frame in 0..40 {
        let speeds: Vec<f32> = (0..num_characters).map(|c| ((c * 7 + frame) % 40) as f32 * 0.1).collect();
        runtime.set_float(speed, &handles, &speeds).unwrap();
        if frame % 13 == 0 {
            runtime.set_trigger(jump, &handles[frame % 5..][..10], false).unwrap();
        }
        runtime.update(dt_s).unwrap();
        let mut expected = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
        let mut root_motion = vec![RootDelta::default(); num_characters];
        runtime.evaluate(kind, OutputLayout::Mat4, &mut expected, &mut root_motion).unwrap();
        let (samples, programs) = (runtime.crowd().samples(kind).unwrap(), runtime.crowd().programs(kind).unwrap());
        let got = gpu_support::layered_frame(&gpu, &mut gpu_crowd, samples, programs, dt_s);
        assert_matrices_close_with(
            &expected,
            &got,
            16,
            rig.num_joints(),
            GPU_TOLERANCE,
            &format!("layered frame {frame}"),
            |c| format!("speed {}", speeds[c]),
        );
    }
}
