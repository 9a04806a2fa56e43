// The mesh-space override's model rotations composed level by level in one subgroup
// (`throng::gpu::Hierarchy::Subgroup` and `DoublingSubgroup`, the depths' helpers in
// `shared/subgroup_depths.wgsl`), in place of
// `shared/walks_mesh.wgsl`: the composing subgroup replaces each joint's rows in `pose` by its
// layer and resulting model rotations depth by depth, then every thread reads its joints' and
// their parents'. The walk's steps, in its order.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations and weight, written, barrier passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    if composes_hierarchy(thread) {
        // Every lane of the subgroup is here: its count below is the lane's index.
        let lane = subgroupExclusiveAdd(1u);
        // The roots step from the identity. A lane past a depth's joints steps a joint it leaves
        // alone (no child reads it: a parent is a joint of the depth above).
        var start = level_end(0u);
        let root = level_item(0u, start, lane, num_joints);
        let root_rows = pose[root.joint];
        var step = mesh_step(identity, identity, root_rows.r0, root_rows.r1, root_rows.r2.x);
        if root.present {
            pose[root.joint] = Affine(step.layer_model, step.out_model, root_rows.r2);
        }
        for (var d = 1u; start < num_joints; d++) {
            let end = level_end(d);
            let item = level_item(start, end, lane, num_joints);
            let layer_parent = subgroupShuffle(step.layer_model, item.parent_lane);
            let out_parent = subgroupShuffle(step.out_model, item.parent_lane);
            let rows = pose[item.joint];
            step = mesh_step(layer_parent, out_parent, rows.r0, rows.r1, rows.r2.x);
            if item.present {
                pose[item.joint] = Affine(step.layer_model, step.out_model, rows.r2);
            }
            start = end;
        }
    }
    workgroupBarrier();
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        let w = pose[j].r2.x;
        if w > 0.0 {
            let parent = rig_joints[j].parent;
            var out_parent = identity;
            if parent != NO_PARENT {
                out_parent = pose[parent].r1;
            }
            blend_mesh_joint(k, out_parent, pose[j].r1, w);
        }
    }
}
