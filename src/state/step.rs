//! The per-character state step: clocks, transition selection, blend weights, pose programs.
//!
//! One update of one layer, in this order (the order is part of the semantics; see
//! `docs/state-machine.md`):
//!
//! | step | what |
//! |------|------|
//! | 1 | the active state's clock advances by `dt × |speed| × rate` (a state that does not loop stops at its end); a synced state's rate reads its leaf weights from this update's parameters |
//! | 2 | a transition in flight: its source state's clock and its own clock advance; it ends when its clock reaches its duration |
//! | 3 | selection: at most one transition, in candidate order, whose exit-time gate is open and whose conditions hold |
//! | 4 | a taken transition starts at clock 0 with the destination at its offset |
//! | 5 | the layer's state record is written (`program::LayerRecord`; the evaluators expand it into the pose program and samples) |
//!
//! Triggers consumed by any layer are cleared after the character's last layer.
//!
//! This file is long on purpose (about 870 lines): the table's five steps are one update, in the
//! order that is the semantics, over the same per-layer columns; split by step, the order would live
//! in no single place.

use glam::Vec2;

use crate::blend_space::MAX_BLEND_CHILDREN;
use crate::blend_space::canonical_input;
use crate::graph::{
    CompiledGraph, Condition, Inertialization, Interruption, MAX_MACHINE_DEPTH, MAX_NODES_PER_STATE, MotionNode,
    NO_INDEX, ParamKind, ParamSlot, PhaseSync, Source, Span, State, SwitchMode, Target, Transition,
};
use crate::program::{self, LayerProgram, LayerRecord, NO_STATE, NO_TRANSITION, weighs};

use super::{AnimationEvent, Archetype, CharacterHandle};

/// Layer flag: the transition's source is the snapshot, not a state.
pub(crate) const FLAG_SNAPSHOT: u8 = 1;
/// Layer flag: the active state was entered on the last update (or the character spawned), so
/// its next advance fires events at its starting point too.
pub(crate) const FLAG_ENTERED: u8 = 2;
/// What animation LOD tells one character's step (`Crowd::set_update_rate`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lod {
    /// Seconds since the evaluators last saw the character, this update's included: the span an
    /// inertialization's velocity is measured over when it switches.
    pub elapsed_s: f32,
}

/// Most animation events one layer of one character reports per update. Each event of a clip
/// is reported at most once per update, however many loops the step crossed (its
/// [`AnimationEvent::count`] says how many times), so what a layer fires is bounded by its
/// clips' events and not by `dt`; this cap bounds that too: two sides of a transition, each a
/// 64-leaf blend tree whose clips have two events. Events past it are dropped, in the order
/// they would have come, and counted ([`super::Crowd::events_dropped`]).
pub const MAX_EVENTS_PER_LAYER_UPDATE: usize = 256;

/// Working weights reused from character to character of a chunk. Every entry is written
/// before it is read (leaf weights cover all of a state's leaves, and a tree's children are
/// weighted before they are visited), so nothing is cleared between characters.
pub(crate) struct Scratch {
    active_w: [f32; MAX_BLEND_CHILDREN],
    src_w: [f32; MAX_BLEND_CHILDREN],
    node_w: [f32; MAX_NODES_PER_STATE],
    child_w: [f32; MAX_BLEND_CHILDREN],
}

impl Scratch {
    pub(crate) const fn new() -> Self {
        Self {
            active_w: [0.0; MAX_BLEND_CHILDREN],
            src_w: [0.0; MAX_BLEND_CHILDREN],
            node_w: [0.0; MAX_NODES_PER_STATE],
            child_w: [0.0; MAX_BLEND_CHILDREN],
        }
    }
}

/// One character's parameter values, read in place from the columns.
pub(crate) struct ParamView<'a> {
    pub floats: &'a [Vec<f32>],
    pub ints: &'a [Vec<i32>],
    pub bools: &'a [Vec<bool>],
    pub row: usize,
}

impl ParamView<'_> {
    #[inline]
    fn number(&self, slot: ParamSlot, triggers: u64) -> f32 {
        let col = slot.column as usize;
        match slot.kind {
            // Direct column writes are unchecked; a NaN reads as 0 so no NaN reaches a program.
            ParamKind::Float => {
                let v = self.floats.get(col).and_then(|c| c.get(self.row)).copied().unwrap_or(0.0);
                if v.is_nan() { 0.0 } else { v }
            }
            ParamKind::Int => self.ints.get(col).and_then(|c| c.get(self.row)).map_or(0.0, |&v| v as f32),
            ParamKind::Bool => {
                f32::from(u8::from(self.bools.get(col).and_then(|c| c.get(self.row)).copied().unwrap_or(false)))
            }
            ParamKind::Trigger => f32::from(u8::from(triggers >> (col % 64) & 1 == 1)),
        }
    }

    /// An INTEGER parameter's value (0 for a missing column).
    #[inline]
    fn int(&self, slot: ParamSlot) -> i32 {
        self.ints.get(slot.column as usize).and_then(|col| col.get(self.row)).copied().unwrap_or(0)
    }
}

/// The mutable per-layer state of one character (one row of each layer column).
pub(crate) struct LayerSlot<'a> {
    pub active: &'a mut u16,
    pub previous: &'a mut u16,
    pub phase: &'a mut f32,
    pub loops: &'a mut u32,
    pub src_phase: &'a mut f32,
    pub src_loops: &'a mut u32,
    pub transition: &'a mut u16,
    /// An imperative transition to take on this update ([`NO_INDEX`] when none): an index past
    /// the graph's transitions, into [`StepContext::commands`].
    pub pending: &'a mut u16,
    pub trans_time_s: &'a mut f32,
    pub trans_duration_s: &'a mut f32,
    pub flags: &'a mut u8,
}

