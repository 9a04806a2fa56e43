//! The plugin in a headless Bevy app on a real device (lavapipe in CI): throng's output buffer
//! read back from Bevy's device against the CPU evaluator, spawns and despawns between frames,
//! root motion on transforms, events with their entities. Without an adapter each test skips
//! with a message, unless `THRONG_REQUIRE_GPU=1`.

use std::sync::Arc;
use std::time::Duration;

use bevy::camera::RenderTarget;
use bevy::light::{DirectionalLight, GlobalAmbientLight};
use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::RenderPlugin;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::renderer::{RenderAdapter, RenderAdapterInfo, RenderDevice, RenderInstance, RenderQueue};
use bevy::render::settings::RenderCreation;
use bevy::time::TimeUpdateStrategy;
use bevy::window::ExitCondition;
use throng::ClipEvent;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH, WALK};
use throng::eval::expand::ExpandJob;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::graph::CompiledGraph;
use throng::import::gltf::{GltfOptions, load_gltf};
use throng::program::{ClipSample, LayerProgram, LayerRecord, OutputLayout, ShotRecord, swap_remove_row};
use throng::setup::layer_setups;
use throng::state::{Archetype, ArchetypeId, ClipBinding};
#[path = "../../tests/support/compare.rs"]
#[allow(dead_code, reason = "throng's shared helpers; these tests use some")]
mod compare;

use compare::{GPU_TOLERANCE, assert_matrices_close, worst_abs_diff};
use throng_bevy::{
    AgentParams, Character, CrowdAgent, CrowdEvaluator, CrowdEvent, Evaluation, FramePacket, Lod, ReadbackError,
    RootMotion, RowChange, ThrongCrowd, ThrongError, ThrongPlugin, ThrongRender, read_image_blocking,
};

const DT: f32 = 1.0 / 60.0;
const JOINTS: usize = 26;
const FLOATS_PER_ROW: usize = JOINTS * 16;

/// Bevy's renderer on a Vulkan device of our choosing, so that a machine without one skips.
fn render_creation() -> Option<RenderCreation> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = match pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())) {
        Ok(adapter) => adapter,
        Err(e) if std::env::var("THRONG_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("THRONG_REQUIRE_GPU=1 but no GPU adapter: {e}")
        }
        Err(e) => {
            eprintln!("skipping throng-bevy test: no GPU adapter ({e}); set THRONG_REQUIRE_GPU=1 to fail instead");
            return None;
        }
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..wgpu::DeviceDescriptor::default()
    }))
    .expect("the adapter gives a device with its own limits");
    Some(RenderCreation::manual(
        RenderDevice::from(device),
        RenderQueue::new(queue),
        RenderAdapterInfo::new(adapter.get_info()),
        RenderAdapter::new(adapter),
        RenderInstance::new(instance),
    ))
}

/// A headless app with the plugin and the demo archetype (its walk firing `footstep` at
/// 0.25 s), stepped by exactly `DT` each update.
fn app(evaluation: Evaluation) -> Option<(App, ArchetypeId)> {
    app_with(ThrongPlugin { evaluation, layout: OutputLayout::Mat4, lod: None })
}

fn app_with(plugin: ThrongPlugin) -> Option<(App, ArchetypeId)> {
    let render_creation = render_creation()?;
    let plugins = DefaultPlugins
        .set(WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() })
        .set(RenderPlugin { render_creation, ..default() });
    // With the `window` feature (CI's step builds Bevy once, for these tests and the windowed
    // example) Bevy's winit would start an event loop, which needs a display.
    #[cfg(feature = "window")]
    let plugins = plugins.disable::<bevy::winit::WinitPlugin>();
    let mut app = App::new();
    app.add_plugins((plugins, plugin));
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(DT)));
    while app.plugins_state() == bevy::app::PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
    let mut demo = DemoCharacter::humanoid();
    let walk = demo.clip_index(WALK).expect("the demo has a walk");
    demo.clips[walk] =
        demo.clips[walk].clone().with_events(vec![ClipEvent::new("footstep", 0.25)]).expect("a valid event");
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("the demo graph compiles"));
    let bound = demo.bind(graph).expect("the demo graph binds");
    let archetype = bound.archetype.with_events_from_clips(&bound.clips).expect("the walk's event fits the clip");
    let mut crowd = app.world_mut().resource_mut::<ThrongCrowd>();
    let id = crowd.add_archetype(archetype, demo.rig, bound.clips, bound.layers).expect("one setup per layer");
    crowd.set_mesh(id, demo.mesh).expect("the demo mesh is skinned to the demo rig");
    Some((app, id))
}

