//! The C ABI (feature `capi`): the embedding API as `extern "C"` functions over opaque handles,
//! for engines written in C, C++ or anything with a C FFI. Header: `include/throng.h`, kept in
//! sync with this file by `tests/capi.rs`; guide: `docs/capi.md`.
//!
//! ```text
//! ThrongCharacter (rig + clips) ──┐
//! graph JSON ─────────────────────┴─► throng_crowd_add_archetype ─► archetype id
//! throng_crowd_spawn ─► u64 handles ─► throng_crowd_set_float… ─► throng_crowd_update(dt)
//!   ─► throng_crowd_evaluate (CPU, FrameJob) ─► caller's float buffer + root motion
//! ```
//!
//! Every function returns a [`ThrongStatus`]; on failure [`throng_last_error_message`] says
//! which function, which argument and what was wrong, for the calling thread. Every body runs
//! inside `catch_unwind`, so no panic crosses into C: a panic becomes
//! [`ThrongStatus::Panic`], and the crowd it happened in refuses every later call but
//! `throng_crowd_destroy`, since its columns may be half-written. Pointers are checked for null
//! and alignment, lengths against what the call needs; what cannot be checked (a pointer to
//! freed memory, a buffer shorter than the length given) is the caller's promise, stated in
//! each function's `# Safety`.
//!
//! A crowd evaluates on the CPU ([`FrameJob`]); it keeps the evaluator's per-character memory
//! in step with spawns and despawns itself (`EvalContext::resize` / `swap_remove`), which the
//! Rust API leaves to its caller.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::clip::{Clip, ClipError, ClipEvent};
use crate::demo::{DemoCharacter, IDLE};
use crate::eval::frame::{EvalContext, FrameJob};
use crate::eval::root_motion::RootDelta;
use crate::eval::EvalError;
use crate::graph::{CompiledGraph, GraphError};
use crate::import::gltf::{GltfError, GltfOptions, load_gltf};
use crate::program::{swap_remove_row, LayerSetup, OutputLayout};
use crate::rig::Rig;
use crate::setup::{BindError, BoundArchetype, bind_archetype};
use crate::state::{ArchetypeId, CharacterHandle, Crowd, LayerReadback, ParamId, StateError, MAX_CHARACTER_SLOTS};

/// What a call did. Zero is success; every other value comes with a message from
/// [`throng_last_error_message`]. Keep in sync with `include/throng.h` (`tests/capi.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrongStatus {
    /// The call succeeded.
    Ok = 0,
    /// A required pointer argument was null.
    NullPointer = 1,
    /// An argument is out of its range: an unknown archetype or parameter id, a layout or joint
    /// count the library does not have, a misaligned pointer, text that is not UTF-8, unknown
    /// flag bits, a handle listed twice, a row past the last, an update rate other than 1, 2,
    /// 4, 8 or 16, a clip event's bad time or empty name.
    InvalidArgument = 2,
    /// An output buffer is shorter than the call needs; the message says how many it needs.
    BufferTooSmall = 3,
    /// The state graph JSON was refused (syntax, shape or rules; the message says where).
    Graph = 4,
    /// A glTF file could not be imported.
    Import = 5,
    /// The graph could not be bound to the character: a leaf with no clip of its name, a layer
    /// mask naming a joint the rig lacks.
    Bind = 6,
    /// A parameter name the archetype's graph does not have, or a clip name the archetype
    /// does not have.
    UnknownName = 7,
    /// A character handle that was despawned, never existed, or belongs to another crowd.
    StaleHandle = 8,
    /// The state step refused the call: a parameter of another type than the setter's, a NaN or
    /// infinite value or `dt`, a layer past the graph's.
    State = 9,
    /// The evaluator refused the frame.
    Eval = 10,
    /// The library panicked (a bug in throng); the crowd involved is unusable but destroyable.
    Panic = 11,
}

/// [`throng_crowd_evaluate`] layout: column-major 4×4 matrices, 16 floats per joint.
pub const THRONG_LAYOUT_MAT4: u32 = 0;
/// [`throng_crowd_evaluate`] layout: the top three rows of each matrix, row by row, 12 floats
/// per joint (see [`OutputLayout::Affine3x4`]).
pub const THRONG_LAYOUT_AFFINE_3X4: u32 = 1;
/// [`throng_character_from_gltf`] flag: import every animation that moves the skin as one clip
/// ([`GltfOptions::merge_animations`]).
pub const THRONG_GLTF_MERGE_ANIMATIONS: u32 = 1;
/// What [`ThrongLayerReadback::previous_state`] holds when there is no previous state.
pub const THRONG_NO_STATE: i32 = -1;

/// A character's root travel over the last evaluated frame (see [`RootDelta`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Zeroable)]
pub struct ThrongRootDelta {
    /// Horizontal displacement in the character's model space, metres, x y z; y is always 0.
    pub translation_m: [f32; 3],
    /// Rotation about +Y, radians.
    pub yaw_rad: f32,
}

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
    /// The state that played it, an index into the graph's states ([`throng_crowd_state_name`]).
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

/// A rig and its clips, from the built-in humanoid or a glTF file; graphs are bound to it by
/// [`throng_crowd_add_archetype`]. Opaque to C.
#[derive(Debug)]
pub struct ThrongCharacter {
    source: CharacterSource,
    clip_names: Vec<CString>,
}

#[derive(Debug)]
enum CharacterSource {
    /// Bound with [`DemoCharacter::bind`], as the Rust examples do.
    Demo(DemoCharacter),
    /// Bound by clip name, additive clips as deltas over the rest pose.
    Imported { rig: Rig, clips: Vec<Clip> },
}

impl ThrongCharacter {
    fn new(source: CharacterSource) -> Self {
        let clips = match &source {
            CharacterSource::Demo(demo) => &demo.clips,
            CharacterSource::Imported { clips, .. } => clips,
        };
        let clip_names = clips.iter().map(|c| c_string(c.name())).collect();
        Self { source, clip_names }
    }

    fn rig(&self) -> &Rig {
        match &self.source {
            CharacterSource::Demo(demo) => &demo.rig,
            CharacterSource::Imported { rig, .. } => rig,
        }
    }

    fn clips_mut(&mut self) -> &mut Vec<Clip> {
        match &mut self.source {
            CharacterSource::Demo(demo) => &mut demo.clips,
            CharacterSource::Imported { clips, .. } => clips,
        }
    }
}

