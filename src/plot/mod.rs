//! Timeline plots of a character's state graph over time, as PNG or SVG: which state each layer
//! plays, its transitions, each state's share of the pose, triggers and parameters, and (when
//! poses were evaluated) the worst joint jump and the clips sampled on each frame.
//!
//! A [`Timeline`] is plain data, one entry per frame, so any program can fill it: the trace
//! tool does it from a script ([`from_script`]), a report can do it from its own evaluation.
//! Drawing is self-contained (a small rasteriser with a built-in 5×7 font, and an SVG writer);
//! `image` only encodes the PNG.
//!
//! ```
//! use throng::plot::{LayerFrame, LayerTrack, Timeline};
//!
//! let mut timeline = Timeline::new("idle then walk", (1..=60).map(|f| f as f64 / 30.0).collect());
//! let mut base = LayerTrack::new("Base", vec!["Idle".into(), "Walk".into()]);
//! for frame in 0..60 {
//!     base.frames.push(if frame < 30 { LayerFrame::settled(0) } else { LayerFrame::settled(1) });
//! }
//! timeline.layers.push(base);
//! let svg = timeline.to_svg_string()?;
//! assert!(svg.starts_with("<svg") && svg.contains("Walk"));
//! # Ok::<(), throng::plot::PlotError>(())
//! ```

mod draw;
pub mod font;
mod render;
mod script;

use std::path::{Path, PathBuf};

/// `docs/trace.md`, compiled so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../../docs/trace.md")]
pub struct TraceDocs;

pub use crate::graph::ParamKind;
pub use draw::{Painter, Raster, Rgb, Svg};
pub use render::{
    AXIS_H, BAND_H, CLIPS_H, GAP, JUMP_H, LEGEND_LINE_H, Lane, Layout, PARAM_H, TITLE_H, WEIGHTS_H, WIDTH_PX,
};
pub use script::{JUMP_MEASURE, from_script, from_script_each};

use crate::eval::EvalError;
use crate::trace::TraceError;

/// Why a timeline could not be built or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The timeline's data does not hang together.
    #[error("timeline: {0}")]
    Invalid(String),
    /// The output path's extension is neither `.png` nor `.svg`.
    #[error("{path}: unknown plot extension; use .png or .svg")]
    Extension {
        /// The path given.
        path: PathBuf,
    },
    /// Writing the file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// PNG encoding failed.
    #[error("PNG encoding: {0}")]
    Png(String),
    /// The trace script failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A layer's mask names a joint the script's character lacks.
    #[error("layer {layer:?}: mask joint {joint:?} is not in the {character} character's rig")]
    Mask {
        /// The layer.
        layer: String,
        /// The joint named.
        joint: String,
        /// The character.
        character: String,
    },
    /// Pose evaluation refused a frame.
    #[error("frame {frame}: pose evaluation: {source}")]
    Eval {
        /// Frame number from 0.
        frame: usize,
        /// Why.
        source: EvalError,
    },
}

/// One layer on one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerFrame {
    /// The active state, an index into [`LayerTrack::states`].
    pub active: usize,
    /// The state a transition in flight comes from (drawn as hatching over the band).
    pub previous: Option<usize>,
    /// Whether a transition is in flight.
    pub transitioning: bool,
    /// Each state's share of the layer's pose in [0, 1], by index into [`LayerTrack::states`];
    /// states not listed have 0.
    pub weights: Vec<(usize, f32)>,
}

impl LayerFrame {
    /// `state` alone at full weight, no transition.
    #[must_use]
    pub fn settled(state: usize) -> Self {
        Self { active: state, previous: None, transitioning: false, weights: vec![(state, 1.0)] }
    }
}

/// One layer over the whole timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerTrack {
    /// Layer name.
    pub name: String,
    /// State names; frames refer to them by index. Each name keeps one colour across layers.
    pub states: Vec<String>,
    /// One entry per frame.
    pub frames: Vec<LayerFrame>,
}

impl LayerTrack {
    /// A layer with no frames yet.
    #[must_use]
    pub fn new(name: impl Into<String>, states: Vec<String>) -> Self {
        Self { name: name.into(), states, frames: Vec::new() }
    }
}

