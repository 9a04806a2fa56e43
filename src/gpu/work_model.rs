//! A work model of the fused GPU frames (`shaders/frame.wgsl`, `shaders/frame_layers.wgsl`):
//! what one character costs, counted from the kernels' structure and a frame's programs, so that
//! a change to the kernels shows in numbers on a machine without a GPU.
//!
//! The kernels run one 64-thread workgroup per character, a joint per thread (joint
//! `thread + 64 k`), in waves (warps) of `wave_size` threads. The model walks the kernel as a
//! wave does:
//!
//! | region | a wave enters it | counted |
//! |---|---|---|
//! | kernel (with the pose's store and the skinning around local-to-model), a layer's own code (with sampling's and the combine's: straight-line code, a thread's joint loops unrolled; the fused kernel unrolls the crowd's layers too, each compiled for its setup) | once; once per layer (every wave of the workgroup) | `kernel_fixed`, `layer_fixed` |
//! | sampling a layer | once per wave that holds joints; a blend of one sample's shortcut once more | `sample_fixed` (the two-clip frame's; the layered frames' is in `layer_fixed`), `single_sample`, then `sample_weight` per sample of each blend and `sample_clip` / `step_back_clip` per clip sampled in a blend's loop (and, in the level kernels, `table_miss` per iteration past the sample table) |
//! | shape passes (a production crowd, [`WorkModel::with_specialisation`]) | the shape pass's check in both passes, once per wave (straight-line code over the layers with memory) | `pass_check` |
//! | replay before the layers (the level kernels with full clips: in each switching layer's iteration, no check) | the check, once per wave, every frame (with shape passes, only in the switching pass); where a layer with memory switches, the replay's loops once per wave and layer, and per displayed pose a switch reads (one for a frozen fade, two for a capture) an entry and its samples | `replay_check`; `replay_layer`, `replay_entry`, `replay_weight` per sample, `replay_clip` per clip sampled in its loop |
//! | transition (layer with memory; a layer without skips it) | once per wave (in the level kernels every wave of the workgroup, shown or not); the switch frame's code once more where the layer switches to a frozen fade or an inertialization; the decay once more while an offset decays, and Bollo's overshoot-free quintic once more besides where the offset decays by it; the replay entry's samples written by the wave holding threads 0–7; the pose stored where the frame shows more samples than an entry holds | `transition`, `switch`, `decay`, `overshoot`, `replay_store`, `store_pose`; 3 barriers in a kernel with switch code, 1 in the steady pass's |
//! | combine (additive, local override) | once per wave of such a layer | `additive`, `override_local` |
//! | the base layer's root motion removed; a frozen fade's snapshot mix | the wave holding the root, where the base program asks; once per wave of a layer fading from a snapshot | `root_motion`, `snapshot_mix` |
//! | mesh-space override | once per wave, then one step per ancestor of its deepest lane (the two poses' products; the blends and the new local rotations in the code around it) | `mesh_fixed`, `mesh_step` × deepest ancestor path; 4 barriers |
//! | local-to-model | one step per ancestor of a wave's deepest lane but one | `model_step` × (deepest depth − 1); 1 barrier |
//!
//! A wave runs a loop as long as its slowest lane, so an ancestor walk costs each wave the
//! depth of its deepest joint, and per-sample work (frame index, interpolation factor,
//! normalised weight, clip header) is redone by every wave that holds joints.
//!
//! **Modelled wave-instructions** are each region's static instruction count (a driver's loop
//! body, or the difference a measurement specialisation makes, [`KernelCosts`]) times the times
//! a wave enters it: an upper bound where a region's branches are skipped, a count where they
//! are not. The code only a switch frame runs (the frozen snapshot taken; the inertialization's
//! step-back blend, capture and decay start) and the decay are regions of their own, measured
//! by compiling each layered kernel with `SWITCH_CODE`, then `DECAY_CODE` too, off
//! (`gpu::stats::Specialisation`, [`LayeredLoops`]), so that a steady frame is not charged a
//! switch's code. Likewise the paths a layer runs only on some frames or some layers
//! ([`MeasuredPath`]: the root's motion removed, a frozen fade's
//! snapshot mix, the additive and the local-override combines, a blend of one sample's
//! shortcut, the level kernels' sample-table miss, the mesh-space override and, in the level
//! kernels, its roots' step, a displayed pose's store and a layer with memory's transition) are
//! measured by compiling the settled kernel with each one's gate off besides, and Bollo's
//! overshoot-free quintic, which lies in the decay, the steady kernel with its gate off; each is
//! charged only where a wave runs it.
//! **Bytes** are a character's own device
//! traffic (its programs and samples read, its layer memory read and written, its output
//! written); clip frames, shared by every character and served by the caches, are counted apart
//! (`clip_bytes_read`). Layer memory is modelled in its steady state: every layer has shown two
//! frames, so an inertialization's capture reads both slots; an offset decays while its layer's
//! program is [`LayerProgram::TRANSITIONING`].
//!
//! **The level kernels** ([`FrameKernel::Levels`], [`WorkModel::with_kernel`]) run 128-thread
//! workgroups of several characters (one character's lanes past 128 joints), a joint per thread, so the model walks a workgroup of
//! consecutive characters (as dispatched) wave by wave: a wave runs a region if any character it
//! covers does, a loop as often as its most demanding character; the sample table's fill and
//! its weight sums by the waves holding the workgroup's first `max(32, characters)` threads
//! (`fill_fixed`, `sample_weight`, `fill_entry`), the clip loops by the waves holding joints (a blend of one sample takes the shortcut outside
//! them with full clips, as in the fused kernel, where its entry lies in the sample table); the
//! end of a layer with memory (a capture's reduction over the character's joints one by one,
//! the decay's course, the replay entry's samples one by one, the layer state) by one thread a
//! character, the waves holding those threads (`slot_end`, `slot_switch`, `slot_decay`,
//! `capture_step`, `replay_store`); each band of local-to-model and the mesh-space override
//! (`gpu::types::level_bands`: depth levels whose joints form chains, a thread a chain) costs
//! its own code (`model_band`, `mesh_band`) once for each wave that holds one of its chains
//! (the band's chains of every character of the workgroup, packed from thread 0), and its step
//! (`model_step`, `mesh_step`) as often as the longest of those chains; every other wave of the
//! workgroup branches over the band's chain work and runs the rest of the band, its loop's
//! control, its shape read, the test and the barrier (`model_idle`, `mesh_idle`: measured by
//! compiling the work out, [`MeasuredPath::BandChains`]). A wave's iterations past its longest
//! chain run the loop's control, which is not counted. The mesh-space override's roots
//! (band 0) run outside its loop, `mesh_roots` for each wave holding one. The driver reports the
//! layer loop's straight-line code as one body: the switch frame's code and the decay are
//! measured out of it by the specialisations, the mesh-space override (`mesh_fixed`, its loop and
//! roots besides) and the other paths by their gates, and what is left, code every shown layer
//! runs, is `layer_fixed` ([`KernelCosts::from_frame_layers_levels_loops`]; the fused kernel,
//! which unrolls the layers, divides the same differences among them,
//! [`KernelCosts::from_frame_layers_loops`]). Bytes are the fused kernel's: the same memory, read
//! and written once.
//!
//! **Straight-line per-joint code.** The kernels are built without wgpu's loop bounding, so the
//! driver unrolls a thread's loop over its joints (`JOINTS_PER_THREAD`, 1 for the 64-joint rigs
//! the costs are recorded on): sampling's and the combine's own code, the transition's, the
//! pose's store and the skinning are straight-line code in `layer_fixed`, `transition` and
//! `kernel_fixed`, charged once per wave of the workgroup. That is an upper bound for a wave
//! that holds no joint (the 26-joint humanoid's second warp branches over that code), and the
//! 64-joint kernel's once for a rig with more joints than threads, whose kernel runs it once a
//! joint a thread.

use crate::gpu::types::{
    BLEND_ADDITIVE, BLEND_OVERRIDE, GpuLayerSetup, NO_MASK, NO_MEMORY, REPLAY_SAMPLES, SPACE_LOCAL, SPACE_MESH,
    level_bands, level_lanes, widest_depth,
};
use crate::gpu::{FrameKernel, Hierarchy, MeasuredPath, Specialisation};
use crate::program::{
    ClipSample, EndRotation, LayerBlend, LayerProgram, LayerSetup, LayerSpace, ProceduralRig, ProceduralTargets,
    SwitchMode, counted, evaluation_order, weighs,
};
use crate::rig::Rig;

/// Threads per workgroup in the modelled kernels (`WORKGROUP_SIZE`).
const WORKGROUP_THREADS: usize = crate::gpu::types::WORKGROUP_SIZE as usize;
/// Bytes of a `LayerProgram` and a `ClipSample` read from device memory.
const PROGRAM_BYTES: f64 = size_of::<LayerProgram>() as f64;
const SAMPLE_BYTES: f64 = size_of::<ClipSample>() as f64;
/// A `SampleRange` (`frame_main`'s program).
const RANGE_BYTES: f64 = 8.0;
/// An affine 3×4 skinning matrix, the output of a crowd that writes them (a mat4's is 64).
const AFFINE_OUTPUT_BYTES: f64 = 48.0;
/// A layer's `LayerState`'s first vec4 (flags, decay, elapsed time, largest offset): read at the
/// start of its transition, written at the end, on every frame the layer is evaluated.
const LAYER_STATE_BYTES: f64 = 16.0;
/// Its second vec4 (the largest offset velocity, which only a spring's decay reads): written at
/// a capture that starts a spring, read on the spring's later frames.
const SPRING_STATE_BYTES: f64 = 16.0;
/// One joint's slot pose as a frame writes it where the joint's scale is uniform (translation +
/// the scale's value, rotation: two vec4; a third where the scale's axes differ, which the
/// model's rigs' clips never have), the frozen snapshot (laid out as a slot) and an
/// inertialization offset (three vec4).
const SLOT_BYTES: f64 = 32.0;
const SNAPSHOT_BYTES: f64 = 32.0;
const OFFSET_BYTES: f64 = 48.0;
/// A replay entry's header and each of its samples (a raw `ClipSample`).
const REPLAY_HEADER_BYTES: f64 = 16.0;
const REPLAY_SAMPLE_BYTES: f64 = 16.0;
/// The sample-positions stage's traffic a sample: its clip and time read, its position
/// written, its clip's header read (`ClipHeader`, two vec4).
const POSITION_READ_BYTES: f64 = 8.0;
const POSITION_BYTES: f64 = 4.0;
const CLIP_HEADER_BYTES: f64 = 32.0;

/// Static instruction counts of a fused kernel's regions (see the module's table): each one a
/// loop body of the kernel's disassembly, what is left of one when its inner loops are taken
/// out, or the difference a measurement specialisation makes (`switch`, `decay`). Derived from
/// a driver's loop lists by [`KernelCosts::from_frame_layers_loops`] and
/// [`KernelCosts::from_frame_loops`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCosts {
    /// Code outside every loop, per wave: in the layered fused kernel the kernel built for no
    /// layers' (which has neither of the checks before the layers, `pass_check` and
    /// `replay_check`), without the affine store.
    pub kernel_fixed: u32,
    /// A layer's own code (setup, program, state, barriers; in the layered kernels sampling's
    /// outside its loops and the base's copy too, their code one body with it), per wave and
    /// layer: in the fused kernel, which unrolls the crowd's layers, the measured stack's layers'
    /// share ([`MEASURED_STACK`], [`KernelCosts::from_frame_layers_loops`]).
    pub layer_fixed: u32,
    /// Sampling the frame's pose outside the per-sample loops (the rest pose, the blend's end);
    /// in the layered kernels 0, its code in `layer_fixed`.
    pub sample_fixed: u32,
    /// One iteration of a blend's weight sum.
    pub sample_weight: u32,
    /// One clip sampled and blended in a blend's loop, from the level kernels' sample table.
    pub sample_clip: u32,
    /// One clip of the step-back blend (inertialization's switch frame), as `sample_clip`.
    pub step_back_clip: u32,
    /// The transition's code every frame runs: the state, a frozen fade's snapshot read and
    /// mixed. In the level kernels the straight-line code of a layer with memory's transition
    /// ([`MeasuredPath::Transition`] less the slots' end, the snapshot's mix and the pose's
    /// store), per wave of such a layer, shown or not (its barriers hold every wave).
    pub transition: u32,
    /// The code only a switch frame runs (`SWITCH_CODE` in `shaders/transition.wgsl`): the
    /// frozen snapshot taken, or the inertialization's step-back blend outside its loops, its
    /// capture from both slots and its decay's start. Charged where the layer switches to a
    /// frozen fade or an inertialization.
    pub switch: u32,
    /// An offset decayed and applied (`DECAY_CODE`), less Bollo's quintic (`overshoot`).
    pub decay: u32,
    /// An offset decayed by Bollo's overshoot-free quintic ([`MeasuredPath::Overshoot`]), taken
    /// out of `decay`: per wave, where a layer's offset decays in that mode.
    pub overshoot: u32,
    /// The mesh-space override outside its ancestor walk (the joint's own step included) or, in
    /// the level kernels, outside its band loop and its roots' step ([`MeasuredPath::MeshOverride`]
    /// less those): per wave of a mesh-space override layer.
    pub mesh_fixed: u32,
    /// One ancestor step of the mesh-space override; in the level kernels, one joint of a
    /// band's chain.
    pub mesh_step: u32,
    /// The level kernels' mesh-space band outside its chain loop (the band read, the chain's
    /// first item and its parent's rows, the barrier): per band and wave holding its chains (0
    /// in the fused kernel).
    pub mesh_band: u32,
    /// One ancestor step of local-to-model (an affine product); in the level kernels, one joint
    /// of a band's chain.
    pub model_step: u32,
    /// The level kernels' local-to-model band outside its chain loop, as `mesh_band` (0 in the
    /// fused kernel).
    pub model_band: u32,
    /// The level kernels' local-to-model band for a wave that holds none of its chains and
    /// branches over them ([`MeasuredPath::BandChains`]): the band loop's control, the band's
    /// shape read, the test, the barrier (0 in the fused kernel).
    pub model_idle: u32,
    /// The mesh-space override's band for such a wave, as `model_idle`.
    pub mesh_idle: u32,
    /// The level kernel's capture: one lane's largest offsets read in the reduction by the
    /// thread of the character's slot (0 in the fused kernel, whose atomics are in
    /// `transition`).
    pub capture_step: u32,
    /// The level kernels' end of a layer with memory worked out by one thread a character slot
    /// (`end_layer_of_slots`), outside its loops: the code every frame runs, per wave holding
    /// such threads (0 in the fused kernel, whose waves each run it in `transition`).
    pub slot_end: u32,
    /// `slot_end`'s switch frame's code (`SWITCH_CODE`): the capture's decay started, the
    /// displayed pose's entry marked. Where the layer switches to a frozen fade or an
    /// inertialization.
    pub slot_switch: u32,
    /// `slot_end`'s decay (`DECAY_CODE`): whether the offset still decays, its clock run on.
    pub slot_decay: u32,
    /// The level kernels' sample table filled by the workgroup's first threads for every
    /// character slot (`fill_table_of_slots`), outside its loops (its weight sums are
    /// `sample_weight`): per wave holding fill threads and layer (0 in the fused kernel).
    pub fill_fixed: u32,
    /// One iteration of `fill_table_of_slots`' entry loop: a sample's frame, interpolation
    /// factor and normalised weight into the table, for as many slots as the wave serves.
    pub fill_entry: u32,
    /// The check for a switching layer (`switches_a_layer`) before the layers, per wave: every
    /// frame in the whole crowd's kernel, in the switching pass with shape passes (0 in the
    /// level kernels with full clips, which replay a layer in its own iteration, on the program
    /// read there). Straight-line code reading the programs of the layers with memory, which
    /// the kernel is built knowing (`MEMORY_LAYERS`): the replay's measured path
    /// ([`MeasuredPath::Replay`]) less the replay's loop.
    pub replay_check: u32,
    /// A production crowd's shape-pass check (`in_shape_pass`: `runs_switch_code`,
    /// `Specialisation::runs_switch_code` of each layer with memory), per wave, in
    /// each of its two passes: a character's workgroup runs it in its own pass and, leaving at
    /// once, in the other ([`WorkModel::with_specialisation`]; 0 in the level kernels, whose
    /// check serves a workgroup's character slots and is not charged). Straight-line code as
    /// `replay_check`: what the steady pass's kernel leaves outside its loops beyond the steady
    /// kernel's.
    pub pass_check: u32,
    /// The replay before the layers (`store_switch_sources_of`) outside its entry loop: its layer
    /// loop's own code (with the fused kernels' joint loop's), per wave and layer, on a frame
    /// that switches a layer with memory (0 in the level kernels with full clips, whose replay
    /// code outside its entry loop runs only in a switching layer's iteration: `switch`).
    pub replay_layer: u32,
    /// One displayed pose replayed into its slot (`store_switch_sources`'s loop) outside its
    /// sample loops, per wave: once at a frozen fade's switch, twice at an inertialization's.
    pub replay_entry: u32,
    /// One iteration of a replayed pose's weight sum.
    pub replay_weight: u32,
    /// One sample of a replayed pose sampled and blended.
    pub replay_clip: u32,
    /// The frame's replay entry written (`store_replay_entry`'s loop): in the fused kernel per
    /// wave and shown layer with memory; in the level kernels per sample of the entry, by the
    /// wave holding the character slots' threads.
    pub replay_store: u32,
    /// The displayed pose stored in its slot ([`MeasuredPath::StorePose`], taken out of
    /// `transition`), per wave where the frame's layer shows more samples than an entry holds.
    pub store_pose: u32,
    /// The root's motion removed ([`MeasuredPath::RootMotion`]), taken out of the layer's code:
    /// charged to the wave holding the root, on the base layer where its program carries
    /// [`LayerProgram::ROOT_MOTION`].
    pub root_motion: u32,
    /// A frozen fade's mix with its snapshot ([`MeasuredPath::SnapshotMix`]), taken out of
    /// `transition`: per wave, where a layer with memory fades from a snapshot.
    pub snapshot_mix: u32,
    /// An additive layer's delta applied ([`MeasuredPath::Additive`]), taken out of the layer's
    /// code: per wave of an additive layer.
    pub additive: u32,
    /// A local-space override's slerp ([`MeasuredPath::OverrideLocal`]), taken out of the
    /// layer's code: per wave of such a layer. In the fused kernel, which unrolls the layers and
    /// whose measured stack ([`MEASURED_STACK`]) has no such layer, measured on a kernel built
    /// for a stack that has one ([`FRAME_LAYERS_LOCAL_OVERRIDE_RADV_NAVI21`]).
    pub override_local: u32,
    /// A blend of one sample sampled outside the clip loop ([`MeasuredPath::SingleSample`]),
    /// taken out of the layer's code (in the layered frames and `frame_levels_main`; `frame_main`'s
    /// costs leave it there, 0 here): per wave and shown blend of one sample (full clips; the
    /// level kernels take one compact clip through the clip loop).
    pub single_sample: u32,
    /// A level kernel's sample entry computed past its table ([`MeasuredPath::TableMiss`]),
    /// taken out of `sample_clip` and `step_back_clip`: per wave and clip-loop iteration whose
    /// entry lies past a character's lanes (0 in the fused kernel, which has no table).
    pub table_miss: u32,
    /// The mesh-space override's roots' step in the level kernels ([`MeasuredPath::MeshRoots`]),
    /// outside its band loop, taken out of `mesh_fixed`: per wave holding roots' items of a
    /// mesh-space override layer.
    pub mesh_roots: u32,
    /// The skinning matrices stored as affine 3×4 rows ([`MeasuredPath::AffineOutput`]), taken
    /// out of `kernel_fixed`: per wave writing joints, where the model writes 48 bytes a joint.
    pub affine_output: u32,
    /// The sample-positions stage before the frame (`shaders/sample_positions.wgsl`, a kernel
    /// of its own): its straight-line code, per wave of the frame's samples (a thread a
    /// sample). [`SAMPLE_POSITIONS_RADV_NAVI21`] in every set of costs recorded here.
    pub sample_positions: u32,
}

/// The rounds pointer doubling's kernels are recorded with (`gpu::stats::Kernel::MEASURED_ROUNDS`,
/// `DOUBLING_ROUNDS` in `shaders/shared/doubling.wgsl`): both humanoids' rigs, whose deepest
/// joints are 10 and 14 deep, take 4 ([`crate::gpu::types::doubling_rounds`]). Their kernels
/// unroll the rounds; the code of one is the difference from the kernel built for none, divided
/// by these ([`KernelCosts::with_doubling_layers`]).
pub const MEASURED_ROUNDS: u32 = 4;

/// The stack the layered kernels' costs are recorded on (`gpu::stats::Kernel::MEASURED_STACK`,
/// `gpu::layer_stack`): the benches' layered scenario's three layers (base, mesh-space override,
/// additive), each keeping memory, which the model's layered frame evaluates, in evaluation
/// order (the base, the additive layer, the mesh-space override, whose mask follows the three
/// setups in the layer table). The fused kernel unrolls a stack's layers, so its loop lists
/// follow the stack, and its costs divide the layers' code among the stack's layers
/// ([`KernelCosts::from_frame_layers_loops`]).
pub const MEASURED_STACK: &[GpuLayerSetup] = &[
    GpuLayerSetup { layer: 0, blend: BLEND_OVERRIDE, space: SPACE_LOCAL, mask_start: NO_MASK, memory: 0 },
    GpuLayerSetup { layer: 2, blend: BLEND_ADDITIVE, space: SPACE_LOCAL, mask_start: NO_MASK, memory: 2 },
    GpuLayerSetup { layer: 1, blend: BLEND_OVERRIDE, space: SPACE_MESH, mask_start: 15, memory: 1 },
];

/// `sample_positions_main`'s static instruction count as `gpu_stats` reports it (RADV, as the
/// loop lists below): straight-line code, no loop.
pub const SAMPLE_POSITIONS_RADV_NAVI21: u32 = 53;

/// `frame_layers_main`'s loop bodies as `gpu_stats` reports them (instructions, nesting depth),
/// in program order, and its static instruction count: RADV (Mesa 22.3.6, `RADV_FORCE_FAMILY=
/// navi21`, wave64), the 64-joint humanoid, full clips, built for [`MEASURED_STACK`], whose three
/// layers the kernel unrolls (`gpu::layer_stack`). First the replay before the layers: the joint
/// loop holding the layer loop, its entry loop and that entry's weight sum and clip loop (its
/// check for a switching layer, the layers with memory known when the kernel is built, is
/// straight-line code before it). Then each layer's in evaluation order (the base, the additive
/// layer, the mesh-space override): sampling's two blends (each a weight sum and a clip loop),
/// the replay entry's store and, in the mesh-space override, its ancestor walk; then
/// local-to-model's walk. A thread's loops over its joints (`JOINTS_PER_THREAD`, 1 here) are
/// unrolled, the kernels being built without wgpu's loop bounding (`pipelines::kernel_module`):
/// their code (the transition's, the decay's, the pose's store, the mesh-space override's, the
/// combines', the skinning) is straight-line code of the layers or the kernel, which the
/// measured paths, the specialisations and the layerless kernel
/// ([`FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21`]) divide.
pub const FRAME_LAYERS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 22]) = (
    8129,
    [
        (1249, 0),
        (1241, 1),
        (1166, 2),
        (16, 3),
        (100, 3),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
        (15, 0),
        (102, 0),
        (15, 0),
        (90, 0),
        (20, 0),
        (15, 0),
        (100, 0),
        (15, 0),
        (87, 0),
        (20, 0),
        (60, 0),
        (63, 0),
    ],
);

/// `frame_layers_main`'s steady specialisation (`gpu::stats::Specialisation::Steady`: no switch
/// frame's code) as [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]: the replay and the step-back blend's two
/// loops are gone, the layers' straight-line code (no snapshot taken, no capture) shorter.
pub const FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 11]) =
    (4625, [(15, 0), (100, 0), (20, 0), (15, 0), (102, 0), (20, 0), (15, 0), (100, 0), (20, 0), (60, 0), (63, 0)]);

/// `frame_layers_main`'s settled specialisation (`gpu::stats::Specialisation::Settled`: no
/// switch frame's code, no decay) as [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]: the steady kernel's
/// loops, the layers without the decay's code.
pub const FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 11]) =
    (2061, [(15, 0), (100, 0), (20, 0), (15, 0), (102, 0), (20, 0), (15, 0), (100, 0), (20, 0), (60, 0), (63, 0)]);

/// `frame_layers_main`'s steady pass (`gpu::ShapePass::Steady`, the kernel a production crowd
/// runs for the characters whose frame runs no switch code) as
/// [`FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21`], with the shape pass's check before the layers:
/// straight-line code, the layers with memory known when the kernel is built (`MEMORY_LAYERS`
/// in `shaders/transition.wgsl`).
pub const FRAME_LAYERS_STEADY_PASS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 11]) =
    (4652, [(15, 0), (100, 0), (20, 0), (15, 0), (102, 0), (20, 0), (15, 0), (100, 0), (20, 0), (60, 0), (63, 0)]);

/// `frame_layers_main` built for no layers (`gpu::stats::Kernel::layerless_for_rig`), settled, as
/// [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]: local-to-model's walk, and around it the kernel's own code
/// (the checks before the layers, the pose's store, the skinning).
pub const FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 1]) = (260, [(63, 0)]);

/// [`FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21`] composing the hierarchy in one subgroup, at 32 lanes
/// ([`FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21`]): local-to-model's depth loop.
pub const FRAME_LAYERS_SUBGROUP_LAYERLESS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 1]) = (238, [(102, 0)]);

/// [`FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21`] composing the hierarchy by pointer doubling
/// ([`FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21`]), built for [`MEASURED_ROUNDS`]: its static
/// instruction count (the rounds unrolled, no loop left).
pub const FRAME_LAYERS_DOUBLING_LAYERLESS_RADV_NAVI21: u32 = 383;

/// [`FRAME_LAYERS_DOUBLING_LAYERLESS_RADV_NAVI21`] built for no rounds
/// (`gpu::stats::Kernel::roundless_for_rig`): the kernel's own code without local-to-model's.
pub const FRAME_LAYERS_DOUBLING_LAYERLESS_ROUNDLESS_RADV_NAVI21: u32 = 141;

