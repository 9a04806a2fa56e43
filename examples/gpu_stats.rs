//! Prints what a real GPU driver's compiler makes of every production kernel: registers,
//! spills, shared memory, waves per SIMD, instruction counts and each loop body's length
//! (`throng::gpu::stats`), for the built-in humanoid's 26- and 64-joint rigs.
//!
//! No GPU needed: with `RADV_FORCE_FAMILY=navi21` Mesa's AMD driver compiles for an RX 6800-class
//! chip with no hardware. Without it the first Vulkan device that reports pipeline statistics is
//! used (an NVIDIA GPU reports its own driver's figures).
//!
//! ```text
//! RADV_FORCE_FAMILY=navi21 cargo run --release --example gpu_stats
//! RADV_FORCE_FAMILY=navi21 cargo run --release --example gpu_stats -- --joints 64 --all --dump frame_layers_main
//! ```
//! `--joints N[,M…]` picks rig sizes (default 26,64), `--all` lists every statistic the driver
//! gives instead of the usual columns, `--dump ENTRY` prints that entry point's text
//! representations (RADV: NIR, ACO IR and the disassembly) after the table. After each rig's
//! production kernels come the production crowd's layered pass kernels (`… steady-pass`,
//! `… switching-pass`: `throng::gpu::ShapePass`), then the layered frames' measurement specialisations
//! (`throng::gpu::stats::Specialisation`: `… steady` without the switch frame's code, `…
//! settled` without the decay's either), whose differences the work model's regions are.
//!
//! First it prints the work model (`throng::gpu::work_model`, no driver needed) per character
//! of the benches' two frames on both humanoids, for every kernel variant (`FrameKernel`), on
//! AMD's 64-wide waves and NVIDIA's 32-wide warps: modelled wave-instructions, wave-steps, the
//! hierarchy's wave-steps (ancestor walks or levels) and products, barriers and bytes; then the
//! procedural stage's (`procedural_main`, issue #21's load on the 64-joint humanoid) against
//! the layered frame's of each variant.

#[path = "../benches/support/mod.rs"]
mod support;

use std::process::ExitCode;

use throng::demo::DemoCharacter;
use throng::gpu::stats::{DriverReport, ExecutableStatistics, Kernel, driver_statistics};
use throng::gpu::work_model::{KernelCosts, ProceduralCosts, Work, WorkModel, WorkModelError};
use throng::gpu::{FrameKernel, Hierarchy, Specialisation};

/// Characters per frame the model averages over (the layered frame: over a whole switch period).
const MODEL_CHARACTERS: usize = 256;

/// The fused kernel composing the hierarchy otherwise than by walks, and the wave sizes the
/// model counts each on, where a crowd would run it: in one subgroup on subgroups smaller than
/// the workgroup and the rig (warp32, the 64-joint humanoid); by pointer doubling on any wave.
const COMPOSED: [(Hierarchy, u32); 3] =
    [(Hierarchy::Subgroup, 32), (Hierarchy::Doubling, 64), (Hierarchy::Doubling, 32)];

/// The columns of the table: a heading and the driver statistics summed into it, by RADV's names
/// and NVIDIA's ("Register Count", "Shared Memory Size", "Local Memory Size": a thread's
/// registers, a workgroup's shared memory and a thread's local memory, the spills and
/// dynamically indexed arrays its registers could not hold).
const COLUMNS: [(&str, &[&str]); 8] = [
    ("VGPRs", &["VGPRs", "Register Count"]),
    ("SGPRs", &["SGPRs"]),
    ("spills", &["Spilled VGPRs", "Spilled SGPRs"]),
    ("LDS B", &["LDS size", "Shared Memory Size"]),
    ("scratch B", &["Scratch size", LOCAL_MEMORY]),
    ("waves/SIMD", &["Subgroups per SIMD"]),
    ("instrs", &["Instructions"]),
    ("code B", &["Code size"]),
];

struct Args {
    joints: Vec<usize>,
    all: bool,
    dump: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { joints: vec![26, 64], all: false, dump: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--joints" => {
                let list = it.next().ok_or("--joints needs a list such as 26,64")?;
                args.joints = list
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|_| format!("--joints: {n:?} is not a joint count")))
                    .collect::<Result<_, _>>()?;
                if let Some(bad) = args.joints.iter().find(|&&n| n == 0 || n > throng::MAX_JOINTS) {
                    return Err(format!("--joints: {bad} is outside 1..={}", throng::MAX_JOINTS));
                }
            }
            "--all" => args.all = true,
            "--dump" => args.dump = Some(it.next().ok_or("--dump needs an entry point such as frame_layers_main")?),
            other => return Err(format!("unknown argument {other:?} (--joints LIST, --all, --dump ENTRY)")),
        }
    }
    Ok(args)
}

