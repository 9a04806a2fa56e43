//! Compares the fused frames' kernel variants (`throng::gpu::FrameKernel`) on one device: first
//! checks every variant's matrices against variant 0's, then times all variants interleaved,
//! both frames (two-clip and layered), and prints per variant the median and minimum GPU time of
//! a frame, the bandwidth against the work model's bytes, and the issue efficiency the model's
//! instruction count implies. A third frame, `layered-steady` (the layered frame with every
//! switch and frozen fade taken out), runs the default variant as built and as each measurement
//! specialisation of its layered kernel (`throng::gpu::Specialisation`: `+steady` without the
//! switch frame's code, `+settled` nor the decay; checked against the variant as built, then
//! timed), so that the device says what that code costs frames that never run it: the
//! registers and occupancy the work model does not see, which decide whether the switching
//! characters are worth a kernel of their own. The layered frames also run the default variant
//! as `+stored` (`Specialisation::Stored`: every displayed pose stored each frame rather than
//! replayed at a switch), so that the device weighs the bytes the replay saves against the
//! instructions it costs, and as `+whole` (`Specialisation::Whole`: every character in the
//! production kernel, where the variant as built runs the characters that do not switch in the
//! steady kernel and the others in a second pass), so that it weighs the steady pass. Both
//! frames run `fused+subgroup` besides (`throng::gpu::Hierarchy::Subgroup`: the fused kernel
//! composing local-to-model and the mesh-space override depth by depth in one subgroup), on a
//! device whose subgroups can (`Hierarchy::fits`; elsewhere the row says it is skipped, since
//! the crowd would run another hierarchy), and `fused+doubling` (`Hierarchy::Doubling`:
//! local-to-model and the mesh-space override by pointer doubling, on any device). Each result
//! is written to the results file as soon as it is known,
//! so a run cut short still leaves its rows. `scripts/gpu-bench.sh` runs it (BENCHMARKS.md).
//!
//! ```text
//! cargo run --release --example gpu_variants -- --out gpu-variants.tsv
//! cargo run --release --example gpu_variants -- --validate 64 --characters 200 --frames 2 --rounds 2 --out dry.tsv
//! ```
//! `--validate N` characters for the check (default 10000), `--characters LIST` sizes to time
//! (default 100000,1000000), `--frames F` frames per timed batch (default 10), `--rounds R`
//! batches per variant, interleaved variant by variant (default 5), `--wave W` the wave size the
//! model counts in (default 32, NVIDIA's warps), `--issue-rate R` wave-instructions the device
//! issues per second at most (default 1.045e12: an H200's 132 SMs × 4 schedulers × 1.98 GHz).
//!
//! The layered frame is also timed with the procedural stage (issue #21's load, look-at on the
//! four-joint neck and two-bone IK on both legs of every character, `support::procedural_crowd`):
//! a crowd with procedural work runs the stage path (transition, layers, procedural,
//! local-to-model, skinning) rather than the fused frame, so each round times it whole and
//! stage by stage, interleaved with the variants, and the stage's own pass is set against the
//! default variant's layered frame without it. Its check is against the CPU evaluator
//! (`FrameJob::run_procedural`), as the GPU tests check it.
//!
//! Rows of the results file, tab-separated: `validate frame kernel characters worst_abs_diff
//! verdict` (within 1e-4 of variant 0 — on `layered-steady`, of the default variant as built —
//! or for `layered+procedural` of the CPU, NaN failing);
//! `time frame kernel characters chunks median_ms min_ms frames model_bytes_per_character gb_s
//! model_wave_instructions_per_character issue_efficiency`; and per size `procedural layered
//! characters chunks with_stage_median_ms without_median_ms stage_median_ms stage_min_ms share
//! model_wave_instructions_per_character issue_efficiency`: the frame with the stage (the
//! stage path, whole), the default variant's layered frame without it, the procedural pass
//! alone, its share of the frame without it (`stage / without`; issue #21's target: under
//! 0.15), and the work model's figure for the stage. The exit status is 1 when any check
//! failed.

