//! Procedural pose: feet on the ground, two-bone IK and look-at chains, applied to the local
//! pose after layers and before local-to-model, with the maths in model space. Mirrored by
//! `shaders/procedural.wgsl`, written function for function in this file's shape
//! (`throng::gpu::GpuProcedural` runs it alone, `GpuCrowd::set_procedural` in a crowd).
//!
//! | phase | per character, in this order (each skipped at weight 0) |
//! |---|---|
//! | ground | each foot's goal: its animated sole lift above the ground height, ankle above the sole along the tilted up axis; the pelvis drops by the lowest goal's need (never rises); each leg reaches its goal with the foot tilted toward the normal within its limit |
//! | two-bone | the end reaches the target (softly near full extension), the middle joint bends toward the pole; the end keeps its animated orientation or takes the target's |
//! | look-at | from the chain's first joint to its end, each turns by its share of the angle left between the end's forward axis and the target, within its limit |
//!
//! Angles come from `atan2` of the cross and dot products, never `acos` (imprecise near 1 on
//! some drivers, lavapipe's among them), and only where a turn is a share of one: a whole turn
//! (both two-bone turns, a look-at joint taking all that is left) is the half-way quaternion
//! ([`between`]), with no trigonometry; a share's turn takes one `atan` and one `sin_cos`, both
//! the shader's own polynomials ([`atan_positive`], [`sin_cos`]). Each chain walks up the rig
//! once, for the frame above its first joint, stopping where the chain before it stopped when
//! it gets there ([`Known`]: both legs and a spine chain share the walk from the pelvis to the
//! root), and composes its joints' frames down from there
//! once (from the local pose, so each phase sees the changes of the ones before), never a whole
//! model pose; a turn carries the frames below it (`p' = pivot + D(p − pivot)`, `q' = D q`; a
//! look-at chain's end only as its position and forward axis) and changes the joint's local
//! rotation by the turn seen from the joint itself ([`in_frame`]). Lengths are compared with
//! [`EPSILON_M`] squared, so that a square root is taken only where a length is used.
//! Zero-length bones, targets on a joint and unreachable targets turn nothing or turn as far
//! as they can; nothing divides by zero.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use glam::{Quat, Vec3, Vec3A, Vec4};
use rayon::prelude::*;

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

/// A joint's frame in model space (or relative to an ancestor's): composed as
/// `translation * rotation * scale`, as the rig's transforms are. Composing translation,
/// rotation and scale rather than matrices is exact for uniform scales (every game rig's);
/// under a non-uniformly scaled parent with a turned child it drops the shear a matrix would
/// carry.
#[derive(Clone, Copy, Debug)]
struct ModelFrame {
    position: Vec3A,
    rotation: Quat,
    scale: Vec3A,
}

impl ModelFrame {
    const IDENTITY: Self = Self { position: Vec3A::ZERO, rotation: Quat::IDENTITY, scale: Vec3A::ONE };

    fn local(t: &Transform) -> Self {
        Self { position: t.translation.into(), rotation: t.rotation, scale: t.scale.into() }
    }

    /// `below` (a frame relative to this one) in this frame's space.
    fn then(&self, below: &Self) -> Self {
        Self {
            position: self.position + rotate(self.rotation, self.scale * below.position),
            rotation: self.rotation * below.rotation,
            scale: self.scale * below.scale,
        }
    }
}

/// `v` turned by `q` (unit): `v + w t + q.xyz × t` with `t = 2 q.xyz × v`, the shader's
/// `q_rotate`. Two cross products in SSE lanes (`Vec3A`, whose lanes are a `Quat`'s) take about
/// half the instructions of glam's `Quat * Vec3` (two dot products and a cross product across
/// lanes, and the conversions to and from `Vec3`); turning vectors was a third of the stage's.
/// So the stage's vectors are `Vec3A` from its entry points on.
fn rotate(q: Quat, v: Vec3A) -> Vec3A {
    let axis = Vec3A::from_vec4(Vec4::from(q));
    let t = 2.0 * axis.cross(v);
    v + q.w * t + axis.cross(t)
}

