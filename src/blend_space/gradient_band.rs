//! Gradient-band blend spaces (Johansen): Cartesian, and directional in polar space.

use glam::{DVec2, Vec2};

use super::{
    BlendSpace, BlendSpaceError, BlendSpaceKind, DUPLICATE_DISTANCE, FAR_RADIUS, Normaliser, check_count,
    check_distinct, check_finite, nan_to_zero, normalise_influences, pull_back,
};

/// Weight given to the angle (radians) against the relative radius in the directional gradient
/// band. Johansen leaves it as a tuning constant; 2 is what PlayCanvas ships. Larger values let
/// direction outweigh speed when the two disagree about which child is nearer.
const ANGULAR_WEIGHT: f64 = 2.0;

/// Tables of a Cartesian gradient-band space, in its normalised coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct CartesianSpace {
    normaliser: Normaliser,
    pub(super) points: Vec<Vec2>,
    /// `gradients[i * n + j] = (p_j − p_i) / |p_j − p_i|²`; zero on the diagonal so that the
    /// pair (i, i) yields 1 and never wins the minimum.
    gradients: Vec<Vec2>,
}

/// Tables of a directional gradient-band space, scaled so that the farthest child has radius 1.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionalSpace {
    /// Double precision: the inverse of a radius near `f32::MAX` is subnormal as an `f32`, and
    /// of one near the smallest `f32` is infinite.
    inv_scale: f64,
    pub(super) radii: Vec<f32>,
    /// `pairs[i * n + j]`; the diagonal is all zeros, which yields 1.
    pairs: Vec<PolarPair>,
}

/// The precomputed half of Johansen's polar gradient band for an ordered pair (i, j).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct PolarPair {
    /// Direction (radians) of the angular axis shared by (i, j) and (j, i): the bisector of the
    /// two children's directions. Angles are measured from it so that the branch cut sits
    /// opposite the pair, where neither child should win anyway.
    axis_angle: f32,
    /// Child i's angle from the axis.
    angle_i: f32,
    /// [`ANGULAR_WEIGHT`], or 0 when either child is at the origin (no direction to compare).
    angular_weight: f32,
    /// `2 / (|p_i| + |p_j|)`: radii are compared relative to the pair's mean radius.
    inv_mean_radius: f32,
    /// `v_ij / |v_ij|²`.
    gradient: Vec2,
}

impl BlendSpace {
    /// A Cartesian gradient-band space (Unity's "Freeform Cartesian", PlayCanvas's
    /// `2D_CARTESIAN`), after Rune Skovbo Johansen, *Automated Semi-Procedural Animation for
    /// Character Locomotion* (2009), ch. 6.
    ///
    /// Every other child j casts a band that fades child i out along the segment i → j:
    ///
    /// ```text
    ///   h_ij(p) = 1 − (p − p_i)·(p_j − p_i) / |p_j − p_i|²      (1 at p_i, 0 at p_j)
    ///
    ///   p_i ●━━━━━━━━━━━━━━━━━━● p_j        h_ij = 1 on p_i's side, 0 beyond p_j's
    ///       1      0.5        0            perpendicular line, linear between
    ///
    ///   w_i = max(0, min_j h_ij(p)),  then normalised to sum to 1
    /// ```
    ///
    /// On a child its weight is 1 and every other is 0. Unlike barycentric weights, many
    /// children can be active at once and the layout needs no triangulation, only distinct
    /// points; the nearest child always keeps at least half its influence, so the sum never
    /// vanishes.
    ///
    /// # Errors
    /// [`TooFewChildren`](BlendSpaceError::TooFewChildren) under 2,
    /// [`TooManyChildren`](BlendSpaceError::TooManyChildren),
    /// [`NonFinitePoint`](BlendSpaceError::NonFinitePoint),
    /// [`DuplicatePoint`](BlendSpaceError::DuplicatePoint).
    pub fn cartesian(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        check_count(BlendSpaceKind::Cartesian, points.len(), 2)?;
        check_finite(&points)?;
        let normaliser = Normaliser::fit(&points);
        let local: Vec<DVec2> = points.iter().map(|&p| normaliser.to_local(p)).collect();
        check_distinct(&points, &local)?;
        let n = local.len();
        let mut gradients = vec![Vec2::ZERO; n * n];
        for (i, pi) in local.iter().enumerate() {
            for (j, pj) in local.iter().enumerate() {
                if i != j {
                    let d = *pj - *pi;
                    gradients[i * n + j] = (d / d.length_squared()).as_vec2();
                }
            }
        }
        let points = local.iter().map(|q| q.as_vec2()).collect();
        Ok(Self::Cartesian(CartesianSpace { normaliser, points, gradients }))
    }

