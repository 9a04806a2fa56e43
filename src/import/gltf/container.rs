//! The containers: glTF JSON or GLB chunks, and the buffers they name (GLB BIN chunk, data URIs,
//! external files confined by [`super::uri`]).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use gltf::mesh::Semantic;

use super::GltfError;
use super::uri::{percent_decode, resolve_inside_roots};
use crate::import::{FileError, MAX_FILE_BYTES, open_regular_file};

/// Indices and names gltf 1.4 trusts without checking, each found by fuzzing: its validation
/// reads a primitive's POSITION accessor before checking that it exists, and it never validates
/// animation channel targets, whose accessors (`Target::node`, `Target::property`) unwrap. Each
/// would panic; refuse them before validating.
pub(super) fn check_unvalidated_indices(root: &gltf::json::Root) -> Result<(), GltfError> {
    use gltf::json::validation::Checked;
    for (mesh, m) in root.meshes.iter().enumerate() {
        for (primitive, p) in m.primitives.iter().enumerate() {
            if let Some(index) = p.attributes.get(&Checked::Valid(Semantic::Positions))
                && index.value() >= root.accessors.len()
            {
                return Err(GltfError::BadPrimitive {
                    mesh,
                    primitive,
                    what: format!(
                        "POSITION names accessor {}, but the file has {}",
                        index.value(),
                        root.accessors.len()
                    ),
                });
            }
        }
    }
    for (animation, a) in root.animations.iter().enumerate() {
        for (channel, c) in a.channels.iter().enumerate() {
            let at = format!("animation {animation} channel {channel}");
            if c.target.node.value() >= root.nodes.len() {
                let message =
                    format!("{at} targets node {}, but the file has {} nodes", c.target.node.value(), root.nodes.len());
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

/// Splits a GLB into its JSON chunk and optional BIN chunk, checking every length against the
/// bytes present (the `gltf` crate's own splitter underflows on a header length below 12).
pub(super) fn split_glb(file: &[u8]) -> Result<(&[u8], Option<&[u8]>), GltfError> {
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
pub(super) fn load_buffers(
    doc: &gltf::Document,
    bin: Option<&[u8]>,
    base_dir: Option<&Path>,
    extra_roots: &[PathBuf],
) -> Result<Vec<Vec<u8>>, GltfError> {
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
fn load_uri(
    buffer: usize,
    uri: &str,
    declared_bytes: usize,
    base_dir: Option<&Path>,
    extra_roots: &[PathBuf],
) -> Result<Vec<u8>, GltfError> {
    let unsupported = |why| GltfError::UnsupportedUri { buffer, uri: uri.chars().take(64).collect(), why };
    if let Some(rest) = uri.strip_prefix("data:") {
        let (_, payload) =
            rest.split_once(";base64,").ok_or_else(|| unsupported("only base64 data URIs are supported"))?;
        return decode_base64(payload.as_bytes()).map_err(|position| GltfError::Base64 { buffer, position });
    }
    if uri.contains("://") {
        return Err(unsupported("only relative file names and data URIs are supported"));
    }
    let decoded =
        percent_decode(uri).ok_or_else(|| unsupported("malformed percent-encoding (or not UTF-8 once decoded)"))?;
    let relative = Path::new(&decoded);
    if relative.components().any(|c| matches!(c, Component::RootDir | Component::Prefix(_))) {
        return Err(GltfError::UriOutsideRoot {
            buffer,
            uri: uri.chars().take(64).collect(),
            path: relative.to_owned(),
        });
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

/// The [`GltfError`] for a file the policy refused.
pub(super) fn file_error(path: PathBuf, error: FileError) -> GltfError {
    match error {
        FileError::Io(source) => GltfError::Io { path, source },
        FileError::NotAFile => GltfError::NotAFile { path },
        FileError::TooLarge { bytes, max_bytes } => GltfError::FileTooLarge { path, bytes, max_bytes },
    }
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
