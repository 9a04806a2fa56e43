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

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use glam::{Mat4, Quat, Vec3};
use gltf::accessor::{DataType, Dimensions};
use gltf::animation::{Interpolation as GltfInterpolation, Property};
use gltf::mesh::{Mode, Semantic};

use super::{FileError, MAX_FILE_BYTES, open_regular_file, read_regular_file};
use crate::clip::{Clip, ClipError, ClipEvent, Interpolation, JointTracks, Track};
use crate::mesh::SkinnedMesh;
use crate::rig::{Rig, RigError, Transform};

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
    #[error("skin {skin} has {joints} joints but its inverseBindMatrices accessor {accessor} holds {matrices} matrices")]
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
    #[error("node {node} (above joint node {joint_node}) has non-uniform scale {scale:?}, which cannot be baked into the joint")]
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
pub fn load_gltf_from_slice(bytes: &[u8], base_dir: Option<&Path>, options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    let (json, bin) = if bytes.starts_with(b"glTF") { split_glb(bytes)? } else { (bytes, None) };
    let root: gltf::json::Root = gltf::json::deserialize::from_slice(json).map_err(|e| GltfError::Parse { message: e.to_string() })?;
    check_unvalidated_indices(&root)?;
    let document = gltf::Document::from_json(root).map_err(|e| GltfError::Parse { message: e.to_string() })?;
    let buffers = load_buffers(&document, bin, base_dir, &options.extra_roots)?;
    import_skin(&document, &buffers, options)
}

/// Indices and names gltf 1.4 trusts without checking, each found by fuzzing: its validation
/// reads a primitive's POSITION accessor before checking that it exists, and it never validates
/// animation channel targets, whose accessors (`Target::node`, `Target::property`) unwrap. Each
/// would panic; refuse them before validating.
fn check_unvalidated_indices(root: &gltf::json::Root) -> Result<(), GltfError> {
    use gltf::json::validation::Checked;
    for (mesh, m) in root.meshes.iter().enumerate() {
        for (primitive, p) in m.primitives.iter().enumerate() {
            if let Some(index) = p.attributes.get(&Checked::Valid(Semantic::Positions))
                && index.value() >= root.accessors.len()
            {
                return Err(GltfError::BadPrimitive {
                    mesh,
                    primitive,
                    what: format!("POSITION names accessor {}, but the file has {}", index.value(), root.accessors.len()),
                });
            }
        }
    }
    for (animation, a) in root.animations.iter().enumerate() {
        for (channel, c) in a.channels.iter().enumerate() {
            let at = format!("animation {animation} channel {channel}");
            if c.target.node.value() >= root.nodes.len() {
                let message = format!("{at} targets node {}, but the file has {} nodes", c.target.node.value(), root.nodes.len());
                return Err(GltfError::Parse { message });
            }
            if matches!(c.target.path, Checked::Invalid) {
                let message = format!("{at}: target path is not translation, rotation, scale or weights");
                return Err(GltfError::Parse { message });
            }
        }
    }
    Ok(())
}

