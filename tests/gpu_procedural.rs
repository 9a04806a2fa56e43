//! The procedural stage: `shaders/procedural.wgsl` against its CPU mirror
//! `throng::eval::procedural` within 1e-4 on random rigs, chains and targets (unreachable
//! targets, targets on the chain's root, zero-length bones, weight 0 leaving the pose as it
//! was); the setup's words and the uniform against the shader's constants and layout; and the
//! refusals of the GPU stage.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;

use glam::{Quat, Vec3};
use throng::eval::procedural::ProceduralJob;
use throng::gpu::procedural::{
    FOOT_TARGET_FLOATS, LOOK_AT_TARGET_FLOATS, PROCEDURAL_HEADER_WORDS, PROCEDURAL_WORKGROUP, ProceduralParams,
    TWO_BONE_TARGET_FLOATS, procedural_words, target_stride,
};
use throng::gpu::{GpuError, GpuProcedural, procedural_source};
use throng::pose::NO_PARENT;
use throng::program::{
    EndRotation, FootSetup, GroundSetup, LookAtChain, ProceduralError, ProceduralRig, ProceduralSetup,
    ProceduralTargets, TwoBoneChain,
};
use throng::{Rig, Transform};

use support::compare::worst_abs_diff;
use support::{Rng, wgsl};

/// How far the GPU's local transforms may be from the CPU's (issue #21).
const TOLERANCE: f32 = 1e-4;

/// A random tree of `n` joints under joint 0, each joint's parent one of the three before it
/// (so that chains are long), bones of 5 to 40 cm with one in six of zero length, turned rest
/// rotations and scales near 1.
fn random_rig(rng: &mut Rng, n: usize) -> Rig {
    let parents = (0..n).map(|j| (j > 0).then(|| (j - 1 - rng.below(3.min(j))) as u16)).collect::<Vec<_>>();
    let rest = (0..n)
        .map(|j| {
            let length = if j > 0 && rng.below(6) == 0 { 0.0 } else { rng.range(0.05, 0.4) };
            let direction = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
            Transform {
                translation: direction.normalize_or(Vec3::Y) * length,
                rotation: Quat::from_euler(
                    glam::EulerRot::XYZ,
                    rng.range(-0.6, 0.6),
                    rng.range(-0.6, 0.6),
                    rng.range(-0.6, 0.6),
                ),
                scale: Vec3::splat(rng.range(0.9, 1.1)),
            }
        })
        .collect();
    let names = (0..n).map(|j| format!("j{j}")).collect();
    Rig::new(names, parents.iter().map(|p| p.map(usize::from)).collect(), rest, None).expect("the random rig is valid")
}

/// `joint`'s ancestors, nearest first.
fn ancestors(rig: &Rig, joint: u16) -> Vec<u16> {
    let mut out = Vec::new();
    let mut j = rig.parents()[joint as usize];
    while j != NO_PARENT {
        out.push(j);
        j = rig.parents()[j as usize];
    }
    out
}

/// Three joints, each an ancestor of the next, none of them the root, ending at a random
/// joint deep enough.
fn random_two_bone(rng: &mut Rng, rig: &Rig, soft_fraction: f32, end: EndRotation) -> TwoBoneChain {
    loop {
        let c = rng.below(rig.num_joints()) as u16;
        let up = ancestors(rig, c);
        // Leave the root (the last ancestor) above the chain, for the ground's pelvis.
        if up.len() < 3 {
            continue;
        }
        let b_at = rng.below(up.len() - 2);
        let a_at = b_at + 1 + rng.below(up.len() - 2 - b_at);
        return TwoBoneChain { joints: [up[a_at], up[b_at], c], soft_fraction, end };
    }
}

