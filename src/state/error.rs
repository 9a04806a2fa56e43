//! Why a state-step call was refused: [`StateError`].

// Only named in docs.
#[cfg(doc)]
use super::{MAX_CHARACTER_SLOTS, MAX_COMMANDS, UPDATE_RATES};

/// Why a state-step call was refused. Nothing changes when one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The graph's blend trees could not be flattened for expansion (not for a graph
    /// `CompiledGraph::compile` accepted).
    #[error("the graph's blend trees: {0}")]
    BlendTrees(String),
    /// A graph leaf has no clip.
    #[error("leaf {path:?} of the graph has no clip bound")]
    UnboundLeaf {
        /// `"State"` or `"State.Child"`.
        path: String,
    },
    /// A binding names a leaf the graph does not have.
    #[error("no leaf {path:?} in the graph (leaves are \"State\" or \"State.Child\")")]
    UnknownLeaf {
        /// The path given.
        path: String,
    },
    /// A clip duration is zero, negative or not finite.
    #[error("leaf {path:?}: clip duration {duration_s} s must be finite and > 0")]
    BadClipDuration {
        /// The leaf.
        path: String,
        /// The duration given.
        duration_s: f32,
    },
    /// The archetype id does not belong to this crowd.
    #[error("archetype {0} does not exist in this crowd")]
    UnknownArchetype(u32),
    /// The handle's character was removed, or never existed.
    #[error("character handle {index}/{generation} is stale or unknown")]
    StaleHandle {
        /// Slot index.
        index: u32,
        /// Generation given.
        generation: u32,
    },
    /// The handle was spawned by another crowd.
    #[error("character handle {index}/{generation} belongs to crowd {handle_crowd}, not to this crowd ({crowd})")]
    ForeignHandle {
        /// Slot index.
        index: u32,
        /// Generation given.
        generation: u32,
        /// The tag of the crowd that spawned the handle.
        handle_crowd: u32,
        /// This crowd's tag.
        crowd: u32,
    },
    /// Every one of the crowd's [`MAX_CHARACTER_SLOTS`] slots is live or retired.
    #[error("the crowd has used all {slots} character slots (live and retired)")]
    CrowdFull {
        /// Slots the crowd holds.
        slots: u32,
    },
    /// The graph has no parameter of that name.
    #[error("no parameter named {0:?}")]
    UnknownParameter(String),
    /// The parameter belongs to a graph the character's archetype does not use.
    #[error("character {index}: its archetype's graph does not have this parameter")]
    WrongGraph {
        /// The character's slot index.
        index: u32,
    },
    /// The parameter is another type than the setter's.
    #[error("parameter is {got}, the setter is for {expected}")]
    ParamKind {
        /// The setter's type.
        expected: &'static str,
        /// The parameter's type.
        got: &'static str,
    },
    /// A parameter value is NaN or infinite.
    #[error("value {value} at batch index {at} is not finite")]
    NonFiniteValue {
        /// Index in the batch.
        at: usize,
        /// The value.
        value: f32,
    },
    /// `dt` is negative, NaN or infinite.
    #[error("dt {0} s must be finite and ≥ 0")]
    BadDt(f32),
    /// Handles and values differ in length.
    #[error("{handles} handles but {values} values")]
    LengthMismatch {
        /// Handles given.
        handles: usize,
        /// Values given.
        values: usize,
    },
    /// A layer index past the graph's layers.
    #[error("layer {layer} does not exist; the graph has {layers}")]
    UnknownLayer {
        /// The index given.
        layer: usize,
        /// Layers in the graph.
        layers: usize,
    },
    /// Events were given for a clip that no leaf of the archetype plays.
    #[error("events for clip {clip}, which no leaf of the archetype is bound to")]
    UnboundEventClip {
        /// The clip index given.
        clip: u32,
    },
    /// An animation event has an empty name, or a time that is not finite or lies outside
    /// the clip (`[0, duration]` of every leaf bound to it).
    #[error(
        "clip {clip} event {index} ({name:?}) at {time_s} s: {what} (leaf {path:?} plays the clip for {duration_s} s)"
    )]
    BadEvent {
        /// The clip index.
        clip: u32,
        /// Index of the event in the list given.
        index: usize,
        /// The event's name.
        name: String,
        /// The event's time.
        time_s: f32,
        /// A leaf bound to the clip, whose duration the time was checked against.
        path: String,
        /// That leaf's clip duration.
        duration_s: f32,
        /// What is wrong.
        what: &'static str,
    },
    /// An event weight threshold outside `[0, 1]`, or NaN.
    #[error("event weight threshold {0} must lie in [0, 1]")]
    BadEventThreshold(f32),
    /// An update rate other than those of [`UPDATE_RATES`].
    #[error("character {index}: update rate {rate} is not one of 1, 2, 4, 8, 16")]
    BadUpdateRate {
        /// The character's slot index.
        index: u32,
        /// The rate given.
        rate: u8,
    },
    /// A time scale that is negative, NaN or infinite.
    #[error("time scale {value} at batch index {at} must be finite and ≥ 0 (0 pauses)")]
    BadTimeScale {
        /// Index in the batch.
        at: usize,
        /// The value given.
        value: f32,
    },
    /// An imperative transition names a state that the character's graph does not have in
    /// that layer.
    #[error("character {index}: no state {name:?} in layer {layer} of its graph")]
    UnknownState {
        /// The character's slot index.
        index: u32,
        /// The name given (a path inside sub-machines, `"Combat.Attack"`).
        name: String,
        /// The layer given.
        layer: usize,
    },
    /// An imperative transition's options are out of range.
    #[error("bad transition command: {what}")]
    BadCommand {
        /// What is wrong.
        what: &'static str,
    },
    /// An archetype holds [`MAX_COMMANDS`] distinct imperative transitions in flight or
    /// pending already.
    #[error("{limit} distinct imperative transitions are in use; reuse durations and modes")]
    TooManyCommands {
        /// [`MAX_COMMANDS`].
        limit: usize,
    },
    /// A one-shot names a slot that is no layer of the character's graph, or a layer not
    /// declared `"slot": true`.
    #[error("no slot {name:?} in the graph (a layer declared \"slot\": true, not the base layer)")]
    UnknownSlot {
        /// The slot name given.
        name: String,
    },
    /// A one-shot's options are out of range.
    #[error("bad one-shot: {what}")]
    BadOneShot {
        /// What is wrong.
        what: &'static str,
    },
    /// A one-shot names a clip whose duration the archetype was not given
    /// (`Archetype::with_clip_durations`).
    #[error("clip {clip} cannot play as a one-shot: the archetype has no duration for it")]
    UnknownOneShotClip {
        /// The clip index given.
        clip: u32,
    },
    /// A start phase outside `[0, 1)`, or NaN.
    #[error("start phase {value} at index {at} must lie in [0, 1)")]
    BadStartPhase {
        /// Index in the list.
        at: usize,
        /// The value given.
        value: f32,
    },
    /// A replacement graph (`Crowd::replace_graph`) differs from the archetype's in more than
    /// transition timings.
    #[error("archetype {archetype}: the replacement graph's {what} differ; only transition timings may change")]
    IncompatibleGraph {
        /// The archetype.
        archetype: u32,
        /// The first table that differs (`CompiledGraph::shape_difference`).
        what: &'static str,
    },
}
