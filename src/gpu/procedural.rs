//! The procedural stage on the GPU (`shaders/procedural.wgsl`, mirrored by
//! [`crate::eval::procedural`]): an archetype's parents and [`ProceduralRig`] uploaded once as
//! words ([`procedural_words`]), then per frame the characters' targets
//! ([`pack_targets`]) in and their local poses changed in place, one thread a character.
//!
//! The stage binds a group of its own: the uniform ([`ProceduralParams`]), the words, the
//! targets and the poses (three vec4 a joint, as the stage path's local poses), so that
//! [`GpuProcedural::run_blocking`] runs it alone and [`crate::gpu::GpuCrowd`] runs it on its
//! local-pose buffer between layers and skinning.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use wgpu::util::DeviceExt;

use super::GpuError;
use super::pipelines::ProceduralPipeline;
use crate::pose::NO_PARENT;
use crate::program::{EndRotation, ProceduralRig, ProceduralTargets};
use crate::rig::{Rig, Transform};

/// Threads per workgroup of `procedural_main`, one character each (keep in sync with the
/// shader's `PROCEDURAL_WORKGROUP`).
pub const PROCEDURAL_WORKGROUP: u32 = 64;

/// Workgroups along x at most: WebGPU's default `max_compute_workgroups_per_dimension`.
const MAX_GROUPS_X: u32 = 65_535;

/// Words of [`procedural_words`]' header (keep in sync with the shader's `HEADER_*`).
pub const PROCEDURAL_HEADER_WORDS: usize = 8;

/// Floats of [`pack_targets`] per look-at chain, two-bone chain and foot, and the ground's
/// weight (the shader's `*_TARGET_LEN`).
pub const LOOK_AT_TARGET_FLOATS: usize = 4;
/// See [`LOOK_AT_TARGET_FLOATS`].
pub const TWO_BONE_TARGET_FLOATS: usize = 11;
/// See [`LOOK_AT_TARGET_FLOATS`].
pub const FOOT_TARGET_FLOATS: usize = 4;

/// The stage's uniform. Keep in sync with `ProceduralParams` in `shaders/procedural.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ProceduralParams {
    /// Characters in the dispatch.
    pub num_characters: u32,
    /// Joints of the rig.
    pub num_joints: u32,
    /// Workgroups along x; character `x + y · groups_x · PROCEDURAL_WORKGROUP`.
    pub groups_x: u32,
    /// Floats of targets per row ([`target_stride`]).
    pub target_stride: u32,
    /// Index in the poses (vec4s) of the dispatch's first character's first joint.
    pub pose_base: u32,
    /// Row of the targets the dispatch's first character reads.
    pub target_base: u32,
    /// Padding to 32 bytes.
    pub pad: [u32; 2],
}

/// The words the shader reads for `rig` and `setup` (checked against it): a header of
/// [`PROCEDURAL_HEADER_WORDS`] (look-at chains, two-bone chains, feet, pelvis, then where the
/// parents, the look-at chains' offsets, the two-bone chains and the feet start), the parents
/// (`0xffff_ffff` for none), per look-at chain its word offset, then each chain (joint count,
/// forward axis, per joint its index, share and limit), each two-bone chain (three joints, soft
/// fraction, 1 for [`EndRotation::Target`]), each foot (three joints, soft fraction, ankle
/// height, tilt limit). Floats are stored as their bits.
///
/// ```
/// use glam::Vec3;
/// use throng::gpu::procedural::procedural_words;
/// use throng::program::{LookAtChain, ProceduralSetup};
/// use throng::{Rig, Transform};
///
/// let rig = Rig::new(
///     vec!["neck".into(), "head".into()],
///     vec![None, Some(0)],
///     vec![Transform::IDENTITY, Transform::from_translation(Vec3::Y * 0.1)],
///     None,
/// )?;
/// let setup = ProceduralSetup { look_at: vec![LookAtChain::even(vec![0, 1], Vec3::Z)], ..Default::default() }
///     .check(&rig)?;
/// let words = procedural_words(&rig, &setup);
/// assert_eq!(words[..3], [1, 0, 0]); // one look-at chain, no two-bone chains, no feet
/// assert_eq!(words[8..10], [0xffff_ffff, 0]); // the parents
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn procedural_words(rig: &Rig, setup: &ProceduralRig) -> Vec<u32> {
    words_for(rig.parents(), setup)
}

