//! Scale: crowds of the built-in character (64 joints, the demo graph's base, lean and wave
//! layers) from a thousand to a million, each stepped on the CPU and evaluated on the GPU and/or
//! the CPU. Prints, per crowd size, the bytes each character costs (CPU state by part, the
//! evaluators' memory and output), the median time of each part of the frame, and the
//! process's peak memory (VmHWM); `--plot` draws throughput against crowd size.
//!
//! ```text
//! cargo run --release --example scale -- --sizes 1000,10000,100000,1000000 --frames 5 \
//!     [--eval gpu|cpu|both] [--lod off|mix|both] [--mat4] [--plot docs/scale.png]
//! ```
//!
//! `--lod mix` gives the crowd animation LOD's update rates as a camera in the crowd would by
//! distance, interleaved over the crowd: 10 % every frame, 20 % every 2nd, 30 % every 4th and
//! 40 % every 8th (a third of the crowd evaluated per frame); both evaluators then evaluate
//! only the due characters (`docs/lod.md`). `both` times each size without and with it.
//!
//! The output is affine 3×4 unless `--mat4`: a million characters' matrices are 3.1 GB as
//! affine, 4.1 GB as mat4. Each size runs the GPU and then the CPU evaluator, never both at
//! once, so that a million characters fit in 24 GiB even where the GPU's memory is the host's
//! (lavapipe).

use std::sync::Arc;
use std::time::Instant;

use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions};
use throng::graph::CompiledGraph;
use throng::plot::{Painter, Raster, Rgb};
use throng::program::OutputLayout;
use throng::setup::BoundArchetype;
use throng::state::{ArchetypeId, CharacterHandle, Crowd};

type Error = Box<dyn std::error::Error>;

const DT_S: f32 = 1.0 / 60.0;
/// Updates run before timing starts, so that characters are spread over walking, running,
/// jumping and the transitions between (the first jumps fire at 0.5 s).
const SETTLE_FRAMES: usize = 45;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Eval {
    Gpu,
    Cpu,
    Both,
}

