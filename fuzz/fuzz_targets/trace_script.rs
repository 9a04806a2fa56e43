//! Fuzzes the trace-script loader and runner (`trace::Script`), writing the lines as the
//! tool does: streamed, so a long run's memory stays that of one frame.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(script) = throng::trace::Script::parse(text) {
            let _ = script.write_json(&mut std::io::sink());
        }
    }
});
