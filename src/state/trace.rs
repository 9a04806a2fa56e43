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
//! | `character` | optional built-in character for poses: `"demo"` (default, 26 joints) or `"demo64"` |
//! | `clipMap` | optional clip of the character by leaf path, state name or `"*"`; a mapped leaf takes the clip's duration |
//! | `clipEvents` | optional animation events of each leaf's clip, keyed as `clips`: `[{ "name": "footstep", "time": 0.3 }]`, seconds |
//!
//! Each frame prints one line per layer: `frame`, `t` (seconds after the update), `layer`,
//! `activeState`, `previousState`, `transitioning`, `transitionProgress`, `weights` (each
//! state's share of the layer's pose) and, when the layer fired any, `events`.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::clip::{Clip, ClipEvent};
use crate::demo::DemoCharacter;
use crate::graph::{CompiledGraph, GraphError, LayerBlend, ParamKind, ParamValue};
use crate::rig::Rig;

use super::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, ParamId, StateError};

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
    /// Animation events the layer fired this frame, in order, with their weights.
    pub events: Vec<(String, f32)>,
}

impl TraceLine {
    /// The line as compact JSON, numbers printed at `f32` precision.
    #[must_use]
    pub fn to_json(&self) -> String {
        let s = |v: &str| serde_json::to_string(v).unwrap_or_default();
        let weights: Vec<String> = self.weights.iter().map(|(n, w)| format!("{}:{w}", s(n))).collect();
        let events = if self.events.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.events.iter().map(|(n, w)| format!("{{\"name\":{},\"weight\":{w}}}", s(n))).collect();
            format!(",\"events\":[{}]", list.join(","))
        };
        format!(
            "{{\"frame\":{},\"t\":{},\"layer\":{},\"activeState\":{},\"previousState\":{},\"transitioning\":{},\"transitionProgress\":{},\"weights\":{{{}}}{events}}}",
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
    Script::parse(text)?.run_with(|_| Ok::<(), TraceError>(()))
}

/// The rig and clips a script's `character` and `clipMap` name, for callers that evaluate poses.
#[derive(Clone, Debug)]
pub struct ScriptCharacter {
    /// The character's name in the script (`"demo"` or `"demo64"`).
    pub name: String,
    /// Its rig.
    pub rig: Rig,
    /// One clip per graph leaf, indexed as [`CompiledGraph::leaves`] (so by
    /// [`crate::program::ClipSample::clip`]): the mapped clip with its state's loop flag; on an
    /// additive layer, as a delta against the first frame of `idle`.
    pub leaf_clips: Vec<Clip>,
    /// Per leaf, the name of the character's clip it plays.
    pub leaf_clip_names: Vec<String>,
}

/// A parsed trace script, ready to run.
#[derive(Clone, Debug)]
pub struct Script {
    graph: Arc<CompiledGraph>,
    archetype: Archetype,
    dts_s: Vec<f32>,
    events: Vec<Value>,
    character: Option<ScriptCharacter>,
}

/// What an observer of [`Script::run_with`] sees after each frame's update.
#[derive(Debug)]
pub struct TraceFrame<'a> {
    /// Frame number from 0.
    pub frame: usize,
    /// This frame's step, seconds (after the script's `speed`).
    pub dt_s: f32,
    /// Seconds elapsed after this frame's update.
    pub t_s: f64,
    /// The crowd holding the script's one character.
    pub crowd: &'a Crowd,
    /// The character's archetype.
    pub archetype: ArchetypeId,
    /// The character.
    pub character: CharacterHandle,
    /// Every graph parameter's value as this frame's update read it (after the frame's events),
    /// in the order of [`CompiledGraph::parameters`]; the crowd holds the values after it.
    pub params_before: &'a [ParamValue],
    /// This frame's lines, one per layer.
    pub lines: &'a [TraceLine],
}

