//! One archetype's characters in SoA columns (`Group`): spawn, swap-remove, and the parallel step over chunks.

use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use crate::blend_space::TreeScratch;
use crate::graph::{NO_INDEX, ParamKind, ParamSlot, ParamValue, Transition};
use crate::program::{
    CLOCK_SLOTS, ClipSample, LayerProgram, LayerRecord, RecordClock, ShotRecord, expand_character, swap_remove_row,
};

use super::lod::{DueList, LOD_PHASES};
use super::one_shot::Playing;
use super::step::{self, EventSink, LayerSlot, Lod, ParamView, Scratch, StepContext};
use super::{AnimationEvent, Archetype, CharacterHandle, LayerReadback, Slot};
// Only named in docs.
#[cfg(doc)]
use super::{Crowd, MAX_EVENTS_PER_LAYER_UPDATE};

/// Characters per rayon task: enough to amortise task overhead (the step costs tens of
/// nanoseconds per character), few enough to balance two to sixteen cores at 10k characters.
pub const CHARACTERS_PER_CHUNK: usize = 512;

/// One archetype's characters, one column per field.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) arch: Archetype,
    pub(super) slots: Vec<u32>,
    // Per character × layer (index row * layers + layer).
    pub(super) active: Vec<u16>,
    pub(super) previous: Vec<u16>,
    pub(super) phase: Vec<f32>,
    pub(super) loops: Vec<u32>,
    pub(super) src_phase: Vec<f32>,
    pub(super) src_loops: Vec<u32>,
    pub(super) transition: Vec<u16>,
    /// Imperative transitions waiting for the next update ([`NO_INDEX`] when none).
    pub(super) pending: Vec<u16>,
    pub(super) trans_time_s: Vec<f32>,
    pub(super) trans_duration_s: Vec<f32>,
    pub(super) flags: Vec<u8>,
    /// Imperative transitions (`Crowd::transition_to`), numbered after the graph's: entry `k`
    /// is transition `graph.transitions().len() + k` in `transition` and `pending`.
    pub(super) commands: Vec<Transition>,
    /// One-shots playing (`Crowd::play_one_shot`), ascending by row and layer: a list, so that
    /// characters playing none cost nothing.
    pub(super) one_shots: Vec<Playing>,
    // Per parameter.
    pub(super) floats: Vec<Vec<f32>>,
    pub(super) ints: Vec<Vec<i32>>,
    pub(super) bools: Vec<Vec<bool>>,
    // Per character.
    pub(super) triggers: Vec<u64>,
    pub(super) single_frame: Vec<u64>,
    /// Per character, the multiplier of `dt` its step runs at (`Crowd::set_time_scale`): 1
    /// plays in real time, 0 pauses.
    pub(super) time_scale: Vec<f32>,
    // Animation LOD, per character: evaluation rate, stagger phase, updates skipped since the
    // last evaluation (`u8::MAX` before the first), seconds since then, due this update.
    pub(super) lod_rate: Vec<u8>,
    pub(super) lod_phase: Vec<u8>,
    pub(super) lod_skipped: Vec<u8>,
    pub(super) lod_elapsed_s: Vec<f32>,
    pub(super) lod_due: Vec<bool>,
    /// Updates so far; with a character's phase, picks its due updates.
    pub(super) lod_frame: u32,
    // Output.
    /// Per character × layer, the state record the last update left.
    pub(super) records: Vec<LayerRecord>,
    /// Per character × layer, the record's one-shot part (read under its `SHOT_*` sets).
    pub(super) shots: Vec<ShotRecord>,
    /// Per character × layer, when its record or shot record last changed: the `version` that
    /// changed it (`program::RecordFrame`'s stamps).
    pub(super) record_stamps: Vec<u32>,
    /// Per character, when its blend inputs last changed, as `record_stamps`.
    pub(super) input_stamps: Vec<u32>,
    /// Counts what changes records: one more for each update, spawn and despawn (wrapping).
    pub(super) version: u32,
    /// The parameters the blend trees read (`blend_slots`), per character, as the last update
    /// read them: the `blend_space` stage's inputs.
    pub(super) inputs: Vec<f32>,
    /// `CompiledGraph::blend_inputs` of the archetype's graph.
    pub(super) blend_slots: Vec<ParamSlot>,
    /// The records expanded into pose programs and samples, when asked for
    /// (`Crowd::programs`, `Crowd::samples`); dropped by anything that changes a record.
    pub(super) expanded: OnceLock<Expanded>,
    /// A dropped expansion's buffers, for the next to fill.
    pub(super) spare_expanded: Mutex<Expanded>,
    /// Updates so far, and the seconds since each of the last `CLOCK_SLOTS` (by update modulo
    /// the slots): the records' anchors are read against them ([`Group::record_clock`]). In
    /// f64, each slot summing at most `CLOCK_SLOTS` steps, so that no slot loses the seconds
    /// of a short step after a long one.
    pub(super) clock_now: u32,
    pub(super) clock_since_s: [f64; CLOCK_SLOTS],
    /// The last update's animation events, in row order.
    pub(super) events: Vec<AnimationEvent>,
    /// Events the last update did not report, past [`MAX_EVENTS_PER_LAYER_UPDATE`].
    pub(super) events_dropped: u64,
    /// One list per chunk of the parallel step, with the events it dropped, concatenated into
    /// `events` after it; kept so that their capacity is reused from update to update.
    pub(super) chunk_events: Vec<(Vec<AnimationEvent>, u64)>,
    /// The due rows (`lod_due`), ascending, with their `lod_elapsed_s`: built by each update,
    /// dropped by a spawn or despawn (which change rows) and built again when next asked for, so
    /// that neither costs more than moving a row.
    pub(super) due: OnceLock<DueList>,
    /// A dropped list's buffers, for the next update to fill.
    pub(super) spare_due: DueList,
    /// Per chunk of the parallel step, the rows it found switching on an update they would
    /// have skipped, to be made due after it (LOD never defers a switch).
    pub(super) chunk_promoted: Vec<Vec<u32>>,
}

