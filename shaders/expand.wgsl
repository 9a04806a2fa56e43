// The expand stage: each character's state records (`throng::program::LayerRecord`, what the
// state step writes) and blend inputs into its layers' pose programs and clip samples, which
// the fused frames then read. Mirrored by `src/eval/expand.rs`, which runs
// `throng::program::expand_character`; this is that expansion translated, the clip times by
// `throng::program::played_seconds` operation for operation.
//
// Appended to `shaders/blend_space.wgsl`: the leaf weights are its `tree_weights`, over its
// bindings 1 (the trees) and 2 (the inputs). One thread a character, its layers in order.

// Keep in sync with `throng::program::expand_words` (`tests/gpu_expand.rs` checks).
const EXPAND_HEADER_STATES: u32 = 0u;
const EXPAND_HEADER_LAYERS: u32 = 2u;
const EXPAND_HEADER_SAMPLES: u32 = 3u;
const EXPAND_HEADER_STATES_AT: u32 = 4u;
const EXPAND_HEADER_LEAVES_AT: u32 = 5u;
const EXPAND_HEADER_LAYERS_AT: u32 = 6u;
const EXPAND_STATE_LEN: u32 = 4u;
const EXPAND_LEAF_LEN: u32 = 8u;
const EXPAND_LAYER_LEN: u32 = 2u;

// The least weight of a blend-tree clip's written sample (`throng::program::weighs`; the frame
// kernels' copy is in `shared/types.wgsl`, which this kernel does not include): f32's least
// normal.
const MIN_WEIGHT: f32 = 1.1754943508222875e-38;

// `ExpandTables::SYNC`, `LOOPING`, `REVERSE`.
const STATE_SYNC: u32 = 1u;
const STATE_LOOPING: u32 = 2u;
const STATE_REVERSE: u32 = 4u;
// `LayerRecord::SECONDARY_SOURCE`, `SECONDARY_BACK`, `SHOT_ALONE`, `SHOT_OVER_GRAPH`,
// `SHOT_HANDBACK`.
const SECONDARY_SOURCE: u32 = 1u;
const SECONDARY_BACK: u32 = 2u;
const SHOT_ALONE: u32 = 4u;
const SHOT_OVER_GRAPH: u32 = 8u;
const SHOT_HANDBACK: u32 = 16u;
// `throng::program::NO_TRANSITION`, a record's 16-bit "none".
const NO_TRANSITION: u32 = 0xffffu;
// Words of a `LayerProgram` and of a `ClipSample`.
const PROGRAM_WORDS: u32 = 10u;
const SAMPLE_WORDS: u32 = 4u;
// Keep in sync with `throng::gpu::EXPAND_WORKGROUP`.
const EXPAND_WORKGROUP: u32 = 64u;

// Keep in sync with `throng::program::LayerRecord` (56 bytes): its 16-bit fields two to a
// word (`state` low, `source` high; `transition` low, `anchor` high), its 8-bit ones in one
// (`mode`, then `flags` at `RECORD_FLAGS_SHIFT`, `sets` at `RECORD_SETS_SHIFT`).
struct LayerRecord {
    state_source: u32,
    transition_anchor: u32,
    phase: f32,
    loops: u32,
    src_phase: f32,
    src_loops: u32,
    advance: f32,
    src_advance: f32,
    target_weight: f32,
    progress: f32,
    weight: f32,
    decay_s: f32,
    rate: f32,
    mode_flags_sets: u32,
}
const RECORD_HIGH_SHIFT: u32 = 16u;
const RECORD_FLAGS_SHIFT: u32 = 8u;
const RECORD_SETS_SHIFT: u32 = 16u;
const RECORD_WORDS: u32 = 14u;

// Keep in sync with `throng::program::ShotRecord`: a record's one-shot part.
struct ShotRecord {
    clip: u32,
    time_s: f32,
    share: f32,
    graph_share: f32,
}
const SHOT_WORDS: u32 = 4u;

// Keep in sync with `throng::program::CLOCK_SLOTS`.
const CLOCK_SLOTS: u32 = 128u;

