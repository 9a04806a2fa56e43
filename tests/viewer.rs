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
use serde_json::Value;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use support::compare::worst_abs_diff;
use support::example_binary;
use support::examples::on_path;
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
/// error and returns its output. A run whose `args` name no image writes the viewer's default
/// `crowd.png` into a scratch folder, not the working directory (the repository, under `cargo
/// test`).
fn headless(args: &[&str]) -> Output {
    let size = format!("{WIDTH}x{HEIGHT}");
    let scratch = scratch_dir("headless");
    let mut command = Command::new(viewer_binary());
    command.arg("--headless").args(["--size", &size]).args(args);
    if !args.contains(&"--out") {
        command.arg("--out").arg(scratch.join("crowd.png"));
    }
    let output = command.output().expect("the viewer starts");
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
        stdout.contains("300 characters") && stdout.contains("fps") && stdout.contains("records uploaded"),
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
    let gpu_run = headless(&[&common[..], &["--out", gpu_png.to_str().expect("utf-8 temp path")]].concat());
    let cpu_run = headless(&[&common[..], &["--cpu", "--out", cpu_png.to_str().expect("utf-8 temp path")]].concat());
    // The GPU evaluator took the records path: what it uploaded per character is records, shot
    // records and blend inputs (the demo graph's layers and its one input), at most all of them,
    // fewer bytes than the programs and sample slots `set_frame` sends; the CPU evaluator
    // counts the clips it sampled.
    let per_character = records_per_character(&String::from_utf8_lossy(&gpu_run.stdout));
    let demo = throng::demo::DemoCharacter::humanoid();
    let graph = std::sync::Arc::new(throng::graph::CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap());
    let bound = demo.bind(graph).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    let layers = tables.num_layers();
    // Everything sent: each record and shot record with its index, the inputs with their row,
    // and the header's share of 300 characters.
    let entries = layers * (8 + size_of::<throng::program::LayerRecord>() + size_of::<throng::program::ShotRecord>())
        + 4
        + trees.num_inputs() * size_of::<f32>();
    let records_max = entries as f64 + (4 * throng::gpu::UPLOAD_HEADER_WORDS) as f64 / 300.0;
    let set_frame = layers * size_of::<throng::program::LayerProgram>()
        + tables.samples_per_character() * size_of::<throng::program::ClipSample>();
    assert!(
        per_character > 0.0 && per_character <= records_max && per_character < set_frame as f64,
        "the GPU viewer uploaded {per_character} B a character a frame; records are at most {records_max}, set_frame's {set_frame}"
    );
    assert!(String::from_utf8_lossy(&cpu_run.stdout).contains("clips sampled"), "the CPU evaluator's figures");
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

/// README's main command on a machine without a display says so and gives the headless
/// command, instead of winit's error about Wayland variables; it fails before touching a GPU.
/// The GPU viewer's records uploaded per character and frame, from its stats line
/// (`records uploaded N B/frame, X B/character`).
fn records_per_character(stdout: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.contains("records uploaded"))
        .unwrap_or_else(|| panic!("no records figure:\n{stdout}"));
    let figure =
        line.split(", ").find_map(|part| part.strip_suffix(" B/character")).unwrap_or_else(|| panic!("{line}"));
    figure.trim().parse().unwrap_or_else(|_| panic!("not a number in {line}"))
}

#[test]
fn without_a_display_the_viewer_says_so_and_gives_the_headless_command() {
    let output = Command::new(viewer_binary())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .expect("the viewer starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "the viewer without a display exits 1:\n{stderr}");
    assert!(stderr.contains("there is no display"), "the message says there is no display:\n{stderr}");
    assert!(
        stderr.contains("cargo run --release --example viewer -- --headless"),
        "the message gives the headless command:\n{stderr}"
    );
    assert!(!stderr.contains("WAYLAND"), "winit's raw error leaked through:\n{stderr}");
}

#[test]
fn windowed_viewer_runs_under_xvfb() {
    if !on_path("xvfb-run") {
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

/// The lab's render size: its panels need more room than the crowd tests' pictures.
const LAB_WIDTH: u32 = 720;
const LAB_HEIGHT: u32 = 480;

/// The lab's `throng-trace` script (README's `--script` example): the viewer's own graph
/// (the demo's, switching by inertialization as the viewer's default mode does) with every
/// leaf on the clip the viewer binds it to; idle, then walking and waving, a jump, running and
/// leaning, and standing again.
fn lab_script() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/trace/lab.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let script: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let graph: Value = serde_json::from_str(throng::demo::LOCOMOTION_GRAPH).expect("the demo graph is JSON");
    assert_eq!(script["stateGraph"], graph, "{} must hold the viewer's graph, LOCOMOTION_GRAPH", path.display());
    path
}

/// The JSON lines a trace run printed, each after `prefix`.
fn trace_lines(stdout: &str, prefix: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a trace line ({e}): {l}")))
        .collect()
}

/// A trace line's state weights, by state name.
fn weights(line: &Value) -> Vec<(String, f32)> {
    line["weights"]
        .as_object()
        .map(|w| w.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::NAN) as f32)).collect())
        .unwrap_or_default()
}