/// Spawns `count` agents with speeds spread over idle, walk and run (and every seventh
/// waving), so that transitions are in flight at different moments.
fn spawn_agents(app: &mut App, id: ArchetypeId, count: usize, first: usize) -> Vec<Entity> {
    let crowd = app.world().resource::<ThrongCrowd>();
    let speed = crowd.param(id, "speed").expect("the demo has speed");
    let wave = crowd.param(id, "wave").expect("the demo has wave");
    (first..first + count)
        .map(|i| {
            let mut params = AgentParams::default();
            params.set_float(speed, (i % 5) as f32);
            params.set_float(wave, if i % 7 == 0 { 1.0 } else { 0.0 });
            app.world_mut().spawn((CrowdAgent::new(id), params, Transform::default())).id()
        })
        .collect()
}

/// Stops the moving agents and starts the standing ones (at 2 m/s), so that every character is
/// in a transition, its evaluator memory in use, for the next 0.25 s: a row change then that
/// gave a row another character's memory would show in its matrices.
fn flip_speeds(app: &mut App, id: ArchetypeId, entities: &[Entity]) {
    let speed = app.world().resource::<ThrongCrowd>().param(id, "speed").expect("the demo has speed");
    for &entity in entities {
        let mut params = app.world_mut().get_mut::<AgentParams>(entity).expect("an agent");
        let now = params.float(speed).expect("spawned with a speed");
        params.set_float(speed, if now > 0.0 { 0.0 } else { 2.0 });
    }
}

/// The output buffer of the first archetype, read back from Bevy's device.
fn read_output(app: &App) -> Vec<f32> {
    let render = app.sub_app(RenderApp).world().resource::<ThrongRender>();
    assert!(render.errors().is_empty(), "evaluation refused: {:?}", render.errors());
    render.crowd(0).expect("the archetype has an evaluator").read_output_blocking().expect("readback")
}

fn no_errors(app: &mut App) {
    let errors: Vec<ThrongError> = app.world_mut().resource_mut::<Messages<ThrongError>>().drain().collect();
    assert!(errors.is_empty(), "the plugin refused: {errors:?}");
}

/// The CPU evaluator, fed the frames the plugin extracted, as an engine would run it.
struct Reference {
    context: EvalContext,
    matrices: Vec<f32>,
    started: bool,
}

impl Reference {
    fn new() -> Self {
        Self { context: EvalContext::default(), matrices: Vec::new(), started: false }
    }

    fn run(&mut self, packet: &FramePacket) -> &[f32] {
        let frame = &packet.archetypes[0];
        let assets = &frame.assets;
        if !self.started {
            self.context = EvalContext::for_layers(0, &assets.layers, assets.rig.num_joints());
            self.started = true;
        }
        for change in &frame.changes {
            match *change {
                RowChange::Resize(rows) => {
                    self.context.resize(rows);
                    self.matrices.resize(rows * FLOATS_PER_ROW, 0.0);
                }
                RowChange::SwapRemove(row) => {
                    self.context.swap_remove(row);
                    swap_remove_row(&mut self.matrices, row, FLOATS_PER_ROW);
                }
            }
        }
        let records = frame.records.frame();
        let characters = records.records().len() / assets.layers.len();
        self.matrices.resize(characters * FLOATS_PER_ROW, 0.0);
        let mut clips_sampled = vec![0; characters];
        // The frame's records expanded on the CPU, as the reference evaluator reads them.
        let mut programs = vec![LayerProgram::default(); records.records().len()];
        let mut samples = vec![ClipSample::default(); characters * assets.tables.samples_per_character()];
        ExpandJob::of_frame(&assets.tables, &assets.trees, &records, &mut programs, &mut samples)
            .run()
            .expect("the step's records expand");
        let job = FrameJob {
            rig: &assets.rig,
            clips: &assets.clips,
            layers: &assets.layers,
            samples: &samples,
            programs: &programs,
            dt_s: frame.dt_s,
            context: &mut self.context,
            layout: OutputLayout::Mat4,
            output: &mut self.matrices,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        };
        match &frame.due {
            Some(due) => job.run_due(due.as_rows()),
            None => job.run(),
        }
        .expect("the step's programs evaluate");
        &self.matrices
    }
}

