//! Trace scripts: one character through a graph, frame by frame (the `throng-trace` tool). A
//! tool on top of the library: it runs the state step and maps a script to a built-in character
//! (`demo`), so it sits above both, beside `plot`, which draws its timeline.
//!
//! A script is one JSON object:
//!
//! | key | meaning |
//! |-----|---------|
//! | `stateGraph` | the graph, either PlayCanvas form |
//! | `clips` | clip duration in seconds by leaf path (`"State.Child"`), by state name, or `"*"` for the rest |
//! | `dt` + `frames`, or `dts` | a fixed step for `frames` updates, or one step per update (at most [`MAX_TRACE_FRAMES`]) |
//! | `speed` | optional multiplier on every step (1 when absent) |
//! | `startPhase` | optional phase in [0, 1) the default states start at (`Crowd::spawn_phased`; 0 when absent) |
//! | `events` | `[{ "frame": n, "set": { name: value }, "trigger": [..], "triggerSingleFrame": [..], "resetTrigger": [..], "timeScale": s, "transitionTo": { "layer", "state", "time", "mode", "offset", "sync" }, "cutTo": { "layer", "state" }, "playOneShot": { "slot", "clip", "blendIn", "blendOut", "weight", "loop" }, "stopOneShot": { "slot" } }]`, applied before frame `n`'s update (`timeScale`: `Crowd::set_time_scale`; `transitionTo`, `cutTo`: `Crowd::transition_to`, `Crowd::cut_to`; `playOneShot`, `stopOneShot`: `Crowd::play_one_shot` (blends 0.2 s, weight 1, once by default), `Crowd::stop_one_shot`) |
//! | `oneShotClips` | optional clips outside the graph for `playOneShot`, name → duration in seconds (not with `clipMap`); `clipEvents` may name them |
//! | `character` | optional built-in character for poses: `"demo"` (default, 26 joints) or `"demo64"` |
//! | `clipMap` | optional clip of the character by leaf path, state name or `"*"`; a mapped leaf takes the clip's duration |
//! | `clipEvents` | optional animation events of each leaf's clip, keyed as `clips`: `[{ "name": "footstep", "time": 0.3 }]`, seconds |
//! | `clipMarkers` | optional sync markers of each leaf's clip, keyed and written as `clipEvents` (`[{ "name": "left", "time": 0.1 }]`), which `"sync": "marker"` transitions line up by |
//!
//! Each frame prints one line per layer: `frame`, `t` (seconds after the update), `layer`,
//! `activeState`, `previousState`, `transitioning`, `transitionProgress`, `weights` (each
//! state's share of the layer's pose) and, when the layer fired any, `events` (each with a
//! `count` when one step crossed it more than once).
//!
//! [`Script::write_json`] writes each line as it is made, names borrowed from the graph, so a
//! run's memory does not grow with its frames; [`run_script`] and [`Script::run_with`] collect
//! owned lines, for tests and short scripts. Every number a script gives must fit an `f32`, and
//! so must its steps after `speed` and their total ([`TraceError::Overflow`]), so every number
//! printed is finite and the output is JSON.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::clip::{Clip, ClipEvent};
use crate::demo::DemoCharacter;
use crate::graph::{
    CompiledGraph, GraphError, Inertialization, LayerBlend, ParamKind, ParamValue, PhaseSync, SwitchMode,
};
use crate::rig::Rig;

use crate::state::{
    Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, OneShot, ParamId, StartPhases, StateError,
    TransitionCommand,
};

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
    /// A number of the script does not fit the `f32` the state step holds: a value past
    /// `f32::MAX`, a step times `speed`, or the steps' total (the time printed as `t`).
    #[error("script at {path}: {value} does not fit an f32 ({what})")]
    Overflow {
        /// JSON path of the number, e.g. `dts[3]` or `speed`.
        path: String,
        /// The value, or what it came to.
        value: f64,
        /// Which number overflowed.
        what: &'static str,
    },
    /// Writing the trace's lines failed ([`Script::write_json`]).
    #[error("writing frame {frame}: {message}")]
    Write {
        /// The frame being written.
        frame: usize,
        /// The writer's error.
        message: String,
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
    /// Animation events the layer fired this frame, in order: name, weight, and times crossed
    /// (1 unless one step spanned several loops of the clip).
    pub events: Vec<(String, f32, u32)>,
}

