//! Rigs: the joint hierarchy, rest pose and inverse bind matrices every stage reads.

use glam::{Affine3A, Mat4, Vec4};

pub use crate::pose::{NO_PARENT, Transform};

/// The most joints a rig may have. Joint indices fit in a byte, which keeps masks and
/// per-joint tables of the GPU stages small.
pub const MAX_JOINTS: usize = 256;

/// The largest magnitude a translation component may have, in a rig's rest pose or a clip's
/// frames, metres (1000 km: a file in centimetres, or a character far from its origin, is well
/// inside it). With [`MAX_SCALE`], [`MAX_CHAIN_SCALE`] and [`MAX_INVERSE_BIND`] it keeps every
/// matrix either evaluator computes finite; the argument is in `docs/errors.md`, "Numeric
/// bounds".
pub const MAX_TRANSLATION_M: f32 = 1e6;

/// The largest magnitude a scale component may have, in a rig's rest pose or a clip's frames.
/// Scales may be zero or negative (a hidden or mirrored joint); only growth can overflow.
pub const MAX_SCALE: f32 = 1e4;

/// The largest product, along any chain from a root, of each joint's largest scale magnitude
/// (counted as 1 when below 1): the rest pose's, and what the evaluators can build from a rig's
/// rest pose and clips (see [`crate::program::validate_clips`]).
pub const MAX_CHAIN_SCALE: f32 = 1e8;

/// How far from 1 a rest rotation's length may be: a rest rotation is a unit quaternion up to the
/// rounding of the file it came from, and [`Rig::new`] stores it normalised (a zero one has no
/// direction to keep; the evaluators' blends assume unit rotations).
pub const MAX_REST_ROTATION_LENGTH_ERROR: f32 = 1e-3;

/// The largest magnitude an entry of an inverse bind matrix may have, given or derived.
pub const MAX_INVERSE_BIND: f32 = 1e8;

/// Why a rig was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RigError {
    /// The rig has no joints.
    #[error("rig has no joints")]
    Empty,
    /// The rig has more joints than [`MAX_JOINTS`].
    #[error("rig has {num_joints} joints; at most {MAX_JOINTS} are supported")]
    TooManyJoints {
        /// How many joints were given.
        num_joints: usize,
    },
    /// The per-joint arrays have different lengths.
    #[error(
        "rig arrays disagree: {names} names, {parents} parents, {rest} rest transforms, {inverse_bind} inverse bind matrices"
    )]
    LengthMismatch {
        /// Number of names.
        names: usize,
        /// Number of parent entries.
        parents: usize,
        /// Number of rest transforms.
        rest: usize,
        /// Number of inverse bind matrices.
        inverse_bind: usize,
    },
    /// A joint's parent does not come before it.
    #[error("joint {joint} ({name:?}) has parent {parent}, which is not before it (parents must precede children)")]
    ParentNotBefore {
        /// The joint index.
        joint: usize,
        /// The joint name.
        name: String,
        /// The parent index given.
        parent: usize,
    },
    /// Two joints share a name.
    #[error("joints {first} and {second} are both named {name:?}")]
    DuplicateName {
        /// The shared name.
        name: String,
        /// The first joint with it.
        first: usize,
        /// The second joint with it.
        second: usize,
    },
    /// A rest transform or inverse bind matrix holds NaN or infinity.
    #[error("joint {joint} ({name:?}) has a non-finite {what}")]
    NonFinite {
        /// The joint index.
        joint: usize,
        /// The joint name.
        name: String,
        /// `"rest transform"` or `"inverse bind matrix"`.
        what: &'static str,
    },
    /// A finite number is past its bound: a rest translation component beyond
    /// [`MAX_TRANSLATION_M`], a rest scale component beyond [`MAX_SCALE`], the product of rest
    /// scales down to the joint beyond [`MAX_CHAIN_SCALE`], a rest rotation's length further
    /// than [`MAX_REST_ROTATION_LENGTH_ERROR`] from 1, or an inverse bind matrix entry beyond
    /// [`MAX_INVERSE_BIND`]. Such numbers could overflow in the evaluators, or (a rotation of no
    /// length) give them nothing to normalise.
    #[error("joint {joint} ({name:?}): {what} is {value}, beyond the limit {limit}")]
    OutOfBounds {
        /// The joint index.
        joint: usize,
        /// The joint name.
        name: String,
        /// `"rest translation"`, `"rest scale"`, `"rest scale product along the chain"`, `"rest
        /// rotation's length off 1"` or `"inverse bind matrix entry"`.
        what: &'static str,
        /// The magnitude found (`f32::INFINITY` for a chain product past `f32`).
        value: f32,
        /// The bound it is past.
        limit: f32,
    },
    /// An inverse bind matrix's last row is not exactly `(0, 0, 0, 1)`. glTF requires it of
    /// inverse bind matrices, and both evaluators rely on it: the skinning matrices are affine
    /// (the affine 3×4 output layout has no last row), and the CPU's products skip that row.
    #[error("joint {joint} ({name:?}): the inverse bind matrix's last row is {row:?}, not [0, 0, 0, 1]")]
    NotAffine {
        /// The joint index.
        joint: usize,
        /// The joint name.
        name: String,
        /// The last row given.
        row: [f32; 4],
    },
    /// No inverse bind matrices were given, and the joint's rest transform in model space cannot
    /// be inverted to derive one (a zero scale, or a zero-length rotation, on it or an ancestor).
    #[error(
        "joint {joint} ({name:?}): its rest transform in model space cannot be inverted (zero scale or zero-length rotation), so no inverse bind matrix can be derived; give the inverse bind matrices"
    )]
    SingularRest {
        /// The joint index.
        joint: usize,
        /// The joint name.
        name: String,
    },
}