/// A group's records expanded ([`expand_character`]): programs `row * layers + layer`, and each
/// character's block of samples.
#[derive(Debug, Default)]
pub(super) struct Expanded {
    pub(super) programs: Vec<LayerProgram>,
    pub(super) samples: Vec<ClipSample>,
}

impl Group {
    /// The records expanded into programs and samples, expanded now if nothing has since they
    /// last changed.
    pub(super) fn expanded(&self) -> &Expanded {
        self.expanded.get_or_init(|| {
            let (tables, trees) = self.arch.expansion();
            let clock = self.record_clock();
            let layers = self.num_layers();
            let per = tables.samples_per_character();
            let num_inputs = self.blend_slots.len();
            // The last expansion's buffers: every program is written, and every sample slot a
            // program reads.
            let mut out = self.spare_expanded.lock().map(|mut spare| std::mem::take(&mut *spare)).unwrap_or_default();
            out.programs.resize(self.records.len(), LayerProgram::default());
            out.samples.resize(self.slots.len() * per, ClipSample::default());
            if layers == 0 {
                return out;
            }
            let chunk = CHARACTERS_PER_CHUNK;
            out.programs
                .par_chunks_mut(chunk * layers)
                .zip(out.samples.par_chunks_mut((chunk * per).max(1)))
                .enumerate()
                .for_each(|(c, (programs, samples))| {
                    let mut scratch = TreeScratch::new();
                    for k in 0..programs.len() / layers {
                        let row = c * chunk + k;
                        let inputs = &self.inputs[row * num_inputs..(row + 1) * num_inputs];
                        let records = &self.records[row * layers..(row + 1) * layers];
                        let shots = &self.shots[row * layers..(row + 1) * layers];
                        let block = &mut samples[k * per..(k + 1) * per];
                        let own = &mut programs[k * layers..(k + 1) * layers];
                        expand_character(
                            tables,
                            trees,
                            inputs,
                            &clock,
                            row * per,
                            records,
                            shots,
                            own,
                            block,
                            &mut scratch,
                        );
                    }
                });
            out
        })
    }