impl TraceLine {
    /// The line as compact JSON, numbers printed at `f32` precision.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let weights: Vec<(&str, f32)> = self.weights.iter().map(|(n, w)| (n.as_str(), *w)).collect();
        let events: Vec<(&str, f32, u32)> = self.events.iter().map(|(n, w, c)| (n.as_str(), *w, *c)).collect();
        let row = TraceRow {
            frame: self.frame,
            t: self.t,
            layer: &self.layer,
            active_state: &self.active_state,
            previous_state: self.previous_state.as_deref(),
            transitioning: self.transitioning,
            transition_progress: self.transition_progress,
            weights: &weights,
            events: &events,
        };
        // Writing to a `Vec` cannot fail.
        let _ = row.write_json(&mut out);
        out.pop();
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// One layer of one frame of a trace, its names borrowed from the script's graph: what
/// [`Script::run_each`] shows and [`Script::write_json`] writes, without copying a name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRow<'a> {
    /// Frame number from 0.
    pub frame: usize,
    /// Seconds elapsed after this frame's update.
    pub t: f64,
    /// Layer name.
    pub layer: &'a str,
    /// Active state name.
    pub active_state: &'a str,
    /// The state the last transition left.
    pub previous_state: Option<&'a str>,
    /// Whether a transition is in flight.
    pub transitioning: bool,
    /// Its linear progress, 1 when none is in flight.
    pub transition_progress: f32,
    /// Each state's share of the layer's pose (states with a share above 0).
    pub weights: &'a [(&'a str, f32)],
    /// Animation events the layer fired this frame, in order: name, weight, times crossed.
    pub events: &'a [(&'a str, f32, u32)],
}

impl TraceRow<'_> {
    /// The row with its names copied: a [`TraceLine`].
    #[must_use]
    pub fn to_line(&self) -> TraceLine {
        TraceLine {
            frame: self.frame,
            t: self.t,
            layer: self.layer.to_owned(),
            active_state: self.active_state.to_owned(),
            previous_state: self.previous_state.map(str::to_owned),
            transitioning: self.transitioning,
            transition_progress: self.transition_progress,
            weights: self.weights.iter().map(|&(n, w)| (n.to_owned(), w)).collect(),
            events: self.events.iter().map(|&(n, w, c)| (n.to_owned(), w, c)).collect(),
        }
    }

    /// Writes the row as one line of compact JSON and a newline, numbers at `f32` precision,
    /// straight to `out`: nothing is built in memory first.
    ///
    /// # Errors
    /// What `out` returns.
    pub fn write_json(&self, out: &mut impl Write) -> std::io::Result<()> {
        let name = |out: &mut dyn Write, n: &str| serde_json::to_writer(out, n).map_err(std::io::Error::from);
        write!(out, "{{\"frame\":{},\"t\":", self.frame)?;
        json_number(&mut *out, self.t as f32)?;
        out.write_all(b",\"layer\":")?;
        name(&mut *out, self.layer)?;
        out.write_all(b",\"activeState\":")?;
        name(&mut *out, self.active_state)?;
        out.write_all(b",\"previousState\":")?;
        match self.previous_state {
            Some(p) => name(&mut *out, p)?,
            None => out.write_all(b"null")?,
        }
        write!(out, ",\"transitioning\":{},\"transitionProgress\":", self.transitioning)?;
        json_number(&mut *out, self.transition_progress)?;
        out.write_all(b",\"weights\":{")?;
        for (i, &(n, w)) in self.weights.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            name(&mut *out, n)?;
            out.write_all(b":")?;
            json_number(&mut *out, w)?;
        }
        out.write_all(b"}")?;
        if !self.events.is_empty() {
            out.write_all(b",\"events\":[")?;
            for (i, &(n, w, count)) in self.events.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                out.write_all(b"{\"name\":")?;
                name(&mut *out, n)?;
                out.write_all(b",\"weight\":")?;
                json_number(&mut *out, w)?;
                if count > 1 {
                    write!(out, ",\"count\":{count}")?;
                }
                out.write_all(b"}")?;
            }
            out.write_all(b"]")?;
        }
        out.write_all(b"}\n")
    }
}

