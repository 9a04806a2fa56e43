//! Throughput against crowd size for the built-in character on the demo graph (64 joints; base,
//! additive lean and masked wave layers): `scale/state_step/N` is one `Crowd::update`,
//! `scale/eval_cpu/N` one `FrameJob` (affine 3×4 output) of N characters, both reported per
//! character, for N of 1k, 10k and 100k. The GPU and the 1M point come from
//! `examples/scale.rs` (BENCHMARKS.md, "Scale"), which runs a million within memory.
//!
//! `cargo bench --bench scale`

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use throng::eval::frame::{EvalContext, FrameJob};
use throng::eval::OutputLayout;

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
    let mut group = c.benchmark_group("scale/eval_cpu");
    group.sample_size(10);
    let layout = OutputLayout::Affine3x4;
    for (label, n) in SIZES {
        let support::DemoCrowd { demo, bound, crowd, kind } = support::demo_crowd(n);
        let joints = demo.rig.num_joints();
        let (samples, programs) = (crowd.samples(kind).expect("archetype"), crowd.programs(kind).expect("archetype"));
        let mut context = EvalContext::for_layers(n, &bound.layers, joints);
        let mut output = vec![0.0f32; n * joints * layout.floats_per_joint()];
        let mut clips_sampled = vec![0u32; n];
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                FrameJob {
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
                }
                .run()
                .expect("valid frame")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, state_step, eval_cpu);
criterion_main!(benches);
