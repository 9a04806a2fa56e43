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
//!
//! With the `tracy` feature the profiler also keeps Tracy's GPU clock aligned with the CPU's
//! ([`GpuClockAlignment`]): at creation and again every
//! [`alignment_interval`](GpuProfiler::alignment_interval), it writes one timestamp with the
//! GPU idle and tells Tracy which CPU time that tick is, so that clocks drifting apart over a
//! long capture never place a GPU zone after the CPU's wait for it.

use std::time::{Duration, Instant};

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
    /// Where the frame's first zone began on the CPU's clock, by the profiler's
    /// [`GpuClockAlignment`] when the frame was read: where Tracy shows it. `None` without the
    /// `tracy` feature or without timed zones.
    pub origin: Option<Instant>,
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

/// Where the profiler places GPU ticks on the CPU's clock: one tick of the GPU's timestamp clock
/// and the CPU instant it is placed at, which is what Tracy is told (with the `tracy` feature).
///
/// The tick is written by a pass submitted alone with the GPU idle; the GPU wrote it some time
/// between the submission ([`cpu`](Self::cpu)) and the moment it was read back
/// ([`uncertainty`](Self::uncertainty) later). The alignment places it at the submission, the
/// earliest it can have been written: a GPU time placed by it is early by at most
/// `uncertainty` and never late, so a GPU zone never appears to end after the CPU has finished
/// waiting for it. Clocks drift apart between alignments (a GPU timer and the CPU's counter
/// disagree by some parts per million, and some GPUs rescale theirs in low-power states); the
/// profiler re-aligns every [`GpuProfiler::alignment_interval`].
///
/// ```
/// use std::time::{Duration, Instant};
/// use throng::gpu::GpuClockAlignment;
///
/// let submitted = Instant::now();
/// let alignment = GpuClockAlignment {
///     tick: 1_000,
///     cpu: submitted,
///     uncertainty: Duration::from_micros(40),
///     period_ns: 2.0,
/// };
/// // 500 ticks of 2 ns after the aligned tick: one microsecond after the submission.
/// assert_eq!(alignment.instant(1_500), submitted.checked_add(Duration::from_micros(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuClockAlignment {
    /// A tick of the GPU's timestamp clock, as timestamp queries resolve it.
    pub tick: u64,
    /// The CPU instant `tick` is placed at: when the pass that wrote it was submitted.
    pub cpu: Instant,
    /// How long after [`cpu`](Self::cpu) the tick was read back: the GPU wrote it within
    /// `cpu..cpu + uncertainty`, so GPU times placed by this alignment are early by at most this.
    pub uncertainty: Duration,
    /// Nanoseconds per tick (`Queue::get_timestamp_period`).
    pub period_ns: f32,
}

impl GpuClockAlignment {
    /// The CPU instant this alignment places `tick` at; `None` where that falls outside what
    /// [`Instant`] can hold. Ticks before [`tick`](Self::tick) (a signed difference, as
    /// [`GpuZoneTime`] reads them) land before [`cpu`](Self::cpu).
    #[must_use]
    pub fn instant(&self, tick: u64) -> Option<Instant> {
        let ns = tick.wrapping_sub(self.tick) as i64 as f64 * f64::from(self.period_ns);
        let offset = Duration::from_nanos(ns.abs() as u64);
        if ns >= 0.0 { self.cpu.checked_add(offset) } else { self.cpu.checked_sub(offset) }
    }

