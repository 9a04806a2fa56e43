//! Times the GPU evaluator on crowds of the 64-joint humanoid (`DemoCharacter::humanoid_64`)
//! and prints two tables with the adapter's name.
//!
//! The first: one blended sample list per character (walk and run), the `frame` dispatch of
//! `GpuCrowd::set_samples`: characters, dispatches, GPU milliseconds per frame (timestamp
//! queries where the adapter has them, else wall clock around submit and wait), nanoseconds per
//! character, bytes uploaded per frame, output size, and `EvalCrowdJob`'s time for the same
//! frame. The second: the scenario on the layered frame (`GpuCrowd::set_frame`, the
//! mirror of `FrameJob`): a two-clip base blend with a quarter of the crowd transitioning, a
//! masked mesh-space override and an additive layer; the whole frame's GPU time and the
//! bandwidth it reaches, each stage alone (timestamps only), the memory kept per character and
//! `FrameJob`'s time beside it. A size the device cannot hold (1M characters need more than
//! lavapipe's 2 GiB buffers) prints why and is skipped.
//!
//! `cargo run --release --example bench_gpu -- --characters 10000,100000,1000000 --frames 50`
//! (the defaults; `--layout affine` for the 3×4 output, `--no-cpu` to skip the CPU columns,
//! `--stages` to also time each stage of the two-clip frame's stage-by-stage path, `--compact`
//! to sample every clip compressed at the default 0.1 mm bound, `--lod` to evaluate the layered
//! frame under animation LOD's mix of rates: `set_frame_due` with the due rows of
//! `support::LOD_MIX`, switching characters always among them, and `FrameJob::run_due` beside
//! it).
//! `--records` prints instead the records frame of the viewer's crowd: the built-in 26-joint
//! humanoid on the demo graph (inertialization, the viewer's default), its parameters driven
//! by the viewer's crowd brain (`examples/viewer/brain.rs`) through the real state step
//! (`Crowd::update` every frame, start phases and time scales spread as the viewer spreads
//! them), uploaded as state records (`GpuCrowd::set_expansion` once, `set_frame_records` each
//! frame) and expanded on the device: the expand pass's GPU time (from the end of an empty
//! timestamped pass recorded just before the crowd's, to the frame pass's start: the expand
//! pass and the barrier after it), the frame pass's, the state step's wall time, and the bytes
//! of records and blend inputs uploaded per character per frame beside the programs and
//! sample slots `set_frame` would have sent for the same frames (`Crowd::programs` /
//! `Crowd::samples` of the last one, their sizes the same every frame); and checks the device's
//! expansion of the last frame against the CPU's (`check`; a failure fails the run). Of the other
//! options only `--characters`, `--frames` and `--layout` apply to it.
//! `scripts/gpu-bench.sh` builds and runs it. Built with `--features tracy`, each frame is a
//! frame on Tracy's timeline and each timed pass a zone on its GPU timeline, named as
//! `GpuProfiler` names them (`throng.frame`, `throng.sample`, `throng.transition`, …).

#[path = "viewer/brain.rs"]
#[allow(
    dead_code,
    reason = "the viewer's brain, shared: its spawn jitter places the viewer's characters, which stay put here"
)]
mod brain;
#[path = "../benches/support/mod.rs"]
mod support;

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brain::Brain;
use throng::Clip;
use throng::clip::compact::DEFAULT_MAX_ERROR_M;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalCrowdJob;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::gpu::types::GpuSampleRange;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions, GpuProfiler, Stage};
use throng::graph::CompiledGraph;
use throng::program::{ClipSample, DueRows, LayerProgram, LayerSetup, OutputLayout};
use throng::state::{Crowd, StartPhases};

struct Args {
    characters: Vec<usize>,
    frames: usize,
    layout: OutputLayout,
    cpu: bool,
    stages: bool,
    compact: bool,
    lod: bool,
    records: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        characters: vec![10_000, 100_000, 1_000_000],
        frames: 50,
        layout: OutputLayout::Mat4,
        cpu: true,
        stages: false,
        compact: false,
        lod: false,
        records: false,
    };
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
                args.frames = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--frames needs a positive whole number")?;
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
            "--compact" => args.compact = true,
            "--lod" => args.lod = true,
            "--records" => args.records = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// GPU time of each frame of a run from its two timestamps, or `None` when the adapter has no
/// timestamp queries.
struct Timer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    period_ns: f64,
    /// Frames one run may time (two queries each).
    capacity: u32,
    /// Hands each timed pass to Tracy's GPU timeline (`--features tracy`); its own queries
    /// are unused.
    tracy: RefCell<GpuProfiler>,
}

