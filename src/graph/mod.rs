//! State graphs: the authoring format (PlayCanvas's JSON, both forms), validation, and the
//! flat tables the state step runs.
//!
//! ```text
//! JSON text ──► format::GraphDesc ──► compile (validate every rule) ──► CompiledGraph
//!  runtime or    one normalised         all problems reported with      flat Vecs, index
//!  editor form   description            layer/state/transition/param    spans, no strings
//!                                                                        on the hot path
//! ```
//!
//! This module knows nothing of characters or clips: `state` runs a [`CompiledGraph`], and an
//! archetype binds its leaves (see [`CompiledGraph::leaves`]) to clips.
//!
//! # Example
//! ```
//! use throng::graph::CompiledGraph;
//!
//! let graph = CompiledGraph::from_json(r#"{
//!     "layers": [{
//!         "name": "Base",
//!         "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
//!         "transitions": [
//!             { "from": "START", "to": "Idle" },
//!             { "from": "Idle", "to": "Walk", "time": 0.2,
//!               "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }] }
//!         ]
//!     }],
//!     "parameters": { "speed": { "name": "speed", "type": "FLOAT", "value": 0 } }
//! }"#).unwrap();
//! assert_eq!(graph.states().len(), 2);
//! assert!(graph.parameter("speed").is_some());
//! ```

mod compile;
mod edit;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
mod tables;
mod trees;

use std::fmt;

pub use edit::{EditError, TransitionTiming};
pub use tables::*;

/// Most layers one graph may have.
pub const MAX_LAYERS: usize = 16;
/// Most animation states one graph may have, over all layers and sub-machines.
pub const MAX_STATES: usize = 1024;
/// Most transitions one graph may have, over all layers and sub-machines.
pub const MAX_TRANSITIONS: usize = 8192;
/// Most parameters one graph may have.
pub const MAX_PARAMETERS: usize = 256;
/// Most TRIGGER parameters one graph may have: a character's triggers are one 64-bit word.
pub const MAX_TRIGGERS: usize = 64;
/// Most conditions one transition may have.
pub const MAX_CONDITIONS: usize = 32;
/// Most clips (blend-tree leaves) one state may blend.
pub const MAX_LEAVES_PER_STATE: usize = crate::blend_space::MAX_BLEND_CHILDREN;
/// Most blend-tree nodes (trees and leaves) one state may have.
pub const MAX_NODES_PER_STATE: usize = 128;
/// Deepest nesting of sub-state machines.
pub const MAX_MACHINE_DEPTH: usize = 8;
/// Deepest nesting of JSON arrays and objects [`format::GraphDesc::from_value`] reads (the
/// root container is level 1). serde_json's text parser stops at 127, so every graph that
/// loads from text fits; this guards values built in code.
pub const MAX_JSON_DEPTH: usize = 128;

/// Why a state graph could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The text is not JSON.
    #[error("state graph JSON, line {line}, column {column}: {message}")]
    Json {
        /// Line of the syntax error, from 1.
        line: usize,
        /// Column of the syntax error, from 1.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// The JSON is not shaped like a state graph.
    #[error("state graph at {path}: {message}")]
    Shape {
        /// JSON path of the offending element, e.g. `layers[0].transitions[3]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The JSON nests arrays and objects deeper than [`MAX_JSON_DEPTH`]; found before any of
    /// it is read, without recursion, so a value built in code cannot overflow the stack.
    #[error("state graph at {path}: arrays and objects nest deeper than {limit} levels")]
    TooDeep {
        /// JSON path of the first array or object past the limit.
        path: String,
        /// The limit, [`MAX_JSON_DEPTH`].
        limit: usize,
    },
    /// The graph is well-formed JSON but breaks rules; every problem found is listed.
    #[error("state graph has {} problem(s):{}", problems.len(), ProblemList(problems))]
    Invalid {
        /// Every problem, in the order found (parameters, then layer by layer).
        problems: Vec<GraphProblem>,
    },
}

struct ProblemList<'a>(&'a [GraphProblem]);

