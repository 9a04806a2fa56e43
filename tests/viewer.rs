//! The viewer example, run as a program: headless renders of a crowd (the picture has
//! characters, and they move), the vertex shader's skinning against throng's matrices (a
//! character's trunk joints, projected on the CPU, land on its rendered body), the CPU and GPU
//! evaluations drawing the same crowd, and the windowed viewer under `xvfb-run`.
//!
//! The example's binary is built first, as this test was built (profile, target folder,
//! features: `support::examples`), so an edit to the viewer is always what runs. Without a GPU
//! adapter the tests skip with a message, unless `THRONG_REQUIRE_GPU=1` (CI on lavapipe).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use image::RgbaImage;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use support::examples::example_binary;
use support::files::TempDir;
use support::pixels_differ;

/// The render size of the tests: small, because lavapipe rasterises on the CPU.
const WIDTH: u32 = 320;
const HEIGHT: u32 = 180;

/// The viewer, built as this test was.
fn viewer_binary() -> PathBuf {
    example_binary("viewer")
}

fn scratch_dir(name: &str) -> TempDir {
    TempDir::new(&format!("viewer-{name}"))
}

/// Runs the headless viewer with `args` plus the test size; asserts it exits 0 without a wgpu
/// error and returns its output.
fn headless(args: &[&str]) -> Output {
    let size = format!("{WIDTH}x{HEIGHT}");
    let output = Command::new(viewer_binary())
        .arg("--headless")
        .args(["--size", &size])
        .args(args)
        .output()
        .expect("the viewer starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "viewer {args:?} failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(
        !stderr.contains("wgpu error") && !stderr.contains("Validation Error"),
        "viewer {args:?} reported wgpu errors:\n{stderr}"
    );
    output
}

fn load(path: &Path) -> RgbaImage {
    let image = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).to_rgba8();
    assert_eq!(image.dimensions(), (WIDTH, HEIGHT), "{} has the wrong size", path.display());
    image
}

/// Pixels where `image` differs from `background`: where characters are.
fn character_mask(image: &RgbaImage, background: &RgbaImage) -> Vec<bool> {
    image.pixels().zip(background.pixels()).map(|(a, b)| pixels_differ(a, b)).collect()
}

/// Renders the scene's ground and sky alone, sized for `characters`, into `path`: the
/// background a character mask is taken against.
fn render_background(characters: &str, path: &Path) {
    let out = path.to_str().expect("utf-8 temp path");
    headless(&["--characters", characters, "--frames", "1", "--background-only", "--out", out]);
}

#[test]
fn headless_crowd_has_characters_that_move() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("crowd");
    let out = dir.join("crowd.png");
    let background = dir.join("ground.png");
    let stdout = headless(&[
        "--characters",
        "300",
        "--frames",
        "60",
        "--out-every",
        "30",
        "--out",
        out.to_str().expect("utf-8 temp path"),
    ])
    .stdout;
    let stdout = String::from_utf8_lossy(&stdout);
    assert!(
        stdout.contains("300 characters") && stdout.contains("fps") && stdout.contains("clips sampled"),
        "stats missing:\n{stdout}"
    );
    render_background("300", &background);

    let last = load(&out);
    let frame_30 = load(&dir.join("crowd_0030.png"));
    let frame_60 = load(&dir.join("crowd_0060.png"));
    assert_eq!(last, frame_60, "--out holds the last frame");
    let ground = load(&background);
    let mask_30 = character_mask(&frame_30, &ground);
    let mask_60 = character_mask(&frame_60, &ground);
    let share = mask_60.iter().filter(|&&m| m).count() as f64 / mask_60.len() as f64;
    assert!(
        (0.01..0.6).contains(&share),
        "characters cover {:.1} % of the picture; expected a crowd, neither empty nor a wall",
        share * 100.0
    );

    // Between frames 30 and 60 (half a second) walkers have moved by about a body width and
    // their limbs have changed pose; idlers barely move. A still picture would change nowhere.
    let (mut either, mut changed) = (0usize, 0usize);
    for (i, (a, b)) in frame_30.pixels().zip(frame_60.pixels()).enumerate() {
        if mask_30[i] || mask_60[i] {
            either += 1;
            changed += usize::from(pixels_differ(a, b));
        }
    }
    let moved = changed as f64 / either.max(1) as f64;
    eprintln!(
        "characters cover {:.1} % of the picture; {:.1} % of their pixels changed from frame 30 to 60",
        share * 100.0,
        moved * 100.0
    );
    assert!(moved > 0.2, "only {:.1} % of the character pixels changed between frames 30 and 60", moved * 100.0);
}

