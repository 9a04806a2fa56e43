//! The layered GPU frame (`GpuCrowd::with_layers` + `set_frame`) against its CPU mirror
//! `FrameJob`: the transition and layers stages alone, then whole multi-frame sequences where
//! characters switch with every mode, layers fade in and out, the crowd grows and characters
//! are reset, all in small chunks; and 90 frames of the built-in humanoid driven through the
//! real state step by a parameter script that takes every switch mode.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.
//!
//! This file is long on purpose (about 1,000 lines): its scenarios (the scripted layer sequences,
//! the every-mode graph) are shared by the stage, fused, chunked and device-limit comparisons, so a
//! new comparison is written beside them and reuses every scenario.

use glam::{Quat, Vec3};
use throng::eval::EvalError;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::eval::inertialize::OffsetLanes;
use throng::eval::layers::{MeshSpaceScratch, apply_additive, override_local, override_mesh};
use throng::eval::sample::sample_blend;
use throng::eval::transition::{Inertia, LayerMemory, transition};
use throng::gpu::{FrameKernel, GpuContext, GpuCrowd, GpuCrowdOptions, GpuError, Hierarchy, Specialisation, Stage};
use throng::program::{
    ClipSample, DueRows, LayerBlend, LayerProgram, LayerSetup, LayerSpace, Mask, MaskEntry, OutputLayout, ProgramError,
    SwitchMode,
};
use throng::{Clip, Rig, Transform};

const DT: f32 = 1.0 / 60.0;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::{encode_and_read, four_chains, gpu, gpu_with_limits, layered_frame, rig_of, test_rig};
use support::compare::{GPU_TOLERANCE, assert_matrices_close_with, worst_abs_diff};
use support::{Rng, cpu_frame};

/// A looping clip whose joints swing in sine waves of their own frequency and phase, and whose
/// root walks forward and turns (for root motion).
fn wave_clip(rig: &Rig, name: &str, duration_s: f32, amplitude: f32, seed: u64) -> Clip {
    let mut rng = Rng(seed);
    let num_frames = 31;
    let joints: Vec<(Vec3, f32, f32)> = (0..rig.num_joints())
        .map(|_| {
            (
                Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize(),
                rng.range(1.0, 2.0),
                rng.range(0.0, 6.0),
            )
        })
        .collect();
    let mut poses = Vec::with_capacity(num_frames * rig.num_joints());
    for frame in 0..num_frames {
        let t = frame as f32 / (num_frames - 1) as f32;
        for (j, (rest, &(axis, frequency, phase))) in rig.rest_pose().iter().zip(&joints).enumerate() {
            let wave = (std::f32::consts::TAU * frequency.round() * t + phase).sin();
            let mut pose = Transform {
                translation: rest.translation + axis * 0.02 * wave,
                rotation: rest.rotation * Quat::from_axis_angle(axis, amplitude * wave),
                scale: rest.scale * (1.0 + 0.03 * wave),
            };
            if j == 0 {
                pose.translation += Vec3::new(0.1 * t, 0.0, 1.2 * t);
                pose.rotation = Quat::from_rotation_y(0.4 * t) * pose.rotation;
            }
            poses.push(pose);
        }
    }
    Clip::from_poses(name, rig.num_joints(), poses, duration_s, true).unwrap()
}

/// Base clips 0..3, override clips 3..5, additive deltas 5..7.
fn test_clips(rig: &Rig) -> Vec<Clip> {
    let mut clips = vec![
        wave_clip(rig, "walk", 1.0, 0.6, 1),
        wave_clip(rig, "run", 0.7, 0.9, 2),
        wave_clip(rig, "idle", 2.3, 0.2, 3),
        wave_clip(rig, "aim", 1.5, 0.4, 4),
        wave_clip(rig, "wave", 0.9, 1.2, 5),
    ];
    for (name, seed) in [("breathe", 6), ("flinch", 7)] {
        clips.push(wave_clip(rig, name, 1.1, 0.5, seed).to_additive(rig.rest_pose()));
    }
    clips
}

/// A feathered mask over part of the body: `j1` and below at 0.3, `j2` and below at 0.7,
/// `j4` and below at full weight, with a hole: from the first masked joint under a masked parent
/// that has children of its own, a run of up to five joints down its first children at 0 alone,
/// the joints below it still masked, so that a mesh-space override carries their blended parent
/// down from the joint above the run over several links (and pointer doubling hands that
/// joint on in more than its first round).
fn feathered_mask(rig: &Rig) -> Mask {
    let entry = |joint: &str, weight, descendants| MaskEntry { joint: joint.into(), weight, descendants };
    let mut entries = vec![entry("j1", 0.3, true), entry("j2", 0.7, true), entry("j4", 1.0, true)];
    let weights = Mask::from_entries(rig, &entries).unwrap().weights().to_vec();
    let parents = rig.parents();
    let masked = |j: usize| weights[j] > 0.0;
    let first_child = |j: usize| parents.iter().position(|&p| usize::from(p) == j && p != throng::pose::NO_PARENT);
    let start = (0..parents.len()).find(|&j| {
        let parent = parents[j];
        masked(j) && parent != throng::pose::NO_PARENT && masked(usize::from(parent)) && first_child(j).is_some()
    });
    let mut hole = start;
    for _ in 0..5 {
        let Some(joint) = hole else { break };
        let Some(child) = first_child(joint) else { break };
        entries.push(entry(&rig.names()[joint], 0.0, false));
        hole = Some(child);
    }
    Mask::from_entries(rig, &entries).unwrap()
}

/// Character `c`'s first clip time. Away from whole multiples of the clips' durations: a time
/// within an ulp of a loop's end may wrap to its start on one side and not on the other (the
/// GPU's `%` is not `rem_euclid`), and these clips' roots travel, so their ends differ.
fn start_time(c: usize) -> f32 {
    0.0731 * c as f32 + 0.0173
}

const MODES: [SwitchMode; 6] = [
    SwitchMode::Cut,
    SwitchMode::Frozen,
    SwitchMode::Crossfade,
    SwitchMode::InertializeQuintic,
    SwitchMode::InertializeQuinticOvershootControl,
    SwitchMode::InertializeSpring,
];

/// One layer of one character as the state step would drive it: states (each a set of clips)
/// switched at scripted frames with scripted modes; a switch during a crossfade or a frozen
/// fade freezes the displayed pose (`SOURCE_SNAPSHOT`), as the state step does on an
/// interruption.
struct LayerScript {
    /// Each state's clips and their weights.
    states: Vec<Vec<(u32, f32)>>,
    switches: Vec<(usize, SwitchMode)>,
    active: usize,
    active_time: f32,
    source: usize,
    source_time: f32,
    mode: SwitchMode,
    snapshot: bool,
    duration_s: f32,
    switched_at: Option<usize>,
    root_motion: bool,
}

impl LayerScript {
    fn new(states: Vec<Vec<(u32, f32)>>, switches: Vec<(usize, SwitchMode)>, start_time: f32) -> Self {
        Self {
            states,
            switches,
            active: 0,
            active_time: start_time,
            source: 0,
            source_time: 0.0,
            mode: SwitchMode::Cut,
            snapshot: false,
            duration_s: 0.0,
            switched_at: None,
            root_motion: false,
        }
    }

    fn push_state(samples: &mut Vec<ClipSample>, state: &[(u32, f32)], time_s: f32, scale: f32) -> u32 {
        for &(clip, weight) in state {
            samples.push(ClipSample::new(clip, time_s, weight * scale));
        }
        state.len() as u32
    }

    /// This frame's program (its samples appended to `samples`); then the clocks advance by `dt_s`.
    fn program(&mut self, frame: usize, dt_s: f32, weight: f32, samples: &mut Vec<ClipSample>) -> LayerProgram {
        let in_flight = |s: &Self| s.switched_at.is_some_and(|at| ((frame - at) as f32 * DT) < s.duration_s);
        let mut flags = 0;
        if let Some(&(_, mode)) = self.switches.iter().find(|(f, _)| *f == frame) {
            let interrupted = in_flight(self) && matches!(self.mode, SwitchMode::Crossfade | SwitchMode::Frozen);
            self.source = self.active;
            self.source_time = self.active_time;
            self.active = (self.active + 1) % self.states.len();
            self.active_time = 0.05 * self.active as f32;
            self.mode = mode;
            self.snapshot = mode == SwitchMode::Frozen || (mode == SwitchMode::Crossfade && interrupted);
            self.duration_s = match mode {
                SwitchMode::Cut => 0.0,
                SwitchMode::InertializeSpring => 0.06,
                _ => 0.2,
            };
            self.switched_at = Some(frame);
            flags |= LayerProgram::SWITCHED;
        }
        let elapsed = self.switched_at.map_or(f32::INFINITY, |at| (frame - at) as f32 * DT);
        let blend = if self.duration_s > 0.0 { (elapsed / self.duration_s).min(1.0) } else { 1.0 };
        let flying = in_flight(self) || flags & LayerProgram::SWITCHED != 0;
        let first_sample = samples.len() as u32;
        let mut program = LayerProgram {
            first_sample,
            target_weight: 1.0,
            progress: 1.0,
            weight,
            flags,
            transition: u32::MAX,
            ..Default::default()
        };
        if self.root_motion {
            program.flags |= LayerProgram::ROOT_MOTION;
        }
        let crossfade = flying && self.mode == SwitchMode::Crossfade && !self.snapshot;
        let target_scale = if crossfade { blend } else { 1.0 };
        program.num_target = Self::push_state(samples, &self.states[self.active], self.active_time, target_scale);
        if flying {
            program.flags |= LayerProgram::TRANSITIONING;
            program.mode = self.mode as u32;
            program.transition = 0;
            program.progress = blend;
            if self.snapshot {
                program.flags |= LayerProgram::SOURCE_SNAPSHOT;
                program.target_weight = blend;
            } else if crossfade {
                program.num_secondary =
                    Self::push_state(samples, &self.states[self.source], self.source_time, 1.0 - blend);
                program.target_weight = blend;
            } else if self.mode.is_inertialization() {
                program.decay_s = self.duration_s;
                if flags & LayerProgram::SWITCHED != 0 {
                    program.num_secondary =
                        Self::push_state(samples, &self.states[self.active], self.active_time - dt_s, 1.0);
                }
            }
        }
        self.active_time += dt_s;
        self.source_time += dt_s;
        program
    }
}

