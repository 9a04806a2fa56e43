//! Shader modules and pipelines: one compute pipeline per stage of `shaders/`, plus the fused
//! frame.

use std::borrow::Cow;

use crate::MAX_JOINTS;
use crate::gpu::types::{
    BLEND_ADDITIVE, BLEND_OVERRIDE, GpuLayerSetup, NO_MASK, NO_MEMORY, SPACE_LOCAL, SPACE_MESH, WORKGROUP_SIZE,
    level_group_characters, level_group_threads, level_lanes,
};
use crate::program::{LayerBlend, LayerProgram, LayerSetup, LayerSpace, evaluation_order, memory_slots};

/// `shaders/shared/*.wgsl`, in the order they must appear (types before the maths and bindings
/// that use them).
const SHARED: [&str; 6] = [
    TYPES,
    TRIG,
    include_str!("../../shaders/shared/quat.wgsl"),
    include_str!("../../shaders/shared/bindings.wgsl"),
    CLIP_HEADER,
    include_str!("../../shaders/shared/compact.wgsl"),
];
/// `shaders/shared/types.wgsl` and `shaders/shared/clip_header.wgsl`: shared by the frame
/// modules and the sample-positions stage, which binds a group of its own.
const TYPES: &str = include_str!("../../shaders/shared/types.wgsl");
const CLIP_HEADER: &str = include_str!("../../shaders/shared/clip_header.wgsl");
const SAMPLE_POSITIONS: &str = include_str!("../../shaders/sample_positions.wgsl");
const SAMPLE: &str = include_str!("../../shaders/sample.wgsl");
const LOCAL_TO_MODEL: &str = include_str!("../../shaders/local_to_model.wgsl");
const SKINNING: &str = include_str!("../../shaders/skinning.wgsl");
const FRAME: &str = include_str!("../../shaders/frame.wgsl");
const TRANSITION: &str = include_str!("../../shaders/transition.wgsl");
const LAYERS: &str = include_str!("../../shaders/layers.wgsl");
const FRAME_LAYERS: &str = include_str!("../../shaders/frame_layers.wgsl");
const LEVELS: &str = include_str!("../../shaders/shared/levels.wgsl");
const FRAME_LEVELS: &str = include_str!("../../shaders/frame_levels.wgsl");
const FRAME_LAYERS_LEVELS: &str = include_str!("../../shaders/frame_layers_levels.wgsl");
const BLEND_SPACE: &str = include_str!("../../shaders/blend_space.wgsl");
const EXPAND: &str = include_str!("../../shaders/expand.wgsl");
const PROCEDURAL: &str = include_str!("../../shaders/procedural.wgsl");
/// `shaders/shared/trig.wgsl`: shared by the frame modules and the procedural stage.
const TRIG: &str = include_str!("../../shaders/shared/trig.wgsl");
/// The hierarchy's compositions ([`Hierarchy`]): local-to-model and skinning, and the
/// mesh-space override's rotations, by walks, in one subgroup (the depths' helpers first), and
/// by pointer doubling.
const WALKS: &str = include_str!("../../shaders/shared/walks.wgsl");
const WALKS_MESH: &str = include_str!("../../shaders/shared/walks_mesh.wgsl");
const SUBGROUP_DEPTHS: &str = include_str!("../../shaders/shared/subgroup_depths.wgsl");
const SUBGROUP: &str = include_str!("../../shaders/shared/subgroup.wgsl");
const SUBGROUP_MESH: &str = include_str!("../../shaders/shared/subgroup_mesh.wgsl");
const DOUBLING: &str = include_str!("../../shaders/shared/doubling.wgsl");
const DOUBLING_MESH: &str = include_str!("../../shaders/shared/doubling_mesh.wgsl");
/// Skinning from the model matrices `SUBGROUP` or `DOUBLING` composes from `pose`'s local ones.
const COMPOSED_POSE: &str = include_str!("../../shaders/shared/composed_pose.wgsl");

/// The WGSL source of the blend-space stage, `shaders/blend_space.wgsl` alone (entry point
/// `blend_space_main`): it binds a group of its own and reads none of `shaders/shared/`, so it
/// is not a [`ShaderModuleKind`], whose modules all start with the shared files.
#[must_use]
pub fn blend_space_source() -> &'static str {
    BLEND_SPACE
}

/// The WGSL source of the expand stage: `shaders/blend_space.wgsl` (whose tree walk and
/// bindings 1 and 2 it uses) followed by `shaders/expand.wgsl` (entry point `expand_main`).
#[must_use]
pub fn expand_source() -> String {
    format!("{BLEND_SPACE}\n{EXPAND}")
}

/// The WGSL source of the procedural stage, `shaders/shared/trig.wgsl` then
/// `shaders/procedural.wgsl` (entry point `procedural_main`): like [`blend_space_source`], it
/// binds a group of its own.
#[must_use]
pub fn procedural_source() -> String {
    [TRIG, PROCEDURAL].concat()
}

/// Which kernel [`crate::gpu::GpuCrowd::encode`] runs for the fused frames: the same matrices
/// (each equal to the CPU evaluator's within the GPU tests' tolerance), different shapes of
/// work. Chosen per crowd ([`crate::gpu::GpuCrowdOptions::kernel`]) so that a device run can
/// time them side by side (`scripts/gpu-bench.sh`).
///
/// | variant | workgroup | hierarchy | per-sample values | grid |
/// |---|---|---|---|---|
/// | `Fused` | one character, 64 threads striding over its joints | each joint walks its ancestors from the root | every joint's lane | chunks of at most 65,535 characters |
/// | `Levels` | 128 threads: 2 characters of 64 joints (4 of 26; one of more than 128 joints, in a workgroup of its lanes), a joint per thread | band by band over the rig's depth levels, a thread a chain of joints, a barrier per band (`gpu::types::level_bands`) | once per sample, through workgroup memory: in the layered frame by the workgroup's first `max(32, characters)` threads for all its characters, in the two-clip frame by a lane per sample of each | rows (and layers of rows), chunks bound only by storage bindings |
///
/// The default is the variant a device measured fastest: `Fused`. On an NVIDIA H200
/// (BENCHMARKS.md "The variants on an NVIDIA H200", 2026-12-04) `Levels`, with 256-thread
/// workgroups then, took 8–18 % longer on the two-clip frame and 33–37 % longer on the layered
/// one, although the work model charged it less than half `Fused`'s instructions
/// (`throng::gpu::work_model`): the level kernel's 103 registers a thread and its barriers
/// leave its warps waiting. `Levels` stays as the challenger, at the workgroup size those
/// figures favour (128 threads, where it tied `Fused` there: faster on some minima, slower on
/// most medians); its registers are what stands between it and the lead.
/// `THRONG_FRAME_KERNEL=fused` (or `levels`) in the environment overrides the default, as
/// `WGPU_BACKEND` overrides wgpu's backend, so that every GPU test and tool runs on either
/// variant unchanged; a value that names no variant leaves the default, with one line on
/// standard error.
///
/// ```
/// use throng::gpu::{FrameKernel, GpuCrowdOptions};
/// let options = GpuCrowdOptions { kernel: FrameKernel::Fused, ..GpuCrowdOptions::default() };
/// assert_eq!(FrameKernel::from_name("levels"), Some(FrameKernel::Levels));
/// assert_eq!(options.kernel.name(), "fused");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKernel {
    /// Variant 0, the first fused kernels (`frame.wgsl`, `frame_layers.wgsl`).
    Fused,
    /// Variant 1 (`frame_levels.wgsl`, `frame_layers_levels.wgsl`, `shared/levels.wgsl`).
    Levels,
}

impl Default for FrameKernel {
    fn default() -> Self {
        static WARNED: std::sync::Once = std::sync::Once::new();
        chosen_in_env("THRONG_FRAME_KERNEL", Self::Fused, &Self::ALL, Self::name, &WARNED)
    }
}

/// The value of `all` whose `name` the environment variable `var` holds, `default` where it is
/// unset. An override that names none (a deleted variant, a typo) would otherwise test or time
/// the default while meaning another: `warned` says so on standard error, once.
fn chosen_in_env<T: Copy>(
    var: &str,
    default: T,
    all: &[T],
    name: fn(T) -> &'static str,
    warned: &std::sync::Once,
) -> T {
    let Ok(value) = std::env::var(var) else { return default };
    all.iter().copied().find(|&v| name(v) == value).unwrap_or_else(|| {
        warned.call_once(|| {
            let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
            eprintln!("throng: {var}={value:?} names none of {}; using {}", names.join(", "), name(default));
        });
        default
    })
}

impl FrameKernel {
    /// Every variant, variant 0 first.
    pub const ALL: [Self; 2] = [Self::Fused, Self::Levels];

    /// The variant's name: `fused` or `levels`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fused => "fused",
            Self::Levels => "levels",
        }
    }

    /// The variant named `name` ([`name`](Self::name)), if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The two-clip frame's module.
    #[must_use]
    pub const fn frame(self) -> ShaderModuleKind {
        match self {
            Self::Fused => ShaderModuleKind::Frame,
            Self::Levels => ShaderModuleKind::FrameLevels,
        }
    }

    /// The layered frame's module.
    #[must_use]
    pub const fn frame_layers(self) -> ShaderModuleKind {
        match self {
            Self::Fused => ShaderModuleKind::FrameLayers,
            Self::Levels => ShaderModuleKind::FrameLayersLevels,
        }
    }

    /// Threads per workgroup of the variant's frames at most (any rig): the largest rig's.
    #[must_use]
    pub fn workgroup_threads(self) -> u32 {
        self.workgroup_threads_for(MAX_JOINTS)
    }

    /// Threads per workgroup of the variant's frames for a rig of `num_joints`.
    #[must_use]
    pub fn workgroup_threads_for(self, num_joints: usize) -> u32 {
        match self {
            Self::Fused => WORKGROUP_SIZE,
            Self::Levels => level_group_threads(num_joints),
        }
    }

    /// Whether the variant evaluates several characters per workgroup, band by band
    /// (`Levels`).
    #[must_use]
    pub const fn is_level_kernel(self) -> bool {
        !matches!(self, Self::Fused)
    }

    /// Characters one workgroup evaluates for a rig of `num_joints`.
    #[must_use]
    pub fn characters_per_workgroup(self, num_joints: usize) -> u32 {
        if self.is_level_kernel() { level_group_characters(num_joints) } else { 1 }
    }

    /// Bytes of workgroup memory the variant's frames take for a rig of `num_joints` at most,
    /// whatever the hierarchy (the stage-by-stage path's and the transition stage's, whatever
    /// the variant, are within `Fused`'s).
    #[must_use]
    pub fn workgroup_memory_bytes_for(self, num_joints: usize) -> u64 {
        match self {
            // One 48-byte affine matrix per joint a thread strides over, and pointer doubling's
            // two identity rows past them (`POSE_ROWS`; the walks and the subgroup keep none),
            // and the transition's two atomics.
            Self::Fused => 48 * u64::from(joints_per_thread(num_joints) * WORKGROUP_SIZE + 2) + 8,
            // An affine matrix and a sample-table entry per thread.
            Self::Levels => (48 + 16) * u64::from(level_group_threads(num_joints)),
        }
    }
}

