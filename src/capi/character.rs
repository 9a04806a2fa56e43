//! The C ABI's characters: a rig and its clips, from the built-in humanoid or a glTF file, with
//! clip events added by name, and the binding of a graph's leaves to its clips that
//! `throng_crowd_add_archetype` uses.

use std::ffi::{CString, c_char};
use std::path::Path;
use std::sync::Arc;

use crate::clip::{Clip, ClipError, ClipEvent};
use crate::demo::{DemoCharacter, IDLE};
use crate::graph::CompiledGraph;
use crate::import::gltf::{GltfOptions, load_gltf};
use crate::rig::Rig;
use crate::setup::{BindError, BoundArchetype, bind_archetype};
use crate::state::StateError;

use super::ffi::{CallError, Out, ThrongStatus, c_string, call, name_at, text};
#[cfg(doc)]
use super::*;

/// [`throng_character_from_gltf`] flag: import every animation that moves the skin as one clip
/// ([`GltfOptions::merge_animations`]).
pub const THRONG_GLTF_MERGE_ANIMATIONS: u32 = 1;

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

    pub(super) fn rig(&self) -> &Rig {
        match &self.source {
            CharacterSource::Demo(demo) => &demo.rig,
            CharacterSource::Imported { rig, .. } => rig,
        }
    }

    pub(super) fn clips_mut(&mut self) -> &mut Vec<Clip> {
        match &mut self.source {
            CharacterSource::Demo(demo) => &mut demo.clips,
            CharacterSource::Imported { clips, .. } => clips,
        }
    }
}

/// Binds `graph` to a character: each leaf plays the clip named by its last path segment,
/// ignoring case, as [`DemoCharacter::bind`] does for the built-in one. Additive layers play
/// deltas over `idle`'s first frame for the humanoid, over the rest pose for an imported rig.
/// A leaf that names no clip is reported with the names the character has.
pub(super) fn bind_character(
    character: &ThrongCharacter,
    graph: Arc<CompiledGraph>,
) -> Result<BoundArchetype, CallError> {
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

/// Creates the built-in humanoid (`num_joints` 26, or 64 with fingers) with its clips `idle`,
/// `walk`, `run`, `jump`, `wave` and `lean`. Graphs bind to it as `DemoCharacter::bind` does.
///
/// # Safety
/// `out_character` is null or valid for a write of one pointer; on success it receives a
/// character the caller owns and frees with [`throng_character_destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_humanoid(
    num_joints: u32,
    out_character: *mut *mut ThrongCharacter,
) -> ThrongStatus {
    call("throng_character_humanoid", || {
        let out = Out::new(out_character, "out_character")?;
        let demo = match num_joints {
            26 => DemoCharacter::humanoid(),
            64 => DemoCharacter::humanoid_64(),
            other => {
                return Err(CallError::OutOfRange {
                    arg: "num_joints",
                    value: other.into(),
                    expected: "the humanoid has 26 or 64 joints".into(),
                });
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
pub unsafe extern "C" fn throng_character_from_gltf(
    path: *const c_char,
    flags: u32,
    out_character: *mut *mut ThrongCharacter,
) -> ThrongStatus {
    call("throng_character_from_gltf", || {
        let out = Out::new(out_character, "out_character")?;
        // SAFETY: `path`'s promise.
        let path = unsafe { text(path, "path") }?;
        if flags & !THRONG_GLTF_MERGE_ANIMATIONS != 0 {
            return Err(CallError::OutOfRange {
                arg: "flags",
                value: flags.into(),
                expected: "use 0 or THRONG_GLTF_MERGE_ANIMATIONS".into(),
            });
        }
        let options =
            GltfOptions { merge_animations: flags & THRONG_GLTF_MERGE_ANIMATIONS != 0, ..GltfOptions::default() };
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
        // SAFETY: the caller's promise.
        unsafe {
            add_moment(character, clip_name, event_name, "event_name", |clip, moment| {
                let mut events = clip.events().to_vec();
                events.push(ClipEvent::new(moment, time_s));
                clip.with_events(events)
            })
        }
    })
}

/// Adds a sync marker named `marker_name` (a foot down, say) at `time_s` seconds into the clip
/// named `clip_name` (ignoring case) of the character. Archetypes added afterwards have it, and
/// a transition synced by marker (`"sync": "marker"` in the graph, or `sync` 2 in
/// [`throng_crowd_transition_to`](super::crowd::throng_crowd_transition_to)) starts its
/// destination as far before its marker of that name as the source is before its own.
///
/// # Safety
/// As [`throng_character_add_clip_event`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_add_sync_marker(
    character: *mut ThrongCharacter,
    clip_name: *const c_char,
    marker_name: *const c_char,
    time_s: f32,
) -> ThrongStatus {
    call("throng_character_add_sync_marker", || {
        // SAFETY: the caller's promise.
        unsafe {
            add_moment(character, clip_name, marker_name, "marker_name", |clip, moment| {
                let mut markers = clip.markers().to_vec();
                markers.push(ClipEvent::new(moment, time_s));
                clip.with_markers(markers)
            })
        }
    })
}

/// Rewrites the clip named `clip_name` of `character` with `add`, given the clip and the
/// moment's name (argument `what`): an event or a sync marker.
///
/// # Safety
/// `character` is null or a live character; the strings null or NUL-terminated.
unsafe fn add_moment(
    character: *mut ThrongCharacter,
    clip_name: *const c_char,
    name: *const c_char,
    what: &'static str,
    add: impl FnOnce(Clip, &str) -> Result<Clip, ClipError>,
) -> Result<(), CallError> {
    // SAFETY: the caller's promise; null is checked by `as_mut`.
    let character = unsafe { character.as_mut() }.ok_or(CallError::NullPointer("character"))?;
    // SAFETY: the strings' promise.
    let (clip_name, name) = unsafe { (text(clip_name, "clip_name")?, text(name, what)?) };
    let clips = character.clips_mut();
    let Some(index) = clips.iter().position(|c| c.name().eq_ignore_ascii_case(clip_name)) else {
        let names: Vec<&str> = clips.iter().map(Clip::name).collect();
        return Err(CallError::UnknownClip { name: clip_name.to_owned(), clips: names.join(", ") });
    };
    let clip = &mut clips[index];
    *clip = add(clip.clone(), name)?;
    Ok(())
}

/// The character's joint count.
///
/// # Safety
/// `character` is null or a live character; `out_num_joints` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn throng_character_num_joints(
    character: *const ThrongCharacter,
    out_num_joints: *mut u32,
) -> ThrongStatus {
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
pub unsafe extern "C" fn throng_character_num_clips(
    character: *const ThrongCharacter,
    out_num_clips: *mut u32,
) -> ThrongStatus {
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
pub unsafe extern "C" fn throng_character_clip_name(
    character: *const ThrongCharacter,
    clip: u32,
    out_name: *mut *const c_char,
) -> ThrongStatus {
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
