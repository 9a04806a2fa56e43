//! Blend-space weights: where a blend tree's parameters land among its children's points, and
//! how much of each child that gives.
//!
//! This is pure maths for the state stage; it knows nothing of clips or poses. Each space is
//! built once from its children's points (all the searching, sorting and triangulating happens
//! in the constructor) so that [`BlendSpace::weights`], which runs per character per frame,
//! is a short loop over precomputed tables that never allocates.
//!
//! | kind | constructor | idea |
//! | --- | --- | --- |
//! | 1D | [`BlendSpace::one_d`] | linear between the two neighbours, clamped at the ends |
//! | freeform 2D | [`BlendSpace::freeform`] | barycentric in a Delaunay triangle; outside, the nearest hull edge |
//! | Cartesian gradient band | [`BlendSpace::cartesian`] | Johansen's gradient bands (Unity "Freeform Cartesian") |
//! | directional gradient band | [`BlendSpace::directional`] | gradient bands in polar space (Unity "Freeform Directional") |
//! | grid | [`BlendSpace::grid`] | bilinear in a rectangular grid cell, clamped at the edges |
//!
//! Whatever the parameter — NaN, ±∞, 1e30 — the weights are finite, non-negative and sum to
//! one: NaN is read as 0 and an infinite or huge parameter is pulled back to the space's extent
//! (see each kind), so a bad input from gameplay code degrades to a plausible pose, never to a
//! NaN pose or an all-zero blend.

use glam::{DMat2, DVec2, Vec2};
use thiserror::Error;

/// The most children one blend space may have. `weights` keeps its scratch on the stack, and
/// the gradient bands cost `O(n²)` per query, so the limit keeps both bounded.
pub const MAX_BLEND_CHILDREN: usize = 64;

/// Two children of a 2D space closer than this, in the space's normalised frame (the points'
/// bounding box scaled to a side of 2), are one point: gradient bands divide by their distance
/// squared and triangles through them have no area.
const DUPLICATE_DISTANCE: f64 = 1e-6;

/// A freeform space whose points all lie within this distance (normalised frame) of one line has
/// no triangle worth interpolating in.
const COLLINEAR_DISTANCE: f64 = 1e-5;

/// Orientation (twice a triangle's signed area, normalised frame) below which three points
/// count as collinear while triangulating. Far above f64 rounding of O(1) coordinates, far below
/// any triangle an author would draw.
const AREA_EPS: f64 = 1e-12;

/// Barycentric slack for "inside a triangle", so that points on a shared edge, which rounding
/// puts a hair outside both triangles, are still found inside one.
const INSIDE_EPS: f32 = 1e-5;

/// Radius (normalised frame, where the children lie within about 1.5) to which infinite and
/// huge parameters are pulled back along their own direction. Far enough that every gradient
/// band has saturated for any sensible layout, near enough that f32 keeps full precision.
const FAR_RADIUS: f64 = 8.0;

/// Weight given to the angle (radians) against the relative radius in the directional gradient
/// band. Johansen leaves it as a tuning constant; 2 is what PlayCanvas ships. Larger values let
/// direction outweigh speed when the two disagree about which child is nearer.
const ANGULAR_WEIGHT: f64 = 2.0;

/// Which kind of blend space, for error messages and for callers that display a space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlendSpaceKind {
    /// [`BlendSpace::one_d`].
    OneD,
    /// [`BlendSpace::freeform`].
    Freeform,
    /// [`BlendSpace::cartesian`].
    Cartesian,
    /// [`BlendSpace::directional`].
    Directional,
    /// [`BlendSpace::grid`].
    Grid,
}

impl std::fmt::Display for BlendSpaceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::OneD => "1D",
            Self::Freeform => "freeform 2D",
            Self::Cartesian => "Cartesian gradient-band",
            Self::Directional => "directional gradient-band",
            Self::Grid => "grid",
        })
    }
}

/// One axis of a [`BlendSpace::grid`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GridAxis {
    /// The column coordinates, `xs`.
    X,
    /// The row coordinates, `ys`.
    Y,
}

impl std::fmt::Display for GridAxis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::X => "x",
            Self::Y => "y",
        })
    }
}

