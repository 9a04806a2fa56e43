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
    /// Number of ancestors (roots: 0).
    pub depth: u32,
    /// Index in [`GpuRigTables::paths`] of this joint's ancestors, root first, `depth` of them:
    /// a thread composes its joint's model matrix from the root down without waiting for other
    /// joints' (local-to-model and the mesh-space override).
    pub path_start: u32,
    /// Padding to the struct's 16-byte alignment.
    pub pad1: u32,
}

/// A rig as the shaders read it: its joints and every joint's ancestor path.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRigTables {
    /// One entry per joint, in the rig's order.
    pub joints: Vec<GpuRigJoint>,
    /// Each joint's ancestors, root first, at [`GpuRigJoint::path_start`]; one entry, 0, for a
    /// rig of roots only, so that the buffer is never empty.
    pub paths: Vec<u32>,
}

impl GpuRigJoint {
    /// Packs a rig's joints and their ancestor paths.
    #[must_use]
    pub fn from_rig(rig: &crate::Rig) -> GpuRigTables {
        let mut joints: Vec<Self> = Vec::with_capacity(rig.num_joints());
        let mut paths: Vec<u32> = Vec::new();
        for ((&parent, rest), ibm) in rig.parents().iter().zip(rig.rest_pose()).zip(rig.inverse_bind()) {
            // `Rig` guarantees parent < child, so the parent and its path are already packed:
            // this joint's path is the parent's followed by the parent.
            let path_start = paths.len() as u32;
            let (parent, depth) = match joints.get(usize::from(parent)) {
                Some(p) if parent != NO_PARENT => {
                    let (start, depth) = (p.path_start as usize, p.depth as usize);
                    paths.extend_from_within(start..start + depth);
                    paths.push(u32::from(parent));
                    (u32::from(parent), p.depth + 1)
                }
                _ => (GPU_NO_PARENT, 0),
            };
            joints.push(Self {
                inverse_bind: ibm.to_cols_array(),
                rest: GpuTransform::from_transform(rest),
                parent,
                depth,
                path_start,
                pad1: 0,
            });
        }
        if paths.is_empty() {
            paths.push(0);
        }
        GpuRigTables { joints, paths }
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

/// What one dispatch (one chunk of the crowd) needs, 48 bytes.
///
/// Keep in sync with `ChunkParams` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuChunkParams {
    /// Crowd index of the chunk's first character.
    pub first_character: u32,
    /// Characters in the chunk, one workgroup each.
    pub num_characters: u32,
    /// Joints of the rig.
    pub num_joints: u32,
    /// Padding (keeps the later fields' offsets).
    pub pad1: u32,
    /// [`LAYOUT_MAT4`] or [`LAYOUT_AFFINE3X4`].
    pub output_layout: u32,
    /// The chunk's first matrix in the bound output window, in `vec4` units.
    pub output_base: u32,
    /// The chunk's first local pose in the bound `local_poses` window, in `vec4` units.
    pub local_base: u32,
    /// The chunk's first model matrix in the bound `model_poses` window, in `vec4` units.
    pub model_base: u32,
    /// The layered frame: the chunk's first layer block in the bound `layer_memory` window, in
    /// `vec4` units.
    pub state_base: u32,
    /// The layered frame: layers per character.
    pub num_layers: u32,
    /// The layered frame: real seconds since last frame.
    pub dt_s: f32,
    /// Padding to the uniform's 16-byte alignment.
    pub pad0: u32,
}

/// `LayerSetup::blend` of an override layer.
///
/// Keep in sync with `BLEND_OVERRIDE` in `shaders/shared/types.wgsl`.
pub const BLEND_OVERRIDE: u32 = 0;
/// `LayerSetup::blend` of an additive layer.
///
/// Keep in sync with `BLEND_ADDITIVE` in `shaders/shared/types.wgsl`.
pub const BLEND_ADDITIVE: u32 = 1;
/// `LayerSetup::space` of a local-space override.
///
/// Keep in sync with `SPACE_LOCAL` in `shaders/shared/types.wgsl`.
pub const SPACE_LOCAL: u32 = 0;
/// `LayerSetup::space` of a mesh-space override.
///
/// Keep in sync with `SPACE_MESH` in `shaders/shared/types.wgsl`.
pub const SPACE_MESH: u32 = 1;
/// `GpuLayerSetup::mask_start` of a layer without a mask (the whole body).
///
/// Keep in sync with `NO_MASK` in `shaders/shared/types.wgsl`.
pub const NO_MASK: u32 = u32::MAX;

/// One layer of the archetype, in evaluation order, 16 bytes; the start of the layer table.
///
/// Keep in sync with `LayerSetup` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuLayerSetup {
    /// Index of the layer in a character's programs.
    pub layer: u32,
    /// [`BLEND_OVERRIDE`] or [`BLEND_ADDITIVE`].
    pub blend: u32,
    /// [`SPACE_LOCAL`] or [`SPACE_MESH`].
    pub space: u32,
    /// Index in the layer table (in 4-byte words) of the mask's first weight, or [`NO_MASK`].
    pub mask_start: u32,
}