/// A clock reading before and after this update's advance, in total progress (loops + phase).
#[derive(Clone, Copy)]
struct Clock {
    before: f32,
    now: f32,
    looping: bool,
}

impl Clock {
    const STILL: Self = Self { before: 0.0, now: 0.0, looping: true };

    /// Whether exit time `e` lets a transition through on this update.
    #[inline]
    fn gate_open(self, e: f32) -> bool {
        if e <= 0.0 {
            true
        } else if !self.looping {
            self.now >= e.min(1.0)
        } else if e < 1.0 {
            let k = (self.now - e).floor();
            k >= 0.0 && k + e > self.before
        } else {
            self.before < e && e <= self.now
        }
    }
}

/// Leaf weights of `state` for this character's parameters, into `out[..leaves]`.
#[inline]
fn leaf_weights(
    g: &CompiledGraph,
    state: usize,
    params: &ParamView<'_>,
    triggers: u64,
    out: &mut [f32; MAX_BLEND_CHILDREN],
    node_w: &mut [f32; MAX_NODES_PER_STATE],
    child_w: &mut [f32; MAX_BLEND_CHILDREN],
) {
    let st = &g.states[state];
    if st.nodes.len() == 1 {
        out[0] = 1.0;
        return;
    }
    // One tree of leaves (the common blend space): its children are the leaves, in order.
    if st.nodes.len() == st.leaves.len() + 1
        && let Some(&MotionNode::Tree { space, params: p, children }) = g.nodes.get(st.nodes.start as usize)
    {
        let x = params.number(p[0], triggers);
        let y = params.number(p[1], triggers);
        g.spaces[space as usize].weights(Vec2::new(x, y), &mut out[..children.len()]);
        return;
    }
    let base = st.nodes.start as usize;
    node_w[0] = 1.0;
    for (n, node) in g.nodes[st.nodes.range()].iter().enumerate() {
        let w = node_w[n];
        match *node {
            MotionNode::Leaf(leaf) => {
                if let Some(o) = out.get_mut((leaf - st.leaves.start) as usize) {
                    *o = w;
                }
            }
            MotionNode::Direct { params: p, children } => {
                let count = children.len();
                let mut sum = 0.0f64;
                for (i, slot) in g.direct_params[p.range()].iter().enumerate() {
                    let v = params.number(*slot, triggers).clamp(0.0, f32::MAX);
                    child_w[i] = v;
                    sum += f64::from(v);
                }
                for (i, cw) in child_w[..count].iter().enumerate() {
                    let share = if sum > 0.0 { (f64::from(*cw) / sum) as f32 } else { 1.0 / count as f32 };
                    if let Some(slot) = node_w.get_mut(children.start as usize - base + i) {
                        *slot = w * share;
                    }
                }
            }
            MotionNode::Tree { space, params: p, children } => {
                let count = children.len();
                let x = params.number(p[0], triggers);
                let y = params.number(p[1], triggers);
                g.spaces[space as usize].weights(Vec2::new(x, y), &mut child_w[..count]);
                for (i, &cw) in child_w[..count].iter().enumerate() {
                    if let Some(slot) = node_w.get_mut(children.start as usize - base + i) {
                        *slot = w * cw;
                    }
                }
            }
        }
    }
}

/// Progress per second of playback at speed 1: `Σ wᵢ · speedᵢ / durationᵢ` for a synced state.
#[inline]
fn rate(arch: &Archetype, state: usize, weights: &[f32; MAX_BLEND_CHILDREN]) -> f32 {
    let st = &arch.graph.states[state];
    if !st.sync {
        return arch.state_unsynced_rate[state];
    }
    let rates = &arch.leaf_rate[st.leaves.range()];
    rates.iter().zip(weights.iter()).map(|(r, w)| r * w).sum()
}

/// A state's signed playback speed this update: its authored `speed`, times its speed
/// parameter's value when it has one (`speedParameter`; below 0 or NaN reads as 0, so the state
/// holds: the direction is the authored sign's).
#[inline]
fn state_speed(st: &State, params: &ParamView<'_>, triggers: u64) -> f32 {
    match st.speed_param {
        None => st.speed,
        Some(slot) => st.speed * params.number(slot, triggers).max(0.0),
    }
}

/// A normalized transition's length in seconds: `duration` (a fraction of the state's length)
/// at the state's `rate` (progress per second) times `|speed|`; a paused state (speed 0) at its
/// rate alone. A speed so small that the quotient overflows (a subnormal one) makes the
/// longest finite transition, as near-paused playback would: the program stays finite. A
/// zero duration stays a cut, even where the rate itself underflowed to 0.
fn normalized_duration_s(duration: f32, rate: f32, speed: f32) -> f32 {
    if duration == 0.0 {
        return 0.0;
    }
    let scaled = rate * speed.abs();
    // `f32::min` turns an infinite quotient into `f32::MAX`.
    (duration / if scaled > 0.0 { scaled } else { rate }).min(f32::MAX)
}

#[inline]
fn advance(phase: &mut f32, loops: &mut u32, delta: f32, looping: bool) -> Clock {
    // A huge but finite `dt` can overflow `dt × speed × rate` to infinity, and `∞ − ∞` would
    // make the phase NaN; the largest finite step already saturates the loop count.
    let delta = delta.min(f32::MAX);
    let before = *loops as f32 + *phase;
    if looping {
        let p = *phase + delta;
        let whole = p.floor();
        // A step so long that the phase is lost in rounding (or overflows) lands on phase 0;
        // the float-to-int cast saturates the loop count.
        let frac = p - whole;
        *phase = if frac.is_finite() { frac } else { 0.0 };
        *loops = loops.saturating_add(whole as u32);
    } else {
        *phase = (*phase + delta).min(1.0);
        *loops = 0;
    }
    Clock { before, now: *loops as f32 + *phase, looping }
}