impl Timer {
    /// Resolves the first `pairs` query pairs, waits, and returns their timestamps (ticks).
    fn ticks(&self, gpu: &GpuContext, pairs: u32) -> Result<Vec<u64>, String> {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        encoder.resolve_query_set(&self.queries, 0..2 * pairs, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, 16 * u64::from(pairs));
        gpu.queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        self.readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = sender.send(r);
        });
        gpu.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
        receiver.recv().map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        let mut ticks: Vec<u64> =
            bytemuck::pod_collect_to_vec(&self.readback.get_mapped_range(..).map_err(|e| e.to_string())?);
        self.readback.unmap();
        ticks.truncate(2 * pairs as usize);
        Ok(ticks)
    }

    /// Nanoseconds from tick `a` to tick `b`.
    fn ns(&self, a: u64, b: u64) -> f64 {
        b.saturating_sub(a) as f64 * self.period_ns
    }

    fn new(gpu: &GpuContext, capacity: u32) -> Option<Self> {
        if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let queries = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("bench_gpu.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * capacity,
        });
        let size = 16 * u64::from(capacity);
        let buffer = |label, usage| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Self {
            queries,
            resolve: buffer("bench_gpu.resolve", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readback: buffer("bench_gpu.readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            period_ns: f64::from(gpu.queue.get_timestamp_period()),
            capacity,
            tracy: RefCell::new(GpuProfiler::new(&gpu.device, &gpu.queue, 1)),
        })
    }

    /// Resolves the first `frames` query pairs, waits, and returns each pair's duration; pair
    /// `k` is the pass `passes[k % passes.len()]` on Tracy's GPU timeline.
    fn read(&self, gpu: &GpuContext, frames: u32, passes: &[&'static str]) -> Result<Vec<Duration>, String> {
        let ticks = self.ticks(gpu, frames)?;
        let pairs = ticks.chunks_exact(2);
        self.tracy
            .borrow_mut()
            .send_ticks(passes.iter().cycle().zip(pairs.clone()).map(|(&name, pair)| (name, pair[0], pair[1])));
        Ok(pairs
            .map(|pair| Duration::from_nanos((pair[1].saturating_sub(pair[0]) as f64 * self.period_ns) as u64))
            .collect())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let gpu = GpuContext::new_blocking()?;
    // Enough query pairs for the stage-by-stage runs: one per stage per frame.
    let timer = Timer::new(&gpu, (args.frames * Stage::LAYERED.len().max(Stage::ALL.len())) as u32);
    println!(
        "adapter: {} ({:?}, {:?}, driver {} {})",
        gpu.adapter_info.name,
        gpu.adapter_info.backend,
        gpu.adapter_info.device_type,
        gpu.adapter_info.driver,
        gpu.adapter_info.driver_info
    );
    println!(
        "timing: {}",
        if timer.is_some() {
            "GPU timestamp queries"
        } else {
            "wall clock around submit + wait (no timestamp queries)"
        }
    );
    if args.records {
        return time_records(&gpu, timer.as_ref(), &args);
    }
    let demo = DemoCharacter::humanoid_64();
    let clips = &bench_clips(&demo.rig, demo.clips.clone(), args.compact, None)?;
    let rig = &demo.rig;
    let (walk, run) =
        (demo.clip_index("walk").ok_or("no walk clip")? as u32, demo.clip_index("run").ok_or("no run clip")? as u32);
    println!(
        "humanoid: {} joints, 2 clips blended per character, output {:?}, {} clips, median of {} frames",
        rig.num_joints(),
        args.layout,
        if args.compact { "compact" } else { "full" },
        args.frames
    );
    println!(
        "{:>10} {:>7} {:>12} {:>10} {:>14} {:>11} {:>11}",
        "characters", "chunks", "GPU ms/frame", "ns/char", "upload B/frame", "output MiB", "CPU ms"
    );
    for &num_characters in &args.characters {
        let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
        let options = GpuCrowdOptions { layout: args.layout, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, options)?;
        if let Err(e) = crowd.set_samples(&samples, &ranges) {
            println!("{num_characters:>10} skipped: {e}");
            continue;
        }
        // A run to warm caches, pipelines and clocks, then the timed one.
        let mut gpu_time = Duration::ZERO;
        for _ in 0..2 {
            gpu_time = time_frames(&gpu, timer.as_ref(), args.frames, &["throng.frame"], |_, encoder, query| {
                crowd.set_samples(&samples, &ranges)?;
                match query {
                    Some((queries, first)) => crowd.encode_timed(encoder, queries, first),
                    None => crowd.encode(encoder),
                }
                Ok(())
            })?[0];
        }
        let upload_bytes = samples.len() * size_of::<ClipSample>() + ranges.len() * size_of::<GpuSampleRange>();
        let output_mib = (num_characters as u64 * crowd.output_bytes_per_character()) as f64 / (1024.0 * 1024.0);
        let cpu_ms = if args.cpu {
            let mut out = vec![0.0f32; num_characters * rig.num_joints() * args.layout.floats_per_joint()];
            let start = Instant::now();
            EvalCrowdJob {
                rig,
                clips,
                samples: &samples,
                sample_ranges: &ranges,
                layout: args.layout,
                output: &mut out,
            }
            .run()?;
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
            Some(timer) => time_stages(&gpu, timer, &args, rig, clips, (walk, run))?,
            None => println!("--stages needs timestamp queries, which this adapter does not have"),
        }
    }
    Ok(())
}

/// Runs `frames` frames back to back, as a game does — each one's uploads then its commands
/// (`frame`, given the frame's index and, when timing, its first timestamp query: a pair of
/// queries a frame for each of the compute `passes`, named as on Tracy's GPU timeline), submitted without waiting for the one before, so
/// the GPU stays busy and clocked up — and returns the median GPU time of each pass
/// (timestamps; without them, the wall clock of the whole run over `frames`, for one pass).
fn time_frames(
    gpu: &GpuContext,
    timer: Option<&Timer>,
    frames: usize,
    passes: &[&'static str],
    mut frame: impl FnMut(
        usize,
        &mut wgpu::CommandEncoder,
        Option<(&wgpu::QuerySet, u32)>,
    ) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let pairs = passes.len() as u32;
    let frames = timer.map_or(frames, |t| frames.min((t.capacity / pairs) as usize)).max(1);
    let start = Instant::now();
    for k in 0..frames {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        frame(k, &mut encoder, timer.map(|t| (&t.queries, 2 * pairs * k as u32)))?;
        gpu.queue.submit([encoder.finish()]);
        // One timed frame is one frame on Tracy's timeline (`--features tracy`).
        throng::profile::frame_mark();
    }
    Ok(match timer {
        Some(t) => {
            let times = t.read(gpu, frames as u32 * pairs, passes)?;
            (0..pairs as usize)
                .map(|pass| median(&mut times.iter().skip(pass).step_by(pairs as usize).copied().collect::<Vec<_>>()))
                .collect()
        }
        None => {
            gpu.device.poll(wgpu::PollType::wait_indefinitely())?;
            vec![start.elapsed() / frames as u32]
        }
    })
}

/// Bytes a layered frame must move at least, per character: the output written; per layer,
/// its replay entry written (the header and at least one sample: 32 bytes; the default kernel
/// keeps a displayed pose as the samples that replay it, `docs/gpu.md`), and the layer state's
/// first vec4 read and written (16 bytes each way; its second moves only on a spring's frames,
/// which the scenario has none of). More samples, fades, switches and inertialization move
/// more, and clip frames are read through the caches; so this is a lower bound, and the
/// bandwidth computed from it too.
fn layered_bytes_per_character(num_joints: usize, num_layers: usize, layout: OutputLayout) -> u64 {
    let output = num_joints * layout.floats_per_joint() * size_of::<f32>();
    (output + num_layers * (2 * 16 + 2 * 16)) as u64
}

/// One frame of the layered scenario (`support::layered_frame`) and, under `--lod`, the rows
/// due: those `support::LOD_MIX`'s schedule makes due plus every character whose programs
/// switch this frame (as `state::Crowd::due` promotes them), each with its rate's seconds.
struct LayeredFrame {
    samples: Vec<ClipSample>,
    programs: Vec<LayerProgram>,
    due: Option<(Vec<u32>, Vec<f32>)>,
}

impl LayeredFrame {
    const DT_S: f32 = 1.0 / 60.0;

    fn new(num_characters: usize, frame: usize, lod: bool) -> Self {
        let (samples, programs) = support::layered_frame(num_characters, frame);
        let due = lod.then(|| {
            let layers = programs.len() / num_characters.max(1);
            let scheduled = support::lod_mix_due(num_characters, frame, Self::DT_S);
            let mut scheduled = scheduled.0.into_iter().zip(scheduled.1).peekable();
            (0..num_characters as u32)
                .filter_map(|row| {
                    let due = scheduled.next_if(|&(r, _)| r == row);
                    let switches = programs[row as usize * layers..][..layers]
                        .iter()
                        .any(|p| p.flags & LayerProgram::SWITCHED != 0);
                    due.or(switches.then_some((row, f32::from(support::lod_mix_rate(row as usize)) * Self::DT_S)))
                })
                .unzip()
        });
        Self { samples, programs, due }
    }

    fn due_rows(&self) -> Option<DueRows<'_>> {
        self.due.as_ref().map(|(rows, dt_s)| DueRows { rows, dt_s })
    }

    fn upload(&self, crowd: &mut GpuCrowd) -> Result<(), throng::gpu::GpuError> {
        match self.due_rows() {
            Some(due) => crowd.set_frame_due(&self.samples, &self.programs, Self::DT_S, due),
            None => crowd.set_frame(&self.samples, &self.programs, Self::DT_S),
        }
    }

    fn upload_bytes(&self) -> usize {
        let due = self.due.as_ref().map_or(0, |(rows, _)| rows.len() * 8);
        self.samples.len() * size_of::<ClipSample>() + self.programs.len() * size_of::<LayerProgram>() + due
    }
}

/// `clips`, compressed at the default bound when `compact` (a clip no format keeps within it
/// stays full, as `Clip::compress` decides); `additive` names the additive delta among them and
/// the pose it is measured on (`Clip::compress_additive`).
fn bench_clips(
    rig: &throng::Rig,
    clips: Vec<Clip>,
    compact: bool,
    additive: Option<(usize, &[throng::Transform])>,
) -> Result<Vec<Clip>, throng::clip::ClipError> {
    if !compact {
        return Ok(clips);
    }
    let compress = |(i, clip): (usize, &Clip)| match additive {
        Some((delta, reference)) if delta == i => clip.compress_additive(rig, reference, DEFAULT_MAX_ERROR_M),
        _ => clip.compress(rig, DEFAULT_MAX_ERROR_M),
    };
    clips.iter().enumerate().map(|c| compress(c).map(|(c, _)| c)).collect()
}

/// Times the layered frame, the scenario: a quarter of the crowd transitioning
/// (crossfade or inertialization) on every frame, programs changing every frame; each stage on
/// its own too (the stage-by-stage path, timestamps only), and `FrameJob` beside it.
fn time_layered(gpu: &GpuContext, timer: Option<&Timer>, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let support::Scenario { rig, clips, layers, reference } = support::humanoid_scenario();
    // Clip 2 is the additive lean: compressed against the pose it is applied onto.
    let clips = bench_clips(&rig, clips, args.compact, Some((2, &reference)))?;
    println!(
        "layered frame, {}-joint humanoid: base 2-clip blend (a quarter transitioning: crossfade or inertialization), masked mesh-space override, additive layer; {} clips{}",
        rig.num_joints(),
        if args.compact { "compact" } else { "full" },
        if args.lod { "; LOD mix (10/20/30/40 % at rates 1/2/4/8, switching characters always evaluated)" } else { "" }
    );
    println!(
        "{:>10} {:>6} {:>9} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9}",
        "characters",
        "chunks",
        "frame ms",
        "ns/char",
        "GB/s",
        "transition",
        "layers",
        "l2m",
        "skinning",
        "upload B",
        "out MiB",
        "mem MiB",
        "CPU ms"
    );
    for &num_characters in &args.characters {
        let options = GpuCrowdOptions { layout: args.layout, ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, options)?;
        // The frames' programs are made before the run, so that making them does not leave the
        // GPU idle between frames; the first run warms caches, pipelines and clocks.
        let frames: Vec<_> = (0..args.frames).map(|frame| LayeredFrame::new(num_characters, frame, args.lod)).collect();
        if let Err(e) = frames[0].upload(&mut crowd) {
            println!("{num_characters:>10} skipped: {e}");
            continue;
        }
        let upload_bytes = frames.iter().map(LayeredFrame::upload_bytes).max().unwrap_or(0);
        let mut gpu_time = Duration::ZERO;
        for _ in 0..2 {
            gpu_time = time_frames(gpu, timer, args.frames, &["throng.frame"], |frame, encoder, query| {
                frames[frame].upload(&mut crowd)?;
                match query {
                    Some((queries, first)) => crowd.encode_timed(encoder, queries, first),
                    None => crowd.encode(encoder),
                }
                Ok(())
            })?[0];
        }
        let stages = match timer {
            Some(timer) => time_layered_stages(gpu, timer, args, &rig, &clips, &layers, &frames)?,
            None => None,
        };
        let stage = |k: usize| {
            stages.map_or_else(|| "-".to_owned(), |s: [Duration; 4]| format!("{:.4}", s[k].as_secs_f64() * 1e3))
        };
        let mib = |bytes_per_character: u64| (num_characters as u64 * bytes_per_character) as f64 / (1024.0 * 1024.0);
        // Under `--lod` only the due characters move their bytes: the frames' mean due count.
        let evaluated =
            frames.iter().map(|f| f.due.as_ref().map_or(num_characters, |(rows, _)| rows.len())).sum::<usize>()
                / frames.len();
        let bytes = evaluated as u64 * layered_bytes_per_character(rig.num_joints(), layers.len(), args.layout)
            + upload_bytes as u64;
        let cpu_ms = if args.cpu { cpu_layered_ms(&rig, &clips, &layers, num_characters, args)? } else { "-".into() };
        println!(
            "{:>10} {:>6} {:>9.4} {:>8.2} {:>8.3} {:>10} {:>8} {:>8} {:>8} {:>10} {:>9.1} {:>9.1} {:>9}",
            num_characters,
            crowd.num_chunks(),
            gpu_time.as_secs_f64() * 1e3,
            gpu_time.as_secs_f64() * 1e9 / num_characters as f64,
            bytes as f64 / gpu_time.as_secs_f64() / 1e9,
            stage(0),
            stage(1),
            stage(2),
            stage(3),
            upload_bytes,
            mib(crowd.output_bytes_per_character()),
            mib(crowd.memory_bytes_per_character()),
            cpu_ms
        );
    }
    println!(
        "GB/s: at least {} bytes moved per character evaluated (output, and per layer the displayed pose written and the layer's state read and written), plus the upload, over the frame's GPU time",
        layered_bytes_per_character(rig.num_joints(), layers.len(), args.layout)
    );
    println!(
        "transition, layers, l2m (local_to_model), skinning: each stage alone on the stage-by-stage path (intermediates in device memory), so they sum to more than the fused frame"
    );
    Ok(())
}

/// The most characters the CPU column evaluates: `EvalContext` holds about 30 KB per character
/// of this scenario, so a million would need some 30 GB; larger crowds are timed at this size and
/// scaled linearly (the CPU evaluator's cost per character is flat), marked `~`.
const CPU_MAX_CHARACTERS: usize = 100_000;

/// `FrameJob`'s time for one frame of the scenario, after one frame that fills the context.
fn cpu_layered_ms(
    rig: &throng::Rig,
    clips: &[throng::Clip],
    layers: &[LayerSetup],
    num_characters: usize,
    args: &Args,
) -> Result<String, Box<dyn std::error::Error>> {
    let layout = args.layout;
    let n = num_characters.min(CPU_MAX_CHARACTERS);
    let mut context = EvalContext::new(n, layers.len(), rig.num_joints());
    let mut output = vec![0.0f32; n * rig.num_joints() * layout.floats_per_joint()];
    let mut clips_sampled = vec![0; n];
    let mut elapsed = Duration::ZERO;
    for frame in 0..2 {
        // The first frame fills the context for everyone; the timed one follows `--lod`.
        let f = LayeredFrame::new(n, frame, args.lod && frame > 0);
        let start = Instant::now();
        // The job, not `CrowdRuntime`: it runs the hand-made frames the GPU runs, to compare the two.
        let job = FrameJob {
            rig,
            clips,
            layers,
            samples: &f.samples,
            programs: &f.programs,
            dt_s: LayeredFrame::DT_S,
            context: &mut context,
            layout,
            output: &mut output,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        };
        match f.due_rows() {
            Some(due) => job.run_due(due)?,
            None => job.run()?,
        };
        elapsed = start.elapsed();
    }
    let ms = elapsed.as_secs_f64() * 1e3 * num_characters as f64 / n as f64;
    Ok(if n < num_characters { format!("~{ms:.1}") } else { format!("{ms:.3}") })
}

/// Median GPU time of each layered stage alone (transition, layers, local_to_model, skinning)
/// over `frames`, or `None` when the stage buffers do not fit the device at this size.
fn time_layered_stages(
    gpu: &GpuContext,
    timer: &Timer,
    args: &Args,
    rig: &throng::Rig,
    clips: &[throng::Clip],
    layers: &[LayerSetup],
    frames: &[LayeredFrame],
) -> Result<Option<[Duration; 4]>, Box<dyn std::error::Error>> {
    let options = GpuCrowdOptions { layout: args.layout, stage_buffers: true, ..Default::default() };
    let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, options)?;
    let Some(first) = frames.first() else { return Ok(None) };
    if first.upload(&mut crowd).is_err() {
        return Ok(None);
    }
    let mut times = Vec::new();
    for _ in 0..2 {
        times = time_frames(
            gpu,
            Some(timer),
            frames.len(),
            &Stage::LAYERED.map(Stage::zone_name),
            |frame, encoder, query| {
                frames[frame].upload(&mut crowd)?;
                let (queries, first) = query.ok_or("stage timing needs timestamp queries")?;
                for (k, stage) in Stage::LAYERED.into_iter().enumerate() {
                    crowd.encode_stage_timed(encoder, stage, queries, first + 2 * k as u32)?;
                }
                Ok(())
            },
        )?;
    }
    Ok(times.try_into().ok())
}

