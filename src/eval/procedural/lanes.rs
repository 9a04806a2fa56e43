//! Four characters' numbers in the SIMD lanes of the procedural stage (`super`): a `Vec4` is
//! one quantity of four characters (lane `k` character `k` of the group), [`V3`] a vector and
//! [`Q4`] a rotation of each, structure of arrays. Every operation is lane by lane (IEEE adds,
//! products, quotients and square roots, each rounded as the scalar one is), so a lane's numbers
//! never depend on the other lanes': a character gives the same bits alone as in any group.
//! Branches on the numbers become [`Vec4::select`] between both sides.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
use std::ops::{Add, Mul, Neg, Sub};

use glam::{BVec4A, Vec3, Vec4};

/// Each lane's square root (one `sqrtps` where glam's `Vec4::sqrt` takes four calls).
#[inline]
pub(super) fn sqrt(v: Vec4) -> Vec4 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        // SAFETY: SSE2 is enabled at compile time (the cfg above), so the instruction exists.
        Vec4::from(unsafe { std::arch::x86_64::_mm_sqrt_ps(v.into()) })
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        v.sqrt()
    }
}

/// `if_true` in the lanes of `mask`, `if_false` in the others.
#[inline]
pub(super) fn select(mask: BVec4A, if_true: Vec4, if_false: Vec4) -> Vec4 {
    Vec4::select(mask, if_true, if_false)
}

/// A vector of each lane's character.
#[derive(Clone, Copy, Debug)]
pub(super) struct V3 {
    pub x: Vec4,
    pub y: Vec4,
    pub z: Vec4,
}

impl V3 {
    pub const ZERO: Self = Self { x: Vec4::ZERO, y: Vec4::ZERO, z: Vec4::ZERO };
    pub const X: Self = Self { x: Vec4::ONE, y: Vec4::ZERO, z: Vec4::ZERO };
    pub const Y: Self = Self { x: Vec4::ZERO, y: Vec4::ONE, z: Vec4::ZERO };

    /// `v` in every lane.
    #[inline]
    pub fn splat(v: Vec3) -> Self {
        Self { x: Vec4::splat(v.x), y: Vec4::splat(v.y), z: Vec4::splat(v.z) }
    }

    /// Lane `k`'s vector.
    #[inline]
    pub fn lane(&self, k: usize) -> Vec3 {
        Vec3::new(self.x[k], self.y[k], self.z[k])
    }

    #[inline]
    pub fn dot(self, o: Self) -> Vec4 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline]
    pub fn cross(self, o: Self) -> Self {
        Self { x: self.y * o.z - self.z * o.y, y: self.z * o.x - self.x * o.z, z: self.x * o.y - self.y * o.x }
    }

    #[inline]
    pub fn length_squared(self) -> Vec4 {
        self.dot(self)
    }

    /// Each lane's vector over its length (not zero where it is used).
    #[inline]
    pub fn normalize(self) -> Self {
        self * (Vec4::ONE / sqrt(self.length_squared()))
    }

    /// Each lane's component-wise product.
    #[inline]
    pub fn scaled(self, s: Self) -> Self {
        Self { x: self.x * s.x, y: self.y * s.y, z: self.z * s.z }
    }

    /// `self` moved toward `to` by `t` (0 stays, 1 arrives).
    #[inline]
    pub fn lerp(self, to: Self, t: Vec4) -> Self {
        self * (Vec4::ONE - t) + to * t
    }

    #[inline]
    pub fn select(mask: BVec4A, if_true: Self, if_false: Self) -> Self {
        Self {
            x: select(mask, if_true.x, if_false.x),
            y: select(mask, if_true.y, if_false.y),
            z: select(mask, if_true.z, if_false.z),
        }
    }

    /// The lanes' smallest absolute component.
    #[inline]
    pub fn min_abs(self) -> Vec4 {
        self.x.abs().min(self.y.abs()).min(self.z.abs())
    }
}

impl Add for V3 {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Self { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl Sub for V3 {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Self { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

impl Mul<Vec4> for V3 {
    type Output = Self;
    #[inline]
    fn mul(self, s: Vec4) -> Self {
        Self { x: self.x * s, y: self.y * s, z: self.z * s }
    }
}

/// A rotation (unit quaternion `xyz` + `w`) of each lane's character.
#[derive(Clone, Copy, Debug)]
pub(super) struct Q4 {
    pub x: Vec4,
    pub y: Vec4,
    pub z: Vec4,
    pub w: Vec4,
}

impl Q4 {
    pub const IDENTITY: Self = Self { x: Vec4::ZERO, y: Vec4::ZERO, z: Vec4::ZERO, w: Vec4::ONE };

