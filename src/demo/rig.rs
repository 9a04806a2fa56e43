//! The demo skeletons: a 26-joint humanoid and the same with fingers (64 joints).
//!
//! Every rest rotation is the identity and the rest pose is a T-pose, so each joint's local axes
//! are the model axes at rest: arms lie along ±X, legs and spine along Y, feet along +Z. That
//! keeps the procedural clips readable (a swing is a rotation about X, an elbow bend one about
//! Y) and lets the mesh be built from axis-aligned boxes.

use glam::Vec3;

use crate::rig::{Rig, Transform};

/// Height of the pelvis joint above the ground at rest, metres.
pub(super) const PELVIS_HEIGHT_M: f32 = 0.95;
/// Pelvis height of the standing poses (idle, the jump's start and end), metres: a little
/// below the rest height so that the knees are soft.
pub(super) const STAND_PELVIS_HEIGHT_M: f32 = 0.945;
/// Hip joint relative to the pelvis, left side (+X is the character's left).
const HIP_OFFSET: Vec3 = Vec3::new(0.10, -0.05, 0.0);
/// Hip to knee, metres.
const THIGH_LENGTH_M: f32 = 0.42;
/// Knee to ankle, metres. With the thigh this puts the ankle [`ANKLE_HEIGHT_M`] above ground.
const CALF_LENGTH_M: f32 = 0.40;
/// Height of the ankle (the `foot_*` joint) above the ground when the foot is flat, metres.
pub(super) const ANKLE_HEIGHT_M: f32 = 0.08;
/// Ball of the foot (the `toe_*` joint) relative to the ankle.
pub(super) const TOE_OFFSET: Vec3 = Vec3::new(0.0, -0.06, 0.14);
/// Spine joints above the pelvis, each relative to the one below, metres.
const SPINE_STEPS_M: [f32; 5] = [0.07, 0.08, 0.08, 0.08, 0.08];
/// Neck joints relative to the top of the spine, then to each other, metres.
const NECK_STEPS_M: [f32; 2] = [0.12, 0.06];
/// Head joint above the upper neck joint, metres; the head reaches 0.22 m above it (1.80 m).
const HEAD_STEP_M: f32 = 0.06;
/// Clavicle relative to the top spine joint, left side.
const CLAVICLE_OFFSET: Vec3 = Vec3::new(0.03, 0.08, 0.0);
/// Shoulder, elbow and wrist along the arm (+X for the left arm in the T-pose), metres.
const ARM_STEPS_M: [f32; 3] = [0.14, 0.28, 0.26];
/// Where the index, middle, ring and little fingers' metacarpals start on the palm (Z, metres).
const FINGER_ROWS_M: [f32; 4] = [0.03, 0.01, -0.01, -0.03];
/// Metacarpal and the three phalanges of a finger, metres along the arm's axis.
const FINGER_STEPS_M: [f32; 4] = [0.08, 0.045, 0.03, 0.025];
/// Thumb joints, each relative to the one before (left hand); the first from the wrist.
const THUMB_STEPS: [Vec3; 3] =
    [Vec3::new(0.02, -0.01, 0.035), Vec3::new(0.03, 0.0, 0.02), Vec3::new(0.025, 0.0, 0.015)];
/// Finger names, thumb excluded, in palm order.
const FINGER_NAMES: [&str; 4] = ["index", "middle", "ring", "pinky"];

/// Whether the rig has finger joints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fingers {
    /// 26 joints: hands end at the wrist.
    None,
    /// 64 joints: a thumb (three joints) and four fingers (metacarpal and three phalanges).
    Full,
}

/// One side's joint indices. Index 0 of [`Skeleton::sides`] is the left side.
#[derive(Clone, Debug)]
pub(super) struct Side {
    /// +1 for the left side (+X), -1 for the right: mirrors X offsets and rotations about Y, Z.
    pub sign: f32,
    pub clavicle: usize,
    pub upperarm: usize,
    pub lowerarm: usize,
    pub hand: usize,
    pub thigh: usize,
    pub calf: usize,
    pub foot: usize,
    pub toe: usize,
    /// Finger chains, thumb first; empty on the 26-joint rig.
    pub fingers: Vec<Vec<usize>>,
}

/// A demo rig with the joint indices the clip and mesh generators need.
#[derive(Clone, Debug)]
pub(super) struct Skeleton {
    pub rig: Rig,
    pub root: usize,
    pub pelvis: usize,
    pub spine: [usize; 5],
    pub neck: [usize; 2],
    pub head: usize,
    /// Left, then right.
    pub sides: [Side; 2],
    pub thigh_length_m: f32,
    pub calf_length_m: f32,
}

