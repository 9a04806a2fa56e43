// Layers: additive layers onto the base, then masked override layers on top, in local or mesh
// space. Mirrors `throng::eval::layers`. Needs `transition.wgsl` (the layer's pose) and
// `local_to_model.wgsl`, whose workgroup `pose` array the mesh-space override borrows for every
// joint's layer and base rotations, weight and nearest masked joint before local-to-model fills
// it: one 48-byte affine per joint of workgroup memory in all (3 KiB for a 64-joint rig), not
// two.

// Gates for measurement (`throng::gpu::MeasuredPath`, as `SWITCH_CODE` in `transition.wgsl`):
// the additive, the local-space override and the mesh-space override combines, which a layer
// runs only where its blend and space say; and within the last, in the level kernels, its
// roots' step, which only the waves holding roots run (`override_mesh_levels`; the fused
// kernel has none).
const ADDITIVE_CODE: bool = true;
const OVERRIDE_LOCAL_CODE: bool = true;
const MESH_OVERRIDE_CODE: bool = true;
const MESH_ROOTS_CODE: bool = true;

// The character's pose for this thread's joints, layer by layer.
var<private> combined_pose: array<Transform, JOINTS_PER_THREAD>;

// The layer's weight times its mask's weight for `joint`.
fn layer_joint_weight(setup: LayerSetup, weight: f32, joint: u32) -> f32 {
    if setup.mask_start == NO_MASK {
        return weight;
    }
    return weight * bitcast<f32>(rig_tables[setup.mask_start + joint]);
}

// `apply_additive` for one joint: `base * nlerp(identity, delta, w)`, translation `base + w·delta`.
fn additive_joint(base: Transform, delta: Transform, w: f32) -> Transform {
    if !(w > 0.0) {
        return base;
    }
    var b = base;
    b.translation += delta.translation * w;
    // `quat_nlerp(identity, dq, w)` with its terms written out, `dq` the delta on the identity's
    // hemisphere (w not below 0): the delta times its weight, negated where its w is below 0
    // (`(−d)·w` is `d·(−w)` exactly); the nlerp's own hemisphere test could not fail.
    let dw = select(w, -w, delta.rotation.w < 0.0);
    let toward = quat_normalize_unit(vec4<f32>(delta.rotation.xyz * dw, (1.0 - w) + delta.rotation.w * dw));
    // A product of unit rotations: never zero, no guard.
    b.rotation = quat_normalize_unit(quat_mul(b.rotation, toward));
    b.scale *= mix(vec3<f32>(1.0), delta.scale, w);
    return b;
}

// `override_local` for one joint: `slerp(base, layer, w)`.
fn override_local_joint(base: Transform, layer: Transform, w: f32) -> Transform {
    if !(w > 0.0) {
        return base;
    }
    return Transform(
        mix(base.translation, layer.translation, w),
        0.0,
        quat_slerp_normalized(base.rotation, layer.rotation, w),
        mix(base.scale, layer.scale, w),
        0.0,
    );
}

// One joint's model rotations in `override_mesh`: the layer's and the base's.
struct MeshModels {
    layer_model: vec4<f32>,
    base_model: vec4<f32>,
}

// A joint's model rotations from its parent's (`parent`) and its own local ones. The products are
// of unit rotations (every local rotation is one: sampled, blended and rest rotations are
// normalised), so they are not normalised again: a hierarchy's depth of products drifts from
// unit length by a few ulps, and the slerp normalises what it returns.
fn mesh_step(parent: MeshModels, layer_local: vec4<f32>, base_local: vec4<f32>) -> MeshModels {
    return MeshModels(quat_mul(parent.layer_model, layer_local), quat_mul(parent.base_model, base_local));
}

// A masked joint's blended model rotation: its base's moved towards its layer's by `w`.
fn mesh_blend(models: MeshModels, w: f32) -> vec4<f32> {
    return quat_slerp_normalized(models.base_model, models.layer_model, w);
}

// The rotation a joint of weight `w` publishes once its model rotations are composed: its blend
// where masked (`blend_mesh_joints` reads it), else its layer model rotation, which no one reads.
fn published_rotation(models: MeshModels, w: f32) -> vec4<f32> {
    if w > 0.0 {
        return mesh_blend(models, w);
    }
    return models.layer_model;
}

