//! Layout and drawing of a [`Timeline`]: rows stacked top to bottom (title; per layer a state
//! band and a weights lane; one lane per parameter; jump bars; clips sampled; time axis;
//! legend), time on the x axis.

use super::draw::{Painter, Rgb};
use super::{MarkKind, ParamKind, Timeline, font};

/// Image width, pixels: room for a 20 s script at about 50 pixels per second.
pub const WIDTH_PX: u32 = 1200;
/// Left margin for row labels, pixels.
pub const LABEL_W: f32 = 132.0;
/// Right margin for scale labels, pixels.
pub const SCALE_W: f32 = 48.0;
/// Title row height, pixels.
pub const TITLE_H: f32 = 22.0;
/// A layer's state band, pixels.
pub const BAND_H: f32 = 26.0;
/// A layer's weights lane, pixels.
pub const WEIGHTS_H: f32 = 52.0;
/// A parameter's lane, pixels.
pub const PARAM_H: f32 = 24.0;
/// The jump bars' lane, pixels.
pub const JUMP_H: f32 = 64.0;
/// The clips-sampled lane, pixels.
pub const CLIPS_H: f32 = 30.0;
/// Gap between rows, pixels.
pub const GAP: f32 = 6.0;
/// Time axis row, pixels.
pub const AXIS_H: f32 = 20.0;
/// One line of legend, pixels.
pub const LEGEND_LINE_H: f32 = 14.0;

pub(super) const BACKGROUND: Rgb = [255, 255, 255];
const INK: Rgb = [30, 30, 30];
const FAINT: Rgb = [120, 120, 120];
const LANE_BG: Rgb = [244, 244, 246];
const GRID: Rgb = [222, 222, 228];
const JUMP_RED: Rgb = [214, 39, 40];
const CLIPS_GREY: Rgb = [110, 110, 120];
const VALUE_BLUE: Rgb = [40, 70, 160];
const BOOL_TEAL: Rgb = [90, 170, 160];
const TRIGGER_PURPLE: Rgb = [170, 130, 200];
const SET_MARK: Rgb = [30, 30, 140];
const CONSUMED_MARK: Rgb = [220, 90, 0];
const PALETTE: [Rgb; 10] = [
    [78, 121, 167],
    [242, 142, 43],
    [89, 161, 79],
    [225, 87, 89],
    [118, 183, 178],
    [237, 201, 72],
    [176, 122, 161],
    [255, 157, 167],
    [156, 117, 95],
    [186, 176, 172],
];

/// A horizontal strip of the image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lane {
    /// Top edge, pixels from the top.
    pub y: f32,
    /// Height, pixels.
    pub height: f32,
}

/// Where everything of a timeline goes. The image is `width × height`; the plot area spans
/// `plot_left..plot_right` for times `0..end_s`.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Image width, pixels ([`WIDTH_PX`]).
    pub width: u32,
    /// Image height, pixels: the sum of the rows' heights and gaps.
    pub height: u32,
    /// Left edge of the plot area (time 0), pixels.
    pub plot_left: f32,
    /// Right edge of the plot area (the last frame's time), pixels.
    pub plot_right: f32,
    /// The last frame's time, seconds.
    pub end_s: f64,
    /// Per layer, the band coloured by active state.
    pub bands: Vec<Lane>,
    /// Per layer, the lane of weight lines.
    pub weights: Vec<Lane>,
    /// Per parameter, its lane.
    pub params: Vec<Lane>,
    /// The jump bars, when the timeline has them.
    pub jump: Option<Lane>,
    /// The clips-sampled bars, when the timeline has them.
    pub clips: Option<Lane>,
    /// The time axis.
    pub axis: Lane,
    /// The legend.
    pub legend: Lane,
    /// The colour of each state name shown, in legend order.
    pub colours: Vec<(String, Rgb)>,
    legend_items: Vec<Vec<LegendItem>>,
    frame_ends_s: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
enum Swatch {
    Fill(Rgb),
    Hatch,
    Down(Rgb),
    Up(Rgb),
    Tick,
}

#[derive(Clone, Debug, PartialEq)]
struct LegendItem {
    swatch: Swatch,
    text: String,
}

