//! The GPU evaluator against its CPU mirror: each stage alone, the fused frame, chunking,
//! determinism, refusals, and the layout of the structs shared with WGSL.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

// One character's samples are one range: `&[0..1]` is a crowd of one, not a typo.
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;

use glam::{Mat4, Quat, Vec3};
use throng::eval::EvalCrowdJob;
use throng::eval::local_to_model::local_to_model;
use throng::eval::sample::sample_blend;
use throng::eval::sample_positions::sample_positions;
use throng::eval::skinning::skinning;
use throng::gpu::types::{
    BLEND_ADDITIVE, BLEND_OVERRIDE, BY_DEPTH_JOINT_MASK, BY_DEPTH_LEVEL_END_SHIFT, BY_DEPTH_PARENT_LANE_SHIFT,
    GPU_NO_PARENT, GpuChunkParams, GpuClipHeader, GpuLayerSetup, GpuLayerState, GpuPositionsParams, GpuRigJoint,
    GpuSampleRange, GpuTransform, LAYOUT_AFFINE3X4, LAYOUT_MAT4, LEVEL_BAND_DEPTHS_SHIFT, LEVEL_ITEM_JOINT_SHIFT,
    LEVEL_ITEM_LENGTH_SHIFT, LEVEL_ITEM_NO_PARENT, LEVEL_ITEM_PARENT_SHIFT, NO_MASK, NO_MEMORY, SPACE_LOCAL,
    SPACE_MESH, STATE_DECAY_SHIFT, STATE_SHOWN_MASK, STATE_SLOT_SHIFT, WORKGROUP_SIZE, level_group_threads,
    level_lanes,
};
use throng::gpu::{
    FrameKernel, GpuContext, GpuCrowd, GpuCrowdOptions, GpuError, Hierarchy, ShaderModuleKind, Stage, shader_source,
};
use throng::program::{ClipSample, LayerProgram, OutputLayout, ProgramError, SwitchMode};
use throng::{Clip, Rig, Transform};
use wgpu::naga;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::{gpu, test_rig};
use support::Rng;
use support::compare::{GPU_TOLERANCE, assert_matrices_close_with};
use support::wgsl::{check_struct, wgsl_u32_constant};

/// A clip whose joints turn in sine waves of their own frequency and phase.
fn wave_clip(rig: &Rig, name: &str, num_frames: usize, duration_s: f32, looping: bool, seed: u64) -> Clip {
    let mut rng = Rng(seed);
    let joints: Vec<(Vec3, f32, f32)> = (0..rig.num_joints())
        .map(|_| {
            (
                Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize(),
                rng.range(0.5, 3.0),
                rng.range(0.0, 6.0),
            )
        })
        .collect();
    let mut poses = Vec::with_capacity(num_frames * rig.num_joints());
    for frame in 0..num_frames {
        let t = if num_frames > 1 { frame as f32 / (num_frames - 1) as f32 } else { 0.0 };
        for (rest, &(axis, frequency, phase)) in rig.rest_pose().iter().zip(&joints) {
            let wave = (std::f32::consts::TAU * frequency * t + phase).sin();
            poses.push(Transform {
                translation: rest.translation + axis * 0.02 * wave,
                rotation: rest.rotation * Quat::from_axis_angle(axis, 0.8 * wave),
                scale: rest.scale * (1.0 + 0.05 * wave),
            });
        }
    }
    Clip::from_poses(name, rig.num_joints(), poses, duration_s, looping).unwrap()
}

/// `clip` with every rotation negated: the same motion on the other hemisphere.
fn negated(clip: &Clip) -> Clip {
    let poses = clip.poses().iter().map(|p| Transform { rotation: -p.rotation, ..*p }).collect();
    Clip::from_poses(
        format!("{} (negated)", clip.name()),
        clip.num_joints(),
        poses,
        clip.duration_s(),
        clip.is_looping(),
    )
    .unwrap()
}

const WALK: u32 = 0;
const WAVE: u32 = 1;
const WALK_NEGATED: u32 = 2;
const STATIC: u32 = 3;
const RUN: u32 = 4;

/// Clips of different lengths, frame counts and loop flags: looping walk (31 frames, 1 s),
/// clamped wave (17 frames, 0.6 s), the walk negated, a one-frame pose, looping run (45
/// frames, 1.4 s).
fn test_clips(rig: &Rig) -> Vec<Clip> {
    let walk = wave_clip(rig, "walk", 31, 1.0, true, 1);
    let walk_negated = negated(&walk);
    vec![
        walk,
        wave_clip(rig, "wave", 17, 0.6, false, 2),
        walk_negated,
        wave_clip(rig, "static", 1, 0.0, false, 3),
        wave_clip(rig, "run", 45, 1.4, true, 4),
    ]
}