/// Asserts two poses are equal within [`GPU_TOLERANCE`] (a rotation and its negation are the
/// same); a NaN in any component fails.
fn assert_poses_close(
    what: &str,
    expected: &[Transform],
    got: &[Transform],
    per_character: usize,
    per_layer: usize,
    frame: usize,
) {
    assert_eq!(expected.len(), got.len(), "{what}: lengths");
    for (k, (e, g)) in expected.iter().zip(got).enumerate() {
        let q = if e.rotation.dot(g.rotation) < 0.0 { -g.rotation } else { g.rotation };
        // `max_element` and `f32::max` skip NaN, so compare the components as one flat list.
        let flat = |t: &Transform, [x, y, z, w]: [f32; 4]| {
            let ([tx, ty, tz], [sx, sy, sz]) = (t.translation.to_array(), t.scale.to_array());
            [tx, ty, tz, x, y, z, w, sx, sy, sz]
        };
        let error = worst_abs_diff(&flat(e, e.rotation.to_array()), &flat(g, q.to_array()));
        if error > GPU_TOLERANCE || error.is_nan() {
            let (character, rest) = (k / per_character, k % per_character);
            panic!(
                "{what}: character {character}, layer {}, joint {}, frame {frame} (t = {:.4} s): error {error}\n expected {e:?}\n      got {g:?}",
                rest / per_layer,
                rest % per_layer,
                frame as f32 * DT
            );
        }
    }
}

/// Asserts two outputs (mat4 per joint) are equal within [`GPU_TOLERANCE`], naming the frame
/// and `describe(character)` on failure.
#[track_caller]
fn assert_frame_close(
    what: &str,
    expected: &[f32],
    got: &[f32],
    num_joints: usize,
    frame: usize,
    describe: impl Fn(usize) -> String,
) {
    let what = format!("{what}, frame {frame} (t = {:.4} s)", frame as f32 * DT);
    assert_matrices_close_with(expected, got, 16, num_joints, GPU_TOLERANCE, &what, describe);
}

/// One layer's memory on the CPU, as `EvalContext` holds it, for the transition stage alone.
struct CpuLayerMemory {
    slot_a: Vec<Transform>,
    slot_b: Vec<Transform>,
    newest_in_b: bool,
    snapshot: Vec<Transform>,
    offsets: Vec<OffsetLanes>,
    inertia: Inertia,
    shown: u8,
}

impl CpuLayerMemory {
    fn new(joints: usize) -> Self {
        Self {
            slot_a: vec![Transform::IDENTITY; joints],
            slot_b: vec![Transform::IDENTITY; joints],
            newest_in_b: false,
            snapshot: vec![Transform::IDENTITY; joints],
            offsets: vec![OffsetLanes::default(); OffsetLanes::groups_for(joints)],
            inertia: Inertia::default(),
            shown: 0,
        }
    }
}

/// The transition stage against `eval::transition`, in every switch mode.
#[test]
fn transition_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    // 100 joints: threads hold two joints each, so the per-thread arrays are exercised.
    let rig = test_rig(100);
    let clips = test_clips(&rig);
    let layers = [LayerSetup::default()];
    let num_characters = 24;
    let options = GpuCrowdOptions { max_chunk_characters: Some(5), ..Default::default() };
    let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
    // Character c switches with mode c % 6 at frame 4 + c % 3 (frame 0 for every seventh: a
    // switch before anything was shown), again two frames later (a rapid re-switch, which
    // interrupts crossfades and frozen fades) and once more at frame 20.
    let mut scripts: Vec<LayerScript> = (0..num_characters)
        .map(|c| {
            let mode = MODES[c % MODES.len()];
            let first = if c % 7 == 0 { 0 } else { 4 + c % 3 };
            let states = vec![vec![(0, 0.6), (1, 0.4)], vec![(2, 1.0)], vec![(3, 0.5), (4, 0.5)]];
            LayerScript::new(
                states,
                vec![(first, mode), (first + 2, mode), (20, MODES[(c + 1) % MODES.len()])],
                start_time(c),
            )
        })
        .collect();
    let joints = rig.num_joints();
    let mut memory: Vec<CpuLayerMemory> = (0..num_characters).map(|_| CpuLayerMemory::new(joints)).collect();
    for frame in 0..30 {
        // A paused frame: zero velocity at a capture, no decay.
        let dt_s = if frame == 15 { 0.0 } else { DT };
        let mut samples = Vec::new();
        let programs: Vec<LayerProgram> =
            scripts.iter_mut().map(|s| s.program(frame, dt_s, 1.0, &mut samples)).collect();
        crowd.set_frame(&samples, &programs, dt_s).unwrap();
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        crowd.encode_stage(&mut encoder, Stage::Transition).unwrap();
        gpu.queue.submit([encoder.finish()]);
        let got = crowd.read_displayed_poses_blocking().unwrap();

        let mut expected = vec![Transform::IDENTITY; num_characters * joints];
        let mut second = vec![Transform::IDENTITY; joints];
        for ((program, m), pose) in programs.iter().zip(&mut memory).zip(expected.chunks_exact_mut(joints)) {
            let of = |r: std::ops::Range<u32>| &samples[r.start as usize..r.end as usize];
            let crossfade =
                program.switch_mode() == SwitchMode::Crossfade && program.flags & LayerProgram::SOURCE_SNAPSHOT == 0;
            let shown = if crossfade { program.sample_range() } else { program.target_range() };
            sample_blend(&clips, of(shown), rig.rest_pose(), pose);
            let step_back = !crossfade && program.num_secondary > 0;
            if step_back {
                sample_blend(&clips, of(program.secondary_range()), rig.rest_pose(), &mut second);
            }
            let layer_memory = LayerMemory {
                slot_a: &mut m.slot_a,
                slot_b: &mut m.slot_b,
                newest_in_b: &mut m.newest_in_b,
                snapshot: &mut m.snapshot,
                offsets: &mut m.offsets,
                inertia: &mut m.inertia,
                frames_shown: &mut m.shown,
            };
            transition(program, step_back.then_some(second.as_slice()), dt_s, layer_memory, pose);
        }
        assert_poses_close("transition", &expected, &got, joints, joints, frame);
    }
}

/// The layers stage against `eval::layers`, for additive and masked overrides.
#[test]
fn layers_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(70);
    let mask = feathered_mask(&rig);
    // Declared out of evaluation order: the evaluator must apply the additive layer (2) before
    // the overrides (1 in mesh space, 3 in local space).
    let layers = [
        LayerSetup::default(),
        LayerSetup {
            blend: LayerBlend::Override,
            space: LayerSpace::Mesh,
            mask: Some(mask.clone()),
            ..LayerSetup::default()
        },
        LayerSetup {
            blend: LayerBlend::Additive,
            space: LayerSpace::Local,
            mask: Some(mask.clone()),
            ..LayerSetup::default()
        },
        LayerSetup {
            blend: LayerBlend::Override,
            space: LayerSpace::Local,
            mask: Some(mask.clone()),
            ..LayerSetup::default()
        },
    ];
    let num_characters = 12;
    let joints = rig.num_joints();
    let options = GpuCrowdOptions { stage_buffers: true, max_chunk_characters: Some(5), ..Default::default() };
    let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &[], &layers, options).unwrap();
    let mut rng = Rng(17);
    // Weights cycle through 0 (the layer is skipped), partial and full.
    let weights = [0.0, 0.35, 1.0, 0.8, 0.5];
    let programs: Vec<LayerProgram> = (0..num_characters * layers.len())
        .map(|i| LayerProgram {
            target_weight: 1.0,
            weight: weights[(i * 7 / 3) % weights.len()],
            ..Default::default()
        })
        .collect();
    crowd.set_frame(&[], &programs, DT).unwrap();
    let poses: Vec<Transform> = (0..num_characters * layers.len() * joints).map(|_| rng.transform()).collect();
    crowd.write_displayed_poses(&poses).unwrap();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode_stage(&mut encoder, Stage::Layers).unwrap();
    gpu.queue.submit([encoder.finish()]);
    let got = crowd.read_local_poses_blocking().unwrap();

    let mut expected = Vec::with_capacity(num_characters * joints);
    let mut scratch = MeshSpaceScratch::default();
    for (c, programs) in programs.chunks_exact(layers.len()).enumerate() {
        let layer_pose = |l: usize| &poses[(c * layers.len() + l) * joints..(c * layers.len() + l + 1) * joints];
        let mut pose = layer_pose(0).to_vec();
        let w = mask.weights();
        for l in [2, 1, 3] {
            let weight = programs[l].weight;
            if weight <= 0.0 {
                continue;
            }
            match l {
                2 => apply_additive(&mut pose, layer_pose(l), weight, Some(w)),
                1 => override_mesh(rig.parents(), &mut pose, layer_pose(l), weight, Some(w), &mut scratch),
                _ => override_local(&mut pose, layer_pose(l), weight, Some(w)),
            }
        }
        expected.extend(pose);
    }
    assert_poses_close("layers", &expected, &got, joints, joints, 0);
}

