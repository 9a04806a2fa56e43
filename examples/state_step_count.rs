//! A fixed number of `Crowd::update`s of `state_step/N`'s locomotion crowd, for counting
//! instructions (`perf stat -e instructions:u`), which a shared machine's load does not change
//! as it changes time. The setup's cost cancels in the difference of two counts:
//! `(I(K2) - I(K1)) / (K2 - K1)` is one update's instructions. BENCHMARKS.md "Directing a crowd"
//! gives the commands.
//!
//! `cargo run --release --example state_step_count -- CHARACTERS UPDATES [directed]`, with
//! `RAYON_NUM_THREADS=1` so that no idle worker's spinning is counted.
//!
//! With `--expand`, each update is followed by `Crowd::programs`, which expands the update's state
//! records into pose programs and samples (`program::expand_character`, what a CPU evaluation
//! adds to the step since the step writes records); in a checkout whose step writes the samples
//! itself it only reads them, so the two counts compare the same work.
//!
//! With `--cpu-time REPS` last, after that untimed run it times `REPS` more runs of `UPDATES`
//! updates and prints the least and the median CPU time per update, summed over the process's
//! threads as the scheduler counts it (`/proc/self/task/*/schedstat`): time stolen by other work
//! on a shared machine is not in it, and the least of many runs is the run others disturbed
//! least. It reads only `std`, so the file builds in an older checkout for an A/B (without the
//! `directed` case where that checkout's bench support lacks it; BENCHMARKS.md).

#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(Ok(n)), Some(Ok(updates))) =
        (args.first().map(|a| a.parse::<usize>()), args.get(1).map(|a| a.parse::<u32>()))
    else {
        eprintln!("usage: state_step_count CHARACTERS UPDATES [directed] [--expand] [--cpu-time REPS]");
        return ExitCode::FAILURE;
    };
    let cpu_time_reps = match args.iter().position(|a| a == "--cpu-time") {
        None => None,
        Some(at) => match args.get(at + 1).map(|r| r.parse::<usize>()) {
            Some(Ok(reps)) if reps > 0 => Some(reps),
            _ => {
                eprintln!("--cpu-time takes a number of runs above 0");
                return ExitCode::FAILURE;
            }
        },
    };
    let expand = args.iter().any(|a| a == "--expand");
    let (mut crowd, kind) = match args.get(2).map(String::as_str).filter(|a| !a.starts_with("--")) {
        None => support::locomotion_crowd(n),
        Some("directed") => support::directed_crowd(n),
        Some(other) => {
            eprintln!("unknown case {other:?}: expected `directed` or nothing");
            return ExitCode::FAILURE;
        }
    };
    let run = |crowd: &mut throng::state::Crowd| -> Result<(), ExitCode> {
        for _ in 0..updates {
            crowd.update(black_box(1.0 / 60.0)).map_err(|e| {
                eprintln!("update failed: {e}");
                ExitCode::FAILURE
            })?;
            if expand {
                black_box(crowd.programs(kind).map(|p| p.len()).unwrap_or(0));
            }
        }
        Ok(())
    };
    if let Err(code) = run(&mut crowd) {
        return code;
    }
    if let Some(reps) = cpu_time_reps {
        let mut per_update = Vec::with_capacity(reps);
        for _ in 0..reps {
            let before = cpu_time_ns();
            if let Err(code) = run(&mut crowd) {
                return code;
            }
            let (Some(before), Some(after)) = (before, cpu_time_ns()) else {
                eprintln!("no /proc/self/task/*/schedstat to read the CPU time from");
                return ExitCode::FAILURE;
            };
            per_update.push((after - before) as f64 / f64::from(updates.max(1)) / 1e6);
        }
        per_update.sort_by(f64::total_cmp);
        println!("least {:.3} ms, median {:.3} ms per update", per_update[0], per_update[reps / 2]);
    }
    black_box(crowd.programs(kind).map(|p| p.len()).unwrap_or(0));
    ExitCode::SUCCESS
}

/// The CPU time of every thread of the process so far, nanoseconds (the scheduler's first
/// `schedstat` field); `None` where `/proc` has no such file.
fn cpu_time_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}