#[path = "../benches/support/mod.rs"]
mod support;

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use throng::eval::frame_layers::{EvalContext, FrameJob, ProceduralInputs};
use throng::gpu::work_model::{ProceduralCosts, Work, WorkModel};
use throng::gpu::{FrameKernel, GpuContext, GpuCrowd, GpuCrowdOptions, GpuProfiler, Hierarchy, Specialisation, Stage};
use throng::program::{ClipSample, LayerProgram, OutputLayout, ProceduralRig, ProceduralTargets};

/// The largest difference from variant 0 a variant may show: the GPU tests' tolerance against
/// the CPU evaluator.
const TOLERANCE: f32 = 1e-4;
/// Frames the check runs: a whole switch period of the layered scenario (crossfades,
/// inertialization captures and decays).
const VALIDATE_FRAMES: usize = 32;
/// Characters the work model averages over (the scenario repeats with the character index).
const MODEL_CHARACTERS: usize = 1024;
/// Seconds per frame of the timed and checked frames.
const DT_S: f32 = 1.0 / 60.0;
/// The stage path's passes with the procedural stage, in order.
const PROCEDURAL_STAGES: [Stage; 5] =
    [Stage::Transition, Stage::Layers, Stage::Procedural, Stage::LocalToModel, Stage::Skinning];