/// A skeleton: joint names, hierarchy, rest pose and inverse bind matrices.
///
/// Validated on construction: at least one and at most [`MAX_JOINTS`] joints, every parent
/// before its child, unique names, finite numbers within [`MAX_TRANSLATION_M`], [`MAX_SCALE`],
/// [`MAX_CHAIN_SCALE`] and [`MAX_INVERSE_BIND`], rest rotations of unit length within
/// [`MAX_REST_ROTATION_LENGTH_ERROR`] (stored normalised), inverse bind matrices affine (last
/// row `(0, 0, 0, 1)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rig {
    names: Vec<String>,
    parents: Vec<u16>,
    /// Every joint once, shallowest first (joint order within a depth).
    by_depth: Vec<u16>,
    /// Each joint's depth: 0 for a root, its parent's + 1.
    depths: Vec<u16>,
    rest: Vec<Transform>,
    inverse_bind: Vec<Mat4>,
}

impl Rig {
    /// Builds a rig. `inverse_bind` of `None` derives the inverse bind matrices from the rest
    /// pose, so that the rest pose skins to identity.
    ///
    /// ```
    /// use throng::{Rig, Transform};
    /// use glam::Vec3;
    /// let rig = Rig::new(
    ///     vec!["hips".into(), "spine".into()],
    ///     vec![None, Some(0)],
    ///     vec![Transform::from_translation(Vec3::Y), Transform::from_translation(Vec3::Y * 0.2)],
    ///     None,
    /// )
    /// .unwrap();
    /// assert_eq!(rig.num_joints(), 2);
    /// assert_eq!(rig.parent(1), Some(0));
    /// ```
    pub fn new(
        names: Vec<String>,
        parents: Vec<Option<usize>>,
        mut rest: Vec<Transform>,
        inverse_bind: Option<Vec<Mat4>>,
    ) -> Result<Self, RigError> {
        let num_joints = names.len();
        let num_ibm = inverse_bind.as_ref().map_or(num_joints, Vec::len);
        if parents.len() != num_joints || rest.len() != num_joints || num_ibm != num_joints {
            return Err(RigError::LengthMismatch {
                names: num_joints,
                parents: parents.len(),
                rest: rest.len(),
                inverse_bind: num_ibm,
            });
        }
        if num_joints == 0 {
            return Err(RigError::Empty);
        }
        if num_joints > MAX_JOINTS {
            return Err(RigError::TooManyJoints { num_joints });
        }
        let mut packed = Vec::with_capacity(num_joints);
        for (joint, parent) in parents.iter().enumerate() {
            match *parent {
                Some(p) if p >= joint => {
                    return Err(RigError::ParentNotBefore { joint, name: names[joint].clone(), parent: p });
                }
                // `p < joint <= MAX_JOINTS` so it fits.
                Some(p) => packed.push(p as u16),
                None => packed.push(NO_PARENT),
            }
        }
        let mut seen = std::collections::HashMap::with_capacity(num_joints);
        for (joint, name) in names.iter().enumerate() {
            if let Some(first) = seen.insert(name.as_str(), joint) {
                return Err(RigError::DuplicateName { name: name.clone(), first, second: joint });
            }
            if !rest[joint].is_finite() {
                return Err(RigError::NonFinite { joint, name: name.clone(), what: "rest transform" });
            }
        }
        let mut chain = vec![1.0f64; num_joints];
        for (joint, r) in rest.iter().enumerate() {
            let parent_chain = match packed[joint] {
                NO_PARENT => 1.0,
                p => chain[p as usize],
            };
            chain[joint] = parent_chain * f64::from(r.scale.abs().max_element().max(1.0));
            let checks = [
                ("rest translation", r.translation.abs().max_element(), MAX_TRANSLATION_M),
                ("rest scale", r.scale.abs().max_element(), MAX_SCALE),
                ("rest scale product along the chain", chain[joint] as f32, MAX_CHAIN_SCALE),
                ("rest rotation's length off 1", (r.rotation.length() - 1.0).abs(), MAX_REST_ROTATION_LENGTH_ERROR),
            ];
            if let Some(&(what, value, limit)) = checks.iter().find(|(_, value, limit)| !(value <= limit)) {
                return Err(RigError::OutOfBounds { joint, name: names[joint].clone(), what, value, limit });
            }
        }
        for r in &mut rest {
            r.rotation = r.rotation.normalize();
        }
        let inverse_bind = match inverse_bind {
            Some(ibm) => {
                if let Some(joint) = ibm.iter().position(|m| !m.is_finite()) {
                    return Err(RigError::NonFinite { joint, name: names[joint].clone(), what: "inverse bind matrix" });
                }
                if let Some(joint) = ibm.iter().position(|m| m.row(3) != Vec4::W) {
                    let row = ibm[joint].row(3).to_array();
                    return Err(RigError::NotAffine { joint, name: names[joint].clone(), row });
                }
                ibm
            }
            None => {
                let mut model: Vec<Mat4> = Vec::with_capacity(num_joints);
                for joint in 0..num_joints {
                    let local = rest[joint].to_mat4();
                    let m = match packed[joint] {
                        NO_PARENT => local,
                        p => model[p as usize] * local,
                    };
                    model.push(m);
                }
                // Inverted as affine maps, so that the last row is exactly `(0, 0, 0, 1)`.
                let inverse: Vec<Mat4> = model.iter().map(|m| Mat4::from(Affine3A::from_mat4(*m).inverse())).collect();
                if let Some(joint) = inverse.iter().position(|m| !m.is_finite()) {
                    return Err(RigError::SingularRest { joint, name: names[joint].clone() });
                }
                inverse
            }
        };
        // A derived inverse is large where the rest pose is small (a tiny scale up the chain).
        // Every entry is finite by now, so `f32::max` meets no NaN.
        let largest = |m: &Mat4| m.abs().to_cols_array().into_iter().fold(0.0f32, f32::max);
        if let Some(joint) = inverse_bind.iter().position(|m| largest(m) > MAX_INVERSE_BIND) {
            let value = largest(&inverse_bind[joint]);
            return Err(RigError::OutOfBounds {
                joint,
                name: names[joint].clone(),
                what: "inverse bind matrix entry",
                value,
                limit: MAX_INVERSE_BIND,
            });
        }
        let depths = joint_depths(&packed);
        let by_depth = joints_by_depth(&depths);
        Ok(Self { names, parents: packed, by_depth, depths, rest, inverse_bind })
    }

