//! Memory per character at scale: layers whose graph has only cuts keep no memory on either
//! evaluator, and show the same pose as with it; a crowd's output split over several buffers
//! holds the same matrices as one buffer.

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

use std::sync::Arc;

use gpu_support::gpu;
use support::compare::{GPU_TOLERANCE, worst_abs_diff};
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalError;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::gpu::{GpuCrowd, GpuCrowdOptions, GpuError};
use throng::graph::CompiledGraph;
use throng::program::{LayerProgram, LayerSetup, OutputLayout, ProgramError, SwitchMode};
use throng::runtime::CrowdRuntime;
use throng::setup::BoundArchetype;
use throng::state::ArchetypeId;

const DT_S: f32 = 1.0 / 60.0;

/// `n` demo characters (64 joints) that walk, run, stop, jump, lean and wave on periods of their
/// own, the lean and wave weights crossing 0 so that those layers come and go.
struct Scene {
    demo: DemoCharacter,
    bound: BoundArchetype,
    runtime: CrowdRuntime,
    kind: ArchetypeId,
    handles: Vec<throng::state::CharacterHandle>,
}

impl Scene {
    fn new(n: usize) -> Self {
        Self::with_graph(n, LOCOMOTION_GRAPH)
    }

    fn with_graph(n: usize, graph: &str) -> Self {
        let demo = DemoCharacter::humanoid_64();
        let bound = demo.bind(Arc::new(CompiledGraph::from_json(graph).unwrap())).unwrap();
        let mut runtime = CrowdRuntime::new();
        let kind = runtime
            .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
            .unwrap();
        let handles = runtime.spawn_many(kind, n).unwrap();
        Self { demo, bound, runtime, kind, handles }
    }

    /// Sets frame `f`'s parameters and steps the state.
    fn step(&mut self, f: usize) {
        let t = f as f32 * DT_S;
        let n = self.handles.len();
        let wave = |i: usize, period: f32| (t * std::f32::consts::TAU / period + i as f32).sin();
        let speeds: Vec<f32> = (0..n).map(|i| (2.0 + 2.5 * wave(i, 1.3)).max(0.0)).collect();
        let leans: Vec<f32> = (0..n).map(|i| wave(i, 0.7).max(0.0)).collect();
        let waves: Vec<f32> = (0..n).map(|i| wave(i, 0.5).max(0.0)).collect();
        for (name, values) in [("speed", speeds), ("lean", leans), ("wave", waves)] {
            let param = self.runtime.param(self.kind, name).unwrap();
            self.runtime.set_float(param, &self.handles, &values).unwrap();
        }
        if f % 20 == 5 {
            let jump = self.runtime.param(self.kind, "jump").unwrap();
            self.runtime.set_trigger(jump, &self.handles[..n / 2], false).unwrap();
        }
        self.runtime.update(DT_S).unwrap();
    }

    /// The runtime's CPU frame after the last step, with the bound layers' own memory.
    fn runtime_frame(&mut self) -> Vec<f32> {
        let mut output = vec![0.0; self.runtime.floats_needed(self.kind, OutputLayout::Affine3x4).unwrap()];
        self.runtime.evaluate(self.kind, OutputLayout::Affine3x4, &mut output, &mut []).unwrap();
        output
    }

    fn samples(&self) -> &[throng::program::ClipSample] {
        self.runtime.crowd().samples(self.kind).unwrap()
    }

    fn programs(&self) -> &[LayerProgram] {
        self.runtime.crowd().programs(self.kind).unwrap()
    }

    /// The bound layers with memory for every layer, as a hand-built setup has.
    fn all_memory_layers(&self) -> Vec<LayerSetup> {
        self.bound.layers.iter().map(|l| LayerSetup { needs_memory: true, ..l.clone() }).collect()
    }

