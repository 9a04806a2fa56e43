//! Compiled state graphs: flat tables with index spans, what the state step reads each frame.
//!
//! Indices are graph-global: states, transitions, machines, nodes and leaves of every layer
//! live in one `Vec` each, and each layer, state and machine holds [`Span`]s into them.

use crate::blend_space::BlendSpace;

/// "No index" in `u16` index fields.
pub const NO_INDEX: u16 = u16::MAX;

/// A half-open index range `start..end` into one of the graph's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First index.
    pub start: u32,
    /// One past the last index.
    pub end: u32,
}

impl Span {
    /// The span as a `usize` range, for slicing.
    #[must_use]
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// Number of indices.
    #[must_use]
    pub fn len(self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    /// Whether the span holds nothing.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

/// A parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `f32`.
    Float,
    /// `i32`.
    Int,
    /// `bool`.
    Bool,
    /// A bool that a taken transition resets; bit `column` of a character's trigger word.
    Trigger,
}

impl ParamKind {
    /// The PlayCanvas spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Float => "FLOAT",
            Self::Int => "INTEGER",
            Self::Bool => "BOOLEAN",
            Self::Trigger => "TRIGGER",
        }
    }
}

/// A parameter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue {
    /// A float.
    Float(f32),
    /// An integer.
    Int(i32),
    /// A boolean.
    Bool(bool),
    /// A trigger: set or not.
    Trigger(bool),
}

/// Where a parameter's values live: its kind and its column among parameters of that kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamSlot {
    /// The kind, which picks the column family.
    pub kind: ParamKind,
    /// Column among parameters of `kind` (the bit, for triggers).
    pub column: u16,
}

/// A declared parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// Name, unique in the graph.
    pub name: String,
    /// Where its values live.
    pub slot: ParamSlot,
    /// The value a new character starts with.
    pub default: ParamValue,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// `>`
    GreaterThan,
    /// `<`
    LessThan,
    /// `>=`
    GreaterThanEqualTo,
    /// `<=`
    LessThanEqualTo,
    /// `==`
    EqualTo,
    /// `!=`
    NotEqualTo,
}

impl Predicate {
    /// Applies the comparison; false when either side is NaN, except `!=`.
    #[must_use]
    #[inline]
    pub fn test<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Self::GreaterThan => a > b,
            Self::LessThan => a < b,
            Self::GreaterThanEqualTo => a >= b,
            Self::LessThanEqualTo => a <= b,
            Self::EqualTo => a == b,
            Self::NotEqualTo => a != b,
        }
    }
}

/// One condition of a transition: `parameter predicate value`, or `parameter predicate other`
/// when it compares two parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Condition {
    /// The parameter read.
    pub param: ParamSlot,
    /// The comparison.
    pub predicate: Predicate,
    /// A parameter of the same kind compared with instead of the value (`"value":
    /// {"parameter": …}`); `value` and `value_f32` are then 0.
    pub against: Option<ParamSlot>,
    /// The value for INTEGER parameters (compared exactly in `f64`); 0/1 for booleans.
    pub value: f64,
    /// The value for FLOAT parameters, rounded once to `f32` so that a parameter set to the
    /// same literal compares equal.
    pub value_f32: f32,
}

/// One group of a transition's `conditionGroups`: its conditions all hold for the group to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConditionGroup {
    /// Its conditions in [`CompiledGraph::conditions`].
    pub conditions: Span,
    /// Trigger bits its conditions read; consumed when the group holds and the transition is taken.
    pub triggers: u64,
}

/// Which transitions may interrupt one in flight (PlayCanvas `interruptionSource`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Interruption {
    /// Nothing interrupts; the transition runs to its end.
    #[default]
    None,
    /// The source state's transitions, then ANY's.
    Prev,
    /// The destination state's transitions, then ANY's.
    Next,
    /// The source's, the destination's, then ANY's.
    PrevNext,
    /// The destination's, the source's, then ANY's.
    NextPrev,
}

/// How a transition's weight moves from 0 to 1.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Easing {
    /// `w = p`.
    #[default]
    Linear,
    /// `w = p²(3 − 2p)`: no kink at either end.
    Smoothstep,
    /// CSS's `cubic-bezier(x1, y1, x2, y2)`.
    CubicBezier(CubicBezier),
}

