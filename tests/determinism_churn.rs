//! Determinism and churn on a real graph (`benches/support/locomotion.json`, with every switch
//! mode assigned to its transitions): CPU output is bitwise identical for 1, 2 and 4 rayon
//! threads and across runs, and a crowd whose characters come and go between frames gives every
//! survivor exactly the output it would have in a crowd without the churn, while the handles of
//! removed characters are refused.

use std::sync::Arc;

use glam::{Quat, Vec3};
use serde_json::{Value, json};
use throng::demo::DemoCharacter;
use throng::eval::EvalCrowdJob;
use throng::graph::CompiledGraph;
use throng::program::{LayerSetup, LayerSpace, Mask, MaskEntry, OutputLayout};
use throng::runtime::{CrowdRuntime, RuntimeError};
use throng::state::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, StateError};
use throng::{Clip, Rig, Transform};

mod support;
use support::Rng;
use support::drive::drive;

const DT: f32 = 1.0 / 30.0;

/// The locomotion graph with a different switch on each transition, so that characters carry
/// evaluation memory (snapshots, inertialization offsets, displayed poses) between frames.
fn graph() -> Arc<CompiledGraph> {
    let mut g: Value = serde_json::from_str(include_str!("../benches/support/locomotion.json")).unwrap();
    let switches = [
        Value::Null,
        json!({ "mode": "inertialize", "spring": { "halflife": 0.08 } }),
        json!({ "mode": "frozen" }),
        json!({ "mode": "inertialize", "quintic": { "overshootControl": true } }),
        json!({ "mode": "crossfade", "easing": "smoothstep" }),
        json!({ "mode": "inertialize" }),
    ];
    let base = g["layers"][0]["transitions"].as_array_mut().unwrap();
    assert_eq!(base.len(), switches.len(), "locomotion.json changed; revisit the switch table");
    for (t, s) in base.iter_mut().zip(switches) {
        if !s.is_null() {
            t["switch"] = s;
            t["interruptionSource"] = json!("NEXT_STATE");
        }
    }
    g["layers"][1]["transitions"][1]["switch"] = json!({ "mode": "frozen" });
    Arc::new(CompiledGraph::compile(&throng::graph::format::GraphDesc::from_value(&g).unwrap()).unwrap())
}

/// Binds the graph's leaves to clips named after them (lower case, child name for blend trees).
fn archetype(clips: &[Clip]) -> Archetype {
    Archetype::new(graph(), |leaf| {
        let name = leaf.rsplit('.').next().unwrap_or(leaf).to_lowercase();
        let name = if name == "rest" { "idle".to_owned() } else { name };
        let i = clips.iter().position(|c| c.name() == name)?;
        Some(ClipBinding { clip: i as u32, duration_s: clips[i].duration_s() })
    })
    .unwrap()
}

/// Layer setups: the base, then the upper body in mesh space under `mask`.
fn layer_setups(rig: &Rig, mask: &[MaskEntry]) -> Vec<LayerSetup> {
    vec![
        LayerSetup::default(),
        LayerSetup {
            mask: Some(Mask::from_entries(rig, mask).unwrap()),
            space: LayerSpace::Mesh,
            ..LayerSetup::default()
        },
    ]
}

/// The graph's upper-body mask, each joint with its descendants.
fn graph_mask(graph: &CompiledGraph) -> Vec<MaskEntry> {
    graph.layers()[1].mask.iter().map(|(j, w)| MaskEntry { joint: j.clone(), weight: *w, descendants: true }).collect()
}

/// Evaluates `kind`'s characters after the runtime's last update into `output` (resized to
/// them), as `Mat4`s.
fn evaluate(runtime: &mut CrowdRuntime, kind: ArchetypeId, output: &mut Vec<f32>) {
    output.resize(runtime.floats_needed(kind, OutputLayout::Mat4).unwrap(), 0.0);
    runtime.evaluate(kind, OutputLayout::Mat4, output, &mut []).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Determinism

/// Bit patterns of everything the CPU produced over `frames` frames of `n` characters: per frame
/// the runtime's output and the EvalCrowdJob output of each character's base layer.
fn run_demo_crowd(threads: usize, n: usize, frames: usize) -> Vec<(Vec<u32>, Vec<u32>)> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let demo = DemoCharacter::humanoid();
        let arch = archetype(&demo.clips);
        let layers = layer_setups(&demo.rig, &[MaskEntry { joint: "spine_01".into(), weight: 1.0, descendants: true }]);
        let mut runtime = CrowdRuntime::new();
        let kind = runtime.add_archetype(arch, demo.rig.clone(), demo.clips.clone(), layers).unwrap();
        let handles = runtime.spawn_many(kind, n).unwrap();
        let mut frame_out = Vec::new();
        let mut crowd_out = vec![0.0; n * demo.rig.num_joints() * 12];
        let mut bits = Vec::with_capacity(frames);
        for f in 0..frames {
            drive(&mut runtime, kind, &handles, |i| (i % 101, f));
            runtime.update(DT).unwrap();
            evaluate(&mut runtime, kind, &mut frame_out);
            let crowd = runtime.crowd();
            let ranges: Vec<_> = crowd.programs(kind).unwrap().chunks(2).map(|p| p[0].sample_range()).collect();
            EvalCrowdJob {
                rig: &demo.rig,
                clips: &demo.clips,
                samples: crowd.samples(kind).unwrap(),
                sample_ranges: &ranges,
                layout: OutputLayout::Affine3x4,
                output: &mut crowd_out,
            }
            .run()
            .unwrap();
            bits.push((
                frame_out.iter().map(|v| v.to_bits()).collect(),
                crowd_out.iter().map(|v| v.to_bits()).collect(),
            ));
        }
        bits
    })
}