// The blended model rotation of a masked joint's parent whose nearest masked ancestor is above
// it (`mesh_parent` in `throng::eval::layers`): that ancestor's blend (`anchor_blended`) carried
// down the base's rotations from the ancestor (`anchor_base`) to the parent (`base_parent`).
// Where the parent is masked its own blend is the answer, and where no ancestor is, the base's.
fn mesh_parent_under(anchor_blended: vec4<f32>, anchor_base: vec4<f32>, base_parent: vec4<f32>) -> vec4<f32> {
    return quat_mul(quat_mul(anchor_blended, quat_conjugate(anchor_base)), base_parent);
}

// The blended model rotation of joint `parent` (`NO_PARENT`: the identity) from the rows every
// composition leaves in workgroup memory once every masked joint's blend is
// published: r0 a masked joint's blend, r1 every joint's base model rotation, r2.y the nearest
// masked joint among itself and its ancestors (`anchor_in_row`). `parent_row` is the
// parent's row and `anchor_row` that joint's (any row where there is none).
fn mesh_parent_from_rows(parent: u32, parent_row: Affine, anchor_row: Affine) -> vec4<f32> {
    if parent == NO_PARENT {
        return vec4<f32>(0.0, 0.0, 0.0, 1.0);
    }
    let anchor = anchor_from_row(parent_row.r2.y);
    if anchor == NO_PARENT {
        return parent_row.r1;
    }
    if anchor == parent {
        return parent_row.r0;
    }
    return mesh_parent_under(anchor_row.r0, anchor_row.r1, parent_row.r1);
}

// The nearest masked joint among `joint` (weight `w`) and its ancestors (`NO_PARENT`: none),
// from its parent's (`parent_anchor`).
fn mesh_anchor(joint: u32, w: f32, parent_anchor: u32) -> u32 {
    return select(parent_anchor, joint, w > 0.0);
}

// A joint index or `NO_PARENT` as a row's float (one past it: `NO_PARENT` wraps to 0), exact
// for any rig's joint count, with no bit pattern a store could change.
fn anchor_in_row(anchor: u32) -> f32 {
    return f32(anchor + 1u);
}

// `anchor_in_row`'s joint back.
fn anchor_from_row(value: f32) -> u32 {
    return u32(value) - 1u;
}

// A joint's resulting model rotation expressed under its already blended parent (`out_parent`):
// its new local rotation, where its weight is above 0 (elsewhere the base's stays).
fn mesh_local(out_parent: vec4<f32>, out_model: vec4<f32>) -> vec4<f32> {
    return quat_mul(quat_conjugate(out_parent), out_model);
}

// Joint `k`'s new local transform where its weight `w` is above 0: its resulting model
// rotation `out_model` expressed under its parent's, `out_parent`; translation and scale
// blended towards the layer's in local space.
fn blend_mesh_joint(k: u32, out_parent: vec4<f32>, out_model: vec4<f32>, w: f32) {
    var b = combined_pose[k];
    b.rotation = mesh_local(out_parent, out_model);
    b.translation = mix(b.translation, layer_pose[k].translation, w);
    b.scale = mix(b.scale, layer_pose[k].scale, w);
    combined_pose[k] = b;
}

// Each of the thread's masked joints' blend over its row's r0 (the layer's model rotation, which
// no other joint reads), from its composed rows (its model rotations, its weight).
fn publish_mesh_blends(thread: u32, num_joints: u32) {
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        let rows = pose[j];
        if rows.r2.x > 0.0 {
            pose[j].r0 = mesh_blend(MeshModels(rows.r0, rows.r1), rows.r2.x);
        }
    }
}

// Each of the thread's masked joints' new local transform from the rows the hierarchy's
// `override_mesh_rotations` leaves in `pose` (barrier passed): r0 a masked joint's blend, r1
// every joint's base model rotation, r2 its weight and nearest masked joint
// (`mesh_parent_from_rows`).
fn blend_mesh_joints(thread: u32, num_joints: u32) {
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        let rows = pose[j];
        if rows.r2.x > 0.0 {
            let parent = rig_joints[j].parent;
            var parent_rows = rows;
            var anchor_rows = rows;
            if parent != NO_PARENT {
                parent_rows = pose[parent];
                let anchor = anchor_from_row(parent_rows.r2.y);
                if anchor != NO_PARENT {
                    anchor_rows = pose[anchor];
                }
            }
            blend_mesh_joint(k, mesh_parent_from_rows(parent, parent_rows, anchor_rows), rows.r0, rows.r2.x);
        }
    }
}

