//! Sample positions: each sample's frame coordinate in its clip ([`Clip::frame_coordinate`],
//! at the clip's loop flag). Mirrored by `shaders/sample_positions.wgsl`, which resolves every
//! sample of a GPU frame once, before the kernels that read it for every joint
//! (`frame_position` in `shaders/sample.wgsl`, as [`Clip::frame_at`]).
//!
//! The CPU evaluator needs no pass of its own for it: [`crate::eval::sample`] resolves a sample's
//! frames once for all its joints as it samples them.

use crate::clip::Clip;
use crate::program::ClipSample;

/// Writes each sample's frame coordinate into `out` (one per sample; extra entries are left
/// alone). `samples` are a frame's, checked against `clips`
/// ([`validate_samples`](crate::program::validate_samples)): a sample naming no clip is given 0,
/// its clip's first frame.
///
/// ```
/// use throng::eval::sample_positions::sample_positions;
/// use throng::program::ClipSample;
/// use throng::{Clip, Transform};
///
/// // Three frames over one second, looping: a frame every half second.
/// let clips = [Clip::from_poses("sway", 1, vec![Transform::IDENTITY; 3], 1.0, true).unwrap()];
/// let mut out = [0.0; 2];
/// sample_positions(&clips, &[ClipSample::new(0, 0.25, 1.0), ClipSample::new(0, 1.75, 1.0)], &mut out);
/// assert_eq!(out, [0.5, 1.5]);
/// ```
pub fn sample_positions(clips: &[Clip], samples: &[ClipSample], out: &mut [f32]) {
    for (o, s) in out.iter_mut().zip(samples) {
        *o = clips.get(s.clip as usize).map_or(0.0, |clip| clip.frame_coordinate(s.time_s, clip.is_looping()));
    }
}
