//! Every blend tree of a graph in one flat table: the input of the `blend_space` stage
//! (`shaders/blend_space.wgsl`, mirrored by `throng::eval::blend_space`), and the one walk of a
//! state's nodes that turns a character's parameters into its leaves' weights.
//!
//! A graph compiles its trees into a [`BlendTrees`] once; [`BlendTrees::words`] is the same
//! table as the GPU reads it, uploaded once per graph. A state's nodes are breadth-first from
//! its root, so a node's weight is known before its children are visited:
//!
//! ```text
//!   node 0  Space (1D on input 0)      weight 1
//!   ├─ node 1  Leaf → slot 0           1 · w₀(x)
//!   └─ node 2  Direct (inputs 1, 2)    1 · w₁(x)
//!      ├─ node 3  Leaf → slot 1        w₁(x) · max(i₁, 0) / Σ
//!      └─ node 4  Leaf → slot 2        w₁(x) · max(i₂, 0) / Σ
//! ```

use glam::Vec2;
use thiserror::Error;

use super::{BlendSpace, BlendSpaceKind, MAX_BLEND_CHILDREN, nan_to_zero};

/// The most nodes one state's tree may have (`throng::graph::MAX_NODES_PER_STATE`; the
/// shader's `MAX_TREE_NODES` keeps its node weights in an array of this length).
pub const MAX_TREE_NODES: usize = 128;

/// A request for no state: its weights are all zero (a layer that is not blending has no
/// source state).
pub const NO_TREE_STATE: u32 = u32::MAX;

/// The word layout of [`BlendTrees::words`], as `shaders/blend_space.wgsl` reads it (keep in
/// sync with the constants there; `tests/gpu_blend_space.rs` checks them). f32 values are
/// stored as their bits.
///
/// | words | what |
/// | --- | --- |
/// | `HEADER_LEN` | states, nodes, inputs, most leaves of a state, where the states and nodes start |
/// | `STATE_LEN` per state | first node, nodes, leaves |
/// | `NODE_LEN` per node | kind, first child (relative to the state's first node), children, where its data starts, inputs x and y, leaf slot |
/// | per space or direct node | its data (the `SPACE_*` kinds below; a direct node's inputs, one per child) |
pub mod tree_words {
    /// Words of the header.
    pub const HEADER_LEN: usize = 8;
    /// Header word: number of states.
    pub const HEADER_STATES: usize = 0;
    /// Header word: number of nodes.
    pub const HEADER_NODES: usize = 1;
    /// Header word: inputs per character ([`super::BlendTrees::num_inputs`]).
    pub const HEADER_INPUTS: usize = 2;
    /// Header word: the most leaves of any state ([`super::BlendTrees::max_leaves`]), the
    /// weights each request writes.
    pub const HEADER_MAX_LEAVES: usize = 3;
    /// Header word: where the states start.
    pub const HEADER_STATES_AT: usize = 4;
    /// Header word: where the nodes start.
    pub const HEADER_NODES_AT: usize = 5;
    /// Words per state.
    pub const STATE_LEN: usize = 4;
    /// Words per node.
    pub const NODE_LEN: usize = 8;
    /// Node kind: a leaf.
    pub const NODE_LEAF: u32 = 0;
    /// Node kind: a DIRECT tree.
    pub const NODE_DIRECT: u32 = 1;
    /// Node kind: a 1D space (`n`, sorted values, child of each).
    pub const SPACE_ONE_D: u32 = 2;
    /// Node kind: a freeform space (normaliser, children, triangles, hull edges, then 9 words
    /// per triangle and 8 per edge).
    pub const SPACE_FREEFORM: u32 = 3;
    /// Node kind: a Cartesian gradient band (normaliser, `n`, points, `n × n` gradients).
    pub const SPACE_CARTESIAN: u32 = 4;
    /// Node kind: a directional gradient band (normaliser, `n`, radii, `n × n` pairs of 6 words).
    pub const SPACE_DIRECTIONAL: u32 = 5;
    /// Node kind: a grid (columns, rows, `xs`, `ys`).
    pub const SPACE_GRID: u32 = 6;
}

