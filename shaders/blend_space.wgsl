// The blend-space stage: for each request (a character's layer's active or source state), the
// leaf weights of the state's tree from the character's inputs (its parameters). Mirrored by
// `src/eval/blend_space.rs`, which runs `throng::blend_space::BlendTrees::leaf_weights`; this
// is that walk and `throng::blend_space`'s spaces translated to f32 over the table
// `BlendTrees::words` lays out. Where the CPU works in f64 (1D and grid fractions, the 2D
// spaces' normalised query, freeform barycentrics) this keeps within 1e-6 by scaling instead:
// halves and quarters that cannot overflow, the normaliser's centre as two floats.
//
// Self-contained (no `shared/` files): the stage binds its own group, not the frame's.

// Keep in sync with `throng::blend_space::tree_words` (`tests/gpu_blend_space.rs` checks).
const HEADER_STATES: u32 = 0u;
const HEADER_INPUTS: u32 = 2u;
const HEADER_MAX_LEAVES: u32 = 3u;
const HEADER_STATES_AT: u32 = 4u;
const HEADER_NODES_AT: u32 = 5u;
const STATE_LEN: u32 = 4u;
const NODE_LEN: u32 = 8u;
const NODE_LEAF: u32 = 0u;
const NODE_DIRECT: u32 = 1u;
const SPACE_ONE_D: u32 = 2u;
const SPACE_FREEFORM: u32 = 3u;
const SPACE_CARTESIAN: u32 = 4u;
const SPACE_DIRECTIONAL: u32 = 5u;
const SPACE_GRID: u32 = 6u;

// Threads per workgroup, one request each (`throng::gpu::blend_space::BLEND_SPACE_WORKGROUP`).
const BLEND_SPACE_WORKGROUP: u32 = 64u;
// `throng::blend_space::MAX_TREE_NODES` and `MAX_BLEND_CHILDREN`.
const MAX_TREE_NODES: u32 = 128u;
const MAX_BLEND_CHILDREN: u32 = 64u;
// `throng::blend_space`'s `FAR_RADIUS` and freeform `INSIDE_EPS`.
const FAR_RADIUS: f32 = 8.0;
const INSIDE_EPS: f32 = 1e-5;
const F32_MAX: f32 = 3.40282347e38;
const PI: f32 = 3.14159265358979;
const TAU: f32 = 6.28318530717959;

// Keep in sync with `throng::gpu::blend_space::BlendSpaceParams`. `groups_x` is the workgroups
// along x; a request's index is `x + y * groups_x * BLEND_SPACE_WORKGROUP`.
struct BlendSpaceParams {
    num_requests: u32,
    requests_per_character: u32,
    groups_x: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> blend_params: BlendSpaceParams;
// `BlendTrees::words`: uploaded once per graph.
@group(0) @binding(1) var<storage, read> trees: array<u32>;
// Per character, `trees[HEADER_INPUTS]` inputs, canonical (`throng::blend_space::canonical_input`:
// finite, no NaN, no −0).
@group(0) @binding(2) var<storage, read> inputs: array<f32>;
// Per request, a state index, or anything past the states for none.
@group(0) @binding(3) var<storage, read> requests: array<u32>;
// Per request, `trees[HEADER_MAX_LEAVES]` weights.
@group(0) @binding(4) var<storage, read_write> blend_weights: array<f32>;

// A state's node weights, and the children's weights of the node being visited.
var<private> node_w: array<f32, MAX_TREE_NODES>;
var<private> child_w: array<f32, MAX_BLEND_CHILDREN>;

fn word_f32(at: u32) -> f32 {
    return bitcast<f32>(trees[at]);
}

fn word_vec2(at: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(trees[at]), bitcast<f32>(trees[at + 1u]));
}

fn clear_children(n: u32) {
    for (var i = 0u; i < n; i++) {
        child_w[i] = 0.0;
    }
}

// `one_d::segment`: the segment of `values` (n of them, sorted, from word `at`) holding `v`
// clamped to the ends, and the fraction along it. The CPU's f64 fraction becomes halves, which
// cannot overflow even for a span beyond f32::MAX, and a span past 2^100 is scaled down, where
// WGSL's division promises no accuracy.
struct Segment {
    lo: u32,
    t: f32,
}

fn segment(at: u32, n: u32, v_in: f32) -> Segment {
    let v = clamp(v_in, word_f32(at), word_f32(at + n - 1u));
    var hi = 0u;
    for (; hi < n && word_f32(at + hi) < v; hi++) {}
    hi = clamp(hi, 1u, n - 1u);
    let a = word_f32(at + hi - 1u);
    let b = word_f32(at + hi);
    var num = v * 0.5 - a * 0.5;
    var den = b * 0.5 - a * 0.5;
    if den > 1e30 {
        num *= 7.888609052210118e-31; // 2^-100
        den *= 7.888609052210118e-31;
    }
    return Segment(hi - 1u, clamp(num / den, 0.0, 1.0));
}

