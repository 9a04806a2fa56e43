//! Profiling hooks for the Tracy profiler: CPU zones, per-frame plots and frame marks, behind
//! the `tracy` cargo feature (GPU timestamp zones are [`crate::gpu::GpuProfiler`]).
//!
//! With the feature off (the default) every item here compiles to nothing: [`Zone`] is a
//! zero-sized type whose methods are empty, [`zone!`](crate::zone) expands to its constructor,
//! and the counters behind the plots do not exist. With `--features tracy`, Tracy's client
//! starts with the process, listens on the loopback interface only (never broadcasting), and
//! a Tracy server that connects sees what the pipeline names below. Without a server
//! connected the client buffers a little and never blocks the program. `docs/profiling.md`
//! says how to connect and read a capture.
//!
//! | zone | where | what it covers |
//! |---|---|---|
//! | `throng.params` | `state::Crowd::set_float` … `reset_trigger` | one batch of parameter writes |
//! | `throng.state_step` | `state::Crowd::update` | every archetype's state step (value: characters) |
//! | `throng.state_step.chunk` | inside the rayon work | one chunk of characters: transition selection, clocks and pose-program build (value: chunk index) |
//! | `throng.gpu.upload` | `gpu::GpuCrowd::set_samples` / `set_frame` | checking and packing the pose programs, writing them to the queue (value: bytes) |
//! | `throng.gpu.encode` | `gpu::GpuCrowd::encode` / `encode_stage` | recording the frame's dispatches |
//!
//! Plots, one point per [`frame_mark`], each the sum over the frame: [`Plot`].
//!
//! Rayon's workers are the caller's (throng builds no thread pool): [`worker_pool`] builds one
//! whose threads Tracy shows as `throng-worker-N`.

#[cfg(feature = "tracy")]
use std::ops::Range;
#[cfg(feature = "tracy")]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "tracy")]
use crate::program::LayerProgram;

/// Whether this build profiles: `true` with the `tracy` feature.
pub const ENABLED: bool = cfg!(feature = "tracy");

/// A CPU zone, open from [`zone!`](crate::zone) until it is dropped or [`ended`](Zone::end).
///
/// Zero-sized and free without the `tracy` feature.
#[must_use = "a zone ends when dropped: bind it to a named variable (`let _zone = ...`)"]
pub struct Zone {
    #[cfg(feature = "tracy")]
    span: Option<tracy_client::Span>,
}

impl Zone {
    /// Opens a zone at `location`; for [`zone!`](crate::zone) only.
    #[doc(hidden)]
    #[cfg(feature = "tracy")]
    #[inline]
    pub fn __start(location: &'static tracy_client::SpanLocation) -> Self {
        Self { span: tracy_client::Client::running().map(|client| client.span(location, 0)) }
    }

    /// The zone of a build without the `tracy` feature; for [`zone!`](crate::zone) only.
    #[doc(hidden)]
    #[cfg(not(feature = "tracy"))]
    #[inline(always)]
    pub const fn __disabled() -> Self {
        Self {}
    }

    /// Attaches a number to the zone (a character count, a chunk index, bytes), shown in
    /// Tracy's zone details.
    #[inline(always)]
    pub fn value(&self, value: u64) {
        #[cfg(feature = "tracy")]
        if let Some(span) = &self.span {
            span.emit_value(value);
        }
        #[cfg(not(feature = "tracy"))]
        let _ = value;
    }

    /// Ends the zone here rather than at the end of its scope.
    #[inline(always)]
    pub fn end(self) {}
}

/// Opens a CPU [`Zone`](crate::profile::Zone) named by a string literal, open until the value
/// is dropped; nothing at all without the `tracy` feature.
///
/// ```
/// let zone = throng::zone!("game.ai");
/// zone.value(42); // e.g. agents thought about
/// zone.end();
/// ```
#[cfg(feature = "tracy")]
#[macro_export]
macro_rules! zone {
    ($name:literal) => {
        $crate::profile::Zone::__start($crate::profile::__private::span_location!($name))
    };
}

/// Opens a CPU [`Zone`](crate::profile::Zone) named by a string literal, open until the value
/// is dropped; nothing at all without the `tracy` feature.
///
/// ```
/// let zone = throng::zone!("game.ai");
/// zone.value(42); // e.g. agents thought about
/// zone.end();
/// ```
#[cfg(not(feature = "tracy"))]
#[macro_export]
macro_rules! zone {
    ($name:literal) => {
        $crate::profile::Zone::__disabled()
    };
}

/// What [`zone!`](crate::zone) expands to; not part of the API.
#[doc(hidden)]
#[cfg(feature = "tracy")]
pub mod __private {
    pub use tracy_client::span_location;
}

/// The name of rayon worker `index` in a pool from [`worker_pool`]: `throng-worker-{index}`.
#[must_use]
pub fn worker_name(index: usize) -> String {
    format!("throng-worker-{index}")
}

