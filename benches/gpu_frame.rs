//! GPU pose evaluation of a crowd of the 64-joint humanoid (`DemoCharacter::humanoid_64`),
//! one whole frame per iteration as an engine runs it: upload the programs, encode, submit, and
//! wait for the GPU (wall clock; `examples/bench_gpu.rs` prints GPU timestamps per stage).
//!
//! `gpu_frame`: two clips (walk, run) sampled per character at its own time, blended,
//! local-to-model and skinning, in the fused `frame` dispatch (`GpuCrowd::set_samples`).
//! `gpu_frame_layered`: issue 5's scenario on the layered frame (`GpuCrowd::set_frame`, the
//! mirror of `FrameJob`): the same base blend with a quarter of the crowd transitioning, a
//! masked mesh-space override and an additive layer, programs changing every frame; and the
//! same under animation LOD (`GpuCrowd::set_frame_due`) with the realistic mix of rates
//! (`support::LOD_MIX`: about a third of the crowd dispatched per frame), `…k_lod_mix`.
//!
//! `cargo bench --bench gpu_frame`. Skips with a message when there is no adapter, and skips a
//! size the device cannot hold.

mod support;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use throng::demo::DemoCharacter;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions};
use throng::program::{DueRows, OutputLayout};

fn gpu_frame(c: &mut Criterion) {
    let gpu = match GpuContext::new_blocking() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("skipping gpu_frame: no GPU device ({e})");
            return;
        }
    };
    eprintln!("gpu_frame on {} ({:?})", gpu.adapter_info.name, gpu.adapter_info.backend);
    let demo = DemoCharacter::humanoid_64();
    let (rig, clips) = (&demo.rig, &demo.clips);
    let (walk, run) = (demo.clip_index("walk").expect("walk") as u32, demo.clip_index("run").expect("run") as u32);
    let mut group = c.benchmark_group("gpu_frame");
    for num_characters in [1_000usize, 10_000, 100_000] {
        let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let options = GpuCrowdOptions { layout, ..Default::default() };
            let crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, options);
            let mut crowd = match crowd.and_then(|mut crowd| crowd.set_samples(&samples, &ranges).map(|()| crowd)) {
                Ok(crowd) => crowd,
                Err(e) => {
                    eprintln!("skipping gpu_frame/{num_characters}: {e}");
                    continue;
                }
            };
            group.throughput(Throughput::Elements(num_characters as u64));
            let name = format!("{}k/{layout:?}", num_characters / 1000);
            group.bench_function(BenchmarkId::from_parameter(name), |bench| {
                bench.iter(|| {
                    crowd.set_samples(&samples, &ranges).expect("valid programs");
                    let mut encoder = gpu.device.create_command_encoder(&Default::default());
                    crowd.encode(&mut encoder);
                    gpu.queue.submit([encoder.finish()]);
                    gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("device alive");
                });
            });
        }
    }
    group.finish();

    let support::Scenario { rig, clips, layers, .. } = support::humanoid_scenario();
    let mut group = c.benchmark_group("gpu_frame_layered");
    for num_characters in [1_000usize, 10_000, 100_000] {
        // A cycle of frames, so that characters switch and transitions start and end.
        let frames: Vec<_> = (0..32).map(|f| support::layered_frame(num_characters, f)).collect();
        let crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, GpuCrowdOptions::default());
        let mut crowd =
            match crowd.and_then(|mut crowd| crowd.set_frame(&frames[0].0, &frames[0].1, 1.0 / 60.0).map(|()| crowd)) {
                Ok(crowd) => crowd,
                Err(e) => {
                    eprintln!("skipping gpu_frame_layered/{num_characters}: {e}");
                    continue;
                }
            };
        let mut next = 0;
        group.throughput(Throughput::Elements(num_characters as u64));
        group.bench_function(BenchmarkId::from_parameter(format!("{}k", num_characters / 1000)), |bench| {
            bench.iter(|| {
                let (samples, programs) = &frames[next % frames.len()];
                next += 1;
                crowd.set_frame(samples, programs, 1.0 / 60.0).expect("valid programs");
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                crowd.encode(&mut encoder);
                gpu.queue.submit([encoder.finish()]);
                gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("device alive");
            });
        });
        // The same frames under LOD: 32 frames hold whole cycles of every rate of the mix.
        let due: Vec<_> = (0..frames.len()).map(|f| support::lod_mix_due(num_characters, f, 1.0 / 60.0)).collect();
        group.bench_function(BenchmarkId::from_parameter(format!("{}k_lod_mix", num_characters / 1000)), |bench| {
            bench.iter(|| {
                let k = next % frames.len();
                next += 1;
                let ((samples, programs), (rows, dt_s)) = (&frames[k], &due[k]);
                crowd.set_frame_due(samples, programs, 1.0 / 60.0, DueRows { rows, dt_s }).expect("valid programs");
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                crowd.encode(&mut encoder);
                gpu.queue.submit([encoder.finish()]);
                gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("device alive");
            });
        });
    }
    group.finish();
}

criterion_group!(benches, gpu_frame);
criterion_main!(benches);