    #[inline]
    pub fn from_axis(axis: V3, w: Vec4) -> Self {
        Self { x: axis.x, y: axis.y, z: axis.z, w }
    }

    #[inline]
    pub fn axis(self) -> V3 {
        V3 { x: self.x, y: self.y, z: self.z }
    }

    #[inline]
    pub fn conjugate(self) -> Self {
        Self { x: -self.x, y: -self.y, z: -self.z, w: self.w }
    }

    #[inline]
    pub fn dot(self, o: Self) -> Vec4 {
        self.x * o.x + self.y * o.y + self.z * o.z + self.w * o.w
    }

    #[inline]
    pub fn normalize(self) -> Self {
        self.scale(Vec4::ONE / sqrt(self.dot(self)))
    }

    #[inline]
    pub fn scale(self, s: Vec4) -> Self {
        Self { x: self.x * s, y: self.y * s, z: self.z * s, w: self.w * s }
    }

    #[inline]
    pub fn select(mask: BVec4A, if_true: Self, if_false: Self) -> Self {
        Self {
            x: select(mask, if_true.x, if_false.x),
            y: select(mask, if_true.y, if_false.y),
            z: select(mask, if_true.z, if_false.z),
            w: select(mask, if_true.w, if_false.w),
        }
    }

    /// `v` turned by the rotation: `v + w t + xyz × t` with `t = 2 xyz × v`, the shader's
    /// `q_rotate`.
    #[inline]
    pub fn rotate(self, v: V3) -> V3 {
        let axis = self.axis();
        let t = axis.cross(v) * Vec4::splat(2.0);
        v + t * self.w + axis.cross(t)
    }
}

impl Add for Q4 {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Self { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z, w: self.w + o.w }
    }
}

impl Sub for Q4 {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Self { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z, w: self.w - o.w }
    }
}

impl Neg for Q4 {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        Self { x: -self.x, y: -self.y, z: -self.z, w: -self.w }
    }
}

/// The Hamilton product: `self` after `o`.
impl Mul for Q4 {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        Self {
            x: self.w * o.x + self.x * o.w + self.y * o.z - self.z * o.y,
            y: self.w * o.y - self.x * o.z + self.y * o.w + self.z * o.x,
            z: self.w * o.z + self.x * o.y - self.y * o.x + self.z * o.w,
            w: self.w * o.w - self.x * o.x - self.y * o.y - self.z * o.z,
        }
    }
}

/// `atan(x)` for x ≥ 0 in each lane: Cephes' single-precision `atanf`, reduced to |t| ≤ tan(π/8)
/// around 0, π/4 or π/2, within a few ulp of libm's; the shader has the same polynomial, so
/// both evaluators take the same angles.
#[inline]
pub(super) fn atan_positive(x: Vec4) -> Vec4 {
    let (big, mid) = (x.cmpgt(Vec4::splat(2.414_213_6)), x.cmpgt(Vec4::splat(0.414_213_57)));
    let base = select(big, Vec4::splat(FRAC_PI_2), select(mid, Vec4::splat(FRAC_PI_4), Vec4::ZERO));
    let t = select(big, Vec4::splat(-1.0) / x, select(mid, (x - Vec4::ONE) / (x + Vec4::ONE), x));
    let z = t * t;
    let poly = ((Vec4::splat(8.053_744_5e-2) * z - Vec4::splat(1.387_768_6e-1)) * z + Vec4::splat(1.997_771_1e-1)) * z
        - Vec4::splat(3.333_295e-1);
    base + poly * z * t + t
}

/// `atan2(y, x)` for y ≥ 0 (a length, as every call here has) in each lane: in [0, π].
#[inline]
pub(super) fn atan2_positive(y: Vec4, x: Vec4) -> Vec4 {
    let a = atan_positive(y / x.abs());
    let on_axis = select(y.cmpgt(Vec4::ZERO), Vec4::splat(FRAC_PI_2), Vec4::ZERO);
    select(x.cmpgt(Vec4::ZERO), a, select(x.cmplt(Vec4::ZERO), Vec4::splat(PI) - a, on_axis))
}

