//! Live transition editing: `CompiledGraph::with_transition_timing` and
//! `Crowd::replace_graph` change one archetype's transition timings under running characters,
//! and a reset gives back the graph and the behaviour of the file's timings, bit for bit.

use std::sync::Arc;

use throng::graph::{CompiledGraph, Easing, Inertialization, SwitchMode, TransitionTiming};
use throng::program::{ClipSample, LayerProgram};
use throng::state::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, StateError};

const GRAPH: &str = r#"{ "layers": [{ "name": "Base",
    "states": [{ "name": "START" }, { "name": "Idle" }, { "name": "Walk" }],
    "transitions": [
        { "from": "START", "to": "Idle" },
        { "from": "Idle", "to": "Walk", "time": 0.5, "switch": { "mode": "crossfade" },
          "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": true }] },
        { "from": "Walk", "to": "Idle", "time": 0.25,
          "conditions": [{ "parameterName": "go", "predicate": "EQUAL_TO", "value": false }] }
    ] }],
    "parameters": { "go": { "name": "go", "type": "BOOLEAN", "value": false } } }"#;

const DT_S: f32 = 1.0 / 60.0;

fn graph() -> CompiledGraph {
    CompiledGraph::from_json(GRAPH).expect("the test graph compiles")
}

/// Idle → Walk's index.
fn idle_to_walk(g: &CompiledGraph) -> usize {
    g.transitions().iter().position(|t| t.duration == 0.5).expect("Idle → Walk")
}

/// A slower, smoothstepped, inertialized Idle → Walk.
fn edited_timing() -> TransitionTiming {
    TransitionTiming {
        duration: 2.0,
        normalized: false,
        switch: SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: true }),
        easing: Easing::Smoothstep,
    }
}

fn crowd_of(g: Arc<CompiledGraph>, archetypes: usize) -> (Crowd, Vec<ArchetypeId>, Vec<CharacterHandle>) {
    let clips =
        [("Idle", ClipBinding { clip: 0, duration_s: 1.3 }), ("Walk", ClipBinding { clip: 1, duration_s: 0.9 })];
    let mut crowd = Crowd::new();
    let mut kinds = Vec::new();
    let mut heroes = Vec::new();
    for _ in 0..archetypes {
        let kind = crowd.add_archetype(Archetype::from_bindings(Arc::clone(&g), &clips).expect("binds"));
        heroes.push(crowd.spawn(kind).expect("spawns"));
        kinds.push(kind);
    }
    (crowd, kinds, heroes)
}

fn set_go(crowd: &mut Crowd, kind: ArchetypeId, hero: CharacterHandle, go: bool) {
    let p = crowd.param(kind, "go").expect("go");
    crowd.set_bool(p, &[hero], &[go]).expect("sets go");
}

/// An archetype's programs and samples, the transition index left out: a transition carried
/// over as a copy is numbered after the graph's, and no evaluator reads the number.
fn frame(crowd: &Crowd, kind: ArchetypeId) -> (Vec<LayerProgram>, Vec<ClipSample>) {
    let programs =
        crowd.programs(kind).expect("programs").iter().map(|p| LayerProgram { transition: 0, ..*p }).collect();
    (programs, crowd.samples(kind).expect("samples").to_vec())
}

fn assert_same_bits(a: &(Vec<LayerProgram>, Vec<ClipSample>), b: &(Vec<LayerProgram>, Vec<ClipSample>), at: &str) {
    assert_eq!(bytemuck::cast_slice::<_, u8>(&a.0), bytemuck::cast_slice::<_, u8>(&b.0), "programs differ {at}");
    assert_eq!(bytemuck::cast_slice::<_, u8>(&a.1), bytemuck::cast_slice::<_, u8>(&b.1), "samples differ {at}");
}

