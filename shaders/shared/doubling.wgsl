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

// The depth of the rig's deepest joint: that of the last joint in depth order
// (`RigJoint::by_depth`). The same in every thread.
fn deepest_depth(num_joints: u32) -> u32 {
    return rig_joints[rig_joints[num_joints - 1u].by_depth & BY_DEPTH_JOINT_MASK].depth;
}

// The local matrices in `pose` (all written, barrier passed) turned into model matrices by the
// rounds, the last ending in a barrier (`shared/composed_pose.wgsl`). Every thread must call it.
fn compose_model_pose(thread: u32, num_joints: u32) {
    // Each of the thread's joints' depth and ancestors (0: past the rig's joints, composed
    // with nothing), read once for every round.
    var depth: array<u32, JOINTS_PER_THREAD>;
    var path: array<u32, JOINTS_PER_THREAD>;
    // Each of the thread's joints' product so far, kept from round to round (a row only its own
    // thread writes), published after each round's reads.
    var composed: array<Affine, JOINTS_PER_THREAD>;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j < num_joints {
            depth[k] = rig_joints[j].depth;
            path[k] = rig_joints[j].path_start;
            composed[k] = pose[j];
        }
    }
    let deepest = deepest_depth(num_joints);
    for (var span = 1u; span <= deepest; span <<= 1u) {
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if depth[k] >= span {
                composed[k] = affine_mul(pose[rig_tables[path[k] + depth[k] - span]], composed[k]);
            }
        }
        workgroupBarrier();
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if depth[k] >= span {
                pose[thread + k * WORKGROUP_SIZE] = composed[k];
            }
        }
        workgroupBarrier();
    }
}
