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
//! some drivers, lavapipe's among them). Each chain walks up the rig once, for the frame above
//! its first joint, and carries its joints' frames down from there (from the local pose, so
//! each phase sees the changes of the ones before), never a whole model pose.
//! Zero-length bones, targets on a joint and unreachable targets turn nothing or turn as far
//! as they can; nothing divides by zero.

use glam::{Quat, Vec3};
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

/// A joint's frame in model space (or relative to an ancestor's): composed as
/// `translation * rotation * scale`, as the rig's transforms are. Composing translation,
/// rotation and scale rather than matrices is exact for uniform scales (every game rig's);
/// under a non-uniformly scaled parent with a turned child it drops the shear a matrix would
/// carry.
#[derive(Clone, Copy, Debug)]
struct ModelFrame {
    position: Vec3,
    rotation: Quat,
    scale: Vec3,
}

impl ModelFrame {
    const IDENTITY: Self = Self { position: Vec3::ZERO, rotation: Quat::IDENTITY, scale: Vec3::ONE };

    fn local(t: &Transform) -> Self {
        Self { position: t.translation, rotation: t.rotation, scale: t.scale }
    }

    /// `below` (a frame relative to this one) in this frame's space.
    fn then(&self, below: &Self) -> Self {
        Self {
            position: self.position + self.rotation * (self.scale * below.position),
            rotation: self.rotation * below.rotation,
            scale: self.scale * below.scale,
        }
    }
}

/// `joint`'s frame relative to its ancestor `above` (identity when `joint` is `above`; model
/// space when `above` is [`NO_PARENT`]), composed from `joint`'s local transform up to, not
/// including, `above`.
fn frame_below(parents: &[u16], pose: &[Transform], above: u16, joint: u16) -> ModelFrame {
    let mut frame = ModelFrame::IDENTITY;
    let mut j = joint;
    while j != above && j != NO_PARENT {
        frame = ModelFrame::local(&pose[j as usize]).then(&frame);
        j = parents[j as usize];
    }
    frame.rotation = frame.rotation.normalize();
    frame
}

