//! What the pose does while a transition runs (DESIGN.md, "Switch modes"), on the CPU frame
//! job: pops per mode, continuity of inertialization under rapid switches, interrupted
//! crossfades, and the clips each mode samples.

mod support;

use glam::{Quat, Vec3};
use support::compare::{largest, worst_abs_diff};
use support::cpu_frame;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::eval::skinning::read_matrix;
use throng::program::{ClipSample, LayerProgram, LayerSetup, OutputLayout, SwitchMode};
use throng::{Clip, Rig, Transform};

const DT: f32 = 1.0 / 60.0;
const JOINTS: usize = 4;

/// A four-joint chain 0.3 m per link along +Y.
fn chain() -> Rig {
    let names = (0..JOINTS).map(|j| format!("j{j}")).collect();
    let parents = (0..JOINTS).map(|j| j.checked_sub(1)).collect();
    let rest = (0..JOINTS).map(|j| Transform::from_translation(Vec3::Y * if j == 0 { 1.0 } else { 0.3 })).collect();
    Rig::new(names, parents, rest, None).unwrap()
}

/// A looping clip swinging every joint about `axis` at `hz` with `amplitude` radians.
fn swing(rig: &Rig, name: &str, axis: Vec3, hz: f32, amplitude: f32, phase: f32) -> Clip {
    let duration = 1.0 / hz;
    let frames = 60;
    let mut poses = Vec::new();
    for f in 0..=frames {
        let t = f as f32 / frames as f32;
        for (j, rest) in rig.rest_pose().iter().enumerate() {
            let angle = amplitude * (std::f32::consts::TAU * t + phase + j as f32 * 0.4).sin();
            poses.push(Transform { rotation: Quat::from_axis_angle(axis, angle), ..*rest });
        }
    }
    Clip::from_poses(name, rig.num_joints(), poses, duration, true).unwrap()
}

/// One character playing clip 0 (state A) and switching to clip 1 (state B) at the given
/// frames, alternately, each switch with `mode` and `duration_s`. Returns each frame's joint
/// positions in model space and the clips sampled per frame.
fn run(mode: SwitchMode, duration_s: f32, switches: &[usize], frames: usize) -> (Vec<[Vec3; JOINTS]>, Vec<u32>) {
    let rig = chain();
    let clips = [swing(&rig, "a", Vec3::Z, 1.0, 0.6, 0.0), swing(&rig, "b", Vec3::X, 1.3, 0.8, 2.0)];
    let rest_model = rig.rest_model();
    let layers = [LayerSetup::default()];
    let mut context = EvalContext::new(1, 1, JOINTS);
    let layout = OutputLayout::Mat4;
    let mut output = vec![0.0; JOINTS * 16];
    let mut sampled = [0u32];
    let (mut positions, mut counts) = (Vec::new(), Vec::new());
    // Clock of the active state and of the source, and when the transition started.
    let (mut active, mut active_time, mut source, mut source_time) = (0u32, 0.0f32, 0u32, 0.0f32);
    let mut switched_at: Option<usize> = None;
    for frame in 0..frames {
        let mut flags = 0;
        if switches.contains(&frame) {
            source = active;
            source_time = active_time;
            active = 1 - active;
            active_time = 0.0;
            switched_at = Some(frame);
            flags = LayerProgram::SWITCHED;
        }
        let elapsed = switched_at.map_or(f32::INFINITY, |s| (frame - s) as f32 * DT);
        let blend = if duration_s > 0.0 { (elapsed / duration_s).min(1.0) } else { 1.0 };
        let mut samples = vec![ClipSample::new(active, active_time, 1.0)];
        let mut program = LayerProgram { num_target: 1, target_weight: 1.0, weight: 1.0, flags, ..Default::default() };
        if elapsed < duration_s || flags & LayerProgram::SWITCHED != 0 {
            program.mode = mode as u32;
            program.flags |= LayerProgram::TRANSITIONING;
            match mode {
                SwitchMode::Crossfade => {
                    samples[0].weight = blend;
                    samples.push(ClipSample::new(source, source_time, 1.0 - blend));
                    (program.num_secondary, program.target_weight) = (1, blend);
                }
                SwitchMode::Frozen => {
                    program.target_weight = blend;
                    program.flags |= LayerProgram::SOURCE_SNAPSHOT;
                }
                SwitchMode::Cut => {}
                _ => {
                    program.decay_s = duration_s;
                    if flags & LayerProgram::SWITCHED != 0 {
                        samples.push(ClipSample::new(active, active_time - DT, 1.0));
                        program.num_secondary = 1;
                    }
                }
            }
        }
        // The low-level job: it replays hand-made samples and programs, with no crowd.
        FrameJob {
            rig: &rig,
            clips: &clips,
            layers: &layers,
            samples: &samples,
            programs: &[program],
            dt_s: DT,
            context: &mut context,
            layout,
            output: &mut output,
            clips_sampled: &mut sampled,
            root_motion: &mut [],
        }
        .run()
        .unwrap();
        let mut p = [Vec3::ZERO; JOINTS];
        for j in 0..JOINTS {
            p[j] = read_matrix(layout, &output[j * 16..]).transform_point3(rest_model[j].w_axis.truncate());
        }
        positions.push(p);
        counts.push(sampled[0]);
        active_time += DT;
        source_time += DT;
    }
    (positions, counts)
}