/// The shaders read a remembered pose's scale word as `JointStateLayout` does: non-uniform only
/// where it is exactly `NON_UNIFORM_SCALE`, so that a uniform scale whose value is some other
/// NaN (never a rig's or a clip's, which are finite; here written into memory directly) reads
/// back as that value on both sides, not as the slot's unwritten third vec4. The layers stage
/// reads each displayed slot (`load_pose`) into its output; the CPU reads the same memory.
#[test]
fn layers_read_a_slots_scale_as_the_cpu_layout_does() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(6);
    let joints = rig.num_joints();
    let options = GpuCrowdOptions { stage_buffers: true, ..Default::default() };
    let mut crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &[], &[LayerSetup::default()], options).unwrap();
    let programs = [LayerProgram { target_weight: 1.0, weight: 1.0, ..Default::default() }];
    crowd.set_frame(&[], &programs, DT).unwrap();
    // Uniform, non-uniform (the marker written), and uniform NaNs other than the marker (the
    // quiet NaN and its negative, and the marker's neighbour): `set_slot` writes the last three
    // as uniform, two vec4, leaving the third vec4 at the zeros `write_displayed_poses` starts from.
    let marker = throng::gpu::types::JointStateLayout::NON_UNIFORM_SCALE;
    let scales = [
        Vec3::splat(1.25),
        Vec3::new(0.9, 1.1, 1.2),
        Vec3::splat(f32::from_bits(0x7fc0_0000)),
        Vec3::splat(f32::from_bits(0xffc0_0000)),
        Vec3::splat(f32::from_bits(marker + 1)),
        Vec3::splat(0.5),
    ];
    let poses: Vec<Transform> = scales
        .iter()
        .enumerate()
        .map(|(j, &scale)| Transform {
            translation: Vec3::splat(j as f32),
            rotation: Quat::from_rotation_y(j as f32),
            scale,
        })
        .collect();
    assert_eq!(poses.len(), joints);
    crowd.write_displayed_poses(&poses).unwrap();
    let cpu_read = crowd.read_displayed_poses_blocking().unwrap();
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode_stage(&mut encoder, Stage::Layers).unwrap();
    gpu.queue.submit([encoder.finish()]);
    let gpu_read = crowd.read_local_poses_blocking().unwrap();
    let bits = |t: &Transform| {
        let (tr, r, s) = (t.translation.to_array(), t.rotation.to_array(), t.scale.to_array());
        [tr[0], tr[1], tr[2], r[0], r[1], r[2], r[3], s[0], s[1], s[2]].map(f32::to_bits)
    };
    for (j, ((written, cpu), gpu)) in poses.iter().zip(&cpu_read).zip(&gpu_read).enumerate() {
        // The CPU reader gives back what was written, bit for bit.
        assert_eq!(bits(cpu), bits(written), "joint {j}: the CPU reader");
        // The GPU reads the same pose: its NaN scale a NaN on every axis (the device may quiet
        // or canonicalise a NaN's payload when it moves it as a float), every other value exact.
        let (g, c) = (bits(gpu), bits(cpu));
        for (k, (&g, &c)) in g.iter().zip(&c).enumerate() {
            let both_nan = f32::from_bits(g).is_nan() && f32::from_bits(c).is_nan();
            assert!(g == c || (k >= 7 && both_nan), "joint {j}, float {k}: GPU read {g:#x}, CPU {c:#x}");
        }
    }
}

/// The sequence test's archetype: base, an upper-body override in mesh space with a feathered
/// mask, and an additive layer.
fn sequence_layers(rig: &Rig) -> Vec<LayerSetup> {
    vec![
        LayerSetup::default(),
        LayerSetup {
            blend: LayerBlend::Override,
            space: LayerSpace::Mesh,
            mask: Some(feathered_mask(rig)),
            ..LayerSetup::default()
        },
        LayerSetup { blend: LayerBlend::Additive, space: LayerSpace::Local, mask: None, ..LayerSetup::default() },
    ]
}

/// Character `c`'s three layer scripts, starting at frame `start`.
fn character_scripts(c: usize, start: usize) -> [LayerScript; 3] {
    let mode = |i: usize| MODES[(c + i) % MODES.len()];
    let f0 = start + 3 + (c * 7) % 20;
    // The base switches early (at frame 0 for every ninth character: before anything was
    // shown), then twice in a row, then later; layers 1 and 2 on their own schedules.
    let base_switches = if c.is_multiple_of(9) {
        vec![(start, mode(0)), (f0 + 12, mode(1)), (f0 + 13, mode(2))]
    } else {
        vec![(f0, mode(0)), (f0 + 12, mode(1)), (f0 + 13, mode(2)), (f0 + 15, mode(3)), (f0 + 30, mode(4))]
    };
    let f1 = start + 5 + (c * 3) % 25;
    let f2 = start + 8 + (c * 5) % 30;
    let mut base = LayerScript::new(
        vec![vec![(0, 0.65), (1, 0.35)], vec![(1, 1.0)], vec![(2, 0.5), (0, 0.5)]],
        base_switches,
        start_time(c),
    );
    base.root_motion = c.is_multiple_of(6);
    let upper = LayerScript::new(
        vec![vec![(3, 1.0)], vec![(4, 1.0)]],
        vec![(f1, mode(3)), (f1 + 9, mode(4)), (f1 + 10, mode(5))],
        0.0,
    );
    let additive =
        LayerScript::new(vec![vec![(5, 1.0)], vec![(6, 0.7), (5, 0.3)]], vec![(f2, mode(5)), (f2 + 6, mode(2))], 0.3);
    [base, upper, additive]
}

/// Frame `frame` of every character's layer scripts, weighted by [`layer_weights`]: the
/// samples and the programs (character `c`, layer `l` at `c * 3 + l`).
fn scripted_frame(scripts: &mut [[LayerScript; 3]], frame: usize) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    scripted_frame_after(scripts, frame, DT)
}

/// [`scripted_frame`] for a frame `dt_s` after the one before.
fn scripted_frame_after(
    scripts: &mut [[LayerScript; 3]],
    frame: usize,
    dt_s: f32,
) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    scripted_frame_weighted(scripts, frame, dt_s, |c, l| layer_weights(c, frame)[l])
}

/// Frame `frame` of every character's layer scripts, however many layers each has, layer `l` of
/// character `c` weighted by `weight(c, l)`: the samples and the programs (character by
/// character, layer by layer).
fn scripted_frame_weighted<S: AsMut<[LayerScript]>>(
    scripts: &mut [S],
    frame: usize,
    dt_s: f32,
    weight: impl Fn(usize, usize) -> f32,
) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    let mut samples = Vec::new();
    let mut programs = Vec::new();
    for (c, layer_scripts) in scripts.iter_mut().enumerate() {
        for (l, script) in layer_scripts.as_mut().iter_mut().enumerate() {
            programs.push(script.program(frame, dt_s, weight(c, l), &mut samples));
        }
    }
    (samples, programs)
}

/// Layer weights of character `c` on `frame`: the upper-body layer fades out for a few frames
/// on some characters, the additive layer on others (skipped layers, whose next switch is a cut).
fn layer_weights(c: usize, frame: usize) -> [f32; 3] {
    let upper = if c % 5 == 2 && (20..26).contains(&frame) { 0.0 } else { 0.85 };
    let additive = if c % 4 == 1 && (10..14).contains(&frame) { 0.0 } else { 0.6 };
    [1.0, upper, additive]
}

/// The fused layered frame (`shaders/frame_layers.wgsl`, and `frame_layers_levels.wgsl` for the
/// level kernel) against `eval::frame_layers` (`FrameJob`) over a minute of switches.
#[test]
fn frame_layers_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    for kernel in FrameKernel::ALL {
        frame_layers_matches_cpu_with(&gpu, kernel);
    }
}

