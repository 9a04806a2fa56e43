use super::{FrameResources, GpuCrowd, Stage, grid};
use crate::gpu::GpuError;

impl GpuCrowd {
    /// Records the frame: first the sample-positions stage (`shaders/sample_positions.wgsl`: each
    /// sample's frame coordinate, which the frame's kernels read), in the same compute pass;
    /// then the fused `frame` pipeline (after [`set_samples`](Self::set_samples))
    /// or `frame_layers` (after [`set_frame`](Self::set_frame)) of [`GpuCrowdOptions::kernel`](crate::gpu::GpuCrowdOptions::kernel),
    /// one dispatch per chunk (the layered frame: the steady pass's, then the switching pass's;
    /// `docs/gpu.md`, "The steady pass"): one workgroup per character ([`FrameKernel::Fused`](crate::gpu::FrameKernel::Fused)) or per
    /// [`FrameKernel::characters_per_workgroup`](crate::gpu::FrameKernel::characters_per_workgroup) on a grid of rows (and layers of rows)
    /// ([`FrameKernel::Levels`](crate::gpu::FrameKernel::Levels)). Nothing is recorded before the first frame is set. With
    /// procedural work ([`set_procedural`](Self::set_procedural)), the stage path instead, with
    /// the procedural stage between layers and local-to-model.
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
        // A records frame: its programs and samples first.
        self.encode_expand(encoder);
        if self.procedural.as_ref().is_some_and(|p| p.runs_for(frame.num_characters)) {
            // Cannot fail: `set_procedural` requires the stage buffers, and the stage path's
            // other refusal (no layers) is for a stage this frame's kind does not record.
            let _ = self.encode_procedural_frame(encoder, timestamp_writes);
            return;
        }
        let layered = self.pipelines.layered.as_ref().filter(|_| self.layered_frame);
        // The layered frame's passes (`pipelines::ShapePass`): the steady characters', then the
        // switching ones'; each dispatches every chunk's characters. The second is dispatched
        // whether or not the frame has any: finding out would read every program on the CPU,
        // where the device's workgroups read only their own character's and leave.
        let pipelines = match layered {
            Some(p) => [&p.frame_layers].into_iter().chain(p.frame_layers_switching.as_ref()),
            None => [&self.pipelines.frame].into_iter().chain(None),
        };
        let per_workgroup = self.options.kernel.characters_per_workgroup(self.num_joints);
        let max_per_dimension = self.device.limits().max_compute_workgroups_per_dimension;
        let dispatches = frame.chunks.iter().enumerate().map(|(k, chunk)| Dispatch {
            groups: [Some(&chunk.frame), None, chunk.layered.as_ref().filter(|_| layered.is_some())],
            workgroups: grid(frame.dispatch_count(k, chunk).div_ceil(per_workgroup), max_per_dimension),
        });
        self.record(encoder, "throng.frame", timestamp_writes, true, pipelines, dispatches);
    }

    /// Records one stage of the stage-by-stage path, which reads and writes the intermediate
    /// buffers: `Sample` writes local poses, `LocalToModel` reads them and writes model
    /// matrices, `Skinning` reads those and writes the output. The three in order
    /// ([`Stage::ALL`]) give the same output as [`encode`](Self::encode) after
    /// [`set_samples`](Self::set_samples), at about three times the memory traffic; they exist
    /// to test and time each stage against its CPU mirror. After [`set_frame`](Self::set_frame),
    /// [`Stage::LAYERED`] in order does the same for the layered frame: `Transition` updates the
    /// characters' memory (it needs no stage buffers), `Layers` combines the layers' shown poses
    /// into local poses. `Procedural`, between the stage that writes local poses and
    /// `LocalToModel`, runs the procedural stage on them where
    /// [`set_procedural`](Self::set_procedural) gave any character work (an empty pass
    /// otherwise): what [`encode`](Self::encode) then records, a stage at a time, so that each
    /// can be timed. `Sample`, `Transition` and `Layers`, which read the samples, each run the
    /// sample-positions stage first in their pass, as the frame does. Every stage but `Transition` needs
    /// [`GpuCrowdOptions::stage_buffers`](crate::gpu::GpuCrowdOptions::stage_buffers) ([`GpuError::NoStageBuffers`]); `Transition` and
    /// `Layers` need layers ([`GpuError::NoLayers`]). The stages run one workgroup per character,
    /// in rows of the device's `max_compute_workgroups_per_dimension` as the frame does, so a
    /// chunk of any size runs in one dispatch.
    pub fn encode_stage(&self, encoder: &mut wgpu::CommandEncoder, stage: Stage) -> Result<(), GpuError> {
        self.encode_one_stage(encoder, stage, None, true)
    }

    /// [`encode_stage`](Self::encode_stage), writing timestamps `first_query` and
    /// `first_query + 1` of `query_set` at the start and end of the stage's compute pass (the
    /// device needs `Features::TIMESTAMP_QUERY`), to time each stage on its own (`Sample`,
    /// `Transition` and `Layers` with the sample-positions stage they run first).
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
        self.encode_one_stage(encoder, stage, Some(writes), true)
    }

    /// [`encode_stage`](Self::encode_stage) into `encoder`; a stage that reads the samples
    /// resolves their positions first where `resolve_positions` (every stage run alone; in the
    /// procedural frame's path, its first).
    pub(super) fn encode_one_stage(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
        resolve_positions: bool,
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
            Stage::Procedural => return self.encode_procedural_stage(encoder, timestamp_writes),
        };
        let Some(frame) = &self.frame else {
            return Ok(());
        };
        if stage == Stage::Transition {
            // The layered stages' first: a records frame's programs and samples before it.
            self.encode_expand(encoder);
        }
        // One workgroup per character, in rows as the frame's grid (the level kernels' chunks may
        // hold more characters than one dimension reaches).
        let max_per_dimension = self.device.limits().max_compute_workgroups_per_dimension;
        let dispatches = frame.chunks.iter().enumerate().map(|(k, chunk)| Dispatch {
            groups: [
                Some(&chunk.frame),
                chunk.stages.as_ref().filter(|_| stage != Stage::Transition),
                chunk.layered.as_ref().filter(|_| matches!(stage, Stage::Transition | Stage::Layers)),
            ],
            workgroups: grid(frame.dispatch_count(k, chunk), max_per_dimension),
        });
        // Each stage that reads the samples resolves their positions first: run alone, it must
        // not lean on another stage having run.
        let reads_samples = matches!(stage, Stage::Sample | Stage::Transition | Stage::Layers);
        self.record(encoder, label, timestamp_writes, resolve_positions && reads_samples, [pipeline], dispatches);
        Ok(())
    }

    /// Records one compute pass: with `positions`, first the sample-positions stage over the
    /// frame's samples (`shaders/sample_positions.wgsl`: each sample's frame coordinate, which
    /// the frame's kernels read), timed with the rest, unless no dispatch has workgroups (a
    /// frame whose due list is empty); then for each of `pipelines` in order, the pipeline with
    /// the archetype bound at group 0, then each of `dispatches` in order, past those with no
    /// workgroups.
    fn record<'a, 'p>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        label: &str,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
        positions: bool,
        pipelines: impl IntoIterator<Item = &'p wgpu::ComputePipeline>,
        dispatches: impl Iterator<Item = Dispatch<'a>> + Clone,
    ) {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes });
        let any_work = dispatches.clone().any(|d| d.workgroups.0 > 0);
        if let Some(frame) = self.frame.as_ref().filter(|_| positions && any_work) {
            self.record_sample_positions(&mut pass, frame);
        }
        for pipeline in pipelines {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &self.archetype, &[]);
            for dispatch in dispatches.clone() {
                let (x, y, z) = dispatch.workgroups;
                if x == 0 {
                    continue;
                }
                for (group, bind_group) in (1..).zip(dispatch.groups) {
                    if let Some(bind_group) = bind_group {
                        pass.set_bind_group(group, bind_group, &[]);
                    }
                }
                pass.dispatch_workgroups(x, y, z);
            }
        }
    }

    /// The sample-positions stage's dispatches into `pass`: a thread a sample of the frame, a
    /// dispatch a binding's window of them.
    pub(super) fn record_sample_positions(&self, pass: &mut wgpu::ComputePass<'_>, frame: &FrameResources) {
        let max_per_dimension = self.device.limits().max_compute_workgroups_per_dimension;
        pass.set_pipeline(&self.pipelines.sample_positions);
        pass.set_bind_group(0, &self.archetype, &[]);
        for (group, (x, y, z)) in frame.positions.dispatches(max_per_dimension) {
            pass.set_bind_group(1, group, &[]);
            pass.dispatch_workgroups(x, y, z);
        }
    }
}

/// One dispatch of a pass: a chunk's bind groups 1 to 3 (`None` where the pipeline binds none)
/// and its grid of workgroups.
struct Dispatch<'a> {
    groups: [Option<&'a wgpu::BindGroup>; 3],
    workgroups: (u32, u32, u32),
}
