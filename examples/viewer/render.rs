//! Drawing: the crowd's evaluation (throng's GPU evaluator, or the CPU one uploaded, with the
//! procedural stage when the scene has it on), the instanced skinned characters reading the
//! skinning matrices where the evaluator left them, the ground (a mesh of the scene's shape),
//! the look-at marker, GPU timestamps, and reading a frame back for a PNG.

use std::time::Instant;

use glam::{Mat4, Vec3};
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::eval::skinning::read_matrix;
use throng::gpu::{GpuCrowd, GpuCrowdOptions, GpuProfiler, SkinWindow, skin_windows};
use throng::mesh::SkinnedVertex;
use throng::program::OutputLayout;

use crate::ground::Ground;
use crate::lab::Lab;
use crate::scene::Scene;

/// The colour target's format; shading is linear and the target encodes sRGB.
pub const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
/// The depth buffer's format; the lab's panels draw in the same pass.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CameraUniform {
    view_proj: [f32; 16],
    eye: [f32; 4],
    sun: [f32; 4],
    /// x: the picked character + 1 (0: none); y: 1 when it shows a mask heat.
    picked: [f32; 4],
    /// xyz: the look-at marker's world position; w: its half size, metres (0: not drawn).
    marker: [f32; 4],
    /// The highlighted character's joint heat (a layer's mask weight per joint, in [0, 1]), four
    /// joints a `vec4`; read when `picked[1]` is 1.
    heat: [[f32; 4]; MAX_HEAT_JOINTS / 4],
}

/// Joints the mask heat colours; a rig's joints past these read as 0 (the demo has 26).
/// Keep in sync with `Camera::heat` in `viewer.wgsl`.
pub const MAX_HEAT_JOINTS: usize = 64;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ChunkUniform {
    first_character: u32,
    num_joints: u32,
    /// `vec4`s per matrix: 4 columns (mat4) or 3 rows (affine 3×4).
    vec4s_per_matrix: u32,
    pad: u32,
}

/// Where the skinning matrices come from.
enum Evaluator {
    /// throng's GPU evaluator, fed the state step's records; its output buffer is bound as the
    /// vertex shader's storage.
    Gpu(Box<GpuRecords>),
    /// `FrameJob` on the CPU; its output is uploaded into `buffer` every frame.
    Cpu { context: Box<EvalContext>, output: Vec<f32>, clips_sampled: Vec<u32>, buffer: wgpu::Buffer },
}

/// The GPU evaluator and the expansion it was given: the archetype's tables and blend trees'
/// words as last sent, so that a mode switch or a graph edit that changes them sends them again.
struct GpuRecords {
    crowd: GpuCrowd,
    tables: Vec<u32>,
    trees: Vec<u32>,
    /// Bytes of records and blend inputs the last frame uploaded.
    uploaded: u64,
}

impl GpuRecords {
    /// The frame's one records upload: the archetype's expansion when it is not the one the
    /// crowd has (the first frame, a switch mode's archetype or a graph edit that differs), then
    /// the step's records, blend inputs and clock, of the due rows under LOD. The CPU expands
    /// nothing for it; the expand pass before the frame's does on the device.
    fn upload(&mut self, scene: &Scene, dt_s: f32) -> Result<(), String> {
        let frame = scene.records()?;
        let error = |e: throng::gpu::GpuError| format!("GPU evaluator: {e}");
        if self.tables != frame.tables.words() || self.trees != frame.trees.words() {
            self.crowd.set_expansion(frame.tables, frame.trees).map_err(error)?;
            self.tables = frame.tables.words().to_vec();
            self.trees = frame.trees.words().to_vec();
        }
        match scene.due() {
            Some(due) => self.crowd.set_frame_records_due(&frame.frame, dt_s, due),
            None => self.crowd.set_frame_records(&frame.frame, dt_s),
        }
        .map_err(error)?;
        self.uploaded = self.crowd.record_bytes_uploaded();
        Ok(())
    }
}

/// A draw of characters `first..first + count`, whose matrices one storage binding can hold
/// (a [`throng::gpu::SkinWindow`]).
struct DrawChunk {
    first: u32,
    count: u32,
    bind_group: wgpu::BindGroup,
}

