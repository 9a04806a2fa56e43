//! The lab's timeline strip: the picked character's last seconds, recorded frame by frame as
//! the state step left them, drawn live: per layer the active state as coloured runs and each
//! transition as a bar over the runs it joins, then each parameter (floats as a line over their
//! range, booleans and triggers as ticks where they hold). The same facts `throng-trace --plot`
//! draws from a script's run.

use std::collections::VecDeque;

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, pos2, vec2};
use throng::graph::{CompiledGraph, ParamValue};
use throng::state::LayerReadback;

/// Seconds of history the strip holds and draws.
pub const WINDOW_S: f64 = 6.0;
/// One row's height, points.
const ROW: f32 = 15.0;
/// The names' column, points.
const NAMES: f32 = 70.0;

/// One recorded frame of the picked character.
#[derive(Clone, Debug)]
struct Frame {
    /// Simulation time after the step, seconds.
    t_s: f64,
    /// Each layer's readback.
    layers: Vec<LayerReadback>,
    /// Each parameter's value, in `CompiledGraph::parameters` order.
    params: Vec<ParamValue>,
}

/// A run of frames over which a layer held one active state.
#[derive(Clone, Debug, PartialEq)]
pub struct StateRun {
    /// The state (an index into the graph's states).
    pub state: usize,
    /// Time of the run's first frame, seconds.
    pub start_s: f64,
    /// Time of its last frame, seconds.
    pub end_s: f64,
}

/// A run of frames over which a layer was in one transition.
#[derive(Clone, Debug, PartialEq)]
pub struct TransitionRun {
    /// The state it left, when known.
    pub from: Option<usize>,
    /// The state it leads to.
    pub to: usize,
    /// Time of the first frame in the transition, seconds.
    pub start_s: f64,
    /// Time of the last, seconds.
    pub end_s: f64,
}

/// The picked character's last [`WINDOW_S`] seconds.
#[derive(Default)]
pub struct Timeline {
    character: Option<usize>,
    frames: VecDeque<Frame>,
}

impl Timeline {
    /// Adds the frame the step at `t_s` left `character` in; a different character, or time
    /// running backwards, starts the history again.
    pub fn record(&mut self, character: usize, t_s: f64, layers: Vec<LayerReadback>, params: Vec<ParamValue>) {
        if self.character != Some(character) || self.frames.back().is_some_and(|f| f.t_s > t_s) {
            self.frames.clear();
            self.character = Some(character);
        }
        self.frames.push_back(Frame { t_s, layers, params });
        while self.frames.front().is_some_and(|f| f.t_s < t_s - WINDOW_S) {
            self.frames.pop_front();
        }
    }

    /// The character recorded, if any.
    pub fn character(&self) -> Option<usize> {
        self.character
    }

    /// Layer `layer`'s active states, run by run, oldest first.
    pub fn state_runs(&self, layer: usize) -> Vec<StateRun> {
        let mut runs: Vec<StateRun> = Vec::new();
        for f in &self.frames {
            let Some(r) = f.layers.get(layer) else { continue };
            match runs.last_mut() {
                Some(run) if run.state == r.active_state => run.end_s = f.t_s,
                _ => runs.push(StateRun { state: r.active_state, start_s: f.t_s, end_s: f.t_s }),
            }
        }
        runs
    }

    /// Layer `layer`'s transitions, oldest first: each run of frames in one transition (a new
    /// destination, or an interruption, starts another).
    pub fn transition_runs(&self, layer: usize) -> Vec<TransitionRun> {
        let mut runs: Vec<TransitionRun> = Vec::new();
        let mut open = false;
        for f in &self.frames {
            let Some(r) = f.layers.get(layer) else { continue };
            if !r.transitioning {
                open = false;
                continue;
            }
            match runs.last_mut() {
                Some(run) if open && run.to == r.active_state && run.from == r.previous_state => run.end_s = f.t_s,
                _ => runs.push(TransitionRun {
                    from: r.previous_state,
                    to: r.active_state,
                    start_s: f.t_s,
                    end_s: f.t_s,
                }),
            }
            open = true;
        }
        runs
    }

    /// The lines headless runs print at exit: per layer its state runs and transitions,
    /// `timeline <layer> state|transition <name> <start s> <end s>`, tab-separated.
    pub fn lines(&self, graph: &CompiledGraph) -> Vec<String> {
        let name = |s: usize| graph.states().get(s).map_or("?", |s| s.name.as_str());
        let mut lines = Vec::new();
        for (l, layer) in graph.layers().iter().enumerate() {
            for run in self.state_runs(l) {
                lines.push(format!(
                    "timeline\t{}\tstate\t{}\t{:.4}\t{:.4}",
                    layer.name,
                    name(run.state),
                    run.start_s,
                    run.end_s
                ));
            }
            for run in self.transition_runs(l) {
                let from = run.from.map_or("?", name);
                lines.push(format!(
                    "timeline\t{}\ttransition\t{from}->{}\t{:.4}\t{:.4}",
                    layer.name,
                    name(run.to),
                    run.start_s,
                    run.end_s
                ));
            }
        }
        lines
    }

