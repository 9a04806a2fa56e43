//! CPU pose evaluation of a crowd of the 64-joint built-in character: two clips sampled per
//! character at its own time, blended, local-to-model and skinning matrices (`eval_cpu/*`);
//! and the full frame job mid-transition, crossfading (three clips from idle, four from another
//! blend) against inertializing (two clips plus a decaying offset) (`eval_cpu/frame_*`); and
//! animation LOD on the demo graph, everyone every frame against a realistic mix of rates
//! (`eval_cpu/frame_lod/*`).
//!
//! Compact clips (`docs/compression.md`): sampling and blending alone, one thread, full
//! against compact clips (`eval_cpu/sample_{full,compact}/10k`), and the whole crowd job with
//! compact clips (`eval_cpu/10k/Mat4/compact`).
//!
//! The crowd job's stages one at a time on one thread (`eval_cpu/stage_*/10k`): sampling two
//! clips, sampling and blending them (full and compact clips), local-to-model, skinning, and
//! the last two together, a mesh-space override of the upper body at weight 0.8
//! (`stage_override_mesh/10k`, the pose's copy included), and the procedural stage (look-at on
//! a four-joint neck chain plus
//! two-leg IK per character, four characters a call as the frame runs it,
//! `stage_procedural/10k`, its pose copies included), through the stage
//! functions alone, so that one bench file builds
//! against an older commit and both binaries can be run interleaved (BENCHMARKS.md, "CPU
//! evaluator"); and the whole layered frame of `frame_lod/10k/all_rate_1` on a one-thread
//! pool, without and with the procedural stage (`stage_layered_frame{,_procedural}/10k`), the
//! denominator of the stage's share. These report the CPU time of the thread that runs them
//! (`support::cpu_time`), the others wall time.
//!
//! Root motion beside a GPU evaluation, on a one-thread pool (its thread's CPU time): from the
//! programs, the crowd's records expanded first (`root_motion_programs/10k`), against from the
//! records, each base layer alone expanded (`root_motion_records/10k`).
//!
//! `cargo bench --bench eval_cpu`; `RAYON_NUM_THREADS=1` for the single-thread figure.

mod support;

use std::array::from_fn;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::Mat4;
use support::cpu_time::{ThreadCpuTime, thread_cpu_ns};
use throng::clip::compact::DEFAULT_MAX_ERROR_M;
use throng::demo::{DemoArchetype, DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalCrowdJob;
use throng::eval::expand::ExpandJob;
use throng::eval::frame_layers::{EvalContext, FrameJob, ProceduralInputs};
use throng::eval::layers::{MeshSpaceScratch, override_mesh};
use throng::eval::local_to_model::local_to_model;
use throng::eval::procedural::{LANES, procedural_lanes};
use throng::eval::root_motion::{RootDelta, crowd_root_motion, records_root_motion};
use throng::eval::sample::sample_blend;
use throng::eval::skinning::{local_to_model_skinning, skinning};
use throng::graph::CompiledGraph;
use throng::program::{ClipSample, LayerProgram, SwitchMode};
use throng::program::{DueRows, LayerSetup, Mask, MaskEntry, OutputLayout};
use throng::state::Crowd;
use throng::{Clip, Transform};

fn eval_cpu(c: &mut Criterion) {
    let demo = DemoCharacter::humanoid_64();
    let walk = demo.clip_index("walk").expect("demo has walk") as u32;
    let run = demo.clip_index("run").expect("demo has run") as u32;
    let joints = demo.rig.num_joints();
    let mut group = c.benchmark_group("eval_cpu");
    for num_characters in [1_000usize, 10_000] {
        let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
        for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
            let mut output = vec![0.0f32; num_characters * joints * layout.floats_per_joint()];
            group.throughput(Throughput::Elements(num_characters as u64));
            let name = format!("{}k/{layout:?}", num_characters / 1000);
            group.bench_function(BenchmarkId::from_parameter(name), |bench| {
                bench.iter(|| {
                    EvalCrowdJob {
                        rig: &demo.rig,
                        clips: &demo.clips,
                        samples: &samples,
                        sample_ranges: &ranges,
                        layout,
                        output: &mut output,
                    }
                    .run()
                    .expect("valid job")
                });
            });
        }
    }
    group.finish();
}

