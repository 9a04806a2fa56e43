//! A whole frame on the CPU: every layer of every character through sample → transition →
//! layers → procedural (when asked: [`FrameJob::run_procedural`]) → local-to-model → skinning,
//! with the memory transitions need between frames.
//! The GPU's fused `shaders/frame_layers.wgsl` has the same shape (`GpuCrowd::set_frame`).
//!
//! ```text
//! per character:
//!   for each layer (additive layers first, then override layers; layer 0 is the base):
//!     sample destination (and second set) ─► transition ─► combine into the pose
//!   procedural (look-at, two-bone IK, ground) ─► local_to_model ─► skinning ─► output
//! ```

use std::array::from_fn;

use glam::Mat4;
use rayon::prelude::*;

use crate::clip::Clip;
use crate::program::{ClipSample, LayerProgram, SwitchMode, weighs};
use crate::rig::{Rig, Transform};

use super::inertialize::OffsetLanes;
use super::layers::{MeshSpaceScratch, apply_additive, override_local, override_mesh};
use super::procedural::{LANES, procedural_lanes};
use super::root_motion::{RootDelta, blend_root_delta, program_root_delta, remove_root_motion};
use super::sample::sample_blend;
use super::transition::{Inertia, LayerMemory, transition};
use super::{CHARACTERS_PER_CHUNK, EvalError, check_output_size, skinning};
#[cfg(doc)]
use crate::program::ProgramError;
use crate::program::{
    DueRows, LayerBlend, LayerSetup, LayerSpace, Mask, OutputLayout, ProceduralRig, ProceduralTargets,
    evaluation_order_iter, memory_slots, num_additive_layers, swap_remove_row, validate_clips, validate_dt,
    validate_due, validate_layer_programs, validate_layer_setups, validate_memoryless_programs,
};

/// Per-character, per-layer memory carried between frames, in flat arrays indexed by
/// `(character * memory_layers + slot) * num_joints + joint`, where `slot` counts only the
/// layers that keep memory: a context built [`for_layers`](Self::for_layers) holds nothing for
/// a layer whose graph has only cuts ([`LayerSetup::needs_memory`]).
#[derive(Clone, Debug, Default)]
pub struct EvalContext {
    num_characters: usize,
    num_joints: usize,
    /// Per layer, its slot in the memory arrays, or `None` for a layer kept without memory.
    slots: Vec<Option<usize>>,
    num_memory_layers: usize,
    slot_a: Vec<Transform>,
    slot_b: Vec<Transform>,
    newest_in_b: Vec<bool>,
    snapshot: Vec<Transform>,
    offsets: Vec<OffsetLanes>,
    inertia: Vec<Inertia>,
    frames_shown: Vec<u8>,
    /// Per character, this frame's seconds since it was last shown, or NaN when it is not
    /// evaluated (animation LOD): scratch reused from frame to frame, filled in parallel.
    row_dt_s: Vec<f32>,
}

impl EvalContext {
    /// Memory for `num_characters` characters with `num_layers` layers of `num_joints` joints,
    /// every layer with memory: it serves any setup of `num_layers` layers.
    /// [`for_layers`](Self::for_layers) keeps none for layers that need none.
    #[must_use]
    pub fn new(num_characters: usize, num_layers: usize, num_joints: usize) -> Self {
        Self::with_slots(num_characters, (0..num_layers).map(Some).collect(), num_joints)
    }

    /// Memory for `num_characters` characters of an archetype with `layers`, only for the layers
    /// that need it ([`LayerSetup::needs_memory`]). For the built-in graph, whose lean and wave
    /// layers have no transitions, that is one layer of three.
    #[must_use]
    pub fn for_layers(num_characters: usize, layers: &[LayerSetup], num_joints: usize) -> Self {
        Self::with_slots(num_characters, memory_slots(layers).collect(), num_joints)
    }

