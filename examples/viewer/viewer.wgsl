// The viewer's shaders: instanced skinned characters that read throng's skinning matrices
// straight from its output buffer, the ground (a mesh: flat, slopes or steps), and the look-at
// marker. Lambert light under a sky, distance fog.

struct Camera {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    // xyz: direction towards the sun; w: fog distance, metres.
    sun: vec4<f32>,
    // x: the picked character + 1 (0: none), drawn highlighted; y: 1 when the picked character
    // shows a mask heat instead of magenta.
    picked: vec4<f32>,
    // xyz: the look-at marker's world position; w: its half size, metres (0: not drawn).
    marker: vec4<f32>,
    // The mask heat: a weight in [0, 1] per joint, four joints a vec4 (MAX_HEAT_JOINTS in render.rs).
    heat: array<vec4<f32>, 16>,
}
@group(0) @binding(0) var<uniform> camera: Camera;

// throng's output, bound from this chunk's first character: matrix (character - first) * J + j,
// each `vec4s_per_matrix` vec4s: a column-major mat4 (4) or an affine 3×4's rows (3).
@group(1) @binding(0) var<storage, read> skin: array<vec4<f32>>;
struct Chunk { first_character: u32, num_joints: u32, vec4s_per_matrix: u32 }
@group(1) @binding(1) var<uniform> chunk: Chunk;

fn skin_matrix(index: u32) -> mat4x4<f32> {
    let at = index * chunk.vec4s_per_matrix;
    if chunk.vec4s_per_matrix == 4u {
        return mat4x4<f32>(skin[at], skin[at + 1u], skin[at + 2u], skin[at + 3u]);
    }
    // Affine 3×4: three rows; the bottom row is (0, 0, 0, 1).
    let r0 = skin[at];
    let r1 = skin[at + 1u];
    let r2 = skin[at + 2u];
    return mat4x4<f32>(
        vec4<f32>(r0.x, r1.x, r2.x, 0.0), vec4<f32>(r0.y, r1.y, r2.y, 0.0),
        vec4<f32>(r0.z, r1.z, r2.z, 0.0), vec4<f32>(r0.w, r1.w, r2.w, 1.0));
}

fn heat(joint: u32) -> f32 {
    if joint >= 64u {
        return 0.0;
    }
    return camera.heat[joint / 4u][joint % 4u];
}

const SKY: vec3<f32> = vec3<f32>(0.55, 0.70, 0.90);

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) albedo: vec3<f32>,
}

fn hash(n: u32) -> u32 {
    var x = n * 747796405u + 2891336453u;
    x = ((x >> ((x >> 28u) + 4u)) ^ x) * 277803737u;
    return (x >> 22u) ^ x;
}

// A shirt colour per character, from a small palette, so the crowd reads as people.
fn shirt(character: u32) -> vec3<f32> {
    let h = hash(character);
    let palette = array<vec3<f32>, 6>(
        vec3<f32>(0.70, 0.18, 0.15), vec3<f32>(0.15, 0.35, 0.70), vec3<f32>(0.85, 0.65, 0.20),
        vec3<f32>(0.20, 0.55, 0.30), vec3<f32>(0.55, 0.30, 0.60), vec3<f32>(0.80, 0.80, 0.78));
    return palette[h % 6u] * (0.8 + 0.2 * f32((h >> 8u) & 255u) / 255.0);
}

