//! Procedural pose: feet on the ground, two-bone IK and look-at chains, applied to the local
//! pose after layers and before local-to-model, with the maths in model space. Mirrored by
//! `shaders/procedural.wgsl`, one thread a character, written function for function in this
//! file's shape (`throng::gpu::GpuProcedural` runs it alone, `GpuCrowd::set_procedural` in a
//! crowd). The CPU takes four characters at a time, one in each SIMD lane ([`LANES`],
//! [`procedural_lanes`]): each quantity is a `Vec4` of the four characters' values, structure
//! of arrays (`lanes`), every operation lane by lane, so a character's pose comes out with the
//! same bits alone ([`procedural`]) or beside any other three.
//!
//! | phase | per character, in this order (each skipped at weight 0) |
//! |---|---|
//! | ground | each foot's goal: its animated sole lift above the ground height, ankle above the sole along the tilted up axis; the pelvis drops by the lowest goal's need (never rises); each leg reaches its goal with the foot tilted toward the normal within its limit |
//! | two-bone | the end reaches the target (softly near full extension), the middle joint bends toward the pole; the end keeps its animated orientation or takes the target's |
//! | look-at | from the chain's first joint to its end, each turns by its share of the angle left between the end's forward axis and the target, within its limit |
//!
//! A phase runs where any of the four characters' weights is above 0 and writes only those
//! characters' joints; every branch on a character's numbers (a degenerate direction, the soft
//! zone, a whole turn or a share of one) is taken lane by lane, both sides computed where the
//! lanes differ and each lane keeping its own.
//!
//! Angles come from `atan2` of the cross and dot products, never `acos` (imprecise near 1 on
//! some drivers, lavapipe's among them), and only where a turn is a share of one: a whole turn
//! (both two-bone turns, a look-at joint taking all that is left) is the half-way quaternion
//! (`between`), with no trigonometry; a share's turn takes one `atan` and one `sin_cos`, both
//! the shader's own polynomials (`lanes::atan_positive`, `lanes::sin_cos`). Each chain walks
//! the rig once, for the frame above its first joint, composing from the root down, and starts
//! where the chain before it stopped when it passes there (`Known`: both legs and a spine
//! chain share the walk from the root to the pelvis; composed from the root down, a walk gives
//! the same bits wherever it starts, so whether an earlier chain ran changes nothing). A chain
//! composes its joints' frames down from there once (from the local pose, so each phase sees
//! the changes of the ones before), never a whole model pose; a turn carries the frames below
//! it (`p' = pivot + D(p − pivot)`, `q' = D q`; a look-at chain's end only as its position and
//! forward axis) and changes the joint's local rotation by the turn seen from the joint itself
//! (`in_frame`). Lengths are compared with [`EPSILON_M`] squared, so that a square root is
//! taken only where a length is used. Zero-length bones, targets on a joint and unreachable
//! targets turn nothing or turn as far as they can; nothing divides by zero.

mod lanes;

use std::array::from_fn;
use std::f32::consts::PI;

use glam::{BVec4A, Mat4, Quat, Vec3, Vec4};
use rayon::prelude::*;

use self::lanes::{Q4, V3, atan2_positive, select, sin_cos, sqrt};
use super::sample::{CurveBinding, layer_curve};
use super::{CHARACTERS_PER_CHUNK, EvalError};
use crate::clip::Clip;
use crate::program::{
    ChainWeightBinding, ChainWeightInput, ClipSample, EndRotation, GroundSetup, LayerProgram, LookAtChain, MAX_FEET,
    ProceduralError, ProceduralRig, ProceduralTargets, TwoBoneChain,
};
use crate::rig::{NO_PARENT, Rig, Transform};

/// Lengths below this, metres (or unit vectors' components), count as zero.
pub const EPSILON_M: f32 = 1e-6;

/// [`EPSILON_M`] squared, for squared lengths.
const EPSILON_SQ_M2: f32 = EPSILON_M * EPSILON_M;

/// Characters one call of the stage takes at once, one in each SIMD lane
/// ([`procedural_lanes`]).
pub const LANES: usize = 4;

/// Each lane's joint frame in model space (or relative to an ancestor's): composed as
/// `translation * rotation * scale`, as the rig's transforms are. Composing translation,
/// rotation and scale rather than matrices is exact for uniform scales (every game rig's);
/// under a non-uniformly scaled parent with a turned child it drops the shear a matrix would
/// carry.
#[derive(Clone, Copy, Debug)]
struct Frame {
    position: V3,
    rotation: Q4,
    scale: V3,
}

impl Frame {
    const IDENTITY: Self =
        Self { position: V3::ZERO, rotation: Q4::IDENTITY, scale: V3 { x: Vec4::ONE, y: Vec4::ONE, z: Vec4::ONE } };

    /// `below` (a frame relative to this one) in this frame's space.
    #[inline(always)]
    fn then(&self, below: &Self) -> Self {
        Self {
            position: self.position + self.rotation.rotate(self.scale.scaled(below.position)),
            rotation: self.rotation * below.rotation,
            scale: self.scale.scaled(below.scale),
        }
    }

    /// The frame with its rotation normalised against the products' rounding.
    #[inline(always)]
    fn normalized(self) -> Self {
        Self { rotation: self.rotation.normalize(), ..self }
    }
}

/// Lane `k`'s rotation is `q(k)` (four quaternions transposed into the lanes by shuffles).
#[inline(always)]
fn quats(q: impl Fn(usize) -> Quat) -> Q4 {
    let m = Mat4::from_cols(Vec4::from(q(0)), Vec4::from(q(1)), Vec4::from(q(2)), Vec4::from(q(3))).transpose();
    Q4 { x: m.x_axis, y: m.y_axis, z: m.z_axis, w: m.w_axis }
}