/// `(sin x, cos x)` in each lane for |x| below a few turns: Cephes' single-precision `sinf` and
/// `cosf` (x reduced by the nearest multiple of π/2 in three parts, Cody–Waite, then each from
/// its polynomial on [−π/4, π/4]), within a few ulp of libm's; the shader has the same
/// polynomials (`shaders/shared/trig.wgsl`), so both evaluators take the same turns.
#[inline]
pub(super) fn sin_cos(x: Vec4) -> (Vec4, Vec4) {
    // The nearest integer, ties to even as WGSL's `round`: adding 1.5 × 2²³ leaves no fraction
    // bits (exact for |x| < 2²²).
    const ROUND: f32 = 12_582_912.0;
    let quadrant = (x * Vec4::splat(2.0 / PI) + Vec4::splat(ROUND)) - Vec4::splat(ROUND);
    let r = ((x - quadrant * Vec4::splat(1.570_312_5)) - quadrant * Vec4::splat(4.837_513e-4))
        - quadrant * Vec4::splat(7.549_79e-8);
    let z = r * r;
    let s =
        ((Vec4::splat(-1.951_529_6e-4) * z + Vec4::splat(8.332_161e-3)) * z - Vec4::splat(1.666_665_5e-1)) * z * r + r;
    let c = ((Vec4::splat(2.443_315_7e-5) * z - Vec4::splat(1.388_731_6e-3)) * z + Vec4::splat(4.166_664_6e-2)) * z * z
        - Vec4::splat(0.5) * z
        + Vec4::ONE;
    // The quadrant modulo 4, exactly (an integer): 0 (s, c), 1 (c, −s), 2 (−s, −c), 3 (−c, s).
    let m = quadrant - Vec4::splat(4.0) * (quadrant * Vec4::splat(0.25)).floor();
    let odd = m.cmpeq(Vec4::ONE) | m.cmpeq(Vec4::splat(3.0));
    let (sin, cos) = (select(odd, c, s), select(odd, s, c));
    let sin = select(m.cmpge(Vec4::splat(2.0)), -sin, sin);
    let cos = select(m.cmpeq(Vec4::ONE) | m.cmpeq(Vec4::splat(2.0)), -cos, cos);
    (sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atan2_positive_is_libms_within_a_few_ulp() {
        let xs = [-50.0, -3.0, -1.0, -0.4, -1e-3, 0.0, 1e-3, 0.4, 1.0, 3.0, 50.0, 2.414_213_6, 0.414_213_57];
        for i in 0..=2000 {
            let y = i as f32 * 0.013;
            for x in xs.chunks(4) {
                let x = Vec4::from_slice(&[x, &[1.0; 4][x.len()..]].concat());
                let got = atan2_positive(Vec4::splat(y), x);
                for k in 0..4 {
                    let want = y.atan2(x[k]);
                    assert!(
                        (got[k] - want).abs() <= 4.0 * f32::EPSILON * want.abs().max(1.0),
                        "atan2({y}, {}): {} against {want}",
                        x[k],
                        got[k]
                    );
                }
            }
        }
    }

    #[test]
    fn sin_cos_is_libms_within_a_few_ulp() {
        for i in (-4000..=4000).step_by(4) {
            let x = Vec4::from_array(std::array::from_fn(|k| (i + k as i32) as f32 * 0.003_1));
            let (sin, cos) = sin_cos(x);
            for k in 0..4 {
                let (want_sin, want_cos) = x[k].sin_cos();
                assert!(
                    (sin[k] - want_sin).abs() <= 2.0 * f32::EPSILON,
                    "sin({}): {} against {want_sin}",
                    x[k],
                    sin[k]
                );
                assert!(
                    (cos[k] - want_cos).abs() <= 2.0 * f32::EPSILON,
                    "cos({}): {} against {want_cos}",
                    x[k],
                    cos[k]
                );
            }
        }
    }

    #[test]
    fn rotate_and_the_product_turn_as_glams_quat_does() {
        use glam::Quat;
        let quats = [
            Quat::from_rotation_x(0.3),
            Quat::from_axis_angle(Vec3::new(1.0, -2.0, 0.5).normalize(), 2.9),
            Quat::from_rotation_y(-1.2),
            Quat::IDENTITY,
        ];
        let q = |k: usize| quats[k];
        let lanes = Q4 {
            x: Vec4::from_array(std::array::from_fn(|k| q(k).x)),
            y: Vec4::from_array(std::array::from_fn(|k| q(k).y)),
            z: Vec4::from_array(std::array::from_fn(|k| q(k).z)),
            w: Vec4::from_array(std::array::from_fn(|k| q(k).w)),
        };
        let other = Quat::from_rotation_z(0.8);
        let product = lanes * Q4::from_axis(V3::splat(Vec3::new(other.x, other.y, other.z)), Vec4::splat(other.w));
        for v in [Vec3::X, Vec3::new(0.2, -1.5, 3.0), Vec3::ZERO] {
            let got = lanes.rotate(V3::splat(v));
            for k in 0..4 {
                let want = q(k) * v;
                assert!(got.lane(k).abs_diff_eq(want, 1e-6), "{} {v}: {} against {want}", q(k), got.lane(k));
                let want = q(k) * other;
                let got = Quat::from_xyzw(product.x[k], product.y[k], product.z[k], product.w[k]);
                assert!(got.abs_diff_eq(want, 1e-6), "{} · {other}: {got} against {want}", q(k));
            }
        }
    }
}