fn frame_layers_matches_cpu_with(gpu: &GpuContext, kernel: FrameKernel) {
    let rig = test_rig(40);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let joints = rig.num_joints();
    // Small chunks: every chunk binds its own window of the output and of the characters'
    // memory, which is spread over buffers of two chunks each (kept across the growth below).
    let per_character = layers.len() as u64
        * (throng::gpu::types::LAYER_HEADER_BYTES + throng::gpu::types::JOINT_STATE_BYTES * joints as u64);
    let options = GpuCrowdOptions {
        kernel,
        max_chunk_characters: Some(7),
        max_memory_buffer_bytes: Some(14 * per_character),
        ..Default::default()
    };
    let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
    // 40 characters for 30 frames, then 50: the first 40 keep their memory.
    let mut scripts: Vec<[LayerScript; 3]> = (0..40).map(|c| character_scripts(c, 0)).collect();
    let mut context = EvalContext::new(40, layers.len(), joints);
    let frames = 60;
    for frame in 0..frames {
        if frame == 30 {
            scripts.extend((40..50).map(|c| character_scripts(c, 30)));
            context.resize(50);
        }
        if frame == 35 {
            // Reset a few characters mid-transition: their next switch is a cut on both sides.
            for c in (7..50).step_by(10) {
                context.reset_character(c);
                crowd.reset_character(c);
            }
        }
        // Two paused frames.
        let dt_s = if (40..42).contains(&frame) { 0.0 } else { DT };
        let (samples, programs) = scripted_frame_after(&mut scripts, frame, dt_s);
        let expected = cpu_frame((&rig, &clips, &layers), &samples, &programs, dt_s, &mut context).unwrap();

        let got = layered_frame(gpu, &mut crowd, &samples, &programs, dt_s);
        assert_frame_close(&format!("{} layered frame", kernel.name()), &expected, &got, joints, frame, |c| {
            format!("programs {:?}", &programs[c * layers.len()..(c + 1) * layers.len()])
        });
    }
    assert!(crowd.num_chunks() > 1, "the crowd was chunked");
}

/// A crowd's kernel unrolls its stack's layers, each compiled for its setup: the largest stack a
/// crowd can hold ([`throng::program::MAX_LAYERS`]), every kind of layer, with and without
/// memory, masked and not, matches `FrameJob` over switches in every mode on both kernels.
#[test]
fn the_largest_stack_matches_frame_job() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(40);
    let clips = test_clips(&rig);
    let mask = feathered_mask(&rig);
    let num_layers = throng::program::MAX_LAYERS;
    let layers: Vec<LayerSetup> = (0..num_layers)
        .map(|l| match l % 4 {
            _ if l == 0 => LayerSetup::default(),
            0 => LayerSetup { space: LayerSpace::Mesh, mask: Some(mask.clone()), ..LayerSetup::default() },
            1 => LayerSetup { blend: LayerBlend::Additive, needs_memory: l % 8 == 1, ..LayerSetup::default() },
            2 => LayerSetup { mask: Some(mask.clone()), needs_memory: false, ..LayerSetup::default() },
            _ => LayerSetup::default(),
        })
        .collect();
    let joints = rig.num_joints();
    let num_characters = 6;
    for kernel in FrameKernel::ALL {
        let options = GpuCrowdOptions { kernel, max_chunk_characters: Some(4), ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
        let mut context = EvalContext::new(num_characters, num_layers, joints);
        // A layer without memory only ever cuts.
        let mut scripts: Vec<Vec<LayerScript>> = (0..num_characters)
            .map(|c| {
                (0..num_layers)
                    .map(|l| {
                        let mode = if layers[l].needs_memory { MODES[(c + l) % MODES.len()] } else { SwitchMode::Cut };
                        let clip = |i: usize| ((l + i) % clips.len()) as u32;
                        LayerScript::new(
                            vec![vec![(clip(0), 1.0)], vec![(clip(1), 0.6), (clip(2), 0.4)]],
                            vec![(2 + (c + l) % 5, mode)],
                            start_time(c),
                        )
                    })
                    .collect()
            })
            .collect();
        for frame in 0..12 {
            let (samples, programs) = scripted_frame_weighted(&mut scripts, frame, DT, |c, l| {
                if l == 0 { 1.0 } else { 0.3 + 0.05 * ((c + l) % 8) as f32 }
            });
            let expected = cpu_frame((&rig, &clips, &layers), &samples, &programs, DT, &mut context).unwrap();
            let got = layered_frame(&gpu, &mut crowd, &samples, &programs, DT);
            assert_frame_close(
                &format!("{} layered frame, 16 layers", kernel.name()),
                &expected,
                &got,
                joints,
                frame,
                |c| format!("programs {:?}", &programs[c * num_layers..(c + 1) * num_layers]),
            );
        }
    }
}

/// The built-in humanoid's hierarchy, its joints named as `feathered_mask` expects.
fn named_humanoid() -> Rig {
    let humanoid = throng::demo::DemoCharacter::humanoid().rig;
    rig_of(humanoid.parents().iter().map(|&p| (p != throng::pose::NO_PARENT).then_some(usize::from(p))).collect())
}

/// A layered `Fused` crowd of this rig, clips and layers composing its hierarchy as asked (which
/// the device must run: asserted), in chunks of 4 characters.
fn fused_crowd(
    gpu: &GpuContext,
    (rig, clips, layers): (&Rig, &[Clip], &[LayerSetup]),
    hierarchy: Hierarchy,
    specialisation: Specialisation,
) -> GpuCrowd {
    let options = GpuCrowdOptions {
        kernel: FrameKernel::Fused,
        hierarchy,
        specialisation,
        max_chunk_characters: Some(4),
        ..Default::default()
    };
    let crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, options).unwrap();
    assert_eq!(crowd.hierarchy(), hierarchy, "{}-joint rig", rig.num_joints());
    crowd
}

/// A tail: a chain of 40 joints from the root, longer than a level kernel's band of chains takes
/// (31 depths), and a branch of 7 from its sixth joint, which ends inside a band.
fn long_tail_rig() -> Rig {
    rig_of(
        (0..48)
            .map(|j: usize| match j {
                0 => None,
                41 => Some(5),
                j => Some(j - 1),
            })
            .collect(),
    )
}

#[test]
fn rigs_of_1_and_256_joints_and_a_long_tail_match_frame_job() {
    let Some(gpu) = gpu() else { return };
    // 256 joints: every thread holds four joints; 1 joint: 63 idle threads and no mask. The
    // level kernel holds one character of 100 joints in its 128 threads, one of 256 in 256.
    for (kernel, rig) in FrameKernel::ALL
        .into_iter()
        .flat_map(|k| [(k, test_rig(1)), (k, test_rig(100)), (k, test_rig(256)), (k, long_tail_rig())])
    {
        let num_joints = rig.num_joints();
        let clips = test_clips(&rig);
        let layers = if num_joints > 4 {
            sequence_layers(&rig)
        } else {
            let mesh = LayerSetup {
                blend: LayerBlend::Override,
                space: LayerSpace::Mesh,
                mask: None,
                ..LayerSetup::default()
            };
            vec![LayerSetup::default(), mesh, LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() }]
        };
        let num_characters = 8;
        let options = GpuCrowdOptions { kernel, max_chunk_characters: Some(3), ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
        let mut context = EvalContext::new(num_characters, layers.len(), num_joints);
        // The sequence test's characters 3 to 10: base switches from frame 4 on, each character
        // starting from another mode, re-switches 12 and 13 frames later.
        let mut scripts: Vec<[LayerScript; 3]> = (0..num_characters).map(|c| character_scripts(c + 3, 0)).collect();
        for frame in 0..24 {
            let (samples, programs) = scripted_frame(&mut scripts, frame);
            let expected = cpu_frame((&rig, &clips, &layers), &samples, &programs, DT, &mut context).unwrap();
            let got = layered_frame(&gpu, &mut crowd, &samples, &programs, DT);
            let what = format!("{} {num_joints}-joint layered frame", kernel.name());
            assert_frame_close(&what, &expected, &got, num_joints, frame, |c| {
                format!("programs {:?}", &programs[c * layers.len()..(c + 1) * layers.len()])
            });
        }
    }
}

/// Chunks of 3 characters, and the characters' memory spread over buffers of two chunks each,
/// give the same matrices as one chunk and one buffer, bit for bit — also after a removal that
/// moves the last character's memory from the last buffer into the first.
#[test]
fn layered_chunked_crowd_equals_unchunked_bit_for_bit() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let per_character = layers.len() as u64
        * (throng::gpu::types::LAYER_HEADER_BYTES + throng::gpu::types::JOINT_STATE_BYTES * rig.num_joints() as u64);
    for kernel in FrameKernel::ALL {
        let whole = GpuCrowdOptions { kernel, ..Default::default() };
        let chunked = GpuCrowdOptions {
            kernel,
            max_chunk_characters: Some(3),
            max_memory_buffer_bytes: Some(6 * per_character),
            ..Default::default()
        };
        chunked_equals_unchunked(&gpu, (&rig, &clips, &layers), whole, chunked);
    }
}

