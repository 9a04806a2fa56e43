//! GPU timestamp zones: how long each pass of a frame (the evaluator's stages, a renderer's
//! draw) took on the GPU, from timestamp queries, and the same zones on Tracy's GPU timeline
//! with the `tracy` feature.
//!
//! ```text
//!  zone("throng.frame") ─► zone("viewer.draw") ─► resolve(encoder) ─► submit ─► read_blocking()
//!  queries 0, 1             queries 2, 3           into a mappable            GpuFrameTimes
//!  (start, end of pass)                            buffer                     (+ Tracy GPU zones)
//! ```
//!
//! Each zone is one pass with `timestamp_writes` at its beginning and end, which needs only
//! `wgpu::Features::TIMESTAMP_QUERY` (writes inside a pass or between passes need more, which
//! few adapters have). Without the feature the profiler still runs every zone's encoding, untimed,
//! and reports no times, so callers need one code path.

use super::{GpuCrowd, GpuError, Stage};

/// One zone's GPU times, nanoseconds from the first timestamp of its frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuZoneTime {
    /// The zone's name, as given to [`GpuProfiler::zone`] (`throng.frame`,
    /// `throng.transition`… for the evaluator's own).
    pub name: &'static str,
    /// When the pass began, ns after the frame's first zone began (0 for the first).
    pub start_ns: f64,
    /// When the pass ended, ns after the frame's first zone began.
    pub end_ns: f64,
}

impl GpuZoneTime {
    /// The pass's GPU time, ns. Timestamps come from the driver as they are: a driver whose
    /// clock runs backwards between two writes shows here as a negative duration rather than
    /// being hidden.
    #[must_use]
    pub fn duration_ns(&self) -> f64 {
        self.end_ns - self.start_ns
    }
}

/// A frame's GPU zones, in the order they were recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuFrameTimes {
    /// The timed zones; empty where the device has no timestamp queries.
    pub zones: Vec<GpuZoneTime>,
    /// Zones recorded untimed: all of them without timestamp queries, those past
    /// [`GpuProfiler::max_zones`] otherwise.
    pub untimed: usize,
}

impl GpuFrameTimes {
    /// From the earliest zone start to the latest zone end, ns (0 without zones): the frame's
    /// GPU time including any gaps between its passes.
    #[must_use]
    pub fn frame_ns(&self) -> f64 {
        let start = self.zones.iter().map(|z| z.start_ns).reduce(f64::min);
        let end = self.zones.iter().map(|z| z.end_ns).reduce(f64::max);
        start.zip(end).map_or(0.0, |(start, end)| end - start)
    }

    /// The first zone called `name`.
    #[must_use]
    pub fn zone(&self, name: &str) -> Option<&GpuZoneTime> {
        self.zones.iter().find(|z| z.name == name)
    }
}

/// The query set and buffers of a device with timestamp queries.
struct Timestamps {
    queries: wgpu::QuerySet,
    /// `QUERY_RESOLVE | COPY_SRC`: resolves must land in a buffer of their own usage.
    resolve: wgpu::Buffer,
    /// `MAP_READ | COPY_DST`.
    readback: wgpu::Buffer,
    /// Nanoseconds per tick (`Queue::get_timestamp_period`).
    period_ns: f32,
}

/// Times passes with timestamp queries, frame by frame, and (with the `tracy` feature) sends
/// them to a Tracy GPU context calibrated against the CPU clock, so that each zone appears on
/// Tracy's GPU timeline.
///
/// Each frame: record zones ([`encode`](Self::encode), [`encode_stage`](Self::encode_stage)
/// for a [`GpuCrowd`], [`zone`](Self::zone) for any other pass), then
/// [`resolve`](Self::resolve) into the last encoder, submit, and
/// [`read_blocking`](Self::read_blocking). Zones may span several encoders and submissions; a
/// frame's zones are resolved in one copy.
///
/// ```no_run
/// use throng::gpu::{GpuContext, GpuCrowd, GpuCrowdOptions, GpuProfiler};
/// # fn demo(rig: &throng::Rig, clips: &[throng::Clip]) -> Result<(), throng::gpu::GpuError> {
/// let gpu = GpuContext::new_blocking()?;
/// let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, rig, clips, GpuCrowdOptions::default())?;
/// let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 8);
/// crowd.set_samples(&[throng::program::ClipSample::new(0, 0.5, 1.0)], &[0..1])?;
/// let mut encoder = gpu.device.create_command_encoder(&Default::default());
/// profiler.encode(&crowd, &mut encoder);
/// profiler.resolve(&mut encoder);
/// gpu.queue.submit([encoder.finish()]);
/// for zone in profiler.read_blocking()?.zones {
///     println!("{}: {:.3} ms", zone.name, zone.duration_ns() * 1e-6);
/// }
/// # Ok(()) }
/// ```
pub struct GpuProfiler {
    device: wgpu::Device,
    timestamps: Option<Timestamps>,
    max_zones: u32,
    /// This frame's timed zones; zone `k` writes queries `2k` and `2k + 1`.
    zones: Vec<&'static str>,
    untimed: usize,
    /// Queries resolved into `readback` by [`resolve`](Self::resolve), not yet read.
    resolved: u32,
    #[cfg(feature = "tracy")]
    tracy: Option<tracy_client::GpuContext>,
}