/// `--inspect 0 --script S`: character 0 is driven by the script's parameter values, frame by
/// frame, and its readback in the crowd is `throng-trace`'s for the same script; the character
/// panel lays out each layer's active state name, inside the panel, inside the picture, and
/// the panels change the picture where they are.
#[test]
fn inspect_panel_shows_the_active_state_and_matches_throng_trace() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("inspect");
    let script = lab_script();
    let trace = Command::new(env!("CARGO_BIN_EXE_throng-trace")).arg(&script).output().expect("throng-trace starts");
    assert!(trace.status.success(), "throng-trace failed: {}", String::from_utf8_lossy(&trace.stderr));
    let expected = trace_lines(&String::from_utf8_lossy(&trace.stdout), "");

    let size = format!("{LAB_WIDTH}x{LAB_HEIGHT}");
    let (lab_png, plain_png) = (dir.join("lab.png"), dir.join("plain.png"));
    let common = ["--characters", "30", "--size", size.as_str()];
    let lab = headless(
        &[
            &common[..],
            &["--inspect", "0", "--script", script.to_str().expect("utf-8 temp path")],
            &["--out", lab_png.to_str().expect("utf-8 temp path")],
        ]
        .concat(),
    );
    headless(&[&common[..], &["--frames", "90", "--out", plain_png.to_str().expect("utf-8 temp path")]].concat());
    let stdout = String::from_utf8_lossy(&lab.stdout);

    let got = trace_lines(&stdout, "trace ");
    assert_eq!(got.len(), expected.len(), "one line per layer per frame, as throng-trace's:\n{stdout}");
    let mut states_seen = std::collections::BTreeSet::new();
    for (g, e) in got.iter().zip(&expected) {
        let at = format!("frame {} layer {}", e["frame"], e["layer"]);
        for key in ["frame", "layer", "activeState", "previousState", "transitioning", "events"] {
            assert_eq!(g[key], e[key], "{at}: {key} differs\nviewer: {g}\ntrace:  {e}");
        }
        let progress = |l: &Value| [l["transitionProgress"].as_f64().unwrap_or(f64::NAN) as f32];
        let (gw, ew) = (weights(g), weights(e));
        let names = |w: &[(String, f32)]| w.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&gw), names(&ew), "{at}: states with a weight differ\nviewer: {g}\ntrace:  {e}");
        let values = |w: &[(String, f32)]| w.iter().map(|x| x.1).collect::<Vec<_>>();
        let worst = worst_abs_diff(&progress(g), &progress(e)).max(worst_abs_diff(&values(&gw), &values(&ew)));
        assert!(worst <= 1e-5, "{at}: progress or weights off by {worst}\nviewer: {g}\ntrace:  {e}");
        states_seen.insert(e["activeState"].as_str().unwrap_or_default().to_owned());
    }
    for state in ["Idle", "Move", "Jump"] {
        assert!(states_seen.contains(state), "the script never reaches {state}: {states_seen:?}");
    }

    // The lab's layout of the last frame: `lab <what> <text> <left> <top> <right> <bottom>`.
    let laid: Vec<(String, String, [f32; 4])> = stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.strip_prefix("lab\t")?.split('\t').collect();
            let [what, text, rest @ ..] = f.as_slice() else { return None };
            let r: Vec<f32> = rest.iter().filter_map(|v| v.parse().ok()).collect();
            Some(((*what).to_owned(), (*text).to_owned(), r.try_into().ok()?))
        })
        .collect();
    let find = |what: &str| {
        laid.iter().find(|l| l.0 == what).unwrap_or_else(|| panic!("the lab laid out no {what}:\n{stdout}"))
    };
    let inside = |a: [f32; 4], b: [f32; 4]| a[0] >= b[0] && a[1] >= b[1] && a[2] <= b[2] && a[3] <= b[3];
    let picture = [0.0, 0.0, LAB_WIDTH as f32, LAB_HEIGHT as f32];
    let panel = find("panel character");
    assert_eq!(panel.1, "Character 0");
    assert!(inside(panel.2, picture), "the character panel {:?} leaves the picture", panel.2);
    assert!(inside(find("panel crowd").2, picture), "the crowd panel leaves the picture");
    let last = &expected[expected.len() - 3..];
    for line in last {
        let layer = line["layer"].as_str().expect("a layer name");
        let label = find(&format!("{layer}.active"));
        assert_eq!(label.1, line["activeState"].as_str().expect("a state name"), "layer {layer}'s active state");
        assert!(
            inside(label.2, panel.2) && label.2[2] > label.2[0] && label.2[3] > label.2[1],
            "{layer}'s active state label {:?} is not laid out in the panel {:?}",
            label.2,
            panel.2
        );
    }

    // Where the panel is, the picture shows it instead of the crowd.
    let (with, without) =
        (image::open(&lab_png).expect("lab.png").to_rgba8(), image::open(&plain_png).expect("plain.png").to_rgba8());
    let [x0, y0, x1, y1] = panel.2.map(|v| v as u32);
    let (mut changed, mut total) = (0usize, 0usize);
    for y in y0..y1.min(LAB_HEIGHT) {
        for x in x0..x1.min(LAB_WIDTH) {
            total += 1;
            changed += usize::from(pixels_differ(with.get_pixel(x, y), without.get_pixel(x, y)));
        }
    }
    assert!(changed * 2 > total, "only {changed} of the panel's {total} pixels differ from the picture without it");
}

