// The layered frame's level kernel (`FrameKernel::Levels` after `GpuCrowd::set_frame`,
// mirroring `throng::eval::frame::FrameJob` as `frame_layers.wgsl` does): GROUP_CHARACTERS
// characters per workgroup, a joint per thread, every layer through sample ─► transition ─►
// layers, then local-to-model ─► skinning. Per layer, the workgroup's first threads compute what
// every joint needs of each sample of every character (`fill_table_of_slots`), and one thread
// a character works out the end of a layer with memory (`end_layer_of_slots`); the
// transition's largest offset is a reduction through workgroup memory, not atomics; the
// mesh-space override and local-to-model run band by band over the rig's depth levels
// (`shared/levels.wgsl`). Concatenated after every stage file, whose per-joint functions it
// calls.

// The samples of a layer's shown blend and of its step-back blend (an inertialization's switch
// frame, which follows the shown one in the sample table); none where the layer does not show.
fn layer_blend_counts(shows: bool, program: LayerProgram) -> vec2<u32> {
    if !shows {
        return vec2<u32>(0u);
    }
    return vec2<u32>(shown_range(program).count, select(0u, program.num_secondary, SWITCH_CODE && !blends_both_sides(program)));
}

// The threads that fill the sample table: a multiple of GROUP_CHARACTERS, at least a warp.
const FILL_THREADS: u32 = max(32u, GROUP_CHARACTERS);

// Whether the character slot thread `t` serves in the layers' slot loops (`t % GROUP_CHARACTERS`:
// `fill_table_of_slots`, `end_layer_of_slots`; a thread serves one slot at most, FILL_THREADS and
// GROUP_CHARACTERS being at most GROUP_THREADS) is this kernel's shape pass's (`in_shape_pass`),
// set once by `any_in_shape_pass`; `own_in_pass` the same of the thread's own character's
// (slot `t / LANES`).
var<private> slot_in_pass: bool;
var<private> own_in_pass: bool;

// Whether a character of the workgroup's (whose first is chunk entry `first_entry`) is this
// kernel's shape pass's, setting thread `t`'s `slot_in_pass` and `own_in_pass`.
fn any_in_shape_pass(t: u32, first_entry: u32) -> bool {
    var any = false;
    for (var slot = 0u; slot < GROUP_CHARACTERS; slot++) {
        if first_entry + slot >= dispatched_characters() {
            break;
        }
        let in_pass = in_shape_pass(chunk_character(first_entry + slot).c);
        any = any || in_pass;
        if slot == t % GROUP_CHARACTERS {
            slot_in_pass = in_pass;
        }
        if slot == t / LANES {
            own_in_pass = in_pass;
        }
    }
    return any;
}

// A layer's sample table for the workgroup's characters (whose first is chunk entry
// `first_entry`), by its first FILL_THREADS threads rather than by each character's lanes:
// thread `t` serves character slot `t % GROUP_CHARACTERS`, its samples `t / GROUP_CHARACTERS`,
// then every `FILL_THREADS / GROUP_CHARACTERS`th after it (the shown blend's, then the step-back
// blend's, up to the table's LANES entries a slot); the slot's first thread publishes its
// blends' weight sums (`packed_sum`) in row r1 of the slot's first entry of `group_pose`
// (nothing reads or writes that row from the layer's end to here), and where the layer does not
// show, forgets its memory. Every thread must call it before the sample table's barrier.
fn fill_table_of_slots(t: u32, first_entry: u32, setup: LayerSetup) {
    for (var f = t; f < FILL_THREADS; f += GROUP_THREADS) {
        let slot = f % GROUP_CHARACTERS;
        if first_entry + slot >= dispatched_characters() {
            break;
        }
        // The other shape pass's character: its lanes are not live, its memory not this pass's.
        if !slot_in_pass {
            continue;
        }
        let k = chunk_character(first_entry + slot);
        let program = layer_program(k.c, setup.layer);
        let shows = layer_shows(setup.layer, program);
        let counts = layer_blend_counts(shows, program);
        let num_shown = counts.x;
        let num_back = counts.y;
        let first = program.first_sample;
        // A layer that does not show forgets its memory (`skip_layer`), by the slot's first
        // thread rather than by a lane of every wave.
        if f < GROUP_CHARACTERS && !shows {
            skip_layer(k.c, setup.memory, 0u);
        }
        // Packed (`packed_sum`): one float a blend held through the entry loop, not two.
        let sum_shown = packed_sum(sum_weights(first, num_shown));
        let sum_back = packed_sum(sum_weights(first + num_shown, num_back));
        let slot_base = slot * LANES;
        if f < GROUP_CHARACTERS {
            group_pose[slot_base].r1 = vec4<f32>(sum_shown, sum_back, 0.0, 0.0);
        }
        let count = min(num_shown + num_back, LANES);
        for (var i = f / GROUP_CHARACTERS; i < count; i += FILL_THREADS / GROUP_CHARACTERS) {
            let in_shown = i < num_shown;
            sample_table[slot_base + i] = sample_entry(first + i, select(num_back, num_shown, in_shown), select(sum_back, sum_shown, in_shown));
        }
    }
}

