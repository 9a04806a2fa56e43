//! Memory a hostile file can make a loader hold, measured per thread with a counting allocator:
//! inputs found by a review of the first #25 ("Hostile input") fixes, where memory grew with
//! the square of a small file. Each test asserts what docs/errors.md promises.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use throng::graph::{CompiledGraph, MAX_JSON_DEPTH};
use throng::import::gltf::{GltfOptions, load_gltf_from_slice};

// ---------------------------------------------------------------------------------------------
// Memory measured per thread: the peak of live bytes this thread allocated during a call.

struct Tracking;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        note(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f` and returns its result with the most bytes this thread held at once during it,
/// over what it held before.
fn peak_bytes<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, (peak - base).max(0) as usize)
}

// ---------------------------------------------------------------------------------------------
// Files: a GLB's buffers without URI each copy the whole BIN chunk

/// docs/errors.md, "Reading files": never more bytes than stated, so that no file can fill
/// memory. A GLB whose JSON lists many buffers without `uri` makes `load_buffers` copy the
/// whole BIN chunk once per buffer (`bin.to_vec()`, then `truncate`, which keeps the
/// capacity), whatever each `byteLength` says: a 4 MiB GLB with 32 four-byte buffers takes
/// 128 MiB; a 1 GiB GLB with thousands of them, terabytes. The gltf crate does not refuse a
/// second URI-less buffer (the spec allows only buffer 0 to be the BIN chunk).
#[test]
fn glb_buffers_without_uri_do_not_each_copy_the_bin_chunk() {
    let bin = vec![0u8; 4 << 20];
    let buffers = vec![r#"{"byteLength":4}"#; 32].join(",");
    let mut json = format!(r#"{{"asset":{{"version":"2.0"}},"buffers":[{buffers}]}}"#).into_bytes();
    while json.len() % 4 != 0 {
        json.push(b' ');
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut glb = Vec::with_capacity(total);
    glb.extend_from_slice(b"glTF");
    glb.extend_from_slice(&2u32.to_le_bytes());
    glb.extend_from_slice(&(total as u32).to_le_bytes());
    glb.extend_from_slice(&(json.len() as u32).to_le_bytes());
    glb.extend_from_slice(&0x4E4F_534Au32.to_le_bytes());
    glb.extend_from_slice(&json);
    glb.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    glb.extend_from_slice(&0x004E_4942u32.to_le_bytes());
    glb.extend_from_slice(&bin);
    let (result, peak) = peak_bytes(|| load_gltf_from_slice(&glb, None, &GltfOptions::default()).map(|_| ()));
    // Whatever the result (the file has no skin), 32 buffers of 4 bytes are 128 bytes.
    let _ = result;
    assert!(
        peak < bin.len(),
        "loading 32 buffers of 4 bytes held {peak} bytes at once (the BIN chunk is {} bytes)",
        bin.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Graphs: the editor form reads a state once per id that lists it

/// docs/errors.md, "Resource limits" → "Graphs": reading costs time and memory in proportion
/// to the input's size times its nesting depth, at most `MAX_JSON_DEPTH` times the input, and
/// every limit is checked before the work it bounds. In the editor form a layer lists its
/// states by id, and `read_layer` (src/graph/format.rs) reads the state a listed id names
/// once per listing: one sub-machine of 200 states listed 5,000 times (a 15 KB file) becomes a
/// million `StateDesc`s before `limits` ever counts them (quadratic in the file's size).
#[test]
fn editor_form_repeated_state_ids_do_not_multiply_reading() {
    let inner: Vec<String> = (0..200).map(|i| format!(r#"{{"name":"s{i}"}}"#)).collect();
    let ids = vec!["1"; 5000].join(",");
    let text = format!(
        r#"{{ "layers": {{ "0": {{ "name": "Base", "states": [0, {ids}], "transitions": [0] }} }},
             "states": {{ "0": {{ "name": "START" }},
                          "1": {{ "name": "Big", "states": [{}], "transitions": [] }} }},
             "transitions": {{ "0": {{ "from": 0, "to": 1 }} }}, "parameters": {{}} }}"#,
        inner.join(",")
    );
    let (result, peak) = peak_bytes(|| CompiledGraph::from_json(&text).map(|_| ()));
    assert!(result.is_err(), "5,000 listings of one state are accepted");
    let bound = text.len() * MAX_JSON_DEPTH;
    assert!(
        peak <= bound,
        "reading a {}-byte graph held {peak} bytes at once, over the documented {bound} ({MAX_JSON_DEPTH} × input)",
        text.len()
    );
}