    /// The clock the records' anchors are read against after the last update.
    pub(super) fn record_clock(&self) -> RecordClock {
        RecordClock {
            now: self.clock_now,
            pad: [0; 3],
            // Past f32 (a run of huge steps): the largest finite, which no anchor with a rate
            // reads (a step of a whole cycle re-anchors).
            elapsed_s: self.clock_since_s.map(|s| (s as f32).min(f32::MAX)),
        }
    }

    /// Drops the expansion (its records changed), keeping its buffers for the next.
    pub(super) fn drop_expanded(&mut self) {
        if let Some(old) = self.expanded.take()
            && let Ok(spare) = self.spare_expanded.get_mut()
        {
            *spare = old;
        }
    }

    /// What layer slot `i` (`row * layers + layer`, in range) is doing.
    pub(super) fn layer_readback(&self, i: usize) -> LayerReadback {
        let record = &self.records[i];
        // A one-shot writes over a slot's record; the graph's figures are kept with it.
        let (progress, target_weight) =
            self.one_shot_at(i).and_then(|play| play.graph_blend).unwrap_or((record.progress, record.target_weight));
        LayerReadback {
            active_state: self.active[i] as usize,
            previous_state: (self.previous[i] != NO_INDEX).then_some(self.previous[i] as usize),
            transitioning: self.transition[i] != NO_INDEX,
            transition_progress: progress,
            active_weight: target_weight,
            previous_weight: 1.0 - target_weight,
            phase: self.phase[i],
            loops: self.loops[i],
        }
    }

    pub(super) fn new(arch: Archetype) -> Self {
        let g = &arch.graph;
        Self {
            slots: Vec::new(),
            active: Vec::new(),
            previous: Vec::new(),
            phase: Vec::new(),
            loops: Vec::new(),
            src_phase: Vec::new(),
            src_loops: Vec::new(),
            transition: Vec::new(),
            pending: Vec::new(),
            commands: Vec::new(),
            one_shots: Vec::new(),
            trans_time_s: Vec::new(),
            trans_duration_s: Vec::new(),
            flags: Vec::new(),
            floats: vec![Vec::new(); g.num_columns(ParamKind::Float)],
            ints: vec![Vec::new(); g.num_columns(ParamKind::Int)],
            bools: vec![Vec::new(); g.num_columns(ParamKind::Bool)],
            triggers: Vec::new(),
            single_frame: Vec::new(),
            time_scale: Vec::new(),
            lod_rate: Vec::new(),
            lod_phase: Vec::new(),
            lod_skipped: Vec::new(),
            lod_elapsed_s: Vec::new(),
            lod_due: Vec::new(),
            lod_frame: 0,
            records: Vec::new(),
            shots: Vec::new(),
            record_stamps: Vec::new(),
            input_stamps: Vec::new(),
            version: 0,
            inputs: Vec::new(),
            blend_slots: g.blend_inputs(),
            expanded: OnceLock::new(),
            spare_expanded: Mutex::default(),
            clock_now: 0,
            clock_since_s: [0.0; CLOCK_SLOTS],
            events: Vec::new(),
            events_dropped: 0,
            chunk_events: Vec::new(),
            due: OnceLock::new(),
            spare_due: DueList::default(),
            chunk_promoted: Vec::new(),
            arch,
        }
    }

    pub(super) fn num_layers(&self) -> usize {
        self.arch.graph.layers().len()
    }

