//! Importers: glTF 2.0 and BVH files into rigs, clips and skinned meshes. They yield data
//! only and know nothing of the runtime.
//!
//! Every file an importer opens goes through [`read_regular_file`] or its glTF buffer
//! counterpart: a regular file (after following symlinks), never more than a stated number of
//! bytes, so that a path naming `/dev/zero`, a FIFO or `/dev/stdin` is refused at once instead
//! of growing memory or blocking (`docs/errors.md`, "Reading files").

pub mod bvh;
pub mod gltf;

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Largest file an importer reads whole: a `.gltf`, `.glb` or `.bvh` of 1 GiB. Real assets
/// are thousands of times smaller; the cap bounds what a path to a huge file can cost.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Why a file was not read under the file policy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The operating system refused (missing file, permissions).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The path names a folder, a device, a FIFO or a socket rather than a regular file.
    #[error("not a regular file (a folder, device, FIFO or socket)")]
    NotAFile,
    /// The file holds more bytes than the reader's cap.
    #[error("{bytes} bytes is over the {max_bytes}-byte limit")]
    TooLarge {
        /// The file's size, bytes (at least `max_bytes + 1`).
        bytes: u64,
        /// The cap.
        max_bytes: u64,
    },
}

/// Opens `path` for reading if it is a regular file, with its size in bytes. The type is
/// checked before opening, so that a device is never opened, and again on the open handle, in
/// case the path was swapped in between; the open itself never blocks ([`open_for_reading`]), so
/// a FIFO swapped in after the first check is refused by the second rather than hanging.
pub(crate) fn open_regular_file(path: &Path) -> Result<(File, u64), FileError> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(FileError::NotAFile);
    }
    let file = open_for_reading(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(FileError::NotAFile);
    }
    Ok((file, metadata.len()))
}

/// Opens `path` for reading without waiting for a FIFO's writer: `O_NONBLOCK` makes opening a
/// FIFO return at once, and reading a regular file ignores it.
#[cfg(unix)]
fn open_for_reading(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// Opens `path` for reading. Outside Unix there are no FIFOs in the file system to block on
/// (Windows' named pipes live under `\\.\pipe\`, which the type checks refuse).
#[cfg(not(unix))]
fn open_for_reading(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Reads a whole regular file of at most `max_bytes` bytes (e.g. [`MAX_FILE_BYTES`]). A file
/// that grows past the cap while it is read is refused too: at most `max_bytes + 1` bytes are
/// ever read.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_regular_file(path)?;
    if len > max_bytes {
        return Err(FileError::TooLarge { bytes: len, max_bytes });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FileError::TooLarge { bytes: bytes.len() as u64, max_bytes });
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn opening_a_fifo_does_not_wait_for_a_writer() {
        // The race `open_regular_file` closes: a path checked as a regular file, then swapped
        // for a FIFO before it is opened. Opening the FIFO itself must return at once, so that
        // the check on the handle can refuse it.
        let dir = std::env::temp_dir().join(format!("throng-fifo-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("swapped.bin");
        let _ = std::fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (send, receive) = mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = send.send(open_for_reading(&path).map(|f| f.metadata().map(|m| m.is_file())));
        });
        let opened = receive.recv_timeout(Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(opened, Ok(Ok(Ok(false)))), "opening a FIFO blocked or failed: {opened:?}");
    }
}
