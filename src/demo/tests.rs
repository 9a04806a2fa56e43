//! Checks that the demo data looks like a body in motion: planted feet, phases, root motion.

use glam::{Mat4, Vec3};

use super::*;
use crate::eval::EvalCrowdJob;
use crate::eval::local_to_model::local_to_model;
use crate::program::OutputLayout;
use crate::rig::Transform;

/// Model-space joint positions of `clip`'s frame `frame`.
fn positions(rig: &Rig, clip: &Clip, frame: usize) -> Vec<Vec3> {
    let mut model = vec![Mat4::IDENTITY; rig.num_joints()];
    local_to_model(rig.parents(), &clip.frame(frame), &mut model);
    model.iter().map(|m| m.w_axis.truncate()).collect()
}

fn joint(rig: &Rig, name: &str) -> usize {
    rig.find_joint(name).unwrap_or_else(|| panic!("no joint {name}"))
}

fn both() -> [DemoCharacter; 2] {
    [DemoCharacter::humanoid(), DemoCharacter::humanoid_64()]
}

#[test]
fn rigs_have_expected_joints_and_unique_names() {
    let [small, large] = both();
    assert!((25..=30).contains(&small.rig.num_joints()), "{} joints", small.rig.num_joints());
    assert_eq!(large.rig.num_joints(), 64);
    for demo in [&small, &large] {
        let names = demo.rig.names();
        assert_eq!(names[0], "root");
        assert_eq!(demo.rig.parent(0), None);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        let rest = demo.rig.rest_model();
        let head = rest[joint(&demo.rig, "head")].w_axis.y;
        assert!((1.5..1.7).contains(&head), "head joint at {head} m");
        assert!(rest[joint(&demo.rig, "hand_l")].w_axis.x > 0.5, "+X is the character's left");
        for name in ["upperarm_r", "foot_l", "toe_r", "clavicle_l", "calf_r", "neck_01"] {
            joint(&demo.rig, name);
        }
    }
    assert!(small.rig.names().iter().all(|n| large.rig.find_joint(n).is_some()));
    assert!(large.rig.find_joint("index_03_r").is_some() && large.rig.find_joint("thumb_01_l").is_some());
}

#[test]
fn rest_pose_skins_to_identity() {
    for demo in both() {
        let joints = demo.rig.num_joints();
        let mut out = vec![0.0; joints * 16];
        let no_samples = vec![0..0u32; 1];
        EvalCrowdJob {
            rig: &demo.rig,
            clips: &demo.clips,
            samples: &[],
            sample_ranges: &no_samples,
            layout: OutputLayout::Mat4,
            output: &mut out,
        }
        .run()
        .unwrap();
        for (j, m) in out.chunks_exact(16).enumerate() {
            assert!(Mat4::from_cols_slice(m).abs_diff_eq(Mat4::IDENTITY, 1e-5), "joint {j}");
        }
    }
}

#[test]
fn mesh_is_well_formed() {
    for demo in both() {
        let mesh = &demo.mesh;
        let n = mesh.num_vertices();
        assert!(n > 0 && mesh.normals.len() == n && mesh.joints.len() == n && mesh.weights.len() == n);
        let triangles = mesh.indices.len() / 3;
        assert_eq!(mesh.indices.len() % 3, 0);
        assert!((200..=2000).contains(&triangles), "{triangles} triangles");
        assert!(mesh.indices.iter().all(|&i| (i as usize) < n));
        for v in 0..n {
            let w = mesh.weights[v];
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6 && w.iter().all(|x| (0.0..=1.0).contains(x)));
            assert!(mesh.joints[v].iter().all(|&j| (j as usize) < demo.rig.num_joints()));
            assert!((Vec3::from(mesh.normals[v]).length() - 1.0).abs() < 1e-5);
            assert!(Vec3::from(mesh.positions[v]).is_finite());
        }
        // Feet reach the ground, the head the character's height.
        let (lo, hi) = mesh.positions.iter().fold((f32::MAX, f32::MIN), |(lo, hi), p| (lo.min(p[1]), hi.max(p[1])));
        assert!(lo.abs() < 1e-4 && (1.75..1.85).contains(&hi), "mesh spans y {lo}..{hi}");
        // Every face's normal points away from its box: outward winding for back-face culling.
        for tri in mesh.indices.chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| Vec3::from(mesh.positions[tri[k] as usize]));
            let face = (b - a).cross(c - a).normalize();
            assert!(face.dot(Vec3::from(mesh.normals[tri[0] as usize])) > 0.99);
        }
    }
}

