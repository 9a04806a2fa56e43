//! The blend-space stage: `shaders/blend_space.wgsl` against its CPU mirror
//! `throng::eval::blend_space` within 1e-6 on every kind of tree (1D, freeform, Cartesian and
//! directional gradient bands, grid, direct, nested) and degenerate layouts; the mirror against
//! `throng::blend_space` bit for bit; the table's word layout against the shader's constants;
//! and every refusal of the trees, the job and the GPU stage.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

use glam::Vec2;
use throng::blend_space::{
    BlendSpace, BlendSpaceError, BlendTreeError, BlendTrees, NO_TREE_STATE, TreeNode, TreeState, canonical_input,
    tree_words,
};
use throng::eval::blend_space::{BlendSpaceJob, BlendSpaceJobError};
use throng::gpu::{GpuBlendSpace, GpuBlendSpaceError, GpuError, blend_space_source};
use throng::graph::CompiledGraph;

use support::Rng;
use support::compare::worst_abs_diff;

/// How far the GPU's weights may be from the CPU's (issue #18).
const WEIGHT_TOLERANCE: f32 = 1e-6;

/// Layers per test character: each asks for an active and a source state per layer.
const LAYERS: usize = 2;
const REQUESTS_PER_CHARACTER: usize = 2 * LAYERS;

fn v(x: f32, y: f32) -> Vec2 {
    Vec2::new(x, y)
}

/// A table growing state by state: each state's tree is given as nodes, inputs index the
/// characters' inputs ([`NUM_INPUTS`]).
#[derive(Default)]
struct Builder {
    states: Vec<TreeState>,
    nodes: Vec<TreeNode>,
    direct_inputs: Vec<u32>,
    spaces: Vec<BlendSpace>,
    /// Each state's points of interest: its spaces' children and their midpoints.
    points: Vec<Vec<Vec2>>,
}

/// Inputs per character: x and y of the outer tree, then those of nested ones and the direct
/// nodes' weights.
const NUM_INPUTS: u32 = 6;

impl Builder {
    /// A state of one space over leaves, reading inputs 0 and 1.
    fn space(&mut self, space: BlendSpace, points: Vec<Vec2>) {
        let n = space.num_children() as u32;
        let first_node = self.nodes.len() as u32;
        self.nodes.push(TreeNode::Space {
            space: self.spaces.len() as u32,
            inputs: [0, 1],
            first_child: 1,
            num_children: n,
        });
        self.nodes.extend((0..n).map(|slot| TreeNode::Leaf { slot }));
        self.spaces.push(space);
        self.states.push(TreeState { first_node, num_nodes: n + 1, num_leaves: n });
        self.points.push(points);
    }

    /// A single clip.
    fn single(&mut self) {
        self.states.push(TreeState { first_node: self.nodes.len() as u32, num_nodes: 1, num_leaves: 1 });
        self.nodes.push(TreeNode::Leaf { slot: 0 });
        self.points.push(Vec::new());
    }

    /// A direct node over `n` leaves reading inputs 2.. (wrapping within the inputs).
    fn direct(&mut self, n: u32) {
        let first_node = self.nodes.len() as u32;
        let first_input = self.direct_inputs.len() as u32;
        self.direct_inputs.extend((0..n).map(|i| 2 + i % (NUM_INPUTS - 2)));
        self.nodes.push(TreeNode::Direct { first_input, first_child: 1, num_children: n });
        self.nodes.extend((0..n).map(|slot| TreeNode::Leaf { slot }));
        self.states.push(TreeState { first_node, num_nodes: n + 1, num_leaves: n });
        self.points.push(Vec::new());
    }