/// A WGSL module the evaluator builds: one per stage, and the fused frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShaderModuleKind {
    /// `shaders/sample.wgsl`, entry point `sample_main`.
    Sample,
    /// `shaders/local_to_model.wgsl`, entry point `local_to_model_main`.
    LocalToModel,
    /// `shaders/skinning.wgsl`, entry point `skinning_main`.
    Skinning,
    /// `shaders/frame.wgsl` with the three stages it calls, entry point `frame_main`.
    Frame,
    /// `shaders/transition.wgsl` (with sampling), entry point `transition_main`.
    Transition,
    /// `shaders/layers.wgsl` (with the transition's memory layout), entry point `layers_main`.
    Layers,
    /// `shaders/frame_layers.wgsl` with every stage, entry point `frame_layers_main`.
    FrameLayers,
    /// `shaders/frame_levels.wgsl` with `shared/levels.wgsl` and the stages it calls, entry
    /// point `frame_levels_main` ([`FrameKernel::Levels`]).
    FrameLevels,
    /// `shaders/frame_layers_levels.wgsl` with `shared/levels.wgsl` and every stage, entry
    /// point `frame_layers_levels_main` ([`FrameKernel::Levels`]).
    FrameLayersLevels,
    /// `shaders/procedural.wgsl` after `shared/trig.wgsl`, entry point `procedural_main`
    /// ([`procedural_source`]): it reads no other file of `shared/` (it binds a group of its
    /// own), the same for every rig and clip format.
    Procedural,
    /// `shaders/sample_positions.wgsl` after `shared/types.wgsl` and `shared/clip_header.wgsl`,
    /// entry point `sample_positions_main`: each sample's frame coordinate, resolved before the
    /// frame's kernels read it. It binds a group of its own past the archetype's, and reads
    /// only clip headers: the same for every rig and clip format.
    SamplePositions,
}

impl ShaderModuleKind {
    /// Every module.
    pub const ALL: [Self; 11] = [
        Self::SamplePositions,
        Self::Sample,
        Self::LocalToModel,
        Self::Skinning,
        Self::Frame,
        Self::Transition,
        Self::Layers,
        Self::FrameLayers,
        Self::FrameLevels,
        Self::FrameLayersLevels,
        Self::Procedural,
    ];

    /// The compute entry point.
    #[must_use]
    pub const fn entry_point(self) -> &'static str {
        match self {
            Self::Sample => "sample_main",
            Self::LocalToModel => "local_to_model_main",
            Self::Skinning => "skinning_main",
            Self::Frame => "frame_main",
            Self::Transition => "transition_main",
            Self::Layers => "layers_main",
            Self::FrameLayers => "frame_layers_main",
            Self::FrameLevels => "frame_levels_main",
            Self::FrameLayersLevels => "frame_layers_levels_main",
            Self::Procedural => "procedural_main",
            Self::SamplePositions => "sample_positions_main",
        }
    }

    /// Whether the module is specialised per rig size and clip format ([`shader_source`]'s
    /// `num_joints` and `compact_clips`): every module but [`Procedural`](Self::Procedural) and
    /// [`SamplePositions`](Self::SamplePositions).
    #[must_use]
    pub const fn specialised(self) -> bool {
        !matches!(self, Self::Procedural | Self::SamplePositions)
    }

    const fn stage_sources(self) -> &'static [&'static str] {
        match self {
            Self::Sample => &[SAMPLE],
            Self::LocalToModel => &[LOCAL_TO_MODEL],
            Self::Skinning => &[SKINNING],
            Self::Frame => &[SAMPLE, LOCAL_TO_MODEL, SKINNING, WALKS, FRAME],
            Self::Transition => &[SAMPLE, TRANSITION],
            Self::Layers => &[SAMPLE, LOCAL_TO_MODEL, TRANSITION, LAYERS, WALKS_MESH],
            Self::FrameLayers => {
                &[SAMPLE, LOCAL_TO_MODEL, SKINNING, TRANSITION, LAYERS, WALKS, WALKS_MESH, FRAME_LAYERS]
            }
            Self::FrameLevels => &[SAMPLE, SKINNING, LEVELS, FRAME_LEVELS],
            // `layers.wgsl` needs `local_to_model.wgsl`'s `pose`, which this entry point never
            // touches (the driver keeps only what the entry point uses).
            Self::FrameLayersLevels => {
                &[SAMPLE, LOCAL_TO_MODEL, SKINNING, TRANSITION, LAYERS, WALKS_MESH, LEVELS, FRAME_LAYERS_LEVELS]
            }
            Self::Procedural => &[TRIG, PROCEDURAL],
            Self::SamplePositions => &[TYPES, CLIP_HEADER, SAMPLE_POSITIONS],
        }
    }
}

/// Which of the measurement gates of `shaders/transition.wgsl` (`SWITCH_CODE`, `DECAY_CODE`,
/// `REPLAY_DISPLAYED_POSES`, all `true` in production) a layered frame kernel is compiled with:
/// the production kernel without code a frame of a given kind does not run, so that the
/// difference of the two kernels' static instruction counts measures that code
/// (`gpu::work_model::KernelCosts::from_frame_layers_loops`, [`crate::gpu::stats`]), and so that
/// a device run can time what that code costs a frame that does not run it
/// ([`crate::gpu::GpuCrowdOptions::specialisation`]: a crowd so built refuses the frames its
/// kernel cannot evaluate); or, [`Stored`](Self::Stored), the production kernel with its
/// displayed poses stored rather than replayed, and [`Whole`](Self::Whole), every character in
/// the production kernel, variants that evaluate every frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Specialisation {
    /// Every gate on: the kernel the evaluator builds. A crowd so built runs the layered frame
    /// in two passes over its characters: those whose frame runs no switch code
    /// ([`SWITCH_FLAGS`](Self::SWITCH_FLAGS)) in the [`Steady`](Self::Steady) kernel, the others
    /// (if any) in this one (`docs/gpu.md`, "The steady pass").
    #[default]
    Production,
    /// `SWITCH_CODE` off: a frame where no layer switches (no snapshot taken, no step-back
    /// blend, no capture).
    Steady,
    /// `SWITCH_CODE` and `DECAY_CODE` off: a frame where no layer switches and no offset decays.
    Settled,
    /// `REPLAY_DISPLAYED_POSES` off: every frame stores each layer's displayed pose (32 bytes a
    /// joint) rather than its replay entry, and no switch replays anything — the kernel before
    /// replay entries, for a device run to weigh the bytes the replay saves against the
    /// instructions it costs. Evaluates every frame, the same matrices to within rounding (bit
    /// for bit on lavapipe).
    Stored,
    /// Every gate on, and every character in the one kernel whether its frame switches or not:
    /// the layered frame as it ran before the steady pass, for a device run to weigh the steady
    /// kernel's smaller code and registers against the second pass's dispatch. The same
    /// matrices (bit for bit on lavapipe).
    Whole,
}

/// The gate lines of `shaders/transition.wgsl` that [`Specialisation`]s rewrite.
const SWITCH_CODE_LINE: &str = "const SWITCH_CODE: bool = true;";
const DECAY_CODE_LINE: &str = "const DECAY_CODE: bool = true;";
const REPLAY_LINE: &str = "const REPLAY_DISPLAYED_POSES: bool = true;";

impl Specialisation {
    /// Every specialisation, production first.
    pub const ALL: [Self; 5] = [Self::Production, Self::Steady, Self::Settled, Self::Stored, Self::Whole];

    /// The program flags whose frame runs the switch frame's code in a layer that keeps memory:
    /// a switch, and a fade from a frozen snapshot (whose first frame shown takes the
    /// snapshot). A crowd built with [`Steady`](Self::Steady) or [`Settled`](Self::Settled)
    /// refuses a frame in which such a layer's program (or state record) carries either.
    pub const SWITCH_FLAGS: u32 = LayerProgram::SWITCHED | LayerProgram::SOURCE_SNAPSHOT;

    /// Whether a layer's program with `flags` runs the switch frame's code this frame, the layer
    /// keeping memory where `needs_memory` ([`SWITCH_FLAGS`](Self::SWITCH_FLAGS)): what
    /// `runs_switch_code` in `shaders/transition.wgsl` asks of each layer to put a character in
    /// the switching pass, and what the specialisations without switch code refuse.
    pub(crate) const fn runs_switch_code(needs_memory: bool, flags: u32) -> bool {
        needs_memory && flags & Self::SWITCH_FLAGS != 0
    }

    /// The name [`Kernel::name`](crate::gpu::stats::Kernel::name) appends (empty for production).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Production => "",
            Self::Steady => "steady",
            Self::Settled => "settled",
            Self::Stored => "stored",
            Self::Whole => "whole",
        }
    }

    /// Whether a crowd built with this specialisation refuses frames that switch
    /// ([`SWITCH_FLAGS`](Self::SWITCH_FLAGS)): [`Steady`](Self::Steady) and
    /// [`Settled`](Self::Settled), whose kernels lack the switch frame's code.
    #[must_use]
    pub const fn refuses_switches(self) -> bool {
        matches!(self, Self::Steady | Self::Settled)
    }

    /// The gate lines this specialisation turns off.
    pub(crate) fn gates(self) -> &'static [&'static str] {
        match self {
            Self::Production | Self::Whole => &[],
            Self::Steady => &[SWITCH_CODE_LINE],
            Self::Settled => &[SWITCH_CODE_LINE, DECAY_CODE_LINE],
            Self::Stored => &[REPLAY_LINE],
        }
    }

    /// `source` with this specialisation's gates off, or `None` where a gate's line is missing
    /// (the module holds no transition, or the line changed).
    pub(crate) fn apply(self, source: String) -> Option<String> {
        self.gates().iter().try_fold(source, |source, &line| gate_off(&source, line))
    }
}

