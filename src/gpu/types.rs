//! Structs shared with WGSL, as the shaders read them. Every struct here has a twin of the same
//! name in `shaders/shared/types.wgsl`; `tests/gpu_eval.rs` compares sizes, field offsets and
//! the constants against the layouts naga computes for that file.

use bytemuck::{Pod, Zeroable};
use glam::Mat4;

use crate::clip::Clip;
use crate::rig::{Transform, NO_PARENT};

pub use crate::program::ClipSample;

/// Threads per workgroup in every entry point; one workgroup evaluates one character.
///
/// Keep in sync with `WORKGROUP_SIZE` in `shaders/shared/types.wgsl`.
pub const WORKGROUP_SIZE: u32 = 64;

/// `ChunkParams::output_layout` for column-major `mat4x4<f32>` output.
///
/// Keep in sync with `LAYOUT_MAT4` in `shaders/shared/types.wgsl`.
pub const LAYOUT_MAT4: u32 = 0;

/// `ChunkParams::output_layout` for affine 3×4 output.
///
/// Keep in sync with `LAYOUT_AFFINE3X4` in `shaders/shared/types.wgsl`.
pub const LAYOUT_AFFINE3X4: u32 = 1;

/// Marks a root in [`GpuRigJoint::parent`].
///
/// Keep in sync with `NO_PARENT` in `shaders/shared/types.wgsl`.
pub const GPU_NO_PARENT: u32 = u32::MAX;

/// A joint's local transform, 48 bytes.
///
/// Keep in sync with `Transform` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuTransform {
    /// Translation, metres.
    pub translation: [f32; 3],
    /// Padding to the WGSL `vec3` alignment.
    pub pad0: f32,
    /// Unit quaternion `(x, y, z, w)`.
    pub rotation: [f32; 4],
    /// Scale along the joint's axes.
    pub scale: [f32; 3],
    /// Padding to the struct's 16-byte alignment.
    pub pad1: f32,
}

impl GpuTransform {
    /// Packs a [`Transform`].
    #[must_use]
    pub fn from_transform(t: &Transform) -> Self {
        Self {
            translation: t.translation.to_array(),
            pad0: 0.0,
            rotation: t.rotation.to_array(),
            scale: t.scale.to_array(),
            pad1: 0.0,
        }
    }

    /// Unpacks into a [`Transform`].
    #[must_use]
    pub fn to_transform(&self) -> Transform {
        Transform {
            translation: self.translation.into(),
            rotation: glam::Quat::from_array(self.rotation),
            scale: self.scale.into(),
        }
    }
}

/// One joint of an archetype's rig, 128 bytes.
///
/// Keep in sync with `RigJoint` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuRigJoint {
    /// Inverse bind matrix, column-major.
    pub inverse_bind: [f32; 16],
    /// Rest pose, shown when a character's weights sum to zero.
    pub rest: GpuTransform,
    /// Parent joint, or [`GPU_NO_PARENT`].
    pub parent: u32,
    /// Number of ancestors (roots: 0); joints of one depth are composed in parallel.
    pub depth: u32,
    /// Padding to the struct's 16-byte alignment.
    pub pad0: u32,
    /// Padding to the struct's 16-byte alignment.
    pub pad1: u32,
}

impl GpuRigJoint {
    /// Packs a rig's joints; also returns the deepest joint's depth.
    #[must_use]
    pub fn from_rig(rig: &crate::Rig) -> (Vec<Self>, u32) {
        let mut joints: Vec<Self> = Vec::with_capacity(rig.num_joints());
        let mut max_depth = 0;
        for ((&parent, rest), ibm) in rig.parents().iter().zip(rig.rest_pose()).zip(rig.inverse_bind()) {
            // `Rig` guarantees parent < child, so the parent is already packed.
            let (parent, depth) = match parent {
                NO_PARENT => (GPU_NO_PARENT, 0),
                p => (u32::from(p), joints.get(usize::from(p)).map_or(0, |j| j.depth + 1)),
            };
            max_depth = max_depth.max(depth);
            joints.push(Self {
                inverse_bind: ibm.to_cols_array(),
                rest: GpuTransform::from_transform(rest),
                parent,
                depth,
                pad0: 0,
                pad1: 0,
            });
        }
        (joints, max_depth)
    }

    /// The inverse bind matrix.
    #[must_use]
    pub fn inverse_bind(&self) -> Mat4 {
        Mat4::from_cols_array(&self.inverse_bind)
    }
}

/// Where one clip's frames lie in the archetype's frame buffer, 16 bytes.
///
/// Keep in sync with `ClipHeader` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuClipHeader {
    /// Index of the clip's first transform (frame 0, joint 0) in the frame buffer.
    pub first_transform: u32,
    /// Frames stored, both ends included; at least 1.
    pub num_frames: u32,
    /// Length in seconds; 0 for a static pose.
    pub duration_s: f32,
    /// 1 if sampling past the end wraps, 0 if it holds the last frame.
    pub looping: u32,
}

impl GpuClipHeader {
    /// The header of `clip` whose frames start at `first_transform`.
    #[must_use]
    pub fn new(clip: &Clip, first_transform: u32) -> Self {
        Self {
            first_transform,
            // `Clip` caps frames at `MAX_FRAMES`, well inside u32.
            num_frames: clip.num_frames() as u32,
            duration_s: clip.duration_s(),
            looping: u32::from(clip.is_looping()),
        }
    }
}

/// A character's samples, `samples[start..start + count]`, 8 bytes.
///
/// Keep in sync with `SampleRange` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuSampleRange {
    /// First sample.
    pub start: u32,
    /// Number of samples.
    pub count: u32,
}

/// What one dispatch (one chunk of the crowd) needs, 32 bytes.
///
/// Keep in sync with `ChunkParams` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuChunkParams {
    /// Crowd index of the chunk's first character.
    pub first_character: u32,
    /// Characters in the chunk, one workgroup each.
    pub num_characters: u32,
    /// Joints of the rig.
    pub num_joints: u32,
    /// Deepest joint's depth.
    pub max_depth: u32,
    /// [`LAYOUT_MAT4`] or [`LAYOUT_AFFINE3X4`].
    pub output_layout: u32,
    /// The chunk's first matrix in the bound output window, in `vec4` units.
    pub output_base: u32,
    /// The chunk's first local pose in the bound `local_poses` window, in `vec4` units.
    pub local_base: u32,
    /// The chunk's first model matrix in the bound `model_poses` window, in `vec4` units.
    pub model_base: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rig;
    use glam::Vec3;

    #[test]
    fn rig_joints_carry_parents_and_depths() {
        // hips ─ spine ─ head, hips ─ leg, and a second root (a prop).
        let rest = vec![Transform::from_translation(Vec3::Y); 5];
        let rig = Rig::new(
            ["hips", "spine", "head", "leg", "prop"].map(String::from).to_vec(),
            vec![None, Some(0), Some(1), Some(0), None],
            rest,
            None,
        )
        .unwrap();
        let (joints, max_depth) = GpuRigJoint::from_rig(&rig);
        let got: Vec<(u32, u32)> = joints.iter().map(|j| (j.parent, j.depth)).collect();
        assert_eq!(got, [(GPU_NO_PARENT, 0), (0, 1), (1, 2), (0, 1), (GPU_NO_PARENT, 0)]);
        assert_eq!(max_depth, 2);
        assert_eq!(joints[2].inverse_bind(), rig.inverse_bind()[2]);
    }
}