/// Programs covering the cases users meet, cycling with the character index: no samples; one
/// sample at a negative time; one sample of the clamped clip past its end; three samples with
/// times past the end (wrap) and random weights; all-zero weights (rest pose); q and -q
/// blended; a static pose with a looping clip; three samples of which one weighs zero.
fn test_programs(num_characters: usize, seed: u64) -> (Vec<ClipSample>, Vec<Range<u32>>) {
    let mut rng = Rng(seed);
    let mut samples = Vec::new();
    let mut ranges = Vec::with_capacity(num_characters);
    for i in 0..num_characters {
        let start = samples.len() as u32;
        let mut add = |clip, time_s, weight| samples.push(ClipSample::new(clip, time_s, weight));
        let t = rng.range(-3.0, 5.0);
        match i % 8 {
            0 => {}
            1 => add(WALK, -rng.range(0.01, 2.5), 1.0),
            2 => add(WAVE, 0.6 + rng.range(0.0, 3.0), 0.7),
            3 => {
                add(WALK, 1.0 + rng.range(0.0, 3.0), rng.range(0.1, 2.0));
                add(WAVE, t, rng.range(0.1, 2.0));
                add(RUN, rng.range(-4.0, 6.0), rng.range(0.1, 2.0));
            }
            4 => {
                add(WALK, t, 0.0);
                add(RUN, t, 0.0);
            }
            5 => {
                let w = rng.range(0.2, 0.8);
                add(WALK, t, w);
                add(WALK_NEGATED, t, 1.0 - w);
            }
            6 => {
                add(STATIC, t, rng.range(0.1, 1.0));
                add(RUN, t, rng.range(0.1, 1.0));
            }
            _ => {
                add(RUN, t, rng.range(0.1, 1.0));
                add(WAVE, t, 0.0);
                add(WALK_NEGATED, rng.range(-2.0, 2.0), rng.range(0.1, 1.0));
            }
        }
        ranges.push(start..samples.len() as u32);
    }
    (samples, ranges)
}

/// What a failure prints about a character: its samples with clip, time and weight.
fn describe(samples: &[ClipSample], range: &Range<u32>) -> String {
    let list: Vec<String> = samples[range.start as usize..range.end as usize]
        .iter()
        .map(|s| format!("clip {} at {} s weight {}", s.clip, s.time_s, s.weight))
        .collect();
    format!("samples [{}]", list.join(", "))
}

fn cpu_frame(
    rig: &Rig,
    clips: &[Clip],
    samples: &[ClipSample],
    ranges: &[Range<u32>],
    layout: OutputLayout,
) -> Vec<f32> {
    let mut out = vec![0.0; ranges.len() * rig.num_joints() * layout.floats_per_joint()];
    EvalCrowdJob { rig, clips, samples, sample_ranges: ranges, layout, output: &mut out }.run().unwrap();
    out
}

fn gpu_frame(gpu: &GpuContext, crowd: &mut GpuCrowd, samples: &[ClipSample], ranges: &[Range<u32>]) -> Vec<f32> {
    crowd.set_samples(samples, ranges).unwrap();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    crowd.read_output_blocking().unwrap()
}

fn transform_floats(t: &Transform) -> [f32; 10] {
    let (tr, q, s) = (t.translation, t.rotation, t.scale);
    [tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w, s.x, s.y, s.z]
}

/// The sample-positions stage (`shaders/sample_positions.wgsl`) against `eval::sample_positions`:
/// every sample's frame coordinate, over the programs users meet and the edges of a clip's time
/// (exact loop ends, a tiny negative time whose remainder rounds up to the duration, a clamped
/// clip past its end, a clip of one frame). The GPU's float remainder is its own
/// (`x - y·trunc(x/y)`), so looping times agree within a ten-thousandth of a frame; a clip that
/// does not loop within the division's few ulp (Vulkan allows 2.5; lavapipe's is exact, a GPU's
/// a reciprocal and a product), a one-frame clip exactly.
#[test]
fn sample_positions_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let clips = test_clips(&rig);
    let (mut samples, mut ranges) = test_programs(48, 29);
    let edges = [
        (WALK, 0.0),
        (WALK, 1.0),
        (WALK, 3.0),
        (WALK, -1.0e-9),
        (WAVE, 0.6),
        (WAVE, 9.0),
        (WAVE, -2.0),
        (STATIC, 0.4),
        (RUN, 5.0),
    ];
    for (clip, time_s) in edges {
        ranges.push(samples.len() as u32..samples.len() as u32 + 1);
        samples.push(ClipSample::new(clip, time_s, 1.0));
    }
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
    crowd.set_samples(&samples, &ranges).unwrap();
    let got = crowd.read_sample_positions_blocking().unwrap();
    let mut expected = vec![0.0; samples.len()];
    sample_positions(&clips, &samples, &mut expected);
    assert_eq!(got.len(), samples.len());
    for (i, ((g, e), s)) in got.iter().zip(&expected).zip(&samples).enumerate() {
        let clip = &clips[s.clip as usize];
        let last = (clip.num_frames() - 1) as f32;
        let ulps = 4.0 * f32::EPSILON * last;
        let tolerance = match (clip.num_frames(), clip.is_looping()) {
            (1, _) => 0.0,
            (_, true) => 1e-4,
            (_, false) => ulps,
        };
        assert!((g - e).abs() <= tolerance, "sample {i} ({s:?}): GPU {g}, CPU {e}");
        assert!(*g >= 0.0 && *g <= last + ulps, "sample {i} ({s:?}): {g} outside the clip");
    }
    // A clamped clip past its end is at its last frame; a time just below a loop's start wraps
    // to its first frame (`rem_euclid`'s rounding up), as the CPU's does.
    let wave_last = (clips[WAVE as usize].num_frames() - 1) as f32;
    assert!((got[samples.len() - 4] - wave_last).abs() <= 4.0 * f32::EPSILON * wave_last);
    assert_eq!(got[samples.len() - 6], 0.0);
}

