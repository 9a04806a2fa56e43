//! A Bevy app whose crowd is throng's: 10,000 built-in humanoids (by default) walking, running,
//! jumping, waving and leaning under the viewer's crowd brain, stepped in Bevy's schedule,
//! evaluated on Bevy's device and drawn from throng's output buffer.
//!
//! ```sh
//! # a window and a camera you move (Bevy's winit, X11: the `window` feature)
//! cargo run --release -p throng-bevy --example crowd --features window --ignore-rust-version
//! # a window for 300 frames, then a screenshot of it and exit
//! cargo run --release -p throng-bevy --example crowd --features window --ignore-rust-version -- --frames 300 --out shot.png
//! # headless: N frames into an image, the frame's split printed, the last frame saved
//! cargo run --release -p throng-bevy --example crowd --ignore-rust-version -- --headless --frames 120 --out crowd.png
//! ```
//!
//! Options: `--characters N` (10000), `--size WxH` (the window or image, 960x540),
//! `--headless`, `--frames N` (headless: 120; in a window: exit after N frames, none to run until
//! closed), `--no-draw` (headless: no camera, evaluation alone), `--out PATH` (the last frame as
//! a PNG: headless, read back from the camera's image; in a window, with `--frames`, a
//! screenshot of the window). Camera: W/S forward and back, A/D sideways, Q/E down and up,
//! arrows turn; shift is faster.

#[path = "../../examples/viewer/brain.rs"]
mod brain;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::camera::RenderTarget;
use bevy::light::{DirectionalLight, GlobalAmbientLight};
use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::renderer::RenderDevice;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::{ExitCondition, WindowResolution};
use brain::Brain;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::graph::CompiledGraph;
use throng::state::ParamId;
use throng_bevy::{AgentParams, CrowdAgent, RootMotion, ThrongCrowd, ThrongPlugin, ThrongRender, read_image_blocking};

/// Metres between characters at the start.
const SPACING_M: f32 = 1.6;

const USAGE: &str = "usage: crowd [--characters N] [--size WxH] [--frames N] [--out PATH] [--headless [--no-draw]]";

fn main() -> AppExit {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("crowd: {message}\n{USAGE}");
            return AppExit::error();
        }
    };
    let headless = args.headless || !cfg!(feature = "window");
    if !args.headless && headless {
        eprintln!("crowd: built without the `window` feature: running headless (--features window for a window)");
    }
    if !headless && std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "crowd: there is no display (DISPLAY is not set; the window is X11): run it under X (xvfb-run -a …) or \
             headless: cargo run --release -p throng-bevy --example crowd --ignore-rust-version -- --headless"
        );
        return AppExit::error();
    }
    if !headless && args.out.is_some() && args.frames.is_none() {
        eprintln!("crowd: --out in a window needs --frames (the screenshot is of the last frame)\n{USAGE}");
        return AppExit::error();
    }
    let mut app = App::new();
    let window = if headless {
        WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() }
    } else {
        let resolution = WindowResolution::new(args.size.0, args.size.1);
        WindowPlugin { primary_window: Some(Window { resolution, ..default() }), ..default() }
    };
    let plugins = DefaultPlugins.set(window);
    // Headless, Bevy's winit must not start: its event loop needs a display.
    #[cfg(feature = "window")]
    let plugins = if headless { plugins.disable::<bevy::winit::WinitPlugin>() } else { plugins };
    app.add_plugins((plugins, ThrongPlugin::default()))
        .insert_resource(Setup { characters: args.characters, draw: !args.no_draw, headless, size: args.size })
        .add_systems(Startup, setup)
        .add_systems(Update, (think, fly));
    if !headless {
        app.add_systems(Last, report).init_resource::<Timing>();
        if let Some(frames) = args.frames {
            app.insert_resource(Finish { frames, counted: 0, out: args.out.clone() }).add_systems(Last, finish);
        }
        return app.run();
    }
    match run_headless(&mut app, &args) {
        Ok(()) => AppExit::Success,
        Err(message) => {
            eprintln!("crowd: {message}");
            AppExit::error()
        }
    }
}