/// Whether every condition of `span`, none comparing two parameters, holds.
#[inline]
fn conditions_hold(g: &CompiledGraph, span: Span, params: &ParamView<'_>, triggers: u64) -> bool {
    g.conditions[span.range()].iter().all(|c| literal_holds(c, params, triggers))
}

/// Whether a condition against its literal value holds.
#[inline(always)]
fn literal_holds(c: &Condition, params: &ParamView<'_>, triggers: u64) -> bool {
    match c.param.kind {
        ParamKind::Float => c.predicate.test(params.number(c.param, triggers), c.value_f32),
        ParamKind::Int => c.predicate.test(f64::from(params.int(c.param)), c.value),
        ParamKind::Bool | ParamKind::Trigger => c.predicate.test(f64::from(params.number(c.param, triggers)), c.value),
    }
}

/// Whether a transition's conditions hold and, when they do, the trigger bits taking it
/// consumes. A transition with neither condition groups nor parameter comparisons tests its
/// plain list, as it always has; the rest go out of line.
#[inline]
fn transition_holds(g: &CompiledGraph, tr: &Transition, params: &ParamView<'_>, triggers: u64) -> Option<u64> {
    if tr.groups.is_empty() && !tr.compares_parameters {
        return conditions_hold(g, tr.conditions, params, triggers).then_some(tr.triggers);
    }
    extended_holds(g, tr, params, triggers)
}

/// [`transition_holds`] for a transition with condition groups or parameter comparisons:
/// every condition of `conditions`, and at least one group when it has any. The triggers
/// consumed are those of `conditions` and of every group that holds.
#[inline(never)]
fn extended_holds(g: &CompiledGraph, tr: &Transition, params: &ParamView<'_>, triggers: u64) -> Option<u64> {
    let all = |span: Span| g.conditions[span.range()].iter().all(|c| condition_holds(c, params, triggers));
    if !all(tr.conditions) {
        return None;
    }
    if tr.groups.is_empty() {
        return Some(tr.triggers);
    }
    let held = g.condition_groups[tr.groups.range()].iter().filter(|group| all(group.conditions));
    held.fold(None, |used, group| Some(used.unwrap_or(tr.triggers) | group.triggers))
}

/// Whether a condition holds, against its literal or the parameter it compares with (of the
/// same kind, as validation guarantees).
fn condition_holds(c: &Condition, params: &ParamView<'_>, triggers: u64) -> bool {
    let Some(other) = c.against else {
        return literal_holds(c, params, triggers);
    };
    match c.param.kind {
        ParamKind::Int => c.predicate.test(params.int(c.param), params.int(other)),
        _ => c.predicate.test(params.number(c.param, triggers), params.number(other, triggers)),
    }
}

/// Follows entries and exits to an animation state, collecting the triggers their
/// conditions read. Validation guarantees every entry has a transition without conditions.
fn resolve(g: &CompiledGraph, mut target: Target, params: &ParamView<'_>, triggers: u64, used: &mut u64) -> u16 {
    for _ in 0..4 * (MAX_MACHINE_DEPTH + 1) {
        let pick = |span: Span, used: &mut u64| {
            g.candidates[span.range()].iter().map(|&t| &g.transitions[t as usize]).find_map(|t| {
                transition_holds(g, t, params, triggers).map(|consumed| {
                    *used |= consumed;
                    t.to
                })
            })
        };
        target = match target {
            Target::State(s) => return s,
            Target::Entry(m) => match pick(g.machines[m as usize].entry, used) {
                Some(t) => t,
                None => break,
            },
            Target::Exit(m) => pick(g.machines[m as usize].exit, used).unwrap_or(Target::Entry(m)),
        };
    }
    debug_assert!(false, "validation guarantees entries resolve");
    g.layers.first().map_or(0, |l| l.states.start as u16)
}

/// The state a layer starts in: its top machine's entry with the character's parameters.
pub(crate) fn initial_state(g: &CompiledGraph, layer: usize, params: &ParamView<'_>, triggers: u64) -> u16 {
    let mut used = 0;
    resolve(g, Target::Entry(g.layers[layer].root), params, triggers, &mut used)
}

/// The record a character just spawned shows until its first update: layer `layer`'s start
/// state `start` at `phase` (its start phase at spawn), no transition, as the state step would
/// write it for a clock that has not run. Without it a character evaluated between its spawn and
/// the next update would show the rig's rest pose for a frame.
pub(crate) fn start_record(
    arch: &Archetype,
    layer: usize,
    start: usize,
    params: &ParamView<'_>,
    triggers: u64,
    phase: f32,
    now: u32,
) -> LayerRecord {
    let g = &*arch.graph;
    LayerRecord {
        state: start as u16,
        source: NO_STATE,
        phase,
        transition: NO_TRANSITION,
        target_weight: 1.0,
        progress: 1.0,
        flags: root_motion_flag(g, start, layer) as u8,
        weight: layer_weight(g, layer, params, triggers),
        anchor: now as u16,
        ..LayerRecord::default()
    }
}

/// A character's blend inputs (`CompiledGraph::blend_inputs`, `slots`) as the `blend_space`
/// stage reads them: each parameter's number, canonical (`blend_space::canonical_input`).
/// Returns whether any changed (bit for bit).
#[inline]
pub(crate) fn write_blend_inputs(slots: &[ParamSlot], params: &ParamView<'_>, triggers: u64, out: &mut [f32]) -> bool {
    let mut changed = false;
    for (o, &slot) in out.iter_mut().zip(slots) {
        let v = canonical_input(params.number(slot, triggers));
        changed |= o.to_bits() != v.to_bits();
        *o = v;
    }
    changed
}

