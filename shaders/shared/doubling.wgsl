// Local-to-model by pointer doubling (`throng::gpu::Hierarchy::Doubling`), with
// `shared/composed_pose.wgsl` in place of `shared/walks.wgsl`. Every thread takes its own joints
// through rounds: in the round of `span`, a joint at least `span` deep composes the matrix held
// by its ancestor `span` depths up with its own, so that after it each joint holds the product
// of its `2 × span` nearest links (itself and its ancestors, the root at most). A rig whose
// deepest joint is `d` deep is composed in ⌈log₂(d + 1)⌉ rounds, each a product per joint and
// two barriers, where a wave of walks steps as deep as its deepest joint (the 64-joint humanoid:
// 4 rounds against 14 steps) and where one subgroup's depth loop takes every depth
// (`shared/subgroup.wgsl`). No subgroup operation: it runs on every device. The products are
// grouped differently from the CPU's (`((root × …) × parent) × local`): the matrices equal
// `throng::eval::local_to_model`'s within rounding, not bit for bit.

// The rounds that compose the rig: one for each bit of its deepest joint's depth (that of the
// last joint in depth order, `RigJoint::by_depth`), round `r` spanning `2^r` depths, so that the
// spans `1, 2, 4, …` reach every depth up to it. The same in every thread; a count, so that the
// rounds' loop ends by its header whatever the tables hold (`tests/gpu_portability.rs`).
fn doubling_rounds(num_joints: u32) -> u32 {
    let deepest = rig_joints[rig_joints[num_joints - 1u].by_depth & BY_DEPTH_JOINT_MASK].depth;
    return 32u - countLeadingZeros(deepest);
}

// Each of a thread's joints' depth and where its ancestors start (`rig_joints`), read once for
// every round; depth 0 past the rig's joints, composed with nothing.
struct DoublingPaths {
    depth: array<u32, JOINTS_PER_THREAD>,
    path: array<u32, JOINTS_PER_THREAD>,
}

fn doubling_paths(thread: u32, num_joints: u32) -> DoublingPaths {
    var paths: DoublingPaths;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j < num_joints {
            paths.depth[k] = rig_joints[j].depth;
            paths.path[k] = rig_joints[j].path_start;
        }
    }
    return paths;
}

// Each of the thread's joints' row in `pose` (written, barrier passed), kept from round to round:
// a row only its own thread writes.
fn own_rows(thread: u32, num_joints: u32) -> array<Affine, JOINTS_PER_THREAD> {
    var rows: array<Affine, JOINTS_PER_THREAD>;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j < num_joints {
            rows[k] = pose[j];
        }
    }
    return rows;
}

// The row of the thread's `k`-th joint's ancestor `span` depths up (the joint at least `span`
// deep).
fn doubling_ancestor(paths: DoublingPaths, k: u32, span: u32) -> Affine {
    return pose[rig_tables[paths.path[k] + paths.depth[k] - span]];
}

// The end of a round: every thread has read, then each thread's rows are published (those
// composed in it, and the others as they stood: a row past the rig's joints, which no one reads,
// or one not deep enough for the round, unchanged), and read by no one before the next round.
fn publish_round(thread: u32, rows: array<Affine, JOINTS_PER_THREAD>) {
    workgroupBarrier();
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        pose[thread + k * WORKGROUP_SIZE] = rows[k];
    }
    workgroupBarrier();
}

// The local matrices in `pose` (all written, barrier passed) turned into model matrices by the
// rounds, the last ending in a barrier (`shared/composed_pose.wgsl`). Every thread must call it.
fn compose_model_pose(thread: u32, num_joints: u32) {
    let paths = doubling_paths(thread, num_joints);
    var composed = own_rows(thread, num_joints);
    let rounds = doubling_rounds(num_joints);
    for (var r = 0u; r < rounds; r++) {
        let span = 1u << r;
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if paths.depth[k] >= span {
                composed[k] = affine_mul(doubling_ancestor(paths, k, span), composed[k]);
            }
        }
        publish_round(thread, composed);
    }
}