impl Script {
    /// Parses and checks a script: its graph, clips, steps and events.
    ///
    /// # Errors
    /// [`TraceError`] naming the JSON path of the first problem.
    pub fn parse(text: &str) -> Result<Self, TraceError> {
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
        let known = |key: &str| {
            key == "*" || graph.leaves().iter().any(|l| l.path == key) || graph.states().iter().any(|s| s.name == key)
        };
        let mut durations = Vec::with_capacity(clips.len());
        for (key, v) in clips {
            let path = format!("clips.{key}");
            if !known(key) {
                return Err(bad(path, "names no state or blend-tree leaf of the graph"));
            }
            let duration_s = number(v, &path)? as f32;
            if !(duration_s.is_finite() && duration_s > 0.0) {
                return Err(bad(path, "a clip duration is seconds, finite and > 0"));
            }
            durations.push((key.as_str(), duration_s));
        }
        let character = parse_character(root, &graph, known)?;
        // A leaf's clip is found by its path, then its state's name, then "*".
        let lookup = |leaf: usize| -> Vec<&str> {
            let l = &graph.leaves()[leaf];
            let state = graph.states().get(l.state as usize).map(|s| s.name.as_str());
            [Some(l.path.as_str()), state, Some("*")].into_iter().flatten().collect()
        };
        let arch = Archetype::new(Arc::clone(&graph), |path| {
            let leaf = graph.leaves().iter().position(|l| l.path == path)?;
            let mapped = character.as_ref().and_then(|c| c.leaf_clips.get(leaf)).map(Clip::duration_s);
            let given = lookup(leaf).into_iter().find_map(|key| durations.iter().find(|(k, _)| *k == key)).map(|&(_, d)| d);
            mapped.or(given).map(|duration_s| ClipBinding { clip: leaf as u32, duration_s })
        })
        .map_err(|source| TraceError::State { path: "clips".to_owned(), source })?;
        let arch = add_clip_events(root, arch, known, lookup)?;

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
            let frame = obj
                .get("frame")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(format!("{path}.frame"), "expected a whole frame number"))?;
            if frame as usize >= dts.len() {
                return Err(bad(format!("{path}.frame"), format!("frame {frame} is past the last frame, {}", dts.len().saturating_sub(1))));
            }
        }
        let dts_s = dts.iter().map(|dt| (dt * speed) as f32).collect();
        Ok(Self { graph, archetype: arch, dts_s, events, character })
    }

    /// The script's graph.
    #[must_use]
    pub fn graph(&self) -> &Arc<CompiledGraph> {
        &self.graph
    }

    /// The rig and clips the script names, when it has a `clipMap`.
    #[must_use]
    pub fn character(&self) -> Option<&ScriptCharacter> {
        self.character.as_ref()
    }

    /// Each frame's step in seconds, after the script's `speed`.
    #[must_use]
    pub fn dts_s(&self) -> &[f32] {
        &self.dts_s
    }

    /// Runs the script, calling `observe` after every frame's update; stops at the first error,
    /// the script's or the observer's.
    ///
    /// # Errors
    /// [`TraceError`] naming the JSON path of the first problem, or what `observe` returned.
    pub fn run_with<E: From<TraceError>>(&self, mut observe: impl FnMut(&TraceFrame<'_>) -> Result<(), E>) -> Result<Vec<TraceLine>, E> {
        let graph = &self.graph;
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(self.archetype.clone());
        let hero = crowd.spawn(kind).map_err(|source| TraceError::State { path: "$".to_owned(), source })?;
        let params: Vec<ParamId> = graph
            .parameters()
            .iter()
            .map(|p| crowd.param(kind, &p.name))
            .collect::<Result<_, _>>()
            .map_err(|source| TraceError::State { path: "stateGraph.parameters".to_owned(), source })?;
        let mut params_before = Vec::with_capacity(params.len());
        let mut lines = Vec::with_capacity(self.dts_s.len() * graph.layers().len());
        let mut t = 0.0f64;
        for (frame, &step) in self.dts_s.iter().enumerate() {
            for (i, e) in self.events.iter().enumerate() {
                if e.get("frame").and_then(Value::as_u64) == Some(frame as u64) {
                    apply_event(&mut crowd, kind, hero, e, &format!("events[{i}]"))?;
                }
            }
            params_before.clear();
            for &p in &params {
                params_before.push(crowd.get(p, hero).map_err(|source| TraceError::State { path: "$".to_owned(), source })?);
            }
            crowd.update(step).map_err(|source| TraceError::State { path: format!("dts[{frame}]"), source })?;
            t += f64::from(step);
            let first = lines.len();
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
                let arch = crowd.archetype(kind).map_err(|source| TraceError::State { path: "$".to_owned(), source })?;
                let events = crowd
                    .events(kind)
                    .map_err(|source| TraceError::State { path: "$".to_owned(), source })?
                    .iter()
                    .filter(|e| e.layer as usize == l)
                    .map(|e| (arch.event_name(e.event).unwrap_or_default().to_owned(), e.weight))
                    .collect();
                lines.push(TraceLine {
                    frame,
                    t,
                    layer: layer.name.clone(),
                    active_state: name(r.active_state),
                    previous_state: r.previous_state.map(name),
                    transitioning: r.transitioning,
                    transition_progress: r.transition_progress,
                    weights,
                    events,
                });
            }
            observe(&TraceFrame {
                frame,
                dt_s: step,
                t_s: t,
                crowd: &crowd,
                archetype: kind,
                character: hero,
                params_before: &params_before,
                lines: &lines[first..],
            })?;
        }
        Ok(lines)
    }
}