    /// A directional gradient-band space (Unity's "Freeform Directional", PlayCanvas's
    /// `2D_DIRECTIONAL`): Johansen's gradient bands measured in polar coordinates, for
    /// children that are velocities — walk forward at (0, 1.5), strafe right at (1.2, 0), idle
    /// at the origin. Two children in the same direction blend by speed; two at the same speed
    /// blend by angle, along the arc between them rather than across the chord, so a
    /// forward/right blend never passes through a slow diagonal.
    ///
    /// For a pair (i, j), with radii relative to the pair's mean radius and angles measured
    /// about the pair's bisector (so the angular axis is shared by (i, j) and (j, i)):
    ///
    /// ```text
    ///   v_ij = ( (|p_j| − |p_i|) / r̄,  2·(∠p_j − ∠p_i) )       r̄ = (|p_i| + |p_j|) / 2
    ///   v_ip = ( (|p|   − |p_i|) / r̄,  2·(∠p   − ∠p_i) )
    ///   h_ij = 1 − v_ip·v_ij / |v_ij|²,   w_i = max(0, min_j h_ij),  normalised
    /// ```
    ///
    /// A child at the origin has no direction: its pairs drop the angle term, so an idle child
    /// fades out with speed alone, equally in every direction, and has all the weight at the
    /// origin. A space without a centre child has no well-defined blend at the origin itself;
    /// there the weights are still valid but jump with the parameter's direction.
    ///
    /// # Errors
    /// [`TooFewChildren`](BlendSpaceError::TooFewChildren) under 2,
    /// [`TooManyChildren`](BlendSpaceError::TooManyChildren),
    /// [`NonFinitePoint`](BlendSpaceError::NonFinitePoint),
    /// [`DuplicatePoint`](BlendSpaceError::DuplicatePoint) (which includes two children at the
    /// origin).
    pub fn directional(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        check_count(BlendSpaceKind::Directional, points.len(), 2)?;
        check_finite(&points)?;
        let max_radius = points.iter().map(|p| p.as_dvec2().length()).fold(0.0, f64::max);
        let inv_scale = if max_radius > 0.0 { 1.0 / max_radius } else { 1.0 };
        let local: Vec<DVec2> = points.iter().map(|p| p.as_dvec2() * inv_scale).collect();
        check_distinct(&points, &local)?;
        let n = local.len();
        let radii: Vec<f64> = local.iter().map(|q| q.length()).collect();
        let mut pairs = vec![PolarPair::default(); n * n];
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    continue;
                }
                // The axis depends on the unordered pair, keeping (i, j) and (j, i) on one
                // axis so their bands meet exactly halfway (h_ij + h_ji = 1).
                let (lo, hi) = (i.min(j), i.max(j));
                // Nearer the origin than two distinct children may be to each other: no direction.
                let at_origin = radii[i] < DUPLICATE_DISTANCE || radii[j] < DUPLICATE_DISTANCE;
                let axis = if at_origin { DVec2::X } else { polar_axis(local[lo], local[hi]) };
                let angle_from_axis = |q: DVec2| axis.perp_dot(q).atan2(axis.dot(q));
                let angular_weight = if at_origin { 0.0 } else { ANGULAR_WEIGHT };
                let inv_mean_radius = 2.0 / (radii[i] + radii[j]);
                let angle_i = if at_origin { 0.0 } else { angle_from_axis(local[i]) };
                let angle_j = if at_origin { 0.0 } else { angle_from_axis(local[j]) };
                let v = DVec2::new((radii[j] - radii[i]) * inv_mean_radius, (angle_j - angle_i) * angular_weight);
                pairs[i * n + j] = PolarPair {
                    axis_angle: axis.y.atan2(axis.x) as f32,
                    angle_i: angle_i as f32,
                    angular_weight: angular_weight as f32,
                    inv_mean_radius: inv_mean_radius as f32,
                    gradient: (v / v.length_squared()).as_vec2(),
                };
            }
        }
        Ok(Self::Directional(DirectionalSpace { inv_scale, radii: radii.iter().map(|&r| r as f32).collect(), pairs }))
    }
}