/// A number as JSON. A script's numbers are checked to fit an `f32` and the state step keeps
/// what it computes from them finite; should one not be, it is written `null`, never as the
/// `inf` or `NaN` that JSON lacks.
fn json_number(out: &mut impl Write, v: f32) -> std::io::Result<()> {
    if v.is_finite() { write!(out, "{v}") } else { out.write_all(b"null") }
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

/// `v` when it fits an `f32` (JSON numbers are `f64`; `1e39` is finite there and not here).
fn fits_f32(v: f64, path: &str, what: &'static str) -> Result<f64, TraceError> {
    if (v as f32).is_finite() { Ok(v) } else { Err(TraceError::Overflow { path: path.to_owned(), value: v, what }) }
}

fn names(v: &Value, path: &str) -> Result<Vec<String>, TraceError> {
    let list = v.as_array().ok_or_else(|| bad(path, "expected an array of parameter names"))?;
    list.iter()
        .enumerate()
        .map(|(i, n)| {
            n.as_str().map(str::to_owned).ok_or_else(|| bad(format!("{path}[{i}]"), "expected a parameter name"))
        })
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
    /// The script's events as (frame, index in the script, event), sorted by frame (stably, so
    /// a frame's events keep the script's order): a run walks them once, with a cursor.
    events: Vec<(usize, usize, Value)>,
    character: Option<ScriptCharacter>,
    /// Where the character's default states start (`startPhase`), checked when it spawns.
    start_phase: f32,
    /// The `oneShotClips` by name; clip `leaves + i` of the archetype is the `i`-th.
    one_shot_clips: Vec<String>,
}

/// What an observer of [`Script::run_each`] (or [`Script::run_with`]) sees after each frame's update.
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
    pub lines: &'a [TraceRow<'a>],
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
            let given =
                lookup(leaf).into_iter().find_map(|key| durations.iter().find(|(k, _)| *k == key)).map(|&(_, d)| d);
            mapped.or(given).map(|duration_s| ClipBinding { clip: leaf as u32, duration_s })
        })
        .map_err(|source| TraceError::State { path: "clips".to_owned(), source })?;
        let (arch, one_shot_clips) = add_one_shot_clips(root, arch, character.is_some())?;
        let known_or_one_shot = |key: &str| known(key) || one_shot_clips.iter().any(|c| c == key);
        let arch = add_clip_moments(
            root,
            "clipEvents",
            arch,
            known_or_one_shot,
            lookup,
            &one_shot_clips,
            Archetype::with_clip_events,
        )?;
        // Sync markers line up graph transitions, so only the graph's leaves carry them.
        let arch = add_clip_moments(root, "clipMarkers", arch, known, lookup, &[], Archetype::with_clip_markers)?;

        let speed = match root.get("speed") {
            None => 1.0,
            Some(v) => fits_f32(number(v, "speed")?, "speed", "the speed")?,
        };
        let dts: Vec<f64> = match (root.get("dt"), root.get("dts")) {
            (Some(_), Some(_)) => return Err(bad("$", "give `dt` and `frames`, or `dts`, not both")),
            (Some(dt), None) => {
                let dt = fits_f32(number(dt, "dt")?, "dt", "the step")?;
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
                let all: Vec<f64> = list
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        number(v, &format!("dts[{i}]")).and_then(|dt| fits_f32(dt, &format!("dts[{i}]"), "the step"))
                    })
                    .collect::<Result<_, _>>()?;
                match root.get("frames").map(Value::as_u64) {
                    None => all,
                    Some(Some(n)) if n as usize <= all.len() => all[..n as usize].to_vec(),
                    Some(_) => return Err(bad("frames", "expected a whole number no larger than the length of `dts`")),
                }
            }
            (None, None) => return Err(bad("$", "missing `dt` (with `frames`) or `dts`")),
        };

        let list = match root.get("events") {
            None => &[][..],
            Some(v) => v.as_array().map(Vec::as_slice).ok_or_else(|| bad("events", "expected an array"))?,
        };
        let mut events = Vec::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            let path = format!("events[{i}]");
            let obj = e.as_object().ok_or_else(|| bad(&path, "an event is an object"))?;
            for key in obj.keys() {
                let keys = [
                    "frame",
                    "set",
                    "trigger",
                    "triggerSingleFrame",
                    "resetTrigger",
                    "timeScale",
                    "transitionTo",
                    "cutTo",
                    "playOneShot",
                    "stopOneShot",
                ];
                if !keys.contains(&key.as_str()) {
                    return Err(bad(format!("{path}.{key}"), "unknown event key"));
                }
            }
            let frame = obj
                .get("frame")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(format!("{path}.frame"), "expected a whole frame number"))?;
            if frame as usize >= dts.len() {
                return Err(bad(
                    format!("{path}.frame"),
                    format!("frame {frame} is past the last frame, {}", dts.len().saturating_sub(1)),
                ));
            }
            events.push((frame as usize, i, e.clone()));
        }
        events.sort_by_key(|&(frame, _, _)| frame);
        // Each step after `speed`, and the time they add up to (printed as `t`), fit an f32.
        let mut dts_s = Vec::with_capacity(dts.len());
        let mut total_s = 0.0f64;
        for (i, dt) in dts.iter().enumerate() {
            let path = || if root.contains_key("dts") { format!("dts[{i}]") } else { "dt".to_owned() };
            let step = dt * speed;
            if (step as f32).is_infinite() {
                return Err(TraceError::Overflow { path: path(), value: step, what: "the step times `speed`" });
            }
            total_s += step;
            if (total_s as f32).is_infinite() {
                return Err(TraceError::Overflow {
                    path: path(),
                    value: total_s,
                    what: "the time the steps add up to",
                });
            }
            dts_s.push(step as f32);
        }
        let start_phase = match root.get("startPhase") {
            None => 0.0,
            Some(v) => fits_f32(number(v, "startPhase")?, "startPhase", "the start phase")? as f32,
        };
        Ok(Self { graph, archetype: arch, dts_s, events, character, start_phase, one_shot_clips })
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
    /// the script's or the observer's. Returns every frame's lines, names copied: for long runs
    /// use [`Script::run_each`] or [`Script::write_json`], whose memory does not grow with the
    /// frames.
    ///
    /// # Errors
    /// [`TraceError`] naming the JSON path of the first problem, or what `observe` returned.
    pub fn run_with<E: From<TraceError>>(
        &self,
        mut observe: impl FnMut(&TraceFrame<'_>) -> Result<(), E>,
    ) -> Result<Vec<TraceLine>, E> {
        let mut lines = Vec::with_capacity(self.dts_s.len() * self.graph.layers().len());
        self.run_each(|f| {
            lines.extend(f.lines.iter().map(TraceRow::to_line));
            observe(f)
        })?;
        Ok(lines)
    }

    /// Writes the trace to `out`, one JSON line per layer per frame, each as soon as its frame
    /// has run: memory stays that of one frame however many frames the script has.
    ///
    /// # Errors
    /// [`TraceError`] naming the JSON path of the first problem; [`TraceError::Write`] when
    /// `out` fails.
    pub fn write_json(&self, out: &mut impl Write) -> Result<(), TraceError> {
        self.run_each(|f| {
            let write = |e: std::io::Error| TraceError::Write { frame: f.frame, message: e.to_string() };
            for row in f.lines {
                row.write_json(&mut *out).map_err(write)?;
            }
            Ok::<(), TraceError>(())
        })?;
        out.flush().map_err(|e| TraceError::Write { frame: self.dts_s.len().saturating_sub(1), message: e.to_string() })
    }

    /// Runs the script, calling `observe` after every frame's update with that frame's rows,
    /// their names borrowed; keeps nothing from frame to frame. Stops at the first error, the
    /// script's or the observer's.
    ///
    /// # Errors
    /// [`TraceError`] naming the JSON path of the first problem, or what `observe` returned.
    pub fn run_each<E: From<TraceError>>(
        &self,
        mut observe: impl FnMut(&TraceFrame<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let graph = &self.graph;
        let state_error = |path: &str| {
            let path = path.to_owned();
            move |source| TraceError::State { path, source }
        };
        let mut crowd = Crowd::new();
        let kind = crowd.add_archetype(self.archetype.clone());
        let hero = crowd
            .spawn_phased(kind, StartPhases::Explicit(&[self.start_phase]))
            .map_err(state_error("startPhase"))?
            .into_iter()
            .next()
            .ok_or_else(|| bad("startPhase", "no character spawned"))?;
        let params: Vec<ParamId> = graph
            .parameters()
            .iter()
            .map(|p| crowd.param(kind, &p.name))
            .collect::<Result<_, _>>()
            .map_err(state_error("stateGraph.parameters"))?;
        let mut params_before = Vec::with_capacity(params.len());
        let num_layers = graph.layers().len();
        // Per frame: every layer's weights and events back to back, and each layer's ranges.
        let mut weights: Vec<(&str, f32)> = Vec::with_capacity(2 * num_layers);
        let mut events: Vec<(&str, f32, u32)> = Vec::new();
        let mut spans = Vec::with_capacity(num_layers);
        let mut next_event = 0;
        let mut t = 0.0f64;
        for (frame, &step) in self.dts_s.iter().enumerate() {
            while let Some((_, i, e)) = self.events.get(next_event).filter(|(f, _, _)| *f == frame) {
                apply_event(&mut crowd, kind, hero, e, &format!("events[{i}]"), &self.one_shot_clips)?;
                next_event += 1;
            }
            params_before.clear();
            for &p in &params {
                params_before.push(crowd.get(p, hero).map_err(state_error("$"))?);
            }
            crowd.update(step).map_err(state_error(&format!("dts[{frame}]")))?;
            t += f64::from(step);
            let fired = crowd.events(kind).map_err(state_error("$"))?;
            weights.clear();
            events.clear();
            spans.clear();
            let states = graph.states();
            let name = move |s: usize| states[s].name.as_str();
            for l in 0..num_layers {
                let r = crowd.readback(hero, l).map_err(state_error("$"))?;
                let first_weight = weights.len();
                weights.push((name(r.active_state), r.active_weight));
                if r.transitioning
                    && r.previous_weight > 0.0
                    && let Some(p) = r.previous_state
                {
                    match weights[first_weight..].iter_mut().find(|(n, _)| *n == name(p)) {
                        Some(w) => w.1 += r.previous_weight,
                        None => weights.push((name(p), r.previous_weight)),
                    }
                }
                let mut kept = first_weight;
                for i in first_weight..weights.len() {
                    if weights[i].1 > 0.0 {
                        weights[kept] = weights[i];
                        kept += 1;
                    }
                }
                weights.truncate(kept);
                let first_event = events.len();
                // The crowd's archetype is a clone of the script's: the same event ids and names.
                events.extend(
                    fired
                        .iter()
                        .filter(|e| e.layer as usize == l)
                        .map(|e| (self.archetype.event_name(e.event).unwrap_or_default(), e.weight, e.count)),
                );
                spans.push((r, first_weight..weights.len(), first_event..events.len()));
            }
            let rows: Vec<TraceRow<'_>> = spans
                .iter()
                .zip(graph.layers())
                .map(|((r, w, e), layer)| TraceRow {
                    frame,
                    t,
                    layer: &layer.name,
                    active_state: name(r.active_state),
                    previous_state: r.previous_state.map(name),
                    transitioning: r.transitioning,
                    transition_progress: r.transition_progress,
                    weights: &weights[w.clone()],
                    events: &events[e.clone()],
                })
                .collect();
            observe(&TraceFrame {
                frame,
                dt_s: step,
                t_s: t,
                crowd: &crowd,
                archetype: kind,
                character: hero,
                params_before: &params_before,
                lines: &rows,
            })?;
        }
        Ok(())
    }
}

/// Reads `clipEvents` or `clipMarkers` (`field`; keyed as `clips`, each an array of `{ "name",
/// "time" }`) onto each leaf's clip (in a script, clip `i` is leaf `i`'s) and each of
/// `one_shot_clips` through `add` (`Archetype::with_clip_events` or `with_clip_markers`);
/// `lookup` gives a leaf's keys in the order tried.
fn add_clip_moments<'k>(
    root: &Map<String, Value>,
    field: &str,
    mut arch: Archetype,
    known: impl Fn(&str) -> bool,
    lookup: impl Fn(usize) -> Vec<&'k str>,
    one_shot_clips: &[String],
    add: fn(Archetype, u32, &[ClipEvent]) -> Result<Archetype, StateError>,
) -> Result<Archetype, TraceError> {
    let Some(map) = root.get(field) else {
        return Ok(arch);
    };
    let map = map.as_object().ok_or_else(|| bad(field, "expected an object of leaf or state name → moments"))?;
    let mut lists = Vec::with_capacity(map.len());
    for (key, v) in map {
        let path = format!("{field}.{key}");
        if !known(key) {
            return Err(bad(path, "names no state or blend-tree leaf of the graph"));
        }
        let list = v.as_array().ok_or_else(|| bad(&path, "expected an array of { \"name\", \"time\" }"))?;
        let mut events = Vec::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            let name = e
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("{path}[{i}].name"), "expected an event name"))?;
            let time_s = e.get("time").map_or_else(
                || Err(bad(format!("{path}[{i}]"), "missing `time`")),
                |t| number(t, &format!("{path}[{i}].time")),
            )?;
            events.push(ClipEvent::new(name, time_s as f32));
        }
        lists.push((key.as_str(), events));
    }
    let leaves = arch.graph().leaves().len();
    for leaf in 0..leaves {
        let keys = lookup(leaf);
        if let Some((key, events)) = keys.iter().find_map(|k| lists.iter().find(|(key, _)| key == k)) {
            arch = add(arch, leaf as u32, events)
                .map_err(|source| TraceError::State { path: format!("{field}.{key}"), source })?;
        }
    }
    for (i, name) in one_shot_clips.iter().enumerate() {
        if let Some((key, events)) = lists.iter().find(|(key, _)| key == name) {
            arch = add(arch, (leaves + i) as u32, events)
                .map_err(|source| TraceError::State { path: format!("{field}.{key}"), source })?;
        }
    }
    Ok(arch)
}

