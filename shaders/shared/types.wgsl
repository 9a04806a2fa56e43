// Structs shared with Rust. Keep in sync with `src/gpu/types.rs` (and `ClipSample` with
// `src/program.rs`); `tests/gpu_eval.rs` checks sizes, offsets and the constants below against
// the layouts naga computes for this file.

// Threads per workgroup in every entry point. One workgroup evaluates one character; its
// threads stride over the joints (`sample_positions_main` aside: a thread a sample).
const WORKGROUP_SIZE: u32 = 64u;

// The most joints a rig may have (`throng::MAX_JOINTS`).
const MAX_JOINTS: u32 = 256u;

// The most joints one thread evaluates: ceil(joints / WORKGROUP_SIZE) for the crowd's rig.
// `throng::gpu::pipelines::shader_source` rewrites this line for each rig, so that a thread's
// joints fit the private arrays exactly and stay in registers (4, for 256 joints, would put
// them in local memory on most GPUs even for a 64-joint rig), and the workgroup's pose array
// holds the rig's joints rather than MAX_JOINTS: 3 KiB for a 64-joint rig instead of 12, so
// four times as many workgroups fit an SM's shared memory.
const JOINTS_PER_THREAD: u32 = 4u;

// The rig's joints. `throng::gpu::pipelines::shader_source` rewrites this line for each rig, as
// it does `JOINTS_PER_THREAD` (a crowd's kernels are built for its rig), so that the driver folds
// the joint count into each thread's bounds and each character's offsets (a thread's test of
// whether its joint is the rig's folds where it is written as `holds_joint` below).
const NUM_JOINTS: u32 = 256u;

// Joints the workgroup pose array holds: the rig's, rounded up to whole threads' worth.
const POSE_JOINTS: u32 = JOINTS_PER_THREAD * WORKGROUP_SIZE;

// Whether the thread's `k`-th joint (`thread + k * WORKGROUP_SIZE`) is one of the rig's: surely
// where the rig has joints for that many threads' worth, a constant the driver folds (it does not
// assume a thread's index below the workgroup's size), else by the joint's index.
fn holds_joint(thread: u32, k: u32) -> bool {
    return (k + 1u) * WORKGROUP_SIZE <= NUM_JOINTS || thread + k * WORKGROUP_SIZE < NUM_JOINTS;
}

// Rows of the workgroup pose array: its joints'. `throng::gpu::Hierarchy::apply` rewrites this
// line where the hierarchy is composed by pointer doubling, which keeps two more rows past them
// (`shared/doubling.wgsl`, its identities).
const POSE_ROWS: u32 = POSE_JOINTS;

// Whether a blend weight counts (`throng::program::weighs`): at least f32's least normal, 2^-126.
// A zero or subnormal weight counts as zero wherever a driver flushes subnormals or not, and the
// weights that count sum to a normal float, so no share divides by a subnormal.
const MIN_WEIGHT: f32 = 1.1754943508222875e-38;

fn weighs(w: f32) -> bool {
    return w >= MIN_WEIGHT;
}

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
    // Number of ancestors: roots are 0.
    depth: u32,
    // Index in `rig_tables` of the joint's ancestors, root first, `depth` of them.
    path_start: u32,
    // Row `i` of the rig's joints in depth order (`shared/subgroup.wgsl`, the fields below):
    // the joint at place `i`, its parent's place within the depth above, and where depth `i`'s
    // joints end (the joint count past the deepest).
    by_depth: u32,
}

// Fields of `RigJoint::by_depth` (`throng::gpu::types::BY_DEPTH_*`).
const BY_DEPTH_JOINT_MASK: u32 = 0xffu;
const BY_DEPTH_PARENT_LANE_SHIFT: u32 = 8u;
const BY_DEPTH_LEVEL_END_SHIFT: u32 = 16u;

const NO_PARENT: u32 = 0xffffffffu;

// Per clip of the archetype; `shaders/shared/compact.wgsl` reads its frames.
struct ClipHeader {
    // Index in `clip_data` (vec4 units) of the clip's first transform (frame-major, three vec4
    // each), or of a compact clip's first joint range (COMPACT_RANGE_VEC4S per joint), its
    // packed joint-frames following.
    first_vec4: u32,
    num_frames: u32,
    duration_s: f32,
    // 1 if sampling past the end wraps, 0 if it holds the last frame.
    looping: u32,
    // A compact clip's bits per smallest-three rotation component (1 to 16); 0 at full precision.
    rotation_bits: u32,
    // A compact clip's bits per translation component.
    translation_bits: u32,
    // A compact clip's u32 words per packed frame (every group of four joint-frames, their
    // words side by side).
    words_per_frame: u32,
    pad0: u32,
}

// `vec4` per joint of a compact clip's ranges: rotation minimum and step (per quaternion
// component), translation minimum and the joint-frame's word offset, translation step and
// whether translations are stored, scale (`throng::gpu::types::COMPACT_RANGE_VEC4S`).
const COMPACT_RANGE_VEC4S: u32 = 5u;

// The workgroup's index in the grid (`GpuCrowd::encode`, `GpuCrowd::encode_stage`): rows of at
// most the device's workgroups per dimension, and layers of such rows past that many rows, so a
// dispatch needs no 65,535-workgroup cap.
fn group_index(wg: vec3<u32>, groups: vec3<u32>) -> u32 {
    return (wg.z * groups.y + wg.y) * groups.x + wg.x;
}

