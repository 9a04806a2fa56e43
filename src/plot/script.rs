//! Fills a [`Timeline`] from a trace script: the state step for bands, weights and
//! parameters, and, when the script maps leaves to a character's clips, the CPU evaluator for
//! poses, jumps and clips sampled.

use glam::{Mat4, Vec3};

use crate::eval::frame_layers::{EvalContext, FrameJob};
use crate::graph::{self, ParamValue};
use crate::program::{LayerProgram, LayerSetup, MaskError, OutputLayout};
use crate::state::{ParamId, StateError};
use crate::trace::{Script, ScriptCharacter, TraceError, TraceFrame, TraceLine, TraceRow};

use super::{LayerFrame, LayerTrack, Mark, MarkKind, ParamTrack, PlotError, Timeline};

/// What [`from_script`] puts in [`Timeline::jump_cm`], as printed beside the row.
///
/// Per frame, over every joint (model space, relative to the root joint so root motion and its
/// loop wraps do not count), how far the joint lands from where its own motion would have
/// carried it: the distance between this frame's step `p(t) − p(t−1)` and the step of the frame
/// before, or of the frame before that, whichever is closer. Smooth motion scores about
/// `acceleration × dt²` (under a centimetre or two for a walk at 60 Hz); a pop scores the
/// distance the joint leapt, once: the frame after a pop steps like the frame before it, so the
/// older step excuses it. Seed 000 measures instead, on the frame a switch starts, the distance
/// from where the old state alone would have put the joint; the two agree to within the old
/// state's own `acceleration × dt²`, and this one needs no second evaluation and also catches
/// pops inside a state (a blend-tree parameter that steps, say).
pub const JUMP_MEASURE: &str = "vs. extrapolated";

fn value_of(v: ParamValue) -> f32 {
    match v {
        ParamValue::Float(x) => x,
        ParamValue::Int(i) => i as f32,
        ParamValue::Bool(b) | ParamValue::Trigger(b) => f32::from(u8::from(b)),
    }
}

/// Per-frame pose evaluation of the script's one character.
struct Poser<'a> {
    character: &'a ScriptCharacter,
    setups: Vec<LayerSetup>,
    context: EvalContext,
    output: Vec<f32>,
    bind_positions: Vec<Vec3>,
    history: Vec<Vec<Vec3>>,
}

impl<'a> Poser<'a> {
    fn new(character: &'a ScriptCharacter, graph: &graph::CompiledGraph) -> Result<Self, PlotError> {
        let rig = &character.rig;
        let setups = crate::setup::layer_setups(graph, rig).map_err(|e| {
            let (MaskError::UnknownJoint { joint, .. } | MaskError::BadWeight { joint, .. }) = e.source;
            PlotError::Mask { layer: e.name, joint, character: character.name.clone() }
        })?;
        let joints = rig.num_joints();
        // Joint j sits at skin_j × (bind position of j): skinning is model × inverse bind.
        let bind_positions = rig.inverse_bind().iter().map(|ib| ib.inverse().w_axis.truncate()).collect();
        Ok(Self {
            character,
            context: EvalContext::new(1, setups.len(), joints),
            setups,
            output: vec![0.0; joints * OutputLayout::Mat4.floats_per_joint()],
            bind_positions,
            history: Vec::with_capacity(4),
        })
    }

    /// Evaluates the frame; returns (worst jump in cm, clips sampled).
    fn frame(&mut self, f: &TraceFrame<'_>) -> Result<(f32, u32), PlotError> {
        let programs = f.crowd.programs(f.archetype).map_err(state_error)?;
        let samples = f.crowd.samples(f.archetype).map_err(state_error)?;
        let mut sampled = [0u32];
        // The low-level job: the trace runner owns the crowd and hands each frame to the plot.
        FrameJob {
            rig: &self.character.rig,
            clips: &self.character.leaf_clips,
            layers: &self.setups,
            samples,
            programs,
            dt_s: f.dt_s,
            context: &mut self.context,
            layout: OutputLayout::Mat4,
            output: &mut self.output,
            clips_sampled: &mut sampled,
            root_motion: &mut [],
        }
        .run()
        .map_err(|source| PlotError::Eval { frame: f.frame, source })?;
        let mut positions: Vec<Vec3> = self
            .output
            .chunks_exact(16)
            .zip(&self.bind_positions)
            .map(|(m, b)| Mat4::from_cols_slice(m).transform_point3(*b))
            .collect();
        let root = positions.first().copied().unwrap_or(Vec3::ZERO);
        positions.iter_mut().for_each(|p| *p -= root);
        // history = [p(t−3), p(t−2), p(t−1)].
        let jump_m = match self.history.as_slice() {
            [a, b, c] => (0..positions.len())
                .map(|j| {
                    let step = positions[j] - c[j];
                    step.distance(c[j] - b[j]).min(step.distance(b[j] - a[j]))
                })
                .fold(0.0, f32::max),
            _ => 0.0,
        };
        if self.history.len() == 3 {
            self.history.remove(0);
        }
        self.history.push(positions);
        Ok((jump_m * 100.0, sampled[0]))
    }
}