/// Reads `oneShotClips` (name → seconds): clips outside the graph, numbered after the leaves'
/// (in a script, clip `i` is leaf `i`'s), that `playOneShot` plays by name.
fn add_one_shot_clips(
    root: &Map<String, Value>,
    arch: Archetype,
    mapped: bool,
) -> Result<(Archetype, Vec<String>), TraceError> {
    let Some(map) = root.get("oneShotClips") else {
        return Ok((arch, Vec::new()));
    };
    if mapped {
        return Err(bad("oneShotClips", "one-shot clips are durations, not clips of a `clipMap` character"));
    }
    let map = map.as_object().ok_or_else(|| bad("oneShotClips", "expected an object of durations in seconds"))?;
    let mut durations = vec![0.0; arch.graph().leaves().len()];
    let mut names = Vec::with_capacity(map.len());
    for (name, v) in map {
        let path = format!("oneShotClips.{name}");
        let duration_s = number(v, &path)? as f32;
        if !(duration_s.is_finite() && duration_s > 0.0) {
            return Err(bad(path, "a clip duration is seconds, finite and > 0"));
        }
        durations.push(duration_s);
        names.push(name.clone());
    }
    let arch = arch
        .with_clip_durations(&durations)
        .map_err(|source| TraceError::State { path: "oneShotClips".to_owned(), source })?;
    Ok((arch, names))
}

