//! The procedural stage in a crowd (`shaders/procedural.wgsl`, [`crate::gpu::procedural`]):
//! the setup uploaded once, each call's targets packed into one buffer (written over the last
//! call's while the crowd and its buffers stay the same), and one dispatch per
//! chunk over the chunk's window of the stage path's local poses, recorded between layers (or
//! sampling) and local-to-model.
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
    /// Scratch for the packed targets, kept so that a call per frame does not allocate.
    packed: Vec<f32>,
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
        let reusable = previous.as_ref().and_then(|p| {
            let same = p.num_characters == characters && p.locals.as_ref() == Some(locals);
            p.targets.as_ref().filter(|b| same && b.size() == bytes)
        });
        if let Some(buffer) = reusable {
            self.queue.write_buffer(buffer, 0, bytemuck::cast_slice(&packed));
            self.procedural = previous.map(|p| CrowdProcedural { packed, ..p });
            return Ok(());
        }
        let stage = match previous {
            Some(p) => p.stage,
            None => GpuProcedural::for_parents(&self.device, &self.parents, setup)?,
        };
        use wgpu::util::DeviceExt;
        let targets_buffer = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.procedural_targets"),
            contents: bytemuck::cast_slice(&packed),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
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
        });
        Ok(())
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
    /// of the last. [`set_procedural`](Self::set_procedural) checked what the stage path
    /// refuses.
    pub(super) fn encode_procedural_frame(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) -> Result<(), GpuError> {
        let Some(p) = self.procedural.as_ref() else {
            return Ok(());
        };
        let (before, after): (&[Stage], &[Stage]) = if self.layered_frame {
            (&[Stage::Transition, Stage::Layers], &[Stage::LocalToModel, Stage::Skinning])
        } else {
            (&[Stage::Sample], &[Stage::LocalToModel, Stage::Skinning])
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
        for (i, &stage) in before.iter().enumerate() {
            self.encode_one_stage(encoder, stage, if i == 0 { begin.take() } else { None })?;
        }
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("throng.procedural"),
                timestamp_writes: None,
            });
            for ((_, group), chunk) in p.chunks.iter().zip(self.frame.iter().flat_map(|f| &f.chunks)) {
                p.stage.encode(&mut pass, group, chunk.num_characters);
            }
        }
        for (i, &stage) in after.iter().enumerate() {
            self.encode_one_stage(encoder, stage, if i + 1 == after.len() { end.take() } else { None })?;
        }
        Ok(())
    }
}
