//! Procedural setup: an archetype's look-at chains, two-bone IK chains and feet, checked once
//! against its rig, and the per-character targets and weights gameplay sets in batches. Read by
//! the procedural stage (`eval::procedural`) after layers and before local-to-model.
//!
//! The stage reads everything in **model space** (the character's own frame, Y up, metres).
//! Targets come in either space: the plain setters take model space, the `*_world` setters
//! take world space together with each character's placement (its root's world transform, as
//! an engine keeps it) and turn them into model space as they are set, so the stage's inputs
//! are the same whichever was used.
//!
//! | part | per archetype (here, [`ProceduralSetup`]) | per character ([`ProceduralTargets`]) |
//! |---|---|---|
//! | look-at | joints first to end, share and angle limit per joint, end joint's forward axis | target point, weight |
//! | two-bone IK | three joints (root, middle, end), soft zone, end joint's orientation rule | target point, pole direction, target rotation, weight |
//! | ground | pelvis, per foot a leg (two-bone chain), ankle height, tilt limit | per foot ground height and normal, weight |
//!
//! A character whose weights are all zero costs the stage one look at its weights.

use glam::{Quat, Vec3};

use crate::rig::{NO_PARENT, Rig, Transform};

/// The most feet a [`GroundSetup`] has (the GPU keeps each foot's goal in registers).
pub const MAX_FEET: usize = 4;

/// Why a procedural setup or a batch of targets was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProceduralError {
    /// A chain names a joint the rig does not have.
    #[error("{chain}: joint {joint} is out of range; the rig has {num_joints} joints")]
    JointOutOfRange {
        /// Which chain ("look_at 0", "two_bone 1", "ground foot 0", "ground pelvis").
        chain: String,
        /// The joint given.
        joint: usize,
        /// Joints in the rig.
        num_joints: usize,
    },
    /// A chain's joints are not each an ancestor of the next (a look-at chain, a two-bone
    /// chain, or the ground's pelvis above a foot's first joint).
    #[error("{chain}: joint {joint} is not an ancestor of joint {next}")]
    NotAChain {
        /// Which chain.
        chain: String,
        /// The joint that should be above.
        joint: usize,
        /// The joint that should be below it.
        next: usize,
    },
    /// A look-at chain has no joints, or its shares or limits are not one per joint.
    #[error("{chain}: {what}")]
    BadChain {
        /// Which chain.
        chain: String,
        /// What is wrong.
        what: String,
    },
    /// A number of the setup is NaN, infinite or outside its range.
    #[error("{chain}: {what} is {value}; {expected}")]
    BadNumber {
        /// Which chain.
        chain: String,
        /// The field.
        what: &'static str,
        /// The value given.
        value: f32,
        /// The range it must lie in.
        expected: &'static str,
    },
    /// A batch's rows and values differ in length.
    #[error("{what}: {rows} rows but {values} values")]
    BatchLength {
        /// The setter.
        what: &'static str,
        /// Rows given.
        rows: usize,
        /// Values given.
        values: usize,
    },
    /// A batch names a chain or foot the setup does not have.
    #[error("{what}: index {index} but the setup has {count}")]
    UnknownChain {
        /// The setter.
        what: &'static str,
        /// The chain or foot given.
        index: usize,
        /// How many the setup has.
        count: usize,
    },
    /// A batch names a row past the crowd, or carries a NaN, an infinity or a weight outside
    /// [0, 1]. Nothing of the batch is written.
    #[error("{what}: entry {entry} (row {row}): {problem}")]
    BadTarget {
        /// The setter.
        what: &'static str,
        /// Index in the batch.
        entry: usize,
        /// The row given.
        row: u32,
        /// What is wrong.
        problem: &'static str,
    },
    /// The targets were made for another setup or crowd size than the frame's.
    #[error(
        "procedural targets for {got_characters} characters of a setup of {got_parts} parts; the frame has {characters} characters and its setup {parts} parts"
    )]
    TargetsMismatch {
        /// Characters the targets hold.
        got_characters: usize,
        /// Chains and feet the targets hold.
        got_parts: usize,
        /// Characters of the frame.
        characters: usize,
        /// Chains and feet of the frame's setup.
        parts: usize,
    },
    /// A chain weight binding names a curve no clip of the table has.
    #[error("chain weight binding {binding}: no clip has a curve named {curve:?}")]
    UnknownCurve {
        /// Index of the binding.
        binding: usize,
        /// The curve's name.
        curve: String,
    },
    /// A chain weight binding's input does not fit the frame: a parameter column of another
    /// length than the crowd, a curve read on a layer the programs do not have.
    #[error("chain weight binding {binding}: {what}")]
    BadBinding {
        /// Index of the binding.
        binding: usize,
        /// What is wrong.
        what: String,
    },
    /// The setup was checked against a rig of another joint count than the frame's.
    #[error("the procedural setup was made for {setup_joints} joints; the rig has {rig_joints}")]
    RigMismatch {
        /// Joints of the rig the setup was checked against.
        setup_joints: usize,
        /// Joints of the frame's rig.
        rig_joints: usize,
    },
}