/// Milliseconds one frame spent in each part.
///
/// The wall-clock figures are what the frame costs: the evaluation and the draw are
/// submitted and waited for one after the other. Timestamps are the GPU's own view of its
/// passes; lavapipe's compute-pass timestamps are not to be trusted (a few milliseconds for a
/// pass that takes hundreds).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameTimes {
    /// GPU path: wall clock from submitting throng's compute pass until the GPU finished it.
    pub eval_wall_ms: Option<f64>,
    /// Wall clock from encoding the render pass (after the evaluation) until the GPU finished it.
    pub draw_wall_ms: f64,
    /// Timestamps around throng's compute pass, where the adapter has them.
    pub eval_gpu_ms: Option<f64>,
    /// Timestamps around the render pass, where the adapter has them.
    pub draw_gpu_ms: Option<f64>,
}

/// Everything the frame draws with, for one device and one crowd.
pub struct Renderer {
    evaluator: Evaluator,
    layout: OutputLayout,
    num_joints: usize,
    num_characters: usize,
    camera: wgpu::Buffer,
    camera_group: wgpu::BindGroup,
    chunk_layout: wgpu::BindGroupLayout,
    chunk_uniforms: Vec<wgpu::Buffer>,
    chunks: Vec<DrawChunk>,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    num_indices: u32,
    placements: wgpu::Buffer,
    character_pipeline: wgpu::RenderPipeline,
    ground_pipeline: wgpu::RenderPipeline,
    marker_pipeline: wgpu::RenderPipeline,
    /// The ground's triangles (position, normal) for `ground_shape`, over `ground_half_m`.
    ground_vertices: wgpu::Buffer,
    ground_count: u32,
    ground_shape: Ground,
    ground_half_m: f32,
    /// GPU timestamp zones: `throng.frame` (the evaluation pass) and `viewer.draw` (the render
    /// pass), also on Tracy's GPU timeline with `--features tracy`.
    profiler: GpuProfiler,
    depth: Option<(wgpu::TextureView, u32, u32)>,
    limits: wgpu::Limits,
    /// Draw the ground alone (`--background-only`).
    pub background_only: bool,
    /// The character drawn highlighted (the lab's picked one).
    pub highlight: Option<usize>,
    /// A mask heat to colour the highlighted character with instead of magenta: per joint, in
    /// the rig's order, a layer's mask weight in [0, 1] (blue 0, red 1).
    pub heat: Option<Vec<f32>>,
    draw_start: Instant,
    eval_wall_ms: Option<f64>,
}

