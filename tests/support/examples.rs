//! The example programs the tests run as programs (`viewer`, `embed`; throng-bevy's `crowd`,
//! whose tests include this file by path), built before their first run so that a test never
//! runs a stale binary, and whether the programs the windowed tests run them under are there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// Examples this test process has built: each is built once however many tests run it.
static BUILT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// The binary of example `name` of the package this test belongs to, after
/// `cargo build --example <name> <args…>` brought it up to date (`args`: features, flags).
///
/// Merely finding a binary is not enough: it may be older than the sources, or built with
/// other features. The build matches the one that built this test: the same cargo (`$CARGO`),
/// package folder, target folder and profile (both read from this test's own path,
/// `<target>/<profile>/deps/…`), so it compiles only what `args` change, and nothing at all
/// (under a second) when the example is up to date. Cargo holds its build-folder lock while it
/// compiles, not while it runs the test binaries, so this nested build does not wait on the
/// `cargo test` that started the test. Tests in one process share the build (the first one
/// builds, the others wait on [`BUILT`]); one process builds each example with one `args`.
#[track_caller]
pub fn example_binary_with(name: &'static str, args: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("tests run from <target>/<profile>/deps");
    let target_dir = profile_dir.parent().expect("the profile folder is inside the target folder");
    let binary = profile_dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if built.contains(name) {
        return binary;
    }
    // The `dev` and `test` profiles share `debug/`; every other profile has a folder of its name.
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(profile) => profile,
        None => panic!("{} is not a profile folder", profile_dir.display()),
    };
    let mut build = Command::new(env!("CARGO"));
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--example", name, "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .args(args);
    let output = build.output().unwrap_or_else(|e| panic!("cargo did not start to build example {name}: {e}"));
    assert!(
        output.status.success(),
        "building example {name} failed ({:?}):\n{}",
        build,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(binary.is_file(), "cargo built example {name} but {} is not there", binary.display());
    built.insert(name);
    binary
}

/// Whether `program` is on `PATH` (`xvfb-run`, `xdotool`: the windowed tests skip without them).
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
}
