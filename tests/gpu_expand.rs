//! The expand stage (`shaders/expand.wgsl`, `GpuCrowd::set_frame_records`) against its CPU
//! mirror (`eval::expand::ExpandJob`): the built-in humanoid's records and blend inputs through
//! the real state step, every frame of a script that walks, runs, jumps (interrupting blends)
//! and swells the lean and wave layers, with one-shots on the wave slot, characters despawned
//! and spawned, and uploads that skip updates; then the same records with their clocks at up to
//! `u32::MAX` whole loops. Programs must be equal and samples within 1e-6. Also the word layout
//! and the record's size against the shader, without a device, and the bytes each upload sends.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

use std::sync::Arc;

use throng::Clip;
use throng::demo::{DemoArchetype, DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::expand::ExpandJob;
use throng::eval::sample_positions::sample_positions;
use throng::gpu::{
    EXPAND_WORKGROUP, GpuCrowd, GpuCrowdOptions, GpuError, Specialisation, UPLOAD_HEADER_WORDS, expand_source,
};
use throng::graph::CompiledGraph;
use throng::program::{
    CLOCK_SLOTS, ClipSample, ExpandTables, LayerProgram, LayerRecord, OwnedRecordFrame, RecordClock, RecordFrame,
    ShotRecord, expand_words,
};
use throng::runtime::CrowdRuntime;
use throng::state::OneShot;

const DT: f32 = 1.0 / 60.0;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::gpu;
use support::Rng;
use support::drive::{DemoInputs, demo_runtime, drive_demo};
use support::wgsl::{check_struct, wgsl_u32_constant};

/// The CPU's expansion of a frame.
fn cpu_expand(bound: &DemoArchetype, frame: &RecordFrame<'_>) -> (Vec<LayerProgram>, Vec<ClipSample>) {
    let (tables, trees) = bound.archetype.expansion();
    let characters = frame.records().len() / tables.num_layers();
    let mut programs = vec![LayerProgram::default(); frame.records().len()];
    let mut samples = vec![ClipSample::default(); characters * tables.samples_per_character()];
    ExpandJob::of_frame(tables, trees, frame, &mut programs, &mut samples)
        .run()
        .expect("the state step's records expand");
    (programs, samples)
}

/// Asserts the GPU's expansion equals the CPU's: programs field for field, each program's
/// samples' clips equal and times (modulo the clip's duration, either side of a wrap), weights
/// and advances within 1e-6. Failures print character, layer, the record and its shot record,
/// expected and got.
#[track_caller]
fn assert_expanded_equal(
    what: &str,
    clips: &[Clip],
    frame: &RecordFrame<'_>,
    layers: usize,
    expected: &(Vec<LayerProgram>, Vec<ClipSample>),
    got: &(Vec<LayerProgram>, Vec<ClipSample>),
) {
    assert_eq!(expected.0.len(), got.0.len(), "{what}: program count");
    for (i, (e, g)) in expected.0.iter().zip(&got.0).enumerate() {
        let (character, layer) = (i / layers, i % layers);
        let (record, shot) = (frame.records()[i], frame.shots()[i]);
        let at = format!("{what}: character {character} layer {layer}, record {record:?}, shot {shot:?}");
        assert_eq!(e, g, "{at}: program");
        for s in e.sample_range() {
            let (es, gs) = (&expected.1[s as usize], &got.1[s as usize]);
            assert_eq!(es.clip, gs.clip, "{at}: sample {s}: expected {es:?}, got {gs:?}");
            let duration = clips[es.clip as usize].duration_s();
            let d = (es.time_s - gs.time_s).abs();
            // NaN fails every comparison below.
            let time_error = d.min((d - duration).abs());
            let close = time_error <= 1e-6
                && (es.weight - gs.weight).abs() <= 1e-6
                && (es.advance_s - gs.advance_s).abs() <= 1e-6;
            assert!(close, "{at}: sample {s}: expected {es:?}, got {gs:?}");
        }
    }
}

/// What gameplay asks of a character at `frame`: a speed that changes every half second (some
/// jumps between), a jump now and then, lean and wave weights that wander.
fn script(rng: &mut Rng, frame: usize) -> DemoInputs {
    let target = if frame.is_multiple_of(30) { [0.0, 1.5, 2.75, 4.0][rng.below(4)] } else { -1.0 };
    DemoInputs {
        target_speed_mps: target,
        jump: rng.below(90) == 0,
        lean: rng.range(-0.2, 1.2).clamp(0.0, 1.0),
        wave: rng.range(-0.2, 1.2).clamp(0.0, 1.0),
    }
}

#[test]
fn expand_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let num_characters = 300;
    // The demo graph with its wave layer a slot, so that one-shots play on it.
    let demo = DemoCharacter::humanoid();
    let wave = r#""name": "Wave","#;
    assert!(LOCOMOTION_GRAPH.contains(wave), "the demo graph's wave layer is where this test edits it");
    let json = LOCOMOTION_GRAPH.replacen(wave, r#""name": "Wave", "slot": true,"#, 1);
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json).unwrap())).unwrap();
    let mut runtime = CrowdRuntime::new();
    let kind = runtime
        .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
        .unwrap();
    let mut handles = runtime.spawn_many(kind, num_characters).unwrap();
    let options = GpuCrowdOptions { max_chunk_characters: Some(64), ..Default::default() };
    let mut gpu_crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &bound.clips, &bound.layers, options).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    gpu_crowd.set_expansion(tables, trees).unwrap();
    let layers = tables.num_layers();
    let mut rng = Rng(18);
    let mut speeds = vec![0.0; num_characters];
    let mut targets: Vec<f32> = vec![0.0; num_characters];
    let (mut one_shots, mut skipped, mut moved) = (0, 0, 0);
    for frame in 0..150 {
        let asked: Vec<DemoInputs> = (0..handles.len())
            .map(|c| {
                let mut a = script(&mut rng, frame);
                if a.target_speed_mps < 0.0 {
                    a.target_speed_mps = targets[c];
                }
                targets[c] = a.target_speed_mps;
                a
            })
            .collect();
        drive_demo(&mut runtime, kind, &handles, &mut speeds, DT, |row| asked[row]);
        if frame % 40 == 10 {
            // Every 7th character, from a different one each time: blend-ins over blend-outs.
            let players: Vec<_> = handles.iter().copied().skip(frame % 7).step_by(7).collect();
            let shot = OneShot { blend_in_s: 0.1, blend_out_s: 0.15, ..OneShot::new(frame as u32 % 3) };
            runtime.play_one_shot(&players, "Wave", shot).unwrap();
        }
        if frame % 15 == 7 {
            // Churn: some characters leave (the last rows move into theirs), fewer or more
            // arrive, between an update and the upload of its records.
            for _ in 0..1 + rng.below(6) {
                let k = rng.below(handles.len());
                let (_, row) = runtime.crowd().row_of(handles[k]).unwrap();
                moved += usize::from(row + 1 < handles.len());
                runtime.despawn(handles.swap_remove(k)).unwrap();
                speeds.swap_remove(k);
                targets.swap_remove(k);
            }
            for _ in 0..rng.below(8) {
                handles.push(runtime.spawn(kind).unwrap());
                speeds.push(0.0);
                targets.push(0.0);
            }
        }
        runtime.update(DT).unwrap();
        if frame % 11 == 5 {
            // Uploads that skip updates: the next sends both updates' changes.
            skipped += 1;
            continue;
        }
        let crowd = runtime.crowd();
        let records = crowd.record_frame(kind).unwrap();
        gpu_crowd.set_frame_records(&records, DT).unwrap();
        let got = gpu_crowd.read_expanded_blocking().unwrap();
        assert_eq!(gpu.failure(), None, "frame {frame}: the device");
        let expected = cpu_expand(&bound, &records);
        one_shots += records.records().iter().filter(|r| r.reads_shot()).count();
        assert_expanded_equal(&format!("frame {frame}"), &bound.clips, &records, layers, &expected, &got);
        if frame % 10 == 0 {
            // The sample-positions stage after the expand pass: each expanded sample's frame
            // coordinate, as the CPU's (`tests/gpu_eval.rs`, `sample_positions_matches_cpu`).
            let positions = gpu_crowd.read_sample_positions_blocking().unwrap();
            let mut want = vec![0.0; got.1.len()];
            sample_positions(&bound.clips, &got.1, &mut want);
            assert_eq!(positions.len(), want.len(), "frame {frame}: a position a sample");
            for (i, (g, w)) in positions.iter().zip(&want).enumerate() {
                let clip = &bound.clips[got.1[i].clip as usize];
                let tolerance = if clip.is_looping() { 1e-4 } else { 4.0 * f32::EPSILON * clip.num_frames() as f32 };
                assert!((g - w).abs() <= tolerance, "frame {frame}, sample {i}: GPU {g}, CPU {w}");
            }
        }
        // The crowd's own expansion is the same job's.
        assert_eq!(crowd.programs(kind).unwrap(), &expected.0[..], "frame {frame}: Crowd::programs");
    }
    assert!(one_shots > 1_000, "only {one_shots} one-shot records");
    assert!(skipped > 10 && moved > 10, "{skipped} uploads skipped, {moved} rows moved");
    // Clocks far into their loops: whole loops in integer arithmetic on both sides.
    let crowd = runtime.crowd();
    let frame = crowd.record_frame(kind).unwrap();
    let clock = *frame.clock();
    // Anchors read across updates: the same clocks anchored 1 to 100 updates back, at their
    // rates (`program::clock_at`: whole loops carried, a state that does not loop held at 1).
    for (loops, back) in [(1u32, 1u32), (1_000, 5), (65_537, 37), (1_000_003, 100), (u32::MAX, 0)] {
        let records: Vec<LayerRecord> = frame
            .records()
            .iter()
            .map(|r| LayerRecord {
                loops: r.loops.wrapping_add(loops),
                src_loops: r.src_loops.wrapping_add(loops),
                anchor: clock.now.wrapping_sub(back) as u16,
                ..*r
            })
            .collect();
        let edited = RecordFrame::new(&records, frame.shots(), frame.inputs(), clock);
        gpu_crowd.set_frame_records(&edited, DT).unwrap();
        let got = gpu_crowd.read_expanded_blocking().unwrap();
        let expected = cpu_expand(&bound, &edited);
        let what = format!("{loops} more loops, anchored {back} updates back");
        assert_expanded_equal(&what, &bound.clips, &edited, layers, &expected, &got);
    }
}

