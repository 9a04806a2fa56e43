//! Seed 000's measurements on the built-in character through the whole CPU pipeline (graph,
//! state step, frame job): the orderings the seed reports must hold, and root motion must add
//! up over a looping walk.

#[path = "../examples/transition_report/measure.rs"]
mod measure;
mod support;

use glam::Vec3;
use support::compare::nan_max;
use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::graph::CompiledGraph;
use throng::program::LayerSpace;

#[test]
fn switch_modes_order_as_the_seed_says() {
    let [cut, frozen, crossfade, quintic, bollo, spring] =
        measure::MODES.map(|(name, json)| measure::seed_script(name, json).0);
    println!("{cut:?}\n{frozen:?}\n{crossfade:?}\n{quintic:?}\n{bollo:?}\n{spring:?}");
    assert!(cut.worst_jump_cm > 3.0 * frozen.worst_jump_cm, "a cut pops far more than a frozen fade");
    for smooth in [&crossfade, &quintic, &bollo, &spring] {
        assert!(frozen.worst_jump_cm > smooth.worst_jump_cm, "frozen stops dead, {} does not", smooth.name);
        assert!(smooth.worst_jump_cm < 2.0, "{} is smooth: {} cm", smooth.name, smooth.worst_jump_cm);
    }
    assert!(cut.mean_clips < crossfade.mean_clips && crossfade.peak_clips >= 3, "crossfade evaluates both sides");
    for inertial in [&quintic, &bollo, &spring] {
        assert!(
            inertial.mean_clips_transitioning < crossfade.mean_clips_transitioning,
            "{} samples fewer clips than crossfade while transitioning",
            inertial.name
        );
    }
}

#[test]
fn layers_tell_the_seeds_story() {
    let graph = CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap();
    let upper_body = graph.layers()[2].mask.clone();
    let whole = measure::foot_slide_cm_per_m(None);
    let masked = measure::foot_slide_cm_per_m(Some(&upper_body));
    assert!(
        whole > 50.0 && masked < 2.0,
        "the whole-body wave drags the feet ({whole} cm/m), the masked one does not ({masked})"
    );
    let local = measure::arm_angle_deg(LayerSpace::Local, false);
    let leaning = measure::arm_angle_deg(LayerSpace::Local, true);
    let mesh = measure::arm_angle_deg(LayerSpace::Mesh, false);
    assert!(
        mesh < 0.5 && local > 3.0 && leaning > local + 3.0,
        "mesh {mesh}°, local {local}°, local with lean {leaning}°"
    );
}

#[test]
fn root_motion_adds_up_over_a_looping_walk() {
    let mut sim = measure::Sim::new(r#"{ "mode": "inertialize" }"#, |_, _| {});
    sim.set_float("speed", 1.5);
    // Into the walk, then exactly three walk cycles.
    for _ in 0..60 {
        sim.step();
    }
    let walk = DemoCharacter::humanoid().clip("walk").unwrap().clone();
    let per_cycle = walk.frame(walk.num_frames() - 1)[0].translation - walk.frame(0)[0].translation;
    let cycle_frames = (walk.duration_s() * measure::FPS).round() as usize;
    let start = sim.world;
    let mut largest_step = 0.0f32;
    let mut last = sim.world;
    for _ in 0..3 * cycle_frames {
        sim.step();
        largest_step = nan_max(largest_step, (sim.world - last).length());
        last = sim.world;
    }
    let travelled = sim.world - start;
    let expected = Vec3::new(per_cycle.x, 0.0, per_cycle.z) * 3.0;
    assert!(
        (travelled - expected).length() < 0.01 * expected.length(),
        "travelled {travelled}, the clip's root travels {expected}"
    );
    // No pop at the wrap: no frame moves more than the walk's speed allows.
    assert!(largest_step < 1.2 * 1.5 / measure::FPS, "largest step {largest_step} m");
}
