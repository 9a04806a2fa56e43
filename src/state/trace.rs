//! Trace scripts: one character through a graph, frame by frame (the `throng-trace` tool).
//!
//! A script is one JSON object:
//!
//! | key | meaning |
//! |-----|---------|
//! | `stateGraph` | the graph, either PlayCanvas form |
//! | `clips` | clip duration in seconds by leaf path (`"State.Child"`), by state name, or `"*"` for the rest |
//! | `dt` + `frames`, or `dts` | a fixed step for `frames` updates, or one step per update (at most [`MAX_TRACE_FRAMES`]) |
//! | `speed` | optional multiplier on every step (1 when absent) |
//! | `events` | `[{ "frame": n, "set": { name: value }, "trigger": [..], "triggerSingleFrame": [..], "resetTrigger": [..] }]`, applied before frame `n`'s update |
//!
//! Each frame prints one line per layer: `frame`, `t` (seconds after the update), `layer`,
//! `activeState`, `previousState`, `transitioning`, `transitionProgress` and `weights` (each
//! state's share of the layer's pose).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::graph::{CompiledGraph, GraphError, ParamKind};

use super::{Archetype, ClipBinding, Crowd, StateError};

/// Why a script could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The script is malformed.
    #[error("script at {path}: {message}")]
    Script {
        /// JSON path, e.g. `events[2].set.speed`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The script's `stateGraph` does not load.
    #[error("script at stateGraph: {0}")]
    Graph(#[from] GraphError),
    /// The state step refused something the script asked.
    #[error("script at {path}: {source}")]
    State {
        /// JSON path of what was refused.
        path: String,
        /// Why.
        source: StateError,
    },
}

/// One layer of one frame of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// Frame number from 0.
    pub frame: usize,
    /// Seconds elapsed after this frame's update.
    pub t: f64,
    /// Layer name.
    pub layer: String,
    /// Active state name.
    pub active_state: String,
    /// The state the last transition left.
    pub previous_state: Option<String>,
    /// Whether a transition is in flight.
    pub transitioning: bool,
    /// Its linear progress, 1 when none is in flight.
    pub transition_progress: f32,
    /// Each state's share of the layer's pose (states with a share above 0).
    pub weights: Vec<(String, f32)>,
}

impl TraceLine {
    /// The line as compact JSON, numbers printed at `f32` precision.
    #[must_use]
    pub fn to_json(&self) -> String {
        let s = |v: &str| serde_json::to_string(v).unwrap_or_default();
        let weights: Vec<String> = self.weights.iter().map(|(n, w)| format!("{}:{w}", s(n))).collect();
        format!(
            "{{\"frame\":{},\"t\":{},\"layer\":{},\"activeState\":{},\"previousState\":{},\"transitioning\":{},\"transitionProgress\":{},\"weights\":{{{}}}}}",
            self.frame,
            self.t as f32,
            s(&self.layer),
            s(&self.active_state),
            self.previous_state.as_deref().map_or_else(|| "null".to_owned(), s),
            self.transitioning,
            self.transition_progress,
            weights.join(",")
        )
    }
}

/// Most frames one script may run (about 28 minutes at 60 Hz), so that a malformed `frames`
/// cannot ask for unbounded memory or time.
pub const MAX_TRACE_FRAMES: u64 = 100_000;

fn bad(path: impl Into<String>, message: impl Into<String>) -> TraceError {
    TraceError::Script { path: path.into(), message: message.into() }
}

fn number(v: &Value, path: &str) -> Result<f64, TraceError> {
    v.as_f64().ok_or_else(|| bad(path, "expected a number"))
}

fn names(v: &Value, path: &str) -> Result<Vec<String>, TraceError> {
    let list = v.as_array().ok_or_else(|| bad(path, "expected an array of parameter names"))?;
    list.iter()
        .enumerate()
        .map(|(i, n)| n.as_str().map(str::to_owned).ok_or_else(|| bad(format!("{path}[{i}]"), "expected a parameter name")))
        .collect()
}

