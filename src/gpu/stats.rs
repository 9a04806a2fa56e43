//! Driver statistics for every production kernel: GPU cost read from a real driver's compiler,
//! without running anything on a GPU.
//!
//! Each kernel of [`ShaderModuleKind`] is compiled as wgpu's Vulkan backend compiles it (naga to
//! SPIR-V with wgpu-hal's writer options, see [`spirv_options`]) and built into a compute
//! pipeline with `VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR` and
//! `…_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR` on a device that has
//! `VK_KHR_pipeline_executable_properties`. The driver then reports per executable what its
//! compiler made of the kernel: registers, spills, shared memory, waves per SIMD, instruction
//! counts, and a disassembly from which [`loop_bodies`] counts each loop's instructions.
//!
//! No GPU is needed: Mesa's AMD driver (RADV) compiles for a chosen chip with no hardware when
//! `RADV_FORCE_FAMILY` is set (`RADV_FORCE_FAMILY=navi21` offers "Null hardware (RADV NAVI21)"),
//! and [`driver_statistics`] then picks that device. Without it the first device with the
//! extension is used, so on an NVIDIA GPU the same call prints the NVIDIA driver's own figures.
//! Nothing is ever submitted to a queue. `cargo run --release --example gpu_stats` prints the
//! table; BENCHMARKS.md ("Proxies") holds today's figures.

use std::ffi::{CStr, c_char};

use ash::vk;
use wgpu::naga;

use crate::gpu::pipelines::{FrameKernel, ShaderModuleKind, kernel_runtime_checks, pass_source};
pub use crate::gpu::pipelines::{Hierarchy, MeasuredPath, ShapePass, Specialisation};
use crate::gpu::types::{BLEND_OVERRIDE, GpuLayerSetup, NO_MASK, SPACE_LOCAL};

/// One kernel: a module of `shaders/` for a rig size, with or without compact-clip decoding, as
/// [`crate::gpu::GpuCrowd`] builds it, or one of its measurement [`Specialisation`]s. A layered
/// frame's production kernel here evaluates every character, as a crowd built with
/// [`Specialisation::Whole`] runs it; a production crowd runs two [`ShapePass`] kernels instead
/// ([`Kernel::passes_for_rig`]), its [`Specialisation::Steady`] kernel over the characters that
/// neither switch nor fade from a frozen snapshot and this one over the others, each with a check of a few instructions which
/// pass a character is in (`SHAPE_PASS`, `shaders/transition.wgsl`) that the others compile out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The module and its entry point.
    pub kind: ShaderModuleKind,
    /// Joints of the rig the module is specialised for (sets `JOINTS_PER_THREAD`).
    pub num_joints: usize,
    /// Whether compact-clip decoding is compiled in.
    pub compact_clips: bool,
    /// The production kernel, or one compiled with measurement gates off.
    pub specialisation: Specialisation,
    /// A path's measurement gate off besides ([`MeasuredPath`]; `None` for every kernel the
    /// evaluator can build).
    pub without: Option<MeasuredPath>,
    /// The characters a layered frame kernel evaluates: every one, or one of the production
    /// crowd's passes ([`Kernel::passes_for_rig`]).
    pub pass: ShapePass,
    /// How a fused frame composes the hierarchy ([`Hierarchy`]; walks for every other module).
    pub hierarchy: Hierarchy,
    /// The layer stack the kernel is built for ([`crate::gpu::layer_stack`]: the layered fused
    /// frame's layers unrolled, the checks reading the programs of its layers with memory):
    /// [`Kernel::MEASURED_STACK`], no layers at all ([`Kernel::layerless_for_rig`], whose names
    /// say `layerless`) or [`Kernel::LOCAL_OVERRIDE_STACK`] ([`Kernel::local_override_for_rig`],
    /// `local-override`); any other's name says how many layers it has (`stack-of-2`).
    pub stack: &'static [GpuLayerSetup],
    /// The rounds a [`Hierarchy::Doubling`] kernel unrolls, its rig's
    /// ([`crate::gpu::types::doubling_rounds`]): [`Kernel::MEASURED_ROUNDS`], or none
    /// ([`Kernel::roundless_for_rig`], whose names say `0-rounds`), by whose difference the
    /// work model finds a round's code.
    pub doubling_rounds: u32,
}

impl Kernel {
    /// The stack every kernel here is built for but the layerless ones: the benches' layered
    /// scenario's three layers, which the work model's layered frame evaluates
    /// ([`crate::gpu::work_model::MEASURED_STACK`]).
    pub const MEASURED_STACK: &'static [GpuLayerSetup] = crate::gpu::work_model::MEASURED_STACK;

    /// The rounds pointer doubling takes on both humanoids (the 26-joint rig's deepest joint is
    /// 10 deep, the 64-joint's 14), for which every kernel here is built but the roundless ones
    /// ([`crate::gpu::work_model::MEASURED_ROUNDS`]).
    pub const MEASURED_ROUNDS: u32 = crate::gpu::work_model::MEASURED_ROUNDS;

    /// Every kernel the evaluator can build for a rig of `num_joints`: each module of
    /// [`ShaderModuleKind::ALL`], with full and with compact clips where the module is
    /// [`specialised`](ShaderModuleKind::specialised) for them (the procedural and
    /// sample-positions stages, which are not, once).
    ///
    /// ```
    /// use throng::gpu::ShaderModuleKind;
    /// use throng::gpu::stats::Kernel;
    /// let kernels = Kernel::all_for_rig(64);
    /// assert_eq!(kernels.len(), 2 * ShaderModuleKind::ALL.len() - 2);
    /// assert!(kernels.iter().any(|k| k.kind == ShaderModuleKind::Procedural));
    /// assert!(kernels.iter().any(|k| k.kind == ShaderModuleKind::SamplePositions));
    /// ```
    #[must_use]
    pub fn all_for_rig(num_joints: usize) -> Vec<Self> {
        ShaderModuleKind::ALL
            .into_iter()
            .flat_map(|kind| {
                let formats: &[bool] = if kind.specialised() { &[false, true] } else { &[false] };
                formats.iter().map(move |&compact_clips| Self::production(kind, num_joints, compact_clips))
            })
            .collect()
    }

    /// The kernel the evaluator builds.
    #[must_use]
    pub const fn production(kind: ShaderModuleKind, num_joints: usize, compact_clips: bool) -> Self {
        Self {
            kind,
            num_joints,
            compact_clips,
            specialisation: Specialisation::Production,
            without: None,
            pass: ShapePass::Every,
            hierarchy: Hierarchy::Walks,
            stack: Self::MEASURED_STACK,
            doubling_rounds: Self::MEASURED_ROUNDS,
        }
    }