/// A script's one-shot: `{ "slot": layer, "clip": name of `oneShotClips`, "blendIn": s,
/// "blendOut": s, "weight": w, "loop": bool }` (0.2 s blends, weight 1, once when absent).
fn one_shot(v: &Value, path: &str, leaves: usize, clips: &[String]) -> Result<(String, OneShot), TraceError> {
    let obj = v.as_object().ok_or_else(|| bad(path, "expected an object with `slot` and `clip`"))?;
    let allowed = ["slot", "clip", "blendIn", "blendOut", "weight", "loop"];
    if let Some(key) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!("{path}.{key}"), "unknown key"));
    }
    let slot = obj
        .get("slot")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{path}.slot"), "expected a slot layer name"))?;
    let clip =
        obj.get("clip").and_then(Value::as_str).ok_or_else(|| bad(format!("{path}.clip"), "expected a clip name"))?;
    let index = clips
        .iter()
        .position(|c| c == clip)
        .ok_or_else(|| bad(format!("{path}.clip"), "names no clip of `oneShotClips`"))?;
    let number_or = |key: &str, default: f32| -> Result<f32, TraceError> {
        match obj.get(key) {
            None => Ok(default),
            Some(v) => {
                let p = format!("{path}.{key}");
                Ok(fits_f32(number(v, &p)?, &p, "the number")? as f32)
            }
        }
    };
    let looping = match obj.get("loop") {
        None => false,
        Some(v) => v.as_bool().ok_or_else(|| bad(format!("{path}.loop"), "expected true or false"))?,
    };
    let shot = OneShot {
        clip: (leaves + index) as u32,
        blend_in_s: number_or("blendIn", 0.2)?,
        blend_out_s: number_or("blendOut", 0.2)?,
        weight: number_or("weight", 1.0)?,
        looping,
    };
    Ok((slot.to_owned(), shot))
}