// `override_mesh`: each masked joint's model-space rotation moved from the base's towards the
// layer's, then expressed under its already blended parent. The CPU walks joints in index
// order, parents first; here the workgroup shares every joint's layer rotation, base rotation
// and weight (`pose`'s rows r0, r1, r2.x) and the hierarchy's file composes them
// (`override_mesh_rotations`: each thread's ancestor walks in `shared/walks_mesh.wgsl` or one
// subgroup's depths in `shared/subgroup_mesh.wgsl`, the CPU's arithmetic in its order with
// barriers around it rather than one per depth; or pointer doubling's rounds in
// `shared/doubling_mesh.wgsl`, the products grouped otherwise, two barriers a round). No
// joint's blend waits for another's: a step of the composition is two products, and each masked
// joint's slerp comes after it. Every thread must call it.
fn override_mesh(setup: LayerSetup, weight: f32, thread: u32, num_joints: u32) {
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        // A masked joint is its own nearest masked joint (read by pointer doubling's rounds).
        let w = layer_joint_weight(setup, weight, j);
        pose[j] = Affine(layer_pose[k].rotation, combined_pose[k].rotation, vec4<f32>(w, anchor_in_row(mesh_anchor(j, w, NO_PARENT)), 0.0, 0.0));
    }
    workgroupBarrier();
    override_mesh_rotations(thread, num_joints);
    // Every thread has read `pose` before anyone writes it again.
    workgroupBarrier();
}

// Combines `layer_pose` into `combined_pose` as `setup` says: the base layer replaces it.
// Every thread must call it (the mesh-space override holds barriers).
fn combine_layer(setup: LayerSetup, weight: f32, thread: u32, num_joints: u32) {
    if setup.layer != 0u && setup.blend == BLEND_OVERRIDE && setup.space == SPACE_MESH {
        if MESH_OVERRIDE_CODE {
            override_mesh(setup, weight, thread, num_joints);
        }
        return;
    }
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        if setup.layer == 0u {
            combined_pose[k] = layer_pose[k];
        } else if setup.blend == BLEND_ADDITIVE {
            if ADDITIVE_CODE {
                combined_pose[k] = additive_joint(combined_pose[k], layer_pose[k], layer_joint_weight(setup, weight, j));
            }
        } else if OVERRIDE_LOCAL_CODE {
            combined_pose[k] = override_local_joint(combined_pose[k], layer_pose[k], layer_joint_weight(setup, weight, j));
        }
    }
}

// The stage alone: each layer's displayed pose, read from the characters' memory, combined in
// evaluation order into `local_poses`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn layers_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let w = group_index(wg, groups);
    if w >= dispatched_characters() {
        return;
    }
    let c = workgroup_character(w);
    let num_joints = NUM_JOINTS;
    for (var order = 0u; order < params.num_layers; order++) {
        let setup = load_setup(order);
        let program = layer_program(c, setup.layer);
        if !layer_shows(setup.layer, program) {
            continue;
        }
        if setup.memory == NO_MEMORY {
            // Nothing in memory: the layer shows its samples as they are (its programs are cuts).
            sample_layer(program, setup.layer, setup.blend == BLEND_ADDITIVE, thread, num_joints);
        } else {
            let block = layer_block(c, setup.memory);
            let slot = (load_layer_state(block).flags >> STATE_SLOT_SHIFT) & 1u;
            for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
                let j = thread + k * WORKGROUP_SIZE;
                if !holds_joint(thread, k) {
                    break;
                }
                layer_pose[k] = load_slot(joint_ref(block, j), slot);
            }
        }
        combine_layer(setup, program.weight, thread, num_joints);
    }
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if !holds_joint(thread, k) {
            break;
        }
        store_local(c * num_joints + j, combined_pose[k]);
    }
}
