//! Profiling: GPU timestamp zones around each stage of the built-in humanoid's layered frame and
//! of the sampled frame, named after the stages (`GpuProfiler`), the path of adapters without
//! timestamp queries, the clock alignment Tracy's GPU timeline is placed by (with the feature),
//! and the CPU zones, plots and frame marks of a whole frame. Runs with and without `--features tracy`; with it, Tracy's
//! client is live and no server is connected, and nothing may block.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

use std::sync::mpsc;
use std::time::Duration;

use throng::demo::DemoCharacter;
use throng::eval::root_motion::RootDelta;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions, GpuError, GpuFrameTimes, GpuProfiler, Stage};
use throng::program::{ClipSample, LayerProgram, OutputLayout};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;
use support::compare::{GPU_TOLERANCE, worst_abs_diff};

const CHARACTERS: usize = 300;
const DT: f32 = 1.0 / 60.0;

/// The built-in humanoid on the demo graph: a crowd at mixed speeds, a few of them jumping,
/// stepped once through a [`CrowdRuntime`]. Holds the step's samples and programs, and the CPU
/// evaluator's matrices for it.
struct Frame {
    demo: DemoCharacter,
    clips: Vec<throng::Clip>,
    layers: Vec<throng::program::LayerSetup>,
    samples: Vec<ClipSample>,
    programs: Vec<LayerProgram>,
    /// The runtime's `Mat4` skinning matrices for the step.
    matrices: Vec<f32>,
}

fn stepped_crowd() -> Frame {
    let (demo, bound, mut runtime, kind, handles) = support::drive::demo_runtime(CHARACTERS);
    let speed = runtime.param(kind, "speed").unwrap();
    let speeds: Vec<f32> = (0..CHARACTERS).map(|i| (i % 7) as f32 * 0.7).collect();
    runtime.set_float(speed, &handles, &speeds).unwrap();
    let jump = runtime.param(kind, "jump").unwrap();
    runtime.set_trigger(jump, &handles[..CHARACTERS / 10], false).unwrap();
    runtime.update(DT).unwrap();
    let mut matrices = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    let mut root_motion = vec![RootDelta::default(); CHARACTERS];
    runtime.evaluate(kind, OutputLayout::Mat4, &mut matrices, &mut root_motion).unwrap();
    Frame {
        samples: runtime.crowd().samples(kind).unwrap().to_vec(),
        programs: runtime.crowd().programs(kind).unwrap().to_vec(),
        clips: bound.clips,
        layers: bound.layers,
        matrices,
        demo,
    }
}

fn layered_crowd(gpu: &GpuContext, frame: &Frame, stage_buffers: bool) -> GpuCrowd {
    let options = GpuCrowdOptions { stage_buffers, ..GpuCrowdOptions::default() };
    let mut crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &frame.demo.rig, &frame.clips, &frame.layers, options).unwrap();
    crowd.set_frame(&frame.samples, &frame.programs, DT).unwrap();
    crowd
}

/// Records the layered stages one by one, then the fused frame, resolves, submits, reads.
fn profile_stages_and_frame(
    gpu: &GpuContext,
    profiler: &mut GpuProfiler,
    staged: &GpuCrowd,
    fused: &GpuCrowd,
) -> GpuFrameTimes {
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    for stage in Stage::LAYERED {
        profiler.encode_stage(staged, &mut encoder, stage).unwrap();
    }
    profiler.encode(fused, &mut encoder);
    profiler.resolve(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    profiler.read_blocking().unwrap()
}

#[test]
fn each_stage_takes_non_negative_time_and_the_stages_fit_in_the_frame() {
    let Some(gpu) = gpu() else { return };
    if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!("skipping: {} has no timestamp queries (the untimed path is tested below)", gpu.adapter_info.name);
        return;
    }
    let frame = stepped_crowd();
    let staged = layered_crowd(&gpu, &frame, true);
    let fused = layered_crowd(&gpu, &frame, false);
    let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 8);
    assert!(profiler.has_timestamps());
    // Two frames: the profiler starts each frame afresh after a read.
    for round in 0..2 {
        let times = profile_stages_and_frame(&gpu, &mut profiler, &staged, &fused);
        let names: Vec<&str> = times.zones.iter().map(|z| z.name).collect();
        assert_eq!(
            names,
            ["throng.transition", "throng.layers", "throng.local_to_model", "throng.skinning", "throng.frame"],
            "round {round}"
        );
        assert_eq!(times.untimed, 0, "round {round}");
        for zone in &times.zones {
            assert!(
                zone.duration_ns() >= 0.0,
                "round {round}: {} ran from {} to {} ns",
                zone.name,
                zone.start_ns,
                zone.end_ns
            );
        }
        // The passes run one after another, so their times add up to at most the frame's.
        let sum: f64 = times.zones.iter().map(|z| z.duration_ns()).sum();
        assert!(sum > 0.0, "round {round}: 300 characters took no GPU time at all: {times:?}");
        assert!(
            sum <= times.frame_ns() * (1.0 + 1e-9),
            "round {round}: zones sum to {sum} ns, the frame spans {} ns: {times:?}",
            times.frame_ns()
        );
        for pair in times.zones.windows(2) {
            assert!(
                pair[1].start_ns >= pair[0].end_ns,
                "round {round}: {} starts before {} ends: {times:?}",
                pair[1].name,
                pair[0].name
            );
        }
    }
}

