//! Helpers shared by the integration tests, one copy each: build small graphs and collect
//! their validation problems, run trace scripts, wrap glTF JSON and a buffer into a GLB
//! container, base64 for data URIs, compare rendered pixels, and reproducible random numbers;
//! and in submodules, compare floats (`compare`, failing on NaN), drive crowds (`drive`), make
//! scratch folders (`files`), build the example programs the tests run (`examples`) and check
//! Rust structs and constants against a shader's layouts (`wgsl`).
//! `gpu.rs` beside them, the GPU tests' device and random rigs and programs, is included by
//! those tests alone (`#[path]`), each of which declares this module too.
//!
//! Each test file compiles this module on its own and uses a part of it.

#![allow(dead_code)]

pub mod compare;
pub mod drive;
pub mod examples;
pub mod files;
/// The locomotion graph and clip table, shared with the benches.
#[path = "../../benches/support/locomotion.rs"]
pub mod locomotion;
pub mod wgsl;

use std::path::PathBuf;

use glam::{Quat, Vec3};
use throng::Transform;
use throng::graph::{CompiledGraph, GraphError, GraphProblem};
use throng::program::LayerProgram;
use throng::trace::{TraceLine, run_script};

/// The binary of throng's example `name`, after `cargo build --example <name>` brought it up to
/// date, with the features of throng this test was built with (`capi`, `tracy`: integration
/// tests are compiled with the package's features), so that the build reuses the library the
/// test links ([`examples::example_binary_with`]).
#[track_caller]
pub fn example_binary(name: &'static str) -> PathBuf {
    let features: Vec<&str> = [("capi", cfg!(feature = "capi")), ("tracy", cfg!(feature = "tracy"))]
        .into_iter()
        .filter_map(|(feature, on)| on.then_some(feature))
        .collect();
    let features = features.join(",");
    let args: &[&str] = if features.is_empty() { &[] } else { &["--features", &features] };
    examples::example_binary_with(name, args)
}

/// A one-layer graph in PlayCanvas's runtime form.
pub fn graph(states: &str, transitions: &str, parameters: &str) -> String {
    format!(
        r#"{{ "layers": [{{ "name": "Base", "states": [{states}], "transitions": [{transitions}] }}],
             "parameters": {{ {parameters} }} }}"#
    )
}

/// Runs a script over `graph` with every clip `clip_s` long (or `clips` when given).
pub fn trace(graph: &str, clips: &str, dt: f64, frames: usize, events: &str) -> Vec<TraceLine> {
    let script = format!(
        r#"{{ "stateGraph": {graph}, "clips": {clips}, "dt": {dt}, "frames": {frames}, "events": [{events}] }}"#
    );
    match run_script(&script) {
        Ok(lines) => lines,
        Err(e) => panic!("script failed: {e}\n{script}"),
    }
}

/// Active state per frame of layer `layer` ("Base" for one-layer graphs).
pub fn actives(lines: &[TraceLine], layer: &str) -> Vec<String> {
    lines.iter().filter(|l| l.layer == layer).map(|l| l.active_state.clone()).collect()
}

/// (active state, transitioning, progress) per frame of layer "Base".
pub fn steps(lines: &[TraceLine]) -> Vec<(String, bool, f32)> {
    lines
        .iter()
        .filter(|l| l.layer == "Base")
        .map(|l| (l.active_state.clone(), l.transitioning, l.transition_progress))
        .collect()
}

/// Expected steps from a compact table.
pub fn expect(rows: &[(&str, bool, f32)]) -> Vec<(String, bool, f32)> {
    rows.iter().map(|&(s, t, p)| (s.to_owned(), t, p)).collect()
}

/// `n` copies of a row.
pub fn repeat(row: (&str, bool, f32), n: usize) -> Vec<(String, bool, f32)> {
    vec![(row.0.to_owned(), row.1, row.2); n]
}

/// Every state name `n` times.
pub fn many(state: &str, n: usize) -> Vec<String> {
    vec![state.to_owned(); n]
}

