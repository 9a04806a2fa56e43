//! Validation and compilation: [`GraphDesc`] → [`CompiledGraph`], collecting every problem.
//!
//! First every count and nesting limit is checked on the description alone, so an oversized
//! graph is refused before any per-element work. Then one pass builds the tables and records
//! problems as it meets them; a second pass sorts transitions into per-state candidate lists
//! and looks for zero-duration cycles. Any problem discards the tables, so half-built entries
//! never escape.
//!
//! This file is long on purpose (about 930 lines): validation and compilation are one pass that
//! records every problem where it meets it, so the checks sit beside the table entries they guard.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use glam::Vec2;

use super::format::{
    BlendTreeDesc, BlendTypeDesc, ChainWeightSourceDesc, ComparandDesc, ConditionDesc, ConditionValueDesc, EasingDesc,
    GraphDesc, InterruptionDesc, LayerBlendDesc, LayerDesc, LayerSpaceDesc, ParameterTypeDesc, PredicateDesc,
    StateDesc, SwitchDesc, SwitchModeDesc, TransitionDesc,
};
use super::tables::*;
use super::*;
use crate::blend_space::{BlendSpace, MAX_BLEND_CHILDREN};

/// What a name means inside one machine.
#[derive(Clone, Copy)]
enum Node {
    State(u16),
    Sub(u16),
    Start,
    End,
    Any,
}

struct Compiler {
    problems: Vec<GraphProblem>,
    g: CompiledGraph,
    default_switch: (SwitchMode, Easing),
    /// Every full path of the current layer (states, sub-machines, blend children) and what
    /// it names, so two entries whose names spell one path are refused.
    paths: HashMap<String, String>,
}

fn problem(problems: &mut Vec<GraphProblem>, at: &Location, kind: ProblemKind) {
    problems.push(GraphProblem { at: at.clone(), kind });
}

fn too_many(problems: &mut Vec<GraphProblem>, at: &Location, what: &'static str, count: usize, limit: usize) {
    if count > limit {
        problem(problems, at, ProblemKind::TooMany { what, count, limit });
    }
}

/// Checks every count and nesting limit on the description alone, before any per-element
/// work, so a graph over a limit is refused in time linear in its size (a blend tree of 100k
/// children is not compared child by child). The walk keeps its own stacks, so a description
/// built in code nested arbitrarily deep cannot overflow the call stack.
fn limits(desc: &GraphDesc) -> Vec<GraphProblem> {
    let mut problems = Vec::new();
    let root = Location::default();
    too_many(&mut problems, &root, "layers", desc.layers.len(), MAX_LAYERS);
    too_many(&mut problems, &root, "parameters", desc.parameters.len(), MAX_PARAMETERS);
    let triggers = desc.parameters.iter().filter(|p| p.kind == ParameterTypeDesc::Trigger).count();
    too_many(&mut problems, &root, "TRIGGER parameters", triggers, MAX_TRIGGERS);
    if desc.layers.len() > MAX_LAYERS {
        return problems;
    }
    let (mut num_states, mut num_transitions) = (0, 0);
    for layer in &desc.layers {
        let layer_at = Location { layer: Some(layer.name.clone()), ..Location::default() };
        let mut machines = vec![(String::new(), &layer.states[..], &layer.transitions[..], 0)];
        while let Some((path, states, transitions, depth)) = machines.pop() {
            let machine_at = Location { machine: (!path.is_empty()).then(|| path.clone()), ..layer_at.clone() };
            num_transitions += transitions.len();
            for (index, t) in transitions.iter().enumerate() {
                let count = t.conditions.len() + t.condition_groups.iter().map(Vec::len).sum::<usize>();
                if count > MAX_CONDITIONS {
                    let at = Location { transition: Some(index), ..machine_at.clone() };
                    too_many(&mut problems, &at, "conditions", count, MAX_CONDITIONS);
                }
            }
            for s in states {
                if matches!(s.name.as_str(), "START" | "END" | "ANY") {
                    continue;
                }
                let at = || Location { state: Some(join(&path, &s.name)), ..machine_at.clone() };
                match (&s.machine, &s.blend_tree) {
                    (Some(m), _) if depth < MAX_MACHINE_DEPTH => {
                        machines.push((join(&path, &s.name), &m.states[..], &m.transitions[..], depth + 1));
                    }
                    (Some(_), _) => problem(&mut problems, &at(), ProblemKind::TooDeep),
                    (None, tree) => {
                        num_states += 1;
                        if let Some(tree) = tree {
                            tree_limits(tree, &at(), &mut problems);
                        }
                    }
                }
            }
        }
    }
    too_many(&mut problems, &root, "states", num_states, MAX_STATES);
    too_many(&mut problems, &root, "transitions", num_transitions, MAX_TRANSITIONS);
    problems
}

/// A state's blend tree against the per-tree child, per-state node and per-state clip limits.
fn tree_limits(root: &BlendTreeDesc, at: &Location, problems: &mut Vec<GraphProblem>) {
    let (mut widest, mut nodes, mut leaves) = (0, 1, 0);
    let mut trees = vec![root];
    while let Some(tree) = trees.pop() {
        widest = widest.max(tree.children.len());
        nodes += tree.children.len();
        for child in &tree.children {
            match &child.tree {
                Some(sub) => trees.push(sub),
                None => leaves += 1,
            }
        }
    }
    too_many(problems, at, "children in one blend tree", widest, MAX_BLEND_CHILDREN);
    too_many(problems, at, "blend-tree nodes", nodes, MAX_NODES_PER_STATE);
    too_many(problems, at, "clips in one state", leaves, MAX_LEAVES_PER_STATE);
}

/// The path of `name` inside the machine or tree at `parent` (the top machine's is empty).
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}.{name}") }
}