/// A look-at (aim) chain: from its first joint (e.g. the lowest spine joint) to its end (the
/// head), each joint turns by a share of what is left of the rotation that points the end
/// joint's forward axis at the target.
#[derive(Clone, Debug, PartialEq)]
pub struct LookAtChain {
    /// Joints from first to end, each an ancestor of the next.
    pub joints: Vec<u16>,
    /// Per joint, the fraction in [0, 1] of the remaining angle that joint takes. With the end
    /// joint's share 1, weight 1 and no limit, the forward axis ends pointing at the target.
    pub shares: Vec<f32>,
    /// Per joint, the most it turns, radians, ≥ 0 (`f32::INFINITY` for no limit).
    pub limits_rad: Vec<f32>,
    /// The end joint's forward axis in its own space (normalised when checked; not zero).
    pub forward: Vec3,
}

impl LookAtChain {
    /// A chain over `joints` with equal shares of what is left (the first of four joints takes
    /// ¼, the next ⅓ of the rest, then ½, the end all of it: each turns by about the same
    /// angle) and no limits.
    #[must_use]
    pub fn even(joints: Vec<u16>, forward: Vec3) -> Self {
        let n = joints.len();
        let shares = (0..n).map(|i| 1.0 / (n - i) as f32).collect();
        Self { joints, shares, limits_rad: vec![f32::INFINITY; n], forward }
    }
}

/// What a two-bone chain's end joint does once the chain reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EndRotation {
    /// The end joint keeps its animated model-space orientation (a hand keeps its pose).
    #[default]
    Animated,
    /// The end joint takes the character's target rotation, by the chain's weight.
    Target,
}

/// A two-bone IK chain: root (hip, shoulder), middle (knee, elbow), end (ankle, wrist), each an
/// ancestor of the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoBoneChain {
    /// Root, middle and end joints.
    pub joints: [u16; 3],
    /// The fraction of the chain's full reach, in [0, 1), over which it straightens softly:
    /// a target within `(1 − soft_fraction) × reach` is reached exactly, one beyond is
    /// approached asymptotically, so the knee never snaps straight. 0 for a hard limit.
    pub soft_fraction: f32,
    /// The end joint's orientation.
    pub end: EndRotation,
}

impl TwoBoneChain {
    /// A chain that keeps the end's animated orientation and softens over the last 2 % of
    /// its reach.
    #[must_use]
    pub fn new(root: u16, middle: u16, end: u16) -> Self {
        Self { joints: [root, middle, end], soft_fraction: 0.02, end: EndRotation::Animated }
    }
}

/// One foot of [`GroundSetup`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FootSetup {
    /// The leg: hip, knee, ankle.
    pub leg: TwoBoneChain,
    /// The ankle's height above its sole with the foot flat, metres, ≥ 0.
    pub ankle_height_m: f32,
    /// The most the foot tilts to follow the ground's normal, radians, ≥ 0.
    pub max_tilt_rad: f32,
}

/// Feet on the ground: each foot's ankle moves so that its sole keeps its animated lift above
/// the ground height the caller gives (0 for a planted foot), tilted toward the ground's normal
/// within a limit; the pelvis drops by what the lower foot needs (never rises), so that legs
/// reach down slopes and steps.
#[derive(Clone, Debug, PartialEq)]
pub struct GroundSetup {
    /// The joint that drops (hips or pelvis): an ancestor of every foot's first joint.
    pub pelvis: u16,
    /// The feet.
    pub feet: Vec<FootSetup>,
}

/// An archetype's procedural setup, as authored. [`ProceduralSetup::check`] turns it into a
/// [`ProceduralRig`] for one rig.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProceduralSetup {
    /// Look-at chains, run last (the head turns once the body is placed).
    pub look_at: Vec<LookAtChain>,
    /// Two-bone IK chains (hands, or legs driven by the caller), run after the ground.
    pub two_bone: Vec<TwoBoneChain>,
    /// Feet on the ground, run first.
    pub ground: Option<GroundSetup>,
}

/// A [`ProceduralSetup`] checked against a rig: the only form the evaluators read.
#[derive(Clone, Debug, PartialEq)]
pub struct ProceduralRig {
    num_joints: usize,
    setup: ProceduralSetup,
}

fn is_ancestor(parents: &[u16], above: u16, below: u16) -> bool {
    let mut joint = below;
    while joint != NO_PARENT {
        joint = parents[joint as usize];
        if joint == above {
            return true;
        }
    }
    false
}

