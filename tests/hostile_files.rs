//! The file policy ("Reading files" in `docs/errors.md`): glTF buffer URIs stay inside the
//! asset's folder or the roots the caller lists, symlinks resolved; only regular files are
//! read, and only as many bytes as declared or allowed; so `../`, absolute paths, symlinks out,
//! `/dev/zero`, FIFOs and `/dev/stdin` are each refused at once with a typed error, through the
//! Rust API, the C ABI and `throng-trace`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use glam::{Mat4, Vec3};
use throng::import::bvh::{BvhError, BvhOptions, load_bvh};
use throng::import::gltf::{GltfAsset, GltfError, GltfOptions, load_gltf, load_gltf_from_slice};

mod support;
use support::files::TempDir;

/// How long a refusal may take; a read that blocks or streams `/dev/zero` takes forever.
const PROMPT: Duration = Duration::from_secs(20);

/// A scratch folder for the test `tag` (canonical: the library reports resolved paths).
fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("hostile-{tag}"))
}

/// The two inverse bind matrices the test buffer holds: a non-identity pair, so a load that
/// read the wrong bytes shows.
fn matrices() -> [Mat4; 2] {
    [Mat4::from_scale(Vec3::splat(0.5)), Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0))]
}

/// The 128 bytes of [`matrices`].
fn matrix_bytes() -> Vec<u8> {
    matrices().iter().flat_map(|m| m.to_cols_array()).flat_map(f32::to_le_bytes).collect()
}

/// A two-joint skin whose inverse bind matrices come from one external buffer at `uri`.
fn gltf_json(uri: &str) -> String {
    let uri = serde_json::to_string(uri).unwrap();
    format!(
        r#"{{"asset":{{"version":"2.0"}},
        "nodes":[{{"name":"a","children":[1]}},{{"name":"b","translation":[0,1,0]}}],
        "skins":[{{"joints":[0,1],"inverseBindMatrices":0}}],
        "accessors":[{{"bufferView":0,"componentType":5126,"count":2,"type":"MAT4"}}],
        "bufferViews":[{{"buffer":0,"byteLength":128}}],
        "buffers":[{{"byteLength":128,"uri":{uri}}}]}}"#
    )
}

/// Writes `asset.gltf` pointing at `uri` into `dir` and loads it.
fn load_with_uri(dir: &Path, uri: &str, options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    let path = dir.join("asset.gltf");
    std::fs::write(&path, gltf_json(uri)).unwrap();
    load_gltf(&path, options)
}

/// Runs `f` on a thread and fails the test if it does not return within [`PROMPT`] (the
/// thread is then left blocked; the test process ends with the test).
#[track_caller]
fn promptly<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(PROMPT)
        .unwrap_or_else(|_| panic!("{what}: no answer within {PROMPT:?} (blocked or reading without bound)"))
}

/// A folder `root` holding `asset/` (the asset's folder) and `secret.bin` beside it; dropping
/// `root` removes both.
fn asset_beside_secret(tag: &str) -> (TempDir, PathBuf) {
    let root = temp_dir(tag);
    let asset = root.join("asset");
    std::fs::create_dir(&asset).unwrap();
    std::fs::write(root.join("secret.bin"), matrix_bytes()).unwrap();
    (root, asset)
}

#[test]
fn relative_uris_inside_the_folder_load() {
    let dir = temp_dir("inside");
    std::fs::write(dir.join("ibm.bin"), matrix_bytes()).unwrap();
    let asset = load_with_uri(&dir, "ibm.bin", &GltfOptions::default()).unwrap();
    assert_eq!(asset.rig.inverse_bind(), matrices());
    // Percent-encoding is decoded, and a `..` that stays inside is fine.
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/my ibm.bin"), matrix_bytes()).unwrap();
    for uri in ["sub/my%20ibm.bin", "./sub/../sub/my%20ibm.bin"] {
        let asset = load_with_uri(&dir, uri, &GltfOptions::default()).unwrap_or_else(|e| panic!("{uri}: {e}"));
        assert_eq!(asset.rig.inverse_bind(), matrices(), "{uri}");
    }
    // Bytes past byteLength are allowed (and not read).
    let mut long = matrix_bytes();
    long.extend([7; 1000]);
    std::fs::write(dir.join("long.bin"), long).unwrap();
    assert_eq!(load_with_uri(&dir, "long.bin", &GltfOptions::default()).unwrap().rig.inverse_bind(), matrices());
    // Fewer bytes than byteLength: truncated, reported with the file's length.
    std::fs::write(dir.join("short.bin"), &matrix_bytes()[..100]).unwrap();
    let err = load_with_uri(&dir, "short.bin", &GltfOptions::default()).unwrap_err();
    assert!(matches!(err, GltfError::TruncatedBuffer { buffer: 0, declared_bytes: 128, actual_bytes: 100 }), "{err}");
    let err = load_with_uri(&dir, "sub/my%2", &GltfOptions::default()).unwrap_err();
    assert!(matches!(err, GltfError::UnsupportedUri { buffer: 0, .. }), "a cut-off escape: {err}");
}

