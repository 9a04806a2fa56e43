//! One-shots (`docs/state-machine.md#one-shots`): a clip outside the graph's states played on a
//! slot layer for a batch of characters, blended in over what the layer showed and out again to
//! the graph's own pose. Only the characters playing one pay for it: the plays are a list, not a
//! column, stepped after the parallel pass and written over the slot layer's program.
//!
//! | phase | layer weight | the layer's pose (program) |
//! |---|---|---|
//! | blend in | from what the layer showed to the shot's weight | frozen fade: the displayed pose at the start → the clip |
//! | play | the shot's weight | the clip |
//! | blend out | back to the graph's layer weight | the clip's samples and the graph's destination's, crossfaded in the sample stage |
//!
//! Every phase is a program both evaluators already run (the frozen fade, a plain sample
//! blend), written as the slot layer's state record (`program::LayerRecord`'s `SHOT_*` sets) and
//! its `program::ShotRecord` (the clip, its time, and the shares the record's own fields no
//! longer hold), so both evaluators expand and show a one-shot as they do the graph.

use crate::program::{LayerProgram, LayerRecord, NO_TRANSITION, ShotRecord, SwitchMode, weighs};

use super::columns::Group;
use super::step::{Interval, MAX_EVENTS_PER_LAYER_UPDATE};
use super::{AnimationEvent, Archetype, CharacterHandle, Crowd, Slot, StateError};

/// A clip to play on a slot ([`Crowd::play_one_shot`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneShot {
    /// Index into the archetype's clip table; its duration must be known to the archetype
    /// ([`Archetype::with_clip_durations`]). On an additive slot, a delta clip.
    pub clip: u32,
    /// Seconds of the character's time over which it blends in, finite and ≥ 0 (0 cuts in).
    pub blend_in_s: f32,
    /// Seconds over which it blends out, finite and ≥ 0: a clip played once starts blending out
    /// when this much of it is left (not before its blend-in ends), a looping one when stopped
    /// ([`Crowd::stop_one_shot`]).
    pub blend_out_s: f32,
    /// The slot layer's weight while it plays, in [0, 1].
    pub weight: f32,
    /// Whether the clip loops until stopped; once (holding its last frame while it blends out)
    /// when false.
    pub looping: bool,
}

impl OneShot {
    /// Clip `clip` once, at full weight, blending in and out over 0.2 s.
    #[must_use]
    pub const fn new(clip: u32) -> Self {
        Self { clip, blend_in_s: 0.2, blend_out_s: 0.2, weight: 1.0, looping: false }
    }

    /// What is wrong with the options, if anything.
    pub(super) fn problem(&self) -> Option<&'static str> {
        let seconds = |s: f32| s.is_finite() && s >= 0.0;
        if !seconds(self.blend_in_s) {
            Some("blend_in_s is seconds, finite and ≥ 0")
        } else if !seconds(self.blend_out_s) {
            Some("blend_out_s is seconds, finite and ≥ 0")
        } else if !(0.0..=1.0).contains(&self.weight) {
            Some("weight lies in [0, 1]")
        } else {
            None
        }
    }
}

/// What a character's slot is playing, as [`Crowd::one_shot`] reports it after an update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneShotReadback {
    /// The clip.
    pub clip: u32,
    /// Seconds into the clip (wrapped when it loops).
    pub time_s: f32,
    /// The slot layer's weight shown, in [0, 1].
    pub weight: f32,
    /// Whether it is blending out (stopped, or near its end).
    pub blending_out: bool,
}

/// Where a play is in its blend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fade {
    /// Blending in for `elapsed_s`, from layer weight `from` (`None`: the graph's, read at the
    /// first update).
    In { elapsed_s: f32, from: Option<f32> },
    /// Playing at full weight.
    Play,
    /// Blending out for `elapsed_s` from layer weight `from`; `frozen` when it started before
    /// the blend-in ended, so it fades from the frozen displayed pose rather than the clip.
    Out { elapsed_s: f32, from: f32, frozen: bool },
}