    /// The tick the GPU clock shows at `now` by this alignment: what Tracy is handed at `now`,
    /// since it pairs a tick with its own clock at the moment it is told.
    #[cfg(feature = "tracy")]
    fn tick_at(&self, now: Instant) -> i64 {
        let elapsed_ticks = now.saturating_duration_since(self.cpu).as_nanos() as f64 / f64::from(self.period_ns);
        // Ticks count up from the device's start; Tracy's are signed, so the top bit is never
        // set in practice. A value that had it would only misplace this context's zones.
        self.tick.wrapping_add(elapsed_ticks as u64) as i64
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
/// them to a Tracy GPU context kept aligned with the CPU clock ([`GpuClockAlignment`]), so that
/// each zone appears on Tracy's GPU timeline where it ran.
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
    /// Where the clock alignments are submitted.
    #[cfg(feature = "tracy")]
    queue: wgpu::Queue,
    timestamps: Option<Timestamps>,
    max_zones: u32,
    /// This frame's timed zones; zone `k` writes queries `2k` and `2k + 1`.
    zones: Vec<&'static str>,
    untimed: usize,
    /// Queries resolved into `readback` by [`resolve`](Self::resolve), not yet read.
    resolved: u32,
    alignment_interval: Duration,
    #[cfg(feature = "tracy")]
    tracy: Option<TracyClock>,
}

impl std::fmt::Debug for GpuProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuProfiler")
            .field("timestamps", &self.timestamps.is_some())
            .field("max_zones", &self.max_zones)
            .field("zones", &self.zones)
            .field("alignment_interval", &self.alignment_interval)
            .field("clock_alignment", &self.clock_alignment())
            .finish_non_exhaustive()
    }
}

/// Bytes of one resolved timestamp.
const TIMESTAMP_BYTES: u64 = wgpu::QUERY_SIZE as u64;

impl GpuProfiler {
    /// How often, by default, the clocks are re-aligned for Tracy: twice a second keeps the
    /// drift of clocks that disagree by ten parts per million under 5 µs, for one idle round
    /// trip to the GPU (tens of microseconds) every 500 ms.
    pub const DEFAULT_ALIGNMENT_INTERVAL: Duration = Duration::from_millis(500);