impl CartesianSpace {
    /// [`super::tree_words::SPACE_CARTESIAN`]: the normaliser, `n`, the points, the `n × n`
    /// gradients.
    pub(super) fn encode(&self, out: &mut Vec<u32>) {
        self.normaliser.encode(out);
        out.push(self.points.len() as u32);
        out.extend(self.points.iter().chain(&self.gradients).flat_map(|p| p.to_array()).map(f32::to_bits));
    }

    pub(super) fn fill(&self, p: Vec2, w: &mut [f32]) {
        let q = self.normaliser.query(p).as_vec2();
        let n = self.points.len();
        let mut raw_best = (0, f32::NEG_INFINITY);
        for (i, (pi, row)) in self.points.iter().zip(self.gradients.chunks_exact(n)).enumerate() {
            let d = q - *pi;
            let h = row.iter().fold(1.0f32, |h, g| h.min(1.0 - d.dot(*g)));
            if h > raw_best.1 {
                raw_best = (i, h);
            }
            w[i] = h.max(0.0);
        }
        normalise_influences(w, raw_best.0);
    }
}

impl DirectionalSpace {
    /// [`super::tree_words::SPACE_DIRECTIONAL`]: the scale as a normaliser centred on the
    /// origin, `n`, the radii, then the `n × n` pairs (axis angle, angle of i, angular weight,
    /// inverse mean radius, gradient).
    pub(super) fn encode(&self, out: &mut Vec<u32>) {
        Normaliser { centre: DVec2::ZERO, inv_scale: self.inv_scale }.encode(out);
        out.push(self.radii.len() as u32);
        out.extend(self.radii.iter().map(|r| r.to_bits()));
        for pair in &self.pairs {
            let words = [
                pair.axis_angle,
                pair.angle_i,
                pair.angular_weight,
                pair.inv_mean_radius,
                pair.gradient.x,
                pair.gradient.y,
            ];
            out.extend(words.map(f32::to_bits));
        }
    }

    pub(super) fn fill(&self, p: Vec2, w: &mut [f32]) {
        let raw = Vec2::new(nan_to_zero(p.x), nan_to_zero(p.y));
        let q = pull_back(raw.as_dvec2() * self.inv_scale, FAR_RADIUS).as_vec2();
        let radius = q.length();
        let angle = q.y.atan2(q.x);
        let n = self.radii.len();
        let mut raw_best = (0, f32::NEG_INFINITY);
        for (i, (ri, row)) in self.radii.iter().zip(self.pairs.chunks_exact(n)).enumerate() {
            let h = row.iter().fold(1.0f32, |h, pair| {
                let v = Vec2::new(
                    (radius - ri) * pair.inv_mean_radius,
                    (wrap_angle(angle - pair.axis_angle) - pair.angle_i) * pair.angular_weight,
                );
                h.min(1.0 - v.dot(pair.gradient))
            });
            if h > raw_best.1 {
                raw_best = (i, h);
            }
            w[i] = h.max(0.0);
        }
        normalise_influences(w, raw_best.0);
    }
}

/// `a` (a difference of two angles in [−π, π]) wrapped into [−π, π].
fn wrap_angle(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    if a > PI {
        a - TAU
    } else if a < -PI {
        a + TAU
    } else {
        a
    }
}

/// The shared angular axis of two directions: their bisector, or for opposite directions the
/// perpendicular turned counter-clockwise from `a`.
fn polar_axis(a: DVec2, b: DVec2) -> DVec2 {
    let (ua, ub) = (a.normalize(), b.normalize());
    let sum = ua + ub;
    if sum.length_squared() > 1e-12 { sum.normalize() } else { ua.perp() }
}