#[test]
fn a_parent_dir_uri_is_refused() {
    let (_root, asset) = asset_beside_secret("parent");
    for uri in ["../secret.bin", "sub/../../secret.bin", "%2E%2E/secret.bin"] {
        let err = load_with_uri(&asset, uri, &GltfOptions::default()).unwrap_err();
        assert!(matches!(&err, GltfError::UriOutsideRoot { buffer: 0, uri: u, .. } if u == uri), "{uri}: {err}");
        assert!(err.to_string().contains("buffer 0") && err.to_string().contains(uri), "{err}");
    }
}

#[test]
fn an_absolute_uri_is_refused() {
    let (root, asset) = asset_beside_secret("absolute");
    let secret = root.join("secret.bin");
    let inside = asset.join("ibm.bin");
    std::fs::write(&inside, matrix_bytes()).unwrap();
    // Even an absolute path to a file inside the folder: URIs are relative references.
    for path in [secret.as_path(), inside.as_path(), Path::new("/etc/passwd")] {
        let uri = path.to_str().unwrap();
        let err = load_with_uri(&asset, uri, &GltfOptions::default()).unwrap_err();
        assert!(matches!(&err, GltfError::UriOutsideRoot { buffer: 0, path: p, .. } if p == path), "{uri}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_folder_is_refused() {
    let (root, asset) = asset_beside_secret("symlink");
    std::os::unix::fs::symlink(root.join("secret.bin"), asset.join("link.bin")).unwrap();
    let err = load_with_uri(&asset, "link.bin", &GltfOptions::default()).unwrap_err();
    assert!(
        matches!(&err, GltfError::UriOutsideRoot { buffer: 0, path, .. } if *path == root.join("secret.bin")),
        "{err}"
    );
    // A symlinked folder out of the asset's folder is no way round.
    std::os::unix::fs::symlink(&root, asset.join("up")).unwrap();
    let err = load_with_uri(&asset, "up/secret.bin", &GltfOptions::default()).unwrap_err();
    assert!(matches!(err, GltfError::UriOutsideRoot { buffer: 0, .. }), "{err}");
    // A symlink that stays inside is followed.
    std::fs::write(asset.join("ibm.bin"), matrix_bytes()).unwrap();
    std::os::unix::fs::symlink(asset.join("ibm.bin"), asset.join("alias.bin")).unwrap();
    assert_eq!(load_with_uri(&asset, "alias.bin", &GltfOptions::default()).unwrap().rig.inverse_bind(), matrices());
}

#[test]
fn a_uri_into_an_extra_root_is_accepted() {
    let root = temp_dir("extra-root");
    let (asset, shared) = (root.join("asset"), root.join("shared"));
    std::fs::create_dir(&asset).unwrap();
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("ibm.bin"), matrix_bytes()).unwrap();
    std::fs::write(root.join("secret.bin"), matrix_bytes()).unwrap();
    let err = load_with_uri(&asset, "../shared/ibm.bin", &GltfOptions::default()).unwrap_err();
    assert!(matches!(err, GltfError::UriOutsideRoot { .. }), "without the root: {err}");
    let options = GltfOptions { extra_roots: vec![shared.clone(), root.join("missing")], ..GltfOptions::default() };
    assert_eq!(load_with_uri(&asset, "../shared/ibm.bin", &options).unwrap().rig.inverse_bind(), matrices());
    // The extra root admits itself, not its parent.
    let err = load_with_uri(&asset, "../secret.bin", &options).unwrap_err();
    assert!(matches!(err, GltfError::UriOutsideRoot { .. }), "{err}");
    // From a slice, the base folder is the caller's and confines the same way.
    let json = gltf_json("../shared/ibm.bin");
    assert!(matches!(
        load_gltf_from_slice(json.as_bytes(), Some(&asset), &GltfOptions::default()),
        Err(GltfError::UriOutsideRoot { .. })
    ));
    assert!(load_gltf_from_slice(json.as_bytes(), Some(&asset), &options).is_ok());
}

#[test]
fn without_a_base_folder_no_file_is_loaded() {
    for uri in ["ibm.bin", "../secret.bin"] {
        let err = load_gltf_from_slice(gltf_json(uri).as_bytes(), None, &GltfOptions::default()).unwrap_err();
        assert!(matches!(err, GltfError::UnsupportedUri { buffer: 0, .. }), "{uri}: {err}");
    }
    let err = load_gltf_from_slice(gltf_json("/etc/passwd").as_bytes(), None, &GltfOptions::default()).unwrap_err();
    assert!(matches!(err, GltfError::UriOutsideRoot { buffer: 0, .. }), "{err}");
}

#[test]
fn dev_zero_is_refused_at_once() {
    let dir = temp_dir("dev-zero");
    let load = {
        let dir = dir.to_path_buf();
        move || load_with_uri(&dir, "/dev/zero", &GltfOptions::default())
    };
    let err = promptly("/dev/zero as a URI", load).unwrap_err();
    assert!(matches!(err, GltfError::UriOutsideRoot { buffer: 0, .. }), "{err}");
    #[cfg(unix)]
    {
        // Inside an allowed root it is still a device, not a file.
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.bin")).unwrap();
        let options = GltfOptions { extra_roots: vec![PathBuf::from("/dev")], ..GltfOptions::default() };
        let load = {
            let dir = dir.to_path_buf();
            move || load_with_uri(&dir, "zero.bin", &options)
        };
        let err = promptly("/dev/zero inside an extra root", load).unwrap_err();
        assert!(matches!(&err, GltfError::NotAFile { path } if path == Path::new("/dev/zero")), "{err}");
        let err = promptly("/dev/zero as the glTF", || load_gltf(Path::new("/dev/zero"), &GltfOptions::default()))
            .unwrap_err();
        assert!(matches!(err, GltfError::NotAFile { .. }), "{err}");
        let err =
            promptly("/dev/zero as the BVH", || load_bvh(Path::new("/dev/zero"), &BvhOptions::default())).unwrap_err();
        assert!(matches!(err, BvhError::NotAFile { .. }), "{err}");
    }
}

/// A FIFO at `path`; opening one for reading blocks until a writer comes.
#[cfg(unix)]
fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = temp_dir("fifo");
    make_fifo(&dir.join("pipe.bin"));
    let load = {
        let dir = dir.to_path_buf();
        move || load_with_uri(&dir, "pipe.bin", &GltfOptions::default())
    };
    let err = promptly("a FIFO as a buffer", load).unwrap_err();
    assert!(matches!(&err, GltfError::NotAFile { path } if path.ends_with("pipe.bin")), "{err}");
    let fifo = dir.join("pipe.bin");
    let err = promptly("a FIFO as the glTF", move || load_gltf(&fifo, &GltfOptions::default())).unwrap_err();
    assert!(matches!(err, GltfError::NotAFile { .. }), "{err}");
    let fifo = dir.join("pipe.bin");
    let err = promptly("a FIFO as the BVH", move || load_bvh(&fifo, &BvhOptions::default())).unwrap_err();
    assert!(matches!(err, BvhError::NotAFile { .. }), "{err}");
}