impl Easing {
    /// The eased weight for linear progress `p` in [0, 1].
    #[must_use]
    #[inline]
    pub fn apply(self, p: f32) -> f32 {
        let p = p.clamp(0.0, 1.0);
        match self {
            Self::Linear => p,
            Self::Smoothstep => p * p * (3.0 - 2.0 * p),
            Self::CubicBezier(curve) => curve.apply(p),
        }
    }
}

/// A cubic Bézier easing curve as CSS's `cubic-bezier(x1, y1, x2, y2)`: the curve from (0, 0)
/// to (1, 1) with control points (x1, y1) and (x2, y2), read as `y` at `x` = progress.
///
/// Every coordinate lies in [0, 1], so the curve is a function of `x` and its `y` never leaves
/// [0, 1] (CSS allows `y` outside; a transition weight may not overshoot). Within those bounds
/// the curve is also non-decreasing.
///
/// ```
/// use throng::graph::CubicBezier;
///
/// let ease = CubicBezier::new(0.25, 0.1, 0.25, 1.0).expect("in bounds");
/// assert_eq!(ease.apply(0.0), 0.0);
/// assert_eq!(ease.apply(1.0), 1.0);
/// assert!((ease.apply(0.5) - 0.802_403_4).abs() < 1e-6);
/// assert!(CubicBezier::new(1.5, 0.0, 0.5, 1.0).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicBezier {
    x1: f32,
    y1: f32,
    x2: f32,
    y2: f32,
}

impl CubicBezier {
    /// The curve with control points (x1, y1) and (x2, y2); `None` unless all four are in
    /// [0, 1] (NaN is not).
    #[must_use]
    pub fn new(x1: f32, y1: f32, x2: f32, y2: f32) -> Option<Self> {
        [x1, y1, x2, y2].iter().all(|v| (0.0..=1.0).contains(v)).then_some(Self { x1, y1, x2, y2 })
    }

    /// The control points as `[x1, y1, x2, y2]`.
    #[must_use]
    pub fn points(self) -> [f32; 4] {
        [self.x1, self.y1, self.x2, self.y2]
    }

    /// `y` where the curve's `x` is `x` (clamped to [0, 1], NaN read as 0); exactly 0 and 1 at
    /// the ends.
    ///
    /// Solves `x(t) = x` in `f64` by Newton's method from `t = x`, falling back to bisection
    /// (which always converges, `x(t)` being non-decreasing) when a step leaves the bracket or
    /// the slope vanishes.
    #[must_use]
    pub fn apply(self, x: f32) -> f32 {
        let x = f64::from(x);
        if x.is_nan() || x <= 0.0 {
            return 0.0;
        }
        if x >= 1.0 {
            return 1.0;
        }
        // Power-basis coefficients of B(t) = 3(1−t)²t·p1 + 3(1−t)t²·p2 + t³.
        let coefficients = |p1: f32, p2: f32| {
            let c = 3.0 * f64::from(p1);
            let b = 3.0 * (f64::from(p2) - f64::from(p1)) - c;
            (1.0 - c - b, b, c)
        };
        let (ax, bx, cx) = coefficients(self.x1, self.x2);
        let (ay, by, cy) = coefficients(self.y1, self.y2);
        let x_at = |t: f64| ((ax * t + bx) * t + cx) * t;
        let (mut lo, mut hi, mut t) = (0.0_f64, 1.0_f64, x);
        for _ in 0..64 {
            let error = x_at(t) - x;
            if error.abs() < 1e-12 {
                break;
            }
            if error < 0.0 {
                lo = t;
            } else {
                hi = t;
            }
            let slope = (3.0 * ax * t + 2.0 * bx) * t + cx;
            let newton = t - error / slope;
            t = if slope > 1e-9 && newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
        }
        (((ay * t + by) * t + cy) * t).clamp(0.0, 1.0) as f32
    }
}