struct Args {
    validate: usize,
    characters: Vec<usize>,
    frames: usize,
    rounds: usize,
    wave: u32,
    issue_rate: f64,
    out: std::path::PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        validate: 10_000,
        characters: vec![100_000, 1_000_000],
        frames: 10,
        rounds: 5,
        wave: 32,
        issue_rate: 1.045e12,
        out: "gpu-variants.tsv".into(),
    };
    let mut it = std::env::args().skip(1);
    let number = |v: Option<String>, flag: &str| -> Result<usize, String> {
        v.and_then(|v| v.parse().ok()).filter(|&n| n > 0).ok_or(format!("{flag} needs a positive whole number"))
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--validate" => args.validate = number(it.next(), "--validate")?,
            "--frames" => args.frames = number(it.next(), "--frames")?,
            "--rounds" => args.rounds = number(it.next(), "--rounds")?,
            "--wave" => args.wave = number(it.next(), "--wave")? as u32,
            "--characters" => {
                let list = it.next().ok_or("--characters needs a comma-separated list")?;
                args.characters = list
                    .split(',')
                    .map(|n| n.trim().parse().ok().filter(|&n| n > 0).ok_or(format!("--characters: {n:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--issue-rate" => {
                args.issue_rate = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|r: &f64| r.is_finite() && *r > 0.0)
                    .ok_or("--issue-rate needs a positive number")?;
            }
            "--out" => args.out = it.next().ok_or("--out needs a path")?.into(),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// The results file: every row written and flushed at once, and echoed.
struct Results(std::fs::File);

impl Results {
    fn row(&mut self, cells: &[String]) -> std::io::Result<()> {
        let line = cells.join("\t");
        println!("{line}");
        writeln!(self.0, "{line}")?;
        self.0.flush()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    TwoClip,
    Layered,
    /// The layered frame without switches or frozen fades (`steady_frame`), for the default
    /// variant's layered kernel and its measurement specialisations.
    Steady,
}

impl Frame {
    const ALL: [Self; 3] = [Self::TwoClip, Self::Layered, Self::Steady];

    fn name(self) -> &'static str {
        match self {
            Self::TwoClip => "two-clip",
            Self::Layered => "layered",
            Self::Steady => "layered-steady",
        }
    }

    /// What is checked and timed on this frame: every kernel variant as built and the fused one
    /// composing its hierarchy in a subgroup and by pointer doubling (on the layered frame also
    /// the default one with
    /// every character in one kernel and with its displayed poses stored), or on the steady
    /// frame the default variant as built and as each specialisation; the first is the
    /// reference of the others.
    fn variants(self) -> Vec<Variant> {
        let built = |kernel| Variant(kernel, Specialisation::Production, Hierarchy::Walks);
        // The default crowd's kernel and hierarchy, as each specialisation.
        let default = |s| Variant(FrameKernel::default(), s, Hierarchy::default());
        // The fused kernel composing its hierarchy in a subgroup and by pointer doubling.
        let composed = |hierarchy| Variant(FrameKernel::Fused, Specialisation::Production, hierarchy);
        let [subgroup, doubling] = [Hierarchy::Subgroup, Hierarchy::Doubling].map(composed);
        match self {
            Self::TwoClip => FrameKernel::ALL.into_iter().map(built).chain([subgroup, doubling]).collect(),
            // Variant 0 first (the reference), then what the next device run is to settle: at
            // 1M an H200 holds four 64-joint layered crowds (some 30 GiB each), and the fifth on,
            // `levels` and `+stored` (timed by earlier runs), are skipped as out of memory
            // (`within_memory`).
            Self::Layered => {
                let mut order = vec![built(FrameKernel::Fused), subgroup, doubling, default(Specialisation::Whole)];
                order.extend(FrameKernel::ALL.into_iter().filter(|&k| k != FrameKernel::Fused).map(built));
                order.push(default(Specialisation::Stored));
                order
            }
            // `Whole` second: at 1M an H200 holds four 64-joint layered crowds (some 30 GiB
            // each), and a fifth is skipped as out of memory (`within_memory`).
            Self::Steady => {
                let mut order = Specialisation::ALL;
                order[1..].sort_by_key(|&s| s != Specialisation::Whole);
                order.into_iter().map(default).collect()
            }
        }
    }
}

/// A kernel variant, as built or as a measurement specialisation of its layered frame, and how
/// its fused frames compose the hierarchy.
#[derive(Clone, Copy, PartialEq)]
struct Variant(FrameKernel, Specialisation, Hierarchy);

impl Variant {
    /// The kernel's name, then `+steady`, `+settled`, `+stored` or `+whole` for a
    /// specialisation, `+subgroup` or `+doubling` for the hierarchy composed so.
    fn name(self) -> String {
        match (self.1, self.2) {
            (Specialisation::Production, Hierarchy::Walks) => self.0.name().to_owned(),
            (Specialisation::Production, h) => format!("{}+{}", self.0.name(), h.name()),
            (s, _) => format!("{}+{}", self.0.name(), s.name()),
        }
    }

    /// What `crowd`, built as this variant, runs where it is not the variant: a `+subgroup`
    /// variant where the device's subgroups cannot compose the rig's hierarchy
    /// (`Hierarchy::fits`) or are not full (the crowd's probe at creation) runs another
    /// hierarchy, and would time another variant under this one's name.
    fn runs_instead(self, crowd: &GpuCrowd) -> Option<Hierarchy> {
        Some(crowd.hierarchy()).filter(|&runs| runs != self.2)
    }
}

/// The benches' layered frame `frame` with every switch and frozen fade taken out (each
/// program's `Specialisation::SWITCH_FLAGS` cleared): crossfades and layers fading in
/// and out remain, nothing is captured, frozen or decayed, so every specialisation evaluates it.
fn steady_frame(num_characters: usize, frame: usize) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    let (samples, mut programs) = support::layered_frame(num_characters, frame);
    for p in &mut programs {
        p.flags &= !Specialisation::SWITCH_FLAGS;
    }
    (samples, programs)
}

/// The frames' inputs: per frame, the samples and either sample ranges or layer programs.
enum Inputs {
    TwoClip(Vec<ClipSample>, Vec<std::ops::Range<u32>>),
    Layered(Vec<(Vec<ClipSample>, Vec<LayerProgram>)>),
}

impl Inputs {
    fn new(frame: Frame, num_characters: usize, frames: usize) -> Self {
        match frame {
            // Walk and run, clips 0 and 1 of the scenario.
            Frame::TwoClip => {
                let (samples, ranges) = support::two_clip_crowd(num_characters, 0, 1);
                Self::TwoClip(samples, ranges)
            }
            Frame::Layered => Self::Layered((0..frames).map(|f| support::layered_frame(num_characters, f)).collect()),
            Frame::Steady => Self::Layered((0..frames).map(|f| steady_frame(num_characters, f)).collect()),
        }
    }

    fn upload(&self, crowd: &mut GpuCrowd, frame: usize) -> Result<(), throng::gpu::GpuError> {
        match self {
            Self::TwoClip(samples, ranges) => crowd.set_samples(samples, ranges),
            Self::Layered(frames) => {
                let (samples, programs) = &frames[frame % frames.len()];
                crowd.set_frame(samples, programs, DT_S)
            }
        }
    }
}

fn build(
    gpu: &GpuContext,
    scenario: &support::Scenario,
    frame: Frame,
    Variant(kernel, specialisation, hierarchy): Variant,
) -> Result<GpuCrowd, throng::gpu::GpuError> {
    let options = GpuCrowdOptions { kernel, specialisation, hierarchy, ..GpuCrowdOptions::default() };
    let support::Scenario { rig, clips, layers, .. } = scenario;
    match frame {
        Frame::TwoClip => GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, options),
        Frame::Layered | Frame::Steady => GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, options),
    }
}

/// The largest absolute difference, NaN when either side has one.
fn worst_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::NAN;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, |worst, d| if d.is_nan() || worst.is_nan() { f32::NAN } else { worst.max(d) })
}