    /// The fused frames composing the hierarchy as `hierarchy` says ([`Hierarchy::Subgroup`],
    /// [`Hierarchy::Doubling`]) for a rig of `num_joints`, with
    /// full clips: the two-clip frame, the layered frame for every character (whose loops the
    /// work model reads), then the layered frame's kernels as a production crowd dispatches them
    /// ([`ShapePass::PASSES`]). [`driver_statistics`] compiles a hierarchy's kernels that
    /// [`uses_subgroups`](Hierarchy::uses_subgroups) at the device's smallest subgroup size
    /// where it can ask for one, since a crowd runs them only where subgroups are smaller than
    /// the workgroup ([`Hierarchy::fits`]).
    ///
    /// ```
    /// use throng::gpu::Hierarchy;
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::hierarchy_for_rig(Hierarchy::Subgroup, 64).iter().map(Kernel::name).collect();
    /// assert_eq!(names[..2], ["frame_main/64j+subgroup", "frame_layers_main/64j+subgroup"]);
    /// assert!(names.contains(&"frame_layers_main/64j+subgroup steady-pass".to_owned()));
    /// ```
    #[must_use]
    pub fn hierarchy_for_rig(hierarchy: Hierarchy, num_joints: usize) -> Vec<Self> {
        let kernel = |kind| Self { hierarchy, ..Self::production(kind, num_joints, false) };
        [kernel(ShaderModuleKind::Frame), kernel(ShaderModuleKind::FrameLayers)]
            .into_iter()
            .chain(ShapePass::PASSES.map(|pass| Self {
                specialisation: pass.specialisation(),
                pass,
                ..kernel(ShaderModuleKind::FrameLayers)
            }))
            .collect()
    }

    /// The kernels pointer doubling builds ([`Hierarchy::Doubling`]) whose code the work model
    /// reads, built for no rounds: the two-clip frame, the layered frame for every character,
    /// and the layered frame for no layers, settled ([`Kernel::layerless_for_rig`]'s). A
    /// doubling kernel unrolls its rig's rounds, so that its loops no longer hold them: the
    /// difference from the kernel built for [`Kernel::MEASURED_ROUNDS`] is their code.
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::roundless_for_rig(64).iter().map(Kernel::name).collect();
    /// assert_eq!(
    ///     names,
    ///     [
    ///         "frame_main/64j+doubling 0-rounds",
    ///         "frame_layers_main/64j+doubling 0-rounds",
    ///         "frame_layers_main/64j+doubling settled layerless 0-rounds",
    ///     ]
    /// );
    /// ```
    #[must_use]
    pub fn roundless_for_rig(num_joints: usize) -> Vec<Self> {
        let doubling = |kind| Self {
            hierarchy: Hierarchy::Doubling,
            doubling_rounds: 0,
            ..Self::production(kind, num_joints, false)
        };
        let layerless =
            Self { specialisation: Specialisation::Settled, stack: &[], ..doubling(ShaderModuleKind::FrameLayers) };
        vec![doubling(ShaderModuleKind::Frame), doubling(ShaderModuleKind::FrameLayers), layerless]
    }

    /// [`hierarchy_for_rig`](Self::hierarchy_for_rig) for every hierarchy but the walks
    /// ([`Hierarchy::ALL`]'s order).
    #[must_use]
    pub fn composed_for_rig(num_joints: usize) -> Vec<Self> {
        let composed = Hierarchy::ALL.into_iter().filter(|&h| h != Hierarchy::Walks);
        composed.flat_map(|h| Self::hierarchy_for_rig(h, num_joints)).collect()
    }

    /// The layered fused frame ([`ShaderModuleKind::FrameLayers`]) built for a stack of no layers
    /// (an empty [`Kernel::stack`]), settled, composing the hierarchy each way
    /// ([`Hierarchy::ALL`]'s order) for a rig of `num_joints` with full clips: the kernel's own
    /// code (the checks, local-to-model, the skinning) without the layers it unrolls, which the
    /// work model takes out of the layered frame's to find the layers' code
    /// (`work_model::KernelCosts::from_frame_layers_loops`).
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::layerless_for_rig(64).iter().map(Kernel::name).collect();
    /// assert_eq!(names[0], "frame_layers_main/64j settled layerless");
    /// assert!(names.contains(&"frame_layers_main/64j+doubling settled layerless".to_owned()));
    /// ```
    #[must_use]
    pub fn layerless_for_rig(num_joints: usize) -> Vec<Self> {
        Hierarchy::ALL
            .into_iter()
            .map(|hierarchy| Self {
                specialisation: Specialisation::Settled,
                hierarchy,
                stack: &[],
                ..Self::production(ShaderModuleKind::FrameLayers, num_joints, false)
            })
            .collect()
    }

