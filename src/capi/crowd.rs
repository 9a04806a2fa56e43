//! The C ABI's crowds: FFI plumbing over [`CrowdRuntime`] (archetypes by index, parameters by
//! id, handles as integers), from adding an archetype to evaluating it.

use std::ffi::{CString, c_char};
use std::sync::Arc;

use crate::eval::root_motion::RootDelta;
use crate::graph::{CompiledGraph, Inertialization, PhaseSync, SwitchMode};
use crate::program::OutputLayout;
use crate::runtime::CrowdRuntime;
use crate::setup::BoundArchetype;
use crate::state::{ArchetypeId, CharacterHandle, OneShot, ParamId, StartPhases, TransitionCommand};

use super::character::{ThrongCharacter, bind_character};
use super::ffi::{CallError, Out, ThrongStatus, c_string, call, crowd_call, input, output, text};
#[cfg(doc)]
use super::*;

/// [`throng_crowd_evaluate`] layout: column-major 4×4 matrices, 16 floats per joint.
pub const THRONG_LAYOUT_MAT4: u32 = 0;
/// [`throng_crowd_evaluate`] layout: the top three rows of each matrix, row by row, 12 floats
/// per joint (see [`OutputLayout::Affine3x4`]).
pub const THRONG_LAYOUT_AFFINE_3X4: u32 = 1;

/// A character's root travel over the last evaluated frame (see [`RootDelta`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Zeroable)]
pub struct ThrongRootDelta {
    /// Horizontal displacement in the character's model space, metres, x y z; y is always 0.
    pub translation_m: [f32; 3],
    /// Rotation about +Y, radians.
    pub yaw_rad: f32,
}

/// Characters of any number of archetypes, stepped together and evaluated on the CPU. Opaque
/// to C; not safe to call from two threads at once.
#[derive(Debug, Default)]
pub struct ThrongCrowd {
    pub(super) runtime: CrowdRuntime,
    /// Per C archetype index (0, 1, 2… in order of addition), the runtime's id and names.
    pub(super) archetypes: Vec<ArchetypeNames>,
    /// Parameters resolved by [`throng_crowd_find_param`]; the C id is the index.
    params: Vec<ParamId>,
    /// Root motion from the runtime, before it becomes [`ThrongRootDelta`]s: reused scratch.
    root_motion: Vec<RootDelta>,
    /// Set when a panic unwound out of a call on this crowd.
    pub(super) poisoned: bool,
}

/// One archetype as C sees it: the runtime's id, and the names the `*_name` calls hand out as
/// C strings that live as long as the crowd.
#[derive(Debug)]
pub(super) struct ArchetypeNames {
    pub(super) id: ArchetypeId,
    pub(super) state_names: Vec<CString>,
    pub(super) event_names: Vec<CString>,
}

fn layout_of(layout: u32) -> Result<OutputLayout, CallError> {
    match layout {
        THRONG_LAYOUT_MAT4 => Ok(OutputLayout::Mat4),
        THRONG_LAYOUT_AFFINE_3X4 => Ok(OutputLayout::Affine3x4),
        other => Err(CallError::OutOfRange {
            arg: "layout",
            value: other.into(),
            expected: "use THRONG_LAYOUT_MAT4 or THRONG_LAYOUT_AFFINE_3X4".into(),
        }),
    }
}

impl ThrongCrowd {
    pub(super) fn entry(&self, archetype: u32) -> Result<&ArchetypeNames, CallError> {
        self.archetypes.get(archetype as usize).ok_or_else(|| CallError::OutOfRange {
            arg: "archetype",
            value: archetype.into(),
            expected: format!("this crowd has {} archetypes", self.archetypes.len()),
        })
    }

    fn param(&self, param: u32) -> Result<ParamId, CallError> {
        self.params.get(param as usize).copied().ok_or_else(|| CallError::OutOfRange {
            arg: "param",
            value: param.into(),
            expected: format!("ids come from throng_crowd_find_param; this crowd has {}", self.params.len()),
        })
    }

