//! Structs shared with WGSL, as the shaders read them. Every struct here has a twin of the same
//! name in `shaders/shared/types.wgsl`; `tests/gpu_eval.rs` compares sizes, field offsets and
//! the constants against the layouts naga computes for that file.

use bytemuck::{Pod, Zeroable};
use glam::Mat4;

use crate::clip::Clip;
use crate::rig::{NO_PARENT, Transform};

/// Threads per workgroup in every entry point; one workgroup evaluates one character.
///
/// Keep in sync with `WORKGROUP_SIZE` in `shaders/shared/types.wgsl`.
pub const WORKGROUP_SIZE: u32 = 64;

/// Threads per workgroup of the level kernels (`FrameKernel::Levels`) for a rig of at most 128
/// joints, several characters each (2 of 64 joints, 4 of 26): the size an NVIDIA H200 ran
/// fastest of 64, 128, 256 and 512 (BENCHMARKS.md "The variants on an NVIDIA H200"). A rig
/// of more joints takes a workgroup of its own lanes, one character ([`level_group_threads`]).
///
/// Keep in sync with `GROUP_THREADS` in `shaders/shared/levels.wgsl`.
pub const LEVEL_GROUP_THREADS: u32 = 128;

/// The most threads a level kernel's workgroup has: one character of the largest rig.
pub const MAX_LEVEL_GROUP_THREADS: u32 = crate::MAX_JOINTS as u32;

/// Threads per character in the level kernels for a rig of `num_joints`: a joint per thread,
/// rounded up to a power of two (1 to [`MAX_LEVEL_GROUP_THREADS`]), so that a workgroup holds a
/// whole number of characters.
#[must_use]
pub fn level_lanes(num_joints: usize) -> u32 {
    (num_joints.clamp(1, MAX_LEVEL_GROUP_THREADS as usize).next_power_of_two()) as u32
}

/// Threads per workgroup of the level kernels for a rig of `num_joints`:
/// [`LEVEL_GROUP_THREADS`], or one character's [`level_lanes`] where that is more.
#[must_use]
pub fn level_group_threads(num_joints: usize) -> u32 {
    LEVEL_GROUP_THREADS.max(level_lanes(num_joints))
}

/// A level kernel thread's item of one band ([`GpuRigTables::levels`]), its chain, packed in a
/// `u32`: the character slot's first thread in bits 0–9, the chain's first joint in bits 10–17,
/// that joint's parent in bits 18–26 ([`LEVEL_ITEM_NO_PARENT`] for a root), the chain's length
/// in bits 27–31 ([`LEVEL_ITEM_LENGTH_SHIFT`]). Keep in sync with `LEVEL_ITEM_*` in
/// `shaders/shared/levels.wgsl`.
pub const LEVEL_ITEM_JOINT_SHIFT: u32 = 10;
/// See [`LEVEL_ITEM_JOINT_SHIFT`].
pub const LEVEL_ITEM_PARENT_SHIFT: u32 = 18;
/// See [`LEVEL_ITEM_JOINT_SHIFT`].
pub const LEVEL_ITEM_LENGTH_SHIFT: u32 = 27;
/// A root's parent in a level item ([`LEVEL_ITEM_JOINT_SHIFT`]): past every joint index.
pub const LEVEL_ITEM_NO_PARENT: u32 = 0x100;
/// The most depths one band spans ([`level_bands`]): a chain's length fits the item's five
/// bits ([`LEVEL_ITEM_LENGTH_SHIFT`]).
pub const MAX_BAND_DEPTHS: usize = 31;
/// A band's shape word in [`GpuRigTables::levels`]: its chains a character below this bit, its
/// depths from it. Keep in sync with `LEVEL_BAND_DEPTHS_SHIFT` in `shaders/shared/levels.wgsl`.
pub const LEVEL_BAND_DEPTHS_SHIFT: u32 = 16;

/// The level kernels' bands of depth levels (`shaders/shared/levels.wgsl`): each band's chains,
/// in the order of their first joints ([`crate::Rig::joints_by_depth`]). Band 0 is the roots
/// (depth 0), a chain of one joint each. Every later band starts at a depth `a` and goes on to
/// the next depth while each joint of its last depth has no child, or one that comes right
/// after it in the rig's order (to at most [`MAX_BAND_DEPTHS`] depths): each joint of depth `a`
/// heads a chain of consecutive joints `j, j + 1, …`, each the only child of the one before, to
/// the band's last depth or a leaf, so that every joint of the band's depths lies on exactly one
/// chain.
///
/// A level kernel's thread composes one chain of a character, joint after joint: a barrier a
/// band where going depth by depth needs one a depth, and no table read past the chain's first
/// joint. Each joint's product is the one it was (`model[parent] * local[joint]`), once. A band
/// ends at the first depth where any joint branches, so its chains run between the depths where
/// the rig branches (the humanoid's legs are cut where its chest branches). A rig in depth-first
/// order (BVH files, the built-in characters, glTF skins listed so) has its branchless stretches'
/// joints consecutive; in any other order such a stretch takes a band a depth, as if there were
/// no chains.
///
/// ```
/// use throng::gpu::types::level_bands;
/// use throng::{Rig, Transform};
///
/// // 0 ─ 1 ─ 2 ─ 3, and 1 ─ 4 ─ 5: joint 1 branches, so depth 2 starts a band whose chains are
/// // 2 ─ 3 and 4 ─ 5.
/// let parents = vec![None, Some(0), Some(1), Some(2), Some(1), Some(4)];
/// let names = (0..6).map(|j| format!("j{j}")).collect();
/// let rig = Rig::new(names, parents, vec![Transform::IDENTITY; 6], None).unwrap();
/// assert_eq!(level_bands(&rig), [vec![vec![0]], vec![vec![1]], vec![vec![2, 3], vec![4, 5]]]);
///
/// // The built-in 64-joint character's fifteen depths in five bands: the root, the pelvis
/// // (three children), the spine with the legs, the neck and head with the arms, the fingers.
/// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
/// let bands = level_bands(&rig);
/// let depths: Vec<usize> = bands.iter().map(|b| b.iter().map(Vec::len).max().unwrap()).collect();
/// let chains: Vec<usize> = bands.iter().map(Vec::len).collect();
/// assert_eq!((depths, chains), (vec![1, 1, 5, 4, 4], vec![1, 1, 3, 3, 10]));
/// ```
#[must_use]
pub fn level_bands(rig: &crate::Rig) -> Vec<Vec<Vec<u16>>> {
    let mut children = vec![0usize; rig.num_joints()];
    for p in (0..rig.num_joints()).filter_map(|j| rig.parent(j)) {
        children[p] += 1;
    }
    let depth = rig.joint_depths();
    // The joint after `j` in its chain: its only child, where that comes right after it.
    let next = |&j: &u16| {
        let (joint, after) = (usize::from(j), usize::from(j) + 1);
        (children[joint] == 1 && rig.parent(after) == Some(joint)).then_some(j + 1)
    };
    let levels: Vec<&[u16]> =
        rig.joints_by_depth().chunk_by(|&a, &b| depth[usize::from(a)] == depth[usize::from(b)]).collect();
    let mut bands = Vec::new();
    let mut d = 0;
    while d < levels.len() {
        let mut width = 1;
        while d > 0
            && d + width < levels.len()
            && width < MAX_BAND_DEPTHS
            && levels[d + width - 1].iter().all(|j| children[usize::from(*j)] == 0 || next(j).is_some())
        {
            width += 1;
        }
        bands.push(
            levels[d].iter().map(|&head| std::iter::successors(Some(head), next).take(width).collect()).collect(),
        );
        d += width;
    }
    bands
}

