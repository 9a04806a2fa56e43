//! Hostile inputs found by a review of the first #25 ("Hostile input") fixes: memory that grew
//! with the square of a file, NaN from accepted data by routes the first bounds missed. Each
//! test asserts what docs/errors.md promises.

// One character's sample range in a slice is exactly what the evaluation jobs take.
#![allow(clippy::single_range_in_vec_init)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use glam::{Quat, Vec3};
use throng::eval::frame::{EvalContext, FrameJob, LayerBlend, LayerSetup};
use throng::eval::root_motion::{crowd_root_motion, RootDelta};
use throng::eval::{EvalError, OutputLayout};
use throng::graph::{CompiledGraph, MAX_JSON_DEPTH};
use throng::import::gltf::{load_gltf_from_slice, GltfOptions};
use throng::program::{ClipSample, LayerProgram, SwitchMode};
use throng::{Clip, Rig, Transform};

// ---------------------------------------------------------------------------------------------
// Memory measured per thread: the peak of live bytes this thread allocated during a call.

struct Tracking;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        note(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f` and returns its result with the most bytes this thread held at once during it,
/// over what it held before.
fn peak_bytes<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, (peak - base).max(0) as usize)
}

fn chain_rig(rest: Vec<Transform>) -> Rig {
    let n = rest.len();
    Rig::new((0..n).map(|j| format!("j{j}")).collect(), (0..n).map(|j| j.checked_sub(1)).collect(), rest, None).unwrap()
}

fn first_non_finite(output: &[f32]) -> Option<(usize, f32)> {
    output.iter().position(|v| !v.is_finite()).map(|i| (i / 16, output[i]))
}

// ---------------------------------------------------------------------------------------------
// Files: a GLB's buffers without URI each copy the whole BIN chunk

/// docs/errors.md, "Reading files": never more bytes than stated, so that no file can fill
/// memory. A GLB whose JSON lists many buffers without `uri` makes `load_buffers` copy the
/// whole BIN chunk once per buffer (`bin.to_vec()`, then `truncate`, which keeps the
/// capacity), whatever each `byteLength` says: a 4 MiB GLB with 32 four-byte buffers takes
/// 128 MiB; a 1 GiB GLB with thousands of them, terabytes. The gltf crate does not refuse a
/// second URI-less buffer (the spec allows only buffer 0 to be the BIN chunk).
#[test]
fn glb_buffers_without_uri_do_not_each_copy_the_bin_chunk() {
    let bin = vec![0u8; 4 << 20];
    let buffers = vec![r#"{"byteLength":4}"#; 32].join(",");
    let mut json = format!(r#"{{"asset":{{"version":"2.0"}},"buffers":[{buffers}]}}"#).into_bytes();
    while json.len() % 4 != 0 {
        json.push(b' ');
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut glb = Vec::with_capacity(total);
    glb.extend_from_slice(b"glTF");
    glb.extend_from_slice(&2u32.to_le_bytes());
    glb.extend_from_slice(&(total as u32).to_le_bytes());
    glb.extend_from_slice(&(json.len() as u32).to_le_bytes());
    glb.extend_from_slice(&0x4E4F_534Au32.to_le_bytes());
    glb.extend_from_slice(&json);
    glb.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    glb.extend_from_slice(&0x004E_4942u32.to_le_bytes());
    glb.extend_from_slice(&bin);
    let (result, peak) = peak_bytes(|| load_gltf_from_slice(&glb, None, &GltfOptions::default()).map(|_| ()));
    // Whatever the result (the file has no skin), 32 buffers of 4 bytes are 128 bytes.
    let _ = result;
    assert!(peak < bin.len(), "loading 32 buffers of 4 bytes held {peak} bytes at once (the BIN chunk is {} bytes)", bin.len());
}

// ---------------------------------------------------------------------------------------------
// Graphs: the editor form reads a state once per id that lists it

/// docs/errors.md, "Resource limits" → "Graphs": reading costs time and memory in proportion
/// to the input's size times its nesting depth, at most `MAX_JSON_DEPTH` times the input, and
/// every limit is checked before the work it bounds. In the editor form a layer lists its
/// states by id, and `read_layer` (src/graph/format.rs) reads the state a listed id names
/// once per listing: one sub-machine of 200 states listed 5,000 times (a 15 KB file) becomes a
/// million `StateDesc`s before `limits` ever counts them (quadratic in the file's size).
#[test]
fn editor_form_repeated_state_ids_do_not_multiply_reading() {
    let inner: Vec<String> = (0..200).map(|i| format!(r#"{{"name":"s{i}"}}"#)).collect();
    let ids = vec!["1"; 5000].join(",");
    let text = format!(
        r#"{{ "layers": {{ "0": {{ "name": "Base", "states": [0, {ids}], "transitions": [0] }} }},
             "states": {{ "0": {{ "name": "START" }},
                          "1": {{ "name": "Big", "states": [{}], "transitions": [] }} }},
             "transitions": {{ "0": {{ "from": 0, "to": 1 }} }}, "parameters": {{}} }}"#,
        inner.join(",")
    );
    let (result, peak) = peak_bytes(|| CompiledGraph::from_json(&text).map(|_| ()));
    assert!(result.is_err(), "5,000 listings of one state are accepted");
    let bound = text.len() * MAX_JSON_DEPTH;
    assert!(peak <= bound, "reading a {}-byte graph held {peak} bytes at once, over the documented {bound} ({MAX_JSON_DEPTH} × input)", text.len());
}

// ---------------------------------------------------------------------------------------------
// Numeric bounds: NaN still reachable from accepted data

/// One character's frame over a base layer and `additive` additive layers, each blending clip
/// 0 and clip 1 half and half at `time_s`.
fn cpu_layers(rig: &Rig, clips: &[Clip], additive: usize, time_s: f32) -> Result<Vec<f32>, EvalError> {
    let mut layers = vec![LayerSetup::default()];
    layers.extend((0..additive).map(|_| LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() }));
    let mut samples = Vec::new();
    let mut programs = Vec::new();
    for _ in &layers {
        let first = samples.len() as u32;
        samples.push(ClipSample::new(0, time_s, 0.5));
        samples.push(ClipSample::new(1, time_s, 0.5));
        programs.push(LayerProgram { first_sample: first, num_target: 2, transition: u32::MAX, target_weight: 1.0, progress: 1.0, weight: 1.0, ..LayerProgram::default() });
    }
    let joints = rig.num_joints();
    let mut context = EvalContext::new(1, layers.len(), joints);
    let mut output = vec![0.0; joints * 16];
    let mut sampled = [0];
    FrameJob {
        rig,
        clips,
        layers: &layers,
        samples: &samples,
        programs: &programs,
        dt_s: 1.0 / 60.0,
        context: &mut context,
        layout: OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut sampled,
        root_motion: &mut [],
    }
    .run()?;
    Ok(output)
}

/// docs/errors.md, "Numeric bounds": finite in, finite out, by construction. `Clip::to_additive`
/// takes any reference pose; a reference rotation of zero length (finite numbers, which
/// `Clip::from_poses` refuses as a frame) makes every delta rotation
/// `(0·q).normalize()` = NaN (src/eval/layers.rs `make_additive`). The clip's extents
/// (src/clip.rs `extents`) and `program::validate_clips` look at translations and scales only,
/// so the NaN clip is accepted and the frame job returns success with NaN matrices.
#[test]
fn additive_clip_from_a_zero_length_reference_rotation_is_refused_or_finite() {
    let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); 3]);
    let mut bent = rig.rest_pose().to_vec();
    bent[1].rotation = Quat::from_rotation_z(0.5);
    let clip = Clip::from_poses("bend", 3, [rig.rest_pose().to_vec(), bent].concat(), 1.0, true).unwrap();
    let mut reference = rig.rest_pose().to_vec();
    reference[1].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0);
    let delta = clip.to_additive(&reference);
    let clips = [clip, delta];
    if let Ok(output) = cpu_layers(&rig, &clips, 1, 0.25) {
        assert_eq!(first_non_finite(&output), None, "an accepted additive clip gave non-finite matrices (joint, value)");
    }
}

/// docs/errors.md, "Numeric bounds" step 7: root motion is differences of root translations,
/// "at most 2T per clip and loop". The loops are not bounded: `ClipSample::advance_s` is never
/// validated (src/program.rs `validate_sample_range` checks time and weight only), and
/// `clip_root_delta` (src/eval/root_motion.rs) multiplies the per-loop travel by
/// `floor(t1/d) − floor(t0/d)`, which for `advance_s = f32::MAX` on a 0.5 s clip is infinite:
/// the y component (always 0) becomes `0 × ∞` = NaN, the travel ∞. Returned as success.
#[test]
fn root_motion_of_a_huge_advance_is_refused_or_finite() {
    let run = Clip::from_poses("run", 1, vec![Transform::IDENTITY, Transform::from_translation(Vec3::new(0.0, 0.0, 1.0))], 0.5, true).unwrap();
    let samples = [ClipSample { clip: 0, time_s: 0.25, weight: 1.0, advance_s: f32::MAX }];
    let programs = [LayerProgram {
        first_sample: 0,
        num_target: 1,
        transition: u32::MAX,
        target_weight: 1.0,
        progress: 1.0,
        weight: 1.0,
        flags: LayerProgram::ROOT_MOTION,
        ..LayerProgram::default()
    }];
    let mut out = [RootDelta::default()];
    if crowd_root_motion(&[run], &samples, &programs, 1, &mut out).is_ok() {
        let r = out[0];
        assert!(r.translation.is_finite() && r.yaw.is_finite(), "accepted samples gave root motion {r:?}");
    }
}

/// docs/errors.md, "Numeric bounds": "no accepted input can overflow `f32` anywhere in either
/// evaluator". Step 6 concedes that an inertialization's velocity, a difference over the
/// switch frame's `dt`, is not capped; it is reachable with a `dt` every entry point accepts
/// (1e-34 s: finite and ≥ 0). A rig inside every bound (200 joints of 1 m, scale 1) whose clip
/// moves each joint 1.7e4 m per frame switches by spring at that `dt`: each joint's velocity
/// is 1.7e38 m/s (finite, so `capture` keeps it), a frame later each offset is ~2.7e36 m, and
/// down the chain they add past `f32::MAX`; the frame job returns success with NaN matrices.
#[test]
fn inertialization_with_a_tiny_switch_step_stays_finite() {
    let joints = 200;
    let rig = chain_rig(vec![Transform::from_translation(Vec3::Y); joints]);
    let moved: Vec<Transform> = (0..joints).map(|_| Transform::from_translation(Vec3::new(1e6, 1.0, 0.0))).collect();
    let slide = Clip::from_poses("slide", joints, [rig.rest_pose().to_vec(), moved].concat(), 1.0, false).unwrap();
    let still = Clip::from_poses("still", joints, rig.rest_pose().to_vec(), 0.0, false).unwrap();
    let clips = [slide, still];
    let layers = [LayerSetup::default()];
    let mut context = EvalContext::new(1, 1, joints);
    let mut output = vec![0.0; joints * 16];
    let mut sampled = [0];
    let mut time_s = 0.0f32;
    let steps: [(f32, u32, u32); 7] = [
        // (dt, clip, flags)
        (1.0 / 60.0, 0, 0),
        (1.0 / 60.0, 0, 0),
        (1e-34, 1, LayerProgram::TRANSITIONING | LayerProgram::SWITCHED),
        (1.0 / 60.0, 1, LayerProgram::TRANSITIONING),
        (1.0 / 60.0, 1, LayerProgram::TRANSITIONING),
        (1.0 / 60.0, 1, LayerProgram::TRANSITIONING),
        (1.0 / 60.0, 1, LayerProgram::TRANSITIONING),
    ];
    for (frame, &(dt_s, clip, flags)) in steps.iter().enumerate() {
        if frame > 0 {
            time_s += dt_s;
        }
        let t = if clip == 0 { time_s } else { 0.0 };
        let samples = [ClipSample::new(clip, t, 1.0)];
        let transitioning = flags != 0;
        let programs = [LayerProgram {
            first_sample: 0,
            num_target: 1,
            num_source: 0,
            transition: if transitioning { 0 } else { u32::MAX },
            mode: if transitioning { SwitchMode::InertializeSpring as u32 } else { 0 },
            flags,
            target_weight: 1.0,
            progress: if transitioning { 0.5 } else { 1.0 },
            weight: 1.0,
            param_s: 1.0,
        }];
        let result = FrameJob {
            rig: &rig,
            clips: &clips,
            layers: &layers,
            samples: &samples,
            programs: &programs,
            dt_s,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut sampled,
            root_motion: &mut [],
        }
        .run();
        if result.is_ok() {
            assert_eq!(first_non_finite(&output), None, "frame {frame} (dt {dt_s}) returned success with non-finite matrices (joint, value)");
        }
    }
}
