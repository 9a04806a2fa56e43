//! The C ABI (`src/capi/`, feature `capi`): `include/throng.h` declares exactly what the Rust
//! side exports, and `examples/c/main.c`, compiled by the system C compiler against the static
//! library, creates a crowd, loads a graph, steps it, checks its matrices and gets a bad graph
//! back as a status and a message; then does the same for a glTF character (RiggedSimple from
//! `../shared/data`, when present).
//!
//! Both tests run under the plain `cargo test`: the header check reads the two files as text,
//! and the C test builds the static library itself (`cargo rustc --features capi --crate-type
//! staticlib`, in a target folder of its own so it does not wait on the outer build's lock).
//! Without a C compiler the C test skips with a message, unless `THRONG_REQUIRE_CC=1` (as CI
//! sets it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The C ABI's Rust side: every file of `src/capi/` in name order, blank lines between.
fn rust_side() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/capi");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display())))
        .collect::<Vec<_>>()
        .join("\n\n")
}

// ---- the header check ----

/// A function as C sees it: return type and parameters (name, type), types as canonical
/// token strings (`"const char *"`).
#[derive(Debug, PartialEq)]
struct Signature {
    ret: String,
    params: Vec<(String, String)>,
}

/// `T *`, `const T *` and `T*` all become `T *`: tokens split on `*`, joined by one space.
fn canonical(c_type: &str) -> String {
    c_type.replace('*', " * ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The C spelling of a Rust FFI type, or an error naming the type the mapping lacks.
fn c_type_of(rust: &str) -> Result<String, String> {
    let rust = rust.trim();
    if let Some(inner) = rust.strip_prefix("*mut ") {
        return Ok(format!("{} *", c_type_of(inner)?));
    }
    if let Some(inner) = rust.strip_prefix("*const ") {
        let inner = c_type_of(inner)?;
        return Ok(if inner.ends_with('*') { format!("{inner} const *") } else { format!("const {inner} *") });
    }
    let primitive = match rust {
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i8" => "int8_t",
        "i16" => "int16_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "usize" => "size_t",
        "isize" => "ptrdiff_t",
        "f32" => "float",
        "f64" => "double",
        "bool" => "bool",
        "c_char" => "char",
        "()" => "void",
        named if named.starts_with("Throng") && named.chars().all(|c| c.is_ascii_alphanumeric()) => named,
        other => return Err(format!("no C spelling for Rust type `{other}`: extend c_type_of")),
    };
    Ok(primitive.to_owned())
}

/// `NullPointer` → `NULL_POINTER`, `ThrongStatus` → `THRONG_STATUS`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Splits `a, b, c` at top-level commas (types like `[f32; 3]` hold none).
fn split_list(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// What a side declares: functions, `#[repr(C)]` structs (field name, C type, array length),
/// enums (C constant name → value), constants (name → value) and opaque types.
#[derive(Debug, Default)]
struct Api {
    functions: BTreeMap<String, Signature>,
    structs: BTreeMap<String, Vec<(String, String, Option<usize>)>>,
    enums: BTreeMap<String, BTreeMap<String, i64>>,
    constants: BTreeMap<String, i64>,
    opaque: BTreeSet<String>,
}

/// The text between `open` at `start` and its matching close.
fn balanced(text: &str, start: usize, open: char, close: char) -> Option<(usize, usize)> {
    let mut depth = 0;
    for (i, c) in text[start..].char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some((start + 1, start + i));
            }
        }
    }
    None
}