/// One node of a state's tree. Child indices are relative to the state's first node and come
/// after the node itself (breadth-first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeNode {
    /// A clip: writes its weight to the state's leaf `slot`.
    Leaf {
        /// Leaf index within the state, below [`TreeState::num_leaves`].
        slot: u32,
    },
    /// A DIRECT tree: child `i` weighs `max(inputᵢ, 0) / Σ max(inputⱼ, 0)`, equal shares when
    /// every input is 0 or below.
    Direct {
        /// First of its `num_children` entries in the direct inputs' list.
        first_input: u32,
        /// First child.
        first_child: u32,
        /// Children, at least 1.
        num_children: u32,
    },
    /// A blend space weighting its children from two inputs (`y` unread by a 1D space).
    Space {
        /// Index into [`BlendTrees::spaces`].
        space: u32,
        /// The character's inputs read as x and y.
        inputs: [u32; 2],
        /// First child.
        first_child: u32,
        /// Children: the space's.
        num_children: u32,
    },
}

/// A state's tree: its nodes, contiguous in [`BlendTrees`]' nodes, root first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeState {
    /// First node.
    pub first_node: u32,
    /// Nodes, in `1..=MAX_TREE_NODES`.
    pub num_nodes: u32,
    /// Leaves, in `1..=MAX_BLEND_CHILDREN`: the weights a request for this state fills.
    pub num_leaves: u32,
}

/// Why a [`BlendTrees`] could not be built; `state` and `node` say where (node relative to the
/// state's first).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BlendTreeError {
    /// A state's nodes run past the node list, are none, or more than [`MAX_TREE_NODES`].
    #[error("state {state}: nodes {first_node}..+{num_nodes} (of {total}; 1 to {MAX_TREE_NODES} per state)")]
    StateNodes {
        /// The state.
        state: usize,
        /// Its first node.
        first_node: u32,
        /// Its nodes.
        num_nodes: u32,
        /// Nodes in the table.
        total: usize,
    },
    /// A state has no leaves or more than [`MAX_BLEND_CHILDREN`].
    #[error("state {state}: {num_leaves} leaves (1 to {MAX_BLEND_CHILDREN})")]
    StateLeaves {
        /// The state.
        state: usize,
        /// Its leaves.
        num_leaves: u32,
    },
    /// A node's children are none, not after it, or past its state's nodes.
    #[error("state {state}, node {node}: children {first_child}..+{num_children} outside the state's later nodes")]
    Children {
        /// The state.
        state: usize,
        /// The node.
        node: usize,
        /// Its first child.
        first_child: u32,
        /// Its children.
        num_children: u32,
    },
    /// A node is the child of two nodes, or of none (the root excepted): its weight would be
    /// written twice or never.
    #[error("state {state}, node {node}: child of {parents} nodes (one expected)")]
    Parents {
        /// The state.
        state: usize,
        /// The node.
        node: usize,
        /// How many nodes list it.
        parents: usize,
    },
    /// A leaf's slot is not below its state's leaves, or another leaf has it.
    #[error("state {state}, node {node}: leaf slot {slot} of {num_leaves}, or taken twice")]
    LeafSlot {
        /// The state.
        state: usize,
        /// The node.
        node: usize,
        /// The slot.
        slot: u32,
        /// The state's leaves.
        num_leaves: u32,
    },
    /// An input index is not below the inputs per character, or a direct node's inputs run
    /// past the direct inputs' list.
    #[error("state {state}, node {node}: input {input} (inputs per character: {num_inputs})")]
    Input {
        /// The state.
        state: usize,
        /// The node.
        node: usize,
        /// The offending index (into the direct list for a direct node's span).
        input: u32,
        /// Inputs per character.
        num_inputs: u32,
    },
    /// A space node names no space, or its children are not the space's.
    #[error("state {state}, node {node}: space {space} (of {num_spaces}) with {num_children} children")]
    Space {
        /// The state.
        state: usize,
        /// The node.
        node: usize,
        /// The space index.
        space: u32,
        /// Spaces in the table.
        num_spaces: usize,
        /// The node's children.
        num_children: u32,
    },
}