/// The sample stage (`shaders/sample.wgsl`) against `eval::sample`.
#[test]
fn sample_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let clips = test_clips(&rig);
    let (samples, ranges) = test_programs(40, 11);
    let options = GpuCrowdOptions { stage_buffers: true, ..Default::default() };
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap();
    crowd.set_samples(&samples, &ranges).unwrap();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode_stage(&mut encoder, Stage::Sample).unwrap();
    gpu.queue.submit([encoder.finish()]);
    let got = crowd.read_local_poses_blocking().unwrap();

    let mut expected = vec![Transform::IDENTITY; got.len()];
    for (range, out) in ranges.iter().zip(expected.chunks_exact_mut(rig.num_joints())) {
        sample_blend(&clips, &samples[range.start as usize..range.end as usize], rig.rest_pose(), out);
    }
    let flat = |poses: &[Transform]| poses.iter().flat_map(transform_floats).collect::<Vec<f32>>();
    assert_matrices_close_with(&flat(&expected), &flat(&got), 10, rig.num_joints(), GPU_TOLERANCE, "sample", |c| {
        describe(&samples, &ranges[c])
    });
}

/// The local-to-model stage against `eval::local_to_model`.
#[test]
fn local_to_model_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let num_characters = 9;
    let options = GpuCrowdOptions { stage_buffers: true, ..Default::default() };
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &[], options).unwrap();
    crowd.set_samples(&[], &vec![0..0; num_characters]).unwrap();
    let mut rng = Rng(5);
    let locals: Vec<Transform> = (0..num_characters * rig.num_joints())
        .map(|_| Transform {
            translation: Vec3::new(rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), rng.range(-0.1, 0.1)),
            rotation: rng.quat(),
            scale: Vec3::new(rng.range(0.8, 1.2), rng.range(0.8, 1.2), rng.range(0.8, 1.2)),
        })
        .collect();
    crowd.write_local_poses(&locals).unwrap();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode_stage(&mut encoder, Stage::LocalToModel).unwrap();
    gpu.queue.submit([encoder.finish()]);
    let got = crowd.read_model_matrices_blocking().unwrap();

    let mut expected = vec![Mat4::IDENTITY; got.len()];
    for (local, model) in locals.chunks_exact(rig.num_joints()).zip(expected.chunks_exact_mut(rig.num_joints())) {
        local_to_model(rig.parents(), local, model);
    }
    let flat = |m: &[Mat4]| m.iter().flat_map(Mat4::to_cols_array).collect::<Vec<f32>>();
    assert_matrices_close_with(
        &flat(&expected),
        &flat(&got),
        16,
        rig.num_joints(),
        GPU_TOLERANCE,
        "local_to_model",
        |_| "(random local poses)".into(),
    );
}

/// The skinning stage against `eval::skinning`, in both output layouts.
#[test]
fn skinning_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let num_characters = 5;
    let mut rng = Rng(8);
    let models: Vec<Mat4> = (0..num_characters * rig.num_joints())
        .map(|_| {
            let t = Vec3::new(rng.range(-2.0, 2.0), rng.range(0.0, 2.0), rng.range(-2.0, 2.0));
            Mat4::from_scale_rotation_translation(Vec3::splat(rng.range(0.8, 1.2)), rng.quat(), t)
        })
        .collect();
    for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
        let options = GpuCrowdOptions { layout, stage_buffers: true, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &[], options).unwrap();
        crowd.set_samples(&[], &vec![0..0; num_characters]).unwrap();
        crowd.write_model_matrices(&models).unwrap();
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        crowd.encode_stage(&mut encoder, Stage::Skinning).unwrap();
        gpu.queue.submit([encoder.finish()]);
        let got = crowd.read_output_blocking().unwrap();

        let per_character = rig.num_joints() * layout.floats_per_joint();
        let mut expected = vec![0.0; got.len()];
        for (model, out) in models.chunks_exact(rig.num_joints()).zip(expected.chunks_exact_mut(per_character)) {
            skinning(model, rig.inverse_bind(), layout, out);
        }
        let what = format!("skinning {layout:?}");
        assert_matrices_close_with(
            &expected,
            &got,
            layout.floats_per_joint(),
            rig.num_joints(),
            GPU_TOLERANCE,
            &what,
            |_| "(random model matrices)".into(),
        );
    }
}

/// The fused plain frame (`shaders/frame.wgsl`, and `frame_levels.wgsl` for the level kernel)
/// against `eval::frame` (`EvalCrowdJob`), in both output layouts.
#[test]
fn frame_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let clips = test_clips(&rig);
    let (samples, ranges) = test_programs(100, 21);
    for (kernel, layout) in
        FrameKernel::ALL.into_iter().flat_map(|k| [(k, OutputLayout::Mat4), (k, OutputLayout::Affine3x4)])
    {
        let options = GpuCrowdOptions { kernel, layout, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap();
        let got = gpu_frame(&gpu, &mut crowd, &samples, &ranges);
        let expected = cpu_frame(&rig, &clips, &samples, &ranges, layout);
        assert_matrices_close_with(
            &expected,
            &got,
            layout.floats_per_joint(),
            rig.num_joints(),
            GPU_TOLERANCE,
            &format!("{} frame {layout:?}", kernel.name()),
            |c| describe(&samples, &ranges[c]),
        );
    }
}