/// Sampling and blending two clips per character into a local pose, 10k characters on one
/// thread, full-precision clips against the same clips compact: what decoding costs, or saves
/// in memory traffic, where the CPU evaluator spends its time.
fn sample_compact(c: &mut Criterion) {
    let demo = DemoCharacter::humanoid_64();
    let walk = demo.clip_index("walk").expect("demo has walk") as u32;
    let run = demo.clip_index("run").expect("demo has run") as u32;
    let compact: Vec<Clip> =
        demo.clips.iter().map(|clip| clip.compress(&demo.rig, DEFAULT_MAX_ERROR_M).expect("valid bound").0).collect();
    let num_characters = 10_000;
    let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
    let mut pose = vec![Transform::IDENTITY; demo.rig.num_joints()];
    let mut group = c.benchmark_group("eval_cpu");
    group.throughput(Throughput::Elements(num_characters as u64));
    for (name, clips) in [("sample_full", &demo.clips), ("sample_compact", &compact)] {
        group.bench_function(BenchmarkId::new(name, "10k"), |bench| {
            bench.iter(|| {
                for range in &ranges {
                    sample_blend(
                        clips,
                        &samples[range.start as usize..range.end as usize],
                        demo.rig.rest_pose(),
                        &mut pose,
                    );
                }
                pose[0].translation
            });
        });
    }
    let mut output = vec![0.0f32; num_characters * demo.rig.num_joints() * 16];
    group.bench_function(BenchmarkId::from_parameter("10k/Mat4/compact"), |bench| {
        bench.iter(|| {
            EvalCrowdJob {
                rig: &demo.rig,
                clips: &compact,
                samples: &samples,
                sample_ranges: &ranges,
                layout: OutputLayout::Mat4,
                output: &mut output,
            }
            .run()
            .expect("valid job")
        });
    });
    group.finish();
}

/// Distinct poses the local-to-model and skinning stages cycle through: as many as a rayon
/// chunk's characters, so that they stay in cache as the job's one scratch pose does.
const STAGE_POSES: usize = 64;

