//! Accessors: typed, bounds-checked reads of buffer views into flat `f32` or `u32` arrays.

use glam::Vec3;
use gltf::accessor::{DataType, Dimensions};

use super::GltfError;

/// The component types one use of an accessor accepts.
#[derive(Clone, Copy)]
pub(super) enum Accept {
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
pub(super) fn read_accessor(
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
        Accept::FloatOrNormalized(ints) => {
            data_type == DataType::F32 || (accessor.normalized() && ints.contains(&data_type))
        }
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
    let view_bytes =
        view.offset().checked_add(view.length()).and_then(|end| buffer.get(view.offset()..end)).ok_or_else(|| {
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
        return Err(out_of_range(format!(
            "buffer view {} stride {stride} is below the element size {element_size}",
            view.index()
        )));
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

pub(super) fn vec3s(flat: &[f32]) -> Vec<Vec3> {
    flat.chunks_exact(3).map(Vec3::from_slice).collect()
}
