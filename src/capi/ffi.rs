//! The C ABI's plumbing: statuses, the calling thread's last error message, [`call`] (every
//! entry point's body run under `catch_unwind`, its error mapped to a status), and the checks on
//! what C hands in (null, alignment, lengths, UTF-8).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::clip::ClipError;
use crate::eval::EvalError;
use crate::graph::GraphError;
use crate::import::gltf::GltfError;
use crate::runtime::RuntimeError;
use crate::setup::BindError;
use crate::state::StateError;

use super::crowd::ThrongCrowd;
#[cfg(doc)]
use super::*;

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

/// Why a call failed; becomes a [`ThrongStatus`] and the thread's last error message.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
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
    /// The runtime refused an archetype id or layer setups the C side cannot produce (a bug).
    #[error(transparent)]
    Runtime(RuntimeError),
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
            Self::State(
                StateError::BadUpdateRate { .. }
                | StateError::BadTimeScale { .. }
                | StateError::BadStartPhase { .. }
                | StateError::BadCommand { .. }
                | StateError::BadOneShot { .. }
                | StateError::UnknownOneShotClip { .. }
                | StateError::UnknownLayer { .. },
            ) => ThrongStatus::InvalidArgument,
            Self::State(StateError::UnknownState { .. } | StateError::UnknownSlot { .. }) => ThrongStatus::UnknownName,
            Self::State(_) => ThrongStatus::State,
            Self::Eval(_) => ThrongStatus::Eval,
            Self::Runtime(_) => ThrongStatus::InvalidArgument,
            Self::Poisoned | Self::Panic(_) => ThrongStatus::Panic,
        }
    }
}

impl From<RuntimeError> for CallError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::State(e) => Self::State(e),
            RuntimeError::Eval(e) => Self::Eval(e),
            RuntimeError::DuplicateHandle { handle } => Self::DuplicateHandle { handle: handle.to_bits() },
            other => Self::Runtime(other),
        }
    }
}

thread_local! {
    /// The last call's message on this thread, NUL-terminated for C; empty after a success.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// A C string of `text`; interior NULs (a JSON name can hold one) become U+FFFD so that C
/// sees the whole text.
pub(super) fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with a non-text payload".to_owned(),
    }
}

/// Runs one C entry point: catches panics, records the message, maps the error to a status.
pub(super) fn call(function: &'static str, body: impl FnOnce() -> Result<(), CallError>) -> ThrongStatus {
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
pub(super) unsafe fn crowd_call(
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

pub(super) fn check_pointer<T>(ptr: *const T, arg: &'static str) -> Result<NonNull<T>, CallError> {
    let ptr = NonNull::new(ptr.cast_mut()).ok_or(CallError::NullPointer(arg))?;
    if !ptr.as_ptr().is_aligned() {
        return Err(CallError::Misaligned { arg, align: align_of::<T>() });
    }
    Ok(ptr)
}

/// An output argument, checked before the call does anything so that a bad one cannot leave
/// work done and unreported.
pub(super) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    pub(super) fn new(ptr: *mut T, arg: &'static str) -> Result<Self, CallError> {
        check_pointer(ptr, arg).map(Self)
    }

    /// # Safety
    /// The pointer given to [`Out::new`] is valid for a write of `T`.
    pub(super) unsafe fn write(self, value: T) {
        // SAFETY: non-null and aligned (checked in `new`); valid by the caller's promise.
        unsafe { self.0.as_ptr().write(value) };
    }
}

/// `count` elements at `ptr`; null is allowed for zero elements.
///
/// # Safety
/// When `count > 0`, `ptr` points to `count` initialised `T`s that live through the call.
pub(super) unsafe fn input<'a, T>(ptr: *const T, count: usize, arg: &'static str) -> Result<&'a [T], CallError> {
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
pub(super) unsafe fn output<'a, T: bytemuck::Zeroable>(
    ptr: *mut T,
    count: usize,
    arg: &'static str,
) -> Result<&'a mut [T], CallError> {
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
pub(super) unsafe fn text<'a>(ptr: *const c_char, arg: &'static str) -> Result<&'a str, CallError> {
    if ptr.is_null() {
        return Err(CallError::NullPointer(arg));
    }
    // SAFETY: non-null; NUL-terminated by the caller's promise.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| CallError::NotUtf8 { arg, valid_up_to: e.valid_up_to() })
}

/// Entry `index` of `names`, for the `*_name` calls; past the end, an error naming `arg` and,
/// through `expected` (`{}` becomes the count), how many there are.
pub(super) fn name_at<'a>(
    names: &'a [CString],
    index: u32,
    arg: &'static str,
    expected: &str,
) -> Result<&'a CString, CallError> {
    names.get(index as usize).ok_or_else(|| CallError::OutOfRange {
        arg,
        value: index.into(),
        expected: expected.replace("{}", &names.len().to_string()),
    })
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