    fn with_slots(num_characters: usize, slots: Vec<Option<usize>>, num_joints: usize) -> Self {
        let num_memory_layers = slots.iter().flatten().count();
        let mut context = Self { num_joints, slots, num_memory_layers, ..Self::default() };
        context.resize(num_characters);
        context
    }

    /// Grows or shrinks to `num_characters`; new characters have shown nothing yet.
    pub fn resize(&mut self, num_characters: usize) {
        self.num_characters = num_characters;
        let layers = num_characters * self.num_memory_layers;
        let poses = layers * self.num_joints;
        self.slot_a.resize(poses, Transform::IDENTITY);
        self.slot_b.resize(poses, Transform::IDENTITY);
        self.newest_in_b.resize(layers, false);
        self.snapshot.resize(poses, Transform::IDENTITY);
        self.offsets.resize(layers * OffsetLanes::groups_for(self.num_joints), OffsetLanes::default());
        self.inertia.resize(layers, Inertia::default());
        self.frames_shown.resize(layers, 0);
    }

    /// Forgets what `character` displayed, so its next switch is a cut (a new character, or
    /// one teleported by gameplay). Out-of-range characters are ignored.
    pub fn reset_character(&mut self, character: usize) {
        let layers = character * self.num_memory_layers..(character + 1) * self.num_memory_layers;
        if let Some(shown) = self.frames_shown.get_mut(layers.clone()) {
            shown.fill(0);
        }
        if let Some(inertia) = self.inertia.get_mut(layers) {
            inertia.fill(Inertia::default());
        }
    }

    /// Removes `character`, moving the last character's memory into its place, as
    /// `state::Crowd::despawn` moves the last row of an archetype into the removed one: the
    /// crowd shrinks by one and every other character keeps what it displayed, so its
    /// transitions in flight carry on. Out-of-range characters are ignored.
    /// `gpu::GpuCrowd::swap_remove` is the device's mirror.
    pub fn swap_remove(&mut self, character: usize) {
        let num_characters = self.num_characters;
        if character >= num_characters {
            return;
        }
        let last = num_characters - 1;
        self.num_characters = last;
        let (layers, poses) = (self.num_memory_layers, self.num_memory_layers * self.num_joints);
        swap_remove_row(&mut self.slot_a, character, poses);
        swap_remove_row(&mut self.slot_b, character, poses);
        swap_remove_row(&mut self.newest_in_b, character, layers);
        swap_remove_row(&mut self.snapshot, character, poses);
        swap_remove_row(&mut self.offsets, character, layers * OffsetLanes::groups_for(self.num_joints));
        swap_remove_row(&mut self.inertia, character, layers);
        swap_remove_row(&mut self.frames_shown, character, layers);
    }

    /// Characters held.
    #[must_use]
    pub fn num_characters(&self) -> usize {
        self.num_characters
    }

    /// Layers held memory for, of [`num_layers`](Self::num_layers).
    #[must_use]
    pub fn num_memory_layers(&self) -> usize {
        self.num_memory_layers
    }

    /// Layers per character, with memory or without.
    #[must_use]
    pub fn num_layers(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of memory per character: per layer with memory, three poses (two displayed, the
    /// snapshot), the inertialization offsets and its clock.
    #[must_use]
    pub fn bytes_per_character(&self) -> usize {
        self.num_memory_layers
            * (self.num_joints * 3 * size_of::<Transform>()
                + OffsetLanes::groups_for(self.num_joints) * size_of::<OffsetLanes>()
                + size_of::<Inertia>()
                + 2)
    }
}

/// Counters from one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Characters evaluated: all of them, or the due ones ([`FrameJob::run_due`]).
    pub characters_evaluated: u64,
    /// Clips sampled over the whole crowd.
    pub clips_sampled: u64,
    /// The most clips any one character sampled.
    pub max_clips_per_character: u32,
}

/// The procedural stage's inputs for one frame: the archetype's setup and one row of targets
/// per character of the job.
#[derive(Clone, Copy, Debug)]
pub struct ProceduralInputs<'a> {
    /// The archetype's setup, checked against the job's rig.
    pub setup: &'a ProceduralRig,
    /// One row per character, in the job's order.
    pub targets: &'a ProceduralTargets,
}