/// Thread `t`'s item of a band of `chains` in a level kernel whose characters take `lanes`
/// threads each: slot `t / n` (`n` the band's chains), chain `t % n`, packed as
/// [`LEVEL_ITEM_JOINT_SHIFT`] says.
fn level_item(t: usize, chains: &[Vec<u16>], lanes: u32, parents: &[u16]) -> u32 {
    let n = chains.len();
    let chain = &chains[t % n];
    debug_assert!(chain.len() <= MAX_BAND_DEPTHS, "a chain's length fits five bits");
    let joint = chain[0];
    let parent = match parents[usize::from(joint)] {
        NO_PARENT => LEVEL_ITEM_NO_PARENT,
        p => u32::from(p),
    };
    ((t / n) as u32 * lanes)
        | (u32::from(joint) << LEVEL_ITEM_JOINT_SHIFT)
        | (parent << LEVEL_ITEM_PARENT_SHIFT)
        | ((chain.len() as u32) << LEVEL_ITEM_LENGTH_SHIFT)
}

/// Characters per workgroup of the level kernels for a rig of `num_joints`.
#[must_use]
pub fn level_group_characters(num_joints: usize) -> u32 {
    level_group_threads(num_joints) / level_lanes(num_joints)
}

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
    /// Rest pose, shown when none of a character's weights counts (`program::weighs`).
    pub rest: GpuTransform,
    /// Parent joint, or [`GPU_NO_PARENT`].
    pub parent: u32,
    /// Number of ancestors (roots: 0).
    pub depth: u32,
    /// Index in [`GpuRigTables::paths`] of this joint's ancestors, root first, `depth` of them
    /// (on the device, in `throng.rig_tables`, which puts a layered crowd's layer table first):
    /// a thread composes its joint's model matrix from the root down without waiting for other
    /// joints' (local-to-model and the mesh-space override).
    pub path_start: u32,
    /// Row `i` of the rig's joints in depth order (depth by depth, each depth in joint order),
    /// which `Hierarchy::Subgroup` composes a depth at a time (`shaders/shared/subgroup.wgsl`):
    /// the joint at place `i` (below [`BY_DEPTH_PARENT_LANE_SHIFT`]), its parent's place within
    /// the depth above (from that shift; 0 for a root) and the place past depth `i`'s last joint
    /// (from [`BY_DEPTH_LEVEL_END_SHIFT`]; the joint count for depths past the deepest).
    pub by_depth: u32,
}

/// [`GpuRigJoint::by_depth`]'s joint field, and the mask of its parent's place (8 bits each:
/// [`crate::MAX_JOINTS`] is 256).
pub const BY_DEPTH_JOINT_MASK: u32 = 0xff;
/// Where [`GpuRigJoint::by_depth`]'s parent's place starts.
pub const BY_DEPTH_PARENT_LANE_SHIFT: u32 = 8;
/// Where [`GpuRigJoint::by_depth`]'s depth end starts.
pub const BY_DEPTH_LEVEL_END_SHIFT: u32 = 16;

/// A rig as the shaders read it: its joints and every joint's ancestor path.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRigTables {
    /// One entry per joint, in the rig's order.
    pub joints: Vec<GpuRigJoint>,
    /// Each joint's ancestors, root first, at [`GpuRigJoint::path_start`]; one entry, 0, for a
    /// rig of roots only, so that the buffer is never empty.
    pub paths: Vec<u32>,
    /// The level kernels' bands (`shaders/shared/levels.wgsl`, [`level_bands`]): for each band
    /// `b` from 0 to [`num_bands`](Self::num_bands) − 1, two words: where its items start in
    /// this table, then its chains `n` a character below bit [`LEVEL_BAND_DEPTHS_SHIFT`] and
    /// its depths (its longest chain) from it; then every band's items, `n × C` of them (`C` the
    /// characters of a workgroup, [`level_group_characters`]),
    /// entry `t` thread `t`'s chain packed as [`LEVEL_ITEM_JOINT_SHIFT`] says. A thread reads
    /// where it would otherwise divide its index by the band's width and look up the joint and
    /// its parent.
    pub levels: Vec<u32>,
    /// Bands of depth levels ([`level_bands`]): at least 1, the roots.
    pub num_bands: u32,
    /// Pointer doubling's ancestors (`shaders/shared/doubling.wgsl`, [`crate::gpu::Hierarchy::Doubling`]):
    /// [`DOUBLING_WORDS`] words a joint, in the rig's order, word `w` holding round `2w`'s
    /// ancestor in its low 16 bits and round `2w + 1`'s in its high ones. Round `r`'s is the
    /// joint `2^r` depths up, or [`DOUBLING_NONE`] where the joint is less deep than that: a
    /// thread reads its joint's once and takes each round's from a register.
    pub doubling: Vec<u32>,
}

