// The two-clip frame's level kernel (`FrameKernel::Levels` after `GpuCrowd::set_samples`,
// mirroring `throng::eval::EvalCrowdJob` as `frame.wgsl` does): GROUP_CHARACTERS characters per
// workgroup, a joint per thread; each character's per-sample values computed once, by one lane
// per sample; local-to-model band by band (`shared/levels.wgsl`); skinning. Concatenated after
// `sample.wgsl` and `skinning.wgsl`, whose functions it calls.

@compute @workgroup_size(GROUP_THREADS)
fn frame_levels_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let lane = t % LANES;
    let slot_base = t - lane;
    let c = group_index(wg, groups) * GROUP_CHARACTERS + t / LANES;
    let num_joints = NUM_JOINTS;
    let live = c < params.num_characters;
    let owns = live && lane < num_joints;
    var range = SampleRange(params.sample_base, 0u);
    if live {
        range = ranges[params.first_character + c];
    }
    let sum = packed_sum(sum_weights(range.start, range.count));
    fill_sample_table(t, lane, range.start, range.count, sum);
    workgroupBarrier();
    var p = identity_affine();
    if owns {
        let local = table_blend_joint(slot_base, range.start, 0u, range.count, sum, lane, num_joints, rig_joints[lane].rest);
        p = affine_from_mat4(transform_to_mat4(local));
    }
    group_pose[t] = p;
    workgroupBarrier();
    model_levels(t);
    if owns {
        write_skinning(c * num_joints + lane, skinning_matrix(affine_to_mat4(group_pose[t]), lane));
    }
}
