// Local-to-model and skinning where the hierarchy's file composes the model matrices from the
// local ones in `pose` (`compose_model_pose`: `shared/subgroup.wgsl` in place,
// `shared/doubling.wgsl` round by round), in place of `shared/walks.wgsl` with that file: every
// thread then writes its joints' skinning matrices from the model matrices the composition
// hands it.

// Every joint's skinning matrix written from the local matrices in `pose` (all written, barrier
// passed). Every thread must call it.
fn write_model_skinning(c: u32, thread: u32, num_joints: u32) {
    let model = compose_model_pose(thread, num_joints);
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        write_skinning(c * num_joints + j, skinning_matrix(affine_to_mat4(model[k]), j));
    }
}

// Each of the thread's joints' row in `pose` (written, barrier passed); zeros past the rig's
// joints.
fn own_rows(thread: u32, num_joints: u32) -> array<Affine, JOINTS_PER_THREAD> {
    var rows: array<Affine, JOINTS_PER_THREAD>;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if holds_joint(thread, k) {
            rows[k] = pose[j];
        }
    }
    return rows;
}
