//! The layering, as a test (STYLE.md, "Dependencies point one way"; ARCHITECTURE.md,
//! "Dependencies point one way"): every `crate::` path in `src/**/*.rs`, in `use` items
//! (multi-line `use crate::{…}` groups included) and inline, is checked against [`ALLOWED`].
//! Test-only modules count too: a `#[cfg(test)] mod` that reaches back up the list is the same
//! design smell as the library doing it. Comments and string literals are skipped, so doc links
//! may point anywhere.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and the modules it may use (besides itself), lowest layer first.
///
/// ```text
/// tools and glue   setup demo trace plot capi        may use everything
/// crowd runtime    runtime                           state and eval (the CPU's state step and evaluation) and all below
/// evaluators       eval   gpu                        program, profile and the data model; never each other
/// state step       state                             graph, program, profile, rig, clip; no GPU, no pose maths
/// importers        import                            the data model only (rigs, clips, meshes)
/// instrumentation  profile                           program
/// pose programs    program                           the data model
/// graphs           graph                             blend_space; nothing of the runtime
/// data model       pose < rig < clip, mesh, blend_space
/// ```
const ALLOWED: &[(&str, &[&str])] = &[
    ("pose", &[]),
    ("rig", &["pose"]),
    ("clip", &["pose", "rig"]),
    ("mesh", &[]),
    ("blend_space", &[]),
    ("graph", &["blend_space"]),
    ("program", &["pose", "rig", "clip", "blend_space"]),
    ("profile", &["program"]),
    ("import", &["pose", "rig", "clip", "mesh"]),
    ("state", &["rig", "clip", "blend_space", "graph", "program", "profile"]),
    ("eval", &["pose", "rig", "clip", "blend_space", "program", "profile"]),
    ("gpu", &["pose", "rig", "clip", "blend_space", "program", "profile"]),
    ("runtime", &["pose", "rig", "clip", "mesh", "blend_space", "graph", "program", "profile", "state", "eval"]),
    ("setup", EVERYTHING),
    ("demo", EVERYTHING),
    ("trace", EVERYTHING),
    ("plot", EVERYTHING),
    ("capi", EVERYTHING),
];

/// What the tools and glue on top may use.
const EVERYTHING: &[&str] = &[
    "pose",
    "rig",
    "clip",
    "mesh",
    "blend_space",
    "graph",
    "program",
    "profile",
    "import",
    "state",
    "eval",
    "gpu",
    "runtime",
    "setup",
    "demo",
    "trace",
    "plot",
    "capi",
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments and the insides of string and char literals blanked out (newlines
/// kept), so that only code is searched.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && matches!(at(i + 2), '"' | '#')))
            && (i == 0 || at(i - 1) == 'b' || !(at(i - 1).is_alphanumeric() || at(i - 1) == '_'))
        {
            // Raw string: r"…", r#"…"#, …
            let mut hashes = 0;
            i += 1;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A char literal ('x', '\n', '\u{…}'); a lone quote is a lifetime or a label.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The first segment after every `crate::` in `code` (each item of a `crate::{…}` group), with
/// the line it is on.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let ident_at = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        (code[start..i].to_string(), i)
    };
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find("crate") {
        let start = from + pos;
        from = start + 5;
        let before = start.checked_sub(1).map(|b| bytes[b]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let mut i = start + 5;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if !code[i..].starts_with("::") {
            continue; // pub(crate), a `crate` field…
        }
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) == Some(&b'{') {
            // A group: the first segment of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            while i < bytes.len() {
                match bytes[i] {
                    b'{' => {
                        depth += 1;
                        if depth == 1 {
                            item_start = true;
                        }
                        i += 1;
                    }
                    b'}' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' => {
                        item_start = depth == 1;
                        i += 1;
                    }
                    b if b.is_ascii_whitespace() => i += 1,
                    _ if item_start && depth == 1 => {
                        let (name, end) = ident_at(i);
                        if !name.is_empty() {
                            found.push((line_of(i), name));
                        }
                        item_start = false;
                        i = end.max(i + 1);
                    }
                    _ => i += 1,
                }
            }
        } else {
            let (name, _) = ident_at(i);
            if !name.is_empty() {
                found.push((line_of(i), name));
            }
        }
    }
    found
}