#[test]
fn clips_are_finite_same_names_and_loop_smoothly() {
    for demo in both() {
        let names: Vec<_> = demo.clips.iter().map(Clip::name).collect();
        assert_eq!(names, CLIP_NAMES);
        for clip in &demo.clips {
            assert_eq!(clip.num_joints(), demo.rig.num_joints());
            assert!(clip.poses().iter().all(Transform::is_finite), "{}", clip.name());
            if !clip.is_looping() {
                continue;
            }
            let (first, last) = (clip.frame(0), clip.frame(clip.num_frames() - 1));
            let speed = DemoCharacter::authored_speed_mps(clip.name()).unwrap();
            for (j, (a, b)) in first.iter().zip(last.iter()).enumerate() {
                let root_shift = if j == 0 { Vec3::Z * speed * clip.duration_s() } else { Vec3::ZERO };
                assert!((b.translation - root_shift).abs_diff_eq(a.translation, 1e-4), "{} joint {j}", clip.name());
                assert!(a.rotation.dot(b.rotation).abs() > 1.0 - 1e-6, "{} joint {j}", clip.name());
            }
        }
    }
}

#[test]
fn joints_move_without_pops() {
    // A pop is a jump in position that the neighbouring frames do not share: a large second
    // difference. At 30 Hz, 0.12 m is about 110 m/s², more than a limb reaches outside an
    // impact, so smooth fast motion (a running swing foot, a jump's arm swing) stays below it.
    let demo = DemoCharacter::humanoid();
    for clip in &demo.clips {
        let frames: Vec<_> = (0..clip.num_frames()).map(|f| positions(&demo.rig, clip, f)).collect();
        let mut worst = (0.0f32, 0, 0);
        for f in 1..frames.len() - 1 {
            for (j, ((next, now), prev)) in frames[f + 1].iter().zip(&frames[f]).zip(&frames[f - 1]).enumerate() {
                let accel = (*next - 2.0 * *now + *prev).length();
                if accel > worst.0 {
                    worst = (accel, f, j);
                }
            }
        }
        assert!(worst.0 < 0.12, "{}: pop of {} m at frame {} joint {}", clip.name(), worst.0, worst.1, worst.2);
    }
}

/// How far `joint_name` strays, in model space with root motion, over one stance window: the
/// frames from the first whose phase (in the cycle of the foot striking at `strike`) enters
/// `from..=to` until it leaves it. Two loops are walked so that a window may wrap.
fn drift(demo: &DemoCharacter, name: &str, joint_name: &str, strike: f32, from: f32, to: f32) -> f32 {
    let clip = demo.clip(name).unwrap();
    let j = joint(&demo.rig, joint_name);
    let frames = clip.num_frames() - 1;
    let stride = DemoCharacter::authored_speed_mps(name).unwrap() * clip.duration_s();
    let own_phase = |k: usize| (k as f32 / frames as f32 - strike).rem_euclid(1.0);
    let window: Vec<usize> = (0..=2 * frames)
        .skip_while(|&k| !(from..from + 1.0 / frames as f32).contains(&own_phase(k)))
        .take_while(|&k| (from..=to).contains(&own_phase(k)))
        .collect();
    assert!(window.len() >= 3, "{name}: stance window of {} frames", window.len());
    let at = |k: usize| positions(&demo.rig, clip, k % frames)[j] + Vec3::Z * (stride * (k / frames) as f32);
    let anchor = at(window[0]);
    window.iter().map(|&k| at(k).distance(anchor)).fold(0.0, f32::max)
}

