//! throng: skeletal animation for crowds.
//!
//! Each frame a game sets parameters for thousands of characters; throng evaluates their poses
//! into one buffer of skinning matrices that a vertex shader reads directly. This crate holds
//! the data model (rigs and clips), importers (glTF 2.0 and BVH), a built-in demo character,
//! state graphs ([`graph`]: PlayCanvas's JSON compiled to flat tables) and the state step that
//! runs them for whole crowds ([`state`]: SoA columns in, pose programs out), the CPU evaluator,
//! which is the reference every GPU stage is tested against and the fallback where no adapter
//! exists, and the GPU evaluator ([`gpu`]), wgpu compute shaders that write the same matrices
//! into a buffer a vertex shader binds. [`runtime::CrowdRuntime`] puts the state step and the
//! CPU evaluator together for an engine: spawn, set parameters, update, evaluate, with the
//! evaluator's memory kept in step with the crowd's rows (README, "Using it").
//!
//! # Conventions
//! - Units: metres, seconds, radians.
//! - glTF's coordinate frame: right-handed, Y up, +Z forward for the demo character.
//! - Matrices are column-major ([`glam::Mat4`]); a point is transformed as `M * p`.
//! - A [`Transform`] composes as `T * R * S`.
//! - Joint `j`'s parent has an index below `j`, so a forward pass over joints is a valid
//!   local-to-model order.
//!
//! # Glossary
//! One word per idea, throughout the code and docs:
//! - **frame**: one step of the game's loop, what a `dt_s` spans: the state step updates once
//!   and an evaluator turns the pose programs into matrices once. The CPU's `eval::frame`
//!   (`EvalCrowdJob`: one blended sample list per character) and `eval::frame_layers`
//!   (`FrameJob`: every layer), and their GPU mirrors `shaders/frame.wgsl`
//!   (`GpuCrowd::set_samples`) and `shaders/frame_layers.wgsl` (`GpuCrowd::set_frame`), are
//!   named for evaluating a whole frame.
//! - **clip frame**: one of a [`Clip`]'s uniformly spaced key instants (stored frame-major).
//! - **coordinate frame**: said in full; a 2D blend space works in *normalised coordinates*
//!   (its children's bounding box scaled to a side of 2), not in a frame.
//! - **memory**: what a layer carries between frames for its transitions (the last displayed
//!   poses, the frozen snapshot, inertialization's offsets): `eval::frame_layers::EvalContext` on the
//!   CPU, the `layer_memory` buffer on the GPU (a chunk's part of it starts at `memory_base`).
//! - **secondary set**: a layer program's samples after the destination's
//!   (`LayerProgram::num_secondary`): a crossfade's source, or under inertialization, on the
//!   switch update, the destination one step earlier.
//! - **decay time** (`decay_s`): inertialization's quintic duration or spring halflife.
//!
//! # Example
//! Evaluate the built-in character's walk for one character on the CPU:
//! ```
//! use throng::demo::DemoCharacter;
//! use throng::eval::EvalCrowdJob;
//! use throng::program::{ClipSample, OutputLayout};
//!
//! let demo = DemoCharacter::humanoid();
//! let walk = demo.clip_index("walk").unwrap() as u32;
//! let samples = [ClipSample::new(walk, 0.25, 1.0)];
//! let ranges = [0..1u32];
//! let mut out = vec![0.0f32; demo.rig.num_joints() * OutputLayout::Mat4.floats_per_joint()];
//! EvalCrowdJob {
//!     rig: &demo.rig,
//!     clips: &demo.clips,
//!     samples: &samples,
//!     sample_ranges: &ranges,
//!     layout: OutputLayout::Mat4,
//!     output: &mut out,
//! }
//! .run()
//! .unwrap();
//! assert!(out.iter().all(|v| v.is_finite()));
//! ```

// `!(x > 0.0)` is how this crate says "not a positive number, NaN included"; the suggested
// `partial_cmp` spelling hides that.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod blend_space;
#[cfg(feature = "capi")]
pub mod capi;
pub mod clip;
pub mod demo;
pub mod eval;
pub mod gpu;
pub mod graph;
pub mod import;
pub mod mesh;
pub mod plot;
pub mod pose;
pub mod profile;
pub mod program;
pub mod rig;
pub mod runtime;
pub mod setup;
pub mod state;
pub mod trace;

pub use clip::{Clip, ClipCurve, ClipError, ClipEvent, Interpolation, JointTracks, Track};
pub use rig::{
    MAX_CHAIN_SCALE, MAX_INVERSE_BIND, MAX_JOINTS, MAX_REST_ROTATION_LENGTH_ERROR, MAX_SCALE, MAX_TRANSLATION_M, Rig,
    RigError, Transform,
};

/// README.md's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// docs/embedding.md's examples, compiled and run as doc tests (the GPU ones compiled only).
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingDoctests;

/// docs/compression.md's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/compression.md")]
pub struct CompressionDoctests;
/// docs/lod.md's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/lod.md")]
pub struct LodDoctests;
