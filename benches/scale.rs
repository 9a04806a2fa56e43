//! Throughput against crowd size for the built-in character on the demo graph (64 joints; base,
//! additive lean and masked wave layers): `scale/state_step/N` is one `Crowd::update`,
//! `scale/eval_cpu/N` one `FrameJob` (affine 3×4 output) of N characters, both reported per
//! character, for N of 1k, 10k and 100k; `scale/eval_cpu_lod/N` the same frame under animation
//! LOD's realistic mix of rates (`support::LOD_MIX`: 10 % every frame, 20 % every 2nd, 30 %
//! every 4th, 40 % every 8th), cycling through the schedule's eight due sets. The GPU and the
//! 1M point come from `examples/scale.rs` (BENCHMARKS.md, "Scale"), which runs a million within
//! memory.
//!
//! `cargo bench --bench scale`

mod support;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::program::{DueRows, OutputLayout};

const SIZES: [(&str, usize); 3] = [("1k", 1_000), ("10k", 10_000), ("100k", 100_000)];

fn state_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale/state_step");
    group.sample_size(10);
    for (label, n) in SIZES {
        let mut scene = support::demo_crowd(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| scene.crowd.update(black_box(1.0 / 60.0)).expect("finite dt"));
        });
    }
    group.finish();
}

fn eval_cpu(c: &mut Criterion) {
    frame_job(c, "scale/eval_cpu", false);
}

fn eval_cpu_lod(c: &mut Criterion) {
    frame_job(c, "scale/eval_cpu_lod", true);
}

/// One `FrameJob` per iteration; with `lod`, only the rows the LOD mix makes due, frame after
/// frame of its schedule.
fn frame_job(c: &mut Criterion, name: &str, lod: bool) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    let layout = OutputLayout::Affine3x4;
    for (label, n) in SIZES {
        let support::DemoCrowd { demo, bound, crowd, kind } = support::demo_crowd(n);
        let joints = demo.rig.num_joints();
        let (samples, programs) = (crowd.samples(kind).expect("archetype"), crowd.programs(kind).expect("archetype"));
        let mut context = EvalContext::for_layers(n, &bound.layers, joints);
        let mut output = vec![0.0f32; n * joints * layout.floats_per_joint()];
        let mut clips_sampled = vec![0u32; n];
        let schedule: Vec<(Vec<u32>, Vec<f32>)> =
            (0..8).map(|frame| support::lod_mix_due(n, frame, 1.0 / 60.0)).collect();
        let mut frame = 0;
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                // The job itself, not `CrowdRuntime`: evaluation alone, on a made-up due schedule.
                let job = FrameJob {
                    rig: &demo.rig,
                    clips: &bound.clips,
                    layers: &bound.layers,
                    samples,
                    programs,
                    dt_s: 1.0 / 60.0,
                    context: &mut context,
                    layout,
                    output: &mut output,
                    clips_sampled: &mut clips_sampled,
                    root_motion: &mut [],
                };
                let (rows, dt_s) = &schedule[frame % schedule.len()];
                frame += 1;
                if lod { job.run_due(DueRows { rows, dt_s }) } else { job.run() }.expect("valid frame")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, state_step, eval_cpu, eval_cpu_lod);
criterion_main!(benches);
