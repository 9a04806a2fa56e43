//! The draw: each archetype's skinned mesh, instanced once per character, its vertex shader
//! reading throng's output buffer on Bevy's device, into every 3D camera's target with Bevy's
//! depth buffer, after Bevy's opaque pass, lit by Bevy's lights ([`SceneLights`]).

use std::collections::HashMap;
use std::sync::Arc;

use bevy::camera::Exposure;
use bevy::light::{DirectionalLight, GlobalAmbientLight};
use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::camera::ExtractedCamera;
use bevy::render::renderer::{RenderContext, RenderDevice, ViewQuery};
use bevy::render::view::{ExtractedView, ViewDepthStencilTexture, ViewTarget};
use throng::mesh::{SkinnedMesh, SkinnedVertex};
use throng::program::OutputLayout;
use wgpu::util::DeviceExt;

use crate::render::ThrongRender;
use crate::{FramePacket, Placement};

/// The vertex shader reads character `instance`'s joints from `skin` (throng's output, in the
/// plugin's layout), then places the skinned vertex by the entity's model matrix (the instance
/// attributes). `SKIN` is replaced by the layout's matrix type and product.
const SHADER: &str = r"
@group(0) @binding(0) var<storage, read> skin: array<SKIN_TYPE>;
struct Scene {
    clip_from_world: mat4x4<f32>,
    // Towards the light, world space; the light's and the ambient light's radiance (exposed).
    to_light: vec4<f32>,
    light: vec4<f32>,
    ambient: vec4<f32>,
    num_joints: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(1) var<uniform> scene: Scene;

struct Out {
    @builtin(position) clip: vec4<f32>, @location(0) normal: vec3<f32>, @location(1) colour: vec3<f32>,
    @location(2) to_light: vec3<f32>, @location(3) light: vec3<f32>, @location(4) ambient: vec3<f32>,
}

fn skin_point(m: SKIN_TYPE, p: vec4<f32>) -> vec3<f32> { return SKIN_PRODUCT; }

@vertex
fn vs(@builtin(instance_index) character: u32,
      @location(0) position: vec3<f32>, @location(1) normal: vec3<f32>,
      @location(2) joints: vec4<u32>, @location(3) weights: vec4<f32>,
      @location(4) m0: vec4<f32>, @location(5) m1: vec4<f32>, @location(6) m2: vec4<f32>, @location(7) m3: vec4<f32>) -> Out {
    let base = character * scene.num_joints;
    let p = vec4<f32>(position, 1.0);
    let n = vec4<f32>(normal, 0.0);
    let model_p = weights.x * skin_point(skin[base + joints.x], p) + weights.y * skin_point(skin[base + joints.y], p)
                + weights.z * skin_point(skin[base + joints.z], p) + weights.w * skin_point(skin[base + joints.w], p);
    let model_n = weights.x * skin_point(skin[base + joints.x], n) + weights.y * skin_point(skin[base + joints.y], n)
                + weights.z * skin_point(skin[base + joints.z], n) + weights.w * skin_point(skin[base + joints.w], n);
    let world_from_model = mat4x4<f32>(m0, m1, m2, m3);
    var out: Out;
    out.clip = scene.clip_from_world * (world_from_model * vec4<f32>(model_p, 1.0));
    out.normal = (world_from_model * vec4<f32>(model_n, 0.0)).xyz;
    let h = (character * 2654435761u) >> 16u;
    out.colour = vec3<f32>(f32(h & 255u), f32((h >> 4u) & 255u), f32((h >> 8u) & 255u)) / 400.0 + 0.2;
    out.to_light = scene.to_light.xyz;
    out.light = scene.light.rgb;
    out.ambient = scene.ambient.rgb;
    return out;
}

// Lambert: the albedo times the ambient light plus the directional light's share.
@fragment
fn fs(in: Out) -> @location(0) vec4<f32> {
    let lit = in.ambient + in.light * max(dot(normalize(in.normal), in.to_light), 0.0);
    return vec4<f32>(in.colour * lit, 1.0);
}
";

/// The shader for an output layout.
fn shader_source(layout: OutputLayout) -> String {
    let (ty, product) = match layout {
        OutputLayout::Mat4 => ("mat4x4<f32>", "(m * p).xyz"),
        // `p * mat3x4` is the three rows' dot products (docs/gpu.md).
        OutputLayout::Affine3x4 => ("mat3x4<f32>", "p * m"),
    };
    SHADER.replace("SKIN_TYPE", ty).replace("SKIN_PRODUCT", product)
}

/// The shader's `Scene` (keep in sync with `SHADER` above; `tests::scene_uniform_matches_the_wgsl_scene`
/// checks it against naga's layout).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SceneUniform {
    clip_from_world: [f32; 16],
    to_light: [f32; 4],
    light: [f32; 4],
    ambient: [f32; 4],
    num_joints: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

/// The lights the characters are drawn under, from the main world's Bevy lights each frame
/// ([`extract_lights`]): the brightest [`DirectionalLight`] (the others, point and spot lights are
/// not drawn by this shader; no shadows) and [`GlobalAmbientLight`]. Shaded as a Lambert surface,
/// as Bevy's standard material shades a fully rough dielectric to first order: the albedo times
/// `ambient colour × brightness + light colour × illuminance × max(n·l, 0) / π`, times the
/// camera's exposure ([`bevy::camera::Exposure`], Bevy's default where a camera has none).
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub(crate) struct SceneLights {
    /// Towards the directional light, world space; zero without one.
    to_light: Vec3,
    /// The directional light's linear colour times its illuminance (lux) over π.
    light: Vec3,
    /// The ambient light's linear colour times its brightness (cd/m²).
    ambient: Vec3,
}

impl Default for SceneLights {
    /// No directional light, and [`GlobalAmbientLight`]'s default.
    fn default() -> Self {
        Self::new(None, &GlobalAmbientLight::default())
    }
}

impl SceneLights {
    fn new(directional: Option<(&DirectionalLight, &GlobalTransform)>, ambient: &GlobalAmbientLight) -> Self {
        let linear = |colour: Color| Vec3::from_slice(&LinearRgba::from(colour).to_f32_array_no_alpha());
        let (to_light, light) = directional.map_or((Vec3::ZERO, Vec3::ZERO), |(light, at)| {
            // A directional light shines along its transform's forward (-Z).
            (at.back().as_vec3(), linear(light.color) * light.illuminance / std::f32::consts::PI)
        });
        Self { to_light, light, ambient: linear(ambient.color) * ambient.brightness }
    }
}

/// Extract: the main world's lights into [`SceneLights`].
pub(crate) fn extract_lights(
    directional: Extract<Query<(&DirectionalLight, &GlobalTransform)>>,
    ambient: Extract<Option<Res<GlobalAmbientLight>>>,
    mut lights: ResMut<SceneLights>,
) {
    let brightest = directional.iter().max_by(|a, b| a.0.illuminance.total_cmp(&b.0.illuminance));
    *lights = SceneLights::new(brightest, ambient.as_deref().unwrap_or(&GlobalAmbientLight::default()));
}

/// A mesh on the device.
struct MeshBuffers {
    /// The mesh it was made from, to notice a new one.
    source: Arc<SkinnedMesh>,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    num_indices: u32,
}

/// One archetype's draw: its mesh, its characters' placements, and a bind group per view.
#[derive(Default)]
struct ArchetypeDraw {
    mesh: Option<MeshBuffers>,
    placements: Option<wgpu::Buffer>,
    num_characters: u32,
    num_joints: u32,
    bind_groups: HashMap<Entity, wgpu::BindGroup>,
}

/// Pipelines by (colour format, depth format, samples), the skin bind group layout, and each
/// archetype's buffers.
#[derive(Resource, Default)]
pub(crate) struct CrowdDraw {
    skin_layout: Option<wgpu::BindGroupLayout>,
    pipelines: HashMap<(wgpu::TextureFormat, wgpu::TextureFormat, u32), wgpu::RenderPipeline>,
    archetypes: Vec<ArchetypeDraw>,
}

fn skin_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let buffer = |ty| wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None };
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("throng-bevy.skin"),
        entries: &[
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX,
                ty: buffer(wgpu::BufferBindingType::Storage { read_only: true }),
                count: None,
            },
            wgpu::BindGroupLayoutEntry {
                binding: 1,
                visibility: wgpu::ShaderStages::VERTEX,
                ty: buffer(wgpu::BufferBindingType::Uniform),
                count: None,
            },
        ],
    })
}

