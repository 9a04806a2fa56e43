// The mesh-space override's model rotations by pointer doubling (`throng::gpu::Hierarchy::Doubling`),
// in place of `shared/walks_mesh.wgsl`, as `shared/doubling.wgsl` composes local-to-model: every
// thread takes its joints through rounds; in the round of `span` a joint at least `span` deep
// composes the layer's and the base's rotations its ancestor `span` depths up holds with its
// own, and takes that ancestor's nearest masked joint where none of its own links is masked.
// After ⌈log₂(d + 1)⌉ rounds, two barriers each, every row holds its joint's two model rotations
// and nearest masked joint (itself or an ancestor); then each masked joint's blend is published
// and its new local rotation worked out, as after one subgroup's depths. The products are
// grouped differently from the walks' (`((root × …) × parent) × local`): equal within rounding.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations, weight and, where masked, itself as its nearest masked joint; written, barrier
// passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    // Each of the thread's joints' depth and ancestors (0: past the rig's joints, composed with
    // nothing), read once for every round.
    var depth: array<u32, JOINTS_PER_THREAD>;
    var path: array<u32, JOINTS_PER_THREAD>;
    // Each of the thread's joints' rows so far, kept from round to round (rows only their own
    // thread writes), published after each round's reads.
    var composed: array<Affine, JOINTS_PER_THREAD>;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j < num_joints {
            depth[k] = rig_joints[j].depth;
            path[k] = rig_joints[j].path_start;
            composed[k] = pose[j];
        }
    }
    let deepest = deepest_depth(num_joints);
    for (var span = 1u; span <= deepest; span <<= 1u) {
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if depth[k] >= span {
                let own = composed[k];
                let above = pose[rig_tables[path[k] + depth[k] - span]];
                let models = mesh_step(MeshModels(above.r0, above.r1), own.r0, own.r1);
                var anchor = own.r2.y;
                if anchor_from_row(anchor) == NO_PARENT {
                    anchor = above.r2.y;
                }
                composed[k] = Affine(models.layer_model, models.base_model, vec4<f32>(own.r2.x, anchor, 0.0, 0.0));
            }
        }
        workgroupBarrier();
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if depth[k] >= span {
                pose[thread + k * WORKGROUP_SIZE] = composed[k];
            }
        }
        workgroupBarrier();
    }
    publish_mesh_blends(thread, num_joints);
    workgroupBarrier();
    blend_mesh_joints(thread, num_joints);
}
