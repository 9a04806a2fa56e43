//! The demo clips, generated procedurally: each is a function from time to a [`BodyPose`],
//! sampled at [`SAMPLE_RATE_HZ`].
//!
//! Walk and run author the ankle paths in model space (root motion included) — fixed while a
//! foot is planted, an arc while it swings — and let IK find the legs, so planted feet do not
//! slide. A stance, for each foot, reads:
//!
//! ```text
//! phase (of that foot) 0 ─────────── heel_off ─────────── duty_factor ─────────── 1
//!                      heel strike:    heel lifts: the      toe-off: the foot
//!                      ankle fixed     ball (toe joint)     swings to the next
//!                                      fixed, foot pitches  strike, one stride on
//! ```
//! The left foot strikes at phase 0, the right at 0.5.

use std::f32::consts::{PI, TAU};

use glam::{Quat, Vec3};

use super::pose::{ArmPose, BodyPose, FootPose, smoothstep};
use super::rig::{ANKLE_HEIGHT_M, STAND_PELVIS_HEIGHT_M, Skeleton, TOE_OFFSET};
use super::{Gait, IDLE, JUMP, LEAN, RUN, SAMPLE_RATE_HZ, WALK, WAVE};
use crate::clip::Clip;
use crate::rig::Transform;

/// Length of `idle`, `wave` and `lean`, seconds (one breath).
pub(super) const IDLE_DURATION_S: f32 = 3.0;
/// Length of `jump`, seconds.
pub(super) const JUMP_DURATION_S: f32 = 1.0;
/// Spine roll of `lean`, radians over the five spine joints, towards the character's left.
const LEAN_ROLL_RAD: f32 = 0.35;
/// Waves of the hand per second in `wave`; a whole number of waves fits in the loop.
const WAVE_HZ: f32 = 2.0;
/// Fraction of a swing (or of the jump's flight) over which a lifted foot's target starts to
/// give way to the leg's reach.
const SWING_GIVE_RAMP: f32 = 0.25;
/// Fastest the foot keeps pitching just after toe-off, radians per second.
const MAX_SWING_PITCH_RATE: f32 = 4.0;
/// Gravity for the jump's flight, m/s².
const GRAVITY_MPS2: f32 = 9.81;

/// Authored parameters of a locomotion cycle.
pub(super) struct GaitParams {
    /// The published timing (speed, cycle, duty factor, heel-off).
    pub gait: Gait,
    /// Ankle ahead of the root at heel strike, metres.
    strike_ahead_m: f32,
    /// Half the distance between the feet, metres.
    foot_x_m: f32,
    /// Peak ankle lift during swing, metres.
    lift_m: f32,
    /// Foot pitch at toe-off, radians.
    toe_off_pitch_rad: f32,
    /// Toes-up pitch late in the swing, radians.
    swing_toe_up_rad: f32,
    /// Pelvis height before the legs' reach limit, metres.
    pelvis_height_m: f32,
    /// Pelvis vertical oscillation amplitude (twice per cycle), metres.
    bob_m: f32,
    /// Phase of the pelvis's lowest point: double support when walking, mid-stance when running.
    bob_low_phase: f32,
    /// Pelvis shift over the stance foot, metres.
    sway_m: f32,
    /// Pelvis yaw amplitude (the swing leg's hip comes forward), radians.
    pelvis_yaw_rad: f32,
    /// Pelvis roll amplitude, radians.
    pelvis_roll_rad: f32,
    /// Forward lean of the trunk, radians over the whole spine.
    lean_rad: f32,
    /// Arm swing amplitude, radians either way.
    arm_swing_rad: f32,
    /// Elbow flexion at rest and extra flexion at the forward end of the swing, radians.
    elbow_rad: (f32, f32),
}

/// `walk`: 1.5 m/s at 120 steps a minute.
pub(super) const WALK_GAIT: GaitParams = GaitParams {
    gait: Gait { speed_mps: 1.5, cycle_s: 1.0, duty_factor: 0.56, heel_off: 0.3 },
    strike_ahead_m: 0.27,
    foot_x_m: 0.09,
    lift_m: 0.10,
    toe_off_pitch_rad: 1.1,
    swing_toe_up_rad: 0.35,
    pelvis_height_m: 0.925,
    bob_m: 0.012,
    bob_low_phase: 0.0,
    sway_m: 0.025,
    pelvis_yaw_rad: 0.10,
    pelvis_roll_rad: 0.05,
    lean_rad: 0.05,
    arm_swing_rad: 0.35,
    elbow_rad: (0.25, 0.25),
};

