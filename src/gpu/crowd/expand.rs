//! The expand stage on a crowd (`shaders/expand.wgsl`, mirrored by `eval::expand`): an
//! archetype's expand tables and blend trees uploaded once ([`GpuCrowd::set_expansion`]), then
//! each frame the state step's records and blend inputs ([`GpuCrowd::set_frame_records`]),
//! which a pass before the frame's expands into the programs and samples the fused frames read.

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use super::{GpuCrowd, MIN_BUFFER_BYTES, PROGRAM_BYTES, grid};
use crate::gpu::blend_space::GpuBlendSpaceError;
use crate::gpu::pipelines::ExpandPipeline;
use crate::gpu::{GpuError, run_pass_and_read};
use crate::program::{
    ClipSample, DueRows, ExpandTables, LayerProgram, LayerRecord, RecordClock, validate_dt,
    validate_memoryless_records, validate_records,
};

/// Threads per workgroup of `expand_main`, one character each (keep in sync with the shader's
/// `EXPAND_WORKGROUP`).
pub const EXPAND_WORKGROUP: u32 = 64;

/// The stage's uniform. Keep in sync with `ExpandParams` in `shaders/expand.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ExpandParams {
    /// Characters to expand.
    pub num_characters: u32,
    /// Workgroups along x; character `x + y · groups_x · EXPAND_WORKGROUP`.
    pub groups_x: u32,
    /// Padding to 16 bytes.
    pub pad: [u32; 2],
    /// The records' clock.
    pub clock: RecordClock,
}

/// A crowd's expansion: the tables on the device, the frame's records and inputs, and the
/// pass's bind group over them and the frame's programs and samples.
pub(super) struct Expansion {
    pipeline: ExpandPipeline,
    tables: ExpandTables,
    tables_buffer: wgpu::Buffer,
    trees: wgpu::Buffer,
    num_inputs: usize,
    params: wgpu::Buffer,
    records: Option<wgpu::Buffer>,
    inputs: Option<wgpu::Buffer>,
    /// What the records and inputs buffers hold (the last upload's), to send only what changed.
    sent_records: Vec<LayerRecord>,
    sent_inputs: Vec<f32>,
    /// Bytes of records and inputs the last upload wrote.
    record_bytes: u64,
    bind_group: Option<wgpu::BindGroup>,
    /// The buffers `bind_group` binds, in its entries' order: a frame over the same ones keeps it.
    bound: Vec<wgpu::Buffer>,
    workgroups: (u32, u32, u32),
}