/// One character's one-shot on one slot.
#[derive(Clone, Copy, Debug)]
pub(super) struct Playing {
    pub row: u32,
    pub layer: u16,
    pub shot: OneShot,
    pub duration_s: f32,
    /// Clip seconds played since the start, not wrapped (`f64` keeps long loops precise).
    pub clock_s: f64,
    pub fade: Fade,
    /// The slot layer's weight the last update showed: where an interrupting one starts.
    pub shown_weight: f32,
    /// Commanded, not stepped yet: the next update starts it (its switch).
    pub new: bool,
    /// Started on the last update: the next advance fires events at 0 too.
    pub entered: bool,
    /// A stop was asked for: blend out at the next update.
    pub stop: bool,
    /// The graph's own transition progress and destination share for the slot layer this
    /// update, which the program written over it no longer holds (for the readback); `None`
    /// before anything was written over it.
    pub graph_blend: Option<(f32, f32)>,
}

impl Playing {
    pub(super) fn new(row: u32, layer: u16, shot: OneShot, duration_s: f32, from: Option<f32>) -> Self {
        Self {
            row,
            layer,
            shot,
            duration_s,
            clock_s: 0.0,
            fade: Fade::In { elapsed_s: 0.0, from },
            shown_weight: from.unwrap_or(0.0),
            new: true,
            entered: false,
            stop: false,
            graph_blend: None,
        }
    }

    /// Seconds into the clip.
    pub(super) fn time_s(&self) -> f32 {
        let d = f64::from(self.duration_s);
        (if self.shot.looping { self.clock_s % d } else { self.clock_s.min(d) }) as f32
    }

    pub(super) fn readback(&self) -> OneShotReadback {
        OneShotReadback {
            clip: self.shot.clip,
            time_s: self.time_s(),
            weight: self.shown_weight,
            blending_out: matches!(self.fade, Fade::Out { .. }),
        }
    }
}

/// What one play needs of its character for an update.
pub(super) struct PlayStep<'a> {
    pub arch: &'a Archetype,
    /// The character's time this update (dt × its time scale).
    pub dt_s: f32,
    /// The slot layer's record the graph wrote this update; replaced while the play shows.
    pub record: &'a mut LayerRecord,
    /// The record's one-shot part.
    pub shot: &'a mut ShotRecord,
    pub character: CharacterHandle,
    pub events: &'a mut Vec<AnimationEvent>,
    pub dropped: &'a mut u64,
}

/// Steps one play and writes the slot layer's program; returns whether it is still playing
/// (false once it has blended out, the graph's program then shown as written).
pub(super) fn step_play(play: &mut Playing, step: PlayStep<'_>) -> bool {
    let PlayStep { arch, dt_s, record, shot, character, events, dropped } = step;
    let graph_weight = record.weight;
    play.graph_blend = Some((record.progress, record.target_weight));
    let mut switched = false;
    if play.new {
        play.new = false;
        play.entered = true;
        switched = true;
    } else {
        let before = play.clock_s;
        let d = f64::from(play.duration_s);
        let after = before + f64::from(dt_s);
        play.clock_s = if play.shot.looping { after } else { after.min(d) };
        let inclusive = std::mem::take(&mut play.entered);
        let shown_before = clip_share(play, graph_weight);
        match &mut play.fade {
            Fade::In { elapsed_s, .. } | Fade::Out { elapsed_s, .. } => *elapsed_s += dt_s,
            Fade::Play => {}
        }
        // The clip's weight over the update: the larger of its weights at either end, so that
        // the first advance of a blend-in and the last of a blend-out report their events.
        let weight = shown_before.max(clip_share(play, graph_weight));
        if weighs(weight) && weight >= arch.event_weight_threshold {
            let looping = play.shot.looping;
            let interval =
                Interval { start: before.min(play.clock_s), end: play.clock_s, inclusive, duration: d, looping };
            fire(arch, play, interval, weight, character, events, dropped);
        }
    }
    // Phase changes: the blend-in ends; the blend-out starts when stopped or near the end of a
    // clip played once, not before the blend-in ends (a stop during it fades from the frozen
    // displayed pose); it ends the play.
    if let Fade::In { elapsed_s, .. } = play.fade
        && elapsed_s >= play.shot.blend_in_s
        && !switched
    {
        play.fade = Fade::Play;
    }
    let near_end = !play.shot.looping
        && matches!(play.fade, Fade::Play)
        && play.clock_s >= f64::from(play.duration_s - play.shot.blend_out_s);
    if !switched && (near_end || play.stop && !matches!(play.fade, Fade::Out { .. })) {
        let frozen = matches!(play.fade, Fade::In { .. });
        play.fade = Fade::Out { elapsed_s: 0.0, from: play.shown_weight, frozen };
        switched = frozen;
    }
    if let Fade::Out { elapsed_s, .. } = play.fade
        && elapsed_s >= play.shot.blend_out_s
    {
        // Handing back to the graph: a fade of its own from the frozen snapshot (which the
        // one-shot overwrote) restarts from the displayed pose, the graph's destination.
        if u32::from(record.flags) & LayerProgram::SOURCE_SNAPSHOT != 0 {
            record.flags |= LayerProgram::SWITCHED as u8;
        }
        return false;
    }
    write_record(play, graph_weight, switched, record, shot);
    true
}

