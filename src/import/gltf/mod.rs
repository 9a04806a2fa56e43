//! glTF 2.0 import: one skin becomes a [`Rig`], the animations that move it become [`Clip`]s,
//! and the first mesh bound to it becomes a [`SkinnedMesh`].
//!
//! Buffers are loaded here rather than by the `gltf` crate's `import` feature (which pulls in
//! image decoders): `.gltf` files with external `.bin` files or base64 data URIs, and `.glb`
//! files with a BIN chunk. Every byte range is checked before it is read, so a truncated or
//! inconsistent file is a [`GltfError`] naming the buffer, view or accessor at fault.
//!
//! An external buffer's URI is a relative path, percent-decoded, that must resolve (after `..`
//! and symlinks) inside the asset's folder or one of [`GltfOptions::extra_roots`]; it must name
//! a regular file, of which only the declared `byteLength` is read. Images are never read.
//! `docs/errors.md`, "Reading files", states the whole policy.
//!
//! # How glTF maps onto throng
//! | glTF | throng |
//! |---|---|
//! | skin joints (any order) | rig joints, reordered parent-first (stable); [`GltfAsset::joint_nodes`] keeps the mapping |
//! | joint parent | nearest ancestor node that is a joint of the same skin |
//! | non-joint nodes above a joint (an armature, a Z-up to Y-up node) | their static transform is baked into that joint's rest pose and keys |
//! | node TRS (or matrix) | rest pose |
//! | `inverseBindMatrices` | [`Rig::inverse_bind`]; absent → derived from the baked rest pose |
//! | animation channels on skin joints | [`Track`]s resampled by [`Clip::from_tracks`], file key times kept |
//! | animation `extras.events`: `[{ "name": "footstep", "time": 0.4 }]` (seconds) | [`Clip::events`]; merged animations pool theirs; other `extras` are ignored |
//! | animation `extras.curves`: `{ "planted": { "times": […], "values": […] } }` | clip curves ([`Clip::curves`]), linear keys |
//! | animation channels with path `weights` (morph-target weights) | one clip curve per morph target of the node's mesh, named from the mesh's `extras.targetNames` (one string per target) where present, else `"{node name}/{i}"` (`node{n}` for an unnamed node); the sampler's interpolation kept; the first curve of a name wins (meshes sharing target names). Only animations that move the skin make clips, so an animation of weights alone makes none |
//! | `JOINTS_0` (skin joint indices) | rig joint indices |
//!
//! Baking the ancestors is what makes skinning match the glTF spec, where a joint matrix is the
//! joint's *global* transform times its inverse bind matrix and the mesh node's own transform is
//! ignored. It requires the baked ancestors to have uniform scale, so that the result is still a
//! translation, a rotation and a scale ([`GltfError::NonUniformScale`] otherwise).
//!
//! Sparse accessors are refused ([`GltfError::UnsupportedAccessor`]); vertex weights are
//! clamped at zero and renormalised to sum to one (a vertex with no weight follows its first
//! joint). Non-triangle primitives are skipped.
//!
//! When a skin has no `inverseBindMatrices` the spec says they are identity, which only makes
//! sense for a mesh authored in every joint's space at once; throng instead derives them from
//! the rest pose so that the rest pose skins to identity (the mesh is taken to be in its bind
//! pose, in the rig's model space).

//!
//! ```no_run
//! use std::path::Path;
//! use throng::import::gltf::{load_gltf, GltfOptions};
//!
//! let options = GltfOptions { merge_animations: true, ..GltfOptions::default() };
//! let asset = load_gltf(Path::new("RiggedFigure.gltf"), &options)?;
//! println!("{} joints, clip {:?} of {} s", asset.rig.num_joints(), asset.clips[0].name(), asset.clips[0].duration_s());
//! # Ok::<(), throng::import::gltf::GltfError>(())
//! ```

mod accessor;
mod clips;
mod container;
mod error;
mod mesh;
mod rig;
mod uri;

use std::path::{Path, PathBuf};

use super::{MAX_FILE_BYTES, read_regular_file};
use crate::clip::Clip;
use crate::mesh::SkinnedMesh;
use crate::rig::Rig;
// Only named in docs.
#[cfg(doc)]
use crate::clip::Track;

pub use container::decode_base64;
pub use error::GltfError;

use clips::build_clips;
use container::{check_unvalidated_indices, file_error, load_buffers, split_glb};
use mesh::build_mesh;
use rig::build_rig;