impl GpuCrowd {
    /// Gives the crowd its archetype's expansion, once: the expand tables and the graph's blend
    /// trees' words (`blend_space::BlendTrees::words`), as `state::Archetype::expansion` holds
    /// them. After it, [`set_frame_records`](Self::set_frame_records) takes the state step's
    /// records in place of programs and samples.
    ///
    /// # Errors
    /// [`GpuError::NoLayers`] for a crowd without layers; [`GpuError::Expansion`] when the
    /// tables' layers are not the crowd's, a leaf names a clip past the crowd's, or the trees'
    /// words are shorter than their header says or their states are not the tables'.
    pub fn set_expansion(&mut self, tables: &ExpandTables, tree_words: &[u32]) -> Result<(), GpuError> {
        let num_layers = self.num_layers();
        if num_layers == 0 {
            return Err(GpuError::NoLayers);
        }
        if tables.num_layers() != num_layers {
            return Err(GpuError::Expansion(format!(
                "the tables have {} layers; the crowd {num_layers}",
                tables.num_layers()
            )));
        }
        if let Some(leaf) = tables.leaves().iter().find(|l| l.clip as usize >= self.num_clips) {
            return Err(GpuError::Expansion(format!(
                "a leaf plays clip {}; the crowd has {}",
                leaf.clip, self.num_clips
            )));
        }
        // `blend_space::tree_words`: header of 8; states at word 4, nodes at word 5, 4 words a
        // state (its leaves third), 8 a node.
        let header = |i: usize| tree_words.get(i).map_or(0, |&w| w as usize);
        let needed = 8.max(header(4) + 4 * header(0)).max(header(5) + 8 * header(1));
        let same_states = header(0) == tables.states().len()
            && tree_words.len() >= needed
            && tables
                .states()
                .iter()
                .enumerate()
                .all(|(s, st)| header(header(4) + 4 * s + 2) == st.num_leaves as usize);
        if !same_states {
            return Err(GpuError::Expansion(format!(
                "the blend trees ({} words, {} states) are not the tables' {} states",
                tree_words.len(),
                header(0),
                tables.states().len()
            )));
        }
        let storage = |label: &str, words: &[u32]| {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(words),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let params = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng.expand_params"),
            size: size_of::<ExpandParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.expansion = Some(Expansion {
            pipeline: ExpandPipeline::new(&self.device),
            tables_buffer: storage("throng.expand_tables", tables.words()),
            trees: storage("throng.blend_trees", tree_words),
            tables: tables.clone(),
            num_inputs: header(2),
            params,
            records: None,
            inputs: None,
            sent_records: Vec::new(),
            sent_inputs: Vec::new(),
            record_bytes: 0,
            bind_group: None,
            bound: Vec::new(),
            workgroups: (0, 0, 0),
        });
        self.expanding = false;
        Ok(())
    }

    /// Uploads a frame of the layered crowd as the state step left it: `records` (per character
    /// and layer, `state::Crowd::records`) and `inputs` (per character, the blend inputs,
    /// `state::Crowd::blend_inputs`), which every [`encode`](Self::encode) expands on the
    /// device into the programs and samples [`set_frame`](Self::set_frame) would upload, before
    /// the frame reads them: the same programs `eval::expand` writes on the CPU, the leaf
    /// weights within 1e-6; `clock` is the crowd's (`state::Crowd::record_clock`), which the
    /// records' anchored clocks are read against. `dt_s` as [`set_frame`](Self::set_frame).
    /// Writes only the characters whose records or inputs changed since the last call, as one
    /// span from the first to the last of them (88 bytes a layer and 4 an input per character
    /// in it; [`record_bytes_uploaded`](Self::record_bytes_uploaded)), and the clock.
    ///
    /// # Errors
    /// [`GpuError::NoLayers`]; [`GpuError::Expansion`] before
    /// [`set_expansion`](Self::set_expansion); [`crate::program::validate_dt`]'s,
    /// [`crate::program::validate_records`]' and
    /// [`crate::program::validate_memoryless_records`]' (as [`GpuError::Program`]); inputs not
    /// the trees' per character, or not canonical ([`GpuError::BlendSpace`]); a crowd whose
    /// samples outgrow one storage binding ([`GpuError::CrowdTooLarge`]: the pass binds them
    /// whole). On error nothing is written.
    pub fn set_frame_records(
        &mut self,
        records: &[LayerRecord],
        inputs: &[f32],
        clock: &RecordClock,
        dt_s: f32,
    ) -> Result<(), GpuError> {
        self.upload_records(records, inputs, clock, dt_s, None)
    }

    /// Bytes of records and blend inputs the last [`set_frame_records`](Self::set_frame_records)
    /// wrote: the span of characters whose records or inputs changed since the upload before
    /// (0 when none did).
    #[must_use]
    pub fn record_bytes_uploaded(&self) -> u64 {
        self.expansion.as_ref().map_or(0, |e| e.record_bytes)
    }

    /// [`set_frame_records`](Self::set_frame_records) for the characters `due` lists only, as
    /// [`set_frame_due`](Self::set_frame_due) (every character is expanded, and only the due
    /// ones evaluated).
    ///
    /// # Errors
    /// As [`set_frame_records`](Self::set_frame_records), then
    /// [`crate::program::validate_due`]'s.
    pub fn set_frame_records_due(
        &mut self,
        records: &[LayerRecord],
        inputs: &[f32],
        clock: &RecordClock,
        dt_s: f32,
        due: DueRows<'_>,
    ) -> Result<(), GpuError> {
        self.upload_records(records, inputs, clock, dt_s, Some(due))
    }

    fn upload_records(
        &mut self,
        records: &[LayerRecord],
        inputs: &[f32],
        clock: &RecordClock,
        dt_s: f32,
        due: Option<DueRows<'_>>,
    ) -> Result<(), GpuError> {
        let zone = crate::zone!("throng.gpu.upload");
        let num_layers = self.num_layers();
        if num_layers == 0 {
            return Err(GpuError::NoLayers);
        }
        let Some(expansion) = &self.expansion else {
            return Err(GpuError::Expansion("no expansion set (GpuCrowd::set_expansion)".to_owned()));
        };
        validate_dt(dt_s)?;
        validate_records(records, num_layers, &expansion.tables, self.num_clips, clock)?;
        if let Some(layers) = &self.layers {
            validate_memoryless_records(records, &layers.setups)?;
        }
        let num_characters = records.len() / num_layers;
        let expected = num_characters * expansion.num_inputs;
        if inputs.len() != expected {
            return Err(GpuBlendSpaceError::Inputs { expected, got: inputs.len() }.into());
        }
        if let Some(index) = inputs.iter().position(|&v| !v.is_finite() || v.to_bits() == (-0.0f32).to_bits()) {
            return Err(GpuBlendSpaceError::NotCanonical { index, value: inputs[index] }.into());
        }
        if let Some(due) = due {
            crate::program::validate_due(due, num_characters)?;
        }
        let per = expansion.tables.samples_per_character();
        self.ensure_frame(num_characters, num_characters * per)?;
        let limits = self.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let Some(frame) = &self.frame else {
            return Ok(());
        };
        if frame.samples.size() > binding {
            return Err(GpuError::CrowdTooLarge {
                characters: num_characters,
                what: "samples of a records frame (the expand pass binds them whole)",
                bytes: frame.samples.size(),
                limit: binding,
                limit_name: "max_storage_buffer_binding_size",
            });
        }
        let Some((programs, _)) = &frame.layered else {
            return Err(GpuError::NoLayers);
        };
        let Some(expansion) = &mut self.expansion else {
            return Ok(());
        };
        // Grown to fit, never shrunk (a storage binding may not be empty); a new buffer holds
        // nothing sent.
        let grow = |buffer: &mut Option<wgpu::Buffer>, sent: &mut dyn FnMut(), label: &str, bytes: u64| {
            if buffer.as_ref().is_none_or(|b| b.size() < bytes) {
                *buffer = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes.next_power_of_two().max(MIN_BUFFER_BYTES),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }));
                sent();
            }
        };
        let Expansion { records: records_slot, inputs: inputs_slot, sent_records, sent_inputs, .. } = expansion;
        grow(records_slot, &mut || sent_records.clear(), "throng.records", size_of_val(records) as u64);
        grow(inputs_slot, &mut || sent_inputs.clear(), "throng.blend_inputs", size_of_val(inputs) as u64);
        let (Some(records_buffer), Some(inputs_buffer)) = (&expansion.records, &expansion.inputs) else {
            return Ok(());
        };
        // Only what changed: the characters whose records or inputs differ from what the buffers
        // hold, as one span from the first to the last (an idle, unchanged character's anchored
        // record does not change; a crowd's periodic re-anchoring is staggered by row).
        let num_inputs = expansion.num_inputs;
        let bytes_of = |c: usize| -> (&[u8], &[u8]) {
            (
                bytemuck::cast_slice(&records[c * num_layers..(c + 1) * num_layers]),
                bytemuck::cast_slice(&inputs[c * num_inputs..(c + 1) * num_inputs]),
            )
        };
        let sent = |c: usize| -> Option<(&[u8], &[u8])> {
            let r = expansion.sent_records.get(c * num_layers..(c + 1) * num_layers)?;
            let i = expansion.sent_inputs.get(c * num_inputs..(c + 1) * num_inputs)?;
            Some((bytemuck::cast_slice(r), bytemuck::cast_slice(i)))
        };
        let changed = |c: usize| sent(c) != Some(bytes_of(c));
        let first = (0..num_characters).find(|&c| changed(c));
        // Back from the end only as far as the first change: nothing is compared twice.
        let span = first.and_then(|first| Some(first..(first..num_characters).rev().find(|&c| changed(c))? + 1));
        let mut record_bytes = 0u64;
        if let Some(characters) = span.clone() {
            let (first, last) = (characters.start, characters.end - 1);
            let span = first * num_layers..(last + 1) * num_layers;
            let at = (span.start * size_of::<LayerRecord>()) as u64;
            self.queue.write_buffer(records_buffer, at, bytemuck::cast_slice(&records[span.clone()]));
            record_bytes += size_of_val(&records[span]) as u64;
            if num_inputs > 0 {
                let span = first * num_inputs..(last + 1) * num_inputs;
                let at = (span.start * size_of::<f32>()) as u64;
                self.queue.write_buffer(inputs_buffer, at, bytemuck::cast_slice(&inputs[span.clone()]));
                record_bytes += size_of_val(&inputs[span]) as u64;
            }
        }
        let Some(expansion) = &mut self.expansion else {
            return Ok(());
        };
        // What the buffers hold now: outside the span they already held it.
        if expansion.sent_records.len() == records.len() && expansion.sent_inputs.len() == inputs.len() {
            if let Some(characters) = span {
                let (r, i) = (num_layers, expansion.num_inputs);
                let records_span = characters.start * r..characters.end * r;
                let inputs_span = characters.start * i..characters.end * i;
                expansion.sent_records[records_span.clone()].copy_from_slice(&records[records_span]);
                expansion.sent_inputs[inputs_span.clone()].copy_from_slice(&inputs[inputs_span]);
            }
        } else {
            expansion.sent_records.clear();
            expansion.sent_records.extend_from_slice(records);
            expansion.sent_inputs.clear();
            expansion.sent_inputs.extend_from_slice(inputs);
        }
        expansion.record_bytes = record_bytes;
        let (Some(records_buffer), Some(inputs_buffer)) = (&expansion.records, &expansion.inputs) else {
            return Ok(());
        };
        let max_per_dimension = limits.max_compute_workgroups_per_dimension;
        expansion.workgroups = grid((num_characters as u32).div_ceil(EXPAND_WORKGROUP), max_per_dimension);
        let params = ExpandParams {
            num_characters: num_characters as u32,
            groups_x: expansion.workgroups.0,
            pad: [0; 2],
            clock: *clock,
        };
        self.queue.write_buffer(&expansion.params, 0, bytemuck::bytes_of(&params));
        let bindings = [
            (1, &expansion.trees),
            (2, inputs_buffer),
            (5, &expansion.params),
            (6, &expansion.tables_buffer),
            (7, records_buffer),
            (8, programs),
            (9, &frame.samples),
        ];
        // Made again only when a buffer it binds was replaced (a crowd that grew), not each frame.
        let same = expansion.bound.len() == bindings.len()
            && expansion.bound.iter().zip(&bindings).all(|(bound, (_, buffer))| bound == *buffer);
        if expansion.bind_group.is_none() || !same {
            let entries = bindings
                .map(|(binding, buffer)| wgpu::BindGroupEntry { binding, resource: buffer.as_entire_binding() });
            expansion.bind_group = Some(self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("throng.expand"),
                layout: &expansion.pipeline.layout,
                entries: &entries,
            }));
            expansion.bound = bindings.iter().map(|(_, buffer)| (*buffer).clone()).collect();
        }
        let mut bytes = record_bytes + size_of::<ExpandParams>() as u64;
        self.expanding = true;
        // Each chunk reads its characters' blocks of samples.
        let per = per as u64;
        if let Some(windows) = self.sample_windows(|first, count| (first as u64 * per, (first + count) as u64 * per))? {
            self.bind_sample_windows(&windows);
        }
        bytes += self.finish_layered_upload(num_characters, dt_s, due);
        zone.value(bytes);
        crate::profile::count(crate::profile::Plot::BytesUploaded, bytes);
        // The characters evaluated; the clips they sample are chosen on the device, by the
        // expand pass, so a records frame counts none.
        #[cfg(feature = "tracy")]
        crate::profile::count_evaluated(due.map_or(num_characters, |d| d.len()) as u64, 0);
        Ok(())
    }

    /// Records the expand pass of a records frame (nothing after any other upload).
    pub(super) fn encode_expand(&self, encoder: &mut wgpu::CommandEncoder) {
        let Some(expansion) = self.expansion.as_ref().filter(|_| self.expanding) else {
            return;
        };
        let Some(bind_group) = &expansion.bind_group else {
            return;
        };
        let (x, y, z) = expansion.workgroups;
        if x == 0 {
            return;
        }
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("throng.expand"), timestamp_writes: None });
        pass.set_pipeline(&expansion.pipeline.expand);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }

    /// Runs the expand pass of the last [`set_frame_records`](Self::set_frame_records), waits,
    /// and returns the programs and samples it wrote (per character and layer; per character
    /// its block of samples): what `eval::expand` writes on the CPU, for tests and tools.
    ///
    /// # Errors
    /// [`GpuError::Expansion`] when the last upload was not a records frame;
    /// [`GpuError::Poll`] or [`GpuError::Readback`] when the device fails.
    pub fn read_expanded_blocking(&self) -> Result<(Vec<LayerProgram>, Vec<ClipSample>), GpuError> {
        let not_records = || GpuError::Expansion("the last frame set was not a records frame".to_owned());
        let expansion = self.expansion.as_ref().filter(|_| self.expanding).ok_or_else(not_records)?;
        let (Some(frame), Some(bind_group)) = (&self.frame, &expansion.bind_group) else {
            return Err(not_records());
        };
        let Some((programs, _)) = &frame.layered else {
            return Err(GpuError::NoLayers);
        };
        let characters = self.live_characters as u64;
        let per = expansion.tables.samples_per_character() as u64;
        let program_bytes = characters * self.num_layers() as u64 * PROGRAM_BYTES;
        let sample_bytes = characters * per * size_of::<ClipSample>() as u64;
        let (x, y, z) = expansion.workgroups;
        let run = |pass: &mut wgpu::ComputePass<'_>| {
            pass.set_pipeline(&expansion.pipeline.expand);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(x, y, z);
        };
        if characters == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let device = (&self.device, &self.queue);
        let programs =
            run_pass_and_read(device.0, device.1, "throng.expand", programs, program_bytes, "programs", run)?;
        let samples =
            run_pass_and_read(device.0, device.1, "throng.expand", &frame.samples, sample_bytes, "samples", run)?;
        Ok((programs, samples))
    }
}