fn check_joints(chain: &str, joints: &[u16], parents: &[u16]) -> Result<(), ProceduralError> {
    for &joint in joints {
        if joint as usize >= parents.len() {
            return Err(ProceduralError::JointOutOfRange {
                chain: chain.to_owned(),
                joint: joint as usize,
                num_joints: parents.len(),
            });
        }
    }
    for pair in joints.windows(2) {
        if !is_ancestor(parents, pair[0], pair[1]) {
            return Err(ProceduralError::NotAChain {
                chain: chain.to_owned(),
                joint: pair[0] as usize,
                next: pair[1] as usize,
            });
        }
    }
    Ok(())
}

fn check_number(
    chain: &str,
    what: &'static str,
    value: f32,
    ok: bool,
    expected: &'static str,
) -> Result<(), ProceduralError> {
    if ok { Ok(()) } else { Err(ProceduralError::BadNumber { chain: chain.to_owned(), what, value, expected }) }
}

fn check_two_bone(chain: &str, c: &TwoBoneChain, parents: &[u16]) -> Result<(), ProceduralError> {
    check_joints(chain, &c.joints, parents)?;
    check_number(chain, "soft_fraction", c.soft_fraction, (0.0..1.0).contains(&c.soft_fraction), "in [0, 1)")
}

impl ProceduralSetup {
    /// Checks the setup against `rig`, in this order for each look-at chain, two-bone chain,
    /// then the ground: every joint in range ([`ProceduralError::JointOutOfRange`]); each joint
    /// an ancestor of the next ([`ProceduralError::NotAChain`]; the pelvis above each foot's
    /// first joint); a look-at chain has joints and one share and limit per joint
    /// ([`ProceduralError::BadChain`]); shares in [0, 1], limits ≥ 0 (not NaN), forward axes
    /// finite and not zero, soft fractions in [0, 1), ankle heights and tilt limits finite and
    /// ≥ 0 ([`ProceduralError::BadNumber`]).
    pub fn check(self, rig: &Rig) -> Result<ProceduralRig, ProceduralError> {
        let parents = rig.parents();
        for (i, chain) in self.look_at.iter().enumerate() {
            let name = format!("look_at {i}");
            if chain.joints.is_empty()
                || chain.shares.len() != chain.joints.len()
                || chain.limits_rad.len() != chain.joints.len()
            {
                return Err(ProceduralError::BadChain {
                    chain: name,
                    what: format!(
                        "{} joints, {} shares, {} limits: at least one joint and one share and limit per joint",
                        chain.joints.len(),
                        chain.shares.len(),
                        chain.limits_rad.len()
                    ),
                });
            }
            check_joints(&name, &chain.joints, parents)?;
            for &share in &chain.shares {
                check_number(&name, "share", share, (0.0..=1.0).contains(&share), "in [0, 1]")?;
            }
            for &limit in &chain.limits_rad {
                check_number(&name, "limit_rad", limit, limit >= 0.0, "≥ 0 (INFINITY for none)")?;
            }
            let length = chain.forward.length();
            check_number(&name, "forward length", length, length.is_finite() && length > 1e-6, "finite and not zero")?;
        }
        for (i, chain) in self.two_bone.iter().enumerate() {
            check_two_bone(&format!("two_bone {i}"), chain, parents)?;
        }
        if let Some(ground) = &self.ground {
            check_joints("ground pelvis", &[ground.pelvis], parents)?;
            if ground.feet.len() > MAX_FEET {
                return Err(ProceduralError::BadChain {
                    chain: "ground".into(),
                    what: format!("{} feet; at most {MAX_FEET}", ground.feet.len()),
                });
            }
            for (i, foot) in ground.feet.iter().enumerate() {
                let name = format!("ground foot {i}");
                check_two_bone(&name, &foot.leg, parents)?;
                check_joints(&name, &[ground.pelvis, foot.leg.joints[0]], parents)?;
                let (h, t) = (foot.ankle_height_m, foot.max_tilt_rad);
                check_number(&name, "ankle_height_m", h, h.is_finite() && h >= 0.0, "finite and ≥ 0")?;
                check_number(&name, "max_tilt_rad", t, t.is_finite() && t >= 0.0, "finite and ≥ 0")?;
            }
        }
        let mut setup = self;
        for chain in &mut setup.look_at {
            chain.forward = chain.forward.normalize();
        }
        Ok(ProceduralRig { num_joints: parents.len(), setup })
    }
}

impl ProceduralRig {
    /// Joints of the rig it was checked against.
    #[must_use]
    pub fn num_joints(&self) -> usize {
        self.num_joints
    }

    /// The checked setup (look-at forward axes normalised).
    #[must_use]
    pub fn setup(&self) -> &ProceduralSetup {
        &self.setup
    }

    /// Look-at chains, two-bone chains and feet, in that order: what [`ProceduralTargets`]
    /// holds columns for.
    #[must_use]
    pub fn num_parts(&self) -> usize {
        self.setup.look_at.len() + self.setup.two_bone.len() + self.setup.ground.as_ref().map_or(0, |g| g.feet.len())
    }
}

