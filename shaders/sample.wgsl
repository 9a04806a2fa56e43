// Clip sampling and weighted blend: a character's clips at their times, blended into one local
// pose. Mirrors `throng::eval::sample::sample_blend` and `throng::Clip::frame_at`.

// Gates for measurement (`throng::gpu::MeasuredPath`, as `SWITCH_CODE` in `transition.wgsl`):
// a blend of one sample sampled outside the clip loop, which a layer runs only where its blend
// has one sample; and, in the level kernels (`shared/levels.wgsl`, `table_entry`), a sample's
// per-sample values computed in the clip loop past the entries the sample table holds, which a
// wave runs only where a blend has more samples than that.
const SINGLE_SAMPLE_CODE: bool = true;
const TABLE_MISS_CODE: bool = true;

// The two frames around a sample's frame coordinate `x` and the blend factor between them
// (`Clip::frame_at`). `x`, in [0, frames − 1] (a division's ulp past it reads the last pair at
// factor 1, as `frames − 1` does), is resolved once a frame by the sample-positions
// stage (`shaders/sample_positions.wgsl`), so that no joint repeats the clip's time arithmetic.
// The conversion truncates where the CPU floors, the same for an `x` of at least 0. A clip of
// one frame (`x` 0) reads that frame twice at factor 0: `num_frames − 2` wraps past every
// frame, and the second frame is held to the last.
struct FramePosition {
    frame0: u32,
    frame1: u32,
    alpha: f32,
}

fn frame_position(h: ClipHeader, x: f32) -> FramePosition {
    let frame = min(u32(x), h.num_frames - 2u);
    return FramePosition(frame, next_frame(h, frame), clamp(x - f32(frame), 0.0, 1.0));
}

// The frame interpolated towards from `frame`: the one after it, held to the last (a clip of one
// frame reads it twice).
fn next_frame(h: ClipHeader, frame: u32) -> u32 {
    return min(frame + 1u, h.num_frames - 1u);
}

// Lerp for vectors, shortest-path normalised lerp for rotations, as glam's `Quat::lerp` that
// `throng::clip::interpolate_frames` calls (without a guard, as glam has none). A clip's
// rotations are unit (normalised when the clip is built, one of no length or of a squared
// length past f32's range refused; a compact clip's decoded ones are not zero either), and two
// quaternions that are not zero, on one hemisphere, mixed with weights `1 − alpha` and `alpha`
// in [0, 1] never sum to zero (two unit ones to a squared length of at least a half).
fn sample_frames(a: Transform, b: Transform, alpha: f32) -> Transform {
    // `b` brought onto `a`'s hemisphere by its weight's sign: `(−b)·α` is `b·(−α)` exactly.
    let b_alpha = select(alpha, -alpha, dot(a.rotation, b.rotation) < 0.0);
    return Transform(
        mix(a.translation, b.translation, alpha),
        0.0,
        quat_normalize_unit(a.rotation * (1.0 - alpha) + b.rotation * b_alpha),
        mix(a.scale, b.scale, alpha),
        0.0,
    );
}

// Joint `joint` of clip `s.clip` at `s.time_s` (at its resolved `position`).
fn sample_clip_joint(s: ClipSample, joint: u32, num_joints: u32) -> Transform {
    let h = clip_header(s.clip);
    let p = frame_position(h, s.position);
    let frames = clip_joint_frames(h, p.frame0, p.frame1, joint, num_joints);
    return sample_frames(frames.a, frames.b, p.alpha);
}

// Joint `joint` of the blend of `range`'s samples. Weights are normalised; each rotation is
// brought onto the running sum's hemisphere before it is added; no samples, or weights summing
// to zero, give the rest pose.
fn sample_blend_joint(range: SampleRange, joint: u32, num_joints: u32) -> Transform {
    return sample_blend_joint_over(range, joint, num_joints, rig_joints[joint].rest);
}

// What a blend's weights sum to and the scale each takes before it is summed and divided, so
// that a sample's share is `weight * scale / total` (`throng::eval::sample::Normalised`): 1.0,
// or 2^-64 where the weights (each finite) sum past f32's range. A power of two changes no
// ratio, and ordinary weights' shares stay `weight / total` bit for bit.
struct WeightSum {
    total: f32,
    scale: f32,
}

// 2^-64, and its inverse 2^64.
const OVERFLOW_WEIGHT_SCALE: f32 = 5.421010862427522e-20;
const OVERFLOW_SCALED_SUM: f32 = 18446744073709551616.0;