/// The median of some frame times (sorts them).
fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Times the stage-by-stage paths (the two-clip frame's, then the layered frame's), one stage
/// per submission, and prints each stage's median.
fn time_stages(
    gpu: &GpuContext,
    timer: &Timer,
    args: &Args,
    rig: &throng::Rig,
    clips: &[throng::Clip],
    (a, b): (u32, u32),
) -> Result<(), Box<dyn std::error::Error>> {
    println!("stage-by-stage path (intermediates in device memory), GPU ms per stage:");
    println!("{:>10} {:>10} {:>15} {:>10}", "characters", "sample", "local_to_model", "skinning");
    for &num_characters in &args.characters {
        let (samples, ranges) = support::two_clip_crowd(num_characters, a, b);
        let options = GpuCrowdOptions { layout: args.layout, stage_buffers: true, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, options)?;
        if let Err(e) = crowd.set_samples(&samples, &ranges) {
            println!("{num_characters:>10} skipped: {e}");
            continue;
        }
        let mut times = Vec::new();
        for _ in 0..2 {
            times =
                time_frames(gpu, Some(timer), args.frames, &Stage::ALL.map(Stage::zone_name), |_, encoder, query| {
                    crowd.set_samples(&samples, &ranges)?;
                    let (queries, first) = query.ok_or("stage timing needs timestamp queries")?;
                    for (k, stage) in Stage::ALL.into_iter().enumerate() {
                        crowd.encode_stage_timed(encoder, stage, queries, first + 2 * k as u32)?;
                    }
                    Ok(())
                })?;
        }
        let ms = |k: usize| times.get(k).map_or(f64::NAN, |t| t.as_secs_f64() * 1e3);
        println!("{:>10} {:>10.4} {:>15.4} {:>10.4}", num_characters, ms(0), ms(1), ms(2));
    }
    Ok(())
}