/// A crowd built with a measurement specialisation (its layered frame without the switch frame's
/// code) takes a records frame in which no layer with memory switches or fades from a snapshot,
/// and refuses one in which a record says so, naming its character and layer, as it refuses
/// such programs (`tests/gpu_frame.rs`); the refused frame writes nothing, so the next one is
/// taken.
#[test]
fn a_specialised_crowd_refuses_records_that_switch() {
    let Some(gpu) = gpu() else { return };
    let (_, bound, mut runtime, kind, _) = demo_runtime(4);
    let rig = throng::demo::DemoCharacter::humanoid().rig;
    let options = GpuCrowdOptions { specialisation: Specialisation::Steady, ..GpuCrowdOptions::default() };
    let mut gpu_crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &bound.clips, &bound.layers, options).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    gpu_crowd.set_expansion(tables, trees).unwrap();
    runtime.update(DT).unwrap();
    let frame = runtime.crowd().record_frame(kind).unwrap();
    let (shots, inputs, clock) = (frame.shots(), frame.inputs(), *frame.clock());
    let steady: Vec<LayerRecord> = frame
        .records()
        .iter()
        .map(|r| LayerRecord { flags: r.flags & !(Specialisation::SWITCH_FLAGS as u8), ..*r })
        .collect();
    gpu_crowd.set_frame_records(&RecordFrame::new(&steady, shots, inputs, clock), DT).unwrap();
    let layers = bound.layers.len();
    let at = (2 * layers..steady.len()).find(|i| bound.layers[i % layers].needs_memory).expect("a layer with memory");
    let mut switching = steady.clone();
    switching[at].flags |= LayerProgram::SWITCHED as u8;
    let refused = gpu_crowd.set_frame_records(&RecordFrame::new(&switching, shots, inputs, clock), DT);
    assert!(
        matches!(refused, Err(GpuError::Specialised { character, layer, .. }) if (character, layer) == (at / layers, at % layers)),
        "{refused:?}"
    );
    gpu_crowd.set_frame_records(&RecordFrame::new(&steady, shots, inputs, clock), DT).unwrap();
}