    /// A stack of the base and a local-space override with memory, the kind of layer
    /// [`Kernel::MEASURED_STACK`] lacks: [`Kernel::local_override_for_rig`] measures its combine.
    pub const LOCAL_OVERRIDE_STACK: &'static [GpuLayerSetup] = &[
        GpuLayerSetup { layer: 0, blend: BLEND_OVERRIDE, space: SPACE_LOCAL, mask_start: NO_MASK, memory: 0 },
        GpuLayerSetup { layer: 1, blend: BLEND_OVERRIDE, space: SPACE_LOCAL, mask_start: NO_MASK, memory: 1 },
    ];

    /// The layered fused frame ([`ShaderModuleKind::FrameLayers`]) built for
    /// [`Kernel::LOCAL_OVERRIDE_STACK`], settled, with and without the local-space override's
    /// combine ([`MeasuredPath::OverrideLocal`]) for a rig of `num_joints` with full clips: the
    /// combine's code, which the measured stack's kernel does not hold (its layers are unrolled,
    /// each compiled for its own blend and space).
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::local_override_for_rig(64).iter().map(Kernel::name).collect();
    /// assert_eq!(names, ["frame_layers_main/64j settled local-override", "frame_layers_main/64j settled-override_local local-override"]);
    /// ```
    #[must_use]
    pub fn local_override_for_rig(num_joints: usize) -> Vec<Self> {
        let kernel = Self {
            specialisation: Specialisation::Settled,
            stack: Self::LOCAL_OVERRIDE_STACK,
            ..Self::production(ShaderModuleKind::FrameLayers, num_joints, false)
        };
        vec![kernel, Self { without: Some(MeasuredPath::OverrideLocal), ..kernel }]
    }

    /// The layered frames' kernels a production crowd dispatches for a rig of `num_joints`
    /// ([`ShapePass::PASSES`]): for each layered frame ([`ShaderModuleKind::FrameLayers`],
    /// [`ShaderModuleKind::FrameLayersLevels`]), with full and with compact clips, the steady
    /// pass's and the switching pass's.
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::passes_for_rig(64).iter().map(Kernel::name).collect();
    /// assert!(names.contains(&"frame_layers_main/64j steady-pass".to_owned()));
    /// assert!(names.contains(&"frame_layers_levels_main/64j+compact switching-pass".to_owned()));
    /// ```
    #[must_use]
    pub fn passes_for_rig(num_joints: usize) -> Vec<Self> {
        FrameKernel::ALL
            .into_iter()
            .map(FrameKernel::frame_layers)
            .flat_map(|kind| [false, true].map(|compact_clips| Self::production(kind, num_joints, compact_clips)))
            .flat_map(|kernel| {
                ShapePass::PASSES.map(|pass| Self { specialisation: pass.specialisation(), pass, ..kernel })
            })
            .collect()
    }

    /// The work model's specialisations for a rig of `num_joints`: each layered frame
    /// ([`ShaderModuleKind::FrameLayers`], [`ShaderModuleKind::FrameLayersLevels`]) with full
    /// clips, [`Specialisation::Steady`], [`Specialisation::Settled`] and
    /// [`Specialisation::Stored`].
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::specialisations_for_rig(64).iter().map(Kernel::name).collect();
    /// assert!(names.contains(&"frame_layers_levels_main/64j steady".to_owned()));
    /// ```
    #[must_use]
    pub fn specialisations_for_rig(num_joints: usize) -> Vec<Self> {
        FrameKernel::ALL
            .into_iter()
            .map(FrameKernel::frame_layers)
            .flat_map(|kind| {
                [Specialisation::Steady, Specialisation::Settled, Specialisation::Stored]
                    .map(|specialisation| Self { specialisation, ..Self::production(kind, num_joints, false) })
            })
            .collect()
    }

    /// The work model's path measurements ([`MeasuredPath`]) for a rig of `num_joints`: each
    /// layered frame ([`ShaderModuleKind::FrameLayers`], [`ShaderModuleKind::FrameLayersLevels`])
    /// with full clips, each path's gate off in turn in the path's specialisation
    /// ([`MeasuredPath::specialisation`]: the settled kernel, the steady one for the overshoot's
    /// decay); then the two-clip kernels ([`ShaderModuleKind::FrameLevels`],
    /// [`ShaderModuleKind::Frame`]) with each of the paths they hold off
    /// (`work_model::FRAME_LEVELS_PATHS`, `work_model::FRAME_PATHS`); then the level kernels (the
    /// layered one settled) without a band's chain work ([`MeasuredPath::BandChains`]), whose
    /// band loops are an idle wave's.
    ///
    /// ```
    /// use throng::gpu::stats::Kernel;
    /// let names: Vec<String> = Kernel::paths_for_rig(64).iter().map(Kernel::name).collect();
    /// assert!(names.contains(&"frame_layers_levels_main/64j settled-additive".to_owned()));
    /// ```
    #[must_use]
    pub fn paths_for_rig(num_joints: usize) -> Vec<Self> {
        FrameKernel::ALL
            .into_iter()
            .map(FrameKernel::frame_layers)
            .flat_map(|kind| {
                MeasuredPath::ALL.map(|path| Self {
                    specialisation: path.specialisation(),
                    without: Some(path),
                    ..Self::production(kind, num_joints, false)
                })
            })
            .chain(crate::gpu::work_model::FRAME_LEVELS_PATHS.map(|path| Self {
                without: Some(path),
                ..Self::production(ShaderModuleKind::FrameLevels, num_joints, false)
            }))
            .chain(crate::gpu::work_model::FRAME_PATHS.map(|path| Self {
                without: Some(path),
                ..Self::production(ShaderModuleKind::Frame, num_joints, false)
            }))
            .chain(
                [
                    (ShaderModuleKind::FrameLayersLevels, MeasuredPath::BandChains.specialisation()),
                    (ShaderModuleKind::FrameLevels, Specialisation::Production),
                ]
                .map(|(kind, specialisation)| Self {
                    specialisation,
                    without: Some(MeasuredPath::BandChains),
                    ..Self::production(kind, num_joints, false)
                }),
            )
            .collect()
    }

    /// A short name: the entry point, the rig size and `+compact` where compact clips are on
    /// (the entry point alone for a module the same for every rig), then the specialisation's
    /// name where it is not production (or the shape pass's and `-pass` for one of the
    /// production crowd's passes), and `-` and the path's where one is measured.
    #[must_use]
    pub fn name(&self) -> String {
        let name = if self.kind.specialised() {
            format!(
                "{}/{}j{}{}",
                self.kind.entry_point(),
                self.num_joints,
                if self.compact_clips { "+compact" } else { "" },
                match self.hierarchy {
                    Hierarchy::Walks => String::new(),
                    other => format!("+{}", other.name()),
                }
            )
        } else {
            self.kind.entry_point().to_owned()
        };
        let name = match (self.pass, self.specialisation) {
            (ShapePass::Every, Specialisation::Production) => name,
            (ShapePass::Every, other) => format!("{name} {}", other.name()),
            // The pass names its gates.
            (pass, _) => format!("{name} {}-pass", pass.name()),
        };
        let name = match self.without {
            Some(path) => format!("{name}-{}", path.name()),
            None => name,
        };
        // Every kernel here is built for the measured stack but these.
        let name = if self.stack == Self::MEASURED_STACK {
            name
        } else if self.stack.is_empty() {
            format!("{name} layerless")
        } else if self.stack == Self::LOCAL_OVERRIDE_STACK {
            format!("{name} local-override")
        } else {
            format!("{name} stack-of-{}", self.stack.len())
        };
        // And for the measured rounds, where they are unrolled.
        if self.hierarchy != Hierarchy::Doubling || self.doubling_rounds == Self::MEASURED_ROUNDS {
            name
        } else {
            format!("{name} {}-rounds", self.doubling_rounds)
        }
    }

    /// The kernel's WGSL: what [`crate::gpu::GpuCrowd`] builds for its specialisation and shape
    /// pass ([`crate::gpu::specialised_source`], [`ShapePass`]), with the measured path's gate off
    /// where there is one.
    ///
    /// # Errors
    /// [`StatsError::Shader`] where the module lacks a gate the specialisation or the path
    /// turns off.
    pub fn source(&self) -> Result<String, StatsError> {
        let source = pass_source(
            self.kind,
            self.num_joints,
            self.compact_clips,
            self.specialisation,
            self.pass,
            (self.hierarchy, self.doubling_rounds),
            self.stack,
        );
        let source = match self.without {
            Some(path) => source.and_then(|s| path.apply(&s)),
            None => source,
        };
        source.ok_or_else(|| StatsError::Shader {
            kernel: self.name(),
            message: "the module has no measurement gate to turn off, shape pass line to set or walks to replace (shaders/transition.wgsl, shaders/layers.wgsl, shaders/sample.wgsl, shaders/shared/levels.wgsl, shaders/shared/walks.wgsl)"
                .to_owned(),
        })
    }
}

