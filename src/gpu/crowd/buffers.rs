use super::limits::grid;
use super::{
    GpuCrowd, LOCAL_BYTES, MIN_BUFFER_BYTES, MODEL_BYTES, PARAMS_BYTES, PROGRAM_BYTES, VEC4_BYTES, chunk_characters,
};
use crate::gpu::GpuError;
use crate::gpu::pipelines::FrameKernel;
use crate::gpu::types::{
    GpuChunkParams, GpuPositionsParams, GpuSampleRange, LAYOUT_AFFINE3X4, LAYOUT_MAT4, WORKGROUP_SIZE,
};
use crate::program::{ClipSample, OutputLayout};

/// The buffers and bind groups of one crowd size; rebuilt when the character count changes or
/// the samples outgrow their buffer.
pub(super) struct FrameResources {
    pub(super) num_characters: usize,
    pub(super) samples_capacity: usize,
    pub(super) samples: wgpu::Buffer,
    pub(super) ranges: wgpu::Buffer,
    pub(super) output: Runs,
    /// The stage path's intermediates, when [`GpuCrowdOptions::stage_buffers`] is set.
    pub(super) stage_buffers: Option<(wgpu::Buffer, wgpu::Buffer)>,
    /// The layered frame's programs and the characters' memory, for a crowd with layers.
    pub(super) layered: Option<(wgpu::Buffer, Runs)>,
    /// Every chunk's parameters, at `params_stride` in `params`, rewritten when `dt_s` changes.
    pub(super) params: wgpu::Buffer,
    pub(super) params_stride: u64,
    pub(super) chunk_params: Vec<GpuChunkParams>,
    pub(super) chunks: Vec<Chunk>,
    /// Workgroups per chunk under animation LOD (the chunk's due characters,
    /// [`GpuCrowd::set_frame_due`]); empty when every character is evaluated.
    pub(super) due_counts: Vec<u32>,
    /// The due characters of that frame, in order (the procedural stage's targets skip the
    /// others); empty when every character is evaluated.
    pub(super) due_rows: Vec<u32>,
    /// The sample-positions stage's windows over `samples`.
    pub(super) positions: SamplePositions,
}

/// The sample-positions stage's dispatches (`shaders/sample_positions.wgsl`): the samples buffer
/// in windows of one binding each (one window but past a binding's worth of samples), each with
/// its group 1 and its count of the frame's samples.
pub(super) struct SamplePositions {
    /// Each window's `GpuPositionsParams` at `stride`.
    params: wgpu::Buffer,
    stride: u64,
    /// Each window's group 1.
    windows: Vec<wgpu::BindGroup>,
    window_samples: u64,
    /// The frame's samples, whose counts `params` holds.
    count: u64,
}