@vertex
fn character_vs(
    @builtin(instance_index) character: u32,
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) joints: vec4<u32>,
    @location(3) weights: vec4<f32>,
    // Per instance: world position (xyz) and heading about +Y (w, radians).
    @location(4) placement: vec4<f32>,
) -> VertexOut {
    let base = (character - chunk.first_character) * chunk.num_joints;
    let m = weights.x * skin_matrix(base + joints.x) + weights.y * skin_matrix(base + joints.y)
          + weights.z * skin_matrix(base + joints.z) + weights.w * skin_matrix(base + joints.w);
    let model = m * vec4<f32>(position, 1.0);
    let model_normal = (m * vec4<f32>(normal, 0.0)).xyz;
    let c = cos(placement.w);
    let s = sin(placement.w);
    // Rotation about +Y by the heading, then the character's place.
    let world = vec3<f32>(c * model.x + s * model.z, model.y, -s * model.x + c * model.z) + placement.xyz;
    let n = vec3<f32>(c * model_normal.x + s * model_normal.z, model_normal.y, -s * model_normal.x + c * model_normal.z);
    var out: VertexOut;
    out.clip = camera.view_proj * vec4<f32>(world, 1.0);
    out.world = world;
    out.normal = n;
    out.albedo = shirt(character);
    if character + 1u == u32(camera.picked.x) {
        // The lab's picked character glows magenta, a colour no shirt has, so it can be found
        // in a crowd; with a mask heat, blue where the layer's mask is 0, red where it is 1.
        out.albedo = vec3<f32>(2.5, 0.2, 2.2);
        if camera.picked.y > 0.5 {
            let h = weights.x * heat(joints.x) + weights.y * heat(joints.y)
                  + weights.z * heat(joints.z) + weights.w * heat(joints.w);
            out.albedo = mix(vec3<f32>(0.15, 0.3, 2.2), vec3<f32>(2.5, 0.25, 0.1), h);
        }
    }
    return out;
}

fn shade(albedo: vec3<f32>, normal: vec3<f32>, world: vec3<f32>) -> vec4<f32> {
    let n = normalize(normal);
    let sun = max(dot(n, camera.sun.xyz), 0.0);
    let sky = 0.5 + 0.5 * n.y;
    let lit = albedo * (vec3<f32>(1.0, 0.95, 0.85) * sun * 0.8 + SKY * sky * 0.45);
    let fog = clamp(distance(world, camera.eye.xyz) / camera.sun.w, 0.0, 1.0);
    return vec4<f32>(mix(lit, SKY, fog * fog), 1.0);
}

@fragment
fn character_fs(in: VertexOut) -> @location(0) vec4<f32> {
    return shade(in.albedo, in.normal, in.world);
}

// The ground's triangles, in world space, made on the CPU from the same shape the feet stand on.
@vertex
fn ground_vs(@location(0) world: vec3<f32>, @location(1) normal: vec3<f32>) -> VertexOut {
    var out: VertexOut;
    out.clip = camera.view_proj * vec4<f32>(world, 1.0);
    out.world = world;
    out.normal = normal;
    out.albedo = vec3<f32>(0.0);
    return out;
}

// The look-at marker: an octahedron around `camera.marker.xyz`, face by face (eight triangles,
// one per octant), glowing yellow.
@vertex
fn marker_vs(@builtin(vertex_index) index: u32) -> VertexOut {
    let face = index / 3u;
    let s = vec3<f32>(
        select(-1.0, 1.0, (face & 1u) != 0u), select(-1.0, 1.0, (face & 2u) != 0u),
        select(-1.0, 1.0, (face & 4u) != 0u));
    var corner = vec3<f32>(s.x, 0.0, 0.0);
    if index % 3u == 1u {
        corner = vec3<f32>(0.0, s.y, 0.0);
    } else if index % 3u == 2u {
        corner = vec3<f32>(0.0, 0.0, s.z);
    }
    let world = camera.marker.xyz + corner * camera.marker.w;
    var out: VertexOut;
    out.clip = camera.view_proj * vec4<f32>(world, 1.0);
    out.world = world;
    out.normal = s;
    out.albedo = vec3<f32>(2.5, 2.2, 0.3);
    return out;
}

@fragment
fn ground_fs(in: VertexOut) -> @location(0) vec4<f32> {
    // Two-metre checks, so that speed and foot sliding read against the ground.
    let cell = floor(in.world.xz * 0.5);
    let check = f32((i32(cell.x) + i32(cell.y)) & 1);
    // Checks smaller than a pixel or two fade to their mean instead of shimmering.
    let footprint = max(fwidth(in.world.x), fwidth(in.world.z)) * 0.5;
    let contrast = 1.0 - smoothstep(0.15, 0.5, footprint);
    let albedo = vec3<f32>(0.33, 0.45, 0.275) + vec3<f32>(0.03) * (2.0 * check - 1.0) * contrast;
    return shade(albedo, in.normal, in.world);
}