/// Why a blend space could not be built. Child indices are positions in the list passed to the
/// constructor.
#[derive(Clone, Debug, PartialEq, Error)]
#[non_exhaustive]
pub enum BlendSpaceError {
    /// Fewer children than the kind can interpolate between (2 for 1D and gradient bands, 3 for
    /// freeform).
    #[error("a {kind} blend space needs at least {min} children, got {got}")]
    TooFewChildren {
        /// The space being built.
        kind: BlendSpaceKind,
        /// Children given.
        got: usize,
        /// Children needed.
        min: usize,
    },
    /// More than [`MAX_BLEND_CHILDREN`] children (for a grid, columns × rows).
    #[error("a {kind} blend space holds at most {MAX_BLEND_CHILDREN} children, got {got}")]
    TooManyChildren {
        /// The space being built.
        kind: BlendSpaceKind,
        /// Children given.
        got: usize,
    },
    /// A child's point has a NaN or infinite coordinate.
    #[error("child {child}'s point {point} is not finite")]
    NonFinitePoint {
        /// The offending child.
        child: usize,
        /// Its point (`y` is 0 in a 1D space).
        point: Vec2,
    },
    /// Two children share a point (within a millionth of the space's extent), so no parameter
    /// could tell them apart.
    #[error("child {child} sits at the same point {point} as child {first}")]
    DuplicatePoint {
        /// The earlier child.
        first: usize,
        /// The later child, at the same point.
        child: usize,
        /// The shared point.
        point: Vec2,
    },
    /// Every child of a freeform space lies on one line, so there is no triangle to interpolate
    /// in; a 1D space or a gradient band handles such a layout.
    #[error("all {count} children of a freeform blend space lie on one line")]
    Collinear {
        /// Children given.
        count: usize,
    },
    /// A freeform child lies so nearly on the line through its neighbours that every triangle
    /// through it would have no measurable area. Move it off the line or drop it.
    #[error(
        "child {child} of a freeform blend space lies on a line through its neighbours and cannot be triangulated"
    )]
    Untriangulable {
        /// The offending child.
        child: usize,
    },
    /// A grid needs at least two values on each axis; a single row is a 1D space.
    #[error("a grid blend space needs at least 2 {axis} values, got {got}")]
    GridAxisTooShort {
        /// The short axis.
        axis: GridAxis,
        /// Values given.
        got: usize,
    },
    /// A grid coordinate is NaN or infinite.
    #[error("grid {axis} value {index} is {value}, not finite")]
    NonFiniteGridValue {
        /// The axis.
        axis: GridAxis,
        /// Position in that axis's list.
        index: usize,
        /// The value.
        value: f32,
    },
    /// Grid coordinates must strictly increase so that every cell has a width and a height.
    #[error(
        "grid {axis} values must strictly increase, but value {index} ({value}) follows {previous}"
    )]
    GridNotIncreasing {
        /// The axis.
        axis: GridAxis,
        /// Position in that axis's list of the value that does not increase.
        index: usize,
        /// That value.
        value: f32,
        /// The value before it.
        previous: f32,
    },
}

/// A blend space: a point per child and the tables that turn a parameter into child weights.
/// Build one with [`BlendSpace::one_d`], [`freeform`](BlendSpace::freeform),
/// [`cartesian`](BlendSpace::cartesian), [`directional`](BlendSpace::directional) or
/// [`grid`](BlendSpace::grid); the variants' contents are private.
///
/// ```
/// use glam::Vec2;
/// use throng::blend_space::BlendSpace;
///
/// // Walk anchored at 1.5 m/s and run at 4.0 m/s, played at 3.0 m/s.
/// let speed = BlendSpace::one_d(vec![1.5, 4.0]).unwrap();
/// let mut w = [0.0; 2];
/// speed.weights(Vec2::new(3.0, 0.0), &mut w);
/// assert!((w[0] - 0.4).abs() < 1e-6 && (w[1] - 0.6).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum BlendSpace {
    /// Children on a line; see [`BlendSpace::one_d`].
    OneD(OneDSpace),
    /// Barycentric on a Delaunay triangulation; see [`BlendSpace::freeform`].
    Freeform(FreeformSpace),
    /// Cartesian gradient band; see [`BlendSpace::cartesian`].
    Cartesian(CartesianSpace),
    /// Polar gradient band; see [`BlendSpace::directional`].
    Directional(DirectionalSpace),
    /// Rectangular grid; see [`BlendSpace::grid`].
    Grid(GridSpace),
}

/// Tables of a 1D space: the points sorted, and which child each sorted point belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct OneDSpace {
    /// Strictly increasing.
    values: Vec<f32>,
    /// `children[k]` is the child at `values[k]`.
    children: Vec<usize>,
}

/// Tables of a freeform space, in its normalised frame.
#[derive(Clone, Debug, PartialEq)]
pub struct FreeformSpace {
    frame: Frame,
    num_children: usize,
    triangles: Vec<Triangle>,
    hull: Vec<HullEdge>,
}

/// Tables of a Cartesian gradient-band space, in its normalised frame.
#[derive(Clone, Debug, PartialEq)]
pub struct CartesianSpace {
    frame: Frame,
    points: Vec<Vec2>,
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
    radii: Vec<f32>,
    /// `pairs[i * n + j]`; the diagonal is all zeros, which yields 1.
    pairs: Vec<PolarPair>,
}

/// Tables of a grid space.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpace {
    /// Strictly increasing, at least 2.
    xs: Vec<f32>,
    /// Strictly increasing, at least 2.
    ys: Vec<f32>,
}

/// Maps a parameter into a 2D space's normalised frame: `(p − centre) · inv_scale`, where the
/// children's bounding box becomes a box of side at most 2 around the origin. Tolerances are
/// then absolute, and squared distances neither underflow nor overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Frame {
    centre: DVec2,
    inv_scale: f64,
}

impl Frame {
    fn fit(points: &[Vec2]) -> Self {
        let mut lo = DVec2::splat(f64::INFINITY);
        let mut hi = DVec2::splat(f64::NEG_INFINITY);
        for p in points {
            lo = lo.min(p.as_dvec2());
            hi = hi.max(p.as_dvec2());
        }
        let side = (hi - lo).max_element();
        Self {
            centre: (lo + hi) * 0.5,
            // A zero side means every point is the same; the duplicate check reports that.
            inv_scale: if side > 0.0 { 2.0 / side } else { 1.0 },
        }
    }