fn random_setup(rng: &mut Rng, rig: &Rig) -> ProceduralRig {
    let look_at = (0..1 + rng.below(2))
        .map(|_| {
            let end = (1 + rng.below(rig.num_joints() - 1)) as u16;
            let mut joints: Vec<u16> = ancestors(rig, end).into_iter().take(rng.below(4)).collect();
            joints.reverse();
            joints.push(end);
            let n = joints.len();
            let mut chain =
                LookAtChain::even(joints, Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(0.2, 1.0)));
            for i in 0..n {
                chain.shares[i] = if rng.below(3) == 0 { rng.range(0.0, 1.0) } else { chain.shares[i] };
                chain.limits_rad[i] = if rng.below(2) == 0 { rng.range(0.05, 1.5) } else { f32::INFINITY };
            }
            chain
        })
        .collect();
    let ends = [EndRotation::Animated, EndRotation::Target];
    let two_bone = (0..1 + rng.below(2))
        .map(|i| {
            let soft_fraction = [0.0, 0.02, 0.3][rng.below(3)];
            random_two_bone(rng, rig, soft_fraction, ends[i % 2])
        })
        .collect();
    let feet = (0..1 + rng.below(2))
        .map(|_| FootSetup {
            leg: random_two_bone(rng, rig, 0.02, EndRotation::Animated),
            ankle_height_m: rng.range(0.0, 0.1),
            max_tilt_rad: rng.range(0.0, 0.6),
        })
        .collect();
    ProceduralSetup { look_at, two_bone, ground: Some(GroundSetup { pelvis: 0, feet }) }
        .check(rig)
        .expect("the random setup is valid")
}

/// A weight: 0, 1 or between, each a third of the time.
fn weight(rng: &mut Rng) -> f32 {
    match rng.below(3) {
        0 => 0.0,
        1 => 1.0,
        _ => rng.range(0.05, 1.0),
    }
}

/// A point: near the character, far out of reach, or (given `on`, a chain's root) on it.
fn point(rng: &mut Rng, on: Option<Vec3>) -> Vec3 {
    match (rng.below(4), on) {
        (0, _) => Vec3::new(rng.range(-8.0, 8.0), rng.range(-8.0, 8.0), rng.range(-8.0, 8.0)),
        (1, Some(on)) => on,
        _ => Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)),
    }
}

fn model_positions(rig: &Rig, pose: &[Transform]) -> Vec<Vec3> {
    let mut out = vec![glam::Mat4::IDENTITY; pose.len()];
    throng::pose::local_to_model(rig.parents(), pose, &mut out);
    out.iter().map(|m| m.w_axis.truncate()).collect()
}

/// Random targets for every character of `poses`; every fifth character keeps every weight 0.
fn random_targets(rng: &mut Rng, rig: &Rig, setup: &ProceduralRig, poses: &[Transform]) -> ProceduralTargets {
    let joints = rig.num_joints();
    let characters = poses.len() / joints;
    let s = setup.setup();
    let mut targets = ProceduralTargets::new(setup, characters);
    for row in 0..characters {
        if row % 5 == 0 {
            continue;
        }
        let at = model_positions(rig, &poses[row * joints..(row + 1) * joints]);
        let rows = [row as u32];
        // A look-at target on the end joint is no direction at all: each evaluator's rounding
        // of the joint's position picks its own (`procedural_matches_cpu_on_degenerate_chains`
        // takes it where both compose the same exact positions).
        for i in 0..s.look_at.len() {
            targets.set_look_at(i, &rows, &[point(rng, None)], &[weight(rng)]).unwrap();
        }
        for (i, chain) in s.two_bone.iter().enumerate() {
            let target = point(rng, Some(at[chain.joints[0] as usize]));
            let pole = if rng.below(3) == 0 { Vec3::ZERO } else { point(rng, None) };
            targets.set_two_bone(i, &rows, &[target], &[pole], &[rng.quat()], &[weight(rng)]).unwrap();
        }
        for f in 0..targets.feet().len() {
            let normal = Vec3::new(rng.range(-0.5, 0.5), 1.0, rng.range(-0.5, 0.5));
            targets.set_ground(f, &rows, &[rng.range(-0.3, 0.3)], &[normal]).unwrap();
        }
        targets.set_ground_weight(&rows, &[weight(rng)]).unwrap();
    }
    targets
}

fn floats(pose: &[Transform]) -> Vec<f32> {
    pose.iter()
        .flat_map(|t| t.translation.to_array().into_iter().chain(t.rotation.to_array()).chain(t.scale.to_array()))
        .collect()
}

