//! The skinned mesh: the first mesh bound to the skin, triangles only, weights renormalised.

use glam::Vec3;
use gltf::accessor::{DataType, Dimensions};
use gltf::mesh::{Mode, Semantic};

use super::GltfError;
use super::accessor::{Accept, read_accessor, vec3s};
use super::rig::SkinRig;
use crate::mesh::SkinnedMesh;

pub(super) fn build_mesh(
    doc: &gltf::Document,
    buffers: &[Vec<u8>],
    skin: &SkinRig,
    skin_index: usize,
) -> Result<Option<SkinnedMesh>, GltfError> {
    let Some(mesh) = doc.nodes().filter(|n| n.skin().is_some_and(|s| s.index() == skin_index)).find_map(|n| n.mesh())
    else {
        return Ok(None);
    };
    let mesh_index = mesh.index();
    let mut out = SkinnedMesh::default();
    let mut any = false;
    for primitive in mesh.primitives().filter(|p| p.mode() == Mode::Triangles) {
        let prim = primitive.index();
        let bad = |what: String| GltfError::BadPrimitive { mesh: mesh_index, primitive: prim, what };
        let attribute = |semantic: Semantic, label: &'static str| {
            primitive.get(&semantic).ok_or(GltfError::MissingAttribute {
                mesh: mesh_index,
                primitive: prim,
                semantic: label,
            })
        };
        let label = |s: &'static str| move || format!("mesh {mesh_index} primitive {prim} {s}");
        let positions = vec3s(&read_accessor(
            buffers,
            &attribute(Semantic::Positions, "POSITION")?,
            &label("POSITION"),
            Dimensions::Vec3,
            Accept::Float,
        )?);
        let num_vertices = positions.len();
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(bad(format!("POSITION of vertex {v} is not finite")));
        }
        let check_len = |what: &str, n: usize| {
            if n == num_vertices {
                Ok(())
            } else {
                Err(bad(format!("{what} has {n} entries for {num_vertices} positions")))
            }
        };
        let joints = read_accessor(
            buffers,
            &attribute(Semantic::Joints(0), "JOINTS_0")?,
            &label("JOINTS_0"),
            Dimensions::Vec4,
            Accept::Unsigned(&[DataType::U8, DataType::U16]),
        )?;
        check_len("JOINTS_0", joints.len() / 4)?;
        let weights = read_accessor(
            buffers,
            &attribute(Semantic::Weights(0), "WEIGHTS_0")?,
            &label("WEIGHTS_0"),
            Dimensions::Vec4,
            Accept::FloatOrNormalized(&[DataType::U8, DataType::U16]),
        )?;
        check_len("WEIGHTS_0", weights.len() / 4)?;
        let indices: Vec<u32> = match primitive.indices() {
            Some(a) => read_accessor(
                buffers,
                &a,
                &label("indices"),
                Dimensions::Scalar,
                Accept::Unsigned(&[DataType::U8, DataType::U16, DataType::U32]),
            )?
            .into_iter()
            .map(|i| i as u32)
            .collect(),
            None => (0..num_vertices as u32).collect(),
        };
        if !indices.len().is_multiple_of(3) {
            return Err(bad(format!("{} indices is not a whole number of triangles", indices.len())));
        }
        if let Some(&i) = indices.iter().find(|&&i| i as usize >= num_vertices) {
            return Err(bad(format!("index {i} is past the {num_vertices} vertices")));
        }
        let normals = match primitive.get(&Semantic::Normals) {
            Some(a) => {
                let n = vec3s(&read_accessor(buffers, &a, &label("NORMAL"), Dimensions::Vec3, Accept::Float)?);
                check_len("NORMAL", n.len())?;
                if let Some(v) = n.iter().position(|n| !n.is_finite()) {
                    return Err(bad(format!("NORMAL of vertex {v} is not finite")));
                }
                n
            }
            None => area_weighted_normals(&positions, &indices),
        };
        for (vertex, (j, w)) in joints.chunks_exact(4).zip(weights.chunks_exact(4)).enumerate() {
            let mut rig_joints = [0u16; 4];
            for (slot, &skin_joint) in j.iter().enumerate() {
                rig_joints[slot] = *skin.rig_joint_of_skin.get(skin_joint as usize).ok_or_else(|| {
                    bad(format!(
                        "vertex {vertex} JOINTS_0 names skin joint {skin_joint}; the skin has {}",
                        skin.rig_joint_of_skin.len()
                    ))
                })?;
            }
            let w = [w[0].max(0.0), w[1].max(0.0), w[2].max(0.0), w[3].max(0.0)];
            let sum: f32 = w.iter().sum();
            // A vertex with no weight follows its first joint rather than collapsing to the origin.
            let w = if sum > 0.0 && sum.is_finite() { w.map(|x| x / sum) } else { [1.0, 0.0, 0.0, 0.0] };
            out.joints.push(rig_joints);
            out.weights.push(w);
        }
        let first = out.positions.len() as u32;
        out.indices.extend(indices.iter().map(|&i| first + i));
        out.positions.extend(positions.iter().map(|p| p.to_array()));
        out.normals.extend(normals.iter().map(|n| n.to_array()));
        any = true;
    }
    Ok(any.then_some(out))
}

/// Vertex normals as the area-weighted sum of the normals of the triangles around each vertex
/// (the cross product's length is twice the area); +Y where that sum vanishes.
fn area_weighted_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut normals = vec![Vec3::ZERO; positions.len()];
    for tri in indices.chunks_exact(3) {
        let [a, b, c] = [tri[0] as usize, tri[1] as usize, tri[2] as usize];
        let n = (positions[b] - positions[a]).cross(positions[c] - positions[a]);
        normals[a] += n;
        normals[b] += n;
        normals[c] += n;
    }
    normals.iter().map(|n| n.try_normalize().unwrap_or(Vec3::Y)).collect()
}
