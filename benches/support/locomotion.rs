//! The locomotion graph the benches and the tests drive crowds through, and its clip table
//! (one file, so the two cannot disagree about which clip a leaf plays).

/// The graph, PlayCanvas JSON.
pub const LOCOMOTION: &str = include_str!("locomotion.json");

/// Its leaves' clips and their durations in seconds; clip `i` is entry `i`.
pub const LOCOMOTION_CLIPS: &[(&str, f32)] = &[
    ("Idle", 2.0),
    ("Move.Idle", 2.0),
    ("Move.Walk", 1.1),
    ("Move.Run", 0.7),
    ("Jump", 1.2),
    ("Rest", 2.0),
    ("Wave", 1.5),
];
