//! The procedural stage on the CPU: two-bone IK reaches, straightens toward what it cannot
//! reach and bends toward its pole; look-at points and keeps its limits; weight 0 changes
//! nothing; degenerate rigs and targets give no NaN; every invalid setup and batch is refused.

mod support;

use glam::{Mat4, Quat, Vec3};
use support::Rng;
use support::compare::largest;
use throng::eval::EvalError;
use throng::eval::procedural::{ProceduralJob, look_at, procedural, procedural_lanes, two_bone};
use throng::program::{
    EndRotation, FootSetup, GroundSetup, LookAtChain, ProceduralError, ProceduralRig, ProceduralSetup,
    ProceduralTargets, TwoBoneChain,
};
use throng::{Rig, Transform};

fn model(rig: &Rig, pose: &[Transform]) -> Vec<Mat4> {
    let mut out = vec![Mat4::IDENTITY; pose.len()];
    throng::pose::local_to_model(rig.parents(), pose, &mut out);
    out
}

/// How far apart two rotations are as unit quaternions, either sign: fine near zero, where
/// `Quat::angle_between`'s `acos` cannot resolve below about 1e-3 rad in `f32`.
fn rotation_gap(a: Quat, b: Quat) -> f32 {
    (a - b).length().min((a + b).length())
}

fn position(m: &Mat4) -> Vec3 {
    m.w_axis.truncate()
}

fn rotation(m: &Mat4) -> Quat {
    m.to_scale_rotation_translation().1
}

/// pelvis → hip → knee → ankle → toe, with a slightly bent knee, plus a spine of four joints
/// up to a head: the shapes the stage is for.
fn body() -> Rig {
    let names = ["pelvis", "hip", "knee", "ankle", "toe", "spine", "chest", "neck", "head"];
    let parents = vec![None, Some(0), Some(1), Some(2), Some(3), Some(0), Some(5), Some(6), Some(7)];
    let pose = vec![
        Transform::from_translation(Vec3::Y),
        Transform::from_translation(Vec3::new(0.1, -0.05, 0.0)),
        Transform::from_translation_rotation(Vec3::new(0.0, -0.45, 0.0), Quat::from_rotation_x(-0.2)),
        Transform::from_translation_rotation(Vec3::new(0.0, -0.42, 0.0), Quat::from_rotation_x(0.2)),
        Transform::from_translation(Vec3::new(0.0, -0.05, 0.15)),
        Transform::from_translation(Vec3::Y * 0.15),
        Transform::from_translation(Vec3::Y * 0.2),
        Transform::from_translation(Vec3::Y * 0.2),
        Transform::from_translation(Vec3::Y * 0.1),
    ];
    Rig::new(names.map(String::from).to_vec(), parents, pose, None).expect("the test rig is valid")
}

fn leg(soft_fraction: f32) -> TwoBoneChain {
    TwoBoneChain { joints: [1, 2, 3], soft_fraction, end: EndRotation::Animated }
}

fn reach(pose: &mut [Transform], rig: &Rig, chain: &TwoBoneChain, target: Vec3, pole: Vec3) {
    two_bone(rig.parents(), pose, chain, target, pole, Quat::IDENTITY, 1.0);
}

#[test]
fn a_reachable_target_is_reached_within_a_millimetre() {
    let rig = body();
    let mut rng = Rng(0x005e_ed1a);
    let hip = position(&model(&rig, rig.rest_pose())[1]);
    for soft in [0.0, 0.02] {
        for _ in 0..200 {
            // Anywhere from 20 % to 95 % of the 0.87 m reach, outside the soft zone.
            let direction = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 0.3), rng.range(-1.0, 1.0)).normalize();
            let target = hip + direction * rng.range(0.2, 0.95) * 0.87 * (1.0 - soft);
            let mut pose = rig.rest_pose().to_vec();
            let animated_end = rotation(&model(&rig, &pose)[3]);
            reach(&mut pose, &rig, &leg(soft), target, Vec3::Z);
            let m = model(&rig, &pose);
            let miss = position(&m[3]).distance(target);
            assert!(miss < 1e-3, "soft {soft}: target {target} missed by {miss} m");
            let turned = rotation(&m[3]).angle_between(animated_end);
            assert!(turned < 1e-3, "the end keeps its animated orientation: turned {turned} rad");
        }
    }
}

#[test]
fn the_end_takes_the_target_rotation_by_the_weight() {
    let rig = body();
    let chain = TwoBoneChain { end: EndRotation::Target, ..leg(0.0) };
    let wanted = Quat::from_rotation_y(0.8) * Quat::from_rotation_x(0.3);
    let target = Vec3::new(0.2, 0.3, 0.3);
    let mut pose = rig.rest_pose().to_vec();
    two_bone(rig.parents(), &mut pose, &chain, target, Vec3::Z, wanted, 1.0);
    let got = rotation(&model(&rig, &pose)[3]);
    assert!(rotation_gap(got, wanted) < 1e-5, "{got} against {wanted}");
    let mut half = rig.rest_pose().to_vec();
    let animated = model(&rig, &half);
    two_bone(rig.parents(), &mut half, &chain, target, Vec3::Z, wanted, 0.5);
    let m = model(&rig, &half);
    let halfway = position(&animated[3]).lerp(target, 0.5);
    assert!(position(&m[3]).distance(halfway) < 1e-3, "half weight reaches halfway");
    let between = rotation(&animated[3]).slerp(wanted, 0.5);
    let gap = rotation_gap(rotation(&m[3]), between);
    assert!(gap < 1e-5, "{} against {between}: {gap}", rotation(&m[3]));
}

