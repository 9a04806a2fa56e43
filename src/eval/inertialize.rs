//! Inertialization: the offset that hides a switch and decays to zero while only the new
//! state is evaluated. Mirrored by the decay, capture and apply functions of
//! `shaders/transition.wgsl`.
//!
//! At a switch, per joint, the offset starts at `x0 = old − new` (translations as vectors,
//! rotations as the rotation vector of `old * inverse(new)`) moving at `v0 = v_old − v_new`,
//! and decays to zero by one of two curves, each applied per component:
//!
//! ```text
//!  x0 ┤╲                         quintic: x(T) = x'(T) = x''(T) = 0, then holds 0
//!     │ ╲___                     spring:  critically damped, x(t) = (x0 + (v0 + y·x0)·t)·e^(−y·t),
//!   0 ┼─────╲______──────► t              y = 2·ln 2 / halflife; never exactly 0
//!     0          T
//! ```

use glam::{Mat4, Quat, Vec3, Vec4};

use crate::rig::Transform;

/// The curve an inertialized offset decays along.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decay {
    /// A quintic reaching zero value, velocity and acceleration at `duration_s`.
    Quintic {
        /// Time to reach zero, seconds; 0 is a cut.
        duration_s: f32,
        /// Bollo's variant: choose the starting acceleration and shorten the duration so the
        /// offset never crosses zero. Without it the starting acceleration is zero (seed 000).
        overshoot_control: bool,
    },
    /// An exactly integrated critically damped spring.
    Spring {
        /// Time for the offset (from rest) to decay by about half, seconds; 0 is a cut.
        halflife_s: f32,
    },
}

/// The shortest quintic evaluated, seconds; shorter ones are cuts (see `quintic_coefficients`).
/// Keep in sync with `MIN_QUINTIC_S` in `shaders/transition.wgsl`.
pub const MIN_QUINTIC_S: f32 = 1e-6;

/// Below this an offset is visually zero: 0.1 mm or 0.1 mrad at a joint.
pub const VISUALLY_ZERO: f32 = 1e-4;

/// The shortest step a switch measures the old and new velocities over, seconds: after a
/// shorter one (0.1 ms, ten times finer than any real frame) it captures none, as after a
/// pause. A velocity is a pose difference divided by the step, so this caps it at 1e4 times
/// the difference. Keep in sync with `MIN_VELOCITY_DT_S` in `shaders/transition.wgsl`.
pub const MIN_VELOCITY_DT_S: f32 = 1e-4;

/// The largest translation offset added to a joint, metres per component: four times
/// 3.2e7 m, the largest translation component a pose holds before any offset (docs/errors.md,
/// "Numeric bounds"), far beyond where a switch between accepted poses starts. What reaches
/// it is the curve's growth: the start velocity times the duration or halflife, neither of
/// them bounded. Keep in sync with `MAX_OFFSET_M` in `shaders/transition.wgsl`.
pub const MAX_OFFSET_M: f32 = 1.28e8;

/// The largest rotation offset added to a joint, radians per rotation vector component: some
/// 1,600 turns, beyond any real offset, and small enough that the vector's squared length
/// never overflows. Keep in sync with `MAX_OFFSET_RAD` in `shaders/transition.wgsl`.
pub const MAX_OFFSET_RAD: f32 = 1e4;

impl Decay {
    /// The offset and its velocity `t_s` seconds after the switch, for one component.
    #[must_use]
    pub fn evaluate(self, x0: f32, v0: f32, t_s: f32) -> (f32, f32) {
        match self {
            Self::Quintic { duration_s, overshoot_control } => quintic(x0, v0, t_s, duration_s, overshoot_control),
            Self::Spring { halflife_s } => spring(x0, v0, t_s, halflife_s),
        }
    }