    /// The C archetype index of a Rust archetype id: the same position, since both lists grow
    /// together in [`throng_crowd_add_archetype`] and nothing is ever removed.
    pub(super) fn index_of(id: ArchetypeId) -> u32 {
        id.index() as u32
    }
}

/// Creates an empty crowd evaluated on the CPU.
///
/// # Safety
/// `out_crowd` is null or valid for a write of one pointer; on success it receives a crowd the
/// caller owns and frees with [`throng_crowd_destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_create(out_crowd: *mut *mut ThrongCrowd) -> ThrongStatus {
    call("throng_crowd_create", || {
        let out = Out::new(out_crowd, "out_crowd")?;
        let crowd = Box::into_raw(Box::new(ThrongCrowd::default()));
        // SAFETY: `out_crowd`'s promise.
        unsafe { out.write(crowd) };
        Ok(())
    })
}

/// Frees a crowd and everything in it (a poisoned one too). Null is ignored.
///
/// # Safety
/// `crowd` is null or a pointer from [`throng_crowd_create`] not yet destroyed and not in use
/// on another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_destroy(crowd: *mut ThrongCrowd) {
    call("throng_crowd_destroy", || {
        if !crowd.is_null() {
            // SAFETY: the caller's promise: a box from `Box::into_raw`, freed once.
            drop(unsafe { Box::from_raw(crowd) });
        }
        Ok(())
    });
}

/// Loads a state graph from `graph_json_len` bytes of UTF-8 JSON (either PlayCanvas form,
/// `docs/graph-format.md`; no NUL needed), binds its leaves to `character`'s clips and
/// registers the result; `out_archetype` receives its id (0, 1, 2… in order of addition). The
/// crowd copies what it needs: the character may be destroyed afterwards.
///
/// # Safety
/// `crowd` is null or a live crowd; `character` null or a live character; `graph_json` null or
/// `graph_json_len` readable bytes; `out_archetype` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_add_archetype(
    crowd: *mut ThrongCrowd,
    character: *const ThrongCharacter,
    graph_json: *const u8,
    graph_json_len: usize,
    out_archetype: *mut u32,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_archetype, "out_archetype")?;
        // SAFETY: the caller's promise; null is checked by `as_ref`.
        let character = unsafe { character.as_ref() }.ok_or(CallError::NullPointer("character"))?;
        if graph_json.is_null() {
            return Err(CallError::NullPointer("graph_json"));
        }
        // SAFETY: `graph_json`'s promise.
        let bytes = unsafe { input(graph_json, graph_json_len, "graph_json") }?;
        let json = std::str::from_utf8(bytes)
            .map_err(|e| CallError::NotUtf8 { arg: "graph_json", valid_up_to: e.valid_up_to() })?;
        let graph = Arc::new(CompiledGraph::from_json(json)?);
        let state_names = graph.states().iter().map(|s| c_string(&s.name)).collect();
        let BoundArchetype { archetype, clips, layers } = bind_character(character, graph)?;
        // The clips' events (glTF `extras`, throng_character_add_clip_event) fire for this
        // archetype; names are fixed from here on.
        let archetype = archetype.with_events_from_clips(&clips)?;
        let event_names = archetype.event_names().iter().map(|n| c_string(n)).collect();
        let index = crowd.archetypes.len() as u32;
        let id = crowd.runtime.add_archetype(archetype, character.rig().clone(), clips, layers)?;
        crowd.archetypes.push(ArchetypeNames { id, state_names, event_names });
        // SAFETY: `out_archetype`'s promise.
        unsafe { out.write(index) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_add_archetype", crowd, body) }
}

