//! URI confinement: an external buffer's relative, percent-decoded path must resolve (after `..`
//! and symlinks) inside the asset's folder or one of the extra roots.

use std::path::{Component, Path, PathBuf};

use super::GltfError;

/// The file a relative buffer URI names, symlinks resolved, if it lies inside `base_dir` or an
/// extra root (each compared once canonicalised). A `..` that leaves every root is refused
/// before the file it names is looked at; the resolved path is then checked again, which
/// catches symlinks.
pub(super) fn resolve_inside_roots(
    buffer: usize,
    uri: &str,
    relative: &Path,
    base_dir: &Path,
    extra_roots: &[PathBuf],
) -> Result<PathBuf, GltfError> {
    let outside = |path: PathBuf| GltfError::UriOutsideRoot { buffer, uri: uri.chars().take(64).collect(), path };
    let base = base_dir.canonicalize().map_err(|source| GltfError::Io { path: base_dir.to_owned(), source })?;
    let roots: Vec<PathBuf> =
        std::iter::once(base.clone()).chain(extra_roots.iter().filter_map(|r| r.canonicalize().ok())).collect();
    let inside = |path: &Path| roots.iter().any(|root| path.starts_with(root));
    let lexical = normalize_lexically(&base.join(relative));
    if !inside(&lexical) {
        return Err(outside(lexical));
    }
    let joined = base_dir.join(relative);
    let resolved = joined.canonicalize().map_err(|source| GltfError::Io { path: joined, source })?;
    if !inside(&resolved) {
        return Err(outside(resolved));
    }
    Ok(resolved)
}

/// `path` with `.` dropped and each `..` removing the component before it, without asking the
/// file system (so symlinks are not followed: the caller checks the resolved path too).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes `%XX` escapes (glTF URIs are RFC 3986 references: `my%20rig.bin`); `None` for a
/// `%` not followed by two hex digits or a result that is not UTF-8.
pub(super) fn percent_decode(uri: &str) -> Option<String> {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
