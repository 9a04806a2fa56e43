// The transition stage: one layer's pose while a transition runs — cut, frozen snapshot,
// crossfade, or inertialization capture and decay — and the layer's memory between frames.
// Mirrors `throng::eval::transition` and `throng::eval::inertialize`. Needs `sample.wgsl`.
//
// A thread keeps its joints (`thread + k * WORKGROUP_SIZE`) in private arrays from sampling
// to the layers stage; only the inertialization's largest offset is shared, by atomics.

// `eval::inertialize::VISUALLY_ZERO`: below this an offset is visually zero.
const VISUALLY_ZERO: f32 = 1e-4;
// `eval::inertialize::MIN_VELOCITY_DT_S`: a switch after a shorter step captures no velocity.
const MIN_VELOCITY_DT_S: f32 = 1e-4;
// `eval::inertialize::MAX_OFFSET_M` and `MAX_OFFSET_RAD`: the largest offset component added
// to a joint, translation and rotation vector, whatever the curve, its duration and velocity.
const MAX_OFFSET_M: f32 = 1.28e8;
const MAX_OFFSET_RAD: f32 = 1e4;
const LN_2: f32 = 0.6931472;
// Gates, `true` in the production kernel. `SWITCH_CODE` guards the code only a switch frame
// runs: the frozen snapshot taken (`snapshot_joint`), the inertialization's capture from both
// slots and its decay's start (`capture_slots`, `start_decay`) with the reset of its workgroup
// reductions and the two barriers around them (`transition_layer`), and the step-back blend
// only the capture reads (gated in `sample_layer_levels`, whose shared sample table holds it;
// `sample_layer`'s goes with the capture as dead code); `DECAY_CODE` guards the offset's decay.
// A production crowd's steady pass runs a kernel with `SWITCH_CODE` off for the characters
// whose frame runs none of it (`throng::gpu::ShapePass`); `throng::gpu::stats` compiles the
// layered frames with either or both off so that `throng::gpu::work_model` measures those
// regions as differences of static instruction counts.
const SWITCH_CODE: bool = true;
const DECAY_CODE: bool = true;
// Gates for measurement of paths a layer runs on some frames or layers only
// (`throng::gpu::MeasuredPath`): the base layer's root motion removed (`remove_root_motion`, on
// the root's lane where the program asks for it) and a frozen fade's mix with its snapshot
// (`snapshot_joint`), a displayed pose stored whole where its replay entry cannot replay it
// (`transition_levels`, `transition_layer`), a layer with memory's transition as a whole
// (`transition_levels`, its straight-line code and the slots' end; `evaluate_layer`, the
// fused kernels' `transition_layer`); Bollo's quintic offset decayed
// (`apply_offset`, the decay of `MODE_QUINTIC_OVERSHOOT` alone, measured in the steady kernel,
// whose decay code is on); `shaders/layers.wgsl` holds the combine's. `throng::gpu::stats`
// rewrites each to `false` in the settled kernel (the steady one for the overshoot) so that the
// work model charges it only where it runs.
const ROOT_MOTION_CODE: bool = true;
const SNAPSHOT_MIX_CODE: bool = true;
// The fused layered frame's replay before the layers (`frame_layers_main`: the check for a
// switching layer and, where one switches, the displayed poses replayed into their slots),
// which only a frame that may switch runs: the work model measures the check as the production
// kernel's count less its count with this gate off, less the replay's loop.
const REPLAY_CODE: bool = true;
const STORE_POSE_CODE: bool = true;
const TRANSITION_CODE: bool = true;
const OVERSHOOT_CODE: bool = true;
// Whether the frame kernels keep a displayed pose as its replay entry (`true`, production) or
// store every pose in its slot, as they did before replay entries
// (`throng::gpu::Specialisation::Stored`, rewritten to `false`: a variant for a device run to
// weigh the bytes the replay saves against the instructions it costs).
const REPLAY_DISPLAYED_POSES: bool = true;
// The characters a layered frame kernel evaluates (`throng::gpu::pipelines::ShapePass`, this
// line rewritten per pipeline): 0 every one; 1 those whose frame runs no switch code (no layer
// with memory switches or fades from a frozen snapshot), in a kernel built without it
// (`SWITCH_CODE` false); 2 the others. The production layered frame dispatches passes 1 and 2
// over the same characters, one after the other, so each character is evaluated by one.
const SHAPE_PASS: u32 = 0u;
const LAYER_STATE_VEC4S: u32 = 2u;
// Samples a replay entry holds (`throng::gpu::types::REPLAY_SAMPLES`): a frame that shows more
// stores its pose in the entry's slot instead.
const REPLAY_SAMPLES: u32 = 8u;
// vec4 of a layer's block before its joints: the state, the two replay entries' headers, their
// samples (`throng::gpu::types::LAYER_HEADER_BYTES`).
const LAYER_HEADER_VEC4S: u32 = LAYER_STATE_VEC4S + 2u + 2u * REPLAY_SAMPLES;
// A replay entry's header word (`throng::gpu::types::REPLAY_*`): the count of samples shown,
// then what turned them into the displayed pose, or `REPLAY_STORED` for a pose in the slot.
const REPLAY_COUNT_MASK: u32 = 0xffu;
const REPLAY_STORED: u32 = 0x100u;
const REPLAY_ROOT_MOTION: u32 = 0x200u;
const REPLAY_ADDITIVE: u32 = 0x400u;
const REPLAY_SNAPSHOT: u32 = 0x800u;
const REPLAY_DECAY_SHIFT: u32 = 12u;
// vec4 per joint in a layer's block: two slots of three and a memo of three.
const JOINT_STATE_VEC4S: u32 = 9u;
// A remembered pose's scale word when its scale differs between axes: a NaN, which no scale is
// (`JointStateLayout::NON_UNIFORM_SCALE`).
const NON_UNIFORM_SCALE: u32 = 0x7fc00001u;

// The layer's pose for this thread's joints: sampled, then turned into what the layer shows.
var<private> layer_pose: array<Transform, JOINTS_PER_THREAD>;
// The destination one step earlier (inertialization's switch update), else the pose itself.
var<private> step_back_pose: array<Transform, JOINTS_PER_THREAD>;
// Largest offset and offset velocity component over the layer's joints at a capture, as the
// bits of non-negative floats (which order as the floats do).
var<workgroup> largest_offset_bits: atomic<u32>;
var<workgroup> largest_velocity_bits: atomic<u32>;