impl LegendItem {
    fn width(&self) -> f32 {
        12.0 + font::text_width(&self.text) as f32 + 16.0
    }
}

impl Layout {
    pub(super) fn new(t: &Timeline) -> Self {
        let mut colours: Vec<(String, Rgb)> = Vec::new();
        for layer in &t.layers {
            let mut used = vec![false; layer.states.len()];
            for f in &layer.frames {
                for s in std::iter::once(f.active)
                    .chain(f.previous.filter(|_| f.transitioning))
                    .chain(f.weights.iter().filter(|w| w.1 > 0.0).map(|w| w.0))
                {
                    if let Some(u) = used.get_mut(s) {
                        *u = true;
                    }
                }
            }
            for (name, _) in layer.states.iter().zip(&used).filter(|(_, u)| **u) {
                if colours.iter().all(|(n, _)| n != name) {
                    let i = colours.len();
                    let base = PALETTE[i % PALETTE.len()];
                    // Past ten states, reuse the palette darker rather than invent clashing hues.
                    let shade = if (i / PALETTE.len()) % 2 == 1 { 0.7 } else { 1.0 };
                    colours.push((name.clone(), base.map(|c| (f32::from(c) * shade) as u8)));
                }
            }
        }

        let width = WIDTH_PX;
        let plot_left = LABEL_W;
        let plot_right = width as f32 - SCALE_W;
        let mut y = TITLE_H;
        let mut lane = |height: f32| {
            let l = Lane { y, height };
            y += height + GAP;
            l
        };
        let mut bands = Vec::new();
        let mut weights = Vec::new();
        for _ in &t.layers {
            bands.push(lane(BAND_H));
            weights.push(lane(WEIGHTS_H));
        }
        let params = t.params.iter().map(|_| lane(PARAM_H)).collect();
        let jump = t.jump_cm.as_ref().map(|_| lane(JUMP_H));
        let clips = t.clips_sampled.as_ref().map(|_| lane(CLIPS_H));
        let axis = lane(AXIS_H);

        let mut items: Vec<LegendItem> =
            colours.iter().map(|(n, c)| LegendItem { swatch: Swatch::Fill(*c), text: n.clone() }).collect();
        if t.layers.iter().any(|l| l.frames.iter().any(|f| f.transitioning)) {
            items.push(LegendItem { swatch: Swatch::Hatch, text: "transition (stripes: state left)".into() });
        }
        let marks = |k: MarkKind| t.params.iter().any(|p| p.marks.iter().any(|m| m.kind == k));
        for (kind, swatch, text) in [
            (MarkKind::TriggerSet, Swatch::Down(SET_MARK), "trigger set"),
            (MarkKind::TriggerConsumed, Swatch::Up(CONSUMED_MARK), "trigger consumed"),
            (MarkKind::TriggerExpired, Swatch::Up(FAINT), "trigger expired unused"),
            (MarkKind::Changed, Swatch::Tick, "value changed"),
        ] {
            if marks(kind) {
                items.push(LegendItem { swatch, text: text.into() });
            }
        }
        if t.jump_cm.is_some() {
            items.push(LegendItem { swatch: Swatch::Fill(JUMP_RED), text: "worst joint jump".into() });
        }
        if t.clips_sampled.is_some() {
            items.push(LegendItem { swatch: Swatch::Fill(CLIPS_GREY), text: "clips sampled".into() });
        }
        let mut legend_items: Vec<Vec<LegendItem>> = vec![Vec::new()];
        let mut x = plot_left;
        for item in items {
            let w = item.width();
            if x + w > plot_right && legend_items.last().is_some_and(|l| !l.is_empty()) {
                legend_items.push(Vec::new());
                x = plot_left;
            }
            x += w;
            if let Some(line) = legend_items.last_mut() {
                line.push(item);
            }
        }
        let legend = Lane { y, height: legend_items.len() as f32 * LEGEND_LINE_H };
        let height = (legend.y + legend.height + GAP).ceil() as u32;
        Self {
            width,
            height,
            plot_left,
            plot_right,
            end_s: t.times_s.last().copied().unwrap_or(1.0),
            bands,
            weights,
            params,
            jump,
            clips,
            axis,
            legend,
            colours,
            legend_items,
            frame_ends_s: t.times_s.clone(),
        }
    }

