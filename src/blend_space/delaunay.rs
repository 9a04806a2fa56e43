//! Delaunay triangulation of a freeform blend space's points: an incremental sweep, then Lawson flips.

use glam::DVec2;

use super::BlendSpaceError;

/// A freeform space whose points all lie within this distance (normalised coordinates) of one line has
/// no triangle worth interpolating in.
const COLLINEAR_DISTANCE: f64 = 1e-5;

/// Orientation (twice a triangle's signed area, normalised coordinates) below which three points
/// count as collinear while triangulating. Far above f64 rounding of O(1) coordinates, far below
/// any triangle an author would draw.
const AREA_EPS: f64 = 1e-12;

/// Twice the signed area of `a b c`: positive when counter-clockwise.
fn orient(a: DVec2, b: DVec2, c: DVec2) -> f64 {
    (b - a).perp_dot(c - a)
}

/// Positive when `d` lies inside the circumcircle of the counter-clockwise triangle `a b c`.
fn in_circle(a: DVec2, b: DVec2, c: DVec2, d: DVec2) -> f64 {
    let (ad, bd, cd) = (a - d, b - d, c - d);
    ad.length_squared() * bd.perp_dot(cd)
        + bd.length_squared() * cd.perp_dot(ad)
        + cd.length_squared() * ad.perp_dot(bd)
}

/// Whether every point lies within [`COLLINEAR_DISTANCE`] of the line through the two points
/// farthest from the first (a line that, for a collinear set, runs through them all).
pub(super) fn all_collinear(points: &[DVec2]) -> bool {
    let p0 = points[0];
    let far =
        points.iter().copied().max_by(|a, b| a.distance_squared(p0).total_cmp(&b.distance_squared(p0))).unwrap_or(p0);
    let len = far.distance(p0);
    points.iter().all(|&p| orient(p0, far, p).abs() <= COLLINEAR_DISTANCE * len)
}

/// Delaunay triangulation of distinct, not-all-collinear points (normalised coordinates), as
/// counter-clockwise index triples.
///
/// | step | what |
/// | --- | --- |
/// | 1 | sort the points by (x, y) |
/// | 2 | fan the first run of collinear points from the first point off their line |
/// | 3 | for each later point (outside the hull so far, by the sort): join it to every hull edge it sees, and make it a hull vertex |
/// | 4 | flip any edge whose opposite vertex lies inside the other triangle's circumcircle until none does (Lawson) |
pub(super) fn delaunay(points: &[DVec2]) -> Result<Vec<[usize; 3]>, BlendSpaceError> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[a].x.total_cmp(&points[b].x).then(points[a].y.total_cmp(&points[b].y)));
    let at = |k: usize| points[order[k]];

    let apex = (2..order.len())
        .find(|&k| orient(at(0), at(1), at(k)).abs() > AREA_EPS)
        .ok_or(BlendSpaceError::Collinear { count: points.len() })?;
    let left_turn = orient(at(0), at(1), at(apex)) > 0.0;
    let mut triangles = Vec::with_capacity(2 * points.len());
    for m in 0..apex - 1 {
        let (a, b, c) = (order[m], order[m + 1], order[apex]);
        let tri = if left_turn { [a, b, c] } else { [b, a, c] };
        if orient(points[tri[0]], points[tri[1]], points[tri[2]]) <= AREA_EPS {
            return Err(BlendSpaceError::Untriangulable { child: order[m + 1] });
        }
        triangles.push(tri);
    }
    // The hull, counter-clockwise.
    let mut hull: Vec<usize> = if left_turn {
        order[..=apex].to_vec()
    } else {
        std::iter::once(order[0]).chain(order[..=apex].iter().rev().copied().take(apex)).collect()
    };

    for &p in &order[apex + 1..] {
        let h = hull.len();
        let sees = |e: usize| orient(points[hull[e]], points[hull[(e + 1) % h]], points[p]) < -AREA_EPS;
        // The first edge of a run of visible edges: visible, its predecessor not.
        let start =
            (0..h).find(|&e| sees(e) && !sees((e + h - 1) % h)).ok_or(BlendSpaceError::Untriangulable { child: p })?;
        let mut end = start;
        while sees(end % h) && end < start + h {
            let (a, b) = (hull[end % h], hull[(end + 1) % h]);
            triangles.push([a, p, b]);
            end += 1;
        }
        // New hull: from the run's last vertex round to its first, then p.
        let mut next = Vec::with_capacity(h + 1);
        let mut k = end % h;
        loop {
            next.push(hull[k]);
            if k == start {
                break;
            }
            k = (k + 1) % h;
        }
        next.push(p);
        hull = next;
    }

    flip_to_delaunay(points, &mut triangles);
    Ok(triangles)
}

/// Lawson's flips: while an edge shared by `a b c` and `b a d` has `d` inside the circumcircle
/// of `a b c`, replace it by the edge `c d`. Each flip strictly raises the smallest angles, so
/// this ends; the pass limit only guards against rounding making a pair flip back and forth.
fn flip_to_delaunay(points: &[DVec2], triangles: &mut [[usize; 3]]) {
    let max_passes = 4 * points.len() * points.len();
    for _ in 0..max_passes {
        let mut flipped = false;
        for t1 in 0..triangles.len() {
            for e in 0..3 {
                let [a, b, c] = [triangles[t1][e], triangles[t1][(e + 1) % 3], triangles[t1][(e + 2) % 3]];
                let Some((t2, d)) = triangles.iter().enumerate().find_map(|(t, tri)| {
                    (0..3).find(|&f| tri[f] == b && tri[(f + 1) % 3] == a).map(|f| (t, tri[(f + 2) % 3]))
                }) else {
                    continue;
                };
                let (pa, pb, pc, pd) = (points[a], points[b], points[c], points[d]);
                if in_circle(pa, pb, pc, pd) > AREA_EPS
                    && orient(pa, pd, pc) > AREA_EPS
                    && orient(pd, pb, pc) > AREA_EPS
                {
                    triangles[t1] = [a, d, c];
                    triangles[t2] = [d, b, c];
                    flipped = true;
                    break;
                }
            }
        }
        if !flipped {
            return;
        }
    }
}

/// Edges `(a, b)` of counter-clockwise triangles that no other triangle shares as `(b, a)`: the
/// boundary, which for this triangulation is the convex hull.
pub(super) fn boundary_edges(triangles: &[[usize; 3]]) -> Vec<(usize, usize)> {
    let edges = |tri: &[usize; 3]| [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])];
    triangles.iter().flat_map(edges).filter(|&(a, b)| !triangles.iter().flat_map(edges).any(|e| e == (b, a))).collect()
}
