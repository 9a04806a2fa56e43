//! The GPU tests' device: a real adapter (lavapipe in CI), or a clear skip without one — unless
//! `THRONG_REQUIRE_GPU=1`, which turns the skip into a failure — and the random inputs the GPU
//! tests share. Each test file uses a part of it. A file that includes it declares
//! `mod support;` too: the random numbers are `support::Rng`.
#![allow(dead_code)]

use glam::Vec3;
use throng::gpu::{FrameKernel, GpuContext, GpuCrowd, GpuCrowdOptions, Hierarchy};
use throng::program::{ClipSample, LayerProgram};
use throng::{Rig, Transform};

use crate::support::Rng;

/// A device of the tests' own, or `None` (after saying why) when there is no adapter.
pub fn gpu() -> Option<GpuContext> {
    match GpuContext::new_blocking() {
        Ok(context) => Some(context),
        Err(e) if std::env::var("THRONG_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("THRONG_REQUIRE_GPU=1 but no GPU device: {e}")
        }
        Err(e) => {
            eprintln!("skipping GPU test: no GPU device ({e}); set THRONG_REQUIRE_GPU=1 to fail instead");
            None
        }
    }
}

/// A second device on the tests' adapter whose limits are the adapter's as `restrict` changes
/// them: limits a real GPU has but the software adapter does not (256-byte offset alignments on
/// macOS and DX12, where lavapipe has 32; smaller bindings), so that the evaluator's windows and
/// chunks are exercised as they are there. `None` (after saying why) when there is no adapter.
pub fn gpu_with_limits(restrict: impl FnOnce(&mut wgpu::Limits)) -> Option<(wgpu::Device, wgpu::Queue)> {
    gpu()?;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(wgpu::util::initialize_adapter_from_env_or_default(&instance, None))
        .expect("gpu() found an adapter");
    let mut limits = adapter.limits();
    restrict(&mut limits);
    let descriptor = wgpu::DeviceDescriptor {
        label: Some("throng.tests.restricted"),
        required_limits: limits,
        ..Default::default()
    };
    Some(
        pollster::block_on(adapter.request_device(&descriptor))
            .expect("limits no better than the adapter's are granted"),
    )
}

/// Whether a fused crowd asking for `Hierarchy::Subgroup` composes `rig`'s hierarchy in a
/// subgroup on `gpu` (`Hierarchy::fits` with the adapter's subgroup sizes, then the device's
/// answer to the crowd's probe of whether its subgroups are full): a crowd of no clips says.
pub fn subgroup_composes(gpu: &GpuContext, rig: &Rig) -> bool {
    let options = GpuCrowdOptions { kernel: FrameKernel::Fused, hierarchy: Hierarchy::Subgroup, ..Default::default() };
    let crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, &[], options).expect("a fused crowd of no clips");
    crowd.hierarchy() == Hierarchy::Subgroup
}

/// [`subgroup_composes`] for a test's first rig, or `false` after saying why the test skips:
/// except under `THRONG_REQUIRE_GPU=1` on lavapipe, whose 8-lane subgroups compose the tests'
/// rigs, where a skip would hide the feature's breakage and it fails instead.
pub fn subgroup_composes_or_skip(gpu: &GpuContext, rig: &Rig) -> bool {
    if subgroup_composes(gpu, rig) {
        return true;
    }
    let name = gpu.device.adapter_info().name;
    let lavapipe = std::env::var("THRONG_REQUIRE_GPU").as_deref() == Ok("1") && name.contains("llvmpipe");
    assert!(!lavapipe, "{name}: lavapipe's 8-lane subgroups compose a {}-joint rig", rig.num_joints());
    eprintln!("skipping: {name}'s subgroups cannot compose a {}-joint rig's hierarchy", rig.num_joints());
    false
}

/// A rig of `num_joints` joints (named `j0`, `j1`, …) mixing long chains (parent `j - 1`) and
/// branches (parent `j / 2`), with a second root halfway, rest offsets of a few centimetres,
/// rotated rest poses and slightly non-uniform scales on even joints, uniform ones on odd joints
/// (which layer memory keeps in two vec4 rather than three: both ways are exercised).
pub fn test_rig(num_joints: usize) -> Rig {
    let parents = (0..num_joints)
        .map(|j| match j {
            0 => None,
            j if j == num_joints / 2 => None,
            j if j % 3 == 0 => Some(j / 2),
            j => Some(j - 1),
        })
        .collect();
    rig_of(parents)
}

/// 100 joints in four chains of 25, each from a root of its own: two joints a thread, and
/// depths four joints wide.
pub fn four_chains() -> Rig {
    rig_of((0..100).map(|j| (j % 25 != 0).then(|| j - 1)).collect())
}

/// A rig of these parents with [`test_rig`]'s rest pose: rotated joints, some with a
/// non-uniform scale.
pub fn rig_of(parents: Vec<Option<usize>>) -> Rig {
    let num_joints = parents.len();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let rest = (0..num_joints)
        .map(|j| {
            let translation = Vec3::new(rng.range(-0.05, 0.05), rng.range(0.02, 0.1), rng.range(-0.05, 0.05));
            let rotation = rng.quat();
            let scale = Vec3::new(rng.range(0.9, 1.1), rng.range(0.9, 1.1), rng.range(0.9, 1.1));
            Transform { translation, rotation, scale: if j % 2 == 1 { Vec3::splat(scale.x) } else { scale } }
        })
        .collect();
    Rig::new((0..num_joints).map(|j| format!("j{j}")).collect(), parents, rest, None).expect("a valid rig")
}

/// Sets `samples` per character on a crowd built with `GpuCrowd::new`, evaluates, and reads
/// the output back.
pub fn frame(
    gpu: &GpuContext,
    crowd: &mut GpuCrowd,
    samples: &[ClipSample],
    ranges: &[std::ops::Range<u32>],
) -> Vec<f32> {
    crowd.set_samples(samples, ranges).expect("valid programs");
    encode_and_read(&gpu.device, &gpu.queue, crowd)
}

/// The crowd's frame, as last set, encoded on `device`, submitted and read back.
pub fn encode_and_read(device: &wgpu::Device, queue: &wgpu::Queue, crowd: &GpuCrowd) -> Vec<f32> {
    let mut encoder = device.create_command_encoder(&Default::default());
    crowd.encode(&mut encoder);
    queue.submit([encoder.finish()]);
    crowd.read_output_blocking().expect("readback")
}

/// One layered frame on the GPU: the programs set, encoded, submitted and read back.
pub fn layered_frame(
    gpu: &GpuContext,
    crowd: &mut GpuCrowd,
    samples: &[ClipSample],
    programs: &[LayerProgram],
    dt_s: f32,
) -> Vec<f32> {
    crowd.set_frame(samples, programs, dt_s).expect("valid programs");
    encode_and_read(&gpu.device, &gpu.queue, crowd)
}
