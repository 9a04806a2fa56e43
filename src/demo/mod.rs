//! The built-in demo character (placeholder until the demo module lands).
use crate::{clip::Clip, mesh::SkinnedMesh, rig::Rig};
pub struct DemoCharacter { pub rig: Rig, pub clips: Vec<Clip>, pub mesh: SkinnedMesh }
impl DemoCharacter {
    pub fn humanoid() -> Self { todo!() }
    pub fn clip_index(&self, name: &str) -> Option<usize> { self.clips.iter().position(|c| c.name() == name) }
}
