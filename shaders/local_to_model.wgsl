// Local-to-model: composes each joint's local matrix with its parent's model matrix. Mirrors
// `throng::eval::local_to_model`. The CPU walks joints in order; here the workgroup composes
// all joints of one depth at once, depth by depth, which gives the same products because every
// parent is final before its children are composed.

// The character's pose in workgroup memory: local matrices, then model matrices in place.
var<workgroup> pose: array<Affine, MAX_JOINTS>;

// Before: `pose[j]` holds joint `j`'s local matrix. After: its model matrix. Every thread of
// the workgroup must call this (it holds barriers).
fn local_to_model(thread: u32, num_joints: u32, max_depth: u32) {
    for (var depth = 1u; depth <= max_depth; depth++) {
        workgroupBarrier();
        for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
            // Field by field: the whole `RigJoint` is 128 bytes, mostly the inverse bind matrix.
            if rig_joints[j].depth == depth {
                pose[j] = affine_mul(pose[rig_joints[j].parent], pose[j]);
            }
        }
    }
    workgroupBarrier();
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
fn local_to_model_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let c = wg.x;
    let num_joints = params.num_joints;
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        pose[j] = affine_from_mat4(transform_to_mat4(load_local(c * num_joints + j)));
    }
    local_to_model(thread, num_joints, params.max_depth);
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        store_model(c * num_joints + j, affine_to_mat4(pose[j]));
    }
}
