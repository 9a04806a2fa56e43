//! The bad-input matrix: every malformed graph, trace script, glTF or BVH file and every misuse
//! of the API gets its documented typed error, a message that says where, and no panic; refused
//! evaluation jobs leave their output untouched, and extreme-but-valid inputs give finite output
//! on both evaluators (the GPU's where an adapter exists).
//!
//! This file is long on purpose (about 1,600 lines): it is the bad-input matrix of `docs/errors.md`,
//! one test per row, kept in one place so that a row missing a test shows.

// One character's sample range in a slice is exactly what the evaluation jobs take.
#![allow(clippy::single_range_in_vec_init)]

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

use std::fmt::{Debug, Display};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use glam::{Mat4, Quat, Vec2, Vec3};
use throng::blend_space::{BlendSpace, BlendSpaceError};
use throng::clip::ClipError;
use throng::clip::ClipEvent;
use throng::demo::DemoCharacter;
use throng::eval::frame_layers::{EvalContext, FrameJob, FrameStats};
use throng::eval::root_motion::{RootDelta, crowd_root_motion};
use throng::eval::{EvalCrowdJob, EvalError};
use throng::gpu::{FrameKernel, GpuCrowd, GpuCrowdOptions};
use throng::graph::{CompiledGraph, GraphError, ParamValue, ProblemKind};
use throng::import::bvh::{BvhError, BvhOptions, parse_bvh};
use throng::import::gltf::{GltfError, GltfOptions, load_gltf, load_gltf_from_slice};
use throng::mesh::MeshError;
use throng::program::{
    ClipSample, LayerBlend, LayerProgram, LayerSetup, LayerSpace, Mask, MaskEntry, MaskError, OutputLayout,
    ProgramError, SwitchMode,
};
use throng::runtime::CrowdRuntime;
use throng::state::{Archetype, ClipBinding, Crowd, StateError};
use throng::trace::{TraceError, run_script};
use throng::{Clip, JointTracks, MAX_JOINTS, Rig, RigError, Track, Transform};

use support::compare::GPU_TOLERANCE;
use support::files::TempDir;
use support::{encode_base64, glb, graph, settled_program};

// ---------------------------------------------------------------------------------------------
// The matrix's machinery

/// One malformed input: a name and a check that returns why it failed, if it did.
struct Row {
    name: &'static str,
    run: Box<dyn Fn() -> Result<(), String>>,
}

/// Passes when `result` is an error that `is_expected` accepts and whose message contains each
/// of `names` (the where and what a user needs to find the problem).
fn refused<T, E: Debug + Display>(
    result: Result<T, E>,
    is_expected: impl FnOnce(&E) -> bool,
    names: &[&str],
) -> Result<(), String> {
    let e = match result {
        Ok(_) => return Err("accepted".into()),
        Err(e) => e,
    };
    if !is_expected(&e) {
        return Err(format!("wrong error: {e:?}"));
    }
    let message = e.to_string();
    match names.iter().find(|n| !message.contains(**n)) {
        Some(missing) => Err(format!("message {message:?} does not name {missing:?}")),
        None => Ok(()),
    }
}

/// `row!(name, call, pattern [if guard], [words the message must contain])`.
macro_rules! row {
    ($name:expr, $call:expr, $pat:pat $(if $guard:expr)?, [$($where:expr),* $(,)?]) => {
        Row { name: $name, run: Box::new(move || refused($call, |e| matches!(e, $pat $(if $guard)?), &[$($where),*])) }
    };
}