/// What happened to a parameter on a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// A float, integer or boolean took a new value.
    Changed,
    /// A trigger was set (drawn as a downward triangle).
    TriggerSet,
    /// A trigger was cleared by a transition that named it (an upward triangle).
    TriggerConsumed,
    /// A trigger was cleared at the end of the update without a transition using it: a
    /// single-frame trigger nobody wanted (a hollow marker).
    TriggerExpired,
}

/// A marker on a parameter's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Frame number from 0.
    pub frame: usize,
    /// What happened.
    pub kind: MarkKind,
}

/// One parameter over the whole timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamTrack {
    /// Parameter name.
    pub name: String,
    /// Its type: floats and integers draw as a line, booleans and triggers as filled spans.
    pub kind: ParamKind,
    /// The value each frame's update read; booleans and triggers as 0 or 1.
    pub values: Vec<f32>,
    /// Changes, trigger sets and clears, in any order.
    pub marks: Vec<Mark>,
}

/// Everything a timeline plot shows, one entry per frame in every per-frame list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Title printed at the top.
    pub title: String,
    /// Seconds elapsed after each frame's update, increasing; frame `i` spans
    /// `times_s[i-1]..times_s[i]` on the time axis (from 0 for frame 0).
    pub times_s: Vec<f64>,
    /// Layers, base first.
    pub layers: Vec<LayerTrack>,
    /// Parameters, in the order their rows are drawn.
    pub params: Vec<ParamTrack>,
    /// Per frame, the worst joint jump in centimetres (see [`JUMP_MEASURE`] for the trace
    /// tool's measure; a caller may use its own and say so in `jump_label`).
    pub jump_cm: Option<Vec<f32>>,
    /// What `jump_cm` measures, printed beside its row; empty for the default label.
    pub jump_label: String,
    /// Per frame, clips sampled to make the pose.
    pub clips_sampled: Option<Vec<u32>>,
}

impl Timeline {
    /// An empty timeline over the given frame times.
    #[must_use]
    pub fn new(title: impl Into<String>, times_s: Vec<f64>) -> Self {
        Self { title: title.into(), times_s, ..Self::default() }
    }

