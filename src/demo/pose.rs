//! A body pose described by intent (where the pelvis and ankles are, how the arms swing) and its
//! conversion to the rig's local transforms, legs solved by two-bone IK so planted feet stay
//! exactly where they were put.

use glam::{Mat3, Quat, Vec2, Vec3};

use super::rig::{Side, Skeleton};
use crate::rig::Transform;

/// How far a leg on the ground may stretch, as a fraction of thigh + calf: the pelvis is
/// lowered rather than lock the knee, which looks robotic.
const PLANTED_LEG_EXTENSION: f32 = 0.995;
/// A swinging foot's target is pulled towards the hip from this fraction of the leg's length,
/// easing towards [`SWING_LEG_EXTENSION`]: an unplanted foot may give way, the pelvis need not.
const SWING_SOFT_START: f32 = 0.95;
const SWING_LEG_EXTENSION: f32 = 0.999;
/// Width of the blend (metres) over which the pelvis height eases onto the legs' reach limit.
const REACH_BLEND_M: f32 = 0.02;
/// Thumb joints curl this fraction of the fingers' curl.
const THUMB_CURL_RATIO: f32 = 0.4;

/// One arm's local rotations.
#[derive(Clone, Copy, Debug)]
pub(super) struct ArmPose {
    pub clavicle: Quat,
    pub upperarm: Quat,
    pub lowerarm: Quat,
    pub hand: Quat,
}

impl ArmPose {
    /// An arm hanging at the side: `swing_rad` forward (negative: back), `abduct_rad` out from
    /// the body, elbow flexed `elbow_rad` so the forearm comes forward.
    pub fn hanging(sign: f32, swing_rad: f32, abduct_rad: f32, elbow_rad: f32) -> Self {
        let down = Quat::from_rotation_z(-sign * (std::f32::consts::FRAC_PI_2 - abduct_rad));
        Self {
            clavicle: Quat::IDENTITY,
            upperarm: Quat::from_rotation_x(-swing_rad) * down,
            lowerarm: Quat::from_rotation_y(-sign * elbow_rad),
            hand: Quat::IDENTITY,
        }
    }
}

/// One foot: where the ankle (`foot_*` joint) is in model space and how the foot is pitched.
#[derive(Clone, Copy, Debug)]
pub(super) struct FootPose {
    /// Ankle position, model space, metres.
    pub ankle: Vec3,
    /// Model-space rotation of the foot about X, radians; positive lifts the heel.
    pub pitch_rad: f32,
    /// Toes bent up relative to the foot, radians; equal to `pitch_rad` keeps them flat.
    pub toe_bend_rad: f32,
    /// 0 on the ground: the ankle is reached exactly and the pelvis lowered if need be. Above
    /// 0 the foot is in the air and its target is pulled (by this fraction, up to 1) towards
    /// the hip where the leg is too short for it; ramping it up after lift-off avoids a jerk.
    pub give: f32,
}

impl FootPose {
    /// A flat foot with its ankle at `ankle`.
    pub fn flat(ankle: Vec3) -> Self {
        Self { ankle, pitch_rad: 0.0, toe_bend_rad: 0.0, give: 0.0 }
    }
}

/// A whole-body pose by intent; [`BodyPose::write_locals`] turns it into joint transforms.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyPose {
    /// Root motion: the `root` joint's distance along +Z, metres.
    pub root_z_m: f32,
    /// Pelvis joint position, model space, metres.
    pub pelvis: Vec3,
    /// Pelvis rotation, model space.
    pub pelvis_rotation: Quat,
    /// Local rotation of each of the five spine joints.
    pub spine: Quat,
    /// Local rotation of each of the two neck joints.
    pub neck: Quat,
    /// Local rotation of the head.
    pub head: Quat,
    /// Left, right.
    pub arms: [ArmPose; 2],
    /// Left, right.
    pub feet: [FootPose; 2],
    /// Finger curl per joint, radians (fingered rig only).
    pub finger_curl_rad: f32,
}

impl BodyPose {
    /// Lowers the pelvis, smoothly, where a leg could not otherwise reach its planted ankle,
    /// so that IK always reaches and planted feet never slide.
    pub fn fit_pelvis_height(&mut self, sk: &Skeleton) {
        let reach = (sk.thigh_length_m + sk.calf_length_m) * PLANTED_LEG_EXTENSION;
        for (side, foot) in sk.sides.iter().zip(&self.feet).filter(|(_, foot)| foot.give == 0.0) {
            let hip = self.pelvis_rotation * sk.hip_offset(side);
            let w = Vec2::new(self.pelvis.x + hip.x - foot.ankle.x, self.pelvis.z + hip.z - foot.ankle.z).length();
            let limit = foot.ankle.y - hip.y + (reach * reach - w * w).max(0.0).sqrt();
            self.pelvis.y = smooth_min(self.pelvis.y, limit, REACH_BLEND_M);
        }
    }

