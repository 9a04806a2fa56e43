//! Picking a character under the cursor, on the CPU: a ray from the camera through the pixel
//! against each character's bounding capsule, made from throng's skinning matrices (read back)
//! and the character's placement, so the capsule follows the pose that is on screen.

use glam::{Mat4, Vec3, Vec4};

/// A character's bounding capsule in world space: the segment `a`–`b` swept by `radius_m`.
#[derive(Clone, Copy, Debug)]
pub struct Capsule {
    pub a: Vec3,
    pub b: Vec3,
    pub radius_m: f32,
}

impl Capsule {
    /// The vertical capsule around joint positions `joints` (world space): through their
    /// horizontal mean, from the lowest to the highest, wide enough to hold every joint, plus
    /// `margin_m` for the flesh around the bones. `None` without joints or with a non-finite one.
    pub fn around(joints: impl IntoIterator<Item = Vec3>, margin_m: f32) -> Option<Self> {
        let joints: Vec<Vec3> = joints.into_iter().collect();
        if joints.is_empty() || !joints.iter().all(|j| j.is_finite()) {
            return None;
        }
        let mean = joints.iter().copied().sum::<Vec3>() / joints.len() as f32;
        let (low, high) = joints.iter().fold((f32::MAX, f32::MIN), |(lo, hi), j| (lo.min(j.y), hi.max(j.y)));
        let reach = joints.iter().map(|j| (j.x - mean.x).hypot(j.z - mean.z)).fold(0.0, f32::max);
        let radius_m = reach + margin_m;
        // The segment ends a radius inside the extremes, so the caps end at the joints' margin.
        let (a_y, b_y) = (low + radius_m.min(0.5 * (high - low)), high - radius_m.min(0.5 * (high - low)));
        Some(Self { a: Vec3::new(mean.x, a_y, mean.z), b: Vec3::new(mean.x, b_y, mean.z), radius_m })
    }

    /// Where along the ray `origin + t · direction` (`direction` of unit length) it first
    /// passes within the capsule, as `t`; `None` when it misses. The distance is between the
    /// ray and the segment, so a hit is exact; `t` is that of the ray's closest approach to the
    /// segment, which orders hits well enough to take the nearest character.
    pub fn hit(&self, origin: Vec3, direction: Vec3) -> Option<f32> {
        let axis = self.b - self.a;
        let length2 = axis.length_squared();
        // Alternating projections converge on the closest points of a ray and a segment; four
        // rounds settle them far below a pixel for a body-sized capsule.
        let mut s = 0.5f32;
        let mut t = 0.0f32;
        for _ in 0..4 {
            t = (self.a + axis * s - origin).dot(direction).max(0.0);
            s = if length2 > 0.0 {
                ((origin + direction * t - self.a).dot(axis) / length2).clamp(0.0, 1.0)
            } else {
                0.0
            };
        }
        let distance = (origin + direction * t).distance(self.a + axis * s);
        (distance <= self.radius_m).then_some(t)
    }
}

/// The ray through pixel `(x, y)` of a `width × height` view seen through `view_proj` (wgpu's
/// clip space: depth in [0, 1]): its origin on the near plane and its unit direction.
pub fn ray(view_proj: Mat4, (x, y): (f32, f32), (width, height): (u32, u32)) -> Option<(Vec3, Vec3)> {
    let ndc_x = 2.0 * x / width.max(1) as f32 - 1.0;
    let ndc_y = 1.0 - 2.0 * y / height.max(1) as f32;
    let inverse = view_proj.inverse();
    let unproject = |z: f32| {
        let p: Vec4 = inverse * Vec4::new(ndc_x, ndc_y, z, 1.0);
        p.truncate() / p.w
    };
    let (near, far) = (unproject(0.0), unproject(1.0));
    let direction = (far - near).normalize_or_zero();
    (near.is_finite() && direction != Vec3::ZERO).then_some((near, direction))
}

/// The nearest character whose capsule the ray hits.
pub fn nearest(capsules: &[Option<Capsule>], origin: Vec3, direction: Vec3) -> Option<usize> {
    capsules
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.as_ref()?.hit(origin, direction)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}