impl std::fmt::Debug for GpuProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuProfiler")
            .field("timestamps", &self.timestamps.is_some())
            .field("max_zones", &self.max_zones)
            .field("zones", &self.zones)
            .finish_non_exhaustive()
    }
}

/// Bytes of one resolved timestamp.
const TIMESTAMP_BYTES: u64 = wgpu::QUERY_SIZE as u64;

impl GpuProfiler {
    /// A profiler for up to `max_zones` timed zones per frame (clamped to 1..=2048, the query
    /// set's limit), timing them where `device` has `Features::TIMESTAMP_QUERY`.
    ///
    /// With the `tracy` feature and timestamps, this also creates the Tracy GPU context: it
    /// submits one empty pass and waits for its timestamp (the clocks' calibration). Tracy
    /// allows 255 contexts per process; past that the profiler still times, without Tracy.
    #[must_use]
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, max_zones: u32) -> Self {
        Self::with_features(device, queue, device.features(), max_zones)
    }

    /// [`new`](Self::new), timing only if `features` (and the device) have
    /// `Features::TIMESTAMP_QUERY`: an engine that keeps timestamps for something else, or a
    /// test of the path adapters without timestamps take, passes features without it.
    #[must_use]
    pub fn with_features(device: &wgpu::Device, queue: &wgpu::Queue, features: wgpu::Features, max_zones: u32) -> Self {
        let max_zones = max_zones.clamp(1, wgpu::QUERY_SET_MAX_QUERIES / 2);
        let timed = (features & device.features()).contains(wgpu::Features::TIMESTAMP_QUERY);
        let timestamps = timed.then(|| {
            let bytes = u64::from(2 * max_zones) * TIMESTAMP_BYTES;
            let buffer = |label, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                })
            };
            Timestamps {
                queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("throng.profiler"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * max_zones,
                }),
                resolve: buffer(
                    "throng.profiler.resolve",
                    wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                ),
                readback: buffer(
                    "throng.profiler.readback",
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                ),
                period_ns: queue.get_timestamp_period(),
            }
        });
        #[cfg(feature = "tracy")]
        let tracy = timestamps.as_ref().and_then(|t| tracy_context(device, queue, t.period_ns));
        Self {
            device: device.clone(),
            timestamps,
            max_zones,
            zones: Vec::new(),
            untimed: 0,
            resolved: 0,
            #[cfg(feature = "tracy")]
            tracy,
        }
    }

    /// Whether zones are timed (the device has timestamp queries and they were asked for).
    #[must_use]
    pub fn has_timestamps(&self) -> bool {
        self.timestamps.is_some()
    }

    /// Timed zones per frame; more are recorded untimed.
    #[must_use]
    pub fn max_zones(&self) -> u32 {
        self.max_zones
    }

    /// Records one zone: `encode` gets the query set and the index of the zone's first query,
    /// and must begin exactly one pass that writes that query at its beginning and the next
    /// at its end (`ComputePassTimestampWrites` / `RenderPassTimestampWrites`), as
    /// [`GpuCrowd::encode_timed`] does. It gets `None` where the zone is untimed (no timestamp
    /// queries, or the frame's zones are used up) and then encodes its pass without timestamps.
    pub fn zone<R>(&mut self, name: &'static str, encode: impl FnOnce(Option<(&wgpu::QuerySet, u32)>) -> R) -> R {
        let Ok(result) = self.try_zone(name, |queries| Ok::<R, std::convert::Infallible>(encode(queries)));
        result
    }

    /// [`zone`](Self::zone) for an encoding that may fail before it begins its pass: on `Err`
    /// the zone is not counted and its queries are reused.
    fn try_zone<R, E>(
        &mut self,
        name: &'static str,
        encode: impl FnOnce(Option<(&wgpu::QuerySet, u32)>) -> Result<R, E>,
    ) -> Result<R, E> {
        if self.resolved > 0 {
            // The last frame was resolved but never read: start over.
            self.clear();
        }
        let next = self.zones.len() as u32;
        match self.timestamps.as_ref().filter(|_| next < self.max_zones) {
            Some(t) => {
                let result = encode(Some((&t.queries, 2 * next)))?;
                self.zones.push(name);
                Ok(result)
            }
            None => {
                let result = encode(None)?;
                self.untimed += 1;
                Ok(result)
            }
        }
    }

    /// Records `crowd`'s frame ([`GpuCrowd::encode`]) as the zone `throng.frame`. Before the
    /// crowd's first frame is set nothing is recorded, and no zone either.
    pub fn encode(&mut self, crowd: &GpuCrowd, encoder: &mut wgpu::CommandEncoder) {
        if crowd.output_buffers().is_empty() {
            return;
        }
        self.zone("throng.frame", |queries| match queries {
            Some((set, first)) => crowd.encode_timed(encoder, set, first),
            None => crowd.encode(encoder),
        });
    }

    /// Records one stage of `crowd`'s stage-by-stage path ([`GpuCrowd::encode_stage`]) as the
    /// zone named after its shader: `throng.sample`, `throng.transition`, `throng.layers`,
    /// `throng.local_to_model`, `throng.skinning`.
    ///
    /// Fails as [`GpuCrowd::encode_stage`] does, recording nothing.
    pub fn encode_stage(
        &mut self,
        crowd: &GpuCrowd,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
    ) -> Result<(), GpuError> {
        if crowd.output_buffers().is_empty() {
            return crowd.encode_stage(encoder, stage);
        }
        self.try_zone(stage_zone(stage), |queries| match queries {
            Some((set, first)) => crowd.encode_stage_timed(encoder, stage, set, first),
            None => crowd.encode_stage(encoder, stage),
        })
    }

    /// Records the copy of this frame's timestamps into a mappable buffer; call once, after
    /// the frame's last zone, in an encoder submitted after every zone's. Nothing without
    /// timed zones.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let Some(t) = &self.timestamps else { return };
        if self.zones.is_empty() || self.resolved > 0 {
            return;
        }
        let queries = 2 * self.zones.len() as u32;
        encoder.resolve_query_set(&t.queries, 0..queries, &t.resolve, 0);
        encoder.copy_buffer_to_buffer(&t.resolve, 0, &t.readback, 0, u64::from(queries) * TIMESTAMP_BYTES);
        self.resolved = queries;
    }

    /// Waits for the resolved frame and returns its zones' times, sending them to Tracy with
    /// the `tracy` feature; then starts the next frame. A frame with zones that were not
    /// [`resolve`](Self::resolve)d (or without timestamp queries) returns no times.
    ///
    /// Fails when waiting for the device or mapping the buffer fails (a lost device); the
    /// next frame starts either way.
    pub fn read_blocking(&mut self) -> Result<GpuFrameTimes, GpuError> {
        let untimed = self.untimed;
        let names = std::mem::take(&mut self.zones);
        let resolved = self.resolved;
        self.clear();
        let Some(t) = self.timestamps.as_ref().filter(|_| resolved > 0) else {
            return Ok(GpuFrameTimes { zones: Vec::new(), untimed: untimed + names.len() });
        };
        let ticks = read_ticks(&self.device, &t.readback, u64::from(resolved) * TIMESTAMP_BYTES)?;
        let period_ns = f64::from(t.period_ns);
        let origin = ticks.first().copied().unwrap_or(0);
        // Signed differences: a clock that steps back shows as such rather than wrapping.
        let ns = |tick: u64| tick.wrapping_sub(origin) as i64 as f64 * period_ns;
        let zones = names
            .iter()
            .zip(ticks.chunks_exact(2))
            .map(|(&name, pair)| GpuZoneTime { name, start_ns: ns(pair[0]), end_ns: ns(pair[1]) })
            .collect();
        #[cfg(feature = "tracy")]
        if let Some(context) = &self.tracy {
            send_to_tracy(context, &names, &ticks);
        }
        Ok(GpuFrameTimes { zones, untimed })
    }

    fn clear(&mut self) {
        self.zones.clear();
        self.untimed = 0;
        self.resolved = 0;
    }
}

