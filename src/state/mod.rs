//! The state step: compiled graphs run for whole crowds in SoA columns, emitting state records.
//!
//! ```text
//! set_float / set_trigger / columns ──► Crowd::update(dt) ──► record_frame(): records() + shots()
//!        (per parameter, batched)         rayon over chunks       + blend_inputs() + record_clock()
//!                                          of characters           + what changed when (stamps)
//!                                                              + events() (AnimationEvent)
//!                                                              + due() (animation LOD)
//!                                                              programs() + samples(): the records
//!                                                              expanded (program::expand_character)
//!                                                              when asked for
//! ```
//!
//! Characters are grouped by [`Archetype`] (a graph plus a clip for each of its leaves). Each
//! group stores one `Vec` per field: per character and layer (index `row * layers + layer`)
//! the active and previous state, the state clock as phase and loop count, the source
//! state's clock, the transition in flight with its clock and duration; per parameter one
//! column (floats, integers, booleans); triggers as one 64-bit word per character, because
//! the step clears consumed triggers inside the parallel pass. Handles are stable: removing a
//! character moves another's row, never its handle. There is no GPU and no pose maths here.
//!
//! # Example
//! ```
//! use std::sync::{Arc, OnceLock};
//! use throng::graph::CompiledGraph;
//! use throng::state::{Archetype, ClipBinding, Crowd};
//!
//! let graph = Arc::new(CompiledGraph::from_json(r#"{
//!     "layers": [{ "name": "Base",
//!         "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
//!         "transitions": [
//!             { "from": "START", "to": "Idle" },
//!             { "from": "Idle", "to": "Walk", "time": 0.25,
//!               "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }] }
//!         ] }],
//!     "parameters": { "speed": { "name": "speed", "type": "FLOAT", "value": 0 } }
//! }"#).unwrap());
//! let archetype = Archetype::from_bindings(graph, &[
//!     ("Idle", ClipBinding { clip: 0, duration_s: 2.0 }),
//!     ("Walk", ClipBinding { clip: 1, duration_s: 1.0 }),
//! ]).unwrap();
//! let mut crowd = Crowd::new();
//! let kind = crowd.add_archetype(archetype);
//! let hero = crowd.spawn(kind).unwrap();
//! let speed = crowd.param(kind, "speed").unwrap();
//! crowd.set_float(speed, &[hero], &[1.2]).unwrap();
//! crowd.update(1.0 / 60.0).unwrap();
//! let layer = crowd.readback(hero, 0).unwrap();
//! assert_eq!(crowd.state_name(kind, layer.active_state), Some("Walk"));
//! assert!(layer.transitioning);
//! ```

mod archetype;
mod columns;
mod crowd;
mod direct;
mod error;
mod handle;
mod lod;
mod one_shot;
mod replace;
#[cfg(test)]
mod stamp_tests;
mod step;

pub use archetype::{AnimationEvent, Archetype, ClipBinding, EventId};
pub use columns::CHARACTERS_PER_CHUNK;
use crowd::Slot;
pub use crowd::{CharacterBytes, Crowd, LayerReadback};
pub use direct::{MAX_COMMANDS, StartPhases, TransitionCommand};
pub use error::StateError;
pub use handle::{ArchetypeId, CharacterHandle, MAX_CHARACTER_SLOTS, MAX_GENERATION, ParamId};
pub use lod::UPDATE_RATES;
pub use one_shot::{OneShot, OneShotReadback};
pub use step::MAX_EVENTS_PER_LAYER_UPDATE;