/// NVIDIA's per-thread local memory. Its driver 580 reports it with bit 36 set on every kernel
/// (2^36 + 0, 16, 32, 128 … bytes on the H200), so the column keeps the bits below 32.
const LOCAL_MEMORY: &str = "Local Memory Size";

fn column(executable: &ExecutableStatistics, names: &[&str]) -> String {
    let value = |name: &&str| {
        let value = executable.get(name)?.as_f64();
        Some(if *name == LOCAL_MEMORY { value % 2f64.powi(32) } else { value })
    };
    let values: Vec<f64> = names.iter().filter_map(value).collect();
    if values.is_empty() { "–".to_owned() } else { format!("{}", values.iter().sum::<f64>()) }
}

fn print_table(report: &DriverReport, all: bool) {
    println!("device: {}  driver: {}", report.device_name, report.driver);
    if !all {
        let headings: Vec<&str> = COLUMNS.iter().map(|(h, _)| *h).collect();
        println!("| kernel | wave | {} | loop bodies (instructions, nesting) |", headings.join(" | "));
        println!("|---|---|{}---|", "---|".repeat(COLUMNS.len()));
    }
    for kernel in &report.kernels {
        for executable in &kernel.executables {
            if all {
                println!(
                    "{} ({}, wave {}, {} SPIR-V words)",
                    kernel.kernel.name(),
                    executable.name,
                    executable.subgroup_size,
                    kernel.spirv_words
                );
                for s in &executable.statistics {
                    println!("    {:<28} {:>10}   {}", s.name, s.value.as_f64(), s.description);
                }
                continue;
            }
            let cells: Vec<String> = COLUMNS.iter().map(|(_, names)| column(executable, names)).collect();
            let loops: Vec<String> =
                executable.loops.iter().map(|l| format!("{}{}", l.instructions, "'".repeat(l.depth))).collect();
            println!(
                "| {} | {} | {} | {} |",
                kernel.kernel.name(),
                executable.subgroup_size,
                cells.join(" | "),
                loops.join(" ")
            );
        }
    }
    if !all {
        println!("(loop bodies in program order; each ' marks one enclosing loop)");
    }
}

fn print_work(rig: &str, kernel: &str, frame: &str, wave: u32, w: &Work) {
    println!(
        "| {rig} | {kernel} | {frame} | {wave} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
        w.wave_instructions,
        w.wave_steps,
        w.model_steps,
        w.mesh_steps,
        w.walk_products,
        w.level_products,
        w.barriers,
        w.bytes_read,
        w.bytes_written,
        w.bytes(),
        w.clip_bytes_read,
    );
}

/// The work model of the default crowd (its two shape passes, `Specialisation::Production`) on
/// `rig` at `wave` lanes, writing `output_bytes_per_joint` a joint, sampling full clips (48
/// bytes a joint and frame).
fn default_crowd(rig: &throng::Rig, wave: u32, output_bytes_per_joint: u32) -> Result<WorkModel, WorkModelError> {
    Ok(WorkModel::new(rig, wave, output_bytes_per_joint, 48)?.with_specialisation(Specialisation::Production))
}