/// `run`: 4 m/s at 180 steps a minute, a flight phase of 20 % twice per cycle.
pub(super) const RUN_GAIT: GaitParams = GaitParams {
    gait: Gait { speed_mps: 4.0, cycle_s: 2.0 / 3.0, duty_factor: 0.3, heel_off: 0.12 },
    strike_ahead_m: 0.32,
    foot_x_m: 0.07,
    lift_m: 0.24,
    toe_off_pitch_rad: 1.3,
    swing_toe_up_rad: 0.3,
    pelvis_height_m: 0.9,
    bob_m: 0.03,
    bob_low_phase: 0.3 * 0.5,
    sway_m: 0.015,
    pelvis_yaw_rad: 0.15,
    pelvis_roll_rad: 0.04,
    lean_rad: 0.22,
    arm_swing_rad: 0.7,
    elbow_rad: (1.4, 0.3),
};

/// Every clip, in the order of [`super::CLIP_NAMES`].
pub(super) fn build_all(sk: &Skeleton) -> Vec<Clip> {
    vec![
        sample(sk, IDLE, IDLE_DURATION_S, true, idle_pose),
        sample(sk, WALK, WALK_GAIT.gait.cycle_s, true, |sk, t| gait_pose(sk, &WALK_GAIT, t)),
        sample(sk, RUN, RUN_GAIT.gait.cycle_s, true, |sk, t| gait_pose(sk, &RUN_GAIT, t)),
        sample(sk, JUMP, JUMP_DURATION_S, false, jump_pose),
        sample(sk, WAVE, IDLE_DURATION_S, true, wave_pose),
        sample(sk, LEAN, IDLE_DURATION_S, true, lean_pose),
    ]
}

/// Samples `pose` at every frame of `duration_s`, both ends included.
fn sample(
    sk: &Skeleton,
    name: &str,
    duration_s: f32,
    looping: bool,
    pose: impl Fn(&Skeleton, f32) -> BodyPose,
) -> Clip {
    let intervals = (duration_s * SAMPLE_RATE_HZ).round() as usize;
    let num_joints = sk.rig.num_joints();
    let mut poses = vec![Transform::IDENTITY; (intervals + 1) * num_joints];
    for (frame, out) in poses.chunks_exact_mut(num_joints).enumerate() {
        let time_s = duration_s * frame as f32 / intervals as f32;
        let mut body = pose(sk, time_s);
        body.fit_pelvis_height(sk);
        body.write_locals(sk, out);
    }
    match Clip::from_poses(name, num_joints, poses, duration_s, looping) {
        Ok(clip) => clip,
        Err(e) => unreachable!("built-in clip {name:?} is well formed by construction: {e}"),
    }
}

/// Standing, breathing once per loop, weight shifting slightly from foot to foot.
fn idle_pose(_sk: &Skeleton, time_s: f32) -> BodyPose {
    let w = TAU * time_s / IDLE_DURATION_S;
    let breath = 0.5 - 0.5 * w.cos();
    let arm = |sign: f32| ArmPose::hanging(sign, 0.05 + 0.02 * (w + sign).sin(), 0.12 + 0.02 * breath, 0.25);
    BodyPose {
        root_z_m: 0.0,
        pelvis: Vec3::new(0.015 * w.sin(), STAND_PELVIS_HEIGHT_M + 0.004 * (2.0 * w).sin(), 0.0),
        pelvis_rotation: Quat::from_rotation_z(0.015 * w.sin()),
        spine: Quat::from_rotation_x(-0.008 * breath) * Quat::from_rotation_z(-0.006 * w.sin()),
        neck: Quat::from_rotation_x(0.01 * (w + 1.0).sin()),
        head: Quat::from_rotation_y(0.06 * w.sin()),
        arms: [arm(1.0), arm(-1.0)],
        feet: [
            FootPose::flat(Vec3::new(0.12, ANKLE_HEIGHT_M, 0.02)),
            FootPose::flat(Vec3::new(-0.12, ANKLE_HEIGHT_M, -0.03)),
        ],
        finger_curl_rad: 0.25,
    }
}