fn identity_transform() -> Transform {
    return Transform(vec3<f32>(0.0), 0.0, vec4<f32>(0.0, 0.0, 0.0, 1.0), vec3<f32>(1.0), 0.0);
}

// An inertialization offset (`eval::inertialize::JointOffset`).
struct JointOffset {
    translation: vec3<f32>,
    translation_velocity: vec3<f32>,
    rotation: vec3<f32>,
    rotation_velocity: vec3<f32>,
}

// ---- Memory layout (see `LayerState` in types.wgsl) ----
//
// A layer's block: its `LayerState` (two vec4: the first read and written every frame the layer
// is evaluated, the second, the largest offset velocity, written where a capture starts a
// spring's decay and read while it decays), then structure-of-arrays over the rig's J
// joints, so that the threads of a workgroup, one joint each, read and write whole contiguous
// lines: slot 0's poses (J × [translation + the scale's one value, rotation, the scale where
// its axes differ]), slot 1's, then the memos (J × three vec4: the frozen snapshot, laid out as
// a slot's pose, or the inertialization offsets — translation, translation velocity, rotation
// vector, rotation velocity packed into twelve floats — never both at once: a switch starts
// one and ends the other). 20 + 9J vec4 in all (LAYER_HEADER_VEC4S before the joints). Every
// joint's vec4 belongs to one joint and every entry's to one writer (thread 0 the header, thread
// i sample i), so no two threads store into one vec4: stores are of whole vec4s, since Metal's
// compiler turns a component store into a read-modify-write of the vector, a race where two
// threads share one.
// The last two displayed poses alternate between the slots, each described by a replay entry
// after the state (a header vec4, then up to REPLAY_SAMPLES raw `ClipSample`s): a frame writes
// the entry of the slot it fills and reads nothing unless a switch needs it. The entry holds
// what the pose was made of — the samples shown, the root motion removed, the frozen fade's
// weight, the decay applied — and the pose is replayed from it and the memo only when a switch
// reads it (`store_switch_sources`): some 50 bytes a layer a frame where the pose itself is 32 a joint.
// A frame that shows more samples than an entry holds, and the transition stage (whose poses
// the layers stage reads), store the pose in the slot as it is, the entry saying so
// (`REPLAY_STORED`): 32 bytes a joint whose scale is uniform (the same bits on every axis, as
// nearly every rig's), 48 where it is not, the poses kept exactly. A switch that changes the
// memo (a capture, a frozen snapshot) stores the last displayed pose too, since its entry
// would otherwise replay it over the new memo. (A slot that always wrote its third vec4 moved
// 48 bytes a joint; before it, two vec4 with both slots' scale.yz sharing a third read that
// vec4 every frame to keep the other pair: 64.)

// First vec4 of memory slot `m` (`LayerSetup::memory`) of chunk character `c` in the
// `layer_memory` window; only layers that keep memory have a slot.
fn layer_block(c: u32, m: u32) -> u32 {
    return params.memory_base + (c * params.num_memory_layers + m) * (LAYER_HEADER_VEC4S + NUM_JOINTS * JOINT_STATE_VEC4S);
}

// One joint of one layer's block.
struct JointRef {
    block: u32,
    joint: u32,
}

fn joint_ref(block: u32, joint: u32) -> JointRef {
    return JointRef(block, joint);
}

fn slot_index(jr: JointRef, slot: u32) -> u32 {
    return jr.block + LAYER_HEADER_VEC4S + (slot * NUM_JOINTS + jr.joint) * 3u;
}

fn memo_index(jr: JointRef) -> u32 {
    return jr.block + LAYER_HEADER_VEC4S + 6u * NUM_JOINTS + jr.joint * 3u;
}

// The state's first vec4: flags, decay, elapsed time, largest offset, what every frame reads.
// Its second holds only the largest offset velocity at the switch, which a capture sets and
// only a spring's decay reads (`load_spring_velocity`): not read here, `largest_velocity` 0.
fn load_layer_state(block: u32) -> LayerState {
    let a = layer_memory[block];
    return LayerState(a.x, bitcast<f32>(a.y), bitcast<f32>(a.z), bitcast<f32>(a.w), 0.0, 0u, 0u, 0u);
}

// The state's first vec4, every frame; its second only where `spring_captured` (a capture
// started a spring's decay, the one decay that reads it): every other decay, and a layer with
// none, leave it as it was, unread.
fn store_layer_state(block: u32, s: LayerState, spring_captured: bool) {
    layer_memory[block] = vec4<u32>(s.flags, bitcast<u32>(s.decay_s), bitcast<u32>(s.elapsed_s), bitcast<u32>(s.largest_offset));
    if spring_captured {
        layer_memory[block + 1u] = vec4<u32>(bitcast<u32>(s.largest_velocity), 0u, 0u, 0u);
    }
}

fn load_vec4(index: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(layer_memory[index]);
}

// A pose from `i` on (a slot or the snapshot): translation and the scale's one value, rotation,
// and only where the scale's three axes differ, the scale (the first vec4's w exactly
// `NON_UNIFORM_SCALE` says so, as `JointStateLayout::slot` reads it; any other word, another
// NaN included, is the value itself; a scale is never NaN).
fn load_pose(i: u32) -> Transform {
    let ts = layer_memory[i];
    var scale = vec3<f32>(bitcast<f32>(ts.w));
    if ts.w == NON_UNIFORM_SCALE {
        scale = load_vec4(i + 2u).xyz;
    }
    return Transform(bitcast<vec3<f32>>(ts.xyz), 0.0, load_vec4(i + 1u), scale, 0.0);
}

// Two whole vec4 for a pose whose scale is the same bits on every axis, three otherwise.
fn store_pose(i: u32, t: Transform) {
    let s = bitcast<vec3<u32>>(t.scale);
    let uniform = s.x == s.y && s.x == s.z;
    layer_memory[i] = vec4<u32>(bitcast<vec3<u32>>(t.translation), select(NON_UNIFORM_SCALE, s.x, uniform));
    layer_memory[i + 1u] = bitcast<vec4<u32>>(t.rotation);
    if !uniform {
        layer_memory[i + 2u] = vec4<u32>(s, 0u);
    }
}