/// Adds `count` characters of `archetype`, each in its layers' default states with the graph's
/// default parameters, and writes their handles to `out_handles`. A handle stays valid until
/// its character is despawned, is never reused for another and is never 0; it carries its
/// crowd, and other crowds refuse it (`THRONG_STATUS_STALE_HANDLE`). All or nothing: a batch
/// past the crowd's 2²⁴ slots spawns none (`THRONG_STATUS_STATE`).
///
/// # Safety
/// `crowd` is null or a live crowd; `out_handles` null (only when `count` is 0) or writable
/// for `count` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_spawn(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    count: usize,
    out_handles: *mut u64,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        crowd.entry(archetype)?;
        // SAFETY: `out_handles`' promise.
        let out = unsafe { output(out_handles, count, "out_handles") }?;
        let id = crowd.entry(archetype)?.id;
        // All or nothing: a batch the crowd has no slots for spawns none.
        let handles = crowd.runtime.spawn_many(id, count)?;
        for (slot, handle) in out.iter_mut().zip(handles) {
            *slot = handle.to_bits();
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_spawn", crowd, body) }
}

/// Adds `count` characters of `archetype` as [`throng_crowd_spawn`] does, each layer's default
/// state started `phases[i]` (in [0, 1), a fraction of its duration) into its clock instead of
/// at 0, so that a crowd spawned at once does not move in lockstep. All or nothing: a phase
/// outside [0, 1) (`THRONG_STATUS_INVALID_ARGUMENT`, naming its index) spawns none.
///
/// # Safety
/// `crowd` is null or a live crowd; `phases` null (only when `count` is 0) or `count` readable
/// floats; `out_handles` null (only when `count` is 0) or writable for `count` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_spawn_phased(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    phases: *const f32,
    count: usize,
    out_handles: *mut u64,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (phases, out) = unsafe { (input(phases, count, "phases")?, output(out_handles, count, "out_handles")?) };
        let id = crowd.entry(archetype)?.id;
        let handles = crowd.runtime.spawn_phased(id, StartPhases::Explicit(phases))?;
        for (slot, handle) in out.iter_mut().zip(handles) {
            *slot = handle.to_bits();
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_spawn_phased", crowd, body) }
}

/// Adds `count` characters of `archetype` as [`throng_crowd_spawn`] does, their default states
/// started at phases spread uniformly over [0, 1) by `seed` (the same seed, the same phases).
///
/// # Safety
/// `crowd` is null or a live crowd; `out_handles` null (only when `count` is 0) or writable
/// for `count` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_spawn_spread(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    count: usize,
    seed: u64,
    out_handles: *mut u64,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `out_handles`' promise.
        let out = unsafe { output(out_handles, count, "out_handles") }?;
        let id = crowd.entry(archetype)?.id;
        let handles = crowd.runtime.spawn_phased(id, StartPhases::Spread { count, seed })?;
        for (slot, handle) in out.iter_mut().zip(handles) {
            *slot = handle.to_bits();
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_spawn_spread", crowd, body) }
}

/// Removes `count` characters; every other handle stays valid. All or nothing: a stale or
/// repeated handle removes none. The archetype's last characters move into the freed rows
/// ([`throng_crowd_row_of`] tells where a character now is); their evaluator memory moves with
/// them, so their transitions carry on.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` null (only when `count` is 0) or `count`
/// readable handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_despawn(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        // All or nothing: a stale or repeated handle removes none.
        Ok(crowd.runtime.despawn_many(&handles_of(handles))?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_despawn", crowd, body) }
}

/// Where a character's output lives: its archetype and its row, the index of its matrices in
/// [`throng_crowd_evaluate`]'s output (`row × joints × floats per joint`) and of its entry in
/// the root motion. Rows change when another character of the archetype is despawned.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_archetype` and `out_row` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_row_of(
    crowd: *mut ThrongCrowd,
    handle: u64,
    out_archetype: *mut u32,
    out_row: *mut usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out_archetype = Out::new(out_archetype, "out_archetype")?;
        let out_row = Out::new(out_row, "out_row")?;
        let (id, row) = crowd.runtime.crowd().row_of(CharacterHandle::from_bits(handle))?;
        // SAFETY: the output pointers' promise.
        unsafe {
            out_archetype.write(ThrongCrowd::index_of(id));
            out_row.write(row);
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_row_of", crowd, body) }
}