/// Every variant's output after a switch period, against variant 0's. Returns whether all pass.
fn validate(
    gpu: &GpuContext,
    scenario: &support::Scenario,
    args: &Args,
    out: &mut Results,
) -> Result<bool, Box<dyn std::error::Error>> {
    let mut all_pass = true;
    for frame in Frame::ALL {
        let inputs = Inputs::new(frame, args.validate, VALIDATE_FRAMES);
        let mut reference = None;
        for variant in frame.variants() {
            let mut crowd = build(gpu, scenario, frame, variant)?;
            if let Some(runs) = variant.runs_instead(&crowd) {
                let (frame, variant, runs) = (frame.name(), variant.name(), runs.name());
                println!("# {frame} {variant}: skipped: this device runs the hierarchy {runs} (GpuCrowd::hierarchy)");
                continue;
            }
            for f in 0..VALIDATE_FRAMES {
                inputs.upload(&mut crowd, f)?;
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                crowd.encode(&mut encoder);
                gpu.queue.submit([encoder.finish()]);
            }
            let output = crowd.read_output_blocking()?;
            let worst = reference.as_deref().map_or(0.0, |r| worst_abs_diff(r, &output));
            let pass = worst <= TOLERANCE;
            all_pass &= pass;
            out.row(&[
                "validate".into(),
                frame.name().into(),
                variant.name(),
                args.validate.to_string(),
                format!("{worst:e}"),
                if pass { "pass" } else { "FAIL" }.into(),
            ])?;
            reference.get_or_insert(output);
        }
    }
    let pass = validate_procedural(gpu, scenario, args, out)?;
    Ok(all_pass && pass)
}

/// A crowd of the layered scenario with stage buffers, for the procedural stage.
fn procedural_crowd(gpu: &GpuContext, scenario: &support::Scenario) -> Result<GpuCrowd, throng::gpu::GpuError> {
    let options = GpuCrowdOptions { stage_buffers: true, ..GpuCrowdOptions::default() };
    let support::Scenario { rig, clips, layers, .. } = scenario;
    GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, options)
}

