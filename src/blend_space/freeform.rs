//! Freeform 2D blend spaces: barycentric weights in the Delaunay triangle holding the parameter;
//! outside the hull, the nearest hull edge.

use glam::{DMat2, DVec2, Vec2};

use super::delaunay::{all_collinear, boundary_edges, delaunay};
use super::{BlendSpace, BlendSpaceError, BlendSpaceKind, Normaliser, check_count, check_distinct, check_finite};

/// Barycentric slack for "inside a triangle", so that points on a shared edge, which rounding
/// puts a hair outside both triangles, are still found inside one.
const INSIDE_EPS: f32 = 1e-5;

/// Tables of a freeform space, in its normalised coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct FreeformSpace {
    normaliser: Normaliser,
    pub(super) num_children: usize,
    triangles: Vec<Triangle>,
    hull: Vec<HullEdge>,
}

/// One triangle of a freeform space: `weights(b, c) = inv · (q − origin)`, `weight(a) = 1 − b − c`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Triangle {
    children: [usize; 3],
    // Double precision: a long thin triangle's inverse is large, and f32 rounding of the
    // parameter, amplified by it, cost a child up to 2e-4 of its weight at its own point.
    origin: DVec2,
    inv: DMat2,
}

/// One edge of a freeform space's convex hull, from child `a` to child `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct HullEdge {
    a: usize,
    b: usize,
    origin: Vec2,
    /// `b − a`.
    dir: Vec2,
    /// `(b − a) / |b − a|²`, so that `(q − a) · gradient` is the projection's parameter.
    gradient: Vec2,
}

impl BlendSpace {
    /// A freeform 2D space: barycentric weights in the Delaunay triangle holding the parameter.
    ///
    /// ```text
    ///   B ─────────── C      inside a triangle: the barycentric coordinates of p, i.e. each
    ///   │ ╲   ·p    ╱ │      corner gets the area of the sub-triangle opposite it over the
    ///   │   ╲     ╱   │      whole (at most three children play at once);
    ///   │     ╲ ╱     │
    /// q·│· · · E      │      outside the hull: q is projected onto the nearest hull edge
    ///   │     ╱ ╲     │      (here A–B) and the edge's two ends share the weight linearly.
    ///   A ─────────── D
    /// ```
    ///
    /// The triangulation is built here: children are inserted in x order, each one joined to
    /// the hull edges it can see, then Lawson's edge flips make it Delaunay (no child inside
    /// another triangle's circumcircle), which avoids the long thin triangles that would let a
    /// distant child leak into a blend. With four children on one circle (a square) either
    /// diagonal is Delaunay; which one is kept is deterministic.
    ///
    /// # Errors
    /// [`TooFewChildren`](BlendSpaceError::TooFewChildren) under 3,
    /// [`TooManyChildren`](BlendSpaceError::TooManyChildren),
    /// [`NonFinitePoint`](BlendSpaceError::NonFinitePoint),
    /// [`DuplicatePoint`](BlendSpaceError::DuplicatePoint),
    /// [`Collinear`](BlendSpaceError::Collinear) when all children lie on one line,
    /// [`Untriangulable`](BlendSpaceError::Untriangulable) for a child that only fits into a
    /// triangle of no area.
    pub fn freeform(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        check_count(BlendSpaceKind::Freeform, points.len(), 3)?;
        check_finite(&points)?;
        let normaliser = Normaliser::fit(&points);
        let local: Vec<DVec2> = points.iter().map(|&p| normaliser.to_local(p)).collect();
        check_distinct(&points, &local)?;
        if all_collinear(&local) {
            return Err(BlendSpaceError::Collinear { count: points.len() });
        }
        let corners = delaunay(&local)?;
        let triangles = corners
            .iter()
            .map(|&[a, b, c]| {
                let m = DMat2::from_cols(local[b] - local[a], local[c] - local[a]);
                Triangle { children: [a, b, c], origin: local[a], inv: m.inverse() }
            })
            .collect();
        let hull = boundary_edges(&corners)
            .into_iter()
            .map(|(a, b)| {
                let dir = local[b] - local[a];
                HullEdge {
                    a,
                    b,
                    origin: local[a].as_vec2(),
                    dir: dir.as_vec2(),
                    gradient: (dir / dir.length_squared()).as_vec2(),
                }
            })
            .collect();
        Ok(Self::Freeform(FreeformSpace { normaliser, num_children: points.len(), triangles, hull }))
    }
}

impl FreeformSpace {
    /// [`super::tree_words::SPACE_FREEFORM`]: the normaliser, children, triangles and hull
    /// edges counted, then each triangle (its three children, its first child's point in the
    /// parameter's coordinates, so that the shader measures the parameter from it without the
    /// normalised query's rounding, which a thin triangle's inverse amplifies; the inverse by
    /// columns) and each hull edge (its two children, origin, direction, gradient).
    pub(super) fn encode(&self, out: &mut Vec<u32>) {
        self.normaliser.encode(out);
        out.extend([self.num_children as u32, self.triangles.len() as u32, self.hull.len() as u32]);
        for tri in &self.triangles {
            out.extend(tri.children.map(|c| c as u32));
            let inv = tri.inv.as_mat2();
            let point = self.normaliser.to_parameter(tri.origin);
            let words = [point.to_array(), inv.x_axis.to_array(), inv.y_axis.to_array()];
            out.extend(words.as_flattened().iter().map(|v| v.to_bits()));
        }
        for edge in &self.hull {
            out.extend([edge.a as u32, edge.b as u32]);
            let words = [edge.origin.to_array(), edge.dir.to_array(), edge.gradient.to_array()];
            out.extend(words.as_flattened().iter().map(|v| v.to_bits()));
        }
    }

    pub(super) fn fill(&self, p: Vec2, w: &mut [f32]) {
        let q64 = self.normaliser.query(p);
        for tri in &self.triangles {
            let bc = tri.inv * (q64 - tri.origin);
            let ba = 1.0 - bc.x - bc.y;
            if ba.min(bc.x).min(bc.y) >= -f64::from(INSIDE_EPS) {
                let (ba, bb, bcc) = (ba.max(0.0), bc.x.max(0.0), bc.y.max(0.0));
                let inv_sum = 1.0 / (ba + bb + bcc);
                let [a, b, c] = tri.children;
                w[a] = (ba * inv_sum) as f32;
                w[b] = (bb * inv_sum) as f32;
                w[c] = (bcc * inv_sum) as f32;
                return;
            }
        }
        let q = q64.as_vec2();
        // Outside the hull: the nearest point on it, which lies on one edge (or at a corner,
        // where the edge's parameter clamps to 0 or 1).
        let mut best = (f32::INFINITY, 0, 0, 0.0f32);
        for edge in &self.hull {
            let t = (q - edge.origin).dot(edge.gradient).clamp(0.0, 1.0);
            let dist_sq = (edge.origin + edge.dir * t).distance_squared(q);
            if dist_sq < best.0 {
                best = (dist_sq, edge.a, edge.b, t);
            }
        }
        let (_, a, b, t) = best;
        w[a] += 1.0 - t;
        w[b] += t;
    }
}
