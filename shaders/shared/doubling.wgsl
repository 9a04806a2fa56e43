// Local-to-model by pointer doubling (`throng::gpu::Hierarchy::Doubling`), with
// `shared/composed_pose.wgsl` in place of `shared/walks.wgsl`. Every thread takes its own joints
// through rounds: in the round of `span`, a joint at least `span` deep composes the matrix held
// by its ancestor `span` depths up with its own, so that after it each joint holds the product
// of its `2 × span` nearest links (itself and its ancestors, the root at most). A rig whose
// deepest joint is `d` deep is composed in ⌈log₂(d + 1)⌉ rounds, each a product per joint and
// two barriers (but the last, whose rows go to the thread's skinning), where a wave of walks
// steps as deep as its deepest joint (the 64-joint humanoid: 4 rounds against 14 steps) and
// where one subgroup's depth loop takes every depth (`shared/subgroup.wgsl`). No subgroup
// operation: it runs on every device. The products are grouped differently from the CPU's
// (`((root × …) × parent) × local`): the matrices equal `throng::eval::local_to_model`'s within
// rounding, not bit for bit.

// The rounds that compose the crowd's rig (`throng::gpu::types::doubling_rounds` of its deepest
// joint's depth): round `r` spans `2^r` depths, and the spans `1, 2, 4, …` reach every depth up
// to the deepest. `throng::gpu::Hierarchy::apply` rewrites this line for the rig, as
// `NUM_JOINTS` is (a crowd's kernels are built for its rig), so that the driver unrolls the
// rounds, each with its span's ancestor in a register: no loop, no depth test, no lookup a round.
const DOUBLING_ROUNDS: u32 = 8u;

// Words a joint of the ancestors a round (`throng::gpu::types::DOUBLING_WORDS`, two rounds a
// word), those the rig's rounds read, and the ancestor of a joint less deep than the round's
// span (`DOUBLING_NONE`).
const DOUBLING_WORDS: u32 = 4u;
const DOUBLING_ROUND_WORDS: u32 = (DOUBLING_ROUNDS + 1u) / 2u;
const DOUBLING_NONE: u32 = 0xffffu;

// The rows of `pose` past the joints' (`POSE_ROWS`, which `Hierarchy::apply` makes two more than
// `POSE_JOINTS`): the identities a round composes a joint less deep than its span with, a
// local-to-model matrix, and the mesh-space override's two rotations with no masked joint.
// Written before the kernel's first barrier, never again (every other row is a joint's).
const MODEL_IDENTITY_ROW: u32 = POSE_JOINTS;
const MESH_IDENTITY_ROW: u32 = POSE_JOINTS + 1u;

// The identity rows written by the first thread. The frame kernels call it before their first
// barrier (`shared/walks.wgsl`'s and `shared/subgroup.wgsl`'s read no row past the joints').
fn prepare_pose_rows(thread: u32) {
    if thread == 0u {
        let z = vec4<f32>(0.0, 0.0, 1.0, 0.0);
        pose[MODEL_IDENTITY_ROW] = Affine(vec4<f32>(1.0, 0.0, 0.0, 0.0), vec4<f32>(0.0, 1.0, 0.0, 0.0), z);
        let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
        // No masked joint in `z.y` (`anchor_in_row(NO_PARENT)`; a round reads no other field of
        // its ancestor's third row).
        pose[MESH_IDENTITY_ROW] = Affine(identity, identity, z);
    }
}

// Each of a thread's joints' ancestors a round (`GpuRigTables::doubling`), the words the rounds
// read, read once for every round; none past the rig's joints, whose rows no one reads.
struct DoublingPaths {
    words: array<array<u32, DOUBLING_WORDS>, JOINTS_PER_THREAD>,
}

fn doubling_paths(thread: u32) -> DoublingPaths {
    var paths: DoublingPaths;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        for (var w = 0u; w < DOUBLING_ROUND_WORDS; w++) {
            paths.words[k][w] = 0xffffffffu;
            if holds_joint(thread, k) {
                paths.words[k][w] = rig_tables[params.doubling_start + j * DOUBLING_WORDS + w];
            }
        }
    }
    return paths;
}

// The row the thread's `k`-th joint composes in round `r`: its ancestor's, or `identity_row`
// where it is less deep than the round's span (`DOUBLING_NONE`, above every row of a joint).
fn doubling_row(paths: DoublingPaths, k: u32, r: u32, identity_row: u32) -> u32 {
    return min((paths.words[k][r / 2u] >> (16u * (r % 2u))) & DOUBLING_NONE, identity_row);
}

// The end of a round: every thread has read, then each thread's rows are published (those
// composed in it, and a row past the rig's joints, which no one reads), and read by no one
// before the next round.
fn publish_round(thread: u32, rows: array<Affine, JOINTS_PER_THREAD>) {
    workgroupBarrier();
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        pose[thread + k * WORKGROUP_SIZE] = rows[k];
    }
    workgroupBarrier();
}

// The local matrices in `pose` (all written, barrier passed) turned into the thread's joints'
// model matrices by the rounds (`shared/composed_pose.wgsl`), each row a thread keeps from round
// to round (`own_rows`: only its own thread writes it). Every round but the last publishes its
// rows: no one reads the last's but their thread. Every thread must call it.
fn compose_model_pose(thread: u32, num_joints: u32) -> array<Affine, JOINTS_PER_THREAD> {
    let paths = doubling_paths(thread);
    var composed = own_rows(thread, num_joints);
    for (var r = 0u; r < DOUBLING_ROUNDS; r++) {
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            // A wave without joints branches over the product (a rig that fills its waves has
            // no such test left, `holds_joint`).
            if holds_joint(thread, k) {
                composed[k] = affine_mul(pose[doubling_row(paths, k, r, MODEL_IDENTITY_ROW)], composed[k]);
            }
        }
        if r + 1u < DOUBLING_ROUNDS {
            publish_round(thread, composed);
        }
    }
    return composed;
}