/// A bool condition.
pub fn is_true(param: &str) -> String {
    format!(r#"{{ "parameterName": "{param}", "predicate": "EQUAL_TO", "value": true }}"#)
}

/// A GLB container around `json` and `bin`.
pub fn glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let pad = |v: &[u8], with: u8| {
        let mut v = v.to_vec();
        while !v.len().is_multiple_of(4) {
            v.push(with);
        }
        v
    };
    let (json, bin) = (pad(json, b' '), pad(bin, 0));
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::with_capacity(total);
    out.extend(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(&json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(&bin);
    out
}

/// Standard base64 (RFC 4648, padded) of `bytes`, for data URIs.
pub fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// The problems validation finds in graph `json`; fails the test if it loads, or fails
/// otherwise.
#[track_caller]
pub fn graph_problems(json: &str) -> Vec<GraphProblem> {
    match CompiledGraph::from_json(json) {
        Err(GraphError::Invalid { problems }) => problems,
        other => panic!("expected validation problems, got {other:?}"),
    }
}

/// Summed RGB difference above which two pixels of a rendered picture differ (8-bit
/// channels): above what rasterisation differences between two runs make.
pub const PIXEL_CHANGED: u32 = 30;

/// Whether `a` and `b` differ by more than [`PIXEL_CHANGED`] (alpha ignored).
pub fn pixels_differ(a: &image::Rgba<u8>, b: &image::Rgba<u8>) -> bool {
    a.0.iter().zip(b.0.iter()).take(3).map(|(&x, &y)| u32::from(x.abs_diff(y))).sum::<u32>() > PIXEL_CHANGED
}

/// Deterministic pseudo-random numbers (xorshift), so that failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() as f32 / 4_294_967_296.0)
    }
    pub fn quat(&mut self) -> Quat {
        Quat::from_euler(glam::EulerRot::XYZ, self.range(-3.0, 3.0), self.range(-1.5, 1.5), self.range(-3.0, 3.0))
    }
    pub fn transform(&mut self) -> Transform {
        Transform {
            translation: Vec3::new(self.range(-0.1, 0.1), self.range(-0.1, 0.1), self.range(-0.1, 0.1)),
            rotation: self.quat(),
            scale: Vec3::new(self.range(0.8, 1.2), self.range(0.8, 1.2), self.range(0.8, 1.2)),
        }
    }
}

/// A settled layer program (no transition in flight, full weight) showing the `num_target`
/// samples from `first_sample`.
pub fn settled_program(first_sample: u32, num_target: u32) -> LayerProgram {
    LayerProgram {
        first_sample,
        num_target,
        transition: u32::MAX,
        target_weight: 1.0,
        progress: 1.0,
        weight: 1.0,
        ..LayerProgram::default()
    }
}

/// One settled layer program per character, character `c` showing sample `c` alone: the input
/// of frame tests that build programs by hand.
pub fn settled_programs(characters: usize) -> Vec<LayerProgram> {
    (0..characters as u32).map(|c| settled_program(c, 1)).collect()
}

/// `EvalCrowdJob`'s matrices (mat4) for `samples`, character `c` blending `ranges[c]`: the
/// two-clip frame on the CPU, as tests that build samples by hand run it.
pub fn cpu_two_clip_frame(
    (rig, clips): (&throng::Rig, &[throng::Clip]),
    samples: &[throng::program::ClipSample],
    ranges: &[std::ops::Range<u32>],
) -> Vec<f32> {
    let mut output = vec![0.0; ranges.len() * rig.num_joints() * 16];
    throng::eval::EvalCrowdJob {
        rig,
        clips,
        samples,
        sample_ranges: ranges,
        layout: throng::program::OutputLayout::Mat4,
        output: &mut output,
    }
    .run()
    .unwrap();
    output
}

/// `FrameJob`'s matrices (mat4) for one frame of `programs` (`layers.len()` a character) over
/// `samples`, the characters' memory in `context`: the low-level job, as tests that build
/// samples and programs by hand run it, with no crowd.
pub fn cpu_frame(
    (rig, clips, layers): (&throng::Rig, &[throng::Clip], &[throng::program::LayerSetup]),
    samples: &[throng::program::ClipSample],
    programs: &[LayerProgram],
    dt_s: f32,
    context: &mut throng::eval::frame_layers::EvalContext,
) -> Result<Vec<f32>, throng::eval::EvalError> {
    let characters = programs.len() / layers.len().max(1);
    let mut output = vec![0.0; characters * rig.num_joints() * 16];
    throng::eval::frame_layers::FrameJob {
        rig,
        clips,
        layers,
        samples,
        programs,
        dt_s,
        context,
        layout: throng::program::OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut vec![0; characters],
        root_motion: &mut [],
    }
    .run()?;
    Ok(output)
}