    fn to_local(self, p: Vec2) -> DVec2 {
        (p.as_dvec2() - self.centre) * self.inv_scale
    }

    /// The parameter in the normalised frame, with NaN read as 0 and anything beyond
    /// [`FAR_RADIUS`] pulled back to it along its own direction.
    fn query(self, p: Vec2) -> DVec2 {
        let raw = Vec2::new(nan_to_zero(p.x), nan_to_zero(p.y));
        pull_back((raw.as_dvec2() - self.centre) * self.inv_scale, FAR_RADIUS)
    }
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

fn nan_to_zero(v: f32) -> f32 {
    if v.is_nan() { 0.0 } else { v }
}

/// `q` pulled back to length `max_len` along its own direction if longer or infinite.
fn pull_back(q: DVec2, max_len: f64) -> DVec2 {
    if !q.is_finite() {
        // Only the infinite components decide the direction: (∞, 3) is "far along +x".
        let dir = DVec2::new(
            if q.x.is_infinite() { q.x.signum() } else { 0.0 },
            if q.y.is_infinite() { q.y.signum() } else { 0.0 },
        );
        return dir.normalize_or_zero() * max_len;
    }
    let len = q.length();
    if len > max_len { q * (max_len / len) } else { q }
}

/// Runs `fill` on a zeroed scratch slice of `n` weights and copies it into `out`, so that a
/// wrongly sized `out` is filled as far as it goes (and zero beyond) instead of panicking.
fn write_weights(n: usize, out: &mut [f32], fill: impl FnOnce(&mut [f32])) {
    let mut scratch = [0.0f32; MAX_BLEND_CHILDREN];
    let weights = &mut scratch[..n];
    fill(weights);
    for (o, w) in out
        .iter_mut()
        .zip(weights.iter().copied().chain(std::iter::repeat(0.0)))
    {
        *o = w;
    }
}

/// Normalises gradient-band influences to sum to one. `raw[i]` is child i's unclamped minimum;
/// if every influence clamped to zero (possible only in polar space, where pairs disagree about
/// angles across the branch cut), the child with the largest raw value takes everything.
fn normalise_influences(weights: &mut [f32], raw_best: usize) {
    let sum: f32 = weights.iter().sum();
    if sum > 1e-6 {
        let inv = 1.0 / sum;
        weights.iter_mut().for_each(|w| *w *= inv);
    } else {
        weights.fill(0.0);
        weights[raw_best] = 1.0;
    }
}

fn check_count(kind: BlendSpaceKind, got: usize, min: usize) -> Result<(), BlendSpaceError> {
    if got < min {
        return Err(BlendSpaceError::TooFewChildren { kind, got, min });
    }
    if got > MAX_BLEND_CHILDREN {
        return Err(BlendSpaceError::TooManyChildren { kind, got });
    }
    Ok(())
}

fn check_finite(points: &[Vec2]) -> Result<(), BlendSpaceError> {
    match points.iter().position(|p| !p.is_finite()) {
        Some(child) => Err(BlendSpaceError::NonFinitePoint {
            child,
            point: points[child],
        }),
        None => Ok(()),
    }
}

/// Rejects two points closer than [`DUPLICATE_DISTANCE`] in `local` (normalised) coordinates.
fn check_distinct(points: &[Vec2], local: &[DVec2]) -> Result<(), BlendSpaceError> {
    for (child, q) in local.iter().enumerate() {
        if let Some(first) = local[..child]
            .iter()
            .position(|r| r.distance(*q) < DUPLICATE_DISTANCE)
        {
            return Err(BlendSpaceError::DuplicatePoint {
                first,
                child,
                point: points[child],
            });
        }
    }
    Ok(())
}

impl BlendSpace {
    /// A 1D space: children at `points` on a line, in any order.
    ///
    /// ```text
    ///   weight      walk        run
    ///     1 ────────╮           ╭────────
    ///               │ ╲       ╱ │
    ///               │   ╲   ╱   │          between neighbours: linear;
    ///               │     ╳     │          beyond the ends: the end child alone
    ///               │   ╱   ╲   │
    ///     0 ────────╯ ╱       ╲ ╰────────
    ///              1.5         4.0   → speed
    /// ```
    ///
    /// # Errors
    /// [`TooFewChildren`](BlendSpaceError::TooFewChildren) under 2,
    /// [`TooManyChildren`](BlendSpaceError::TooManyChildren) over [`MAX_BLEND_CHILDREN`],
    /// [`NonFinitePoint`](BlendSpaceError::NonFinitePoint),
    /// [`DuplicatePoint`](BlendSpaceError::DuplicatePoint) for two equal values.
    pub fn one_d(points: Vec<f32>) -> Result<Self, BlendSpaceError> {
        check_count(BlendSpaceKind::OneD, points.len(), 2)?;
        if let Some(child) = points.iter().position(|v| !v.is_finite()) {
            return Err(BlendSpaceError::NonFinitePoint {
                child,
                point: Vec2::new(points[child], 0.0),
            });
        }
        let mut children: Vec<usize> = (0..points.len()).collect();
        // Stable, so that of two equal values the earlier child is reported as `first`.
        children.sort_by(|&a, &b| points[a].total_cmp(&points[b]));
        for pair in children.windows(2) {
            if points[pair[0]] == points[pair[1]] {
                let (first, child) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
                return Err(BlendSpaceError::DuplicatePoint {
                    first,
                    child,
                    point: Vec2::new(points[child], 0.0),
                });
            }
        }
        let values = children.iter().map(|&c| points[c]).collect();
        Ok(Self::OneD(OneDSpace { values, children }))
    }

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
        let frame = Frame::fit(&points);
        let local: Vec<DVec2> = points.iter().map(|&p| frame.to_local(p)).collect();
        check_distinct(&points, &local)?;
        if all_collinear(&local) {
            return Err(BlendSpaceError::Collinear {
                count: points.len(),
            });
        }
        let corners = delaunay(&local)?;
        let triangles = corners
            .iter()
            .map(|&[a, b, c]| {
                let m = DMat2::from_cols(local[b] - local[a], local[c] - local[a]);
                Triangle {
                    children: [a, b, c],
                    origin: local[a],
                    inv: m.inverse(),
                }
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
        Ok(Self::Freeform(FreeformSpace {
            frame,
            num_children: points.len(),
            triangles,
            hull,
        }))
    }

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
        let frame = Frame::fit(&points);
        let local: Vec<DVec2> = points.iter().map(|&p| frame.to_local(p)).collect();
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
        Ok(Self::Cartesian(CartesianSpace {
            frame,
            points,
            gradients,
        }))
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
        let max_radius = points
            .iter()
            .map(|p| p.as_dvec2().length())
            .fold(0.0, f64::max);
        let inv_scale = if max_radius > 0.0 {
            1.0 / max_radius
        } else {
            1.0
        };
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
                // The axis depends on the unordered pair, keeping (i, j) and (j, i) in one
                // frame so their bands meet exactly halfway (h_ij + h_ji = 1).
                let (lo, hi) = (i.min(j), i.max(j));
                // Nearer the origin than two distinct children may be to each other: no direction.
                let at_origin = radii[i] < DUPLICATE_DISTANCE || radii[j] < DUPLICATE_DISTANCE;
                let axis = if at_origin {
                    DVec2::X
                } else {
                    polar_axis(local[lo], local[hi])
                };
                let angle_from_axis = |q: DVec2| axis.perp_dot(q).atan2(axis.dot(q));
                let angular_weight = if at_origin { 0.0 } else { ANGULAR_WEIGHT };
                let inv_mean_radius = 2.0 / (radii[i] + radii[j]);
                let angle_i = if at_origin {
                    0.0
                } else {
                    angle_from_axis(local[i])
                };
                let angle_j = if at_origin {
                    0.0
                } else {
                    angle_from_axis(local[j])
                };
                let v = DVec2::new(
                    (radii[j] - radii[i]) * inv_mean_radius,
                    (angle_j - angle_i) * angular_weight,
                );
                pairs[i * n + j] = PolarPair {
                    axis_angle: axis.y.atan2(axis.x) as f32,
                    angle_i: angle_i as f32,
                    angular_weight: angular_weight as f32,
                    inv_mean_radius: inv_mean_radius as f32,
                    gradient: (v / v.length_squared()).as_vec2(),
                };
            }
        }
        Ok(Self::Directional(DirectionalSpace {
            inv_scale,
            radii: radii.iter().map(|&r| r as f32).collect(),
            pairs,
        }))
    }

    /// A rectangular grid with bilinear weights. Child `iy * xs.len() + ix` sits at
    /// `(xs[ix], ys[iy])` (row-major, rows along y).
    ///
    /// ```text
    ///  ys[1]  2 ─────────── 3        in the cell holding p, with tx, ty ∈ [0, 1]:
    ///         │       ·p    │          w0 = (1−tx)(1−ty)   w1 = tx(1−ty)
    ///         │             │          w2 = (1−tx)ty       w3 = tx·ty
    ///  ys[0]  0 ─────────── 1        outside the grid, p is clamped onto its border.
    ///       xs[0]         xs[1]
    /// ```
    ///
    /// # Errors
    /// [`GridAxisTooShort`](BlendSpaceError::GridAxisTooShort) under 2 values on an axis,
    /// [`TooManyChildren`](BlendSpaceError::TooManyChildren) when `xs.len() * ys.len()`
    /// exceeds [`MAX_BLEND_CHILDREN`],
    /// [`NonFiniteGridValue`](BlendSpaceError::NonFiniteGridValue),
    /// [`GridNotIncreasing`](BlendSpaceError::GridNotIncreasing).
    pub fn grid(xs: Vec<f32>, ys: Vec<f32>) -> Result<Self, BlendSpaceError> {
        for (axis, values) in [(GridAxis::X, &xs), (GridAxis::Y, &ys)] {
            if values.len() < 2 {
                return Err(BlendSpaceError::GridAxisTooShort {
                    axis,
                    got: values.len(),
                });
            }
        }
        let got = xs.len().saturating_mul(ys.len());
        if got > MAX_BLEND_CHILDREN {
            return Err(BlendSpaceError::TooManyChildren {
                kind: BlendSpaceKind::Grid,
                got,
            });
        }
        for (axis, values) in [(GridAxis::X, &xs), (GridAxis::Y, &ys)] {
            if let Some(index) = values.iter().position(|v| !v.is_finite()) {
                return Err(BlendSpaceError::NonFiniteGridValue {
                    axis,
                    index,
                    value: values[index],
                });
            }
            if let Some(k) = values.windows(2).position(|w| w[1] <= w[0]) {
                return Err(BlendSpaceError::GridNotIncreasing {
                    axis,
                    index: k + 1,
                    value: values[k + 1],
                    previous: values[k],
                });
            }
        }
        Ok(Self::Grid(GridSpace { xs, ys }))
    }

    /// Which kind of space this is.
    #[must_use]
    pub fn kind(&self) -> BlendSpaceKind {
        match self {
            Self::OneD(_) => BlendSpaceKind::OneD,
            Self::Freeform(_) => BlendSpaceKind::Freeform,
            Self::Cartesian(_) => BlendSpaceKind::Cartesian,
            Self::Directional(_) => BlendSpaceKind::Directional,
            Self::Grid(_) => BlendSpaceKind::Grid,
        }
    }

    /// Number of children, in `1..=MAX_BLEND_CHILDREN`; the length `weights` fills.
    #[must_use]
    pub fn num_children(&self) -> usize {
        match self {
            Self::OneD(s) => s.values.len(),
            Self::Freeform(s) => s.num_children,
            Self::Cartesian(s) => s.points.len(),
            Self::Directional(s) => s.radii.len(),
            Self::Grid(s) => s.xs.len() * s.ys.len(),
        }
    }

    /// Number of parameters the space reads: 1 for a 1D space, 2 otherwise.
    #[must_use]
    pub fn dimensions(&self) -> usize {
        match self {
            Self::OneD(_) => 1,
            _ => 2,
        }
    }

    /// Weights for parameter `p` (`p.y` ignored for 1D), one per child in constructor order.
    ///
    /// Always non-negative and summing to one (within 1e-5), for ANY input: NaN coordinates
    /// read as 0; infinite ones, and parameters beyond the space, are clamped to the space's
    /// extent (1D and grid: to the end points; 2D spaces: pulled back along their own
    /// direction to eight times the children's bounding box, past which every band has
    /// saturated). Never allocates.
    ///
    /// `out` should hold [`num_children`](Self::num_children) weights; a shorter slice gets the
    /// first weights only and a longer one zeros past the end, rather than a panic.
    pub fn weights(&self, p: Vec2, out: &mut [f32]) {
        match self {
            Self::OneD(s) => write_weights(s.values.len(), out, |w| s.fill(p.x, w)),
            Self::Freeform(s) => write_weights(s.num_children, out, |w| s.fill(p, w)),
            Self::Cartesian(s) => write_weights(s.points.len(), out, |w| s.fill(p, w)),
            Self::Directional(s) => write_weights(s.radii.len(), out, |w| s.fill(p, w)),
            Self::Grid(s) => write_weights(s.xs.len() * s.ys.len(), out, |w| s.fill(p, w)),
        }
    }
}