pub(super) fn compile(desc: &GraphDesc) -> Result<CompiledGraph, GraphError> {
    let problems = limits(desc);
    if !problems.is_empty() {
        return Err(GraphError::Invalid { problems });
    }
    let mut c = Compiler {
        problems: Vec::new(),
        g: CompiledGraph {
            id: CompiledGraph::next_id(),
            parameters: Vec::new(),
            num_columns: [0; 4],
            layers: Vec::new(),
            states: Vec::new(),
            machines: Vec::new(),
            transitions: Vec::new(),
            candidates: Vec::new(),
            conditions: Vec::new(),
            condition_groups: Vec::new(),
            nodes: Vec::new(),
            spaces: Vec::new(),
            space_info: Vec::new(),
            direct_params: Vec::new(),
            leaves: Vec::new(),
            default_switch: (SwitchMode::Crossfade, Easing::Linear),
            chain_weights: Vec::new(),
        },
        default_switch: (SwitchMode::Crossfade, Easing::Linear),
        paths: HashMap::new(),
    };
    let root = Location::default();
    if let Some(s) = &desc.default_switch {
        c.default_switch = c.switch(s, &root);
        c.g.default_switch = c.default_switch;
    }
    c.parameters(desc);
    if desc.layers.is_empty() {
        problem(&mut c.problems, &root, ProblemKind::NoLayers);
    }
    for (i, layer) in desc.layers.iter().enumerate() {
        if desc.layers[..i].iter().any(|l| l.name == layer.name) {
            let at = Location { layer: Some(layer.name.clone()), ..Location::default() };
            problem(&mut c.problems, &at, ProblemKind::DuplicateName { what: "layer", name: layer.name.clone() });
        }
        c.layer(i, layer);
    }
    c.chain_weights(desc);
    // `limits` counted the authored transitions; each machine without a START transition
    // adds one more.
    too_many(&mut c.problems, &root, "transitions", c.g.transitions.len(), MAX_TRANSITIONS);
    if c.problems.is_empty() {
        c.candidates();
        c.cycles();
    }
    if c.problems.is_empty() { Ok(c.g) } else { Err(GraphError::Invalid { problems: c.problems }) }
}

impl Compiler {
    /// `chainWeights`: each chain bound once, to a FLOAT parameter or to a curve on a layer
    /// the graph has.
    fn chain_weights(&mut self, desc: &GraphDesc) {
        for (i, w) in desc.chain_weights.iter().enumerate() {
            let root = Location::default();
            if desc.chain_weights[..i].iter().any(|other| other.chain == w.chain) {
                problem(
                    &mut self.problems,
                    &root,
                    ProblemKind::DuplicateName { what: "chainWeights chain", name: w.chain.to_string() },
                );
            }
            let source = match &w.source {
                ChainWeightSourceDesc::Parameter(name) => {
                    let Some(slot) = self.param(name, &root) else { continue };
                    if slot.kind != ParamKind::Float {
                        let at = Location { parameter: Some(name.clone()), ..root };
                        let kind = ProblemKind::ChainWeightParameterType {
                            chain: w.chain.to_string(),
                            parameter_type: slot.kind.name(),
                        };
                        problem(&mut self.problems, &at, kind);
                    }
                    ChainWeightSource::Parameter(slot)
                }
                ChainWeightSourceDesc::Curve { curve, layer } => {
                    let index = match layer {
                        None => Some(0),
                        Some(name) => desc.layers.iter().position(|l| &l.name == name),
                    };
                    let Some(index) = index else {
                        let at = Location { layer: layer.clone(), ..root };
                        problem(&mut self.problems, &at, ProblemKind::UnknownLayer { chain: w.chain.to_string() });
                        continue;
                    };
                    ChainWeightSource::Curve { curve: curve.clone(), layer: index as u16 }
                }
            };
            self.g.chain_weights.push(ChainWeight { chain: w.chain, source });
        }
    }