fn chunked_equals_unchunked(
    gpu: &GpuContext,
    (rig, clips, layers): (&Rig, &[Clip], &[LayerSetup]),
    whole: GpuCrowdOptions,
    chunked: GpuCrowdOptions,
) {
    let kernel = whole.kernel.name();
    let mut one = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, whole).unwrap();
    let mut many = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, chunked).unwrap();
    let mut scripts: Vec<[LayerScript; 3]> = (0..17).map(|c| character_scripts(c, 0)).collect();
    for frame in 0..25 {
        if frame == 12 {
            // Character 1 lives in the first memory buffer, the last one (16) in the third.
            scripts.swap_remove(1);
            one.swap_remove(1);
            many.swap_remove(1);
        }
        let (samples, programs) = scripted_frame(&mut scripts, frame);
        let mut outputs = Vec::new();
        for crowd in [&mut one, &mut many] {
            outputs.push(layered_frame(gpu, crowd, &samples, &programs, DT));
        }
        assert!(
            outputs[0].iter().zip(&outputs[1]).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{kernel} frame {frame}: chunked output differs"
        );
        if frame == 0 {
            assert_eq!((one.num_chunks(), many.num_chunks()), (1, 6), "17 characters in chunks of 3");
            assert_eq!((one.num_memory_buffers(), many.num_memory_buffers()), (1, 3), "17 characters, 6 to a buffer");
        }
    }
}

#[test]
fn layered_stage_by_stage_path_equals_the_fused_frame() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(40);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let fused_options = GpuCrowdOptions { max_chunk_characters: Some(4), ..Default::default() };
    let staged_options = GpuCrowdOptions { stage_buffers: true, ..fused_options };
    let mut fused = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, fused_options).unwrap();
    let mut staged = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, staged_options).unwrap();
    let mut scripts: Vec<[LayerScript; 3]> = (0..15).map(|c| character_scripts(c, 0)).collect();
    for frame in 0..30 {
        let (samples, programs) = scripted_frame(&mut scripts, frame);
        fused.set_frame(&samples, &programs, DT).unwrap();
        staged.set_frame(&samples, &programs, DT).unwrap();
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        fused.encode(&mut encoder);
        for stage in Stage::LAYERED {
            staged.encode_stage(&mut encoder, stage).unwrap();
        }
        gpu.queue.submit([encoder.finish()]);
        let (expected, got) = (fused.read_output_blocking().unwrap(), staged.read_output_blocking().unwrap());
        assert_frame_close("staged vs fused", &expected, &got, rig.num_joints(), frame, |c| format!("character {c}"));
    }
}

#[test]
fn refuses_what_frame_job_refuses() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(8);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);

    let mut plain = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
    assert!(matches!(plain.set_frame(&[], &[LayerProgram::default()], DT), Err(GpuError::NoLayers)));

    let small_mask = LayerSetup { mask: Some(Mask::full(3)), ..LayerSetup::default() };
    let e = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &[small_mask], GpuCrowdOptions::default())
        .unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::Layers(_))), "{e}");
    let e = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &[], GpuCrowdOptions::default()).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::Layers(_))), "{e}");

    let mut crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, GpuCrowdOptions::default()).unwrap();
    let samples = [ClipSample::new(0, 0.3, 1.0)];
    let good = LayerProgram { num_target: 1, target_weight: 1.0, weight: 1.0, ..Default::default() };
    let e = crowd.set_frame(&samples, &[good; 3], f32::NAN).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::BadDt(_))), "{e}");
    let e = crowd.set_frame(&samples, &[good; 4], DT).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::LayerProgramCount { programs: 4, layers: 3 })), "{e}");
    let e = crowd
        .set_frame(&samples, &[good, good, good, good, LayerProgram { num_target: 2, ..good }, good], DT)
        .unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::SampleRange { character: 1, .. })), "{e}");

    // The same bad program is refused by both evaluators, naming the same character and layer.
    let bad = [good, good, good, good, good, LayerProgram { weight: 1.5, ..good }];
    let e = crowd.set_frame(&samples, &bad, DT).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::BadProgram { character: 1, layer: 2, .. })), "{e}");
    let mut context = EvalContext::new(2, layers.len(), rig.num_joints());
    let mut output = vec![0.0; 2 * rig.num_joints() * 16];
    // The low-level job: the test hands both evaluators the same bad program.
    let cpu = FrameJob {
        rig: &rig,
        clips: &clips,
        layers: &layers,
        samples: &samples,
        programs: &bad,
        dt_s: DT,
        context: &mut context,
        layout: OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut [0, 0],
        root_motion: &mut [],
    }
    .run()
    .unwrap_err();
    assert!(matches!(cpu, EvalError::Program(ProgramError::BadProgram { character: 1, layer: 2, .. })), "{cpu}");
    assert_eq!(crowd.num_characters(), 0, "a refused frame leaves the crowd as it was");

    // Resetting a character the crowd does not have is ignored, as on the CPU.
    crowd.set_frame(&samples, &[good; 3], DT).unwrap();
    crowd.reset_character(5);
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    assert!(matches!(crowd.encode_stage(&mut encoder, Stage::Layers), Err(GpuError::NoStageBuffers)));
    assert!(matches!(crowd.write_displayed_poses(&[Transform::IDENTITY]), Err(GpuError::LengthMismatch { .. })));
}

/// A graph that reaches every switch mode from the state step itself: base states `A`..`F`
/// entered from ANY when the int `target` names them (cut, frozen, crossfade, quintic,
/// overshoot-controlled quintic, spring), interruptible; an upper-body override in mesh space
/// with a feathered `mask`; an additive layer toggled by `lean` with a spring.
fn every_mode_graph(mask: &str) -> String {
    let switches = [
        r#""cut""#,
        r#"{ "mode": "frozen" }"#,
        r#"{ "mode": "crossfade", "easing": "smoothstep" }"#,
        r#"{ "mode": "inertialize" }"#,
        r#"{ "mode": "inertialize", "quintic": { "overshootControl": true } }"#,
        r#"{ "mode": "inertialize", "spring": { "halflife": 0.08 } }"#,
    ];
    let names = ["A", "B", "C", "D", "E", "F"];
    let states: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!(r#"{{ "name": "{n}", "defaultState": {}, "rootMotion": {} }}"#, i == 0, i == 1 || i == 2))
        .collect();
    let transitions: Vec<String> = names
        .iter()
        .zip(switches)
        .enumerate()
        .map(|(i, (n, switch))| {
            format!(
                r#"{{ "from": "ANY", "to": "{n}", "time": 0.25, "interruptionSource": "NEXT_STATE", "switch": {switch},
                     "conditions": [{{ "parameterName": "target", "predicate": "EQUAL_TO", "value": {i} }}] }}"#
            )
        })
        .collect();
    format!(
        r#"{{
  "layers": [
    {{ "name": "Base", "states": [{{ "name": "START" }}, {states}, {{ "name": "ANY" }}], "transitions": [{transitions}] }},
    {{ "name": "Upper", "blendType": "OVERWRITE", "weight": 0.9, "space": "mesh", "mask": {mask},
       "states": [{{ "name": "START" }}, {{ "name": "Rest", "defaultState": true }}, {{ "name": "Wave" }}, {{ "name": "ANY" }}],
       "transitions": [
         {{ "from": "Rest", "to": "Wave", "time": 0.3, "interruptionSource": "NEXT_STATE", "switch": {{ "mode": "crossfade" }},
            "conditions": [{{ "parameterName": "wave", "predicate": "EQUAL_TO", "value": true }}] }},
         {{ "from": "Wave", "to": "Rest", "time": 0.2, "interruptionSource": "NEXT_STATE", "switch": {{ "mode": "inertialize" }},
            "conditions": [{{ "parameterName": "wave", "predicate": "EQUAL_TO", "value": false }}] }}
       ] }},
    {{ "name": "Lean", "blendType": "ADDITIVE", "weight": 0.7,
       "states": [{{ "name": "START" }}, {{ "name": "Still", "defaultState": true }}, {{ "name": "Leaning" }}, {{ "name": "ANY" }}],
       "transitions": [
         {{ "from": "Still", "to": "Leaning", "time": 0.2, "switch": {{ "mode": "inertialize", "spring": {{ "halflife": 0.05 }} }},
            "conditions": [{{ "parameterName": "lean", "predicate": "EQUAL_TO", "value": true }}] }},
         {{ "from": "Leaning", "to": "Still", "time": 0.2, "switch": {{ "mode": "frozen" }},
            "conditions": [{{ "parameterName": "lean", "predicate": "EQUAL_TO", "value": false }}] }}
       ] }}
  ],
  "parameters": {{
    "target": {{ "name": "target", "type": "INTEGER", "value": 0 }},
    "wave": {{ "name": "wave", "type": "BOOLEAN", "value": false }},
    "lean": {{ "name": "lean", "type": "BOOLEAN", "value": false }}
  }}
}}"#,
        states = states.join(", "),
        transitions = transitions.join(",\n"),
    )
}