#[test]
fn output_on_bevys_device_matches_the_cpu_evaluator() {
    for evaluation in [Evaluation::Gpu, Evaluation::Cpu] {
        let Some((mut app, id)) = app(evaluation) else { return };
        spawn_agents(&mut app, id, 200, 0);
        let mut reference = Reference::new();
        let mut uploaded = 0;
        for frame in 0..60 {
            app.update();
            no_errors(&mut app);
            let packet = app.world().resource::<FramePacket>().clone();
            assert_eq!(packet.archetypes[0].records.frame().records().len(), 200 * 3, "every agent has a character");
            let expected = reference.run(&packet).to_vec();
            let got = read_output(&app);
            assert_matrices_close(&expected, &got, 16, JOINTS, GPU_TOLERANCE, &format!("{evaluation:?} frame {frame}"));
            let render = app.sub_app(RenderApp).world().resource::<ThrongRender>();
            if let Some(CrowdEvaluator::Gpu(gpu)) = render.crowd(0) {
                // The GPU evaluator took the records: what it uploads is records, shot records
                // and inputs, each with its index, at most all of them.
                let bytes = gpu.record_bytes_uploaded();
                let entries = 3 * (8 + size_of::<LayerRecord>() + size_of::<ShotRecord>()) + 4 + 4;
                let everything = (4 * throng::gpu::UPLOAD_HEADER_WORDS + 200 * entries) as u64;
                assert!(bytes <= everything, "frame {frame}: {bytes} B");
                uploaded += bytes;
            }
        }
        if evaluation == Evaluation::Gpu {
            assert!(uploaded > 0, "the GPU evaluator uploaded no records");
        }
        let render = app.sub_app(RenderApp).world().resource::<ThrongRender>();
        assert!(render.fallback().is_none(), "the GPU evaluator ran: {:?}", render.fallback());
    }
}

#[test]
fn spawns_and_despawns_keep_the_others_and_the_mapping() {
    let Some((mut app, id)) = app(Evaluation::Gpu) else { return };
    let mut entities = spawn_agents(&mut app, id, 40, 0);
    let mut reference = Reference::new();
    for frame in 0..30 {
        if frame == 8 || frame == 18 {
            flip_speeds(&mut app, id, &entities);
        }
        if frame == 10 || frame == 20 {
            // Despawn a few from the middle and the end (throng swap-removes their rows), and
            // add some in the same frame.
            for victim in [Some(3), Some(17), None, Some(0)] {
                let entity = entities.swap_remove(victim.unwrap_or(entities.len() - 1));
                app.world_mut().despawn(entity);
            }
            entities.extend(spawn_agents(&mut app, id, 3, 100 + frame));
        }
        app.update();
        no_errors(&mut app);
        let expected = reference.run(&app.world().resource::<FramePacket>().clone()).to_vec();
        let got = read_output(&app);
        assert_matrices_close(&expected, &got, 16, JOINTS, GPU_TOLERANCE, &format!("frame {frame}"));
        // Every live entity maps to its own character and back, through the rows.
        let crowd = app.world().resource::<ThrongCrowd>();
        assert_eq!(crowd.crowd().num_characters(id).expect("known"), entities.len());
        for &entity in &entities {
            let handle = crowd.character(entity).expect("a live agent has a character");
            assert_eq!(app.world().get::<Character>(entity).map(|c| c.handle()), Some(handle));
            assert_eq!(crowd.entity(handle), Some(entity));
            let (_, row) = crowd.crowd().row_of(handle).expect("a live handle");
            assert_eq!(crowd.entity_at(id, row), Some(entity));
        }
    }
    assert_eq!(entities.len(), 40 - 8 + 6);
}