/// Reads `character` and `clipMap`: which built-in character plays the script, and which of its
/// clips each leaf plays. `None` when the script has no `clipMap`.
fn parse_character(
    root: &Map<String, Value>,
    graph: &CompiledGraph,
    known: impl Fn(&str) -> bool,
) -> Result<Option<ScriptCharacter>, TraceError> {
    let name = match root.get("character") {
        None => "demo",
        Some(v) => v.as_str().ok_or_else(|| bad("character", "expected \"demo\" or \"demo64\""))?,
    };
    let demo = match name {
        "demo" => None,
        "demo64" => Some(true),
        _ => {
            return Err(bad(
                "character",
                format!("unknown character {name:?}; the built-in ones are \"demo\" and \"demo64\""),
            ));
        }
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
            return Err(bad(
                path,
                format!("no clip {clip:?}; the {name} character has {}", crate::demo::CLIP_NAMES.join(", ")),
            ));
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

/// An imperative transition of a script: `{ "layer": name, "state": path, "time": s, "mode":
/// "cut" | "frozen" | "crossfade" | "inertialize", "offset": f, "sync": "phase" | "marker" }`
/// (`layer` the first when absent, `time` 0, `mode` the graph's default, `offset` 0, no sync),
/// or for `cutTo` the layer and state alone.
fn transition_command(
    crowd: &Crowd,
    kind: ArchetypeId,
    v: &Value,
    path: &str,
    cut: bool,
) -> Result<(usize, String, TransitionCommand), TraceError> {
    let obj = v.as_object().ok_or_else(|| bad(path, "expected an object with `state`"))?;
    let allowed: &[&str] =
        if cut { &["layer", "state"] } else { &["layer", "state", "time", "mode", "offset", "sync"] };
    if let Some(key) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!("{path}.{key}"), "unknown key"));
    }
    let graph = crowd.archetype(kind).map_err(|source| TraceError::State { path: path.to_owned(), source })?.graph();
    let layer = match obj.get("layer") {
        None => 0,
        Some(name) => {
            let name = name.as_str().ok_or_else(|| bad(format!("{path}.layer"), "expected a layer name"))?;
            graph
                .layers()
                .iter()
                .position(|l| l.name == name)
                .ok_or_else(|| bad(format!("{path}.layer"), "names no layer of the graph"))?
        }
    };
    let state = obj
        .get("state")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{path}.state"), "expected a state name"))?
        .to_owned();
    if cut {
        return Ok((layer, state, TransitionCommand::CUT));
    }
    let seconds = |key: &str| -> Result<f32, TraceError> {
        match obj.get(key) {
            None => Ok(0.0),
            Some(v) => {
                let p = format!("{path}.{key}");
                Ok(fits_f32(number(v, &p)?, &p, "the number")? as f32)
            }
        }
    };
    let switch = match obj.get("mode").map(|m| m.as_str()) {
        None => None,
        Some(Some("cut")) => Some(SwitchMode::Cut),
        Some(Some("frozen")) => Some(SwitchMode::Frozen),
        Some(Some("crossfade")) => Some(SwitchMode::Crossfade),
        Some(Some("inertialize")) => {
            Some(SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: false }))
        }
        Some(_) => {
            return Err(bad(format!("{path}.mode"), "expected \"cut\", \"frozen\", \"crossfade\" or \"inertialize\""));
        }
    };
    let sync = match obj.get("sync").map(|m| m.as_str()) {
        None => PhaseSync::Offset,
        Some(Some("phase")) => PhaseSync::Phase,
        Some(Some("marker")) => PhaseSync::Marker,
        Some(_) => return Err(bad(format!("{path}.sync"), "expected \"phase\" or \"marker\"")),
    };
    let command =
        TransitionCommand { switch, offset: seconds("offset")?, sync, ..TransitionCommand::blend(seconds("time")?) };
    Ok((layer, state, command))
}

