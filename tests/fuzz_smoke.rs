//! The fuzzers' stable smoke run, for every `cargo test`: each committed corpus file in
//! `fuzz/corpus/<target>/` goes through its loader, then a bounded property test feeds each
//! loader random bytes and mutated corpus files. Loaders may refuse input but never panic.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[path = "../fuzz/sandbox.rs"]
mod sandbox;

use proptest::prelude::*;
use throng::graph::CompiledGraph;
use throng::import::bvh::{BvhOptions, PositionChannels, parse_bvh};
use throng::import::gltf::{GltfOptions, load_gltf_from_slice};
use throng::trace::run_script;

/// A fuzz target's name and the loader it drives, as the target in `fuzz/fuzz_targets/` does.
/// A loader under test: reads bytes, may refuse them, must not panic.
type Loader = fn(&[u8]);
/// A corpus file's path and bytes.
type CorpusFile = (PathBuf, Vec<u8>);

const TARGETS: [(&str, Loader); 6] = [
    ("graph_json", |b| {
        let _ = CompiledGraph::from_json(&String::from_utf8_lossy(b));
    }),
    ("trace_script", |b| {
        let _ = run_script(&String::from_utf8_lossy(b));
    }),
    ("gltf_import", |b| {
        let _ = load_gltf_from_slice(b, None, &GltfOptions::default());
    }),
    ("bvh_import", |b| {
        let text = String::from_utf8_lossy(b);
        let _ = parse_bvh(&text, &BvhOptions::default());
        let _ = parse_bvh(&text, &BvhOptions { position_channels: PositionChannels::Add, ..BvhOptions::default() });
    }),
    ("graph_value", |b| {
        let _ = throng::graph::fuzzing::load(b);
    }),
    ("gltf_files", |b| {
        let _ = load_gltf_files(b);
    }),
];

/// What the `gltf_files` target does: a glTF whose URIs name files, loaded from the sandbox's
/// asset folder with its extra root (`fuzz/sandbox.rs`).
fn load_gltf_files(bytes: &[u8]) -> Result<throng::import::gltf::GltfAsset, throng::import::gltf::GltfError> {
    let (asset, extra) = sandbox::roots();
    load_gltf_from_slice(
        bytes,
        Some(asset),
        &GltfOptions { extra_roots: vec![extra.clone()], ..GltfOptions::default() },
    )
}

/// Every file of a target's committed corpus, sorted by name; read once per test binary.
fn corpus(target: &str) -> &'static [CorpusFile] {
    static CORPORA: OnceLock<Vec<Vec<CorpusFile>>> = OnceLock::new();
    let corpora = CORPORA.get_or_init(|| TARGETS.iter().map(|(t, _)| read_corpus(t)).collect());
    let i = TARGETS.iter().position(|(t, _)| *t == target).unwrap_or_else(|| panic!("no fuzz target {target}"));
    &corpora[i]
}

fn read_corpus(target: &str) -> Vec<CorpusFile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<CorpusFile> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the committed corpus {} is missing: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_corpus_file_is_loaded_or_refused_without_a_panic() {
    let mut panicked = Vec::new();
    for (target, load) in TARGETS {
        let files = corpus(target);
        assert!(files.len() >= 2, "{target}: the corpus holds {} files", files.len());
        for (path, bytes) in files {
            if catch_unwind(AssertUnwindSafe(|| load(bytes))).is_err() {
                panicked.push(format!("{target}: {}", path.display()));
            }
        }
    }
    assert!(panicked.is_empty(), "loaders panicked on:\n  {}", panicked.join("\n  "));
}