// The pose in slot 0 or 1 of a joint.
fn load_slot(jr: JointRef, slot: u32) -> Transform {
    return load_pose(slot_index(jr, slot));
}

fn store_slot(jr: JointRef, slot: u32, t: Transform) {
    store_pose(slot_index(jr, slot), t);
}

fn load_snapshot(jr: JointRef) -> Transform {
    return load_pose(memo_index(jr));
}

fn store_snapshot(jr: JointRef, t: Transform) {
    store_pose(memo_index(jr), t);
}

fn load_offset(jr: JointRef) -> JointOffset {
    let i = memo_index(jr);
    let m0 = load_vec4(i);
    let m1 = load_vec4(i + 1u);
    let m2 = load_vec4(i + 2u);
    return JointOffset(m0.xyz, vec3<f32>(m0.w, m1.xy), vec3<f32>(m1.zw, m2.x), m2.yzw);
}

fn store_offset(jr: JointRef, o: JointOffset) {
    let i = memo_index(jr);
    layer_memory[i] = bitcast<vec4<u32>>(vec4<f32>(o.translation, o.translation_velocity.x));
    layer_memory[i + 1u] = bitcast<vec4<u32>>(vec4<f32>(o.translation_velocity.yz, o.rotation.xy));
    layer_memory[i + 2u] = bitcast<vec4<u32>>(vec4<f32>(o.rotation.z, o.rotation_velocity));
}

// ---- Replay entries ----

fn replay_header_index(block: u32, entry: u32) -> u32 {
    return block + LAYER_STATE_VEC4S + entry;
}

fn replay_sample_index(block: u32, entry: u32, i: u32) -> u32 {
    return block + LAYER_STATE_VEC4S + 2u + entry * REPLAY_SAMPLES + i;
}

fn load_replay_sample(block: u32, entry: u32, i: u32) -> ClipSample {
    let v = layer_memory[replay_sample_index(block, entry, i)];
    return ClipSample(v.x, bitcast<f32>(v.y), bitcast<f32>(v.z), bitcast<f32>(v.w));
}

// The samples a layer shows: a crossfade blends both sides at once; otherwise the destination
// alone (a frozen fade mixes its destination with the snapshot, not with its source's samples).
fn shown_range(program: LayerProgram) -> SampleRange {
    return SampleRange(program.first_sample, select(program.num_target, program.num_target + program.num_secondary, blends_both_sides(program)));
}

fn blends_both_sides(program: LayerProgram) -> bool {
    return program.mode == MODE_CROSSFADE && (program.flags & FLAG_SOURCE_SNAPSHOT) == 0u;
}

// The header word of the replay entry a frame of the layer writes, less the decay (which the
// transition decides): the samples shown and what of the layer's setup and program shaped the
// pose, or `REPLAY_STORED` where the pose is stored instead — a frame showing more samples than
// an entry holds, or `store` (the transition stage, whose poses the layers stage reads).
fn replay_flags(setup: LayerSetup, program: LayerProgram, store: bool) -> u32 {
    let count = shown_range(program).count;
    if store || count > REPLAY_SAMPLES {
        return REPLAY_STORED;
    }
    var flags = count;
    if setup.layer == 0u && (program.flags & FLAG_ROOT_MOTION) != 0u {
        flags |= REPLAY_ROOT_MOTION;
    }
    if setup.blend == BLEND_ADDITIVE {
        flags |= REPLAY_ADDITIVE;
    }
    if (program.flags & FLAG_SOURCE_SNAPSHOT) != 0u {
        flags |= REPLAY_SNAPSHOT;
    }
    return flags;
}

// The entry's header: `flags` with the decay applied this frame (its MODE_* code where
// `applied`, else none), the frozen fade's weight, the decay's parameter and the seconds since
// the switch at which it is applied (before this frame's step is added).
fn replay_header(flags: u32, s: TransitionStart, applied: bool, target_weight: f32) -> vec4<u32> {
    let decay = select(0u, s.decay, applied);
    return vec4<u32>(flags | (decay << REPLAY_DECAY_SHIFT), bitcast<u32>(target_weight), bitcast<u32>(s.decay_s), bitcast<u32>(s.elapsed_s));
}

// Thread `thread` of the `threads` serving one character writes its share of entry `entry`:
// thread 0 the header, the others the shown samples (from the frame's `first_sample` on),
// unless the entry stores its pose.
fn store_replay_entry(block: u32, entry: u32, header: vec4<u32>, first_sample: u32, thread: u32, threads: u32) {
    if thread == 0u {
        layer_memory[replay_header_index(block, entry)] = header;
    }
    if (header.x & REPLAY_STORED) != 0u {
        return;
    }
    let count = header.x & REPLAY_COUNT_MASK;
    for (var i = thread; i < count; i += threads) {
        let s = samples[first_sample + i - params.sample_base];
        layer_memory[replay_sample_index(block, entry, i)] = vec4<u32>(s.clip, bitcast<u32>(s.time_s), bitcast<u32>(s.weight), bitcast<u32>(s.position));
    }
}

// `sample_blend_joint_over` over an entry's `count` samples: the same arithmetic in the same
// order, so that the pose comes back as it was shown. With compact clips a blend of one takes
// the loop at weight exactly 1.0 and is not renormalised, as `table_blend_joint` does, which
// gives the clip's pose bit for bit (a negative zero aside) and keeps one copy of the decoder in
// the kernel.
fn replay_blend_joint(block: u32, entry: u32, count: u32, joint: u32, rest: Transform) -> Transform {
    var total = 0.0;
    var scaled = 0.0;
    for (var i = 0u; i < count; i++) {
        let w = counted_weight(load_replay_sample(block, entry, i).weight);
        total += w;
        scaled += w * OVERFLOW_WEIGHT_SCALE;
    }
    let sum = weight_sum(total, scaled);
    if !(sum.total > 0.0) {
        return rest;
    }
    if !COMPACT_CLIPS && count == 1u {
        return sample_clip_joint(load_replay_sample(block, entry, 0u), joint, NUM_JOINTS);
    }
    var acc = Transform(vec3<f32>(0.0), 0.0, vec4<f32>(0.0), vec3<f32>(0.0), 0.0);
    for (var i = 0u; i < count; i++) {
        let s = load_replay_sample(block, entry, i);
        if !weighs(s.weight) {
            continue;
        }
        acc = blend_add(acc, sample_clip_joint(s, joint, NUM_JOINTS), select(s.weight * sum.scale / sum.total, 1.0, count == 1u));
    }
    if count > 1u {
        acc.rotation = quat_normalize_unit(acc.rotation);
    }
    return acc;
}

