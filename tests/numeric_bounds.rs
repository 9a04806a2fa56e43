//! Finite in, finite out (docs/errors.md, "Numeric bounds"): rigs and clips at and near their
//! bounds, on chains as deep as a rig may be, give finite matrices on both evaluators (the
//! GPU's where an adapter exists); past the bounds they are refused with a typed error that
//! says which joint and what. A near-paused state's normalized transition stays finite, and
//! inertialization offsets stay within their bound whatever the switch's step or curve.

// One character's sample range in a slice is exactly what the evaluation jobs take.
#![allow(clippy::single_range_in_vec_init)]

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

use std::sync::Arc;

use glam::{Mat4, Quat, Vec3};
use proptest::prelude::*;
use support::compare::{GPU_TOLERANCE, largest, worst_abs_diff};
use support::cpu_frame;
use throng::eval::frame_layers::EvalContext;
use throng::eval::inertialize::{MAX_OFFSET_M, MIN_VELOCITY_DT_S};
use throng::eval::root_motion::{RootDelta, crowd_root_motion};
use throng::eval::{EvalCrowdJob, EvalError};
use throng::gpu::{GpuCrowd, GpuCrowdOptions, GpuError};
use throng::graph::CompiledGraph;
use throng::program::{ClipSample, LayerBlend, LayerProgram, LayerSetup, OutputLayout, ProgramError, SwitchMode};
use throng::runtime::CrowdRuntime;
use throng::state::{Archetype, ClipBinding};
use throng::{
    Clip, ClipError, MAX_CHAIN_SCALE, MAX_INVERSE_BIND, MAX_JOINTS, MAX_SCALE, MAX_TRANSLATION_M, Rig, RigError,
    Transform,
};

fn chain_rig(rest: Vec<Transform>, inverse_bind: Option<Vec<Mat4>>) -> Result<Rig, RigError> {
    let n = rest.len();
    Rig::new((0..n).map(|j| format!("j{j}")).collect(), (0..n).map(|j| j.checked_sub(1)).collect(), rest, inverse_bind)
}

/// Runs the CPU crowd job over `ranges` into a fresh output; `Err` when it refuses.
fn cpu_crowd(
    rig: &Rig,
    clips: &[Clip],
    samples: &[ClipSample],
    ranges: &[std::ops::Range<u32>],
) -> Result<Vec<f32>, EvalError> {
    let mut output = vec![0.0; ranges.len() * rig.num_joints() * 16];
    EvalCrowdJob { rig, clips, samples, sample_ranges: ranges, layout: OutputLayout::Mat4, output: &mut output }
        .run()?;
    Ok(output)
}

/// Runs the CPU frame job for one character over a base layer and `additive` additive layers,
/// each blending clip 0 and clip 1 half and half at `time_s`.
fn cpu_layers(rig: &Rig, clips: &[Clip], additive: usize, time_s: f32) -> Result<Vec<f32>, EvalError> {
    let mut layers = vec![LayerSetup::default()];
    layers.extend((0..additive).map(|_| LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() }));
    let mut samples = Vec::new();
    let mut programs = Vec::new();
    for _ in &layers {
        let first = samples.len() as u32;
        samples.push(ClipSample::new(0, time_s, 0.5));
        samples.push(ClipSample::new(1 % clips.len() as u32, time_s, 0.5));
        programs.push(support::settled_program(first, 2));
    }
    let mut context = EvalContext::new(1, layers.len(), rig.num_joints());
    cpu_frame((rig, clips, &layers), &samples, &programs, 1.0 / 60.0, &mut context)
}

fn first_non_finite(output: &[f32]) -> Option<(usize, f32)> {
    output.iter().position(|v| !v.is_finite()).map(|i| (i / 16, output[i]))
}

// ---------------------------------------------------------------------------------------------
// Regressions: finite numbers that overflowed along a chain

