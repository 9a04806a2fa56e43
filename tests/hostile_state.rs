//! Hostile input to the state step and the trace tool (issue #25): handles from another crowd,
//! clip events on a tiny clip under a huge `dt`, trace scripts with extreme values and long
//! names, and work that must stay linear in a script's size.

use std::sync::Arc;

use throng::clip::ClipEvent;
use throng::graph::CompiledGraph;
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd, ParamValue, StateError};

const WALK: &str = r#"{ "layers": [{ "name": "Base", "states": [{ "name": "START" }, { "name": "Walk" }],
    "transitions": [{ "from": "START", "to": "Walk" }] }],
    "parameters": { "speed": { "name": "speed", "type": "FLOAT", "value": 0 } } }"#;

fn walk_crowd(duration_s: f32, events: &[ClipEvent]) -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(WALK).unwrap());
    let mut arch = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s })]).unwrap();
    if !events.is_empty() {
        arch = arch.with_clip_events(0, events).unwrap();
    }
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(arch);
    (crowd, kind)
}

#[test]
fn a_handle_from_another_crowd_is_refused_and_changes_nothing() {
    let (mut a, kind_a) = walk_crowd(1.0, &[]);
    let (mut b, kind_b) = walk_crowd(1.0, &[]);
    let mine = a.spawn(kind_a).unwrap();
    let theirs = b.spawn(kind_b).unwrap();
    assert_ne!(mine, theirs, "the same slot and generation in two crowds still differ");
    let speed = a.param(kind_a, "speed").unwrap();
    let foreign = |r: Result<(), StateError>| matches!(r, Err(StateError::ForeignHandle { index: 0, generation: 0, .. }));
    assert!(foreign(a.set_float(speed, &[theirs], &[3.0])), "set_float with crowd B's handle");
    assert!(foreign(a.set(speed, theirs, ParamValue::Float(3.0))));
    assert!(foreign(a.despawn(theirs)), "despawn with crowd B's handle");
    assert!(foreign(a.set_update_rate(&[theirs], &[2])));
    assert!(matches!(a.readback(theirs, 0), Err(StateError::ForeignHandle { .. })));
    assert!(matches!(a.row_of(theirs), Err(StateError::ForeignHandle { .. })));
    assert_eq!(a.get(speed, mine), Ok(ParamValue::Float(0.0)), "crowd A's character is untouched");
    assert_eq!(a.num_characters(kind_a), Ok(1));
    assert_eq!(a.update_rate(mine), Ok(1));
    let err = a.despawn(theirs).unwrap_err().to_string();
    assert!(err.contains("another") || err.contains("not to this crowd"), "{err}");
    // Handles survive the trip through their bits with their crowd.
    assert!(matches!(a.row_of(throng::state::CharacterHandle::from_bits(theirs.to_bits())), Err(StateError::ForeignHandle { .. })));
    assert_eq!(a.row_of(throng::state::CharacterHandle::from_bits(mine.to_bits())), Ok((kind_a, 0)));
    assert_ne!(mine.to_bits(), 0, "no handle is 0");
}

#[cfg(feature = "capi")]
#[test]
fn the_c_abi_refuses_another_crowds_handle() {
    use std::ptr;
    use throng::capi::*;

    let graph = include_str!("../src/demo/locomotion.json");
    // SAFETY: every pointer below is a live local or one the calls returned.
    unsafe {
        let mut humanoid = ptr::null_mut();
        assert_eq!(throng_character_humanoid(26, &mut humanoid), ThrongStatus::Ok);
        let mut crowds = [ptr::null_mut(); 2];
        let mut kinds = [0u32; 2];
        let mut handles = [[0u64; 1]; 2];
        for c in 0..2 {
            assert_eq!(throng_crowd_create(&mut crowds[c]), ThrongStatus::Ok);
            assert_eq!(throng_crowd_add_archetype(crowds[c], humanoid, graph.as_ptr(), graph.len(), &mut kinds[c]), ThrongStatus::Ok);
            assert_eq!(throng_crowd_spawn(crowds[c], kinds[c], 1, handles[c].as_mut_ptr()), ThrongStatus::Ok);
        }
        let mut speed = 0;
        assert_eq!(throng_crowd_find_param(crowds[0], kinds[0], c"speed".as_ptr(), &mut speed), ThrongStatus::Ok);
        assert_eq!(throng_crowd_set_float(crowds[0], speed, handles[1].as_ptr(), [2.0f32].as_ptr(), 1), ThrongStatus::StaleHandle);
        assert_eq!(throng_crowd_despawn(crowds[0], handles[1].as_ptr(), 1), ThrongStatus::StaleHandle);
        let mut count = 0;
        assert_eq!(throng_crowd_num_characters(crowds[0], kinds[0], &mut count), ThrongStatus::Ok);
        assert_eq!(count, 1, "crowd A keeps its character");
        assert_eq!(throng_crowd_despawn(crowds[0], handles[0].as_ptr(), 1), ThrongStatus::Ok, "its own handle works");
        for crowd in crowds {
            throng_crowd_destroy(crowd);
        }
        throng_character_destroy(humanoid);
    }
}