/// Runs a trace script given as JSON text.
///
/// # Errors
/// [`TraceError`] naming the JSON path of the first problem.
pub fn run_script(text: &str) -> Result<Vec<TraceLine>, TraceError> {
    let script: Value = serde_json::from_str(text)
        .map_err(|e| bad(format!("line {}, column {}", e.line(), e.column()), e.to_string()))?;
    let root = script.as_object().ok_or_else(|| bad("$", "a script is a JSON object"))?;
    let graph_json = root.get("stateGraph").ok_or_else(|| bad("$", "missing `stateGraph`"))?;
    let graph = Arc::new(CompiledGraph::compile(&crate::graph::format::GraphDesc::from_value(graph_json)?)?);

    let empty = Map::new();
    let clips = match root.get("clips") {
        None => &empty,
        Some(v) => v.as_object().ok_or_else(|| bad("clips", "expected an object of durations in seconds"))?,
    };
    let mut durations = Vec::with_capacity(clips.len());
    for (key, v) in clips {
        let path = format!("clips.{key}");
        let known = key == "*"
            || graph.leaves().iter().any(|l| l.path == *key)
            || graph.states().iter().any(|s| s.name == *key);
        if !known {
            return Err(bad(path, "names no state or blend-tree leaf of the graph"));
        }
        durations.push((key.as_str(), number(v, &path)? as f32, path));
    }
    let arch = Archetype::new(Arc::clone(&graph), |leaf| {
        let state = graph.leaves().iter().find(|l| l.path == leaf).map(|l| graph.states()[l.state as usize].name.as_str());
        [Some(leaf), state, Some("*")]
            .into_iter()
            .flatten()
            .find_map(|key| durations.iter().find(|(k, _, _)| *k == key))
            .map(|&(_, duration_s, _)| ClipBinding {
                clip: graph.leaves().iter().position(|l| l.path == leaf).unwrap_or(0) as u32,
                duration_s,
            })
    })
    .map_err(|source| TraceError::State { path: "clips".to_owned(), source })?;

    let speed = match root.get("speed") {
        None => 1.0,
        Some(v) => number(v, "speed")?,
    };
    let dts: Vec<f64> = match (root.get("dt"), root.get("dts")) {
        (Some(_), Some(_)) => return Err(bad("$", "give `dt` and `frames`, or `dts`, not both")),
        (Some(dt), None) => {
            let dt = number(dt, "dt")?;
            let frames = root.get("frames").ok_or_else(|| bad("$", "`dt` needs `frames`"))?;
            let frames = frames.as_u64().ok_or_else(|| bad("frames", "expected a whole number of frames"))?;
            if frames > MAX_TRACE_FRAMES {
                return Err(bad("frames", format!("{frames} frames; a script runs at most {MAX_TRACE_FRAMES}")));
            }
            vec![dt; frames as usize]
        }
        (None, Some(dts)) => {
            let list = dts.as_array().ok_or_else(|| bad("dts", "expected an array of seconds"))?;
            if list.len() as u64 > MAX_TRACE_FRAMES {
                return Err(bad("dts", format!("{} steps; a script runs at most {MAX_TRACE_FRAMES}", list.len())));
            }
            let all: Vec<f64> =
                list.iter().enumerate().map(|(i, v)| number(v, &format!("dts[{i}]"))).collect::<Result<_, _>>()?;
            match root.get("frames").map(Value::as_u64) {
                None => all,
                Some(Some(n)) if n as usize <= all.len() => all[..n as usize].to_vec(),
                Some(_) => return Err(bad("frames", "expected a whole number no larger than the length of `dts`")),
            }
        }
        (None, None) => return Err(bad("$", "missing `dt` (with `frames`) or `dts`")),
    };

    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let hero = crowd.spawn(kind).map_err(|source| TraceError::State { path: "$".to_owned(), source })?;
    let events = match root.get("events") {
        None => Vec::new(),
        Some(v) => v.as_array().cloned().ok_or_else(|| bad("events", "expected an array"))?,
    };
    for (i, e) in events.iter().enumerate() {
        let path = format!("events[{i}]");
        let obj = e.as_object().ok_or_else(|| bad(&path, "an event is an object"))?;
        for key in obj.keys() {
            if !["frame", "set", "trigger", "triggerSingleFrame", "resetTrigger"].contains(&key.as_str()) {
                return Err(bad(format!("{path}.{key}"), "unknown event key"));
            }
        }
        obj.get("frame")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(format!("{path}.frame"), "expected a whole frame number"))?;
    }

    let mut lines = Vec::with_capacity(dts.len() * graph.layers().len());
    let mut t = 0.0f64;
    for (frame, &dt) in dts.iter().enumerate() {
        for (i, e) in events.iter().enumerate() {
            if e.get("frame").and_then(Value::as_u64) == Some(frame as u64) {
                apply_event(&mut crowd, kind, hero, e, &format!("events[{i}]"))?;
            }
        }
        let step = (dt * speed) as f32;
        crowd.update(step).map_err(|source| TraceError::State { path: format!("dts[{frame}]"), source })?;
        t += f64::from(step);
        for (l, layer) in graph.layers().iter().enumerate() {
            let r = crowd.readback(hero, l).map_err(|source| TraceError::State { path: "$".to_owned(), source })?;
            let name = |s: usize| graph.states()[s].name.clone();
            let mut weights = vec![(name(r.active_state), r.active_weight)];
            if r.transitioning
                && r.previous_weight > 0.0
                && let Some(p) = r.previous_state
            {
                match weights.iter_mut().find(|(n, _)| *n == graph.states()[p].name) {
                    Some(w) => w.1 += r.previous_weight,
                    None => weights.push((name(p), r.previous_weight)),
                }
            }
            weights.retain(|(_, w)| *w > 0.0);
            lines.push(TraceLine {
                frame,
                t,
                layer: layer.name.clone(),
                active_state: name(r.active_state),
                previous_state: r.previous_state.map(name),
                transitioning: r.transitioning,
                transition_progress: r.transition_progress,
                weights,
            });
        }
    }
    Ok(lines)
}