/// The work model's table: both humanoids, every kernel variant, the layered and the two-clip
/// frame, wave64 and warp32, with the instruction costs of RADV's navi21 loop bodies, the fused
/// layered frames as the default crowd runs them (two shape passes); then the default kernel's
/// layered frame in one dispatch (`+whole`, `Specialisation::Whole`) and with its displayed
/// poses stored (`+stored`, `Specialisation::Stored`).
fn print_model() -> Result<(), WorkModelError> {
    println!("work model per character (throng::gpu::work_model; instruction costs: RADV navi21 loop bodies)");
    println!(
        "| rig | kernel | frame | wave | wave-instrs | wave-steps | l2m steps | mesh steps | walk / level products | barriers | B read | B written | B total | clip B |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let (samples, programs) = support::layered_period(MODEL_CHARACTERS);
    let (two_clip_samples, ranges) = support::two_clip_crowd(MODEL_CHARACTERS, 0, 1);
    for (name, demo) in [("26 joints", DemoCharacter::humanoid()), ("64 joints", DemoCharacter::humanoid_64())] {
        let scenario = support::scenario_of(demo);
        for kernel in FrameKernel::ALL {
            for wave in [64, 32] {
                let model = default_crowd(&scenario.rig, wave, 64)?.with_kernel(kernel);
                let costs = KernelCosts::layered_radv_navi21(kernel);
                let layered = model.layered_frame(&scenario.layers, &programs, &samples, &costs)?;
                print_work(name, kernel.name(), "layered", wave, &layered);
                let costs = KernelCosts::two_clip_radv_navi21(kernel);
                let two_clip = model.two_clip_frame(&two_clip_samples, &ranges, &costs)?;
                print_work(name, kernel.name(), "two-clip", wave, &two_clip);
            }
        }
        let kernel = FrameKernel::default();
        for wave in [64, 32] {
            let model = WorkModel::new(&scenario.rig, wave, 64, 48)?.with_kernel(kernel);
            let costs = KernelCosts::layered_radv_navi21(kernel);
            let layered = model.layered_frame(&scenario.layers, &programs, &samples, &costs)?;
            print_work(name, &format!("{}+whole", kernel.name()), "layered", wave, &layered);
            let layered = model.with_specialisation(Specialisation::Stored).layered_frame(
                &scenario.layers,
                &programs,
                &samples,
                &costs,
            )?;
            print_work(name, &format!("{}+stored", kernel.name()), "layered", wave, &layered);
        }
        for (hierarchy, wave) in COMPOSED {
            let model = default_crowd(&scenario.rig, wave, 64)?.with_hierarchy(hierarchy);
            if model.hierarchy() != hierarchy {
                continue;
            }
            let kernel = format!("fused+{}", hierarchy.name());
            let costs = model.layered_costs_radv_navi21();
            let layered = model.layered_frame(&scenario.layers, &programs, &samples, &costs)?;
            print_work(name, &kernel, "layered", wave, &layered);
            let costs = model.two_clip_costs_radv_navi21();
            let two_clip = model.two_clip_frame(&two_clip_samples, &ranges, &costs)?;
            print_work(name, &kernel, "two-clip", wave, &two_clip);
        }
    }
    println!();
    Ok(())
}

/// Where the 64-joint humanoid's layered frame goes, per character, for every kernel on
/// wave64 and warp32: the modelled wave-instructions by region (`KernelCosts::regions`; the
/// switch frame's code and the decay measured by the specialisations, the level kernel's other
/// layer-loop regions its remaining straight-line body split in the fused kernel's
/// proportions), and the bytes by what they are (the output, the layer memory, the rest:
/// programs and samples).
fn print_breakdown() -> Result<(), WorkModelError> {
    println!("layered frame per character by region (64 joints; wave-instructions, then bytes)");
    let (samples, programs) = support::layered_period(MODEL_CHARACTERS);
    let scenario = support::scenario_of(DemoCharacter::humanoid_64());
    let forgetful: Vec<_> =
        scenario.layers.iter().map(|l| throng::program::LayerSetup { needs_memory: false, ..l.clone() }).collect();
    let mut headings = Vec::new();
    let mut columns: Vec<Vec<(String, f64)>> = Vec::new();
    let columns_of = FrameKernel::ALL
        .into_iter()
        .flat_map(|kernel| [64, 32].map(|wave| (kernel, Hierarchy::Walks, wave)))
        .chain(COMPOSED.map(|(hierarchy, wave)| (FrameKernel::Fused, hierarchy, wave)));
    for (kernel, hierarchy, wave) in columns_of {
        let composed = match hierarchy {
            Hierarchy::Walks => String::new(),
            other => format!("+{}", other.name()),
        };
        headings.push(format!("{}{composed} w{wave}", kernel.name()));
        let model = default_crowd(&scenario.rig, wave, 64)?.with_kernel(kernel).with_hierarchy(hierarchy);
        assert_eq!(model.hierarchy(), hierarchy, "the 64-joint humanoid composes so on this wave");
        let costs = model.layered_costs_radv_navi21();
        let mut column = Vec::new();
        for (name, alone) in costs.regions() {
            let work = model.layered_frame(&scenario.layers, &programs, &samples, &alone)?;
            column.push((name.to_owned(), work.wave_instructions));
        }
        let all = model.layered_frame(&scenario.layers, &programs, &samples, &costs)?;
        column.push(("= wave-instructions".to_owned(), all.wave_instructions));
        let silent = default_crowd(&scenario.rig, wave, 0)?.with_kernel(kernel).with_hierarchy(hierarchy);
        let without_output = silent.layered_frame(&scenario.layers, &programs, &samples, &costs)?.bytes();
        let without_memory = model.layered_frame(&forgetful, &programs, &samples, &costs)?.bytes();
        column.push(("bytes: output".to_owned(), all.bytes() - without_output));
        column.push(("bytes: layer memory".to_owned(), all.bytes() - without_memory));
        column.push(("bytes: programs, samples".to_owned(), without_memory - (all.bytes() - without_output)));
        column.push(("= bytes".to_owned(), all.bytes()));
        columns.push(column);
    }
    println!("| region | {} |", headings.join(" | "));
    println!("|---|{}", "---|".repeat(headings.len()));
    for (row, (name, _)) in columns[0].iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|c| format!("{:.0}", c[row].1)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    println!();
    Ok(())
}

/// The procedural stage per character on issue #21's load (look-at on the four-joint neck, two-bone
/// IK on both legs, every character's weights 1; `support::procedural_crowd`), on wave64 and
/// warp32, and its share of the layered frame's modelled wave-instructions and bytes for each
/// kernel variant. With the stage on, a crowd runs the stage path, whose intermediates (local
/// poses written and read, model matrices written and read) the last column counts.
fn print_procedural() -> Result<(), WorkModelError> {
    println!("procedural stage per character (64 joints: look-at on the 4-joint neck, two-bone IK on both legs)");
    let (samples, programs) = support::layered_period(MODEL_CHARACTERS);
    let scenario = support::scenario_of(DemoCharacter::humanoid_64());
    let (setup, targets) = support::procedural_crowd(&scenario.rig, MODEL_CHARACTERS);
    let variants: Vec<String> =
        FrameKernel::ALL.iter().map(|k| format!("layered {0} | share of {0}", k.name())).collect();
    println!(
        "| wave | wave-instrs | walk steps | B read | B written | B total | {} | stage path's intermediates B |",
        variants.join(" | ")
    );
    println!("|---|---|---|---|---|---|{}---|", "---|---|".repeat(FrameKernel::ALL.len()));
    let joints = scenario.rig.num_joints() as f64;
    for wave in [64, 32] {
        let model = default_crowd(&scenario.rig, wave, 64)?;
        let stage = model.procedural_frame(&setup, &targets, &ProceduralCosts::radv_navi21())?;
        let mut cells = Vec::new();
        for kernel in FrameKernel::ALL {
            let layered = model.clone().with_kernel(kernel).layered_frame(
                &scenario.layers,
                &programs,
                &samples,
                &KernelCosts::layered_radv_navi21(kernel),
            )?;
            cells.push(format!("{:.0} / {:.0} B", layered.wave_instructions, layered.bytes()));
            cells.push(format!(
                "{:.1} % / {:.1} %",
                100.0 * stage.wave_instructions / layered.wave_instructions,
                100.0 * stage.bytes() / layered.bytes()
            ));
        }
        println!(
            "| {wave} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.0} |",
            stage.wave_instructions,
            stage.walk_products,
            stage.bytes_read,
            stage.bytes_written,
            stage.bytes(),
            cells.join(" | "),
            // Layers write the local poses (48 B a joint) and local-to-model reads them; it writes
            // the model matrices (64 B) and skinning reads them.
            joints * 2.0 * (48.0 + 64.0),
        );
    }
    println!();
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("gpu_stats: {message}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = print_model().and_then(|()| print_breakdown()).and_then(|()| print_procedural()) {
        eprintln!("gpu_stats: work model: {error}");
        return ExitCode::FAILURE;
    }
    // Each rig's production kernels, the production crowd's layered pass kernels (rows such as
    // `frame_layers_main/64j steady-pass`) and the fused frames composing the hierarchy in a
    // subgroup (`frame_main/64j+subgroup`), then the layered frames' specialisations and path
    // measurements the work model measures regions with (rows such as
    // `frame_layers_levels_main/64j steady` and `… settled-additive`), and the layered fused
    // frame built for no layers (`… settled layerless`) and for a local-space override's stack
    // (`… local-override`).
    let mut kernels: Vec<Kernel> = args
        .joints
        .iter()
        .flat_map(|&n| [Kernel::all_for_rig(n), Kernel::passes_for_rig(n), Kernel::composed_for_rig(n)].concat())
        .collect();
    kernels.extend(args.joints.iter().flat_map(|&n| Kernel::specialisations_for_rig(n)));
    kernels.extend(args.joints.iter().flat_map(|&n| Kernel::paths_for_rig(n)));
    kernels.extend(args.joints.iter().flat_map(|&n| Kernel::layerless_for_rig(n)));
    kernels.extend(args.joints.iter().flat_map(|&n| Kernel::local_override_for_rig(n)));
    kernels.extend(args.joints.iter().flat_map(|&n| Kernel::roundless_for_rig(n)));
    // The procedural stage's kernel is the same for every rig: once.
    let mut named = std::collections::HashSet::new();
    kernels.retain(|k| named.insert(k.name()));
    let report = match driver_statistics(&kernels) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("gpu_stats: {error}");
            return ExitCode::FAILURE;
        }
    };
    print_table(&report, args.all);
    if let Some(entry) = &args.dump {
        for kernel in report.kernels.iter().filter(|k| k.kernel.kind.entry_point() == entry) {
            for executable in &kernel.executables {
                for (name, text) in &executable.representations {
                    println!("\n===== {} — {} =====\n{text}", kernel.kernel.name(), name);
                }
            }
        }
    }
    ExitCode::SUCCESS
}