/// Decodes standard base64 (RFC 4648 alphabet, `=` padding optional). The error is the offset
/// of the first character that is not valid there.
pub fn decode_base64(text: &[u8]) -> Result<Vec<u8>, usize> {
    let payload_len = text.iter().rposition(|&c| c != b'=').map_or(0, |i| i + 1);
    let padding = text.len() - payload_len;
    if padding > 2 || (padding > 0 && !text.len().is_multiple_of(4)) || payload_len % 4 == 1 {
        return Err(payload_len);
    }
    let mut out = Vec::with_capacity(payload_len / 4 * 3 + 2);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for (i, &c) in text[..payload_len].iter().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(i),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Containers and buffers

/// Splits a GLB into its JSON chunk and optional BIN chunk, checking every length against the
/// bytes present (the `gltf` crate's own splitter underflows on a header length below 12).
fn split_glb(file: &[u8]) -> Result<(&[u8], Option<&[u8]>), GltfError> {
    let glb = |what: String| GltfError::Glb { what };
    let word_at = |bytes: &[u8], at: usize| -> Option<u32> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(declared)) = (word_at(file, 4), word_at(file, 8)) else {
        return Err(glb(format!("{} bytes is shorter than the 12-byte header", file.len())));
    };
    if version != 2 {
        return Err(glb(format!("version {version}, only 2 is supported")));
    }
    let declared = declared as usize;
    if declared > file.len() {
        return Err(glb(format!("truncated: header declares {declared} bytes, {} present", file.len())));
    }
    let bytes = &file[..declared];
    // One chunk at `at`: its type and contents, checked against the declared length.
    let chunk = |at: usize| -> Result<([u8; 4], &[u8], usize), GltfError> {
        let (Some(len), Some(kind)) = (word_at(bytes, at), word_at(bytes, at + 4)) else {
            return Err(glb(format!("chunk header at byte {at} runs past the declared {declared} bytes")));
        };
        let start = at + 8;
        let end = start.checked_add(len as usize).filter(|&e| e <= declared).ok_or_else(|| {
            glb(format!("chunk at byte {at} declares {len} bytes but only {} remain", declared.saturating_sub(start)))
        })?;
        Ok((kind.to_le_bytes(), &bytes[start..end], end))
    };
    let (kind, json, end) = chunk(12)?;
    if &kind != b"JSON" {
        return Err(glb(format!("first chunk has type {:?}, expected JSON", String::from_utf8_lossy(&kind))));
    }
    if end >= declared {
        return Ok((json, None));
    }
    let (kind, bin, _) = chunk(end)?;
    if &kind != b"BIN\0" {
        return Err(glb(format!("second chunk has type {:?}, expected BIN", String::from_utf8_lossy(&kind))));
    }
    Ok((json, Some(bin)))
}

/// Loads every buffer, each cut to its declared `byteLength`. Every buffer is checked before
/// any is read, so the bytes read in all never pass [`MAX_FILE_BYTES`] whatever the JSON lists.
fn load_buffers(doc: &gltf::Document, bin: Option<&[u8]>, base_dir: Option<&Path>, extra_roots: &[PathBuf]) -> Result<Vec<Vec<u8>>, GltfError> {
    let mut total_bytes: u64 = 0;
    for buffer in doc.buffers() {
        if buffer.index() != 0 && matches!(buffer.source(), gltf::buffer::Source::Bin) {
            return Err(GltfError::BinBufferNotFirst { buffer: buffer.index() });
        }
        total_bytes = total_bytes.saturating_add(buffer.length() as u64);
    }
    if total_bytes > MAX_FILE_BYTES {
        return Err(GltfError::BuffersTooLarge { bytes: total_bytes, max_bytes: MAX_FILE_BYTES });
    }
    let mut buffers = Vec::with_capacity(doc.buffers().len());
    for buffer in doc.buffers() {
        let index = buffer.index();
        let declared_bytes = buffer.length();
        let mut data = match buffer.source() {
            gltf::buffer::Source::Bin => {
                // Only buffer 0 (checked above), and only its declared bytes: the chunk may be
                // far longer than what the JSON says it holds.
                let chunk = bin.ok_or(GltfError::MissingBinChunk { buffer: index })?;
                let bytes = chunk.get(..declared_bytes).ok_or(GltfError::TruncatedBuffer {
                    buffer: index,
                    declared_bytes,
                    actual_bytes: chunk.len(),
                })?;
                bytes.to_vec()
            }
            gltf::buffer::Source::Uri(uri) => load_uri(index, uri, declared_bytes, base_dir, extra_roots)?,
        };
        if data.len() < declared_bytes {
            return Err(GltfError::TruncatedBuffer { buffer: index, declared_bytes, actual_bytes: data.len() });
        }
        // A data URI may decode to more than its declared length; views address only that.
        data.truncate(declared_bytes);
        buffers.push(data);
    }
    Ok(buffers)
}