/// `frame_layers_main` built for a stack of the base and a local-space override
/// (`gpu::stats::Kernel::local_override_for_rig`), settled: its static instruction count, then
/// with the local-space override's combine off (`… settled local-override`, `…
/// settled-override_local local-override`), as [`FRAME_LAYERS_WITHOUT_RADV_NAVI21`] measures the
/// other paths: the combine [`MEASURED_STACK`] has no layer to compile.
pub const FRAME_LAYERS_LOCAL_OVERRIDE_RADV_NAVI21: [u32; 2] = [1301, 1220];

/// `frame_layers_main`'s static instruction count with each [`MeasuredPath`]'s gate off, in the
/// path's specialisation ([`MeasuredPath::specialisation`]: the settled kernel, the steady one for
/// the overshoot), in [`MeasuredPath::ALL`]'s order, as `gpu_stats` reports them
/// (`… settled-root_motion` and so on; the table miss's and the mesh roots' are the settled count
/// itself, the kernel having no sample table and walking from the roots).
pub const FRAME_LAYERS_WITHOUT_RADV_NAVI21: [u32; MeasuredPath::ALL.len()] =
    [2001, 1872, 2005, 2061, 1845, 2061, 1719, 2061, 1975, 1571, 2772, 2039, 6852];

/// `frame_main`'s loop bodies and static instruction count, as [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]:
/// the sampling loop (weight sum, clip loop), then local-to-model's walk (the skinning, a thread's
/// joint, straight-line code around it).
pub const FRAME_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 4]) = (528, [(273, 0), (15, 1), (99, 1), (63, 0)]);

/// `frame_layers_main` composing the hierarchy in one subgroup ([`Hierarchy::Subgroup`]) for
/// every character, as [`FRAME_LAYERS_LOOPS_RADV_NAVI21`] but compiled at 32 lanes (a crowd runs
/// it only where subgroups are smaller than the workgroup; `gpu::stats::driver_statistics` asks
/// RADV for its smallest): the same loops, the mesh-space override's depth loop where that has
/// its walk and local-to-model's depth loop where that has its walk.
pub const FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 22]) = (
    8123,
    [
        (1248, 0),
        (1240, 1),
        (1166, 2),
        (16, 3),
        (100, 3),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
        (15, 0),
        (102, 0),
        (15, 0),
        (90, 0),
        (20, 0),
        (15, 0),
        (100, 0),
        (15, 0),
        (87, 0),
        (20, 0),
        (91, 0),
        (109, 0),
    ],
);

/// `frame_main` composing the hierarchy in one subgroup, as
/// [`FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21`]: the sampling loop, local-to-model's depth loop.
pub const FRAME_SUBGROUP_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 4]) = (504, [(275, 0), (15, 1), (100, 1), (100, 0)]);

/// `frame_layers_main` composing its hierarchy by pointer doubling ([`Hierarchy::Doubling`]),
/// built for [`MEASURED_ROUNDS`]: [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]'s loops without the walks
/// (the kernel unrolls its rig's rounds: the mesh-space override's and local-to-model's are
/// straight-line code).
pub const FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 20]) = (
    8355,
    [
        (1248, 0),
        (1240, 1),
        (1166, 2),
        (16, 3),
        (100, 3),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
        (15, 0),
        (102, 0),
        (15, 0),
        (90, 0),
        (20, 0),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
    ],
);

/// [`FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21`] built for no rounds
/// (`gpu::stats::Kernel::roundless_for_rig`): the same loops; the difference in static count is
/// the rounds' code.
pub const FRAME_LAYERS_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 20]) = (
    7897,
    [
        (1248, 0),
        (1240, 1),
        (1166, 2),
        (16, 3),
        (100, 3),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
        (15, 0),
        (102, 0),
        (15, 0),
        (90, 0),
        (20, 0),
        (15, 0),
        (100, 0),
        (15, 0),
        (88, 0),
        (20, 0),
    ],
);

/// `frame_main` composing local-to-model by pointer doubling, as
/// [`FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21`]: the sampling loop, the rounds unrolled after it.
pub const FRAME_DOUBLING_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 3]) = (650, [(274, 0), (15, 1), (99, 1)]);

/// [`FRAME_DOUBLING_LOOPS_RADV_NAVI21`] built for no rounds.
pub const FRAME_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 3]) = (409, [(274, 0), (15, 1), (99, 1)]);

/// The paths `frame_main` holds behind measurement gates: the affine output's store (the
/// layered frames' other paths are not in it, and its blend is not measured path by path).
pub const FRAME_PATHS: [MeasuredPath; 1] = [MeasuredPath::AffineOutput];

/// `frame_main`'s static instruction count with each of [`FRAME_PATHS`]' gates off, as
/// `gpu_stats` reports them (`frame_main/64j-affine_output`).
pub const FRAME_WITHOUT_RADV_NAVI21: [u32; FRAME_PATHS.len()] = [510];

/// `frame_layers_levels_main`'s ([`FrameKernel::Levels`]) loop bodies and static instruction
/// count, as [`FRAME_LAYERS_LOOPS_RADV_NAVI21`]: the layer loop, which holds the replay's entry
/// loop (that entry's weight sum and clip loop), the two weight sums (shown and step-back), the
/// two clip loops, the character slots' end of a layer with memory (`end_layer_of_slots`: the
/// capture's reduction and the replay entry's store within) and the mesh-space override's band
/// loop (its chain loop within); then local-to-model's band loop (its chain loop within).
pub const FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 17]) = (
    4563,
    [
        (4255, 0),
        (1181, 1),
        (16, 2),
        (101, 2),
        (191, 1),
        (16, 2),
        (16, 2),
        (51, 2),
        (126, 1),
        (117, 1),
        (256, 1),
        (11, 2),
        (19, 2),
        (103, 1),
        (72, 2),
        (102, 0),
        (67, 1),
    ],
);

/// `frame_layers_levels_main`'s steady specialisation as [`FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21`]:
/// the replay, the step-back blend's weight sum and clip loop and the capture's reduction are
/// gone, the slots' end is shorter.
pub const FRAME_LAYERS_LEVELS_STEADY_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 11]) =
    (2520, [(2210, 0), (165, 1), (16, 2), (52, 2), (124, 1), (207, 1), (19, 2), (101, 1), (70, 2), (105, 0), (70, 1)]);

/// `frame_layers_levels_main`'s settled specialisation as
/// [`FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21`]: the same loops as the steady one, the layer
/// loop's straight-line body without the decay.
pub const FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 11]) =
    (1663, [(1353, 0), (165, 1), (16, 2), (52, 2), (127, 1), (138, 1), (19, 2), (101, 1), (70, 2), (105, 0), (70, 1)]);

/// `frame_layers_levels_main`'s static instruction count with each [`MeasuredPath`]'s gate off,
/// as [`FRAME_LAYERS_WITHOUT_RADV_NAVI21`].
pub const FRAME_LAYERS_LEVELS_WITHOUT_RADV_NAVI21: [u32; MeasuredPath::ALL.len()] =
    [1603, 1578, 1597, 1589, 1603, 1633, 1308, 1626, 1624, 1384, 1902, 1639, 4563];

/// `frame_layers_levels_main`'s settled specialisation compiled without a band's chain work
/// ([`MeasuredPath::BandChains`], `… settled-band_chains`): its chain loops gone, the mesh-space
/// override's band loop (the 8th) and local-to-model's (the 9th) are what a wave holding none of
/// a band's chains runs a band, and the stand-in store the measurement keeps in place of the
/// work (a whole vec4: three or four instructions, which such a wave skips).
pub const FRAME_LAYERS_LEVELS_IDLE_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 9]) =
    (1499, [(1271, 0), (165, 1), (16, 2), (52, 2), (127, 1), (138, 1), (19, 2), (19, 1), (23, 0)]);

/// `frame_levels_main` compiled without a band's chain work (`frame_levels_main/64j-band_chains`),
/// as [`FRAME_LAYERS_LEVELS_IDLE_LOOPS_RADV_NAVI21`]: its third loop, local-to-model's band
/// loop, is an idle wave's band.
pub const FRAME_LEVELS_IDLE_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 3]) = (517, [(16, 0), (124, 0), (23, 0)]);

/// `frame_levels_main`'s loop bodies and static instruction count: the weight sum, the clip
/// loop, local-to-model's band loop and its chain loop.
pub const FRAME_LEVELS_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 4]) = (594, [(16, 0), (124, 0), (100, 0), (65, 1)]);

/// The paths `frame_levels_main` holds behind measurement gates: its single-sample shortcut, its
/// clip loop's table miss and the affine output's store (the layered frames' other paths are not
/// in it).
pub const FRAME_LEVELS_PATHS: [MeasuredPath; 3] =
    [MeasuredPath::SingleSample, MeasuredPath::TableMiss, MeasuredPath::AffineOutput];

/// `frame_levels_main`'s static instruction count with each of [`FRAME_LEVELS_PATHS`]' gates
/// off, as `gpu_stats` reports them (`frame_levels_main/64j-single_sample` and so on).
pub const FRAME_LEVELS_WITHOUT_RADV_NAVI21: [u32; FRAME_LEVELS_PATHS.len()] = [531, 555, 567];

/// One kernel's static instruction count and loop bodies `(instructions, depth)` in program
/// order, as `gpu_stats` reports them.
pub type LoopList<'a> = (u32, &'a [(usize, usize)]);

/// A recorded kernel (a `*_LOOPS_RADV_NAVI21` constant) as a [`LoopList`].
const fn loop_list<const N: usize>(recorded: &(u32, [(usize, usize); N])) -> LoopList<'_> {
    (recorded.0, &recorded.1)
}

/// The walking layered kernel's recorded loop lists, the production kernel's and the one built
/// for no layers, against which the composing kernels' hierarchies are measured.
const WALKS_RADV_NAVI21: (LoopList<'static>, LoopList<'static>) =
    (loop_list(&FRAME_LAYERS_LOOPS_RADV_NAVI21), loop_list(&FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21));

/// `difference`, the code of [`MEASURED_ROUNDS`] doubling rounds, as one round's (rounded).
const fn a_round(difference: u32) -> u32 {
    (difference + MEASURED_ROUNDS / 2) / MEASURED_ROUNDS
}

/// A layered frame kernel's loop lists: the production kernel's and its two measurement
/// specialisations' (`gpu::stats::Specialisation`), whose differences measure the switch
/// frame's code and the decay.
#[derive(Clone, Copy, Debug)]
pub struct LayeredLoops<'a> {
    /// The kernel the evaluator builds.
    pub production: LoopList<'a>,
    /// Compiled with `SWITCH_CODE` off.
    pub steady: LoopList<'a>,
    /// Compiled with `SWITCH_CODE` and `DECAY_CODE` off.
    pub settled: LoopList<'a>,
    /// The static instruction count with each [`MeasuredPath`]'s gate off, in the path's
    /// specialisation ([`MeasuredPath::specialisation`]), in [`MeasuredPath::ALL`]'s order.
    pub without: [u32; MeasuredPath::ALL.len()],
    /// The level kernels' settled specialisation without a band's chain work
    /// ([`MeasuredPath::BandChains`]): its band loops are an idle wave's bands. `None` for the
    /// fused kernel, which has no bands.
    pub idle: Option<LoopList<'a>>,
    /// The production crowd's steady-pass kernel (`gpu::ShapePass::Steady`), whose code outside
    /// its loops beyond the steady kernel's is the shape pass's check. `None` for the level
    /// kernels, whose check is not charged.
    pub steady_pass: Option<LoopList<'a>>,
    /// The fused kernel built for no layers, settled (`gpu::stats::Kernel::layerless_for_rig`):
    /// the kernel's own code without the layers it unrolls. `None` for the level kernels, which
    /// loop over the layers.
    pub layerless: Option<LoopList<'a>>,
    /// The stack the kernels are built for (`gpu::layer_stack`): the fused kernel's unrolled
    /// layers, in evaluation order ([`MEASURED_STACK`]; empty for the level kernels, whose loop
    /// over the layers does not depend on it).
    pub stack: &'a [GpuLayerSetup],
    /// The fused kernel built for a stack of the base and a local-space override, settled, its
    /// static count with and without that combine (`gpu::stats::Kernel::local_override_for_rig`):
    /// the combine a stack without such a layer does not compile, measured on one that has it.
    /// `None` for the level kernels, whose loop holds every combine.
    pub local_override: Option<[u32; 2]>,
}

impl LayeredLoops<'static> {
    /// `frame_layers_main`'s recorded lists ([`FRAME_LAYERS_LOOPS_RADV_NAVI21`],
    /// [`FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21`], [`FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21`]).
    #[must_use]
    pub fn frame_layers_radv_navi21() -> Self {
        Self {
            production: loop_list(&FRAME_LAYERS_LOOPS_RADV_NAVI21),
            steady: loop_list(&FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21),
            settled: loop_list(&FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21),
            without: FRAME_LAYERS_WITHOUT_RADV_NAVI21,
            idle: None,
            steady_pass: Some(loop_list(&FRAME_LAYERS_STEADY_PASS_LOOPS_RADV_NAVI21)),
            layerless: Some(loop_list(&FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21)),
            stack: MEASURED_STACK,
            local_override: Some(FRAME_LAYERS_LOCAL_OVERRIDE_RADV_NAVI21),
        }
    }

    /// `frame_layers_levels_main`'s recorded lists.
    #[must_use]
    pub fn frame_layers_levels_radv_navi21() -> Self {
        Self {
            production: loop_list(&FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21),
            steady: loop_list(&FRAME_LAYERS_LEVELS_STEADY_LOOPS_RADV_NAVI21),
            settled: (
                FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21.0,
                &FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21.1,
            ),
            without: FRAME_LAYERS_LEVELS_WITHOUT_RADV_NAVI21,
            idle: Some(loop_list(&FRAME_LAYERS_LEVELS_IDLE_LOOPS_RADV_NAVI21)),
            steady_pass: None,
            layerless: None,
            stack: &[],
            local_override: None,
        }
    }
}

impl LayeredLoops<'_> {
    /// Each list's loop structure against `depths` (production, steady, settled).
    fn matches(&self, depths: [&[usize]; 3]) -> bool {
        [self.production, self.steady, self.settled].iter().zip(depths).all(|(l, d)| loop_structure_matches(l.1, d))
    }

    /// Each [`MeasuredPath`]'s static instructions: its specialisation's count (the settled
    /// kernel's, the steady one's for the overshoot) less its count without the path; `None`
    /// where a path's kernel is the larger.
    fn path_costs(&self) -> Option<[u32; MeasuredPath::ALL.len()]> {
        let mut costs = [0; MeasuredPath::ALL.len()];
        for ((cost, &without), path) in costs.iter_mut().zip(&self.without).zip(MeasuredPath::ALL) {
            let with = match path.specialisation() {
                Specialisation::Steady => self.steady.0,
                Specialisation::Production => self.production.0,
                _ => self.settled.0,
            };
            *cost = with.checked_sub(without)?;
        }
        Some(costs)
    }
}

/// How the layered fused kernel built for a stack lays out its layers (`gpu::layer_stack`: a
/// layer's code after another's, in evaluation order): how many layers of each kind there are,
/// among which [`KernelCosts::from_frame_layers_loops`] divides the code they share, and where
/// each one's loops lie in the kernel's list.
#[derive(Clone, Copy, Debug)]
struct UnrolledStack<'a> {
    setups: &'a [GpuLayerSetup],
    layers: u32,
    memory: u32,
    mesh: u32,
    additive: u32,
    local_overrides: u32,
}

/// One unrolled layer's loop bodies: its blend's weight sum and clip loop, the step-back blend's
/// clip loop (a kernel with the switch frame's code), the replay entry's store (a layer with
/// memory), the mesh-space override's walk or composition (such a layer).
#[derive(Clone, Copy, Debug)]
struct LayerLoops {
    weight: u32,
    clip: u32,
    step_back_clip: Option<u32>,
    store: Option<u32>,
    mesh: Option<u32>,
}

impl<'a> UnrolledStack<'a> {
    fn of(setups: &'a [GpuLayerSetup]) -> Self {
        let number = |f: fn(&GpuLayerSetup) -> bool| setups.iter().filter(|s| f(s)).count() as u32;
        Self {
            setups,
            layers: setups.len() as u32,
            memory: number(keeps_memory),
            mesh: number(overrides_in_mesh),
            additive: number(|s| s.layer != 0 && s.blend == BLEND_ADDITIVE),
            local_overrides: number(|s| s.layer != 0 && s.blend == BLEND_OVERRIDE && s.space == SPACE_LOCAL),
        }
    }

    /// The nesting of the kernel's loops, with the switch frame's code (the production kernel:
    /// the replay's four nested loops first) or without (the specialisations), and with the
    /// hierarchy's loops (the mesh-space override's and local-to-model's walks or depth loops)
    /// or without (pointer doubling's rounds, unrolled).
    fn depths(&self, switch_code: bool, hierarchy_loops: bool) -> Vec<usize> {
        let mut depths = if switch_code && self.memory > 0 { vec![0, 1, 2, 3, 3] } else { Vec::new() };
        for setup in self.setups {
            depths.extend(if switch_code { &[0, 0, 0, 0][..] } else { &[0, 0][..] });
            depths.extend(keeps_memory(setup).then_some(0));
            depths.extend((hierarchy_loops && overrides_in_mesh(setup)).then_some(0));
        }
        depths.extend(hierarchy_loops.then_some(0));
        depths
    }

    /// Each layer's loops from a kernel's `list` (in [`UnrolledStack::depths`]' shape).
    fn loops(&self, list: &[(usize, usize)], switch_code: bool) -> Option<Vec<LayerLoops>> {
        let mut at = if switch_code && self.memory > 0 { 5 } else { 0 };
        let mut next = || {
            let body = count(list.get(at)?.0);
            at += 1;
            Some(body)
        };
        self.setups
            .iter()
            .map(|setup| {
                let (weight, clip) = (next()?, next()?);
                let step_back_clip = if switch_code { next().and(next()) } else { None };
                let store = if keeps_memory(setup) { Some(next()?) } else { None };
                let mesh = if overrides_in_mesh(setup) { Some(next()?) } else { None };
                Some(LayerLoops { weight, clip, step_back_clip, store, mesh })
            })
            .collect()
    }
}

fn keeps_memory(setup: &GpuLayerSetup) -> bool {
    setup.memory != NO_MEMORY
}

fn overrides_in_mesh(setup: &GpuLayerSetup) -> bool {
    setup.layer != 0 && setup.blend == BLEND_OVERRIDE && setup.space == SPACE_MESH
}

/// One layer's share of the code `total` that `layers` layers each hold (a remainder of an
/// instruction or two left out), or 0 where none does; `None` where the stack holds none of them
/// but the code is there.
fn shared(total: u32, layers: u32) -> Option<u32> {
    total.checked_div(layers).or((total == 0).then_some(0))
}