/// Lane `k`'s vector is `v(k)` (four vectors transposed into the lanes by shuffles).
#[inline(always)]
fn vectors(v: impl Fn(usize) -> Vec3) -> V3 {
    let m = Mat4::from_cols(v(0).extend(0.0), v(1).extend(0.0), v(2).extend(0.0), v(3).extend(0.0)).transpose();
    V3 { x: m.x_axis, y: m.y_axis, z: m.z_axis }
}

/// A group's local poses, one character a lane. A lane without a pose (an empty slice) reads
/// the first lane's that has one, and nothing is written to it.
struct Poses<'a> {
    poses: [&'a mut [Transform]; LANES],
    /// Per lane, the lane whose pose it reads.
    read: [usize; LANES],
    /// The lanes with a pose.
    present: BVec4A,
}

impl<'a> Poses<'a> {
    /// `None` when no lane has a pose.
    fn new(poses: [&'a mut [Transform]; LANES]) -> Option<Self> {
        let first = poses.iter().position(|p| !p.is_empty())?;
        let read = from_fn(|k| if poses[k].is_empty() { first } else { k });
        let present =
            BVec4A::new(!poses[0].is_empty(), !poses[1].is_empty(), !poses[2].is_empty(), !poses[3].is_empty());
        Some(Self { poses, read, present })
    }

    /// Each lane's transform of `joint`.
    #[inline(always)]
    fn transforms(&self, joint: u16) -> [&Transform; LANES] {
        from_fn(|k| &self.poses[self.read[k]][joint as usize])
    }

    #[inline(always)]
    fn rotation(&self, joint: u16) -> Q4 {
        let t = self.transforms(joint);
        quats(|k| t[k].rotation)
    }

    #[inline(always)]
    fn translation(&self, joint: u16) -> V3 {
        let t = self.transforms(joint);
        vectors(|k| t[k].translation)
    }

    #[inline(always)]
    fn local(&self, joint: u16) -> Frame {
        let t = self.transforms(joint);
        Frame {
            position: vectors(|k| t[k].translation),
            rotation: quats(|k| t[k].rotation),
            scale: vectors(|k| t[k].scale),
        }
    }

    /// Writes `rotation` to `joint` in the lanes of `lanes` that have a pose.
    #[inline(always)]
    fn set_rotation(&mut self, joint: u16, rotation: Q4, lanes: BVec4A) {
        let lanes = (lanes & self.present).bitmask();
        let columns = Mat4::from_cols(rotation.x, rotation.y, rotation.z, rotation.w).transpose();
        for k in 0..LANES {
            if lanes >> k & 1 != 0 {
                self.poses[k][joint as usize].rotation = Quat::from_vec4(columns.col(k));
            }
        }
    }

    /// Writes `translation` to `joint` in the lanes of `lanes` that have a pose.
    #[inline(always)]
    fn set_translation(&mut self, joint: u16, translation: V3, lanes: BVec4A) {
        let lanes = (lanes & self.present).bitmask();
        for k in 0..LANES {
            if lanes >> k & 1 != 0 {
                self.poses[k][joint as usize].translation = translation.lane(k);
            }
        }
    }
}

/// `joint`'s frame relative to its ancestor `above` (identity when `joint` is `above`; model
/// space when `above` is [`NO_PARENT`]), composed from `joint`'s local transform up to, not
/// including, `above`. A composed rotation is normalised against the products' rounding; a
/// joint right below `above` is its local transform as the pose holds it.
#[inline(always)]
fn frame_below(parents: &[u16], poses: &Poses<'_>, above: u16, joint: u16) -> Frame {
    if joint == above || joint == NO_PARENT {
        return Frame::IDENTITY;
    }
    let mut frame = poses.local(joint);
    let mut j = parents[joint as usize];
    if j == above || j == NO_PARENT {
        return frame;
    }
    while j != above && j != NO_PARENT {
        frame = poses.local(j).then(&frame);
        j = parents[j as usize];
    }
    frame.normalized()
}

/// The model frame, as composed from the root down and not normalised, of a joint that the
/// walks so far reached and that nothing has moved since, where the next walk may start: after
/// a chain, the parent of its first joint (a chain changes its own joints, so only what hangs
/// below its first); before any chain, and after the ground phase moves the pelvis, none
/// ([`NO_PARENT`]). So both legs and a spine chain walk from the root to the pelvis once
/// between them.
#[derive(Clone, Copy, Debug)]
struct Known {
    joint: u16,
    frame: Frame,
}

impl Known {
    const NONE: Self = Self { joint: NO_PARENT, frame: Frame::IDENTITY };
}

/// `joint`'s model frame (identity for [`NO_PARENT`]), not normalised, composed from the root
/// down, or from `known`'s joint where that is `joint` or above it. Composed from the top, a
/// frame is the same product whichever known frame it starts from.
#[inline(always)]
fn walk(parents: &[u16], poses: &Poses<'_>, known: &Known, joint: u16) -> Frame {
    let mut start = NO_PARENT;
    let mut j = joint;
    while j != NO_PARENT {
        if j == known.joint {
            start = j;
            break;
        }
        j = parents[j as usize];
    }
    let (mut frame, mut at) = if start == NO_PARENT { (None, NO_PARENT) } else { (Some(known.frame), start) };
    while at != joint {
        // The next joint down toward `joint`.
        let mut next = joint;
        while parents[next as usize] != at {
            next = parents[next as usize];
        }
        let local = poses.local(next);
        frame = Some(frame.map_or(local, |f| f.then(&local)));
        at = next;
    }
    frame.unwrap_or(Frame::IDENTITY)
}

/// A unit vector perpendicular to each lane's `v` (which is not zero).
#[inline(always)]
fn perpendicular(v: V3) -> V3 {
    let helper = V3::select(v.x.abs().cmplt(Vec4::splat(0.9) * sqrt(v.length_squared())), V3::X, V3::Y);
    v.cross(helper).normalize()
}

/// The shortest rotation taking one direction to another, as [`arc`] finds it, per lane.
#[derive(Clone, Copy, Debug)]
struct Arc {
    /// The axis, not normalised: `from × to`, or a unit perpendicular where the two are (nearly)
    /// parallel or opposite.
    axis: V3,
    /// `axis`'s length (not zero).
    axis_len: Vec4,
    /// The angle, in [0, π].
    angle_rad: Vec4,
}

impl Arc {
    /// The rotation by `angle_rad` about the arc's axis (all of the arc at its own angle).
    #[inline(always)]
    fn turn(&self, angle_rad: Vec4) -> Q4 {
        let (sin, cos) = sin_cos(Vec4::splat(0.5) * angle_rad);
        Q4::from_axis(self.axis * (sin / self.axis_len), cos)
    }
}

/// The shortest rotation taking direction `from` to direction `to`, its angle from
/// `atan2_positive`: angle 0 when either is (nearly) zero, a perpendicular axis when they are
/// (nearly) parallel or opposite.
#[inline(always)]
fn arc(from: V3, to: V3) -> Arc {
    let (from_sq, to_sq) = (from.length_squared(), to.length_squared());
    let epsilon = Vec4::splat(EPSILON_SQ_M2);
    let usable = from_sq.cmpgt(epsilon) & to_sq.cmpgt(epsilon);
    let cross = from.cross(to);
    let sin = sqrt(cross.length_squared());
    let angle_rad = atan2_positive(sin, from.dot(to));
    let parallel = usable & !(sin * sin).cmpgt(epsilon * from_sq * to_sq);
    let (axis, axis_len) = if parallel.any() {
        (V3::select(parallel, perpendicular(from), cross), select(parallel, Vec4::ONE, sin))
    } else {
        (cross, sin)
    };
    Arc {
        axis: V3::select(usable, axis, V3::X),
        axis_len: select(usable, axis_len, Vec4::ONE),
        angle_rad: select(usable, angle_rad, Vec4::ZERO),
    }
}

/// The shortest rotation taking direction `from` to direction `to`, as [`arc`] turns, built
/// from the half-way quaternion `[from × to, |from||to| + from·to]` normalised, with no
/// trigonometry: the identity when either is (nearly) zero, a half turn about a perpendicular
/// axis when they are (nearly) opposite.
#[inline(always)]
fn between(from: V3, to: V3) -> Q4 {
    let (from_sq, to_sq) = (from.length_squared(), to.length_squared());
    let epsilon = Vec4::splat(EPSILON_SQ_M2);
    let usable = from_sq.cmpgt(epsilon) & to_sq.cmpgt(epsilon);
    let (cross, dot) = (from.cross(to), from.dot(to));
    let lengths_sq = from_sq * to_sq;
    let half_way = Q4::from_axis(cross, sqrt(lengths_sq) + dot).normalize();
    let opposite = usable & cross.length_squared().cmple(epsilon * lengths_sq) & dot.cmplt(Vec4::ZERO);
    let turn = if opposite.any() {
        Q4::select(opposite, Q4::from_axis(perpendicular(from), Vec4::ZERO), half_way)
    } else {
        half_way
    };
    Q4::select(usable, turn, Q4::IDENTITY)
}

/// A model-space rotation `delta` about a joint seen from the joint's own space, where `model`
/// is the joint's model rotation: `model⁻¹ · delta · model`, the same turn about the axis taken
/// into that space, so that a joint of local rotation `local` turned by `delta` in model space
/// becomes `local · in_frame(model, delta)`.
#[inline(always)]
fn in_frame(model: Q4, delta: Q4) -> Q4 {
    Q4::from_axis(model.conjugate().rotate(delta.axis()), delta.w)
}

/// `frame` and everything carried with it turned by `delta` about `pivot`.
#[inline(always)]
fn carried(frame: &Frame, pivot: V3, delta: Q4) -> Frame {
    Frame { position: pivot + delta.rotate(frame.position - pivot), rotation: delta * frame.rotation, ..*frame }
}

/// Below this angle between two rotations (as 4-vectors), [`slerp`] is a normalised lerp,
/// which differs from the arc by the cube of the angle.
const SLERP_LINEAR_RAD: f32 = 1e-3;

/// Spherical interpolation from `from` to `to` (unit), the shorter way round, with the angle
/// between them from `atan2` of their difference and sum: stable near 0, where glam's `slerp`
/// takes an `acos` that the GPU cannot mirror closely.
#[inline(always)]
fn slerp(from: Q4, to: Q4, t: Vec4) -> Q4 {
    let to = Q4::select(from.dot(to).cmplt(Vec4::ZERO), -to, to);
    let (difference, sum) = (from - to, from + to);
    let theta = Vec4::splat(2.0) * atan2_positive(sqrt(difference.dot(difference)), sqrt(sum.dot(sum)));
    let linear = (from.scale(Vec4::ONE - t) + to.scale(t)).normalize();
    let along = (from.scale(sin_cos((Vec4::ONE - t) * theta).0) + to.scale(sin_cos(t * theta).0)).normalize();
    Q4::select(theta.cmplt(Vec4::splat(SLERP_LINEAR_RAD)), linear, along)
}

/// Moves `joint` (and everything under it) by `offset`, metres in model space, through its
/// parent's rotation and scale, in the lanes of `lanes`; nothing moves under a parent scaled
/// to nothing.
#[inline(always)]
fn translate_joint(parents: &[u16], poses: &mut Poses<'_>, known: &Known, joint: u16, offset: V3, lanes: BVec4A) {
    let parent = walk(parents, poses, known, parents[joint as usize]).normalized();
    let movable = parent.scale.min_abs().cmpgt(Vec4::splat(EPSILON_M));
    let turned = parent.rotation.conjugate().rotate(offset);
    let step = V3 { x: turned.x / parent.scale.x, y: turned.y / parent.scale.y, z: turned.z / parent.scale.z };
    let moved = poses.translation(joint) + step;
    poses.set_translation(joint, moved, lanes & movable);
}

/// Two-bone IK in the lanes of `active`: `aim` turns the end joint's animated model frame into
/// the goal (model space) and the end's final model orientation; the middle joint bends toward
/// `pole` (its part across the root-to-goal line; the animated bend's side when that is zero).
/// The chain's frames are composed once and carried through each turn
/// (`p' = pivot + D(p − pivot)`).
#[inline(always)]
fn reach(
    parents: &[u16],
    poses: &mut Poses<'_>,
    known: &mut Known,
    chain: &TwoBoneChain,
    pole: V3,
    active: BVec4A,
    aim: impl FnOnce(&Frame) -> (V3, Q4),
) {
    let [a, b, c] = chain.joints;
    let above_a = parents[a as usize];
    *known = Known { joint: above_a, frame: walk(parents, poses, known, above_a) };
    let (local_a, local_b, local_c) = (poses.local(a), poses.rotation(b), poses.rotation(c));
    let frame_a = known.frame.normalized().then(&local_a);
    let frame_b = frame_a.then(&frame_below(parents, poses, a, b));
    let frame_c = frame_b.then(&frame_below(parents, poses, b, c));
    let (goal, end_rotation) = aim(&frame_c);
    let (pa, pb, pc) = (frame_a.position, frame_b.position, frame_c.position);
    let (upper, lower) = (sqrt((pb - pa).length_squared()), sqrt((pc - pb).length_squared()));
    let full = upper + lower;
    let to_goal = goal - pa;
    let raw_distance = sqrt(to_goal.length_squared());
    let epsilon_sq = Vec4::splat(EPSILON_SQ_M2);
    let epsilon = Vec4::splat(EPSILON_M);
    // The first usable direction: toward the goal, else the chain's own.
    let direction = {
        let (reach, bend) = (pc - pa, pb - pa);
        let toward_goal = to_goal.length_squared().cmpgt(epsilon_sq);
        let own = V3::select(reach.length_squared().cmpgt(epsilon_sq), reach, bend);
        let direction = V3::select(toward_goal, to_goal, own);
        let usable = direction.length_squared().cmpgt(epsilon_sq);
        V3::select(usable, direction.normalize(), V3::Y)
    };
    // How far short of full extension the chain stays. Soft limit: past `start`, the gap
    // shrinks exponentially, computed as such rather than as `full` less a distance, because
    // the middle joint's offset from the line grows as the gap's square root: one rounding of
    // the distance near full extension would move the knee by a third of a millimetre.
    let soft = Vec4::splat(chain.soft_fraction) * full;
    let start = full - soft;
    let in_soft = active & soft.cmpgt(epsilon) & raw_distance.cmpgt(start);
    let hard_gap = (full - raw_distance).max(Vec4::ZERO);
    let gap = if in_soft.any() {
        let exponent = -(raw_distance - start) / soft;
        let decay = Vec4::from_array(from_fn(|k| if in_soft.test(k) { exponent[k].exp() } else { 0.0 }));
        select(in_soft, soft * decay, hard_gap)
    } else {
        hard_gap
    };
    let fold = (upper - lower).abs();
    let folded = (full - gap).cmplt(fold);
    let (distance, gap) = (select(folded, fold, full - gap), select(folded, full - fold, gap));
    // Where the middle joint goes: `along` on the line to the goal, `across` off it (Heron's
    // area over the base, each factor vanishing exactly at full extension or fold).
    let apart = distance.cmpgt(epsilon);
    let twice = Vec4::splat(2.0) * distance;
    let along = ((upper * upper + distance * distance - lower * lower) / twice).max(-upper).min(upper);
    let area = (gap * (full + distance) * (distance - fold) * (distance + fold)).max(Vec4::ZERO);
    let (along, across) = (select(apart, along, Vec4::ZERO), select(apart, sqrt(area) / twice, upper));
    // The first usable side: the pole's part across the line, else the animated bend's.
    let side = {
        let off_line = |v: V3| v - direction * v.dot(direction);
        let (from_pole, from_bend) = (off_line(pole), off_line(pb - pa));
        let by_pole = from_pole.length_squared().cmpgt(epsilon_sq);
        let by_bend = from_bend.length_squared().cmpgt(epsilon_sq);
        let side = V3::select(by_pole, from_pole, from_bend).normalize();
        let neither = active & !(by_pole | by_bend);
        if neither.any() { V3::select(neither, perpendicular(direction), side) } else { side }
    };
    let middle = pa + direction * along + side * across;
    let end = pa + direction * distance;
    // The root turns the middle onto its place; the middle and end follow about the root.
    let root_turn = between(pb - pa, middle - pa);
    let above_c = frame_c.rotation * local_c.conjugate();
    poses.set_rotation(a, (local_a.rotation * in_frame(frame_a.rotation, root_turn)).normalize(), active);
    let frame_b = carried(&frame_b, pa, root_turn);
    let pc = pa + root_turn.rotate(pc - pa);
    // The middle turns the end onto its place.
    let middle_turn = between(pc - frame_b.position, end - frame_b.position);
    poses.set_rotation(b, (local_b * in_frame(frame_b.rotation, middle_turn)).normalize(), active);
    let above_c = middle_turn * root_turn * above_c;
    poses.set_rotation(c, (above_c.conjugate() * end_rotation).normalize(), active);
}

/// One two-bone chain at `weight` (> 0) on one character: the goal and the end's orientation
/// move from the animated ones toward the target's by the weight.
pub fn two_bone(
    parents: &[u16],
    pose: &mut [Transform],
    chain: &TwoBoneChain,
    target: Vec3,
    pole: Vec3,
    rotation: Quat,
    weight: f32,
) {
    let Some(mut poses) = Poses::new([pose, &mut [], &mut [], &mut []]) else { return };
    let weight = Vec4::new(weight, 0.0, 0.0, 0.0);
    let aim = two_bone_aim(chain, V3::splat(target), quats(|_| rotation), weight);
    let active = weight.cmpgt(Vec4::ZERO);
    let mut known = Known::NONE;
    reach(parents, &mut poses, &mut known, chain, V3::splat(pole), active, aim);
}

/// [`two_bone`]'s goal and end orientation from the end's animated model frame.
#[inline(always)]
fn two_bone_aim(chain: &TwoBoneChain, target: V3, rotation: Q4, weight: Vec4) -> impl FnOnce(&Frame) -> (V3, Q4) {
    move |animated| {
        let end_rotation = match chain.end {
            EndRotation::Animated => animated.rotation,
            EndRotation::Target => slerp(animated.rotation, rotation, weight),
        };
        (animated.position.lerp(target, weight), end_rotation)
    }
}

/// One look-at chain at `weight` (> 0) on one character. The walk up the rig is done once,
/// for the first joint's parent, and the end's frame is composed once; each joint's frame then
/// comes from the turned one above it through the joints between them alone, and each turn
/// carries the end's position and forward axis with it. A joint that takes all that is left
/// (share and weight 1, no limit below half a turn) turns by `between`, the others by the
/// angle's share.
pub fn look_at(parents: &[u16], pose: &mut [Transform], chain: &LookAtChain, target: Vec3, weight: f32) {
    let Some(mut poses) = Poses::new([pose, &mut [], &mut [], &mut []]) else { return };
    let weight = Vec4::new(weight, 0.0, 0.0, 0.0);
    let mut known = Known::NONE;
    look_at_after(parents, &mut poses, &mut known, chain, V3::splat(target), weight);
}

/// [`look_at`] in the lanes, from the frame the walks before it know.
#[inline(always)]
fn look_at_after(
    parents: &[u16],
    poses: &mut Poses<'_>,
    known: &mut Known,
    chain: &LookAtChain,
    target: V3,
    weight: Vec4,
) {
    let first = chain.joints[0];
    let end = chain.joints[chain.joints.len() - 1];
    let above_first = parents[first as usize];
    *known = Known { joint: above_first, frame: walk(parents, poses, known, above_first) };
    let mut frame = known.frame.normalized().then(&poses.local(first));
    let end_frame = frame.then(&frame_below(parents, poses, first, end));
    let (mut end_position, mut forward) = (end_frame.position, end_frame.rotation.rotate(V3::splat(chain.forward)));
    let mut above = first;
    let active = weight.cmpgt(Vec4::ZERO);
    for ((&joint, &share), &limit) in chain.joints.iter().zip(&chain.shares).zip(&chain.limits_rad) {
        if joint != first {
            let parent_joint = parents[joint as usize];
            let parent = if parent_joint == above {
                frame
            } else {
                frame.then(&frame_below(parents, poses, above, parent_joint))
            };
            frame = parent.then(&poses.local(joint));
            above = joint;
        }
        let to = target - end_position;
        // Lanes taking all that is left turn by the half-way quaternion, the others by a share.
        let whole = if share == 1.0 && limit >= PI { active & weight.cmpeq(Vec4::ONE) } else { BVec4A::FALSE };
        let mut delta = if whole.any() { between(forward, to) } else { Q4::IDENTITY };
        let mut turning = whole;
        let sharing = active & !whole;
        if sharing.any() {
            let arc = arc(forward, to);
            let turn = (arc.angle_rad * Vec4::splat(share)).min(Vec4::splat(limit)) * weight;
            let by_share = sharing & turn.cmpgt(Vec4::ZERO);
            if by_share.any() {
                delta = Q4::select(by_share, arc.turn(turn), delta);
                turning |= by_share;
            }
        }
        if !turning.any() {
            continue;
        }
        let local = poses.rotation(joint);
        poses.set_rotation(joint, (local * in_frame(frame.rotation, delta)).normalize(), turning);
        end_position = V3::select(turning, frame.position + delta.rotate(end_position - frame.position), end_position);
        forward = V3::select(turning, delta.rotate(forward), forward);
        frame.rotation = Q4::select(turning, delta * frame.rotation, frame.rotation);
    }
}

/// Feet on the ground at `weight` (> 0) on one character, each foot's ground height and normal
/// (unit) given.
pub fn ground(
    parents: &[u16],
    pose: &mut [Transform],
    setup: &GroundSetup,
    heights_m: &[f32],
    normals: &[Vec3],
    weight: f32,
) {
    let Some(mut poses) = Poses::new([pose, &mut [], &mut [], &mut []]) else { return };
    let heights_m = from_fn(|f| Vec4::splat(heights_m.get(f).copied().unwrap_or(0.0)));
    let normals = from_fn(|f| V3::splat(normals.get(f).copied().unwrap_or(Vec3::Y)));
    let weight = Vec4::new(weight, 0.0, 0.0, 0.0);
    let mut known = Known::NONE;
    ground_after(parents, &mut poses, &mut known, setup, (&heights_m, &normals), weight);
}

/// [`ground`] in the lanes, from the frame the walks before it know, each foot's height and
/// normal.
#[inline(always)]
fn ground_after(
    parents: &[u16],
    poses: &mut Poses<'_>,
    known: &mut Known,
    setup: &GroundSetup,
    (heights_m, normals): (&[Vec4; MAX_FEET], &[V3; MAX_FEET]),
    weight: Vec4,
) {
    let active = weight.cmpgt(Vec4::ZERO);
    let mut goals = [V3::ZERO; MAX_FEET];
    let mut ends = [Q4::IDENTITY; MAX_FEET];
    let mut drop = Vec4::ZERO;
    for (f, foot) in setup.feet.iter().enumerate() {
        let ankle = walk(parents, poses, known, foot.leg.joints[2]).normalized();
        let p = ankle.position;
        let arc = arc(V3::Y, normals[f]);
        let tilt = arc.turn(arc.angle_rad.min(Vec4::splat(foot.max_tilt_rad)) * weight);
        let ankle_height = Vec4::splat(foot.ankle_height_m);
        let sole = V3 { x: p.x, y: heights_m[f] + (p.y - ankle_height), z: p.z };
        goals[f] = p.lerp(sole + tilt.rotate(V3::Y) * ankle_height, weight);
        ends[f] = tilt * ankle.rotation;
        drop = drop.min(goals[f].y - p.y);
    }
    let dropping = active & drop.cmplt(Vec4::ZERO);
    if dropping.any() {
        translate_joint(parents, poses, known, setup.pelvis, V3 { y: drop, ..V3::ZERO }, dropping);
        *known = Known::NONE;
    }
    for (f, foot) in setup.feet.iter().enumerate() {
        reach(parents, poses, known, &foot.leg, V3::ZERO, active, |_| (goals[f], ends[f]));
    }
}

/// The procedural stage for one character, row `row` of `targets`: [`procedural_lanes`] with
/// the character alone in the first lane (the same bits as beside any others).
pub fn procedural(
    parents: &[u16],
    setup: &ProceduralRig,
    targets: &ProceduralTargets,
    row: usize,
    pose: &mut [Transform],
) {
    procedural_lanes(parents, setup, targets, [row, row, row, row], [pose, &mut [], &mut [], &mut []]);
}

/// The procedural stage for up to four characters, one a lane: lane `k`'s pose `poses[k]` (the
/// rig's joints, or empty for a lane without a character), row `rows[k]` of `targets`. Ground,
/// then two-bone chains, then look-at chains, each where any lane's weight is above 0 and
/// written only to those lanes, each walk up the rig starting where the last one stopped
/// (`Known`). A character whose weights are all 0 is left exactly as it was.
pub fn procedural_lanes(
    parents: &[u16],
    setup: &ProceduralRig,
    targets: &ProceduralTargets,
    rows: [usize; LANES],
    poses: [&mut [Transform]; LANES],
) {
    super::with_avx(|| stage(parents, setup, targets, rows, poses));
}

/// [`procedural_lanes`]' phases, inlined into its AVX and baseline builds.
#[inline(always)]
fn stage(
    parents: &[u16],
    setup: &ProceduralRig,
    targets: &ProceduralTargets,
    rows: [usize; LANES],
    poses: [&mut [Transform]; LANES],
) {
    let Some(mut poses) = Poses::new(poses) else { return };
    let present = poses.present;
    // Lanes without a character read 0 (every weight 0: nothing is written to them).
    let column = |values: &[f32]| Vec4::from_array(from_fn(|k| if present.test(k) { values[rows[k]] } else { 0.0 }));
    let points = |values: &[Vec3]| vectors(|k| if present.test(k) { values[rows[k]] } else { Vec3::ZERO });
    let s = setup.setup();
    let mut known = Known::NONE;
    if let Some(g) = &s.ground {
        let weight = column(&targets.ground_weight);
        if weight.cmpgt(Vec4::ZERO).any() {
            let heights_m = from_fn(|f| targets.feet.get(f).map_or(Vec4::ZERO, |foot| column(&foot.height_m)));
            let normals = from_fn(|f| targets.feet.get(f).map_or(V3::Y, |foot| points(&foot.normal)));
            ground_after(parents, &mut poses, &mut known, g, (&heights_m, &normals), weight);
        }
    }
    for (chain, t) in s.two_bone.iter().zip(&targets.two_bone) {
        let weight = column(&t.weight);
        let active = weight.cmpgt(Vec4::ZERO);
        if active.any() {
            let rotation = quats(|k| if present.test(k) { t.rotation[rows[k]] } else { Quat::IDENTITY });
            let aim = two_bone_aim(chain, points(&t.target), rotation, weight);
            reach(parents, &mut poses, &mut known, chain, points(&t.pole), active, aim);
        }
    }
    for (chain, t) in s.look_at.iter().zip(&targets.look_at) {
        let weight = column(&t.weight);
        if weight.cmpgt(Vec4::ZERO).any() {
            look_at_after(parents, &mut poses, &mut known, chain, points(&t.target), weight);
        }
    }
}

/// The stage alone over a crowd's local poses: character `i`'s pose is `poses[i * joints..(i + 1) * joints]`, row `i` of `targets`.
#[derive(Debug)]
pub struct ProceduralJob<'a> {
    /// The rig.
    pub rig: &'a Rig,
    /// The archetype's setup, checked against `rig`.
    pub setup: &'a ProceduralRig,
    /// One row per character.
    pub targets: &'a ProceduralTargets,
    /// Local poses after layers, `characters × joints`, changed in place.
    pub poses: &'a mut [Transform],
}