    fn parameters(&mut self, desc: &GraphDesc) {
        let mut params: Vec<_> = desc.parameters.iter().collect();
        params.sort_by(|a, b| a.name.cmp(&b.name));
        for (i, p) in params.iter().enumerate() {
            let at = Location { parameter: Some(p.name.clone()), ..Location::default() };
            if i > 0 && params[i - 1].name == p.name {
                problem(
                    &mut self.problems,
                    &at,
                    ProblemKind::DuplicateName { what: "parameter", name: p.name.clone() },
                );
            }
            let kind = match p.kind {
                ParameterTypeDesc::Float => ParamKind::Float,
                ParameterTypeDesc::Integer => ParamKind::Int,
                ParameterTypeDesc::Boolean => ParamKind::Bool,
                ParameterTypeDesc::Trigger => ParamKind::Trigger,
            };
            let default = match (kind, p.value) {
                (ParamKind::Float, None) => Some(ParamValue::Float(0.0)),
                (ParamKind::Float, Some(ConditionValueDesc::Number(v))) if (v as f32).is_finite() => {
                    Some(ParamValue::Float(v as f32))
                }
                (ParamKind::Int, None) => Some(ParamValue::Int(0)),
                (ParamKind::Int, Some(ConditionValueDesc::Number(v)))
                    if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) =>
                {
                    Some(ParamValue::Int(v as i32))
                }
                (ParamKind::Bool, None) => Some(ParamValue::Bool(false)),
                (ParamKind::Bool, Some(ConditionValueDesc::Bool(b))) => Some(ParamValue::Bool(b)),
                (ParamKind::Trigger, None) => Some(ParamValue::Trigger(false)),
                (ParamKind::Trigger, Some(ConditionValueDesc::Bool(b))) => Some(ParamValue::Trigger(b)),
                _ => None,
            };
            // A bad default is reported but the parameter still declared, so conditions that
            // read it are checked against its type rather than reported as unknown.
            let default = default.unwrap_or_else(|| {
                let value = p.value.map_or_else(String::new, |v| value_text(&v));
                let problem_kind = ProblemKind::ParameterDefault { parameter_type: kind.name(), value };
                problem(&mut self.problems, &at, problem_kind);
                match kind {
                    ParamKind::Float => ParamValue::Float(0.0),
                    ParamKind::Int => ParamValue::Int(0),
                    ParamKind::Bool => ParamValue::Bool(false),
                    ParamKind::Trigger => ParamValue::Trigger(false),
                }
            });
            let column = self.g.num_columns[kind as usize];
            self.g.num_columns[kind as usize] += 1;
            self.g.parameters.push(Parameter { name: p.name.clone(), slot: ParamSlot { kind, column }, default });
        }
    }

    fn param(&mut self, name: &str, at: &Location) -> Option<ParamSlot> {
        let found = self.g.parameters.iter().find(|p| p.name == name).map(|p| p.slot);
        if found.is_none() {
            let at = Location { parameter: Some(name.to_owned()), ..at.clone() };
            problem(&mut self.problems, &at, ProblemKind::UnknownParameter { name: name.to_owned() });
        }
        found
    }

    fn switch(&mut self, s: &SwitchDesc, at: &Location) -> (SwitchMode, Easing) {
        let mut bad = |message: &str| {
            problem(&mut self.problems, at, ProblemKind::BadSwitch { message: message.to_owned() });
        };
        let easing = match s.easing {
            EasingDesc::Linear => Easing::Linear,
            EasingDesc::Smoothstep => Easing::Smoothstep,
            EasingDesc::CubicBezier([x1, y1, x2, y2]) => match CubicBezier::new(x1, y1, x2, y2) {
                Some(curve) => Easing::CubicBezier(curve),
                None => {
                    bad("`cubicBezier` is [x1, y1, x2, y2], each in [0, 1]");
                    Easing::Linear
                }
            },
        };
        if s.mode != SwitchModeDesc::Inertialize && (s.quintic.is_some() || s.spring.is_some()) {
            bad("`quintic` and `spring` apply to mode \"inertialize\" only");
        }
        let mode = match s.mode {
            SwitchModeDesc::Cut => SwitchMode::Cut,
            SwitchModeDesc::Frozen => SwitchMode::Frozen,
            SwitchModeDesc::Crossfade => SwitchMode::Crossfade,
            SwitchModeDesc::Inertialize => SwitchMode::Inertialize(match (s.quintic, s.spring) {
                (Some(_), Some(_)) => {
                    bad("an inertialized switch is `quintic` or `spring`, not both");
                    Inertialization::Quintic { overshoot_control: false }
                }
                (Some(q), None) => Inertialization::Quintic { overshoot_control: q.overshoot_control },
                (None, Some(sp)) => {
                    if !(sp.halflife.is_finite() && sp.halflife >= 0.0) {
                        bad("spring `halflife` is seconds, finite and ≥ 0");
                    }
                    Inertialization::Spring { halflife_s: sp.halflife }
                }
                (None, None) => Inertialization::Quintic { overshoot_control: false },
            }),
        };
        (mode, easing)
    }

    /// Records that `path` names `what` in the current layer; a path already taken by another
    /// entry is a problem naming both.
    fn claim(&mut self, path: String, what: String, at: &Location) {
        match self.paths.entry(path) {
            Entry::Occupied(taken) => {
                let kind =
                    ProblemKind::AmbiguousPath { path: taken.key().clone(), first: taken.get().clone(), second: what };
                problem(&mut self.problems, at, kind);
            }
            Entry::Vacant(free) => {
                free.insert(what);
            }
        }
    }

    fn layer(&mut self, index: usize, desc: &LayerDesc) {
        self.paths.clear();
        let at = Location { layer: Some(desc.name.clone()), ..Location::default() };
        let weight = desc.weight.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&weight) {
            problem(&mut self.problems, &at, ProblemKind::BadLayerWeight { weight });
        }
        let mut mask = Vec::new();
        for (joint, &w) in desc.mask.iter().flatten() {
            if !(0.0..=1.0).contains(&w) {
                problem(&mut self.problems, &at, ProblemKind::BadMaskWeight { joint: joint.clone(), weight: w });
            }
            mask.push((joint.clone(), w));
        }
        let weight_param = desc.weight_parameter.as_ref().and_then(|name| {
            let slot = self.param(name, &at)?;
            if slot.kind != ParamKind::Float {
                let at = Location { parameter: Some(name.clone()), ..at.clone() };
                problem(&mut self.problems, &at, ProblemKind::WeightParameterType { parameter_type: slot.kind.name() });
            }
            Some(slot)
        });
        let slot = desc.slot.unwrap_or(false);
        if slot && index == 0 {
            problem(&mut self.problems, &at, ProblemKind::BaseLayerSlot);
        }
        let first_state = self.g.states.len() as u32;
        let root = self.g.machines.len() as u16;
        self.g.layers.push(Layer {
            name: desc.name.clone(),
            blend: match desc.blend_type {
                Some(LayerBlendDesc::Additive) => LayerBlend::Additive,
                _ => LayerBlend::Override,
            },
            weight,
            weight_param,
            mask,
            space: match desc.space {
                Some(LayerSpaceDesc::Mesh) => LayerSpace::Mesh,
                _ => LayerSpace::Local,
            },
            states: Span::default(),
            root,
            max_leaves: 0,
            slot,
        });
        self.machine(index as u16, NO_INDEX, String::new(), &desc.states, &desc.transitions, &at, 0);
        let states = Span { start: first_state, end: self.g.states.len() as u32 };
        let max_leaves = self.g.states[states.range()].iter().map(|s| s.leaves.len() as u32).max().unwrap_or(0);
        if let Some(layer) = self.g.layers.last_mut() {
            layer.states = states;
            layer.max_leaves = max_leaves;
        }
    }

    /// Compiles one machine and, depth first, its sub-machines; returns its index.
    #[allow(clippy::too_many_arguments)]
    fn machine(
        &mut self,
        layer: u16,
        parent: u16,
        path: String,
        states: &[StateDesc],
        transitions: &[TransitionDesc],
        layer_at: &Location,
        depth: usize,
    ) -> u16 {
        let me = self.g.machines.len() as u16;
        self.g.machines.push(Machine {
            name: path.clone(),
            layer,
            parent,
            entry: Span::default(),
            exit: Span::default(),
        });
        let machine_at = Location { machine: (!path.is_empty()).then(|| path.clone()), ..layer_at.clone() };
        let mut names: HashMap<&str, Node> = HashMap::new();
        let mut defaults = Vec::new();
        for s in states {
            let full = join(&path, &s.name);
            let at = Location { state: Some(full.clone()), ..machine_at.clone() };
            let control = matches!(s.name.as_str(), "START" | "END" | "ANY");
            // A duplicate is reported as such below, not also as a path collision.
            if !control && !names.contains_key(s.name.as_str()) {
                let kind = if s.machine.is_some() { "sub-machine" } else { "state" };
                let what = if path.is_empty() {
                    format!("{kind} {:?}", s.name)
                } else {
                    format!("{kind} {:?} of sub-machine {path:?}", s.name)
                };
                self.claim(full.clone(), what, &at);
            }
            let node = match s.name.as_str() {
                "START" => Node::Start,
                "END" => Node::End,
                "ANY" => Node::Any,
                _ => match &s.machine {
                    Some(m) => {
                        if s.blend_tree.is_some() {
                            problem(&mut self.problems, &at, ProblemKind::TreeAndMachine);
                        }
                        debug_assert!(depth < MAX_MACHINE_DEPTH, "`limits` refuses machines nested deeper");
                        Node::Sub(self.machine(layer, me, full.clone(), &m.states, &m.transitions, layer_at, depth + 1))
                    }
                    None => Node::State(self.state(layer, me, &full, s, &at)),
                },
            };
            if names.insert(s.name.as_str(), node).is_some() {
                problem(&mut self.problems, &at, ProblemKind::DuplicateName { what: "state", name: s.name.clone() });
            }
            if s.default_state && matches!(node, Node::State(_) | Node::Sub(_)) {
                defaults.push((s.name.clone(), node));
            }
        }
        let mut has_entry = false;
        let mut takable_entry = false;
        for (index, t) in transitions.iter().enumerate() {
            let at = Location { transition: Some(index), ..machine_at.clone() };
            let from = match names.get(t.from.as_str()) {
                None => {
                    problem(&mut self.problems, &at, ProblemKind::UnknownState { name: t.from.clone() });
                    None
                }
                Some(Node::End) => {
                    problem(&mut self.problems, &at, ProblemKind::TransitionFromEnd);
                    None
                }
                Some(Node::State(s)) => Some(Source::State(*s)),
                Some(Node::Sub(m)) => Some(Source::Machine(*m)),
                Some(Node::Any) => Some(Source::Any(me)),
                Some(Node::Start) => Some(Source::Start(me)),
            };
            let to = match names.get(t.to.as_str()) {
                None => {
                    problem(&mut self.problems, &at, ProblemKind::UnknownState { name: t.to.clone() });
                    None
                }
                Some(Node::Any) => {
                    problem(&mut self.problems, &at, ProblemKind::TransitionToAny);
                    None
                }
                Some(Node::Start) => {
                    problem(&mut self.problems, &at, ProblemKind::TransitionToStart);
                    None
                }
                Some(Node::End) if matches!(from, Some(Source::Start(_))) => {
                    problem(&mut self.problems, &at, ProblemKind::StartToEnd);
                    None
                }
                Some(Node::End) if parent == NO_INDEX => Some(Target::Entry(me)),
                Some(Node::End) => Some(Target::Exit(me)),
                Some(Node::State(s)) => Some(Target::State(*s)),
                Some(Node::Sub(m)) => Some(Target::Entry(*m)),
            };
            let compiled = self.transition(layer, me, index, t, &at);
            if let (Some(from), Some(to), Some(mut compiled)) = (from, to, compiled) {
                self.check_exit_time(&compiled, from, &at);
                if let Source::Start(_) = from {
                    has_entry = true;
                    takable_entry |= compiled.unconditional();
                }
                compiled.self_transition = t.from == t.to && matches!(from, Source::State(_) | Source::Machine(_));
                compiled.from = from;
                compiled.to = to;
                self.g.transitions.push(compiled);
            }
        }
        if !has_entry {
            match defaults.as_slice() {
                [] => problem(&mut self.problems, &machine_at, ProblemKind::NoDefaultState),
                [(_, node)] => {
                    let to = match node {
                        Node::Sub(m) => Target::Entry(*m),
                        Node::State(s) => Target::State(*s),
                        _ => Target::Entry(me),
                    };
                    self.g.transitions.push(synthetic_entry(layer, me, to));
                }
                many => {
                    let names = many.iter().map(|(n, _)| n.clone()).collect();
                    problem(&mut self.problems, &machine_at, ProblemKind::AmbiguousDefaultState { names });
                }
            }
        } else if !takable_entry {
            problem(&mut self.problems, &machine_at, ProblemKind::NoAlwaysTakableEntry);
        }
        me
    }

    fn check_exit_time(&mut self, t: &Transition, from: Source, at: &Location) {
        let e = t.exit_time;
        let reason = if !e.is_finite() || e < 0.0 {
            Some("it is negative or not finite")
        } else if e == 0.0 {
            None
        } else {
            match from {
                Source::Start(_) => Some("START has no clock"),
                Source::Machine(_) => Some("a sub-state machine has no clock of its own"),
                Source::State(s) if self.g.states.get(s as usize).is_some_and(|s| s.speed == 0.0) => {
                    Some("the state's speed is 0, so its progress never moves")
                }
                _ => None,
            }
        };
        if let Some(reason) = reason {
            problem(&mut self.problems, at, ProblemKind::UnreachableExitTime { exit_time: e, reason });
        }
    }

    fn transition(
        &mut self,
        layer: u16,
        machine: u16,
        index: usize,
        t: &TransitionDesc,
        at: &Location,
    ) -> Option<Transition> {
        let mut ok = true;
        if !(t.time.is_finite() && t.time >= 0.0) {
            problem(&mut self.problems, at, ProblemKind::BadDuration { time: t.time });
            ok = false;
        }
        if !(0.0..=1.0).contains(&t.offset) {
            problem(&mut self.problems, at, ProblemKind::BadOffset { offset: t.offset });
            ok = false;
        }
        let (switch, easing) = match &t.switch {
            Some(s) => self.switch(s, at),
            None => self.default_switch,
        };
        let mut triggers = 0u64;
        let mut compares_parameters = false;
        let conditions = self.conditions(&t.conditions, at, &mut triggers, &mut compares_parameters, &mut ok);
        let first_group = self.g.condition_groups.len() as u32;
        for (gi, group) in t.condition_groups.iter().enumerate() {
            let at = Location { group: Some(gi), ..at.clone() };
            if group.is_empty() {
                problem(&mut self.problems, &at, ProblemKind::EmptyConditionGroup);
                ok = false;
            }
            let mut group_triggers = 0u64;
            let conditions = self.conditions(group, &at, &mut group_triggers, &mut compares_parameters, &mut ok);
            self.g.condition_groups.push(ConditionGroup { conditions, triggers: group_triggers });
        }
        let groups = Span { start: first_group, end: self.g.condition_groups.len() as u32 };
        ok.then_some(Transition {
            layer,
            machine,
            index: index as u32,
            from: Source::Any(machine),
            to: Target::Entry(machine),
            self_transition: false,
            duration: t.time,
            normalized: t.duration_unit == super::format::DurationUnitDesc::Normalized,
            exit_time: t.exit_time.unwrap_or(0.0),
            offset: t.offset,
            interruption: match t.interruption {
                InterruptionDesc::None => Interruption::None,
                InterruptionDesc::Prev => Interruption::Prev,
                InterruptionDesc::Next => Interruption::Next,
                InterruptionDesc::PrevNext => Interruption::PrevNext,
                InterruptionDesc::NextPrev => Interruption::NextPrev,
            },
            priority: t.priority,
            conditions,
            triggers,
            groups,
            compares_parameters,
            switch,
            easing,
            sync: match t.sync {
                None => PhaseSync::Offset,
                Some(super::format::SyncDesc::Phase) => PhaseSync::Phase,
                Some(super::format::SyncDesc::Marker) => PhaseSync::Marker,
            },
        })
    }

    /// Compiles one list of conditions (a transition's `conditions` or one of its groups) into
    /// `self.g.conditions`, adding the trigger bits they read to `triggers`, setting
    /// `compares_parameters` for a parameter-against-parameter condition, and clearing `ok` on
    /// a problem.
    fn conditions(
        &mut self,
        list: &[ConditionDesc],
        at: &Location,
        triggers: &mut u64,
        compares_parameters: &mut bool,
        ok: &mut bool,
    ) -> Span {
        let first = self.g.conditions.len() as u32;
        for (ci, c) in list.iter().enumerate() {
            let at = Location { condition: Some(ci), ..at.clone() };
            let Some(slot) = self.param(&c.parameter, &at) else {
                *ok = false;
                continue;
            };
            let predicate = match c.predicate {
                PredicateDesc::GreaterThan => Predicate::GreaterThan,
                PredicateDesc::LessThan => Predicate::LessThan,
                PredicateDesc::GreaterThanEqualTo => Predicate::GreaterThanEqualTo,
                PredicateDesc::LessThanEqualTo => Predicate::LessThanEqualTo,
                PredicateDesc::EqualTo => Predicate::EqualTo,
                PredicateDesc::NotEqualTo => Predicate::NotEqualTo,
            };
            let equality = matches!(predicate, Predicate::EqualTo | Predicate::NotEqualTo);
            let bit =
                |slot: ParamSlot| if slot.kind == ParamKind::Trigger { 1u64 << (slot.column as u32 % 64) } else { 0 };
            let literal = match &c.value {
                ComparandDesc::Value(v) => *v,
                ComparandDesc::Parameter(other) => {
                    let Some(other_slot) = self.param(&other.parameter, &at) else {
                        *ok = false;
                        continue;
                    };
                    let boolean = matches!(slot.kind, ParamKind::Bool | ParamKind::Trigger);
                    if other_slot.kind != slot.kind || (boolean && !equality) {
                        let kind = ProblemKind::ComparedParameters {
                            parameter_type: slot.kind.name(),
                            predicate: predicate_name(predicate),
                            other: other.parameter.clone(),
                            other_type: other_slot.kind.name(),
                        };
                        let at = Location { parameter: Some(c.parameter.clone()), ..at };
                        problem(&mut self.problems, &at, kind);
                        *ok = false;
                        continue;
                    }
                    *triggers |= bit(slot) | bit(other_slot);
                    *compares_parameters = true;
                    self.g.conditions.push(Condition {
                        param: slot,
                        predicate,
                        against: Some(other_slot),
                        value: 0.0,
                        value_f32: 0.0,
                    });
                    continue;
                }
            };
            let value = match (slot.kind, literal) {
                (ParamKind::Float | ParamKind::Int, ConditionValueDesc::Number(v)) if v.is_finite() => Some(v),
                (ParamKind::Bool | ParamKind::Trigger, ConditionValueDesc::Bool(b)) if equality => {
                    Some(if b { 1.0 } else { 0.0 })
                }
                _ => None,
            };
            let Some(value) = value else {
                let kind = ProblemKind::ConditionType {
                    parameter_type: slot.kind.name(),
                    predicate: predicate_name(predicate),
                    value: value_text(&literal),
                };
                let at = Location { parameter: Some(c.parameter.clone()), ..at };
                problem(&mut self.problems, &at, kind);
                *ok = false;
                continue;
            };
            *triggers |= bit(slot);
            self.g.conditions.push(Condition { param: slot, predicate, against: None, value, value_f32: value as f32 });
        }
        Span { start: first, end: self.g.conditions.len() as u32 }
    }

    fn state(&mut self, layer: u16, machine: u16, path: &str, s: &StateDesc, at: &Location) -> u16 {
        let speed = s.speed.unwrap_or(1.0);
        if !speed.is_finite() {
            let reason = "a state's speed is finite (negative plays backwards)";
            problem(&mut self.problems, at, ProblemKind::BadSpeed { speed, reason });
        }
        let speed_param = s.speed_parameter.as_ref().and_then(|name| {
            let slot = self.param(name, at)?;
            if slot.kind != ParamKind::Float {
                let at = Location { parameter: Some(name.clone()), ..at.clone() };
                problem(&mut self.problems, &at, ProblemKind::SpeedParameterType { parameter_type: slot.kind.name() });
            }
            Some(slot)
        });
        let index = self.g.states.len() as u16;
        let first_node = self.g.nodes.len() as u32;
        let first_leaf = self.g.leaves.len() as u32;
        let sync = match &s.blend_tree {
            None => {
                self.g.nodes.push(MotionNode::Leaf(first_leaf));
                self.g.leaves.push(Leaf { path: path.to_owned(), state: index, speed: 1.0 });
                true
            }
            Some(tree) => {
                self.tree(index, path, tree, at);
                tree.sync
            }
        };
        let nodes = Span { start: first_node, end: self.g.nodes.len() as u32 };
        let leaves = Span { start: first_leaf, end: self.g.leaves.len() as u32 };
        self.g.states.push(State {
            name: path.to_owned(),
            layer,
            machine,
            speed,
            speed_param,
            looping: s.looping.unwrap_or(true),
            sync,
            root_motion: s.root_motion,
            nodes,
            leaves,
            own: Span::default(),
            any: Span::default(),
        });
        index
    }

    /// Lays a blend tree out breadth-first so each tree's children are contiguous.
    fn tree(&mut self, state: u16, path: &str, root: &BlendTreeDesc, at: &Location) {
        let root_index = self.g.nodes.len();
        self.g.nodes.push(MotionNode::Leaf(u32::MAX));
        let mut queue = std::collections::VecDeque::from([(root, path.to_owned(), root_index)]);
        while let Some((tree, tree_path, node_index)) = queue.pop_front() {
            let bad = |problems: &mut Vec<GraphProblem>, message: String| {
                problem(problems, at, ProblemKind::BlendTree { node: tree_path.clone(), message });
            };
            let direct = tree.kind == BlendTypeDesc::Direct;
            let dims = if tree.kind == BlendTypeDesc::OneD { 1 } else { 2 };
            if direct && tree.parameters.len() != tree.children.len() {
                let message = format!(
                    "a DIRECT tree reads one parameter per child: {} parameter(s), {} children",
                    tree.parameters.len(),
                    tree.children.len()
                );
                bad(&mut self.problems, message);
            } else if !direct && tree.parameters.len() != dims {
                bad(
                    &mut self.problems,
                    format!("a {dims}D tree reads {dims} parameter(s), {} given", tree.parameters.len()),
                );
            }
            let mut slots = Vec::with_capacity(tree.parameters.len());
            for name in &tree.parameters {
                if let Some(slot) = self.param(name, at) {
                    if matches!(slot.kind, ParamKind::Bool | ParamKind::Trigger) {
                        let at = Location { parameter: Some(name.clone()), ..at.clone() };
                        problem(
                            &mut self.problems,
                            &at,
                            ProblemKind::BlendParameterType { parameter_type: slot.kind.name() },
                        );
                    }
                    slots.push(slot);
                }
            }
            if tree.children.is_empty() {
                bad(&mut self.problems, "a blend tree has no children".to_owned());
            }
            for (i, child) in tree.children.iter().enumerate() {
                if tree.children[..i].iter().any(|c| c.name == child.name) {
                    bad(&mut self.problems, format!("two children are named {:?}", child.name));
                } else {
                    let what = format!("blend child {:?} of {tree_path:?}", child.name);
                    self.claim(join(&tree_path, &child.name), what, at);
                }
                if !direct && child.point.len() != dims {
                    bad(&mut self.problems, format!("child {:?} needs a {dims}D point", child.name));
                }
            }
            let built = if direct { None } else { Some(self.space(tree, dims)) };
            let (space, order) = match built {
                None => (None, (0..tree.children.len()).collect()),
                Some(Ok((space, order, info))) => (Some((space, info)), order),
                Some(Err(message)) => {
                    bad(&mut self.problems, message);
                    continue;
                }
            };
            let first_child = self.g.nodes.len() as u32;
            for &ci in &order {
                let Some(child) = tree.children.get(ci) else { continue };
                let child_path = format!("{tree_path}.{}", child.name);
                let child_node = self.g.nodes.len();
                match &child.tree {
                    Some(sub) => {
                        self.g.nodes.push(MotionNode::Leaf(u32::MAX));
                        queue.push_back((sub, child_path, child_node));
                    }
                    None => {
                        let speed = child.speed.unwrap_or(1.0);
                        if !(speed.is_finite() && speed > 0.0) {
                            let reason = "a blend child's speed is finite and > 0";
                            let at = Location { state: Some(child_path.clone()), ..at.clone() };
                            problem(&mut self.problems, &at, ProblemKind::BadSpeed { speed, reason });
                        }
                        let leaf = self.g.leaves.len() as u32;
                        self.g.leaves.push(Leaf { path: child_path, state, speed });
                        self.g.nodes.push(MotionNode::Leaf(leaf));
                    }
                }
            }
            let children = Span { start: first_child, end: self.g.nodes.len() as u32 };
            let node = match space {
                Some((space, info)) => {
                    let space_index = self.g.spaces.len() as u32;
                    self.g.spaces.push(space);
                    self.g.space_info.push(info);
                    let fallback = ParamSlot { kind: ParamKind::Float, column: 0 };
                    let params =
                        [slots.first().copied().unwrap_or(fallback), slots.get(1).copied().unwrap_or(fallback)];
                    MotionNode::Tree { space: space_index, params, children }
                }
                None => {
                    let start = self.g.direct_params.len() as u32;
                    self.g.direct_params.extend(slots);
                    MotionNode::Direct { params: Span { start, end: self.g.direct_params.len() as u32 }, children }
                }
            };
            if let Some(slot) = self.g.nodes.get_mut(node_index) {
                *slot = node;
            }
        }
    }

    /// The blend space of a tree and the order its children take in it.
    fn space(&self, tree: &BlendTreeDesc, dims: usize) -> Result<(BlendSpace, Vec<usize>, SpaceInfo), String> {
        if tree.children.iter().any(|c| c.point.len() != dims) {
            return Err("points do not match the tree's dimensions".to_owned());
        }
        let xs: Vec<f32> = tree.children.iter().map(|c| c.point[0]).collect();
        let pts: Vec<Vec2> =
            tree.children.iter().map(|c| Vec2::new(c.point[0], *c.point.get(1).unwrap_or(&0.0))).collect();
        let authored: Vec<usize> = (0..tree.children.len()).collect();
        let kind = match tree.kind {
            BlendTypeDesc::OneD => BlendKind::OneD,
            BlendTypeDesc::Cartesian => BlendKind::Cartesian,
            BlendTypeDesc::Directional => BlendKind::Directional,
            BlendTypeDesc::Freeform => BlendKind::Freeform,
            BlendTypeDesc::Grid => BlendKind::Grid,
            BlendTypeDesc::Direct => return Err("a DIRECT tree has no blend space".to_owned()),
        };
        let built = match tree.kind {
            BlendTypeDesc::OneD => BlendSpace::one_d(xs),
            BlendTypeDesc::Cartesian => BlendSpace::cartesian(pts.clone()),
            BlendTypeDesc::Directional => BlendSpace::directional(pts.clone()),
            BlendTypeDesc::Freeform => BlendSpace::freeform(pts.clone()),
            BlendTypeDesc::Direct => return Err("a DIRECT tree has no blend space".to_owned()),
            BlendTypeDesc::Grid => {
                let mut gx: Vec<f32> = pts.iter().map(|p| p.x).collect();
                let mut gy: Vec<f32> = pts.iter().map(|p| p.y).collect();
                for axis in [&mut gx, &mut gy] {
                    axis.sort_by(f32::total_cmp);
                    axis.dedup();
                }
                if gx.len() * gy.len() != pts.len() {
                    return Err(format!(
                        "a grid needs one child at every (x, y) of its {} columns × {} rows; {} children given",
                        gx.len(),
                        gy.len(),
                        pts.len()
                    ));
                }
                let mut order = vec![usize::MAX; pts.len()];
                for (i, p) in pts.iter().enumerate() {
                    let ix = gx.iter().position(|&x| x == p.x).unwrap_or(0);
                    let iy = gy.iter().position(|&y| y == p.y).unwrap_or(0);
                    let slot = iy * gx.len() + ix;
                    if order[slot] != usize::MAX {
                        return Err(format!("two children sit at ({}, {})", p.x, p.y));
                    }
                    order[slot] = i;
                }
                let info = SpaceInfo { kind: BlendKind::Grid, points: order.iter().map(|&i| pts[i]).collect() };
                return BlendSpace::grid(gx, gy).map(|s| (s, order, info)).map_err(|e| e.to_string());
            }
        };
        built.map(|s| (s, authored, SpaceInfo { kind, points: pts })).map_err(|e| e.to_string())
    }

    /// Sorts each source's transitions by priority then list order into `candidates`.
    fn candidates(&mut self) {
        let mut order: Vec<u16> = (0..self.g.transitions.len() as u16).collect();
        let key = |t: &Transition| (t.priority, t.machine, t.index);
        order.sort_by(|&a, &b| {
            let (ka, kb) = (key(&self.g.transitions[a as usize]), key(&self.g.transitions[b as usize]));
            ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1)).then(ka.2.cmp(&kb.2))
        });
        let of = |g: &CompiledGraph, pick: &dyn Fn(Source) -> bool| -> Vec<u16> {
            order.iter().copied().filter(|&t| pick(g.transitions[t as usize].from)).collect()
        };
        let mut candidates = Vec::new();
        let mut push = |list: Vec<u16>| {
            let start = candidates.len() as u32;
            candidates.extend(list);
            Span { start, end: candidates.len() as u32 }
        };
        let mut any_chain = Vec::with_capacity(self.g.machines.len());
        for m in 0..self.g.machines.len() {
            let mut chain = Vec::new();
            let mut cursor = m as u16;
            while cursor != NO_INDEX {
                chain.extend(of(&self.g, &|s| s == Source::Any(cursor)));
                cursor = self.g.machines[cursor as usize].parent;
            }
            any_chain.push(push(chain));
            let mi = m as u16;
            self.g.machines[m].entry = push(of(&self.g, &|s| s == Source::Start(mi)));
            self.g.machines[m].exit = push(of(&self.g, &|s| s == Source::Machine(mi)));
        }
        for s in 0..self.g.states.len() {
            let si = s as u16;
            self.g.states[s].own = push(of(&self.g, &|src| src == Source::State(si)));
            self.g.states[s].any = any_chain[self.g.states[s].machine as usize];
        }
        self.g.candidates = candidates;
    }

    /// Statically follows a target through always-takable entries and exits.
    fn resolve_static(&self, mut target: Target) -> Option<u16> {
        for _ in 0..4 * (MAX_MACHINE_DEPTH + 1) {
            let first_takable = |span: Span| {
                self.g.candidates[span.range()]
                    .iter()
                    .map(|&t| &self.g.transitions[t as usize])
                    .find(|t| t.unconditional())
                    .map(|t| t.to)
            };
            target = match target {
                Target::State(s) => return Some(s),
                Target::Entry(m) => first_takable(self.g.machines[m as usize].entry)?,
                Target::Exit(m) => first_takable(self.g.machines[m as usize].exit).unwrap_or(Target::Entry(m)),
            };
        }
        None
    }

    /// Finds loops of transitions that would each be taken at once with zero duration.
    fn cycles(&mut self) {
        let n = self.g.states.len();
        let mut next = vec![None; n];
        for (s, state) in self.g.states.iter().enumerate() {
            let list = self.g.candidates[state.own.range()].iter().chain(&self.g.candidates[state.any.range()]);
            for &t in list {
                let tr = &self.g.transitions[t as usize];
                if !tr.always_takable() {
                    continue;
                }
                let Some(to) = self.resolve_static(tr.to) else { break };
                if to as usize == s && !tr.self_transition {
                    continue;
                }
                if tr.duration == 0.0 || tr.switch == SwitchMode::Cut {
                    next[s] = Some((to as usize, t));
                }
                break;
            }
        }
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut mark = vec![0u8; n];
        for start in 0..n {
            let mut walk = Vec::new();
            let mut cursor = start;
            while mark[cursor] == 0 {
                mark[cursor] = 1;
                walk.push(cursor);
                match next[cursor] {
                    Some((to, _)) => cursor = to,
                    None => break,
                }
            }
            if mark[cursor] == 1
                && next[cursor].is_some()
                && let Some(pos) = walk.iter().position(|&s| s == cursor)
            {
                let states: Vec<String> = walk[pos..].iter().map(|&s| self.g.states[s].name.clone()).collect();
                let state = &self.g.states[cursor];
                let t = next[cursor].map(|(_, t)| &self.g.transitions[t as usize]);
                let machine = &self.g.machines[state.machine as usize].name;
                let at = Location {
                    layer: self.g.layers.get(state.layer as usize).map(|l| l.name.clone()),
                    state: Some(state.name.clone()),
                    machine: (!machine.is_empty()).then(|| machine.clone()),
                    transition: t.map(|t| t.index as usize),
                    ..Location::default()
                };
                problem(&mut self.problems, &at, ProblemKind::ZeroDurationCycle { states });
            }
            for &s in &walk {
                mark[s] = 2;
            }
        }
    }
}

