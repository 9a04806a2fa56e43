//! The blend-space stage: for each character and layer, the leaf weights of the active state's
//! tree (and, while blending, the source state's) from the character's parameters. Mirrored by
//! `shaders/blend_space.wgsl`.
//!
//! The maths is not written again here: each request runs
//! [`BlendTrees::leaf_weights`], the one walk of a tree that the state step uses too, over the
//! spaces of [`crate::blend_space`]. The shader is that walk translated, reading
//! [`BlendTrees::words`]; `tests/gpu_blend_space.rs` holds the two to 1e-6.
//!
//! | input | per | what |
//! | --- | --- | --- |
//! | `inputs` | character | [`BlendTrees::num_inputs`] parameter values |
//! | `requests` | character × `requests_per_character` | a state, or [`NO_TREE_STATE`] |
//! | `weights` (out) | request | [`BlendTrees::max_leaves`] weights, zero past the state's leaves |

use rayon::prelude::*;

use crate::blend_space::{BlendTrees, NO_TREE_STATE};

/// Requests one rayon task handles: a request is a few hundred flops, so tasks of fewer would
/// spend more on scheduling than on weights.
pub const REQUESTS_PER_TASK: usize = 256;

/// Why a [`BlendSpaceJob`] was refused. Nothing is written when validation fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlendSpaceJobError {
    /// `requests_per_character` is 0, or the requests are not whole characters' worth.
    #[error("{requests} requests are not a whole number of characters at {per_character} per character")]
    Requests {
        /// Requests given.
        requests: usize,
        /// Requests per character.
        per_character: usize,
    },
    /// The inputs are not the trees' inputs per character times the characters.
    #[error("{got} inputs given; {characters} characters × {per_character} inputs = {expected} expected")]
    Inputs {
        /// Characters (requests ÷ requests per character).
        characters: usize,
        /// The trees' inputs per character.
        per_character: usize,
        /// Inputs needed.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// The output does not hold the trees' most leaves per request.
    #[error("{got} weights given; {requests} requests × {max_leaves} leaves = {expected} expected")]
    Weights {
        /// Requests given.
        requests: usize,
        /// The trees' most leaves of a state.
        max_leaves: usize,
        /// Weights needed.
        expected: usize,
        /// Weights given.
        got: usize,
    },
    /// A request names a state the trees do not have (and is not [`NO_TREE_STATE`]).
    #[error("request {request} names state {state}; the trees have {num_states}")]
    State {
        /// The request.
        request: usize,
        /// The state it names.
        state: u32,
        /// States in the trees.
        num_states: usize,
    },
}

/// One frame of the blend-space stage on the CPU.
///
/// ```
/// use throng::blend_space::NO_TREE_STATE;
/// use throng::eval::blend_space::BlendSpaceJob;
/// use throng::graph::CompiledGraph;
///
/// let graph = CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap();
/// let trees = graph.blend_trees().unwrap();
/// let moving = graph.state_index(0, "Move").unwrap() as u32;
/// // One character at 2.75 m/s, its base layer in Move and not blending.
/// let inputs = [2.75];
/// let requests = [moving, NO_TREE_STATE];
/// let mut weights = vec![0.0; requests.len() * trees.max_leaves()];
/// BlendSpaceJob { trees: &trees, inputs: &inputs, requests: &requests, requests_per_character: 2, weights: &mut weights }
///     .run()
///     .unwrap();
/// // Halfway between walk (1.5) and run (4.0).
/// assert!((weights[1] - 0.5).abs() < 1e-6 && (weights[2] - 0.5).abs() < 1e-6);
/// ```
#[derive(Debug)]
pub struct BlendSpaceJob<'a> {
    /// Every tree of the graph.
    pub trees: &'a BlendTrees,
    /// Per character, [`BlendTrees::num_inputs`] values (NaN reads as 0).
    pub inputs: &'a [f32],
    /// Per character, `requests_per_character` states (typically active and source per layer).
    pub requests: &'a [u32],
    /// Requests per character, at least 1.
    pub requests_per_character: usize,
    /// Per request, [`BlendTrees::max_leaves`] weights, written.
    pub weights: &'a mut [f32],
}

impl BlendSpaceJob<'_> {
    /// Checks the job.
    ///
    /// # Errors
    /// - [`BlendSpaceJobError::Requests`]: `requests_per_character` is 0 or does not divide
    ///   the requests.
    /// - [`BlendSpaceJobError::Inputs`]: not [`BlendTrees::num_inputs`] per character.
    /// - [`BlendSpaceJobError::Weights`]: not [`BlendTrees::max_leaves`] per request.
    /// - [`BlendSpaceJobError::State`]: a request past the states, other than [`NO_TREE_STATE`].
    pub fn validate(&self) -> Result<(), BlendSpaceJobError> {
        let (requests, per_character) = (self.requests.len(), self.requests_per_character);
        if per_character == 0 || !requests.is_multiple_of(per_character) {
            return Err(BlendSpaceJobError::Requests { requests, per_character });
        }
        let characters = requests / per_character;
        let inputs_per_character = self.trees.num_inputs();
        if self.inputs.len() != characters * inputs_per_character {
            return Err(BlendSpaceJobError::Inputs {
                characters,
                per_character: inputs_per_character,
                expected: characters * inputs_per_character,
                got: self.inputs.len(),
            });
        }
        let max_leaves = self.trees.max_leaves();
        if self.weights.len() != requests * max_leaves {
            return Err(BlendSpaceJobError::Weights {
                requests,
                max_leaves,
                expected: requests * max_leaves,
                got: self.weights.len(),
            });
        }
        let num_states = self.trees.states().len();
        if let Some(request) = self.requests.iter().position(|&s| s != NO_TREE_STATE && s as usize >= num_states) {
            return Err(BlendSpaceJobError::State { request, state: self.requests[request], num_states });
        }
        Ok(())
    }

    /// Validates, then writes every request's weights (in parallel; each request is
    /// independent, so the output is the same for any thread count).
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn run(self) -> Result<(), BlendSpaceJobError> {
        self.validate()?;
        let max_leaves = self.trees.max_leaves();
        if max_leaves == 0 {
            return Ok(());
        }
        let (trees, inputs, requests, per_character) =
            (self.trees, self.inputs, self.requests, self.requests_per_character);
        let num_inputs = trees.num_inputs();
        self.weights.par_chunks_mut(max_leaves * REQUESTS_PER_TASK).enumerate().for_each(|(task, chunk)| {
            for (k, out) in chunk.chunks_exact_mut(max_leaves).enumerate() {
                let request = task * REQUESTS_PER_TASK + k;
                let character = request / per_character;
                let own = &inputs[character * num_inputs..][..num_inputs];
                trees.leaf_weights(requests[request], own, out);
            }
        });
        Ok(())
    }
}