/// Every blend tree of a graph, flat: states, nodes, the direct nodes' inputs and the spaces,
/// with the same table as words for the GPU. Built once per graph
/// (`throng::graph::CompiledGraph::blend_trees`), read every frame.
///
/// ```
/// use throng::blend_space::{BlendSpace, BlendTrees, TreeNode, TreeState};
///
/// // One state: a 1D space on input 0 between two clips.
/// let speed = BlendSpace::one_d(vec![1.5, 4.0]).unwrap();
/// let nodes = vec![
///     TreeNode::Space { space: 0, inputs: [0, 0], first_child: 1, num_children: 2 },
///     TreeNode::Leaf { slot: 0 },
///     TreeNode::Leaf { slot: 1 },
/// ];
/// let states = vec![TreeState { first_node: 0, num_nodes: 3, num_leaves: 2 }];
/// let trees = BlendTrees::new(states, nodes, Vec::new(), vec![speed], 1).unwrap();
/// let mut w = [0.0; 2];
/// trees.leaf_weights(0, &[3.0], &mut w);
/// assert!((w[0] - 0.4).abs() < 1e-6 && (w[1] - 0.6).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BlendTrees {
    states: Vec<TreeState>,
    nodes: Vec<TreeNode>,
    direct_inputs: Vec<u32>,
    spaces: Vec<BlendSpace>,
    num_inputs: u32,
    max_leaves: u32,
    words: Vec<u32>,
}

impl BlendTrees {
    /// The table of `states` over `nodes`, direct nodes reading `direct_inputs`, space nodes
    /// indexing `spaces`, each character giving `num_inputs` inputs.
    ///
    /// # Errors
    /// Each [`BlendTreeError`] variant: a state's nodes or leaves out of range; a node's
    /// children not after it, past its state, or not its space's; a node with other than one
    /// parent; a leaf slot out of range or repeated; an input out of range.
    pub fn new(
        states: Vec<TreeState>,
        nodes: Vec<TreeNode>,
        direct_inputs: Vec<u32>,
        spaces: Vec<BlendSpace>,
        num_inputs: u32,
    ) -> Result<Self, BlendTreeError> {
        for (s, st) in states.iter().enumerate() {
            check_state(s, st, &nodes, &direct_inputs, &spaces, num_inputs)?;
        }
        let max_leaves = states.iter().map(|s| s.num_leaves).max().unwrap_or(0);
        let mut trees = Self { states, nodes, direct_inputs, spaces, num_inputs, max_leaves, words: Vec::new() };
        trees.words = trees.encode();
        Ok(trees)
    }

    /// The states' trees.
    #[must_use]
    pub fn states(&self) -> &[TreeState] {
        &self.states
    }

    /// Every state's nodes.
    #[must_use]
    pub fn nodes(&self) -> &[TreeNode] {
        &self.nodes
    }

    /// The direct nodes' inputs.
    #[must_use]
    pub fn direct_inputs(&self) -> &[u32] {
        &self.direct_inputs
    }

    /// The spaces the space nodes index.
    #[must_use]
    pub fn spaces(&self) -> &[BlendSpace] {
        &self.spaces
    }

    /// Inputs each character gives (its parameters the trees read).
    #[must_use]
    pub fn num_inputs(&self) -> usize {
        self.num_inputs as usize
    }

    /// The most leaves of any state: the weights one request fills (zero past its state's).
    #[must_use]
    pub fn max_leaves(&self) -> usize {
        self.max_leaves as usize
    }

    /// The table as `shaders/blend_space.wgsl` reads it ([`tree_words`]).
    #[must_use]
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Leaf weights of `state` for a character's `inputs`, into `out[..num_leaves]`, and zero
    /// past that. Inputs are read through [`canonical_input`] (an input missing from `inputs`
    /// reads as 0); [`NO_TREE_STATE`] (or any index past the states) writes zeros. The one
    /// definition of a tree's weights: the CPU evaluator calls it, and the shader is its
    /// translation.
    pub fn leaf_weights(&self, state: u32, inputs: &[f32], out: &mut [f32]) {
        self.leaf_weights_in(state, inputs, out, &mut TreeScratch::new());
    }

