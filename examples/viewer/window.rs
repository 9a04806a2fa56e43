//! The windowed viewer: winit's event loop, an orbit camera on the mouse and WASD, keys for
//! the switch mode, pause and slow motion, the HUD in the window title, and the lab's panels
//! (egui, fed winit's events while a panel is open).

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
use crate::ground::Choice;
use crate::lab::{CrowdFigures, Lab};
use crate::pick;
use crate::render::Renderer;
use crate::scene::{MODES, Scene};
use crate::{Args, Stats, build_scene, watch_errors};

/// The slow-motion factor `T` toggles.
const SLOW_MOTION: f32 = 0.2;
/// How far the cursor may move between a left button's press and release for a click (a pick)
/// rather than a drag (an orbit), pixels.
const CLICK_SLOP_PX: f64 = 4.0;
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
    lab: Lab,
    egui: egui_winit::State,
}

struct App<'a> {
    args: &'a Args,
    scene: Scene,
    camera: Orbit,
    gfx: Option<Gfx>,
    error: Option<String>,
    held: HashSet<KeyCode>,
    drag: Option<(f64, f64)>,
    /// Where the left button went down: released there, it was a click (a pick), not a drag.
    press: Option<(f64, f64)>,
    cursor: (f64, f64),
    /// Shift is held: a click adds the character to the hand's selection, or removes it.
    shift: bool,
    paused: bool,
    slow: bool,
    last: Instant,
    frames: u64,
    stats: Stats,
    hud: Stats,
    hud_since: Instant,
    /// The last complete HUD period's means, for the crowd panel.
    shown: Stats,
    /// F12 asked for a screenshot of the next frame presented.
    screenshot: bool,
    /// Screenshots written so far (the next is `<--out stem>_<n>.png`, from 1).
    screenshots: u64,
}

/// Opens the window and runs until it closes (or `--frames` frames have been drawn); prints
/// the frame statistics at exit.
pub fn run(args: &Args) -> Result<(), String> {
    if let Some(message) = no_display() {
        return Err(message);
    }
    let event_loop = EventLoop::new().map_err(|e| format!("no window system: {e}\n{HEADLESS_HINT}"))?;
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
        press: None,
        cursor: (0.0, 0.0),
        shift: false,
        paused: args.paused,
        slow: false,
        last: Instant::now(),
        frames: 0,
        stats: Stats::default(),
        hud: Stats::default(),
        hud_since: Instant::now(),
        shown: Stats::default(),
        screenshot: false,
        screenshots: 0,
    };
    event_loop.run_app(&mut app).map_err(|e| format!("event loop: {e}"))?;
    println!("viewer: {} frames", app.frames);
    if let Some(i) = app.gfx.as_ref().and_then(|g| g.lab.inspect) {
        println!("viewer: inspecting character {i}");
    }
    println!("{}", app.stats.report(app.scene.num_characters(), args.cpu));
    if let Some(e) = app.error {
        return Err(e);
    }
    if app.gfx.is_some_and(|g| g.failed.load(Ordering::SeqCst)) {
        return Err("wgpu reported errors (above)".into());
    }
    Ok(())
}

/// What a machine without a window system runs instead (README's headless command).
const HEADLESS_HINT: &str =
    "to render offscreen instead: cargo run --release --example viewer -- --headless --frames 120 --out crowd.png";

