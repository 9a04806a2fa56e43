//! The crowd viewer: thousands of characters animated by throng (state step on the CPU, pose
//! evaluation on the GPU) drawn as instanced skinned meshes whose vertex shader reads throng's
//! output buffer directly. A window with an orbit camera, or `--headless` to render offscreen
//! and write a PNG. See `examples/viewer/README.md`.
//!
//! ```text
//! cargo run --release --example viewer
//! cargo run --release --example viewer -- --headless --frames 120 --out crowd.png
//! ```

mod brain;
mod camera;
mod graph_view;
mod ground;
mod lab;
mod pick;
mod render;
mod scene;
mod timeline;
mod transitions;
mod window;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ground::{Choice, Ground, Look};
use lab::{CrowdFigures, Lab};
use render::{FrameTimes, Offscreen, Renderer};
use scene::{Hand, MODES, Model, Scene, StepTimes, TimingEdit};
use throng::graph::ParamValue;
use throng::program::OutputLayout;

const USAGE: &str = "usage: viewer [--headless] [--frames N] [--characters N] [--out PATH] [--out-every K]
              [--size WxH] [--cpu] [--gltf PATH | --graph FILE] [--mode cut|frozen|crossfade|inertialize]
              [--probe] [--background-only] [--seed N] [--layout affine|mat4]
              [--no-lod] [--inspect N] [--script TRACE.json] [--heat LAYER] [--paused]
              [--edit T=SECONDS]... [--reset T]... (headless: the lab's transition editor)
              [--drive all|I,J,..] [--hold NAME=VALUE]... (headless: the lab's hand)
              [--ground flat|slope|steps] [--ik on|off] [--look off|point|camera] [--feet]";

/// Command-line options.
#[derive(Clone, Debug)]
pub struct Args {
    /// Render offscreen, no window.
    pub headless: bool,
    /// Frames to run before exiting; `None` runs until the window closes.
    pub frames: Option<u64>,
    /// Characters in the crowd.
    pub characters: usize,
    /// Where `--headless` writes the last frame.
    pub out: PathBuf,
    /// Also write every K-th frame as `<stem>_<frame>.png` beside `out`.
    pub out_every: Option<u64>,
    /// Render target size, pixels.
    pub width: u32,
    /// Render target height, pixels.
    pub height: u32,
    /// Evaluate on the CPU (`FrameJob`) and upload the matrices.
    pub cpu: bool,
    /// Draw this skinned glTF instead of the built-in character.
    pub gltf: Option<PathBuf>,
    /// A PlayCanvas state graph for the built-in character, its leaves bound by clip name.
    pub graph: Option<PathBuf>,
    /// Index into [`MODES`].
    pub mode: usize,
    /// Print where character 0's trunk joints land on screen, from throng's matrices.
    pub probe: bool,
    /// Draw the scene without its characters: the reference background image comparisons
    /// (the tests) subtract.
    pub background_only: bool,
    /// The brain's random seed.
    pub seed: u64,
    /// How the evaluator writes the skinning matrices the vertex shader reads: affine 3×4 (the
    /// default, 48 bytes a joint) or mat4 (64).
    pub layout: OutputLayout,
    /// Animation LOD: evaluation rates by distance from the camera (`--no-lod` turns it off).
    pub lod: bool,
    /// Open the lab's panels for this character (headless: drawn into the PNG).
    pub inspect: Option<usize>,
    /// A `throng-trace` script whose parameter values drive the inspected character, frame by
    /// frame with the script's steps (headless).
    pub script: Option<PathBuf>,
    /// Start paused: every step is 0 s (space resumes a window).
    pub paused: bool,
    /// With `--inspect`: colour the inspected character by this layer's mask.
    pub heat: Option<String>,
    /// Headless: the lab's transition edits, in order, before the first frame: transition `T`
    /// (an index into the graph's transitions) given a blend time, or (`None`) reset to the
    /// file's timing.
    pub edits: Vec<(usize, Option<f32>)>,
    /// Headless: the characters the lab's hand drives from the first frame (`None`: all of
    /// them), with [`Args::holds`].
    pub drive: Option<Option<Vec<usize>>>,
    /// Headless: the parameters the hand holds, by name, and their values as given
    /// (`true`/`false` for booleans, `fire` for a trigger).
    pub holds: Vec<(String, String)>,
    /// The ground's shape.
    pub ground: Ground,
    /// Feet on the ground (the procedural stage's ground part).
    pub ik: bool,
    /// Where heads look.
    pub look: Look,
    /// Headless: print each character's soles' height above the ground after the last frame.
    pub feet: bool,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        headless: false,
        frames: None,
        characters: 10_000,
        out: PathBuf::from("crowd.png"),
        out_every: None,
        width: 1280,
        height: 720,
        cpu: false,
        gltf: None,
        graph: None,
        mode: MODES.len() - 1,
        probe: false,
        background_only: false,
        seed: 1,
        layout: OutputLayout::Affine3x4,
        lod: true,
        inspect: None,
        script: None,
        paused: false,
        heat: None,
        edits: Vec::new(),
        drive: None,
        holds: Vec::new(),
        ground: Ground::Flat,
        ik: false,
        look: Look::Off,
        feet: false,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let number =
            |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name} needs a whole number, got {v:?}"));
        match flag.as_str() {
            "--headless" => a.headless = true,
            "--cpu" => a.cpu = true,
            "--probe" => a.probe = true,
            "--background-only" => a.background_only = true,
            "--no-lod" => a.lod = false,
            "--paused" => a.paused = true,
            "--feet" => a.feet = true,
            "--ground" => {
                let v = value("--ground")?;
                a.ground = Ground::from_name(&v).ok_or(format!("--ground {v:?}: one of flat, slope, steps"))?;
            }
            "--ik" => {
                a.ik = match value("--ik")?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--ik {other:?}: on or off")),
                };
            }
            "--look" => {
                let v = value("--look")?;
                a.look = Look::from_name(&v).ok_or(format!("--look {v:?}: one of off, point, camera"))?;
            }
            "--frames" => a.frames = Some(number("--frames", value("--frames")?)?),
            "--characters" => a.characters = number("--characters", value("--characters")?)? as usize,
            "--out" => a.out = PathBuf::from(value("--out")?),
            "--out-every" => a.out_every = Some(number("--out-every", value("--out-every")?)?.max(1)),
            "--seed" => a.seed = number("--seed", value("--seed")?)?,
            "--gltf" => a.gltf = Some(PathBuf::from(value("--gltf")?)),
            "--graph" => a.graph = Some(PathBuf::from(value("--graph")?)),
            "--inspect" => a.inspect = Some(number("--inspect", value("--inspect")?)? as usize),
            "--script" => a.script = Some(PathBuf::from(value("--script")?)),
            "--heat" => a.heat = Some(value("--heat")?),
            "--edit" => {
                let v = value("--edit")?;
                let (t, s) = v.split_once('=').ok_or(format!("--edit needs T=SECONDS, got {v:?}"))?;
                let seconds = s.parse::<f32>().map_err(|_| format!("--edit {v:?}: SECONDS is not a number"))?;
                a.edits.push((number("--edit", t.to_owned())? as usize, Some(seconds)));
            }
            "--reset" => a.edits.push((number("--reset", value("--reset")?)? as usize, None)),
            "--drive" => {
                let v = value("--drive")?;
                a.drive = Some(if v == "all" {
                    None
                } else {
                    Some(
                        v.split(',')
                            .map(|i| number("--drive", i.to_owned()).map(|i| i as usize))
                            .collect::<Result<_, _>>()?,
                    )
                });
            }
            "--hold" => {
                let v = value("--hold")?;
                let (name, x) = v.split_once('=').ok_or(format!("--hold needs NAME=VALUE, got {v:?}"))?;
                a.holds.push((name.to_owned(), x.to_owned()));
            }
            "--size" => {
                let v = value("--size")?;
                let (w, h) = v.split_once('x').ok_or(format!("--size needs WxH, got {v:?}"))?;
                a.width = number("--size", w.to_owned())?.clamp(16, 8192) as u32;
                a.height = number("--size", h.to_owned())?.clamp(16, 8192) as u32;
            }
            "--mode" => {
                let v = value("--mode")?;
                a.mode = MODES
                    .iter()
                    .position(|m| m.0 == v)
                    .ok_or(format!("--mode {v:?}: one of cut, frozen, crossfade, inertialize"))?;
            }
            "--layout" => {
                a.layout = match value("--layout")?.as_str() {
                    "affine" => OutputLayout::Affine3x4,
                    "mat4" => OutputLayout::Mat4,
                    other => return Err(format!("--layout {other:?}: one of affine, mat4")),
                };
            }
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.script.is_some() && (a.inspect.is_none() || !a.headless || a.frames.is_some()) {
        return Err("--script drives the inspected character of a headless run for the script's frames: give --headless and --inspect N, not --frames".into());
    }
    if a.heat.is_some() && a.inspect.is_none() {
        return Err("--heat colours the inspected character: give --inspect N".into());
    }
    if !a.edits.is_empty() && !a.headless {
        return Err(
            "--edit and --reset are the headless transition editor: give --headless (a window edits in the lab)".into(),
        );
    }
    if (a.drive.is_some() || !a.holds.is_empty()) && (!a.headless || a.script.is_some() || a.drive.is_none()) {
        return Err("--drive and --hold are the lab's hand, headless: give --headless, --drive with --hold (not --script, whose values drive its character)".into());
    }
    if let (Some(Some(list)), Some(i)) = (&a.drive, a.inspect)
        && !list.contains(&i)
    {
        return Err(format!("--drive: the inspected character {i} is driven with the others: list it"));
    }
    if a.feet && !a.headless {
        return Err("--feet prints the soles' heights at the end of a headless run: give --headless".into());
    }
    if a.gltf.is_some() && a.graph.is_some() {
        return Err("--graph is a graph for the built-in character; --gltf brings its own: give one".into());
    }
    if let Some(i) = a.inspect
        && i >= a.characters
    {
        return Err(format!("--inspect {i}: the crowd has {} characters", a.characters));
    }
    Ok(a)
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("viewer: {message}");
            std::process::exit(2);
        }
    };
    // The global pool every rayon call in the viewer and in throng runs on, one worker per
    // core, named `throng-worker-N` for Tracy; the main thread sleeps while they work.
    if let Err(e) = throng::profile::worker_pool().build_global() {
        eprintln!("viewer: rayon's pool: {e}");
        std::process::exit(1);
    }
    let result = if args.headless { run_headless(&args) } else { window::run(&args) };
    if let Err(message) = result {
        eprintln!("viewer: {message}");
        std::process::exit(1);
    }
}