#[test]
fn a_despawn_leaves_the_other_characters_matrices_unchanged() {
    // Two identical crowds; one loses a character mid-run, while every character is in a
    // transition. The survivors' matrices must equal the untouched crowd's row by row, wherever
    // the despawn moved them: the last row (running, now stopping) moves into the victim's
    // (standing, now starting to walk), and must take its own transition's memory along.
    const VICTIM: usize = 5;
    let Some((mut whole, id)) = app(Evaluation::Gpu) else { return };
    let Some((mut cut, cut_id)) = app(Evaluation::Gpu) else { return };
    let whole_entities = spawn_agents(&mut whole, id, 30, 0);
    let cut_entities = spawn_agents(&mut cut, cut_id, 30, 0);
    for frame in 0..40 {
        if frame == 12 {
            flip_speeds(&mut whole, id, &whole_entities);
            flip_speeds(&mut cut, cut_id, &cut_entities);
        }
        if frame == 15 {
            cut.world_mut().despawn(cut_entities[VICTIM]);
        }
        whole.update();
        cut.update();
        no_errors(&mut whole);
        no_errors(&mut cut);
        let whole_out = read_output(&whole);
        let cut_out = read_output(&cut);
        let whole_crowd = whole.world().resource::<ThrongCrowd>();
        let cut_crowd = cut.world().resource::<ThrongCrowd>();
        for (i, (&w, &c)) in whole_entities.iter().zip(&cut_entities).enumerate() {
            if frame >= 15 && i == VICTIM {
                assert!(cut_crowd.character(c).is_none(), "the despawned entity has no character");
                continue;
            }
            let (_, w_row) = whole_crowd.crowd().row_of(whole_crowd.character(w).expect("live")).expect("live");
            let (_, c_row) = cut_crowd.crowd().row_of(cut_crowd.character(c).expect("live")).expect("live");
            let a = &whole_out[w_row * FLOATS_PER_ROW..(w_row + 1) * FLOATS_PER_ROW];
            let b = &cut_out[c_row * FLOATS_PER_ROW..(c_row + 1) * FLOATS_PER_ROW];
            let worst = worst_abs_diff(a, b);
            assert!(worst < 1e-5, "frame {frame}, agent {i}: worst difference {worst}");
        }
    }
}

#[test]
fn root_motion_moves_transforms_by_what_throng_reports() {
    let Some((mut app, id)) = app(Evaluation::Gpu) else { return };
    let entities = spawn_agents(&mut app, id, 10, 0);
    // Half opt in; the others must not move. The first is turned so that travel turns with it.
    for (i, &entity) in entities.iter().enumerate() {
        if i % 2 == 0 {
            app.world_mut().entity_mut(entity).insert(RootMotion);
        }
    }
    app.world_mut().entity_mut(entities[0]).insert(Transform::from_rotation(Quat::from_rotation_y(0.5)));
    let mut expected: Vec<Transform> =
        entities.iter().map(|&e| *app.world().get::<Transform>(e).expect("placed")).collect();
    for _ in 0..90 {
        app.update();
        no_errors(&mut app);
        let crowd = app.world().resource::<ThrongCrowd>();
        let deltas = crowd.root_motion(id);
        for (i, &entity) in entities.iter().enumerate() {
            if i % 2 == 0 {
                let (_, row) = crowd.crowd().row_of(crowd.character(entity).expect("live")).expect("live");
                let delta = deltas[row];
                let e = &mut expected[i];
                e.translation += e.rotation * Vec3::from_array(delta.translation.to_array());
                e.rotation *= Quat::from_rotation_y(delta.yaw);
            }
            let got = app.world().get::<Transform>(entity).expect("placed");
            let moved = worst_abs_diff(&got.translation.to_array(), &expected[i].translation.to_array());
            let turned = worst_abs_diff(&got.rotation.to_array(), &expected[i].rotation.to_array());
            assert!(moved < 1e-5 && turned < 1e-5, "agent {i}: {got:?} vs {:?}", expected[i]);
        }
    }
    // Speeds 0..4 by index: the walkers and runners that opted in travelled, the idle one did not.
    let travelled = |i: usize| app.world().get::<Transform>(entities[i]).expect("placed").translation.length();
    assert!(travelled(2) > 1.0 && travelled(4) > 3.0, "walkers move: {} {}", travelled(2), travelled(4));
    assert!(travelled(1) == 0.0 && travelled(3) == 0.0, "opted-out agents stay");
}

