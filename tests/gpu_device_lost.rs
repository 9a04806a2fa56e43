//! A lost device (driver reset, GPU removed, `Device::destroy`) surfaces as an error the caller
//! can handle — recreate the context and the crowd, and carry on — never as a panic.
#![allow(clippy::single_range_in_vec_init)] // one character's sample range, not a range of values

use throng::demo::DemoCharacter;
use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions, GpuError};
use throng::program::ClipSample;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;

fn frame(gpu: &GpuContext) -> Result<Vec<f32>, GpuError> {
    let demo = DemoCharacter::humanoid();
    let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, GpuCrowdOptions::default())?;
    crowd.set_samples(&[ClipSample::new(1, 0.25, 1.0)], &[0..1])?;
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    crowd.encode(&mut encoder);
    gpu.queue.submit([encoder.finish()]);
    crowd.read_output_blocking()
}

#[test]
fn a_lost_device_is_an_error_and_a_new_one_carries_on() {
    let Some(gpu) = gpu() else { return };
    let before = frame(&gpu).expect("a live device evaluates");
    assert!(gpu.failure().is_none());
    gpu.device.destroy();
    let lost = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| frame(&gpu)));
    let Ok(result) = lost else { panic!("a lost device panicked") };
    assert!(result.is_err(), "a frame on a lost device reports an error");
    assert!(gpu.failure().is_some(), "the context knows it lost its device");
    // Recreate and continue.
    let again = GpuContext::new_blocking().expect("a new device");
    assert_eq!(frame(&again).expect("the new device evaluates"), before);
}