/// What to import from a glTF file.
#[derive(Clone, Debug, PartialEq)]
pub struct GltfOptions {
    /// Index of the skin that becomes the rig, into the file's `skins` array. Default 0.
    pub skin: usize,
    /// Rate at which animation keys are resampled, hertz; positive. Default 30.
    pub sample_rate_hz: f32,
    /// Loop flag given to every imported clip. Default true.
    pub looping: bool,
    /// Import every animation that moves the skin as ONE clip, named after the first such
    /// animation (or `"merged"` if it has no name). Some exporters write one clip as many
    /// animations of one channel each (RiggedFigure's walk is 19 of them). When two merged
    /// animations key the same joint property, the later animation wins. Default false.
    pub merge_animations: bool,
    /// Folders besides the asset's own that external buffer URIs may resolve into (a shared
    /// `textures/` or `buffers/` folder beside several assets). A URI is accepted only if its
    /// file, symlinks resolved, lies inside the asset's folder or one of these; folders that do
    /// not exist are skipped. Default empty: the asset's folder alone. See "Reading files" in
    /// `docs/errors.md`.
    pub extra_roots: Vec<PathBuf>,
}

impl Default for GltfOptions {
    fn default() -> Self {
        Self { skin: 0, sample_rate_hz: 30.0, looping: true, merge_animations: false, extra_roots: Vec::new() }
    }
}

/// What a glTF file yields for one skin.
#[derive(Clone, Debug, PartialEq)]
pub struct GltfAsset {
    /// The skin as a rig, joints parent-first.
    pub rig: Rig,
    /// Clips of the animations that move the skin, in file order (one clip when
    /// [`GltfOptions::merge_animations`] is set). Animations that touch no joint of the skin are
    /// skipped. An unnamed animation is called `animation<index>`.
    pub clips: Vec<Clip>,
    /// The first mesh of a node that uses the skin, its triangle primitives merged into one;
    /// `None` when no node uses the skin or the mesh has no triangles.
    pub mesh: Option<SkinnedMesh>,
    /// For each rig joint, the glTF node it came from.
    pub joint_nodes: Vec<usize>,
    /// For each rig joint, its position in the skin's `joints` array (what `JOINTS_0` indexed
    /// before remapping).
    pub skin_joint_indices: Vec<usize>,
    /// For each clip, the indices of the glTF animations it was built from.
    pub clip_animations: Vec<Vec<usize>>,
}

/// Loads a `.gltf` (with its external buffers, resolved against its folder) or a `.glb` file;
/// which one is decided by the content (a GLB starts with `glTF`), not the extension. The file
/// must be a regular file of at most [`MAX_FILE_BYTES`]; buffer URIs must stay inside its
/// folder or [`GltfOptions::extra_roots`] ("Reading files" in `docs/errors.md`).
pub fn load_gltf(path: &Path, options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    let bytes = read_regular_file(path, MAX_FILE_BYTES).map_err(|e| file_error(path.to_owned(), e))?;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    load_gltf_from_slice(&bytes, Some(folder), options)
}

/// Loads glTF JSON or GLB bytes. External buffer URIs are resolved against `base_dir` and must
/// stay inside it or [`GltfOptions::extra_roots`]; with `None` only data URIs and the GLB BIN
/// chunk can be loaded.
pub fn load_gltf_from_slice(
    bytes: &[u8],
    base_dir: Option<&Path>,
    options: &GltfOptions,
) -> Result<GltfAsset, GltfError> {
    let (json, bin) = if bytes.starts_with(b"glTF") { split_glb(bytes)? } else { (bytes, None) };
    let root: gltf::json::Root =
        gltf::json::deserialize::from_slice(json).map_err(|e| GltfError::Parse { message: e.to_string() })?;
    check_unvalidated_indices(&root)?;
    let document = gltf::Document::from_json(root).map_err(|e| GltfError::Parse { message: e.to_string() })?;
    let buffers = load_buffers(&document, bin, base_dir, &options.extra_roots)?;
    import_skin(&document, &buffers, options)
}

fn import_skin(doc: &gltf::Document, buffers: &[Vec<u8>], options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    let skin = doc
        .skins()
        .nth(options.skin)
        .ok_or(GltfError::SkinNotFound { skin: options.skin, num_skins: doc.skins().len() })?;
    let skin_rig = build_rig(doc, buffers, &skin)?;
    let (clips, clip_animations) = build_clips(doc, buffers, &skin_rig, options)?;
    let mesh = build_mesh(doc, buffers, &skin_rig, options.skin)?;
    Ok(GltfAsset {
        clips,
        mesh,
        clip_animations,
        joint_nodes: skin_rig.joint_nodes,
        skin_joint_indices: skin_rig.skin_joint_indices,
        rig: skin_rig.rig,
    })
}