/// The zone name of a stage: its shader's buffer label.
fn stage_zone(stage: Stage) -> &'static str {
    match stage {
        Stage::Sample => "throng.sample",
        Stage::LocalToModel => "throng.local_to_model",
        Stage::Skinning => "throng.skinning",
        Stage::Transition => "throng.transition",
        Stage::Layers => "throng.layers",
    }
}

/// Maps `buffer`'s first `bytes`, waiting for the device, and returns them as ticks.
fn read_ticks(device: &wgpu::Device, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u64>, GpuError> {
    let what = "GPU timestamps";
    let (sender, receiver) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, ..bytes, move |result| {
        // The receiver outlives the poll below; a failed send cannot happen.
        let _ = sender.send(result);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(GpuError::Poll)?;
    match receiver.recv() {
        Ok(Ok(())) => {}
        Ok(Err(source)) => return Err(GpuError::Readback { what, source }),
        Err(_) => return Err(GpuError::Readback { what, source: wgpu::BufferAsyncError }),
    }
    let ticks = buffer
        .get_mapped_range(..bytes)
        .map(|view| bytemuck::pod_collect_to_vec(&view))
        .map_err(|_| GpuError::Readback { what, source: wgpu::BufferAsyncError });
    buffer.unmap();
    ticks
}

/// A Tracy GPU context for `device`'s queue, calibrated by one timestamp written now: Tracy
/// maps that tick to the CPU time at the context's creation and places later ticks by
/// `period_ns`. `None` when the timestamp cannot be read or Tracy has no contexts left (255
/// per process); the CPU zones and [`GpuFrameTimes`] carry on without it.
#[cfg(feature = "tracy")]
fn tracy_context(device: &wgpu::Device, queue: &wgpu::Queue, period_ns: f32) -> Option<tracy_client::GpuContext> {
    let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("throng.profiler.calibrate"),
        ty: wgpu::QueryType::Timestamp,
        count: 1,
    });
    let buffer = |label, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: TIMESTAMP_BYTES,
            usage,
            mapped_at_creation: false,
        })
    };
    let resolve = buffer("throng.profiler.calibrate", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
    let readback = buffer("throng.profiler.calibrate", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let mut encoder =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng.profiler.calibrate") });
    // An empty pass: the one place every adapter with TIMESTAMP_QUERY can write a timestamp.
    drop(encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("throng.profiler.calibrate"),
        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
            query_set: &queries,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: None,
        }),
    }));
    encoder.resolve_query_set(&queries, 0..1, &resolve, 0);
    encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, TIMESTAMP_BYTES);
    queue.submit([encoder.finish()]);
    let tick = *read_ticks(device, &readback, TIMESTAMP_BYTES).ok()?.first()?;
    let info = device.adapter_info();
    let kind = match info.backend {
        wgpu::Backend::Vulkan => tracy_client::GpuContextType::Vulkan,
        wgpu::Backend::Dx12 => tracy_client::GpuContextType::Direct3D12,
        wgpu::Backend::Gl => tracy_client::GpuContextType::OpenGL,
        _ => tracy_client::GpuContextType::Invalid,
    };
    let name = format!("throng GPU ({}, {:?})", info.name, info.backend);
    // Ticks count up from the device's start; Tracy's are signed, so the top bit is never set
    // in practice. A value that had it would only misplace this context's zones.
    tracy_client::Client::running()?.new_gpu_context(Some(&name), kind, tick as i64, period_ns).ok()
}

