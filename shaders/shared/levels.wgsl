// The level kernels' workgroup (`throng::gpu::FrameKernel::Levels`): several characters per
// 128-thread workgroup (one character of more than 128 joints), a joint per thread, the pose in
// workgroup memory; what is the same for
// every joint of a sample computed once per sample; the hierarchy composed band by band over
// the rig's depth levels. Used by `frame_levels.wgsl` and `frame_layers_levels.wgsl`, after
// `sample.wgsl` (frame positions) and the shared files.
//
//   thread t ──► character slot t / LANES, joint t % LANES (lanes past the rig's joints idle)
//   band b   ──► thread t composes chain t of the band's GROUP_CHARACTERS × (chains a
//                character): slot t / n, the (t % n)-th chain, joint after joint, read from the
//                rig's item table (`level_item`); one barrier per band, where a band is one or
//                more depth levels whose joints form chains (`throng::gpu::types::level_bands`)
//
// Every barrier is reached by every thread: per-character work is predicated, never a branch
// around a barrier, since the characters of one workgroup run different programs (a band's
// chain work is branched over by the threads without a chain, its barrier after the branch).

// Threads per workgroup: 128, or one character's lanes where that is more. Keep in sync with
// `throng::gpu::types::level_group_threads`.
const GROUP_THREADS: u32 = max(128u, LANES);

// Threads per character: the rig's joints rounded up to a power of two (1 to 256).
// `throng::gpu::pipelines::shader_source` rewrites this line for each rig.
const LANES: u32 = 64u;

// Characters per workgroup.
const GROUP_CHARACTERS: u32 = GROUP_THREADS / LANES;

// A gate for measurement (`throng::gpu::MeasuredPath::BandChains`, as `SWITCH_CODE` in
// `transition.wgsl`): a band's chain work in the hierarchy's passes (`model_levels`;
// `frame_layers_levels.wgsl`, `override_mesh_levels`), which a wave holding none of the band's
// chains branches over. With it off, a band loop's body is what such a wave runs.
const BAND_CHAINS_CODE: bool = true;

// A sample-table entry's clip for a sample whose weight does not count (`weighs`; skipped by the blend).
const SKIP_SAMPLE: u32 = 0xffffffffu;

// Each character's joints, slot `s` at `s * LANES`: its local matrices, then its model
// matrices (composed in place); the mesh-space override borrows it as `frame_layers.wgsl` says,
// and the layered transition for each lane's largest offset at a capture.
var<workgroup> group_pose: array<Affine, GROUP_THREADS>;
// Per character (slot `s` at `s * LANES`), one entry per sample of the layer being sampled:
// its two frames' first vec4 in `clip_data` (the first SKIP_SAMPLE where the sample weighs
// nothing; with compact clips the clip and its first frame), interpolation factor and
// normalised weight as bits (`sample_entry`).
var<workgroup> sample_table: array<vec4<u32>, GROUP_THREADS>;

// What every joint needs of sample `index` of the frame in a blend of `count` samples whose weights
// sum to `packed` (`packed_sum`): with full clips where its two frames start in `clip_data` (a
// joint's transform is `3 × joint` vec4 on), so that no lane reads the clip's header; with compact
// clips the clip and its first frame, which the decoder takes with the header. Then the
// interpolation factor and the normalised weight. The one sample of a blend of one weighs exactly
// 1.0, not `x / x` (which a GPU's division need not make 1.0): `table_blend_joint` then gives it as
// sampled.
fn sample_entry(index: u32, count: u32, packed: f32) -> vec4<u32> {
    let s = samples[index - params.sample_base];
    let h = clip_header(s.clip);
    let p = frame_position(h, s.position);
    // `weight * scale / total` (`WeightSum`); where the weights were scaled, the scaled weight
    // negated over the negated total, the same bits (a sign changes no rounding). The select
    // is of the weight, not of a scale held through a loop (8 VGPRs in the clip loop's misses).
    let scaled = select(s.weight, s.weight * -OVERFLOW_WEIGHT_SCALE, packed < 0.0);
    let w = select(scaled / packed, 1.0, count == 1u);
    if COMPACT_CLIPS {
        return vec4<u32>(select(SKIP_SAMPLE, s.clip, weighs(s.weight)), p.frame0, bitcast<u32>(p.alpha), bitcast<u32>(w));
    }
    let frame_vec4s = NUM_JOINTS * 3u;
    let first = h.first_vec4 + p.frame0 * frame_vec4s;
    return vec4<u32>(select(SKIP_SAMPLE, first, weighs(s.weight)), h.first_vec4 + p.frame1 * frame_vec4s, bitcast<u32>(p.alpha), bitcast<u32>(w));
}

