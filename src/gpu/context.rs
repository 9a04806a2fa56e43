//! A device of the evaluator's own, for tools, tests and benches; engines pass theirs instead.

use std::sync::{Arc, Mutex};

use super::GpuError;

/// An adapter's device and queue, created with the adapter's own limits.
///
/// wgpu's default limits cap a buffer at 256 MiB, which a crowd's output outgrows at about
/// 65k characters of a 64-joint rig; requesting `adapter.limits()` lets the evaluator use what
/// the hardware has (larger buffers mean fewer chunks). Timestamp queries are enabled when the
/// adapter has them, so that benches can time the GPU work itself, and subgroups, so that a
/// crowd can compose its hierarchy in one ([`crate::gpu::Hierarchy::Subgroup`]).
#[derive(Debug)]
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says about itself (name, backend, driver).
    pub adapter_info: wgpu::AdapterInfo,
    /// Why the device was lost, once it is (wgpu's device-lost callback, or the first error wgpu
    /// raised after it, writes it).
    lost: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    /// Picks the default adapter (preferring a discrete GPU) and creates a device on it.
    /// `WGPU_BACKEND` and `WGPU_ADAPTER_NAME` in the environment choose differently, as in
    /// wgpu's own tools.
    pub async fn new() -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
        let adapter =
            wgpu::util::initialize_adapter_from_env_or_default(&instance, None).await.map_err(GpuError::NoAdapter)?;
        // Subgroups where the adapter has them, for `Hierarchy::Subgroup`.
        let required_features = adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::SUBGROUP);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("throng"),
                required_features,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(GpuError::RequestDevice)?;
        let lost = Arc::new(Mutex::new(None));
        let record = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = record.lock() {
                *slot = Some(format!("{reason:?}: {message}"));
            }
        });
        // wgpu's default handler panics on any error it was not asked to capture; on a device
        // that is gone every call raises one. Record them instead: the evaluator's own checks
        // run before it submits, so what reaches here is a lost device or a wgpu bug, and the
        // caller learns of it from the next readback or `failure`.
        let record = Arc::clone(&lost);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            if let Ok(mut slot) = record.lock() {
                slot.get_or_insert_with(|| error.to_string());
            }
        }));
        Ok(Self { device, queue, adapter_info: adapter.get_info(), lost })
    }

    /// Why the device stopped working — lost (driver reset, GPU removed, `Device::destroy`), or
    /// an error wgpu raised that nobody captured — or `None` while it works. After a loss every evaluator call on it returns an error; create a new context
    /// and new crowds to carry on. An engine passing its own device watches it with
    /// `wgpu::Device::set_device_lost_callback` itself.
    #[must_use]
    pub fn failure(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|slot| slot.clone())
    }

    /// [`GpuContext::new`], blocking the calling thread until the device exists.
    pub fn new_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::new())
    }
}
