//! `state_step/N`: one `Crowd::update` of N characters on the locomotion graph (idle/move
//! 1D/jump base layer and an upper-body wave layer), reported per character;
//! `state_step/N_events`: the same with two animation events on every clip;
//! `state_step/N_directed`: the same with a looping one-shot on the upper-body slot and a time
//! scale of 0.8 on a tenth of the crowd.

mod support;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn state_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_step");
    for (label, n) in [("10k", 10_000), ("100k", 100_000), ("1M", 1_000_000)] {
        let (mut crowd, kind) = support::locomotion_crowd(n);
        if let Ok(bytes) = crowd.bytes_per_character(kind) {
            eprintln!("state_step/{label}: {bytes} bytes of CPU state per character");
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(label, |b| {
            b.iter(|| {
                crowd.update(black_box(1.0 / 60.0)).expect("finite dt");
            });
        });
        black_box(crowd.programs(kind).map(|p| p.len()).unwrap_or(0));
    }
    for (label, n) in [("10k_events", 10_000), ("100k_events", 100_000)] {
        let (mut crowd, kind) = support::locomotion_crowd_with_events(n, true);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(label, |b| {
            b.iter(|| {
                crowd.update(black_box(1.0 / 60.0)).expect("finite dt");
            });
        });
        black_box(crowd.events(kind).map(|e| e.len()).unwrap_or(0));
    }
    for (label, n) in [("10k_directed", 10_000), ("100k_directed", 100_000)] {
        let (mut crowd, kind) = support::directed_crowd(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(label, |b| {
            b.iter(|| {
                crowd.update(black_box(1.0 / 60.0)).expect("finite dt");
            });
        });
        black_box(crowd.programs(kind).map(|p| p.len()).unwrap_or(0));
    }
    group.finish();
}

criterion_group!(benches, state_step);
criterion_main!(benches);