// A layer's pose for this thread's joint: its shown blend and, on an inertialization's switch,
// the destination one step earlier (`sample_layer`). Every thread must call it (a barrier
// after the table is written); the caller holds another before the table is written again.
struct LayerSamples {
    shown: Transform,
    step_back: Transform,
}

fn sample_layer_levels(t: u32, lane: u32, shows: bool, program: LayerProgram, l: u32, additive: bool, num_joints: u32) -> LayerSamples {
    let counts = layer_blend_counts(shows, program);
    let num_shown = counts.x;
    let num_back = counts.y;
    // The step-back samples follow the shown ones: one table holds both blends. The table and
    // the blends' weight sums are the slots' fill threads' (`fill_table_of_slots`).
    let first = program.first_sample;
    workgroupBarrier();
    let sums = group_pose[t - lane].r1;
    let sum_shown = sums.x;
    let sum_back = sums.y;
    var rest = identity_transform();
    if !additive && lane < num_joints {
        rest = rig_joints[lane].rest;
    }
    var p = rest;
    var b = rest;
    if shows && lane < num_joints {
        let slot_base = t - lane;
        // The root's motion goes from the base layer's blends; without a step-back blend its
        // pose is the shown one's, already without it (one removal, not two of one pose).
        let root_motion = ROOT_MOTION_CODE && l == 0u && (program.flags & FLAG_ROOT_MOTION) != 0u && lane == 0u;
        p = table_blend_joint(slot_base, first, 0u, num_shown, sum_shown, lane, num_joints, rest);
        if root_motion {
            p = remove_root_motion(p);
        }
        b = p;
        if num_back > 0u {
            b = table_blend_joint(slot_base, first, num_shown, num_back, sum_back, lane, num_joints, rest);
            if root_motion {
                b = remove_root_motion(b);
            }
        }
    }
    return LayerSamples(p, b);
}

// ---- A layer's transition: the end of it, by one thread a character ----
//
// What a layer with memory decides once per character at the end of its frame (a capture's
// largest offsets, the decay's course, the replay entry, the layer state it stores) is worked
// out by thread `slot` for the workgroup's character slot `slot` (`end_layer_of_slots`), not by
// each of the character's lanes: GROUP_CHARACTERS threads (one wave for rigs of more than a few
// joints) where every wave of the workgroup did it. The lanes read what they apply (`publish_end`) from the row r2 of the slot's
// first entry of `group_pose`, stored whole: written before the transition's second barrier,
// read after it; every later writer of that row waits for a barrier first (the mesh-space
// override's first, the next layer's transition's first, the kernel's last before the pose).

// What the slot's lanes do at the end of the layer's transition: the decay to apply (its MODE_*
// code, 0 for none), its parameter and the seconds since the switch, and whether the displayed
// pose is stored, into which slot.
struct TransitionEnd {
    decay: u32,
    decay_s: f32,
    elapsed_s: f32,
    stored: bool,
    slot: u32,
}

// The flags travel as a small whole number's float, not as bits: as bits every one of them
// would be a subnormal float, which a path that flushes subnormals could zero.
fn publish_end(slot_base: u32, e: TransitionEnd) {
    let flags = e.decay | (u32(e.stored) << 4u) | (e.slot << 5u);
    group_pose[slot_base].r2 = vec4<f32>(f32(flags), e.decay_s, e.elapsed_s, 0.0);
}

