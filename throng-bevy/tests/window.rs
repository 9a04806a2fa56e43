//! The `crowd` example in a window: built with the `window` feature (Bevy's winit, X11) and run
//! under `xvfb-run` for a few frames, it exits by itself with a screenshot of its window that
//! shows the crowd; without a display it says so. Without `xvfb-run` or a GPU adapter the
//! windowed run skips with a message, unless `THRONG_REQUIRE_GPU=1` (CI on lavapipe).
//!
//! The example is built with the `window` feature by a nested `cargo build`; run these tests
//! with `--features window` too (as `cargo xtask test` does), so that Bevy is built once.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../tests/support/examples.rs"]
mod examples;

use examples::{example_binary_with, on_path};

/// The window, small: lavapipe rasterises on the CPU.
const WIDTH: u32 = 320;
const HEIGHT: u32 = 192;
const FRAMES: usize = 20;

/// The example, built with the window.
fn crowd_binary() -> PathBuf {
    example_binary_with("crowd", &["--features", "window", "--ignore-rust-version"])
}

/// Whether the test can run here: `xvfb-run` on `PATH` and a GPU adapter (Bevy asks for one
/// when its renderer starts); either missing skips, or fails with `THRONG_REQUIRE_GPU=1`.
fn can_run() -> bool {
    let required = std::env::var("THRONG_REQUIRE_GPU").as_deref() == Ok("1");
    let missing = if !on_path("xvfb-run") {
        Some("xvfb-run is not on PATH (apt-get install xvfb)".to_string())
    } else {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .err()
            .map(|e| format!("no GPU adapter ({e})"))
    };
    match missing {
        None => true,
        Some(why) if required => panic!("THRONG_REQUIRE_GPU=1 but {why}"),
        Some(why) => {
            eprintln!("skipping the windowed crowd example: {why}; set THRONG_REQUIRE_GPU=1 to fail instead");
            false
        }
    }
}

#[test]
fn windowed_example_runs_under_xvfb_and_its_screenshot_shows_the_crowd() {
    if !can_run() {
        return;
    }
    let crowd = crowd_binary();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("throng-bevy");
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let shot = dir.join("window.png");
    if shot.exists() {
        std::fs::remove_file(&shot).expect("the last run's screenshot is removed");
    }
    let size = format!("{WIDTH}x{HEIGHT}");
    let frames = FRAMES.to_string();
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24"])
        .arg(&crowd)
        .args(["--characters", "400", "--size", &size, "--frames", &frames, "--out"])
        .arg(&shot)
        .output()
        .expect("xvfb-run starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the windowed example failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(
        stdout.contains(&format!("crowd: {FRAMES} frames of 400 characters in a window")),
        "the window did not run {FRAMES} frames:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked") && !stderr.contains("Validation Error"), "errors:\n{stderr}");
    eprintln!("screenshot: {}", shot.display());
    let image = image::open(&shot).unwrap_or_else(|e| panic!("{}: {e}\n{stdout}\n{stderr}", shot.display())).to_rgb8();
    assert_eq!(image.dimensions(), (WIDTH, HEIGHT), "the screenshot is the window's size");
    // Not empty: a good share of the pixels differ from the background (the top-left corner,
    // sky above the crowd).
    let background = *image.get_pixel(0, 0);
    let drawn = image.pixels().filter(|&&p| p != background).count();
    let total = (WIDTH * HEIGHT) as usize;
    assert!(drawn > total / 50, "{drawn} of {total} pixels drawn");
}

/// Without a display the windowed example says so and gives the headless command, instead of
/// panicking in winit; it fails before touching a GPU.
#[test]
fn without_a_display_the_windowed_example_says_so_and_gives_the_headless_command() {
    let output = Command::new(crowd_binary())
        .env_remove("DISPLAY")
        .args(["--characters", "4"])
        .output()
        .expect("the example starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "without a display the example exits 1:\n{stderr}");
    assert!(stderr.contains("there is no display"), "the message says there is no display:\n{stderr}");
    assert!(stderr.contains("--example crowd --ignore-rust-version -- --headless"), "the headless command:\n{stderr}");
    assert!(!stderr.contains("panicked"), "it panicked:\n{stderr}");
}