/// Source without `//` line comments (doc comments included), so bodies can be split on
/// punctuation.
fn strip_line_comments(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn parse_rust(source: &str, errors: &mut Vec<String>) -> Api {
    let mut api = Api::default();
    let code = strip_line_comments(source);

    for (at, _) in code.match_indices("extern \"C\" fn ") {
        let header_start = code[..at].rfind("\n\n").unwrap_or(0);
        let name_start = at + "extern \"C\" fn ".len();
        let Some(paren) = code[name_start..].find('(').map(|p| name_start + p) else { continue };
        let name = code[name_start..paren].trim().to_owned();
        if !code[header_start..at].contains("#[unsafe(no_mangle)]") {
            errors.push(format!("src/capi/: `{name}` lacks #[unsafe(no_mangle)]"));
        }
        if !code[header_start..at].contains("pub ") {
            errors.push(format!("src/capi/: `{name}` is not pub"));
        }
        let Some((open, close)) = balanced(&code, paren, '(', ')') else { continue };
        let after = &code[close + 1..];
        let ret_text = after[..after.find('{').unwrap_or(after.len())].trim();
        let ret_rust = ret_text.strip_prefix("->").map_or("()", str::trim);
        let mut convert = |rust: &str| {
            c_type_of(rust).map(|c| canonical(&c)).unwrap_or_else(|e| {
                errors.push(format!("src/capi/ `{name}`: {e}"));
                String::new()
            })
        };
        let ret = convert(ret_rust);
        let params = split_list(&code[open..close])
            .into_iter()
            .map(|p| {
                let (pname, ty) = p.split_once(':').unwrap_or((p, ""));
                (pname.trim().to_owned(), convert(ty))
            })
            .collect();
        api.functions.insert(name, Signature { ret, params });
    }

    for (at, _) in code.match_indices("#[repr(C)]") {
        let rest = &code[at..];
        let Some(open) = rest.find('{') else { continue };
        let head: Vec<&str> = rest[..open].split_whitespace().collect();
        let Some(kind_at) = head.iter().position(|w| *w == "struct" || *w == "enum") else { continue };
        let name = head.get(kind_at + 1).copied().unwrap_or_default().to_owned();
        let Some((body_start, body_end)) = balanced(&code, at + open, '{', '}') else { continue };
        let body = &code[body_start..body_end];
        if head[kind_at] == "struct" {
            let fields = split_list(body)
                .into_iter()
                .map(|f| {
                    let (fname, ty) = f.trim_start_matches("pub ").split_once(':').unwrap_or((f, ""));
                    let ty = ty.trim();
                    let (element, len) =
                        match ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')).and_then(|t| t.split_once(';')) {
                            Some((element, len)) => (element.trim(), len.trim().parse().ok()),
                            None => (ty, None),
                        };
                    let c = c_type_of(element).unwrap_or_else(|e| {
                        errors.push(format!("src/capi/ struct {name}: {e}"));
                        String::new()
                    });
                    (fname.trim().to_owned(), canonical(&c), len)
                })
                .collect();
            api.structs.insert(name, fields);
        } else {
            let prefix = screaming_snake(&name);
            let variants = split_list(body)
                .into_iter()
                .filter_map(|v| {
                    let (variant, value) = v.split_once('=')?;
                    Some((format!("{prefix}_{}", screaming_snake(variant.trim())), value.trim().parse().ok()?))
                })
                .collect();
            api.enums.insert(name, variants);
        }
    }

    for line in code.lines() {
        let Some(rest) = line.trim().strip_prefix("pub const ") else { continue };
        let Some((name, value)) = rest.split_once(':').and_then(|(n, r)| Some((n.trim(), r.split_once('=')?.1))) else {
            continue;
        };
        if let Ok(value) = value.trim().trim_end_matches(';').parse() {
            api.constants.insert(name.to_owned(), value);
        }
    }

    for line in code.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["pub", "struct", name, "{"] = words.as_slice()
            && !api.structs.contains_key(*name)
        {
            api.opaque.insert((*name).to_owned());
        }
    }
    api
}