/// Scale 10 on each of 64 joints and identity inverse binds passed every per-joint check, and
/// both evaluators returned success with NaN matrices (10^39 overflows). Now the rig says
/// which joint takes the product past the bound.
#[test]
fn a_chain_of_large_finite_scales_is_refused_naming_the_joint() {
    let rest = vec![Transform { translation: Vec3::Y * 1e3, rotation: Quat::IDENTITY, scale: Vec3::splat(10.0) }; 64];
    let err = chain_rig(rest, Some(vec![Mat4::IDENTITY; 64])).unwrap_err();
    // 10^8 is the bound itself, so joint 8 (the ninth factor of 10) is the first past it.
    assert!(
        matches!(err, RigError::OutOfBounds { joint: 8, what: "rest scale product along the chain", limit, .. } if limit == MAX_CHAIN_SCALE),
        "{err:?}"
    );
    assert!(err.to_string().contains("j8"), "{err}");
}

/// The same overflow reached through clips on a plain rig: every frame of each clip within the
/// per-joint bound, the chain past it. Refused by both evaluators before anything is written.
#[test]
fn clips_whose_scales_overflow_along_the_chain_are_refused_by_the_evaluators() {
    let joints = 64;
    let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); joints], None).unwrap();
    let pose = vec![Transform { scale: Vec3::splat(10.0), ..Transform::from_translation(Vec3::Y) }; joints];
    let clips = [Clip::from_poses("grow", joints, pose, 0.0, false).unwrap()];
    let samples = [ClipSample::new(0, 0.0, 1.0)];
    let err = cpu_crowd(&rig, &clips, &samples, &[0..1]).unwrap_err();
    assert!(matches!(err, EvalError::Program(ProgramError::OutOfBounds { joint: 8, .. })), "{err:?}");
    if let Some(gpu) = gpu_support::gpu() {
        let err =
            GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).expect_err("refused");
        assert!(matches!(err, GpuError::Program(ProgramError::OutOfBounds { joint: 8, .. })), "{err:?}");
    }
}