/// [`LayerProgram::ROOT_MOTION`] when the base layer shows `state` and the state moves the
/// character, else 0.
fn root_motion_flag(g: &CompiledGraph, state: usize, layer: usize) -> u32 {
    if g.states[state].root_motion && layer == 0 { LayerProgram::ROOT_MOTION } else { 0 }
}

/// Everything the step reads that is the same for every character, and the character's
/// time-scaled `dt` and time scale.
pub(crate) struct StepContext<'a> {
    pub arch: &'a Archetype,
    /// Imperative transitions (`Crowd::transition_to`), numbered after the graph's own.
    pub commands: &'a [Transition],
    pub dt_s: f32,
    /// The character's time scale: its clocks' rates in the records are per second of the
    /// crowd's time.
    pub time_scale: f32,
    /// The update being stepped (`program::RecordClock::now`).
    pub now: u32,
}

/// The oldest a record's anchor gets: a clock anchored this many updates ago is anchored
/// again. Below `program::CLOCK_SLOTS`, so that every anchor is in the clock's table, and long
/// enough that an idle character's record is re-sent about every two seconds at 60 updates a
/// second. By the anchor's own age, not by row or slot, so that a character's clocks (and so
/// its pose, to the bit) depend on its own history alone, whatever comes and goes around it.
pub(crate) const REANCHOR_PERIOD: u16 = 120;

impl StepContext<'_> {
    /// Transition `t`: the graph's, or past them an imperative one.
    #[inline]
    fn transition(&self, t: u16) -> &Transition {
        let authored = &self.arch.graph.transitions;
        match authored.get(t as usize) {
            Some(tr) => tr,
            None => &self.commands[t as usize - authored.len()],
        }
    }
}

/// Where one character's animation events go: the chunk's list, tagged with the character.
pub(crate) struct EventSink<'a> {
    pub out: &'a mut Vec<AnimationEvent>,
    pub character: CharacterHandle,
    pub row: u32,
    /// Where the layer being stepped starts in `out`, for [`MAX_EVENTS_PER_LAYER_UPDATE`].
    pub layer_first: usize,
    /// Events past the cap, not reported.
    pub dropped: u64,
}

impl EventSink<'_> {
    /// Reports `event` unless the layer has reported [`MAX_EVENTS_PER_LAYER_UPDATE`] already.
    fn push(&mut self, event: AnimationEvent) {
        if self.out.len() - self.layer_first < MAX_EVENTS_PER_LAYER_UPDATE {
            self.out.push(event);
        } else {
            self.dropped += 1;
        }
    }
}