// The pose the layer displayed for `jr`'s joint in the frame of entry `entry` (its slot's
// index), whose header is `h` and which keeps samples: replayed from them and the memo —
// sampled, the root's motion removed, mixed from the frozen snapshot, the offset decayed — as
// the transition made it.
fn replayed_pose(jr: JointRef, entry: u32, h: vec4<u32>) -> Transform {
    var rest = identity_transform();
    if (h.x & REPLAY_ADDITIVE) == 0u {
        rest = rig_joints[jr.joint].rest;
    }
    var p = replay_blend_joint(jr.block, entry, h.x & REPLAY_COUNT_MASK, jr.joint, rest);
    if (h.x & REPLAY_ROOT_MOTION) != 0u && jr.joint == 0u {
        p = remove_root_motion(p);
    }
    if (h.x & REPLAY_SNAPSHOT) != 0u {
        p = mix_from_joint(load_snapshot(jr), bitcast<f32>(h.y), p);
    }
    let decay = (h.x >> REPLAY_DECAY_SHIFT) & 15u;
    if decay != 0u {
        p = apply_offset(load_offset(jr), decay, bitcast<f32>(h.z), bitcast<f32>(h.w), p);
    }
    return p;
}

// Whether the switch reads the last displayed pose and changes the memo: a frozen snapshot
// taken from it, or an inertialization's capture.
fn switch_reads_displayed(s: TransitionStart) -> bool {
    return SWITCH_CODE && s.switched && s.shown > 0u && (s.snapshot || s.capture);
}

// For `jr`'s joint, the displayed poses such a switch reads (the last, and the one before for
// a capture after two frames shown) replayed into their slots where their entries keep
// samples, so that the switch reads slots (`snapshot_joint`, `capture_slots`) and the last pose
// stays stored once the memo changes (`end_switch` marks its entry).
fn store_switch_sources(jr: JointRef, s: TransitionStart) {
    if !switch_reads_displayed(s) {
        return;
    }
    let count = select(1u, 2u, s.capture && s.shown > 1u);
    for (var k = 0u; k < count; k++) {
        let entry = s.slot ^ k;
        let h = layer_memory[replay_header_index(jr.block, entry)];
        if (h.x & REPLAY_STORED) == 0u {
            store_slot(jr, entry, replayed_pose(jr, entry, h));
        }
    }
}

// The crowd's layers that keep memory (`LayerSetup::memory` not NO_MEMORY), a bit a layer index
// below MAX_LAYERS: `throng::gpu::pipelines::memory_layers` writes the crowd's when it builds
// its pipelines, so that the checks below read those layers' programs alone, a number of them
// known when the kernel is compiled, which the driver unrolls into a few loads issued together
// (rather than a loop over the layer table, each layer's setup read before its program), at
// offsets known then. As written here every layer index: a layer without memory, or past the
// character's layers (the next characters' programs, or none past the buffer: bounds-checked),
// counted too makes the checks' answers no smaller, which evaluates a character no differently
// (its switching pass runs the production kernel's code, and `store_switch_sources_of` reads
// each layer's setup).
const MEMORY_LAYERS: u32 = 0xffffu;

// The program flags of chunk character `c`'s layers that keep memory (`MEMORY_LAYERS`) or'd
// together; where `shown_only`, of those its frame shows (`layer_shows`) alone.
fn memory_layer_flags(c: u32, shown_only: bool) -> u32 {
    let row = program_row(c);
    var flags = 0u;
    for (var l = 0u; l < MAX_LAYERS; l++) {
        if (MEMORY_LAYERS & (1u << l)) != 0u {
            let program = programs[row + l];
            if !shown_only || layer_shows(l, program) {
                flags |= program.flags;
            }
        }
    }
    return flags;
}

// Whether the frame switches a shown layer of chunk character `c` that keeps memory: the only
// frames whose kernels replay anything (`store_switch_sources_of`). Every frame of the kernels
// that replay before their layers runs this check (not the level kernel with full clips, which
// replays a switching layer in its own iteration).
fn switches_a_layer(c: u32) -> bool {
    if !(SWITCH_CODE && REPLAY_DISPLAYED_POSES) {
        return false;
    }
    return (memory_layer_flags(c, true) & FLAG_SWITCHED) != 0u;
}

// Whether chunk character `c`'s frame runs switch code: a layer that keeps memory switches or
// fades from a frozen snapshot (whose first frame shown takes the snapshot), shown or not
// (`throng::gpu::pipelines::Specialisation::SWITCH_FLAGS`, which the measurement
// specialisations without switch code refuse on upload).
fn runs_switch_code(c: u32) -> bool {
    return (memory_layer_flags(c, false) & (FLAG_SWITCHED | FLAG_SOURCE_SNAPSHOT)) != 0u;
}

// Whether this kernel's pass (`SHAPE_PASS`) evaluates chunk character `c`.
fn in_shape_pass(c: u32) -> bool {
    return SHAPE_PASS == 0u || runs_switch_code(c) == (SHAPE_PASS == 2u);
}

// Whether the frame switches the layer of `setup`, shown and keeping memory (`program` its
// program this frame).
fn switches_with_memory(setup: LayerSetup, program: LayerProgram) -> bool {
    return setup.memory != NO_MEMORY && (program.flags & FLAG_SWITCHED) != 0u && layer_shows(setup.layer, program);
}