/// The two-clip frame composing the hierarchy depth by depth in one subgroup
/// (`Hierarchy::Subgroup`, `shaders/shared/subgroup.wgsl`) gives the walks' matrices bit for
/// bit, and the CPU's, on rigs whose depths fit the device's subgroups: lavapipe's 8 lanes hold
/// the built-in humanoid's widest depth (3 joints), a 29-joint rig of two roots (6), a rig of
/// 100 joints in four chains (two joints a thread, 25 depths) and a root with as many children
/// as a subgroup has lanes; a rig with a depth wider than a subgroup (one child more, or 256
/// joints with 52 at one depth) walks. Under `THRONG_REQUIRE_GPU=1` on lavapipe it does not
/// skip.
#[test]
fn two_clip_frame_composed_in_a_subgroup_equals_the_walks() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.device.adapter_info();
    let humanoid = throng::demo::DemoCharacter::humanoid().rig;
    if !gpu_support::subgroup_composes_or_skip(&gpu, &humanoid) {
        return;
    }
    let chains = gpu_support::four_chains();
    let wide = test_rig(256);
    // A root and `n` children: a depth of `n` joints, as wide as lavapipe's subgroups at 8.
    let fan = |n: usize| gpu_support::rig_of((0..=n).map(|j| (j > 0).then_some(0)).collect());
    let (widest_lanes, one_more) = (info.subgroup_min_size as usize, info.subgroup_min_size as usize + 1);
    let rigs = [
        (humanoid, true),
        (test_rig(29), true),
        (chains, true),
        (fan(widest_lanes), true),
        (fan(one_more), false),
        (wide, false),
    ];
    for (rig, composes) in rigs {
        let clips = test_clips(&rig);
        let (samples, ranges) = test_programs(40, 5);
        let what =
            format!("{}-joint rig, widest depth {}", rig.num_joints(), GpuRigJoint::from_rig(&rig).widest_depth());
        assert_eq!(gpu_support::subgroup_composes(&gpu, &rig), composes, "{what}: on {} lanes", info.subgroup_min_size);
        let [mut walks, mut subgroup] = [Hierarchy::Walks, Hierarchy::Subgroup].map(|hierarchy| {
            let options = GpuCrowdOptions { kernel: FrameKernel::Fused, hierarchy, ..Default::default() };
            GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap()
        });
        assert_eq!(walks.hierarchy(), Hierarchy::Walks, "{what}");
        let expected_hierarchy = if composes { Hierarchy::Subgroup } else { Hierarchy::Walks };
        assert_eq!(subgroup.hierarchy(), expected_hierarchy, "{what}");
        let expected = gpu_frame(&gpu, &mut walks, &samples, &ranges);
        let got = gpu_frame(&gpu, &mut subgroup, &samples, &ranges);
        if let Some(k) = expected.iter().zip(&got).position(|(a, b)| a.to_bits() != b.to_bits()) {
            panic!("{what}: float {k} is {} walking, {} in a subgroup", expected[k], got[k]);
        }
        let cpu = cpu_frame(&rig, &clips, &samples, &ranges, OutputLayout::Mat4);
        assert_matrices_close_with(&cpu, &got, 16, rig.num_joints(), GPU_TOLERANCE, &what, |c| {
            describe(&samples, &ranges[c])
        });
    }
}

/// The two-clip frame composing local-to-model by pointer doubling equals the CPU's within the
/// GPU tolerance on every device (no subgroup needed), for rigs of one joint (no round), a few
/// depths, more than a thread's joints (100 and 256: two and four a thread) and chains as deep
/// as the scales' limit lets a test rig go (128 deep: eight rounds); the walking crowd's
/// matrices within the same tolerance.
#[test]
fn two_clip_frame_composed_by_doubling_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let chain = |n: usize| gpu_support::rig_of((0..n).map(|j| j.checked_sub(1)).collect());
    let chains = gpu_support::four_chains();
    let rigs = [
        test_rig(1),
        throng::demo::DemoCharacter::humanoid().rig,
        throng::demo::DemoCharacter::humanoid_64().rig,
        test_rig(29),
        chains,
        test_rig(100),
        test_rig(256),
        chain(2),
        chain(129),
    ];
    for rig in rigs {
        let clips = test_clips(&rig);
        let (samples, ranges) = test_programs(40, 5);
        let tables = GpuRigJoint::from_rig(&rig);
        let deepest = tables.joints.iter().map(|j| j.depth).max().unwrap_or(0);
        let what = format!("{}-joint rig, {deepest} deep", rig.num_joints());
        let [mut walks, mut doubling] = [Hierarchy::Walks, Hierarchy::Doubling].map(|hierarchy| {
            let options = GpuCrowdOptions { kernel: FrameKernel::Fused, hierarchy, ..Default::default() };
            GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap()
        });
        assert_eq!(doubling.hierarchy(), Hierarchy::Doubling, "{what}");
        let walked = gpu_frame(&gpu, &mut walks, &samples, &ranges);
        let got = gpu_frame(&gpu, &mut doubling, &samples, &ranges);
        let cpu = cpu_frame(&rig, &clips, &samples, &ranges, OutputLayout::Mat4);
        for (expected, against) in [(&cpu, "the CPU"), (&walked, "the walks")] {
            assert_matrices_close_with(
                expected,
                &got,
                16,
                rig.num_joints(),
                GPU_TOLERANCE,
                &format!("{what} against {against}"),
                |c| describe(&samples, &ranges[c]),
            );
        }
    }
}

