//! One archetype's crowd on the GPU: buffers, chunks, the frame's dispatch list, readback.
//!
//! This file is long (about 1,600 lines) until the GPU frame issue (#17, item 3) splits it by
//! concern (buffer splitting, sizing, uploads, spawning, encoding, test hooks) along with the
//! kernel redesign; splitting it before the redesign would move code that is about to change.

use std::ops::Range;

use glam::Mat4;

use super::GpuError;
use super::pipelines::{FrameKernel, Pipelines, storage_buffers_needed};
use super::types::{
    BLEND_ADDITIVE, BLEND_OVERRIDE, GpuChunkParams, GpuClipHeader, GpuLayerSetup, GpuLayerState, GpuRigJoint,
    GpuRigTables, GpuSampleRange, GpuTransform, JOINT_STATE_BYTES, JointStateLayout, LAYOUT_AFFINE3X4, LAYOUT_MAT4,
    NO_MASK, NO_MEMORY, SPACE_LOCAL, SPACE_MESH, STATE_SHOWN_MASK, STATE_SLOT_SHIFT, WORKGROUP_SIZE, clip_data,
};
use crate::clip::Clip;
use crate::profile::Plot;
use crate::program::{
    ClipSample, DueRows, LayerBlend, LayerProgram, LayerSetup, LayerSpace, Mask, OutputLayout, evaluation_order,
    num_additive_layers, validate_clips, validate_dt, validate_due, validate_layer_programs, validate_layer_setups,
    validate_memoryless_programs, validate_samples,
};
use crate::rig::{Rig, Transform};

/// Bytes of a `vec4<f32>`, the unit every window index counts in.
const VEC4_BYTES: u64 = 16;
/// Bytes of one [`GpuTransform`] in the local-pose buffer.
const LOCAL_BYTES: u64 = size_of::<GpuTransform>() as u64;
/// Bytes of one model matrix.
const MODEL_BYTES: u64 = 64;
/// Bytes of [`GpuChunkParams`].
const PARAMS_BYTES: u64 = size_of::<GpuChunkParams>() as u64;
/// Bytes of one layer's [`GpuLayerState`] in the characters' memory.
const LAYER_STATE_BYTES: u64 = size_of::<GpuLayerState>() as u64;
/// Bytes of one [`LayerProgram`].
const PROGRAM_BYTES: u64 = size_of::<LayerProgram>() as u64;
/// Smallest size given to a buffer that may hold nothing (an empty crowd or clip table), so
/// that it can still be bound.
const MIN_BUFFER_BYTES: u64 = 64;

/// How a [`GpuCrowd`] is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuCrowdOptions {
    /// How each skinning matrix is written.
    pub layout: OutputLayout,
    /// The most characters one dispatch evaluates; `None` takes the most the device allows
    /// (every bound window within `max_storage_buffer_binding_size`, and with
    /// [`FrameKernel::Fused`] 65,535 workgroups, one per character).
    /// A smaller value is for tests of chunking and for spreading work across submissions; it
    /// is clamped to at least 1 and at most the device's maximum.
    pub max_chunk_characters: Option<u32>,
    /// Also allocate the local-pose and model-matrix buffers of the stage-by-stage path
    /// ([`GpuCrowd::encode_stage`]) and build its pipelines: 112 bytes per joint per character
    /// more, and 2 more storage buffers per shader stage (8, or 10 with layers, past WebGPU's
    /// default 8). Off for production, where the fused frame keeps poses in workgroup memory.
    pub stage_buffers: bool,
    /// The largest buffer of the characters' memory (layered crowds), bytes; `None` takes the
    /// device's `max_buffer_size`. Larger crowds spread their memory over several buffers, whole
    /// chunks to each (at least one chunk per buffer, whatever this says). A smaller value is
    /// for tests, and for engines that prefer smaller allocations.
    pub max_memory_buffer_bytes: Option<u64>,
    /// The largest buffer of the output (skinning matrices), bytes; `None` takes the device's
    /// `max_buffer_size`. A larger output is split over several buffers, whole chunks to each
    /// (at least one chunk per buffer): a million 64-joint characters need 3.1 GB of affine
    /// matrices, more than lavapipe's or NVIDIA's Vulkan driver allow in one buffer.
    /// [`GpuCrowd::output_buffers`] and [`GpuCrowd::skin_windows`] say where each character's
    /// matrices are. A smaller value is for tests.
    pub max_output_buffer_bytes: Option<u64>,
    /// The kernel of the fused frames ([`GpuCrowd::encode`]); the stage-by-stage path is the
    /// same for every one. Defaults to the variant the proxies favour ([`FrameKernel`]).
    pub kernel: FrameKernel,
}

/// A stage of the stage-by-stage path; each mirrors a module of [`crate::eval`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Programs to local poses (`shaders/sample.wgsl`, [`crate::eval::sample`]).
    Sample,
    /// Local poses to model matrices (`shaders/local_to_model.wgsl`,
    /// [`crate::eval::local_to_model`]).
    LocalToModel,
    /// Model matrices to the output (`shaders/skinning.wgsl`, [`crate::eval::skinning`]).
    Skinning,
    /// Layer programs to each layer's displayed pose in the characters' memory, updating that
    /// memory (`shaders/transition.wgsl`, [`crate::eval::transition`]); after
    /// [`GpuCrowd::set_frame`].
    Transition,
    /// Each layer's displayed pose, combined, to local poses (`shaders/layers.wgsl`,
    /// [`crate::eval::layers`]); after [`GpuCrowd::set_frame`].
    Layers,
}

impl Stage {
    /// The stages of [`GpuCrowd::set_samples`]'s frame, in order.
    pub const ALL: [Self; 3] = [Self::Sample, Self::LocalToModel, Self::Skinning];
    /// The stages of [`GpuCrowd::set_frame`]'s layered frame, in order.
    pub const LAYERED: [Self; 4] = [Self::Transition, Self::Layers, Self::LocalToModel, Self::Skinning];
}

/// The buffers and bind groups of one crowd size; rebuilt when the character count changes or
/// the samples outgrow their buffer.
struct FrameResources {
    num_characters: usize,
    samples_capacity: usize,
    samples: wgpu::Buffer,
    ranges: wgpu::Buffer,
    output: Runs,
    /// The stage path's intermediates, when [`GpuCrowdOptions::stage_buffers`] is set.
    stage_buffers: Option<(wgpu::Buffer, wgpu::Buffer)>,
    /// The layered frame's programs and the characters' memory, for a crowd with layers.
    layered: Option<(wgpu::Buffer, Runs)>,
    /// Every chunk's parameters, at `params_stride` in `params`, rewritten when `dt_s` changes.
    params: wgpu::Buffer,
    params_stride: u64,
    chunk_params: Vec<GpuChunkParams>,
    chunks: Vec<Chunk>,
    /// Workgroups per chunk under animation LOD (the chunk's due characters,
    /// [`GpuCrowd::set_frame_due`]); empty when every character is evaluated.
    due_counts: Vec<u32>,
}

impl FrameResources {
    /// Workgroups chunk `k` dispatches: its due characters, or all of them.
    fn dispatch_count(&self, k: usize, chunk: &Chunk) -> u32 {
        self.due_counts.get(k).copied().unwrap_or(chunk.num_characters)
    }

    /// Writes every chunk's parameters again if the frame's `dt_s` or its due-list mode changed;
    /// returns the bytes written.
    fn write_params(&mut self, queue: &wgpu::Queue, dt_s: f32, due_list: bool) -> u64 {
        let due_list = u32::from(due_list);
        if !self.chunk_params.first().is_some_and(|p| p.dt_s.to_bits() != dt_s.to_bits() || p.due_list != due_list) {
            return 0;
        }
        for (k, p) in self.chunk_params.iter_mut().enumerate() {
            p.dt_s = dt_s;
            p.due_list = due_list;
            queue.write_buffer(&self.params, k as u64 * self.params_stride, bytemuck::bytes_of(p));
        }
        self.chunk_params.len() as u64 * PARAMS_BYTES
    }
}

/// One dispatch's worth of characters.
struct Chunk {
    first_character: u64,
    num_characters: u32,
    /// The output buffer and window group 1 binds.
    output: (usize, Window),
    /// The byte window of the samples group 1 binds: the whole buffer while it fits one
    /// binding, else the chunk's own window, rebound when the samples its programs read move.
    samples_window: (u64, u64),
    /// Group 1.
    frame: wgpu::BindGroup,
    /// Group 2, with stage buffers.
    stages: Option<wgpu::BindGroup>,
    /// Group 3, for a crowd with layers.
    layered: Option<wgpu::BindGroup>,
}

/// Per-character data too large for one buffer (the output, the characters' memory):
/// consecutive runs of characters in buffers of at most `max_buffer_size` bytes (a million
/// 64-joint characters of the built-in graph need 8.2 GB of memory and 3.1 GB of affine
/// matrices; NVIDIA's Vulkan driver allows 4 GiB a buffer), each run a whole number of chunks so
/// that a chunk's window lies in one buffer. Character `i` is at `(i % per_buffer) × bytes per
/// character` in buffer `i / per_buffer`.
#[derive(Clone)]
struct Runs {
    buffers: Vec<wgpu::Buffer>,
    characters_per_buffer: u64,
    bytes_per_character: u64,
}

impl Runs {
    /// Characters per buffer for `num_characters` of `bytes_per_character` each in buffers of at
    /// most `max_buffer_bytes`: whole chunks of `chunk_characters`, at least one.
    fn characters_per_buffer(
        max_buffer_bytes: u64,
        bytes_per_character: u64,
        chunk_characters: u64,
        num_characters: u64,
    ) -> u64 {
        match max_buffer_bytes.checked_div(bytes_per_character) {
            Some(fit) => (fit / chunk_characters).max(1) * chunk_characters,
            None => num_characters.max(1),
        }
    }

