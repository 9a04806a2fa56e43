//! throng embedded in an engine: a minimal program with its own wgpu device, its own renderer
//! and its own shader, using throng only through its public API, as `docs/embedding.md`
//! describes. Each frame gameplay sets parameters in batches, throng steps the state graphs on
//! the CPU and records its compute pass into the engine's command encoder, the engine moves
//! its characters by their root motion, and its render pass skins the mesh with the matrices
//! throng left in its output buffer. The last frame is written to a PNG.
//!
//! ```text
//! cargo run --example embed -- --frames 90 --characters 36 --size 640x360 --out embed.png
//! ```

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use glam::camera::rh::{proj::directx, view::look_at_mat4};
use glam::{Quat, Vec3};
use throng::demo::DemoCharacter;
use throng::eval::root_motion::{RootDelta, records_root_motion};
use throng::gpu::{GpuCrowd, GpuCrowdOptions, SkinWindow};
use throng::graph::CompiledGraph;
use throng::mesh::{SkinnedMesh, SkinnedVertex};
use throng::program::OutputLayout;
use throng::setup::bind_archetype;
use throng::state::Crowd;

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: embed [--frames N] [--characters N] [--size WxH] [--out PATH] [--max-binding-kib N]";

/// The engine's state graph, from memory (a file's contents would do as well): idle, a
/// walk/run blend on `speed`, a jump on `jump`, and a right-arm wave layer faded by `wave`.
const GRAPH: &str = r#"{
  "parameters": {
    "speed": { "name": "speed", "type": "FLOAT", "value": 0 },
    "jump": { "name": "jump", "type": "TRIGGER", "value": false },
    "wave": { "name": "wave", "type": "FLOAT", "value": 0 }
  },
  "defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } },
  "layers": [
    { "name": "Base",
      "states": [
        { "name": "START" },
        { "name": "Idle", "defaultState": true, "rootMotion": true },
        { "name": "Move", "rootMotion": true, "blendTree": { "type": "1D", "parameter": "speed", "syncAnimations": true,
          "children": [ { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0 } ] } },
        { "name": "Jump", "loop": false, "rootMotion": true }
      ],
      "transitions": [
        { "from": "Idle", "to": "Move", "time": 0.3,
          "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }] },
        { "from": "Move", "to": "Idle", "time": 0.3,
          "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN_EQUAL_TO", "value": 0.5 }] },
        { "from": "Idle", "to": "Jump", "time": 0.2,
          "conditions": [{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Move", "to": "Jump", "time": 0.2,
          "conditions": [{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Jump", "to": "Idle", "time": 0.25, "exitTime": 0.75 }
      ] },
    { "name": "Wave", "weightParameter": "wave", "mask": { "clavicle_r/*": 1.0 },
      "states": [ { "name": "START" }, { "name": "Wave", "defaultState": true } ] }
  ]
}"#;

/// The engine's shader. Group 0 binding 0 is a window of throng's output buffer, in the
/// `Affine3x4` layout: character `i`, joint `j` at `skin[(i - first_character) * num_joints +
/// j]`, each the top three rows of the skinning matrix, so `p * m` (a `vec4` times a `mat3x4`)
/// transforms `p`.
const SHADER: &str = r"
@group(0) @binding(0) var<storage, read> skin: array<mat3x4<f32>>;
struct Scene { view_proj: mat4x4<f32>, num_joints: u32, first_character: u32 }
@group(0) @binding(1) var<uniform> scene: Scene;

struct Out { @builtin(position) clip: vec4<f32>, @location(0) normal: vec3<f32>, @location(1) colour: vec3<f32> }

@vertex
fn vs(@builtin(instance_index) character: u32,
      @location(0) position: vec3<f32>, @location(1) normal: vec3<f32>,
      @location(2) joints: vec4<u32>, @location(3) weights: vec4<f32>,
      @location(4) placement: vec4<f32>) -> Out {
    let base = (character - scene.first_character) * scene.num_joints;
    let m = weights.x * skin[base + joints.x] + weights.y * skin[base + joints.y]
          + weights.z * skin[base + joints.z] + weights.w * skin[base + joints.w];
    let model = vec4<f32>(position, 1.0) * m;
    let model_normal = vec4<f32>(normal, 0.0) * m;
    // The engine's own transform of the character: its heading about +Y, then its position.
    let c = cos(placement.w);
    let s = sin(placement.w);
    let heading = mat3x3<f32>(vec3<f32>(c, 0.0, -s), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(s, 0.0, c));
    var out: Out;
    out.clip = scene.view_proj * vec4<f32>(heading * model + placement.xyz, 1.0);
    out.normal = heading * model_normal;
    let h = (character * 2654435761u) >> 16u;
    out.colour = vec3<f32>(f32(h & 255u), f32((h >> 4u) & 255u), f32((h >> 8u) & 255u)) / 400.0 + 0.2;
    return out;
}

@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let light = 0.35 + 0.65 * max(dot(normalize(in.normal), normalize(vec3<f32>(0.4, 0.8, 0.5))), 0.0);
    return vec4<f32>(in.colour * light, 1.0);
}
";

const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
const CLEAR: wgpu::Color = wgpu::Color { r: 0.05, g: 0.06, b: 0.08, a: 1.0 };

struct Args {
    frames: u32,
    characters: usize,
    width: u32,
    height: u32,
    out: PathBuf,
    /// Ask for a device whose storage bindings hold at most this many KiB, as a small GPU's
    /// would: throng then evaluates in more chunks and the engine draws in more windows.
    max_binding_kib: Option<u32>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        frames: 90,
        characters: 36,
        width: 640,
        height: 360,
        out: PathBuf::from("embed.png"),
        max_binding_kib: None,
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value\n{USAGE}"))?;
        let number = |v: &str| v.parse::<u32>().map_err(|_| format!("{flag} needs a whole number, got {v:?}\n{USAGE}"));
        match flag.as_str() {
            "--frames" => a.frames = number(&value)?.max(1),
            "--characters" => a.characters = number(&value)?.max(1) as usize,
            "--out" => a.out = PathBuf::from(value),
            "--max-binding-kib" => a.max_binding_kib = Some(number(&value)?.max(1)),
            "--size" => {
                let (w, h) = value.split_once('x').ok_or(format!("--size needs WxH, got {value:?}\n{USAGE}"))?;
                (a.width, a.height) = (number(w)?.clamp(16, 4096), number(h)?.clamp(16, 4096));
            }
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    Ok(a)
}

fn main() {
    let args = parse_args(std::env::args().skip(1)).unwrap_or_else(|message| {
        eprintln!("embed: {message}");
        std::process::exit(2);
    });
    if let Err(e) = run(&args) {
        eprintln!("embed: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Error> {
    // 1. The engine's device and queue. throng asks nothing special of them; requesting the
    //    adapter's limits (wgpu's defaults cap a buffer at 256 MiB) lets large crowds fit in
    //    fewer dispatches. The engine owns its device's error handling: wgpu's default handler
    //    panics, this one keeps the first error and fails the run with it.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(wgpu::util::initialize_adapter_from_env_or_default(&instance, None))?;
    let mut limits = adapter.limits();
    if let Some(kib) = args.max_binding_kib {
        limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(u64::from(kib) << 10);
    }
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("engine"),
        required_limits: limits,
        ..Default::default()
    }))?;
    let wgpu_error = Arc::new(Mutex::new(None::<String>));
    let record = Arc::clone(&wgpu_error);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        if let Ok(mut slot) = record.lock() {
            slot.get_or_insert_with(|| e.to_string());
        }
    }));

    // 2. Assets: a rig, its clips and a skinned mesh. The built-in humanoid stands in for what
    //    the engine would load (`throng::import::gltf::load_gltf` returns the same three).
    //    Each leaf of the graph ("Idle", "Move.Walk", …) plays the clip named by the last
    //    segment of its path, lower-cased.
    let DemoCharacter { rig, clips, mesh } = DemoCharacter::humanoid();
    let graph = Arc::new(CompiledGraph::from_json(GRAPH)?);
    let bound = bind_archetype(graph, &rig, &clips, None, |path| {
        let name = path.rsplit('.').next()?.to_lowercase();
        clips.iter().position(|clip| clip.name() == name)
    })?;

    // 3. The characters, and gameplay's parameters for them, set in batches: a quarter stand,
    //    the others walk or run at their own pace; every fifth waves; every seventh jumps a
    //    third of the way in.
    let n = args.characters;
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype);
    let handles = (0..n).map(|_| crowd.spawn(kind)).collect::<Result<Vec<_>, _>>()?;
    let (speed, jump, wave) = (crowd.param(kind, "speed")?, crowd.param(kind, "jump")?, crowd.param(kind, "wave")?);
    let speeds: Vec<f32> = (0..n).map(|i| [0.0, 1.2, 2.0, 3.5][(i * 3 + i / 5) % 4]).collect();
    crowd.set_float(speed, &handles, &speeds)?;
    let wavers: Vec<_> = handles.iter().copied().step_by(5).collect();
    crowd.set_float(wave, &wavers, &vec![1.0; wavers.len()])?;
    let jumpers: Vec<_> = handles.iter().copied().skip(3).step_by(7).collect();

    // 4. The animation on the engine's device: clips and layers uploaded once, then one frame
    //    of state records each update (what changed), expanded on the device.
    let options = GpuCrowdOptions { layout: OutputLayout::Affine3x4, ..GpuCrowdOptions::default() };
    let mut animation = GpuCrowd::with_layers(&device, &queue, &rig, &bound.clips, &bound.layers, options)?;
    // The state step's records are expanded on the device: the archetype's tables and trees,
    // once (kept: root motion expands the records' base layers with them).
    let (tables, trees) = crowd.archetype(kind)?.expansion();
    let (tables, trees) = (tables.clone(), trees.clone());
    animation.set_expansion(&tables, &trees)?;
    let renderer = Renderer::new(&device, &mesh, rig.num_joints(), (args.width, args.height), n)?;

    // Where the engine keeps its characters, by row (spawn order while nobody is despawned;
    // `Crowd::row_of` and `Crowd::handle_at` map handles and rows): x, y, z and the heading
    // about +Y. A grid facing the camera, each turning at its own rate.
    let columns = (n as f32).sqrt().ceil() as usize;
    let spacing_m = 2.2;
    let half_m = (columns - 1) as f32 * spacing_m / 2.0;
    let mut placements: Vec<[f32; 4]> = (0..n)
        .map(|i| [(i % columns) as f32 * spacing_m - half_m, 0.0, (i / columns) as f32 * spacing_m - half_m, 0.0])
        .collect();
    let turn_rad_per_s: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 / 10.0 - 0.5).collect();

    let dt_s = 1.0 / 60.0;
    let mut travel = vec![RootDelta::default(); n];
    let mut skin: Option<(usize, Vec<(SkinWindow, wgpu::BindGroup)>)> = None;
    for frame in 0..args.frames {
        if frame == args.frames / 3 {
            crowd.set_trigger(jump, &jumpers, true)?;
        }
        crowd.update(dt_s)?;
        let records = crowd.record_frame(kind)?;

        // Root motion: the evaluator removed it from the poses; the engine moves each character
        // by it, rotated into the world by the character's heading. From the records (each base
        // layer expanded alone on the CPU; the GPU expands every layer).
        records_root_motion(&bound.clips, &tables, &trees, &records, &mut travel)?;
        for ((p, delta), turn) in placements.iter_mut().zip(&travel).zip(&turn_rad_per_s) {
            let step = Quat::from_rotation_y(p[3]) * delta.translation;
            p[0] += step.x;
            p[2] += step.z;
            p[3] += delta.yaw + turn * dt_s;
        }

        // throng's compute pass, then the engine's render pass reading its output, in one
        // encoder: wgpu orders the two. The output buffer is replaced only when the number of
        // characters changes; rebuild the bind groups holding it then, one per window of
        // characters that one storage binding can hold (one window for a small crowd).
        animation.set_frame_records(&records, dt_s)?;
        if skin.as_ref().is_none_or(|(count, _)| *count != animation.num_characters()) {
            // One buffer unless the output outgrew the device's largest buffer; each window
            // names the buffer that holds it.
            let outputs = animation.output_buffers();
            if outputs.is_empty() {
                return Err("throng has no output buffer after set_frame_records".into());
            }
            skin = Some((animation.num_characters(), renderer.bind_skin(&device, outputs, &animation.skin_windows()?)));
        }
        queue.write_buffer(&renderer.placements, 0, bytemuck::cast_slice(&placements));
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("engine.frame") });
        animation.encode(&mut encoder);
        if let Some((_, windows)) = &skin {
            renderer.draw(&mut encoder, windows);
        }
        queue.submit([encoder.finish()]);
    }

    // The base layer's states, read back in one batch (row order), for the engine's logic.
    let mut states = Vec::new();
    crowd.readback_rows(kind, 0, &mut states)?;
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for state in &states {
        let name = crowd.state_name(kind, state.active_state).unwrap_or("?");
        match counts.iter_mut().find(|(known, _)| *known == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    let counts: Vec<String> = counts.iter().map(|(name, count)| format!("{name} {count}")).collect();
    let windows = skin.as_ref().map_or(0, |(_, windows)| windows.len());
    println!(
        "embed: {n} characters, {} frames on {}; {} compute chunks, {windows} draw windows; base layer states: {}",
        args.frames,
        adapter.get_info().name,
        animation.num_chunks(),
        counts.join(", ")
    );

    renderer.save_png(&device, &queue, &args.out)?;
    if let Some(e) = wgpu_error.lock().map_err(|_| "the error handler panicked")?.take() {
        return Err(format!("wgpu error: {e}").into());
    }
    println!("embed: wrote {} ({}x{})", args.out.display(), args.width, args.height);
    Ok(())
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SceneUniform {
    view_proj: [f32; 16],
    num_joints: u32,
    first_character: u32,
    pad: [u32; 2],
}

/// The engine's renderer: one pipeline drawing the skinned mesh once per character into an
/// offscreen target.
struct Renderer {
    pipeline: wgpu::RenderPipeline,
    skin_layout: wgpu::BindGroupLayout,
    view_proj: [f32; 16],
    num_joints: u32,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    num_indices: u32,
    /// Per character: position (xyz) and heading (w), one instance each.
    placements: wgpu::Buffer,
    target: wgpu::Texture,
    color: wgpu::TextureView,
    depth: wgpu::TextureView,
}

impl Renderer {
    /// Buffers and the pipeline for `characters` instances of `mesh`, skinned to a rig of
    /// `num_joints` joints, drawn into a `width × height` target.
    fn new(
        device: &wgpu::Device,
        mesh: &SkinnedMesh,
        num_joints: usize,
        (width, height): (u32, u32),
        characters: usize,
    ) -> Result<Self, Error> {
        // The shader indexes the character's matrices by the vertices' joints: one past the
        // rig would read the next character's.
        mesh.validate(num_joints)?;
        let vertices = mesh.to_vertices();
        let init = |label, contents: &[u8], usage| {
            wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage },
            )
        };
        let storage = wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: true },
            has_dynamic_offset: false,
            min_binding_size: None,
        };
        let uniform = wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        };
        let skin_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("engine.skin"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: storage,
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: uniform,
                    count: None,
                },
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("engine.characters"),
            bind_group_layouts: &[Some(&skin_layout)],
            immediate_size: 0,
        });
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("engine.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let instance_attributes = wgpu::vertex_attr_array![4 => Float32x4];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("engine.characters"),
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &shader,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[
                    Some(SkinnedVertex::LAYOUT),
                    Some(wgpu::VertexBufferLayout {
                        array_stride: 16,
                        step_mode: wgpu::VertexStepMode::Instance,
                        attributes: &instance_attributes,
                    }),
                ],
            },
            fragment: Some(wgpu::FragmentState {
                module: &shader,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: COLOR_FORMAT,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: DEPTH_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            multiview_mask: None,
            cache: None,
        });
        let texture = |label, format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let target = texture(
            "engine.color",
            COLOR_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let depth = texture("engine.depth", DEPTH_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT);
        // Looking at the crowd (wgpu's clip space has depth in [0, 1], DirectX's convention) from in front of it, high enough to see over the first row.
        let extent_m = (characters as f32).sqrt() * 2.2;
        let eye = Vec3::new(0.3 * extent_m, 0.45 * extent_m + 2.5, 0.8 * extent_m + 4.0);
        let aspect = width as f32 / height as f32;
        let view_proj =
            directx::perspective(0.7, aspect, 0.1, 200.0) * look_at_mat4(eye, Vec3::new(0.0, 0.8, 0.5), Vec3::Y);
        Ok(Self {
            pipeline,
            skin_layout,
            view_proj: view_proj.to_cols_array(),
            num_joints: u32::try_from(num_joints)?,
            vertices: init("engine.vertices", bytemuck::cast_slice(&vertices), wgpu::BufferUsages::VERTEX),
            indices: init("engine.indices", bytemuck::cast_slice(&mesh.indices), wgpu::BufferUsages::INDEX),
            num_indices: u32::try_from(mesh.indices.len())?,
            placements: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("engine.placements"),
                size: (characters.max(1) * 16) as u64,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            color: target.create_view(&Default::default()),
            depth: depth.create_view(&Default::default()),
            target,
        })
    }

    /// One bind group per window: the window of throng's output buffer and a uniform saying
    /// which character the window starts at.
    fn bind_skin(
        &self,
        device: &wgpu::Device,
        outputs: &[wgpu::Buffer],
        windows: &[SkinWindow],
    ) -> Vec<(SkinWindow, wgpu::BindGroup)> {
        let bind = |window: &SkinWindow| {
            let scene = SceneUniform {
                view_proj: self.view_proj,
                num_joints: self.num_joints,
                first_character: window.first_character,
                pad: [0; 2],
            };
            let uniform = wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor {
                    label: Some("engine.scene"),
                    contents: bytemuck::bytes_of(&scene),
                    usage: wgpu::BufferUsages::UNIFORM,
                },
            );
            let skin = wgpu::BufferBinding {
                buffer: &outputs[window.buffer as usize],
                offset: window.offset,
                size: wgpu::BufferSize::new(window.size),
            };
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("engine.skin"),
                layout: &self.skin_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::Buffer(skin) },
                    wgpu::BindGroupEntry { binding: 1, resource: uniform.as_entire_binding() },
                ],
            })
        };
        windows.iter().map(|window| (*window, bind(window))).collect()
    }

    fn draw(&self, encoder: &mut wgpu::CommandEncoder, windows: &[(SkinWindow, wgpu::BindGroup)]) {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("engine.characters"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &self.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: wgpu::LoadOp::Clear(CLEAR), store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.depth,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Discard }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        pass.set_vertex_buffer(1, self.placements.slice(..));
        pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
        for (window, bind_group) in windows {
            pass.set_bind_group(0, bind_group, &[]);
            let first = window.first_character;
            pass.draw_indexed(0..self.num_indices, 0, first..first + window.num_characters);
        }
    }

    /// Copies the target back (rows padded to 256 bytes) and writes it as a PNG.
    fn save_png(&self, device: &wgpu::Device, queue: &wgpu::Queue, path: &std::path::Path) -> Result<(), Error> {
        let (width, height) = (self.target.width(), self.target.height());
        let row_bytes = (width * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("engine.pixels"),
            size: u64::from(row_bytes) * u64::from(height),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("engine.readback") });
        encoder.copy_texture_to_buffer(
            self.target.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row_bytes), rows_per_image: None },
            },
            self.target.size(),
        );
        queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        device.poll(wgpu::PollType::wait_indefinitely())?;
        receiver.recv()??;
        let pixels: Vec<u8> = readback
            .get_mapped_range(..)?
            .chunks_exact(row_bytes as usize)
            .flat_map(|row| row[..(width * 4) as usize].iter().copied())
            .collect();
        let image = image::RgbaImage::from_raw(width, height, pixels).ok_or("the pixel buffer has the wrong size")?;
        Ok(image.save(path)?)
    }
}
