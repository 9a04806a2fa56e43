//! A procedural 64-joint rig with two looping clips, for GPU benches and the GPU bench
//! example: the shape of a game character (chains with branches) without needing asset files.

#![allow(dead_code)]

use glam::{Quat, Vec3};
use throng::eval::frame::{LayerBlend, LayerSetup, LayerSpace};
use throng::eval::layers::{Mask, MaskEntry};
use throng::{Clip, Rig, Transform};

/// Joints of the bench rig, the reference size.
pub const NUM_JOINTS: usize = 64;

/// A 64-joint rig: chains (parent `j - 1`) branching every fourth joint (parent `j / 2`),
/// 5–10 cm bones.
pub fn rig() -> Rig {
    let parents = (0..NUM_JOINTS).map(|j| if j == 0 { None } else if j % 4 == 0 { Some(j / 2) } else { Some(j - 1) }).collect();
    let rest = (0..NUM_JOINTS)
        .map(|j| Transform::from_translation(Vec3::new(0.01 * (j % 3) as f32, 0.05 + 0.05 * ((j * 7) % 5) as f32 / 5.0, 0.0)))
        .collect();
    Rig::new((0..NUM_JOINTS).map(|j| format!("joint{j}")).collect(), parents, rest, None).expect("procedural rig is valid")
}

/// A looping clip where every joint swings about its own axis at `cycles` swings per clip.
fn swing(rig: &Rig, name: &str, num_frames: usize, duration_s: f32, cycles: f32) -> Clip {
    let mut poses = Vec::with_capacity(num_frames * rig.num_joints());
    for frame in 0..num_frames {
        let t = frame as f32 / (num_frames - 1) as f32;
        for (j, rest) in rig.rest_pose().iter().enumerate() {
            let axis = Vec3::new((j as f32).sin(), (j as f32 * 0.7).cos(), 0.5).normalize();
            let angle = 0.6 * (std::f32::consts::TAU * (cycles * t + j as f32 / 16.0)).sin();
            poses.push(Transform { rotation: Quat::from_axis_angle(axis, angle), ..*rest });
        }
    }
    Clip::from_poses(name, rig.num_joints(), poses, duration_s, true).expect("procedural clip is valid")
}

/// Two looping clips for [`rig`]: "walk" (1 s, 31 frames) and "run" (0.7 s, 22 frames).
pub fn clips(rig: &Rig) -> Vec<Clip> {
    vec![swing(rig, "walk", 31, 1.0, 1.0), swing(rig, "run", 22, 0.7, 2.0)]
}

/// [`clips`] plus a third, an additive delta ("walk" against the rest pose), for the layered
/// frame's additive layer.
pub fn layered_clips(rig: &Rig) -> Vec<Clip> {
    let mut clips = clips(rig);
    let delta = clips[0].to_additive(rig.rest_pose());
    clips.push(delta);
    clips
}

/// The layered frame's archetype: the base, an override in mesh space masked to the subtree
/// of joint 8 (about half the rig, feathered to half weight at its root), and a whole-body
/// additive layer.
pub fn layers(rig: &Rig) -> Vec<LayerSetup> {
    let entries = [
        MaskEntry { joint: "joint8".into(), weight: 0.5, descendants: false },
        MaskEntry { joint: "joint9".into(), weight: 1.0, descendants: true },
        MaskEntry { joint: "joint16".into(), weight: 1.0, descendants: true },
        MaskEntry { joint: "joint17".into(), weight: 1.0, descendants: true },
    ];
    let mask = Mask::from_entries(rig, &entries).expect("the bench rig has these joints");
    vec![
        LayerSetup::default(),
        LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Mesh, mask: Some(mask) },
        LayerSetup { blend: LayerBlend::Additive, space: LayerSpace::Local, mask: None },
    ]
}
