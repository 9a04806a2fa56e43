//! Skinning matrices: `model × inverse_bind`, written in the output layout.
//! Mirrored by `shaders/skinning.wgsl`.

use glam::Mat4;

use crate::program::OutputLayout;

/// Writes `model[j] * inverse_bind[j]` for each joint into `out` in `layout`.
/// `out` holds `model.len() * layout.floats_per_joint()` floats.
pub fn skinning(model: &[Mat4], inverse_bind: &[Mat4], layout: OutputLayout, out: &mut [f32]) {
    let stride = layout.floats_per_joint();
    debug_assert_eq!(out.len(), model.len() * stride);
    for ((m, ibm), out) in model.iter().zip(inverse_bind).zip(out.chunks_exact_mut(stride)) {
        write_matrix(&(*m * *ibm), layout, out);
    }
}

/// Writes one matrix in `layout`.
#[inline]
pub fn write_matrix(m: &Mat4, layout: OutputLayout, out: &mut [f32]) {
    match layout {
        OutputLayout::Mat4 => out.copy_from_slice(&m.to_cols_array()),
        OutputLayout::Affine3x4 => {
            let t = m.transpose();
            out[0..4].copy_from_slice(&t.x_axis.to_array());
            out[4..8].copy_from_slice(&t.y_axis.to_array());
            out[8..12].copy_from_slice(&t.z_axis.to_array());
        }
    }
}

/// Reads back one matrix written by [`write_matrix`] (the affine layout's last row is
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
