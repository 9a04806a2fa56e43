//! The tests' one way to say "these floats agree": every helper here fails on NaN.
//!
//! `f32::max` returns its other operand when one is NaN, so a plain fold of it over
//! differences skips a NaN and a NaN output passes any tolerance.
//! Here a NaN anywhere makes the result NaN, and every comparison against a tolerance
//! (`NaN <= t` is false) then fails.

/// How far GPU output may be from its CPU mirror, per float (DESIGN.md's 1e-4).
pub const GPU_TOLERANCE: f32 = 1e-4;

/// The larger of `a` and `b`, NaN when either is.
#[must_use]
pub fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { f32::NAN } else { a.max(b) }
}

/// The smaller of `a` and `b`, NaN when either is.
#[must_use]
pub fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { f32::NAN } else { a.min(b) }
}

/// The largest of `values` (distances, differences: 0 when there are none), NaN when any is.
#[must_use]
pub fn largest(values: impl IntoIterator<Item = f32>) -> f32 {
    values.into_iter().fold(0.0, nan_max)
}

/// The largest `|a[i] - b[i]|`. NaN when the lengths differ or any difference is NaN: a NaN on
/// either side, or the same infinity on both, which no test's output should hold.
#[must_use]
pub fn worst_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::NAN;
    }
    largest(a.iter().zip(b).map(|(x, y)| (x - y).abs()))
}

/// Asserts that `got` is `expected` within `tolerance` per float, both laid out as characters
/// of `joints` joints of `floats_per_joint` floats. A failure names `what`, the character, the
/// joint, the first float out of tolerance, and both joints' floats; a NaN on either side fails.
#[track_caller]
pub fn assert_matrices_close(
    expected: &[f32],
    got: &[f32],
    floats_per_joint: usize,
    joints: usize,
    tolerance: f32,
    what: &str,
) {
    assert_matrices_close_with(expected, got, floats_per_joint, joints, tolerance, what, |_| String::new());
}

/// [`assert_matrices_close`], adding `describe(character)` to a failure's message (the
/// character's programs, samples or update rate).
#[track_caller]
pub fn assert_matrices_close_with(
    expected: &[f32],
    got: &[f32],
    floats_per_joint: usize,
    joints: usize,
    tolerance: f32,
    what: &str,
    describe: impl Fn(usize) -> String,
) {
    assert!(floats_per_joint > 0 && joints > 0, "{what}: {floats_per_joint} floats per joint, {joints} joints");
    assert_eq!(expected.len(), got.len(), "{what}: {} floats expected, {} got", expected.len(), got.len());
    // `chunks_exact` would leave a partial character's floats uncompared.
    let per_character = floats_per_joint * joints;
    assert!(
        expected.len().is_multiple_of(per_character),
        "{what}: {} floats are not whole characters of {joints} × {floats_per_joint}",
        expected.len()
    );
    for (k, (e, g)) in expected.chunks_exact(floats_per_joint).zip(got.chunks_exact(floats_per_joint)).enumerate() {
        let error = worst_abs_diff(e, g);
        if error <= tolerance {
            continue;
        }
        let (character, joint) = (k / joints, k % joints);
        let float = e.iter().zip(g).map(|(x, y)| (x - y).abs()).position(|d| d.is_nan() || d > tolerance).unwrap_or(0);
        let extra = describe(character);
        panic!(
            "{what}: character {character}, joint {joint}, float {float}: expected {}, got {} (worst difference {error}, tolerance {tolerance}){}{extra}\n expected {e:?}\n      got {g:?}",
            e[float],
            g[float],
            if extra.is_empty() { "" } else { "\n " }
        );
    }
}

/// The worst joint jump of each frame (from the fourth) of one character's mat4 matrices,
/// measured as `transition_report` and the trace's plots do: model-space positions relative to
/// the root, and per joint the distance between this frame's step and the closer of the last
/// two. NaN in any matrix makes that frame's value NaN.
pub fn joint_jumps(frames: &[Vec<f32>], character: usize, joints: usize) -> Vec<f32> {
    let position = |f: &Vec<f32>, j: usize| {
        let m = &f[(character * joints + j) * 16..];
        let root = &f[character * joints * 16..];
        glam::Vec3::new(m[12] - root[12], m[13] - root[13], m[14] - root[14])
    };
    (3..frames.len())
        .map(|t| {
            largest((0..joints).map(|j| {
                let step = |t: usize| position(&frames[t], j) - position(&frames[t - 1], j);
                let now = step(t);
                (now - step(t - 1)).length().min((now - step(t - 2)).length())
            }))
        })
        .collect()
}