/// The viewer's crowd's records frame, per size (`--records`, the module's docs say what).
fn time_records(gpu: &GpuContext, timer: Option<&Timer>, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    const DT_S: f32 = 1.0 / 60.0;
    let demo = DemoCharacter::humanoid();
    // The demo graph as the viewer runs it by default: every transition an inertialization.
    let mut json: serde_json::Value = serde_json::from_str(LOCOMOTION_GRAPH)?;
    json["defaultSwitch"] = serde_json::json!({ "mode": "inertialize", "quintic": { "overshootControl": true } });
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json.to_string())?))?;
    let (tables, trees) = bound.archetype.expansion();
    println!(
        "records frame, the viewer's crowd: {}-joint humanoid, demo graph (layers {}, blend inputs {}), inertialization, the viewer's brain, a state step a frame, set_frame_records; median of {} frames",
        demo.rig.num_joints(),
        tables.num_layers(),
        trees.num_inputs(),
        args.frames
    );
    println!(
        "{:>10} {:>10} {:>10} {:>11} {:>15} {:>9} {:>17} {:>14} {:>6}",
        "characters",
        "expand ms",
        "frame ms",
        "records ms",
        "records B/char",
        "changed %",
        "set_frame B/char",
        "state step ms",
        "check"
    );
    let mut failed = Vec::new();
    for &num_characters in &args.characters {
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(bound.archetype.clone());
        // Start phases spread and time scales within ±10 %, as the viewer's crowd.
        let handles = crowd.spawn_phased(kind, StartPhases::Spread { count: num_characters, seed: 7 })?;
        let scales: Vec<f32> = (0..num_characters).map(|i| 0.9 + 0.2 * ((i * 37) % 101) as f32 / 100.0).collect();
        crowd.set_time_scale(&handles, &scales)?;
        let [speed, jump, lean, wave] = ["speed", "jump", "lean", "wave"].map(|name| crowd.param(kind, name));
        let (speed, jump, lean, wave) = (speed?, jump?, lean?, wave?);
        let mut brain = Brain::new(num_characters, 7);
        // Characters stay where they are: the brain's field edge is never reached.
        let placements = vec![[0.0f32; 4]; num_characters];
        let options = GpuCrowdOptions { layout: args.layout, ..Default::default() };
        let mut gpu_crowd =
            GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &bound.clips, &bound.layers, options)?;
        gpu_crowd.set_expansion(tables, trees)?;
        // One frame's gameplay and state step; returns the step's seconds.
        let mut step = |crowd: &mut Crowd| -> Result<f64, Box<dyn std::error::Error>> {
            let orders = brain.think(DT_S, &placements, f32::MAX);
            crowd.float_column_mut(kind, speed)?.copy_from_slice(&brain.speed_mps);
            crowd.float_column_mut(kind, lean)?.copy_from_slice(&brain.lean);
            crowd.float_column_mut(kind, wave)?.copy_from_slice(&brain.wave);
            let jumpers: Vec<_> = orders.jump.iter().map(|&i| handles[i]).collect();
            crowd.set_trigger(jump, &jumpers, false)?;
            let start = Instant::now();
            crowd.update(DT_S)?;
            Ok(start.elapsed().as_secs_f64())
        };
        step(&mut crowd)?;
        let upload = |crowd: &Crowd, gpu_crowd: &mut GpuCrowd| {
            gpu_crowd.set_frame_records(&crowd.record_frame(kind)?, DT_S)?;
            Ok::<_, Box<dyn std::error::Error>>(())
        };
        if let Err(e) = upload(&crowd, &mut gpu_crowd) {
            println!("{num_characters:>10} skipped: {e}");
            continue;
        }
        // A run to warm caches, pipelines and clocks, then the timed one; each frame a state
        // step, its records uploaded and the crowd's passes after an empty timestamped one.
        let (mut expand, mut frame, mut whole, mut bytes, mut step_s) = (Vec::new(), Vec::new(), Vec::new(), 0u64, 0.0);
        // The characters whose records or inputs changed since the frame before: what an
        // upload of changed characters alone would send.
        let layers = tables.num_layers();
        let num_inputs = trees.num_inputs();
        let (mut last_records, mut last_inputs) = (crowd.records(kind)?.to_vec(), crowd.blend_inputs(kind)?.to_vec());
        let mut changed = 0usize;
        for _ in 0..2 {
            step_s = 0.0;
            bytes = 0;
            changed = 0;
            let pairs = timer.map_or(args.frames, |t| args.frames.min((t.capacity / 2) as usize)).max(1);
            let start = Instant::now();
            for k in 0..pairs {
                step_s += step(&mut crowd)?;
                upload(&crowd, &mut gpu_crowd)?;
                bytes += gpu_crowd.record_bytes_uploaded();
                let (records, inputs) = (crowd.records(kind)?, crowd.blend_inputs(kind)?);
                changed += (0..num_characters)
                    .filter(|&c| {
                        let r = c * layers..(c + 1) * layers;
                        let i = c * num_inputs..(c + 1) * num_inputs;
                        records[r.clone()] != last_records[r] || inputs[i.clone()] != last_inputs[i]
                    })
                    .count();
                last_records.copy_from_slice(records);
                last_inputs.copy_from_slice(inputs);
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                match timer {
                    Some(t) => {
                        let first = 4 * k as u32;
                        drop(encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some("bench_gpu.mark"),
                            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                                query_set: &t.queries,
                                beginning_of_pass_write_index: Some(first),
                                end_of_pass_write_index: Some(first + 1),
                            }),
                        }));
                        gpu_crowd.encode_timed(&mut encoder, &t.queries, first + 2);
                    }
                    None => gpu_crowd.encode(&mut encoder),
                }
                gpu.queue.submit([encoder.finish()]);
                throng::profile::frame_mark();
            }
            let ms = |ns: f64| Duration::from_nanos(ns as u64);
            (expand, frame, whole) = match timer {
                Some(t) => {
                    let ticks = t.ticks(gpu, 2 * pairs as u32)?;
                    let frames = ticks.chunks_exact(4);
                    t.tracy.borrow_mut().send_ticks(
                        frames.clone().flat_map(|q| [("throng.expand", q[1], q[2]), ("throng.frame", q[2], q[3])]),
                    );
                    let expand = frames.clone().map(|q| ms(t.ns(q[1], q[2]))).collect();
                    let frame = frames.clone().map(|q| ms(t.ns(q[2], q[3]))).collect();
                    (expand, frame, frames.map(|q| ms(t.ns(q[1], q[3]))).collect())
                }
                None => {
                    gpu.device.poll(wgpu::PollType::wait_indefinitely())?;
                    (Vec::new(), Vec::new(), vec![start.elapsed() / pairs as u32])
                }
            };
            bytes /= pairs as u64;
            changed /= pairs;
            step_s /= pairs as f64;
        }
        // What `set_frame` would have sent for the same frame: every program and sample slot.
        let (programs, samples) = (crowd.programs(kind)?, crowd.samples(kind)?);
        let set_frame = size_of_val(programs) + size_of_val(samples);
        // The device's expansion of the last frame against the CPU's (`Crowd::programs`).
        let check = expansion_difference(&bound.clips, tables.num_layers(), (programs, samples), &gpu_crowd)?;
        if let Some(why) = &check {
            failed.push(format!("{num_characters} characters: {why}"));
        }
        let cell = |times: &mut Vec<Duration>| {
            if times.is_empty() { "-".to_owned() } else { format!("{:.4}", median(times).as_secs_f64() * 1e3) }
        };
        println!(
            "{:>10} {:>10} {:>10} {:>11} {:>15.1} {:>9.1} {:>17.1} {:>14.3} {:>6}",
            num_characters,
            cell(&mut expand),
            cell(&mut frame),
            cell(&mut whole),
            bytes as f64 / num_characters as f64,
            100.0 * changed as f64 / num_characters as f64,
            set_frame as f64 / num_characters as f64,
            step_s * 1e3,
            if check.is_none() { "pass" } else { "FAIL" }
        );
    }
    println!(
        "expand ms: the expand pass and the barrier before the frame pass (timestamps: an empty pass's end to the frame pass's start); records ms: both; without timestamp queries only records ms, the wall clock of the run over its frames"
    );
    println!(
        "records B/char: records and blend inputs uploaded (GpuCrowd::record_bytes_uploaded), a frame's mean, beside the {} bytes a frame of the expand uniform with the clock; changed %: the characters whose records or inputs changed since the frame before, a frame's mean (what an upload of changed characters alone would send); set_frame B/char: the programs and sample slots set_frame sends for the same frame",
        size_of::<throng::gpu::ExpandParams>()
    );
    println!(
        "check: the device's expansion of the last frame (GpuCrowd::read_expanded_blocking) against the CPU's (Crowd::programs): programs equal, samples' clips equal, times (modulo the clip, either side of a wrap), weights and advances within 1e-6"
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("the device's expansion differs from the CPU's: {}", failed.join("; ")).into())
    }
}

