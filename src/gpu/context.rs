//! A device of the evaluator's own, for tools, tests and benches; engines pass theirs instead.

use super::GpuError;

/// An adapter's device and queue, created with the adapter's own limits.
///
/// wgpu's default limits cap a buffer at 256 MiB, which a crowd's output outgrows at about
/// 65k characters of a 64-joint rig; requesting `adapter.limits()` lets the evaluator use what
/// the hardware has (larger buffers mean fewer chunks). Timestamp queries are enabled when the
/// adapter has them, so that benches can time the GPU work itself.
#[derive(Debug)]
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says about itself (name, backend, driver).
    pub adapter_info: wgpu::AdapterInfo,
}

impl GpuContext {
    /// Picks the default adapter (preferring a discrete GPU) and creates a device on it.
    /// `WGPU_BACKEND` and `WGPU_ADAPTER_NAME` in the environment choose differently, as in
    /// wgpu's own tools.
    pub async fn new() -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
        let adapter = wgpu::util::initialize_adapter_from_env_or_default(&instance, None)
            .await
            .map_err(GpuError::NoAdapter)?;
        let required_features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("throng"),
                required_features,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(GpuError::RequestDevice)?;
        Ok(Self { device, queue, adapter_info: adapter.get_info() })
    }

    /// [`GpuContext::new`], blocking the calling thread until the device exists.
    pub fn new_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::new())
    }
}