// Before a frame's layers, for one joint of chunk character `c` whose frame switches a layer
// (`switches_a_layer`): `store_switch_sources` for every layer with memory that the frame
// switches. First in the fused kernel and the stage path (and the level kernel with compact
// clips), while nothing else is live, so that the replay's registers add to no sampled pose's;
// the level kernel with full clips replays each layer in its own iteration instead.
fn store_switch_sources_of(c: u32, joint: u32) {
    for (var order = 0u; order < params.num_layers; order++) {
        let setup = load_setup(order);
        let program = layer_program(c, setup.layer);
        if switches_with_memory(setup, program) {
            let block = layer_block(c, setup.memory);
            store_switch_sources(joint_ref(block, joint), layer_transition_start(block, program));
        }
    }
}

// ---- Decay curves (`eval::inertialize::quintic`, `spring`, `Decay`) ----

// Seed 000's (zero starting acceleration) or Bollo's overshoot-controlled quintic, one
// component: (offset, velocity) `t_s` after the switch.
// The shortest quintic evaluated, seconds. Keep in sync with `eval::inertialize::MIN_QUINTIC_S`.
const MIN_QUINTIC_S: f32 = 1e-6;

fn quintic(x0: f32, v0_in: f32, t_s: f32, duration_s: f32, overshoot_control: bool) -> vec2<f32> {
    if !(duration_s > 0.0) || (x0 == 0.0 && v0_in == 0.0) {
        return vec2<f32>(0.0);
    }
    var v0 = v0_in;
    var end_s = duration_s;
    var a0 = 0.0;
    if overshoot_control {
        if v0 * x0 > 0.0 {
            v0 = 0.0;
        }
        if v0 * x0 < 0.0 {
            end_s = min(end_s, -5.0 * x0 / v0);
        }
        a0 = (-8.0 * v0 * end_s - 20.0 * x0) / (end_s * end_s);
    }
    // As on the CPU (`inertialize::MIN_QUINTIC_S`): a duration whose powers would underflow is
    // a cut, never a division by zero.
    if end_s < MIN_QUINTIC_S || t_s >= end_s {
        return vec2<f32>(0.0);
    }
    let t2 = end_s * end_s;
    let t3 = t2 * end_s;
    let t4 = t3 * end_s;
    let t5 = t4 * end_s;
    let c5 = -(a0 * t2 + 6.0 * v0 * end_s + 12.0 * x0) / (2.0 * t5);
    let c4 = (3.0 * a0 * t2 + 16.0 * v0 * end_s + 30.0 * x0) / (2.0 * t4);
    let c3 = -(3.0 * a0 * t2 + 12.0 * v0 * end_s + 20.0 * x0) / (2.0 * t3);
    let c2 = a0 * 0.5;
    // As on the CPU: velocities so large that the coefficients overflow cannot be represented,
    // and such a switch is a cut.
    if !(is_finite(v0) && is_finite(c2) && is_finite(c3) && is_finite(c4) && is_finite(c5)) {
        return vec2<f32>(0.0);
    }
    let t = max(t_s, 0.0);
    let x = x0 + t * (v0 + t * (c2 + t * (c3 + t * (c4 + t * c5))));
    let v = v0 + t * (2.0 * c2 + t * (3.0 * c3 + t * (4.0 * c4 + t * 5.0 * c5)));
    return vec2<f32>(x, v);
}

// A critically damped spring, integrated exactly, one component: (offset, velocity).
fn spring(x0: f32, v0: f32, t_s: f32, halflife_s: f32) -> vec2<f32> {
    if !(halflife_s > 0.0) {
        return vec2<f32>(0.0);
    }
    let y = 2.0 * LN_2 / halflife_s;
    let j1 = v0 + x0 * y;
    let t = max(t_s, 0.0);
    let e = exp(-y * t);
    // As on the CPU: a halflife too short to represent, or an offset fully decayed (where
    // `0 × ∞` lurks for huge times), is zero.
    if !(is_finite(y) && is_finite(j1)) || e == 0.0 {
        return vec2<f32>(0.0);
    }
    return vec2<f32>(e * (x0 + j1 * t), e * (v0 - j1 * y * t));
}

// `Decay::basis`: for the seed's quintic and the spring, whose value is linear in the start,
// the weights (a, b) with x(t) = a·x0 + b·v0, the same for every component of every joint.
// Bollo's quintic (MODE_QUINTIC_OVERSHOOT) has none: its duration depends on each component.
fn decay_basis(mode: u32, decay_s: f32, t_s: f32) -> vec2<f32> {
    if mode == MODE_SPRING {
        if !(decay_s > 0.0) {
            return vec2<f32>(0.0);
        }
        let y = 2.0 * LN_2 / decay_s;
        let t = max(t_s, 0.0);
        let e = exp(-y * t);
        return vec2<f32>(e * (1.0 + y * t), e * t);
    }
    if !(decay_s > 0.0) || t_s >= decay_s {
        return vec2<f32>(0.0);
    }
    let s = max(t_s, 0.0) / decay_s;
    let s3 = s * s * s;
    return vec2<f32>(1.0 + s3 * (-10.0 + s * (15.0 - 6.0 * s)), decay_s * (s + s3 * (-6.0 + s * (8.0 - 3.0 * s))));
}

// `Decay::is_active`: the quintic until its duration; the spring until offset and velocity
// are visually zero.
fn decay_is_active(mode: u32, decay_s: f32, x0_max: f32, v0_max: f32, t_s: f32) -> bool {
    if mode == MODE_SPRING {
        let s = spring(x0_max, v0_max, t_s, decay_s);
        return abs(s.x) > VISUALLY_ZERO || abs(s.y) > VISUALLY_ZERO * 10.0;
    }
    return t_s < decay_s;
}

// ---- Per joint (`eval::inertialize::capture`, `apply`; `eval::sample::mix_from`) ----

// `(old.t − fresh.t, rotvec(old.r * inverse(fresh.r)))`.
fn offset_translation(old: Transform, fresh: Transform) -> vec3<f32> {
    return old.translation - fresh.translation;
}

fn offset_rotation(old: Transform, fresh: Transform) -> vec3<f32> {
    return quat_to_rotation_vector(quat_mul(old.rotation, quat_conjugate(fresh.rotation)));
}

