//! Fuzzes the trace-script loader and runner (`state::trace::run_script`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = throng::state::trace::run_script(text);
    }
});