/// Steps one layer of one character and writes its record; returns whether that changed it.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn step_layer(
    ctx: &StepContext<'_>,
    layer: usize,
    slot: LayerSlot<'_>,
    params: &ParamView<'_>,
    triggers: u64,
    consumed: &mut u64,
    scratch: &mut Scratch,
    record: &mut LayerRecord,
    events: &mut EventSink<'_>,
    lod: Lod,
) -> bool {
    let arch = ctx.arch;
    let g = &*arch.graph;
    let dt = ctx.dt_s;
    let with_events = arch.has_events();

    // 1. The active state's weights and clock. The weights are the step's only where it reads
    // them (a synced state's rate, events); the evaluators compute the pose's from the record.
    let Scratch { active_w, src_w, node_w, child_w } = scratch;
    let active = *slot.active as usize;
    let active_state = &g.states[active];
    let active_weighed = active_state.sync || with_events;
    if active_weighed {
        leaf_weights(g, active, params, triggers, active_w, node_w, child_w);
    }
    let active_rate = rate(arch, active, active_w);
    let active_speed = state_speed(active_state, params, triggers);
    let active_from = (*slot.loops, *slot.phase);
    let active_clock = advance(slot.phase, slot.loops, dt * active_speed.abs() * active_rate, active_state.looping);

    // 2. The transition in flight. A frozen snapshot's source state is not sampled, but with
    // events its clock runs all the same, so its events fire as a crossfade's would; exit-time
    // gates still read it as still, as they do without events.
    let mut src_clock = Clock::STILL;
    let source_is_state = *slot.flags & FLAG_SNAPSHOT == 0 && *slot.previous != NO_INDEX;
    let src_from = (*slot.src_loops, *slot.src_phase);
    if *slot.transition != NO_INDEX {
        if source_is_state || (with_events && *slot.previous != NO_INDEX) {
            let src = *slot.previous as usize;
            let st = &g.states[src];
            if st.sync || with_events {
                leaf_weights(g, src, params, triggers, src_w, node_w, child_w);
            }
            let r = rate(arch, src, src_w);
            let speed = state_speed(st, params, triggers);
            let clock = advance(slot.src_phase, slot.src_loops, dt * speed.abs() * r, st.looping);
            if source_is_state {
                src_clock = clock;
            }
        }
        *slot.trans_time_s += dt;
        if *slot.trans_time_s >= *slot.trans_duration_s {
            *slot.transition = NO_INDEX;
            *slot.flags &= !FLAG_SNAPSHOT;
        }
    }

    // 3. Selection.
    let transitioning = *slot.transition != NO_INDEX;
    let own = active_state.own;
    let any = active_state.any;
    let lists: [Span; 3] = if !transitioning {
        [own, any, Span::default()]
    } else {
        let prev_own = match *slot.previous {
            NO_INDEX => Span::default(),
            p => g.states[p as usize].own,
        };
        match ctx.transition(*slot.transition).interruption {
            Interruption::None => [Span::default(); 3],
            Interruption::Prev => [prev_own, any, Span::default()],
            Interruption::Next => [own, any, Span::default()],
            Interruption::PrevNext => [prev_own, own, any],
            Interruption::NextPrev => [own, prev_own, any],
        }
    };
    let mut taken = None;
    // An imperative transition is taken as an authored one would be, whatever is in flight.
    if *slot.pending != NO_INDEX {
        let t = std::mem::replace(slot.pending, NO_INDEX);
        if let Target::State(to) = ctx.transition(t).to {
            taken = Some((t, to, 0));
        }
    }
    'select: for span in if taken.is_some() { [Span::default(); 3] } else { lists } {
        for &t in &g.candidates[span.range()] {
            let tr = &g.transitions[t as usize];
            let clock = match tr.from {
                Source::State(s) if s as usize == active => active_clock,
                Source::State(_) => src_clock,
                _ => active_clock,
            };
            if !clock.gate_open(tr.exit_time) {
                continue;
            }
            let Some(mut used) = transition_holds(g, tr, params, triggers) else {
                continue;
            };
            let to = resolve(g, tr.to, params, triggers, &mut used);
            if to as usize == active && !tr.self_transition {
                continue;
            }
            taken = Some((t, to, used));
            break 'select;
        }
    }

    // Events: the clips this update played, over the clip time each advanced, before a switch
    // replaces the weights they played with.
    if with_events {
        events.layer_first = events.out.len();
        let layer_weight = if layer == 0 { 1.0 } else { layer_weight(g, layer, params, triggers) };
        let in_flight = (*slot.transition != NO_INDEX).then(|| ctx.transition(*slot.transition));
        let (active_share, source_share) = if taken.is_some() {
            // The state left (and a source still in flight) played this update as the last
            // pose showed them: the program is still the last update's.
            let mode = program::SwitchMode::from_code(u32::from(record.mode));
            let (active, source) = shares_of(mode, u32::from(record.flags), record.target_weight, record.progress);
            (active, if in_flight.is_some() { source } else { 0.0 })
        } else if let Some(tr) = in_flight {
            let progress = (*slot.trans_time_s / *slot.trans_duration_s).clamp(0.0, 1.0);
            let inertialized = matches!(tr.switch, SwitchMode::Inertialize(_));
            if inertialized {
                (1.0, 1.0 - progress)
            } else {
                let w = tr.easing.apply(progress);
                (w, 1.0 - w)
            }
        } else {
            (1.0, 0.0)
        };
        let entered = *slot.flags & FLAG_ENTERED != 0;
        let played = Played {
            from: active_from,
            to: (*slot.loops, *slot.phase),
            inclusive: entered,
            share: active_share * layer_weight,
        };
        fire_events(arch, layer, active, active_w, played, events);
        if in_flight.is_some() && *slot.previous != NO_INDEX {
            let played = Played {
                from: src_from,
                to: (*slot.src_loops, *slot.src_phase),
                inclusive: false,
                share: source_share * layer_weight,
            };
            fire_events(arch, layer, *slot.previous as usize, src_w, played, events);
        }
    }
    *slot.flags &= !FLAG_ENTERED;

    // 4. Taking it.
    let mut switched = false;
    // On an inertialized switch: how far back (in progress) the destination was one step ago,
    // so the evaluator can read its velocity.
    let mut step_back = None;
    if let Some((t, to, used)) = taken {
        let tr = ctx.transition(t);
        *consumed |= used;
        switched = true;
        let duration_s =
            if tr.normalized { normalized_duration_s(tr.duration, active_rate, active_speed) } else { tr.duration };
        let cut = duration_s <= 0.0
            || matches!(
                tr.switch,
                SwitchMode::Cut | SwitchMode::Inertialize(Inertialization::Spring { halflife_s: 0.0 })
            );
        let interrupting = *slot.transition != NO_INDEX;
        *slot.flags &= !FLAG_SNAPSHOT;
        *slot.flags |= FLAG_ENTERED;
        // Where a synced destination starts, read from the state left before its weights go.
        let sync = match tr.sync {
            PhaseSync::Offset => None,
            PhaseSync::Phase => Some(Synced::Phase(*slot.phase)),
            PhaseSync::Marker => {
                if !active_weighed {
                    leaf_weights(g, active, params, triggers, active_w, node_w, child_w);
                }
                next_marker(arch, active, active_w, *slot.phase, *slot.loops)
            }
        };
        // The state left keeps its clock: a crossfade samples it, and PREV_STATE interruptions
        // gate its exit times on it.
        *slot.src_phase = *slot.phase;
        *slot.src_loops = *slot.loops;
        if !cut {
            match tr.switch {
                SwitchMode::Frozen => *slot.flags |= FLAG_SNAPSHOT,
                SwitchMode::Crossfade if interrupting => *slot.flags |= FLAG_SNAPSHOT,
                _ => {}
            }
        }
        *slot.previous = *slot.active;
        *slot.active = to;
        let dest = &g.states[to as usize];
        // The clock counts the fraction played, whichever way the state plays; a state played
        // backwards starts at its end unless an offset says where (as PlayCanvas).
        let played = if dest.speed < 0.0 && tr.offset > 0.0 { 1.0 - tr.offset } else { tr.offset };
        *slot.phase = if dest.looping && played >= 1.0 { 0.0 } else { played };
        *slot.loops = 0;
        *slot.trans_time_s = 0.0;
        *slot.trans_duration_s = duration_s;
        *slot.transition = if cut { NO_INDEX } else { t };
        // The destination's weights: a synced one's rate (the step back) and a marker's
        // dominant clip read them.
        if dest.nodes.len() == 1 {
            active_w[0] = 1.0;
        } else if dest.sync || matches!(sync, Some(Synced::Marker(..))) {
            leaf_weights(g, to as usize, params, triggers, active_w, node_w, child_w);
        }
        if let Some(phase) = sync.and_then(|s| synced_phase(arch, to as usize, active_w, s)) {
            *slot.phase = phase;
        }
        record.transition = t;
        (record.mode, record.decay_s) =
            if cut { (program::SwitchMode::Cut as u8, 0.0) } else { program_mode(tr.switch, duration_s) };
    }
    // Animation LOD never defers a switch: a character that switches on an update it would have
    // skipped is evaluated on it all the same (`Crowd::update` adds it to the due rows), from the
    // pose held since it was last evaluated.
    let in_flight = *slot.transition != NO_INDEX;
    if switched && in_flight && matches!(ctx.transition(*slot.transition).switch, SwitchMode::Inertialize(_)) {
        // The evaluator measures the destination's velocity over the time since it last
        // evaluated the character: one update at full rate, several when LOD skipped some.
        let dest = &g.states[*slot.active as usize];
        let speed = state_speed(dest, params, triggers);
        step_back = Some((lod.elapsed_s * speed * rate(arch, *slot.active as usize, active_w)).min(f32::MAX));
    }

    // 5. The record.
    let progress = if in_flight { (*slot.trans_time_s / *slot.trans_duration_s).clamp(0.0, 1.0) } else { 1.0 };
    let mut flags = 0;
    let mut target_weight = 1.0;
    let mut source_state = false;
    // The switch the record shows: the one in flight, the cut taken this update (4. wrote it),
    // or none.
    let (mut transition, mut mode, mut decay_s) = (record.transition, record.mode, record.decay_s);
    if in_flight {
        let tr = ctx.transition(*slot.transition);
        flags |= LayerProgram::TRANSITIONING;
        transition = *slot.transition;
        (mode, decay_s) = program_mode(tr.switch, *slot.trans_duration_s);
        if !matches!(tr.switch, SwitchMode::Inertialize(_)) {
            target_weight = tr.easing.apply(progress);
            if *slot.flags & FLAG_SNAPSHOT != 0 {
                flags |= LayerProgram::SOURCE_SNAPSHOT;
            } else {
                source_state = true;
            }
        }
    } else if !switched {
        (transition, mode, decay_s) = (NO_TRANSITION, program::SwitchMode::Cut as u8, 0.0);
    }
    if switched {
        flags |= LayerProgram::SWITCHED;
    }
    flags |= root_motion_flag(g, *slot.active as usize, layer);
    // The active clock, anchored: the evaluators read it at any later update as
    // `phase + rate × seconds since` (`program::clock_at`), so that the record of a character
    // whose clock runs at a steady rate (an idle loop, a walk at a constant speed) or does not
    // move (paused, held at a state's end) stays unchanged and is not re-sent. Re-anchored on
    // a switch, when its rate per second changes (parameters, time scale), on a step of a
    // whole cycle or more, and when the anchor is `REANCHOR_PERIOD` updates old. The anchored
    // clock differs from the step's own sum of steps by f32 roundings (the step's clock decides
    // transitions and events; the anchored one is what both evaluators show).
    let state = *slot.active;
    let advance = if switched { 0.0 } else { active_clock.now - active_clock.before };
    let rate_per_s = if switched {
        let dest = &g.states[state as usize];
        state_speed(dest, params, triggers).abs() * rate(arch, state as usize, active_w)
    } else {
        active_speed.abs() * active_rate
    };
    let rate_per_s = (rate_per_s * ctx.time_scale).min(f32::MAX);
    let rate_per_s = if rate_per_s.is_nan() { 0.0 } else { rate_per_s };
    // A step of a whole cycle or more (a huge `dt`; the clock's loops may have saturated, so
    // its own advance cannot tell) re-anchors too: no anchor is read across it.
    let step_progress = ctx.dt_s * active_speed.abs() * active_rate;
    // A re-anchored record has changed (its anchor is this update's).
    let mut reanchored = false;
    if switched
        || (ctx.now as u16).wrapping_sub(record.anchor) >= REANCHOR_PERIOD
        || record.state != state
        || record.rate.to_bits() != rate_per_s.to_bits()
        || !(step_progress < 1.0)
    {
        record.phase = *slot.phase;
        record.loops = *slot.loops;
        record.advance = advance;
        record.rate = rate_per_s;
        record.anchor = ctx.now as u16;
        reanchored = true;
    }
    let weight = layer_weight(g, layer, params, triggers);
    debug_assert!(layer < g.layers.len());
    if !in_flight && !switched {
        // No transition shows: beside the state, the clock, the flags and the weight, the
        // record's fields are constants, so one not re-anchored is compared with them rather
        // than with a copy of what it held, and written only when it changed.
        let changed = reanchored || !record.is_settled(flags as u8, weight);
        if changed {
            record.state = state;
            record.settle(flags as u8, weight);
        }
        return changed;
    }
    let (source, src_phase, src_loops, src_advance, sets) = if source_state {
        let advance = src_clock.now - src_clock.before;
        (*slot.previous, *slot.src_phase, *slot.src_loops, advance, LayerRecord::SECONDARY_SOURCE)
    } else if let Some(back) = step_back {
        let looping = g.states[*slot.active as usize].looping;
        let phase = if looping { (*slot.phase - back).rem_euclid(1.0) } else { (*slot.phase - back).max(0.0) };
        (NO_STATE, phase, 0, 0.0, LayerRecord::SECONDARY_BACK)
    } else {
        (NO_STATE, 0.0, 0, 0.0, 0)
    };
    // A record the step leaves as it was keeps its stamp, and is not sent to the GPU again: one
    // not re-anchored (whose state and clock are as they were) is compared, bit for bit, with
    // what it held.
    let before = (!reanchored).then_some(*record);
    record.state = state;
    (record.transition, record.mode, record.decay_s) = (transition, mode, decay_s);
    (record.source, record.src_phase, record.src_loops, record.src_advance, record.sets) =
        (source, src_phase, src_loops, src_advance, sets);
    record.flags = flags as u8;
    record.target_weight = target_weight;
    record.progress = progress;
    record.weight = weight;
    before.is_none_or(|b| !b.same_bits(record))
}

