//! The C ABI (feature `capi`): the embedding API as `extern "C"` functions over opaque handles,
//! for engines written in C, C++ or anything with a C FFI. Header: `include/throng.h`, kept in
//! sync with this folder by `tests/capi.rs`; guide: `docs/capi.md`.
//!
//! ```text
//! ThrongCharacter (rig + clips) ──┐
//! graph JSON ─────────────────────┴─► throng_crowd_add_archetype ─► archetype id
//! throng_crowd_spawn ─► u64 handles ─► throng_crowd_set_float… ─► throng_crowd_update(dt)
//!   ─► throng_crowd_evaluate (CPU) ─► caller's float buffer + root motion
//! ```
//!
//! Every function returns a [`ThrongStatus`]; on failure [`throng_last_error_message`] says
//! which function, which argument and what was wrong, for the calling thread. Every body runs
//! inside `catch_unwind`, so no panic crosses into C: a panic becomes
//! [`ThrongStatus::Panic`], and the crowd it happened in refuses every later call but
//! `throng_crowd_destroy`, since its columns may be half-written. Pointers are checked for null
//! and alignment, lengths against what the call needs; what cannot be checked (a pointer to
//! freed memory, a buffer shorter than the length given) is the caller's promise, stated in
//! each function's `# Safety`.
//!
//! A crowd is FFI plumbing over [`crate::runtime::CrowdRuntime`], which owns the state step and
//! the CPU evaluation and keeps the evaluator's memory in step with spawns and despawns; the C
//! side adds archetype ids by index, parameter ids, C strings for names, and the status codes.
//!
//! | file | what |
//! |---|---|
//! | `ffi.rs` | statuses, the thread's last error, `call` (panics caught, errors mapped), pointer, array and text checks |
//! | `character.rs` | `ThrongCharacter`: the humanoid or a glTF file, clip events, binding a graph to it |
//! | `crowd.rs` | `ThrongCrowd`: archetypes, spawn and despawn, parameters, update, evaluate |
//! | `readback.rs` | what a crowd reports after an update: layer readback, animation events, state and event names |

mod character;
mod crowd;
mod ffi;
mod readback;
#[cfg(test)]
mod tests;

pub use character::*;
pub use crowd::*;
pub use ffi::{ThrongStatus, throng_last_error_message, throng_status_name};
pub use readback::*;