/// Why driver statistics could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// The Vulkan loader library could not be loaded.
    #[error("no Vulkan loader: {0}")]
    NoLoader(String),
    /// No device offers `VK_KHR_pipeline_executable_properties` (with `RADV_FORCE_FAMILY` set:
    /// no RADV device either; is `mesa-vulkan-drivers` installed?).
    #[error("no Vulkan device offers VK_KHR_pipeline_executable_properties{0}")]
    NoDevice(&'static str),
    /// A Vulkan call failed.
    #[error("{call} failed: {result}")]
    Vulkan {
        /// The Vulkan function.
        call: &'static str,
        /// What it returned.
        result: vk::Result,
    },
    /// naga refused the kernel's WGSL or could not write SPIR-V for it.
    #[error("kernel {kernel}: {message}")]
    Shader {
        /// [`Kernel::name`].
        kernel: String,
        /// naga's message.
        message: String,
    },
}

fn vulkan(call: &'static str) -> impl Fn(vk::Result) -> StatsError {
    move |result| StatsError::Vulkan { call, result }
}

/// One statistic as the driver reports it (names are the driver's own, e.g. RADV's `"VGPRs"`,
/// `"Spilled VGPRs"`, `"Instructions"`).
#[derive(Clone, Debug, PartialEq)]
pub struct Statistic {
    /// The driver's name for it.
    pub name: String,
    /// The driver's description.
    pub description: String,
    /// Its value.
    pub value: StatisticValue,
}

/// A statistic's value, in the format the driver chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatisticValue {
    /// A flag.
    Bool(bool),
    /// A signed count.
    Int(i64),
    /// An unsigned count.
    Uint(u64),
    /// A ratio or an estimate.
    Float(f64),
}

impl StatisticValue {
    /// The value as a number (a flag is 0 or 1).
    #[must_use]
    pub fn as_f64(self) -> f64 {
        match self {
            Self::Bool(b) => f64::from(u8::from(b)),
            Self::Int(i) => i as f64,
            Self::Uint(u) => u as f64,
            Self::Float(f) => f,
        }
    }
}

/// One loop of a disassembly: the instructions from its header label to the branch back to it,
/// nested loops included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBody {
    /// The header's label as the disassembly spells it (e.g. `BB3`).
    pub label: String,
    /// Instructions in the body, the backward branch included.
    pub instructions: usize,
    /// How many loops enclose it (0 for an outermost loop).
    pub depth: usize,
}

/// What the driver reports for one executable of a pipeline (a compute pipeline has one).
#[derive(Clone, Debug)]
pub struct ExecutableStatistics {
    /// The executable's name (RADV: `"Compute Shader"`).
    pub name: String,
    /// The driver's description of it.
    pub description: String,
    /// The subgroup (wave) size it was compiled for; 0 where the driver does not say.
    pub subgroup_size: u32,
    /// Every statistic, in the driver's order.
    pub statistics: Vec<Statistic>,
    /// Each internal representation the driver gave as text: (name, text).
    pub representations: Vec<(String, String)>,
    /// Loops found in the last text representation (the final machine code on RADV), outermost
    /// first in program order; empty where the driver gives no disassembly or the kernel has none.
    pub loops: Vec<LoopBody>,
}

impl ExecutableStatistics {
    /// The statistic named `name` (exactly, as the driver spells it).
    #[must_use]
    pub fn get(&self, name: &str) -> Option<StatisticValue> {
        self.statistics.iter().find(|s| s.name == name).map(|s| s.value)
    }

    /// The sum of every statistic whose name mentions spilling (RADV: `"Spilled SGPRs"` and
    /// `"Spilled VGPRs"`), or `None` where the driver reports none of them.
    #[must_use]
    pub fn spills(&self) -> Option<f64> {
        let spilled = self.statistics.iter().filter(|s| s.name.to_ascii_lowercase().contains("spill"));
        spilled.fold(None, |sum, s| Some(sum.unwrap_or(0.0) + s.value.as_f64()))
    }
}

/// The statistics of one kernel.
#[derive(Clone, Debug)]
pub struct KernelStatistics {
    /// Which kernel.
    pub kernel: Kernel,
    /// Its SPIR-V size in 32-bit words, as wgpu would hand it to the driver.
    pub spirv_words: usize,
    /// One entry per executable of its pipeline.
    pub executables: Vec<ExecutableStatistics>,
}

/// The device the statistics came from and every kernel's figures.
#[derive(Clone, Debug)]
pub struct DriverReport {
    /// The device's name (`"Null hardware (RADV NAVI21)"` under `RADV_FORCE_FAMILY=navi21`).
    pub device_name: String,
    /// The driver's name and version string, where it gives them.
    pub driver: String,
    /// Each kernel asked for, in order.
    pub kernels: Vec<KernelStatistics>,
}

/// The SPIR-V writer options wgpu-hal 30's Vulkan backend uses for a compute pipeline built
/// with `zero_initialize_workgroup_memory: false` and the runtime checks throng builds every kernel
/// with (wgpu's, without loop bounding: `pipelines::kernel_module`), on a device of `device_api_version` with or without `robustBufferAccess2`:
/// `wgpu-hal/src/vulkan/adapter.rs` (`naga_options`) and `device.rs` (`compile_stage`). The
/// capabilities list is what wgpu declares for a device without optional features; it only
/// bounds what the writer may emit, and throng's kernels need none of the optional ones.
#[must_use]
pub fn spirv_options(device_api_version: u32, robust_buffer_access2: bool) -> naga::back::spv::Options<'static> {
    use naga::back::spv;
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    let lang_version = match (vk::api_version_major(device_api_version), vk::api_version_minor(device_api_version)) {
        (1, 0) => (1, 0),
        (1, 1) => (1, 3),
        (1, 2) => (1, 5),
        _ => (1, 6),
    };
    let capabilities = [
        spv::Capability::Shader,
        spv::Capability::Matrix,
        spv::Capability::Sampled1D,
        spv::Capability::Image1D,
        spv::Capability::ImageQuery,
        spv::Capability::DerivativeControl,
        spv::Capability::StorageImageExtendedFormats,
        spv::Capability::SampledCubeArray,
        spv::Capability::SampleRateShading,
        // wgpu's with `SUBGROUP`, which `GpuContext` enables where the adapter has it.
        spv::Capability::GroupNonUniform,
        spv::Capability::GroupNonUniformVote,
        spv::Capability::GroupNonUniformArithmetic,
        spv::Capability::GroupNonUniformBallot,
        spv::Capability::GroupNonUniformShuffle,
        spv::Capability::GroupNonUniformShuffleRelative,
        spv::Capability::GroupNonUniformQuad,
    ];
    spv::Options {
        lang_version,
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        capabilities: Some(capabilities.into_iter().collect()),
        bounds_check_policies: BoundsCheckPolicies {
            index: BoundsCheckPolicy::Restrict,
            buffer: if robust_buffer_access2 { BoundsCheckPolicy::Unchecked } else { BoundsCheckPolicy::Restrict },
            // No kernel reads an image or a binding array.
            image_load: BoundsCheckPolicy::Restrict,
            binding_array: BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        // As throng builds its kernels (`pipelines::kernel_module`): no loop bounding.
        force_loop_bounding: kernel_runtime_checks().force_loop_bounding,
        ray_query_initialization_tracking: true,
        use_storage_input_output_16: false,
        fake_missing_bindings: false,
        binding_map: spv::BindingMap::default(),
        debug_info: None,
        task_dispatch_limits: None,
        mesh_shader_primitive_indices_clamp: true,
        trace_ray_argument_validation: true,
        emit_int_div_checks: true,
    }
}

