//! What the software adapter forgives and real GPUs may not: static checks of the WGSL modules
//! against rules that lavapipe never exercises.

use throng::gpu::{shader_source, ShaderModuleKind};
use wgpu::naga;

/// Where `block` (of a function whose expressions `info` types) stores one component of a
/// vector that lives in storage or workgroup memory, shared between invocations.
fn component_stores(module: &naga::Module, info: &naga::valid::FunctionInfo, function: &naga::Function, block: &naga::Block, found: &mut Vec<String>) {
    use naga::{AddressSpace, Expression, Statement, TypeInner};
    for statement in block.iter() {
        match statement {
            Statement::Block(inner) => component_stores(module, info, function, inner, found),
            Statement::If { accept, reject, .. } => {
                component_stores(module, info, function, accept, found);
                component_stores(module, info, function, reject, found);
            }
            Statement::Switch { cases, .. } => cases.iter().for_each(|case| component_stores(module, info, function, &case.body, found)),
            Statement::Loop { body, continuing, .. } => {
                component_stores(module, info, function, body, found);
                component_stores(module, info, function, continuing, found);
            }
            Statement::Store { pointer, .. } => {
                let (Expression::Access { base, .. } | Expression::AccessIndex { base, .. }) = function.expressions[*pointer] else { continue };
                let shared = |space: AddressSpace| matches!(space, AddressSpace::Storage { .. } | AddressSpace::WorkGroup);
                let vector_in_shared_memory = match *info[base].ty.inner_with(&module.types) {
                    TypeInner::Pointer { base, space } => shared(space) && matches!(module.types[base].inner, TypeInner::Vector { .. }),
                    TypeInner::ValuePointer { size: Some(_), space, .. } => shared(space),
                    _ => false,
                };
                if vector_in_shared_memory {
                    found.push(function.name.clone().unwrap_or_default());
                }
            }
            _ => {}
        }
    }
}

/// WGSL lets two invocations write different components of one vector, and lavapipe (like
/// SPIR-V and HLSL's byte-address stores) writes just the component. Metal's compiler, which
/// wgpu feeds naga's MSL, lowers `v[i] = x` on a `device uint4` as clang does: load the whole
/// vector, insert, store the whole vector. Two invocations of one SIMD group writing the two
/// halves of one `vec4` then both store 16 bytes and one's half is lost. Every store into
/// shared memory must therefore write whole vectors (or scalars of an array of scalars).
#[test]
fn no_shader_stores_one_component_of_a_vector_in_shared_memory() {
    let mut found = Vec::new();
    for kind in ShaderModuleKind::ALL {
        let source = shader_source(kind, 64, true);
        let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
        for (handle, function) in module.functions.iter() {
            component_stores(&module, &info[handle], function, &function.body, &mut found);
        }
        for (i, entry) in module.entry_points.iter().enumerate() {
            component_stores(&module, info.get_entry_point(i), &entry.function, &entry.function.body, &mut found);
        }
    }
    found.sort();
    found.dedup();
    assert!(found.is_empty(), "functions storing one component of a shared vector (a whole-vector read-modify-write on Metal): {found:?}");
}
