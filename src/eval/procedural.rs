//! Procedural pose: feet on the ground, two-bone IK and look-at chains, applied to the local
//! pose after layers and before local-to-model, with the maths in model space. CPU only for
//! now: its GPU mirror (`shaders/procedural.wgsl`, written in this file's shape) is still to
//! come, so `FrameJob::run_procedural` runs it and `GpuCrowd` does not.
//!
//! | phase | per character, in this order (each skipped at weight 0) |
//! |---|---|
//! | ground | each foot's goal: its animated sole lift above the ground height, ankle above the sole along the tilted up axis; the pelvis drops by the lowest goal's need (never rises); each leg reaches its goal with the foot tilted toward the normal within its limit |
//! | two-bone | the end reaches the target (softly near full extension), the middle joint bends toward the pole; the end keeps its animated orientation or takes the target's |
//! | look-at | from the chain's first joint to its end, each turns by its share of the angle left between the end's forward axis and the target, within its limit |
//!
//! Angles come from `atan2` of the cross and dot products, never `acos` (imprecise near 1 on
//! some drivers, lavapipe's among them). A joint's model frame is composed bottom-up from its
//! local transforms along its ancestors, so each phase sees the changes of the ones before.
//! Zero-length bones, targets on a joint and unreachable targets turn nothing or turn as far
//! as they can; nothing divides by zero.

use glam::{Mat3, Mat4, Quat, Vec3};
use rayon::prelude::*;

use super::{CHARACTERS_PER_CHUNK, EvalError};
use crate::program::{EndRotation, GroundSetup, LookAtChain, MAX_FEET, ProceduralRig, ProceduralTargets, TwoBoneChain};
use crate::rig::{NO_PARENT, Rig, Transform};

/// Lengths below this, metres (or unit vectors' components), count as zero.
pub const EPSILON_M: f32 = 1e-6;

/// A joint's model-space frame.
#[derive(Clone, Copy, Debug)]
struct ModelFrame {
    matrix: Mat4,
    rotation: Quat,
}

impl ModelFrame {
    const IDENTITY: Self = Self { matrix: Mat4::IDENTITY, rotation: Quat::IDENTITY };

    fn position(&self) -> Vec3 {
        self.matrix.w_axis.truncate()
    }
}

/// `joint`'s model frame, composed from its local transform up through its ancestors
/// (identity for [`NO_PARENT`]).
fn model_frame(parents: &[u16], pose: &[Transform], joint: u16) -> ModelFrame {
    if joint == NO_PARENT {
        return ModelFrame::IDENTITY;
    }
    let local = &pose[joint as usize];
    let mut matrix = local.to_mat4();
    let mut rotation = local.rotation;
    let mut above = parents[joint as usize];
    while above != NO_PARENT {
        let t = &pose[above as usize];
        matrix = t.to_mat4() * matrix;
        rotation = t.rotation * rotation;
        above = parents[above as usize];
    }
    ModelFrame { matrix, rotation: rotation.normalize() }
}

/// A unit vector perpendicular to `v` (which is not zero).
fn perpendicular(v: Vec3) -> Vec3 {
    let helper = if v.x.abs() < 0.9 * v.length() { Vec3::X } else { Vec3::Y };
    v.cross(helper).normalize()
}

/// The shortest rotation taking direction `from` to direction `to` as a unit axis and an angle
/// in [0, π] from `atan2`; angle 0 when either is (nearly) zero, a perpendicular axis when they
/// are opposite.
fn arc(from: Vec3, to: Vec3) -> (Vec3, f32) {
    let (from_len, to_len) = (from.length(), to.length());
    if !(from_len > EPSILON_M && to_len > EPSILON_M) {
        return (Vec3::X, 0.0);
    }
    let cross = from.cross(to);
    let sin = cross.length();
    let angle = sin.atan2(from.dot(to));
    let axis = if sin > EPSILON_M * from_len * to_len { cross / sin } else { perpendicular(from) };
    (axis, angle)
}

/// Turns `joint` (and with it everything under it) by `delta`, a model-space rotation about
/// the joint itself.
fn rotate_joint(parents: &[u16], pose: &mut [Transform], joint: u16, delta: Quat) {
    let parent = model_frame(parents, pose, parents[joint as usize]).rotation;
    let local = &mut pose[joint as usize].rotation;
    *local = (parent.conjugate() * delta * parent * *local).normalize();
}