/// The model and crowd the options ask for.
pub fn build_scene(args: &Args) -> Result<Scene, String> {
    let model = match (&args.gltf, &args.graph) {
        (Some(path), _) => Model::gltf(path)?,
        (None, Some(path)) => Model::demo_graph(path)?,
        (None, None) => Model::demo()?,
    };
    // A replayed script's character starts in step and at time scale 1, as throng-trace's.
    let mut scene = Scene::new(model, args.characters, args.mode, args.seed, args.script.is_none())?;
    scene.set_lod(args.lod);
    scene.set_ground(args.ground);
    scene.set_procedural(args.ik, args.look)?;
    if args.feet && !scene.has_procedural() {
        return Err("--feet: this character has no feet on the ground to measure (the built-in humanoid has)".into());
    }
    Ok(scene)
}

/// Counts wgpu errors reported outside error scopes (validation, out of memory), printing
/// each, so that a run that hit one exits non-zero instead of panicking mid-frame.
pub fn watch_errors(device: &wgpu::Device) -> Arc<AtomicBool> {
    let failed = Arc::new(AtomicBool::new(false));
    let flag = failed.clone();
    device.on_uncaptured_error(Arc::new(move |e| {
        eprintln!("viewer: wgpu error: {e}");
        flag.store(true, Ordering::SeqCst);
    }));
    failed
}