/// A rayon pool builder whose threads are named by [`worker_name`], so that Tracy (and `top`,
/// `gdb`, `perf`) tell throng's workers apart; with the `tracy` feature each worker also
/// registers its name with Tracy as it starts (Linux keeps only 15 bytes of a thread's own
/// name, which would make `throng-worker-1` of `throng-worker-10`).
///
/// throng builds no pool of its own: the state step ([`crate::state::Crowd::update`]) and the
/// CPU evaluators run their chunks on the pool of the thread that calls them, rayon's global
/// one unless the call is inside `ThreadPool::install`. A thread outside the pool that calls
/// them hands the work to the pool and sleeps until it is done: it runs no chunk itself, so a
/// pool of as many threads as cores uses every core. `docs/profiling.md` says how to read the
/// chunks' zones.
///
/// ```
/// // The global pool, named: once, before anything uses rayon.
/// # fn main() -> Result<(), rayon::ThreadPoolBuildError> {
/// # if false {
/// throng::profile::worker_pool().build_global()?;
/// # }
/// // Or a pool of its own, for a crowd stepped inside `install`.
/// let pool = throng::profile::worker_pool().num_threads(2).build()?;
/// let names = pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
/// assert_eq!(names, [Some("throng-worker-0".to_owned()), Some("throng-worker-1".to_owned())]);
/// # Ok(()) }
/// ```
#[must_use]
pub fn worker_pool() -> rayon::ThreadPoolBuilder {
    rayon::ThreadPoolBuilder::new().thread_name(worker_name).start_handler(|index| {
        #[cfg(feature = "tracy")]
        if let Some(client) = tracy_client::Client::running() {
            client.set_thread_name(&worker_name(index));
        }
        #[cfg(not(feature = "tracy"))]
        let _ = index;
    })
}

/// The per-frame plots. throng adds to each as the work happens; [`frame_mark`] sends each
/// sum as one point and starts the next frame from zero, so a frame that steps several crowds
/// (or uploads several archetypes) plots their total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Plot {
    /// `throng.characters`: characters stepped by `state::Crowd::update`.
    Characters,
    /// `throng.transitions_started`: layers that took a transition (pose programs with
    /// `LayerProgram::SWITCHED`).
    TransitionsStarted,
    /// `throng.clips_sampled`: clip samples the evaluators took for the characters they
    /// evaluated (a crossfade counts both sides; a layer above the base whose weight does not
    /// count (`program::weighs`) and a
    /// character animation LOD skips count nothing): `eval::frame_layers::FrameStats::clips_sampled`
    /// on the CPU, the same count from the programs of the characters `gpu::GpuCrowd` uploads
    /// a frame for, and every sample list's length for the unlayered frame.
    ClipsSampled,
    /// `throng.characters_evaluated`: characters the evaluators evaluated, on the CPU
    /// (`eval::frame_layers::FrameStats::characters_evaluated`) or the GPU (counted at the upload):
    /// all of them, or the due ones under animation LOD.
    CharactersEvaluated,
    /// `throng.bytes_uploaded`: bytes `gpu::GpuCrowd` wrote to the queue for pose programs,
    /// samples and chunk parameters.
    BytesUploaded,
}

impl Plot {
    /// Every plot, in the order of their values in [`FramePlots`].
    pub const ALL: [Self; 5] = [
        Self::Characters,
        Self::TransitionsStarted,
        Self::ClipsSampled,
        Self::CharactersEvaluated,
        Self::BytesUploaded,
    ];

    /// The plot's name on Tracy's timeline.
    ///
    /// ```
    /// assert_eq!(throng::profile::Plot::ClipsSampled.name(), "throng.clips_sampled");
    /// ```
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Characters => "throng.characters",
            Self::TransitionsStarted => "throng.transitions_started",
            Self::ClipsSampled => "throng.clips_sampled",
            Self::CharactersEvaluated => "throng.characters_evaluated",
            Self::BytesUploaded => "throng.bytes_uploaded",
        }
    }

    #[cfg(feature = "tracy")]
    fn tracy_name(self) -> tracy_client::PlotName {
        match self {
            Self::Characters => tracy_client::plot_name!("throng.characters"),
            Self::TransitionsStarted => tracy_client::plot_name!("throng.transitions_started"),
            Self::ClipsSampled => tracy_client::plot_name!("throng.clips_sampled"),
            Self::CharactersEvaluated => tracy_client::plot_name!("throng.characters_evaluated"),
            Self::BytesUploaded => tracy_client::plot_name!("throng.bytes_uploaded"),
        }
    }
}

/// One frame's plot values, as [`frame_mark`] sent them to Tracy: what a test or a HUD can read
/// without a Tracy server. All zero without the `tracy` feature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FramePlots {
    values: [u64; Plot::ALL.len()],
}

impl FramePlots {
    /// The frame's sum for `plot`.
    #[must_use]
    pub fn get(&self, plot: Plot) -> u64 {
        self.values[plot as usize]
    }
}