fn published_end(slot_base: u32) -> TransitionEnd {
    let r = group_pose[slot_base].r2;
    let flags = u32(r.x);
    return TransitionEnd(flags & 15u, r.y, r.z, (flags & (1u << 4u)) != 0u, flags >> 5u);
}

// The end of a layer with memory for the workgroup's characters (whose first is chunk entry
// `first_entry`), thread `t` for slot `t`, after the transition's first barrier: its start read
// again, a capture's largest offset and offset velocity over the lanes of the rig's joints (the
// bits of non-negative floats, ordered as `atomicMax` orders them; the idle lanes past them hold
// zeros and are not read: a trip count of 32 lanes, a constant, had the driver unroll the loop
// and spill scalar registers), the decay started or run on, the replay entry of the slot the
// displayed pose goes to, the layer state; what the lanes apply published. Before the
// transition's second barrier.
fn end_layer_of_slots(t: u32, first_entry: u32, setup: LayerSetup, num_joints: u32) {
    for (var slot = t; slot < GROUP_CHARACTERS; slot += GROUP_THREADS) {
        if first_entry + slot >= dispatched_characters() {
            break;
        }
        if !slot_in_pass {
            continue;
        }
        let k = chunk_character(first_entry + slot);
        let program = layer_program(k.c, setup.layer);
        if !layer_shows(setup.layer, program) {
            continue;
        }
        let slot_base = slot * LANES;
        let block = layer_block(k.c, setup.memory);
        var s = layer_transition_start(block, program);
        if s.capture {
            var largest = vec2<u32>(0u);
            for (var i = 0u; i < num_joints; i++) {
                largest = max(largest, bitcast<vec2<u32>>(group_pose[slot_base + i].r0.xy));
            }
            s = start_decay(s, program, bitcast<f32>(largest.x), bitcast<f32>(largest.y));
        }
        let replay = replay_flags(setup, program, !REPLAY_DISPLAYED_POSES);
        let applied = DECAY_CODE && s.decay != 0u && decay_is_active(s.decay, s.decay_s, s.largest_offset, s.largest_velocity, s.elapsed_s);
        end_switch(block, s, replay_header(replay, s, applied, program.target_weight), program.first_sample, 0u, 1u);
        publish_end(slot_base, TransitionEnd(select(0u, s.decay, applied), s.decay_s, s.elapsed_s, (replay & REPLAY_STORED) != 0u, 1u - s.slot));
        if DECAY_CODE && s.decay != 0u {
            if applied {
                s.elapsed_s += k.dt_s;
            } else {
                s.decay = 0u;
            }
        }
        store_layer_state(block, transition_end(s), s.capture && s.decay == MODE_SPRING);
    }
}

// `transition_layer` for one character's joint, the end of the frame its slot's thread's
// (`end_layer_of_slots`): the frozen fade's mix or the capture, each lane's largest offset and
// offset velocity into `group_pose` (r0) for the slot's thread; then the decay applied and the
// pose stored as that thread says. Returns the pose the layer shows. Every thread must call it
// (two barriers; the first also orders the sampling's reads of `sample_table` before the next
// layer writes it, and the replay's reads of the entries before the slot's thread writes them).
fn transition_levels(c: u32, first_entry: u32, setup: LayerSetup, program: LayerProgram, shows: bool, samples_in: LayerSamples, t: u32, lane: u32, num_joints: u32) -> Transform {
    let owns = shows && lane < num_joints;
    let slot_base = t - lane;
    var pose = samples_in.shown;
    var lane_largest = vec2<f32>(0.0);
    var jr = JointRef(0u, 0u);
    if owns {
        let block = layer_block(c, setup.memory);
        let s = layer_transition_start(block, program);
        jr = joint_ref(block, lane);
        if SNAPSHOT_MIX_CODE && s.snapshot {
            pose = snapshot_joint(jr, s, program.target_weight, pose);
        } else if s.capture {
            let o = capture_slots(jr, s, pose, samples_in.step_back);
            lane_largest = vec2<f32>(max_abs3(o.translation, o.rotation), max_abs3(o.translation_velocity, o.rotation_velocity));
        }
    }
    group_pose[t].r0 = vec4<f32>(lane_largest, 0.0, 0.0);
    workgroupBarrier();
    end_layer_of_slots(t, first_entry, setup, num_joints);
    workgroupBarrier();
    if owns {
        let e = published_end(slot_base);
        if DECAY_CODE && e.decay != 0u {
            pose = apply_offset(load_offset(jr), e.decay, e.decay_s, e.elapsed_s, pose);
        }
        if STORE_POSE_CODE && e.stored {
            store_slot(jr, e.slot, pose);
        }
    }
    return pose;
}

