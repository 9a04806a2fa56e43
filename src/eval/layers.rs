//! Layers: additive layers onto the base, then masked override layers on top, in local or mesh
//! space. Mirrored by `shaders/layers.wgsl`, whose mesh-space override composes the two poses'
//! model rotations in the hierarchy's file (`shaders/shared/walks_mesh.wgsl`; parent first as
//! [`override_mesh`] does, a depth at a time, in `subgroup_mesh.wgsl`; in rounds in
//! `doubling_mesh.wgsl`: `gpu::Hierarchy`).
//!
//! | blend | space | per joint `j`, weight `w = layer_weight × mask[j]` |
//! |---|---|---|
//! | additive | local | `out = base * nlerp(identity, delta, w)`, translation `base + w·delta` |
//! | override | local | `out = slerp(base, layer, w)`: the joint keeps the layer's angle to its parent |
//! | override | mesh | the joint's model-space rotation moves from the base's towards the layer's by `w`, whatever the joints above and under it do; where `w` is 0 it follows its parent |

use glam::{Mat4, Quat};

use crate::pose::slerp_normalized;
use crate::rig::{NO_PARENT, Transform};

// Additive deltas are made by clips (`Clip::to_additive`) as well as applied here, so their maths
// lives in `pose`, below both; the layers stage applies them.
pub use crate::pose::{apply_additive, make_additive};

/// Overrides `base` with `layer` in local space: `slerp(base, layer, weight × mask)` per joint.
pub fn override_local(base: &mut [Transform], layer: &[Transform], weight: f32, mask: Option<&[f32]>) {
    for (j, (b, l)) in base.iter_mut().zip(layer).enumerate() {
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w <= 0.0 {
            continue;
        }
        b.translation = b.translation.lerp(l.translation, w);
        b.rotation = slerp_normalized(b.rotation, l.rotation, w);
        b.scale = b.scale.lerp(l.scale, w);
    }
}

/// Overrides `base` with `layer` in mesh space: each masked joint's model-space rotation is
/// the slerp from the base's model-space rotation towards the layer's by `weight × mask`, then
/// is expressed back in the local space of its (already blended) parent. Every masked joint
/// moves by its own weight, so a layer fading in moves a hand as far as the spine it hangs from,
/// not further; a joint whose weight is 0 keeps its local rotation and follows its parent.
/// Translations and scales blend locally. `mask` of `None` is the whole body. The rotations of
/// `base` and `layer` must be unit (as sampled, blended and rest rotations are): their products
/// are not normalised again.
///
/// Each joint's result needs only the two poses' model-space rotations and its nearest masked
/// ancestor's, not its parent's result: the blended parent's model rotation is that ancestor's
/// blended one carried down by the base's rotations between them
/// (`T_a · B_a⁻¹ · B_parent`). So the GPU composes it in as few steps as the hierarchy's
/// products (`shaders/layers.wgsl`, `mesh_parent_under`).
pub fn override_mesh(
    parents: &[u16],
    base: &mut [Transform],
    layer: &[Transform],
    weight: f32,
    mask: Option<&[f32]>,
    scratch: &mut MeshSpaceScratch,
) {
    let n = base.len();
    let MeshSpaceScratch { layer_model, base_model, blended, anchor } = scratch;
    layer_model.resize(n, Quat::IDENTITY);
    base_model.resize(n, Quat::IDENTITY);
    blended.resize(n, Quat::IDENTITY);
    anchor.resize(n, NO_PARENT);
    for j in 0..n {
        let parent = parents[j];
        let (layer_parent, base_parent, parent_anchor) = match parent {
            NO_PARENT => (Quat::IDENTITY, Quat::IDENTITY, NO_PARENT),
            p => (layer_model[p as usize], base_model[p as usize], anchor[p as usize]),
        };
        // Products of unit rotations, not normalised again (`mesh_step` in `shaders/layers.wgsl`).
        layer_model[j] = layer_parent * layer[j].rotation;
        base_model[j] = base_parent * base[j].rotation;
        anchor[j] = parent_anchor;
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w > 0.0 {
            blended[j] = slerp_normalized(base_model[j], layer_model[j], w);
            let out_parent = mesh_parent(parent, parent_anchor, base_parent, blended, base_model);
            base[j].rotation = out_parent.inverse() * blended[j];
            base[j].translation = base[j].translation.lerp(layer[j].translation, w);
            base[j].scale = base[j].scale.lerp(layer[j].scale, w);
            anchor[j] = j as u16;
        }
    }
}