#[test]
fn records_frames_are_refused_as_the_cpu_refuses_them() {
    let Some(gpu) = gpu() else { return };
    let (_, bound, mut runtime, kind, _) = demo_runtime(4);
    let rig = throng::demo::DemoCharacter::humanoid().rig;
    let mut gpu_crowd =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &bound.clips, &bound.layers, GpuCrowdOptions::default())
            .unwrap();
    runtime.update(DT).unwrap();
    let crowd = runtime.crowd();
    let frame = crowd.record_frame(kind).unwrap();
    let (records, shots, inputs, clock) = (frame.records(), frame.shots(), frame.inputs(), *frame.clock());
    let upload = |gpu_crowd: &mut GpuCrowd,
                  records: &[LayerRecord],
                  shots: &[ShotRecord],
                  inputs: &[f32],
                  clock: RecordClock| {
        gpu_crowd.set_frame_records(&RecordFrame::new(records, shots, inputs, clock), DT)
    };
    assert!(gpu_crowd.set_frame_records(&frame, DT).is_err(), "no expansion set");
    let (tables, trees) = bound.archetype.expansion();
    gpu_crowd.set_expansion(tables, trees).unwrap();
    gpu_crowd.set_frame_records(&frame, DT).unwrap();
    assert!(upload(&mut gpu_crowd, &records[1..], &shots[1..], inputs, clock).is_err(), "not whole characters");
    assert!(upload(&mut gpu_crowd, records, &shots[1..], inputs, clock).is_err(), "a shot record short");
    assert!(upload(&mut gpu_crowd, records, shots, &inputs[1..], clock).is_err(), "inputs short");
    let mut bad = records.to_vec();
    bad[0].state = tables.states().len() as u16;
    assert!(upload(&mut gpu_crowd, &bad, shots, inputs, clock).is_err(), "a state past the graph's");
    let mut bad = records.to_vec();
    bad[1].weight = f32::NAN;
    assert!(upload(&mut gpu_crowd, &bad, shots, inputs, clock).is_err(), "a NaN weight");
    // A one-shot's part is read, and checked, only where the record says so.
    let mut bad = records.to_vec();
    bad[1].sets = LayerRecord::SHOT_ALONE;
    let mut bad_shots = shots.to_vec();
    bad_shots[1] = ShotRecord { clip: bound.clips.len() as u32, ..ShotRecord::default() };
    assert!(upload(&mut gpu_crowd, &bad, &bad_shots, inputs, clock).is_err(), "a one-shot's clip past the clips");
    bad_shots[1] = ShotRecord { clip: 0, time_s: 0.5, share: f32::NAN, graph_share: 1.0 };
    assert!(upload(&mut gpu_crowd, &bad, &bad_shots, inputs, clock).is_err(), "a NaN shot share");
    assert!(upload(&mut gpu_crowd, records, &bad_shots, inputs, clock).is_ok(), "a shot record no record reads");
    let mut nan_input = inputs.to_vec();
    nan_input[0] = f32::NAN;
    assert!(upload(&mut gpu_crowd, records, shots, &nan_input, clock).is_err(), "an input not canonical");
    let mut stale = clock;
    stale.now = stale.now.wrapping_add(CLOCK_SLOTS as u32);
    assert!(upload(&mut gpu_crowd, records, shots, inputs, stale).is_err(), "anchors past the clock's table");
    // The CPU job refuses the same shapes.
    let mut programs = vec![LayerProgram::default(); records.len()];
    let mut samples = vec![ClipSample::default(); 4 * tables.samples_per_character()];
    let mut cpu_refuses =
        |frame: RecordFrame<'_>| ExpandJob::of_frame(tables, trees, &frame, &mut programs, &mut samples).run().is_err();
    assert!(cpu_refuses(RecordFrame::new(records, shots, &inputs[1..], clock)), "inputs short");
    assert!(cpu_refuses(RecordFrame::new(records, &shots[1..], inputs, clock)), "a shot record short");
    assert!(cpu_refuses(RecordFrame::new(records, shots, inputs, stale)), "anchors past the clock's table");
}