/// The header without comments and with each `#define` taken out.
fn parse_header(header: &str, errors: &mut Vec<String>) -> Api {
    let mut api = Api::default();
    let mut text = String::new();
    let mut rest = header;
    while let Some(start) = rest.find("/*") {
        text.push_str(&rest[..start]);
        rest = rest[start..].find("*/").map_or("", |end| &rest[start + end + 2..]);
    }
    text.push_str(rest);
    let text = strip_line_comments(&text);
    let mut code = String::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["#define", name, value] => {
                let digits = value.trim_start_matches('(').trim_end_matches(')').trim_end_matches(['u', 'U']);
                match digits.parse() {
                    Ok(v) => {
                        api.constants.insert((*name).to_owned(), v);
                    }
                    Err(_) => errors.push(format!("include/throng.h: #define {name} {value} is not an integer")),
                }
            }
            [first, ..] if first.starts_with('#') => {}
            _ => {
                code.push_str(line);
                code.push('\n');
            }
        }
    }
    let code = code.replace("extern \"C\" {", "").replace('}', " } ");

    // Typedef'd structs and enums, then what is left: opaque typedefs and functions.
    let mut leftover = String::new();
    let mut cursor = 0;
    while let Some(found) = code[cursor..].find("typedef ") {
        let at = cursor + found;
        leftover.push_str(&code[cursor..at]);
        let end = code[at..].find(';').map_or(code.len(), |e| at + e);
        let brace = code[at..end].find('{').map(|b| at + b);
        match brace.and_then(|b| balanced(&code, b, '{', '}').map(|r| (b, r))) {
            Some((brace, (body_start, body_end))) => {
                let head: Vec<&str> = code[at..brace].split_whitespace().collect();
                let name = head.get(2).copied().unwrap_or_default().to_owned();
                let body = &code[body_start..body_end];
                if head.get(1) == Some(&"struct") {
                    let fields = body
                        .split(';')
                        .map(str::trim)
                        .filter(|f| !f.is_empty())
                        .map(|f| {
                            let (decl, len) = match f.split_once('[') {
                                Some((decl, len)) => (decl, len.trim_end_matches(']').trim().parse().ok()),
                                None => (f, None),
                            };
                            let split =
                                decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
                            (decl[split..].to_owned(), canonical(&decl[..split]), len)
                        })
                        .collect();
                    api.structs.insert(name, fields);
                } else {
                    let variants = split_list(body)
                        .into_iter()
                        .filter_map(|v| {
                            let (variant, value) = v.split_once('=')?;
                            Some((variant.trim().to_owned(), value.trim().parse().ok()?))
                        })
                        .collect();
                    api.enums.insert(name, variants);
                }
                let after_body = body_end + 1;
                cursor = code[after_body..].find(';').map_or(code.len(), |e| after_body + e + 1);
            }
            None => {
                let words: Vec<&str> = code[at..end].split_whitespace().collect();
                if let ["typedef", "struct", name, alias] = words.as_slice()
                    && name == alias
                {
                    api.opaque.insert((*name).to_owned());
                } else {
                    errors.push(format!("include/throng.h: cannot read `{}`", code[at..end].trim()));
                }
                cursor = (end + 1).min(code.len());
            }
        }
    }
    leftover.push_str(&code[cursor.min(code.len())..]);

    for decl in leftover.split(';').map(str::trim).filter(|d| !d.is_empty() && *d != "}") {
        let Some(paren) = decl.find('(') else {
            errors.push(format!("include/throng.h: cannot read `{decl}`"));
            continue;
        };
        let head = decl[..paren].trim();
        let split = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let (ret, name) = (canonical(&head[..split]), head[split..].to_owned());
        let params_text = decl[paren + 1..].trim_end().trim_end_matches(')');
        let params = if params_text.trim() == "void" {
            Vec::new()
        } else {
            split_list(params_text)
                .into_iter()
                .map(|p| {
                    let split = p.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
                    (p[split..].to_owned(), canonical(&p[..split]))
                })
                .collect()
        };
        api.functions.insert(name, Signature { ret, params });
    }
    api
}

