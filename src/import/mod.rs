//! Importers: glTF 2.0 and BVH files into rigs, clips and skinned meshes. They yield data
//! only and know nothing of the runtime.

pub mod bvh;
pub mod gltf;