impl fmt::Display for ProblemList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.0 {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

/// Where in a graph a problem is. Fields that do not apply are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// Layer name.
    pub layer: Option<String>,
    /// State path (`"Combat.Attack"` inside sub-machine `Combat`).
    pub state: Option<String>,
    /// Sub-machine path holding the transition, when not the layer's top machine.
    pub machine: Option<String>,
    /// Index of the transition in its machine's `transitions` list.
    pub transition: Option<usize>,
    /// Index of the group in its transition's `conditionGroups`, for a condition of a group.
    pub group: Option<usize>,
    /// Index of the condition in its transition's `conditions` (in its group's, with `group`).
    pub condition: Option<usize>,
    /// Parameter name.
    pub parameter: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(l) = &self.layer {
            parts.push(format!("layer {l:?}"));
        }
        if let Some(m) = &self.machine {
            parts.push(format!("machine {m:?}"));
        }
        if let Some(s) = &self.state {
            parts.push(format!("state {s:?}"));
        }
        if let Some(t) = self.transition {
            parts.push(format!("transition {t}"));
        }
        if let Some(g) = self.group {
            parts.push(format!("condition group {g}"));
        }
        if let Some(c) = self.condition {
            parts.push(format!("condition {c}"));
        }
        if let Some(p) = &self.parameter {
            parts.push(format!("parameter {p:?}"));
        }
        if parts.is_empty() { f.write_str("graph") } else { f.write_str(&parts.join(", ")) }
    }
}

/// One rule a graph breaks, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{at}: {kind}")]
pub struct GraphProblem {
    /// Where the problem is.
    pub at: Location,
    /// What the problem is.
    pub kind: ProblemKind,
}

