//! Fuzzes `GraphDesc::from_value` and compilation with JSON values built in code (deep nesting
//! past what serde_json's text parser allows, dotted names, huge counts): any value is a graph
//! or a typed error, and nothing recurses without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = throng::graph::fuzzing::load(data);
});