/// The largest per-frame joint movement on frame `f` (from `f - 1`), metres.
fn jump(positions: &[[Vec3; JOINTS]], f: usize) -> f32 {
    largest((0..JOINTS).map(|j| positions[f][j].distance(positions[f - 1][j])))
}

/// The largest change of per-frame velocity on frame `f`, metres per frame.
fn kink(positions: &[[Vec3; JOINTS]], f: usize) -> f32 {
    largest(
        (0..JOINTS)
            .map(|j| ((positions[f][j] - positions[f - 1][j]) - (positions[f - 1][j] - positions[f - 2][j])).length()),
    )
}

#[test]
fn pops_order_as_the_seed_says() {
    let at = 40;
    let pop = |mode| jump(&run(mode, 0.25, &[at], 60).0, at);
    let (cut, frozen, crossfade, inertialize) = (
        pop(SwitchMode::Cut),
        pop(SwitchMode::Frozen),
        pop(SwitchMode::Crossfade),
        pop(SwitchMode::InertializeQuintic),
    );
    // What the clip itself moves in a frame, for scale.
    let natural = jump(&run(SwitchMode::Cut, 0.25, &[], 60).0, at);
    println!(
        "worst joint jump at the switch: cut {cut}, frozen {frozen}, crossfade {crossfade}, inertialize {inertialize}; clip alone {natural}"
    );
    assert!(cut > 5.0 * natural, "a cut pops");
    assert!(frozen <= natural * 1.5 && crossfade <= natural * 1.5 && inertialize <= natural * 1.5, "the others do not");
    assert!(cut > frozen && cut > crossfade && cut > inertialize);
}

#[test]
fn inertialization_is_continuous_across_rapid_switches() {
    for mode in
        [SwitchMode::InertializeQuintic, SwitchMode::InertializeQuinticOvershootControl, SwitchMode::InertializeSpring]
    {
        let duration = if mode == SwitchMode::InertializeSpring { 0.08 } else { 0.25 };
        let switches = [30, 32, 34];
        let (positions, _) = run(mode, duration, &switches, 90);
        let (plain, _) = run(SwitchMode::Cut, 0.0, &[], 90);
        let natural_jump = largest((2..90).map(|f| jump(&plain, f)));
        let natural_kink = largest((2..90).map(|f| kink(&plain, f)));
        for f in 2..90 {
            assert!(
                jump(&positions, f) <= 2.0 * natural_jump,
                "{mode:?} frame {f}: position jumps {} (clips move {natural_jump})",
                jump(&positions, f)
            );
        }
        for &s in &switches {
            assert!(
                kink(&positions, s) <= 3.0 * natural_kink + 1e-3,
                "{mode:?}: velocity breaks at switch {s}: {} vs {natural_kink}",
                kink(&positions, s)
            );
        }
    }
}

