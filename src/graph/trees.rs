//! A compiled graph's blend trees as the `blend_space` stage reads them
//! ([`crate::blend_space::BlendTrees`]), and the parameters they read (the stage's inputs).

use crate::blend_space::{BlendTreeError, BlendTrees, TreeNode, TreeState};

use super::{CompiledGraph, MotionNode, ParamSlot};

impl CompiledGraph {
    /// The parameters the blend trees read, each once (a 1D tree's x alone), in the order the
    /// graph's nodes first read them: a character's [`blend_trees`](Self::blend_trees) input
    /// `i` is the value of parameter `blend_inputs()[i]` (a number: INTEGER as f32, BOOL and
    /// TRIGGER as 0 or 1).
    #[must_use]
    pub fn blend_inputs(&self) -> Vec<ParamSlot> {
        let mut inputs = Vec::new();
        let mut add = |slot: ParamSlot| {
            if !inputs.contains(&slot) {
                inputs.push(slot);
            }
        };
        for node in &self.nodes {
            match *node {
                MotionNode::Leaf(_) => {}
                MotionNode::Direct { params, .. } => {
                    self.direct_params[params.range()].iter().copied().for_each(&mut add)
                }
                MotionNode::Tree { space, params, .. } => {
                    params[..self.tree_dimensions(space)].iter().copied().for_each(&mut add)
                }
            }
        }
        inputs
    }

    /// Parameters a tree's space reads: 1 for a 1D space, 2 otherwise.
    fn tree_dimensions(&self, space: u32) -> usize {
        self.spaces.get(space as usize).map_or(2, |s| s.dimensions())
    }

    /// Every state's motion as one flat table for the `blend_space` stage: built once per
    /// graph and uploaded once. State `s` of the table is [`states`](Self::states)`()[s]`, its
    /// leaf slots the state's leaves in order; inputs index [`blend_inputs`](Self::blend_inputs).
    ///
    /// ```
    /// use throng::graph::CompiledGraph;
    /// let graph = CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap();
    /// let trees = graph.blend_trees().unwrap();
    /// assert_eq!(trees.states().len(), graph.states().len());
    /// assert_eq!(trees.num_inputs(), graph.blend_inputs().len());
    /// ```
    ///
    /// # Errors
    /// None for a graph [`compile`](Self::compile) built; the table's own checks
    /// ([`BlendTreeError`]) are kept rather than assumed.
    pub fn blend_trees(&self) -> Result<BlendTrees, BlendTreeError> {
        let inputs = self.blend_inputs();
        let input = |slot: ParamSlot| inputs.iter().position(|&s| s == slot).unwrap_or(0) as u32;
        let mut direct_inputs = Vec::new();
        let mut nodes = Vec::with_capacity(self.nodes.len());
        let mut states = Vec::with_capacity(self.states.len());
        for st in &self.states {
            let first_node = nodes.len() as u32;
            let base = st.nodes.start;
            for node in &self.nodes[st.nodes.range()] {
                nodes.push(match *node {
                    MotionNode::Leaf(leaf) => TreeNode::Leaf { slot: leaf.wrapping_sub(st.leaves.start) },
                    MotionNode::Direct { params, children } => {
                        let first_input = direct_inputs.len() as u32;
                        direct_inputs.extend(self.direct_params[params.range()].iter().map(|&s| input(s)));
                        TreeNode::Direct {
                            first_input,
                            first_child: children.start.wrapping_sub(base),
                            num_children: children.len() as u32,
                        }
                    }
                    MotionNode::Tree { space, params, children } => TreeNode::Space {
                        space,
                        // A 1D tree's second slot is a placeholder it never reads: not an input.
                        inputs: [input(params[0]), input(params[self.tree_dimensions(space) - 1])],
                        first_child: children.start.wrapping_sub(base),
                        num_children: children.len() as u32,
                    },
                });
            }
            states.push(TreeState { first_node, num_nodes: st.nodes.len() as u32, num_leaves: st.leaves.len() as u32 });
        }
        BlendTrees::new(states, nodes, direct_inputs, self.spaces.clone(), inputs.len() as u32)
    }
}