    /// Appends a character in each layer's default state, `phase` (in [0, 1), checked by the
    /// caller) into it.
    pub(super) fn push(&mut self, slot: u32, phase: f32) {
        let g = Arc::clone(&self.arch.graph);
        let row = self.slots.len();
        self.slots.push(slot);
        let mut trig = 0u64;
        for p in g.parameters() {
            let col = p.slot.column as usize;
            match p.default {
                ParamValue::Float(v) => self.floats[col].push(v),
                ParamValue::Int(v) => self.ints[col].push(v),
                ParamValue::Bool(v) => self.bools[col].push(v),
                ParamValue::Trigger(v) => trig |= u64::from(v) << (col % 64),
            }
        }
        self.triggers.push(trig);
        self.single_frame.push(0);
        self.time_scale.push(1.0);
        self.lod_rate.push(1);
        self.lod_phase.push((slot % LOD_PHASES) as u8);
        self.lod_skipped.push(u8::MAX);
        self.lod_elapsed_s.push(0.0);
        // Due at once: evaluated between this update and the next, it shows its first pose
        // rather than an output row nobody wrote (the next update lists it again, as new).
        self.lod_due.push(true);
        self.drop_due();
        self.drop_expanded();
        let view = ParamView { floats: &self.floats, ints: &self.ints, bools: &self.bools, row };
        let first_input = self.inputs.len();
        self.inputs.resize(first_input + self.blend_slots.len(), 0.0);
        step::write_blend_inputs(&self.blend_slots, &view, trig, &mut self.inputs[first_input..]);
        self.version = self.version.wrapping_add(1);
        let stamp = self.version;
        self.input_stamps.push(stamp);
        for layer in 0..g.layers().len() {
            let view = ParamView { floats: &self.floats, ints: &self.ints, bools: &self.bools, row };
            let start = step::initial_state(&g, layer, &view, trig);
            // Shown if the character is evaluated before the next update (animation LOD makes
            // it due at once): its start state's first frame, not the rig's rest pose.
            let record = step::start_record(&self.arch, layer, usize::from(start), &view, trig, phase, self.clock_now);
            self.active.push(start);
            self.previous.push(NO_INDEX);
            self.phase.push(phase);
            self.loops.push(0);
            self.src_phase.push(0.0);
            self.src_loops.push(0);
            self.transition.push(NO_INDEX);
            self.pending.push(NO_INDEX);
            self.trans_time_s.push(0.0);
            self.trans_duration_s.push(0.0);
            self.flags.push(step::FLAG_ENTERED);
            self.records.push(record);
            self.shots.push(ShotRecord::default());
            self.record_stamps.push(stamp);
        }
    }

    /// Swap-removes `row`; returns the slot of the character that moved into it, if any.
    pub(super) fn swap_remove(&mut self, row: usize) -> Option<u32> {
        let layers = self.num_layers();
        let last = self.slots.len() - 1;
        self.slots.swap_remove(row);
        for col in &mut self.floats {
            col.swap_remove(row);
        }
        for col in &mut self.ints {
            col.swap_remove(row);
        }
        for col in &mut self.bools {
            col.swap_remove(row);
        }
        self.triggers.swap_remove(row);
        self.single_frame.swap_remove(row);
        self.time_scale.swap_remove(row);
        self.lod_rate.swap_remove(row);
        self.lod_phase.swap_remove(row);
        self.lod_skipped.swap_remove(row);
        self.lod_elapsed_s.swap_remove(row);
        self.lod_due.swap_remove(row);
        self.drop_due();
        swap_remove_row(&mut self.active, row, layers);
        swap_remove_row(&mut self.previous, row, layers);
        swap_remove_row(&mut self.phase, row, layers);
        swap_remove_row(&mut self.loops, row, layers);
        swap_remove_row(&mut self.src_phase, row, layers);
        swap_remove_row(&mut self.src_loops, row, layers);
        swap_remove_row(&mut self.transition, row, layers);
        swap_remove_row(&mut self.pending, row, layers);
        swap_remove_row(&mut self.trans_time_s, row, layers);
        swap_remove_row(&mut self.trans_duration_s, row, layers);
        swap_remove_row(&mut self.flags, row, layers);
        swap_remove_row(&mut self.records, row, layers);
        swap_remove_row(&mut self.shots, row, layers);
        swap_remove_row(&mut self.record_stamps, row, layers);
        swap_remove_row(&mut self.inputs, row, self.blend_slots.len());
        self.input_stamps.swap_remove(row);
        if row != last {
            // The row moved: its records and inputs are new at `row`.
            self.version = self.version.wrapping_add(1);
            self.record_stamps[row * layers..(row + 1) * layers].fill(self.version);
            self.input_stamps[row] = self.version;
        }
        self.drop_expanded();
        self.one_shots.retain(|p| p.row as usize != row);
        if row != last {
            for p in self.one_shots.iter_mut().filter(|p| p.row as usize == last) {
                p.row = row as u32;
            }
            self.one_shots.sort_by_key(|p| (p.row, p.layer));
        }
        (row != last).then(|| self.slots[row])
    }