/// Frames shown (0, 1 or 2) in [`GpuLayerState::flags`].
///
/// Keep in sync with `STATE_SHOWN_MASK` in `shaders/shared/types.wgsl`.
pub const STATE_SHOWN_MASK: u32 = 3;
/// Shift of the bit of [`GpuLayerState::flags`] naming the joint slot that holds the displayed
/// pose.
///
/// Keep in sync with `STATE_SLOT_SHIFT` in `shaders/shared/types.wgsl`.
pub const STATE_SLOT_SHIFT: u32 = 2;
/// Shift of the decaying inertialization's mode code in [`GpuLayerState::flags`].
///
/// Keep in sync with `STATE_DECAY_SHIFT` in `shaders/shared/types.wgsl`.
pub const STATE_DECAY_SHIFT: u32 = 4;

/// What one layer of one character remembers between frames, 32 bytes: the start of the
/// layer's block in the characters' memory, followed by a [`GpuJointState`] per joint.
///
/// Keep in sync with `LayerState` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuLayerState {
    /// Frames shown ([`STATE_SHOWN_MASK`]), the displayed slot (bit [`STATE_SLOT_SHIFT`]) and
    /// the decaying inertialization's [`crate::program::SwitchMode`] code (from bit
    /// [`STATE_DECAY_SHIFT`]; 0 for none). All zero is a character that has shown nothing.
    pub flags: u32,
    /// The decay's quintic duration or spring halflife, seconds.
    pub param_s: f32,
    /// Real seconds since the switch.
    pub elapsed_s: f32,
    /// Largest offset component at the switch (metres or radians).
    pub largest_offset: f32,
    /// Largest offset velocity component at the switch.
    pub largest_velocity: f32,
    /// Padding to the block's 16-byte alignment.
    pub pad: [u32; 3],
}

/// What one joint of one layer remembers, 128 bytes: the last two displayed poses in
/// alternating slots, and the frozen snapshot or the inertialization offsets (never both at
/// once: a switch starts one and ends the other).
///
/// Keep in sync with `JointState` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuJointState {
    /// Slot 0's translation, metres.
    pub slot0_translation: [f32; 3],
    /// Slot 0's scale along x.
    pub slot0_scale_x: f32,
    /// Slot 0's rotation.
    pub slot0_rotation: [f32; 4],
    /// Slot 1's translation, metres.
    pub slot1_translation: [f32; 3],
    /// Slot 1's scale along x.
    pub slot1_scale_x: f32,
    /// Slot 1's rotation.
    pub slot1_rotation: [f32; 4],
    /// Slot 0's scale along y and z, then slot 1's.
    pub scales_yz: [f32; 4],
    /// Snapshot translation and scale x, or offset translation and translation velocity x.
    pub memo0: [f32; 4],
    /// Snapshot rotation, or translation velocity y, z and rotation vector x, y.
    pub memo1: [f32; 4],
    /// Snapshot scale y, z, or rotation vector z and rotation velocity.
    pub memo2: [f32; 4],
}

impl GpuJointState {
    /// The pose in `slot` (0 or 1; any other value reads slot 1).
    #[must_use]
    pub fn slot(&self, slot: u32) -> Transform {
        let (translation, scale_x, rotation, scale_yz) = if slot == 0 {
            (self.slot0_translation, self.slot0_scale_x, self.slot0_rotation, [self.scales_yz[0], self.scales_yz[1]])
        } else {
            (self.slot1_translation, self.slot1_scale_x, self.slot1_rotation, [self.scales_yz[2], self.scales_yz[3]])
        };
        Transform {
            translation: translation.into(),
            rotation: glam::Quat::from_array(rotation),
            scale: glam::Vec3::new(scale_x, scale_yz[0], scale_yz[1]),
        }
    }

    /// A joint state whose slot 0 holds `t`.
    #[must_use]
    pub fn with_slot0(t: &Transform) -> Self {
        Self {
            slot0_translation: t.translation.to_array(),
            slot0_scale_x: t.scale.x,
            slot0_rotation: t.rotation.to_array(),
            scales_yz: [t.scale.y, t.scale.z, 0.0, 0.0],
            ..Self::default()
        }
    }
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
        let GpuRigTables { joints, paths } = GpuRigJoint::from_rig(&rig);
        let got: Vec<(u32, u32)> = joints.iter().map(|j| (j.parent, j.depth)).collect();
        assert_eq!(got, [(GPU_NO_PARENT, 0), (0, 1), (1, 2), (0, 1), (GPU_NO_PARENT, 0)]);
        let path = |j: &GpuRigJoint| &paths[j.path_start as usize..(j.path_start + j.depth) as usize];
        let got: Vec<&[u32]> = joints.iter().map(path).collect();
        assert_eq!(got, [&[][..], &[0], &[0, 1], &[0], &[]]);
        assert_eq!(joints[2].inverse_bind(), rig.inverse_bind()[2]);
    }
}