#[test]
fn planted_feet_do_not_slide() {
    for demo in both() {
        for name in [WALK, RUN] {
            let g = DemoCharacter::gait(name).unwrap();
            for (suffix, strike) in [("l", 0.0), ("r", 0.5)] {
                let ankle = drift(&demo, name, &format!("foot_{suffix}"), strike, 0.0, g.heel_off);
                let ball = drift(&demo, name, &format!("toe_{suffix}"), strike, 0.0, g.duty_factor);
                assert!(ankle < 0.01, "{name} foot_{suffix} slides {ankle} m while flat");
                assert!(ball < 0.01, "{name} toe_{suffix} slides {ball} m during stance");
            }
        }
    }
}

#[test]
fn gait_phases_and_root_motion() {
    let demo = DemoCharacter::humanoid();
    let (foot_l, foot_r, root) = (joint(&demo.rig, "foot_l"), joint(&demo.rig, "foot_r"), 0);
    for name in [WALK, RUN] {
        let clip = demo.clip(name).unwrap();
        let g = DemoCharacter::gait(name).unwrap();
        assert!((clip.duration_s() - g.cycle_s).abs() < 1e-6);
        let last = clip.num_frames() - 1;
        let start = positions(&demo.rig, clip, 0);
        let half = positions(&demo.rig, clip, last / 2);
        let end = positions(&demo.rig, clip, last);
        let expected = g.speed_mps * clip.duration_s();
        let travelled = end[root].z - start[root].z;
        assert!((travelled - expected).abs() < 0.02 * expected, "{name}: root travels {travelled} m");
        assert!(start[root].y.abs() < 1e-6 && end[root].x.abs() < 1e-6, "root stays on the ground line");
        // Left heel strike at phase 0: left foot flat on the ground, ahead of the body, and lower
        // than the right; mirrored at 0.5.
        for (pose, down, up) in [(&start, foot_l, foot_r), (&half, foot_r, foot_l)] {
            assert!((pose[down].y - 0.08).abs() < 0.005, "{name}: planted ankle at {} m", pose[down].y);
            assert!(pose[down].y < pose[up].y - 0.01, "{name}: planted foot is not the lower one");
            assert!(pose[down].z > pose[root].z + 0.1, "{name}: the striking foot is ahead");
        }
    }
    // Running has flight: some frame with both feet well off the ground; walking never does.
    for (name, airborne) in [(WALK, false), (RUN, true)] {
        let clip = demo.clip(name).unwrap();
        let any_flight = (0..clip.num_frames()).any(|f| {
            let p = positions(&demo.rig, clip, f);
            p[foot_l].y > 0.1
                && p[foot_r].y > 0.1
                && p[joint(&demo.rig, "toe_l")].y > 0.04
                && p[joint(&demo.rig, "toe_r")].y > 0.04
        });
        assert_eq!(any_flight, airborne, "{name}");
    }
}

#[test]
fn arms_swing_opposite_legs_and_run_leans() {
    let demo = DemoCharacter::humanoid();
    for name in [WALK, RUN] {
        let clip = demo.clip(name).unwrap();
        let p = positions(&demo.rig, clip, 0);
        let hand = |s: &str| p[joint(&demo.rig, &format!("hand_{s}"))].z - p[0].z;
        assert!(hand("r") > hand("l") + 0.1, "{name}: right arm forward as the left leg is");
    }
    let lean = |name: &str| {
        let p = positions(&demo.rig, demo.clip(name).unwrap(), 0);
        let spine = p[joint(&demo.rig, "neck_01")] - p[joint(&demo.rig, "pelvis")];
        spine.z / spine.y
    };
    assert!(lean(RUN) > lean(WALK) + 0.1, "run leans forward: {} vs {}", lean(RUN), lean(WALK));
}

