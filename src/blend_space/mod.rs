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

mod delaunay;
mod error;
mod freeform;
mod gradient_band;
mod grid;
mod one_d;
#[cfg(test)]
mod tests;
mod trees;

use glam::{DVec2, Vec2};

pub use error::BlendSpaceError;
pub use freeform::FreeformSpace;
pub use gradient_band::{CartesianSpace, DirectionalSpace};
pub use grid::GridSpace;
pub use one_d::OneDSpace;
pub use trees::{
    BlendTreeError, BlendTrees, MAX_TREE_NODES, NO_TREE_STATE, TreeNode, TreeScratch, TreeState, canonical_input,
    tree_words,
};

/// The most children one blend space may have. `weights` keeps its scratch on the stack, and
/// the gradient bands cost `O(n²)` per query, so the limit keeps both bounded.
pub const MAX_BLEND_CHILDREN: usize = 64;

/// Two children of a 2D space closer than this, in the space's normalised coordinates (the points'
/// bounding box scaled to a side of 2), are one point: gradient bands divide by their distance
/// squared and triangles through them have no area.
const DUPLICATE_DISTANCE: f64 = 1e-6;

/// Radius (normalised coordinates, where the children lie within about 1.5) to which infinite and
/// huge parameters are pulled back along their own direction. Far enough that every gradient
/// band has saturated for any sensible layout, near enough that f32 keeps full precision.
const FAR_RADIUS: f64 = 8.0;

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

/// Maps a parameter into a 2D space's normalised coordinates: `(p − centre) · inv_scale`, where the
/// children's bounding box becomes a box of side at most 2 around the origin. Tolerances are
/// then absolute, and squared distances neither underflow nor overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Normaliser {
    centre: DVec2,
    inv_scale: f64,
}

impl Normaliser {
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

    /// The normaliser as `shaders/blend_space.wgsl`'s `space_query` reads it (seven words):
    /// the centre as two f32 halves (`hi + lo`, so that a centre no f32 holds is still exact
    /// to f64's precision), then the scale: when it is a normal f32, itself, 1, and what the
    /// f32 misses of the f64 (the shader then forms the query with error-free sums and a fused
    /// product, within rounding of the CPU's f64); beyond f32's normal range, two factors
    /// whose product it is, 0.
    fn encode(self, out: &mut Vec<u32>) {
        let hi = self.centre.as_vec2();
        let lo = (self.centre - hi.as_dvec2()).as_vec2();
        let (scale_a, scale_b, scale_lo) =
            if (f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&self.inv_scale) {
                let a = self.inv_scale as f32;
                (a, 1.0, (self.inv_scale - f64::from(a)) as f32)
            } else {
                let a = self.inv_scale.sqrt() as f32;
                (a, (self.inv_scale / f64::from(a)) as f32, 0.0)
            };
        out.extend([hi.x, hi.y, lo.x, lo.y, scale_a, scale_b, scale_lo].map(f32::to_bits));
    }

    /// A normalised point back in the parameter's coordinates (as an f32 child point).
    fn to_parameter(self, q: DVec2) -> Vec2 {
        (q / self.inv_scale + self.centre).as_vec2()
    }

    fn to_local(self, p: Vec2) -> DVec2 {
        (p.as_dvec2() - self.centre) * self.inv_scale
    }

    /// The parameter in the normalised coordinates, with NaN read as 0 and anything beyond
    /// [`FAR_RADIUS`] pulled back to it along its own direction.
    fn query(self, p: Vec2) -> DVec2 {
        let raw = Vec2::new(nan_to_zero(p.x), nan_to_zero(p.y));
        pull_back((raw.as_dvec2() - self.centre) * self.inv_scale, FAR_RADIUS)
    }
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
    for (o, w) in out.iter_mut().zip(weights.iter().copied().chain(std::iter::repeat(0.0))) {
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
        Some(child) => Err(BlendSpaceError::NonFinitePoint { child, point: points[child] }),
        None => Ok(()),
    }
}

/// Rejects two points closer than [`DUPLICATE_DISTANCE`] in `local` (normalised) coordinates.
fn check_distinct(points: &[Vec2], local: &[DVec2]) -> Result<(), BlendSpaceError> {
    for (child, q) in local.iter().enumerate() {
        if let Some(first) = local[..child].iter().position(|r| r.distance(*q) < DUPLICATE_DISTANCE) {
            return Err(BlendSpaceError::DuplicatePoint { first, child, point: points[child] });
        }
    }
    Ok(())
}

impl BlendSpace {
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

    /// Appends the space's tables as `shaders/blend_space.wgsl` reads them (words, f32 as
    /// bits; each kind's layout is in [`tree_words`]). The kind itself is its node's word.
    pub(crate) fn encode(&self, out: &mut Vec<u32>) {
        match self {
            Self::OneD(s) => s.encode(out),
            Self::Freeform(s) => s.encode(out),
            Self::Cartesian(s) => s.encode(out),
            Self::Directional(s) => s.encode(out),
            Self::Grid(s) => s.encode(out),
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