impl SamplePositions {
    /// Windows over `samples` of at most `binding_bytes` each, whole samples at offsets the
    /// device's alignment allows; every count 0 until [`set_count`](Self::set_count).
    fn new(device: &wgpu::Device, layout: &wgpu::BindGroupLayout, samples: &wgpu::Buffer, binding_bytes: u64) -> Self {
        let limits = device.limits();
        let align = u64::from(limits.min_storage_buffer_offset_alignment).max(SAMPLE_BYTES);
        // A multiple of the alignment, itself a multiple of a sample's 16 bytes.
        let window_bytes = (binding_bytes / align * align).max(align);
        let num_windows = samples.size().div_ceil(window_bytes).max(1);
        let stride = PARAMS_WORDS_BYTES.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng.sample_positions"),
            size: num_windows * stride,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let windows = (0..num_windows)
            .map(|w| {
                let offset = w * window_bytes;
                let size = window_bytes.min(samples.size() - offset);
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("throng.sample_positions"),
                    layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &params,
                                offset: w * stride,
                                size: wgpu::BufferSize::new(PARAMS_WORDS_BYTES),
                            }),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: samples,
                                offset,
                                size: wgpu::BufferSize::new(size),
                            }),
                        },
                    ],
                })
            })
            .collect();
        Self { params, stride, windows, window_samples: window_bytes / SAMPLE_BYTES, count: 0 }
    }

    /// Makes the frame's first `count` samples the ones resolved, writing each window's count
    /// where it changed; returns the bytes written.
    pub(super) fn set_count(&mut self, queue: &wgpu::Queue, count: usize) -> u64 {
        let count = count as u64;
        if count == self.count {
            return 0;
        }
        self.count = count;
        for w in 0..self.windows.len() as u64 {
            let in_window = self.in_window(w);
            let params = GpuPositionsParams { count: in_window, ..GpuPositionsParams::default() };
            queue.write_buffer(&self.params, w * self.stride, bytemuck::bytes_of(&params));
        }
        self.windows.len() as u64 * PARAMS_WORDS_BYTES
    }

    /// The frame's samples, which the stage resolves.
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// The frame's samples in window `w`.
    fn in_window(&self, w: u64) -> u32 {
        // At most one binding's worth, which is under 4 GiB.
        self.count.saturating_sub(w * self.window_samples).min(self.window_samples) as u32
    }

    /// Each window's group 1 and its grid of workgroups (rows, as the frame's), past windows
    /// that hold none of the frame's samples.
    pub(super) fn dispatches(
        &self,
        max_per_dimension: u32,
    ) -> impl Iterator<Item = (&wgpu::BindGroup, (u32, u32, u32))> {
        self.windows.iter().zip(0..).filter_map(move |(group, w)| {
            let workgroups = self.in_window(w).div_ceil(WORKGROUP_SIZE);
            (workgroups > 0).then(|| (group, grid(workgroups, max_per_dimension)))
        })
    }
}

/// A sample's bytes, and the sample-positions stage's uniform's.
const SAMPLE_BYTES: u64 = size_of::<ClipSample>() as u64;
const PARAMS_WORDS_BYTES: u64 = size_of::<GpuPositionsParams>() as u64;

impl FrameResources {
    /// The frame's due characters under animation LOD, `None` when every one is evaluated.
    pub(super) fn due_rows(&self) -> Option<&[u32]> {
        (!self.due_counts.is_empty()).then_some(&self.due_rows)
    }

    /// Workgroups chunk `k` dispatches: its due characters, or all of them.
    pub(super) fn dispatch_count(&self, k: usize, chunk: &Chunk) -> u32 {
        self.due_counts.get(k).copied().unwrap_or(chunk.num_characters)
    }

