//! Times the GPU evaluator on crowds of a 64-joint rig blending two clips per character, and
//! prints a table: characters, dispatches, GPU milliseconds per frame (timestamp queries where
//! the adapter has them, else wall clock around submit and wait), nanoseconds per character,
//! bytes uploaded per frame, output size, and the CPU evaluator's time for the same frame.
//! A second table times the layered frame (`GpuCrowd::set_frame`, the mirror of `FrameJob`):
//! the same base blend with a quarter of the crowd transitioning, a masked mesh-space override
//! and an additive layer, with the per-character memory it keeps on the device.
//!
//! `cargo run --release --example bench_gpu -- --characters 1000,10000,100000 --frames 50`
//! (`--layout affine` for the 3×4 output, `--no-cpu` to skip the CPU column, `--stages` to
//! also time each stage of both stage-by-stage paths on its own, with timestamp queries).

#[path = "../benches/support/procedural.rs"]
mod procedural;
#[path = "../benches/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use throng::eval::frame::{EvalContext, FrameJob};
use throng::eval::{EvalCrowdJob, OutputLayout};
use throng::gpu::types::GpuSampleRange;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions, Stage};
use throng::program::{ClipSample, LayerProgram};

struct Args {
    characters: Vec<usize>,
    frames: usize,
    layout: OutputLayout,
    cpu: bool,
    stages: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { characters: vec![1_000, 10_000, 100_000], frames: 50, layout: OutputLayout::Mat4, cpu: true, stages: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--characters" => {
                let list = it.next().ok_or("--characters needs a comma-separated list")?;
                args.characters = list
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|_| format!("--characters: {n:?} is not a whole number")))
                    .collect::<Result<_, _>>()?;
            }
            "--frames" => {
                args.frames = it.next().and_then(|v| v.parse().ok()).filter(|&n| n > 0).ok_or("--frames needs a positive whole number")?;
            }
            "--layout" => {
                args.layout = match it.next().as_deref() {
                    Some("mat4") => OutputLayout::Mat4,
                    Some("affine") => OutputLayout::Affine3x4,
                    other => return Err(format!("--layout must be mat4 or affine, not {other:?}")),
                };
            }
            "--no-cpu" => args.cpu = false,
            "--stages" => args.stages = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// GPU time of one frame from its two timestamps, or `None` when the adapter has no
/// timestamp queries.
struct Timer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    period_ns: f64,
}

impl Timer {
    fn new(gpu: &GpuContext) -> Option<Self> {
        if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let queries = gpu.device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("bench_gpu.timestamps"), ty: wgpu::QueryType::Timestamp, count: 2 });
        let buffer = |label, usage| gpu.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: 16, usage, mapped_at_creation: false });
        Some(Self {
            queries,
            resolve: buffer("bench_gpu.resolve", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readback: buffer("bench_gpu.readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            period_ns: f64::from(gpu.queue.get_timestamp_period()),
        })
    }

    fn read(&self, gpu: &GpuContext) -> Result<Duration, String> {
        let (sender, receiver) = std::sync::mpsc::channel();
        self.readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = sender.send(r);
        });
        gpu.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
        receiver.recv().map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&self.readback.get_mapped_range(..).map_err(|e| e.to_string())?);
        self.readback.unmap();
        let [begin, end] = ticks[..] else { return Err("two timestamps expected".into()) };
        Ok(Duration::from_nanos((end.saturating_sub(begin) as f64 * self.period_ns) as u64))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let gpu = GpuContext::new_blocking()?;
    let timer = Timer::new(&gpu);
    println!(
        "adapter: {} ({:?}, {:?}, driver {} {})",
        gpu.adapter_info.name, gpu.adapter_info.backend, gpu.adapter_info.device_type, gpu.adapter_info.driver, gpu.adapter_info.driver_info
    );
    println!("timing: {}", if timer.is_some() { "GPU timestamp queries" } else { "wall clock around submit + wait (no timestamp queries)" });
    let rig = procedural::rig();
    let clips = procedural::clips(&rig);
    println!("rig: {} joints, 2 clips blended per character, output {:?}, median of {} frames", rig.num_joints(), args.layout, args.frames);
    println!(
        "{:>10} {:>7} {:>12} {:>10} {:>14} {:>11} {:>11}",
        "characters", "chunks", "GPU ms/frame", "ns/char", "upload B/frame", "output MiB", "CPU ms"
    );
    for &num_characters in &args.characters {
        let (samples, ranges) = support::two_clip_crowd(num_characters, 0, 1);
        let options = GpuCrowdOptions { layout: args.layout, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options)?;
        crowd.set_programs(&samples, &ranges)?;
        let mut frame_times = Vec::with_capacity(args.frames);
        // One frame more than asked: the first warms caches and pipelines and is dropped.
        for frame in 0..=args.frames {
            crowd.set_programs(&samples, &ranges)?;
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            match &timer {
                Some(t) => {
                    crowd.encode_timed(&mut encoder, &t.queries, 0);
                    encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
                    encoder.copy_buffer_to_buffer(&t.resolve, 0, &t.readback, 0, 16);
                }
                None => crowd.encode(&mut encoder),
            }
            let start = Instant::now();
            gpu.queue.submit([encoder.finish()]);
            gpu.device.poll(wgpu::PollType::wait_indefinitely())?;
            let wall = start.elapsed();
            let elapsed = match &timer {
                Some(t) => t.read(&gpu)?,
                None => wall,
            };
            if frame > 0 {
                frame_times.push(elapsed);
            }
        }
        frame_times.sort();
        let gpu_time = frame_times[frame_times.len() / 2];
        let upload_bytes = samples.len() * size_of::<ClipSample>() + ranges.len() * size_of::<GpuSampleRange>();
        let output_mib = (num_characters as u64 * crowd.output_bytes_per_character()) as f64 / (1024.0 * 1024.0);
        let cpu_ms = if args.cpu {
            let mut out = vec![0.0f32; num_characters * rig.num_joints() * args.layout.floats_per_joint()];
            let start = Instant::now();
            EvalCrowdJob { rig: &rig, clips: &clips, samples: &samples, sample_ranges: &ranges, layout: args.layout, output: &mut out }.run()?;
            format!("{:.3}", start.elapsed().as_secs_f64() * 1e3)
        } else {
            "-".into()
        };
        println!(
            "{:>10} {:>7} {:>12.4} {:>10.2} {:>14} {:>11.1} {:>11}",
            num_characters,
            crowd.num_chunks(),
            gpu_time.as_secs_f64() * 1e3,
            gpu_time.as_secs_f64() * 1e9 / num_characters as f64,
            upload_bytes,
            output_mib,
            cpu_ms
        );
    }
    time_layered(&gpu, timer.as_ref(), &args)?;
    if args.stages {
        match &timer {
            Some(timer) => time_stages(&gpu, timer, &args, &rig, &clips)?,
            None => println!("--stages needs timestamp queries, which this adapter does not have"),
        }
    }
    Ok(())
}