// `OneDSpace::fill`: n, values, children.
fn one_d(at: u32, x: f32) {
    let n = trees[at];
    clear_children(n);
    let s = segment(at + 1u, n, x);
    child_w[trees[at + 1u + n + s.lo]] = 1.0 - s.t;
    child_w[trees[at + 1u + n + s.lo + 1u]] = s.t;
}

// `GridSpace::fill`: columns, rows, xs, ys.
fn grid(at: u32, p: vec2<f32>) {
    let nx = trees[at];
    let ny = trees[at + 1u];
    clear_children(nx * ny);
    let sx = segment(at + 2u, nx, p.x);
    let sy = segment(at + 2u + nx, ny, p.y);
    let base = sy.lo * nx + sx.lo;
    child_w[base] = (1.0 - sx.t) * (1.0 - sy.t);
    child_w[base + 1u] = sx.t * (1.0 - sy.t);
    child_w[base + nx] = (1.0 - sx.t) * sy.t;
    child_w[base + nx + 1u] = sx.t * sy.t;
}

// Words of a normaliser: centre hi and lo, scale a and b, scale lo (`Normaliser::encode`).
const NORMALISER_LEN: u32 = 7u;

// Whether the last `space_query` pulled its parameter back to FAR_RADIUS.
var<private> query_far: bool;

// `(p − (hi + lo)) · scale` with the normaliser at `at`, within rounding of the CPU's f64 when
// the scale is one f32 (and its lo word): quarters (exact) cannot overflow, their difference is
// split into an f32 and its exact error (two-sum), and the product's error is recovered with a
// fused multiply-add. Beyond f32's normal range the scale is two factors, rounded twice.
fn scaled_difference(at: u32, p: vec2<f32>, hi: vec2<f32>, lo: vec2<f32>) -> vec2<f32> {
    let scale_a = word_f32(at + 4u);
    let scale_b = word_f32(at + 5u);
    let a = p * 0.25;
    let nb = hi * -0.25;
    let s = a + nb;
    if scale_b != 1.0 {
        return ((s - lo * 0.25) * scale_a) * (4.0 * scale_b);
    }
    let bb = s - a;
    let e = ((a - (s - bb)) + (nb - bb)) - lo * 0.25;
    let scale4 = 4.0 * scale_a;
    let scale_lo4 = 4.0 * word_f32(at + 6u);
    let product = s * scale4;
    let error = fma(s, vec2<f32>(scale4), -product);
    return product + (error + e * scale4 + s * scale_lo4);
}

// `Normaliser::query`: the parameter in the space's normalised coordinates, pulled back to
// FAR_RADIUS along its direction (`query_far`). The length is compared with the radius on a
// quarter of `p − centre`, before the scale is applied, so a huge parameter keeps its
// direction and nothing overflows.
fn space_query(at: u32, p: vec2<f32>) -> vec2<f32> {
    let centre_hi = word_vec2(at);
    let centre_lo = word_vec2(at + 2u);
    let scale_a = word_f32(at + 4u);
    let scale_b = word_f32(at + 5u);
    let h = (p * 0.25 - centre_hi * 0.25) - centre_lo * 0.25;
    let m = max(abs(h.x), abs(h.y));
    query_far = false;
    if m == 0.0 {
        return vec2<f32>(0.0);
    }
    let u = h / m;
    let lu = length(u);
    if (lu * m) * scale_a > FAR_RADIUS / (4.0 * scale_b) {
        query_far = true;
        return u * (FAR_RADIUS / lu);
    }
    return scaled_difference(at, p, centre_hi, centre_lo);
}

