//! Skinning matrices: `model × inverse_bind`, written in the output layout.
//! Mirrored by `shaders/skinning.wgsl`; [`local_to_model_skinning`], the two stages in one walk,
//! by the fused frames' per-joint loop (`shaders/frame.wgsl`).

use glam::{Mat4, Vec4Swizzles};

use super::local_to_model::{compose, mul_affine};
use crate::pose::Transform;
use crate::program::OutputLayout;
#[cfg(doc)]
use crate::rig::Rig;

/// Writes `model[j] * inverse_bind[j]` for each joint into `out` in `layout`.
/// `out` holds `model.len() * layout.floats_per_joint()` floats. The inverse bind matrices are
/// affine (last row `(0, 0, 0, 1)`, as [`Rig::inverse_bind`]'s are), so each product is
/// glam's less that row's terms (`x · 0` added, `x · 1`): the same matrix to the bit, zeros'
/// signs aside.
pub fn skinning(model: &[Mat4], inverse_bind: &[Mat4], layout: OutputLayout, out: &mut [f32]) {
    debug_assert!(model.len() == inverse_bind.len() && out.len() == model.len() * layout.floats_per_joint());
    #[inline(always)]
    fn each(model: &[Mat4], inverse_bind: &[Mat4], rows: &mut [impl JointRow]) {
        for ((m, ibm), row) in model.iter().zip(inverse_bind).zip(rows) {
            row.set(&skin(m, ibm));
        }
    }
    super::with_avx(|| match layout {
        OutputLayout::Mat4 => each(model, inverse_bind, out.as_chunks_mut::<16>().0),
        OutputLayout::Affine3x4 => each(model, inverse_bind, out.as_chunks_mut::<12>().0),
    });
}

/// [`super::local_to_model::local_to_model`] then [`skinning`], in one walk: each joint's
/// skinning matrix is made and written as soon as its model matrix is, as the fused frames
/// do per joint. The same matrices as the two stages one after the other, to the bit.
/// `model` is working space with one entry per joint (it ends holding the model matrices);
/// `out` is as for [`skinning`].
pub fn local_to_model_skinning(
    parents: &[u16],
    local: &[Transform],
    inverse_bind: &[Mat4],
    layout: OutputLayout,
    model: &mut [Mat4],
    out: &mut [f32],
) {
    debug_assert!(inverse_bind.len() == local.len() && out.len() == local.len() * layout.floats_per_joint());
    super::with_avx(|| match layout {
        OutputLayout::Mat4 => fused(parents, local, inverse_bind, model, out.as_chunks_mut::<16>().0),
        OutputLayout::Affine3x4 => fused(parents, local, inverse_bind, model, out.as_chunks_mut::<12>().0),
    });
}

/// [`local_to_model_skinning`] into one layout's rows, compiled for the caller's target
/// features.
#[inline(always)]
fn fused(parents: &[u16], local: &[Transform], inverse_bind: &[Mat4], model: &mut [Mat4], rows: &mut [impl JointRow]) {
    // Cut to the joint count, so that the joint index needs no bounds check.
    let (inverse_bind, rows) = (&inverse_bind[..local.len()], &mut rows[..local.len()]);
    compose(parents, local, model, |joint, m| rows[joint].set(&skin(m, &inverse_bind[joint])));
}

/// `model * inverse_bind` for an affine `inverse_bind`.
#[inline(always)]
fn skin(model: &Mat4, inverse_bind: &Mat4) -> Mat4 {
    mul_affine(model, |c| {
        let column = inverse_bind.col(c);
        [column.xxxx(), column.yyyy(), column.zzzz()]
    })
}

/// One joint's floats in an output layout: the layout chosen once per character rather than
/// per joint.
trait JointRow {
    /// Writes the matrix.
    fn set(&mut self, m: &Mat4);
}

/// [`OutputLayout::Mat4`]: the four columns.
impl JointRow for [f32; 16] {
    #[inline(always)]
    fn set(&mut self, m: &Mat4) {
        *self = m.to_cols_array();
    }
}

/// [`OutputLayout::Affine3x4`]: the top three rows.
impl JointRow for [f32; 12] {
    #[inline(always)]
    fn set(&mut self, m: &Mat4) {
        let t = m.transpose();
        *self = bytemuck::cast([t.x_axis, t.y_axis, t.z_axis]);
    }
}

