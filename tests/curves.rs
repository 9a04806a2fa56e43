//! Curves on clips: resampled at the clip's frames, sampled at its time, blended by the pose's
//! weights (the weighted sum of each clip's value within 1e-6), read per character from the
//! layer programs, and used as a procedural chain's weight.

mod support;

use glam::{Quat, Vec3};
use support::Rng;
use throng::eval::sample::{CurveBinding, blend_curve, layer_curve};
use throng::program::{ClipSample, LayerProgram, ProceduralSetup, ProceduralTargets, SwitchMode, TwoBoneChain};
use throng::{Clip, ClipError, Interpolation, Rig, Track, Transform};

const FRAMES: usize = 31;

/// A clip of `duration_s` whose curve "planted" is `a + b·t`: linear, so resampling keeps it
/// exact and the expected value at any time is known without the clip.
fn clip(name: &str, duration_s: f32, looping: bool, a: f32, b: f32) -> Clip {
    Clip::from_poses(name, 1, vec![Transform::IDENTITY; FRAMES], duration_s, looping)
        .unwrap()
        .with_curve("planted", &Track::linear(vec![0.0, duration_s], vec![a, a + b * duration_s]))
        .unwrap()
}

fn line(a: f32, b: f32, duration_s: f32, looping: bool, time_s: f32) -> f32 {
    let t = if looping { time_s.rem_euclid(duration_s) } else { time_s.clamp(0.0, duration_s) };
    a + b * t
}

#[test]
fn blended_curves_are_the_weighted_sum_of_each_clips_value() {
    let specs = [(1.2, true, 0.1, 0.5), (0.8, false, 1.0, -1.0), (2.0, true, -0.3, 0.2)];
    let mut clips: Vec<Clip> =
        specs.iter().enumerate().map(|(i, &(d, l, a, b))| clip(&format!("c{i}"), d, l, a, b)).collect();
    // A fourth clip without the curve counts 0.
    clips.push(Clip::from_poses("bare", 1, vec![Transform::IDENTITY; 2], 1.0, true).unwrap());
    let binding = CurveBinding::new(&clips, "planted");
    assert!(binding.is_bound() && !CurveBinding::new(&clips, "other").is_bound());
    let mut rng = Rng(21);
    for case in 0..500 {
        let n = 1 + rng.below(4);
        let samples: Vec<ClipSample> =
            (0..n).map(|_| ClipSample::new(rng.below(4) as u32, rng.range(-3.0, 3.0), rng.range(0.0, 2.0))).collect();
        let total: f32 = samples.iter().map(|s| s.weight).sum();
        let expected: f32 = samples
            .iter()
            .filter(|s| (s.clip as usize) < specs.len())
            .map(|s| {
                let (d, l, a, b) = specs[s.clip as usize];
                line(a, b, d, l, s.time_s) * s.weight / total
            })
            .sum();
        let got = blend_curve(&clips, &samples, &binding);
        assert!((got - expected).abs() <= 1e-6, "case {case}: {samples:?}: got {got}, expected {expected}");
    }
    assert_eq!(blend_curve(&clips, &[], &binding), 0.0);
    assert_eq!(blend_curve(&clips, &[ClipSample::new(0, 0.3, 0.0)], &binding), 0.0);
}

/// Weights that sum past `f32::MAX` (each finite, so valid) blend a curve by their ratios, as the
/// same ratios in small numbers do.
#[test]
fn curves_blend_by_their_ratios_where_weights_sum_past_the_float_range() {
    let clips = [clip("c0", 1.2, true, 0.1, 0.5), clip("c1", 0.8, false, 1.0, -1.0)];
    let binding = CurveBinding::new(&clips, "planted");
    let blend =
        |a: f32, b: f32| blend_curve(&clips, &[ClipSample::new(0, 0.4, a), ClipSample::new(1, 0.3, b)], &binding);
    for (huge, small) in [((f32::MAX, f32::MAX), (1.0, 1.0)), ((f32::MAX, f32::MAX * 0.5), (2.0, 1.0))] {
        let (got, expected) = (blend(huge.0, huge.1), blend(small.0, small.1));
        assert!((got - expected).abs() <= 1e-6, "weights {huge:?}: {got}, weights {small:?}: {expected}");
    }
}

