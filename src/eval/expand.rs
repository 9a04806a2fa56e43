//! The expand stage: each character's state records (`program::LayerRecord`, what the state
//! step writes) and blend inputs into its layers' pose programs and clip samples, the leaf
//! weights through the `blend_space` stage's definition. Mirrored by `shaders/expand.wgsl`.
//!
//! The maths is not written here: each character runs [`expand_character`](crate::program::expand_character), the one expansion
//! that `state::Crowd::programs` runs too; the shader is its translation, the clip times by
//! [`crate::program::played_seconds`] operation for operation (`tests/gpu_expand.rs` holds the
//! two to 1e-6).
//!
//! | input | per | what |
//! | --- | --- | --- |
//! | `inputs` | character | [`BlendTrees::num_inputs`] blend inputs (`state::Crowd::blend_inputs`) |
//! | `records` | character × layer | a [`LayerRecord`] (`state::Crowd::records`) |
//! | `shots` | character × layer | its [`ShotRecord`], read under a one-shot's sets (`state::Crowd::shots`) |
//! | `programs` (out) | character × layer | the layer's [`LayerProgram`] |
//! | `samples` (out) | character × [`ExpandTables::samples_per_character`] | the samples the programs index |

use crate::blend_space::BlendTrees;
use crate::program::{
    CLOCK_SLOTS, ClipSample, ExpandTables, LayerProgram, LayerRecord, RecordClock, RecordFrame, ShotRecord,
    expand_frame,
};

/// Why an [`ExpandJob`] was refused. Nothing is written when validation fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// The tables and the trees are not of one graph: their states, or a state's leaves, differ.
    #[error("the expand tables ({tables} states) and the blend trees ({trees} states) are not of one graph")]
    Tables {
        /// States in the tables.
        tables: usize,
        /// States in the trees.
        trees: usize,
    },
    /// The records are not a whole number of characters of the tables' layers (or there are
    /// no layers), their shot records not one per record, or the outputs are not sized for them.
    #[error(
        "{records} records, {shots} shot records, {programs} programs and {samples} samples for {layers} layers and {per_character} samples per character"
    )]
    Sizes {
        /// Records given.
        records: usize,
        /// Shot records given.
        shots: usize,
        /// Programs given.
        programs: usize,
        /// Samples given.
        samples: usize,
        /// Layers per character.
        layers: usize,
        /// Samples per character.
        per_character: usize,
    },
    /// The inputs are not the trees' inputs per character times the characters.
    #[error("{got} blend inputs given; {expected} expected")]
    Inputs {
        /// Inputs needed.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// A record names a state the tables do not have.
    #[error("character {character} layer {layer}: state {state} (the graph has {num_states})")]
    State {
        /// The character.
        character: usize,
        /// The layer.
        layer: usize,
        /// The state named.
        state: u32,
        /// States in the tables.
        num_states: usize,
    },
    /// A record's anchor is `program::CLOCK_SLOTS` updates or more before the clock's, or the
    /// clock's seconds are not finite and non-negative (`anchor` = `now` then): the records and
    /// the clock are not of one update.
    #[error("character {character} layer {layer}: anchored at update {anchor}, read at update {now}")]
    Anchor {
        /// The character.
        character: usize,
        /// The layer.
        layer: usize,
        /// The record's anchor.
        anchor: u32,
        /// The clock's update.
        now: u32,
    },
    /// A leaf of the tables plays a clip past the clip table
    /// (`eval::root_motion::records_root_motion`, which reads the clips).
    #[error("leaf {leaf} plays clip {clip}; there are {num_clips} clips")]
    LeafClip {
        /// The leaf, an index of `ExpandTables::leaves`.
        leaf: usize,
        /// The clip it names.
        clip: u32,
        /// Clips given.
        num_clips: usize,
    },
}

impl ExpandError {
    fn anchor(character: usize, layer: usize, anchor: u32, now: u32) -> Self {
        Self::Anchor { character, layer, anchor, now }
    }
}

/// [`ExpandJob::validate`]'s checks, `outputs` (the programs' and samples' lengths) checked
/// where given: [`crate::eval::root_motion::records_root_motion`], which writes no programs,
/// checks its records the same.
pub(crate) fn validate_records_frame(
    tables: &ExpandTables,
    trees: &BlendTrees,
    inputs: &[f32],
    records: &[LayerRecord],
    shots: &[ShotRecord],
    clock: &RecordClock,
    outputs: Option<(usize, usize)>,
) -> Result<(), ExpandError> {
    let same_graph = tables.states().len() == trees.states().len()
        && tables.states().iter().zip(trees.states()).all(|(a, b)| a.num_leaves == b.num_leaves);
    if !same_graph {
        return Err(ExpandError::Tables { tables: tables.states().len(), trees: trees.states().len() });
    }
    let layers = tables.num_layers();
    let per_character = tables.samples_per_character();
    let characters = records.len().checked_div(layers).unwrap_or(0);
    let (programs, samples) = outputs.unwrap_or((records.len(), characters * per_character));
    if layers == 0
        || !records.len().is_multiple_of(layers)
        || shots.len() != records.len()
        || programs != records.len()
        || samples != characters * per_character
    {
        return Err(ExpandError::Sizes {
            records: records.len(),
            shots: shots.len(),
            programs,
            samples,
            layers,
            per_character,
        });
    }
    let expected = characters * trees.num_inputs();
    if inputs.len() != expected {
        return Err(ExpandError::Inputs { expected, got: inputs.len() });
    }
    let now = clock.now;
    if !clock.elapsed_s.iter().all(|e| e.is_finite() && *e >= 0.0) {
        return Err(ExpandError::anchor(0, 0, now, now));
    }
    if let Some(i) = records.iter().position(|r| (now as u16).wrapping_sub(r.anchor) as usize >= CLOCK_SLOTS) {
        return Err(ExpandError::anchor(i / layers, i % layers, u32::from(records[i].anchor), now));
    }
    let num_states = tables.states().len();
    for (i, r) in records.iter().enumerate() {
        let active = r.sets & LayerRecord::SHOT_ALONE == 0 && r.state as usize >= num_states;
        let source = r.sets & LayerRecord::SECONDARY_SOURCE != 0 && r.source as usize >= num_states;
        if active || source {
            let state = u32::from(if active { r.state } else { r.source });
            return Err(ExpandError::State { character: i / layers, layer: i % layers, state, num_states });
        }
    }
    Ok(())
}

