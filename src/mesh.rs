//! Skinned meshes: vertex data for the viewer and for engines that draw throng's output, and
//! the one vertex format their vertex shaders read it in ([`SkinnedVertex`]).

/// A triangle mesh skinned to a rig with up to four joints per vertex.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkinnedMesh {
    /// Bind-pose positions, metres, model space.
    pub positions: Vec<[f32; 3]>,
    /// Bind-pose unit normals.
    pub normals: Vec<[f32; 3]>,
    /// Joint indices into the rig, four per vertex.
    pub joints: Vec<[u16; 4]>,
    /// Joint weights, four per vertex, summing to one.
    pub weights: Vec<[f32; 4]>,
    /// Triangle list, three indices per triangle.
    pub indices: Vec<u32>,
}

/// Why a mesh cannot be drawn skinned to a rig.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// A vertex is skinned to a joint past the rig's: a vertex shader indexing the character's
    /// matrices by it would read the next character's.
    #[error("vertex {vertex} names joint {joint}; the rig has {joints}")]
    JointOutOfRange {
        /// The vertex.
        vertex: usize,
        /// The joint it names.
        joint: u16,
        /// Joints in the rig.
        joints: usize,
    },
    /// A triangle names a vertex past the mesh's.
    #[error("index {index} names vertex {vertex}; the mesh has {vertices}")]
    VertexOutOfRange {
        /// The position in the index list.
        index: usize,
        /// The vertex it names.
        vertex: u32,
        /// Vertices in the mesh.
        vertices: usize,
    },
}

impl SkinnedMesh {
    /// Number of vertices.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.positions.len()
    }

    /// Checks that the mesh can be drawn skinned to a rig of `num_joints` joints: every joint a
    /// vertex names is one of the rig's, every index one of the mesh's vertices.
    ///
    /// # Errors
    /// [`MeshError::JointOutOfRange`] for the first vertex naming a joint past the rig's,
    /// [`MeshError::VertexOutOfRange`] for the first index past the vertices.
    pub fn validate(&self, num_joints: usize) -> Result<(), MeshError> {
        for (vertex, skinned) in self.joints.iter().enumerate() {
            if let Some(&joint) = skinned.iter().find(|&&j| usize::from(j) >= num_joints) {
                return Err(MeshError::JointOutOfRange { vertex, joint, joints: num_joints });
            }
        }
        let vertices = self.num_vertices();
        if let Some((index, &vertex)) = self.indices.iter().enumerate().find(|&(_, &v)| v as usize >= vertices) {
            return Err(MeshError::VertexOutOfRange { index, vertex, vertices });
        }
        Ok(())
    }

    /// The vertices as a vertex buffer holds them, one per position. A vertex without a normal
    /// gets +Y, one without joints joint 0, one without weights all of its weight on its first
    /// joint: a partial mesh still draws, rigidly.
    #[must_use]
    pub fn to_vertices(&self) -> Vec<SkinnedVertex> {
        (0..self.num_vertices())
            .map(|v| SkinnedVertex {
                position: self.positions[v],
                normal: self.normals.get(v).copied().unwrap_or([0.0, 1.0, 0.0]),
                joints: self.joints.get(v).copied().unwrap_or_default(),
                weights: self.weights.get(v).copied().unwrap_or([1.0, 0.0, 0.0, 0.0]),
            })
            .collect()
    }
}

/// One vertex of a [`SkinnedMesh`] in a vertex buffer, 48 bytes, as the viewer, the embedding
/// example and `throng-bevy` draw it. A vertex shader reads it through [`SkinnedVertex::LAYOUT`]
/// at these locations, and skins it with the character's matrices from throng's output:
///
/// | location | field | WGSL |
/// |---|---|---|
/// | 0 | `position` | `vec3<f32>` |
/// | 1 | `normal` | `vec3<f32>` |
/// | 2 | `joints` | `vec4<u32>` (`Uint16x4`, widened by the vertex fetch) |
/// | 3 | `weights` | `vec4<f32>` |
///
/// ```
/// use std::mem::{offset_of, size_of};
/// use throng::demo::DemoCharacter;
/// use throng::mesh::SkinnedVertex;
///
/// let demo = DemoCharacter::humanoid();
/// demo.mesh.validate(demo.rig.num_joints()).unwrap();
/// let vertices = demo.mesh.to_vertices();
/// assert_eq!(vertices.len(), demo.mesh.num_vertices());
/// assert_eq!(vertices[7].joints, demo.mesh.joints[7]);
/// let bytes: &[u8] = bytemuck::cast_slice(&vertices);
/// assert_eq!(bytes.len(), vertices.len() * 48);
///
/// // The layout describes the struct as Rust lays it out.
/// let layout = SkinnedVertex::LAYOUT;
/// assert_eq!(layout.array_stride, size_of::<SkinnedVertex>() as u64);
/// let offsets: Vec<u64> = layout.attributes.iter().map(|a| a.offset).collect();
/// let fields = [
///     offset_of!(SkinnedVertex, position),
///     offset_of!(SkinnedVertex, normal),
///     offset_of!(SkinnedVertex, joints),
///     offset_of!(SkinnedVertex, weights),
/// ];
/// assert_eq!(offsets, fields.map(|f| f as u64));
/// let locations: Vec<u32> = layout.attributes.iter().map(|a| a.shader_location).collect();
/// assert_eq!(locations, [0, 1, 2, 3]);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SkinnedVertex {
    /// Bind-pose position, metres, model space.
    pub position: [f32; 3],
    /// Bind-pose unit normal.
    pub normal: [f32; 3],
    /// Four joint indices into the rig.
    pub joints: [u16; 4],
    /// The four joints' weights, summing to one.
    pub weights: [f32; 4],
}

impl SkinnedVertex {
    /// The vertex attributes, at shader locations 0 to 3 in field order.
    pub const ATTRIBUTES: [wgpu::VertexAttribute; 4] =
        wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Uint16x4, 3 => Float32x4];

    /// The per-vertex buffer layout of a `SkinnedVertex` buffer; instance data goes in another
    /// buffer at locations from 4.
    pub const LAYOUT: wgpu::VertexBufferLayout<'static> = wgpu::VertexBufferLayout {
        array_stride: size_of::<Self>() as u64,
        step_mode: wgpu::VertexStepMode::Vertex,
        attributes: &Self::ATTRIBUTES,
    };
}
