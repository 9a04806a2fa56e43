//! Grid blend spaces: bilinear in a rectangular grid cell, clamped at the edges.

use glam::Vec2;

use super::one_d::segment;
use super::{BlendSpace, BlendSpaceError, BlendSpaceKind, GridAxis, MAX_BLEND_CHILDREN};

/// Tables of a grid space.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpace {
    /// Strictly increasing, at least 2.
    pub(super) xs: Vec<f32>,
    /// Strictly increasing, at least 2.
    pub(super) ys: Vec<f32>,
}

impl BlendSpace {
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
                return Err(BlendSpaceError::GridAxisTooShort { axis, got: values.len() });
            }
        }
        let got = xs.len().saturating_mul(ys.len());
        if got > MAX_BLEND_CHILDREN {
            return Err(BlendSpaceError::TooManyChildren { kind: BlendSpaceKind::Grid, got });
        }
        for (axis, values) in [(GridAxis::X, &xs), (GridAxis::Y, &ys)] {
            if let Some(index) = values.iter().position(|v| !v.is_finite()) {
                return Err(BlendSpaceError::NonFiniteGridValue { axis, index, value: values[index] });
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
}

impl GridSpace {
    /// [`super::tree_words::SPACE_GRID`]: columns, rows, `xs`, `ys`.
    pub(super) fn encode(&self, out: &mut Vec<u32>) {
        out.extend([self.xs.len() as u32, self.ys.len() as u32]);
        out.extend(self.xs.iter().chain(&self.ys).map(|v| v.to_bits()));
    }

    pub(super) fn fill(&self, p: Vec2, w: &mut [f32]) {
        let nx = self.xs.len();
        let (ix, tx) = segment(&self.xs, p.x);
        let (iy, ty) = segment(&self.ys, p.y);
        w[iy * nx + ix] = (1.0 - tx) * (1.0 - ty);
        w[iy * nx + ix + 1] = tx * (1.0 - ty);
        w[(iy + 1) * nx + ix] = (1.0 - tx) * ty;
        w[(iy + 1) * nx + ix + 1] = tx * ty;
    }
}