// `FreeformSpace::fill`: normaliser, children, triangles, hull edges; 9 words a triangle
// (children, first child's point, inverse by columns), 8 an edge (children, origin, direction,
// gradient). A parameter pulled back lies far outside the hull (which is within √2 of the
// origin), in no triangle.
fn freeform(at: u32, p: vec2<f32>) {
    let q = space_query(at, p);
    let n = trees[at + NORMALISER_LEN];
    let num_triangles = select(trees[at + NORMALISER_LEN + 1u], 0u, query_far);
    let num_edges = trees[at + NORMALISER_LEN + 2u];
    clear_children(n);
    let triangles = at + NORMALISER_LEN + 3u;
    for (var t = 0u; t < num_triangles; t++) {
        let r = triangles + 9u * t;
        // Measured from the child's own point: the CPU's f64 `q − origin`, to f32 rounding.
        let d = scaled_difference(at, p, word_vec2(r + 3u), vec2<f32>(0.0));
        let bc = word_vec2(r + 5u) * d.x + word_vec2(r + 7u) * d.y;
        let ba = 1.0 - bc.x - bc.y;
        if min(ba, min(bc.x, bc.y)) >= -INSIDE_EPS {
            let c = max(vec3<f32>(ba, bc.x, bc.y), vec3<f32>(0.0));
            let inv_sum = 1.0 / (c.x + c.y + c.z);
            child_w[trees[r]] = c.x * inv_sum;
            child_w[trees[r + 1u]] = c.y * inv_sum;
            child_w[trees[r + 2u]] = c.z * inv_sum;
            return;
        }
    }
    // Outside the hull: the nearest point on it.
    let edges = triangles + 9u * trees[at + NORMALISER_LEN + 1u];
    var best_dist_sq = F32_MAX;
    var best_a = 0u;
    var best_b = 0u;
    var best_t = 0.0;
    for (var e = 0u; e < num_edges; e++) {
        let r = edges + 8u * e;
        let origin = word_vec2(r + 2u);
        let t = clamp(dot(q - origin, word_vec2(r + 6u)), 0.0, 1.0);
        let off = origin + word_vec2(r + 4u) * t - q;
        let dist_sq = dot(off, off);
        if dist_sq < best_dist_sq {
            best_dist_sq = dist_sq;
            best_a = trees[r];
            best_b = trees[r + 1u];
            best_t = t;
        }
    }
    child_w[best_a] += 1.0 - best_t;
    child_w[best_b] += best_t;
}

// `normalise_influences`: to a sum of one, or everything to the child of the largest raw band.
fn normalise_influences(n: u32, raw_best: u32) {
    var sum = 0.0;
    for (var i = 0u; i < n; i++) {
        sum += child_w[i];
    }
    if sum > 1e-6 {
        let inv = 1.0 / sum;
        for (var i = 0u; i < n; i++) {
            child_w[i] *= inv;
        }
    } else {
        clear_children(n);
        child_w[raw_best] = 1.0;
    }
}

// `CartesianSpace::fill`: normaliser, n, points, n × n gradients.
fn cartesian(at: u32, p: vec2<f32>) {
    let q = space_query(at, p);
    let n = trees[at + NORMALISER_LEN];
    let points = at + NORMALISER_LEN + 1u;
    let gradients = points + 2u * n;
    var raw_best = 0u;
    var raw_best_h = -F32_MAX;
    for (var i = 0u; i < n; i++) {
        let d = q - word_vec2(points + 2u * i);
        var h = 1.0;
        for (var j = 0u; j < n; j++) {
            h = min(h, 1.0 - dot(d, word_vec2(gradients + 2u * (i * n + j))));
        }
        if h > raw_best_h {
            raw_best = i;
            raw_best_h = h;
        }
        child_w[i] = max(h, 0.0);
    }
    normalise_influences(n, raw_best);
}

// atan(x) for x in [0, 1] (Cephes' atanf: reduced about tan(π/8), a degree-9 odd
// polynomial; within 2e-7 of the true angle, where WGSL's own atan2 promises no better than
// 4096 ulp).
fn atan_unit(x: f32) -> f32 {
    var base = 0.0;
    var z = x;
    if x > 0.41421356237309503 {
        base = PI * 0.25;
        z = (x - 1.0) / (x + 1.0);
    }
    let zz = z * z;
    return base + (((8.05374449538e-2 * zz - 1.38776856032e-1) * zz + 1.99777106478e-1) * zz - 3.33329491539e-1) * zz * z + z;
}

// `f32::atan2` for canonical inputs (no NaN; the origin is +0, +0 and reads 0).
fn atan2_precise(y: f32, x: f32) -> f32 {
    let ax = abs(x);
    let ay = abs(y);
    var a = 0.0;
    if ay <= ax {
        if ax > 0.0 {
            a = atan_unit(ay / ax);
        }
    } else {
        a = PI * 0.5 - atan_unit(ax / ay);
    }
    if x < 0.0 {
        a = PI - a;
    }
    if (bitcast<u32>(y) >> 31u) == 1u {
        a = -a;
    }
    return a;
}

// `gradient_band::wrap_angle`.
fn wrap_angle(a: f32) -> f32 {
    if a > PI {
        return a - TAU;
    }
    if a < -PI {
        return a + TAU;
    }
    return a;
}

