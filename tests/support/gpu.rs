//! The GPU tests' device: a real adapter (lavapipe in CI), or a clear skip without one — unless
//! `THRONG_REQUIRE_GPU=1`, which turns the skip into a failure.

use throng::gpu::GpuContext;

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