#[test]
fn skinned_character_covers_its_projected_joints() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("probe");
    let out = dir.join("one.png");
    let background = dir.join("ground.png");
    let stdout =
        headless(&["--characters", "1", "--frames", "40", "--probe", "--out", out.to_str().expect("utf-8 temp path")])
            .stdout;
    render_background("1", &background);
    let image = load(&out);
    let mask = character_mask(&image, &load(&background));
    let covered = mask.iter().filter(|&&m| m).count();
    assert!(covered > 50 && covered < mask.len() / 4, "one character covers {covered} pixels");

    let stdout = String::from_utf8_lossy(&stdout);
    let probes: Vec<(String, f32, f32)> = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix("probe ")?.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(probes.len(), 3, "pelvis, spine_03 and spine_05 probed:\n{stdout}");
    for (joint, x, y) in probes {
        let (px, py) = (x.round() as i64, y.round() as i64);
        assert!(
            (0..i64::from(WIDTH)).contains(&px) && (0..i64::from(HEIGHT)).contains(&py),
            "{joint} projects off screen at ({x}, {y})"
        );
        let at = (py as u32 * WIDTH + px as u32) as usize;
        assert!(
            mask[at],
            "{joint} projects to ({x}, {y}), which shows the ground: the shader's skinning disagrees with throng's matrices"
        );
    }
}

/// `--cpu` evaluates with `FrameJob` and uploads the matrices, and takes its root motion from
/// `FrameJob` too; the GPU path computes root motion in the viewer. Both must place and pose
/// the crowd alike: the pictures agree but for rounding at the silhouettes' edges.
#[test]
fn cpu_and_gpu_evaluation_draw_the_same_crowd() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("cpu");
    let gpu_png = dir.join("gpu.png");
    let cpu_png = dir.join("cpu.png");
    let background = dir.join("ground.png");
    let common = ["--characters", "300", "--frames", "45", "--mode", "crossfade"];
    headless(&[&common[..], &["--out", gpu_png.to_str().expect("utf-8 temp path")]].concat());
    headless(&[&common[..], &["--cpu", "--out", cpu_png.to_str().expect("utf-8 temp path")]].concat());
    render_background("300", &background);
    let (gpu, cpu) = (load(&gpu_png), load(&cpu_png));
    let characters = character_mask(&gpu, &load(&background)).iter().filter(|&&m| m).count();
    let different = gpu.pixels().zip(cpu.pixels()).filter(|(a, b)| pixels_differ(a, b)).count();
    eprintln!("{different} pixels differ between the CPU and GPU evaluations; the crowd covers {characters}");
    assert!(characters > 500, "the crowd covers only {characters} pixels");
    assert!(
        different * 20 < characters,
        "{different} pixels differ between the CPU and GPU evaluations, against {characters} character pixels"
    );
}

#[test]
fn windowed_viewer_runs_under_xvfb() {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("xvfb-run").is_file()));
    if !on_path {
        eprintln!("skipping the windowed viewer test: xvfb-run is not on PATH (apt-get install xvfb)");
        return;
    }
    if gpu_support::gpu().is_none() {
        return;
    }
    let size = format!("{WIDTH}x{HEIGHT}");
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24"])
        .arg(viewer_binary())
        .args(["--characters", "300", "--frames", "60", "--size", &size])
        .output()
        .expect("xvfb-run starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "windowed viewer failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(stdout.contains("viewer: 60 frames"), "the window did not draw 60 frames:\n{stdout}\n{stderr}");
    assert!(!stderr.contains("wgpu error"), "wgpu errors:\n{stderr}");
}

/// The vertex shader reads affine 3×4 matrices (the default) and mat4 alike: the two layouts
/// draw the same picture, and character 0's probes land on its body with either.
#[test]
fn affine_and_mat4_output_draw_the_same_crowd() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("layout");
    let affine_png = dir.join("affine.png");
    let mat4_png = dir.join("mat4.png");
    let background = dir.join("ground.png");
    let common = ["--characters", "300", "--frames", "30", "--mode", "inertialize"];
    let affine = headless(
        &[&common[..], &["--layout", "affine", "--out", affine_png.to_str().expect("utf-8 temp path")]].concat(),
    );
    let mat4 =
        headless(&[&common[..], &["--layout", "mat4", "--out", mat4_png.to_str().expect("utf-8 temp path")]].concat());
    assert!(String::from_utf8_lossy(&affine.stdout).contains("Affine3x4 matrices"), "the affine run says so");
    assert!(String::from_utf8_lossy(&mat4.stdout).contains("Mat4 matrices"), "the mat4 run says so");
    render_background("300", &background);
    let (affine, mat4) = (load(&affine_png), load(&mat4_png));
    let characters = character_mask(&affine, &load(&background)).iter().filter(|&&m| m).count();
    let different = affine.pixels().zip(mat4.pixels()).filter(|(a, b)| pixels_differ(a, b)).count();
    assert!(characters > 500, "the crowd covers only {characters} pixels");
    assert!(
        different * 100 < characters,
        "{different} pixels differ between affine and mat4 output, against {characters} character pixels"
    );
}