    /// For curves linear in the start — the seed's quintic and the spring — the weights `(a, b)`
    /// with `x(t) = a·x0 + b·v0`, the same for every component of every joint, so a whole pose
    /// decays with two multiply-adds per component. `None` for Bollo's quintic, whose duration
    /// depends on each component's start.
    #[must_use]
    pub fn basis(self, t_s: f32) -> Option<(f32, f32)> {
        match self {
            Self::Quintic { overshoot_control: true, .. } => None,
            Self::Quintic { duration_s, .. } => {
                if !(duration_s > 0.0) || t_s >= duration_s {
                    return Some((0.0, 0.0));
                }
                let s = t_s.max(0.0) / duration_s;
                let s3 = s * s * s;
                let a = 1.0 + s3 * (-10.0 + s * (15.0 - 6.0 * s));
                let b = duration_s * (s + s3 * (-6.0 + s * (8.0 - 3.0 * s)));
                Some((a, b))
            }
            Self::Spring { halflife_s } => {
                if !(halflife_s > 0.0) {
                    return Some((0.0, 0.0));
                }
                let y = 2.0 * std::f32::consts::LN_2 / halflife_s;
                let t = t_s.max(0.0);
                let e = (-y * t).exp();
                Some((e * (1.0 + y * t), e * t))
            }
        }
    }

    /// Whether an offset that started at `x0`, `v0` still matters `t_s` after the switch: the
    /// quintic is done at its duration; the spring runs until offset and velocity are below
    /// [`VISUALLY_ZERO`], whatever the playback speed.
    #[must_use]
    pub fn is_active(self, x0_max: f32, v0_max: f32, t_s: f32) -> bool {
        match self {
            Self::Quintic { duration_s, .. } => t_s < duration_s,
            Self::Spring { halflife_s } => {
                let (x, v) = spring(x0_max, v0_max, t_s, halflife_s);
                x.abs() > VISUALLY_ZERO || v.abs() > VISUALLY_ZERO * 10.0
            }
        }
    }
}

/// Seed 000's and Bollo's quintic offset at `t_s` for one component: `x(0) = x0`,
/// `x'(0) = v0`, and zero value, velocity and acceleration at the (possibly shortened) end.
/// Returns `(x, x')`.
#[must_use]
pub fn quintic(x0: f32, v0: f32, t_s: f32, duration_s: f32, overshoot_control: bool) -> (f32, f32) {
    let Some((end_s, c)) = quintic_coefficients(x0, v0, duration_s, overshoot_control) else {
        return (0.0, 0.0);
    };
    if t_s >= end_s {
        return (0.0, 0.0);
    }
    let t = t_s.max(0.0);
    let x = c[0] + t * (c[1] + t * (c[2] + t * (c[3] + t * (c[4] + t * c[5]))));
    let v = c[1] + t * (2.0 * c[2] + t * (3.0 * c[3] + t * (4.0 * c[4] + t * 5.0 * c[5])));
    (x, v)
}

/// The quintic's end time and coefficients `c[k]` of `t^k`; `None` when there is nothing to
/// decay or no time to do it in (a cut).
fn quintic_coefficients(x0: f32, v0: f32, duration_s: f32, overshoot_control: bool) -> Option<(f32, [f32; 6])> {
    if !(duration_s > 0.0) || x0 == 0.0 && v0 == 0.0 {
        return None;
    }
    let (mut v0, mut end_s, mut a0) = (v0, duration_s, 0.0);
    if overshoot_control {
        // Bollo, GDC 2018: an offset already heading away from zero starts from rest; one
        // heading towards it arrives no sooner than its velocity allows without crossing.
        if v0 * x0 > 0.0 {
            v0 = 0.0;
        }
        if v0 * x0 < 0.0 {
            end_s = end_s.min(-5.0 * x0 / v0);
        }
        a0 = (-8.0 * v0 * end_s - 20.0 * x0) / (end_s * end_s);
    }
    // A component already racing to zero (a noise-sized offset with a real velocity) may leave
    // a duration whose fifth power underflows: it is spent, a cut. The GPU makes the same test.
    if end_s < MIN_QUINTIC_S {
        return None;
    }
    let t2 = end_s * end_s;
    let t3 = t2 * end_s;
    let t4 = t3 * end_s;
    let t5 = t4 * end_s;
    let c5 = -(a0 * t2 + 6.0 * v0 * end_s + 12.0 * x0) / (2.0 * t5);
    let c4 = (3.0 * a0 * t2 + 16.0 * v0 * end_s + 30.0 * x0) / (2.0 * t4);
    let c3 = -(3.0 * a0 * t2 + 12.0 * v0 * end_s + 20.0 * x0) / (2.0 * t3);
    let c = [x0, v0, a0 * 0.5, c3, c4, c5];
    // A duration so short that its fifth power underflows, or velocities so large that the
    // coefficients overflow, cannot be represented: such a switch is a cut.
    c.iter().all(|v| v.is_finite()).then_some((end_s, c))
}