/// Evaluates one frame for a crowd sharing one rig, clip table and layer setup.
///
/// Character `i`'s layer `l` reads `programs[i * layers.len() + l]`, whose sample ranges index
/// `samples`. Layer 0 is the base and always shows at full weight.
#[derive(Debug)]
pub struct FrameJob<'a> {
    /// The rig.
    pub rig: &'a Rig,
    /// The clip table; additive layers' clips are deltas.
    pub clips: &'a [Clip],
    /// The archetype's layers, base first.
    pub layers: &'a [LayerSetup],
    /// Every sample of the frame.
    pub samples: &'a [ClipSample],
    /// `characters × layers` programs.
    pub programs: &'a [LayerProgram],
    /// Real seconds since last frame (0 when paused).
    pub dt_s: f32,
    /// Memory carried between frames, sized for this crowd.
    pub context: &'a mut EvalContext,
    /// Output layout.
    pub layout: OutputLayout,
    /// `characters × joints × layout.floats_per_joint()` floats.
    pub output: &'a mut [f32],
    /// Clips sampled per character this frame (one entry per character).
    pub clips_sampled: &'a mut [u32],
    /// Root motion per character this frame (one entry per character), or empty when the caller
    /// does not want it. The root is joint 0. Filled for characters whose base layer program has
    /// [`LayerProgram::ROOT_MOTION`], zero for the others.
    pub root_motion: &'a mut [RootDelta],
}