/// The chains of `setup` touching `joint`, named as the setup's errors name them.
fn chains_touching(setup: &ProceduralRig, joint: u16) -> Vec<String> {
    let s = setup.setup();
    let mut names = Vec::new();
    for (i, c) in s.look_at.iter().enumerate() {
        if c.joints.contains(&joint) {
            names.push(format!("look_at {i}"));
        }
    }
    for (i, c) in s.two_bone.iter().enumerate() {
        if c.joints.contains(&joint) {
            names.push(format!("two_bone {i}"));
        }
    }
    for (i, f) in s.ground.iter().flat_map(|g| &g.feet).enumerate() {
        if f.leg.joints.contains(&joint) {
            names.push(format!("ground foot {i}"));
        }
    }
    if s.ground.as_ref().is_some_and(|g| g.pelvis == joint) {
        names.push("ground pelvis".into());
    }
    names
}

#[test]
fn procedural_matches_cpu() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let mut rng = Rng(0x0021_9e0c_ed00_0001);
    let mut checked = 0;
    for case in 0..12 {
        let num_joints = 12 + rng.below(40);
        let rig = random_rig(&mut rng, num_joints);
        let joints = rig.num_joints();
        let setup = random_setup(&mut rng, &rig);
        let characters = 1 + rng.below(150);
        let mut animated = Vec::with_capacity(characters * joints);
        for _ in 0..characters {
            animated.extend(rig.rest_pose().iter().map(|rest| Transform {
                rotation: (rest.rotation * Quat::from_scaled_axis(rng.quat().to_scaled_axis() * 0.3)).normalize(),
                ..*rest
            }));
        }
        let targets = random_targets(&mut rng, &rig, &setup, &animated);
        let mut expected = animated.clone();
        ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut expected }.run().unwrap();
        let stage = GpuProcedural::new(&gpu.device, &rig, &setup).unwrap();
        let mut got = animated.clone();
        stage.run_blocking(&gpu.device, &gpu.queue, &targets, &mut got).unwrap();
        let mut failures = Vec::new();
        for c in 0..characters {
            let range = c * joints..(c + 1) * joints;
            if !targets.is_active(c) {
                // Weight 0 everywhere: the pose is not touched, bit for bit.
                if floats(&got[range.clone()])
                    .iter()
                    .map(|f| f.to_bits())
                    .ne(floats(&animated[range]).iter().map(|f| f.to_bits()))
                {
                    failures.push(format!("case {case}, character {c}: every weight 0 but the pose changed"));
                }
                continue;
            }
            for j in 0..joints {
                let (e, g) = (&expected[c * joints + j], &got[c * joints + j]);
                let diff = worst_abs_diff(&floats(std::slice::from_ref(e)), &floats(std::slice::from_ref(g)));
                if diff.is_nan() || diff > TOLERANCE {
                    failures.push(format!(
                        "case {case}, character {c}, joint {j} ({:?}): off by {diff}\n  expected {e:?}\n  got      {g:?}",
                        chains_touching(&setup, j as u16)
                    ));
                }
            }
            checked += 1;
        }
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
    }
    assert!(checked > 200, "only {checked} characters had procedural work");
}