#[test]
fn events_arrive_once_with_their_entity() {
    let Some((mut app, id)) = app(Evaluation::Gpu) else { return };
    let entities = spawn_agents(&mut app, id, 10, 0);
    let mut seen: Vec<CrowdEvent> = Vec::new();
    for _ in 0..180 {
        app.update();
        no_errors(&mut app);
        let crowd = app.world().resource::<ThrongCrowd>();
        let fired: Vec<_> = crowd.crowd().events(id).expect("known").to_vec();
        let delivered: Vec<CrowdEvent> = app.world_mut().resource_mut::<Messages<CrowdEvent>>().drain().collect();
        let crowd = app.world().resource::<ThrongCrowd>();
        // Exactly the step's events, each once, each with the entity of its character.
        assert_eq!(delivered.len(), fired.len());
        for (message, event) in delivered.iter().zip(&fired) {
            assert_eq!(message.event, *event);
            assert_eq!(crowd.character(message.entity), Some(event.character));
        }
        seen.extend(delivered);
    }
    // Walkers (speed 1) fire footsteps; idle agents (speed 0: agents 0 and 5) never do.
    assert!(seen.iter().any(|m| m.entity == entities[1]), "the walker's footsteps arrived");
    assert!(!seen.iter().any(|m| m.entity == entities[0] || m.entity == entities[5]), "idle agents fire nothing");
}

const WIDTH: u32 = 320;
const HEIGHT: u32 = 192;

/// Where the image tests' camera stands, looking at the crowd's middle.
const CAMERA_AT: Vec3 = Vec3::new(0.0, 5.0, 14.0);

/// A camera at `eye` rendering into a new `WIDTH` × `HEIGHT` image that can be read back; the
/// image's handle.
fn image_camera(app: &mut App, eye: Transform) -> Handle<Image> {
    let mut image = Image::new_target_texture(WIDTH, HEIGHT, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    app.world_mut().spawn((Camera3d::default(), RenderTarget::Image(target.clone().into()), Msaa::Off, eye));
    target
}

/// A camera rendering into a new `WIDTH` × `HEIGHT` image that can be read back, and 25 agents
/// on a 5 × 5 grid in its view, moved by their root motion; the image's handle.
fn camera_on_a_crowd(app: &mut App, id: ArchetypeId) -> Handle<Image> {
    let target =
        image_camera(app, Transform::from_translation(CAMERA_AT).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y));
    let agents = spawn_agents(app, id, 25, 0);
    for (i, &entity) in agents.iter().enumerate() {
        let at = Vec3::new((i % 5) as f32 * 2.0 - 4.0, 0.0, (i / 5) as f32 * 2.0 - 4.0);
        app.world_mut().entity_mut(entity).insert((Transform::from_translation(at), RootMotion));
    }
    target
}

#[test]
fn the_crowd_is_drawn_and_moves() {
    let Some((mut app, id)) = app(Evaluation::Gpu) else { return };
    let target = camera_on_a_crowd(&mut app, id);
    // What the readback refuses: an image not on the device yet, one that cannot be copied
    // from, one that is not RGBA8.
    let read = |app: &App, image: &Handle<Image>| read_image_blocking(app.sub_app(RenderApp).world(), image);
    assert!(matches!(read(&app, &target), Err(ReadbackError::NotOnDevice)), "read before the first update");
    let mut images = app.world_mut().resource_mut::<Assets<Image>>();
    let plain = images.add(Image::new_target_texture(8, 8, TextureFormat::Rgba8UnormSrgb, None));
    let mut float = Image::new_target_texture(8, 8, TextureFormat::Rgba16Float, None);
    float.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    let float = images.add(float);
    let mut frames = Vec::new();
    for frame in 0..40 {
        app.update();
        no_errors(&mut app);
        if frame == 0 {
            assert!(matches!(read(&app, &plain), Err(ReadbackError::NotCopySource)), "an image without COPY_SRC");
            let refused = read(&app, &float);
            assert!(matches!(refused, Err(ReadbackError::Format(TextureFormat::Rgba16Float))), "{refused:?}");
        }
        if frame == 10 || frame == 39 {
            let pixels = read(&app, &target).expect("the target reads back");
            assert_eq!((pixels.width, pixels.height), (WIDTH, HEIGHT));
            frames.push(pixels.rgba);
        }
    }
    // Walkers and runners moved between the two frames.
    assert_drawn_and_moved(&frames, "crowd", 200);
}