/// The character in `row` of `archetype`: the inverse of [`throng_crowd_row_of`], for a
/// renderer that walks the output by row. A row past the last is
/// [`ThrongStatus::InvalidArgument`].
///
/// # Safety
/// `crowd` is null or a live crowd; `out_handle` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_handle_at(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    row: usize,
    out_handle: *mut u64,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_handle, "out_handle")?;
        let id = crowd.entry(archetype)?.id;
        let handle = crowd.runtime.crowd().handle_at(id, row).ok_or_else(|| CallError::OutOfRange {
            arg: "row",
            value: row as u64,
            expected: format!("the archetype has {} characters", crowd.runtime.crowd().num_characters(id).unwrap_or(0)),
        })?;
        // SAFETY: `out_handle`'s promise.
        unsafe { out.write(handle.to_bits()) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_handle_at", crowd, body) }
}

/// Live characters of an archetype.
///
/// # Safety
/// `crowd` is null or a live crowd; `out_count` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_num_characters(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    out_count: *mut usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let id = crowd.entry(archetype)?.id;
        let count = crowd.runtime.crowd().num_characters(id)?;
        // SAFETY: `out_count`'s promise.
        unsafe { out.write(count) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_num_characters", crowd, body) }
}

/// Resolves a parameter of `archetype`'s graph by name, once, for the batch setters. Each
/// [`throng_crowd_add_archetype`] loads a graph of its own, so the id serves that archetype's
/// characters only (the setters refuse others with [`ThrongStatus::State`]). Asking twice gives
/// the same id.
///
/// # Safety
/// `crowd` is null or a live crowd; `name` null or a NUL-terminated UTF-8 string;
/// `out_param` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_find_param(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    name: *const c_char,
    out_param: *mut u32,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_param, "out_param")?;
        // SAFETY: `name`'s promise.
        let name = unsafe { text(name, "name") }?;
        let param = crowd.runtime.param(crowd.entry(archetype)?.id, name)?;
        let index = match crowd.params.iter().position(|&p| p == param) {
            Some(i) => i,
            None => {
                crowd.params.push(param);
                crowd.params.len() - 1
            }
        };
        // SAFETY: `out_param`'s promise.
        unsafe { out.write(index as u32) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_find_param", crowd, body) }
}

/// Turns C handles into Rust ones.
fn handles_of(bits: &[u64]) -> Vec<CharacterHandle> {
    bits.iter().map(|&b| CharacterHandle::from_bits(b)).collect()
}

/// Sets a FLOAT parameter: `values[i]` for `handles[i]`. All or nothing: a stale handle, a
/// character of another graph, a parameter of another type or a NaN/infinite value sets none.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` and `values` null (only when `count` is 0) or
/// `count` readable elements each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_float(
    crowd: *mut ThrongCrowd,
    param: u32,
    handles: *const u64,
    values: *const f32,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        Ok(crowd.runtime.set_float(param, &handles_of(handles), values)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_float", crowd, body) }
}

/// Sets an INTEGER parameter, as [`throng_crowd_set_float`].
///
/// # Safety
/// As [`throng_crowd_set_float`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_int(
    crowd: *mut ThrongCrowd,
    param: u32,
    handles: *const u64,
    values: *const i32,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        Ok(crowd.runtime.set_int(param, &handles_of(handles), values)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_int", crowd, body) }
}

/// Sets a BOOLEAN parameter, as [`throng_crowd_set_float`]; any non-zero byte is true.
///
/// # Safety
/// As [`throng_crowd_set_float`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_bool(
    crowd: *mut ThrongCrowd,
    param: u32,
    handles: *const u64,
    values: *const u8,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        let values: Vec<bool> = values.iter().map(|&v| v != 0).collect();
        Ok(crowd.runtime.set_bool(param, &handles_of(handles), &values)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_bool", crowd, body) }
}

