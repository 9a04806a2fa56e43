// Local-to-model: composes each joint's local matrix with its ancestors'. Mirrors
// `throng::eval::local_to_model`. The CPU walks joints in order, each parent's model matrix
// before its children's; here each thread composes its own joints' chains from the root down
// (`rig_tables`): the same products in the same order, with no barrier per depth and no thread
// waiting for another's joints.

// The character's local matrices in workgroup memory, shared by the threads that compose them.
var<workgroup> pose: array<Affine, POSE_ROWS>;

// Joint `j`'s model matrix from the local matrices in `pose` (all written, barrier passed):
// `((root × …) × parent) × local`.
fn model_matrix(j: u32) -> Affine {
    let depth = rig_joints[j].depth;
    if depth == 0u {
        return pose[j];
    }
    let start = rig_joints[j].path_start;
    var m = pose[rig_tables[start]];
    for (var i = 1u; i < depth; i++) {
        m = affine_mul(m, pose[rig_tables[start + i]]);
    }
    return affine_mul(m, pose[j]);
}

fn load_local(index: u32) -> Transform {
    let i = params.local_base + index * 3u;
    return Transform(local_poses[i].xyz, 0.0, local_poses[i + 1u], local_poses[i + 2u].xyz, 0.0);
}

fn store_model(index: u32, m: mat4x4<f32>) {
    let i = params.model_base + index * 4u;
    model_poses[i] = m[0];
    model_poses[i + 1u] = m[1];
    model_poses[i + 2u] = m[2];
    model_poses[i + 3u] = m[3];
}

// The stage alone: one workgroup per character, `local_poses` to `model_poses`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn local_to_model_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let w = group_index(wg, groups);
    if w >= dispatched_characters() {
        return;
    }
    let c = workgroup_character(w);
    let num_joints = NUM_JOINTS;
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        pose[j] = affine_from_mat4(transform_to_mat4(load_local(c * num_joints + j)));
    }
    workgroupBarrier();
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        store_model(c * num_joints + j, affine_to_mat4(model_matrix(j)));
    }
}