impl FrameJob<'_> {
    /// Checks, in order: clips match the rig ([`ProgramError::ClipRigMismatch`]); at least one
    /// layer and masks of one weight per joint ([`ProgramError::Layers`]); `dt_s` finite and
    /// non-negative ([`ProgramError::BadDt`]); the context made for the rig's joints and the
    /// setup's layers ([`EvalError::ContextJoints`], [`EvalError::ContextLayers`]); programs,
    /// context, counters and output sized for the same crowd ([`EvalError::ProgramCount`], [`EvalError::OutputSize`],
    /// [`EvalError::RootMotionCount`]); memory in the context for every layer that needs it
    /// ([`EvalError::ContextMemory`]); every program's ranges inside `samples`
    /// ([`ProgramError::SampleRange`]), its samples valid ([`ProgramError::UnknownClip`],
    /// [`ProgramError::BadSample`]) and its numbers finite ([`ProgramError::BadProgram`]); a
    /// plain cut on every layer without memory ([`ProgramError::NeedsMemory`]).
    pub fn validate(&self) -> Result<(), EvalError> {
        let joints = self.rig.num_joints();
        validate_clips(self.rig, self.clips, num_additive_layers(self.layers))?;
        validate_layer_setups(self.layers, joints)?;
        validate_dt(self.dt_s)?;
        let num_layers = self.layers.len();
        let characters = self.clips_sampled.len();
        let ctx = &*self.context;
        if ctx.num_joints != joints {
            return Err(EvalError::ContextJoints { context_joints: ctx.num_joints, rig_joints: joints });
        }
        if ctx.num_layers() != num_layers {
            return Err(EvalError::ContextLayers { context_layers: ctx.num_layers(), layers: num_layers });
        }
        if self.programs.len() != characters * num_layers || ctx.num_characters() != characters {
            return Err(EvalError::ProgramCount {
                programs: self.programs.len(),
                characters,
                layers: num_layers,
                context_characters: ctx.num_characters(),
            });
        }
        check_output_size(self.output.len(), characters, joints, self.layout)?;
        if !self.root_motion.is_empty() && self.root_motion.len() != characters {
            return Err(EvalError::RootMotionCount { got: self.root_motion.len(), characters });
        }
        if let Some(layer) =
            self.layers.iter().zip(&ctx.slots).position(|(setup, slot)| setup.needs_memory && slot.is_none())
        {
            return Err(EvalError::ContextMemory { layer });
        }
        validate_layer_programs(self.programs, num_layers, self.samples, self.clips.len())?;
        validate_memoryless_programs(self.programs, self.layers)?;
        Ok(())
    }

    /// Validates, then evaluates every character in parallel.
    pub fn run(self) -> Result<FrameStats, EvalError> {
        self.run_with(None)
    }

    /// [`run`](Self::run) with the procedural stage between layers and local-to-model: each
    /// character's row of `procedural.targets` (rows whose weights are all 0 are left as the
    /// layers made them).
    ///
    /// # Errors
    /// As [`FrameJob::validate`], then the targets' fit to the setup, rig and crowd
    /// ([`EvalError::Procedural`]).
    pub fn run_procedural(self, procedural: ProceduralInputs<'_>) -> Result<FrameStats, EvalError> {
        self.run_with(Some(procedural))
    }

    fn run_with(mut self, procedural: Option<ProceduralInputs<'_>>) -> Result<FrameStats, EvalError> {
        self.validate_with(procedural)?;
        let dt_s = self.dt_s;
        self.fill_row_dt(|_, rows| rows.fill(dt_s));
        Ok(self.evaluate(procedural))
    }

    fn validate_with(&self, procedural: Option<ProceduralInputs<'_>>) -> Result<(), EvalError> {
        self.validate()?;
        if let Some(p) = procedural {
            p.targets.validate_for(p.setup, self.rig.num_joints(), self.clips_sampled.len())?;
        }
        Ok(())
    }

    /// Validates, then evaluates only the characters `due` lists (animation LOD, as
    /// `state::Crowd::due` gives them), in parallel, each with its own seconds since it was
    /// last shown in place of `dt_s`. The others are not sampled at all: their output rows and
    /// memory are left as they are (the pose they last showed), and they sample no clips. Root
    /// motion, when asked for, is still every character's, from its programs alone, exactly as
    /// [`FrameJob::run`] reports it. A character that switched state on the update is due
    /// whatever its rate, so its switch starts from the pose held since it was last shown. The
    /// output is the held poses: keep it from frame to
    /// frame, and on a despawn move its last row into the freed one as
    /// [`EvalContext::swap_remove`] moves the memory.
    ///
    /// # Errors
    /// As [`FrameJob::validate`], then [`ProgramError::DueLength`] and
    /// [`ProgramError::BadDueRow`] (see [`crate::program::validate_due`]).
    pub fn run_due(self, due: DueRows<'_>) -> Result<FrameStats, EvalError> {
        self.run_due_with(due, None)
    }

    /// [`run_due`](Self::run_due) with the procedural stage, as
    /// [`run_procedural`](Self::run_procedural).
    ///
    /// # Errors
    /// As [`FrameJob::run_due`] and [`FrameJob::run_procedural`].
    pub fn run_due_procedural(
        self,
        due: DueRows<'_>,
        procedural: ProceduralInputs<'_>,
    ) -> Result<FrameStats, EvalError> {
        self.run_due_with(due, Some(procedural))
    }

    fn run_due_with(
        mut self,
        due: DueRows<'_>,
        procedural: Option<ProceduralInputs<'_>>,
    ) -> Result<FrameStats, EvalError> {
        self.validate_with(procedural)?;
        let characters = self.clips_sampled.len();
        validate_due(due, characters)?;
        // Rows ascend (validated): each chunk of characters finds its own run of the list.
        self.fill_row_dt(|first, row_dt_s| {
            row_dt_s.fill(f32::NAN);
            let start = due.rows.partition_point(|&row| (row as usize) < first);
            let end = start + due.rows[start..].partition_point(|&row| (row as usize) < first + row_dt_s.len());
            for (&row, &dt_s) in due.rows[start..end].iter().zip(&due.dt_s[start..end]) {
                row_dt_s[row as usize - first] = dt_s;
            }
        });
        Ok(self.evaluate(procedural))
    }

    /// Sizes `context.row_dt_s` to the crowd and fills it in one parallel pass, `fill` given
    /// each chunk of characters with the index of its first.
    fn fill_row_dt(&mut self, fill: impl Fn(usize, &mut [f32]) + Sync) {
        let row_dt_s = &mut self.context.row_dt_s;
        // Only a grown crowd writes here serially, and only its new rows.
        row_dt_s.resize(self.clips_sampled.len(), f32::NAN);
        row_dt_s
            .par_chunks_mut(CHARACTERS_PER_CHUNK)
            .enumerate()
            .for_each(|(chunk, rows)| fill(chunk * CHARACTERS_PER_CHUNK, rows));
    }

    /// Evaluates the characters whose `context.row_dt_s` is a number (validated already).
    fn evaluate(self, procedural: Option<ProceduralInputs<'_>>) -> FrameStats {
        let Self {
            rig,
            clips,
            layers,
            samples,
            programs,
            dt_s: _,
            context,
            layout,
            output,
            clips_sampled,
            root_motion,
        } = self;
        // Root motion goes to the caller's slice, or nowhere: no per-frame buffer to throw away.
        let characters = clips_sampled.len();
        let root_motion = if root_motion.is_empty() {
            rayon::iter::Either::Right(rayon::iter::repeat_n((), characters).map(|()| None))
        } else {
            rayon::iter::Either::Left(root_motion.par_iter_mut().map(Some))
        };
        let joints = rig.num_joints();
        let num_layers = layers.len();
        let shared = Shared { rig, clips, layers, slots: &context.slots, samples, layout };
        let memory_layers = context.num_memory_layers;
        let per_character = memory_layers * joints;
        let groups = memory_layers * OffsetLanes::groups_for(joints);
        // `par_chunks_mut(0)` would panic: a context without memory hands out empty slices.
        let memory = if memory_layers == 0 {
            rayon::iter::Either::Right((0..characters).into_par_iter().map(|_| CharacterMemory::default()))
        } else {
            rayon::iter::Either::Left(
                context
                    .slot_a
                    .par_chunks_mut(per_character)
                    .zip(context.slot_b.par_chunks_mut(per_character))
                    .zip(context.newest_in_b.par_chunks_mut(memory_layers))
                    .zip(context.snapshot.par_chunks_mut(per_character))
                    .zip(context.offsets.par_chunks_mut(groups))
                    .zip(
                        context
                            .inertia
                            .par_chunks_mut(memory_layers)
                            .zip(context.frames_shown.par_chunks_mut(memory_layers)),
                    )
                    .map(|(((((slot_a, slot_b), newest_in_b), snapshot), offsets), (inertia, shown))| {
                        CharacterMemory { slot_a, slot_b, newest_in_b, snapshot, offsets, inertia, shown }
                    }),
            )
        };
        let rows = output
            .par_chunks_mut(joints * layout.floats_per_joint())
            .zip(programs.par_chunks(num_layers))
            .zip(memory)
            .zip(clips_sampled.par_iter_mut().zip(root_motion).zip(context.row_dt_s.par_iter()))
            .enumerate();
        // The counters add up inside the parallel pass rather than in serial passes after it.
        let stats = match procedural {
            None => rows
                .with_min_len(CHARACTERS_PER_CHUNK)
                .map_init(
                    || FrameScratch::new(joints),
                    |scratch, row| {
                        let (out, stats) = shared.layers_of(row, scratch);
                        if let Some(out) = out {
                            shared.skin(&scratch.pose, &mut scratch.model, out);
                        }
                        stats
                    },
                )
                .reduce(FrameStats::default, FrameStats::merge),
            // The stage takes four characters at a time, one a SIMD lane (rows 4g to 4g + 3,
            // fixed by row, not by rayon's split): the chunks are whole groups, split from the
            // rows once per chunk rather than once per group.
            Some(p) => rows
                .chunks(CHARACTERS_PER_CHUNK)
                .map_init(
                    || GroupScratch {
                        frame: FrameScratch::new(joints),
                        poses: from_fn(|_| vec![Transform::IDENTITY; joints]),
                    },
                    |scratch, chunk| {
                        let mut chunk = chunk.into_iter();
                        let mut stats = FrameStats::default();
                        while !chunk.as_slice().is_empty() {
                            stats = stats.merge(shared.group(chunk.by_ref().take(LANES), p, scratch));
                        }
                        stats
                    },
                )
                .reduce(FrameStats::default, FrameStats::merge),
        };
        crate::profile::count_evaluated(stats.characters_evaluated, stats.clips_sampled);
        stats
    }
}

