//! The built-in demo character: a humanoid rig, a low-poly skinned mesh and procedural clips,
//! embedded so that examples, benchmarks and metrics need nothing downloaded.
//!
//! # Rig
//! Y up, +Z forward, +X the character's left, metres, about 1.80 m tall, T-pose rest with
//! identity rest rotations. Joint 0, `root`, sits on the ground and carries root motion; then
//! `pelvis`, `spine_01`..`spine_05`, `neck_01`, `neck_02`, `head`, and per side (`_l`, `_r`)
//! `clavicle`, `upperarm`, `lowerarm`, `hand`, `thigh`, `calf`, `foot` (the ankle, 0.08 m above
//! the ground when flat) and `toe` (the ball of the foot). [`DemoCharacter::humanoid`] has these
//! 26 joints; [`DemoCharacter::humanoid_64`] adds, under each hand, `thumb_01`..`03` and
//! `index`, `middle`, `ring`, `pinky` with `_metacarpal`, `_01`..`_03` (64 joints).
//!
//! # Clips
//! Sampled at [`SAMPLE_RATE_HZ`]; both rigs have the same clips under the same names, in the
//! order of [`CLIP_NAMES`].
//!
//! | name    | length | loops | what                                                          |
//! |---------|--------|-------|---------------------------------------------------------------|
//! | `idle`  | 3 s    | yes   | breathing, a slight sway                                       |
//! | `walk`  | 1 s    | yes   | 1.5 m/s; left heel strike at phase 0, right at 0.5             |
//! | `run`   | 0.67 s | yes   | 4 m/s, forward lean, flight phases; phased as `walk`           |
//! | `jump`  | 1 s    | no    | crouch, take-off at 0.42 s, flight, landing at 0.76 s, recover |
//! | `wave`  | 3 s    | yes   | `idle` with the right hand waving above the head               |
//! | `lean`  | 3 s    | yes   | `idle` with the spine rolled to the left (see below)           |
//!
//! **Root motion**: in `walk` and `run` the `root` joint's translation is `(0, 0, speed × t)`,
//! so the clip itself moves the character; a loop jumps back by one stride, which an engine
//! extracting root motion adds to the character's position. Every other clip keeps the root
//! at the origin. With the root included, a planted foot does not move in model space: the
//! ankle is fixed from heel strike to heel-off, then the ball of the foot (`toe_*`) until
//! toe-off ([`Gait`]).
//!
//! **Additive `lean`**: `lean` has `idle`'s length and frames, the five spine joints each
//! rotated a further 0.07 rad about Z. `inverse(idle frame) * lean frame` is therefore that
//! constant roll at every frame, and applying it over any pose leans the trunk to the left.

mod clips;
mod graph;
mod mesh;
mod pose;
mod rig;
#[cfg(test)]
mod tests;

pub use graph::{DemoArchetype, DemoBindError, LOCOMOTION_GRAPH};

use crate::program::{FootSetup, GroundSetup, LookAtChain, ProceduralSetup, TwoBoneChain};
use crate::{clip::Clip, mesh::SkinnedMesh, rig::Rig};

/// The humanoid's ankle height above its sole with the foot flat, metres.
pub const ANKLE_HEIGHT_M: f32 = 0.08;

/// Clip names.
pub const IDLE: &str = "idle";
/// Walk cycle, see [`DemoCharacter::gait`].
pub const WALK: &str = "walk";
/// Run cycle, see [`DemoCharacter::gait`].
pub const RUN: &str = "run";
/// One-shot vertical jump.
pub const JUMP: &str = "jump";
/// Right-hand wave over an idle body.
pub const WAVE: &str = "wave";
/// Idle with the spine leaned left; an additive source over [`IDLE`].
pub const LEAN: &str = "lean";
/// Every clip name, in the order of [`DemoCharacter::clips`].
pub const CLIP_NAMES: [&str; 6] = [IDLE, WALK, RUN, JUMP, WAVE, LEAN];
/// Rate the clips are sampled at, frames per second.
pub const SAMPLE_RATE_HZ: f32 = 30.0;

/// Timing of a locomotion cycle, as authored: what a foot-slide metric or a phase-synced blend
/// needs to know. Phases are fractions of the cycle in [0, 1); the left foot's heel strikes at
/// 0 and the right's at 0.5, and each foot follows the same timeline from its own strike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gait {
    /// Root speed along +Z, metres per second.
    pub speed_mps: f32,
    /// Length of one cycle (two steps), seconds; the clip's duration.
    pub cycle_s: f32,
    /// Fraction of the cycle a foot is on the ground (heel strike to toe-off). Above 0.5 both
    /// feet are down at times (walking); below, both are up at times (running).
    pub duty_factor: f32,
    /// Fraction of the cycle after its strike at which a foot's heel lifts: until then the ankle
    /// is fixed, from then to `duty_factor` the ball of the foot is.
    pub heel_off: f32,
}

