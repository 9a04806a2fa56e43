//! Helpers shared by the integration tests, one copy each: build small graphs, run trace
//! scripts, wrap glTF JSON and a buffer into a GLB container; and in submodules, compare floats
//! (`compare`, failing on NaN), drive crowds (`drive`), make scratch folders (`files`) and
//! build the example programs the tests run (`examples`). `gpu.rs` beside them, the GPU tests'
//! device and random inputs, is included by those tests alone (`#[path]`).
//!
//! Each test file compiles this module on its own and uses a part of it.

#![allow(dead_code)]

pub mod compare;
pub mod drive;
pub mod examples;
pub mod files;

use throng::trace::{run_script, TraceLine};

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