/// Saves two frames of the image tests' target as `NAME_0.png` and `NAME_1.png` under
/// `target/tmp/throng-bevy/` (the tests' artifacts), then checks the first is not empty (more
/// than 1 in 50 pixels differ from the background, the top-left corner, sky above the crowd)
/// and that more than 1 in `changed_one_in` pixels changed between the two.
fn assert_drawn_and_moved(frames: &[Vec<u8>], name: &str, changed_one_in: usize) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("throng-bevy");
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    for (k, pixels) in frames.iter().enumerate() {
        let path = dir.join(format!("{name}_{k}.png"));
        image::save_buffer(&path, pixels, WIDTH, HEIGHT, image::ExtendedColorType::Rgba8).expect("the PNG is written");
        eprintln!("rendered image: {}", path.display());
    }
    let background = &frames[0][..4];
    let drawn = frames[0].chunks(4).filter(|p| p[..3] != background[..3]).count();
    let total = (WIDTH * HEIGHT) as usize;
    assert!(drawn > total / 50, "{name}: {drawn} of {total} pixels drawn");
    let changed = frames[0].chunks(4).zip(frames[1].chunks(4)).filter(|(a, b)| a != b).count();
    assert!(changed > total / changed_one_in, "{name}: {changed} of {total} pixels changed");
}

#[test]
fn lod_by_camera_distance_skips_distant_characters_and_matches_the_cpu() {
    for evaluation in [Evaluation::Gpu, Evaluation::Cpu] {
        let lod = Lod { distances_m: [6.0, 12.0, 24.0, 48.0] };
        let Some((mut app, id)) = app_with(ThrongPlugin { evaluation, layout: OutputLayout::Mat4, lod: Some(lod) })
        else {
            return;
        };
        app.world_mut().spawn((Camera3d::default(), Transform::default()));
        let agents = spawn_agents(&mut app, id, 40, 0);
        // In a line away from the camera, 2 m apart: every rate from 1 to 16.
        for (i, &entity) in agents.iter().enumerate() {
            app.world_mut().entity_mut(entity).insert(Transform::from_xyz(0.0, 0.0, -2.0 * i as f32));
        }
        let mut reference = Reference::new();
        let mut previous: Vec<f32> = Vec::new();
        let mut skipped = 0;
        for frame in 0..48 {
            app.update();
            no_errors(&mut app);
            let packet = app.world().resource::<FramePacket>().clone();
            let expected = reference.run(&packet).to_vec();
            let got = read_output(&app);
            assert_matrices_close(&expected, &got, 16, JOINTS, GPU_TOLERANCE, &format!("{evaluation:?} frame {frame}"));
            let due = packet.archetypes[0].due.as_ref().expect("LOD gives a due list");
            if frame > 1 {
                // Rows not due show what they showed.
                for row in (0..agents.len()).filter(|row| !due.rows.contains(&(*row as u32))) {
                    let span = row * FLOATS_PER_ROW..(row + 1) * FLOATS_PER_ROW;
                    assert_eq!(got[span.clone()], previous[span], "{evaluation:?} frame {frame}: row {row} not due");
                    skipped += 1;
                }
            }
            previous = got;
        }
        // The nearest agents are due every frame, the farthest one frame in 16.
        let crowd = app.world().resource::<ThrongCrowd>();
        let rate = |i: usize| crowd.crowd().update_rate(crowd.character(agents[i]).expect("live")).expect("live");
        assert_eq!((rate(0), rate(39)), (1, 16));
        assert!(skipped > 40 * 46 / 3, "{evaluation:?}: only {skipped} row-frames skipped");
    }
}