/// The characters a layered frame kernel evaluates (`SHAPE_PASS` in `shaders/transition.wgsl`).
/// A production crowd ([`Specialisation::Production`]) dispatches its layered frame twice over
/// the same characters: [`Steady`](Self::Steady), the [`Specialisation::Steady`] kernel (no switch
/// frame's code: on RADV navi21 `Fused`'s 48 VGPRs against 64 and `Levels`' 64 against 72, about
/// half the code) for the characters whose
/// frame runs no switch code, then [`Switching`](Self::Switching), the production kernel for the
/// others. Each workgroup reads its characters' programs to tell which
/// pass is theirs; a character runs in one, and its matrices are the production kernel's (the
/// same arithmetic; bit for bit on lavapipe). [`crate::gpu::stats::Kernel::passes_for_rig`]
/// lists the two kernels for the driver's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShapePass {
    /// Every character (every specialisation but production).
    #[default]
    Every,
    /// The characters whose frame runs no switch code.
    Steady,
    /// The characters whose frame does: a layer with memory switches or fades from a frozen
    /// snapshot ([`Specialisation::SWITCH_FLAGS`]).
    Switching,
}

/// The line of `shaders/transition.wgsl` that [`ShapePass`] rewrites.
const SHAPE_PASS_LINE: &str = "const SHAPE_PASS: u32 = 0u;";

impl ShapePass {
    /// The production crowd's two passes, in dispatch order.
    pub const PASSES: [Self; 2] = [Self::Steady, Self::Switching];

    /// The gates the pass's kernel is compiled with: the steady kernel's for the steady pass,
    /// production's otherwise.
    #[must_use]
    pub const fn specialisation(self) -> Specialisation {
        match self {
            Self::Steady => Specialisation::Steady,
            Self::Every | Self::Switching => Specialisation::Production,
        }
    }

    /// A short name, for [`crate::gpu::stats::Kernel::name`].
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Every => "every",
            Self::Steady => "steady",
            Self::Switching => "switching",
        }
    }

    /// `source` (a layered frame module) evaluating this pass's characters, or `None` where the
    /// module lacks the line.
    pub(crate) fn apply(self, source: String) -> Option<String> {
        let code = match self {
            Self::Every => return Some(source),
            Self::Steady => 1,
            Self::Switching => 2,
        };
        source.contains(SHAPE_PASS_LINE).then(|| with_u32(&source, SHAPE_PASS_LINE, code))
    }
}

/// How [`FrameKernel::Fused`]'s frames compose the rig's hierarchy: local-to-model before
/// skinning, and the mesh-space override's model rotations. `Walks` and `Subgroup` take the same
/// products in the same order, so the same matrices (bit for bit on lavapipe, within the GPU
/// tolerance where a driver fuses the two kernels' multiply-adds differently); `Doubling` groups
/// the products differently (the CPU's matrices within rounding). Different shapes
/// of work, for a device run to weigh (`scripts/gpu-bench.sh`'s `fused+subgroup` and
/// `fused+doubling` rows). [`FrameKernel::Levels`] composes band by band whatever this says.
///
/// `Walks` has each thread compose its joints' chains from the root (`shaders/shared/walks.wgsl`,
/// `walks_mesh.wgsl`): no barrier, but every wave steps as deep as its deepest joint, and on a
/// 32-lane subgroup a 64-joint character is two waves that each walk the whole depth.
/// `Subgroup` has the subgroup holding thread 0 take the depths one after another, a lane a
/// joint of the depth, each parent's result passed by a shuffle (`shaders/shared/subgroup.wgsl`,
/// `subgroup_mesh.wgsl`): one step per depth for the whole character on one wave, the others
/// waiting at the barrier after it. The work model counts the 64-joint humanoid's layered frame
/// on warp32 at fewer wave-instructions this way (BENCHMARKS.md "The hierarchy in one
/// subgroup"); whether an NVIDIA GPU runs it faster waits for a device. `Doubling` composes
/// both halves by pointer doubling (`shaders/shared/doubling.wgsl`, `doubling_mesh.wgsl`): every
/// thread takes its joints through ⌈log₂(depth + 1)⌉ rounds, in each a joint's matrix (or its
/// layer and base model rotations) composed with the one its ancestor `span` depths up holds,
/// `span` doubling, two barriers a round but local-to-model's last (the 64-joint humanoid: 4
/// rounds where a wave walks 14 steps), unrolled for the rig's rounds (BENCHMARKS.md
/// "Local-to-model by pointer doubling", "Mesh-space blends that do not compound", "Doubling
/// rounds unrolled for the rig").
///
/// A crowd asks for one ([`crate::gpu::GpuCrowdOptions::hierarchy`]) and runs what
/// [`fits`](Self::fits) the device and rig ([`crate::gpu::GpuCrowd::hierarchy`] says which):
/// `Subgroup` needs wgpu's `SUBGROUP` feature (which [`crate::gpu::GpuContext`] enables where
/// the adapter has it), subgroups smaller than the 64-thread workgroup (where one subgroup holds
/// the whole character, walks already take one step per depth) and each of the rig's depths
/// within the smallest subgroup, and where the device, asked at the crowd's creation, splits a
/// workgroup into full subgroups (a wait on the device); elsewhere the crowd walks. `Doubling`
/// runs wherever the kernel
/// is [`FrameKernel::Fused`]. The default is `Doubling`, the variant the proxies favour (issue
/// #17's rule until a device run has timed the hierarchies: the work model counts the 64-joint
/// humanoid's layered frame at 1,943 wave-instructions on wave64 against the walks' 3,251,
/// BENCHMARKS.md "Doubling rounds unrolled for the rig"); `THRONG_HIERARCHY=walks` (or
/// `subgroup`, `doubling`) in the environment overrides it, as `THRONG_FRAME_KERNEL` does the
/// kernel's.
///
/// ```
/// use throng::demo::DemoCharacter;
/// use throng::gpu::types::GpuRigJoint;
/// use throng::gpu::{FrameKernel, Hierarchy};
/// let humanoid = GpuRigJoint::from_rig(&DemoCharacter::humanoid_64().rig);
/// assert_eq!(humanoid.widest_depth(), 10);
/// let subgroup = wgpu::Features::SUBGROUP;
/// // An NVIDIA GPU's 32-lane subgroups: two of them hold a 64-joint character.
/// assert_eq!(Hierarchy::Subgroup.fits(FrameKernel::Fused, &humanoid, subgroup, [32, 32]), Hierarchy::Subgroup);
/// // Without the feature, on AMD's 64-lane waves, or where a depth is wider than a subgroup or
/// // one subgroup holds the whole character (26 joints): walks.
/// assert_eq!(Hierarchy::Subgroup.fits(FrameKernel::Fused, &humanoid, wgpu::Features::empty(), [32, 32]), Hierarchy::Walks);
/// assert_eq!(Hierarchy::Subgroup.fits(FrameKernel::Fused, &humanoid, subgroup, [32, 64]), Hierarchy::Walks);
/// assert_eq!(Hierarchy::Subgroup.fits(FrameKernel::Fused, &humanoid, subgroup, [8, 8]), Hierarchy::Walks);
/// let small = GpuRigJoint::from_rig(&DemoCharacter::humanoid().rig);
/// assert_eq!(Hierarchy::Subgroup.fits(FrameKernel::Fused, &small, subgroup, [32, 32]), Hierarchy::Walks);
/// // Doubling needs no subgroup; the level kernels compose band by band.
/// assert_eq!(Hierarchy::Doubling.fits(FrameKernel::Fused, &small, wgpu::Features::empty(), [0, 0]), Hierarchy::Doubling);
/// assert_eq!(Hierarchy::Doubling.fits(FrameKernel::Levels, &small, subgroup, [32, 32]), Hierarchy::Walks);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hierarchy {
    /// Each thread walks its joints' ancestors from the root.
    Walks,
    /// Depth by depth in one subgroup, parents' results passed by shuffles.
    Subgroup,
    /// By pointer doubling, a round per power of two of the depth.
    Doubling,
}

impl Default for Hierarchy {
    fn default() -> Self {
        static WARNED: std::sync::Once = std::sync::Once::new();
        chosen_in_env("THRONG_HIERARCHY", Self::Doubling, &Self::ALL, Self::name, &WARNED)
    }
}

impl Hierarchy {
    /// Every one, walks first.
    pub const ALL: [Self; 3] = [Self::Walks, Self::Subgroup, Self::Doubling];

    /// `walks`, `subgroup` or `doubling`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Walks => "walks",
            Self::Subgroup => "subgroup",
            Self::Doubling => "doubling",
        }
    }

    /// Whether its kernels use subgroup operations: where they cannot run,
    /// [`fits`](Self::fits) says what does.
    #[must_use]
    pub const fn uses_subgroups(self) -> bool {
        matches!(self, Self::Subgroup)
    }

    /// The hierarchy named `name` ([`name`](Self::name)), if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }

    /// What a crowd asking for this hierarchy runs with `kernel` for `rig`, on a device with
    /// `features` whose subgroups hold from `subgroup_sizes[0]` to `subgroup_sizes[1]` lanes
    /// (`wgpu::AdapterInfo::subgroup_min_size`, `subgroup_max_size`): `Subgroup` where it was
    /// asked for, the kernel is [`FrameKernel::Fused`], the device has `SUBGROUP`, its largest
    /// subgroup is smaller than the workgroup but not the rig (where one subgroup holds every
    /// joint, the walks already take one step a depth, with less code), and the rig's widest
    /// depth fits in its smallest; `Doubling` where it was asked for and the kernel is
    /// [`FrameKernel::Fused`]; `Walks` otherwise.
    #[must_use]
    pub fn fits(
        self,
        kernel: FrameKernel,
        rig: &crate::gpu::types::GpuRigTables,
        features: wgpu::Features,
        subgroup_sizes: [u32; 2],
    ) -> Self {
        // Without subgroups, no size composes.
        let sizes = if features.contains(wgpu::Features::SUBGROUP) { subgroup_sizes } else { [0, 0] };
        self.fits_subgroups(kernel, rig.joints.len(), rig.widest_depth(), sizes)
    }

    /// [`fits`](Self::fits) on a device with subgroups (where they matter), for a rig of
    /// `num_joints` whose widest depth holds `widest_depth` joints: the rule the work model
    /// follows too (`WorkModel::hierarchy`, its waves the subgroups).
    pub(crate) fn fits_subgroups(
        self,
        kernel: FrameKernel,
        num_joints: usize,
        widest_depth: u32,
        subgroup_sizes: [u32; 2],
    ) -> Self {
        let [smallest, largest] = subgroup_sizes;
        let composes = (1..WORKGROUP_SIZE).contains(&largest)
            && num_joints > largest as usize
            && (1..=smallest).contains(&widest_depth);
        match self {
            _ if kernel != FrameKernel::Fused => Self::Walks,
            Self::Subgroup if !composes => Self::Walks,
            other => other,
        }
    }

    /// `source` (a module of `shaders/`) with this hierarchy's files in place of the walks', or
    /// `None` for the others where the module's frame does not compose with
    /// `shared/walks.wgsl` (the fused frames do; the stages alone and the level kernels walk).
    /// The subgroup files' helpers (`shared/subgroup_depths.wgsl`) go before them,
    /// and the skinning from a pose composed in place (`shared/composed_pose.wgsl`) after the
    /// file that composes it. Pointer doubling's kernels are built for a rig composed in
    /// `doubling_rounds` rounds ([`GpuRigTables::doubling_rounds`](crate::gpu::types::GpuRigTables::doubling_rounds),
    /// `DOUBLING_ROUNDS`; `None` past the 8 a rig of [`crate::MAX_JOINTS`] can take), with its
    /// two identity rows in the workgroup's `pose` (`POSE_ROWS`).
    pub(crate) fn apply(self, source: String, doubling_rounds: u32) -> Option<String> {
        let with_depths = |file: &str| format!("{SUBGROUP_DEPTHS}\n{file}");
        let composed_by = |file: &str| format!("{file}\n{COMPOSED_POSE}");
        match self {
            Self::Walks => Some(source),
            _ if !source.contains(WALKS) => None,
            Self::Subgroup => Some(source.replacen(WALKS, &with_depths(&composed_by(SUBGROUP)), 1).replacen(
                WALKS_MESH,
                SUBGROUP_MESH,
                1,
            )),
            Self::Doubling => {
                let source = source.replacen(WALKS, &composed_by(DOUBLING), 1).replacen(WALKS_MESH, DOUBLING_MESH, 1);
                // Without its identity rows the rounds would index past `pose`; past the table's
                // rounds, past each joint's words.
                let fits = doubling_rounds <= 2 * crate::gpu::types::DOUBLING_WORDS as u32;
                (fits && source.contains(DOUBLING_ROUNDS_LINE) && source.contains(POSE_ROWS_LINE)).then(|| {
                    with_u32(&source, DOUBLING_ROUNDS_LINE, doubling_rounds).replacen(
                        POSE_ROWS_LINE,
                        "const POSE_ROWS: u32 = POSE_JOINTS + 2u;",
                        1,
                    )
                })
            }
        }
    }
}

