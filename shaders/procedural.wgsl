// The procedural stage: feet on the ground, two-bone IK and look-at chains on each character's
// local pose after layers and before local-to-model, one thread a character. Mirrored by
// `src/eval/procedural.rs`, of which this is an f32 translation, function for function, so
// that the two agree within 1e-4. The CPU runs four characters a call in SIMD lanes
// (`eval::procedural::lanes`) and composes its walks from the root down, where this walks up
// (`model_frame`): the same frames, rounded in another order.
//
// Self-contained (no `shared/` files): the stage binds its own group, and its poses are the
// stage path's local poses (three vec4 a joint, `shared/types.wgsl`'s `Transform`).

// Keep in sync with `throng::gpu::procedural::procedural_words` (`tests/gpu_procedural.rs`
// checks): a header of 8 words, then the parents, the look-at chains' offsets and words, the
// two-bone chains and the feet.
const HEADER_LOOK_AT: u32 = 0u;
const HEADER_TWO_BONE: u32 = 1u;
const HEADER_FEET: u32 = 2u;
const HEADER_PELVIS: u32 = 3u;
const HEADER_PARENTS_AT: u32 = 4u;
const HEADER_LOOK_AT_AT: u32 = 5u;
const HEADER_TWO_BONE_AT: u32 = 6u;
const HEADER_FEET_AT: u32 = 7u;
// A look-at chain: its joint count, the forward axis, then per joint its index, share, limit.
const LOOK_AT_HEAD: u32 = 4u;
const LOOK_AT_JOINT: u32 = 3u;
// A two-bone chain: three joints, soft fraction, end rule (`END_TARGET` for the target's).
const TWO_BONE_LEN: u32 = 5u;
const END_TARGET: u32 = 1u;
// A foot: three joints, soft fraction, ankle height, tilt limit.
const FOOT_LEN: u32 = 6u;
// Per character, floats: a look-at chain's target and weight, a two-bone chain's target,
// pole, rotation and weight, then (with feet) the ground's weight and per foot its height and
// normal (`throng::gpu::procedural::pack_targets`).
const LOOK_AT_TARGET_LEN: u32 = 4u;
const TWO_BONE_TARGET_LEN: u32 = 11u;
const FOOT_TARGET_LEN: u32 = 4u;

// `throng::program::MAX_FEET`, `throng::eval::procedural::EPSILON_M`, `throng::rig::NO_PARENT`
// as the words hold it.
const MAX_FEET: u32 = 4u;
const EPSILON_M: f32 = 1e-6;
const EPSILON_SQ_M2: f32 = EPSILON_M * EPSILON_M;
const NO_PARENT: u32 = 0xffffffffu;
// Below this angle between two rotations, `slerp` is a normalised lerp (`eval::procedural`'s
// `SLERP_LINEAR_RAD`).
const SLERP_LINEAR_RAD: f32 = 1e-3;

// Threads per workgroup, one character each (`throng::gpu::procedural::PROCEDURAL_WORKGROUP`).
const PROCEDURAL_WORKGROUP: u32 = 64u;

// Keep in sync with `throng::gpu::procedural::ProceduralParams`.
struct ProceduralParams {
    num_characters: u32,
    num_joints: u32,
    // Workgroups along x; a character's index is `x + y * groups_x * PROCEDURAL_WORKGROUP`.
    groups_x: u32,
    // Floats of targets per character.
    target_stride: u32,
    // Index in `procedural_poses` (vec4s) of character 0's first joint.
    pose_base: u32,
    // Row of the targets character 0 reads.
    target_base: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> procedural_params: ProceduralParams;
// `procedural_words`: uploaded once per archetype.
@group(0) @binding(1) var<storage, read> procedural_rig: array<u32>;
// `pack_targets`: `target_stride` floats per row.
@group(0) @binding(2) var<storage, read> procedural_targets: array<f32>;
// Local poses, three vec4 a joint, changed in place.
@group(0) @binding(3) var<storage, read_write> procedural_poses: array<vec4<f32>>;

// The character's first joint in `procedural_poses`.
var<private> pose_at: u32;

// `Frame`: `translation * rotation * scale`.
struct Frame {
    position: vec3<f32>,
    rotation: vec4<f32>,
    scale: vec3<f32>,
}

// `Arc`: the axis not normalised (`from × to`, or a unit perpendicular), its length, the angle.
struct Arc {
    axis: vec3<f32>,
    axis_len: f32,
    angle: f32,
}

// A two-bone chain's joints' model frames: root, middle, end.
struct ChainFrames {
    a: Frame,
    b: Frame,
    c: Frame,
}

struct TwoBone {
    a: u32,
    b: u32,
    c: u32,
    soft_fraction: f32,
}

fn word_f32(at: u32) -> f32 {
    return bitcast<f32>(procedural_rig[at]);
}

fn word_vec3(at: u32) -> vec3<f32> {
    return vec3<f32>(word_f32(at), word_f32(at + 1u), word_f32(at + 2u));
}

fn target_vec3(at: u32) -> vec3<f32> {
    return vec3<f32>(procedural_targets[at], procedural_targets[at + 1u], procedural_targets[at + 2u]);
}

// glam's `Quat * Quat`.
fn q_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(
        a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
        a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
        a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    );
}