#[test]
fn state_step_programs_match_the_cpu_runtime_on_the_built_in_humanoid() {
    use std::sync::Arc;
    use throng::demo::DemoCharacter;
    use throng::graph::CompiledGraph;
    use throng::runtime::CrowdRuntime;
    use throng::state::{Archetype, ClipBinding};

    let Some(gpu) = gpu() else { return };
    let demo = DemoCharacter::humanoid();
    let rig = &demo.rig;
    // Spine joints at half weight, the neck, head and right arm at full.
    let mask: Vec<String> = rig
        .names()
        .iter()
        .filter_map(|n| {
            let right_arm = ["clavicle_r", "upperarm_r", "lowerarm_r", "hand_r"].contains(&n.as_str());
            let weight = if n.starts_with("spine") {
                0.5
            } else if n.starts_with("neck") || n == "head" || right_arm {
                1.0
            } else {
                return None;
            };
            Some(format!(r#""{n}": {weight}"#))
        })
        .collect();
    let graph = Arc::new(CompiledGraph::from_json(&every_mode_graph(&format!("{{ {} }}", mask.join(", ")))).unwrap());
    // The demo's clips, then two additive deltas against idle's first frame.
    let mut clips = demo.clips.clone();
    let idle = demo.clip_index("idle").unwrap();
    let reference = clips[idle].frame(0).to_vec();
    for name in ["idle", "lean"] {
        clips.push(demo.clip(name).unwrap().to_additive(&reference));
    }
    let clip = |name: &str| demo.clip_index(name).unwrap() as u32;
    let bind = |index: u32| ClipBinding { clip: index, duration_s: clips[index as usize].duration_s().max(0.1) };
    let bindings = [
        ("A", bind(clip("idle"))),
        ("B", bind(clip("walk"))),
        ("C", bind(clip("run"))),
        ("D", bind(clip("jump"))),
        ("E", bind(clip("wave"))),
        ("F", bind(clip("walk"))),
        ("Rest", bind(clip("idle"))),
        ("Wave", bind(clip("wave"))),
        ("Still", bind(demo.clips.len() as u32)),
        ("Leaning", bind(demo.clips.len() as u32 + 1)),
    ];
    let archetype = Archetype::from_bindings(graph.clone(), &bindings).unwrap();
    let layers: Vec<LayerSetup> = graph
        .layers()
        .iter()
        .map(|l| {
            let entries: Vec<MaskEntry> = l
                .mask
                .iter()
                .map(|(joint, weight)| MaskEntry { joint: joint.clone(), weight: *weight, descendants: false })
                .collect();
            LayerSetup {
                blend: match l.blend {
                    throng::graph::LayerBlend::Additive => LayerBlend::Additive,
                    _ => LayerBlend::Override,
                },
                space: match l.space {
                    throng::graph::LayerSpace::Mesh => LayerSpace::Mesh,
                    _ => LayerSpace::Local,
                },
                mask: (!entries.is_empty()).then(|| Mask::from_entries(rig, &entries).unwrap()),
                ..LayerSetup::default()
            }
        })
        .collect();
    assert!(layers[1].mask.as_ref().is_some_and(|m| m.weights().contains(&0.5)), "a feathered upper-body mask");
    assert_eq!(layers[1].space, LayerSpace::Mesh);
    assert_eq!(layers[2].blend, LayerBlend::Additive);

    let num_characters = 60;
    let options = GpuCrowdOptions { max_chunk_characters: Some(16), ..Default::default() };
    let mut gpu_crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, &clips, &layers, options).unwrap();
    let mut crowd = CrowdRuntime::new();
    let kind = crowd.add_archetype(archetype, rig.clone(), clips.clone(), layers.clone()).unwrap();
    // The GPU reads the state step's records and expands them itself.
    let (tables, trees) = crowd.crowd().archetype(kind).unwrap().expansion();
    gpu_crowd.set_expansion(tables, trees).unwrap();
    let handles = crowd.spawn_many(kind, num_characters).unwrap();
    let (target, wave, lean) =
        (crowd.param(kind, "target").unwrap(), crowd.param(kind, "wave").unwrap(), crowd.param(kind, "lean").unwrap());
    let joints = rig.num_joints();
    // What the state step emitted, to check the script made every case happen.
    let mut switched_modes = [false; 6];
    let (mut interrupted_crossfades, mut root_motion) = (0, 0);
    for frame in 0..90 {
        // Each character picks a new base state every 9 to 16 frames, sometimes two frames
        // apart (interruptions), and toggles the other layers on schedules of its own.
        let targets: Vec<i32> = (0..num_characters)
            .map(|c| (((frame + c * 5) / (9 + c % 8)) + c + usize::from((frame + c) % 23 == 0)) as i32 % 6)
            .collect();
        crowd.set_int(target, &handles, &targets).unwrap();
        let waves: Vec<bool> = (0..num_characters).map(|c| (frame + 3 * c) % 40 < 22).collect();
        crowd.set_bool(wave, &handles, &waves).unwrap();
        let leans: Vec<bool> = (0..num_characters).map(|c| (frame + 7 * c) % 30 < 12).collect();
        crowd.set_bool(lean, &handles, &leans).unwrap();
        crowd.update(DT).unwrap();
        let mut expected = vec![0.0; crowd.floats_needed(kind, OutputLayout::Mat4).unwrap()];
        crowd.evaluate(kind, OutputLayout::Mat4, &mut expected, &mut []).unwrap();
        let programs = crowd.crowd().programs(kind).unwrap();
        for p in programs {
            if p.flags & LayerProgram::SWITCHED != 0 {
                switched_modes[p.mode as usize % 6] = true;
                if p.switch_mode() == SwitchMode::Crossfade && p.flags & LayerProgram::SOURCE_SNAPSHOT != 0 {
                    interrupted_crossfades += 1;
                }
            }
            root_motion += usize::from(p.flags & LayerProgram::ROOT_MOTION != 0);
        }
        gpu_crowd.set_frame_records(&crowd.crowd().record_frame(kind).unwrap(), DT).unwrap();
        let got = encode_and_read(&gpu.device, &gpu.queue, &gpu_crowd);
        assert_frame_close("state-step frame", &expected, &got, joints, frame, |c| {
            format!("programs {:?}", &programs[c * layers.len()..(c + 1) * layers.len()])
        });
    }
    assert_eq!(
        switched_modes, [true; 6],
        "every switch mode was taken (cut, frozen, crossfade, three inertializations)"
    );
    assert!(
        interrupted_crossfades > 0 && root_motion > 0,
        "{interrupted_crossfades} interrupted crossfades, {root_motion} root-motion programs"
    );
}

/// The layered frame on a device with the limits of macOS (Metal) and DX12 — 256-byte uniform
/// and storage offset alignments, where lavapipe has 32 — and chunks of 3 characters, so that
/// every chunk's output and memory windows start at an aligned offset before the chunk's first
/// character (the shaders add the rest), and the memory and output spread over several buffers:
/// the matrices equal those of the adapter's own limits bit for bit, frame after frame of
/// switches, skipped layers and a removal.
#[test]
fn layered_frames_on_a_device_with_256_byte_alignment_equal_the_adapters_own_limits() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(|limits| {
        limits.min_uniform_buffer_offset_alignment = 256;
        limits.min_storage_buffer_offset_alignment = 256;
    }) else {
        return;
    };
    assert_eq!(
        (device.limits().min_storage_buffer_offset_alignment, device.limits().min_uniform_buffer_offset_alignment),
        (256, 256)
    );
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let mut own =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, GpuCrowdOptions::default()).unwrap();
    let per_character = layers.len() as u64
        * (throng::gpu::types::LAYER_HEADER_BYTES + throng::gpu::types::JOINT_STATE_BYTES * rig.num_joints() as u64);
    let options = GpuCrowdOptions {
        max_chunk_characters: Some(3),
        max_memory_buffer_bytes: Some(7 * per_character),
        max_output_buffer_bytes: Some(7 * 13 * 64),
        ..Default::default()
    };
    let mut restricted = GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, options).unwrap();
    let mut scripts: Vec<[LayerScript; 3]> = (0..23).map(|c| character_scripts(c, 0)).collect();
    for frame in 0..40 {
        if frame == 17 {
            scripts.swap_remove(2);
            own.swap_remove(2);
            restricted.swap_remove(2);
        }
        let (samples, programs) = scripted_frame(&mut scripts, frame);
        let expected = layered_frame(&gpu, &mut own, &samples, &programs, DT);
        restricted.set_frame(&samples, &programs, DT).unwrap();
        let got = encode_and_read(&device, &queue, &restricted);
        if frame == 0 {
            assert_eq!((own.num_chunks(), restricted.num_chunks()), (1, 8), "23 characters in chunks of 3");
            assert!(restricted.num_memory_buffers() > 1 && restricted.output_buffers().len() > 1);
        }
        assert_eq!(expected.len(), got.len(), "frame {frame}");
        if let Some(k) = expected.iter().zip(&got).position(|(a, b)| a.to_bits() != b.to_bits()) {
            let floats = 16 * rig.num_joints();
            panic!(
                "frame {frame}: character {}, joint {} differs under 256-byte alignment: {} vs {}",
                k / floats,
                k % floats / 16,
                expected[k],
                got[k]
            );
        }
    }
}

