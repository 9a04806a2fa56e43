//! Shared generators for the benches: a locomotion crowd with varied parameters.

use std::sync::Arc;

use throng::graph::CompiledGraph;
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd};

/// The idle/move(1D)/jump base layer plus a masked upper-body wave layer.
pub const LOCOMOTION: &str = include_str!("locomotion.json");

/// `n` characters of the locomotion graph, spread over its states and blend positions.
pub fn locomotion_crowd(n: usize) -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION).expect("the bench graph loads"));
    let clips = [("Idle", 2.0), ("Move.Idle", 2.0), ("Move.Walk", 1.1), ("Move.Run", 0.7), ("Jump", 1.2), ("Rest", 2.0), ("Wave", 1.5)];
    let bindings: Vec<(&str, ClipBinding)> =
        clips.iter().enumerate().map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d })).collect();
    let archetype = Archetype::from_bindings(graph, &bindings).expect("every leaf is bound");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(archetype);
    let handles: Vec<_> = (0..n).map(|_| crowd.spawn(kind).expect("archetype exists")).collect();
    let speed = crowd.param(kind, "speed").expect("speed");
    let speeds: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.05).collect();
    crowd.set_float(speed, &handles, &speeds).expect("finite speeds");
    let jump = crowd.param(kind, "jump").expect("jump");
    let wave = crowd.param(kind, "wave").expect("wave");
    let jumpers: Vec<_> = handles.iter().copied().step_by(7).collect();
    let wavers: Vec<_> = handles.iter().copied().step_by(5).collect();
    // Settle into a mix of states: some moving, some mid-jump, some waving.
    for frame in 0..45 {
        if frame == 30 {
            crowd.set_trigger(jump, &jumpers, false).expect("trigger");
            crowd.set_trigger(wave, &wavers, false).expect("trigger");
        }
        crowd.update(1.0 / 60.0).expect("finite dt");
    }
    (crowd, kind)
}