struct Args {
    characters: usize,
    /// The window's or the headless image's size, pixels.
    size: (u32, u32),
    headless: bool,
    /// Frames to run: headless 120 when not given; in a window, until it is closed.
    frames: Option<usize>,
    no_draw: bool,
    out: Option<PathBuf>,
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut parsed =
            Self { characters: 10_000, size: (960, 540), headless: false, frames: None, no_draw: false, out: None };
        let count = |name: &str, value: Option<String>| -> Result<usize, String> {
            let value = value.ok_or(format!("{name} needs a number"))?;
            value.parse().map_err(|_| format!("{name}: not a count: {value}"))
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--characters" => parsed.characters = count("--characters", args.next())?,
                "--frames" => parsed.frames = Some(count("--frames", args.next())?),
                "--size" => {
                    let value = args.next().ok_or("--size needs WxH")?;
                    parsed.size = value
                        .split_once('x')
                        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                        .filter(|&(w, h)| w > 0 && h > 0)
                        .ok_or(format!("--size: not WxH in pixels: {value}"))?;
                }
                "--headless" => parsed.headless = true,
                "--no-draw" => parsed.no_draw = true,
                "--out" => parsed.out = Some(args.next().ok_or("--out needs a path")?.into()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if parsed.frames == Some(0) {
            return Err("--frames: at least one frame".into());
        }
        Ok(parsed)
    }
}

#[derive(Resource)]
struct Setup {
    characters: usize,
    draw: bool,
    headless: bool,
    size: (u32, u32),
}

/// The headless camera's target.
#[derive(Resource)]
struct Target(Handle<Image>);

/// Runs the frames by hand, waiting for the device after each, and prints the frame's split:
/// throng's main-world step, throng's render-world prepare, the wait for the device after the
/// update, and the rest (Bevy's own systems, render and submission). A driver that does the
/// work when it is submitted (lavapipe) puts throng's dispatches and the draw in the rest.
fn run_headless(app: &mut App, args: &Args) -> Result<(), String> {
    while app.plugins_state() == bevy::app::PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
    let (mut frame, mut step, mut prepare, mut device_wait) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let frames = args.frames.unwrap_or(120);
    let warm_up = frames.min(10);
    for k in 0..frames {
        let started = Instant::now();
        app.update();
        let updated = started.elapsed();
        let render_world = app.sub_app(RenderApp).world();
        let device = render_world.resource::<RenderDevice>().wgpu_device().clone();
        device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| format!("the device: {e}"))?;
        if k >= warm_up {
            frame += started.elapsed();
            device_wait += started.elapsed() - updated;
            step += app.world().resource::<ThrongCrowd>().last_step_time();
            prepare += render_world.resource::<ThrongRender>().last_prepare_time();
        }
    }
    let measured = (frames - warm_up).max(1) as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / measured;
    println!(
        "{} characters, {} frames{}: frame {:.2} ms = throng step {:.2} + throng prepare {:.2} + device wait (throng's dispatches{}) {:.2} + Bevy and submission {:.2}",
        args.characters,
        frames - warm_up,
        if args.no_draw { ", no draw" } else { "" },
        ms(frame),
        ms(step),
        ms(prepare),
        if args.no_draw { "" } else { ", the draw" },
        ms(device_wait),
        ms(frame) - ms(step) - ms(prepare) - ms(device_wait),
    );
    if let (Some(out), Some(target)) = (&args.out, app.world().get_resource::<Target>()) {
        let pixels = read_image_blocking(app.sub_app(RenderApp).world(), &target.0)
            .map_err(|e| format!("reading the image back: {e}"))?;
        image::save_buffer(out, &pixels.rgba, pixels.width, pixels.height, image::ExtendedColorType::Rgba8)
            .map_err(|e| format!("writing {}: {e}", out.display()))?;
        println!("crowd: wrote {}", out.display());
    }
    Ok(())
}