impl Renderer {
    /// Buffers and pipelines for `scene`'s crowd, drawing into `format` targets; `cpu` picks
    /// the CPU evaluator, `layout` how the evaluator writes the matrices the shader reads.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &Scene,
        format: wgpu::TextureFormat,
        cpu: bool,
        layout: OutputLayout,
    ) -> Result<Self, String> {
        let model = &scene.model;
        let num_joints = model.rig.num_joints();
        let num_characters = scene.num_characters();
        let evaluator = if cpu {
            let floats = num_characters * num_joints * layout.floats_per_joint();
            Evaluator::Cpu {
                context: Box::new(EvalContext::new(num_characters, model.layers.len(), num_joints)),
                output: vec![0.0; floats],
                clips_sampled: vec![0; num_characters],
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("viewer.cpu_skin"),
                    size: (floats as u64 * 4).max(64),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
            }
        } else {
            // The procedural stage runs on the stage path, which needs its buffers.
            let options = GpuCrowdOptions { layout, stage_buffers: scene.has_procedural(), ..Default::default() };
            let crowd = GpuCrowd::with_layers(device, queue, &model.rig, &model.clips, &model.layers, options)
                .map_err(|e| format!("GPU evaluator: {e}"))?;
            // The expansion is sent with the first frame (`GpuRecords::upload`).
            Evaluator::Gpu(Box::new(GpuRecords { crowd, tables: Vec::new(), trees: Vec::new(), uploaded: 0 }))
        };

        let mesh = &model.mesh;
        mesh.validate(num_joints).map_err(|e| format!("the mesh: {e}"))?;
        let vertices = mesh.to_vertices();
        let buffer = |label: &str, contents: &[u8], usage| {
            wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage },
            )
        };
        let vertex_buffer = buffer("viewer.vertices", bytemuck::cast_slice(&vertices), wgpu::BufferUsages::VERTEX);
        let index_buffer = buffer("viewer.indices", bytemuck::cast_slice(&mesh.indices), wgpu::BufferUsages::INDEX);
        let placements = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer.placements"),
            size: (num_characters.max(1) * 16) as u64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let camera = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer.camera"),
            size: size_of::<CameraUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });

        let visible = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let uniform_entry = |binding, visibility| wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let camera_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("viewer.camera"),
            entries: &[uniform_entry(0, visible)],
        });
        let chunk_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("viewer.skin"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: true },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                uniform_entry(1, wgpu::ShaderStages::VERTEX),
            ],
        });
        let camera_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("viewer.camera"),
            layout: &camera_layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: camera.as_entire_binding() }],
        });
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("viewer.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("viewer.wgsl").into()),
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("viewer"),
            bind_group_layouts: &[Some(&camera_layout), Some(&chunk_layout)],
            immediate_size: 0,
        });
        let ground_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("viewer.ground"),
            bind_group_layouts: &[Some(&camera_layout)],
            immediate_size: 0,
        });
        let instance_attributes = wgpu::vertex_attr_array![4 => Float32x4];
        let ground_attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];
        let ground_layouts = [Some(wgpu::VertexBufferLayout {
            array_stride: 24,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &ground_attributes,
        })];
        let vertex_layouts = [
            Some(SkinnedVertex::LAYOUT),
            Some(wgpu::VertexBufferLayout {
                array_stride: 16,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &instance_attributes,
            }),
        ];
        let pipeline =
            |label, layout: &wgpu::PipelineLayout, vs, fs, buffers: &[Option<wgpu::VertexBufferLayout<'_>>], cull| {
                device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some(label),
                    layout: Some(layout),
                    vertex: wgpu::VertexState {
                        module: &shader,
                        entry_point: Some(vs),
                        compilation_options: Default::default(),
                        buffers,
                    },
                    fragment: Some(wgpu::FragmentState {
                        module: &shader,
                        entry_point: Some(fs),
                        compilation_options: Default::default(),
                        targets: &[Some(wgpu::ColorTargetState {
                            format,
                            blend: None,
                            write_mask: wgpu::ColorWrites::ALL,
                        })],
                    }),
                    primitive: wgpu::PrimitiveState { cull_mode: cull, ..Default::default() },
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
                })
            };
        // Imported meshes wind either way; the boxes and the ground are seen from outside only.
        let cull = if model.driven { Some(wgpu::Face::Back) } else { None };
        let character_pipeline =
            pipeline("viewer.characters", &pipeline_layout, "character_vs", "character_fs", &vertex_layouts, cull);
        let ground_pipeline =
            pipeline("viewer.ground", &ground_layout, "ground_vs", "ground_fs", &ground_layouts, None);
        let marker_pipeline = pipeline("viewer.marker", &ground_layout, "marker_vs", "character_fs", &[], None);
        let ground_half_m = scene.field_half_m * 4.0 + 50.0;
        let (ground_vertices, ground_count) = ground_mesh(device, scene.ground(), ground_half_m);

        // Two zones a frame: the evaluation and the draw.
        let profiler = GpuProfiler::new(device, queue, 2);
        Ok(Self {
            evaluator,
            layout,
            num_joints,
            num_characters,
            camera,
            camera_group,
            chunk_layout,
            chunk_uniforms: Vec::new(),
            chunks: Vec::new(),
            vertices: vertex_buffer,
            indices: index_buffer,
            num_indices: mesh.indices.len() as u32,
            placements,
            character_pipeline,
            ground_pipeline,
            marker_pipeline,
            ground_vertices,
            ground_count,
            ground_shape: scene.ground(),
            ground_half_m,
            profiler,
            depth: None,
            limits: device.limits(),
            background_only: false,
            highlight: None,
            heat: None,
            draw_start: Instant::now(),
            eval_wall_ms: None,
        })
    }

    /// Bytes of state records and blend inputs the GPU evaluator uploaded for the last frame
    /// (`GpuCrowd::record_bytes_uploaded`: the characters whose records or inputs changed);
    /// `None` for the CPU evaluator.
    pub fn records_uploaded(&self) -> Option<u64> {
        match &self.evaluator {
            Evaluator::Gpu(gpu) => Some(gpu.uploaded),
            Evaluator::Cpu { .. } => None,
        }
    }

    /// Whether the frame split can be measured on the GPU.
    pub fn has_timestamps(&self) -> bool {
        self.profiler.has_timestamps()
    }

    /// One bind group per run of characters whose matrices fit one storage binding: the GPU
    /// crowd's own windows (which name the buffer of a split output), or [`skin_windows`]
    /// over the CPU path's one upload buffer.
    fn bind_chunks(&mut self, device: &wgpu::Device) -> Result<(), String> {
        let (windows, buffers): (Vec<SkinWindow>, Vec<wgpu::Buffer>) = match &self.evaluator {
            Evaluator::Gpu(gpu) => {
                (gpu.crowd.skin_windows().map_err(|e| e.to_string())?, gpu.crowd.output_buffers().to_vec())
            }
            Evaluator::Cpu { buffer, .. } => {
                let bytes_per_character = (self.num_joints * self.layout.floats_per_joint() * 4) as u64;
                (
                    skin_windows(self.num_characters, bytes_per_character, &self.limits).map_err(|e| e.to_string())?,
                    vec![buffer.clone()],
                )
            }
        };
        self.chunks.clear();
        self.chunk_uniforms.clear();
        for window in windows {
            let uniform = ChunkUniform {
                first_character: window.first_character,
                num_joints: self.num_joints as u32,
                vec4s_per_matrix: (self.layout.floats_per_joint() / 4) as u32,
                pad: 0,
            };
            let buffer = wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor {
                    label: Some("viewer.chunk"),
                    contents: bytemuck::bytes_of(&uniform),
                    usage: wgpu::BufferUsages::UNIFORM,
                },
            );
            let skin = buffers.get(window.buffer as usize).ok_or("a draw window names no output buffer")?;
            let binding =
                wgpu::BufferBinding { buffer: skin, offset: window.offset, size: wgpu::BufferSize::new(window.size) };
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("viewer.skin"),
                layout: &self.chunk_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::Buffer(binding) },
                    wgpu::BindGroupEntry { binding: 1, resource: buffer.as_entire_binding() },
                ],
            });
            self.chunk_uniforms.push(buffer);
            self.chunks.push(DrawChunk { first: window.first_character, count: window.num_characters, bind_group });
        }
        Ok(())
    }

    /// Evaluates the scene's last step and draws it into `target` (`width × height`), seen
    /// through `view_proj` from `eye`, the lab's panels (when given) over it in the same pass.
    /// Returns the CPU time of evaluation with `--cpu`; GPU
    /// times come from [`Renderer::read_times`] after the submission completes.
    #[allow(clippy::too_many_arguments)]
    pub fn render(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &mut Scene,
        dt_s: f32,
        target: &wgpu::TextureView,
        (width, height): (u32, u32),
        view_proj: Mat4,
        eye: Vec3,
        lab: Option<&Lab>,
    ) -> Result<Option<f64>, String> {
        let mut cpu_ms = None;
        match &mut self.evaluator {
            Evaluator::Gpu(gpu) => {
                let had_output = !gpu.crowd.output_buffers().is_empty();
                gpu.upload(scene, dt_s)?;
                let crowd = &mut gpu.crowd;
                match scene.procedural_inputs() {
                    Some(p) => crowd.set_procedural(p.setup, p.targets).map_err(|e| format!("GPU evaluator: {e}"))?,
                    None => crowd.clear_procedural(),
                }
                if !had_output {
                    self.bind_chunks(device)?;
                }
            }
            Evaluator::Cpu { context, output, clips_sampled, buffer } => {
                let start = Instant::now();
                let (samples, programs) = scene.frame();
                let model = &scene.model;
                let mut root_motion = vec![Default::default(); clips_sampled.len()];
                // The job, not `CrowdRuntime`: the scene's one crowd also feeds the GPU evaluator.
                let job = FrameJob {
                    rig: &model.rig,
                    clips: &model.clips,
                    layers: &model.layers,
                    samples,
                    programs,
                    dt_s,
                    context,
                    layout: self.layout,
                    output,
                    clips_sampled,
                    root_motion: &mut root_motion,
                };
                match (scene.procedural_inputs(), scene.due()) {
                    (Some(p), Some(due)) => job.run_due_procedural(due, p),
                    (Some(p), None) => job.run_procedural(p),
                    (None, Some(due)) => job.run_due(due),
                    (None, None) => job.run(),
                }
                .map_err(|e| format!("CPU evaluator: {e}"))?;
                queue.write_buffer(buffer, 0, bytemuck::cast_slice(output));
                scene.root_motion_mut().copy_from_slice(&root_motion);
                cpu_ms = Some(start.elapsed().as_secs_f64() * 1e3);
                if self.chunks.is_empty() {
                    self.bind_chunks(device)?;
                }
            }
        }
        queue.write_buffer(&self.placements, 0, bytemuck::cast_slice(&scene.placements));
        if scene.ground() != self.ground_shape {
            (self.ground_vertices, self.ground_count) = ground_mesh(device, scene.ground(), self.ground_half_m);
            self.ground_shape = scene.ground();
        }
        let sun = Vec3::new(0.4, 0.8, 0.3).normalize();
        let marker = scene.look_marker().map_or([0.0; 4], |p| p.extend(0.12 * scene.model.height_m).to_array());
        // Fog thick enough to fade the ground's far edge, thin enough to leave the crowd clear.
        let fog_m = 2.5 * eye.length() + 2.0 * scene.field_half_m;
        let uniform = CameraUniform {
            view_proj: view_proj.to_cols_array(),
            eye: eye.extend(1.0).to_array(),
            sun: [sun.x, sun.y, sun.z, fog_m],
            picked: [
                self.highlight.map_or(0.0, |i| (i + 1) as f32),
                if self.heat.is_some() { 1.0 } else { 0.0 },
                0.0,
                0.0,
            ],
            marker,
            heat: heat_rows(self.heat.as_deref().unwrap_or(&[])),
        };
        queue.write_buffer(&self.camera, 0, bytemuck::bytes_of(&uniform));
        if self.depth.as_ref().is_none_or(|d| (d.1, d.2) != (width, height)) {
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some("viewer.depth"),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: DEPTH_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            });
            self.depth = Some((texture.create_view(&Default::default()), width, height));
        }
        let Some((depth, ..)) = &self.depth else { return Ok(cpu_ms) };

        // The evaluation is submitted and waited for alone, so that its cost and the draw's
        // can be told apart on any adapter; the draw reads the matrices it left.
        self.eval_wall_ms = None;
        if let Evaluator::Gpu(gpu) = &self.evaluator {
            let start = Instant::now();
            let mut encoder =
                device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("viewer.evaluate") });
            self.profiler.encode(&gpu.crowd, &mut encoder);
            queue.submit([encoder.finish()]);
            let _wait = throng::zone!("viewer.evaluate.wait");
            device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
            self.eval_wall_ms = Some(start.elapsed().as_secs_f64() * 1e3);
        }
        // Where the soles stand in this frame, for the next one's ground under each foot: the
        // two ankles' matrices read back, not the whole crowd's.
        if let Some(ankles) = scene.needs_feet() {
            let _zone = throng::zone!("viewer.feet");
            scene.observe_feet(&self.read_joints(&ankles)?);
        }
        self.draw_start = Instant::now();
        let _zone = throng::zone!("viewer.draw");
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("viewer.draw") });
        self.profiler.zone("viewer.draw", |queries| {
            // 'static, as egui-wgpu's paint takes the pass; the encoder stays borrowed until it ends.
            let mut pass = encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("viewer.draw"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: target,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Clear(wgpu::Color { r: 0.30, g: 0.45, b: 0.78, a: 1.0 }),
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: depth,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(1.0),
                            store: wgpu::StoreOp::Discard,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: queries.map(|(query_set, first)| wgpu::RenderPassTimestampWrites {
                        query_set,
                        beginning_of_pass_write_index: Some(first),
                        end_of_pass_write_index: Some(first + 1),
                    }),
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime();
            pass.set_bind_group(0, &self.camera_group, &[]);
            pass.set_pipeline(&self.ground_pipeline);
            pass.set_vertex_buffer(0, self.ground_vertices.slice(..));
            pass.draw(0..self.ground_count, 0..1);
            if marker[3] > 0.0 {
                pass.set_pipeline(&self.marker_pipeline);
                pass.draw(0..MARKER_VERTICES, 0..1);
            }
            pass.set_pipeline(&self.character_pipeline);
            pass.set_vertex_buffer(0, self.vertices.slice(..));
            pass.set_vertex_buffer(1, self.placements.slice(..));
            pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
            for chunk in self.chunks.iter().filter(|_| !self.background_only) {
                pass.set_bind_group(1, &chunk.bind_group, &[]);
                pass.draw_indexed(0..self.num_indices, 0, chunk.first..chunk.first + chunk.count);
            }
            if let Some(lab) = lab {
                lab.paint(&mut pass);
            }
        });
        self.profiler.resolve(&mut encoder);
        queue.submit([encoder.finish()]);
        Ok(cpu_ms)
    }

    /// Waits for the last frame and returns its times, milliseconds.
    pub fn read_times(&mut self, device: &wgpu::Device) -> Result<FrameTimes, String> {
        let wait = throng::zone!("viewer.draw.wait");
        device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
        let draw_wall_ms = self.draw_start.elapsed().as_secs_f64() * 1e3;
        wait.end();
        let gpu = self.profiler.read_blocking().map_err(|e| e.to_string())?;
        let ms = |name| gpu.zone(name).map(|z| z.duration_ns().max(0.0) * 1e-6);
        Ok(FrameTimes {
            eval_wall_ms: self.eval_wall_ms,
            draw_wall_ms,
            eval_gpu_ms: ms("throng.frame"),
            draw_gpu_ms: ms("viewer.draw"),
        })
    }

    /// The last frame's skinning matrices, character-major (`i * J + j`), read back.
    pub fn read_matrices(&self) -> Result<Vec<Mat4>, String> {
        let floats = match &self.evaluator {
            Evaluator::Gpu(gpu) => gpu.crowd.read_output_blocking().map_err(|e| e.to_string())?,
            Evaluator::Cpu { output, .. } => output.clone(),
        };
        Ok(floats.chunks_exact(self.layout.floats_per_joint()).map(|m| read_matrix(self.layout, m)).collect())
    }

    /// The last frame's skinning matrices of `joints` alone, character by character
    /// (`i * joints.len() + k`): on the GPU evaluator only those rows are read back.
    pub fn read_joints(&self, joints: &[usize]) -> Result<Vec<Mat4>, String> {
        let floats = match &self.evaluator {
            Evaluator::Gpu(gpu) => gpu.crowd.read_joints_blocking(joints).map_err(|e| e.to_string())?,
            Evaluator::Cpu { output, .. } => self.layout.select_joints(output, self.num_joints, 0, joints),
        };
        Ok(floats.chunks_exact(self.layout.floats_per_joint()).map(|m| read_matrix(self.layout, m)).collect())
    }
}