// Keep in sync with `throng::gpu::ExpandParams`: characters, workgroups along x (a
// character's index is `x + y * groups_x * EXPAND_WORKGROUP`), then the records' clock
// (`throng::program::RecordClock`: the update now, and the seconds since each of the last
// `CLOCK_SLOTS` updates, update k's at `k % CLOCK_SLOTS`).
struct ExpandParams {
    num_characters: u32,
    groups_x: u32,
    pad0: u32,
    pad1: u32,
    now: u32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
    elapsed_s: array<vec4<f32>, 32>,
}

@group(0) @binding(5) var<uniform> expand_params: ExpandParams;
// `ExpandTables::words`: uploaded once per archetype.
@group(0) @binding(6) var<storage, read> expand_tables: array<u32>;
// Per character × layer.
@group(0) @binding(7) var<storage, read> records: array<LayerRecord>;
// Per character × layer, read under the record's `SHOT_*` sets.
@group(0) @binding(10) var<storage, read> shots: array<ShotRecord>;
// Per character × layer, a `LayerProgram` as words.
@group(0) @binding(8) var<storage, read_write> programs_out: array<u32>;
// Per character, `expand_tables[EXPAND_HEADER_SAMPLES]` `ClipSample`s as words.
@group(0) @binding(9) var<storage, read_write> samples_out: array<u32>;

// `throng::program::mul_hi`: the high word of a × b, from 16-bit halves.
fn mul_hi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

// `throng::program::played_seconds` for the leaf at word `leaf`.
fn played_seconds(state_flags: u32, leaf: u32, phase: f32, loops: u32) -> f32 {
    let duration = bitcast<f32>(expand_tables[leaf + 1u]);
    if (state_flags & STATE_SYNC) != 0u {
        return phase * duration;
    }
    if (state_flags & STATE_LOOPING) == 0u {
        return min(phase * bitcast<f32>(expand_tables[leaf + 2u]), duration);
    }
    let top = loops * expand_tables[leaf + 4u] + mul_hi(loops, expand_tables[leaf + 5u]);
    let whole = f32(top >> 8u) * (1.0 / 16777216.0);
    let per = bitcast<f32>(expand_tables[leaf + 3u]);
    let x = phase * per;
    let y = whole + (x - floor(x));
    return (y - floor(y)) * duration;
}

// Seconds from update `k` (one of the last `CLOCK_SLOTS`) to now.
fn elapsed_since(k: u32) -> f32 {
    let i = k % CLOCK_SLOTS;
    return expand_params.elapsed_s[i / 4u][i % 4u];
}

// `throng::program::clock_at`: a record's active clock now.
struct ClockNow {
    phase: f32,
    loops: u32,
    advance: f32,
}

// `anchor` is the record's, the low 16 bits of the update it names (`CLOCK_SLOTS` divides
// 2^16, so its slot is the update's).
fn clock_at(r: LayerRecord, anchor: u32, looping: bool) -> ClockNow {
    let now = expand_params.now;
    if ((now - anchor) & 0xffffu) == 0u {
        return ClockNow(r.phase, r.loops, r.advance);
    }
    if r.rate == 0.0 {
        return ClockNow(r.phase, r.loops, 0.0);
    }
    let elapsed = elapsed_since(anchor);
    let step = elapsed_since(now - 1u);
    let x = r.phase + r.rate * elapsed;
    if looping {
        let whole = floor(x);
        let w = u32(whole);
        let loops = select(r.loops + w, 0xffffffffu, r.loops > 0xffffffffu - w);
        return ClockNow(x - whole, loops, r.rate * step);
    }
    let before = min(r.phase + r.rate * (elapsed - step), 1.0);
    let phase = min(x, 1.0);
    return ClockNow(phase, 0u, phase - before);
}

fn write_sample(at: u32, clip: u32, time_s: f32, weight: f32, advance_s: f32) {
    let w = at * SAMPLE_WORDS;
    samples_out[w] = clip;
    samples_out[w + 1u] = bitcast<u32>(time_s);
    samples_out[w + 2u] = bitcast<u32>(weight);
    samples_out[w + 3u] = bitcast<u32>(advance_s);
}