#[test]
fn rigs_of_1_to_256_joints_and_times_on_clip_boundaries_match_cpu() {
    let Some(gpu) = gpu() else { return };
    // Exact ends and frame boundaries: the looping walk at 1, 2 and -1 s (wrap to 0); the
    // clamped wave at its end and on frame 8 of 16; a static pose at any time.
    let exact =
        [(WALK, 1.0), (WALK, 2.0), (WALK, -1.0), (WAVE, 0.6), (WAVE, 0.3), (WAVE, -0.0), (STATIC, 7.5), (RUN, 1.4)];
    // 100 and 256 joints need two and four joints per thread; 1 joint leaves 63 threads idle.
    // The level kernel holds one character of 100 joints in its 128 threads, and one of 200 or
    // 256 in a workgroup of 256 (56 idle lanes for 200).
    for (kernel, num_joints) in FrameKernel::ALL.into_iter().flat_map(|k| [(k, 1), (k, 100), (k, 200), (k, 256)]) {
        let rig = test_rig(num_joints);
        let clips = test_clips(&rig);
        let (mut samples, mut ranges) = test_programs(24, 61);
        for (clip, time_s) in exact {
            ranges.push(samples.len() as u32..samples.len() as u32 + 1);
            samples.push(ClipSample::new(clip, time_s, 1.0));
        }
        let options = GpuCrowdOptions { kernel, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap();
        let got = gpu_frame(&gpu, &mut crowd, &samples, &ranges);
        let expected = cpu_frame(&rig, &clips, &samples, &ranges, OutputLayout::Mat4);
        assert_matrices_close_with(
            &expected,
            &got,
            16,
            num_joints,
            GPU_TOLERANCE,
            &format!("{} {num_joints}-joint frame", kernel.name()),
            |c| describe(&samples, &ranges[c]),
        );
    }
}

#[test]
fn stage_by_stage_path_equals_the_fused_frame() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let clips = test_clips(&rig);
    let (samples, ranges) = test_programs(24, 31);
    let options = GpuCrowdOptions { stage_buffers: true, ..Default::default() };
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap();
    let fused = gpu_frame(&gpu, &mut crowd, &samples, &ranges);
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    for stage in Stage::ALL {
        crowd.encode_stage(&mut encoder, stage).unwrap();
    }
    gpu.queue.submit([encoder.finish()]);
    let staged = crowd.read_output_blocking().unwrap();
    assert_matrices_close_with(&fused, &staged, 16, rig.num_joints(), GPU_TOLERANCE, "staged vs fused", |c| {
        describe(&samples, &ranges[c])
    });
}

#[test]
fn chunked_crowd_equals_cpu_and_the_unchunked_crowd_bit_for_bit() {
    let Some(gpu) = gpu() else { return };
    // 13 joints × 64 bytes: chunks of 7 characters start at offsets that are not multiples of
    // the storage alignment, so the windows' base offsets are exercised too.
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let (samples, ranges) = test_programs(53, 41);
    for (kernel, layout) in
        FrameKernel::ALL.into_iter().flat_map(|k| [(k, OutputLayout::Mat4), (k, OutputLayout::Affine3x4)])
    {
        let whole = GpuCrowdOptions { kernel, layout, ..Default::default() };
        let chunked = GpuCrowdOptions {
            kernel,
            layout,
            max_chunk_characters: Some(7),
            stage_buffers: true,
            ..Default::default()
        };
        let mut one = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, whole).unwrap();
        let mut many = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, chunked).unwrap();
        let unchunked = gpu_frame(&gpu, &mut one, &samples, &ranges);
        let got = gpu_frame(&gpu, &mut many, &samples, &ranges);
        assert_eq!(one.num_chunks(), 1);
        assert_eq!(many.num_chunks(), 8, "53 characters in chunks of 7");
        let expected = cpu_frame(&rig, &clips, &samples, &ranges, layout);
        assert_matrices_close_with(
            &expected,
            &got,
            layout.floats_per_joint(),
            rig.num_joints(),
            GPU_TOLERANCE,
            &format!("{} chunked {layout:?}", kernel.name()),
            |c| describe(&samples, &ranges[c]),
        );
        assert!(
            unchunked.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{} {layout:?}: chunked output differs from unchunked",
            kernel.name()
        );

        // The stage-by-stage path through the same chunk windows.
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        for stage in Stage::ALL {
            many.encode_stage(&mut encoder, stage).unwrap();
        }
        gpu.queue.submit([encoder.finish()]);
        let staged = many.read_output_blocking().unwrap();
        assert_matrices_close_with(
            &expected,
            &staged,
            layout.floats_per_joint(),
            rig.num_joints(),
            GPU_TOLERANCE,
            &format!("{} chunked staged {layout:?}", kernel.name()),
            |c| describe(&samples, &ranges[c]),
        );
    }
}

#[test]
fn output_is_identical_across_runs_and_crowd_resizes() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(64);
    let clips = test_clips(&rig);
    let (samples, ranges) = test_programs(64, 51);
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
    let first = gpu_frame(&gpu, &mut crowd, &samples, &ranges);
    let second = gpu_frame(&gpu, &mut crowd, &samples, &ranges);
    assert!(first.iter().zip(&second).all(|(a, b)| a.to_bits() == b.to_bits()), "two runs differ");
    // More samples for as many characters: the output buffer an engine has bound stays.
    let bound = crowd.output().unwrap().clone();
    let mut padded = vec![ClipSample::default(); 256];
    padded.extend_from_slice(&samples);
    let shifted: Vec<Range<u32>> = ranges.iter().map(|r| r.start + 256..r.end + 256).collect();
    let third = gpu_frame(&gpu, &mut crowd, &padded, &shifted);
    assert!(crowd.output() == Some(&bound), "the output buffer was replaced for the same character count");
    assert!(
        first.iter().zip(&third).all(|(a, b)| a.to_bits() == b.to_bits()),
        "same programs at other sample indices differ"
    );
    // Growing the crowd rebuilds its buffers; the first 64 characters must not change.
    let (more_samples, more_ranges) = test_programs(100, 51);
    let grown = gpu_frame(&gpu, &mut crowd, &more_samples, &more_ranges);
    assert_eq!(crowd.num_characters(), 100);
    assert!(first.iter().zip(&grown).all(|(a, b)| a.to_bits() == b.to_bits()), "resizing changed existing characters");
}

