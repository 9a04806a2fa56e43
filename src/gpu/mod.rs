//! The GPU evaluator: wgpu compute shaders that mirror [`crate::eval`] stage by stage.
//!
//! ```text
//! once per archetype          every frame                    GPU, a dispatch per chunk (and pass)
//! ──────────────────          ───────────                    ────────────────────────────────────
//!                                                            sample_positions: each sample's
//!                                                            frame coordinate, once (first)
//! rig joints, clip headers,   ClipSample[] + ranges  ──►     frame: sample ─► local_to_model
//! clip frames (frame-major)   (set_samples)                         ─► skinning ─► output
//! (+ layer table: setups,     ClipSample[] +          ──►    frame_layers: per layer sample ─►
//!  masks, with_layers)        LayerProgram[], dt             transition ─► layers; then
//!                             (set_frame)                    local_to_model ─► skinning
//!                                                            (layer memory kept on the device;
//!                                                            a steady pass, then a switching one)
//! ```
//!
//! [`GpuCrowd`] owns one archetype's buffers and pipelines on the caller's
//! [`wgpu::Device`]; [`GpuCrowd::set_samples`] mirrors [`crate::eval::EvalCrowdJob`] and
//! [`GpuCrowd::set_frame`] (on a crowd built [`GpuCrowd::with_layers`]) mirrors
//! [`crate::eval::frame_layers::FrameJob`]; [`GpuCrowd::encode`] records the frame into the caller's encoder and
//! [`GpuCrowd::output`] is the skinning-matrix buffer a vertex shader binds (character `i`,
//! joint `j` at `i * J + j`); [`GpuCrowd::swap_remove`] moves a character's device memory as
//! [`crate::state::Crowd::despawn`] moves its row. [`GpuProfiler`] times each pass with timestamp
//! queries (and feeds Tracy's GPU timeline with the `tracy` feature). [`GpuContext`] creates a
//! device for tools and tests. See
//! `docs/gpu.md` for buffers, chunking and bytes per character.

pub mod blend_space;
mod context;
mod crowd;
mod pipelines;
pub mod procedural;
mod profile;
pub mod stats;
pub mod types;
mod windows;
pub mod work_model;

pub use blend_space::{GpuBlendSpace, GpuBlendSpaceError};
pub use context::GpuContext;
pub use crowd::{EXPAND_WORKGROUP, ExpandParams, GpuCrowd, GpuCrowdOptions, Stage, UPLOAD_HEADER_WORDS};
pub use pipelines::{
    FrameKernel, Hierarchy, MeasuredPath, ShaderModuleKind, ShapePass, Specialisation, blend_space_source,
    expand_source, layer_stack, memory_layers, procedural_source, shader_source, specialised_source,
};
pub use procedural::GpuProcedural;
pub use profile::{GpuClockAlignment, GpuFrameTimes, GpuProfiler, GpuZoneTime};
pub use windows::{SkinWindow, skin_windows};

use crate::program::ProgramError;

