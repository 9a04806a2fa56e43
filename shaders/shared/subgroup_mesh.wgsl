// The mesh-space override's model rotations composed level by level in one subgroup
// (`throng::gpu::Hierarchy::Subgroup`, `shared/subgroup.wgsl`), in place of
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
        var layer_model = identity;
        var out_model = identity;
        var start = 0u;
        for (var d = 0u; start < num_joints; d++) {
            let end = level_end(d);
            let item = level_item(start, end, lane, num_joints);
            var layer_parent = subgroupShuffle(layer_model, item.parent_lane);
            var out_parent = subgroupShuffle(out_model, item.parent_lane);
            if d == 0u {
                layer_parent = identity;
                out_parent = identity;
            }
            if item.present {
                let a = pose[item.joint];
                let step = mesh_step(layer_parent, out_parent, a.r0, a.r1, a.r2.x);
                layer_model = step.layer_model;
                out_model = step.out_model;
                pose[item.joint] = Affine(layer_model, out_model, a.r2);
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
