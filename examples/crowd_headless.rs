//! A crowd of the built-in character evaluated on the CPU, headless: each character walks or
//! runs at its own speed, walk and run blended by a 1D blend space with phase sync, every
//! frame sampled, blended and skinned. Prints what it did and how long it took.
//!
//! `cargo run --release --example crowd_headless -- --characters 10000 --frames 120`

use std::ops::Range;
use std::time::Instant;

use glam::Vec2;
use throng::blend_space::BlendSpace;
use throng::demo::DemoCharacter;
use throng::eval::skinning::read_matrix;
use throng::eval::{EvalCrowdJob, OutputLayout};
use throng::program::ClipSample;

struct Args {
    characters: usize,
    frames: usize,
    joints64: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { characters: 10_000, frames: 120, joints64: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            it.next().and_then(|v| v.parse().ok()).ok_or(format!("{name} needs a whole number"))
        };
        match flag.as_str() {
            "--characters" => args.characters = number("--characters")?,
            "--frames" => args.frames = number("--frames")?,
            "--64" => args.joints64 = true,
            other => return Err(format!("unknown argument {other:?}; use --characters N, --frames N, --64")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("crowd_headless: {message}");
            std::process::exit(2);
        }
    };
    let demo = if args.joints64 { DemoCharacter::humanoid_64() } else { DemoCharacter::humanoid() };
    let walk = demo.clip_index("walk").expect("the demo has a walk clip");
    let run = demo.clip_index("run").expect("the demo has a run clip");
    let walk_speed = DemoCharacter::authored_speed_mps("walk").unwrap_or(1.5);
    let run_speed = DemoCharacter::authored_speed_mps("run").unwrap_or(4.0);
    let durations = [demo.clips[walk].duration_s(), demo.clips[run].duration_s()];
    let locomotion = BlendSpace::one_d(vec![walk_speed, run_speed]).expect("two distinct speeds");

    let n = args.characters;
    let joints = demo.rig.num_joints();
    let layout = OutputLayout::Mat4;
    // Each character's speed, spread between walking and running; phases start spread too.
    let speed_mps: Vec<f32> = (0..n).map(|i| walk_speed + (run_speed - walk_speed) * (i as f32 * 0.618_034).fract()).collect();
    let mut phase: Vec<f32> = (0..n).map(|i| (i as f32 * 0.414_213_5).fract()).collect();
    let mut samples = vec![ClipSample::default(); n * 2];
    let ranges: Vec<Range<u32>> = (0..n as u32).map(|i| 2 * i..2 * i + 2).collect();
    let mut output = vec![0.0f32; n * joints * layout.floats_per_joint()];

    let dt_s = 1.0 / 60.0;
    let mut eval_s = 0.0f64;
    let mut weights = [0.0f32; 2];
    for _ in 0..args.frames {
        for i in 0..n {
            locomotion.weights(Vec2::new(speed_mps[i], 0.0), &mut weights);
            // Phase sync: both clips share one normalised phase.
            phase[i] = (phase[i] + dt_s * (weights[0] / durations[0] + weights[1] / durations[1])).fract();
            samples[2 * i] = ClipSample::new(walk as u32, phase[i] * durations[0], weights[0]);
            samples[2 * i + 1] = ClipSample::new(run as u32, phase[i] * durations[1], weights[1]);
        }
        let start = Instant::now();
        EvalCrowdJob { rig: &demo.rig, clips: &demo.clips, samples: &samples, sample_ranges: &ranges, layout, output: &mut output }
            .run()
            .expect("the demo crowd is a valid job");
        eval_s += start.elapsed().as_secs_f64();
    }

    let finite = output.iter().all(|v| v.is_finite());
    let pelvis = demo.rig.find_joint("pelvis").unwrap_or(1);
    let stride = layout.floats_per_joint();
    let m = read_matrix(layout, &output[pelvis * stride..]);
    let per_frame_ms = eval_s * 1e3 / args.frames.max(1) as f64;
    println!("throng crowd_headless: {n} characters × {joints} joints, {} frames at 60 Hz, CPU evaluation on {} threads", args.frames, rayon::current_num_threads());
    println!("  clips sampled per frame: {}", n * 2);
    println!("  evaluation: {per_frame_ms:.3} ms per frame, {:.0} ns per character", per_frame_ms * 1e6 / n.max(1) as f64);
    println!("  output: {} MiB of skinning matrices, all finite: {finite}", output.len() * 4 / (1 << 20));
    println!("  character 0 at {:.2} m/s, phase {:.3}, pelvis skinning translation {:.3}", speed_mps.first().copied().unwrap_or(0.0), phase.first().copied().unwrap_or(0.0), m.w_axis.truncate());
    if !finite {
        std::process::exit(1);
    }
}