#[test]
fn an_unreachable_target_leaves_the_chain_straight_toward_it() {
    let rig = body();
    let hip = position(&model(&rig, rig.rest_pose())[1]);
    for (soft, target) in
        [(0.0, Vec3::new(2.0, -1.0, 1.5)), (0.02, Vec3::new(-3.0, 0.5, 4.0)), (0.0, Vec3::new(0.0, 1e4, 0.0))]
    {
        let mut pose = rig.rest_pose().to_vec();
        reach(&mut pose, &rig, &leg(soft), target, Vec3::Z);
        let m = model(&rig, &pose);
        let toward = (target - hip).normalize();
        for joint in [2, 3] {
            let off = (position(&m[joint]) - hip).normalize().angle_between(toward);
            assert!(off < 2e-3, "soft {soft}: joint {joint} is {off} rad off the line to {target}");
        }
        let length = position(&m[3]).distance(hip);
        assert!(length > 0.86 && length <= 0.8701, "soft {soft}: the chain spans {length} m of 0.87");
    }
}

#[test]
fn the_pole_decides_the_knees_side() {
    let rig = body();
    let hip = position(&model(&rig, rig.rest_pose())[1]);
    let target = hip + Vec3::new(0.0, -0.6, 0.0);
    for side in [Vec3::Z, Vec3::NEG_Z, Vec3::X, Vec3::new(-1.0, 0.0, 1.0)] {
        let mut pose = rig.rest_pose().to_vec();
        reach(&mut pose, &rig, &leg(0.0), target, side);
        let knee = position(&model(&rig, &pose)[2]) - hip;
        let across = knee - Vec3::Y * knee.y;
        assert!(across.normalize().dot(side.normalize()) > 0.999, "pole {side}: knee off the line by {across}");
    }
    // No pole: the animated bend's side (the rest knee is forward, +Z).
    let mut pose = rig.rest_pose().to_vec();
    reach(&mut pose, &rig, &leg(0.0), target, Vec3::ZERO);
    assert!(position(&model(&rig, &pose)[2]).z - hip.z > 0.1);
}

#[test]
fn the_soft_zone_approaches_full_extension_without_a_snap() {
    let rig = body();
    let hip = position(&model(&rig, rig.rest_pose())[1]);
    let mut last = 0.0;
    let mut steps = Vec::new();
    for k in 0..=60 {
        let target = hip + Vec3::NEG_Y * (0.80 + k as f32 * 0.002);
        let mut pose = rig.rest_pose().to_vec();
        reach(&mut pose, &rig, &leg(0.05), target, Vec3::Z);
        let span = position(&model(&rig, &pose)[3]).distance(hip);
        steps.push(span - last);
        last = span;
    }
    let (growth, max_step) = (steps[1..].iter().all(|&s| s >= -1e-6), largest(steps[1..].iter().copied()));
    assert!(growth && max_step <= 0.0021, "reach grows smoothly, each step at most the target's: {steps:?}");
    assert!(last < 0.87, "never quite straight: {last}");
}

fn spine_chain(limits_rad: f32) -> LookAtChain {
    LookAtChain { limits_rad: vec![limits_rad; 4], ..LookAtChain::even(vec![5, 6, 7, 8], Vec3::Z) }
}

#[test]
fn look_at_points_the_forward_axis_at_the_target_within_a_tenth_of_a_degree() {
    let rig = body();
    let mut rng = Rng(77);
    for _ in 0..200 {
        let target = Vec3::new(rng.range(-5.0, 5.0), rng.range(-2.0, 4.0), rng.range(-5.0, 5.0));
        let mut pose = rig.rest_pose().to_vec();
        look_at(rig.parents(), &mut pose, &spine_chain(f32::INFINITY), target, 1.0);
        let head = model(&rig, &pose)[8];
        let forward = rotation(&head) * Vec3::Z;
        let off = forward.angle_between(target - position(&head)).to_degrees();
        assert!(off < 0.1, "target {target}: forward off by {off}°");
    }
}

#[test]
fn look_at_limits_hold_per_joint() {
    let rig = body();
    let limit = 0.2;
    for target in [Vec3::new(0.0, 1.6, -3.0), Vec3::new(4.0, 1.0, 0.0), Vec3::new(0.0, 5.0, 0.1)] {
        let mut pose = rig.rest_pose().to_vec();
        look_at(rig.parents(), &mut pose, &spine_chain(limit), target, 1.0);
        for (joint, (turned, rest)) in pose.iter().zip(rig.rest_pose()).enumerate().skip(5).take(4) {
            let turned = turned.rotation.angle_between(rest.rotation);
            assert!(turned <= limit + 1e-5, "target {target}: joint {joint} turned {turned} rad");
        }
        let mut free = rig.rest_pose().to_vec();
        look_at(rig.parents(), &mut free, &spine_chain(f32::INFINITY), target, 1.0);
        assert!(free[8].rotation.angle_between(rig.rest_pose()[8].rotation) > limit, "the limit mattered");
    }
}

fn full_setup(rig: &Rig) -> ProceduralRig {
    ProceduralSetup {
        look_at: vec![spine_chain(0.5)],
        two_bone: vec![leg(0.02)],
        ground: Some(GroundSetup {
            pelvis: 0,
            feet: vec![FootSetup { leg: leg(0.02), ankle_height_m: 0.08, max_tilt_rad: 0.5 }],
        }),
    }
    .check(rig)
    .expect("the setup fits the rig")
}