/// `joint`'s frame relative to its ancestor `above` (identity when `joint` is `above`; model
/// space when `above` is [`NO_PARENT`]), composed from `joint`'s local transform up to, not
/// including, `above`. A composed rotation is normalised against the products' rounding; a
/// joint right below `above` is its local transform as the pose holds it.
fn frame_below(parents: &[u16], pose: &[Transform], above: u16, joint: u16) -> ModelFrame {
    if joint == above || joint == NO_PARENT {
        return ModelFrame::IDENTITY;
    }
    let mut frame = ModelFrame::local(&pose[joint as usize]);
    let mut j = parents[joint as usize];
    if j == above || j == NO_PARENT {
        return frame;
    }
    while j != above && j != NO_PARENT {
        frame = ModelFrame::local(&pose[j as usize]).then(&frame);
        j = parents[j as usize];
    }
    frame.rotation = frame.rotation.normalize();
    frame
}

/// The model frame of a joint that the walks up the rig so far reached and that nothing has
/// moved since, where the next walk may stop: after a chain, the parent of its first joint (a
/// chain changes its own joints, so only what hangs below its first); before any chain, and
/// after the ground phase moves the pelvis, the root's parent ([`NO_PARENT`], the identity).
/// So both legs and a spine chain walk from the pelvis to the root once between them.
#[derive(Clone, Copy, Debug)]
struct Known {
    joint: u16,
    frame: ModelFrame,
}

impl Known {
    const NONE: Self = Self { joint: NO_PARENT, frame: ModelFrame::IDENTITY };
}

/// `joint`'s model frame (identity for [`NO_PARENT`]), composed from its local transform up to
/// the root or to `known`'s joint, whose frame it takes; normalised as [`frame_below`]'s.
fn model_frame(parents: &[u16], pose: &[Transform], known: &Known, joint: u16) -> ModelFrame {
    if joint == NO_PARENT {
        return ModelFrame::IDENTITY;
    }
    if joint == known.joint {
        return known.frame;
    }
    let mut frame = ModelFrame::local(&pose[joint as usize]);
    let mut j = parents[joint as usize];
    if j == NO_PARENT {
        return frame;
    }
    while j != known.joint && j != NO_PARENT {
        frame = ModelFrame::local(&pose[j as usize]).then(&frame);
        j = parents[j as usize];
    }
    if j != NO_PARENT {
        frame = known.frame.then(&frame);
    }
    frame.rotation = frame.rotation.normalize();
    frame
}

/// A unit vector perpendicular to `v` (which is not zero).
fn perpendicular(v: Vec3A) -> Vec3A {
    let helper = if v.x.abs() < 0.9 * v.length() { Vec3A::X } else { Vec3A::Y };
    v.cross(helper).normalize()
}