impl Skeleton {
    /// Builds the humanoid, with or without fingers.
    pub fn new(fingers: Fingers) -> Self {
        let mut b = Builder::default();
        let root = b.add("root", None, Vec3::ZERO);
        let pelvis = b.add("pelvis", Some(root), Vec3::Y * PELVIS_HEIGHT_M);
        let mut parent = pelvis;
        let spine = SPINE_STEPS_M.map(|step| {
            parent = b.add(format!("spine_{:02}", b.len() - 1), Some(parent), Vec3::Y * step);
            parent
        });
        let neck_01 = b.add("neck_01", Some(spine[4]), Vec3::Y * NECK_STEPS_M[0]);
        let neck_02 = b.add("neck_02", Some(neck_01), Vec3::Y * NECK_STEPS_M[1]);
        let head = b.add("head", Some(neck_02), Vec3::Y * HEAD_STEP_M);
        let sides = [("l", 1.0), ("r", -1.0)].map(|(suffix, sign)| b.add_side(suffix, sign, spine[4], pelvis, fingers));
        let rig = match Rig::new(b.names, b.parents, b.rest, None) {
            Ok(rig) => rig,
            Err(e) => unreachable!("the built-in demo rig is valid by construction: {e}"),
        };
        Self {
            rig,
            root,
            pelvis,
            spine,
            neck: [neck_01, neck_02],
            head,
            sides,
            thigh_length_m: THIGH_LENGTH_M,
            calf_length_m: CALF_LENGTH_M,
        }
    }

    /// The hip joint relative to the pelvis joint, in the pelvis's frame.
    pub fn hip_offset(&self, side: &Side) -> Vec3 {
        self.rig.rest_pose()[side.thigh].translation
    }
}

/// Collects joints parent-first.
#[derive(Default)]
struct Builder {
    names: Vec<String>,
    parents: Vec<Option<usize>>,
    rest: Vec<Transform>,
}

impl Builder {
    fn len(&self) -> usize {
        self.names.len()
    }

    fn add(&mut self, name: impl Into<String>, parent: Option<usize>, offset: Vec3) -> usize {
        self.names.push(name.into());
        self.parents.push(parent);
        self.rest.push(Transform::from_translation(offset));
        self.names.len() - 1
    }

    /// Adds one arm, hand and leg; `sign` mirrors the left side's X offsets.
    fn add_side(&mut self, suffix: &str, sign: f32, chest: usize, pelvis: usize, fingers: Fingers) -> Side {
        let mirror = |v: Vec3| Vec3::new(v.x * sign, v.y, v.z);
        let along_arm = |len: f32| Vec3::X * (len * sign);
        let clavicle = self.add(format!("clavicle_{suffix}"), Some(chest), mirror(CLAVICLE_OFFSET));
        let upperarm = self.add(format!("upperarm_{suffix}"), Some(clavicle), along_arm(ARM_STEPS_M[0]));
        let lowerarm = self.add(format!("lowerarm_{suffix}"), Some(upperarm), along_arm(ARM_STEPS_M[1]));
        let hand = self.add(format!("hand_{suffix}"), Some(lowerarm), along_arm(ARM_STEPS_M[2]));
        let fingers = match fingers {
            Fingers::None => Vec::new(),
            Fingers::Full => {
                let mut chains =
                    vec![self.add_chain(&format!("thumb_{{}}_{suffix}"), hand, THUMB_STEPS.map(mirror).to_vec())];
                for (finger, row_z) in FINGER_NAMES.iter().zip(FINGER_ROWS_M) {
                    let mut steps: Vec<Vec3> = FINGER_STEPS_M.iter().map(|&len| along_arm(len)).collect();
                    steps[0] += Vec3::new(0.01 * sign, 0.0, row_z);
                    let chain = self.add_chain(&format!("{finger}_{{}}_{suffix}"), hand, steps);
                    chains.push(chain);
                }
                chains
            }
        };
        let thigh = self.add(format!("thigh_{suffix}"), Some(pelvis), mirror(HIP_OFFSET));
        let calf = self.add(format!("calf_{suffix}"), Some(thigh), Vec3::NEG_Y * THIGH_LENGTH_M);
        let foot = self.add(format!("foot_{suffix}"), Some(calf), Vec3::NEG_Y * CALF_LENGTH_M);
        let toe = self.add(format!("toe_{suffix}"), Some(foot), TOE_OFFSET);
        Side { sign, clavicle, upperarm, lowerarm, hand, thigh, calf, foot, toe, fingers }
    }

    /// Adds a chain under `parent`; `pattern`'s `{}` becomes `metacarpal`, `01`, `02`, `03` for
    /// four-joint fingers and `01`..`03` for the thumb.
    fn add_chain(&mut self, pattern: &str, parent: usize, steps: Vec<Vec3>) -> Vec<usize> {
        let labels: &[&str] = if steps.len() == 4 { &["metacarpal", "01", "02", "03"] } else { &["01", "02", "03"] };
        let mut parent = parent;
        steps
            .into_iter()
            .zip(labels)
            .map(|(step, label)| {
                parent = self.add(pattern.replace("{}", label), Some(parent), step);
                parent
            })
            .collect()
    }
}