#[test]
fn weight_zero_leaves_the_pose_bit_for_bit() {
    let rig = body();
    let setup = full_setup(&rig);
    let mut rng = Rng(3);
    let characters = 50;
    let poses: Vec<Transform> = (0..characters)
        .flat_map(|_| {
            rig.rest_pose().iter().map(|t| Transform { rotation: rng.quat() * t.rotation, ..*t }).collect::<Vec<_>>()
        })
        .collect();
    let mut targets = ProceduralTargets::new(&setup, characters);
    let rows: Vec<u32> = (0..characters as u32).collect();
    let points: Vec<Vec3> = (0..characters).map(|_| Vec3::new(rng.range(-2.0, 2.0), 1.0, 1.0)).collect();
    // Targets set everywhere, weights 0 everywhere: nothing moves.
    targets.set_look_at(0, &rows, &points, &vec![0.0; characters]).unwrap();
    let n = characters;
    targets.set_two_bone(0, &rows, &points, &vec![Vec3::Z; n], &vec![Quat::IDENTITY; n], &vec![0.0; n]).unwrap();
    targets.set_ground(0, &rows, &vec![0.3; n], &vec![Vec3::new(0.3, 1.0, 0.0); n]).unwrap();
    let mut out = poses.clone();
    ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut out }.run().unwrap();
    assert_eq!(out, poses);
    // One character at weight 1 moves, and only it.
    targets.set_look_at(0, &[7], &[Vec3::new(3.0, 1.0, 1.0)], &[1.0]).unwrap();
    assert!(targets.is_active(7) && !targets.is_active(8));
    ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut out }.run().unwrap();
    let joints = rig.num_joints();
    for c in 0..characters {
        let same = out[c * joints..(c + 1) * joints] == poses[c * joints..(c + 1) * joints];
        assert_eq!(same, c != 7, "character {c}");
    }
}

/// Four characters a call, one a SIMD lane: each character's pose comes out with the same bits
/// alone as beside any three others, whatever their weights (0 included), wherever the soft
/// zone, a share's turn or a whole turn applies to some lanes and not to others.
#[test]
fn a_character_gives_the_same_bits_alone_as_in_any_group_of_four() {
    let rig = body();
    let setup = full_setup(&rig);
    let mut rng = Rng(21);
    let characters = 23; // five groups and a partial one
    let joints = rig.num_joints();
    let poses: Vec<Transform> = (0..characters)
        .flat_map(|_| {
            rig.rest_pose().iter().map(|t| Transform { rotation: rng.quat() * t.rotation, ..*t }).collect::<Vec<_>>()
        })
        .collect();
    let mut targets = ProceduralTargets::new(&setup, characters);
    let rows: Vec<u32> = (0..characters as u32).collect();
    let weight = |rng: &mut Rng| [0.0, 1.0, 0.5, 1.0][rng.below(4)];
    let points: Vec<Vec3> =
        (0..characters).map(|_| Vec3::new(rng.range(-2.0, 2.0), rng.range(-1.0, 3.0), rng.range(-2.0, 2.0))).collect();
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    targets.set_look_at(0, &rows, &points, &weights).unwrap();
    // Some targets out of reach (the soft zone), some within it.
    let reach: Vec<Vec3> = points.iter().map(|p| *p * rng.range(0.1, 1.5)).collect();
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    let n = characters;
    targets.set_two_bone(0, &rows, &reach, &vec![Vec3::Z; n], &vec![Quat::IDENTITY; n], &weights).unwrap();
    let heights: Vec<f32> = (0..characters).map(|_| rng.range(-0.3, 0.3)).collect();
    let normals: Vec<Vec3> = (0..characters).map(|_| Vec3::new(rng.range(-0.5, 0.5), 1.0, 0.2).normalize()).collect();
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    targets.set_ground(0, &rows, &heights, &normals).unwrap();
    targets.set_ground_weight(&rows, &weights).unwrap();
    let mut grouped = poses.clone();
    ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut grouped }.run().unwrap();
    assert_ne!(grouped, poses, "the stage moved some characters");
    for c in 0..characters {
        let mut alone = poses[c * joints..(c + 1) * joints].to_vec();
        procedural(rig.parents(), &setup, &targets, c, &mut alone);
        assert_eq!(alone, grouped[c * joints..(c + 1) * joints], "character {c}");
    }
    // The same characters in other groups of four (lanes in another order, one lane empty).
    for first in 0..characters - 3 {
        let mut group: Vec<Transform> =
            [first + 2, first, first + 3].iter().flat_map(|&c| poses[c * joints..(c + 1) * joints].to_vec()).collect();
        let (a, rest) = group.split_at_mut(joints);
        let (b, c) = rest.split_at_mut(joints);
        procedural_lanes(rig.parents(), &setup, &targets, [first + 2, first, 0, first + 3], [a, b, &mut [], c]);
        for (lane, c) in [first + 2, first, first + 3].into_iter().enumerate() {
            let want = &grouped[c * joints..(c + 1) * joints];
            assert_eq!(&group[lane * joints..(lane + 1) * joints], want, "character {c} beside {first}…");
        }
    }
}