    /// A 2D outer space (inputs 0, 1) whose first child is a direct node of two leaves (inputs
    /// 4, 5), second a 1D space (input 2) of two leaves, and the rest leaves.
    fn nested(&mut self, outer: BlendSpace, inner: BlendSpace, points: Vec<Vec2>) {
        let n = outer.num_children() as u32;
        let first_node = self.nodes.len() as u32;
        let outer_index = self.spaces.len() as u32;
        self.spaces.extend([outer, inner]);
        // Node 0 the outer space; 1..=n its children; then the direct's two, the inner's two.
        self.nodes.push(TreeNode::Space { space: outer_index, inputs: [0, 1], first_child: 1, num_children: n });
        let first_input = self.direct_inputs.len() as u32;
        self.direct_inputs.extend([4, 5]);
        self.nodes.push(TreeNode::Direct { first_input, first_child: n + 1, num_children: 2 });
        self.nodes.push(TreeNode::Space {
            space: outer_index + 1,
            inputs: [2, 3],
            first_child: n + 3,
            num_children: 2,
        });
        self.nodes.extend((0..n - 2).map(|slot| TreeNode::Leaf { slot }));
        self.nodes.extend((0..4).map(|k| TreeNode::Leaf { slot: n - 2 + k }));
        self.states.push(TreeState { first_node, num_nodes: n + 5, num_leaves: n + 2 });
        self.points.push(points);
    }

    fn build(self) -> (BlendTrees, Vec<Vec<Vec2>>) {
        let trees = BlendTrees::new(self.states, self.nodes, self.direct_inputs, self.spaces, NUM_INPUTS).unwrap();
        (trees, self.points)
    }
}

/// Points and their pairs' midpoints: exact vertices, and (for neighbours) exact edges.
fn with_midpoints(points: &[Vec2]) -> Vec<Vec2> {
    let mut out = points.to_vec();
    for (i, a) in points.iter().enumerate() {
        out.extend(points[i + 1..].iter().map(|b| (*a + *b) * 0.5));
    }
    out
}

fn random_points(rng: &mut Rng, n: usize, spread: f32) -> Vec<Vec2> {
    (0..n).map(|_| v(rng.range(-spread, spread), rng.range(-spread, spread))).collect()
}

/// Every kind, random and degenerate: collinear gradient bands, a square (four co-circular
/// points), a thin triangle, a centre child or none, spans past f32::MAX, a single clip, a
/// direct node of one child, nested trees.
fn every_kind() -> (BlendTrees, Vec<Vec<Vec2>>) {
    let mut rng = Rng(0x5eed_b1e0_d00d_f00d);
    let mut b = Builder::default();
    b.single();
    b.direct(1);
    b.direct(3);
    b.direct(8);
    for values in
        [vec![0.0, 1.5, 4.0], vec![4.0, -1.0, 0.5, 2.0, 9.0], vec![-f32::MAX, f32::MAX], vec![-1e30, 0.0, 1e-3]]
    {
        let points = values.iter().map(|&x| v(x, 0.0)).collect::<Vec<_>>();
        b.space(BlendSpace::one_d(values).unwrap(), with_midpoints(&points));
    }
    for (xs, ys) in [
        (vec![-1.0, 1.0], vec![-1.0, 1.0]),
        (vec![0.0, 0.5, 3.0, 3.5], vec![-2.0, 0.0, 7.0]),
        (vec![-f32::MAX, 0.0, f32::MAX], vec![-f32::MAX, f32::MAX]),
    ] {
        let points = ys.iter().flat_map(|&y| xs.iter().map(move |&x| v(x, y))).collect::<Vec<_>>();
        b.space(BlendSpace::grid(xs, ys).unwrap(), with_midpoints(&points));
    }
    let square = vec![v(-1.0, -1.0), v(1.0, -1.0), v(1.0, 1.0), v(-1.0, 1.0)];
    let thin = vec![
        v(-5.0499806, -6.766819),
        v(-2.1434436, 4.1555495),
        v(0.0, -7.5902834),
        v(-4.9026666, -6.2153363),
        v(5.3513126, 0.0),
    ];
    let mut square_centre = square.clone();
    square_centre.push(v(0.0, 0.0));
    let collinear = vec![v(-2.0, -1.0), v(0.0, 0.0), v(2.0, 1.0), v(5.0, 2.5)];
    let far = vec![v(1e30, 1e30), v(-1e30, 2e30), v(3e30, -1e30)];
    let tiny = vec![v(1e-3, 1e-3), v(1.002e-3, 1e-3), v(1e-3, 1.003e-3), v(1.001e-3, 1.004e-3)];
    let mut layouts = vec![square.clone(), square_centre.clone(), thin.clone(), far.clone(), tiny.clone()];
    for n in [3, 5, 9, 16] {
        layouts.push(random_points(&mut rng, n, 4.0));
    }
    for points in &layouts {
        b.space(BlendSpace::freeform(points.clone()).unwrap(), with_midpoints(points));
    }
    for points in layouts.iter().chain([&collinear, &vec![v(0.0, 1.0), v(0.0, 2.0)]]) {
        b.space(BlendSpace::cartesian(points.clone()).unwrap(), with_midpoints(points));
    }
    // Directional children are velocities: a ring with and without the idle centre.
    let ring = |n: usize, r: f32| -> Vec<Vec2> {
        (0..n).map(|k| Vec2::from_angle(k as f32 * std::f32::consts::TAU / n as f32) * r).collect()
    };
    let mut ring_centre = ring(8, 1.5);
    ring_centre.push(Vec2::ZERO);
    let mut speeds = ring(4, 1.5);
    speeds.extend(ring(4, 4.0));
    speeds.push(Vec2::ZERO);
    for points in [ring(8, 1.5), ring_centre, speeds, collinear.clone(), random_points(&mut rng, 6, 3.0), far.clone()] {
        b.space(BlendSpace::directional(points.clone()).unwrap(), with_midpoints(&points));
    }
    for outer in [
        BlendSpace::freeform(square_centre.clone()).unwrap(),
        BlendSpace::cartesian(square.clone()).unwrap(),
        BlendSpace::directional(ring(5, 2.0)).unwrap(),
        BlendSpace::grid(vec![0.0, 1.0, 2.0], vec![0.0, 1.0]).unwrap(),
    ] {
        let inner = BlendSpace::one_d(vec![-1.0, 1.0]).unwrap();
        b.nested(outer, inner, with_midpoints(&square_centre));
    }
    b.build()
}