/// Sets a TRIGGER for `count` characters. It stays set until a transition that names it is
/// taken; with `single_frame` it is also cleared at the end of the next update even if nothing
/// used it. All or nothing, as [`throng_crowd_set_float`].
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` null (only when `count` is 0) or `count`
/// readable handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_trigger(
    crowd: *mut ThrongCrowd,
    param: u32,
    handles: *const u64,
    count: usize,
    single_frame: bool,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        let param = crowd.param(param)?;
        Ok(crowd.runtime.set_trigger(param, &handles_of(handles), single_frame)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_trigger", crowd, body) }
}

/// Clears a TRIGGER for `count` characters, as [`throng_crowd_set_trigger`].
///
/// # Safety
/// As [`throng_crowd_set_trigger`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_reset_trigger(
    crowd: *mut ThrongCrowd,
    param: u32,
    handles: *const u64,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        let param = crowd.param(param)?;
        Ok(crowd.runtime.reset_trigger(param, &handles_of(handles))?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_reset_trigger", crowd, body) }
}

/// Sets animation LOD's update rates (`docs/lod.md`): `rates[i]` (1, 2, 4, 8 or 16) for
/// `handles[i]`. A character at rate `r` has its pose evaluated by [`throng_crowd_evaluate`]
/// every `r`-th update only (and on any update it switches state), staggered over the crowd;
/// its states, transitions, events and root motion stay exact every update. Once a rate above 1
/// is set the crowd keeps each archetype's matrices itself, so that the rows not evaluated show
/// their last pose again and a despawn moves them with the character; `throng_crowd_evaluate`
/// still writes every row of `out`. New characters are rate 1. All or nothing: a stale handle or
/// a rate outside those five (`THRONG_STATUS_INVALID_ARGUMENT`, naming the character and rate)
/// sets none.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` and `rates` null (only when `count` is 0) or
/// `count` readable elements each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_update_rate(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    rates: *const u8,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, rates) = unsafe { (input(handles, count, "handles")?, input(rates, count, "rates")?) };
        Ok(crowd.runtime.set_update_rate(&handles_of(handles), rates)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_update_rate", crowd, body) }
}