    /// Checks that every per-frame list has one entry per frame, times are finite and
    /// increasing, and state indices exist.
    ///
    /// # Errors
    /// [`PlotError::Invalid`] naming the layer, parameter or row and the frame.
    pub fn validate(&self) -> Result<(), PlotError> {
        let frames = self.times_s.len();
        let invalid = |what: String| Err(PlotError::Invalid(what));
        if frames == 0 {
            return invalid("no frames".into());
        }
        let mut before = 0.0;
        for (f, &t) in self.times_s.iter().enumerate() {
            if !(t.is_finite() && t > before) {
                return invalid(format!("times_s[{f}] = {t} is not finite and after {before}"));
            }
            before = t;
        }
        for layer in &self.layers {
            if layer.frames.len() != frames {
                return invalid(format!("layer {:?} has {} frames for {frames} times", layer.name, layer.frames.len()));
            }
            let states = layer.states.len();
            for (f, fr) in layer.frames.iter().enumerate() {
                let bad_weight = fr.weights.iter().find(|(s, w)| *s >= states || !w.is_finite());
                if fr.active >= states || fr.previous.is_some_and(|p| p >= states) || bad_weight.is_some() {
                    return invalid(format!(
                        "layer {:?} frame {f}: a state index past its {states} states or a non-finite weight",
                        layer.name
                    ));
                }
            }
        }
        for p in &self.params {
            if p.values.len() != frames {
                return invalid(format!("parameter {:?} has {} values for {frames} frames", p.name, p.values.len()));
            }
            if let Some(f) = p.values.iter().position(|v| !v.is_finite()) {
                return invalid(format!("parameter {:?} frame {f}: value is not finite", p.name));
            }
            if let Some(m) = p.marks.iter().find(|m| m.frame >= frames) {
                return invalid(format!("parameter {:?}: mark at frame {} past the {frames} frames", p.name, m.frame));
            }
        }
        if let Some(j) = &self.jump_cm {
            if j.len() != frames {
                return invalid(format!("jump_cm has {} values for {frames} frames", j.len()));
            }
            if let Some(f) = j.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
                return invalid(format!("jump_cm frame {f}: not a finite distance"));
            }
        }
        if let Some(c) = self.clips_sampled.as_ref().filter(|c| c.len() != frames) {
            return invalid(format!("clips_sampled has {} values for {frames} frames", c.len()));
        }
        Ok(())
    }

    /// Where everything goes; [`Layout::width`] × [`Layout::height`] is the image size.
    ///
    /// # Errors
    /// As [`Timeline::validate`].
    pub fn layout(&self) -> Result<Layout, PlotError> {
        self.validate()?;
        Ok(Layout::new(self))
    }

    /// Draws the timeline with any painter (for a caller's own output format).
    ///
    /// # Errors
    /// As [`Timeline::validate`].
    pub fn draw(&self, painter: &mut impl Painter) -> Result<Layout, PlotError> {
        let layout = self.layout()?;
        render::draw(self, &layout, painter);
        Ok(layout)
    }

    /// The timeline as an RGB image.
    ///
    /// # Errors
    /// As [`Timeline::validate`].
    pub fn to_raster(&self) -> Result<Raster, PlotError> {
        let layout = self.layout()?;
        let mut raster = Raster::new(layout.width, layout.height, render::BACKGROUND);
        render::draw(self, &layout, &mut raster);
        Ok(raster)
    }

    /// The timeline as PNG bytes.
    ///
    /// # Errors
    /// As [`Timeline::validate`]; [`PlotError::Png`].
    pub fn to_png_bytes(&self) -> Result<Vec<u8>, PlotError> {
        let raster = self.to_raster()?;
        let mut bytes = Vec::new();
        let encoder = image::codecs::png::PngEncoder::new(&mut bytes);
        image::ImageEncoder::write_image(
            encoder,
            raster.pixels(),
            raster.width(),
            raster.height(),
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| PlotError::Png(e.to_string()))?;
        Ok(bytes)
    }

    /// The timeline as an SVG document.
    ///
    /// # Errors
    /// As [`Timeline::validate`].
    pub fn to_svg_string(&self) -> Result<String, PlotError> {
        let layout = self.layout()?;
        let mut svg = Svg::new(layout.width, layout.height, render::BACKGROUND);
        render::draw(self, &layout, &mut svg);
        Ok(svg.finish())
    }

    /// Writes a PNG.
    ///
    /// # Errors
    /// As [`Timeline::to_png_bytes`]; [`PlotError::Io`].
    pub fn to_png(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        write(path.as_ref(), &self.to_png_bytes()?)
    }

    /// Writes an SVG.
    ///
    /// # Errors
    /// As [`Timeline::to_svg_string`]; [`PlotError::Io`].
    pub fn to_svg(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        write(path.as_ref(), self.to_svg_string()?.as_bytes())
    }

    /// Writes a PNG or an SVG, by the path's extension (case-insensitive).
    ///
    /// # Errors
    /// [`PlotError::Extension`] for any other extension; as [`Timeline::to_png`] and
    /// [`Timeline::to_svg`].
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        let path = path.as_ref();
        match PlotFormat::of(path)? {
            PlotFormat::Png => self.to_png(path),
            PlotFormat::Svg => self.to_svg(path),
        }
    }
}

/// An output format, chosen by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.png`
    Png,
    /// `.svg`
    Svg,
}

impl PlotFormat {
    /// The format `path`'s extension names.
    ///
    /// # Errors
    /// [`PlotError::Extension`] when it is neither `.png` nor `.svg`.
    pub fn of(path: &Path) -> Result<Self, PlotError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(Self::Png),
            Some("svg") => Ok(Self::Svg),
            _ => Err(PlotError::Extension { path: path.to_owned() }),
        }
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    std::fs::write(path, bytes).map_err(|source| PlotError::Io { path: path.to_owned(), source })
}