/// The frame runs the stage on groups of four rows after their layers: on any thread count its
/// output is the same to the bit, and each character's rows are what its layers' pose through
/// the stage alone, local-to-model and skinning give.
#[test]
fn the_frame_with_the_stage_is_the_same_on_any_thread_count_and_per_character() {
    use throng::Clip;
    use throng::eval::frame_layers::{EvalContext, FrameJob, ProceduralInputs};
    use throng::eval::sample::sample_blend;
    use throng::eval::{local_to_model, skinning};
    use throng::program::{ClipSample, LayerSetup, OutputLayout};

    let rig = body();
    let joints = rig.num_joints();
    let setup = full_setup(&rig);
    let characters = 150; // chunks of 64 and a partial group of two
    let mut rng = Rng(8);
    let poses: Vec<Vec<Transform>> = (0..characters)
        .map(|_| rig.rest_pose().iter().map(|t| Transform { rotation: rng.quat() * t.rotation, ..*t }).collect())
        .collect();
    let clips: Vec<Clip> = poses
        .iter()
        .enumerate()
        .map(|(c, pose)| Clip::from_poses(format!("pose {c}"), joints, pose.clone(), 0.0, true).unwrap())
        .collect();
    let samples: Vec<ClipSample> = (0..characters).map(|c| ClipSample::new(c as u32, 0.0, 1.0)).collect();
    let programs = support::settled_programs(characters);
    let layers = [LayerSetup::default()];
    let mut targets = ProceduralTargets::new(&setup, characters);
    let rows: Vec<u32> = (0..characters as u32).collect();
    let weight = |rng: &mut Rng| [0.0, 1.0, 0.5][rng.below(3)];
    let points: Vec<Vec3> =
        (0..characters).map(|_| Vec3::new(rng.range(-2.0, 2.0), rng.range(0.0, 2.0), 1.0)).collect();
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    targets.set_look_at(0, &rows, &points, &weights).unwrap();
    let n = characters;
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    targets.set_two_bone(0, &rows, &points, &vec![Vec3::Z; n], &vec![Quat::IDENTITY; n], &weights).unwrap();
    let weights: Vec<f32> = (0..characters).map(|_| weight(&mut rng)).collect();
    targets.set_ground(0, &rows, &vec![-0.1; n], &vec![Vec3::new(0.2, 1.0, 0.0).normalize(); n]).unwrap();
    targets.set_ground_weight(&rows, &weights).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut context = EvalContext::new(characters, 1, joints);
        let mut output = vec![0.0; characters * joints * 16];
        let mut clips_sampled = vec![0; characters];
        pool.install(|| {
            FrameJob {
                rig: &rig,
                clips: &clips,
                layers: &layers,
                samples: &samples,
                programs: &programs,
                dt_s: 1.0 / 60.0,
                context: &mut context,
                layout: OutputLayout::Mat4,
                output: &mut output,
                clips_sampled: &mut clips_sampled,
                root_motion: &mut [],
            }
            .run_procedural(ProceduralInputs { setup: &setup, targets: &targets })
        })
        .unwrap();
        output
    };
    let one = run(1);
    for threads in [2, 3] {
        let other = run(threads);
        assert!(one.iter().zip(&other).all(|(a, b)| a.to_bits() == b.to_bits()), "{threads} threads differ");
    }
    let per = joints * 16;
    for c in 0..characters {
        // The layer's pose as the frame samples it, then the stage on that character alone.
        let mut pose = vec![Transform::IDENTITY; joints];
        sample_blend(&clips, &samples[c..c + 1], rig.rest_pose(), &mut pose);
        procedural(rig.parents(), &setup, &targets, c, &mut pose);
        let mut m = vec![Mat4::IDENTITY; joints];
        local_to_model::local_to_model(rig.parents(), &pose, &mut m);
        let mut expected = vec![0.0; per];
        skinning::skinning(&m, rig.inverse_bind(), OutputLayout::Mat4, &mut expected);
        assert_eq!(one[c * per..(c + 1) * per], expected[..], "character {c}");
    }
}