/// `source` with the measurement gate `line` (`const …: bool = true;`) rewritten to `false`, or
/// `None` where the line is missing.
fn gate_off(source: &str, line: &str) -> Option<String> {
    source.contains(line).then(|| source.replacen(line, &line.replacen("true", "false", 1), 1))
}

/// A path of the frame kernels that a layer runs on some frames or some layers only, or a crowd
/// with some output layout only, behind a measurement gate (`shaders/transition.wgsl`,
/// `shaders/layers.wgsl`, `shaders/sample.wgsl`, `shaders/skinning.wgsl`,
/// `shaders/shared/levels.wgsl`; `true` in every kernel the evaluator builds): a
/// [`crate::gpu::stats::Kernel`] whose `without` names one is compiled with it rewritten to `false`, never dispatched, so that the difference
/// of static instruction counts measures the path and the work model
/// (`gpu::work_model::KernelCosts`) charges it only where a wave runs it, not to every layer
/// with the code around it. [`MeasuredPath::BandChains`] is measured the other way round: the
/// model reads the loop bodies of its gated build, what is left when its path is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeasuredPath {
    /// The root's horizontal travel and yaw removed (`remove_root_motion`): the base layer's
    /// root, where its program carries `LayerProgram::ROOT_MOTION`.
    RootMotion,
    /// A fade from a frozen snapshot mixed with it (`snapshot_joint`): a layer with memory whose
    /// program carries `LayerProgram::SOURCE_SNAPSHOT`.
    SnapshotMix,
    /// An additive layer's delta applied (`additive_joint`).
    Additive,
    /// A local-space override layer's slerp (`override_local_joint`).
    OverrideLocal,
    /// A mesh-space override layer's combine (`override_mesh`, `override_mesh_levels`): its
    /// rows into workgroup memory, its walks or bands, each joint's new local transform. A
    /// path with loops of its own: the work model takes them out of its measurement.
    MeshOverride,
    /// The mesh-space override's roots (depth 0) in the level kernels, composed outside its
    /// band loop by the waves holding them (`override_mesh_levels`); within
    /// [`MeasuredPath::MeshOverride`]'s measurement. The fused kernel walks from the roots
    /// instead: its measurement is 0.
    MeshRoots,
    /// A blend of one sample sampled outside the clip loop (`sample_blend_joint_over`,
    /// `table_blend_joint`): a layer whose blend has one sample.
    SingleSample,
    /// A sample's per-sample values computed in a level kernel's clip loop past the entries its
    /// sample table holds (`table_entry`): a blend with more samples than a character has lanes.
    /// The fused kernel has no table: its measurement is 0.
    TableMiss,
    /// A displayed pose stored whole in the level kernels (`transition_levels`), where its
    /// replay entry cannot replay it: a frame that shows more samples than an entry holds, or
    /// a crowd that stores every displayed pose; in the fused kernels `transition_layer`'s.
    StorePose,
    /// A layer with memory's transition, every wave of such a layer. In the level kernels
    /// (`transition_levels`): its state read, its two barriers, the end its slot's thread
    /// publishes read back, and the slots' end (a loop, which the work model takes out of the
    /// measurement). In the fused kernels (`transition_layer`): its state read and end, its
    /// barrier before the state's store (the two around a capture's reductions are switch code,
    /// which the settled kernel compiles out), and the replay entry's store (a loop, taken out likewise). Within it
    /// [`MeasuredPath::SnapshotMix`]'s and [`MeasuredPath::StorePose`]'s. The
    /// capture's and the decay's code are not in it: the settled kernel, where it is measured,
    /// compiles them out (they are the `switch` and `decay` regions). A layer without memory
    /// skips it.
    Transition,
    /// An offset decayed by Bollo's overshoot-free quintic (`apply_offset`, `MODE_QUINTIC_OVERSHOOT`,
    /// each component's own duration): a layer whose offset decays after a switch by
    /// [`SwitchMode::InertializeQuinticOvershootControl`](crate::program::SwitchMode). Measured
    /// in the [`Specialisation::Steady`] kernel, whose decay code is on
    /// ([`MeasuredPath::specialisation`]).
    Overshoot,
    /// The skinning matrices stored as affine 3×4 rows (`write_skinning`): a crowd whose output
    /// layout is [`OutputLayout::Affine3x4`](crate::program::OutputLayout), every wave that
    /// writes joints. The mat4 store, the other side of the branch, stays in the code every
    /// wave runs.
    AffineOutput,
    /// A band's chain work in the level kernels' hierarchy passes (`model_levels`,
    /// `override_mesh_levels`): the chain's item read and its depth loop, which a wave holding
    /// none of the band's chains branches over. With it off, a stand-in store takes the work's
    /// place (so that the test and the skip stay), and each band loop's body is what such a wave
    /// runs and that store, which it skips: the work model's `model_idle`, `mesh_idle`, three
    /// or four instructions high. Not in [`MeasuredPath::ALL`]: the level kernels alone have it,
    /// and its measurement is their gated builds' loop bodies, not a count's difference.
    BandChains,
    /// The fused layered frame's replay before the layers (`frame_layers_main`): the check for
    /// a switching layer and the replay's loops, which only a kernel with the switch frame's
    /// code holds (measured in the production kernel, [`MeasuredPath::specialisation`]). The
    /// level kernels replay within a switching layer's own iteration: their measurement is 0.
    Replay,
}

impl MeasuredPath {
    /// Every path measured by its count's difference, in the order of the work model's recorded
    /// measurements ([`MeasuredPath::BandChains`] is read otherwise).
    pub const ALL: [Self; 13] = [
        Self::RootMotion,
        Self::SnapshotMix,
        Self::Additive,
        Self::OverrideLocal,
        Self::SingleSample,
        Self::TableMiss,
        Self::MeshOverride,
        Self::MeshRoots,
        Self::StorePose,
        Self::Transition,
        Self::Overshoot,
        Self::AffineOutput,
        Self::Replay,
    ];

    /// The specialisation whose static count the path's is taken from: the settled kernel, but
    /// for [`MeasuredPath::Overshoot`], which lies in the decay code the settled kernel leaves
    /// out, the steady one, and for [`MeasuredPath::Replay`], which lies in the switch frame's
    /// code, the production one.
    #[must_use]
    pub const fn specialisation(self) -> Specialisation {
        match self {
            Self::Overshoot => Specialisation::Steady,
            Self::Replay => Specialisation::Production,
            _ => Specialisation::Settled,
        }
    }

    /// The name [`crate::gpu::stats::Kernel::name`] appends, after a `-`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::RootMotion => "root_motion",
            Self::SnapshotMix => "snapshot_mix",
            Self::Additive => "additive",
            Self::OverrideLocal => "override_local",
            Self::SingleSample => "single_sample",
            Self::TableMiss => "table_miss",
            Self::MeshOverride => "mesh_override",
            Self::MeshRoots => "mesh_roots",
            Self::StorePose => "store_pose",
            Self::Transition => "transition",
            Self::Overshoot => "overshoot",
            Self::AffineOutput => "affine_output",
            Self::BandChains => "band_chains",
            Self::Replay => "replay",
        }
    }

    /// The gate's line.
    const fn gate(self) -> &'static str {
        match self {
            Self::RootMotion => "const ROOT_MOTION_CODE: bool = true;",
            Self::SnapshotMix => "const SNAPSHOT_MIX_CODE: bool = true;",
            Self::Additive => "const ADDITIVE_CODE: bool = true;",
            Self::OverrideLocal => "const OVERRIDE_LOCAL_CODE: bool = true;",
            Self::SingleSample => "const SINGLE_SAMPLE_CODE: bool = true;",
            Self::TableMiss => "const TABLE_MISS_CODE: bool = true;",
            Self::MeshOverride => "const MESH_OVERRIDE_CODE: bool = true;",
            Self::MeshRoots => "const MESH_ROOTS_CODE: bool = true;",
            Self::StorePose => "const STORE_POSE_CODE: bool = true;",
            Self::Transition => "const TRANSITION_CODE: bool = true;",
            Self::Overshoot => "const OVERSHOOT_CODE: bool = true;",
            Self::AffineOutput => "const AFFINE_OUTPUT_CODE: bool = true;",
            Self::BandChains => "const BAND_CHAINS_CODE: bool = true;",
            Self::Replay => "const REPLAY_CODE: bool = true;",
        }
    }

    /// `source` with this path's gate off, or `None` where the gate's line is missing.
    pub(crate) fn apply(self, source: &str) -> Option<String> {
        gate_off(source, self.gate())
    }
}

/// `source` with the line `line` (`const NAME: u32 = …u;`, one a crowd's kernels are built to
/// rewrite) holding `value` instead, as it displays (`{:#x}` for hex).
fn with_u32(source: &str, line: &str, value: impl std::fmt::Display) -> String {
    let name = line.split_once(':').map_or(line, |(name, _)| name);
    source.replacen(line, &format!("{name}: u32 = {value}u;"), 1)
}

