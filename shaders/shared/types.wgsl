// Structs shared with Rust. Keep in sync with `src/gpu/types.rs` (and `ClipSample` with
// `src/program.rs`); `tests/gpu_eval.rs` checks sizes, offsets and the constants below against
// the layouts naga computes for this file.

// Threads per workgroup in every entry point. One workgroup evaluates one character; its
// threads stride over the joints.
const WORKGROUP_SIZE: u32 = 64u;

// The most joints a rig may have (`throng::MAX_JOINTS`): the size of workgroup pose arrays.
const MAX_JOINTS: u32 = 256u;

// `ChunkParams::output_layout` values (`throng::eval::OutputLayout`).
const LAYOUT_MAT4: u32 = 0u;
const LAYOUT_AFFINE3X4: u32 = 1u;

// A joint's local transform, `T * R * S`. Stored as three vec4 so that it can also be read
// from a `array<vec4<f32>>` window at any 16-byte offset (see `load_transform`).
struct Transform {
    translation: vec3<f32>,
    pad0: f32,
    // Unit quaternion (x, y, z, w).
    rotation: vec4<f32>,
    scale: vec3<f32>,
    pad1: f32,
}

// Per joint of the archetype's rig.
struct RigJoint {
    inverse_bind: mat4x4<f32>,
    rest: Transform,
    // Parent joint index, or NO_PARENT for a root.
    parent: u32,
    // Number of ancestors: roots are 0. Joints of one depth are composed in parallel.
    depth: u32,
    pad0: u32,
    pad1: u32,
}

const NO_PARENT: u32 = 0xffffffffu;

// Per clip of the archetype.
struct ClipHeader {
    // Index of the clip's first transform in `clip_frames` (frame-major).
    first_transform: u32,
    num_frames: u32,
    duration_s: f32,
    // 1 if sampling past the end wraps, 0 if it holds the last frame.
    looping: u32,
}

// One clip to sample for a character (`throng::program::ClipSample`).
struct ClipSample {
    clip: u32,
    time_s: f32,
    weight: f32,
    // Clip seconds advanced since last frame; read by root motion (CPU), unused here.
    advance_s: f32,
}

// A character's samples: `samples[start .. start + count]`.
struct SampleRange {
    start: u32,
    count: u32,
}

// What one dispatch (one chunk of the crowd) needs to know.
struct ChunkParams {
    // Index of the chunk's first character in the crowd (ranges are indexed by crowd index).
    first_character: u32,
    num_characters: u32,
    num_joints: u32,
    // Deepest joint's depth: the number of sequential local-to-model steps.
    max_depth: u32,
    // LAYOUT_MAT4 or LAYOUT_AFFINE3X4.
    output_layout: u32,
    // Where the chunk's first character starts in each bound window, in vec4 units. Windows
    // start at an offset aligned down to the device's storage alignment, so this is rarely 0.
    output_base: u32,
    local_base: u32,
    model_base: u32,
}