    /// Number of joints, in `1..=MAX_JOINTS`.
    #[must_use]
    pub fn num_joints(&self) -> usize {
        self.names.len()
    }

    /// Joint names, indexed by joint.
    #[must_use]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Parent indices, [`NO_PARENT`] for roots. Every parent is below its child.
    #[must_use]
    pub fn parents(&self) -> &[u16] {
        &self.parents
    }

    /// Every joint once, level by level: the roots, then their children, then theirs, in joint
    /// order within a level. A parent comes before its children, as in joint order, but the
    /// joints of one level never depend on each other: the GPU's level kernels compose whole
    /// levels at once, one barrier per band of levels (`gpu::types::level_bands`, this order).
    ///
    /// ```
    /// use throng::{Rig, Transform};
    ///
    /// // 0 ─ 1 ─ 2, and 0 ─ 3
    /// let names = ["hips", "spine", "head", "leg"].map(String::from).to_vec();
    /// let parents = vec![None, Some(0), Some(1), Some(0)];
    /// let rig = Rig::new(names, parents, vec![Transform::IDENTITY; 4], None).unwrap();
    /// assert_eq!(rig.joints_by_depth(), [0, 1, 3, 2]);
    /// ```
    #[must_use]
    pub fn joints_by_depth(&self) -> &[u16] {
        &self.by_depth
    }