/// The level kernel's two-dimensional grid: on a device allowing 2 workgroups per dimension, 50
/// characters of a 13-joint rig (8 a workgroup, 7 workgroups) run as a grid of 2 × 2 × 2 (one
/// workgroup finding no character), and the matrices equal those of the adapter's own limits
/// (one row) bit for bit, frame after frame of switches; the fused kernel there takes chunks of
/// 2 characters.
#[test]
fn level_kernel_grids_of_rows_and_layers_equal_one_row() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(|limits| limits.max_compute_workgroups_per_dimension = 2) else {
        return;
    };
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let levels = GpuCrowdOptions { kernel: FrameKernel::Levels, ..Default::default() };
    let mut own = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, levels).unwrap();
    let mut rows = GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, levels).unwrap();
    // Walking, whatever THRONG_HIERARCHY says: pointer doubling groups the products otherwise.
    let fused = GpuCrowdOptions { kernel: FrameKernel::Fused, hierarchy: Hierarchy::Walks, ..Default::default() };
    let mut fused = GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, fused).unwrap();
    let mut scripts: Vec<[LayerScript; 3]> = (0..50).map(|c| character_scripts(c, 0)).collect();
    for frame in 0..24 {
        let (samples, programs) = scripted_frame(&mut scripts, frame);
        let expected = layered_frame(&gpu, &mut own, &samples, &programs, DT);
        rows.set_frame(&samples, &programs, DT).unwrap();
        fused.set_frame(&samples, &programs, DT).unwrap();
        if frame == 0 {
            assert_eq!((own.num_chunks(), rows.num_chunks(), fused.num_chunks()), (1, 1, 25));
        }
        for (name, crowd) in [("levels in rows", &rows), ("fused in chunks of 2", &fused)] {
            let got = encode_and_read(&device, &queue, crowd);
            assert_same_bits(&expected, &got, rig.num_joints(), &format!("frame {frame}, {name}"));
        }
    }
}

/// A crowd whose layered frame is compiled as a specialisation (`Steady`: no switch frame's
/// code; `Settled`: nor the decay; `Stored`: every displayed pose stored) gives the production
/// kernel's matrices bit for bit on frames without switches or frozen fades (the scripted
/// characters with those flags cleared: crossfades, decays never started, layers fading in and
/// out), on both frame kernels; and a measurement specialisation refuses a frame where a layer
/// switches, naming the first character and layer, writing nothing (the next frame still equals
/// production's).
#[test]
fn specialised_layered_frames_equal_production_and_refuse_switches() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(29);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let steady_frame = |scripts: &mut [[LayerScript; 3]], frame: usize| {
        let (samples, mut programs) = scripted_frame(scripts, frame);
        for p in &mut programs {
            p.flags &= !Specialisation::SWITCH_FLAGS;
        }
        (samples, programs)
    };
    for kernel in [FrameKernel::Fused, FrameKernel::Levels] {
        let options = |specialisation| GpuCrowdOptions { kernel, specialisation, ..Default::default() };
        let mut crowds: Vec<GpuCrowd> = Specialisation::ALL
            .into_iter()
            .map(|s| GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options(s)).unwrap())
            .collect();
        let mut scripts: Vec<[LayerScript; 3]> = (0..12).map(|c| character_scripts(c, 0)).collect();
        for frame in 0..40 {
            let (samples, programs) = steady_frame(&mut scripts, frame);
            let outputs: Vec<Vec<f32>> =
                crowds.iter_mut().map(|crowd| layered_frame(&gpu, crowd, &samples, &programs, DT)).collect();
            for (s, output) in Specialisation::ALL.iter().zip(&outputs).skip(1) {
                assert_same_bits(&outputs[0], output, rig.num_joints(), &format!("{kernel:?} {s:?}, frame {frame}"));
            }
        }
        let (samples, mut programs) = steady_frame(&mut scripts, 40);
        programs[7 * 3 + 1].flags |= LayerProgram::SWITCHED;
        for (_, crowd) in Specialisation::ALL.iter().zip(&mut crowds).filter(|(s, _)| s.refuses_switches()) {
            let refused = crowd.set_frame(&samples, &programs, DT);
            assert!(
                matches!(refused, Err(GpuError::Specialised { character: 7, layer: 1, .. })),
                "{kernel:?}: {refused:?}"
            );
        }
        programs[7 * 3 + 1].flags &= !LayerProgram::SWITCHED;
        let outputs: Vec<Vec<f32>> =
            crowds.iter_mut().map(|crowd| layered_frame(&gpu, crowd, &samples, &programs, DT)).collect();
        for output in &outputs[1..] {
            assert_same_bits(&outputs[0], output, rig.num_joints(), &format!("{kernel:?}, after the refusal"));
        }
    }
}

/// The production layered frame runs in two passes (`Specialisation::Production`): the steady
/// kernel, built without the switch frame's code, over the characters whose frame runs none,
/// then the production kernel over those that switch or fade from a frozen snapshot. Over the
/// scripted minute (frames where no character switches, where a few do, and one where every
/// character does; chunks of 5, and 23 characters, so that a level kernel's workgroup holds
/// characters of both passes; due lists on some frames) both frame kernels give the matrices
/// of `Specialisation::Whole`, every character in the production kernel, bit for bit.
#[test]
fn steady_and_switching_passes_equal_one_kernel_for_every_character() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(29);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let num_characters = 23;
    for kernel in FrameKernel::ALL {
        let options = |specialisation| GpuCrowdOptions {
            kernel,
            specialisation,
            max_chunk_characters: Some(5),
            ..Default::default()
        };
        let [mut passes, mut whole] = [Specialisation::Production, Specialisation::Whole]
            .map(|s| GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options(s)).unwrap());
        let mut scripts: Vec<[LayerScript; 3]> = (0..num_characters).map(|c| character_scripts(c, 0)).collect();
        let (mut none, mut some, mut all) = (0, 0, 0);
        for frame in 0..60 {
            let (samples, mut programs) = scripted_frame(&mut scripts, frame);
            if frame == 50 {
                for p in programs.iter_mut().step_by(layers.len()) {
                    p.flags |= LayerProgram::SWITCHED;
                }
            }
            let switching = programs
                .chunks(layers.len())
                .filter(|p| p.iter().any(|p| p.flags & Specialisation::SWITCH_FLAGS != 0))
                .count();
            match switching {
                0 => none += 1,
                n if n == num_characters => all += 1,
                _ => some += 1,
            }
            let due_rows: Vec<u32> =
                (0..num_characters as u32).filter(|r| !(r + frame as u32).is_multiple_of(3)).collect();
            let due_dt: Vec<f32> = due_rows.iter().map(|_| DT).collect();
            let due = (30..40).contains(&frame).then(|| DueRows { rows: &due_rows, dt_s: &due_dt });
            let [expected, got] = [&mut whole, &mut passes].map(|crowd| {
                match due {
                    Some(due) => crowd.set_frame_due(&samples, &programs, DT, due).unwrap(),
                    None => crowd.set_frame(&samples, &programs, DT).unwrap(),
                }
                encode_and_read(&gpu.device, &gpu.queue, crowd)
            });
            let what = format!("{kernel:?}, frame {frame}, {switching} characters switching");
            assert_same_bits(&expected, &got, rig.num_joints(), &what);
        }
        assert!(none > 0 && some > 0 && all == 1, "frames without, with some and all switching: {none}, {some}, {all}");
    }
}

/// The layered frame composing the hierarchy depth by depth in one subgroup
/// (`Hierarchy::Subgroup`: local-to-model in `shaders/shared/subgroup.wgsl`, the mesh-space
/// override's rotations in `subgroup_mesh.wgsl`) gives the walks' matrices bit for bit over the
/// scripted minute, in both shape passes and in the one kernel for every character, on rigs
/// whose depths fit the device's subgroups (lavapipe's 8 lanes): the built-in humanoid, a
/// 29-joint rig of two roots, the long tail (47 depths) and 100 joints in four chains (two
/// joints a thread); and the CPU's.
#[test]
fn layered_frame_composed_in_a_subgroup_equals_the_walks() {
    let Some(gpu) = gpu() else { return };
    if !gpu_support::subgroup_composes_or_skip(&gpu, &test_rig(29)) {
        return;
    }
    let rigs = [named_humanoid(), test_rig(29), long_tail_rig(), four_chains()];
    composed_frames_match_cpu(&gpu, rigs, [Hierarchy::Walks, Hierarchy::Subgroup], Some("the walks"));
}

/// The layered frame composing its hierarchy by pointer doubling (local-to-model and the
/// mesh-space override's model rotations) equals the CPU's within the
/// GPU tolerance, frame after frame of switches, fades and mesh-space layers, in both shape
/// passes and whole, for rigs from six roots (no round: the mesh-space blends published apart)
/// and five joints to 256 (four a thread) and a chain 128 deep (eight rounds).
#[test]
fn layered_frame_composed_by_doubling_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let chain = rig_of((0..129).map(|j: usize| j.checked_sub(1)).collect());
    let rigs = [
        rig_of(vec![None; 6]),
        test_rig(5),
        named_humanoid(),
        test_rig(29),
        long_tail_rig(),
        four_chains(),
        test_rig(256),
        chain,
    ];
    composed_frames_match_cpu(&gpu, rigs, [Hierarchy::Doubling], None);
}