/// How an inertialized switch decays its offset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Inertialization {
    /// Bollo's quintic over the transition's duration.
    Quintic {
        /// Pick the starting acceleration and clamp the duration so the offset never overshoots.
        overshoot_control: bool,
    },
    /// A critically damped spring.
    Spring {
        /// Time for the offset to halve, seconds, ≥ 0 (0 = cut).
        halflife_s: f32,
    },
}

/// How the pose moves from the old state to the new one (the pose side is the evaluators').
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SwitchMode {
    /// The new state at once.
    Cut,
    /// Fade from a snapshot of the last displayed pose.
    Frozen,
    /// Both states evaluated, weights eased.
    Crossfade,
    /// The new state alone plus a decaying offset.
    Inertialize(Inertialization),
}

/// Where a transition leads, resolved when it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// An animation state.
    State(u16),
    /// A machine's entry: its START transitions pick the state (the layer's END leads to its
    /// top machine's entry, so back to the default state).
    Entry(u16),
    /// A sub-machine's exit: the parent's transitions from the sub-machine pick the state, or
    /// its entry again when none can be taken.
    Exit(u16),
}

/// Where a transition starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// An animation state.
    State(u16),
    /// A machine's ANY.
    Any(u16),
    /// A machine's START (an entry transition).
    Start(u16),
    /// A sub-machine node in its parent (an exit transition).
    Machine(u16),
}

/// A compiled transition.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    /// Layer index.
    pub layer: u16,
    /// Machine that lists it.
    pub machine: u16,
    /// Index in that machine's authored `transitions` list.
    pub index: u32,
    /// Where it starts.
    pub from: Source,
    /// Where it leads.
    pub to: Target,
    /// Authored with `from == to`: restarts the state, the one way to re-enter the active state.
    pub self_transition: bool,
    /// Duration, seconds or normalized per `normalized`, ≥ 0.
    pub duration: f32,
    /// Whether `duration` is a fraction of the source state's duration.
    pub normalized: bool,
    /// Exit time as a fraction of the source state's duration; 0 = no gate.
    pub exit_time: f32,
    /// Where the destination starts, fraction of its duration in [0, 1].
    pub offset: f32,
    /// Which transitions may interrupt this one.
    pub interruption: Interruption,
    /// Priority as authored (lower first).
    pub priority: f64,
    /// Its conditions in [`CompiledGraph::conditions`], all of which must hold.
    pub conditions: Span,
    /// Trigger bits its conditions read; consumed when it is taken.
    pub triggers: u64,
    /// Its `conditionGroups` in [`CompiledGraph::condition_groups`]: when not empty, at least
    /// one of them must hold too (besides every condition of `conditions`).
    pub groups: Span,
    /// Whether a condition of `conditions` or `groups` compares two parameters. With it false
    /// and `groups` empty the state step tests the plain list of conditions alone.
    pub compares_parameters: bool,
    /// Switch mode.
    pub switch: SwitchMode,
    /// Where the destination starts, from the source's position (`sync`).
    pub sync: PhaseSync,
    /// Weight easing.
    pub easing: Easing,
}

/// How a transition lines its destination up with its source (`sync`, throng's sync groups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PhaseSync {
    /// At the transition's offset.
    #[default]
    Offset,
    /// At the source's normalised phase.
    Phase,
    /// As far before the destination's marker named as the source's next one as the source is
    /// before it, in fractions of each clip; at the offset when either clip lacks markers.
    Marker,
}

impl Transition {
    /// Neither conditions nor exit time: can be taken whenever it is considered.
    #[must_use]
    pub fn always_takable(&self) -> bool {
        self.unconditional() && self.exit_time <= 0.0
    }

    /// Neither conditions nor condition groups.
    #[must_use]
    pub fn unconditional(&self) -> bool {
        self.conditions.is_empty() && self.groups.is_empty()
    }
}

/// A node of a state's motion: one clip, or a blend tree weighting its children.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MotionNode {
    /// A clip slot: index into [`CompiledGraph::leaves`].
    Leaf(u32),
    /// A DIRECT blend tree: child `i` weighs `max(pᵢ, 0) / Σ max(pⱼ, 0)` (equal shares when
    /// every parameter is 0).
    Direct {
        /// One parameter per child in [`CompiledGraph::direct_params`].
        params: Span,
        /// Children in [`CompiledGraph::nodes`], contiguous.
        children: Span,
    },
    /// A blend tree.
    Tree {
        /// Index into [`CompiledGraph::spaces`].
        space: u32,
        /// Parameters read: x, and y for 2D trees (FLOAT or INTEGER).
        params: [ParamSlot; 2],
        /// Children in [`CompiledGraph::nodes`], contiguous (nodes are breadth-first).
        children: Span,
    },
}

