//! Archetype setup: connects a compiled graph to a rig and its clips for the state step and the
//! evaluators.
//!
//! `graph` knows nothing of rigs and `eval` nothing of graphs; this module sits above both.
//! [`bind_archetype`] does the whole binding an engine needs for its own assets: each leaf to a
//! clip, additive layers' clips turned into deltas, and each graph layer (blend mode, space,
//! mask by joint name) turned into an [`program::LayerSetup`](crate::program::LayerSetup)
//! resolved against the rig ([`layer_setups`] alone does the last).
//!
//! Mask keys name joints; a key ending in `/*` names the joint **and every joint below it**.
//! Subtree keys apply first, parents before children, then plain names, so
//! `{ "spine_01/*": 1.0, "upperarm_l/*": 0.5, "head": 0.0 }` is "the upper body, the left arm at
//! half weight, but not the head".

use std::sync::Arc;

use crate::clip::Clip;
use crate::graph::{self, CompiledGraph};
use crate::program::{LayerBlend, LayerSetup, LayerSpace, Mask, MaskEntry, MaskError};
use crate::rig::{Rig, Transform};
use crate::state::{Archetype, ClipBinding, StateError};

/// A graph bound to a rig's clips: the state step's archetype (which may play any clip of the
/// table as a one-shot), the clip table its samples index, and the evaluators' layer setups —
/// everything [`crate::state::Crowd::add_archetype`],
/// [`crate::eval::frame_layers::FrameJob`] and [`crate::gpu::GpuCrowd::with_layers`] take.
#[derive(Clone, Debug)]
pub struct BoundArchetype {
    /// Graph plus a clip per leaf, for [`crate::state::Crowd::add_archetype`].
    pub archetype: Archetype,
    /// The clip table: the clips given, then one additive delta per distinct clip that an
    /// additive layer's leaf plays.
    pub clips: Vec<Clip>,
    /// One setup per graph layer, masks resolved against the rig.
    pub layers: Vec<LayerSetup>,
}

/// Why a graph could not be bound to a rig's clips.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// A leaf was left without a clip, or its clip's duration is not positive
    /// ([`StateError::UnboundLeaf`], [`StateError::BadClipDuration`]).
    #[error(transparent)]
    State(#[from] StateError),
    /// A layer's mask does not fit the rig.
    #[error(transparent)]
    Layer(#[from] LayerSetupError),
    /// The leaf's chosen clip index is past the clip table.
    #[error("leaf {path:?}: clip {clip} chosen, the table holds {num_clips}")]
    UnknownClip {
        /// The leaf's path (`"State"` or `"State.Child"`).
        path: String,
        /// The index chosen.
        clip: usize,
        /// Clips given.
        num_clips: usize,
    },
    /// The additive reference pose does not hold one transform per joint.
    #[error("the additive reference pose has {got} transforms; the rig has {joints} joints")]
    ReferenceLength {
        /// Transforms given.
        got: usize,
        /// The rig's joints.
        joints: usize,
    },
}

/// Binds `graph` to `rig` and its `clips`: `clip_for_leaf` gets each leaf's path (`"Idle"`,
/// `"Move.Walk"`) and returns the index of the clip it plays, or `None` to refuse. Leaves of
/// additive layers play their clip as a delta over `additive_reference` (one transform per
/// joint: the pose the additive clips were authored over, often the first frame of an idle;
/// `None` takes the rig's rest pose), appended to the table once per clip.
///
/// ```
/// use std::sync::Arc;
/// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
/// use throng::graph::CompiledGraph;
/// use throng::setup::bind_archetype;
///
/// // Any rig and clips will do: glTF's `load_gltf` gives them. Leaves are matched to clips by
/// // the last segment of their path, lower-cased ("Move.Walk" plays "walk").
/// let DemoCharacter { rig, clips, .. } = DemoCharacter::humanoid();
/// let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?);
/// let bound = bind_archetype(graph, &rig, &clips, None, |path| {
///     let name = path.rsplit('.').next()?.to_lowercase();
///     clips.iter().position(|c| c.name() == name)
/// })?;
/// assert_eq!(bound.layers.len(), 3);
/// assert_eq!(bound.clips.len(), clips.len() + 1); // the lean layer's clip, as a delta
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`BindError::ReferenceLength`], [`BindError::Layer`] for a mask that does not fit the rig,
/// [`BindError::UnknownClip`], [`BindError::State`] for a leaf refused or a clip of zero
/// duration.
pub fn bind_archetype(
    graph: Arc<CompiledGraph>,
    rig: &Rig,
    clips: &[Clip],
    additive_reference: Option<&[Transform]>,
    mut clip_for_leaf: impl FnMut(&str) -> Option<usize>,
) -> Result<BoundArchetype, BindError> {
    let reference = additive_reference.unwrap_or(rig.rest_pose());
    if reference.len() != rig.num_joints() {
        return Err(BindError::ReferenceLength { got: reference.len(), joints: rig.num_joints() });
    }
    let layers = layer_setups(&graph, rig)?;
    let mut table = clips.to_vec();
    // (clip given, its delta's index in the table), one per clip an additive leaf plays.
    let mut additive: Vec<(usize, u32)> = Vec::new();
    let mut unknown = None;
    let archetype = Archetype::new(Arc::clone(&graph), |path| {
        let clip = clip_for_leaf(path)?;
        let Some(source) = clips.get(clip) else {
            unknown.get_or_insert(BindError::UnknownClip { path: path.to_owned(), clip, num_clips: clips.len() });
            return None;
        };
        let leaf_state = graph.leaves().iter().find(|l| l.path == path)?.state as usize;
        let layer = graph.states().get(leaf_state)?.layer as usize;
        let index = if layers.get(layer).is_some_and(|l| l.blend == LayerBlend::Additive) {
            match additive.iter().find(|(c, _)| *c == clip) {
                Some(&(_, delta)) => delta,
                None => {
                    // The table holds at most twice the clips given, far inside u32 for any
                    // table that fits in memory.
                    let delta = table.len() as u32;
                    table.push(source.to_additive(reference));
                    additive.push((clip, delta));
                    delta
                }
            }
        } else {
            clip as u32
        };
        Some(ClipBinding { clip: index, duration_s: source.duration_s() })
    });
    match (archetype, unknown) {
        (_, Some(e)) => Err(e),
        (Ok(archetype), None) => {
            // Every clip of the table may play as a one-shot on a slot layer.
            let durations: Vec<f32> = table.iter().map(Clip::duration_s).collect();
            // Sync markers cost nothing until a transition syncs by them.
            let archetype = archetype.with_clip_durations(&durations)?.with_markers_from_clips(&table)?;
            Ok(BoundArchetype { archetype, clips: table, layers })
        }
        (Err(e), None) => Err(e.into()),
    }
}

