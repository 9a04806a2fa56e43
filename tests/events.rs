//! Animation events: fired once when playback crosses them, every loop, once per update with a
//! count when one long step spans several loops, filtered by weight, kept firing from a transition's source until it ends in every
//! switch mode, the same at any thread count, and bad event data refused with typed errors.

use std::sync::Arc;

use throng::clip::{Clip, ClipError, ClipEvent};
use throng::graph::CompiledGraph;
use throng::rig::Transform;
mod support;
use support::drive::locomotion_bindings;
use support::locomotion::{LOCOMOTION as GRAPH, LOCOMOTION_CLIPS as CLIPS};
use throng::state::{AnimationEvent, Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, StateError};

/// Two looping states and one that does not loop; `go` moves A → B with `switch` over
/// `time_s`, `hold` moves A → C with a cut.
fn graph(switch: &str, time_s: f32) -> Arc<CompiledGraph> {
    Arc::new(
        CompiledGraph::from_json(&format!(
            r#"{{
            "layers": [{{ "name": "Base",
                "states": [{{ "name": "START" }}, {{ "name": "A" }}, {{ "name": "B" }}, {{ "name": "C", "loop": false }},
                           {{ "name": "R", "speed": -1 }}],
                "transitions": [
                    {{ "from": "START", "to": "A" }},
                    {{ "from": "A", "to": "B", "time": {time_s}, "switch": {switch},
                      "conditions": [{{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }}] }},
                    {{ "from": "A", "to": "C", "switch": "cut",
                      "conditions": [{{ "parameterName": "hold", "predicate": "EQUAL_TO", "value": true }}] }},
                    {{ "from": "A", "to": "R", "switch": "cut",
                      "conditions": [{{ "parameterName": "reverse", "predicate": "EQUAL_TO", "value": true }}] }}
                ] }}],
            "parameters": {{
                "go": {{ "name": "go", "type": "TRIGGER" }},
                "hold": {{ "name": "hold", "type": "TRIGGER" }},
                "reverse": {{ "name": "reverse", "type": "TRIGGER" }}
            }}
        }}"#
        ))
        .unwrap(),
    )
}

/// A plays clip 0, B clip 1, C clip 2, R clip 3, each 1 s.
fn archetype(graph: Arc<CompiledGraph>) -> Archetype {
    let bind = |clip| ClipBinding { clip, duration_s: 1.0 };
    Archetype::from_bindings(graph, &[("A", bind(0)), ("B", bind(1)), ("C", bind(2)), ("R", bind(3))]).unwrap()
}

fn ev(name: &str, time_s: f32) -> ClipEvent {
    ClipEvent::new(name, time_s)
}