/// A critically damped spring's offset at `t_s` for one component, integrated exactly.
/// Returns `(x, x')`.
#[must_use]
pub fn spring(x0: f32, v0: f32, t_s: f32, halflife_s: f32) -> (f32, f32) {
    if !(halflife_s > 0.0) {
        return (0.0, 0.0);
    }
    let y = 2.0 * std::f32::consts::LN_2 / halflife_s;
    let j1 = v0 + x0 * y;
    let t = t_s.max(0.0);
    let e = (-y * t).exp();
    // A halflife too short to represent, or an offset fully decayed (where `0 × ∞` lurks in
    // the polynomial for huge times), is zero.
    if !(y.is_finite() && j1.is_finite()) || e == 0.0 {
        return (0.0, 0.0);
    }
    (e * (x0 + j1 * t), e * (v0 - j1 * y * t))
}

/// One joint's offset captured at a switch.
///
/// The GPU keeps it packed into the twelve floats of the joint's memo in the characters'
/// memory (`load_offset` / `store_offset` in `shaders/transition.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct JointOffset {
    /// Translation offset at the switch, metres.
    pub translation: Vec3,
    /// Translation offset velocity, metres per second.
    pub translation_velocity: Vec3,
    /// Rotation offset at the switch, rotation vector (axis × radians).
    pub rotation: Vec3,
    /// Rotation offset velocity, radians per second.
    pub rotation_velocity: Vec3,
}

/// Four joints' offsets, one joint per SIMD lane (joint `4g + l` in lane `l` of group `g`):
/// how the CPU keeps them, so that [`apply`] runs four joints at a time. A rig's last group
/// pads its unused lanes with zero offsets.
/// Rotations come first: most joints never translate (bone lengths), so a group whose
/// translations are all zero is read as its first 96 bytes only (see [`translating_groups`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OffsetLanes {
    /// Rotation offset (rotation vector) x, y, z.
    pub rotation: [Vec4; 3],
    /// Rotation offset velocity x, y, z, radians per second.
    pub rotation_velocity: [Vec4; 3],
    /// Translation offset x, y, z, metres.
    pub translation: [Vec4; 3],
    /// Translation offset velocity x, y, z, metres per second.
    pub translation_velocity: [Vec4; 3],
}

impl OffsetLanes {
    /// Groups a rig of `num_joints` joints needs.
    #[must_use]
    pub const fn groups_for(num_joints: usize) -> usize {
        num_joints.div_ceil(4)
    }

    /// The offset in `lane` (0 to 3).
    #[must_use]
    pub fn get(&self, lane: usize) -> JointOffset {
        let v = |a: &[Vec4; 3]| Vec3::new(a[0][lane], a[1][lane], a[2][lane]);
        JointOffset {
            translation: v(&self.translation),
            translation_velocity: v(&self.translation_velocity),
            rotation: v(&self.rotation),
            rotation_velocity: v(&self.rotation_velocity),
        }
    }

    /// Puts `o` in `lane` (0 to 3).
    pub fn set(&mut self, lane: usize, o: &JointOffset) {
        let put = |a: &mut [Vec4; 3], v: Vec3| {
            for (axis, value) in a.iter_mut().zip(v.to_array()) {
                axis[lane] = value;
            }
        };
        put(&mut self.translation, o.translation);
        put(&mut self.translation_velocity, o.translation_velocity);
        put(&mut self.rotation, o.rotation);
        put(&mut self.rotation_velocity, o.rotation_velocity);
    }
}

/// One bit per group of `groups` (group `g` is bit `g`; a rig has at most 64 groups): the
/// groups with a translation offset or velocity that is not zero.
#[must_use]
pub fn translating_groups(groups: &[OffsetLanes]) -> u64 {
    groups.iter().enumerate().fold(0, |bits, (g, group)| {
        let zero = group.translation.iter().chain(&group.translation_velocity).all(|v| *v == Vec4::ZERO);
        if zero { bits } else { bits | 1 << g }
    })
}

