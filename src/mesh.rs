//! Skinned meshes: vertex data for the viewer and for engines that draw throng's output.

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

impl SkinnedMesh {
    /// Number of vertices.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.positions.len()
    }
}
