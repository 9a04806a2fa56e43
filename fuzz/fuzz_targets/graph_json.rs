//! Fuzzes the state-graph loader (`CompiledGraph::from_json`): any text is a graph or a typed error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = throng::graph::CompiledGraph::from_json(text);
    }
});