// `write_state` of `throng::program`: `state`'s clips whose weights count (weights in `leaf_w`)
// from sample `first + n`, at most `slots` in all; returns the new count.
fn write_state(state: u32, phase: f32, loops: u32, advance: f32, share: f32, first: u32, n_in: u32, slots: u32) -> u32 {
    var n = n_in;
    if state >= expand_tables[EXPAND_HEADER_STATES] {
        return n;
    }
    let state_at = expand_tables[EXPAND_HEADER_STATES_AT] + EXPAND_STATE_LEN * state;
    let first_leaf = expand_tables[state_at];
    let num_leaves = min(expand_tables[state_at + 1u], MAX_BLEND_CHILDREN);
    let flags = expand_tables[state_at + 2u];
    let reverse = (flags & STATE_REVERSE) != 0u;
    for (var i = 0u; i < num_leaves; i++) {
        let weight = leaf_w[i] * share;
        if !(weight >= MIN_WEIGHT) || n >= slots {
            continue;
        }
        let leaf = expand_tables[EXPAND_HEADER_LEAVES_AT] + EXPAND_LEAF_LEN * (first_leaf + i);
        let duration = bitcast<f32>(expand_tables[leaf + 1u]);
        let played = played_seconds(flags, leaf, phase, loops);
        var time_s = played;
        var advance_s = advance * bitcast<f32>(expand_tables[leaf + 2u]);
        if reverse {
            time_s = duration - played;
            advance_s = 0.0;
        }
        write_sample(first + n, expand_tables[leaf], time_s, weight, advance_s);
        n += 1u;
    }
    return n;
}

@compute @workgroup_size(EXPAND_WORKGROUP)
fn expand_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let character = id.x + id.y * expand_params.groups_x * EXPAND_WORKGROUP;
    if character >= expand_params.num_characters {
        return;
    }
    let num_layers = expand_tables[EXPAND_HEADER_LAYERS];
    let block = character * expand_tables[EXPAND_HEADER_SAMPLES];
    let inputs_at = character * trees[HEADER_INPUTS];
    for (var layer = 0u; layer < num_layers; layer++) {
        let r = records[character * num_layers + layer];
        let shot = shots[character * num_layers + layer];
        let state = r.state_source & 0xffffu;
        let source = r.state_source >> RECORD_HIGH_SHIFT;
        let transition = r.transition_anchor & 0xffffu;
        let anchor = r.transition_anchor >> RECORD_HIGH_SHIFT;
        let mode = r.mode_flags_sets & 0xffu;
        let flags = (r.mode_flags_sets >> RECORD_FLAGS_SHIFT) & 0xffu;
        let sets = (r.mode_flags_sets >> RECORD_SETS_SHIFT) & 0xffu;
        // `LayerRecord::share`: the destination's share of the layer.
        var share = r.target_weight;
        if (sets & (SHOT_OVER_GRAPH | SHOT_HANDBACK)) != 0u {
            share = shot.graph_share;
        }
        let layer_at = expand_tables[EXPAND_HEADER_LAYERS_AT] + EXPAND_LAYER_LEN * layer;
        let first = block + expand_tables[layer_at];
        let slots = expand_tables[layer_at + 1u];
        var num_target = 0u;
        var num_secondary = 0u;
        if (sets & SHOT_ALONE) != 0u {
            if slots > 0u {
                write_sample(first, shot.clip, shot.time_s, 1.0, 0.0);
                num_target = 1u;
            }
        } else {
            tree_weights(state, inputs_at);
            var looping = false;
            if state < expand_tables[EXPAND_HEADER_STATES] {
                let state_flags = expand_tables[expand_tables[EXPAND_HEADER_STATES_AT] + EXPAND_STATE_LEN * state + 2u];
                looping = (state_flags & STATE_LOOPING) != 0u;
            }
            let clock = clock_at(r, anchor, looping);
            num_target = write_state(state, clock.phase, clock.loops, clock.advance, share, first, 0u, slots);
            if (sets & SECONDARY_SOURCE) != 0u {
                tree_weights(source, inputs_at);
                let n = write_state(source, r.src_phase, r.src_loops, r.src_advance, 1.0 - share, first, num_target, slots);
                num_secondary = n - num_target;
            } else if (sets & SECONDARY_BACK) != 0u {
                let n = write_state(state, r.src_phase, 0u, 0.0, 1.0, first, num_target, slots);
                num_secondary = n - num_target;
            }
            if (sets & SHOT_OVER_GRAPH) != 0u {
                let graph = num_target + num_secondary;
                for (var k = 0u; k < graph; k++) {
                    let w = (first + k) * SAMPLE_WORDS + 2u;
                    samples_out[w] = bitcast<u32>(bitcast<f32>(samples_out[w]) * (1.0 - shot.share));
                }
                if graph < slots {
                    write_sample(first + graph, shot.clip, shot.time_s, shot.share, 0.0);
                    num_target = graph + 1u;
                    num_secondary = 0u;
                }
            }
        }
        let p = (character * num_layers + layer) * PROGRAM_WORDS;
        programs_out[p] = first;
        programs_out[p + 1u] = num_target;
        programs_out[p + 2u] = num_secondary;
        programs_out[p + 3u] = select(transition, 0xffffffffu, transition == NO_TRANSITION);
        programs_out[p + 4u] = mode;
        programs_out[p + 5u] = flags;
        programs_out[p + 6u] = bitcast<u32>(r.target_weight);
        programs_out[p + 7u] = bitcast<u32>(r.progress);
        programs_out[p + 8u] = bitcast<u32>(r.weight);
        programs_out[p + 9u] = bitcast<u32>(r.decay_s);
    }
}