struct Args {
    sizes: Vec<usize>,
    frames: usize,
    eval: Eval,
    /// The LOD settings to time each size with: off, the mix, or both in turn.
    lods: Vec<bool>,
    layout: OutputLayout,
    plot: Option<std::path::PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sizes: vec![1_000, 10_000, 100_000],
        frames: 5,
        eval: Eval::Both,
        lods: vec![false],
        layout: OutputLayout::Affine3x4,
        plot: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--sizes" => {
                args.sizes = value("--sizes")?
                    .split(',')
                    .map(|s| s.trim().parse::<usize>().map_err(|_| format!("--sizes: {s:?} is not a whole number")))
                    .collect::<Result<_, _>>()?;
            }
            "--frames" => {
                args.frames = value("--frames")?.parse().map_err(|_| "--frames needs a whole number".to_owned())?
            }
            "--eval" => {
                args.eval = match value("--eval")?.as_str() {
                    "gpu" => Eval::Gpu,
                    "cpu" => Eval::Cpu,
                    "both" => Eval::Both,
                    other => return Err(format!("--eval {other:?}: use gpu, cpu or both")),
                }
            }
            "--lod" => {
                args.lods = match value("--lod")?.as_str() {
                    "off" => vec![false],
                    "mix" => vec![true],
                    "both" => vec![false, true],
                    other => return Err(format!("--lod {other:?}: use off, mix or both")),
                }
            }
            "--mat4" => args.layout = OutputLayout::Mat4,
            "--plot" => args.plot = Some(value("--plot")?.into()),
            other => {
                return Err(format!(
                    "unknown argument {other:?}; use --sizes A,B,C, --frames N, --eval gpu|cpu|both, --lod off|mix|both, --mat4, --plot PATH"
                ));
            }
        }
    }
    if args.frames == 0 || args.sizes.contains(&0) {
        return Err("--frames and every size must be at least 1".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("scale: {message}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("scale: {e}");
        std::process::exit(1);
    }
}

/// A crowd of the built-in character with parameters varied per character.
struct Scene {
    crowd: Crowd,
    kind: ArchetypeId,
    handles: Vec<CharacterHandle>,
    frame: usize,
}

/// Character `i`'s update rate in the LOD mix: 10 % at 1, 20 % at 2, 30 % at 4, 40 % at 8,
/// interleaved (`7 i mod 100` walks every percentile) so that every chunk holds the mix.
fn lod_mix_rate(i: usize) -> u8 {
    match i * 7 % 100 {
        0..10 => 1,
        10..30 => 2,
        30..60 => 4,
        _ => 8,
    }
}

impl Scene {
    fn new(bound: &BoundArchetype, n: usize, lod: bool) -> Result<Self, Error> {
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(bound.archetype.clone());
        let handles = (0..n).map(|_| crowd.spawn(kind)).collect::<Result<Vec<_>, _>>()?;
        // Speeds spread from standing to running (golden-ratio steps, so neighbours differ);
        // a third lean and a fifth wave, each at a weight of its own.
        let spread = |i: usize, k: f32| (i as f32 * k).fract();
        let speeds: Vec<f32> = (0..n).map(|i| 4.0 * spread(i, 0.618_034)).collect();
        let leans: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { spread(i, 0.414_214) } else { 0.0 }).collect();
        let waves: Vec<f32> = (0..n).map(|i| if i % 5 == 0 { 0.3 + 0.7 * spread(i, 0.732_051) } else { 0.0 }).collect();
        for (name, values) in [("speed", speeds), ("lean", leans), ("wave", waves)] {
            let param = crowd.param(kind, name)?;
            crowd.set_float(param, &handles, &values)?;
        }
        if lod {
            let rates: Vec<u8> = (0..n).map(lod_mix_rate).collect();
            crowd.set_update_rate(&handles, &rates)?;
        }
        let mut scene = Self { crowd, kind, handles, frame: 0 };
        for _ in 0..SETTLE_FRAMES {
            scene.step()?;
        }
        Ok(scene)
    }

    /// One update; every seventh character jumps every two seconds, staggered by character.
    fn step(&mut self) -> Result<(), Error> {
        let jump = self.crowd.param(self.kind, "jump")?;
        let period = 120;
        let jumpers: Vec<CharacterHandle> = self
            .handles
            .iter()
            .enumerate()
            .filter(|&(i, _)| i % 7 == 0 && (i / 7 + self.frame) % period == 30)
            .map(|(_, &h)| h)
            .collect();
        if !jumpers.is_empty() {
            self.crowd.set_trigger(jump, &jumpers, false)?;
        }
        self.crowd.update(DT_S)?;
        self.frame += 1;
        Ok(())
    }
}

/// Median of `values` (ms); 0 for none.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => 0.5 * (values[n / 2 - 1] + values[n / 2]),
    }
}

/// `VmHWM` (peak resident memory) and `VmRSS` from `/proc/self/status`, bytes; `None` where
/// the file is missing (not Linux).
fn memory_now() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// `MemAvailable` from `/proc/meminfo`, bytes; `None` where the file is missing.
fn memory_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
}

