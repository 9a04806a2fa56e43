//! The CPU evaluator as a user sees it: rest pose, layouts, validation, determinism.
#![allow(clippy::single_range_in_vec_init)] // one character's sample range, not a range of values

use std::ops::Range;

use glam::{Mat4, Quat, Vec3};
use throng::eval::skinning::read_matrix;
use throng::eval::{EvalCrowdJob, EvalError};
use throng::program::ClipSample;
use throng::program::{OutputLayout, ProgramError};
use throng::{Clip, Rig, Transform};

/// A three-joint arm: shoulder at y = 1.5, elbow 0.3 m along +X, wrist 0.25 m further.
fn arm() -> Rig {
    Rig::new(
        vec!["shoulder".into(), "elbow".into(), "wrist".into()],
        vec![None, Some(0), Some(1)],
        vec![
            Transform::from_translation(Vec3::new(0.0, 1.5, 0.0)),
            Transform::from_translation(Vec3::new(0.3, 0.0, 0.0)),
            Transform::from_translation(Vec3::new(0.25, 0.0, 0.0)),
        ],
        None,
    )
    .unwrap()
}

/// Elbow bends from 0 to 90° about Z over one second.
fn bend(rig: &Rig) -> Clip {
    let mut poses = Vec::new();
    for frame in 0..=30 {
        let angle = frame as f32 / 30.0 * std::f32::consts::FRAC_PI_2;
        let mut pose = rig.rest_pose().to_vec();
        pose[1].rotation = Quat::from_rotation_z(angle);
        poses.extend(pose);
    }
    Clip::from_poses("bend", rig.num_joints(), poses, 1.0, false).unwrap()
}

fn run(rig: &Rig, clips: &[Clip], samples: &[ClipSample], ranges: &[Range<u32>], layout: OutputLayout) -> Vec<f32> {
    let mut out = vec![f32::NAN; ranges.len() * rig.num_joints() * layout.floats_per_joint()];
    EvalCrowdJob { rig, clips, samples, sample_ranges: ranges, layout, output: &mut out }.run().unwrap();
    out
}

#[test]
fn rest_pose_skins_to_identity() {
    let rig = arm();
    for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
        let out = run(&rig, &[], &[], &[0..0, 0..0], layout);
        for m in out.chunks_exact(layout.floats_per_joint()) {
            assert!(read_matrix(layout, m).abs_diff_eq(Mat4::IDENTITY, 1e-6), "{layout:?}: {m:?}");
        }
    }
}

#[test]
fn bent_elbow_moves_the_wrist_where_hand_maths_says() {
    let rig = arm();
    let clips = [bend(&rig)];
    // At t = 1 s the elbow is at 90°: the wrist's bind position (0.55, 1.5, 0) maps to
    // (0.3, 1.75, 0): 0.25 m straight up from the elbow.
    let samples = [ClipSample::new(0, 1.0, 1.0)];
    for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
        let out = run(&rig, &clips, &samples, &[0..1], layout);
        let wrist = read_matrix(layout, &out[2 * layout.floats_per_joint()..]);
        let p = wrist.transform_point3(Vec3::new(0.55, 1.5, 0.0));
        assert!(p.abs_diff_eq(Vec3::new(0.3, 1.75, 0.0), 1e-5), "{layout:?}: {p}");
    }
}

#[test]
fn blending_two_times_halves_the_angle() {
    let rig = arm();
    let clips = [bend(&rig)];
    // 0° and 90° at equal weight → 45°.
    let samples = [ClipSample::new(0, 0.0, 0.5), ClipSample::new(0, 1.0, 0.5)];
    let out = run(&rig, &clips, &samples, &[0..2], OutputLayout::Mat4);
    let wrist = read_matrix(OutputLayout::Mat4, &out[32..48]);
    let p = wrist.transform_point3(Vec3::new(0.55, 1.5, 0.0));
    let expected = Vec3::new(0.3 + 0.25 * 45f32.to_radians().cos(), 1.5 + 0.25 * 45f32.to_radians().sin(), 0.0);
    assert!(p.abs_diff_eq(expected, 1e-5), "{p} vs {expected}");
}

#[test]
fn validation_refuses_each_bad_job_and_writes_nothing() {
    let rig = arm();
    let clips = [bend(&rig)];
    let ok = [ClipSample::new(0, 0.5, 1.0)];
    let check = |samples: &[ClipSample], ranges: &[Range<u32>], extra: usize, clips: &[Clip]| {
        let mut out = vec![7.0; ranges.len() * 3 * 16 + extra];
        let err = EvalCrowdJob {
            rig: &rig,
            clips,
            samples,
            sample_ranges: ranges,
            layout: OutputLayout::Mat4,
            output: &mut out,
        }
        .run()
        .unwrap_err();
        assert!(out.iter().all(|&v| v == 7.0), "output touched on {err}");
        err
    };
    assert!(matches!(check(&ok, &[0..1], 1, &clips), EvalError::OutputSize { expected: 48, got: 49, .. }));
    assert!(matches!(
        check(&ok, &[0..2], 0, &clips),
        EvalError::Program(ProgramError::SampleRange { character: 0, .. })
    ));
    assert!(matches!(
        check(&[ClipSample { clip: 3, ..ok[0] }], &[0..1], 0, &clips),
        EvalError::Program(ProgramError::UnknownClip { clip: 3, .. })
    ));
    for (time_s, weight) in [(f32::NAN, 1.0), (0.0, f32::INFINITY), (0.0, -1.0)] {
        let e = check(&[ClipSample::new(0, time_s, weight)], &[0..1], 0, &clips);
        assert!(matches!(e, EvalError::Program(ProgramError::BadSample { character: 0, sample: 0, .. })), "{e}");
    }
    let wrong_rig = Clip::from_poses("two", 2, vec![Transform::IDENTITY; 2], 0.0, true).unwrap();
    assert!(matches!(
        check(&ok, &[0..1], 0, &[wrong_rig]),
        EvalError::Program(ProgramError::ClipRigMismatch { clip_joints: 2, rig_joints: 3, .. })
    ));
}

#[test]
fn output_is_bitwise_identical_for_any_thread_count() {
    let rig = arm();
    let clips = [bend(&rig)];
    let n = 1000u32;
    let samples: Vec<ClipSample> = (0..n)
        .flat_map(|i| {
            let t = i as f32 * 0.0137;
            [ClipSample::new(0, t, 0.3), ClipSample::new(0, 1.0 - t, 0.7)]
        })
        .collect();
    let ranges: Vec<Range<u32>> = (0..n).map(|i| 2 * i..2 * i + 2).collect();
    let with_threads = |threads| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| run(&rig, &clips, &samples, &ranges, OutputLayout::Affine3x4))
    };
    let one = with_threads(1);
    for threads in [2, 4] {
        let other = with_threads(threads);
        assert!(one.iter().zip(&other).all(|(a, b)| a.to_bits() == b.to_bits()), "{threads} threads differ");
    }
}
