//! Why a glTF file could not be imported: [`GltfError`].

use std::path::PathBuf;

use crate::clip::ClipError;
use crate::rig::RigError;
// Only named in docs.
#[cfg(doc)]
use super::{GltfAsset, GltfOptions};
#[cfg(doc)]
use crate::import::MAX_FILE_BYTES;

/// Why a glTF file could not be imported. Each variant names the buffer, accessor, skin, node or
/// animation at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GltfError {
    /// A file (the glTF itself or an external buffer) could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The glTF path or a buffer URI names a folder, device, FIFO or socket, not a regular file.
    #[error("cannot read {path}: not a regular file (a folder, device, FIFO or socket)")]
    NotAFile {
        /// The path (for a buffer, with symlinks resolved).
        path: PathBuf,
    },
    /// The glTF file is larger than [`MAX_FILE_BYTES`] (buffers too large are
    /// [`GltfError::BuffersTooLarge`]).
    #[error("cannot read {path}: {bytes} bytes is over the {max_bytes}-byte limit")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The file's size.
        bytes: u64,
        /// [`MAX_FILE_BYTES`].
        max_bytes: u64,
    },
    /// A buffer URI is an absolute path, or resolves (after `..` and symlinks) outside the
    /// asset's folder and every [`GltfOptions::extra_roots`] folder.
    #[error("buffer {buffer}: URI {uri:?} resolves to {path}, outside the asset's folder and the allowed roots")]
    UriOutsideRoot {
        /// The buffer index.
        buffer: usize,
        /// The URI (truncated to 64 characters).
        uri: String,
        /// Where it leads: the absolute path as written, or the resolved path.
        path: PathBuf,
    },
    /// The JSON is malformed or breaks the glTF schema (message from the `gltf` crate).
    #[error("not a valid glTF document: {message}")]
    Parse {
        /// The parser's or validator's message.
        message: String,
    },
    /// A `.glb` container is malformed: bad header, chunk lengths past the end of the file.
    #[error("malformed GLB: {what}")]
    Glb {
        /// What is wrong, with byte counts.
        what: String,
    },
    /// A buffer holds fewer bytes than its `byteLength` declares.
    #[error("buffer {buffer} is truncated: {declared_bytes} bytes declared, {actual_bytes} present")]
    TruncatedBuffer {
        /// The buffer index.
        buffer: usize,
        /// `byteLength` from the JSON.
        declared_bytes: usize,
        /// Bytes actually loaded.
        actual_bytes: usize,
    },
    /// A buffer URI this importer cannot load (a URL, a non-base64 data URI), or an external
    /// file when loading from a slice without a base folder.
    #[error("buffer {buffer}: cannot load URI {uri:?}: {why}")]
    UnsupportedUri {
        /// The buffer index.
        buffer: usize,
        /// The URI (truncated to 64 characters).
        uri: String,
        /// Why.
        why: &'static str,
    },
    /// A base64 data URI holds a character outside the base64 alphabet or is badly padded.
    #[error("buffer {buffer}: invalid base64 at character {position} of the data URI's payload")]
    Base64 {
        /// The buffer index.
        buffer: usize,
        /// Offset of the first bad character in the payload.
        position: usize,
    },
    /// A buffer with no URI in a file that has no GLB BIN chunk.
    #[error("buffer {buffer} has no URI and the file has no GLB BIN chunk")]
    MissingBinChunk {
        /// The buffer index.
        buffer: usize,
    },
    /// A buffer other than buffer 0 has no URI: glTF lets only the first buffer be the GLB
    /// BIN chunk, so any other URI-less buffer is invalid (and reading the chunk once per such
    /// buffer would let a file multiply itself in memory).
    #[error("buffer {buffer} has no URI, but only buffer 0 may be the GLB BIN chunk")]
    BinBufferNotFirst {
        /// The buffer index (never 0).
        buffer: usize,
    },
    /// The buffers' declared `byteLength`s add up to more than [`MAX_FILE_BYTES`] (one buffer
    /// alone, or many together: a `.gltf` whose buffers all name one file would read it once
    /// per buffer). Checked before any buffer is read.
    #[error("the buffers declare {bytes} bytes in all, over the {max_bytes}-byte limit")]
    BuffersTooLarge {
        /// The sum of every buffer's `byteLength`.
        bytes: u64,
        /// [`MAX_FILE_BYTES`].
        max_bytes: u64,
    },
    /// An accessor (or its buffer view) reaches past the end of the bytes it reads.
    #[error("accessor {accessor} is out of range: {what}")]
    AccessorOutOfRange {
        /// The accessor index.
        accessor: usize,
        /// The ranges involved.
        what: String,
    },
    /// An accessor's type or component type is not allowed for what it feeds.
    #[error("accessor {accessor} used as {semantic} is {found}; expected {expected}")]
    UnsupportedAccessor {
        /// The accessor index.
        accessor: usize,
        /// What it feeds (`"POSITION"`, `"animation 2 rotation output"`, …).
        semantic: String,
        /// What it is.
        found: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// The requested skin does not exist (`num_skins` 0: the file has no skin at all).
    #[error("skin {skin} requested but the file has {num_skins} skins")]
    SkinNotFound {
        /// The requested skin index.
        skin: usize,
        /// Skins in the file.
        num_skins: usize,
    },
    /// The inverse bind matrix accessor holds fewer matrices than the skin has joints.
    #[error(
        "skin {skin} has {joints} joints but its inverseBindMatrices accessor {accessor} holds {matrices} matrices"
    )]
    InverseBindCount {
        /// The skin index.
        skin: usize,
        /// The accessor index.
        accessor: usize,
        /// Matrices present.
        matrices: usize,
        /// Joints in the skin.
        joints: usize,
    },
    /// The node tree is not a tree (a cycle, a node with two parents, a joint listed twice).
    #[error("node {node}: {what}")]
    Hierarchy {
        /// The node index.
        node: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A non-joint node above a joint has non-uniform scale, which cannot be baked into the
    /// joint's translation, rotation and scale.
    #[error(
        "node {node} (above joint node {joint_node}) has non-uniform scale {scale:?}, which cannot be baked into the joint"
    )]
    NonUniformScale {
        /// The offending ancestor node.
        node: usize,
        /// The joint below it.
        joint_node: usize,
        /// Its scale.
        scale: [f32; 3],
    },
    /// The skin does not make a valid rig (over [`crate::MAX_JOINTS`] joints, NaN values…).
    #[error("skin {skin}: {source}")]
    Rig {
        /// The skin index.
        skin: usize,
        /// The rig's reason.
        source: RigError,
    },
    /// An animation's keys do not make a valid clip.
    #[error("animation {animation:?}: {source}")]
    Clip {
        /// The clip's name (see [`GltfAsset::clips`]).
        animation: String,
        /// The clip's reason (its joint indices are rig joints).
        source: ClipError,
    },
    /// An animation's `extras.events` is not a list of `{ "name": string, "time": seconds }`.
    #[error("animation {animation}: extras.events{at}: {what}")]
    BadEvents {
        /// The animation index.
        animation: usize,
        /// Where in the list (`""` for the list itself, `"[2].time"` for one entry's key).
        at: String,
        /// What is wrong.
        what: &'static str,
    },
    /// An animation's morph-weight channel cannot be read as curves: its node has no mesh or
    /// its mesh no morph targets, or its output is not one weight per key and target.
    #[error("animation {animation} channel {channel} (morph weights): {what}")]
    BadMorphWeights {
        /// The animation index.
        animation: usize,
        /// The channel index in the animation.
        channel: usize,
        /// What is wrong.
        what: String,
    },
    /// An animation's `extras.curves` is not an object of
    /// `{ "name": { "times": [seconds…], "values": [numbers…] } }`.
    #[error("animation {animation}: extras.curves{at}: {what}")]
    BadCurves {
        /// The animation index.
        animation: usize,
        /// Where (`""` for the object itself, `".planted.times"` for one curve's key).
        at: String,
        /// What is wrong.
        what: &'static str,
    },
    /// A skinned primitive lacks an attribute skinning needs.
    #[error("mesh {mesh} primitive {primitive} has no {semantic} attribute")]
    MissingAttribute {
        /// The mesh index.
        mesh: usize,
        /// The primitive index within the mesh.
        primitive: usize,
        /// The attribute.
        semantic: &'static str,
    },
    /// An attribute or the index list has the wrong length or an index out of range.
    #[error("mesh {mesh} primitive {primitive}: {what}")]
    BadPrimitive {
        /// The mesh index.
        mesh: usize,
        /// The primitive index within the mesh.
        primitive: usize,
        /// What is wrong.
        what: String,
    },
}