/// `atan(x)` for x ≥ 0: Cephes' single-precision `atanf`, reduced to |t| ≤ tan(π/8) around 0,
/// π/4 or π/2, within a few ulp of libm's and inlined where libm's is a call; the shader has
/// the same polynomial, so both evaluators take the same angles.
fn atan_positive(x: f32) -> f32 {
    let (base, t) = if x > 2.414_213_6 {
        (FRAC_PI_2, -1.0 / x)
    } else if x > 0.414_213_57 {
        (FRAC_PI_4, (x - 1.0) / (x + 1.0))
    } else {
        (0.0, x)
    };
    let z = t * t;
    base + (((8.053_744_5e-2 * z - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1) * z * t + t
}

/// `(sin x, cos x)` for |x| below a few turns: Cephes' single-precision `sinf` and `cosf` (x
/// reduced by the nearest multiple of π/2 in three parts, Cody–Waite, then each from its
/// polynomial on [−π/4, π/4]), within a few ulp of libm's and inlined where libm's is a call;
/// the shader has the same polynomials, so both evaluators take the same turns.
fn sin_cos(x: f32) -> (f32, f32) {
    // The nearest integer, ties to even as WGSL's `round`: adding 1.5 × 2²³ leaves no fraction
    // bits (exact for |x| < 2²²), where `f32::round` is a libm call on baseline x86-64.
    const ROUND: f32 = 12_582_912.0;
    let quadrant = (x * (2.0 / PI) + ROUND) - ROUND;
    let r = ((x - quadrant * 1.570_312_5) - quadrant * 4.837_513e-4) - quadrant * 7.549_79e-8;
    let z = r * r;
    let s = ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * r + r;
    let c = ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0;
    match quadrant as i32 & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// `atan2(y, x)` for y ≥ 0 (a length, as every call here has): in [0, π].
fn atan2_positive(y: f32, x: f32) -> f32 {
    if x > 0.0 {
        atan_positive(y / x)
    } else if x < 0.0 {
        PI - atan_positive(y / -x)
    } else if y > 0.0 {
        FRAC_PI_2
    } else {
        0.0
    }
}

/// The shortest rotation taking one direction to another, as [`arc`] finds it.
#[derive(Clone, Copy, Debug)]
struct Arc {
    /// The axis, not normalised: `from × to`, or a unit perpendicular where the two are (nearly)
    /// parallel or opposite.
    axis: Vec3A,
    /// `axis`'s length (not zero).
    axis_len: f32,
    /// The angle, in [0, π].
    angle_rad: f32,
}

impl Arc {
    /// The rotation by `angle_rad` about the arc's axis (all of the arc at its own angle).
    fn turn(&self, angle_rad: f32) -> Quat {
        let (sin, cos) = sin_cos(0.5 * angle_rad);
        Quat::from_vec4((self.axis * (sin / self.axis_len)).extend(cos))
    }
}

/// The shortest rotation taking direction `from` to direction `to`, its angle from
/// [`atan2_positive`]: angle 0 when either is (nearly) zero, a perpendicular axis when they are
/// (nearly) parallel or opposite.
fn arc(from: Vec3A, to: Vec3A) -> Arc {
    let (from_sq, to_sq) = (from.length_squared(), to.length_squared());
    if !(from_sq > EPSILON_SQ_M2 && to_sq > EPSILON_SQ_M2) {
        return Arc { axis: Vec3A::X, axis_len: 1.0, angle_rad: 0.0 };
    }
    let cross = from.cross(to);
    let sin = cross.length();
    let angle_rad = atan2_positive(sin, from.dot(to));
    if sin * sin > EPSILON_SQ_M2 * from_sq * to_sq {
        Arc { axis: cross, axis_len: sin, angle_rad }
    } else {
        Arc { axis: perpendicular(from), axis_len: 1.0, angle_rad }
    }
}

/// The shortest rotation taking direction `from` to direction `to`, as [`arc`] turns, built
/// from the half-way quaternion `[from × to, |from||to| + from·to]` normalised, with no
/// trigonometry: the identity when either is (nearly) zero, a half turn about a perpendicular
/// axis when they are (nearly) opposite.
fn between(from: Vec3A, to: Vec3A) -> Quat {
    let (from_sq, to_sq) = (from.length_squared(), to.length_squared());
    if !(from_sq > EPSILON_SQ_M2 && to_sq > EPSILON_SQ_M2) {
        return Quat::IDENTITY;
    }
    let (cross, dot) = (from.cross(to), from.dot(to));
    let lengths_sq = from_sq * to_sq;
    if cross.length_squared() <= EPSILON_SQ_M2 * lengths_sq && dot < 0.0 {
        return Quat::from_vec4(perpendicular(from).extend(0.0));
    }
    Quat::from_vec4(cross.extend(lengths_sq.sqrt() + dot)).normalize()
}

/// A model-space rotation `delta` about a joint seen from the joint's own space, where `model`
/// is the joint's model rotation: `model⁻¹ · delta · model`, the same turn about the axis taken
/// into that space, so that a joint of local rotation `local` turned by `delta` in model space
/// becomes `local · in_frame(model, delta)`.
fn in_frame(model: Quat, delta: Quat) -> Quat {
    let axis = rotate(model.conjugate(), Vec3A::from_vec4(Vec4::from(delta)));
    Quat::from_vec4(axis.extend(delta.w))
}

/// `frame` and everything carried with it turned by `delta` about `pivot`.
fn carried(frame: &ModelFrame, pivot: Vec3A, delta: Quat) -> ModelFrame {
    ModelFrame { position: pivot + rotate(delta, frame.position - pivot), rotation: delta * frame.rotation, ..*frame }
}

/// Below this angle between two rotations (as 4-vectors), [`slerp`] is a normalised lerp,
/// which differs from the arc by the cube of the angle.
const SLERP_LINEAR_RAD: f32 = 1e-3;

/// Spherical interpolation from `from` to `to` (unit), the shorter way round, with the angle
/// between them from `atan2` of their difference and sum: stable near 0, where glam's `slerp`
/// takes an `acos` that the GPU cannot mirror closely.
fn slerp(from: Quat, to: Quat, t: f32) -> Quat {
    let to = if from.dot(to) < 0.0 { -to } else { to };
    let theta = 2.0 * atan2_positive((from - to).length(), (from + to).length());
    if theta < SLERP_LINEAR_RAD {
        return (from * (1.0 - t) + to * t).normalize();
    }
    (from * sin_cos((1.0 - t) * theta).0 + to * sin_cos(t * theta).0).normalize()
}

/// Moves `joint` (and everything under it) by `offset`, metres in model space, through its
/// parent's rotation and scale; nothing moves under a parent scaled to nothing.
fn translate_joint(parents: &[u16], pose: &mut [Transform], known: &Known, joint: u16, offset: Vec3A) {
    let parent = model_frame(parents, pose, known, parents[joint as usize]);
    if !(parent.scale.abs().min_element() > EPSILON_M) {
        return;
    }
    pose[joint as usize].translation += Vec3::from(rotate(parent.rotation.conjugate(), offset) / parent.scale);
}

/// Two-bone IK: `aim` turns the end joint's animated model frame into the goal (model
/// space) and the end's final model orientation; the middle joint bends toward `pole` (its
/// part across the root-to-goal line; the animated bend's side when that is zero). The chain's
/// frames are composed once and carried through each turn (`p' = pivot + D(p − pivot)`).
fn reach(
    parents: &[u16],
    pose: &mut [Transform],
    known: &mut Known,
    chain: &TwoBoneChain,
    pole: Vec3A,
    aim: impl FnOnce(&ModelFrame) -> (Vec3A, Quat),
) {
    let [a, b, c] = chain.joints;
    let above_a = parents[a as usize];
    *known = Known { joint: above_a, frame: model_frame(parents, pose, known, above_a) };
    let frame_a = known.frame.then(&ModelFrame::local(&pose[a as usize]));
    let frame_b = frame_a.then(&frame_below(parents, pose, a, b));
    let frame_c = frame_b.then(&frame_below(parents, pose, b, c));
    let (goal, end_rotation) = aim(&frame_c);
    let (pa, pb, pc) = (frame_a.position, frame_b.position, frame_c.position);
    let (upper, lower) = ((pb - pa).length(), (pc - pb).length());
    let full = upper + lower;
    let to_goal = goal - pa;
    let raw_distance = to_goal.length();
    // The first usable direction: toward the goal, else the chain's own.
    let direction = [to_goal, pc - pa, pb - pa]
        .into_iter()
        .find(|v| v.length_squared() > EPSILON_SQ_M2)
        .map_or(Vec3A::Y, Vec3A::normalize);
    // How far short of full extension the chain stays. Soft limit: past `start`, the gap
    // shrinks exponentially, computed as such rather than as `full` less a distance, because
    // the middle joint's offset from the line grows as the gap's square root: one rounding of
    // the distance near full extension would move the knee by a third of a millimetre.
    let soft = chain.soft_fraction * full;
    let start = full - soft;
    let gap = if soft > EPSILON_M && raw_distance > start {
        soft * (-(raw_distance - start) / soft).exp()
    } else {
        (full - raw_distance).max(0.0)
    };
    let fold = (upper - lower).abs();
    let (distance, gap) = if full - gap < fold { (fold, full - fold) } else { (full - gap, gap) };
    // Where the middle joint goes: `along` on the line to the goal, `across` off it (Heron's
    // area over the base, each factor vanishing exactly at full extension or fold).
    let (along, across) = if distance > EPSILON_M {
        let along = ((upper * upper + distance * distance - lower * lower) / (2.0 * distance)).clamp(-upper, upper);
        let area = (gap * (full + distance) * (distance - fold) * (distance + fold)).max(0.0);
        (along, area.sqrt() / (2.0 * distance))
    } else {
        (0.0, upper)
    };
    // The first usable side: the pole's part across the line, else the animated bend's.
    let side = [pole, pb - pa]
        .into_iter()
        .map(|v| v - direction * v.dot(direction))
        .find(|v| v.length_squared() > EPSILON_SQ_M2)
        .map_or_else(|| perpendicular(direction), Vec3A::normalize);
    let middle = pa + direction * along + side * across;
    let end = pa + direction * distance;
    // The root turns the middle onto its place; the middle and end follow about the root.
    let root_turn = between(pb - pa, middle - pa);
    let (a, b, c) = (a as usize, b as usize, c as usize);
    let above_c = frame_c.rotation * pose[c].rotation.conjugate();
    pose[a].rotation = (pose[a].rotation * in_frame(frame_a.rotation, root_turn)).normalize();
    let frame_b = carried(&frame_b, pa, root_turn);
    let pc = pa + rotate(root_turn, pc - pa);
    // The middle turns the end onto its place.
    let middle_turn = between(pc - frame_b.position, end - frame_b.position);
    pose[b].rotation = (pose[b].rotation * in_frame(frame_b.rotation, middle_turn)).normalize();
    let above_c = middle_turn * root_turn * above_c;
    pose[c].rotation = (above_c.conjugate() * end_rotation).normalize();
}

/// One two-bone chain at `weight` (> 0): the goal and the end's orientation move from the
/// animated ones toward the target's by the weight.
pub fn two_bone(
    parents: &[u16],
    pose: &mut [Transform],
    chain: &TwoBoneChain,
    target: Vec3,
    pole: Vec3,
    rotation: Quat,
    weight: f32,
) {
    let mut known = Known::NONE;
    reach(parents, pose, &mut known, chain, pole.into(), two_bone_aim(chain, target, rotation, weight));
}

/// [`two_bone`]'s goal and end orientation from the end's animated model frame.
fn two_bone_aim(
    chain: &TwoBoneChain,
    target: Vec3,
    rotation: Quat,
    weight: f32,
) -> impl FnOnce(&ModelFrame) -> (Vec3A, Quat) {
    let target = Vec3A::from(target);
    move |animated| {
        let end_rotation = match chain.end {
            EndRotation::Animated => animated.rotation,
            EndRotation::Target => slerp(animated.rotation, rotation, weight),
        };
        (animated.position.lerp(target, weight), end_rotation)
    }
}

/// One look-at chain at `weight` (> 0). The walk up the rig is done once, for the first
/// joint's parent, and the end's frame is composed once; each joint's frame then comes from
/// the turned one above it through the joints between them alone, and each turn carries the
/// end's position and forward axis with it. A joint that takes all that is left (share and
/// weight 1, no limit below half a turn) turns by [`between`], the others by the angle's share.
pub fn look_at(parents: &[u16], pose: &mut [Transform], chain: &LookAtChain, target: Vec3, weight: f32) {
    let mut known = Known::NONE;
    look_at_after(parents, pose, &mut known, chain, target.into(), weight);
}

/// [`look_at`] from the frame the walks before it know.
fn look_at_after(
    parents: &[u16],
    pose: &mut [Transform],
    known: &mut Known,
    chain: &LookAtChain,
    target: Vec3A,
    weight: f32,
) {
    let first = chain.joints[0];
    let end = chain.joints[chain.joints.len() - 1];
    let above_first = parents[first as usize];
    *known = Known { joint: above_first, frame: model_frame(parents, pose, known, above_first) };
    let mut frame = known.frame.then(&ModelFrame::local(&pose[first as usize]));
    let end_frame = frame.then(&frame_below(parents, pose, first, end));
    let (mut end_position, mut forward) = (end_frame.position, rotate(end_frame.rotation, chain.forward.into()));
    let mut above = first;
    for ((&joint, &share), &limit) in chain.joints.iter().zip(&chain.shares).zip(&chain.limits_rad) {
        if joint != first {
            let parent_joint = parents[joint as usize];
            let parent = if parent_joint == above {
                frame
            } else {
                frame.then(&frame_below(parents, pose, above, parent_joint))
            };
            frame = parent.then(&ModelFrame::local(&pose[joint as usize]));
            above = joint;
        }
        let to = target - end_position;
        let delta = if share == 1.0 && weight == 1.0 && limit >= PI {
            between(forward, to)
        } else {
            let arc = arc(forward, to);
            let turn = (arc.angle_rad * share).min(limit) * weight;
            if turn > 0.0 { arc.turn(turn) } else { continue }
        };
        let local = &mut pose[joint as usize].rotation;
        *local = (*local * in_frame(frame.rotation, delta)).normalize();
        end_position = frame.position + rotate(delta, end_position - frame.position);
        forward = rotate(delta, forward);
        frame.rotation = delta * frame.rotation;
    }
}

/// Feet on the ground at `weight` (> 0), each foot's ground height and normal (unit) given.
pub fn ground(
    parents: &[u16],
    pose: &mut [Transform],
    setup: &GroundSetup,
    heights_m: &[f32],
    normals: &[Vec3],
    weight: f32,
) {
    let mut known = Known::NONE;
    ground_after(parents, pose, &mut known, setup, (heights_m, normals), weight);
}

/// [`ground`] from the frame the walks before it know, each foot's height and normal.
fn ground_after(
    parents: &[u16],
    pose: &mut [Transform],
    known: &mut Known,
    setup: &GroundSetup,
    (heights_m, normals): (&[f32], &[Vec3]),
    weight: f32,
) {
    let mut goals = [Vec3A::ZERO; MAX_FEET];
    let mut ends = [Quat::IDENTITY; MAX_FEET];
    let mut drop = 0.0_f32;
    for (f, foot) in setup.feet.iter().enumerate() {
        let ankle = model_frame(parents, pose, known, foot.leg.joints[2]);
        let p = ankle.position;
        let arc = arc(Vec3A::Y, normals[f].into());
        let tilt = arc.turn(arc.angle_rad.min(foot.max_tilt_rad) * weight);
        let lift = p.y - foot.ankle_height_m;
        let sole = Vec3A::new(p.x, heights_m[f] + lift, p.z);
        goals[f] = p.lerp(sole + rotate(tilt, Vec3A::Y) * foot.ankle_height_m, weight);
        ends[f] = tilt * ankle.rotation;
        drop = drop.min(goals[f].y - p.y);
    }
    if drop < 0.0 {
        translate_joint(parents, pose, known, setup.pelvis, Vec3A::Y * drop);
        *known = Known::NONE;
    }
    for (f, foot) in setup.feet.iter().enumerate() {
        reach(parents, pose, known, &foot.leg, Vec3A::ZERO, |_| (goals[f], ends[f]));
    }
}

/// The procedural stage for one character, row `row` of `targets`: ground, then two-bone
/// chains, then look-at chains, each only where its weight is above 0, each walk up the rig
/// stopping where the last one did ([`Known`]). A row whose weights are all 0 is left exactly
/// as it was.
pub fn procedural(
    parents: &[u16],
    setup: &ProceduralRig,
    targets: &ProceduralTargets,
    row: usize,
    pose: &mut [Transform],
) {
    let s = setup.setup();
    let mut known = Known::NONE;
    if let Some(g) = &s.ground {
        let weight = targets.ground_weight[row];
        if weight > 0.0 {
            let mut heights_m = [0.0; MAX_FEET];
            let mut normals = [Vec3::Y; MAX_FEET];
            for (f, foot) in targets.feet.iter().enumerate() {
                heights_m[f] = foot.height_m[row];
                normals[f] = foot.normal[row];
            }
            ground_after(parents, pose, &mut known, g, (&heights_m, &normals), weight);
        }
    }
    for (chain, t) in s.two_bone.iter().zip(&targets.two_bone) {
        let weight = t.weight[row];
        if weight > 0.0 {
            let aim = two_bone_aim(chain, t.target[row], t.rotation[row], weight);
            reach(parents, pose, &mut known, chain, t.pole[row].into(), aim);
        }
    }
    for (chain, t) in s.look_at.iter().zip(&targets.look_at) {
        let weight = t.weight[row];
        if weight > 0.0 {
            look_at_after(parents, pose, &mut known, chain, t.target[row].into(), weight);
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
    /// ([`ProceduralError::RigMismatch`](crate::program::ProceduralError::RigMismatch)); the
    /// poses a whole number of characters ([`EvalError::PoseCount`]); the targets made for the
    /// setup and that many characters
    /// ([`ProceduralError::TargetsMismatch`](crate::program::ProceduralError::TargetsMismatch)).
    pub fn validate(&self) -> Result<(), EvalError> {
        let joints = self.rig.num_joints();
        if !self.poses.len().is_multiple_of(joints) {
            return Err(EvalError::PoseCount { transforms: self.poses.len(), joints });
        }
        self.targets.validate_for(self.setup, joints, self.poses.len() / joints)?;
        Ok(())
    }

    /// Validates, then runs every character in parallel.
    pub fn run(self) -> Result<(), EvalError> {
        self.validate()?;
        let Self { rig, setup, targets, poses } = self;
        let joints = rig.num_joints();
        poses.par_chunks_mut(joints).enumerate().with_min_len(CHARACTERS_PER_CHUNK).for_each(|(row, pose)| {
            procedural(rig.parents(), setup, targets, row, pose);
        });
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
    /// ([`ProceduralError::UnknownChain`](crate::program::ProceduralError::UnknownChain)), a
    /// parameter column one value per character, a curve's layer below `num_layers`
    /// ([`ProceduralError::BadBinding`](crate::program::ProceduralError::BadBinding)), a curve
    /// some clip has ([`ProceduralError::UnknownCurve`](crate::program::ProceduralError::UnknownCurve)).
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

    #[test]
    fn arc_turns_from_onto_to_and_survives_degenerate_directions() {
        for (from, to) in
            [(Vec3A::X, Vec3A::Y), (Vec3A::new(1.0, 2.0, 3.0), Vec3A::new(-2.0, 0.5, 1.0)), (Vec3A::Z, -Vec3A::Z)]
        {
            let arc = arc(from, to);
            let turned = arc.turn(arc.angle_rad) * from.normalize();
            assert!(turned.abs_diff_eq(to.normalize(), 1e-5), "{from} → {to}: {turned}");
            let half = arc.turn(0.5 * arc.angle_rad);
            assert!((half * half).angle_between(arc.turn(arc.angle_rad)) < 1e-3, "{from} → {to}: half of {arc:?}");
        }
        for (from, to) in [(Vec3A::ZERO, Vec3A::X), (Vec3A::X, Vec3A::ZERO), (Vec3A::Y, Vec3A::Y * 3.0)] {
            let arc = arc(from, to);
            let turn = arc.turn(arc.angle_rad);
            assert!(turn.is_finite() && arc.angle_rad == 0.0 && turn == Quat::IDENTITY, "{from} → {to}: {arc:?}");
        }
    }

    #[test]
    fn between_turns_from_onto_to_as_arc_does_and_survives_degenerate_directions() {
        let cases = [
            (Vec3A::X, Vec3A::Y),
            (Vec3A::new(1.0, 2.0, 3.0), Vec3A::new(-2.0, 0.5, 1.0)),
            (Vec3A::Z, -Vec3A::Z * 2.0),
            (Vec3A::new(0.3, -0.2, 0.9), Vec3A::new(-0.3, 0.2, -0.9)),
        ];
        for (from, to) in cases {
            let q = between(from, to);
            let turned = q * from.normalize();
            assert!(turned.abs_diff_eq(to.normalize(), 1e-5), "{from} → {to}: {turned}");
            let arc = arc(from, to);
            assert!(q.angle_between(arc.turn(arc.angle_rad)) < 1e-3, "{from} → {to}: {q} against the arc");
        }
        for (from, to) in [(Vec3A::ZERO, Vec3A::X), (Vec3A::X, Vec3A::ZERO), (Vec3A::Y, Vec3A::Y * 3.0)] {
            let q = between(from, to);
            assert!(q.is_finite() && q.angle_between(Quat::IDENTITY) < 1e-6, "{from} → {to}: {q}");
        }
    }

    #[test]
    fn rotate_turns_as_glams_quat_does() {
        let quats = [Quat::from_rotation_x(0.3), Quat::from_axis_angle(Vec3::new(1.0, -2.0, 0.5).normalize(), 2.9)];
        for q in quats {
            for v in [Vec3::X, Vec3::new(0.2, -1.5, 3.0), Vec3::ZERO] {
                let (got, want) = (rotate(q, v.into()), q * v);
                assert!(Vec3::from(got).abs_diff_eq(want, 1e-6), "{q} {v}: {got} against {want}");
            }
        }
    }

    #[test]
    fn atan2_positive_is_libms_within_a_few_ulp() {
        for i in 0..=2000 {
            let y = i as f32 * 0.013;
            for x in [-50.0, -3.0, -1.0, -0.4, -1e-3, 0.0, 1e-3, 0.4, 1.0, 3.0, 50.0] {
                let (got, want) = (atan2_positive(y, x), y.atan2(x));
                assert!(
                    (got - want).abs() <= 4.0 * f32::EPSILON * want.abs().max(1.0),
                    "atan2({y}, {x}): {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn sin_cos_is_libms_within_a_few_ulp() {
        for i in -4000..=4000 {
            let x = i as f32 * 0.003_1;
            let ((sin, cos), (want_sin, want_cos)) = (sin_cos(x), x.sin_cos());
            assert!((sin - want_sin).abs() <= 2.0 * f32::EPSILON, "sin({x}): {sin} against {want_sin}");
            assert!((cos - want_cos).abs() <= 2.0 * f32::EPSILON, "cos({x}): {cos} against {want_cos}");
        }
    }

    #[test]
    fn translate_joint_moves_in_model_space_under_a_scaled_turned_parent() {
        let parents = [NO_PARENT, 0];
        let mut pose = [
            Transform { translation: Vec3::Y, rotation: Quat::from_rotation_z(0.7), scale: Vec3::new(2.0, 0.5, 1.0) },
            Transform::from_translation(Vec3::X),
        ];
        let before = model_frame(&parents, &pose, &Known::NONE, 1).position;
        translate_joint(&parents, &mut pose, &Known::NONE, 1, Vec3A::new(0.0, -0.3, 0.1));
        let moved = model_frame(&parents, &pose, &Known::NONE, 1).position - before;
        assert!(moved.abs_diff_eq(Vec3A::new(0.0, -0.3, 0.1), 1e-6), "{moved}");
    }
}
