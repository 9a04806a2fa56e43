use glam::Mat4;

use super::{GpuCrowd, LAYER_STATE_BYTES, LOCAL_BYTES, MODEL_BYTES};
use crate::gpu::GpuError;
use crate::gpu::types::{
    GpuLayerState, GpuTransform, JointStateLayout, LAYER_HEADER_BYTES, REPLAY_STORED, STATE_SHOWN_MASK,
    STATE_SLOT_SHIFT,
};
use crate::program::ClipSample;
use crate::rig::Transform;

impl GpuCrowd {
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

    /// Runs the sample-positions stage over the last frame's samples (`shaders/sample_positions.wgsl`,
    /// which every frame runs first), waits, and returns each sample's frame coordinate in
    /// its clip, in the frame's order: what [`crate::eval::sample_positions`] computes on the CPU,
    /// for tests and tools. Empty before the first frame.
    ///
    /// # Errors
    /// [`GpuError::Poll`] or [`GpuError::Readback`] when the device fails.
    pub fn read_sample_positions_blocking(&self) -> Result<Vec<f32>, GpuError> {
        let Some(frame) = &self.frame else {
            return Ok(Vec::new());
        };
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        // A records frame's samples are the expand pass's.
        self.encode_expand(&mut encoder);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("throng.sample_positions"),
                timestamp_writes: None,
            });
            self.record_sample_positions(&mut pass, frame);
        }
        self.queue.submit([encoder.finish()]);
        let count = frame.positions.count();
        let bytes = self.read_blocking(&frame.samples, count * size_of::<ClipSample>() as u64, "samples")?;
        let samples: Vec<ClipSample> = bytemuck::pod_collect_to_vec(&bytes);
        // The fourth word: the device's `position` over the CPU's `advance_s`.
        Ok(samples.iter().map(|s| s.advance_s).collect())
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
    /// setup says otherwise), what the transition stage ([`Stage::Transition`](super::Stage))
    /// made of the layer's samples last frame (layers that have shown nothing read as whatever
    /// their memory held). For tests of the transition stage; empty without layers. Fails with
    /// [`GpuError::DisplayedPoseNotStored`] after a fused frame, which keeps each displayed pose
    /// as the samples that replay it (`shaders/transition.wgsl`, "Memory layout").
    pub fn read_displayed_poses_blocking(&self) -> Result<Vec<Transform>, GpuError> {
        let Some((_, memory)) = self.frame.as_ref().and_then(|f| f.layered.as_ref()) else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::with_capacity((self.num_characters() as u64 * self.memory_bytes_per_character()) as usize);
        for (b, buffer) in memory.buffers.iter().enumerate() {
            let characters = memory.characters_in(b, self.num_characters());
            bytes.extend(self.read_blocking(buffer, characters * memory.bytes_per_character, "layer memory")?);
        }
        let layout = JointStateLayout { num_joints: self.num_joints };
        let layers = self.num_memory_layers().max(1);
        let mut poses = Vec::with_capacity(self.num_characters() * self.num_memory_layers() * self.num_joints);
        for (b, block) in bytes.chunks_exact(self.layer_block_bytes() as usize).enumerate() {
            let (header, joints) = block.split_at(LAYER_HEADER_BYTES as usize);
            let state: GpuLayerState = bytemuck::pod_read_unaligned(&header[..LAYER_STATE_BYTES as usize]);
            let slot = (state.flags >> STATE_SLOT_SHIFT) & 1;
            let entry = LAYER_STATE_BYTES as usize + slot as usize * 16;
            let flags: u32 = bytemuck::pod_read_unaligned(&header[entry..entry + 4]);
            if state.flags & STATE_SHOWN_MASK != 0 && flags & REPLAY_STORED == 0 {
                return Err(GpuError::DisplayedPoseNotStored { character: b / layers, layer: b % layers });
            }
            let joints: Vec<f32> = bytemuck::pod_collect_to_vec(joints);
            poses.extend((0..self.num_joints).map(|j| layout.slot(&joints, slot, j)));
        }
        Ok(poses)
    }

    /// Overwrites every layer's memory with `poses` displayed once (character `i`, layer `l`,
    /// joint `j` at `(i * layers + l) * J + j`, counting the layers that keep memory only),
    /// stored in the first slot, forgetting transitions in flight, to test the layers stage
    /// alone. Fails with [`GpuError::LengthMismatch`] unless there is one pose per joint per
    /// layer per character, and with [`GpuError::NoLayers`] without layers.
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
            let mut header = vec![0u8; LAYER_HEADER_BYTES as usize];
            header[..LAYER_STATE_BYTES as usize].copy_from_slice(bytemuck::bytes_of(&shown_once));
            for entry in 0..2 {
                let at = LAYER_STATE_BYTES as usize + entry * 16;
                header[at..at + 4].copy_from_slice(&REPLAY_STORED.to_le_bytes());
            }
            bytes.extend_from_slice(&header);
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

    /// Reads back the output of some joints of every character, waiting for the GPU:
    /// `characters × joints.len() × layout.floats_per_joint()` floats, character by character,
    /// each character's joints in the order `joints` lists them (a joint may be listed twice).
    /// What a caller needs of a frame on the CPU, such as where each foot stands for the next
    /// frame's ground, without [`read_output_blocking`](Self::read_output_blocking)'s whole
    /// output: the GPU copies each character's rows from the lowest joint listed to the highest
    /// (one copy per character) into one mappable buffer, and only the listed rows are kept.
    ///
    /// # Errors
    /// [`GpuError::JointOutOfRange`] for a joint past the rig, [`GpuError::CrowdTooLarge`] when
    /// the copied rows do not fit one buffer (`max_buffer_size`), [`GpuError::Poll`] or
    /// [`GpuError::Readback`] when the device fails. Nothing is submitted on the first two.
    pub fn read_joints_blocking(&self, joints: &[usize]) -> Result<Vec<f32>, GpuError> {
        if let Some(&joint) = joints.iter().find(|&&j| j >= self.num_joints) {
            return Err(GpuError::JointOutOfRange { joint, num_joints: self.num_joints });
        }
        let (Some(frame), Some(&lowest), Some(&highest)) = (&self.frame, joints.iter().min(), joints.iter().max())
        else {
            return Ok(Vec::new());
        };
        let characters = frame.num_characters;
        let joint_bytes = (self.options.layout.floats_per_joint() * size_of::<f32>()) as u64;
        let span = (highest - lowest + 1) as u64 * joint_bytes;
        let bytes = characters as u64 * span;
        let limit = self.device.limits().max_buffer_size;
        if bytes > limit {
            return Err(GpuError::CrowdTooLarge {
                characters,
                what: "joints read back",
                bytes,
                limit,
                limit_name: "max_buffer_size",
            });
        }
        let copies = (0..characters).zip((0..).step_by(span as usize)).filter_map(|(character, to)| {
            let (buffer, offset) = frame.output.locate(character)?;
            Some((buffer, offset + lowest as u64 * joint_bytes, to, span))
        });
        let rows: Vec<f32> = self.read_copies_blocking(bytes, "joints", copies)?;
        Ok(self.options.layout.select_joints(&rows, highest - lowest + 1, lowest, joints))
    }

    /// Copies `bytes` of `buffer` into a mappable buffer, submits, waits, and returns them.
    fn read_blocking(&self, buffer: &wgpu::Buffer, bytes: u64, what: &'static str) -> Result<Vec<u8>, GpuError> {
        self.read_copies_blocking(bytes, what, std::iter::once((buffer, 0, 0, bytes)))
    }

    /// Copies each `(buffer, offset, to, size)` into a mappable buffer of `bytes` (at `to`),
    /// submits, waits, and returns its contents as `T`s.
    fn read_copies_blocking<'a, T: bytemuck::Pod>(
        &self,
        bytes: u64,
        what: &'static str,
        copies: impl Iterator<Item = (&'a wgpu::Buffer, u64, u64, u64)>,
    ) -> Result<Vec<T>, GpuError> {
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
        for (buffer, offset, to, size) in copies {
            encoder.copy_buffer_to_buffer(buffer, offset, &staging, to, size);
        }
        self.queue.submit([encoder.finish()]);
        crate::gpu::map_read_blocking(&self.device, &staging, bytes, what)
    }
}