// One clip to sample for a character (`throng::program::ClipSample`).
struct ClipSample {
    clip: u32,
    time_s: f32,
    weight: f32,
    // On the CPU, the clip seconds advanced since last frame (`advance_s`), which only root
    // motion reads, and root motion is the CPU's. On the device, once the sample-positions stage
    // (`shaders/sample_positions.wgsl`) has run, the sample's frame coordinate in its clip
    // (`throng::Clip::frame_coordinate`), which the frame's kernels read (`frame_position`).
    position: f32,
}

// The sample-positions stage's uniform (`shaders/sample_positions.wgsl`), one a window of the
// samples: the first `count` of the window are the frame's (the buffer holds room to grow past
// them).
struct PositionsParams {
    count: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
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
    // The layered frame: layers per character that keep memory (`LayerSetup::memory`).
    num_memory_layers: u32,
    // LAYOUT_MAT4 or LAYOUT_AFFINE3X4.
    output_layout: u32,
    // Where the chunk's first character starts in each bound window, in vec4 units. Windows
    // start at an offset aligned down to the device's storage alignment, so this is rarely 0.
    output_base: u32,
    local_base: u32,
    model_base: u32,
    // The layered frame: the chunk's first layer block in the bound `layer_memory` window, in
    // vec4 units; layers per character; real seconds since last frame.
    memory_base: u32,
    num_layers: u32,
    dt_s: f32,
    // Index of the bound `samples` window's first sample: 0 unless the frame's samples outgrow
    // one binding and each chunk binds the window its programs read.
    sample_base: u32,
    // 1 when the layered frame's workgroups evaluate the due list (animation LOD) that group 1's
    // binding 2 then holds, 0 when workgroup `w` evaluates chunk character `w`.
    due_list: u32,
    // The level kernels (`shared/levels.wgsl`): where the rig's bands of depth levels start in
    // `rig_tables` (each band's start and chains, then its rows of items), and how many bands
    // (`throng::gpu::types::level_bands`).
    levels_start: u32,
    num_bands: u32,
    // The layered level kernel under a due list: the chunk's due characters.
    num_due: u32,
    // Pointer doubling (`shared/doubling.wgsl`): where the rig's ancestors a round start in
    // `rig_tables` (`throng::gpu::types::GpuRigTables::doubling`).
    doubling_start: u32,
}

// One layer of one character's pose program (`throng::program::LayerProgram`), 40 bytes.
// The layered frame reads `programs[character * num_layers + layer]`.
struct LayerProgram {
    first_sample: u32,
    num_target: u32,
    num_secondary: u32,
    transition: u32,
    // A MODE_* code.
    mode: u32,
    // FLAG_* bits.
    flags: u32,
    target_weight: f32,
    progress: f32,
    weight: f32,
    // Inertialization's quintic duration or spring halflife, seconds.
    decay_s: f32,
}

// `LayerProgram::mode` values (`throng::program::SwitchMode`).
const MODE_CUT: u32 = 0u;
const MODE_FROZEN: u32 = 1u;
const MODE_CROSSFADE: u32 = 2u;
const MODE_QUINTIC: u32 = 3u;
const MODE_QUINTIC_OVERSHOOT: u32 = 4u;
const MODE_SPRING: u32 = 5u;

// `LayerProgram::flags` bits.
const FLAG_TRANSITIONING: u32 = 1u;
const FLAG_SOURCE_SNAPSHOT: u32 = 2u;
const FLAG_SWITCHED: u32 = 4u;
const FLAG_ROOT_MOTION: u32 = 8u;

// One layer of the archetype, in evaluation order (base, additive layers, override layers),
// at the start of `rig_tables`; uploaded once.
struct LayerSetup {
    // Index of the layer in the character's programs.
    layer: u32,
    // BLEND_OVERRIDE or BLEND_ADDITIVE.
    blend: u32,
    // SPACE_LOCAL or SPACE_MESH.
    space: u32,
    // Index in `rig_tables` of the mask's first weight (f32 bits, one per joint), or NO_MASK.
    mask_start: u32,
    // The layer's slot in each character's memory (`layer_block`), or NO_MEMORY for a layer
    // whose graph has only cuts: it shows its samples as they are and remembers nothing.
    memory: u32,
}

// `throng::program::MAX_LAYERS`: the most layers a crowd's stack holds
// (`throng::program::validate_layer_setups`).
const MAX_LAYERS: u32 = 16u;

// Words of one `LayerSetup` in `rig_tables`.
const LAYER_SETUP_WORDS: u32 = 5u;

const BLEND_OVERRIDE: u32 = 0u;
const BLEND_ADDITIVE: u32 = 1u;
const SPACE_LOCAL: u32 = 0u;
const SPACE_MESH: u32 = 1u;
const NO_MASK: u32 = 0xffffffffu;
const NO_MEMORY: u32 = 0xffffffffu;

// What one layer of one character remembers between frames (`throng::eval::transition::Inertia`
// and the frame count), the first two vec4 of its block in `layer_memory`, floats as bits.
struct LayerState {
    // Bits 0-1: frames shown (0, 1 or 2); bit 2: the joint slot holding the displayed pose;
    // bits 4-7: the decaying inertialization's MODE_* code, or 0 for none.
    flags: u32,
    // The decay's quintic duration or spring halflife, seconds.
    decay_s: f32,
    // Real seconds since the switch.
    elapsed_s: f32,
    // Largest offset component at the switch (metres or radians).
    largest_offset: f32,
    // Largest offset velocity component at the switch: the second vec4, which only a spring's
    // decay reads (`load_spring_velocity`), written at its capture (`store_layer_state`).
    largest_velocity: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

const STATE_SHOWN_MASK: u32 = 3u;
const STATE_SLOT_SHIFT: u32 = 2u;
const STATE_DECAY_SHIFT: u32 = 4u;