#[test]
fn jump_is_a_one_shot_that_leaves_the_ground() {
    let demo = DemoCharacter::humanoid();
    let clip = demo.clip(JUMP).unwrap();
    assert!(!clip.is_looping());
    assert!((0.8..=1.2).contains(&clip.duration_s()));
    let pelvis = joint(&demo.rig, "pelvis");
    let foot = joint(&demo.rig, "foot_l");
    let frames: Vec<_> = (0..clip.num_frames()).map(|f| positions(&demo.rig, clip, f)).collect();
    let start = &frames[0];
    let (apex, top) = frames.iter().enumerate().max_by(|a, b| a.1[pelvis].y.total_cmp(&b.1[pelvis].y)).unwrap();
    let middle = clip.num_frames() / 3..2 * clip.num_frames() / 3;
    assert!(middle.contains(&apex), "pelvis highest at frame {apex}, not in the middle");
    assert!(top[pelvis].y > start[pelvis].y + 0.1, "pelvis rises in the air");
    assert!(top[foot].y > 0.2, "feet leave the ground");
    assert!(frames[..apex].iter().any(|p| p[pelvis].y < start[pelvis].y - 0.1), "crouches before take-off");
    let end = frames.last().unwrap();
    assert!((end[foot].y - 0.08).abs() < 0.005 && (end[pelvis].y - start[pelvis].y).abs() < 0.01, "lands and stands");
    assert_eq!(DemoCharacter::authored_speed_mps(JUMP), Some(0.0));
}

#[test]
fn wave_raises_the_right_hand_above_the_head() {
    let demo = DemoCharacter::humanoid();
    let clip = demo.clip(WAVE).unwrap();
    let (hand_r, hand_l, head) = (joint(&demo.rig, "hand_r"), joint(&demo.rig, "hand_l"), joint(&demo.rig, "head"));
    let mut xs = Vec::new();
    for f in 0..clip.num_frames() {
        let p = positions(&demo.rig, clip, f);
        assert!(p[hand_r].y > p[head].y + 0.15, "frame {f}: right hand at {} m", p[hand_r].y);
        assert!(p[hand_l].y < p[head].y - 0.5, "the left arm stays down");
        xs.push(p[hand_r].x);
    }
    let (lo, hi) = xs.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(hi - lo > 0.1, "the hand waves side to side: {lo}..{hi}");
}

#[test]
fn lean_is_a_constant_additive_delta_over_idle() {
    let demo = DemoCharacter::humanoid();
    let (idle, lean) = (demo.clip(IDLE).unwrap(), demo.clip(LEAN).unwrap());
    assert_eq!(idle.num_frames(), lean.num_frames());
    let first: Vec<_> =
        idle.frame(0).iter().zip(lean.frame(0).iter()).map(|(i, l)| i.rotation.inverse() * l.rotation).collect();
    for f in 0..idle.num_frames() {
        for (j, (i, l)) in idle.frame(f).iter().zip(lean.frame(f).iter()).enumerate() {
            let delta = i.rotation.inverse() * l.rotation;
            assert!(delta.dot(first[j]).abs() > 1.0 - 1e-5, "frame {f} joint {j}");
        }
    }
    let p = positions(&demo.rig, lean, 0);
    let q = positions(&demo.rig, idle, 0);
    let head = joint(&demo.rig, "head");
    assert!(p[head].x - q[head].x > 0.1, "leans to the left (+X) by {} m", p[head].x - q[head].x);
    let foot = joint(&demo.rig, "foot_l");
    assert!(p[foot].distance(q[foot]) < 1e-5, "legs are untouched");
}

#[test]
fn unknown_names() {
    let demo = DemoCharacter::humanoid();
    assert_eq!(demo.clip_index("moonwalk"), None);
    assert!(demo.clip("moonwalk").is_none());
    assert_eq!(DemoCharacter::authored_speed_mps("moonwalk"), None);
    assert_eq!(DemoCharacter::authored_speed_mps(WALK), Some(1.5));
    assert_eq!(DemoCharacter::authored_speed_mps(RUN), Some(4.0));
    assert_eq!(demo.clip_index(RUN), Some(2));
}

#[test]
fn feet_never_sink_into_the_ground() {
    for demo in both() {
        for clip in &demo.clips {
            for f in 0..clip.num_frames() {
                let p = positions(&demo.rig, clip, f);
                for s in ["l", "r"] {
                    let (ankle, toe) =
                        (p[joint(&demo.rig, &format!("foot_{s}"))].y, p[joint(&demo.rig, &format!("toe_{s}"))].y);
                    assert!(
                        ankle > 0.079 && toe > 0.019,
                        "{} frame {f}: {s} ankle {ankle} m, toe {toe} m",
                        clip.name()
                    );
                }
            }
        }
    }
}