/// A clip slot of a state, bound to a clip by an archetype.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    /// `"State"` for a single-clip state, `"State.Child"` (`"State.Tree.Child"` nested) in a tree.
    pub path: String,
    /// Owning state.
    pub state: u16,
    /// Speed multiplier of this clip (blend child `speed`), > 0.
    pub speed: f32,
}

/// How a blend tree turns its parameters into weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlendKind {
    /// Children on a line.
    OneD,
    /// Gradient band, Cartesian.
    Cartesian,
    /// Gradient band, polar.
    Directional,
    /// Barycentric on a Delaunay triangulation.
    Freeform,
    /// Rectangular grid, bilinear.
    Grid,
}

/// A blend tree's space as authored: its kind and its children's points in the order of the
/// tree's children (row-major for a grid). Kept beside the built [`BlendSpace`] so the graph
/// can be compared and the GPU can rebuild its own tables.
#[derive(Clone, Debug, PartialEq)]
pub struct SpaceInfo {
    /// The kind.
    pub kind: BlendKind,
    /// Each child's point (`y` = 0 in 1D).
    pub points: Vec<glam::Vec2>,
}

/// A compiled animation state.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// Path: the name, prefixed by enclosing sub-machines (`"Combat.Attack"`).
    pub name: String,
    /// Layer index.
    pub layer: u16,
    /// Innermost machine holding it.
    pub machine: u16,
    /// Playback speed multiplier, finite; negative plays backwards from the end.
    pub speed: f32,
    /// A FLOAT parameter multiplying `speed` each update (`speedParameter`); values below 0,
    /// and NaN, read as 0 (the state holds).
    pub speed_param: Option<ParamSlot>,
    /// Whether it loops; a state that does not holds its last frame.
    pub looping: bool,
    /// Whether its clips share one phase (blend-tree `syncAnimations`, true for single clips).
    pub sync: bool,
    /// Whether it extracts root motion (`rootMotion`).
    pub root_motion: bool,
    /// Motion nodes, breadth-first, root first.
    pub nodes: Span,
    /// Leaves, contiguous.
    pub leaves: Span,
    /// Own transitions in [`CompiledGraph::candidates`], priority order.
    pub own: Span,
    /// ANY transitions that apply (innermost machine's first) in [`CompiledGraph::candidates`].
    pub any: Span,
}

/// A state machine: a layer's top machine or a sub-state machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Path (`""` for a layer's top machine).
    pub name: String,
    /// Layer index.
    pub layer: u16,
    /// Parent machine, [`NO_INDEX`] for a layer's top machine.
    pub parent: u16,
    /// START's transitions in [`CompiledGraph::candidates`], priority order.
    pub entry: Span,
    /// The parent's transitions from this sub-machine, priority order.
    pub exit: Span,
}

/// How a layer combines with the layers below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LayerBlend {
    /// Replaces the pose below, by weight and mask.
    #[default]
    Override,
    /// Adds its difference from a reference pose.
    Additive,
}

/// Where a layer's masked joints blend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LayerSpace {
    /// Parent-relative.
    #[default]
    Local,
    /// Model space.
    Mesh,
}

/// A compiled layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Name, unique in the graph.
    pub name: String,
    /// Blend mode.
    pub blend: LayerBlend,
    /// Weight in [0, 1].
    pub weight: f32,
    /// A FLOAT parameter scaling `weight` per character (`weightParameter`).
    pub weight_param: Option<ParamSlot>,
    /// Mask as joint name → weight in [0, 1]; empty = every joint at 1.
    pub mask: Vec<(String, f32)>,
    /// Blend space for masked joints.
    pub space: LayerSpace,
    /// The layer's states, contiguous in [`CompiledGraph::states`].
    pub states: Span,
    /// The layer's top machine.
    pub root: u16,
    /// Most leaves of any of its states: a pose program reserves twice this per character.
    pub max_leaves: u32,
    /// Whether one-shots may play on the layer (`slot`, never the base layer).
    pub slot: bool,
}

