//! The demo's state graph (seed 000's idle/move/jump machine, an additive lean layer and a
//! masked upper-body wave layer) and the binding of any graph's leaves to the demo's clips.

use std::sync::Arc;

use crate::clip::Clip;
use crate::eval::frame::{LayerBlend, LayerSetup};
use crate::eval::layers::MaskError;
use crate::graph::CompiledGraph;
use crate::setup::layer_setups;
use crate::state::{Archetype, ClipBinding, StateError};

use super::{DemoCharacter, IDLE};

/// The demo graph, runtime form. Parameters: `speed` (FLOAT, m/s), `jump` (TRIGGER), `lean`
/// and `wave` (FLOAT in [0, 1], the lean and wave layers' weights).
///
/// | layer | blend | states |
/// |---|---|---|
/// | Base | override | Idle ⇄ Move (1D: idle 0, walk 1.5, run 4.0 m/s, synced; in above 0.15, out below 0.1), Idle/Move → Jump on `jump`, Jump leaves by exit time 0.75 so its 0.25 s blend ends as the clip does; root motion on |
/// | Lean | additive, weight × `lean` | Lean (the lean clip as a delta over idle) |
/// | Wave | override, `spine_01/*` but not the left arm, weight × `wave` | Wave |
///
/// Switches inertialize (quintic with overshoot control) unless a transition says otherwise.
pub const LOCOMOTION_GRAPH: &str = include_str!("locomotion.json");

/// A graph bound to the demo character: the state step's archetype, the clip table its samples
/// index, and the evaluator's layer setups.
#[derive(Clone, Debug)]
pub struct DemoArchetype {
    /// Graph plus a clip per leaf, for [`crate::state::Crowd::add_archetype`].
    pub archetype: Archetype,
    /// The clip table: the demo's clips, then each additive layer's clips as deltas over the
    /// first frame of `idle`.
    pub clips: Vec<Clip>,
    /// One setup per graph layer, masks resolved against the demo rig.
    pub layers: Vec<LayerSetup>,
}

/// Why a graph could not be bound to the demo character.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoBindError {
    /// A leaf names no demo clip (its last path segment, lower-cased, must be one of
    /// [`super::CLIP_NAMES`]), or another archetype problem.
    #[error(transparent)]
    State(#[from] StateError),
    /// A layer's mask does not fit the demo rig.
    #[error("layer {layer}: {source}")]
    Mask {
        /// The layer index.
        layer: usize,
        /// What is wrong.
        source: MaskError,
    },
}

impl DemoCharacter {
    /// Binds `graph` to this character: each leaf plays the demo clip named by its last path
    /// segment, lower-cased (`"Move.Walk"` plays `walk`); leaves of additive layers play that
    /// clip as a delta over the first frame of `idle`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
    /// use throng::graph::CompiledGraph;
    /// let demo = DemoCharacter::humanoid();
    /// let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap());
    /// let bound = demo.bind(graph).unwrap();
    /// assert_eq!(bound.layers.len(), 3);
    /// ```
    pub fn bind(&self, graph: Arc<CompiledGraph>) -> Result<DemoArchetype, DemoBindError> {
        let layers = layer_setups(&graph, &self.rig).map_err(|e| DemoBindError::Mask { layer: e.layer, source: e.source })?;
        let mut clips = self.clips.clone();
        let reference = self.clip(IDLE).map(|idle| idle.frame(0).to_vec()).unwrap_or_else(|| self.rig.rest_pose().to_vec());
        let mut additive: Vec<(usize, u32)> = Vec::new();
        let archetype = Archetype::new(graph.clone(), |path| {
            let name = path.rsplit('.').next().unwrap_or(path).to_lowercase();
            let clip = self.clip_index(&name)?;
            let leaf_state = graph.leaves().iter().find(|l| l.path == path)?.state as usize;
            let layer = graph.states().get(leaf_state)?.layer as usize;
            let index = if layers.get(layer).is_some_and(|l| l.blend == LayerBlend::Additive) {
                match additive.iter().find(|(c, _)| *c == clip) {
                    Some(&(_, delta)) => delta,
                    None => {
                        let delta = clips.len() as u32;
                        clips.push(self.clips[clip].to_additive(&reference));
                        additive.push((clip, delta));
                        delta
                    }
                }
            } else {
                clip as u32
            };
            Some(ClipBinding { clip: index, duration_s: self.clips[clip].duration_s() })
        })?;
        Ok(DemoArchetype { archetype, clips, layers })
    }
}