impl FrameStats {
    /// Two parts of a crowd's counters as one.
    fn merge(self, other: Self) -> Self {
        Self {
            characters_evaluated: self.characters_evaluated + other.characters_evaluated,
            clips_sampled: self.clips_sampled + other.clips_sampled,
            max_clips_per_character: self.max_clips_per_character.max(other.max_clips_per_character),
        }
    }
}

/// The job's read-only inputs.
struct Shared<'a> {
    rig: &'a Rig,
    clips: &'a [Clip],
    layers: &'a [LayerSetup],
    /// Per layer, its slot in the context's memory, if the context holds one.
    slots: &'a [Option<usize>],
    samples: &'a [ClipSample],
    layout: OutputLayout,
}

/// One character's slices of [`EvalContext`], one entry (or pose) per layer with memory.
#[derive(Default)]
struct CharacterMemory<'a> {
    slot_a: &'a mut [Transform],
    slot_b: &'a mut [Transform],
    newest_in_b: &'a mut [bool],
    snapshot: &'a mut [Transform],
    offsets: &'a mut [OffsetLanes],
    inertia: &'a mut [Inertia],
    shown: &'a mut [u8],
}

struct FrameScratch {
    pose: Vec<Transform>,
    layer: Vec<Transform>,
    second: Vec<Transform>,
    identity: Vec<Transform>,
    model: Vec<Mat4>,
    mesh: MeshSpaceScratch,
}

