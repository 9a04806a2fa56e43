//! Fuzzes glTF import with file URIs (`import::gltf::load_gltf_from_slice` with a base folder
//! and an extra root, `fuzz/sandbox.rs`): URIs that climb out with `..`, absolute paths,
//! percent-encoding and symlinks must be refused; every file outside the roots is a FIFO, so
//! opening one hangs the target and libFuzzer reports the escape as a timeout.
#![no_main]

#[path = "../sandbox.rs"]
mod sandbox;

use libfuzzer_sys::fuzz_target;
use throng::import::gltf::{load_gltf_from_slice, GltfOptions};

fuzz_target!(|data: &[u8]| {
    let (asset, extra) = sandbox::roots();
    let options = GltfOptions { extra_roots: vec![extra.clone()], ..GltfOptions::default() };
    let _ = load_gltf_from_slice(data, Some(asset), &options);
});
