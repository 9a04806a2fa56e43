//! The windowed viewer: winit's event loop, an orbit camera on the mouse and WASD, keys for
//! the switch mode, pause and slow motion, and the HUD in the window title.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::camera::Orbit;
use crate::render::Renderer;
use crate::scene::{MODES, Scene};
use crate::{Args, Stats, build_scene, watch_errors};

/// The slow-motion factor `T` toggles.
const SLOW_MOTION: f32 = 0.2;
/// How often the title's HUD is refreshed, seconds.
const HUD_PERIOD_S: f64 = 0.5;
/// Longest step the simulation takes, seconds: a stalled frame (a window drag) does not make
/// the crowd teleport.
const MAX_DT_S: f32 = 0.1;

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    config: wgpu::SurfaceConfiguration,
    renderer: Renderer,
    failed: Arc<AtomicBool>,
}

struct App<'a> {
    args: &'a Args,
    scene: Scene,
    camera: Orbit,
    gfx: Option<Gfx>,
    error: Option<String>,
    held: HashSet<KeyCode>,
    drag: Option<(f64, f64)>,
    cursor: (f64, f64),
    paused: bool,
    slow: bool,
    last: Instant,
    frames: u64,
    stats: Stats,
    hud: Stats,
    hud_since: Instant,
}

/// Opens the window and runs until it closes (or `--frames` frames have been drawn); prints
/// the frame statistics at exit.
pub fn run(args: &Args) -> Result<(), String> {
    let event_loop = EventLoop::new().map_err(|e| format!("no window system: {e}"))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let scene = build_scene(args)?;
    let camera = Orbit::framing(&scene);
    let mut app = App {
        args,
        scene,
        camera,
        gfx: None,
        error: None,
        held: HashSet::new(),
        drag: None,
        cursor: (0.0, 0.0),
        paused: false,
        slow: false,
        last: Instant::now(),
        frames: 0,
        stats: Stats::default(),
        hud: Stats::default(),
        hud_since: Instant::now(),
    };
    event_loop.run_app(&mut app).map_err(|e| format!("event loop: {e}"))?;
    println!("viewer: {} frames", app.frames);
    println!("{}", app.stats.report(app.scene.num_characters(), args.cpu));
    if let Some(e) = app.error {
        return Err(e);
    }
    if app.gfx.is_some_and(|g| g.failed.load(Ordering::SeqCst)) {
        return Err("wgpu reported errors (above)".into());
    }
    Ok(())
}