// The scatter pass, before `expand_main` in the same compute pass: the frame's one upload
// (`throng::gpu::GpuCrowd::set_frame_records`: what changed since the last) written into the
// records, shot records and inputs that `expand_main` reads, which stay on the device from
// frame to frame. The upload: a header of `UPLOAD_HEADER_LEN` words (record entries, shot
// entries, input rows, inputs per row, workgroups along x), then the record entries (the
// record's index, then its `RECORD_WORDS`), the shot entries (index, `SHOT_WORDS`), the input
// rows (the character, then its inputs). One thread an entry. The same buffers as bindings 7,
// 10 and 2, bound as words to be written.
const UPLOAD_HEADER_LEN: u32 = 8u;
@group(0) @binding(11) var<storage, read> upload: array<u32>;
@group(0) @binding(12) var<storage, read_write> records_in: array<u32>;
@group(0) @binding(13) var<storage, read_write> shots_in: array<u32>;
@group(0) @binding(14) var<storage, read_write> inputs_in: array<u32>;

@compute @workgroup_size(EXPAND_WORKGROUP)
fn scatter_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let entry = id.x + id.y * upload[4] * EXPAND_WORKGROUP;
    let num_records = upload[0];
    let num_shots = upload[1];
    let per_row = upload[3];
    if entry < num_records {
        let at = UPLOAD_HEADER_LEN + entry * (RECORD_WORDS + 1u);
        let to = upload[at] * RECORD_WORDS;
        for (var w = 0u; w < RECORD_WORDS; w++) {
            records_in[to + w] = upload[at + 1u + w];
        }
        return;
    }
    let shots_at = UPLOAD_HEADER_LEN + num_records * (RECORD_WORDS + 1u);
    let s = entry - num_records;
    if s < num_shots {
        let at = shots_at + s * (SHOT_WORDS + 1u);
        let to = upload[at] * SHOT_WORDS;
        for (var w = 0u; w < SHOT_WORDS; w++) {
            shots_in[to + w] = upload[at + 1u + w];
        }
        return;
    }
    let row = s - num_shots;
    if row < upload[2] {
        let at = shots_at + num_shots * (SHOT_WORDS + 1u) + row * (per_row + 1u);
        let to = upload[at] * per_row;
        for (var w = 0u; w < per_row; w++) {
            inputs_in[to + w] = upload[at + 1u + w];
        }
    }
}