/// [`procedural_words`] for a rig of these parents.
fn words_for(parents: &[u16], setup: &ProceduralRig) -> Vec<u32> {
    let s = setup.setup();
    let feet = s.ground.as_ref().map_or(&[][..], |g| &g.feet[..]);
    let mut words = vec![0u32; PROCEDURAL_HEADER_WORDS];
    words[0] = s.look_at.len() as u32;
    words[1] = s.two_bone.len() as u32;
    words[2] = feet.len() as u32;
    words[3] = s.ground.as_ref().map_or(0, |g| u32::from(g.pelvis));
    words[4] = words.len() as u32;
    words.extend(parents.iter().map(|&p| if p == NO_PARENT { u32::MAX } else { u32::from(p) }));
    words[5] = words.len() as u32;
    let offsets_at = words.len();
    words.resize(offsets_at + s.look_at.len(), 0);
    for (i, chain) in s.look_at.iter().enumerate() {
        words[offsets_at + i] = words.len() as u32;
        words.push(chain.joints.len() as u32);
        words.extend(chain.forward.to_array().map(f32::to_bits));
        for ((&joint, &share), &limit) in chain.joints.iter().zip(&chain.shares).zip(&chain.limits_rad) {
            words.extend([u32::from(joint), share.to_bits(), limit.to_bits()]);
        }
    }
    words[6] = words.len() as u32;
    for chain in &s.two_bone {
        let [a, b, c] = chain.joints.map(u32::from);
        words.extend([a, b, c, chain.soft_fraction.to_bits(), u32::from(chain.end == EndRotation::Target)]);
    }
    words[7] = words.len() as u32;
    for foot in feet {
        let [a, b, c] = foot.leg.joints.map(u32::from);
        words.extend([
            a,
            b,
            c,
            foot.leg.soft_fraction.to_bits(),
            foot.ankle_height_m.to_bits(),
            foot.max_tilt_rad.to_bits(),
        ]);
    }
    words
}

/// Floats of [`pack_targets`] per row for `setup`.
#[must_use]
pub fn target_stride(setup: &ProceduralRig) -> usize {
    let s = setup.setup();
    let feet = s.ground.as_ref().map_or(0, |g| g.feet.len());
    let ground = if feet > 0 { 1 + FOOT_TARGET_FLOATS * feet } else { 0 };
    LOOK_AT_TARGET_FLOATS * s.look_at.len() + TWO_BONE_TARGET_FLOATS * s.two_bone.len() + ground
}

/// Appends row `row` of `targets` to `out` as the shader reads it, [`target_stride`] floats:
/// per look-at chain its target and weight, per two-bone chain its target, pole, rotation and
/// weight, then (with feet) the ground's weight and per foot its height and normal.
pub fn pack_targets(targets: &ProceduralTargets, row: usize, out: &mut Vec<f32>) {
    let vec3 = |out: &mut Vec<f32>, v: Vec3| out.extend(v.to_array());
    for c in &targets.look_at {
        vec3(out, c.target[row]);
        out.push(c.weight[row]);
    }
    for c in &targets.two_bone {
        vec3(out, c.target[row]);
        vec3(out, c.pole[row]);
        out.extend(c.rotation[row].to_array());
        out.push(c.weight[row]);
    }
    if !targets.feet.is_empty() {
        out.push(targets.ground_weight[row]);
        for f in &targets.feet {
            out.push(f.height_m[row]);
            vec3(out, f.normal[row]);
        }
    }
}

/// The dispatch's grid for `characters`: workgroups along x and y.
pub(crate) fn procedural_groups(characters: u32) -> (u32, u32) {
    let groups = characters.div_ceil(PROCEDURAL_WORKGROUP);
    let groups_x = groups.clamp(1, MAX_GROUPS_X);
    (groups_x, groups.div_ceil(groups_x))
}

/// An archetype's procedural setup on the device and the stage's pipeline.
pub struct GpuProcedural {
    pipeline: ProceduralPipeline,
    words: wgpu::Buffer,
    setup: ProceduralRig,
}

impl std::fmt::Debug for GpuProcedural {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuProcedural").field("setup", &self.setup).finish_non_exhaustive()
    }
}

impl GpuProcedural {
    /// Uploads `rig`'s parents and `setup` ([`procedural_words`]) and builds the stage's
    /// pipeline.
    ///
    /// # Errors
    /// [`GpuError::Procedural`] ([`crate::program::ProceduralError::RigMismatch`]) when `setup`
    /// was checked against a rig of another joint count.
    pub fn new(device: &wgpu::Device, rig: &Rig, setup: &ProceduralRig) -> Result<Self, GpuError> {
        Self::for_parents(device, rig.parents(), setup)
    }