/// Characters of any number of archetypes, stepped together and evaluated on the CPU. Opaque
/// to C; not safe to call from two threads at once.
#[derive(Debug, Default)]
pub struct ThrongCrowd {
    crowd: Crowd,
    archetypes: Vec<ArchetypeEntry>,
    /// Parameters resolved by [`throng_crowd_find_param`]; the C id is the index.
    params: Vec<ParamId>,
    /// Set when a panic unwound out of a call on this crowd.
    poisoned: bool,
    /// Set once [`throng_crowd_set_update_rate`] gave a character a rate above 1: from then on
    /// each archetype keeps its matrices ([`ArchetypeEntry::held`]) for the rows not due.
    lod: bool,
}

/// What the evaluator needs for one archetype, and the memory it carries between frames.
#[derive(Debug)]
struct ArchetypeEntry {
    id: ArchetypeId,
    rig: Rig,
    clips: Vec<Clip>,
    layers: Vec<LayerSetup>,
    state_names: Vec<CString>,
    event_names: Vec<CString>,
    context: EvalContext,
    /// `dt` of the archetype's last update, which the evaluator needs for velocities and decays.
    last_dt_s: f32,
    clips_sampled: Vec<u32>,
    root_motion: Vec<RootDelta>,
    /// With animation LOD, every row's last matrices in `held_layout`: the rows not due this
    /// update show them again, and a despawn moves them as it moves the evaluator's memory, so
    /// the caller's buffer is written whole every call and needs no care between calls.
    held: Vec<f32>,
    held_layout: Option<OutputLayout>,
}

impl ArchetypeEntry {
    /// Grows or shrinks the evaluator's memory and, with animation LOD, the held matrices to
    /// `rows` characters (a spawn's new rows have shown nothing), so that a despawn before the
    /// next evaluation moves the row the crowd moves.
    fn resize(&mut self, rows: usize) {
        self.context.resize(rows);
        if let Some(layout) = self.held_layout {
            self.held.resize(rows * self.rig.num_joints() * layout.floats_per_joint(), 0.0);
        }
    }

    /// Moves the last row's held matrices into `row` (a despawn's swap-remove).
    fn swap_remove_held(&mut self, row: usize) {
        let Some(layout) = self.held_layout else { return };
        swap_remove_row(&mut self.held, row, self.rig.num_joints() * layout.floats_per_joint());
    }
}

