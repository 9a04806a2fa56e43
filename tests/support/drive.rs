//! Gameplay for the tests' crowds: each frame's parameters, set in batches as a game sets them,
//! on the two graphs the tests drive whole crowds through.

use std::sync::Arc;

use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::graph::CompiledGraph;
use throng::runtime::CrowdRuntime;
use throng::setup::BoundArchetype;
use throng::state::{ArchetypeId, CharacterHandle, ClipBinding, Crowd, ParamId};

use super::locomotion::LOCOMOTION_CLIPS;

/// [`LOCOMOTION_CLIPS`] as bindings, clip `i` for entry `i`.
pub fn locomotion_bindings() -> Vec<(&'static str, ClipBinding)> {
    LOCOMOTION_CLIPS.iter().enumerate().map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d })).collect()
}

/// The parameter setters the drivers use, on a bare state step or on a [`CrowdRuntime`], so
/// that a test drives either the same way. Each panics on a refusal: the drivers only set what
/// the graphs declare.
pub trait Inputs {
    /// The parameter `name` of archetype `kind`.
    fn param_id(&self, kind: ArchetypeId, name: &str) -> ParamId;
    /// Sets a FLOAT parameter, `values[k]` for `handles[k]`.
    fn floats(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[f32]);
    /// Sets a TRIGGER for `handles`.
    fn trigger(&mut self, param: ParamId, handles: &[CharacterHandle], single_frame: bool);
}

impl Inputs for Crowd {
    fn param_id(&self, kind: ArchetypeId, name: &str) -> ParamId {
        self.param(kind, name).expect("the graph's parameter")
    }
    fn floats(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[f32]) {
        self.set_float(param, handles, values).expect("finite values for live handles");
    }
    fn trigger(&mut self, param: ParamId, handles: &[CharacterHandle], single_frame: bool) {
        self.set_trigger(param, handles, single_frame).expect("a trigger for live handles");
    }
}

impl Inputs for CrowdRuntime {
    fn param_id(&self, kind: ArchetypeId, name: &str) -> ParamId {
        self.param(kind, name).expect("the graph's parameter")
    }
    fn floats(&mut self, param: ParamId, handles: &[CharacterHandle], values: &[f32]) {
        self.set_float(param, handles, values).expect("finite values for live handles");
    }
    fn trigger(&mut self, param: ParamId, handles: &[CharacterHandle], single_frame: bool) {
        self.set_trigger(param, handles, single_frame).expect("a trigger for live handles");
    }
}

/// Speed of profile `p` at age `a` frames on `benches/support/locomotion.json`, m/s: varied,
/// often crossing the graph's 0.1 threshold.
#[must_use]
pub fn profile_speed(p: usize, a: usize) -> f32 {
    ((p * 7 + a * 3) % 50) as f32 / 10.0 - 0.3
}

/// Whether profile `p` triggers `jump` at age `a` frames.
#[must_use]
pub fn profile_jumps(p: usize, a: usize) -> bool {
    (a + p).is_multiple_of(37)
}

/// Whether profile `p` triggers `wave` (for one update) at age `a` frames.
#[must_use]
pub fn profile_waves(p: usize, a: usize) -> bool {
    (a * 5 + p).is_multiple_of(53)
}

/// Sets a frame's inputs on `benches/support/locomotion.json`'s parameters for `handles`, the
/// `k`-th of them following profile and age `profile_age(k)`: `speed`, the `jump` trigger, and
/// `wave` as a single-frame trigger.
pub fn drive(
    crowd: &mut impl Inputs,
    kind: ArchetypeId,
    handles: &[CharacterHandle],
    profile_age: impl Fn(usize) -> (usize, usize),
) {
    let [speed, jump, wave] = ["speed", "jump", "wave"].map(|name| crowd.param_id(kind, name));
    let speeds: Vec<f32> = (0..handles.len())
        .map(|k| {
            let (p, a) = profile_age(k);
            profile_speed(p, a)
        })
        .collect();
    crowd.floats(speed, handles, &speeds);
    let pick = |f: fn(usize, usize) -> bool| -> Vec<CharacterHandle> {
        handles
            .iter()
            .enumerate()
            .filter(|&(k, _)| {
                let (p, a) = profile_age(k);
                f(p, a)
            })
            .map(|(_, &h)| h)
            .collect()
    };
    crowd.trigger(jump, &pick(profile_jumps), false);
    crowd.trigger(wave, &pick(profile_waves), true);
}

/// How fast gameplay changes a character's speed on the demo graph, m/s² (a character
/// controller's acceleration): speeds ease towards their targets rather than jump.
pub const ACCELERATION_MPS2: f32 = 8.0;

/// One character's frame on the demo graph (`throng::demo::LOCOMOTION_GRAPH`), as a test's
/// script asks for it.
#[derive(Clone, Copy, Debug)]
pub struct DemoInputs {
    /// The speed gameplay steers towards, m/s.
    pub target_speed_mps: f32,
    /// Whether to trigger `jump`.
    pub jump: bool,
    /// The `lean` (additive) layer's weight in [0, 1].
    pub lean: f32,
    /// The `wave` (masked override) layer's weight in [0, 1].
    pub wave: f32,
}

/// Sets a frame's inputs on the demo graph's parameters for `handles`, the `k`-th of them
/// asking for `inputs(k)`: `speeds[k]` eases towards the target by at most
/// [`ACCELERATION_MPS2`] × `dt_s` and is set as `speed`; `lean` and `wave` are set as given, and
/// `jump` triggered (held until consumed) where asked.
pub fn drive_demo(
    crowd: &mut impl Inputs,
    kind: ArchetypeId,
    handles: &[CharacterHandle],
    speeds: &mut [f32],
    dt_s: f32,
    inputs: impl Fn(usize) -> DemoInputs,
) {
    let [speed, jump, lean, wave] = ["speed", "jump", "lean", "wave"].map(|name| crowd.param_id(kind, name));
    let step = ACCELERATION_MPS2 * dt_s;
    let (mut leans, mut waves, mut jumpers) = (Vec::new(), Vec::new(), Vec::new());
    for (k, &handle) in handles.iter().enumerate() {
        let asked = inputs(k);
        speeds[k] += (asked.target_speed_mps - speeds[k]).clamp(-step, step);
        leans.push(asked.lean);
        waves.push(asked.wave);
        if asked.jump {
            jumpers.push(handle);
        }
    }
    crowd.floats(speed, handles, speeds);
    crowd.floats(lean, handles, &leans);
    crowd.floats(wave, handles, &waves);
    crowd.trigger(jump, &jumpers, false);
}

/// The built-in humanoid on the demo graph in a [`CrowdRuntime`] with `characters` spawned:
/// the character, its bound archetype (for a GPU crowd of the same setup), the runtime, the
/// archetype and the handles.
pub fn demo_runtime(
    characters: usize,
) -> (DemoCharacter, BoundArchetype, CrowdRuntime, ArchetypeId, Vec<CharacterHandle>) {
    let demo = DemoCharacter::humanoid();
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap());
    let bound = demo.bind(graph).unwrap();
    let mut runtime = CrowdRuntime::new();
    let kind = runtime
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .unwrap();
    let handles = runtime.spawn_many(kind, characters).unwrap();
    (demo, bound, runtime, kind, handles)
}
