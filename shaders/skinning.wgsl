// Skinning matrices: `model × inverse_bind`, written in the output layout. Mirrors
// `throng::eval::skinning`.

// Gate of the affine 3×4 output's store (`throng::gpu::MeasuredPath::AffineOutput`): always
// true in production; the work model measures the store by compiling it out.
const AFFINE_OUTPUT_CODE: bool = true;

// Writes joint `index` (chunk-relative, `c * num_joints + j`) of the chunk's output window:
// four columns for LAYOUT_MAT4, the top three rows for LAYOUT_AFFINE3X4.
fn write_skinning(index: u32, m: mat4x4<f32>) {
    if !AFFINE_OUTPUT_CODE || params.output_layout == LAYOUT_MAT4 {
        let i = params.output_base + index * 4u;
        output[i] = m[0];
        output[i + 1u] = m[1];
        output[i + 2u] = m[2];
        output[i + 3u] = m[3];
    } else {
        let t = transpose(m);
        let i = params.output_base + index * 3u;
        output[i] = t[0];
        output[i + 1u] = t[1];
        output[i + 2u] = t[2];
    }
}

// `model × inverse_bind` for an affine `model` and the joint's inverse bind matrix, whose last
// rows are both (0, 0, 0, 1) (`Rig::new` refuses any other): each column summed as
// `throng::eval::skinning` sums it (`mul_affine`), without the last row's terms, whose sum is
// that row.
fn skinning_matrix(model: mat4x4<f32>, joint: u32) -> mat4x4<f32> {
    let b = rig_joints[joint].inverse_bind;
    let x = model[0].xyz;
    let y = model[1].xyz;
    let z = model[2].xyz;
    return mat4x4<f32>(
        vec4<f32>(x * b[0].x + y * b[0].y + z * b[0].z, 0.0),
        vec4<f32>(x * b[1].x + y * b[1].y + z * b[1].z, 0.0),
        vec4<f32>(x * b[2].x + y * b[2].y + z * b[2].z, 0.0),
        vec4<f32>(x * b[3].x + y * b[3].y + z * b[3].z + model[3].xyz, 1.0),
    );
}

fn load_model(index: u32) -> mat4x4<f32> {
    let i = params.model_base + index * 4u;
    return mat4x4<f32>(model_poses[i], model_poses[i + 1u], model_poses[i + 2u], model_poses[i + 3u]);
}

// The stage alone: one workgroup per character, `model_poses` to `output`.
@compute @workgroup_size(WORKGROUP_SIZE)
fn skinning_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let w = group_index(wg, groups);
    if w >= dispatched_characters() {
        return;
    }
    let c = workgroup_character(w);
    let num_joints = NUM_JOINTS;
    for (var j = thread; j < num_joints; j += WORKGROUP_SIZE) {
        let index = c * num_joints + j;
        write_skinning(index, skinning_matrix(load_model(index), j));
    }
}
