//! The crowd runtime: one type that owns a crowd's state step ([`crate::state::Crowd`]) and its
//! CPU evaluation ([`FrameJob`]), and keeps the two in step as characters come and go. The C
//! ABI (`crate::capi`) is FFI plumbing over it; the examples drive their crowds with it.
//!
//! ```text
//! add_archetype(archetype, rig, clips, layers) ─► ArchetypeId
//! spawn / despawn ─► handles          (the evaluator's memory and held matrices follow each row)
//! set_float… ─► update(dt) ─► evaluate(id, layout, matrices, root motion) ─► events, readback
//! set_procedural(id, setup), procedural_targets_mut(id).set_… ─┘  (the graph's chainWeights written in)
//! ```
//!
//! What it keeps per archetype, so that the caller keeps nothing: the rig, clip table and layer
//! setups the evaluator reads; the [`EvalContext`] (what transitions need between frames),
//! resized on every spawn and swap-removed with every despawn as the crowd moves its rows; the
//! `dt` of the archetype's last update, which the evaluator needs for velocities and decays;
//! and, once a character has an update rate above 1 (animation LOD, `docs/lod.md`), every row's
//! last matrices, so that the rows not due show them again and a despawn moves them with their
//! character. The caller's buffer is written whole on every [`CrowdRuntime::evaluate`]. With a
//! procedural setup, each row's procedural targets too, and before every evaluation the chain
//! weights the graph binds to parameters or clip curves are written into them.
//!
//! The low-level jobs ([`FrameJob`], [`crate::eval::EvalCrowdJob`]) stay public for callers
//! that keep their own memory, or evaluate on the GPU ([`crate::gpu::GpuCrowd`]).
//!
//! ```
//! use std::sync::Arc;
//! use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
//! use throng::eval::root_motion::RootDelta;
//! use throng::graph::CompiledGraph;
//! use throng::program::OutputLayout;
//! use throng::runtime::CrowdRuntime;
//!
//! let demo = DemoCharacter::humanoid();
//! let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?))?;
//! let mut runtime = CrowdRuntime::new();
//! let walkers = runtime.add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers)?;
//! let handles = runtime.spawn_many(walkers, 4)?;
//! let speed = runtime.param(walkers, "speed")?;
//! runtime.set_float(speed, &handles, &[1.5; 4])?;
//!
//! let mut matrices = vec![0.0; runtime.floats_needed(walkers, OutputLayout::Mat4)?];
//! let mut root_motion = vec![RootDelta::default(); handles.len()];
//! for _ in 0..30 {
//!     runtime.update(1.0 / 30.0)?;
//!     runtime.evaluate(walkers, OutputLayout::Mat4, &mut matrices, &mut root_motion)?;
//! }
//! // Walking at 1.5 m/s: the root travelled about 5 cm forward (+Z) on the last frame.
//! assert!((root_motion[0].translation.z - 0.05).abs() < 0.01);
//! assert!(matrices.iter().all(|v| v.is_finite()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::clip::Clip;
use crate::eval::expand::ExpandJob;
use crate::eval::frame_layers::{EvalContext, FrameJob, FrameStats, ProceduralInputs};
use crate::eval::procedural::ChainWeightsJob;
use crate::eval::root_motion::RootDelta;
use crate::eval::{EvalError, check_output_size};
use crate::graph::{CompiledGraph, ParamValue};
use crate::program::{
    ClipSample, LayerProgram, LayerSetup, OutputLayout, ProceduralError, ProceduralRig, ProceduralTargets,
    swap_remove_row,
};
use crate::rig::Rig;
use crate::state::{
    AnimationEvent, Archetype, ArchetypeId, CharacterHandle, Crowd, LayerReadback, MAX_CHARACTER_SLOTS, OneShot,
    OneShotReadback, ParamId, StartPhases, StateError, TransitionCommand,
};