/// The layered frame with the procedural stage over a switch period, against the CPU
/// evaluator's. Returns whether it passes.
fn validate_procedural(
    gpu: &GpuContext,
    scenario: &support::Scenario,
    args: &Args,
    out: &mut Results,
) -> Result<bool, Box<dyn std::error::Error>> {
    let n = args.validate;
    let (setup, targets) = support::procedural_crowd(&scenario.rig, n);
    let mut crowd = procedural_crowd(gpu, scenario)?;
    let joints = scenario.rig.num_joints();
    let mut context = EvalContext::for_layers(n, &scenario.layers, joints);
    let mut expected = vec![0.0; n * joints * OutputLayout::Mat4.floats_per_joint()];
    let mut clips_sampled = vec![0; n];
    for f in 0..VALIDATE_FRAMES {
        let (samples, programs) = support::layered_frame(n, f);
        crowd.set_frame(&samples, &programs, DT_S)?;
        crowd.set_procedural(&setup, &targets)?;
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        crowd.encode(&mut encoder);
        gpu.queue.submit([encoder.finish()]);
        FrameJob {
            rig: &scenario.rig,
            clips: &scenario.clips,
            layers: &scenario.layers,
            samples: &samples,
            programs: &programs,
            dt_s: DT_S,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut expected,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        }
        .run_procedural(ProceduralInputs { setup: &setup, targets: &targets })?;
    }
    let worst = worst_abs_diff(&expected, &crowd.read_output_blocking()?);
    let pass = worst <= TOLERANCE;
    out.row(&[
        "validate".into(),
        "layered+procedural".into(),
        "stages".into(),
        n.to_string(),
        format!("{worst:e}"),
        if pass { "pass" } else { "FAIL" }.into(),
    ])?;
    Ok(pass)
}

/// The work model's figures per character for `frame` on `kernel`.
fn model(
    scenario: &support::Scenario,
    frame: Frame,
    Variant(kernel, specialisation, hierarchy): Variant,
    wave: u32,
) -> Result<Work, Box<dyn std::error::Error>> {
    let model = WorkModel::new(&scenario.rig, wave, 64, 48)?
        .with_kernel(kernel)
        .with_specialisation(specialisation)
        .with_hierarchy(hierarchy);
    // The costs of what the model composes on its wave size (`--wave 64` walks).
    Ok(match frame {
        Frame::TwoClip => {
            let (samples, ranges) = support::two_clip_crowd(MODEL_CHARACTERS, 0, 1);
            model.two_clip_frame(&samples, &ranges, &model.two_clip_costs_radv_navi21())?
        }
        Frame::Layered => {
            let (samples, programs) = support::layered_period(MODEL_CHARACTERS / 32);
            model.layered_frame(&scenario.layers, &programs, &samples, &model.layered_costs_radv_navi21())?
        }
        // The model charges a steady frame no switch code whatever the measurement
        // specialisation (the replay's check only where it is compiled in): their difference on
        // the device is mostly what it does not see (occupancy).
        Frame::Steady => {
            let (samples, programs) = steady_frame(MODEL_CHARACTERS, 0);
            model.layered_frame(&scenario.layers, &programs, &samples, &model.layered_costs_radv_navi21())?
        }
    })
}

/// What a timed batch measures.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    /// A variant's frame, whole.
    Frame(Variant),
    /// The layered frame with the procedural stage (the stage path), whole.
    WithStage,
    /// The same frame stage by stage, keeping the procedural pass's time.
    StageAlone,
}

/// The work model's figures per character for the procedural stage on the layered scenario.
fn procedural_model(scenario: &support::Scenario, wave: u32) -> Result<Work, Box<dyn std::error::Error>> {
    let (setup, targets) = support::procedural_crowd(&scenario.rig, MODEL_CHARACTERS);
    let model = WorkModel::new(&scenario.rig, wave, 64, 48)?;
    Ok(model.procedural_frame(&setup, &targets, &ProceduralCosts::radv_navi21())?)
}

