//! Whole crowds of the built-in humanoid through the real state step, on the GPU against the
//! CPU's (`CrowdRuntime`, one archetype per switch mode): 1,000 characters of `LOCOMOTION_GRAPH` for 10 s at 60 fps under every
//! switch mode, with interruptions, both layer kinds and both spaces; then characters added
//! and removed between frames, which must leave everyone else's matrices unchanged.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

use std::sync::Arc;

use throng::demo::{DemoArchetype, DemoCharacter, LOCOMOTION_GRAPH};
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions};
use throng::graph::CompiledGraph;
use throng::program::{LayerBlend, LayerProgram, LayerSpace, OutputLayout, SwitchMode};
use throng::runtime::CrowdRuntime;
use throng::state::{ArchetypeId, CharacterHandle};

const FPS: f32 = 60.0;
const DT: f32 = 1.0 / FPS;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;
use support::compare::{GPU_TOLERANCE, assert_matrices_close_with};
use support::drive::{DemoInputs, drive_demo};

/// Every switch mode as the graph's `defaultSwitch`, in `SwitchMode` order.
const MODES: [(&str, &str); 6] = [
    ("cut", r#""cut""#),
    ("frozen", r#"{ "mode": "frozen" }"#),
    ("crossfade", r#"{ "mode": "crossfade" }"#),
    ("inertialize (quintic)", r#"{ "mode": "inertialize" }"#),
    ("inertialize (overshoot control)", r#"{ "mode": "inertialize", "quintic": { "overshootControl": true } }"#),
    ("inertialize (spring)", r#"{ "mode": "inertialize", "spring": { "halflife": 0.06 } }"#),
];

/// `LOCOMOTION_GRAPH` with `default_switch` for every transition, every transition
/// interruptible by the destination's own (`NEXT_STATE`), and the wave layer in mesh space when
/// `mesh`, bound to the demo character.
fn locomotion(demo: &DemoCharacter, default_switch: &str, mesh: bool) -> DemoArchetype {
    let default = r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#;
    assert!(LOCOMOTION_GRAPH.contains(default), "the demo graph's default switch is where this test edits it");
    let mut json = LOCOMOTION_GRAPH.replacen(default, &format!(r#""defaultSwitch": {default_switch}"#), 1);
    json = json.replace(r#""time": 0.25,"#, r#""time": 0.25, "interruptionSource": "NEXT_STATE","#);
    if mesh {
        json = json.replacen(r#""mask": {"#, r#""space": "mesh", "mask": {"#, 1);
    }
    let graph = Arc::new(CompiledGraph::from_json(&json).expect("the demo graph variant loads"));
    let bound = demo.bind(graph).expect("the demo graph binds to the demo");
    assert_eq!(bound.layers[1].blend, LayerBlend::Additive, "lean is additive");
    assert!(
        bound.layers[2].blend == LayerBlend::Override && bound.layers[2].mask.is_some(),
        "wave is a masked override"
    );
    assert_eq!(bound.layers[2].space, if mesh { LayerSpace::Mesh } else { LayerSpace::Local });
    bound
}

/// What gameplay asks of character `id` at `frame`: target speed (m/s), whether to trigger a
/// jump, and the lean and wave layers' weights. Each character runs the same story shifted by
/// up to 1.8 s: walk, run, stop, jump standing, start walking and jump 0.1 s into the blend
/// (an interruption), stop, start walking and reverse 4 frames later (another), walk. The lean
/// and wave weights swell and fade on periods of their own, spending time at 0, at 1 and
/// between.
fn script(id: usize, frame: usize) -> DemoInputs {
    let shift = (id % 37) as i64 * 3;
    let f = frame as i64 - shift;
    let at = |t: f32| (t * FPS).round() as i64;
    let target = match f {
        f if f < at(0.2) => 0.0,
        f if f < at(1.2) => 1.5,
        f if f < at(2.0) => 4.0,
        f if f < at(4.3) => 0.0,
        f if f < at(5.6) => 1.5,
        f if f < at(6.6) => 0.0,
        f if f < at(6.6) + 4 => 1.5,
        f if f < at(7.6) => 0.0,
        _ => 1.5,
    };
    let jump = f == at(2.8) || f == at(4.3) + 6;
    let t = frame as f32 * DT;
    let swell = |period_s: f32, phase: f32| {
        ((std::f32::consts::TAU * (t / period_s + phase)).sin() * 1.6 - 0.3).clamp(0.0, 1.0)
    };
    DemoInputs { target_speed_mps: target, jump, lean: swell(3.1, id as f32 / 7.0), wave: swell(4.3, id as f32 / 11.0) }
}

/// One archetype's characters on both evaluators.
struct Group {
    name: String,
    kind: ArchetypeId,
    bound: DemoArchetype,
    /// The GPU evaluator's crowd; `None` runs the CPU alone (the churn test without a device).
    gpu: Option<GpuCrowd>,
    handles: Vec<CharacterHandle>,
    /// Each row's script id.
    ids: Vec<usize>,
    /// Each row's speed as gameplay eased it.
    speeds: Vec<f32>,
}

impl Group {
    /// Applies this frame's script to the group's characters.
    fn drive(&mut self, crowd: &mut CrowdRuntime, frame: usize) {
        drive_demo(crowd, self.kind, &self.handles, &mut self.speeds, DT, |row| script(self.ids[row], frame));
    }

    /// The runtime's CPU frame of the group's characters after the state step.
    fn cpu_frame(&self, crowd: &mut CrowdRuntime) -> Vec<f32> {
        let mut output = vec![0.0; crowd.floats_needed(self.kind, OutputLayout::Mat4).expect("archetype")];
        crowd
            .evaluate(self.kind, OutputLayout::Mat4, &mut output, &mut [])
            .expect("the state step writes valid programs");
        output
    }

    /// Uploads the group's frame (the state step's records, which the GPU expands) and records
    /// its dispatches.
    fn gpu_frame(&mut self, crowd: &CrowdRuntime, encoder: &mut wgpu::CommandEncoder) {
        let crowd = crowd.crowd();
        if let Some(gpu) = &mut self.gpu {
            let records = crowd.record_frame(self.kind).expect("archetype");
            gpu.set_frame_records(&records, DT).expect("the GPU takes what FrameJob takes");
            gpu.encode(encoder);
        }
    }
}

/// Asserts two outputs (mat4 per joint) are equal within [`GPU_TOLERANCE`], naming the group,
/// frame, row, character id and its programs on failure.
#[track_caller]
fn assert_group_close(group: &Group, crowd: &CrowdRuntime, expected: &[f32], got: &[f32], joints: usize, frame: usize) {
    let what = format!("{}, frame {frame} (t = {:.4} s)", group.name, (frame + 1) as f32 * DT);
    assert_matrices_close_with(expected, got, 16, joints, GPU_TOLERANCE, &what, |row| {
        let layers = group.bound.layers.len();
        let programs = &crowd.crowd().programs(group.kind).expect("archetype")[row * layers..(row + 1) * layers];
        format!("row {row} is character {}, programs {programs:?}", group.ids[row])
    });
}

/// What the state step emitted over a run, to check the script made every case happen.
#[derive(Default)]
struct Seen {
    /// Base-layer switches per switch mode.
    switches: [usize; 6],
    /// Base-layer switches taken while a transition was in flight, per mode.
    interruptions: [usize; 6],
    /// Frames with the lean (additive) and wave (override) layers at a weight strictly between
    /// 0 and 1, and at 1.
    lean_partial: usize,
    wave_partial: usize,
    lean_full: usize,
    wave_full: usize,
}

impl Seen {
    fn record(&mut self, programs: &[LayerProgram], previous: &mut [LayerProgram]) {
        for (p, before) in programs.chunks_exact(3).zip(previous.chunks_exact_mut(3)) {
            let base = p[0];
            if base.flags & LayerProgram::SWITCHED != 0 {
                let mode = base.switch_mode() as usize;
                self.switches[mode] += 1;
                if before[0].flags & LayerProgram::TRANSITIONING != 0 && before[0].progress < 1.0 {
                    self.interruptions[mode] += 1;
                }
            }
            let partial = |w: f32| usize::from(w > 0.0 && w < 1.0);
            self.lean_partial += partial(p[1].weight);
            self.wave_partial += partial(p[2].weight);
            self.lean_full += usize::from(p[1].weight == 1.0);
            self.wave_full += usize::from(p[2].weight == 1.0);
            before.copy_from_slice(p);
        }
    }
}

/// 1,000 characters (twelve archetypes: six switch modes × wave layer in local or mesh space)
/// for 600 frames; every frame of every character is read back and compared.
#[test]
fn a_thousand_humanoids_for_ten_seconds_match_frame_job() {
    let Some(gpu) = gpu() else { return };
    let started = std::time::Instant::now();
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let num_characters = 1_000;
    let frames = (10.0 * FPS) as usize;
    let mut crowd = CrowdRuntime::new();
    let mut groups: Vec<Group> = Vec::new();
    for (name, switch) in MODES {
        for mesh in [false, true] {
            let bound = locomotion(&demo, switch, mesh);
            let kind = crowd
                .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
                .expect("one setup per layer");
            // Small chunks, so that a group spans several dispatches as a large crowd does.
            let options = GpuCrowdOptions { max_chunk_characters: Some(32), ..Default::default() };
            let mut gpu_crowd =
                GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &bound.clips, &bound.layers, options)
                    .expect("the demo fits the device");
            let (tables, trees) = bound.archetype.expansion();
            gpu_crowd.set_expansion(tables, trees).expect("the archetype's own expansion");
            let name = format!("{name}, wave in {} space", if mesh { "mesh" } else { "local" });
            groups.push(Group {
                name,
                kind,
                bound,
                gpu: Some(gpu_crowd),
                handles: Vec::new(),
                ids: Vec::new(),
                speeds: Vec::new(),
            });
        }
    }
    let num_groups = groups.len();
    for id in 0..num_characters {
        let group = &mut groups[id % num_groups];
        group.handles.push(crowd.spawn(group.kind).expect("archetype"));
        group.ids.push(id);
        group.speeds.push(0.0);
    }
    let mut seen: Vec<Seen> = groups.iter().map(|_| Seen::default()).collect();
    let mut previous: Vec<Vec<LayerProgram>> =
        groups.iter().map(|g| vec![LayerProgram::default(); g.handles.len() * 3]).collect();
    for frame in 0..frames {
        for group in &mut groups {
            group.drive(&mut crowd, frame);
        }
        crowd.update(DT).expect("finite dt");
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        for group in &mut groups {
            group.gpu_frame(&crowd, &mut encoder);
        }
        gpu.queue.submit([encoder.finish()]);
        for (k, group) in groups.iter_mut().enumerate() {
            seen[k].record(crowd.crowd().programs(group.kind).expect("archetype"), &mut previous[k]);
            let expected = group.cpu_frame(&mut crowd);
            let got = group.gpu.as_ref().map(|g| g.read_output_blocking().expect("readback")).expect("a GPU crowd");
            assert_group_close(group, &crowd, &expected, &got, joints, frame);
        }
    }
    for (group, seen) in groups.iter().zip(&seen) {
        eprintln!(
            "{}: {} switches, {} interruptions; lean at partial weight {} frames, full {}; wave partial {}, full {}",
            group.name,
            seen.switches.iter().sum::<usize>(),
            seen.interruptions.iter().sum::<usize>(),
            seen.lean_partial,
            seen.lean_full,
            seen.wave_partial,
            seen.wave_full
        );
        assert!(
            seen.lean_partial > 0 && seen.wave_partial > 0 && seen.lean_full > 0 && seen.wave_full > 0,
            "{}: lean and wave layers at partial and full weight",
            group.name
        );
    }
    // Each archetype switches in its own mode only (cut, frozen, crossfade, three
    // inertializations), and is interrupted mid-transition except under cut, which has none in
    // flight to interrupt.
    for (k, seen) in seen.iter().enumerate() {
        let mode = k / 2;
        assert!(seen.switches[mode] > 0, "{}: switches {:?}", groups[k].name, seen.switches);
        assert_eq!(
            seen.interruptions[mode] > 0,
            mode != SwitchMode::Cut as usize,
            "{}: interruptions {:?}",
            groups[k].name,
            seen.interruptions
        );
        assert_eq!(
            seen.switches.iter().sum::<usize>(),
            seen.switches[mode],
            "{}: switches {:?}",
            groups[k].name,
            seen.switches
        );
    }
    eprintln!("{num_characters} characters × {frames} frames compared in {:.1} s", started.elapsed().as_secs_f32());
}

impl Group {
    /// A group of `bound`'s characters with script ids `ids`, spawned in that order.
    fn spawn_all(
        gpu: Option<&GpuContext>,
        demo: &DemoCharacter,
        crowd: &mut CrowdRuntime,
        name: &str,
        bound: DemoArchetype,
        ids: &[usize],
    ) -> Self {
        let kind = crowd
            .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
            .expect("one setup per layer");
        let gpu_crowd = gpu.map(|gpu| {
            let mut crowd = GpuCrowd::with_layers(
                &gpu.device,
                &gpu.queue,
                &demo.rig,
                &bound.clips,
                &bound.layers,
                GpuCrowdOptions::default(),
            )
            .expect("the demo fits the device");
            let (tables, trees) = bound.archetype.expansion();
            crowd.set_expansion(tables, trees).expect("the archetype's own expansion");
            crowd
        });
        let mut group = Self {
            name: name.to_owned(),
            kind,
            bound,
            gpu: gpu_crowd,
            handles: Vec::new(),
            ids: Vec::new(),
            speeds: Vec::new(),
        };
        for &id in ids {
            group.spawn(crowd, id);
        }
        group
    }

    /// Adds a character at the end, as `CrowdRuntime::spawn` does; it starts having shown nothing.
    fn spawn(&mut self, crowd: &mut CrowdRuntime, id: usize) {
        let handle = crowd.spawn(self.kind).expect("archetype");
        self.handles.push(handle);
        self.ids.push(id);
        self.speeds.push(0.0);
        if let Some(gpu) = &mut self.gpu {
            gpu.resize(self.handles.len());
        }
        assert_eq!(
            crowd.crowd().row_of(handle).expect("live").1,
            self.handles.len() - 1,
            "a new character takes the last row"
        );
    }

    /// Removes row `row`: `CrowdRuntime::despawn` moves the last row into it, with the CPU
    /// evaluator's memory; the GPU's memory and the script's columns follow here.
    fn despawn(&mut self, crowd: &mut CrowdRuntime, row: usize) {
        crowd.despawn(self.handles[row]).expect("live");
        if let Some(gpu) = &mut self.gpu {
            gpu.swap_remove(row);
        }
        self.handles.swap_remove(row);
        self.ids.swap_remove(row);
        self.speeds.swap_remove(row);
        if let Some(&moved) = self.handles.get(row) {
            assert_eq!(
                crowd.crowd().row_of(moved).expect("live").1,
                row,
                "despawn moved the last row into the freed one"
            );
        }
    }
}

/// Characters added and removed between frames (`CrowdRuntime::spawn` / `despawn`, which keep
/// the CPU evaluator's memory in step, mirrored by `GpuCrowd::resize` and `GpuCrowd::swap_remove`) leave the others' matrices exactly as
/// a crowd without them computes them, on both evaluators and in every switch mode: a character
/// moved into a freed row mid-transition carries on its fade or decaying offsets, and a newcomer
/// in a row someone left starts from nothing. Without an adapter the CPU half still runs.
#[test]
fn adding_and_removing_characters_leaves_the_others_unchanged() {
    let gpu = gpu();
    let gpu = gpu.as_ref();
    let demo = DemoCharacter::humanoid();
    let per_character = demo.rig.num_joints() * 16;
    let (num_stable, frames) = (12, 150);
    let stable: Vec<usize> = (0..num_stable).collect();
    let mut next_id = 100;
    let (mut moved_stable, mut moved_transitioning, mut same_count_frames, mut moved_unseen) = (0, 0, 0, 0);
    for (mode, switch) in MODES {
        let mut plain = CrowdRuntime::new();
        let mut reference = Group::spawn_all(gpu, &demo, &mut plain, mode, locomotion(&demo, switch, true), &stable);
        // The same characters with newcomers between them, so that removals move them about.
        let mut churned = CrowdRuntime::new();
        let interleaved: Vec<usize> = stable.iter().flat_map(|&id| [id, 100 + id]).collect();
        let mut churn = Group::spawn_all(gpu, &demo, &mut churned, mode, locomotion(&demo, switch, true), &interleaved);
        for frame in 0..frames {
            // Every fourth frame, remove one to three newcomers (rows spread over the crowd,
            // often with a stable character in the last row) and add up to two; every other
            // time the additions come first, so that a removal moves a character added since the
            // last frame (which the evaluators know of from `resize` alone).
            if frame % 4 == 2 {
                let removals = 1 + frame % 3;
                let additions = (frame / 4) % 3;
                let spawn_first = (frame / 4) % 2 == 1;
                let mut unseen = 0;
                if spawn_first {
                    for _ in 0..additions {
                        churn.spawn(&mut churned, next_id);
                        next_id += 1;
                        unseen += 1;
                    }
                }
                for k in 0..removals {
                    let transient: Vec<usize> = (0..churn.ids.len()).filter(|&r| churn.ids[r] >= 100).collect();
                    let Some(&row) = transient.get((frame * 7 + k * 5) % transient.len().max(1)) else { break };
                    let last = churn.ids.len() - 1;
                    if row != last && churn.ids[last] < 100 {
                        moved_stable += 1;
                        let layers = churn.bound.layers.len();
                        let base = churned.crowd().programs(churn.kind).expect("archetype")[last * layers];
                        moved_transitioning += usize::from(base.flags & LayerProgram::TRANSITIONING != 0);
                    }
                    // The characters added this frame are the last `unseen` rows: removing an
                    // earlier row moves one of them into it.
                    if unseen > 0 {
                        moved_unseen += usize::from(row < churn.ids.len() - unseen);
                        unseen -= 1;
                    }
                    churn.despawn(&mut churned, row);
                }
                same_count_frames += usize::from(additions == removals);
                if !spawn_first {
                    for _ in 0..additions {
                        churn.spawn(&mut churned, next_id);
                        next_id += 1;
                    }
                }
            }
            reference.drive(&mut plain, frame);
            churn.drive(&mut churned, frame);
            plain.update(DT).expect("finite dt");
            churned.update(DT).expect("finite dt");
            let (cpu_reference, cpu_churn) = (reference.cpu_frame(&mut plain), churn.cpu_frame(&mut churned));
            let mut outputs = vec![("CPU", &cpu_churn, &cpu_reference)];
            let gpu_outputs;
            if let Some(gpu) = gpu {
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                reference.gpu_frame(&plain, &mut encoder);
                churn.gpu_frame(&churned, &mut encoder);
                gpu.queue.submit([encoder.finish()]);
                let read = |group: &Group| {
                    group.gpu.as_ref().map(|g| g.read_output_blocking().expect("readback")).expect("a GPU crowd")
                };
                gpu_outputs = (read(&churn), read(&reference));
                // Everyone, newcomers included, on the GPU as on the CPU.
                assert_group_close(&churn, &churned, &cpu_churn, &gpu_outputs.0, demo.rig.num_joints(), frame);
                outputs.push(("GPU", &gpu_outputs.0, &gpu_outputs.1));
            }
            for (row, &id) in churn.ids.iter().enumerate().filter(|(_, id)| **id < 100) {
                let (here, there) =
                    (row * per_character..(row + 1) * per_character, id * per_character..(id + 1) * per_character);
                for &(what, churned_out, plain_out) in &outputs {
                    let (got, expected) = (&churned_out[here.clone()], &plain_out[there.clone()]);
                    if let Some(k) = (0..per_character).find(|&k| got[k].to_bits() != expected[k].to_bits()) {
                        panic!(
                            "{mode}, {what}: character {id} (row {row} of the churned crowd), joint {}, frame {frame}: {} without churn, {} with",
                            k / 16,
                            expected[k],
                            got[k]
                        );
                    }
                }
            }
        }
    }
    assert!(
        moved_stable > 0 && moved_transitioning > 0,
        "{moved_stable} moves of a kept character, {moved_transitioning} mid-transition"
    );
    assert!(same_count_frames > 0, "a frame removed as many as it added");
    assert!(moved_unseen > 0, "a removal moved a character added since the last frame");
}

/// A character added and another removed between two frames, in that order: `CrowdRuntime::despawn`
/// moves the newcomer (the last row) into the freed row. Told of the spawn (`GpuCrowd::resize`,
/// as the runtime resizes the CPU's memory, in `Group::spawn`), `GpuCrowd::swap_remove` gives that
/// row a fresh memory and leaves the last known character's alone; without it the GPU moved that
/// character's memory (an inertialization still decaying) into the newcomer and cleared its own,
/// 1.12 m off the CPU. Frame 50 falls inside character 11's first decay.
#[test]
fn a_despawn_after_a_spawn_between_frames_moves_the_newcomer_on_the_gpu_too() {
    let Some(gpu) = gpu() else { return };
    let demo = DemoCharacter::humanoid();
    let mut crowd = CrowdRuntime::new();
    let ids: Vec<usize> = (0..12).collect();
    let mut group =
        Group::spawn_all(Some(&gpu), &demo, &mut crowd, "inertialize", locomotion(&demo, MODES[3].1, false), &ids);
    for frame in 0..90 {
        if frame == 50 {
            group.spawn(&mut crowd, 100);
            group.despawn(&mut crowd, 2);
        }
        group.drive(&mut crowd, frame);
        crowd.update(DT).expect("finite dt");
        let cpu = group.cpu_frame(&mut crowd);
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        group.gpu_frame(&crowd, &mut encoder);
        gpu.queue.submit([encoder.finish()]);
        let got = group.gpu.as_ref().expect("a GPU crowd").read_output_blocking().expect("readback");
        assert_group_close(&group, &crowd, &cpu, &got, demo.rig.num_joints(), frame);
    }
}
