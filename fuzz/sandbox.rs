//! The folder tree the `gltf_files` fuzz target loads glTF files from, shared with
//! `tests/fuzz_smoke.rs` (both `#[path]`-include this file).
//!
//! ```text
//! <temp>/throng-fuzz-sandbox-<pid>/
//!   asset/            the asset's folder: buffer.bin (two identity mat4s, 128 bytes),
//!                     sub/inner.bin (one, 64 bytes), link.bin → ../outside/trap (a symlink
//!                     out), inside_link.bin → buffer.bin, shared.bin → ../extra/extra.bin
//!   extra/            an extra root (GltfOptions::extra_roots): extra.bin (one, 64 bytes)
//!   outside/trap      a FIFO
//! ```
//!
//! Every file outside the two roots is a FIFO, so a loader that escapes its roots and opens one
//! blocks until libFuzzer's timeout reports it: the escape is a finding, not a silent read.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The asset's folder and the extra root, made once per process.
pub fn roots() -> &'static (PathBuf, PathBuf) {
    static ROOTS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let top = std::env::temp_dir().join(format!("throng-fuzz-sandbox-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let (asset, extra, outside) = (top.join("asset"), top.join("extra"), top.join("outside"));
        for dir in [asset.join("sub"), extra.clone(), outside.clone()] {
            std::fs::create_dir_all(&dir).expect("sandbox folder");
        }
        // Identity matrices, so that a skin's inverse binds read from them load.
        let identity: Vec<u8> = (0..16).flat_map(|i| if i % 5 == 0 { 1.0f32 } else { 0.0 }.to_le_bytes()).collect();
        let write =
            |path: PathBuf, matrices: usize| std::fs::write(path, identity.repeat(matrices)).expect("sandbox file");
        write(asset.join("buffer.bin"), 2);
        write(asset.join("sub/inner.bin"), 1);
        write(extra.join("extra.bin"), 1);
        let trap = outside.join("trap");
        let made = std::process::Command::new("mkfifo").arg(&trap).status().expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", trap.display());
        link(Path::new("../outside/trap"), &asset.join("link.bin"));
        link(Path::new("buffer.bin"), &asset.join("inside_link.bin"));
        link(Path::new("../extra/extra.bin"), &asset.join("shared.bin"));
        (asset, extra)
    })
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).expect("sandbox symlink");
}