// The mesh-space step of the joint in `group_pose`'s row `i` (joint `joint` of its character)
// under its parent's layer and base model rotations (`parent`) and nearest masked joint
// (`parent_anchor`): its own, written over its rows r0, r1 and r2.y, which its children read.
fn mesh_level_step(i: u32, joint: u32, parent: MeshModels, parent_anchor: u32) {
    let a = group_pose[i];
    let models = mesh_step(parent, a.r0, a.r1);
    let anchor = mesh_anchor(joint, a.r2.x, parent_anchor);
    group_pose[i] = Affine(models.layer_model, models.base_model, vec4<f32>(a.r2.x, anchor_in_row(anchor), 0.0, 0.0));
}

// `override_mesh` band by band: each joint's layer rotation, base rotation and weight into
// `group_pose` (rows r0, r1, r2.x), then per band each chain's joints' steps in turn, each from
// its parent's layer and base model rotations and nearest masked joint, written over its own
// rows (`mesh_level_step`), which the chain's next joint and the next bands' chains read: the
// arithmetic of the ancestor walk, each joint's step once. After the bands each masked joint's
// lane publishes its blend (the slerp, in no band's wave), and after a barrier works out its
// new local rotation from its parent's blend and its own (`mesh_parent_from_rows`,
// `mesh_local`). Every thread must call it.
fn override_mesh_levels(setup: LayerSetup, weight: f32, shows: bool, base: Transform, layer: Transform, t: u32, lane: u32, num_joints: u32) -> Transform {
    let identity = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    var w = 0.0;
    if lane < num_joints {
        w = layer_joint_weight(setup, weight, lane);
    }
    // Every lane has read what its slot's thread published at the end of a transition
    // (`publish_end`) before any writes `group_pose`.
    workgroupBarrier();
    group_pose[t] = Affine(layer.rotation, base.rotation, vec4<f32>(w, 0.0, 0.0, 0.0));
    workgroupBarrier();
    // The roots (band 0, the only joints without a parent) under the identity, outside the
    // loop: no band in it asks whether an item has a parent.
    let levels = rig_levels();
    let root = level_item(level_band(levels, 0u), t);
    if MESH_ROOTS_CODE && root.length != 0u {
        mesh_level_step(root.slot_base + root.joint, root.joint, MeshModels(identity, identity), NO_PARENT);
    }
    workgroupBarrier();
    for (var b = 1u; b < levels.count; b++) {
        let band = level_band(levels, b);
        // A wave holding none of the band's chains branches over the whole of it. Measured
        // without the chain work (BAND_CHAINS_CODE off), the band loop's body is what such a
        // wave runs, and a store: the stand-in that keeps the test (no such wave runs it).
        if t < band.chains * GROUP_CHARACTERS {
            if BAND_CHAINS_CODE {
                let item = level_item(band, t);
                let first = item.slot_base + item.joint;
                var parent = item.slot_base + item.parent;
                for (var k = 0u; k < band.depths; k++) {
                    if k < item.length {
                        let j = first + k;
                        let p = group_pose[parent];
                        mesh_level_step(j, item.joint + k, MeshModels(p.r0, p.r1), anchor_from_row(p.r2.y));
                        parent = j;
                    }
                }
            } else {
                group_pose[t].r0 = vec4<f32>(0.0);
            }
        }
        workgroupBarrier();
    }
    if w > 0.0 {
        let rows = group_pose[t];
        group_pose[t].r0 = mesh_blend(MeshModels(rows.r0, rows.r1), w);
    }
    workgroupBarrier();
    var b = base;
    if shows && w > 0.0 {
        let first = t - lane;
        let parent = rig_joints[lane].parent;
        var parent_rows = group_pose[t];
        var anchor_rows = parent_rows;
        if parent != NO_PARENT {
            parent_rows = group_pose[first + parent];
            let anchor = anchor_from_row(parent_rows.r2.y);
            if anchor != NO_PARENT {
                anchor_rows = group_pose[first + anchor];
            }
        }
        b.rotation = mesh_local(mesh_parent_from_rows(parent, parent_rows, anchor_rows), group_pose[t].r0);
        b.translation = mix(b.translation, layer.translation, w);
        b.scale = mix(b.scale, layer.scale, w);
    }
    // Every thread has read `group_pose` before anyone writes it again.
    workgroupBarrier();
    return b;
}