/// Each stage of the crowd job alone, 10k characters of the 64-joint humanoid on one thread,
/// each sampling walk and run at its own time (as `eval_cpu/10k/Mat4`): sampling the two clips
/// into two poses; sampling and blending them into one (the job's first stage); local-to-model;
/// skinning into a mat4 output row per character; and local-to-model plus skinning. Sampling
/// and blending also from the clips compressed at the default bound.
fn stages(c: &mut Criterion<ThreadCpuTime>) {
    let demo = DemoCharacter::humanoid_64();
    let compact: Vec<Clip> =
        demo.clips.iter().map(|clip| clip.compress(&demo.rig, DEFAULT_MAX_ERROR_M).expect("valid bound").0).collect();
    let walk = demo.clip_index("walk").expect("demo has walk") as u32;
    let run = demo.clip_index("run").expect("demo has run") as u32;
    let joints = demo.rig.num_joints();
    let num_characters = 10_000;
    let (samples, ranges) = support::two_clip_crowd(num_characters, walk, run);
    let mut group = c.benchmark_group("eval_cpu");
    group.throughput(Throughput::Elements(num_characters as u64));
    let (mut first, mut second) = (vec![Transform::IDENTITY; joints], vec![Transform::IDENTITY; joints]);
    group.bench_function(BenchmarkId::new("stage_sample", "10k"), |bench| {
        bench.iter(|| {
            for pair in samples.chunks_exact(2) {
                demo.clips[pair[0].clip as usize].sample(pair[0].time_s, &mut first);
                demo.clips[pair[1].clip as usize].sample(pair[1].time_s, &mut second);
            }
            (first[0].translation, second[0].translation)
        });
    });
    for (name, clips) in [("stage_sample_blend", &demo.clips), ("stage_sample_blend_compact", &compact)] {
        group.bench_function(BenchmarkId::new(name, "10k"), |bench| {
            bench.iter(|| {
                for range in &ranges {
                    let samples = &samples[range.start as usize..range.end as usize];
                    sample_blend(clips, samples, demo.rig.rest_pose(), &mut first);
                }
                first[0].translation
            });
        });
    }
    let poses: Vec<Vec<Transform>> = ranges[..STAGE_POSES]
        .iter()
        .map(|range| {
            let mut pose = vec![Transform::IDENTITY; joints];
            sample_blend(
                &demo.clips,
                &samples[range.start as usize..range.end as usize],
                demo.rig.rest_pose(),
                &mut pose,
            );
            pose
        })
        .collect();
    let mut model = vec![Mat4::IDENTITY; joints];
    group.bench_function(BenchmarkId::new("stage_local_to_model", "10k"), |bench| {
        bench.iter(|| {
            for character in 0..num_characters {
                local_to_model(demo.rig.parents(), &poses[character % STAGE_POSES], &mut model);
            }
            model[joints - 1]
        });
    });
    let models: Vec<Vec<Mat4>> = poses
        .iter()
        .map(|pose| {
            let mut model = vec![Mat4::IDENTITY; joints];
            local_to_model(demo.rig.parents(), pose, &mut model);
            model
        })
        .collect();
    let layout = OutputLayout::Mat4;
    let per_character = joints * layout.floats_per_joint();
    let mut output = vec![0.0f32; num_characters * per_character];
    group.bench_function(BenchmarkId::new("stage_skinning", "10k"), |bench| {
        bench.iter(|| {
            for (character, out) in output.chunks_exact_mut(per_character).enumerate() {
                skinning(&models[character % STAGE_POSES], demo.rig.inverse_bind(), layout, out);
            }
        });
    });
    group.bench_function(BenchmarkId::new("stage_local_to_model_skinning", "10k"), |bench| {
        bench.iter(|| {
            for (character, out) in output.chunks_exact_mut(per_character).enumerate() {
                local_to_model_skinning(
                    demo.rig.parents(),
                    &poses[character % STAGE_POSES],
                    demo.rig.inverse_bind(),
                    layout,
                    &mut model,
                    out,
                );
            }
        });
    });
    // The GPU benches' mesh-space layer (`support::humanoid_scenario`: the upper body at weight
    // 0.8) over each character's pose, the next one's as the layer's, the pose's copy included.
    let upper = MaskEntry { joint: "spine_01".into(), weight: 1.0, descendants: true };
    let mask = Mask::from_entries(&demo.rig, &[upper]).expect("the demo has a spine");
    let mut scratch = MeshSpaceScratch::default();
    group.bench_function(BenchmarkId::new("stage_override_mesh", "10k"), |bench| {
        bench.iter(|| {
            for character in 0..num_characters {
                first.copy_from_slice(&poses[character % STAGE_POSES]);
                let layer = &poses[(character + 1) % STAGE_POSES];
                override_mesh(demo.rig.parents(), &mut first, layer, 0.8, Some(mask.weights()), &mut scratch);
            }
            first[joints - 1]
        });
    });
    let (setup, targets) = support::procedural_crowd(&demo.rig, num_characters);
    let mut lanes = vec![Transform::IDENTITY; LANES * joints];
    group.bench_function(BenchmarkId::new("stage_procedural", "10k"), |bench| {
        bench.iter(|| {
            for first in (0..num_characters).step_by(LANES) {
                for (k, pose) in lanes.chunks_exact_mut(joints).enumerate() {
                    pose.copy_from_slice(&poses[(first + k) % STAGE_POSES]);
                }
                let mut each = lanes.chunks_mut(joints);
                let group = from_fn(|_| each.next().unwrap_or_default());
                procedural_lanes(demo.rig.parents(), &setup, &targets, from_fn(|k| first + k), group);
            }
            lanes[joints - 1]
        });
    });
    group.finish();
}

/// One frame of `n` characters, each mid-transition to a walk/run blend, from idle (one clip) or
/// from another walk/run blend (a blend tree on each side, seed 000's worse case).
struct TransitionFrame {
    samples: Vec<ClipSample>,
    programs: Vec<LayerProgram>,
    context: EvalContext,
    output: Vec<f32>,
    clips_sampled: Vec<u32>,
}