/// Fraction `elapsed / total` of a blend, 1 for an empty one.
fn progress(elapsed_s: f32, total_s: f32) -> f32 {
    if total_s > 0.0 { (elapsed_s / total_s).clamp(0.0, 1.0) } else { 1.0 }
}

/// The clip's weight in the character's pose (its share of the slot layer times the layer's
/// weight) at the play's point in its fade.
fn clip_share(play: &Playing, graph_weight: f32) -> f32 {
    let (share, weight) = shares(play, graph_weight);
    share * weight
}

/// The clip's share of the slot layer's pose and the layer's weight.
fn shares(play: &Playing, graph_weight: f32) -> (f32, f32) {
    let w = play.shot.weight;
    match play.fade {
        Fade::In { elapsed_s, from } => {
            let p = progress(elapsed_s, play.shot.blend_in_s);
            let from = from.unwrap_or(graph_weight);
            (p, from + (w - from) * p)
        }
        Fade::Play => (1.0, w),
        Fade::Out { elapsed_s, from, .. } => {
            let p = progress(elapsed_s, play.shot.blend_out_s);
            (1.0 - p, from + (graph_weight - from) * p)
        }
    }
}

/// Writes the slot layer's record for the play's phase.
fn write_record(
    play: &mut Playing,
    graph_weight: f32,
    switched: bool,
    record: &mut LayerRecord,
    shot: &mut ShotRecord,
) {
    if let Fade::In { from: from @ None, .. } = &mut play.fade {
        *from = Some(graph_weight);
    }
    let (share, weight) = shares(play, graph_weight);
    play.shown_weight = weight;
    // The graph's destination share, which the record's target weight no longer holds.
    *shot = ShotRecord { clip: play.shot.clip, time_s: play.time_s(), share: 0.0, graph_share: record.target_weight };
    let switched_flag = if switched { LayerProgram::SWITCHED as u8 } else { 0 };
    let frozen = |record: &mut LayerRecord, share: f32| {
        record.mode = SwitchMode::Frozen as u8;
        record.flags = (LayerProgram::TRANSITIONING | LayerProgram::SOURCE_SNAPSHOT) as u8 | switched_flag;
        record.target_weight = share;
        record.progress = share;
    };
    let graph_sets = LayerRecord::SECONDARY_SOURCE | LayerRecord::SECONDARY_BACK;
    match play.fade {
        Fade::In { .. } if share < 1.0 => {
            record.sets = LayerRecord::SHOT_ALONE;
            frozen(record, share);
        }
        Fade::In { .. } | Fade::Play => {
            record.sets = LayerRecord::SHOT_ALONE;
            plain(record, switched_flag);
        }
        Fade::Out { frozen: true, .. } => {
            // From the frozen displayed pose to the graph's destination alone.
            record.sets = (record.sets & !graph_sets) | LayerRecord::SHOT_HANDBACK;
            frozen(record, 1.0 - share);
        }
        Fade::Out { frozen: false, .. } => {
            // The graph's pose (a crossfade's two sides included, already weighted by their
            // shares) and the clip, blended by weight in the sample stage.
            record.sets = (record.sets & LayerRecord::SECONDARY_SOURCE) | LayerRecord::SHOT_OVER_GRAPH;
            shot.share = share;
            plain(record, 0);
        }
    }
    record.weight = weight;
}

/// A record's program showing its target samples alone, with `flags`.
fn plain(record: &mut LayerRecord, flags: u8) {
    record.transition = NO_TRANSITION;
    record.mode = SwitchMode::Cut as u8;
    record.flags = flags;
    record.target_weight = 1.0;
    record.progress = 1.0;
    record.decay_s = 0.0;
}