/// Over the scripted minute (11 characters, 40 frames), for each rig in both shape passes and
/// whole: a `Fused` crowd composing its hierarchy each of these ways ([`fused_crowd`]) matches
/// the CPU's frame within the GPU tolerance, and where `bit_for_bit` names the first, every
/// other equals its matrices bit for bit.
fn composed_frames_match_cpu<const N: usize>(
    gpu: &GpuContext,
    rigs: impl IntoIterator<Item = Rig>,
    hierarchies: [Hierarchy; N],
    bit_for_bit: Option<&str>,
) {
    let num_characters = 11;
    for (rig, specialisation) in
        rigs.into_iter().flat_map(|rig| [(rig.clone(), Specialisation::Production), (rig, Specialisation::Whole)])
    {
        let num_joints = rig.num_joints();
        let clips = test_clips(&rig);
        let layers = sequence_layers(&rig);
        let mut crowds =
            hierarchies.map(|hierarchy| fused_crowd(gpu, (&rig, &clips, &layers), hierarchy, specialisation));
        let mut context = EvalContext::new(num_characters, layers.len(), num_joints);
        let mut scripts: Vec<[LayerScript; 3]> = (0..num_characters).map(|c| character_scripts(c, 0)).collect();
        for frame in 0..40 {
            let (samples, programs) = scripted_frame(&mut scripts, frame);
            let cpu = cpu_frame((&rig, &clips, &layers), &samples, &programs, DT, &mut context).unwrap();
            let outputs = crowds.each_mut().map(|crowd| {
                crowd.set_frame(&samples, &programs, DT).unwrap();
                encode_and_read(&gpu.device, &gpu.queue, crowd)
            });
            for (got, hierarchy) in outputs.iter().zip(hierarchies) {
                let what = format!("{num_joints}-joint rig, {specialisation:?}, {hierarchy:?}, frame {frame}");
                if let Some(reference) = bit_for_bit {
                    assert_same_bits(&outputs[0], got, num_joints, &format!("{what}, against {reference}"));
                }
                assert_frame_close(&what, &cpu, got, num_joints, frame, |c| {
                    format!("programs {:?}", &programs[c * layers.len()..(c + 1) * layers.len()])
                });
            }
        }
    }
}

/// The stage-by-stage path on a grid of rows: on a device allowing 2 workgroups per dimension, a
/// level-kernel crowd of 15 characters runs each stage (one workgroup a character) as grids of
/// 2 × 2 × 2 over chunks of 8, and its matrices equal the adapter's own (one row, one chunk) bit
/// for bit, frame after frame of switches, as the frame's do.
#[test]
fn stage_path_on_grids_of_rows_equals_one_row() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(|limits| limits.max_compute_workgroups_per_dimension = 2) else {
        return;
    };
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let options = GpuCrowdOptions { kernel: FrameKernel::Levels, stage_buffers: true, ..Default::default() };
    let mut own = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
    let mut rows = GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, options).unwrap();
    let mut scripts: Vec<[LayerScript; 3]> = (0..15).map(|c| character_scripts(c, 0)).collect();
    for frame in 0..24 {
        let (samples, programs) = scripted_frame(&mut scripts, frame);
        let mut outputs = Vec::new();
        for (crowd, device, queue) in [(&mut own, &gpu.device, &gpu.queue), (&mut rows, &device, &queue)] {
            crowd.set_frame(&samples, &programs, DT).unwrap();
            let mut encoder = device.create_command_encoder(&Default::default());
            for stage in Stage::LAYERED {
                crowd.encode_stage(&mut encoder, stage).unwrap();
            }
            queue.submit([encoder.finish()]);
            outputs.push(crowd.read_output_blocking().unwrap());
        }
        if frame == 0 {
            assert_eq!((own.num_chunks(), rows.num_chunks()), (1, 2));
        }
        assert_same_bits(&outputs[0], &outputs[1], rig.num_joints(), &format!("frame {frame}, stages in rows"));
    }
}

/// Panics naming the first character and joint whose mat4 output in `got` differs from
/// `expected` (one row's) in any bit.
fn assert_same_bits(expected: &[f32], got: &[f32], num_joints: usize, what: &str) {
    assert_eq!(expected.len(), got.len(), "{what}");
    if let Some(k) = expected.iter().zip(got).position(|(a, b)| a.to_bits() != b.to_bits()) {
        let floats = 16 * num_joints;
        panic!(
            "{what}: character {}, joint {} differs from one row: {} vs {}",
            k / floats,
            k % floats / 16,
            expected[k],
            got[k]
        );
    }
}

/// Character `c`'s three layer scripts for the replay test: every layer switches one to three
/// frames after its last switch, cycling through the modes, so that switches capture over
/// decaying offsets, interrupt frozen fades and crossfades, follow a switch that changed the
/// memo on the very next frame, and read displayed poses that were themselves replayed.
fn dense_scripts(c: usize) -> [LayerScript; 3] {
    let switches = |first: usize, offset: usize| -> Vec<(usize, SwitchMode)> {
        let at = |k: usize| first + (0..k).map(|i| 1 + (c + i + offset) % 3).sum::<usize>();
        (0..20).map(|k| (at(k), MODES[(c + k + offset) % MODES.len()])).collect()
    };
    let mut base = LayerScript::new(
        vec![vec![(0, 0.65), (1, 0.35)], vec![(1, 1.0)], vec![(2, 0.5), (0, 0.3), (3, 0.2)]],
        switches(2 + c % 3, 0),
        start_time(c),
    );
    base.root_motion = c.is_multiple_of(2);
    let upper = LayerScript::new(vec![vec![(3, 1.0)], vec![(4, 0.6), (2, 0.4)]], switches(3 + c % 2, 1), 0.0);
    let additive = LayerScript::new(vec![vec![(5, 1.0)], vec![(6, 0.7), (5, 0.3)]], switches(4, 2), 0.3);
    [base, upper, additive]
}

/// `programs` with eight samples of weight 0 added to each target blend: the same poses, but
/// more samples than a replay entry holds, so that the frame stores every displayed pose.
fn padded_past_replay(samples: &[ClipSample], programs: &[LayerProgram]) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    let mut padded_samples = Vec::new();
    let padded_programs = programs
        .iter()
        .map(|p| {
            let first = padded_samples.len() as u32;
            let target = p.first_sample as usize..(p.first_sample + p.num_target) as usize;
            let secondary = target.end..target.end + p.num_secondary as usize;
            padded_samples.extend_from_slice(&samples[target]);
            padded_samples.extend((0..throng::gpu::types::REPLAY_SAMPLES).map(|_| ClipSample::new(0, 0.0, 0.0)));
            padded_samples.extend_from_slice(&samples[secondary]);
            LayerProgram { first_sample: first, num_target: p.num_target + throng::gpu::types::REPLAY_SAMPLES, ..*p }
        })
        .collect();
    (padded_samples, padded_programs)
}

/// A switch reads the last two displayed poses, which the fused frames keep as the samples that
/// made them and replay (`replayed_pose` in `shaders/transition.wgsl`): over dense switches in
/// every mode, both kernels' frames match `FrameJob`, and match the same frames with every
/// displayed pose stored — the programs padded past what an entry holds, and the kernel built
/// as `Specialisation::Stored` — to well within the GPU tolerance.
#[test]
fn replayed_displayed_poses_match_stored_ones_and_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let rig = test_rig(13);
    let clips = test_clips(&rig);
    let layers = sequence_layers(&rig);
    let joints = rig.num_joints();
    let characters = 18;
    for kernel in [FrameKernel::Levels, FrameKernel::Fused] {
        let options = GpuCrowdOptions { kernel, ..Default::default() };
        let mut replayed = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
        let mut stored = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options).unwrap();
        let storing = GpuCrowdOptions { specialisation: Specialisation::Stored, ..options };
        let mut stored_kernel = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, storing).unwrap();
        let mut scripts: Vec<[LayerScript; 3]> = (0..characters).map(dense_scripts).collect();
        let mut context = EvalContext::new(characters, layers.len(), joints);
        let mut worst_between = 0.0f32;
        for frame in 0..48 {
            // A paused frame: a capture right after it measures no velocity.
            let dt_s = if frame == 20 { 0.0 } else { DT };
            let (samples, programs) = scripted_frame_after(&mut scripts, frame, dt_s);
            let expected = cpu_frame((&rig, &clips, &layers), &samples, &programs, dt_s, &mut context).unwrap();
            let got = layered_frame(&gpu, &mut replayed, &samples, &programs, dt_s);
            let (padded_samples, padded_programs) = padded_past_replay(&samples, &programs);
            let got_stored = layered_frame(&gpu, &mut stored, &padded_samples, &padded_programs, dt_s);
            let got_stored_kernel = layered_frame(&gpu, &mut stored_kernel, &samples, &programs, dt_s);
            let describe = |c: usize| format!("{kernel:?}, programs {:?}", &programs[c * 3..c * 3 + 3]);
            assert_frame_close("replayed", &expected, &got, joints, frame, describe);
            assert_frame_close("stored", &expected, &got_stored, joints, frame, describe);
            assert_frame_close("the stored kernel", &expected, &got_stored_kernel, joints, frame, describe);
            for between in [worst_abs_diff(&got, &got_stored), worst_abs_diff(&got, &got_stored_kernel)] {
                // Kept once NaN (`f32::max` would drop it).
                if between > worst_between || between.is_nan() {
                    worst_between = between;
                }
            }
        }
        // The replay is the shown arithmetic again: what separates the two is the padded blends'
        // renormalisation, a few ulps, not the GPU tolerance (a NaN fails the comparison).
        assert!(worst_between < 1e-5, "{kernel:?}: replayed and stored frames differ by {worst_between}");
    }
}