/// The first problem of a [`GraphError::Invalid`].
fn first_problem(e: &GraphError) -> Option<&ProblemKind> {
    match e {
        GraphError::Invalid { problems } => problems.first().map(|p| &p.kind),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

fn states(names: &[&str]) -> String {
    names.iter().map(|n| format!(r#"{{ "name": "{n}" }}"#)).collect::<Vec<_>>().join(",")
}

/// START → A, A ↔ B on a float `speed`.
fn good_graph() -> String {
    graph(
        &states(&["START", "A", "B"]),
        r#"{ "from": "START", "to": "A" },
           { "from": "A", "to": "B", "time": 0.2, "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 1 }] }"#,
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }, "go": { "name": "go", "type": "BOOLEAN", "value": false }"#,
    )
}

/// A one-layer graph with START → A and one more transition from A to B.
fn with_transition(transition: &str) -> String {
    graph(
        &states(&["START", "A", "B"]),
        &format!(r#"{{ "from": "START", "to": "A" }}, {transition}"#),
        r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }, "go": { "name": "go", "type": "BOOLEAN", "value": false }"#,
    )
}

/// A graph with `n` layers of START → A.
fn layers(n: usize) -> String {
    let layer = |i: usize| {
        format!(
            r#"{{ "name": "L{i}", "states": [{}], "transitions": [{{ "from": "START", "to": "A" }}] }}"#,
            states(&["START", "A"])
        )
    };
    format!(r#"{{ "layers": [{}], "parameters": {{}} }}"#, (0..n).map(layer).collect::<Vec<_>>().join(","))
}

/// A graph whose state `A` is sub-machines nested `depth` deep.
fn nested(depth: usize) -> String {
    let mut inner = r#"{ "name": "Leaf" }"#.to_owned();
    for d in 0..depth {
        inner = format!(
            r#"{{ "name": "M{d}", "states": [{{ "name": "START" }}, {inner}], "transitions": [{{ "from": "START", "to": "{}" }}] }}"#,
            if d == 0 { "Leaf".to_owned() } else { format!("M{}", d - 1) }
        );
    }
    let top = format!("M{}", depth - 1);
    graph(&format!(r#"{{ "name": "START" }}, {inner}"#), &format!(r#"{{ "from": "START", "to": "{top}" }}"#), "")
}

fn script(graph: &str, rest: &str) -> String {
    format!(r#"{{ "stateGraph": {graph}, "clips": {{ "*": 1.0 }}, {rest} }}"#)
}

/// A two-joint BVH file, 20 lines: frames on lines 19 and 20.
const BVH: &str = "HIERARCHY
ROOT hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT spine
  {
    OFFSET 0 1 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 1 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.033333
0 0 0 0 0 0 0 0 0
0 1 0 0 0 0 10 0 0
";

/// `BVH` with line `line` (from 1) replaced.
fn bvh_with(line: usize, text: &str) -> String {
    BVH.lines().enumerate().map(|(i, l)| if i + 1 == line { text } else { l }).collect::<Vec<_>>().join("\n") + "\n"
}

/// A BVH chain of `n` joints.
fn bvh_chain(n: usize) -> String {
    let mut s = String::from("HIERARCHY\n");
    for i in 0..n {
        s += &format!(
            "{} j{i}\n{{\nOFFSET 0 1 0\nCHANNELS 3 Zrotation Xrotation Yrotation\n",
            if i == 0 { "ROOT" } else { "JOINT" }
        );
    }
    s += &"}\n".repeat(n);
    s += &format!("MOTION\nFrames: 1\nFrame Time: 0.1\n{}\n", vec!["0"; 3 * n].join(" "));
    s
}

/// A skin of two joints whose inverse bind matrices are `ibm` (16 floats each), as glTF JSON
/// whose one buffer is `uri` holding `byte_length` bytes.
fn gltf_doc(uri: &str, byte_length: usize, skins: &str) -> String {
    format!(
        r#"{{ "asset": {{ "version": "2.0" }},
             "scene": 0, "scenes": [{{ "nodes": [0] }}],
             "nodes": [{{ "name": "hips", "children": [1] }}, {{ "name": "spine", "translation": [0, 1, 0] }}],
             "buffers": [{{ "uri": "{uri}", "byteLength": {byte_length} }}],
             "bufferViews": [{{ "buffer": 0, "byteOffset": 0, "byteLength": 128 }}],
             "accessors": [{{ "bufferView": 0, "componentType": 5126, "count": 2, "type": "MAT4" }}],
             "skins": [{skins}] }}"#
    )
}

const SKIN: &str = r#"{ "joints": [0, 1], "inverseBindMatrices": 0 }"#;

fn ibm_bytes(values: [f32; 16]) -> Vec<u8> {
    [values, values].iter().flatten().flat_map(|v| v.to_le_bytes()).collect()
}

fn identity_ibm() -> Vec<u8> {
    ibm_bytes(Mat4::IDENTITY.to_cols_array())
}

fn data_uri(bytes: &[u8]) -> String {
    format!("data:application/octet-stream;base64,{}", encode_base64(bytes))
}

fn glb_doc() -> Vec<u8> {
    let json = gltf_doc("", 128, SKIN).replace(r#""uri": "", "#, "");
    glb(json.as_bytes(), &identity_ibm())
}

fn gltf(bytes: &[u8]) -> Result<throng::import::gltf::GltfAsset, GltfError> {
    load_gltf_from_slice(bytes, None, &GltfOptions::default())
}

/// `<dir>/skin.gltf` over an external `skin.bin` of `bin` bytes (none when `None`), loaded.
fn gltf_on_disk(tag: &str, bin: Option<&[u8]>) -> Result<throng::import::gltf::GltfAsset, GltfError> {
    let dir = TempDir::new(&format!("bad-input-{tag}"));
    std::fs::write(dir.join("skin.gltf"), gltf_doc("skin.bin", 128, SKIN)).unwrap();
    if let Some(bin) = bin {
        std::fs::write(dir.join("skin.bin"), bin).unwrap();
    }
    load_gltf(&dir.join("skin.gltf"), &GltfOptions::default())
}

/// A three-joint chain and two clips for it: `bend` (1 s, looping) and `still` (one frame).
fn tiny() -> (Rig, Vec<Clip>) {
    let rest = vec![Transform::IDENTITY, Transform::from_translation(Vec3::Y), Transform::from_translation(Vec3::Y)];
    let rig =
        Rig::new(vec!["a".into(), "b".into(), "c".into()], vec![None, Some(0), Some(1)], rest.clone(), None).unwrap();
    let mut bent = rest.clone();
    bent[1].rotation = Quat::from_rotation_z(0.5);
    bent[2].rotation = Quat::from_rotation_x(-0.5);
    let poses = [rest.clone(), bent, rest.clone()].concat();
    let bend = Clip::from_poses("bend", 3, poses, 1.0, true).unwrap();
    let still = Clip::from_poses("still", 3, rest, 0.0, false).unwrap();
    (rig, vec![bend, still])
}

/// A static two-joint clip whose second joint turns by `rotation` (which `Clip::from_poses`
/// normalises, or refuses).
fn clip_turning_joint_1(name: &str, rotation: Quat) -> Result<Clip, ClipError> {
    let poses = vec![Transform::IDENTITY, Transform::from_translation_rotation(Vec3::Y, rotation)];
    Clip::from_poses(name, 2, poses, 0.0, true)
}

/// A refused evaluation: the error, and whether the output was left exactly as it was.
#[derive(Debug)]
struct Refusal {
    error: EvalError,
    output_untouched: bool,
}

impl Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Display::fmt(&self.error, f)
    }
}

const SENTINEL: f32 = 7.25;

/// Runs an [`EvalCrowdJob`] on [`tiny`] into an output of `output_len` floats (one character's
/// worth per range when `None`), pre-filled with [`SENTINEL`].
fn crowd_job(
    clips: &[Clip],
    samples: &[ClipSample],
    ranges: &[std::ops::Range<u32>],
    output_len: Option<usize>,
) -> Result<(), Refusal> {
    let (rig, _) = tiny();
    let mut output = vec![SENTINEL; output_len.unwrap_or(ranges.len() * 3 * 16)];
    let job = EvalCrowdJob {
        rig: &rig,
        clips,
        samples,
        sample_ranges: ranges,
        layout: OutputLayout::Mat4,
        output: &mut output,
    };
    job.run()
        .map_err(|error| Refusal { error, output_untouched: output.iter().all(|v| v.to_bits() == SENTINEL.to_bits()) })
}

/// Runs a [`FrameJob`] on [`tiny`] for `characters` characters (context and counters sized
/// for `context_characters`), output pre-filled with [`SENTINEL`].
fn frame_job(
    clips: &[Clip],
    layers: &[LayerSetup],
    samples: &[ClipSample],
    programs: &[LayerProgram],
    dt_s: f32,
    context_characters: usize,
) -> Result<FrameStats, Refusal> {
    let (rig, _) = tiny();
    let characters = programs.len() / layers.len().max(1);
    let mut context = EvalContext::new(context_characters, layers.len(), 3);
    let mut output = vec![SENTINEL; characters * 3 * 16];
    let mut sampled = vec![0; characters];
    // The low-level job: the tests are about what the job refuses, inputs a crowd never makes.
    let job = FrameJob {
        rig: &rig,
        clips,
        layers,
        samples,
        programs,
        dt_s,
        context: &mut context,
        layout: OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut sampled,
        root_motion: &mut [],
    };
    job.run()
        .map_err(|error| Refusal { error, output_untouched: output.iter().all(|v| v.to_bits() == SENTINEL.to_bits()) })
}

/// A crowd of one archetype over [`good_graph`] with `n` characters.
fn crowd(n: usize) -> (Crowd, throng::state::ArchetypeId, Vec<throng::state::CharacterHandle>) {
    let g = Arc::new(CompiledGraph::from_json(&good_graph()).unwrap());
    let arch = Archetype::new(g, |_| Some(ClipBinding { clip: 0, duration_s: 1.0 })).unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let handles = (0..n).map(|_| crowd.spawn(kind).unwrap()).collect();
    (crowd, kind, handles)
}

// ---------------------------------------------------------------------------------------------
// The rows

fn graph_rows() -> Vec<Row> {
    let cond = |param: &str, predicate: &str, value: &str| {
        format!(r#"{{ "parameterName": "{param}", "predicate": "{predicate}", "value": {value} }}"#)
    };
    vec![
        row!(
            "graph: truncated JSON",
            CompiledGraph::from_json(r#"{ "layers": ["#),
            GraphError::Json { line: 1, .. },
            ["line 1"]
        ),
        row!(
            "graph: syntax error on line 3",
            CompiledGraph::from_json("{\n  \"layers\": [],\n  \"parameters\": { ,}\n}"),
            GraphError::Json { line: 3, .. },
            ["line 3", "column"]
        ),
        row!(
            "graph: layers is a string",
            CompiledGraph::from_json(r#"{ "layers": "Base" }"#),
            GraphError::Shape { .. },
            ["layers"]
        ),
        row!(
            "graph: a transition's `time` is a string",
            CompiledGraph::from_json(&with_transition(r#"{ "from": "A", "to": "B", "time": "fast" }"#)),
            GraphError::Shape { .. },
            ["layers[0].transitions[1]"]
        ),
        row!(
            "graph: no layers",
            CompiledGraph::from_json(r#"{ "layers": [], "parameters": {} }"#),
            e if matches!(first_problem(e), Some(ProblemKind::NoLayers)),
            ["no layers"]
        ),
        row!(
            "graph: transition to an unknown state",
            CompiledGraph::from_json(&with_transition(r#"{ "from": "A", "to": "Nowhere" }"#)),
            e if matches!(first_problem(e), Some(ProblemKind::UnknownState { .. })),
            ["layer \"Base\"", "transition 1", "Nowhere"]
        ),
        row!(
            "graph: condition on an unknown parameter",
            CompiledGraph::from_json(&with_transition(&format!(r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#, cond("sped", "GREATER_THAN", "1")))),
            e if matches!(first_problem(e), Some(ProblemKind::UnknownParameter { .. })),
            ["transition 1", "condition 0", "sped"]
        ),
        row!(
            "graph: a boolean ordered with GREATER_THAN",
            CompiledGraph::from_json(&with_transition(&format!(r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#, cond("go", "GREATER_THAN", "true")))),
            e if matches!(first_problem(e), Some(ProblemKind::ConditionType { .. })),
            ["transition 1", "condition 0", "go"]
        ),
        row!(
            "graph: negative duration",
            CompiledGraph::from_json(&with_transition(r#"{ "from": "A", "to": "B", "time": -0.5 }"#)),
            e if matches!(first_problem(e), Some(ProblemKind::BadDuration { .. })),
            ["transition 1", "-0.5"]
        ),
        row!(
            "graph: transitionOffset 2",
            CompiledGraph::from_json(&with_transition(r#"{ "from": "A", "to": "B", "transitionOffset": 2 }"#)),
            e if matches!(first_problem(e), Some(ProblemKind::BadOffset { .. })),
            ["transition 1"]
        ),
        row!(
            "graph: a transition to ANY",
            CompiledGraph::from_json(&graph(&states(&["START", "A", "ANY"]), r#"{ "from": "START", "to": "A" }, { "from": "A", "to": "ANY" }"#, "")),
            e if matches!(first_problem(e), Some(ProblemKind::TransitionToAny)),
            ["transition 1"]
        ),
        row!(
            "graph: two states named A",
            CompiledGraph::from_json(&graph(&states(&["START", "A", "A"]), r#"{ "from": "START", "to": "A" }"#, "")),
            e if matches!(first_problem(e), Some(ProblemKind::DuplicateName { .. })),
            ["layer \"Base\"", "\"A\""]
        ),
        row!(
            "graph: a cycle of zero-time unconditional transitions",
            CompiledGraph::from_json(&graph(
                &states(&["START", "A", "B"]),
                r#"{ "from": "START", "to": "A" }, { "from": "A", "to": "B" }, { "from": "B", "to": "A" }"#,
                ""
            )),
            GraphError::Invalid { problems } if problems.iter().any(|p| matches!(p.kind, ProblemKind::ZeroDurationCycle { .. })),
            ["layer \"Base\"", "cycle"]
        ),
        row!(
            "graph: a state speed too large to be finite",
            CompiledGraph::from_json(&graph(r#"{ "name": "START" }, { "name": "A", "speed": 1e39 }"#, r#"{ "from": "START", "to": "A" }"#, "")),
            e if matches!(first_problem(e), Some(ProblemKind::BadSpeed { .. })),
            ["state \"A\""]
        ),
        row!(
            "graph: the entry can hover",
            CompiledGraph::from_json(&graph(
                &states(&["START", "A"]),
                &format!(r#"{{ "from": "START", "to": "A", "conditions": [{}] }}"#, cond("go", "EQUAL_TO", "true")),
                r#""go": { "name": "go", "type": "BOOLEAN", "value": false }"#
            )),
            e if matches!(first_problem(e), Some(ProblemKind::NoAlwaysTakableEntry)),
            ["layer \"Base\"", "START"]
        ),
        row!(
            "graph: a blend tree driven by a boolean",
            CompiledGraph::from_json(&graph(
                r#"{ "name": "START" }, { "name": "Move", "blendTree": { "type": "1D", "parameter": "go",
                   "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] } }"#,
                r#"{ "from": "START", "to": "Move" }"#,
                r#""go": { "name": "go", "type": "BOOLEAN", "value": false }"#
            )),
            e if matches!(first_problem(e), Some(ProblemKind::BlendParameterType { .. })),
            ["state \"Move\"", "BOOLEAN"]
        ),
        row!(
            "graph: blend children at one point",
            CompiledGraph::from_json(&graph(
                r#"{ "name": "START" }, { "name": "Move", "blendTree": { "type": "1D", "parameter": "speed",
                   "children": [{ "name": "Walk", "point": 1 }, { "name": "Run", "point": 1 }] } }"#,
                r#"{ "from": "START", "to": "Move" }"#,
                r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }"#
            )),
            e if matches!(first_problem(e), Some(ProblemKind::BlendTree { .. })),
            ["Move"]
        ),
        row!(
            "graph: layer weight 2",
            CompiledGraph::from_json(&layers(1).replace(r#""name": "L0""#, r#""name": "L0", "weight": 2"#)),
            e if matches!(first_problem(e), Some(ProblemKind::BadLayerWeight { .. })),
            ["layer \"L0\"", "2"]
        ),
        row!(
            "graph: mask weight 1.5",
            CompiledGraph::from_json(&layers(1).replace(r#""name": "L0""#, r#""name": "L0", "mask": { "spine": 1.5 }"#)),
            e if matches!(first_problem(e), Some(ProblemKind::BadMaskWeight { .. })),
            ["layer \"L0\"", "spine"]
        ),
        row!(
            "graph: more layers than MAX_LAYERS",
            CompiledGraph::from_json(&layers(throng::graph::MAX_LAYERS + 1)),
            GraphError::Invalid { problems } if problems.iter().any(|p| matches!(p.kind, ProblemKind::TooMany { .. })),
            ["17", "16"]
        ),
        row!(
            "graph: more triggers than MAX_TRIGGERS",
            CompiledGraph::from_json(&graph(
                &states(&["START", "A"]),
                r#"{ "from": "START", "to": "A" }"#,
                &(0..throng::graph::MAX_TRIGGERS + 1)
                    .map(|i| format!(r#""t{i}": {{ "name": "t{i}", "type": "TRIGGER", "value": false }}"#))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            GraphError::Invalid { problems } if problems.iter().any(|p| matches!(p.kind, ProblemKind::TooMany { .. })),
            ["65", "64"]
        ),
        row!(
            "graph: more conditions than MAX_CONDITIONS on one transition",
            CompiledGraph::from_json(&with_transition(&format!(
                r#"{{ "from": "A", "to": "B", "conditions": [{}] }}"#,
                vec![cond("speed", "GREATER_THAN", "1"); throng::graph::MAX_CONDITIONS + 1].join(",")
            ))),
            GraphError::Invalid { problems } if problems.iter().any(|p| matches!(p.kind, ProblemKind::TooMany { .. })),
            ["transition 1", "33"]
        ),
        row!(
            "graph: sub-machines nested deeper than MAX_MACHINE_DEPTH",
            CompiledGraph::from_json(&nested(throng::graph::MAX_MACHINE_DEPTH + 2)),
            GraphError::Invalid { problems } if problems.iter().any(|p| matches!(p.kind, ProblemKind::TooDeep)),
            ["layer \"Base\"", "nest deeper"]
        ),
        row!(
            "graph (editor form): a transition to a missing state id",
            CompiledGraph::from_json(
                r#"{ "layers": { "0": { "name": "Base", "states": [0, 1], "transitions": [0] } },
                     "states": { "0": { "name": "START" }, "1": { "name": "Idle" } },
                     "transitions": { "0": { "from": 0, "to": 7 } }, "parameters": {} }"#
            ),
            GraphError::Shape { .. },
            ["transitions", "7"]
        ),
        row!(
            "graph (editor form): a layer lists a missing transition id",
            CompiledGraph::from_json(
                r#"{ "layers": { "0": { "name": "Base", "states": [0, 1], "transitions": [0, 3] } },
                     "states": { "0": { "name": "START" }, "1": { "name": "Idle" } },
                     "transitions": { "0": { "from": 0, "to": 1 } }, "parameters": {} }"#
            ),
            GraphError::Shape { .. },
            ["layers", "3"]
        ),
        row!(
            "graph (editor form): a layer lists one state id twice",
            CompiledGraph::from_json(
                r#"{ "layers": { "0": { "name": "Base", "states": [0, 1, 1], "transitions": [0] } },
                     "states": { "0": { "name": "START" }, "1": { "name": "Idle" } },
                     "transitions": { "0": { "from": 0, "to": 1 } }, "parameters": {} }"#
            ),
            GraphError::Shape { path, .. } if path == "layers.0.states[2]",
            ["state id 1", "layers.0.states[1]", "once"]
        ),
        row!(
            "graph (editor form): two layers list one state id",
            CompiledGraph::from_json(
                r#"{ "layers": { "0": { "name": "Base", "states": [0, 1], "transitions": [0] },
                                 "1": { "name": "Top", "states": [2, 1], "transitions": [1] } },
                     "states": { "0": { "name": "START" }, "1": { "name": "Idle" }, "2": { "name": "START" } },
                     "transitions": { "0": { "from": 0, "to": 1 }, "1": { "from": 2, "to": 1 } }, "parameters": {} }"#
            ),
            GraphError::Shape { path, .. } if path == "layers.1.states[1]",
            ["state id 1", "layers.0.states[1]"]
        ),
        row!(
            "graph (editor form): a layer lists one transition id twice",
            CompiledGraph::from_json(
                r#"{ "layers": { "0": { "name": "Base", "states": [0, 1], "transitions": [0, "0"] } },
                     "states": { "0": { "name": "START" }, "1": { "name": "Idle" } },
                     "transitions": { "0": { "from": 0, "to": 1 } }, "parameters": {} }"#
            ),
            GraphError::Shape { path, .. } if path == "layers.0.transitions[1]",
            ["transition id 0", "layers.0.transitions[0]"]
        ),
        row!(
            "graph (editor form): transitions copy one long state name past the input's size times the depth limit",
            {
                let name = "n".repeat(100_000);
                let ids: Vec<String> = (0..200).map(|i| i.to_string()).collect();
                let transitions: Vec<String> =
                    (0..200).map(|i| format!(r#""{i}": {{ "from": 0, "to": 1 }}"#)).collect();
                CompiledGraph::from_json(&format!(
                    r#"{{ "layers": {{ "0": {{ "name": "Base", "states": [0, 1], "transitions": [{}] }} }},
                         "states": {{ "0": {{ "name": "START" }}, "1": {{ "name": "{name}" }} }},
                         "transitions": {{ {} }}, "parameters": {{}} }}"#,
                    ids.join(","),
                    transitions.join(",")
                ))
            },
            GraphError::Shape { .. },
            ["transitions.", ".to", "state names"]
        ),
        row!(
            "graph: a state named Move.Walk beside blend state Move's child Walk",
            CompiledGraph::from_json(&graph(
                r#"{ "name": "START" }, { "name": "Move.Walk" }, { "name": "Move", "blendTree": { "type": "1D",
                   "parameter": "speed", "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] } }"#,
                r#"{ "from": "START", "to": "Move" }"#,
                r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }"#
            )),
            e if matches!(first_problem(e), Some(ProblemKind::AmbiguousPath { .. })),
            ["layer \"Base\"", "\"Move.Walk\"", "blend child \"Walk\" of \"Move\""]
        ),
        row!(
            "graph: a state with both a blend tree and a sub-machine",
            CompiledGraph::from_json(&graph(
                r#"{ "name": "START" }, { "name": "Move", "blendTree": { "type": "1D", "parameter": "speed",
                   "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] },
                   "states": [{ "name": "START" }, { "name": "Aim" }], "transitions": [{ "from": "START", "to": "Aim" }] }"#,
                r#"{ "from": "START", "to": "Move" }"#,
                r#""speed": { "name": "speed", "type": "FLOAT", "value": 0 }"#
            )),
            e if matches!(first_problem(e), Some(ProblemKind::TreeAndMachine)),
            ["state \"Move\"", "blendTree"]
        ),
        row!(
            "graph (value built in code): arrays nested past MAX_JSON_DEPTH",
            throng::graph::format::GraphDesc::from_value(&serde_json::Value::Object(serde_json::Map::from_iter([
                ("layers".to_owned(), serde_json::Value::Array(Vec::new())),
                ("mask".to_owned(), (0..200).fold(serde_json::Value::Null, |v, _| serde_json::Value::Array(vec![v]))),
            ]))),
            GraphError::TooDeep { limit: throng::graph::MAX_JSON_DEPTH, .. },
            ["mask[0][0]", "128"]
        ),
    ]
}

fn trace_rows() -> Vec<Row> {
    let g = good_graph();
    let g2 = g.clone();
    let g3 = g.clone();
    let g4 = g.clone();
    let g5 = g.clone();
    let g6 = g.clone();
    let g7 = g.clone();
    let g8 = g.clone();
    vec![
        row!("trace: not JSON", run_script("{ \"stateGraph\": \n nope"), TraceError::Script { .. }, ["line 2"]),
        row!(
            "trace: no stateGraph",
            run_script(r#"{ "dt": 0.1, "frames": 2 }"#),
            TraceError::Script { .. },
            ["stateGraph"]
        ),
        row!(
            "trace: the graph does not load",
            run_script(&script(&with_transition(r#"{ "from": "A", "to": "Nowhere" }"#), r#""dt": 0.1, "frames": 2"#)),
            TraceError::Graph(GraphError::Invalid { .. }),
            ["stateGraph", "transition 1"]
        ),
        row!(
            "trace: an unknown event key",
            run_script(&script(&g, r#""dt": 0.1, "frames": 2, "events": [{ "frame": 0, "jump": true }]"#)),
            TraceError::Script { .. },
            ["events[0].jump"]
        ),
        row!(
            "trace: setting an unknown parameter",
            run_script(&script(&g2, r#""dt": 0.1, "frames": 2, "events": [{ "frame": 1, "set": { "sped": 1 } }]"#)),
            TraceError::State { source: StateError::UnknownParameter(_), .. },
            ["events[0].set.sped"]
        ),
        row!(
            "trace: a string for a FLOAT parameter",
            run_script(&script(
                &g3,
                r#""dt": 0.1, "frames": 2, "events": [{ "frame": 0, "set": { "speed": "fast" } }]"#
            )),
            TraceError::Script { .. },
            ["events[0].set.speed", "FLOAT"]
        ),
        row!(
            "trace: a string among the dts",
            run_script(&script(&g4, r#""dts": [0.1, "x"]"#)),
            TraceError::Script { .. },
            ["dts[1]"]
        ),
        row!(
            "trace: a negative step",
            run_script(&script(&g5, r#""dts": [0.1, -0.1]"#)),
            TraceError::State { source: StateError::BadDt(_), .. },
            ["dts[1]"]
        ),
        row!(
            "trace: a zero clip duration",
            run_script(&format!(r#"{{ "stateGraph": {g6}, "clips": {{ "*": 0 }}, "dt": 0.1, "frames": 2 }}"#)),
            TraceError::Script { .. },
            ["clips.*", "> 0"]
        ),
        row!(
            "trace: a clip for a state the graph lacks",
            run_script(&format!(r#"{{ "stateGraph": {g7}, "clips": {{ "Nope": 1 }}, "dt": 0.1, "frames": 2 }}"#)),
            TraceError::Script { .. },
            ["clips.Nope"]
        ),
        row!(
            "trace: more frames than a trace may hold",
            run_script(&script(&g8, r#""dt": 0.1, "frames": 1000000000000"#)),
            TraceError::Script { .. },
            ["frames", "1000000000000"]
        ),
    ]
}

fn gltf_rows() -> Vec<Row> {
    vec![
        row!("glTF: no bytes", gltf(b""), GltfError::Parse { .. }, ["glTF"]),
        row!("glTF: a GLB cut inside its header", gltf(&glb_doc()[..10]), GltfError::Glb { .. }, ["GLB"]),
        row!(
            "glTF: a GLB cut inside its BIN chunk",
            {
                let whole = glb_doc();
                gltf(&whole[..whole.len() - 40])
            },
            GltfError::Glb { .. },
            ["GLB"]
        ),
        row!(
            "glTF: a GLB whose second buffer also has no URI",
            gltf(&glb(br#"{ "asset": { "version": "2.0" }, "buffers": [{ "byteLength": 128 }, { "byteLength": 4 }] }"#, &identity_ibm())),
            GltfError::BinBufferNotFirst { buffer: 1 },
            ["buffer 1", "buffer 0"]
        ),
        row!(
            "glTF: buffers declaring more than MAX_FILE_BYTES in all",
            gltf(
                r#"{ "asset": { "version": "2.0" },
                     "buffers": [{ "uri": "a.bin", "byteLength": 1073741824 }, { "uri": "a.bin", "byteLength": 1073741824 }] }"#
                    .as_bytes()
            ),
            GltfError::BuffersTooLarge { bytes: 2147483648, .. },
            ["2147483648", "1073741824"]
        ),
        row!(
            "glTF: a data URI that is not base64",
            gltf(gltf_doc("data:application/octet-stream;base64,AAAA*AAA", 128, SKIN).as_bytes()),
            GltfError::Base64 { buffer: 0, position: 4 },
            ["buffer 0", "character 4"]
        ),
        row!(
            "glTF: a data URI shorter than byteLength",
            gltf(gltf_doc(&data_uri(&identity_ibm()[..64]), 128, SKIN).as_bytes()),
            GltfError::TruncatedBuffer { buffer: 0, .. },
            ["buffer 0", "128", "64"]
        ),
        row!(
            "glTF: an external buffer without a base folder",
            gltf(gltf_doc("skin.bin", 128, SKIN).as_bytes()),
            GltfError::UnsupportedUri { buffer: 0, .. },
            ["buffer 0", "skin.bin"]
        ),
        row!(
            "glTF: a truncated .bin on disk",
            gltf_on_disk("truncated", Some(&identity_ibm()[..100])),
            GltfError::TruncatedBuffer { buffer: 0, .. },
            ["buffer 0", "128", "100"]
        ),
        row!("glTF: a missing .bin on disk", gltf_on_disk("missing", None), GltfError::Io { .. }, ["skin.bin"]),
        row!(
            "glTF: an absolute buffer URI",
            gltf(gltf_doc("/etc/passwd", 128, SKIN).as_bytes()),
            GltfError::UriOutsideRoot { buffer: 0, .. },
            ["buffer 0", "/etc/passwd", "outside"]
        ),
        row!(
            "glTF: skin 3 of 1",
            load_gltf_from_slice(
                gltf_doc(&data_uri(&identity_ibm()), 128, SKIN).as_bytes(),
                None,
                &GltfOptions { skin: 3, ..GltfOptions::default() }
            ),
            GltfError::SkinNotFound { skin: 3, num_skins: 1 },
            ["skin 3", "1 skins"]
        ),
        row!(
            "glTF: NaN inverse bind matrices",
            gltf(gltf_doc(&data_uri(&ibm_bytes([f32::NAN; 16])), 128, SKIN).as_bytes()),
            GltfError::Rig { skin: 0, source: RigError::NonFinite { .. } },
            ["skin 0", "hips", "inverse bind"]
        ),
        row!(
            "glTF: no inverse bind matrices and a joint scaled to zero",
            gltf(
                r#"{ "asset": { "version": "2.0" }, "scene": 0, "scenes": [{ "nodes": [0] }],
                    "nodes": [{ "name": "hips", "children": [1] }, { "name": "hat", "translation": [0, 1, 0], "scale": [0, 0, 0] }],
                    "skins": [{ "joints": [0, 1] }] }"#
                    .as_bytes()
            ),
            GltfError::Rig { skin: 0, source: RigError::SingularRest { joint: 1, .. } },
            ["skin 0", "\"hat\"", "inverse bind"]
        ),
        row!(
            "glTF: a joint listed twice",
            gltf(gltf_doc(&data_uri(&identity_ibm()), 128, r#"{ "joints": [1, 1], "inverseBindMatrices": 0 }"#).as_bytes()),
            GltfError::Hierarchy { node: 1, .. },
            ["node 1"]
        ),
    ]
}

fn bvh_rows() -> Vec<Row> {
    let parse = |text: &str| parse_bvh(text, &BvhOptions::default());
    vec![
        row!(
            "BVH: cut inside the hierarchy",
            parse(&BVH[..BVH.find("JOINT").unwrap()]),
            BvhError::UnexpectedEof { line: 5, .. },
            ["line 5"]
        ),
        row!(
            "BVH: cut inside the motion",
            parse(&BVH[..BVH.len() - 8]),
            BvhError::FrameValues { frame: 1, line: 20, .. },
            ["line 20", "frame 1"]
        ),
        row!(
            "BVH: an unknown channel",
            parse(&bvh_with(9, "    CHANNELS 3 Zrotation Xrotation Wrotation")),
            BvhError::UnknownChannel { line: 9, .. },
            ["line 9", "spine", "Wrotation"]
        ),
        row!(
            "BVH: CHANNELS 7",
            parse(&bvh_with(9, "    CHANNELS 7 Zrotation Xrotation Yrotation")),
            BvhError::ChannelCount { line: 9, .. },
            ["line 9", "spine"]
        ),
        row!("BVH: Frames: 0", parse(&bvh_with(17, "Frames: 0")), BvhError::NoFrames { line: 17 }, ["line 17"]),
        row!(
            "BVH: a trillion frames",
            parse(&bvh_with(17, "Frames: 1000000000000")),
            BvhError::TooManyFrames { line: 17, .. },
            ["line 17", "1000000000000"]
        ),
        row!(
            "BVH: Frame Time: 0",
            parse(&bvh_with(18, "Frame Time: 0")),
            BvhError::BadFrameTime { line: 18, .. },
            ["line 18"]
        ),
        row!(
            "BVH: a NaN channel value",
            parse(&bvh_with(20, "0 1 0 0 0 0 NaN 0 0")),
            BvhError::BadNumber { line: 20, .. },
            ["line 20", "NaN"]
        ),
        row!(
            "BVH: rest positions that overflow f32 down a chain",
            parse(
                &bvh_with(4, "  OFFSET 0 3e38 0")
                    .replace("    OFFSET 0 1 0\n    CHANNELS", "    OFFSET 0 3e38 0\n    CHANNELS")
            ),
            BvhError::RestOutOfRange { line: 8, .. },
            ["line 8", "spine"]
        ),
        row!(
            "BVH: a frame with one value too many",
            parse(&bvh_with(19, "0 0 0 0 0 0 0 0 0 0")),
            BvhError::FrameValues { .. } | BvhError::FrameCount { .. },
            ["line"]
        ),
        row!(
            "BVH: zero unit scale",
            parse_bvh(BVH, &BvhOptions { unit_scale: 0.0, ..BvhOptions::default() }),
            BvhError::InvalidUnitScale { .. },
            ["unit scale 0"]
        ),
        row!(
            "BVH: more joints than MAX_JOINTS",
            parse(&bvh_chain(MAX_JOINTS + 1)),
            BvhError::Rig { source: RigError::TooManyJoints { .. }, .. },
            ["line", "257 joints"]
        ),
    ]
}

fn api_rows() -> Vec<Row> {
    let nan_rest = |j: usize| {
        let mut rest = vec![Transform::IDENTITY; 3];
        rest[j].translation.y = f32::NAN;
        rest
    };
    vec![
        row!("rig: no joints", Rig::new(vec![], vec![], vec![], None), RigError::Empty, ["no joints"]),
        row!(
            "rig: more joints than MAX_JOINTS",
            {
                let n = MAX_JOINTS + 1;
                Rig::new(
                    (0..n).map(|i| format!("j{i}")).collect(),
                    (0..n).map(|i| i.checked_sub(1)).collect(),
                    vec![Transform::IDENTITY; n],
                    None,
                )
            },
            RigError::TooManyJoints { num_joints: 257 },
            ["257"]
        ),
        row!(
            "rig: a parent after its child",
            Rig::new(vec!["a".into(), "b".into()], vec![Some(1), None], vec![Transform::IDENTITY; 2], None),
            RigError::ParentNotBefore { joint: 0, .. },
            ["joint 0", "\"a\""]
        ),
        row!(
            "rig: a NaN rest transform",
            Rig::new(vec!["a".into(), "b".into(), "c".into()], vec![None, Some(0), Some(1)], nan_rest(2), None),
            RigError::NonFinite { joint: 2, .. },
            ["joint 2", "\"c\""]
        ),
        row!(
            "rig: a rest joint scaled to zero, inverse binds derived",
            {
                let mut rest = vec![Transform::from_translation(Vec3::Y); 3];
                rest[1].scale = Vec3::ZERO;
                Rig::new(vec!["a".into(), "b".into(), "c".into()], vec![None, Some(0), Some(1)], rest, None)
            },
            RigError::SingularRest { joint: 1, .. },
            ["joint 1", "\"b\"", "inverse bind"]
        ),
        row!(
            "clip: a zero quaternion",
            clip_turning_joint_1("nowhere", Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            ClipError::BadFrame { frame: 0, .. },
            ["\"nowhere\"", "joint 1", "rotation"]
        ),
        row!(
            "clip: a quaternion whose squared length overflows",
            clip_turning_joint_1("vast", Quat::from_xyzw(2e19, 0.0, 0.0, 1.0)),
            ClipError::BadFrame { frame: 0, .. },
            ["\"vast\"", "joint 1", "rotation"]
        ),
        row!(
            "clip: no frames",
            Clip::from_poses("empty", 3, vec![], 0.0, true),
            ClipError::BadFrame { .. },
            ["\"empty\""]
        ),
        row!(
            "clip: two frames in zero seconds",
            Clip::from_poses("flash", 1, vec![Transform::IDENTITY; 2], 0.0, true),
            ClipError::BadFrame { .. },
            ["\"flash\"", "duration 0"]
        ),
        row!(
            "clip: a NaN key",
            {
                let (rig, _) = tiny();
                let nan = JointTracks {
                    rotation: Some(Track::linear(
                        vec![0.0, 1.0],
                        vec![Quat::IDENTITY, Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)],
                    )),
                    ..JointTracks::default()
                };
                Clip::from_tracks("nan", &rig, &[JointTracks::default(), nan, JointTracks::default()], 30.0, true)
            },
            ClipError::NonFinite { joint: 1, key: 1, .. },
            ["joint 1", "rotation", "key 1"]
        ),
        row!(
            "mask: a joint the rig lacks",
            Mask::from_entries(
                &tiny().0,
                &[
                    MaskEntry { joint: "a".into(), weight: 1.0, descendants: false },
                    MaskEntry { joint: "tail".into(), weight: 1.0, descendants: false }
                ]
            ),
            MaskError::UnknownJoint { entry: 1, .. },
            ["entry 1", "\"tail\""]
        ),
        row!(
            "mask: a NaN weight",
            Mask::from_entries(&tiny().0, &[MaskEntry { joint: "b".into(), weight: f32::NAN, descendants: true }]),
            MaskError::BadWeight { entry: 0, .. },
            ["entry 0", "\"b\""]
        ),
        row!(
            "blend space: one child",
            BlendSpace::one_d(vec![1.0]),
            BlendSpaceError::TooFewChildren { got: 1, .. },
            ["got 1"]
        ),
        row!(
            "blend space: a NaN point",
            BlendSpace::freeform(vec![Vec2::ZERO, Vec2::X, Vec2::new(f32::NAN, 1.0)]),
            BlendSpaceError::NonFinitePoint { child: 2, .. },
            ["child 2"]
        ),
        row!(
            "archetype: a zero clip duration",
            Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| Some(ClipBinding {
                clip: 0,
                duration_s: 0.0
            })),
            StateError::BadClipDuration { .. },
            ["\"A\"", "0 s"]
        ),
        row!(
            "archetype: a binding for a leaf the graph lacks",
            Archetype::from_bindings(
                Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()),
                &[("A", ClipBinding { clip: 0, duration_s: 1.0 }), ("C", ClipBinding { clip: 1, duration_s: 1.0 })]
            ),
            StateError::UnknownLeaf { .. },
            ["\"C\""]
        ),
        row!(
            "archetype: an event time past its clip's end",
            Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| Some(ClipBinding {
                clip: 0,
                duration_s: 1.0
            }))
            .unwrap()
            .with_clip_events(0, &[ClipEvent::new("step", 0.5), ClipEvent::new("late", 1.5)]),
            StateError::BadEvent { index: 1, .. },
            ["clip 0", "event 1", "\"late\"", "1.5 s", "outside"]
        ),
        row!(
            "archetype: a NaN event time",
            Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| Some(ClipBinding {
                clip: 0,
                duration_s: 1.0
            }))
            .unwrap()
            .with_clip_events(0, &[ClipEvent::new("step", f32::NAN)]),
            StateError::BadEvent { index: 0, .. },
            ["\"step\"", "not finite"]
        ),
        row!(
            "archetype: events for a clip no leaf plays",
            Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| Some(ClipBinding {
                clip: 0,
                duration_s: 1.0
            }))
            .unwrap()
            .with_clip_events(3, &[ClipEvent::new("step", 0.5)]),
            StateError::UnboundEventClip { clip: 3 },
            ["clip 3"]
        ),
        row!(
            "archetype: an event weight threshold over 1",
            Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| Some(ClipBinding {
                clip: 0,
                duration_s: 1.0
            }))
            .unwrap()
            .with_event_weight_threshold(1.5),
            StateError::BadEventThreshold(_),
            ["1.5"]
        ),
        row!(
            "clip: a negative event time",
            tiny().1.remove(0).with_events(vec![ClipEvent::new("step", -0.25)]),
            ClipError::BadEvent { index: 0, .. },
            ["event 0", "\"step\"", "-0.25 s"]
        ),
        row!(
            "crowd: an archetype of another crowd",
            {
                let (mut other, _, _) = crowd(0);
                let foreign = other.add_archetype(
                    Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| {
                        Some(ClipBinding { clip: 0, duration_s: 1.0 })
                    })
                    .unwrap(),
                );
                crowd(1).0.spawn(foreign)
            },
            StateError::UnknownArchetype(1),
            ["archetype 1"]
        ),
        row!(
            "crowd: a handle from another crowd",
            {
                let (_, _, theirs) = crowd(5);
                let (c, _, _) = crowd(1);
                c.readback(theirs[4], 0)
            },
            StateError::ForeignHandle { index: 4, .. },
            ["4/0", "not to this crowd"]
        ),
        row!(
            "crowd: a handle after despawn",
            {
                let (mut c, kind, h) = crowd(3);
                let speed = c.param(kind, "speed").unwrap();
                c.despawn(h[1]).unwrap();
                c.spawn(kind).unwrap();
                c.set_float(speed, &[h[0], h[1]], &[1.0, 2.0])
            },
            StateError::StaleHandle { index: 1, generation: 0 },
            ["1/0"]
        ),
        row!(
            "crowd: despawning twice",
            {
                let (mut c, _, h) = crowd(2);
                c.despawn(h[0]).unwrap();
                c.despawn(h[0])
            },
            StateError::StaleHandle { index: 0, .. },
            ["0/0"]
        ),
        row!(
            "crowd: a float setter on a boolean",
            {
                let (mut c, kind, h) = crowd(2);
                let go = c.param(kind, "go").unwrap();
                c.set_float(go, &h, &[1.0, 0.0])
            },
            StateError::ParamKind { expected: "FLOAT", got: "BOOLEAN" },
            ["BOOLEAN", "FLOAT"]
        ),
        row!(
            "crowd: an integer value for a float parameter",
            {
                let (mut c, kind, h) = crowd(1);
                let speed = c.param(kind, "speed").unwrap();
                c.set(speed, h[0], ParamValue::Int(3))
            },
            StateError::ParamKind { expected: "INTEGER", got: "FLOAT" },
            ["FLOAT"]
        ),
        row!(
            "crowd: a NaN parameter",
            {
                let (mut c, kind, h) = crowd(3);
                let speed = c.param(kind, "speed").unwrap();
                c.set_float(speed, &h, &[0.0, 1.0, f32::NAN])
            },
            StateError::NonFiniteValue { at: 2, .. },
            ["batch index 2", "NaN"]
        ),
        row!(
            "crowd: an infinite parameter",
            {
                let (mut c, kind, h) = crowd(3);
                let speed = c.param(kind, "speed").unwrap();
                c.set_float(speed, &h, &[f32::NEG_INFINITY, 1.0, 0.0])
            },
            StateError::NonFiniteValue { at: 0, .. },
            ["batch index 0", "inf"]
        ),
        row!(
            "crowd: a parameter of another archetype's graph",
            {
                let (mut c, kind, h) = crowd(1);
                let other = c.add_archetype(
                    Archetype::new(Arc::new(CompiledGraph::from_json(&good_graph()).unwrap()), |_| {
                        Some(ClipBinding { clip: 0, duration_s: 1.0 })
                    })
                    .unwrap(),
                );
                let stranger = c.spawn(other).unwrap();
                let speed = c.param(kind, "speed").unwrap();
                c.set_float(speed, &[h[0], stranger], &[1.0, 1.0])
            },
            StateError::WrongGraph { index: 1 },
            ["character 1"]
        ),
        row!(
            "mesh: a vertex skinned to a joint past the rig's",
            {
                let mut mesh = DemoCharacter::humanoid().mesh;
                mesh.joints[5][2] = 26;
                mesh.validate(26)
            },
            MeshError::JointOutOfRange { vertex: 5, joint: 26, joints: 26 },
            ["vertex 5", "joint 26"]
        ),
        row!(
            "mesh: an index past the vertices",
            {
                let mut mesh = DemoCharacter::humanoid().mesh;
                let vertices = mesh.num_vertices() as u32;
                mesh.indices[4] = vertices;
                mesh.validate(26)
            },
            MeshError::VertexOutOfRange { index: 4, .. },
            ["index 4"]
        ),
        row!("crowd: NaN dt", crowd(2).0.update(f32::NAN), StateError::BadDt(_), ["dt NaN"]),
        row!("crowd: infinite dt", crowd(2).0.update(f32::INFINITY), StateError::BadDt(_), ["dt inf"]),
        row!("crowd: negative dt", crowd(2).0.update(-0.016), StateError::BadDt(_), ["dt -0.016"]),
        row!(
            "crowd: readback of layer 3 of 1",
            {
                let (c, _, h) = crowd(1);
                c.readback(h[0], 3)
            },
            StateError::UnknownLayer { layer: 3, layers: 1 },
            ["layer 3"]
        ),
    ]
}

fn eval_rows() -> Vec<Row> {
    let layer = || [LayerSetup::default()];
    let two_layers = || {
        let (rig, _) = tiny();
        let mask =
            Mask::from_entries(&rig, &[MaskEntry { joint: "b".into(), weight: 1.0, descendants: true }]).unwrap();
        // A mask for a rig of one joint fewer: built against another rig.
        let other =
            Rig::new(vec!["a".into(), "b".into()], vec![None, Some(0)], vec![Transform::IDENTITY; 2], None).unwrap();
        let short =
            Mask::from_entries(&other, &[MaskEntry { joint: "b".into(), weight: 1.0, descendants: false }]).unwrap();
        assert_eq!(mask.weights().len(), 3);
        [
            LayerSetup::default(),
            LayerSetup {
                blend: LayerBlend::Override,
                space: LayerSpace::Local,
                mask: Some(short),
                ..LayerSetup::default()
            },
        ]
    };
    let sample = |clip: u32, time_s: f32, weight: f32| ClipSample::new(clip, time_s, weight);
    vec![
        row!(
            "EvalCrowdJob: output one float short",
            crowd_job(&tiny().1, &[sample(0, 0.5, 1.0)], &[0..1], Some(47)),
            Refusal { error: EvalError::OutputSize { expected: 48, got: 47, .. }, output_untouched: true },
            ["47", "48"]
        ),
        row!(
            "EvalCrowdJob: a sample of clip 9 of 2",
            crowd_job(&tiny().1, &[sample(0, 0.5, 1.0), sample(9, 0.5, 1.0)], &[0..1, 1..2], None),
            Refusal {
                error: EvalError::Program(ProgramError::UnknownClip { character: 1, sample: 1, clip: 9, .. }),
                output_untouched: true
            },
            ["character 1", "sample 1", "clip 9"]
        ),
        row!(
            "EvalCrowdJob: a NaN weight",
            crowd_job(&tiny().1, &[sample(0, 0.5, 1.0), sample(1, 0.0, f32::NAN)], &[0..2], None),
            Refusal {
                error: EvalError::Program(ProgramError::BadSample { character: 0, sample: 1, .. }),
                output_untouched: true
            },
            ["character 0", "sample 1", "NaN"]
        ),
        row!(
            "EvalCrowdJob: an infinite time",
            crowd_job(&tiny().1, &[sample(0, f32::INFINITY, 1.0)], &[0..1], None),
            Refusal {
                error: EvalError::Program(ProgramError::BadSample { character: 0, sample: 0, .. }),
                output_untouched: true
            },
            ["character 0", "inf"]
        ),
        row!(
            "EvalCrowdJob: a range past the samples",
            crowd_job(&tiny().1, &[sample(0, 0.5, 1.0)], &[0..1, 1..3], None),
            Refusal {
                error: EvalError::Program(ProgramError::SampleRange { character: 1, start: 1, end: 3, .. }),
                output_untouched: true
            },
            ["character 1", "1..3"]
        ),
        row!(
            "EvalCrowdJob: a clip of another rig",
            crowd_job(
                &[Clip::from_poses("two", 2, vec![Transform::IDENTITY; 2], 0.0, true).unwrap()],
                &[],
                &[0..0],
                None
            ),
            Refusal {
                error: EvalError::Program(ProgramError::ClipRigMismatch { clip: 0, .. }),
                output_untouched: true
            },
            ["clip 0", "\"two\""]
        ),
        row!(
            "FrameJob: no layers",
            frame_job(&tiny().1, &[], &[], &[], 0.1, 0),
            Refusal { error: EvalError::Program(ProgramError::Layers(_)), output_untouched: true },
            ["at least one layer"]
        ),
        row!(
            "FrameJob: NaN dt",
            frame_job(&tiny().1, &layer(), &[sample(0, 0.1, 1.0)], &[settled_program(0, 1)], f32::NAN, 1),
            Refusal { error: EvalError::Program(ProgramError::BadDt(_)), output_untouched: true },
            ["dt NaN"]
        ),
        row!(
            "FrameJob: negative dt",
            frame_job(&tiny().1, &layer(), &[sample(0, 0.1, 1.0)], &[settled_program(0, 1)], -1.0, 1),
            Refusal { error: EvalError::Program(ProgramError::BadDt(_)), output_untouched: true },
            ["dt -1"]
        ),
        row!(
            "FrameJob: a program weight of 2",
            frame_job(
                &tiny().1,
                &two_layers()[..1],
                &[sample(0, 0.1, 1.0)],
                &[settled_program(0, 1), LayerProgram { weight: 2.0, ..settled_program(0, 1) }],
                0.1,
                2
            ),
            Refusal {
                error: EvalError::Program(ProgramError::BadProgram { character: 1, layer: 0, .. }),
                output_untouched: true
            },
            ["character 1", "layer 0"]
        ),
        row!(
            "FrameJob: a NaN transition weight",
            frame_job(
                &tiny().1,
                &layer(),
                &[sample(0, 0.1, 1.0)],
                &[LayerProgram {
                    target_weight: f32::NAN,
                    mode: SwitchMode::Frozen as u32,
                    flags: LayerProgram::SOURCE_SNAPSHOT,
                    ..settled_program(0, 1)
                }],
                0.1,
                1
            ),
            Refusal {
                error: EvalError::Program(ProgramError::BadProgram { character: 0, layer: 0, .. }),
                output_untouched: true
            },
            ["character 0", "layer 0"]
        ),
        row!(
            "FrameJob: a mask for another rig",
            frame_job(
                &tiny().1,
                &two_layers(),
                &[sample(0, 0.1, 1.0)],
                &[settled_program(0, 1), settled_program(0, 1)],
                0.1,
                1
            ),
            Refusal { error: EvalError::Program(ProgramError::Layers(_)), output_untouched: true },
            ["layer 1", "2 weights", "3 joints"]
        ),
        row!(
            "FrameJob: a context for another crowd size",
            frame_job(
                &tiny().1,
                &layer(),
                &[sample(0, 0.1, 1.0)],
                &[settled_program(0, 1), settled_program(0, 1)],
                0.1,
                3
            ),
            Refusal {
                error: EvalError::ProgramCount { programs: 2, context_characters: 3, .. },
                output_untouched: true
            },
            ["2 layer programs", "3 characters"]
        ),
        row!(
            "FrameJob: a program past the samples",
            frame_job(
                &tiny().1,
                &layer(),
                &[sample(0, 0.1, 1.0)],
                &[settled_program(0, 1), settled_program(1, 2)],
                0.1,
                2
            ),
            Refusal {
                error: EvalError::Program(ProgramError::SampleRange { character: 1, .. }),
                output_untouched: true
            },
            ["character 1", "1..3"]
        ),
    ]
}

#[test]
fn every_malformed_input_is_refused_with_a_typed_error_that_says_where() {
    let rows: Vec<Row> =
        [graph_rows(), trace_rows(), gltf_rows(), bvh_rows(), api_rows(), eval_rows()].into_iter().flatten().collect();
    assert!(rows.len() >= 40, "the matrix has only {} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        match catch_unwind(AssertUnwindSafe(|| (row.run)())) {
            Ok(Ok(())) => {}
            Ok(Err(why)) => failures.push(format!("{}: {why}", row.name)),
            Err(_) => failures.push(format!("{}: PANICKED", row.name)),
        }
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n  {}", failures.len(), rows.len(), failures.join("\n  "));
}

/// The rows' unmodified inputs are accepted, so each row is refused for the reason it names.
#[test]
fn the_inputs_the_rows_break_are_valid_as_written() {
    CompiledGraph::from_json(&good_graph()).unwrap();
    CompiledGraph::from_json(&layers(throng::graph::MAX_LAYERS)).unwrap();
    CompiledGraph::from_json(&nested(throng::graph::MAX_MACHINE_DEPTH - 1)).unwrap();
    run_script(&script(&good_graph(), r#""dt": 0.1, "frames": 2, "events": [{ "frame": 0, "set": { "speed": 2 } }]"#))
        .unwrap();
    let asset = gltf(gltf_doc(&data_uri(&identity_ibm()), 128, SKIN).as_bytes()).unwrap();
    assert_eq!(asset.rig.names(), ["hips", "spine"]);
    gltf(&glb_doc()).unwrap();
    let on_disk = gltf_on_disk("whole", Some(&identity_ibm())).unwrap();
    assert_eq!(on_disk.rig.num_joints(), 2);
    let bvh = parse_bvh(BVH, &BvhOptions::default()).unwrap();
    assert_eq!(bvh.num_frames, 2);
    assert_eq!(parse_bvh(&bvh_chain(MAX_JOINTS), &BvhOptions::default()).unwrap().rig.num_joints(), MAX_JOINTS);
    let demo = DemoCharacter::humanoid();
    demo.mesh.validate(demo.rig.num_joints()).unwrap();
    assert!(crowd_job(&tiny().1, &[ClipSample::new(0, 0.5, 1.0)], &[0..1], None).is_ok());
    assert!(
        frame_job(
            &tiny().1,
            &[LayerSetup::default()],
            &[ClipSample::new(0, 0.1, 1.0)],
            &[settled_program(0, 1)],
            0.1,
            1
        )
        .is_ok()
    );
}

// ---------------------------------------------------------------------------------------------
// Extreme but valid

/// Weights that sum past `f32::MAX` (each finite, so valid) blend by their ratios, as the same
/// ratios in small numbers do: on both evaluators and every frame kernel, in the two-clip and
/// the layered frame (settled, crossfading, and on an inertialization's switch, whose step-back
/// blend is the source's, and whose capture replays the pose shown before it), and in the
/// root's travel. Before, the GPU divided each by an
/// infinite sum and showed a character's blend as nothing (the rest pose's rotations at the
/// origin).
#[test]
fn weights_summing_past_the_float_range_blend_by_their_ratios() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let big = f32::MAX / 4.0;
    // (huge weights, the same ratios in small numbers, the layered program's switch: none for a
    // settled layer, else its mode and flags; the two sides two samples each). The fourth
    // character blends more samples than the level kernels' sample table holds (64 entries for
    // this rig), so that its last entries are worked out in the clip loop.
    let switching = LayerProgram::TRANSITIONING | LayerProgram::SWITCHED;
    let cases = [
        (vec![f32::MAX, f32::MAX], vec![1.0, 1.0], None),
        (vec![f32::MAX, f32::MAX * 0.5], vec![2.0, 1.0], None),
        (vec![f32::MAX * 0.75, f32::MAX * 0.25], vec![3.0, 1.0], None),
        (vec![f32::MAX; 70], vec![1.0; 70], None),
        (
            vec![2.0 * big, big, 4.0 * big, big],
            vec![2.0, 1.0, 4.0, 1.0],
            Some((SwitchMode::Crossfade, LayerProgram::TRANSITIONING)),
        ),
        (
            vec![2.0 * big, big, 4.0 * big, big],
            vec![2.0, 1.0, 4.0, 1.0],
            Some((SwitchMode::InertializeQuintic, switching)),
        ),
        // The pose shown before this switch (frame 1's, on its first two samples) sums past the
        // range too: the GPU's capture replays it from its replay entry (`replay_blend_joint`).
        (
            vec![f32::MAX, f32::MAX, 4.0 * big, big],
            vec![4.0, 4.0, 4.0, 1.0],
            Some((SwitchMode::InertializeQuintic, switching)),
        ),
    ];
    let characters = cases.len();
    let samples_of = |huge: bool| -> Vec<ClipSample> {
        let sample = |i: usize, weight| ClipSample {
            clip: (i % 2) as u32,
            time_s: [0.3, 0.7][i % 2] + i as f32 * 0.01,
            weight,
            advance_s: 0.25,
        };
        let weights = cases.iter().map(|(h, s, _)| if huge { h } else { s });
        weights.flat_map(|w| w.iter().enumerate().map(move |(i, &w)| sample(i, w))).collect()
    };
    let mut ranges = Vec::new();
    for (w, _, _) in &cases {
        let start = ranges.last().map_or(0, |r: &std::ops::Range<u32>| r.end);
        ranges.push(start..start + w.len() as u32);
    }
    // Frame 1 settles every layer on its first two samples; frame 2 runs each case's program
    // (a switch needs a pose shown before it to capture or fade from); frame 3 the same but for
    // the switch, so that an inertialization's offset velocity, which its switch frame's
    // step-back blend sets and which moves nothing at that frame, shows.
    let root_motion = |p: LayerProgram| LayerProgram { flags: p.flags | LayerProgram::ROOT_MOTION, ..p };
    let settled: Vec<_> = ranges.iter().map(|r| root_motion(settled_program(r.start, 2))).collect();
    let programs: Vec<_> = cases
        .iter()
        .zip(&ranges)
        .map(|((_, _, switch), r)| match *switch {
            None => root_motion(settled_program(r.start, r.len() as u32)),
            Some((mode, flags)) => root_motion(LayerProgram {
                first_sample: r.start,
                num_target: 2,
                num_secondary: 2,
                transition: 0,
                mode: mode as u32,
                flags,
                target_weight: 0.5,
                progress: 0.5,
                weight: 1.0,
                decay_s: 0.3,
            }),
        })
        .collect();
    let after: Vec<_> =
        programs.iter().map(|p| LayerProgram { flags: p.flags & !LayerProgram::SWITCHED, ..*p }).collect();
    let layers = [LayerSetup::default()];
    let two_clip_cpu = |samples: &[ClipSample]| support::cpu_two_clip_frame((&demo.rig, &demo.clips), samples, &ranges);
    let layered_cpu = |samples: &[ClipSample]| {
        let mut context = EvalContext::new(characters, 1, joints);
        let setup = (&demo.rig, &demo.clips[..], &layers[..]);
        support::cpu_frame(setup, samples, &settled, 0.25, &mut context).unwrap();
        support::cpu_frame(setup, samples, &programs, 0.25, &mut context).unwrap();
        support::cpu_frame(setup, samples, &after, 0.25, &mut context).unwrap()
    };
    let travel = |samples: &[ClipSample]| {
        let mut out = vec![RootDelta::default(); characters];
        crowd_root_motion(&demo.clips, samples, &programs, 1, &mut out).unwrap();
        out
    };
    let (huge_samples, small_samples) = (samples_of(true), samples_of(false));
    // The layered frame takes the root's travel out of the pose; the two-clip frame keeps it.
    let (two_clip, layered) = (two_clip_cpu(&small_samples), layered_cpu(&small_samples));
    let close = |expected: &[f32], got: &[f32], tolerance: f32, what: &str| {
        support::compare::assert_matrices_close(expected, got, 16, joints, tolerance, what)
    };
    close(&two_clip, &two_clip_cpu(&huge_samples), 1e-5, "CPU two-clip frame");
    close(&layered, &layered_cpu(&huge_samples), 1e-5, "CPU layered frame");
    for (c, (h, s)) in travel(&huge_samples).iter().zip(travel(&small_samples)).enumerate() {
        // Each difference compared on its own: a NaN fails it.
        let differences = [(h.translation - s.translation).abs().to_array().to_vec(), vec![(h.yaw - s.yaw).abs()]];
        assert!(
            differences.concat().iter().all(|d| *d <= 1e-6) && s.translation.length() > 0.0,
            "character {c}: root travel {h:?} against {s:?}"
        );
    }
    let Some(gpu) = gpu_support::gpu() else { return };
    for kernel in FrameKernel::ALL {
        let options = GpuCrowdOptions { kernel, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, options).unwrap();
        let got = gpu_support::frame(&gpu, &mut crowd, &huge_samples, &ranges);
        close(&two_clip, &got, GPU_TOLERANCE, &format!("GPU two-clip frame, {kernel:?}"));
        let mut crowd =
            GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, &layers, options).unwrap();
        gpu_support::layered_frame(&gpu, &mut crowd, &huge_samples, &settled, 0.25);
        gpu_support::layered_frame(&gpu, &mut crowd, &huge_samples, &programs, 0.25);
        let got = gpu_support::layered_frame(&gpu, &mut crowd, &huge_samples, &after, 0.25);
        close(&layered, &got, GPU_TOLERANCE, &format!("GPU layered frame, {kernel:?}"));
    }
}

/// Weights below `f32::MIN_POSITIVE` (subnormal) count as zero (`throng::program::weighs`), on
/// both evaluators and every frame kernel, whether or not a driver flushes subnormal floats
/// (lavapipe's does): a blend of subnormal weights shows the rest pose, whether they sum to a
/// subnormal or to the least normal float; a subnormal weight beside a normal one adds nothing;
/// a layer of subnormal weight does not show (and samples nothing); the least normal weight
/// counts. Before, the CPU blended what a flushing GPU dropped, and a driver that flushed a
/// subnormal sum in the division but not in the comparison before it divided zero by zero.
#[test]
fn subnormal_weights_count_as_zero_on_both_evaluators() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let half_least = f32::MIN_POSITIVE / 2.0;
    // (the weights given, the weights they blend as): two samples a character, clips 0 and 1.
    // The first two sum to subnormals, the third to the least normal float.
    let cases = [
        ([f32::MIN_POSITIVE / 4.0; 2], [0.0, 0.0]),
        ([1e-45, 1e-45], [0.0, 0.0]),
        ([half_least, half_least], [0.0, 0.0]),
        ([1e-45, 0.25], [0.0, 0.25]),
        ([0.5, half_least], [0.5, 0.0]),
        ([f32::MIN_POSITIVE, f32::MIN_POSITIVE], [1.0, 1.0]),
    ];
    let characters = cases.len();
    let samples_of = |given: bool| -> Vec<ClipSample> {
        let weights = cases.iter().flat_map(|(g, e)| if given { *g } else { *e });
        weights.enumerate().map(|(i, w)| ClipSample::new((i % 2) as u32, 0.3 + i as f32 * 0.05, w)).collect()
    };
    let ranges: Vec<_> = (0..characters as u32).map(|c| 2 * c..2 * c + 2).collect();
    // The layered frame: the character's blend as its base, and over it a local override of the
    // second clip alone at a subnormal weight (expected: at weight 0, not shown).
    let layers = [
        LayerSetup::default(),
        LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Local, mask: None, ..LayerSetup::default() },
    ];
    let programs_of = |layer_weight: f32| -> Vec<LayerProgram> {
        let over = |r: &std::ops::Range<u32>| LayerProgram { weight: layer_weight, ..settled_program(r.start + 1, 1) };
        ranges.iter().flat_map(|r| [settled_program(r.start, 2), over(r)]).collect()
    };
    let two_clip_cpu = |samples: &[ClipSample]| support::cpu_two_clip_frame((&demo.rig, &demo.clips), samples, &ranges);
    // The matrices, and the clips each character sampled.
    let layered_cpu = |samples: &[ClipSample], programs: &[LayerProgram]| {
        let mut context = EvalContext::new(characters, layers.len(), joints);
        let mut output = vec![0.0; characters * joints * 16];
        let mut clips_sampled = vec![0; characters];
        FrameJob {
            rig: &demo.rig,
            clips: &demo.clips,
            layers: &layers,
            samples,
            programs,
            dt_s: 0.25,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        }
        .run()
        .unwrap();
        (output, clips_sampled)
    };
    let (given, expected) = (samples_of(true), samples_of(false));
    let (given_programs, expected_programs) = (programs_of(half_least), programs_of(0.0));
    let two_clip = two_clip_cpu(&expected);
    let (layered, expected_clips) = layered_cpu(&expected, &expected_programs);
    let (given_layered, given_clips) = layered_cpu(&given, &given_programs);
    // The base layer's two samples, and nothing for the layer that does not show.
    assert_eq!(given_clips, vec![2; characters]);
    assert_eq!(expected_clips, given_clips);
    // Bit for bit on the CPU (`==` fails on a NaN).
    let same_bits = |expected: &[f32], got: &[f32], what: &str| {
        let first = expected.iter().zip(got).position(|(e, g)| e.to_bits() != g.to_bits());
        assert!(first.is_none(), "{what}: character {} differs", first.unwrap_or(0) / (joints * 16));
    };
    same_bits(&two_clip, &two_clip_cpu(&given), "CPU two-clip frame");
    same_bits(&layered, &given_layered, "CPU layered frame");
    // The rest pose where nothing counts: a blend at all would move the first character.
    let rest: Vec<f32> = (demo.rig.rest_model().iter().zip(demo.rig.inverse_bind()))
        .flat_map(|(model, inverse_bind)| (*model * *inverse_bind).to_cols_array())
        .collect();
    support::compare::assert_matrices_close(&rest, &two_clip[..joints * 16], 16, joints, 1e-5, "the rest pose");
    let Some(gpu) = gpu_support::gpu() else { return };
    let close = |expected: &[f32], got: &[f32], what: &str| {
        support::compare::assert_matrices_close(expected, got, 16, joints, GPU_TOLERANCE, what)
    };
    for kernel in FrameKernel::ALL {
        let options = GpuCrowdOptions { kernel, ..Default::default() };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, options).unwrap();
        let got = gpu_support::frame(&gpu, &mut crowd, &given, &ranges);
        close(&two_clip, &got, &format!("GPU two-clip frame, {kernel:?}"));
        let mut crowd =
            GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, &layers, options).unwrap();
        let got = gpu_support::layered_frame(&gpu, &mut crowd, &given, &given_programs, 0.25);
        close(&layered, &got, &format!("GPU layered frame, {kernel:?}"));
    }
}

/// Times far outside a clip, denormal and zero weights, huge steps: every matrix stays finite.
#[test]
fn extreme_but_valid_samples_give_finite_matrices() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let times = [0.0, -0.0, 1e-45, -1e-45, 1e30, -1e30, f32::MAX, f32::MIN, 16_777_217.0, 0.999_999_9];
    let weights = [0.0, 1e-45, f32::MIN_POSITIVE, 1.0, 1e30, f32::MAX];
    let mut samples = Vec::new();
    let mut ranges = Vec::new();
    for (c, clip) in demo.clips.iter().enumerate() {
        for &t in &times {
            for &w in &weights {
                let start = samples.len() as u32;
                samples.push(ClipSample::new(c as u32, t, w));
                samples.push(ClipSample {
                    clip: ((c + 1) % demo.clips.len()) as u32,
                    time_s: t * 0.5,
                    weight: w,
                    advance_s: f32::MAX,
                });
                ranges.push(start..samples.len() as u32);
            }
        }
        assert!(clip.duration_s() > 0.0);
    }
    let gpu = gpu_support::gpu();
    for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
        let mut out = vec![0.0; ranges.len() * joints * layout.floats_per_joint()];
        EvalCrowdJob {
            rig: &demo.rig,
            clips: &demo.clips,
            samples: &samples,
            sample_ranges: &ranges,
            layout,
            output: &mut out,
        }
        .run()
        .unwrap();
        let mut outputs = vec![("CPU", out)];
        if let Some(gpu) = &gpu {
            let mut crowd = GpuCrowd::new(
                &gpu.device,
                &gpu.queue,
                &demo.rig,
                &demo.clips,
                GpuCrowdOptions { layout, ..Default::default() },
            )
            .unwrap();
            outputs.push(("GPU", gpu_support::frame(gpu, &mut crowd, &samples, &ranges)));
        }
        for (evaluator, out) in outputs {
            if let Some(i) = out.iter().position(|v| !v.is_finite()) {
                let per_character = joints * layout.floats_per_joint();
                let character = i / per_character;
                panic!(
                    "{evaluator} {layout:?}: character {character} joint {} is {} for samples {:?}",
                    i % per_character / layout.floats_per_joint(),
                    out[i],
                    &samples[ranges[character].start as usize..ranges[character].end as usize]
                );
            }
        }
    }
}

/// Every switch mode with extreme step lengths, curve parameters and shares, on a base layer, an
/// additive layer and a masked mesh-space override: every matrix stays finite, frame after frame.
#[test]
fn extreme_but_valid_frames_give_finite_matrices() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let idle = demo.clip_index("idle").unwrap();
    let mut clips = demo.clips.clone();
    clips.push(demo.clips[demo.clip_index("lean").unwrap()].to_additive(&demo.clips[idle].frame(0)));
    let additive = (clips.len() - 1) as u32;
    let upper =
        Mask::from_entries(&demo.rig, &[MaskEntry { joint: "spine_01".into(), weight: 0.7, descendants: true }])
            .unwrap();
    let layers = [
        LayerSetup::default(),
        LayerSetup { blend: LayerBlend::Additive, space: LayerSpace::Local, mask: None, ..LayerSetup::default() },
        LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Mesh, mask: Some(upper), ..LayerSetup::default() },
    ];
    let modes = [
        SwitchMode::Cut,
        SwitchMode::Frozen,
        SwitchMode::Crossfade,
        SwitchMode::InertializeQuintic,
        SwitchMode::InertializeQuinticOvershootControl,
        SwitchMode::InertializeSpring,
    ];
    let shares = [0.0, 1e-45, 0.5, 1.0 - f32::EPSILON, 1.0];
    let params = [0.0, 1e-45, 1e-3, 1e30, f32::MAX];
    let dts = [0.0, 1e-45, 1.0 / 60.0, 1e30, f32::MAX, 1.0 / 60.0, 0.0];
    // One character per (mode, share, param); each layer samples two clips.
    let mut cases = Vec::new();
    for &mode in &modes {
        for &share in &shares {
            for &decay_s in &params {
                cases.push((mode, share, decay_s));
            }
        }
    }
    let characters = cases.len();
    let gpu = gpu_support::gpu();
    let mut gpu_crowd = gpu.as_ref().map(|gpu| {
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &clips, &layers, GpuCrowdOptions::default()).unwrap()
    });
    let mut context = EvalContext::new(characters, layers.len(), joints);
    let mut output = vec![0.0; characters * joints * 16];
    let mut sampled = vec![0; characters];
    for (frame, &dt_s) in dts.iter().enumerate() {
        let mut samples = Vec::new();
        let mut programs = Vec::new();
        for (c, &(mode, share, decay_s)) in cases.iter().enumerate() {
            for l in 0..layers.len() {
                let first = samples.len() as u32;
                let clip = if l == 1 { additive } else { ((c + l + frame) % demo.clips.len()) as u32 };
                let time_s = [0.0, 1e30, -1e-45, 3.5][(c + frame) % 4];
                samples.push(ClipSample::new(clip, time_s, 1.0 - share));
                samples.push(ClipSample::new(if l == 1 { additive } else { idle as u32 }, time_s * 0.5, share));
                let switched = frame % 3 == 1;
                let flags = LayerProgram::TRANSITIONING
                    | if switched { LayerProgram::SWITCHED } else { 0 }
                    | if mode == SwitchMode::Frozen { LayerProgram::SOURCE_SNAPSHOT } else { 0 }
                    | if l == 0 { LayerProgram::ROOT_MOTION } else { 0 };
                programs.push(LayerProgram {
                    first_sample: first,
                    num_target: 1,
                    num_secondary: 1,
                    transition: 0,
                    mode: mode as u32,
                    flags,
                    target_weight: share,
                    progress: share,
                    weight: if l == 0 { 1.0 } else { [1.0, 1e-45, 0.5][c % 3] },
                    decay_s,
                });
            }
        }
        let mut root = vec![Default::default(); characters];
        // The low-level job: it evaluates hand-made programs, with no crowd.
        FrameJob {
            rig: &demo.rig,
            clips: &clips,
            layers: &layers,
            samples: &samples,
            programs: &programs,
            dt_s,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut sampled,
            root_motion: &mut root,
        }
        .run()
        .unwrap();
        let mut outputs = vec![("CPU", output.clone())];
        if let (Some(gpu), Some(crowd)) = (&gpu, &mut gpu_crowd) {
            outputs.push(("GPU", gpu_support::layered_frame(gpu, crowd, &samples, &programs, dt_s)));
        }
        for (evaluator, output) in outputs {
            if let Some(i) = output.iter().position(|v| !v.is_finite()) {
                let c = i / (joints * 16);
                panic!(
                    "{evaluator}, frame {frame} (dt {dt_s}): character {c} {:?} joint {} is {}",
                    cases[c],
                    i / 16 % joints,
                    output[i]
                );
            }
        }
        for (c, r) in root.iter().enumerate() {
            assert!(
                r.translation.is_finite() && r.yaw.is_finite(),
                "frame {frame}: character {c} {:?} root motion {r:?}",
                cases[c]
            );
        }
    }
}

/// The state step run with extreme valid steps on a real graph still emits programs the
/// evaluator accepts and evaluates to finite matrices.
#[test]
fn extreme_steps_through_the_state_step_give_finite_matrices() {
    let demo = DemoCharacter::humanoid();
    let clip = |name: &str| {
        let i = demo.clip_index(name).unwrap();
        ClipBinding { clip: i as u32, duration_s: demo.clips[i].duration_s() }
    };
    let graph = Arc::new(CompiledGraph::from_json(include_str!("../benches/support/locomotion.json")).unwrap());
    let arch = Archetype::from_bindings(
        graph,
        &[
            ("Idle", clip("idle")),
            ("Move.Idle", clip("idle")),
            ("Move.Walk", clip("walk")),
            ("Move.Run", clip("run")),
            ("Jump", clip("jump")),
            ("Rest", clip("idle")),
            ("Wave", clip("wave")),
        ],
    )
    .unwrap();
    let layers = vec![LayerSetup::default(), LayerSetup::default()];
    let mut crowd = CrowdRuntime::new();
    let kind = crowd.add_archetype(arch, demo.rig.clone(), demo.clips.clone(), layers).unwrap();
    let handles = crowd.spawn_many(kind, 64).unwrap();
    let speed = crowd.param(kind, "speed").unwrap();
    let jump = crowd.param(kind, "jump").unwrap();
    let mut output = vec![0.0; crowd.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    let speeds: Vec<f32> =
        (0..handles.len()).map(|i| [0.0, 1e-45, 0.1, 2.0, 1e30, f32::MAX, -f32::MAX, 3.9][i % 8]).collect();
    for (f, dt_s) in [0.0, 1e-45, 1.0 / 60.0, 1e30, f32::MAX, 1.0 / 60.0, 0.5, 0.0].into_iter().enumerate() {
        crowd.set_float(speed, &handles, &speeds).unwrap();
        if f % 2 == 1 {
            crowd.set_trigger(jump, &handles[..32], false).unwrap();
        }
        crowd.update(dt_s).unwrap();
        output.fill(f32::NAN);
        crowd
            .evaluate(kind, OutputLayout::Mat4, &mut output, &mut [])
            .unwrap_or_else(|e| panic!("frame {f} (dt {dt_s}): {e}"));
        if let Some(i) = output.iter().position(|v| !v.is_finite()) {
            panic!("frame {f} (dt {dt_s}): character {} is {}", i / (demo.rig.num_joints() * 16), output[i]);
        }
    }
}
