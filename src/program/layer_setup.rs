//! Layer setup: how an archetype's layers combine (blend, space, mask) and the order both
//! evaluators run them in. Fixed per archetype, read by `eval::frame_layers::FrameJob` and
//! `gpu::GpuCrowd::with_layers` alike, so it sits beside the pose programs rather than in
//! either evaluator.

use super::{LayerProgram, ProgramError, SwitchMode};
use crate::rig::Rig;

/// How a layer combines with the layers below it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayerBlend {
    /// Replaces the pose below, per joint by weight × mask.
    #[default]
    Override,
    /// Adds its delta onto the pose below; its clips are additive deltas (see
    /// [`crate::Clip::to_additive`]).
    Additive,
}

/// In which space an override layer's masked joints keep the layer's rotation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayerSpace {
    /// Joints keep the layer's angle to their parent, inheriting what the base does above them.
    #[default]
    Local,
    /// Joints keep the layer's model-space rotation whatever the base does above them.
    Mesh,
}

/// A layer's fixed setup, shared by every character of an archetype.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerSetup {
    /// Override or additive.
    pub blend: LayerBlend,
    /// Local or mesh space (override layers).
    pub space: LayerSpace,
    /// Per-joint weights; `None` is the whole body.
    pub mask: Option<Mask>,
    /// Whether the layer keeps memory per character between frames (the last two displayed
    /// poses, the frozen snapshot, inertialization offsets: 144 bytes per joint on the GPU).
    /// A layer whose graph can never show two states at once (every transition a cut) needs
    /// none: [`crate::setup::layer_setups`] clears this for such layers, and the evaluators then
    /// keep nothing for them and refuse any program of theirs that is not a plain cut
    /// ([`validate_memoryless_programs`]). `true` by default, so a hand-built setup behaves as
    /// before.
    pub needs_memory: bool,
}

impl Default for LayerSetup {
    fn default() -> Self {
        Self { blend: LayerBlend::default(), space: LayerSpace::default(), mask: None, needs_memory: true }
    }
}

/// Most layers a stack may hold: a graph's most (`graph::MAX_LAYERS`, which the state step's
/// tests hold equal to it). The GPU's kernels are built knowing which of a stack's layers keep
/// memory, a bit each (`gpu::memory_layers`).
pub const MAX_LAYERS: usize = 16;

/// Checks an archetype's layer setup against a rig of `num_joints` joints: at least one layer,
/// at most [`MAX_LAYERS`], and every mask one weight per joint ([`ProgramError::Layers`]). Shared by [`FrameJob`](crate::eval::frame_layers::FrameJob) and
/// the GPU evaluator, so that both accept the same layers.
pub fn validate_layer_setups(layers: &[LayerSetup], num_joints: usize) -> Result<(), ProgramError> {
    if layers.is_empty() {
        return Err(ProgramError::Layers("an archetype needs at least one layer".into()));
    }
    if layers.len() > MAX_LAYERS {
        return Err(ProgramError::Layers(format!(
            "{} layers, more than the {} a graph may have",
            layers.len(),
            MAX_LAYERS
        )));
    }
    for (l, layer) in layers.iter().enumerate() {
        if let Some(mask) = layer.mask.as_ref().filter(|m| m.weights().len() != num_joints) {
            return Err(ProgramError::Layers(format!(
                "layer {l}: mask has {} weights for {num_joints} joints",
                mask.weights().len()
            )));
        }
    }
    Ok(())
}

/// Checks that every program of a layer without memory ([`LayerSetup::needs_memory`] false)
/// is a plain cut: mode [`SwitchMode::Cut`] and no [`LayerProgram::SOURCE_SNAPSHOT`]
/// ([`ProgramError::NeedsMemory`] names the first that is not). Such a layer has nothing to
/// fade or decay from, so showing anything else would silently drop the transition. Shared by
/// [`FrameJob`](crate::eval::frame_layers::FrameJob) and the GPU evaluator; `programs` holds `layers.len()` per character.
pub fn validate_memoryless_programs(programs: &[LayerProgram], layers: &[LayerSetup]) -> Result<(), ProgramError> {
    memoryless_check(programs.iter().map(|p| (p.mode, p.flags)), layers)
}