/// This frame's sums, by `Plot as usize`. Global because Tracy's plots are: the hot paths
/// add with relaxed atomics (one per chunk or upload, not per character).
#[cfg(feature = "tracy")]
static FRAME_SUMS: [AtomicU64; Plot::ALL.len()] = [const { AtomicU64::new(0) }; Plot::ALL.len()];

/// Adds `amount` to this frame's `plot`.
#[inline(always)]
pub(crate) fn count(plot: Plot, amount: u64) {
    #[cfg(feature = "tracy")]
    FRAME_SUMS[plot as usize].fetch_add(amount, Ordering::Relaxed);
    #[cfg(not(feature = "tracy"))]
    let _ = (plot, amount);
}

/// Counts one state-step chunk's characters stepped and transitions started, from the state
/// records it just wrote (still in cache). The clips they ask for are counted by the
/// evaluators, for the characters they evaluate.
#[cfg(feature = "tracy")]
pub(crate) fn count_step_chunk(characters: usize, records: &[crate::program::LayerRecord]) {
    count(Plot::Characters, characters as u64);
    count(
        Plot::TransitionsStarted,
        records.iter().filter(|r| u32::from(r.flags) & LayerProgram::SWITCHED != 0).count() as u64,
    );
}

/// Counts characters an evaluator evaluated and the clip samples they took.
#[inline(always)]
pub(crate) fn count_evaluated(characters: u64, clips: u64) {
    count(Plot::CharactersEvaluated, characters);
    count(Plot::ClipsSampled, clips);
}

/// [`count_evaluated`] for a frame of sample lists, one character per range.
#[cfg(feature = "tracy")]
pub(crate) fn count_sample_lists(ranges: &[Range<u32>]) {
    count_evaluated(ranges.len() as u64, ranges.iter().map(|r| u64::from(r.end - r.start)).sum());
}

/// [`count_evaluated`] for a layered frame of `num_layers` programs per character, every
/// character or only `rows`.
#[cfg(feature = "tracy")]
pub(crate) fn count_layered(programs: &[LayerProgram], num_layers: usize, rows: Option<&[u32]>) {
    let (characters, clips) = layered_counts(programs, num_layers, rows);
    count_evaluated(characters, clips);
}

/// Characters evaluated and the clips `eval::frame_layers::FrameJob` samples for them: both sides of
/// each visible layer (a layer above the base whose weight does not count is not evaluated).
#[cfg(feature = "tracy")]
fn layered_counts(programs: &[LayerProgram], num_layers: usize, rows: Option<&[u32]>) -> (u64, u64) {
    let num_layers = num_layers.max(1);
    let clips = |character: &[LayerProgram]| -> u64 {
        character
            .iter()
            .enumerate()
            .filter(|(l, p)| *l == 0 || crate::program::weighs(p.weight))
            .map(|(_, p)| u64::from(p.num_target) + u64::from(p.num_secondary))
            .sum()
    };
    match rows {
        None => ((programs.len() / num_layers) as u64, programs.chunks_exact(num_layers).map(clips).sum()),
        Some(rows) => (
            rows.len() as u64,
            rows.iter()
                .filter_map(|&row| programs.get(row as usize * num_layers..(row as usize + 1) * num_layers))
                .map(clips)
                .sum(),
        ),
    }
}

/// Ends a frame: sends each [`Plot`]'s sum since the last mark as one point, then marks the
/// frame on Tracy's timeline, and returns the values sent. Call once per displayed (or
/// simulated) frame, after its work is submitted. Nothing without the `tracy` feature (the
/// values are then all zero).
#[inline(always)]
pub fn frame_mark() -> FramePlots {
    #[cfg(feature = "tracy")]
    {
        let values = Plot::ALL.map(|plot| FRAME_SUMS[plot as usize].swap(0, Ordering::Relaxed));
        if let Some(client) = tracy_client::Client::running() {
            for (plot, &value) in Plot::ALL.iter().zip(&values) {
                // Sums far below 2^53: exact as f64.
                client.plot(plot.tracy_name(), value as f64);
            }
            client.frame_mark();
        }
        FramePlots { values }
    }
    #[cfg(not(feature = "tracy"))]
    FramePlots::default()
}

#[cfg(all(test, feature = "tracy"))]
mod tests {
    use super::*;

    #[test]
    fn a_layered_frame_counts_visible_layers_of_the_characters_evaluated() {
        // Two characters of two layers: the second layer of character 0 is at weight 0.
        let mut programs = [LayerProgram::default(); 4];
        (programs[0].num_target, programs[0].num_secondary) = (2, 1);
        (programs[1].num_target, programs[1].weight) = (3, 0.0);
        programs[2].num_target = 1;
        (programs[3].num_target, programs[3].weight) = (2, 0.5);
        assert_eq!(layered_counts(&programs, 2, None), (2, 6));
        assert_eq!(layered_counts(&programs, 2, Some(&[1])), (1, 3));
        assert_eq!(layered_counts(&programs, 2, Some(&[])), (0, 0));
    }
}
