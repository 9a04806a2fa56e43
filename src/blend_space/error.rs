//! Why a blend space could not be built: [`BlendSpaceError`].

use glam::Vec2;
use thiserror::Error;

use super::{BlendSpaceKind, GridAxis, MAX_BLEND_CHILDREN};

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
    #[error("child {child} of a freeform blend space lies on a line through its neighbours and cannot be triangulated")]
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
    #[error("grid {axis} values must strictly increase, but value {index} ({value}) follows {previous}")]
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