/// Sums of per-frame costs; the first frame (pipeline creation, first uploads) is left out of
/// the means.
#[derive(Default)]
pub struct Stats {
    frames: u64,
    wall_ms: f64,
    step: StepTimes,
    eval_ms: f64,
    draw_ms: f64,
    eval_gpu_ms: f64,
    draw_gpu_ms: f64,
    timestamped: u64,
    clips: u64,
    uploaded: u64,
}

/// What a frame's evaluation took in: the CPU evaluator's clips sampled (`--cpu`), or the
/// bytes of state records and blend inputs the GPU evaluator uploaded.
#[derive(Clone, Copy, Debug)]
pub enum Intake {
    /// Clips the CPU evaluator sampled.
    Clips(usize),
    /// Bytes of records and inputs the GPU evaluator uploaded.
    RecordBytes(u64),
}

impl Intake {
    /// The frame's, from the renderer's evaluator (the scene's clips counted only for the CPU
    /// one: counting them expands the crowd's programs on the CPU).
    pub fn of(renderer: &Renderer, scene: &Scene) -> Self {
        renderer.records_uploaded().map_or_else(|| Self::Clips(scene.clips_sampled()), Self::RecordBytes)
    }
}

/// Means of one [`Stats`], milliseconds unless named otherwise.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    /// Frames per second.
    pub fps: f64,
    /// The active crowd's state step.
    pub state_ms: f64,
    /// The evaluation, wall clock (GPU, or CPU with `--cpu`).
    pub eval_ms: f64,
    /// The draw, wall clock.
    pub draw_ms: f64,
    /// Clips sampled per frame (the CPU evaluator's).
    pub clips: f64,
    /// Bytes of state records and blend inputs uploaded per frame (the GPU evaluator's).
    pub uploaded: f64,
    /// GPU timestamps of the evaluation, where the adapter has them.
    pub eval_gpu_ms: Option<f64>,
    /// GPU timestamps of the draw, where the adapter has them.
    pub draw_gpu_ms: Option<f64>,
}