/// Footsteps on A at 0.25 s and 0.75 s.
fn footsteps() -> Archetype {
    archetype(graph(r#""cut""#, 0.0)).with_clip_events(0, &[ev("right", 0.75), ev("left", 0.25)]).unwrap()
}

fn one(arch: Archetype) -> (Crowd, ArchetypeId, CharacterHandle) {
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    let hero = crowd.spawn(kind).unwrap();
    (crowd, kind, hero)
}

fn names(crowd: &Crowd, kind: ArchetypeId) -> Vec<String> {
    let arch = crowd.archetype(kind).unwrap();
    crowd.events(kind).unwrap().iter().map(|e| arch.event_name(e.event).unwrap().to_owned()).collect()
}

fn trigger(crowd: &mut Crowd, kind: ArchetypeId, hero: CharacterHandle, name: &str) {
    let p = crowd.param(kind, name).unwrap();
    crowd.set_trigger(p, &[hero], false).unwrap();
}

#[test]
fn an_event_fires_once_on_the_update_that_crosses_its_time() {
    let (mut crowd, kind, hero) = one(footsteps());
    let mut fired = Vec::new();
    for update in 0..9 {
        crowd.update(0.1).unwrap();
        for e in crowd.events(kind).unwrap() {
            fired.push((update, *e));
        }
    }
    let arch = crowd.archetype(kind).unwrap();
    let left = arch.event_id("left").unwrap();
    let right = arch.event_id("right").unwrap();
    assert_ne!(left, right);
    let (_, row) = crowd.row_of(hero).unwrap();
    let state = crowd.readback(hero, 0).unwrap().active_state as u32;
    assert_eq!(crowd.state_name(kind, state as usize), Some("A"));
    let expect = |event, time_s| AnimationEvent {
        character: hero,
        row: row as u32,
        layer: 0,
        state,
        event,
        clip: 0,
        time_s,
        weight: 1.0,
        count: 1,
    };
    // 0.2 s → 0.3 s crosses 0.25; 0.7 s → 0.8 s crosses 0.75; nothing else in 0.9 s.
    assert_eq!(fired, vec![(2, expect(left, 0.25)), (7, expect(right, 0.75))]);
}

#[test]
fn a_looping_clip_fires_its_events_on_every_loop() {
    let (mut crowd, kind, _) = one(footsteps());
    let mut fired = Vec::new();
    for _ in 0..300 {
        crowd.update(1.0 / 60.0).unwrap();
        fired.extend(names(&crowd, kind));
    }
    // Five seconds of a one-second walk: five left steps and five right ones, alternating.
    let expect: Vec<&str> = (0..5).flat_map(|_| ["left", "right"]).collect();
    assert_eq!(fired, expect);
}

/// (name, count) of each event the last update reported, in order.
fn counted(crowd: &Crowd, kind: ArchetypeId) -> Vec<(String, u32)> {
    let arch = crowd.archetype(kind).unwrap();
    crowd.events(kind).unwrap().iter().map(|e| (arch.event_name(e.event).unwrap().to_owned(), e.count)).collect()
}

#[test]
fn a_step_spanning_several_loops_reports_each_event_once_with_its_count_in_order() {
    let (mut crowd, kind, _) = one(footsteps());
    crowd.update(2.6).unwrap();
    assert_eq!(
        counted(&crowd, kind),
        [("left".to_owned(), 3), ("right".to_owned(), 2)],
        "0 → 2.6 s crosses 0.25 s three times, 0.75 s twice"
    );
    crowd.update(0.2).unwrap();
    assert_eq!(names(&crowd, kind), ["right"], "2.6 s → 2.8 s crosses the third loop's 0.75 s");

    // A clip that does not loop fires each event once, its end included, however long the step.
    let arch = archetype(graph(r#""cut""#, 0.0)).with_clip_events(2, &[ev("land", 1.0), ev("takeoff", 0.3)]).unwrap();
    let (mut crowd, kind, hero) = one(arch);
    trigger(&mut crowd, kind, hero, "hold");
    crowd.update(0.1).unwrap();
    assert!(crowd.events(kind).unwrap().is_empty());
    crowd.update(10.0).unwrap();
    assert_eq!(names(&crowd, kind), ["takeoff", "land"]);
    crowd.update(10.0).unwrap();
    assert!(crowd.events(kind).unwrap().is_empty(), "a state holding its last frame crosses nothing");
}

#[test]
fn how_the_time_is_split_into_steps_does_not_change_what_fires() {
    // 2.6 s of a one-second walk crosses left, right, left, right, left whatever the steps,
    // from one step to many uneven ones (a pause of dt 0 included): no crossing is lost at a
    // step boundary and none fires twice.
    let mut seed = 0x2545_f491_u32;
    for split in 0..20 {
        let mut dts = Vec::new();
        let mut left = 2.6f32;
        while left > 0.0 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let dt = if split == 0 { left } else { (seed % 400) as f32 / 1000.0 }.min(left);
            dts.push(dt);
            left -= dt;
        }
        let (mut crowd, kind, _) = one(footsteps());
        let (mut left, mut right) = (0, 0);
        for &dt in &dts {
            crowd.update(dt).unwrap();
            for (name, count) in counted(&crowd, kind) {
                *if name == "left" { &mut left } else { &mut right } += count;
            }
        }
        assert_eq!((left, right), (3, 2), "steps {dts:?}");
    }
}

#[test]
fn a_huge_step_reports_each_event_once_with_every_loop_counted() {
    let (mut crowd, kind, _) = one(footsteps());
    crowd.update(1.0e6).unwrap();
    assert_eq!(counted(&crowd, kind), [("left".to_owned(), 1_000_000), ("right".to_owned(), 1_000_000)]);
    assert_eq!(crowd.events_dropped(kind), Ok(0));
}

#[test]
fn reverse_playback_fires_in_reverse_clip_order() {
    let arch = archetype(graph(r#""cut""#, 0.0)).with_clip_events(3, &[ev("early", 0.2), ev("late", 0.7)]).unwrap();
    let (mut crowd, kind, hero) = one(arch);
    trigger(&mut crowd, kind, hero, "reverse");
    crowd.update(0.01).unwrap();
    let mut fired = Vec::new();
    for _ in 0..20 {
        crowd.update(0.1).unwrap();
        fired.extend(names(&crowd, kind));
    }
    // Clip time runs 1 → 0 → (wrap) 1 → 0: 0.7 s comes before 0.2 s on each pass.
    assert_eq!(fired, ["late", "early", "late", "early"]);
}

#[test]
fn an_event_at_a_states_start_fires_when_the_state_is_entered() {
    let arch = archetype(graph(r#""cut""#, 0.0))
        .with_clip_events(0, &[ev("a_start", 0.0)])
        .unwrap()
        .with_clip_events(2, &[ev("c_start", 0.0)])
        .unwrap();
    let (mut crowd, kind, hero) = one(arch);
    // A spawned character's first update starts its default state.
    crowd.update(0.1).unwrap();
    assert_eq!(names(&crowd, kind), ["a_start"]);
    crowd.update(0.1).unwrap();
    assert!(names(&crowd, kind).is_empty());
    // A wrap of the loop crosses 0 again.
    crowd.update(0.85).unwrap();
    assert_eq!(names(&crowd, kind), ["a_start"]);
    // A cut to C: C starts playing on the next update, and fires its start then, once.
    trigger(&mut crowd, kind, hero, "hold");
    crowd.update(0.1).unwrap();
    assert!(names(&crowd, kind).is_empty());
    crowd.update(0.1).unwrap();
    assert_eq!(names(&crowd, kind), ["c_start"]);
    crowd.update(0.1).unwrap();
    assert!(names(&crowd, kind).is_empty());
}

/// A 1D blend of two one-second clips at `mix` (Walk 1 − mix, Run mix) on the base layer, and
/// an upper layer of weight 0.4 playing Wave; each clip has one event.
fn blended(threshold: f32, mix: f32) -> (Crowd, ArchetypeId) {
    let graph = Arc::new(
        CompiledGraph::from_json(&format!(
            r#"{{
            "layers": [
              {{ "name": "Base",
                "states": [{{ "name": "START" }}, {{ "name": "Move", "blendTree": {{ "type": "1D", "parameter": "mix",
                    "children": [{{ "name": "Walk", "point": 0 }}, {{ "name": "Run", "point": 1 }}] }} }}],
                "transitions": [{{ "from": "START", "to": "Move" }}] }},
              {{ "name": "Upper", "weight": 0.4,
                "states": [{{ "name": "START" }}, {{ "name": "Wave" }}],
                "transitions": [{{ "from": "START", "to": "Wave" }}] }}
            ],
            "parameters": {{ "mix": {{ "name": "mix", "type": "FLOAT", "value": {mix} }} }}
        }}"#
        ))
        .unwrap(),
    );
    let bind = |clip| ClipBinding { clip, duration_s: 1.0 };
    let arch = Archetype::from_bindings(graph, &[("Move.Walk", bind(0)), ("Move.Run", bind(1)), ("Wave", bind(2))])
        .unwrap()
        .with_clip_events(0, &[ev("walk_step", 0.5)])
        .unwrap()
        .with_clip_events(1, &[ev("run_step", 0.5)])
        .unwrap()
        .with_clip_events(2, &[ev("wave_peak", 0.5)])
        .unwrap()
        .with_event_weight_threshold(threshold)
        .unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    crowd.spawn(kind).unwrap();
    (crowd, kind)
}

/// Every event of one second of updates as (name, weight).
fn one_second(crowd: &mut Crowd, kind: ArchetypeId) -> Vec<(String, f32)> {
    let mut fired = Vec::new();
    for _ in 0..10 {
        crowd.update(0.1).unwrap();
        let arch = crowd.archetype(kind).unwrap();
        fired.extend(
            crowd.events(kind).unwrap().iter().map(|e| (arch.event_name(e.event).unwrap().to_owned(), e.weight)),
        );
    }
    fired
}

#[test]
fn clips_weighted_below_the_threshold_or_not_counting_do_not_fire() {
    let (mut crowd, kind) = blended(0.0, 0.3);
    let fired = one_second(&mut crowd, kind);
    let find = |name: &str| fired.iter().filter(|(n, _)| n == name).map(|(_, w)| *w).collect::<Vec<f32>>();
    // Every clip that shows fires, carrying its weight in the pose: blend weight, and the
    // layer's weight above the base.
    assert_eq!(find("walk_step").len(), 1);
    assert!((find("walk_step")[0] - 0.7).abs() < 1e-5, "{fired:?}");
    assert!((find("run_step")[0] - 0.3).abs() < 1e-5, "{fired:?}");
    assert!((find("wave_peak")[0] - 0.4).abs() < 1e-5, "{fired:?}");

    let (mut crowd, kind) = blended(0.5, 0.3);
    let fired = one_second(&mut crowd, kind);
    assert_eq!(fired.len(), 1, "only the walk (0.7) passes 0.5: {fired:?}");
    assert_eq!(fired[0].0, "walk_step");

    // A clip at weight exactly 0 never fires, even with no threshold.
    let (mut crowd, kind) = blended(0.0, 1.0);
    let fired = one_second(&mut crowd, kind);
    assert!(fired.iter().all(|(n, _)| n != "walk_step"), "{fired:?}");

    // Nor does one at a subnormal weight, which no evaluator samples (`program::weighs`).
    let (mut crowd, kind) = blended(0.0, 1e-40);
    let fired = one_second(&mut crowd, kind);
    assert!(fired.iter().all(|(n, _)| n != "run_step") && fired.iter().any(|(n, _)| n == "walk_step"), "{fired:?}");
}

/// One update of [`run_transition`].
struct Update {
    /// Whether the transition was in flight after the update.
    transitioning: bool,
    /// The readback's shares of B and A.
    active_weight: f32,
    previous_weight: f32,
    /// Weights of the events A and B fired.
    a: Vec<f32>,
    b: Vec<f32>,
}

/// Runs A for 0.5 s, triggers A → B, and records 1.2 s of updates.
fn run_transition(switch: &str) -> Vec<Update> {
    // A: 0.2 s, an event every loop at 0.13 s; B: 0.2 s, an event at 0.07 s.
    let bind = |clip, duration_s| ClipBinding { clip, duration_s };
    let arch = Archetype::from_bindings(
        graph(switch, 0.6),
        &[("A", bind(0, 0.2)), ("B", bind(1, 0.2)), ("C", bind(2, 1.0)), ("R", bind(3, 1.0))],
    )
    .unwrap()
    .with_clip_events(0, &[ev("a", 0.13)])
    .unwrap()
    .with_clip_events(1, &[ev("b", 0.07)])
    .unwrap();
    let (mut crowd, kind, hero) = one(arch);
    for _ in 0..25 {
        crowd.update(0.02).unwrap();
    }
    trigger(&mut crowd, kind, hero, "go");
    let a = crowd.archetype(kind).unwrap().event_id("a").unwrap();
    let mut updates = Vec::new();
    for _ in 0..60 {
        crowd.update(0.02).unwrap();
        let r = crowd.readback(hero, 0).unwrap();
        let mut u = Update {
            transitioning: r.transitioning,
            active_weight: r.active_weight,
            previous_weight: r.previous_weight,
            a: Vec::new(),
            b: Vec::new(),
        };
        for e in crowd.events(kind).unwrap() {
            if e.event == a { u.a.push(e.weight) } else { u.b.push(e.weight) }
        }
        updates.push(u);
    }
    updates
}

#[test]
fn a_transitions_source_fires_until_the_transition_ends_in_every_mode() {
    let modes = [
        r#"{ "mode": "crossfade" }"#,
        r#"{ "mode": "crossfade", "easing": "smoothstep" }"#,
        r#"{ "mode": "frozen" }"#,
        r#"{ "mode": "inertialize" }"#,
        r#"{ "mode": "inertialize", "spring": { "halflife": 0.1 } }"#,
    ];
    for mode in modes {
        let run = run_transition(mode);
        let last_in_flight =
            run.iter().rposition(|u| u.transitioning).unwrap_or_else(|| panic!("{mode}: no transition"));
        // 0.6 s at 0.02 s per update: in flight after updates 0..29.
        assert!((28..=30).contains(&last_in_flight), "{mode}: in flight until update {last_in_flight}");
        let a_fires: Vec<(usize, f32)> =
            run.iter().enumerate().flat_map(|(i, u)| u.a.iter().map(move |w| (i, *w))).collect();
        // A loops every 0.2 s, so it crosses 0.13 s three times in the 0.6 s transition.
        assert_eq!(a_fires.len(), 3, "{mode}: A fired at {a_fires:?}");
        assert!(
            a_fires.iter().all(|&(i, _)| i <= last_in_flight),
            "{mode}: A fired after the transition ended: {a_fires:?}"
        );
        assert!(a_fires.windows(2).all(|w| w[1].1 < w[0].1), "{mode}: A's weight should fall as it fades: {a_fires:?}");
        for &(i, w) in &a_fires {
            let previous_weight = run[i].previous_weight;
            // The transition's clock starts on the update after the switch; on the switch
            // update itself A fires at the weight the last pose showed it at, 1.
            let progress = i as f32 * 0.02 / 0.6;
            let expect = if mode.contains("inertialize") { 1.0 - progress } else { previous_weight };
            assert!((w - expect).abs() < 1e-3, "{mode}: A at update {i} weighs {w}, expected {expect}");
        }
        // B fires from its start, at its own share, through the transition and after it.
        let b_fires: Vec<usize> = run.iter().enumerate().filter(|(_, u)| !u.b.is_empty()).map(|(i, _)| i).collect();
        assert_eq!(b_fires.len(), 6, "{mode}: B fired at updates {b_fires:?}");
        for (i, u) in run.iter().enumerate() {
            for &w in &u.b {
                let expect = if mode.contains("inertialize") { 1.0 } else { u.active_weight };
                assert!((w - expect).abs() < 1e-5, "{mode}: B at update {i} weighs {w}, expected {expect}");
            }
        }
    }

    // A cut leaves nothing behind: A fires no more once B has started.
    let run = run_transition(r#""cut""#);
    assert!(run.iter().all(|u| !u.transitioning));
    assert!(run.iter().skip(1).all(|u| u.a.is_empty()), "A fired after the cut");
}

#[test]
fn events_are_the_same_at_any_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let graph = Arc::new(CompiledGraph::from_json(GRAPH).unwrap());
            let mut arch = Archetype::from_bindings(graph, &locomotion_bindings())
                .unwrap()
                .with_event_weight_threshold(0.1)
                .unwrap();
            for (i, &(_, d)) in CLIPS.iter().enumerate() {
                arch = arch
                    .with_clip_events(
                        i as u32,
                        &[ev("step", d * 0.3), ev("mark", d * 0.8), ev(&format!("clip{i}"), d * 0.55)],
                    )
                    .unwrap();
            }
            let mut crowd = Crowd::new();
            let kind = crowd.add_archetype(arch);
            let mut handles: Vec<CharacterHandle> = (0..3000).map(|_| crowd.spawn(kind).unwrap()).collect();
            let speed = crowd.param(kind, "speed").unwrap();
            let jump = crowd.param(kind, "jump").unwrap();
            let wave = crowd.param(kind, "wave").unwrap();
            let mut all = Vec::new();
            for f in 0..60 {
                let speeds: Vec<f32> = (0..handles.len()).map(|i| ((i * 7 + f * 3) % 50) as f32 / 10.0 - 0.3).collect();
                crowd.set_float(speed, &handles, &speeds).unwrap();
                let jumpers: Vec<CharacterHandle> =
                    handles.iter().copied().enumerate().filter(|(i, _)| (i + f) % 37 == 0).map(|(_, h)| h).collect();
                crowd.set_trigger(jump, &jumpers, false).unwrap();
                let wavers: Vec<CharacterHandle> = handles
                    .iter()
                    .copied()
                    .enumerate()
                    .filter(|(i, _)| (i * 5 + f) % 53 == 0)
                    .map(|(_, h)| h)
                    .collect();
                crowd.set_trigger(wave, &wavers, true).unwrap();
                if f % 10 == 5 {
                    // Churn: rows move, handles must not.
                    for h in handles.drain(..50) {
                        crowd.despawn(h).unwrap();
                    }
                    handles.extend((0..50).map(|_| crowd.spawn(kind).unwrap()));
                }
                crowd.update(1.0 / 30.0).unwrap();
                for e in crowd.events(kind).unwrap() {
                    assert_eq!(
                        crowd.row_of(e.character).unwrap(),
                        (kind, e.row as usize),
                        "an event's handle names its row"
                    );
                }
                // Each run has its own crowd, whose tag its handles carry: compare all but the
                // handle, which the row (checked above) stands for.
                all.push(
                    crowd
                        .events(kind)
                        .unwrap()
                        .iter()
                        .map(|e| AnimationEvent { character: CharacterHandle::from_bits(0), ..*e })
                        .collect::<Vec<_>>(),
                );
            }
            all
        })
    };
    let one = run(1);
    assert!(one.iter().map(Vec::len).sum::<usize>() > 3000, "the run should fire plenty of events");
    for threads in [2, 4] {
        let other = run(threads);
        for (f, (a, b)) in one.iter().zip(&other).enumerate() {
            assert!(
                a == b,
                "update {f}: {threads} threads reported other events than 1 thread ({} vs {})",
                b.len(),
                a.len()
            );
        }
    }
}

#[test]
fn an_archetype_without_events_reports_none() {
    let (mut crowd, kind, _) = one(archetype(graph(r#""cut""#, 0.0)));
    assert!(!crowd.archetype(kind).unwrap().has_events());
    for _ in 0..30 {
        crowd.update(0.1).unwrap();
        assert!(crowd.events(kind).unwrap().is_empty());
    }
}

#[test]
fn bad_events_are_refused_with_where_and_what() {
    let base = || archetype(graph(r#""cut""#, 0.0));
    for (time_s, what) in [(f32::NAN, "not finite"), (f32::INFINITY, "not finite"), (-0.1, "outside"), (1.5, "outside")]
    {
        match base().with_clip_events(0, &[ev("ok", 0.5), ev("bad", time_s)]) {
            Err(StateError::BadEvent { clip: 0, index: 1, name, path, duration_s, what: why, .. }) => {
                assert_eq!(name, "bad");
                assert_eq!(path, "A");
                assert_eq!(duration_s, 1.0);
                assert!(why.contains(what), "{time_s}: {why}");
            }
            other => panic!("time {time_s}: expected BadEvent, got {other:?}"),
        }
    }
    assert!(matches!(base().with_clip_events(0, &[ev("", 0.5)]), Err(StateError::BadEvent { index: 0, .. })));
    assert_eq!(base().with_clip_events(7, &[ev("x", 0.5)]).unwrap_err(), StateError::UnboundEventClip { clip: 7 });
    for t in [f32::NAN, -0.01, 1.01] {
        assert!(
            matches!(base().with_event_weight_threshold(t), Err(StateError::BadEventThreshold(_))),
            "threshold {t}"
        );
    }

    // A clip checks its own events against its duration.
    let clip = Clip::from_poses("walk", 1, vec![Transform::IDENTITY; 2], 0.8, true).unwrap();
    match clip.clone().with_events(vec![ev("step", 0.9)]) {
        Err(ClipError::BadEvent { clip, index: 0, name, time_s, duration_s, .. }) => {
            assert_eq!((clip.as_str(), name.as_str(), time_s, duration_s), ("walk", "step", 0.9, 0.8));
        }
        other => panic!("expected BadEvent, got {other:?}"),
    }
    let clip = clip.with_events(vec![ev("step", 0.4)]).unwrap();
    assert_eq!(clip.events(), [ev("step", 0.4)]);

    // Clip events reach an archetype through its clip table, checked against each leaf's duration.
    let clips = vec![clip.clone(), clip.clone(), clip.clone(), clip];
    let arch = base().with_events_from_clips(&clips).unwrap();
    assert_eq!(arch.event_names(), ["step"]);
    let short = Archetype::from_bindings(
        graph(r#""cut""#, 0.0),
        &[
            ("A", ClipBinding { clip: 0, duration_s: 0.3 }),
            ("B", ClipBinding { clip: 1, duration_s: 1.0 }),
            ("C", ClipBinding { clip: 2, duration_s: 1.0 }),
            ("R", ClipBinding { clip: 3, duration_s: 1.0 }),
        ],
    )
    .unwrap();
    assert!(matches!(short.with_events_from_clips(&clips), Err(StateError::BadEvent { clip: 0, .. })));
}

#[test]
fn trace_scripts_declare_events_where_they_bind_clips() {
    use throng::trace::{TraceError, run_script};
    let script = |clip_events: &str| {
        format!(
            r#"{{
            "stateGraph": {{ "layers": [{{ "name": "Base",
                "states": [{{ "name": "START" }}, {{ "name": "Move", "blendTree": {{ "type": "1D", "parameter": "speed",
                    "children": [{{ "name": "Walk", "point": 1 }}, {{ "name": "Run", "point": 3 }}] }} }}],
                "transitions": [{{ "from": "START", "to": "Move" }}] }}],
              "parameters": {{ "speed": {{ "name": "speed", "type": "FLOAT", "value": 1.5 }} }} }},
            "clips": {{ "*": 1.0 }},
            "clipEvents": {clip_events},
            "dt": 0.1, "frames": 10
        }}"#
        )
    };
    let lines = run_script(&script(
        r#"{ "Move.Walk": [{ "name": "step", "time": 0.25 }], "*": [{ "name": "run_step", "time": 0.75 }] }"#,
    ))
    .unwrap();
    let fired: Vec<(usize, &str, f32)> =
        lines.iter().flat_map(|l| l.events.iter().map(move |(n, w, _)| (l.frame, n.as_str(), *w))).collect();
    // speed 1.5 weighs Walk 0.75 and Run 0.25; both one-second clips, synced.
    assert_eq!(fired.len(), 2, "{fired:?}");
    assert_eq!((fired[0].0, fired[0].1), (2, "step"));
    assert!((fired[0].2 - 0.75).abs() < 1e-5);
    assert_eq!((fired[1].0, fired[1].1), (7, "run_step"));
    assert!((fired[1].2 - 0.25).abs() < 1e-5);
    assert!(lines[2].to_json().ends_with(r#","events":[{"name":"step","weight":0.75}]}"#), "{}", lines[2].to_json());
    assert!(!lines[0].to_json().contains("events"), "frames without events print as before");

    for (events, path) in [
        (r#"{ "Nope": [] }"#, "clipEvents.Nope"),
        (r#"{ "Move": [{ "name": "x" }] }"#, "clipEvents.Move[0]"),
        (r#"{ "Move": [{ "name": 3, "time": 0.1 }] }"#, "clipEvents.Move[0].name"),
        (r#"{ "Move": [{ "name": "late", "time": 1.5 }] }"#, "clipEvents.Move"),
    ] {
        match run_script(&script(events)) {
            Err(TraceError::Script { path: got, .. } | TraceError::State { path: got, .. }) => {
                assert_eq!(got, path, "{events}")
            }
            other => panic!("{events}: expected an error at {path}, got {other:?}"),
        }
    }
}

#[test]
fn unsynced_blend_children_fire_at_their_own_rates_where_their_samples_cross() {
    let graph = Arc::new(
        CompiledGraph::from_json(
            r#"{
            "layers": [{ "name": "Base",
                "states": [{ "name": "START" }, { "name": "Move", "blendTree": { "type": "1D", "parameter": "mix", "syncAnimations": false,
                    "children": [{ "name": "Walk", "point": 0 }, { "name": "Run", "point": 1 }] } }],
                "transitions": [{ "from": "START", "to": "Move" }] }],
            "parameters": { "mix": { "name": "mix", "type": "FLOAT", "value": 0.5 } }
        }"#,
        )
        .unwrap(),
    );
    let arch = Archetype::from_bindings(
        graph,
        &[
            ("Move.Walk", ClipBinding { clip: 0, duration_s: 1.0 }),
            ("Move.Run", ClipBinding { clip: 1, duration_s: 0.5 }),
        ],
    )
    .unwrap()
    .with_clip_events(0, &[ev("walk_step", 0.25)])
    .unwrap()
    .with_clip_events(1, &[ev("run_step", 0.1)])
    .unwrap();
    let (mut crowd, kind, _) = one(arch);
    let (mut walk, mut run) = (0, 0);
    for _ in 0..67 {
        crowd.update(0.03).unwrap();
        for e in crowd.events(kind).unwrap() {
            // The clip's sample this update played across the event's time.
            let s = crowd.samples(kind).unwrap().iter().find(|s| s.clip == e.clip && s.weight > 0.0).unwrap();
            let duration = if e.clip == 0 { 1.0 } else { 0.5 };
            let before = s.time_s - s.advance_s;
            let crossed = (before < e.time_s && e.time_s <= s.time_s) || (before < 0.0 && e.time_s > before + duration);
            assert!(crossed, "clip {} played {before} → {} s, yet fired its event at {} s", e.clip, s.time_s, e.time_s);
            if e.clip == 0 { walk += 1 } else { run += 1 }
        }
    }
    // 2.01 s: the walk (1 s) crosses 0.25 s twice, the run (0.5 s, at its own rate) 0.1 s four times.
    assert_eq!((walk, run), (2, 4));
}
