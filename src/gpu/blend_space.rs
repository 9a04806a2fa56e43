//! The blend-space stage on the GPU (`shaders/blend_space.wgsl`, mirrored by
//! [`crate::eval::blend_space`]): a graph's trees uploaded once, then per frame each
//! character's inputs and its requests (per layer, the active and source states) in, the
//! requests' leaf weights out.
//!
//! The stage binds a group of its own (no rig, no clips): the table words
//! (`throng::blend_space::BlendTrees::words`), the inputs, the requests and the weights. The
//! table's header is read here by position, as `throng::blend_space::tree_words` lays it out
//! (keep in sync).

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use super::GpuError;
use super::pipelines::BlendSpacePipeline;

/// Threads per workgroup of `blend_space_main`, one request each (keep in sync with the
/// shader's `BLEND_SPACE_WORKGROUP`).
pub const BLEND_SPACE_WORKGROUP: u32 = 64;

/// Workgroups along x at most: WebGPU's default `max_compute_workgroups_per_dimension`.
const MAX_GROUPS_X: u32 = 65_535;

/// The stage's uniform. Keep in sync with `BlendSpaceParams` in `shaders/blend_space.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlendSpaceParams {
    /// Requests in the dispatch.
    pub num_requests: u32,
    /// Requests per character: request `r` reads character `r / requests_per_character`'s inputs.
    pub requests_per_character: u32,
    /// Workgroups along x; request `x + y · groups_x · BLEND_SPACE_WORKGROUP`.
    pub groups_x: u32,
    /// Padding to 16 bytes.
    pub pad: u32,
}

/// Why the GPU blend-space stage refused its input. Nothing is dispatched.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuBlendSpaceError {
    /// The table is shorter than its header says.
    #[error("the blend-tree table holds {got} words; its header needs at least {needed}")]
    Table {
        /// Words given.
        got: usize,
        /// Words the header's counts need.
        needed: usize,
    },
    /// As [`crate::eval::blend_space::BlendSpaceJobError::Requests`].
    #[error("{requests} requests are not a whole number of characters at {per_character} per character")]
    Requests {
        /// Requests given.
        requests: usize,
        /// Requests per character.
        per_character: usize,
    },
    /// As [`crate::eval::blend_space::BlendSpaceJobError::Inputs`].
    #[error("{got} inputs given; {expected} expected")]
    Inputs {
        /// Inputs needed.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// An input is NaN, infinite or −0: the shader reads canonical inputs only
    /// (`throng::blend_space::canonical_input`).
    #[error("input {index} is {value}, not canonical (finite, not NaN, not -0)")]
    NotCanonical {
        /// Position in the inputs.
        index: usize,
        /// The value.
        value: f32,
    },
    /// More weights than one storage binding holds.
    #[error("{bytes} bytes of weights; one storage binding holds {limit}")]
    TooLarge {
        /// Bytes needed.
        bytes: u64,
        /// `max_storage_buffer_binding_size`.
        limit: u64,
    },
}

/// A graph's trees on the device and the stage's pipeline.
pub struct GpuBlendSpace {
    pipeline: BlendSpacePipeline,
    trees: wgpu::Buffer,
    num_inputs: usize,
    max_leaves: usize,
}

impl std::fmt::Debug for GpuBlendSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBlendSpace")
            .field("num_inputs", &self.num_inputs)
            .field("max_leaves", &self.max_leaves)
            .finish_non_exhaustive()
    }
}