/// The line of `shaders/shared/compact.wgsl` that [`shader_source`] rewrites for an archetype
/// without compact clips.
const COMPACT_CLIPS_LINE: &str = "const COMPACT_CLIPS: bool = true;";
/// The line of `shaders/shared/types.wgsl` that [`shader_source`] rewrites for each rig.
const JOINTS_PER_THREAD_LINE: &str = "const JOINTS_PER_THREAD: u32 = 4u;";

/// The line of `shaders/shared/types.wgsl` that [`shader_source`] rewrites for each rig.
const NUM_JOINTS_LINE: &str = "const NUM_JOINTS: u32 = 256u;";
/// The rounds line of `shaders/shared/doubling.wgsl` and the pose rows line of
/// `shaders/shared/types.wgsl`, which [`Hierarchy::apply`] rewrites for pointer doubling.
const DOUBLING_ROUNDS_LINE: &str = "const DOUBLING_ROUNDS: u32 = 8u;";
const POSE_ROWS_LINE: &str = "const POSE_ROWS: u32 = POSE_JOINTS;";
/// The line of `shaders/shared/levels.wgsl` that [`shader_source`] rewrites for each rig.
const LANES_LINE: &str = "const LANES: u32 = 64u;";

/// Joints each thread of a workgroup evaluates for a rig of `num_joints` (1 to 4).
#[must_use]
pub fn joints_per_thread(num_joints: usize) -> u32 {
    num_joints.div_ceil(WORKGROUP_SIZE as usize).clamp(1, MAX_JOINTS.div_ceil(WORKGROUP_SIZE as usize)) as u32
}

/// The WGSL source of `kind` for a rig of `num_joints`. WGSL has no `#include`, so each module
/// is the shared files followed by its stage files, concatenated in dependency order;
/// declaration order does not matter to WGSL, but this order keeps naga's error line numbers
/// readable (shared first). `NUM_JOINTS` becomes `num_joints`, and `JOINTS_PER_THREAD`
/// `joints_per_thread(num_joints)`:
/// private arrays sized for the rig stay in registers, where arrays sized for the largest rig
/// would spill to local memory on most GPUs; the level kernels' `LANES` becomes
/// [`crate::gpu::types::level_lanes`]`(num_joints)`. Without `compact_clips` the compact clips' decoding
/// is compiled out: an archetype whose clips are all full never takes it, and a software
/// rasteriser such as llvmpipe would otherwise run it masked (twice the frame's time there).
/// [`ShaderModuleKind::Procedural`] is `shared/trig.wgsl` and its own file unchanged, whatever
/// the rig and clips. `MEMORY_LAYERS` stays every layer, which a crowd's kernels replace with
/// its own ([`memory_layers`]): as written the checks read sixteen programs a character, past
/// the last character's where the module is built with bounds checks, as every throng kernel
/// is. The layered fused frame keeps its loop over the layers, which a crowd's kernel unrolls
/// for its stack ([`layer_stack`]).
#[must_use]
pub fn shader_source(kind: ShaderModuleKind, num_joints: usize, compact_clips: bool) -> String {
    if !kind.specialised() {
        return kind.stage_sources().concat();
    }
    let parts = SHARED.iter().chain(kind.stage_sources());
    let mut source = String::with_capacity(parts.clone().map(|p| p.len() + 1).sum());
    for part in parts {
        source.push_str(part);
        source.push('\n');
    }
    let source = with_u32(&source, JOINTS_PER_THREAD_LINE, joints_per_thread(num_joints));
    let source = with_u32(&source, NUM_JOINTS_LINE, num_joints);
    let source = with_u32(&source, LANES_LINE, level_lanes(num_joints));
    if compact_clips { source } else { source.replacen(COMPACT_CLIPS_LINE, "const COMPACT_CLIPS: bool = false;", 1) }
}

/// [`shader_source`] with `specialisation`'s gates off, or `None` where the module lacks one (a
/// module without a transition: only the layered frames hold the gates).
#[must_use]
pub fn specialised_source(
    kind: ShaderModuleKind,
    num_joints: usize,
    compact_clips: bool,
    specialisation: Specialisation,
) -> Option<String> {
    specialisation.apply(shader_source(kind, num_joints, compact_clips))
}

/// The layers of a crowd's stack that keep memory ([`LayerSetup::needs_memory`]), a bit a layer
/// index: what `MEMORY_LAYERS` in `shaders/transition.wgsl` becomes in the crowd's kernels, so
/// that their checks of a character's frame (which shape pass is its, whether it replays) read
/// only those layers' programs. A stack holds at most [`crate::program::MAX_LAYERS`] layers
/// ([`crate::program::validate_layer_setups`]), so every bit fits.
///
/// ```
/// use throng::program::LayerSetup;
/// let forgetful = LayerSetup { needs_memory: false, ..LayerSetup::default() };
/// let stack = [LayerSetup::default(), forgetful, LayerSetup::default()];
/// assert_eq!(throng::gpu::memory_layers(&stack), 0b101);
/// ```
#[must_use]
pub fn memory_layers(layers: &[LayerSetup]) -> u32 {
    stack_memory_layers(&layer_stack(layers))
}

/// [`memory_layers`] of a stack as its kernels see it ([`layer_stack`]): the layers whose setup
/// names a memory slot.
fn stack_memory_layers(stack: &[GpuLayerSetup]) -> u32 {
    const { assert!(crate::program::MAX_LAYERS <= u32::BITS as usize, "a bit a layer") };
    stack
        .iter()
        .filter(|s| s.memory != NO_MEMORY && (s.layer as usize) < crate::program::MAX_LAYERS)
        .fold(0, |mask, s| mask | 1 << s.layer)
}

/// The line of `shaders/transition.wgsl` that [`memory_layers`] rewrites.
const MEMORY_LAYERS_LINE: &str = "const MEMORY_LAYERS: u32 = 0xffffu;";

/// A crowd's layer stack as its kernels see it: each layer's [`GpuLayerSetup`] in evaluation
/// order (base, additive layers, override layers), its mask's first weight where the layer
/// table (`throng.rig_tables`) holds it after the setups, and its memory slot (the layers that
/// keep memory counted in layer order, as `EvalContext::for_layers` does). The start of the
/// layer table, and the setups a crowd's layered fused frame is compiled with (its loop over
/// the layers unrolled, a call a layer with the layer's setup as constants).
///
/// ```
/// use throng::gpu::layer_stack;
/// use throng::gpu::types::{BLEND_ADDITIVE, NO_MASK, NO_MEMORY};
/// use throng::program::{LayerBlend, LayerSetup};
/// let additive = LayerSetup { blend: LayerBlend::Additive, needs_memory: false, ..LayerSetup::default() };
/// let stack = layer_stack(&[LayerSetup::default(), LayerSetup::default(), additive]);
/// // Evaluation order: the base, the additive layer, then the override.
/// assert_eq!(stack.iter().map(|s| s.layer).collect::<Vec<_>>(), [0, 2, 1]);
/// assert_eq!((stack[1].blend, stack[1].mask_start, stack[1].memory), (BLEND_ADDITIVE, NO_MASK, NO_MEMORY));
/// assert_eq!(stack[2].memory, 1);
/// ```
#[must_use]
pub fn layer_stack(layers: &[LayerSetup]) -> Vec<GpuLayerSetup> {
    stack_and_masks(layers).0
}

/// The layer table, the start of `throng.rig_tables` (`shaders/shared/bindings.wgsl`): the
/// stack's setups ([`layer_stack`]), then the masks' weights as f32 bits, one per joint, in
/// evaluation order, where the setups' `mask_start` say.
pub(crate) fn layer_table(layers: &[LayerSetup]) -> Vec<u32> {
    let (setups, masks) = stack_and_masks(layers);
    let mut table: Vec<u32> = bytemuck::cast_slice(&setups).to_vec();
    table.extend(masks);
    table
}

/// [`layer_stack`]'s setups and the masks' weights that follow them in the layer table, laid out
/// in one walk of the evaluation order.
fn stack_and_masks(layers: &[LayerSetup]) -> (Vec<GpuLayerSetup>, Vec<u32>) {
    let slots: Vec<Option<usize>> = memory_slots(layers).collect();
    let masks_start = size_of::<GpuLayerSetup>() / 4 * layers.len();
    let mut masks = Vec::new();
    let setups = evaluation_order(layers)
        .into_iter()
        .map(|l| {
            let setup = &layers[l];
            let mask_start = setup.mask.as_ref().map_or(NO_MASK, |mask| {
                // The layer table's entries are few (five words a layer and a weight a masked
                // joint), far inside u32.
                let start = (masks_start + masks.len()) as u32;
                masks.extend(mask.weights().iter().map(|w| w.to_bits()));
                start
            });
            GpuLayerSetup {
                // Layer counts are bounded by the programs a crowd can hold, far inside u32.
                layer: l as u32,
                blend: match setup.blend {
                    LayerBlend::Override => BLEND_OVERRIDE,
                    LayerBlend::Additive => BLEND_ADDITIVE,
                },
                space: match setup.space {
                    LayerSpace::Local => SPACE_LOCAL,
                    LayerSpace::Mesh => SPACE_MESH,
                },
                mask_start,
                memory: slots[l].map_or(NO_MEMORY, |slot| slot as u32),
            }
        })
        .collect();
    (setups, masks)
}

/// The layered frame's loop over the layers (`shaders/frame_layers.wgsl`), which
/// [`unroll_layers`] replaces.
const LAYER_LOOP: &str = "    for (var order = 0u; order < params.num_layers; order++) {
        frame_layer(c, load_setup(order), thread, num_joints);
    }
";

/// `source` of `kind` with the layered frame's loop over the layers unrolled for `stack`: a call
/// a layer, in evaluation order, with its setup written as constants, so that the driver
/// compiles each layer's code for its blend, space, mask and memory alone (the base's without a
/// combine, an additive layer's without an override's, a layer without memory without a
/// transition) rather than one body that asks each of them at run time. Every other module is
/// returned as it is; `None` where the layered fused frame lacks the loop (its text changed),
/// which would otherwise build a kernel that quietly loops again.
fn unroll_layers(kind: ShaderModuleKind, source: String, stack: &[GpuLayerSetup]) -> Option<String> {
    if kind != ShaderModuleKind::FrameLayers {
        return Some(source);
    }
    if !source.contains(LAYER_LOOP) {
        return None;
    }
    let calls: String = stack.iter().map(|s| format!("    {}\n", layer_call(s))).collect();
    Some(source.replacen(LAYER_LOOP, &calls, 1))
}