impl ProceduralJob<'_> {
    /// Checks, in order: the setup made for a rig of this joint count
    /// ([`ProceduralError::RigMismatch`]); the
    /// poses a whole number of characters ([`EvalError::PoseCount`]); the targets made for the
    /// setup and that many characters
    /// ([`ProceduralError::TargetsMismatch`]).
    pub fn validate(&self) -> Result<(), EvalError> {
        let joints = self.rig.num_joints();
        if !self.poses.len().is_multiple_of(joints) {
            return Err(EvalError::PoseCount { transforms: self.poses.len(), joints });
        }
        self.targets.validate_for(self.setup, joints, self.poses.len() / joints)?;
        Ok(())
    }

    /// Validates, then runs every group of [`LANES`] characters (rows `4g` to `4g + 3`) in
    /// parallel.
    pub fn run(self) -> Result<(), EvalError> {
        self.validate()?;
        let Self { rig, setup, targets, poses } = self;
        let joints = rig.num_joints();
        poses.par_chunks_mut(LANES * joints).enumerate().with_min_len(CHARACTERS_PER_CHUNK / LANES).for_each(
            |(group, characters)| {
                let mut each = characters.chunks_mut(joints);
                let poses = from_fn(|_| each.next().unwrap_or_default());
                procedural_lanes(rig.parents(), setup, targets, from_fn(|k| group * LANES + k), poses);
            },
        );
        Ok(())
    }
}