impl Layer {
    /// Per-joint mask weights for a rig's joint names, in the rig's order.
    ///
    /// # Errors
    /// The first mask joint not in `joint_names`, as its name.
    pub fn mask_weights<S: AsRef<str>>(&self, joint_names: &[S]) -> Result<Vec<f32>, String> {
        if self.mask.is_empty() {
            return Ok(vec![1.0; joint_names.len()]);
        }
        let mut out = vec![0.0; joint_names.len()];
        for (joint, weight) in &self.mask {
            let j = joint_names.iter().position(|n| n.as_ref() == joint).ok_or_else(|| joint.clone())?;
            out[j] = *weight;
        }
        Ok(out)
    }
}

/// A procedural chain's weight bound by the graph (`chainWeights`), compiled: the chain as the
/// graph names it and its source, a FLOAT parameter's column or a curve by name with the layer
/// whose pose weights blend it. The chain and the curve are checked against a character's setup
/// and clips where those are known (`state::Crowd::chain_weight_bindings`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChainWeight {
    /// The chain.
    pub chain: super::format::ChainRef,
    /// What drives its weight.
    pub source: ChainWeightSource,
}

/// What drives a [`ChainWeight`].
#[derive(Clone, Debug, PartialEq)]
pub enum ChainWeightSource {
    /// A FLOAT parameter (its slot), clamped to [0, 1].
    Parameter(ParamSlot),
    /// The clips' curve called `curve`, blended by the weights of the pose layer `layer` shows,
    /// clamped to [0, 1].
    Curve {
        /// The curve's name.
        curve: String,
        /// The layer's index, base 0.
        layer: u16,
    },
}

/// A validated, compiled state graph, shared by every character that uses it (behind an
/// `Arc`; it is built once and never changes).
pub struct CompiledGraph {
    pub(crate) id: u64,
    pub(crate) parameters: Vec<Parameter>,
    pub(crate) num_columns: [u16; 4],
    pub(crate) layers: Vec<Layer>,
    pub(crate) states: Vec<State>,
    pub(crate) machines: Vec<Machine>,
    pub(crate) transitions: Vec<Transition>,
    pub(crate) candidates: Vec<u16>,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) condition_groups: Vec<ConditionGroup>,
    pub(crate) nodes: Vec<MotionNode>,
    pub(crate) spaces: Vec<BlendSpace>,
    pub(crate) space_info: Vec<SpaceInfo>,
    pub(crate) direct_params: Vec<ParamSlot>,
    pub(crate) leaves: Vec<Leaf>,
    /// The graph's `defaultSwitch` (crossfade, linear when absent): what transitions that do
    /// not say otherwise use, and what imperative transitions default to.
    pub(crate) default_switch: (SwitchMode, Easing),
    /// Procedural chain weights the graph binds (`chainWeights`), in list order.
    pub(crate) chain_weights: Vec<ChainWeight>,
}

impl std::fmt::Debug for CompiledGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("parameters", &self.parameters)
            .field("layers", &self.layers)
            .field("states", &self.states)
            .field("machines", &self.machines)
            .field("transitions", &self.transitions)
            .field("conditions", &self.conditions)
            .field("condition_groups", &self.condition_groups)
            .field("nodes", &self.nodes)
            .field("spaces", &self.space_info)
            .field("leaves", &self.leaves)
            .field("chain_weights", &self.chain_weights)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CompiledGraph {
    fn eq(&self, other: &Self) -> bool {
        self.parameters == other.parameters
            && self.layers == other.layers
            && self.states == other.states
            && self.machines == other.machines
            && self.transitions == other.transitions
            && self.candidates == other.candidates
            && self.conditions == other.conditions
            && self.condition_groups == other.condition_groups
            && self.nodes == other.nodes
            && self.space_info == other.space_info
            && self.direct_params == other.direct_params
            && self.leaves == other.leaves
            && self.default_switch == other.default_switch
            && self.chain_weights == other.chain_weights
    }
}

