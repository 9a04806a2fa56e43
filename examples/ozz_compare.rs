//! throng's half of the comparison with ozz-animation (`scripts/ozz-compare.sh`, BENCHMARKS.md
//! "ozz-animation, built and run beside throng"): the work of issue #23's table, timed the way
//! `benches/ozz/ozz_compare.cc` times ozz's, so that the two run in one sitting.
//!
//! ```text
//! ozz_compare --export FILE        the 64-joint humanoid's rig and its walk and run clips, for ozz
//! ozz_compare --check FILE         throng's skinning matrices of the first characters, for ozz to compare
//! ozz_compare [--characters N] [--frames F] [--threads T] [--work whole|sample_blend] [--compact]
//! ```
//!
//! The work, per character `i` of `N` and frame: walk sampled at `t_i`, run at `0.7 t_i`, blended
//! with weights `1 - w_i` and `w_i` (`t_i` and `w_i` spread over the crowd as `eval_cpu`'s
//! `two_clip_crowd` spreads them), every clock advancing 1/60 s a frame; then (`whole`)
//! local-to-model and skinning matrices, mat4 out, through [`EvalCrowdJob`] on a rayon pool of
//! `T` threads. `sample_blend` stops after the blend (one thread). Each frame is timed alone, by
//! the pool's threads' CPU time summed and divided by `T` (`CLOCK_THREAD_CPUTIME_ID`, read on
//! every worker before and after: other work on the machine does not count, nor does how it
//! shifts the work between the threads, and with the threads on cores of their own and the work
//! balanced it is the frame's wall time) and by wall time. It prints one line: the median and
//! least CPU time and the median wall time, microseconds per character over the frames.
//!
//! The export (all little-endian): `b"THRONGOZ"`, `u32` version 1, `u32` joints; per joint a
//! `u32` name length and its UTF-8 bytes, an `i32` parent (-1 for a root), the rest pose's
//! translation, rotation (x, y, z, w) and scale (10 `f32`) and the inverse bind matrix
//! (16 `f32`, column-major); `u32` clips; per clip its name as above, `f32` duration, `u32`
//! frames (both ends included, evenly spaced over the duration), and every frame's joints'
//! transforms (10 `f32` each, frame-major).

use std::time::Instant;

use throng::demo::DemoCharacter;
use throng::eval::EvalCrowdJob;
use throng::eval::sample::sample_blend;
use throng::program::{ClipSample, OutputLayout};
use throng::{Clip, Transform};

/// Frame time both sides advance every clock by.
const DT_S: f32 = 1.0 / 60.0;
/// Characters whose matrices `--check` writes.
const CHECKED: usize = 16;

struct Options {
    characters: usize,
    frames: usize,
    threads: usize,
    whole: bool,
    compact: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let demo = DemoCharacter::humanoid_64();
    if let [flag, file] = args.as_slice()
        && (flag == "--export" || flag == "--check")
    {
        let bytes = if flag == "--export" { export(&demo) } else { check(&demo) };
        std::fs::write(file, bytes).unwrap_or_else(|e| fail(&format!("cannot write {file}: {e}")));
        return;
    }
    let options = parse(&args);
    let t = time(&demo, &options);
    println!(
        "throng{} {} threads={} characters={} frames={} median_us={:.3} least_us={:.3} wall_median_us={:.3}",
        if options.compact { "-compact" } else { "" },
        if options.whole { "whole" } else { "sample_blend" },
        options.threads,
        options.characters,
        options.frames,
        t.median_us,
        t.least_us,
        t.wall_median_us,
    );
}

fn fail(message: &str) -> ! {
    eprintln!("ozz_compare: {message}");
    std::process::exit(2);
}

fn parse(args: &[String]) -> Options {
    let mut options = Options { characters: 10_000, frames: 60, threads: 1, whole: true, compact: false };
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).unwrap_or_else(|| fail(&format!("{} needs a value", args[i])));
        let number =
            |v: &String| v.parse::<usize>().ok().filter(|&n| n > 0).unwrap_or_else(|| fail(&format!("bad number {v}")));
        match args[i].as_str() {
            "--characters" => options.characters = number(value()),
            "--frames" => options.frames = number(value()),
            "--threads" => options.threads = number(value()),
            "--work" => {
                options.whole = match value().as_str() {
                    "whole" => true,
                    "sample_blend" => false,
                    other => fail(&format!("unknown work {other}")),
                };
            }
            "--compact" => {
                options.compact = true;
                i += 1;
                continue;
            }
            other => fail(&format!("unknown argument {other}")),
        }
        i += 2;
    }
    if !options.whole && options.threads != 1 {
        fail("--work sample_blend runs on one thread");
    }
    options
}

/// The demo's walk and run, in that order.
fn walk_run(demo: &DemoCharacter) -> [&Clip; 2] {
    ["walk", "run"].map(|name| &demo.clips[demo.clip_index(name).unwrap_or_else(|| fail(&format!("no {name} clip")))])
}

/// Character `i`'s samples of clips 0 (walk) and 1 (run) at frame 0.
fn character_samples(i: usize) -> [ClipSample; 2] {
    let time_s = (i as f32 * 0.618_034).fract() * 3.0;
    let weight = (i as f32 * 0.414_213_5).fract();
    [ClipSample::new(0, time_s, 1.0 - weight), ClipSample::new(1, time_s * 0.7, weight)]
}

