//! The embedding API (`docs/embedding.md`): the types an engine keeps across threads are
//! `Send + Sync`, the calls added for engines agree with the paths they stand beside
//! (`crowd_root_motion` with the CPU evaluation's root motion, `readback_rows` with `readback`,
//! `handle_at` with `row_of`), and `examples/embed.rs` — an engine-style program with its own
//! device and renderer — runs headless and draws a crowd.
//!
//! The example's binary is built first, as this test was (profile, target folder, features:
//! `support::examples`), so an edit to the example is always what runs. Without a GPU adapter
//! the example's tests skip with a message, unless `THRONG_REQUIRE_GPU=1` (CI on lavapipe).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use image::RgbaImage;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalError;
use throng::eval::root_motion::{RootDelta, crowd_root_motion};
use throng::graph::CompiledGraph;
use throng::program::OutputLayout;
use throng::runtime::CrowdRuntime;
use throng::setup::{BindError, LayerSetupError, bind_archetype};
use throng::state::{Crowd, StateError};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use support::example_binary;
use support::files::TempDir;
use support::pixels_differ;

/// Compiles only if every type an engine shares between its threads (assets loaded on one,
/// the crowd stepped on another, the GPU crowd on the render thread) may cross them, and every
/// error may be boxed as `Box<dyn Error + Send + Sync>`.
#[test]
fn engine_facing_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<throng::Rig>();
    send_sync::<throng::Clip>();
    send_sync::<throng::mesh::SkinnedMesh>();
    send_sync::<throng::graph::CompiledGraph>();
    send_sync::<throng::state::Archetype>();
    send_sync::<throng::state::Crowd>();
    send_sync::<throng::state::CharacterHandle>();
    send_sync::<throng::state::LayerReadback>();
    send_sync::<throng::program::LayerSetup>();
    send_sync::<throng::eval::frame_layers::EvalContext>();
    send::<throng::eval::frame_layers::FrameJob<'static>>();
    send_sync::<throng::eval::root_motion::RootDelta>();
    send_sync::<CrowdRuntime>();
    send_sync::<throng::gpu::GpuCrowd>();
    send_sync::<throng::gpu::GpuContext>();
    send_sync::<throng::demo::DemoCharacter>();
    send_sync::<throng::graph::GraphError>();
    send_sync::<throng::state::StateError>();
    send_sync::<throng::eval::EvalError>();
    send_sync::<throng::gpu::GpuError>();
    send_sync::<throng::setup::LayerSetupError>();
    send_sync::<throng::import::gltf::GltfError>();
}