/// Inputs of a character asking for `state`: at one of its points of interest, near one,
/// random in or around the layout, far outside, or at the origin; the rest random, with direct
/// weights sometimes zero or negative.
fn character_inputs(rng: &mut Rng, points: &[Vec2]) -> Vec<f32> {
    let extent = points.iter().fold(1.0f32, |e, p| e.max(p.x.abs()).max(p.y.abs())).min(1e30);
    let p = match rng.below(7) {
        0 | 1 if !points.is_empty() => points[rng.below(points.len())],
        2 if !points.is_empty() => {
            points[rng.below(points.len())] + v(rng.range(-1e-3, 1e-3), rng.range(-1e-3, 1e-3)) * extent
        }
        3 => v(rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)) * [1e6, 1e30, f32::MAX][rng.below(3)].min(f32::MAX),
        4 => Vec2::ZERO,
        _ => v(rng.range(-1.5, 1.5), rng.range(-1.5, 1.5)) * extent,
    };
    let mut inputs = vec![p.x, p.y, rng.range(-2.0, 2.0), rng.range(-2.0, 2.0)];
    for _ in 4..NUM_INPUTS {
        inputs.push(match rng.below(4) {
            0 => 0.0,
            1 => -rng.range(0.0, 1.0),
            _ => rng.range(0.0, 3.0),
        });
    }
    inputs.into_iter().map(canonical_input).collect()
}

/// Characters each asking, per layer, for an active state and (half the time) a source state,
/// the active state cycling through every state so that each is asked for many times.
fn crowd(trees: &BlendTrees, points: &[Vec<Vec2>], characters: usize) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng(0xb1e5_5ed5_0000_0018);
    let num_states = trees.states().len();
    let mut inputs = Vec::new();
    let mut requests = Vec::new();
    for c in 0..characters {
        let active = (c % num_states) as u32;
        inputs.extend(character_inputs(&mut rng, &points[active as usize]));
        for _ in 0..LAYERS {
            requests.push(active);
            requests.push(if rng.below(2) == 0 { rng.below(num_states) as u32 } else { NO_TREE_STATE });
        }
    }
    (inputs, requests)
}