/// Source of [`CompiledGraph::id`].
static NEXT_GRAPH_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl CompiledGraph {
    /// A fresh identity for a newly compiled graph.
    pub(crate) fn next_id() -> u64 {
        NEXT_GRAPH_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Identity of this compiled graph, unique in the process: parameter ids resolved against
    /// one graph are refused by characters of another, even an equal one.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Parameters, sorted by name.
    #[must_use]
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// The parameter with this name.
    #[must_use]
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.binary_search_by(|p| p.name.as_str().cmp(name)).ok().map(|i| &self.parameters[i])
    }

    /// Number of value columns of a parameter kind (bits, for triggers).
    #[must_use]
    pub fn num_columns(&self, kind: ParamKind) -> usize {
        self.num_columns[kind as usize] as usize
    }

    /// Procedural chain weights the graph binds to a parameter or a curve (`chainWeights`),
    /// in list order; each chain at most once.
    #[must_use]
    pub fn chain_weights(&self) -> &[ChainWeight] {
        &self.chain_weights
    }

    /// Layers, base first.
    #[must_use]
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Whether layer `layer` needs the evaluators' per-character memory: a slot, or some
    /// transition of the layer with a positive duration and a switch mode other than a cut
    /// (a spring of halflife 0 is a cut). See [`crate::setup::layer_needs_memory`], which says
    /// why.
    #[must_use]
    pub fn layer_needs_memory(&self, layer: usize) -> bool {
        if self.layers.get(layer).is_some_and(|l| l.slot) {
            return true;
        }
        self.transitions.iter().filter(|t| usize::from(t.layer) == layer).any(|t| {
            let cut = matches!(
                t.switch,
                SwitchMode::Cut | SwitchMode::Inertialize(Inertialization::Spring { halflife_s: 0.0 })
            );
            t.duration > 0.0 && !cut
        })
    }

    /// Index of the layer with this name.
    #[must_use]
    pub fn layer_index(&self, name: &str) -> Option<usize> {
        self.layers.iter().position(|l| l.name == name)
    }

    /// Animation states of every layer.
    #[must_use]
    pub fn states(&self) -> &[State] {
        &self.states
    }

    /// Index of a state of layer `layer` by path.
    #[must_use]
    pub fn state_index(&self, layer: usize, name: &str) -> Option<usize> {
        let span = self.layers.get(layer)?.states;
        self.states[span.range()].iter().position(|s| s.name == name).map(|i| i + span.start as usize)
    }

    /// Machines: each layer's top machine and every sub-state machine.
    #[must_use]
    pub fn machines(&self) -> &[Machine] {
        &self.machines
    }

    /// Transitions of every layer.
    #[must_use]
    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    /// The switch mode and easing of transitions that name none (`defaultSwitch`; a crossfade,
    /// linear, when absent).
    #[must_use]
    pub fn default_switch(&self) -> (SwitchMode, Easing) {
        self.default_switch
    }

    /// Transition indices in priority order, which states' and machines' spans index.
    #[must_use]
    pub fn candidates(&self) -> &[u16] {
        &self.candidates
    }

    /// Conditions of every transition.
    #[must_use]
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Condition groups (`conditionGroups`) of every transition.
    #[must_use]
    pub fn condition_groups(&self) -> &[ConditionGroup] {
        &self.condition_groups
    }

    /// Motion nodes of every state.
    #[must_use]
    pub fn nodes(&self) -> &[MotionNode] {
        &self.nodes
    }

    /// Blend spaces of every blend tree.
    #[must_use]
    pub fn spaces(&self) -> &[BlendSpace] {
        &self.spaces
    }

    /// Each blend space's kind and points, parallel to [`CompiledGraph::spaces`].
    #[must_use]
    pub fn space_info(&self) -> &[SpaceInfo] {
        &self.space_info
    }

    /// Parameters of DIRECT blend trees, one per child.
    #[must_use]
    pub fn direct_params(&self) -> &[ParamSlot] {
        &self.direct_params
    }

    /// Clip slots of every state, which an archetype binds to clips.
    #[must_use]
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }
}