/// Reports the play's clip events in `interval`, each once with its count of loops, at most
/// [`MAX_EVENTS_PER_LAYER_UPDATE`] (the rest counted in `dropped`).
fn fire(
    arch: &Archetype,
    play: &Playing,
    interval: Interval,
    weight: f32,
    character: CharacterHandle,
    events: &mut Vec<AnimationEvent>,
    dropped: &mut u64,
) {
    if !(interval.end > interval.start || (interval.end == interval.start && interval.inclusive)) {
        return;
    }
    let mut reported = 0;
    for &(time_s, event) in arch.events_of_clip(play.shot.clip) {
        let Some((_, count)) = interval.crossings(f64::from(time_s)) else { continue };
        if reported == MAX_EVENTS_PER_LAYER_UPDATE {
            *dropped += 1;
            continue;
        }
        reported += 1;
        events.push(AnimationEvent {
            character,
            row: play.row,
            layer: u32::from(play.layer),
            state: AnimationEvent::ONE_SHOT,
            event,
            clip: play.shot.clip,
            time_s,
            weight,
            count,
        });
    }
}

/// Checks a one-shot against an archetype: its options, and a clip it may play; returns the
/// clip's duration.
pub(super) fn check(arch: &Archetype, shot: &OneShot) -> Result<f32, StateError> {
    if let Some(what) = shot.problem() {
        return Err(StateError::BadOneShot { what });
    }
    arch.one_shot_duration_s(shot.clip).ok_or(StateError::UnknownOneShotClip { clip: shot.clip })
}

impl Group {
    /// Steps every one-shot playing, after the graph's step wrote the slot layers' programs;
    /// their events follow the graph's, in row order. A start or a frozen blend-out is a switch,
    /// which animation LOD never defers.
    pub(super) fn step_one_shots(&mut self, dt_s: f32, slots: &[Slot], crowd: u32) {
        let layers = self.num_layers();
        let with_events = self.arch.has_events();
        let mut plays = std::mem::take(&mut self.one_shots);
        plays.retain_mut(|play| {
            let row = play.row as usize;
            let layer = usize::from(play.layer);
            let index = self.slots[row];
            let generation = slots.get(index as usize).map_or(0, |s| s.generation);
            let character = if with_events {
                CharacterHandle { index, generation, crowd }
            } else {
                CharacterHandle { index: u32::MAX, generation: 0, crowd }
            };
            let i = row * layers + layer;
            let (record, shot) = (&mut self.records[i], &mut self.shots[i]);
            let before = (*record, *shot);
            let playing = step_play(
                play,
                PlayStep {
                    arch: &self.arch,
                    dt_s: (dt_s * self.time_scale[row]).min(f32::MAX),
                    record,
                    shot,
                    character,
                    events: &mut self.events,
                    dropped: &mut self.events_dropped,
                },
            );
            if !before.0.same_bits(record) || bytemuck::bytes_of(&before.1) != bytemuck::bytes_of(shot) {
                self.record_stamps[i] = self.version;
            }
            if u32::from(record.flags) & LayerProgram::SWITCHED != 0 && !self.lod_due[row] {
                self.lod_due[row] = true;
                self.lod_skipped[row] = 0;
            }
            playing
        });
        self.one_shots = plays;
    }

    /// The layer of slot `name` in this archetype's graph.
    fn slot_layer(&self, name: &str) -> Result<u16, StateError> {
        let graph = self.arch.graph();
        match graph.layers().iter().position(|l| l.name == name && l.slot) {
            Some(l) => Ok(l as u16),
            None => Err(StateError::UnknownSlot { name: name.to_owned() }),
        }
    }

    /// The play showing on layer slot `i` (`row * layers + layer`) after the last update.
    pub(super) fn one_shot_at(&self, i: usize) -> Option<&Playing> {
        if self.one_shots.is_empty() {
            return None;
        }
        let layers = self.num_layers();
        let at = self.find_play(i / layers, (i % layers) as u16).ok()?;
        Some(&self.one_shots[at])
    }

    /// Where (row, layer)'s play is in the sorted list, or where it would go.
    fn find_play(&self, row: usize, layer: u16) -> Result<usize, usize> {
        self.one_shots.binary_search_by_key(&(row as u32, layer), |p| (p.row, p.layer))
    }
}