/// Under Xvfb, clicks sent through the X server (`xdotool`): one on the bare ground picks no
/// one, one where character 0's pelvis projects picks it, as the viewer's own state says. The
/// crowd is paused, so the headless probe of the same scene says where the pelvis is.
#[test]
fn windowed_click_picks_the_character_under_the_cursor() {
    if !on_path("xvfb-run") || !on_path("xdotool") {
        eprintln!("skipping the picking test: xvfb-run or xdotool is not on PATH (apt-get install xvfb xdotool)");
        return;
    }
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("pick");
    let probe_png = dir.join("probe.png");
    // Large enough that the crowd panel, open at the top left, leaves the character in the
    // middle clear.
    let size = format!("{LAB_WIDTH}x{LAB_HEIGHT}");
    let scene = ["--characters", "1", "--paused", "--size", size.as_str()];
    let probe =
        headless(&[&scene[..], &["--frames", "1", "--probe", "--out", probe_png.to_str().expect("utf-8")]].concat());
    let stdout = String::from_utf8_lossy(&probe.stdout);
    let (x, y) = stdout
        .lines()
        .find_map(|l| {
            let mut words = l.strip_prefix("probe pelvis ")?.split_whitespace();
            Some((words.next()?.parse::<f32>().ok()?, words.next()?.parse::<f32>().ok()?))
        })
        .unwrap_or_else(|| panic!("the probe names the pelvis:\n{stdout}"));
    // The ground's bottom right corner, far from the one character in the middle of the view.
    let (ground_x, ground_y) = (LAB_WIDTH - 4, LAB_HEIGHT - 4);
    let clicks = format!(
        r#""$VIEWER" {} &
        pid=$!
        ( sleep 120; kill $pid ) >/dev/null 2>&1 &
        watchdog=$!
        # The title becomes the HUD (with "fps") once frames are drawn: before the first frame
        # there is no pose to pick from.
        win=$(xdotool search --sync --name fps | head -n 1)
        xdotool mousemove --window "$win" {ground_x} {ground_y} click 1
        sleep 1
        xdotool mousemove --window "$win" {} {} click 1
        sleep 1
        # Without a window manager nothing gives the window the keyboard focus.
        xdotool windowfocus --sync "$win" key Escape
        wait $pid
        status=$?
        kill $watchdog
        exit $status"#,
        scene.join(" "),
        x.round(),
        y.round()
    );
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 800x600x24", "sh", "-c", &clicks])
        .env("VIEWER", viewer_binary())
        .output()
        .expect("xvfb-run starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "windowed viewer failed ({}):\n{stdout}\n{stderr}", output.status);
    let picks: Vec<&str> = stdout.lines().filter(|l| l.starts_with("viewer: picked")).collect();
    assert_eq!(
        picks,
        ["viewer: picked nothing", "viewer: picked character 0"],
        "the ground click picks no one, the pelvis click character 0:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("viewer: inspecting character 0"), "the viewer ends inspecting character 0:\n{stdout}");
}

/// A layer's runs of equal values over frames, as `(value, first t, last t)`.
fn runs(lines: &[&Value], value: impl Fn(&Value) -> Option<String>) -> Vec<(String, f64, f64)> {
    let mut out: Vec<(String, f64, f64)> = Vec::new();
    let mut open = false;
    for line in lines {
        let t = line["t"].as_f64().expect("a trace line has t");
        match value(line) {
            Some(v) => {
                match out.last_mut() {
                    Some(run) if open && run.0 == v => run.2 = t,
                    _ => out.push((v, t, t)),
                }
                open = true;
            }
            None => open = false,
        }
    }
    out
}

/// The timeline lines `timeline <layer> <kind> <name> <start> <end>` of one layer and kind.
fn timeline(stdout: &str, layer: &str, kind: &str) -> Vec<(String, f64, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 6 && f[0] == "timeline" && f[1] == layer && f[2] == kind).then(|| {
                let number = |s: &str| s.parse::<f64>().unwrap_or_else(|e| panic!("{s:?} in {l:?}: {e}"));
                (f[3].to_owned(), number(f[4]), number(f[5]))
            })
        })
        .collect()
}