    /// The x of time `t_s`, pixels.
    #[must_use]
    pub fn x_of(&self, t_s: f64) -> f32 {
        self.plot_left + ((t_s / self.end_s) as f32) * (self.plot_right - self.plot_left)
    }

    /// The x range frame `frame` covers: from the previous frame's time (0 for frame 0) to its
    /// own. `None` past the last frame.
    #[must_use]
    pub fn frame_span(&self, frame: usize) -> Option<(f32, f32)> {
        let end = *self.frame_ends_s.get(frame)?;
        let start = if frame == 0 { 0.0 } else { self.frame_ends_s[frame - 1] };
        Some((self.x_of(start), self.x_of(end)))
    }

    /// The colour a state name is drawn in.
    #[must_use]
    pub fn state_colour(&self, name: &str) -> Option<Rgb> {
        self.colours.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }
}

fn luminance(c: Rgb) -> f32 {
    0.299 * f32::from(c[0]) + 0.587 * f32::from(c[1]) + 0.114 * f32::from(c[2])
}

fn darker(c: Rgb) -> Rgb {
    c.map(|v| (f32::from(v) * 0.8) as u8)
}

/// 1, 2 or 5 × 10ⁿ: the smallest such step at least `min`.
fn nice_step(min: f64) -> f64 {
    if !(min > 0.0 && min.is_finite()) {
        return 1.0;
    }
    let p = 10f64.powf(min.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= min).unwrap_or(10.0 * p)
}

