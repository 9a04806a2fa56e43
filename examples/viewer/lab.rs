//! The animation lab: egui panels over the crowd, drawn in the viewer's own render pass. The
//! crowd panel shows the frame's cost and sets the switch mode; the character panel shows what
//! one character's graph is doing, layer by layer. With every panel closed the lab builds,
//! tessellates and draws nothing, so the crowd renders at the cost it has without it.

use std::collections::HashMap;

use egui::{Color32, Rect, RichText};
use egui_wgpu::{Renderer as EguiRenderer, RendererOptions, ScreenDescriptor};
use throng::graph::ParamValue;

use crate::Stats;
use crate::graph_view::{self, LayerLayout};
use crate::render::DEPTH_FORMAT;
use crate::scene::{Hand, MODES, Scene, TimingEdit};
use crate::timeline::Timeline;
use crate::transitions;

/// Where a piece of the lab's text was laid out last frame, in pixels: what the tests check
/// instead of reading the picture.
#[derive(Clone, Debug, PartialEq)]
pub struct LaidOut {
    /// What the text is: `panel crowd`, `panel character`, or `<layer>.active` for the active
    /// state's label of a layer.
    pub what: String,
    /// The text shown (a panel's title for a panel).
    pub text: String,
    /// Its rectangle, pixels from the top left.
    pub rect: Rect,
}

/// The lab's egui state, its GPU renderer, and what the last frame tessellated.
pub struct Lab {
    ctx: egui::Context,
    renderer: EguiRenderer,
    /// The crowd panel is open.
    pub crowd_open: bool,
    /// The character whose panel is open, if any (picked by a click or by index).
    pub inspect: Option<usize>,
    /// The camera follows the inspected character.
    pub follow: bool,
    /// The index the crowd panel's "inspect" field holds.
    index: usize,
    /// Tessellated panels waiting for [`Lab::paint`]: empty when every panel is closed.
    paint_jobs: Vec<egui::ClippedPrimitive>,
    screen: ScreenDescriptor,
    /// Last frame's layout of the checked texts.
    pub laid_out: Vec<LaidOut>,
    /// Each graph's layers laid out for drawing, by graph id: once per graph.
    layouts: HashMap<u64, Vec<LayerLayout>>,
    /// The inspected character's last seconds.
    pub timeline: Timeline,
    /// The layer whose mask colours the inspected character (blue 0 to red 1), if any.
    pub heat_layer: Option<usize>,
    /// Characters driven by hand with the inspected one (shift-click adds or removes one),
    /// ascending.
    pub selection: Vec<usize>,
    /// The hand drives the whole crowd, not the inspected character and the selection.
    pub whole_crowd: bool,
}

/// The numbers the crowd panel shows that the scene does not hold: the frame's costs.
pub struct CrowdFigures<'a> {
    /// Means over the recent frames.
    pub stats: &'a Stats,
    /// Whether the evaluation runs on the CPU.
    pub cpu: bool,
}

