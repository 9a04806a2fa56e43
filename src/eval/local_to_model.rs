//! Local-to-model: composes each joint's local transform with its parent's model matrix.
//! Mirrored by `shaders/local_to_model.wgsl`.

// The maths lives in `pose`, below rigs and clips, which need it too (a rig's rest model
// matrices, compression's model-space error); this module is the stage both evaluators name.
pub use crate::pose::local_to_model;
