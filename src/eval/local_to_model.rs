//! Local-to-model: composes each joint's local transform with its parent's model matrix.
//! Mirrored by `shaders/local_to_model.wgsl`.

use glam::Mat4;

use crate::rig::{Transform, NO_PARENT};

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
