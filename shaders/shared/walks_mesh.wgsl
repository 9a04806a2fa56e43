// The mesh-space override's model rotations by ancestor walks (`throng::gpu::Hierarchy::Walks`):
// each thread replays its joints' chains from the root down (`rig_tables`), the two poses'
// products a step, then the workgroup shares what they give; four barriers in all rather than
// one per depth. `shared/subgroup_mesh.wgsl` replaces this file where the hierarchy is composed
// level by level, `shared/doubling_mesh.wgsl` where it is composed by pointer doubling.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations and weight, written, barrier passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    // Each of the thread's joints' rows once composed: its blend where masked (else the layer's
    // model rotation), the base's model rotation, its weight and nearest masked joint.
    var composed: array<Affine, JOINTS_PER_THREAD>;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        var models = MeshModels(identity, identity);
        var anchor = NO_PARENT;
        let start = rig_joints[j].path_start;
        for (var i = 0u; i < rig_joints[j].depth; i++) {
            let a = rig_tables[start + i];
            let rows = pose[a];
            models = mesh_step(models, rows.r0, rows.r1);
            anchor = mesh_anchor(a, rows.r2.x, anchor);
        }
        let rows = pose[j];
        models = mesh_step(models, rows.r0, rows.r1);
        anchor = mesh_anchor(j, rows.r2.x, anchor);
        let published = published_rotation(models, rows.r2.x);
        composed[k] = Affine(published, models.base_model, vec4<f32>(rows.r2.x, anchor_in_row(anchor), 0.0, 0.0));
    }
    // Every walk has read the local rotations before any row is replaced.
    workgroupBarrier();
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        pose[j] = composed[k];
    }
    workgroupBarrier();
    blend_mesh_joints(thread, num_joints);
}
