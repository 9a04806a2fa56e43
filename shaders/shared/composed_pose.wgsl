// Local-to-model and skinning where the hierarchy's file composes the model matrices in `pose`
// in place (`compose_model_pose`: `shared/subgroup.wgsl`, `shared/doubling.wgsl`), in place of
// `shared/walks.wgsl` with that file: every thread then writes its joints' skinning matrices.

// Every joint's skinning matrix written from the local matrices in `pose` (all written, barrier
// passed). Every thread must call it.
fn write_model_skinning(c: u32, thread: u32, num_joints: u32) {
    compose_model_pose(thread, num_joints);
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        write_skinning(c * num_joints + j, skinning_matrix(affine_to_mat4(pose[j]), j));
    }
}