/// Runs one batch of `frames` frames of `crowd` as `timing` says and returns each frame's time.
#[allow(clippy::too_many_arguments)]
fn batch(
    gpu: &GpuContext,
    profiler: &mut GpuProfiler,
    crowd: &mut GpuCrowd,
    timing: Timing,
    inputs: &Inputs,
    procedural: &(ProceduralRig, ProceduralTargets),
    frames: usize,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let start = Instant::now();
    for f in 0..frames {
        inputs.upload(crowd, f)?;
        if matches!(timing, Timing::WithStage | Timing::StageAlone) {
            // As a game does each frame with new targets: their upload is the stage's cost too.
            crowd.set_procedural(&procedural.0, &procedural.1)?;
        }
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        if timing == Timing::StageAlone {
            for stage in PROCEDURAL_STAGES {
                profiler.encode_stage(crowd, &mut encoder, stage)?;
            }
        } else {
            profiler.encode(crowd, &mut encoder);
        }
        gpu.queue.submit([encoder.finish()]);
    }
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    profiler.resolve(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    let zones = profiler.read_blocking()?.zones;
    if zones.is_empty() {
        // No timestamp queries: the batch's wall clock, frame by frame (`StageAlone` is not
        // timed then).
        return Ok(std::iter::repeat_n(start.elapsed() / frames as u32, frames).collect());
    }
    let keep = |name: &str| timing != Timing::StageAlone || name == Stage::Procedural.zone_name();
    Ok(zones.iter().filter(|z| keep(z.name)).map(|z| Duration::from_nanos(z.duration_ns().max(0.0) as u64)).collect())
}

/// Runs `make`, a crowd's creation and first upload, in an out-of-memory error scope. A device
/// that cannot hold the crowd says so here: wgpu reports running out of device memory to the
/// device's error handler, not to the call, and leaves the buffers invalid, so every frame of
/// such a crowd would fail to submit and its timestamps would read what the query set last held
/// (on the H200 the layered frame with the procedural stage at 1M timed exactly as the crowd
/// before it: it was the fifth crowd alive, about 166 GiB in all against the card's 139).
fn within_memory(
    gpu: &GpuContext,
    make: impl FnOnce() -> Result<GpuCrowd, throng::gpu::GpuError>,
) -> Result<GpuCrowd, String> {
    let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let made = make();
    match (made, pollster::block_on(scope.pop())) {
        (Err(e), _) => Err(e.to_string()),
        (Ok(_), Some(error)) => Err(format!("the device is out of memory: {error}")),
        (Ok(crowd), None) => Ok(crowd),
    }
}

/// The median and minimum of `times`, seconds (sorted in place).
fn median_min(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    (times[times.len() / 2].as_secs_f64(), times[0].as_secs_f64())
}

/// Times `batches` of `frames` frames of each variant, interleaved: variant by variant within
/// each round, so drifting clocks and heat touch every variant alike; the layered frame's rounds
/// also time it with the procedural stage, whole and stage by stage.
fn time(
    gpu: &GpuContext,
    scenario: &support::Scenario,
    args: &Args,
    out: &mut Results,
) -> Result<(), Box<dyn std::error::Error>> {
    let timestamps = gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
    for &n in &args.characters {
        let procedural = support::procedural_crowd(&scenario.rig, n);
        for frame in Frame::ALL {
            let inputs = Inputs::new(frame, n, args.frames);
            let mut crowds = Vec::new();
            let mut entries: Vec<(Timing, usize, Vec<Duration>)> = Vec::new();
            for variant in frame.variants() {
                // A crowd starts empty: built, it has its pipelines and says what it runs; its
                // upload sizes it.
                let made = within_memory(gpu, || build(gpu, scenario, frame, variant))
                    .and_then(|crowd| match variant.runs_instead(&crowd) {
                        Some(runs) => Err(format!("this device runs the hierarchy {}", runs.name())),
                        None => Ok(crowd),
                    })
                    .and_then(|mut crowd| within_memory(gpu, || inputs.upload(&mut crowd, 0).map(|()| crowd)));
                match made {
                    Ok(crowd) => {
                        entries.push((Timing::Frame(variant), crowds.len(), Vec::new()));
                        crowds.push(crowd);
                    }
                    Err(e) => println!("# {} {} {n}: skipped: {e}", frame.name(), variant.name()),
                }
            }
            if frame == Frame::Layered {
                let made = within_memory(gpu, || {
                    let mut crowd = procedural_crowd(gpu, scenario)?;
                    inputs.upload(&mut crowd, 0)?;
                    crowd.set_procedural(&procedural.0, &procedural.1).map(|()| crowd)
                });
                match made {
                    Ok(crowd) => {
                        entries.push((Timing::WithStage, crowds.len(), Vec::new()));
                        if timestamps {
                            entries.push((Timing::StageAlone, crowds.len(), Vec::new()));
                        }
                        crowds.push(crowd);
                    }
                    Err(e) => println!("# layered+procedural {n}: skipped: {e}"),
                }
            }
            let zones = (PROCEDURAL_STAGES.len() * args.frames) as u32;
            let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, zones);
            for _ in 0..args.rounds {
                for (timing, c, times) in &mut entries {
                    times.extend(batch(
                        gpu,
                        &mut profiler,
                        &mut crowds[*c],
                        *timing,
                        &inputs,
                        &procedural,
                        args.frames,
                    )?);
                }
            }
            for (timing, c, times) in &mut entries {
                let Timing::Frame(variant) = *timing else { continue };
                let (median, min) = median_min(times);
                let work = model(scenario, frame, variant, args.wave)?;
                let gb_s = work.bytes() * n as f64 / median / 1e9;
                let issue = work.wave_instructions * n as f64 / median / args.issue_rate;
                out.row(&[
                    "time".into(),
                    frame.name().into(),
                    variant.name(),
                    n.to_string(),
                    crowds[*c].num_chunks().to_string(),
                    format!("{:.4}", median * 1e3),
                    format!("{:.4}", min * 1e3),
                    times.len().to_string(),
                    format!("{:.0}", work.bytes()),
                    format!("{gb_s:.2}"),
                    format!("{:.0}", work.wave_instructions),
                    format!("{issue:.4}"),
                ])?;
            }
            if frame == Frame::Layered {
                procedural_row(scenario, args, n, &mut entries, &crowds, out)?;
            }
        }
    }
    Ok(())
}

