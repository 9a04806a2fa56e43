//! Layers: additive layers onto the base, then masked override layers on top, in local or mesh
//! space. Mirrored by `shaders/layers.wgsl`, whose mesh-space override composes its model
//! rotations in the hierarchy's file (`shaders/shared/walks_mesh.wgsl`, or parent first as
//! [`override_mesh`] does, a depth at a time, in `subgroup_mesh.wgsl`: `gpu::Hierarchy`).
//!
//! | blend | space | per joint `j`, weight `w = layer_weight × mask[j]` |
//! |---|---|---|
//! | additive | local | `out = base * nlerp(identity, delta, w)`, translation `base + w·delta` |
//! | override | local | `out = slerp(base, layer, w)`: the joint keeps the layer's angle to its parent |
//! | override | mesh | the joint's model-space rotation moves towards the layer's by `w`, whatever the joints under it do |

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

/// Overrides `base` with `layer` in mesh space: each masked joint's model-space rotation moves
/// towards the layer's model-space rotation by `weight × mask`, then is expressed back in the
/// local space of the (already blended) parent. Translations and scales blend locally.
/// `mask` of `None` is the whole body. The rotations of `base` and `layer` must be unit (as
/// sampled, blended and rest rotations are): their products are not normalised again.
pub fn override_mesh(
    parents: &[u16],
    base: &mut [Transform],
    layer: &[Transform],
    weight: f32,
    mask: Option<&[f32]>,
    scratch: &mut MeshSpaceScratch,
) {
    let n = base.len();
    scratch.layer_model.resize(n, Quat::IDENTITY);
    scratch.out_model.resize(n, Quat::IDENTITY);
    for j in 0..n {
        let parent = parents[j];
        let layer_parent = if parent == NO_PARENT { Quat::IDENTITY } else { scratch.layer_model[parent as usize] };
        let out_parent = if parent == NO_PARENT { Quat::IDENTITY } else { scratch.out_model[parent as usize] };
        // Products of unit rotations, not normalised again (`mesh_step` in `shaders/layers.wgsl`).
        scratch.layer_model[j] = layer_parent * layer[j].rotation;
        let mut out_model = out_parent * base[j].rotation;
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w > 0.0 {
            out_model = slerp_normalized(out_model, scratch.layer_model[j], w);
            base[j].rotation = out_parent.inverse() * out_model;
            base[j].translation = base[j].translation.lerp(layer[j].translation, w);
            base[j].scale = base[j].scale.lerp(layer[j].scale, w);
        }
        scratch.out_model[j] = out_model;
    }
}

/// Working memory for [`override_mesh`], reused across characters.
#[derive(Clone, Debug, Default)]
pub struct MeshSpaceScratch {
    layer_model: Vec<Quat>,
    out_model: Vec<Quat>,
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

    /// Each joint's resulting model rotation is the model-space slerp from the base's rotation
    /// under its blended parent towards the layer's model rotation, by its weight, whatever the
    /// joints above it did.
    #[test]
    fn mesh_space_override_is_the_model_space_slerp() {
        let parents = vec![NO_PARENT, 0, 1, 2, 1, 4];
        let axes = [Vec3::X, Vec3::Y, Vec3::Z, Vec3::new(1.0, 1.0, 0.0), Vec3::new(0.0, -1.0, 1.0), Vec3::ONE];
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
        let mask = [0.0, 0.5, 1.0, 0.25, 0.8, 0.0];
        let mut out = base.clone();
        override_mesh(&parents, &mut out, &layer, 1.0, Some(&mask), &mut MeshSpaceScratch::default());
        let (mut out_model, mut layer_model) = (vec![Quat::IDENTITY; 6], vec![Quat::IDENTITY; 6]);
        for j in 0..parents.len() {
            let (out_parent, layer_parent) = match parents[j] {
                NO_PARENT => (Quat::IDENTITY, Quat::IDENTITY),
                p => (out_model[p as usize], layer_model[p as usize]),
            };
            out_model[j] = out_parent * out[j].rotation;
            layer_model[j] = layer_parent * layer[j].rotation;
            let from = out_parent * base[j].rotation;
            let expected = if mask[j] > 0.0 { from.slerp(layer_model[j], mask[j]).normalize() } else { from };
            let got = if out_model[j].dot(expected) < 0.0 { -out_model[j] } else { out_model[j] };
            let error = (Vec4::from(got) - Vec4::from(expected)).abs();
            assert!(error.cmple(Vec4::splat(2e-6)).all(), "joint {j}: {got} against {expected}");
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