/// Sends a frame's zones to Tracy in timestamp order (each zone's start, then its end; the
/// zones do not nest). The GPU zones' CPU-side markers are placed at this call.
#[cfg(feature = "tracy")]
fn send_to_tracy(context: &tracy_client::GpuContext, names: &[&'static str], ticks: &[u64]) {
    for (name, pair) in names.iter().zip(ticks.chunks_exact(2)) {
        let Ok(mut span) = context.span_alloc(name, "throng::gpu", file!(), line!()) else { return };
        span.end_zone();
        span.upload_timestamp_start(pair[0] as i64);
        span.upload_timestamp_end(pair[1] as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &'static str, start_ns: f64, end_ns: f64) -> GpuZoneTime {
        GpuZoneTime { name, start_ns, end_ns }
    }

    #[test]
    fn the_frame_spans_the_earliest_start_to_the_latest_end() {
        assert_eq!(GpuFrameTimes::default().frame_ns(), 0.0);
        // A second pass the GPU began before the first one's start (passes are not ordered by
        // the API when they share nothing): the frame still covers both.
        let times = GpuFrameTimes {
            zones: vec![zone("a", 0.0, 40.0), zone("b", -15.0, 25.0), zone("c", 50.0, 90.0)],
            untimed: 0,
        };
        assert_eq!(times.frame_ns(), 105.0);
        assert_eq!(times.zone("b").map(GpuZoneTime::duration_ns), Some(40.0));
        assert_eq!(times.zone("d"), None);
    }
}