#[test]
fn interrupted_crossfade_frozen_into_a_snapshot_does_not_pop() {
    // A crossfade A→B interrupted halfway by B→A: the state step hands the displayed mix to a
    // frozen fade. Emulate that with a frozen switch at the interruption.
    let (crossfade, _) = run(SwitchMode::Crossfade, 0.25, &[30], 38);
    let (frozen, _) = run(SwitchMode::Frozen, 0.25, &[30, 37], 60);
    let natural = largest((31..37).map(|f| jump(&crossfade, f)));
    assert!(jump(&frozen, 37) <= 1.5 * natural, "interruption pops: {} vs {natural}", jump(&frozen, 37));
}

#[test]
fn a_switch_before_anything_was_shown_is_a_cut() {
    let (inertial, _) = run(SwitchMode::InertializeQuintic, 0.25, &[0], 5);
    let (cut, _) = run(SwitchMode::Cut, 0.0, &[0], 5);
    for f in 0..5 {
        for j in 0..JOINTS {
            assert!(inertial[f][j].abs_diff_eq(cut[f][j], 1e-6), "frame {f} joint {j}");
        }
    }
}

#[test]
fn inertialization_samples_fewer_clips_than_crossfade() {
    let (_, crossfade) = run(SwitchMode::Crossfade, 0.25, &[30], 60);
    let (_, inertialize) = run(SwitchMode::InertializeQuintic, 0.25, &[30], 60);
    let during = |c: &[u32]| c[30..45].iter().sum::<u32>();
    assert_eq!(during(&crossfade), 2 * 15);
    assert_eq!(during(&inertialize), 15 + 1, "one extra sample on the switch frame, for the destination's velocity");
}

#[test]
fn a_layer_back_from_weight_zero_mid_fade_shows_its_destination() {
    // Layer 1 overrides the whole body with clip a, goes invisible on frame 10, switches to b
    // with a frozen fade on frame 12 (unseen) and is visible again on frame 15 while that fade
    // runs. It displayed nothing that could be frozen, so it shows b alone, as a fresh layer
    // playing b does; it must not fade from a snapshot nobody saw.
    let rig = chain();
    let clips = [swing(&rig, "a", Vec3::Z, 1.0, 0.6, 0.0), swing(&rig, "b", Vec3::X, 1.3, 0.8, 2.0)];
    let layers = [LayerSetup::default(), LayerSetup::default()];
    let run_frame = |context: &mut EvalContext, samples: &[ClipSample], programs: &[LayerProgram]| {
        cpu_frame((&rig, &clips, &layers[..programs.len()]), samples, programs, DT, context).unwrap()
    };
    let base = LayerProgram { num_target: 1, target_weight: 1.0, weight: 1.0, ..Default::default() };
    let mut context = EvalContext::new(1, 2, JOINTS);
    let mut shown = Vec::new();
    for frame in 0..=15 {
        let t = frame as f32 * DT;
        let mut upper =
            LayerProgram { first_sample: 1, weight: if (10..15).contains(&frame) { 0.0 } else { 1.0 }, ..base };
        if frame >= 12 {
            upper.mode = SwitchMode::Frozen as u32;
            upper.flags = LayerProgram::TRANSITIONING
                | LayerProgram::SOURCE_SNAPSHOT
                | if frame == 12 { LayerProgram::SWITCHED } else { 0 };
            upper.target_weight = (frame - 12) as f32 / 30.0;
        }
        let samples = [ClipSample::new(0, t, 1.0), ClipSample::new(u32::from(frame >= 12), t, 1.0)];
        shown = run_frame(&mut context, &samples, &[base, upper]);
    }
    let mut fresh = EvalContext::new(1, 1, JOINTS);
    let b_alone = run_frame(&mut fresh, &[ClipSample::new(1, 15.0 * DT, 1.0)], &[base]);
    for (j, (s, b)) in shown.chunks_exact(16).zip(b_alone.chunks_exact(16)).enumerate() {
        let error = worst_abs_diff(s, b);
        assert!(error < 1e-5, "joint {j}: the returning layer shows {s:?}, b alone is {b:?}");
    }
}