/// The characters are lit by Bevy's lights: under the ambient light alone they are dim and
/// grey; a red directional light from the camera's side makes them redder by far and leaves
/// their green as it was.
#[test]
fn the_draw_is_lit_by_bevys_lights() {
    let Some((mut app, id)) = app(Evaluation::Gpu) else { return };
    let target = camera_on_a_crowd(&mut app, id);
    app.insert_resource(GlobalAmbientLight { color: Color::WHITE, brightness: 100.0, ..default() });
    // Mean red and green (0–255) of the pixels that are not the background (the top-left
    // corner, sky above the crowd), after a few frames.
    let shade = |app: &mut App| {
        for _ in 0..3 {
            app.update();
            no_errors(app);
        }
        let pixels = read_image_blocking(app.sub_app(RenderApp).world(), &target).expect("the target reads back");
        let background = [pixels.rgba[0], pixels.rgba[1], pixels.rgba[2]];
        let drawn: Vec<&[u8]> = pixels.rgba.chunks(4).filter(|p| p[..3] != background).collect();
        assert!(drawn.len() > pixels.rgba.len() / 4 / 50, "{} pixels drawn", drawn.len());
        let mean = |c: usize| drawn.iter().map(|p| f64::from(p[c])).sum::<f64>() / drawn.len() as f64;
        (mean(0), mean(1))
    };
    let (ambient_red, ambient_green) = shade(&mut app);
    app.world_mut().spawn((
        DirectionalLight { color: Color::srgb(1.0, 0.0, 0.0), illuminance: 4_000.0, ..default() },
        Transform::from_translation(CAMERA_AT).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let (lit_red, lit_green) = shade(&mut app);
    assert!(lit_red > ambient_red + 40.0, "red light: red {ambient_red:.1} -> {lit_red:.1}");
    assert!(
        (lit_green - ambient_green).abs() < 0.25 * (lit_red - ambient_red),
        "red light: green {ambient_green:.1} -> {lit_green:.1}, red {ambient_red:.1} -> {lit_red:.1}"
    );
}

/// A glTF mesh loaded through throng's importer is drawn as the built-in humanoid is: Khronos'
/// RiggedFigure (its animation on a one-state graph, its skinned mesh by `set_mesh`), nine
/// figures in the camera's view, is not empty and moves. Skips without `../shared/data`, or
/// fails with `THRONG_REQUIRE_DATA=1`.
#[test]
fn a_gltf_mesh_is_drawn_and_moves() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/gltf/RiggedFigure/RiggedFigure.gltf");
    if !path.is_file() {
        assert!(
            std::env::var("THRONG_REQUIRE_DATA").as_deref() != Ok("1"),
            "THRONG_REQUIRE_DATA=1 but {} is missing",
            path.display()
        );
        eprintln!("skipping: glTF sample data not found at {}", path.display());
        return;
    }
    let Some((mut app, _)) = app(Evaluation::Gpu) else { return };
    let options = GltfOptions { merge_animations: true, ..GltfOptions::default() };
    let asset = load_gltf(&path, &options).expect("RiggedFigure loads");
    let mesh = asset.mesh.expect("RiggedFigure has a skinned mesh");
    let duration_s = asset.clips.first().expect("RiggedFigure is animated").duration_s();
    let graph = CompiledGraph::from_json(
        r#"{ "parameters": {}, "layers": [ { "name": "Base", "states": [ { "name": "START" }, { "name": "Play", "defaultState": true } ] } ] }"#,
    )
    .expect("the one-state graph compiles");
    let graph = Arc::new(graph);
    let layers = layer_setups(&graph, &asset.rig).expect("one layer");
    let archetype = Archetype::from_bindings(graph, &[("Play", ClipBinding { clip: 0, duration_s })]).expect("binds");
    let mut crowd = app.world_mut().resource_mut::<ThrongCrowd>();
    let id = crowd.add_archetype(archetype, asset.rig, asset.clips, layers).expect("one setup per layer");
    crowd.set_mesh(id, mesh).expect("the figure's mesh is skinned to its rig");

    let target =
        image_camera(&mut app, Transform::from_xyz(0.0, 2.0, 6.0).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y));
    for i in 0..9 {
        let at = Vec3::new((i % 3) as f32 * 1.5 - 1.5, 0.0, (i / 3) as f32 * 1.5 - 1.5);
        app.world_mut().spawn((CrowdAgent::new(id), AgentParams::default(), Transform::from_translation(at)));
    }
    let mut frames = Vec::new();
    for frame in 0..30 {
        app.update();
        no_errors(&mut app);
        if frame == 5 || frame == 29 {
            let pixels = read_image_blocking(app.sub_app(RenderApp).world(), &target).expect("the target reads back");
            frames.push(pixels.rgba);
        }
    }
    // The figures play their animation between the two frames.
    assert_drawn_and_moved(&frames, "gltf", 500);
}