/// A resource binding a kernel declares, for its pipeline layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The bind group (descriptor set).
    pub group: u32,
    /// The binding within it.
    pub binding: u32,
    /// A uniform buffer; otherwise a storage buffer.
    pub uniform: bool,
}

/// A kernel as SPIR-V, with the bindings its module declares.
#[derive(Clone, Debug)]
pub struct KernelSpirv {
    /// The SPIR-V words.
    pub words: Vec<u32>,
    /// Every binding the module declares.
    pub bindings: Vec<Binding>,
}

/// The kernel as wgpu's Vulkan backend hands it to the driver: the WGSL of [`Kernel::source`]
/// parsed and validated by naga, overrides processed for the entry point, written as SPIR-V
/// with `options` ([`spirv_options`]) for that entry point alone.
///
/// # Errors
/// [`StatsError::Shader`] where naga refuses the module (a bug in `shaders/`: the unit tests
/// validate every module), or a specialisation's gate is missing from it.
///
/// ```
/// use throng::gpu::ShaderModuleKind;
/// use throng::gpu::stats::{Kernel, kernel_spirv, spirv_options};
/// let kernel = Kernel::production(ShaderModuleKind::FrameLayers, 64, false);
/// // A Vulkan 1.3 device with robustBufferAccess2, as RADV and NVIDIA's drivers offer.
/// let options = spirv_options(ash::vk::API_VERSION_1_3, true);
/// let spirv = kernel_spirv(kernel, &options).unwrap();
/// assert_eq!(spirv.words[0], 0x0723_0203); // SPIR-V's magic number
/// // The chunk's parameters, a uniform buffer.
/// assert!(spirv.bindings.iter().any(|b| (b.group, b.binding, b.uniform) == (1, 0, true)));
/// ```
pub fn kernel_spirv(kernel: Kernel, options: &naga::back::spv::Options<'_>) -> Result<KernelSpirv, StatsError> {
    let shader_error = |message: String| StatsError::Shader { kernel: kernel.name(), message };
    let source = kernel.source()?;
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| shader_error(e.emit_to_string(&source)))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::SUBGROUP)
        .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
        .subgroup_operations(naga::valid::SubgroupOperationSet::all())
        .validate(&module)
        .map_err(|e| shader_error(e.emit_to_string(&source)))?;
    let entry = (naga::ShaderStage::Compute, kernel.kind.entry_point());
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some(entry),
        &naga::back::PipelineConstants::default(),
    )
    .map_err(|e| shader_error(e.to_string()))?;
    let bindings: Vec<Binding> = module
        .global_variables
        .iter()
        .filter_map(|(_, var)| {
            var.binding.as_ref().map(|b| Binding {
                group: b.group,
                binding: b.binding,
                uniform: var.space == naga::AddressSpace::Uniform,
            })
        })
        .collect();
    // wgpu-hal numbers each bind group layout's entries 0, 1, 2… in the layout's order and maps
    // the shader's bindings onto those numbers; throng's layouts (`pipelines::Layouts`) list
    // bindings 0..n in order, so the map is the identity.
    let mut options = options.clone();
    options.binding_map = bindings
        .iter()
        .map(|b| {
            let target =
                naga::back::spv::BindingInfo { descriptor_set: b.group, binding: b.binding, binding_array_size: None };
            (naga::ResourceBinding { group: b.group, binding: b.binding }, target)
        })
        .collect();
    let pipeline_options = naga::back::spv::PipelineOptions { shader_stage: entry.0, entry_point: entry.1.to_owned() };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline_options))
        .map_err(|e| shader_error(e.to_string()))?;
    Ok(KernelSpirv { words, bindings })
}

/// The loops of an AMD (ACO) disassembly: a label line `BBn:` opens a block, and a branch back
/// to a label at or before it (`s_branch BBn`, `s_cbranch_* BBn`) closes a loop whose body is
/// every instruction from that label to the branch. Lines that are neither labels nor
/// instructions (comments starting with `;`, blank lines) are not counted. Loops come outermost
/// first in program order; `depth` counts the loops enclosing each.
///
/// ```
/// use throng::gpu::stats::loop_bodies;
/// let disassembly = "BB0:\n  s_mov_b32 s0, 0\nBB1:\n  v_add_f32 v0, v0, v1\n  s_add_u32 s0, s0, 1\n  s_cbranch_scc1 BB1\n  s_endpgm\n";
/// let loops = loop_bodies(disassembly);
/// assert_eq!((loops[0].label.as_str(), loops[0].instructions, loops[0].depth), ("BB1", 3, 0));
/// ```
#[must_use]
pub fn loop_bodies(disassembly: &str) -> Vec<LoopBody> {
    let mut labels: Vec<(String, usize)> = Vec::new();
    let mut spans: Vec<(String, usize, usize)> = Vec::new();
    let mut instructions = 0usize;
    for line in disassembly.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        if let Some(label) = line.strip_suffix(':').filter(|l| !l.contains(char::is_whitespace)) {
            labels.push((label.to_owned(), instructions));
            continue;
        }
        instructions += 1;
        let mut words = line.split(|c: char| c.is_whitespace() || c == ',');
        let is_branch = words.next().is_some_and(|op| op == "s_branch" || op.starts_with("s_cbranch"));
        if !is_branch {
            continue;
        }
        let target = words.find(|w| !w.is_empty()).unwrap_or_default();
        if let Some((label, start)) = labels.iter().find(|(l, _)| l == target) {
            spans.push((label.clone(), *start, instructions));
        }
    }
    spans.sort_by_key(|&(_, start, end)| (start, std::cmp::Reverse(end)));
    spans
        .iter()
        .map(|(label, start, end)| LoopBody {
            label: label.clone(),
            instructions: end - start,
            depth: spans.iter().filter(|(_, s, e)| s <= start && e >= end && (s, e) != (start, end)).count(),
        })
        .collect()
}

