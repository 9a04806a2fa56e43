//! The prepared device call, dry-run on whatever adapter this machine has (lavapipe in CI) at
//! tiny sizes: `scripts/gpu-bench.sh` with prebuilt examples must check every kernel variant
//! against variant 0, the default variant's measurement specialisations against it on the
//! layered frame without switches, and the layered frame with the procedural stage against the
//! CPU, time every variant on both frames (and the specialisations on the steady one) and the
//! layered frame with and without the stage, leaving each row in
//! its results file, and run the records frame of the viewer's crowd (`bench_gpu --records`),
//! so that the one short run on a lent GPU is known to work before it happens.

mod support;

#[path = "support/gpu.rs"]
mod gpu_support;

use std::process::Command;

use support::example_binary;
use support::files::TempDir;
use throng::gpu::{FrameKernel, Hierarchy, Specialisation};
use throng::program::{ClipSample, LayerProgram, LayerRecord, ShotRecord};

#[test]
fn dry_run_leaves_every_variants_rows() {
    if gpu_support::gpu().is_none() {
        return;
    }
    // The examples the script runs, up to date, in the folder it is told to take them from.
    let bin = example_binary("gpu_variants");
    example_binary("gpu_stats");
    example_binary("bench_gpu");
    let dir = TempDir::new("gpu_bench_script");
    let out = dir.path().join("results");
    let status = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gpu-bench.sh"))
        .arg(&out)
        .env("THRONG_BENCH_BIN", bin.parent().expect("examples live in a folder"))
        .env("THRONG_BENCH_VALIDATE", "40")
        .env("THRONG_BENCH_SIZES", "30,70")
        .env("THRONG_BENCH_FRAMES", "2")
        .env("THRONG_BENCH_ROUNDS", "2")
        .env("THRONG_BENCH_TABLES", "0")
        .status()
        .expect("bash runs the script");
    assert!(status.success(), "scripts/gpu-bench.sh failed: {status}");
    let results = std::fs::read_to_string(out.join("gpu-bench.tsv")).expect("the results file");
    let rows: Vec<Vec<&str>> =
        results.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').collect()).collect();
    // Every variant on both frames, and on the layered one the default variant with its
    // displayed poses stored and with every character in one kernel; on the layered frame
    // without switches, the default variant as built and as each specialisation (checked
    // against it, then timed).
    let kernels: Vec<String> = FrameKernel::ALL.iter().map(|k| k.name().to_owned()).collect();
    let default = FrameKernel::default().name();
    let with_stored: Vec<String> = kernels
        .iter()
        .cloned()
        .chain([Specialisation::Stored, Specialisation::Whole].map(|s| format!("{default}+{}", s.name())))
        .collect();
    // The default crowd as built: its kernel composing the default hierarchy.
    let built = match Hierarchy::default() {
        Hierarchy::Walks => default.to_owned(),
        hierarchy => format!("{default}+{}", hierarchy.name()),
    };
    let specialised: Vec<String> = Specialisation::ALL
        .iter()
        .map(|s| if *s == Specialisation::Production { built.clone() } else { format!("{default}+{}", s.name()) })
        .collect();
    for (frame, variants) in [("two-clip", &kernels), ("layered", &with_stored), ("layered-steady", &specialised)] {
        for variant in variants {
            let checked = rows_of(&rows, "validate", frame, variant);
            assert_eq!(checked.len(), 1, "{frame} {variant}: one check\n{results}");
            assert_eq!((checked[0][3], checked[0][5]), ("40", "pass"), "{results}");
            let timed = rows_of(&rows, "time", frame, variant);
            let sizes: Vec<&str> = timed.iter().map(|r| r[3]).collect();
            assert_eq!(sizes, ["30", "70"], "{frame} {variant}: a row per size\n{results}");
            for row in timed {
                assert_eq!(row.len(), 12, "{row:?}");
                let median: f64 = row[5].parse().expect("a median in ms");
                let min: f64 = row[6].parse().expect("a minimum in ms");
                // Four frames timed (two rounds of two), each taking some time.
                assert_eq!(row[7], "4", "{row:?}");
                assert!(min > 0.0 && min <= median, "{row:?}");
                let model: [f64; 2] = [row[8].parse().expect("bytes"), row[10].parse().expect("instructions")];
                assert!(model.iter().all(|&v| v > 0.0), "{row:?}");
            }
        }
    }
    // The layered frame with the procedural stage: checked against the CPU, then per size the
    // frame with and without it and, where the adapter has timestamp queries, the stage's pass
    // alone and its share.
    let checked: Vec<&Vec<&str>> = rows.iter().filter(|r| r[..2] == ["validate", "layered+procedural"]).collect();
    assert_eq!(checked.len(), 1, "one check of the procedural frame\n{results}");
    assert_eq!((checked[0][3], checked[0][5]), ("40", "pass"), "{results}");
    let timestamps = results.contains("timing: timestamp queries");
    let procedural: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "procedural").collect();
    let sizes: Vec<&str> = procedural.iter().map(|r| r[2]).collect();
    assert_eq!(sizes, ["30", "70"], "a procedural row per size\n{results}");
    for row in procedural {
        assert_eq!(row.len(), 11, "{row:?}");
        let with: f64 = row[4].parse().expect("the frame with the stage, ms");
        let without: f64 = row[5].parse().expect("the frame without it, ms");
        let model: f64 = row[9].parse().expect("the stage's modelled instructions");
        assert!(with > 0.0 && without > 0.0 && model > 0.0, "{row:?}");
        if timestamps {
            let stage: f64 = row[6].parse().expect("the stage alone, ms");
            let share: f64 = row[8].parse().expect("its share");
            assert!(stage > 0.0 && share > 0.0 && share.is_finite(), "{row:?}");
        }
    }
    assert!(out.join("gpu-stats.txt").is_file(), "the driver statistics' file");
    check_records(&std::fs::read_to_string(out.join("records.txt")).expect("the records frame's file"), timestamps);
}