fn cpu_weights(trees: &BlendTrees, inputs: &[f32], requests: &[u32]) -> Vec<f32> {
    let mut weights = vec![f32::NAN; requests.len() * trees.max_leaves()];
    BlendSpaceJob { trees, inputs, requests, requests_per_character: REQUESTS_PER_CHARACTER, weights: &mut weights }
        .run()
        .unwrap();
    weights
}

/// Names the worst request out of tolerance (character, layer, active or source, state,
/// parameters, expected and got) and how many are, or `None` when none is.
fn mismatches(trees: &BlendTrees, inputs: &[f32], requests: &[u32], expected: &[f32], got: &[f32]) -> Option<String> {
    let leaves = trees.max_leaves();
    let num_inputs = trees.num_inputs();
    let diff = |r: usize| worst_abs_diff(&expected[r * leaves..][..leaves], &got[r * leaves..][..leaves]);
    let bad: Vec<usize> = (0..requests.len()).filter(|&r| diff(r).is_nan() || diff(r) > WEIGHT_TOLERANCE).collect();
    let worst = *bad.iter().max_by(|&&a, &&b| diff(a).total_cmp(&diff(b)))?;
    let character = worst / REQUESTS_PER_CHARACTER;
    let layer = worst % REQUESTS_PER_CHARACTER / 2;
    let side = if worst % 2 == 0 { "active" } else { "source" };
    let params = &inputs[character * num_inputs..][..num_inputs];
    Some(format!(
        "{} of {} requests; worst: character {character}, layer {layer}, {side} state {}: parameters {params:?}: off by {}\nexpected {:?}\n     got {:?}",
        bad.len(),
        requests.len(),
        requests[worst],
        diff(worst),
        &expected[worst * leaves..][..leaves],
        &got[worst * leaves..][..leaves],
    ))
}

#[test]
fn blend_space_matches_cpu() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let (trees, points) = every_kind();
    let (inputs, requests) = crowd(&trees, &points, 20 * trees.states().len());
    let expected = cpu_weights(&trees, &inputs, &requests);
    let stage = GpuBlendSpace::new(&gpu.device, trees.words()).unwrap();
    let got = stage.weights_blocking(&gpu.device, &gpu.queue, &inputs, &requests, REQUESTS_PER_CHARACTER).unwrap();
    if let Some(report) = mismatches(&trees, &inputs, &requests, &expected, &got) {
        panic!("GPU blend weights differ from the CPU's by more than {WEIGHT_TOLERANCE}: {report}");
    }
}

/// The demo's graph compiled into trees: the GPU stage agrees on its real states too.
#[test]
fn blend_space_matches_cpu_on_the_locomotion_graph() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let graph = CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap();
    let trees = graph.blend_trees().unwrap();
    let mut rng = Rng(7);
    let characters = 500;
    let inputs: Vec<f32> =
        (0..characters * trees.num_inputs()).map(|_| canonical_input(rng.range(-1.0, 6.0))).collect();
    let requests: Vec<u32> = (0..characters * REQUESTS_PER_CHARACTER)
        .map(|r| if r % 2 == 1 && rng.below(2) == 0 { NO_TREE_STATE } else { rng.below(trees.states().len()) as u32 })
        .collect();
    let expected = cpu_weights(&trees, &inputs, &requests);
    let stage = GpuBlendSpace::new(&gpu.device, trees.words()).unwrap();
    let got = stage.weights_blocking(&gpu.device, &gpu.queue, &inputs, &requests, REQUESTS_PER_CHARACTER).unwrap();
    if let Some(report) = mismatches(&trees, &inputs, &requests, &expected, &got) {
        panic!("GPU blend weights differ from the CPU's by more than {WEIGHT_TOLERANCE}: {report}");
    }
}