/// `joint`'s model frame (identity for [`NO_PARENT`]).
fn model_frame(parents: &[u16], pose: &[Transform], joint: u16) -> ModelFrame {
    frame_below(parents, pose, NO_PARENT, joint)
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

/// Below this angle between two rotations (as 4-vectors), [`slerp`] is a normalised lerp,
/// which differs from the arc by the cube of the angle.
const SLERP_LINEAR_RAD: f32 = 1e-3;

/// Spherical interpolation from `from` to `to` (unit), the shorter way round, with the angle
/// between them from `atan2` of their difference and sum: stable near 0, where glam's `slerp`
/// takes an `acos` that the GPU cannot mirror closely.
fn slerp(from: Quat, to: Quat, t: f32) -> Quat {
    let to = if from.dot(to) < 0.0 { -to } else { to };
    let theta = 2.0 * (from - to).length().atan2((from + to).length());
    if theta < SLERP_LINEAR_RAD {
        return (from * (1.0 - t) + to * t).normalize();
    }
    (from * ((1.0 - t) * theta).sin() + to * (t * theta).sin()).normalize()
}

/// The local rotation that turns a joint by `delta` (a model-space rotation about the joint)
/// under a parent of model rotation `parent`.
fn turned(parent: Quat, delta: Quat, local: Quat) -> Quat {
    (parent.conjugate() * delta * parent * local).normalize()
}

/// Moves `joint` (and everything under it) by `offset`, metres in model space, through its
/// parent's rotation and scale; nothing moves under a parent scaled to nothing.
fn translate_joint(parents: &[u16], pose: &mut [Transform], joint: u16, offset: Vec3) {
    let parent = model_frame(parents, pose, parents[joint as usize]);
    if !(parent.scale.abs().min_element() > EPSILON_M) {
        return;
    }
    pose[joint as usize].translation += (parent.rotation.conjugate() * offset) / parent.scale;
}

/// Two-bone IK: `aim` turns the end joint's animated model frame into the goal (model
/// space) and the end's final model orientation; the middle joint bends toward `pole` (its
/// part across the root-to-goal line; the animated bend's side when that is zero). The chain's
/// frames are composed once and carried through each turn (`p' = pivot + D(p − pivot)`).
fn reach(
    parents: &[u16],
    pose: &mut [Transform],
    chain: &TwoBoneChain,
    pole: Vec3,
    aim: impl FnOnce(&ModelFrame) -> (Vec3, Quat),
) {
    let [a, b, c] = chain.joints;
    let above_a = model_frame(parents, pose, parents[a as usize]);
    let frame_a = above_a.then(&ModelFrame::local(&pose[a as usize]));
    let frame_b = frame_a.then(&frame_below(parents, pose, a, b));
    let frame_c = frame_b.then(&frame_below(parents, pose, b, c));
    let (goal, end_rotation) = aim(&frame_c);
    let (pa, pb, pc) = (frame_a.position, frame_b.position, frame_c.position);
    let (upper, lower) = ((pb - pa).length(), (pc - pb).length());
    let full = upper + lower;
    let to_goal = goal - pa;
    let raw_distance = to_goal.length();
    let mut direction = Vec3::Y;
    for candidate in [pb - pa, pc - pa, to_goal] {
        // The last usable direction wins: toward the goal, else the chain's own.
        if candidate.length() > EPSILON_M {
            direction = candidate.normalize();
        }
    }
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
    let mut side = perpendicular(direction);
    for candidate in [pb - pa, pole] {
        let off_line = candidate - direction * candidate.dot(direction);
        if off_line.length() > EPSILON_M {
            side = off_line.normalize();
        }
    }
    let middle = pa + direction * along + side * across;
    let end = pa + direction * distance;
    // The root turns the middle onto its place; the middle and end follow about the root.
    let (axis, angle) = arc(pb - pa, middle - pa);
    let root_turn = Quat::from_axis_angle(axis, angle);
    let (a, b, c) = (a as usize, b as usize, c as usize);
    let above_b = frame_b.rotation * pose[b].rotation.conjugate();
    let above_c = frame_c.rotation * pose[c].rotation.conjugate();
    pose[a].rotation = turned(above_a.rotation, root_turn, pose[a].rotation);
    let (pb, pc) = (pa + root_turn * (pb - pa), pa + root_turn * (pc - pa));
    // The middle turns the end onto its place.
    let (axis, angle) = arc(pc - pb, end - pb);
    let middle_turn = Quat::from_axis_angle(axis, angle);
    pose[b].rotation = turned(root_turn * above_b, middle_turn, pose[b].rotation);
    let above_c = (middle_turn * root_turn * above_c).normalize();
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
    reach(parents, pose, chain, pole, |animated| {
        let end_rotation = match chain.end {
            EndRotation::Animated => animated.rotation,
            EndRotation::Target => slerp(animated.rotation, rotation, weight),
        };
        (animated.position.lerp(target, weight), end_rotation)
    });
}

/// One look-at chain at `weight` (> 0). The walk up the rig is done once, for the first
/// joint's parent; each joint's frame then comes from the one above it, and the end's from the
/// turning joint, through the joints between them alone.
pub fn look_at(parents: &[u16], pose: &mut [Transform], chain: &LookAtChain, target: Vec3, weight: f32) {
    let end = chain.joints[chain.joints.len() - 1];
    let mut above_joint = parents[chain.joints[0] as usize];
    let mut above = model_frame(parents, pose, above_joint);
    for ((&joint, &share), &limit) in chain.joints.iter().zip(&chain.shares).zip(&chain.limits_rad) {
        let parent = above.then(&frame_below(parents, pose, above_joint, parents[joint as usize]));
        let frame = parent.then(&ModelFrame::local(&pose[joint as usize]));
        let end_frame = frame.then(&frame_below(parents, pose, joint, end));
        let (axis, angle) = arc(end_frame.rotation * chain.forward, target - end_frame.position);
        let turn = (angle * share).min(limit) * weight;
        if turn > 0.0 {
            let local = &mut pose[joint as usize].rotation;
            *local = turned(parent.rotation.normalize(), Quat::from_axis_angle(axis, turn), *local);
        }
        (above, above_joint) = (parent, parents[joint as usize]);
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
        let p = ankle.position;
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
        reach(parents, pose, &foot.leg, Vec3::ZERO, |_| (goals[f], ends[f]));
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
        let before = model_frame(&parents, &pose, 1).position;
        translate_joint(&parents, &mut pose, 1, Vec3::new(0.0, -0.3, 0.1));
        let moved = model_frame(&parents, &pose, 1).position - before;
        assert!(moved.abs_diff_eq(Vec3::new(0.0, -0.3, 0.1), 1e-6), "{moved}");
    }
}