    /// [`new`](Self::new) for a rig of these parents.
    pub(crate) fn for_parents(device: &wgpu::Device, parents: &[u16], setup: &ProceduralRig) -> Result<Self, GpuError> {
        if setup.num_joints() != parents.len() {
            return Err(GpuError::Procedural(crate::program::ProceduralError::RigMismatch {
                setup_joints: setup.num_joints(),
                rig_joints: parents.len(),
            }));
        }
        let words = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.procedural_rig"),
            contents: bytemuck::cast_slice(&words_for(parents, setup)),
            usage: wgpu::BufferUsages::STORAGE,
        });
        Ok(Self { pipeline: ProceduralPipeline::new(device), words, setup: setup.clone() })
    }

    /// The setup uploaded.
    #[must_use]
    pub fn setup(&self) -> &ProceduralRig {
        &self.setup
    }

    /// A bind group over `poses` (three vec4 a joint) and `targets` ([`pack_targets`]) with
    /// `params`, for [`encode`](Self::encode).
    pub(crate) fn bind_group(
        &self,
        device: &wgpu::Device,
        params: &wgpu::Buffer,
        targets: wgpu::BindingResource<'_>,
        poses: wgpu::BindingResource<'_>,
    ) -> wgpu::BindGroup {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("throng.procedural"),
            layout: &self.pipeline.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: self.words.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: targets },
                wgpu::BindGroupEntry { binding: 3, resource: poses },
            ],
        })
    }

    /// Records the stage over `characters` characters of a bind group from
    /// [`bind_group`](Self::bind_group).
    pub(crate) fn encode(&self, pass: &mut wgpu::ComputePass<'_>, bind_group: &wgpu::BindGroup, characters: u32) {
        let (groups_x, groups_y) = procedural_groups(characters);
        pass.set_pipeline(&self.pipeline.procedural);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(groups_x, groups_y, 1);
    }

    /// Runs the stage on `poses` (local poses after layers, `characters × joints`, row `i` of
    /// `targets` for character `i`), waits, and writes the result back into `poses`: what
    /// [`crate::eval::procedural::ProceduralJob`] does, for tests and tools.
    ///
    /// # Errors
    /// [`GpuError::LengthMismatch`] when the poses are not a whole number of characters,
    /// [`GpuError::Procedural`] when the targets are not for this setup and that many
    /// characters, [`GpuError::CrowdTooLarge`] past one storage binding, [`GpuError::Poll`] or
    /// [`GpuError::Readback`] when the device fails.
    pub fn run_blocking(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        targets: &ProceduralTargets,
        poses: &mut [Transform],
    ) -> Result<(), GpuError> {
        let joints = self.setup.num_joints();
        if joints == 0 || !poses.len().is_multiple_of(joints) {
            let expected = poses.len().div_ceil(joints.max(1)) * joints;
            return Err(GpuError::LengthMismatch { what: "procedural poses", expected, got: poses.len() });
        }
        let characters = poses.len() / joints;
        targets.validate_for(&self.setup, joints, characters)?;
        let bytes = (poses.len() * 48) as u64;
        let limit = device.limits().max_storage_buffer_binding_size;
        if bytes > limit || characters > u32::MAX as usize / (3 * joints) {
            return Err(GpuError::CrowdTooLarge {
                characters,
                what: "local poses",
                bytes,
                limit,
                limit_name: "max_storage_buffer_binding_size",
            });
        }
        if characters == 0 {
            return Ok(());
        }
        let stride = target_stride(&self.setup);
        let mut packed = Vec::with_capacity(characters * stride);
        for row in 0..characters {
            pack_targets(targets, row, &mut packed);
        }
        // Storage bindings may not be empty: a setup without chains still binds one float.
        packed.resize(packed.len().max(1), 0.0);
        let vec4s: Vec<[f32; 4]> = poses
            .iter()
            .flat_map(|t| [t.translation.extend(0.0).to_array(), t.rotation.to_array(), t.scale.extend(0.0).to_array()])
            .collect();
        let pose_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.procedural_poses"),
            contents: bytemuck::cast_slice(&vec4s),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let target_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.procedural_targets"),
            contents: bytemuck::cast_slice(&packed),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let (groups_x, _) = procedural_groups(characters as u32);
        let params = ProceduralParams {
            num_characters: characters as u32,
            num_joints: joints as u32,
            groups_x,
            target_stride: stride as u32,
            ..ProceduralParams::default()
        };
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("throng.procedural_params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bind_group =
            self.bind_group(device, &uniform, target_buffer.as_entire_binding(), pose_buffer.as_entire_binding());
        let read: Vec<[f32; 4]> = super::run_pass_and_read(
            device,
            queue,
            "throng.procedural",
            &pose_buffer,
            bytes,
            "procedural poses",
            |pass| self.encode(pass, &bind_group, characters as u32),
        )?;
        for (t, v) in poses.iter_mut().zip(read.chunks_exact(3)) {
            t.translation = Vec3::from_slice(&v[0][..3]);
            t.rotation = glam::Quat::from_array(v[1]);
            t.scale = Vec3::from_slice(&v[2][..3]);
        }
        Ok(())
    }
}
