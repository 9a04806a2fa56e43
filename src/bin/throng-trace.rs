//! `throng-trace SCRIPT.json [--plot OUT.png|OUT.svg]`: runs one character through a state
//! graph and prints one JSON line per layer per frame; with `--plot`, also draws the run as a
//! timeline (see `docs/trace.md`). The script format is documented in `throng::trace`
//! and `docs/graph-format.md`. A bad script or bad arguments print what is wrong and exit with
//! code 2.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use throng::import::read_regular_file;
use throng::plot::{PlotError, PlotFormat};
use throng::trace::{Script, TraceError};

const USAGE: &str = "usage: throng-trace SCRIPT.json [--plot OUT.png|OUT.svg]";

/// Largest script read, 64 MiB: a script at `MAX_TRACE_FRAMES` with an event on every frame
/// is a few MiB. The script must be a regular file ("Reading files" in `docs/errors.md`), so
/// `/dev/zero` or a FIFO is refused instead of filling memory or blocking.
const MAX_SCRIPT_BYTES: u64 = 64 << 20;

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("throng-trace: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (script_path, plot): (&str, Option<PathBuf>) = match args.as_slice() {
        [script] if !script.starts_with("--") => (script, None),
        [script, flag, out] | [flag, out, script] if flag == "--plot" && !script.starts_with("--") => {
            (script, Some(PathBuf::from(out)))
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Refuse a bad output before spending time on the run.
    if let Some(out) = &plot {
        if let Err(e) = PlotFormat::of(out) {
            return fail(e);
        }
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return fail(format!("cannot write {}: {} is not an existing folder", out.display(), dir.display()));
        }
    }
    let text = match read_regular_file(Path::new(script_path), MAX_SCRIPT_BYTES).map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => return fail(format!("cannot read {script_path}: not UTF-8 ({e})")),
        Err(e) => return fail(format!("cannot read {script_path}: {e}")),
    };
    let script = match Script::parse(&text) {
        Ok(script) => script,
        Err(e) => return fail(format!("{script_path}: {e}")),
    };
    // Lines go out as each frame runs, so memory does not grow with the frames.
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match &plot {
        None => match script.write_json(&mut out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(format!("{script_path}: {e}")),
        },
        Some(path) => {
            let title = Path::new(script_path)
                .file_name()
                .map_or_else(|| script_path.to_owned(), |n| n.to_string_lossy().into_owned());
            let timeline = throng::plot::from_script_each(&script, &title, |f| {
                for row in f.lines {
                    row.write_json(&mut out)
                        .map_err(|e| PlotError::Trace(TraceError::Write { frame: f.frame, message: e.to_string() }))?;
                }
                Ok(())
            });
            match timeline.and_then(|timeline| {
                out.flush().map_err(|e| {
                    PlotError::Trace(TraceError::Write {
                        frame: script.dts_s().len().saturating_sub(1),
                        message: e.to_string(),
                    })
                })?;
                timeline.save(path)
            }) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(format!("{script_path}: {e}")),
            }
        }
    }
}
