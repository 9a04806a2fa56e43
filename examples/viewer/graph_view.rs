//! The lab's live graph: one layer's states as nodes and its transitions as arrows, laid out
//! once per graph; the active state filled, the previous one outlined, a transition in flight
//! drawn over its arrow with its progress and switch mode. Sub-machines are boxes around their
//! states.

use std::f32::consts::{FRAC_PI_2, TAU};

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2, pos2, vec2};
use throng::graph::{CompiledGraph, NO_INDEX, Source, Target};
use throng::program::{LayerProgram, SwitchMode};
use throng::state::LayerReadback;

/// A node's size, points.
const NODE: Vec2 = vec2(74.0, 22.0);
/// The drawing's height for a layer of several states, points.
const HEIGHT: f32 = 100.0;

const ACTIVE: Color32 = Color32::from_rgb(60, 150, 80);
const PREVIOUS: Color32 = Color32::from_rgb(235, 160, 40);
const IN_FLIGHT: Color32 = Color32::from_rgb(250, 220, 60);
const IDLE_NODE: Color32 = Color32::from_rgb(55, 60, 70);
const ARROW: Color32 = Color32::from_rgb(150, 155, 165);

/// Where one layer's states sit, in the unit square: computed once per graph and layer.
#[derive(Clone, Debug)]
pub struct LayerLayout {
    /// The layer's states (indices into the graph's states), in drawing order.
    states: Vec<usize>,
    /// Each state's centre, in [0, 1]².
    centres: Vec<Pos2>,
    /// Sub-machines: name and the slots in `states` of the states inside (at any depth).
    machines: Vec<(String, Vec<usize>)>,
    /// Whether any transition leaves the layer's ANY (drawn as a node of its own).
    any: bool,
}

impl LayerLayout {
    /// Layer `layer`'s states on a circle, those of one sub-machine next to each other.
    pub fn new(graph: &CompiledGraph, layer: usize) -> Self {
        let mut states: Vec<usize> =
            (0..graph.states().len()).filter(|&s| graph.states()[s].layer as usize == layer).collect();
        states.sort_by_key(|&s| (graph.states()[s].machine, s));
        let n = states.len();
        let centres = (0..n)
            .map(|k| {
                if n == 1 {
                    return pos2(0.5, 0.5);
                }
                let angle = TAU * k as f32 / n as f32 - FRAC_PI_2;
                pos2(0.5 + 0.36 * angle.cos(), 0.5 + 0.36 * angle.sin())
            })
            .collect();
        let machines = (0..graph.machines().len())
            .filter(|&m| graph.machines()[m].layer as usize == layer && graph.machines()[m].parent != NO_INDEX)
            .map(|m| {
                let inside = |mut at: u16| {
                    // A state is inside `m` when `m` is its machine or one of that machine's parents.
                    while at != NO_INDEX {
                        if usize::from(at) == m {
                            return true;
                        }
                        at = graph.machines().get(usize::from(at)).map_or(NO_INDEX, |x| x.parent);
                    }
                    false
                };
                let slots = (0..n).filter(|&k| inside(graph.states()[states[k]].machine)).collect();
                (graph.machines()[m].name.clone(), slots)
            })
            .collect();
        let any = graph.transitions().iter().any(|t| t.layer as usize == layer && matches!(t.from, Source::Any(_)));
        Self { states, centres, machines, any }
    }

    fn slot(&self, state: usize) -> Option<usize> {
        self.states.iter().position(|&s| s == state)
    }
}

/// The point where the segment from `centre` towards `towards` leaves a node's box.
fn edge(centre: Pos2, towards: Pos2) -> Pos2 {
    let d = towards - centre;
    let scale = [(0.5 * NODE.x) / d.x.abs(), (0.5 * NODE.y) / d.y.abs()].into_iter().fold(f32::MAX, f32::min);
    if scale.is_finite() { centre + d * scale.min(1.0) } else { centre }
}

