//! The per-frame plots (`throng::profile::frame_mark`) against the evaluators' own counters,
//! for a crowd under a mix of animation LOD rates: `throng.clips_sampled` and
//! `throng.characters_evaluated` count what was evaluated, not what was stepped. A file of its
//! own because the plots are sums over the whole process, which other tests running at the same
//! time would add to. Without the `tracy` feature every plot value is zero.

use throng::eval::root_motion::RootDelta;
use throng::gpu::{GpuCrowd, GpuCrowdOptions};
use throng::profile::{FramePlots, Plot};
use throng::program::{LayerProgram, OutputLayout};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;

const CHARACTERS: usize = 300;
const FRAMES: usize = 24;
const DT: f32 = 1.0 / 60.0;

/// What a frame's plots must be: `stepped` characters through the state step with `switched`
/// layers switching, and `evaluated` characters sampling `clips` clips (all zero without Tracy).
fn expected(stepped: usize, switched: usize, evaluated: u64, clips: u64) -> [(Plot, u64); 4] {
    let on = |value: u64| if throng::profile::ENABLED { value } else { 0 };
    [
        (Plot::Characters, on(stepped as u64)),
        (Plot::TransitionsStarted, on(switched as u64)),
        (Plot::CharactersEvaluated, on(evaluated)),
        (Plot::ClipsSampled, on(clips)),
    ]
}

fn check(frame: usize, what: &str, plots: FramePlots, expected: [(Plot, u64); 4]) {
    for (plot, value) in expected {
        assert_eq!(plots.get(plot), value, "frame {frame}, {what}: {} ({plots:?})", plot.name());
    }
}

#[test]
fn plots_count_what_each_evaluator_evaluated_under_a_mix_of_lod_rates() {
    let (demo, bound, mut runtime, kind, handles) = support::drive::demo_runtime(CHARACTERS);
    let rates: Vec<u8> = (0..CHARACTERS).map(|i| [1, 2, 4, 8][i % 4]).collect();
    runtime.set_update_rate(&handles, &rates).unwrap();
    let (speed, jump) = (runtime.param(kind, "speed").unwrap(), runtime.param(kind, "jump").unwrap());
    let gpu = gpu();
    let mut gpu_crowd = gpu.as_ref().map(|gpu| {
        GpuCrowd::with_layers(
            &gpu.device,
            &gpu.queue,
            &demo.rig,
            &bound.clips,
            &bound.layers,
            GpuCrowdOptions::default(),
        )
        .unwrap()
    });
    let mut matrices = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
    let mut root_motion = vec![RootDelta::default(); CHARACTERS];
    // Whatever the process counted before starts no frame of this test.
    throng::profile::frame_mark();
    let mut some_skipped = false;
    for frame in 0..FRAMES {
        // Speeds that change every few frames and a tenth of the crowd jumping now and then: a
        // frame mixes characters switching (due whatever their rate) with ones held.
        let speeds: Vec<f32> = (0..CHARACTERS).map(|i| ((i + frame / 6) % 7) as f32 * 0.7).collect();
        runtime.set_float(speed, &handles, &speeds).unwrap();
        if frame % 8 == 3 {
            runtime.set_trigger(jump, &handles[frame % 10..][..CHARACTERS / 10], false).unwrap();
        }
        runtime.update(DT).unwrap();
        let stats = runtime.evaluate(kind, OutputLayout::Mat4, &mut matrices, &mut root_motion).unwrap();
        let programs = runtime.crowd().programs(kind).unwrap();
        let switched = programs.iter().filter(|p| p.flags & LayerProgram::SWITCHED != 0).count();
        let plots = throng::profile::frame_mark();
        let cpu = expected(CHARACTERS, switched, stats.characters_evaluated, stats.clips_sampled);
        check(frame, "the state step and the CPU evaluator", plots, cpu);
        some_skipped |= stats.characters_evaluated < CHARACTERS as u64;

        // The same programs and due rows on the GPU, in a frame of their own: the same counts,
        // and nothing stepped.
        if let Some(crowd) = &mut gpu_crowd {
            let due = runtime.crowd().due(kind).unwrap();
            assert_eq!(
                stats.characters_evaluated,
                due.len() as u64,
                "frame {frame}: the runtime evaluates the due rows"
            );
            crowd.set_frame_due(runtime.crowd().samples(kind).unwrap(), programs, DT, due).unwrap();
            let plots = throng::profile::frame_mark();
            check(frame, "the GPU upload", plots, expected(0, 0, stats.characters_evaluated, stats.clips_sampled));
            assert_eq!(plots.get(Plot::BytesUploaded) > 0, throng::profile::ENABLED, "frame {frame}: {plots:?}");
        }
    }
    assert!(some_skipped, "rates 2, 4 and 8 skipped no character in {FRAMES} frames");
}