/// The brain, the agents it drives (index `i` is the brain's character `i`), and the
/// parameters it writes.
#[derive(Resource)]
struct Crowd {
    brain: Brain,
    agents: Vec<Entity>,
    field_half_m: f32,
    speed: ParamId,
    lean: ParamId,
    wave: ParamId,
    jump: ParamId,
}

fn setup(
    mut commands: Commands,
    setup: Res<Setup>,
    mut throng: ResMut<ThrongCrowd>,
    mut images: ResMut<Assets<Image>>,
) -> Result {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?))?;
    let id = throng.add_archetype(bound.archetype, demo.rig, bound.clips, bound.layers)?;
    throng.set_mesh(id, demo.mesh)?;
    let n = setup.characters;
    let brain = Brain::new(n, 7);
    let side = (n as f32).sqrt().ceil().max(1.0);
    let field_half_m = side * SPACING_M / 2.0;
    let agents = (0..n)
        .map(|i| {
            let (row, col) = ((i as f32 / side).floor(), i as f32 % side);
            let jitter = brain.jitter(i);
            let x = (col + 0.5) * SPACING_M - field_half_m + jitter[0] * 0.3 * SPACING_M;
            let z = (row + 0.5) * SPACING_M - field_half_m + jitter[1] * 0.3 * SPACING_M;
            let transform =
                Transform::from_xyz(x, 0.0, z).with_rotation(Quat::from_rotation_y(jitter[2] * std::f32::consts::PI));
            commands.spawn((CrowdAgent::new(id), AgentParams::default(), RootMotion, transform)).id()
        })
        .collect();
    commands.insert_resource(Crowd {
        brain,
        agents,
        field_half_m,
        speed: throng.param(id, "speed")?,
        lean: throng.param(id, "lean")?,
        wave: throng.param(id, "wave")?,
        jump: throng.param(id, "jump")?,
    });
    if !setup.draw {
        return Ok(());
    }
    let eye = Transform::from_xyz(0.0, field_half_m * 0.5 + 4.0, field_half_m + 8.0).looking_at(Vec3::ZERO, Vec3::Y);
    // Bevy's lights light the characters: a low sun from the front left, and a sky's ambient.
    commands.spawn((
        DirectionalLight { illuminance: 2_500.0, ..default() },
        Transform::from_xyz(-4.0, 8.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight { brightness: 300.0, ..default() });
    if setup.headless {
        let (width, height) = setup.size;
        let mut image = Image::new_target_texture(width, height, TextureFormat::Rgba8UnormSrgb, None);
        image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        let target = images.add(image);
        commands.spawn((Camera3d::default(), RenderTarget::Image(target.clone().into()), eye));
        commands.insert_resource(Target(target));
    } else {
        commands.spawn((Camera3d::default(), eye));
    }
    Ok(())
}

/// The viewer's brain: goals to parameters, and its steering turned into the agents' headings.
fn think(time: Res<Time>, mut crowd: ResMut<Crowd>, mut agents: Query<(&mut Transform, &mut AgentParams)>) {
    let dt_s = time.delta_secs();
    let placements: Vec<[f32; 4]> = crowd
        .agents
        .iter()
        .map(|&entity| {
            agents.get(entity).map_or([0.0; 4], |(t, _)| {
                let (heading, _, _) = t.rotation.to_euler(EulerRot::YXZ);
                [t.translation.x, t.translation.y, t.translation.z, heading]
            })
        })
        .collect();
    let Crowd { brain, agents: entities, field_half_m, speed, lean, wave, jump } = &mut *crowd;
    let orders = brain.think(dt_s, &placements, *field_half_m);
    for (i, &entity) in entities.iter().enumerate() {
        let Ok((mut transform, mut params)) = agents.get_mut(entity) else { continue };
        params.set_float(*speed, brain.speed_mps[i]);
        params.set_float(*lean, brain.lean[i]);
        params.set_float(*wave, brain.wave[i]);
        transform.rotate_y(brain.turn_rad[i]);
    }
    for &i in &orders.jump {
        if let Ok((_, mut params)) = agents.get_mut(entities[i]) {
            params.fire(*jump);
        }
    }
}

/// A free camera on the keyboard.
fn fly(time: Res<Time>, keys: Res<ButtonInput<KeyCode>>, mut cameras: Query<&mut Transform, With<Camera3d>>) {
    let dt_s = time.delta_secs();
    let fast = if keys.pressed(KeyCode::ShiftLeft) { 4.0 } else { 1.0 };
    for mut camera in &mut cameras {
        let axis = |plus, minus| f32::from(u8::from(keys.pressed(plus))) - f32::from(u8::from(keys.pressed(minus)));
        let forward = camera.forward().as_vec3();
        let right = camera.right().as_vec3();
        let travel = forward * axis(KeyCode::KeyW, KeyCode::KeyS)
            + right * axis(KeyCode::KeyD, KeyCode::KeyA)
            + Vec3::Y * axis(KeyCode::KeyE, KeyCode::KeyQ);
        camera.translation += travel * 12.0 * fast * dt_s;
        camera.rotate_y(axis(KeyCode::ArrowLeft, KeyCode::ArrowRight) * 1.2 * dt_s);
        let pitch = axis(KeyCode::ArrowUp, KeyCode::ArrowDown) * 0.8 * dt_s;
        camera.rotate_local_x(pitch);
    }
}

/// Frame time and throng's main-world step, summed over a report's frames.
#[derive(Resource)]
struct Timing {
    frames: u32,
    since: Instant,
    step: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self { frames: 0, since: Instant::now(), step: Duration::ZERO }
    }
}

