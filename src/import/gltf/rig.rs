//! Skin → rig: joints reordered parent-first, non-joint ancestors baked into the rest pose, inverse binds.

use std::collections::HashMap;

use glam::{Mat4, Quat, Vec3};
use gltf::accessor::Dimensions;

use super::GltfError;
use super::accessor::{Accept, read_accessor};
use crate::rig::{Rig, RigError, Transform};

/// A similarity transform (uniform scale), the part of a node's ancestors baked into a joint.
#[derive(Clone, Copy, Debug)]
pub(super) struct Similarity {
    translation: Vec3,
    pub(super) rotation: Quat,
    pub(super) scale: f32,
}

impl Similarity {
    const IDENTITY: Self = Self { translation: Vec3::ZERO, rotation: Quat::IDENTITY, scale: 1.0 };

    /// `self * child`, where `child` has uniform scale `s`.
    fn then(&self, t: Vec3, r: Quat, s: f32) -> Self {
        Self { translation: self.point(t), rotation: (self.rotation * r).normalize(), scale: self.scale * s }
    }

    pub(super) fn point(&self, p: Vec3) -> Vec3 {
        self.translation + self.rotation * (self.scale * p)
    }

    pub(super) fn vector(&self, v: Vec3) -> Vec3 {
        self.rotation * (self.scale * v)
    }

    fn apply(&self, local: &Transform) -> Transform {
        Transform {
            translation: self.point(local.translation),
            rotation: (self.rotation * local.rotation).normalize(),
            scale: local.scale * self.scale,
        }
    }
}

pub(super) fn node_transform(node: &gltf::Node) -> Transform {
    let (t, r, s) = node.transform().decomposed();
    Transform { translation: Vec3::from(t), rotation: Quat::from_array(r), scale: Vec3::from(s) }
}

/// Each node's parent, checking that the nodes form a forest.
fn node_parents(doc: &gltf::Document) -> Result<Vec<Option<usize>>, GltfError> {
    let mut parents = vec![None; doc.nodes().len()];
    for node in doc.nodes() {
        for child in node.children() {
            let slot = parents
                .get_mut(child.index())
                .ok_or(GltfError::Hierarchy { node: child.index(), what: "child index out of range" })?;
            if child.index() == node.index() {
                return Err(GltfError::Hierarchy { node: node.index(), what: "node is its own child" });
            }
            if slot.is_some() {
                return Err(GltfError::Hierarchy { node: child.index(), what: "node has more than one parent" });
            }
            *slot = Some(node.index());
        }
    }
    // With one parent each, the nodes in a cycle (and everything under them) are exactly
    // those that no walk down from a parentless node reaches.
    let nodes: Vec<gltf::Node> = doc.nodes().collect();
    let mut reached = vec![false; parents.len()];
    let mut stack: Vec<usize> = (0..parents.len()).filter(|&n| parents[n].is_none()).collect();
    while let Some(n) = stack.pop() {
        reached[n] = true;
        stack.extend(nodes[n].children().map(|c| c.index()));
    }
    if let Some(node) = reached.iter().position(|&r| !r) {
        return Err(GltfError::Hierarchy { node, what: "node is its own ancestor" });
    }
    Ok(parents)
}

pub(super) struct SkinRig {
    pub(super) rig: Rig,
    /// glTF node of each rig joint.
    pub(super) joint_nodes: Vec<usize>,
    /// Skin `joints` position of each rig joint.
    pub(super) skin_joint_indices: Vec<usize>,
    /// Rig joint of each skin `joints` position.
    pub(super) rig_joint_of_skin: Vec<u16>,
    /// Transform of non-joint ancestors baked into each rig joint.
    pub(super) baked: Vec<Similarity>,
}

