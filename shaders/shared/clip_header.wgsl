// Clip `clip`'s header, from the start of `clip_data` (declared by `shared/bindings.wgsl`, or by
// the sample-positions stage, which binds a group of its own).
fn clip_header(clip: u32) -> ClipHeader {
    let a = clip_data[2u * clip];
    let b = clip_data[2u * clip + 1u];
    return ClipHeader(a.x, a.y, bitcast<f32>(a.z), a.w, b.x, b.y, b.z, b.w);
}
