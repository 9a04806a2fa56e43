//! Blend-space weights: where a blend tree's parameters fall among its children's points.
//!
//! Stand-in for the graph branch so it compiles and tests on its own: 1D and grid are exact;
//! the 2D scattered spaces use the Cartesian gradient band. The blend-space branch replaces
//! this file at merge with the full implementation of the same API.

use glam::Vec2;

/// Most children one blend space may have; sized so weight scratch fits on the stack.
pub const MAX_BLEND_CHILDREN: usize = 64;

/// Why a blend space could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BlendSpaceError {
    /// No points, or more than [`MAX_BLEND_CHILDREN`].
    #[error("a blend space needs 1 to {MAX_BLEND_CHILDREN} children, got {0}")]
    ChildCount(usize),
    /// A point coordinate is NaN or infinite.
    #[error("child {0} has a non-finite point")]
    NonFinite(usize),
    /// Two children share a point.
    #[error("children {0} and {1} share a point")]
    Duplicate(usize, usize),
}

/// A blend space: points for each child and the rule that turns a parameter into weights.
pub enum BlendSpace {
    /// Children on a line, sorted order kept as `order`.
    OneD {
        /// Each child's point.
        points: Vec<f32>,
        /// Child indices sorted by point.
        order: Vec<usize>,
    },
    /// Scattered 2D points weighted by the gradient band.
    Band {
        /// Each child's point.
        points: Vec<Vec2>,
    },
    /// A rectangular grid, children row-major `iy * xs.len() + ix`.
    Grid {
        /// Column coordinates, ascending.
        xs: Vec<f32>,
        /// Row coordinates, ascending.
        ys: Vec<f32>,
    },
}

fn check_count(n: usize) -> Result<(), BlendSpaceError> {
    if n == 0 || n > MAX_BLEND_CHILDREN {
        return Err(BlendSpaceError::ChildCount(n));
    }
    Ok(())
}

fn band(points: Vec<Vec2>) -> Result<BlendSpace, BlendSpaceError> {
    check_count(points.len())?;
    for (i, p) in points.iter().enumerate() {
        if !p.is_finite() {
            return Err(BlendSpaceError::NonFinite(i));
        }
        for (j, q) in points.iter().enumerate().take(i) {
            if p == q {
                return Err(BlendSpaceError::Duplicate(j, i));
            }
        }
    }
    Ok(BlendSpace::Band { points })
}

impl BlendSpace {
    /// A 1D space: linear between neighbours, clamped at the ends.
    pub fn one_d(points: Vec<f32>) -> Result<Self, BlendSpaceError> {
        check_count(points.len())?;
        if let Some(i) = points.iter().position(|p| !p.is_finite()) {
            return Err(BlendSpaceError::NonFinite(i));
        }
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by(|&a, &b| points[a].total_cmp(&points[b]));
        for w in order.windows(2) {
            if points[w[0]] == points[w[1]] {
                return Err(BlendSpaceError::Duplicate(w[0], w[1]));
            }
        }
        Ok(Self::OneD { points, order })
    }

    /// A 2D freeform space (stand-in: gradient band).
    pub fn freeform(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        band(points)
    }

    /// A 2D Cartesian gradient-band space.
    pub fn cartesian(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        band(points)
    }

    /// A 2D directional space (stand-in: Cartesian gradient band).
    pub fn directional(points: Vec<Vec2>) -> Result<Self, BlendSpaceError> {
        band(points)
    }

    /// A rectangular grid with bilinear weights; children row-major `iy * xs.len() + ix`.
    pub fn grid(xs: Vec<f32>, ys: Vec<f32>) -> Result<Self, BlendSpaceError> {
        check_count(xs.len() * ys.len())?;
        for axis in [&xs, &ys] {
            if let Some(i) = axis.iter().position(|p| !p.is_finite()) {
                return Err(BlendSpaceError::NonFinite(i));
            }
            if let Some(i) = axis.windows(2).position(|w| w[0] >= w[1]) {
                return Err(BlendSpaceError::Duplicate(i, i + 1));
            }
        }
        Ok(Self::Grid { xs, ys })
    }