// `DirectionalSpace::fill`: normaliser (centred on the origin), n, radii, n × n pairs of six
// words (axis angle, angle of i, angular weight, inverse mean radius, gradient).
fn directional(at: u32, p: vec2<f32>) {
    let q = space_query(at, p);
    let radius = length(q);
    let angle = atan2_precise(q.y, q.x);
    let n = trees[at + NORMALISER_LEN];
    let radii = at + NORMALISER_LEN + 1u;
    let pairs = radii + n;
    var raw_best = 0u;
    var raw_best_h = -F32_MAX;
    for (var i = 0u; i < n; i++) {
        let ri = word_f32(radii + i);
        var h = 1.0;
        for (var j = 0u; j < n; j++) {
            let r = pairs + 6u * (i * n + j);
            let v = vec2<f32>(
                (radius - ri) * word_f32(r + 3u),
                (wrap_angle(angle - word_f32(r)) - word_f32(r + 1u)) * word_f32(r + 2u),
            );
            h = min(h, 1.0 - dot(v, word_vec2(r + 4u)));
        }
        if h > raw_best_h {
            raw_best = i;
            raw_best_h = h;
        }
        child_w[i] = max(h, 0.0);
    }
    normalise_influences(n, raw_best);
}

// A DIRECT node: child i weighs max(input_i, 0) / Σ (equal shares when all are 0). The CPU
// sums in f64; here the inputs are first scaled near 1 so that the sum neither overflows nor
// loses subnormals.
fn direct(list: u32, n: u32, inputs_at: u32) {
    var largest = 0.0;
    for (var i = 0u; i < n; i++) {
        let v = clamp(inputs[inputs_at + trees[list + i]], 0.0, F32_MAX);
        child_w[i] = v;
        largest = max(largest, v);
    }
    if largest == 0.0 {
        for (var i = 0u; i < n; i++) {
            child_w[i] = 1.0 / f32(n);
        }
        return;
    }
    var k = 1.0;
    if largest > 1e30 {
        k = 7.888609052210118e-31; // 2^-100
    } else if largest < 1e-30 {
        k = 1.2676506002282294e30; // 2^100
    }
    var sum = 0.0;
    for (var i = 0u; i < n; i++) {
        child_w[i] *= k;
        sum += child_w[i];
    }
    for (var i = 0u; i < n; i++) {
        child_w[i] /= sum;
    }
}

// A state's leaf weights, as `BlendTrees::leaf_weights` writes them: zero past its leaves.
var<private> leaf_w: array<f32, MAX_BLEND_CHILDREN>;

// `BlendTrees::leaf_weights`: the leaf weights of `state` for the inputs from `inputs_at` into
// `leaf_w[..trees[HEADER_MAX_LEAVES]]`, all zero for a state past the table. Breadth-first over
// the state's nodes, so each node's weight is known before its children are visited. The
// expand stage (`shaders/expand.wgsl`, appended to this file) calls it too.
fn tree_weights(state: u32, inputs_at: u32) {
    let max_leaves = trees[HEADER_MAX_LEAVES];
    for (var k = 0u; k < max_leaves; k++) {
        leaf_w[k] = 0.0;
    }
    if state >= trees[HEADER_STATES] {
        return;
    }
    let state_at = trees[HEADER_STATES_AT] + STATE_LEN * state;
    let first_node = trees[state_at];
    let num_nodes = trees[state_at + 1u];
    node_w[0] = 1.0;
    for (var n = 0u; n < num_nodes; n++) {
        let node = trees[HEADER_NODES_AT] + NODE_LEN * (first_node + n);
        let kind = trees[node];
        let w = node_w[n];
        if kind == NODE_LEAF {
            leaf_w[trees[node + 6u]] = w;
            continue;
        }
        let first_child = trees[node + 1u];
        let num_children = trees[node + 2u];
        let data = trees[node + 3u];
        let p = vec2<f32>(inputs[inputs_at + trees[node + 4u]], inputs[inputs_at + trees[node + 5u]]);
        switch kind {
            case NODE_DIRECT: {
                direct(data, num_children, inputs_at);
            }
            case SPACE_ONE_D: {
                one_d(data, p.x);
            }
            case SPACE_FREEFORM: {
                freeform(data, p);
            }
            case SPACE_CARTESIAN: {
                cartesian(data, p);
            }
            case SPACE_DIRECTIONAL: {
                directional(data, p);
            }
            default: {
                grid(data, p);
            }
        }
        for (var i = 0u; i < num_children; i++) {
            node_w[first_child + i] = w * child_w[i];
        }
    }
}

@compute @workgroup_size(BLEND_SPACE_WORKGROUP)
fn blend_space_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let request = id.x + id.y * blend_params.groups_x * BLEND_SPACE_WORKGROUP;
    if request >= blend_params.num_requests {
        return;
    }
    let inputs_at = request / blend_params.requests_per_character * trees[HEADER_INPUTS];
    tree_weights(requests[request], inputs_at);
    let max_leaves = trees[HEADER_MAX_LEAVES];
    let out_at = request * max_leaves;
    for (var k = 0u; k < max_leaves; k++) {
        blend_weights[out_at + k] = leaf_w[k];
    }
}