impl OneDSpace {
    fn fill(&self, x: f32, w: &mut [f32]) {
        let (lo, t) = segment(&self.values, x);
        w[self.children[lo]] = 1.0 - t;
        w[self.children[lo + 1]] = t;
    }
}

/// The segment `[values[lo], values[lo + 1]]` holding `v` (NaN read as 0, clamped to the ends)
/// and the fraction `t ∈ [0, 1]` along it. `values` strictly increases and has 2 or more.
///
/// The fraction is worked out in `f64`: two finite `f32` values can lie more than `f32::MAX`
/// apart, where `(v − a) / (b − a)` in `f32` is `∞ / ∞` (NaN) or `x / ∞` (0, the wrong weight);
/// in `f64` both differences are exact to rounding and finite.
fn segment(values: &[f32], v: f32) -> (usize, f32) {
    let first = values[0];
    let last = values[values.len() - 1];
    let v = nan_to_zero(v).clamp(first, last);
    let hi = values
        .partition_point(|&x| x < v)
        .clamp(1, values.len() - 1);
    let (a, b) = (f64::from(values[hi - 1]), f64::from(values[hi]));
    (hi - 1, ((f64::from(v) - a) / (b - a)).clamp(0.0, 1.0) as f32)
}

impl GridSpace {
    fn fill(&self, p: Vec2, w: &mut [f32]) {
        let nx = self.xs.len();
        let (ix, tx) = segment(&self.xs, p.x);
        let (iy, ty) = segment(&self.ys, p.y);
        w[iy * nx + ix] = (1.0 - tx) * (1.0 - ty);
        w[iy * nx + ix + 1] = tx * (1.0 - ty);
        w[(iy + 1) * nx + ix] = (1.0 - tx) * ty;
        w[(iy + 1) * nx + ix + 1] = tx * ty;
    }
}