fn assert_runs_match(got: &[(String, f64, f64)], expected: &[(String, f64, f64)], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: {got:?} against the trace's {expected:?}");
    for (g, e) in got.iter().zip(expected) {
        assert_eq!(g.0, e.0, "{what}: {got:?} against {expected:?}");
        let worst = worst_abs_diff(&[g.1 as f32, g.2 as f32], &[e.1 as f32, e.2 as f32]);
        assert!(worst <= 1e-3, "{what}: {g:?} against {e:?} (times differ by {worst})");
    }
}

/// The timeline strip records what the inspected character did, frame by frame: per layer its
/// active states and transitions are the runs its `trace` lines show (the script lasts less
/// than the strip's window, so every frame is in it), and the strip is laid out in the picture.
#[test]
fn timeline_strip_holds_the_inspected_characters_history() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("timeline");
    let out = dir.join("timeline.png");
    let script = lab_script();
    let size = format!("{LAB_WIDTH}x{LAB_HEIGHT}");
    let run = headless(&[
        "--characters",
        "4",
        "--size",
        size.as_str(),
        "--inspect",
        "0",
        "--script",
        script.to_str().expect("utf-8 temp path"),
        "--out",
        out.to_str().expect("utf-8 temp path"),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let lines = trace_lines(&stdout, "trace ");
    let mut transitions_seen = 0;
    for layer in ["Base", "Lean", "Wave"] {
        let mine: Vec<&Value> = lines.iter().filter(|l| l["layer"] == layer).collect();
        assert!(!mine.is_empty(), "no trace lines for layer {layer}:\n{stdout}");
        let states = runs(&mine, |l| l["activeState"].as_str().map(str::to_owned));
        assert_runs_match(&timeline(&stdout, layer, "state"), &states, &format!("{layer} states"));
        let transitions = runs(&mine, |l| {
            (l["transitioning"] == true).then(|| {
                format!("{}->{}", l["previousState"].as_str().unwrap_or("?"), l["activeState"].as_str().unwrap_or("?"))
            })
        });
        transitions_seen += transitions.len();
        assert_runs_match(&timeline(&stdout, layer, "transition"), &transitions, &format!("{layer} transitions"));
    }
    assert!(transitions_seen >= 2, "the script walks, jumps and stops: {transitions_seen} transitions\n{stdout}");
    let strip = stdout
        .lines()
        .find(|l| l.starts_with("lab\ttimeline\t"))
        .unwrap_or_else(|| panic!("the timeline strip is laid out:\n{stdout}"));
    let r: Vec<f32> = strip.split('\t').skip(3).map(|v| v.parse().expect("a number")).collect();
    assert!(
        r.len() == 4
            && r[0] >= 0.0
            && r[1] >= 0.0
            && r[2] <= LAB_WIDTH as f32
            && r[3] <= LAB_HEIGHT as f32
            && r[2] > r[0] + 100.0,
        "the strip lies in the picture: {strip}"
    );
}

/// `--graph FILE`: a graph whose leaf names no demo clip still runs on the built-in character;
/// the leaf is listed (printed, and laid out in the lab's crowd panel), not a crash. A file
/// that is not there is an error with a message and exit status 1.
#[test]
fn graph_file_with_an_unknown_clip_name_runs_and_lists_it() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("graph");
    let path = dir.join("backflip.json");
    std::fs::write(&path, throng::demo::LOCOMOTION_GRAPH.replace("\"Jump\"", "\"Backflip\""))
        .expect("writes the graph");
    let out = dir.join("graph.png");
    let size = format!("{LAB_WIDTH}x{LAB_HEIGHT}");
    let run = headless(&[
        "--characters",
        "4",
        "--frames",
        "3",
        "--size",
        size.as_str(),
        "--inspect",
        "0",
        "--graph",
        path.to_str().expect("utf-8 temp path"),
        "--out",
        out.to_str().expect("utf-8 temp path"),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let problems: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("problem\t")).collect();
    assert_eq!(problems.len(), 1, "one leaf names no clip:\n{stdout}");
    assert!(problems[0].starts_with("leaf \"Backflip\": no demo clip \"backflip\""), "{}", problems[0]);
    assert!(
        stdout.lines().any(|l| l.starts_with("lab\tproblem\tleaf \"Backflip\"")),
        "the crowd panel shows the problem:\n{stdout}"
    );
    assert!(stdout.contains("trace {"), "the graph runs:\n{stdout}");

    let missing = dir.join("missing.json");
    let output = Command::new(viewer_binary())
        .args(["--headless", "--frames", "1", "--graph", missing.to_str().expect("utf-8 temp path")])
        .output()
        .expect("the viewer starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "a missing graph file is an error, not a crash:\n{stderr}");
    assert!(stderr.contains("cannot read") && stderr.contains("missing.json"), "{stderr}");
}

/// The lab's transition editor (`Scene::edit_transition`, which its widgets call; headless
/// `--edit T=SECONDS` and `--reset T`): a blend time edited changes that transition's duration
/// in every switch mode's graph and nothing else, and a reset gives back the file's timing
/// exactly (the timings print with `{:?}`, which round-trips every f32 bit).
#[test]
fn editing_a_transitions_blend_time_changes_it_alone_and_reset_restores_it() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let timings = |edits: &[&str]| -> Vec<(String, String)> {
        let run = headless(&[&["--characters", "2", "--frames", "1"][..], edits].concat());
        String::from_utf8_lossy(&run.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("transition\t"))
            .map(|l| {
                l.rsplit_once('\t').map(|(at, timing)| (at.to_owned(), timing.to_owned())).expect("mode, index, timing")
            })
            .collect()
    };
    // A reset of a transition never edited: every mode's graph as the file has it.
    let file = timings(&["--reset", "0"]);
    assert!(file.len() >= 4 * 3, "four modes' transitions: {file:?}");
    let edited = timings(&["--edit", "2=0.75"]);
    assert_eq!(edited.len(), file.len());
    let mut changed = 0;
    for ((at, before), (at_now, now)) in file.iter().zip(&edited) {
        assert_eq!(at, at_now);
        if at.ends_with("\t2") {
            changed += 1;
            assert!(now.contains("duration: 0.75,"), "{at}: {now}");
            let duration = |s: &str| s.split("duration: ").nth(1).and_then(|r| r.split(',').next()).map(str::to_owned);
            let restored = now.replace("duration: 0.75,", &format!("duration: {},", duration(before).unwrap()));
            assert_eq!(&restored, before, "{at}: only the blend time changes");
        } else {
            assert_eq!(now, before, "{at}: an edit of transition 2 changed another");
        }
    }
    assert_eq!(changed, 4, "transition 2 in each switch mode's graph");
    let reset = timings(&["--edit", "2=0.75", "--edit", "0=0.05", "--reset", "2", "--reset", "0"]);
    assert_eq!(reset, file, "reset gives back the file's timings exactly");
}

/// The lab's hand on many characters (`--drive`, as the character panel's "whole crowd" box and
/// shift-click selection give it): every driven character holds the hand's values, the others
/// keep the brain's; with the panel open it says how many it drives.
#[test]
fn driving_the_whole_crowd_or_a_selection_sets_exactly_their_parameters() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("drive");
    let out = dir.path().join("drive.png");
    let run = |args: &[&str]| -> (Vec<(usize, String, String)>, String) {
        let common = ["--characters", "9", "--frames", "20", "--out", out.to_str().expect("a UTF-8 path")];
        let run = headless(&[&common[..], args].concat());
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        let params = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("param\t"))
            .map(|l| {
                let mut f = l.split('\t');
                let i = f.next().and_then(|i| i.parse().ok()).expect("a character index");
                let (name, value) = (f.next().expect("a name"), f.next().expect("a value"));
                (i, name.to_owned(), value.to_owned())
            })
            .collect();
        (params, stdout)
    };
    let of = |params: &[(usize, String, String)], name: &str| -> Vec<(usize, String)> {
        params.iter().filter(|p| p.1 == name).map(|p| (p.0, p.2.clone())).collect()
    };

    let (all, stdout) = run(&["--drive", "all", "--hold", "speed=3.25", "--hold", "lean=0.5", "--inspect", "4"]);
    let speeds = of(&all, "speed");
    assert_eq!(speeds.iter().map(|s| s.0).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>(), "every character listed");
    for (i, speed) in &speeds {
        assert_eq!(speed, "Float(3.25)", "character {i}: the whole crowd holds the hand's speed");
    }
    for (i, lean) in of(&all, "lean") {
        assert_eq!(lean, "Float(0.5)", "character {i}: the whole crowd holds the hand's lean");
    }
    assert!(stdout.lines().any(|l| l.starts_with("lab\thand.driving\t9\t")), "the panel drives 9:\n{stdout}");

    let (some, _) = run(&["--drive", "2,5", "--hold", "speed=3.25"]);
    let speeds = of(&some, "speed");
    assert_eq!(speeds.len(), 9);
    for (i, speed) in &speeds {
        let driven = [2, 5].contains(i);
        assert_eq!(speed == "Float(3.25)", driven, "character {i} (driven: {driven}): speed {speed}");
    }
}