fn pipeline(
    device: &wgpu::Device,
    skin_layout: &wgpu::BindGroupLayout,
    layout: OutputLayout,
    (color, depth, samples): (wgpu::TextureFormat, wgpu::TextureFormat, u32),
) -> wgpu::RenderPipeline {
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("throng-bevy.characters"),
        bind_group_layouts: &[Some(skin_layout)],
        immediate_size: 0,
    });
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("throng-bevy.characters"),
        source: wgpu::ShaderSource::Wgsl(shader_source(layout).into()),
    });
    let instance_attributes = wgpu::vertex_attr_array![4 => Float32x4, 5 => Float32x4, 6 => Float32x4, 7 => Float32x4];
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("throng-bevy.characters"),
        layout: Some(&pipeline_layout),
        vertex: wgpu::VertexState {
            module: &shader,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[
                Some(SkinnedVertex::LAYOUT),
                Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<Placement>() as u64,
                    step_mode: wgpu::VertexStepMode::Instance,
                    attributes: &instance_attributes,
                }),
            ],
        },
        fragment: Some(wgpu::FragmentState {
            module: &shader,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState { format: color, blend: None, write_mask: wgpu::ColorWrites::ALL })],
        }),
        primitive: wgpu::PrimitiveState::default(),
        // Bevy's 3D depth is reversed (1 near, 0 far).
        depth_stencil: Some(wgpu::DepthStencilState {
            format: depth,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::GreaterEqual),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: wgpu::MultisampleState { count: samples, ..Default::default() },
        multiview_mask: None,
        cache: None,
    })
}

