//! The C ABI's unit tests: panics, misaligned and non-UTF-8 arguments, animation LOD's held
//! matrices through spawns and despawns, all through the `extern "C"` functions.

use std::ffi::CStr;

use super::ffi::crowd_call;
use super::*;

fn last_error() -> String {
    // SAFETY: never null, NUL-terminated, valid until the next call on this thread.
    unsafe { CStr::from_ptr(throng_last_error_message()) }.to_string_lossy().into_owned()
}

fn new_crowd() -> *mut ThrongCrowd {
    let mut crowd = std::ptr::null_mut();
    // SAFETY: `crowd` is a writable pointer.
    assert_eq!(unsafe { throng_crowd_create(&mut crowd) }, ThrongStatus::Ok);
    crowd
}

/// Evaluates `archetype` into `out` as 4×4 matrices, without root motion; any status but OK
/// fails the test with the crowd's message.
fn evaluate_mat4(crowd: *mut ThrongCrowd, archetype: u32, out: &mut [f32]) {
    // SAFETY: `crowd` is live in the calling test; `out` is writable for its length.
    let status = unsafe {
        throng_crowd_evaluate(
            crowd,
            archetype,
            THRONG_LAYOUT_MAT4,
            out.as_mut_ptr(),
            out.len(),
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(status, ThrongStatus::Ok, "{}", last_error());
}

#[test]
fn a_panic_is_a_status_and_poisons_its_crowd() {
    let crowd = new_crowd();
    // SAFETY: a live crowd.
    let status = unsafe { crowd_call("test_call", crowd, |_| panic!("boom")) };
    assert_eq!(status, ThrongStatus::Panic);
    assert_eq!(last_error(), "test_call: internal panic: boom");
    // SAFETY: a live (poisoned) crowd.
    assert_eq!(unsafe { throng_crowd_update(crowd, 0.1) }, ThrongStatus::Panic);
    assert!(last_error().contains("an earlier call panicked"), "{}", last_error());
    // Another crowd is unaffected.
    let other = new_crowd();
    // SAFETY: live crowds, each destroyed once.
    unsafe {
        assert_eq!(throng_crowd_update(other, 0.1), ThrongStatus::Ok);
        assert_eq!(last_error(), "");
        throng_crowd_destroy(crowd);
        throng_crowd_destroy(other);
    }
}

#[test]
fn misaligned_arrays_and_text_that_is_not_utf8_are_refused() {
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut param = 0;
    let words = [0u64; 3];
    // SAFETY: live objects and valid pointers; the misaligned one is refused before use.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        let misaligned = words.as_ptr().cast::<u8>().add(1).cast::<u64>();
        assert_eq!(throng_crowd_despawn(crowd, misaligned, 1), ThrongStatus::InvalidArgument);
        assert!(last_error().contains("`handles` is not aligned to 8 bytes"), "{}", last_error());
        let latin1 = c"vitesse\xe9";
        assert_eq!(
            throng_crowd_find_param(crowd, archetype, latin1.as_ptr(), &mut param),
            ThrongStatus::InvalidArgument
        );
        assert!(last_error().contains("`name` is not UTF-8 (byte 7)"), "{}", last_error());
        let graph = b"{\"layers\": [\xff]}";
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, graph.as_ptr(), graph.len(), &mut archetype),
            ThrongStatus::InvalidArgument
        );
        assert_eq!(archetype, 0, "a refused archetype writes no id");
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// At rate 4 a character's rows of `out` change on one update in four (after the first,
/// where everyone is new), at rate 1 on every update; a rate of 3 is refused by name.
#[test]
fn update_rates_write_a_character_on_its_due_updates_only() {
    const CHARACTERS: usize = 8;
    const JOINTS: usize = 26;
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut handles = [0u64; CHARACTERS];
    let mut param = 0;
    let floats = CHARACTERS * JOINTS * 16;
    let (mut out, mut before) = (vec![0.0f32; floats], vec![0.0f32; floats]);
    let mut changed = [0usize; CHARACTERS];
    // SAFETY: live objects, and arrays of the lengths passed.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_spawn(crowd, archetype, CHARACTERS, handles.as_mut_ptr()), ThrongStatus::Ok);
        assert_eq!(throng_crowd_find_param(crowd, archetype, c"speed".as_ptr(), &mut param), ThrongStatus::Ok);
        let speeds = [1.5f32; CHARACTERS];
        assert_eq!(
            throng_crowd_set_float(crowd, param, handles.as_ptr(), speeds.as_ptr(), CHARACTERS),
            ThrongStatus::Ok
        );
        // The first half every update, the second every fourth.
        let rates = [1, 1, 1, 1, 4, 4, 4, 4];
        assert_eq!(throng_crowd_set_update_rate(crowd, handles.as_ptr(), rates.as_ptr(), CHARACTERS), ThrongStatus::Ok);
        for update in 0..9 {
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            evaluate_mat4(crowd, archetype, &mut out[..floats]);
            if update > 0 {
                for (c, (now, was)) in out.chunks_exact(JOINTS * 16).zip(before.chunks_exact(JOINTS * 16)).enumerate() {
                    changed[c] += usize::from(now != was);
                }
            }
            before.copy_from_slice(&out);
        }
        assert_eq!(changed, [8, 8, 8, 8, 2, 2, 2, 2], "updates (of 8) on which each character's matrices changed");
        // Despawning the last character and then the fifth moves the seventh into row 4.
        // It is not due on the next update (the stagger gave it updates 2 and 6 of 0..8), so
        // row 4 shows exactly what the seventh showed: its held matrices moved with it.
        let gone = [handles[7], handles[4]];
        assert_eq!(throng_crowd_despawn(crowd, gone.as_ptr(), 2), ThrongStatus::Ok);
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        let per_row = JOINTS * 16;
        evaluate_mat4(crowd, archetype, &mut out[..6 * per_row]);
        assert_eq!(
            out[4 * per_row..5 * per_row],
            before[6 * per_row..7 * per_row],
            "row 4 holds the moved character's matrices"
        );
        assert_ne!(out[..per_row], before[..per_row], "rate-1 characters moved on");
        let bad = [3u8];
        assert_eq!(
            throng_crowd_set_update_rate(crowd, handles.as_ptr(), bad.as_ptr(), 1),
            ThrongStatus::InvalidArgument
        );
        assert!(last_error().contains("update rate 3"), "{}", last_error());
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// One character arrives and another leaves between two evaluations of a rate-16 crowd:
/// the despawn moves the newcomer (the crowd's last row) into the freed row, so the held
/// matrices must have grown at the spawn for the old last character, not due on the next
/// update, to keep showing what it showed (not a row of zeros: a mesh collapsed at the
/// origin).
#[test]
fn held_matrices_survive_a_spawn_then_a_despawn_between_evaluations() {
    const CHARACTERS: usize = 8;
    const PER_ROW: usize = 26 * 16;
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut handles = [0u64; CHARACTERS];
    let mut out = vec![0.0f32; CHARACTERS * PER_ROW];
    // SAFETY: live objects, and arrays of the lengths passed.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_spawn(crowd, archetype, CHARACTERS, handles.as_mut_ptr()), ThrongStatus::Ok);
        let rates = [16u8; CHARACTERS];
        assert_eq!(throng_crowd_set_update_rate(crowd, handles.as_ptr(), rates.as_ptr(), CHARACTERS), ThrongStatus::Ok);
        for _ in 0..2 {
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            evaluate_mat4(crowd, archetype, &mut out);
        }
        let last_before = out[(CHARACTERS - 1) * PER_ROW..].to_vec();
        let mut newcomer = 0u64;
        assert_eq!(throng_crowd_spawn(crowd, archetype, 1, &mut newcomer), ThrongStatus::Ok);
        assert_eq!(throng_crowd_despawn(crowd, handles.as_ptr(), 1), ThrongStatus::Ok);
        let (mut arch, mut row) = (0u32, 0usize);
        assert_eq!(throng_crowd_row_of(crowd, handles[CHARACTERS - 1], &mut arch, &mut row), ThrongStatus::Ok);
        assert_eq!(row, CHARACTERS - 1, "the old last character keeps its row; the newcomer took row 0");
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        evaluate_mat4(crowd, archetype, &mut out);
        assert_eq!(out[row * PER_ROW..], last_before[..], "row {row}, not due, shows what its character showed");
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// Start phases and time scales through the C ABI: phases honoured and checked, a spread batch
/// spawned, a paused character's matrices held while another plays on, bad scales refused.
#[test]
fn start_phases_and_time_scales() {
    const PER_ROW: usize = 26 * 16;
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut handles = [0u64; 4];
    let mut out = vec![0.0f32; 4 * PER_ROW];
    // SAFETY: live objects, and arrays of the lengths passed.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        let phases = [0.25f32, 0.5];
        assert_eq!(
            throng_crowd_spawn_phased(crowd, archetype, phases.as_ptr(), 2, handles.as_mut_ptr()),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_spawn_spread(crowd, archetype, 2, 9, handles[2..].as_mut_ptr()), ThrongStatus::Ok);
        let mut readback = ThrongLayerReadback::default();
        assert_eq!(throng_crowd_readback(crowd, handles[1], 0, &mut readback), ThrongStatus::Ok);
        assert_eq!(readback.phase, 0.5);
        let bad = [0.5f32, 1.0];
        let mut none = [0u64; 2];
        assert_eq!(
            throng_crowd_spawn_phased(crowd, archetype, bad.as_ptr(), 2, none.as_mut_ptr()),
            ThrongStatus::InvalidArgument
        );
        assert!(last_error().contains("start phase 1"), "{}", last_error());
        let mut count = 0;
        assert_eq!(throng_crowd_num_characters(crowd, archetype, &mut count), ThrongStatus::Ok);
        assert_eq!(count, 4, "the refused batch spawned nobody");
        // The first pauses; the others play on.
        let scales = [0.0f32];
        assert_eq!(throng_crowd_set_time_scale(crowd, handles.as_ptr(), scales.as_ptr(), 1), ThrongStatus::Ok);
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        evaluate_mat4(crowd, archetype, &mut out);
        let before = out.clone();
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        evaluate_mat4(crowd, archetype, &mut out);
        assert_eq!(out[..PER_ROW], before[..PER_ROW], "the paused character holds its pose");
        assert_ne!(out[PER_ROW..], before[PER_ROW..], "the others play on");
        let nan = [f32::NAN];
        assert_eq!(
            throng_crowd_set_time_scale(crowd, handles.as_ptr(), nan.as_ptr(), 1),
            ThrongStatus::InvalidArgument
        );
        assert!(last_error().contains("time scale NaN"), "{}", last_error());
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// An imperative transition through the C ABI: the readback shows it, and bad states, layers
/// and modes are refused.
#[test]
fn transition_to_a_named_state() {
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut handles = [0u64; 2];
    // SAFETY: live objects, and arrays of the lengths passed.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_spawn(crowd, archetype, 2, handles.as_mut_ptr()), ThrongStatus::Ok);
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 1, 0, c"Jump".as_ptr(), 0.2, 0.0, 3, 0),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        let mut readback = ThrongLayerReadback::default();
        assert_eq!(throng_crowd_readback(crowd, handles[0], 0, &mut readback), ThrongStatus::Ok);
        assert!(readback.transitioning);
        let mut other = ThrongLayerReadback::default();
        assert_eq!(throng_crowd_readback(crowd, handles[1], 0, &mut other), ThrongStatus::Ok);
        assert_ne!(readback.active_state, other.active_state, "only the first was commanded");
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 2, 0, c"Dance".as_ptr(), 0.2, 0.0, 0, 0),
            ThrongStatus::UnknownName
        );
        assert!(last_error().contains("Dance"), "{}", last_error());
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 2, 0, c"Jump".as_ptr(), 0.2, 0.0, 9, 0),
            ThrongStatus::InvalidArgument
        );
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 2, 7, c"Jump".as_ptr(), 0.2, 0.0, 0, 0),
            ThrongStatus::InvalidArgument
        );
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 2, 0, c"Jump".as_ptr(), f32::NAN, 0.0, 0, 0),
            ThrongStatus::InvalidArgument
        );
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// `sync` through the C ABI: a phase-synced transition starts its destination at the phase of
/// the state left, which a character that stayed in that state shows the same update; without
/// sync it starts at the offset; a sync past 2 is refused.
#[test]
fn transition_to_with_phase_sync() {
    let crowd = new_crowd();
    let mut character = std::ptr::null_mut();
    let mut archetype = 0;
    let mut handles = [0u64; 3];
    // SAFETY: live objects, and arrays of the lengths passed.
    unsafe {
        assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
        let json = crate::demo::LOCOMOTION_GRAPH;
        assert_eq!(
            throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
            ThrongStatus::Ok
        );
        assert_eq!(throng_crowd_spawn(crowd, archetype, 3, handles.as_mut_ptr()), ThrongStatus::Ok);
        for _ in 0..20 {
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        }
        assert_eq!(
            throng_crowd_transition_to(crowd, &handles[0], 1, 0, c"Jump".as_ptr(), 0.2, 0.0, 3, 1),
            ThrongStatus::Ok
        );
        assert_eq!(
            throng_crowd_transition_to(crowd, &handles[1], 1, 0, c"Jump".as_ptr(), 0.2, 0.0, 3, 0),
            ThrongStatus::Ok
        );
        assert_eq!(
            throng_crowd_transition_to(crowd, handles.as_ptr(), 3, 0, c"Jump".as_ptr(), 0.2, 0.0, 3, 3),
            ThrongStatus::InvalidArgument
        );
        assert!(last_error().contains("sync"), "{}", last_error());
        assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
        let mut readback = [ThrongLayerReadback::default(); 3];
        for (handle, out) in handles.iter().zip(&mut readback) {
            assert_eq!(throng_crowd_readback(crowd, *handle, 0, out), ThrongStatus::Ok);
        }
        let [synced, offset, stayed] = readback;
        assert!(synced.transitioning && offset.transitioning && !stayed.transitioning);
        assert!(stayed.phase > 0.0, "the state left has played for 21 updates");
        assert_eq!(synced.phase, stayed.phase, "the synced destination starts at the source's phase");
        assert_eq!(offset.phase, 0.0, "without sync the destination starts at its offset");
        throng_character_destroy(character);
        throng_crowd_destroy(crowd);
    }
}

