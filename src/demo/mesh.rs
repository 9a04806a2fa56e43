//! The demo mesh: one box per bone in the bind (T-)pose, each bound rigidly to its joint.
//!
//! Rigid boxes that overlap a little at the joints hide the gaps a bend opens without any
//! blending, and flat faces make the pose easy to read in the viewer.

use glam::Vec3;

use super::rig::{ANKLE_HEIGHT_M, Side, Skeleton, TOE_OFFSET};
use crate::mesh::SkinnedMesh;

/// A box spanning `from`..`to` (model space, bind pose), grown by `pad` on each side.
struct Part {
    joint: usize,
    from: Vec3,
    to: Vec3,
    pad: Vec3,
}

/// Half-thickness of torso, limb and finger boxes across the bone, metres.
const TORSO_PAD: Vec3 = Vec3::new(0.16, 0.01, 0.10);
const NECK_PAD: Vec3 = Vec3::new(0.05, 0.01, 0.05);
const UPPER_ARM_PAD: Vec3 = Vec3::new(0.01, 0.055, 0.055);
const FOREARM_PAD: Vec3 = Vec3::new(0.01, 0.045, 0.045);
const HAND_PAD: Vec3 = Vec3::new(0.0, 0.02, 0.045);
const FINGER_PAD: Vec3 = Vec3::new(0.004, 0.009, 0.009);
const THIGH_PAD: Vec3 = Vec3::new(0.07, 0.01, 0.07);
const CALF_PAD: Vec3 = Vec3::new(0.055, 0.01, 0.055);
/// Head box: above the head joint, slightly forward of it.
const HEAD_SIZE: Vec3 = Vec3::new(0.18, 0.22, 0.20);
/// Hand length beyond the wrist without fingers, and the palm's length with them, metres.
const HAND_LENGTH_M: f32 = 0.17;
const PALM_LENGTH_M: f32 = 0.09;
/// Fingertip beyond the last phalanx joint, metres.
const FINGERTIP_M: f32 = 0.02;
/// Heel behind the ankle and foot half-width, metres.
const HEEL_BACK_M: f32 = 0.06;
const FOOT_HALF_WIDTH_M: f32 = 0.05;
/// Toe box length beyond the ball of the foot, metres.
const TOE_LENGTH_M: f32 = 0.07;

/// Builds the mesh for `sk`'s rig.
pub(super) fn build(sk: &Skeleton) -> SkinnedMesh {
    let mut mesh = SkinnedMesh::default();
    for part in parts(sk) {
        add_box(&mut mesh, &part);
    }
    mesh
}

fn parts(sk: &Skeleton) -> Vec<Part> {
    let model: Vec<Vec3> = sk.rig.rest_model().iter().map(|m| m.w_axis.truncate()).collect();
    let bone = |joint: usize, child: usize, pad: Vec3| Part { joint, from: model[joint], to: model[child], pad };
    let mut parts = vec![Part {
        joint: sk.pelvis,
        from: model[sk.pelvis] - Vec3::Y * 0.08,
        to: model[sk.spine[0]],
        pad: TORSO_PAD,
    }];
    let mut torso = sk.spine.to_vec();
    torso.push(sk.neck[0]);
    parts.extend(torso.windows(2).map(|w| bone(w[0], w[1], TORSO_PAD)));
    parts.push(bone(sk.neck[0], sk.neck[1], NECK_PAD));
    parts.push(bone(sk.neck[1], sk.head, NECK_PAD));
    let head = model[sk.head];
    parts.push(Part {
        joint: sk.head,
        from: head + Vec3::new(-0.5 * HEAD_SIZE.x, 0.0, -0.45 * HEAD_SIZE.z),
        to: head + Vec3::new(0.5 * HEAD_SIZE.x, HEAD_SIZE.y, 0.55 * HEAD_SIZE.z),
        pad: Vec3::ZERO,
    });
    for side in &sk.sides {
        side_parts(side, &model, &mut parts);
    }
    parts
}