impl Crowd {
    /// Plays `shot` on slot `slot` (a layer declared `"slot": true`, by name) of each character,
    /// from the next update: it blends in over `blend_in_s` from what the layer showed, plays
    /// at its weight, and blends out over `blend_out_s` (near the end of a clip played once,
    /// or when stopped) until the graph's own pose for the layer shows again. Its clip's events
    /// fire as any clip's do ([`Crowd::events`], with [`AnimationEvent::ONE_SHOT`] for the
    /// state), after the graph's. A one-shot on a slot already playing one interrupts it
    /// without a pop: the new one blends in from the pose displayed. The graph's own state
    /// machine keeps running on the slot layer underneath. All or nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::graph::CompiledGraph;
    /// use throng::state::{Archetype, ClipBinding, Crowd, OneShot};
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(r#"{ "layers": [
    ///     { "name": "Base", "states": [{ "name": "START" }, { "name": "Idle", "defaultState": true }] },
    ///     { "name": "Gesture", "slot": true, "weight": 0,
    ///       "states": [{ "name": "START" }, { "name": "Rest", "defaultState": true }] }] }"#)?);
    /// let arch = Archetype::from_bindings(graph, &[
    ///     ("Idle", ClipBinding { clip: 0, duration_s: 2.0 }),
    ///     ("Rest", ClipBinding { clip: 0, duration_s: 2.0 }),
    /// ])?
    /// .with_clip_durations(&[2.0, 1.5])?; // clip 1, a cheer, plays only as a one-shot
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(arch);
    /// let fans = [crowd.spawn(kind)?, crowd.spawn(kind)?];
    /// crowd.play_one_shot(&fans, "Gesture", OneShot { blend_in_s: 0.25, ..OneShot::new(1) })?;
    /// crowd.update(0.125)?; // the start: the slot still shows what it showed
    /// crowd.update(0.125)?;
    /// let cheer = crowd.one_shot(fans[0], "Gesture")?.expect("playing");
    /// assert_eq!((cheer.clip, cheer.time_s, cheer.weight), (1, 0.125, 0.5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StateError::BadOneShot`] for a blend time or weight out of range;
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::UnknownSlot`]
    /// for a character whose graph has no such slot, [`StateError::UnknownOneShotClip`] for a
    /// clip its archetype has no duration for.
    pub fn play_one_shot(&mut self, handles: &[CharacterHandle], slot: &str, shot: OneShot) -> Result<(), StateError> {
        let mut targets = Vec::with_capacity(handles.len());
        for &h in handles {
            let (g, row) = self.locate(h)?;
            let group = &self.groups[g];
            let layer = group.slot_layer(slot)?;
            let duration_s = check(&group.arch, &shot)?;
            targets.push((g, row, layer, duration_s));
        }
        for (g, row, layer, duration_s) in targets {
            let group = &mut self.groups[g];
            match group.find_play(row, layer) {
                Ok(at) => {
                    let old = group.one_shots[at];
                    // A second command before the update replaces the first; one that has
                    // shown blends in from the weight it showed.
                    let from = match old.fade {
                        Fade::In { from, .. } if old.new => from,
                        _ => Some(old.shown_weight),
                    };
                    let mut play = Playing::new(row as u32, layer, shot, duration_s, from);
                    play.graph_blend = old.graph_blend;
                    group.one_shots[at] = play;
                }
                Err(at) => group.one_shots.insert(at, Playing::new(row as u32, layer, shot, duration_s, None)),
            }
        }
        Ok(())
    }

    /// Blends out the one-shot playing on slot `slot` of each character, over its
    /// `blend_out_s`, from the next update (a looping one's only end). Characters whose slot
    /// plays nothing are left as they are; one commanded since the last update never starts.
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::UnknownSlot`].
    pub fn stop_one_shot(&mut self, handles: &[CharacterHandle], slot: &str) -> Result<(), StateError> {
        let mut targets = Vec::with_capacity(handles.len());
        for &h in handles {
            let (g, row) = self.locate(h)?;
            targets.push((g, row, self.groups[g].slot_layer(slot)?));
        }
        for (g, row, layer) in targets {
            let group = &mut self.groups[g];
            if let Ok(at) = group.find_play(row, layer) {
                if group.one_shots[at].new {
                    group.one_shots.remove(at);
                } else {
                    group.one_shots[at].stop = true;
                }
            }
        }
        Ok(())
    }

    /// What slot `slot` of a character plays, as of the last update; `None` when nothing (or
    /// when the one-shot commanded has not started yet).
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`], [`StateError::UnknownSlot`].
    pub fn one_shot(&self, handle: CharacterHandle, slot: &str) -> Result<Option<OneShotReadback>, StateError> {
        let (g, row) = self.locate(handle)?;
        let group = &self.groups[g];
        let layer = group.slot_layer(slot)?;
        Ok(group.find_play(row, layer).ok().map(|at| &group.one_shots[at]).filter(|p| !p.new).map(Playing::readback))
    }
}