/// The first `num_joints` offsets held in `groups`, joint by joint.
pub fn joint_offsets(groups: &[OffsetLanes], num_joints: usize) -> impl Iterator<Item = JointOffset> + '_ {
    (0..num_joints).map(move |j| groups[j / 4].get(j % 4))
}

/// The rotation vector (axis × angle, angle in [0, π]) of a unit quaternion.
#[must_use]
pub fn quat_to_rotation_vector(q: Quat) -> Vec3 {
    let q = if q.w < 0.0 { -q } else { q };
    let s = q.xyz().length();
    // atan2 stays accurate near the identity, where acos would not (and llvmpipe's acos less so).
    let angle = 2.0 * s.atan2(q.w);
    if s < 1e-8 { q.xyz() * 2.0 } else { q.xyz() * (angle / s) }
}

/// The unit quaternion of a rotation vector. Offsets are mostly small, so below half a radian
/// the half-angle sine and cosine come from their Taylor series (error below 1e-9), which is
/// several times cheaper than `sin_cos`; larger angles take the exact path.
#[must_use]
#[inline]
pub fn rotation_vector_to_quat(v: Vec3) -> Quat {
    let angle2 = v.length_squared();
    if angle2 < 0.25 {
        // h = angle / 2: sin(h) / angle = (1 − h²/6 + h⁴/120 − h⁶/5040) / 2, cos(h) = 1 − h²/2 + h⁴/24 − h⁶/720.
        let h2 = angle2 * 0.25;
        let sinc_half = 0.5 * (1.0 + h2 * (-1.0 / 6.0 + h2 * (1.0 / 120.0 - h2 / 5040.0)));
        let cos_half = 1.0 + h2 * (-0.5 + h2 * (1.0 / 24.0 - h2 / 720.0));
        return Quat::from_xyzw(v.x * sinc_half, v.y * sinc_half, v.z * sinc_half, cos_half);
    }
    let angle = angle2.sqrt();
    Quat::from_axis_angle(v / angle, angle)
}

/// Captures the offsets at a switch. `displayed` and `previous` are the last two displayed
/// local poses, `dt_s` apart; `new` and `new_previous` are the new state's pose now and one
/// `dt_s` earlier.
///
/// The old motion is carried one step forward (constant velocity: the pose it would show now
/// had nothing switched), so the switch frame itself continues the old motion instead of
/// repeating last frame's pose. Then `x0 = carried − new` and `v0 = (x0 − (displayed −
/// new_previous)) / dt`: the old velocity minus the new. A paused character (`dt_s = 0`, or
/// `previous == displayed`) captures zero velocity, and so does a step shorter than
/// [`MIN_VELOCITY_DT_S`].
pub fn capture(
    displayed: &[Transform],
    previous: &[Transform],
    new: &[Transform],
    new_previous: &[Transform],
    dt_s: f32,
    out: &mut [OffsetLanes],
) {
    // A step too short to measure a velocity over captures none, as a pause: divided by a
    // `dt_s` of 1e-34, a finite difference of poses is a finite velocity of 1e38.
    let inv_dt = if dt_s >= MIN_VELOCITY_DT_S { 1.0 / dt_s } else { 0.0 };
    let velocity = |now: Vec3, before: Vec3| (now - before) * inv_dt;
    for j in 0..displayed.len().min(4 * out.len()) {
        let (d, p) = (&displayed[j], &previous[j]);
        let carried = if dt_s > 0.0 {
            Transform {
                translation: d.translation * 2.0 - p.translation,
                rotation: (d.rotation * p.rotation.inverse() * d.rotation).normalize(),
                scale: d.scale,
            }
        } else {
            *d
        };
        let (t_now, r_now) = offset_between(&carried, &new[j]);
        let (t_before, r_before) = offset_between(d, &new_previous[j]);
        let o = JointOffset {
            translation: t_now,
            translation_velocity: velocity(t_now, t_before),
            rotation: r_now,
            rotation_velocity: velocity(r_now, r_before),
        };
        out[j / 4].set(j % 4, &o);
    }
}

/// `(old.t − new.t, rotvec(old.r * inverse(new.r)))`: the offset that turns `new` into `old`.
fn offset_between(old: &Transform, new: &Transform) -> (Vec3, Vec3) {
    (old.translation - new.translation, quat_to_rotation_vector(old.rotation * new.rotation.inverse()))
}