/// Submits one frame of `crowd` (already set), waits, and returns its GPU time (timestamps, else
/// wall clock).
fn time_frame(gpu: &GpuContext, timer: Option<&Timer>, crowd: &GpuCrowd) -> Result<Duration, Box<dyn std::error::Error>> {
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    match timer {
        Some(t) => {
            crowd.encode_timed(&mut encoder, &t.queries, 0);
            encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
            encoder.copy_buffer_to_buffer(&t.resolve, 0, &t.readback, 0, 16);
        }
        None => crowd.encode(&mut encoder),
    }
    let start = Instant::now();
    gpu.queue.submit([encoder.finish()]);
    gpu.device.poll(wgpu::PollType::wait_indefinitely())?;
    let wall = start.elapsed();
    Ok(match timer {
        Some(t) => t.read(gpu)?,
        None => wall,
    })
}

/// Times the layered frame: three layers (base, masked mesh-space override, additive), a
/// quarter of the crowd transitioning on every frame, programs changing every frame.
fn time_layered(gpu: &GpuContext, timer: Option<&Timer>, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let rig = procedural::rig();
    let clips = procedural::layered_clips(&rig);
    let layers = procedural::layers(&rig);
    println!("layered frame: base 2-clip blend (a quarter transitioning: crossfade or inertialization), masked mesh-space override, additive layer");
    println!(
        "{:>10} {:>7} {:>12} {:>10} {:>14} {:>11} {:>11} {:>11}",
        "characters", "chunks", "GPU ms/frame", "ns/char", "upload B/frame", "output MiB", "memory MiB", "CPU ms"
    );
    for &num_characters in &args.characters {
        let options = GpuCrowdOptions { layout: args.layout, ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options)?;
        let dt = 1.0 / 60.0;
        let mut frame_times = Vec::with_capacity(args.frames);
        let mut upload_bytes = 0;
        // One frame more than asked: the first warms caches and pipelines and is dropped.
        for frame in 0..=args.frames {
            let (samples, programs) = support::layered_frame(num_characters, frame);
            crowd.set_frame(&samples, &programs, dt)?;
            upload_bytes = samples.len() * size_of::<ClipSample>() + programs.len() * size_of::<LayerProgram>();
            let elapsed = time_frame(gpu, timer, &crowd)?;
            if frame > 0 {
                frame_times.push(elapsed);
            }
        }
        frame_times.sort();
        let gpu_time = frame_times[frame_times.len() / 2];
        let mib = |bytes_per_character: u64| (num_characters as u64 * bytes_per_character) as f64 / (1024.0 * 1024.0);
        let cpu_ms = if args.cpu {
            let (samples, programs) = support::layered_frame(num_characters, 1);
            let mut context = EvalContext::new(num_characters, layers.len(), rig.num_joints());
            let mut output = vec![0.0f32; num_characters * rig.num_joints() * args.layout.floats_per_joint()];
            let mut clips_sampled = vec![0; num_characters];
            let start = Instant::now();
            FrameJob {
                rig: &rig,
                clips: &clips,
                layers: &layers,
                samples: &samples,
                programs: &programs,
                dt_s: dt,
                context: &mut context,
                layout: args.layout,
                output: &mut output,
                clips_sampled: &mut clips_sampled,
                root_motion: &mut [],
            }
            .run()?;
            format!("{:.3}", start.elapsed().as_secs_f64() * 1e3)
        } else {
            "-".into()
        };
        println!(
            "{:>10} {:>7} {:>12.4} {:>10.2} {:>14} {:>11.1} {:>11.1} {:>11}",
            num_characters,
            crowd.num_chunks(),
            gpu_time.as_secs_f64() * 1e3,
            gpu_time.as_secs_f64() * 1e9 / num_characters as f64,
            upload_bytes,
            mib(crowd.output_bytes_per_character()),
            mib(crowd.memory_bytes_per_character()),
            cpu_ms
        );
    }
    Ok(())
}