    fn cpu_frame(&self, layers: &[LayerSetup], context: &mut EvalContext) -> Result<Vec<f32>, EvalError> {
        let n = self.handles.len();
        let joints = self.demo.rig.num_joints();
        let mut output = vec![0.0; n * joints * 12];
        // The low-level job: these tests evaluate with contexts and setups of their own, not the runtime's.
        FrameJob {
            rig: &self.demo.rig,
            clips: &self.bound.clips,
            layers,
            samples: self.samples(),
            programs: self.programs(),
            dt_s: DT_S,
            context,
            layout: OutputLayout::Affine3x4,
            output: &mut output,
            clips_sampled: &mut vec![0; n],
            root_motion: &mut [],
        }
        .run()?;
        Ok(output)
    }
}

#[test]
fn the_demo_graph_keeps_memory_for_its_base_layer_only() {
    let scene = Scene::new(1);
    let needs: Vec<bool> = scene.bound.layers.iter().map(|l| l.needs_memory).collect();
    // Base inertializes; Lean and Wave have a single state and no transitions.
    assert_eq!(needs, [true, false, false]);
    let joints = scene.demo.rig.num_joints();
    let full = EvalContext::new(1, 3, joints);
    let lean = EvalContext::for_layers(1, &scene.bound.layers, joints);
    assert_eq!((full.num_memory_layers(), lean.num_memory_layers()), (3, 1));
    assert_eq!(lean.bytes_per_character() * 3, full.bytes_per_character());
    // A layer needs memory for any switch that fades or decays, and for none that cuts.
    let graph = |switch: &str, time: f32| {
        let json = format!(
            r#"{{ "parameters": {{ "go": {{ "name": "go", "type": "BOOLEAN", "value": false }} }},
                 "defaultSwitch": {switch},
                 "layers": [{{ "name": "Base", "states": [{{ "name": "START" }}, {{ "name": "A", "defaultState": true }}, {{ "name": "B" }}],
                   "transitions": [{{ "from": "A", "to": "B", "time": {time},
                     "conditions": [{{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }}] }}] }}] }}"#
        );
        CompiledGraph::from_json(&json).unwrap()
    };
    for (switch, time, needs) in [
        (r#"{ "mode": "crossfade" }"#, 0.2, true),
        (r#"{ "mode": "frozen" }"#, 0.2, true),
        (r#"{ "mode": "inertialize" }"#, 0.2, true),
        (r#"{ "mode": "crossfade" }"#, 0.0, false),
        (r#"{ "mode": "cut" }"#, 0.2, false),
        (r#"{ "mode": "inertialize", "spring": { "halflife": 0 } }"#, 0.2, false),
    ] {
        assert_eq!(throng::setup::layer_needs_memory(&graph(switch, time), 0), needs, "{switch}, {time} s");
    }
}

#[test]
fn layers_without_memory_show_the_same_pose_on_the_cpu() {
    let mut scene = Scene::new(48);
    let joints = scene.demo.rig.num_joints();
    let all = scene.all_memory_layers();
    let mut full = EvalContext::new(48, 3, joints);
    let mut lean = EvalContext::for_layers(48, &scene.bound.layers, joints);
    let layers = scene.bound.layers.clone();
    let (mut leaned, mut waved) = (false, false);
    for f in 0..150 {
        scene.step(f);
        let programs = scene.programs();
        leaned |= programs.chunks(3).any(|p| p[1].weight > 0.0 && p[1].weight < 1.0);
        waved |= programs.chunks(3).any(|p| p[2].weight > 0.0 && p[2].weight < 1.0);
        // A context with memory for every layer serves the memoryless setup too.
        let again = scene.cpu_frame(&layers, &mut full.clone()).unwrap();
        let expected = scene.cpu_frame(&all, &mut full).unwrap();
        let got = scene.cpu_frame(&layers, &mut lean).unwrap();
        assert!(
            expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
            "frame {f}: memoryless layers changed the pose"
        );
        assert!(again.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()), "frame {f}");
    }
    assert!(leaned && waved, "both memoryless layers were shown at partial weight");
}

#[test]
fn a_layer_without_memory_refuses_what_needs_memory() {
    let mut scene = Scene::new(2);
    scene.step(0);
    let joints = scene.demo.rig.num_joints();
    // A context without memory for a layer whose setup needs it.
    let mut lean = EvalContext::for_layers(2, &scene.bound.layers, joints);
    let all = scene.all_memory_layers();
    assert!(matches!(scene.cpu_frame(&all, &mut lean), Err(EvalError::ContextMemory { layer: 1 })));
    // A crossfade (or a fade from a snapshot) on a memoryless layer.
    let mut programs = scene.programs().to_vec();
    programs[3 + 2].mode = SwitchMode::Crossfade as u32;
    let refused = throng::program::validate_memoryless_programs(&programs, &scene.bound.layers);
    assert!(matches!(refused, Err(ProgramError::NeedsMemory { character: 1, layer: 2, .. })), "{refused:?}");
    programs[3 + 2].mode = SwitchMode::Cut as u32;
    programs[1].flags |= LayerProgram::SOURCE_SNAPSHOT;
    let refused = throng::program::validate_memoryless_programs(&programs, &scene.bound.layers);
    assert!(matches!(refused, Err(ProgramError::NeedsMemory { character: 0, layer: 1, .. })), "{refused:?}");
    let Some(ctx) = gpu() else { return };
    let mut crowd = GpuCrowd::with_layers(
        &ctx.device,
        &ctx.queue,
        &scene.demo.rig,
        &scene.bound.clips,
        &scene.bound.layers,
        GpuCrowdOptions::default(),
    )
    .unwrap();
    let e = crowd.set_frame(scene.samples(), &programs, DT_S).unwrap_err();
    assert!(matches!(e, GpuError::Program(ProgramError::NeedsMemory { character: 0, layer: 1, .. })), "{e}");
}

#[test]
fn layers_without_memory_show_the_same_pose_on_the_gpu_in_a_third_of_the_memory() {
    let Some(ctx) = gpu() else { return };
    let mut scene = Scene::new(40);
    let options = GpuCrowdOptions {
        layout: OutputLayout::Affine3x4,
        max_chunk_characters: Some(16),
        ..GpuCrowdOptions::default()
    };
    let all = scene.all_memory_layers();
    let (rig, clips) = (&scene.demo.rig, &scene.bound.clips);
    let mut full = GpuCrowd::with_layers(&ctx.device, &ctx.queue, rig, clips, &all, options).unwrap();
    let mut lean = GpuCrowd::with_layers(&ctx.device, &ctx.queue, rig, clips, &scene.bound.layers, options).unwrap();
    assert_eq!((full.num_memory_layers(), lean.num_memory_layers()), (3, 1));
    assert_eq!(lean.memory_bytes_per_character() * 3, full.memory_bytes_per_character());
    for f in 0..90 {
        scene.step(f);
        for crowd in [&mut full, &mut lean] {
            crowd.set_frame(scene.samples(), scene.programs(), DT_S).unwrap();
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            crowd.encode(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
        }
        let expected = full.read_output_blocking().unwrap();
        let got = lean.read_output_blocking().unwrap();
        assert!(
            expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
            "frame {f}: memoryless layers changed the pose"
        );
        let cpu = scene.runtime_frame();
        let worst = worst_abs_diff(&cpu, &got);
        assert!(worst < GPU_TOLERANCE, "frame {f}: GPU differs from the CPU by {worst}");
    }
}

/// Copies `bytes` from `offset` of `buffer` back to the CPU.
fn read_range(ctx: &throng::gpu::GpuContext, buffer: &wgpu::Buffer, offset: u64, bytes: u64) -> Vec<f32> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test.readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, bytes);
    ctx.queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    ctx.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let view = staging.get_mapped_range(..).unwrap();
    let floats = bytemuck::pod_collect_to_vec(&view);
    drop(view);
    staging.unmap();
    floats
}

#[test]
fn an_output_split_over_buffers_holds_the_same_matrices_as_one_buffer() {
    let Some(ctx) = gpu() else { return };
    const N: usize = 45;
    let mut scene = Scene::new(N);
    let (rig, clips, layers) = (&scene.demo.rig, &scene.bound.clips, &scene.bound.layers);
    let joints = rig.num_joints();
    let one = GpuCrowdOptions {
        layout: OutputLayout::Affine3x4,
        max_chunk_characters: Some(8),
        ..GpuCrowdOptions::default()
    };
    // Room for 2.5 chunks a buffer: whole chunks only, so 2 (16 characters) to each of 3 buffers.
    let per_character = (joints * 48) as u64;
    let split = GpuCrowdOptions { max_output_buffer_bytes: Some(20 * per_character), ..one };
    let mut whole = GpuCrowd::with_layers(&ctx.device, &ctx.queue, rig, clips, layers, one).unwrap();
    let mut parts = GpuCrowd::with_layers(&ctx.device, &ctx.queue, rig, clips, layers, split).unwrap();
    for f in 0..30 {
        scene.step(f);
        for crowd in [&mut whole, &mut parts] {
            crowd.set_frame(scene.samples(), scene.programs(), DT_S).unwrap();
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            crowd.encode(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
        }
    }
    assert_eq!((whole.output_buffers().len(), parts.output_buffers().len()), (1, 3));
    assert_eq!(parts.output_characters_per_buffer(), 16);
    assert!(whole.output().is_some() && parts.output().is_none(), "output() is the one buffer, or none when split");
    let expected = whole.read_output_blocking().unwrap();
    let got = parts.read_output_blocking().unwrap();
    assert_eq!(expected.len(), N * joints * 12);
    assert!(expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()), "split output differs from one buffer");
    // A renderer binding each window of its buffer reads every character's matrices once.
    let windows = parts.skin_windows().unwrap();
    let mut next = 0u32;
    for w in &windows {
        assert_eq!(w.first_character, next, "{w:?}");
        let buffer = &parts.output_buffers()[w.buffer as usize];
        assert!(w.offset + w.size <= buffer.size(), "{w:?} inside its buffer");
        let floats = read_range(&ctx, buffer, w.offset, w.size);
        let at = w.first_character as usize * joints * 12;
        assert!(floats.iter().zip(&expected[at..]).all(|(a, b)| a.to_bits() == b.to_bits()), "window {w:?}");
        next += w.num_characters;
    }
    assert_eq!(next as usize, N);
    assert_eq!(windows.iter().map(|w| w.buffer).max(), Some(2));
}

#[test]
fn samples_larger_than_one_binding_are_bound_a_window_per_chunk() {
    // Only where an adapter exists (`gpu()` says so, or fails under THRONG_REQUIRE_GPU=1).
    let Some(ctx) = gpu() else { return };
    // A device whose storage bindings hold 2 MiB: 15,000 characters' 10 sample slots (2.4 MB)
    // do not fit one; their layer programs (1.8 MB), the clips (1.4 MB) and a chunk's memory
    // window (254 characters) do. A million characters on lavapipe's 128 MiB bindings are the
    // same case.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(wgpu::util::initialize_adapter_from_env_or_default(&instance, None)).unwrap();
    let limits = wgpu::Limits { max_storage_buffer_binding_size: 2 << 20, ..adapter.limits() };
    let (device, queue) = pollster::block_on(
        adapter.request_device(&wgpu::DeviceDescriptor { required_limits: limits, ..Default::default() }),
    )
    .unwrap();
    const N: usize = 15_000;
    let mut scene = Scene::new(N);
    let (rig, clips, layers) = (&scene.demo.rig, &scene.bound.clips, &scene.bound.layers);
    let options = GpuCrowdOptions { layout: OutputLayout::Affine3x4, ..GpuCrowdOptions::default() };
    let mut small = GpuCrowd::with_layers(&device, &queue, rig, clips, layers, options).unwrap();
    let mut whole = GpuCrowd::with_layers(&ctx.device, &ctx.queue, rig, clips, layers, options).unwrap();
    for f in 0..4 {
        scene.step(f);
        assert!(size_of_val(scene.samples()) > 2 << 20, "the samples outgrow one binding");
        small.set_frame(scene.samples(), scene.programs(), DT_S).unwrap();
        let mut encoder = device.create_command_encoder(&Default::default());
        small.encode(&mut encoder);
        queue.submit([encoder.finish()]);
        whole.set_frame(scene.samples(), scene.programs(), DT_S).unwrap();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        whole.encode(&mut encoder);
        ctx.queue.submit([encoder.finish()]);
    }
    assert!(small.num_chunks() > 1);
    let (expected, got) = (whole.read_output_blocking().unwrap(), small.read_output_blocking().unwrap());
    assert_eq!(expected.len(), got.len());
    let worst = worst_abs_diff(&expected, &got);
    assert!(worst == 0.0, "windowed samples changed the output by up to {worst}");
}

/// The demo graph with transitions on its third layer too: the wave layer goes to idle when the
/// character runs and back when it slows, inertializing. Layers 0 and 2 keep memory and layer 1
/// none, so layer 2's memory is the second slot, not the third: a slot mistaken for a layer
/// index would read past a character's memory or another layer's.
fn graph_with_memory_around_a_memoryless_layer() -> String {
    let mut graph: serde_json::Value = serde_json::from_str(LOCOMOTION_GRAPH).unwrap();
    let wave = &mut graph["layers"][2];
    wave["states"].as_array_mut().unwrap().push(serde_json::json!({ "name": "Idle" }));
    wave["transitions"] = serde_json::json!([
        { "from": "Wave", "to": "Idle", "time": 0.2, "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 3.0 }] },
        { "from": "Idle", "to": "Wave", "time": 0.2, "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN", "value": 2.0 }] }
    ]);
    graph.to_string()
}

#[test]
fn memory_slots_skip_a_memoryless_layer_between_two_that_keep_memory() {
    let graph = graph_with_memory_around_a_memoryless_layer();
    let mut scene = Scene::with_graph(40, &graph);
    assert_eq!(scene.bound.layers.iter().map(|l| l.needs_memory).collect::<Vec<_>>(), [true, false, true]);
    let joints = scene.demo.rig.num_joints();
    let all = scene.all_memory_layers();
    let layers = scene.bound.layers.clone();
    let mut full = EvalContext::new(40, 3, joints);
    let mut lean = EvalContext::for_layers(40, &layers, joints);
    let device = gpu();
    let options = GpuCrowdOptions {
        layout: OutputLayout::Affine3x4,
        max_chunk_characters: Some(16),
        ..GpuCrowdOptions::default()
    };
    let mut gpu_crowd = device.as_ref().map(|ctx| {
        GpuCrowd::with_layers(&ctx.device, &ctx.queue, &scene.demo.rig, &scene.bound.clips, &layers, options).unwrap()
    });
    if let Some(crowd) = &gpu_crowd {
        assert_eq!(crowd.num_memory_layers(), 2);
    }
    let mut wave_switches = 0;
    for f in 0..150 {
        scene.step(f);
        wave_switches += scene
            .programs()
            .chunks(3)
            .filter(|p| p[2].flags & LayerProgram::SWITCHED != 0 && p[2].switch_mode() != SwitchMode::Cut)
            .count();
        let expected = scene.cpu_frame(&all, &mut full).unwrap();
        let got = scene.cpu_frame(&layers, &mut lean).unwrap();
        assert!(
            expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
            "frame {f}: the CPU's memory slots changed the pose"
        );
        if let (Some(ctx), Some(crowd)) = (&device, &mut gpu_crowd) {
            crowd.set_frame(scene.samples(), scene.programs(), DT_S).unwrap();
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            crowd.encode(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
            let gpu = crowd.read_output_blocking().unwrap();
            let worst = worst_abs_diff(&gpu, &got);
            assert!(worst < GPU_TOLERANCE, "frame {f}: the GPU differs from the CPU by {worst}");
        }
    }
    assert!(wave_switches > 10, "the wave layer switched with a fade ({wave_switches} times)");
}