/// One look-at chain's per-character columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LookAtTargets {
    /// Model-space point the end joint's forward axis turns toward, metres.
    pub target: Vec<Vec3>,
    /// Weight in [0, 1]; 0 leaves the pose as it was, bit for bit.
    pub weight: Vec<f32>,
}

/// One two-bone chain's per-character columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TwoBoneTargets {
    /// Model-space point the end joint reaches, metres.
    pub target: Vec<Vec3>,
    /// Model-space direction the middle joint bends toward (its component across the
    /// root-to-target line counts); zero keeps the animated bend's side.
    pub pole: Vec<Vec3>,
    /// Model-space orientation the end joint takes with [`EndRotation::Target`].
    pub rotation: Vec<Quat>,
    /// Weight in [0, 1]; 0 leaves the pose as it was, bit for bit.
    pub weight: Vec<f32>,
}

/// One foot's per-character ground, as an engine's raycast under the animated foot returns it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FootGround {
    /// Model-space height of the ground under the foot, metres.
    pub height_m: Vec<f32>,
    /// Model-space ground normal (normalised when set; zero means straight up).
    pub normal: Vec<Vec3>,
}

/// Per-character procedural targets and weights for a crowd of one archetype, one entry per
/// row (the rows the evaluators' jobs use), SoA by chain. Every weight starts at 0: nothing
/// moves until gameplay sets a weight.
///
/// ```
/// use glam::{Vec3, Quat};
/// use throng::program::{LookAtChain, ProceduralSetup, ProceduralTargets, TwoBoneChain};
/// use throng::{Rig, Transform};
///
/// // A neck, a head, and a two-bone arm.
/// let rig = Rig::new(
///     ["neck", "head", "shoulder", "elbow", "wrist"].map(String::from).to_vec(),
///     vec![None, Some(0), None, Some(2), Some(3)],
///     vec![
///         Transform::from_translation(Vec3::Y * 1.5),
///         Transform::from_translation(Vec3::Y * 0.1),
///         Transform::from_translation(Vec3::new(0.2, 1.4, 0.0)),
///         Transform::from_translation(Vec3::X * 0.3),
///         Transform::from_translation(Vec3::X * 0.3),
///     ],
///     None,
/// )?;
/// let setup = ProceduralSetup {
///     look_at: vec![LookAtChain::even(vec![0, 1], Vec3::Z)],
///     two_bone: vec![TwoBoneChain::new(2, 3, 4)],
///     ground: None,
/// }
/// .check(&rig)?;
/// let mut targets = ProceduralTargets::new(&setup, 1000);
/// // A thousand heads turn toward the player in one call.
/// let rows: Vec<u32> = (0..1000).collect();
/// targets.set_look_at(0, &rows, &vec![Vec3::new(3.0, 1.6, 4.0); 1000], &vec![1.0; 1000])?;
/// // One character reaches for a door handle, elbow down.
/// targets.set_two_bone(0, &[7], &[Vec3::new(0.6, 1.2, 0.2)], &[Vec3::NEG_Y], &[Quat::IDENTITY], &[1.0])?;
/// assert!(targets.is_active(7));
/// assert_eq!(targets.two_bone()[0].weight[7], 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProceduralTargets {
    num_characters: usize,
    /// Per look-at chain of the setup.
    pub(crate) look_at: Vec<LookAtTargets>,
    /// Per two-bone chain of the setup.
    pub(crate) two_bone: Vec<TwoBoneTargets>,
    /// Per foot of the setup's ground.
    pub(crate) feet: Vec<FootGround>,
    /// The ground's weight per character, in [0, 1].
    pub(crate) ground_weight: Vec<f32>,
}

/// The map from world space into one character's model space: the inverse of its placement
/// (`translation * rotation * scale`, as [`Transform`] composes).
#[derive(Clone, Copy, Debug)]
struct WorldToModel {
    translation: Vec3,
    inverse_rotation: Quat,
    scale: Vec3,
}

impl WorldToModel {
    /// `None` for a placement that is not finite, has a zero rotation or a scale with a
    /// component near zero: it has no inverse.
    fn of(placement: &Transform) -> Option<Self> {
        let usable =
            placement.is_finite() && placement.rotation.length() > 1e-6 && placement.scale.abs().min_element() > 1e-6;
        usable.then(|| Self {
            translation: placement.translation,
            inverse_rotation: placement.rotation.normalize().conjugate(),
            scale: placement.scale,
        })
    }

    fn point(&self, world: Vec3) -> Vec3 {
        (self.inverse_rotation * (world - self.translation)) / self.scale
    }

    /// A direction (a pole): mapped as a difference of points.
    fn direction(&self, world: Vec3) -> Vec3 {
        (self.inverse_rotation * world) / self.scale
    }