    /// Steps every character; `slots` (the crowd's) supply the generations of event handles.
    pub(super) fn update(&mut self, dt_s: f32, slots: &[Slot], crowd: u32) {
        self.schedule(dt_s);
        self.drop_expanded();
        // The records' clock: one more update, `dt_s` more seconds since each of the last.
        self.clock_now = self.clock_now.wrapping_add(1);
        let now = self.clock_now;
        self.version = self.version.wrapping_add(1);
        let version = self.version;
        for since in &mut self.clock_since_s {
            *since += f64::from(dt_s);
        }
        self.clock_since_s[now as usize % CLOCK_SLOTS] = 0.0;
        let layers = self.num_layers();
        let num_inputs = self.blend_slots.len();
        let chunk = CHARACTERS_PER_CHUNK;
        let num_chunks = self.slots.len().div_ceil(chunk);
        if self.chunk_events.len() < num_chunks {
            self.chunk_events.resize_with(num_chunks, Default::default);
        }
        if self.chunk_promoted.len() < num_chunks {
            self.chunk_promoted.resize_with(num_chunks, Vec::new);
        }
        let arch = &self.arch;
        let with_events = arch.has_events();
        let (floats, ints, bools, rows, time_scale, commands) =
            (&self.floats, &self.ints, &self.bools, &self.slots, &self.time_scale, &self.commands);
        let blend_slots = &self.blend_slots;
        // Each chunk's blend inputs (empty for a graph whose trees read no parameter).
        let mut chunk_inputs: Vec<&mut [f32]> = if num_inputs > 0 {
            self.inputs.chunks_mut(chunk * num_inputs).collect()
        } else {
            (0..num_chunks).map(|_| &mut [][..]).collect()
        };
        let (lod_due, lod_elapsed_s) = (&self.lod_due, &self.lod_elapsed_s);
        self.active
            .par_chunks_mut(chunk * layers)
            .zip(self.previous.par_chunks_mut(chunk * layers))
            .zip(self.phase.par_chunks_mut(chunk * layers))
            .zip(self.loops.par_chunks_mut(chunk * layers))
            .zip(self.src_phase.par_chunks_mut(chunk * layers))
            .zip(self.src_loops.par_chunks_mut(chunk * layers))
            .zip(self.transition.par_chunks_mut(chunk * layers).zip(self.pending.par_chunks_mut(chunk * layers)))
            .zip(self.trans_time_s.par_chunks_mut(chunk * layers))
            .zip(self.trans_duration_s.par_chunks_mut(chunk * layers))
            .zip(self.flags.par_chunks_mut(chunk * layers))
            .zip(self.triggers.par_chunks_mut(chunk))
            .zip(self.single_frame.par_chunks_mut(chunk))
            .zip(self.records.par_chunks_mut(chunk * layers).zip(self.record_stamps.par_chunks_mut(chunk * layers)))
            .zip(chunk_inputs.par_iter_mut().zip(self.input_stamps.par_chunks_mut(chunk)))
            .zip(self.chunk_events[..num_chunks].par_iter_mut().zip(self.chunk_promoted[..num_chunks].par_iter_mut()))
            .enumerate()
            .for_each(
                |(
                    c,
                    (
                        (
                            (
                                (
                                    (
                                        (
                                            (
                                                (
                                                    (
                                                        (((((active, previous), phase), loops), src_phase), src_loops),
                                                        (transition, pending),
                                                    ),
                                                    trans_time_s,
                                                ),
                                                trans_duration_s,
                                            ),
                                            flags,
                                        ),
                                        triggers,
                                    ),
                                    single,
                                ),
                                (records, record_stamps),
                            ),
                            (inputs, input_stamps),
                        ),
                        (fired, promoted),
                    ),
                )| {
                    let zone = crate::zone!("throng.state_step.chunk");
                    zone.value(c as u64);
                    let mut scratch = Scratch::new();
                    let (fired, dropped) = (&mut fired.0, &mut fired.1);
                    fired.clear();
                    *dropped = 0;
                    promoted.clear();
                    for k in 0..triggers.len() {
                        let row = c * chunk + k;
                        let view = ParamView { floats, ints, bools, row };
                        let trig = triggers[k];
                        let mut consumed = 0u64;
                        let character = if with_events {
                            let index = rows[row];
                            CharacterHandle {
                                index,
                                generation: slots.get(index as usize).map_or(0, |s| s.generation),
                                crowd,
                            }
                        } else {
                            CharacterHandle { index: u32::MAX, generation: 0, crowd }
                        };
                        let mut sink =
                            EventSink { out: &mut *fired, character, row: row as u32, layer_first: 0, dropped: 0 };
                        let lod = Lod { elapsed_s: lod_elapsed_s[row] };
                        // The character's own time: its clocks, transitions and events run at
                        // its time scale (a product of finite values can overflow; the step
                        // takes the largest finite one as it takes a huge `dt`).
                        let ctx = StepContext {
                            arch,
                            commands,
                            dt_s: (dt_s * time_scale[row]).min(f32::MAX),
                            time_scale: time_scale[row],
                            now,
                        };
                        let stamps = &mut record_stamps[k * layers..(k + 1) * layers];
                        for (l, stamp) in stamps.iter_mut().enumerate() {
                            let i = k * layers + l;
                            let slot = LayerSlot {
                                active: &mut active[i],
                                previous: &mut previous[i],
                                phase: &mut phase[i],
                                loops: &mut loops[i],
                                src_phase: &mut src_phase[i],
                                src_loops: &mut src_loops[i],
                                transition: &mut transition[i],
                                pending: &mut pending[i],
                                trans_time_s: &mut trans_time_s[i],
                                trans_duration_s: &mut trans_duration_s[i],
                                flags: &mut flags[i],
                            };
                            let changed = step::step_layer(
                                &ctx,
                                l,
                                slot,
                                &view,
                                trig,
                                &mut consumed,
                                &mut scratch,
                                &mut records[i],
                                &mut sink,
                                lod,
                            );
                            if changed {
                                *stamp = version;
                            }
                        }
                        // Read with the triggers this update saw, as the layers did.
                        if num_inputs > 0 {
                            let own = &mut inputs[k * num_inputs..(k + 1) * num_inputs];
                            if step::write_blend_inputs(blend_slots, &view, trig, own) {
                                input_stamps[k] = version;
                            }
                        }
                        *dropped += sink.dropped;
                        triggers[k] = trig & !consumed & !single[k];
                        single[k] = 0;
                        if !lod_due[row]
                            && records[k * layers..(k + 1) * layers]
                                .iter()
                                .any(|r| u32::from(r.flags) & LayerProgram::SWITCHED != 0)
                        {
                            promoted.push(row as u32);
                        }
                    }
                    #[cfg(feature = "tracy")]
                    crate::profile::count_step_chunk(triggers.len(), records);
                },
            );
        // Chunks in row order, whatever thread ran each: the list is the same at any thread count.
        self.events.clear();
        self.events_dropped = 0;
        for (fired, dropped) in &self.chunk_events[..num_chunks] {
            self.events.extend_from_slice(fired);
            self.events_dropped += dropped;
        }
        if !self.one_shots.is_empty() {
            self.step_one_shots(dt_s, slots, crowd);
        }
        // The rows that switched on an update they would have skipped are evaluated on it; their
        // count of skipped updates starts afresh.
        for &row in self.chunk_promoted[..num_chunks].iter().flatten() {
            self.lod_due[row as usize] = true;
            self.lod_skipped[row as usize] = 0;
        }
        let list = std::mem::take(&mut self.spare_due).fill(&self.lod_due, &self.lod_elapsed_s);
        self.due = OnceLock::from(list);
    }
}