impl TransitionFrame {
    fn new(demo: &DemoCharacter, n: usize, mode: SwitchMode, from_blend: bool) -> Self {
        let clip = |name| demo.clip_index(name).expect("demo clip") as u32;
        let (idle, walk, run) = (clip("idle"), clip("walk"), clip("run"));
        let (blend, _) = support::two_clip_crowd(n, walk, run);
        let mut samples = Vec::with_capacity(n * 3);
        let mut programs = Vec::with_capacity(n);
        for (i, pair) in blend.chunks_exact(2).enumerate() {
            let first_sample = samples.len() as u32;
            let crossfade = mode == SwitchMode::Crossfade;
            let share = if crossfade { 0.5 } else { 1.0 };
            samples.extend(pair.iter().map(|s| ClipSample { weight: s.weight * share, ..*s }));
            // Crossfade: the idle source still playing. Inertialization: on the switch frame,
            // the destination one step back (the offsets are captured once, below).
            let source: Vec<ClipSample> = match (crossfade, from_blend) {
                (true, false) => vec![ClipSample::new(idle, i as f32 * 0.01, 0.5)],
                (true, true) => {
                    pair.iter().map(|s| ClipSample { time_s: s.time_s + 0.3, weight: s.weight * 0.5, ..*s }).collect()
                }
                (false, _) => pair.to_vec(),
            };
            let num_secondary = source.len() as u32;
            samples.extend(source);
            programs.push(LayerProgram {
                first_sample,
                num_target: 2,
                num_secondary,
                mode: mode as u32,
                flags: LayerProgram::TRANSITIONING | if crossfade { 0 } else { LayerProgram::SWITCHED },
                target_weight: share,
                weight: 1.0,
                decay_s: 0.25,
                ..LayerProgram::default()
            });
        }
        let joints = demo.rig.num_joints();
        let mut frame = Self {
            samples,
            programs,
            context: EvalContext::new(n, 1, joints),
            output: vec![0.0; n * joints * 16],
            clips_sampled: vec![0; n],
        };
        if mode != SwitchMode::Crossfade {
            // Show idle for two frames, then switch: every character has an offset decaying.
            let mut shown = frame.programs.clone();
            for p in &mut shown {
                *p = LayerProgram { num_target: 1, num_secondary: 0, mode: 0, flags: 0, ..*p };
            }
            frame.run(demo, &shown.clone(), 1.0 / 60.0);
            frame.run(demo, &shown, 1.0 / 60.0);
            let programs = frame.programs.clone();
            frame.run(demo, &programs, 1.0 / 60.0);
            for p in &mut frame.programs {
                p.flags = LayerProgram::TRANSITIONING;
                p.num_secondary = 0;
            }
        }
        frame
    }

    /// One frame; a `dt_s` of 0 holds the offsets where they are, so every iteration of the
    /// bench does the same work.
    fn run(&mut self, demo: &DemoCharacter, programs: &[LayerProgram], dt_s: f32) {
        FrameJob {
            rig: &demo.rig,
            clips: &demo.clips,
            layers: &[LayerSetup::default()],
            samples: &self.samples,
            programs,
            dt_s,
            context: &mut self.context,
            layout: OutputLayout::Mat4,
            output: &mut self.output,
            clips_sampled: &mut self.clips_sampled,
            root_motion: &mut [],
        }
        .run()
        .expect("valid frame");
    }
}

fn frame_transitions(c: &mut Criterion) {
    let demo = DemoCharacter::humanoid_64();
    let mut group = c.benchmark_group("eval_cpu");
    let n = 10_000;
    group.throughput(Throughput::Elements(n as u64));
    let cases = [
        ("frame_crossfade", SwitchMode::Crossfade, false),
        ("frame_crossfade_from_blend", SwitchMode::Crossfade, true),
        ("frame_inertialize", SwitchMode::InertializeQuintic, false),
    ];
    for (name, mode, from_blend) in cases {
        let mut frame = TransitionFrame::new(&demo, n, mode, from_blend);
        let programs = frame.programs.clone();
        group.bench_function(BenchmarkId::new(name, "10k"), |bench| bench.iter(|| frame.run(&demo, &programs, 0.0)));
    }
    group.finish();
}

/// Frames recorded per case: one whole cycle of the slowest rate, so that every due set shows.
const LOD_FRAMES: usize = 8;

/// One recorded frame of the state step: what the evaluator reads.
struct RecordedFrame {
    samples: Vec<ClipSample>,
    programs: Vec<LayerProgram>,
    due_rows: Vec<u32>,
    due_dt_s: Vec<f32>,
}