// `WeightSum` of a blend whose weights sum to `total` and, each scaled by
// OVERFLOW_WEIGHT_SCALE, to `scaled` (both summed in the samples' order, in one loop). Scaling
// by a power of two rounds alike, so the plain sum overflowed exactly where the scaled one
// reached 2^64 (f32::MAX is just below 2^128): decided on that, WGSL's leave to assume no
// infinity is never leaned on (the CPU asks `is_infinite`, the same answer).
fn weight_sum(total: f32, scaled: f32) -> WeightSum {
    if scaled < OVERFLOW_SCALED_SUM {
        return WeightSum(total, 1.0);
    }
    return WeightSum(scaled, OVERFLOW_WEIGHT_SCALE);
}

// A weight as a blend's sum counts it: 0 where it does not count (`weighs`).
fn counted_weight(w: f32) -> f32 {
    return select(0.0, w, weighs(w));
}

// `WeightSum` of samples `start .. start + count` (a frame index, not the window's).
fn sum_weights(start: u32, count: u32) -> WeightSum {
    let first = start - params.sample_base;
    var total = 0.0;
    var scaled = 0.0;
    for (var i = 0u; i < count; i++) {
        let w = counted_weight(samples[first + i].weight);
        total += w;
        scaled += w * OVERFLOW_WEIGHT_SCALE;
    }
    return weight_sum(total, scaled);
}

// `sample_blend_joint` with `rest` shown when the weights sum to zero (the identity for an
// additive layer, whose clips are deltas).
fn sample_blend_joint_over(range: SampleRange, joint: u32, num_joints: u32, rest: Transform) -> Transform {
    // Programs index the whole frame's samples; the bound window starts at `sample_base`.
    let start = range.start - params.sample_base;
    let sum = sum_weights(range.start, range.count);
    if !(sum.total > 0.0) {
        return rest;
    }
    if SINGLE_SAMPLE_CODE && range.count == 1u {
        return sample_clip_joint(samples[start], joint, num_joints);
    }
    var acc = Transform(vec3<f32>(0.0), 0.0, vec4<f32>(0.0), vec3<f32>(0.0), 0.0);
    for (var i = 0u; i < range.count; i++) {
        let s = samples[start + i];
        if !weighs(s.weight) {
            continue;
        }
        acc = blend_add(acc, sample_clip_joint(s, joint, num_joints), s.weight * sum.scale / sum.total);
    }
    acc.rotation = quat_normalize_unit(acc.rotation);
    return acc;
}

// The running sum of a blend with `p` added at normalised weight `w`: its rotation brought onto
// the sum's hemisphere before it is added. So no addition shortens the sum's rotation (its
// squared length grows by `2w·|dot| + w²`), and a blend whose weights sum above 0 holds a sample
// whose share is at least one over the count (the shares are ratios, `WeightSum`): the sum is
// never zero, and the blends normalise it without a guard (`quat_normalize_unit`), as glam's
// `normalize` does on the CPU. A blend's sum starts at zero, so the first sample added is its
// product with its weight exactly (`0 + x` is `x`, but for a negative zero, which becomes a
// positive one; and the dot product with a zero sum is never below 0): the CPU's first sample
// (`throng::eval::sample`), with no branch in the clip loop. The level kernels' blend
// (`shared/levels.wgsl`) and the replay's add with it too.
fn blend_add(acc: Transform, p: Transform, w: f32) -> Transform {
    var sum = acc;
    sum.translation += p.translation * w;
    sum.scale += p.scale * w;
    let signed_w = select(w, -w, dot(sum.rotation, p.rotation) < 0.0);
    sum.rotation += p.rotation * signed_w;
    return sum;
}

fn store_local(index: u32, t: Transform) {
    let i = params.local_base + index * 3u;
    local_poses[i] = vec4<f32>(t.translation, 0.0);
    local_poses[i + 1u] = t.rotation;
    local_poses[i + 2u] = vec4<f32>(t.scale, 0.0);
}

// The stage alone: one workgroup per character of the chunk, local poses to `local_poses`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn sample_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let c = group_index(wg, groups);
    if c >= params.num_characters {
        return;
    }
    let range = ranges[params.first_character + c];
    let num_joints = NUM_JOINTS;
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        store_local(c * num_joints + j, sample_blend_joint(range, j, num_joints));
    }
}