/// The word layout, workgroup, uniform and record of `program`/`gpu` against
/// `shaders/expand.wgsl`, as naga lays them out.
#[test]
fn expand_words_match_the_shader() {
    use std::mem::offset_of;
    use throng::gpu::ExpandParams;
    let source = expand_source();
    let (module, layouter) = support::wgsl::parse(&source);
    let constant = |name: &str| wgsl_u32_constant(&module, name);
    assert_eq!(constant("EXPAND_STATE_LEN") as usize, expand_words::STATE_LEN);
    assert_eq!(constant("EXPAND_LEAF_LEN") as usize, expand_words::LEAF_LEN);
    assert_eq!(constant("EXPAND_LAYER_LEN") as usize, expand_words::LAYER_LEN);
    assert_eq!(constant("EXPAND_WORKGROUP"), EXPAND_WORKGROUP);
    assert_eq!(constant("STATE_SYNC"), ExpandTables::SYNC);
    // Its copy of the least weight that counts (`throng::program::weighs`).
    assert_eq!(support::wgsl::wgsl_f32_constant(&module, "MIN_WEIGHT").to_bits(), f32::MIN_POSITIVE.to_bits());
    assert_eq!(constant("STATE_LOOPING"), ExpandTables::LOOPING);
    assert_eq!(constant("STATE_REVERSE"), ExpandTables::REVERSE);
    assert_eq!(constant("SECONDARY_SOURCE"), u32::from(LayerRecord::SECONDARY_SOURCE));
    assert_eq!(constant("SECONDARY_BACK"), u32::from(LayerRecord::SECONDARY_BACK));
    assert_eq!(constant("SHOT_ALONE"), u32::from(LayerRecord::SHOT_ALONE));
    assert_eq!(constant("SHOT_OVER_GRAPH"), u32::from(LayerRecord::SHOT_OVER_GRAPH));
    assert_eq!(constant("SHOT_HANDBACK"), u32::from(LayerRecord::SHOT_HANDBACK));
    assert_eq!(constant("PROGRAM_WORDS") as usize, size_of::<LayerProgram>() / 4);
    assert_eq!(constant("SAMPLE_WORDS") as usize, size_of::<ClipSample>() / 4);
    assert_eq!(constant("CLOCK_SLOTS") as usize, CLOCK_SLOTS);
    // The uniform: 4 words, the clock's 4, then its seconds as `vec4`s.
    let clock = offset_of!(ExpandParams, clock);
    check_struct(
        &module,
        &layouter,
        "ExpandParams",
        size_of::<ExpandParams>(),
        &[
            ("num_characters", offset_of!(ExpandParams, num_characters)),
            ("groups_x", offset_of!(ExpandParams, groups_x)),
            ("pad0", offset_of!(ExpandParams, pad)),
            ("pad1", offset_of!(ExpandParams, pad) + 4),
            ("now", clock + offset_of!(RecordClock, now)),
            ("pad2", clock + offset_of!(RecordClock, pad)),
            ("pad3", clock + offset_of!(RecordClock, pad) + 4),
            ("pad4", clock + offset_of!(RecordClock, pad) + 8),
            ("elapsed_s", clock + offset_of!(RecordClock, elapsed_s)),
        ],
    );
    // Every field of the record in the same order: whole words one to a member, the 16-bit
    // fields two to a word and the 8-bit ones in one, low bytes first, at the shifts the
    // shader reads them at.
    let at = |field: usize, word: usize| {
        assert_eq!(field / 4, word / 4, "a packed field is not in its word");
        ((field - word) * 8) as u32
    };
    let (state, transition, mode) =
        (offset_of!(LayerRecord, state), offset_of!(LayerRecord, transition), offset_of!(LayerRecord, mode));
    assert_eq!(at(state, state), 0);
    assert_eq!(at(offset_of!(LayerRecord, source), state), constant("RECORD_HIGH_SHIFT"));
    assert_eq!(at(transition, transition), 0);
    assert_eq!(at(offset_of!(LayerRecord, anchor), transition), constant("RECORD_HIGH_SHIFT"));
    assert_eq!(at(mode, mode), 0);
    assert_eq!(at(offset_of!(LayerRecord, flags), mode), constant("RECORD_FLAGS_SHIFT"));
    assert_eq!(at(offset_of!(LayerRecord, sets), mode), constant("RECORD_SETS_SHIFT"));
    assert_eq!(offset_of!(LayerRecord, pad), mode + 3, "the last byte pads");
    macro_rules! record_fields {
        ($($field:ident),*) => { [$((stringify!($field), offset_of!(LayerRecord, $field))),*] };
    }
    let mut fields = vec![("state_source", state), ("transition_anchor", transition)];
    fields.extend(record_fields!(
        phase,
        loops,
        src_phase,
        src_loops,
        advance,
        src_advance,
        target_weight,
        progress,
        weight,
        decay_s,
        rate
    ));
    fields.push(("mode_flags_sets", mode));
    assert_eq!(fields.len() * 4, size_of::<LayerRecord>(), "a field of LayerRecord is missing from the list");
    assert!(size_of::<LayerRecord>() <= 56, "a record is at most 56 bytes");
    check_struct(&module, &layouter, "LayerRecord", size_of::<LayerRecord>(), &fields);
    assert_eq!(constant("RECORD_WORDS") as usize, size_of::<LayerRecord>() / 4);
    assert_eq!(constant("NO_TRANSITION"), u32::from(throng::program::NO_TRANSITION));
    macro_rules! shot_fields {
        ($($field:ident),*) => { [$((stringify!($field), offset_of!(ShotRecord, $field))),*] };
    }
    let fields = shot_fields!(clip, time_s, share, graph_share);
    assert_eq!(fields.len() * 4, size_of::<ShotRecord>(), "a field of ShotRecord is missing from the list");
    check_struct(&module, &layouter, "ShotRecord", size_of::<ShotRecord>(), &fields);
    assert_eq!(constant("SHOT_WORDS") as usize, size_of::<ShotRecord>() / 4);
    assert_eq!(constant("UPLOAD_HEADER_LEN") as usize, UPLOAD_HEADER_WORDS);
}