/// With a single look-at and two-bone target per kind, the comparisons cover what the random
/// cases may miss: a two-bone target on its root, one out of reach, a chain of zero-length
/// bones, and weight 0.
#[test]
fn procedural_matches_cpu_on_degenerate_chains() {
    let Some(gpu) = gpu_support::gpu() else { return };
    // root → a → b → c → d, with b → c of zero length.
    let rest = [Vec3::Y, Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.0, -0.4, 0.0), Vec3::ZERO, Vec3::new(0.0, -0.4, 0.05)]
        .map(Transform::from_translation)
        .to_vec();
    let rig =
        Rig::new((0..5).map(|j| format!("j{j}")).collect(), vec![None, Some(0), Some(1), Some(2), Some(3)], rest, None)
            .unwrap();
    let setup = ProceduralSetup {
        look_at: vec![LookAtChain::even(vec![2, 3, 4], Vec3::Z)],
        two_bone: vec![TwoBoneChain::new(1, 2, 4), TwoBoneChain::new(2, 3, 4)],
        ground: None,
    }
    .check(&rig)
    .unwrap();
    let at = model_positions(&rig, rig.rest_pose());
    let cases = [
        (at[1], 1.0),                     // on the root
        (at[1] + Vec3::NEG_Y * 5.0, 1.0), // out of reach
        (at[4], 1.0),                     // where the end already is
        (Vec3::new(0.3, 0.5, 0.2), 0.5),  // within reach, halfway
        (Vec3::new(0.3, 0.5, 0.2), 0.0),  // weight 0
    ];
    let mut targets = ProceduralTargets::new(&setup, cases.len());
    for (row, &(target, weight)) in cases.iter().enumerate() {
        let rows = [row as u32];
        targets.set_look_at(0, &rows, &[target], &[weight]).unwrap();
        for chain in 0..2 {
            targets.set_two_bone(chain, &rows, &[target], &[Vec3::Z], &[Quat::IDENTITY], &[weight]).unwrap();
        }
    }
    let animated: Vec<Transform> = (0..cases.len()).flat_map(|_| rig.rest_pose().iter().copied()).collect();
    let mut expected = animated.clone();
    ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut expected }.run().unwrap();
    let stage = GpuProcedural::new(&gpu.device, &rig, &setup).unwrap();
    let mut got = animated.clone();
    stage.run_blocking(&gpu.device, &gpu.queue, &targets, &mut got).unwrap();
    for (row, case) in cases.iter().enumerate() {
        let range = row * 5..(row + 1) * 5;
        let diff = worst_abs_diff(&floats(&expected[range.clone()]), &floats(&got[range.clone()]));
        assert!(
            diff <= TOLERANCE,
            "case {case:?}: off by {diff}\n  expected {:?}\n  got      {:?}",
            &expected[range.clone()],
            &got[range]
        );
    }
    assert_eq!(floats(&got[20..25]), floats(&animated[20..25]), "weight 0 changed the pose");
}

/// The shader's constants are the crate's, the words' sections are where the header says,
/// and the uniform's layout (as naga lays it out) is [`ProceduralParams`]'.
#[test]
fn words_targets_and_uniform_match_the_shader() {
    let source = procedural_source();
    let (module, layouter) = wgsl::parse(&source);
    let u32_constants = [
        ("PROCEDURAL_WORKGROUP", PROCEDURAL_WORKGROUP),
        ("MAX_FEET", throng::program::MAX_FEET as u32),
        ("LOOK_AT_TARGET_LEN", LOOK_AT_TARGET_FLOATS as u32),
        ("TWO_BONE_TARGET_LEN", TWO_BONE_TARGET_FLOATS as u32),
        ("FOOT_TARGET_LEN", FOOT_TARGET_FLOATS as u32),
    ];
    for (name, value) in u32_constants {
        assert_eq!(wgsl::wgsl_u32_constant(&module, name), value, "shaders/procedural.wgsl's {name}");
    }
    assert!(source.contains(&format!("const EPSILON_M: f32 = {:e};", throng::eval::procedural::EPSILON_M)));
    let constant = |name: &str| wgsl::wgsl_u32_constant(&module, name) as usize;
    let mut rng = Rng(0x0021_0000_0000_0002);
    let rig = random_rig(&mut rng, 30);
    let setup = random_setup(&mut rng, &rig);
    let s = setup.setup();
    let words = procedural_words(&rig, &setup);
    let feet = &s.ground.as_ref().unwrap().feet;
    let header = |name: &str| words[constant(name)] as usize;
    assert_eq!(
        [header("HEADER_LOOK_AT"), header("HEADER_TWO_BONE"), header("HEADER_FEET"), header("HEADER_PELVIS")],
        [s.look_at.len(), s.two_bone.len(), feet.len(), 0]
    );
    assert_eq!(header("HEADER_PARENTS_AT"), PROCEDURAL_HEADER_WORDS);
    let parents = &words[PROCEDURAL_HEADER_WORDS..PROCEDURAL_HEADER_WORDS + rig.num_joints()];
    assert!(
        parents.iter().zip(rig.parents()).all(|(&w, &p)| w == if p == NO_PARENT { u32::MAX } else { u32::from(p) })
    );
    for (i, chain) in s.look_at.iter().enumerate() {
        let at = words[header("HEADER_LOOK_AT_AT") + i] as usize;
        assert_eq!(words[at] as usize, chain.joints.len());
        assert_eq!(words[at + 1..at + 4], chain.forward.to_array().map(f32::to_bits));
        let last = at + constant("LOOK_AT_HEAD") + constant("LOOK_AT_JOINT") * (chain.joints.len() - 1);
        assert_eq!(words[last], u32::from(*chain.joints.last().unwrap()));
        assert_eq!(words[last + 2], chain.limits_rad.last().unwrap().to_bits());
    }
    for (i, chain) in s.two_bone.iter().enumerate() {
        let at = header("HEADER_TWO_BONE_AT") + constant("TWO_BONE_LEN") * i;
        assert_eq!(words[at..at + 3], chain.joints.map(u32::from));
        assert_eq!(words[at + 4] == constant("END_TARGET") as u32, chain.end == EndRotation::Target);
    }
    assert_eq!(header("HEADER_FEET_AT") + constant("FOOT_LEN") * feet.len(), words.len());
    let f = header("HEADER_FEET_AT");
    assert_eq!(words[f + 5], feet[0].max_tilt_rad.to_bits());
    assert_eq!(
        target_stride(&setup),
        4 * s.look_at.len() + 11 * s.two_bone.len() + 1 + 4 * feet.len(),
        "per row: look-at chains, two-bone chains, the ground's weight and the feet"
    );

    let pad = std::mem::offset_of!(ProceduralParams, pad);
    wgsl::check_struct(
        &module,
        &layouter,
        "ProceduralParams",
        size_of::<ProceduralParams>(),
        &[
            ("num_characters", std::mem::offset_of!(ProceduralParams, num_characters)),
            ("num_joints", std::mem::offset_of!(ProceduralParams, num_joints)),
            ("groups_x", std::mem::offset_of!(ProceduralParams, groups_x)),
            ("target_stride", std::mem::offset_of!(ProceduralParams, target_stride)),
            ("pose_base", std::mem::offset_of!(ProceduralParams, pose_base)),
            ("target_base", std::mem::offset_of!(ProceduralParams, target_base)),
            ("pad0", pad),
            ("pad1", pad + 4),
        ],
    );
}