/// Words a joint of [`GpuRigTables::doubling`]: two rounds a word, for the most rounds a rig
/// of [`crate::MAX_JOINTS`] can take (its deepest joint at most 255 deep, 8 rounds).
pub const DOUBLING_WORDS: usize = 4;
/// The ancestor of a round in [`GpuRigTables::doubling`] for a joint less deep than the round's
/// span: the round composes it with the identity.
pub const DOUBLING_NONE: u32 = 0xffff;

/// The rounds pointer doubling takes to compose a rig whose deepest joint is `deepest` deep:
/// round `r` spans `2^r` depths, and spans `1, 2, 4, …` sum to every depth up to it, so one
/// round a bit of `deepest` (0 for a rig of roots).
///
/// ```
/// use throng::gpu::types::doubling_rounds;
/// assert_eq!([0, 1, 2, 3, 4, 14, 255].map(doubling_rounds), [0, 1, 2, 2, 3, 4, 8]);
/// ```
#[must_use]
pub const fn doubling_rounds(deepest: u32) -> u32 {
    u32::BITS - deepest.leading_zeros()
}

/// [`GpuRigTables::doubling`] for `joints` whose depths and ancestor paths (`paths`) are set.
fn doubling_table(joints: &[GpuRigJoint], paths: &[u32]) -> Vec<u32> {
    let mut table = vec![0; DOUBLING_WORDS * joints.len()];
    for (j, joint) in joints.iter().enumerate() {
        for r in 0..2 * DOUBLING_WORDS {
            let span = 1u32 << r;
            let ancestor = match joint.depth.checked_sub(span) {
                Some(above) => paths[(joint.path_start + above) as usize],
                None => DOUBLING_NONE,
            };
            table[DOUBLING_WORDS * j + r / 2] |= ancestor << (16 * (r % 2));
        }
    }
    table
}

/// [`GpuRigJoint::by_depth`] of each row, for `joints` whose depths and parents are set.
fn by_depth_rows(joints: &[GpuRigJoint]) -> Vec<u32> {
    let n = joints.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&j| joints[j].depth);
    let mut place = vec![0u32; n];
    // Where each depth ends in `order` (and so where the next starts); past the deepest, the
    // joint count.
    let mut ends = vec![n as u32; n];
    for (i, &j) in order.iter().enumerate() {
        place[j] = i as u32;
        ends[joints[j].depth as usize] = i as u32 + 1;
    }
    let start = |depth: u32| depth.checked_sub(1).map_or(0, |above| ends[above as usize]);
    order
        .iter()
        .enumerate()
        .map(|(row, &j)| {
            let parent_lane = match joints[j].parent {
                GPU_NO_PARENT => 0,
                p => place[p as usize] - start(joints[p as usize].depth),
            };
            j as u32 | parent_lane << BY_DEPTH_PARENT_LANE_SHIFT | ends[row] << BY_DEPTH_LEVEL_END_SHIFT
        })
        .collect()
}

/// Joints of the widest depth among joints of these `depths` (0 for none).
pub(crate) fn widest_depth(depths: impl IntoIterator<Item = usize>) -> u32 {
    let mut widths: Vec<u32> = Vec::new();
    for depth in depths {
        if widths.len() <= depth {
            widths.resize(depth + 1, 0);
        }
        widths[depth] += 1;
    }
    widths.into_iter().max().unwrap_or(0)
}

impl GpuRigTables {
    /// Joints of the rig's widest depth: how many lanes [`crate::gpu::Hierarchy::Subgroup`]
    /// needs in a subgroup (0 for a rig without joints).
    #[must_use]
    pub fn widest_depth(&self) -> u32 {
        widest_depth(self.joints.iter().map(|joint| joint.depth as usize))
    }

    /// The rounds [`crate::gpu::Hierarchy::Doubling`] takes to compose the rig
    /// ([`doubling_rounds`] of its deepest joint's depth): a constant of its crowd's kernels.
    #[must_use]
    pub fn doubling_rounds(&self) -> u32 {
        doubling_rounds(self.joints.iter().map(|joint| joint.depth).max().unwrap_or(0))
    }
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
                by_depth: 0,
            });
        }
        for (row, by_depth) in by_depth_rows(&joints).into_iter().enumerate() {
            joints[row].by_depth = by_depth;
        }
        let doubling = doubling_table(&joints, &paths);
        if paths.is_empty() {
            paths.push(0);
        }
        let bands = level_bands(rig);
        let lanes = level_lanes(rig.num_joints());
        let characters = level_group_characters(rig.num_joints()) as usize;
        let mut levels: Vec<u32> = vec![0; 2 * bands.len()];
        for (b, chains) in bands.iter().enumerate() {
            // At most MAX_BAND_DEPTHS depths and MAX_JOINTS chains.
            let depths = chains.iter().map(Vec::len).max().unwrap_or(0) as u32;
            debug_assert!(chains.len() < 1 << LEVEL_BAND_DEPTHS_SHIFT, "a band's chains fit below its depths");
            levels[2 * b] = levels.len() as u32;
            levels[2 * b + 1] = chains.len() as u32 | depths << LEVEL_BAND_DEPTHS_SHIFT;
            levels.extend((0..chains.len() * characters).map(|t| level_item(t, chains, lanes, rig.parents())));
        }
        let num_bands = bands.len() as u32;
        GpuRigTables { joints, paths, levels, num_bands, doubling }
    }

    /// The inverse bind matrix.
    #[must_use]
    pub fn inverse_bind(&self) -> Mat4 {
        Mat4::from_cols_array(&self.inverse_bind)
    }
}