/// `idle` with the right arm raised, the forearm waving side to side above the head.
fn wave_pose(sk: &Skeleton, time_s: f32) -> BodyPose {
    let mut pose = idle_pose(sk, time_s);
    let wave = (TAU * WAVE_HZ * time_s).sin();
    pose.arms[1] = ArmPose {
        clavicle: Quat::from_rotation_z(-0.15),
        upperarm: Quat::from_rotation_x(-0.2) * Quat::from_rotation_z(-1.1),
        lowerarm: Quat::from_rotation_z(-(0.6 + 0.35 * wave)),
        hand: Quat::from_rotation_z(-0.15 * wave),
    };
    pose
}

/// `idle` with the spine rolled to the left: `inverse(idle) * lean` is the same roll on each
/// spine joint at every frame, so it works as an additive delta.
fn lean_pose(sk: &Skeleton, time_s: f32) -> BodyPose {
    let mut pose = idle_pose(sk, time_s);
    pose.spine *= Quat::from_rotation_z(-LEAN_ROLL_RAD / sk.spine.len() as f32);
    pose
}

/// One frame of a walk or run cycle; `time_s` in `[0, cycle_s]`.
fn gait_pose(sk: &Skeleton, g: &GaitParams, time_s: f32) -> BodyPose {
    let phase = time_s / g.gait.cycle_s;
    let stride_m = g.gait.speed_mps * g.gait.cycle_s;
    let root_z_m = g.gait.speed_mps * time_s;
    let cycle = (TAU * phase).cos(); // 1 at left strike, -1 at right strike
    let foot = |sign: f32, strike_phase: f32| {
        let own_phase = (phase - strike_phase).rem_euclid(1.0);
        let root_at_strike_m = (phase - own_phase) * stride_m;
        gait_foot(
            g,
            own_phase,
            Vec3::new(sign * g.foot_x_m, ANKLE_HEIGHT_M, root_at_strike_m + g.strike_ahead_m),
            stride_m,
        )
    };
    let spine_yaw = 1.6 * g.pelvis_yaw_rad * cycle / sk.spine.len() as f32;
    let arm = |sign: f32| {
        let forward = -sign * cycle; // each arm swings with the opposite leg
        ArmPose::hanging(sign, g.arm_swing_rad * forward, 0.12, g.elbow_rad.0 + g.elbow_rad.1 * forward.max(0.0))
    };
    BodyPose {
        root_z_m,
        pelvis: Vec3::new(
            g.sway_m * (TAU * phase).sin(),
            g.pelvis_height_m - g.bob_m * (2.0 * TAU * (phase - g.bob_low_phase)).cos(),
            root_z_m,
        ),
        pelvis_rotation: Quat::from_rotation_y(-g.pelvis_yaw_rad * cycle)
            * Quat::from_rotation_z(g.pelvis_roll_rad * (TAU * phase).sin())
            * Quat::from_rotation_x(0.3 * g.lean_rad),
        spine: Quat::from_rotation_y(spine_yaw) * Quat::from_rotation_x(0.7 * g.lean_rad / sk.spine.len() as f32),
        neck: Quat::from_rotation_y(-0.3 * g.pelvis_yaw_rad * cycle) * Quat::from_rotation_x(-0.4 * g.lean_rad),
        head: Quat::from_rotation_x(-0.2 * g.lean_rad),
        arms: [arm(1.0), arm(-1.0)],
        feet: [foot(1.0, 0.0), foot(-1.0, 0.5)],
        finger_curl_rad: 0.3 + 0.3 * g.lean_rad,
    }
}