/// The GPU stage refuses what the CPU job refuses, before anything is dispatched.
#[test]
fn the_gpu_stage_refuses_mismatched_setups_targets_and_poses() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let mut rng = Rng(0x0021_0000_0000_0003);
    let rig = random_rig(&mut rng, 12);
    let other = random_rig(&mut rng, 13);
    let setup = random_setup(&mut rng, &rig);
    assert!(matches!(
        GpuProcedural::new(&gpu.device, &other, &setup),
        Err(GpuError::Procedural(ProceduralError::RigMismatch { setup_joints: 12, rig_joints: 13 }))
    ));
    let stage = GpuProcedural::new(&gpu.device, &rig, &setup).unwrap();
    let mut poses = vec![Transform::IDENTITY; 12 * 3 + 1];
    let targets = ProceduralTargets::new(&setup, 3);
    assert!(matches!(
        stage.run_blocking(&gpu.device, &gpu.queue, &targets, &mut poses),
        Err(GpuError::LengthMismatch { what: "procedural poses", .. })
    ));
    let mut poses = vec![Transform::IDENTITY; 12 * 4];
    assert!(matches!(
        stage.run_blocking(&gpu.device, &gpu.queue, &targets, &mut poses),
        Err(GpuError::Procedural(ProceduralError::TargetsMismatch { got_characters: 3, characters: 4, .. }))
    ));
}

/// The demo humanoid's four-joint look-at chain (the last spine joint to the head) and both
/// legs' two-bone chains.
fn humanoid_chains(rig: &Rig) -> ProceduralRig {
    let joint = |name: &str| rig.find_joint(name).expect("a demo joint") as u16;
    let neck = joint("neck_01");
    let spine_top = rig.parents()[neck as usize];
    let leg = |side: &str| {
        TwoBoneChain::new(
            joint(&format!("thigh_{side}")),
            joint(&format!("calf_{side}")),
            joint(&format!("foot_{side}")),
        )
    };
    ProceduralSetup {
        look_at: vec![LookAtChain::even(vec![spine_top, neck, joint("neck_02"), joint("head")], Vec3::Z)],
        two_bone: vec![leg("l"), leg("r")],
        ground: None,
    }
    .check(rig)
    .unwrap()
}

