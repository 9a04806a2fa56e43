// The production frame: sample and blend, local-to-model, skinning for one character per
// workgroup in a single dispatch per chunk. The pose never leaves workgroup memory; the only
// writes to device memory are the skinning matrices themselves. Concatenated after
// `sample.wgsl`, `local_to_model.wgsl`, `skinning.wgsl` and the hierarchy's files
// (`shared/walks.wgsl`, or `shared/composed_pose.wgsl` with `shared/subgroup.wgsl` or
// `shared/doubling.wgsl`: `throng::gpu::Hierarchy`), whose functions it calls.

@compute @workgroup_size(WORKGROUP_SIZE)
fn frame_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let c = wg.x;
    let range = ranges[params.first_character + c];
    let num_joints = NUM_JOINTS;
    prepare_pose_rows(thread);
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        pose[j] = affine_from_mat4(transform_to_mat4(sample_blend_joint(range, j, num_joints)));
    }
    workgroupBarrier();
    write_model_skinning(c, thread, num_joints);
}