impl Lab {
    /// A lab drawing into `format` targets with the viewer's depth buffer, panels as given.
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat, crowd_open: bool, inspect: Option<usize>) -> Self {
        let options = RendererOptions { depth_stencil_format: Some(DEPTH_FORMAT), ..RendererOptions::default() };
        Self {
            ctx: egui::Context::default(),
            renderer: EguiRenderer::new(device, format, options),
            crowd_open,
            inspect,
            follow: false,
            index: inspect.unwrap_or(0),
            paint_jobs: Vec::new(),
            screen: ScreenDescriptor { size_in_pixels: [1, 1], pixels_per_point: 1.0 },
            laid_out: Vec::new(),
            layouts: HashMap::new(),
            timeline: Timeline::default(),
            heat_layer: None,
            selection: Vec::new(),
            whole_crowd: false,
        }
    }

    /// The characters a hand taken now drives: the whole crowd, or the inspected character and
    /// the selection; ascending.
    pub fn driven(&self, num_characters: usize) -> Vec<usize> {
        if self.whole_crowd {
            return (0..num_characters).collect();
        }
        let mut characters: Vec<usize> = self.selection.iter().copied().chain(self.inspect).collect();
        characters.sort_unstable();
        characters.dedup();
        characters
    }

    /// Adds character `i` to the selection, or removes it when it is there (a shift-click); a
    /// hand already driving follows the new set at once.
    pub fn toggle_selected(&mut self, i: usize, scene: &mut Scene) -> Result<(), String> {
        match self.selection.binary_search(&i) {
            Ok(at) => {
                self.selection.remove(at);
            }
            Err(at) => self.selection.insert(at, i),
        }
        if self.inspect.is_none() {
            self.inspect = Some(i);
        }
        self.follow_selection(scene)
    }

    /// Gives a hand already driving the characters [`Lab::driven`] names now, holding what it
    /// held.
    fn follow_selection(&self, scene: &mut Scene) -> Result<(), String> {
        let driven = self.driven(scene.num_characters());
        match scene.hand() {
            Some(hand) if hand.characters() != driven => {
                let values = hand.values.clone();
                scene.set_hand(Some(Hand::new(driven, values)))
            }
            _ => Ok(()),
        }
    }

    /// The mask heat to draw the inspected character with: the chosen layer's mask weight per
    /// joint of the rig, as the evaluators resolved it (subtrees included; a layer without a
    /// mask weighs every joint 1). `None` without a character or a layer.
    pub fn heat(&self, scene: &Scene) -> Option<Vec<f32>> {
        self.inspect?;
        let setup = scene.model.layers.get(self.heat_layer?)?;
        let joints = scene.model.rig.num_joints();
        Some(setup.mask.as_ref().map_or_else(|| vec![1.0; joints], |m| m.weights().to_vec()))
    }

    /// The egui context, for the window's input handling.
    pub fn context(&self) -> &egui::Context {
        &self.ctx
    }

    /// Whether any panel is open (otherwise [`Lab::frame`] does nothing).
    pub fn is_open(&self) -> bool {
        self.crowd_open || self.inspect.is_some()
    }

    /// Builds this frame's panels from `input`, applies what the user changed to `scene`, and
    /// uploads the result for [`Lab::paint`]. Returns egui's wishes for the window (cursor,
    /// clipboard), which headless runs drop.
    pub fn frame(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        input: egui::RawInput,
        scene: &mut Scene,
        figures: &CrowdFigures<'_>,
        (width, height): (u32, u32),
    ) -> Result<Option<egui::PlatformOutput>, String> {
        self.paint_jobs.clear();
        if !self.is_open() {
            return Ok(None);
        }
        let mut laid_out = Vec::new();
        let mut crowd_open = self.crowd_open;
        let mut inspect = self.inspect;
        let (mut follow, mut index, mut heat_layer) = (self.follow, self.index, self.heat_layer);
        let mut error = None;
        let mut changes = Vec::new();
        let mut edits = Vec::new();
        // A hand whose inspected character's panel closed, or that another pick outside what
        // it drives replaced, lets go.
        if scene.hand().is_some_and(|h| self.inspect.is_none_or(|i| !h.drives(i))) {
            scene.set_hand(None)?;
        }
        let (mut whole_crowd, mut selection) = (self.whole_crowd, self.selection.clone());
        if let Some(i) = self.inspect {
            self.timeline.record(i, scene.time_s(), scene.readback(i)?, scene.param_values(i)?);
        }
        let timeline = &self.timeline;
        let graph = scene.graph();
        let layouts = self
            .layouts
            .entry(graph.id())
            .or_insert_with(|| (0..graph.layers().len()).map(|l| LayerLayout::new(graph, l)).collect());
        let output = self.ctx.run_pass(input, |ctx| {
            // egui may run a pass twice (a discarded first layout); only the last one counts.
            laid_out.clear();
            if crowd_open {
                let mut pick = Pick { inspect: &mut inspect, index: &mut index };
                crowd_panel(ctx, &mut crowd_open, scene, figures, &mut pick, &mut laid_out);
            }
            if inspect.is_some() && timeline.character() == inspect {
                // Along the bottom, left of the character panel.
                let width = (ctx.content_rect().width() - 300.0).max(240.0);
                egui::Window::new("Timeline")
                    .anchor(egui::Align2::LEFT_BOTTOM, [8.0, -8.0])
                    .default_width(width)
                    .min_width(width)
                    .resizable(false)
                    .show(ctx, |ui| {
                        let rect = timeline.draw(ui, scene.graph());
                        laid(&mut laid_out, "timeline", "", rect);
                    });
            }
            if let Some(i) = inspect {
                let mut open = true;
                let mut panel = CharacterPanel {
                    open: &mut open,
                    follow: &mut follow,
                    heat_layer: &mut heat_layer,
                    changes: &mut changes,
                    edits: &mut edits,
                    laid_out: &mut laid_out,
                    whole_crowd: &mut whole_crowd,
                    selection: &mut selection,
                };
                if let Err(e) = character_panel(ctx, &mut panel, i, scene, layouts) {
                    error = Some(e);
                }
                if !open {
                    inspect = None;
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        let membership = whole_crowd != self.whole_crowd || selection != self.selection;
        (self.whole_crowd, self.selection) = (whole_crowd, selection);
        if membership {
            self.follow_selection(scene)?;
        }
        let driven = self.driven(scene.num_characters());
        for change in changes {
            apply(scene, change, &driven)?;
        }
        for (t, edit) in edits {
            scene.edit_transition(t, edit)?;
        }
        self.crowd_open = crowd_open;
        self.inspect = inspect;
        self.follow = follow && inspect.is_some();
        self.heat_layer = heat_layer;
        self.index = index;
        let ppp = output.pixels_per_point;
        self.laid_out = laid_out.into_iter().map(|l| LaidOut { rect: l.rect * ppp, ..l }).collect();
        self.screen = ScreenDescriptor { size_in_pixels: [width, height], pixels_per_point: ppp };
        for (id, deltas) in &output.textures_delta.set {
            for delta in deltas {
                self.renderer.update_texture(device, queue, *id, delta);
            }
        }
        self.paint_jobs = self.ctx.tessellate(output.shapes, ppp);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("viewer.lab") });
        let extra = self.renderer.update_buffers(device, queue, &mut encoder, &self.paint_jobs, &self.screen);
        queue.submit(extra.into_iter().chain([encoder.finish()]));
        for id in &output.textures_delta.free {
            self.renderer.free_texture(id);
        }
        Ok(Some(output.platform_output))
    }

    /// Draws the panels [`Lab::frame`] prepared into the viewer's render pass, over the crowd.
    pub fn paint(&self, pass: &mut wgpu::RenderPass<'static>) {
        if !self.paint_jobs.is_empty() {
            self.renderer.render(pass, &self.paint_jobs, &self.screen);
        }
    }

    /// The input of a headless frame: the whole target, no events, `t_s` seconds in.
    pub fn headless_input((width, height): (u32, u32), t_s: f64) -> egui::RawInput {
        egui::RawInput {
            screen_rect: Some(Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(width as f32, height as f32))),
            time: Some(t_s),
            ..Default::default()
        }
    }
}

