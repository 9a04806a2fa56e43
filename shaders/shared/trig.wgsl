// Sine, cosine and arctangent for the stages whose results must match the CPU's to far better
// than a driver's own builtins give: Vulkan allows `sin` and `cos` 2^-11 of absolute error and
// lavapipe's `atan2` is a short polynomial, which the small angles of slerp, inertialization
// offsets and the two-bone solve turn into large relative errors (a 1e-4 difference between
// the evaluators' matrices, where these give 1e-5). These are Cephes' single-precision
// `sinf`/`cosf` and `atanf`, within a few ulp of the CPU's libm for the angles the stages take
// (|x| below a few turns); `eval::procedural`'s lanes run the same polynomials.
const PI: f32 = 3.14159265358979;
const FRAC_PI_2: f32 = 1.57079632679490;
const FRAC_PI_4: f32 = 0.785398163397448;

// `vec2(sin(x), cos(x))`: x reduced by the nearest multiple of π/2 in three parts
// (Cody–Waite), then each from its polynomial on [−π/4, π/4].
fn sin_cos(x: f32) -> vec2<f32> {
    let quadrant = round(x * (2.0 / PI));
    let r = ((x - quadrant * 1.5703125) - quadrant * 4.837512969970703125e-4) - quadrant * 7.54978995489188216e-8;
    let z = r * r;
    let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    let c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    // The quadrant swaps sine and cosine and flips their signs: selects, not branches.
    let q = i32(quadrant) & 3;
    let swap = (q & 1) == 1;
    let sin_sign = select(1.0, -1.0, q >= 2);
    let cos_sign = select(1.0, -1.0, q == 1 || q == 2);
    return vec2<f32>(select(s, c, swap) * sin_sign, select(c, s, swap) * cos_sign);
}

// `atan(x)` for x ≥ 0: reduced to |t| ≤ tan(π/8) around 0, π/4 or π/2.
fn atan_positive(x: f32) -> f32 {
    var base = 0.0;
    var t = x;
    if x > 2.414213562373095 {
        base = FRAC_PI_2;
        t = -1.0 / x;
    } else if x > 0.4142135623730950 {
        base = FRAC_PI_4;
        t = (x - 1.0) / (x + 1.0);
    }
    let z = t * t;
    return base + (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * t + t;
}

// `atan2(y, x)` for y ≥ 0 (a length, as every call here has): in [0, π].
fn atan2_positive(y: f32, x: f32) -> f32 {
    if x > 0.0 {
        return atan_positive(y / x);
    }
    if x < 0.0 {
        return PI - atan_positive(y / -x);
    }
    return select(0.0, FRAC_PI_2, y > 0.0);
}