/// One foot through its own phase (0 = its heel strike at `strike`, model space).
///
/// The heel rises with an accelerating pitch, so that at toe-off the ankle already moves up and
/// forward; the swing leaves with that velocity (cubic Hermite) and lands with none. The ankle's
/// path is velocity-continuous at both joins, so the leg does not snap straight as the foot
/// leaves the ground.
fn gait_foot(g: &GaitParams, own_phase: f32, strike: Vec3, stride_m: f32) -> FootPose {
    let (heel_off, toe_off) = (g.gait.heel_off, g.gait.duty_factor);
    if own_phase < heel_off {
        return FootPose::flat(strike);
    }
    let toe = strike + TOE_OFFSET;
    // The ball of the foot stays where it landed while the heel rises.
    let pivot_around_toe = |pitch_rad: f32| toe - Quat::from_rotation_x(pitch_rad) * TOE_OFFSET;
    let top_pitch = g.toe_off_pitch_rad;
    if own_phase < toe_off {
        let u = (own_phase - heel_off) / (toe_off - heel_off);
        let pitch_rad = top_pitch * u * u;
        return FootPose { ankle: pivot_around_toe(pitch_rad), pitch_rad, toe_bend_rad: pitch_rad, give: 0.0 };
    }
    let s = (own_phase - toe_off) / (1.0 - toe_off);
    let swing_s = (1.0 - toe_off) * g.gait.cycle_s;
    // d/dt of u² at u = 1, and the ankle's velocity as the foot turns about the ball.
    let pitch_rate = 2.0 * top_pitch / ((toe_off - heel_off) * g.gait.cycle_s);
    let lift_off = pivot_around_toe(top_pitch);
    let lift_off_velocity = Vec3::X.cross(lift_off - toe) * pitch_rate;
    let landing = strike + Vec3::Z * stride_m;
    let [h00, h10, h01, _] = hermite_basis(s);
    // The foot keeps turning after toe-off, but slower than the pivot's last instant, which in a
    // run would swing it past vertical.
    let swing_pitch_rate = pitch_rate.min(MAX_SWING_PITCH_RATE);
    FootPose {
        ankle: lift_off * h00
            + lift_off_velocity * (h10 * swing_s)
            + landing * h01
            + Vec3::Y * (g.lift_m * swing_lift(s)),
        pitch_rad: (top_pitch + swing_pitch_rate * swing_s * s) * (1.0 - smoothstep(s))
            - g.swing_toe_up_rad * (PI * s).sin() * s,
        toe_bend_rad: top_pitch * (1.0 - smoothstep(3.0 * s)),
        give: smoothstep(s / SWING_GIVE_RAMP),
    }
}

/// The ankle's rise through a swing, 0 at both ends with zero slope, peak 1 at a third of the
/// way: the heel comes up early as the knee folds, then the foot reaches forward low.
fn swing_lift(s: f32) -> f32 {
    // s²(1 - s)⁴ peaks at s = 1/3 with the value (1/3)²(2/3)⁴ = 16/729.
    s * s * (1.0 - s).powi(4) * (729.0 / 16.0)
}

/// Jump keys: crouch, push (legs extend), flight, landing absorb, recover; seconds.
const JUMP_PUSH_S: f32 = 0.25;
const JUMP_TAKE_OFF_S: f32 = 0.42;
const JUMP_TOUCH_DOWN_S: f32 = 0.76;
const JUMP_ABSORBED_S: f32 = 0.88;
/// Pelvis heights: standing, deepest crouch, at take-off (legs nearly straight), after landing.
const JUMP_STAND_M: f32 = STAND_PELVIS_HEIGHT_M;
const JUMP_CROUCH_M: f32 = 0.72;
const JUMP_TAKE_OFF_M: f32 = 0.93;
const JUMP_ABSORB_M: f32 = 0.78;
/// Arm swing through the jump (seconds, radians forward): back while crouching, forward and
/// up through the push, settling after landing.
const JUMP_ARM_SWING_KEYS: [(f32, f32); 6] =
    [(0.0, 0.0), (0.2, -0.5), (0.52, 1.4), (0.74, 0.9), (0.94, 0.05), (1.0, 0.0)];

/// The jump's pelvis height, metres, and how far through the flight it is (0 on the ground,
/// in (0, 1) in the air). Hermite pieces join the push and the landing to the ballistic flight
/// with matching velocity, so there is no kink at take-off or touch-down.
fn jump_pelvis_height(time_s: f32) -> (f32, f32) {
    let flight_s = JUMP_TOUCH_DOWN_S - JUMP_TAKE_OFF_S;
    let take_off_mps = 0.5 * GRAVITY_MPS2 * flight_s;
    if time_s < JUMP_PUSH_S {
        (lerp(JUMP_STAND_M, JUMP_CROUCH_M, smoothstep(time_s / JUMP_PUSH_S)), 0.0)
    } else if time_s < JUMP_TAKE_OFF_S {
        let dt = JUMP_TAKE_OFF_S - JUMP_PUSH_S;
        (hermite(JUMP_CROUCH_M, 0.0, JUMP_TAKE_OFF_M, take_off_mps, (time_s - JUMP_PUSH_S) / dt, dt), 0.0)
    } else if time_s < JUMP_TOUCH_DOWN_S {
        let t = time_s - JUMP_TAKE_OFF_S;
        (JUMP_TAKE_OFF_M + take_off_mps * t - 0.5 * GRAVITY_MPS2 * t * t, t / flight_s)
    } else if time_s < JUMP_ABSORBED_S {
        let dt = JUMP_ABSORBED_S - JUMP_TOUCH_DOWN_S;
        (hermite(JUMP_TAKE_OFF_M, -take_off_mps, JUMP_ABSORB_M, 0.0, (time_s - JUMP_TOUCH_DOWN_S) / dt, dt), 0.0)
    } else {
        let s = (time_s - JUMP_ABSORBED_S) / (JUMP_DURATION_S - JUMP_ABSORBED_S);
        (lerp(JUMP_ABSORB_M, JUMP_STAND_M, smoothstep(s)), 0.0)
    }
}

