// The mesh-space override's model rotations composed level by level in one subgroup
// (`throng::gpu::Hierarchy::Subgroup`, the depths' helpers in
// `shared/subgroup_depths.wgsl`), in place of `shared/walks_mesh.wgsl`: the composing subgroup
// replaces each joint's rows in `pose` by its layer and base model rotations and its nearest
// masked joint (itself or an ancestor) depth by depth; then every thread publishes its masked
// joints' blends and, after a barrier, reads their parents'. The walk's products, in its order.

// Each masked joint's new local transform, from `pose`'s rows (every joint's layer and base
// rotations and weight, written, barrier passed). Every thread must call it.
fn override_mesh_rotations(thread: u32, num_joints: u32) {
    let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    if composes_hierarchy(thread) {
        // Every lane of the subgroup is here: its count below is the lane's index.
        let lane = subgroupExclusiveAdd(1u);
        // The roots step from the identity. A lane past a depth's joints steps a joint it leaves
        // alone (no child reads it: a parent is a joint of the depth above).
        var start = level_end(0u);
        let root = level_item(0u, start, lane, num_joints);
        let root_rows = pose[root.joint];
        var models = mesh_step(MeshModels(identity, identity), root_rows.r0, root_rows.r1);
        var anchor = mesh_anchor(root.joint, root_rows.r2.x, NO_PARENT);
        if root.present {
            pose[root.joint] = Affine(models.layer_model, models.base_model, vec4<f32>(root_rows.r2.x, anchor_in_row(anchor), 0.0, 0.0));
        }
        for (var d = 1u; start < num_joints && d < num_joints; d++) {
            let end = level_end(d);
            let item = level_item(start, end, lane, num_joints);
            let parent = MeshModels(subgroupShuffle(models.layer_model, item.parent_lane), subgroupShuffle(models.base_model, item.parent_lane));
            let parent_anchor = subgroupShuffle(anchor, item.parent_lane);
            let rows = pose[item.joint];
            models = mesh_step(parent, rows.r0, rows.r1);
            anchor = mesh_anchor(item.joint, rows.r2.x, parent_anchor);
            if item.present {
                pose[item.joint] = Affine(models.layer_model, models.base_model, vec4<f32>(rows.r2.x, anchor_in_row(anchor), 0.0, 0.0));
            }
            start = end;
        }
    }
    workgroupBarrier();
    publish_mesh_blends(thread, num_joints);
    workgroupBarrier();
    blend_mesh_joints(thread, num_joints);
}