// `eval::procedural`'s `Q4::rotate`: `v` turned by `q` (unit), `v + w t + q.xyz × t`, `t = 2 q.xyz × v`.
fn q_rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

fn q_conjugate(q: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(-q.xyz, q.w);
}

// glam's `normalize`: times the reciprocal of the length.
fn q_normalize(q: vec4<f32>) -> vec4<f32> {
    return q * (1.0 / length(q));
}

fn v_normalize(v: vec3<f32>) -> vec3<f32> {
    return v * (1.0 / length(v));
}

// `Arc::turn`: the rotation by `angle` about the arc's axis.
fn arc_turn(a: Arc, angle: f32) -> vec4<f32> {
    let sc = sin_cos(0.5 * angle);
    return vec4<f32>(a.axis * (sc.x / a.axis_len), sc.y);
}

// glam's `lerp`.
fn v_lerp(a: vec3<f32>, b: vec3<f32>, t: f32) -> vec3<f32> {
    return a * (1.0 - t) + b * t;
}

// `eval::procedural::slerp`: the angle between the two as 4-vectors from `atan2` of their
// difference and sum, the shorter way round.
fn slerp(start: vec4<f32>, to_given: vec4<f32>, t: f32) -> vec4<f32> {
    var end = to_given;
    if dot(start, end) < 0.0 {
        end = -end;
    }
    let theta = 2.0 * atan2_positive(length(start - end), length(start + end));
    if theta < SLERP_LINEAR_RAD {
        return q_normalize(start * (1.0 - t) + end * t);
    }
    return q_normalize(start * sin_cos((1.0 - t) * theta).x + end * sin_cos(t * theta).x);
}

fn identity_frame() -> Frame {
    return Frame(vec3<f32>(0.0), vec4<f32>(0.0, 0.0, 0.0, 1.0), vec3<f32>(1.0));
}

// `below` (a frame relative to `f`) in `f`'s space.
fn compose(f: Frame, below: Frame) -> Frame {
    return Frame(
        f.position + q_rotate(f.rotation, f.scale * below.position),
        q_mul(f.rotation, below.rotation),
        f.scale * below.scale,
    );
}

fn parent_of(joint: u32) -> u32 {
    return procedural_rig[procedural_rig[HEADER_PARENTS_AT] + joint];
}

fn local_frame(joint: u32) -> Frame {
    let at = pose_at + 3u * joint;
    return Frame(procedural_poses[at].xyz, procedural_poses[at + 1u], procedural_poses[at + 2u].xyz);
}

fn local_rotation(joint: u32) -> vec4<f32> {
    return procedural_poses[pose_at + 3u * joint + 1u];
}

fn set_local_rotation(joint: u32, rotation: vec4<f32>) {
    procedural_poses[pose_at + 3u * joint + 1u] = rotation;
}

// `frame_below`: `joint`'s frame relative to its ancestor `above` (model space for
// NO_PARENT), a composed rotation normalised, a joint right below `above` its local as it is.
// The walk is bounded by the rig's joints, which a checked rig never reaches.
fn frame_below(above: u32, joint: u32) -> Frame {
    if joint == above || joint == NO_PARENT {
        return identity_frame();
    }
    var frame = local_frame(joint);
    var j = parent_of(joint);
    if j == above || j == NO_PARENT {
        return frame;
    }
    for (var steps = 0u; j != above && j != NO_PARENT && steps < procedural_params.num_joints; steps++) {
        frame = compose(local_frame(j), frame);
        j = parent_of(j);
    }
    frame.rotation = q_normalize(frame.rotation);
    return frame;
}

// `Known`: the model frame of a joint the walks so far reached and nothing has moved since
// (after a chain, the parent of its first joint; NO_PARENT before any and after the pelvis
// moves), where the next walk may stop.
var<private> known_joint: u32;
var<private> known_frame: Frame;

fn remember(joint: u32, frame: Frame) {
    known_joint = joint;
    known_frame = frame;
}