/// A graph layer whose mask does not fit the rig: which layer, and what is wrong with its mask.
#[derive(Debug, thiserror::Error)]
#[error("layer {layer} ({name}): {source}")]
#[non_exhaustive]
pub struct LayerSetupError {
    /// The layer's index in the graph, base layer 0.
    pub layer: usize,
    /// The layer's name in the graph.
    pub name: String,
    /// The mask entry at fault and why.
    pub source: MaskError,
}

/// The evaluator's layer setups for `graph` on `rig`, base layer first. A layer keeps
/// per-character memory ([`LayerSetup::needs_memory`]) only when [`layer_needs_memory`] says
/// its graph can show two states at once.
///
/// # Errors
/// [`LayerSetupError`] naming the layer and its mask entry (in the order subtree keys first,
/// parents first, then plain names) when a mask names a joint the rig lacks or a weight outside
/// [0, 1].
pub fn layer_setups(graph: &CompiledGraph, rig: &Rig) -> Result<Vec<LayerSetup>, LayerSetupError> {
    graph
        .layers()
        .iter()
        .enumerate()
        .map(|(l, layer)| {
            let mask = if layer.mask.is_empty() {
                None
            } else {
                Some(mask_of(&layer.mask, rig).map_err(|source| LayerSetupError {
                    layer: l,
                    name: layer.name.clone(),
                    source,
                })?)
            };
            Ok(LayerSetup {
                blend: match layer.blend {
                    graph::LayerBlend::Override => LayerBlend::Override,
                    graph::LayerBlend::Additive => LayerBlend::Additive,
                },
                space: match layer.space {
                    graph::LayerSpace::Local => LayerSpace::Local,
                    graph::LayerSpace::Mesh => LayerSpace::Mesh,
                },
                mask,
                needs_memory: layer_needs_memory(graph, l),
            })
        })
        .collect()
}

/// Whether graph layer `layer` can ever show two states at once, and so needs memory per
/// character between frames: some transition of the layer has a positive duration and a switch
/// mode other than a cut (frozen, crossfade, inertialization; a spring of halflife 0 is a cut).
/// Without one, the state step emits nothing but cuts for the layer — no crossfade to
/// interrupt into a frozen snapshot, no offset to decay — so the evaluators can show its samples
/// as they are and remember nothing. The built-in graph's lean and wave layers have no
/// transitions at all. A slot (`slot`) always needs memory: a one-shot blends in from the
/// pose the layer displayed, frozen at its start.
#[must_use]
pub fn layer_needs_memory(graph: &CompiledGraph, layer: usize) -> bool {
    graph.layer_needs_memory(layer)
}

/// Resolves a graph mask (joint name or `name/*` → weight) against `rig`.
///
/// # Errors
/// [`MaskError::UnknownJoint`] or [`MaskError::BadWeight`].
pub fn mask_of(mask: &[(String, f32)], rig: &Rig) -> Result<Mask, MaskError> {
    let mut entries: Vec<MaskEntry> = mask
        .iter()
        .map(|(key, weight)| match key.strip_suffix("/*") {
            Some(joint) => MaskEntry { joint: joint.to_owned(), weight: *weight, descendants: true },
            None => MaskEntry { joint: key.clone(), weight: *weight, descendants: false },
        })
        .collect();
    // Subtrees first, parents before children (joint order is parent-first); plain names last.
    // Unknown joints sort first so the error names them whatever their position.
    entries.sort_by_key(|e| (!e.descendants, rig.find_joint(&e.joint).map_or(-1, |j| j as i64)));
    Mask::from_entries(rig, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::DemoCharacter;

    #[test]
    fn subtree_keys_apply_before_plain_names() {
        let rig = DemoCharacter::humanoid().rig;
        let mask = vec![("head".to_owned(), 0.0), ("spine_01/*".to_owned(), 1.0), ("upperarm_l/*".to_owned(), 0.5)];
        let m = mask_of(&mask, &rig).unwrap();
        let w = |name: &str| m.weights()[rig.find_joint(name).unwrap()];
        assert_eq!((w("spine_03"), w("hand_l"), w("head"), w("foot_l")), (1.0, 0.5, 0.0, 0.0));
        let bad = vec![("nope/*".to_owned(), 1.0)];
        assert!(matches!(mask_of(&bad, &rig), Err(MaskError::UnknownJoint { .. })));
    }
}
