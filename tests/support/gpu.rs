//! The GPU tests' device: a real adapter (lavapipe in CI), or a clear skip without one — unless
//! `THRONG_REQUIRE_GPU=1`, which turns the skip into a failure — and the random inputs the GPU
//! tests share. Each test file uses a part of it.
#![allow(dead_code)]

use glam::{Quat, Vec3};
use throng::gpu::GpuContext;
use throng::Transform;

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

/// Deterministic pseudo-random numbers (xorshift), so that failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 32) as u32
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() as f32 / 4_294_967_296.0)
    }
    pub fn quat(&mut self) -> Quat {
        Quat::from_euler(glam::EulerRot::XYZ, self.range(-3.0, 3.0), self.range(-1.5, 1.5), self.range(-3.0, 3.0))
    }
    pub fn transform(&mut self) -> Transform {
        Transform {
            translation: Vec3::new(self.range(-0.1, 0.1), self.range(-0.1, 0.1), self.range(-0.1, 0.1)),
            rotation: self.quat(),
            scale: Vec3::new(self.range(0.8, 1.2), self.range(0.8, 1.2), self.range(0.8, 1.2)),
        }
    }
}
