//! A shader's layouts as naga computes them, against the Rust side's: one struct's size and
//! member offsets, one `u32` constant. For every test that keeps a Rust struct or constant in
//! step with WGSL.

use wgpu::naga;

/// Parses WGSL and lays its types out as naga does for every backend.
pub fn parse(source: &str) -> (naga::Module, naga::proc::Layouter) {
    let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    (module, layouter)
}

/// Finds a named type in a naga module.
pub fn naga_type(module: &naga::Module, name: &str) -> naga::Handle<naga::Type> {
    module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .map(|(h, _)| h)
        .unwrap_or_else(|| panic!("no struct {name} in the shader"))
}

/// Checks a WGSL struct's size and member names and offsets against the Rust struct's.
pub fn check_struct(
    module: &naga::Module,
    layouter: &naga::proc::Layouter,
    name: &str,
    size: usize,
    offsets: &[(&str, usize)],
) {
    let handle = naga_type(module, name);
    assert_eq!(layouter[handle].size as usize, size, "{name}: size (WGSL vs Rust)");
    let naga::TypeInner::Struct { members, .. } = &module.types[handle].inner else { panic!("{name} is not a struct") };
    let wgsl: Vec<(&str, usize)> =
        members.iter().map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize)).collect();
    assert_eq!(wgsl, offsets, "{name}: members and offsets (WGSL vs Rust)");
}

/// The literal a WGSL `const NAME` is initialised with.
fn wgsl_literal(module: &naga::Module, name: &str) -> naga::Literal {
    let (_, constant) = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no const {name}"));
    match module.global_expressions[constant.init] {
        naga::Expression::Literal(literal) => literal,
        ref other => panic!("{name} is {other:?}, not a literal"),
    }
}

/// The value of a WGSL `const NAME: f32 = …;`.
pub fn wgsl_f32_constant(module: &naga::Module, name: &str) -> f32 {
    match wgsl_literal(module, name) {
        naga::Literal::F32(v) => v,
        other => panic!("{name} is {other:?}, not an f32"),
    }
}

/// The value of a WGSL `const NAME: u32 = …u;`.
pub fn wgsl_u32_constant(module: &naga::Module, name: &str) -> u32 {
    match wgsl_literal(module, name) {
        naga::Literal::U32(v) => v,
        other => panic!("{name} is {other:?}, not a u32"),
    }
}
