//! The demo's state graph (seed 000's idle/move/jump machine, an additive lean layer and a
//! masked upper-body wave layer) and the binding of any graph's leaves to the demo's clips.

use std::sync::Arc;

use crate::graph::CompiledGraph;
use crate::setup::{BindError, BoundArchetype, bind_archetype};

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
/// index, and the evaluator's layer setups ([`crate::setup::bind_archetype`]'s result).
pub type DemoArchetype = BoundArchetype;

/// Why a graph could not be bound to the demo character: a leaf naming no demo clip (its last
/// path segment, lower-cased, must be one of [`super::CLIP_NAMES`]) is
/// [`StateError::UnboundLeaf`](crate::state::StateError::UnboundLeaf) inside
/// [`BindError::State`]; a mask naming a joint the demo rig lacks is [`BindError::Layer`].
pub type DemoBindError = BindError;

impl DemoCharacter {
    /// Binds `graph` to this character with [`crate::setup::bind_archetype`]: each leaf plays
    /// the demo clip named by its last path segment, lower-cased (`"Move.Walk"` plays `walk`);
    /// leaves of additive layers play that clip as a delta over the first frame of `idle`.
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
        let reference = self.clip(IDLE).map(|idle| idle.frame(0));
        bind_archetype(graph, &self.rig, &self.clips, reference.as_deref(), |path| {
            let name = path.rsplit('.').next().unwrap_or(path).to_lowercase();
            self.clip_index(&name)
        })
    }
}