impl App<'_> {
    fn create_gfx(&self, event_loop: &ActiveEventLoop) -> Result<Gfx, String> {
        let attributes = Window::default_attributes()
            .with_title("throng viewer")
            .with_inner_size(PhysicalSize::new(self.args.width, self.args.height));
        let window = Arc::new(event_loop.create_window(attributes).map_err(|e| format!("creating the window: {e}"))?);
        let display = Box::new(event_loop.owned_display_handle());
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_with_display_handle(display).with_env());
        let surface = instance.create_surface(window.clone()).map_err(|e| format!("creating the surface: {e}"))?;
        let adapter = pollster::block_on(wgpu::util::initialize_adapter_from_env_or_default(&instance, Some(&surface)))
            .map_err(|e| format!("no GPU adapter can draw to the window: {e}"))?;
        // As throng's own GpuContext: the adapter's limits (crowds outgrow the defaults) and
        // timestamps when available.
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("viewer"),
            required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| format!("the adapter refused a device: {e}"))?;
        let failed = watch_errors(&device);
        let size = window.inner_size();
        let mut config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or("the adapter cannot present to this window")?;
        let caps = surface.get_capabilities(&adapter);
        if let Some(&srgb) = caps.formats.iter().find(|f| f.is_srgb()) {
            config.format = srgb;
        }
        // Unthrottled, so the HUD shows what the frame costs rather than the display's rate.
        config.present_mode = wgpu::PresentMode::AutoNoVsync;
        surface.configure(&device, &config);
        let renderer = Renderer::new(&device, &queue, &self.scene, config.format, self.args.cpu, self.args.layout)?;
        println!(
            "viewer: {} characters on {} ({:?}); keys: 1 cut, 2 frozen, 3 crossfade, 4 inertialize, space pause, T slow motion, WASD pan, drag orbit, wheel zoom, Esc quit",
            self.scene.num_characters(),
            adapter.get_info().name,
            adapter.get_info().backend
        );
        Ok(Gfx { window, surface, device, queue, config, renderer, failed })
    }

    fn key(&mut self, code: KeyCode, event_loop: &ActiveEventLoop) {
        let mode = match code {
            KeyCode::Digit1 => Some(0),
            KeyCode::Digit2 => Some(1),
            KeyCode::Digit3 => Some(2),
            KeyCode::Digit4 => Some(3),
            _ => None,
        };
        if let Some(mode) = mode.filter(|&m| m < MODES.len()) {
            self.scene.set_mode(mode);
        }
        match code {
            KeyCode::Space => self.paused = !self.paused,
            KeyCode::KeyT => self.slow = !self.slow,
            KeyCode::KeyL => self.scene.set_lod(!self.scene.lod()),
            KeyCode::Escape => event_loop.exit(),
            _ => {}
        }
    }

    fn frame(&mut self, event_loop: &ActiveEventLoop) -> Result<(), String> {
        let Some(gfx) = &mut self.gfx else { return Ok(()) };
        let now = Instant::now();
        let real_dt_s = (now - self.last).as_secs_f32().min(MAX_DT_S);
        self.last = now;
        let pan = |a: KeyCode, b: KeyCode| {
            f32::from(u8::from(self.held.contains(&a))) - f32::from(u8::from(self.held.contains(&b)))
        };
        let (forward, right) = (pan(KeyCode::KeyW, KeyCode::KeyS), pan(KeyCode::KeyD, KeyCode::KeyA));
        self.camera.pan(forward * 0.6 * real_dt_s, right * 0.6 * real_dt_s);
        // A headless-like fixed step when a frame count is given keeps `--frames` runs
        // reproducible; otherwise real time, paused or slowed.
        let dt_s = if self.paused {
            0.0
        } else if self.args.frames.is_some() {
            1.0 / 60.0
        } else {
            real_dt_s * if self.slow { SLOW_MOTION } else { 1.0 }
        };
        self.scene.set_eye(self.camera.eye());
        let step = self.scene.step(dt_s)?;
        let texture = match gfx.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t) | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                gfx.surface.configure(&gfx.device, &gfx.config);
                return Ok(());
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => return Ok(()),
            wgpu::CurrentSurfaceTexture::Validation => {
                return Err("acquiring the window's texture failed validation".into());
            }
        };
        let view = texture.texture.create_view(&Default::default());
        let size = (gfx.config.width, gfx.config.height);
        let aspect = size.0 as f32 / size.1 as f32;
        let cpu_ms = gfx.renderer.render(
            &gfx.device,
            &gfx.queue,
            &mut self.scene,
            dt_s,
            &view,
            size,
            self.camera.view_proj(aspect),
            self.camera.eye(),
        )?;
        gfx.queue.present(texture);
        let times = gfx.renderer.read_times(&gfx.device)?;
        throng::profile::frame_mark();
        self.frames += 1;
        let wall_ms = now.elapsed().as_secs_f64() * 1e3;
        let clips = self.scene.clips_sampled();
        if self.frames > 1 {
            self.stats.add(wall_ms, step, cpu_ms, times, clips);
        }
        self.hud.add(wall_ms, step, cpu_ms, times, clips);
        if self.hud_since.elapsed().as_secs_f64() >= HUD_PERIOD_S {
            let state = match (self.paused, self.slow) {
                (true, _) => " | paused",
                (false, true) => " | slow motion",
                _ => "",
            };
            let (mode, hud, lod) =
                (self.scene.mode().1, self.hud.line(self.scene.num_characters(), self.args.cpu), self.scene.lod_line());
            gfx.window.set_title(&format!("throng | {mode} | {hud} | {lod}{state}"));
            self.hud = Stats::default();
            self.hud_since = Instant::now();
        }
        if self.args.frames.is_some_and(|n| self.frames >= n) {
            event_loop.exit();
        }
        Ok(())
    }
}

impl ApplicationHandler for App<'_> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match self.create_gfx(event_loop) {
            Ok(gfx) => {
                gfx.window.request_redraw();
                self.gfx = Some(gfx);
                self.last = Instant::now();
            }
            Err(e) => {
                self.error = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(gfx) = &mut self.gfx {
                    gfx.config.width = size.width.max(1);
                    gfx.config.height = size.height.max(1);
                    gfx.surface.configure(&gfx.device, &gfx.config);
                }
            }
            WindowEvent::KeyboardInput { event, .. } => {
                let PhysicalKey::Code(code) = event.physical_key else { return };
                match event.state {
                    ElementState::Pressed => {
                        if !event.repeat {
                            self.key(code, event_loop);
                        }
                        self.held.insert(code);
                    }
                    ElementState::Released => {
                        self.held.remove(&code);
                    }
                }
            }
            WindowEvent::MouseInput { button: MouseButton::Left, state, .. } => {
                self.drag = (state == ElementState::Pressed).then_some(self.cursor);
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.cursor = (position.x, position.y);
                if let Some((x, y)) = self.drag {
                    self.camera.rotate((position.x - x) as f32, (position.y - y) as f32);
                    self.drag = Some(self.cursor);
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                self.camera.zoom(lines);
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.frame(event_loop) {
                    self.error = Some(e);
                    event_loop.exit();
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _: &ActiveEventLoop) {
        if let Some(gfx) = &self.gfx {
            gfx.window.request_redraw();
        }
    }
}