/// Adds the decayed offsets to the new state's pose, `t_s` after the switch. `translating`
/// ([`translating_groups`] at the capture) says which groups have translation offsets; the
/// others' are zero and not read.
///
/// Each decayed component is clamped to [`MAX_OFFSET_M`] or [`MAX_OFFSET_RAD`]: a curve's value
/// is bounded by its start plus the start velocity times its duration or halflife, which no
/// bound caps. Where that product overflows, the curve's value is ±∞ (never NaN: one term
/// overflows, added to finite ones) and the clamp brings it back to the bound.
pub fn apply(offsets: &[OffsetLanes], translating: u64, decay: Decay, t_s: f32, pose: &mut [Transform]) {
    match decay.basis(t_s) {
        Some((a, b)) => {
            let (a, b) = (Vec4::splat(a), Vec4::splat(b));
            for (g, (group, joints)) in offsets.iter().zip(pose.chunks_mut(4)).enumerate() {
                apply_lanes(group, translating >> g & 1 != 0, a, b, joints);
            }
        }
        None => {
            let component = |x0: Vec3, v0: Vec3, limit: f32| -> Vec3 {
                let x = Vec3::new(
                    decay.evaluate(x0.x, v0.x, t_s).0,
                    decay.evaluate(x0.y, v0.y, t_s).0,
                    decay.evaluate(x0.z, v0.z, t_s).0,
                );
                x.clamp(Vec3::splat(-limit), Vec3::splat(limit))
            };
            for (j, p) in pose.iter_mut().enumerate() {
                let Some(o) = offsets.get(j / 4).map(|g| g.get(j % 4)) else { break };
                p.translation += component(o.translation, o.translation_velocity, MAX_OFFSET_M);
                let r = component(o.rotation, o.rotation_velocity, MAX_OFFSET_RAD);
                p.rotation = (rotation_vector_to_quat(r) * p.rotation).normalize();
            }
        }
    }
}