/// `--heat Wave`: the inspected character is coloured by the Wave layer's mask, joint by joint
/// as the evaluators resolve it (the heat lines), red where the mask is 1 and blue where it is
/// 0, where without the heat it is magenta.
#[test]
fn mask_heat_colours_the_inspected_character_by_its_layers_mask() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("heat");
    let (heat_png, plain_png) = (dir.join("heat.png"), dir.join("plain.png"));
    let size = format!("{LAB_WIDTH}x{LAB_HEIGHT}");
    let common = ["--characters", "1", "--frames", "2", "--paused", "--size", size.as_str(), "--inspect", "0"];
    let heat = headless(&[&common[..], &["--heat", "Wave", "--out", heat_png.to_str().expect("utf-8")]].concat());
    headless(&[&common[..], &["--out", plain_png.to_str().expect("utf-8")]].concat());

    let demo = throng::demo::DemoCharacter::humanoid();
    let graph =
        std::sync::Arc::new(throng::graph::CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).expect("compiles"));
    let wave = graph.layer_index("Wave").expect("the demo has a Wave layer");
    let bound = demo.bind(graph).expect("binds");
    let mask = bound.layers[wave].mask.as_ref().expect("the Wave layer has a mask").weights().to_vec();
    let stdout = String::from_utf8_lossy(&heat.stdout);
    let got: Vec<(String, f32)> = stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("heat\t")?.split('\t');
            Some((f.next()?.to_owned(), f.next()?.parse().ok()?))
        })
        .collect();
    let expected: Vec<(String, f32)> = demo.rig.names().iter().cloned().zip(mask.iter().copied()).collect();
    assert_eq!(got, expected, "the heat is the Wave layer's mask, joint by joint");
    assert!(mask.contains(&1.0) && mask.contains(&0.0), "the Wave mask has hot and cold joints");

    // In the middle of the picture, clear of the panels: where the character is drawn.
    let (with, without) =
        (image::open(&heat_png).expect("heat").to_rgba8(), image::open(&plain_png).expect("plain").to_rgba8());
    let (mut hot, mut cold) = (0, 0);
    for y in LAB_HEIGHT / 8..LAB_HEIGHT * 3 / 4 {
        for x in LAB_WIDTH * 2 / 5..LAB_WIDTH * 3 / 5 {
            let (a, b) = (with.get_pixel(x, y), without.get_pixel(x, y));
            if !pixels_differ(a, b) {
                continue;
            }
            let [r, _, bl, _] = a.0.map(u32::from);
            hot += usize::from(r > 2 * bl);
            cold += usize::from(bl > 2 * r);
        }
    }
    assert!(hot > 20 && cold > 20, "the character shows hot ({hot} pixels) and cold ({cold}) joints");
}