// The offset at a switch: the old motion carried one step forward minus the fresh pose, and the
// old velocity minus the fresh; a paused frame (`dt_s` = 0) captures zero velocity, and so
// does a step too short to measure a velocity over (below `MIN_VELOCITY_DT_S`).
fn capture_joint(displayed: Transform, previous: Transform, fresh: Transform, fresh_previous: Transform, dt_s: f32) -> JointOffset {
    let inv_dt = select(0.0, 1.0 / dt_s, dt_s >= MIN_VELOCITY_DT_S);
    var carried = displayed;
    if dt_s > 0.0 {
        carried.translation = displayed.translation * 2.0 - previous.translation;
        carried.rotation = quat_normalize(quat_mul(quat_mul(displayed.rotation, quat_conjugate(previous.rotation)), displayed.rotation));
    }
    let t_now = offset_translation(carried, fresh);
    let r_now = offset_rotation(carried, fresh);
    let t_before = offset_translation(displayed, fresh_previous);
    let r_before = offset_rotation(displayed, fresh_previous);
    return JointOffset(t_now, (t_now - t_before) * inv_dt, r_now, (r_now - r_before) * inv_dt);
}

// Bollo's quintic decayed to `t_s` after the switch, component by component, each clamped to
// `limit`: as on the CPU, a curve whose start velocity times duration overflows gives ±∞, which
// the clamp bounds.
fn overshoot_vec3(decay_s: f32, x0: vec3<f32>, v0: vec3<f32>, t_s: f32, limit: f32) -> vec3<f32> {
    let x = vec3<f32>(
        quintic(x0.x, v0.x, t_s, decay_s, true).x,
        quintic(x0.y, v0.y, t_s, decay_s, true).x,
        quintic(x0.z, v0.z, t_s, decay_s, true).x,
    );
    return clamp(x, vec3<f32>(-limit), vec3<f32>(limit));
}

// The fresh pose plus the offset decayed to `t_s` after the switch (`eval::inertialize::apply`,
// the same arithmetic): by the decay's basis, two multiply-adds a component, where it has one;
// Bollo's quintic component by component, its rotation renormalised as on the CPU.
fn apply_offset(o: JointOffset, mode: u32, decay_s: f32, t_s: f32, pose: Transform) -> Transform {
    var p = pose;
    if OVERSHOOT_CODE && mode == MODE_QUINTIC_OVERSHOOT {
        p.translation += overshoot_vec3(decay_s, o.translation, o.translation_velocity, t_s, MAX_OFFSET_M);
        let r = overshoot_vec3(decay_s, o.rotation, o.rotation_velocity, t_s, MAX_OFFSET_RAD);
        p.rotation = quat_normalize(quat_mul(rotation_vector_to_quat(r), p.rotation));
        return p;
    }
    let ab = decay_basis(mode, decay_s, t_s);
    p.translation += clamp(o.translation * ab.x + o.translation_velocity * ab.y, vec3<f32>(-MAX_OFFSET_M), vec3<f32>(MAX_OFFSET_M));
    let r = clamp(o.rotation * ab.x + o.rotation_velocity * ab.y, vec3<f32>(-MAX_OFFSET_RAD), vec3<f32>(MAX_OFFSET_RAD));
    // Unit times unit is unit to rounding: not renormalised, as on the CPU.
    p.rotation = quat_mul(rotation_vector_to_quat(r), p.rotation);
    return p;
}

// `source * (1 − w) + pose * w`, rotations by shortest-path nlerp.
fn mix_from_joint(source: Transform, w: f32, pose: Transform) -> Transform {
    return Transform(
        mix(source.translation, pose.translation, w),
        0.0,
        quat_nlerp(source.rotation, pose.rotation, w),
        mix(source.scale, pose.scale, w),
        0.0,
    );
}

fn max_abs3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    let m = max(abs(a), abs(b));
    return max(m.x, max(m.y, m.z));
}

// `eval::root_motion::remove_root_motion` on the root: no horizontal travel, no yaw.
fn remove_root_motion(t: Transform) -> Transform {
    var r = t;
    r.translation.x = 0.0;
    r.translation.z = 0.0;
    r.rotation = quat_normalize(quat_mul(heading_inverse(r.rotation), r.rotation));
    return r;
}

// The rotation about +Y that undoes `q`'s heading (`eval::root_motion::heading_inverse`, the
// same arithmetic once the axis is rotated): with `f` the rotated +Z axis and `len` its length in the XZ plane, half the
// heading's sine and cosine are `(f.x, len + f.z)` normalised, written `±(len − f.z, f.x)` where
// `f.z < 0` so that nothing cancels near a half turn. No trigonometric function; the identity
// where the axis is vertical (`quat_normalize` of zero).
fn heading_inverse(q: vec4<f32>) -> vec4<f32> {
    let f = quat_rotate(q, vec3<f32>(0.0, 0.0, 1.0));
    let len = sqrt(f.x * f.x + f.z * f.z);
    let sign = select(1.0, -1.0, f.x < 0.0);
    let half = select(vec2<f32>(f.x, len + f.z), vec2<f32>(len - f.z, f.x) * sign, f.z < 0.0);
    return quat_normalize(vec4<f32>(0.0, -half.x, 0.0, half.y));
}

// ---- A layer's transition, shared by both frame kernels ----

// What a layer's transition does this frame (`eval::transition`'s prologue): its state from
// memory, every decay ended by a switch, and whether the frame fades from a frozen snapshot or
// captures an inertialization's offset (only over a pose already shown).
struct TransitionStart {
    // Frames shown (0 to 2) and the slot holding the displayed pose.
    shown: u32,
    slot: u32,
    switched: bool,
    snapshot: bool,
    capture: bool,
    // The decaying offset: its MODE_* code (0 for none), curve parameter, seconds since the
    // switch, largest component and velocity at the switch.
    decay: u32,
    decay_s: f32,
    elapsed_s: f32,
    largest_offset: f32,
    largest_velocity: f32,
}