/// Moves layer `layer` of `count` characters to the state named `state` (NUL-terminated UTF-8,
/// its path inside sub-machines) at the next update, through a transition of `duration_s`
/// seconds (0: a cut) whose destination starts `offset` (in [0, 1]) into its clip, exactly as if
/// an authored transition had fired: it interrupts one in flight without a pop, and the graph
/// takes over from the new state. `switch_mode` is 0 for the graph's `defaultSwitch`, else 1
/// cut, 2 frozen, 3 crossfade, 4 inertialize (quintic), with the default switch's easing; the
/// transition is not interruptible, as PlayCanvas's `layer.transition`. `sync` lines the
/// destination up with the state left, as an authored transition's `"sync"`: 0 none (it starts
/// at `offset`), 1 at the source's normalised phase, 2 at the next matching sync marker
/// (`TransitionCommand::sync`). All or nothing: a stale
/// handle, a state the character's graph lacks in that layer (`THRONG_STATUS_UNKNOWN_NAME`), a
/// layer past the graph's or options out of range (`THRONG_STATUS_INVALID_ARGUMENT`) command
/// none.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` null (only when `count` is 0) or `count` readable
/// handles; `state` a NUL-terminated string.
// A C call takes its options flat, as the header declares them; a struct would need a second
// header type for four numbers.
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_transition_to(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    count: usize,
    layer: u32,
    state: *const c_char,
    duration_s: f32,
    offset: f32,
    switch_mode: u32,
    sync: u32,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' and string's promise.
        let (handles, state) = unsafe { (input(handles, count, "handles")?, text(state, "state")?) };
        let switch = match switch_mode {
            0 => None,
            1 => Some(SwitchMode::Cut),
            2 => Some(SwitchMode::Frozen),
            3 => Some(SwitchMode::Crossfade),
            4 => Some(SwitchMode::Inertialize(Inertialization::Quintic { overshoot_control: false })),
            _ => {
                let expected = "0 (the graph's default switch) to 4".to_owned();
                return Err(CallError::OutOfRange { arg: "switch_mode", value: u64::from(switch_mode), expected });
            }
        };
        let sync = match sync {
            0 => PhaseSync::Offset,
            1 => PhaseSync::Phase,
            2 => PhaseSync::Marker,
            _ => {
                let expected = "0 (none), 1 (phase) or 2 (marker)".to_owned();
                return Err(CallError::OutOfRange { arg: "sync", value: u64::from(sync), expected });
            }
        };
        let command = TransitionCommand { switch, offset, sync, ..TransitionCommand::blend(duration_s) };
        Ok(crowd.runtime.transition_to(&handles_of(handles), layer as usize, state, command)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_transition_to", crowd, body) }
}

/// Plays clip `clip` (an index of the character's clip table, [`throng_character_clip_name`])
/// on the slot layer named `slot` (NUL-terminated UTF-8; a layer declared `"slot": true`) of
/// `count` characters from the next update: it blends in over `blend_in_s` seconds from what the
/// layer showed, plays at `weight` (in [0, 1]), looping until stopped when `looping` is non-zero
/// or else once, and blends out over `blend_out_s` to the graph's own pose; its events fire as
/// any clip's, with state `THRONG_ONE_SHOT_STATE`. A one-shot on a busy slot interrupts the old
/// one without a pop. All or nothing: a stale handle, a slot the character's graph lacks
/// (`THRONG_STATUS_UNKNOWN_NAME`), a clip past the table or options out of range
/// (`THRONG_STATUS_INVALID_ARGUMENT`) play none.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` null (only when `count` is 0) or `count` readable
/// handles; `slot` a NUL-terminated string.
// Flat options, as for `throng_crowd_transition_to`.
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_play_one_shot(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    count: usize,
    slot: *const c_char,
    clip: u32,
    blend_in_s: f32,
    blend_out_s: f32,
    weight: f32,
    looping: u32,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' and string's promise.
        let (handles, slot) = unsafe { (input(handles, count, "handles")?, text(slot, "slot")?) };
        let shot = OneShot { clip, blend_in_s, blend_out_s, weight, looping: looping != 0 };
        Ok(crowd.runtime.play_one_shot(&handles_of(handles), slot, shot)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_play_one_shot", crowd, body) }
}

/// Blends out the one-shot the slot named `slot` of `count` characters plays, over its
/// `blend_out_s`, from the next update; characters whose slot plays nothing are left as they
/// are. All or nothing: a stale handle or a slot the graph lacks stops none.
///
/// # Safety
/// As [`throng_crowd_play_one_shot`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_stop_one_shot(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    count: usize,
    slot: *const c_char,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' and string's promise.
        let (handles, slot) = unsafe { (input(handles, count, "handles")?, text(slot, "slot")?) };
        Ok(crowd.runtime.stop_one_shot(&handles_of(handles), slot)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_stop_one_shot", crowd, body) }
}

/// Sets time scales: `scales[i]` multiplies `dt` for `handles[i]` from the next update on (its
/// clocks, transitions and events, and the seconds [`throng_crowd_evaluate`] gives it): 1 is
/// real time, 0.5 half speed, 0 pauses the character, whose pose then holds. New characters
/// are 1. All or nothing: a stale handle, or a negative, NaN or infinite scale
/// (`THRONG_STATUS_INVALID_ARGUMENT`, naming its index), sets none.
///
/// # Safety
/// `crowd` is null or a live crowd; `handles` and `scales` null (only when `count` is 0) or
/// `count` readable elements each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_time_scale(
    crowd: *mut ThrongCrowd,
    handles: *const u64,
    scales: *const f32,
    count: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, scales) = unsafe { (input(handles, count, "handles")?, input(scales, count, "scales")?) };
        Ok(crowd.runtime.set_time_scale(&handles_of(handles), scales)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_time_scale", crowd, body) }
}

/// Steps every character of every archetype by `dt_s` seconds (finite, ≥ 0; 0 pauses), on
/// rayon's threads. The next [`throng_crowd_evaluate`] uses the same `dt_s`.
///
/// # Safety
/// `crowd` is null or a live crowd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_update(crowd: *mut ThrongCrowd, dt_s: f32) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| Ok(crowd.runtime.update(dt_s)?);
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_update", crowd, body) }
}