fn mesh_buffers(device: &wgpu::Device, mesh: &Arc<SkinnedMesh>) -> MeshBuffers {
    let vertices = mesh.to_vertices();
    let init = |label, contents: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
    };
    MeshBuffers {
        source: Arc::clone(mesh),
        vertices: init("throng-bevy.vertices", bytemuck::cast_slice(&vertices), wgpu::BufferUsages::VERTEX),
        indices: init("throng-bevy.indices", bytemuck::cast_slice(&mesh.indices), wgpu::BufferUsages::INDEX),
        // Mesh index counts fit u32: their indices are u32.
        num_indices: mesh.indices.len() as u32,
    }
}

/// What the draw reads of each view: its target, depth, samples, and the camera's exposure.
type ViewItem = (
    Entity,
    &'static ExtractedView,
    &'static ViewTarget,
    &'static ViewDepthStencilTexture,
    &'static Msaa,
    Option<&'static ExtractedCamera>,
);

/// Prepare, once the views and throng's frame are: meshes and placements uploaded, a pipeline
/// for each view's formats, and a bind group per view and archetype binding throng's output.
pub(crate) fn prepare_draw(
    packet: Res<FramePacket>,
    render: Res<ThrongRender>,
    mut draw: ResMut<CrowdDraw>,
    device: Res<RenderDevice>,
    queue: Res<bevy::render::renderer::RenderQueue>,
    views: Query<ViewItem>,
    lights: Res<SceneLights>,
) {
    let device = device.wgpu_device();
    let queue: &wgpu::Queue = &queue;
    let CrowdDraw { skin_layout: layout_slot, pipelines, archetypes } = &mut *draw;
    let skin = layout_slot.get_or_insert_with(|| skin_layout(device));
    for (_, _, target, depth, msaa, _) in &views {
        let key = (target.main_texture_format(), depth.texture().format(), msaa.samples());
        pipelines.entry(key).or_insert_with(|| pipeline(device, skin, render.layout(), key));
    }
    archetypes.resize_with(packet.archetypes.len(), ArchetypeDraw::default);
    for (index, (frame, draw)) in packet.archetypes.iter().zip(archetypes.iter_mut()).enumerate() {
        draw.bind_groups.clear();
        draw.num_characters = 0;
        let (Some(mesh), Some(output)) = (&frame.mesh, render.crowd(index).and_then(|c| c.output())) else {
            continue;
        };
        if draw.mesh.as_ref().is_none_or(|buffers| !Arc::ptr_eq(&buffers.source, mesh)) {
            draw.mesh = Some(mesh_buffers(device, mesh));
        }
        let bytes: &[u8] = bytemuck::cast_slice(&frame.placements);
        if bytes.is_empty() {
            continue;
        }
        if draw.placements.as_ref().is_none_or(|buffer| buffer.size() < bytes.len() as u64) {
            draw.placements = Some(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("throng-bevy.placements"),
                size: bytes.len() as u64,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        if let Some(buffer) = &draw.placements {
            queue.write_buffer(buffer, 0, bytes);
        }
        draw.num_characters = frame.placements.len() as u32;
        draw.num_joints = frame.assets.rig.num_joints() as u32;
        for (entity, view, _, _, _, camera) in &views {
            let clip_from_world = view
                .clip_from_world
                .unwrap_or_else(|| view.clip_from_view * view.world_from_view.to_matrix().inverse());
            let exposure = camera.map_or_else(|| Exposure::default().exposure(), |c| c.exposure);
            let scene = SceneUniform {
                clip_from_world: clip_from_world.to_cols_array(),
                to_light: lights.to_light.extend(0.0).to_array(),
                light: (lights.light * exposure).extend(0.0).to_array(),
                ambient: (lights.ambient * exposure).extend(0.0).to_array(),
                num_joints: draw.num_joints,
                pad0: 0,
                pad1: 0,
                pad2: 0,
            };
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("throng-bevy.scene"),
                contents: bytemuck::bytes_of(&scene),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("throng-bevy.skin"),
                layout: skin,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: output.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: uniform.as_entire_binding() },
                ],
            });
            draw.bind_groups.insert(entity, group);
        }
    }
}

