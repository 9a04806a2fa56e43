//! The procedural stage in a crowd (`shaders/procedural.wgsl`, [`crate::gpu::procedural`]):
//! the setup uploaded once, each call's targets packed into one buffer (written over the last
//! call's while the crowd and its buffers stay the same), and one dispatch per
//! chunk over the chunk's window of the stage path's local poses, recorded between layers (or
//! sampling) and local-to-model.
//!
//! Under animation LOD ([`GpuCrowd::set_frame_due`]) the stage path evaluates the due
//! characters alone, and the targets are written with every row that is not due set to 0: the
//! stage reads such a row's weights and leaves its pose alone, so it costs what the due rows
//! cost, and the pose a skipped character keeps showing is not touched.
//!
//! The fused frames keep each character's local pose in registers and workgroup memory, split
//! over a workgroup's threads, where the stage's chains (one thread walking a character's
//! joints in order) would serialise the whole workgroup behind one thread; so a crowd with
//! procedural work runs the stage path instead, and one without any keeps the fused frame.

use super::buffers::Window;
use super::{GpuCrowd, LOCAL_BYTES, Stage};
use crate::gpu::GpuError;
use crate::gpu::procedural::{GpuProcedural, ProceduralParams, pack_targets, procedural_groups, target_stride};
use crate::program::{ProceduralRig, ProceduralTargets};
use wgpu::util::DeviceExt;

/// The stage's setup on the device and, while any character has work, the frame's targets and
/// per-chunk bind groups.
pub(super) struct CrowdProcedural {
    stage: GpuProcedural,
    /// Characters the targets were set for: a frame of another size runs without them.
    num_characters: usize,
    /// Per chunk, the uniform and bind group; empty when no character has work.
    chunks: Vec<(wgpu::Buffer, wgpu::BindGroup)>,
    /// The packed targets the chunks' bind groups read, while any character has work.
    targets: Option<wgpu::Buffer>,
    /// The stage path's local-pose buffer the bind groups were made over: a frame that
    /// replaced it needs new ones.
    locals: Option<wgpu::Buffer>,
    /// The packed targets of every row, kept so that a call per frame does not allocate and
    /// a frame with another due list can write them again.
    packed: Vec<f32>,
    /// Scratch for the targets of a due list's rows (the others 0).
    masked: Vec<f32>,
    /// The due rows the targets on the device were written for (`None`: every row).
    written_for: Option<Vec<u32>>,
}

impl CrowdProcedural {
    /// Whether the stage runs for a frame of `num_characters`.
    pub(super) fn runs_for(&self, num_characters: usize) -> bool {
        !self.chunks.is_empty() && self.num_characters == num_characters
    }
}

