//! The stamps the state step leaves for the records' upload (`Crowd::record_frame`): after any
//! update, a record (with its shot record) and a character's blend inputs left unstamped are
//! bit for bit what they held before it, so a renderer that does not receive them again
//! (`gpu::GpuCrowd::set_frame_records`) holds them; and a graph layer's record or a
//! character's inputs stamped did change, so the upload sends nothing it need not. (A slot
//! layer's record is written twice an update, by the step and then by its one-shot, each
//! compared with what it held before it: one that a one-shot writes back to what it held
//! before the step is stamped all the same.)

use std::sync::Arc;

use proptest::prelude::*;

use super::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, OneShot, TransitionCommand, UPDATE_RATES};
use crate::graph::{CompiledGraph, SwitchMode};
use crate::program::{LayerRecord, ShotRecord, changed_after};

/// Every way a record changes: a synced blend tree on `speed` (its rate), a crossfade (the
/// source's clock), a frozen fade (the snapshot), a cut, inertializations (the step back), exit
/// times on a state that does not loop, root motion on some states (a flag of the record), a
/// layer weighted by a parameter, and a slot layer for one-shots.
const GRAPH: &str = r#"{
  "parameters": {
    "speed": { "name": "speed", "type": "FLOAT", "value": 0 },
    "jump": { "name": "jump", "type": "TRIGGER", "value": false },
    "lean": { "name": "lean", "type": "FLOAT", "value": 0 }
  },
  "defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } },
  "layers": [
    { "name": "Base",
      "states": [
        { "name": "START" }, { "name": "END" }, { "name": "ANY" },
        { "name": "Idle", "defaultState": true },
        { "name": "Move", "rootMotion": true, "blendTree": { "type": "1D", "parameter": "speed", "syncAnimations": true,
          "children": [{ "name": "Idle", "point": 0 }, { "name": "Walk", "point": 1.5 }, { "name": "Run", "point": 4.0 }] } },
        { "name": "Jump", "loop": false, "rootMotion": true }
      ],
      "transitions": [
        { "from": "Idle", "to": "Move", "time": 0.2, "switch": { "mode": "crossfade" },
          "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.15 }] },
        { "from": "Move", "to": "Idle", "time": 0.2, "switch": { "mode": "frozen" },
          "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN", "value": 0.1 }] },
        { "from": "Idle", "to": "Jump", "switch": "cut",
          "conditions": [{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Move", "to": "Jump", "time": 0.15,
          "conditions": [{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Jump", "to": "Move", "time": 0.2, "exitTime": 0.75, "switch": { "mode": "crossfade" },
          "conditions": [{ "parameterName": "speed", "predicate": "GREATER_THAN_EQUAL_TO", "value": 0.1 }] },
        { "from": "Jump", "to": "Idle", "time": 0.2, "exitTime": 0.75,
          "conditions": [{ "parameterName": "speed", "predicate": "LESS_THAN", "value": 0.1 }] }
      ] },
    { "name": "Lean", "weightParameter": "lean",
      "states": [{ "name": "START" }, { "name": "Leaning", "defaultState": true }] },
    { "name": "Gesture", "slot": true,
      "states": [{ "name": "START" }, { "name": "Still", "defaultState": true }] }
  ]
}"#;

const CLIPS: [(&str, f32); 7] = [
    ("Idle", 2.0),
    ("Move.Idle", 2.0),
    ("Move.Walk", 1.1),
    ("Move.Run", 0.7),
    ("Jump", 0.9),
    ("Leaning", 1.5),
    ("Still", 1.0),
];

/// Characters in the test's crowd.
const CHARACTERS: usize = 6;

/// The graph's slot layer, `Gesture`.
const SLOT_LAYER: usize = 2;

/// What may happen to one character before an update.
#[derive(Clone, Debug)]
enum Action {
    Speed(f32),
    Jump,
    Lean(f32),
    TimeScale(f32),
    /// A one-shot of the graph's clip `0..7` on the slot, looping or not.
    Shot(u32, bool),
    StopShot,
    /// An imperative transition of the base layer: to `Idle`, `Move` or `Jump`, cut or blended.
    To(usize, bool),
    UpdateRate(u8),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => prop_oneof![Just(0.0f32), Just(0.05), Just(1.0), Just(2.5), 0.0f32..5.0].prop_map(Action::Speed),
        1 => Just(Action::Jump),
        2 => prop_oneof![Just(0.0f32), Just(1.0), 0.0f32..1.0].prop_map(Action::Lean),
        1 => prop_oneof![Just(0.0f32), Just(1.0), Just(0.5), 0.0f32..3.0].prop_map(Action::TimeScale),
        1 => (0u32..7, any::<bool>()).prop_map(|(clip, looping)| Action::Shot(clip, looping)),
        1 => Just(Action::StopShot),
        1 => (0usize..3, any::<bool>()).prop_map(|(to, cut)| Action::To(to, cut)),
        1 => prop::sample::select(&UPDATE_RATES[..3]).prop_map(Action::UpdateRate),
    ]
}

/// One update: some characters' actions, then the step with `dt`.
fn update() -> impl Strategy<Value = (Vec<(usize, Action)>, f32)> {
    let dt = prop_oneof![4 => Just(1.0f32 / 60.0), 1 => Just(0.0f32), 1 => 0.001f32..0.5];
    (proptest::collection::vec((0..CHARACTERS, action()), 0..4), dt)
}

fn crowd() -> (Crowd, ArchetypeId, Vec<CharacterHandle>) {
    let graph = Arc::new(CompiledGraph::from_json(GRAPH).expect("the graph loads"));
    let bindings: Vec<_> =
        CLIPS.iter().enumerate().map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d })).collect();
    let durations: Vec<f32> = CLIPS.iter().map(|&(_, d)| d).collect();
    let arch = Archetype::from_bindings(graph, &bindings)
        .expect("every leaf binds")
        .with_clip_durations(&durations)
        .expect("positive durations");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let handles = (0..CHARACTERS).map(|_| crowd.spawn(kind).expect("the archetype exists")).collect();
    (crowd, kind, handles)
}