/// Reads back one skinning matrix written in `layout` (the affine layout's last row is
/// `(0, 0, 0, 1)`).
#[must_use]
pub fn read_matrix(layout: OutputLayout, data: &[f32]) -> Mat4 {
    match layout {
        OutputLayout::Mat4 => Mat4::from_cols_slice(&data[..16]),
        OutputLayout::Affine3x4 => {
            let mut rows = [0.0; 16];
            rows[..12].copy_from_slice(&data[..12]);
            rows[15] = 1.0;
            Mat4::from_cols_slice(&rows).transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pose::NO_PARENT;
    use glam::{EulerRot, Quat, Vec3, Vec4};

    /// 13 joints (whole groups of four and a partial one), two roots, rotations and
    /// non-uniform scales; inverse binds with shear and translation, last row `(0, 0, 0, 1)`.
    fn setup() -> ([u16; 13], Vec<Transform>, Vec<Mat4>) {
        let parents = [NO_PARENT, 0, 1, 2, 1, 4, 5, 0, 7, NO_PARENT, 9, 10, 11];
        let pose = (0..parents.len())
            .map(|j| {
                let f = j as f32 + 1.0;
                Transform {
                    translation: Vec3::new(0.1 * f, -0.2, 0.05 * f),
                    rotation: Quat::from_euler(EulerRot::YXZ, -0.4 * f, 0.25 * f, 0.9 / f),
                    scale: Vec3::new(0.97, 1.0 + 0.02 * f, 1.01),
                }
            })
            .collect();
        let inverse_bind = (0..parents.len())
            .map(|j| {
                let f = j as f32 + 1.0;
                let shear = Mat4::from_cols(Vec4::X, Vec4::new(0.1 * f, 1.0, 0.0, 0.0), Vec4::Z, Vec4::W);
                Mat4::from_scale_rotation_translation(
                    Vec3::new(1.0, 0.9, 1.1),
                    Quat::from_rotation_x(0.2 * f),
                    Vec3::new(-0.3, 0.01 * f, 0.7),
                ) * shear
            })
            .collect();
        (parents, pose, inverse_bind)
    }

    /// `skinning` equals glam's full `model * inverse_bind`, entry for entry (`==`: zeros' signs
    /// aside, and NaN fails), in both layouts.
    #[test]
    fn skinning_matches_glam() {
        let (parents, pose, inverse_bind) = setup();
        let mut model = vec![Mat4::IDENTITY; parents.len()];
        crate::pose::local_to_model(&parents, &pose, &mut model);
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let stride = layout.floats_per_joint();
            let mut out = vec![f32::NAN; parents.len() * stride];
            skinning(&model, &inverse_bind, layout, &mut out);
            for (joint, ((m, ibm), got)) in model.iter().zip(&inverse_bind).zip(out.chunks_exact(stride)).enumerate() {
                let want = *m * *ibm;
                let got = read_matrix(layout, got);
                assert!(got.to_cols_array() == want.to_cols_array(), "{layout:?} joint {joint}: {got} against {want}");
            }
        }
    }

    /// The fused walk gives the two stages' model and skinning matrices to the bit, in both
    /// layouts, whether compiled for AVX or not.
    #[test]
    fn fused_matches_the_two_stages() {
        let (parents, pose, inverse_bind) = setup();
        let joints = parents.len();
        let mut want_model = vec![Mat4::IDENTITY; joints];
        super::super::local_to_model::local_to_model(&parents, &pose, &mut want_model);
        let bits = |floats: &[f32]| floats.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let mut want = vec![f32::NAN; joints * layout.floats_per_joint()];
            skinning(&want_model, &inverse_bind, layout, &mut want);
            let mut model = vec![Mat4::from_cols_array(&[f32::NAN; 16]); joints];
            let mut got = vec![f32::NAN; want.len()];
            local_to_model_skinning(&parents, &pose, &inverse_bind, layout, &mut model, &mut got);
            assert_eq!(bits(&got), bits(&want), "{layout:?}");
            let flat = |m: &[Mat4]| m.iter().flat_map(Mat4::to_cols_array).collect::<Vec<_>>();
            assert_eq!(bits(&flat(&model)), bits(&flat(&want_model)), "{layout:?}");
            // The same, compiled for the baseline target, without `with_avx`: the bits do not
            // depend on the CPU.
            let mut baseline = vec![f32::NAN; want.len()];
            match layout {
                OutputLayout::Mat4 => {
                    fused(&parents, &pose, &inverse_bind, &mut model, baseline.as_chunks_mut::<16>().0)
                }
                OutputLayout::Affine3x4 => {
                    fused(&parents, &pose, &inverse_bind, &mut model, baseline.as_chunks_mut::<12>().0);
                }
            }
            assert_eq!(bits(&baseline), bits(&want), "{layout:?}, baseline target");
        }
    }
}
