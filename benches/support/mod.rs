//! Shared generators for the benches: crowds of the built-in character.

use std::ops::Range;

use throng::program::ClipSample;

/// Every character samples clips `a` and `b` at its own time (spread over a few seconds so
/// that characters read different frames) with a blend weight varying across the crowd.
pub fn two_clip_crowd(num_characters: usize, a: u32, b: u32) -> (Vec<ClipSample>, Vec<Range<u32>>) {
    let mut samples = Vec::with_capacity(num_characters * 2);
    let mut ranges = Vec::with_capacity(num_characters);
    for i in 0..num_characters {
        let time_s = (i as f32 * 0.618_034).fract() * 3.0;
        let weight = (i as f32 * 0.414_213_5).fract();
        let start = samples.len() as u32;
        samples.push(ClipSample::new(a, time_s, 1.0 - weight));
        samples.push(ClipSample::new(b, time_s * 0.7, weight));
        ranges.push(start..start + 2);
    }
    (samples, ranges)
}
