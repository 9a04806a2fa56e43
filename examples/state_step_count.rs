//! A fixed number of `Crowd::update`s of `state_step/N`'s locomotion crowd, for counting
//! instructions (`perf stat -e instructions:u`), which a shared machine's load does not change
//! as it changes time. The setup's cost cancels in the difference of two counts:
//! `(I(K2) - I(K1)) / (K2 - K1)` is one update's instructions. BENCHMARKS.md "Directing a crowd"
//! gives the commands.
//!
//! `cargo run --release --example state_step_count -- CHARACTERS UPDATES [directed]`, with
//! `RAYON_NUM_THREADS=1` so that no idle worker's spinning is counted.

#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(Ok(n)), Some(Ok(updates))) =
        (args.first().map(|a| a.parse::<usize>()), args.get(1).map(|a| a.parse::<u32>()))
    else {
        eprintln!("usage: state_step_count CHARACTERS UPDATES [directed]");
        return ExitCode::FAILURE;
    };
    let (mut crowd, kind) = match args.get(2).map(String::as_str) {
        None => support::locomotion_crowd(n),
        Some("directed") => support::directed_crowd(n),
        Some(other) => {
            eprintln!("unknown case {other:?}: expected `directed` or nothing");
            return ExitCode::FAILURE;
        }
    };
    for _ in 0..updates {
        if let Err(e) = crowd.update(black_box(1.0 / 60.0)) {
            eprintln!("update failed: {e}");
            return ExitCode::FAILURE;
        }
    }
    black_box(crowd.programs(kind).map(|p| p.len()).unwrap_or(0));
    ExitCode::SUCCESS
}