/// Uploading only what changed: a crowd of paused humanoids (time scale 0: clocks that do not
/// move, no transition, nothing changing) sends no records once it has settled; changing one
/// character's parameter then sends what of that character changed alone (its inputs, or one
/// layer's record), counted in bytes against what changed since the last upload as the test
/// sees it; two updates between uploads send both updates' changes; a despawn sends the row
/// that moved; a frame copied out of the crowd (`OwnedRecordFrame`) sends the same; and the device, reading its unchanged records at each new clock, still expands
/// what the CPU does.
#[test]
fn changing_one_characters_parameter_uploads_that_character_alone() {
    let Some(gpu) = gpu() else { return };
    let num_characters = 20;
    let (demo, bound, mut runtime, kind, handles) = demo_runtime(num_characters);
    let mut gpu_crowd = GpuCrowd::with_layers(
        &gpu.device,
        &gpu.queue,
        &demo.rig,
        &bound.clips,
        &bound.layers,
        GpuCrowdOptions::default(),
    )
    .unwrap();
    let (tables, trees) = bound.archetype.expansion();
    gpu_crowd.set_expansion(tables, trees).unwrap();
    let layers = tables.num_layers();
    let num_inputs = trees.num_inputs();
    // The upload's entries: a record and its index, a shot record and its index, a character's
    // inputs and its row.
    let header = (UPLOAD_HEADER_WORDS * 4) as u64;
    let record_entry = (4 + size_of::<LayerRecord>()) as u64;
    let shot_entry = (4 + size_of::<ShotRecord>()) as u64;
    let input_entry = (4 + 4 * num_inputs) as u64;
    // Today's: every layer's 88-byte record and the inputs of each character in the span.
    let before_per_character = (layers * 88 + 4 * num_inputs) as u64;
    let speed = runtime.param(kind, "speed").unwrap();
    let lean = runtime.param(kind, "lean").unwrap();
    runtime.set_time_scale(&handles, &vec![0.0; num_characters]).unwrap();
    let mut owned = OwnedRecordFrame::default();
    // What the device holds, as the test sees it: the last upload's frame.
    let mut held: Option<(Vec<LayerRecord>, Vec<ShotRecord>, Vec<f32>)> = None;
    // No anchor reaches its periodic re-anchoring (120 updates) in these 40.
    for frame in 1..=40 {
        match frame {
            // Below the speed that leaves Idle, a single clip: its blend input alone changes.
            20 => runtime.set_float(speed, &handles[7..8], &[0.05]).unwrap(),
            // The lean layer's weight: one record changes.
            30 => runtime.set_float(lean, &handles[3..4], &[0.5]).unwrap(),
            // Two updates, one upload: both changes go.
            33 => runtime.set_float(lean, &handles[5..6], &[0.25]).unwrap(),
            34 => runtime.set_float(speed, &handles[9..10], &[0.07]).unwrap(),
            _ => {}
        }
        runtime.update(DT).unwrap();
        if frame == 38 {
            // The last row moves into the despawned one's: sent whole, though its records are
            // the same as the ones it replaced.
            runtime.despawn(handles[2]).unwrap();
        }
        if frame == 33 {
            continue;
        }
        let crowd = runtime.crowd();
        let records = crowd.record_frame(kind).unwrap();
        if frame % 2 == 1 {
            // Copied out first, as an engine's render world does: its stamps go with it.
            owned.copy_from(&records);
            gpu_crowd.set_frame_records(&owned.frame(), DT).unwrap();
        } else {
            gpu_crowd.set_frame_records(&records, DT).unwrap();
        }
        let sent = gpu_crowd.record_bytes_uploaded();
        let (r, sh, inp) = (records.records(), records.shots(), records.inputs());
        let changed: u64 = match &held {
            None => {
                r.len() as u64 * record_entry
                    + r.iter().filter(|x| x.reads_shot()).count() as u64 * shot_entry
                    + (r.len() / layers) as u64 * input_entry
            }
            Some((hr, hs, hi)) => {
                let records: u64 = (0..r.len())
                    .filter(|&i| r[i] != hr[i] || (r[i].reads_shot() && sh[i] != hs[i]))
                    .map(|i| record_entry + if r[i].reads_shot() { shot_entry } else { 0 })
                    .sum();
                let rows = (0..r.len() / layers)
                    .filter(|&c| inp[c * num_inputs..(c + 1) * num_inputs] != hi[c * num_inputs..(c + 1) * num_inputs])
                    .count() as u64;
                records + rows * input_entry
            }
        };
        let expected = match frame {
            38 => header + layers as u64 * record_entry + input_entry,
            _ if changed == 0 => 0,
            _ => header + changed,
        };
        assert_eq!(sent, expected, "frame {frame}: bytes of records, shot records and inputs uploaded");
        match frame {
            1 => assert_eq!(sent, header + num_characters as u64 * (layers as u64 * record_entry + input_entry)),
            20 => assert_eq!(sent, header + input_entry, "the speed changed one input"),
            30 => assert_eq!(sent, header + record_entry, "the lean weight changed one record"),
            34 => assert_eq!(sent, header + record_entry + input_entry, "both updates' changes"),
            2..=19 | 21..=29 | 31 | 32 | 35..=37 | 39 | 40 => assert_eq!(sent, 0, "frame {frame}: nothing changed"),
            _ => {}
        }
        if matches!(frame, 20 | 30) {
            assert!(sent < before_per_character, "frame {frame}: {sent} bytes, not fewer than {before_per_character}");
        }
        held = Some((r.to_vec(), sh.to_vec(), inp.to_vec()));
        // Runs the upload's scatter and the expand, as a frame would.
        let got = gpu_crowd.read_expanded_blocking().unwrap();
        let expected = cpu_expand(&bound, &records);
        assert_expanded_equal(&format!("frame {frame}"), &bound.clips, &records, layers, &expected, &got);
    }
}

