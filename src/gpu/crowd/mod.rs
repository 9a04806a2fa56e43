//! One archetype's crowd on the GPU, split by concern:
//!
//! - this file: the options, the crowd, its archetype upload and pipelines, and what it reports;
//! - `limits`: what the device must allow, and how many characters one dispatch may take;
//! - `buffers`: per-character buffers split into runs, chunk windows and bind groups, rebuilt
//!   when the crowd's size changes;
//! - `upload`: each frame's samples or layer programs, written where the chunks read them;
//! - `characters`: spawning, despawning and forgetting, moving rows on the device;
//! - `encode`: the frame and the stage path as lists of dispatches;
//! - `procedural`: the procedural stage's setup, targets and dispatches on the stage path;
//! - `readback`: the stage path's buffers written and read back, for tests and tools.

mod buffers;
mod characters;
mod encode;
mod expand;
mod limits;
mod procedural;
mod readback;
mod upload;

pub use expand::{EXPAND_WORKGROUP, ExpandParams, UPLOAD_HEADER_WORDS};

use buffers::{FrameResources, Runs, Window, chunk_group, sample_span};
use limits::{check_limits, chunk_characters, grid, subgroups_are_full};

use super::GpuError;
use super::pipelines::{FrameKernel, Hierarchy, Pipelines, Specialisation, layer_stack, layer_table};
use super::types::{
    GpuChunkParams, GpuClipHeader, GpuLayerState, GpuRigJoint, GpuRigTables, GpuSampleRange, GpuTransform,
    JOINT_STATE_BYTES, LAYER_HEADER_BYTES, clip_data,
};
use crate::clip::Clip;
use crate::program::{
    LayerProgram, LayerSetup, OutputLayout, num_additive_layers, validate_clips, validate_layer_setups,
};
use crate::rig::Rig;

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
    /// same for every one. Defaults to the variant a device measured fastest ([`FrameKernel`]: `Fused`).
    pub kernel: FrameKernel,
    /// For measurement only: the layered frame's kernel compiled without the switch frame's
    /// code ([`Specialisation::Steady`]) or also without the decay
    /// ([`Specialisation::Settled`]), so that a device run can time what that code costs frames
    /// that never run it (`scripts/gpu-bench.sh`'s `steady` rows). Such a crowd refuses
    /// ([`GpuError::Specialised`]) a frame, of programs or state records, in which a layer that
    /// keeps memory switches or fades from a frozen snapshot; without them nothing captures,
    /// freezes or starts to decay, and the matrices are the production kernel's. Or
    /// [`Specialisation::Stored`]: each layer's displayed pose stored every frame rather than
    /// replayed from its samples at a switch (more bytes, fewer instructions; every frame
    /// evaluated), for a device run to weigh; or [`Specialisation::Whole`]: every character in
    /// the production kernel, as the layered frame ran before its steady pass.
    /// [`Specialisation::Production`] (the default) for everything else: the layered frame in
    /// two passes, the characters whose frame runs no switch code (no layer that keeps memory
    /// switches or fades from a frozen snapshot) in the steady kernel, which an NVIDIA H200 ran
    /// 25 % faster than the production kernel on such frames with `FrameKernel::Levels`
    /// (BENCHMARKS.md "The steady pass"; `Fused`'s figure waits for a device), then the others
    /// in the production kernel; the same matrices.
    pub specialisation: Specialisation,
    /// How the fused frames compose the rig's hierarchy ([`Hierarchy`]): ancestor walks, depth
    /// by depth in one subgroup or by pointer doubling (the default, the variant the proxies
    /// favour until a device times them), which the crowd runs where it
    /// [`fits`](Hierarchy::fits) the device and rig ([`GpuCrowd::hierarchy`] says what runs);
    /// the same matrices (within rounding for pointer doubling, which groups the products
    /// otherwise).
    pub hierarchy: Hierarchy,
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
    /// Local poses through look-at chains, two-bone IK and feet on the ground, in place
    /// (`shaders/procedural.wgsl`, [`crate::eval::procedural`]); after
    /// [`GpuCrowd::set_procedural`], between the stage that writes local poses and
    /// `LocalToModel`.
    Procedural,
}

impl Stage {
    /// The stages of [`GpuCrowd::set_samples`]'s frame, in order.
    pub const ALL: [Self; 3] = [Self::Sample, Self::LocalToModel, Self::Skinning];
    /// The stages of [`GpuCrowd::set_frame`]'s layered frame, in order.
    pub const LAYERED: [Self; 4] = [Self::Transition, Self::Layers, Self::LocalToModel, Self::Skinning];
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
    /// What the fused frames run: `options.hierarchy` where it fits the device and rig.
    hierarchy: Hierarchy,
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
    /// Where the rig's bands of depth levels start in `throng.rig_tables`, and how many there
    /// are (the level kernels' `ChunkParams::levels_start`, `num_bands`).
    levels: (u32, u32),
    /// Where the rig's ancestors a round of pointer doubling start in `throng.rig_tables`
    /// (`ChunkParams::doubling_start`).
    doubling_start: u32,
    ranges_scratch: Vec<GpuSampleRange>,
    /// The rig's parents, for the procedural stage's words.
    parents: Vec<u16>,
    /// The procedural stage's setup and targets, after [`set_procedural`](Self::set_procedural).
    procedural: Option<procedural::CrowdProcedural>,
    /// The expand stage's tables and buffers, after [`set_expansion`](Self::set_expansion).
    expansion: Option<expand::Expansion>,
    /// Whether the last frame set was [`set_frame_records`](Self::set_frame_records)'s: each
    /// encode expands the records before the frame reads programs and samples.
    expanding: bool,
}