/// What rule a graph breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The graph has no layer.
    #[error("the graph has no layers")]
    NoLayers,
    /// A limit of this module is exceeded.
    #[error("{count} {what}, more than the limit of {limit}")]
    TooMany {
        /// What is counted.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// Two layers, states (in one machine) or parameters share a name.
    #[error("duplicate {what} name {name:?}")]
    DuplicateName {
        /// What kind of thing.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A transition names a state its machine does not have.
    #[error("no state named {name:?} in this machine")]
    UnknownState {
        /// The name.
        name: String,
    },
    /// A condition or blend tree names an undeclared parameter.
    #[error("no parameter named {name:?}")]
    UnknownParameter {
        /// The name.
        name: String,
    },
    /// A condition's value does not suit its parameter's type, or its predicate orders a boolean.
    #[error("a {parameter_type} parameter cannot be compared with {predicate} {value}")]
    ConditionType {
        /// The parameter's type.
        parameter_type: &'static str,
        /// The predicate.
        predicate: &'static str,
        /// The value, as written.
        value: String,
    },
    /// A condition compares two parameters of different types, or orders two booleans.
    #[error("a {parameter_type} parameter cannot be compared with {predicate} the {other_type} parameter {other:?}")]
    ComparedParameters {
        /// The parameter's type.
        parameter_type: &'static str,
        /// The predicate.
        predicate: &'static str,
        /// The parameter compared with.
        other: String,
        /// Its type.
        other_type: &'static str,
    },
    /// A transition's condition group holds no condition (it would always hold).
    #[error("a condition group holds no condition")]
    EmptyConditionGroup,
    /// A parameter's default value does not suit its type.
    #[error("default value {value} does not suit a {parameter_type} parameter")]
    ParameterDefault {
        /// The parameter's type.
        parameter_type: &'static str,
        /// The value, as written.
        value: String,
    },
    /// A blend tree reads a BOOLEAN or TRIGGER parameter.
    #[error("a blend tree reads numbers; {parameter_type} cannot drive it")]
    BlendParameterType {
        /// The parameter's type.
        parameter_type: &'static str,
    },
    /// A `chainWeights` entry's parameter is not a FLOAT parameter.
    #[error("chain {chain:?}'s weight parameter must be FLOAT; {parameter_type} cannot drive a weight")]
    ChainWeightParameterType {
        /// The chain, as the graph names it.
        chain: String,
        /// The parameter's type.
        parameter_type: &'static str,
    },
    /// A `chainWeights` entry's curve names a layer the graph does not have.
    #[error("chain {chain:?}'s curve is blended on a layer the graph does not have")]
    UnknownLayer {
        /// The chain, as the graph names it.
        chain: String,
    },
    /// A layer's `weightParameter` is not a FLOAT parameter.
    #[error("a layer's weightParameter must be FLOAT; {parameter_type} cannot scale a weight")]
    WeightParameterType {
        /// The parameter's type.
        parameter_type: &'static str,
    },
    /// The base layer is declared a `slot`: it always shows fully, so a one-shot could not
    /// blend in over anything.
    #[error("the base layer cannot be a slot; one-shots play on a layer above it")]
    BaseLayerSlot,
    /// A state's `speedParameter` is not a FLOAT parameter.
    #[error("a state's speedParameter must be FLOAT; {parameter_type} cannot scale a speed")]
    SpeedParameterType {
        /// The parameter's type.
        parameter_type: &'static str,
    },
    /// A transition leads to ANY.
    #[error("a transition leads to ANY; nothing can")]
    TransitionToAny,
    /// A transition leads to START.
    #[error("a transition leads to START; nothing can")]
    TransitionToStart,
    /// A transition leaves END.
    #[error("a transition leaves END; END returns to START by itself")]
    TransitionFromEnd,
    /// START leads to END.
    #[error("START leads to END")]
    StartToEnd,
    /// A duration is negative or not finite.
    #[error("duration {time} is negative or not finite")]
    BadDuration {
        /// The duration as written.
        time: f32,
    },
    /// An offset lies outside [0, 1] or is not finite.
    #[error("transitionOffset {offset} lies outside [0, 1]")]
    BadOffset {
        /// The offset.
        offset: f32,
    },
    /// An exit time can never open its gate.
    #[error("exit time {exit_time} can never be reached: {reason}")]
    UnreachableExitTime {
        /// The exit time.
        exit_time: f32,
        /// Why.
        reason: &'static str,
    },
    /// A state speed or blend-child speed is negative, zero where it must not be, or not finite.
    #[error("speed {speed} is not allowed: {reason}")]
    BadSpeed {
        /// The speed.
        speed: f32,
        /// Why.
        reason: &'static str,
    },
    /// A layer weight outside [0, 1].
    #[error("layer weight {weight} lies outside [0, 1]")]
    BadLayerWeight {
        /// The weight.
        weight: f32,
    },
    /// A mask weight outside [0, 1].
    #[error("mask weight {weight} for joint {joint:?} lies outside [0, 1]")]
    BadMaskWeight {
        /// The joint name.
        joint: String,
        /// The weight.
        weight: f32,
    },
    /// The machine has neither a START transition nor a `defaultState`.
    #[error("no default state: START has no transition and no state sets defaultState")]
    NoDefaultState,
    /// Several states set `defaultState` and START has no transition to choose.
    #[error("states {names:?} all set defaultState")]
    AmbiguousDefaultState {
        /// The states.
        names: Vec<String>,
    },
    /// The machine's entry (START) has transitions, none of which can always be taken.
    #[error("every START transition has conditions, so the entry can hover; add one without")]
    NoAlwaysTakableEntry,
    /// Transitions that need no condition, no exit time and no time form a loop, so the
    /// state would change every update.
    #[error("zero-duration unconditional transitions form a cycle through {states:?}")]
    ZeroDurationCycle {
        /// The states on the cycle, in order.
        states: Vec<String>,
    },
    /// A blend tree is malformed.
    #[error("blend tree {node:?}: {message}")]
    BlendTree {
        /// Path of the tree or child, `"State.Child"`.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// A switch's options do not fit its mode.
    #[error("switch: {message}")]
    BadSwitch {
        /// What is wrong.
        message: String,
    },
    /// Sub-state machines nest deeper than [`MAX_MACHINE_DEPTH`].
    #[error("sub-state machines nest deeper than {MAX_MACHINE_DEPTH}")]
    TooDeep,
    /// Two entries of one layer have the same full path: a name holding `.` spells the path
    /// of a sub-machine's state or of a blend child (`"Move.Walk"` beside blend state `Move`
    /// with child `Walk`), so the path (clip binding, `state_index`, trace keys) would be
    /// ambiguous.
    #[error("path {path:?} names both {first} and {second}")]
    AmbiguousPath {
        /// The full path both entries have.
        path: String,
        /// The entry met first, e.g. `state "Move.Walk"`.
        first: String,
        /// The entry met second, e.g. `blend child "Walk" of "Move"`.
        second: String,
    },
    /// A state has both a `blendTree` and a sub-machine (`states`/`transitions`); it is one
    /// or the other.
    #[error("a state has both a blendTree and a sub-machine (states/transitions); it can be only one")]
    TreeAndMachine,
}

impl CompiledGraph {
    /// Reads, validates and compiles JSON text in either PlayCanvas form.
    ///
    /// # Errors
    /// [`GraphError::Json`], [`GraphError::Shape`] or [`GraphError::Invalid`] listing every
    /// problem found.
    pub fn from_json(text: &str) -> Result<Self, GraphError> {
        Self::compile(&format::GraphDesc::from_json(text)?)
    }

    /// Validates and compiles a description.
    ///
    /// # Errors
    /// [`GraphError::Invalid`] listing every problem found.
    pub fn compile(desc: &format::GraphDesc) -> Result<Self, GraphError> {
        compile::compile(desc)
    }
}