#[test]
fn editing_changes_only_that_archetypes_graph() {
    let original = Arc::new(graph());
    let (mut crowd, kinds, _) = crowd_of(Arc::clone(&original), 2);
    let t = idle_to_walk(&original);
    let edited = original.with_transition_timing(t, edited_timing()).expect("a valid edit");
    crowd.replace_graph(kinds[0], edited).expect("only timings differ");

    let a = crowd.archetype(kinds[0]).expect("a").graph();
    let b = crowd.archetype(kinds[1]).expect("b").graph();
    assert!(Arc::ptr_eq(b, &original), "the other archetype keeps its graph");
    assert_eq!(a.id(), original.id(), "the edit keeps the graph's identity");
    assert_eq!(TransitionTiming::of(&a.transitions()[t]), edited_timing());
    for (k, (x, y)) in a.transitions().iter().zip(original.transitions()).enumerate() {
        if k != t {
            assert_eq!(x, y, "transition {k} changed");
        }
    }
    // Parameter ids resolved before the edit still work.
    let go = crowd.param(kinds[0], "go").expect("go");
    let hero = crowd.handle_at(kinds[0], 0).expect("a character");
    crowd.set_bool(go, &[hero], &[true]).expect("the parameter id is still the graph's");
}

#[test]
fn the_edited_timing_applies_to_the_next_transition_taken() {
    let original = Arc::new(graph());
    let t = idle_to_walk(&original);
    let (mut crowd, kinds, heroes) = crowd_of(Arc::clone(&original), 1);
    let edited = original.with_transition_timing(t, edited_timing()).expect("a valid edit");
    crowd.replace_graph(kinds[0], edited).expect("only timings differ");
    set_go(&mut crowd, kinds[0], heroes[0], true);
    for _ in 0..60 {
        crowd.update(DT_S).expect("updates");
    }
    let layer = crowd.readback(heroes[0], 0).expect("readback");
    assert!(layer.transitioning, "a 2 s blend is still running after 1 s");
    assert!((layer.transition_progress - 0.5).abs() < 0.02, "progress {}", layer.transition_progress);
    let program = crowd.programs(kinds[0]).expect("programs")[0];
    assert_eq!(program.switch_mode(), throng::program::SwitchMode::InertializeQuinticOvershootControl);
}