/// Runs `script` and records everything a timeline shows: per layer the active state,
/// transitions and weights; every graph parameter as each update read it, with a mark where it
/// changed and where triggers were set, consumed or expired; and, when the script has a
/// `clipMap`, the worst joint jump ([`JUMP_MEASURE`]) and clips sampled per frame. Returns the
/// trace's lines too, as [`crate::trace::run_script`] gives them.
///
/// # Errors
/// [`PlotError::Trace`] for a bad script, [`PlotError::Mask`] for a mask joint the character
/// lacks, [`PlotError::Eval`] if pose evaluation refuses a frame.
pub fn from_script(script: &Script, title: &str) -> Result<(Timeline, Vec<TraceLine>), PlotError> {
    let mut lines = Vec::with_capacity(script.dts_s().len() * script.graph().layers().len());
    let timeline = from_script_each(script, title, |f| {
        lines.extend(f.lines.iter().map(TraceRow::to_line));
        Ok(())
    })?;
    Ok((timeline, lines))
}

/// As [`from_script`], but hands each frame to `each` as it runs (`throng-trace --plot` writes
/// its lines from there) instead of collecting the lines.
///
/// # Errors
/// As [`from_script`], and what `each` returns.
pub fn from_script_each(
    script: &Script,
    title: &str,
    mut each: impl FnMut(&TraceFrame<'_>) -> Result<(), PlotError>,
) -> Result<Timeline, PlotError> {
    let graph = std::sync::Arc::clone(script.graph());
    let mut timeline = Timeline::new(title, Vec::with_capacity(script.dts_s().len()));
    for layer in graph.layers() {
        let names = graph.states()[layer.states.range()].iter().map(|s| s.name.clone()).collect();
        timeline.layers.push(LayerTrack::new(layer.name.clone(), names));
    }
    for p in graph.parameters() {
        timeline.params.push(ParamTrack {
            name: p.name.clone(),
            kind: p.slot.kind,
            values: Vec::new(),
            marks: Vec::new(),
        });
    }
    let mut poser = script.character().map(|c| Poser::new(c, &graph)).transpose()?;
    let mut jumps = Vec::new();
    let mut clips = Vec::new();
    let mut params: Vec<ParamId> = Vec::new();
    // Values after the previous update (the graph's defaults before the first).
    let mut after: Vec<ParamValue> = graph.parameters().iter().map(|p| p.default).collect();
    script.run_each(|f: &TraceFrame<'_>| -> Result<(), PlotError> {
        each(f)?;
        if params.is_empty() {
            params = graph
                .parameters()
                .iter()
                .map(|p| f.crowd.param(f.archetype, &p.name))
                .collect::<Result<_, _>>()
                .map_err(state_error)?;
        }
        timeline.times_s.push(f.t_s);
        let programs = f.crowd.programs(f.archetype).map_err(state_error)?;
        // Triggers named by a transition taken this update: those it consumed.
        let consumed = programs
            .iter()
            .filter(|p| p.flags & LayerProgram::SWITCHED != 0)
            .filter_map(|p| graph.transitions().get(p.transition as usize))
            .fold(0u64, |bits, t| bits | t.triggers);
        for (l, (track, layer)) in timeline.layers.iter_mut().zip(graph.layers()).enumerate() {
            let r = f.crowd.readback(f.character, l).map_err(state_error)?;
            let first = layer.states.start as usize;
            let local = |s: usize| s.saturating_sub(first);
            let mut weights = vec![(local(r.active_state), r.active_weight)];
            if r.transitioning
                && let Some(p) = r.previous_state
            {
                weights.push((local(p), r.previous_weight));
            }
            track.frames.push(LayerFrame {
                active: local(r.active_state),
                previous: r.previous_state.map(local),
                transitioning: r.transitioning,
                weights,
            });
        }
        for (i, ((track, p), &id)) in timeline.params.iter_mut().zip(graph.parameters()).zip(&params).enumerate() {
            let (Some(&before), Some(previous)) = (f.params_before.get(i), after.get_mut(i)) else { continue };
            let now = f.crowd.get(id, f.character).map_err(state_error)?;
            track.values.push(value_of(before));
            let frame = f.frame;
            match (before, now) {
                (ParamValue::Trigger(set), ParamValue::Trigger(still)) => {
                    if set && *previous != ParamValue::Trigger(true) {
                        track.marks.push(Mark { frame, kind: MarkKind::TriggerSet });
                    }
                    if set && !still {
                        let named = consumed >> (p.slot.column % 64) & 1 == 1;
                        let kind = if named { MarkKind::TriggerConsumed } else { MarkKind::TriggerExpired };
                        track.marks.push(Mark { frame, kind });
                    }
                }
                _ if before != *previous => track.marks.push(Mark { frame, kind: MarkKind::Changed }),
                _ => {}
            }
            *previous = now;
        }
        if let Some(poser) = poser.as_mut() {
            let (jump_cm, sampled) = poser.frame(f)?;
            jumps.push(jump_cm);
            clips.push(sampled);
        }
        Ok(())
    })?;
    if poser.is_some() {
        timeline.jump_cm = Some(jumps);
        timeline.jump_label = JUMP_MEASURE.to_owned();
        timeline.clips_sampled = Some(clips);
    }
    Ok(timeline)
}

/// A state-step refusal while plotting: the script ran, so there is no finer JSON path.
fn state_error(source: StateError) -> PlotError {
    PlotError::Trace(TraceError::State { path: "$".into(), source })
}