/// New random targets for characters 1 onwards (character 0 keeps weight 0): heads toward
/// points around the character, feet toward points near the animated ones, random weights.
fn aim_randomly(rng: &mut Rng, targets: &mut ProceduralTargets, characters: usize) {
    for c in 1..characters as u32 {
        let rows = [c];
        let head = Vec3::new(rng.range(-3.0, 3.0), rng.range(0.5, 2.5), rng.range(-3.0, 3.0));
        targets.set_look_at(0, &rows, &[head], &[weight(rng)]).unwrap();
        for (i, x) in [(0, 0.1), (1, -0.1)] {
            let foot = Vec3::new(x + rng.range(-0.1, 0.1), rng.range(0.0, 0.3), rng.range(-0.3, 0.3));
            let w = weight(rng);
            targets.set_two_bone(i, &rows, &[foot], &[Vec3::Z], &[Quat::IDENTITY], &[w]).unwrap();
        }
    }
}

/// Characters of [`WalkingCrowd`], and its frames' seconds.
const WALKING_CHARACTERS: usize = 70;
const WALKING_DT_S: f32 = 1.0 / 30.0;

/// The demo humanoid walking, a clip each at its own time, in a layered GPU crowd with stage
/// buffers in chunks of 32, beside the CPU frame job's memory: the procedural crowds' tests.
struct WalkingCrowd {
    demo: throng::demo::DemoCharacter,
    setup: ProceduralRig,
    samples: Vec<throng::program::ClipSample>,
    programs: Vec<throng::program::LayerProgram>,
    layers: [throng::program::LayerSetup; 1],
    targets: ProceduralTargets,
    options: throng::gpu::GpuCrowdOptions,
    crowd: throng::gpu::GpuCrowd,
    context: throng::eval::frame_layers::EvalContext,
}

impl WalkingCrowd {
    fn new(gpu: &throng::gpu::GpuContext) -> Self {
        use throng::demo::{DemoCharacter, WALK};
        use throng::program::{ClipSample, LayerSetup, OutputLayout};
        let demo = DemoCharacter::humanoid();
        let setup = humanoid_chains(&demo.rig);
        let walk = demo.clip_index(WALK).unwrap() as u32;
        let samples = (0..WALKING_CHARACTERS).map(|c| ClipSample::new(walk, 0.013 * c as f32, 1.0)).collect();
        let layers = [LayerSetup::default()];
        let options = throng::gpu::GpuCrowdOptions {
            layout: OutputLayout::Mat4,
            stage_buffers: true,
            max_chunk_characters: Some(32),
            ..throng::gpu::GpuCrowdOptions::default()
        };
        let crowd =
            throng::gpu::GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, &layers, options)
                .unwrap();
        Self {
            context: throng::eval::frame_layers::EvalContext::new(WALKING_CHARACTERS, 1, demo.rig.num_joints()),
            targets: ProceduralTargets::new(&setup, WALKING_CHARACTERS),
            programs: support::settled_programs(WALKING_CHARACTERS),
            demo,
            setup,
            samples,
            layers,
            options,
            crowd,
        }
    }

    /// The CPU's frame with the stage into `output` (mat4): every character, or the due ones.
    fn cpu_frame(&mut self, due: Option<throng::program::DueRows<'_>>, output: &mut [f32]) {
        use throng::eval::frame_layers::{FrameJob, ProceduralInputs};
        let mut clips_sampled = vec![0; WALKING_CHARACTERS];
        let job = FrameJob {
            rig: &self.demo.rig,
            clips: &self.demo.clips,
            layers: &self.layers,
            samples: &self.samples,
            programs: &self.programs,
            dt_s: WALKING_DT_S,
            context: &mut self.context,
            layout: throng::program::OutputLayout::Mat4,
            output,
            clips_sampled: &mut clips_sampled,
            root_motion: &mut [],
        };
        let inputs = ProceduralInputs { setup: &self.setup, targets: &self.targets };
        match due {
            Some(due) => job.run_due_procedural(due, inputs),
            None => job.run_procedural(inputs),
        }
        .unwrap();
    }
}