// `walk`: `joint`'s model frame, walking up to the root or to `known_joint`, whose frame it
// takes; normalised as `frame_below`'s.
fn model_frame(joint: u32) -> Frame {
    if joint == NO_PARENT {
        return identity_frame();
    }
    if joint == known_joint {
        return known_frame;
    }
    var frame = local_frame(joint);
    var j = parent_of(joint);
    if j == NO_PARENT {
        return frame;
    }
    for (var steps = 0u; j != known_joint && j != NO_PARENT && steps < procedural_params.num_joints; steps++) {
        frame = compose(local_frame(j), frame);
        j = parent_of(j);
    }
    if j != NO_PARENT {
        frame = compose(known_frame, frame);
    }
    frame.rotation = q_normalize(frame.rotation);
    return frame;
}

fn perpendicular(v: vec3<f32>) -> vec3<f32> {
    var helper = vec3<f32>(0.0, 1.0, 0.0);
    if abs(v.x) < 0.9 * length(v) {
        helper = vec3<f32>(1.0, 0.0, 0.0);
    }
    return v_normalize(cross(v, helper));
}

// `arc`: the shortest rotation from direction `from_dir` to `to_dir`, angle from `atan2`.
fn arc(from_dir: vec3<f32>, to_dir: vec3<f32>) -> Arc {
    let from_sq = dot(from_dir, from_dir);
    let to_sq = dot(to_dir, to_dir);
    if !(from_sq > EPSILON_SQ_M2 && to_sq > EPSILON_SQ_M2) {
        return Arc(vec3<f32>(1.0, 0.0, 0.0), 1.0, 0.0);
    }
    let c = cross(from_dir, to_dir);
    let s = length(c);
    let angle = atan2_positive(s, dot(from_dir, to_dir));
    if s * s > EPSILON_SQ_M2 * from_sq * to_sq {
        return Arc(c, s, angle);
    }
    return Arc(perpendicular(from_dir), 1.0, angle);
}

// `between`: the shortest rotation from `from_dir` to `to_dir` as the half-way quaternion,
// no trigonometry; a half turn about a perpendicular axis when they are opposite.
fn between(from_dir: vec3<f32>, to_dir: vec3<f32>) -> vec4<f32> {
    let from_sq = dot(from_dir, from_dir);
    let to_sq = dot(to_dir, to_dir);
    if !(from_sq > EPSILON_SQ_M2 && to_sq > EPSILON_SQ_M2) {
        return vec4<f32>(0.0, 0.0, 0.0, 1.0);
    }
    let c = cross(from_dir, to_dir);
    let d = dot(from_dir, to_dir);
    let lengths_sq = from_sq * to_sq;
    if dot(c, c) <= EPSILON_SQ_M2 * lengths_sq && d < 0.0 {
        return vec4<f32>(perpendicular(from_dir), 0.0);
    }
    return q_normalize(vec4<f32>(c, sqrt(lengths_sq) + d));
}

// `in_frame`: the model-space turn `delta` seen from a joint of model rotation `model`.
fn in_frame(model: vec4<f32>, delta: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(q_rotate(q_conjugate(model), delta.xyz), delta.w);
}

// `carried`: `f` turned by `delta` about `pivot`.
fn carried(f: Frame, pivot: vec3<f32>, delta: vec4<f32>) -> Frame {
    return Frame(pivot + q_rotate(delta, f.position - pivot), q_mul(delta, f.rotation), f.scale);
}

fn translate_joint(joint: u32, offset: vec3<f32>) {
    let parent = model_frame(parent_of(joint));
    let s = abs(parent.scale);
    if !(min(min(s.x, s.y), s.z) > EPSILON_M) {
        return;
    }
    let at = pose_at + 3u * joint;
    let t = procedural_poses[at];
    procedural_poses[at] = vec4<f32>(t.xyz + q_rotate(q_conjugate(parent.rotation), offset) / parent.scale, t.w);
}

fn chain_frames(chain: TwoBone) -> ChainFrames {
    let above_a = parent_of(chain.a);
    remember(above_a, model_frame(above_a));
    let a = compose(known_frame, local_frame(chain.a));
    let b = compose(a, frame_below(chain.a, chain.b));
    let c = compose(b, frame_below(chain.b, chain.c));
    return ChainFrames(a, b, c);
}