/// One frame's expansion on the CPU.
#[derive(Debug)]
pub struct ExpandJob<'a> {
    /// The archetype's tables (`state::Archetype::expansion`).
    pub tables: &'a ExpandTables,
    /// The graph's blend trees (`state::Archetype::expansion`).
    pub trees: &'a BlendTrees,
    /// Per character, [`BlendTrees::num_inputs`] blend inputs.
    pub inputs: &'a [f32],
    /// Per character and layer (`row * layers + layer`), a record.
    pub records: &'a [LayerRecord],
    /// Per record, its one-shot part (`state::Crowd::shots`).
    pub shots: &'a [ShotRecord],
    /// The clock the records are anchored against (`state::Crowd::record_clock`).
    pub clock: &'a RecordClock,
    /// Per record, its program, written.
    pub programs: &'a mut [LayerProgram],
    /// Per character, [`ExpandTables::samples_per_character`] samples, written where its
    /// layers' slots are (the rest left as they were).
    pub samples: &'a mut [ClipSample],
}

impl<'a> ExpandJob<'a> {
    /// The job expanding `frame` (`state::Crowd::record_frame`) with the archetype's `tables` and
    /// `trees` (`state::Archetype::expansion`) into `programs` and `samples`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
    /// use throng::eval::expand::ExpandJob;
    /// use throng::graph::CompiledGraph;
    /// use throng::program::{ClipSample, LayerProgram};
    /// use throng::state::Crowd;
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap());
    /// let bound = DemoCharacter::humanoid().bind(graph).unwrap();
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(bound.archetype.clone());
    /// for _ in 0..3 {
    ///     crowd.spawn(kind).unwrap();
    /// }
    /// crowd.update(1.0 / 60.0).unwrap();
    /// let (tables, trees) = bound.archetype.expansion();
    /// let frame = crowd.record_frame(kind).unwrap();
    /// let mut programs = vec![LayerProgram::default(); frame.records().len()];
    /// let mut samples = vec![ClipSample::default(); 3 * tables.samples_per_character()];
    /// ExpandJob::of_frame(tables, trees, &frame, &mut programs, &mut samples).run().unwrap();
    /// assert_eq!(programs, crowd.programs(kind).unwrap());
    /// ```
    #[must_use]
    pub fn of_frame(
        tables: &'a ExpandTables,
        trees: &'a BlendTrees,
        frame: &'a RecordFrame<'a>,
        programs: &'a mut [LayerProgram],
        samples: &'a mut [ClipSample],
    ) -> Self {
        Self {
            tables,
            trees,
            inputs: frame.inputs(),
            records: frame.records(),
            shots: frame.shots(),
            clock: frame.clock(),
            programs,
            samples,
        }
    }

    /// Checks the job.
    ///
    /// # Errors
    /// - [`ExpandError::Tables`]: the tables' and trees' states differ in number or leaves.
    /// - [`ExpandError::Sizes`]: no layers, records not whole characters, or outputs not sized
    ///   for them.
    /// - [`ExpandError::Inputs`]: not [`BlendTrees::num_inputs`] per character.
    /// - [`ExpandError::State`]: a record's active state (unless a one-shot shows alone) or a
    ///   crossfade's source past the states.
    /// - [`ExpandError::Anchor`]: a record anchored too long before the clock, or a clock whose
    ///   seconds are not finite and non-negative.
    pub fn validate(&self) -> Result<(), ExpandError> {
        let outputs = Some((self.programs.len(), self.samples.len()));
        validate_records_frame(self.tables, self.trees, self.inputs, self.records, self.shots, self.clock, outputs)
    }

    /// Validates, then expands every character (in parallel; characters are independent, so
    /// the output is the same for any thread count).
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn run(self) -> Result<(), ExpandError> {
        self.validate()?;
        let frame = RecordFrame::new(self.records, self.shots, self.inputs, *self.clock);
        expand_frame(self.tables, self.trees, &frame, self.programs, self.samples);
        Ok(())
    }
}