/// `records.txt` (`bench_gpu --records` at 30 and 70 characters): a row per size with the
/// expand pass's and the frame's GPU time (with timestamp queries), the records uploaded per
/// character (records, shot records and blend inputs of the demo graph, at most all of them),
/// the share of characters whose records changed, what `set_frame` would have sent (its
/// programs and sample slots), and the device's expansion checked against the CPU's.
fn check_records(results: &str, timestamps: bool) {
    let demo = throng::demo::DemoCharacter::humanoid();
    let graph = std::sync::Arc::new(throng::graph::CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap());
    let bound = demo.bind(graph).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    let layers = tables.num_layers();
    // Everything sent: each record and shot record with its index, the inputs with their row;
    // the header's share is added per row (its size).
    let entries = layers * (8 + size_of::<LayerRecord>() + size_of::<ShotRecord>()) + 4 + trees.num_inputs() * 4;
    let set_frame = layers * size_of::<LayerProgram>() + tables.samples_per_character() * size_of::<ClipSample>();
    let rows: Vec<Vec<&str>> = results
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|r| r.len() == 9 && r[0].parse::<usize>().is_ok())
        .collect();
    let sizes: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(sizes, ["30", "70"], "a records row per size\n{results}");
    for row in rows {
        let number = |k: usize| -> f64 { row[k].parse().unwrap_or_else(|_| panic!("column {k} of {row:?}")) };
        if timestamps {
            assert!(number(1) > 0.0 && number(2) > 0.0 && number(3) >= number(2), "{row:?}");
        }
        let (records, changed, sent) = (number(4), number(5), number(6));
        let records_max = entries as f64 + (4 * throng::gpu::UPLOAD_HEADER_WORDS) as f64 / number(0);
        assert!(records > 0.0 && records <= records_max, "{row:?}: records are at most {records_max} B");
        assert!((0.0..=100.0).contains(&changed), "{row:?}: a share of the characters");
        assert!((sent - set_frame as f64).abs() < 0.05, "{row:?}: set_frame sends {set_frame} B a character");
        assert!(number(7) > 0.0, "{row:?}: the state step's time");
        assert_eq!(row[8], "pass", "{row:?}: the device's expansion against the CPU's\n{results}");
    }
}

/// The results' rows of one kind (`validate`, `time`) for one frame and variant.
fn rows_of<'a>(rows: &'a [Vec<&'a str>], kind: &str, frame: &str, variant: &str) -> Vec<&'a [&'a str]> {
    rows.iter().filter(|r| r.len() > 2 && r[0] == kind && r[1] == frame && r[2] == variant).map(Vec::as_slice).collect()
}