#[test]
fn a_layer_curve_follows_what_the_layer_shows() {
    let clips = vec![clip("walk", 1.0, true, 1.0, 0.0), clip("idle", 1.0, true, 0.0, 0.0)];
    let binding = CurveBinding::new(&clips, "planted");
    // Character 0 crossfades idle → walk at 25 %; character 1 inertializes to walk; character
    // 2 fades from a snapshot (frozen) into idle. Two layers, the curve read on layer 0.
    let samples = vec![
        ClipSample::new(0, 0.1, 0.25),
        ClipSample::new(1, 0.1, 0.75),
        ClipSample::new(0, 0.2, 1.0),
        ClipSample::new(1, 0.3, 1.0),
    ];
    let base = |first, num_target, num_secondary, mode: SwitchMode, flags| LayerProgram {
        first_sample: first,
        num_target,
        num_secondary,
        mode: mode as u32,
        flags,
        weight: 1.0,
        target_weight: 1.0,
        progress: 1.0,
        transition: 0,
        ..LayerProgram::default()
    };
    let top = LayerProgram { num_target: 0, ..LayerProgram::default() };
    let programs = vec![
        base(0, 1, 1, SwitchMode::Crossfade, LayerProgram::TRANSITIONING),
        top,
        base(2, 1, 0, SwitchMode::InertializeQuintic, LayerProgram::TRANSITIONING),
        top,
        base(3, 1, 0, SwitchMode::Frozen, LayerProgram::TRANSITIONING | LayerProgram::SOURCE_SNAPSHOT),
        top,
    ];
    let mut out = [f32::NAN; 3];
    layer_curve(&clips, &samples, &programs, 2, 0, &binding, &mut out);
    assert!((out[0] - 0.25).abs() < 1e-6 && (out[1] - 1.0).abs() < 1e-6 && out[2].abs() < 1e-6, "{out:?}");
    layer_curve(&clips, &samples, &programs, 2, 1, &binding, &mut out);
    assert_eq!(out, [0.0; 3], "the top layer shows nothing");
}

#[test]
fn a_curve_weights_an_ik_chain() {
    let rig = Rig::new(
        ["hip", "knee", "ankle"].map(String::from).to_vec(),
        vec![None, Some(0), Some(1)],
        vec![
            Transform::from_translation(Vec3::Y),
            Transform::from_translation_rotation(Vec3::NEG_Y * 0.45, Quat::from_rotation_x(-0.3)),
            Transform::from_translation(Vec3::NEG_Y * 0.45),
        ],
        None,
    )
    .unwrap();
    let setup =
        ProceduralSetup { two_bone: vec![TwoBoneChain::new(0, 1, 2)], ..Default::default() }.check(&rig).unwrap();
    let clips = vec![
        Clip::from_poses("step", 3, rig.rest_pose().repeat(FRAMES), 1.0, true)
            .unwrap()
            .with_curve(
                "planted",
                &Track { times_s: vec![0.0, 0.5], values: vec![1.0, 0.0], interpolation: Interpolation::Step },
            )
            .unwrap(),
    ];
    let binding = CurveBinding::new(&clips, "planted");
    let mut targets = ProceduralTargets::new(&setup, 2);
    let target = Vec3::new(0.0, 0.3, 0.3);
    targets.set_two_bone(0, &[0, 1], &[target; 2], &[Vec3::Z; 2], &[Quat::IDENTITY; 2], &[1.0; 2]).unwrap();
    // Character 0 is in the planted half of the step, character 1 in the other.
    let planted: Vec<f32> =
        [0.2, 0.7].iter().map(|&t| blend_curve(&clips, &[ClipSample::new(0, t, 1.0)], &binding)).collect();
    assert_eq!(planted, [1.0, 0.0]);
    targets.set_two_bone_weight(0, &[0, 1], &planted).unwrap();
    let mut poses = [rig.rest_pose(), rig.rest_pose()].concat();
    throng::eval::procedural::ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut poses }
        .run()
        .unwrap();
    assert_ne!(&poses[..3], rig.rest_pose(), "the planted foot reaches");
    assert_eq!(&poses[3..], rig.rest_pose(), "the lifted one is left alone");
}

#[test]
fn bad_curves_are_refused() {
    let base = || Clip::from_poses("c", 1, vec![Transform::IDENTITY; 2], 1.0, true).unwrap();
    let good = Track::linear(vec![0.0, 1.0], vec![0.0, 1.0]);
    let cases: [(&str, Track<f32>); 4] = [
        ("", good.clone()),
        ("x", Track::linear(vec![0.0, 1.0], vec![0.0, f32::NAN])),
        ("x", Track::linear(vec![1.0, 0.0], vec![0.0, 1.0])),
        ("x", Track::linear(vec![0.0, 1.0], vec![0.0])),
    ];
    for (name, track) in cases {
        let err = base().with_curve(name, &track).unwrap_err();
        assert!(matches!(err, ClipError::BadCurve { .. }), "{name:?}: {err}");
    }
    let twice = base().with_curve("x", &good).unwrap().with_curve("x", &good).unwrap_err();
    assert!(matches!(twice, ClipError::BadCurve { .. }), "{twice}");
    assert_eq!(base().with_curve("x", &good).unwrap().sample_curve(1, 0.0), None);
}