    /// A surface normal: mapped by the inverse transpose, which keeps it across the surface
    /// under a non-uniform scale.
    fn normal(&self, world: Vec3) -> Vec3 {
        (self.inverse_rotation * world) * self.scale
    }

    fn rotation(&self, world: Quat) -> Quat {
        self.inverse_rotation * world
    }
}

/// Each placement of a world-space batch as a map into model space, checked with the rest of
/// the batch by `check`: [`ProceduralError::BadTarget`] "placement has no inverse" first.
fn world_to_model(
    what: &'static str,
    rows: &[u32],
    placements: &[Transform],
    lengths: &[usize],
    num_characters: usize,
    entry_problem: impl Fn(usize) -> Option<&'static str>,
) -> Result<Vec<WorldToModel>, ProceduralError> {
    let mut all = vec![placements.len()];
    all.extend_from_slice(lengths);
    check_batch(what, rows, &all, num_characters, |i| {
        if WorldToModel::of(&placements[i]).is_none() {
            Some("placement not finite, or its rotation or a scale component zero")
        } else {
            entry_problem(i)
        }
    })?;
    Ok(placements.iter().filter_map(WorldToModel::of).collect())
}

/// A part of a setup with one weight per character: a look-at chain, a two-bone chain (by
/// index in the setup), or the ground (one weight for all its feet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainPart {
    /// Look-at chain N of [`ProceduralSetup::look_at`].
    LookAt(usize),
    /// Two-bone chain N of [`ProceduralSetup::two_bone`].
    TwoBone(usize),
    /// [`ProceduralSetup::ground`].
    Ground,
}

/// What drives a bound chain weight each frame (a graph's `chainWeights`, as
/// `state::Crowd::chain_weight_bindings` reads them for a crowd).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ChainWeightInput<'a> {
    /// A value per character (a FLOAT parameter's column), clamped to [0, 1]; NaN reads 0.
    Parameter(&'a [f32]),
    /// The clips' curve called `name`, blended by the weights of the pose layer `layer`
    /// shows (`eval::sample::layer_curve`), clamped to [0, 1].
    Curve {
        /// The curve's name.
        name: &'a str,
        /// The layer, base 0.
        layer: usize,
    },
}

/// One chain's weight bound to an input; `eval::procedural::ChainWeightsJob` writes it into
/// [`ProceduralTargets`] before the stage runs, so both evaluators read the bound weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainWeightBinding<'a> {
    /// The chain whose weight column is written.
    pub part: ChainPart,
    /// What it is written from.
    pub input: ChainWeightInput<'a>,
}

/// Checks a batch: rows and every column the same length, rows in the crowd, `ok` for every entry.
fn check_batch(
    what: &'static str,
    rows: &[u32],
    lengths: &[usize],
    num_characters: usize,
    entry_problem: impl Fn(usize) -> Option<&'static str>,
) -> Result<(), ProceduralError> {
    if let Some(&values) = lengths.iter().find(|&&n| n != rows.len()) {
        return Err(ProceduralError::BatchLength { what, rows: rows.len(), values });
    }
    for (entry, &row) in rows.iter().enumerate() {
        let problem = if row as usize >= num_characters { Some("row past the crowd") } else { entry_problem(entry) };
        if let Some(problem) = problem {
            return Err(ProceduralError::BadTarget { what, entry, row, problem });
        }
    }
    Ok(())
}

fn weight_problem(weight: f32) -> Option<&'static str> {
    (!(0.0..=1.0).contains(&weight)).then_some("weight not in [0, 1]")
}

fn known(what: &'static str, index: usize, count: usize) -> Result<(), ProceduralError> {
    if index < count { Ok(()) } else { Err(ProceduralError::UnknownChain { what, index, count }) }
}

impl ProceduralTargets {
    /// Columns for `num_characters` characters of `setup`, every weight 0, targets at the
    /// origin, poles zero (the animated bend), rotations identity, ground flat at 0.
    #[must_use]
    pub fn new(setup: &ProceduralRig, num_characters: usize) -> Self {
        let s = setup.setup();
        let mut targets = Self {
            num_characters: 0,
            look_at: vec![LookAtTargets::default(); s.look_at.len()],
            two_bone: vec![TwoBoneTargets::default(); s.two_bone.len()],
            feet: vec![FootGround::default(); s.ground.as_ref().map_or(0, |g| g.feet.len())],
            ground_weight: Vec::new(),
        };
        targets.resize(num_characters);
        targets
    }

