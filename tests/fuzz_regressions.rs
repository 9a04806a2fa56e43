//! One test per input a fuzzer (`fuzz/`) or the bad-input matrix found that crashed, hung or
//! exhausted memory; each is now a typed error (or a clean load) and must stay so.

use throng::state::trace::{run_script, TraceError, MAX_TRACE_FRAMES};

const GRAPH: &str = r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "A" }],
    "transitions": [{ "from": "START", "to": "A" }] }], "parameters": {} }"#;

/// `"frames": 1e12` asked `vec![dt; frames]` for terabytes and aborted the process.
#[test]
fn trace_script_with_a_huge_frame_count_is_refused_before_allocating() {
    let script = format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1 }}, "dt": 0.1, "frames": 1000000000000 }}"#);
    match run_script(&script) {
        Err(TraceError::Script { path, message }) => {
            assert_eq!(path, "frames");
            assert!(message.contains("1000000000000"), "{message}");
        }
        other => panic!("expected a Script error at `frames`, got {other:?}"),
    }
    let at_limit = format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1 }}, "dt": 0.1, "frames": {MAX_TRACE_FRAMES} }}"#);
    assert_eq!(run_script(&at_limit).unwrap().len() as u64, MAX_TRACE_FRAMES, "the limit itself is allowed");
}

/// The same limit holds for an explicit `dts` list.
#[test]
fn trace_script_with_too_many_steps_is_refused() {
    let dts = vec!["0"; MAX_TRACE_FRAMES as usize + 1].join(",");
    let script = format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1 }}, "dts": [{dts}] }}"#);
    assert!(matches!(run_script(&script), Err(TraceError::Script { path, .. }) if path == "dts"));
}

/// gltf_import: a mesh primitive whose POSITION names a missing accessor panicked inside
/// gltf-json's validation (`root.accessors[index]`); it is refused before validation now.
#[test]
fn gltf_position_accessor_past_the_accessors_is_a_typed_error() {
    use throng::import::gltf::{load_gltf_from_slice, GltfError, GltfOptions};
    let doc = br#"{ "asset": { "version": "2.0" }, "accessors": [],
        "meshes": [{ "primitives": [{ "attributes": { "POSITION": 0 } }, { "attributes": { "POSITION": 31 } }] }] }"#;
    match load_gltf_from_slice(doc, None, &GltfOptions::default()) {
        Err(e @ GltfError::BadPrimitive { mesh: 0, primitive: 0, .. }) => {
            let message = e.to_string();
            assert!(message.contains("mesh 0 primitive 0") && message.contains("accessor 0"), "{message}");
        }
        other => panic!("expected BadPrimitive for mesh 0 primitive 0, got {other:?}"),
    }
}
