// Local-to-model with the hierarchy composed level by level in one subgroup
// (`throng::gpu::Hierarchy::Subgroup`), with `shared/composed_pose.wgsl` in place of
// `shared/walks.wgsl`. The subgroup holding thread 0 takes the rig's depths one after another, a
// lane a joint of the depth (the rig's joints in depth order, `RigJoint::by_depth`), each
// joint's parent's result passed from the lane that made it one depth earlier by a shuffle: one
// product per joint and one step per depth for the character, where every wave of a walk steps
// as deep as its deepest joint (on a 32-lane subgroup a 64-joint character's two waves each walk
// the whole depth). The products are the walk's, in its order. Built only where the device has
// subgroups, each of the rig's depths fits in one (`subgroup_min_size`), and a subgroup is
// smaller than the workgroup (`throng::gpu::Hierarchy::fits`). The depths' helpers are
// `shared/subgroup_depths.wgsl`'s.

// The composing subgroup reads no row of `pose` past the joints': nothing to prepare
// (`shared/doubling.wgsl` writes its identity rows here).
fn prepare_pose_rows(thread: u32) {}

// The local matrices in `pose` (all written, barrier passed) turned into model matrices depth
// by depth by the composing subgroup, then a barrier, and the thread's joints' read back
// (`shared/composed_pose.wgsl`). Every thread must call it.
fn compose_model_pose(thread: u32, num_joints: u32) -> array<Affine, JOINTS_PER_THREAD> {
    if composes_hierarchy(thread) {
        // Every lane of the subgroup is here: its count below is the lane's index.
        let lane = subgroupExclusiveAdd(1u);
        var model = pose[0];
        // Every depth holds a joint, so `d` stays below the joint count while `start` does: the
        // second test never ends the loop, it bounds it whatever the tables hold.
        var start = 0u;
        for (var d = 0u; start < num_joints && d < num_joints; d++) {
            let end = level_end(d);
            let item = level_item(start, end, lane, num_joints);
            let parent = Affine(
                subgroupShuffle(model.r0, item.parent_lane),
                subgroupShuffle(model.r1, item.parent_lane),
                subgroupShuffle(model.r2, item.parent_lane),
            );
            if item.present {
                // A root's model matrix is its local one.
                model = pose[item.joint];
                if d > 0u {
                    model = affine_mul(parent, model);
                    pose[item.joint] = model;
                }
            }
            start = end;
        }
    }
    workgroupBarrier();
    return own_rows(thread, num_joints);
}