    /// Buffers for `num_characters` (at least one, for binding), zeroed by wgpu.
    fn allocate(
        device: &wgpu::Device,
        label: &str,
        usage: wgpu::BufferUsages,
        num_characters: u64,
        characters_per_buffer: u64,
        bytes_per_character: u64,
    ) -> Self {
        let buffers = (0..num_characters.div_ceil(characters_per_buffer).max(1))
            .map(|b| {
                let characters = characters_per_buffer.min(num_characters.saturating_sub(b * characters_per_buffer));
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: (characters * bytes_per_character).max(MIN_BUFFER_BYTES),
                    usage,
                    mapped_at_creation: false,
                })
            })
            .collect();
        Self { buffers, characters_per_buffer, bytes_per_character }
    }

    /// Characters held in buffer `b` of a crowd of `num_characters`.
    fn characters_in(&self, b: usize, num_characters: usize) -> u64 {
        self.characters_per_buffer.min((num_characters as u64).saturating_sub(b as u64 * self.characters_per_buffer))
    }

    /// The buffer holding `character` and the character's byte offset in it.
    fn locate(&self, character: usize) -> Option<(&wgpu::Buffer, u64)> {
        let character = character as u64;
        let buffer = self.buffers.get((character / self.characters_per_buffer) as usize)?;
        Some((buffer, character % self.characters_per_buffer * self.bytes_per_character))
    }

    /// Copies what `old` holds into these buffers, as far as both reach: the characters that
    /// remain through a resize keep what they had. Runs per buffer depend only on the device and
    /// the archetype, so buffer `b` of `old` holds the same characters as buffer `b` here.
    fn keep_from(&self, old: &Self, device: &wgpu::Device, queue: &wgpu::Queue, label: &str) {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        for (from, to) in old.buffers.iter().zip(&self.buffers) {
            let keep = from.size().min(to.size()) / 4 * 4;
            if keep > 0 {
                encoder.copy_buffer_to_buffer(from, 0, to, 0, keep);
            }
        }
        queue.submit([encoder.finish()]);
    }
}

/// A byte window of a buffer bound for one chunk: `offset` aligned down to the device's
/// storage alignment, and where the chunk starts inside it in `vec4` units.
#[derive(Clone, Copy)]
struct Window {
    offset: u64,
    size: u64,
    base_vec4: u32,
}

impl Window {
    fn new(first_byte: u64, bytes: u64, align: u64) -> Self {
        let offset = first_byte - first_byte % align;
        // `first_byte - offset < align <= 256`, so the base fits in u32.
        Self {
            offset,
            size: (first_byte - offset + bytes).max(VEC4_BYTES),
            base_vec4: ((first_byte - offset) / VEC4_BYTES) as u32,
        }
    }

    fn binding<'a>(&self, buffer: &'a wgpu::Buffer) -> wgpu::BindingResource<'a> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: self.offset,
            size: wgpu::BufferSize::new(self.size),
        })
    }
}

/// One archetype (rig + clip table) and its crowd on the GPU.
///
/// Built on the caller's device and queue. Each frame: [`set_samples`](Self::set_samples)
/// uploads the pose programs, [`encode`](Self::encode) records the evaluation into the
/// caller's encoder, and the caller's vertex shader reads [`output`](Self::output) (character
/// `i`, joint `j` at `i * J + j`, in [`GpuCrowdOptions::layout`]), or for a crowd larger than
/// one buffer, [`output_buffers`](Self::output_buffers) through
/// [`skin_windows`](Self::skin_windows).
///
/// ```no_run
/// use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions};
/// use throng::program::ClipSample;
/// # fn demo(rig: &throng::Rig, clips: &[throng::Clip]) -> Result<(), throng::gpu::GpuError> {
/// let gpu = GpuContext::new_blocking()?;
/// let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, GpuCrowdOptions::default())?;
/// crowd.set_samples(&[ClipSample::new(0, 0.5, 1.0)], &[0..1])?;
/// let mut encoder = gpu.device.create_command_encoder(&Default::default());
/// crowd.encode(&mut encoder);
/// gpu.queue.submit([encoder.finish()]);
/// let matrices = crowd.read_output_blocking()?; // 16 floats per joint
/// # Ok(()) }
/// ```
pub struct GpuCrowd {
    device: wgpu::Device,
    queue: wgpu::Queue,
    options: GpuCrowdOptions,
    num_joints: usize,
    num_clips: usize,
    pipelines: Pipelines,
    archetype: wgpu::BindGroup,
    /// The layers, for a crowd built [`with_layers`](Self::with_layers).
    layers: Option<Layers>,
    frame: Option<FrameResources>,
    /// Whether the last frame set was [`set_frame`](Self::set_frame)'s (else
    /// [`set_samples`](Self::set_samples)'s).
    layered_frame: bool,
    /// Characters of the last frame set, less those [`swap_remove`](Self::swap_remove)d since.
    live_characters: usize,
    /// Where the rig's depth levels start in `throng.rig_tables`, and how many there are (the
    /// level kernels' `ChunkParams::levels_start`, `num_levels`).
    levels: (u32, u32),
    ranges_scratch: Vec<GpuSampleRange>,
}

/// An archetype's layers on the device.
struct Layers {
    /// The setups, in layer order, to check each frame's programs against.
    setups: Vec<LayerSetup>,
    /// Layers that keep memory per character ([`LayerSetup::needs_memory`]).
    num_memory: usize,
}

/// The layer table: each layer's [`GpuLayerSetup`] in evaluation order, then the masks'
/// weights as f32 bits, one per joint; the start of `throng.rig_tables`
/// (`shaders/shared/bindings.wgsl`).
fn layer_table(layers: &[LayerSetup]) -> Vec<u32> {
    let order = evaluation_order(layers);
    let mut masks: Vec<u32> = Vec::new();
    let mut setups = Vec::with_capacity(order.len());
    let masks_start = size_of::<GpuLayerSetup>() / 4 * layers.len();
    for &l in &order {
        let setup = &layers[l];
        // Slots count the layers with memory in layer order, as `EvalContext::for_layers`.
        let memory =
            if setup.needs_memory { layers[..l].iter().filter(|s| s.needs_memory).count() as u32 } else { NO_MEMORY };
        let mask_start = setup.mask.as_ref().map_or(NO_MASK, |mask: &Mask| {
            let start = (masks_start + masks.len()) as u32;
            masks.extend(mask.weights().iter().map(|w| w.to_bits()));
            start
        });
        setups.push(GpuLayerSetup {
            // Layer counts are bounded by the programs a crowd can hold, far inside u32.
            layer: l as u32,
            blend: match setup.blend {
                LayerBlend::Override => BLEND_OVERRIDE,
                LayerBlend::Additive => BLEND_ADDITIVE,
            },
            space: match setup.space {
                LayerSpace::Local => SPACE_LOCAL,
                LayerSpace::Mesh => SPACE_MESH,
            },
            mask_start,
            memory,
        });
    }
    let mut table: Vec<u32> = bytemuck::cast_slice(&setups).to_vec();
    table.extend(masks);
    table
}

impl std::fmt::Debug for GpuCrowd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCrowd")
            .field("options", &self.options)
            .field("num_joints", &self.num_joints)
            .field("num_clips", &self.num_clips)
            .field("num_characters", &self.num_characters())
            .finish_non_exhaustive()
    }
}

/// The device limits the pipelines need, checked before anything is created so that a
/// too-small device is a typed error rather than wgpu's uncaptured-error panic. A `layered`
/// crowd binds a fourth group; each pipeline built binds [`storage_buffers_needed`] at most.
fn check_limits(
    limits: &wgpu::Limits,
    kernel: FrameKernel,
    layered: bool,
    stage_buffers: bool,
) -> Result<(), GpuError> {
    // The stage path and the transition stage run 64-thread workgroups whatever the kernel.
    let threads = u64::from(kernel.workgroup_threads().max(WORKGROUP_SIZE));
    let groups = if layered {
        4
    } else if stage_buffers {
        3
    } else {
        2
    };
    let needs: [(&'static str, u64, u64); 5] = [
        ("max_bind_groups", groups, limits.max_bind_groups.into()),
        (
            "max_storage_buffers_per_shader_stage",
            storage_buffers_needed(layered, stage_buffers).into(),
            limits.max_storage_buffers_per_shader_stage.into(),
        ),
        ("max_compute_invocations_per_workgroup", threads, limits.max_compute_invocations_per_workgroup.into()),
        ("max_compute_workgroup_size_x", threads, limits.max_compute_workgroup_size_x.into()),
        (
            "max_compute_workgroup_storage_size",
            kernel.workgroup_memory_bytes().max(FrameKernel::Fused.workgroup_memory_bytes()),
            limits.max_compute_workgroup_storage_size.into(),
        ),
    ];
    for (limit, needed, got) in needs {
        if got < needed {
            return Err(GpuError::DeviceLimit { limit, needed, got });
        }
    }
    Ok(())
}

/// The most characters one dispatch may evaluate: few enough that the largest window a chunk
/// binds (`window_bytes_per_character` each), plus up to one storage alignment of slack before
/// it, fits in one storage binding, and that the grid holds: `max_compute_workgroups_per_dimension`
/// workgroups of one character with `one_dimensional` (the fused kernels), else that limit cubed
/// ([`grid`]) of `per_workgroup` characters. `requested` lowers it (to at least 1).
fn chunk_characters(
    window_bytes_per_character: u64,
    limits: &wgpu::Limits,
    (one_dimensional, per_workgroup): (bool, u32),
    requested: Option<u32>,
) -> u32 {
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let slack = u64::from(limits.min_storage_buffer_offset_alignment);
    let by_binding =
        (binding.saturating_sub(slack) / window_bytes_per_character.max(1)).clamp(1, u64::from(u32::MAX)) as u32;
    let per_dimension = u64::from(limits.max_compute_workgroups_per_dimension);
    let grid = if one_dimensional {
        per_dimension
    } else {
        per_dimension.saturating_pow(3).saturating_mul(u64::from(per_workgroup))
    };
    let device_max = by_binding.min(grid.min(u64::from(u32::MAX)) as u32).max(1);
    requested.map_or(device_max, |n| n.clamp(1, device_max))
}

/// The grid of `groups` workgroups: rows of at most `max_per_dimension`, and past that many rows
/// layers of them (the level kernels read their index as `(z × height + y) × width + x`,
/// `shared/levels.wgsl`); the workgroups past `groups` find no character and only keep the
/// barriers. Every dimension stays within the limit for any `groups` below its cube.
fn grid(groups: u32, max_per_dimension: u32) -> (u32, u32, u32) {
    let max = max_per_dimension.max(1);
    let width = groups.clamp(1, max);
    let rows = groups.div_ceil(width);
    let height = rows.clamp(1, max);
    (width, height, rows.div_ceil(height))
}

/// A chunk's group 1: its parameters (at `params.1` in `params.0`), a window of the samples
/// (`samples.1`: byte offset and size), the sample ranges, and its output window.
fn chunk_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    params: (&wgpu::Buffer, u64),
    samples: (&wgpu::Buffer, (u64, u64)),
    ranges: &wgpu::Buffer,
    output: (&Runs, (usize, Window)),
) -> wgpu::BindGroup {
    let (samples, (samples_offset, samples_size)) = samples;
    let (runs, (b, window)) = output;
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("throng.chunk"),
        layout,
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: params.0,
                    offset: params.1,
                    size: wgpu::BufferSize::new(PARAMS_BYTES),
                }),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: samples,
                    offset: samples_offset,
                    size: wgpu::BufferSize::new(samples_size),
                }),
            },
            wgpu::BindGroupEntry { binding: 2, resource: ranges.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: window.binding(&runs.buffers[b]) },
        ],
    })
}