/// Where a synced transition's source stood when it was taken.
#[derive(Clone, Copy)]
enum Synced {
    /// Its normalised phase.
    Phase(f32),
    /// The next sync marker its dominant clip reaches (a marker id), and the fraction of that
    /// clip still to play before it.
    Marker(u32, f32),
}

/// The leaf of `state` with the largest weight (its first on a tie), an index of the graph's leaves.
fn dominant_leaf(arch: &Archetype, state: usize, weights: &[f32; MAX_BLEND_CHILDREN]) -> usize {
    let leaves = arch.graph.states[state].leaves.range();
    let first = leaves.start;
    let count = leaves.len();
    let best = (0..count).fold(0, |best, i| if weights[i] > weights[best] { i } else { best });
    first + best
}

/// The sync marker `state`'s dominant clip reaches next from its clock, and the fraction of the
/// clip before it (wrapping to the clip's first marker past its end); `None` without markers.
fn next_marker(
    arch: &Archetype,
    state: usize,
    weights: &[f32; MAX_BLEND_CHILDREN],
    phase: f32,
    loops: u32,
) -> Option<Synced> {
    let leaf = dominant_leaf(arch, state, weights);
    let markers = arch.markers_of_clip(arch.leaf_clip[leaf]);
    let &(first_s, first_id) = markers.first()?;
    let duration = f64::from(arch.leaf_duration_s[leaf]);
    let st = &arch.graph.states[state];
    let played = if st.sync {
        f64::from(phase) * duration
    } else {
        let t = (f64::from(loops) + f64::from(phase)) * f64::from(seconds_per_progress(arch, state, leaf));
        if st.looping { t % duration } else { t.min(duration) }
    };
    let now = if st.speed < 0.0 { duration - played } else { played };
    let (at, id) = match markers.iter().find(|&&(t, _)| f64::from(t) > now) {
        Some(&(t, id)) => (f64::from(t), id),
        None => (f64::from(first_s) + duration, first_id),
    };
    Some(Synced::Marker(id, ((at - now) / duration) as f32))
}