/// [`validate_memoryless_programs`] for state records (`crate::program::LayerRecord`), whose
/// mode and flags become their programs' as they are.
pub fn validate_memoryless_records(
    records: &[crate::program::LayerRecord],
    layers: &[LayerSetup],
) -> Result<(), ProgramError> {
    memoryless_check(records.iter().map(|r| (u32::from(r.mode), u32::from(r.flags))), layers)
}

fn memoryless_check(
    modes_and_flags: impl Iterator<Item = (u32, u32)>,
    layers: &[LayerSetup],
) -> Result<(), ProgramError> {
    let num_layers = layers.len();
    if num_layers == 0 || layers.iter().all(|l| l.needs_memory) {
        return Ok(());
    }
    for (i, (mode, flags)) in modes_and_flags.enumerate() {
        let layer = i % num_layers;
        let memoryless = layers.get(layer).is_some_and(|l| !l.needs_memory);
        if memoryless && (SwitchMode::from_code(mode) != SwitchMode::Cut || flags & LayerProgram::SOURCE_SNAPSHOT != 0)
        {
            return Err(ProgramError::NeedsMemory { character: i / num_layers, layer, mode, flags });
        }
    }
    Ok(())
}

/// How many of `layers` add their clips as deltas: the clip checks ([`crate::program::validate_clips`])
/// bound the scale a pose can reach through them. Layer 0 is the base whatever its blend says
/// (see [`evaluation_order`]), so it never counts. Shared by [`FrameJob`](crate::eval::frame_layers::FrameJob)
/// and the GPU evaluator, so that both accept the same clips.
#[must_use]
pub fn num_additive_layers(layers: &[LayerSetup]) -> usize {
    layers.iter().skip(1).filter(|l| l.blend == LayerBlend::Additive).count()
}

/// Each layer's slot in a character's memory: the layers that keep memory
/// ([`LayerSetup::needs_memory`]) numbered in layer order, `None` for a layer that keeps none.
/// The one numbering the CPU evaluator's memory
/// ([`EvalContext::for_layers`](crate::eval::frame_layers::EvalContext::for_layers)) and the GPU's
/// layer table (`gpu::layer_stack`) both lay a character's memory out by.
///
/// ```
/// use throng::program::{LayerSetup, memory_slots};
///
/// let forgetful = LayerSetup { needs_memory: false, ..LayerSetup::default() };
/// let layers = [LayerSetup::default(), forgetful, LayerSetup::default()];
/// assert_eq!(memory_slots(&layers).collect::<Vec<_>>(), [Some(0), None, Some(1)]);
/// ```
pub fn memory_slots(layers: &[LayerSetup]) -> impl Iterator<Item = Option<usize>> + '_ {
    layers.iter().scan(0, |next, layer| {
        Some(layer.needs_memory.then(|| {
            *next += 1;
            *next - 1
        }))
    })
}

/// The order layers are evaluated in: the base (layer 0), then additive layers, then override
/// layers, each group in index order.
#[must_use]
pub fn evaluation_order(layers: &[LayerSetup]) -> Vec<usize> {
    evaluation_order_iter(layers).collect()
}

/// [`evaluation_order`] without the `Vec`, for the CPU frame's per-character loop.
///
/// ```
/// use throng::program::{LayerBlend, LayerSetup, evaluation_order, evaluation_order_iter};
///
/// let over = LayerSetup { blend: LayerBlend::Override, ..LayerSetup::default() };
/// let add = LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() };
/// let layers = [LayerSetup::default(), over, add];
/// assert_eq!(evaluation_order_iter(&layers).collect::<Vec<_>>(), [0, 2, 1]);
/// assert_eq!(evaluation_order(&layers), [0, 2, 1]);
/// ```
pub fn evaluation_order_iter(layers: &[LayerSetup]) -> impl Iterator<Item = usize> + '_ {
    let additive = (1..layers.len()).filter(|&l| layers[l].blend == LayerBlend::Additive);
    let overrides = (1..layers.len()).filter(|&l| layers[l].blend == LayerBlend::Override);
    std::iter::once(0).chain(additive).chain(overrides).take(layers.len())
}

/// Per-joint layer weights in [0, 1], resolved against one rig.
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    weights: Vec<f32>,
}

/// Why a mask could not be resolved against a rig.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// The mask names a joint the rig does not have.
    #[error("mask entry {entry} names joint {joint:?}, which the rig does not have")]
    UnknownJoint {
        /// Index of the entry in the mask definition.
        entry: usize,
        /// The name given.
        joint: String,
    },
    /// A weight is outside [0, 1] or not finite.
    #[error("mask entry {entry} ({joint:?}) has weight {weight}; weights must be in [0, 1]")]
    BadWeight {
        /// Index of the entry.
        entry: usize,
        /// The joint named.
        joint: String,
        /// The weight given.
        weight: f32,
    },
}