/// The cycles of transitions taken at once with zero duration in an already compiled graph
/// (after `edit` changed its timings), as the compiler reports them; the graph comes back as
/// it went in.
pub(super) fn zero_duration_cycles(g: CompiledGraph) -> (CompiledGraph, Vec<GraphProblem>) {
    let mut c = Compiler { problems: Vec::new(), default_switch: g.default_switch, paths: HashMap::new(), g };
    c.cycles();
    (c.g, c.problems)
}

fn synthetic_entry(layer: u16, machine: u16, to: Target) -> Transition {
    Transition {
        layer,
        machine,
        index: u32::MAX,
        from: Source::Start(machine),
        to,
        self_transition: false,
        duration: 0.0,
        normalized: false,
        exit_time: 0.0,
        offset: 0.0,
        interruption: Interruption::None,
        priority: 0.0,
        conditions: Span::default(),
        triggers: 0,
        groups: Span::default(),
        compares_parameters: false,
        switch: SwitchMode::Cut,
        easing: Easing::Linear,
        sync: PhaseSync::Offset,
    }
}

fn predicate_name(p: Predicate) -> &'static str {
    match p {
        Predicate::GreaterThan => "GREATER_THAN",
        Predicate::LessThan => "LESS_THAN",
        Predicate::GreaterThanEqualTo => "GREATER_THAN_EQUAL_TO",
        Predicate::LessThanEqualTo => "LESS_THAN_EQUAL_TO",
        Predicate::EqualTo => "EQUAL_TO",
        Predicate::NotEqualTo => "NOT_EQUAL_TO",
    }
}

fn value_text(v: &ConditionValueDesc) -> String {
    match v {
        ConditionValueDesc::Bool(b) => b.to_string(),
        ConditionValueDesc::Number(n) => n.to_string(),
    }
}