/// What the character panel asks of the hand that drives its character.
enum HandChange {
    /// Drive character `i` by hand, with the selection or the whole crowd ([`Lab::driven`]),
    /// all from `i`'s parameters' values now.
    Take(usize),
    /// Give it back to the brain.
    Release,
    /// Hold parameter `k` (in `CompiledGraph::parameters` order) at a value.
    Set(usize, ParamValue),
}

fn apply(scene: &mut Scene, change: HandChange, driven: &[usize]) -> Result<(), String> {
    match change {
        HandChange::Take(i) => {
            // Triggers start unset: only a button press fires one.
            let values = scene
                .param_values(i)?
                .into_iter()
                .map(|v| (!matches!(v, ParamValue::Trigger(_))).then_some(v))
                .collect();
            scene.set_hand(Some(Hand::new(driven.to_vec(), values)))
        }
        HandChange::Release => scene.set_hand(None),
        HandChange::Set(k, value) => {
            if let Some(slot) = scene.hand_mut().and_then(|h| h.values.get_mut(k)) {
                *slot = Some(value);
            }
            Ok(())
        }
    }
}

/// The character panel's outputs besides its drawing.
struct CharacterPanel<'a> {
    open: &'a mut bool,
    follow: &'a mut bool,
    /// The layer whose mask heat colours the character.
    heat_layer: &'a mut Option<usize>,
    changes: &'a mut Vec<HandChange>,
    /// Transition timing edits, `(transition index, edit)`.
    edits: &'a mut Vec<(usize, TimingEdit)>,
    laid_out: &'a mut Vec<LaidOut>,
    /// The lab's [`Lab::whole_crowd`] and [`Lab::selection`], as the panel leaves them.
    whole_crowd: &'a mut bool,
    selection: &'a mut Vec<usize>,
}