/// Where one clip's frames lie in the archetype's clip data, and how they are stored, 32 bytes.
///
/// Keep in sync with `ClipHeader` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuClipHeader {
    /// Index in the clip data (in `vec4<u32>` units) of the clip's first full transform
    /// (frame 0, joint 0; three `vec4` each), or of a compact clip's first joint range
    /// ([`COMPACT_RANGE_VEC4S`] `vec4` per joint), its packed joint-frames following.
    pub first_vec4: u32,
    /// Frames stored, both ends included; at least 1.
    pub num_frames: u32,
    /// Length in seconds; 0 for a static pose.
    pub duration_s: f32,
    /// 1 if sampling past the end wraps, 0 if it holds the last frame.
    pub looping: u32,
    /// Bits per smallest-three rotation component of a compact clip (1 to 16); 0 for a clip
    /// at full precision.
    pub rotation_bits: u32,
    /// Bits per translation component of a compact clip; 0 at full precision.
    pub translation_bits: u32,
    /// `u32` words per packed frame of a compact clip (every group of four joints' words,
    /// side by side); 0 at full precision.
    pub words_per_frame: u32,
    /// Padding to the struct's 16-byte alignment.
    pub pad0: u32,
}

impl GpuClipHeader {
    /// The header of `clip` whose data starts at `first_vec4`.
    #[must_use]
    pub fn new(clip: &Clip, first_vec4: u32) -> Self {
        let format = clip.compact_format();
        Self {
            first_vec4,
            // `Clip` caps frames at `MAX_FRAMES`, well inside u32.
            num_frames: clip.num_frames() as u32,
            duration_s: clip.duration_s(),
            looping: u32::from(clip.is_looping()),
            rotation_bits: format.map_or(0, |f| f.rotation_bits()),
            translation_bits: format.map_or(0, |f| f.translation_bits()),
            // At most 4 words per joint and 256 joints.
            words_per_frame: clip.compact_poses().map_or(0, |c| c.words_per_frame() as u32),
            pad0: 0,
        }
    }
}

/// `vec4` of clip data per joint of a compact clip, before its joint-frames.
///
/// Keep in sync with `COMPACT_RANGE_VEC4S` in `shaders/shared/types.wgsl`.
pub const COMPACT_RANGE_VEC4S: u32 = 5;

/// `clip`'s frames as the clip data holds them (`shaders/shared/compact.wgsl`): three `vec4`
/// (a [`GpuTransform`]'s bits) per joint-frame at full precision; for a compact clip
/// [`COMPACT_RANGE_VEC4S`] `vec4` per joint (rotation minimum and step; translation minimum
/// and the joint-frame's first word in a frame; translation step and 1 if the joint's
/// translation is stored, else 0; scale: floats as bits), then the packed frames, a `vec4` per
/// word of a group of four joint-frames (a joint-frame's words lie 4 apart).
#[must_use]
pub fn clip_data(clip: &Clip) -> Vec<[u32; 4]> {
    let Some(compact) = clip.compact_poses() else {
        let transforms: Vec<GpuTransform> = clip.poses().iter().map(GpuTransform::from_transform).collect();
        return bytemuck::cast_slice(&transforms).to_vec();
    };
    let bits = |v: glam::Vec4| v.to_array().map(f32::to_bits);
    let mut data: Vec<[u32; 4]> = compact
        .ranges
        .iter()
        .flat_map(|r| {
            let with = |v: glam::Vec3, w: u32| [v.x.to_bits(), v.y.to_bits(), v.z.to_bits(), w];
            [
                bits(r.rotation_min),
                bits(r.rotation_step),
                with(r.translation_min, r.word_offset),
                with(r.translation_step, u32::from(r.translated)),
                with(r.scale, 0),
            ]
        })
        .collect();
    data.extend_from_slice(&compact.words);
    data
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

/// The sample-positions stage's uniform (`shaders/sample_positions.wgsl`), one a window of the
/// samples, 16 bytes: how many of the window's samples are the frame's.
///
/// Keep in sync with `PositionsParams` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuPositionsParams {
    /// The frame's samples in the window, a thread each.
    pub count: u32,
    /// Padding to a uniform's 16 bytes.
    pub pad0: u32,
    /// Padding.
    pub pad1: u32,
    /// Padding.
    pub pad2: u32,
}

/// What one dispatch (one chunk of the crowd) needs, 64 bytes.
///
/// Keep in sync with `ChunkParams` in `shaders/shared/types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuChunkParams {
    /// Crowd index of the chunk's first character.
    pub first_character: u32,
    /// Characters in the chunk, one workgroup each.
    pub num_characters: u32,
    /// The layered frame: layers per character that keep memory ([`GpuLayerSetup::memory`]).
    pub num_memory_layers: u32,
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
    pub memory_base: u32,
    /// The layered frame: layers per character.
    pub num_layers: u32,
    /// The layered frame: real seconds since last frame.
    pub dt_s: f32,
    /// Index of the first sample in the bound `samples` window: 0 while every sample fits one
    /// binding (the whole buffer is bound), else where the chunk's window starts.
    pub sample_base: u32,
    /// 1 when the layered frame's workgroups evaluate the due list that the `ranges` binding
    /// then holds (animation LOD, `GpuCrowd::set_frame_due`), 0 when workgroup `w` evaluates
    /// the chunk's character `w`.
    pub due_list: u32,
    /// The level kernels: index in `throng.rig_tables` of the rig's bands of depth levels
    /// ([`GpuRigTables::levels`]).
    pub levels_start: u32,
    /// The level kernels: the rig's bands of depth levels ([`level_bands`]).
    pub num_bands: u32,
    /// The layered level kernel under a due list: the chunk's due characters (its workgroups
    /// cover several characters each, so the count bounds the last one).
    pub num_due: u32,
    /// Pointer doubling (`shaders/shared/doubling.wgsl`): index in `throng.rig_tables` of the
    /// rig's ancestors a round ([`GpuRigTables::doubling`]).
    pub doubling_start: u32,
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
/// `GpuLayerSetup::memory` of a layer kept without memory (its graph has only cuts).
///
/// Keep in sync with `NO_MEMORY` in `shaders/shared/types.wgsl`.
pub const NO_MEMORY: u32 = u32::MAX;