impl GpuCrowd {
    /// Sets the procedural stage's setup and each character's targets (row `i` for character
    /// `i`, as [`crate::eval::frame_layers::FrameJob::run_procedural`] reads them): from the
    /// next [`encode`](Self::encode) on, the frame runs local poses through look-at chains,
    /// two-bone IK and feet on the ground between layers and skinning. Call it after each
    /// [`set_frame`](Self::set_frame) or [`set_samples`](Self::set_samples) whose targets
    /// changed, and after the crowd's size or order changes (a frame of another size runs
    /// without the stage until it is called again).
    ///
    /// A crowd whose rows all have weight 0 costs nothing: no upload, and the fused frame as
    /// before. One with any procedural work runs the stage path (sample or transition and
    /// layers, then the procedural stage, local-to-model and skinning), so it needs
    /// [`GpuCrowdOptions::stage_buffers`](super::GpuCrowdOptions::stage_buffers); rows with
    /// weight 0 there cost the stage a look at their weights.
    ///
    /// Under animation LOD ([`set_frame_due`](Self::set_frame_due)) the stage runs on the due
    /// characters alone, as [`crate::eval::frame_layers::FrameJob::run_due_procedural`] does:
    /// the others keep showing their last pose. The rows that are not due are written with
    /// weight 0, and written again by a later `set_frame_due` with another due list.
    ///
    /// # Errors
    /// [`GpuError::NoStageBuffers`] without stage buffers; [`GpuError::Procedural`] when the
    /// setup was checked against another rig or the targets are not one row per character of
    /// the crowd. Nothing changes on an error.
    pub fn set_procedural(&mut self, setup: &ProceduralRig, targets: &ProceduralTargets) -> Result<(), GpuError> {
        if self.pipelines.stages.is_none() {
            return Err(GpuError::NoStageBuffers);
        }
        let characters = self.num_characters();
        targets.validate_for(setup, self.num_joints, characters)?;
        let mut previous = self.procedural.take().filter(|p| p.stage.setup() == setup);
        let mut packed = previous.as_mut().map(|p| std::mem::take(&mut p.packed)).unwrap_or_default();
        let masked = previous.as_mut().map(|p| std::mem::take(&mut p.masked)).unwrap_or_default();
        let active = (0..characters).any(|row| targets.is_active(row));
        let (Some(frame), true) = (&self.frame, active) else {
            let stage = match previous {
                Some(p) => p.stage,
                None => GpuProcedural::for_parents(&self.device, &self.parents, setup)?,
            };
            self.procedural = Some(CrowdProcedural {
                stage,
                num_characters: characters,
                chunks: Vec::new(),
                targets: None,
                locals: None,
                packed,
                masked,
                written_for: None,
            });
            return Ok(());
        };
        let locals = &frame.stage_buffers.as_ref().ok_or(GpuError::NoStageBuffers)?.0;
        let stride = target_stride(setup);
        packed.clear();
        for row in 0..characters {
            pack_targets(targets, row, &mut packed);
        }
        packed.resize(packed.len().max(1), 0.0);
        let bytes = std::mem::size_of_val(packed.as_slice()) as u64;
        // Same setup, crowd and local-pose buffer as the last call: only the targets changed,
        // so they are written over the old ones and the bind groups stay.
        let reusable = previous.as_ref().is_some_and(|p| {
            p.num_characters == characters
                && p.locals.as_ref() == Some(locals)
                && p.targets.as_ref().is_some_and(|b| b.size() == bytes)
        });
        if reusable && let Some(p) = previous {
            self.procedural = Some(CrowdProcedural { packed, masked, written_for: None, ..p });
            self.write_procedural_targets_now();
            return Ok(());
        }
        let stage = match previous {
            Some(p) => p.stage,
            None => GpuProcedural::for_parents(&self.device, &self.parents, setup)?,
        };
        let targets_buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng.procedural_targets"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let align = u64::from(self.device.limits().min_storage_buffer_offset_alignment);
        let joints = self.num_joints as u64;
        let chunks = frame
            .chunks
            .iter()
            .zip(&frame.chunk_params)
            .map(|(chunk, p)| {
                let count = u64::from(chunk.num_characters);
                let local =
                    Window::new(chunk.first_character * joints * LOCAL_BYTES, count * joints * LOCAL_BYTES, align);
                let params = ProceduralParams {
                    num_characters: chunk.num_characters,
                    num_joints: self.num_joints as u32,
                    groups_x: procedural_groups(chunk.num_characters).0,
                    target_stride: stride as u32,
                    pose_base: p.local_base,
                    // Chunks start below 2^32 characters (crowds are refused first).
                    target_base: chunk.first_character as u32,
                    pad: [0; 2],
                };
                let uniform = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("throng.procedural_params"),
                    contents: bytemuck::bytes_of(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
                let group =
                    stage.bind_group(&self.device, &uniform, targets_buffer.as_entire_binding(), local.binding(locals));
                (uniform, group)
            })
            .collect();
        self.procedural = Some(CrowdProcedural {
            stage,
            num_characters: characters,
            chunks,
            targets: Some(targets_buffer),
            locals: Some(locals.clone()),
            packed,
            masked,
            written_for: None,
        });
        self.write_procedural_targets_now();
        Ok(())
    }

    /// Writes the procedural targets again where the frame's due list is not the one they were
    /// written for (`set_frame_due` after [`set_procedural`](Self::set_procedural)); returns
    /// the bytes written.
    pub(super) fn write_procedural_targets(&mut self) -> u64 {
        let due = self.frame.as_ref().and_then(|f| f.due_rows());
        let stale = self.procedural.as_ref().is_some_and(|p| p.targets.is_some() && p.written_for.as_deref() != due);
        if stale { self.write_procedural_targets_now() } else { 0 }
    }

    /// Writes the packed targets to the device: every row, or under a due list the due rows
    /// and zeros for the others; returns the bytes written.
    fn write_procedural_targets_now(&mut self) -> u64 {
        let due = self.frame.as_ref().and_then(|f| f.due_rows());
        let Some(p) = self.procedural.as_mut() else { return 0 };
        let Some(buffer) = &p.targets else { return 0 };
        let stride = target_stride(p.stage.setup());
        let written = match due {
            Some(rows) if stride > 0 => {
                p.masked.clear();
                p.masked.resize(p.packed.len(), 0.0);
                for &row in rows {
                    let at = row as usize * stride..(row as usize + 1) * stride;
                    if let (Some(to), Some(from)) = (p.masked.get_mut(at.clone()), p.packed.get(at)) {
                        to.copy_from_slice(from);
                    }
                }
                &p.masked
            }
            _ => &p.packed,
        };
        self.queue.write_buffer(buffer, 0, bytemuck::cast_slice(written));
        p.written_for = due.map(<[u32]>::to_vec);
        std::mem::size_of_val(written.as_slice()) as u64
    }

    /// Removes the procedural stage: the frame is as it was before
    /// [`set_procedural`](Self::set_procedural).
    pub fn clear_procedural(&mut self) {
        self.procedural = None;
    }

    /// Whether the next [`encode`](Self::encode) runs the procedural stage (some character
    /// of the current frame has a weight above 0), and with it the stage path.
    #[must_use]
    pub fn procedural_active(&self) -> bool {
        self.procedural.as_ref().is_some_and(|p| p.runs_for(self.num_characters()))
    }

    /// Records the frame through the stage path with the procedural stage after the stage that
    /// writes local poses; the timestamps, if any, at the start of the first pass and the end
    /// of the last. [`GpuError::NoStageBuffers`] without stage buffers, which
    /// [`set_procedural`](Self::set_procedural) requires.
    pub(super) fn encode_procedural_frame(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) -> Result<(), GpuError> {
        let stages: &[Stage] = if self.layered_frame {
            &[Stage::Transition, Stage::Layers, Stage::Procedural, Stage::LocalToModel, Stage::Skinning]
        } else {
            &[Stage::Sample, Stage::Procedural, Stage::LocalToModel, Stage::Skinning]
        };
        let mut begin = timestamp_writes.as_ref().map(|w| wgpu::ComputePassTimestampWrites {
            query_set: w.query_set,
            beginning_of_pass_write_index: w.beginning_of_pass_write_index,
            end_of_pass_write_index: None,
        });
        let mut end = timestamp_writes.as_ref().map(|w| wgpu::ComputePassTimestampWrites {
            query_set: w.query_set,
            beginning_of_pass_write_index: None,
            end_of_pass_write_index: w.end_of_pass_write_index,
        });
        for (i, &stage) in stages.iter().enumerate() {
            let writes = if i == 0 {
                begin.take()
            } else if i + 1 == stages.len() {
                end.take()
            } else {
                None
            };
            // The first stage resolves the samples' positions, for every stage after it.
            self.encode_one_stage(encoder, stage, writes, i == 0)?;
        }
        Ok(())
    }

    /// [`Stage::Procedural`]: one pass, the stage's dispatch per chunk where any character has
    /// procedural work (an empty pass otherwise, so that a timed stage always has its pass).
    pub(super) fn encode_procedural_stage(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) -> Result<(), GpuError> {
        if self.pipelines.stages.is_none() {
            return Err(GpuError::NoStageBuffers);
        }
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("throng.procedural"), timestamp_writes });
        let Some(p) = self.procedural.as_ref().filter(|p| p.runs_for(self.num_characters())) else {
            return Ok(());
        };
        for ((_, group), chunk) in p.chunks.iter().zip(self.frame.iter().flat_map(|f| &f.chunks)) {
            p.stage.encode(&mut pass, group, chunk.num_characters);
        }
        Ok(())
    }
}