/// Under Xvfb, F12 writes the presented frame: with the crowd panel open (as the window
/// starts), then after its close button closed it. The two screenshots differ where the panel is.
#[test]
fn windowed_screenshots_with_and_without_the_panel_differ() {
    if !on_path("xvfb-run") || !on_path("xdotool") {
        eprintln!("skipping the screenshot test: xvfb-run or xdotool is not on PATH (apt-get install xvfb xdotool)");
        return;
    }
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("screenshot");
    let out = dir.join("shot.png");
    let (first, second) = (dir.join("shot_0001.png"), dir.join("shot_0002.png"));
    let script = format!(
        r#""$VIEWER" --characters 1 --paused --size {LAB_WIDTH}x{LAB_HEIGHT} --out "{}" &
        pid=$!
        ( sleep 300; kill $pid ) >/dev/null 2>&1 &
        watchdog=$!
        win=$(xdotool search --sync --name fps | head -n 1)
        # Without a window manager nothing gives the window the keyboard focus; once is enough.
        xdotool windowfocus --sync "$win"
        xdotool key F12
        n=0; while [ ! -f "{}" ] && [ $n -lt 300 ]; do sleep 0.5; n=$((n + 1)); done
        # Tab would go to egui's focus navigation while the panel is open: its close button
        # (top right of the panel, laid out at 8..286 × 8.., as the headless lab lines say).
        xdotool mousemove --window "$win" 268 25 click 1
        sleep 1
        xdotool key F12
        n=0; while [ ! -f "{}" ] && [ $n -lt 300 ]; do sleep 0.5; n=$((n + 1)); done
        xdotool key Escape
        wait $pid
        status=$?
        kill $watchdog
        exit $status"#,
        out.display(),
        first.display(),
        second.display()
    );
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 800x600x24", "sh", "-c", &script])
        .env("VIEWER", viewer_binary())
        .output()
        .expect("xvfb-run starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "windowed viewer failed ({}):\n{stdout}\n{stderr}", output.status);
    let (with, without) =
        (image::open(&first).expect("first").to_rgba8(), image::open(&second).expect("second").to_rgba8());
    assert_eq!(with.dimensions(), (LAB_WIDTH, LAB_HEIGHT), "the screenshot is the window's size");
    // The crowd panel opens at the top left, 8 points in, about 280 wide.
    let (mut changed, mut total) = (0, 0);
    for y in 40..200 {
        for x in 16..260 {
            total += 1;
            changed += usize::from(pixels_differ(with.get_pixel(x, y), without.get_pixel(x, y)));
        }
    }
    assert!(changed * 2 > total, "only {changed} of the panel's {total} pixels differ between the screenshots");
}

/// The `foot <character> <foot> <metres>` lines of a `--feet` run: each sole's height above the
/// ground after the last frame, in order (character by character, left foot then right).
fn sole_heights(stdout: &[u8]) -> Vec<f32> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("foot\t")?.split('\t').nth(2)?.parse().ok())
        .collect()
}

