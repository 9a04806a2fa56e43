// The mesh-space override's model rotations by pointer doubling (`throng::gpu::Hierarchy::Doubling`),
// in place of `shared/walks_mesh.wgsl`, as `shared/doubling.wgsl` composes local-to-model: every
// thread takes its joints through rounds; in the round of `span` a joint at least `span` deep
// composes the layer's and the base's rotations its ancestor `span` depths up holds with its
// own, and takes that ancestor's nearest masked joint where none of its own links is masked.
// After ⌈log₂(d + 1)⌉ rounds, two barriers each, every row holds its joint's two model rotations
// and nearest masked joint (itself or an ancestor) (the rounds' helpers in
// `shared/doubling.wgsl`), a masked joint's blend in place of its layer rotation from the last;
// then each masked joint's new local rotation is worked out, as after one subgroup's depths. The
// products are grouped differently from the walks' (`((root × …) × parent) × local`): equal
// within rounding.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations, weight and, where masked, itself as its nearest masked joint; written, barrier
// passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    let paths = doubling_paths(thread);
    var composed = own_rows(thread, num_joints);
    for (var r = 0u; r < DOUBLING_ROUNDS; r++) {
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            if !holds_joint(thread, k) {
                continue;
            }
            let own = composed[k];
            let above = pose[doubling_row(paths, k, r, MESH_IDENTITY_ROW)];
            let models = mesh_step(MeshModels(above.r0, above.r1), own.r0, own.r1);
            // The nearer of the two chains' nearest masked joints: every joint of the own chain
            // descends from every joint of the ancestor's, so comes after it in the rig
            // (`Rig::new` refuses a parent after its child), and `anchor_in_row` keeps that
            // order (none, 0, below every joint): the larger row value.
            let anchor = max(own.r2.y, above.r2.y);
            // The last round publishes a masked joint's blend over its layer model rotation,
            // as the walks publish theirs.
            var published = models.layer_model;
            if r + 1u == DOUBLING_ROUNDS {
                published = published_rotation(models, own.r2.x);
            }
            composed[k] = Affine(published, models.base_model, vec4<f32>(own.r2.x, anchor, 0.0, 0.0));
        }
        publish_round(thread, composed);
    }
    if DOUBLING_ROUNDS == 0u {
        // A rig of roots, which no round composes: each masked root's blend from its rows.
        publish_mesh_blends(thread, num_joints);
        workgroupBarrier();
    }
    blend_mesh_joints(thread, num_joints);
}