/// Reads `clipEvents` (keyed as `clips`, each an array of `{ "name", "time" }`) onto each leaf's
/// clip (in a script, clip `i` is leaf `i`'s); `lookup` gives a leaf's keys in the order tried.
fn add_clip_events<'k>(
    root: &Map<String, Value>,
    mut arch: Archetype,
    known: impl Fn(&str) -> bool,
    lookup: impl Fn(usize) -> Vec<&'k str>,
) -> Result<Archetype, TraceError> {
    let Some(map) = root.get("clipEvents") else {
        return Ok(arch);
    };
    let map = map.as_object().ok_or_else(|| bad("clipEvents", "expected an object of leaf or state name → events"))?;
    let mut lists = Vec::with_capacity(map.len());
    for (key, v) in map {
        let path = format!("clipEvents.{key}");
        if !known(key) {
            return Err(bad(path, "names no state or blend-tree leaf of the graph"));
        }
        let list = v.as_array().ok_or_else(|| bad(&path, "expected an array of { \"name\", \"time\" }"))?;
        let mut events = Vec::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            let name = e.get("name").and_then(Value::as_str).ok_or_else(|| bad(format!("{path}[{i}].name"), "expected an event name"))?;
            let time_s = e.get("time").map_or_else(|| Err(bad(format!("{path}[{i}]"), "missing `time`")), |t| number(t, &format!("{path}[{i}].time")))?;
            events.push(ClipEvent::new(name, time_s as f32));
        }
        lists.push((key.as_str(), events));
    }
    for leaf in 0..arch.graph().leaves().len() {
        let keys = lookup(leaf);
        if let Some((key, events)) = keys.iter().find_map(|k| lists.iter().find(|(key, _)| key == k)) {
            arch = arch
                .with_clip_events(leaf as u32, events)
                .map_err(|source| TraceError::State { path: format!("clipEvents.{key}"), source })?;
        }
    }
    Ok(arch)
}

/// Reads `character` and `clipMap`: which built-in character plays the script, and which of its
/// clips each leaf plays. `None` when the script has no `clipMap`.
fn parse_character(root: &Map<String, Value>, graph: &CompiledGraph, known: impl Fn(&str) -> bool) -> Result<Option<ScriptCharacter>, TraceError> {
    let name = match root.get("character") {
        None => "demo",
        Some(v) => v.as_str().ok_or_else(|| bad("character", "expected \"demo\" or \"demo64\""))?,
    };
    let demo = match name {
        "demo" => None,
        "demo64" => Some(true),
        _ => return Err(bad("character", format!("unknown character {name:?}; the built-in ones are \"demo\" and \"demo64\""))),
    };
    let Some(map) = root.get("clipMap") else {
        return Ok(None);
    };
    let map = map.as_object().ok_or_else(|| bad("clipMap", "expected an object of leaf or state name → clip name"))?;
    let demo = if demo.is_some() { DemoCharacter::humanoid_64() } else { DemoCharacter::humanoid() };
    for (key, v) in map {
        let path = format!("clipMap.{key}");
        if !known(key) {
            return Err(bad(path, "names no state or blend-tree leaf of the graph"));
        }
        let clip = v.as_str().ok_or_else(|| bad(&path, "expected a clip name"))?;
        if demo.clip(clip).is_none() {
            return Err(bad(path, format!("no clip {clip:?}; the {name} character has {}", crate::demo::CLIP_NAMES.join(", "))));
        }
    }
    let reference = demo.clip(crate::demo::IDLE).map(|c| c.frame(0).to_vec()).unwrap_or_default();
    let mut leaf_clips = Vec::with_capacity(graph.leaves().len());
    let mut leaf_clip_names = Vec::with_capacity(graph.leaves().len());
    for leaf in graph.leaves() {
        let state = graph.states().get(leaf.state as usize);
        let keys = [Some(leaf.path.as_str()), state.map(|s| s.name.as_str()), Some("*")];
        let Some(clip_name) = keys.into_iter().flatten().find_map(|k| map.get(k).and_then(Value::as_str)) else {
            return Err(bad("clipMap", format!("leaf {:?} has no clip: name it, its state, or \"*\"", leaf.path)));
        };
        let Some(clip) = demo.clip(clip_name) else {
            return Err(bad("clipMap", format!("no clip {clip_name:?}")));
        };
        let mut clip = clip.clone();
        if let Some(s) = state {
            clip.set_looping(s.looping);
            let additive = graph.layers().get(s.layer as usize).is_some_and(|l| l.blend == LayerBlend::Additive);
            if additive {
                clip = clip.to_additive(&reference);
            }
        }
        leaf_clips.push(clip);
        leaf_clip_names.push(clip_name.to_owned());
    }
    Ok(Some(ScriptCharacter { name: name.to_owned(), rig: demo.rig, leaf_clips, leaf_clip_names }))
}

fn apply_event(crowd: &mut Crowd, kind: ArchetypeId, hero: CharacterHandle, e: &Value, path: &str) -> Result<(), TraceError> {
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