/// One line per name missing on a side or declared differently.
fn compare_maps<V: std::fmt::Debug + PartialEq>(
    what: &str,
    rust: &BTreeMap<String, V>,
    c: &BTreeMap<String, V>,
    diffs: &mut Vec<String>,
) {
    for name in rust.keys().chain(c.keys()).collect::<BTreeSet<_>>() {
        match (rust.get(name), c.get(name)) {
            (Some(r), Some(h)) if r != h => diffs.push(format!("{what} {name}: Rust {r:?}, the header {h:?}")),
            (Some(_), None) => diffs.push(format!("{what} {name}: in src/capi/, missing from include/throng.h")),
            (None, Some(_)) => diffs.push(format!("{what} {name}: in include/throng.h, not in src/capi/")),
            _ => {}
        }
    }
}

/// Every difference between the two sides, one line each.
fn compare(rust: &Api, c: &Api) -> Vec<String> {
    let mut diffs = Vec::new();
    for (name, sig) in &rust.functions {
        match c.functions.get(name) {
            None => diffs.push(format!("{name}: exported by src/capi/, missing from include/throng.h")),
            Some(c_sig) if c_sig != sig => diffs.push(format!("{name}: Rust says {sig:?}, the header says {c_sig:?}")),
            Some(_) => {}
        }
    }
    for name in c.functions.keys().filter(|n| !rust.functions.contains_key(*n)) {
        diffs.push(format!("{name}: declared in include/throng.h, not exported by src/capi/"));
    }
    compare_maps("struct", &rust.structs, &c.structs, &mut diffs);
    compare_maps("enum", &rust.enums, &c.enums, &mut diffs);
    compare_maps("constant", &rust.constants, &c.constants, &mut diffs);
    let opaque = |set: &BTreeSet<String>| set.iter().map(|n| (n.clone(), ())).collect::<BTreeMap<_, _>>();
    compare_maps("opaque type", &opaque(&rust.opaque), &opaque(&c.opaque), &mut diffs);
    diffs
}

#[test]
fn header_declares_exactly_what_the_rust_side_exports() {
    let mut errors = Vec::new();
    let rust = parse_rust(&rust_side(), &mut errors);
    let c = parse_header(&read("include/throng.h"), &mut errors);
    // A parser that found nothing would make the comparison vacuous.
    assert!(rust.functions.len() >= 20 && rust.enums.contains_key("ThrongStatus"), "src/capi/ parsed to {rust:?}");
    assert!(
        !rust.structs.is_empty() && !rust.constants.is_empty() && !rust.opaque.is_empty(),
        "src/capi/ parsed to {rust:?}"
    );
    errors.extend(compare(&rust, &c));
    // `throng_status_name` spells every status as the header does.
    let source = rust_side();
    for (name, value) in rust.enums.get("ThrongStatus").into_iter().flatten() {
        if !source.contains(&format!("{value} => c\"{name}\"")) {
            errors.push(format!("throng_status_name does not map {value} to \"{name}\""));
        }
    }
    assert!(errors.is_empty(), "include/throng.h and src/capi/ disagree:\n  {}", errors.join("\n  "));
}

#[test]
fn header_check_notices_a_changed_parameter_and_a_missing_function() {
    let mut errors = Vec::new();
    let rust = parse_rust(&rust_side(), &mut errors);
    let header = read("include/throng.h");
    let edited = header
        .replace(
            "uint32_t archetype, size_t count, uint64_t *out_handles",
            "uint32_t archetype, uint32_t count, uint64_t *out_handles",
        )
        .replace("void throng_crowd_destroy(ThrongCrowd *crowd);", "")
        .replace("THRONG_STATUS_EVAL = 10", "THRONG_STATUS_EVAL = 12")
        .replace("float yaw_rad;", "double yaw_rad;");
    assert_ne!(edited, header, "the edits must apply to the header");
    let c = parse_header(&edited, &mut errors);
    let diffs = compare(&rust, &c).join("\n");
    let expected = [
        "throng_crowd_spawn: Rust says",
        "throng_crowd_destroy: exported by src/capi/, missing",
        "enum ThrongStatus: Rust",
        "struct ThrongRootDelta: Rust",
    ];
    for expected in expected {
        assert!(diffs.contains(expected), "no `{expected}` among:\n{diffs}");
    }
}

// ---- the C program ----

