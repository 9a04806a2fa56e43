// Resources every stage may bind; a pipeline's layout holds only the groups its entry point
// uses. Keep in sync with `src/gpu/pipelines.rs` (bind group layouts).

// Group 0: the archetype, uploaded once. Small tables share buffers, so that the layered frame
// binds 8 storage buffers, within WebGPU's default limits.
@group(0) @binding(0) var<storage, read> rig_joints: array<RigJoint>;
// Every clip's `ClipHeader` (two vec4 each, read by `clip_header`), then every clip's frames as
// `throng::gpu::types::clip_data` lays them out: full transforms or compact ranges and
// joint-frames, all as bits (read through `clip_joint_frames` in `compact.wgsl`).
@group(0) @binding(1) var<storage, read> clip_data: array<vec4<u32>>;
// A layered crowd's layer table — its `LayerSetup`s in evaluation order (five words each), then
// the masks' weights as f32 bits — then every joint's ancestors, root first
// (`RigJoint::path_start`, `RigJoint::depth`), then the bands of depth levels from
// `ChunkParams::levels_start` (`shared/levels.wgsl`).
@group(0) @binding(2) var<storage, read> rig_tables: array<u32>;

// Group 1: one chunk of the crowd; samples and ranges are rewritten every frame.
@group(1) @binding(0) var<uniform> params: ChunkParams;
// The frame's samples, or (when they outgrow one binding) the chunk's window of them from
// `params.sample_base` on.
@group(1) @binding(1) var<storage, read> samples: array<ClipSample>;
// Indexed by crowd character index (not chunk-relative). The layered frame samples through its
// programs and never reads ranges; with `params.due_list` it holds the due list there instead
// (`workgroup_character`).
@group(1) @binding(2) var<storage, read> ranges: array<SampleRange>;
// The chunk's window of the skinning-matrix buffer; character `c` of the chunk, joint `j` at
// `params.output_base + (c * num_joints + j) * (4 or 3)`.
@group(1) @binding(3) var<storage, read_write> output: array<vec4<f32>>;

// Group 2: intermediates of the stage-by-stage path, windows like `output`.
// Local poses, three vec4 per joint (a `Transform`).
@group(2) @binding(0) var<storage, read_write> local_poses: array<vec4<f32>>;
// Model matrices, four vec4 (columns) per joint.
@group(2) @binding(1) var<storage, read_write> model_poses: array<vec4<f32>>;

// Group 3: the layered frame (`GpuCrowd::set_frame`).
// Every character's layer programs, `character * num_layers + layer` (crowd index).
@group(3) @binding(0) var<storage, read> programs: array<LayerProgram>;
// The chunk's window of the per-character memory: per character, per layer, a `LayerState`
// (two vec4) then eight vec4 per joint laid out as `transition.wgsl` says, all as bits.
// Starts at `params.memory_base`.
@group(3) @binding(1) var<storage, read_write> layer_memory: array<vec4<u32>>;

// Seconds since this workgroup's character was last shown: the frame's `dt_s`, or with a due
// list its own (the frames animation LOD skipped included). Set by `workgroup_character`.
var<private> character_dt_s: f32;

// How many characters the chunk's dispatch evaluates: its characters, or with a due list its
// due ones. A grid of rows may hold a few workgroups past them, which find no character.
fn dispatched_characters() -> u32 {
    return select(params.num_characters, params.num_due, params.due_list != 0u);
}

// The chunk character that workgroup `w` evaluates, setting `character_dt_s`. Without a due
// list, character `w`. With one (animation LOD, `GpuCrowd::set_frame_due`), the chunk's `w`-th
// due character: the chunk's entries start at its first character's index in `ranges`, each the
// crowd row (`start`) and its seconds as f32 bits (`count`), and only as many workgroups as
// entries are dispatched.
fn workgroup_character(w: u32) -> u32 {
    let e = chunk_character(w);
    character_dt_s = e.dt_s;
    return e.c;
}

// The chunk character of entry `w` and its seconds since last shown, as `workgroup_character`
// finds them, for a thread that serves a character other than its own (`character_dt_s` stays
// its own character's).
struct ChunkCharacter {
    c: u32,
    dt_s: f32,
}

fn chunk_character(w: u32) -> ChunkCharacter {
    if params.due_list == 0u {
        return ChunkCharacter(w, params.dt_s);
    }
    let entry = ranges[params.first_character + w];
    return ChunkCharacter(entry.start - params.first_character, bitcast<f32>(entry.count));
}