/// Steps only `archetype`'s characters by `dt_s` seconds: [`throng_crowd_update`] for one
/// archetype, for engines that step distant crowds less often (every other frame, with twice
/// the `dt_s`). The archetype's next [`throng_crowd_evaluate`] uses this `dt_s`; other
/// archetypes keep what their last update left.
///
/// # Safety
/// `crowd` is null or a live crowd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_update_archetype(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    dt_s: f32,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        Ok(crowd.runtime.update_archetype(id, dt_s)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_update_archetype", crowd, body) }
}

/// Floats [`throng_crowd_evaluate`] writes for `archetype` in `layout` with its current
/// characters: characters × joints × 16 (mat4) or 12 (affine 3×4).
///
/// # Safety
/// `crowd` is null or a live crowd; `out_count` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_floats_needed(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    layout: u32,
    out_count: *mut usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let layout = layout_of(layout)?;
        let floats = crowd.runtime.floats_needed(crowd.entry(archetype)?.id, layout)?;
        // SAFETY: `out_count`'s promise.
        unsafe { out.write(floats) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_floats_needed", crowd, body) }
}

/// Evaluates `archetype`'s characters on the CPU after the last update: every layer, every
/// transition, skinning matrices written to `out` (character at row `r`, joint `j` at float
/// `(r × joints + j) × floats per joint`; rows from [`throng_crowd_row_of`]). `out_len` must be
/// at least [`throng_crowd_floats_needed`]; only that many floats are written. When
/// `root_motion` is not null it receives each character's root travel this frame, by row
/// (`root_motion_len` ≥ characters), and the travel is removed from the pose either way (the
/// demo graph's base layer has root motion on). Call once per archetype per update: the
/// evaluator remembers what it showed, for transitions. Characters given a rate above 1
/// ([`throng_crowd_set_update_rate`]) are evaluated only on the updates they are due; every row
/// of `out` is written all the same, the others with the matrices they last showed.
///
/// # Safety
/// `crowd` is null or a live crowd; `out` null (only when `out_len` is 0) or `out_len`
/// writable floats; `root_motion` null or `root_motion_len` writable entries. Neither buffer
/// may overlap the other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_evaluate(
    crowd: *mut ThrongCrowd,
    archetype: u32,
    layout: u32,
    out: *mut f32,
    out_len: usize,
    root_motion: *mut ThrongRootDelta,
    root_motion_len: usize,
) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let layout = layout_of(layout)?;
        let id = crowd.entry(archetype)?.id;
        let needed = crowd.runtime.floats_needed(id, layout)?;
        let characters = crowd.runtime.crowd().num_characters(id)?;
        if out_len < needed {
            return Err(CallError::BufferTooSmall { arg: "out", needed, got: out_len });
        }
        let wants_root = !root_motion.is_null();
        if wants_root && root_motion_len < characters {
            return Err(CallError::BufferTooSmall { arg: "root_motion", needed: characters, got: root_motion_len });
        }
        // SAFETY: `out`'s promise; only the first `needed` floats are touched.
        let matrices = unsafe { output(out, needed, "out") }?;
        // SAFETY: `root_motion`'s promise.
        let root_out = unsafe { output(root_motion, if wants_root { characters } else { 0 }, "root_motion") }?;
        crowd.root_motion.resize(root_out.len(), RootDelta::default());
        crowd.runtime.evaluate(id, layout, matrices, &mut crowd.root_motion)?;
        for (to, from) in root_out.iter_mut().zip(&crowd.root_motion) {
            *to = ThrongRootDelta { translation_m: from.translation.to_array(), yaw_rad: from.yaw };
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_evaluate", crowd, body) }
}