/// Bytes [`GpuCrowd::set_frame_records`] sends per character per frame on the demo graph
/// (the built-in humanoid, three layers, one blend input) through the real state step, for a
/// crowd all doing one thing, averaged over 240 frames (two periods of the periodic
/// re-anchoring) after 60 to settle: BENCHMARKS.md "State records" lists them
/// (`cargo test --release --test gpu_expand upload_bytes -- --nocapture`). Each is at most a
/// changed record with its shot record and the inputs per character, and the upload's header
/// shared; a paused crowd sends only its re-anchorings.
#[test]
fn upload_bytes_per_character_on_the_demo_graph() {
    let Some(gpu) = gpu() else { return };
    let n = 64;
    let (settle, frames) = (60, 240);
    let demo = DemoCharacter::humanoid();
    let wave = r#""name": "Wave","#;
    let json = LOCOMOTION_GRAPH.replacen(wave, r#""name": "Wave", "slot": true,"#, 1);
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(&json).unwrap())).unwrap();
    let (tables, trees) = bound.archetype.expansion();
    let layers = tables.num_layers() as f64;
    let num_inputs = trees.num_inputs() as f64;
    const STAND: DemoInputs = DemoInputs { target_speed_mps: 0.0, jump: false, lean: 0.0, wave: 0.0 };
    type Script = fn(usize) -> DemoInputs;
    let scenarios: [(&str, Script, bool, bool); 6] = [
        ("idle: standing, the Idle clip looping", |_| DemoInputs { target_speed_mps: 0.0, ..STAND }, false, false),
        ("moving: walking at 1.5 m/s", |_| DemoInputs { target_speed_mps: 1.5, ..STAND }, false, false),
        ("paused: time scale 0", |_| DemoInputs { target_speed_mps: 1.5, ..STAND }, true, false),
        (
            "parameter changed each frame: speed ramping 1 ↔ 2.5 m/s",
            |f| DemoInputs { target_speed_mps: if (f / 40) % 2 == 0 { 1.0 } else { 2.5 }, ..STAND },
            false,
            false,
        ),
        ("switching: a jump every 30 frames", |f| DemoInputs { jump: f % 30 == 0, ..STAND }, false, false),
        ("one-shot: a looping clip on the wave slot", |_| STAND, false, true),
    ];
    for (name, script, paused, one_shot) in scenarios {
        let mut runtime = CrowdRuntime::new();
        let kind = runtime
            .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
            .unwrap();
        let handles = runtime.spawn_many(kind, n).unwrap();
        let mut gpu_crowd = GpuCrowd::with_layers(
            &gpu.device,
            &gpu.queue,
            &demo.rig,
            &bound.clips,
            &bound.layers,
            GpuCrowdOptions::default(),
        )
        .unwrap();
        gpu_crowd.set_expansion(tables, trees).unwrap();
        let mut speeds = vec![0.0; n];
        let mut total = 0u64;
        for frame in 0..settle + frames {
            if frame == settle / 2 {
                if paused {
                    runtime.set_time_scale(&handles, &vec![0.0; n]).unwrap();
                }
                if one_shot {
                    let shot = OneShot { looping: true, ..OneShot::new(0) };
                    runtime.play_one_shot(&handles, "Wave", shot).unwrap();
                }
            }
            drive_demo(&mut runtime, kind, &handles, &mut speeds, DT, |_| script(frame));
            runtime.update(DT).unwrap();
            gpu_crowd.set_frame_records(&runtime.crowd().record_frame(kind).unwrap(), DT).unwrap();
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            gpu_crowd.encode(&mut encoder);
            gpu.queue.submit([encoder.finish()]);
            if frame >= settle {
                total += gpu_crowd.record_bytes_uploaded();
            }
        }
        assert_eq!(gpu.failure(), None, "{name}: the device");
        let per = total as f64 / (frames * n) as f64;
        println!("{name}: {per:.1} bytes per character per frame");
        // At most every record with its shot record and the inputs, and the header shared.
        let most = layers * (4.0 + 56.0 + 4.0 + 16.0) + 4.0 + 4.0 * num_inputs + 32.0 / n as f64;
        assert!(per <= most, "{name}: {per} bytes, more than every record, shot record and input ({most})");
        if paused {
            // Its records re-anchored once a period, twice in 240 frames, and at most a header a frame.
            let reanchored = 2.0 * layers * 60.0 / frames as f64 + 32.0 / n as f64;
            assert!(per <= reanchored + 1e-9, "{name}: {per} bytes, more than its re-anchorings ({reanchored})");
        }
    }
}