    /// Writes every chunk's parameters again if the frame's `dt_s` or its due-list mode changed;
    /// returns the bytes written.
    pub(super) fn write_params(&mut self, queue: &wgpu::Queue, dt_s: f32, due_list: bool) -> u64 {
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
pub(super) struct Chunk {
    pub(super) first_character: u64,
    pub(super) num_characters: u32,
    /// The output buffer and window group 1 binds.
    pub(super) output: (usize, Window),
    /// The byte window of the samples group 1 binds: the whole buffer while it fits one
    /// binding, else the chunk's own window, rebound when the samples its programs read move.
    pub(super) samples_window: (u64, u64),
    /// Group 1.
    pub(super) frame: wgpu::BindGroup,
    /// Group 2, with stage buffers.
    pub(super) stages: Option<wgpu::BindGroup>,
    /// Group 3, for a crowd with layers.
    pub(super) layered: Option<wgpu::BindGroup>,
}

/// Per-character data too large for one buffer (the output, the characters' memory):
/// consecutive runs of characters in buffers of at most `max_buffer_size` bytes (a million
/// 64-joint characters of the built-in graph need 9.5 GB of memory and 3.1 GB of affine
/// matrices; NVIDIA's Vulkan driver allows 4 GiB a buffer), each run a whole number of chunks so
/// that a chunk's window lies in one buffer. Character `i` is at `(i % per_buffer) × bytes per
/// character` in buffer `i / per_buffer`.
#[derive(Clone)]
pub(super) struct Runs {
    pub(super) buffers: Vec<wgpu::Buffer>,
    pub(super) characters_per_buffer: u64,
    pub(super) bytes_per_character: u64,
}

impl Runs {
    /// Characters per buffer for `num_characters` of `bytes_per_character` each in buffers of at
    /// most `max_buffer_bytes`: whole chunks of `chunk_characters`, at least one.
    pub(super) fn characters_per_buffer(
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
    pub(super) fn allocate(
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
    pub(super) fn characters_in(&self, b: usize, num_characters: usize) -> u64 {
        self.characters_per_buffer.min((num_characters as u64).saturating_sub(b as u64 * self.characters_per_buffer))
    }

    /// The buffer holding `character` and the character's byte offset in it.
    pub(super) fn locate(&self, character: usize) -> Option<(&wgpu::Buffer, u64)> {
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
pub(super) struct Window {
    pub(super) offset: u64,
    pub(super) size: u64,
    base_vec4: u32,
}

impl Window {
    pub(super) fn new(first_byte: u64, bytes: u64, align: u64) -> Self {
        let offset = first_byte - first_byte % align;
        // `first_byte - offset < align <= 256`, so the base fits in u32.
        Self {
            offset,
            size: (first_byte - offset + bytes).max(VEC4_BYTES),
            base_vec4: ((first_byte - offset) / VEC4_BYTES) as u32,
        }
    }

    pub(super) fn binding<'a>(&self, buffer: &'a wgpu::Buffer) -> wgpu::BindingResource<'a> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: self.offset,
            size: wgpu::BufferSize::new(self.size),
        })
    }
}

/// A chunk's group 1: its parameters (at `params.1` in `params.0`), a window of the samples
/// (`samples.1`: byte offset and size), the sample ranges, and its output window.
pub(super) fn chunk_group(
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
pub(super) fn sample_span(ranges: impl Iterator<Item = (u32, u32)>) -> (u64, u64) {
    ranges
        .filter(|(start, end)| end > start)
        .fold(None, |span: Option<(u64, u64)>, (start, end)| {
            let (start, end) = (u64::from(start), u64::from(end));
            Some(span.map_or((start, end), |(lo, hi)| (lo.min(start), hi.max(end))))
        })
        .unwrap_or((0, 0))
}

impl GpuCrowd {
    /// Rebuilds the frame's buffers unless they hold `num_characters` and `num_samples` already.
    pub(super) fn ensure_frame(&mut self, num_characters: usize, num_samples: usize) -> Result<(), GpuError> {
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
    pub(super) fn chunk_characters(&self, limits: &wgpu::Limits) -> u32 {
        let mut window_bytes = self.output_bytes_per_character().max(self.memory_bytes_per_character());
        if self.options.stage_buffers {
            window_bytes = window_bytes.max(self.num_joints as u64 * MODEL_BYTES);
        }
        let kernel = self.options.kernel;
        // The stage path's grid holds one character a workgroup.
        let per_workgroup =
            if self.options.stage_buffers { 1 } else { kernel.characters_per_workgroup(self.num_joints) };
        let grid = (kernel == FrameKernel::Fused, per_workgroup);
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
        // Copied from by `read_expanded_blocking`, which reads what the expand stage wrote.
        let samples = buffer("throng.samples", samples_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
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
                let programs = buffer("throng.layer_programs", programs_bytes, U::STORAGE | U::COPY_DST | U::COPY_SRC);
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
                num_bands: self.levels.1,
                num_due: 0,
                doubling_start: self.doubling_start,
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
        let positions =
            SamplePositions::new(&self.device, &self.pipelines.layouts.positions, &samples, samples_binding);
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
            due_rows: Vec::new(),
            positions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_aligned_and_cover_the_chunk() {
        // 13 joints × 64 bytes × 7 characters: chunk 1 starts at 5,824 bytes.
        let w = Window::new(5_824, 5_824, 256);
        assert_eq!(w.offset, 5_632);
        assert_eq!(u64::from(w.base_vec4) * VEC4_BYTES, 192);
        assert_eq!(w.offset + w.size, 5_824 + 5_824);
    }
}
