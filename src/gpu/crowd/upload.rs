use std::ops::Range;

use super::{GpuCrowd, PARAMS_BYTES, Window, chunk_group, sample_span};
use crate::gpu::GpuError;
use crate::gpu::pipelines::Specialisation;
use crate::gpu::types::GpuSampleRange;
use crate::profile::Plot;
use crate::program::{
    ClipSample, DueRows, LayerProgram, validate_dt, validate_due, validate_layer_programs,
    validate_memoryless_programs, validate_samples,
};

impl GpuCrowd {
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
        self.expanding = false;
        self.live_characters = num_characters;
        let params_bytes = frame.write_params(&self.queue, frame.chunk_params.first().map_or(0.0, |p| p.dt_s), false);
        frame.due_counts.clear();
        if !samples.is_empty() {
            self.queue.write_buffer(&frame.samples, 0, bytemuck::cast_slice(samples));
        }
        let positions_bytes = frame.positions.set_count(&self.queue, samples.len());
        if num_characters > 0 {
            // `Range<u32>` is not `Pod`; repack into a buffer kept across frames.
            self.ranges_scratch.clear();
            self.ranges_scratch
                .extend(sample_ranges.iter().map(|r| GpuSampleRange { start: r.start, count: r.end - r.start }));
            self.queue.write_buffer(&frame.ranges, 0, bytemuck::cast_slice(&self.ranges_scratch));
        }
        let mut bytes = (size_of_val(samples) + num_characters * size_of::<GpuSampleRange>()) as u64
            + params_bytes
            + positions_bytes;
        // A frame without a due list after one with: the procedural targets' skipped rows back.
        bytes += self.write_procedural_targets();
        zone.value(bytes);
        crate::profile::count(Plot::BytesUploaded, bytes);
        #[cfg(feature = "tracy")]
        crate::profile::count_sample_lists(sample_ranges);
        Ok(())
    }

    /// Uploads a frame of the layered crowd: character `i`'s layer `l` reads
    /// `programs[i * num_layers + l]`, whose sample ranges index `samples`, exactly as
    /// [`crate::eval::frame_layers::FrameJob`] reads them and with the same checks
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
    /// `state::Crowd::due` gives them), as [`crate::eval::frame_layers::FrameJob::run_due`]: each due
    /// character is evaluated with its own seconds since it was last shown in place of `dt_s`
    /// (which still applies to a later [`set_frame`](Self::set_frame)); the others are not
    /// dispatched at all, and their output and memory keep the pose they last showed. Each
    /// chunk dispatches one workgroup per due character, reading the compact list of them
    /// (8 bytes each, uploaded with the frame) where the unlayered frame keeps its sample
    /// ranges, so the frame's cost follows the due count (but for the sample-positions stage
    /// before it, which resolves every sample of the frame, a thread each). [`encode`](Self::encode) and the
    /// layered stages ([`Stage::LAYERED`](crate::gpu::Stage::LAYERED)) both honour the list until the next upload.
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

    /// [`GpuError::Specialised`] where the crowd's layered frame is a measurement
    /// specialisation and a layer that keeps memory switches or fades from a frozen snapshot
    /// (whose first frame shown takes the snapshot, switch code too): `flags` are each
    /// character's layers' program flags in order.
    pub(super) fn check_specialisation(&self, flags: impl Iterator<Item = u32>) -> Result<(), GpuError> {
        let specialisation = self.options.specialisation;
        let Some(layers) = self.layers.as_ref().filter(|_| specialisation.refuses_switches()) else {
            return Ok(());
        };
        let num_layers = layers.setups.len().max(1);
        let switch = flags.enumerate().find(|&(i, flags)| {
            let needs_memory = layers.setups.get(i % num_layers).is_some_and(|l| l.needs_memory);
            Specialisation::runs_switch_code(needs_memory, flags)
        });
        match switch {
            Some((i, _)) => {
                Err(GpuError::Specialised { specialisation, character: i / num_layers, layer: i % num_layers })
            }
            None => Ok(()),
        }
    }

    pub(super) fn upload_frame(
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
        self.check_specialisation(programs.iter().map(|p| p.flags))?;
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
        if !samples.is_empty() {
            self.queue.write_buffer(&frame.samples, 0, bytemuck::cast_slice(samples));
        }
        let positions_bytes = frame.positions.set_count(&self.queue, samples.len());
        if let Some((program_buffer, _)) = frame.layered.as_ref().filter(|_| !programs.is_empty()) {
            self.queue.write_buffer(program_buffer, 0, bytemuck::cast_slice(programs));
        }
        self.expanding = false;
        let mut bytes = (size_of_val(samples) + size_of_val(programs)) as u64 + positions_bytes;
        bytes += self.finish_layered_upload(num_characters, dt_s, due);
        zone.value(bytes);
        crate::profile::count(Plot::BytesUploaded, bytes);
        #[cfg(feature = "tracy")]
        crate::profile::count_layered(programs, num_layers, due.map(|d| d.rows));
        Ok(())
    }

    /// The part of a layered upload after its programs (or records): the frame's parameters,
    /// its due list and the procedural targets for it; returns the bytes written.
    pub(super) fn finish_layered_upload(&mut self, num_characters: usize, dt_s: f32, due: Option<DueRows<'_>>) -> u64 {
        let Some(frame) = &mut self.frame else {
            return 0;
        };
        self.layered_frame = true;
        self.live_characters = num_characters;
        let mut bytes = frame.write_params(&self.queue, dt_s, due.is_some());
        frame.due_counts.clear();
        frame.due_rows.clear();
        if let Some(due) = due {
            frame.due_rows.extend_from_slice(due.rows);
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
        // Procedural targets written for another due list: again, for this one's rows.
        bytes += self.write_procedural_targets();
        bytes
    }

    /// For a frame whose samples outgrow one storage binding: each chunk's byte window of the
    /// samples its characters read (`span_of(first character, characters)` in samples), which
    /// must fit one binding ([`GpuError::CrowdTooLarge`], `"samples of one chunk"`). `None`
    /// while the whole buffer is bound.
    pub(super) fn sample_windows(
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
    pub(super) fn bind_sample_windows(&mut self, windows: &[(u64, u64)]) {
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
}