// Lane `lane` of a character writes the table entry of the character's sample `first + lane` of a
// blend of `count` samples whose weights sum to `packed` (`packed_sum`; the lanes past them write
// nothing): the two-clip frame's fill, a lane a sample. The layered frame's fill serves every
// character from the workgroup's first threads (`fill_table_of_slots`). The caller holds a barrier
// before the table is read.
fn fill_sample_table(t: u32, lane: u32, first: u32, count: u32, packed: f32) {
    if lane < count {
        sample_table[t] = sample_entry(first + lane, count, packed);
    }
}

// A blend's `WeightSum` as the level kernels hold it, in one float: the total, negated where
// the weights' scale is OVERFLOW_WEIGHT_SCALE (a total is never negative, weights are not).
// Two floats a blend held through the clip loops cost the layered kernel 8 VGPRs (80 against
// 72).
fn packed_sum(sum: WeightSum) -> f32 {
    return select(sum.total, -sum.total, sum.scale != 1.0);
}

// Entry `i` of the character's table at `slot_base`, sample `first + i` of a blend of `count`
// whose weights sum to `packed` (`packed_sum`): from the table, or computed here past the LANES
// entries the table holds.
fn table_entry(slot_base: u32, first: u32, i: u32, count: u32, packed: f32) -> vec4<u32> {
    if i < LANES || !TABLE_MISS_CODE {
        return sample_table[slot_base + i];
    }
    return sample_entry(first + i, count, packed);
}

// One joint of a table entry's clip: its two frames interpolated.
fn table_sample(e: vec4<u32>, joint: u32, num_joints: u32) -> Transform {
    if !COMPACT_CLIPS {
        return sample_frames(clip_transform(e.x + joint * 3u), clip_transform(e.y + joint * 3u), bitcast<f32>(e.z));
    }
    let h = clip_header(e.x);
    let frames = clip_joint_frames(h, e.y, next_frame(h, e.y), joint, num_joints);
    return sample_frames(frames.a, frames.b, bitcast<f32>(e.z));
}

// `sample_blend_joint_over` for a blend whose entries start at entry `offset` of the character's
// table (samples `first + offset ..`, `count` of them, weights summing to `packed`, as `packed_sum`
// holds it): the same arithmetic in the same order, the per-sample values read rather than
// recomputed. With full clips a blend of one sample is sampled outside the loop, as
// `sample_blend_joint_over` does (no loop control, no multiplication by its weight), from the
// table. With compact clips, whose decoding is large, so that the kernel holds one copy of the
// decoder (8 VGPRs fewer), and where its entry lies past the table, so that the loop holds the only
// table miss, it takes the loop once instead: its weight is exactly 1.0 (`sample_entry`), the first
// `blend_add` adds its product with it to a zero sum (both exact) and the sum is not renormalised,
// so the pose is the clip's as sampled, bit for bit but for a negative zero's sign.
fn table_blend_joint(slot_base: u32, first: u32, offset: u32, count: u32, packed: f32, joint: u32, num_joints: u32, rest: Transform) -> Transform {
    if !(abs(packed) > 0.0) {
        return rest;
    }
    if SINGLE_SAMPLE_CODE && !COMPACT_CLIPS && count == 1u && offset < LANES {
        return table_sample(sample_table[slot_base + offset], joint, num_joints);
    }
    var acc = Transform(vec3<f32>(0.0), 0.0, vec4<f32>(0.0), vec3<f32>(0.0), 0.0);
    for (var i = 0u; i < count; i++) {
        let e = table_entry(slot_base, first, offset + i, count, packed);
        if e.x == SKIP_SAMPLE {
            continue;
        }
        acc = blend_add(acc, table_sample(e, joint, num_joints), bitcast<f32>(e.w));
    }
    if count > 1u {
        acc.rotation = quat_normalize_unit(acc.rotation);
    }
    return acc;
}

// Where the rig's bands lie in `rig_tables`, read from `params` once before a band loop: in
// the loop's condition and body a uniform read is made again every band (the barriers keep the
// compiler from hoisting it).
struct Levels {
    // The table's first word: each band's start and shape, two words a band (`level_band`).
    start: u32,
    // Bands, the roots' first.
    count: u32,
}

