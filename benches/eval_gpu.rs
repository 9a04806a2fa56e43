//! GPU pose evaluation of a crowd of a 64-joint rig: two clips sampled per character at its own
//! time, blended, local-to-model and skinning matrices, in the fused `frame` dispatch. Each
//! iteration is one whole frame as an engine runs it: upload the programs, encode, submit, and
//! wait for the GPU (wall clock; `examples/bench_gpu.rs` prints GPU timestamps).
//!
//! `cargo bench --bench eval_gpu`. Skips with a message when there is no adapter.

mod support;
#[path = "support/procedural.rs"]
mod procedural;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use throng::eval::OutputLayout;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions};

fn eval_gpu(c: &mut Criterion) {
    let gpu = match GpuContext::new_blocking() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("skipping eval_gpu: no GPU device ({e})");
            return;
        }
    };
    eprintln!("eval_gpu on {} ({:?})", gpu.adapter_info.name, gpu.adapter_info.backend);
    let rig = procedural::rig();
    let clips = procedural::clips(&rig);
    let mut group = c.benchmark_group("eval_gpu");
    for num_characters in [1_000usize, 10_000, 100_000] {
        let (samples, ranges) = support::two_clip_crowd(num_characters, 0, 1);
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let options = GpuCrowdOptions { layout, ..Default::default() };
            let mut crowd = match GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options) {
                Ok(crowd) => crowd,
                Err(e) => {
                    eprintln!("skipping eval_gpu/{num_characters}: {e}");
                    continue;
                }
            };
            group.throughput(Throughput::Elements(num_characters as u64));
            let name = format!("{}k/{layout:?}", num_characters / 1000);
            group.bench_function(BenchmarkId::from_parameter(name), |bench| {
                bench.iter(|| {
                    crowd.set_programs(&samples, &ranges).expect("valid programs");
                    let mut encoder = gpu.device.create_command_encoder(&Default::default());
                    crowd.encode(&mut encoder);
                    gpu.queue.submit([encoder.finish()]);
                    gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("device alive");
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, eval_gpu);
criterion_main!(benches);
