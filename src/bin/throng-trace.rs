//! `throng-trace SCRIPT.json`: runs one character through a state graph and prints one JSON
//! line per layer per frame. The script format is documented in `throng::state::trace` and
//! `docs/graph-format.md`. A bad script prints where it is wrong and exits with code 2.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: throng-trace SCRIPT.json");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("throng-trace: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match throng::state::trace::run_script(&text) {
        Ok(lines) => {
            for line in lines {
                println!("{}", line.to_json());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("throng-trace: {path}: {e}");
            ExitCode::from(2)
        }
    }
}