/// The step before the stage that writes the weights a graph binds (`chainWeights`) into
/// `targets`, on the CPU, so that either evaluator then reads them from the targets as if
/// gameplay had set them. Per binding, in order:
///
/// | input | each character's weight |
/// |---|---|
/// | parameter | its value, clamped to [0, 1] (NaN reads 0) |
/// | curve | the clips' curve blended by the weights of the pose its layer shows ([`layer_curve`]), clamped to [0, 1] |
///
/// A later binding of the same chain overwrites an earlier one.
#[derive(Debug)]
pub struct ChainWeightsJob<'a> {
    /// The clip table the samples index.
    pub clips: &'a [Clip],
    /// The crowd's clip samples, as `state::Crowd::samples` holds them.
    pub samples: &'a [ClipSample],
    /// The crowd's layer programs, `characters × num_layers`, as `state::Crowd::programs`
    /// holds them.
    pub programs: &'a [LayerProgram],
    /// Layers per character.
    pub num_layers: usize,
    /// The bindings (`state::Crowd::chain_weight_bindings`).
    pub bindings: &'a [ChainWeightBinding<'a>],
    /// Written: each bound chain's weight column; one row per character.
    pub targets: &'a mut ProceduralTargets,
}

impl ChainWeightsJob<'_> {
    /// Checks, in order: the programs `characters × num_layers` for the targets' characters
    /// ([`EvalError::ProgramCount`]); then per binding, the chain in the targets' setup
    /// ([`ProceduralError::UnknownChain`]), a
    /// parameter column one value per character, a curve's layer below `num_layers`
    /// ([`ProceduralError::BadBinding`]), a curve
    /// some clip has ([`ProceduralError::UnknownCurve`]).
    pub fn validate(&mut self) -> Result<(), EvalError> {
        let characters = self.targets.num_characters();
        if self.programs.len() != characters * self.num_layers {
            return Err(EvalError::ProgramCount {
                programs: self.programs.len(),
                characters,
                layers: self.num_layers,
                context_characters: characters,
            });
        }
        for (binding, b) in self.bindings.iter().enumerate() {
            self.targets.weights_mut(b.part)?;
            match b.input {
                ChainWeightInput::Parameter(values) if values.len() != characters => {
                    let what = format!("a parameter column of {} values for {characters} characters", values.len());
                    return Err(ProceduralError::BadBinding { binding, what }.into());
                }
                ChainWeightInput::Curve { layer, .. } if layer >= self.num_layers => {
                    let what = format!("a curve read on layer {layer} of {}", self.num_layers);
                    return Err(ProceduralError::BadBinding { binding, what }.into());
                }
                ChainWeightInput::Curve { name, .. } if !CurveBinding::new(self.clips, name).is_bound() => {
                    return Err(ProceduralError::UnknownCurve { binding, curve: name.to_owned() }.into());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Validates, then writes every binding's column.
    pub fn run(mut self) -> Result<(), EvalError> {
        self.validate()?;
        let Self { clips, samples, programs, num_layers, bindings, targets } = self;
        for b in bindings {
            let weights = targets.weights_mut(b.part)?;
            match b.input {
                ChainWeightInput::Parameter(values) => {
                    for (w, &v) in weights.iter_mut().zip(values) {
                        *w = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
                    }
                }
                ChainWeightInput::Curve { name, layer } => {
                    let binding = CurveBinding::new(clips, name);
                    layer_curve(clips, samples, programs, num_layers, layer, &binding, weights);
                    for w in weights.iter_mut() {
                        *w = if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lane `k` of `v` as a `Quat`.
    fn lane(q: Q4, k: usize) -> Quat {
        Quat::from_xyzw(q.x[k], q.y[k], q.z[k], q.w[k])
    }

    #[test]
    fn arc_turns_from_onto_to_and_survives_degenerate_directions() {
        let from = [Vec3::X, Vec3::new(1.0, 2.0, 3.0), Vec3::Z, Vec3::new(0.3, -0.2, 0.9)];
        let to = [Vec3::Y, Vec3::new(-2.0, 0.5, 1.0), -Vec3::Z, Vec3::new(0.3, -0.2, 0.9) * 2.0];
        let turns = arc(vectors(|k| from[k]), vectors(|k| to[k]));
        let (whole, half) = (turns.turn(turns.angle_rad), turns.turn(Vec4::splat(0.5) * turns.angle_rad));
        for k in 0..LANES {
            let turned = lane(whole, k) * from[k].normalize();
            assert!(turned.abs_diff_eq(to[k].normalize(), 1e-5), "{} → {}: {turned}", from[k], to[k]);
            let half = lane(half, k);
            assert!((half * half).angle_between(lane(whole, k)) < 1e-3, "{} → {}: half of {turns:?}", from[k], to[k]);
        }
        let (from, to) = ([Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::ZERO], [Vec3::X, Vec3::ZERO, Vec3::Y * 3.0, Vec3::ZERO]);
        let arc = arc(vectors(|k| from[k]), vectors(|k| to[k]));
        let turn = arc.turn(arc.angle_rad);
        for k in 0..LANES {
            assert!(arc.angle_rad[k] == 0.0 && lane(turn, k) == Quat::IDENTITY, "{} → {}: {arc:?}", from[k], to[k]);
        }
    }

    #[test]
    fn between_turns_from_onto_to_as_arc_does_and_survives_degenerate_directions() {
        let from = [Vec3::X, Vec3::new(1.0, 2.0, 3.0), Vec3::Z, Vec3::new(0.3, -0.2, 0.9)];
        let to = [Vec3::Y, Vec3::new(-2.0, 0.5, 1.0), -Vec3::Z * 2.0, Vec3::new(-0.3, 0.2, -0.9)];
        let (from_lanes, to_lanes) = (vectors(|k| from[k]), vectors(|k| to[k]));
        let q = between(from_lanes, to_lanes);
        let arc = arc(from_lanes, to_lanes);
        let whole = arc.turn(arc.angle_rad);
        for k in 0..LANES {
            let turned = lane(q, k) * from[k].normalize();
            assert!(turned.abs_diff_eq(to[k].normalize(), 1e-5), "{} → {}: {turned}", from[k], to[k]);
            assert!(lane(q, k).angle_between(lane(whole, k)) < 1e-3, "{} → {}: against the arc", from[k], to[k]);
        }
        let (from, to) = ([Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::ZERO], [Vec3::X, Vec3::ZERO, Vec3::Y * 3.0, Vec3::ZERO]);
        let q = between(vectors(|k| from[k]), vectors(|k| to[k]));
        for k in 0..LANES {
            let q = lane(q, k);
            assert!(q.is_finite() && q.angle_between(Quat::IDENTITY) < 1e-6, "{} → {}: {q}", from[k], to[k]);
        }
    }

    #[test]
    fn translate_joint_moves_in_model_space_under_a_scaled_turned_parent() {
        let parents = [NO_PARENT, 0];
        let mut pose = [
            Transform { translation: Vec3::Y, rotation: Quat::from_rotation_z(0.7), scale: Vec3::new(2.0, 0.5, 1.0) },
            Transform::from_translation(Vec3::X),
        ];
        let position = |pose: &mut [Transform]| {
            let poses = Poses::new([pose, &mut [], &mut [], &mut []]).expect("a pose");
            walk(&parents, &poses, &Known::NONE, 1).position.lane(0)
        };
        let before = position(&mut pose);
        let mut poses = Poses::new([&mut pose, &mut [], &mut [], &mut []]).expect("a pose");
        let offset = V3::splat(Vec3::new(0.0, -0.3, 0.1));
        translate_joint(&parents, &mut poses, &Known::NONE, 1, offset, BVec4A::TRUE);
        let moved = position(&mut pose) - before;
        assert!(moved.abs_diff_eq(Vec3::new(0.0, -0.3, 0.1), 1e-6), "{moved}");
    }

    #[test]
    fn a_walk_gives_the_same_bits_from_any_known_frame_above() {
        // A chain 0 → 1 → 2 → 3 → 4 with turned, scaled joints.
        let parents = [NO_PARENT, 0, 1, 2, 3];
        let mut pose: Vec<Transform> = (0..5)
            .map(|j| Transform {
                translation: Vec3::new(0.1 * j as f32, 0.37, -0.2),
                rotation: Quat::from_axis_angle(Vec3::new(1.0, j as f32, 0.5).normalize(), 0.3 + 0.41 * j as f32),
                scale: Vec3::splat(1.0 + 0.1 * j as f32),
            })
            .collect();
        let poses = Poses::new([&mut pose, &mut [], &mut [], &mut []]).expect("a pose");
        let bits = |f: Frame| {
            let (p, q) = (f.position.lane(0), lane(f.rotation, 0));
            [p.x, p.y, p.z, q.x, q.y, q.z, q.w].map(f32::to_bits)
        };
        let from_root = bits(walk(&parents, &poses, &Known::NONE, 4));
        for joint in 0..4 {
            let known = Known { joint, frame: walk(&parents, &poses, &Known::NONE, joint) };
            assert_eq!(bits(walk(&parents, &poses, &known, 4)), from_root, "from joint {joint}");
        }
        // A known joint not above the walk's is not used.
        let known = Known { joint: 4, frame: Frame::IDENTITY };
        assert_eq!(bits(walk(&parents, &poses, &known, 3)), bits(walk(&parents, &poses, &Known::NONE, 3)));
    }
}