/// The crowd panel's way of picking a character by its index.
struct Pick<'a> {
    inspect: &'a mut Option<usize>,
    index: &'a mut usize,
}

fn laid(laid_out: &mut Vec<LaidOut>, what: impl Into<String>, text: impl Into<String>, rect: Rect) {
    laid_out.push(LaidOut { what: what.into(), text: text.into(), rect });
}

/// The crowd panel: frame time split, clips sampled (CPU) or records uploaded (GPU), GPU timestamps, the LOD histogram and the
/// switch mode (the number keys' selector).
fn crowd_panel(
    ctx: &egui::Context,
    open: &mut bool,
    scene: &mut Scene,
    figures: &CrowdFigures<'_>,
    pick: &mut Pick<'_>,
    laid_out: &mut Vec<LaidOut>,
) {
    let response = egui::Window::new("Crowd")
        .open(open)
        .default_pos([8.0, 8.0])
        .default_width(240.0)
        .resizable(false)
        .show(ctx, |ui| {
            let split = figures.stats.split();
            ui.label(format!("{} characters, {:.1} fps", scene.num_characters(), split.fps));
            // What did not fit the character in a --graph file.
            for problem in &scene.model.problems {
                let shown = ui.label(RichText::new(problem).color(Color32::LIGHT_RED));
                laid(laid_out, "problem", problem.as_str(), shown.rect);
            }
            egui::Grid::new("crowd.split").num_columns(2).show(ui, |ui| {
                let evaluation = if figures.cpu { "evaluation (CPU)" } else { "evaluation (GPU)" };
                for (name, ms) in [("state step", split.state_ms), (evaluation, split.eval_ms), ("draw", split.draw_ms)]
                {
                    ui.label(name);
                    ui.label(format!("{ms:.2} ms"));
                    ui.end_row();
                }
                if figures.cpu {
                    ui.label("clips sampled");
                    ui.label(format!("{:.0} / frame", split.clips));
                } else {
                    ui.label("records uploaded");
                    ui.label(format!("{:.0} B / frame", split.uploaded));
                }
                ui.end_row();
                ui.label("GPU timestamps");
                ui.label(match (split.eval_gpu_ms, split.draw_gpu_ms) {
                    (Some(e), Some(d)) => format!("eval {e:.2}, draw {d:.2} ms"),
                    (None, Some(d)) => format!("draw {d:.2} ms"),
                    _ => "none".to_owned(),
                });
                ui.end_row();
            });
            ui.separator();
            let mut lod = scene.lod();
            ui.checkbox(&mut lod, "animation LOD (L)");
            if lod != scene.lod() {
                scene.set_lod(lod);
            }
            if lod {
                let counts = scene.lod_counts();
                let total = scene.num_characters().max(1) as f32;
                for (rate, n) in counts {
                    let bar = egui::ProgressBar::new(n as f32 / total).text(format!("every {rate}: {n}"));
                    ui.add(bar);
                }
            }
            ui.separator();
            ui.label("switch mode (1–4)");
            let (mut mode, _) = scene.mode();
            ui.horizontal(|ui| {
                for (i, (name, _)) in MODES.iter().enumerate().take(scene.model.archetypes.len()) {
                    ui.radio_value(&mut mode, i, *name);
                }
            });
            if mode != scene.mode().0 {
                scene.set_mode(mode);
            }
            ui.separator();
            ui.horizontal(|ui| {
                let last = scene.num_characters().saturating_sub(1);
                ui.add(egui::DragValue::new(pick.index).range(0..=last));
                if ui.button("inspect").clicked() {
                    *pick.inspect = Some((*pick.index).min(last));
                }
                ui.label("or click a character");
            });
        });
    if let Some(r) = response {
        laid(laid_out, "panel crowd", "Crowd", r.response.rect);
    }
}