/// Within this of the ground a sole stands on it, metres: what the stage itself promises for a
/// planted sole on a slope over the demo walk (`tests/procedural.rs`). The viewer adds only where
/// it looks for each foot's ground: under where the sole stood in the frame before, where a
/// planted foot stays but for the brain turning the body about its root (a few millimetres at
/// the foot, a quarter of that in height on the 14° slope). The runs here measure 2.5 mm.
const ON_THE_GROUND_M: f32 = 0.005;
/// A sole whose clip holds it this close to the ground is planted.
const PLANTED_M: f32 = 0.002;

/// Feet on the ground, the viewer's demonstration of the procedural stage: on the slope with IK
/// on, every sole the clips plant stands on the ground, on both evaluators; with IK off the same
/// soles sink into the slope or float over it, and the pictures differ. Every run walks the same
/// crowd the same way (the brain steers by x and z alone), so the flat run without IK gives each
/// sole's height in the clips.
#[test]
fn with_ik_the_planted_soles_stand_on_the_slope_and_without_it_they_do_not() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("feet");
    let run = |extra: &[&str], name: &str| {
        let out = dir.join(name);
        let common = ["--characters", "40", "--frames", "60", "--no-lod", "--feet"];
        let stdout =
            headless(&[&common[..], extra, &["--out", out.to_str().expect("utf-8 temp path")]].concat()).stdout;
        (sole_heights(&stdout), out)
    };
    let (authored, _) = run(&["--ground", "flat", "--ik", "off"], "flat.png");
    let (gpu, gpu_png) = run(&["--ground", "slope", "--ik", "on"], "on.png");
    let (cpu, _) = run(&["--ground", "slope", "--ik", "on", "--cpu"], "cpu.png");
    let (off, off_png) = run(&["--ground", "slope", "--ik", "off"], "off.png");
    assert_eq!(authored.len(), 80, "two soles for each of 40 characters");
    let planted: Vec<usize> = (0..authored.len()).filter(|&k| authored[k].abs() < PLANTED_M).collect();
    assert!(planted.len() >= 20, "only {} soles planted: the crowd should stand and walk", planted.len());
    let on_planted =
        |soles: &[f32]| planted.iter().map(|&k| soles.get(k).copied().unwrap_or(f32::NAN)).collect::<Vec<_>>();
    let ground = vec![0.0; planted.len()];
    for (evaluator, soles) in [("GPU", &gpu), ("CPU", &cpu)] {
        let worst = worst_abs_diff(&on_planted(soles), &ground);
        eprintln!("{evaluator}, IK on: planted soles within {worst} m of the slope");
        assert!(worst <= ON_THE_GROUND_M, "{evaluator}, IK on: a planted sole is {worst} m off the slope");
    }
    let worst = worst_abs_diff(&on_planted(&off), &ground);
    eprintln!("IK off: planted soles up to {worst} m off the slope");
    assert!(worst > 3.0 * ON_THE_GROUND_M, "IK off: every planted sole is within {worst} m of the slope");
    let (on, off) = (load(&gpu_png), load(&off_png));
    let different = on.pixels().zip(off.pixels()).filter(|(a, b)| pixels_differ(a, b)).count();
    assert!(different > 100, "IK on and off draw the same picture ({different} pixels differ)");
}