/// Why a runtime call was refused. Nothing changes when one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The state step refused the call: a stale or foreign handle, an unknown parameter, a
    /// value or `dt` that is not finite, a full crowd, an update rate other than 1, 2, 4, 8, 16.
    #[error(transparent)]
    State(#[from] StateError),
    /// The evaluator refused the frame: an output or root-motion buffer of the wrong length, or
    /// clips, layers or programs its checks refuse.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A procedural setup checked against another rig than the archetype's, or a graph whose
    /// `chainWeights` name a chain the setup lacks ([`CrowdRuntime::set_procedural`]).
    #[error(transparent)]
    Procedural(#[from] ProceduralError),
    /// The archetype has no procedural setup ([`CrowdRuntime::set_procedural`]) to set targets of.
    #[error("archetype {id:?} has no procedural setup")]
    NoProcedural {
        /// The id given.
        id: ArchetypeId,
    },
    /// The id names no archetype of this runtime (it came from another crowd or runtime).
    #[error("archetype {id:?} was not added to this runtime")]
    UnknownArchetype {
        /// The id given.
        id: ArchetypeId,
    },
    /// The layer setups given with an archetype are not one per layer of its graph.
    #[error("{layers} layer setups given for a graph of {graph_layers} layers")]
    LayerCount {
        /// Setups given.
        layers: usize,
        /// Layers in the archetype's graph.
        graph_layers: usize,
    },
    /// A handle listed twice in a batch where each must be distinct (a despawn).
    #[error("handle {:#x} is listed twice", handle.to_bits())]
    DuplicateHandle {
        /// The handle.
        handle: CharacterHandle,
    },
}

/// Characters of any number of archetypes, stepped together and evaluated on the CPU, with the
/// evaluator's memory kept in step with spawns and despawns (see the module docs).
#[derive(Debug, Default)]
pub struct CrowdRuntime {
    crowd: Crowd,
    /// One per archetype of `crowd`, in the order they were added.
    archetypes: Vec<ArchetypeEntry>,
    /// Set once [`CrowdRuntime::set_update_rate`] gave a character a rate above 1: from then on
    /// each archetype keeps its matrices ([`ArchetypeEntry::held`]) for the rows not due.
    lod: bool,
    /// Set once [`CrowdRuntime::set_time_scale`] gave a character a scale other than 1: from
    /// then on each row is evaluated with its own seconds ([`Crowd::due`]).
    time_scaled: bool,
}

/// What the evaluator needs for one archetype, and the memory it carries between frames.
#[derive(Debug)]
struct ArchetypeEntry {
    rig: Rig,
    clips: Vec<Clip>,
    layers: Vec<LayerSetup>,
    context: EvalContext,
    /// `dt` of the archetype's last update, which the evaluator needs for velocities and decays.
    last_dt_s: f32,
    /// Per row, clips sampled by the last evaluation: the job's scratch, kept to reuse.
    clips_sampled: Vec<u32>,
    /// The crowd's records expanded (`eval::expand`) for the last evaluation: kept to reuse.
    programs: Vec<LayerProgram>,
    samples: Vec<ClipSample>,
    /// With animation LOD, every row's last matrices in `held_layout`: the rows not due this
    /// update show them again, and a despawn moves them as it moves the evaluator's memory, so
    /// the caller's buffer is written whole every call and needs no care between calls.
    held: Vec<f32>,
    held_layout: Option<OutputLayout>,
    /// The procedural stage's setup and one row of targets per character, once
    /// [`CrowdRuntime::set_procedural`] gave one.
    procedural: Option<Procedural>,
}

/// An archetype's procedural setup and its characters' targets, rows in the crowd's order.
#[derive(Debug)]
struct Procedural {
    setup: ProceduralRig,
    targets: ProceduralTargets,
}

impl ArchetypeEntry {
    /// Grows or shrinks the evaluator's memory and, with animation LOD, the held matrices to
    /// `rows` characters (a spawn's new rows have shown nothing), so that a despawn before the
    /// next evaluation moves the row the crowd moves.
    fn resize(&mut self, rows: usize) {
        self.context.resize(rows);
        if let Some(p) = &mut self.procedural {
            p.targets.resize(rows);
        }
        if let Some(layout) = self.held_layout {
            self.held.resize(rows * self.rig.num_joints() * layout.floats_per_joint(), 0.0);
        }
    }

    /// Removes `row` as the crowd's despawn does: the last row's memory and held matrices move
    /// into it.
    fn swap_remove(&mut self, row: usize) {
        self.context.swap_remove(row);
        if let Some(p) = &mut self.procedural {
            p.targets.swap_remove(row);
        }
        if let Some(layout) = self.held_layout {
            swap_remove_row(&mut self.held, row, self.rig.num_joints() * layout.floats_per_joint());
        }
    }
}

/// Checks that `layers` holds one setup per layer of `archetype`'s graph, as
/// [`CrowdRuntime::add_archetype`] does; for an integration that keeps its own archetype table
/// (the Bevy plugin).
///
/// # Errors
/// [`RuntimeError::LayerCount`] when the counts differ.
pub fn check_layer_count(archetype: &Archetype, layers: &[LayerSetup]) -> Result<(), RuntimeError> {
    let graph_layers = archetype.graph().layers().len();
    if layers.len() != graph_layers {
        return Err(RuntimeError::LayerCount { layers: layers.len(), graph_layers });
    }
    Ok(())
}

impl CrowdRuntime {
    /// An empty runtime.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an archetype with what its evaluation reads: the rig, the clip table its
    /// samples index (additive layers' clips as deltas) and one layer setup per graph layer —
    /// what [`crate::setup::bind_archetype`] and [`crate::demo::DemoCharacter::bind`] return.
    /// The runtime keeps its own copies. Clip events fire as the archetype was made
    /// ([`Archetype::with_events_from_clips`] turns the clips' own events on).
    ///
    /// # Errors
    /// [`RuntimeError::LayerCount`]. The clips and layer setups are checked against the rig by
    /// the first [`CrowdRuntime::evaluate`] ([`RuntimeError::Eval`]).
    pub fn add_archetype(
        &mut self,
        archetype: Archetype,
        rig: Rig,
        clips: Vec<Clip>,
        layers: Vec<LayerSetup>,
    ) -> Result<ArchetypeId, RuntimeError> {
        check_layer_count(&archetype, &layers)?;
        // Memory only for the layers whose graph can show two states at once.
        let context = EvalContext::for_layers(0, &layers, rig.num_joints());
        let id = self.crowd.add_archetype(archetype);
        self.archetypes.push(ArchetypeEntry {
            rig,
            clips,
            layers,
            context,
            last_dt_s: 0.0,
            clips_sampled: Vec::new(),
            programs: Vec::new(),
            samples: Vec::new(),
            held: Vec::new(),
            held_layout: None,
            procedural: None,
        });
        Ok(id)
    }

    fn index(&self, id: ArchetypeId) -> Result<usize, RuntimeError> {
        // Entries are pushed as the crowd adds archetypes, so entry `i` is the crowd's `i`.
        let index = id.index();
        if index < self.archetypes.len() { Ok(index) } else { Err(RuntimeError::UnknownArchetype { id }) }
    }

    fn entry(&self, id: ArchetypeId) -> Result<&ArchetypeEntry, RuntimeError> {
        Ok(&self.archetypes[self.index(id)?])
    }

    /// The state step, for everything it reads back (rows, handles, programs, due rows, state
    /// names, memory figures). Changes go through the runtime, which keeps the evaluator's
    /// memory in step with them.
    #[must_use]
    pub fn crowd(&self) -> &Crowd {
        &self.crowd
    }

    /// The rig an archetype is evaluated with.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn rig(&self, id: ArchetypeId) -> Result<&Rig, RuntimeError> {
        Ok(&self.entry(id)?.rig)
    }

    /// An archetype's clip table.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn clips(&self, id: ArchetypeId) -> Result<&[Clip], RuntimeError> {
        Ok(&self.entry(id)?.clips)
    }

    /// An archetype's layer setups, base first.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn layers(&self, id: ArchetypeId) -> Result<&[LayerSetup], RuntimeError> {
        Ok(&self.entry(id)?.layers)
    }

    /// The evaluator's memory for an archetype (its bytes per character, say).
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn context(&self, id: ArchetypeId) -> Result<&EvalContext, RuntimeError> {
        Ok(&self.entry(id)?.context)
    }

    /// Gives archetype `id` the procedural stage (look-at chains, two-bone IK, feet on the
    /// ground: `docs/embedding.md`, "Procedural pose"), with a row of targets per character,
    /// every weight 0: from then on [`CrowdRuntime::evaluate`] runs the stage between layers
    /// and local-to-model. The targets follow the crowd's rows through spawns and despawns; set
    /// them in batches through [`CrowdRuntime::procedural_targets_mut`]. A new setup replaces
    /// the old one and its targets.
    ///
    /// The chain weights the archetype's graph binds (`chainWeights`: to a FLOAT parameter or
    /// a clip curve, `docs/graph-format.md`) need no code: each evaluation writes them from the
    /// last update before the stage runs, over what the caller set for those chains. A graph
    /// that binds none costs nothing more.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use glam::Vec3;
    /// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
    /// use throng::graph::CompiledGraph;
    /// use throng::program::OutputLayout;
    /// use throng::runtime::CrowdRuntime;
    ///
    /// // The locomotion graph with a `look` parameter that weights the head's look-at chain.
    /// let mut json: serde_json::Value = serde_json::from_str(LOCOMOTION_GRAPH)?;
    /// json["parameters"]["look"] = serde_json::json!({ "name": "look", "type": "FLOAT", "value": 0 });
    /// json["chainWeights"] = serde_json::json!([{ "chain": "lookAt 0", "parameter": "look" }]);
    /// let demo = DemoCharacter::humanoid();
    /// let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json.to_string())?))?;
    /// let mut runtime = CrowdRuntime::new();
    /// let kind = runtime.add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers)?;
    /// let pair = runtime.spawn_many(kind, 2)?;
    /// let setup = demo.procedural_setup().expect("the humanoid's joints").check(&demo.rig)?;
    /// runtime.set_procedural(kind, setup)?;
    /// // Both look 3 m to their left; the weight is the graph's to set.
    /// runtime.procedural_targets_mut(kind)?.set_look_at(0, &[0, 1], &[Vec3::new(3.0, 1.6, 0.0); 2], &[0.0; 2])?;
    /// let look = runtime.param(kind, "look")?;
    /// runtime.set_float(look, &pair, &[0.0, 1.0])?;
    ///
    /// let mut matrices = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4)?];
    /// runtime.update(1.0 / 30.0)?;
    /// runtime.evaluate(kind, OutputLayout::Mat4, &mut matrices, &mut [])?;
    /// assert_eq!(runtime.procedural_targets(kind)?.look_at()[0].weight, [0.0, 1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; [`ProceduralError::RigMismatch`] for a setup checked
    /// against a rig of another joint count, [`ProceduralError::UnknownChain`] when the graph
    /// binds the weight of a chain the setup lacks (both as [`RuntimeError::Procedural`]).
    /// Nothing changes on error.
    pub fn set_procedural(&mut self, id: ArchetypeId, setup: ProceduralRig) -> Result<(), RuntimeError> {
        let index = self.index(id)?;
        let rig_joints = self.archetypes[index].rig.num_joints();
        if setup.num_joints() != rig_joints {
            return Err(ProceduralError::RigMismatch { setup_joints: setup.num_joints(), rig_joints }.into());
        }
        let mut targets = ProceduralTargets::new(&setup, self.crowd.num_characters(id)?);
        for binding in self.crowd.chain_weight_bindings(id)? {
            targets.weights_mut(binding.part)?;
        }
        self.archetypes[index].procedural = Some(Procedural { setup, targets });
        Ok(())
    }

    /// Takes the procedural stage away from archetype `id` (and its targets): its evaluation is
    /// as before [`CrowdRuntime::set_procedural`].
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn clear_procedural(&mut self, id: ArchetypeId) -> Result<(), RuntimeError> {
        let index = self.index(id)?;
        self.archetypes[index].procedural = None;
        Ok(())
    }

    /// Archetype `id`'s procedural targets, row `r` for the character at row `r`
    /// ([`Crowd::row_of`]), to set in batches (`set_look_at_world`, `set_ground`, …).
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`], [`RuntimeError::NoProcedural`].
    pub fn procedural_targets_mut(&mut self, id: ArchetypeId) -> Result<&mut ProceduralTargets, RuntimeError> {
        let index = self.index(id)?;
        match &mut self.archetypes[index].procedural {
            Some(p) => Ok(&mut p.targets),
            None => Err(RuntimeError::NoProcedural { id }),
        }
    }

    /// Archetype `id`'s procedural targets as the last evaluation (or
    /// [`CrowdRuntime::procedural_inputs`]) left them, bound weights included.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`], [`RuntimeError::NoProcedural`].
    pub fn procedural_targets(&self, id: ArchetypeId) -> Result<&ProceduralTargets, RuntimeError> {
        self.entry(id)?.procedural.as_ref().map(|p| &p.targets).ok_or(RuntimeError::NoProcedural { id })
    }

    /// The procedural stage's inputs for archetype `id`'s frame after the last update, with the
    /// weights its graph binds written in as [`CrowdRuntime::evaluate`] writes them: what a GPU
    /// evaluation of the same crowd takes (`GpuCrowd::set_procedural(inputs.setup,
    /// inputs.targets)` after `set_frame` with [`Crowd::samples`] and [`Crowd::programs`]).
    /// `None` without a procedural setup.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; a bound chain or curve the setup or clips lack
    /// ([`EvalError::Procedural`], as [`RuntimeError::Eval`]).
    pub fn procedural_inputs(&mut self, id: ArchetypeId) -> Result<Option<ProceduralInputs<'_>>, RuntimeError> {
        let index = self.index(id)?;
        let Self { crowd, archetypes, .. } = self;
        let entry = &mut archetypes[index];
        match &mut entry.procedural {
            Some(p) => {
                let (programs, samples) = (crowd.programs(id)?, crowd.samples(id)?);
                write_bound_weights(crowd, id, &entry.clips, programs, samples, &mut p.targets)?;
                Ok(Some(ProceduralInputs { setup: &p.setup, targets: &p.targets }))
            }
            None => Ok(None),
        }
    }

    /// Adds a character in each layer's default state with the graph's default parameters.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; [`StateError::CrowdFull`].
    pub fn spawn(&mut self, id: ArchetypeId) -> Result<CharacterHandle, RuntimeError> {
        Ok(self.spawn_many(id, 1)?[0])
    }

    /// Adds `count` characters, as [`CrowdRuntime::spawn`]; all or nothing: a batch past the
    /// crowd's [`MAX_CHARACTER_SLOTS`] spawns none.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; [`StateError::CrowdFull`].
    pub fn spawn_many(&mut self, id: ArchetypeId, count: usize) -> Result<Vec<CharacterHandle>, RuntimeError> {
        let index = self.index(id)?;
        if count > self.crowd.spawnable() {
            return Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS }.into());
        }
        let handles = (0..count).map(|_| self.crowd.spawn(id)).collect::<Result<Vec<_>, _>>()?;
        self.archetypes[index].resize(self.crowd.num_characters(id)?);
        Ok(handles)
    }

    /// Adds characters whose default states start at phases of their own, explicit or spread
    /// by a seed, as [`Crowd::spawn_phased`]; all or nothing.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; as [`Crowd::spawn_phased`].
    pub fn spawn_phased(
        &mut self,
        id: ArchetypeId,
        phases: StartPhases<'_>,
    ) -> Result<Vec<CharacterHandle>, RuntimeError> {
        let index = self.index(id)?;
        let handles = self.crowd.spawn_phased(id, phases)?;
        self.archetypes[index].resize(self.crowd.num_characters(id)?);
        Ok(handles)
    }

    /// Removes a character; every other handle stays valid. The archetype's last character
    /// moves into the freed row ([`Crowd::row_of`] tells where a character is), its evaluator
    /// memory and held matrices with it, so its transitions carry on and its matrices are
    /// unchanged.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn despawn(&mut self, handle: CharacterHandle) -> Result<(), RuntimeError> {
        self.despawn_many(&[handle])
    }

    /// Removes several characters, as [`CrowdRuntime::despawn`]; all or nothing: a stale or
    /// repeated handle removes none.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`RuntimeError::DuplicateHandle`].
    pub fn despawn_many(&mut self, handles: &[CharacterHandle]) -> Result<(), RuntimeError> {
        let mut sorted: Vec<u64> = handles.iter().map(|h| h.to_bits()).collect();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(RuntimeError::DuplicateHandle { handle: CharacterHandle::from_bits(pair[0]) });
        }
        for &handle in handles {
            self.crowd.row_of(handle)?;
        }
        for &handle in handles {
            let (id, row) = self.crowd.row_of(handle)?;
            let index = self.index(id)?;
            self.archetypes[index].swap_remove(row);
            self.crowd.despawn(handle)?;
        }
        Ok(())
    }

    /// Sets animation LOD's update rates (`docs/lod.md`): `rates[i]` (1, 2, 4, 8 or 16) for
    /// `handles[i]`. A character at rate `r` is evaluated every `r`-th update only (and on any
    /// update it switches state); its states, events and root motion stay exact every update.
    /// Once a rate above 1 is set the runtime keeps each archetype's matrices, so that
    /// [`CrowdRuntime::evaluate`] still writes every row. All or nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_update_rate`].
    pub fn set_update_rate(&mut self, handles: &[CharacterHandle], rates: &[u8]) -> Result<(), RuntimeError> {
        self.crowd.set_update_rate(handles, rates)?;
        self.lod |= rates.iter().any(|&r| r != 1);
        Ok(())
    }

    /// Sets characters' time scales (1 real time, 0 paused), as [`Crowd::set_time_scale`]. Once
    /// a scale other than 1 is set, [`CrowdRuntime::evaluate`] gives each character its own
    /// seconds, so that its transitions decay in its time too. All or nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
    /// use throng::graph::CompiledGraph;
    /// use throng::program::OutputLayout;
    /// use throng::runtime::CrowdRuntime;
    ///
    /// let demo = DemoCharacter::humanoid();
    /// let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?))?;
    /// let mut runtime = CrowdRuntime::new();
    /// let kind = runtime.add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers)?;
    /// let pair = runtime.spawn_many(kind, 2)?;
    /// runtime.set_time_scale(&pair, &[1.0, 0.0])?; // the second one pauses
    /// let mut before = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4)?];
    /// runtime.update(0.1)?;
    /// runtime.evaluate(kind, OutputLayout::Mat4, &mut before, &mut [])?;
    /// let mut after = before.clone();
    /// runtime.update(0.1)?;
    /// runtime.evaluate(kind, OutputLayout::Mat4, &mut after, &mut [])?;
    /// let half = before.len() / 2;
    /// assert_ne!(before[..half], after[..half], "the first one plays on");
    /// assert_eq!(before[half..], after[half..], "the paused one holds its pose");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Crowd::set_time_scale`].
    pub fn set_time_scale(&mut self, handles: &[CharacterHandle], scales: &[f32]) -> Result<(), RuntimeError> {
        self.crowd.set_time_scale(handles, scales)?;
        self.time_scaled |= scales.iter().any(|&s| s != 1.0);
        Ok(())
    }

    /// Gives archetype `id` the graph `graph`, an edit of its transition timings alone
    /// (`CompiledGraph::with_transition_timing`), as [`Crowd::replace_graph`]: characters keep
    /// their states, clocks and parameters, a transition in flight finishes as it was taken,
    /// and the transitions taken from the next update on use the new timings.
    ///
    /// A layer whose transitions were all cuts was given no evaluator memory
    /// ([`CompiledGraph::layer_needs_memory`]); when the edit gives one of them a blend, the
    /// runtime gives that layer memory, and every character of the archetype then starts its
    /// evaluator memory afresh (shown as if just spawned, so the next frame blends from
    /// nothing remembered).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
    /// use throng::graph::{CompiledGraph, Source, SwitchMode, Target, TransitionTiming};
    /// use throng::program::OutputLayout;
    /// use throng::runtime::CrowdRuntime;
    ///
    /// // The locomotion graph with every switch a cut: its base layer keeps no memory.
    /// let inertialize = r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#;
    /// assert!(LOCOMOTION_GRAPH.contains(inertialize));
    /// let json = LOCOMOTION_GRAPH.replacen(inertialize, r#""defaultSwitch": "cut""#, 1);
    /// let graph = CompiledGraph::from_json(&json)?;
    /// let demo = DemoCharacter::humanoid();
    /// let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json)?))?;
    /// let mut runtime = CrowdRuntime::new();
    /// let kind = runtime.add_archetype(bound.archetype, demo.rig.clone(), bound.clips, bound.layers)?;
    /// assert!(!runtime.layers(kind)?[0].needs_memory);
    /// let hero = runtime.spawn(kind)?;
    ///
    /// // Idle → Move becomes a 0.4 s crossfade.
    /// let state = |name: &str| graph.states().iter().position(|s| s.name == name).unwrap() as u16;
    /// let idle_to_move = (Source::State(state("Idle")), Target::State(state("Move")));
    /// let t = graph.transitions().iter().position(|t| (t.from, t.to) == idle_to_move).unwrap();
    /// let timing = TransitionTiming { duration: 0.4, switch: SwitchMode::Crossfade, ..TransitionTiming::of(&graph.transitions()[t]) };
    /// runtime.replace_graph(kind, graph.with_transition_timing(t, timing)?)?;
    /// assert!(runtime.layers(kind)?[0].needs_memory, "the layer now blends");
    ///
    /// let speed = runtime.param(kind, "speed")?;
    /// runtime.set_float(speed, &[hero], &[2.0])?;
    /// let mut out = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4)?];
    /// runtime.update(1.0 / 60.0)?;
    /// runtime.evaluate(kind, OutputLayout::Mat4, &mut out, &mut [])?;
    /// assert!(runtime.readback(hero, 0)?.transitioning, "a crossfade, evaluated with memory");
    ///
    /// // A graph of another shape is refused, and nothing changes.
    /// let other = CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Idle" }], "transitions": [{ "from": "START", "to": "Idle" }] }] }"#)?;
    /// assert!(runtime.replace_graph(kind, other).is_err());
    /// assert!(runtime.layers(kind)?[0].needs_memory);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; as [`Crowd::replace_graph`] otherwise. Nothing
    /// changes on error.
    pub fn replace_graph(&mut self, id: ArchetypeId, graph: CompiledGraph) -> Result<(), RuntimeError> {
        let index = self.index(id)?;
        let gains: Vec<usize> = self.archetypes[index]
            .layers
            .iter()
            .enumerate()
            .filter(|&(l, setup)| !setup.needs_memory && graph.layer_needs_memory(l))
            .map(|(l, _)| l)
            .collect();
        self.crowd.replace_graph(id, graph)?;
        if !gains.is_empty() {
            let entry = &mut self.archetypes[index];
            for l in gains {
                entry.layers[l].needs_memory = true;
            }
            entry.context =
                EvalContext::for_layers(entry.context.num_characters(), &entry.layers, entry.rig.num_joints());
        }
        Ok(())
    }

    /// Moves a layer of each character to the named state at the next update, through the
    /// transition `command` describes, as [`Crowd::transition_to`]; all or nothing.
    ///
    /// # Errors
    /// As [`Crowd::transition_to`].
    pub fn transition_to(
        &mut self,
        handles: &[CharacterHandle],
        layer: usize,
        state: &str,
        command: TransitionCommand,
    ) -> Result<(), RuntimeError> {
        Ok(self.crowd.transition_to(handles, layer, state, command)?)
    }

    /// Moves a layer of each character to the named state at the next update with no blend, as
    /// [`Crowd::cut_to`]; all or nothing.
    ///
    /// # Errors
    /// As [`Crowd::transition_to`].
    pub fn cut_to(&mut self, handles: &[CharacterHandle], layer: usize, state: &str) -> Result<(), RuntimeError> {
        Ok(self.crowd.cut_to(handles, layer, state)?)
    }

    /// Plays a one-shot on a slot layer of each character from the next update, as
    /// [`Crowd::play_one_shot`]; all or nothing. The clip indexes the archetype's clip table.
    ///
    /// # Errors
    /// As [`Crowd::play_one_shot`].
    pub fn play_one_shot(
        &mut self,
        handles: &[CharacterHandle],
        slot: &str,
        shot: OneShot,
    ) -> Result<(), RuntimeError> {
        Ok(self.crowd.play_one_shot(handles, slot, shot)?)
    }

    /// Blends out the one-shot a slot of each character plays, as [`Crowd::stop_one_shot`].
    ///
    /// # Errors
    /// As [`Crowd::stop_one_shot`].
    pub fn stop_one_shot(&mut self, handles: &[CharacterHandle], slot: &str) -> Result<(), RuntimeError> {
        Ok(self.crowd.stop_one_shot(handles, slot)?)
    }

    /// What a slot of a character plays, as [`Crowd::one_shot`].
    ///
    /// # Errors
    /// As [`Crowd::one_shot`].
    pub fn one_shot(&self, handle: CharacterHandle, slot: &str) -> Result<Option<OneShotReadback>, RuntimeError> {
        Ok(self.crowd.one_shot(handle, slot)?)
    }

    /// Resolves a parameter of an archetype's graph by name, for the setters.
    ///
    /// # Errors
    /// As [`Crowd::param`].
    pub fn param(&self, id: ArchetypeId, name: &str) -> Result<ParamId, RuntimeError> {
        Ok(self.crowd.param(id, name)?)
    }

    /// Sets a FLOAT parameter, `values[i]` for `handles[i]`, all or nothing.
    ///
    /// # Errors
    /// As [`Crowd::set_float`].
    pub fn set_float(
        &mut self,
        param: ParamId,
        handles: &[CharacterHandle],
        values: &[f32],
    ) -> Result<(), RuntimeError> {
        Ok(self.crowd.set_float(param, handles, values)?)
    }

    /// Sets an INTEGER parameter, as [`CrowdRuntime::set_float`].
    ///
    /// # Errors
    /// As [`Crowd::set_int`].
    pub fn set_int(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[i32]) -> Result<(), RuntimeError> {
        Ok(self.crowd.set_int(param, handles, values)?)
    }

    /// Sets a BOOLEAN parameter, as [`CrowdRuntime::set_float`].
    ///
    /// # Errors
    /// As [`Crowd::set_bool`].
    pub fn set_bool(
        &mut self,
        param: ParamId,
        handles: &[CharacterHandle],
        values: &[bool],
    ) -> Result<(), RuntimeError> {
        Ok(self.crowd.set_bool(param, handles, values)?)
    }

    /// Sets a TRIGGER, as [`Crowd::set_trigger`].
    ///
    /// # Errors
    /// As [`Crowd::set_trigger`].
    pub fn set_trigger(
        &mut self,
        param: ParamId,
        handles: &[CharacterHandle],
        single_frame: bool,
    ) -> Result<(), RuntimeError> {
        Ok(self.crowd.set_trigger(param, handles, single_frame)?)
    }

    /// Clears a TRIGGER, as [`Crowd::reset_trigger`].
    ///
    /// # Errors
    /// As [`Crowd::reset_trigger`].
    pub fn reset_trigger(&mut self, param: ParamId, handles: &[CharacterHandle]) -> Result<(), RuntimeError> {
        Ok(self.crowd.reset_trigger(param, handles)?)
    }

    /// Sets one parameter of one character, as [`Crowd::set`].
    ///
    /// # Errors
    /// As [`Crowd::set`].
    pub fn set(&mut self, param: ParamId, handle: CharacterHandle, value: ParamValue) -> Result<(), RuntimeError> {
        Ok(self.crowd.set(param, handle, value)?)
    }

    /// Steps every character of every archetype by `dt_s` seconds (finite, ≥ 0; 0 pauses). The
    /// next [`CrowdRuntime::evaluate`] of each archetype uses the same `dt_s`.
    ///
    /// # Errors
    /// As [`Crowd::update`].
    pub fn update(&mut self, dt_s: f32) -> Result<(), RuntimeError> {
        self.crowd.update(dt_s)?;
        for entry in &mut self.archetypes {
            entry.last_dt_s = dt_s;
        }
        Ok(())
    }

    /// Steps only one archetype's characters, as [`Crowd::update_archetype`]; its next
    /// evaluation uses this `dt_s`, the others keep what their last update left.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; as [`Crowd::update_archetype`].
    pub fn update_archetype(&mut self, id: ArchetypeId, dt_s: f32) -> Result<(), RuntimeError> {
        let index = self.index(id)?;
        self.crowd.update_archetype(id, dt_s)?;
        self.archetypes[index].last_dt_s = dt_s;
        Ok(())
    }

    /// Floats [`CrowdRuntime::evaluate`] writes for an archetype in `layout` with its current
    /// characters: characters × joints × [`OutputLayout::floats_per_joint`].
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn floats_needed(&self, id: ArchetypeId, layout: OutputLayout) -> Result<usize, RuntimeError> {
        let entry = self.entry(id)?;
        Ok(self.crowd.num_characters(id)? * entry.rig.num_joints() * layout.floats_per_joint())
    }

    /// Evaluates an archetype's characters after the last update: every layer, every
    /// transition, skinning matrices into `matrices` (the character at row `r`, joint `j` at
    /// float `(r × joints + j) × layout.floats_per_joint()`; exactly
    /// [`CrowdRuntime::floats_needed`] floats). `root_motion` is empty, or one entry per row
    /// that receives the character's root travel this frame; the travel is removed from the
    /// pose either way when the base layer has root motion on. Call once per archetype per
    /// update: the evaluator remembers what it showed, for transitions. With animation LOD
    /// ([`CrowdRuntime::set_update_rate`]) only the due rows are evaluated (each with its own
    /// seconds since it was last shown), and the others show the matrices they last showed: every
    /// row of `matrices` is written all the same. A new layout holds nothing yet, so its first
    /// evaluation evaluates every row. With a procedural setup ([`CrowdRuntime::set_procedural`])
    /// the graph's bound chain weights are written into the targets first, then the stage runs
    /// on each evaluated character between layers and local-to-model.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`]; [`EvalError::OutputSize`],
    /// [`EvalError::RootMotionCount`] and the rest of [`FrameJob::validate`], nothing written.
    pub fn evaluate(
        &mut self,
        id: ArchetypeId,
        layout: OutputLayout,
        matrices: &mut [f32],
        root_motion: &mut [RootDelta],
    ) -> Result<FrameStats, RuntimeError> {
        let index = self.index(id)?;
        let Self { crowd, archetypes, lod, time_scaled } = self;
        let entry = &mut archetypes[index];
        let characters = crowd.num_characters(id)?;
        check_output_size(matrices.len(), characters, entry.rig.num_joints(), layout)?;
        entry.clips_sampled.resize(characters, 0);
        // With LOD the rows not due show their held matrices; a new layout holds none yet, so
        // every row is evaluated once in it, and holds them only once that evaluation succeeded.
        let holds = *lod && entry.held_layout == Some(layout);
        if *lod {
            if !holds {
                entry.held_layout = None;
            }
            entry.held.resize(matrices.len(), 0.0);
        }
        // The state step's records, expanded into the programs and samples the frame reads.
        let (tables, trees) = crowd.archetype(id)?.expansion();
        let frame = crowd.record_frame(id)?;
        entry.programs.resize(frame.records().len(), LayerProgram::default());
        entry.samples.resize(characters * tables.samples_per_character(), ClipSample::default());
        ExpandJob::of_frame(tables, trees, &frame, &mut entry.programs, &mut entry.samples)
            .run()
            .map_err(EvalError::from)?;
        let (programs, samples) = (&entry.programs, &entry.samples);
        let procedural = match &mut entry.procedural {
            Some(p) => {
                write_bound_weights(crowd, id, &entry.clips, programs, samples, &mut p.targets)?;
                Some(ProceduralInputs { setup: &p.setup, targets: &p.targets })
            }
            None => None,
        };
        let job = FrameJob {
            rig: &entry.rig,
            clips: &entry.clips,
            layers: &entry.layers,
            samples,
            programs,
            dt_s: entry.last_dt_s,
            context: &mut entry.context,
            layout,
            output: if *lod { &mut entry.held } else { &mut *matrices },
            clips_sampled: &mut entry.clips_sampled,
            root_motion,
        };
        // Time scales give each row its own seconds, which the due list carries; without LOD
        // every row is due.
        let stats = match (holds || (*time_scaled && !*lod), procedural) {
            (true, None) => job.run_due(crowd.due(id)?)?,
            (true, Some(p)) => job.run_due_procedural(crowd.due(id)?, p)?,
            (false, None) => job.run()?,
            (false, Some(p)) => job.run_procedural(p)?,
        };
        if *lod {
            entry.held_layout = Some(layout);
            matrices.copy_from_slice(&entry.held);
        }
        Ok(stats)
    }

    /// Clips each row sampled in the archetype's last evaluation (0 for rows not due).
    ///
    /// # Errors
    /// [`RuntimeError::UnknownArchetype`].
    pub fn clips_sampled(&self, id: ArchetypeId) -> Result<&[u32], RuntimeError> {
        Ok(&self.entry(id)?.clips_sampled)
    }

    /// The animation events an archetype's characters fired in the last update, as
    /// [`Crowd::events`].
    ///
    /// # Errors
    /// As [`Crowd::events`].
    pub fn events(&self, id: ArchetypeId) -> Result<&[AnimationEvent], RuntimeError> {
        Ok(self.crowd.events(id)?)
    }

    /// What one layer of a character is doing after the last update, as [`Crowd::readback`].
    ///
    /// # Errors
    /// As [`Crowd::readback`].
    pub fn readback(&self, handle: CharacterHandle, layer: usize) -> Result<LayerReadback, RuntimeError> {
        Ok(self.crowd.readback(handle, layer)?)
    }
}

/// Writes the chain weights archetype `id`'s graph binds (`chainWeights`) into `targets` from the
/// crowd's last update; nothing at all when the graph binds none.
fn write_bound_weights(
    crowd: &Crowd,
    id: ArchetypeId,
    clips: &[Clip],
    programs: &[LayerProgram],
    samples: &[ClipSample],
    targets: &mut ProceduralTargets,
) -> Result<(), RuntimeError> {
    let graph = crowd.archetype(id)?.graph();
    if graph.chain_weights().is_empty() {
        return Ok(());
    }
    let bindings = crowd.chain_weight_bindings(id)?;
    ChainWeightsJob { clips, samples, programs, num_layers: graph.layers().len(), bindings: &bindings, targets }
        .run()?;
    Ok(())
}
