//! Local-to-model: composes each joint's local transform with its parent's model matrix, in
//! joint order. Mirrored by `shaders/local_to_model.wgsl`; the fused frames compose the same
//! products in `shaders/shared/walks.wgsl` or, parent first a depth at a time,
//! `subgroup.wgsl`, or the same product grouped otherwise (within rounding, not bit for bit) by
//! pointer doubling in `doubling.wgsl` (`gpu::Hierarchy`).

use glam::{Mat4, Vec4, Vec4Swizzles};

use crate::pose::{NO_PARENT, Transform};

/// Writes `model[j] = model[parents[j]] * local[j]` (roots: `local[j]`) for every joint, in
/// joint order (parent first, since every parent index is below its child's). The slices have
/// one entry per joint.
///
/// Four consecutive joints' local matrices are made at a time, one joint per SIMD lane (the
/// quaternion-to-matrix arithmetic of `Transform::to_mat4`), and each joint's product reads its
/// local matrix's entries straight from the lanes, so no local matrix is ever written out. Each
/// product is `model[parent] * local` as glam sums it, less the terms of the local matrix's
/// constant last row (`x · 0` added, `x · 1`); a root's is `IDENTITY * local`. So the matrices
/// equal the joint-order walk of [`crate::pose::local_to_model`] (what rigs and compression
/// use) to the bit, zeros' signs aside.
pub fn local_to_model(parents: &[u16], local: &[Transform], model: &mut [Mat4]) {
    super::with_avx(|| compose(parents, local, model, |_, _| {}));
}

/// [`local_to_model`], calling `then(joint, &model[joint])` as soon as each joint's matrix is
/// made: the fused frame's skinning runs there while the matrix is still in registers.
#[inline(always)]
pub(super) fn compose(parents: &[u16], local: &[Transform], model: &mut [Mat4], mut then: impl FnMut(usize, &Mat4)) {
    debug_assert!(parents.len() == local.len() && local.len() == model.len());
    let joints = local.len();
    // Cut to one length, so that only the parent's index needs a bounds check.
    let (parents, model) = (&parents[..joints], &mut model[..joints]);
    for first in (0..joints).step_by(4) {
        let lanes = LocalLanes::new(&local[first..joints.min(first + 4)]);
        lanes.compose::<0>(parents, local, first, model, &mut then);
        if first + 1 < joints {
            lanes.compose::<1>(parents, local, first + 1, model, &mut then);
        }
        if first + 2 < joints {
            lanes.compose::<2>(parents, local, first + 2, model, &mut then);
        }
        if first + 3 < joints {
            lanes.compose::<3>(parents, local, first + 3, model, &mut then);
        }
    }
}

/// `a * b` for a `b` whose last row is `(0, 0, 0, 1)`, each column summed as glam's
/// `Mat4 * Vec4` sums it less that row's terms, with `b`'s entries given splatted:
/// `b(c)[r]` is entry `r` of column `c` in every lane. The GPU's `affine_mul` takes the same
/// products in the same order.
#[inline(always)]
pub(super) fn mul_affine(a: &Mat4, b: impl Fn(usize) -> [Vec4; 3]) -> Mat4 {
    let column = |c: usize| {
        let [x, y, z] = b(c);
        a.x_axis * x + a.y_axis * y + a.z_axis * z
    };
    Mat4::from_cols(column(0), column(1), column(2), column(3) + a.w_axis)
}

/// Lane `LANE` of `v` in every lane (one shuffle: `LANE` is a constant).
#[inline(always)]
fn splat_lane<const LANE: usize>(v: Vec4) -> Vec4 {
    match LANE {
        0 => v.xxxx(),
        1 => v.yyyy(),
        2 => v.zzzz(),
        _ => v.wwww(),
    }
}

/// Up to four joints' local matrices but for the translation (read from the joint's transform
/// when its product needs it), one joint per lane: `axes[c][r]` holds row `r` of column `c`,
/// the scaled rotation axis `c`, of each joint. Lanes past the joints given repeat the first
/// joint.
struct LocalLanes {
    axes: [[Vec4; 3]; 3],
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
            axes: [
                [(Vec4::ONE - (yy + zz)) * sx, (xy + wz) * sx, (xz - wy) * sx],
                [(xy - wz) * sy, (Vec4::ONE - (xx + zz)) * sy, (yz + wx) * sy],
                [(xz + wy) * sz, (yz - wx) * sz, (Vec4::ONE - (xx + yy)) * sz],
            ],
        }
    }

    /// Joint `joint`, in lane `LANE`: its model matrix, its parent's (done, being below it)
    /// times its local matrix, into `model`, then `then`.
    #[inline(always)]
    fn compose<const LANE: usize>(
        &self,
        parents: &[u16],
        local: &[Transform],
        joint: usize,
        model: &mut [Mat4],
        then: &mut impl FnMut(usize, &Mat4),
    ) {
        let parent = match parents[joint] {
            NO_PARENT => &Mat4::IDENTITY,
            p => &model[usize::from(p)],
        };
        let t = local[joint].translation;
        let m = mul_affine(parent, |c| match self.axes.get(c) {
            Some(&[x, y, z]) => [splat_lane::<LANE>(x), splat_lane::<LANE>(y), splat_lane::<LANE>(z)],
            None => [Vec4::splat(t.x), Vec4::splat(t.y), Vec4::splat(t.z)],
        });
        model[joint] = m;
        then(joint, &m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{EulerRot, Quat, Vec3};

    /// A tree of chains and branches (13 joints, so whole groups of four and a partial one;
    /// joints whose parent is in their own group and in an earlier one; two roots) with
    /// rotations and non-uniform scales: every joint equals the glam walk of
    /// `pose::local_to_model`, to the bit but for zeros' signs (`==`, which NaN fails: a child
    /// composed before its parent would read the NaN the output starts with).
    #[test]
    fn lanes_match_glam() {
        let parents = [NO_PARENT, 0, 1, 2, 1, 4, 5, 0, 7, NO_PARENT, 9, 10, 11];
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
        let mut want = vec![Mat4::IDENTITY; parents.len()];
        crate::pose::local_to_model(&parents, &pose, &mut want);
        let mut got = vec![Mat4::from_cols_array(&[f32::NAN; 16]); parents.len()];
        local_to_model(&parents, &pose, &mut got);
        for (joint, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g.to_cols_array() == w.to_cols_array(), "joint {joint}: {g} against {w}");
        }
    }
}