    /// [`leaf_weights`](Self::leaf_weights) with the walk's working weights in `scratch`, so
    /// that a caller weighing many states clears them once rather than per state. A state of one
    /// node (a single clip) weighs its leaf 1 without a walk.
    pub fn leaf_weights_in(&self, state: u32, inputs: &[f32], out: &mut [f32], scratch: &mut TreeScratch) {
        out.fill(0.0);
        let Some(st) = self.states.get(state as usize) else { return };
        if st.num_nodes == 1 {
            if let Some(o) = out.first_mut() {
                *o = 1.0;
            }
            return;
        }
        let input = |i: u32| inputs.get(i as usize).copied().map_or(0.0, canonical_input);
        let nodes = &self.nodes[st.first_node as usize..(st.first_node + st.num_nodes) as usize];
        let TreeScratch { node_w, child_w } = scratch;
        node_w[0] = 1.0;
        for (n, node) in nodes.iter().enumerate() {
            let w = node_w[n];
            match *node {
                TreeNode::Leaf { slot } => {
                    if let Some(o) = out.get_mut(slot as usize) {
                        *o = w;
                    }
                }
                TreeNode::Direct { first_input, first_child, num_children } => {
                    let count = num_children as usize;
                    let list = &self.direct_inputs[first_input as usize..][..count];
                    let mut sum = 0.0f64;
                    for (cw, &i) in child_w.iter_mut().zip(list) {
                        *cw = input(i).clamp(0.0, f32::MAX);
                        sum += f64::from(*cw);
                    }
                    for (i, cw) in child_w[..count].iter().enumerate() {
                        let share = if sum > 0.0 { (f64::from(*cw) / sum) as f32 } else { 1.0 / count as f32 };
                        node_w[first_child as usize + i] = w * share;
                    }
                }
                TreeNode::Space { space, inputs: [x, y], first_child, num_children } => {
                    let count = num_children as usize;
                    self.spaces[space as usize].weights(Vec2::new(input(x), input(y)), &mut child_w[..count]);
                    for (i, &cw) in child_w[..count].iter().enumerate() {
                        node_w[first_child as usize + i] = w * cw;
                    }
                }
            }
        }
    }

    fn encode(&self) -> Vec<u32> {
        use tree_words::*;
        let states_at = HEADER_LEN;
        let nodes_at = states_at + STATE_LEN * self.states.len();
        let mut words = vec![0u32; nodes_at + NODE_LEN * self.nodes.len()];
        words[..6].copy_from_slice(&[
            self.states.len() as u32,
            self.nodes.len() as u32,
            self.num_inputs,
            self.max_leaves,
            states_at as u32,
            nodes_at as u32,
        ]);
        for (s, st) in self.states.iter().enumerate() {
            words[states_at + STATE_LEN * s..][..3].copy_from_slice(&[st.first_node, st.num_nodes, st.num_leaves]);
        }
        for (n, node) in self.nodes.iter().enumerate() {
            let data_at = words.len() as u32;
            let record = match *node {
                TreeNode::Leaf { slot } => [NODE_LEAF, 0, 0, 0, 0, 0, slot, 0],
                TreeNode::Direct { first_input, first_child, num_children } => {
                    words.extend_from_slice(&self.direct_inputs[first_input as usize..][..num_children as usize]);
                    [NODE_DIRECT, first_child, num_children, data_at, 0, 0, 0, 0]
                }
                TreeNode::Space { space, inputs: [x, y], first_child, num_children } => {
                    let space = &self.spaces[space as usize];
                    space.encode(&mut words);
                    [space_kind_word(space.kind()), first_child, num_children, data_at, x, y, 0, 0]
                }
            };
            words[nodes_at + NODE_LEN * n..][..NODE_LEN].copy_from_slice(&record);
        }
        words
    }
}

/// The working weights of a tree walk ([`BlendTrees::leaf_weights_in`]): every node's weight
/// and the children's of the node being visited. Each entry is written before it is read (a
/// node's weight before its children are visited), so one scratch serves any number of walks.
#[derive(Clone, Debug)]
pub struct TreeScratch {
    node_w: [f32; MAX_TREE_NODES],
    child_w: [f32; MAX_BLEND_CHILDREN],
}

impl TreeScratch {
    /// A scratch of zeros.
    #[must_use]
    pub const fn new() -> Self {
        Self { node_w: [0.0; MAX_TREE_NODES], child_w: [0.0; MAX_BLEND_CHILDREN] }
    }
}