/// The unrolled call of one layer of the stack, its setup written as constants.
fn layer_call(s: &GpuLayerSetup) -> String {
    format!(
        "frame_layer(c, LayerSetup({}u, {}u, {}u, {:#x}u, {:#x}u), thread, num_joints);",
        s.layer, s.blend, s.space, s.mask_start, s.memory
    )
}

/// [`specialised_source`] evaluating `pass`'s characters ([`ShapePass::apply`]), composing the
/// hierarchy as `hierarchy` says for a rig pointer doubling composes in `doubling_rounds`
/// rounds ([`Hierarchy::apply`]), built for the layer stack `stack`
/// ([`layer_stack`]): the layered fused frame's layers unrolled ([`unroll_layers`]), and the
/// checks reading only the programs of its layers with memory (`MEMORY_LAYERS`; a module
/// without the transition's file has no such line). The source of every pipeline
/// [`crate::gpu::GpuCrowd`] builds and of every kernel `gpu::stats` measures, or `None` where the
/// module lacks a gate, the pass line or the walks' file.
pub(crate) fn pass_source(
    kind: ShaderModuleKind,
    num_joints: usize,
    compact_clips: bool,
    specialisation: Specialisation,
    pass: ShapePass,
    (hierarchy, doubling_rounds): (Hierarchy, u32),
    stack: &[GpuLayerSetup],
) -> Option<String> {
    let memory_layers = stack_memory_layers(stack);
    specialised_source(kind, num_joints, compact_clips, specialisation)
        .and_then(|source| pass.apply(source))
        .and_then(|source| hierarchy.apply(source, doubling_rounds))
        .map(|source| with_u32(&source, MEMORY_LAYERS_LINE, format_args!("{memory_layers:#x}")))
        .and_then(|source| unroll_layers(kind, source, stack))
}

/// The evaluator's bind group layouts (see `shaders/shared/bindings.wgsl`).
pub(crate) struct Layouts {
    /// Group 0: rig joints, clip headers and frames, the layer table and ancestor paths.
    pub archetype: wgpu::BindGroupLayout,
    /// Group 1: chunk parameters, samples, ranges, output window.
    pub chunk: wgpu::BindGroupLayout,
    /// Group 2: local-pose and model-matrix windows of the stage-by-stage path.
    pub stages: wgpu::BindGroupLayout,
    /// Group 3: layer programs, the window of the characters' memory.
    pub layered: wgpu::BindGroupLayout,
    /// The sample-positions stage's group 1 (`shaders/sample_positions.wgsl`): its count and
    /// one binding's window of the samples, which it writes.
    pub positions: wgpu::BindGroupLayout,
}

/// The runtime checks every throng kernel is built with: wgpu's, but for its loop bounding,
/// which [`kernel_module`] turns off.
#[must_use]
pub(crate) fn kernel_runtime_checks() -> wgpu::ShaderRuntimeChecks {
    wgpu::ShaderRuntimeChecks { force_loop_bounding: false, ..wgpu::ShaderRuntimeChecks::checked() }
}

/// A module of `shaders/` built as every throng kernel is: with wgpu's bounds checks and
/// division guards, without its loop bounding.
///
/// wgpu bounds every loop by default (naga counts each one's iterations down from 2⁶⁴), because
/// a driver may treat a loop that never ends as unreachable. The counter costs each iteration a
/// few instructions and, worse, keeps the driver from unrolling the loops over a thread's joints
/// (`JOINTS_PER_THREAD`, 1 for a rig of up to 64 joints): on RADV the layered frame's static
/// count falls by about a tenth without it, a pointer-doubling round by a fifth (BENCHMARKS.md,
/// "Loops that end by their headers").
///
/// Sound because every loop of every kernel ends by its own header whatever the storage buffers
/// hold: a counter that steps by a positive constant towards a bound the loop never changes, as
/// one `&&` term of its condition (a loop stepped by more than 1 is bounded by the joint count
/// the host writes, at most [`MAX_JOINTS`], a count masked to 8 bits, or a constant, so no step
/// wraps). `tests/gpu_portability.rs`
/// (`every_kernel_loop_ends_by_its_header`) reads every loop of `shaders/` and holds them to
/// that form.
pub(crate) fn kernel_module(device: &wgpu::Device, label: &str, source: Cow<'_, str>) -> wgpu::ShaderModule {
    let descriptor = wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(source) };
    // SAFETY: wgpu asks that no loop of the module runs forever; every kernel's loops end by
    // their headers, which `every_kernel_loop_ends_by_its_header` checks of every file the
    // modules are made of. Bounds checks stay on.
    unsafe { device.create_shader_module_trusted(descriptor, kernel_runtime_checks()) }
}

fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    buffer_entry(binding, wgpu::BufferBindingType::Storage { read_only })
}

fn uniform(binding: u32) -> wgpu::BindGroupLayoutEntry {
    buffer_entry(binding, wgpu::BufferBindingType::Uniform)
}

/// A compute stage's buffer at `binding`, of any size.
fn buffer_entry(binding: u32, ty: wgpu::BufferBindingType) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    }
}

impl Layouts {
    fn new(device: &wgpu::Device) -> Self {
        let archetype = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.archetype"),
            entries: &[storage(0, true), storage(1, true), storage(2, true)],
        });
        let chunk = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.chunk"),
            entries: &[uniform(0), storage(1, true), storage(2, true), storage(3, false)],
        });
        let stages = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.stages"),
            entries: &[storage(0, false), storage(1, false)],
        });
        let layered = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.layered"),
            entries: &[storage(0, true), storage(1, false)],
        });
        let positions = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.sample_positions"),
            entries: &[uniform(0), storage(1, false)],
        });
        Self { archetype, chunk, stages, layered, positions }
    }
}

/// The fused frame and, where the crowd has stage buffers, one compute pipeline per stage
/// (stage parity with `shaders/` and [`crate::eval`]).
pub(crate) struct Pipelines {
    pub layouts: Layouts,
    /// Every frame's first: its samples' frame coordinates, which the frames read.
    pub sample_positions: wgpu::ComputePipeline,
    pub frame: wgpu::ComputePipeline,
    /// The stage-by-stage path, for a crowd built with `GpuCrowdOptions::stage_buffers`.
    pub stages: Option<StagePipelines>,
    /// The layered frame's pipelines, for a crowd with layers.
    pub layered: Option<LayeredPipelines>,
}

/// The stages alone, through the stage buffers.
pub(crate) struct StagePipelines {
    pub sample: wgpu::ComputePipeline,
    pub local_to_model: wgpu::ComputePipeline,
    pub skinning: wgpu::ComputePipeline,
}

/// Storage buffers one shader stage binds: the fused frame (the archetype's 3, the chunk's 3);
/// with stage buffers, the stage path (and 2 more); with layers, the layered frame and its
/// transition stage (and the layered group's 2), and with both, the layers stage (10).
/// `wgpu::Limits::default()` (WebGPU's) has 8: everything but the layered stage path fits.
#[must_use]
pub(crate) const fn storage_buffers_needed(layered: bool, stage_buffers: bool) -> u32 {
    6 + if stage_buffers { 2 } else { 0 } + if layered { 2 } else { 0 }
}

/// The layered frame ([`ShaderModuleKind::FrameLayers`]), its transition stage alone and, with
/// stage buffers, its layers stage alone.
pub(crate) struct LayeredPipelines {
    /// The layered frame: its [`ShapePass::Steady`] pass where `frame_layers_switching` is
    /// built, else every character ([`ShapePass::Every`]).
    pub frame_layers: wgpu::ComputePipeline,
    /// The production crowd's [`ShapePass::Switching`] pass, dispatched after `frame_layers`
    /// for the characters a layer of which that keeps memory carries
    /// [`Specialisation::SWITCH_FLAGS`] in its program.
    pub frame_layers_switching: Option<wgpu::ComputePipeline>,
    pub transition: wgpu::ComputePipeline,
    pub layers: Option<wgpu::ComputePipeline>,
}

impl Pipelines {
    /// The pipelines for a rig of `num_joints`, the frames `kernel`'s composing the hierarchy as
    /// `hierarchy` says (the caller has checked [`Hierarchy::fits`]; pointer doubling in the
    /// rig's `doubling_rounds`); the layered frame's too
    /// when `layered` (compiled as `specialisation` says, for the layer stack `stack`:
    /// [`layer_stack`]), the stage path's when `stage_buffers`
    /// (the caller has checked [`storage_buffers_needed`] against the device: a pipeline layout
    /// past the limit is wgpu's validation error).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        num_joints: usize,
        kernel: FrameKernel,
        hierarchy: Hierarchy,
        doubling_rounds: u32,
        layered: bool,
        stage_buffers: bool,
        compact_clips: bool,
        specialisation: Specialisation,
        stack: &[GpuLayerSetup],
    ) -> Self {
        let layouts = Layouts::new(device);
        let frame_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.frame"),
            bind_group_layouts: &[Some(&layouts.archetype), Some(&layouts.chunk)],
            immediate_size: 0,
        });
        let stage_layout = stage_buffers.then(|| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("throng.stages"),
                bind_group_layouts: &[Some(&layouts.archetype), Some(&layouts.chunk), Some(&layouts.stages)],
                immediate_size: 0,
            })
        });
        let build_pass = |kind: ShaderModuleKind,
                          layout: &wgpu::PipelineLayout,
                          label: &str,
                          as_: Specialisation,
                          pass: ShapePass,
                          hierarchy: Hierarchy| {
            // Every layered frame module holds the gates and the pass line, and production and
            // `ShapePass::Every` rewrite nothing (`pass_kernels_rewrite_their_lines`): a module
            // that lost a line must not build as another pass, whose characters would then be
            // evaluated twice. `Hierarchy::fits` has said `Walks` for the level kernels, and
            // the fused frames hold the walks' file.
            let composition = (hierarchy, doubling_rounds);
            let source = pass_source(kind, num_joints, compact_clips, as_, pass, composition, stack).expect(
                "the layered frame modules hold every gate and the shape pass line, the fused frames the walks",
            );
            let module = kernel_module(device, label, Cow::Owned(source));
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: Some(layout),
                module: &module,
                entry_point: Some(kind.entry_point()),
                // Every shader writes the workgroup memory it reads (each joint's pose before the
                // barrier that publishes it; the atomics reset by thread 0 before a barrier), so
                // wgpu's zeroing of it at every workgroup's start is work for nothing.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: false,
                    ..Default::default()
                },
                cache: None,
            })
        };
        let build = |kind: ShaderModuleKind, layout: &wgpu::PipelineLayout, label: &str| {
            build_pass(kind, layout, label, Specialisation::Production, ShapePass::Every, Hierarchy::Walks)
        };
        let layered = layered.then(|| {
            let frame_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("throng.frame_layers"),
                bind_group_layouts: &[Some(&layouts.archetype), Some(&layouts.chunk), None, Some(&layouts.layered)],
                immediate_size: 0,
            });
            let layers = stage_buffers.then(|| {
                let stage_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("throng.layered_stages"),
                    bind_group_layouts: &[
                        Some(&layouts.archetype),
                        Some(&layouts.chunk),
                        Some(&layouts.stages),
                        Some(&layouts.layered),
                    ],
                    immediate_size: 0,
                });
                build(ShaderModuleKind::Layers, &stage_layout, "throng.layers")
            });
            let frame_layers = kernel.frame_layers();
            let (frame_layers, frame_layers_switching) = if specialisation == Specialisation::Production {
                let [steady, switching] = ShapePass::PASSES;
                let pass = |label, pass: ShapePass| {
                    build_pass(frame_layers, &frame_layout, label, pass.specialisation(), pass, hierarchy)
                };
                (pass("throng.frame_layers", steady), Some(pass("throng.frame_layers_switching", switching)))
            } else {
                let label = "throng.frame_layers";
                (build_pass(frame_layers, &frame_layout, label, specialisation, ShapePass::Every, hierarchy), None)
            };
            LayeredPipelines {
                frame_layers,
                frame_layers_switching,
                transition: build(ShaderModuleKind::Transition, &frame_layout, "throng.transition"),
                layers,
            }
        });
        let stages = stage_layout.map(|layout| StagePipelines {
            sample: build(ShaderModuleKind::Sample, &layout, "throng.sample"),
            local_to_model: build(ShaderModuleKind::LocalToModel, &layout, "throng.local_to_model"),
            skinning: build(ShaderModuleKind::Skinning, &layout, "throng.skinning"),
        });
        let frame = build_pass(
            kernel.frame(),
            &frame_layout,
            "throng.frame",
            Specialisation::Production,
            ShapePass::Every,
            hierarchy,
        );
        let positions_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.sample_positions"),
            bind_group_layouts: &[Some(&layouts.archetype), Some(&layouts.positions)],
            immediate_size: 0,
        });
        let sample_positions = build(ShaderModuleKind::SamplePositions, &positions_layout, "throng.sample_positions");
        Self { layered, stages, sample_positions, frame, layouts }
    }
}