/// Why a call failed; becomes a [`ThrongStatus`] and the thread's last error message.
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// A required pointer is null.
    #[error("argument `{0}` is null")]
    NullPointer(&'static str),
    /// An array pointer is null with a non-zero count.
    #[error("argument `{arg}` is null but its count is {count}")]
    NullArray { arg: &'static str, count: usize },
    /// A pointer is not aligned for its element type.
    #[error("argument `{arg}` is not aligned to {align} bytes")]
    Misaligned { arg: &'static str, align: usize },
    /// A count whose bytes exceed `isize::MAX`.
    #[error("argument `{arg}`: {count} elements do not fit in memory")]
    TooLong { arg: &'static str, count: usize },
    /// Text that is not UTF-8; `valid_up_to` is the first bad byte.
    #[error("argument `{arg}` is not UTF-8 (byte {valid_up_to})")]
    NotUtf8 { arg: &'static str, valid_up_to: usize },
    /// An integer argument outside what the call accepts (`expected` says what).
    #[error("argument `{arg}` = {value}: {expected}")]
    OutOfRange { arg: &'static str, value: u64, expected: String },
    /// A handle listed twice where each must be distinct.
    #[error("handle {handle:#x} is listed twice")]
    DuplicateHandle { handle: u64 },
    /// An output shorter than the call writes.
    #[error("argument `{arg}` holds {got} elements; {needed} needed")]
    BufferTooSmall { arg: &'static str, needed: usize, got: usize },
    /// The graph JSON was refused.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The glTF file was refused.
    #[error(transparent)]
    Import(#[from] GltfError),
    /// The graph could not be bound to the character's clips.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// An event on a clip the character does not have; `clips` lists the names it has.
    #[error("the character has no clip named {name:?} (ignoring case); its clips: {clips}")]
    UnknownClip { name: String, clips: String },
    /// An event the clip refused (its time outside the clip, an empty name).
    #[error(transparent)]
    Clip(#[from] ClipError),
    /// A leaf names no clip of the character; `clips` lists the names it has.
    #[error("leaf {path:?} has no clip of that name (its last segment, ignoring case); the character's clips: {clips}")]
    UnboundLeaf { path: String, clips: String },
    /// The state step refused the call.
    #[error(transparent)]
    State(#[from] StateError),
    /// The evaluator refused the frame.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The crowd panicked in an earlier call.
    #[error("an earlier call panicked inside this crowd; only throng_crowd_destroy is allowed")]
    Poisoned,
    /// A panic caught at the boundary, with its message.
    #[error("internal panic: {0}")]
    Panic(String),
}

impl CallError {
    fn status(&self) -> ThrongStatus {
        match self {
            Self::NullPointer(_) | Self::NullArray { .. } => ThrongStatus::NullPointer,
            Self::Misaligned { .. }
            | Self::TooLong { .. }
            | Self::NotUtf8 { .. }
            | Self::OutOfRange { .. }
            | Self::DuplicateHandle { .. }
            | Self::Clip(_) => ThrongStatus::InvalidArgument,
            Self::UnknownClip { .. } => ThrongStatus::UnknownName,
            Self::BufferTooSmall { .. } => ThrongStatus::BufferTooSmall,
            Self::Graph(_) => ThrongStatus::Graph,
            Self::Import(_) => ThrongStatus::Import,
            Self::Bind(_) | Self::UnboundLeaf { .. } => ThrongStatus::Bind,
            Self::State(StateError::StaleHandle { .. } | StateError::ForeignHandle { .. }) => ThrongStatus::StaleHandle,
            Self::State(StateError::UnknownParameter(_)) => ThrongStatus::UnknownName,
            Self::State(StateError::BadUpdateRate { .. }) => ThrongStatus::InvalidArgument,
            Self::State(_) => ThrongStatus::State,
            Self::Eval(_) => ThrongStatus::Eval,
            Self::Poisoned | Self::Panic(_) => ThrongStatus::Panic,
        }
    }
}

thread_local! {
    /// The last call's message on this thread, NUL-terminated for C; empty after a success.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A C string of `text`; interior NULs (a JSON name can hold one) become U+FFFD so that C
/// sees the whole text.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with a non-text payload".to_owned(),
    }
}

/// Runs one C entry point: catches panics, records the message, maps the error to a status.
fn call(function: &'static str, body: impl FnOnce() -> Result<(), CallError>) -> ThrongStatus {
    let result = panic::catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(CallError::Panic(panic_message(payload.as_ref()))));
    let (status, message) = match result {
        Ok(()) => (ThrongStatus::Ok, CString::default()),
        Err(e) => (e.status(), c_string(&format!("{function}: {e}"))),
    };
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    status
}

/// [`call`] for a function on a crowd: refuses a poisoned crowd, and poisons it when the body
/// panics, because a panic may have left its columns half-written.
///
/// # Safety
/// `crowd` is null or a live pointer from [`throng_crowd_create`] no other thread is using.
unsafe fn crowd_call(
    function: &'static str,
    crowd: *mut ThrongCrowd,
    body: impl FnOnce(&mut ThrongCrowd) -> Result<(), CallError>,
) -> ThrongStatus {
    call(function, || {
        // SAFETY: the caller's promise; null is checked by `as_mut`.
        let crowd = unsafe { crowd.as_mut() }.ok_or(CallError::NullPointer("crowd"))?;
        if crowd.poisoned {
            return Err(CallError::Poisoned);
        }
        panic::catch_unwind(AssertUnwindSafe(|| body(&mut *crowd))).unwrap_or_else(|payload| {
            crowd.poisoned = true;
            Err(CallError::Panic(panic_message(payload.as_ref())))
        })
    })
}

fn check_pointer<T>(ptr: *const T, arg: &'static str) -> Result<NonNull<T>, CallError> {
    let ptr = NonNull::new(ptr.cast_mut()).ok_or(CallError::NullPointer(arg))?;
    if !ptr.as_ptr().is_aligned() {
        return Err(CallError::Misaligned { arg, align: align_of::<T>() });
    }
    Ok(ptr)
}

/// An output argument, checked before the call does anything so that a bad one cannot leave
/// work done and unreported.
struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    fn new(ptr: *mut T, arg: &'static str) -> Result<Self, CallError> {
        check_pointer(ptr, arg).map(Self)
    }

    /// # Safety
    /// The pointer given to [`Out::new`] is valid for a write of `T`.
    unsafe fn write(self, value: T) {
        // SAFETY: non-null and aligned (checked in `new`); valid by the caller's promise.
        unsafe { self.0.as_ptr().write(value) };
    }
}

/// `count` elements at `ptr`; null is allowed for zero elements.
///
/// # Safety
/// When `count > 0`, `ptr` points to `count` initialised `T`s that live through the call.
unsafe fn input<'a, T>(ptr: *const T, count: usize, arg: &'static str) -> Result<&'a [T], CallError> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(CallError::NullArray { arg, count });
    }
    let ptr = check_pointer(ptr, arg)?;
    if count.checked_mul(size_of::<T>()).is_none_or(|bytes| bytes > isize::MAX as usize) {
        return Err(CallError::TooLong { arg, count });
    }
    // SAFETY: non-null, aligned, size in range; contents by the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), count) })
}

/// `count` elements at `ptr` to overwrite, zeroed first so that the slice never shows the
/// caller's uninitialised memory; null is allowed for zero elements.
///
/// # Safety
/// When `count > 0`, `ptr` points to `count` writable `T`s (for which all-zero bytes are a
/// valid value) that nothing else reads or writes during the call.
unsafe fn output<'a, T: bytemuck::Zeroable>(ptr: *mut T, count: usize, arg: &'static str) -> Result<&'a mut [T], CallError> {
    if count == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(CallError::NullArray { arg, count });
    }
    let ptr = check_pointer(ptr, arg)?;
    if count.checked_mul(size_of::<T>()).is_none_or(|bytes| bytes > isize::MAX as usize) {
        return Err(CallError::TooLong { arg, count });
    }
    // SAFETY: non-null, aligned, size in range; writable by the caller's promise, and zero is a
    // valid `T` (`Zeroable`), so the slice is initialised once `write_bytes` has run.
    unsafe {
        ptr.as_ptr().write_bytes(0, count);
        Ok(std::slice::from_raw_parts_mut(ptr.as_ptr(), count))
    }
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string that lives through the call.
unsafe fn text<'a>(ptr: *const c_char, arg: &'static str) -> Result<&'a str, CallError> {
    if ptr.is_null() {
        return Err(CallError::NullPointer(arg));
    }
    // SAFETY: non-null; NUL-terminated by the caller's promise.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| CallError::NotUtf8 { arg, valid_up_to: e.valid_up_to() })
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
    fn entry(&self, archetype: u32) -> Result<&ArchetypeEntry, CallError> {
        self.archetypes.get(archetype as usize).ok_or_else(|| self.unknown_archetype(archetype))
    }

    fn entry_mut(&mut self, archetype: u32) -> Result<&mut ArchetypeEntry, CallError> {
        let error = self.unknown_archetype(archetype);
        self.archetypes.get_mut(archetype as usize).ok_or(error)
    }

    fn unknown_archetype(&self, archetype: u32) -> CallError {
        CallError::OutOfRange {
            arg: "archetype",
            value: archetype.into(),
            expected: format!("this crowd has {} archetypes", self.archetypes.len()),
        }
    }

    fn param(&self, param: u32) -> Result<ParamId, CallError> {
        self.params.get(param as usize).copied().ok_or_else(|| CallError::OutOfRange {
            arg: "param",
            value: param.into(),
            expected: format!("ids come from throng_crowd_find_param; this crowd has {}", self.params.len()),
        })
    }

    /// The C archetype index of a Rust archetype id (archetypes are never removed, so the list
    /// is short and fixed).
    fn index_of(&self, id: ArchetypeId) -> u32 {
        self.archetypes.iter().position(|e| e.id == id).unwrap_or(usize::MAX) as u32
    }
}