/// One entry of a mask definition: a joint by name and its weight, optionally with every
/// joint below it ("this joint and its descendants").
#[derive(Clone, Debug, PartialEq)]
pub struct MaskEntry {
    /// Joint name in the rig.
    pub joint: String,
    /// Weight in [0, 1].
    pub weight: f32,
    /// Whether the weight also applies to every descendant (later entries override).
    pub descendants: bool,
}

impl Mask {
    /// Every joint at full weight.
    #[must_use]
    pub fn full(num_joints: usize) -> Self {
        Self { weights: vec![1.0; num_joints] }
    }

    /// Resolves entries against `rig`, in order: joints not named stay at 0; a later entry
    /// overrides an earlier one, so "upper body at 1, but the left arm at 0.5" is two entries.
    ///
    /// ```
    /// use throng::demo::DemoCharacter;
    /// use throng::program::{Mask, MaskEntry};
    /// let rig = DemoCharacter::humanoid().rig;
    /// let upper = Mask::from_entries(&rig, &[MaskEntry { joint: "spine_01".into(), weight: 1.0, descendants: true }])?;
    /// assert_eq!(upper.weights()[rig.find_joint("head").unwrap()], 1.0);
    /// assert_eq!(upper.weights()[rig.find_joint("foot_l").unwrap()], 0.0);
    /// # Ok::<(), throng::program::MaskError>(())
    /// ```
    pub fn from_entries(rig: &Rig, entries: &[MaskEntry]) -> Result<Self, MaskError> {
        let mut weights = vec![0.0; rig.num_joints()];
        for (entry, e) in entries.iter().enumerate() {
            let Some(root) = rig.find_joint(&e.joint) else {
                return Err(MaskError::UnknownJoint { entry, joint: e.joint.clone() });
            };
            if !(0.0..=1.0).contains(&e.weight) {
                return Err(MaskError::BadWeight { entry, joint: e.joint.clone(), weight: e.weight });
            }
            weights[root] = e.weight;
            if e.descendants {
                // Parents precede children, so one forward pass finds every descendant.
                let mut below = vec![false; rig.num_joints()];
                below[root] = true;
                for j in root + 1..rig.num_joints() {
                    if rig.parent(j).is_some_and(|p| below[p]) {
                        below[j] = true;
                        weights[j] = e.weight;
                    }
                }
            }
        }
        Ok(Self { weights })
    }

    /// Weights per joint, in [0, 1].
    #[must_use]
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::Transform;

    /// A stack holds what a graph may: one layer at least, `MAX_LAYERS` at most (the GPU's
    /// kernels are built knowing which of them keep memory, a bit each).
    #[test]
    fn layer_stacks_hold_one_to_max_layers() {
        let most = vec![LayerSetup::default(); MAX_LAYERS];
        assert_eq!(validate_layer_setups(&most, 2), Ok(()));
        let over = vec![LayerSetup::default(); MAX_LAYERS + 1];
        assert_eq!(
            validate_layer_setups(&over, 2),
            Err(ProgramError::Layers("17 layers, more than the 16 a graph may have".into()))
        );
        assert!(matches!(validate_layer_setups(&[], 2), Err(ProgramError::Layers(_))));
    }

    #[test]
    fn mask_refuses_unknown_joints_and_bad_weights() {
        let rig =
            Rig::new(vec!["a".into(), "b".into()], vec![None, Some(0)], vec![Transform::IDENTITY; 2], None).unwrap();
        let e = |joint: &str, weight| MaskEntry { joint: joint.into(), weight, descendants: true };
        assert_eq!(
            Mask::from_entries(&rig, &[e("a", 1.0), e("nope", 1.0)]),
            Err(MaskError::UnknownJoint { entry: 1, joint: "nope".into() })
        );
        assert!(matches!(Mask::from_entries(&rig, &[e("a", f32::NAN)]), Err(MaskError::BadWeight { entry: 0, .. })));
        assert_eq!(
            Mask::from_entries(&rig, &[e("a", 1.0), MaskEntry { descendants: false, ..e("b", 0.25) }])
                .unwrap()
                .weights(),
            &[1.0, 0.25]
        );
    }
}
