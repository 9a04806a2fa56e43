//! Pose maths below every stage: a joint's [`Transform`], local-to-model composition and
//! additive deltas. Rigs (the rest pose's model matrices), clips (additive clips, compression's
//! model-space error) and both evaluators use these, so they sit under all of them and import
//! nothing from the crate. `eval::local_to_model` and `eval::layers` are the CPU stages that
//! run them (mirrored by `shaders/local_to_model.wgsl` and `shaders/layers.wgsl`).

use glam::{Mat4, Quat, Vec3};

/// Marks a root joint in a parent table ([`crate::rig::Rig::parents`]).
pub const NO_PARENT: u16 = u16::MAX;

/// A joint's local transform, composed as `translation * rotation * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Translation relative to the parent joint, metres.
    pub translation: Vec3,
    /// Rotation relative to the parent joint, unit quaternion.
    pub rotation: Quat,
    /// Scale along the joint's own axes.
    pub scale: Vec3,
}

impl Transform {
    /// No translation, no rotation, unit scale.
    pub const IDENTITY: Self = Self { translation: Vec3::ZERO, rotation: Quat::IDENTITY, scale: Vec3::ONE };

    /// A transform with only a translation.
    #[must_use]
    pub fn from_translation(translation: Vec3) -> Self {
        Self { translation, ..Self::IDENTITY }
    }

    /// A transform with a translation and a rotation and unit scale.
    #[must_use]
    pub fn from_translation_rotation(translation: Vec3, rotation: Quat) -> Self {
        Self { translation, rotation, scale: Vec3::ONE }
    }

    /// The transform as a column-major matrix.
    #[must_use]
    pub fn to_mat4(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }

    /// True when every component is finite.
    #[must_use]
    pub fn is_finite(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && self.scale.is_finite()
    }
}

impl Default for Transform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// Writes `model[j] = model[parent[j]] * local[j]` (roots: `local[j]`), in joint order, which is
/// parent-first because every parent index is below its child's. The three slices have one
/// entry per joint.
pub fn local_to_model(parents: &[u16], local: &[Transform], model: &mut [Mat4]) {
    debug_assert!(parents.len() == local.len() && local.len() == model.len());
    for joint in 0..model.len() {
        let m = local[joint].to_mat4();
        model[joint] = match parents[joint] {
            NO_PARENT => m,
            p => model[p as usize] * m,
        };
    }
}

/// Turns a pose into an additive delta against `reference`: `inverse(reference) * pose` for
/// rotations, `pose − reference` for translations, `pose / reference` for scales.
pub fn make_additive(reference: &[Transform], pose: &[Transform], delta: &mut [Transform]) {
    for ((d, r), p) in delta.iter_mut().zip(reference).zip(pose) {
        *d = Transform {
            translation: p.translation - r.translation,
            rotation: (r.rotation.inverse() * p.rotation).normalize(),
            scale: p.scale / r.scale,
        };
    }
}

/// Applies an additive delta onto `base` at `weight`, scaled per joint by `mask` if given.
pub fn apply_additive(base: &mut [Transform], delta: &[Transform], weight: f32, mask: Option<&[f32]>) {
    for (j, (b, d)) in base.iter_mut().zip(delta).enumerate() {
        let w = weight * mask.map_or(1.0, |m| m[j]);
        if w <= 0.0 {
            continue;
        }
        let dq = if d.rotation.w < 0.0 { -d.rotation } else { d.rotation };
        b.translation += d.translation * w;
        b.rotation = (b.rotation * Quat::IDENTITY.lerp(dq, w).normalize()).normalize();
        b.scale *= Vec3::ONE.lerp(d.scale, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additive_of_the_reference_is_identity() {
        let reference = vec![
            Transform::from_translation(Vec3::Y),
            Transform::from_translation(Vec3::Y * 0.5),
            Transform::from_translation(Vec3::X * 0.2),
        ];
        let mut delta = reference.clone();
        make_additive(&reference, &reference, &mut delta);
        let mut base = reference.clone();
        base[1].rotation = Quat::from_rotation_y(0.7);
        let before = base.clone();
        apply_additive(&mut base, &delta, 1.0, None);
        for (a, b) in base.iter().zip(&before) {
            assert!(a.rotation.angle_between(b.rotation) < 1e-6 && a.translation.abs_diff_eq(b.translation, 1e-6));
        }
        // And a real delta at full weight reproduces the pose it was made from over the reference.
        let mut lean = reference.clone();
        lean[1].rotation = Quat::from_rotation_z(0.4);
        make_additive(&reference, &lean, &mut delta);
        let mut out = reference.clone();
        apply_additive(&mut out, &delta, 1.0, None);
        assert!(out[1].rotation.angle_between(lean[1].rotation) < 1e-5);
    }
}