/// Binds `graph` to a character: each leaf plays the clip named by its last path segment,
/// ignoring case, as [`DemoCharacter::bind`] does for the built-in one. Additive layers play
/// deltas over `idle`'s first frame for the humanoid, over the rest pose for an imported rig.
/// A leaf that names no clip is reported with the names the character has.
fn bind_character(character: &ThrongCharacter, graph: Arc<CompiledGraph>) -> Result<BoundArchetype, CallError> {
    let (rig, clips, reference) = match &character.source {
        CharacterSource::Demo(demo) => (&demo.rig, &demo.clips, demo.clip(IDLE).map(|idle| idle.frame(0))),
        CharacterSource::Imported { rig, clips } => (rig, clips, None),
    };
    let bound = bind_archetype(graph, rig, clips, reference.as_deref(), |path| {
        let name = path.rsplit('.').next().unwrap_or(path);
        clips.iter().position(|c| c.name().eq_ignore_ascii_case(name))
    });
    bound.map_err(|e| match e {
        BindError::State(StateError::UnboundLeaf { path }) => {
            let names: Vec<&str> = clips.iter().map(Clip::name).collect();
            CallError::UnboundLeaf { path, clips: names.join(", ") }
        }
        other => other.into(),
    })
}

/// Entry `index` of `names`, for the `*_name` calls; past the end, an error naming `arg` and,
/// through `expected` (`{}` becomes the count), how many there are.
fn name_at<'a>(names: &'a [CString], index: u32, arg: &'static str, expected: &str) -> Result<&'a CString, CallError> {
    names.get(index as usize).ok_or_else(|| CallError::OutOfRange { arg, value: index.into(), expected: expected.replace("{}", &names.len().to_string()) })
}

/// The message of the last throng call made on this thread: empty after a call that succeeded,
/// `"function: what went wrong"` after one that failed. Never null. The text belongs to the
/// library and stays valid until the next throng call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn throng_last_error_message() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// A static name for a status value (`"THRONG_STATUS_GRAPH"`); `"THRONG_STATUS_UNKNOWN"` for a
/// value that is not a status. Never null; the text lives as long as the program.
#[unsafe(no_mangle)]
pub extern "C" fn throng_status_name(status: i32) -> *const c_char {
    let name: &'static CStr = match status {
        0 => c"THRONG_STATUS_OK",
        1 => c"THRONG_STATUS_NULL_POINTER",
        2 => c"THRONG_STATUS_INVALID_ARGUMENT",
        3 => c"THRONG_STATUS_BUFFER_TOO_SMALL",
        4 => c"THRONG_STATUS_GRAPH",
        5 => c"THRONG_STATUS_IMPORT",
        6 => c"THRONG_STATUS_BIND",
        7 => c"THRONG_STATUS_UNKNOWN_NAME",
        8 => c"THRONG_STATUS_STALE_HANDLE",
        9 => c"THRONG_STATUS_STATE",
        10 => c"THRONG_STATUS_EVAL",
        11 => c"THRONG_STATUS_PANIC",
        _ => c"THRONG_STATUS_UNKNOWN",
    };
    name.as_ptr()
}

/// Creates the built-in humanoid (`num_joints` 26, or 64 with fingers) with its clips `idle`,
/// `walk`, `run`, `jump`, `wave` and `lean`. Graphs bind to it as `DemoCharacter::bind` does.
///
/// # Safety
/// `out_character` is null or valid for a write of one pointer; on success it receives a
/// character the caller owns and frees with [`throng_character_destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_humanoid(num_joints: u32, out_character: *mut *mut ThrongCharacter) -> ThrongStatus {
    call("throng_character_humanoid", || {
        let out = Out::new(out_character, "out_character")?;
        let demo = match num_joints {
            26 => DemoCharacter::humanoid(),
            64 => DemoCharacter::humanoid_64(),
            other => {
                return Err(CallError::OutOfRange { arg: "num_joints", value: other.into(), expected: "the humanoid has 26 or 64 joints".into() });
            }
        };
        let character = Box::into_raw(Box::new(ThrongCharacter::new(CharacterSource::Demo(demo))));
        // SAFETY: `out_character`'s promise.
        unsafe { out.write(character) };
        Ok(())
    })
}

/// Imports skin 0 of a glTF 2.0 file (`.gltf` with its buffers, or `.glb`) and the animations
/// that move it, resampled at 30 Hz, as looping clips. `flags` is 0 or
/// [`THRONG_GLTF_MERGE_ANIMATIONS`]. A graph leaf plays the clip named by its last path
/// segment, ignoring case; additive layers play deltas over the rest pose. Buffer URIs must
/// resolve inside the file's folder, to regular files ("Reading files" in `docs/errors.md`).
///
/// # Safety
/// `path` is null or a NUL-terminated UTF-8 path; `out_character` as for
/// [`throng_character_humanoid`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_from_gltf(path: *const c_char, flags: u32, out_character: *mut *mut ThrongCharacter) -> ThrongStatus {
    call("throng_character_from_gltf", || {
        let out = Out::new(out_character, "out_character")?;
        // SAFETY: `path`'s promise.
        let path = unsafe { text(path, "path") }?;
        if flags & !THRONG_GLTF_MERGE_ANIMATIONS != 0 {
            return Err(CallError::OutOfRange { arg: "flags", value: flags.into(), expected: "use 0 or THRONG_GLTF_MERGE_ANIMATIONS".into() });
        }
        let options = GltfOptions { merge_animations: flags & THRONG_GLTF_MERGE_ANIMATIONS != 0, ..GltfOptions::default() };
        let asset = load_gltf(Path::new(path), &options)?;
        let source = CharacterSource::Imported { rig: asset.rig, clips: asset.clips };
        let character = Box::into_raw(Box::new(ThrongCharacter::new(source)));
        // SAFETY: `out_character`'s promise.
        unsafe { out.write(character) };
        Ok(())
    })
}

/// Frees a character. Archetypes made from it keep their own copies, so crowds are unaffected.
/// Null is ignored.
///
/// # Safety
/// `character` is null or a pointer from a `throng_character_*` constructor not yet destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_destroy(character: *mut ThrongCharacter) {
    call("throng_character_destroy", || {
        if !character.is_null() {
            // SAFETY: the caller's promise: a box from `Box::into_raw`, freed once.
            drop(unsafe { Box::from_raw(character) });
        }
        Ok(())
    });
}

