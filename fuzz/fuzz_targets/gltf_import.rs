//! Fuzzes glTF import from bytes (`import::gltf::load_gltf_from_slice`): JSON or GLB, data URIs only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throng::import::gltf::{load_gltf_from_slice, GltfOptions};

fuzz_target!(|data: &[u8]| {
    let _ = load_gltf_from_slice(data, None, &GltfOptions::default());
});