/// `n` characters of the 64-joint humanoid on the demo graph, at `rate(i)`, walking, running
/// and jumping at varied speeds; [`LOD_FRAMES`] frames recorded after two settling seconds.
fn record_lod_frames(bound: &DemoArchetype, n: usize, rate: impl Fn(usize) -> u8) -> Vec<RecordedFrame> {
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype.clone());
    let handles: Vec<_> = (0..n).map(|_| crowd.spawn(kind).expect("archetype exists")).collect();
    let rates: Vec<u8> = (0..n).map(rate).collect();
    crowd.set_update_rate(&handles, &rates).expect("valid rates");
    let [speed, jump, wave] = ["speed", "jump", "wave"].map(|name| crowd.param(kind, name).expect("demo parameter"));
    let speeds: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.045).collect();
    crowd.set_float(speed, &handles, &speeds).expect("finite speeds");
    let waves: Vec<f32> = (0..n).map(|i| if i % 5 == 0 { 1.0 } else { 0.0 }).collect();
    crowd.set_float(wave, &handles, &waves).expect("finite weights");
    let mut frames = Vec::with_capacity(LOD_FRAMES);
    for frame in 0..120 + LOD_FRAMES {
        if frame % 40 == 0 {
            let jumpers: Vec<_> = handles.iter().copied().skip(frame / 40).step_by(7).collect();
            crowd.set_trigger(jump, &jumpers, false).expect("trigger");
        }
        crowd.update(1.0 / 60.0).expect("finite dt");
        if frame >= 120 {
            let due = crowd.due(kind).expect("archetype exists");
            frames.push(RecordedFrame {
                samples: crowd.samples(kind).expect("archetype exists").to_vec(),
                programs: crowd.programs(kind).expect("archetype exists").to_vec(),
                due_rows: due.rows.to_vec(),
                due_dt_s: due.dt_s.to_vec(),
            });
        }
    }
    frames
}

/// The recorded frames of one `frame_lod` case and the evaluator's state across them: each
/// [`job`](Self::job) is the next frame's, in a cycle.
struct LodFrames {
    frames: Vec<RecordedFrame>,
    context: EvalContext,
    output: Vec<f32>,
    clips_sampled: Vec<u32>,
    next: usize,
}

impl LodFrames {
    fn new(demo: &DemoCharacter, bound: &DemoArchetype, n: usize, rate: impl Fn(usize) -> u8) -> Self {
        let joints = demo.rig.num_joints();
        Self {
            frames: record_lod_frames(bound, n, rate),
            context: EvalContext::new(n, bound.layers.len(), joints),
            output: vec![0.0; n * joints * 16],
            clips_sampled: vec![0; n],
            next: 0,
        }
    }

    /// The next frame's job, and what the state step recorded for it.
    fn job<'a>(&'a mut self, demo: &'a DemoCharacter, bound: &'a DemoArchetype) -> (FrameJob<'a>, &'a RecordedFrame) {
        let frame = &self.frames[self.next % self.frames.len()];
        self.next += 1;
        let job = FrameJob {
            rig: &demo.rig,
            clips: &bound.clips,
            layers: &bound.layers,
            samples: &frame.samples,
            programs: &frame.programs,
            dt_s: 1.0 / 60.0,
            context: &mut self.context,
            layout: OutputLayout::Mat4,
            output: &mut self.output,
            clips_sampled: &mut self.clips_sampled,
            root_motion: &mut [],
        };
        (job, frame)
    }
}

fn demo_graph(demo: &DemoCharacter) -> DemoArchetype {
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("the demo graph loads"));
    demo.bind(graph).expect("the demo graph binds")
}

fn frame_lod(c: &mut Criterion) {
    let demo = DemoCharacter::humanoid_64();
    let bound = demo_graph(&demo);
    let n = 10_000;
    let mut group = c.benchmark_group("eval_cpu");
    group.throughput(Throughput::Elements(n as u64));
    for (name, lod) in [("all_rate_1", false), ("mix_1_2_4_8", true)] {
        // The mix of `support::LOD_MIX`: 10 % every frame, 20 % every 2nd, 30 % every 4th,
        // 40 % every 8th.
        let mut frames = LodFrames::new(&demo, &bound, n, |i| if lod { support::lod_mix_rate(i) } else { 1 });
        group.bench_function(BenchmarkId::new("frame_lod", format!("10k/{name}")), |bench| {
            bench.iter(|| {
                let (job, frame) = frames.job(&demo, &bound);
                if lod { job.run_due(DueRows { rows: &frame.due_rows, dt_s: &frame.due_dt_s }) } else { job.run() }
                    .expect("valid frame")
            });
        });
    }
    group.finish();
}