impl Stats {
    /// Adds one frame: with the clips the CPU evaluator sampled, or the bytes of records the
    /// GPU evaluator uploaded ([`Intake`]).
    pub fn add(&mut self, wall_ms: f64, step: StepTimes, cpu_eval_ms: Option<f64>, times: FrameTimes, intake: Intake) {
        self.frames += 1;
        self.wall_ms += wall_ms;
        self.step.state_ms += step.state_ms;
        self.step.other_modes_ms += step.other_modes_ms;
        self.step.brain_ms += step.brain_ms;
        self.eval_ms += cpu_eval_ms.or(times.eval_wall_ms).unwrap_or(0.0);
        self.draw_ms += times.draw_wall_ms;
        if let Some(draw) = times.draw_gpu_ms {
            self.timestamped += 1;
            self.draw_gpu_ms += draw;
            self.eval_gpu_ms += times.eval_gpu_ms.unwrap_or(0.0);
        }
        match intake {
            Intake::Clips(clips) => self.clips += clips as u64,
            Intake::RecordBytes(bytes) => self.uploaded += bytes,
        }
    }

    /// The means the lab's crowd panel shows.
    pub fn split(&self) -> Split {
        let n = self.frames;
        Split {
            fps: if self.wall_ms > 0.0 { 1e3 * n as f64 / self.wall_ms } else { 0.0 },
            state_ms: Self::mean(self.step.state_ms, n),
            eval_ms: Self::mean(self.eval_ms, n),
            draw_ms: Self::mean(self.draw_ms, n),
            clips: Self::mean(self.clips as f64, n),
            uploaded: Self::mean(self.uploaded as f64, n),
            eval_gpu_ms: (self.timestamped > 0 && self.eval_gpu_ms > 0.0)
                .then(|| Self::mean(self.eval_gpu_ms, self.timestamped)),
            draw_gpu_ms: (self.timestamped > 0).then(|| Self::mean(self.draw_gpu_ms, self.timestamped)),
        }
    }