/// Maps `buffer` (MAP_READ) after the GPU is done with it and copies its bytes out.
pub fn read_buffer(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = sender.send(r);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
    receiver.recv().map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    let bytes = buffer.get_mapped_range(..).map_err(|e| e.to_string())?.to_vec();
    buffer.unmap();
    Ok(bytes)
}

/// An offscreen colour target and the buffer its pixels are copied into, for `--headless`.
pub struct Offscreen {
    texture: wgpu::Texture,
    /// The target's view.
    pub view: wgpu::TextureView,
    readback: wgpu::Buffer,
    width: u32,
    height: u32,
    padded_row: u32,
}

impl Offscreen {
    /// A `width × height` target.
    pub fn new(device: &wgpu::Device, width: u32, height: u32) -> Self {
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("viewer.offscreen"),
            size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: COLOR_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = texture.create_view(&Default::default());
        // Rows of a texture copy are padded to 256 bytes.
        let padded_row = (width * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("viewer.pixels"),
            size: u64::from(padded_row) * u64::from(height),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self { texture, view, readback, width, height, padded_row }
    }

    /// Copies the target's pixels back and writes them to `path` as a PNG.
    pub fn save_png(&self, device: &wgpu::Device, queue: &wgpu::Queue, path: &std::path::Path) -> Result<(), String> {
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("viewer.readback") });
        encoder.copy_texture_to_buffer(
            self.texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &self.readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(self.padded_row),
                    rows_per_image: None,
                },
            },
            wgpu::Extent3d { width: self.width, height: self.height, depth_or_array_layers: 1 },
        );
        queue.submit([encoder.finish()]);
        let bytes = read_buffer(device, &self.readback)?;
        let mut pixels = Vec::with_capacity((self.width * self.height * 4) as usize);
        for row in bytes.chunks_exact(self.padded_row as usize) {
            pixels.extend_from_slice(&row[..(self.width * 4) as usize]);
        }
        let image =
            image::RgbaImage::from_raw(self.width, self.height, pixels).ok_or("pixel buffer of the wrong size")?;
        image.save(path).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