/// Marker sync through the C ABI: with a marker "left" at the start of idle and half-way
/// through jump, a marker-synced jump starts half a clip past the idle's phase (the idle is
/// `1 - p` before its next marker, the jump as far before its own); without markers on the
/// character the offset stands. An unknown clip is refused.
#[test]
fn transition_to_with_marker_sync() {
    let phases = |markers: bool| -> (f32, f32) {
        let crowd = new_crowd();
        let mut character = std::ptr::null_mut();
        let mut archetype = 0;
        let mut handles = [0u64; 2];
        // SAFETY: live objects, and arrays of the lengths passed.
        unsafe {
            assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
            if markers {
                let jump = (*character).clips_mut().iter().find(|c| c.name() == "jump").expect("a jump clip");
                let half = 0.5 * jump.duration_s();
                let add = throng_character_add_sync_marker;
                assert_eq!(add(character, c"IDLE".as_ptr(), c"left".as_ptr(), 0.0), ThrongStatus::Ok);
                assert_eq!(add(character, c"jump".as_ptr(), c"left".as_ptr(), half), ThrongStatus::Ok);
                assert_eq!(add(character, c"dance".as_ptr(), c"left".as_ptr(), 0.0), ThrongStatus::UnknownName);
            }
            let json = crate::demo::LOCOMOTION_GRAPH;
            assert_eq!(
                throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype),
                ThrongStatus::Ok
            );
            assert_eq!(throng_crowd_spawn(crowd, archetype, 2, handles.as_mut_ptr()), ThrongStatus::Ok);
            for _ in 0..20 {
                assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            }
            assert_eq!(
                throng_crowd_transition_to(crowd, &handles[0], 1, 0, c"Jump".as_ptr(), 0.2, 0.0, 3, 2),
                ThrongStatus::Ok
            );
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            let mut readback = [ThrongLayerReadback::default(); 2];
            for (handle, out) in handles.iter().zip(&mut readback) {
                assert_eq!(throng_crowd_readback(crowd, *handle, 0, out), ThrongStatus::Ok);
            }
            throng_character_destroy(character);
            throng_crowd_destroy(crowd);
            (readback[0].phase, readback[1].phase)
        }
    };
    let (synced, idle) = phases(true);
    assert!(idle > 0.0 && idle < 0.5, "idle has played a little: {idle}");
    assert!((synced - (idle + 0.5)).abs() < 1e-5, "jump at {synced}, idle at {idle}: half a clip apart");
    let (unsynced, _) = phases(false);
    assert_eq!(unsynced, 0.0, "no markers: the offset stands");
}
