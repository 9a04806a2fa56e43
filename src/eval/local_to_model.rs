//! Local-to-model: composes each joint's local transform with its parent's model matrix, level
//! by level. Mirrored by `shaders/local_to_model.wgsl`.

use glam::{Mat4, Vec4};

use crate::pose::{NO_PARENT, Transform};
#[cfg(doc)]
use crate::rig::Rig;

/// Writes `model[j] = model[parents[j]] * local[j]` (roots: `local[j]`) for every joint, in two
/// phases:
///
/// 1. every joint's local matrix, four joints at a time, one per SIMD lane (the
///    quaternion-to-matrix arithmetic of `Transform::to_mat4`, which has no dependency between
///    joints, so consecutive joints fill the lanes), written into `model`;
/// 2. each joint's product with its parent's model matrix, walking `by_depth`
///    ([`Rig::joints_by_depth`]) level by level: consecutive products do not wait on each other
///    and the CPU overlaps them, where joint order would chain each limb's products back to
///    back. The GPU's level-by-level walk takes the same levels.
///
/// Each product is `model[parent] * local` as glam sums it, less the terms of the local
/// matrix's constant last row (`x · 0` added, `x · 1`), so the matrices equal the joint-order
/// walk of [`crate::pose::local_to_model`] (what rigs and compression use) to the bit, zeros'
/// signs aside. The slices have one entry per joint.
pub fn local_to_model(parents: &[u16], by_depth: &[u16], local: &[Transform], model: &mut [Mat4]) {
    debug_assert!(parents.len() == local.len() && local.len() == model.len() && by_depth.len() == model.len());
    for (local, model) in local.chunks(4).zip(model.chunks_mut(4)) {
        LocalLanes::new(local).write(model);
    }
    for &joint in by_depth {
        let joint = joint as usize;
        let parent = parents[joint];
        if parent != NO_PARENT {
            model[joint] = after(&model[parent as usize], &model[joint]);
        }
    }
}

/// `parent * local` for a `local` whose last row is `(0, 0, 0, 1)`, each column summed as glam's
/// `Mat4 * Vec4` sums it.
#[inline(always)]
fn after(parent: &Mat4, local: &Mat4) -> Mat4 {
    let rotate = |c: Vec4| parent.x_axis * c.x + parent.y_axis * c.y + parent.z_axis * c.z;
    Mat4::from_cols(
        rotate(local.x_axis),
        rotate(local.y_axis),
        rotate(local.z_axis),
        rotate(local.w_axis) + parent.w_axis,
    )
}

/// Up to four joints' local matrices, one joint per lane: `columns[c][r]` holds row `r` of
/// column `c` (columns 0–2 the scaled rotation axes, 3 the translation) of each joint. The last
/// row, `(0, 0, 0, 1)`, is implied. Lanes past the joints given repeat the first joint.
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

    /// Each lane's matrix into `model`'s entry for it (up to four).
    #[inline(always)]
    fn write(&self, model: &mut [Mat4]) {
        // Column `c` of the four joints, one joint per vector, the last row's entry included.
        let column = |c: usize, last: f32| {
            let [x, y, z] = self.columns[c];
            Mat4::from_cols(x, y, z, Vec4::splat(last)).transpose()
        };
        let columns = [column(0, 0.0), column(1, 0.0), column(2, 0.0), column(3, 1.0)];
        let joint = |lane: usize| {
            Mat4::from_cols(columns[0].col(lane), columns[1].col(lane), columns[2].col(lane), columns[3].col(lane))
        };
        if let [m0, m1, m2, m3] = model {
            (*m0, *m1, *m2, *m3) = (joint(0), joint(1), joint(2), joint(3));
        } else {
            for (lane, m) in model.iter_mut().enumerate() {
                *m = joint(lane);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::Rig;
    use glam::{EulerRot, Quat, Vec3};

    /// A tree of chains and branches (depth order differs from joint order; 13 joints, so whole
    /// groups of four and a partial one) with rotations and non-uniform scales: every
    /// joint equals the joint-order walk, to the bit but for zeros' signs (`==`, which NaN
    /// fails: a child walked before its parent would read the NaN the output starts with).
    #[test]
    fn levels_match_joint_order() {
        let parents = [
            None,
            Some(0),
            Some(1),
            Some(2),
            Some(1),
            Some(4),
            Some(5),
            Some(0),
            Some(7),
            Some(8),
            Some(2),
            Some(10),
            Some(11),
        ];
        let pose: Vec<Transform> = (0..parents.len())
            .map(|j| {
                let f = j as f32 + 1.0;
                Transform {
                    translation: Vec3::new(0.1 * f, 0.2, -0.05 * f),
                    rotation: Quat::from_euler(EulerRot::XYZ, 0.3 * f, -0.2 * f, 1.1 / f),
                    scale: Vec3::new(1.0 + 0.01 * f, 1.0, 0.98),
                }
            })
            .collect();
        let names = (0..parents.len()).map(|j| format!("j{j}")).collect();
        let rig = Rig::new(names, parents.to_vec(), pose.clone(), None).expect("a valid rig");
        assert_ne!(rig.joints_by_depth(), (0..parents.len() as u16).collect::<Vec<_>>());
        let mut want = vec![Mat4::IDENTITY; rig.num_joints()];
        crate::pose::local_to_model(rig.parents(), &pose, &mut want);
        let mut got = vec![Mat4::from_cols_array(&[f32::NAN; 16]); rig.num_joints()];
        local_to_model(rig.parents(), rig.joints_by_depth(), &pose, &mut got);
        for (joint, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g.to_cols_array() == w.to_cols_array(), "joint {joint}: {g} against {w}");
        }
    }
}