/// The destination's starting phase for a synced switch: the source's phase, or as far before
/// the destination's dominant clip's first marker of the same name as the source was before
/// its own; `None` (the offset stands) when that clip has no such marker.
fn synced_phase(arch: &Archetype, state: usize, weights: &[f32; MAX_BLEND_CHILDREN], sync: Synced) -> Option<f32> {
    let st = &arch.graph.states[state];
    let phase = match sync {
        Synced::Phase(phase) => phase,
        Synced::Marker(id, before) => {
            let leaf = dominant_leaf(arch, state, weights);
            let duration = arch.leaf_duration_s[leaf];
            let &(at, _) = arch.markers_of_clip(arch.leaf_clip[leaf]).iter().find(|&&(_, m)| m == id)?;
            let fraction = (at / duration - before).rem_euclid(1.0);
            if st.speed < 0.0 { 1.0 - fraction } else { fraction }
        }
    };
    // `rem_euclid` can round up to 1; a looping clock stays below it.
    Some(if st.looping && phase >= 1.0 { 0.0 } else { phase.clamp(0.0, 1.0) })
}

/// A layer's weight for this character: the graph's, scaled by its weight parameter if any.
#[inline]
fn layer_weight(g: &CompiledGraph, layer: usize, params: &ParamView<'_>, triggers: u64) -> f32 {
    let layer_desc = &g.layers[layer];
    match layer_desc.weight_param {
        Some(slot) => (layer_desc.weight * params.number(slot, triggers)).clamp(0.0, 1.0),
        None => layer_desc.weight,
    }
}

/// The (destination, source) shares of a layer as a program shows them: a crossfade's or a
/// frozen fade's eased weights; for an inertialization, whose destination shows alone, the
/// source's share fades linearly with the transition's progress.
fn shares_of(mode: program::SwitchMode, flags: u32, target_weight: f32, progress: f32) -> (f32, f32) {
    if flags & LayerProgram::TRANSITIONING == 0 {
        (1.0, 0.0)
    } else if mode.is_inertialization() {
        (1.0, 1.0 - progress)
    } else {
        (target_weight, 1.0 - target_weight)
    }
}

/// One leaf's events for the step, in one small record: a range of the archetype's event
/// arrays, and its clip's duration and seconds per unit of progress, in `f64` so that clip
/// time summed over many loops keeps its precision.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LeafEvents {
    start: u32,
    end: u32,
    duration_s: f64,
    inv_duration: f64,
    seconds_per_progress: f64,
}

impl LeafEvents {
    /// The record for events `range` of a leaf whose clip lasts `duration_s` (> 0, as bound).
    pub(crate) fn new(range: std::ops::Range<u32>, duration_s: f32, seconds_per_progress: f32) -> Self {
        let duration_s = f64::from(duration_s);
        Self {
            start: range.start,
            end: range.end,
            duration_s,
            inv_duration: 1.0 / duration_s,
            seconds_per_progress: f64::from(seconds_per_progress),
        }
    }
}

/// What one state played this update: its clock before and after as (loops, phase), whether
/// its starting point counts (it was entered on the last update), and its share of the
/// character's pose (transition share times layer weight).
#[derive(Clone, Copy)]
struct Played {
    from: (u32, f32),
    to: (u32, f32),
    inclusive: bool,
    share: f32,
}

/// Clip seconds per unit of a state's progress for one of its leaves: the leaf's own duration
/// when the state is synced, else the state's longest leaf scaled by the leaf's speed.
#[inline]
pub(crate) fn seconds_per_progress(arch: &Archetype, state: usize, leaf: usize) -> f32 {
    let st = &arch.graph.states[state];
    if st.sync { arch.leaf_duration_s[leaf] } else { arch.state_longest_s[state] * arch.graph.leaves[leaf].speed }
}