/// Adds an animation event named `event_name` at `time_s` seconds into the clip named
/// `clip_name` (ignoring case) of the character. Archetypes added afterwards fire it
/// ([`throng_crowd_events`]); those added before keep the events they were made with.
///
/// # Safety
/// `character` is null or a live character; `clip_name` and `event_name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_add_clip_event(
    character: *mut ThrongCharacter,
    clip_name: *const c_char,
    event_name: *const c_char,
    time_s: f32,
) -> ThrongStatus {
    call("throng_character_add_clip_event", || {
        // SAFETY: the caller's promise; null is checked by `as_mut`.
        let character = unsafe { character.as_mut() }.ok_or(CallError::NullPointer("character"))?;
        // SAFETY: the strings' promise.
        let (clip_name, event_name) = unsafe { (text(clip_name, "clip_name")?, text(event_name, "event_name")?) };
        let clips = character.clips_mut();
        let Some(index) = clips.iter().position(|c| c.name().eq_ignore_ascii_case(clip_name)) else {
            let names: Vec<&str> = clips.iter().map(Clip::name).collect();
            return Err(CallError::UnknownClip { name: clip_name.to_owned(), clips: names.join(", ") });
        };
        let clip = &mut clips[index];
        let mut events = clip.events().to_vec();
        events.push(ClipEvent::new(event_name, time_s));
        *clip = clip.clone().with_events(events)?;
        Ok(())
    })
}

/// The character's joint count.
///
/// # Safety
/// `character` is null or a live character; `out_num_joints` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_num_joints(character: *const ThrongCharacter, out_num_joints: *mut u32) -> ThrongStatus {
    call("throng_character_num_joints", || {
        let out = Out::new(out_num_joints, "out_num_joints")?;
        // SAFETY: the caller's promise; null is checked by `as_ref`.
        let character = unsafe { character.as_ref() }.ok_or(CallError::NullPointer("character"))?;
        // SAFETY: `out_num_joints`'s promise.
        unsafe { out.write(character.rig().num_joints() as u32) };
        Ok(())
    })
}

/// The character's clip count.
///
/// # Safety
/// As [`throng_character_num_joints`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_num_clips(character: *const ThrongCharacter, out_num_clips: *mut u32) -> ThrongStatus {
    call("throng_character_num_clips", || {
        let out = Out::new(out_num_clips, "out_num_clips")?;
        // SAFETY: the caller's promise; null is checked by `as_ref`.
        let character = unsafe { character.as_ref() }.ok_or(CallError::NullPointer("character"))?;
        // SAFETY: `out_num_clips`'s promise.
        unsafe { out.write(character.clip_names.len() as u32) };
        Ok(())
    })
}