    /// Number of children, the length `weights` expects.
    #[must_use]
    pub fn num_children(&self) -> usize {
        match self {
            Self::OneD { points, .. } => points.len(),
            Self::Band { points } => points.len(),
            Self::Grid { xs, ys } => xs.len() * ys.len(),
        }
    }

    /// 1 for a line, 2 otherwise.
    #[must_use]
    pub fn dimensions(&self) -> usize {
        match self {
            Self::OneD { .. } => 1,
            _ => 2,
        }
    }

    /// Writes each child's weight for parameter `p` (1D reads `p.x`). Weights are non-negative
    /// and sum to one; a NaN coordinate reads as 0.
    pub fn weights(&self, p: Vec2, out: &mut [f32]) {
        out.iter_mut().for_each(|w| *w = 0.0);
        let p = Vec2::new(if p.x.is_nan() { 0.0 } else { p.x }, if p.y.is_nan() { 0.0 } else { p.y });
        match self {
            Self::OneD { points, order } => {
                let (a, b, t) = segment(points, order, p.x);
                put(out, a, 1.0 - t);
                put(out, b, t);
            }
            Self::Band { points } => {
                let mut sum = 0.0;
                for (i, pi) in points.iter().enumerate() {
                    let mut w = 1.0f32;
                    for (j, pj) in points.iter().enumerate() {
                        if i != j {
                            let d = *pj - *pi;
                            w = w.min(1.0 - (p - *pi).dot(d) / d.length_squared());
                        }
                    }
                    let w = w.max(0.0);
                    put(out, i, w);
                    sum += w;
                }
                normalise(out, sum);
            }
            Self::Grid { xs, ys } => {
                let (x0, x1, tx) = axis(xs, p.x);
                let (y0, y1, ty) = axis(ys, p.y);
                let n = xs.len();
                put(out, y0 * n + x0, (1.0 - tx) * (1.0 - ty));
                put(out, y0 * n + x1, tx * (1.0 - ty));
                put(out, y1 * n + x0, (1.0 - tx) * ty);
                put(out, y1 * n + x1, tx * ty);
            }
        }
    }
}

fn put(out: &mut [f32], i: usize, w: f32) {
    if let Some(o) = out.get_mut(i) {
        *o += w;
    }
}

fn normalise(out: &mut [f32], sum: f32) {
    if sum > 0.0 && sum.is_finite() {
        out.iter_mut().for_each(|w| *w /= sum);
    } else if let Some(first) = out.first_mut() {
        *first = 1.0;
    }
}

/// The neighbours of `x` along sorted points and the fraction towards the second, clamped.
fn segment(points: &[f32], order: &[usize], x: f32) -> (usize, usize, f32) {
    let first = order.first().copied().unwrap_or(0);
    let last = order.last().copied().unwrap_or(0);
    if x.is_nan() || x <= points.get(first).copied().unwrap_or(0.0) {
        return (first, first, 0.0);
    }
    if x >= points.get(last).copied().unwrap_or(0.0) {
        return (last, last, 0.0);
    }
    for w in order.windows(2) {
        let (a, b) = (points[w[0]], points[w[1]]);
        if x <= b {
            return (w[0], w[1], ((x - a) / (b - a)).clamp(0.0, 1.0));
        }
    }
    (last, last, 0.0)
}

fn axis(values: &[f32], x: f32) -> (usize, usize, f32) {
    let n = values.len();
    if n <= 1 || x <= values[0] {
        return (0, 0, 0.0);
    }
    if x >= values[n - 1] {
        return (n - 1, n - 1, 0.0);
    }
    let i = values.windows(2).position(|w| x <= w[1]).unwrap_or(n - 2);
    (i, i + 1, ((x - values[i]) / (values[i + 1] - values[i])).clamp(0.0, 1.0))
}