    /// Grows or shrinks to `num_characters`; new characters have every weight 0.
    pub fn resize(&mut self, num_characters: usize) {
        let n = num_characters;
        self.num_characters = n;
        for c in &mut self.look_at {
            c.target.resize(n, Vec3::ZERO);
            c.weight.resize(n, 0.0);
        }
        for c in &mut self.two_bone {
            c.target.resize(n, Vec3::ZERO);
            c.pole.resize(n, Vec3::ZERO);
            c.rotation.resize(n, Quat::IDENTITY);
            c.weight.resize(n, 0.0);
        }
        for f in &mut self.feet {
            f.height_m.resize(n, 0.0);
            f.normal.resize(n, Vec3::Y);
        }
        self.ground_weight.resize(n, 0.0);
    }

    /// Removes `row`, moving the last row into its place, as `state::Crowd::despawn` does.
    /// Out-of-range rows are ignored.
    pub fn swap_remove(&mut self, row: usize) {
        if row >= self.num_characters {
            return;
        }
        self.num_characters -= 1;
        for c in &mut self.look_at {
            c.target.swap_remove(row);
            c.weight.swap_remove(row);
        }
        for c in &mut self.two_bone {
            c.target.swap_remove(row);
            c.pole.swap_remove(row);
            c.rotation.swap_remove(row);
            c.weight.swap_remove(row);
        }
        for f in &mut self.feet {
            f.height_m.swap_remove(row);
            f.normal.swap_remove(row);
        }
        self.ground_weight.swap_remove(row);
    }

    /// Characters held.
    #[must_use]
    pub fn num_characters(&self) -> usize {
        self.num_characters
    }

    /// The look-at chains' columns, one entry per row.
    #[must_use]
    pub fn look_at(&self) -> &[LookAtTargets] {
        &self.look_at
    }

    /// The two-bone chains' columns, one entry per row.
    #[must_use]
    pub fn two_bone(&self) -> &[TwoBoneTargets] {
        &self.two_bone
    }

    /// The feet's ground columns, one entry per row.
    #[must_use]
    pub fn feet(&self) -> &[FootGround] {
        &self.feet
    }

    /// The ground's weight, one entry per row.
    #[must_use]
    pub fn ground_weight(&self) -> &[f32] {
        &self.ground_weight
    }

    /// Chains and feet held columns for (see [`ProceduralRig::num_parts`]).
    #[must_use]
    pub fn num_parts(&self) -> usize {
        self.look_at.len() + self.two_bone.len() + self.feet.len()
    }

    /// `part`'s weight column, one entry per row, for writing in place (values outside
    /// [0, 1] are the writer's to avoid; `eval::procedural::ChainWeightsJob` clamps);
    /// [`ProceduralError::UnknownChain`] for a part the setup does not have.
    pub fn weights_mut(&mut self, part: ChainPart) -> Result<&mut [f32], ProceduralError> {
        const WHAT: &str = "weights_mut";
        match part {
            ChainPart::LookAt(i) => {
                known(WHAT, i, self.look_at.len())?;
                Ok(&mut self.look_at[i].weight)
            }
            ChainPart::TwoBone(i) => {
                known(WHAT, i, self.two_bone.len())?;
                Ok(&mut self.two_bone[i].weight)
            }
            ChainPart::Ground => {
                known(WHAT, 0, usize::from(!self.feet.is_empty()))?;
                Ok(&mut self.ground_weight)
            }
        }
    }

    /// Whether any weight of `row` is above 0: the stage skips rows where none is.
    #[must_use]
    pub fn is_active(&self, row: usize) -> bool {
        let on = |w: &Vec<f32>| w.get(row).is_some_and(|&w| w > 0.0);
        self.look_at.iter().any(|c| on(&c.weight))
            || self.two_bone.iter().any(|c| on(&c.weight))
            || on(&self.ground_weight)
    }

    /// Sets look-at chain `chain`'s target (model space) and weight for each row. Checked
    /// whole before anything is written: [`ProceduralError::UnknownChain`],
    /// [`ProceduralError::BatchLength`], [`ProceduralError::BadTarget`] (row past the crowd,
    /// target not finite, weight outside [0, 1]).
    pub fn set_look_at(
        &mut self,
        chain: usize,
        rows: &[u32],
        targets: &[Vec3],
        weights: &[f32],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_look_at";
        known(WHAT, chain, self.look_at.len())?;
        check_batch(WHAT, rows, &[targets.len(), weights.len()], self.num_characters, |i| {
            if !targets[i].is_finite() { Some("target not finite") } else { weight_problem(weights[i]) }
        })?;
        let c = &mut self.look_at[chain];
        for ((&row, &target), &weight) in rows.iter().zip(targets).zip(weights) {
            c.target[row as usize] = target;
            c.weight[row as usize] = weight;
        }
        Ok(())
    }