/// Values past the per-joint bounds are typed errors naming joint, frame and what.
#[test]
fn values_past_the_per_joint_bounds_are_typed_errors() {
    let mut rest = vec![Transform::IDENTITY; 3];
    rest[2].translation.x = MAX_TRANSLATION_M * 2.0;
    assert!(matches!(chain_rig(rest, None), Err(RigError::OutOfBounds { joint: 2, what: "rest translation", .. })));
    let mut rest = vec![Transform::IDENTITY; 3];
    rest[1].scale.y = -MAX_SCALE * 2.0;
    assert!(matches!(chain_rig(rest, None), Err(RigError::OutOfBounds { joint: 1, what: "rest scale", .. })));
    let mut ibm = vec![Mat4::IDENTITY; 3];
    ibm[1].w_axis.z = 1e9;
    assert!(matches!(
        chain_rig(vec![Transform::IDENTITY; 3], Some(ibm)),
        Err(RigError::OutOfBounds { joint: 1, what: "inverse bind matrix entry", .. })
    ));
    // A tiny rest scale derives a huge inverse bind matrix.
    let mut rest = vec![Transform::IDENTITY; 3];
    rest[0].scale = Vec3::splat(1e-9);
    assert!(matches!(
        chain_rig(rest, None),
        Err(RigError::OutOfBounds { joint: 0, what: "inverse bind matrix entry", .. })
    ));
    let mut poses = vec![Transform::IDENTITY; 6];
    poses[5].translation.z = 3e7;
    let err = Clip::from_poses("far", 3, poses, 1.0, false).unwrap_err();
    assert!(matches!(err, ClipError::OutOfBounds { frame: 1, joint: 2, what: "translation", .. }), "{err:?}");
    assert!(err.to_string().contains("far"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Property: whatever is accepted evaluates to finite matrices

/// A chain of `len` joints whose numbers sit at or near the bounds: translations up to the
/// bound, the root's scale at the growth that puts the chain's product at its bound through
/// `additive` additive layers, the others at most 1 in magnitude (mirrored, and with `tiny`
/// zero or 1e-30 too).
fn extreme_chain(len: usize, additive: usize, tiny: bool) -> impl Strategy<Value = Vec<Transform>> {
    let growth = 0.999 * MAX_CHAIN_SCALE.powf(1.0 / (1 + additive) as f32);
    let translation = prop_oneof![
        Just(MAX_TRANSLATION_M),
        Just(-MAX_TRANSLATION_M),
        -MAX_TRANSLATION_M..MAX_TRANSLATION_M,
        -1.0f32..1.0
    ];
    let small = if tiny { 1e-30 } else { 0.5 };
    let scale = prop_oneof![6 => Just(1.0f32), 2 => 0.5f32..1.0, 1 => Just(-1.0), 1 => Just(small), 1 => Just(if tiny { 0.0 } else { 0.75 })];
    let joint = (
        (translation.clone(), translation.clone(), translation),
        (scale.clone(), scale.clone(), scale),
        any::<[i8; 4]>(),
    )
        .prop_map(|((tx, ty, tz), (sx, sy, sz), q)| {
            let q = Quat::from_xyzw(q[0] as f32, q[1] as f32, q[2] as f32, q[3] as f32 + 0.5).normalize();
            Transform { translation: Vec3::new(tx, ty, tz), rotation: q, scale: Vec3::new(sx, sy, sz) }
        });
    (prop::collection::vec(joint, len), prop_oneof![Just(growth), Just(-growth)]).prop_map(|(mut chain, root)| {
        chain[0].scale = Vec3::new(root, 1.0, -root);
        chain
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Rigs and two clips at the bounds, up to [`MAX_JOINTS`] deep, with inverse binds at their
    /// bound or derived: when the rig, the clips and the evaluator all accept them, every matrix
    /// of the crowd job and of a frame with `additive` additive layers is finite.
    #[test]
    fn accepted_extreme_rigs_and_clips_give_finite_matrices(
        (additive, rest, poses, given_ibm) in (1usize..=MAX_JOINTS, 0usize..=3).prop_flat_map(|(len, additive)| {
            (Just(additive), extreme_chain(len, additive, false), extreme_chain(3 * len, additive, true), any::<bool>())
        }),
    ) {
        let len = rest.len();
        let ibm = given_ibm.then(|| vec![extreme_inverse_bind(); len]);
        let Ok(rig) = chain_rig(rest, ibm) else { return Ok(()) };
        let Ok(a) = Clip::from_poses("a", len, poses, 1.0, true) else { return Ok(()) };
        let b = a.to_additive(rig.rest_pose());
        let clips = [a, b];
        let samples = [ClipSample::new(0, 0.3, 0.5), ClipSample::new(1, 0.7, 0.5)];
        if let Ok(output) = cpu_crowd(&rig, &clips, &samples, &[0..2]) {
            prop_assert!(first_non_finite(&output).is_none(), "crowd job: joint and value {:?}", first_non_finite(&output));
        }
        if let Ok(output) = cpu_layers(&rig, &clips, additive, 0.4) {
            prop_assert!(first_non_finite(&output).is_none(), "frame job, {additive} additive layers: joint and value {:?}", first_non_finite(&output));
        }
    }
}

/// An inverse bind matrix at the bound: every entry `MAX_INVERSE_BIND` in magnitude but the last
/// row, which `Rig::new` requires to be `(0, 0, 0, 1)`.
fn extreme_inverse_bind() -> Mat4 {
    let b = MAX_INVERSE_BIND;
    Mat4::from_cols_array(&[b, -b, b, 0.0, b, b, -b, 0.0, -b, b, b, 0.0, b, -b, b, 1.0])
}

/// The GPU evaluator on a few chains at the bounds (cheap: three rigs).
#[test]
fn accepted_extreme_chains_give_finite_matrices_on_the_gpu() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let growth = MAX_CHAIN_SCALE.powf(1.0 / 8.0);
    for len in [1, 17, MAX_JOINTS] {
        let rest: Vec<Transform> = (0..len)
            .map(|j| Transform {
                translation: Vec3::new(MAX_TRANSLATION_M, -MAX_TRANSLATION_M, MAX_TRANSLATION_M * 0.5),
                rotation: Quat::from_rotation_z(j as f32 * 0.3),
                scale: if j < 8 { Vec3::splat(growth) } else { Vec3::new(1.0, -1.0, 0.5) },
            })
            .collect();
        let ibm = vec![extreme_inverse_bind(); len];
        let rig = chain_rig(rest.clone(), Some(ibm)).unwrap();
        let clips = [Clip::from_poses("rest", len, rest, 0.0, false).unwrap()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let cpu = cpu_crowd(&rig, &clips, &samples, &[0..1]).unwrap();
        assert_eq!(first_non_finite(&cpu), None, "CPU, {len} joints");
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
        let out = gpu_support::frame(&gpu, &mut crowd, &samples, &[0..1]);
        assert_eq!(first_non_finite(&out), None, "GPU, {len} joints");
    }
}

// ---------------------------------------------------------------------------------------------
// A near-paused state's normalized transition

/// A state at a subnormal speed makes a normalized transition out of it last `0.5 / 1e-40`
/// seconds, which is infinite in f32: the pose program carried it and the frame was refused.
/// The duration is now the longest finite one, and the frame evaluates.
#[test]
fn a_subnormal_speed_with_a_normalized_duration_gives_a_finite_program() {
    let graph = r#"{ "layers": [{ "name": "Base",
        "states": [{ "name": "START" }, { "name": "A", "speed": 1e-40 }, { "name": "B" }],
        "transitions": [{ "from": "START", "to": "A" },
                        { "from": "A", "to": "B", "time": 0.5, "durationUnit": "normalized",
                          "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] }] }],
        "parameters": { "go": { "name": "go", "type": "BOOLEAN", "value": false } } }"#;
    let g = Arc::new(CompiledGraph::from_json(graph).unwrap());
    let arch = Archetype::new(g, |_| Some(ClipBinding { clip: 0, duration_s: 1.0 })).unwrap();
    let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); 3], None).unwrap();
    let mut bent = rig.rest_pose().to_vec();
    bent[1].rotation = Quat::from_rotation_z(0.5);
    let clips = vec![Clip::from_poses("bend", 3, [rig.rest_pose().to_vec(), bent].concat(), 1.0, true).unwrap()];
    let mut runtime = CrowdRuntime::new();
    let kind = runtime.add_archetype(arch, rig, clips, vec![LayerSetup::default()]).unwrap();
    let handle = runtime.spawn(kind).unwrap();
    let go = runtime.param(kind, "go").unwrap();
    let mut output = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    for frame in 0..4 {
        if frame == 2 {
            runtime.set_bool(go, &[handle], &[true]).unwrap();
        }
        runtime.update(1.0 / 60.0).unwrap();
        let programs = runtime.crowd().programs(kind).unwrap();
        assert!(programs.iter().all(|p| p.decay_s.is_finite()), "frame {frame}: {programs:?}");
        output.fill(f32::NAN);
        runtime
            .evaluate(kind, OutputLayout::Mat4, &mut output, &mut [])
            .unwrap_or_else(|e| panic!("frame {frame} refused: {e}"));
        assert_eq!(first_non_finite(&output), None, "frame {frame}");
    }
}

// ---------------------------------------------------------------------------------------------
// Inertialization offsets: bounded whatever the switch's step, duration or halflife

/// A 200-joint chain of 1 m bones (inside every bound) whose clip slides each joint 1e6 m
/// along x in a second, shown for two frames 1/60 s apart, then switched to standing still by
/// `mode` with `decay_s` after a step of `switch_dt_s`, and shown four more frames
/// `later_dt_s` apart. Each frame: its step, the sample and the program.
struct SlideSwitch {
    mode: SwitchMode,
    decay_s: f32,
    switch_dt_s: f32,
    later_dt_s: f32,
}

const SLIDE_JOINTS: usize = 200;

impl SlideSwitch {
    fn rig_and_clips() -> (Rig, [Clip; 2]) {
        let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); SLIDE_JOINTS], None).unwrap();
        let moved = vec![Transform::from_translation(Vec3::new(1e6, 1.0, 0.0)); SLIDE_JOINTS];
        let slide =
            Clip::from_poses("slide", SLIDE_JOINTS, [rig.rest_pose().to_vec(), moved].concat(), 1.0, false).unwrap();
        let still = Clip::from_poses("still", SLIDE_JOINTS, rig.rest_pose().to_vec(), 0.0, false).unwrap();
        (rig, [slide, still])
    }

    fn frames(&self) -> Vec<(f32, ClipSample, LayerProgram)> {
        let switching = LayerProgram::TRANSITIONING | LayerProgram::SWITCHED;
        let steps = [(1.0 / 60.0, 0, 0), (1.0 / 60.0, 0, 0), (self.switch_dt_s, 1, switching)];
        let later = [(self.later_dt_s, 1, LayerProgram::TRANSITIONING); 4];
        let mut time_s = 0.0f32;
        steps
            .into_iter()
            .chain(later)
            .enumerate()
            .map(|(frame, (dt_s, clip, flags))| {
                if frame > 0 {
                    time_s += dt_s;
                }
                let transitioning = flags != 0;
                let program = LayerProgram {
                    first_sample: 0,
                    num_target: 1,
                    num_secondary: 0,
                    transition: if transitioning { 0 } else { u32::MAX },
                    mode: if transitioning { self.mode as u32 } else { 0 },
                    flags,
                    target_weight: 1.0,
                    progress: if transitioning { 0.5 } else { 1.0 },
                    weight: 1.0,
                    decay_s: self.decay_s,
                };
                (dt_s, ClipSample::new(clip, if clip == 0 { time_s } else { 0.0 }, 1.0), program)
            })
            .collect()
    }

    /// Every frame's matrices from the CPU frame job.
    fn cpu(&self) -> Vec<Vec<f32>> {
        let (rig, clips) = Self::rig_and_clips();
        let mut context = EvalContext::new(1, 1, SLIDE_JOINTS);
        self.frames()
            .into_iter()
            .enumerate()
            .map(|(frame, (dt_s, sample, program))| {
                cpu_frame((&rig, &clips, &[LayerSetup::default()]), &[sample], &[program], dt_s, &mut context)
                    .unwrap_or_else(|e| panic!("{:?}, frame {frame} refused: {e}", self.mode))
            })
            .collect()
    }
}