fn apply(crowd: &mut Crowd, kind: ArchetypeId, h: CharacterHandle, action: &Action) {
    let one = &[h][..];
    let param = |crowd: &Crowd, name| crowd.param(kind, name).expect("the graph has it");
    match *action {
        Action::Speed(v) => crowd.set_float(param(crowd, "speed"), one, &[v]).expect("a finite speed"),
        Action::Jump => crowd.set_trigger(param(crowd, "jump"), one, false).expect("a trigger"),
        Action::Lean(v) => crowd.set_float(param(crowd, "lean"), one, &[v]).expect("a finite weight"),
        Action::TimeScale(v) => crowd.set_time_scale(one, &[v]).expect("a finite scale"),
        Action::Shot(clip, looping) => {
            let shot = OneShot { looping, blend_in_s: 0.1, blend_out_s: 0.1, ..OneShot::new(clip) };
            crowd.play_one_shot(one, "Gesture", shot).expect("a slot and a clip with a duration");
        }
        Action::StopShot => crowd.stop_one_shot(one, "Gesture").expect("a slot"),
        Action::To(to, cut) => {
            let command = if cut {
                TransitionCommand::CUT
            } else {
                TransitionCommand { switch: Some(SwitchMode::Crossfade), ..TransitionCommand::blend(0.15) }
            };
            crowd.transition_to(one, 0, ["Idle", "Move", "Jump"][to], command).expect("a state of the layer");
        }
        Action::UpdateRate(rate) => crowd.set_update_rate(one, &[rate]).expect("a listed rate"),
    }
}

/// What the upload reads of the crowd after an update: records, shot records, inputs, and
/// their stamps with the version they were stamped up to.
type Held = (Vec<LayerRecord>, Vec<ShotRecord>, Vec<f32>, Vec<u32>, Vec<u32>, u32);

fn held(crowd: &Crowd, kind: ArchetypeId) -> Held {
    let frame = crowd.record_frame(kind).expect("the archetype exists");
    let changes = frame.changes().expect("a crowd's frame has stamps");
    (
        frame.records().to_vec(),
        frame.shots().to_vec(),
        frame.inputs().to_vec(),
        changes.record_stamps.to_vec(),
        changes.input_stamps.to_vec(),
        changes.version,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_step_stamps_exactly_the_records_and_inputs_whose_bits_changed(
        updates in proptest::collection::vec(update(), 1..90),
    ) {
        let (mut crowd, kind, handles) = crowd();
        crowd.update(1.0 / 60.0).expect("a finite dt");
        let layers = crowd.record_frame(kind).expect("the archetype exists").records().len() / CHARACTERS;
        for (n, (actions, dt)) in updates.iter().enumerate() {
            for (c, action) in actions {
                apply(&mut crowd, kind, handles[*c], action);
            }
            let (records, shots, inputs, _, _, last) = held(&crowd, kind);
            crowd.update(*dt).expect("a finite dt");
            let (now_records, now_shots, now_inputs, record_stamps, input_stamps, _) = held(&crowd, kind);
            for i in 0..records.len() {
                let changed = !records[i].same_bits(&now_records[i])
                    || bytemuck::bytes_of(&shots[i]) != bytemuck::bytes_of(&now_shots[i]);
                let stamped = changed_after(record_stamps[i], last);
                let slot = i % layers == SLOT_LAYER;
                prop_assert!(
                    if slot { stamped || !changed } else { stamped == changed },
                    "update {}, character {} layer {}: stamped {}, changed {}\nbefore {:?} {:?}\nafter  {:?} {:?}",
                    n, i / layers, i % layers, stamped, changed, records[i], shots[i], now_records[i], now_shots[i]
                );
            }
            let per = inputs.len() / CHARACTERS;
            for c in 0..CHARACTERS {
                let (was, is) = (&inputs[c * per..(c + 1) * per], &now_inputs[c * per..(c + 1) * per]);
                let changed = was.iter().zip(is).any(|(a, b)| a.to_bits() != b.to_bits());
                let stamped = changed_after(input_stamps[c], last);
                prop_assert_eq!(stamped, changed, "update {}, character {}: inputs {:?} → {:?}", n, c, was, is);
            }
        }
    }
}