fn rig_levels() -> Levels {
    return Levels(params.levels_start, params.num_bands);
}

// One band: where its items start in `rig_tables`, its chains a character, and its depths (its
// longest chain's joints).
struct Band {
    items: u32,
    chains: u32,
    depths: u32,
}

// A band's shape word: its chains below this bit, its depths from it
// (`throng::gpu::types::LEVEL_BAND_DEPTHS_SHIFT`).
const LEVEL_BAND_DEPTHS_SHIFT: u32 = 16u;

fn level_band(levels: Levels, b: u32) -> Band {
    let i = levels.start + 2u * b;
    let shape = rig_tables[i + 1u];
    return Band(levels.start + rig_tables[i], shape & ((1u << LEVEL_BAND_DEPTHS_SHIFT) - 1u), shape >> LEVEL_BAND_DEPTHS_SHIFT);
}

// A level item's packing (`throng::gpu::types::LEVEL_ITEM_JOINT_SHIFT`).
const LEVEL_ITEM_JOINT_SHIFT: u32 = 10u;
const LEVEL_ITEM_PARENT_SHIFT: u32 = 18u;
const LEVEL_ITEM_LENGTH_SHIFT: u32 = 27u;
const LEVEL_ITEM_NO_PARENT: u32 = 0x100u;

// Thread `t`'s chain of `band`: the character slot's first thread, the chain's first joint,
// that joint's parent (LEVEL_ITEM_NO_PARENT for a root: no pass reads it, local-to-model leaving
// the roots as they are and the mesh-space override stepping them outside its loop) and the
// chain's length, its joints `joint, joint + 1, …` (`throng::gpu::types::level_bands`). One word
// of the rig's item table (`throng::gpu::types::GpuRigTables::levels`) where the thread would
// otherwise divide its index by the band's width and look up the joint, then its parent; a
// thread past the band's chains (`t` from `chains × GROUP_CHARACTERS` on) has a chain of length
// 0, and in the bands' loops branches over its band, so that a wave holding no chain runs only
// the band's shape read, the test and the barrier. A thread with a chain runs the band's depth
// loop, whose count is the same for all (scalar loop control), taking a depth's joint where its
// chain reaches it.
struct LevelItem {
    slot_base: u32,
    joint: u32,
    parent: u32,
    length: u32,
}

fn level_item(band: Band, t: u32) -> LevelItem {
    if t >= band.chains * GROUP_CHARACTERS {
        return LevelItem(0u, 0u, 0u, 0u);
    }
    let word = rig_tables[band.items + t];
    return LevelItem(word & 0x3ffu, (word >> LEVEL_ITEM_JOINT_SHIFT) & 0xffu, (word >> LEVEL_ITEM_PARENT_SHIFT) & 0x1ffu, word >> LEVEL_ITEM_LENGTH_SHIFT);
}

// Local-to-model over `group_pose`, band by band: `model[j] = model[parent(j)] * local[j]`,
// the product `throng::eval::local_to_model` takes, each joint's once; a thread takes its
// chain's joints one after the other, the product it has just stored the next one's parent.
// Roots (band 0) are their own model matrices. Every thread must call it, after a barrier past
// the local matrices.
fn model_levels(t: u32) {
    let levels = rig_levels();
    for (var b = 1u; b < levels.count; b++) {
        let band = level_band(levels, b);
        // A wave holding none of the band's chains branches over the whole of it. Measured
        // without the chain work (BAND_CHAINS_CODE off), the band loop's body is what such a
        // wave runs, and a store: the stand-in that keeps the test (no such wave runs it).
        if t < band.chains * GROUP_CHARACTERS {
            if BAND_CHAINS_CODE {
                let item = level_item(band, t);
                let first = item.slot_base + item.joint;
                var parent = item.slot_base + item.parent;
                for (var k = 0u; k < band.depths; k++) {
                    if k < item.length {
                        let j = first + k;
                        group_pose[j] = affine_mul(group_pose[parent], group_pose[j]);
                        parent = j;
                    }
                }
            } else {
                group_pose[t].r0 = vec4<f32>(0.0);
            }
        }
        workgroupBarrier();
    }
}

fn identity_affine() -> Affine {
    return Affine(vec4<f32>(1.0, 0.0, 0.0, 0.0), vec4<f32>(0.0, 1.0, 0.0, 0.0), vec4<f32>(0.0, 0.0, 1.0, 0.0));
}