/// Arm, hand, fingers, leg and foot of one side.
fn side_parts(side: &Side, model: &[Vec3], parts: &mut Vec<Part>) {
    let bone = |joint: usize, child: usize, pad: Vec3| Part { joint, from: model[joint], to: model[child], pad };
    let out = |joint: usize, len: f32, pad: Vec3| Part {
        joint,
        from: model[joint],
        to: model[joint] + Vec3::X * (side.sign * len),
        pad,
    };
    parts.push(bone(side.clavicle, side.upperarm, NECK_PAD));
    parts.push(bone(side.upperarm, side.lowerarm, UPPER_ARM_PAD));
    parts.push(bone(side.lowerarm, side.hand, FOREARM_PAD));
    let hand_len = if side.fingers.is_empty() { HAND_LENGTH_M } else { PALM_LENGTH_M };
    parts.push(out(side.hand, hand_len, HAND_PAD));
    for chain in &side.fingers {
        // The metacarpals sit inside the palm; only the phalanges get boxes.
        let phalanges = if chain.len() == 4 { &chain[1..] } else { &chain[..] };
        parts.extend(phalanges.windows(2).map(|w| bone(w[0], w[1], FINGER_PAD)));
        if let Some(&tip) = phalanges.last() {
            let dir = (model[tip] - model[phalanges[phalanges.len() - 2]]).normalize_or(Vec3::X * side.sign);
            parts.push(Part { joint: tip, from: model[tip], to: model[tip] + dir * FINGERTIP_M, pad: FINGER_PAD });
        }
    }
    parts.push(bone(side.thigh, side.calf, THIGH_PAD));
    parts.push(bone(side.calf, side.foot, CALF_PAD));
    let ankle = model[side.foot];
    let ground = Vec3::new(ankle.x, 0.0, ankle.z);
    let half_width = Vec3::X * FOOT_HALF_WIDTH_M;
    parts.push(Part {
        joint: side.foot,
        from: ground - Vec3::Z * HEEL_BACK_M - half_width,
        to: ground + Vec3::new(0.0, ANKLE_HEIGHT_M + 0.02, TOE_OFFSET.z) + half_width,
        pad: Vec3::ZERO,
    });
    let ball = ground + Vec3::Z * TOE_OFFSET.z;
    parts.push(Part {
        joint: side.toe,
        from: ball - half_width,
        to: ball + Vec3::new(0.0, 0.045, TOE_LENGTH_M) + half_width,
        pad: Vec3::ZERO,
    });
}

/// Appends an axis-aligned box (four vertices and a flat normal per face), counter-clockwise
/// seen from outside, every vertex bound with weight one to the part's joint.
fn add_box(mesh: &mut SkinnedMesh, part: &Part) {
    let lo = part.from.min(part.to) - part.pad;
    let hi = part.from.max(part.to) + part.pad;
    let (center, half) = ((lo + hi) * 0.5, (hi - lo) * 0.5);
    let joint = part.joint as u16;
    for axis in 0..3 {
        for sign in [-1.0f32, 1.0] {
            let normal = Vec3::AXES[axis] * sign;
            // `u × v = normal` makes the quad's corner order counter-clockwise about `normal`.
            let (mut u, mut v) = (Vec3::AXES[(axis + 1) % 3], Vec3::AXES[(axis + 2) % 3]);
            if sign < 0.0 {
                std::mem::swap(&mut u, &mut v);
            }
            let base = mesh.positions.len() as u32;
            for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                let p = center + (normal + u * a + v * b) * half;
                mesh.positions.push(p.to_array());
                mesh.normals.push(normal.to_array());
                mesh.joints.push([joint, 0, 0, 0]);
                mesh.weights.push([1.0, 0.0, 0.0, 0.0]);
            }
            mesh.indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
}