#[test]
fn a_folder_is_not_a_file() {
    let dir = temp_dir("folder");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let err = load_with_uri(&dir, "sub", &GltfOptions::default()).unwrap_err();
    assert!(matches!(&err, GltfError::NotAFile { path } if path.ends_with("sub")), "{err}");
    assert!(matches!(load_gltf(&dir, &GltfOptions::default()), Err(GltfError::NotAFile { .. })));
    assert!(matches!(load_bvh(&dir, &BvhOptions::default()), Err(BvhError::NotAFile { .. })));
}

#[cfg(feature = "capi")]
#[test]
fn the_c_abi_loader_refuses_an_escaping_uri() {
    use std::ffi::{CStr, CString};
    use throng::capi::{ThrongStatus, throng_character_destroy, throng_character_from_gltf, throng_last_error_message};

    let (_root, asset) = asset_beside_secret("capi");
    std::fs::write(asset.join("ibm.bin"), matrix_bytes()).unwrap();
    let load = |uri: &str| {
        let path = asset.join("asset.gltf");
        std::fs::write(&path, gltf_json(uri)).unwrap();
        let path = CString::new(path.to_str().unwrap()).unwrap();
        let mut character = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a writable out pointer.
        let status = unsafe { throng_character_from_gltf(path.as_ptr(), 0, &mut character) };
        // SAFETY: never null, NUL-terminated, valid until the next call on this thread.
        let message = unsafe { CStr::from_ptr(throng_last_error_message()) }.to_string_lossy().into_owned();
        // SAFETY: null or a character this call made.
        unsafe { throng_character_destroy(character) };
        (status, message)
    };
    let (status, message) = load("../secret.bin");
    assert_eq!(status, ThrongStatus::Import, "{message}");
    assert!(message.contains("../secret.bin") && message.contains("outside"), "{message}");
    assert_eq!(load("ibm.bin").0, ThrongStatus::Ok);
}

/// Runs `throng-trace` on `script`, with its stdin a pipe this side holds open; fails if it
/// has not exited within [`PROMPT`].
#[cfg(unix)]
fn trace_promptly(script: &Path) -> std::process::Output {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_throng-trace"))
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > PROMPT {
            child.kill().unwrap();
            panic!("throng-trace {} did not exit within {PROMPT:?}", script.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
#[test]
fn throng_trace_reads_only_a_regular_script() {
    let dir = temp_dir("trace");
    make_fifo(&dir.join("pipe.json"));
    for script in [Path::new("/dev/zero"), Path::new("/dev/stdin"), &dir.join("pipe.json"), dir.path()] {
        let out = trace_promptly(script);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", script.display());
        assert!(stderr.contains("not a regular file"), "{}: {stderr}", script.display());
    }
}