// `reach`, once the goal and the end's final model orientation are known.
fn reach(chain: TwoBone, f: ChainFrames, pole: vec3<f32>, goal: vec3<f32>, end_rotation: vec4<f32>) {
    let pa = f.a.position;
    let pb = f.b.position;
    let pc = f.c.position;
    let upper = length(pb - pa);
    let lower = length(pc - pb);
    let full = upper + lower;
    let to_goal = goal - pa;
    let raw_distance = length(to_goal);
    var direction = vec3<f32>(0.0, 1.0, 0.0);
    var candidates = array<vec3<f32>, 3>(pb - pa, pc - pa, to_goal);
    for (var i = 0u; i < 3u; i++) {
        if dot(candidates[i], candidates[i]) > EPSILON_SQ_M2 {
            direction = v_normalize(candidates[i]);
        }
    }
    // The gap to full extension, computed as such (the knee moves as its square root).
    let soft = chain.soft_fraction * full;
    let start = full - soft;
    var gap = max(full - raw_distance, 0.0);
    if soft > EPSILON_M && raw_distance > start {
        gap = soft * exp(-(raw_distance - start) / soft);
    }
    let fold = abs(upper - lower);
    var goal_distance = full - gap;
    if goal_distance < fold {
        goal_distance = fold;
        gap = full - fold;
    }
    var along = 0.0;
    var across = upper;
    if goal_distance > EPSILON_M {
        let d = goal_distance;
        along = clamp((upper * upper + d * d - lower * lower) / (2.0 * d), -upper, upper);
        across = sqrt(max(gap * (full + d) * (d - fold) * (d + fold), 0.0)) / (2.0 * d);
    }
    var side = perpendicular(direction);
    var sides = array<vec3<f32>, 2>(pb - pa, pole);
    for (var i = 0u; i < 2u; i++) {
        let off_line = sides[i] - direction * dot(sides[i], direction);
        if dot(off_line, off_line) > EPSILON_SQ_M2 {
            side = v_normalize(off_line);
        }
    }
    let middle = pa + direction * along + side * across;
    let end = pa + direction * goal_distance;
    let root_turn = between(pb - pa, middle - pa);
    let above_c = q_mul(f.c.rotation, q_conjugate(local_rotation(chain.c)));
    set_local_rotation(chain.a, q_normalize(q_mul(local_rotation(chain.a), in_frame(f.a.rotation, root_turn))));
    let turned_b = carried(f.b, pa, root_turn);
    let turned_c = pa + q_rotate(root_turn, pc - pa);
    let middle_turn = between(turned_c - turned_b.position, end - turned_b.position);
    set_local_rotation(chain.b, q_normalize(q_mul(local_rotation(chain.b), in_frame(turned_b.rotation, middle_turn))));
    let new_above_c = q_mul(q_mul(middle_turn, root_turn), above_c);
    set_local_rotation(chain.c, q_normalize(q_mul(q_conjugate(new_above_c), end_rotation)));
}

fn two_bone_chain(at: u32) -> TwoBone {
    return TwoBone(procedural_rig[at], procedural_rig[at + 1u], procedural_rig[at + 2u], word_f32(at + 3u));
}

// `two_bone`: chain at word `at`, its targets from float `t`.
fn two_bone(at: u32, t: u32, weight: f32) {
    let chain = two_bone_chain(at);
    let frames = chain_frames(chain);
    var end_rotation = frames.c.rotation;
    if procedural_rig[at + 4u] == END_TARGET {
        let rotation = vec4<f32>(
            procedural_targets[t + 6u],
            procedural_targets[t + 7u],
            procedural_targets[t + 8u],
            procedural_targets[t + 9u],
        );
        end_rotation = slerp(frames.c.rotation, rotation, weight);
    }
    let goal = v_lerp(frames.c.position, target_vec3(t), weight);
    reach(chain, frames, target_vec3(t + 3u), goal, end_rotation);
}

// `look_at`: chain at word `at`.
fn look_at(at: u32, aim: vec3<f32>, weight: f32) {
    let n = procedural_rig[at];
    let forward = word_vec3(at + 1u);
    let first = procedural_rig[at + LOOK_AT_HEAD];
    let end = procedural_rig[at + LOOK_AT_HEAD + LOOK_AT_JOINT * (n - 1u)];
    let above_first = parent_of(first);
    remember(above_first, model_frame(above_first));
    var frame = compose(known_frame, local_frame(first));
    let end_frame = compose(frame, frame_below(first, end));
    var end_position = end_frame.position;
    var end_forward = q_rotate(end_frame.rotation, forward);
    var above = first;
    for (var k = 0u; k < n; k++) {
        let j = at + LOOK_AT_HEAD + LOOK_AT_JOINT * k;
        let joint = procedural_rig[j];
        let share = word_f32(j + 1u);
        let limit = word_f32(j + 2u);
        if joint != first {
            let parent_joint = parent_of(joint);
            var parent = frame;
            if parent_joint != above {
                parent = compose(frame, frame_below(above, parent_joint));
            }
            frame = compose(parent, local_frame(joint));
            above = joint;
        }
        let to_dir = aim - end_position;
        var delta: vec4<f32>;
        if share == 1.0 && weight == 1.0 && limit >= PI {
            delta = between(end_forward, to_dir);
        } else {
            let a = arc(end_forward, to_dir);
            let turn = min(a.angle * share, limit) * weight;
            if !(turn > 0.0) {
                continue;
            }
            delta = arc_turn(a, turn);
        }
        set_local_rotation(joint, q_normalize(q_mul(local_rotation(joint), in_frame(frame.rotation, delta))));
        end_position = frame.position + q_rotate(delta, end_position - frame.position);
        end_forward = q_rotate(delta, end_forward);
        frame.rotation = q_mul(delta, frame.rotation);
    }
}