/// Switch steps, curves, durations and halflives that drove offsets far past any pose before:
/// a step of 1e-34 s made each joint's velocity 1.7e38 m/s (summed down the chain, NaN); a
/// velocity measured over the shortest step, 1.7e8 m/s, decaying over a halflife or duration
/// of years grows each offset to 1e23 m and more. (Durations stay below 1.8e19 s: past that
/// the quintic's squared duration overflows, which the GPU and the CPU's scalar form take as
/// a cut, and the CPU's basis form, which never squares it, does not.)
fn slide_switches() -> Vec<SlideSwitch> {
    let long = |mode, decay_s, later_dt_s| SlideSwitch { mode, decay_s, switch_dt_s: MIN_VELOCITY_DT_S, later_dt_s };
    vec![
        SlideSwitch { mode: SwitchMode::InertializeSpring, decay_s: 1.0, switch_dt_s: 1e-34, later_dt_s: 1.0 / 60.0 },
        SlideSwitch { mode: SwitchMode::InertializeQuintic, decay_s: 1.0, switch_dt_s: 1e-34, later_dt_s: 1.0 / 60.0 },
        long(SwitchMode::InertializeSpring, 1e28, 1e20),
        long(SwitchMode::InertializeQuintic, 1e18, 1e15),
        long(SwitchMode::InertializeQuinticOvershootControl, 1e18, 1e15),
    ]
}