pub(super) fn build_rig(doc: &gltf::Document, buffers: &[Vec<u8>], skin: &gltf::Skin) -> Result<SkinRig, GltfError> {
    let skin_index = skin.index();
    let parents = node_parents(doc)?;
    let nodes: Vec<gltf::Node> = doc.nodes().collect();
    let skin_nodes: Vec<usize> = skin.joints().map(|n| n.index()).collect();
    // Refused before the hierarchy walks below, whose cost grows with the joint count.
    if skin_nodes.len() > crate::MAX_JOINTS {
        return Err(GltfError::Rig {
            skin: skin_index,
            source: RigError::TooManyJoints { num_joints: skin_nodes.len() },
        });
    }
    let mut skin_pos_of_node: HashMap<usize, usize> = HashMap::with_capacity(skin_nodes.len());
    for (pos, &node) in skin_nodes.iter().enumerate() {
        if skin_pos_of_node.insert(node, pos).is_some() {
            return Err(GltfError::Hierarchy { node, what: "node is listed twice in the skin's joints" });
        }
    }

    // Nearest joint ancestor of each joint, and the non-joint nodes in between (top-down).
    let mut joint_parent = Vec::with_capacity(skin_nodes.len());
    let mut baked = Vec::with_capacity(skin_nodes.len());
    for &node in &skin_nodes {
        let mut between = Vec::new();
        let mut at = parents[node];
        while let Some(p) = at {
            if skin_pos_of_node.contains_key(&p) {
                break;
            }
            between.push(p);
            at = parents[p];
        }
        joint_parent.push(at.and_then(|p| skin_pos_of_node.get(&p).copied()));
        let mut sim = Similarity::IDENTITY;
        for &p in between.iter().rev() {
            let t = node_transform(&nodes[p]);
            let s = t.scale;
            if (s.x - s.y).abs() > 1e-4 * s.x.abs().max(1.0) || (s.x - s.z).abs() > 1e-4 * s.x.abs().max(1.0) {
                return Err(GltfError::NonUniformScale { node: p, joint_node: node, scale: s.to_array() });
            }
            sim = sim.then(t.translation, t.rotation, s.x);
        }
        baked.push(sim);
    }

    // Parent-first order, stable: each joint comes as early as the skin order allows, after its
    // joint ancestors. `order` lists skin positions in rig order.
    let mut order = Vec::with_capacity(skin_nodes.len());
    let mut placed = vec![false; skin_nodes.len()];
    for pos in 0..skin_nodes.len() {
        let mut chain = Vec::new();
        let mut at = Some(pos);
        while let Some(p) = at.filter(|&p| !placed[p]) {
            chain.push(p);
            at = joint_parent[p];
        }
        for &p in chain.iter().rev() {
            placed[p] = true;
            order.push(p);
        }
    }
    let mut rig_of_skin = vec![0u16; skin_nodes.len()];
    for (rig_joint, &pos) in order.iter().enumerate() {
        // Rig::new refuses more than MAX_JOINTS (256) joints, so a saturated value never survives.
        rig_of_skin[pos] = u16::try_from(rig_joint).unwrap_or(u16::MAX);
    }

    let mut names = Vec::with_capacity(order.len());
    let mut used: HashMap<String, usize> = HashMap::new();
    for &pos in &order {
        let node = skin_nodes[pos];
        let mut name = nodes[node].name().map_or_else(|| format!("node{node}"), str::to_owned);
        // glTF allows repeated names; a rig does not, so later ones get their node index.
        if used.contains_key(&name) {
            name = format!("{name}#{node}");
        }
        used.insert(name.clone(), node);
        names.push(name);
    }
    let rig_parents = order.iter().map(|&pos| joint_parent[pos].map(|p| usize::from(rig_of_skin[p]))).collect();
    let rest = order.iter().map(|&pos| baked[pos].apply(&node_transform(&nodes[skin_nodes[pos]]))).collect();
    let inverse_bind = match skin.inverse_bind_matrices() {
        None => None,
        Some(accessor) => {
            let flat = read_accessor(
                buffers,
                &accessor,
                &|| format!("skin {skin_index} inverseBindMatrices"),
                Dimensions::Mat4,
                Accept::Float,
            )?;
            let matrices: Vec<Mat4> = flat.chunks_exact(16).map(Mat4::from_cols_slice).collect();
            if matrices.len() < skin_nodes.len() {
                return Err(GltfError::InverseBindCount {
                    skin: skin_index,
                    accessor: accessor.index(),
                    matrices: matrices.len(),
                    joints: skin_nodes.len(),
                });
            }
            Some(order.iter().map(|&pos| matrices[pos]).collect())
        }
    };
    let rig = Rig::new(names, rig_parents, rest, inverse_bind)
        .map_err(|source| GltfError::Rig { skin: skin_index, source })?;
    Ok(SkinRig {
        rig,
        joint_nodes: order.iter().map(|&pos| skin_nodes[pos]).collect(),
        baked: order.iter().map(|&pos| baked[pos]).collect(),
        skin_joint_indices: order,
        rig_joint_of_skin: rig_of_skin,
    })
}