/// A character mid-crossfade when its transition is edited finishes it as it began (its
/// programs and samples are bit for bit those of an unedited twin); the next time it is taken
/// the edit applies; and a reset gives back the file's graph and behaviour bit for bit.
#[test]
fn characters_mid_transition_do_not_pop_and_reset_restores_bit_for_bit() {
    let original = Arc::new(graph());
    let t = idle_to_walk(&original);
    let (mut edited, ek, eh) = crowd_of(Arc::clone(&original), 1);
    let (mut twin, tk, th) = crowd_of(Arc::clone(&original), 1);
    for (crowd, kind, hero) in [(&mut edited, ek[0], eh[0]), (&mut twin, tk[0], th[0])] {
        set_go(crowd, kind, hero, true);
        for _ in 0..10 {
            crowd.update(DT_S).expect("updates");
        }
        assert!(crowd.readback(hero, 0).expect("readback").transitioning);
    }
    let change = original.with_transition_timing(t, edited_timing()).expect("a valid edit");
    edited.replace_graph(ek[0], change).expect("only timings differ");
    // The in-flight crossfade (0.5 s) finishes as it was taken.
    let mut frames = 0;
    while twin.readback(th[0], 0).expect("readback").transitioning {
        edited.update(DT_S).expect("updates");
        twin.update(DT_S).expect("updates");
        frames += 1;
        assert_same_bits(&frame(&edited, ek[0]), &frame(&twin, tk[0]), &format!("{frames} frames after the edit"));
    }
    assert!(frames > 10, "the twin's crossfade ran {frames} more frames");
    assert!(!edited.readback(eh[0], 0).expect("readback").transitioning);

    // Back to Idle (untouched transition), then Walk again: now with the edited timing.
    for (crowd, kind, hero) in [(&mut edited, ek[0], eh[0]), (&mut twin, tk[0], th[0])] {
        set_go(crowd, kind, hero, false);
        for _ in 0..30 {
            crowd.update(DT_S).expect("updates");
        }
        set_go(crowd, kind, hero, true);
        for _ in 0..40 {
            crowd.update(DT_S).expect("updates");
        }
    }
    let e = edited.readback(eh[0], 0).expect("readback");
    let w = twin.readback(th[0], 0).expect("readback");
    assert_eq!(edited.state_name(ek[0], e.active_state), Some("Walk"));
    assert!(e.transitioning, "the edited blend lasts 2 s: {e:?}");
    assert!(!w.transitioning, "the file's lasts 0.5 s: {w:?}");

    // Reset: the file's timing again, the graph equal to the file's, and once the edited blend
    // has run out, the same frames as the twin's.
    let reset = edited
        .archetype(ek[0])
        .expect("edited")
        .graph()
        .with_transition_timing(t, TransitionTiming::of(&original.transitions()[t]))
        .expect("the file's timing is valid");
    edited.replace_graph(ek[0], reset).expect("only timings differ");
    let now = edited.archetype(ek[0]).expect("edited").graph();
    assert!(**now == *original, "the reset graph is the file's");
    let (x, y) = (&now.transitions()[t], &original.transitions()[t]);
    assert_eq!(
        (x.duration.to_bits(), x.normalized, x.switch, x.easing),
        (y.duration.to_bits(), y.normalized, y.switch, y.easing)
    );
    for (crowd, kind, hero) in [(&mut edited, ek[0], eh[0]), (&mut twin, tk[0], th[0])] {
        set_go(crowd, kind, hero, false);
        for _ in 0..150 {
            crowd.update(DT_S).expect("updates");
        }
        assert!(!crowd.readback(hero, 0).expect("readback").transitioning);
    }
    // Both idle now, at different phases; a fresh character of each crowd runs the same frames.
    let fresh_e = edited.spawn(ek[0]).expect("spawns");
    let fresh_t = twin.spawn(tk[0]).expect("spawns");
    set_go(&mut edited, ek[0], fresh_e, true);
    set_go(&mut twin, tk[0], fresh_t, true);
    for step in 0..45 {
        edited.update(DT_S).expect("updates");
        twin.update(DT_S).expect("updates");
        let (e, w) = (frame(&edited, ek[0]), frame(&twin, tk[0]));
        // The fresh character's row, the last (one layer per character).
        let last = |f: &(Vec<LayerProgram>, Vec<ClipSample>)| {
            let p = f.0[f.0.len() - 1];
            let samples =
                f.1[p.first_sample as usize..(p.first_sample + p.num_target + p.num_secondary) as usize].to_vec();
            (vec![p], samples)
        };
        assert_same_bits(&last(&e), &last(&w), &format!("step {step} after the reset"));
    }
}

#[test]
fn a_graph_of_another_shape_is_refused_and_nothing_changes() {
    let original = Arc::new(graph());
    let (mut crowd, kinds, _) = crowd_of(Arc::clone(&original), 1);
    let other = CompiledGraph::from_json(&GRAPH.replace("\"value\": true", "\"value\": false")).expect("compiles");
    assert_eq!(
        crowd.replace_graph(kinds[0], other),
        Err(StateError::IncompatibleGraph { archetype: 0, what: "conditions" })
    );
    assert!(Arc::ptr_eq(crowd.archetype(kinds[0]).expect("kept").graph(), &original));
    let renamed = CompiledGraph::from_json(&GRAPH.replace("\"go\"", "\"run\"")).expect("compiles");
    assert!(matches!(crowd.replace_graph(kinds[0], renamed), Err(StateError::IncompatibleGraph { .. })));
    // An archetype id of a crowd with more archetypes than this one.
    let (_, more, _) = crowd_of(Arc::clone(&original), 3);
    assert_eq!(crowd.replace_graph(more[2], graph()), Err(StateError::UnknownArchetype(2)));
}