/// A buffer's bytes from a data URI, or at most `declared_bytes` of the file a relative URI
/// names (never more, so a huge file costs no more than its declared part).
fn load_uri(buffer: usize, uri: &str, declared_bytes: usize, base_dir: Option<&Path>, extra_roots: &[PathBuf]) -> Result<Vec<u8>, GltfError> {
    let unsupported = |why| GltfError::UnsupportedUri { buffer, uri: uri.chars().take(64).collect(), why };
    if let Some(rest) = uri.strip_prefix("data:") {
        let (_, payload) = rest.split_once(";base64,").ok_or_else(|| unsupported("only base64 data URIs are supported"))?;
        return decode_base64(payload.as_bytes()).map_err(|position| GltfError::Base64 { buffer, position });
    }
    if uri.contains("://") {
        return Err(unsupported("only relative file names and data URIs are supported"));
    }
    let decoded = percent_decode(uri).ok_or_else(|| unsupported("malformed percent-encoding (or not UTF-8 once decoded)"))?;
    let relative = Path::new(&decoded);
    if relative.components().any(|c| matches!(c, Component::RootDir | Component::Prefix(_))) {
        return Err(GltfError::UriOutsideRoot { buffer, uri: uri.chars().take(64).collect(), path: relative.to_owned() });
    }
    let base_dir = base_dir.ok_or_else(|| unsupported("an external file needs a base folder"))?;
    let path = resolve_inside_roots(buffer, uri, relative, base_dir, extra_roots)?;
    // `load_buffers` refused every total over the cap before reading any buffer.
    let declared = declared_bytes as u64;
    debug_assert!(declared <= MAX_FILE_BYTES);
    let (file, file_bytes) = open_regular_file(&path).map_err(|e| file_error(path.clone(), e))?;
    if file_bytes < declared {
        return Err(GltfError::TruncatedBuffer { buffer, declared_bytes, actual_bytes: file_bytes as usize });
    }
    let mut data = Vec::with_capacity(declared_bytes);
    file.take(declared).read_to_end(&mut data).map_err(|source| GltfError::Io { path, source })?;
    Ok(data)
}

/// The file a relative buffer URI names, symlinks resolved, if it lies inside `base_dir` or an
/// extra root (each compared once canonicalised). A `..` that leaves every root is refused
/// before the file it names is looked at; the resolved path is then checked again, which
/// catches symlinks.
fn resolve_inside_roots(buffer: usize, uri: &str, relative: &Path, base_dir: &Path, extra_roots: &[PathBuf]) -> Result<PathBuf, GltfError> {
    let outside = |path: PathBuf| GltfError::UriOutsideRoot { buffer, uri: uri.chars().take(64).collect(), path };
    let base = base_dir.canonicalize().map_err(|source| GltfError::Io { path: base_dir.to_owned(), source })?;
    let roots: Vec<PathBuf> = std::iter::once(base.clone()).chain(extra_roots.iter().filter_map(|r| r.canonicalize().ok())).collect();
    let inside = |path: &Path| roots.iter().any(|root| path.starts_with(root));
    let lexical = normalize_lexically(&base.join(relative));
    if !inside(&lexical) {
        return Err(outside(lexical));
    }
    let joined = base_dir.join(relative);
    let resolved = joined.canonicalize().map_err(|source| GltfError::Io { path: joined, source })?;
    if !inside(&resolved) {
        return Err(outside(resolved));
    }
    Ok(resolved)
}

