//! What a C crowd reports after an update: what each layer of a character is doing, the
//! animation events fired, and the names of states and events as C strings.

use std::ffi::c_char;

use crate::state::{CharacterHandle, LayerReadback};

use super::crowd::ThrongCrowd;
use super::ffi::{CallError, Out, ThrongStatus, crowd_call, name_at, output};
#[cfg(doc)]
use super::*;

/// What [`ThrongLayerReadback::previous_state`] holds when there is no previous state.
pub const THRONG_NO_STATE: i32 = -1;

/// What [`ThrongEvent::state`] holds for an event a one-shot fired
/// ([`crate::state::AnimationEvent::ONE_SHOT`]).
// Written out whole: tests/capi.rs reads the constants the header must declare as plain integers.
#[allow(clippy::unreadable_literal)]
pub const THRONG_ONE_SHOT_STATE: u32 = 4294967295;

/// What one layer of a character is doing after the last update (see
/// [`crate::state::LayerReadback`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Zeroable)]
pub struct ThrongLayerReadback {
    /// The active state, an index into the graph's states ([`throng_crowd_state_name`]).
    pub active_state: u32,
    /// The state the last transition left, or [`THRONG_NO_STATE`].
    pub previous_state: i32,
    /// Whether a transition is in flight.
    pub transitioning: bool,
    /// The transition's linear progress in [0, 1]; 1 when none is in flight.
    pub transition_progress: f32,
    /// The active state's share of the layer's pose, in [0, 1].
    pub active_weight: f32,
    /// Fraction of the active state's duration played in this loop, in [0, 1].
    pub phase: f32,
    /// Whole loops the active state has completed since it was entered.
    pub loops: u32,
}

/// One animation event fired in the last update (see [`crate::state::AnimationEvent`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Zeroable)]
pub struct ThrongEvent {
    /// The character's handle.
    pub character: u64,
    /// The character's row in its archetype at the update.
    pub row: u32,
    /// The layer whose state played the clip.
    pub layer: u32,
    /// The state that played it, an index into the graph's states ([`throng_crowd_state_name`]),
    /// or [`THRONG_ONE_SHOT_STATE`] for a one-shot's clip.
    pub state: u32,
    /// The event's name, an index for [`throng_crowd_event_name`].
    pub event: u32,
    /// The clip, an index into the archetype's clip table.
    pub clip: u32,
    /// The event's time in the clip, seconds.
    pub time_s: f32,
    /// The clip's weight in the character's pose at the update, in (0, 1].
    pub weight: f32,
    /// Times the update crossed the event, ≥ 1 (more when one step spanned several loops).
    pub count: u32,
}

fn readback_of(r: &LayerReadback) -> ThrongLayerReadback {
    ThrongLayerReadback {
        active_state: r.active_state as u32,
        previous_state: r.previous_state.map_or(THRONG_NO_STATE, |s| s as i32),
        transitioning: r.transitioning,
        transition_progress: r.transition_progress,
        active_weight: r.active_weight,
        phase: r.phase,
        loops: r.loops,
    }
}

/// What layer `layer` (0 = base) of a character is doing after the last update.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_readback` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_readback(
    crowd: *mut ThrongCrowd,
    handle: u64,
    layer: u32,
    out_readback: *mut ThrongLayerReadback,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_readback, "out_readback")?;
        let readback =
            readback_of(&crowd.runtime.crowd().readback(CharacterHandle::from_bits(handle), layer as usize)?);
        // SAFETY: `out_readback`'s promise.
        unsafe { out.write(readback) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_readback", crowd, body) }
}

