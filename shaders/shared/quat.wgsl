// Quaternion and matrix maths shared by the stages; glam's conventions (x, y, z, w quaternions,
// column-major matrices, `T * R * S`).

// Rotates `v` by unit quaternion `q`.
fn quat_rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

// `T * R * S` as a column-major matrix, the same arithmetic as glam's
// `Mat4::from_scale_rotation_translation`.
fn transform_to_mat4(t: Transform) -> mat4x4<f32> {
    let q = t.rotation;
    let x2 = q.x + q.x;
    let y2 = q.y + q.y;
    let z2 = q.z + q.z;
    let xx = q.x * x2;
    let xy = q.x * y2;
    let xz = q.x * z2;
    let yy = q.y * y2;
    let yz = q.y * z2;
    let zz = q.z * z2;
    let wx = q.w * x2;
    let wy = q.w * y2;
    let wz = q.w * z2;
    let x_axis = vec3<f32>(1.0 - (yy + zz), xy + wz, xz - wy) * t.scale.x;
    let y_axis = vec3<f32>(xy - wz, 1.0 - (xx + zz), yz + wx) * t.scale.y;
    let z_axis = vec3<f32>(xz + wy, yz - wx, 1.0 - (xx + yy)) * t.scale.z;
    return mat4x4<f32>(
        vec4<f32>(x_axis, 0.0),
        vec4<f32>(y_axis, 0.0),
        vec4<f32>(z_axis, 0.0),
        vec4<f32>(t.translation, 1.0),
    );
}

// Normalises a quaternion; a zero quaternion (which a valid blend never produces) becomes the
// identity rather than NaN.
fn quat_normalize(q: vec4<f32>) -> vec4<f32> {
    let len2 = dot(q, q);
    if len2 > 0.0 {
        return q * inverseSqrt(len2);
    }
    return vec4<f32>(0.0, 0.0, 0.0, 1.0);
}

// An affine matrix as its top three rows (the bottom row is 0, 0, 0, 1): what the fused frame
// keeps per joint in workgroup memory (48 bytes, so 256 joints fit in 12 KiB).
struct Affine {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
}

fn affine_from_mat4(m: mat4x4<f32>) -> Affine {
    let t = transpose(m);
    return Affine(t[0], t[1], t[2]);
}

fn affine_to_mat4(a: Affine) -> mat4x4<f32> {
    return transpose(mat4x4<f32>(a.r0, a.r1, a.r2, vec4<f32>(0.0, 0.0, 0.0, 1.0)));
}

// `a * b` for affine matrices.
fn affine_mul(a: Affine, b: Affine) -> Affine {
    let w = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    return Affine(
        a.r0.x * b.r0 + a.r0.y * b.r1 + a.r0.z * b.r2 + a.r0.w * w,
        a.r1.x * b.r0 + a.r1.y * b.r1 + a.r1.z * b.r2 + a.r1.w * w,
        a.r2.x * b.r0 + a.r2.y * b.r1 + a.r2.z * b.r2 + a.r2.w * w,
    );
}

// The Hamilton product `a * b` (glam's `Quat * Quat`): rotate by `b`, then by `a`.
fn quat_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz), a.w * b.w - dot(a.xyz, b.xyz));
}

// The inverse of a unit quaternion (glam's `Quat::inverse`).
fn quat_conjugate(q: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(-q.xyz, q.w);
}

// glam's `Quat::lerp`: `b` brought onto `a`'s hemisphere, linear blend, normalised (without a
// guard, as glam has none: two unit quaternions on one hemisphere never blend to zero). The
// hemisphere is the sign of `b`'s weight, not of its four components: `(−b)·s` is `b·(−s)`
// exactly.
fn quat_nlerp(a: vec4<f32>, b: vec4<f32>, s: f32) -> vec4<f32> {
    let b_s = select(s, -s, dot(a, b) < 0.0);
    return quat_normalize_unit(a * (1.0 - s) + b * b_s);
}

// glam's `acos_approx` (DirectXMath's 7-degree minimax) for `x` in [0, 1], as the slerp below
// takes it (`pose::acos_approx_positive`, the same coefficients): the angle matches the CPU's
// to the last bits rather than to the GPU's own acos.
fn acos_approx_positive(x: f32) -> f32 {
    let root = sqrt(max(1.0 - x, 0.0));
    let p = ((((((-0.0012624911 * x + 0.00667009) * x - 0.017088126) * x + 0.03089188) * x - 0.050174303) * x
        + 0.08897899) * x - 0.2145988) * x + 1.5707963;
    return p * root;
}

// A normalisation where the quaternion cannot be zero (each caller says why: a blend of unit
// quaternions on one hemisphere with weights not below 0 and not all 0, a product of unit
// ones). No guard, unlike `quat_normalize`.
fn quat_normalize_unit(q: vec4<f32>) -> vec4<f32> {
    return q * inverseSqrt(dot(q, q));
}

// The shortest-path slerp of two unit quaternions, normalised (`pose::slerp_normalized`):
// glam's `Quat::slerp` then `normalize`, with its weights `sin(θ(1 − s))` and `sin(θs)` not
// divided by `sin θ`, which the normalisation makes moot; nearly equal rotations take nlerp's
// weights `1 − s` and `s`, as glam does. `b`'s hemisphere is its weight's sign.
fn quat_slerp_normalized(a: vec4<f32>, b: vec4<f32>, s: f32) -> vec4<f32> {
    let d = dot(a, b);
    let cos_theta = abs(d);
    var weights = vec2<f32>(1.0 - s, s);
    if cos_theta <= 1.0 - 1.1920929e-7 {
        weights = sin(acos_approx_positive(cos_theta) * weights);
    }
    return quat_normalize_unit(a * weights.x + b * select(weights.y, -weights.y, d < 0.0));
}

// The rotation vector (axis × angle, angle in [0, π]) of a unit quaternion; atan2 stays
// accurate near the identity where acos would not (`eval::inertialize::quat_to_rotation_vector`).
fn quat_to_rotation_vector(q_in: vec4<f32>) -> vec3<f32> {
    let q = select(q_in, -q_in, q_in.w < 0.0);
    let s = length(q.xyz);
    if s < 1e-8 {
        return q.xyz * 2.0;
    }
    return q.xyz * (2.0 * atan2_positive(s, q.w) / s);
}

// The unit quaternion of a rotation vector (`eval::inertialize::rotation_vector_to_quat`, the
// same arithmetic): below half a radian the half angle's sine and cosine from their Taylor
// series, above it from `sin_cos`.
fn rotation_vector_to_quat(v: vec3<f32>) -> vec4<f32> {
    let angle2 = dot(v, v);
    if angle2 < 0.25 {
        let h2 = angle2 * 0.25;
        let sinc_half = 0.5 * (1.0 + h2 * (-1.0 / 6.0 + h2 * (1.0 / 120.0 - h2 / 5040.0)));
        let cos_half = 1.0 + h2 * (-0.5 + h2 * (1.0 / 24.0 - h2 / 720.0));
        return vec4<f32>(v * sinc_half, cos_half);
    }
    let angle = sqrt(angle2);
    let sc = sin_cos(angle * 0.5);
    return vec4<f32>(v / angle * sc.x, sc.y);
}

// Neither infinite nor NaN (WGSL has no such builtin), read from the exponent bits: a float
// comparison would do on IEEE hardware, but a compiler allowed fast math (Metal's default) may
// assume no NaN or infinity and fold it to true.
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