/// Whether `bytes` more fit in the memory the system has free (with a tenth to spare); says
/// why not, and the run goes on without that part, rather than being killed halfway.
fn fits(what: &str, n: usize, bytes: u64) -> bool {
    match memory_available() {
        Some(free) if bytes > free / 10 * 9 => {
            eprintln!("  {n}: {what} skipped: needs about {:.1} GiB, {:.1} GiB available", gib(bytes), gib(free));
            false
        }
        _ => true,
    }
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Steps `scene` and evaluates it `warmup + frames` times, the first `warmup` untimed (they
/// allocate, and touch the evaluator's memory for the first time); pushes each timed step's
/// milliseconds to `steps` and returns the evaluations' median, ms.
fn time_frames(
    scene: &mut Scene,
    warmup: usize,
    frames: usize,
    steps: &mut Vec<f64>,
    mut evaluate: impl FnMut(&Scene) -> Result<(), Error>,
) -> Result<f64, Error> {
    let mut times = Vec::with_capacity(frames);
    for f in 0..warmup + frames {
        let start = Instant::now();
        scene.step()?;
        let step_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        evaluate(scene)?;
        if f >= warmup {
            steps.push(step_ms);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(median(&mut times))
}

/// One crowd size's medians, ms per frame.
struct Row {
    characters: usize,
    lod: bool,
    step_ms: f64,
    gpu_ms: Option<f64>,
    cpu_ms: Option<f64>,
}

fn run(args: &Args) -> Result<(), Error> {
    let demo = DemoCharacter::humanoid_64();
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?);
    let bound = demo.bind(graph)?;
    let joints = demo.rig.num_joints();
    let gpu = if args.eval == Eval::Cpu { None } else { Some(GpuContext::new_blocking()?) };
    let device_name = gpu.as_ref().map_or("no GPU".to_owned(), |g| g.adapter_info.name.clone());
    println!(
        "throng scale: the built-in character, {joints} joints, {} layers; CPU on {} threads",
        bound.layers.len(),
        rayon::current_num_threads()
    );
    if let Some(gpu) = &gpu {
        let info = &gpu.adapter_info;
        let limits = gpu.device.limits();
        println!(
            "  GPU: {} ({:?}); max_buffer_size {:.2} GiB, max_storage_buffer_binding_size {} MiB",
            info.name,
            info.backend,
            gib(limits.max_buffer_size),
            limits.max_storage_buffer_binding_size >> 20
        );
    }
    let layout_name = match args.layout {
        OutputLayout::Mat4 => "mat4",
        OutputLayout::Affine3x4 => "affine 3x4",
    };

    // Bytes per character, from the first size's crowd (they do not depend on the size).
    let probe = Scene::new(&bound, 1, false)?;
    let state = probe.crowd.memory_per_character(probe.kind)?;
    let needs: Vec<&str> = bound.layers.iter().map(|l| if l.needs_memory { "memory" } else { "none" }).collect();
    let cpu_memory = EvalContext::for_layers(0, &bound.layers, joints).bytes_per_character();
    let cpu_memory_all = EvalContext::new(0, bound.layers.len(), joints).bytes_per_character();
    let output_bytes = joints * args.layout.floats_per_joint() * 4;
    println!("bytes per character:");
    println!(
        "  CPU state {} = layer state {} + parameters {} + bookkeeping {} + LOD schedule {} + records {} + programs {} + samples {}",
        state.total(),
        state.layer_state,
        state.parameters,
        state.bookkeeping,
        state.update_schedule,
        state.records,
        state.programs,
        state.samples
    );
    println!("  layers' memory: {}", needs.join(", "));
    println!(
        "  CPU evaluator: memory {cpu_memory} (every layer with memory: {cpu_memory_all}), output {output_bytes} ({layout_name})"
    );
    let mut gpu_bytes = 0;
    if let Some(gpu) = &gpu {
        let crowd = GpuCrowd::with_layers(
            &gpu.device,
            &gpu.queue,
            &demo.rig,
            &bound.clips,
            &bound.layers,
            GpuCrowdOptions { layout: args.layout, ..GpuCrowdOptions::default() },
        )?;
        let all_layers = (bound.layers.len() * (32 + 128 * joints)) as u64;
        println!(
            "  GPU evaluator: memory {} (every layer with memory: {all_layers}), output {}, uploads {} (programs + samples + range)",
            crowd.memory_bytes_per_character(),
            crowd.output_bytes_per_character(),
            state.programs + state.samples + 8
        );
        // The device's buffers (host memory on lavapipe), the state, and its uploads' copies.
        gpu_bytes = crowd.memory_bytes_per_character() + crowd.output_bytes_per_character() + 2 * state.total() as u64;
    }
    let cpu_bytes = (cpu_memory + output_bytes + state.total()) as u64;
    drop(probe);

    println!("\nmedian ms per frame over {} frames ({layout_name} output); memory after each size:", args.frames);
    println!(
        "{:>10} {:>4} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "characters", "lod", "step", "gpu eval", "cpu eval", "step ns/ch", "gpu ns/ch", "cpu ns/ch"
    );
    let mut rows = Vec::new();
    for (n, lod) in args.sizes.iter().flat_map(|&n| args.lods.iter().map(move |&lod| (n, lod))) {
        // Under LOD a rate-8 character is first evaluated up to 8 updates in, and with it the
        // first touch of its memory (page faults on a fresh allocation): one whole cycle of the
        // slowest rate goes untimed, as one frame does without LOD.
        let warmup = if lod { 8 } else { 1 };
        let mut steps = Vec::new();
        let mut gpu_ms = None;
        if let Some(gpu) = gpu.as_ref().filter(|_| fits("GPU evaluation", n, n as u64 * gpu_bytes)) {
            let mut scene = Scene::new(&bound, n, lod)?;
            let options = GpuCrowdOptions { layout: args.layout, ..GpuCrowdOptions::default() };
            let mut crowd =
                GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &bound.clips, &bound.layers, options)?;
            let ms = time_frames(&mut scene, warmup, args.frames, &mut steps, |scene| {
                let (samples, programs) = (scene.crowd.samples(scene.kind)?, scene.crowd.programs(scene.kind)?);
                if lod {
                    crowd.set_frame_due(samples, programs, DT_S, scene.crowd.due(scene.kind)?)?;
                } else {
                    crowd.set_frame(samples, programs, DT_S)?;
                }
                let mut encoder =
                    gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("scale.frame") });
                crowd.encode(&mut encoder);
                gpu.queue.submit([encoder.finish()]);
                gpu.device.poll(wgpu::PollType::wait_indefinitely())?;
                Ok(())
            })?;
            eprintln!(
                "  {n}: GPU crowd in {} chunks, {} memory buffers, {} output buffers; {:.2} samples a character",
                crowd.num_chunks(),
                crowd.num_memory_buffers(),
                crowd.output_buffers().len(),
                scene.crowd.samples(scene.kind)?.len() as f64 / n as f64
            );
            gpu_ms = Some(ms);
        }
        let mut cpu_ms = None;
        if args.eval != Eval::Gpu && fits("CPU evaluation", n, n as u64 * cpu_bytes) {
            let mut scene = Scene::new(&bound, n, lod)?;
            let mut context = EvalContext::for_layers(n, &bound.layers, joints);
            let mut output = vec![0.0f32; n * joints * args.layout.floats_per_joint()];
            let mut clips_sampled = vec![0u32; n];
            let ms = time_frames(&mut scene, warmup, args.frames, &mut steps, |scene| {
                // The job, not `CrowdRuntime`: the scene's crowd is shared with the GPU path and the table
                // times evaluation alone, apart from the state step.
                let job = FrameJob {
                    rig: &demo.rig,
                    clips: &bound.clips,
                    layers: &bound.layers,
                    samples: scene.crowd.samples(scene.kind)?,
                    programs: scene.crowd.programs(scene.kind)?,
                    dt_s: DT_S,
                    context: &mut context,
                    layout: args.layout,
                    output: &mut output,
                    clips_sampled: &mut clips_sampled,
                    root_motion: &mut [],
                };
                if lod {
                    job.run_due(scene.crowd.due(scene.kind)?)?;
                } else {
                    job.run()?;
                }
                Ok(())
            })?;
            cpu_ms = Some(ms);
        }
        let row = Row { characters: n, lod, step_ms: median(&mut steps), gpu_ms, cpu_ms };
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        let ns = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.0}", v * 1e6 / n as f64));
        print!(
            "{n:>10} {:>4} {:>10.2} {:>10} {:>10} {:>12} {:>12} {:>12}",
            if lod { "mix" } else { "off" },
            row.step_ms,
            ms(row.gpu_ms),
            ms(row.cpu_ms),
            ns(Some(row.step_ms)),
            ns(row.gpu_ms),
            ns(row.cpu_ms)
        );
        match memory_now() {
            Some((peak, now)) => println!("   peak {:.2} GiB, now {:.2} GiB", gib(peak), gib(now)),
            None => println!(),
        }
        rows.push(row);
    }
    if let Some((peak, _)) = memory_now() {
        println!("process peak memory (VmHWM): {:.2} GiB", gib(peak));
    }
    if let Some(path) = &args.plot {
        let layout_note = format!("{layout_name} output, {} CPU threads, {device_name}", rayon::current_num_threads());
        plot(&rows, &layout_note, path)?;
        println!("plot: {}", path.display());
    }
    Ok(())
}

