// The production layered frame (`GpuCrowd::set_frame`, mirroring `throng::eval::frame::FrameJob`):
// per character, every layer through sample ─► transition ─► layers, then local-to-model ─►
// skinning, one workgroup per character and one dispatch per chunk and shape pass (`SHAPE_PASS`:
// the steady characters', then the switching ones', each workgroup leaving where its character
// is the other pass's). Poses stay in registers and
// workgroup memory; device memory sees the skinning matrices, each layer's replay entry (the
// samples it showed) written to the characters' memory, and the memory's snapshot or offsets
// read only while a transition needs them. Concatenated after every stage file.

@compute @workgroup_size(WORKGROUP_SIZE)
fn frame_layers_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let c = workgroup_character(wg.x);
    if !in_shape_pass(c) {
        return;
    }
    let num_joints = NUM_JOINTS;
    prepare_pose_rows(thread);
    if REPLAY_CODE && switches_a_layer(c) {
        for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
            store_switch_sources_of(c, j);
        }
    }
    // The layers in evaluation order. A crowd's kernel has this loop unrolled, a call a layer of
    // its stack with the layer's setup as constants (`gpu::pipelines::unroll_layers`), so that
    // the driver folds each layer's blend, space, mask and memory into its own code.
    for (var order = 0u; order < params.num_layers; order++) {
        frame_layer(c, load_setup(order), thread, num_joints);
    }
    // The mesh-space override's last barrier (or the transition's) has passed: `pose` is free.
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        pose[j] = affine_from_mat4(transform_to_mat4(combined_pose[k]));
    }
    workgroupBarrier();
    write_model_skinning(c, thread, num_joints);
}

// Layer `setup` of chunk character `c` evaluated and combined into `combined_pose`. Every thread
// must call it (the transition and the mesh-space override hold barriers).
fn frame_layer(c: u32, setup: LayerSetup, thread: u32, num_joints: u32) {
    let program = layer_program(c, setup.layer);
    if evaluate_layer(c, setup, program, !REPLAY_DISPLAYED_POSES, thread, num_joints) {
        combine_layer(setup, program.weight, thread, num_joints);
    }
}
