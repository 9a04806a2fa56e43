//! Archetype setup: connects a compiled graph's layers to a rig for the evaluators.
//!
//! `graph` knows nothing of rigs and `eval` nothing of graphs; this module sits above both and
//! turns each graph layer (blend mode, space, mask by joint name) into an
//! [`eval::frame::LayerSetup`](crate::eval::frame::LayerSetup) resolved against one rig.
//!
//! Mask keys name joints; a key ending in `/*` names the joint **and every joint below it**.
//! Subtree keys apply first, parents before children, then plain names, so
//! `{ "spine_01/*": 1.0, "upperarm_l/*": 0.5, "head": 0.0 }` is "the upper body, the left arm at
//! half weight, but not the head".

use crate::eval::frame::{LayerBlend, LayerSetup, LayerSpace};
use crate::eval::layers::{Mask, MaskEntry, MaskError};
use crate::graph::{self, CompiledGraph};
use crate::rig::Rig;

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

/// The evaluator's layer setups for `graph` on `rig`, base layer first.
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
            let mask = if layer.mask.is_empty() { None } else { Some(mask_of(&layer.mask, rig).map_err(|source| LayerSetupError { layer: l, name: layer.name.clone(), source })?) };
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
            })
        })
        .collect()
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
