// Reading a clip's joint-frames from `clip_data`, full or compact: the GPU side of
// `throng::clip::compact` (`CompactPoses::decode`), with the same arithmetic.


// Whether the archetype has compact clips; `throng::gpu::shader_source` rewrites this line to
// false for one that has none, so that the compact path is compiled out (llvmpipe runs both
// sides of a branch that no lane takes).
const COMPACT_CLIPS: bool = true;

// Word `w` of the clip data.
fn clip_word(w: u32) -> u32 {
    return clip_data[w >> 2u][w & 3u];
}

// `width` (at most 16) bits at bit `bit` of the joint-frame whose first word is `base`; a
// joint-frame's words lie 4 apart (four joints' words side by side), and a field may straddle
// two of them.
fn clip_bits(base: u32, bit: u32, width: u32) -> u32 {
    let w = base + (bit >> 5u) * 4u;
    let s = bit & 31u;
    var v = clip_word(w) >> s;
    if s + width > 32u {
        v |= clip_word(w + 4u) << (32u - s);
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

// One joint's constants for a whole compact clip (`throng::clip::compact::JointRange`).
struct JointRange {
    rotation_min: vec4<f32>,
    rotation_step: vec4<f32>,
    translation_min: vec3<f32>,
    // The joint-frame's first word within a frame.
    word_offset: u32,
    translation_step: vec3<f32>,
    // Whether joint-frames store the translation (else it is `translation_min`).
    translated: bool,
    scale: vec3<f32>,
}

fn joint_range(h: ClipHeader, joint: u32) -> JointRange {
    let i = h.first_vec4 + joint * COMPACT_RANGE_VEC4S;
    let t_min = clip_data[i + 2u];
    let t_step = clip_data[i + 3u];
    return JointRange(
        bitcast<vec4<f32>>(clip_data[i]),
        bitcast<vec4<f32>>(clip_data[i + 1u]),
        bitcast<vec3<f32>>(t_min.xyz),
        t_min.w,
        bitcast<vec3<f32>>(t_step.xyz),
        t_step.w != 0u,
        bitcast<vec3<f32>>(clip_data[i + 4u].xyz),
    );
}

// Joint `joint` of frame `frame` of the compact clip `h`, whose range for the joint is `r`
// (`CompactPoses::decode`).
fn decode_joint(h: ClipHeader, r: JointRange, frame: u32, joint: u32, num_joints: u32) -> Transform {
    let base = (h.first_vec4 + num_joints * COMPACT_RANGE_VEC4S) * 4u + frame * h.words_per_frame + r.word_offset;
    let k = h.rotation_bits;
    let m = h.translation_bits;
    let largest = clip_bits(base, 0u, 2u);
    let negative = clip_bits(base, 2u, 1u) != 0u;
    // Stored component `i` is quaternion component `i` before the largest and `i + 1` from it
    // on. Chosen by selects, as the CPU's lanes choose them, and never by a component index
    // only known at run time: NVIDIA's compiler keeps a vector so indexed in local memory
    // (128 to 288 bytes a thread in the compact kernels, the first H200 run's statistics).
    let lo = r.rotation_min;
    let quantum = r.rotation_step;
    let a = select(lo.y, lo.x, largest > 0u) + f32(clip_bits(base, 3u, k)) * select(quantum.y, quantum.x, largest > 0u);
    let b = select(lo.z, lo.y, largest > 1u) + f32(clip_bits(base, 3u + k, k)) * select(quantum.z, quantum.y, largest > 1u);
    let c = select(lo.w, lo.z, largest > 2u) + f32(clip_bits(base, 3u + 2u * k, k)) * select(quantum.w, quantum.z, largest > 2u);
    // Unit to within a quantum; sampling's nlerp and blend normalise what they build.
    let w = select(1.0, -1.0, negative) * sqrt(max(1.0 - (a * a + b * b + c * c), 0.0));
    let q = vec4<f32>(
        select(a, w, largest == 0u),
        select(select(b, w, largest == 1u), a, largest == 0u),
        select(select(b, w, largest == 2u), c, largest == 3u),
        select(c, w, largest == 3u),
    );
    var t = r.translation_min;
    if r.translated {
        let bit = 3u + 3u * k;
        let quanta = vec3<f32>(
            f32(clip_bits(base, bit, m)),
            f32(clip_bits(base, bit + m, m)),
            f32(clip_bits(base, bit + 2u * m, m)),
        );
        t += quanta * r.translation_step;
    }
    return Transform(t, 0.0, q, r.scale, 0.0);
}

// Joint `joint` of two frames of the clip `h` describes, full or compact.
struct JointFrames {
    a: Transform,
    b: Transform,
}

// Sampling reads a joint's two adjacent frames: a compact clip's range is read once for both.
fn clip_joint_frames(h: ClipHeader, frame0: u32, frame1: u32, joint: u32, num_joints: u32) -> JointFrames {
    if !COMPACT_CLIPS || h.rotation_bits == 0u {
        return JointFrames(
            clip_transform(h.first_vec4 + (frame0 * num_joints + joint) * 3u),
            clip_transform(h.first_vec4 + (frame1 * num_joints + joint) * 3u),
        );
    }
    let r = joint_range(h, joint);
    return JointFrames(decode_joint(h, r, frame0, joint, num_joints), decode_joint(h, r, frame1, joint, num_joints));
}