/// A layered GPU crowd of the demo humanoid walking, its heads turning toward points (a
/// four-joint look-at chain) and both legs reaching targets near their animated feet, equals
/// `FrameJob::run_procedural` within 1e-4 over two frames, in chunks; with every weight 0 it
/// is the fused frame without the stage, bit for bit; and it needs stage buffers.
#[test]
fn a_gpu_crowd_with_look_at_and_leg_ik_equals_the_cpu_frame() {
    use support::compare::assert_matrices_close;

    let Some(gpu) = gpu_support::gpu() else { return };
    let mut w = WalkingCrowd::new(&gpu);
    let (characters, joints) = (WALKING_CHARACTERS, w.demo.rig.num_joints());
    let mut rng = Rng(0x0021_0000_0000_0004);
    for frame in 0..2 {
        // New targets each frame: the second call writes over the first's buffer.
        aim_randomly(&mut rng, &mut w.targets, characters);
        let mut expected = vec![0.0; characters * joints * 16];
        w.cpu_frame(None, &mut expected);
        w.crowd.set_frame(&w.samples, &w.programs, WALKING_DT_S).unwrap();
        w.crowd.set_procedural(&w.setup, &w.targets).unwrap();
        assert!(w.crowd.procedural_active());
        let got = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &w.crowd);
        assert_matrices_close(&expected, &got, 16, joints, TOLERANCE, &format!("frame {frame}, procedural crowd"));
    }

    // Every weight 0: no stage, the fused frame, equal to a crowd without procedural targets.
    use throng::gpu::{GpuCrowd, GpuCrowdOptions};
    let (rig, clips, layers) = (&w.demo.rig, &w.demo.clips, &w.layers);
    let idle = ProceduralTargets::new(&w.setup, characters);
    let mut plain = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, w.options).unwrap();
    w.crowd.set_frame(&w.samples, &w.programs, WALKING_DT_S).unwrap();
    w.crowd.set_procedural(&w.setup, &idle).unwrap();
    assert!(!w.crowd.procedural_active());
    let with_idle = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &w.crowd);
    let mut without = Vec::new();
    for _ in 0..3 {
        // As many frames as `crowd` has evaluated.
        plain.set_frame(&w.samples, &w.programs, WALKING_DT_S).unwrap();
        without = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &plain);
    }
    assert_eq!(worst_abs_diff(&with_idle, &without), 0.0, "weights 0 change the frame");

    let bare = GpuCrowdOptions { stage_buffers: false, ..w.options };
    let mut no_stages = GpuCrowd::with_layers(&gpu.device, &gpu.queue, rig, clips, layers, bare).unwrap();
    no_stages.set_frame(&w.samples, &w.programs, WALKING_DT_S).unwrap();
    assert!(matches!(no_stages.set_procedural(&w.setup, &w.targets), Err(GpuError::NoStageBuffers)));
    let few = ProceduralTargets::new(&w.setup, 3);
    assert!(matches!(
        w.crowd.set_procedural(&w.setup, &few),
        Err(GpuError::Procedural(ProceduralError::TargetsMismatch { .. }))
    ));
}