    /// Each joint's depth, indexed by joint: 0 for a root, its parent's + 1 for any other.
    ///
    /// ```
    /// use throng::{Rig, Transform};
    ///
    /// // 0 ─ 1 ─ 2, and 0 ─ 3
    /// let names = ["hips", "spine", "head", "leg"].map(String::from).to_vec();
    /// let parents = vec![None, Some(0), Some(1), Some(0)];
    /// let rig = Rig::new(names, parents, vec![Transform::IDENTITY; 4], None).unwrap();
    /// assert_eq!(rig.joint_depths(), [0, 1, 2, 1]);
    /// ```
    #[must_use]
    pub fn joint_depths(&self) -> &[u16] {
        &self.depths
    }

    /// The parent of `joint`, `None` for a root or an index out of range.
    #[must_use]
    pub fn parent(&self, joint: usize) -> Option<usize> {
        match self.parents.get(joint) {
            Some(&NO_PARENT) | None => None,
            Some(&p) => Some(p as usize),
        }
    }

    /// Rest pose, local transforms indexed by joint.
    #[must_use]
    pub fn rest_pose(&self) -> &[Transform] {
        &self.rest
    }

    /// Inverse bind matrices, indexed by joint: model space to the joint's bind space. Each is
    /// affine: its last row is exactly `(0, 0, 0, 1)`.
    #[must_use]
    pub fn inverse_bind(&self) -> &[Mat4] {
        &self.inverse_bind
    }

