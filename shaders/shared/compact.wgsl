// Reading a clip's joint-frames from `clip_data`, full or compact: the GPU side of
// `throng::clip::compact` (`CompactPoses::decode`), with the same arithmetic.


// Word `w` of the clip data.
fn clip_word(w: u32) -> u32 {
    return clip_data[w >> 2u][w & 3u];
}

// `width` (at most 16) bits at bit `bit` of the stream starting at word `base`; a field may
// straddle two words.
fn clip_bits(base: u32, bit: u32, width: u32) -> u32 {
    let w = base + (bit >> 5u);
    let s = bit & 31u;
    var v = clip_word(w) >> s;
    if s + width > 32u {
        v |= clip_word(w + 1u) << (32u - s);
    }
    return v & ((1u << width) - 1u);
}

// A full-precision transform stored as three vec4 of bits at `clip_data[i]`.
fn clip_transform(i: u32) -> Transform {
    let t = bitcast<vec4<f32>>(clip_data[i]);
    let r = bitcast<vec4<f32>>(clip_data[i + 1u]);
    let s = bitcast<vec4<f32>>(clip_data[i + 2u]);
    return Transform(t.xyz, 0.0, r, s.xyz, 0.0);
}

// Joint `joint` of frame `frame` of the clip `h` describes.
fn clip_joint(h: ClipHeader, frame: u32, joint: u32, num_joints: u32) -> Transform {
    if h.rotation_bits == 0u {
        return clip_transform(h.first_vec4 + (frame * num_joints + joint) * 3u);
    }
    let range = h.first_vec4 + joint * COMPACT_RANGE_VEC4S;
    let rotation_min = bitcast<vec4<f32>>(clip_data[range]);
    let rotation_step = bitcast<vec4<f32>>(clip_data[range + 1u]);
    let translation_min = bitcast<vec4<f32>>(clip_data[range + 2u]).xyz;
    let translation_step = bitcast<vec4<f32>>(clip_data[range + 3u]).xyz;
    let scale = bitcast<vec4<f32>>(clip_data[range + 4u]).xyz;
    let base = (h.first_vec4 + num_joints * COMPACT_RANGE_VEC4S) * 4u + (frame * num_joints + joint) * h.words_per_joint_frame;
    let k = h.rotation_bits;
    let m = h.translation_bits;
    let largest = clip_bits(base, 0u, 2u);
    let negative = clip_bits(base, 2u, 1u) != 0u;
    var q = vec4<f32>(0.0);
    var bit = 3u;
    var sum = 0.0;
    for (var c = 0u; c < 4u; c++) {
        if c == largest {
            continue;
        }
        let v = rotation_min[c] + f32(clip_bits(base, bit, k)) * rotation_step[c];
        q[c] = v;
        sum += v * v;
        bit += k;
    }
    q[largest] = select(1.0, -1.0, negative) * sqrt(max(1.0 - sum, 0.0));
    q = q * inverseSqrt(dot(q, q));
    var t = vec3<f32>(0.0);
    for (var c = 0u; c < 3u; c++) {
        t[c] = translation_min[c] + f32(clip_bits(base, bit, m)) * translation_step[c];
        bit += m;
    }
    return Transform(t, 0.0, q, scale, 0.0);
}