    /// Sets two-bone chain `chain`'s target, pole direction, end rotation (used with
    /// [`EndRotation::Target`]; normalised here) and weight for each row. Checked whole before
    /// anything is written, as [`set_look_at`](Self::set_look_at); rotations must be finite and
    /// not zero.
    pub fn set_two_bone(
        &mut self,
        chain: usize,
        rows: &[u32],
        targets: &[Vec3],
        poles: &[Vec3],
        rotations: &[Quat],
        weights: &[f32],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_two_bone";
        known(WHAT, chain, self.two_bone.len())?;
        let lengths = [targets.len(), poles.len(), rotations.len(), weights.len()];
        check_batch(WHAT, rows, &lengths, self.num_characters, |i| {
            if !targets[i].is_finite() || !poles[i].is_finite() {
                Some("target or pole not finite")
            } else if !rotations[i].is_finite() || rotations[i].length() < 1e-6 {
                Some("rotation not finite or zero")
            } else {
                weight_problem(weights[i])
            }
        })?;
        let c = &mut self.two_bone[chain];
        for (i, &row) in rows.iter().enumerate() {
            let row = row as usize;
            c.target[row] = targets[i];
            c.pole[row] = poles[i];
            c.rotation[row] = rotations[i].normalize();
            c.weight[row] = weights[i];
        }
        Ok(())
    }