/// Why no window can open here, when the environment already tells: the viewer's winit speaks
/// X11 alone (XWayland on Wayland desktops), so on Linux and the BSDs it needs `DISPLAY`.
/// Without this, winit's own error names Wayland variables that this build does not use.
fn no_display() -> Option<String> {
    let needs_display = cfg!(all(unix, not(target_vendor = "apple"), not(target_os = "android")));
    let display = std::env::var_os("DISPLAY").filter(|d| !d.is_empty());
    (needs_display && display.is_none())
        .then(|| format!("there is no display (DISPLAY is not set), so no window can open\n{HEADLESS_HINT}"))
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
        // Screenshots (F12) copy the presented texture, where the surface allows it.
        if caps.usages.contains(wgpu::TextureUsages::COPY_SRC) {
            config.usage |= wgpu::TextureUsages::COPY_SRC;
        }
        surface.configure(&device, &config);
        let renderer = Renderer::new(&device, &queue, &self.scene, config.format, self.args.cpu, self.args.layout)?;
        let lab = Lab::new(&device, config.format, true, self.args.inspect);
        let egui = egui_winit::State::new(
            lab.context().clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(device.limits().max_texture_dimension_2d as usize),
        );
        println!(
            "viewer: {} characters on {} ({:?}); keys: 1 cut, 2 frozen, 3 crossfade, 4 inertialize, space pause, T slow motion, Tab panels, WASD pan, drag orbit, wheel zoom, Esc quit",
            self.scene.num_characters(),
            adapter.get_info().name,
            adapter.get_info().backend
        );
        Ok(Gfx { window, surface, device, queue, config, renderer, failed, lab, egui })
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
            KeyCode::KeyG => self.scene.set_ground(self.scene.ground().next()),
            KeyCode::KeyI | KeyCode::KeyK => {
                let (ik, look) = (self.scene.ik(), self.scene.look());
                let (ik, look) = if code == KeyCode::KeyI { (!ik, look) } else { (ik, look.next()) };
                if let Err(e) = self.scene.set_procedural(ik, look) {
                    println!("viewer: {e}");
                }
            }
            KeyCode::Tab => {
                if let Some(gfx) = &mut self.gfx {
                    gfx.lab.crowd_open = !gfx.lab.crowd_open;
                }
            }
            KeyCode::F12 => self.screenshot = true,
            KeyCode::Escape => event_loop.exit(),
            _ => {}
        }
    }

    /// Picks the character under the cursor (a ray against the characters' bounding capsules
    /// of the pose on screen) and opens its panel; a click on no one closes it. With shift held
    /// it adds the character to the selection the lab's hand drives, or removes it, and a
    /// click on no one changes nothing.
    fn pick(&mut self) -> Result<(), String> {
        // Before the first frame there is no pose to pick from.
        let Some(gfx) = self.gfx.as_mut().filter(|_| self.frames > 0) else { return Ok(()) };
        let matrices = gfx.renderer.read_matrices()?;
        let capsules = self.scene.capsules(&matrices);
        let size = (gfx.config.width, gfx.config.height);
        let view_proj = self.camera.view_proj(size.0 as f32 / size.1 as f32);
        let cursor = (self.cursor.0 as f32, self.cursor.1 as f32);
        let picked = pick::ray(view_proj, cursor, size).and_then(|(o, d)| pick::nearest(&capsules, o, d));
        match (picked, self.shift) {
            (Some(i), true) => {
                gfx.lab.toggle_selected(i, &mut self.scene)?;
                println!("viewer: selected characters {:?}", gfx.lab.selection);
            }
            (None, true) => {}
            (Some(i), false) => println!("viewer: picked character {i}"),
            (None, false) => println!("viewer: picked nothing"),
        }
        if !self.shift {
            gfx.lab.inspect = picked;
        }
        Ok(())
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
        if let Some(i) = gfx.lab.inspect.filter(|_| gfx.lab.follow)
            && let Some(p) = self.scene.placements.get(i)
        {
            self.camera.target.x = p[0];
            self.camera.target.z = p[2];
        }
        gfx.renderer.highlight = gfx.lab.inspect;
        gfx.renderer.heat = gfx.lab.heat(&self.scene);
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
        if gfx.lab.is_open() {
            let input = gfx.egui.take_egui_input(&gfx.window);
            let figures = CrowdFigures { stats: &self.shown, cpu: self.args.cpu };
            if let Some(output) = gfx.lab.frame(&gfx.device, &gfx.queue, input, &mut self.scene, &figures, size)? {
                gfx.egui.handle_platform_output(&gfx.window, output);
            }
        }
        let cpu_ms = gfx.renderer.render(
            &gfx.device,
            &gfx.queue,
            &mut self.scene,
            dt_s,
            &view,
            size,
            self.camera.view_proj(aspect),
            self.camera.eye(),
            gfx.lab.is_open().then_some(&gfx.lab),
        )?;
        if std::mem::take(&mut self.screenshot) {
            if gfx.config.usage.contains(wgpu::TextureUsages::COPY_SRC) {
                self.screenshots += 1;
                let path = crate::numbered(&self.args.out, self.screenshots);
                crate::render::save_texture_png(&gfx.device, &gfx.queue, &texture.texture, &path)?;
                println!("viewer: wrote screenshot {}", path.display());
            } else {
                println!("viewer: this surface cannot be copied from, so no screenshot");
            }
        }
        gfx.queue.present(texture);
        let times = gfx.renderer.read_times(&gfx.device)?;
        throng::profile::frame_mark();
        self.frames += 1;
        let wall_ms = now.elapsed().as_secs_f64() * 1e3;
        let intake = crate::Intake::of(&gfx.renderer, &self.scene);
        if self.frames > 1 {
            self.stats.add(wall_ms, step, cpu_ms, times, intake);
        }
        self.hud.add(wall_ms, step, cpu_ms, times, intake);
        if self.hud_since.elapsed().as_secs_f64() >= HUD_PERIOD_S {
            let state = match (self.paused, self.slow) {
                (true, _) => " | paused",
                (false, true) => " | slow motion",
                _ => "",
            };
            let (mode, hud, lod) =
                (self.scene.mode().1, self.hud.line(self.scene.num_characters(), self.args.cpu), self.scene.lod_line());
            let world = format!(
                "ground {} | IK {} | look {}",
                self.scene.ground().name(),
                if self.scene.ik() { "on" } else { "off" },
                self.scene.look().name()
            );
            gfx.window.set_title(&format!("throng | {mode} | {hud} | {lod} | {world}{state}"));
            self.shown = std::mem::take(&mut self.hud);
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
        // The panels take the events they use (a click on a button is not a camera drag); while
        // every panel is closed egui sees nothing, so it stores nothing. Tab is the viewer's
        // (the crowd panel), never egui's focus key.
        let tab = matches!(
            &event,
            WindowEvent::KeyboardInput {
                event: winit::event::KeyEvent { physical_key: PhysicalKey::Code(KeyCode::Tab), .. },
                ..
            }
        );
        if let Some(gfx) = &mut self.gfx
            && gfx.lab.is_open()
            && !tab
            && !matches!(event, WindowEvent::RedrawRequested)
            && gfx.egui.on_window_event(&gfx.window, &event).consumed
        {
            return;
        }
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
                let pressed = state == ElementState::Pressed;
                self.drag = pressed.then_some(self.cursor);
                let press = std::mem::replace(&mut self.press, pressed.then_some(self.cursor));
                let still = press.is_some_and(|(x, y)| (x - self.cursor.0).hypot(y - self.cursor.1) < CLICK_SLOP_PX);
                if !pressed
                    && still
                    && let Err(e) = self.pick()
                {
                    self.error = Some(e);
                    event_loop.exit();
                }
            }
            WindowEvent::ModifiersChanged(modifiers) => self.shift = modifiers.state().shift_key(),
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