fn transition_start(state: LayerState, program: LayerProgram) -> TransitionStart {
    let switched = (program.flags & FLAG_SWITCHED) != 0u;
    let shown = state.flags & STATE_SHOWN_MASK;
    let snapshot = (program.flags & FLAG_SOURCE_SNAPSHOT) != 0u;
    let inertializes = program.mode == MODE_QUINTIC || program.mode == MODE_QUINTIC_OVERSHOOT || program.mode == MODE_SPRING;
    let capture = SWITCH_CODE && !snapshot && switched && shown > 0u && inertializes;
    if switched {
        return TransitionStart(shown, (state.flags >> STATE_SLOT_SHIFT) & 1u, true, snapshot, capture, 0u, 0.0, 0.0, 0.0, 0.0);
    }
    return TransitionStart(
        shown,
        (state.flags >> STATE_SLOT_SHIFT) & 1u,
        false,
        snapshot,
        capture,
        (state.flags >> STATE_DECAY_SHIFT) & 15u,
        state.decay_s,
        state.elapsed_s,
        state.largest_offset,
        state.largest_velocity,
    );
}

// The layer's transition this frame from its state in the block at `block`.
fn layer_transition_start(block: u32, program: LayerProgram) -> TransitionStart {
    return load_spring_velocity(transition_start(load_layer_state(block), program), block);
}

// `transition_start`'s largest offset velocity, the state's second vec4, for the one decay
// that reads it: read where a spring decays (a switch has already ended any decay).
fn load_spring_velocity(s: TransitionStart, block: u32) -> TransitionStart {
    var loaded = s;
    if s.decay == MODE_SPRING {
        loaded.largest_velocity = bitcast<f32>(layer_memory[block + 1u].x);
    }
    return loaded;
}

// A frozen fade for one joint: at the switch the displayed pose becomes the snapshot (with
// nothing displayed to freeze — a new or reset character, or a layer back from weight 0
// mid-fade — the destination itself), after it the snapshot is read; the pose mixed from it.
// Taking the snapshot is `SWITCH_CODE`; every frame of the fade reads it.
fn snapshot_joint(jr: JointRef, s: TransitionStart, target_weight: f32, pose: Transform) -> Transform {
    var source = pose;
    if SWITCH_CODE && s.switched && s.shown > 0u {
        source = load_slot(jr, s.slot);
        store_snapshot(jr, source);
    } else if SWITCH_CODE && (s.switched || s.shown == 0u) {
        store_snapshot(jr, source);
    } else {
        source = load_snapshot(jr);
    }
    return mix_from_joint(source, target_weight, pose);
}

// An inertialization's capture for one joint, from the last two displayed poses (the last
// twice when only one was shown), stored and returned.
fn capture_slots(jr: JointRef, s: TransitionStart, pose: Transform, step_back: Transform) -> JointOffset {
    let displayed = load_slot(jr, s.slot);
    var previous = displayed;
    if s.shown > 1u {
        previous = load_slot(jr, 1u - s.slot);
    }
    let o = capture_joint(displayed, previous, pose, step_back, character_dt_s);
    store_offset(jr, o);
    return o;
}

// The end of a layer's frame for thread `thread` of the `threads` serving the character, once
// every thread has read what the switch needed: the entry of the slot the displayed pose goes
// to (`header`), and where the switch stored the last displayed pose, its entry marked so.
fn end_switch(block: u32, s: TransitionStart, header: vec4<u32>, first_sample: u32, thread: u32, threads: u32) {
    store_replay_entry(block, 1u - s.slot, header, first_sample, thread, threads);
    if thread == 0u && switch_reads_displayed(s) {
        layer_memory[replay_header_index(block, s.slot)] = vec4<u32>(REPLAY_STORED, 0u, 0u, 0u);
    }
}

// After a capture: the program's curve decays the offset, whose largest component and
// velocity over the layer's joints decide when it ends.
fn start_decay(s: TransitionStart, program: LayerProgram, largest_offset: f32, largest_velocity: f32) -> TransitionStart {
    var started = s;
    started.decay = program.mode;
    started.decay_s = program.decay_s;
    started.largest_offset = largest_offset;
    started.largest_velocity = largest_velocity;
    return started;
}

// The state the layer keeps: one more frame shown (2 at most), the displayed pose in the other
// slot, the decay as it stands.
fn transition_end(s: TransitionStart) -> LayerState {
    let flags = min(s.shown + 1u, 2u) | ((1u - s.slot) << STATE_SLOT_SHIFT) | (s.decay << STATE_DECAY_SHIFT);
    return LayerState(flags, s.decay_s, s.elapsed_s, s.largest_offset, s.largest_velocity, 0u, 0u, 0u);
}

// ---- The layer ----

// Samples the layer's shown samples (a crossfade blends both sides at once; otherwise the
// destination alone) and, on an inertialization's switch, the destination one step earlier,
// into this thread's `layer_pose` and `step_back_pose`. `additive` layers show the identity
// where their weights sum to zero; the base layer removes root motion when asked.
fn sample_layer(program: LayerProgram, l: u32, additive: bool, thread: u32, num_joints: u32) {
    let shown = shown_range(program);
    let step_back = !blends_both_sides(program) && program.num_secondary > 0u;
    let root_motion = ROOT_MOTION_CODE && l == 0u && (program.flags & FLAG_ROOT_MOTION) != 0u;
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        var rest = rig_joints[j].rest;
        if additive {
            rest = identity_transform();
        }
        var p = sample_blend_joint_over(shown, j, num_joints, rest);
        var b = p;
        if step_back {
            b = sample_blend_joint_over(SampleRange(program.first_sample + program.num_target, program.num_secondary), j, num_joints, rest);
        }
        if root_motion && j == 0u {
            p = remove_root_motion(p);
            b = remove_root_motion(b);
        }
        layer_pose[k] = p;
        step_back_pose[k] = b;
    }
}