    /// Draws the strip: a row per layer, then a row per parameter, over the last [`WINDOW_S`]
    /// seconds (now at the right edge). Returns the strip's rectangle.
    pub fn draw(&self, ui: &mut egui::Ui, graph: &CompiledGraph) -> Rect {
        let rows = graph.layers().len() + graph.parameters().len();
        let width = ui.available_width().max(NAMES + 100.0);
        let (response, painter) = ui.allocate_painter(vec2(width, ROW * rows as f32 + ROW), Sense::hover());
        let rect = response.rect;
        let font = FontId::proportional(10.0);
        let now_s = self.frames.back().map_or(0.0, |f| f.t_s);
        let plot = Rect::from_min_max(pos2(rect.left() + NAMES, rect.top()), pos2(rect.right(), rect.bottom() - ROW));
        let x = |t_s: f64| plot.left() + plot.width() * (1.0 - ((now_s - t_s) / WINDOW_S) as f32).clamp(0.0, 1.0);
        let row =
            |k: usize| Rect::from_min_size(pos2(plot.left(), plot.top() + ROW * k as f32), vec2(plot.width(), ROW));
        let label = |k: usize, text: &str| {
            let at = pos2(rect.left(), plot.top() + ROW * (k as f32 + 0.5));
            painter.text(at, Align2::LEFT_CENTER, text, font.clone(), Color32::LIGHT_GRAY);
        };
        let step_s = self.frames.len().checked_sub(2).map_or(0.0, |_| {
            let (a, b) = (&self.frames[self.frames.len() - 2], &self.frames[self.frames.len() - 1]);
            b.t_s - a.t_s
        });

        for (l, layer) in graph.layers().iter().enumerate() {
            label(l, &layer.name);
            let band = row(l).shrink2(vec2(0.0, 1.5));
            for run in self.state_runs(l) {
                let r =
                    Rect::from_min_max(pos2(x(run.start_s), band.top()), pos2(x(run.end_s + step_s), band.bottom()));
                painter.rect_filled(r, 2.0, state_colour(run.state));
                let name = graph.states().get(run.state).map_or("?", |s| s.name.as_str());
                if r.width() > 6.0 * name.len() as f32 {
                    painter.text(
                        r.left_center() + vec2(3.0, 0.0),
                        Align2::LEFT_CENTER,
                        name,
                        font.clone(),
                        Color32::WHITE,
                    );
                }
            }
            for run in self.transition_runs(l) {
                let (a, b) = (x(run.start_s), x(run.end_s + step_s));
                let bar = Rect::from_min_max(pos2(a, band.bottom() - 3.0), pos2(b, band.bottom()));
                painter.rect_filled(bar, 0.0, TRANSITION);
                painter.line_segment([pos2(a, band.top()), pos2(a, band.bottom())], Stroke::new(1.5, TRANSITION));
            }
        }

        let base = graph.layers().len();
        for (k, p) in graph.parameters().iter().enumerate() {
            label(base + k, &p.name);
            let band = row(base + k).shrink2(vec2(0.0, 2.0));
            painter.rect_filled(band, 0.0, Color32::from_gray(35));
            let values: Vec<(f64, ParamValue)> =
                self.frames.iter().filter_map(|f| f.params.get(k).map(|v| (f.t_s, *v))).collect();
            let numbers: Vec<(f64, f32)> = values
                .iter()
                .filter_map(|(t, v)| match v {
                    ParamValue::Float(x) => Some((*t, *x)),
                    ParamValue::Int(x) => Some((*t, *x as f32)),
                    ParamValue::Bool(_) | ParamValue::Trigger(_) => None,
                })
                .filter(|(_, v)| v.is_finite())
                .collect();
            if !numbers.is_empty() {
                let (low, high) =
                    numbers.iter().fold((f32::MAX, f32::MIN), |(lo, hi), (_, v)| (lo.min(*v), hi.max(*v)));
                let span = if high > low { high - low } else { 1.0 };
                let y = |v: f32| band.bottom() - band.height() * (v - low) / span;
                let points: Vec<Pos2> = numbers.iter().map(|(t, v)| pos2(x(*t), y(*v))).collect();
                painter.add(egui::Shape::line(points, Stroke::new(1.2, PARAMETER)));
                let last = numbers.last().map_or(0.0, |n| n.1);
                painter.text(band.right_center(), Align2::RIGHT_CENTER, format!("{last:.2}"), font.clone(), PARAMETER);
            }
            for (t, v) in &values {
                if matches!(v, ParamValue::Bool(true) | ParamValue::Trigger(true)) {
                    let tick = Rect::from_min_max(pos2(x(*t), band.top()), pos2(x(*t + step_s), band.bottom()));
                    painter.rect_filled(tick, 0.0, PARAMETER);
                }
            }
        }
        let axis = plot.bottom() + 0.5 * ROW;
        for s in 0..=WINDOW_S as i32 {
            let at = pos2(x(now_s - f64::from(s)), axis);
            painter.text(at, Align2::CENTER_CENTER, format!("-{s} s"), font.clone(), Color32::GRAY);
        }
        rect
    }
}

const TRANSITION: Color32 = Color32::from_rgb(250, 220, 60);
const PARAMETER: Color32 = Color32::from_rgb(120, 200, 255);

/// A state's colour: distinct for neighbouring indices, the same every frame.
fn state_colour(state: usize) -> Color32 {
    let hue = (state as f32 * 0.618_034).fract();
    egui::ecolor::Hsva::new(hue, 0.55, 0.55, 1.0).into()
}