/// A driver's `char[VK_MAX_DESCRIPTION_SIZE]` up to its NUL (or the whole array, should a driver
/// leave none).
fn c_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The Vulkan objects one report needs, destroyed in reverse order on drop.
struct Session {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: Option<ash::Device>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: every object created from the device was destroyed by `build_kernel` before
        // it returned, and nothing else holds the device or instance.
        unsafe {
            if let Some(device) = self.device.take() {
                device.destroy_device(None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// Compiles each kernel on a Vulkan device with `VK_KHR_pipeline_executable_properties` and
/// returns what the driver reports. The device is RADV's when `RADV_FORCE_FAMILY` is set in the
/// environment (Mesa reads it when the loader enumerates devices), otherwise the first device
/// with the extension. The device gets the features wgpu enables that change compilation
/// (`robustBufferAccess`, and `robustBufferAccess2` where offered).
///
/// # Errors
/// [`StatsError::NoLoader`] without a Vulkan loader, [`StatsError::NoDevice`] without a device
/// that has the extension, [`StatsError::Vulkan`] when a Vulkan call fails, and
/// [`StatsError::Shader`] when naga refuses a kernel.
///
/// ```
/// use throng::gpu::ShaderModuleKind;
/// use throng::gpu::stats::{Kernel, driver_statistics};
/// let kernel = Kernel::production(ShaderModuleKind::Frame, 64, false);
/// match driver_statistics(&[kernel]) {
///     Ok(report) => {
///         let executable = &report.kernels[0].executables[0];
///         println!("{}: {:?} spilled", report.device_name, executable.spills());
///     }
///     // No Vulkan, or no device with the extension (set RADV_FORCE_FAMILY=navi21 for RADV's).
///     Err(error) => println!("no driver statistics: {error}"),
/// }
/// ```
pub fn driver_statistics(kernels: &[Kernel]) -> Result<DriverReport, StatsError> {
    // SAFETY: loading the system's Vulkan loader runs its initialisers; that is what every
    // Vulkan program does, and wgpu does the same through this very crate.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| StatsError::NoLoader(e.to_string()))?;
    // SAFETY, for every `unsafe` block of this function: Vulkan queries and creations on the
    // handles made here, with create infos that borrow locals alive across the call; the
    // instance and device are destroyed by `Session`'s drop, after everything made from them.
    let instance_version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(vulkan("vkEnumerateInstanceVersion"))?
        .unwrap_or(vk::API_VERSION_1_0);
    let app = vk::ApplicationInfo::default()
        .application_name(c"throng gpu_stats")
        .api_version(instance_version.min(vk::API_VERSION_1_3));
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
        .map_err(vulkan("vkCreateInstance"))?;
    let mut session = Session { _entry: entry, instance, device: None };
    let instance = &session.instance;

    let want_radv = std::env::var_os("RADV_FORCE_FAMILY").is_some();
    let physical_devices =
        unsafe { instance.enumerate_physical_devices() }.map_err(vulkan("vkEnumeratePhysicalDevices"))?;
    let has_extension = |pd: vk::PhysicalDevice, name: &CStr| {
        unsafe { instance.enumerate_device_extension_properties(pd) }
            .is_ok_and(|exts| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name)))
    };
    let candidates: Vec<vk::PhysicalDevice> = physical_devices
        .into_iter()
        .filter(|&pd| has_extension(pd, ash::khr::pipeline_executable_properties::NAME))
        .collect();
    let is_radv = |pd: vk::PhysicalDevice| {
        c_string(&unsafe { instance.get_physical_device_properties(pd) }.device_name).contains("RADV")
    };
    let physical = if want_radv {
        candidates
            .iter()
            .copied()
            .find(|&pd| is_radv(pd))
            .ok_or(StatsError::NoDevice(" from RADV although RADV_FORCE_FAMILY is set"))?
    } else {
        candidates
            .first()
            .copied()
            .ok_or(StatsError::NoDevice(" (set RADV_FORCE_FAMILY=navi21 for Mesa's AMD compiler)"))?
    };
    let properties = unsafe { instance.get_physical_device_properties(physical) };
    // Vulkan 1.3's subgroup size control, read with the driver's name and the features below.
    let size_control = properties.api_version >= vk::API_VERSION_1_3;
    let mut driver_properties = vk::PhysicalDeviceDriverProperties::default();
    let mut subgroup_sizes = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let driver = if properties.api_version >= vk::API_VERSION_1_2 {
        let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver_properties);
        if size_control {
            properties2 = properties2.push_next(&mut subgroup_sizes);
        }
        unsafe { instance.get_physical_device_properties2(physical, &mut properties2) };
        format!("{} {}", c_string(&driver_properties.driver_name), c_string(&driver_properties.driver_info))
    } else {
        format!("driver version {:#x}", properties.driver_version)
    };

    let robustness2 = has_extension(physical, ash::ext::robustness2::NAME);
    let mut robustness2_features = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut executable_features = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
    let mut size_control_features = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut executable_features);
    if robustness2 {
        features2 = features2.push_next(&mut robustness2_features);
    }
    if size_control {
        features2 = features2.push_next(&mut size_control_features);
    }
    unsafe { instance.get_physical_device_features2(physical, &mut features2) };
    let robust_buffer_access = features2.features.robust_buffer_access;
    let robust_buffer_access2 = robustness2 && robustness2_features.robust_buffer_access2 == vk::TRUE;
    // `Hierarchy::Subgroup` runs only where subgroups are smaller than the workgroup
    // (`Hierarchy::fits`), so its kernels are compiled at the device's smallest subgroup size
    // where the device can be asked for one (RADV compiles compute at 64 lanes otherwise, and at
    // 64 unless told even with `RADV_PERFTEST=cswave32` once a kernel uses subgroups).
    let smallest_subgroup = (size_control_features.subgroup_size_control == vk::TRUE
        && subgroup_sizes.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE))
    .then_some(subgroup_sizes.min_subgroup_size);

    let queue_family = unsafe { instance.get_physical_device_queue_family_properties(physical) }
        .iter()
        .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or(StatsError::NoDevice(" with a compute queue"))? as u32;
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(queue_family).queue_priorities(&priorities)];
    let mut extensions = vec![ash::khr::pipeline_executable_properties::NAME.as_ptr()];
    let mut enable_executable =
        vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
    let mut enable_robustness2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
    let core_features = vk::PhysicalDeviceFeatures::default().robust_buffer_access(robust_buffer_access == vk::TRUE);
    let mut device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_features(&core_features)
        .push_next(&mut enable_executable);
    if robust_buffer_access2 {
        extensions.push(ash::ext::robustness2::NAME.as_ptr());
        device_info = device_info.push_next(&mut enable_robustness2);
    }
    let mut enable_size_control = vk::PhysicalDeviceSubgroupSizeControlFeatures::default().subgroup_size_control(true);
    if smallest_subgroup.is_some() {
        device_info = device_info.push_next(&mut enable_size_control);
    }
    let device_info = device_info.enabled_extension_names(&extensions);
    let device = unsafe { instance.create_device(physical, &device_info, None) }.map_err(vulkan("vkCreateDevice"))?;
    let device = &*session.device.insert(device);
    let executables = ash::khr::pipeline_executable_properties::Device::new(instance, device);

    let options = spirv_options(properties.api_version, robust_buffer_access2);
    let kernels = kernels
        .iter()
        .map(|&kernel| {
            let subgroup_size = smallest_subgroup.filter(|_| kernel.hierarchy.uses_subgroups());
            build_kernel(device, &executables, kernel, &options, subgroup_size)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DriverReport { device_name: c_string(&properties.device_name), driver, kernels })
}