/// The `procedural` row of one size: the layered frame with the stage, the default variant's
/// without it, the stage's pass alone and its share.
fn procedural_row(
    scenario: &support::Scenario,
    args: &Args,
    n: usize,
    entries: &mut [(Timing, usize, Vec<Duration>)],
    crowds: &[GpuCrowd],
    out: &mut Results,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut median_of = |timing: Timing| {
        entries.iter_mut().find(|e| e.0 == timing && !e.2.is_empty()).map(|e| (median_min(&mut e.2), e.1))
    };
    let (Some(((with, _), c)), Some(((without, _), _))) = (
        median_of(Timing::WithStage),
        median_of(Timing::Frame(Variant(FrameKernel::default(), Specialisation::Production, Hierarchy::default()))),
    ) else {
        return Ok(());
    };
    let alone = median_of(Timing::StageAlone).map(|(m, _)| m);
    let work = procedural_model(scenario, args.wave)?;
    let ms = |s: f64| format!("{:.4}", s * 1e3);
    let (stage, stage_min, share, issue) = match alone {
        Some((stage, stage_min)) => (
            ms(stage),
            ms(stage_min),
            format!("{:.4}", stage / without),
            format!("{:.4}", work.wave_instructions * n as f64 / stage / args.issue_rate),
        ),
        None => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    out.row(&[
        "procedural".into(),
        "layered".into(),
        n.to_string(),
        crowds[c].num_chunks().to_string(),
        ms(with),
        ms(without),
        stage,
        stage_min,
        share,
        format!("{:.0}", work.wave_instructions),
        issue,
    ])?;
    Ok(())
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    let gpu = GpuContext::new_blocking()?;
    let mut out = Results(std::fs::OpenOptions::new().create(true).append(true).open(&args.out)?);
    let info = &gpu.adapter_info;
    out.row(&[format!("# adapter: {} ({:?}, driver {} {})", info.name, info.backend, info.driver, info.driver_info)])?;
    out.row(&[format!(
        "# model: wave {}, issue rate {:e} wave-instructions/s; timing: {}",
        args.wave,
        args.issue_rate,
        if gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            "timestamp queries"
        } else {
            "wall clock"
        }
    )])?;
    let scenario = support::humanoid_scenario();
    let pass = validate(&gpu, &scenario, args, &mut out)?;
    time(&gpu, &scenario, args, &mut out)?;
    Ok(pass)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("gpu_variants: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("gpu_variants: a variant differs from variant 0 by more than {TOLERANCE}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("gpu_variants: {e}");
            ExitCode::FAILURE
        }
    }
}