/// The smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 × 10ⁿ at least `v`: a bar scale that wastes little height.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// A short number: integers without decimals, others with up to two.
fn short(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// Runs of consecutive frames with the same key: `(first, last, key)`.
fn runs<K: PartialEq + Copy>(keys: impl Iterator<Item = K>) -> Vec<(usize, usize, K)> {
    let mut out: Vec<(usize, usize, K)> = Vec::new();
    for (f, k) in keys.enumerate() {
        match out.last_mut() {
            Some(run) if run.2 == k => run.1 = f,
            _ => out.push((f, f, k)),
        }
    }
    out
}

pub(super) fn draw(t: &Timeline, layout: &Layout, p: &mut impl Painter) {
    let left = layout.plot_left;
    let plot_w = layout.plot_right - left;
    let span = |f: usize| layout.frame_span(f).unwrap_or((left, left));
    let run_span = |a: usize, b: usize| (span(a).0, span(b).1);
    p.text(8.0, 7.0, &t.title, INK);

    // Lane backgrounds and the time grid under everything.
    let all_lanes = layout.weights.iter().chain(&layout.params).chain(&layout.jump).chain(&layout.clips);
    for lane in all_lanes {
        p.rect(left, lane.y, plot_w, lane.height, LANE_BG);
    }
    let step_s = nice_step(f64::from(60.0 / plot_w) * layout.end_s);
    let ticks: Vec<f64> = (0..).map(|i| f64::from(i) * step_s).take_while(|s| *s <= layout.end_s + 1e-9).collect();
    let grid_top = layout.bands.first().map_or(layout.axis.y, |b| b.y);
    for &s in &ticks {
        p.rect(layout.x_of(s), grid_top, 1.0, layout.axis.y - grid_top, GRID);
    }

    for (l, layer) in t.layers.iter().enumerate() {
        let (Some(band), Some(wl)) = (layout.bands.get(l), layout.weights.get(l)) else { continue };
        let colour = |s: usize| layer.states.get(s).and_then(|n| layout.state_colour(n)).unwrap_or(FAINT);
        p.text(8.0, band.y + 5.0, &layer.name, INK);
        p.text(8.0, band.y + 15.0, "active state", FAINT);
        let keys = layer.frames.iter().map(|f| (f.active, f.transitioning.then_some(f.previous).flatten()));
        for (a, b, (active, previous)) in runs(keys) {
            let (x0, x1) = run_span(a, b);
            p.rect(x0, band.y, x1 - x0, band.height, colour(active));
            if let Some(prev) = previous {
                let stripes = if prev == active { darker(colour(active)) } else { colour(prev) };
                p.hatch(x0, band.y, x1 - x0, band.height, stripes);
            }
        }
        // State names where a state stays long enough to hold its name.
        for (a, b, active) in runs(layer.frames.iter().map(|f| f.active)) {
            let (x0, x1) = run_span(a, b);
            let name = layer.states.get(active).map_or("", String::as_str);
            let w = font::text_width(name) as f32;
            if x1 - x0 >= w + 6.0 {
                let ink = if luminance(colour(active)) > 150.0 { INK } else { BACKGROUND };
                p.rect(x0 + 2.0, band.y + 8.0, w + 4.0, 11.0, colour(active));
                p.text(x0 + 4.0, band.y + 10.0, name, ink);
            }
        }

        p.text(8.0, wl.y + 4.0, "weights", INK);
        p.text(layout.plot_right + 4.0, wl.y, "1", FAINT);
        p.text(layout.plot_right + 4.0, wl.y + wl.height - 7.0, "0", FAINT);
        for s in 0..layer.states.len() {
            if !layer.frames.iter().any(|f| f.weights.iter().any(|w| w.0 == s && w.1 > 0.0)) {
                continue;
            }
            let points: Vec<(f32, f32)> = layer
                .frames
                .iter()
                .enumerate()
                .map(|(f, fr)| {
                    let w = fr.weights.iter().filter(|w| w.0 == s).map(|w| w.1).sum::<f32>().clamp(0.0, 1.0);
                    let (x0, x1) = span(f);
                    ((x0 + x1) * 0.5, wl.y + 1.0 + (1.0 - w) * (wl.height - 2.0))
                })
                .collect();
            p.polyline(&points, darker(colour(s)));
        }
    }

    for (param, lane) in t.params.iter().zip(&layout.params) {
        let kind = match param.kind {
            ParamKind::Float => "float",
            ParamKind::Int => "int",
            ParamKind::Bool => "bool",
            ParamKind::Trigger => "trigger",
        };
        p.text(8.0, lane.y + 3.0, &param.name, INK);
        match param.kind {
            ParamKind::Float | ParamKind::Int => {
                let min = param.values.iter().copied().fold(f32::INFINITY, f32::min);
                let max = param.values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                p.text(
                    8.0,
                    lane.y + 13.0,
                    &format!("{kind} {}..{}", short(f64::from(min)), short(f64::from(max))),
                    FAINT,
                );
                let y_of = |v: f32| {
                    let u = if max > min { (v - min) / (max - min) } else { 0.5 };
                    lane.y + 3.0 + (1.0 - u) * (lane.height - 6.0)
                };
                let mut points = Vec::with_capacity(param.values.len() * 2);
                for (f, &v) in param.values.iter().enumerate() {
                    let (x0, x1) = span(f);
                    points.push((x0, y_of(v)));
                    points.push((x1, y_of(v)));
                }
                p.polyline(&points, VALUE_BLUE);
                p.text(layout.plot_right + 4.0, lane.y, &short(f64::from(max)), FAINT);
                p.text(layout.plot_right + 4.0, lane.y + lane.height - 7.0, &short(f64::from(min)), FAINT);
            }
            ParamKind::Bool | ParamKind::Trigger => {
                p.text(8.0, lane.y + 13.0, kind, FAINT);
                let fill = if param.kind == ParamKind::Bool { BOOL_TEAL } else { TRIGGER_PURPLE };
                for (a, b, on) in runs(param.values.iter().map(|v| *v != 0.0)) {
                    if on {
                        let (x0, x1) = run_span(a, b);
                        p.rect(x0, lane.y + 7.0, x1 - x0, lane.height - 14.0, fill);
                    }
                }
            }
        }
        for m in &param.marks {
            let (x, _) = span(m.frame);
            let (top, bottom) = (lane.y, lane.y + lane.height);
            match m.kind {
                MarkKind::TriggerSet => p.triangle([(x - 4.0, top), (x + 4.0, top), (x, top + 6.0)], SET_MARK),
                MarkKind::TriggerConsumed => {
                    p.triangle([(x - 4.0, bottom), (x + 4.0, bottom), (x, bottom - 6.0)], CONSUMED_MARK)
                }
                MarkKind::TriggerExpired => {
                    p.triangle([(x - 3.0, bottom), (x + 3.0, bottom), (x, bottom - 5.0)], FAINT)
                }
                MarkKind::Changed => p.rect(x, bottom - 6.0, 1.0, 6.0, INK),
            }
        }
    }

    if let (Some(jump), Some(lane)) = (&t.jump_cm, &layout.jump) {
        let (worst_f, worst) =
            jump.iter().copied().enumerate().fold((0, 0.0f32), |a, (f, v)| if v > a.1 { (f, v) } else { a });
        let scale = nice_ceiling(f64::from(worst).max(0.1)) as f32;
        p.text(8.0, lane.y + 3.0, "jump cm", INK);
        let label = if t.jump_label.is_empty() { "worst joint" } else { t.jump_label.as_str() };
        p.text(8.0, lane.y + 13.0, label, FAINT);
        let at = t.times_s.get(worst_f).copied().unwrap_or(0.0);
        p.text(8.0, lane.y + 23.0, &format!("max {worst:.1} @ {at:.2}s"), FAINT);
        p.text(layout.plot_right + 4.0, lane.y, &short(f64::from(scale)), FAINT);
        p.text(layout.plot_right + 4.0, lane.y + lane.height - 7.0, "0", FAINT);
        for (f, &v) in jump.iter().enumerate() {
            let h = v / scale * lane.height;
            if h >= 0.5 {
                let (x0, x1) = span(f);
                p.rect(x0, lane.y + lane.height - h, (x1 - x0).max(1.0), h, JUMP_RED);
            }
        }
    }

    if let (Some(clips), Some(lane)) = (&t.clips_sampled, &layout.clips) {
        let max = clips.iter().copied().max().unwrap_or(0).max(1);
        p.text(8.0, lane.y + 3.0, "clips sampled", INK);
        p.text(layout.plot_right + 4.0, lane.y, &max.to_string(), FAINT);
        p.text(layout.plot_right + 4.0, lane.y + lane.height - 7.0, "0", FAINT);
        for (a, b, n) in runs(clips.iter().copied()) {
            if n > 0 {
                let (x0, x1) = run_span(a, b);
                let h = n as f32 / max as f32 * lane.height;
                p.rect(x0, lane.y + lane.height - h, x1 - x0, h, CLIPS_GREY);
            }
        }
    }

    let axis = layout.axis;
    p.rect(left, axis.y, plot_w, 1.0, INK);
    for &s in &ticks {
        let x = layout.x_of(s);
        p.rect(x, axis.y, 1.0, 4.0, INK);
        let label = format!("{}s", short(s));
        let w = font::text_width(&label) as f32;
        p.text((x - w * 0.5).clamp(0.0, layout.width as f32 - w), axis.y + 7.0, &label, INK);
    }
    p.text(8.0, axis.y + 7.0, "time", INK);

    for (i, line) in layout.legend_items.iter().enumerate() {
        let y = layout.legend.y + i as f32 * LEGEND_LINE_H;
        let mut x = left;
        for item in line {
            match item.swatch {
                Swatch::Fill(c) => p.rect(x, y, 10.0, 9.0, c),
                Swatch::Hatch => {
                    p.rect(x, y, 10.0, 9.0, LANE_BG);
                    p.hatch(x, y, 10.0, 9.0, FAINT);
                }
                Swatch::Down(c) => p.triangle([(x + 1.0, y + 1.0), (x + 9.0, y + 1.0), (x + 5.0, y + 8.0)], c),
                Swatch::Up(c) => p.triangle([(x + 1.0, y + 8.0), (x + 9.0, y + 8.0), (x + 5.0, y + 1.0)], c),
                Swatch::Tick => p.rect(x + 5.0, y, 1.0, 9.0, INK),
            }
            p.text(x + 13.0, y + 1.0, &item.text, INK);
            x += item.width();
        }
    }
}
