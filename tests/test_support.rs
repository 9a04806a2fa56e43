//! The shared comparison helpers (`support::compare`) fail where a plain `f32::max` fold did
//! not: a NaN in either input, a length mismatch, a partial character; and pass close inputs.
//! The scratch folders (`support::files`) are each a fresh one, removed after a test that
//! passed and kept after one that failed.

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use support::compare::{
    GPU_TOLERANCE, assert_matrices_close, assert_matrices_close_with, largest, nan_max, nan_min, worst_abs_diff,
};
use support::files::TempDir;

/// The panic message of `f`, or `None` when it passed.
fn failure(f: impl FnOnce()) -> Option<String> {
    let payload = catch_unwind(AssertUnwindSafe(f)).err()?;
    Some(
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

/// Two characters of three joints, four floats each.
fn pose() -> Vec<f32> {
    (0..24).map(|i| i as f32 * 0.25 - 3.0).collect()
}

#[test]
fn max_min_and_largest_propagate_nan_from_either_side_and_any_position() {
    for (a, b) in [(f32::NAN, 1.0), (1.0, f32::NAN), (f32::NAN, f32::NAN)] {
        assert!(nan_max(a, b).is_nan() && nan_min(a, b).is_nan(), "{a}, {b}");
    }
    assert_eq!((nan_max(1.0, 2.0), nan_min(1.0, 2.0)), (2.0, 1.0));
    for at in 0..4 {
        let mut values = [0.5, 3.0, 1.0, 2.0];
        values[at] = f32::NAN;
        assert!(largest(values).is_nan(), "NaN at {at}");
    }
    assert_eq!(largest([0.5, 3.0, 1.0]), 3.0);
    assert_eq!(largest([]), 0.0);
}

#[test]
fn worst_abs_diff_is_nan_on_nan_either_side_infinities_and_length_mismatch() {
    let a = pose();
    assert_eq!(worst_abs_diff(&a, &a), 0.0);
    let mut b = a.clone();
    b[5] += 0.5;
    assert_eq!(worst_abs_diff(&a, &b), 0.5);
    for at in [0, 7, 23] {
        let mut nan = a.clone();
        nan[at] = f32::NAN;
        assert!(worst_abs_diff(&a, &nan).is_nan(), "NaN got at {at}");
        assert!(worst_abs_diff(&nan, &a).is_nan(), "NaN expected at {at}");
    }
    let mut inf = a.clone();
    inf[3] = f32::INFINITY;
    assert!(worst_abs_diff(&inf, &inf).is_nan());
    assert_eq!(worst_abs_diff(&a, &inf), f32::INFINITY);
    assert!(worst_abs_diff(&a, &a[1..]).is_nan());
    assert!(worst_abs_diff(&a[1..], &a).is_nan());
}

#[test]
fn assert_matrices_close_passes_on_close_inputs() {
    let a = pose();
    let b: Vec<f32> = a.iter().enumerate().map(|(i, v)| v + if i % 2 == 0 { 0.9e-4 } else { -0.9e-4 }).collect();
    assert_eq!(failure(|| assert_matrices_close(&a, &b, 4, 3, GPU_TOLERANCE, "close")), None);
    assert_eq!(failure(|| assert_matrices_close(&a, &a, 4, 3, 0.0, "equal")), None);
    assert_eq!(failure(|| assert_matrices_close(&[], &[], 16, 3, GPU_TOLERANCE, "empty")), None);
}

#[test]
fn assert_matrices_close_fails_on_nan_in_either_input_saying_where() {
    let a = pose();
    // Float 22 is character 1, joint 2, float 2.
    let mut nan = a.clone();
    nan[22] = f32::NAN;
    for (expected, got, side) in [(&a, &nan, "got"), (&nan, &a, "expected")] {
        let message = failure(|| assert_matrices_close(expected, got, 4, 3, GPU_TOLERANCE, "nan"))
            .unwrap_or_else(|| panic!("a NaN in {side} passed"));
        assert!(message.contains("nan: character 1, joint 2, float 2"), "{side}: {message}");
        assert!(message.contains("NaN"), "{side}: {message}");
    }
    let message =
        failure(|| assert_matrices_close(&nan, &nan, 4, 3, GPU_TOLERANCE, "both")).expect("NaN on both sides passed");
    assert!(message.contains("character 1, joint 2"), "{message}");
}

#[test]
fn assert_matrices_close_fails_on_length_mismatch_and_partial_characters() {
    let a = pose();
    let message =
        failure(|| assert_matrices_close(&a, &a[..20], 4, 3, GPU_TOLERANCE, "short")).expect("a shorter output passed");
    assert!(message.contains("short: 24 floats expected, 20 got"), "{message}");
    assert!(
        failure(|| assert_matrices_close(&a[..20], &a, 4, 3, GPU_TOLERANCE, "long")).is_some(),
        "a longer output passed"
    );
    let message = failure(|| assert_matrices_close(&a[..20], &a[..20], 4, 3, GPU_TOLERANCE, "partial"))
        .expect("a partial character passed");
    assert!(message.contains("not whole characters"), "{message}");
}

#[test]
fn assert_matrices_close_fails_beyond_the_tolerance_naming_character_joint_and_values() {
    let a = pose();
    let mut b = a.clone();
    b[13] += 2e-4; // character 1, joint 0, float 1
    let message = failure(|| {
        assert_matrices_close_with(&a, &b, 4, 3, GPU_TOLERANCE, "far", |c| format!("character {c}'s programs"))
    })
    .expect("2e-4 passed 1e-4");
    assert!(message.contains("far: character 1, joint 0, float 1: expected 0.25, got 0.250"), "{message}");
    assert!(message.contains("character 1's programs"), "{message}");
}

#[test]
fn temp_dirs_are_fresh_and_distinct_and_removed_when_dropped() {
    let (a, b) = (TempDir::new("support-fresh"), TempDir::new("support-fresh"));
    assert_ne!(a.path(), b.path(), "two folders of one tag");
    for dir in [&a, &b] {
        assert!(dir.is_dir() && dir.is_absolute(), "{}", dir.display());
        assert_eq!(std::fs::read_dir(dir.path()).map(Iterator::count).ok(), Some(0), "{} is not empty", dir.display());
    }
    std::fs::create_dir(a.join("sub")).unwrap();
    std::fs::write(a.join("sub/file.txt"), "written").unwrap();
    let path = a.to_path_buf();
    drop(a);
    assert!(!path.exists(), "{} outlived its TempDir", path.display());
    assert!(b.is_dir(), "dropping one folder removed another");
}

#[test]
fn a_temp_dir_is_kept_when_its_test_fails() {
    let path = std::sync::Mutex::new(None);
    let message = failure(|| {
        let dir = TempDir::new("support-kept");
        std::fs::write(dir.join("evidence.txt"), "what the test wrote").unwrap();
        *path.lock().unwrap() = Some(dir.to_path_buf());
        panic!("the test failed");
    });
    assert_eq!(message.as_deref(), Some("the test failed"));
    let path = path.into_inner().unwrap().expect("the folder was made");
    assert_eq!(
        std::fs::read_to_string(path.join("evidence.txt")).ok().as_deref(),
        Some("what the test wrote"),
        "{} was not kept",
        path.display()
    );
    std::fs::remove_dir_all(&path).unwrap();
}