#[test]
fn cpu_output_is_bitwise_identical_for_one_two_and_four_threads_and_across_runs() {
    // Over two state-step chunks (CHARACTERS_PER_CHUNK = 512) and many evaluator chunks.
    let (n, frames) = (1100, 30);
    let one = run_demo_crowd(1, n, frames);
    let moving = one.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(moving > frames / 2, "the crowd hardly moved ({moving} of {frames} frames changed)");
    for (label, other) in [
        ("1 thread, second run", run_demo_crowd(1, n, frames)),
        ("2 threads", run_demo_crowd(2, n, frames)),
        ("4 threads", run_demo_crowd(4, n, frames)),
    ] {
        for (f, (a, b)) in one.iter().zip(&other).enumerate() {
            if let Some(i) = a.0.iter().zip(&b.0).position(|(x, y)| x != y) {
                panic!(
                    "{label}: the runtime's output differs at frame {f}, float {i}: {} vs {}",
                    f32::from_bits(a.0[i]),
                    f32::from_bits(b.0[i])
                );
            }
            if let Some(i) = a.1.iter().zip(&b.1).position(|(x, y)| x != y) {
                panic!(
                    "{label}: EvalCrowdJob output differs at frame {f}, float {i}: {} vs {}",
                    f32::from_bits(a.1[i]),
                    f32::from_bits(b.1[i])
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Churn

/// A seven-joint body whose joint names match the graph's mask, and procedural clips named
/// after the graph's leaves: a sine sway per joint, each clip at its own amplitude and length.
fn small_body() -> (Rig, Vec<Clip>) {
    let names = ["root", "spine", "neck", "head", "upper_arm_l", "upper_arm_r", "leg"];
    let parents = [None, Some(0), Some(1), Some(2), Some(1), Some(1), Some(0)];
    let rest: Vec<Transform> =
        (0..names.len()).map(|j| Transform::from_translation(Vec3::new(0.1 * j as f32, 0.3, 0.0))).collect();
    let rig = Rig::new(names.iter().map(|n| (*n).to_owned()).collect(), parents.to_vec(), rest.clone(), None).unwrap();
    let clip = |name: &str, duration_s: f32, amplitude: f32, looping: bool| {
        let frames = 16;
        let poses = (0..=frames)
            .flat_map(|f| {
                let phase = std::f32::consts::TAU * f as f32 / frames as f32;
                rest.iter().enumerate().map(move |(j, r)| Transform {
                    translation: r.translation + Vec3::Z * (0.05 * amplitude * phase.sin()),
                    rotation: Quat::from_rotation_z(amplitude * (phase + j as f32).sin())
                        * Quat::from_rotation_x(0.3 * amplitude * phase.cos()),
                    scale: Vec3::ONE,
                })
            })
            .collect();
        Clip::from_poses(name, rest.len(), poses, duration_s, looping).unwrap()
    };
    let clips = vec![
        clip("idle", 2.0, 0.05, true),
        clip("walk", 1.1, 0.4, true),
        clip("run", 0.7, 0.8, true),
        clip("jump", 1.2, 1.2, false),
        clip("wave", 1.5, 0.6, false),
    ];
    (rig, clips)
}

/// The first float where two outputs differ bit for bit, as (index, left, right).
fn first_difference(a: &[f32], b: &[f32]) -> Option<(usize, f32, f32)> {
    a.iter().zip(b).position(|(x, y)| x.to_bits() != y.to_bits()).map(|i| (i, a[i], b[i]))
}

/// Characters, frames, and characters removed (and as many added) per frame, on average. Debug
/// builds (the normal `cargo test`, about 10 s) run a smaller crowd; release builds run the full
/// 10,000 × 1,000 (about 17 s on two cores, some 100,000 removals) on the seven-joint body.
const fn churn_size() -> (usize, usize, usize) {
    if cfg!(debug_assertions) { (1_000, 200, 10) } else { (10_000, 1_000, 100) }
}

#[test]
fn survivors_of_churn_match_a_crowd_without_churn_and_removed_handles_are_refused() {
    let started = std::time::Instant::now();
    let (population, frames, per_frame) = churn_size();
    const PROFILES: usize = 97;
    let (rig, clips) = small_body();
    let joints = rig.num_joints();
    let per_character = joints * 16;

    // Without churn: one character per profile, all spawned together, recorded at every age.
    let arch = archetype(&clips);
    let layers = layer_setups(&rig, &graph_mask(arch.graph()));
    let mut calm = CrowdRuntime::new();
    let kind = calm.add_archetype(arch.clone(), rig.clone(), clips.clone(), layers.clone()).unwrap();
    let calm_handles = calm.spawn_many(kind, PROFILES).unwrap();
    let mut output = Vec::new();
    // Profile p at age a is at ((a * PROFILES) + p) * per_character.
    let mut expected = Vec::with_capacity(frames * PROFILES * per_character);
    for age in 0..frames {
        drive(&mut calm, kind, &calm_handles, |i| (i, age));
        calm.update(DT).unwrap();
        evaluate(&mut calm, kind, &mut output);
        expected.extend_from_slice(&output);
    }

    // With churn: characters come and go; each row remembers its profile and its spawn frame.
    let mut crowd = CrowdRuntime::new();
    let kind = crowd.add_archetype(arch, rig, clips, layers).unwrap();
    let mut rows: Vec<(CharacterHandle, usize, usize)> = Vec::with_capacity(population);
    let mut serial = 0;
    let mut spawn = |crowd: &mut CrowdRuntime, rows: &mut Vec<(CharacterHandle, usize, usize)>, frame: usize| {
        let h = crowd.spawn(kind).unwrap();
        assert_eq!(crowd.crowd().row_of(h).unwrap(), (kind, rows.len()), "a new character takes the next row");
        rows.push((h, serial % PROFILES, frame));
        serial += 1;
    };
    for _ in 0..population {
        spawn(&mut crowd, &mut rows, 0);
    }
    let mut removed: Vec<CharacterHandle> = Vec::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut compared = 0u64;
    let speed = crowd.param(kind, "speed").unwrap();
    for frame in 0..frames {
        if frame > 0 {
            for _ in 0..rng.below(2 * per_frame + 1) {
                let row = rng.below(rows.len());
                let (h, _, _) = rows[row];
                assert_eq!(crowd.crowd().row_of(h).unwrap(), (kind, row));
                crowd.despawn(h).unwrap();
                rows.swap_remove(row);
                removed.push(h);
            }
            for _ in 0..rng.below(2 * per_frame + 1) {
                spawn(&mut crowd, &mut rows, frame);
            }
        }
        let handles: Vec<_> = rows.iter().map(|r| r.0).collect();
        drive(&mut crowd, kind, &handles, |i| (rows[i].1, frame - rows[i].2));
        crowd.update(DT).unwrap();
        evaluate(&mut crowd, kind, &mut output);
        for (row, &(h, profile, born)) in rows.iter().enumerate() {
            let got = &output[row * per_character..(row + 1) * per_character];
            let want = ((frame - born) * PROFILES + profile) * per_character;
            if let Some((i, g, w)) = first_difference(got, &expected[want..want + per_character]) {
                panic!(
                    "frame {frame}: character {h:?} (row {row}, profile {profile}, spawned at frame {born}) joint {} float {}: {g} without churn {w}",
                    i / 16,
                    i % 16
                );
            }
        }
        compared += rows.len() as u64;
        for _ in 0..8.min(removed.len()) {
            let gone = removed[rng.below(removed.len())];
            assert!(
                matches!(crowd.readback(gone, 0), Err(RuntimeError::State(StateError::StaleHandle { .. }))),
                "frame {frame}: {gone:?} was removed"
            );
            assert!(matches!(
                crowd.set_float(speed, &[gone], &[1.0]),
                Err(RuntimeError::State(StateError::StaleHandle { .. }))
            ));
            assert!(matches!(crowd.despawn(gone), Err(RuntimeError::State(StateError::StaleHandle { .. }))));
        }
    }
    assert_eq!(crowd.crowd().num_characters(kind).unwrap(), rows.len());
    assert!(removed.len() >= frames * per_frame / 2, "only {} characters were removed", removed.len());
    eprintln!(
        "churn: {population} characters × {frames} frames, {} removed, {compared} character-frames compared in {:.1} s",
        removed.len(),
        started.elapsed().as_secs_f64()
    );
}