/// Character `i`'s panel: per layer the active state (the checked label), the previous one, a
/// transition's progress and the states' shares of the pose; then its parameters.
fn character_panel(
    ctx: &egui::Context,
    panel: &mut CharacterPanel<'_>,
    i: usize,
    scene: &Scene,
    layouts: &[LayerLayout],
) -> Result<(), String> {
    let laid_out = &mut *panel.laid_out;
    let readback = scene.readback(i)?;
    let programs = scene.layer_programs(i)?;
    let clips = &scene.model.clips;
    let values = scene.param_values(i)?;
    let graph = scene.graph();
    let name = |s: usize| graph.states().get(s).map_or("?", |s| s.name.as_str());
    let title = format!("Character {i}");
    let screen = ctx.content_rect();
    let response = egui::Window::new(&title)
        .open(panel.open)
        .default_pos([screen.width() - 268.0, 8.0])
        .default_width(260.0)
        .max_height(screen.height() - 16.0)
        .vscroll(true)
        .resizable(false)
        .show(ctx, |ui| {
            ui.checkbox(panel.follow, "camera follows");
            for (l, (r, layer)) in readback.iter().zip(graph.layers()).enumerate() {
                ui.horizontal(|ui| {
                    ui.label(RichText::new(&layer.name).strong());
                    let active = ui.label(RichText::new(name(r.active_state)).color(Color32::LIGHT_GREEN));
                    laid(laid_out, format!("{}.active", layer.name), name(r.active_state), active.rect);
                    if let Some(p) = r.previous_state {
                        ui.label(format!("(from {})", name(p)));
                    }
                });
                let Some((program, samples)) = programs.get(l) else { continue };
                if let Some(layout) = layouts.get(l).filter(|g| g.is_machine()) {
                    graph_view::draw(ui, graph, layout, r, program);
                    egui::CollapsingHeader::new(format!("edit {} transitions", layer.name))
                        .id_salt(("transitions", l))
                        .show(ui, |ui| transitions::editor(ui, graph, scene.file_graph(), l, panel.edits));
                }
                if l > 0 {
                    ui.add(egui::ProgressBar::new(program.weight).text(format!("layer weight {:.2}", program.weight)));
                    let mut heat = *panel.heat_layer == Some(l);
                    let what = if layer.mask.is_empty() { "mask heat (no mask: every joint)" } else { "mask heat" };
                    if ui.checkbox(&mut heat, what).changed() {
                        *panel.heat_layer = heat.then_some(l);
                    }
                }
                if r.transitioning {
                    ui.add(egui::ProgressBar::new(r.transition_progress).text(format!(
                        "transition {:.0} %: {:.2} / {:.2}",
                        r.transition_progress * 100.0,
                        r.active_weight,
                        r.previous_weight
                    )));
                }
                // A blend tree's children by their weights in the active state.
                if samples.len() > 1 {
                    for sample in samples {
                        let clip = clips.get(sample.clip as usize).map_or("?", |c| c.name());
                        ui.add(egui::ProgressBar::new(sample.weight).text(format!("{clip} {:.2}", sample.weight)));
                    }
                }
                ui.add(egui::ProgressBar::new(r.phase).text(format!("phase {:.2}, loop {}", r.phase, r.loops)));
            }
            ui.separator();
            let hand = scene.hand().filter(|h| h.drives(i));
            let mut drive = hand.is_some();
            ui.checkbox(&mut drive, "drive by hand (the brain lets go)");
            match (hand, drive) {
                (None, true) => panel.changes.push(HandChange::Take(i)),
                (Some(_), false) => panel.changes.push(HandChange::Release),
                _ => {}
            }
            // Who the hand drives: this character and the selection, or the whole crowd.
            let whole = ui.checkbox(panel.whole_crowd, format!("whole crowd ({})", scene.num_characters()));
            laid(laid_out, "hand.whole", "whole crowd", whole.rect);
            if !*panel.whole_crowd {
                ui.horizontal(|ui| {
                    let others = panel.selection.iter().filter(|&&s| s != i).count();
                    ui.label(format!("with {others} selected (shift-click adds or removes)"));
                    if !panel.selection.is_empty() && ui.button("clear").clicked() {
                        panel.selection.clear();
                    }
                });
            }
            if let Some(hand) = hand {
                let driving = ui.label(format!("driving {} characters", hand.characters().len()));
                laid(laid_out, "hand.driving", hand.characters().len().to_string(), driving.rect);
            }
            let Some(hand) = hand else {
                ui.horizontal_wrapped(|ui| {
                    for (p, v) in graph.parameters().iter().zip(&values) {
                        ui.label(match v {
                            ParamValue::Float(x) => format!("{} {x:.2}", p.name),
                            ParamValue::Int(x) => format!("{} {x}", p.name),
                            ParamValue::Bool(x) | ParamValue::Trigger(x) => format!("{} {x}", p.name),
                        });
                    }
                });
                return;
            };
            egui::Grid::new("character.hand").num_columns(2).show(ui, |ui| {
                for (k, (p, now)) in graph.parameters().iter().zip(&values).enumerate() {
                    ui.label(&p.name);
                    let held = hand.values.get(k).copied().flatten().unwrap_or(*now);
                    let changed = match held {
                        ParamValue::Float(mut x) => {
                            // A layer's weight parameter lives in [0, 1]; others get room to
                            // cross the graph's thresholds (the demo's speed: 0–4 m/s).
                            let weight = graph.layers().iter().any(|l| l.weight_param == Some(p.slot));
                            let high = if weight { 1.0 } else { x.abs().max(5.0) };
                            let low = if weight { 0.0 } else { x.min(0.0) };
                            ui.add(egui::Slider::new(&mut x, low..=high)).changed().then_some(ParamValue::Float(x))
                        }
                        ParamValue::Int(mut x) => {
                            ui.add(egui::DragValue::new(&mut x)).changed().then_some(ParamValue::Int(x))
                        }
                        ParamValue::Bool(mut x) => ui.checkbox(&mut x, "").changed().then_some(ParamValue::Bool(x)),
                        ParamValue::Trigger(_) => ui.button("fire").clicked().then_some(ParamValue::Trigger(true)),
                    };
                    if let Some(value) = changed {
                        panel.changes.push(HandChange::Set(k, value));
                    }
                    ui.end_row();
                }
            });
        });
    if let Some(r) = response {
        laid(laid_out, "panel character", title, r.response.rect);
    }
    Ok(())
}
