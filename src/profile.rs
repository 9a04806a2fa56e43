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
    /// `throng.clips_sampled`: clip samples the step's pose programs ask the evaluator for
    /// (a crossfade counts both sides).
    ClipsSampled,
    /// `throng.bytes_uploaded`: bytes `gpu::GpuCrowd` wrote to the queue for pose programs,
    /// samples and chunk parameters.
    BytesUploaded,
}

#[cfg(feature = "tracy")]
impl Plot {
    const ALL: [Self; 4] = [Self::Characters, Self::TransitionsStarted, Self::ClipsSampled, Self::BytesUploaded];

    fn name(self) -> tracy_client::PlotName {
        match self {
            Self::Characters => tracy_client::plot_name!("throng.characters"),
            Self::TransitionsStarted => tracy_client::plot_name!("throng.transitions_started"),
            Self::ClipsSampled => tracy_client::plot_name!("throng.clips_sampled"),
            Self::BytesUploaded => tracy_client::plot_name!("throng.bytes_uploaded"),
        }
    }
}

/// This frame's sums, by `Plot as usize`. Global because Tracy's plots are: the hot paths
/// add with relaxed atomics (one per chunk or upload, not per character).
#[cfg(feature = "tracy")]
static FRAME_SUMS: [AtomicU64; 4] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Adds `amount` to this frame's `plot`.
#[inline(always)]
pub(crate) fn count(plot: Plot, amount: u64) {
    #[cfg(feature = "tracy")]
    FRAME_SUMS[plot as usize].fetch_add(amount, Ordering::Relaxed);
    #[cfg(not(feature = "tracy"))]
    let _ = (plot, amount);
}

/// Counts one state-step chunk's characters, transitions started and clip samples, from the
/// pose programs it just wrote (still in cache).
#[cfg(feature = "tracy")]
pub(crate) fn count_step_chunk(characters: usize, programs: &[LayerProgram]) {
    let (switched, clips) = chunk_counts(programs);
    count(Plot::Characters, characters as u64);
    count(Plot::TransitionsStarted, switched);
    count(Plot::ClipsSampled, clips);
}

/// Layers that took a transition, and clip samples asked for, in `programs`.
#[cfg(feature = "tracy")]
fn chunk_counts(programs: &[LayerProgram]) -> (u64, u64) {
    programs.iter().fold((0, 0), |(switched, clips), p| {
        (
            switched + u64::from(p.flags & LayerProgram::SWITCHED != 0),
            clips + u64::from(p.num_target) + u64::from(p.num_secondary),
        )
    })
}

/// Ends a frame: sends each [`Plot`]'s sum since the last mark as one point, then marks the
/// frame on Tracy's timeline. Call once per displayed (or simulated) frame, after its work is
/// submitted. Nothing without the `tracy` feature.
#[inline(always)]
pub fn frame_mark() {
    #[cfg(feature = "tracy")]
    if let Some(client) = tracy_client::Client::running() {
        for plot in Plot::ALL {
            // Sums far below 2^53: exact as f64.
            client.plot(plot.name(), FRAME_SUMS[plot as usize].swap(0, Ordering::Relaxed) as f64);
        }
        client.frame_mark();
    }
}

#[cfg(all(test, feature = "tracy"))]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_counts_switches_not_transitions_in_flight_and_both_sides_of_a_crossfade() {
        let mut programs = [LayerProgram::default(); 3];
        // A crossfade taken this update: two destination samples and one source sample.
        programs[0].flags = LayerProgram::SWITCHED | LayerProgram::TRANSITIONING;
        (programs[0].num_target, programs[0].num_secondary) = (2, 1);
        // A transition still in flight from an earlier update is not a start.
        programs[1].flags = LayerProgram::TRANSITIONING;
        (programs[1].num_target, programs[1].num_secondary) = (1, 1);
        programs[2].num_target = 1;
        assert_eq!(chunk_counts(&programs), (1, 6));
        assert_eq!(chunk_counts(&[]), (0, 0));
    }
}