fn apply_event(crowd: &mut Crowd, kind: super::ArchetypeId, hero: super::CharacterHandle, e: &Value, path: &str) -> Result<(), TraceError> {
    let state_err = |p: String| move |source| TraceError::State { path: p, source };
    if let Some(set) = e.get("set") {
        let set = set.as_object().ok_or_else(|| bad(format!("{path}.set"), "expected an object of parameter values"))?;
        for (name, v) in set {
            let p = format!("{path}.set.{name}");
            let param = crowd.param(kind, name).map_err(state_err(p.clone()))?;
            let graph = Arc::clone(crowd.archetype(kind).map_err(state_err(p.clone()))?.graph());
            let slot = graph.parameter(name).map(|q| q.slot.kind);
            match (slot, v) {
                (Some(ParamKind::Float), Value::Number(n)) => {
                    let x = n.as_f64().unwrap_or(f64::NAN) as f32;
                    crowd.set_float(param, &[hero], &[x]).map_err(state_err(p))?;
                }
                (Some(ParamKind::Int), Value::Number(n)) => {
                    let x = n.as_i64().and_then(|x| i32::try_from(x).ok()).ok_or_else(|| bad(&p, "expected a 32-bit integer"))?;
                    crowd.set_int(param, &[hero], &[x]).map_err(state_err(p))?;
                }
                (Some(ParamKind::Bool), Value::Bool(b)) => crowd.set_bool(param, &[hero], &[*b]).map_err(state_err(p))?,
                (Some(ParamKind::Trigger), Value::Bool(true)) => {
                    crowd.set_trigger(param, &[hero], false).map_err(state_err(p))?;
                }
                (Some(ParamKind::Trigger), Value::Bool(false)) => crowd.reset_trigger(param, &[hero]).map_err(state_err(p))?,
                (Some(k), _) => return Err(bad(p, format!("value does not suit a {} parameter", k.name()))),
                (None, _) => return Err(bad(p, "no such parameter")),
            }
        }
    }
    for (key, single) in [("trigger", Some(false)), ("triggerSingleFrame", Some(true)), ("resetTrigger", None)] {
        let Some(list) = e.get(key) else { continue };
        for (i, name) in names(list, &format!("{path}.{key}"))?.iter().enumerate() {
            let p = format!("{path}.{key}[{i}]");
            let param = crowd.param(kind, name).map_err(state_err(p.clone()))?;
            match single {
                Some(single) => crowd.set_trigger(param, &[hero], single),
                None => crowd.reset_trigger(param, &[hero]),
            }
            .map_err(state_err(p))?;
        }
    }
    Ok(())
}