/// The blended model rotation of `parent` (`NO_PARENT`: the identity), whose nearest masked
/// ancestor (itself included) is `anchor`: the base's where there is none, the anchor's blended
/// rotation where it is the parent, and otherwise that blend carried down the base's rotations
/// from the anchor to the parent (`mesh_parent_from_rows` and `mesh_parent_under` in
/// `shaders/layers.wgsl`, the same products).
fn mesh_parent(parent: u16, anchor: u16, base_parent: Quat, blended: &[Quat], base_model: &[Quat]) -> Quat {
    match anchor {
        NO_PARENT => base_parent,
        a if a == parent => blended[a as usize],
        a => (blended[a as usize] * base_model[a as usize].inverse()) * base_parent,
    }
}

/// Working memory for [`override_mesh`], reused across characters.
#[derive(Clone, Debug, Default)]
pub struct MeshSpaceScratch {
    layer_model: Vec<Quat>,
    base_model: Vec<Quat>,
    blended: Vec<Quat>,
    anchor: Vec<u16>,
}

/// The model-space rotation of every joint of a local pose (used by tests and metrics).
#[must_use]
pub fn model_rotations(parents: &[u16], pose: &[Transform]) -> Vec<Quat> {
    let mut model = vec![Mat4::IDENTITY; pose.len()];
    crate::pose::local_to_model(parents, pose, &mut model);
    model.iter().map(|m| m.to_scale_rotation_translation().1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Vec3, Vec4};

    /// spine (root) → chest → arm.
    fn spine_arm() -> (Vec<u16>, Vec<Transform>) {
        let parents = vec![NO_PARENT, 0, 1];
        let pose = vec![
            Transform::from_translation(Vec3::Y),
            Transform::from_translation(Vec3::Y * 0.5),
            Transform::from_translation(Vec3::X * 0.2),
        ];
        (parents, pose)
    }

    #[test]
    fn zero_weight_layer_changes_nothing() {
        let (parents, base) = spine_arm();
        let mut layer = base.clone();
        layer[2].rotation = Quat::from_rotation_z(1.0);
        let mask = [1.0; 3];
        let mut out = base.clone();
        override_local(&mut out, &layer, 0.0, Some(&mask));
        apply_additive(&mut out, &layer, 0.0, None);
        override_mesh(&parents, &mut out, &layer, 0.0, Some(&mask), &mut MeshSpaceScratch::default());
        assert_eq!(out, base);
    }

    #[test]
    fn full_weight_whole_body_override_equals_the_layer() {
        let (parents, base) = spine_arm();
        let mut layer = base.clone();
        layer[0].rotation = Quat::from_rotation_x(0.3);
        layer[2].rotation = Quat::from_rotation_z(1.0);
        for mesh in [false, true] {
            let mut out = base.clone();
            if mesh {
                override_mesh(&parents, &mut out, &layer, 1.0, None, &mut MeshSpaceScratch::default());
            } else {
                override_local(&mut out, &layer, 1.0, None);
            }
            for (o, l) in out.iter().zip(&layer) {
                assert!(
                    o.rotation.angle_between(l.rotation) < 1e-4 && o.translation.abs_diff_eq(l.translation, 1e-6),
                    "mesh {mesh}"
                );
            }
        }
    }

    /// Each masked joint's resulting model rotation is the model-space slerp from the base's
    /// model rotation towards the layer's, by its weight, whatever the joints above it did; an
    /// unmasked one keeps its local rotation under its blended parent.
    #[test]
    fn mesh_space_override_is_the_model_space_slerp() {
        let parents = vec![NO_PARENT, 0, 1, 2, 1, 4, 5, 6];
        let axes = [
            Vec3::X,
            Vec3::Y,
            Vec3::Z,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(0.0, -1.0, 1.0),
            Vec3::ONE,
            Vec3::Y,
            Vec3::new(1.0, 0.0, -1.0),
        ];
        let pose = |angle: f32| -> Vec<Transform> {
            axes.iter()
                .enumerate()
                .map(|(j, a)| Transform {
                    rotation: Quat::from_axis_angle(a.normalize(), angle * (j as f32 + 1.0)),
                    ..Transform::from_translation(Vec3::Y)
                })
                .collect()
        };
        let (base, layer) = (pose(0.4), pose(-0.9));
        // Joints 5 and 6 are unmasked under masked 4, joint 7 masked under them.
        let mask = [0.0, 0.5, 1.0, 0.25, 0.8, 0.0, 0.0, 0.6];
        let mut out = base.clone();
        override_mesh(&parents, &mut out, &layer, 1.0, Some(&mask), &mut MeshSpaceScratch::default());
        let (base_model, layer_model) = (model_rotations(&parents, &base), model_rotations(&parents, &layer));
        let out_model = model_rotations(&parents, &out);
        for j in 0..parents.len() {
            let expected = if mask[j] > 0.0 {
                base_model[j].slerp(layer_model[j], mask[j]).normalize()
            } else {
                match parents[j] {
                    NO_PARENT => base[j].rotation,
                    p => out_model[p as usize] * base[j].rotation,
                }
            };
            let got = if out_model[j].dot(expected) < 0.0 { -out_model[j] } else { out_model[j] };
            let error = (Vec4::from(got) - Vec4::from(expected)).abs();
            assert!(error.cmple(Vec4::splat(2e-6)).all(), "joint {j}: {got} against {expected}");
        }
    }

    /// A mesh-space layer fading in moves every masked joint of a chain the same share of the way
    /// from the base's model rotation to the layer's: at weight 0.25 the hand at the end of a
    /// seven-joint chain is a quarter of the way, as the spine is, not most of the way (blending
    /// each joint under its already blended parent compounds: 1 − 0.75⁷, 87 %).
    #[test]
    fn mesh_space_fade_moves_deep_joints_no_further_than_their_weight() {
        let parents: Vec<u16> = std::iter::once(NO_PARENT).chain(0..6).collect();
        let base = vec![Transform::from_translation(Vec3::Y); 7];
        let mut layer = base.clone();
        layer[0].rotation = Quat::from_rotation_z(1.2);
        for weight in [0.25, 0.5, 0.9] {
            let mut out = base.clone();
            override_mesh(&parents, &mut out, &layer, weight, None, &mut MeshSpaceScratch::default());
            for (j, rotation) in model_rotations(&parents, &out).iter().enumerate() {
                let share = rotation.angle_between(Quat::IDENTITY) / 1.2;
                assert!((share - weight).abs() < 1e-4, "weight {weight}, joint {j}: {share} of the way");
            }
        }
    }

    #[test]
    fn mesh_space_arm_keeps_its_model_rotation_under_a_leaning_spine() {
        let (parents, layer) = spine_arm();
        let mut base = layer.clone();
        base[0].rotation = Quat::from_rotation_x(0.5); // the base leans the spine forward
        let mask = [0.0, 0.0, 1.0];
        let authored = model_rotations(&parents, &layer)[2];
        let mut mesh = base.clone();
        override_mesh(&parents, &mut mesh, &layer, 1.0, Some(&mask), &mut MeshSpaceScratch::default());
        assert!(model_rotations(&parents, &mesh)[2].angle_between(authored) < 1e-4);
        let mut local = base.clone();
        override_local(&mut local, &layer, 1.0, Some(&mask));
        let off = model_rotations(&parents, &local)[2].angle_between(authored);
        assert!((off - 0.5).abs() < 1e-4, "local space inherits the lean: {off}");
    }
}