/// Gives `joint` the model-space orientation `rotation` under its parent as it is now.
fn set_model_rotation(parents: &[u16], pose: &mut [Transform], joint: u16, rotation: Quat) {
    let parent = model_frame(parents, pose, parents[joint as usize]).rotation;
    pose[joint as usize].rotation = (parent.conjugate() * rotation).normalize();
}

/// Moves `joint` (and everything under it) by `offset`, metres in model space, through its
/// parent's inverse linear part (cofactors over the determinant); nothing moves when that
/// part is singular.
fn translate_joint(parents: &[u16], pose: &mut [Transform], joint: u16, offset: Vec3) {
    let m = model_frame(parents, pose, parents[joint as usize]).matrix;
    let (a, b, c) = (m.x_axis.truncate(), m.y_axis.truncate(), m.z_axis.truncate());
    let (bc, ca, ab) = (b.cross(c), c.cross(a), a.cross(b));
    let det = a.dot(bc);
    if !(det.abs() > EPSILON_M) {
        return;
    }
    // The rows of the inverse are the cofactor columns over the determinant.
    let inverse_rows = Mat3::from_cols(bc, ca, ab);
    pose[joint as usize].translation += inverse_rows.transpose() * offset / det;
}

/// Two-bone IK toward `goal` (model space), bending toward `pole` (its part across the
/// root-to-goal line; the animated bend's side when that is zero), the end joint finally given
/// the model orientation `end_rotation`.
fn reach(parents: &[u16], pose: &mut [Transform], chain: &TwoBoneChain, goal: Vec3, pole: Vec3, end_rotation: Quat) {
    let [a, b, c] = chain.joints;
    let pa = model_frame(parents, pose, a).position();
    let pb = model_frame(parents, pose, b).position();
    let pc = model_frame(parents, pose, c).position();
    let (upper, lower) = ((pb - pa).length(), (pc - pb).length());
    let full = upper + lower;
    let to_goal = goal - pa;
    let mut distance = to_goal.length();
    let mut direction = Vec3::Y;
    for candidate in [pb - pa, pc - pa, to_goal] {
        // The last usable direction wins: toward the goal, else the chain's own.
        if candidate.length() > EPSILON_M {
            direction = candidate.normalize();
        }
    }
    // Soft limit: past `start`, the distance approaches full extension exponentially.
    let soft = chain.soft_fraction * full;
    let start = full - soft;
    if soft > EPSILON_M && distance > start {
        distance = start + soft * (1.0 - (-(distance - start) / soft).exp());
    }
    distance = distance.clamp((upper - lower).abs(), full);
    // Where the middle joint goes: `along` on the line to the goal, `across` off it.
    let along = if distance > EPSILON_M {
        ((upper * upper + distance * distance - lower * lower) / (2.0 * distance)).clamp(-upper, upper)
    } else {
        0.0
    };
    let across = ((upper - along) * (upper + along)).max(0.0).sqrt();
    let animated_bend = pb - pa;
    let mut side = perpendicular(direction);
    for candidate in [animated_bend, pole] {
        let off_line = candidate - direction * candidate.dot(direction);
        if off_line.length() > EPSILON_M {
            side = off_line.normalize();
        }
    }
    let middle = pa + direction * along + side * across;
    let end = pa + direction * distance;
    let (axis, angle) = arc(pb - pa, middle - pa);
    rotate_joint(parents, pose, a, Quat::from_axis_angle(axis, angle));
    let pb = model_frame(parents, pose, b).position();
    let pc = model_frame(parents, pose, c).position();
    let (axis, angle) = arc(pc - pb, end - pb);
    rotate_joint(parents, pose, b, Quat::from_axis_angle(axis, angle));
    set_model_rotation(parents, pose, c, end_rotation);
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
    let animated = model_frame(parents, pose, chain.joints[2]);
    let goal = animated.position().lerp(target, weight);
    let end_rotation = match chain.end {
        EndRotation::Animated => animated.rotation,
        EndRotation::Target => animated.rotation.slerp(rotation, weight),
    };
    reach(parents, pose, chain, goal, pole, end_rotation);
}