impl GpuBlendSpace {
    /// Uploads a table (`BlendTrees::words`) and builds the stage's pipeline.
    ///
    /// # Errors
    /// [`GpuBlendSpaceError::Table`] when the words are shorter than their header says.
    pub fn new(device: &wgpu::Device, words: &[u32]) -> Result<Self, GpuBlendSpaceError> {
        // `tree_words`: header of 8; states at word 4, nodes at word 5, 4 words a state, 8 a node.
        let header = |i: usize| words.get(i).map_or(0, |&w| w as usize);
        let needed = 8.max(header(4) + 4 * header(0)).max(header(5) + 8 * header(1));
        if words.len() < needed {
            return Err(GpuBlendSpaceError::Table { got: words.len(), needed });
        }
        let trees = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.blend_trees"),
            contents: bytemuck::cast_slice(words),
            usage: wgpu::BufferUsages::STORAGE,
        });
        Ok(Self { pipeline: BlendSpacePipeline::new(device), trees, num_inputs: header(2), max_leaves: header(3) })
    }

    /// Inputs per character the table reads.
    #[must_use]
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Weights per request.
    #[must_use]
    pub fn max_leaves(&self) -> usize {
        self.max_leaves
    }

    /// Runs the stage on `inputs` (per character, [`num_inputs`](Self::num_inputs), canonical)
    /// and `requests` (per character, `requests_per_character` states), waits, and returns
    /// the weights, [`max_leaves`](Self::max_leaves) per request: what
    /// [`crate::eval::blend_space::BlendSpaceJob`] writes, for tests and tools.
    ///
    /// # Errors
    /// [`GpuError::BlendSpace`] for input the stage refuses (as the CPU job's checks, and
    /// inputs not canonical), [`GpuError::Poll`] or [`GpuError::Readback`] when the device
    /// fails.
    pub fn weights_blocking(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        inputs: &[f32],
        requests: &[u32],
        requests_per_character: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let refuse = |e: GpuBlendSpaceError| Err(GpuError::BlendSpace(e));
        let (num_requests, per_character) = (requests.len(), requests_per_character);
        if per_character == 0 || !num_requests.is_multiple_of(per_character) {
            return refuse(GpuBlendSpaceError::Requests { requests: num_requests, per_character });
        }
        let expected = num_requests / per_character * self.num_inputs;
        if inputs.len() != expected {
            return refuse(GpuBlendSpaceError::Inputs { expected, got: inputs.len() });
        }
        if let Some(index) = inputs.iter().position(|&v| !v.is_finite() || v.to_bits() == (-0.0f32).to_bits()) {
            return refuse(GpuBlendSpaceError::NotCanonical { index, value: inputs[index] });
        }
        let bytes = (num_requests * self.max_leaves * 4) as u64;
        let limit = device.limits().max_storage_buffer_binding_size;
        if bytes > limit {
            return refuse(GpuBlendSpaceError::TooLarge { bytes, limit });
        }
        if bytes == 0 {
            return Ok(Vec::new());
        }
        // Storage bindings may not be empty: a graph without inputs still binds one word.
        let storage = |label: &str, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: if contents.is_empty() { &[0; 4] } else { contents },
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let inputs_buffer = storage("throng.blend_inputs", bytemuck::cast_slice(inputs));
        let requests_buffer = storage("throng.blend_requests", bytemuck::cast_slice(requests));
        let weights = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng.blend_weights"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let groups = (num_requests as u32).div_ceil(BLEND_SPACE_WORKGROUP);
        let groups_x = groups.min(MAX_GROUPS_X);
        let params = BlendSpaceParams {
            num_requests: num_requests as u32,
            requests_per_character: per_character as u32,
            groups_x,
            pad: 0,
        };
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.blend_params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let entries = [&uniform, &self.trees, &inputs_buffer, &requests_buffer, &weights]
            .iter()
            .enumerate()
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: buffer.as_entire_binding(),
            })
            .collect::<Vec<_>>();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("throng.blend_space"),
            layout: &self.pipeline.layout,
            entries: &entries,
        });
        super::run_pass_and_read(device, queue, "throng.blend_space", &weights, bytes, "blend weights", |pass| {
            pass.set_pipeline(&self.pipeline.blend_space);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(groups_x, groups.div_ceil(groups_x), 1);
        })
    }
}