/// An archetype's layers on the device.
struct Layers {
    /// The setups, in layer order, to check each frame's programs against.
    setups: Vec<LayerSetup>,
    /// Layers that keep memory per character ([`LayerSetup::needs_memory`]).
    num_memory: usize,
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

impl GpuCrowd {
    /// Uploads the archetype (rig joints, clip headers, every clip's frames) once and builds
    /// the pipelines. The crowd starts empty; [`set_samples`](Self::set_samples) sizes it.
    ///
    /// Fails when a clip's joint count differs from the rig's, when the clip frames do not
    /// fit in one storage binding, when the device's limits are below what the pipelines
    /// need, or when the device is lost while a crowd asking for [`Hierarchy::Subgroup`] asks
    /// it whether its subgroups are full ([`GpuError::Poll`], [`GpuError::Readback`]).
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
    /// [`crate::eval::frame_layers::FrameJob`]: also uploads the archetype's layers (blend, space,
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
        check_limits(&limits, options.kernel, rig.num_joints(), layers.is_some(), options.stage_buffers)?;
        validate_clips(rig, clips, layers.map_or(0, num_additive_layers))?;
        let rig_tables = GpuRigJoint::from_rig(rig);
        let info = device.adapter_info();
        let mut hierarchy = options.hierarchy.fits(
            options.kernel,
            &rig_tables,
            device.features(),
            [info.subgroup_min_size, info.subgroup_max_size],
        );
        // The subgroup kernels' one assumption no limit states, asked of the device itself.
        if hierarchy.uses_subgroups() && !subgroups_are_full(device, queue)? {
            hierarchy = Hierarchy::Walks;
        }
        let doubling_rounds = rig_tables.doubling_rounds();
        let GpuRigTables { mut joints, paths, levels, num_bands, doubling } = rig_tables;
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
        // The bands hold a few words a joint for each character of a workgroup: inside u32.
        let doubling_start = tables.len() as u32;
        tables.extend(&doubling);
        let rig_joints = init("throng.rig_joints", bytemuck::cast_slice(&joints));
        let clip_data = init("throng.clip_data", bytemuck::cast_slice(&data));
        let rig_tables = init("throng.rig_tables", bytemuck::cast_slice(&tables));
        let compact_clips = clips.iter().any(|clip| clip.compact_format().is_some());
        let pipelines = Pipelines::new(
            device,
            rig.num_joints(),
            options.kernel,
            hierarchy,
            doubling_rounds,
            layers.is_some(),
            options.stage_buffers,
            compact_clips,
            options.specialisation,
            &layers.map(layer_stack).unwrap_or_default(),
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
            hierarchy,
            num_joints: rig.num_joints(),
            num_clips: clips.len(),
            pipelines,
            archetype,
            layers,
            frame: None,
            layered_frame: false,
            live_characters: 0,
            levels: (levels_start, num_bands),
            doubling_start,
            ranges_scratch: Vec::new(),
            parents: rig.parents().to_vec(),
            procedural: None,
            expansion: None,
            expanding: false,
        })
    }

    /// How this crowd's fused frames compose the hierarchy: what its options asked for where
    /// it [`fits`](Hierarchy::fits) the device and rig (and, for [`Hierarchy::Subgroup`], where
    /// the device answered at creation that it splits a workgroup into full subgroups),
    /// [`Hierarchy::Walks`] otherwise.
    #[must_use]
    pub fn hierarchy(&self) -> Hierarchy {
        self.hierarchy
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
    /// that keeps memory a 320-byte header ([`LAYER_HEADER_BYTES`]: its [`GpuLayerState`] and
    /// the replay entries of its displayed poses) and [`JOINT_STATE_BYTES`] (144) per joint.
    /// 19,072 bytes for a 64-joint archetype with two such layers; 9,536 for the built-in graph.
    #[must_use]
    pub fn memory_bytes_per_character(&self) -> u64 {
        self.num_memory_layers() as u64 * self.layer_block_bytes()
    }

    /// Bytes of one layer's block in a character's memory.
    fn layer_block_bytes(&self) -> u64 {
        LAYER_HEADER_BYTES + self.num_joints as u64 * JOINT_STATE_BYTES
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
}