    fn mean(sum: f64, n: u64) -> f64 {
        if n == 0 { 0.0 } else { sum / n as f64 }
    }

    /// One line: fps and the frame split (wall clock), means over the frames added.
    pub fn line(&self, characters: usize, cpu: bool) -> String {
        let n = self.frames;
        let intake = if cpu {
            format!("clips sampled {:.0}/frame", Self::mean(self.clips as f64, n))
        } else {
            let bytes = Self::mean(self.uploaded as f64, n);
            format!("records uploaded {bytes:.0} B/frame, {:.1} B/character", bytes / characters.max(1) as f64)
        };
        format!(
            "{:.1} fps | {characters} characters | state step {:.2} ms | {} evaluation {:.2} ms | draw {:.2} ms | {intake}",
            if self.wall_ms > 0.0 { 1e3 * n as f64 / self.wall_ms } else { 0.0 },
            Self::mean(self.step.state_ms, n),
            if cpu { "CPU" } else { "GPU" },
            Self::mean(self.eval_ms, n),
            Self::mean(self.draw_ms, n),
        )
    }

    /// The full report printed at exit.
    pub fn report(&self, characters: usize, cpu: bool) -> String {
        let n = self.frames;
        let timestamps = match (self.timestamped > 0, cpu) {
            (false, _) => "no GPU timestamps".to_owned(),
            (true, true) => format!("GPU timestamps: draw {:.2} ms", Self::mean(self.draw_gpu_ms, self.timestamped)),
            (true, false) => format!(
                "GPU timestamps: evaluation {:.2} ms, draw {:.2} ms",
                Self::mean(self.eval_gpu_ms, self.timestamped),
                Self::mean(self.draw_gpu_ms, self.timestamped)
            ),
        };
        format!(
            "{}\n  frame {:.2} ms wall | brain + root motion {:.2} ms | other switch modes' state steps {:.2} ms | {timestamps} | frames measured {n}",
            self.line(characters, cpu),
            Self::mean(self.wall_ms, n),
            Self::mean(self.step.brain_ms, n),
            Self::mean(self.step.other_modes_ms, n),
        )
    }
}

