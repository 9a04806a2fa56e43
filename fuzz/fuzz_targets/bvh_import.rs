//! Fuzzes the BVH parser (`import::bvh::parse_bvh`) with both position-channel readings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throng::import::bvh::{parse_bvh, BvhOptions, PositionChannels};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let position_channels = if data.len().is_multiple_of(2) { PositionChannels::Replace } else { PositionChannels::Add };
        let _ = parse_bvh(text, &BvhOptions { position_channels, ..BvhOptions::default() });
    }
});
