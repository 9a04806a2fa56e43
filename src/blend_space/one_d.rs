//! 1D blend spaces: linear between the two neighbours of the parameter, clamped at the ends.

use glam::Vec2;

use super::{BlendSpace, BlendSpaceError, BlendSpaceKind, check_count, nan_to_zero};
// Only named in docs.
#[cfg(doc)]
use super::MAX_BLEND_CHILDREN;

/// Tables of a 1D space: the points sorted, and which child each sorted point belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct OneDSpace {
    /// Strictly increasing.
    pub(super) values: Vec<f32>,
    /// `children[k]` is the child at `values[k]`.
    children: Vec<usize>,
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
            return Err(BlendSpaceError::NonFinitePoint { child, point: Vec2::new(points[child], 0.0) });
        }
        let mut children: Vec<usize> = (0..points.len()).collect();
        // Stable, so that of two equal values the earlier child is reported as `first`.
        children.sort_by(|&a, &b| points[a].total_cmp(&points[b]));
        for pair in children.windows(2) {
            if points[pair[0]] == points[pair[1]] {
                let (first, child) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
                return Err(BlendSpaceError::DuplicatePoint { first, child, point: Vec2::new(points[child], 0.0) });
            }
        }
        let values = children.iter().map(|&c| points[c]).collect();
        Ok(Self::OneD(OneDSpace { values, children }))
    }
}

impl OneDSpace {
    /// [`super::tree_words::SPACE_ONE_D`]: `n`, the sorted values, the child of each.
    pub(super) fn encode(&self, out: &mut Vec<u32>) {
        out.push(self.values.len() as u32);
        out.extend(self.values.iter().map(|v| v.to_bits()));
        out.extend(self.children.iter().map(|&c| c as u32));
    }

    pub(super) fn fill(&self, x: f32, w: &mut [f32]) {
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
pub(super) fn segment(values: &[f32], v: f32) -> (usize, f32) {
    let first = values[0];
    let last = values[values.len() - 1];
    let v = nan_to_zero(v).clamp(first, last);
    let hi = values.partition_point(|&x| x < v).clamp(1, values.len() - 1);
    let (a, b) = (f64::from(values[hi - 1]), f64::from(values[hi]));
    (hi - 1, ((f64::from(v) - a) / (b - a)).clamp(0.0, 1.0) as f32)
}