/// Draws characters per second against crowd size, both on log axes, one line per part of the
/// frame: a line that stays level scales linearly.
fn plot(rows: &[Row], note: &str, path: &std::path::Path) -> Result<(), Error> {
    const W: u32 = 720;
    const H: u32 = 440;
    let (left, right, top, bottom) = (90.0f32, 190.0f32, 40.0f32, 50.0f32);
    // Name, colour, (characters, ms per frame).
    type Series = (&'static str, Rgb, Vec<(f64, f64)>);
    let of = |lod: bool, part: fn(&Row) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter().filter(|r| r.lod == lod).filter_map(|r| Some((r.characters as f64, part(r)?))).collect()
    };
    // The state step runs every character every frame with or without LOD: one line.
    let step = if rows.iter().any(|r| !r.lod) { of(false, |r| Some(r.step_ms)) } else { of(true, |r| Some(r.step_ms)) };
    let series: [Series; 5] = [
        ("state step", [31, 119, 180], step),
        ("GPU eval", [214, 39, 40], of(false, |r| r.gpu_ms)),
        ("CPU eval", [44, 160, 44], of(false, |r| r.cpu_ms)),
        ("GPU eval, LOD mix", [240, 150, 150], of(true, |r| r.gpu_ms)),
        ("CPU eval, LOD mix", [150, 215, 140], of(true, |r| r.cpu_ms)),
    ];
    let throughput = |(n, ms): (f64, f64)| (n, n / (ms.max(1e-6) * 1e-3));
    let points: Vec<(f64, f64)> = series.iter().flat_map(|(_, _, s)| s.iter().copied().map(throughput)).collect();
    if points.is_empty() {
        return Err("nothing to plot".into());
    }
    let decade = |v: f64, up: bool| if up { v.log10().ceil() } else { v.log10().floor() };
    let (x0, x1) = (
        decade(points.iter().map(|p| p.0).fold(f64::MAX, f64::min), false),
        decade(points.iter().map(|p| p.0).fold(0.0, f64::max), true),
    );
    let (y0, y1) = (
        decade(points.iter().map(|p| p.1).fold(f64::MAX, f64::min), false),
        decade(points.iter().map(|p| p.1).fold(0.0, f64::max), true),
    );
    let (x1, y1) = (x1.max(x0 + 1.0), y1.max(y0 + 1.0));
    let (pw, ph) = (W as f32 - left - right, H as f32 - top - bottom);
    let sx = |x: f64| left + ((x.log10() - x0) / (x1 - x0)) as f32 * pw;
    let sy = |y: f64| top + ph - ((y.log10() - y0) / (y1 - y0)) as f32 * ph;
    let mut r = Raster::new(W, H, [255, 255, 255]);
    let (ink, grid) = ([30, 30, 30], [225, 225, 225]);
    r.text(left, 12.0, "throughput (characters per second) against crowd size, log-log", ink);
    r.text(left, 24.0, note, [110, 110, 110]);
    let label = |v: f64| match v as u64 {
        v if v >= 1_000_000_000 => format!("{}G", v / 1_000_000_000),
        v if v >= 1_000_000 => format!("{}M", v / 1_000_000),
        v if v >= 1_000 => format!("{}k", v / 1_000),
        v => v.to_string(),
    };
    for e in x0 as i32..=x1 as i32 {
        let x = sx(10f64.powi(e));
        r.rect(x, top, 1.0, ph, grid);
        r.text(x - 8.0, top + ph + 8.0, &label(10f64.powi(e)), ink);
    }
    for e in y0 as i32..=y1 as i32 {
        let y = sy(10f64.powi(e));
        r.rect(left, y, pw, 1.0, grid);
        r.text(left - 50.0, y - 3.0, &format!("{}/s", label(10f64.powi(e))), ink);
    }
    r.rect(left, top, 1.0, ph, ink);
    r.rect(left, top + ph, pw, 1.0, ink);
    r.text(left + pw / 2.0 - 30.0, top + ph + 26.0, "characters", ink);
    for (k, (name, colour, s)) in series.iter().enumerate() {
        let line: Vec<(f32, f32)> = s.iter().copied().map(throughput).map(|(x, y)| (sx(x), sy(y))).collect();
        if line.is_empty() {
            continue;
        }
        r.polyline(&line, *colour);
        let thicker: Vec<(f32, f32)> = line.iter().map(|&(x, y)| (x, y + 1.0)).collect();
        r.polyline(&thicker, *colour);
        for &(x, y) in &line {
            r.rect(x - 2.5, y - 2.5, 6.0, 6.0, *colour);
        }
        let ly = top + 10.0 + 18.0 * k as f32;
        r.rect(left + pw + 16.0, ly, 14.0, 6.0, *colour);
        r.text(left + pw + 36.0, ly - 1.0, name, ink);
    }
    let image = image::RgbImage::from_raw(W, H, r.pixels().to_vec()).ok_or("raster size")?;
    image.save(path)?;
    Ok(())
}
