//! throng's task runner: `cargo xtask test` runs every check CI runs, in order, and says which
//! one failed. The cargo commands it runs are printed before each step, so any one of them can
//! be run again by hand.
//!
//! ```text
//! cargo xtask test             formatting, lints, docs, every test, doc tests, the tracy build, throng-bevy
//! cargo xtask test --no-lint   the same without formatting, lints and docs
//! cargo xtask lint             formatting, lints and docs alone
//! ```
//!
//! The tests read `THRONG_REQUIRE_GPU`, `THRONG_REQUIRE_DATA` and `THRONG_REQUIRE_CC` from the
//! environment (README.md), which the steps inherit.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// One check: a name for the summary and the arguments of the cargo command that runs it.
struct Step {
    name: &'static str,
    args: &'static [&'static str],
}

/// Formatting, as `rustfmt.toml` settles it, for every package of the workspace.
const FMT: Step = Step { name: "formatting", args: &["fmt", "--all", "--check"] };

/// Clippy on every target of every package of the workspace, with the code behind the
/// features compiled in (the C ABI, Tracy's zones, throng-bevy's windowed example); any warning
/// fails. `--ignore-rust-version` for throng-bevy: Bevy 0.20 declares rust-version 1.97.1 and
/// builds on throng's 1.95 (docs/bevy.md).
const CLIPPY: Step = Step {
    name: "lints",
    args: &[
        "clippy",
        "--release",
        "--workspace",
        "--ignore-rust-version",
        "--all-targets",
        "--features",
        "throng/capi,throng/tracy,throng-bevy/window",
        "--",
        "-D",
        "warnings",
    ],
};

/// The library's documentation, every feature's items in it, with any rustdoc warning (a link
/// to nothing, to a private item, a redundant target) failing: the docs stay true as the code
/// moves.
const DOCS: Step = Step {
    name: "docs",
    args: &["rustdoc", "--release", "-p", "throng", "--lib", "--features", "capi", "--", "-D", "warnings"],
};

/// The tests, in release (the GPU and crowd tests are slow unoptimised). `--all-targets` is
/// the library, the binaries, the integration tests, the examples and the benches (each bench
/// run once as a test); with `capi`, which only adds the C ABI's module and its tests. Doc
/// tests are outside `--all-targets` and cargo refuses to mix `--doc` with it, hence a step of
/// their own. Then what the `tracy` feature changes, with Tracy's client started and no server
/// listening (nothing may block): the library's unit tests, `tests/profiling.rs` (with the GPU
/// clock alignment's test), `tests/profiling_plots.rs` (the plots' values), and the
/// viewer, which `tests/viewer.rs` builds with the feature and runs; and `bench_gpu`, the other
/// example with Tracy zones, built. The `tracy` steps compile Tracy's C++ client: they need a
/// C++ compiler. Last, throng-bevy's tests (a headless Bevy app on the same device, and the
/// `crowd` example in a window under `xvfb-run`) and doc tests, with `--ignore-rust-version` as
/// the lints, and with the `window` feature: the windowed test builds the example with it, and
/// Bevy built with the same features for both is built once rather than twice (the feature
/// changes features of most of Bevy's crates).
const TESTS: [Step; 5] = [
    Step { name: "tests", args: &["test", "--release", "--all-targets", "--features", "capi"] },
    Step { name: "doc tests", args: &["test", "--release", "--doc", "--features", "capi"] },
    Step { name: "tracy build", args: &["build", "--release", "--features", "tracy", "--example", "bench_gpu"] },
    Step {
        name: "tracy tests",
        args: &[
            "test",
            "--release",
            "--features",
            "tracy",
            "--lib",
            "--test",
            "profiling",
            "--test",
            "profiling_plots",
            "--test",
            "viewer",
        ],
    },
    Step {
        name: "bevy tests",
        args: &["test", "--release", "-p", "throng-bevy", "--ignore-rust-version", "--features", "window"],
    },
];

const USAGE: &str =
    "usage: cargo xtask test [--no-lint]   formatting, lints, docs, every test, doc tests, the tracy build
       cargo xtask lint                formatting, lints and docs alone";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let steps: Vec<&Step> = match args.as_slice() {
        ["test"] => [FMT, CLIPPY, DOCS].iter().chain(&TESTS).collect(),
        ["test", "--no-lint"] => TESTS.iter().collect(),
        ["lint"] => vec![&FMT, &CLIPPY, &DOCS],
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    run(&steps)
}

/// Runs `steps` in order from the workspace root, stopping at the first that fails.
fn run(steps: &[&Step]) -> ExitCode {
    // `cargo run` tells the program which cargo ran it: the steps use the same toolchain.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ is inside the workspace root");
    let mut done: Vec<(&str, Duration)> = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let shown = format!("cargo {}", step.args.join(" "));
        eprintln!("\n==> [{}/{}] {}: {shown}", k + 1, steps.len(), step.name);
        let started = Instant::now();
        let status = Command::new(&cargo).args(step.args).current_dir(root).status();
        let failure = match status {
            Ok(status) if status.success() => None,
            Ok(status) => Some(status.to_string()),
            Err(e) => Some(format!("cargo did not start: {e}")),
        };
        if let Some(failure) = failure {
            summary(&done);
            eprintln!("FAILED at step {}/{}, {}: `{shown}` ({failure})", k + 1, steps.len(), step.name);
            return ExitCode::FAILURE;
        }
        done.push((step.name, started.elapsed()));
    }
    summary(&done);
    eprintln!("all {} steps passed", steps.len());
    ExitCode::SUCCESS
}

/// The steps that passed, with their times.
fn summary(done: &[(&str, Duration)]) {
    eprintln!();
    for (name, took) in done {
        eprintln!("passed: {name} ({:.0} s)", took.as_secs_f64());
    }
}