/// [`apply`]'s basis form for up to four joints at once, one per lane: the offset
/// `a·x0 + b·v0` (clamped as in [`apply`]), the rotation vector's quaternion (Taylor series below half a radian, as
/// [`rotation_vector_to_quat`]) and its product with each joint's rotation. This is most of an
/// inertialized frame's extra work over sampling alone; a joint at a time, it cost more than
/// sampling one more clip.
fn apply_lanes(group: &OffsetLanes, translating: bool, a: Vec4, b: Vec4, joints: &mut [Transform]) {
    let mix = |x: &[Vec4; 3], v: &[Vec4; 3], limit: f32| {
        let (lo, hi) = (Vec4::splat(-limit), Vec4::splat(limit));
        [(x[0] * a + v[0] * b).clamp(lo, hi), (x[1] * a + v[1] * b).clamp(lo, hi), (x[2] * a + v[2] * b).clamp(lo, hi)]
    };
    if translating {
        let [tx, ty, tz] = mix(&group.translation, &group.translation_velocity, MAX_OFFSET_M);
        for (l, joint) in joints.iter_mut().enumerate() {
            joint.translation += Vec3::new(tx[l], ty[l], tz[l]);
        }
    }
    let [rx, ry, rz] = mix(&group.rotation, &group.rotation_velocity, MAX_OFFSET_RAD);
    let angle2 = rx * rx + ry * ry + rz * rz;
    let (ex, ey, ez, ew) = if angle2.cmplt(Vec4::splat(0.25)).all() {
        let h2 = angle2 * 0.25;
        let sinc_half = 0.5 * (1.0 + h2 * (-1.0 / 6.0 + h2 * (1.0 / 120.0 - h2 / 5040.0)));
        let cos_half = 1.0 + h2 * (-0.5 + h2 * (1.0 / 24.0 - h2 / 720.0));
        (rx * sinc_half, ry * sinc_half, rz * sinc_half, cos_half)
    } else {
        let q: [Vec4; 4] = std::array::from_fn(|l| Vec4::from(rotation_vector_to_quat(Vec3::new(rx[l], ry[l], rz[l]))));
        let t = Mat4::from_cols(q[0], q[1], q[2], q[3]).transpose();
        (t.x_axis, t.y_axis, t.z_axis, t.w_axis)
    };
    let rotation = |l: usize| joints.get(l).map_or(Vec4::W, |j| Vec4::from(j.rotation));
    let p = Mat4::from_cols(rotation(0), rotation(1), rotation(2), rotation(3)).transpose();
    let (px, py, pz, pw) = (p.x_axis, p.y_axis, p.z_axis, p.w_axis);
    // The Hamilton product e·p, lane by lane (glam's `Quat * Quat`). Unit times unit is unit to
    // rounding, so it is not renormalised.
    let q = Mat4::from_cols(
        ew * px + ex * pw + ey * pz - ez * py,
        ew * py - ex * pz + ey * pw + ez * px,
        ew * pz + ex * py - ey * px + ez * pw,
        ew * pw - ex * px - ey * py - ez * pz,
    )
    .transpose();
    for (l, joint) in joints.iter_mut().enumerate() {
        joint.rotation = Quat::from_vec4(q.col(l));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f32, b: f32, tol: f32) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn quintic_matches_at_both_ends() {
        for overshoot_control in [false, true] {
            let (x0, v0, big_t) = (0.3, -0.2, 0.25);
            let (x, v) = quintic(x0, v0, 0.0, big_t, overshoot_control);
            assert!(close(x, x0, 1e-7) && close(v, v0, 1e-6), "{overshoot_control}: {x} {v}");
            let (end, c) = quintic_coefficients(x0, v0, big_t, overshoot_control).unwrap();
            let value = (0..6).map(|k| c[k] * end.powi(k as i32)).sum::<f32>();
            let velocity = (1..6).map(|k| k as f32 * c[k] * end.powi(k as i32 - 1)).sum::<f32>();
            let acceleration = (2..6).map(|k| (k * (k - 1)) as f32 * c[k] * end.powi(k as i32 - 2)).sum::<f32>();
            assert!(
                value.abs() < 1e-5 && velocity.abs() < 1e-4 && acceleration.abs() < 1e-2,
                "{value} {velocity} {acceleration}"
            );
            if !overshoot_control {
                assert_eq!(c[2], 0.0, "seed 000's version starts with zero acceleration");
            }
            assert_eq!(quintic(x0, v0, big_t + 1.0, big_t, overshoot_control), (0.0, 0.0));
        }
    }

    #[test]
    fn seed_quintic_has_zero_starting_acceleration() {
        // Seed 000's coefficients, written out as in the seed.
        let (x0, v0, big_t) = (0.5f32, 1.5f32, 0.25f32);
        let c3 = -(10.0 * x0 + 6.0 * v0 * big_t) / big_t.powi(3);
        let c4 = (15.0 * x0 + 8.0 * v0 * big_t) / big_t.powi(4);
        let c5 = -(6.0 * x0 + 3.0 * v0 * big_t) / big_t.powi(5);
        for i in 0..=10 {
            let t = big_t * i as f32 / 10.0;
            let seed = x0 + v0 * t + c3 * t.powi(3) + c4 * t.powi(4) + c5 * t.powi(5);
            assert!(close(quintic(x0, v0, t, big_t, false).0, seed, 1e-5), "t = {t}");
        }
    }

    #[test]
    fn spring_matches_closed_form_and_decays() {
        let (x0, v0, h) = (1.0f32, 2.0f32, 0.1f32);
        let y = 2.0 * std::f32::consts::LN_2 / h;
        for i in 0..20 {
            let t = i as f32 * 0.037;
            let expected = (x0 + (v0 + y * x0) * t) * (-y * t).exp();
            assert!(close(spring(x0, v0, t, h).0, expected, 1e-6));
        }
        assert!(spring(1.0, 0.0, 6.0 * h, h).0.abs() < 0.02, "below 2 % after 6 halflives");
        assert_eq!(spring(1.0, 5.0, 0.0, 0.0), (0.0, 0.0), "halflife 0 is a cut");
        assert!(Decay::Spring { halflife_s: h }.is_active(1.0, 0.0, 0.5));
        assert!(!Decay::Spring { halflife_s: h }.is_active(1.0, 0.0, 3.0));
    }

    #[test]
    fn basis_agrees_with_the_scalar_curves() {
        for decay in [Decay::Quintic { duration_s: 0.25, overshoot_control: false }, Decay::Spring { halflife_s: 0.1 }]
        {
            for i in 0..40 {
                let t = i as f32 * 0.01;
                let (a, b) = decay.basis(t).unwrap();
                for (x0, v0) in [(0.3, -1.2), (-0.05, 4.0), (1.0, 0.0)] {
                    let (x, _) = decay.evaluate(x0, v0, t);
                    assert!(close(a * x0 + b * v0, x, 1e-5), "{decay:?} t {t}: {} vs {x}", a * x0 + b * v0);
                }
            }
        }
        assert_eq!(Decay::Quintic { duration_s: 0.25, overshoot_control: true }.basis(0.1), None);
    }

    #[test]
    fn rotation_vectors_round_trip() {
        for v in [
            Vec3::ZERO,
            Vec3::new(0.1, -0.2, 0.3),
            Vec3::new(0.0, 3.0, 0.0),
            Vec3::new(1e-6, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 0.4999),
            Vec3::new(0.3, 0.0, 0.4),
        ] {
            assert!(rotation_vector_to_quat(v).abs_diff_eq(Quat::from_scaled_axis(v), 1e-7), "{v}");
            let back = quat_to_rotation_vector(rotation_vector_to_quat(v));
            assert!(back.abs_diff_eq(v, 1e-5), "{v} → {back}");
        }
    }

    #[test]
    fn capture_then_apply_continues_the_old_pose_at_the_switch() {
        let old = [Transform::from_translation_rotation(Vec3::X, Quat::from_rotation_y(0.8))];
        let new = [Transform::from_translation_rotation(Vec3::Y, Quat::from_rotation_z(-0.4))];
        let mut offsets = [OffsetLanes::default()];
        capture(&old, &old, &new, &new, 1.0 / 60.0, &mut offsets);
        let mut pose = new;
        apply(&offsets, translating_groups(&offsets), Decay::Spring { halflife_s: 0.1 }, 0.0, &mut pose);
        assert!(pose[0].translation.abs_diff_eq(old[0].translation, 1e-6));
        assert!(pose[0].rotation.angle_between(old[0].rotation) < 1e-4);
    }

    /// A switch after a step shorter than `MIN_VELOCITY_DT_S` captures the offset but no
    /// velocity; one at that step measures it.
    #[test]
    fn a_step_too_short_captures_no_velocity() {
        let (before, now) = ([Transform::from_translation(Vec3::ZERO)], [Transform::from_translation(Vec3::X)]);
        let new = [Transform::IDENTITY];
        for (dt_s, velocity) in
            [(1e-34, 0.0), (MIN_VELOCITY_DT_S * 0.5, 0.0), (MIN_VELOCITY_DT_S, 1.0 / MIN_VELOCITY_DT_S)]
        {
            let mut offsets = [OffsetLanes::default()];
            capture(&now, &before, &new, &new, dt_s, &mut offsets);
            let o = offsets[0].get(0);
            assert_eq!(o.translation, Vec3::X * 2.0, "dt {dt_s}: the old motion is carried one step");
            assert_eq!(o.translation_velocity, Vec3::X * velocity, "dt {dt_s}");
        }
    }

    /// Whatever the start velocity and the duration or halflife, each applied offset
    /// component is within `MAX_OFFSET_M` (translation) and `MAX_OFFSET_RAD` (rotation), by
    /// the basis form (seed quintic, spring) and the scalar one (Bollo's quintic) alike, also
    /// where the curve's value overflows to infinity.
    #[test]
    fn applied_offsets_stay_within_their_bound() {
        let o = JointOffset {
            translation: Vec3::new(1.0, -1.0, 0.0),
            translation_velocity: Vec3::new(1e30, -3e38, 0.0),
            rotation: Vec3::new(0.5, 0.0, 0.0),
            rotation_velocity: Vec3::new(0.0, -1e30, 3e38),
        };
        let mut offsets = [OffsetLanes::default()];
        offsets[0].set(0, &o);
        let decays = [
            Decay::Spring { halflife_s: 1e28 },
            Decay::Quintic { duration_s: 1e18, overshoot_control: false },
            Decay::Quintic { duration_s: 1e18, overshoot_control: true },
        ];
        for decay in decays {
            for t_s in [1.0, 1e15] {
                let mut pose = [Transform::IDENTITY];
                apply(&offsets, translating_groups(&offsets), decay, t_s, &mut pose);
                let p = pose[0];
                assert!(p.translation.is_finite() && p.rotation.is_finite(), "{decay:?} at {t_s}: {p:?}");
                assert!(p.translation.abs().max_element() <= MAX_OFFSET_M, "{decay:?} at {t_s}: {p:?}");
                assert!(p.rotation.is_normalized(), "{decay:?} at {t_s}: {p:?}");
            }
        }
        let mut pose = [Transform::IDENTITY];
        apply(&offsets, translating_groups(&offsets), decays[0], 1e15, &mut pose);
        assert_eq!(
            pose[0].translation,
            Vec3::new(MAX_OFFSET_M, -MAX_OFFSET_M, 0.0),
            "the spring's offset held at the bound"
        );
        let r = rotation_vector_to_quat(Vec3::new(0.5, -MAX_OFFSET_RAD, MAX_OFFSET_RAD));
        assert!(pose[0].rotation.abs_diff_eq(r, 1e-5), "{} vs {r}", pose[0].rotation);
    }

    /// The constants `shaders/transition.wgsl` keeps in sync with these.
    #[test]
    fn wgsl_constants_match() {
        let source = include_str!("../../shaders/transition.wgsl");
        let constants = [
            ("VISUALLY_ZERO", VISUALLY_ZERO),
            ("MIN_QUINTIC_S", MIN_QUINTIC_S),
            ("MIN_VELOCITY_DT_S", MIN_VELOCITY_DT_S),
            ("MAX_OFFSET_M", MAX_OFFSET_M),
            ("MAX_OFFSET_RAD", MAX_OFFSET_RAD),
        ];
        for (name, value) in constants {
            let prefix = format!("const {name}: f32 = ");
            let text = source
                .lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .unwrap_or_else(|| panic!("no `{prefix}` in transition.wgsl"));
            assert_eq!(text.trim_end_matches(';').parse::<f32>(), Ok(value), "{name}");
        }
    }

    /// Four joints a lane at a time give what one joint at a time gives: partial groups, large
    /// rotations (the exact path), and translations only in the groups that have them.
    #[test]
    fn lanes_apply_as_joints_do() {
        let joints = 7;
        let mut groups = vec![OffsetLanes::default(); OffsetLanes::groups_for(joints)];
        let offset = |j: usize| JointOffset {
            translation: if j == 5 { Vec3::new(0.1, -0.2, 0.05) } else { Vec3::ZERO },
            translation_velocity: if j == 5 { Vec3::new(1.0, 0.0, -0.5) } else { Vec3::ZERO },
            rotation: Vec3::new(0.1 * j as f32, -0.05, if j == 2 { 1.2 } else { 0.02 }),
            rotation_velocity: Vec3::new(-0.3, 0.2 * j as f32, 0.1),
        };
        for j in 0..joints {
            groups[j / 4].set(j % 4, &offset(j));
        }
        assert_eq!(translating_groups(&groups), 0b10, "joint 5 translates, in the second group");
        let pose: Vec<Transform> = (0..joints)
            .map(|j| Transform::from_translation_rotation(Vec3::splat(j as f32), Quat::from_rotation_y(0.3 * j as f32)))
            .collect();
        let decay = Decay::Quintic { duration_s: 0.25, overshoot_control: false };
        let (a, b) = decay.basis(0.04).unwrap();
        let mut got = pose.clone();
        apply(&groups, translating_groups(&groups), decay, 0.04, &mut got);
        for (j, (g, p)) in got.iter().zip(&pose).enumerate() {
            let o = offset(j);
            let translation = p.translation + o.translation * a + o.translation_velocity * b;
            let rotation = rotation_vector_to_quat(o.rotation * a + o.rotation_velocity * b) * p.rotation;
            assert!(g.translation.abs_diff_eq(translation, 1e-6), "joint {j}: {} vs {translation}", g.translation);
            assert!(g.rotation.abs_diff_eq(rotation, 1e-6), "joint {j}: {} vs {rotation}", g.rotation);
        }
    }
}