fn run_headless(args: &Args) -> Result<(), String> {
    let gpu = throng::gpu::GpuContext::new_blocking().map_err(|e| e.to_string())?;
    let failed = watch_errors(&gpu.device);
    let mut scene = build_scene(args)?;
    let mut renderer = Renderer::new(&gpu.device, &gpu.queue, &scene, render::COLOR_FORMAT, args.cpu, args.layout)?;
    renderer.background_only = args.background_only;
    renderer.highlight = args.inspect;
    let target = Offscreen::new(&gpu.device, args.width, args.height);
    let camera = camera::Orbit::framing(&scene);
    let aspect = args.width as f32 / args.height as f32;
    let size = (args.width, args.height);
    let replay = args.script.as_deref().map(|path| Replay::load(path, &scene)).transpose()?;
    let frames = replay.as_ref().map_or(args.frames.unwrap_or(120).max(1), |r| r.dts_s.len() as u64);
    let mut lab = args.inspect.map(|i| Lab::new(&gpu.device, render::COLOR_FORMAT, true, Some(i)));
    if let (Some(lab), Some(name)) = (&mut lab, &args.heat) {
        let layer =
            scene.graph().layer_index(name).ok_or_else(|| format!("--heat {name:?}: the graph has no such layer"))?;
        lab.heat_layer = Some(layer);
        // What the heat shows, joint by joint, for the tests: `heat <joint> <weight>`.
        for (joint, w) in scene.model.rig.names().iter().zip(lab.heat(&scene).unwrap_or_default()) {
            println!("heat\t{joint}\t{w}");
        }
    }
    println!(
        "viewer: {} characters × {} joints, {frames} frames, {} evaluation ({:?} matrices) on {} ({:?}), switch mode {}, timestamps {}, ground {}, IK {}, look {}",
        scene.num_characters(),
        scene.model.rig.num_joints(),
        if args.cpu { "CPU" } else { "GPU" },
        args.layout,
        gpu.adapter_info.name,
        gpu.adapter_info.backend,
        scene.mode().1,
        if renderer.has_timestamps() { "on" } else { "off" },
        scene.ground().name(),
        if scene.ik() { "on" } else { "off" },
        scene.look().name(),
    );
    // What did not fit the character in a --graph file, before anything runs.
    for problem in &scene.model.problems {
        println!("problem\t{problem}");
    }
    // The lab's transition editor, as its widgets call it; then every mode's timings, for the
    // tests: `transition <mode> <index> <timing>`.
    for &(t, seconds) in &args.edits {
        scene.edit_transition(t, seconds.map_or(TimingEdit::Reset, TimingEdit::Duration))?;
    }
    if !args.edits.is_empty() {
        for (mode, t, timing) in scene.transition_timings() {
            println!("transition\t{mode}\t{t}\t{timing:?}");
        }
    }
    // The lab's hand, as its panel takes it: on the listed characters or the whole crowd.
    if let Some(drive) = &args.drive {
        let characters = drive.clone().unwrap_or_else(|| (0..scene.num_characters()).collect());
        if let Some(lab) = &mut lab {
            lab.whole_crowd = drive.is_none();
            lab.selection = characters.clone();
        }
        scene.set_hand(Some(Hand::new(characters, held_values(&scene, &args.holds)?)))?;
    }
    let mut stats = Stats::default();
    let mut evaluated = 0;
    let start = Instant::now();
    let mut t_s = 0.0f64;
    scene.set_eye(camera.eye());
    for frame in 1..=frames {
        let frame_start = Instant::now();
        let index = (frame - 1) as usize;
        let fixed_s = if args.paused { 0.0 } else { 1.0 / 60.0 };
        let dt_s = replay.as_ref().and_then(|r| r.dts_s.get(index)).copied().unwrap_or(fixed_s);
        if let (Some(replay), Some(character)) = (&replay, args.inspect) {
            let values = replay.values.get(index).cloned().unwrap_or_default();
            scene.set_hand(Some(Hand::new(vec![character], values)))?;
        }
        let step = scene.step(dt_s)?;
        t_s += f64::from(dt_s);
        evaluated += scene.evaluated();
        if let Some(lab) = &mut lab {
            let figures = CrowdFigures { stats: &stats, cpu: args.cpu };
            lab.frame(&gpu.device, &gpu.queue, Lab::headless_input(size, t_s), &mut scene, &figures, size)?;
        }
        renderer.heat = lab.as_ref().and_then(|lab| lab.heat(&scene));
        let cpu_ms = renderer.render(
            &gpu.device,
            &gpu.queue,
            &mut scene,
            dt_s,
            &target.view,
            size,
            camera.view_proj(aspect),
            camera.eye(),
            lab.as_ref(),
        )?;
        let times = renderer.read_times(&gpu.device)?;
        throng::profile::frame_mark();
        if frame > 1 {
            stats.add(frame_start.elapsed().as_secs_f64() * 1e3, step, cpu_ms, times, Intake::of(&renderer, &scene));
        }
        if args.out_every.is_some_and(|k| frame % k == 0) {
            target.save_png(&gpu.device, &gpu.queue, &numbered(&args.out, frame))?;
        }
        if let Some(i) = args.inspect {
            for line in scene.trace_lines(i, index, t_s)? {
                println!("trace {}", line.to_json());
            }
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    target.save_png(&gpu.device, &gpu.queue, &args.out)?;
    println!("{}", stats.report(scene.num_characters(), args.cpu));
    println!(
        "  {}; {:.0} characters evaluated per frame on average",
        scene.lod_line(),
        evaluated as f64 / frames as f64
    );
    println!("  {frames} frames in {elapsed_s:.2} s; wrote {}", args.out.display());
    if args.probe {
        probe(&renderer, &scene, &camera, (args.width, args.height))?;
    }
    // With --feet, how far each sole stands above the ground in the last frame, for the tests:
    // `foot <character> <foot> <metres>` (feet in the setup's order: left, right); with heads
    // looking somewhere, how far each head's forward axis is from it: `look <character> <degrees>`.
    if args.feet {
        let matrices = renderer.read_matrices()?;
        for (i, pair) in scene.foot_clearances(&matrices).iter().enumerate() {
            for (f, metres) in pair.iter().enumerate() {
                println!("foot\t{i}\t{f}\t{metres:.6}");
            }
        }
        for (i, degrees) in scene.look_angles_deg(&matrices).iter().enumerate() {
            println!("look\t{i}\t{degrees:.4}");
        }
    }
    // Where the lab laid out its panels and the active states' labels in the last frame, for
    // tests and docs: `lab <what> <text> <left> <top> <right> <bottom>`, tab-separated, pixels.
    for l in lab.iter().flat_map(|lab| &lab.laid_out) {
        let r = l.rect;
        println!("lab\t{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}", l.what, l.text, r.min.x, r.min.y, r.max.x, r.max.y);
    }
    // With --drive, every character's parameters after the last frame, for the tests:
    // `param <character> <name> <value>`.
    if args.drive.is_some() {
        for i in 0..scene.num_characters() {
            for (p, v) in scene.graph().parameters().iter().zip(scene.param_values(i)?) {
                println!("param\t{i}\t{}\t{v:?}", p.name);
            }
        }
    }
    // The timeline strip's history of the inspected character: its state runs and transitions.
    for line in lab.iter().flat_map(|lab| lab.timeline.lines(scene.graph())) {
        println!("{line}");
    }
    if failed.load(Ordering::SeqCst) {
        return Err("wgpu reported errors (above)".into());
    }
    Ok(())
}

/// `--hold` values, per graph parameter (in `CompiledGraph::parameters` order): the value held,
/// read as the parameter's type, or `None` for one not held.
fn held_values(scene: &Scene, holds: &[(String, String)]) -> Result<Vec<Option<ParamValue>>, String> {
    let graph = scene.graph();
    if let Some((name, _)) = holds.iter().find(|(name, _)| graph.parameter(name).is_none()) {
        return Err(format!("--hold {name:?}: the graph has no such parameter"));
    }
    let now = scene.param_values(0)?;
    graph
        .parameters()
        .iter()
        .zip(now)
        .map(|(p, now)| {
            let Some((_, text)) = holds.iter().rev().find(|(name, _)| *name == p.name) else { return Ok(None) };
            let bad = || format!("--hold {}={text}: not a value for {:?}", p.name, now);
            Ok(Some(match now {
                ParamValue::Float(_) => {
                    ParamValue::Float(text.parse::<f32>().ok().filter(|x| x.is_finite()).ok_or_else(bad)?)
                }
                ParamValue::Int(_) => ParamValue::Int(text.parse().map_err(|_| bad())?),
                ParamValue::Bool(_) => ParamValue::Bool(text.parse().map_err(|_| bad())?),
                ParamValue::Trigger(_) if text == "fire" => ParamValue::Trigger(true),
                ParamValue::Trigger(_) => return Err(bad()),
            }))
        })
        .collect()
}

/// A `throng-trace` script replayed on the inspected character: its steps, and before each
/// step every viewer graph parameter's value as the script's own run read it (`None` for a
/// parameter the script's graph lacks).
struct Replay {
    dts_s: Vec<f32>,
    values: Vec<Vec<Option<ParamValue>>>,
}

/// Largest script read, as `throng-trace`'s.
const MAX_SCRIPT_BYTES: u64 = 64 << 20;

impl Replay {
    /// Runs the script at `path` once (one character: cheap) to learn each frame's parameter
    /// values, so that the crowd's character sees exactly what the script's did.
    fn load(path: &std::path::Path, scene: &Scene) -> Result<Self, String> {
        let bytes = throng::import::read_regular_file(path, MAX_SCRIPT_BYTES)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| format!("cannot read {}: not UTF-8 ({e})", path.display()))?;
        let script = throng::trace::Script::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if script.dts_s().is_empty() {
            return Err(format!("{}: the script has no frames", path.display()));
        }
        let names: Vec<&str> = script.graph().parameters().iter().map(|p| p.name.as_str()).collect();
        if let Some(unknown) = names.iter().find(|n| scene.graph().parameter(n).is_none()) {
            return Err(format!("{}: parameter {unknown:?} is not in the viewer's graph", path.display()));
        }
        let order: Vec<Option<usize>> =
            scene.graph().parameters().iter().map(|p| names.iter().position(|n| *n == p.name)).collect();
        let mut values = Vec::with_capacity(script.dts_s().len());
        script
            .run_each(|f| {
                values.push(order.iter().map(|k| k.and_then(|k| f.params_before.get(k).copied())).collect());
                Ok::<(), throng::trace::TraceError>(())
            })
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { dts_s: script.dts_s().to_vec(), values })
    }
}

