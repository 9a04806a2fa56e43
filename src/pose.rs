//! Pose maths below every stage: a joint's [`Transform`], local-to-model composition and
//! additive deltas. Rigs (the rest pose's model matrices), clips (additive clips, compression's
//! model-space error) and both evaluators use these, so they sit under all of them and import
//! nothing from the crate. `eval::local_to_model` and `eval::layers` are the CPU stages that
//! run them (mirrored by `shaders/local_to_model.wgsl` and `shaders/layers.wgsl`).

use glam::{Mat4, Quat, Vec3, Vec4};

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

/// Four joints' transforms component by component, one joint per SIMD lane: how clip
/// sampling interpolates and the blend accumulates four joints at a time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TransformLanes {
    /// Translation x, y, z.
    pub translation: [Vec4; 3],
    /// Quaternion x, y, z, w.
    pub rotation: [Vec4; 4],
    /// Scale x, y, z.
    pub scale: [Vec4; 3],
}

impl TransformLanes {
    /// Four transforms, one to a lane.
    #[inline(always)]
    pub fn from_transforms(t: [&Transform; 4]) -> Self {
        let cols = |f: &dyn Fn(&Transform) -> Vec4| Mat4::from_cols(f(t[0]), f(t[1]), f(t[2]), f(t[3])).transpose();
        let translation = cols(&|t| t.translation.extend(0.0));
        let rotation = cols(&|t| Vec4::from(t.rotation));
        let scale = cols(&|t| t.scale.extend(0.0));
        Self {
            translation: [translation.x_axis, translation.y_axis, translation.z_axis],
            rotation: [rotation.x_axis, rotation.y_axis, rotation.z_axis, rotation.w_axis],
            scale: [scale.x_axis, scale.y_axis, scale.z_axis],
        }
    }

    /// The four lanes as transforms.
    #[inline(always)]
    pub fn to_transforms(self) -> [Transform; 4] {
        let [tx, ty, tz] = self.translation;
        let [sx, sy, sz] = self.scale;
        let translation = Mat4::from_cols(tx, ty, tz, Vec4::ZERO).transpose();
        let rotation =
            Mat4::from_cols(self.rotation[0], self.rotation[1], self.rotation[2], self.rotation[3]).transpose();
        let scale = Mat4::from_cols(sx, sy, sz, Vec4::ZERO).transpose();
        let lane = |t: Vec4, r: Vec4, s: Vec4| Transform {
            translation: t.truncate(),
            rotation: Quat::from_vec4(r),
            scale: s.truncate(),
        };
        [
            lane(translation.x_axis, rotation.x_axis, scale.x_axis),
            lane(translation.y_axis, rotation.y_axis, scale.y_axis),
            lane(translation.z_axis, rotation.z_axis, scale.z_axis),
            lane(translation.w_axis, rotation.w_axis, scale.w_axis),
        ]
    }
}

/// glam's four-component dot product (`Quat::dot`, `Vec4::dot`) of four quaternions at once,
/// one per lane, with its order of sums: `(x + z) + (y + w)`.
#[inline(always)]
pub(crate) fn quat_dot_lanes(a: &[Vec4; 4], b: &[Vec4; 4]) -> Vec4 {
    (a[0] * b[0] + a[2] * b[2]) + (a[1] * b[1] + a[3] * b[3])
}

/// glam's `acos_approx` (DirectXMath's 7-degree minimax, its coefficients to the last digit)
/// for `x` in [0, 1], as `slerp_normalized` takes it: the shaders' `acos_approx_positive`.
#[inline]
#[allow(clippy::approx_constant)]
fn acos_approx_positive(x: f32) -> f32 {
    let root = (1.0 - x).max(0.0).sqrt();
    let p = ((((((-0.001_262_491_1 * x + 0.006_670_09) * x - 0.017_088_126) * x + 0.030_891_88) * x - 0.050_174_303)
        * x
        + 0.088_978_99)
        * x
        - 0.214_598_8)
        * x
        + 1.570_796_3;
    p * root
}

/// Whether `q` normalises to a rotation: its squared length is a normal float (not NaN or
/// infinite, not zero or subnormal), so that `normalize` neither divides by nothing nor scales
/// by a length that overflowed to zero. A clip refuses a frame rotation that does not, and
/// `program::validate_clips` an additive delta that does not (`Clip::to_additive` against such a
/// reference rotation).
#[inline]
pub(crate) fn normalises_to_rotation(q: Quat) -> bool {
    q.length_squared().is_normal()
}

/// The shortest-path slerp of two unit quaternions, normalised: glam's
/// `a.slerp(b, s).normalize()` with the weights `sin(θ(1 − s))` and `sin(θs)` not divided by
/// `sin θ`, which the normalisation makes moot (one sine and a division fewer); nearly equal
/// rotations take nlerp's weights `1 − s` and `s`, as glam's do. Mirrored by the shaders'
/// `quat_slerp_normalized`.
#[inline]
pub(crate) fn slerp_normalized(a: Quat, b: Quat, s: f32) -> Quat {
    let d = a.dot(b);
    let cos_theta = d.abs();
    let (mut wa, mut wb) = (1.0 - s, s);
    if cos_theta <= 1.0 - f32::EPSILON {
        let theta = acos_approx_positive(cos_theta);
        (wa, wb) = ((theta * wa).sin(), (theta * wb).sin());
    }
    (a * wa + b * if d < 0.0 { -wb } else { wb }).normalize()
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
        b.rotation = (b.rotation * Quat::IDENTITY.lerp(dq, w)).normalize();
        b.scale *= Vec3::ONE.lerp(d.scale, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The normalised slerp is glam's slerp then `normalize`, to rounding, at angles from nearly
    /// nothing to a half turn, on both hemispheres, at weights across [0, 1].
    #[test]
    fn slerp_normalized_is_glams_slerp_normalised() {
        let axis = Vec3::new(0.3, -0.8, 0.52).normalize();
        let from = Quat::from_axis_angle(Vec3::new(-0.6, 0.1, 0.79).normalize(), 1.1);
        let mut checked = 0;
        for angle in [1e-5_f32, 1e-3, 0.01, 0.2, 1.0, 2.0, 3.0, 3.1, 3.13, std::f32::consts::PI] {
            for flip in [false, true] {
                let mut to = from * Quat::from_axis_angle(axis, angle);
                if flip {
                    to = -to;
                }
                for s in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
                    let ours = slerp_normalized(from, to, s);
                    let glams = from.slerp(to, s).normalize();
                    let error = (Vec4::from(ours) - Vec4::from(glams)).abs();
                    assert!(
                        error.cmple(Vec4::splat(1e-6)).all(),
                        "angle {angle} flipped {flip} at {s}: {ours} against {glams}"
                    );
                    assert!((ours.length() - 1.0).abs() <= 1e-6);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 120);
    }

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