/// The C compiler to use (`$CC`, else `cc`), or `None` after saying why the test skips.
fn c_compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let required = std::env::var("THRONG_REQUIRE_CC").as_deref() == Ok("1");
    let works = cfg!(unix) && Command::new(&cc).arg("--version").output().is_ok_and(|o| o.status.success());
    match (works, required) {
        (true, _) => Some(cc),
        (false, true) => panic!("THRONG_REQUIRE_CC=1 but no working C compiler `{cc}` (set CC, or install gcc)"),
        (false, false) => {
            eprintln!(
                "skipping the C ABI program: no working C compiler `{cc}` on a Unix system; set THRONG_REQUIRE_CC=1 to fail instead"
            );
            None
        }
    }
}

/// Builds `libthrong.a` with the `capi` feature in a target folder of its own; returns the
/// library and the native libraries it needs.
///
/// The library is built without optimisation whatever profile runs this test: it recompiles
/// every dependency (wgpu, naga, image…) in a folder of its own, which costs about a minute of
/// CPU unoptimised and four optimised, for a program that checks results, not speed.
fn build_static_library(target_dir: &Path) -> (PathBuf, Vec<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["rustc", "--lib", "--features", "capi", "--crate-type", "staticlib", "--locked", "--target-dir"])
        .arg(target_dir)
        .args(["--", "--print", "native-static-libs"]);
    // Debug information would make the library several times larger and slower to link.
    command.env("CARGO_PROFILE_DEV_DEBUG", "false");
    let output = command.output().expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "building the static library failed:\n{stderr}");
    let library = target_dir.join("debug").join("libthrong.a");
    // rustc lists the system libraries the archive needs when it links it; cargo replays that
    // note when the build is fresh. Without it, the libraries Rust's standard library needs on
    // Linux.
    let native = stderr
        .lines()
        .find_map(|l| {
            l.split_once("native-static-libs:").map(|(_, libs)| libs.split_whitespace().map(str::to_owned).collect())
        })
        .unwrap_or_else(|| {
            ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"].map(str::to_owned).to_vec()
        });
    (library, native)
}

#[test]
fn c_program_steps_a_crowd_and_reports_bad_json() {
    let Some(cc) = c_compiler() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi");
    let (library, native) = build_static_library(&target_dir);
    let program = target_dir.join("throng_c_example");
    let compile = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(root.join("examples/c/main.c"))
        .arg("-I")
        .arg(root.join("include"))
        .arg(&library)
        .args(&native)
        .arg("-lm")
        .arg("-o")
        .arg(&program)
        .output()
        .expect("the C compiler runs");
    assert!(
        compile.status.success(),
        "{cc} failed on examples/c/main.c:\n{}",
        String::from_utf8_lossy(&compile.stderr)
    );

    // The glTF part needs ../shared/data's RiggedSimple; without it (and without
    // THRONG_REQUIRE_DATA=1) the program runs the humanoid alone.
    let gltf = root.join("../shared/data/gltf/RiggedSimple/RiggedSimple.gltf");
    let mut command = Command::new(&program);
    command.arg(root.join("src/demo/locomotion.json"));
    if gltf.is_file() {
        command.arg(&gltf);
    } else if std::env::var("THRONG_REQUIRE_DATA").as_deref() == Ok("1") {
        panic!("THRONG_REQUIRE_DATA=1 but {} is missing", gltf.display());
    } else {
        eprintln!("skipping the C program's glTF part: {} is absent", gltf.display());
    }
    let run = command.output().expect("the C program runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the C program failed ({}):\n{stdout}\n{stderr}", run.status);
    assert!(
        stdout.contains("bad JSON rejected: THRONG_STATUS_GRAPH: throng_crowd_add_archetype: state graph JSON, line 1"),
        "the bad graph did not come back as THRONG_STATUS_GRAPH with the parser's message:\n{stdout}"
    );
    if gltf.is_file() {
        assert!(
            stdout.contains("glTF: 2 joints, clip \"merged\" playing in state merged"),
            "the glTF character did not play:\n{stdout}"
        );
    }
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