// `eval::transition::transition` for the layer in memory slot `m` of chunk character `c`: turns
// `layer_pose` into the pose the layer shows and updates the layer's memory, the frame's replay
// entry with header word `replay` (`replay_flags`). Every thread must call it (it holds
// barriers), after `store_switch_sources_of` for its joints.
fn transition_layer(c: u32, m: u32, program: LayerProgram, replay: u32, thread: u32, num_joints: u32) {
    let block = layer_block(c, m);
    var s = layer_transition_start(block, program);
    // A capture's largest offset and velocity over the joints are all this shares across the
    // workgroup before the state's store: a kernel without switch code, which never captures,
    // has neither their reset nor the two barriers around their reductions.
    if SWITCH_CODE {
        if thread == 0u {
            atomicStore(&largest_offset_bits, 0u);
            atomicStore(&largest_velocity_bits, 0u);
        }
        workgroupBarrier();
    }
    for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
        let j = thread + k * WORKGROUP_SIZE;
        if j >= num_joints {
            break;
        }
        let jr = joint_ref(block, j);
        var pose = layer_pose[k];
        if SNAPSHOT_MIX_CODE && s.snapshot {
            pose = snapshot_joint(jr, s, program.target_weight, pose);
        } else if s.capture {
            let o = capture_slots(jr, s, pose, step_back_pose[k]);
            atomicMax(&largest_offset_bits, bitcast<u32>(max_abs3(o.translation, o.rotation)));
            atomicMax(&largest_velocity_bits, bitcast<u32>(max_abs3(o.translation_velocity, o.rotation_velocity)));
        }
        layer_pose[k] = pose;
    }
    if SWITCH_CODE {
        workgroupBarrier();
    }
    if s.capture {
        s = start_decay(s, program, bitcast<f32>(atomicLoad(&largest_offset_bits)), bitcast<f32>(atomicLoad(&largest_velocity_bits)));
    }
    // The entry of the slot the displayed pose goes to (the slot that held the one before
    // last), written before the decay so that nothing of the program stays live across it;
    // the pose itself only where the entry cannot replay it.
    let applied = DECAY_CODE && s.decay != 0u && decay_is_active(s.decay, s.decay_s, s.largest_offset, s.largest_velocity, s.elapsed_s);
    end_switch(block, s, replay_header(replay, s, applied, program.target_weight), program.first_sample, thread, WORKGROUP_SIZE);
    if DECAY_CODE && s.decay != 0u {
        if applied {
            for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
                let j = thread + k * WORKGROUP_SIZE;
                if j >= num_joints {
                    break;
                }
                layer_pose[k] = apply_offset(load_offset(joint_ref(block, j)), s.decay, s.decay_s, s.elapsed_s, layer_pose[k]);
            }
            s.elapsed_s += character_dt_s;
        } else {
            s.decay = 0u;
        }
    }
    if STORE_POSE_CODE && (replay & REPLAY_STORED) != 0u {
        for (var k = 0u; k < JOINTS_PER_THREAD; k++) {
            let j = thread + k * WORKGROUP_SIZE;
            if j >= num_joints {
                break;
            }
            store_slot(joint_ref(block, j), 1u - s.slot, layer_pose[k]);
        }
    }
    // Every thread has read the layer's state (and the atomics) before thread 0 stores it (and
    // the next layer resets them).
    workgroupBarrier();
    if thread == 0u {
        store_layer_state(block, transition_end(s), s.capture && s.decay == MODE_SPRING);
    }
}

// An invisible layer (not the base, its weight not counting: `weighs`) is not evaluated and forgets what it showed and
// any offset still decaying, as `FrameJob` does; a layer without memory has nothing to forget.
fn skip_layer(c: u32, m: u32, thread: u32) {
    if thread == 0u && m != NO_MEMORY {
        let block = layer_block(c, m);
        let state = layer_memory[block];
        layer_memory[block] = vec4<u32>(state.x & (1u << STATE_SLOT_SHIFT), state.yzw);
    }
}

// The layers in evaluation order: base, additive layers, override layers.
fn load_setup(order: u32) -> LayerSetup {
    let i = order * LAYER_SETUP_WORDS;
    return LayerSetup(rig_tables[i], rig_tables[i + 1u], rig_tables[i + 2u], rig_tables[i + 3u], rig_tables[i + 4u]);
}

fn layer_program(c: u32, l: u32) -> LayerProgram {
    return programs[program_row(c) + l];
}

// Where chunk character `c`'s programs start, its layers' in order.
fn program_row(c: u32) -> u32 {
    return (params.first_character + c) * params.num_layers;
}

// Layer `setup` of chunk character `c` into `layer_pose`: sampled and turned into what the layer
// shows, its memory updated; a layer other than the base whose weight does not count is not evaluated and
// forgets what it showed (`FrameJob`'s rule); a layer without memory only ever cuts and shows
// its samples as they are. Returns whether the layer shows. Every thread must call it (it holds
// barriers; `setup` is the same for the whole workgroup). `store` keeps every displayed pose in
// memory rather than the inputs that replay it (the transition stage's, which the layers stage
// reads).
fn evaluate_layer(c: u32, setup: LayerSetup, program: LayerProgram, store: bool, thread: u32, num_joints: u32) -> bool {
    if !layer_shows(setup.layer, program) {
        skip_layer(c, setup.memory, thread);
        return false;
    }
    sample_layer(program, setup.layer, setup.blend == BLEND_ADDITIVE, thread, num_joints);
    if TRANSITION_CODE && setup.memory != NO_MEMORY {
        transition_layer(c, setup.memory, program, replay_flags(setup, program, store), thread, num_joints);
    }
    return true;
}

// Whether layer `layer` (its index, `LayerSetup::layer`) is evaluated: the base always, the
// others where their weight counts (`weighs`).
fn layer_shows(layer: u32, program: LayerProgram) -> bool {
    return layer == 0u || weighs(program.weight);
}

// The stage alone: sample and transition every layer of one character per workgroup; the
// shown poses land in the characters' memory (the displayed slot, stored whole), where the
// layers stage and tests read them.
@compute @workgroup_size(WORKGROUP_SIZE)
fn transition_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let w = group_index(wg, groups);
    if w >= dispatched_characters() {
        return;
    }
    let c = workgroup_character(w);
    if switches_a_layer(c) {
        for (var j = thread; j < NUM_JOINTS; j += WORKGROUP_SIZE) {
            store_switch_sources_of(c, j);
        }
    }
    for (var order = 0u; order < params.num_layers; order++) {
        let setup = load_setup(order);
        evaluate_layer(c, setup, layer_program(c, setup.layer), true, thread, NUM_JOINTS);
    }
}