#[test]
fn every_stage_of_the_sampled_frame_is_a_zone_named_after_it() {
    let Some(gpu) = gpu() else { return };
    if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!("skipping: {} has no timestamp queries", gpu.adapter_info.name);
        return;
    }
    let frame = stepped_crowd();
    let options = GpuCrowdOptions { stage_buffers: true, ..GpuCrowdOptions::default() };
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &frame.demo.rig, &frame.clips, options).unwrap();
    // One clip per character, at staggered times.
    let samples: Vec<ClipSample> =
        (0..CHARACTERS).map(|i| ClipSample::new((i % frame.clips.len()) as u32, i as f32 * 0.01, 1.0)).collect();
    let ranges: Vec<_> = (0..CHARACTERS as u32).map(|i| i..i + 1).collect();
    crowd.set_samples(&samples, &ranges).unwrap();
    let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 8);
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    for stage in Stage::ALL {
        profiler.encode_stage(&crowd, &mut encoder, stage).unwrap();
    }
    profiler.resolve(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    let times = profiler.read_blocking().unwrap();
    let names: Vec<&str> = times.zones.iter().map(|z| z.name).collect();
    assert_eq!(names, ["throng.sample", "throng.local_to_model", "throng.skinning"]);
    assert_eq!(names, Stage::ALL.map(Stage::zone_name));
    assert_eq!(
        Stage::LAYERED.map(Stage::zone_name),
        ["throng.transition", "throng.layers", "throng.local_to_model", "throng.skinning"]
    );
}

#[test]
fn zones_past_the_limit_and_failed_stages_are_not_timed() {
    let Some(gpu) = gpu() else { return };
    if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!("skipping: {} has no timestamp queries", gpu.adapter_info.name);
        return;
    }
    let frame = stepped_crowd();
    let staged = layered_crowd(&gpu, &frame, true);
    let fused = layered_crowd(&gpu, &frame, false);
    let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 2);
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    // A stage the crowd cannot run fails before it begins a pass, and leaves no zone.
    assert!(matches!(profiler.encode_stage(&fused, &mut encoder, Stage::Layers), Err(GpuError::NoStageBuffers)));
    for stage in Stage::LAYERED {
        profiler.encode_stage(&staged, &mut encoder, stage).unwrap();
    }
    profiler.resolve(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    let times = profiler.read_blocking().unwrap();
    let names: Vec<&str> = times.zones.iter().map(|z| z.name).collect();
    assert_eq!(names, ["throng.transition", "throng.layers"]);
    assert_eq!(times.untimed, 2);
}