/// Where the device's expansion of the crowd's last records frame differs from the CPU's
/// `expected` (programs and samples), as `tests/gpu_expand.rs` holds them: programs equal,
/// each sample's clip equal, its time within 1e-6 modulo the clip's duration, weight and
/// advance within 1e-6 (NaN never close); `None` when nowhere.
fn expansion_difference(
    clips: &[Clip],
    layers: usize,
    expected: (&[LayerProgram], &[ClipSample]),
    gpu_crowd: &GpuCrowd,
) -> Result<Option<String>, throng::gpu::GpuError> {
    let (programs, samples) = gpu_crowd.read_expanded_blocking()?;
    if programs.len() != expected.0.len() {
        return Ok(Some(format!("{} programs, {} expected", programs.len(), expected.0.len())));
    }
    for (i, (e, g)) in expected.0.iter().zip(&programs).enumerate() {
        let at = format!("character {} layer {}", i / layers.max(1), i % layers.max(1));
        if e != g {
            return Ok(Some(format!("{at}: program {g:?}, expected {e:?}")));
        }
        for k in e.sample_range() {
            let (es, gs) = (expected.1.get(k as usize), samples.get(k as usize));
            let (Some(es), Some(gs)) = (es, gs) else {
                return Ok(Some(format!("{at}: no sample {k}")));
            };
            let duration = clips.get(es.clip as usize).map_or(0.0, Clip::duration_s);
            let d = (es.time_s - gs.time_s).abs();
            let close = es.clip == gs.clip
                && d.min((d - duration).abs()) <= 1e-6
                && (es.weight - gs.weight).abs() <= 1e-6
                && (es.advance_s - gs.advance_s).abs() <= 1e-6;
            if !close {
                return Ok(Some(format!("{at}: sample {k} {gs:?}, expected {es:?}")));
            }
        }
    }
    Ok(None)
}