/// Vertices of the look-at marker `marker_vs` draws: an octahedron, eight triangles.
const MARKER_VERTICES: u32 = 24;

/// The ground of `shape` over `[-half_m, half_m]²` as a vertex buffer (position, normal) and
/// its vertex count.
fn ground_mesh(device: &wgpu::Device, shape: Ground, half_m: f32) -> (wgpu::Buffer, u32) {
    let vertices = shape.mesh(half_m);
    let buffer = wgpu::util::DeviceExt::create_buffer_init(
        device,
        &wgpu::util::BufferInitDescriptor {
            label: Some("viewer.ground"),
            contents: bytemuck::cast_slice(&vertices),
            usage: wgpu::BufferUsages::VERTEX,
        },
    );
    (buffer, vertices.len() as u32)
}

/// Per-joint heat packed four joints a row, as the shader's uniform array reads it; joints past
/// [`MAX_HEAT_JOINTS`] are left out and weights clamped to [0, 1] (NaN reads as 0).
fn heat_rows(heat: &[f32]) -> [[f32; 4]; MAX_HEAT_JOINTS / 4] {
    let mut rows = [[0.0; 4]; MAX_HEAT_JOINTS / 4];
    for (j, w) in heat.iter().take(MAX_HEAT_JOINTS).enumerate() {
        rows[j / 4][j % 4] = if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
    }
    rows
}