#[test]
fn empty_crowd_records_nothing_and_reads_nothing() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(4);
    let clips = test_clips(&rig);
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
    assert!(crowd.output().is_none());
    assert!(gpu_frame(&gpu, &mut crowd, &[], &[]).is_empty());
    assert_eq!(crowd.num_chunks(), 0);
}

#[test]
fn refuses_bad_input_before_submitting() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(8);
    let clips = test_clips(&rig);
    let new = |clips: &[Clip], options| GpuCrowd::new(&gpu.device, &gpu.queue, &rig, clips, options);

    let other_rig = test_rig(3);
    let e = new(&[clips[0].clone(), wave_clip(&other_rig, "small", 2, 1.0, true, 9)], GpuCrowdOptions::default())
        .unwrap_err();
    assert!(
        matches!(e, GpuError::Program(ProgramError::ClipRigMismatch { clip: 1, clip_joints: 3, rig_joints: 8, .. })),
        "{e}"
    );

    let mut crowd = new(&clips, GpuCrowdOptions::default()).unwrap();
    let ok = ClipSample::new(WALK, 0.0, 1.0);
    let e = crowd.set_samples(&[ok], &[0..2]).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::SampleRange { character: 0, .. })), "{e}");
    let e = crowd.set_samples(&[ClipSample { clip: 9, ..ok }], &[0..1]).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::UnknownClip { clip: 9, .. })), "{e}");
    for (time_s, weight) in [(f32::NAN, 1.0), (0.0, f32::INFINITY), (0.0, -1.0)] {
        let e = crowd.set_samples(&[ok, ClipSample::new(WALK, time_s, weight)], &[0..1, 1..2]).unwrap_err();
        assert!(matches!(e, GpuError::Program(ProgramError::BadSample { character: 1, sample: 1, .. })), "{e}");
    }
    assert_eq!(crowd.num_characters(), 0, "a refused frame leaves the crowd as it was");

    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    assert!(matches!(crowd.encode_stage(&mut encoder, Stage::Sample), Err(GpuError::NoStageBuffers)));
    crowd.set_samples(&[ok], &[0..1]).unwrap();
    assert!(matches!(crowd.write_local_poses(&[]), Err(GpuError::NoStageBuffers | GpuError::LengthMismatch { .. })));

    // More characters than one binding of sample ranges (8 bytes each) holds, refused before
    // any allocation. (An output larger than one buffer is split, not refused.)
    let limits = gpu.device.limits();
    let too_many = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 8 + 1;
    if too_many <= 20_000_000 {
        let ranges = vec![0..0; too_many as usize];
        let e = crowd.set_samples(&[], &ranges).unwrap_err();
        assert!(matches!(e, GpuError::CrowdTooLarge { what: "sample ranges", .. }), "{e}");
    } else {
        eprintln!("skipping the crowd-too-large check: the device's buffers hold {too_many} characters");
    }
}

