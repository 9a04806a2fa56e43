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
mod render;
mod scene;
mod window;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use render::{FrameTimes, Offscreen, Renderer};
use scene::{MODES, Model, Scene, StepTimes};
use throng::program::OutputLayout;

const USAGE: &str = "usage: viewer [--headless] [--frames N] [--characters N] [--out PATH] [--out-every K]
              [--size WxH] [--cpu] [--gltf PATH] [--mode cut|frozen|crossfade|inertialize]
              [--probe] [--background-only] [--seed N] [--layout affine|mat4]
              [--no-lod]";

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
        mode: MODES.len() - 1,
        probe: false,
        background_only: false,
        seed: 1,
        layout: OutputLayout::Affine3x4,
        lod: true,
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
            "--frames" => a.frames = Some(number("--frames", value("--frames")?)?),
            "--characters" => a.characters = number("--characters", value("--characters")?)? as usize,
            "--out" => a.out = PathBuf::from(value("--out")?),
            "--out-every" => a.out_every = Some(number("--out-every", value("--out-every")?)?.max(1)),
            "--seed" => a.seed = number("--seed", value("--seed")?)?,
            "--gltf" => a.gltf = Some(PathBuf::from(value("--gltf")?)),
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
    let model = match &args.gltf {
        Some(path) => Model::gltf(path)?,
        None => Model::demo()?,
    };
    let mut scene = Scene::new(model, args.characters, args.mode, args.seed)?;
    scene.set_lod(args.lod);
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
}

impl Stats {
    /// Adds one frame.
    pub fn add(&mut self, wall_ms: f64, step: StepTimes, cpu_eval_ms: Option<f64>, times: FrameTimes, clips: usize) {
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
        self.clips += clips as u64;
    }

    fn mean(sum: f64, n: u64) -> f64 {
        if n == 0 { 0.0 } else { sum / n as f64 }
    }

    /// One line: fps and the frame split (wall clock), means over the frames added.
    pub fn line(&self, characters: usize, cpu: bool) -> String {
        let n = self.frames;
        format!(
            "{:.1} fps | {characters} characters | state step {:.2} ms | {} evaluation {:.2} ms | draw {:.2} ms | clips sampled {:.0}/frame",
            if self.wall_ms > 0.0 { 1e3 * n as f64 / self.wall_ms } else { 0.0 },
            Self::mean(self.step.state_ms, n),
            if cpu { "CPU" } else { "GPU" },
            Self::mean(self.eval_ms, n),
            Self::mean(self.draw_ms, n),
            Self::mean(self.clips as f64, n),
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
    let target = Offscreen::new(&gpu.device, args.width, args.height);
    let camera = camera::Orbit::framing(&scene);
    let aspect = args.width as f32 / args.height as f32;
    let frames = args.frames.unwrap_or(120).max(1);
    let dt_s = 1.0 / 60.0;
    println!(
        "viewer: {} characters × {} joints, {frames} frames, {} evaluation ({:?} matrices) on {} ({:?}), switch mode {}, timestamps {}",
        scene.num_characters(),
        scene.model.rig.num_joints(),
        if args.cpu { "CPU" } else { "GPU" },
        args.layout,
        gpu.adapter_info.name,
        gpu.adapter_info.backend,
        scene.mode().1,
        if renderer.has_timestamps() { "on" } else { "off" },
    );
    let mut stats = Stats::default();
    let mut evaluated = 0;
    let start = Instant::now();
    scene.set_eye(camera.eye());
    for frame in 1..=frames {
        let frame_start = Instant::now();
        let step = scene.step(dt_s)?;
        evaluated += scene.evaluated();
        let cpu_ms = renderer.render(
            &gpu.device,
            &gpu.queue,
            &mut scene,
            dt_s,
            &target.view,
            (args.width, args.height),
            camera.view_proj(aspect),
            camera.eye(),
        )?;
        let times = renderer.read_times(&gpu.device)?;
        throng::profile::frame_mark();
        if frame > 1 {
            stats.add(frame_start.elapsed().as_secs_f64() * 1e3, step, cpu_ms, times, scene.clips_sampled());
        }
        if args.out_every.is_some_and(|k| frame % k == 0) {
            target.save_png(&gpu.device, &gpu.queue, &numbered(&args.out, frame))?;
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
    if failed.load(Ordering::SeqCst) {
        return Err("wgpu reported errors (above)".into());
    }
    Ok(())
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