/// Draws layer `layer` of `graph` as it is now for one character: `readback` and `program` are
/// that layer's.
pub fn draw(
    ui: &mut egui::Ui,
    graph: &CompiledGraph,
    layout: &LayerLayout,
    readback: &LayerReadback,
    program: &LayerProgram,
) {
    let width = ui.available_width().max(200.0);
    let (response, painter) = ui.allocate_painter(vec2(width, HEIGHT), Sense::hover());
    let area = response.rect.shrink2(0.5 * NODE + vec2(2.0, 2.0));
    let at = |p: Pos2| pos2(area.left() + p.x * area.width(), area.top() + p.y * area.height());
    let any_centre = pos2(response.rect.left() + 0.5 * NODE.x, response.rect.top() + 0.5 * NODE.y);
    let font = FontId::proportional(11.0);

    for (name, slots) in &layout.machines {
        let boxes = slots.iter().map(|&k| Rect::from_center_size(at(layout.centres[k]), NODE));
        if let Some(bounds) = boxes.reduce(|a, b| a.union(b)) {
            let bounds = bounds.expand(6.0);
            painter.rect_stroke(bounds, 4.0, Stroke::new(1.0, ARROW), StrokeKind::Outside);
            painter.text(bounds.left_top(), Align2::LEFT_BOTTOM, name, font.clone(), ARROW);
        }
    }

    let mut flight_label = None;
    let in_flight = (readback.transitioning && program.transition != u32::MAX).then_some(program.transition as usize);
    for (index, t) in graph.transitions().iter().enumerate() {
        if t.layer as usize != layout.layer_of(graph) {
            continue;
        }
        let from = match t.from {
            Source::State(s) => layout.slot(usize::from(s)).map(|k| at(layout.centres[k])),
            Source::Any(_) => Some(any_centre),
            Source::Start(_) | Source::Machine(_) => None,
        };
        let to = match t.to {
            Target::State(s) => layout.slot(usize::from(s)).map(|k| at(layout.centres[k])),
            Target::Entry(_) | Target::Exit(_) => None,
        };
        let (Some(from), Some(to)) = (from, to) else { continue };
        // Both directions between two states: each arrow moves to its own side of the line.
        let side = (to - from).normalized().rot90() * 4.0;
        let (start, end) = (edge(from, to) + side, edge(to, from) + side);
        let flying = in_flight == Some(index);
        let stroke = if flying { Stroke::new(2.5, IN_FLIGHT) } else { Stroke::new(1.0, ARROW) };
        painter.arrow(start, end - start, stroke);
        if flying {
            let p = start + (end - start) * readback.transition_progress.clamp(0.0, 1.0);
            painter.circle_filled(p, 4.0, IN_FLIGHT);
            let label = format!(
                "{} -> {}: {} {:.0} %",
                short_name(graph, readback.previous_state),
                short_name(graph, Some(readback.active_state)),
                mode_name(program.switch_mode()),
                100.0 * readback.transition_progress
            );
            flight_label = Some(label);
        }
    }

    if layout.any {
        let r = Rect::from_center_size(any_centre, NODE);
        painter.rect_stroke(r, 4.0, Stroke::new(1.0, ARROW), StrokeKind::Inside);
        painter.text(any_centre, Align2::CENTER_CENTER, "ANY", font.clone(), ARROW);
    }
    for (k, &state) in layout.states.iter().enumerate() {
        let r = Rect::from_center_size(at(layout.centres[k]), NODE);
        let active = state == readback.active_state;
        painter.rect_filled(r, 4.0, if active { ACTIVE } else { IDLE_NODE });
        if readback.previous_state == Some(state) {
            painter.rect_stroke(r, 4.0, Stroke::new(2.0, PREVIOUS), StrokeKind::Outside);
        }
        painter.text(r.center(), Align2::CENTER_CENTER, short_name(graph, Some(state)), font.clone(), Color32::WHITE);
    }
    // In the drawing's corner, where no node sits.
    if let Some(label) = flight_label {
        painter.text(response.rect.left_bottom(), Align2::LEFT_BOTTOM, label, font, IN_FLIGHT);
    }
}

/// A state's name without its sub-machines' prefix.
fn short_name(graph: &CompiledGraph, state: Option<usize>) -> &str {
    state.and_then(|s| graph.states().get(s)).map_or("?", |s| s.name.rsplit('.').next().unwrap_or_default())
}

/// A switch mode's short name, as the viewer's `--mode` spells it.
pub fn mode_name(mode: SwitchMode) -> &'static str {
    match mode {
        SwitchMode::Cut => "cut",
        SwitchMode::Frozen => "frozen",
        SwitchMode::Crossfade => "crossfade",
        SwitchMode::InertializeQuintic
        | SwitchMode::InertializeQuinticOvershootControl
        | SwitchMode::InertializeSpring => "inertialize",
    }
}

impl LayerLayout {
    /// The layer these states are on (the first state's; a layer has at least one).
    fn layer_of(&self, graph: &CompiledGraph) -> usize {
        self.states.first().map_or(usize::MAX, |&s| usize::from(graph.states()[s].layer))
    }

    /// Whether the layer has more than one state (a single state needs no drawing).
    pub fn is_machine(&self) -> bool {
        self.states.len() > 1
    }
}
