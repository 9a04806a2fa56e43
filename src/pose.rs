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

/// Writes `model[j] = model[parent[j]] * local[j]` (roots: `local[j]`), in joint order, which is
/// parent-first because every parent index is below its child's. The three slices have one
/// entry per joint.
///
/// Four joints at a time: their local matrices are built together, one joint per SIMD lane
/// (the quaternion-to-matrix arithmetic has no dependency between joints, so consecutive joints
/// fill every lane), then each joint's product with its parent's model matrix is taken in joint
/// order, one column per SIMD register. Every element is computed with the same operations as
/// `Transform::to_mat4` and glam's `Mat4 * Mat4`, less the products with the local matrix's
/// constant last row (`x · 0` added, `x · 1`), so a model matrix is that product's to the bit,
/// zeros' signs aside.
pub fn local_to_model(parents: &[u16], local: &[Transform], model: &mut [Mat4]) {
    debug_assert!(parents.len() == local.len() && local.len() == model.len());
    for ((parents, local), first) in parents.chunks(4).zip(local.chunks(4)).zip((0..).step_by(4)) {
        let lanes = LocalLanes::new(local);
        for (lane, &parent) in parents.iter().enumerate() {
            model[first + lane] = match parent {
                NO_PARENT => lanes.matrix(lane),
                p => lanes.after(&model[p as usize], lane),
            };
        }
    }
}

/// Up to four joints' local matrices, one joint per lane: `columns[c][r]` holds row `r` of
/// column `c` (columns 0–2 the scaled rotation axes, 3 the translation) for each joint. The
/// last row, `(0, 0, 0, 1)`, is implied. Lanes past the joints given repeat the first joint.
struct LocalLanes {
    columns: [[Vec4; 3]; 4],
}

impl LocalLanes {
    /// `Transform::to_mat4`'s arithmetic (glam's `from_scale_rotation_translation`), lane-wise.
    #[inline(always)]
    fn new(local: &[Transform]) -> Self {
        // Written out rather than with `array::from_fn` or `map`, which the compiler can keep out
        // of line.
        let joint = |lane: usize| local.get(lane).unwrap_or(&local[0]);
        let joints = [joint(0), joint(1), joint(2), joint(3)];
        let lanes = |f: fn(&Transform) -> f32| Vec4::new(f(joints[0]), f(joints[1]), f(joints[2]), f(joints[3]));
        let rotation = |lane: usize| Vec4::from(joints[lane].rotation);
        let quaternions = Mat4::from_cols(rotation(0), rotation(1), rotation(2), rotation(3)).transpose();
        let (x, y, z, w) = (quaternions.x_axis, quaternions.y_axis, quaternions.z_axis, quaternions.w_axis);
        let (x2, y2, z2) = (x + x, y + y, z + z);
        let (xx, xy, xz) = (x * x2, x * y2, x * z2);
        let (yy, yz, zz) = (y * y2, y * z2, z * z2);
        let (wx, wy, wz) = (w * x2, w * y2, w * z2);
        let (sx, sy, sz) = (lanes(|t| t.scale.x), lanes(|t| t.scale.y), lanes(|t| t.scale.z));
        Self {
            columns: [
                [(Vec4::ONE - (yy + zz)) * sx, (xy + wz) * sx, (xz - wy) * sx],
                [(xy - wz) * sy, (Vec4::ONE - (xx + zz)) * sy, (yz + wx) * sy],
                [(xz + wy) * sz, (yz - wx) * sz, (Vec4::ONE - (xx + yy)) * sz],
                [lanes(|t| t.translation.x), lanes(|t| t.translation.y), lanes(|t| t.translation.z)],
            ],
        }
    }

    /// Lane `lane`'s matrix (a root's model matrix).
    #[inline(always)]
    fn matrix(&self, lane: usize) -> Mat4 {
        let column = |c: usize, w: f32| {
            let [x, y, z] = self.columns[c];
            Vec4::new(x[lane], y[lane], z[lane], w)
        };
        Mat4::from_cols(column(0, 0.0), column(1, 0.0), column(2, 0.0), column(3, 1.0))
    }

    /// `parent * ` lane `lane`'s matrix, each column summed as glam's `Mat4 * Vec4` sums it.
    #[inline(always)]
    fn after(&self, parent: &Mat4, lane: usize) -> Mat4 {
        let rotate = |c: usize| {
            let [x, y, z] = self.columns[c];
            parent.x_axis * x[lane] + parent.y_axis * y[lane] + parent.z_axis * z[lane]
        };
        Mat4::from_cols(rotate(0), rotate(1), rotate(2), rotate(3) + parent.w_axis)
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

    /// Every joint count from 1 to 9 (whole groups of four and each remainder), chains and
    /// siblings, several roots, non-uniform scales: each model matrix equals the plain product
    /// `model[parent] * local.to_mat4()` to the bit (`==`, so NaN fails and only zeros' signs
    /// may differ).
    #[test]
    fn lanes_compose_as_the_plain_product() {
        let parents_of_nine = [NO_PARENT, 0, 1, 1, 0, 4, NO_PARENT, 6, 3];
        for num_joints in 1..=parents_of_nine.len() {
            let parents = &parents_of_nine[..num_joints];
            let local: Vec<Transform> = (0..num_joints)
                .map(|j| {
                    let f = j as f32 + 1.0;
                    Transform {
                        translation: Vec3::new(0.1 * f, -0.3 + 0.05 * f, 0.7 / f),
                        rotation: Quat::from_euler(glam::EulerRot::XYZ, 0.3 * f, -0.2 * f, 1.1 / f),
                        scale: Vec3::new(1.0 + 0.1 * f, 0.9, 1.0 / f),
                    }
                })
                .collect();
            let mut expected = vec![Mat4::IDENTITY; num_joints];
            for j in 0..num_joints {
                let m = local[j].to_mat4();
                expected[j] = if parents[j] == NO_PARENT { m } else { expected[parents[j] as usize] * m };
            }
            let mut model = vec![Mat4::from_cols_array(&[f32::NAN; 16]); num_joints];
            local_to_model(parents, &local, &mut model);
            for (j, (got, want)) in model.iter().zip(&expected).enumerate() {
                assert!(got.to_cols_array() == want.to_cols_array(), "{num_joints} joints, joint {j}: {got} != {want}");
            }
        }
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