/// The blend-space stage's pipeline and its bind group layout (see
/// [`crate::gpu::blend_space`]): built once per graph's table, for any rig.
pub(crate) struct BlendSpacePipeline {
    /// Group 0: the uniform, the table, inputs and requests (read), weights (written).
    pub layout: wgpu::BindGroupLayout,
    /// `blend_space_main`.
    pub blend_space: wgpu::ComputePipeline,
}

impl BlendSpacePipeline {
    pub fn new(device: &wgpu::Device) -> Self {
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.blend_space"),
            entries: &[uniform(0), storage(1, true), storage(2, true), storage(3, true), storage(4, false)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.blend_space"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = kernel_module(device, "throng.blend_space", Cow::Borrowed(BLEND_SPACE));
        let blend_space = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("throng.blend_space"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("blend_space_main"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        Self { layout, blend_space }
    }
}

/// The expand stage's pipeline and its bind group layout (see [`crate::gpu::GpuCrowd::set_frame_records`]):
/// built once per crowd that expands records.
pub(crate) struct ExpandPipeline {
    /// Group 0: the blend trees and inputs (bindings 1 and 2, as the blend-space stage binds
    /// them), the uniform, the expand tables, the records and the shot records (read),
    /// programs and samples (written).
    pub layout: wgpu::BindGroupLayout,
    /// `expand_main`.
    pub expand: wgpu::ComputePipeline,
    /// Group 0 of `scatter_main`: the frame's upload (read), the records, shot records and
    /// inputs it writes (bindings 11 to 14).
    pub scatter_layout: wgpu::BindGroupLayout,
    /// `scatter_main`.
    pub scatter: wgpu::ComputePipeline,
}

impl ExpandPipeline {
    pub fn new(device: &wgpu::Device) -> Self {
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.expand"),
            entries: &[
                storage(1, true),
                storage(2, true),
                uniform(5),
                storage(6, true),
                storage(7, true),
                storage(8, false),
                storage(9, false),
                storage(10, true),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.expand"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let scatter_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.expand_scatter"),
            entries: &[storage(11, true), storage(12, false), storage(13, false), storage(14, false)],
        });
        let scatter_pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.expand_scatter"),
            bind_group_layouts: &[Some(&scatter_layout)],
            immediate_size: 0,
        });
        let module = kernel_module(device, "throng.expand", Cow::Owned(expand_source()));
        let expand = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("throng.expand"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("expand_main"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        let scatter = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("throng.expand_scatter"),
            layout: Some(&scatter_pipeline_layout),
            module: &module,
            entry_point: Some("scatter_main"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        Self { layout, expand, scatter_layout, scatter }
    }
}

/// The procedural stage's pipeline and its bind group layout (see [`crate::gpu::procedural`]):
/// built once per archetype's setup, for any rig.
pub(crate) struct ProceduralPipeline {
    /// Group 0: the uniform, the setup's words and the targets (read), the poses (written).
    pub layout: wgpu::BindGroupLayout,
    /// `procedural_main`.
    pub procedural: wgpu::ComputePipeline,
}

impl ProceduralPipeline {
    pub fn new(device: &wgpu::Device) -> Self {
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("throng.procedural"),
            entries: &[uniform(0), storage(1, true), storage(2, true), storage(3, false)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("throng.procedural"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = kernel_module(device, "throng.procedural", Cow::Owned(procedural_source()));
        let procedural = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("throng.procedural"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("procedural_main"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        Self { layout, procedural }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::naga;

    /// The blend-space stage parses and validates, without an adapter.
    #[test]
    fn blend_space_module_validates() {
        let module =
            naga::front::wgsl::parse_str(BLEND_SPACE).unwrap_or_else(|e| panic!("{}", e.emit_to_string(BLEND_SPACE)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(BLEND_SPACE)));
        assert!(module.entry_points.iter().any(|e| e.name == "blend_space_main"));
    }

    /// The expand stage (the blend-space file and `expand.wgsl` after it) parses and validates,
    /// without an adapter.
    #[test]
    fn expand_module_validates() {
        let source = expand_source();
        let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
        assert!(module.entry_points.iter().any(|e| e.name == "expand_main"));
        assert!(module.entry_points.iter().any(|e| e.name == "scatter_main"));
    }

    /// Every module (the procedural and sample-positions stages' included) parses and passes naga's validation
    /// (types, uniformity of barriers, bindings) for each joints-per-thread a rig can ask for,
    /// so a shader mistake fails here even on a machine without an adapter.
    #[test]
    fn every_module_validates() {
        let cases = ShaderModuleKind::ALL.into_iter().flat_map(|k| [1, 64, 65, 200, MAX_JOINTS].map(|n| (k, n)));
        for ((kind, num_joints), compact_clips) in cases.flat_map(|case| [(case, true), (case, false)]) {
            let source = shader_source(kind, num_joints, compact_clips);
            if kind.specialised() {
                let compact = format!("const COMPACT_CLIPS: bool = {compact_clips};");
                assert!(source.contains(&compact), "{kind:?}: {compact} missing");
                let line = format!("const JOINTS_PER_THREAD: u32 = {}u;", joints_per_thread(num_joints));
                assert!(source.contains(&line), "{kind:?}, {num_joints} joints: {line} missing");
                let line = format!("const NUM_JOINTS: u32 = {num_joints}u;");
                assert!(source.contains(&line), "{kind:?}, {num_joints} joints: {line} missing");
            } else {
                assert_eq!(source, kind.stage_sources().concat(), "{kind:?}: its own files, the same for every rig");
            }
            let module = naga::front::wgsl::parse_str(&source)
                .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
            assert!(module.entry_points.iter().any(|e| e.name == kind.entry_point()), "{kind:?}");
        }
    }

    /// The fused frames composing the hierarchy in a subgroup validate where the device has
    /// subgroups and are refused where it has none, so a crowd on such a device must walk; the
    /// walks need no subgroup. Every other module keeps its walks ([`Hierarchy::apply`] says `None` for a module without the
    /// fused frames' walks).
    #[test]
    fn subgroup_hierarchy_needs_subgroups() {
        let validate = |source: &str, capabilities| {
            let module =
                naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities)
                .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
                .subgroup_operations(naga::valid::SubgroupOperationSet::all())
                .validate(&module)
                .map(|_| ())
                .map_err(|e| e.emit_to_string(source))
        };
        for kind in ShaderModuleKind::ALL {
            for num_joints in [1, 26, 64, 65, MAX_JOINTS] {
                let walks = shader_source(kind, num_joints, false);
                let Some(subgroup) = Hierarchy::Subgroup.apply(walks.clone(), 0) else {
                    assert!(!matches!(kind, ShaderModuleKind::Frame | ShaderModuleKind::FrameLayers), "{kind:?}");
                    continue;
                };
                let what = format!("{kind:?}");
                assert!(matches!(kind, ShaderModuleKind::Frame | ShaderModuleKind::FrameLayers), "{what}");
                assert!(!subgroup.contains(WALKS) && !subgroup.contains(WALKS_MESH), "{what}");
                let layered = kind == ShaderModuleKind::FrameLayers;
                assert_eq!(subgroup.contains(SUBGROUP_MESH), layered, "{what}");
                assert!(subgroup.contains(SUBGROUP) && !subgroup.contains(DOUBLING), "{what}");
                assert_eq!(subgroup.matches(COMPOSED_POSE).count(), 1, "{what}");
                assert_eq!(subgroup.matches(SUBGROUP_DEPTHS).count(), 1, "{what}");
                validate(&subgroup, naga::valid::Capabilities::SUBGROUP).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(validate(&subgroup, naga::valid::Capabilities::empty()).is_err(), "{what}");
                validate(&walks, naga::valid::Capabilities::empty()).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }

    /// The fused frames composing their hierarchy by pointer doubling validate without
    /// subgroups, their barriers in uniform control flow, for a rig of any depth (none to the
    /// deepest, 8 rounds), each built for its rounds with its identity rows past the joints';
    /// the layered frame's mesh-space override doubles too. Every other module keeps its walks,
    /// and a module without the pose rows' line is refused rather than built indexing past them.
    #[test]
    fn doubling_hierarchy_needs_no_subgroups() {
        for kind in ShaderModuleKind::ALL {
            for (num_joints, rounds) in [(1, 0), (26, 4), (64, 4), (65, 1), (MAX_JOINTS, 8)] {
                let Some(doubling) = Hierarchy::Doubling.apply(shader_source(kind, num_joints, false), rounds) else {
                    assert!(!matches!(kind, ShaderModuleKind::Frame | ShaderModuleKind::FrameLayers), "{kind:?}");
                    continue;
                };
                assert!(matches!(kind, ShaderModuleKind::Frame | ShaderModuleKind::FrameLayers), "{kind:?}");
                let rounds_line = format!("const DOUBLING_ROUNDS: u32 = {rounds}u;");
                let file = DOUBLING.replacen(DOUBLING_ROUNDS_LINE, &rounds_line, 1);
                assert!(!doubling.contains(WALKS) && doubling.contains(&file), "{kind:?}");
                assert_eq!(doubling.matches(COMPOSED_POSE).count(), 1, "{kind:?}");
                assert!(!doubling.contains(WALKS_MESH), "{kind:?}");
                assert_eq!(doubling.contains(DOUBLING_MESH), kind == ShaderModuleKind::FrameLayers, "{kind:?}");
                assert!(doubling.contains("const POSE_ROWS: u32 = POSE_JOINTS + 2u;"), "{kind:?}");
                let module = naga::front::wgsl::parse_str(&doubling)
                    .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&doubling)));
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&doubling)));
            }
        }
        assert_eq!(Hierarchy::Doubling.apply(shader_source(ShaderModuleKind::Frame, 64, false), 9), None);
        // The table's layout, as `GpuRigTables::doubling` packs it.
        use crate::gpu::types::{DOUBLING_NONE, DOUBLING_WORDS};
        assert!(DOUBLING.contains(&format!("const DOUBLING_WORDS: u32 = {DOUBLING_WORDS}u;")));
        assert!(DOUBLING.contains(&format!("const DOUBLING_NONE: u32 = {DOUBLING_NONE:#x}u;")));
        let without_rows = shader_source(ShaderModuleKind::Frame, 64, false).replacen(POSE_ROWS_LINE, "", 1);
        assert_eq!(Hierarchy::Doubling.apply(without_rows.clone(), 4), None);
        assert!(Hierarchy::Walks.apply(without_rows, 4).is_some());
    }

    /// What `crowd::limits::check_limits` asks of a device is what the modules a crowd builds
    /// declare: for each variant and rig size, its frames' entry points use the variant's
    /// `workgroup_memory_bytes_for` exactly (`Fused` composing by pointer doubling, the most
    /// rows; two rows fewer walking), and the stages every variant shares no more than
    /// `Fused`'s; the rig's, not the largest rig's.
    #[test]
    fn workgroup_memory_is_the_rigs() {
        let used_by = |kind: ShaderModuleKind, num_joints: usize, hierarchy: Hierarchy| -> u64 {
            let source = hierarchy.apply(shader_source(kind, num_joints, false), 8).expect("the frames compose so");
            let module = naga::front::wgsl::parse_str(&source).unwrap();
            let info =
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                    .validate(&module)
                    .unwrap();
            let entry = module.entry_points.iter().position(|e| e.name == kind.entry_point()).unwrap();
            let function = info.get_entry_point(entry);
            module
                .global_variables
                .iter()
                .filter(|&(handle, var)| var.space == naga::AddressSpace::WorkGroup && !function[handle].is_empty())
                .map(|(_, var)| u64::from(module.types[var.ty].inner.size(module.to_ctx())))
                .sum()
        };
        let used = |kind, num_joints| used_by(kind, num_joints, Hierarchy::Walks);
        let shared = [
            ShaderModuleKind::Sample,
            ShaderModuleKind::LocalToModel,
            ShaderModuleKind::Skinning,
            ShaderModuleKind::Transition,
            ShaderModuleKind::Layers,
        ];
        for num_joints in [1, 26, 64, 65, 128, 129, 200, MAX_JOINTS] {
            let stages = shared.map(|kind| used(kind, num_joints)).into_iter().max().unwrap();
            assert!(stages <= FrameKernel::Fused.workgroup_memory_bytes_for(num_joints), "{num_joints} joints");
            for kernel in FrameKernel::ALL {
                let hierarchy = if kernel == FrameKernel::Fused { Hierarchy::Doubling } else { Hierarchy::Walks };
                let frames = |hierarchy| {
                    used_by(kernel.frame(), num_joints, hierarchy).max(used_by(
                        kernel.frame_layers(),
                        num_joints,
                        hierarchy,
                    ))
                };
                assert_eq!(
                    frames(hierarchy),
                    kernel.workgroup_memory_bytes_for(num_joints),
                    "{kernel:?}, {num_joints} joints"
                );
                if kernel == FrameKernel::Fused {
                    assert_eq!(frames(Hierarchy::Walks) + 96, frames(hierarchy), "{num_joints} joints, walking");
                }
            }
        }
    }

    /// The production crowd's two layered kernels are built from their lines rewritten: the
    /// steady pass without the switch code and evaluating its pass's characters, the switching
    /// pass with it, for both variants, full and compact clips; the other modules and passes
    /// rewrite nothing.
    #[test]
    fn pass_kernels_rewrite_their_lines() {
        for kernel in FrameKernel::ALL {
            for compact_clips in [false, true] {
                let source = || shader_source(kernel.frame_layers(), 64, compact_clips);
                let steady = ShapePass::Steady
                    .specialisation()
                    .apply(source())
                    .and_then(|s| ShapePass::Steady.apply(s))
                    .unwrap();
                assert!(steady.contains("const SWITCH_CODE: bool = false;"), "{kernel:?}");
                assert!(steady.contains("const SHAPE_PASS: u32 = 1u;"), "{kernel:?}");
                let switching = ShapePass::Switching.apply(source()).unwrap();
                assert!(switching.contains(SWITCH_CODE_LINE) && switching.contains("const SHAPE_PASS: u32 = 2u;"));
                assert_eq!(ShapePass::Every.apply(source()), Some(source()));
            }
        }
        for kind in ShaderModuleKind::ALL {
            let source = shader_source(kind, 64, false);
            assert_eq!(Specialisation::Production.apply(source.clone()).as_ref(), Some(&source), "{kind:?}");
            assert_eq!(Specialisation::Whole.apply(source.clone()).as_ref(), Some(&source), "{kind:?}");
        }
    }

    /// Every module holding the transition checks the crowd's layers with memory, as
    /// [`memory_layers`] gives them; the others have no such line.
    #[test]
    fn kernels_check_the_crowds_layers_with_memory() {
        let forgetful = LayerSetup { needs_memory: false, ..LayerSetup::default() };
        let stack = [LayerSetup::default(), forgetful.clone(), LayerSetup::default(), forgetful];
        assert_eq!(memory_layers(&stack), 0b101);
        let line = "const MEMORY_LAYERS: u32 = 0x5u;";
        let stack = layer_stack(&stack);
        for kind in ShaderModuleKind::ALL {
            let source = pass_source(
                kind,
                64,
                false,
                Specialisation::Production,
                ShapePass::Every,
                (Hierarchy::Walks, 0),
                &stack,
            )
            .expect("every module builds as production");
            let holds_transition = shader_source(kind, 64, false).contains(MEMORY_LAYERS_LINE);
            assert_eq!(source.contains(line), holds_transition, "{kind:?}");
            assert!(!source.contains(MEMORY_LAYERS_LINE), "{kind:?}");
        }
        assert!(shader_source(ShaderModuleKind::FrameLayers, 64, false).contains(MEMORY_LAYERS_LINE));
    }

    /// A crowd's layered fused frame calls each layer of its stack with its setup as constants,
    /// in evaluation order, for every kernel a crowd or the statistics build (each
    /// specialisation, shape pass and hierarchy, full or compact clips), and keeps no loop over
    /// the layer table; the largest stack a crowd can hold validates unrolled. A module that
    /// lost the loop's text is refused rather than built looping.
    #[test]
    fn crowd_kernels_unroll_their_layer_stack() {
        use crate::program::{LayerBlend, LayerSpace, MAX_LAYERS, Mask};
        let additive = LayerSetup { blend: LayerBlend::Additive, needs_memory: false, ..LayerSetup::default() };
        let mask = Mask::full(64);
        let mesh = LayerSetup { space: LayerSpace::Mesh, mask: Some(mask), ..LayerSetup::default() };
        let stacks: [Vec<LayerSetup>; 3] = [
            vec![LayerSetup::default()],
            vec![LayerSetup::default(), mesh.clone(), additive.clone()],
            (0..MAX_LAYERS).map(|l| if l % 2 == 1 { additive.clone() } else { mesh.clone() }).collect(),
        ];
        let mut built = 0;
        for layers in &stacks {
            let stack = layer_stack(layers);
            let calls: Vec<String> = stack.iter().map(layer_call).collect();
            for (((specialisation, pass), hierarchy), compact_clips) in Specialisation::ALL
                .into_iter()
                .flat_map(|s| [ShapePass::Every, ShapePass::Steady, ShapePass::Switching].map(|p| (s, p)))
                .flat_map(|sp| Hierarchy::ALL.map(|h| (sp, h)))
                .flat_map(|sph| [(sph, false), (sph, true)])
            {
                let kind = ShaderModuleKind::FrameLayers;
                let composition = (hierarchy, 4);
                let Some(source) = pass_source(kind, 64, compact_clips, specialisation, pass, composition, &stack)
                else {
                    continue;
                };
                built += 1;
                let main = &source[source.find("fn frame_layers_main").expect("the entry point")..];
                let main = &main[..main.find("\n}").expect("its end")];
                assert!(!main.contains("load_setup(order)"), "{} layers: the loop is gone", stack.len());
                let mut at = 0;
                for call in &calls {
                    let found = main[at..].find(call.as_str());
                    assert!(
                        found.is_some(),
                        "{} layers, {specialisation:?} {pass:?} {hierarchy:?}: {call}",
                        stack.len()
                    );
                    at += found.unwrap_or(0) + call.len();
                }
            }
        }
        // At least each hierarchy's production and pass kernels, with either clips, each stack.
        assert!(built >= stacks.len() * Hierarchy::ALL.len() * 3 * 2, "{built} kernels built");
        let largest = layer_stack(&stacks[2]);
        let source = pass_source(
            ShaderModuleKind::FrameLayers,
            64,
            false,
            Specialisation::Production,
            ShapePass::Switching,
            (Hierarchy::Doubling, 4),
            &largest,
        )
        .expect("the production kernel");
        let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
        let without_loop = shader_source(ShaderModuleKind::FrameLayers, 64, false).replacen(LAYER_LOOP, "", 1);
        assert_eq!(unroll_layers(ShaderModuleKind::FrameLayers, without_loop, &largest), None);
        let other = shader_source(ShaderModuleKind::Frame, 64, false);
        assert_eq!(unroll_layers(ShaderModuleKind::Frame, other.clone(), &largest), Some(other));
    }

    #[test]
    fn joints_per_thread_covers_the_rig() {
        assert_eq!([1, 64, 65, 128, 129, 256].map(joints_per_thread), [1, 1, 2, 2, 3, 4]);
    }
}