/// Names the crate root re-exports (`pub use rig::{Rig, …}`) and macros exported at the root
/// (`#[macro_export] macro_rules! zone`), each with the module that defines it.
fn root_names(files: &[(PathBuf, String, String)]) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let lib = fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    // Statement by statement: rustfmt spreads a long list over lines.
    for statement in code_only(&lib).split(';') {
        let Some(start) = statement.find("pub use ") else { continue };
        let rest = &statement[start + "pub use ".len()..];
        let Some((module, items)) = rest.split_once("::") else { continue };
        for item in items.trim_matches(|c: char| "{};".contains(c) || c.is_whitespace()).split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            if !name.is_empty() {
                names.push((name.to_string(), module.trim().to_string()));
            }
        }
    }
    for (_, module, code) in files {
        let mut rest = code.as_str();
        while let Some(pos) = rest.find("macro_rules!") {
            rest = &rest[pos + "macro_rules!".len()..];
            let name: String = rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            names.push((name, module.clone()));
        }
    }
    names
}

/// Every violation of [`ALLOWED`] in `src/`, as `src/x.rs: crate::y (x may not depend on y), line n`.
fn violations() -> Vec<String> {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut files = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        // lib.rs is the root that declares the modules; src/bin/ holds other crates, whose
        // `crate::` is their own.
        if first == "lib.rs" || first == "bin" {
            continue;
        }
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        let code = code_only(&fs::read_to_string(&path).unwrap());
        files.push((path, module, code));
    }
    let modules: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    let root = root_names(&files);
    let mut out = Vec::new();
    for (path, module, code) in &files {
        let shown = format!("src/{}", path.strip_prefix(&src).unwrap().display());
        let Some((_, allowed)) = ALLOWED.iter().find(|(m, _)| m == module) else {
            out.push(format!("{shown}: module {module} is not in the layering table (tests/layering.rs, ALLOWED)"));
            continue;
        };
        for (line, name) in crate_paths(code) {
            let target = if modules.contains(name.as_str()) {
                name.clone()
            } else if let Some((_, m)) = root.iter().find(|(n, _)| *n == name) {
                m.clone()
            } else {
                out.push(format!("{shown}: crate::{name} names no module of the layering table, line {line}"));
                continue;
            };
            if &target != module && !allowed.contains(&target.as_str()) {
                out.push(format!("{shown}: crate::{name} ({module} may not depend on {target}), line {line}"));
            }
        }
    }
    out
}

#[test]
fn dependencies_point_one_way() {
    let violations = violations();
    assert!(
        violations.is_empty(),
        "{} layering violations (see STYLE.md, \"Dependencies point one way\"):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

#[test]
fn every_module_is_in_the_table_and_may_use_only_known_modules() {
    let modules: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    for (m, allowed) in ALLOWED {
        for a in *allowed {
            assert!(modules.contains(a), "{m} is allowed {a}, which is not in the table");
        }
    }
    // Every top-level module of src/ is in the table (a new one must say where it sits).
    let lib = code_only(&fs::read_to_string(src_dir().join("lib.rs")).unwrap());
    for line in lib.lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ").or_else(|| line.trim().strip_prefix("mod ")) {
            let name = name.trim_end_matches(';').trim();
            assert!(modules.contains(name), "src/lib.rs declares {name}, which is not in the layering table");
        }
    }
}

#[test]
fn the_scanner_finds_groups_and_inline_paths_but_not_comments_or_strings() {
    let source = r##"
//! Links to [`crate::gpu`] in docs are fine.
use crate::rig::Rig;
use crate::{
    clip::Clip,
    program::{self, LayerSetup},
};
pub(crate) fn f() {
    let s = "crate::demo";
    let r = r#"crate::plot"#;
    let c = '"';
    /* crate::capi */
    crate::pose::local_to_model(&[], &[], &mut []);
    let _zone = crate::zone!("x");
}
"##;
    let found: Vec<String> = crate_paths(&code_only(source)).into_iter().map(|(_, name)| name).collect();
    assert_eq!(found, ["rig", "clip", "program", "pose", "zone"]);
}