@compute @workgroup_size(GROUP_THREADS)
fn frame_layers_levels_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let lane = t % LANES;
    let first_entry = group_index(wg, groups) * GROUP_CHARACTERS;
    let entry = first_entry + t / LANES;
    let num_joints = NUM_JOINTS;
    // A workgroup with none of this shape pass's characters leaves at once (every thread alike,
    // before any barrier); the passes dispatch every character.
    slot_in_pass = true;
    own_in_pass = true;
    if SHAPE_PASS != 0u && !any_in_shape_pass(t, first_entry) {
        return;
    }
    // With a due list (animation LOD) the chunk's entries are its due characters. A character
    // of the other shape pass's (`own_in_pass`) is not live here either.
    let live = entry < dispatched_characters() && own_in_pass;
    var c = 0u;
    if live {
        c = workgroup_character(entry);
    }
    // The replay of a switching layer's displayed poses: with full clips at the top of the
    // layer's own iteration, on the program read there (no loop over every layer's program
    // first); with compact clips before the layers, while nothing else is live, which keeps the
    // decoder's registers off the running pose's (88 VGPRs a thread the other way, from 80).
    if COMPACT_CLIPS && live && lane < num_joints && switches_a_layer(c) {
        store_switch_sources_of(c, lane);
    }
    var combined = identity_transform();
    for (var order = 0u; order < params.num_layers; order++) {
        let setup = load_setup(order);
        var program = LayerProgram(0u, 0u, 0u, 0u, 0u, 0u, 0.0, 0.0, 0.0, 0.0);
        if live {
            program = layer_program(c, setup.layer);
        }
        let shows = live && layer_shows(setup.layer, program);
        if !COMPACT_CLIPS && SWITCH_CODE && REPLAY_DISPLAYED_POSES && live && lane < num_joints && switches_with_memory(setup, program) {
            let block = layer_block(c, setup.memory);
            store_switch_sources(joint_ref(block, lane), layer_transition_start(block, program));
        }
        fill_table_of_slots(t, first_entry, setup);
        let sampled = sample_layer_levels(t, lane, shows, program, setup.layer, setup.blend == BLEND_ADDITIVE, num_joints);
        var layer = sampled.shown;
        if TRANSITION_CODE && setup.memory != NO_MEMORY {
            layer = transition_levels(c, first_entry, setup, program, shows, sampled, t, lane, num_joints);
        } else {
            // Every lane has read the sample table before the next layer writes it (the
            // transition's barriers see to it for a layer with memory).
            workgroupBarrier();
        }
        if setup.layer != 0u && setup.blend == BLEND_OVERRIDE && setup.space == SPACE_MESH {
            if MESH_OVERRIDE_CODE {
                combined = override_mesh_levels(setup, program.weight, shows, combined, layer, t, lane, num_joints);
            }
        } else if shows && lane < num_joints {
            if setup.layer == 0u {
                combined = layer;
            } else if setup.blend == BLEND_ADDITIVE {
                if ADDITIVE_CODE {
                    combined = additive_joint(combined, layer, layer_joint_weight(setup, program.weight, lane));
                }
            } else if OVERRIDE_LOCAL_CODE {
                combined = override_local_joint(combined, layer, layer_joint_weight(setup, program.weight, lane));
            }
        }
    }
    var p = identity_affine();
    if live && lane < num_joints {
        p = affine_from_mat4(transform_to_mat4(combined));
    }
    // Every lane has read what its slot's thread published (`publish_end`).
    workgroupBarrier();
    group_pose[t] = p;
    workgroupBarrier();
    model_levels(t);
    if live && lane < num_joints {
        write_skinning(c * num_joints + lane, skinning_matrix(affine_to_mat4(group_pose[t]), lane));
    }
}