/// Each 3D camera, after Bevy's opaque pass: every archetype's characters, one instanced draw.
pub(crate) fn draw_crowds(
    view: ViewQuery<(&ViewTarget, &ViewDepthStencilTexture, &Msaa)>,
    draw: Res<CrowdDraw>,
    mut context: RenderContext,
) {
    let entity = view.entity();
    let (target, depth, msaa) = view.into_inner();
    let key = (target.main_texture_format(), depth.texture().format(), msaa.samples());
    let Some(pipeline) = draw.pipelines.get(&key) else { return };
    let drawn: Vec<_> = draw
        .archetypes
        .iter()
        .filter_map(|a| Some((a, a.mesh.as_ref()?, a.placements.as_ref()?, a.bind_groups.get(&entity)?)))
        .filter(|(a, ..)| a.num_characters > 0)
        .collect();
    if drawn.is_empty() {
        return;
    }
    let color = [Some(target.get_color_attachment())];
    let mut pass = context.command_encoder().begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("throng-bevy.characters"),
        color_attachments: &color,
        depth_stencil_attachment: Some(depth.get_attachment(wgpu::StoreOp::Store)),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    pass.set_pipeline(pipeline);
    for (archetype, mesh, placements, group) in drawn {
        pass.set_bind_group(0, group, &[]);
        pass.set_vertex_buffer(0, mesh.vertices.slice(..));
        pass.set_vertex_buffer(1, placements.slice(..));
        pass.set_index_buffer(mesh.indices.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..mesh.num_indices, 0, 0..archetype.num_characters);
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use wgpu::naga;

    use super::*;

    /// `SceneUniform` is the shader's `Scene` as naga lays it out in the uniform address space
    /// (size, alignment, each member's offset), with either output layout substituted, and the
    /// substituted shader validates.
    #[test]
    fn scene_uniform_matches_the_wgsl_scene() {
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let source = shader_source(layout);
            let module =
                naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{layout:?}: {}", e.emit_to_string(&source)));
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(module.to_ctx()).expect("the shader's types lay out");
            let (handle, scene) =
                module.types.iter().find(|(_, t)| t.name.as_deref() == Some("Scene")).expect("the shader has Scene");
            let naga::TypeInner::Struct { members, .. } = &scene.inner else { panic!("Scene is not a struct") };
            let wgsl: Vec<(&str, usize)> =
                members.iter().map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize)).collect();
            let rust = [
                ("clip_from_world", offset_of!(SceneUniform, clip_from_world)),
                ("to_light", offset_of!(SceneUniform, to_light)),
                ("light", offset_of!(SceneUniform, light)),
                ("ambient", offset_of!(SceneUniform, ambient)),
                ("num_joints", offset_of!(SceneUniform, num_joints)),
                ("pad0", offset_of!(SceneUniform, pad0)),
                ("pad1", offset_of!(SceneUniform, pad1)),
                ("pad2", offset_of!(SceneUniform, pad2)),
            ];
            assert_eq!(wgsl, rust, "{layout:?}: Scene's members and offsets (WGSL vs Rust)");
            let wgsl_layout = layouter[handle];
            assert_eq!(wgsl_layout.size as usize, size_of::<SceneUniform>(), "{layout:?}: Scene's size");
            assert!(
                wgsl_layout.alignment.is_aligned(size_of::<SceneUniform>() as u32),
                "{layout:?}: the uniform's size is not a multiple of Scene's alignment {}",
                wgsl_layout.alignment
            );
        }
    }
}
