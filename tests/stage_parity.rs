//! Stage parity by name (STYLE.md): every GPU stage `X` is `shaders/X.wgsl`, its CPU mirror
//! `src/eval/X.rs` (whose module docs name the shader), a pipeline field `X` in
//! `src/gpu/pipelines.rs`, and a test `X_matches_cpu` comparing the two. The fused frames are
//! stages like any other: `frame.wgsl` ↔ `eval::frame`, `frame_layers.wgsl` ↔
//! `eval::frame_layers`. A kernel variant of a frame (`X_levels.wgsl`, `FrameKernel::Levels`)
//! is the same stage `X`: same mirror, same field, same test, which runs for every variant
//! (`THRONG_FRAME_KERNEL`).

use std::path::{Path, PathBuf};

/// File-name suffixes of the frames' kernel variants, one per `FrameKernel` past the first.
const VARIANT_SUFFIXES: [&str; 1] = ["_levels"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The stage each `shaders/*.wgsl` belongs to (shared includes aside), with the file's name.
fn shader_stages() -> Vec<(String, String)> {
    let mut stages: Vec<(String, String)> = std::fs::read_dir(repo().join("shaders"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .map(|p| {
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            let name = file.trim_end_matches(".wgsl");
            let stage = VARIANT_SUFFIXES.iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name);
            (stage.to_owned(), file)
        })
        .collect();
    stages.sort();
    stages
}

#[test]
fn every_shader_has_its_cpu_mirror_pipeline_field_and_parity_test() {
    let stages = shader_stages();
    assert!(stages.len() >= 7, "shaders/ lists only {stages:?}");
    let pipelines = read(&repo().join("src/gpu/pipelines.rs"));
    let mut test_sources = Vec::new();
    rust_files(&repo().join("tests"), &mut test_sources);
    rust_files(&repo().join("src"), &mut test_sources);
    let tests: String = test_sources.iter().map(|p| read(p)).collect();
    let mut problems = Vec::new();
    for (stage, file) in &stages {
        let mirror = repo().join("src/eval").join(format!("{stage}.rs"));
        match std::fs::read_to_string(&mirror) {
            Ok(source) => {
                let docs: String = source.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
                let base = format!("{stage}.wgsl");
                if !docs.contains(&base) {
                    problems.push(format!("src/eval/{stage}.rs: its module docs do not name `{base}`"));
                }
            }
            Err(_) => problems.push(format!("shaders/{file}: no CPU mirror src/eval/{stage}.rs")),
        }
        let field = format!("pub {stage}: ");
        if !pipelines.lines().any(|l| l.trim_start().starts_with(&field)) {
            problems.push(format!("shaders/{file}: no pipeline field `{stage}` in src/gpu/pipelines.rs"));
        }
        if !tests.contains(&format!("fn {stage}_matches_cpu(")) {
            problems.push(format!("shaders/{file}: no test `{stage}_matches_cpu`"));
        }
    }
    assert!(problems.is_empty(), "stage parity by name is broken:\n{}", problems.join("\n"));
}