// Chunks of rows are whole groups of the procedural stage's lanes.
const _: () = assert!(CHARACTERS_PER_CHUNK.is_multiple_of(LANES));

/// A group's scratch: one frame's, and the group's poses between their layers and the stage.
struct GroupScratch {
    frame: FrameScratch,
    poses: [Vec<Transform>; LANES],
}

impl FrameScratch {
    fn new(joints: usize) -> Self {
        Self {
            pose: vec![Transform::IDENTITY; joints],
            layer: vec![Transform::IDENTITY; joints],
            second: vec![Transform::IDENTITY; joints],
            identity: vec![Transform::IDENTITY; joints],
            model: vec![Mat4::IDENTITY; joints],
            mesh: MeshSpaceScratch::default(),
        }
    }
}

/// One row of the frame's parallel pass: the row, its output, programs, memory, clips sampled,
/// root motion and seconds since it was last shown (NaN when it is not due).
type Row<'a> = (
    usize,
    (((&'a mut [f32], &'a [LayerProgram]), CharacterMemory<'a>), ((&'a mut u32, Option<&'a mut RootDelta>), &'a f32)),
);

impl Shared<'_> {
    /// A row's layers into `scratch.pose`, its clips sampled and root motion written; returns
    /// its output to skin into, `None` when the row is not due (nothing evaluated; its root
    /// motion still exact, from the programs), and its counters.
    fn layers_of<'a>(&self, row: Row<'a>, scratch: &mut FrameScratch) -> (Option<&'a mut [f32]>, FrameStats) {
        let (_, (((out, programs), memory), ((sampled, root), &row_dt_s))) = row;
        if row_dt_s.is_nan() {
            *sampled = 0;
            if let Some(root) = root {
                *root = programs
                    .first()
                    .map_or_else(RootDelta::default, |base| program_root_delta(self.clips, self.samples, base));
            }
            return (None, FrameStats::default());
        }
        let (clips, delta) = self.character(programs, memory, scratch, row_dt_s);
        *sampled = clips;
        if let Some(root) = root {
            *root = delta;
        }
        let stats =
            FrameStats { characters_evaluated: 1, clips_sampled: u64::from(clips), max_clips_per_character: clips };
        (Some(out), stats)
    }

    /// Up to [`LANES`] rows, one group: each due row's layers, then the stage over the group,
    /// then each due row's local-to-model and skinning.
    fn group<'a>(
        &self,
        rows: impl Iterator<Item = Row<'a>>,
        procedural: ProceduralInputs<'_>,
        scratch: &mut GroupScratch,
    ) -> FrameStats {
        let mut stats = FrameStats::default();
        let mut outs: [Option<&mut [f32]>; LANES] = Default::default();
        let mut indices = [0; LANES];
        for (k, row) in rows.enumerate() {
            indices[k] = row.0;
            let (out, row_stats) = self.layers_of(row, &mut scratch.frame);
            if out.is_some() {
                std::mem::swap(&mut scratch.frame.pose, &mut scratch.poses[k]);
            }
            outs[k] = out;
            stats = stats.merge(row_stats);
        }
        let mut poses = scratch.poses.each_mut().map(Vec::as_mut_slice);
        for (pose, out) in poses.iter_mut().zip(&outs) {
            if out.is_none() {
                *pose = &mut [];
            }
        }
        procedural_lanes(self.rig.parents(), procedural.setup, procedural.targets, indices, poses);
        for (pose, out) in scratch.poses.iter().zip(outs) {
            if let Some(out) = out {
                self.skin(pose, &mut scratch.frame.model, out);
            }
        }
        stats
    }

    /// A pose's local-to-model and skinning into `out`.
    fn skin(&self, pose: &[Transform], model: &mut [Mat4], out: &mut [f32]) {
        skinning::local_to_model_skinning(self.rig.parents(), pose, self.rig.inverse_bind(), self.layout, model, out);
    }

    /// Evaluates one character's layers into `scratch.pose`, `dt_s` seconds after it was last
    /// shown; returns the clips it sampled and its root motion.
    fn character(
        &self,
        programs: &[LayerProgram],
        memory: CharacterMemory<'_>,
        scratch: &mut FrameScratch,
        dt_s: f32,
    ) -> (u32, RootDelta) {
        let joints = self.rig.num_joints();
        let mut sampled = 0;
        let mut root = RootDelta::default();
        // The offsets of a decaying inertialization are read only after the layer is sampled;
        // asked for now, they arrive while it samples instead of stalling the decay.
        let groups = OffsetLanes::groups_for(joints);
        for (m, inertia) in memory.inertia.iter().enumerate() {
            if inertia.decay.is_some()
                && let Some(offsets) = memory.offsets.get(m * groups..(m + 1) * groups)
            {
                for (g, group) in offsets.iter().enumerate() {
                    // Rotations always; translations only where they moved.
                    let bytes = if inertia.translating >> g & 1 != 0 {
                        size_of::<OffsetLanes>()
                    } else {
                        size_of::<OffsetLanes>() / 2
                    };
                    prefetch(group, bytes);
                }
            }
        }
        // Additive layers go onto the base first, then override layers on top.
        for l in evaluation_order_iter(self.layers) {
            let program = &programs[l];
            let setup = &self.layers[l];
            // A layer set up without memory skips the transition stage even where the context
            // holds memory for it (a context built with `new`): its programs are plain cuts.
            let slot = self.slots[l].filter(|_| setup.needs_memory);
            if l > 0 && !weighs(program.weight) {
                // An invisible layer costs nothing and forgets what it showed: a fade or an
                // offset it comes back to would start from a pose nobody saw (its switches
                // went by unseen), so it comes back as after a cut.
                if let Some(m) = slot {
                    memory.shown[m] = 0;
                    memory.inertia[m] = Inertia::default();
                }
                continue;
            }
            let rest = if setup.blend == LayerBlend::Additive { &scratch.identity } else { self.rig.rest_pose() };
            let samples_of = |range: std::ops::Range<u32>| &self.samples[range.start as usize..range.end as usize];
            // A crossfade between two states blends both sides' samples at once (their weights
            // are premultiplied by the sides' shares); otherwise the destination alone.
            let crossfade =
                program.switch_mode() == SwitchMode::Crossfade && program.flags & LayerProgram::SOURCE_SNAPSHOT == 0;
            let shown_range = if crossfade { program.sample_range() } else { program.target_range() };
            sample_blend(self.clips, samples_of(shown_range.clone()), rest, &mut scratch.layer);
            let step_back = !crossfade && program.num_secondary > 0;
            if step_back {
                sample_blend(self.clips, samples_of(program.secondary_range()), rest, &mut scratch.second);
            }
            sampled += program.num_target + program.num_secondary;
            if l == 0 && program.flags & LayerProgram::ROOT_MOTION != 0 {
                // The shown samples' travel by normalised weight (both sides in a crossfade).
                root = blend_root_delta(self.clips, samples_of(shown_range));
                remove_root_motion(&mut scratch.layer, 0);
                remove_root_motion(&mut scratch.second, 0);
            }
            // A layer without memory only ever cuts (validated): it shows its samples as they are.
            if let Some(m) = slot {
                let second = step_back.then_some(scratch.second.as_slice());
                let span = m * joints..(m + 1) * joints;
                let layer_memory = LayerMemory {
                    slot_a: &mut memory.slot_a[span.clone()],
                    slot_b: &mut memory.slot_b[span.clone()],
                    newest_in_b: &mut memory.newest_in_b[m],
                    snapshot: &mut memory.snapshot[span],
                    offsets: &mut memory.offsets[m * groups..(m + 1) * groups],
                    inertia: &mut memory.inertia[m],
                    frames_shown: &mut memory.shown[m],
                };
                transition(program, second, dt_s, layer_memory, &mut scratch.layer);
            }
            let mask = setup.mask.as_ref().map(Mask::weights);
            match (l, setup.blend, setup.space) {
                (0, ..) => std::mem::swap(&mut scratch.pose, &mut scratch.layer),
                (_, LayerBlend::Additive, _) => apply_additive(&mut scratch.pose, &scratch.layer, program.weight, mask),
                (_, LayerBlend::Override, LayerSpace::Local) => {
                    override_local(&mut scratch.pose, &scratch.layer, program.weight, mask)
                }
                (_, LayerBlend::Override, LayerSpace::Mesh) => {
                    override_mesh(
                        self.rig.parents(),
                        &mut scratch.pose,
                        &scratch.layer,
                        program.weight,
                        mask,
                        &mut scratch.mesh,
                    );
                }
            }
        }
        (sampled, root)
    }
}
/// Asks the CPU to bring the first `bytes` of `data` into its caches without waiting for them
/// (a hint: nothing happens on targets without a prefetch instruction).
fn prefetch<T>(data: &T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = std::ptr::from_ref(data).cast::<i8>();
        for offset in (0..bytes.min(size_of::<T>())).step_by(64) {
            // SAFETY: a prefetch never faults or changes memory; the address is inside `data`.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, bytes);
}