    /// The index of the joint called `name`.
    #[must_use]
    pub fn find_joint(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Model-space matrices of the rest pose.
    #[must_use]
    pub fn rest_model(&self) -> Vec<Mat4> {
        let mut model = vec![Mat4::IDENTITY; self.num_joints()];
        crate::pose::local_to_model(&self.parents, &self.rest, &mut model);
        model
    }
}

/// [`Rig::joint_depths`] for a validated parent table (every parent below its child).
fn joint_depths(parents: &[u16]) -> Vec<u16> {
    let mut depth = vec![0u16; parents.len()];
    for joint in 0..parents.len() {
        if parents[joint] != NO_PARENT {
            depth[joint] = depth[parents[joint] as usize] + 1;
        }
    }
    depth
}

/// [`Rig::joints_by_depth`] from each joint's depth.
fn joints_by_depth(depths: &[u16]) -> Vec<u16> {
    let mut order: Vec<u16> = (0..depths.len() as u16).collect();
    // Stable: joint order within a level.
    order.sort_by_key(|&joint| depths[joint as usize]);
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    fn chain(n: usize) -> (Vec<String>, Vec<Option<usize>>, Vec<Transform>) {
        let names = (0..n).map(|i| format!("j{i}")).collect();
        let parents = (0..n).map(|i| i.checked_sub(1)).collect();
        let rest = vec![Transform::from_translation(Vec3::Y); n];
        (names, parents, rest)
    }

    #[test]
    fn refuses_more_than_max_joints() {
        let (n, p, r) = chain(MAX_JOINTS + 1);
        assert_eq!(Rig::new(n, p, r, None), Err(RigError::TooManyJoints { num_joints: 257 }));
        let (n, p, r) = chain(MAX_JOINTS);
        assert!(Rig::new(n, p, r, None).is_ok());
    }

    #[test]
    fn refuses_parent_after_child() {
        let (n, mut p, r) = chain(3);
        p[1] = Some(2);
        let err = Rig::new(n, p, r, None).unwrap_err();
        assert_eq!(err, RigError::ParentNotBefore { joint: 1, name: "j1".into(), parent: 2 });
        assert!(err.to_string().contains("j1"));
    }

    #[test]
    fn refuses_self_parent_empty_duplicates_and_nan() {
        let (n, mut p, r) = chain(2);
        p[0] = Some(0);
        assert!(matches!(Rig::new(n, p, r, None), Err(RigError::ParentNotBefore { joint: 0, .. })));
        assert_eq!(Rig::new(vec![], vec![], vec![], None), Err(RigError::Empty));
        let (mut n, p, r) = chain(3);
        n[2] = "j0".into();
        assert!(matches!(Rig::new(n, p, r, None), Err(RigError::DuplicateName { first: 0, second: 2, .. })));
        let (n, p, mut r) = chain(2);
        r[1].translation.x = f32::NAN;
        assert!(matches!(Rig::new(n, p, r, None), Err(RigError::NonFinite { joint: 1, .. })));
        let (n, p, r) = chain(2);
        assert!(matches!(
            Rig::new(n, p, r, Some(vec![Mat4::IDENTITY])),
            Err(RigError::LengthMismatch { inverse_bind: 1, .. })
        ));
    }

    /// A rest rotation of no length (or far from unit length) is refused, naming the joint; one a
    /// file's rounding off unit length is stored normalised, with inverse bind matrices given
    /// or derived.
    #[test]
    fn refuses_a_rest_rotation_off_unit_length_and_normalises_the_rest() {
        for (length, refused) in [(0.0, true), (0.5, true), (1.01, true), (1.0 + 5e-4, false), (1.0 - 5e-4, false)] {
            for inverse_bind in [None, Some(vec![Mat4::IDENTITY; 3])] {
                let (n, p, mut r) = chain(3);
                r[2].rotation = Quat::from_rotation_z(0.7) * length;
                match Rig::new(n, p, r, inverse_bind) {
                    Err(RigError::OutOfBounds { joint: 2, what, .. }) if refused => {
                        assert_eq!(what, "rest rotation's length off 1");
                    }
                    Ok(rig) if !refused => {
                        let rotation = rig.rest_pose()[2].rotation;
                        assert!((rotation.length() - 1.0).abs() <= 1e-6, "{length}: {rotation}");
                        assert!(rotation.angle_between(Quat::from_rotation_z(0.7)) <= 1e-3);
                    }
                    other => panic!("length {length}: {other:?}"),
                }
            }
        }
    }

    /// A given inverse bind matrix must have the last row `(0, 0, 0, 1)` exactly (glTF's rule):
    /// any entry off by one ulp is refused, naming the joint and the row.
    #[test]
    fn refuses_projective_inverse_bind() {
        for (entry, value) in [(3, 1e-7), (7, -0.25), (11, 0.5), (15, 1.0 - f32::EPSILON / 2.0)] {
            let (n, p, r) = chain(3);
            let mut ibm = [Mat4::IDENTITY; 3];
            let mut cols = ibm[2].to_cols_array();
            cols[entry] = value;
            ibm[2] = Mat4::from_cols_array(&cols);
            let row = ibm[2].row(3).to_array();
            let err = Rig::new(n, p, r, Some(ibm.to_vec())).unwrap_err();
            assert_eq!(err, RigError::NotAffine { joint: 2, name: "j2".into(), row });
            assert!(err.to_string().contains("j2"), "{err}");
        }
        let (n, p, r) = chain(3);
        assert!(Rig::new(n, p, r, Some(vec![Mat4::from_translation(Vec3::X); 3])).is_ok());
    }

    #[test]
    fn derived_inverse_bind_undoes_rest_model() {
        let (n, p, mut r) = chain(4);
        r[2].rotation = Quat::from_rotation_z(0.7);
        r[3].scale = Vec3::splat(2.0);
        let rig = Rig::new(n, p, r, None).unwrap();
        for (m, ibm) in rig.rest_model().iter().zip(rig.inverse_bind()) {
            assert!((*m * *ibm).abs_diff_eq(Mat4::IDENTITY, 1e-5));
            assert_eq!(ibm.row(3), Vec4::W);
        }
    }
}