/// The mirror does not redo the maths: a state of one space gives exactly the space's weights,
/// bit for bit, and a state of nested trees exactly the product down each path.
#[test]
fn cpu_mirror_equals_blend_space_exactly() {
    let (trees, points) = every_kind();
    let (inputs, requests) = crowd(&trees, &points, 8 * trees.states().len());
    let weights = cpu_weights(&trees, &inputs, &requests);
    let leaves = trees.max_leaves();
    let mut checked = 0;
    for (r, &state) in requests.iter().enumerate() {
        let got = &weights[r * leaves..][..leaves];
        let Some(st) = trees.states().get(state as usize) else {
            assert!(got.iter().all(|w| w.to_bits() == 0), "request {r} for no state: {got:?}");
            continue;
        };
        let params = &inputs[r / REQUESTS_PER_CHARACTER * trees.num_inputs()..][..trees.num_inputs()];
        let nodes = &trees.nodes()[st.first_node as usize..][..st.num_nodes as usize];
        let mut want = vec![0.0f32; leaves];
        match nodes[0] {
            TreeNode::Space { space, inputs: [x, y], num_children, .. } if st.num_nodes == num_children + 1 => {
                trees.spaces()[space as usize]
                    .weights(v(params[x as usize], params[y as usize]), &mut want[..num_children as usize]);
            }
            TreeNode::Space { space, inputs: [x, y], num_children, .. } => {
                // Nested: outer child 0 is the direct node (two leaves), child 1 the inner 1D.
                let mut outer = vec![0.0; num_children as usize];
                trees.spaces()[space as usize].weights(v(params[x as usize], params[y as usize]), &mut outer);
                let n = num_children as usize;
                want[..n - 2].copy_from_slice(&outer[2..]);
                let (d0, d1) = (params[4].max(0.0), params[5].max(0.0));
                let sum = f64::from(d0) + f64::from(d1);
                let share = |d: f32| if sum > 0.0 { (f64::from(d) / sum) as f32 } else { 0.5 };
                want[n - 2] = outer[0] * share(d0);
                want[n - 1] = outer[0] * share(d1);
                let mut inner = [0.0; 2];
                trees.spaces()[space as usize + 1].weights(v(params[2], params[3]), &mut inner);
                want[n] = outer[1] * inner[0];
                want[n + 1] = outer[1] * inner[1];
            }
            _ => continue,
        }
        let same = want.iter().zip(got).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "request {r}, state {state}, parameters {params:?}:\nblend_space {want:?}\n     mirror {got:?}");
        checked += 1;
    }
    assert!(checked > 100, "only {checked} requests of tree states checked");
}

/// Weights at a space's own children are what the CPU promises (each child has all of its
/// weight at its own point): the degenerate points of the GPU test are meaningful.
#[test]
fn each_child_owns_its_point_through_the_trees() {
    let square = vec![v(-1.0, -1.0), v(1.0, -1.0), v(1.0, 1.0), v(-1.0, 1.0)];
    let mut b = Builder::default();
    b.space(BlendSpace::freeform(square.clone()).unwrap(), square.clone());
    b.space(BlendSpace::cartesian(square.clone()).unwrap(), square.clone());
    let (trees, _) = b.build();
    for state in 0..2u32 {
        for (child, p) in square.iter().enumerate() {
            let mut w = vec![0.0; trees.max_leaves()];
            trees.leaf_weights(state, &[p.x, p.y, 0.0, 0.0, 0.0, 0.0], &mut w);
            assert!((w[child] - 1.0).abs() < 1e-6, "state {state}, child {child}: {w:?}");
        }
    }
}