/// One layer of the archetype, in evaluation order, 20 bytes; the start of the layer table.
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
    /// The layer's slot in each character's memory (slots count only the layers that keep
    /// memory, in layer order), or [`NO_MEMORY`] for a layer without
    /// ([`crate::program::LayerSetup::needs_memory`]).
    pub memory: u32,
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
/// layer's block in the characters' memory, followed by its replay entries
/// ([`LAYER_HEADER_BYTES`]) and its joints' ([`JointStateLayout`]).
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
    pub decay_s: f32,
    /// Real seconds since the switch.
    pub elapsed_s: f32,
    /// Largest offset component at the switch (metres or radians).
    pub largest_offset: f32,
    /// Largest offset velocity component at the switch: the second 16 bytes, which the shaders
    /// read only while a spring decays and write only at a spring's capture (the first 16 are
    /// read and written every frame).
    pub largest_velocity: f32,
    /// Padding to the block's 16-byte alignment.
    pub pad: [u32; 3],
}

/// Samples one replay entry holds: a frame whose layer shows more (a crossfade between two
/// blends of more than four) stores its displayed pose instead. Four 2D blend-space samples a
/// side cover a crossfade between two grid cells.
///
/// Keep in sync with `REPLAY_SAMPLES` in `shaders/transition.wgsl`.
pub const REPLAY_SAMPLES: u32 = 8;

/// Bytes of a layer's block in the characters' memory before its joints' ([`JOINT_STATE_BYTES`]
/// each): its [`GpuLayerState`] (32), then two replay entries, one per displayed-pose slot —
/// their header vec4s (32), then each one's [`REPLAY_SAMPLES`] samples, a raw
/// [`ClipSample`](crate::program::ClipSample) each (16). An entry's header is
/// `[flags, frozen fade weight, decay parameter, seconds since the switch]` (the flags:
/// [`REPLAY_COUNT_MASK`] samples, [`REPLAY_STORED`], [`REPLAY_ROOT_MOTION`],
/// [`REPLAY_ADDITIVE`], [`REPLAY_SNAPSHOT`], the decay's mode code from
/// [`REPLAY_DECAY_SHIFT`]): what the displayed pose of its slot was made of, so that the pose is
/// replayed from the samples and the memo when a switch reads it, instead of written every frame.
///
/// Keep in sync with "Memory layout" in `shaders/transition.wgsl`.
pub const LAYER_HEADER_BYTES: u64 = size_of::<GpuLayerState>() as u64 + 2 * 16 + 2 * REPLAY_SAMPLES as u64 * 16;

/// Samples shown, in a replay entry's flags ([`LAYER_HEADER_BYTES`]).
///
/// Keep in sync with `REPLAY_COUNT_MASK` in `shaders/transition.wgsl` (and the other `REPLAY_*`).
pub const REPLAY_COUNT_MASK: u32 = 0xff;
/// The entry's pose is stored in its slot ([`JointStateLayout::slot`]), not replayed: the
/// transition stage's frames, frames that show more than [`REPLAY_SAMPLES`] samples, and the last
/// displayed pose at a switch that changes the memo.
pub const REPLAY_STORED: u32 = 0x100;
/// The root's motion was removed (the base layer, [`crate::program::LayerProgram::ROOT_MOTION`]).
pub const REPLAY_ROOT_MOTION: u32 = 0x200;
/// An additive layer: the identity where no weight counts, not the rest pose.
pub const REPLAY_ADDITIVE: u32 = 0x400;
/// Mixed from the frozen snapshot in the memo at the header's weight.
pub const REPLAY_SNAPSHOT: u32 = 0x800;
/// Shift of the decaying inertialization's mode code applied (0 for none).
pub const REPLAY_DECAY_SHIFT: u32 = 12;

/// Bytes per joint of a layer's block in the characters' memory, after its
/// [`LAYER_HEADER_BYTES`]: two displayed-pose slots of 48 bytes (of which a frame that stores
/// its pose writes 32 where the joint's scale is uniform, [`JointStateLayout`]) and a 48-byte
/// memo (the frozen snapshot or the inertialization offsets).
pub const JOINT_STATE_BYTES: u64 = 144;

/// The joints' part of one layer's block in the characters' memory, as floats (the bytes after
/// the [`LAYER_HEADER_BYTES`]): structure-of-arrays over the rig's joints, so that a workgroup's
/// threads, one joint each, write whole contiguous lines — slot 0's poses (translation and the
/// scale's value, rotation, and the scale's three axes where they differ, the scale's value then
/// [`NON_UNIFORM_SCALE`](Self::NON_UNIFORM_SCALE): 12 floats a joint, of which a pose with a
/// uniform scale writes 8), slot 1's, then the memos (12 floats a joint). Each joint's floats are its own: no two threads ever write one
/// 16-byte line, which shaders may store whole (Metal's compiler writes a vector's component
/// as a read-modify-write of the vector), and a frame writes a slot without reading anything.
///
/// Keep in sync with "Memory layout" in `shaders/transition.wgsl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JointStateLayout {
    /// Joints in the rig.
    pub num_joints: usize,
}

impl JointStateLayout {
    /// The bits of a slot's scale value when the pose's scale differs between axes (a NaN,
    /// which no scale is): its axes are then the slot's third vec4. [`slot`](Self::slot) and
    /// the shaders' `load_pose` both test for exactly these bits; any other value, another NaN
    /// included, is the uniform scale itself.
    ///
    /// Keep in sync with `NON_UNIFORM_SCALE` in `shaders/transition.wgsl`.
    pub const NON_UNIFORM_SCALE: u32 = 0x7fc0_0001;

    /// Floats in the joints' part of a block.
    #[must_use]
    pub const fn floats(self) -> usize {
        self.num_joints * JOINT_STATE_BYTES as usize / 4
    }

    /// Index of the first float of `joint`'s pose in `slot` (0 or 1).
    const fn slot_index(self, slot: u32, joint: usize) -> usize {
        (slot as usize * self.num_joints + joint) * 12
    }

