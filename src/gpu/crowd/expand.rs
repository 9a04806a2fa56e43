//! The expand stage on a crowd (`shaders/expand.wgsl`, mirrored by `eval::expand`): an
//! archetype's expand tables and blend trees uploaded once ([`GpuCrowd::set_expansion`]), then
//! each frame the state step's records and blend inputs ([`GpuCrowd::set_frame_records`]),
//! which a pass before the frame's expands into the programs and samples the fused frames read.

use std::sync::atomic::{AtomicBool, Ordering};

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use super::{GpuCrowd, MIN_BUFFER_BYTES, PROGRAM_BYTES, grid};
use crate::blend_space::BlendTrees;
use crate::gpu::blend_space::GpuBlendSpaceError;
use crate::gpu::pipelines::ExpandPipeline;
use crate::gpu::{GpuError, run_pass_and_read};
use crate::program::{
    ClipSample, DueRows, ExpandTables, LayerProgram, RecordClock, RecordFrame, changed_after, expand_frame,
    validate_dt, validate_memoryless_records, validate_records,
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

/// Words of a records upload's header (`UPLOAD_HEADER_LEN` in `shaders/expand.wgsl`): record
/// entries, shot entries, input rows, inputs per row, the scatter's workgroups along x, and 3
/// words of padding. After it the record entries (index, then the record's 14 words), the shot
/// entries (index, then 4 words) and the input rows (the character, then its inputs).
pub const UPLOAD_HEADER_WORDS: usize = 8;

/// A crowd's expansion: the tables on the device, the records, shot records and inputs kept
/// there from frame to frame, the frame's one upload of what changed, and the passes' bind
/// groups over them and the frame's programs and samples.
pub(super) struct Expansion {
    pipeline: ExpandPipeline,
    tables: ExpandTables,
    tables_buffer: wgpu::Buffer,
    trees: wgpu::Buffer,
    num_inputs: usize,
    params: wgpu::Buffer,
    records: Option<wgpu::Buffer>,
    shots: Option<wgpu::Buffer>,
    inputs: Option<wgpu::Buffer>,
    upload: Option<wgpu::Buffer>,
    /// The upload being built, reused from frame to frame: the header and record entries, then
    /// the shot entries and input rows appended from their own lists.
    /// The trees the words came from, for [`expand_frame`] on the CPU when a crowd's buffers
    /// outgrow one storage binding.
    blend_trees: BlendTrees,
    /// The programs and samples of that CPU expansion, kept between frames.
    cpu_expanded: (Vec<LayerProgram>, Vec<ClipSample>),
    upload_words: Vec<u32>,
    shot_words: Vec<u32>,
    input_words: Vec<u32>,
    /// Whose records the buffers hold and the version they were last sent at
    /// (`program::RecordFrame`'s source and version), to send only what changed since; `None`
    /// when they hold nothing known (none sent, a buffer replaced, a frame without stamps).
    sent: Option<((u32, u32), u32)>,
    /// What `sent` was before the last upload: while that upload has not been scattered (no
    /// pass recorded since), the next is built from it, so that two uploads without a frame
    /// between lose nothing.
    sent_before: Option<((u32, u32), u32)>,
    /// Whether the last upload's scatter pass has been recorded (or it had no entries).
    scattered: AtomicBool,
    /// Bytes of the last upload.
    record_bytes: u64,
    /// Entries in the last upload, which the scatter pass writes before the expand pass reads
    /// (0: none, no scatter).
    scatter_entries: u32,
    scatter_workgroups: (u32, u32, u32),
    bind_group: Option<wgpu::BindGroup>,
    scatter_bind_group: Option<wgpu::BindGroup>,
    /// The buffers `bind_group` and `scatter_bind_group` bind, in their entries' order: a frame
    /// over the same ones keeps them.
    bound: Vec<wgpu::Buffer>,
    workgroups: (u32, u32, u32),
}

impl GpuCrowd {
    /// Gives the crowd its archetype's expansion, once: the expand tables and the graph's blend
    /// trees, as `state::Archetype::expansion` holds them (the trees' words are uploaded, and a
    /// copy is kept for a crowd too large for the expand pass, which
    /// [`set_frame_records`](Self::set_frame_records) expands on the CPU). After it,
    /// [`set_frame_records`](Self::set_frame_records) takes the state step's records in place of
    /// programs and samples.
    ///
    /// # Errors
    /// [`GpuError::NoLayers`] for a crowd without layers; [`GpuError::Expansion`] when the
    /// tables' layers are not the crowd's, a leaf names a clip past the crowd's, or the trees'
    /// states are not the tables'.
    pub fn set_expansion(&mut self, tables: &ExpandTables, trees: &BlendTrees) -> Result<(), GpuError> {
        let tree_words = trees.words();
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
            blend_trees: trees.clone(),
            cpu_expanded: (Vec::new(), Vec::new()),
            pipeline: ExpandPipeline::new(&self.device),
            tables_buffer: storage("throng.expand_tables", tables.words()),
            trees: storage("throng.blend_trees", tree_words),
            tables: tables.clone(),
            num_inputs: header(2),
            params,
            records: None,
            shots: None,
            inputs: None,
            upload: None,
            upload_words: Vec::new(),
            shot_words: Vec::new(),
            input_words: Vec::new(),
            sent: None,
            sent_before: None,
            scattered: AtomicBool::new(true),
            record_bytes: 0,
            scatter_entries: 0,
            scatter_workgroups: (0, 0, 0),
            bind_group: None,
            scatter_bind_group: None,
            bound: Vec::new(),
            workgroups: (0, 0, 0),
        });
        self.expanding = false;
        Ok(())
    }

    /// Uploads a frame of the layered crowd as the state step left it: `frame` (its records
    /// per character and layer, their one-shot parts, the blend inputs per character and the
    /// clock, `state::Crowd::record_frame`), which every [`encode`](Self::encode) expands on
    /// the device into the programs and samples [`set_frame`](Self::set_frame) would upload,
    /// before the frame reads them: the same programs `eval::expand` writes on the CPU, the
    /// leaf weights within 1e-6. `dt_s` as [`set_frame`](Self::set_frame).
    ///
    /// The records, shot records and inputs stay on the device from frame to frame: this sends
    /// only what changed since the last call, as the frame's stamps say (a record with its shot
    /// record where the record reads it, a character's inputs), everything when the last call
    /// was another crowd's or archetype's frame, a frame without stamps
    /// ([`RecordFrame::new`]), or the crowd outgrew the buffers. One copy: a header and the
    /// entries ([`UPLOAD_HEADER_WORDS`]; 60 bytes a record, 20 a shot record, 4 and 4 an input
    /// per character; [`record_bytes_uploaded`](Self::record_bytes_uploaded)), which a scatter
    /// pass writes into place before the expand pass; nothing when nothing changed. The clock
    /// goes in the stage's uniform.
    ///
    /// # Errors
    /// [`GpuError::NoLayers`]; [`GpuError::Expansion`] before
    /// [`set_expansion`](Self::set_expansion); [`crate::program::validate_dt`]'s,
    /// [`crate::program::validate_records`]' and
    /// [`crate::program::validate_memoryless_records`]' (as [`GpuError::Program`]); inputs not
    /// the trees' per character, or not canonical ([`GpuError::BlendSpace`]); and
    /// [`set_frame`](Self::set_frame)'s for a crowd whose records, programs, samples or upload
    /// outgrow one storage binding (the passes bind them whole): such a crowd is expanded on the
    /// CPU ([`crate::program::expand_frame`]) and uploaded as `set_frame` uploads, split into
    /// chunks. On error nothing is written.
    pub fn set_frame_records(&mut self, frame: &RecordFrame<'_>, dt_s: f32) -> Result<(), GpuError> {
        self.upload_records(frame, dt_s, None)
    }

    /// Bytes the last [`set_frame_records`](Self::set_frame_records) copied to the device for
    /// records, shot records and blend inputs: its one upload of what changed since the upload
    /// before (0 when nothing did).
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
        frame: &RecordFrame<'_>,
        dt_s: f32,
        due: DueRows<'_>,
    ) -> Result<(), GpuError> {
        self.upload_records(frame, dt_s, Some(due))
    }

    fn upload_records(&mut self, frame: &RecordFrame<'_>, dt_s: f32, due: Option<DueRows<'_>>) -> Result<(), GpuError> {
        let zone = crate::zone!("throng.gpu.upload");
        let (records, shots, inputs, clock) = (frame.records(), frame.shots(), frame.inputs(), frame.clock());
        let num_layers = self.num_layers();
        if num_layers == 0 {
            return Err(GpuError::NoLayers);
        }
        let Some(expansion) = &self.expansion else {
            return Err(GpuError::Expansion("no expansion set (GpuCrowd::set_expansion)".to_owned()));
        };
        validate_dt(dt_s)?;
        validate_records(records, shots, num_layers, &expansion.tables, self.num_clips, clock)?;
        if let Some(layers) = &self.layers {
            validate_memoryless_records(records, &layers.setups)?;
        }
        self.check_specialisation(records.iter().map(|r| u32::from(r.flags)))?;
        let num_characters = records.len() / num_layers;
        let num_inputs = expansion.num_inputs;
        let expected = num_characters * num_inputs;
        if inputs.len() != expected {
            return Err(GpuBlendSpaceError::Inputs { expected, got: inputs.len() }.into());
        }
        if let Some(index) = inputs.iter().position(|&v| !v.is_finite() || v.to_bits() == (-0.0f32).to_bits()) {
            return Err(GpuBlendSpaceError::NotCanonical { index, value: inputs[index] }.into());
        }
        let changes = frame
            .changes()
            .filter(|c| c.record_stamps.len() == records.len() && c.input_stamps.len() == num_characters);
        if let Some(due) = due {
            crate::program::validate_due(due, num_characters)?;
        }
        let per = expansion.tables.samples_per_character();
        self.ensure_frame(num_characters, num_characters * per)?;
        let limits = self.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let Some(gpu_frame) = &self.frame else {
            return Ok(());
        };
        let Some((programs, _)) = &gpu_frame.layered else {
            return Err(GpuError::NoLayers);
        };
        // The expand pass binds the records, shot records, inputs, programs and samples whole: a
        // crowd whose any one outgrows a binding is expanded here instead, in parallel, and
        // uploaded as `set_frame` uploads programs and samples (split into chunks), so that
        // records work at any size the frame does; the device's records are then stale, and the
        // next records frame small enough sends everything.
        // The upload binds whole too: at most everything, each entry with its index.
        let everything = 4 * (UPLOAD_HEADER_WORDS + records.len() + shots.len() + num_characters)
            + size_of_val(records)
            + size_of_val(shots)
            + size_of_val(inputs);
        let bound = [everything, size_of_val(records), size_of_val(shots), size_of_val(inputs)].map(|b| b as u64);
        if bound.into_iter().chain([programs.size(), gpu_frame.samples.size()]).any(|b| b > binding) {
            let Some(expansion) = &mut self.expansion else {
                return Ok(());
            };
            // Kept from frame to frame: a crowd this large would otherwise allocate hundreds of
            // megabytes every frame.
            let (mut programs, mut samples) = std::mem::take(&mut expansion.cpu_expanded);
            programs.resize(records.len(), LayerProgram::default());
            samples.resize(num_characters * per, ClipSample::default());
            expand_frame(&expansion.tables, &expansion.blend_trees, frame, &mut programs, &mut samples);
            (expansion.sent, expansion.sent_before) = (None, None);
            expansion.record_bytes = 0;
            let uploaded = self.upload_frame(&samples, &programs, dt_s, due);
            if let Some(expansion) = &mut self.expansion {
                expansion.cpu_expanded = (programs, samples);
            }
            return uploaded;
        }
        let Some(expansion) = &mut self.expansion else {
            return Ok(());
        };
        // Grown to fit, never shrunk (a storage binding may not be empty); a new buffer holds
        // nothing sent, so everything is sent.
        let grow = |buffer: &mut Option<wgpu::Buffer>, label: &str, bytes: u64| -> bool {
            if buffer.as_ref().is_some_and(|b| b.size() >= bytes) {
                return false;
            }
            *buffer = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.next_power_of_two().max(MIN_BUFFER_BYTES),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
            true
        };
        let grew = [
            grow(&mut expansion.records, "throng.records", size_of_val(records) as u64),
            grow(&mut expansion.shots, "throng.shot_records", size_of_val(shots) as u64),
            grow(&mut expansion.inputs, "throng.blend_inputs", size_of_val(inputs) as u64),
        ];
        if grew.contains(&true) {
            (expansion.sent, expansion.sent_before) = (None, None);
        }
        // What changed since the last upload (since the one before, if the last was never
        // scattered), by the stamps; everything without them or when the buffers hold another
        // source's records.
        let baseline = if expansion.scattered.load(Ordering::Relaxed) { expansion.sent } else { expansion.sent_before };
        let since = match (changes, baseline) {
            // Within 2^31 versions of the last upload, where the stamps' order is known.
            (Some(c), Some((source, last))) if source == c.source && (c.version.wrapping_sub(last) as i32) >= 0 => {
                Some(last)
            }
            _ => None,
        };
        let record_changed = |i: usize| match (since, changes) {
            (Some(last), Some(c)) => changed_after(c.record_stamps[i], last),
            _ => true,
        };
        let inputs_changed = |row: usize| match (since, changes) {
            (Some(last), Some(c)) => changed_after(c.input_stamps[row], last),
            _ => true,
        };
        let Expansion { upload_words, shot_words, input_words, .. } = expansion;
        upload_words.clear();
        upload_words.resize(UPLOAD_HEADER_WORDS, 0);
        shot_words.clear();
        input_words.clear();
        let (mut num_records, mut num_shots, mut num_rows) = (0u32, 0u32, 0u32);
        for row in 0..num_characters {
            for i in row * num_layers..(row + 1) * num_layers {
                if !record_changed(i) {
                    continue;
                }
                upload_words.push(i as u32);
                upload_words.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&records[i])));
                num_records += 1;
                if records[i].reads_shot() {
                    shot_words.push(i as u32);
                    shot_words.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&shots[i])));
                    num_shots += 1;
                }
            }
            if num_inputs > 0 && inputs_changed(row) {
                input_words.push(row as u32);
                input_words.extend_from_slice(bytemuck::cast_slice(&inputs[row * num_inputs..(row + 1) * num_inputs]));
                num_rows += 1;
            }
        }
        let entries = num_records + num_shots + num_rows;
        upload_words.extend_from_slice(shot_words);
        upload_words.extend_from_slice(input_words);
        let upload_bytes = (upload_words.len() * size_of::<u32>()) as u64;
        let max_per_dimension = limits.max_compute_workgroups_per_dimension;
        expansion.scatter_workgroups = grid(entries.div_ceil(EXPAND_WORKGROUP), max_per_dimension);
        upload_words[..5].copy_from_slice(&[
            num_records,
            num_shots,
            num_rows,
            num_inputs as u32,
            expansion.scatter_workgroups.0,
        ]);
        grow(&mut expansion.upload, "throng.records_upload", upload_bytes);
        let (Some(records_buffer), Some(shots_buffer), Some(inputs_buffer), Some(upload)) =
            (&expansion.records, &expansion.shots, &expansion.inputs, &expansion.upload)
        else {
            return Ok(());
        };
        expansion.scatter_entries = entries;
        expansion.record_bytes = 0;
        if entries > 0 {
            self.queue.write_buffer(upload, 0, bytemuck::cast_slice(&expansion.upload_words));
            expansion.record_bytes = upload_bytes;
        }
        expansion.sent_before = baseline;
        expansion.sent = changes.map(|c| (c.source, c.version));
        expansion.scattered.store(entries == 0, Ordering::Relaxed);
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
            (9, &gpu_frame.samples),
            (10, shots_buffer),
        ];
        let scatter_bindings = [(11, upload), (12, records_buffer), (13, shots_buffer), (14, inputs_buffer)];
        // Made again only when a buffer they bind was replaced (a crowd that grew), not each frame.
        let same = expansion.bound.len() == bindings.len() + scatter_bindings.len()
            && expansion.bound.iter().zip(bindings.iter().chain(&scatter_bindings)).all(|(bound, (_, b))| bound == *b);
        if expansion.bind_group.is_none() || expansion.scatter_bind_group.is_none() || !same {
            let group = |label: &str, layout: &wgpu::BindGroupLayout, bindings: &[(u32, &wgpu::Buffer)]| {
                let entries: Vec<_> = bindings
                    .iter()
                    .map(|&(binding, buffer)| wgpu::BindGroupEntry { binding, resource: buffer.as_entire_binding() })
                    .collect();
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(label),
                    layout,
                    entries: &entries,
                })
            };
            expansion.bind_group = Some(group("throng.expand", &expansion.pipeline.layout, &bindings));
            expansion.scatter_bind_group =
                Some(group("throng.expand_scatter", &expansion.pipeline.scatter_layout, &scatter_bindings));
            expansion.bound = bindings.iter().chain(&scatter_bindings).map(|(_, buffer)| (*buffer).clone()).collect();
        }
        let mut bytes = expansion.record_bytes + size_of::<ExpandParams>() as u64;
        self.expanding = true;
        // The samples the expand pass writes, which the sample-positions stage then resolves.
        if let Some(frame) = &mut self.frame {
            bytes += frame.positions.set_count(&self.queue, num_characters * per);
        }
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

    /// Records the passes of a records frame before its frame: the scatter of the frame's
    /// upload into the records, shot records and inputs, when it sent any, then the expand
    /// (nothing after any other upload).
    pub(super) fn encode_expand(&self, encoder: &mut wgpu::CommandEncoder) {
        let Some(expansion) = self.expansion.as_ref().filter(|_| self.expanding) else {
            return;
        };
        if expansion.workgroups.0 == 0 {
            return;
        }
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("throng.expand"), timestamp_writes: None });
        expansion.record_passes(&mut pass);
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
        let (Some(frame), Some(_)) = (&self.frame, &expansion.bind_group) else {
            return Err(not_records());
        };
        let Some((programs, _)) = &frame.layered else {
            return Err(GpuError::NoLayers);
        };
        let characters = self.live_characters as u64;
        let per = expansion.tables.samples_per_character() as u64;
        let program_bytes = characters * self.num_layers() as u64 * PROGRAM_BYTES;
        let sample_bytes = characters * per * size_of::<ClipSample>() as u64;
        // The scatter again, if the upload had entries: it writes what it wrote before.
        let run = |pass: &mut wgpu::ComputePass<'_>| expansion.record_passes(pass);
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

impl Expansion {
    /// The scatter of the last upload (when it had entries), then the expand, into `pass`.
    fn record_passes(&self, pass: &mut wgpu::ComputePass<'_>) {
        let (Some(bind_group), Some(scatter_bind_group)) = (&self.bind_group, &self.scatter_bind_group) else {
            return;
        };
        if self.scatter_entries > 0 {
            let (x, y, z) = self.scatter_workgroups;
            pass.set_pipeline(&self.pipeline.scatter);
            pass.set_bind_group(0, scatter_bind_group, &[]);
            pass.dispatch_workgroups(x, y, z);
            self.scattered.store(true, Ordering::Relaxed);
        }
        let (x, y, z) = self.workgroups;
        pass.set_pipeline(&self.pipeline.expand);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}