/// The shader's copy of the word layout and limits is the crate's.
#[test]
fn shader_constants_match_the_table_layout() {
    let source = blend_space_source();
    let constants = [
        ("HEADER_STATES", tree_words::HEADER_STATES as u32),
        ("HEADER_INPUTS", tree_words::HEADER_INPUTS as u32),
        ("HEADER_MAX_LEAVES", tree_words::HEADER_MAX_LEAVES as u32),
        ("HEADER_STATES_AT", tree_words::HEADER_STATES_AT as u32),
        ("HEADER_NODES_AT", tree_words::HEADER_NODES_AT as u32),
        ("STATE_LEN", tree_words::STATE_LEN as u32),
        ("NODE_LEN", tree_words::NODE_LEN as u32),
        ("NODE_LEAF", tree_words::NODE_LEAF),
        ("NODE_DIRECT", tree_words::NODE_DIRECT),
        ("SPACE_ONE_D", tree_words::SPACE_ONE_D),
        ("SPACE_FREEFORM", tree_words::SPACE_FREEFORM),
        ("SPACE_CARTESIAN", tree_words::SPACE_CARTESIAN),
        ("SPACE_DIRECTIONAL", tree_words::SPACE_DIRECTIONAL),
        ("SPACE_GRID", tree_words::SPACE_GRID),
        ("BLEND_SPACE_WORKGROUP", throng::gpu::blend_space::BLEND_SPACE_WORKGROUP),
        ("MAX_TREE_NODES", throng::blend_space::MAX_TREE_NODES as u32),
        ("MAX_BLEND_CHILDREN", throng::blend_space::MAX_BLEND_CHILDREN as u32),
    ];
    for (name, value) in constants {
        let line = format!("const {name}: u32 = {value}u;");
        assert!(source.contains(&line), "shaders/blend_space.wgsl should say `{line}`");
    }
    assert_eq!(throng::blend_space::MAX_TREE_NODES, throng::graph::MAX_NODES_PER_STATE);
    assert_eq!(size_of::<throng::gpu::blend_space::BlendSpaceParams>(), 16);
    assert!(source.contains("struct BlendSpaceParams {\n    num_requests: u32,\n    requests_per_character: u32,\n    groups_x: u32,\n    pad: u32,\n}"));
}

/// Coincident points, and a freeform space on one line, never reach the stage: they are
/// refused where the space is built, with the culprit named.
#[test]
fn coincident_and_collinear_layouts_are_refused_when_built() {
    let dup = BlendSpace::cartesian(vec![v(0.0, 0.0), v(1.0, 0.0), v(1.0, 0.0)]);
    assert!(matches!(dup, Err(BlendSpaceError::DuplicatePoint { first: 1, child: 2, .. })), "{dup:?}");
    let line = BlendSpace::freeform(vec![v(0.0, 0.0), v(1.0, 1.0), v(2.0, 2.0)]);
    assert!(matches!(line, Err(BlendSpaceError::Collinear { count: 3 })), "{line:?}");
    let dup_1d = BlendSpace::one_d(vec![1.0, 1.0]);
    assert!(matches!(dup_1d, Err(BlendSpaceError::DuplicatePoint { .. })), "{dup_1d:?}");
}

/// Every invalid table, one block each.
#[test]
fn invalid_trees_are_typed_errors() {
    let space = || vec![BlendSpace::one_d(vec![0.0, 1.0]).unwrap()];
    let leaf = |slot| TreeNode::Leaf { slot };
    let one = |first_node, num_nodes, num_leaves| vec![TreeState { first_node, num_nodes, num_leaves }];
    let tree = |first_child, num_children| TreeNode::Space { space: 0, inputs: [0, 0], first_child, num_children };

    let e = BlendTrees::new(one(0, 2, 1), vec![leaf(0)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::StateNodes { state: 0, num_nodes: 2, total: 1, .. }), "{e}");
    let e = BlendTrees::new(one(0, 0, 1), vec![leaf(0)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::StateNodes { num_nodes: 0, .. }), "{e}");

    let e = BlendTrees::new(one(0, 1, 0), vec![leaf(0)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::StateLeaves { num_leaves: 0, .. }), "{e}");
    let e = BlendTrees::new(one(0, 1, 65), vec![leaf(0)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::StateLeaves { num_leaves: 65, .. }), "{e}");

    let e = BlendTrees::new(one(0, 3, 2), vec![tree(0, 2), leaf(0), leaf(1)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Children { node: 0, first_child: 0, .. }), "{e}");
    let e = BlendTrees::new(one(0, 3, 2), vec![tree(2, 2), leaf(0), leaf(1)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Children { node: 0, first_child: 2, .. }), "{e}");

    let nodes = vec![tree(1, 2), leaf(0), leaf(1), leaf(1)];
    let e = BlendTrees::new(one(0, 4, 2), nodes, vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::LeafSlot { node: 3, slot: 1, .. }), "{e}");
    let e = BlendTrees::new(one(0, 3, 2), vec![tree(1, 2), leaf(0), leaf(2)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::LeafSlot { node: 2, slot: 2, num_leaves: 2, .. }), "{e}");

    let nodes = vec![tree(1, 2), leaf(0), leaf(1), leaf(2)];
    let e = BlendTrees::new(one(0, 4, 3), nodes, vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Parents { node: 3, parents: 0, .. }), "{e}");

    let e = BlendTrees::new(one(0, 3, 2), vec![tree(1, 2), leaf(0), leaf(1)], vec![], space(), 0).unwrap_err();
    assert!(matches!(e, BlendTreeError::Input { input: 0, num_inputs: 0, .. }), "{e}");
    let direct = TreeNode::Direct { first_input: 0, first_child: 1, num_children: 2 };
    let e = BlendTrees::new(one(0, 3, 2), vec![direct, leaf(0), leaf(1)], vec![0], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Input { node: 0, .. }), "{e}");
    let e = BlendTrees::new(one(0, 3, 2), vec![direct, leaf(0), leaf(1)], vec![0, 3], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Input { input: 3, num_inputs: 1, .. }), "{e}");

    let e = BlendTrees::new(one(0, 4, 3), vec![tree(1, 3), leaf(0), leaf(1), leaf(2)], vec![], space(), 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Space { space: 0, num_children: 3, .. }), "{e}");
    let e = BlendTrees::new(one(0, 3, 2), vec![tree(1, 2), leaf(0), leaf(1)], vec![], vec![], 1).unwrap_err();
    assert!(matches!(e, BlendTreeError::Space { num_spaces: 0, .. }), "{e}");
}