    /// A profiler for up to `max_zones` timed zones per frame (clamped to 1..=2048, the query
    /// set's limit), timing them where `device` has `Features::TIMESTAMP_QUERY`.
    ///
    /// With the `tracy` feature and timestamps, this also creates the Tracy GPU context and
    /// aligns its clock: it submits an empty pass that writes one timestamp and waits for it,
    /// three times, keeping the shortest round trip ([`GpuClockAlignment`]). Tracy allows 255
    /// contexts per process; past that the profiler still times, without Tracy.
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
        let tracy = timestamps.as_ref().and_then(|t| TracyClock::new(device, queue, t.period_ns));
        #[cfg(not(feature = "tracy"))]
        let _ = queue;
        Self {
            device: device.clone(),
            #[cfg(feature = "tracy")]
            queue: queue.clone(),
            timestamps,
            max_zones,
            zones: Vec::new(),
            untimed: 0,
            resolved: 0,
            alignment_interval: Self::DEFAULT_ALIGNMENT_INTERVAL,
            #[cfg(feature = "tracy")]
            tracy,
        }
    }

    /// How often the clocks are re-aligned for Tracy ([`DEFAULT_ALIGNMENT_INTERVAL`](Self::DEFAULT_ALIGNMENT_INTERVAL)
    /// unless set).
    #[must_use]
    pub fn alignment_interval(&self) -> Duration {
        self.alignment_interval
    }

    /// Re-aligns the clocks for Tracy at most this often: at the first
    /// [`read_blocking`](Self::read_blocking) (or [`send_ticks`](Self::send_ticks)) once
    /// `interval` has passed since the last alignment, after that frame's zones are sent. A
    /// GPU whose timer is rescaled in low-power states wants it short; `Duration::ZERO`
    /// re-aligns after every frame. Nothing is aligned without the `tracy` feature.
    pub fn set_alignment_interval(&mut self, interval: Duration) {
        self.alignment_interval = interval;
    }

    /// The alignment Tracy places this profiler's GPU zones by now; `None` without the `tracy`
    /// feature, without timestamp queries, or where Tracy's GPU context could not be made.
    #[must_use]
    pub fn clock_alignment(&self) -> Option<GpuClockAlignment> {
        #[cfg(feature = "tracy")]
        {
            self.tracy.as_ref().map(|clock| clock.alignment)
        }
        #[cfg(not(feature = "tracy"))]
        None
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
    /// `throng.procedural`, `throng.local_to_model`, `throng.skinning`.
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
        self.try_zone(stage.zone_name(), |queries| match queries {
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
            return Ok(GpuFrameTimes { zones: Vec::new(), untimed: untimed + names.len(), origin: None });
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
        // Placed by the alignment Tracy gets these zones with: any re-alignment comes after.
        let origin = ticks.first().and_then(|&tick| self.clock_alignment()?.instant(tick));
        self.send_ticks(names.iter().zip(ticks.chunks_exact(2)).map(|(&name, pair)| (name, pair[0], pair[1])));
        Ok(GpuFrameTimes { zones, untimed, origin })
    }

    /// Sends passes timed elsewhere, with the caller's own timestamp queries on this profiler's
    /// queue, to Tracy's GPU timeline: each `(name, start tick, end tick)` as resolved, in the
    /// order the GPU ran them (Tracy wants each context's times in increasing order). Then
    /// re-aligns the clocks if [`alignment_interval`](Self::alignment_interval) has passed, as
    /// [`read_blocking`](Self::read_blocking) does: call it once the GPU has finished the
    /// passes. A bench that batches many frames' timestamps into one readback uses this to
    /// show each pass under its stage's name. Nothing without the `tracy` feature.
    ///
    /// ```no_run
    /// # fn demo(gpu: &throng::gpu::GpuContext, ticks: &[u64]) {
    /// use throng::gpu::{GpuProfiler, Stage};
    ///
    /// let mut profiler = GpuProfiler::new(&gpu.device, &gpu.queue, 1);
    /// // `ticks`: one frame of the stage-by-stage path, each stage's start and end, resolved.
    /// let zones = Stage::ALL.iter().zip(ticks.chunks_exact(2));
    /// profiler.send_ticks(zones.map(|(stage, pair)| (stage.zone_name(), pair[0], pair[1])));
    /// # }
    /// ```
    pub fn send_ticks(&mut self, zones: impl IntoIterator<Item = (&'static str, u64, u64)>) {
        #[cfg(feature = "tracy")]
        if let Some(clock) = &mut self.tracy {
            for (name, start, end) in zones {
                let Ok(mut span) = clock.context.span_alloc(name, "throng::gpu", file!(), line!()) else { break };
                span.end_zone();
                span.upload_timestamp_start(start as i64);
                span.upload_timestamp_end(end as i64);
            }
            if clock.alignment.cpu.elapsed() >= self.alignment_interval {
                // A failed alignment (a lost device) keeps the last one; the next read reports
                // the loss.
                if let Ok(alignment) = clock.calibration.measure(&self.device, &self.queue, clock.alignment.period_ns) {
                    clock.context.sync_gpu_time(alignment.tick_at(Instant::now()));
                    clock.alignment = alignment;
                }
            }
        }
        #[cfg(not(feature = "tracy"))]
        let _ = zones;
    }

    fn clear(&mut self) {
        self.zones.clear();
        self.untimed = 0;
        self.resolved = 0;
    }
}

impl Stage {
    /// The stage's zone name, `throng.` and its shader's name: `throng.sample`,
    /// `throng.transition`, `throng.layers`, `throng.procedural`, `throng.local_to_model`,
    /// `throng.skinning`. What [`GpuProfiler::encode_stage`] names its zones, for passes timed
    /// elsewhere ([`GpuProfiler::send_ticks`]).
    ///
    /// ```
    /// assert_eq!(throng::gpu::Stage::LocalToModel.zone_name(), "throng.local_to_model");
    /// ```
    #[must_use]
    pub const fn zone_name(self) -> &'static str {
        match self {
            Self::Sample => "throng.sample",
            Self::LocalToModel => "throng.local_to_model",
            Self::Skinning => "throng.skinning",
            Self::Transition => "throng.transition",
            Self::Layers => "throng.layers",
            Self::Procedural => "throng.procedural",
        }
    }
}

/// Maps `buffer`'s first `bytes`, waiting for the device, and returns them as ticks.
fn read_ticks(device: &wgpu::Device, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u64>, GpuError> {
    super::map_read_blocking(device, buffer, bytes, "GPU timestamps")
}

/// A Tracy GPU context and what keeps its clock aligned with the CPU's.
#[cfg(feature = "tracy")]
struct TracyClock {
    context: tracy_client::GpuContext,
    calibration: Calibration,
    /// What Tracy was last told.
    alignment: GpuClockAlignment,
}

#[cfg(feature = "tracy")]
impl TracyClock {
    /// A Tracy GPU context for `device`'s queue, aligned by [`Calibration::measure`]. `None`
    /// when the timestamp cannot be read or Tracy has no contexts left (255 per process); the
    /// CPU zones and [`GpuFrameTimes`] carry on without it.
    fn new(device: &wgpu::Device, queue: &wgpu::Queue, period_ns: f32) -> Option<Self> {
        let calibration = Calibration::new(device);
        let alignment = calibration.measure(device, queue, period_ns).ok()?;
        let info = device.adapter_info();
        let kind = match info.backend {
            wgpu::Backend::Vulkan => tracy_client::GpuContextType::Vulkan,
            wgpu::Backend::Dx12 => tracy_client::GpuContextType::Direct3D12,
            wgpu::Backend::Gl => tracy_client::GpuContextType::OpenGL,
            _ => tracy_client::GpuContextType::Invalid,
        };
        let name = format!("throng GPU ({}, {:?})", info.name, info.backend);
        let context = tracy_client::Client::running()?
            .new_gpu_context(Some(&name), kind, alignment.tick_at(Instant::now()), period_ns)
            .ok()?;
        Some(Self { context, calibration, alignment })
    }
}

/// A one-timestamp query set and its buffers, written alone to align the clocks.
#[cfg(feature = "tracy")]
struct Calibration {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
}

#[cfg(feature = "tracy")]
impl Calibration {
    /// Round trips per alignment; the shortest is kept (the first may wait behind work still
    /// on the GPU, or a core the driver had to wake).
    const TRIES: usize = 3;

    fn new(device: &wgpu::Device) -> Self {
        let label = Some("throng.profiler.calibrate");
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label,
                size: TIMESTAMP_BYTES,
                usage,
                mapped_at_creation: false,
            })
        };
        Self {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label,
                ty: wgpu::QueryType::Timestamp,
                count: 1,
            }),
            resolve: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readback: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
        }
    }

    /// Submits an empty pass that writes one timestamp, waits for it and reads it,
    /// [`TRIES`](Self::TRIES) times; the try with the shortest round trip, its tick placed at
    /// its submission (the earliest the GPU can have written it).
    fn measure(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        period_ns: f32,
    ) -> Result<GpuClockAlignment, GpuError> {
        let mut best: Option<GpuClockAlignment> = None;
        for _ in 0..Self::TRIES {
            let mut encoder = device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng.profiler.calibrate") });
            // An empty pass: the one place every adapter with TIMESTAMP_QUERY can write a timestamp.
            drop(encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("throng.profiler.calibrate"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &self.queries,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: None,
                }),
            }));
            encoder.resolve_query_set(&self.queries, 0..1, &self.resolve, 0);
            encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.readback, 0, TIMESTAMP_BYTES);
            let commands = encoder.finish();
            let submitted = Instant::now();
            queue.submit([commands]);
            let ticks = read_ticks(device, &self.readback, TIMESTAMP_BYTES)?;
            let uncertainty = submitted.elapsed();
            let Some(&tick) = ticks.first() else { continue };
            if best.is_none_or(|b| uncertainty < b.uncertainty) {
                best = Some(GpuClockAlignment { tick, cpu: submitted, uncertainty, period_ns });
            }
        }
        best.ok_or(GpuError::Readback { what: "a calibration timestamp", source: wgpu::BufferAsyncError })
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
            origin: None,
        };
        assert_eq!(times.frame_ns(), 105.0);
        assert_eq!(times.zone("b").map(GpuZoneTime::duration_ns), Some(40.0));
        assert_eq!(times.zone("d"), None);
    }
}