fn put_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn put_floats(out: &mut Vec<u8>, floats: &[f32]) {
    for f in floats {
        out.extend_from_slice(&f.to_le_bytes());
    }
}

fn put_transform(out: &mut Vec<u8>, t: &Transform) {
    put_floats(out, &t.translation.to_array());
    put_floats(out, &t.rotation.to_array());
    put_floats(out, &t.scale.to_array());
}

fn export(demo: &DemoCharacter) -> Vec<u8> {
    let rig = &demo.rig;
    let mut out = b"THRONGOZ".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(rig.num_joints() as u32).to_le_bytes());
    for joint in 0..rig.num_joints() {
        put_name(&mut out, &rig.names()[joint]);
        let parent = rig.parent(joint).map_or(-1, |p| p as i32);
        out.extend_from_slice(&parent.to_le_bytes());
        put_transform(&mut out, &rig.rest_pose()[joint]);
        put_floats(&mut out, &rig.inverse_bind()[joint].to_cols_array());
    }
    let clips = walk_run(demo);
    out.extend_from_slice(&(clips.len() as u32).to_le_bytes());
    for clip in clips {
        put_name(&mut out, clip.name());
        put_floats(&mut out, &[clip.duration_s()]);
        out.extend_from_slice(&(clip.num_frames() as u32).to_le_bytes());
        for frame in 0..clip.num_frames() {
            for t in clip.frame(frame).iter() {
                put_transform(&mut out, t);
            }
        }
    }
    out
}

/// The first [`CHECKED`] characters' skinning matrices at frame 0, mat4, in the rig's joint
/// order, as `f32` little-endian: ozz's side compares its own with them.
fn check(demo: &DemoCharacter) -> Vec<u8> {
    let clips: Vec<Clip> = walk_run(demo).into_iter().cloned().collect();
    let samples: Vec<ClipSample> = (0..CHECKED).flat_map(character_samples).collect();
    let ranges: Vec<_> = (0..CHECKED as u32).map(|i| 2 * i..2 * i + 2).collect();
    let mut output = vec![0.0f32; CHECKED * demo.rig.num_joints() * 16];
    run_job(demo, &clips, &samples, &ranges, &mut output);
    let mut out = Vec::with_capacity(output.len() * 4);
    put_floats(&mut out, &output);
    out
}

fn run_job(
    demo: &DemoCharacter,
    clips: &[Clip],
    samples: &[ClipSample],
    ranges: &[std::ops::Range<u32>],
    output: &mut [f32],
) {
    EvalCrowdJob { rig: &demo.rig, clips, samples, sample_ranges: ranges, layout: OutputLayout::Mat4, output }
        .run()
        .unwrap_or_else(|e| fail(&format!("job refused: {e}")));
}

/// The calling thread's CPU time so far, nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write; this clock exists on every Linux.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "CLOCK_THREAD_CPUTIME_ID is readable");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Per character over the frames, microseconds: the median and least of the threads' CPU time
/// over the number of threads, and the median wall time.
fn time(demo: &DemoCharacter, options: &Options) -> Timing {
    let mut clips: Vec<Clip> = walk_run(demo).into_iter().cloned().collect();
    if options.compact {
        for clip in &mut clips {
            *clip = clip
                .compress(&demo.rig, throng::clip::compact::DEFAULT_MAX_ERROR_M)
                .unwrap_or_else(|e| fail(&format!("cannot compress {}: {e}", clip.name())))
                .0;
        }
    }
    let n = options.characters;
    let joints = demo.rig.num_joints();
    let mut samples: Vec<ClipSample> = (0..n).flat_map(character_samples).collect();
    let ranges: Vec<_> = (0..n as u32).map(|i| 2 * i..2 * i + 2).collect();
    let mut output = vec![0.0f32; if options.whole { n * joints * 16 } else { 0 }];
    let mut pose = vec![Transform::IDENTITY; joints];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .unwrap_or_else(|e| fail(&format!("no thread pool: {e}")));
    let (mut cpu, mut wall) = (Vec::with_capacity(options.frames), Vec::with_capacity(options.frames));
    // One frame untimed first, so that the clips and output are in memory as in a game's frame.
    for frame in 0..=options.frames {
        let before = pool.broadcast(|_| thread_cpu_ns());
        let start = Instant::now();
        pool.install(|| {
            if options.whole {
                run_job(demo, &clips, &samples, &ranges, &mut output);
            } else {
                for character in samples.chunks_exact(2) {
                    sample_blend(&clips, character, demo.rig.rest_pose(), &mut pose);
                }
                std::hint::black_box(&pose);
            }
        });
        let wall_ns = start.elapsed().as_nanos() as u64;
        let after = pool.broadcast(|_| thread_cpu_ns());
        let threads_ns: u64 = after.iter().zip(&before).map(|(a, b)| a - b).sum();
        if frame > 0 {
            cpu.push(threads_ns as f64 / options.threads as f64 / 1e3 / n as f64);
            wall.push(wall_ns as f64 / 1e3 / n as f64);
        }
        for s in &mut samples {
            s.time_s += DT_S;
        }
    }
    std::hint::black_box(&output);
    cpu.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    Timing { median_us: cpu[cpu.len() / 2], least_us: cpu[0], wall_median_us: wall[wall.len() / 2] }
}

/// What [`time`] measured, microseconds per character.
struct Timing {
    median_us: f64,
    least_us: f64,
    wall_median_us: f64,
}