/// One kernel's pipeline built with statistics captured, its figures read, everything destroyed.
fn build_kernel(
    device: &ash::Device,
    executables: &ash::khr::pipeline_executable_properties::Device,
    kernel: Kernel,
    options: &naga::back::spv::Options<'_>,
    subgroup_size: Option<u32>,
) -> Result<KernelStatistics, StatsError> {
    let KernelSpirv { words, bindings } = kernel_spirv(kernel, options)?;
    let num_sets = bindings.iter().map(|b| b.group + 1).max().unwrap_or(0);
    // SAFETY: every handle created here is destroyed before returning (the closure's result is
    // kept and the objects are destroyed whether it failed or not); the create infos borrow
    // locals that outlive the calls.
    unsafe {
        let module = device
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .map_err(vulkan("vkCreateShaderModule"))?;
        let mut set_layouts = Vec::with_capacity(num_sets as usize);
        let mut layout = vk::PipelineLayout::null();
        let mut pipeline = vk::Pipeline::null();
        let result = (|| {
            for set in 0..num_sets {
                let entries: Vec<_> = bindings
                    .iter()
                    .filter(|b| b.group == set)
                    .map(|b| {
                        vk::DescriptorSetLayoutBinding::default()
                            .binding(b.binding)
                            .descriptor_type(if b.uniform {
                                vk::DescriptorType::UNIFORM_BUFFER
                            } else {
                                vk::DescriptorType::STORAGE_BUFFER
                            })
                            .descriptor_count(1)
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                    })
                    .collect();
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&entries);
                set_layouts.push(
                    device.create_descriptor_set_layout(&info, None).map_err(vulkan("vkCreateDescriptorSetLayout"))?,
                );
            }
            layout = device
                .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None)
                .map_err(vulkan("vkCreatePipelineLayout"))?;
            let name = std::ffi::CString::new(kernel.kind.entry_point()).unwrap_or_default();
            let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
                .required_subgroup_size(subgroup_size.unwrap_or_default());
            let mut stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(&name);
            if subgroup_size.is_some() {
                stage = stage.push_next(&mut required);
            }
            let info = vk::ComputePipelineCreateInfo::default()
                .flags(
                    vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                        | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR,
                )
                .stage(stage)
                .layout(layout);
            pipeline = device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|(_, result)| StatsError::Vulkan { call: "vkCreateComputePipelines", result })?[0];
            read_executables(executables, pipeline)
        })();
        if pipeline != vk::Pipeline::null() {
            device.destroy_pipeline(pipeline, None);
        }
        if layout != vk::PipelineLayout::null() {
            device.destroy_pipeline_layout(layout, None);
        }
        for set_layout in set_layouts {
            device.destroy_descriptor_set_layout(set_layout, None);
        }
        device.destroy_shader_module(module, None);
        Ok(KernelStatistics { kernel, spirv_words: words.len(), executables: result? })
    }
}

/// Every executable's properties, statistics and text representations.
///
/// # Safety
/// `pipeline` was created on the extension's device with the capture flags.
unsafe fn read_executables(
    executables: &ash::khr::pipeline_executable_properties::Device,
    pipeline: vk::Pipeline,
) -> Result<Vec<ExecutableStatistics>, StatsError> {
    let pipeline_info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    let properties = unsafe { executables.get_pipeline_executable_properties(&pipeline_info) }
        .map_err(vulkan("vkGetPipelineExecutablePropertiesKHR"))?;
    let mut out = Vec::with_capacity(properties.len());
    for (index, property) in properties.iter().enumerate() {
        let info = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index as u32);
        let statistics = unsafe { executables.get_pipeline_executable_statistics(&info) }
            .map_err(vulkan("vkGetPipelineExecutableStatisticsKHR"))?
            .iter()
            .map(|s| Statistic {
                name: c_string(&s.name),
                description: c_string(&s.description),
                // SAFETY: `format` says which member of the union the driver wrote.
                value: unsafe {
                    match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                            StatisticValue::Bool(s.value.b32 == vk::TRUE)
                        }
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => StatisticValue::Int(s.value.i64),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => StatisticValue::Uint(s.value.u64),
                        _ => StatisticValue::Float(s.value.f64),
                    }
                },
            })
            .collect();
        let representations = unsafe { text_representations(executables, &info) }?;
        let loops = representations.last().map(|(_, text)| loop_bodies(text)).unwrap_or_default();
        out.push(ExecutableStatistics {
            name: c_string(&property.name),
            description: c_string(&property.description),
            subgroup_size: property.subgroup_size,
            statistics,
            representations,
            loops,
        });
    }
    Ok(out)
}