/// Times the stage-by-stage paths (the two-clip frame's, then the layered frame's), one stage
/// per submission, and prints each stage's median.
fn time_stages(gpu: &GpuContext, timer: &Timer, args: &Args, rig: &throng::Rig, clips: &[throng::Clip]) -> Result<(), Box<dyn std::error::Error>> {
    println!("stage-by-stage path (intermediates in device memory), GPU ms per stage:");
    println!("{:>10} {:>10} {:>15} {:>10}", "characters", "sample", "local_to_model", "skinning");
    for &num_characters in &args.characters {
        let (samples, ranges) = support::two_clip_crowd(num_characters, 0, 1);
        let options = GpuCrowdOptions { layout: args.layout, stage_buffers: true, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, options)?;
        crowd.set_programs(&samples, &ranges)?;
        let mut times: [Vec<Duration>; 3] = Default::default();
        for frame in 0..=args.frames {
            for (stage, stage_times) in Stage::ALL.into_iter().zip(&mut times) {
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                crowd.encode_stage_timed(&mut encoder, stage, &timer.queries, 0)?;
                encoder.resolve_query_set(&timer.queries, 0..2, &timer.resolve, 0);
                encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, 16);
                gpu.queue.submit([encoder.finish()]);
                let elapsed = timer.read(gpu)?;
                if frame > 0 {
                    stage_times.push(elapsed);
                }
            }
        }
        let median_ms = |t: &mut Vec<Duration>| {
            t.sort();
            t[t.len() / 2].as_secs_f64() * 1e3
        };
        let [a, b, c] = &mut times;
        println!("{:>10} {:>10.4} {:>15.4} {:>10.4}", num_characters, median_ms(a), median_ms(b), median_ms(c));
    }
    println!("layered stage-by-stage path (the layered frame's table), GPU ms per stage:");
    println!("{:>10} {:>11} {:>10} {:>15} {:>10}", "characters", "transition", "layers", "local_to_model", "skinning");
    let clips = procedural::layered_clips(rig);
    let layers = procedural::layers(rig);
    for &num_characters in &args.characters {
        let options = GpuCrowdOptions { layout: args.layout, stage_buffers: true, ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, &clips, &layers, options)?;
        let mut times: [Vec<Duration>; 4] = Default::default();
        for frame in 0..=args.frames {
            let (samples, programs) = support::layered_frame(num_characters, frame);
            crowd.set_frame(&samples, &programs, 1.0 / 60.0)?;
            for (stage, stage_times) in Stage::LAYERED.into_iter().zip(&mut times) {
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                crowd.encode_stage_timed(&mut encoder, stage, &timer.queries, 0)?;
                encoder.resolve_query_set(&timer.queries, 0..2, &timer.resolve, 0);
                encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, 16);
                gpu.queue.submit([encoder.finish()]);
                let elapsed = timer.read(gpu)?;
                if frame > 0 {
                    stage_times.push(elapsed);
                }
            }
        }
        let median_ms = |t: &mut Vec<Duration>| {
            t.sort();
            t[t.len() / 2].as_secs_f64() * 1e3
        };
        let [a, b, c, d] = &mut times;
        println!("{:>10} {:>11.4} {:>10.4} {:>15.4} {:>10.4}", num_characters, median_ms(a), median_ms(b), median_ms(c), median_ms(d));
    }
    Ok(())
}
