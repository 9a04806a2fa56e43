//! CPU pose evaluation of a crowd of the 64-joint built-in character: two clips sampled per
//! character at its own time, blended, local-to-model and skinning matrices.
//!
//! `cargo bench --bench eval_cpu`; `RAYON_NUM_THREADS=1` for the single-thread figure.

mod support;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use throng::demo::DemoCharacter;
use throng::eval::{EvalCrowdJob, OutputLayout};

fn eval_cpu(c: &mut Criterion) {
    let demo = DemoCharacter::humanoid_64();
    let walk = demo.clip_index("walk").expect("demo has walk") as u32;
    let run = demo.clip_index("run").expect("demo has run") as u32;
    let joints = demo.rig.num_joints();
    let mut group = c.benchmark_group("eval_cpu");
    for num_characters in [1_000usize, 10_000] {
        let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let mut output = vec![0.0f32; num_characters * joints * layout.floats_per_joint()];
            group.throughput(Throughput::Elements(num_characters as u64));
            let name = format!("{}k/{layout:?}", num_characters / 1000);
            group.bench_function(BenchmarkId::from_parameter(name), |bench| {
                bench.iter(|| {
                    EvalCrowdJob {
                        rig: &demo.rig,
                        clips: &demo.clips,
                        samples: &samples,
                        sample_ranges: &ranges,
                        layout,
                        output: &mut output,
                    }
                    .run()
                    .expect("valid job")
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, eval_cpu);
criterion_main!(benches);