/// Under animation LOD the stage runs on the due characters alone, on both evaluators: a GPU
/// crowd given due lists (`set_frame_due`) and targets equals `FrameJob::run_due_procedural`
/// within 1e-4 frame after frame, in chunks, whether the targets are set after the due list or
/// before it (a due list that changes rewrites them), and again with every character once LOD
/// is off; and a character that is not due keeps its local pose untouched (its row of targets
/// is written with weight 0).
#[test]
fn a_gpu_crowd_with_the_stage_under_animation_lod_equals_the_cpu_frame() {
    use support::compare::assert_matrices_close;
    use throng::program::DueRows;

    let Some(gpu) = gpu_support::gpu() else { return };
    let mut w = WalkingCrowd::new(&gpu);
    let (characters, joints) = (WALKING_CHARACTERS, w.demo.rig.num_joints());
    let mut rng = Rng(0x0021_0000_0000_0005);
    let mut expected = vec![0.0; characters * joints * 16];
    let mut before: Option<Vec<Transform>> = None;
    for frame in 0..5u32 {
        // Every character on frame 0; then a third of them, a different third each frame.
        let rows: Vec<u32> = (0..characters as u32).filter(|&c| frame == 0 || (c + frame) % 3 == 0).collect();
        let row_dt_s: Vec<f32> = rows.iter().map(|&c| WALKING_DT_S * (1 + c % 3) as f32).collect();
        let due = DueRows { rows: &rows, dt_s: &row_dt_s };
        aim_randomly(&mut rng, &mut w.targets, characters);
        w.cpu_frame(Some(due), &mut expected);
        if frame % 2 == 0 {
            w.crowd.set_frame_due(&w.samples, &w.programs, WALKING_DT_S, due).unwrap();
            w.crowd.set_procedural(&w.setup, &w.targets).unwrap();
        } else {
            w.crowd.set_procedural(&w.setup, &w.targets).unwrap();
            w.crowd.set_frame_due(&w.samples, &w.programs, WALKING_DT_S, due).unwrap();
        }
        assert!(w.crowd.procedural_active());
        let got = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &w.crowd);
        assert_matrices_close(&expected, &got, 16, joints, TOLERANCE, &format!("frame {frame}, due {}", rows.len()));
        let poses = w.crowd.read_local_poses_blocking().unwrap();
        if let Some(before) = &before {
            for c in (0..characters).filter(|&c| !rows.contains(&(c as u32))) {
                let range = c * joints..(c + 1) * joints;
                assert_eq!(
                    floats(&poses[range.clone()]),
                    floats(&before[range]),
                    "frame {frame}: character {c}, not due, had its local pose changed"
                );
            }
        }
        before = Some(poses);
    }
    // LOD off again, the targets set before the frame: every row runs the stage.
    aim_randomly(&mut rng, &mut w.targets, characters);
    w.cpu_frame(None, &mut expected);
    w.crowd.set_procedural(&w.setup, &w.targets).unwrap();
    w.crowd.set_frame(&w.samples, &w.programs, WALKING_DT_S).unwrap();
    let got = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &w.crowd);
    assert_matrices_close(&expected, &got, 16, joints, TOLERANCE, "every character again");
}

/// `read_joints_blocking` returns the listed joints' rows of the whole output, in the order
/// listed, from every output buffer of a crowd split over several; and refuses a joint past
/// the rig.
#[test]
fn read_joints_returns_the_listed_rows_of_the_output() {
    use throng::demo::{DemoCharacter, WALK};
    use throng::gpu::{GpuCrowd, GpuCrowdOptions};
    use throng::program::{ClipSample, OutputLayout};

    let Some(gpu) = gpu_support::gpu() else { return };
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let characters = 45;
    let walk = demo.clip_index(WALK).unwrap() as u32;
    let samples: Vec<ClipSample> = (0..characters).map(|c| ClipSample::new(walk, 0.021 * c as f32, 1.0)).collect();
    let ranges: Vec<std::ops::Range<u32>> = (0..characters as u32).map(|c| c..c + 1).collect();
    for layout in [OutputLayout::Mat4, OutputLayout::Affine3x4] {
        let per_joint = layout.floats_per_joint();
        let options = GpuCrowdOptions {
            layout,
            max_chunk_characters: Some(8),
            // Two chunks a buffer: the output spread over three buffers.
            max_output_buffer_bytes: Some((16 * joints * per_joint * 4) as u64),
            ..GpuCrowdOptions::default()
        };
        let mut crowd = GpuCrowd::new(&gpu.device, &gpu.queue, &demo.rig, &demo.clips, options).unwrap();
        crowd.set_samples(&samples, &ranges).unwrap();
        assert!(crowd.output_buffers().len() > 1, "the output in several buffers");
        let whole = gpu_support::encode_and_read(&gpu.device, &gpu.queue, &crowd);
        let listed = [joints - 1, 3, 7, 3];
        let got = crowd.read_joints_blocking(&listed).unwrap();
        let expected: Vec<f32> = whole
            .chunks_exact(joints * per_joint)
            .flat_map(|character| listed.iter().flat_map(move |&j| &character[j * per_joint..(j + 1) * per_joint]))
            .copied()
            .collect();
        assert_eq!(got.len(), characters * listed.len() * per_joint);
        assert_eq!(got, expected, "{layout:?}: the listed rows");
        assert!(crowd.read_joints_blocking(&[]).unwrap().is_empty());
        assert!(matches!(
            crowd.read_joints_blocking(&[0, joints]),
            Err(GpuError::JointOutOfRange { joint, num_joints }) if joint == joints && num_joints == joints
        ));
    }
}