/// The `look <character> <degrees>` lines of a `--feet` run with heads looking somewhere: how far
/// each head's forward axis is from pointing at the target after the last frame.
fn look_angles(stdout: &[u8]) -> Vec<f32> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("look\t")?.split('\t').nth(1)?.parse().ok())
        .collect()
}

/// Heads turn toward the moving point on both evaluators: in a crowd facing every way, the heads
/// whose target lies within the neck and head's reach (three joints of 0.4 rad each, about 70°)
/// point at it within half a degree (22 of these 40 do), the two evaluators agree head by head,
/// and a crowd whose heads did not turn would have next to none pointing there.
#[test]
fn heads_turn_toward_the_moving_point_on_both_evaluators() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = scratch_dir("look");
    let out = dir.join("look.png");
    let common = ["--characters", "40", "--frames", "30", "--no-lod", "--feet", "--look", "point"];
    let out = ["--out", out.to_str().expect("utf-8 temp path")];
    let gpu = look_angles(&headless(&[&common[..], &out].concat()).stdout);
    let cpu = look_angles(&headless(&[&common[..], &out, &["--cpu"]].concat()).stdout);
    assert_eq!(gpu.len(), 40, "one angle per character");
    let worst = worst_abs_diff(&gpu, &cpu);
    assert!(worst < 0.05, "the GPU and CPU heads differ by up to {worst}°");
    let facing = gpu.iter().filter(|&&a| a < 0.5).count();
    eprintln!("{facing} of 40 heads point at the target within 0.5°: {gpu:?}");
    assert!(facing >= 15, "only {facing} of 40 heads point at the target: {gpu:?}");
}