impl Default for TreeScratch {
    fn default() -> Self {
        Self::new()
    }
}

/// An input as the trees read it: NaN as 0, −0 as +0 (a directional space's angle of the
/// origin is then 0 on every device, never ±π), ±∞ as ±`f32::MAX` (the spaces clamp or pull
/// back both alike). What the GPU stage is given is canonical already, so that the shader
/// needs no NaN or infinity, which WGSL does not promise to keep.
#[must_use]
pub fn canonical_input(v: f32) -> f32 {
    nan_to_zero(v).clamp(-f32::MAX, f32::MAX) + 0.0
}

fn space_kind_word(kind: BlendSpaceKind) -> u32 {
    use tree_words::*;
    match kind {
        BlendSpaceKind::OneD => SPACE_ONE_D,
        BlendSpaceKind::Freeform => SPACE_FREEFORM,
        BlendSpaceKind::Cartesian => SPACE_CARTESIAN,
        BlendSpaceKind::Directional => SPACE_DIRECTIONAL,
        BlendSpaceKind::Grid => SPACE_GRID,
    }
}

/// Checks one state's tree (see [`BlendTrees::new`]'s errors).
fn check_state(
    state: usize,
    st: &TreeState,
    nodes: &[TreeNode],
    direct_inputs: &[u32],
    spaces: &[BlendSpace],
    num_inputs: u32,
) -> Result<(), BlendTreeError> {
    let range_ok = (1..=MAX_TREE_NODES as u32).contains(&st.num_nodes)
        && (st.first_node as usize).saturating_add(st.num_nodes as usize) <= nodes.len();
    if !range_ok {
        let (first_node, num_nodes, total) = (st.first_node, st.num_nodes, nodes.len());
        return Err(BlendTreeError::StateNodes { state, first_node, num_nodes, total });
    }
    if !(1..=MAX_BLEND_CHILDREN as u32).contains(&st.num_leaves) {
        return Err(BlendTreeError::StateLeaves { state, num_leaves: st.num_leaves });
    }
    let own = &nodes[st.first_node as usize..][..st.num_nodes as usize];
    let mut parents = [0usize; MAX_TREE_NODES];
    let mut slots_taken = 0u64;
    for (node, tree_node) in own.iter().enumerate() {
        let (first_child, num_children) = match *tree_node {
            TreeNode::Leaf { slot } => {
                if slot >= st.num_leaves || slots_taken >> slot & 1 == 1 {
                    return Err(BlendTreeError::LeafSlot { state, node, slot, num_leaves: st.num_leaves });
                }
                slots_taken |= 1 << slot;
                continue;
            }
            TreeNode::Direct { first_input, first_child, num_children } => {
                let end = first_input as usize + num_children as usize;
                let list = direct_inputs.get(first_input as usize..end).ok_or(BlendTreeError::Input {
                    state,
                    node,
                    input: first_input,
                    num_inputs,
                })?;
                if let Some(&input) = list.iter().find(|&&i| i >= num_inputs) {
                    return Err(BlendTreeError::Input { state, node, input, num_inputs });
                }
                (first_child, num_children)
            }
            TreeNode::Space { space, inputs, first_child, num_children } => {
                let fits = spaces.get(space as usize).is_some_and(|s| s.num_children() == num_children as usize);
                if !fits {
                    let num_spaces = spaces.len();
                    return Err(BlendTreeError::Space { state, node, space, num_spaces, num_children });
                }
                if let Some(&input) = inputs.iter().find(|&&i| i >= num_inputs) {
                    return Err(BlendTreeError::Input { state, node, input, num_inputs });
                }
                (first_child, num_children)
            }
        };
        let children = first_child as usize..first_child as usize + num_children as usize;
        if num_children == 0 || children.start <= node || children.end > own.len() {
            return Err(BlendTreeError::Children { state, node, first_child, num_children });
        }
        for child in children {
            parents[child] += 1;
        }
    }
    let expected = |node: usize| usize::from(node > 0);
    if let Some(node) = (0..own.len()).find(|&n| parents[n] != expected(n)) {
        return Err(BlendTreeError::Parents { state, node, parents: parents[node] });
    }
    Ok(())
}