/// The frame of `frame_lod/10k/all_rate_1` (the demo graph's layers, transitions and masks,
/// sampling to skinning, every character due) on a one-thread rayon pool, that thread's CPU
/// time: the whole layered frame per character, as the `stage_*` benches measure its parts;
/// then the same frame with the procedural stage of `stage_procedural` (`run_procedural`), so
/// that the stage's share of the frame is measured in the frame itself.
fn layered_frame(c: &mut Criterion<ThreadCpuTime>) {
    let demo = DemoCharacter::humanoid_64();
    let bound = demo_graph(&demo);
    let n = 10_000;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let (setup, targets) = support::procedural_crowd(&demo.rig, n);
    let procedural = ProceduralInputs { setup: &setup, targets: &targets };
    let mut group = c.benchmark_group("eval_cpu");
    group.throughput(Throughput::Elements(n as u64));
    for (name, with_stage) in [("stage_layered_frame", false), ("stage_layered_frame_procedural", true)] {
        let mut frames = LodFrames::new(&demo, &bound, n, |_| 1);
        group.bench_function(BenchmarkId::new(name, "10k"), |bench| {
            bench.iter_custom(|iterations| {
                pool.install(|| {
                    let start = thread_cpu_ns();
                    for _ in 0..iterations {
                        let (job, _) = frames.job(&demo, &bound);
                        if with_stage { job.run_procedural(procedural) } else { job.run() }.expect("valid frame");
                    }
                    thread_cpu_ns() - start
                })
            });
        });
    }
    group.finish();
}

/// Root motion for a GPU evaluation, on a one-thread pool, that thread's CPU time: what a
/// caller of the GPU evaluator runs on the CPU each frame besides the state step. From the
/// programs (`root_motion_programs/10k`): the whole crowd's records expanded, every layer
/// (`ExpandJob`, the work `Crowd::programs` does), then `crowd_root_motion`; from the records
/// (`root_motion_records/10k`): `records_root_motion`, each base layer alone expanded, what the
/// viewer and throng-bevy run since they upload records.
fn root_motion(c: &mut Criterion<ThreadCpuTime>) {
    let n = 10_000;
    let support::DemoCrowd { bound, crowd, kind, .. } = support::demo_crowd(n);
    let (tables, trees) = bound.archetype.expansion();
    let frame = crowd.record_frame(kind).expect("the crowd's records");
    let layers = tables.num_layers();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let mut programs = vec![LayerProgram::default(); frame.records().len()];
    let mut samples = vec![ClipSample::default(); n * tables.samples_per_character()];
    let mut travel = vec![RootDelta::default(); n];
    let mut group = c.benchmark_group("eval_cpu");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(BenchmarkId::new("root_motion_programs", "10k"), |bench| {
        bench.iter_custom(|iterations| {
            pool.install(|| {
                let start = thread_cpu_ns();
                for _ in 0..iterations {
                    let (programs, samples) = (&mut programs, &mut samples);
                    ExpandJob::of_frame(tables, trees, &frame, programs, samples)
                        .run()
                        .expect("the step's records expand");
                    crowd_root_motion(&bound.clips, samples, programs, layers, &mut travel).expect("root motion");
                }
                thread_cpu_ns() - start
            })
        });
    });
    group.bench_function(BenchmarkId::new("root_motion_records", "10k"), |bench| {
        bench.iter_custom(|iterations| {
            pool.install(|| {
                let start = thread_cpu_ns();
                for _ in 0..iterations {
                    records_root_motion(&bound.clips, tables, trees, &frame, &mut travel).expect("root motion");
                }
                thread_cpu_ns() - start
            })
        });
    });
    group.finish();
}

criterion_group!(benches, eval_cpu, sample_compact, frame_transitions, frame_lod);
criterion_group! {
    name = stage_benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = stages, layered_frame, root_motion
}
criterion_main!(benches, stage_benches);