    /// The pose of `joint` in `slot` (0 or 1), from `floats` of length [`floats`](Self::floats).
    #[must_use]
    pub fn slot(self, floats: &[f32], slot: u32, joint: usize) -> Transform {
        let k = self.slot_index(slot, joint);
        let value = floats[k + 3];
        let scale = if value.to_bits() == Self::NON_UNIFORM_SCALE {
            glam::Vec3::from_slice(&floats[k + 8..k + 11])
        } else {
            glam::Vec3::splat(value)
        };
        Transform {
            translation: glam::Vec3::from_slice(&floats[k..k + 3]),
            rotation: glam::Quat::from_slice(&floats[k + 4..k + 8]),
            scale,
        }
    }

    /// Writes `t` as the pose of `joint` in `slot` (0 or 1) into `floats`, as the shaders'
    /// `store_pose` does: the scale's three axes only where they are not the same bits.
    pub fn set_slot(self, floats: &mut [f32], slot: u32, joint: usize, t: &Transform) {
        let k = self.slot_index(slot, joint);
        let s = t.scale;
        let uniform = s.x.to_bits() == s.y.to_bits() && s.x.to_bits() == s.z.to_bits();
        floats[k..k + 3].copy_from_slice(&t.translation.to_array());
        floats[k + 3] = if uniform { s.x } else { f32::from_bits(Self::NON_UNIFORM_SCALE) };
        floats[k + 4..k + 8].copy_from_slice(&t.rotation.to_array());
        if !uniform {
            floats[k + 8..k + 12].copy_from_slice(&[s.x, s.y, s.z, 0.0]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rig;
    use glam::Vec3;

    /// Every joint's two slots land on floats of their own inside the block.
    #[test]
    fn joint_state_slots_do_not_overlap() {
        let layout = JointStateLayout { num_joints: 5 };
        // A bit pattern no float written here has (the non-uniform scale's marker is a NaN).
        let unwritten = f32::from_bits(0x7fc0_dead);
        let mut floats = vec![unwritten; layout.floats()];
        // Odd joints have a uniform scale, which takes two vec4; the others three.
        let pose = |slot: u32, joint: usize| {
            let v = (slot * 10) as f32 + joint as f32;
            let step = if joint % 2 == 1 { 0.0 } else { 1.0 };
            Transform {
                translation: Vec3::splat(v),
                rotation: glam::Quat::from_rotation_y(v),
                scale: Vec3::new(v + 1.0, v + 1.0 + step, v + 1.0 + 2.0 * step),
            }
        };
        for (slot, joint) in (0..2).flat_map(|s| (0..5).map(move |j| (s, j))) {
            layout.set_slot(&mut floats, slot, joint, &pose(slot, joint));
        }
        for (slot, joint) in (0..2).flat_map(|s| (0..5).map(move |j| (s, j))) {
            assert_eq!(layout.slot(&floats, slot, joint), pose(slot, joint), "slot {slot}, joint {joint}");
        }
        // Uniform-scale slots leave their third vec4 (2 joints × 2 slots × 4 floats), and the
        // memos' 12 floats a joint are left.
        assert_eq!(floats.iter().filter(|v| v.to_bits() == unwritten.to_bits()).count(), 16 + 5 * 12);
    }

    /// The reader takes a slot's scale word for the marker only where it is exactly
    /// `NON_UNIFORM_SCALE`, as the shaders' `load_pose` does: a uniform scale whose value is
    /// another NaN reads back as itself, not as the slot's third vec4 (`tests/gpu_frame.rs`
    /// `layers_read_a_slots_scale_as_the_cpu_layout_does` holds the shaders to the same).
    #[test]
    fn only_the_exact_marker_reads_a_slots_third_vec4() {
        let layout = JointStateLayout { num_joints: 1 };
        // The third vec4 holds a scale no slot below writes.
        let mut floats = vec![7.0f32; layout.floats()];
        for bits in [0x7fc0_0000, 0xffc0_0000, JointStateLayout::NON_UNIFORM_SCALE + 1, 0x7f80_0001] {
            let nan = f32::from_bits(bits);
            let t = Transform { translation: Vec3::X, rotation: glam::Quat::IDENTITY, scale: Vec3::splat(nan) };
            layout.set_slot(&mut floats, 0, 0, &t);
            let read = layout.slot(&floats, 0, 0);
            assert_eq!(read.scale.to_array().map(f32::to_bits), [bits; 3], "{bits:#x}");
        }
        floats[3] = f32::from_bits(JointStateLayout::NON_UNIFORM_SCALE);
        assert_eq!(layout.slot(&floats, 0, 0).scale, Vec3::splat(7.0));
    }

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
        let tables = GpuRigJoint::from_rig(&rig);
        // Pointer doubling: head, 2 deep, takes two rounds, its parent spine then hips 2 up.
        assert_eq!(tables.doubling_rounds(), 2);
        let none = DOUBLING_NONE;
        let rounds = |j: usize| -> Vec<u32> {
            let words = &tables.doubling[DOUBLING_WORDS * j..DOUBLING_WORDS * (j + 1)];
            (0..2 * DOUBLING_WORDS).map(|r| words[r / 2] >> (16 * (r % 2)) & 0xffff).collect()
        };
        let first_two: Vec<[u32; 2]> = (0..5).map(|j| [rounds(j)[0], rounds(j)[1]]).collect();
        assert_eq!(first_two, [[none, none], [0, none], [1, 0], [0, none], [none, none]]);
        assert!((0..5).all(|j| rounds(j)[2..].iter().all(|&a| a == none)));
        assert_eq!(tables.doubling.len(), 5 * DOUBLING_WORDS);
        let GpuRigTables { joints, paths, levels, num_bands, .. } = tables;
        let got: Vec<(u32, u32)> = joints.iter().map(|j| (j.parent, j.depth)).collect();
        assert_eq!(got, [(GPU_NO_PARENT, 0), (0, 1), (1, 2), (0, 1), (GPU_NO_PARENT, 0)]);
        let path = |j: &GpuRigJoint| &paths[j.path_start as usize..(j.path_start + j.depth) as usize];
        let got: Vec<&[u32]> = joints.iter().map(path).collect();
        assert_eq!(got, [&[][..], &[0], &[0, 1], &[0], &[]]);
        assert_eq!(joints[2].inverse_bind(), rig.inverse_bind()[2]);
        // Band 0: the roots hips and prop. Band 1: depth 1's spine has one child, the joint
        // after it (head), and leg none, so it takes depth 2 too, as the chains spine ─ head and
        // leg. Each band's start and chains (its depths in the high half), then its items for
        // the 16 characters of a workgroup (a 5-joint rig takes 8 lanes: 16 characters in 128
        // threads): slot, first joint, its parent, the chain's length.
        assert_eq!(num_bands, 2);
        assert_eq!(levels[..4], [4, 2 | 1 << 16, 4 + 32, 2 | 2 << 16]);
        assert_eq!(levels.len(), 4 + 32 + 32);
        let item = |slot: u32, joint: u32, parent: u32, length: u32| {
            (slot * 8)
                | (joint << LEVEL_ITEM_JOINT_SHIFT)
                | (parent << LEVEL_ITEM_PARENT_SHIFT)
                | (length << LEVEL_ITEM_LENGTH_SHIFT)
        };
        let no = LEVEL_ITEM_NO_PARENT;
        assert_eq!(levels[4..7], [item(0, 0, no, 1), item(0, 4, no, 1), item(1, 0, no, 1)]);
        assert_eq!(levels[35], item(15, 4, no, 1));
        assert_eq!(levels[36..39], [item(0, 1, 0, 2), item(0, 3, 0, 1), item(1, 1, 0, 2)]);
        assert_eq!(levels[67], item(15, 3, 0, 1));
    }

    /// `by_depth`, decoded as `shaders/shared/subgroup.wgsl` reads it: the five-joint rig by hand
    /// (depth 0: hips, prop; 1: spine, leg; 2: head), then for rigs of 1 to 256 joints (a chain
    /// 256 deep, a root with 255 children, two roots, the level kernels' test shapes) every joint
    /// at one place, depth by depth in joint order, each depth's end rising to the joint count,
    /// and every parent's lane its place within the depth above.
    #[test]
    fn by_depth_rows_list_each_depth_and_its_parents_lanes() {
        let decode = |joints: &[GpuRigJoint]| -> Vec<(u32, u32, u32)> {
            joints
                .iter()
                .map(|j| {
                    let row = j.by_depth;
                    (
                        row & BY_DEPTH_JOINT_MASK,
                        (row >> BY_DEPTH_PARENT_LANE_SHIFT) & BY_DEPTH_JOINT_MASK,
                        row >> BY_DEPTH_LEVEL_END_SHIFT,
                    )
                })
                .collect()
        };
        let rest = vec![Transform::from_translation(Vec3::Y); 5];
        let names = ["hips", "spine", "head", "leg", "prop"].map(String::from).to_vec();
        let rig = Rig::new(names, vec![None, Some(0), Some(1), Some(0), None], rest, None).unwrap();
        let tables = GpuRigJoint::from_rig(&rig);
        // Places: hips 0, prop 1 | spine 2, leg 3 | head 4. Spine's parent (hips) is lane 0 of
        // depth 0, head's (spine) lane 0 of depth 1; depths end at 2, 4, 5, then 5.
        assert_eq!(decode(&tables.joints), [(0, 0, 2), (4, 0, 4), (1, 0, 5), (3, 0, 5), (2, 0, 5)]);
        assert_eq!(tables.widest_depth(), 2);

        let rig_of = |parents: Vec<Option<usize>>| {
            let n = parents.len();
            let names = (0..n).map(|j| format!("j{j}")).collect();
            Rig::new(names, parents, vec![Transform::from_translation(Vec3::Y); n], None).unwrap()
        };
        let shapes: Vec<Vec<Option<usize>>> = vec![
            vec![None],
            (0..256usize).map(|j| j.checked_sub(1)).collect(),
            (0..256).map(|j| (j > 0).then_some(0)).collect(),
            (0..40).map(|j| if j == 0 || j == 20 { None } else { Some(j / 2) }).collect(),
            (0..200)
                .map(|j| {
                    if j == 0 {
                        None
                    } else if j % 3 == 0 {
                        Some(j / 3)
                    } else {
                        Some(j - 1)
                    }
                })
                .collect(),
        ];
        for parents in shapes {
            let rig = rig_of(parents);
            let n = rig.num_joints();
            let tables = GpuRigJoint::from_rig(&rig);
            let rows = decode(&tables.joints);
            let depth = |j: u32| tables.joints[j as usize].depth;
            let order: Vec<u32> = rows.iter().map(|r| r.0).collect();
            let mut expected: Vec<u32> = (0..n as u32).collect();
            expected.sort_by_key(|&j| depth(j));
            assert_eq!(order, expected, "{n} joints: depth by depth, joint order within one");
            let depths = tables.joints.iter().map(|j| j.depth).max().unwrap() as usize + 1;
            let ends: Vec<u32> = rows.iter().map(|r| r.2).collect();
            for (d, &end) in ends.iter().enumerate() {
                let want = if d < depths { order.iter().filter(|&&j| depth(j) <= d as u32).count() } else { n };
                assert_eq!(end as usize, want, "{n} joints: depth {d}'s end");
            }
            let widest = (0..depths).map(|d| order.iter().filter(|&&j| depth(j) == d as u32).count()).max().unwrap();
            assert_eq!(tables.widest_depth() as usize, widest, "{n} joints");
            for (place, &(joint, parent_lane, _)) in rows.iter().enumerate() {
                let parent = tables.joints[joint as usize].parent;
                if parent == GPU_NO_PARENT {
                    continue;
                }
                let d = depth(joint) as usize;
                let above_start = if d >= 2 { ends[d - 2] as usize } else { 0 };
                assert_eq!(order[above_start + parent_lane as usize], parent, "{n} joints: place {place}'s parent");
                assert!(
                    above_start + (parent_lane as usize) < ends[d - 1] as usize,
                    "{n} joints: within the depth above"
                );
            }
        }
    }

    /// A branchless stretch continues a chain only where its joints are consecutive: listed
    /// breadth first, the same two limbs take a band a depth.
    #[test]
    fn chains_are_consecutive_joints() {
        let names = |n: usize| (0..n).map(|j| format!("j{j}")).collect();
        // Depth first: 0 ─ 1 ─ 2 and 0 ─ 3 ─ 4. Breadth first: 0 ─ 1 ─ 3 and 0 ─ 2 ─ 4.
        let depth_first =
            Rig::new(names(5), vec![None, Some(0), Some(1), Some(0), Some(3)], vec![Transform::IDENTITY; 5], None)
                .unwrap();
        let breadth_first =
            Rig::new(names(5), vec![None, Some(0), Some(0), Some(1), Some(2)], vec![Transform::IDENTITY; 5], None)
                .unwrap();
        assert_eq!(level_bands(&depth_first), [vec![vec![0]], vec![vec![1, 2], vec![3, 4]]]);
        assert_eq!(level_bands(&breadth_first), [vec![vec![0]], vec![vec![1], vec![2]], vec![vec![3], vec![4]]]);
    }

    /// The item tables of rigs of many shapes and sizes up to 256 joints, run as a level kernel's
    /// threads run them, band after band, each thread its chain of consecutive joints for as many
    /// of the band's depths as its length says: every character slot's every joint is composed
    /// exactly once, after its parent, by the slot's thread, and a band spans no more than
    /// [`MAX_BAND_DEPTHS`] depths.
    #[test]
    fn level_items_compose_every_joint_once_after_its_parent() {
        // A broom (a chain of a quarter of the joints, the rest fanned out from its end), a chain
        // (longer than a band), a binary tree and the GPU tests' mixed rig (a branch every third
        // joint, a second root).
        let broom = |n: usize| -> Vec<Option<usize>> {
            let chain = n / 4;
            (0..n).map(|j| (j > 0).then(|| if j <= chain { j - 1 } else { chain })).collect()
        };
        let chain = |n: usize| -> Vec<Option<usize>> { (0..n).map(|j| j.checked_sub(1)).collect() };
        let tree = |n: usize| -> Vec<Option<usize>> { (0..n).map(|j| j.checked_sub(1).map(|p| p / 2)).collect() };
        let mixed = |n: usize| -> Vec<Option<usize>> {
            (0..n).map(|j| (j > 0 && j != n / 2).then(|| if j % 3 == 0 { j / 2 } else { j - 1 })).collect()
        };
        let rigs: Vec<Rig> = [1, 2, 3, 26, 64, 65, 200, 256]
            .into_iter()
            .flat_map(|n| [broom(n), chain(n), tree(n), mixed(n)])
            .map(|parents| {
                let n = parents.len();
                Rig::new((0..n).map(|j| format!("j{j}")).collect(), parents, vec![Transform::IDENTITY; n], None)
                    .unwrap()
            })
            .collect();
        for rig in &rigs {
            let n = rig.num_joints();
            let tables = GpuRigJoint::from_rig(rig);
            let lanes = level_lanes(n);
            let characters = level_group_characters(n) as usize;
            let mut done = vec![vec![false; n]; characters];
            for b in 0..tables.num_bands as usize {
                let (start, shape) = (tables.levels[2 * b] as usize, tables.levels[2 * b + 1]);
                let (chains, depths) = ((shape & 0xffff) as usize, (shape >> 16) as usize);
                assert!((1..=MAX_BAND_DEPTHS).contains(&depths), "{n} joints, band {b}: {depths} depths");
                let mut composed = done.clone();
                let mut longest = 0;
                for t in 0..chains * characters {
                    let word = tables.levels[start + t];
                    let slot = (word & 0x3ff) as usize;
                    assert_eq!(slot, t / chains * lanes as usize, "{n} joints, band {b}, thread {t}");
                    let first = ((word >> LEVEL_ITEM_JOINT_SHIFT) & 0xff) as usize;
                    let parent = (word >> LEVEL_ITEM_PARENT_SHIFT) & 0x1ff;
                    let length = (word >> LEVEL_ITEM_LENGTH_SHIFT) as usize;
                    assert_eq!(parent, rig.parent(first).map_or(LEVEL_ITEM_NO_PARENT, |p| p as u32));
                    // Band 0 is the roots, a chain of one each, and no later band holds one: the
                    // kernels step the roots apart.
                    assert_eq!(b == 0, parent == LEVEL_ITEM_NO_PARENT, "{n} joints, band {b}: joint {first}");
                    assert!(b > 0 || length == 1, "{n} joints: a root's chain of {length}");
                    longest = longest.max(length);
                    let c = slot / lanes as usize;
                    assert!(first + length <= n, "{n} joints, band {b}: a chain past the rig");
                    let chain = composed[c].iter_mut().enumerate().skip(first).take(length);
                    for (joint, seen) in chain {
                        // The parent composed in an earlier band, or just before by this thread.
                        let above = rig.parent(joint);
                        if joint > first {
                            assert_eq!(above, Some(joint - 1), "{n} joints, band {b}: {joint} off the chain");
                        } else if let Some(p) = above {
                            assert!(done[c][p], "{n} joints, band {b}: {joint} before its parent {p}");
                        }
                        assert!(!*seen, "{n} joints: {joint} twice");
                        *seen = true;
                    }
                }
                assert_eq!(longest, depths, "{n} joints, band {b}");
                done = composed;
            }
            assert!(done.iter().all(|slot| slot.iter().all(|&d| d)), "{n} joints: a joint never composed");
        }
    }

    #[test]
    fn level_workgroups_hold_whole_characters() {
        let lanes = [1, 26, 32, 33, 64, 65, 200, 256].map(level_lanes);
        assert_eq!(lanes, [1, 32, 32, 64, 64, 128, 256, 256]);
        assert_eq!([26, 64, 128, 200, 256].map(level_group_threads), [128, 128, 128, 256, 256]);
        assert_eq!([26, 64, 128, 256].map(level_group_characters), [4, 2, 1, 1]);
    }
}