impl CartesianSpace {
    fn fill(&self, p: Vec2, w: &mut [f32]) {
        let q = self.frame.query(p).as_vec2();
        let n = self.points.len();
        let mut raw_best = (0, f32::NEG_INFINITY);
        for (i, (pi, row)) in self
            .points
            .iter()
            .zip(self.gradients.chunks_exact(n))
            .enumerate()
        {
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
    fn fill(&self, p: Vec2, w: &mut [f32]) {
        let raw = Vec2::new(nan_to_zero(p.x), nan_to_zero(p.y));
        let q = pull_back(raw.as_dvec2() * self.inv_scale, FAR_RADIUS).as_vec2();
        let radius = q.length();
        let angle = q.y.atan2(q.x);
        let n = self.radii.len();
        let mut raw_best = (0, f32::NEG_INFINITY);
        for (i, (ri, row)) in self
            .radii
            .iter()
            .zip(self.pairs.chunks_exact(n))
            .enumerate()
        {
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
    if sum.length_squared() > 1e-12 {
        sum.normalize()
    } else {
        ua.perp()
    }
}

impl FreeformSpace {
    fn fill(&self, p: Vec2, w: &mut [f32]) {
        let q64 = self.frame.query(p);
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
fn all_collinear(points: &[DVec2]) -> bool {
    let p0 = points[0];
    let far = points
        .iter()
        .copied()
        .max_by(|a, b| a.distance_squared(p0).total_cmp(&b.distance_squared(p0)))
        .unwrap_or(p0);
    let len = far.distance(p0);
    points
        .iter()
        .all(|&p| orient(p0, far, p).abs() <= COLLINEAR_DISTANCE * len)
}

/// Delaunay triangulation of distinct, not-all-collinear points (normalised frame), as
/// counter-clockwise index triples.
///
/// | step | what |
/// | --- | --- |
/// | 1 | sort the points by (x, y) |
/// | 2 | fan the first run of collinear points from the first point off their line |
/// | 3 | for each later point (outside the hull so far, by the sort): join it to every hull edge it sees, and make it a hull vertex |
/// | 4 | flip any edge whose opposite vertex lies inside the other triangle's circumcircle until none does (Lawson) |
fn delaunay(points: &[DVec2]) -> Result<Vec<[usize; 3]>, BlendSpaceError> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a]
            .x
            .total_cmp(&points[b].x)
            .then(points[a].y.total_cmp(&points[b].y))
    });
    let at = |k: usize| points[order[k]];

    let apex = (2..order.len())
        .find(|&k| orient(at(0), at(1), at(k)).abs() > AREA_EPS)
        .ok_or(BlendSpaceError::Collinear {
            count: points.len(),
        })?;
    let left_turn = orient(at(0), at(1), at(apex)) > 0.0;
    let mut triangles = Vec::with_capacity(2 * points.len());
    for m in 0..apex - 1 {
        let (a, b, c) = (order[m], order[m + 1], order[apex]);
        let tri = if left_turn { [a, b, c] } else { [b, a, c] };
        if orient(points[tri[0]], points[tri[1]], points[tri[2]]) <= AREA_EPS {
            return Err(BlendSpaceError::Untriangulable {
                child: order[m + 1],
            });
        }
        triangles.push(tri);
    }
    // The hull, counter-clockwise.
    let mut hull: Vec<usize> = if left_turn {
        order[..=apex].to_vec()
    } else {
        std::iter::once(order[0])
            .chain(order[..=apex].iter().rev().copied().take(apex))
            .collect()
    };

    for &p in &order[apex + 1..] {
        let h = hull.len();
        let sees =
            |e: usize| orient(points[hull[e]], points[hull[(e + 1) % h]], points[p]) < -AREA_EPS;
        // The first edge of a run of visible edges: visible, its predecessor not.
        let start = (0..h)
            .find(|&e| sees(e) && !sees((e + h - 1) % h))
            .ok_or(BlendSpaceError::Untriangulable { child: p })?;
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
                let [a, b, c] = [
                    triangles[t1][e],
                    triangles[t1][(e + 1) % 3],
                    triangles[t1][(e + 2) % 3],
                ];
                let Some((t2, d)) = triangles.iter().enumerate().find_map(|(t, tri)| {
                    (0..3)
                        .find(|&f| tri[f] == b && tri[(f + 1) % 3] == a)
                        .map(|f| (t, tri[(f + 2) % 3]))
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
fn boundary_edges(triangles: &[[usize; 3]]) -> Vec<(usize, usize)> {
    let edges = |tri: &[usize; 3]| [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])];
    triangles
        .iter()
        .flat_map(edges)
        .filter(|&(a, b)| !triangles.iter().flat_map(edges).any(|e| e == (b, a)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights_of(space: &BlendSpace, p: Vec2) -> Vec<f32> {
        let mut w = vec![f32::NAN; space.num_children()];
        space.weights(p, &mut w);
        w
    }

    fn assert_weights(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() < 1e-5,
                "child {i}: got {g}, want {w} (all: {got:?})"
            );
        }
    }

    fn square() -> Vec<Vec2> {
        vec![
            Vec2::new(0.0, 0.0),
            Vec2::new(1.0, 0.0),
            Vec2::new(0.0, 1.0),
            Vec2::new(1.0, 1.0),
        ]
    }

    #[test]
    fn one_d_seed_example_walk_run_at_three() {
        // Seed 001: walk at 1.5 m/s, run at 4.0 m/s, moving at 3.0 m/s → 0.4 walk, 0.6 run.
        let space = BlendSpace::one_d(vec![1.5, 4.0]).unwrap();
        assert_weights(&weights_of(&space, Vec2::new(3.0, 0.0)), &[0.4, 0.6]);
        assert_weights(&weights_of(&space, Vec2::new(4.0, 0.0)), &[0.0, 1.0]);
        assert_weights(&weights_of(&space, Vec2::new(1.5, 0.0)), &[1.0, 0.0]);
    }

    #[test]
    fn one_d_clamps_at_the_ends_and_ignores_y() {
        let space = BlendSpace::one_d(vec![0.0, 1.5, 4.0]).unwrap();
        assert_weights(&weights_of(&space, Vec2::new(-3.0, 7.0)), &[1.0, 0.0, 0.0]);
        assert_weights(&weights_of(&space, Vec2::new(10.0, -7.0)), &[0.0, 0.0, 1.0]);
        assert_weights(
            &weights_of(&space, Vec2::new(f32::INFINITY, 0.0)),
            &[0.0, 0.0, 1.0],
        );
        assert_weights(
            &weights_of(&space, Vec2::new(f32::NEG_INFINITY, 0.0)),
            &[1.0, 0.0, 0.0],
        );
        // NaN reads as 0: exactly on the first child.
        assert_weights(
            &weights_of(&space, Vec2::new(f32::NAN, 0.0)),
            &[1.0, 0.0, 0.0],
        );
    }

    #[test]
    fn one_d_accepts_children_in_any_order() {
        let space = BlendSpace::one_d(vec![4.0, 0.0, 1.5]).unwrap();
        // Between 1.5 (child 2) and 4.0 (child 0).
        assert_weights(&weights_of(&space, Vec2::new(3.0, 0.0)), &[0.6, 0.0, 0.4]);
        // Between 0.0 (child 1) and 1.5 (child 2).
        assert_weights(
            &weights_of(&space, Vec2::new(0.5, 0.0)),
            &[0.0, 2.0 / 3.0, 1.0 / 3.0],
        );
    }

    #[test]
    fn four_corner_cartesian_and_grid_share_centre_and_corners() {
        let cart = BlendSpace::cartesian(square()).unwrap();
        let grid = BlendSpace::grid(vec![0.0, 1.0], vec![0.0, 1.0]).unwrap();
        for space in [&cart, &grid] {
            assert_weights(&weights_of(space, Vec2::splat(0.5)), &[0.25; 4]);
            for (child, corner) in square().into_iter().enumerate() {
                let mut want = [0.0; 4];
                want[child] = 1.0;
                assert_weights(&weights_of(space, corner), &want);
            }
        }
    }

    #[test]
    fn grid_is_bilinear_row_major_and_clamped() {
        let grid = BlendSpace::grid(vec![0.0, 1.0, 3.0], vec![-1.0, 1.0]).unwrap();
        // x = 2 is halfway between columns 1 and 2; y = 0.5 is 3/4 of the way up.
        let mut want = [0.0; 6];
        want[1] = 0.5 * 0.25;
        want[2] = 0.5 * 0.25;
        want[4] = 0.5 * 0.75;
        want[5] = 0.5 * 0.75;
        assert_weights(&weights_of(&grid, Vec2::new(2.0, 0.5)), &want);
        // Far outside: clamped onto the corner (3, −1), child 2.
        assert_weights(
            &weights_of(&grid, Vec2::new(50.0, -50.0)),
            &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        );
    }

    #[test]
    fn cartesian_on_a_line_matches_one_d() {
        let cart = BlendSpace::cartesian(vec![Vec2::new(1.5, 0.0), Vec2::new(4.0, 0.0)]).unwrap();
        assert_weights(&weights_of(&cart, Vec2::new(3.0, 0.0)), &[0.4, 0.6]);
        // Off the line, only the projection counts.
        assert_weights(&weights_of(&cart, Vec2::new(3.0, 9.0)), &[0.4, 0.6]);
    }

    #[test]
    fn freeform_reproduces_barycentric_coordinates() {
        let space = BlendSpace::freeform(vec![
            Vec2::new(0.0, 0.0),
            Vec2::new(4.0, 0.0),
            Vec2::new(0.0, 2.0),
        ])
        .unwrap();
        // p = 0.5·A + 0.25·B + 0.25·C = (1.0, 0.5).
        assert_weights(&weights_of(&space, Vec2::new(1.0, 0.5)), &[0.5, 0.25, 0.25]);
    }

    #[test]
    fn freeform_on_a_child_gives_it_everything() {
        let mut points = square();
        points.push(Vec2::new(0.5, 0.5));
        points.push(Vec2::new(2.0, 0.3));
        let space = BlendSpace::freeform(points.clone()).unwrap();
        for (child, p) in points.iter().enumerate() {
            let mut want = vec![0.0; points.len()];
            want[child] = 1.0;
            assert_weights(&weights_of(&space, *p), &want);
        }
    }

    #[test]
    fn freeform_outside_the_hull_projects_onto_the_nearest_edge() {
        let space = BlendSpace::freeform(square()).unwrap();
        // Left of the left edge (0,0)–(0,1) at height 0.3: as at (0, 0.3).
        let outside = weights_of(&space, Vec2::new(-2.0, 0.3));
        assert_weights(&outside, &[0.7, 0.0, 0.3, 0.0]);
        assert_weights(&outside, &weights_of(&space, Vec2::new(0.0, 0.3)));
        // Beyond a corner: that corner alone.
        assert_weights(
            &weights_of(&space, Vec2::new(3.0, 3.0)),
            &[0.0, 0.0, 0.0, 1.0],
        );
    }

    #[test]
    fn delaunay_of_square_with_centre_is_four_triangles_round_the_centre() {
        let mut points = square();
        points.push(Vec2::new(0.5, 0.5));
        let local: Vec<DVec2> = points.iter().map(|p| p.as_dvec2()).collect();
        let triangles = delaunay(&local).unwrap();
        assert_eq!(triangles.len(), 4, "{triangles:?}");
        assert!(triangles.iter().all(|t| t.contains(&4)), "{triangles:?}");
        assert_eq!(boundary_edges(&triangles).len(), 4);
    }

    #[test]
    fn delaunay_flips_the_sweeps_long_diagonal() {
        // Sorted by x the sweep first builds (0, 1, 2), so its diagonal is the long 1–2; the
        // short 0–3 is the Delaunay one (3 lies inside the circumcircle of 0, 1, 2).
        let local = [
            DVec2::new(0.0, 0.0),
            DVec2::new(0.4, 1.0),
            DVec2::new(0.6, -1.0),
            DVec2::new(1.0, 0.0),
        ];
        let triangles = delaunay(&local).unwrap();
        assert_eq!(triangles.len(), 2);
        assert!(
            triangles.iter().all(|t| t.contains(&0) && t.contains(&3)),
            "{triangles:?}"
        );
    }

    #[test]
    fn directional_at_a_child_with_its_speed_gives_it_nearly_everything() {
        let points = vec![
            Vec2::ZERO,
            Vec2::new(0.0, 1.5),
            Vec2::new(1.2, 0.0),
            Vec2::new(0.0, -1.0),
            Vec2::new(-1.2, 0.0),
            Vec2::new(0.0, 4.0),
        ];
        let space = BlendSpace::directional(points.clone()).unwrap();
        for (child, p) in points.iter().enumerate() {
            let w = weights_of(&space, *p);
            assert!(w[child] > 0.999, "child {child} at {p}: {w:?}");
        }
        // Halfway in speed between walk forward and run forward, straight ahead.
        let w = weights_of(&space, Vec2::new(0.0, 2.75));
        assert!(
            (w[1] - 0.5).abs() < 1e-4 && (w[5] - 0.5).abs() < 1e-4,
            "{w:?}"
        );
    }

    #[test]
    fn directional_centre_child_dominates_near_the_origin_in_every_direction() {
        let points = vec![
            Vec2::new(0.0, 1.0),
            Vec2::new(1.0, 0.0),
            Vec2::ZERO,
            Vec2::new(0.0, -1.0),
            Vec2::new(-1.0, 0.0),
        ];
        let space = BlendSpace::directional(points).unwrap();
        assert_weights(&weights_of(&space, Vec2::ZERO), &[0.0, 0.0, 1.0, 0.0, 0.0]);
        for k in 0..16 {
            let a = k as f32 * std::f32::consts::TAU / 16.0;
            let w = weights_of(&space, Vec2::from_angle(a) * 0.1);
            assert!(w[2] > 0.8, "direction {a} rad: {w:?}");
        }
    }

    #[test]
    fn directional_blends_along_the_arc_between_two_directions() {
        let space =
            BlendSpace::directional(vec![Vec2::new(1.0, 0.0), Vec2::new(0.0, 1.0)]).unwrap();
        // On the unit circle at 45°: half each. At 30°: a third of the way from +x to +y.
        assert_weights(
            &weights_of(&space, Vec2::from_angle(std::f32::consts::FRAC_PI_4)),
            &[0.5, 0.5],
        );
        assert_weights(
            &weights_of(&space, Vec2::from_angle(std::f32::consts::FRAC_PI_6)),
            &[2.0 / 3.0, 1.0 / 3.0],
        );
    }

    #[test]
    fn wrongly_sized_output_is_filled_without_panicking() {
        let space = BlendSpace::one_d(vec![0.0, 1.0]).unwrap();
        let mut short = [9.0f32; 1];
        space.weights(Vec2::new(0.25, 0.0), &mut short);
        assert_eq!(short, [0.75]);
        let mut long = [9.0f32; 3];
        space.weights(Vec2::new(0.25, 0.0), &mut long);
        assert_eq!(long, [0.75, 0.25, 0.0]);
    }

    #[test]
    fn dimensions_and_counts() {
        let one = BlendSpace::one_d(vec![0.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (one.dimensions(), one.num_children(), one.kind()),
            (1, 3, BlendSpaceKind::OneD)
        );
        let grid = BlendSpace::grid(vec![0.0, 1.0, 2.0], vec![0.0, 1.0]).unwrap();
        assert_eq!((grid.dimensions(), grid.num_children()), (2, 6));
        let free = BlendSpace::freeform(square()).unwrap();
        assert_eq!((free.dimensions(), free.num_children()), (2, 4));
    }
}