fn apply_event(
    crowd: &mut Crowd,
    kind: ArchetypeId,
    hero: CharacterHandle,
    e: &Value,
    path: &str,
    one_shot_clips: &[String],
) -> Result<(), TraceError> {
    let state_err = |p: String| move |source| TraceError::State { path: p, source };
    if let Some(set) = e.get("set") {
        let set =
            set.as_object().ok_or_else(|| bad(format!("{path}.set"), "expected an object of parameter values"))?;
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
                    let x = n
                        .as_i64()
                        .and_then(|x| i32::try_from(x).ok())
                        .ok_or_else(|| bad(&p, "expected a 32-bit integer"))?;
                    crowd.set_int(param, &[hero], &[x]).map_err(state_err(p))?;
                }
                (Some(ParamKind::Bool), Value::Bool(b)) => {
                    crowd.set_bool(param, &[hero], &[*b]).map_err(state_err(p))?
                }
                (Some(ParamKind::Trigger), Value::Bool(true)) => {
                    crowd.set_trigger(param, &[hero], false).map_err(state_err(p))?;
                }
                (Some(ParamKind::Trigger), Value::Bool(false)) => {
                    crowd.reset_trigger(param, &[hero]).map_err(state_err(p))?
                }
                (Some(k), _) => return Err(bad(p, format!("value does not suit a {} parameter", k.name()))),
                (None, _) => return Err(bad(p, "no such parameter")),
            }
        }
    }
    if let Some(v) = e.get("timeScale") {
        let p = format!("{path}.timeScale");
        let scale = fits_f32(number(v, &p)?, &p, "the time scale")? as f32;
        crowd.set_time_scale(&[hero], &[scale]).map_err(state_err(p))?;
    }
    for key in ["transitionTo", "cutTo"] {
        let Some(v) = e.get(key) else { continue };
        let p = format!("{path}.{key}");
        let (layer, state, command) = transition_command(crowd, kind, v, &p, key == "cutTo")?;
        crowd.transition_to(&[hero], layer, &state, command).map_err(state_err(p))?;
    }
    if let Some(v) = e.get("playOneShot") {
        let p = format!("{path}.playOneShot");
        let leaves = crowd.archetype(kind).map_err(state_err(p.clone()))?.graph().leaves().len();
        let (slot, shot) = one_shot(v, &p, leaves, one_shot_clips)?;
        crowd.play_one_shot(&[hero], &slot, shot).map_err(state_err(p))?;
    }
    if let Some(v) = e.get("stopOneShot") {
        let p = format!("{path}.stopOneShot");
        let slot = v
            .get("slot")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{p}.slot"), "expected a slot layer name"))?;
        crowd.stop_one_shot(&[hero], slot).map_err(state_err(p))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Events given in any order are kept sorted by frame, each once, so a run applies them
    /// with one cursor: its work is frames + events, not frames × events.
    #[test]
    fn script_events_are_scheduled_by_frame_and_walked_once() {
        let text = r#"{ "stateGraph": { "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "Idle" }],
            "transitions": [{ "from": "START", "to": "Idle" }] }],
            "parameters": { "x": { "name": "x", "type": "FLOAT", "value": 0 } } },
            "clips": { "*": 1 }, "dt": 0.1, "frames": 4,
            "events": [{ "frame": 2, "set": { "x": 1 } }, { "frame": 0, "set": { "x": 2 } },
                       { "frame": 2, "set": { "x": 3 } }, { "frame": 1, "set": { "x": 4 } }] }"#;
        let script = Script::parse(text).unwrap();
        let order: Vec<(usize, usize)> = script.events.iter().map(|&(frame, i, _)| (frame, i)).collect();
        assert_eq!(order, [(0, 1), (1, 3), (2, 0), (2, 2)], "by frame, the script's order within one");
        let mut seen = Vec::new();
        script
            .run_each(|f| {
                seen.push(f.params_before[0]);
                Ok::<(), TraceError>(())
            })
            .unwrap();
        // Frame 2's two events both apply before its update, the later one last.
        let x = |v| ParamValue::Float(v);
        assert_eq!(seen, [x(2.0), x(4.0), x(3.0), x(3.0)]);
    }
}