/// The seeds (real files from the repository and `../shared/data`) load: the corpus gives the
/// fuzzers inputs that reach past the parsers into validation and import.
#[test]
fn the_seed_files_of_each_corpus_load() {
    let seeds = |target: &str| -> Vec<CorpusFile> {
        corpus(target)
            .iter()
            .filter(|(p, _)| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed_")))
            .cloned()
            .collect()
    };
    for (path, bytes) in seeds("graph_json") {
        CompiledGraph::from_json(std::str::from_utf8(&bytes).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, bytes) in seeds("trace_script") {
        run_script(std::str::from_utf8(&bytes).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, bytes) in seeds("gltf_import") {
        load_gltf_from_slice(&bytes, None, &GltfOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, bytes) in seeds("gltf_files") {
        load_gltf_files(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, bytes) in seeds("bvh_import") {
        parse_bvh(std::str::from_utf8(&bytes).unwrap(), &BvhOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (path, bytes) in seeds("graph_value") {
        throng::graph::fuzzing::load(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Delete {
        at: usize,
        len: usize,
    },
    Duplicate {
        at: usize,
        len: usize,
    },
    Truncate {
        at: usize,
    },
    /// Replaces a digit run with an extreme number, to reach limits and overflow paths.
    Number {
        at: usize,
        which: usize,
    },
}

const NUMBERS: [&str; 8] =
    ["0", "-1", "1e39", "-0", "4294967296", "18446744073709551616", "1e-45", "99999999999999999999"];

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let n = bytes.len().max(1);
    match *edit {
        Edit::Flip { at, bit } => {
            if let Some(b) = bytes.get_mut(at % n) {
                *b ^= 1 << (bit % 8);
            }
        }
        Edit::Set { at, byte } => {
            if let Some(b) = bytes.get_mut(at % n) {
                *b = byte;
            }
        }
        Edit::Delete { at, len } => {
            let start = (at % n).min(bytes.len());
            let end = (start + len).min(bytes.len());
            bytes.drain(start..end);
        }
        Edit::Duplicate { at, len } => {
            let start = (at % n).min(bytes.len());
            let end = (start + len).min(bytes.len());
            let copy = bytes[start..end].to_vec();
            bytes.splice(end..end, copy);
        }
        Edit::Truncate { at } => bytes.truncate(at % n),
        Edit::Number { at, which } => {
            let Some(start) = (at % n..bytes.len()).find(|&i| bytes[i].is_ascii_digit()) else { return };
            let end =
                (start..bytes.len()).find(|&i| !bytes[i].is_ascii_digit() && bytes[i] != b'.').unwrap_or(bytes.len());
            bytes.splice(start..end, NUMBERS[which % NUMBERS.len()].bytes());
        }
    }
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Edit::Set { at, byte }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Edit::Delete { at, len }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Edit::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Edit::Truncate { at }),
        (any::<usize>(), any::<usize>()).prop_map(|(at, which)| Edit::Number { at, which }),
    ]
}

/// Feeds `load` random bytes or a corpus file with a few edits; a panic fails the case.
fn never_panics(
    target: &'static str,
    load: Loader,
    seed: usize,
    edits: &[Edit],
    random: &[u8],
) -> Result<(), TestCaseError> {
    let files = corpus(target);
    let mut bytes = if seed.is_multiple_of(4) { random.to_vec() } else { files[seed % files.len()].1.clone() };
    for e in edits {
        apply(&mut bytes, e);
    }
    let result = catch_unwind(AssertUnwindSafe(|| load(&bytes)));
    prop_assert!(result.is_ok(), "{target} panicked on {:?}", String::from_utf8_lossy(&bytes));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn graph_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[0].0, TARGETS[0].1, seed, &edits, &random)?;
    }

    #[test]
    fn trace_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[1].0, TARGETS[1].1, seed, &edits, &random)?;
    }

    #[test]
    fn gltf_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[2].0, TARGETS[2].1, seed, &edits, &random)?;
    }

    #[test]
    fn bvh_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[3].0, TARGETS[3].1, seed, &edits, &random)?;
    }

    #[test]
    fn graph_value_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[4].0, TARGETS[4].1, seed, &edits, &random)?;
    }

    #[test]
    fn gltf_file_loader_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 0..6), random in prop::collection::vec(any::<u8>(), 0..256)) {
        never_panics(TARGETS[5].0, TARGETS[5].1, seed, &edits, &random)?;
    }
}