/// The samples `(start, end)` that `ranges` read, empty ranges aside; `(0, 0)` for none.
fn sample_span(ranges: impl Iterator<Item = (u32, u32)>) -> (u64, u64) {
    ranges
        .filter(|(start, end)| end > start)
        .fold(None, |span: Option<(u64, u64)>, (start, end)| {
            let (start, end) = (u64::from(start), u64::from(end));
            Some(span.map_or((start, end), |(lo, hi)| (lo.min(start), hi.max(end))))
        })
        .unwrap_or((0, 0))
}

impl GpuCrowd {
    /// Uploads the archetype (rig joints, clip headers, every clip's frames) once and builds
    /// the pipelines. The crowd starts empty; [`set_samples`](Self::set_samples) sizes it.
    ///
    /// Fails when a clip's joint count differs from the rig's, when the clip frames do not
    /// fit in one storage binding, or when the device's limits are below what the pipelines
    /// need.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        rig: &Rig,
        clips: &[Clip],
        options: GpuCrowdOptions,
    ) -> Result<Self, GpuError> {
        Self::build(device, queue, rig, clips, None, options)
    }

    /// [`new`](Self::new) for the layered frame, the GPU mirror of
    /// [`crate::eval::frame::FrameJob`]: also uploads the archetype's layers (blend, space,
    /// mask weights) once. Each frame, [`set_frame`](Self::set_frame) uploads the layer
    /// programs and [`encode`](Self::encode) records sample → transition → layers →
    /// local-to-model → skinning; per-character memory (the last two displayed poses, the frozen
    /// snapshot or inertialization offsets, the inertia clock) stays on the device between
    /// frames.
    ///
    /// Fails as [`new`](Self::new) does, when the layers are refused with the CPU's checks
    /// ([`crate::program::validate_layer_setups`]), or when the device binds fewer than 4
    /// bind groups or 8 storage buffers per shader stage (WebGPU's default limits), 10 with
    /// [`GpuCrowdOptions::stage_buffers`] ([`GpuError::DeviceLimit`]).
    pub fn with_layers(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        rig: &Rig,
        clips: &[Clip],
        layers: &[LayerSetup],
        options: GpuCrowdOptions,
    ) -> Result<Self, GpuError> {
        validate_layer_setups(layers, rig.num_joints())?;
        Self::build(device, queue, rig, clips, Some(layers), options)
    }

    fn build(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        rig: &Rig,
        clips: &[Clip],
        layers: Option<&[LayerSetup]>,
        options: GpuCrowdOptions,
    ) -> Result<Self, GpuError> {
        let limits = device.limits();
        check_limits(&limits, options.kernel, layers.is_some(), options.stage_buffers)?;
        validate_clips(rig, clips, layers.map_or(0, num_additive_layers))?;
        let GpuRigTables { mut joints, paths, levels, num_levels } = GpuRigJoint::from_rig(rig);
        // Few storage buffers (WebGPU's default limits allow 8 a stage): the clip headers lead
        // the clip data, two vec4 each, and the layer table leads the ancestor paths.
        let header_vec4s = clips.len() * size_of::<GpuClipHeader>() / size_of::<[u32; 4]>();
        let mut headers = Vec::with_capacity(clips.len());
        let mut frames: Vec<[u32; 4]> = Vec::new();
        for clip in clips {
            // Checked against the binding limit below before anything is uploaded; a clip
            // table past u32 vec4s (64 GiB) would fail that check first.
            headers.push(GpuClipHeader::new(clip, (header_vec4s + frames.len()) as u32));
            frames.extend(clip_data(clip));
        }
        let mut data: Vec<[u32; 4]> = bytemuck::cast_slice(&headers).to_vec();
        data.extend(frames);
        let data_bytes = (data.len() * size_of::<[u32; 4]>()) as u64;
        if data_bytes > limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) {
            return Err(GpuError::ClipsTooLarge { bytes: data_bytes, limit: limits.max_storage_buffer_binding_size });
        }
        let init = |label: &str, contents: &[u8]| {
            let mut padded;
            let contents = if (contents.len() as u64) < MIN_BUFFER_BYTES {
                padded = contents.to_vec();
                padded.resize(MIN_BUFFER_BYTES as usize, 0);
                &padded[..]
            } else {
                contents
            };
            // Written through the queue rather than mapped at creation: wgpu's `create_buffer_init`
            // panics on a lost device, where this becomes an error at the next readback or poll.
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: contents.len().next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT as usize) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut aligned = contents.to_vec();
            aligned.resize(buffer.size() as usize, 0);
            queue.write_buffer(&buffer, 0, &aligned);
            buffer
        };
        let mut tables = layers.map(layer_table).unwrap_or_default();
        for joint in &mut joints {
            // The layer table's entries are few (five words a layer and a weight a masked
            // joint), far inside u32.
            joint.path_start += tables.len() as u32;
        }
        tables.extend(&paths);
        // Ancestor paths hold under MAX_JOINTS² entries: the offset fits u32.
        let levels_start = tables.len() as u32;
        tables.extend(&levels);
        let rig_joints = init("throng.rig_joints", bytemuck::cast_slice(&joints));
        let clip_data = init("throng.clip_data", bytemuck::cast_slice(&data));
        let rig_tables = init("throng.rig_tables", bytemuck::cast_slice(&tables));
        let compact_clips = clips.iter().any(|clip| clip.compact_format().is_some());
        let pipelines = Pipelines::new(
            device,
            rig.num_joints(),
            options.kernel,
            layers.is_some(),
            options.stage_buffers,
            compact_clips,
        );
        let archetype = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("throng.archetype"),
            layout: &pipelines.layouts.archetype,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: rig_joints.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: clip_data.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: rig_tables.as_entire_binding() },
            ],
        });
        let layers = layers.map(|layers| Layers {
            setups: layers.to_vec(),
            num_memory: layers.iter().filter(|l| l.needs_memory).count(),
        });
        Ok(Self {
            device: device.clone(),
            queue: queue.clone(),
            options,
            num_joints: rig.num_joints(),
            num_clips: clips.len(),
            pipelines,
            archetype,
            layers,
            frame: None,
            layered_frame: false,
            live_characters: 0,
            levels: (levels_start, num_levels),
            ranges_scratch: Vec::new(),
        })
    }

    /// Joints per character.
    #[must_use]
    pub fn num_joints(&self) -> usize {
        self.num_joints
    }

    /// Characters of the last [`set_samples`](Self::set_samples).
    #[must_use]
    pub fn num_characters(&self) -> usize {
        self.frame.as_ref().map_or(0, |f| f.num_characters)
    }

    /// Dispatches per frame (the crowd's chunks).
    #[must_use]
    pub fn num_chunks(&self) -> usize {
        self.frame.as_ref().map_or(0, |f| f.chunks.len())
    }

    /// Characters the next [`encode`](Self::encode) evaluates (one workgroup each with
    /// [`FrameKernel::Fused`], several a workgroup with [`FrameKernel::Levels`]): the due ones after
    /// [`set_frame_due`](Self::set_frame_due), every one otherwise; 0 before the first frame.
    #[must_use]
    pub fn characters_dispatched(&self) -> usize {
        self.frame
            .as_ref()
            .map_or(0, |f| f.chunks.iter().enumerate().map(|(k, chunk)| f.dispatch_count(k, chunk) as usize).sum())
    }

    /// Buffers holding the characters' memory: 1 unless a layered crowd's memory outgrows one
    /// buffer ([`GpuCrowdOptions::max_memory_buffer_bytes`]); 0 before the first frame and
    /// without layers.
    #[must_use]
    pub fn num_memory_buffers(&self) -> usize {
        self.frame.as_ref().and_then(|f| f.layered.as_ref()).map_or(0, |(_, m)| m.buffers.len())
    }

    /// The output layout.
    #[must_use]
    pub fn layout(&self) -> OutputLayout {
        self.options.layout
    }

    /// Layers per character: 0 for a crowd built with [`new`](Self::new).
    #[must_use]
    pub fn num_layers(&self) -> usize {
        self.layers.as_ref().map_or(0, |l| l.setups.len())
    }

    /// Layers per character that keep memory on the device ([`LayerSetup::needs_memory`]):
    /// 1 of 3 for the built-in graph, whose lean and wave layers have no transitions.
    #[must_use]
    pub fn num_memory_layers(&self) -> usize {
        self.layers.as_ref().map_or(0, |l| l.num_memory)
    }

    /// Bytes of one character's memory on the device (layered crowds; 0 otherwise): per layer
    /// that keeps memory a 32-byte [`GpuLayerState`] and [`JOINT_STATE_BYTES`] (128) per joint.
    /// 16,448 bytes for a 64-joint archetype with two such layers; 8,224 for the built-in graph.
    #[must_use]
    pub fn memory_bytes_per_character(&self) -> u64 {
        self.num_memory_layers() as u64 * (LAYER_STATE_BYTES + self.num_joints as u64 * JOINT_STATE_BYTES)
    }

    /// Bytes of one character's matrices in the output.
    #[must_use]
    pub fn output_bytes_per_character(&self) -> u64 {
        (self.num_joints * self.options.layout.floats_per_joint() * 4) as u64
    }

    /// The skinning-matrix buffer (`STORAGE | VERTEX | COPY_SRC | COPY_DST`, labelled `throng.output`):
    /// character `i`, joint `j` at matrix `i * J + j`. `None` before the first
    /// [`set_samples`](Self::set_samples), and for a crowd whose output is split over several
    /// buffers ([`GpuCrowdOptions::max_output_buffer_bytes`]; see
    /// [`output_buffers`](Self::output_buffers)). The buffer is replaced when, and only when,
    /// the character count changes; fetch it (and rebuild bind groups holding it) after such a
    /// call.
    #[must_use]
    pub fn output(&self) -> Option<&wgpu::Buffer> {
        match self.output_buffers() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Every buffer of the output, in character order: one unless the output is larger than
    /// [`GpuCrowdOptions::max_output_buffer_bytes`] (by default the device's
    /// `max_buffer_size`). Buffer `b` holds
    /// [`output_characters_per_buffer`](Self::output_characters_per_buffer) characters from
    /// character `b × that` on (the last buffer fewer), each at `(i − first) ×
    /// output_bytes_per_character` in its buffer. Empty before the first frame. Replaced, like
    /// [`output`](Self::output), only when the character count changes;
    /// [`skin_windows`](Self::skin_windows) names each window's buffer.
    #[must_use]
    pub fn output_buffers(&self) -> &[wgpu::Buffer] {
        self.frame.as_ref().map_or(&[], |f| &f.output.buffers)
    }

    /// Characters in each output buffer but the last ([`output_buffers`](Self::output_buffers)),
    /// a whole number of chunks; 0 before the first frame.
    #[must_use]
    pub fn output_characters_per_buffer(&self) -> usize {
        self.frame.as_ref().map_or(0, |f| f.output.characters_per_buffer.min(f.num_characters as u64) as usize)
    }

    /// The draws a renderer binding [`output`](Self::output) in a vertex shader makes: runs of
    /// characters whose matrices fit one storage binding of this device, at offsets it can bind
    /// ([`super::skin_windows`] for the current character count). One window while the crowd
    /// fits one binding (about 32k characters of a 64-joint `Mat4` rig at 128 MiB). Changes only
    /// when the character count does, as the output buffer.
    ///
    /// # Errors
    /// [`GpuError::CrowdTooLarge`] when the device cannot bind even one aligned run.
    pub fn skin_windows(&self) -> Result<Vec<super::SkinWindow>, GpuError> {
        let Some(frame) = &self.frame else {
            return Ok(Vec::new());
        };
        let limits = self.device.limits();
        let mut windows = Vec::new();
        for b in 0..frame.output.buffers.len() {
            let first = b as u64 * frame.output.characters_per_buffer;
            let in_buffer = frame.output.characters_in(b, frame.num_characters) as usize;
            for w in super::skin_windows(in_buffer, self.output_bytes_per_character(), &limits)? {
                // Character indices fit u32: `skin_windows` refuses larger crowds.
                windows.push(super::SkinWindow {
                    first_character: w.first_character + first as u32,
                    buffer: b as u32,
                    ..w
                });
            }
        }
        Ok(windows)
    }

    /// Uploads a frame's sample lists: character `i` blends `samples[sample_ranges[i]]`,
    /// exactly as [`crate::eval::EvalCrowdJob`] reads them and with the same checks
    /// ([`crate::program::validate_samples`]). Writes `8 + 16 × samples` bytes per character.
    ///
    /// The character count is `sample_ranges.len()`; when it changes, the crowd's buffers are
    /// rebuilt after checking that each fits the device ([`GpuError::CrowdTooLarge`]). On error
    /// nothing is written and the previous frame's samples stay.
    pub fn set_samples(&mut self, samples: &[ClipSample], sample_ranges: &[Range<u32>]) -> Result<(), GpuError> {
        let zone = crate::zone!("throng.gpu.upload");
        validate_samples(samples, sample_ranges, self.num_clips)?;
        let num_characters = sample_ranges.len();
        self.ensure_frame(num_characters, samples.len())?;
        let windows = self.sample_windows(|first, count| {
            sample_span(sample_ranges.get(first..first + count).unwrap_or_default().iter().map(|r| (r.start, r.end)))
        })?;
        if let Some(windows) = windows {
            self.bind_sample_windows(&windows);
        }
        let Some(frame) = &mut self.frame else {
            return Ok(());
        };
        self.layered_frame = false;
        self.live_characters = num_characters;
        let params_bytes = frame.write_params(&self.queue, frame.chunk_params.first().map_or(0.0, |p| p.dt_s), false);
        frame.due_counts.clear();
        if !samples.is_empty() {
            self.queue.write_buffer(&frame.samples, 0, bytemuck::cast_slice(samples));
        }
        if num_characters > 0 {
            // `Range<u32>` is not `Pod`; repack into a buffer kept across frames.
            self.ranges_scratch.clear();
            self.ranges_scratch
                .extend(sample_ranges.iter().map(|r| GpuSampleRange { start: r.start, count: r.end - r.start }));
            self.queue.write_buffer(&frame.ranges, 0, bytemuck::cast_slice(&self.ranges_scratch));
        }
        let bytes = (size_of_val(samples) + num_characters * size_of::<GpuSampleRange>()) as u64 + params_bytes;
        zone.value(bytes);
        crate::profile::count(Plot::BytesUploaded, bytes);
        #[cfg(feature = "tracy")]
        crate::profile::count_sample_lists(sample_ranges);
        Ok(())
    }

    /// Uploads a frame of the layered crowd: character `i`'s layer `l` reads
    /// `programs[i * num_layers + l]`, whose sample ranges index `samples`, exactly as
    /// [`crate::eval::frame::FrameJob`] reads them and with the same checks
    /// ([`crate::program::validate_dt`], [`crate::program::validate_layer_programs`]); `dt_s` is
    /// the real time since the last frame (0 when paused). Writes `40 × layers + 16 × samples`
    /// bytes per character (144 for two layers of a two-clip blend each).
    ///
    /// The character count is `programs.len() / num_layers`. When it changes, the crowd's
    /// buffers are rebuilt (after checking each fits the device) and the characters that remain
    /// keep their memory and their output matrices (which a character skipped by
    /// [`set_frame_due`](Self::set_frame_due) keeps showing); new characters start with none, as after
    /// [`reset_character`](Self::reset_character). On error nothing is written.
    pub fn set_frame(&mut self, samples: &[ClipSample], programs: &[LayerProgram], dt_s: f32) -> Result<(), GpuError> {
        self.upload_frame(samples, programs, dt_s, None)
    }

    /// [`set_frame`](Self::set_frame) for the characters `due` lists only (animation LOD, as
    /// `state::Crowd::due` gives them), as [`crate::eval::frame::FrameJob::run_due`]: each due
    /// character is evaluated with its own seconds since it was last shown in place of `dt_s`
    /// (which still applies to a later [`set_frame`](Self::set_frame)); the others are not
    /// dispatched at all, and their output and memory keep the pose they last showed. Each
    /// chunk dispatches one workgroup per due character, reading the compact list of them
    /// (8 bytes each, uploaded with the frame) where the unlayered frame keeps its sample
    /// ranges, so the frame's cost follows the due count. [`encode`](Self::encode) and the
    /// layered stages ([`Stage::LAYERED`]) both honour the list until the next upload.
    ///
    /// # Errors
    /// As [`set_frame`](Self::set_frame), then [`crate::program::validate_due`]'s (a due list
    /// whose lengths differ, or with a row past the crowd, out of order, or with bad seconds).
    pub fn set_frame_due(
        &mut self,
        samples: &[ClipSample],
        programs: &[LayerProgram],
        dt_s: f32,
        due: DueRows<'_>,
    ) -> Result<(), GpuError> {
        self.upload_frame(samples, programs, dt_s, Some(due))
    }

    fn upload_frame(
        &mut self,
        samples: &[ClipSample],
        programs: &[LayerProgram],
        dt_s: f32,
        due: Option<DueRows<'_>>,
    ) -> Result<(), GpuError> {
        let zone = crate::zone!("throng.gpu.upload");
        let num_layers = self.num_layers();
        if num_layers == 0 {
            return Err(GpuError::NoLayers);
        }
        validate_dt(dt_s)?;
        validate_layer_programs(programs, num_layers, samples, self.num_clips)?;
        if let Some(layers) = &self.layers {
            validate_memoryless_programs(programs, &layers.setups)?;
        }
        let num_characters = programs.len() / num_layers;
        if let Some(due) = due {
            validate_due(due, num_characters)?;
        }
        self.ensure_frame(num_characters, samples.len())?;
        let windows = self.sample_windows(|first, count| {
            let programs = programs.get(first * num_layers..(first + count) * num_layers).unwrap_or_default();
            sample_span(programs.iter().map(|p| (p.first_sample, p.first_sample + p.num_target + p.num_secondary)))
        })?;
        if let Some(windows) = windows {
            self.bind_sample_windows(&windows);
        }
        let Some(frame) = &mut self.frame else {
            return Ok(());
        };
        self.layered_frame = true;
        self.live_characters = num_characters;
        if !samples.is_empty() {
            self.queue.write_buffer(&frame.samples, 0, bytemuck::cast_slice(samples));
        }
        if let Some((program_buffer, _)) = frame.layered.as_ref().filter(|_| !programs.is_empty()) {
            self.queue.write_buffer(program_buffer, 0, bytemuck::cast_slice(programs));
        }
        let mut bytes = (size_of_val(samples) + size_of_val(programs)) as u64;
        bytes += frame.write_params(&self.queue, dt_s, due.is_some());
        frame.due_counts.clear();
        if let Some(due) = due {
            // Each chunk's due characters, from its first character's index in `ranges`.
            let mut from = 0;
            for (k, p) in frame.chunk_params.iter_mut().enumerate() {
                let end = p.first_character + p.num_characters;
                let count = due.rows[from..].partition_point(|&row| row < end);
                let rows = from..from + count;
                self.ranges_scratch.clear();
                self.ranges_scratch.extend(
                    due.rows[rows.clone()]
                        .iter()
                        .zip(&due.dt_s[rows])
                        .map(|(&row, dt_s)| GpuSampleRange { start: row, count: dt_s.to_bits() }),
                );
                if count > 0 {
                    self.queue.write_buffer(
                        &frame.ranges,
                        u64::from(p.first_character) * size_of::<GpuSampleRange>() as u64,
                        bytemuck::cast_slice(&self.ranges_scratch),
                    );
                }
                frame.due_counts.push(count as u32);
                // The level kernels' workgroups hold several entries: the count bounds the last.
                if p.num_due != count as u32 {
                    p.num_due = count as u32;
                    self.queue.write_buffer(&frame.params, k as u64 * frame.params_stride, bytemuck::bytes_of(p));
                    bytes += PARAMS_BYTES;
                }
                bytes += size_of_val(self.ranges_scratch.as_slice()) as u64;
                from += count;
            }
        }
        zone.value(bytes);
        crate::profile::count(Plot::BytesUploaded, bytes);
        #[cfg(feature = "tracy")]
        crate::profile::count_layered(programs, num_layers, due.map(|d| d.rows));
        Ok(())
    }

    /// Forgets what `character` of a layered crowd displayed, so that its next switch is a cut
    /// (a character reused for someone new, or teleported by gameplay), as
    /// [`crate::eval::frame::EvalContext::reset_character`]. Out-of-range characters, and
    /// crowds without layers, are ignored. Takes effect with the next submitted frame.
    pub fn reset_character(&self, character: usize) {
        let memory = self
            .frame
            .as_ref()
            .filter(|f| character < f.num_characters)
            .and_then(|f| f.layered.as_ref())
            .map(|(_, m)| m);
        if let Some((buffer, states)) = memory.and_then(|m| self.memory_blocks(m, character)) {
            for at in states {
                self.queue.write_buffer(buffer, at, bytemuck::bytes_of(&GpuLayerState::default()));
            }
        }
    }

    /// The buffer holding `character`'s layer memory and the byte offset of each of its
    /// [`GpuLayerState`]s (one per layer with memory): what forgetting what it showed clears.
    fn memory_blocks<'m>(
        &self,
        memory: &'m Runs,
        character: usize,
    ) -> Option<(&'m wgpu::Buffer, impl Iterator<Item = u64> + use<'m>)> {
        let (buffer, at) = memory.locate(character)?;
        let per_layer = LAYER_STATE_BYTES + self.num_joints as u64 * JOINT_STATE_BYTES;
        Some((buffer, (0..self.num_memory_layers() as u64).map(move |l| at + l * per_layer)))
    }

    /// Tells the crowd it has `num_characters` characters, after spawns between frames, as
    /// [`crate::eval::frame::EvalContext::resize`] does on the CPU: characters past the last
    /// frame's have shown nothing, and a [`swap_remove`](Self::swap_remove) before the next
    /// frame then moves the row [`crate::state::Crowd::despawn`] moves (a despawn after a spawn
    /// moves the newcomer, not the last character the device knows). Nothing is submitted; the
    /// next [`set_frame`](Self::set_frame) sizes the buffers.
    pub fn resize(&mut self, num_characters: usize) {
        self.live_characters = num_characters;
    }

    /// Removes `character`, moving the last character's memory and output matrices into its
    /// place on the device, as
    /// [`crate::state::Crowd::despawn`] moves the last row of an archetype into the removed one
    /// and [`crate::eval::frame::EvalContext::swap_remove`] does on the CPU: every other
    /// character keeps what it displayed, so its transitions in flight carry on, and the next
    /// [`set_frame`](Self::set_frame) has one character fewer (plus any added, which start
    /// having shown nothing even where they take the freed row). Several removals between
    /// frames apply in order, each to the crowd the one before left. After spawns, call
    /// [`resize`](Self::resize) first, so that the row moved is the crowd's last, not the last
    /// frame's. Out-of-range characters are ignored.
    ///
    /// The copies are submitted at once (`memory_bytes_per_character` bytes and
    /// `output_bytes_per_character` bytes, each twice, through a scratch buffer: wgpu copies
    /// between distinct buffers only), so call this between frames, after the previous frame's
    /// commands were submitted.
    pub fn swap_remove(&mut self, character: usize) {
        if character >= self.live_characters {
            return;
        }
        let last = self.live_characters - 1;
        self.live_characters = last;
        let Some(frame) = self.frame.as_ref() else {
            return;
        };
        let memory_bytes = self.memory_bytes_per_character();
        let output_bytes = self.output_bytes_per_character();
        // A crowd whose layers all lack memory keeps none to move, only its output.
        let memory = frame.layered.as_ref().map(|(_, memory)| memory).filter(|_| memory_bytes > 0);
        let forget = |encoder: &mut wgpu::CommandEncoder, row: usize| {
            if let Some((buffer, states)) = memory.and_then(|memory| self.memory_blocks(memory, row)) {
                for at in states {
                    encoder.clear_buffer(buffer, at, Some(LAYER_STATE_BYTES));
                }
            }
        };
        if character >= frame.num_characters {
            // A character added since the last frame leaves: the device holds nothing of it.
            return;
        }
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng.swap_remove") });
        if last >= frame.num_characters {
            // The character moved into `character` was added since the last frame and has shown
            // nothing: the row forgets what its last occupant showed (its output is rewritten,
            // since a newcomer is due at once).
            forget(&mut encoder, character);
            self.queue.submit([encoder.finish()]);
            return;
        }
        if character != last {
            let scratch = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("throng.swap_remove"),
                size: memory_bytes.max(output_bytes).max(MIN_BUFFER_BYTES),
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut relocate = |runs: &Runs, bytes: u64| {
                if let (Some((from, from_at)), Some((to, to_at))) = (runs.locate(last), runs.locate(character)) {
                    encoder.copy_buffer_to_buffer(from, from_at, &scratch, 0, bytes);
                    encoder.copy_buffer_to_buffer(&scratch, 0, to, to_at, bytes);
                }
            };
            if let Some(memory) = memory {
                relocate(memory, memory_bytes);
            }
            // The output row moves too: a character that animation LOD skips next frame keeps
            // showing the matrices it had (`set_frame_due`).
            if output_bytes > 0 {
                relocate(&frame.output, output_bytes);
            }
        }
        // The freed row forgets what it showed, for whoever is added there before the crowd
        // shrinks (a despawn and a spawn in the same frame keep the count).
        forget(&mut encoder, last);
        self.queue.submit([encoder.finish()]);
    }

    /// For a frame whose samples outgrow one storage binding: each chunk's byte window of the
    /// samples its characters read (`span_of(first character, characters)` in samples), which
    /// must fit one binding ([`GpuError::CrowdTooLarge`], `"samples of one chunk"`). `None`
    /// while the whole buffer is bound.
    fn sample_windows(
        &self,
        span_of: impl Fn(usize, usize) -> (u64, u64),
    ) -> Result<Option<Vec<(u64, u64)>>, GpuError> {
        let Some(frame) = &self.frame else {
            return Ok(None);
        };
        let limits = self.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        if frame.samples.size() <= binding {
            return Ok(None);
        }
        let align = u64::from(limits.min_storage_buffer_offset_alignment);
        let sample_bytes = size_of::<ClipSample>() as u64;
        frame
            .chunks
            .iter()
            .map(|chunk| {
                let (lo, hi) = span_of(chunk.first_character as usize, chunk.num_characters as usize);
                let window = Window::new(lo * sample_bytes, (hi - lo) * sample_bytes, align);
                if window.size > binding {
                    let too_large = GpuError::CrowdTooLarge {
                        characters: frame.num_characters,
                        what: "samples of one chunk",
                        bytes: window.size,
                        limit: binding,
                        limit_name: "max_storage_buffer_binding_size",
                    };
                    return Err(too_large);
                }
                Ok((window.offset, window.size))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Rebinds the chunks whose sample window moved and tells their shaders where it starts.
    fn bind_sample_windows(&mut self, windows: &[(u64, u64)]) {
        let Some(frame) = self.frame.as_mut() else {
            return;
        };
        let sample_bytes = size_of::<ClipSample>() as u64;
        for (k, (chunk, &window)) in frame.chunks.iter_mut().zip(windows).enumerate() {
            if chunk.samples_window == window {
                continue;
            }
            let at = k as u64 * frame.params_stride;
            chunk.samples_window = window;
            chunk.frame = chunk_group(
                &self.device,
                &self.pipelines.layouts.chunk,
                (&frame.params, at),
                (&frame.samples, window),
                &frame.ranges,
                (&frame.output, chunk.output),
            );
            if let Some(p) = frame.chunk_params.get_mut(k) {
                // Window offsets are storage-aligned, so whole samples; a buffer of samples
                // indexed by u32 holds fewer than 2^32 of them.
                p.sample_base = (window.0 / sample_bytes) as u32;
                self.queue.write_buffer(&frame.params, at, bytemuck::bytes_of(p));
            }
        }
    }

    /// Rebuilds the frame's buffers unless they hold `num_characters` and `num_samples` already.
    fn ensure_frame(&mut self, num_characters: usize, num_samples: usize) -> Result<(), GpuError> {
        let fits = self
            .frame
            .as_ref()
            .is_some_and(|f| f.num_characters == num_characters && f.samples_capacity >= num_samples);
        if !fits {
            self.frame = Some(self.build_frame(num_characters, num_samples)?);
        }
        Ok(())
    }

    /// The most characters one dispatch may evaluate on this device.
    fn chunk_characters(&self, limits: &wgpu::Limits) -> u32 {
        let mut window_bytes = self.output_bytes_per_character().max(self.memory_bytes_per_character());
        if self.options.stage_buffers {
            window_bytes = window_bytes.max(self.num_joints as u64 * MODEL_BYTES);
        }
        let kernel = self.options.kernel;
        let grid = (kernel == FrameKernel::Fused, kernel.characters_per_workgroup(self.num_joints));
        chunk_characters(window_bytes, limits, grid, self.options.max_chunk_characters)
    }

    fn build_frame(&self, num_characters: usize, num_samples: usize) -> Result<FrameResources, GpuError> {
        let limits = self.device.limits();
        let n = num_characters as u64;
        let joints = self.num_joints as u64;
        let binding_limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        // Room to grow (a power of two), but never past one binding while the samples fit in
        // one: a million characters' 5 to 8 million samples would otherwise round up past it.
        let max_samples = (binding_limit / size_of::<ClipSample>() as u64) as usize;
        // A binding of the samples is whole samples: Vulkan and DX12 drivers report a binding
        // limit of 2³¹ − 1 bytes, and a binding's size must be a multiple of 4.
        let samples_binding = max_samples as u64 * size_of::<ClipSample>() as u64;
        let samples_capacity = num_samples.next_power_of_two().min(max_samples.max(num_samples));
        let too_large = |what, bytes: u64, limit, limit_name| GpuError::CrowdTooLarge {
            characters: num_characters,
            what,
            bytes,
            limit,
            limit_name,
        };
        // Past one binding, each chunk binds the window of samples its programs read
        // (`bind_sample_windows`), which one binding must hold.
        let samples_bytes = samples_capacity as u64 * size_of::<ClipSample>() as u64;
        if samples_bytes > limits.max_buffer_size {
            return Err(too_large("samples", samples_bytes, limits.max_buffer_size, "max_buffer_size"));
        }
        let ranges_bytes = n * size_of::<GpuSampleRange>() as u64;
        if ranges_bytes > binding_limit {
            return Err(too_large("sample ranges", ranges_bytes, binding_limit, "max_storage_buffer_binding_size"));
        }
        let (local_bytes, model_bytes) = (n * joints * LOCAL_BYTES, n * joints * MODEL_BYTES);
        if self.options.stage_buffers && model_bytes > limits.max_buffer_size {
            return Err(too_large("model matrices", model_bytes, limits.max_buffer_size, "max_buffer_size"));
        }
        let layers = self.num_layers() as u64;
        let programs_bytes = n * layers * PROGRAM_BYTES;
        if programs_bytes > binding_limit {
            return Err(too_large("layer programs", programs_bytes, binding_limit, "max_storage_buffer_binding_size"));
        }
        let chunk_characters = u64::from(self.chunk_characters(&limits));
        let memory_per_character = self.memory_bytes_per_character();
        let output_per_character = self.output_bytes_per_character();
        // Whole chunks per buffer; a chunk's window fits a binding, so at least one.
        let max_bytes = |option: Option<u64>| option.map_or(limits.max_buffer_size, |b| b.min(limits.max_buffer_size));
        let characters_per_buffer = Runs::characters_per_buffer(
            max_bytes(self.options.max_memory_buffer_bytes),
            memory_per_character,
            chunk_characters,
            n,
        );
        let output_per_buffer = Runs::characters_per_buffer(
            max_bytes(self.options.max_output_buffer_bytes),
            output_per_character,
            chunk_characters,
            n,
        );
        let buffer = |label: &str, size: u64, usage| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(MIN_BUFFER_BYTES),
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let samples = buffer("throng.samples", samples_bytes, U::STORAGE | U::COPY_DST);
        let ranges = buffer("throng.sample_ranges", ranges_bytes, U::STORAGE | U::COPY_DST);
        // Same character count (the samples outgrew their buffer): keep the output, which the
        // caller's bind groups may hold, and the intermediates.
        let kept = self.frame.as_ref().filter(|f| f.num_characters == num_characters);
        let output = kept.map_or_else(
            || {
                let usage = U::STORAGE | U::VERTEX | U::COPY_SRC | U::COPY_DST;
                let output =
                    Runs::allocate(&self.device, "throng.output", usage, n, output_per_buffer, output_per_character);
                // The characters that remain keep their matrices: one that animation LOD skips
                // next frame shows them still (`set_frame_due`).
                if let Some(old) = self.frame.as_ref().map(|f| &f.output) {
                    output.keep_from(old, &self.device, &self.queue, "throng.keep_output");
                }
                output
            },
            |f| f.output.clone(),
        );
        let stage_buffers = match kept {
            Some(f) => f.stage_buffers.clone(),
            None => self.options.stage_buffers.then(|| {
                (
                    buffer("throng.local_poses", local_bytes, U::STORAGE | U::COPY_SRC | U::COPY_DST),
                    buffer("throng.model_poses", model_bytes, U::STORAGE | U::COPY_SRC | U::COPY_DST),
                )
            }),
        };
        let layered = match kept {
            Some(f) => f.layered.clone(),
            None => self.layers.as_ref().map(|_| {
                let programs = buffer("throng.layer_programs", programs_bytes, U::STORAGE | U::COPY_DST);
                // Zeroed by wgpu: every character starts having shown nothing.
                let usage = U::STORAGE | U::COPY_SRC | U::COPY_DST;
                let memory = Runs::allocate(
                    &self.device,
                    "throng.layer_memory",
                    usage,
                    n,
                    characters_per_buffer,
                    memory_per_character,
                );
                // The characters that remain keep their memory (what their transitions read).
                if let Some((_, old)) = self.frame.as_ref().and_then(|f| f.layered.as_ref()) {
                    memory.keep_from(old, &self.device, &self.queue, "throng.keep_memory");
                }
                (programs, memory)
            }),
        };

        let num_chunks = n.div_ceil(chunk_characters);
        let params_stride = PARAMS_BYTES.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
        let params = buffer("throng.chunk_params", num_chunks * params_stride, U::UNIFORM | U::COPY_DST);
        let align = u64::from(limits.min_storage_buffer_offset_alignment);
        let output_layout = match self.options.layout {
            OutputLayout::Mat4 => LAYOUT_MAT4,
            OutputLayout::Affine3x4 => LAYOUT_AFFINE3X4,
        };
        let mut params_bytes = vec![0u8; (num_chunks * params_stride) as usize];
        let mut chunk_params = Vec::with_capacity(num_chunks as usize);
        let mut chunks = Vec::with_capacity(num_chunks as usize);
        let dt_s = self.frame.as_ref().and_then(|f| f.chunk_params.first()).map_or(0.0, |p| p.dt_s);
        for k in 0..num_chunks {
            let first = k * chunk_characters;
            let count = chunk_characters.min(n - first);
            let out =
                Window::new(first % output_per_buffer * output_per_character, count * output_per_character, align);
            let local = Window::new(first * joints * LOCAL_BYTES, count * joints * LOCAL_BYTES, align);
            let model = Window::new(first * joints * MODEL_BYTES, count * joints * MODEL_BYTES, align);
            let in_buffer = first % characters_per_buffer;
            let memory = Window::new(in_buffer * memory_per_character, count * memory_per_character, align);
            // Chunk sizes are at most 65,535 and crowds are refused before u32 overflows in
            // the shader's indices (bindings hold under 4 GiB).
            let p = GpuChunkParams {
                first_character: first as u32,
                num_characters: count as u32,
                num_joints: self.num_joints as u32,
                num_memory_layers: self.num_memory_layers() as u32,
                output_layout,
                output_base: out.base_vec4,
                local_base: local.base_vec4,
                model_base: model.base_vec4,
                memory_base: memory.base_vec4,
                num_layers: layers as u32,
                dt_s,
                sample_base: 0,
                due_list: 0,
                levels_start: self.levels.0,
                num_levels: self.levels.1,
                num_due: 0,
            };
            let at = (k * params_stride) as usize;
            params_bytes[at..at + PARAMS_BYTES as usize].copy_from_slice(bytemuck::bytes_of(&p));
            chunk_params.push(p);
            let output_at = ((first / output_per_buffer) as usize, out);
            // Until `bind_sample_windows` moves it: the whole buffer, or its first binding's worth.
            let samples_window = (0, samples.size().min(samples_binding));
            let frame = chunk_group(
                &self.device,
                &self.pipelines.layouts.chunk,
                (&params, k * params_stride),
                (&samples, samples_window),
                &ranges,
                (&output, output_at),
            );
            let stages = stage_buffers.as_ref().map(|(locals, models)| {
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("throng.stages"),
                    layout: &self.pipelines.layouts.stages,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: local.binding(locals) },
                        wgpu::BindGroupEntry { binding: 1, resource: model.binding(models) },
                    ],
                })
            });
            let memory_buffer =
                layered.as_ref().and_then(|(_, m)| m.buffers.get((first / characters_per_buffer) as usize));
            let layered_group =
                layered.as_ref().map(|(programs, _)| programs).zip(memory_buffer).map(|(programs, memory_buffer)| {
                    self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("throng.layered"),
                        layout: &self.pipelines.layouts.layered,
                        entries: &[
                            wgpu::BindGroupEntry { binding: 0, resource: programs.as_entire_binding() },
                            wgpu::BindGroupEntry { binding: 1, resource: memory.binding(memory_buffer) },
                        ],
                    })
                });
            chunks.push(Chunk {
                first_character: first,
                num_characters: count as u32,
                output: output_at,
                samples_window: (0, samples.size().min(samples_binding)),
                frame,
                stages,
                layered: layered_group,
            });
        }
        if !params_bytes.is_empty() {
            self.queue.write_buffer(&params, 0, &params_bytes);
        }
        Ok(FrameResources {
            num_characters,
            samples_capacity,
            samples,
            ranges,
            output,
            stage_buffers,
            layered,
            params,
            params_stride,
            chunk_params,
            chunks,
            due_counts: Vec::new(),
        })
    }

    /// Records the frame: the fused `frame` pipeline (after [`set_samples`](Self::set_samples))
    /// or `frame_layers` (after [`set_frame`](Self::set_frame)) of [`GpuCrowdOptions::kernel`],
    /// one dispatch per chunk: one workgroup per character ([`FrameKernel::Fused`]) or per
    /// [`FrameKernel::characters_per_workgroup`] on a grid of rows (and layers of rows)
    /// ([`FrameKernel::Levels`]). Nothing is recorded before the first frame is set.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        self.encode_frame(encoder, None);
    }

    /// [`encode`](Self::encode), writing timestamps `first_query` and `first_query + 1` of
    /// `query_set` at the start and end of the frame's compute pass (the device needs
    /// `Features::TIMESTAMP_QUERY`).
    pub fn encode_timed(&self, encoder: &mut wgpu::CommandEncoder, query_set: &wgpu::QuerySet, first_query: u32) {
        self.encode_frame(
            encoder,
            Some(wgpu::ComputePassTimestampWrites {
                query_set,
                beginning_of_pass_write_index: Some(first_query),
                end_of_pass_write_index: Some(first_query + 1),
            }),
        );
    }

    fn encode_frame(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let _zone = crate::zone!("throng.gpu.encode");
        let Some(frame) = &self.frame else {
            return;
        };
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("throng.frame"), timestamp_writes });
        let layered = self.pipelines.layered.as_ref().filter(|_| self.layered_frame);
        pass.set_pipeline(layered.map_or(&self.pipelines.frame, |p| &p.frame));
        pass.set_bind_group(0, &self.archetype, &[]);
        let per_workgroup = self.options.kernel.characters_per_workgroup(self.num_joints);
        let max_per_dimension = self.device.limits().max_compute_workgroups_per_dimension;
        for (k, chunk) in frame.chunks.iter().enumerate() {
            let characters = frame.dispatch_count(k, chunk);
            if characters == 0 {
                continue;
            }
            pass.set_bind_group(1, &chunk.frame, &[]);
            if layered.is_some() {
                pass.set_bind_group(3, chunk.layered.as_ref(), &[]);
            }
            let (x, y, z) = grid(characters.div_ceil(per_workgroup), max_per_dimension);
            pass.dispatch_workgroups(x, y, z);
        }
    }

    /// Records one stage of the stage-by-stage path, which reads and writes the intermediate
    /// buffers: `Sample` writes local poses, `LocalToModel` reads them and writes model
    /// matrices, `Skinning` reads those and writes the output. The three in order
    /// ([`Stage::ALL`]) give the same output as [`encode`](Self::encode) after
    /// [`set_samples`](Self::set_samples), at about three times the memory traffic; they exist
    /// to test and time each stage against its CPU mirror. After [`set_frame`](Self::set_frame),
    /// [`Stage::LAYERED`] in order does the same for the layered frame: `Transition` updates the
    /// characters' memory (it needs no stage buffers), `Layers` combines the layers' shown poses
    /// into local poses. Every stage but `Transition` needs
    /// [`GpuCrowdOptions::stage_buffers`] ([`GpuError::NoStageBuffers`]); `Transition` and
    /// `Layers` need layers ([`GpuError::NoLayers`]). The stages run one workgroup per character
    /// on a one-dimensional grid: a [`FrameKernel::Levels`] crowd whose chunks hold more
    /// characters than the device's `max_compute_workgroups_per_dimension` (65,535 on most)
    /// gets [`GpuError::DeviceLimit`]; lower [`GpuCrowdOptions::max_chunk_characters`] for it.
    pub fn encode_stage(&self, encoder: &mut wgpu::CommandEncoder, stage: Stage) -> Result<(), GpuError> {
        self.encode_one_stage(encoder, stage, None)
    }

    /// [`encode_stage`](Self::encode_stage), writing timestamps `first_query` and
    /// `first_query + 1` of `query_set` at the start and end of the stage's compute pass (the
    /// device needs `Features::TIMESTAMP_QUERY`), to time each stage on its own.
    pub fn encode_stage_timed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        query_set: &wgpu::QuerySet,
        first_query: u32,
    ) -> Result<(), GpuError> {
        let writes = wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: Some(first_query),
            end_of_pass_write_index: Some(first_query + 1),
        };
        self.encode_one_stage(encoder, stage, Some(writes))
    }

    fn encode_one_stage(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) -> Result<(), GpuError> {
        let _zone = crate::zone!("throng.gpu.encode");
        let layered = self.pipelines.layered.as_ref().filter(|_| self.layers.is_some());
        // The transition stage writes only the characters' memory; every other stage reads or
        // writes the intermediates, and is built only with them.
        let stages = self.pipelines.stages.as_ref().ok_or(GpuError::NoStageBuffers);
        let (pipeline, label) = match stage {
            Stage::Sample => (&stages?.sample, "throng.sample"),
            Stage::LocalToModel => (&stages?.local_to_model, "throng.local_to_model"),
            Stage::Skinning => (&stages?.skinning, "throng.skinning"),
            Stage::Transition => (&layered.ok_or(GpuError::NoLayers)?.transition, "throng.transition"),
            Stage::Layers => {
                (layered.ok_or(GpuError::NoLayers)?.layers.as_ref().ok_or(GpuError::NoStageBuffers)?, "throng.layers")
            }
        };
        let Some(frame) = &self.frame else {
            return Ok(());
        };
        // The stages run one workgroup per character on a one-dimensional grid; the level
        // kernels' chunks may hold more characters than that reaches.
        let max_per_dimension = self.device.limits().max_compute_workgroups_per_dimension;
        if let Some(largest) = frame.chunks.iter().map(|c| c.num_characters).max().filter(|&n| n > max_per_dimension) {
            return Err(GpuError::DeviceLimit {
                limit: "max_compute_workgroups_per_dimension",
                needed: largest.into(),
                got: max_per_dimension.into(),
            });
        }
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &self.archetype, &[]);
        for (k, chunk) in frame.chunks.iter().enumerate() {
            let workgroups = frame.dispatch_count(k, chunk);
            if workgroups == 0 {
                continue;
            }
            pass.set_bind_group(1, &chunk.frame, &[]);
            if stage != Stage::Transition {
                pass.set_bind_group(2, chunk.stages.as_ref(), &[]);
            }
            if matches!(stage, Stage::Transition | Stage::Layers) {
                pass.set_bind_group(3, chunk.layered.as_ref(), &[]);
            }
            pass.dispatch_workgroups(workgroups, 1, 1);
        }
        Ok(())
    }

    fn stage_buffers(&self) -> Result<Option<&(wgpu::Buffer, wgpu::Buffer)>, GpuError> {
        if !self.options.stage_buffers {
            return Err(GpuError::NoStageBuffers);
        }
        Ok(self.frame.as_ref().and_then(|f| f.stage_buffers.as_ref()))
    }

    fn check_len(&self, what: &'static str, got: usize) -> Result<(), GpuError> {
        let expected = self.num_characters() * self.num_joints;
        if got != expected {
            return Err(GpuError::LengthMismatch { what, expected, got });
        }
        Ok(())
    }

    /// Overwrites the local poses the `LocalToModel` stage reads (character `i`, joint `j` at
    /// `i * J + j`), to test that stage alone.
    pub fn write_local_poses(&self, poses: &[Transform]) -> Result<(), GpuError> {
        self.check_len("local poses", poses.len())?;
        if let Some((locals, _)) = self.stage_buffers()? {
            let packed: Vec<GpuTransform> = poses.iter().map(GpuTransform::from_transform).collect();
            self.queue.write_buffer(locals, 0, bytemuck::cast_slice(&packed));
        }
        Ok(())
    }

    /// Overwrites the model matrices the `Skinning` stage reads, to test that stage alone.
    pub fn write_model_matrices(&self, matrices: &[Mat4]) -> Result<(), GpuError> {
        self.check_len("model matrices", matrices.len())?;
        if let Some((_, models)) = self.stage_buffers()? {
            self.queue.write_buffer(models, 0, bytemuck::cast_slice(matrices));
        }
        Ok(())
    }

    /// Reads back the local poses the `Sample` stage wrote, waiting for the GPU.
    pub fn read_local_poses_blocking(&self) -> Result<Vec<Transform>, GpuError> {
        let Some((locals, _)) = self.stage_buffers()? else {
            return Ok(Vec::new());
        };
        let n = self.num_characters() * self.num_joints;
        let bytes = self.read_blocking(locals, n as u64 * LOCAL_BYTES, "local poses")?;
        Ok(bytemuck::pod_collect_to_vec::<u8, GpuTransform>(&bytes).iter().map(GpuTransform::to_transform).collect())
    }

    /// Reads back the model matrices the `LocalToModel` stage wrote, waiting for the GPU.
    pub fn read_model_matrices_blocking(&self) -> Result<Vec<Mat4>, GpuError> {
        let Some((_, models)) = self.stage_buffers()? else {
            return Ok(Vec::new());
        };
        let n = self.num_characters() * self.num_joints;
        let bytes = self.read_blocking(models, n as u64 * MODEL_BYTES, "model matrices")?;
        Ok(bytemuck::pod_collect_to_vec::<u8, f32>(&bytes).chunks_exact(16).map(Mat4::from_cols_slice).collect())
    }

    /// Reads back every layer's displayed pose from the characters' memory, waiting for the GPU:
    /// character `i`, layer `l`, joint `j` at `(i * layers + l) * J + j` (layers that keep
    /// memory only, [`num_memory_layers`](Self::num_memory_layers); all of them unless the
    /// setup says otherwise), what the transition
    /// stage made of the layer's samples last frame (layers that have shown nothing read as
    /// whatever their memory held). For tests of the transition stage; empty without layers.
    pub fn read_displayed_poses_blocking(&self) -> Result<Vec<Transform>, GpuError> {
        let Some((_, memory)) = self.frame.as_ref().and_then(|f| f.layered.as_ref()) else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::with_capacity((self.num_characters() as u64 * self.memory_bytes_per_character()) as usize);
        for (b, buffer) in memory.buffers.iter().enumerate() {
            let characters = memory.characters_in(b, self.num_characters());
            bytes.extend(self.read_blocking(buffer, characters * memory.bytes_per_character, "layer memory")?);
        }
        let per_layer = (LAYER_STATE_BYTES + self.num_joints as u64 * JOINT_STATE_BYTES) as usize;
        let layout = JointStateLayout { num_joints: self.num_joints };
        let mut poses = Vec::with_capacity(self.num_characters() * self.num_memory_layers() * self.num_joints);
        for block in bytes.chunks_exact(per_layer) {
            let (header, joints) = block.split_at(LAYER_STATE_BYTES as usize);
            let state: GpuLayerState = bytemuck::pod_read_unaligned(header);
            let slot = (state.flags >> STATE_SLOT_SHIFT) & 1;
            let joints: Vec<f32> = bytemuck::pod_collect_to_vec(joints);
            poses.extend((0..self.num_joints).map(|j| layout.slot(&joints, slot, j)));
        }
        Ok(poses)
    }

    /// Overwrites every layer's memory with `poses` displayed once (character `i`, layer `l`,
    /// joint `j` at `(i * layers + l) * J + j`, counting the layers that keep memory only),
    /// forgetting transitions in flight, to test the
    /// layers stage alone. Fails with [`GpuError::LengthMismatch`] unless there is one pose per
    /// joint per layer per character, and with [`GpuError::NoLayers`] without layers.
    pub fn write_displayed_poses(&self, poses: &[Transform]) -> Result<(), GpuError> {
        let expected = self.num_characters() * self.num_memory_layers() * self.num_joints;
        if poses.len() != expected {
            return Err(GpuError::LengthMismatch { what: "displayed poses", expected, got: poses.len() });
        }
        let Some((_, memory)) = self.frame.as_ref().and_then(|f| f.layered.as_ref()) else {
            return if self.layers.is_some() { Ok(()) } else { Err(GpuError::NoLayers) };
        };
        let shown_once = GpuLayerState { flags: 1 & STATE_SHOWN_MASK, ..GpuLayerState::default() };
        let layout = JointStateLayout { num_joints: self.num_joints };
        let mut bytes = Vec::with_capacity((self.num_characters() as u64 * self.memory_bytes_per_character()) as usize);
        for layer in poses.chunks_exact(self.num_joints.max(1)) {
            bytes.extend_from_slice(bytemuck::bytes_of(&shown_once));
            let mut joints = vec![0.0f32; layout.floats()];
            for (j, pose) in layer.iter().enumerate() {
                layout.set_slot(&mut joints, 0, j, pose);
            }
            bytes.extend_from_slice(bytemuck::cast_slice(&joints));
        }
        let per_buffer = (memory.characters_per_buffer * memory.bytes_per_character) as usize;
        for (buffer, bytes) in memory.buffers.iter().zip(bytes.chunks(per_buffer.max(1))) {
            self.queue.write_buffer(buffer, 0, bytes);
        }
        Ok(())
    }

    /// Reads back the whole output, waiting for the GPU: `characters × joints ×
    /// layout.floats_per_joint()` floats, the layout [`crate::eval::EvalCrowdJob`] writes.
    /// For tools and tests; a renderer binds [`output`](Self::output) instead.
    pub fn read_output_blocking(&self) -> Result<Vec<f32>, GpuError> {
        let Some(frame) = &self.frame else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::with_capacity(frame.num_characters * self.output_bytes_per_character() as usize);
        for (b, buffer) in frame.output.buffers.iter().enumerate() {
            bytes.extend(self.read_blocking(
                buffer,
                frame.output.characters_in(b, frame.num_characters) * frame.output.bytes_per_character,
                "output",
            )?);
        }
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Copies `bytes` of `buffer` into a mappable buffer, submits, waits, and returns them.
    fn read_blocking(&self, buffer: &wgpu::Buffer, bytes: u64, what: &'static str) -> Result<Vec<u8>, GpuError> {
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng.readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng.readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // The receiver outlives the poll below; a failed send cannot happen.
            let _ = sender.send(result);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(GpuError::Poll)?;
        match receiver.recv() {
            Ok(Ok(())) => {}
            Ok(Err(source)) => return Err(GpuError::Readback { what, source }),
            Err(_) => return Err(GpuError::Readback { what, source: wgpu::BufferAsyncError }),
        }
        let data = staging
            .get_mapped_range(..)
            .map(|view| view.to_vec())
            .map_err(|_| GpuError::Readback { what, source: wgpu::BufferAsyncError });
        staging.unmap();
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_asked_for_are_those_of_the_pipelines_built() {
        // WebGPU's defaults (8 storage buffers a stage, 4 groups) run the plain and the layered
        // frame and the plain stage path; only the layered stage path needs 10. The error names
        // the limit.
        let webgpu = wgpu::Limits::default();
        assert!(
            [(false, false), (false, true), (true, false)].into_iter().all(|(layered, stages)| check_limits(
                &webgpu,
                FrameKernel::Fused,
                layered,
                stages
            )
            .is_ok())
        );
        assert!(matches!(
            check_limits(&webgpu, FrameKernel::Fused, true, true),
            Err(GpuError::DeviceLimit { limit: "max_storage_buffers_per_shader_stage", needed: 10, got: 8 })
        ));
        let mut device = wgpu::Limits { max_storage_buffers_per_shader_stage: 7, ..webgpu };
        assert!(check_limits(&device, FrameKernel::Fused, false, false).is_ok());
        assert!(matches!(
            check_limits(&device, FrameKernel::Fused, true, false),
            Err(GpuError::DeviceLimit { limit: "max_storage_buffers_per_shader_stage", needed: 8, got: 7 })
        ));
        device.max_storage_buffers_per_shader_stage = 10;
        assert!(check_limits(&device, FrameKernel::Fused, true, true).is_ok());
        device.max_bind_groups = 3;
        assert!(check_limits(&device, FrameKernel::Fused, false, true).is_ok());
        assert!(matches!(
            check_limits(&device, FrameKernel::Fused, true, false),
            Err(GpuError::DeviceLimit { limit: "max_bind_groups", needed: 4, got: 3 })
        ));
    }

    fn limits(binding_mib: u64, workgroups: u32) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: binding_mib << 20,
            max_buffer_size: 1 << 40,
            max_compute_workgroups_per_dimension: workgroups,
            min_storage_buffer_offset_alignment: 256,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn chunks_fit_one_binding_and_the_workgroup_limit() {
        // lavapipe: 128 MiB bindings. A 64-joint mat4 character is 4 KiB: 32,767 characters
        // (not 32,768: the window may start up to 256 bytes before the chunk).
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), None), 32_767);
        // A large binding leaves the workgroup limit as the bound.
        assert_eq!(chunk_characters(4096, &limits(4096, 65_535), (true, 1), None), 65_535);
        // The level kernels' grid of rows leaves the binding as the only bound, but on a device
        // of 2 workgroups a dimension, 8 workgroups of 4 characters.
        assert_eq!(chunk_characters(4096, &limits(4096, 65_535), (false, 4), None), 1_048_575);
        assert_eq!(chunk_characters(4096, &limits(4096, 2), (false, 4), None), 32);
        // A test's request lowers the chunk but never raises it past the device, nor to 0.
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(7)), 7);
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(0)), 1);
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(100_000)), 32_767);
    }

    #[test]
    fn level_kernels_ask_for_their_workgroup() {
        // 256 threads and 16 KiB of workgroup memory: WebGPU's defaults exactly.
        let webgpu = wgpu::Limits::default();
        assert!(check_limits(&webgpu, FrameKernel::Levels, true, false).is_ok());
        let small = wgpu::Limits { max_compute_invocations_per_workgroup: 128, ..webgpu.clone() };
        assert!(check_limits(&small, FrameKernel::Fused, true, false).is_ok());
        assert!(matches!(
            check_limits(&small, FrameKernel::Levels, true, false),
            Err(GpuError::DeviceLimit { limit: "max_compute_invocations_per_workgroup", needed: 256, got: 128 })
        ));
        let small = wgpu::Limits { max_compute_workgroup_storage_size: 16_000, ..webgpu };
        assert!(matches!(
            check_limits(&small, FrameKernel::Levels, false, false),
            Err(GpuError::DeviceLimit { limit: "max_compute_workgroup_storage_size", needed: 16_384, got: 16_000 })
        ));
    }

    #[test]
    fn grids_cover_every_workgroup_in_rows() {
        assert_eq!(grid(10, 65_535), (10, 1, 1));
        assert_eq!(grid(65_535, 65_535), (65_535, 1, 1));
        // 250,000 workgroups (a million 64-joint characters, 4 a workgroup): 4 rows.
        assert_eq!(grid(250_000, 65_535), (65_535, 4, 1));
        assert_eq!(grid(7, 3), (3, 3, 1));
        // Past the limit's square, layers of rows.
        assert_eq!(grid(7, 2), (2, 2, 2));
        assert_eq!(grid(9, 2), (2, 2, 3));
    }

    #[test]
    fn windows_start_aligned_and_cover_the_chunk() {
        // 13 joints × 64 bytes × 7 characters: chunk 1 starts at 5,824 bytes.
        let w = Window::new(5_824, 5_824, 256);
        assert_eq!(w.offset, 5_632);
        assert_eq!(u64::from(w.base_vec4) * VEC4_BYTES, 192);
        assert_eq!(w.offset + w.size, 5_824 + 5_824);
    }
}