/// The CPU: every matrix finite, and no joint moved by more than `MAX_OFFSET_M` per component
/// from the pose it shows without offsets (a chain of `MAX_OFFSET_M` steps at most, here joint
/// 0's: the root's model translation is its local one).
#[test]
fn inertialization_offsets_stay_within_their_bound_on_the_cpu() {
    for switch in slide_switches() {
        for (frame, output) in switch.cpu().iter().enumerate() {
            assert_eq!(first_non_finite(output), None, "{:?}, frame {frame}", switch.mode);
            if frame >= 2 {
                let root = Vec3::new(output[12], output[13], output[14]);
                let offset = root - Vec3::Y;
                assert!(
                    largest(offset.abs().to_array()) <= MAX_OFFSET_M,
                    "{:?}, frame {frame}: root offset {offset}",
                    switch.mode
                );
            }
        }
    }
}

/// The same switches through `GpuCrowd`: finite, and the CPU's matrices within
/// `GPU_TOLERANCE` relative to each joint's largest entry. The chains reach 1e7 m (or, with
/// the offsets at their bound, 2.6e10 m), where one `f32` step is metres: an absolute 1e-4
/// would only measure the two evaluators' rounding in local-to-model.
#[test]
fn inertialization_offsets_stay_within_their_bound_on_the_gpu() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let (rig, clips) = SlideSwitch::rig_and_clips();
    for switch in slide_switches() {
        let cpu = switch.cpu();
        let mut crowd = GpuCrowd::with_layers(
            &gpu.device,
            &gpu.queue,
            &rig,
            &clips,
            &[LayerSetup::default()],
            GpuCrowdOptions::default(),
        )
        .unwrap();
        for (frame, ((dt_s, sample, program), expected)) in switch.frames().into_iter().zip(&cpu).enumerate() {
            let got = gpu_support::layered_frame(&gpu, &mut crowd, &[sample], &[program], dt_s);
            assert_eq!(first_non_finite(&got), None, "{:?}, frame {frame}", switch.mode);
            for (joint, (e, g)) in expected.chunks_exact(16).zip(got.chunks_exact(16)).enumerate() {
                let tolerance = GPU_TOLERANCE * largest(e.iter().map(|v| v.abs())).max(1.0);
                let error = worst_abs_diff(e, g);
                assert!(
                    error <= tolerance,
                    "{:?}, frame {frame}, joint {joint}: difference {error} over {tolerance}\n expected {e:?}\n      got {g:?}",
                    switch.mode
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Routes to NaN a review of the first bounds found: additive deltas and root motion

/// docs/errors.md, "Numeric bounds": finite in, finite out, by construction. `Clip::to_additive`
/// takes any reference pose; a reference rotation of zero length (finite numbers, which
/// `Clip::from_poses` refuses as a frame) makes every delta rotation
/// `(0·q).normalize()` = NaN (src/pose.rs `make_additive`). The clip's extents
/// (src/clip.rs `extents`) and `program::validate_clips` looked at translations and scales only,
/// so the NaN clip was accepted and the frame job returned success with NaN matrices. A reference
/// rotation whose squared length overflows (finite components above about 1.8e19) makes a delta
/// whose own squared length overflows, which normalises to zero: finite, but an additive layer
/// at full weight then blends the identity onto it to zero, and NaN again. Both are refused
/// (`ProgramError::OutOfBounds` on the joint).
#[test]
fn additive_clip_from_a_degenerate_reference_rotation_is_refused() {
    let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); 3], None).unwrap();
    let mut bent = rig.rest_pose().to_vec();
    bent[1].rotation = Quat::from_rotation_z(0.5);
    let clip = Clip::from_poses("bend", 3, [rig.rest_pose().to_vec(), bent].concat(), 1.0, true).unwrap();
    for rotation in [Quat::from_xyzw(0.0, 0.0, 0.0, 0.0), Quat::from_xyzw(0.0, 0.0, 1e20, 1e20)] {
        let mut reference = rig.rest_pose().to_vec();
        reference[1].rotation = rotation;
        let delta = clip.to_additive(&reference);
        let clips = [clip.clone(), delta];
        let refused = cpu_layers(&rig, &clips, 1, 0.25);
        assert!(
            matches!(refused, Err(EvalError::Program(ProgramError::OutOfBounds { joint: 1, .. }))),
            "reference rotation {rotation}: {refused:?}"
        );
    }
}

/// docs/errors.md, "Numeric bounds" step 7: root motion is differences of root translations,
/// "at most 2T per clip and loop". The loops are not bounded: `ClipSample::advance_s` is never
/// validated (src/program.rs `validate_sample_range` checks time and weight only), and
/// `clip_root_delta` (src/eval/root_motion.rs) multiplies the per-loop travel by
/// `floor(t1/d) − floor(t0/d)`, which for `advance_s = f32::MAX` on a 0.5 s clip is infinite:
/// the y component (always 0) becomes `0 × ∞` = NaN, the travel ∞. Returned as success.
#[test]
fn root_motion_of_a_huge_advance_is_refused_or_finite() {
    let run = Clip::from_poses(
        "run",
        1,
        vec![Transform::IDENTITY, Transform::from_translation(Vec3::new(0.0, 0.0, 1.0))],
        0.5,
        true,
    )
    .unwrap();
    let samples = [ClipSample { clip: 0, time_s: 0.25, weight: 1.0, advance_s: f32::MAX }];
    let programs = [LayerProgram { flags: LayerProgram::ROOT_MOTION, ..support::settled_program(0, 1) }];
    let mut out = [RootDelta::default()];
    if crowd_root_motion(&[run], &samples, &programs, 1, &mut out).is_ok() {
        let r = out[0];
        assert!(r.translation.is_finite() && r.yaw.is_finite(), "accepted samples gave root motion {r:?}");
    }
}