/// `defaultSwitch` replaced, so that both the crossfade path (root motion from both sides'
/// samples) and the destination-only path are compared.
fn demo_graph(switch: &str) -> Arc<CompiledGraph> {
    let default = r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#;
    assert!(LOCOMOTION_GRAPH.contains(default), "the demo graph's defaultSwitch changed");
    let json = LOCOMOTION_GRAPH.replace(default, &format!(r#""defaultSwitch": {switch}"#));
    Arc::new(CompiledGraph::from_json(&json).expect("the demo graph with another switch"))
}

/// A GPU engine computes root motion with `crowd_root_motion`; it must move characters exactly
/// as the CPU evaluation (`CrowdRuntime::evaluate`, `FrameJob` under it) reports, through starts,
/// stops, jumps and crossfades.
#[test]
fn crowd_root_motion_equals_frame_jobs() {
    let demo = DemoCharacter::humanoid();
    for switch in [r#"{ "mode": "crossfade" }"#, r#"{ "mode": "inertialize" }"#, r#"{ "mode": "frozen" }"#] {
        let bound = demo.bind(demo_graph(switch)).expect("binds");
        let num_layers = bound.layers.len();
        let mut crowd = CrowdRuntime::new();
        let kind = crowd
            .add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers)
            .expect("one setup per layer");
        let n = 24;
        let handles = crowd.spawn_many(kind, n).expect("spawns");
        let speed = crowd.param(kind, "speed").expect("speed");
        let jump = crowd.param(kind, "jump").expect("jump");
        let mut output = vec![0.0; n * demo.rig.num_joints() * 16];
        let (mut expected, mut got) = (vec![RootDelta::default(); n], vec![RootDelta::default(); n]);
        let (mut moving, mut switching) = (0, 0);
        for frame in 0..150 {
            // Speeds change every half second, differently per character; some jump.
            let speeds: Vec<f32> = (0..n).map(|i| [0.0, 1.0, 2.5, 4.0][(i + frame / 30) % 4]).collect();
            crowd.set_float(speed, &handles, &speeds).expect("speeds");
            if frame % 40 == 20 {
                crowd.set_trigger(jump, &handles[frame % 3..][..5], true).expect("jump");
            }
            crowd.update(1.0 / 60.0).expect("update");
            crowd.evaluate(kind, OutputLayout::Mat4, &mut output, &mut expected).expect("the frame evaluates");
            let (samples, programs) =
                (crowd.crowd().samples(kind).expect("samples"), crowd.crowd().programs(kind).expect("programs"));
            let clips = crowd.clips(kind).expect("known archetype");
            crowd_root_motion(clips, samples, programs, num_layers, &mut got).expect("root motion");
            assert_eq!(got, expected, "{switch}, frame {frame}");
            moving += got.iter().filter(|d| d.translation.length() > 0.01).count();
            switching += programs.iter().step_by(num_layers).filter(|p| p.progress < 1.0).count();
        }
        assert!(moving > 150 * n / 2, "{switch}: only {moving} character-frames moved");
        assert!(switching > 0, "{switch}: no base layer was ever mid-switch");
    }
}

#[test]
fn crowd_root_motion_refuses_a_wrong_sized_output() {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(demo_graph(r#""cut""#)).expect("binds");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype.clone());
    for _ in 0..3 {
        crowd.spawn(kind).expect("spawns");
    }
    crowd.update(0.1).expect("update");
    let (samples, programs) = (crowd.samples(kind).expect("samples"), crowd.programs(kind).expect("programs"));
    let mut two = [RootDelta { yaw: 7.0, ..RootDelta::default() }; 2];
    let e = crowd_root_motion(&bound.clips, samples, programs, bound.layers.len(), &mut two)
        .expect_err("3 characters, 2 entries");
    assert!(matches!(e, EvalError::RootMotionCount { got: 2, characters: 3 }), "{e}");
    assert!(two.iter().all(|d| d.yaw == 7.0), "nothing is written when refused");
    let e = crowd_root_motion(&bound.clips, samples, programs, 0, &mut two).expect_err("no layers");
    assert!(matches!(e, EvalError::Program(_)), "{e}");
}

/// Batch readback by row equals the per-handle readback, and rows map back to handles, after
/// despawns have moved rows about.
#[test]
fn readback_rows_and_handle_at_follow_despawns() {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(demo_graph(r#"{ "mode": "crossfade" }"#)).expect("binds");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype.clone());
    let mut handles: Vec<_> = (0..12).map(|_| crowd.spawn(kind).expect("spawns")).collect();
    let speed = crowd.param(kind, "speed").expect("speed");
    let speeds: Vec<f32> = (0..12).map(|i| (i % 3) as f32 * 1.5).collect();
    crowd.set_float(speed, &handles, &speeds).expect("speeds");
    for handle in [handles.remove(2), handles.remove(5), handles.remove(0)] {
        crowd.despawn(handle).expect("despawns");
    }
    let mut rows = Vec::new();
    for _ in 0..20 {
        crowd.update(1.0 / 60.0).expect("update");
    }
    for layer in 0..bound.layers.len() {
        crowd.readback_rows(kind, layer, &mut rows).expect("readback");
        assert_eq!(rows.len(), handles.len());
        for (row, readback) in rows.iter().enumerate() {
            let handle = crowd.handle_at(kind, row).expect("a character in every row");
            assert_eq!(crowd.row_of(handle).expect("live"), (kind, row));
            assert_eq!(*readback, crowd.readback(handle, layer).expect("readback"), "row {row}, layer {layer}");
        }
    }
    let states: std::collections::HashSet<_> = rows.iter().map(|r| r.active_state).collect();
    assert!(states.len() == 1, "the wave layer has one state");
    crowd.readback_rows(kind, 0, &mut rows).expect("readback");
    assert!(
        rows.iter().any(|r| r.transitioning || r.active_state != rows[0].active_state),
        "the crowd is doing different things"
    );
    let mut handle_rows: Vec<_> = handles.iter().map(|&h| crowd.row_of(h).expect("live").1).collect();
    handle_rows.sort_unstable();
    assert_eq!(handle_rows, (0..handles.len()).collect::<Vec<_>>(), "every kept handle has a row");
    assert_eq!(crowd.handle_at(kind, handles.len()), None);
    assert!(crowd.readback_rows(kind, 9, &mut rows).is_err() && rows.is_empty());
}

/// Stepping one archetype alone moves only its characters, exactly as a crowd holding it alone
/// would, and leaves the others as their last update left them.
#[test]
fn update_archetype_steps_one_archetype_only() {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(demo_graph(r#"{ "mode": "crossfade" }"#)).expect("binds");
    let (mut both, mut alone) = (Crowd::new(), Crowd::new());
    let near = both.add_archetype(bound.archetype.clone());
    let far = both.add_archetype(bound.archetype.clone());
    let only = alone.add_archetype(bound.archetype.clone());
    let populate = |crowd: &mut Crowd, kind| {
        let handles: Vec<_> = (0..6).map(|_| crowd.spawn(kind).expect("spawns")).collect();
        let speed = crowd.param(kind, "speed").expect("speed");
        crowd.set_float(speed, &handles, &[0.0, 1.0, 2.0, 3.0, 4.0, 1.5]).expect("speeds");
    };
    populate(&mut both, near);
    populate(&mut both, far);
    populate(&mut alone, only);
    both.update(1.0 / 60.0).expect("first update");
    alone.update(1.0 / 60.0).expect("first update");
    let far_before = both.programs(far).expect("programs").to_vec();
    for _ in 0..30 {
        both.update_archetype(near, 1.0 / 60.0).expect("near steps");
        alone.update(1.0 / 60.0).expect("alone steps");
    }
    assert_eq!(
        both.programs(near).expect("programs"),
        alone.programs(only).expect("programs"),
        "the stepped archetype as if alone"
    );
    assert_eq!(both.samples(near).expect("samples"), alone.samples(only).expect("samples"));
    assert_eq!(both.programs(far).expect("programs"), &far_before[..], "the other archetype did not move");
    assert!(matches!(both.update_archetype(far, f32::NAN), Err(StateError::BadDt(_))));
    assert_eq!(both.programs(far).expect("programs"), &far_before[..], "a refused step changes nothing");
}

/// `bind_archetype` refuses each kind of bad binding with the error that names it, and binds
/// additive leaves to one delta per clip.
#[test]
fn bind_archetype_names_what_it_refuses() {
    let DemoCharacter { rig, clips, .. } = DemoCharacter::humanoid();
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("the demo graph"));
    let by_name = |path: &str| {
        clips.iter().position(|c| Some(c.name()) == path.rsplit('.').next().map(str::to_lowercase).as_deref())
    };

    let bound = bind_archetype(Arc::clone(&graph), &rig, &clips, None, by_name).expect("binds");
    let lean = clips.iter().position(|c| c.name() == "lean").expect("a lean clip");
    assert_eq!(bound.clips.len(), clips.len() + 1, "one delta for the additive layer's one clip");
    assert_eq!(
        bound.clips[clips.len()],
        clips[lean].to_additive(rig.rest_pose()),
        "the delta is over the rest pose by default"
    );

    let short = &rig.rest_pose()[1..];
    let e = bind_archetype(Arc::clone(&graph), &rig, &clips, Some(short), by_name).expect_err("a short reference");
    assert!(matches!(e, BindError::ReferenceLength { got, joints } if got + 1 == joints), "{e}");

    let e = bind_archetype(Arc::clone(&graph), &rig, &clips, None, |path| {
        if path == "Move.Run" { Some(clips.len()) } else { by_name(path) }
    })
    .expect_err("a clip past the table");
    assert!(matches!(&e, BindError::UnknownClip { path, .. } if path == "Move.Run"), "{e}");

    let e = bind_archetype(
        Arc::clone(&graph),
        &rig,
        &clips,
        None,
        |path| if path == "Jump" { None } else { by_name(path) },
    )
    .expect_err("an unbound leaf");
    assert!(matches!(&e, BindError::State(StateError::UnboundLeaf { path }) if path == "Jump"), "{e}");

    let masked = LOCOMOTION_GRAPH.replace(r#""spine_01/*": 1.0"#, r#""tail/*": 1.0"#);
    let graph = Arc::new(CompiledGraph::from_json(&masked).expect("a graph masking a joint the rig lacks"));
    let e = bind_archetype(graph, &rig, &clips, None, by_name).expect_err("an unknown mask joint");
    assert!(matches!(&e, BindError::Layer(LayerSetupError { layer: 2, .. })), "{e}");
    assert!(
        e.to_string().contains("Wave") && e.to_string().contains("tail"),
        "the message names the layer and the joint: {e}"
    );
}

/// The embed example, built as this test was (`support::examples`).
fn embed_binary() -> PathBuf {
    example_binary("embed")
}

fn embed(args: &[&str]) -> Output {
    let output = Command::new(embed_binary()).args(args).output().expect("the example starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "embed {args:?} failed ({}):\n{stdout}\n{stderr}", output.status);
    assert!(
        !stderr.contains("wgpu error") && !stderr.contains("Validation Error"),
        "embed {args:?} reported wgpu errors:\n{stderr}"
    );
    output
}

/// Pixels that differ from the picture's most common colour (the clear colour wherever the
/// crowd leaves the background showing).
fn foreground(image: &RgbaImage) -> Vec<bool> {
    let mut counts: HashMap<[u8; 4], usize> = HashMap::new();
    for p in image.pixels() {
        *counts.entry(p.0).or_default() += 1;
    }
    let background = image::Rgba(counts.into_iter().max_by_key(|&(_, n)| n).map(|(c, _)| c).expect("pixels"));
    image.pixels().map(|p| pixels_differ(p, &background)).collect()
}

/// Separate figures: 4-connected regions of at least `min_pixels` foreground pixels.
fn regions(mask: &[bool], width: usize, min_pixels: usize) -> usize {
    let mut seen = vec![false; mask.len()];
    let mut found = 0;
    for start in 0..mask.len() {
        if !mask[start] || seen[start] {
            continue;
        }
        let (mut stack, mut size) = (vec![start], 0);
        seen[start] = true;
        while let Some(i) = stack.pop() {
            size += 1;
            let (x, y) = (i % width, i / width);
            let neighbours =
                [(x > 0).then(|| i - 1), (x + 1 < width).then(|| i + 1), (y > 0).then(|| i - width), Some(i + width)];
            for j in neighbours.into_iter().flatten() {
                if j < mask.len() && mask[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        found += usize::from(size >= min_pixels);
    }
    found
}

#[test]
fn embed_example_draws_a_moving_crowd_headless() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = TempDir::new("embed");
    let (early, late) = (dir.join("early.png"), dir.join("late.png"));
    let common = ["--characters", "24", "--size", "320x200"];
    let stdout =
        embed(&[&common[..], &["--frames", "30", "--out", early.to_str().expect("utf-8 temp path")]].concat()).stdout;
    embed(&[&common[..], &["--frames", "75", "--out", late.to_str().expect("utf-8 temp path")]].concat());
    let stdout = String::from_utf8_lossy(&stdout);
    assert!(
        stdout.contains("24 characters, 30 frames") && stdout.contains("base layer states:"),
        "summary missing:\n{stdout}"
    );

    let load = |path: &Path| {
        let image = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).to_rgba8();
        assert_eq!(image.dimensions(), (320, 200), "{} has the requested size", path.display());
        image
    };
    let (early, late) = (load(&early), load(&late));
    for (name, image) in [("frame 30", &early), ("frame 75", &late)] {
        let mask = foreground(image);
        let share = mask.iter().filter(|&&m| m).count() as f64 / mask.len() as f64;
        assert!((0.03..0.7).contains(&share), "{name}: the crowd covers {:.1} % of the picture", share * 100.0);
        let figures = regions(&mask, 320, 20);
        assert!(figures >= 6, "{name}: {figures} separate figures for 24 characters");
        eprintln!("{name}: the crowd covers {:.1} % of the picture in {figures} separate figures", share * 100.0);
    }
    // Three quarters of a second apart, walkers have moved and every body has changed pose.
    let (a, b) = (foreground(&early), foreground(&late));
    let either = a.iter().zip(&b).filter(|(a, b)| **a || **b).count();
    let moved = early
        .pixels()
        .zip(late.pixels())
        .zip(a.iter().zip(&b))
        .filter(|((p, q), (a, b))| (**a || **b) && pixels_differ(p, q))
        .count();
    eprintln!("{moved} of {either} character pixels changed between frames 30 and 75");
    assert!(moved * 4 > either, "only {moved} of {either} character pixels changed between frames 30 and 75");
}

/// A device whose storage bindings hold 512 KiB (a small GPU's) makes throng evaluate in
/// chunks and the engine draw in windows (`GpuCrowd::skin_windows`); the picture is the same
/// pixel for pixel as with one chunk and one window.
#[test]
fn embed_example_draws_the_same_crowd_in_windows() {
    if gpu_support::gpu().is_none() {
        return;
    }
    let dir = TempDir::new("embed-windows");
    let (whole, windowed) = (dir.join("whole.png"), dir.join("windowed.png"));
    let common = ["--characters", "600", "--frames", "10", "--size", "320x200"];
    let one = embed(&[&common[..], &["--out", whole.to_str().expect("utf-8 temp path")]].concat()).stdout;
    let small = &["--max-binding-kib", "512", "--out", windowed.to_str().expect("utf-8 temp path")];
    let many = embed(&[&common[..], small].concat()).stdout;
    let (one, many) = (String::from_utf8_lossy(&one), String::from_utf8_lossy(&many));
    assert!(one.contains("1 compute chunks, 1 draw windows"), "one binding holds the whole crowd:\n{one}");
    assert!(
        many.contains("2 draw windows") && !many.contains(" 1 compute chunks"),
        "512 KiB bindings split the crowd:\n{many}"
    );
    let (a, b) =
        (image::open(&whole).expect("whole.png").to_rgba8(), image::open(&windowed).expect("windowed.png").to_rgba8());
    let share = foreground(&a).iter().filter(|&&m| m).count() as f64 / (320.0 * 200.0);
    assert!(share > 0.05, "600 characters cover {:.1} % of the picture", share * 100.0);
    assert!(a == b, "drawing in windows changed {} pixels", a.pixels().zip(b.pixels()).filter(|(p, q)| p != q).count());
}

#[test]
fn embed_example_refuses_bad_arguments() {
    for args in [&["--frames", "ten"][..], &["--size", "640"][..], &["--wat", "1"][..], &["--out"][..]] {
        let output = Command::new(embed_binary()).args(args).output().expect("the example starts");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "embed {args:?} exits 2:\n{stderr}");
        assert!(stderr.contains("embed:") && stderr.contains(args[0]), "embed {args:?} names the argument:\n{stderr}");
    }
}