/// The same targets set in world space on characters that stand moved, turned and (uniformly)
/// scaled in the world give the pose that setting their model-space equivalents gives.
#[test]
fn world_space_targets_on_placed_characters_give_the_model_space_pose() {
    use support::compare::worst_abs_diff;
    let rig = body();
    let setup = full_setup(&rig);
    let mut rng = Rng(0x3031d);
    let n = 40;
    let rows: Vec<u32> = (0..n as u32).collect();
    let placements: Vec<Transform> = (0..n)
        .map(|_| Transform {
            translation: Vec3::new(rng.range(-20.0, 20.0), rng.range(-2.0, 2.0), rng.range(-20.0, 20.0)),
            rotation: Quat::from_rotation_y(rng.range(-3.1, 3.1)) * Quat::from_rotation_x(rng.range(-0.2, 0.2)),
            scale: Vec3::splat(rng.range(0.8, 1.25)),
        })
        .collect();
    let random_point = |rng: &mut Rng| Vec3::new(rng.range(-0.5, 0.5), rng.range(0.0, 1.6), rng.range(0.2, 1.5));
    let look: Vec<Vec3> = (0..n).map(|_| random_point(&mut rng)).collect();
    let reach: Vec<Vec3> =
        (0..n).map(|_| Vec3::new(rng.range(0.0, 0.3), rng.range(0.2, 0.5), rng.range(-0.2, 0.3))).collect();
    let poles: Vec<Vec3> = (0..n).map(|_| Vec3::new(rng.range(-1.0, 1.0), 0.0, 1.0)).collect();
    let rotations: Vec<Quat> = (0..n).map(|_| rng.quat()).collect();
    let heights: Vec<f32> = (0..n).map(|_| rng.range(-0.1, 0.2)).collect();
    let normals: Vec<Vec3> =
        (0..n).map(|_| Vec3::new(rng.range(-0.3, 0.3), 1.0, rng.range(-0.3, 0.3)).normalize()).collect();
    let weights: Vec<f32> = (0..n).map(|_| rng.range(0.3, 1.0)).collect();

    let mut model = ProceduralTargets::new(&setup, n);
    model.set_look_at(0, &rows, &look, &weights).unwrap();
    model.set_two_bone(0, &rows, &reach, &poles, &rotations, &weights).unwrap();
    model.set_ground(0, &rows, &heights, &normals).unwrap();
    model.set_ground_weight(&rows, &weights).unwrap();

    // The world as the engine sees it: each model-space value carried out by its placement.
    let m: Vec<Mat4> = placements.iter().map(Transform::to_mat4).collect();
    let out = |f: &dyn Fn(usize) -> Vec3| -> Vec<Vec3> { (0..n).map(f).collect() };
    let look_w = out(&|i| m[i].transform_point3(look[i]));
    let reach_w = out(&|i| m[i].transform_point3(reach[i]));
    let poles_w = out(&|i| m[i].transform_vector3(poles[i]));
    let rotations_w: Vec<Quat> = (0..n).map(|i| placements[i].rotation * rotations[i]).collect();
    // A hit somewhere else on the ground plane under the foot: only its height counts.
    let hits_w = out(&|i| m[i].transform_point3(Vec3::new(off_the_ankle_x(i), heights[i], 0.3)));
    let normals_w = out(&|i| placements[i].rotation * normals[i]);
    let mut world = ProceduralTargets::new(&setup, n);
    world.set_look_at_world(0, &rows, &placements, &look_w, &weights).unwrap();
    world.set_two_bone_world(0, &rows, &placements, &reach_w, &poles_w, &rotations_w, &weights).unwrap();
    world.set_ground_world(0, &rows, &placements, &hits_w, &normals_w).unwrap();
    world.set_ground_weight(&rows, &weights).unwrap();

    let rest: Vec<Transform> = (0..n).flat_map(|_| rig.rest_pose().to_vec()).collect();
    let run = |targets: &ProceduralTargets| {
        let mut poses = rest.clone();
        ProceduralJob { rig: &rig, setup: &setup, targets, poses: &mut poses }.run().unwrap();
        poses.chunks(rig.num_joints()).flat_map(|p| model_floats(&rig, p)).collect::<Vec<f32>>()
    };
    let (from_model, from_world) = (run(&model), run(&world));
    assert_ne!(from_model, model_floats(&rig, rig.rest_pose()).repeat(n), "the targets moved the poses");
    let worst = worst_abs_diff(&from_model, &from_world);
    assert!(worst < 1e-5, "world-space targets differ from model-space ones by {worst}");

    // A placement without an inverse is refused, and nothing of its batch written.
    let before = world.clone();
    let flat = Transform { scale: Vec3::new(1.0, 0.0, 1.0), ..Transform::IDENTITY };
    let bad = world.set_look_at_world(0, &[0, 1], &[Transform::IDENTITY, flat], &[Vec3::ONE; 2], &[1.0; 2]);
    assert!(matches!(bad, Err(ProceduralError::BadTarget { entry: 1, .. })), "{bad:?}");
    let nan = Transform { translation: Vec3::NAN, ..Transform::IDENTITY };
    let bad = world.set_ground_world(0, &[2], &[nan], &[Vec3::ZERO], &[Vec3::Y]);
    assert!(matches!(bad, Err(ProceduralError::BadTarget { entry: 0, .. })), "{bad:?}");
    let bad = world.set_two_bone_world(0, &[0], &[], &[Vec3::ZERO], &[Vec3::Z], &[Quat::IDENTITY], &[1.0]);
    assert!(matches!(bad, Err(ProceduralError::BatchLength { .. })), "{bad:?}");
    assert_eq!(world, before);
}

/// Somewhere along X, away from the foot, for a ground hit that is not under the ankle.
fn off_the_ankle_x(i: usize) -> f32 {
    (i as f32 * 0.37).sin()
}

/// Every model matrix of a pose, as floats.
fn model_floats(rig: &Rig, pose: &[Transform]) -> Vec<f32> {
    model(rig, pose).iter().flat_map(|m| m.to_cols_array()).collect()
}

/// A random parent chain of 2–6 joints, some of them zero-length, with random rotations.
fn random_rig(rng: &mut Rng) -> Rig {
    let n = 3 + rng.below(6);
    let parents = (0..n).map(|j| (j > 0).then(|| rng.below(j) as u16).map(usize::from)).collect();
    let pose = (0..n)
        .map(|_| {
            let length = if rng.below(4) == 0 { 0.0 } else { rng.range(0.0, 0.5) };
            Transform::from_translation_rotation(
                Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.3).normalize() * length,
                rng.quat(),
            )
        })
        .collect();
    Rig::new((0..n).map(|j| format!("j{j}")).collect(), parents, pose, None).unwrap()
}

/// The chain from the root down to `end` (root first).
fn ancestors(rig: &Rig, end: usize) -> Vec<u16> {
    let mut chain = vec![end as u16];
    while let Some(p) = rig.parent(*chain.last().unwrap() as usize) {
        chain.push(p as u16);
    }
    chain.reverse();
    chain
}