fn report(mut timing: ResMut<Timing>, crowd: Res<Crowd>, throng: Res<ThrongCrowd>) {
    timing.frames += 1;
    timing.step += throng.last_step_time();
    if timing.frames == 120 {
        let frame_ms = timing.since.elapsed().as_secs_f64() * 1e3 / 120.0;
        let step_ms = timing.step.as_secs_f64() * 1e3 / 120.0;
        println!("{} characters: frame {frame_ms:.1} ms, throng step {step_ms:.1} ms", crowd.agents.len());
        *timing = Timing::default();
    }
}

/// Frames the window's screenshot may take to arrive before the run gives up on it.
const SCREENSHOT_FRAMES: usize = 120;

/// A windowed run's end (`--frames`): after that many frames the app exits, or with `--out`
/// takes a screenshot of the window and exits once it is written.
#[derive(Resource)]
struct Finish {
    frames: usize,
    counted: usize,
    out: Option<PathBuf>,
}

fn finish(mut finish: ResMut<Finish>, mut commands: Commands, crowd: Res<Crowd>, mut exit: MessageWriter<AppExit>) {
    finish.counted += 1;
    if finish.counted == finish.frames + SCREENSHOT_FRAMES {
        eprintln!("crowd: the screenshot did not arrive within {SCREENSHOT_FRAMES} frames");
        exit.write(AppExit::error());
    }
    if finish.counted != finish.frames {
        return;
    }
    println!("crowd: {} frames of {} characters in a window", finish.frames, crowd.agents.len());
    let Some(path) = finish.out.clone() else {
        exit.write(AppExit::Success);
        return;
    };
    // The capture arrives a frame or two later, read back from the window's swapchain image.
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| {
            let written = captured
                .image
                .clone()
                .try_into_dynamic()
                .map_err(|e| e.to_string())
                .and_then(|image| image.to_rgb8().save(&path).map_err(|e| e.to_string()));
            match written {
                Ok(()) => {
                    println!("crowd: wrote {}", path.display());
                    exit.write(AppExit::Success);
                }
                Err(e) => {
                    eprintln!("crowd: the screenshot: {e}");
                    exit.write(AppExit::error());
                }
            }
        },
    );
}
