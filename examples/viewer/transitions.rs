//! The lab's transition editor: one layer's transitions with their blend time, switch mode and
//! easing, edited live (`CompiledGraph::with_transition_timing` then `Crowd::replace_graph`,
//! through `Scene::edit_transition`), each with a reset to the file's timing.

use egui::{Color32, RichText};
use throng::graph::{CompiledGraph, CubicBezier, Easing, Inertialization, Source, SwitchMode, Target, Transition};

use crate::scene::TimingEdit;

/// The switch modes the editor offers, with the parameters a new choice starts from.
const SWITCHES: [(&str, SwitchMode); 5] = [
    ("cut", SwitchMode::Cut),
    ("frozen", SwitchMode::Frozen),
    ("crossfade", SwitchMode::Crossfade),
    ("inertialize (quintic)", SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: true })),
    ("inertialize (spring)", SwitchMode::Inertialize(Inertialization::Spring { halflife_s: 0.08 })),
];

/// The easings the editor offers: CSS's named curves besides linear and smoothstep.
fn easings() -> Vec<(&'static str, Easing)> {
    let css = |x1, y1, x2, y2| CubicBezier::new(x1, y1, x2, y2).map_or(Easing::Linear, Easing::CubicBezier);
    vec![
        ("linear", Easing::Linear),
        ("smoothstep", Easing::Smoothstep),
        ("ease", css(0.25, 0.1, 0.25, 1.0)),
        ("ease-in", css(0.42, 0.0, 1.0, 1.0)),
        ("ease-out", css(0.0, 0.0, 0.58, 1.0)),
        ("ease-in-out", css(0.42, 0.0, 0.58, 1.0)),
    ]
}

/// A switch mode's name in the editor's list (its kind; a spring's halflife is edited apart).
pub fn switch_name(switch: SwitchMode) -> &'static str {
    match switch {
        SwitchMode::Cut => SWITCHES[0].0,
        SwitchMode::Frozen => SWITCHES[1].0,
        SwitchMode::Crossfade => SWITCHES[2].0,
        SwitchMode::Inertialize(Inertialization::Quintic { .. }) => SWITCHES[3].0,
        SwitchMode::Inertialize(Inertialization::Spring { .. }) => SWITCHES[4].0,
    }
}

/// An easing's name in the editor's list, or its control points for a curve not listed.
pub fn easing_name(easing: Easing) -> String {
    easings().into_iter().find(|(_, e)| *e == easing).map_or_else(
        || match easing {
            Easing::CubicBezier(c) => format!("cubic-bezier{:?}", c.points()),
            other => format!("{other:?}"),
        },
        |(name, _)| name.to_owned(),
    )
}

/// "From → To" for a transition, with START, ANY and END for the machine's pseudo-states.
pub fn transition_name(graph: &CompiledGraph, t: &Transition) -> String {
    let state = |s: u16| graph.states().get(usize::from(s)).map_or("?", |s| s.name.as_str());
    let machine = |m: u16| graph.machines().get(usize::from(m)).map_or("?", |m| m.name.as_str());
    let from = match t.from {
        Source::State(s) => state(s).to_owned(),
        Source::Any(_) => "ANY".to_owned(),
        Source::Start(_) => "START".to_owned(),
        Source::Machine(m) => machine(m).to_owned(),
    };
    let to = match t.to {
        Target::State(s) => state(s).to_owned(),
        Target::Entry(m) => format!("{} START", machine(m)).trim().to_owned(),
        Target::Exit(_) => "END".to_owned(),
    };
    format!("{from} → {to}")
}

/// Layer `layer`'s transitions (those that blend: not START's), each with its timing's
/// editors; what the user changed goes into `edits` as `(transition index, edit)`.
pub fn editor(
    ui: &mut egui::Ui,
    graph: &CompiledGraph,
    file: &CompiledGraph,
    layer: usize,
    edits: &mut Vec<(usize, TimingEdit)>,
) {
    let easings = easings();
    let mut any = false;
    for (index, t) in graph.transitions().iter().enumerate() {
        if usize::from(t.layer) != layer || matches!(t.from, Source::Start(_)) {
            continue;
        }
        any = true;
        let edited = file.transitions().get(index).is_some_and(|f| f != t);
        ui.horizontal(|ui| {
            let name = RichText::new(transition_name(graph, t));
            ui.label(if edited { name.color(Color32::YELLOW) } else { name });
            if ui.add_enabled(edited, egui::Button::new("reset")).clicked() {
                edits.push((index, TimingEdit::Reset));
            }
        });
        ui.horizontal(|ui| {
            let mut duration = t.duration;
            let unit = if t.normalized { " ×" } else { " s" };
            let drag = egui::DragValue::new(&mut duration).range(0.0..=5.0).speed(0.01).suffix(unit);
            if ui.add(drag).changed() {
                edits.push((index, TimingEdit::Duration(duration)));
            }
            egui::ComboBox::from_id_salt(("switch", index)).selected_text(switch_name(t.switch)).show_ui(ui, |ui| {
                for (name, switch) in SWITCHES {
                    if ui.selectable_label(switch_name(t.switch) == name, name).clicked()
                        && switch_name(t.switch) != name
                    {
                        edits.push((index, TimingEdit::Switch(switch)));
                    }
                }
            });
            if let SwitchMode::Inertialize(Inertialization::Spring { mut halflife_s }) = t.switch {
                let drag = egui::DragValue::new(&mut halflife_s).range(0.0..=1.0).speed(0.005).suffix(" s½");
                if ui.add(drag).changed() {
                    edits.push((
                        index,
                        TimingEdit::Switch(SwitchMode::Inertialize(Inertialization::Spring { halflife_s })),
                    ));
                }
            }
            let blends = !matches!(t.switch, SwitchMode::Cut | SwitchMode::Inertialize(_));
            ui.add_enabled_ui(blends, |ui| {
                egui::ComboBox::from_id_salt(("easing", index)).selected_text(easing_name(t.easing)).show_ui(
                    ui,
                    |ui| {
                        for (name, easing) in &easings {
                            if ui.selectable_label(t.easing == *easing, *name).clicked() && t.easing != *easing {
                                edits.push((index, TimingEdit::Easing(*easing)));
                            }
                        }
                    },
                );
            });
        });
    }
    if !any {
        ui.label("no transitions to edit");
    }
}