#[test]
fn degenerate_rigs_and_targets_give_no_nan() {
    let mut rng = Rng(0xdead_beef);
    for case in 0..300 {
        let rig = random_rig(&mut rng);
        let end = (1..rig.num_joints()).max_by_key(|&j| ancestors(&rig, j).len()).unwrap();
        let path = ancestors(&rig, end);
        if path.len() < 3 {
            continue;
        }
        let rest = model(&rig, rig.rest_pose());
        let start = rng.below(path.len() - 2);
        let chain = TwoBoneChain {
            joints: [path[start], path[start + 1], path[start + 2]],
            soft_fraction: 0.1,
            end: EndRotation::Target,
        };
        let look = LookAtChain::even(path.clone(), Vec3::new(rng.range(-1.0, 1.0), 1.0, 0.0));
        let targets = [
            Vec3::ZERO,
            position(&rest[path[start] as usize]),
            position(&rest[end]),
            Vec3::new(1e5, -1e5, 3.0),
            Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)),
        ];
        for target in targets {
            for pole in [Vec3::ZERO, Vec3::X, target] {
                let mut pose = rig.rest_pose().to_vec();
                two_bone(rig.parents(), &mut pose, &chain, target, pole, rng.quat(), rng.range(0.01, 1.0));
                look_at(rig.parents(), &mut pose, &look, target, 1.0);
                let m = model(&rig, &pose);
                assert!(
                    pose.iter().all(Transform::is_finite) && m.iter().all(|m| m.is_finite()),
                    "case {case}: target {target} pole {pole}: {pose:?}"
                );
            }
        }
    }
}

#[test]
fn every_invalid_setup_is_refused() {
    let rig = body();
    let check = |setup: ProceduralSetup| setup.check(&rig).unwrap_err();
    let with_chain = |chain: LookAtChain| ProceduralSetup { look_at: vec![chain], ..Default::default() };
    let with_leg = |leg: TwoBoneChain| ProceduralSetup { two_bone: vec![leg], ..Default::default() };
    let with_foot = |pelvis: u16, foot: FootSetup| ProceduralSetup {
        ground: Some(GroundSetup { pelvis, feet: vec![foot] }),
        ..Default::default()
    };
    let foot = FootSetup { leg: leg(0.0), ankle_height_m: 0.1, max_tilt_rad: 0.3 };

    // A joint out of range.
    assert!(matches!(check(with_leg(TwoBoneChain::new(1, 2, 9))), ProceduralError::JointOutOfRange { joint: 9, .. }));
    assert!(matches!(
        check(with_chain(LookAtChain::even(vec![5, 60], Vec3::Z))),
        ProceduralError::JointOutOfRange { .. }
    ));
    assert!(matches!(check(with_foot(40, foot)), ProceduralError::JointOutOfRange { joint: 40, .. }));
    // Not a parent chain: siblings, reversed, and a pelvis below the hip.
    assert!(matches!(
        check(with_leg(TwoBoneChain::new(1, 5, 6))),
        ProceduralError::NotAChain { joint: 1, next: 5, .. }
    ));
    assert!(matches!(check(with_chain(LookAtChain::even(vec![8, 7], Vec3::Z))), ProceduralError::NotAChain { .. }));
    assert!(matches!(check(with_foot(2, foot)), ProceduralError::NotAChain { joint: 2, next: 1, .. }));
    // A look-at chain without joints, or shares and limits not one per joint.
    assert!(matches!(check(with_chain(LookAtChain::even(vec![], Vec3::Z))), ProceduralError::BadChain { .. }));
    let short = LookAtChain { shares: vec![1.0], ..spine_chain(0.3) };
    assert!(matches!(check(with_chain(short)), ProceduralError::BadChain { .. }));
    let too_many =
        ProceduralSetup { ground: Some(GroundSetup { pelvis: 0, feet: vec![foot; 5] }), ..Default::default() };
    assert!(matches!(check(too_many), ProceduralError::BadChain { .. }));
    // Numbers out of range.
    let bad_share = LookAtChain { shares: vec![0.5, f32::NAN, 0.5, 1.0], ..spine_chain(0.3) };
    assert!(matches!(check(with_chain(bad_share)), ProceduralError::BadNumber { what: "share", .. }));
    let bad_limit = spine_chain(-0.1);
    assert!(matches!(check(with_chain(bad_limit)), ProceduralError::BadNumber { what: "limit_rad", .. }));
    let no_forward = LookAtChain::even(vec![5, 6], Vec3::ZERO);
    assert!(matches!(check(with_chain(no_forward)), ProceduralError::BadNumber { what: "forward length", .. }));
    assert!(matches!(check(with_leg(leg(1.0))), ProceduralError::BadNumber { what: "soft_fraction", .. }));
    let low = FootSetup { ankle_height_m: -0.1, ..foot };
    assert!(matches!(check(with_foot(0, low)), ProceduralError::BadNumber { what: "ankle_height_m", .. }));
    let tilt = FootSetup { max_tilt_rad: f32::INFINITY, ..foot };
    assert!(matches!(check(with_foot(0, tilt)), ProceduralError::BadNumber { what: "max_tilt_rad", .. }));
}

