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