/// The name of clip `clip` (what graph leaves are matched against). The text belongs to the
/// character and lives until it is destroyed.
///
/// # Safety
/// `character` is null or a live character; `out_name` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_clip_name(character: *const ThrongCharacter, clip: u32, out_name: *mut *const c_char) -> ThrongStatus {
    call("throng_character_clip_name", || {
        let out = Out::new(out_name, "out_name")?;
        // SAFETY: the caller's promise; null is checked by `as_ref`.
        let character = unsafe { character.as_ref() }.ok_or(CallError::NullPointer("character"))?;
        let name = name_at(&character.clip_names, clip, "clip", "the character has {} clips")?;
        // SAFETY: `out_name`'s promise.
        unsafe { out.write(name.as_ptr()) };
        Ok(())
    })
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
        let json = std::str::from_utf8(bytes).map_err(|e| CallError::NotUtf8 { arg: "graph_json", valid_up_to: e.valid_up_to() })?;
        let graph = Arc::new(CompiledGraph::from_json(json)?);
        let state_names = graph.states().iter().map(|s| c_string(&s.name)).collect();
        let BoundArchetype { archetype, clips, layers } = bind_character(character, graph)?;
        // The clips' events (glTF `extras`, throng_character_add_clip_event) fire for this
        // archetype; names are fixed from here on.
        let archetype = archetype.with_events_from_clips(&clips)?;
        let event_names = archetype.event_names().iter().map(|n| c_string(n)).collect();
        let rig = character.rig().clone();
        // Memory only for the layers whose graph can show two states at once.
        let context = EvalContext::for_layers(0, &layers, rig.num_joints());
        let index = crowd.archetypes.len() as u32;
        let id = crowd.crowd.add_archetype(archetype);
        crowd.archetypes.push(ArchetypeEntry {
            id,
            rig,
            clips,
            layers,
            state_names,
            event_names,
            context,
            last_dt_s: 0.0,
            clips_sampled: Vec::new(),
            root_motion: Vec::new(),
            held: Vec::new(),
            held_layout: None,
        });
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
pub unsafe extern "C" fn throng_crowd_spawn(crowd: *mut ThrongCrowd, archetype: u32, count: usize, out_handles: *mut u64) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        crowd.entry(archetype)?;
        // SAFETY: `out_handles`' promise.
        let out = unsafe { output(out_handles, count, "out_handles") }?;
        let ThrongCrowd { crowd, archetypes, .. } = crowd;
        let entry = &mut archetypes[archetype as usize];
        // All or nothing: a batch the crowd has no slots for spawns none.
        if count > crowd.spawnable() {
            return Err(CallError::State(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS }));
        }
        for slot in out.iter_mut() {
            *slot = crowd.spawn(entry.id)?.to_bits();
        }
        entry.resize(crowd.num_characters(entry.id)?);
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_spawn", crowd, body) }
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
pub unsafe extern "C" fn throng_crowd_despawn(crowd: *mut ThrongCrowd, handles: *const u64, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        let mut sorted = handles.to_vec();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(CallError::DuplicateHandle { handle: pair[0] });
        }
        for &bits in handles {
            crowd.crowd.row_of(CharacterHandle::from_bits(bits))?;
        }
        for &bits in handles {
            let handle = CharacterHandle::from_bits(bits);
            let (id, row) = crowd.crowd.row_of(handle)?;
            let index = crowd.index_of(id);
            let entry = crowd.entry_mut(index)?;
            entry.context.swap_remove(row);
            entry.swap_remove_held(row);
            crowd.crowd.despawn(handle)?;
        }
        Ok(())
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
pub unsafe extern "C" fn throng_crowd_row_of(crowd: *mut ThrongCrowd, handle: u64, out_archetype: *mut u32, out_row: *mut usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out_archetype = Out::new(out_archetype, "out_archetype")?;
        let out_row = Out::new(out_row, "out_row")?;
        let (id, row) = crowd.crowd.row_of(CharacterHandle::from_bits(handle))?;
        // SAFETY: the output pointers' promise.
        unsafe {
            out_archetype.write(crowd.index_of(id));
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
pub unsafe extern "C" fn throng_crowd_handle_at(crowd: *mut ThrongCrowd, archetype: u32, row: usize, out_handle: *mut u64) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_handle, "out_handle")?;
        let id = crowd.entry(archetype)?.id;
        let handle = crowd.crowd.handle_at(id, row).ok_or_else(|| CallError::OutOfRange {
            arg: "row",
            value: row as u64,
            expected: format!("the archetype has {} characters", crowd.crowd.num_characters(id).unwrap_or(0)),
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
pub unsafe extern "C" fn throng_crowd_num_characters(crowd: *mut ThrongCrowd, archetype: u32, out_count: *mut usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let id = crowd.entry(archetype)?.id;
        let count = crowd.crowd.num_characters(id)?;
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
pub unsafe extern "C" fn throng_crowd_find_param(crowd: *mut ThrongCrowd, archetype: u32, name: *const c_char, out_param: *mut u32) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_param, "out_param")?;
        // SAFETY: `name`'s promise.
        let name = unsafe { text(name, "name") }?;
        let param = crowd.crowd.param(crowd.entry(archetype)?.id, name)?;
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
pub unsafe extern "C" fn throng_crowd_set_float(crowd: *mut ThrongCrowd, param: u32, handles: *const u64, values: *const f32, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        Ok(crowd.crowd.set_float(param, &handles_of(handles), values)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_float", crowd, body) }
}

/// Sets an INTEGER parameter, as [`throng_crowd_set_float`].
///
/// # Safety
/// As [`throng_crowd_set_float`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_int(crowd: *mut ThrongCrowd, param: u32, handles: *const u64, values: *const i32, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        Ok(crowd.crowd.set_int(param, &handles_of(handles), values)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_int", crowd, body) }
}

/// Sets a BOOLEAN parameter, as [`throng_crowd_set_float`]; any non-zero byte is true.
///
/// # Safety
/// As [`throng_crowd_set_float`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_set_bool(crowd: *mut ThrongCrowd, param: u32, handles: *const u64, values: *const u8, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, values) = unsafe { (input(handles, count, "handles")?, input(values, count, "values")?) };
        let param = crowd.param(param)?;
        let values: Vec<bool> = values.iter().map(|&v| v != 0).collect();
        Ok(crowd.crowd.set_bool(param, &handles_of(handles), &values)?)
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
pub unsafe extern "C" fn throng_crowd_set_trigger(crowd: *mut ThrongCrowd, param: u32, handles: *const u64, count: usize, single_frame: bool) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        let param = crowd.param(param)?;
        Ok(crowd.crowd.set_trigger(param, &handles_of(handles), single_frame)?)
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_trigger", crowd, body) }
}

/// Clears a TRIGGER for `count` characters, as [`throng_crowd_set_trigger`].
///
/// # Safety
/// As [`throng_crowd_set_trigger`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_reset_trigger(crowd: *mut ThrongCrowd, param: u32, handles: *const u64, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: `handles`' promise.
        let handles = unsafe { input(handles, count, "handles") }?;
        let param = crowd.param(param)?;
        Ok(crowd.crowd.reset_trigger(param, &handles_of(handles))?)
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
pub unsafe extern "C" fn throng_crowd_set_update_rate(crowd: *mut ThrongCrowd, handles: *const u64, rates: *const u8, count: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        // SAFETY: the arrays' promise.
        let (handles, rates) = unsafe { (input(handles, count, "handles")?, input(rates, count, "rates")?) };
        crowd.crowd.set_update_rate(&handles_of(handles), rates)?;
        crowd.lod |= rates.iter().any(|&r| r != 1);
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_set_update_rate", crowd, body) }
}

/// Steps every character of every archetype by `dt_s` seconds (finite, ≥ 0; 0 pauses), on
/// rayon's threads. The next [`throng_crowd_evaluate`] uses the same `dt_s`.
///
/// # Safety
/// `crowd` is null or a live crowd.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_crowd_update(crowd: *mut ThrongCrowd, dt_s: f32) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        crowd.crowd.update(dt_s)?;
        for entry in &mut crowd.archetypes {
            entry.last_dt_s = dt_s;
        }
        Ok(())
    };
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
pub unsafe extern "C" fn throng_crowd_update_archetype(crowd: *mut ThrongCrowd, archetype: u32, dt_s: f32) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        crowd.crowd.update_archetype(id, dt_s)?;
        crowd.entry_mut(archetype)?.last_dt_s = dt_s;
        Ok(())
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
pub unsafe extern "C" fn throng_crowd_floats_needed(crowd: *mut ThrongCrowd, archetype: u32, layout: u32, out_count: *mut usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let layout = layout_of(layout)?;
        let entry = crowd.entry(archetype)?;
        let floats = crowd.crowd.num_characters(entry.id)? * entry.rig.num_joints() * layout.floats_per_joint();
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
        let ThrongCrowd { crowd, archetypes, lod, .. } = crowd;
        let num_archetypes = archetypes.len();
        let entry = archetypes.get_mut(archetype as usize).ok_or_else(|| CallError::OutOfRange {
            arg: "archetype",
            value: archetype.into(),
            expected: format!("this crowd has {num_archetypes} archetypes"),
        })?;
        let characters = crowd.num_characters(entry.id)?;
        let needed = characters * entry.rig.num_joints() * layout.floats_per_joint();
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
        entry.clips_sampled.resize(characters, 0);
        entry.root_motion.resize(if wants_root { characters } else { 0 }, RootDelta::default());
        // With LOD the rows not due show their held matrices; a new layout holds none yet, so
        // every row is evaluated once in it.
        let holds = *lod && entry.held_layout == Some(layout);
        if *lod {
            entry.held.resize(needed, 0.0);
            entry.held_layout = Some(layout);
        }
        let job = FrameJob {
            rig: &entry.rig,
            clips: &entry.clips,
            layers: &entry.layers,
            samples: crowd.samples(entry.id)?,
            programs: crowd.programs(entry.id)?,
            dt_s: entry.last_dt_s,
            context: &mut entry.context,
            layout,
            output: if *lod { &mut entry.held } else { &mut *matrices },
            clips_sampled: &mut entry.clips_sampled,
            root_motion: &mut entry.root_motion,
        };
        if holds {
            job.run_due(crowd.due(entry.id)?)?;
        } else {
            job.run()?;
        }
        if *lod {
            matrices.copy_from_slice(&entry.held);
        }
        for (to, from) in root_out.iter_mut().zip(&entry.root_motion) {
            *to = ThrongRootDelta { translation_m: from.translation.to_array(), yaw_rad: from.yaw };
        }
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_evaluate", crowd, body) }
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
pub unsafe extern "C" fn throng_crowd_readback(crowd: *mut ThrongCrowd, handle: u64, layer: u32, out_readback: *mut ThrongLayerReadback) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_readback, "out_readback")?;
        let readback = readback_of(&crowd.crowd.readback(CharacterHandle::from_bits(handle), layer as usize)?);
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
pub unsafe extern "C" fn throng_crowd_readback_rows(crowd: *mut ThrongCrowd, archetype: u32, layer: u32, out: *mut ThrongLayerReadback, out_len: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        let characters = crowd.crowd.num_characters(id)?;
        if out_len < characters {
            return Err(CallError::BufferTooSmall { arg: "out", needed: characters, got: out_len });
        }
        let mut rows = Vec::with_capacity(characters);
        crowd.crowd.readback_rows(id, layer as usize, &mut rows)?;
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
pub unsafe extern "C" fn throng_crowd_event_count(crowd: *mut ThrongCrowd, archetype: u32, out_count: *mut usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_count, "out_count")?;
        let id = crowd.entry(archetype)?.id;
        let count = crowd.crowd.events(id)?.len();
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
pub unsafe extern "C" fn throng_crowd_events(crowd: *mut ThrongCrowd, archetype: u32, out: *mut ThrongEvent, out_len: usize) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let id = crowd.entry(archetype)?.id;
        let events = crowd.crowd.events(id)?;
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
pub unsafe extern "C" fn throng_crowd_event_name(crowd: *mut ThrongCrowd, archetype: u32, event: u32, out_name: *mut *const c_char) -> ThrongStatus {
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
pub unsafe extern "C" fn throng_crowd_state_name(crowd: *mut ThrongCrowd, archetype: u32, state: u32, out_name: *mut *const c_char) -> ThrongStatus {
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
pub unsafe extern "C" fn throng_crowd_active_state_name(crowd: *mut ThrongCrowd, handle: u64, layer: u32, out_name: *mut *const c_char) -> ThrongStatus {
    let body = |crowd: &mut ThrongCrowd| {
        let out = Out::new(out_name, "out_name")?;
        let handle = CharacterHandle::from_bits(handle);
        let state = crowd.crowd.readback(handle, layer as usize)?.active_state;
        let (id, _) = crowd.crowd.row_of(handle)?;
        let entry = crowd.entry(crowd.index_of(id))?;
        let name = entry.state_names.get(state).ok_or_else(|| CallError::Panic(format!("state {state} has no name")))?;
        // SAFETY: `out_name`'s promise.
        unsafe { out.write(name.as_ptr()) };
        Ok(())
    };
    // SAFETY: `crowd`'s promise.
    unsafe { crowd_call("throng_crowd_active_state_name", crowd, body) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        // SAFETY: never null, NUL-terminated, valid until the next call on this thread.
        unsafe { CStr::from_ptr(throng_last_error_message()) }.to_string_lossy().into_owned()
    }

    fn new_crowd() -> *mut ThrongCrowd {
        let mut crowd = std::ptr::null_mut();
        // SAFETY: `crowd` is a writable pointer.
        assert_eq!(unsafe { throng_crowd_create(&mut crowd) }, ThrongStatus::Ok);
        crowd
    }

    #[test]
    fn a_panic_is_a_status_and_poisons_its_crowd() {
        let crowd = new_crowd();
        // SAFETY: a live crowd.
        let status = unsafe { crowd_call("test_call", crowd, |_| panic!("boom")) };
        assert_eq!(status, ThrongStatus::Panic);
        assert_eq!(last_error(), "test_call: internal panic: boom");
        // SAFETY: a live (poisoned) crowd.
        assert_eq!(unsafe { throng_crowd_update(crowd, 0.1) }, ThrongStatus::Panic);
        assert!(last_error().contains("an earlier call panicked"), "{}", last_error());
        // Another crowd is unaffected.
        let other = new_crowd();
        // SAFETY: live crowds, each destroyed once.
        unsafe {
            assert_eq!(throng_crowd_update(other, 0.1), ThrongStatus::Ok);
            assert_eq!(last_error(), "");
            throng_crowd_destroy(crowd);
            throng_crowd_destroy(other);
        }
    }

    #[test]
    fn misaligned_arrays_and_text_that_is_not_utf8_are_refused() {
        let crowd = new_crowd();
        let mut character = std::ptr::null_mut();
        let mut archetype = 0;
        let mut param = 0;
        let words = [0u64; 3];
        // SAFETY: live objects and valid pointers; the misaligned one is refused before use.
        unsafe {
            assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
            let json = crate::demo::LOCOMOTION_GRAPH;
            assert_eq!(throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype), ThrongStatus::Ok);
            let misaligned = words.as_ptr().cast::<u8>().add(1).cast::<u64>();
            assert_eq!(throng_crowd_despawn(crowd, misaligned, 1), ThrongStatus::InvalidArgument);
            assert!(last_error().contains("`handles` is not aligned to 8 bytes"), "{}", last_error());
            let latin1 = c"vitesse\xe9";
            assert_eq!(throng_crowd_find_param(crowd, archetype, latin1.as_ptr(), &mut param), ThrongStatus::InvalidArgument);
            assert!(last_error().contains("`name` is not UTF-8 (byte 7)"), "{}", last_error());
            let graph = b"{\"layers\": [\xff]}";
            assert_eq!(throng_crowd_add_archetype(crowd, character, graph.as_ptr(), graph.len(), &mut archetype), ThrongStatus::InvalidArgument);
            assert_eq!(archetype, 0, "a refused archetype writes no id");
            throng_character_destroy(character);
            throng_crowd_destroy(crowd);
        }
    }

    /// At rate 4 a character's rows of `out` change on one update in four (after the first,
    /// where everyone is new), at rate 1 on every update; a rate of 3 is refused by name.
    #[test]
    fn update_rates_write_a_character_on_its_due_updates_only() {
        const CHARACTERS: usize = 8;
        const JOINTS: usize = 26;
        let crowd = new_crowd();
        let mut character = std::ptr::null_mut();
        let mut archetype = 0;
        let mut handles = [0u64; CHARACTERS];
        let mut param = 0;
        let floats = CHARACTERS * JOINTS * 16;
        let (mut out, mut before) = (vec![0.0f32; floats], vec![0.0f32; floats]);
        let mut changed = [0usize; CHARACTERS];
        // SAFETY: live objects, and arrays of the lengths passed.
        unsafe {
            assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
            let json = crate::demo::LOCOMOTION_GRAPH;
            assert_eq!(throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype), ThrongStatus::Ok);
            assert_eq!(throng_crowd_spawn(crowd, archetype, CHARACTERS, handles.as_mut_ptr()), ThrongStatus::Ok);
            assert_eq!(throng_crowd_find_param(crowd, archetype, c"speed".as_ptr(), &mut param), ThrongStatus::Ok);
            let speeds = [1.5f32; CHARACTERS];
            assert_eq!(throng_crowd_set_float(crowd, param, handles.as_ptr(), speeds.as_ptr(), CHARACTERS), ThrongStatus::Ok);
            // The first half every update, the second every fourth.
            let rates = [1, 1, 1, 1, 4, 4, 4, 4];
            assert_eq!(throng_crowd_set_update_rate(crowd, handles.as_ptr(), rates.as_ptr(), CHARACTERS), ThrongStatus::Ok);
            for update in 0..9 {
                assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
                let status = throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, out.as_mut_ptr(), floats, std::ptr::null_mut(), 0);
                assert_eq!(status, ThrongStatus::Ok, "{}", last_error());
                if update > 0 {
                    for (c, (now, was)) in out.chunks_exact(JOINTS * 16).zip(before.chunks_exact(JOINTS * 16)).enumerate() {
                        changed[c] += usize::from(now != was);
                    }
                }
                before.copy_from_slice(&out);
            }
            assert_eq!(changed, [8, 8, 8, 8, 2, 2, 2, 2], "updates (of 8) on which each character's matrices changed");
            // Despawning the last character and then the fifth moves the seventh into row 4.
            // It is not due on the next update (the stagger gave it updates 2 and 6 of 0..8), so
            // row 4 shows exactly what the seventh showed: its held matrices moved with it.
            let gone = [handles[7], handles[4]];
            assert_eq!(throng_crowd_despawn(crowd, gone.as_ptr(), 2), ThrongStatus::Ok);
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            let per_row = JOINTS * 16;
            let status = throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, out.as_mut_ptr(), 6 * per_row, std::ptr::null_mut(), 0);
            assert_eq!(status, ThrongStatus::Ok, "{}", last_error());
            assert_eq!(out[4 * per_row..5 * per_row], before[6 * per_row..7 * per_row], "row 4 holds the moved character's matrices");
            assert_ne!(out[..per_row], before[..per_row], "rate-1 characters moved on");
            let bad = [3u8];
            assert_eq!(throng_crowd_set_update_rate(crowd, handles.as_ptr(), bad.as_ptr(), 1), ThrongStatus::InvalidArgument);
            assert!(last_error().contains("update rate 3"), "{}", last_error());
            throng_character_destroy(character);
            throng_crowd_destroy(crowd);
        }
    }

    /// One character arrives and another leaves between two evaluations of a rate-16 crowd:
    /// the despawn moves the newcomer (the crowd's last row) into the freed row, so the held
    /// matrices must have grown at the spawn for the old last character, not due on the next
    /// update, to keep showing what it showed (not a row of zeros: a mesh collapsed at the
    /// origin).
    #[test]
    fn held_matrices_survive_a_spawn_then_a_despawn_between_evaluations() {
        const CHARACTERS: usize = 8;
        const PER_ROW: usize = 26 * 16;
        let crowd = new_crowd();
        let mut character = std::ptr::null_mut();
        let mut archetype = 0;
        let mut handles = [0u64; CHARACTERS];
        let mut out = vec![0.0f32; CHARACTERS * PER_ROW];
        // SAFETY: live objects, and arrays of the lengths passed.
        unsafe {
            assert_eq!(throng_character_humanoid(26, &mut character), ThrongStatus::Ok);
            let json = crate::demo::LOCOMOTION_GRAPH;
            assert_eq!(throng_crowd_add_archetype(crowd, character, json.as_ptr(), json.len(), &mut archetype), ThrongStatus::Ok);
            assert_eq!(throng_crowd_spawn(crowd, archetype, CHARACTERS, handles.as_mut_ptr()), ThrongStatus::Ok);
            let rates = [16u8; CHARACTERS];
            assert_eq!(throng_crowd_set_update_rate(crowd, handles.as_ptr(), rates.as_ptr(), CHARACTERS), ThrongStatus::Ok);
            for _ in 0..2 {
                assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
                let status = throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, out.as_mut_ptr(), out.len(), std::ptr::null_mut(), 0);
                assert_eq!(status, ThrongStatus::Ok, "{}", last_error());
            }
            let last_before = out[(CHARACTERS - 1) * PER_ROW..].to_vec();
            let mut newcomer = 0u64;
            assert_eq!(throng_crowd_spawn(crowd, archetype, 1, &mut newcomer), ThrongStatus::Ok);
            assert_eq!(throng_crowd_despawn(crowd, handles.as_ptr(), 1), ThrongStatus::Ok);
            let (mut arch, mut row) = (0u32, 0usize);
            assert_eq!(throng_crowd_row_of(crowd, handles[CHARACTERS - 1], &mut arch, &mut row), ThrongStatus::Ok);
            assert_eq!(row, CHARACTERS - 1, "the old last character keeps its row; the newcomer took row 0");
            assert_eq!(throng_crowd_update(crowd, 1.0 / 60.0), ThrongStatus::Ok);
            let status = throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, out.as_mut_ptr(), out.len(), std::ptr::null_mut(), 0);
            assert_eq!(status, ThrongStatus::Ok, "{}", last_error());
            assert_eq!(out[row * PER_ROW..], last_before[..], "row {row}, not due, shows what its character showed");
            throng_character_destroy(character);
            throng_crowd_destroy(crowd);
        }
    }
}