/// One look-at chain at `weight` (> 0).
pub fn look_at(parents: &[u16], pose: &mut [Transform], chain: &LookAtChain, target: Vec3, weight: f32) {
    let end = chain.joints[chain.joints.len() - 1];
    for ((&joint, &share), &limit) in chain.joints.iter().zip(&chain.shares).zip(&chain.limits_rad) {
        let frame = model_frame(parents, pose, end);
        let (axis, angle) = arc(frame.rotation * chain.forward, target - frame.position());
        let turn = (angle * share).min(limit) * weight;
        if turn > 0.0 {
            rotate_joint(parents, pose, joint, Quat::from_axis_angle(axis, turn));
        }
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
    let mut goals = [Vec3::ZERO; MAX_FEET];
    let mut ends = [Quat::IDENTITY; MAX_FEET];
    let mut drop = 0.0_f32;
    for (f, foot) in setup.feet.iter().enumerate() {
        let ankle = model_frame(parents, pose, foot.leg.joints[2]);
        let p = ankle.position();
        let (axis, angle) = arc(Vec3::Y, normals[f]);
        let tilt = Quat::from_axis_angle(axis, angle.min(foot.max_tilt_rad) * weight);
        let lift = p.y - foot.ankle_height_m;
        let sole = Vec3::new(p.x, heights_m[f] + lift, p.z);
        goals[f] = p.lerp(sole + tilt * Vec3::Y * foot.ankle_height_m, weight);
        ends[f] = tilt * ankle.rotation;
        drop = drop.min(goals[f].y - p.y);
    }
    if drop < 0.0 {
        translate_joint(parents, pose, setup.pelvis, Vec3::Y * drop);
    }
    for (f, foot) in setup.feet.iter().enumerate() {
        reach(parents, pose, &foot.leg, goals[f], Vec3::ZERO, ends[f]);
    }
}

/// The procedural stage for one character, row `row` of `targets`: ground, then two-bone
/// chains, then look-at chains, each only where its weight is above 0. A row whose weights are
/// all 0 is left exactly as it was.
pub fn procedural(
    parents: &[u16],
    setup: &ProceduralRig,
    targets: &ProceduralTargets,
    row: usize,
    pose: &mut [Transform],
) {
    let s = setup.setup();
    if let Some(g) = &s.ground {
        let weight = targets.ground_weight[row];
        if weight > 0.0 {
            let mut heights_m = [0.0; MAX_FEET];
            let mut normals = [Vec3::Y; MAX_FEET];
            for (f, foot) in targets.feet.iter().enumerate() {
                heights_m[f] = foot.height_m[row];
                normals[f] = foot.normal[row];
            }
            ground(parents, pose, g, &heights_m, &normals, weight);
        }
    }
    for (chain, t) in s.two_bone.iter().zip(&targets.two_bone) {
        let weight = t.weight[row];
        if weight > 0.0 {
            two_bone(parents, pose, chain, t.target[row], t.pole[row], t.rotation[row], weight);
        }
    }
    for (chain, t) in s.look_at.iter().zip(&targets.look_at) {
        let weight = t.weight[row];
        if weight > 0.0 {
            look_at(parents, pose, chain, t.target[row], weight);
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
        if self.poses.len() % joints != 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_turns_from_onto_to_and_survives_degenerate_directions() {
        for (from, to) in
            [(Vec3::X, Vec3::Y), (Vec3::new(1.0, 2.0, 3.0), Vec3::new(-2.0, 0.5, 1.0)), (Vec3::Z, -Vec3::Z)]
        {
            let (axis, angle) = arc(from, to);
            let turned = Quat::from_axis_angle(axis, angle) * from.normalize();
            assert!(turned.abs_diff_eq(to.normalize(), 1e-5), "{from} → {to}: {turned}");
        }
        for (from, to) in [(Vec3::ZERO, Vec3::X), (Vec3::X, Vec3::ZERO), (Vec3::Y, Vec3::Y * 3.0)] {
            let (axis, angle) = arc(from, to);
            assert!(axis.is_finite() && angle == 0.0, "{from} → {to}: {axis} {angle}");
        }
    }

    #[test]
    fn translate_joint_moves_in_model_space_under_a_scaled_turned_parent() {
        let parents = [NO_PARENT, 0];
        let mut pose = [
            Transform { translation: Vec3::Y, rotation: Quat::from_rotation_z(0.7), scale: Vec3::new(2.0, 0.5, 1.0) },
            Transform::from_translation(Vec3::X),
        ];
        let before = model_frame(&parents, &pose, 1).position();
        translate_joint(&parents, &mut pose, 1, Vec3::new(0.0, -0.3, 0.1));
        let moved = model_frame(&parents, &pose, 1).position() - before;
        assert!(moved.abs_diff_eq(Vec3::new(0.0, -0.3, 0.1), 1e-6), "{moved}");
    }
}
