//! One test per input a fuzzer (`fuzz/`) or the bad-input matrix found that crashed, hung or
//! exhausted memory; each is now a typed error (or a clean load) and must stay so.

use throng::trace::{MAX_TRACE_FRAMES, TraceError, run_script};

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
    let at_limit =
        format!(r#"{{ "stateGraph": {GRAPH}, "clips": {{ "*": 1 }}, "dt": 0.1, "frames": {MAX_TRACE_FRAMES} }}"#);
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
    use throng::import::gltf::{GltfError, GltfOptions, load_gltf_from_slice};
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

/// A skin of one joint and one animation channel on `target` (JSON), its keys all zeros in a
/// data URI.
fn animated(target: &str) -> String {
    let zeros = "AAAA".repeat(13) + "AA==";
    format!(
        r#"{{ "asset": {{ "version": "2.0" }}, "nodes": [{{ "name": "hips" }}], "skins": [{{ "joints": [0] }}],
             "buffers": [{{ "byteLength": 40, "uri": "data:application/octet-stream;base64,{zeros}" }}],
             "bufferViews": [{{ "buffer": 0, "byteLength": 8 }}, {{ "buffer": 0, "byteOffset": 8, "byteLength": 32 }}],
             "accessors": [{{ "bufferView": 0, "componentType": 5126, "count": 2, "type": "SCALAR" }},
                           {{ "bufferView": 1, "componentType": 5126, "count": 2, "type": "VEC4" }}],
             "animations": [{{ "channels": [{{ "sampler": 0, "target": {target} }}], "samplers": [{{ "input": 0, "output": 1 }}] }}] }}"#
    )
}

/// gltf_import: gltf 1.4 never validates animation channel targets, and its accessors unwrap
/// them: an unknown `path` ("rotaxion") and a `node` past the nodes both panicked.
#[test]
fn gltf_animation_targets_gltf_does_not_validate_are_typed_errors() {
    use throng::import::gltf::{GltfError, GltfOptions, load_gltf_from_slice};
    for (target, names) in [
        (r#"{ "node": 0, "path": "rotaxion" }"#, ["animation 0 channel 0", "target path"]),
        (r#"{ "node": 5, "path": "rotation" }"#, ["animation 0 channel 0", "node 5"]),
    ] {
        let doc = animated(target);
        assert!(
            gltf::Gltf::from_slice(doc.as_bytes()).is_ok(),
            "gltf's own validation accepts {target}, so throng must check it"
        );
        match load_gltf_from_slice(doc.as_bytes(), None, &GltfOptions::default()) {
            Err(e @ GltfError::Parse { .. }) => {
                let message = e.to_string();
                assert!(names.iter().all(|n| message.contains(n)), "{target}: {message}");
            }
            other => panic!("{target}: expected a Parse error, got {other:?}"),
        }
    }
    let well_formed = animated(r#"{ "node": 0, "path": "rotation" }"#);
    assert!(!matches!(
        load_gltf_from_slice(well_formed.as_bytes(), None, &GltfOptions::default()),
        Err(GltfError::Parse { .. })
    ));
}