/// Reports the events of `state`'s clips that its playback crossed: for each leaf whose weight
/// (× the share) passes the archetype's threshold, the clip interval `(from, to]` (`[from, to]`
/// when entered), in clip seconds from the start of its first loop (a state that does not loop
/// clamps at its end). Played backwards, clip time is `duration − played`. Each event is
/// reported once, with the number of loops in which the interval crossed it, in the order of
/// its first crossing: the work is one pass over the clip's events, whatever the step.
fn fire_events(
    arch: &Archetype,
    layer: usize,
    state: usize,
    weights: &[f32; MAX_BLEND_CHILDREN],
    played: Played,
    sink: &mut EventSink<'_>,
) {
    let st = &arch.graph.states[state];
    let threshold = arch.event_weight_threshold;
    let reverse = st.speed < 0.0;
    let (from_loops, from_phase) = played.from;
    let (to_loops, to_phase) = played.to;
    for (i, leaf) in st.leaves.range().enumerate() {
        let le = arch.leaf_events[leaf];
        let weight = weights[i] * played.share;
        if le.start == le.end || !(weighs(weight) && weight >= threshold) {
            continue;
        }
        let duration = le.duration_s;
        // A synced state samples its clips at `phase × duration`, so whole loops are the
        // clock's own count; an unsynced one runs its clips at their own rates, from total
        // seconds.
        let (start, end) = if st.sync {
            let wraps = to_loops.saturating_sub(from_loops);
            (f64::from(from_phase) * duration, (f64::from(wraps) + f64::from(to_phase)) * duration)
        } else {
            let total = |loops: u32, phase: f32| (f64::from(loops) + f64::from(phase)) * le.seconds_per_progress;
            let (start, end) = (total(from_loops, from_phase), total(to_loops, to_phase));
            if st.looping { (start, end) } else { (start.min(duration), end.min(duration)) }
        };
        if !(end > start || (end == start && played.inclusive)) {
            continue;
        }
        let interval = Interval { start, end, inclusive: played.inclusive, duration, looping: st.looping };
        let times = &arch.event_time_s[le.start as usize..le.end as usize];
        let ids = &arch.event_id[le.start as usize..le.end as usize];
        // First the events whose first crossing is in the loop the interval starts in, then
        // those first crossed in the next one; each pass in clip order.
        let base = if st.looping { (start * le.inv_duration).floor() } else { 0.0 };
        for next_loop in [false, true] {
            for j in 0..times.len() {
                let e = if reverse { times.len() - 1 - j } else { j };
                let t = f64::from(times[e]);
                let Some((first, count)) = interval.crossings(if reverse { duration - t } else { t }) else { continue };
                if (first > base) != next_loop {
                    continue;
                }
                sink.push(AnimationEvent {
                    character: sink.character,
                    row: sink.row,
                    layer: layer as u32,
                    state: state as u32,
                    event: ids[e],
                    clip: arch.leaf_clip[leaf],
                    time_s: times[e],
                    weight,
                    count,
                });
            }
        }
    }
}

/// The clip time one state played this update, seconds from the start of its first loop.
#[derive(Clone, Copy)]
pub(super) struct Interval {
    pub start: f64,
    pub end: f64,
    /// Whether `start` itself counts (`[start, end]`, else `(start, end]`).
    pub inclusive: bool,
    pub duration: f64,
    pub looping: bool,
}

impl Interval {
    /// The loops in which an event `offset` seconds into the clip lies in the interval: the
    /// first such loop and how many (saturating), or `None`. Computed, not counted, so that a
    /// step spanning millions of loops costs what one does.
    pub(super) fn crossings(self, offset: f64) -> Option<(f64, u32)> {
        let Self { start, end, inclusive, duration, looping } = self;
        let after_start = |at: f64| if inclusive { at >= start } else { at > start };
        if !looping {
            return (after_start(offset) && offset <= end).then_some((0.0, 1));
        }
        // On a looping clip the end is the next loop's start: the same product as the
        // interval's ends, so the two cannot disagree by a rounding.
        let at = |k: f64| if offset >= duration { (k + 1.0) * duration } else { k * duration + offset };
        let lead = offset.min(duration);
        // Division estimates each edge to within a loop after rounding; a few exact steps
        // settle it.
        let mut first = ((start - lead) / duration).floor().max(0.0);
        for _ in 0..3 {
            if first > 0.0 && after_start(at(first - 1.0)) {
                first -= 1.0;
            }
        }
        for _ in 0..3 {
            if !after_start(at(first)) {
                first += 1.0;
            }
        }
        let mut last = ((end - lead) / duration).floor();
        for _ in 0..3 {
            if at(last + 1.0) <= end {
                last += 1.0;
            }
        }
        for _ in 0..3 {
            if at(last) > end {
                last -= 1.0;
            }
        }
        // The float-to-int cast saturates a count past `u32::MAX`.
        (after_start(at(first)) && last >= first && at(last) <= end).then_some((first, (last - first + 1.0) as u32))
    }
}

/// The program's mode code and curve parameter for a graph switch mode; `duration_s` is the
/// transition's duration in seconds (the quintic's length).
fn program_mode(switch: SwitchMode, duration_s: f32) -> (u8, f32) {
    let mode = match switch {
        SwitchMode::Cut => program::SwitchMode::Cut,
        SwitchMode::Frozen => program::SwitchMode::Frozen,
        SwitchMode::Crossfade => program::SwitchMode::Crossfade,
        SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: false }) => {
            program::SwitchMode::InertializeQuintic
        }
        SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: true }) => {
            program::SwitchMode::InertializeQuinticOvershootControl
        }
        SwitchMode::Inertialize(Inertialization::Spring { halflife_s }) => {
            return (program::SwitchMode::InertializeSpring as u8, halflife_s);
        }
    };
    (mode as u8, duration_s)
}