/// Every refusal of the CPU job, one block each, and the GPU stage's.
#[test]
fn invalid_jobs_are_typed_errors() {
    let graph = CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).unwrap();
    let trees = graph.blend_trees().unwrap();
    let leaves = trees.max_leaves();
    let inputs = vec![1.0; trees.num_inputs()];
    let mut weights = vec![0.0; 2 * leaves];
    let job = |inputs: &[f32], requests: &[u32], per_character: usize, weights: &mut [f32]| {
        BlendSpaceJob { trees: &trees, inputs, requests, requests_per_character: per_character, weights }.run()
    };
    assert_eq!(
        job(&inputs, &[0, 0], 0, &mut weights),
        Err(BlendSpaceJobError::Requests { requests: 2, per_character: 0 })
    );
    assert_eq!(
        job(&inputs, &[0, 0], 3, &mut weights),
        Err(BlendSpaceJobError::Requests { requests: 2, per_character: 3 })
    );
    assert!(matches!(job(&[], &[0, 0], 2, &mut weights), Err(BlendSpaceJobError::Inputs { got: 0, .. })));
    assert!(matches!(job(&inputs, &[0, 0], 2, &mut weights[..leaves]), Err(BlendSpaceJobError::Weights { .. })));
    let past = trees.states().len() as u32;
    assert!(matches!(job(&inputs, &[0, past], 2, &mut weights), Err(BlendSpaceJobError::State { request: 1, .. })));
    assert!(weights.iter().all(|&w| w == 0.0), "a refused job wrote {weights:?}");

    let Some(gpu) = gpu_support::gpu() else { return };
    let stage = GpuBlendSpace::new(&gpu.device, trees.words()).unwrap();
    let run = |inputs: &[f32]| stage.weights_blocking(&gpu.device, &gpu.queue, inputs, &[0, 0], 2);
    for bad in [f32::NAN, f32::INFINITY, -0.0] {
        let mut inputs = inputs.clone();
        inputs[0] = bad;
        assert!(matches!(run(&inputs), Err(GpuError::BlendSpace(GpuBlendSpaceError::NotCanonical { index: 0, .. }))));
    }
    assert!(matches!(run(&[]), Err(GpuError::BlendSpace(GpuBlendSpaceError::Inputs { got: 0, .. }))));
    let short = GpuBlendSpace::new(&gpu.device, &trees.words()[..9]);
    assert!(matches!(short, Err(GpuBlendSpaceError::Table { got: 9, .. })), "{short:?}");
}
