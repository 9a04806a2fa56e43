//! A crowd of the built-in character on the demo graph, stepped and evaluated on the CPU,
//! headless: each character walks or runs at its own speed, some jump, some wave, some lean.
//! Prints what the crowd did and how long each part of the frame took.
//!
//! `cargo run --release --example crowd_headless -- --characters 10000 --frames 120 [--64]`

use std::sync::Arc;
use std::time::Instant;

use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::root_motion::RootDelta;
use throng::graph::CompiledGraph;
use throng::program::OutputLayout;
use throng::runtime::CrowdRuntime;

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
    if let Err(e) = run(&args) {
        eprintln!("crowd_headless: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let demo = if args.joints64 { DemoCharacter::humanoid_64() } else { DemoCharacter::humanoid() };
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?);
    let bound = demo.bind(graph.clone())?;
    let joints = demo.rig.num_joints();
    let mut crowd = CrowdRuntime::new();
    let kind = crowd.add_archetype(bound.archetype, demo.rig, bound.clips, bound.layers)?;
    let n = args.characters;
    let handles = crowd.spawn_many(kind, n)?;

    // Speeds spread from standing to running; every seventh character jumps every two seconds,
    // every fifth waves, every third leans.
    let speed = crowd.param(kind, "speed")?;
    let speeds: Vec<f32> = (0..n).map(|i| 4.0 * (i as f32 * 0.618_034).fract()).collect();
    crowd.set_float(speed, &handles, &speeds)?;
    let wave = crowd.param(kind, "wave")?;
    let wavers: Vec<_> = handles.iter().copied().step_by(5).collect();
    crowd.set_float(wave, &wavers, &vec![1.0; wavers.len()])?;
    let lean = crowd.param(kind, "lean")?;
    let leaners: Vec<_> = handles.iter().copied().step_by(3).collect();
    crowd.set_float(lean, &leaners, &vec![0.7; leaners.len()])?;
    let jump = crowd.param(kind, "jump")?;
    let jumpers: Vec<_> = handles.iter().copied().step_by(7).collect();

    let layout = OutputLayout::Mat4;
    let mut output = vec![0.0f32; crowd.floats_needed(kind, layout)?];
    let mut root_motion = vec![RootDelta::default(); n];
    let mut travelled = vec![0.0f32; n];
    let (mut step_s, mut eval_s, mut sampled_total) = (0.0f64, 0.0f64, 0u64);
    let dt_s = 1.0 / 60.0;
    for frame in 0..args.frames {
        if frame % 120 == 30 {
            crowd.set_trigger(jump, &jumpers, false)?;
        }
        let start = Instant::now();
        crowd.update(dt_s)?;
        step_s += start.elapsed().as_secs_f64();
        let start = Instant::now();
        let stats = crowd.evaluate(kind, layout, &mut output, &mut root_motion)?;
        eval_s += start.elapsed().as_secs_f64();
        sampled_total += stats.clips_sampled;
        for (t, r) in travelled.iter_mut().zip(&root_motion) {
            *t += r.translation.length();
        }
    }

    // Where the crowd ended up: how many characters are in each base-layer state.
    let mut counts = vec![0usize; graph.states().len()];
    for &h in &handles {
        counts[crowd.readback(h, 0)?.active_state] += 1;
    }
    let frames = args.frames.max(1) as f64;
    let finite = output.iter().all(|v| v.is_finite());
    println!(
        "throng crowd_headless: {n} characters × {joints} joints, {} frames at 60 Hz, CPU on {} threads",
        args.frames,
        rayon::current_num_threads()
    );
    println!(
        "  state step: {:.3} ms per frame ({:.0} ns per character)",
        step_s * 1e3 / frames,
        step_s * 1e9 / frames / n.max(1) as f64
    );
    println!(
        "  pose evaluation: {:.3} ms per frame ({:.0} ns per character)",
        eval_s * 1e3 / frames,
        eval_s * 1e9 / frames / n.max(1) as f64
    );
    println!("  clips sampled: {:.2} per character per frame", sampled_total as f64 / frames / n.max(1) as f64);
    let states: Vec<String> = counts
        .iter()
        .enumerate()
        .filter(|&(s, &c)| c > 0 && graph.states()[s].layer == 0)
        .map(|(s, c)| format!("{} {c}", graph.states()[s].name))
        .collect();
    println!("  base layer now: {}", states.join(", "));
    println!(
        "  root motion: mean {:.2} m travelled, fastest {:.2} m",
        travelled.iter().sum::<f32>() / n.max(1) as f32,
        travelled.iter().copied().fold(0.0, f32::max)
    );
    println!("  output: {} MiB of skinning matrices, all finite: {finite}", output.len() * 4 / (1 << 20));
    if finite { Ok(()) } else { Err("a matrix is not finite".into()) }
}