/// Why the GPU evaluator could not do what was asked. Nothing is submitted when a call fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No adapter (GPU or software rasteriser) was found.
    #[error("no GPU adapter found: {0}")]
    NoAdapter(#[source] wgpu::RequestAdapterError),
    /// The adapter refused to create a device.
    #[error("the adapter refused to create a device: {0}")]
    RequestDevice(#[source] wgpu::RequestDeviceError),
    /// The caller's device has a limit below what the evaluator's pipelines need.
    #[error("device limit {limit} is {got}; the GPU evaluator needs at least {needed}")]
    DeviceLimit {
        /// The `wgpu::Limits` field.
        limit: &'static str,
        /// What the evaluator needs.
        needed: u64,
        /// What the device has.
        got: u64,
    },
    /// A buffer the crowd needs is larger than the device allows.
    #[error("{characters} characters need {bytes} bytes of {what}; the device allows {limit} ({limit_name})")]
    CrowdTooLarge {
        /// Characters asked for.
        characters: usize,
        /// Which buffer: `"output window"`, `"samples"`, `"samples of one chunk"`, `"sample
        /// ranges"`, `"model matrices"`, `"layer programs"`, `"joints read back"`.
        what: &'static str,
        /// Bytes it would need.
        bytes: u64,
        /// The device's limit, bytes.
        limit: u64,
        /// The `wgpu::Limits` field that sets it.
        limit_name: &'static str,
    },
    /// The archetype's clip frames do not fit in one storage binding.
    #[error("the clips hold {bytes} bytes of frames; one storage binding holds at most {limit}")]
    ClipsTooLarge {
        /// Bytes of clip frames.
        bytes: u64,
        /// `max_storage_buffer_binding_size`.
        limit: u64,
    },
    /// The clips or pose programs were refused, with the same checks as the CPU evaluator.
    #[error("pose programs refused: {0}")]
    Program(#[from] ProgramError),
    /// Data written to an intermediate buffer does not have one entry per joint per character.
    #[error("{what}: {got} entries given, {expected} expected (characters × joints)")]
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Entries needed.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A layered call ([`GpuCrowd::set_frame`], the transition and layers stages) was made on a
    /// crowd built without layers ([`GpuCrowd::new`] rather than [`GpuCrowd::with_layers`]).
    #[error("this crowd has no layers: build it with GpuCrowd::with_layers")]
    NoLayers,
    /// [`GpuCrowd::read_displayed_poses_blocking`] met a layer whose displayed pose the fused
    /// frame did not store: it keeps the samples that replay the pose when a switch needs it.
    /// The transition stage ([`Stage::Transition`]) stores every displayed pose.
    #[error(
        "character {character}'s layer memory slot {layer} keeps what replays its displayed pose, not the pose: read displayed poses after the transition stage"
    )]
    DisplayedPoseNotStored {
        /// The character.
        character: usize,
        /// The layer's memory slot (layers that keep memory, in layer order).
        layer: usize,
    },
    /// A stage-by-stage call was made on a crowd built without
    /// [`GpuCrowdOptions::stage_buffers`].
    #[error("stage-by-stage evaluation needs GpuCrowdOptions::stage_buffers = true")]
    NoStageBuffers,
    /// A joint asked for ([`GpuCrowd::read_joints_blocking`]) is past the rig's joints.
    #[error("joint {joint} asked for; the rig has {num_joints}")]
    JointOutOfRange {
        /// The joint asked for.
        joint: usize,
        /// Joints of the crowd's rig.
        num_joints: usize,
    },
    /// Mapping a readback buffer failed.
    #[error("reading back {what} failed: {source}")]
    Readback {
        /// Which buffer.
        what: &'static str,
        /// wgpu's error.
        #[source]
        source: wgpu::BufferAsyncError,
    },
    /// The blend-space stage refused its input ([`GpuBlendSpace::weights_blocking`]).
    #[error("blend-space stage: {0}")]
    BlendSpace(#[from] GpuBlendSpaceError),
    /// The procedural stage refused its setup or targets ([`GpuProcedural::run_blocking`],
    /// [`GpuCrowd::set_procedural`]), with the CPU stage's checks.
    #[error("procedural stage: {0}")]
    Procedural(#[from] crate::program::ProceduralError),
    /// A records frame ([`GpuCrowd::set_frame_records`]) on a crowd given no expansion
    /// ([`GpuCrowd::set_expansion`]), or an expansion whose tables do not fit the crowd: its
    /// layers, its clips, or the blend trees' header.
    #[error("expand stage: {0}")]
    Expansion(String),
    /// Waiting for the device failed (device lost or timed out).
    #[error("waiting for the GPU failed: {0}")]
    Poll(#[source] wgpu::PollError),
    /// A frame a crowd built with a measurement [`Specialisation`]
    /// ([`GpuCrowdOptions::specialisation`]) cannot evaluate: a layer that keeps memory switches
    /// or fades from a frozen snapshot (the first such `character` and `layer`, in programs or
    /// state records). Nothing is written.
    #[error(
        "the crowd's layered frame is compiled {specialisation:?}, for measurement: character {character}'s layer {layer} switches or fades from a snapshot this frame"
    )]
    Specialised {
        /// The crowd's specialisation.
        specialisation: Specialisation,
        /// The first character that switches.
        character: usize,
        /// Its layer (the archetype's index).
        layer: usize,
    },
}

/// Records one compute pass labelled `label` with `record`, copies the first `bytes` of `source`
/// into a fresh staging buffer, submits, and reads them back as `T`s: the blocking runners of a
/// single stage (tests and tools, not the frame's path) and the subgroup probe at a crowd's
/// creation; `what` names the data in errors.
pub(crate) fn run_pass_and_read<T: bytemuck::Pod>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &'static str,
    source: &wgpu::Buffer,
    bytes: u64,
    what: &'static str,
    record: impl FnOnce(&mut wgpu::ComputePass<'_>),
) -> Result<Vec<T>, GpuError> {
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("throng.readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        record(&mut pass);
    }
    encoder.copy_buffer_to_buffer(source, 0, &staging, 0, bytes);
    queue.submit([encoder.finish()]);
    map_read_blocking(device, &staging, bytes, what)
}

/// Maps `buffer`'s first `bytes` for reading (a `MAP_READ` buffer whose copies were submitted),
/// waits for the device, and returns them as `T`s; `what` names the data in errors.
pub(crate) fn map_read_blocking<T: bytemuck::Pod>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    bytes: u64,
    what: &'static str,
) -> Result<Vec<T>, GpuError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, ..bytes, move |result| {
        // The receiver outlives the poll below; a failed send cannot happen.
        let _ = sender.send(result);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(GpuError::Poll)?;
    match receiver.recv() {
        Ok(Ok(())) => {}
        Ok(Err(source)) => return Err(GpuError::Readback { what, source }),
        Err(_) => return Err(GpuError::Readback { what, source: wgpu::BufferAsyncError }),
    }
    let data = buffer
        .get_mapped_range(..bytes)
        .map(|view| bytemuck::pod_collect_to_vec(&view))
        .map_err(|_| GpuError::Readback { what, source: wgpu::BufferAsyncError });
    buffer.unmap();
    data
}