/// The demo character: rig, clips for it, and a mesh skinned to it.
#[derive(Clone, Debug)]
pub struct DemoCharacter {
    /// The skeleton, joint 0 the ground-level `root`.
    pub rig: Rig,
    /// The clips, in the order of [`CLIP_NAMES`].
    pub clips: Vec<Clip>,
    /// Boxes per bone in the bind pose, rigidly skinned.
    pub mesh: SkinnedMesh,
}

impl DemoCharacter {
    /// The 26-joint humanoid.
    #[must_use]
    pub fn humanoid() -> Self {
        Self::build(rig::Fingers::None)
    }

    /// The 64-joint humanoid: the same body with fingers, for benchmarks at a typical game rig's
    /// size. Same clips, with the fingers relaxed.
    #[must_use]
    pub fn humanoid_64() -> Self {
        Self::build(rig::Fingers::Full)
    }

    fn build(fingers: rig::Fingers) -> Self {
        let sk = rig::Skeleton::new(fingers);
        let clips = clips::build_all(&sk);
        let mesh = mesh::build(&sk);
        Self { rig: sk.rig, clips, mesh }
    }

    /// The index of the clip called `name` in [`DemoCharacter::clips`].
    #[must_use]
    pub fn clip_index(&self, name: &str) -> Option<usize> {
        self.clips.iter().position(|c| c.name() == name)
    }

    /// The clip called `name`.
    #[must_use]
    pub fn clip(&self, name: &str) -> Option<&Clip> {
        self.clips.iter().find(|c| c.name() == name)
    }

    /// The speed the clip's root motion carries the character at, metres per second: 1.5 for
    /// `walk`, 4.0 for `run`, 0 for the other clips, `None` for an unknown name.
    #[must_use]
    pub fn authored_speed_mps(name: &str) -> Option<f32> {
        match Self::gait(name) {
            Some(g) => Some(g.speed_mps),
            None => CLIP_NAMES.contains(&name).then_some(0.0),
        }
    }

    /// The humanoid's procedural setup, to check against [`DemoCharacter::rig`]
    /// (`ProceduralSetup::check`): a look-at chain `neck_01` → `neck_02` → `head` turning the
    /// head's forward axis (+Z) by even shares, each joint at most 0.4 rad (about 70° in all),
    /// and feet on the ground: `pelvis` drops, each leg `thigh` → `calf` → `foot` reaches, the
    /// ankle [`ANKLE_HEIGHT_M`] above the sole, the foot tilting up to 0.4 rad toward the
    /// ground's normal. `None` when the rig lacks one of those joints (another rig put in
    /// [`DemoCharacter::rig`]).
    ///
    /// ```
    /// use throng::demo::DemoCharacter;
    ///
    /// let demo = DemoCharacter::humanoid();
    /// let setup = demo.procedural_setup().expect("the humanoid's joints").check(&demo.rig)?;
    /// assert_eq!(setup.num_parts(), 3); // one look-at chain, two feet
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn procedural_setup(&self) -> Option<ProceduralSetup> {
        let joint = |name: &str| self.rig.find_joint(name).and_then(|j| u16::try_from(j).ok());
        let mut look = LookAtChain::even(vec![joint("neck_01")?, joint("neck_02")?, joint("head")?], glam::Vec3::Z);
        look.limits_rad = vec![0.4; look.joints.len()];
        let leg = |side: &str| -> Option<FootSetup> {
            let [thigh, calf, foot] = ["thigh", "calf", "foot"].map(|part| joint(&format!("{part}_{side}")));
            Some(FootSetup {
                leg: TwoBoneChain::new(thigh?, calf?, foot?),
                ankle_height_m: ANKLE_HEIGHT_M,
                max_tilt_rad: 0.4,
            })
        };
        Some(ProceduralSetup {
            look_at: vec![look],
            two_bone: Vec::new(),
            ground: Some(GroundSetup { pelvis: joint("pelvis")?, feet: vec![leg("l")?, leg("r")?] }),
        })
    }

    /// Cycle timing of `walk` and `run`; `None` for other names.
    #[must_use]
    pub fn gait(name: &str) -> Option<Gait> {
        match name {
            WALK => Some(clips::WALK_GAIT.gait),
            RUN => Some(clips::RUN_GAIT.gait),
            _ => None,
        }
    }
}