/// `path` with `.` dropped and each `..` removing the component before it, without asking the
/// file system (so symlinks are not followed: the caller checks the resolved path too).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes `%XX` escapes (glTF URIs are RFC 3986 references: `my%20rig.bin`); `None` for a
/// `%` not followed by two hex digits or a result that is not UTF-8.
fn percent_decode(uri: &str) -> Option<String> {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The [`GltfError`] for a file the policy refused.
fn file_error(path: PathBuf, error: FileError) -> GltfError {
    match error {
        FileError::Io(source) => GltfError::Io { path, source },
        FileError::NotAFile => GltfError::NotAFile { path },
        FileError::TooLarge { bytes, max_bytes } => GltfError::FileTooLarge { path, bytes, max_bytes },
    }
}

// ---------------------------------------------------------------------------------------------
// Accessors

/// The component types one use of an accessor accepts.
#[derive(Clone, Copy)]
enum Accept {
    /// 32-bit floats only.
    Float,
    /// Floats, or normalised integers of the listed types (rotations, weights).
    FloatOrNormalized(&'static [DataType]),
    /// Unsigned integers of the listed types (indices, joints).
    Unsigned(&'static [DataType]),
}

fn accept_description(accept: Accept) -> &'static str {
    match accept {
        Accept::Float => "FLOAT",
        Accept::FloatOrNormalized(_) => "FLOAT or normalized integer",
        Accept::Unsigned(_) => "an unsigned integer type",
    }
}

fn component_size(t: DataType) -> usize {
    match t {
        DataType::I8 | DataType::U8 => 1,
        DataType::I16 | DataType::U16 => 2,
        DataType::U32 | DataType::F32 => 4,
    }
}

/// Reads an accessor's components, flattened (`count * components`), as `f32`: floats as they
/// are, normalised integers mapped to [0, 1] or [-1, 1], unsigned integers as their value
/// (exact up to 2^24, far beyond any vertex or joint count this importer accepts).
fn read_accessor(
    buffers: &[Vec<u8>],
    accessor: &gltf::Accessor,
    semantic: &dyn Fn() -> String,
    dims: Dimensions,
    accept: Accept,
) -> Result<Vec<f32>, GltfError> {
    let index = accessor.index();
    let data_type = accessor.data_type();
    let unsupported = |found: String| GltfError::UnsupportedAccessor {
        accessor: index,
        semantic: semantic(),
        found,
        expected: accept_description(accept),
    };
    let type_ok = match accept {
        Accept::Float => data_type == DataType::F32,
        Accept::FloatOrNormalized(ints) => data_type == DataType::F32 || (accessor.normalized() && ints.contains(&data_type)),
        Accept::Unsigned(ints) => ints.contains(&data_type),
    };
    if !type_ok || accessor.dimensions() != dims {
        return Err(unsupported(format!(
            "{:?} of {:?}{}",
            accessor.dimensions(),
            data_type,
            if accessor.normalized() { " (normalized)" } else { "" }
        )));
    }
    if accessor.sparse().is_some() {
        return Err(unsupported("sparse storage".into()));
    }
    let view = accessor.view().ok_or_else(|| unsupported("without a buffer view".into()))?;
    let out_of_range = |what: String| GltfError::AccessorOutOfRange { accessor: index, what };
    let buffer_index = view.buffer().index();
    let buffer = buffers.get(buffer_index).map_or(&[][..], Vec::as_slice);
    let view_bytes = view
        .offset()
        .checked_add(view.length())
        .and_then(|end| buffer.get(view.offset()..end))
        .ok_or_else(|| {
            out_of_range(format!(
                "buffer view {} spans bytes {}..{} of buffer {buffer_index}, which has {} bytes",
                view.index(),
                view.offset(),
                view.offset().saturating_add(view.length()),
                buffer.len()
            ))
        })?;
    let num_components = dims.multiplicity();
    let comp_size = component_size(data_type);
    let element_size = num_components * comp_size;
    let stride = view.stride().unwrap_or(element_size);
    if stride < element_size {
        return Err(out_of_range(format!("buffer view {} stride {stride} is below the element size {element_size}", view.index())));
    }
    let count = accessor.count();
    if count == 0 {
        return Ok(Vec::new());
    }
    let end = (count - 1)
        .checked_mul(stride)
        .and_then(|b| b.checked_add(accessor.offset()))
        .and_then(|b| b.checked_add(element_size))
        .filter(|&end| end <= view_bytes.len())
        .ok_or_else(|| {
            out_of_range(format!(
                "{count} elements of {element_size} bytes at offset {} with stride {stride} do not fit buffer view {} ({} bytes)",
                accessor.offset(),
                view.index(),
                view_bytes.len()
            ))
        })?;
    let bytes = &view_bytes[accessor.offset()..end];
    let normalize = matches!(accept, Accept::FloatOrNormalized(_));
    let mut out = Vec::with_capacity(count * num_components);
    for element in 0..count {
        let base = element * stride;
        for c in 0..num_components {
            let b = &bytes[base + c * comp_size..base + (c + 1) * comp_size];
            let value = match data_type {
                DataType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                DataType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32,
                DataType::U16 => {
                    let v = f32::from(u16::from_le_bytes([b[0], b[1]]));
                    if normalize { v / 65535.0 } else { v }
                }
                DataType::I16 => {
                    let v = f32::from(i16::from_le_bytes([b[0], b[1]]));
                    if normalize { (v / 32767.0).max(-1.0) } else { v }
                }
                DataType::U8 => {
                    let v = f32::from(b[0]);
                    if normalize { v / 255.0 } else { v }
                }
                DataType::I8 => {
                    let v = f32::from(b[0] as i8);
                    if normalize { (v / 127.0).max(-1.0) } else { v }
                }
            };
            out.push(value);
        }
    }
    Ok(out)
}

fn vec3s(flat: &[f32]) -> Vec<Vec3> {
    flat.chunks_exact(3).map(Vec3::from_slice).collect()
}

// ---------------------------------------------------------------------------------------------
// Skin → rig

/// A similarity transform (uniform scale), the part of a node's ancestors baked into a joint.
#[derive(Clone, Copy, Debug)]
struct Similarity {
    translation: Vec3,
    rotation: Quat,
    scale: f32,
}

impl Similarity {
    const IDENTITY: Self = Self { translation: Vec3::ZERO, rotation: Quat::IDENTITY, scale: 1.0 };

    /// `self * child`, where `child` has uniform scale `s`.
    fn then(&self, t: Vec3, r: Quat, s: f32) -> Self {
        Self {
            translation: self.point(t),
            rotation: (self.rotation * r).normalize(),
            scale: self.scale * s,
        }
    }

    fn point(&self, p: Vec3) -> Vec3 {
        self.translation + self.rotation * (self.scale * p)
    }

    fn vector(&self, v: Vec3) -> Vec3 {
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

fn node_transform(node: &gltf::Node) -> Transform {
    let (t, r, s) = node.transform().decomposed();
    Transform { translation: Vec3::from(t), rotation: Quat::from_array(r), scale: Vec3::from(s) }
}

/// Each node's parent, checking that the nodes form a forest.
fn node_parents(doc: &gltf::Document) -> Result<Vec<Option<usize>>, GltfError> {
    let mut parents = vec![None; doc.nodes().len()];
    for node in doc.nodes() {
        for child in node.children() {
            let slot = parents.get_mut(child.index()).ok_or(GltfError::Hierarchy { node: child.index(), what: "child index out of range" })?;
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

struct SkinRig {
    rig: Rig,
    /// glTF node of each rig joint.
    joint_nodes: Vec<usize>,
    /// Skin `joints` position of each rig joint.
    skin_joint_indices: Vec<usize>,
    /// Rig joint of each skin `joints` position.
    rig_joint_of_skin: Vec<u16>,
    /// Transform of non-joint ancestors baked into each rig joint.
    baked: Vec<Similarity>,
}

fn build_rig(doc: &gltf::Document, buffers: &[Vec<u8>], skin: &gltf::Skin) -> Result<SkinRig, GltfError> {
    let skin_index = skin.index();
    let parents = node_parents(doc)?;
    let nodes: Vec<gltf::Node> = doc.nodes().collect();
    let skin_nodes: Vec<usize> = skin.joints().map(|n| n.index()).collect();
    // Refused before the hierarchy walks below, whose cost grows with the joint count.
    if skin_nodes.len() > crate::MAX_JOINTS {
        return Err(GltfError::Rig { skin: skin_index, source: RigError::TooManyJoints { num_joints: skin_nodes.len() } });
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
            let flat = read_accessor(buffers, &accessor, &|| format!("skin {skin_index} inverseBindMatrices"), Dimensions::Mat4, Accept::Float)?;
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
    let rig = Rig::new(names, rig_parents, rest, inverse_bind).map_err(|source| GltfError::Rig { skin: skin_index, source })?;
    Ok(SkinRig {
        rig,
        joint_nodes: order.iter().map(|&pos| skin_nodes[pos]).collect(),
        baked: order.iter().map(|&pos| baked[pos]).collect(),
        skin_joint_indices: order,
        rig_joint_of_skin: rig_of_skin,
    })
}

// ---------------------------------------------------------------------------------------------
// Animations → clips

/// Adds one animation's channels on skin joints to `tracks`; returns whether any channel
/// touched the skin.
fn add_animation_tracks(
    animation: &gltf::Animation,
    buffers: &[Vec<u8>],
    skin: &SkinRig,
    tracks: &mut [JointTracks],
) -> Result<bool, GltfError> {
    let joint_of_node: HashMap<usize, usize> = skin.joint_nodes.iter().enumerate().map(|(j, &n)| (n, j)).collect();
    let anim = animation.index();
    let mut touched = false;
    for channel in animation.channels() {
        let property = channel.target().property();
        let Some(&joint) = joint_of_node.get(&channel.target().node().index()) else { continue };
        if property == Property::MorphTargetWeights {
            continue;
        }
        let sampler = channel.sampler();
        let interpolation = match sampler.interpolation() {
            GltfInterpolation::Linear => Interpolation::Linear,
            GltfInterpolation::Step => Interpolation::Step,
            GltfInterpolation::CubicSpline => Interpolation::CubicSpline,
        };
        let times_s = read_accessor(
            buffers,
            &sampler.input(),
            &|| format!("animation {anim} sampler {} input", sampler.index()),
            Dimensions::Scalar,
            Accept::Float,
        )?;
        let output = sampler.output();
        let what = |name: &str| format!("animation {anim} sampler {} {name} output", sampler.index());
        let baked = skin.baked[joint];
        // Baking is linear in the key values (for rotations, left-multiplication by a unit
        // quaternion), so tangents are transformed by the same map without the translation,
        // and LINEAR, STEP and CUBICSPLINE curves all commute with it.
        let cubic = interpolation == Interpolation::CubicSpline;
        let is_value = |i: usize| !cubic || i % 3 == 1;
        let jt = &mut tracks[joint];
        match property {
            Property::Translation | Property::Scale => {
                let values = vec3s(&read_accessor(buffers, &output, &|| what("vector"), Dimensions::Vec3, Accept::Float)?);
                if property == Property::Translation {
                    let values = values
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| if is_value(i) { baked.point(v) } else { baked.vector(v) })
                        .collect();
                    jt.translation = Some(Track { times_s, values, interpolation });
                } else {
                    let values = values.iter().map(|&v| v * baked.scale).collect();
                    jt.scale = Some(Track { times_s, values, interpolation });
                }
            }
            Property::Rotation => {
                const INTS: &[DataType] = &[DataType::I8, DataType::U8, DataType::I16, DataType::U16];
                let flat = read_accessor(buffers, &output, &|| what("rotation"), Dimensions::Vec4, Accept::FloatOrNormalized(INTS))?;
                let values = flat.chunks_exact(4).map(|q| baked.rotation * Quat::from_slice(q)).collect();
                jt.rotation = Some(Track { times_s, values, interpolation });
            }
            // Skipped before any accessor is read, so a malformed weights channel is ignored too.
            Property::MorphTargetWeights => continue,
        }
        touched = true;
    }
    Ok(touched)
}

/// An animation's events from its `extras` (`{ "events": [{ "name": "footstep", "time": 0.4 }] }`),
/// appended to `out`. Extras without `events` (other tools' data) add nothing.
fn animation_events(animation: &gltf::Animation, out: &mut Vec<ClipEvent>) -> Result<(), GltfError> {
    let index = animation.index();
    let bad = |at: String, what| GltfError::BadEvents { animation: index, at, what };
    let Some(raw) = animation.extras() else {
        return Ok(());
    };
    let Ok(serde_json::Value::Object(extras)) = serde_json::from_str::<serde_json::Value>(raw.get()) else {
        return Ok(());
    };
    let Some(events) = extras.get("events") else {
        return Ok(());
    };
    let list = events.as_array().ok_or_else(|| bad(String::new(), "expected an array of events"))?;
    for (i, e) in list.iter().enumerate() {
        let name = e.get("name").and_then(serde_json::Value::as_str).ok_or_else(|| bad(format!("[{i}].name"), "expected a string"))?;
        let time_s = e.get("time").and_then(serde_json::Value::as_f64).ok_or_else(|| bad(format!("[{i}].time"), "expected a number of seconds"))?;
        out.push(ClipEvent::new(name, time_s as f32));
    }
    Ok(())
}

fn build_clips(doc: &gltf::Document, buffers: &[Vec<u8>], skin: &SkinRig, options: &GltfOptions) -> Result<(Vec<Clip>, Vec<Vec<usize>>), GltfError> {
    let num_joints = skin.rig.num_joints();
    let name_of = |a: &gltf::Animation| a.name().map_or_else(|| format!("animation{}", a.index()), str::to_owned);
    let make = |name: String, tracks: &[JointTracks], events: Vec<ClipEvent>| {
        Clip::from_tracks(name.clone(), &skin.rig, tracks, options.sample_rate_hz, options.looping)
            .and_then(|clip| clip.with_events(events))
            .map_err(|source| GltfError::Clip { animation: name, source })
    };
    let mut clips = Vec::new();
    let mut sources = Vec::new();
    if options.merge_animations {
        let mut tracks = vec![JointTracks::default(); num_joints];
        let mut used = Vec::new();
        let mut name = None;
        let mut events = Vec::new();
        for animation in doc.animations() {
            if add_animation_tracks(&animation, buffers, skin, &mut tracks)? {
                name.get_or_insert_with(|| animation.name().unwrap_or("merged").to_owned());
                used.push(animation.index());
                animation_events(&animation, &mut events)?;
            }
        }
        if let Some(name) = name {
            clips.push(make(name, &tracks, events)?);
            sources.push(used);
        }
    } else {
        for animation in doc.animations() {
            let mut tracks = vec![JointTracks::default(); num_joints];
            if add_animation_tracks(&animation, buffers, skin, &mut tracks)? {
                let mut events = Vec::new();
                animation_events(&animation, &mut events)?;
                clips.push(make(name_of(&animation), &tracks, events)?);
                sources.push(vec![animation.index()]);
            }
        }
    }
    Ok((clips, sources))
}

// ---------------------------------------------------------------------------------------------
// Mesh

fn build_mesh(doc: &gltf::Document, buffers: &[Vec<u8>], skin: &SkinRig, skin_index: usize) -> Result<Option<SkinnedMesh>, GltfError> {
    let Some(mesh) = doc.nodes().filter(|n| n.skin().is_some_and(|s| s.index() == skin_index)).find_map(|n| n.mesh()) else {
        return Ok(None);
    };
    let mesh_index = mesh.index();
    let mut out = SkinnedMesh::default();
    let mut any = false;
    for primitive in mesh.primitives().filter(|p| p.mode() == Mode::Triangles) {
        let prim = primitive.index();
        let bad = |what: String| GltfError::BadPrimitive { mesh: mesh_index, primitive: prim, what };
        let attribute = |semantic: Semantic, label: &'static str| {
            primitive.get(&semantic).ok_or(GltfError::MissingAttribute { mesh: mesh_index, primitive: prim, semantic: label })
        };
        let label = |s: &'static str| move || format!("mesh {mesh_index} primitive {prim} {s}");
        let positions = vec3s(&read_accessor(buffers, &attribute(Semantic::Positions, "POSITION")?, &label("POSITION"), Dimensions::Vec3, Accept::Float)?);
        let num_vertices = positions.len();
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(bad(format!("POSITION of vertex {v} is not finite")));
        }
        let check_len = |what: &str, n: usize| {
            if n == num_vertices { Ok(()) } else { Err(bad(format!("{what} has {n} entries for {num_vertices} positions"))) }
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
            Some(a) => read_accessor(buffers, &a, &label("indices"), Dimensions::Scalar, Accept::Unsigned(&[DataType::U8, DataType::U16, DataType::U32]))?
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
                    bad(format!("vertex {vertex} JOINTS_0 names skin joint {skin_joint}; the skin has {}", skin.rig_joint_of_skin.len()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64(b"").unwrap(), b"");
        assert_eq!(decode_base64(b"TWFu").unwrap(), b"Man");
        assert_eq!(decode_base64(b"TWE=").unwrap(), b"Ma");
        assert_eq!(decode_base64(b"TWE").unwrap(), b"Ma");
        assert_eq!(decode_base64(b"TQ==").unwrap(), b"M");
        assert_eq!(decode_base64(b"AACAPw==").unwrap(), 1.0f32.to_le_bytes());
        assert_eq!(decode_base64(b"+/+/").unwrap(), [0xfb, 0xff, 0xbf]);
    }

    #[test]
    fn base64_reports_first_bad_character() {
        assert_eq!(decode_base64(b"TW!u"), Err(2));
        assert_eq!(decode_base64(b"TWFuT"), Err(5), "a lone trailing character is no byte");
        assert_eq!(decode_base64(b"T==="), Err(1), "three padding characters");
        assert_eq!(decode_base64(b"TQ=").map_err(|_| ()), Err(()), "padding of a partial quad");
    }

    #[test]
    fn glb_splitter_refuses_bad_headers() {
        assert!(matches!(split_glb(b"glTF"), Err(GltfError::Glb { .. })));
        let mut glb = b"glTF".to_vec();
        glb.extend(2u32.to_le_bytes());
        glb.extend(4u32.to_le_bytes()); // below the header's own 12 bytes
        assert!(matches!(split_glb(&glb), Err(GltfError::Glb { .. })));
    }
}