#[test]
fn without_timestamp_queries_the_frame_is_evaluated_and_no_time_is_reported() {
    let Some(gpu) = gpu() else { return };
    let frame = stepped_crowd();
    let fused = layered_crowd(&gpu, &frame, false);
    // As on an adapter without the feature, whatever this one has.
    let mut profiler = GpuProfiler::with_features(&gpu.device, &gpu.queue, wgpu::Features::empty(), 8);
    assert!(!profiler.has_timestamps());
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    profiler.encode(&fused, &mut encoder);
    profiler.resolve(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    let times = profiler.read_blocking().unwrap();
    assert!(times.zones.is_empty(), "{times:?}");
    assert_eq!(times.untimed, 1);
    assert_eq!(times.frame_ns(), 0.0);

    // The untimed zone still recorded the frame: the GPU's matrices are the CPU evaluator's.
    let got = fused.read_output_blocking().unwrap();
    assert_eq!(got.len(), frame.matrices.len());
    let worst = worst_abs_diff(&frame.matrices, &got);
    assert!(worst < GPU_TOLERANCE, "GPU output differs from the CPU runtime's by {worst}");
}

/// A whole frame with every CPU zone, plot and frame mark, on a thread of its own: with the
/// `tracy` feature the client is running and no server is listening, and the frame must still
/// finish promptly.
#[test]
fn a_profiled_frame_never_waits_for_a_profiler() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..3 {
            let zone = throng::zone!("test.frame");
            let frame = stepped_crowd();
            zone.value(frame.programs.len() as u64);
            zone.end();
            throng::profile::frame_mark();
        }
        let _ = done.send(());
    });
    assert!(
        finished.recv_timeout(Duration::from_secs(120)).is_ok(),
        "three profiled frames did not finish in two minutes"
    );
}

/// Tracy places GPU zones by the profiler's clock alignment. Over a few hundred frames, each
/// submitted and waited for as the viewer does, every zone must end (on the CPU's clock, where
/// Tracy shows it) no later than the CPU stopped waiting for it, and start no earlier than its
/// submission less the alignment's uncertainty; the profiler re-aligns as it goes.
#[cfg(feature = "tracy")]
#[test]
fn gpu_zones_never_end_after_the_cpu_stopped_waiting_for_them() {
    const FRAMES: usize = 300;
    // The first characters of the stepped crowd: frames short enough for 300 of them on lavapipe.
    const FEW: usize = 16;
    let Some(gpu) = gpu() else { return };
    if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!("skipping: {} has no timestamp queries", gpu.adapter_info.name);
        return;
    }
    let mut frame = stepped_crowd();
    frame.programs.truncate(FEW * frame.layers.len());
    let staged = layered_crowd(&gpu, &frame, true);
    let fused = layered_crowd(&gpu, &frame, false);
    let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 8);
    // Short, so that a few hundred quick frames see many re-alignments.
    profiler.set_alignment_interval(Duration::from_millis(20));
    let mut alignments = vec![profiler.clock_alignment().expect("an adapter with timestamps gets an alignment")];
    for round in 0..FRAMES {
        let alignment = profiler.clock_alignment().unwrap();
        if alignments.last() != Some(&alignment) {
            alignments.push(alignment);
        }
        let recorded = std::time::Instant::now();
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        if round % 10 == 9 {
            for stage in Stage::LAYERED {
                profiler.encode_stage(&staged, &mut encoder, stage).unwrap();
            }
        }
        profiler.encode(&fused, &mut encoder);
        profiler.resolve(&mut encoder);
        gpu.queue.submit([encoder.finish()]);
        gpu.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let waited = std::time::Instant::now();
        let times = profiler.read_blocking().unwrap();
        let origin = times.origin.expect("timed zones with Tracy have a place on the CPU's clock");
        for zone in &times.zones {
            let at = |ns: f64| {
                let offset = Duration::from_nanos(ns.abs() as u64);
                if ns >= 0.0 { origin + offset } else { origin - offset }
            };
            let (start, end) = (at(zone.start_ns), at(zone.end_ns));
            assert!(
                end <= waited,
                "frame {round}: {} ends {:?} after the CPU's wait for it ended ({alignment:?})",
                zone.name,
                end - waited
            );
            assert!(
                start + alignment.uncertainty >= recorded,
                "frame {round}: {} starts {:?} before it was recorded, more than the alignment's uncertainty ({alignment:?})",
                zone.name,
                recorded - start
            );
        }
    }
    assert!(alignments.len() >= 3, "{FRAMES} frames re-aligned the clocks {} times, every 20 ms", alignments.len() - 1);
    for pair in alignments.windows(2) {
        assert!(pair[1].cpu > pair[0].cpu, "alignments out of order: {pair:?}");
        assert!(pair[1].tick > pair[0].tick, "the GPU clock ran backwards between alignments: {pair:?}");
    }
}
