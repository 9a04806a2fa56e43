// Local-to-model and skinning by ancestor walks (`throng::gpu::Hierarchy::Walks`): each thread
// composes its joints' model matrices from the root down (`model_matrix`), with no barrier and
// no thread waiting for another's joints; a wave walks as deep as its deepest joint.
// `shared/composed_pose.wgsl` with `shared/subgroup.wgsl` or `shared/doubling.wgsl` replaces
// this file where the hierarchy is composed in place, level by level or by pointer doubling.

// The walks read no row of `pose` past the joints': nothing to prepare (`shared/doubling.wgsl`
// writes its identity rows here).
fn prepare_pose_rows(thread: u32) {}

// Every joint's skinning matrix written from the local matrices in `pose` (all written, barrier
// passed). Every thread must call it.
fn write_model_skinning(c: u32, thread: u32, num_joints: u32) {
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        write_skinning(c * num_joints + j, skinning_matrix(affine_to_mat4(model_matrix(j)), j));
    }
}