/// The executable's internal representations that are text, read in the extension's two
/// calls: sizes first, then the data into buffers of those sizes.
///
/// # Safety
/// As [`read_executables`].
unsafe fn text_representations(
    executables: &ash::khr::pipeline_executable_properties::Device,
    info: &vk::PipelineExecutableInfoKHR<'_>,
) -> Result<Vec<(String, String)>, StatsError> {
    let mut sized = unsafe { executables.get_pipeline_executable_internal_representations(info) }
        .map_err(vulkan("vkGetPipelineExecutableInternalRepresentationsKHR"))?;
    let mut buffers: Vec<Vec<u8>> = sized.iter().map(|r| vec![0; r.data_size]).collect();
    for (representation, buffer) in sized.iter_mut().zip(&mut buffers) {
        representation.p_data = buffer.as_mut_ptr().cast();
    }
    let mut count = sized.len() as u32;
    let get = executables.fp().get_pipeline_executable_internal_representations_khr;
    // SAFETY: `sized` holds `count` structures whose `p_data` point at buffers of the
    // `data_size` the driver asked for, alive until after the call.
    let result = unsafe { get(executables.device(), info, &mut count, sized.as_mut_ptr()) };
    if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
        return Err(StatsError::Vulkan { call: "vkGetPipelineExecutableInternalRepresentationsKHR", result });
    }
    Ok(sized
        .iter()
        .zip(&buffers)
        .take(count as usize)
        .filter(|(r, _)| r.is_text == vk::TRUE)
        .map(|(r, buffer)| {
            let len = r.data_size.min(buffer.len());
            let text = CStr::from_bytes_until_nul(&buffer[..len]).map_or_else(
                |_| String::from_utf8_lossy(&buffer[..len]).into_owned(),
                |s| s.to_string_lossy().into_owned(),
            );
            (c_string(&r.name), text)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop inside a loop, in the shape ACO prints: labels `BBn:`, one instruction a line,
    /// comments after `;`. The outer loop runs from BB1 to its `s_branch BB1` (instructions 2
    /// to 9: eight), the inner from BB2 to `s_cbranch_scc1 BB2` (4 to 6: three); the forward
    /// branch to BB3 closes no loop.
    #[test]
    fn loop_bodies_of_a_nested_loop() {
        let disassembly = "\
BB0:
    s_mov_b32 s0, 0
BB1:
    v_add_f32 v0, v1, v2
    s_cmp_eq_u32 s0, 4
    ; a comment
BB2:
    v_mul_f32 v3, v0, v0
    s_add_u32 s1, s1, 1
    s_cbranch_scc1 BB2
    s_cbranch_vccz BB3
    s_add_u32 s0, s0, 1
    s_branch BB1
BB3:
    s_endpgm
";
        let loops = loop_bodies(disassembly);
        assert_eq!(
            loops,
            [
                LoopBody { label: "BB1".into(), instructions: 8, depth: 0 },
                LoopBody { label: "BB2".into(), instructions: 3, depth: 1 },
            ]
        );
    }

    #[test]
    fn no_loop_without_a_backward_branch() {
        assert!(loop_bodies("BB0:\n s_cbranch_execz BB1\n v_mov_b32 v0, 0\nBB1:\n s_endpgm\n").is_empty());
    }

    /// The writer options follow the device's API version as wgpu-hal's do, and write SPIR-V
    /// for every module (the words start with SPIR-V's magic number), with its uniform where
    /// the module declares it: the chunk's parameters (group 1), or the procedural stage's
    /// own (group 0).
    #[test]
    fn every_kernel_writes_spirv() {
        assert_eq!(spirv_options(vk::API_VERSION_1_3, true).lang_version, (1, 6));
        assert_eq!(spirv_options(vk::API_VERSION_1_1, true).lang_version, (1, 3));
        let options = spirv_options(vk::API_VERSION_1_3, true);
        for kernel in Kernel::all_for_rig(64) {
            let spirv = kernel_spirv(kernel, &options).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spirv.words.first(), Some(&0x0723_0203), "{}", kernel.name());
            let group = if kernel.kind == ShaderModuleKind::Procedural { 0 } else { 1 };
            let uniform = Binding { group, binding: 0, uniform: true };
            assert!(spirv.bindings.contains(&uniform), "{}", kernel.name());
        }
    }

    /// Each specialisation turns off exactly its gates (the source differs from production's
    /// by those lines alone) and still writes SPIR-V; a module without the gates refuses one.
    #[test]
    fn specialisations_turn_their_gates_off() {
        let options = spirv_options(vk::API_VERSION_1_3, true);
        for kernel in Kernel::specialisations_for_rig(64) {
            let production = Kernel { specialisation: Specialisation::Production, ..kernel }.source().unwrap();
            let source = kernel.source().unwrap_or_else(|e| panic!("{e}"));
            let changed: Vec<(&str, &str)> = production.lines().zip(source.lines()).filter(|(a, b)| a != b).collect();
            let want: Vec<(&str, String)> =
                kernel.specialisation.gates().iter().map(|&l| (l, l.replacen("true", "false", 1))).collect();
            assert_eq!(changed.len(), want.len(), "{}", kernel.name());
            assert!(changed.iter().zip(&want).all(|(c, w)| c.0 == w.0 && c.1 == w.1), "{}: {changed:?}", kernel.name());
            let spirv = kernel_spirv(kernel, &options).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spirv.words.first(), Some(&0x0723_0203), "{}", kernel.name());
        }
        let two_clip =
            Kernel { specialisation: Specialisation::Steady, ..Kernel::production(ShaderModuleKind::Frame, 64, false) };
        assert!(matches!(two_clip.source(), Err(StatsError::Shader { .. })));
        assert_eq!(two_clip.name(), "frame_main/64j steady");
    }

    /// Each path measurement turns off its one gate besides its specialisation's, and still
    /// writes SPIR-V; a module without the gate refuses one.
    #[test]
    fn path_measurements_turn_their_gate_off() {
        let options = spirv_options(vk::API_VERSION_1_3, true);
        let kernels = Kernel::paths_for_rig(64);
        assert_eq!(
            kernels.len(),
            2 * MeasuredPath::ALL.len()
                + crate::gpu::work_model::FRAME_LEVELS_PATHS.len()
                + crate::gpu::work_model::FRAME_PATHS.len()
                // The two level kernels without a band's chain work.
                + 2
        );
        for kernel in kernels {
            let settled = Kernel { without: None, ..kernel }.source().unwrap();
            let source = kernel.source().unwrap_or_else(|e| panic!("{e}"));
            let changed: Vec<(&str, &str)> = settled.lines().zip(source.lines()).filter(|(a, b)| a != b).collect();
            assert_eq!(changed.len(), 1, "{}: {changed:?}", kernel.name());
            assert!(changed[0].0.ends_with("_CODE: bool = true;") && changed[0].1.ends_with("_CODE: bool = false;"));
            let spirv = kernel_spirv(kernel, &options).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spirv.words.first(), Some(&0x0723_0203), "{}", kernel.name());
        }
        let two_clip =
            Kernel { without: Some(MeasuredPath::Additive), ..Kernel::production(ShaderModuleKind::Frame, 64, false) };
        assert!(matches!(two_clip.source(), Err(StatsError::Shader { .. })));
        assert_eq!(two_clip.name(), "frame_main/64j-additive");
    }
}