/// What layer `layer` of every character of `archetype` is doing, by row: the batch form of
/// [`throng_crowd_readback`]. `out_len` must be at least the archetype's character count;
/// that many entries are written.
///
/// # Safety
/// `crowd` is null or a live crowd; `out` null (only when `out_len` is 0) or `out_len`
/// writable entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_readback_rows(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    layer: u32,
    out: *mut ThrongLayerReadback,
    out_len: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        let characters = crowd.runtime.crowd().num_characters(id)?;
        if out_len < characters {
            return Err(CallError::BufferTooSmall { arg: "out", needed: characters, got: out_len });
        }
        let mut rows = Vec::with_capacity(characters);
        crowd.runtime.crowd().readback_rows(id, layer as usize, &mut rows)?;
        // SAFETY: `out`'s promise; only the first `characters` entries are touched.
        let out = unsafe { output(out, characters, "out") }?;
        for (to, from) in out.iter_mut().zip(&rows) {
            *to = readback_of(from);
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_readback_rows", crowd, body) }
}

/// How many animation events `archetype`'s characters fired in the last update.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_count` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_event_count(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    out_count: *mut usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let id = crowd.entry(archetype)?.id;
        let count = crowd.runtime.crowd().events(id)?.len();
        // SAFETY: `out_count`'s promise.
        unsafe { out.write(count) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_event_count", crowd, body) }
}

/// The animation events `archetype`'s characters fired in the last update, in row order (then
/// layer, then time), into `out`, which holds at least [`throng_crowd_event_count`] of them.
/// Each fires once when its clip crosses its time, every loop, while the clip's weight is above
/// the archetype's threshold, and from a transition's source until the transition ends.
///
/// # Safety
/// `crowd` is null or a live crowd; `out` null (only with no events) or writable for `out_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_events(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    out: *mut ThrongEvent,
    out_len: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        let events = crowd.runtime.crowd().events(id)?;
        if out_len < events.len() {
            return Err(CallError::BufferTooSmall { arg: "out", needed: events.len(), got: out_len });
        }
        // SAFETY: `out`'s promise; only the first `events.len()` entries are touched.
        let out = unsafe { output(out, events.len(), "out") }?;
        for (to, e) in out.iter_mut().zip(events) {
            *to = ThrongEvent {
                character: e.character.to_bits(),
                row: e.row,
                layer: e.layer,
                state: e.state,
                event: e.event.index() as u32,
                clip: e.clip,
                time_s: e.time_s,
                weight: e.weight,
                count: e.count,
            };
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_events", crowd, body) }
}

/// The name of event `event` ([`ThrongEvent::event`]) of `archetype`. The text belongs to the
/// crowd and lives until it is destroyed.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_name` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_event_name(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    event: u32,
    out_name: *mut *const c_char,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_name, "out_name")?;
        let name = name_at(&crowd.entry(archetype)?.event_names, event, "event", "the archetype has {} event names")?;
        // SAFETY: `out_name`'s promise.
        unsafe { out.write(name.as_ptr()) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_event_name", crowd, body) }
}

/// The name of state `state` of `archetype`'s graph (a path inside sub-machines,
/// `"Combat.Attack"`). The text belongs to the crowd and lives until it is destroyed.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_name` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_state_name(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    state: u32,
    out_name: *mut *const c_char,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_name, "out_name")?;
        let name = name_at(&crowd.entry(archetype)?.state_names, state, "state", "the graph has {} states")?;
        // SAFETY: `out_name`'s promise.
        unsafe { out.write(name.as_ptr()) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_state_name", crowd, body) }
}

/// The name of the state layer `layer` of a character is in after the last update: the
/// one-call form of [`throng_crowd_readback`] + [`throng_crowd_state_name`]. The text belongs
/// to the crowd and lives until it is destroyed.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_name` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_active_state_name(
    crowd: *mut ThrongCrowd,
    handle: u64,
    layer: u32,
    out_name: *mut *const c_char,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_name, "out_name")?;
        let handle = CharacterHandle::from_bits(handle);
        let state = crowd.runtime.crowd().readback(handle, layer as usize)?.active_state;
        let (id, _) = crowd.runtime.crowd().row_of(handle)?;
        let entry = crowd.entry(ThrongCrowd::index_of(id))?;
        let name =
            entry.state_names.get(state).ok_or_else(|| CallError::Panic(format!("state {state} has no name")))?;
        // SAFETY: `out_name`'s promise.
        unsafe { out.write(name.as_ptr()) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_active_state_name", crowd, body) }
}
