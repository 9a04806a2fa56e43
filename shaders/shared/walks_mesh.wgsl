// The mesh-space override's model rotations by ancestor walks (`throng::gpu::Hierarchy::Walks`):
// each thread replays its joints' chains from the root down (`rig_tables`), two barriers in all
// rather than one per depth. `shared/subgroup_mesh.wgsl` replaces this file where the hierarchy
// is composed level by level.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations and weight, written, barrier passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        var layer_parent = identity;
        var out_parent = identity;
        let start = rig_joints[j].path_start;
        for (var i = 0u; i < rig_joints[j].depth; i++) {
            let a = pose[rig_tables[start + i]];
            let step = mesh_step(layer_parent, out_parent, a.r0, a.r1, a.r2.x);
            layer_parent = step.layer_model;
            out_parent = step.out_model;
        }
        let w = pose[j].r2.x;
        if w > 0.0 {
            let out_model = mesh_step(layer_parent, out_parent, layer_pose[k].rotation, combined_pose[k].rotation, w).out_model;
            blend_mesh_joint(k, out_parent, out_model, w);
        }
    }
}