/// A crowd whose records outgrow one storage binding (a device restricted to 1 MiB, about 6,200
/// of the demo graph's characters; its clips take half of it) is expanded on the CPU and uploaded as programs and samples,
/// split into chunks: its frames equal the CPU evaluator's, and it uploads no records. A smaller
/// crowd on the same device takes the records path.
#[test]
fn a_crowd_too_large_for_one_binding_is_expanded_on_the_cpu() {
    use throng::program::OutputLayout;
    let binding = 1 << 20;
    let Some((device, queue)) = gpu_support::gpu_with_limits(|l| l.max_storage_buffer_binding_size = binding) else {
        return;
    };
    for (characters, on_records) in [(7_000, false), (1_000, true)] {
        let (demo, bound, mut runtime, kind, handles) = demo_runtime(characters);
        let options = GpuCrowdOptions { max_chunk_characters: Some(64), ..Default::default() };
        let mut gpu_crowd =
            GpuCrowd::with_layers(&device, &queue, &demo.rig, &bound.clips, &bound.layers, options).unwrap();
        let (tables, trees) = bound.archetype.expansion();
        gpu_crowd.set_expansion(tables, trees).unwrap();
        let record_bytes = characters * tables.num_layers() * size_of::<LayerRecord>();
        assert_eq!(record_bytes > binding as usize, !on_records, "{characters} characters' records: {record_bytes} B");
        let mut rng = Rng(64);
        let mut speeds = vec![0.0; characters];
        let mut targets = vec![0.0f32; characters];
        let mut records_frames = 0;
        for frame in 0..12 {
            let asked: Vec<DemoInputs> = (0..characters).map(|_| script(&mut rng, frame)).collect();
            for (t, a) in targets.iter_mut().zip(&asked) {
                if a.target_speed_mps >= 0.0 {
                    *t = a.target_speed_mps;
                }
            }
            drive_demo(&mut runtime, kind, &handles, &mut speeds, DT, |c| DemoInputs {
                target_speed_mps: targets[c],
                ..asked[c]
            });
            runtime.update(DT).unwrap();
            let mut expected = vec![0.0; runtime.floats_needed(kind, OutputLayout::Mat4).unwrap()];
            runtime.evaluate(kind, OutputLayout::Mat4, &mut expected, &mut []).unwrap();
            gpu_crowd.set_frame_records(&runtime.crowd().record_frame(kind).unwrap(), DT).unwrap();
            records_frames += usize::from(gpu_crowd.record_bytes_uploaded() > 0);
            let got = gpu_support::encode_and_read(&device, &queue, &gpu_crowd);
            support::compare::assert_matrices_close(
                &expected,
                &got,
                16,
                demo.rig.num_joints(),
                support::compare::GPU_TOLERANCE,
                &format!("{characters} characters, frame {frame}"),
            );
        }
        if on_records {
            assert!(records_frames > 0, "{characters} characters: the records path");
        } else {
            assert_eq!(records_frames, 0, "{characters} characters: every frame expanded on the CPU");
        }
    }
}