#[test]
fn every_invalid_batch_and_job_is_refused_and_writes_nothing() {
    let rig = body();
    let setup = full_setup(&rig);
    let mut targets = ProceduralTargets::new(&setup, 4);
    let before = targets.clone();
    let v = Vec3::ONE;
    // An unknown chain or foot.
    assert!(matches!(targets.set_look_at(1, &[0], &[v], &[1.0]), Err(ProceduralError::UnknownChain { index: 1, .. })));
    let q = Quat::IDENTITY;
    assert!(matches!(
        targets.set_two_bone(3, &[0], &[v], &[v], &[q], &[1.0]),
        Err(ProceduralError::UnknownChain { .. })
    ));
    assert!(matches!(targets.set_ground(1, &[0], &[0.0], &[v]), Err(ProceduralError::UnknownChain { .. })));
    // Lengths that differ.
    assert!(matches!(targets.set_look_at(0, &[0, 1], &[v], &[1.0, 1.0]), Err(ProceduralError::BatchLength { .. })));
    assert!(matches!(targets.set_ground_weight(&[0], &[]), Err(ProceduralError::BatchLength { .. })));
    // Bad entries: a later one spoils the whole batch.
    let bad = |r: Result<(), ProceduralError>, entry: usize| {
        assert!(matches!(r, Err(ProceduralError::BadTarget { entry: e, .. }) if e == entry), "{r:?}");
    };
    bad(targets.set_look_at(0, &[0, 4], &[v, v], &[1.0, 1.0]), 1);
    bad(targets.set_look_at(0, &[0, 1], &[v, Vec3::NAN], &[1.0, 1.0]), 1);
    bad(targets.set_look_at(0, &[0, 1], &[v, v], &[1.0, 1.5]), 1);
    bad(targets.set_two_bone(0, &[2], &[v], &[Vec3::INFINITY], &[q], &[1.0]), 0);
    bad(targets.set_two_bone(0, &[2], &[v], &[v], &[Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)], &[1.0]), 0);
    bad(targets.set_two_bone(0, &[2], &[v], &[v], &[q], &[f32::NAN]), 0);
    bad(targets.set_ground(0, &[1, 3], &[0.0, f32::NAN], &[v, v]), 1);
    bad(targets.set_ground_weight(&[3, 0], &[1.0, -0.1]), 1);
    assert_eq!(targets, before, "nothing refused was written");

    let joints = rig.num_joints();
    let mut poses = vec![Transform::IDENTITY; 4 * joints];
    let run = |poses: &mut [Transform], setup: &ProceduralRig, targets: &ProceduralTargets| {
        ProceduralJob { rig: &rig, setup, targets, poses }.run().unwrap_err()
    };
    // Poses that are not whole characters.
    assert!(matches!(run(&mut poses[1..], &setup, &targets), EvalError::PoseCount { .. }));
    // Targets for another crowd size or setup.
    let other = ProceduralTargets::new(&setup, 3);
    assert!(matches!(run(&mut poses, &setup, &other), EvalError::Procedural(ProceduralError::TargetsMismatch { .. })));
    let bare = ProceduralSetup::default().check(&rig).unwrap();
    assert!(matches!(run(&mut poses, &bare, &targets), EvalError::Procedural(ProceduralError::TargetsMismatch { .. })));
    // A setup checked against another rig.
    let small = Rig::new(vec!["a".into()], vec![None], vec![Transform::IDENTITY], None).unwrap();
    let foreign = ProceduralSetup::default().check(&small).unwrap();
    let none = ProceduralTargets::new(&foreign, 4);
    assert!(matches!(run(&mut poses, &foreign, &none), EvalError::Procedural(ProceduralError::RigMismatch { .. })));
}

#[test]
fn the_frame_runs_the_stage_between_layers_and_local_to_model() {
    use throng::Clip;
    use throng::eval::frame_layers::{EvalContext, FrameJob, ProceduralInputs};
    use throng::eval::{local_to_model, skinning};
    use throng::program::{ClipSample, LayerSetup, OutputLayout};

    let rig = body();
    let joints = rig.num_joints();
    let setup = full_setup(&rig);
    let characters = 70; // past one chunk
    let clips = vec![Clip::from_poses("rest", joints, rig.rest_pose().to_vec(), 0.0, true).unwrap()];
    let samples: Vec<ClipSample> = (0..characters).map(|_| ClipSample::new(0, 0.0, 1.0)).collect();
    let programs = support::settled_programs(characters);
    let layers = [LayerSetup::default()];
    let run = |procedural: Option<ProceduralInputs<'_>>| {
        let mut context = EvalContext::new(characters, 1, joints);
        let mut output = vec![0.0; characters * joints * 16];
        let mut clips_sampled = vec![0; characters];
        let job = FrameJob {
            rig: &rig,
            clips: &clips,
            layers: &layers,
            samples: &samples,
            programs: &programs,
            dt_s: 1.0 / 60.0,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        };
        match procedural {
            Some(p) => job.run_procedural(p),
            None => job.run(),
        }
        .unwrap();
        output
    };
    let mut targets = ProceduralTargets::new(&setup, characters);
    let plain = run(None);
    assert_eq!(
        run(Some(ProceduralInputs { setup: &setup, targets: &targets })),
        plain,
        "all weights 0: as without the stage"
    );
    let target = Vec3::new(-2.0, 3.0, 1.0);
    targets.set_look_at(0, &[65], &[target], &[1.0]).unwrap();
    let turned = run(Some(ProceduralInputs { setup: &setup, targets: &targets }));
    // Character 65 by hand: its layers' pose (the rest pose), the stage, local-to-model, skinning.
    let mut pose = rig.rest_pose().to_vec();
    throng::eval::procedural::procedural(rig.parents(), &setup, &targets, 65, &mut pose);
    let mut m = vec![Mat4::IDENTITY; joints];
    local_to_model::local_to_model(rig.parents(), &pose, &mut m);
    let mut expected = vec![0.0; joints * 16];
    skinning::skinning(&m, rig.inverse_bind(), OutputLayout::Mat4, &mut expected);
    let per = joints * 16;
    for c in 0..characters {
        let row = &turned[c * per..(c + 1) * per];
        if c == 65 {
            assert_eq!(row, &expected[..], "character 65 went through the stage");
        } else {
            assert_eq!(row, &plain[c * per..(c + 1) * per], "character {c} is untouched");
        }
    }
    // The targets must fit the frame.
    let small = ProceduralTargets::new(&setup, 3);
    let mut context = EvalContext::new(characters, 1, joints);
    let mut output = vec![0.0; characters * joints * 16];
    let mut clips_sampled = vec![0; characters];
    let err = FrameJob {
        rig: &rig,
        clips: &clips,
        layers: &layers,
        samples: &samples,
        programs: &programs,
        dt_s: 0.0,
        context: &mut context,
        layout: OutputLayout::Mat4,
        output: &mut output,
        clips_sampled: &mut clips_sampled,
        root_motion: &mut [],
    }
    .run_procedural(ProceduralInputs { setup: &setup, targets: &small })
    .unwrap_err();
    assert!(matches!(err, EvalError::Procedural(ProceduralError::TargetsMismatch { .. })), "{err}");
}

