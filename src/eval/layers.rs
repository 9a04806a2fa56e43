//! Layers: additive layers onto the base, then masked override layers on top, in local or mesh
//! space. Mirrored by `shaders/layers.wgsl`.
//!
//! | blend | space | per joint `j`, weight `w = layer_weight × mask[j]` |
//! |---|---|---|
//! | additive | local | `out = base * nlerp(identity, delta, w)`, translation `base + w·delta` |
//! | override | local | `out = slerp(base, layer, w)`: the joint keeps the layer's angle to its parent |
//! | override | mesh | the joint's model-space rotation moves towards the layer's by `w`, whatever the joints under it do |

use glam::{Mat4, Quat};

use crate::rig::{Rig, Transform, NO_PARENT};

// Additive deltas are made by clips (`Clip::to_additive`) as well as applied here, so their maths
// lives in `pose`, below both; the layers stage applies them.
pub use crate::pose::{apply_additive, make_additive};

/// Per-joint layer weights in [0, 1], resolved against one rig.
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    weights: Vec<f32>,
}

/// Why a mask could not be resolved against a rig.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// The mask names a joint the rig does not have.
    #[error("mask entry {entry} names joint {joint:?}, which the rig does not have")]
    UnknownJoint {
        /// Index of the entry in the mask definition.
        entry: usize,
        /// The name given.
        joint: String,
    },
    /// A weight is outside [0, 1] or not finite.
    #[error("mask entry {entry} ({joint:?}) has weight {weight}; weights must be in [0, 1]")]
    BadWeight {
        /// Index of the entry.
        entry: usize,
        /// The joint named.
        joint: String,
        /// The weight given.
        weight: f32,
    },
}

/// One entry of a mask definition: a joint by name and its weight, optionally with every
/// joint below it ("this joint and its descendants").
#[derive(Clone, Debug, PartialEq)]
pub struct MaskEntry {
    /// Joint name in the rig.
    pub joint: String,
    /// Weight in [0, 1].
    pub weight: f32,
    /// Whether the weight also applies to every descendant (later entries override).
    pub descendants: bool,
}

impl Mask {
    /// Every joint at full weight.
    #[must_use]
    pub fn full(num_joints: usize) -> Self {
        Self { weights: vec![1.0; num_joints] }
    }

    /// Resolves entries against `rig`, in order: joints not named stay at 0; a later entry
    /// overrides an earlier one, so "upper body at 1, but the left arm at 0.5" is two entries.
    ///
    /// ```
    /// use throng::demo::DemoCharacter;
    /// use throng::eval::layers::{Mask, MaskEntry};
    /// let rig = DemoCharacter::humanoid().rig;
    /// let upper = Mask::from_entries(&rig, &[MaskEntry { joint: "spine_01".into(), weight: 1.0, descendants: true }])?;
    /// assert_eq!(upper.weights()[rig.find_joint("head").unwrap()], 1.0);
    /// assert_eq!(upper.weights()[rig.find_joint("foot_l").unwrap()], 0.0);
    /// # Ok::<(), throng::eval::layers::MaskError>(())
    /// ```
    pub fn from_entries(rig: &Rig, entries: &[MaskEntry]) -> Result<Self, MaskError> {
        let mut weights = vec![0.0; rig.num_joints()];
        for (entry, e) in entries.iter().enumerate() {
            let Some(root) = rig.find_joint(&e.joint) else {
                return Err(MaskError::UnknownJoint { entry, joint: e.joint.clone() });
            };
            if !(0.0..=1.0).contains(&e.weight) {
                return Err(MaskError::BadWeight { entry, joint: e.joint.clone(), weight: e.weight });
            }
            weights[root] = e.weight;
            if e.descendants {
                // Parents precede children, so one forward pass finds every descendant.
                let mut below = vec![false; rig.num_joints()];
                below[root] = true;
                for j in root + 1..rig.num_joints() {
                    if rig.parent(j).is_some_and(|p| below[p]) {
                        below[j] = true;
                        weights[j] = e.weight;
                    }
                }
            }
        }
        Ok(Self { weights })
    }

    /// Weights per joint, in [0, 1].
    #[must_use]
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }
}

/// Overrides `base` with `layer` in local space: `slerp(base, layer, weight × mask)` per joint.
pub fn override_local(base: &mut [Transform], layer: &[Transform], weight: f32, mask: Option<&[f32]>) {
    for (j, (b, l)) in base.iter_mut().zip(layer).enumerate() {
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w <= 0.0 {
            continue;
        }
        b.translation = b.translation.lerp(l.translation, w);
        b.rotation = b.rotation.slerp(l.rotation, w).normalize();
        b.scale = b.scale.lerp(l.scale, w);
    }
}

/// Overrides `base` with `layer` in mesh space: each masked joint's model-space rotation moves
/// towards the layer's model-space rotation by `weight × mask`, then is expressed back in the
/// local space of the (already blended) parent. Translations and scales blend locally.
/// `mask` of `None` is the whole body.
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
        scratch.layer_model[j] = (layer_parent * layer[j].rotation).normalize();
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w > 0.0 {
            let base_model = (out_parent * base[j].rotation).normalize();
            let target = base_model.slerp(scratch.layer_model[j], w);
            base[j].rotation = (out_parent.inverse() * target).normalize();
            base[j].translation = base[j].translation.lerp(layer[j].translation, w);
            base[j].scale = base[j].scale.lerp(layer[j].scale, w);
        }
        scratch.out_model[j] = (out_parent * base[j].rotation).normalize();
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
    use glam::Vec3;

    /// spine (root) → chest → arm.
    fn spine_arm() -> (Vec<u16>, Vec<Transform>) {
        let parents = vec![NO_PARENT, 0, 1];
        let pose = vec![Transform::from_translation(Vec3::Y), Transform::from_translation(Vec3::Y * 0.5), Transform::from_translation(Vec3::X * 0.2)];
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
                assert!(o.rotation.angle_between(l.rotation) < 1e-4 && o.translation.abs_diff_eq(l.translation, 1e-6), "mesh {mesh}");
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

    #[test]
    fn mask_refuses_unknown_joints_and_bad_weights() {
        let rig = Rig::new(vec!["a".into(), "b".into()], vec![None, Some(0)], vec![Transform::IDENTITY; 2], None).unwrap();
        let e = |joint: &str, weight| MaskEntry { joint: joint.into(), weight, descendants: true };
        assert_eq!(Mask::from_entries(&rig, &[e("a", 1.0), e("nope", 1.0)]), Err(MaskError::UnknownJoint { entry: 1, joint: "nope".into() }));
        assert!(matches!(Mask::from_entries(&rig, &[e("a", f32::NAN)]), Err(MaskError::BadWeight { entry: 0, .. })));
        assert_eq!(Mask::from_entries(&rig, &[e("a", 1.0), MaskEntry { descendants: false, ..e("b", 0.25) }]).unwrap().weights(), &[1.0, 0.25]);
    }
}