fn loop_structure_matches(loops: &[(usize, usize)], depths: &[usize]) -> bool {
    loops.len() == depths.len() && loops.iter().zip(depths).all(|(&(_, d), &want)| d == want)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What the static count `total` of a layered frame leaves outside its loops (`loops`: its
/// top-level ones are the replay's joint loop, the layer loop or the unrolled layers' loops, and
/// local-to-model's loop).
fn layered_outside_loops(total: u32, loops: &[(usize, usize)]) -> Option<u32> {
    let top: usize = loops.iter().filter(|&&(_, depth)| depth == 0).map(|&(body, _)| body).sum();
    total.checked_sub(u32::try_from(top).ok()?)
}

impl KernelCosts {
    /// The costs of `frame_layers_main` from its loop lists (the production kernel's and its
    /// specialisations', [`LayeredLoops`]; `gpu::stats::ExecutableStatistics::loops`), built for
    /// the stack [`LayeredLoops::stack`], whose layers the kernel unrolls (`gpu::layer_stack`), or
    /// `None` when the loops are not that kernel's in its nesting (the kernel changed: its regions
    /// must be mapped anew). Each layer's code is its own straight-line code with its loops after
    /// the last layer's: a blend's weight sum and clip loop, the step-back blend's two (in a
    /// kernel with the switch frame's code), the replay entry's store (a layer with memory), the
    /// mesh-space override's walk (such a layer); before the layers, in a kernel with the switch
    /// frame's code, the replay's loops; after them local-to-model's walk. The loop bodies are the
    /// first layer's (the base's) and the production kernel's otherwise: the replay's
    /// (`replay_layer` the joint and layer loops' own code, `replay_entry` the entry loop's), the
    /// walks. Straight-line code is found by differences: what a kernel leaves outside its loops,
    /// the kernel's own code that of the kernel built for no layers ([`LayeredLoops::layerless`]:
    /// `kernel_fixed`, less the affine store), and a region every layer of some kind holds is the
    /// difference divided among the stack's layers of that kind (`switch`, `decay`, the
    /// transition and the paths a layer with memory runs among the layers with memory, the
    /// single-sample shortcut among all of them, a combine among the layers that blend so, the
    /// root's motion in the base; a local-space override's combine, where the stack has no
    /// such layer, from the kernel built for one, [`LayeredLoops::local_override`]). `switch` is
    /// the production kernel's outside code less the steady one's and less the check for a
    /// switching layer before the layers (`replay_check`: the replay's path,
    /// [`MeasuredPath::Replay`], less the replay's loop); `decay` the steady one's less the
    /// settled one's and the overshoot's decay (measured in the steady kernel). Each other
    /// measured path is the settled kernel's count less its count without the path
    /// ([`LayeredLoops::without`]):
    /// the mesh-space override's holds its walk, the rest of it is `mesh_fixed`; the transition's
    /// holds the replay entry's store, the snapshot's mix and the pose's store, the rest of it is
    /// `transition`; the table miss's, 0 here, comes out of both clip loops. `layer_fixed` is what
    /// the settled layers leave: each layer's own code with sampling's and the combine's around
    /// the measured paths (`sample_fixed` is 0, and a layer that is not shown is charged it too,
    /// an upper bound). `pass_check` is what the steady-pass kernel leaves outside its loops
    /// beyond the steady kernel's. A division's remainder, an instruction or two the driver's
    /// scheduling moves between the builds, is left out.
    #[must_use]
    pub fn from_frame_layers_loops(loops: LayeredLoops<'_>) -> Option<Self> {
        let shape = UnrolledStack::of(loops.stack);
        if !loops.matches([
            &shape.depths(true, true)[..],
            &shape.depths(false, true)[..],
            &shape.depths(false, true)[..],
        ]) {
            return None;
        }
        let (steady_pass, layerless) = (loops.steady_pass?, loops.layerless?);
        if !loop_structure_matches(steady_pass.1, &shape.depths(false, true))
            || !loop_structure_matches(layerless.1, &[0])
        {
            return None;
        }
        let production = loops.production.1;
        let n = |i: usize| count(production[i].0);
        let outside = |(total, list): LoopList<'_>| layered_outside_loops(total, list);
        let (production_outside, steady_outside) = (outside(loops.production)?, outside(loops.steady)?);
        let settled_outside = outside(loops.settled)?;
        let paths = loops.path_costs()?;
        let [
            root_motion,
            snapshot_mix,
            additive,
            override_local,
            single_sample,
            table_miss,
            mesh_override,
            _,
            store_pose,
            transition_path,
            overshoot,
            affine_output,
            replay,
        ] = paths;
        // The layers' loops in the settled kernel: the blends' (out of the layers' code), the
        // replay entry's stores and the mesh-space override's walks (in their paths).
        let settled_loops = shape.loops(loops.settled.1, false)?;
        let replay_stores: u32 = settled_loops.iter().filter_map(|l| l.store).sum();
        let mesh_walks: u32 = settled_loops.iter().filter_map(|l| l.mesh).sum();
        let blends: u32 = settled_loops.iter().map(|l| l.weight + l.clip).sum();
        let layers = loops.settled.0.checked_sub(blends + layerless.0)?;
        let in_layers = root_motion + single_sample + additive + override_local + mesh_override + transition_path;
        let production_loops = shape.loops(production, true)?;
        let first = *production_loops.first()?;
        let stores = production_loops.iter().find_map(|l| l.store).unwrap_or(0);
        let walk = production_loops.iter().find_map(|l| l.mesh).unwrap_or(0);
        let memory = shape.memory;
        // The replay's loops lead the production kernel's list where a layer keeps memory; its
        // path holds the check and those loops. The check reads the programs the unrolled layers
        // read after it, loads the driver shares between them: the path measures no more than
        // the loop, within the instructions the driver's scheduling moves between the builds
        // (fewer, on RADV navi21), and the check is charged what the path holds beyond it.
        let replay_loops = shape.memory > 0;
        let replay_loop = |i: usize| if replay_loops { n(i) } else { 0 };
        let replay_check = replay.saturating_sub(replay_loop(0));
        Some(Self {
            kernel_fixed: outside(layerless)?.checked_sub(affine_output)?,
            layer_fixed: shared(layers.checked_sub(in_layers)?, shape.layers)?,
            sample_weight: first.weight,
            sample_clip: first.clip.checked_sub(table_miss)?,
            step_back_clip: first.step_back_clip?.checked_sub(table_miss)?,
            transition: shared(transition_path.checked_sub(replay_stores + snapshot_mix + store_pose)?, memory)?,
            switch: shared(production_outside.checked_sub(steady_outside + replay_check)?, memory)?,
            decay: shared(steady_outside.checked_sub(settled_outside + overshoot)?, memory)?,
            overshoot: shared(overshoot, memory)?,
            mesh_fixed: shared(mesh_override.checked_sub(mesh_walks)?, shape.mesh)?,
            mesh_step: walk,
            model_step: count(production.last()?.0),
            replay_check,
            pass_check: outside(steady_pass)?.checked_sub(steady_outside)?,
            replay_layer: replay_loop(0).checked_sub(replay_loop(2))?,
            replay_entry: replay_loop(2).checked_sub(replay_loop(3) + replay_loop(4))?,
            replay_weight: replay_loop(3),
            replay_clip: replay_loop(4),
            replay_store: stores,
            store_pose: shared(store_pose, memory)?,
            root_motion,
            snapshot_mix: shared(snapshot_mix, memory)?,
            additive: shared(additive, shape.additive)?,
            override_local: match (shape.local_overrides, loops.local_override) {
                (0, Some([with, without])) => with.checked_sub(without)?,
                _ => shared(override_local, shape.local_overrides)?,
            },
            single_sample: shared(single_sample, shape.layers)?,
            table_miss,
            affine_output,
            sample_positions: SAMPLE_POSITIONS_RADV_NAVI21,
            ..Self::default()
        })
    }

    /// The measured paths' costs ([`LayeredLoops::path_costs`], in [`MeasuredPath::ALL`]'s
    /// order), every other region 0.
    fn measured(paths: [u32; MeasuredPath::ALL.len()]) -> Self {
        let [
            root_motion,
            snapshot_mix,
            additive,
            override_local,
            single_sample,
            table_miss,
            _,
            mesh_roots,
            ..,
            overshoot,
            affine_output,
            _,
        ] = paths;
        Self {
            root_motion,
            snapshot_mix,
            additive,
            override_local,
            single_sample,
            table_miss,
            mesh_roots,
            overshoot,
            affine_output,
            sample_positions: SAMPLE_POSITIONS_RADV_NAVI21,
            ..Self::default()
        }
    }

    /// The costs of `frame_main` from its static instruction count and loop bodies, as
    /// [`KernelCosts::from_frame_layers_loops`], and `without` its counts with each of
    /// [`FRAME_PATHS`]' gates off (the affine store, out of the skinning's straight-line code in
    /// `kernel_fixed`); the layered regions stay 0.
    #[must_use]
    pub fn from_frame_loops(total: u32, loops: &[(usize, usize)], without: [u32; FRAME_PATHS.len()]) -> Option<Self> {
        if !loop_structure_matches(loops, &[0, 1, 1, 0]) {
            return None;
        }
        let n = |i: usize| count(loops[i].0);
        let [affine_output] = without.map(|w| total.checked_sub(w));
        let affine_output = affine_output?;
        Some(Self {
            // The skinning, a thread's joint, around local-to-model's walk.
            kernel_fixed: total.checked_sub(n(0) + n(3) + affine_output)?,
            sample_fixed: n(0).checked_sub(n(1) + n(2))?,
            sample_weight: n(1),
            sample_clip: n(2),
            model_step: n(3),
            affine_output,
            sample_positions: SAMPLE_POSITIONS_RADV_NAVI21,
            ..Self::default()
        })
    }

    /// The costs of `frame_layers_levels_main` from its loop lists, or `None` when they are not its
    /// seventeen loops (eleven in each specialisation) in that nesting. Measured as
    /// [`KernelCosts::from_frame_layers_loops`] measures them: the loop bodies are the production
    /// kernel's (the replay's entry loop as there, with no joint loop: a lane is a joint; the
    /// replay runs at the top of a switching layer's own iteration, on the program read there, so
    /// `replay_check` and `replay_layer` are 0 and its code outside the entry loop is in `switch`).
    /// The sample table's fill is a loop of its own, the first threads serving every character slot
    /// (`fill_table_of_slots`), which holds the two weight sums (`sample_weight`) and the entry
    /// loop (`fill_entry`): `fill_fixed` is the rest of its body. The end of a layer with memory is
    /// another, each character slot's thread (`end_layer_of_slots`), which holds the capture's
    /// reduction and the replay entry's store: `slot_end` is the settled kernel's body of it less
    /// its loop, `slot_decay` the steady one's less the settled one's, `slot_switch` the production
    /// one's less the steady one's and the reduction. Of the layer loop less those two loops,
    /// `switch` is the production one less the steady one's and less the loops only a switch runs
    /// (the replay's entry loop, the step-back blend's clip loop); `decay` the steady one less the
    /// settled one's. What is left is the settled kernel's layer loop less its loops: one
    /// straight-line body of code every shown layer runs, which the driver reports undivided; less
    /// the measured paths (each the settled kernel's count less its count without it, as in the
    /// fused kernel; the table miss, which lies in the clip loops, out of both clip loops' bodies
    /// instead; the mesh-space override's, which holds its band loop and its roots' step, less both
    /// is `mesh_fixed`, and the band loop less its chain loop `mesh_band`; the transition's, which
    /// holds the slots' end and the snapshot's and the pose's paths, less those is `transition`),
    /// it is `layer_fixed`, as the fused kernel's (`sample_fixed` 0, sampling's code charged with
    /// it: the module's notes). The pose's store, a few straight-line stores here, is a measured
    /// path too (`store_pose`); the overshoot's decay, measured in the steady kernel, is taken out
    /// of `decay`.
    #[must_use]
    pub fn from_frame_layers_levels_loops(loops: LayeredLoops<'_>) -> Option<Self> {
        if !loops.matches([
            &[0, 1, 2, 2, 1, 2, 2, 2, 1, 1, 1, 2, 2, 1, 2, 0, 1],
            &[0, 1, 2, 2, 1, 1, 2, 1, 2, 0, 1],
            &[0, 1, 2, 2, 1, 1, 2, 1, 2, 0, 1],
        ]) {
            return None;
        }
        let idle = loops.idle?.1;
        if !loop_structure_matches(idle, &[0, 1, 2, 2, 1, 1, 2, 1, 0]) {
            return None;
        }
        let (total, production) = loops.production;
        let n = |i: usize| count(production[i].0);
        let steady = |i: usize| count(loops.steady.1[i].0);
        let settled = |i: usize| count(loops.settled.1[i].0);
        // n(1) is the replay's entry loop (its weight sum n(2) and clip loop n(3) within); n(4)
        // the fill (the weight sums n(5) and n(6), the entry loop n(7) within; the
        // specialisations' 1, with 2 and 3); n(10) the slots' end (the reduction n(11) and the
        // entry's store n(12) within; the specialisations' 5 and 6); n(13) the mesh-space
        // override's band loop (its chain loop n(14) within); n(15) local-to-model's band loop
        // (its chain loop n(16) within).
        let (sample_weight, fill_entry) = (n(5), n(7));
        let fill_fixed = n(4).checked_sub(n(5) + n(6) + n(7))?;
        let (capture_step, replay_store, mesh_step) = (n(11), n(12), n(14));
        let slot_end = settled(5).checked_sub(settled(6))?;
        let slot_decay = steady(5).checked_sub(settled(5))?;
        let slot_switch = n(10).checked_sub(steady(5) + capture_step)?;
        // Each layer loop less the fill and the slots' end.
        let layer = n(0).checked_sub(n(4) + n(10))?;
        let steady_layer = steady(0).checked_sub(steady(1) + steady(5))?;
        let settled_layer = settled(0).checked_sub(settled(1) + settled(5))?;
        let paths = loops.path_costs()?;
        let [
            root_motion,
            snapshot_mix,
            additive,
            override_local,
            single_sample,
            table_miss,
            mesh_override,
            mesh_roots,
            store_pose,
            transition_path,
            overshoot,
            affine_output,
            _,
        ] = paths;
        // The table miss lies in the clip loops; the mesh-space override's path holds its band
        // loop and its straight-line code, `mesh_fixed` (with the instruction or two by which
        // the specialisation's loop differs from the production kernel's); the transition's
        // holds the slots' end (a loop), the snapshot's mix and the pose's store, and what is
        // left of it is `transition`; the overshoot lies in the decay; the other paths lie in the
        // straight-line body.
        let (sample_clip, step_back_clip) = (n(8).checked_sub(table_miss)?, n(9).checked_sub(table_miss)?);
        let mesh_fixed = mesh_override.checked_sub(n(13) + mesh_roots)?;
        let transition = transition_path.checked_sub(settled(5) + snapshot_mix + store_pose)?;
        let in_body =
            root_motion + snapshot_mix + additive + override_local + single_sample + mesh_override + store_pose;
        Some(Self {
            kernel_fixed: total.checked_sub(n(0) + n(15) + affine_output)?,
            layer_fixed: settled_layer.checked_sub(n(8) + in_body + transition)?,
            sample_weight,
            sample_clip,
            step_back_clip,
            transition,
            // The replay's code outside its entry loop is in `switch`, charged where a layer
            // switches to a frozen fade or an inertialization; a crossfade's or cut's switch runs
            // its first few instructions (the state read that finds nothing to replay), which
            // the model charges nowhere.
            switch: layer.checked_sub(steady_layer + n(9) + n(1))?,
            decay: steady_layer.checked_sub(settled_layer + overshoot)?,
            mesh_fixed,
            mesh_step,
            mesh_band: n(13).checked_sub(mesh_step)?,
            model_step: n(16),
            model_band: n(15).checked_sub(n(16))?,
            mesh_idle: count(idle[7].0),
            model_idle: count(idle[8].0),
            capture_step,
            slot_end,
            slot_switch,
            slot_decay,
            fill_fixed,
            fill_entry,
            replay_check: 0,
            replay_layer: 0,
            replay_entry: n(1).checked_sub(n(2) + n(3))?,
            replay_weight: n(2),
            replay_clip: n(3),
            replay_store,
            store_pose,
            ..Self::measured(paths)
        })
    }

    /// The costs of `frame_levels_main`: its code outside loops (sampling's fixed part, the pose,
    /// skinning) as `kernel_fixed`, the weight sum, the clip loop and local-to-model's band loop
    /// (its chain loop within);
    /// `without` its static counts with each of [`FRAME_LEVELS_PATHS`]' gates off, whose
    /// differences are the single-sample shortcut (out of `kernel_fixed`) and the table miss (out
    /// of the clip loop), as [`KernelCosts::from_frame_layers_levels_loops`] measures them.
    #[must_use]
    pub fn from_frame_levels_loops(
        total: u32,
        loops: &[(usize, usize)],
        without: [u32; FRAME_LEVELS_PATHS.len()],
        idle: &[(usize, usize)],
    ) -> Option<Self> {
        if !loop_structure_matches(loops, &[0, 0, 0, 1]) || !loop_structure_matches(idle, &[0, 0, 0]) {
            return None;
        }
        let n = |i: usize| count(loops[i].0);
        let [single_sample, table_miss, affine_output] = without.map(|w| total.checked_sub(w));
        let (single_sample, table_miss, affine_output) = (single_sample?, table_miss?, affine_output?);
        Some(Self {
            kernel_fixed: total.checked_sub(n(0) + n(1) + n(2) + single_sample + affine_output)?,
            sample_weight: n(0),
            sample_clip: n(1).checked_sub(table_miss)?,
            model_step: n(3),
            model_band: n(2).checked_sub(n(3))?,
            model_idle: count(idle[2].0),
            single_sample,
            table_miss,
            affine_output,
            sample_positions: SAMPLE_POSITIONS_RADV_NAVI21,
            ..Self::default()
        })
    }

    /// Each region alone, named as its field: these costs with every other region at 0. The
    /// model is linear in the costs, so a frame's wave-instructions under each region add up to
    /// its total under all of them: a breakdown of where the instructions go (`gpu_stats`).
    ///
    /// ```
    /// use throng::gpu::work_model::{KernelCosts, WorkModel};
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let model = WorkModel::new(&rig, 64, 64, 48).unwrap();
    /// let costs = KernelCosts::frame_radv_navi21();
    /// let total = model.two_clip_character(&[0.5, 0.5], &costs).wave_instructions;
    /// let parts: f64 =
    ///     costs.regions().iter().map(|(_, alone)| model.two_clip_character(&[0.5, 0.5], alone).wave_instructions).sum();
    /// assert_eq!(parts, total);
    /// ```
    #[must_use]
    pub fn regions(&self) -> [(&'static str, Self); 40] {
        [
            ("kernel_fixed", Self { kernel_fixed: self.kernel_fixed, ..Self::default() }),
            ("layer_fixed", Self { layer_fixed: self.layer_fixed, ..Self::default() }),
            ("sample_fixed", Self { sample_fixed: self.sample_fixed, ..Self::default() }),
            ("sample_weight", Self { sample_weight: self.sample_weight, ..Self::default() }),
            ("sample_clip", Self { sample_clip: self.sample_clip, ..Self::default() }),
            ("step_back_clip", Self { step_back_clip: self.step_back_clip, ..Self::default() }),
            ("transition", Self { transition: self.transition, ..Self::default() }),
            ("switch", Self { switch: self.switch, ..Self::default() }),
            ("decay", Self { decay: self.decay, ..Self::default() }),
            ("mesh_fixed", Self { mesh_fixed: self.mesh_fixed, ..Self::default() }),
            ("mesh_step", Self { mesh_step: self.mesh_step, ..Self::default() }),
            ("mesh_band", Self { mesh_band: self.mesh_band, ..Self::default() }),
            ("mesh_idle", Self { mesh_idle: self.mesh_idle, ..Self::default() }),
            ("model_step", Self { model_step: self.model_step, ..Self::default() }),
            ("model_band", Self { model_band: self.model_band, ..Self::default() }),
            ("model_idle", Self { model_idle: self.model_idle, ..Self::default() }),
            ("capture_step", Self { capture_step: self.capture_step, ..Self::default() }),
            ("slot_end", Self { slot_end: self.slot_end, ..Self::default() }),
            ("slot_switch", Self { slot_switch: self.slot_switch, ..Self::default() }),
            ("slot_decay", Self { slot_decay: self.slot_decay, ..Self::default() }),
            ("fill_fixed", Self { fill_fixed: self.fill_fixed, ..Self::default() }),
            ("fill_entry", Self { fill_entry: self.fill_entry, ..Self::default() }),
            ("replay_check", Self { replay_check: self.replay_check, ..Self::default() }),
            ("pass_check", Self { pass_check: self.pass_check, ..Self::default() }),
            ("replay_layer", Self { replay_layer: self.replay_layer, ..Self::default() }),
            ("replay_entry", Self { replay_entry: self.replay_entry, ..Self::default() }),
            ("replay_weight", Self { replay_weight: self.replay_weight, ..Self::default() }),
            ("replay_clip", Self { replay_clip: self.replay_clip, ..Self::default() }),
            ("replay_store", Self { replay_store: self.replay_store, ..Self::default() }),
            ("store_pose", Self { store_pose: self.store_pose, ..Self::default() }),
            ("root_motion", Self { root_motion: self.root_motion, ..Self::default() }),
            ("snapshot_mix", Self { snapshot_mix: self.snapshot_mix, ..Self::default() }),
            ("additive", Self { additive: self.additive, ..Self::default() }),
            ("override_local", Self { override_local: self.override_local, ..Self::default() }),
            ("single_sample", Self { single_sample: self.single_sample, ..Self::default() }),
            ("table_miss", Self { table_miss: self.table_miss, ..Self::default() }),
            ("mesh_roots", Self { mesh_roots: self.mesh_roots, ..Self::default() }),
            ("overshoot", Self { overshoot: self.overshoot, ..Self::default() }),
            ("affine_output", Self { affine_output: self.affine_output, ..Self::default() }),
            ("sample_positions", Self { sample_positions: self.sample_positions, ..Self::default() }),
        ]
    }

    /// [`LayeredLoops::frame_layers_levels_radv_navi21`]'s costs.
    #[must_use]
    pub fn frame_layers_levels_radv_navi21() -> Self {
        let loops = LayeredLoops::frame_layers_levels_radv_navi21();
        Self::from_frame_layers_levels_loops(loops).unwrap_or_default()
    }

    /// [`FRAME_LEVELS_LOOPS_RADV_NAVI21`]'s costs.
    #[must_use]
    pub fn frame_levels_radv_navi21() -> Self {
        let (total, loops) = FRAME_LEVELS_LOOPS_RADV_NAVI21;
        let idle = FRAME_LEVELS_IDLE_LOOPS_RADV_NAVI21.1;
        Self::from_frame_levels_loops(total, &loops, FRAME_LEVELS_WITHOUT_RADV_NAVI21, &idle).unwrap_or_default()
    }

    /// The costs of `frame_layers_main` composing its hierarchy in one subgroup
    /// ([`Hierarchy::Subgroup`]): the walking kernel's (`self`,
    /// [`KernelCosts::from_frame_layers_loops`]) with its hierarchy's regions taken from the
    /// composing kernels' static counts and loop lists (`composed`: the production kernel's and
    /// the one built for no layers; `walks` the walking kernel's two, whose loops it has in their
    /// places, for the stack `stack`): `mesh_step` the mesh-space override's depth loop in place
    /// of its walk, `mesh_fixed` the walking kernel's with the difference the
    /// composition makes to each mesh-space override layer's code (what the production kernel
    /// leaves outside its loops beyond the layerless one's, in which the two differ by that code
    /// alone), `model_step` local-to-model's depth loop, `kernel_fixed` what the layerless
    /// kernel leaves outside its loop less the affine store, as in the walks. `None` when a list
    /// is not that kernel's loops in their nesting.
    #[must_use]
    pub fn with_composed_layers(
        self,
        walks: (LoopList<'_>, LoopList<'_>),
        composed: (LoopList<'_>, LoopList<'_>),
        stack: &[GpuLayerSetup],
    ) -> Option<Self> {
        let shape = UnrolledStack::of(stack);
        let depths = shape.depths(true, true);
        if [walks, composed].iter().any(|(production, layerless)| {
            !loop_structure_matches(production.1, &depths) || !loop_structure_matches(layerless.1, &[0])
        }) {
            return None;
        }
        let outside = |(total, list): LoopList<'_>| layered_outside_loops(total, list).map(i64::from);
        let layers = |(production, layerless)| Some(outside(production)? - outside(layerless)?);
        let by_mesh_layer = (layers(composed)? - layers(walks)?) / i64::from(shape.mesh.max(1));
        let mesh_step = shape.loops(composed.0.1, true)?.iter().find_map(|l| l.mesh).unwrap_or(0);
        Some(Self {
            kernel_fixed: u32::try_from(outside(composed.1)?).ok()?.checked_sub(self.affine_output)?,
            mesh_step,
            mesh_fixed: u32::try_from(i64::from(self.mesh_fixed) + by_mesh_layer).ok()?,
            model_step: count(composed.0.1.last()?.0),
            ..self
        })
    }

    /// The costs of `frame_main` composing local-to-model after its sampling loop in one
    /// subgroup from its static count and loop list, the sampling loop and local-to-model's
    /// loop: `model_step` the second, `kernel_fixed` what the static count leaves outside them
    /// less the affine store. `None` when the list is not those.
    #[must_use]
    pub fn with_composed_frame(self, (total, loops): (u32, &[(usize, usize)])) -> Option<Self> {
        if !loop_structure_matches(loops, &[0, 1, 1, 0]) {
            return None;
        }
        let n = |i: usize| count(loops[i].0);
        Some(Self { kernel_fixed: total.checked_sub(n(0) + n(3) + self.affine_output)?, model_step: n(3), ..self })
    }

    /// The costs of `frame_layers_main` composing its hierarchy by pointer doubling
    /// ([`Hierarchy::Doubling`]), whose kernels unroll their rig's rounds: the walking kernel's
    /// (`self`, with `walks` its production and layerless kernels' loop lists, as
    /// [`KernelCosts::with_composed_layers`] reads them) with the hierarchy's regions from the
    /// doubling kernels built for [`MEASURED_ROUNDS`] (`doubling`: the production kernel's loop
    /// list and the layerless kernel's static count) and for none (`roundless`), for the stack
    /// `stack`, each difference divided among the rounds: `model_step` the layerless kernels'
    /// difference (local-to-model's rounds, with the reads of each joint's ancestors that only
    /// rounds make), `mesh_step` what the production kernels' difference holds beyond it (each
    /// mesh-space override layer's rounds), `mesh_fixed` the walking kernel's with the difference
    /// the roundless composition makes to each mesh-space override layer's code, `kernel_fixed`
    /// the roundless layerless kernel's count less the affine store. `None` when a list is not
    /// that kernel's loops in their nesting, or a difference is negative. A round's cost so
    /// found is the measured rig's mean: code that depends on the round count (the word reads,
    /// one for two rounds; local-to-model's last round without its publication; the mesh-space
    /// override's blends, published by its last round, or apart where there is none) is shared
    /// among its rounds, a small bias for a rig that takes another count.
    #[must_use]
    pub fn with_doubling_layers(
        self,
        walks: (LoopList<'_>, LoopList<'_>),
        doubling: (LoopList<'_>, u32),
        roundless: (LoopList<'_>, u32),
        stack: &[GpuLayerSetup],
    ) -> Option<Self> {
        let shape = UnrolledStack::of(stack);
        let walking = shape.depths(true, true);
        let unrolled = shape.depths(true, false);
        if !loop_structure_matches(walks.0.1, &walking)
            || !loop_structure_matches(walks.1.1, &[0])
            || [doubling, roundless].iter().any(|(production, _)| !loop_structure_matches(production.1, &unrolled))
        {
            return None;
        }
        let outside = |(total, list): LoopList<'_>| layered_outside_loops(total, list).map(i64::from);
        let layers = |(production, layerless): (LoopList<'_>, i64)| Some(outside(production)? - layerless);
        let mesh = i64::from(shape.mesh.max(1));
        let walks_layers = layers((walks.0, outside(walks.1)?))?;
        let [doubling, roundless] =
            [doubling, roundless].map(|(production, layerless)| (production, i64::from(layerless)));
        let a_round = |difference: i64| u32::try_from(difference).ok().map(a_round);
        Some(Self {
            kernel_fixed: u32::try_from(roundless.1).ok()?.checked_sub(self.affine_output)?,
            mesh_step: a_round((layers(doubling)? - layers(roundless)?) / mesh)?,
            mesh_fixed: u32::try_from(i64::from(self.mesh_fixed) + (layers(roundless)? - walks_layers) / mesh).ok()?,
            model_step: a_round(doubling.1 - roundless.1)?,
            ..self
        })
    }

    /// The costs of `frame_main` composing local-to-model by pointer doubling after its
    /// sampling loop, from the static counts and loop lists of the kernels built for
    /// [`MEASURED_ROUNDS`] (`doubling`) and for none (`roundless`), each the sampling loop alone:
    /// `model_step` their difference a round, `kernel_fixed` what the roundless kernel leaves
    /// outside its loop less the affine store. `None` when a list is not that loop, or the
    /// difference is negative.
    #[must_use]
    pub fn with_doubling_frame(self, doubling: LoopList<'_>, roundless: LoopList<'_>) -> Option<Self> {
        if [doubling, roundless].iter().any(|(_, loops)| !loop_structure_matches(loops, &[0, 1, 1])) {
            return None;
        }
        let rounds = doubling.0.checked_sub(roundless.0)?;
        let kernel_fixed = roundless.0.checked_sub(count(roundless.1[0].0) + self.affine_output)?;
        Some(Self { kernel_fixed, model_step: a_round(rounds), ..self })
    }

    /// [`FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21`]'s costs ([`KernelCosts::with_composed_layers`]).
    #[must_use]
    pub fn layered_subgroup_radv_navi21() -> Self {
        let subgroup = (
            loop_list(&FRAME_LAYERS_SUBGROUP_LOOPS_RADV_NAVI21),
            loop_list(&FRAME_LAYERS_SUBGROUP_LAYERLESS_LOOPS_RADV_NAVI21),
        );
        Self::frame_layers_radv_navi21()
            .with_composed_layers(WALKS_RADV_NAVI21, subgroup, MEASURED_STACK)
            .unwrap_or_default()
    }

    /// [`FRAME_SUBGROUP_LOOPS_RADV_NAVI21`]'s costs ([`KernelCosts::with_composed_frame`]).
    #[must_use]
    pub fn two_clip_subgroup_radv_navi21() -> Self {
        Self::frame_radv_navi21().with_composed_frame(loop_list(&FRAME_SUBGROUP_LOOPS_RADV_NAVI21)).unwrap_or_default()
    }

    /// [`FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21`]'s costs ([`KernelCosts::with_doubling_layers`]).
    #[must_use]
    pub fn layered_doubling_radv_navi21() -> Self {
        Self::frame_layers_radv_navi21()
            .with_doubling_layers(
                WALKS_RADV_NAVI21,
                (loop_list(&FRAME_LAYERS_DOUBLING_LOOPS_RADV_NAVI21), FRAME_LAYERS_DOUBLING_LAYERLESS_RADV_NAVI21),
                (
                    loop_list(&FRAME_LAYERS_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21),
                    FRAME_LAYERS_DOUBLING_LAYERLESS_ROUNDLESS_RADV_NAVI21,
                ),
                MEASURED_STACK,
            )
            .unwrap_or_default()
    }

    /// [`FRAME_DOUBLING_LOOPS_RADV_NAVI21`]'s costs ([`KernelCosts::with_doubling_frame`]).
    #[must_use]
    pub fn two_clip_doubling_radv_navi21() -> Self {
        Self::frame_radv_navi21()
            .with_doubling_frame(
                loop_list(&FRAME_DOUBLING_LOOPS_RADV_NAVI21),
                loop_list(&FRAME_DOUBLING_ROUNDLESS_LOOPS_RADV_NAVI21),
            )
            .unwrap_or_default()
    }

    /// The recorded RADV navi21 costs of `kernel`'s layered frame.
    #[must_use]
    pub fn layered_radv_navi21(kernel: FrameKernel) -> Self {
        match kernel {
            FrameKernel::Fused => Self::frame_layers_radv_navi21(),
            FrameKernel::Levels => Self::frame_layers_levels_radv_navi21(),
        }
    }

    /// The recorded RADV navi21 costs of `kernel`'s two-clip frame.
    #[must_use]
    pub fn two_clip_radv_navi21(kernel: FrameKernel) -> Self {
        match kernel {
            FrameKernel::Fused => Self::frame_radv_navi21(),
            FrameKernel::Levels => Self::frame_levels_radv_navi21(),
        }
    }

    /// [`LayeredLoops::frame_layers_radv_navi21`]'s costs.
    #[must_use]
    pub fn frame_layers_radv_navi21() -> Self {
        Self::from_frame_layers_loops(LayeredLoops::frame_layers_radv_navi21()).unwrap_or_default()
    }

    /// [`FRAME_LOOPS_RADV_NAVI21`]'s costs.
    #[must_use]
    pub fn frame_radv_navi21() -> Self {
        let (total, loops) = FRAME_LOOPS_RADV_NAVI21;
        Self::from_frame_loops(total, &loops, FRAME_WITHOUT_RADV_NAVI21).unwrap_or_default()
    }
}

/// What one character costs a fused frame (or, from the `*_frame` functions, the mean over a
/// frame's characters). Every field is per character.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Modelled wave-instructions: each region's [`KernelCosts`] times the times a wave enters it.
    pub wave_instructions: f64,
    /// Times a wave enters a region or runs one iteration of its loops, all regions together.
    pub wave_steps: f64,
    /// Wave-steps of local-to-model's ancestor walks: per wave, its deepest lane's depth (one
    /// affine product per step, the joint's own included); with [`Hierarchy::Subgroup`] the
    /// rig's depths, with [`Hierarchy::Doubling`] per wave holding joints the rig's rounds.
    pub model_steps: f64,
    /// Wave-steps of the mesh-space override's composition: per wave, its deepest lane's
    /// ancestors plus its own step; with [`Hierarchy::Subgroup`] the rig's depths, with
    /// [`Hierarchy::Doubling`] per wave holding joints the rig's rounds.
    pub mesh_steps: f64,
    /// Products lanes compute in the ancestor walks: an affine product per ancestor level of
    /// each joint in local-to-model (Σ depth; one a round its depth reaches with
    /// [`Hierarchy::Doubling`]), a mesh-space step (the two poses' products) per ancestor of
    /// each joint and one for the joint itself (one a round its depth reaches with
    /// [`Hierarchy::Doubling`]).
    pub walk_products: f64,
    /// The same walks with each joint's result computed once from its parent's (a pass level
    /// by level): one product per non-root joint in local-to-model, one step per joint in the
    /// mesh-space override.
    pub level_products: f64,
    /// Skinning's matrix products (one per joint).
    pub skinning_products: f64,
    /// Clips sampled, per joint: a lane's interpolation of two frames.
    pub lane_samples: f64,
    /// Workgroup barriers.
    pub barriers: f64,
    /// Bytes of the character's own device memory read: programs, samples, layer memory.
    pub bytes_read: f64,
    /// Bytes written: layer memory and the output.
    pub bytes_written: f64,
    /// Bytes of clip frames read (two frames per joint per clip sampled), shared by every
    /// character sampling the same frames.
    pub clip_bytes_read: f64,
}

impl Work {
    /// Bytes read and written, the character's own.
    #[must_use]
    pub fn bytes(&self) -> f64 {
        self.bytes_read + self.bytes_written
    }

    fn add(&mut self, o: &Self) {
        self.wave_instructions += o.wave_instructions;
        self.wave_steps += o.wave_steps;
        self.model_steps += o.model_steps;
        self.mesh_steps += o.mesh_steps;
        self.walk_products += o.walk_products;
        self.level_products += o.level_products;
        self.skinning_products += o.skinning_products;
        self.lane_samples += o.lane_samples;
        self.barriers += o.barriers;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.clip_bytes_read += o.clip_bytes_read;
    }

    fn scaled(mut self, s: f64) -> Self {
        for v in [
            &mut self.wave_instructions,
            &mut self.wave_steps,
            &mut self.model_steps,
            &mut self.mesh_steps,
            &mut self.walk_products,
            &mut self.level_products,
            &mut self.skinning_products,
            &mut self.lane_samples,
            &mut self.barriers,
            &mut self.bytes_read,
            &mut self.bytes_written,
            &mut self.clip_bytes_read,
        ] {
            *v *= s;
        }
        self
    }

    /// These bytes, products and samples (the character's own, the same in every kernel) with
    /// `levels`'s instruction-side figures: wave-instructions and -steps, the walks' or levels'
    /// steps, barriers.
    fn with_instructions_of(mut self, levels: &Self) -> Self {
        self.wave_instructions = levels.wave_instructions;
        self.wave_steps = levels.wave_steps;
        self.model_steps = levels.model_steps;
        self.mesh_steps = levels.mesh_steps;
        self.barriers = levels.barriers;
        self
    }

    /// A region of `cost` instructions entered `times` times by waves.
    fn charge(&mut self, cost: u32, times: usize) {
        self.wave_instructions += f64::from(cost) * times as f64;
        self.wave_steps += times as f64;
    }
}

/// Why the model cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkModelError {
    /// The wave size is not a power of two from 1 to the workgroup's 64 threads.
    #[error("wave size {0} is not a power of two in 1..=64")]
    WaveSize(u32),
    /// The rig has more joints than the kernels evaluate.
    #[error("{0} joints: the GPU evaluator takes at most {max}", max = crate::MAX_JOINTS)]
    TooManyJoints(usize),
    /// Programs or samples do not describe the frame (a count that is not a whole number of
    /// characters, or a program whose samples lie past the sample list).
    #[error("the programs do not describe a frame: {0}")]
    Programs(String),
}

/// The model for one rig on waves of one size.
#[derive(Clone, Debug)]
pub struct WorkModel {
    depths: Vec<usize>,
    /// Joints of the rig's widest depth ([`Hierarchy::fits`]).
    widest_depth: u32,
    /// The level kernels' bands (`gpu::types::level_bands`): each one's chains' lengths.
    bands: Vec<Vec<usize>>,
    /// Each joint's parent, for the procedural stage's paths to the root.
    parents: Vec<Option<usize>>,
    kernel: FrameKernel,
    /// How the modelled crowd builds its layered frame ([`WorkModel::with_specialisation`]).
    specialisation: Specialisation,
    /// How the fused kernels are asked to compose the hierarchy ([`WorkModel::with_hierarchy`]).
    hierarchy: Hierarchy,
    wave_size: usize,
    output_bytes_per_joint: f64,
    clip_bytes_per_joint_frame: f64,
}

/// Whether a layer's sampled blend counts its clips as step-back clips.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Blend {
    Shown,
    StepBack,
}

impl WorkModel {
    /// The model for `rig` on waves of `wave_size` threads (64 on AMD's wave64, 32 on NVIDIA's
    /// warps; 1 counts per joint), writing `output_bytes_per_joint` (64 for mat4, 48 for affine
    /// 3×4) and sampling clips of `clip_bytes_per_joint_frame` (48 for full clips).
    ///
    /// # Errors
    /// [`WorkModelError::WaveSize`] for a wave size that is not a power of two up to 64, and
    /// [`WorkModelError::TooManyJoints`] past [`crate::MAX_JOINTS`].
    ///
    /// ```
    /// use throng::gpu::work_model::{KernelCosts, WorkModel};
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let model = WorkModel::new(&rig, 32, 64, 48).unwrap();
    /// let work = model.two_clip_character(&[0.5, 0.5], &KernelCosts::frame_radv_navi21());
    /// // Two warps of 32 joints; local-to-model walks each joint to the root: 614 products
    /// // where one per non-root joint (63) would do.
    /// assert!(work.walk_products > 9.0 * work.level_products);
    /// assert_eq!(work.bytes_written, 64.0 * 64.0);
    /// ```
    pub fn new(
        rig: &Rig,
        wave_size: u32,
        output_bytes_per_joint: u32,
        clip_bytes_per_joint_frame: u32,
    ) -> Result<Self, WorkModelError> {
        if !wave_size.is_power_of_two() || wave_size as usize > WORKGROUP_THREADS {
            return Err(WorkModelError::WaveSize(wave_size));
        }
        if rig.num_joints() > crate::MAX_JOINTS {
            return Err(WorkModelError::TooManyJoints(rig.num_joints()));
        }
        let depths: Vec<usize> = rig.joint_depths().iter().map(|&d| usize::from(d)).collect();
        Ok(Self {
            widest_depth: widest_depth(depths.iter().copied()),
            depths,
            bands: level_bands(rig).iter().map(|band| band.iter().map(Vec::len).collect()).collect(),
            parents: (0..rig.num_joints()).map(|j| rig.parent(j)).collect(),
            kernel: FrameKernel::Fused,
            specialisation: Specialisation::Whole,
            hierarchy: Hierarchy::Walks,
            wave_size: wave_size as usize,
            output_bytes_per_joint: f64::from(output_bytes_per_joint),
            clip_bytes_per_joint_frame: f64::from(clip_bytes_per_joint_frame),
        })
    }

    /// The same model for `kernel`'s frames ([`WorkModel::new`] models [`FrameKernel::Fused`]):
    /// [`layered_frame`](Self::layered_frame) and [`two_clip_frame`](Self::two_clip_frame)
    /// follow it; [`layered_character`](Self::layered_character) and
    /// [`two_clip_character`](Self::two_clip_character) are the fused kernel's, whose
    /// workgroups hold one character.
    ///
    /// ```
    /// use throng::gpu::FrameKernel;
    /// use throng::gpu::work_model::{KernelCosts, WorkModel};
    /// use throng::program::ClipSample;
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let samples: Vec<ClipSample> = (0..8).map(|i| ClipSample::new(0, 0.0, (i % 2) as f32 + 0.5)).collect();
    /// let ranges: Vec<std::ops::Range<u32>> = (0..4).map(|c| 2 * c..2 * c + 2).collect();
    /// let fused = WorkModel::new(&rig, 32, 64, 48).unwrap();
    /// let levels = fused.clone().with_kernel(FrameKernel::Levels);
    /// let before = fused.two_clip_frame(&samples, &ranges, &KernelCosts::frame_radv_navi21()).unwrap();
    /// let after = levels.two_clip_frame(&samples, &ranges, &KernelCosts::frame_levels_radv_navi21()).unwrap();
    /// // The same bytes; fewer wave-steps of local-to-model (levels shared by a workgroup's 2
    /// // characters).
    /// assert_eq!(before.bytes(), after.bytes());
    /// assert!(after.model_steps < before.model_steps / 2.0);
    /// ```
    #[must_use]
    pub fn with_kernel(mut self, kernel: FrameKernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// The same model for a crowd built with `specialisation` (`GpuCrowdOptions::specialisation`;
    /// [`WorkModel::new`] models [`Specialisation::Whole`], every character in the production
    /// kernel, one dispatch).
    /// - [`Specialisation::Production`], the default crowd: the fused layered frame dispatched
    ///   twice over every character, the steady pass's kernel for the characters whose frame runs
    ///   no switch code, then the production kernel for the others ([`crate::gpu::ShapePass`]).
    ///   Every character's workgroup runs the shape pass's check in both passes (`pass_check` per
    ///   wave, twice, and the programs of its layers with memory read again in the pass that is
    ///   not its own), and only a character in the switching pass runs the replay's check. Both
    ///   checks are charged as measured on the benches' stack (three layers with memory): their
    ///   straight-line code grows with a stack's layers with memory, which the model does not
    ///   follow. The level kernels are modelled as in one dispatch.
    /// - [`Specialisation::Stored`]: every frame stores each layer's displayed pose (32 bytes a
    ///   joint, `store_pose`) after the entry's header, and nothing is checked or replayed before
    ///   the layers. Charged with the production kernel's costs, less the regions the rewrite
    ///   removes: the stored kernel's own code differs by the few instructions the compiler then
    ///   schedules otherwise.
    /// - [`Specialisation::Steady`] and [`Specialisation::Settled`]: without the switch frame's
    ///   code, so without the replay's check (they refuse a frame that switches, so nothing else
    ///   they compile out is ever charged).
    ///
    /// ```
    /// use throng::gpu::Specialisation;
    /// use throng::gpu::work_model::{KernelCosts, WorkModel};
    /// use throng::program::{ClipSample, LayerProgram, LayerSetup};
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let model = |s| WorkModel::new(&rig, 64, 64, 48).unwrap().with_specialisation(s);
    /// let layers = [LayerSetup::default()];
    /// let program = LayerProgram { num_target: 1, weight: 1.0, target_weight: 1.0, ..Default::default() };
    /// let costs = KernelCosts::frame_layers_radv_navi21();
    /// let work = |s| model(s).layered_character(&layers, &[program], &[ClipSample::new(0, 0.0, 1.0)], &costs).unwrap();
    /// let [whole, production, steady] =
    ///     [Specialisation::Whole, Specialisation::Production, Specialisation::Steady].map(|s| work(s).wave_instructions);
    /// // A steady character: the shape pass's check twice, no replay check.
    /// let checks = f64::from(2 * costs.pass_check) - f64::from(costs.replay_check);
    /// assert_eq!(production - whole, checks);
    /// assert_eq!(whole - steady, f64::from(costs.replay_check));
    /// ```
    #[must_use]
    pub fn with_specialisation(mut self, specialisation: Specialisation) -> Self {
        self.specialisation = specialisation;
        self
    }

    /// Whether the layered kernels store every displayed pose ([`Specialisation::Stored`]).
    fn stores_poses(&self) -> bool {
        self.specialisation == Specialisation::Stored
    }

    /// The same model with the fused kernels composing the hierarchy as `hierarchy` says, where
    /// a crowd would ([`Hierarchy::fits`]: [`FrameKernel::Fused`], and for `Subgroup` waves
    /// smaller than the 64-thread workgroup and than the rig, and the rig's widest depth within
    /// one; the walks elsewhere). With [`Hierarchy::Subgroup`] local-to-model and the mesh-space
    /// override each cost one wave a step per depth (`model_step` and `mesh_step` are then the
    /// level loops' bodies: [`KernelCosts::layered_subgroup_radv_navi21`],
    /// [`KernelCosts::two_clip_subgroup_radv_navi21`]) and every wave its joints' code
    /// (`kernel_fixed`, `mesh_fixed`), with a barrier more for local-to-model. With
    /// [`Hierarchy::Doubling`] local-to-model and the mesh-space override each cost every wave
    /// holding joints a step (`model_step`, `mesh_step`: an unrolled round's code, measured
    /// against kernels built for no rounds, [`KernelCosts::layered_doubling_radv_navi21`],
    /// [`KernelCosts::two_clip_doubling_radv_navi21`]) a round, the rounds the rig's deepest
    /// joint takes, and two barriers a round (local-to-model's last none; the mesh-space
    /// override's last publishing its blends, [`Work::barriers`]' count of its own).
    ///
    /// ```
    /// use throng::gpu::Hierarchy;
    /// use throng::gpu::work_model::{KernelCosts, WorkModel};
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let walks = WorkModel::new(&rig, 32, 64, 48).unwrap();
    /// let subgroup = walks.clone().with_hierarchy(Hierarchy::Subgroup);
    /// let before = walks.two_clip_character(&[0.5, 0.5], &KernelCosts::frame_radv_navi21());
    /// let after = subgroup.two_clip_character(&[0.5, 0.5], &KernelCosts::two_clip_subgroup_radv_navi21());
    /// // Two warps each walking 14 deep, against one stepping through the 15 depths.
    /// assert_eq!((before.model_steps, after.model_steps), (28.0, 15.0));
    /// assert_eq!(after.walk_products, after.level_products);
    /// ```
    #[must_use]
    pub fn with_hierarchy(mut self, hierarchy: Hierarchy) -> Self {
        self.hierarchy = hierarchy;
        self
    }

    /// How the modelled kernels compose the hierarchy: what [`with_hierarchy`](Self::with_hierarchy)
    /// asked for where a crowd would run it on waves of this size ([`Hierarchy::fits`]),
    /// [`Hierarchy::Walks`] otherwise; the costs to pass are this hierarchy's.
    #[must_use]
    pub fn hierarchy(&self) -> Hierarchy {
        let wave = self.wave_size as u32;
        self.hierarchy.fits_subgroups(self.kernel, self.num_joints(), self.widest_depth, [wave, wave])
    }

    /// The recorded RADV navi21 costs of the modelled kernel's layered frame composing the
    /// hierarchy as [`hierarchy`](Self::hierarchy) says.
    #[must_use]
    pub fn layered_costs_radv_navi21(&self) -> KernelCosts {
        match self.hierarchy() {
            Hierarchy::Walks => KernelCosts::layered_radv_navi21(self.kernel),
            Hierarchy::Subgroup => KernelCosts::layered_subgroup_radv_navi21(),
            Hierarchy::Doubling => KernelCosts::layered_doubling_radv_navi21(),
        }
    }

    /// The recorded RADV navi21 costs of the modelled kernel's two-clip frame, as
    /// [`layered_costs_radv_navi21`](Self::layered_costs_radv_navi21).
    #[must_use]
    pub fn two_clip_costs_radv_navi21(&self) -> KernelCosts {
        match self.hierarchy() {
            Hierarchy::Walks => KernelCosts::two_clip_radv_navi21(self.kernel),
            Hierarchy::Subgroup => KernelCosts::two_clip_subgroup_radv_navi21(),
            Hierarchy::Doubling => KernelCosts::two_clip_doubling_radv_navi21(),
        }
    }

    /// Pointer doubling's rounds (`shaders/shared/doubling.wgsl`, `doubling_mesh.wgsl`): a
    /// round per span up to the rig's deepest joint, two barriers each but the last's where it
    /// does not publish its rows (`publish_last`: local-to-model's last round hands them to its
    /// thread's skinning) (counted into `work`, with the products), every wave taking every
    /// round (unrolled), a product for each joint at least the span deep. A wave holding no joint
    /// runs the rounds' barriers but no product: not charged, as the walks charge it nothing.
    /// Returns the rounds of all waves.
    fn doubling_rounds(&self, work: &mut Work, publish_last: bool) -> usize {
        // Depths are below MAX_JOINTS: they fit u32, and their rounds usize.
        let rounds_to = |depth: usize| crate::gpu::types::doubling_rounds(depth as u32) as usize;
        let rounds = rounds_to(self.depth_count().saturating_sub(1));
        let published = if publish_last { rounds } else { rounds.saturating_sub(1) };
        work.barriers += 2.0 * published as f64;
        work.walk_products += self.depths.iter().map(|&depth| rounds_to(depth)).sum::<usize>() as f64;
        rounds * self.wave_count()
    }

    /// The rig's depths: the deepest joint's depth and one.
    fn depth_count(&self) -> usize {
        self.depths.iter().max().map_or(0, |&d| d + 1)
    }

    /// The kernel modelled.
    #[must_use]
    pub fn kernel(&self) -> FrameKernel {
        self.kernel
    }

    fn num_joints(&self) -> usize {
        self.depths.len()
    }

    /// Lanes per character and characters per workgroup of the level kernels.
    fn level_shape(&self) -> (usize, usize) {
        let n = self.num_joints();
        (level_lanes(n) as usize, self.kernel.characters_per_workgroup(n) as usize)
    }

    /// Waves in a level workgroup.
    fn level_wave_count(&self) -> usize {
        self.kernel.workgroup_threads_for(self.num_joints()) as usize / self.wave_size
    }

    /// The waves of a level workgroup: the character slots each covers, and whether it holds
    /// any of their joints (lanes past the rig's joints idle).
    fn level_waves(&self) -> Vec<(std::ops::Range<usize>, bool)> {
        let (lanes, _) = self.level_shape();
        (0..self.level_wave_count())
            .map(|w| {
                let threads = w * self.wave_size..(w + 1) * self.wave_size;
                let slots = threads.start / lanes..(threads.end - 1) / lanes + 1;
                (slots, threads.clone().any(|t| t % lanes < self.num_joints()))
            })
            .collect()
    }

    /// Waves of a level workgroup holding the roots' items (band 0, a thread a root and
    /// character).
    fn root_waves(&self) -> usize {
        let (_, characters) = self.level_shape();
        (characters * self.bands.first().map_or(0, Vec::len)).div_ceil(self.wave_size)
    }

    /// A band pass over a workgroup, the bands after the roots': per band, the waves holding its
    /// chains (thread `t` chain `t % n` of slot `t / n`) run `band` once and `step` as often as
    /// their longest chain, and every other wave of the workgroup `idle`, the band without its
    /// chain work, which it branches over. Returns the wave-steps.
    fn level_pass(&self, work: &mut Work, band: u32, step: u32, idle: u32) -> f64 {
        let (_, characters) = self.level_shape();
        let mut steps = 0;
        for chains in self.bands.iter().skip(1) {
            let threads = characters * chains.len();
            for first in (0..threads).step_by(self.wave_size) {
                let longest = (first..threads.min(first + self.wave_size)).map(|t| chains[t % chains.len()]).max();
                let longest = longest.unwrap_or(0);
                work.charge(band, 1);
                work.charge(step, longest);
                steps += longest;
            }
            work.charge(idle, self.level_wave_count().saturating_sub(threads.div_ceil(self.wave_size)));
            work.barriers += 1.0;
        }
        steps as f64
    }

    /// The affine 3×4 output's store ([`MeasuredPath::AffineOutput`]) by `waves` waves, where
    /// the model writes 48 bytes a joint (the mat4 store is in the code every wave runs).
    fn output_store(&self, work: &mut Work, costs: &KernelCosts, waves: usize) {
        if self.output_bytes_per_joint == AFFINE_OUTPUT_BYTES {
            work.charge(costs.affine_output, waves);
        }
    }

    /// Waves in a workgroup: every one runs the kernel's uniform code and barriers.
    fn waves(&self) -> usize {
        WORKGROUP_THREADS / self.wave_size
    }

    /// The joints of each wave that holds any, pass by pass (`thread + 64 k`).
    fn wave_joints(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let j = self.num_joints();
        (0..j.div_ceil(WORKGROUP_THREADS)).flat_map(move |k| {
            (0..self.waves()).filter_map(move |w| {
                let start = k * WORKGROUP_THREADS + w * self.wave_size;
                (start < j).then(|| start..(start + self.wave_size).min(j))
            })
        })
    }

    fn wave_count(&self) -> usize {
        self.wave_joints().count()
    }

    /// One blend (`sample_blend_joint_over`) over `samples`, by every wave that holds joints:
    /// the weight sum, then each clip whose weight counts (`weighs`; a single sample is sampled by
    /// the shortcut outside the loop, `single_sample`; a blend where none counts shows the rest
    /// pose and samples nothing).
    fn blend(&self, work: &mut Work, samples: &[ClipSample], costs: &KernelCosts, kind: Blend) {
        let waves = self.wave_count();
        work.bytes_read += SAMPLE_BYTES * samples.len() as f64;
        work.charge(costs.sample_weight, waves * samples.len());
        let sampled = counted(samples).count();
        if sampled == 0 {
            return;
        }
        if samples.len() == 1 {
            // The step-back blend's shortcut is the switch frame's code (`switch`).
            if kind == Blend::Shown {
                work.charge(costs.single_sample, waves);
            }
        } else {
            let cost = match kind {
                Blend::Shown => costs.sample_clip,
                Blend::StepBack => costs.step_back_clip,
            };
            work.charge(cost, waves * sampled);
        }
        let lane_samples = (sampled * self.num_joints()) as f64;
        work.lane_samples += lane_samples;
        work.clip_bytes_read += lane_samples * 2.0 * self.clip_bytes_per_joint_frame;
    }

    /// Local-to-model's walks and skinning: the pose into workgroup memory, a barrier, each
    /// wave's walk as deep as its deepest lane, a product per joint and the output written.
    fn local_to_model_and_skinning(&self, work: &mut Work, costs: &KernelCosts) {
        let waves = self.wave_count();
        work.barriers += 1.0;
        self.output_store(work, costs, waves);
        let level_products = self.depths.iter().filter(|&&d| d > 0).count() as f64;
        match self.hierarchy() {
            Hierarchy::Subgroup => {
                // One wave steps through every depth; a barrier publishes its model matrices.
                work.barriers += 1.0;
                work.model_steps += self.depth_count() as f64;
                work.charge(costs.model_step, self.depth_count());
                work.walk_products += level_products;
            }
            Hierarchy::Doubling => {
                let rounds = self.doubling_rounds(work, false);
                work.model_steps += rounds as f64;
                work.charge(costs.model_step, rounds);
            }
            Hierarchy::Walks => {
                for joints in self.wave_joints() {
                    let deepest = self.depths[joints].iter().copied().max().unwrap_or(0);
                    work.model_steps += deepest as f64;
                    work.charge(costs.model_step, deepest.saturating_sub(1));
                }
                work.walk_products += self.depths.iter().sum::<usize>() as f64;
            }
        }
        let j = self.num_joints() as f64;
        work.level_products += level_products;
        work.skinning_products += j;
        work.bytes_written += j * self.output_bytes_per_joint;
    }

    /// One character of the two-clip frame (`frame_main`, `GpuCrowd::set_samples`) blending
    /// samples of these `weights`.
    #[must_use]
    pub fn two_clip_character(&self, weights: &[f32], costs: &KernelCosts) -> Work {
        let samples: Vec<ClipSample> = weights.iter().map(|&w| ClipSample::new(0, 0.0, w)).collect();
        let mut work = Work::default();
        work.charge(costs.kernel_fixed, self.waves());
        work.bytes_read += RANGE_BYTES;
        work.charge(costs.sample_fixed, self.wave_count());
        self.blend(&mut work, &samples, costs, Blend::Shown);
        self.local_to_model_and_skinning(&mut work, costs);
        work
    }

    /// The mean character of a two-clip frame of the modelled kernel: `ranges` index `samples`,
    /// one per character.
    ///
    /// # Errors
    /// [`WorkModelError::Programs`] where a range lies past the samples.
    pub fn two_clip_frame(
        &self,
        samples: &[ClipSample],
        ranges: &[std::ops::Range<u32>],
        costs: &KernelCosts,
    ) -> Result<Work, WorkModelError> {
        let weights = ranges
            .iter()
            .map(|range| {
                let blend = samples.get(range.start as usize..range.end as usize).ok_or_else(|| {
                    WorkModelError::Programs(format!("range {range:?} past {} samples", samples.len()))
                })?;
                Ok(blend.iter().map(|s| s.weight).collect::<Vec<f32>>())
            })
            .collect::<Result<Vec<_>, WorkModelError>>()?;
        let mut sum = Work::default();
        for weights in &weights {
            sum.add(&self.two_clip_character(weights, costs));
        }
        if self.kernel.is_level_kernel() {
            let (_, characters) = self.level_shape();
            let mut levels = Work::default();
            for group in weights.chunks(characters) {
                levels.add(&self.two_clip_levels_group(group, costs));
            }
            sum = sum.with_instructions_of(&levels);
        }
        sum.add(&self.sample_positions(samples.len(), costs));
        Ok(sum.scaled(1.0 / ranges.len().max(1) as f64))
    }

    /// The sample-positions stage before a frame of `num_samples` samples
    /// (`shaders/sample_positions.wgsl`): a thread a sample, its code once per wave; each
    /// sample's clip and time read and its position written, its clip's header (two vec4, shared
    /// by every sample of the clip) among the clip bytes.
    fn sample_positions(&self, num_samples: usize, costs: &KernelCosts) -> Work {
        let mut work = Work::default();
        work.charge(costs.sample_positions, num_samples.div_ceil(self.wave_size));
        work.bytes_read += POSITION_READ_BYTES * num_samples as f64;
        work.bytes_written += POSITION_BYTES * num_samples as f64;
        work.clip_bytes_read += CLIP_HEADER_BYTES * num_samples as f64;
        work
    }

    /// One workgroup of `frame_levels_main`: its characters' blends' weights. Only the
    /// instruction-side fields are filled (bytes are per character, as the fused kernel's).
    fn two_clip_levels_group(&self, weights: &[Vec<f32>], costs: &KernelCosts) -> Work {
        let (lanes, _) = self.level_shape();
        let mut work = Work::default();
        let waves = self.level_waves();
        work.charge(costs.kernel_fixed, waves.len());
        self.output_store(&mut work, costs, writing_waves(&waves, weights.len()));
        for (slots, owns) in &waves {
            let covered = &weights[slots.start.min(weights.len())..slots.end.min(weights.len())];
            work.charge(costs.sample_weight, covered.iter().map(Vec::len).max().unwrap_or(0));
            if *owns {
                let blends: Vec<TableBlend> = covered.iter().map(|w| TableBlend::of(w, 0, lanes)).collect();
                work.charge(costs.sample_clip, blends.iter().map(|b| b.clips).max().unwrap_or(0));
                if blends.iter().any(|b| b.single) {
                    work.charge(costs.single_sample, 1);
                }
                work.charge(costs.table_miss, blends.iter().map(|b| b.misses).max().unwrap_or(0));
            }
        }
        work.barriers += 2.0;
        work.model_steps += self.level_pass(&mut work, costs.model_band, costs.model_step, costs.model_idle);
        work
    }

    /// One character of the layered frame (`frame_layers_main`, `GpuCrowd::set_frame`):
    /// `programs` holds its program for each layer (indexed by layer), `samples` the frame's
    /// samples they index.
    ///
    /// # Errors
    /// [`WorkModelError::Programs`] where the programs and layers differ in number, or a
    /// program's samples lie past `samples`.
    pub fn layered_character(
        &self,
        layers: &[LayerSetup],
        programs: &[LayerProgram],
        samples: &[ClipSample],
        costs: &KernelCosts,
    ) -> Result<Work, WorkModelError> {
        if programs.len() != layers.len() {
            return Err(WorkModelError::Programs(format!("{} programs for {} layers", programs.len(), layers.len())));
        }
        let range = |r: std::ops::Range<u32>| {
            samples
                .get(r.start as usize..r.end as usize)
                .ok_or_else(|| WorkModelError::Programs(format!("samples {r:?} past {} samples", samples.len())))
        };
        let waves = self.wave_count();
        let mut work = Work::default();
        work.charge(costs.kernel_fixed, self.waves());
        // A production crowd's two passes: the shape pass's check in each, the programs read
        // again in the one that is not the character's; the replay's check only in the
        // switching pass.
        let passes = self.specialisation == Specialisation::Production && !self.kernel.is_level_kernel();
        if passes {
            work.charge(costs.pass_check, 2 * self.waves());
            work.bytes_read += PROGRAM_BYTES * layers.iter().filter(|l| l.needs_memory).count() as f64;
        }
        let switching_pass = || {
            layers.iter().zip(programs).any(|(setup, p)| Specialisation::runs_switch_code(setup.needs_memory, p.flags))
        };
        // Before the layers, the frame checks its layers with memory for a switch (in the
        // switching pass, with shape passes); a switch replays the displayed poses it reads into
        // their slots.
        let switch_code = !self.specialisation.refuses_switches();
        // Whether the kernel that evaluates the character holds the switch frame's code: with
        // shape passes, only the switching pass's does.
        let switch_kernel = switch_code && (!passes || switching_pass());
        if !self.stores_poses() && switch_kernel {
            work.charge(costs.replay_check, self.waves());
            let switching =
                || layers.iter().zip(programs).enumerate().filter(|&(l, (setup, p))| replays_layer(l, setup, p));
            // A frame that switches a layer runs the replay's joint and layer loops over every
            // layer (`replay_layer` each: the joint loop's own code counted with each, an
            // upper bound), and replays what each switch reads.
            if switching().next().is_some() {
                work.charge(costs.replay_layer, self.wave_count() * layers.len());
            }
            for (_, (_, program)) in switching() {
                self.replay(&mut work, program, range(shown_range(program))?, costs);
            }
        }
        for l in evaluation_order(layers) {
            let (setup, program) = (&layers[l], &programs[l]);
            work.bytes_read += PROGRAM_BYTES;
            work.charge(costs.layer_fixed, self.waves());
            if l != 0 && !weighs(program.weight) {
                // Skipped: thread 0 clears the layer's shown count (the state's first vec4 read
                // and written).
                if setup.needs_memory {
                    work.bytes_read += LAYER_STATE_BYTES;
                    work.bytes_written += LAYER_STATE_BYTES;
                }
                continue;
            }
            // Sampling (`sample_layer`): a crossfade blends both sets at once; otherwise the
            // destination, and on an inertialization's switch the source one step back too.
            let mode = program.switch_mode();
            let snapshot = program.flags & LayerProgram::SOURCE_SNAPSHOT != 0;
            let crossfade = mode == SwitchMode::Crossfade && !snapshot;
            work.charge(costs.sample_fixed, waves);
            if removes_root_motion(l, program) {
                // On the root's thread: the first wave.
                work.charge(costs.root_motion, 1);
            }
            if crossfade {
                self.blend(&mut work, range(program.sample_range())?, costs, Blend::Shown);
            } else {
                self.blend(&mut work, range(program.target_range())?, costs, Blend::Shown);
                if program.num_secondary > 0 {
                    self.blend(&mut work, range(program.secondary_range())?, costs, Blend::StepBack);
                }
            }
            if setup.needs_memory {
                self.transition(&mut work, program, shown_range(program).len(), switch_kernel, costs);
            }
            if l != 0 && setup.blend == LayerBlend::Override && setup.space == LayerSpace::Mesh {
                self.mesh_override(&mut work, costs);
            } else {
                work.charge(combine_path(l, setup, costs), waves);
            }
        }
        self.local_to_model_and_skinning(&mut work, costs);
        Ok(work)
    }

    /// The replay before the layers for a layer with memory that the frame switches
    /// (`store_switch_sources_of`) beyond its loops' own code, in the steady state: where the
    /// switch reads displayed poses
    /// (a frozen fade's snapshot reads the last, a capture the last two), each one's entry read
    /// (its header and samples, taken to be as many as this frame shows), replayed and stored in
    /// its slot, and the last one's entry marked stored. What the replayed frames read of the
    /// memo (the snapshot they faded from, the offset they decayed) is not known here and not
    /// counted.
    fn replay(&self, work: &mut Work, program: &LayerProgram, shown: &[ClipSample], costs: &KernelCosts) {
        let waves = self.wave_count();
        if !switches(program) {
            return;
        }
        let entries = if program.flags & LayerProgram::SOURCE_SNAPSHOT != 0 { 1 } else { 2 };
        let sampled = counted(shown).count();
        let clips = if shown.len() > 1 { sampled } else { 0 };
        for _ in 0..entries {
            work.charge(costs.replay_entry, waves);
            work.charge(costs.replay_weight, waves * shown.len());
            work.charge(costs.replay_clip, waves * clips);
            work.bytes_read += REPLAY_HEADER_BYTES + REPLAY_SAMPLE_BYTES * shown.len() as f64;
            work.bytes_written += self.num_joints() as f64 * SLOT_BYTES;
            let lane_samples = (sampled * self.num_joints()) as f64;
            work.lane_samples += lane_samples;
            work.clip_bytes_read += lane_samples * 2.0 * self.clip_bytes_per_joint_frame;
        }
        work.bytes_written += REPLAY_HEADER_BYTES;
    }

    /// The transition of a layer with memory (`transition_layer`), in the steady state, whose
    /// frame shows `shown` samples, in a kernel with the switch frame's code where
    /// `switch_kernel`.
    fn transition(
        &self,
        work: &mut Work,
        program: &LayerProgram,
        shown: usize,
        switch_kernel: bool,
        costs: &KernelCosts,
    ) {
        let waves = self.wave_count();
        let joints = self.num_joints() as f64;
        let switched = program.flags & LayerProgram::SWITCHED != 0;
        let snapshot = program.flags & LayerProgram::SOURCE_SNAPSHOT != 0;
        let inertializes = program.switch_mode().is_inertialization();
        // The barrier before the state's store; a kernel with switch code (`switch_kernel`) has
        // two more around a capture's reductions.
        work.barriers += if switch_kernel { 3.0 } else { 1.0 };
        work.bytes_read += LAYER_STATE_BYTES;
        work.bytes_written += LAYER_STATE_BYTES;
        work.charge(costs.transition, waves);
        if snapshot {
            work.charge(costs.snapshot_mix, waves);
        }
        if switches(program) {
            work.charge(costs.switch, waves);
        }
        if snapshot {
            // At the switch the displayed slot becomes the snapshot; after it the snapshot is read.
            if switched {
                work.bytes_read += joints * SLOT_BYTES;
                work.bytes_written += joints * SNAPSHOT_BYTES;
            } else {
                work.bytes_read += joints * SNAPSHOT_BYTES;
            }
        } else if switched && inertializes {
            // Capture: both displayed slots read, the offset written.
            work.bytes_read += joints * 2.0 * SLOT_BYTES;
            work.bytes_written += joints * OFFSET_BYTES;
        }
        if decays(program) {
            work.charge(costs.decay, waves);
            if overshoots(program) {
                work.charge(costs.overshoot, waves);
            }
            work.bytes_read += joints * OFFSET_BYTES;
            // A spring's largest offset velocity: set by its capture, read after it.
            if program.switch_mode() == SwitchMode::InertializeSpring {
                if switched {
                    work.bytes_written += SPRING_STATE_BYTES;
                } else {
                    work.bytes_read += SPRING_STATE_BYTES;
                }
            }
        }
        // The frame's replay entry into the other slot's place, nothing read: its header and
        // samples, or where it shows more samples than an entry holds (or the kernel stores
        // every pose), the header and the pose itself.
        work.bytes_written += REPLAY_HEADER_BYTES;
        if self.stores_poses() {
            work.charge(costs.store_pose, waves);
            work.bytes_written += joints * SLOT_BYTES;
            return;
        }
        // Threads 0 to 7 at most write the samples: the first wave alone runs the loop.
        work.charge(costs.replay_store, 1);
        if shown > REPLAY_SAMPLES as usize {
            work.charge(costs.store_pose, waves);
            work.bytes_written += joints * SLOT_BYTES;
        } else {
            work.bytes_written += REPLAY_SAMPLE_BYTES * shown as f64;
        }
    }

    /// The mesh-space override (`override_mesh`): rows into workgroup memory, a barrier, every
    /// joint's layer and base model rotations composed (each joint's walk from the root through
    /// its ancestors and its own step, one wave's step a depth, or pointer doubling's rounds), a
    /// barrier, the rows replaced by them and the masked joints' blends, a barrier (pointer
    /// doubling's last round publishes the blends with its rows), each masked joint's new local
    /// rotation from its parent's blend, a barrier. Every wave runs the code around the
    /// composition once (`mesh_fixed`), whatever its joints' weights.
    fn mesh_override(&self, work: &mut Work, costs: &KernelCosts) {
        // The rows' fill and the result's reads; the composition's own and the blends'
        // publication below.
        work.barriers += 2.0;
        work.charge(costs.mesh_fixed, self.wave_count());
        match self.hierarchy() {
            Hierarchy::Subgroup => {
                // One wave steps through every depth, each joint's step taken, and a barrier
                // publishes them; another the blends.
                work.barriers += 2.0;
                work.charge(costs.mesh_step, self.depth_count());
                work.mesh_steps += self.depth_count() as f64;
                work.walk_products += self.num_joints() as f64;
            }
            Hierarchy::Doubling => {
                // Two barriers a round, the last round's second publishing the rows and the
                // blends; a rig of roots, without rounds, publishes the blends alone.
                let rounds = self.doubling_rounds(work, true);
                if rounds == 0 {
                    work.barriers += 1.0;
                }
                work.mesh_steps += rounds as f64;
                work.charge(costs.mesh_step, rounds);
            }
            Hierarchy::Walks => {
                // Every walk reads the local rows before any is replaced; the blends' publication.
                work.barriers += 2.0;
                for joints in self.wave_joints() {
                    let deepest = self.depths[joints.clone()].iter().copied().max().unwrap_or(0);
                    work.charge(costs.mesh_step, deepest);
                    work.mesh_steps += (deepest + 1) as f64;
                }
                work.walk_products += (0..self.num_joints()).map(|j| self.depths[j] + 1).sum::<usize>() as f64;
            }
        }
        work.level_products += self.num_joints() as f64;
    }

    /// The mean character of a layered frame: `programs` holds `layers.len()` programs per
    /// character, character by character, indexing `samples`.
    ///
    /// # Errors
    /// As [`WorkModel::layered_character`], and where the programs are not a whole number of
    /// characters.
    pub fn layered_frame(
        &self,
        layers: &[LayerSetup],
        programs: &[LayerProgram],
        samples: &[ClipSample],
        costs: &KernelCosts,
    ) -> Result<Work, WorkModelError> {
        if layers.is_empty() || !programs.len().is_multiple_of(layers.len()) {
            return Err(WorkModelError::Programs(format!(
                "{} programs for {} layers per character",
                programs.len(),
                layers.len()
            )));
        }
        let mut sum = Work::default();
        let characters = programs.len() / layers.len();
        for character in programs.chunks_exact(layers.len()) {
            sum.add(&self.layered_character(layers, character, samples, costs)?);
        }
        if self.kernel.is_level_kernel() {
            let (_, per_group) = self.level_shape();
            let mut levels = Work::default();
            for group in programs.chunks(per_group * layers.len()) {
                levels.add(&self.layered_levels_group(layers, group, samples, costs));
            }
            sum = sum.with_instructions_of(&levels);
        }
        sum.add(&self.sample_positions(samples.len(), costs));
        Ok(sum.scaled(1.0 / characters.max(1) as f64))
    }

    /// One workgroup of `frame_layers_levels_main`: `programs` holds its characters' programs
    /// (checked by the caller against `samples`). Only the instruction-side fields are filled.
    fn layered_levels_group(
        &self,
        layers: &[LayerSetup],
        programs: &[LayerProgram],
        samples: &[ClipSample],
        costs: &KernelCosts,
    ) -> Work {
        let (lanes, _) = self.level_shape();
        let mut work = Work::default();
        let waves = self.level_waves();
        work.charge(costs.kernel_fixed, waves.len());
        let characters: Vec<&[LayerProgram]> = programs.chunks_exact(layers.len()).collect();
        self.output_store(&mut work, costs, writing_waves(&waves, characters.len()));
        let layer_loops: Vec<Vec<LevelLayer>> = (0..layers.len())
            .map(|l| characters.iter().map(|c| LevelLayer::of(l, &layers[l], &c[l], samples, lanes)).collect())
            .collect();
        // The replay: each wave that covers a switching character replays, layer by layer, as
        // much as the most demanding of them (at the top of the layer's own iteration with full
        // clips, where `replay_check` and `replay_layer` are 0 and the replay's own code is in
        // `switch`; before the layers, after the check of its layers with memory, with compact
        // clips).
        for (slots, owns) in &waves {
            if self.stores_poses() || !*owns || slots.start >= characters.len() {
                continue;
            }
            work.charge(costs.replay_check, 1);
            let covered = |loops: &[LevelLayer]| slots.start.min(loops.len())..slots.end.min(loops.len());
            if !layer_loops.iter().any(|loops| loops[covered(loops)].iter().any(|c| c.replays_layer)) {
                continue;
            }
            // Each switch replays its entries, as long as the most demanding character that
            // replays asks (the fused kernel's replay loop runs over every layer besides:
            // `replay_layer`, 0 in the level kernels' costs).
            work.charge(costs.replay_layer, layers.len());
            for loops in &layer_loops {
                let replaying = || loops[covered(loops)].iter().filter(|c| c.replays_layer);
                let most = |f: fn(&LevelLayer) -> usize| replaying().map(f).max().unwrap_or(0);
                let entries = most(|c| c.replayed_entries);
                work.charge(costs.replay_entry, entries);
                work.charge(costs.replay_weight, entries * most(|c| c.replay_weights));
                work.charge(costs.replay_clip, entries * most(|c| c.clips));
            }
        }
        for l in evaluation_order(layers) {
            let setup = &layers[l];
            let mesh = l != 0 && setup.blend == LayerBlend::Override && setup.space == LayerSpace::Mesh;
            let loops = &layer_loops[l];
            work.charge(costs.layer_fixed, waves.len());
            self.fill_table_of_slots(&mut work, loops, costs);
            // The sample table written, then its reads ordered before the next layer's writes:
            // by the transition's second barrier (of its two) where the layer has memory.
            work.barriers += 2.0;
            if setup.needs_memory {
                work.barriers += 1.0;
            }
            for (w, (slots, owns)) in waves.iter().enumerate() {
                let covered = &loops[slots.start.min(loops.len())..slots.end.min(loops.len())];
                let any = |f: fn(&LevelLayer) -> bool| covered.iter().any(f);
                // Whether the wave holds a character's lanes below `k` (a wave as wide as a
                // character or wider holds all of them).
                let holds_lanes_below = |k: usize| lanes <= self.wave_size || (w * self.wave_size) % lanes < k;
                let most = |f: fn(&LevelLayer) -> usize| covered.iter().map(f).max().unwrap_or(0);
                if any(|c| c.shows) {
                    work.charge(costs.sample_fixed, 1);
                }
                // Every wave runs the mesh-space override's own code, shown or not, and a layer
                // with memory's transition (its barriers hold every wave).
                if mesh {
                    work.charge(costs.mesh_fixed, 1);
                }
                if setup.needs_memory {
                    work.charge(costs.transition, 1);
                }
                if !*owns || !any(|c| c.shows) {
                    continue;
                }
                work.charge(costs.sample_clip, most(|c| c.clips));
                work.charge(costs.step_back_clip, most(|c| c.back_clips));
                if any(|c| c.single) {
                    work.charge(costs.single_sample, 1);
                }
                work.charge(costs.table_miss, most(|c| c.misses) + most(|c| c.back_misses));
                // The root's motion is removed on a character's lane 0.
                if any(|c| c.root_motion) && holds_lanes_below(1) {
                    work.charge(costs.root_motion, 1);
                }
                if setup.needs_memory {
                    if any(|c| c.snapshot) {
                        work.charge(costs.snapshot_mix, 1);
                    }
                    // The displayed pose stored whole: every shown layer's with stored poses,
                    // else where an entry cannot replay it.
                    if self.stores_poses() || any(|c| c.stores) {
                        work.charge(costs.store_pose, 1);
                    }
                    if any(|c| c.switches) {
                        work.charge(costs.switch, 1);
                    }
                    if any(|c| c.decays) {
                        work.charge(costs.decay, 1);
                    }
                    if any(|c| c.overshoots) {
                        work.charge(costs.overshoot, 1);
                    }
                }
                if !mesh {
                    work.charge(combine_path(l, setup, costs), 1);
                }
            }
            if setup.needs_memory {
                self.end_layer_of_slots(&mut work, loops, costs);
            }
            if mesh {
                // The rows' store waits for the lanes' reads of a transition's end; then the
                // rows', the blends' publication, and the result's reads.
                work.barriers += 4.0;
                // The roots' step (band 0) outside the band loop, by the waves holding them.
                let root_waves = self.root_waves();
                work.charge(costs.mesh_roots, root_waves);
                work.barriers += 1.0;
                work.mesh_steps +=
                    root_waves as f64 + self.level_pass(&mut work, costs.mesh_band, costs.mesh_step, costs.mesh_idle);
            }
        }
        // The pose's store waits for every lane's read of its slot's end; local-to-model's.
        work.barriers += 2.0;
        work.model_steps += self.level_pass(&mut work, costs.model_band, costs.model_step, costs.model_idle);
        work
    }

    /// The sample table filled for every character slot by the workgroup's first
    /// `max(32, characters)` threads (`fill_table_of_slots`: thread `f` for slot
    /// `f % characters`, its entries from `f / characters` on in strides of the threads a slot
    /// has): each wave holding such threads of a character in the dispatch runs the fill's own
    /// code, the weight sums as long as its longest slot's and the entry loop as often as its
    /// busiest thread.
    fn fill_table_of_slots(&self, work: &mut Work, loops: &[LevelLayer], costs: &KernelCosts) {
        let (lanes, characters) = self.level_shape();
        let threads = characters.max(32);
        let step = threads / characters;
        for first in (0..threads).step_by(self.wave_size) {
            let mut live = false;
            let (mut weights, mut entries) = (0, 0);
            for f in first..(first + self.wave_size).min(threads) {
                let Some(c) = loops.get(f % characters) else { continue };
                live = true;
                weights = weights.max(c.weights);
                let (table, from) = (c.weights.min(lanes), f / characters);
                entries = entries.max(table.saturating_sub(from).div_ceil(step));
            }
            if live {
                work.charge(costs.fill_fixed, 1);
                work.charge(costs.sample_weight, weights);
                work.charge(costs.fill_entry, entries);
            }
        }
    }

    /// The end of a layer with memory by the thread of each character slot (thread `s` for
    /// slot `s`, `end_layer_of_slots`): each wave holding such threads runs it if a slot it
    /// holds shows the layer, a capture's reduction over the character's joints' lanes (not
    /// the idle ones past them, so that the loop's trip count is the rig's: a constant trip
    /// count of 32 lanes had the driver unroll it and spill 23 scalar registers, rigs of 17 to
    /// 32 joints), the replay entry's samples one by one, the switch frame's and the decay's
    /// code, as often as its most demanding slot asks.
    fn end_layer_of_slots(&self, work: &mut Work, loops: &[LevelLayer], costs: &KernelCosts) {
        for first in (0..loops.len()).step_by(self.wave_size) {
            let slots = &loops[first..(first + self.wave_size).min(loops.len())];
            let any = |f: fn(&LevelLayer) -> bool| slots.iter().any(f);
            if !any(|c| c.shows) {
                continue;
            }
            work.charge(costs.slot_end, 1);
            if any(|c| c.capture) {
                work.charge(costs.capture_step, self.num_joints());
            }
            if !self.stores_poses() {
                work.charge(costs.replay_store, slots.iter().map(|c| c.entry_samples).max().unwrap_or(0));
            }
            if any(|c| c.switches) {
                work.charge(costs.slot_switch, 1);
            }
            if any(|c| c.decays) {
                work.charge(costs.slot_decay, 1);
            }
        }
    }
}

/// `procedural_main`'s loop bodies (instructions, nesting depth) in program order and its static
/// instruction count, as `gpu_stats` reports them: RADV (Mesa 22.3.6, `RADV_FORCE_FAMILY=navi21`,
/// wave64); the kernel is the same for every rig. The ground's first foot loop (its ankle's walk
/// to the root), the pelvis's walk (`translate_joint`), the ground's second foot loop (each
/// leg's three walks), the two-bone loop (its three walks), the look-at loop (its two walks,
/// then the joint loop: its `continue` edge, which the disassembly shows as a loop nested in it
/// with the same header, and inside that the joint's walk). A walk is `frame_below`'s loop, or
/// `model_frame`'s (up to the root or to the frame the last chain's walk stopped at), inlined at
/// each call: one frame composed per step.
pub const PROCEDURAL_LOOPS_RADV_NAVI21: (u32, [(usize, usize); 17]) = (
    3917,
    [
        (321, 0),
        (62, 1),
        (39, 0),
        (1074, 0),
        (68, 1),
        (66, 1),
        (63, 1),
        (1277, 0),
        (75, 1),
        (67, 1),
        (63, 1),
        (1044, 0),
        (74, 1),
        (63, 1),
        (588, 1),
        (443, 2),
        (66, 3),
    ],
);

/// Static instruction counts of the procedural kernel's regions (`shaders/procedural.wgsl`):
/// each loop body of its disassembly, or what is left of one when its walks are taken out. A
/// walk's cost is one step (one composed frame); each call site of `frame_below` is its own
/// loop. Derived from a driver's loop list by [`ProceduralCosts::from_procedural_loops`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProceduralCosts {
    /// Code outside every loop (the row's weights, the ground's pelvis drop), per wave.
    pub kernel_fixed: u32,
    /// The ground's first foot loop outside its walk (the foot's goal and tilt), per foot.
    pub foot_goal: u32,
    /// A step of the walk from a foot's ankle to the root.
    pub ankle_walk: u32,
    /// A step of the walk from the pelvis's parent to the root (the pelvis drop).
    pub pelvis_walk: u32,
    /// The ground's second foot loop outside its walks (the leg's reach), per foot.
    pub foot_reach: u32,
    /// A step of each of the foot's leg's three walks: to its root's parent from the model
    /// root, root to middle, middle to end.
    pub foot_walks: [u32; 3],
    /// The two-bone loop outside its walks (the chain's reach), per chain.
    pub two_bone: u32,
    /// A step of each of the two-bone chain's three walks, as `foot_walks`.
    pub two_bone_walks: [u32; 3],
    /// The look-at loop outside its walks and its joint loop, per chain.
    pub look_at: u32,
    /// A step of the look-at chain's two walks: the model root to its first joint's parent,
    /// the first joint to the end.
    pub look_at_walks: [u32; 2],
    /// One turn of the joint loop outside its walk, per joint of the chain.
    pub look_at_joint: u32,
    /// A step of the walk from a chain joint to the next one's parent, where they are apart.
    pub look_at_joint_walk: u32,
}

impl ProceduralCosts {
    /// The costs of `procedural_main` from its static instruction count and loop bodies
    /// `(instructions, depth)` in program order (`gpu::stats::ExecutableStatistics::loops`), or
    /// `None` when the loops are not today's seventeen in today's nesting (the kernel changed:
    /// its regions must be mapped anew).
    #[must_use]
    pub fn from_procedural_loops(total: u32, loops: &[(usize, usize)]) -> Option<Self> {
        if !loop_structure_matches(loops, &[0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 2, 3]) {
            return None;
        }
        let n = |i: usize| count(loops[i].0);
        let outer = n(0) + n(2) + n(3) + n(7) + n(11);
        Some(Self {
            kernel_fixed: total.checked_sub(outer)?,
            foot_goal: n(0).checked_sub(n(1))?,
            ankle_walk: n(1),
            pelvis_walk: n(2),
            foot_reach: n(3).checked_sub(n(4) + n(5) + n(6))?,
            foot_walks: [n(4), n(5), n(6)],
            two_bone: n(7).checked_sub(n(8) + n(9) + n(10))?,
            two_bone_walks: [n(8), n(9), n(10)],
            look_at: n(11).checked_sub(n(12) + n(13) + n(14))?,
            look_at_walks: [n(12), n(13)],
            // The `continue` edge's span (n(15)) lies inside the joint loop's: one loop.
            look_at_joint: n(14).checked_sub(n(16))?,
            look_at_joint_walk: n(16),
        })
    }

    /// [`PROCEDURAL_LOOPS_RADV_NAVI21`]'s costs.
    #[must_use]
    pub fn radv_navi21() -> Self {
        let (total, loops) = PROCEDURAL_LOOPS_RADV_NAVI21;
        Self::from_procedural_loops(total, &loops).unwrap_or_default()
    }
}

/// Bytes of a local pose read (three vec4) and of one vec4 written (a rotation, a translation).
const POSE_BYTES: f64 = 48.0;
const VEC4_BYTES: f64 = 16.0;

/// Regions of [`ProceduralCosts`]: the kernel's code, foot goal, ankle walk, pelvis walk, foot
/// reach and its three walks, two-bone and its three walks, look-at and its two walks, look-at
/// joint and its walk.
const PROCEDURAL_REGIONS: usize = 17;

/// What one character asks of the procedural kernel: per region, in [`procedural_charges`]'
/// order, the times it enters it.
type ProceduralVisits = [usize; PROCEDURAL_REGIONS];

/// Each region's cost, in the order of [`ProceduralVisits`].
fn procedural_charges(c: &ProceduralCosts) -> [u32; PROCEDURAL_REGIONS] {
    [
        c.kernel_fixed,
        c.foot_goal,
        c.ankle_walk,
        c.pelvis_walk,
        c.foot_reach,
        c.foot_walks[0],
        c.foot_walks[1],
        c.foot_walks[2],
        c.two_bone,
        c.two_bone_walks[0],
        c.two_bone_walks[1],
        c.two_bone_walks[2],
        c.look_at,
        c.look_at_walks[0],
        c.look_at_walks[1],
        c.look_at_joint,
        c.look_at_joint_walk,
    ]
}

/// Regions of [`procedural_charges`] that are walks (one composed frame a visit).
const PROCEDURAL_WALKS: [usize; 11] = [2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 16];

impl WorkModel {
    /// Steps of `frame_below(above, joint)` (`None`: from the model root): the ancestors of
    /// `joint` strictly below `above`, none where `joint` is `above`.
    fn walk_steps(&self, above: Option<usize>, joint: Option<usize>) -> usize {
        let (Some(joint), true) = (joint, joint != above) else { return 0 };
        self.depths[joint] - above.map_or(0, |a| self.depths[a] + 1)
    }

    /// A two-bone chain's three walks (`chain_frames`): the model root to its root's parent,
    /// root to middle, middle to end.
    fn chain_walks(&self, [a, b, c]: [u16; 3]) -> [usize; 3] {
        let [a, b, c] = [a, b, c].map(usize::from);
        [self.walk_steps(None, self.parents[a]), self.walk_steps(Some(a), Some(b)), self.walk_steps(Some(b), Some(c))]
    }

    /// `joint` and its ancestors, marked in `read`.
    fn mark_path(&self, joint: usize, read: &mut [bool]) {
        let mut at = Some(joint);
        while let Some(j) = at.filter(|&j| !read[j]) {
            read[j] = true;
            at = self.parents[j];
        }
    }

    /// The procedural stage (`procedural_main`, one thread a character) over a frame's
    /// characters, row `i` of `targets` for character `i`: the mean character's modelled
    /// wave-instructions and bytes. A wave holds `wave_size` consecutive characters (a lane
    /// each), runs a chain's region where any of its lanes has the chain's weight above 0, and
    /// each walk as many steps as the rig's joints between the chain's ends (the same for every
    /// lane); per character, a wave's instructions over its lanes. Bytes are the character's
    /// own: its targets read (the weights alone where they are 0), a local pose (48 bytes) for
    /// each joint on an active chain's path to the root, a vec4 written for each joint a chain
    /// turns (and the pelvis's translation where a ground drops it); the setup's words, shared
    /// by every character, are not counted. `walk_products` counts the frames the walks compose.
    ///
    /// # Errors
    /// [`WorkModelError::Programs`] where the setup or the targets are for another rig or
    /// another number of characters.
    ///
    /// ```
    /// use throng::gpu::work_model::{ProceduralCosts, WorkModel};
    /// use throng::program::{ProceduralSetup, ProceduralTargets, TwoBoneChain};
    /// let rig = throng::demo::DemoCharacter::humanoid_64().rig;
    /// let joint = |name: &str| rig.find_joint(name).unwrap() as u16;
    /// let leg = TwoBoneChain::new(joint("thigh_l"), joint("calf_l"), joint("foot_l"));
    /// let setup = ProceduralSetup { two_bone: vec![leg], ..Default::default() }.check(&rig).unwrap();
    /// let mut targets = ProceduralTargets::new(&setup, 64);
    /// let model = WorkModel::new(&rig, 64, 64, 48).unwrap();
    /// let idle = model.procedural_frame(&setup, &targets, &ProceduralCosts::radv_navi21()).unwrap();
    /// let rows: Vec<u32> = (0..64).collect();
    /// let (ones, at) = (vec![1.0; 64], vec![glam::Vec3::ZERO; 64]);
    /// targets.set_two_bone(0, &rows, &at, &at, &vec![glam::Quat::IDENTITY; 64], &ones).unwrap();
    /// let reaching = model.procedural_frame(&setup, &targets, &ProceduralCosts::radv_navi21()).unwrap();
    /// // At weight 0 a character reads its weight and writes nothing; reaching, its leg's three
    /// // rotations.
    /// assert_eq!((idle.bytes_read, idle.bytes_written), (4.0, 0.0));
    /// assert_eq!(reaching.bytes_written, 3.0 * 16.0);
    /// assert!(reaching.wave_instructions > idle.wave_instructions);
    /// ```
    pub fn procedural_frame(
        &self,
        setup: &ProceduralRig,
        targets: &ProceduralTargets,
        costs: &ProceduralCosts,
    ) -> Result<Work, WorkModelError> {
        let joints = self.num_joints();
        let characters = targets.num_characters();
        targets.validate_for(setup, joints, characters).map_err(|e| WorkModelError::Programs(e.to_string()))?;
        let charges = procedural_charges(costs);
        let mut sum = Work::default();
        let mut rows = Vec::with_capacity(characters);
        for row in 0..characters {
            let (visits, work) = self.procedural_row(setup, targets, row);
            sum.add(&work);
            rows.push(visits);
        }
        for wave in rows.chunks(self.wave_size) {
            for (region, &cost) in charges.iter().enumerate() {
                let times = wave.iter().map(|visits| visits[region]).max().unwrap_or(0);
                sum.charge(cost, times);
            }
        }
        Ok(sum.scaled(1.0 / characters.max(1) as f64))
    }

    /// One row of [`procedural_frame`](Self::procedural_frame): the regions it enters and its
    /// own bytes and walk steps.
    fn procedural_row(
        &self,
        setup: &ProceduralRig,
        targets: &ProceduralTargets,
        row: usize,
    ) -> (ProceduralVisits, Work) {
        let s = setup.setup();
        let on = |weights: &[f32]| weights.get(row).is_some_and(|&w| w > 0.0);
        let mut v: ProceduralVisits = [0; PROCEDURAL_REGIONS];
        let mut work = Work::default();
        let mut read = vec![false; self.num_joints()];
        let mut written = 0usize;
        let mut floats = 0usize;
        v[0] = 1;
        let feet = s.ground.as_ref().map_or(&[][..], |g| &g.feet[..]);
        if let Some(ground) = s.ground.as_ref().filter(|_| !feet.is_empty()) {
            floats += 1;
            if on(&targets.ground_weight) {
                floats += feet.len() * crate::gpu::procedural::FOOT_TARGET_FLOATS;
                let pelvis = usize::from(ground.pelvis);
                v[3] = self.walk_steps(None, self.parents[pelvis]);
                self.mark_path(pelvis, &mut read);
                written += 1;
                for foot in feet {
                    let [_, _, ankle] = foot.leg.joints;
                    v[1] += 1;
                    v[2] += self.walk_steps(None, Some(usize::from(ankle)));
                    v[4] += 1;
                    for (k, steps) in self.chain_walks(foot.leg.joints).into_iter().enumerate() {
                        v[5 + k] += steps;
                    }
                    self.mark_path(usize::from(ankle), &mut read);
                    written += 3;
                }
            }
        }
        for (chain, t) in s.two_bone.iter().zip(&targets.two_bone) {
            floats += 1;
            if !on(&t.weight) {
                continue;
            }
            floats += if chain.end == EndRotation::Target { 10 } else { 6 };
            v[8] += 1;
            for (k, steps) in self.chain_walks(chain.joints).into_iter().enumerate() {
                v[9 + k] += steps;
            }
            self.mark_path(usize::from(chain.joints[2]), &mut read);
            written += 3;
        }
        for (chain, t) in s.look_at.iter().zip(&targets.look_at) {
            floats += 1;
            let (Some(&first), Some(&end), true) = (chain.joints.first(), chain.joints.last(), on(&t.weight)) else {
                continue;
            };
            floats += 3;
            let (first, end) = (usize::from(first), usize::from(end));
            v[12] += 1;
            v[13] += self.walk_steps(None, self.parents[first]);
            v[14] += self.walk_steps(Some(first), Some(end));
            for pair in chain.joints.windows(2) {
                let (above, joint) = (usize::from(pair[0]), usize::from(pair[1]));
                if self.parents[joint] != Some(above) {
                    v[16] += self.walk_steps(Some(above), self.parents[joint]);
                }
            }
            v[15] += chain.joints.len();
            self.mark_path(end, &mut read);
            written += chain.joints.len();
        }
        work.walk_products = PROCEDURAL_WALKS.iter().map(|&r| v[r]).sum::<usize>() as f64;
        work.bytes_read = (floats * size_of::<f32>()) as f64 + POSE_BYTES * read.iter().filter(|&&r| r).count() as f64;
        work.bytes_written = VEC4_BYTES * written as f64;
        (v, work)
    }
}

/// Whether a layer runs the switch frame's code (`KernelCosts::switch`) this frame: it switches
/// to a frozen fade (the snapshot is taken) or to an inertialization (the capture; in the
/// steady state every layer has shown a pose to capture from).
/// The samples a layer shows (`shown_range` in `shaders/transition.wgsl`): both sides of a
/// crossfade, otherwise the destination's.
fn shown_range(program: &LayerProgram) -> std::ops::Range<u32> {
    let snapshot = program.flags & LayerProgram::SOURCE_SNAPSHOT != 0;
    if program.switch_mode() == SwitchMode::Crossfade && !snapshot {
        program.sample_range()
    } else {
        program.target_range()
    }
}

/// Whether the replay before the layers visits layer `l` (`switches_with_memory` in
/// `shaders/transition.wgsl`): the frame switches it, it keeps memory and it shows.
fn replays_layer(l: usize, setup: &LayerSetup, program: &LayerProgram) -> bool {
    setup.needs_memory && (l == 0 || weighs(program.weight)) && program.flags & LayerProgram::SWITCHED != 0
}

/// Whether layer `l` removes the root's motion from its pose (the base layer, where its program
/// asks), as `remove_root_motion`'s callers in the kernels test.
fn removes_root_motion(l: usize, program: &LayerProgram) -> bool {
    l == 0 && program.flags & LayerProgram::ROOT_MOTION != 0
}

/// The combine's path a non-mesh-space layer takes beyond the combine's own code: none for the
/// base layer (a copy), the additive or the local override's.
fn combine_path(l: usize, setup: &LayerSetup, costs: &KernelCosts) -> u32 {
    match setup.blend {
        _ if l == 0 => 0,
        LayerBlend::Additive => costs.additive,
        LayerBlend::Override => costs.override_local,
    }
}

fn switches(program: &LayerProgram) -> bool {
    let snapshot = program.flags & LayerProgram::SOURCE_SNAPSHOT != 0;
    program.flags & LayerProgram::SWITCHED != 0 && (snapshot || program.switch_mode().is_inertialization())
}

/// Whether a layer with memory running `program` decays an offset this frame (`DECAY_CODE`): an
/// inertialization in flight, not a fade from a snapshot.
fn decays(program: &LayerProgram) -> bool {
    program.flags & LayerProgram::SOURCE_SNAPSHOT == 0
        && program.switch_mode().is_inertialization()
        && program.flags & LayerProgram::TRANSITIONING != 0
}

/// Whether that decay is Bollo's overshoot-free quintic (`MeasuredPath::Overshoot`).
fn overshoots(program: &LayerProgram) -> bool {
    decays(program) && program.switch_mode() == SwitchMode::InertializeQuinticOvershootControl
}

/// The waves of a level workgroup (`WorkModel::level_waves`) that write joints: those holding a
/// joint of one of the workgroup's `characters` live slots.
fn writing_waves(waves: &[(std::ops::Range<usize>, bool)], characters: usize) -> usize {
    waves.iter().filter(|(slots, owns)| *owns && slots.start < characters).count()
}

/// What a level kernel's blend (`table_blend_joint`) of `weights` at entry `offset` of the
/// sample table runs: the shortcut for a blend of one whose entry the table holds, otherwise its
/// clip loop over every entry (`clips` of them sampled, `misses` past the table's `lanes`
/// entries computed there); nothing where the weights sum to 0.
struct TableBlend {
    single: bool,
    clips: usize,
    misses: usize,
}

impl TableBlend {
    fn of(weights: &[f32], offset: usize, lanes: usize) -> Self {
        let none = Self { single: false, clips: 0, misses: 0 };
        if !weights.iter().any(|&w| weighs(w)) {
            return none;
        }
        if weights.len() == 1 && offset < lanes {
            return Self { single: true, ..none };
        }
        Self {
            single: false,
            clips: weights.iter().filter(|&&w| weighs(w)).count(),
            misses: (offset + weights.len()).saturating_sub(offset.max(lanes)),
        }
    }
}

/// What one character's layer asks of the level kernel's loops and branches.
struct LevelLayer {
    shows: bool,
    /// Weight-sum iterations, shown and step-back blends together (the fill's threads run them).
    weights: usize,
    clips: usize,
    back_clips: usize,
    /// The shown blend has one sample, which the shortcut samples outside the clip loop.
    single: bool,
    /// Clip-loop iterations, shown and step-back, whose entries lie past the sample table.
    misses: usize,
    back_misses: usize,
    capture: bool,
    switches: bool,
    decays: bool,
    /// The offset decays by Bollo's overshoot-free quintic.
    overshoots: bool,
    /// The replay visits the layer (it switches, with memory), and replays this many displayed
    /// poses (where the switch reads them: 1 for a frozen fade, 2 for a capture), each a blend of
    /// as many samples as this frame shows (weight-sum iterations; its clip loop as `clips`).
    replays_layer: bool,
    replayed_entries: usize,
    replay_weights: usize,
    /// The base layer's root motion removed.
    root_motion: bool,
    /// A layer with memory fading from a frozen snapshot (mixed with it).
    snapshot: bool,
    /// The samples of the frame's replay entry a shown layer with memory writes (none where
    /// the entry stores the pose instead: more samples than an entry holds).
    entry_samples: usize,
    /// A shown layer with memory whose entry stores the pose instead (`store_pose`).
    stores: bool,
}

impl LevelLayer {
    /// The layer `l` of one character whose program is `program`, in a level kernel of `lanes`
    /// lanes a character (the sample table's entries).
    fn of(l: usize, setup: &LayerSetup, program: &LayerProgram, samples: &[ClipSample], lanes: usize) -> Self {
        let shows = l == 0 || weighs(program.weight);
        let snapshot = program.flags & LayerProgram::SOURCE_SNAPSHOT != 0;
        let inertializes = program.switch_mode().is_inertialization();
        let crossfade = program.switch_mode() == SwitchMode::Crossfade && !snapshot;
        let (shown, back) = if crossfade {
            (program.sample_range(), 0..0)
        } else {
            let back = if program.num_secondary > 0 { program.secondary_range() } else { 0..0 };
            (program.target_range(), back)
        };
        let weights = |r: std::ops::Range<u32>| -> Vec<f32> {
            samples.get(r.start as usize..r.end as usize).unwrap_or_default().iter().map(|s| s.weight).collect()
        };
        // Nothing is sampled where the layer does not show; the step-back blend's entries
        // follow the shown ones in the table (its shortcut is the switch frame's code).
        let (shown, back) = match shows {
            true => (weights(shown), weights(back)),
            false => (Vec::new(), Vec::new()),
        };
        let blend = TableBlend::of(&shown, 0, lanes);
        let back_blend = TableBlend::of(&back, shown.len(), lanes);
        let switched = program.flags & LayerProgram::SWITCHED != 0;
        let replays_layer = replays_layer(l, setup, program);
        let replayed_entries = match (replays_layer && switches(program), snapshot) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        };
        let shown_samples = shown_range(program).len();
        let decays = shows && setup.needs_memory && decays(program);
        Self {
            entry_samples: match shows && setup.needs_memory && shown_samples <= REPLAY_SAMPLES as usize {
                true => shown_samples,
                false => 0,
            },
            stores: shows && setup.needs_memory && shown_samples > REPLAY_SAMPLES as usize,
            replays_layer,
            replayed_entries,
            replay_weights: shown.len(),
            root_motion: shows && removes_root_motion(l, program),
            snapshot: shows && setup.needs_memory && snapshot,
            shows,
            weights: shown.len() + back.len(),
            clips: blend.clips,
            back_clips: back_blend.clips,
            single: blend.single,
            misses: blend.misses,
            back_misses: back_blend.misses,
            // Steady state: every layer has shown two frames (the module's notes).
            capture: shows && setup.needs_memory && !snapshot && switched && inertializes,
            switches: shows && setup.needs_memory && switches(program),
            decays,
            overshoots: decays && overshoots(program),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Mask;
    use crate::rig::Transform;

    /// A rig from parents (`None` for a root).
    fn rig(parents: &[Option<usize>]) -> Rig {
        let n = parents.len();
        Rig::new((0..n).map(|j| format!("j{j}")).collect(), parents.to_vec(), vec![Transform::IDENTITY; n], None)
            .unwrap()
    }

    /// The doubling rounds counted by hand on a chain of five joints (depths 0 to 4) and a
    /// second root: spans 1, 2 and 4 reach depth 4, so three rounds and four barriers (two a
    /// round but the last, whose rows go to the skinning; five with the pose's), and each joint a product in every round whose span its depth reaches
    /// (0 + 1 + 2 + 2 + 3 + 0 = 8), where the walks take 1 + 2 + 3 + 4 = 10 and 4 steps.
    #[test]
    fn doubling_rounds_on_a_small_rig() {
        let rig = rig(&[None, Some(0), Some(1), Some(2), Some(3), None]);
        let walks = WorkModel::new(&rig, 64, 64, 48).unwrap();
        let doubling = walks.clone().with_hierarchy(Hierarchy::Doubling);
        let costs = KernelCosts { model_step: 10, ..KernelCosts::default() };
        let work = doubling.two_clip_character(&[1.0], &costs);
        assert_eq!((work.model_steps, work.walk_products, work.level_products), (3.0, 8.0, 4.0));
        assert_eq!((work.barriers, work.wave_instructions), (5.0, 30.0));
        let work = walks.two_clip_character(&[1.0], &costs);
        assert_eq!((work.model_steps, work.walk_products, work.barriers), (4.0, 10.0, 1.0));
        // The level kernels compose band by band whatever the hierarchy asked for.
        let levels = doubling.with_kernel(FrameKernel::Levels);
        assert_eq!(levels.hierarchy(), Hierarchy::Walks);
    }

    /// `path`'s place in the recorded path counts ([`MeasuredPath::ALL`]'s order).
    fn path_index(path: MeasuredPath) -> usize {
        MeasuredPath::ALL.iter().position(|&p| p == path).unwrap()
    }

    /// Every region costs 1, so wave-instructions count region entries.
    const UNIT: KernelCosts = KernelCosts {
        kernel_fixed: 1,
        layer_fixed: 1,
        sample_fixed: 1,
        sample_weight: 1,
        sample_clip: 1,
        step_back_clip: 1,
        transition: 1,
        switch: 1,
        decay: 1,
        mesh_fixed: 1,
        mesh_step: 1,
        mesh_band: 1,
        model_step: 1,
        model_band: 1,
        model_idle: 1,
        mesh_idle: 1,
        capture_step: 1,
        slot_end: 1,
        slot_switch: 1,
        slot_decay: 1,
        fill_fixed: 1,
        fill_entry: 1,
        replay_check: 1,
        pass_check: 1,
        replay_layer: 1,
        replay_entry: 1,
        replay_weight: 1,
        replay_clip: 1,
        replay_store: 1,
        store_pose: 1,
        root_motion: 1,
        snapshot_mix: 1,
        additive: 1,
        override_local: 1,
        single_sample: 1,
        table_miss: 1,
        mesh_roots: 1,
        overshoot: 1,
        affine_output: 1,
        sample_positions: 1,
    };

    /// [`UNIT`] with the replay before the layers free, for tests of the switch region alone.
    const NO_REPLAY: KernelCosts =
        KernelCosts { replay_layer: 0, replay_entry: 0, replay_weight: 0, replay_clip: 0, ..UNIT };

    /// A switching and a steady layer differ by exactly the switch region per wave that holds
    /// joints, on both kernels, and in the level kernel by the slot's end's switch code once
    /// more (its slot's thread's wave): the chain of three's base layer (with memory, one
    /// sample) at a frozen fade's switch against the fade a frame later, and at an
    /// inertialization's switch against its decay a frame later (the level kernel's capture also
    /// reads the character's 3 joints in its reduction, not its 4th, idle lane). One wave of 64 holds the three joints;
    /// lane by lane (the fused kernel on waves of 1) three waves do. A crossfade's or a cut's
    /// switch runs no switch code.
    #[test]
    fn a_switch_costs_the_switch_region() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts { switch: 1000, slot_switch: 100, ..NO_REPLAY };
        let with = |mode: SwitchMode, flags: u32| LayerProgram { mode: mode as u32, flags, ..program(0, 1, 1.0) };
        let frozen = with(SwitchMode::Frozen, LayerProgram::TRANSITIONING | LayerProgram::SOURCE_SNAPSHOT);
        let inertial = with(SwitchMode::InertializeQuintic, LayerProgram::TRANSITIONING);
        let crossfade = with(SwitchMode::Crossfade, LayerProgram::TRANSITIONING);
        let cut = with(SwitchMode::Cut, 0);
        let cases = [
            (frozen, FrameKernel::Fused, 64, 1000.0),
            (frozen, FrameKernel::Levels, 64, 1100.0),
            (frozen, FrameKernel::Fused, 1, 3000.0),
            (inertial, FrameKernel::Fused, 64, 1000.0),
            (inertial, FrameKernel::Levels, 64, 1100.0 + 3.0),
            (inertial, FrameKernel::Fused, 1, 3000.0),
            (crossfade, FrameKernel::Fused, 64, 0.0),
            (crossfade, FrameKernel::Levels, 64, 0.0),
            (cut, FrameKernel::Levels, 64, 0.0),
        ];
        for (steady, kernel, wave, more) in cases {
            let switch = LayerProgram { flags: steady.flags | LayerProgram::SWITCHED, ..steady };
            let model = WorkModel::new(&chain, wave, 64, 48).unwrap().with_kernel(kernel);
            let work = |p: LayerProgram| model.layered_frame(&layers, &[p], &samples, &costs).unwrap();
            let (before, at) = (work(steady), work(switch));
            assert_eq!(at.wave_instructions - before.wave_instructions, more, "{kernel:?}, wave {wave}: {switch:?}");
            assert!(before.wave_instructions < 1000.0, "{kernel:?}, wave {wave}: {steady:?} charged the switch");
        }
    }

    /// A decaying offset costs the decay, and Bollo's overshoot-free quintic its own code
    /// besides, nothing else: the chain of three's base layer (with memory, one sample) a frame
    /// after an inertialization's switch, one wave of 64 on both kernels (costs 1000 and 100).
    /// A layer's transition is charged where it has memory, to every wave of a level workgroup
    /// (two): not to a layer without memory.
    #[test]
    fn the_overshoots_decay_is_charged_where_it_runs() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts { decay: 1000, overshoot: 100, ..KernelCosts::default() };
        let decaying = |mode: SwitchMode| LayerProgram {
            mode: mode as u32,
            flags: LayerProgram::TRANSITIONING,
            ..program(0, 1, 1.0)
        };
        for kernel in [FrameKernel::Fused, FrameKernel::Levels] {
            let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(kernel);
            for (mode, expected) in [
                (SwitchMode::InertializeQuintic, 1000.0),
                (SwitchMode::InertializeSpring, 1000.0),
                (SwitchMode::InertializeQuinticOvershootControl, 1100.0),
            ] {
                let work = model.layered_frame(&layers, &[decaying(mode)], &samples, &costs).unwrap();
                assert_eq!(work.wave_instructions, expected, "{kernel:?}: {mode:?}");
            }
        }
        let transition = KernelCosts { transition: 1, ..KernelCosts::default() };
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        for (needs_memory, expected) in [(true, 2.0), (false, 0.0)] {
            let layers = [LayerSetup { needs_memory, ..LayerSetup::default() }];
            let work = model.layered_frame(&layers, &[program(0, 1, 1.0)], &samples, &transition).unwrap();
            assert_eq!(work.wave_instructions, expected, "memory: {needs_memory}");
        }
    }

    /// The affine 3×4 output's store is charged where the model writes 48 bytes a joint, not 64:
    /// to the fused kernel's one wave of the chain of three, in both frames, and in the level
    /// workgroup (two waves, each holding 16 character slots' joints, four lanes a slot) to the
    /// one wave holding the frame's one character.
    #[test]
    fn the_affine_store_is_charged_where_the_output_is_affine() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts { affine_output: 64, ..KernelCosts::default() };
        for (kernel, per_character) in [(FrameKernel::Fused, 64.0), (FrameKernel::Levels, 64.0)] {
            for (output_bytes, expected) in [(48, per_character), (64, 0.0)] {
                let model = WorkModel::new(&chain, 64, output_bytes, 48).unwrap().with_kernel(kernel);
                let layered = model.layered_frame(&layers, &[program(0, 1, 1.0)], &samples, &costs).unwrap();
                let ranges: Vec<std::ops::Range<u32>> = std::iter::once(0..1).collect();
                let two_clip = model.two_clip_frame(&samples, &ranges, &costs).unwrap();
                assert_eq!(
                    [layered.wave_instructions, two_clip.wave_instructions],
                    [expected; 2],
                    "{kernel:?}, {output_bytes} bytes"
                );
            }
        }
    }

    /// The replay before the layers, on the chain of three's base layer (one sample, one wave
    /// of 64): every frame checks the layer (`replay_check` 1); a switch visits it
    /// (`replay_layer` 100), and where the switch reads displayed poses replays them, each an
    /// entry (10) and its one sample's weight (1, the sample taken outside the clip loop): a
    /// frozen fade's switch the last pose (111), an inertialization's the last two (122); a
    /// crossfade's and a cut's switch read none (100). The same on both kernels.
    #[test]
    fn a_switch_replays_the_poses_it_reads() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts {
            replay_check: 1,
            replay_layer: 100,
            replay_entry: 10,
            replay_weight: 1,
            replay_clip: 1000,
            ..KernelCosts::default()
        };
        let with = |mode: SwitchMode, flags: u32| LayerProgram {
            mode: mode as u32,
            flags: flags | LayerProgram::TRANSITIONING | LayerProgram::SWITCHED,
            ..program(0, 1, 1.0)
        };
        let cases = [
            (with(SwitchMode::Frozen, LayerProgram::SOURCE_SNAPSHOT), 1.0 + 111.0),
            (with(SwitchMode::InertializeQuintic, 0), 1.0 + 122.0),
            (with(SwitchMode::Crossfade, 0), 1.0 + 100.0),
            (with(SwitchMode::Cut, 0), 1.0 + 100.0),
            (program(0, 1, 1.0), 1.0),
        ];
        for kernel in [FrameKernel::Fused, FrameKernel::Levels] {
            let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(kernel);
            for (p, expected) in cases {
                let work = model.layered_frame(&layers, &[p], &samples, &costs).unwrap();
                assert_eq!(work.wave_instructions, expected, "{kernel:?}: {p:?}");
            }
        }
    }

    /// The stored kernel ([`WorkModel::with_specialisation`], `Stored`) on the chain of three's base layer
    /// (one sample, steady): no check, no entry's store; the pose stored (`store_pose`, in the
    /// fused kernel) after the entry's header: 16 + 3 × 32 bytes written where the replaying
    /// kernel writes 16 + 16. At an inertialization's switch nothing is replayed.
    #[test]
    fn the_stored_kernel_writes_poses_and_replays_nothing() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts { replay_check: 10, replay_store: 100, store_pose: 1000, replay_layer: 10_000, ..UNIT };
        let steady = program(0, 1, 1.0);
        let switch = LayerProgram {
            mode: SwitchMode::InertializeQuintic as u32,
            flags: LayerProgram::TRANSITIONING | LayerProgram::SWITCHED,
            ..steady
        };
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let stored = model.clone().with_specialisation(Specialisation::Stored);
        let work = |m: &WorkModel, p: LayerProgram| m.layered_character(&layers, &[p], &samples, &costs).unwrap();
        let (replaying, storing) = (work(&model, steady), work(&stored, steady));
        assert_eq!(storing.wave_instructions - replaying.wave_instructions, 1000.0 - 10.0 - 100.0);
        assert_eq!(storing.bytes_written - replaying.bytes_written, 3.0 * 32.0 - 16.0);
        assert!(work(&stored, switch).wave_instructions < 10_000.0, "the stored kernel replays nothing");
        assert!(work(&model, switch).wave_instructions > 10_000.0);
    }

    /// In the level kernel the pose's store (`store_pose`) is charged to the waves holding a
    /// character whose entry cannot replay its layer: every shown layer with memory in the
    /// stored kernel, else a frame showing more samples than an entry holds (REPLAY_SAMPLES).
    /// The chain of three, one character (wave 0 of two): one sample, no store; nine samples,
    /// one store and no entry's samples; the stored kernel, one store.
    #[test]
    fn a_level_wave_stores_the_pose_only_where_its_entry_cannot_replay_it() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples: Vec<ClipSample> = (0..9).map(|c| ClipSample::new(c, 0.0, 1.0)).collect();
        let costs = KernelCosts { store_pose: 1000, ..UNIT };
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        let work = |m: &WorkModel, p: LayerProgram| m.layered_frame(&layers, &[p], &samples, &costs).unwrap();
        let thousands = |w: Work| (w.wave_instructions / 1000.0).floor();
        assert_eq!(thousands(work(&model, program(0, 1, 1.0))), 0.0);
        assert_eq!(thousands(work(&model, program(0, REPLAY_SAMPLES + 1, 1.0))), 1.0);
        assert_eq!(
            thousands(work(&model.clone().with_specialisation(Specialisation::Stored), program(0, 1, 1.0))),
            1.0
        );
    }

    /// In the level kernel a wave runs the switch code once however many of the characters it
    /// covers switch: two characters of the chain of three share wave 0 (16 characters of 4
    /// lanes), as their slots' threads do, so one switching frozen fade adds the region and the
    /// slot's end's switch code once to the workgroup (500 and 100 per character), and two add
    /// them once too.
    #[test]
    fn a_level_wave_runs_the_switch_code_once() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        let costs = KernelCosts { switch: 1000, slot_switch: 200, ..NO_REPLAY };
        let fade = LayerProgram {
            mode: SwitchMode::Frozen as u32,
            flags: LayerProgram::TRANSITIONING | LayerProgram::SOURCE_SNAPSHOT,
            ..program(0, 1, 1.0)
        };
        let switch = LayerProgram { flags: fade.flags | LayerProgram::SWITCHED, ..fade };
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        let work = |p: [LayerProgram; 2]| model.layered_frame(&layers, &p, &samples, &costs).unwrap().wave_instructions;
        let steady = work([fade, fade]);
        assert_eq!(work([switch, fade]) - steady, 600.0);
        assert_eq!(work([fade, switch]) - steady, 600.0);
        assert_eq!(work([switch, switch]) - steady, 600.0);
    }

    /// The sample-positions stage: a thread a sample, so a frame of 70 samples on waves of 32 is
    /// three waves of its code, whatever the characters; each sample's clip and time read (8
    /// bytes), its position written (4), its clip's header among the clip bytes (32). Spread
    /// over the frame's 5 characters.
    #[test]
    fn sample_positions_cost_a_wave_per_wave_of_samples() {
        let model = WorkModel::new(&rig(&[None, Some(0), Some(1)]), 32, 64, 48).unwrap();
        let samples = [ClipSample::new(0, 0.0, 1.0); 70];
        let ranges: Vec<std::ops::Range<u32>> = (0..5).map(|c| 14 * c..14 * c + 14).collect();
        let positions = KernelCosts { sample_positions: 1000, ..KernelCosts::default() };
        let work = model.two_clip_frame(&samples, &ranges, &positions).unwrap();
        assert_eq!(work.wave_instructions, 3.0 * 1000.0 / 5.0);
        // One character's own work, the same for each, without the stage.
        let without = model.two_clip_character(&[1.0; 14], &positions);
        assert_eq!(without.wave_instructions, 0.0);
        assert_eq!(work.bytes_read - without.bytes_read, 14.0 * 8.0);
        assert_eq!(work.bytes_written - without.bytes_written, 14.0 * 4.0);
        assert_eq!(work.clip_bytes_read - without.clip_bytes_read, 14.0 * 32.0);
    }

    /// The chain of three in the level kernel: 4 lanes a character, 32 characters a 128-thread
    /// workgroup, 2 waves of 64 (16 characters each). Two characters blending two clips fill
    /// wave 0 only: every wave runs the kernel's code (2), wave 0 sums two weights (2) and
    /// samples two clips (2); local-to-model's one band (depths 1 and 2, a chain of two joints a
    /// character) holds 32 chains, in wave 0: its code once and two steps (3), and the other
    /// wave its idle code (1); the sample-positions stage before the frame, one wave for its four
    /// samples (1). 11 for the frame, 5.5 per character. Barriers: the sample table's 2 and the
    /// band's 1, per character 1.5. Bytes are the fused kernel's.
    #[test]
    fn two_clip_chain_of_three_in_a_level_workgroup() {
        let fused = WorkModel::new(&rig(&[None, Some(0), Some(1)]), 64, 64, 48).unwrap();
        let levels = fused.clone().with_kernel(FrameKernel::Levels);
        let samples = [ClipSample::new(0, 0.0, 0.5); 4];
        let ranges = [0..2, 2..4];
        let before = fused.two_clip_frame(&samples, &ranges, &UNIT).unwrap();
        let work = levels.two_clip_frame(&samples, &ranges, &UNIT).unwrap();
        assert_eq!((work.wave_instructions, work.wave_steps), (5.5, 5.5));
        assert_eq!((work.model_steps, work.barriers), (1.0, 1.5));
        let idle = KernelCosts { model_idle: 1000, ..UNIT };
        assert_eq!(levels.two_clip_frame(&samples, &ranges, &idle).unwrap().wave_instructions, 5.5 + 999.0 / 2.0);
        assert_eq!((work.bytes_read, work.bytes_written), (before.bytes_read, before.bytes_written));
        // On warps of 32, four waves run the kernel's code; warp 0 holds both characters.
        let warps =
            WorkModel::new(&rig(&[None, Some(0), Some(1)]), 32, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        let work = warps.two_clip_frame(&samples, &ranges, &UNIT).unwrap();
        // 4 + 2 + 2 + a band of 32 chains on warps of 32: 1 × (1 + 2), and 3 idle warps; the
        // sample positions' one warp.
        assert_eq!(work.wave_instructions, (4.0 + 2.0 + 2.0 + 3.0 + 3.0 + 1.0) / 2.0);
    }

    /// A wave runs a band's step as often as its longest chain: the rig 0 ← 1 ← 2, 0 ← 3 has one
    /// band after the roots, its chains 1 ─ 2 and 3 (lengths 2 and 1), 32 characters of a
    /// level workgroup in 64 of its threads. On waves of 64 the one wave holding chains holds
    /// both kinds: the band's code once and two steps. Lane by lane (waves of 1), the 32 threads
    /// holding 1 ─ 2 take two steps each and the 32 holding 3 one: the band's code 64 times and
    /// 96 steps. Two characters blending, per character half that.
    #[test]
    fn a_wave_steps_as_often_as_its_longest_chain() {
        let parents = [None, Some(0), Some(1), Some(0)];
        let costs = KernelCosts { model_band: 1, model_step: 1000, ..KernelCosts::default() };
        let samples = [ClipSample::new(0, 0.0, 0.5); 4];
        let ranges = [0..2, 2..4];
        let work = |wave: u32| {
            let model = WorkModel::new(&rig(&parents), wave, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
            model.two_clip_frame(&samples, &ranges, &costs).unwrap().wave_instructions
        };
        assert_eq!(work(64), (1.0 + 2.0 * 1000.0) / 2.0);
        assert_eq!(work(1), (64.0 + 96.0 * 1000.0) / 2.0);
    }

    /// The layered chain of three (base and masked mesh-space override, as
    /// `layered_chain_with_a_masked_mesh_override`) for one character in the level kernel:
    /// kernel 2 waves; wave 0's replay check (1); per layer every wave's layer
    /// code and transition (both layers have memory: 2 × 2 × 2) and wave 0's sampling (1 fixed,
    /// 1 single sample), the override's mesh code (1; the base's copy is layer code) and, as the
    /// slots' threads' wave, the table's fill (1 fixed, 1 weight, 1 entry), the slot's end and
    /// its entry's one sample (2): 7 and 8, 15; the mesh code of the other wave (which runs it
    /// with no joint of a character: 1); the mesh's roots (`mesh_roots`, 1) and its one band
    /// (depths 1 and 2, a chain of two joints) in one wave, its code and two steps (3), the other
    /// wave its idle code (1), local-to-model's band likewise (3 + 1): 2 + 1 + 8 + 15 + 1 + 1 +
    /// 4 + 4 = 36; the sample-positions stage's one wave for the frame's two samples, 37; the
    /// roots' step once (a cost of 1000 adds 999).
    /// Barriers: per layer (both with memory) the sample table's 1 and the transition's 2 (the
    /// first also orders the table's reads), the mesh's 4 + 1 + 1 (the roots', the band's), the
    /// pose's 1, local-to-model's 1 + 1: 15.
    #[test]
    fn layered_chain_in_a_level_workgroup() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let entry = |joint: &str| crate::program::MaskEntry { joint: joint.into(), weight: 1.0, descendants: true };
        let mask = Mask::from_entries(&chain, &[entry("j1")]).unwrap();
        let layers = [
            LayerSetup::default(),
            LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Mesh, mask: Some(mask), needs_memory: true },
        ];
        let samples = [ClipSample::new(0, 0.0, 1.0), ClipSample::new(1, 0.0, 1.0)];
        let programs = [program(0, 1, 1.0), program(1, 1, 1.0)];
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        let work = model.layered_frame(&layers, &programs, &samples, &UNIT).unwrap();
        assert_eq!(work.wave_instructions, 37.0);
        assert_eq!((work.barriers, work.mesh_steps, work.model_steps), (15.0, 3.0, 2.0));
        let roots = KernelCosts { mesh_roots: 1000, ..UNIT };
        assert_eq!(model.layered_frame(&layers, &programs, &samples, &roots).unwrap().wave_instructions, 1036.0);
    }

    /// The measured paths are charged where a wave runs them, on both kernels: the base layer's
    /// root motion once (the root's wave), a frozen fade's snapshot mix per wave of the layer, an
    /// additive layer's and a local override's combine per wave of each; none of them on a frame
    /// without them. The chain of three, a base layer and three more (additive, local override
    /// with memory fading from a snapshot, additive at weight 0, skipped); costs 1000 for each
    /// path, so the thousands count path entries. One wave of 64 on either kernel (a 4-lane
    /// character of a level workgroup), then lane by lane on the fused kernel (three waves):
    /// root motion 1, snapshot 3, additive 3, local override 3.
    #[test]
    fn measured_paths_are_charged_where_they_run() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let costs = KernelCosts { root_motion: 1000, snapshot_mix: 1000, additive: 1000, override_local: 1000, ..UNIT };
        let layers = [
            LayerSetup::default(),
            LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() },
            LayerSetup { blend: LayerBlend::Override, needs_memory: true, ..LayerSetup::default() },
            LayerSetup { blend: LayerBlend::Additive, ..LayerSetup::default() },
        ];
        let samples: Vec<ClipSample> = (0..4).map(|c| ClipSample::new(c, 0.0, 1.0)).collect();
        let root_motion = LayerProgram { flags: LayerProgram::ROOT_MOTION, ..program(0, 1, 1.0) };
        let fading = LayerProgram {
            flags: LayerProgram::TRANSITIONING | LayerProgram::SOURCE_SNAPSHOT,
            target_weight: 0.5,
            progress: 0.5,
            transition: 0,
            ..program(2, 1, 1.0)
        };
        let with = [root_motion, program(1, 1, 1.0), fading, program(3, 1, 0.0)];
        let without = [program(0, 1, 1.0), program(1, 1, 1.0), program(2, 1, 1.0), program(3, 1, 0.0)];
        let thousands = |model: &WorkModel, programs: &[LayerProgram]| {
            let work = model.layered_frame(&layers, programs, &samples, &costs).unwrap();
            (work.wave_instructions / 1000.0).floor()
        };
        for kernel in [FrameKernel::Fused, FrameKernel::Levels] {
            let model = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(kernel);
            // Characters of a level workgroup run alike: the same as one.
            assert_eq!(thousands(&model, &with), 1.0 + 1.0 + 1.0 + 1.0, "{kernel:?}");
            let plain = LayerProgram { flags: 0, ..fading };
            assert_eq!(thousands(&model, &[without[0], with[1], plain, with[3]]), 2.0, "{kernel:?}");
        }
        let lanes = WorkModel::new(&chain, 1, 64, 48).unwrap();
        assert_eq!(thousands(&lanes, &with), 1.0 + 3.0 + 3.0 + 3.0);
        assert_eq!(thousands(&lanes, &without), 6.0);
    }

    /// A level kernel's clip loop computes the entries past its sample table (a character's
    /// lanes: 4 on a chain of three joints): a blend of six samples misses twice, one of four
    /// never; a blend of one sample takes the shortcut, on both kernels, and a blend of two
    /// does not. Costs: `table_miss` and `single_sample` 1000 and 1,000,000, the rest 1.
    #[test]
    fn table_misses_and_single_samples_are_charged_where_they_run() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let costs = KernelCosts { table_miss: 1000, single_sample: 1_000_000, ..UNIT };
        let layers = [LayerSetup::default()];
        let samples: Vec<ClipSample> = (0..6).map(|c| ClipSample::new(c, 0.0, 1.0)).collect();
        let charged = |model: &WorkModel, count: u32| {
            let work = model.layered_frame(&layers, &[program(0, count, 1.0)], &samples, &costs).unwrap();
            ((work.wave_instructions / 1_000_000.0).floor(), (work.wave_instructions % 1_000_000.0 / 1000.0).floor())
        };
        let levels = WorkModel::new(&chain, 64, 64, 48).unwrap().with_kernel(FrameKernel::Levels);
        assert_eq!(level_lanes(3), 4);
        assert_eq!(charged(&levels, 6), (0.0, 2.0));
        assert_eq!(charged(&levels, 4), (0.0, 0.0));
        assert_eq!(charged(&levels, 2), (0.0, 0.0));
        assert_eq!(charged(&levels, 1), (1.0, 0.0));
        let fused = WorkModel::new(&chain, 64, 64, 48).unwrap();
        assert_eq!(charged(&fused, 6), (0.0, 0.0));
        assert_eq!(charged(&fused, 1), (1.0, 0.0));
        // An inertialization's switch frame: the step-back blend's entries follow the shown
        // ones in the table, so its misses start where the shown blend's entries leave off; a
        // step-back blend of one past the table takes the loop (a miss), not the shortcut (the
        // step-back shortcut is the switch frame's code, never `single_sample`).
        let switching = |shown: u32, back: u32| LayerProgram {
            flags: LayerProgram::SWITCHED,
            transition: 0,
            num_secondary: back,
            mode: SwitchMode::InertializeQuintic as u32,
            ..program(0, shown, 1.0)
        };
        let layer = LevelLayer::of(0, &layers[0], &switching(3, 2), &samples, 4);
        assert_eq!((layer.clips, layer.back_clips, layer.misses, layer.back_misses), (3, 2, 0, 1));
        assert!(!layer.single);
        let layer = LevelLayer::of(0, &layers[0], &switching(4, 1), &samples, 4);
        assert_eq!((layer.clips, layer.back_clips, layer.misses, layer.back_misses), (4, 1, 0, 1));
        // Both blends of one inside the table: both shortcuts, no loop.
        let layer = LevelLayer::of(0, &layers[0], &switching(1, 1), &samples, 4);
        assert_eq!((layer.clips, layer.back_clips, layer.misses, layer.back_misses), (0, 0, 0, 0));
        assert!(layer.single);
    }

    /// With full clips a blend of one sample takes the shortcut outside the clip loop on both
    /// kernels (`single_sample`, or `sample_fixed` in `frame_main`'s costs): no clip-loop
    /// iteration; a blend of two takes two. Costs:
    /// `sample_clip` 1000, the rest 1.
    #[test]
    fn one_sample_takes_no_clip_loop_iteration() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let costs = KernelCosts { sample_clip: 1000, ..UNIT };
        let fused = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let levels = fused.clone().with_kernel(FrameKernel::Levels);
        for model in [&fused, &levels] {
            let frame = |weights: &[f32]| {
                let samples: Vec<ClipSample> = weights.iter().map(|&w| ClipSample::new(0, 0.0, w)).collect();
                let range = 0..samples.len() as u32;
                model.two_clip_frame(&samples, std::slice::from_ref(&range), &costs).unwrap().wave_instructions
            };
            assert!(frame(&[1.0]) < 1000.0, "{:?}", model.kernel());
            assert!(frame(&[0.5, 0.5]) >= 2000.0, "{:?}", model.kernel());
        }
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0)];
        assert!(
            levels.layered_frame(&layers, &[program(0, 1, 1.0)], &samples, &costs).unwrap().wave_instructions < 1000.0
        );
    }

    /// A chain 0 ← 1 ← 2 (depths 0, 1, 2), two clips at 0.5 each, one wave of 64.
    /// Wave-instructions with unit costs: kernel 1 (the pose's store and the skinning in it) +
    /// sample_fixed 1 + two weight iterations 2 + two clips 2 + the walk's deepest depth 2 less
    /// the product outside the loop, 1 = 7. Walk products: 0 + 1 + 2 = 3; level by level: 2 (joints 1 and 2). Bytes:
    /// the range (8) and two samples (32) read; 3 mat4 (192) written; clip frames 3 joints × 2
    /// clips × 2 frames × 48 = 576.
    #[test]
    fn two_clip_chain_of_three_in_one_wave() {
        let model = WorkModel::new(&rig(&[None, Some(0), Some(1)]), 64, 64, 48).unwrap();
        let work = model.two_clip_character(&[0.5, 0.5], &UNIT);
        assert_eq!(work.wave_instructions, 7.0);
        assert_eq!(work.wave_steps, 7.0);
        assert_eq!(work.model_steps, 2.0);
        assert_eq!((work.walk_products, work.level_products, work.skinning_products), (3.0, 2.0, 3.0));
        assert_eq!((work.barriers, work.lane_samples), (1.0, 6.0));
        assert_eq!((work.bytes_read, work.bytes_written, work.clip_bytes_read), (40.0, 192.0, 576.0));
    }

    /// The same chain with a lane per wave (wave size 1), writing affine 3×4 rows: 64 waves run
    /// the kernel's own code (64); each of the 3 joints' waves samples (1), sums two weights (2),
    /// samples two clips (2), stores the affine rows (1), and walks its depth less one (0, 0, 1):
    /// 64 + 3 × 6 + 1 = 83. Model steps are then the depths summed: 3.
    #[test]
    fn two_clip_chain_of_three_lane_by_lane() {
        let model = WorkModel::new(&rig(&[None, Some(0), Some(1)]), 1, 48, 48).unwrap();
        let work = model.two_clip_character(&[0.5, 0.5], &UNIT);
        assert_eq!(work.wave_instructions, 83.0);
        assert_eq!(work.model_steps, 3.0);
        assert_eq!(work.bytes_written, 3.0 * 48.0);
    }

    /// A star (a root and three children): every walk is one level, so walking to the root
    /// costs what a pass level by level would (3 products), and one wave's walk is one step.
    /// A single sample takes the shortcut: no clip-loop iteration, one lane sample per joint.
    #[test]
    fn star_walks_cost_what_levels_cost() {
        let model = WorkModel::new(&rig(&[None, Some(0), Some(0), Some(0)]), 32, 64, 48).unwrap();
        let work = model.two_clip_character(&[1.0], &UNIT);
        assert_eq!((work.walk_products, work.level_products, work.model_steps), (3.0, 3.0, 1.0));
        assert_eq!(work.lane_samples, 4.0);
        // 2 warps run the kernel's code; the one holding joints: sample 1, a weight 1, the
        // single sample 1, no walk iteration.
        assert_eq!(work.wave_instructions, 2.0 + 3.0);
    }

    /// Weights summing to zero show the rest pose: nothing sampled, no clip bytes.
    #[test]
    fn zero_weights_sample_nothing() {
        let model = WorkModel::new(&rig(&[None, Some(0)]), 64, 64, 48).unwrap();
        let work = model.two_clip_character(&[0.0, 0.0], &UNIT);
        assert_eq!((work.lane_samples, work.clip_bytes_read), (0.0, 0.0));
    }

    /// A production crowd's two shape passes: every character's workgroup checks its layers in both
    /// (2 passes × 100), and reads the programs of its layers with memory again in the pass that is
    /// not its own (40 bytes); only a character whose frame runs switch code (a layer with memory
    /// switched, shown or not) is in the switching pass, where the replay's check runs (10) and a
    /// layer's transition has the capture's two barriers. The whole crowd's kernel checks for a
    /// switch every frame; a crowd that stores its displayed poses runs neither check, and the
    /// level kernels are charged their own way, whatever the passes.
    #[test]
    fn shape_passes_check_every_character_twice() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default(), LayerSetup { needs_memory: false, ..LayerSetup::default() }];
        let samples = [ClipSample::new(0, 0.0, 1.0), ClipSample::new(1, 0.0, 1.0)];
        let costs = KernelCosts { pass_check: 100, replay_check: 10, ..KernelCosts::default() };
        let whole = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let passes = whole.clone().with_specialisation(Specialisation::Production);
        let steady = [program(0, 1, 1.0), program(1, 1, 1.0)];
        let switched = [LayerProgram { flags: LayerProgram::SWITCHED, ..steady[0] }, steady[1]];
        let work = |m: &WorkModel, p: &[LayerProgram]| m.layered_character(&layers, p, &samples, &costs).unwrap();
        assert_eq!(work(&whole, &steady).wave_instructions, 10.0);
        assert_eq!(work(&passes, &steady).wave_instructions, 200.0);
        assert_eq!(work(&passes, &switched).wave_instructions, 210.0);
        assert_eq!(work(&passes, &steady).bytes_read, work(&whole, &steady).bytes_read + PROGRAM_BYTES);
        // The steady pass's kernel never captures: its layer with memory has one barrier, not
        // the three around a capture's reductions.
        assert_eq!(work(&whole, &steady).barriers - work(&passes, &steady).barriers, 2.0);
        assert_eq!(work(&passes, &switched).barriers, work(&whole, &switched).barriers);
        // A layer without memory never puts a character in the switching pass.
        let memoryless = [steady[0], LayerProgram { flags: LayerProgram::SWITCHED, ..steady[1] }];
        assert_eq!(work(&passes, &memoryless).wave_instructions, 200.0);
        let stored = passes.clone().with_specialisation(Specialisation::Stored);
        assert_eq!(work(&stored, &steady).wave_instructions, 0.0);
        // A crowd built without the switch frame's code has no replay's check either, and one
        // built for production is the two passes.
        assert_eq!(work(&whole.clone().with_specialisation(Specialisation::Steady), &steady).wave_instructions, 0.0);
        assert_eq!(
            work(&whole.clone().with_specialisation(Specialisation::Production), &steady),
            work(&passes, &steady)
        );
        let levels =
            |m: WorkModel| m.with_kernel(FrameKernel::Levels).layered_frame(&layers, &steady, &samples, &costs);
        assert_eq!(levels(passes.clone()).unwrap(), levels(whole.clone()).unwrap());
    }

    fn program(first_sample: u32, num_target: u32, weight: f32) -> LayerProgram {
        LayerProgram {
            first_sample,
            num_target,
            target_weight: 1.0,
            progress: 1.0,
            weight,
            transition: u32::MAX,
            ..Default::default()
        }
    }

    /// The chain of three with a base layer and a mesh-space override masked to joints 1 and 2,
    /// both with memory, steady (no transition), one clip each, one wave of 64.
    /// Barriers: 3 + 3 (two transitions) + 4 (mesh) + 1 (local-to-model) = 11.
    /// Mesh walk: each joint's ancestors plus its own step, masked or not (a masked child needs
    /// its parent's base model rotation): 0 + 1, 1 + 1, 2 + 1 → 6 products; the wave's deepest
    /// lane takes 3 steps (2 ancestor iterations in the loop).
    /// Bytes read: 2 programs (80) + 2 samples (32) + 2 states' first vec4 (32) = 144; written:
    /// 2 states' first vec4 (32), 2 layers' replay entries (a header and one sample: 64) and the
    /// output (192), 288 in all.
    /// Unit wave-instructions: kernel 1; the replay's check 1; per layer: layer loop 1,
    /// sample_fixed 1, the single sample 1, one weight 1, transition 1, the entry's store 1 = 6
    /// each; mesh fixed 1 + 2 ancestor steps; the model walk's 2 − 1 = 1: 1 + 1 + 12 + 3 + 1 =
    /// 18.
    #[test]
    fn layered_chain_with_a_masked_mesh_override() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let entry = |joint: &str| crate::program::MaskEntry { joint: joint.into(), weight: 1.0, descendants: true };
        let mask = Mask::from_entries(&chain, &[entry("j1")]).unwrap();
        assert_eq!(mask.weights(), [0.0, 1.0, 1.0]);
        let layers = [
            LayerSetup::default(),
            LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Mesh, mask: Some(mask), needs_memory: true },
        ];
        let samples = [ClipSample::new(0, 0.0, 1.0), ClipSample::new(1, 0.0, 1.0)];
        let programs = [program(0, 1, 1.0), program(1, 1, 1.0)];
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let work = model.layered_character(&layers, &programs, &samples, &UNIT).unwrap();
        assert_eq!(work.barriers, 11.0);
        assert_eq!((work.mesh_steps, work.model_steps), (3.0, 2.0));
        // Mesh 6 + local-to-model 3; level by level 3 + 2.
        assert_eq!((work.walk_products, work.level_products), (9.0, 5.0));
        assert_eq!((work.bytes_read, work.bytes_written), (144.0, 288.0));
        assert_eq!(work.wave_instructions, 18.0);
        // At weight 0 the override is skipped: its program and one state vec4 read, one written.
        let skipped = model.layered_character(&layers, &[programs[0], program(1, 1, 0.0)], &samples, &UNIT).unwrap();
        assert_eq!(skipped.barriers, 3.0 + 1.0);
        assert_eq!(
            (skipped.bytes_read, skipped.bytes_written),
            (40.0 + 16.0 + 16.0 + 40.0 + 16.0, 16.0 + 32.0 + 192.0 + 16.0)
        );
    }

    /// An inertialization's switch frame on the base: first the two displayed poses replayed
    /// into the slots (2 × 3 lane samples; each entry's header and sample read, 2 × 32; the
    /// slots written, 3 × 2 × 32; the last one's entry marked stored, 16), then the destination
    /// and the step-back blend sampled (2 × 3 lane samples), both slots read (3 × 2 × 32), the
    /// offset written and then read back by the decay (3 × 48 each way), and the frame's entry
    /// written (its header and sample, 32).
    #[test]
    fn inertialization_switch_reads_both_slots() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0), ClipSample::new(0, 0.0, 1.0)];
        let mut switch = program(0, 1, 1.0);
        switch.num_secondary = 1;
        switch.mode = SwitchMode::InertializeQuintic as u32;
        switch.flags = LayerProgram::TRANSITIONING | LayerProgram::SWITCHED;
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let work = model.layered_character(&layers, &[switch], &samples, &UNIT).unwrap();
        assert_eq!(work.lane_samples, 12.0);
        // program 40, 2 samples 32, the state's first vec4 16, both slots 192, offset 144, the
        // two entries replayed 64.
        assert_eq!(work.bytes_read, 40.0 + 32.0 + 16.0 + 192.0 + 144.0 + 64.0);
        // the state's first vec4 16, offset 144, replayed slots 192 and the mark 16, the entry
        // 32, output 192.
        assert_eq!(work.bytes_written, 16.0 + 144.0 + 192.0 + 16.0 + 32.0 + 192.0);
    }

    /// The layer state's second vec4 (the largest offset velocity) moves only for a spring: the
    /// chain of three's base layer (one sample) decaying by a quintic, then by a spring, on the
    /// capture frame and the frame after. Every frame reads and writes the state's first vec4
    /// (16 each way), reads the program (40) and the sample (16) and writes the replay entry
    /// (its header and sample, 32) and the output (3 × 64); the capture replays both displayed
    /// poses (their entries read, 2 × 32; the slots written, 3 × 2 × 32; the last entry marked,
    /// 16), reads both slots (3 × 2 × 32) and writes the offset (3 × 48); every decaying frame
    /// reads the offset (3 × 48). A spring's capture writes the second vec4 (16), and its later
    /// frames read it (16); a quintic's never touch it.
    #[test]
    fn only_a_spring_moves_the_state_s_second_vec4() {
        let chain = rig(&[None, Some(0), Some(1)]);
        let layers = [LayerSetup::default()];
        let samples = [ClipSample::new(0, 0.0, 1.0), ClipSample::new(0, 0.0, 1.0)];
        let model = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let every_frame = (40.0 + 16.0 + 16.0, 16.0 + 32.0 + 192.0);
        let capture = (64.0 + 192.0, 192.0 + 16.0 + 144.0);
        let decay = (144.0, 0.0);
        for (mode, second) in [(SwitchMode::InertializeQuintic, 0.0), (SwitchMode::InertializeSpring, 16.0)] {
            let decaying = LayerProgram { mode: mode as u32, flags: LayerProgram::TRANSITIONING, ..program(0, 1, 1.0) };
            let switch = LayerProgram { flags: decaying.flags | LayerProgram::SWITCHED, num_secondary: 1, ..decaying };
            let bytes = |p: LayerProgram| {
                let work = model.layered_character(&layers, &[p], &samples, &UNIT).unwrap();
                (work.bytes_read, work.bytes_written)
            };
            // The step-back sample (16) is read on the capture frame.
            let at_capture = (every_frame.0 + 16.0 + capture.0 + decay.0, every_frame.1 + capture.1 + second);
            assert_eq!(bytes(switch), at_capture, "{mode:?}: the capture frame");
            assert_eq!(bytes(decaying), (every_frame.0 + decay.0 + second, every_frame.1), "{mode:?}: after it");
        }
    }

    #[test]
    fn bad_wave_sizes_and_programs_are_errors() {
        let chain = rig(&[None, Some(0)]);
        assert_eq!(WorkModel::new(&chain, 48, 64, 48).err(), Some(WorkModelError::WaveSize(48)));
        assert_eq!(WorkModel::new(&chain, 128, 64, 48).err(), Some(WorkModelError::WaveSize(128)));
        let model = WorkModel::new(&chain, 32, 64, 48).unwrap();
        let layers = [LayerSetup::default()];
        assert!(matches!(
            model.layered_frame(&layers, &[program(5, 1, 1.0)], &[], &UNIT),
            Err(WorkModelError::Programs(_))
        ));
        assert!(matches!(model.layered_character(&layers, &[], &[], &UNIT), Err(WorkModelError::Programs(_))));
    }

    /// The recorded loop lists give costs whose regions add back up to the kernel's static
    /// instruction count (each loop body split into its regions once; in the fused kernel, whose
    /// layers are unrolled, each layer's code counted once for each layer that holds it, within
    /// what the divisions among the layers leave out and the instruction or two by which one
    /// layer's loop bodies differ from the first's).
    #[test]
    fn costs_from_the_recorded_loops_add_up() {
        let c = KernelCosts::frame_layers_radv_navi21();
        // The measured stack: three layers with memory, one additive, one mesh-space override.
        let (layers, memory, additive, mesh) = (3, 3, 1, 1);
        let within = |got: u32, want: u32, slack: u32, what: &str| {
            assert!(got.abs_diff(want) <= slack, "{what}: {got} against {want}, within {slack}");
        };
        let each_layer = c.layer_fixed
            + c.sample_fixed
            + 2 * c.sample_weight
            + c.sample_clip
            + c.step_back_clip
            + c.transition
            + (c.replay_store + c.store_pose + c.snapshot_mix)
            + c.single_sample
            + 2 * c.table_miss;
        let layer_code = layers * each_layer
            + memory * (c.switch + c.decay + c.overshoot)
            + c.root_motion
            + additive * c.additive
            + mesh * (c.mesh_fixed + c.mesh_step);
        let replay = c.replay_check + c.replay_layer + c.replay_entry + c.replay_weight + c.replay_clip;
        // What the regions leave out: each division's remainder (below its divisor), and how far
        // the other layers' blend loops (weight sums, clip loops, step-back clip loops: five
        // loops a layer after the replay's five) are from the first layer's, which the regions
        // count for every layer.
        let remainders = 2 * (layers - 1) + 6 * (memory - 1);
        let loops = FRAME_LAYERS_LOOPS_RADV_NAVI21.1;
        let layer_loops = |l: usize| [0, 1, 2, 3].map(|i| count(loops[5 + 5 * l + i].0));
        let apart: u32 = (1..layers as usize)
            .flat_map(|l| layer_loops(l).into_iter().zip(layer_loops(0)))
            .map(|(a, b)| a.abs_diff(b))
            .sum();
        within(
            c.kernel_fixed + replay + layer_code + c.affine_output + c.model_step,
            FRAME_LAYERS_LOOPS_RADV_NAVI21.0,
            remainders + apart,
            "the production kernel",
        );
        // The replay's path: its loop and the check (`replay_check`), whose program reads the
        // unrolled layers share (within the driver's scheduling of the two builds).
        let replay =
            FRAME_LAYERS_LOOPS_RADV_NAVI21.0 - FRAME_LAYERS_WITHOUT_RADV_NAVI21[path_index(MeasuredPath::Replay)];
        within(replay, count(FRAME_LAYERS_LOOPS_RADV_NAVI21.1[0].0) + c.replay_check, 12, "the replay's path");
        // The kernel's own code is the layerless kernel's.
        assert_eq!(
            c.kernel_fixed + c.affine_output + c.model_step,
            FRAME_LAYERS_LAYERLESS_LOOPS_RADV_NAVI21.0,
            "the layerless kernel"
        );
        // The paths: each the settled kernel's count less its count without it, divided among
        // the layers that hold it.
        let settled = FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21.0;
        let measured = |path: MeasuredPath| settled - FRAME_LAYERS_WITHOUT_RADV_NAVI21[path_index(path)];
        assert_eq!(
            [c.root_motion, c.additive, c.affine_output],
            [MeasuredPath::RootMotion, MeasuredPath::Additive, MeasuredPath::AffineOutput].map(measured)
        );
        // A local-space override's combine, which the measured stack has no layer to compile,
        // from the kernel built for a stack that has one.
        assert_eq!(measured(MeasuredPath::OverrideLocal), 0, "the measured stack has no local-space override");
        let [with, without] = FRAME_LAYERS_LOCAL_OVERRIDE_RADV_NAVI21;
        assert_eq!(c.override_local, with - without);
        assert!(c.override_local > 0, "the combine is code of its own");
        within(layers * c.single_sample, measured(MeasuredPath::SingleSample), layers - 1, "the single-sample path");
        assert!(c.affine_output > 0, "the affine store is code of its own");
        assert_eq!(c.table_miss, 0);
        for (path, why) in [
            (MeasuredPath::TableMiss, "the fused kernel has no sample table"),
            (MeasuredPath::MeshRoots, "the fused kernel walks from the roots"),
        ] {
            assert_eq!(measured(path), 0, "{why}");
        }
        // The mesh-space override's path: its straight-line code and its walk.
        assert_eq!(mesh * (c.mesh_fixed + c.mesh_step), measured(MeasuredPath::MeshOverride));
        // The transition's: its own code, the replay entry's store, the snapshot's mix and the
        // pose's store.
        within(memory * c.snapshot_mix, measured(MeasuredPath::SnapshotMix), memory - 1, "the snapshot's mix");
        within(memory * c.store_pose, measured(MeasuredPath::StorePose), memory - 1, "the pose's store");
        within(
            memory * (c.transition + c.replay_store + c.snapshot_mix + c.store_pose),
            measured(MeasuredPath::Transition),
            3 * (memory - 1),
            "the transition",
        );
        // The overshoot's decay is measured in the steady kernel, and taken out of the decay.
        within(
            memory * c.overshoot,
            FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21.0
                - FRAME_LAYERS_WITHOUT_RADV_NAVI21[path_index(MeasuredPath::Overshoot)],
            memory - 1,
            "the overshoot's decay",
        );
        assert!(c.overshoot > 0, "Bollo's quintic is code of its own");
        // The steady and settled kernels hold the same loops: their difference is the decay.
        within(
            memory * (c.decay + c.overshoot),
            FRAME_LAYERS_STEADY_LOOPS_RADV_NAVI21.0 - FRAME_LAYERS_SETTLED_LOOPS_RADV_NAVI21.0,
            2 * (memory - 1),
            "the decay",
        );
        let f = KernelCosts::frame_radv_navi21();
        assert_eq!(
            f.kernel_fixed + f.sample_fixed + f.sample_weight + f.sample_clip + f.affine_output + f.model_step,
            FRAME_LOOPS_RADV_NAVI21.0
        );
        assert_eq!(f.affine_output, FRAME_LOOPS_RADV_NAVI21.0 - FRAME_WITHOUT_RADV_NAVI21[0]);
        let recorded = LayeredLoops::frame_layers_radv_navi21();
        assert_eq!(
            KernelCosts::from_frame_layers_loops(LayeredLoops { steady: recorded.production, ..recorded }),
            None
        );
        assert_eq!(KernelCosts::from_frame_layers_loops(LayeredLoops { settled: recorded.steady, ..recorded }), None);
        // Lists of the measured stack read as another stack's: its layers' loops are elsewhere.
        let two_layers = LayeredLoops { stack: &MEASURED_STACK[..2], ..recorded };
        assert_eq!(KernelCosts::from_frame_layers_loops(two_layers), None);
        let v = KernelCosts::frame_layers_levels_radv_navi21();
        let layer_loop = v.layer_fixed
            + v.sample_fixed
            + 2 * v.sample_weight
            + v.sample_clip
            + v.step_back_clip
            + (v.capture_step + v.slot_end + v.slot_switch + v.slot_decay)
            + (v.fill_fixed + v.fill_entry)
            + (v.transition + v.switch + v.decay + v.overshoot)
            + v.replay_store
            + v.mesh_fixed
            + v.mesh_band
            + v.mesh_step
            + (v.root_motion + v.snapshot_mix + v.additive + v.override_local + v.single_sample)
            + 2 * v.table_miss
            + v.mesh_roots
            + v.store_pose;
        let replay = v.replay_check + v.replay_layer + v.replay_entry + v.replay_weight + v.replay_clip;
        assert_eq!(
            v.kernel_fixed + replay + layer_loop + v.affine_output + v.model_band + v.model_step,
            FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21.0
        );
        let settled = FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21.0;
        let measured = |path: MeasuredPath| settled - FRAME_LAYERS_LEVELS_WITHOUT_RADV_NAVI21[path_index(path)];
        assert_eq!(
            [
                v.root_motion,
                v.snapshot_mix,
                v.additive,
                v.override_local,
                v.single_sample,
                v.table_miss,
                v.mesh_roots,
                v.store_pose,
                v.affine_output
            ],
            [
                MeasuredPath::RootMotion,
                MeasuredPath::SnapshotMix,
                MeasuredPath::Additive,
                MeasuredPath::OverrideLocal,
                MeasuredPath::SingleSample,
                MeasuredPath::TableMiss,
                MeasuredPath::MeshRoots,
                MeasuredPath::StorePose,
                MeasuredPath::AffineOutput
            ]
            .map(measured)
        );
        // The mesh-space override's path: its straight-line code, its roots' step and its
        // band loop (its chain loop within).
        assert_eq!(v.mesh_fixed + v.mesh_roots + v.mesh_band + v.mesh_step, measured(MeasuredPath::MeshOverride));
        // The transition's path: its straight-line code, the slots' end (a loop, the settled
        // kernel's), the snapshot's mix and the pose's store; the overshoot's, measured in the
        // steady kernel, out of the decay.
        let settled_slots = FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21.1[5].0;
        assert_eq!(
            v.transition + count(settled_slots) + v.snapshot_mix + v.store_pose,
            measured(MeasuredPath::Transition)
        );
        assert_eq!(
            v.overshoot,
            FRAME_LAYERS_LEVELS_STEADY_LOOPS_RADV_NAVI21.0
                - FRAME_LAYERS_LEVELS_WITHOUT_RADV_NAVI21[path_index(MeasuredPath::Overshoot)]
        );
        // The slots' end: the settled kernel's loop less the entry's store, then what the
        // steady and the production kernels' loops add.
        let slots = |list: &[(usize, usize)]| count(list[5].0);
        let settled_slots = slots(&FRAME_LAYERS_LEVELS_SETTLED_LOOPS_RADV_NAVI21.1);
        assert_eq!(v.slot_end + v.replay_store, settled_slots);
        assert_eq!(v.slot_decay, slots(&FRAME_LAYERS_LEVELS_STEADY_LOOPS_RADV_NAVI21.1) - settled_slots);
        assert_eq!(
            v.slot_end + v.slot_decay + v.slot_switch + v.capture_step + v.replay_store,
            count(FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21.1[10].0)
        );
        // The fill: its two weight sums and entry loop within.
        assert_eq!(
            v.fill_fixed + 2 * v.sample_weight + v.fill_entry,
            count(FRAME_LAYERS_LEVELS_LOOPS_RADV_NAVI21.1[4].0)
        );
        let f = KernelCosts::frame_levels_radv_navi21();
        assert_eq!(
            f.kernel_fixed
                + f.single_sample
                + f.sample_weight
                + f.sample_clip
                + f.table_miss
                + f.affine_output
                + f.model_band
                + f.model_step,
            FRAME_LEVELS_LOOPS_RADV_NAVI21.0
        );
        assert_eq!(f.affine_output, FRAME_LEVELS_LOOPS_RADV_NAVI21.0 - FRAME_LEVELS_WITHOUT_RADV_NAVI21[2]);
    }

    /// Every procedural region costs 1, so wave-instructions count region entries and walk
    /// steps.
    const PROCEDURAL_UNIT: ProceduralCosts = ProceduralCosts {
        kernel_fixed: 1,
        foot_goal: 1,
        ankle_walk: 1,
        pelvis_walk: 1,
        foot_reach: 1,
        foot_walks: [1; 3],
        two_bone: 1,
        two_bone_walks: [1; 3],
        look_at: 1,
        look_at_walks: [1; 2],
        look_at_joint: 1,
        look_at_joint_walk: 1,
    };

    /// A chain 0 ← 1 ← … ← 5 with a two-bone chain 1–3–5 and a look-at chain 2, 4, both at
    /// weight 1 for character 0; character 1 only reaches. Character 0: the kernel (1); the
    /// two-bone region (1), its walks root to 0 (0 steps), 1 to 3 (joint 2: 1), 3 to 5 (1);
    /// the look-at region (1), its walks root to joint 1 (1) and 2 to 4 (1), two joint turns
    /// (2), and 2 to 4's parent 3 (0 steps): 1 + 3 + 5 = 9, 4 of them walk steps. Character 1:
    /// 1 + 3 = 4. One wave of 64 holds both and runs the most either asks: 9, 4.5 a character;
    /// a lane a wave, 6.5. Bytes: character 0 reads 7 + 4 floats of targets (44) and joints 0
    /// to 5 (6 × 48), writes 5 rotations (80); character 1 reads 7 + 1 floats (32) and the same
    /// joints, writes 3 rotations (48).
    #[test]
    fn procedural_chains_on_a_chain_of_six() {
        use crate::program::{LookAtChain, ProceduralSetup, TwoBoneChain};
        use glam::{Quat, Vec3};
        let chain = rig(&[None, Some(0), Some(1), Some(2), Some(3), Some(4)]);
        let setup = ProceduralSetup {
            look_at: vec![LookAtChain::even(vec![2, 4], Vec3::Z)],
            two_bone: vec![TwoBoneChain::new(1, 3, 5)],
            ground: None,
        }
        .check(&chain)
        .unwrap();
        let mut targets = ProceduralTargets::new(&setup, 2);
        targets.set_two_bone(0, &[0, 1], &[Vec3::X; 2], &[Vec3::Z; 2], &[Quat::IDENTITY; 2], &[1.0; 2]).unwrap();
        targets.set_look_at(0, &[0], &[Vec3::Z], &[1.0]).unwrap();
        let wave = WorkModel::new(&chain, 64, 64, 48).unwrap();
        let work = wave.procedural_frame(&setup, &targets, &PROCEDURAL_UNIT).unwrap();
        assert_eq!(work.wave_instructions, 9.0 / 2.0);
        assert_eq!(work.walk_products, (4.0 + 2.0) / 2.0);
        assert_eq!(work.bytes_read, (44.0 + 288.0 + 32.0 + 288.0) / 2.0);
        assert_eq!(work.bytes_written, (80.0 + 48.0) / 2.0);
        let lanes = WorkModel::new(&chain, 1, 64, 48).unwrap();
        assert_eq!(lanes.procedural_frame(&setup, &targets, &PROCEDURAL_UNIT).unwrap().wave_instructions, 6.5);
        // A setup for another rig is refused.
        let other = rig(&[None, Some(0), Some(1), Some(2), Some(3), Some(4), Some(5)]);
        let other = WorkModel::new(&other, 64, 64, 48).unwrap();
        assert!(matches!(other.procedural_frame(&setup, &targets, &PROCEDURAL_UNIT), Err(WorkModelError::Programs(_))));
    }

    /// Feet on the ground: a pelvis (1) under the root and two legs 2–3–4 and 5–6–7, ground
    /// weight 1. The kernel (1); per foot its goal (1) and its ankle's walk to the root (4
    /// steps), its reach (1) and its leg's walks (root to pelvis: 1 step; none within the
    /// leg); the pelvis's walk from its parent (0): 1 + 2 × (1 + 4 + 1 + 1) = 15. Bytes: the
    /// ground's weight and two feet's height and normal (9 floats) and all 8 joints read; the
    /// pelvis's translation and 6 rotations written.
    #[test]
    fn procedural_ground_on_two_legs() {
        use crate::program::{FootSetup, GroundSetup, ProceduralSetup, TwoBoneChain};
        let legs = rig(&[None, Some(0), Some(1), Some(2), Some(3), Some(1), Some(5), Some(6)]);
        let foot = |a, b, c| FootSetup { leg: TwoBoneChain::new(a, b, c), ankle_height_m: 0.1, max_tilt_rad: 0.4 };
        let setup = ProceduralSetup {
            ground: Some(GroundSetup { pelvis: 1, feet: vec![foot(2, 3, 4), foot(5, 6, 7)] }),
            ..Default::default()
        }
        .check(&legs)
        .unwrap();
        let mut targets = ProceduralTargets::new(&setup, 1);
        let model = WorkModel::new(&legs, 32, 64, 48).unwrap();
        let idle = model.procedural_frame(&setup, &targets, &PROCEDURAL_UNIT).unwrap();
        assert_eq!((idle.wave_instructions, idle.bytes_read, idle.bytes_written), (1.0, 4.0, 0.0));
        targets.set_ground_weight(&[0], &[1.0]).unwrap();
        let work = model.procedural_frame(&setup, &targets, &PROCEDURAL_UNIT).unwrap();
        assert_eq!(work.wave_instructions, 15.0);
        assert_eq!(work.walk_products, 10.0);
        assert_eq!((work.bytes_read, work.bytes_written), (36.0 + 8.0 * 48.0, 7.0 * 16.0));
    }

    /// The recorded procedural loop list gives costs whose regions add back up to the kernel's
    /// static instruction count (the `continue` edge's span counted once, inside its loop).
    #[test]
    fn procedural_costs_from_the_recorded_loops_add_up() {
        let c = ProceduralCosts::radv_navi21();
        let regions = procedural_charges(&c).iter().sum::<u32>();
        assert_eq!(regions, PROCEDURAL_LOOPS_RADV_NAVI21.0);
        assert_eq!(ProceduralCosts::from_procedural_loops(3885, &FRAME_LAYERS_LOOPS_RADV_NAVI21.1), None);
    }
}