#[test]
fn shared_structs_match_wgsl_layouts() {
    use std::mem::{offset_of, size_of};
    let source = include_str!("../shaders/shared/types.wgsl");
    let (module, layouter) = support::wgsl::parse(source);

    check_struct(
        &module,
        &layouter,
        "Transform",
        size_of::<GpuTransform>(),
        &[
            ("translation", offset_of!(GpuTransform, translation)),
            ("pad0", offset_of!(GpuTransform, pad0)),
            ("rotation", offset_of!(GpuTransform, rotation)),
            ("scale", offset_of!(GpuTransform, scale)),
            ("pad1", offset_of!(GpuTransform, pad1)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "RigJoint",
        size_of::<GpuRigJoint>(),
        &[
            ("inverse_bind", offset_of!(GpuRigJoint, inverse_bind)),
            ("rest", offset_of!(GpuRigJoint, rest)),
            ("parent", offset_of!(GpuRigJoint, parent)),
            ("depth", offset_of!(GpuRigJoint, depth)),
            ("path_start", offset_of!(GpuRigJoint, path_start)),
            ("by_depth", offset_of!(GpuRigJoint, by_depth)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "ClipHeader",
        size_of::<GpuClipHeader>(),
        &[
            ("first_vec4", offset_of!(GpuClipHeader, first_vec4)),
            ("num_frames", offset_of!(GpuClipHeader, num_frames)),
            ("duration_s", offset_of!(GpuClipHeader, duration_s)),
            ("looping", offset_of!(GpuClipHeader, looping)),
            ("rotation_bits", offset_of!(GpuClipHeader, rotation_bits)),
            ("translation_bits", offset_of!(GpuClipHeader, translation_bits)),
            ("words_per_frame", offset_of!(GpuClipHeader, words_per_frame)),
            ("pad0", offset_of!(GpuClipHeader, pad0)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "ClipSample",
        size_of::<ClipSample>(),
        &[
            ("clip", offset_of!(ClipSample, clip)),
            ("time_s", offset_of!(ClipSample, time_s)),
            ("weight", offset_of!(ClipSample, weight)),
            ("position", offset_of!(ClipSample, advance_s)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "SampleRange",
        size_of::<GpuSampleRange>(),
        &[("start", offset_of!(GpuSampleRange, start)), ("count", offset_of!(GpuSampleRange, count))],
    );
    check_struct(
        &module,
        &layouter,
        "PositionsParams",
        size_of::<GpuPositionsParams>(),
        &[
            ("count", offset_of!(GpuPositionsParams, count)),
            ("pad0", offset_of!(GpuPositionsParams, pad0)),
            ("pad1", offset_of!(GpuPositionsParams, pad1)),
            ("pad2", offset_of!(GpuPositionsParams, pad2)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "ChunkParams",
        size_of::<GpuChunkParams>(),
        &[
            ("first_character", offset_of!(GpuChunkParams, first_character)),
            ("num_characters", offset_of!(GpuChunkParams, num_characters)),
            ("num_memory_layers", offset_of!(GpuChunkParams, num_memory_layers)),
            ("output_layout", offset_of!(GpuChunkParams, output_layout)),
            ("output_base", offset_of!(GpuChunkParams, output_base)),
            ("local_base", offset_of!(GpuChunkParams, local_base)),
            ("model_base", offset_of!(GpuChunkParams, model_base)),
            ("memory_base", offset_of!(GpuChunkParams, memory_base)),
            ("num_layers", offset_of!(GpuChunkParams, num_layers)),
            ("dt_s", offset_of!(GpuChunkParams, dt_s)),
            ("sample_base", offset_of!(GpuChunkParams, sample_base)),
            ("due_list", offset_of!(GpuChunkParams, due_list)),
            ("levels_start", offset_of!(GpuChunkParams, levels_start)),
            ("num_bands", offset_of!(GpuChunkParams, num_bands)),
            ("num_due", offset_of!(GpuChunkParams, num_due)),
            ("doubling_start", offset_of!(GpuChunkParams, doubling_start)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "LayerProgram",
        size_of::<LayerProgram>(),
        &[
            ("first_sample", offset_of!(LayerProgram, first_sample)),
            ("num_target", offset_of!(LayerProgram, num_target)),
            ("num_secondary", offset_of!(LayerProgram, num_secondary)),
            ("transition", offset_of!(LayerProgram, transition)),
            ("mode", offset_of!(LayerProgram, mode)),
            ("flags", offset_of!(LayerProgram, flags)),
            ("target_weight", offset_of!(LayerProgram, target_weight)),
            ("progress", offset_of!(LayerProgram, progress)),
            ("weight", offset_of!(LayerProgram, weight)),
            ("decay_s", offset_of!(LayerProgram, decay_s)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "LayerSetup",
        size_of::<GpuLayerSetup>(),
        &[
            ("layer", offset_of!(GpuLayerSetup, layer)),
            ("blend", offset_of!(GpuLayerSetup, blend)),
            ("space", offset_of!(GpuLayerSetup, space)),
            ("mask_start", offset_of!(GpuLayerSetup, mask_start)),
            ("memory", offset_of!(GpuLayerSetup, memory)),
        ],
    );
    check_struct(
        &module,
        &layouter,
        "LayerState",
        size_of::<GpuLayerState>(),
        &[
            ("flags", offset_of!(GpuLayerState, flags)),
            ("decay_s", offset_of!(GpuLayerState, decay_s)),
            ("elapsed_s", offset_of!(GpuLayerState, elapsed_s)),
            ("largest_offset", offset_of!(GpuLayerState, largest_offset)),
            ("largest_velocity", offset_of!(GpuLayerState, largest_velocity)),
            ("pad0", offset_of!(GpuLayerState, pad)),
            ("pad1", offset_of!(GpuLayerState, pad) + 4),
            ("pad2", offset_of!(GpuLayerState, pad) + 8),
        ],
    );

    assert_eq!(wgsl_u32_constant(&module, "WORKGROUP_SIZE"), WORKGROUP_SIZE);
    assert_eq!(wgsl_u32_constant(&module, "MAX_JOINTS") as usize, throng::MAX_JOINTS);
    assert_eq!(wgsl_u32_constant(&module, "LAYOUT_MAT4"), LAYOUT_MAT4);
    assert_eq!(wgsl_u32_constant(&module, "LAYOUT_AFFINE3X4"), LAYOUT_AFFINE3X4);
    // `weighs`' least weight: `throng::program::weighs`' `f32::MIN_POSITIVE`, bit for bit.
    assert_eq!(support::wgsl::wgsl_f32_constant(&module, "MIN_WEIGHT").to_bits(), f32::MIN_POSITIVE.to_bits());
    assert_eq!(wgsl_u32_constant(&module, "NO_PARENT"), GPU_NO_PARENT);
    assert_eq!(wgsl_u32_constant(&module, "COMPACT_RANGE_VEC4S"), throng::gpu::types::COMPACT_RANGE_VEC4S);
    assert_eq!(wgsl_u32_constant(&module, "LAYER_SETUP_WORDS") as usize, size_of::<GpuLayerSetup>() / 4);
    assert_eq!(wgsl_u32_constant(&module, "MAX_LAYERS") as usize, throng::program::MAX_LAYERS);
    let modes = [
        ("MODE_CUT", SwitchMode::Cut),
        ("MODE_FROZEN", SwitchMode::Frozen),
        ("MODE_CROSSFADE", SwitchMode::Crossfade),
        ("MODE_QUINTIC", SwitchMode::InertializeQuintic),
        ("MODE_QUINTIC_OVERSHOOT", SwitchMode::InertializeQuinticOvershootControl),
        ("MODE_SPRING", SwitchMode::InertializeSpring),
    ];
    for (name, mode) in modes {
        assert_eq!(wgsl_u32_constant(&module, name), mode as u32, "{name}");
    }
    let flags = [
        ("FLAG_TRANSITIONING", LayerProgram::TRANSITIONING),
        ("FLAG_SOURCE_SNAPSHOT", LayerProgram::SOURCE_SNAPSHOT),
        ("FLAG_SWITCHED", LayerProgram::SWITCHED),
        ("FLAG_ROOT_MOTION", LayerProgram::ROOT_MOTION),
        ("BLEND_OVERRIDE", BLEND_OVERRIDE),
        ("BLEND_ADDITIVE", BLEND_ADDITIVE),
        ("SPACE_LOCAL", SPACE_LOCAL),
        ("SPACE_MESH", SPACE_MESH),
        ("NO_MASK", NO_MASK),
        ("NO_MEMORY", NO_MEMORY),
        ("STATE_SHOWN_MASK", STATE_SHOWN_MASK),
        ("STATE_SLOT_SHIFT", STATE_SLOT_SHIFT),
        ("STATE_DECAY_SHIFT", STATE_DECAY_SHIFT),
        ("BY_DEPTH_JOINT_MASK", BY_DEPTH_JOINT_MASK),
        ("BY_DEPTH_PARENT_LANE_SHIFT", BY_DEPTH_PARENT_LANE_SHIFT),
        ("BY_DEPTH_LEVEL_END_SHIFT", BY_DEPTH_LEVEL_END_SHIFT),
    ];
    for (name, value) in flags {
        assert_eq!(wgsl_u32_constant(&module, name), value, "{name}");
    }

    // Every entry point runs WORKGROUP_SIZE threads, the level kernels `level_group_threads`
    // (128, or one character's lanes where more) as their `FrameKernel` says, and those
    // `level_lanes` per character: what the dispatch arithmetic assumes.
    let level_kinds = [ShaderModuleKind::FrameLevels, ShaderModuleKind::FrameLayersLevels];
    let threads_of = |kind: ShaderModuleKind, num_joints: usize| {
        if level_kinds.contains(&kind) { level_group_threads(num_joints) } else { WORKGROUP_SIZE }
    };
    for kernel in FrameKernel::ALL {
        for kind in [kernel.frame(), kernel.frame_layers()] {
            for num_joints in [1, 26, 64, 65, 128, 129, 256] {
                assert_eq!(threads_of(kind, num_joints), kernel.workgroup_threads_for(num_joints), "{kernel:?}");
            }
            assert_eq!(threads_of(kind, 256), kernel.workgroup_threads(), "{kernel:?}: the most");
        }
    }
    for kind in ShaderModuleKind::ALL {
        let levels = level_kinds.contains(&kind);
        for num_joints in [1, 26, 64, 65, 129, 256] {
            let source = shader_source(kind, num_joints, true);
            let module = naga::front::wgsl::parse_str(&source)
                .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
            let entry = module.entry_points.iter().find(|e| e.name == kind.entry_point()).unwrap();
            assert_eq!(entry.workgroup_size, [threads_of(kind, num_joints), 1, 1], "{kind:?} {num_joints}");
            if levels {
                assert_eq!(
                    wgsl_u32_constant(&module, "LANES"),
                    level_lanes(num_joints),
                    "{kind:?}, {num_joints} joints"
                );
                // The rig's item table (`GpuRigTables::levels`): its packing.
                for (name, value) in [
                    ("LEVEL_ITEM_JOINT_SHIFT", LEVEL_ITEM_JOINT_SHIFT),
                    ("LEVEL_ITEM_PARENT_SHIFT", LEVEL_ITEM_PARENT_SHIFT),
                    ("LEVEL_ITEM_LENGTH_SHIFT", LEVEL_ITEM_LENGTH_SHIFT),
                    ("LEVEL_BAND_DEPTHS_SHIFT", LEVEL_BAND_DEPTHS_SHIFT),
                    ("LEVEL_ITEM_NO_PARENT", LEVEL_ITEM_NO_PARENT),
                ] {
                    assert_eq!(wgsl_u32_constant(&module, name), value, "{kind:?}: {name}");
                }
            }
        }
    }

    // The characters' memory: a layer's block is its `GpuLayerState` and its replay entries
    // (`LAYER_HEADER_BYTES`), then `JOINT_STATE_BYTES` per joint laid out as `JointStateLayout`
    // and `transition.wgsl` say.
    let source = shader_source(ShaderModuleKind::Transition, 64, true);
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
    assert_eq!(u64::from(wgsl_u32_constant(&module, "JOINT_STATE_VEC4S")) * 16, throng::gpu::types::JOINT_STATE_BYTES);
    assert_eq!(wgsl_u32_constant(&module, "LAYER_STATE_VEC4S") as usize * 16, size_of::<GpuLayerState>());
    assert_eq!(
        u64::from(wgsl_u32_constant(&module, "LAYER_HEADER_VEC4S")) * 16,
        throng::gpu::types::LAYER_HEADER_BYTES
    );
    for (name, value) in [
        ("REPLAY_SAMPLES", throng::gpu::types::REPLAY_SAMPLES),
        ("REPLAY_COUNT_MASK", throng::gpu::types::REPLAY_COUNT_MASK),
        ("REPLAY_STORED", throng::gpu::types::REPLAY_STORED),
        ("REPLAY_ROOT_MOTION", throng::gpu::types::REPLAY_ROOT_MOTION),
        ("REPLAY_ADDITIVE", throng::gpu::types::REPLAY_ADDITIVE),
        ("REPLAY_SNAPSHOT", throng::gpu::types::REPLAY_SNAPSHOT),
        ("REPLAY_DECAY_SHIFT", throng::gpu::types::REPLAY_DECAY_SHIFT),
    ] {
        assert_eq!(wgsl_u32_constant(&module, name), value, "{name}");
    }
}

/// The vertex shader in `docs/gpu.md` is what users copy: it must be valid WGSL.
#[test]
fn docs_vertex_shader_is_valid_wgsl() {
    let page = include_str!("../docs/gpu.md");
    let start = page.find("```wgsl\n").expect("docs/gpu.md has a wgsl block") + "```wgsl\n".len();
    let end = start + page[start..].find("```").expect("the wgsl block ends");
    let source = &page[start..end];
    let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
}