// `ground`: the ground's weight at float `t`, each foot's height and normal after it.
fn ground(t: u32, weight: f32) {
    let feet = min(procedural_rig[HEADER_FEET], MAX_FEET);
    let feet_at = procedural_rig[HEADER_FEET_AT];
    var goals: array<vec3<f32>, MAX_FEET>;
    var ends: array<vec4<f32>, MAX_FEET>;
    var drop = 0.0;
    for (var f = 0u; f < feet; f++) {
        let at = feet_at + FOOT_LEN * f;
        let ankle_height = word_f32(at + 4u);
        let max_tilt = word_f32(at + 5u);
        let ankle = model_frame(procedural_rig[at + 2u]);
        let p = ankle.position;
        let foot_t = t + 1u + FOOT_TARGET_LEN * f;
        let a = arc(vec3<f32>(0.0, 1.0, 0.0), target_vec3(foot_t + 1u));
        let tilt = arc_turn(a, min(a.angle, max_tilt) * weight);
        let lift = p.y - ankle_height;
        let sole = vec3<f32>(p.x, procedural_targets[foot_t] + lift, p.z);
        goals[f] = v_lerp(p, sole + q_rotate(tilt, vec3<f32>(0.0, 1.0, 0.0)) * ankle_height, weight);
        ends[f] = q_mul(tilt, ankle.rotation);
        drop = min(drop, goals[f].y - p.y);
    }
    if drop < 0.0 {
        translate_joint(procedural_rig[HEADER_PELVIS], vec3<f32>(0.0, drop, 0.0));
        remember(NO_PARENT, identity_frame());
    }
    for (var f = 0u; f < feet; f++) {
        let chain = two_bone_chain(feet_at + FOOT_LEN * f);
        reach(chain, chain_frames(chain), vec3<f32>(0.0), goals[f], ends[f]);
    }
}

// `procedural`: ground, then two-bone chains, then look-at chains, each only where its weight
// is above 0, each walk up the rig stopping where the last one did. A row whose weights are all 0 is neither read beyond them nor written.
fn procedural(t: u32) {
    remember(NO_PARENT, identity_frame());
    let look_ats = procedural_rig[HEADER_LOOK_AT];
    let two_bones = procedural_rig[HEADER_TWO_BONE];
    let two_bone_t = t + LOOK_AT_TARGET_LEN * look_ats;
    let ground_t = two_bone_t + TWO_BONE_TARGET_LEN * two_bones;
    if procedural_rig[HEADER_FEET] > 0u {
        let weight = procedural_targets[ground_t];
        if weight > 0.0 {
            ground(ground_t, weight);
        }
    }
    let two_bone_at = procedural_rig[HEADER_TWO_BONE_AT];
    for (var i = 0u; i < two_bones; i++) {
        let at = two_bone_t + TWO_BONE_TARGET_LEN * i;
        let weight = procedural_targets[at + 10u];
        if weight > 0.0 {
            two_bone(two_bone_at + TWO_BONE_LEN * i, at, weight);
        }
    }
    let look_at_at = procedural_rig[HEADER_LOOK_AT_AT];
    for (var i = 0u; i < look_ats; i++) {
        let at = t + LOOK_AT_TARGET_LEN * i;
        let weight = procedural_targets[at + 3u];
        if weight > 0.0 {
            look_at(procedural_rig[look_at_at + i], target_vec3(at), weight);
        }
    }
}

@compute @workgroup_size(PROCEDURAL_WORKGROUP)
fn procedural_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let character = id.x + id.y * procedural_params.groups_x * PROCEDURAL_WORKGROUP;
    if character >= procedural_params.num_characters {
        return;
    }
    pose_at = procedural_params.pose_base + character * procedural_params.num_joints * 3u;
    procedural((procedural_params.target_base + character) * procedural_params.target_stride);
}
