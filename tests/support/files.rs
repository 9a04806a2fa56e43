//! Scratch folders for the tests that write files: one per test, never shared, removed after.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Folders made by this test process so far: tests in one binary run on parallel threads.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// A fresh empty folder under the system temp dir, removed when dropped. When the test panics
/// it is kept, and its path printed, so that what the test wrote can be looked at.
///
/// Derefs to its [`Path`] (`dir.join("a.png")`, `load(&dir)`) and is `AsRef<Path>`.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// `throng-<tag>-<process>-<n>` under the system temp dir: unique among the tests of every
    /// process running at once; a folder a crashed earlier process of the same id left behind
    /// is emptied first. The path is canonical (macOS's `/tmp` is a symlink), so that tests can
    /// compare it with the paths the library resolves.
    #[track_caller]
    pub fn new(tag: &str) -> Self {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("throng-{tag}-{}-{n}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path).unwrap_or_else(|e| panic!("cannot empty stale {}: {e}", path.display()));
        }
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        let path = path.canonicalize().unwrap_or_else(|e| panic!("cannot resolve {}: {e}", path.display()));
        Self { path }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection: the test failed", self.path.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!("could not remove {}: {e}", self.path.display());
        }
    }
}