/// Writes `texture` (a whole 2D colour texture of 4 bytes a texel, RGBA or BGRA, with
/// `COPY_SRC`: the window's presented frame for a screenshot) as a PNG.
pub fn save_texture_png(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    texture: &wgpu::Texture,
    path: &std::path::Path,
) -> Result<(), String> {
    let (width, height) = (texture.width(), texture.height());
    let bgra = match texture.format() {
        wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb => true,
        wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb => false,
        other => return Err(format!("cannot write a {other:?} texture as a PNG")),
    };
    let padded_row = (4 * width).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("viewer.screenshot"),
        size: u64::from(padded_row) * u64::from(height),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("viewer.screenshot") });
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &readback,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded_row), rows_per_image: None },
        },
        wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
    );
    queue.submit([encoder.finish()]);
    let bytes = read_buffer(device, &readback)?;
    let mut pixels = Vec::with_capacity((width * height * 4) as usize);
    for row in bytes.chunks_exact(padded_row as usize) {
        for texel in row[..(width * 4) as usize].chunks_exact(4) {
            let [a, b, c, d] = [texel[0], texel[1], texel[2], texel[3]];
            pixels.extend_from_slice(&if bgra { [c, b, a, d] } else { [a, b, c, d] });
        }
    }
    let image = image::RgbaImage::from_raw(width, height, pixels).ok_or("pixel buffer of the wrong size")?;
    image.save(path).map_err(|e| format!("writing {}: {e}", path.display()))
}