/// A standing vertical jump in place: crouch, take-off, ballistic flight, landing.
fn jump_pose(sk: &Skeleton, time_s: f32) -> BodyPose {
    let (pelvis_y, airborne) = jump_pelvis_height(time_s);
    // How deep the body is bent, 0 standing to 1 in the deepest crouch; the trunk and arms follow.
    let crouch = ((JUMP_STAND_M - pelvis_y) / (JUMP_STAND_M - JUMP_CROUCH_M)).clamp(0.0, 1.0);
    let tuck = (PI * airborne).sin().powi(2);
    let arm_swing = keyframes(&JUMP_ARM_SWING_KEYS, time_s);
    let foot = |x: f32| {
        // In the air the feet rise with the body and tuck up under it.
        let lift = if airborne > 0.0 { pelvis_y - JUMP_TAKE_OFF_M + 0.12 * tuck } else { 0.0 };
        let give = smoothstep(airborne / SWING_GIVE_RAMP);
        FootPose { ankle: Vec3::new(x, ANKLE_HEIGHT_M + lift, 0.0), pitch_rad: 0.5 * tuck, toe_bend_rad: 0.0, give }
    };
    let lean = 0.5 * crouch + 0.2 * tuck;
    BodyPose {
        root_z_m: 0.0,
        pelvis: Vec3::new(0.0, pelvis_y, -0.08 * crouch),
        pelvis_rotation: Quat::from_rotation_x(0.4 * lean),
        spine: Quat::from_rotation_x(0.6 * lean / sk.spine.len() as f32),
        neck: Quat::from_rotation_x(-0.5 * lean),
        head: Quat::from_rotation_x(-0.2 * lean),
        arms: [1.0, -1.0].map(|sign| ArmPose::hanging(sign, arm_swing, 0.15 + 0.3 * tuck, 0.3 + 0.4 * crouch)),
        feet: [foot(0.12), foot(-0.12)],
        finger_curl_rad: 0.25,
    }
}

/// Eases between `(time, value)` keys with zero slope at each key; holds the ends.
fn keyframes(keys: &[(f32, f32)], time_s: f32) -> f32 {
    let next = keys.partition_point(|&(t, _)| t <= time_s);
    match (keys.get(next.wrapping_sub(1)), keys.get(next)) {
        (Some(&(t0, v0)), Some(&(t1, v1))) => lerp(v0, v1, smoothstep((time_s - t0) / (t1 - t0))),
        (Some(&(_, v)), None) | (None, Some(&(_, v))) => v,
        (None, None) => 0.0,
    }
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Cubic Hermite from value `y0` (slope `v0` per second) to `y1` (slope `v1`) over `dt` seconds,
/// `s` in [0, 1].
fn hermite(y0: f32, v0: f32, y1: f32, v1: f32, s: f32, dt: f32) -> f32 {
    let [h00, h10, h01, h11] = hermite_basis(s);
    y0 * h00 + v0 * dt * h10 + y1 * h01 + v1 * dt * h11
}

/// Cubic Hermite weights at `s` of: start value, start slope, end value, end slope.
fn hermite_basis(s: f32) -> [f32; 4] {
    let (s2, s3) = (s * s, s * s * s);
    [2.0 * s3 - 3.0 * s2 + 1.0, s3 - 2.0 * s2 + s, -2.0 * s3 + 3.0 * s2, s3 - s2]
}