    /// Writes this pose's local transforms, one per joint, into `frame`.
    pub fn write_locals(&self, sk: &Skeleton, frame: &mut [Transform]) {
        frame.copy_from_slice(sk.rig.rest_pose());
        let root = Vec3::Z * self.root_z_m;
        frame[sk.root].translation = root;
        frame[sk.pelvis] = Transform::from_translation_rotation(self.pelvis - root, self.pelvis_rotation);
        for &j in &sk.spine {
            frame[j].rotation = self.spine;
        }
        for &j in &sk.neck {
            frame[j].rotation = self.neck;
        }
        frame[sk.head].rotation = self.head;
        for ((side, arm), foot) in sk.sides.iter().zip(&self.arms).zip(&self.feet) {
            frame[side.clavicle].rotation = arm.clavicle;
            frame[side.upperarm].rotation = arm.upperarm;
            frame[side.lowerarm].rotation = arm.lowerarm;
            frame[side.hand].rotation = arm.hand;
            self.write_fingers(side, frame);
            self.write_leg(sk, side, foot, frame);
        }
    }

    /// Curls every finger joint towards the palm (the palm faces -Y in the T-pose).
    fn write_fingers(&self, side: &Side, frame: &mut [Transform]) {
        for (i, chain) in side.fingers.iter().enumerate() {
            let ratio = if i == 0 { THUMB_CURL_RATIO } else { 1.0 };
            for &j in chain {
                frame[j].rotation = Quat::from_rotation_z(-side.sign * self.finger_curl_rad * ratio);
            }
        }
    }

    /// Solves the thigh and calf so the ankle lands on `foot.ankle`, then orients the foot.
    fn write_leg(&self, sk: &Skeleton, side: &Side, foot: &FootPose, frame: &mut [Transform]) {
        let hip = self.pelvis + self.pelvis_rotation * sk.hip_offset(side);
        let knee_forward = self.pelvis_rotation * Vec3::Z;
        let leg_m = sk.thigh_length_m + sk.calf_length_m;
        let ankle = foot.ankle.lerp(pull_within_reach(hip, foot.ankle, leg_m), foot.give);
        let (thigh, calf) = two_bone_ik(hip, ankle, knee_forward, sk.thigh_length_m, sk.calf_length_m);
        let foot_rotation = Quat::from_rotation_x(foot.pitch_rad);
        frame[side.thigh].rotation = self.pelvis_rotation.inverse() * thigh;
        frame[side.calf].rotation = thigh.inverse() * calf;
        frame[side.foot].rotation = calf.inverse() * foot_rotation;
        frame[side.toe].rotation = Quat::from_rotation_x(-foot.toe_bend_rad);
    }
}

/// `ankle` moved towards `hip` where it is further than [`SWING_SOFT_START`] of the leg's
/// length, easing (with a continuous slope) towards [`SWING_LEG_EXTENSION`].
fn pull_within_reach(hip: Vec3, ankle: Vec3, leg_m: f32) -> Vec3 {
    let (soft, hard) = (SWING_SOFT_START * leg_m, SWING_LEG_EXTENSION * leg_m);
    let dist = hip.distance(ankle);
    if dist <= soft {
        return ankle;
    }
    let eased = soft + (hard - soft) * (1.0 - (-(dist - soft) / (hard - soft)).exp());
    hip + (ankle - hip) * (eased / dist)
}

/// Model-space rotations of a thigh and calf (both pointing down -Y at rest) that put the ankle
/// at `ankle`, the knee bending towards `pole`. An unreachable target straightens the leg.
fn two_bone_ik(hip: Vec3, ankle: Vec3, pole: Vec3, thigh_m: f32, calf_m: f32) -> (Quat, Quat) {
    let to_ankle = ankle - hip;
    let dist = to_ankle.length().clamp((thigh_m - calf_m).abs() + 1e-3, (thigh_m + calf_m) * (1.0 - 1e-6));
    let axis = to_ankle.normalize_or(Vec3::NEG_Y);
    let bend = (pole - axis * pole.dot(axis)).normalize_or(Vec3::Z);
    // Law of cosines: the angle at the hip between the hip→ankle line and the thigh.
    let cos_hip = ((thigh_m * thigh_m + dist * dist - calf_m * calf_m) / (2.0 * thigh_m * dist)).clamp(-1.0, 1.0);
    let thigh_dir = axis * cos_hip + bend * (1.0 - cos_hip * cos_hip).sqrt();
    let knee = hip + thigh_dir * thigh_m;
    let calf_dir = (hip + axis * dist - knee).normalize_or(axis);
    let knee_axis = bend.cross(axis).normalize_or(Vec3::X);
    (bone_rotation(thigh_dir, knee_axis), bone_rotation(calf_dir, knee_axis))
}

/// The rotation taking a bone along -Y with its knee axis along +X to one along `dir` with its
/// knee axis along `knee_axis` (perpendicular to `dir`).
fn bone_rotation(dir: Vec3, knee_axis: Vec3) -> Quat {
    let up = -dir;
    Quat::from_mat3(&Mat3::from_cols(knee_axis, up, knee_axis.cross(up)))
}

/// Polynomial smooth minimum: never above `min(a, b)`, equal to it once `a` and `b` are more
/// than `k` apart, and smooth in between.
fn smooth_min(a: f32, b: f32, k: f32) -> f32 {
    let h = (k - (a - b).abs()).max(0.0) / k;
    a.min(b) - h * h * k * 0.25
}

/// Cubic ease from 0 to 1 with zero slope at both ends; `x` is clamped to [0, 1].
pub(super) fn smoothstep(x: f32) -> f32 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}