    /// Sets two-bone chain `chain`'s weight alone for each row, leaving its targets: how a
    /// clip curve (`eval::sample::layer_curve`, "foot planted") pins a foot only while the clip
    /// says so. Checked whole before anything is written, as [`set_look_at`](Self::set_look_at).
    pub fn set_two_bone_weight(&mut self, chain: usize, rows: &[u32], weights: &[f32]) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_two_bone_weight";
        known(WHAT, chain, self.two_bone.len())?;
        check_batch(WHAT, rows, &[weights.len()], self.num_characters, |i| weight_problem(weights[i]))?;
        for (&row, &weight) in rows.iter().zip(weights) {
            self.two_bone[chain].weight[row as usize] = weight;
        }
        Ok(())
    }

    /// [`set_look_at`](Self::set_look_at) with world-space targets: `placements` holds each
    /// entry's character placement (its root's world transform), and each target is turned into
    /// that character's model space as it is set. Checked whole before anything is written, as
    /// `set_look_at`; a placement must be finite with a non-zero rotation and scale.
    ///
    /// ```
    /// use glam::{Quat, Vec3};
    /// use throng::program::{LookAtChain, ProceduralSetup, ProceduralTargets};
    /// use throng::{Rig, Transform};
    ///
    /// let rig = Rig::new(
    ///     vec!["neck".into(), "head".into()],
    ///     vec![None, Some(0)],
    ///     vec![Transform::from_translation(Vec3::Y * 1.5), Transform::from_translation(Vec3::Y * 0.1)],
    ///     None,
    /// )?;
    /// let setup = ProceduralSetup { look_at: vec![LookAtChain::even(vec![0, 1], Vec3::Z)], ..Default::default() }
    ///     .check(&rig)?;
    /// let mut targets = ProceduralTargets::new(&setup, 2);
    /// // Two characters stand in the world, the second turned half round; both look at the player.
    /// let placements = [
    ///     Transform::from_translation(Vec3::new(10.0, 0.0, 0.0)),
    ///     Transform::from_translation_rotation(Vec3::new(0.0, 0.0, 5.0), Quat::from_rotation_y(std::f32::consts::PI)),
    /// ];
    /// let player = Vec3::new(10.0, 1.6, 5.0);
    /// targets.set_look_at_world(0, &[0, 1], &placements, &[player; 2], &[1.0; 2])?;
    /// // The stage reads model space: the first sees the player 5 m ahead (+Z), the second 10 m to its right.
    /// assert!(targets.look_at()[0].target[0].abs_diff_eq(Vec3::new(0.0, 1.6, 5.0), 1e-5));
    /// assert!(targets.look_at()[0].target[1].abs_diff_eq(Vec3::new(-10.0, 1.6, 0.0), 1e-5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_look_at_world(
        &mut self,
        chain: usize,
        rows: &[u32],
        placements: &[Transform],
        targets: &[Vec3],
        weights: &[f32],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_look_at_world";
        known(WHAT, chain, self.look_at.len())?;
        let maps = world_to_model(WHAT, rows, placements, &[targets.len(), weights.len()], self.num_characters, |i| {
            (!targets[i].is_finite()).then_some("target not finite")
        })?;
        let model: Vec<Vec3> = maps.iter().zip(targets).map(|(m, &t)| m.point(t)).collect();
        self.set_look_at(chain, rows, &model, weights)
    }

    /// [`set_two_bone`](Self::set_two_bone) with world-space targets, pole directions and end
    /// rotations, each turned into its character's model space through `placements` (one per
    /// entry, as [`set_look_at_world`](Self::set_look_at_world)). Checked whole before anything
    /// is written.
    #[allow(clippy::too_many_arguments)]
    pub fn set_two_bone_world(
        &mut self,
        chain: usize,
        rows: &[u32],
        placements: &[Transform],
        targets: &[Vec3],
        poles: &[Vec3],
        rotations: &[Quat],
        weights: &[f32],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_two_bone_world";
        known(WHAT, chain, self.two_bone.len())?;
        let lengths = [targets.len(), poles.len(), rotations.len(), weights.len()];
        let maps = world_to_model(WHAT, rows, placements, &lengths, self.num_characters, |i| {
            (!targets[i].is_finite() || !poles[i].is_finite() || !rotations[i].is_finite())
                .then_some("target, pole or rotation not finite")
        })?;
        let model_targets: Vec<Vec3> = maps.iter().zip(targets).map(|(m, &t)| m.point(t)).collect();
        let model_poles: Vec<Vec3> = maps.iter().zip(poles).map(|(m, &p)| m.direction(p)).collect();
        let model_rotations: Vec<Quat> = maps.iter().zip(rotations).map(|(m, &q)| m.rotation(q)).collect();
        self.set_two_bone(chain, rows, &model_targets, &model_poles, &model_rotations, weights)
    }

    /// [`set_ground`](Self::set_ground) from world-space raycast hits: each foot's ground is the
    /// world point where the ray under it met the ground and the normal there, turned into its
    /// character's model space through `placements` (one per entry, as
    /// [`set_look_at_world`](Self::set_look_at_world)); the height is the hit point's model-space
    /// height. Checked whole before anything is written.
    pub fn set_ground_world(
        &mut self,
        foot: usize,
        rows: &[u32],
        placements: &[Transform],
        points: &[Vec3],
        normals: &[Vec3],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_ground_world";
        known(WHAT, foot, self.feet.len())?;
        let maps = world_to_model(WHAT, rows, placements, &[points.len(), normals.len()], self.num_characters, |i| {
            (!points[i].is_finite() || !normals[i].is_finite()).then_some("point or normal not finite")
        })?;
        let heights_m: Vec<f32> = maps.iter().zip(points).map(|(m, &p)| m.point(p).y).collect();
        let model_normals: Vec<Vec3> = maps.iter().zip(normals).map(|(m, &n)| m.normal(n)).collect();
        self.set_ground(foot, rows, &heights_m, &model_normals)
    }

    /// Sets foot `foot`'s ground height and normal (model space; normalised here, zero for
    /// straight up) for each row. Checked whole before anything is written, as
    /// [`set_look_at`](Self::set_look_at); heights and normals must be finite.
    pub fn set_ground(
        &mut self,
        foot: usize,
        rows: &[u32],
        heights_m: &[f32],
        normals: &[Vec3],
    ) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_ground";
        known(WHAT, foot, self.feet.len())?;
        check_batch(WHAT, rows, &[heights_m.len(), normals.len()], self.num_characters, |i| {
            (!heights_m[i].is_finite() || !normals[i].is_finite()).then_some("height or normal not finite")
        })?;
        let f = &mut self.feet[foot];
        for (i, &row) in rows.iter().enumerate() {
            f.height_m[row as usize] = heights_m[i];
            f.normal[row as usize] = normals[i].try_normalize().unwrap_or(Vec3::Y);
        }
        Ok(())
    }

    /// Sets the ground's weight for each row. Checked whole before anything is written, as
    /// [`set_look_at`](Self::set_look_at).
    pub fn set_ground_weight(&mut self, rows: &[u32], weights: &[f32]) -> Result<(), ProceduralError> {
        const WHAT: &str = "set_ground_weight";
        if self.feet.is_empty() {
            return Err(ProceduralError::UnknownChain { what: WHAT, index: 0, count: 0 });
        }
        check_batch(WHAT, rows, &[weights.len()], self.num_characters, |i| weight_problem(weights[i]))?;
        for (&row, &weight) in rows.iter().zip(weights) {
            self.ground_weight[row as usize] = weight;
        }
        Ok(())
    }

    /// [`ProceduralError::TargetsMismatch`] unless these columns are for `characters` rows of
    /// `setup`; [`ProceduralError::RigMismatch`] unless `setup` was checked against a rig of
    /// `num_joints` joints.
    pub fn validate_for(
        &self,
        setup: &ProceduralRig,
        num_joints: usize,
        characters: usize,
    ) -> Result<(), ProceduralError> {
        if setup.num_joints != num_joints {
            return Err(ProceduralError::RigMismatch { setup_joints: setup.num_joints, rig_joints: num_joints });
        }
        let s = setup.setup();
        let feet = s.ground.as_ref().map_or(0, |g| g.feet.len());
        if self.num_characters != characters
            || self.look_at.len() != s.look_at.len()
            || self.two_bone.len() != s.two_bone.len()
            || self.feet.len() != feet
        {
            return Err(ProceduralError::TargetsMismatch {
                got_characters: self.num_characters,
                got_parts: self.num_parts(),
                characters,
                parts: setup.num_parts(),
            });
        }
        Ok(())
    }
}