#[test]
fn feet_stay_on_a_slope_over_a_walk_cycle_and_the_pelvis_drops_only_what_the_lower_foot_needs() {
    use throng::demo::{DemoCharacter, WALK};
    use throng::eval::sample::sample_blend;
    use throng::program::ClipSample;

    let demo = DemoCharacter::humanoid();
    let rig = &demo.rig;
    let joint = |name: &str| rig.find_joint(name).expect("a demo joint") as u16;
    let (pelvis, ankle_height_m) = (joint("pelvis"), 0.08);
    let feet = ["l", "r"].map(|side| FootSetup {
        leg: TwoBoneChain::new(
            joint(&format!("thigh_{side}")),
            joint(&format!("calf_{side}")),
            joint(&format!("foot_{side}")),
        ),
        ankle_height_m,
        max_tilt_rad: 0.4,
    });
    let setup = ProceduralSetup { ground: Some(GroundSetup { pelvis, feet: feet.to_vec() }), ..Default::default() }
        .check(rig)
        .unwrap();
    // A slope rising 15 cm per metre to the left and 10 cm per metre forward (about 10°).
    let plane = |p: Vec3| 0.15 * p.x + 0.1 * p.z - 0.02;
    let normal = Vec3::new(-0.15, 1.0, -0.1).normalize();
    let walk = demo.clip_index(WALK).unwrap() as u32;
    let duration_s = demo.clips[walk as usize].duration_s();
    let mut targets = ProceduralTargets::new(&setup, 1);
    targets.set_ground_weight(&[0], &[1.0]).unwrap();
    let mut planted = 0;
    for frame in 0..=60 {
        let time_s = duration_s * frame as f32 / 60.0;
        let mut pose = rig.rest_pose().to_vec();
        sample_blend(&demo.clips, &[ClipSample::new(walk, time_s, 1.0)], rig.rest_pose(), &mut pose);
        let animated = model(rig, &pose);
        let ankles = feet.map(|f| position(&animated[f.leg.joints[2] as usize]));
        for (f, ankle) in ankles.iter().enumerate() {
            targets.set_ground(f, &[0], &[plane(*ankle)], &[normal]).unwrap();
        }
        let mut out = pose.clone();
        ProceduralJob { rig, setup: &setup, targets: &targets, poses: &mut out }.run().unwrap();
        let placed = model(rig, &out);
        // Each sole keeps its animated lift above the slope: on it when planted.
        for (f, ankle) in ankles.iter().enumerate() {
            let lift = ankle.y - ankle_height_m;
            let sole = position(&placed[feet[f].leg.joints[2] as usize]) - normal * ankle_height_m;
            let expected = Vec3::new(ankle.x, plane(*ankle) + lift, ankle.z);
            let miss = sole.distance(expected);
            assert!(miss < 5e-3, "t {time_s:.3} s foot {f}: sole {sole} is {miss} m from {expected} (lift {lift})");
            if lift < 1e-3 {
                planted += 1;
                let off = (sole.y - plane(sole)).abs();
                assert!(off < 5e-3, "t {time_s:.3} s foot {f}: a planted sole {off} m off the slope");
            }
        }
        // The pelvis drops by the lower foot's need exactly, never more, never up.
        let needs = ankles.map(|a| plane(a) + ankle_height_m * (normal.y - 1.0));
        let need = needs[0].min(needs[1]).min(0.0);
        let drop = position(&placed[pelvis as usize]).y - position(&animated[pelvis as usize]).y;
        assert!(
            (drop - need).abs() < 1e-4 && drop <= 0.0,
            "t {time_s:.3} s: pelvis moved {drop} m for a need of {need} m"
        );
    }
    assert!(planted > 20, "the walk plants its feet ({planted} planted foot-frames)");
}