/// `out` with `_<frame>` before its extension: `crowd.png` → `crowd_0030.png`.
fn numbered(out: &std::path::Path, frame: u64) -> PathBuf {
    let stem = out.file_stem().map_or("frame".into(), |s| s.to_string_lossy().into_owned());
    let ext = out.extension().map_or("png".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}_{frame:04}.{ext}"))
}

/// Prints where character 0's trunk joints land in the picture, computed on the CPU from
/// throng's skinning matrices (read back) and the character's placement: the vertex shader
/// skins with the same matrices, so each point must fall on the character's body.
fn probe(
    renderer: &Renderer,
    scene: &Scene,
    camera: &camera::Orbit,
    (width, height): (u32, u32),
) -> Result<(), String> {
    let matrices = renderer.read_matrices()?;
    let rig = &scene.model.rig;
    let rest = rig.rest_model();
    let world = scene.world_of(0);
    let view_proj = camera.view_proj(width as f32 / height as f32);
    let names = ["pelvis", "spine_03", "spine_05"];
    let joints: Vec<(String, usize)> =
        match names.iter().filter_map(|n| Some(((*n).to_owned(), rig.find_joint(n)?))).collect::<Vec<_>>() {
            found if !found.is_empty() => found,
            _ => vec![(rig.names().first().cloned().unwrap_or_default(), 0)],
        };
    for (name, j) in joints {
        let (Some(skin), Some(bind)) = (matrices.get(j), rest.get(j)) else { continue };
        let p = view_proj * (world * (*skin * bind.w_axis.truncate().extend(1.0)));
        let (x, y) = (p.x / p.w, p.y / p.w);
        println!("probe {name} {:.1} {:.1}", (x * 0.5 + 0.5) * width as f32, (0.5 - y * 0.5) * height as f32);
    }
    Ok(())
}
