//! Clips: per-joint tracks resampled to a uniform rate, and sampling at any time.
//!
//! Imported keys come at arbitrary times with glTF's three interpolations. They are resampled
//! once, at load, into frame-major arrays (`frame * num_joints + joint`): sampling a pose then
//! reads two contiguous frames and interpolates, which is what the GPU sampling stage
//! (`shaders/sample.wgsl`) does too.
//!
//! A clip's frames are stored at full precision, or compact ([`Clip::compress`], the
//! [`compact`] module, `docs/compression.md`): both evaluators then decode the joints they
//! sample straight from the compact data.
//!
//! This file is long on purpose (about 850 lines of code, then its unit tests): resampling and
//! sampling share the frame-major layout they define; the compact encoding lives in `compact`.

pub mod compact;
mod curves;

pub use curves::ClipCurve;

use std::borrow::Cow;

use glam::{Quat, Vec3, Vec4};

use crate::pose::{TransformLanes, normalises_to_rotation, quat_dot_lanes};
use crate::rig::{MAX_SCALE, MAX_TRANSLATION_M, Rig, Transform};
use compact::{CompactFormat, CompactPoses, CompressionReport};

/// How a source track interpolates between its keys (glTF's samplers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// Holds each key's value until the next key.
    Step,
    /// Linear for vectors, spherical-linear (shortest path) for rotations.
    Linear,
    /// Cubic Hermite spline; each key stores in-tangent, value, out-tangent, in that order.
    CubicSpline,
}

/// A value a track can hold.
pub trait TrackValue: Copy + std::fmt::Debug {
    /// Interpolates between two key values, `t` in [0, 1].
    fn interpolate(a: Self, b: Self, t: f32) -> Self;
    /// Cubic Hermite between `v0` (out-tangent `m0`) and `v1` (in-tangent `m1`) over `dt` seconds.
    fn hermite(v0: Self, m0: Self, v1: Self, m1: Self, t: f32, dt: f32) -> Self;
    /// True when every component is finite.
    fn finite(self) -> bool;
}

impl TrackValue for Vec3 {
    fn interpolate(a: Self, b: Self, t: f32) -> Self {
        a.lerp(b, t)
    }
    fn hermite(v0: Self, m0: Self, v1: Self, m1: Self, t: f32, dt: f32) -> Self {
        let [h00, h10, h01, h11] = hermite_basis(t);
        v0 * h00 + m0 * (h10 * dt) + v1 * h01 + m1 * (h11 * dt)
    }
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl TrackValue for Quat {
    fn interpolate(a: Self, b: Self, t: f32) -> Self {
        // `Quat::slerp` takes the shortest path (it flips `b` when the dot is negative).
        a.slerp(b, t)
    }
    fn hermite(v0: Self, m0: Self, v1: Self, m1: Self, t: f32, dt: f32) -> Self {
        let [h00, h10, h01, h11] = hermite_basis(t);
        let v = glam::Vec4::from(v0) * h00
            + glam::Vec4::from(m0) * (h10 * dt)
            + glam::Vec4::from(v1) * h01
            + glam::Vec4::from(m1) * (h11 * dt);
        // glTF: the spline's result is normalised.
        Quat::from_vec4(v).normalize()
    }
    fn finite(self) -> bool {
        self.is_finite()
    }
}

fn hermite_basis(t: f32) -> [f32; 4] {
    let t2 = t * t;
    let t3 = t2 * t;
    [2.0 * t3 - 3.0 * t2 + 1.0, t3 - 2.0 * t2 + t, -2.0 * t3 + 3.0 * t2, t3 - t2]
}

/// Keys of one channel of one joint, as an importer reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct Track<T> {
    /// Key times in seconds, non-decreasing.
    pub times_s: Vec<f32>,
    /// One value per key, or three (in-tangent, value, out-tangent) for
    /// [`Interpolation::CubicSpline`].
    pub values: Vec<T>,
    /// How to interpolate between keys.
    pub interpolation: Interpolation,
}

impl<T: TrackValue> Track<T> {
    /// A track of linear keys.
    #[must_use]
    pub fn linear(times_s: Vec<f32>, values: Vec<T>) -> Self {
        Self { times_s, values, interpolation: Interpolation::Linear }
    }

    /// Checks the key layout; `what` names the track in the error.
    fn validate(&self, joint: usize, channel: &'static str) -> Result<(), ClipError> {
        let per_key = if self.interpolation == Interpolation::CubicSpline { 3 } else { 1 };
        if self.times_s.is_empty() || self.values.len() != self.times_s.len() * per_key {
            return Err(ClipError::KeyCount {
                joint,
                channel,
                times: self.times_s.len(),
                values: self.values.len(),
                per_key,
            });
        }
        // NaN compares false with everything, so it is named as such before the order is checked.
        if let Some(key) = self.times_s.iter().position(|t| !t.is_finite()) {
            return Err(ClipError::NonFinite { joint, channel, key });
        }
        for (key, pair) in self.times_s.windows(2).enumerate() {
            if pair[1] < pair[0] {
                return Err(ClipError::TimesNotIncreasing { joint, channel, key: key + 1 });
            }
        }
        if let Some(key) = self.times_s.iter().position(|t| *t < 0.0) {
            return Err(ClipError::NonFinite { joint, channel, key });
        }
        if let Some(i) = self.values.iter().position(|v| !v.finite()) {
            return Err(ClipError::NonFinite { joint, channel, key: i / per_key });
        }
        Ok(())
    }

    /// The track's value at `time_s`; before the first key it holds the first value, after the
    /// last it holds the last.
    #[must_use]
    pub fn sample(&self, time_s: f32) -> T {
        let times = &self.times_s;
        let cubic = self.interpolation == Interpolation::CubicSpline;
        let value = |key: usize| if cubic { self.values[key * 3 + 1] } else { self.values[key] };
        let last = times.len() - 1;
        if time_s <= times[0] {
            return value(0);
        }
        if time_s >= times[last] {
            return value(last);
        }
        // First key strictly after `time_s`; `1..=last` by the checks above.
        let next = times.partition_point(|&t| t <= time_s);
        let prev = next - 1;
        let dt = times[next] - times[prev];
        let t = if dt > 0.0 { (time_s - times[prev]) / dt } else { 0.0 };
        match self.interpolation {
            Interpolation::Step => value(prev),
            Interpolation::Linear => T::interpolate(value(prev), value(next), t),
            Interpolation::CubicSpline => T::hermite(
                self.values[prev * 3 + 1],
                self.values[prev * 3 + 2],
                self.values[next * 3 + 1],
                self.values[next * 3],
                t,
                dt,
            ),
        }
    }

    fn end_time(&self) -> f32 {
        self.times_s.last().copied().unwrap_or(0.0)
    }
}

/// The tracks of one joint; a missing channel holds the rig's rest value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointTracks {
    /// Translation keys, metres.
    pub translation: Option<Track<Vec3>>,
    /// Rotation keys, unit quaternions.
    pub rotation: Option<Track<Quat>>,
    /// Scale keys.
    pub scale: Option<Track<Vec3>>,
}

/// Why a clip could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClipError {
    /// The number of joint track sets differs from the rig's joint count.
    #[error("clip {clip:?} has tracks for {tracks} joints but the rig has {rig_joints}")]
    JointCount {
        /// The clip's name.
        clip: String,
        /// Track sets given.
        tracks: usize,
        /// Joints in the rig.
        rig_joints: usize,
    },
    /// A track's key and value counts disagree, or it has no keys.
    #[error(
        "joint {joint} {channel} track has {times} key times and {values} values ({per_key} values per key expected)"
    )]
    KeyCount {
        /// The joint index.
        joint: usize,
        /// `"translation"`, `"rotation"` or `"scale"`.
        channel: &'static str,
        /// Key times given.
        times: usize,
        /// Values given.
        values: usize,
        /// Values each key needs.
        per_key: usize,
    },
    /// Key times go backwards.
    #[error("joint {joint} {channel} track: key {key} is earlier than the key before it")]
    TimesNotIncreasing {
        /// The joint index.
        joint: usize,
        /// The channel.
        channel: &'static str,
        /// The first key out of order.
        key: usize,
    },
    /// A key time or value is NaN, infinite, or a time is negative.
    #[error("joint {joint} {channel} track: key {key} is not finite (or its time is negative)")]
    NonFinite {
        /// The joint index.
        joint: usize,
        /// The channel.
        channel: &'static str,
        /// The key.
        key: usize,
    },
    /// The sample rate is not a positive finite number.
    #[error("sample rate {0} Hz is not positive and finite")]
    SampleRate(f32),
    /// An animation event has an empty name, or a time that is not finite or lies outside
    /// `[0, duration]`.
    #[error("clip {clip:?} event {index} ({name:?}) at {time_s} s: {what} (the clip lasts {duration_s} s)")]
    BadEvent {
        /// The clip's name.
        clip: String,
        /// Index of the event in the list given.
        index: usize,
        /// The event's name.
        name: String,
        /// The event's time.
        time_s: f32,
        /// The clip's duration.
        duration_s: f32,
        /// What is wrong.
        what: &'static str,
    },
    /// [`Clip::with_curve`] was given an empty name, a name the clip already has, or a track
    /// whose keys are malformed.
    #[error("clip {clip:?} curve {curve:?}: {what}")]
    BadCurve {
        /// The clip's name.
        clip: String,
        /// The curve's name.
        curve: String,
        /// What is wrong.
        what: String,
    },
    /// [`Clip::compress`] was given an error bound that is negative, NaN or infinite.
    #[error("clip {clip:?}: error bound {max_error_m} m is not a finite non-negative distance")]
    BadErrorBound {
        /// The clip's name.
        clip: String,
        /// The bound given, metres.
        max_error_m: f32,
    },
    /// [`Clip::compress`] was given a clip that is already compact: compressing it again
    /// would measure against the quantised poses rather than the authored ones.
    #[error("clip {clip:?} is already compact")]
    AlreadyCompact {
        /// The clip's name.
        clip: String,
    },
    /// A finite value of a frame is past its bound: a translation component beyond
    /// [`MAX_TRANSLATION_M`] or a scale component beyond [`MAX_SCALE`] (resampled tracks are
    /// checked frame by frame, so a cubic spline's overshoot counts too). Such values could
    /// overflow in the evaluators (`docs/errors.md`, "Numeric bounds").
    #[error("frame {frame} of clip {clip:?}, joint {joint}: {what} component {value} is beyond the limit {limit}")]
    OutOfBounds {
        /// The clip's name.
        clip: String,
        /// The frame index.
        frame: usize,
        /// The joint index.
        joint: usize,
        /// `"translation"` or `"scale"`.
        what: &'static str,
        /// The magnitude found.
        value: f32,
        /// The bound it is past.
        limit: f32,
    },
    /// A pose given directly has the wrong number of joints or a non-finite value.
    #[error("frame {frame} of clip {clip:?} is malformed: {what}")]
    BadFrame {
        /// The clip's name.
        clip: String,
        /// The frame index.
        frame: usize,
        /// What is wrong.
        what: String,
    },
}

/// The most frames one clip may hold after resampling (about 55 minutes at 30 Hz), so that a
/// malformed file cannot ask for unbounded memory.
pub const MAX_FRAMES: usize = 100_000;

/// A named moment of a clip (a footstep, a sword hit) that the state step reports when a
/// character's playback crosses it (see `state::AnimationEvent`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClipEvent {
    /// The event's name; events of one archetype that share a name share an id.
    pub name: String,
    /// Seconds from the clip's start, finite, in `[0, duration]`.
    pub time_s: f32,
}

impl ClipEvent {
    /// An event named `name` at `time_s` seconds.
    #[must_use]
    pub fn new(name: impl Into<String>, time_s: f32) -> Self {
        Self { name: name.into(), time_s }
    }
}

/// The first event of `events` that a clip lasting `duration_s` cannot hold, with why: an
/// empty name, or a time that is not finite or lies outside `[0, duration_s]`.
pub(crate) fn first_bad_event(events: &[ClipEvent], duration_s: f32) -> Option<(usize, &'static str)> {
    events.iter().enumerate().find_map(|(i, e)| {
        if e.name.is_empty() {
            Some((i, "the name is empty"))
        } else if !e.time_s.is_finite() {
            Some((i, "the time is not finite"))
        } else if !(0.0..=duration_s).contains(&e.time_s) {
            Some((i, "the time lies outside the clip"))
        } else {
            None
        }
    })
}

/// An animation clip: a pose per frame at a uniform rate, for every joint of one rig.
#[derive(Clone, Debug, PartialEq)]
pub struct Clip {
    name: String,
    num_joints: usize,
    num_frames: usize,
    duration_s: f32,
    looping: bool,
    /// Frame-major: `frame * num_joints + joint`.
    storage: Storage,
    /// Named moments, in the order given.
    events: Vec<ClipEvent>,
    /// Sync markers (left and right foot down…), in the order given: where transitions that
    /// sync by marker line clips up.
    markers: Vec<ClipEvent>,
    /// Named float tracks, one value per frame, in the order added.
    curves: Vec<ClipCurve>,
    /// Per joint, the largest values its frames reach, for the evaluators' bound check.
    extents: Vec<JointExtent>,
}

/// The largest translation component and scale component magnitudes one joint reaches over a
/// clip's frames; NaN when a frame holds NaN (only an additive delta against a zero scale can).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct JointExtent {
    /// Largest `|translation component|`, metres.
    pub translation_m: f32,
    /// Largest `|scale component|`.
    pub scale: f32,
    /// A frame's rotation is not a rotation: not finite, or of a squared length that is zero or
    /// overflows (only an additive delta against a reference rotation of such a length can hold
    /// one; `Clip::from_poses` refuses it in a frame).
    pub bad_rotation: bool,
}

/// The extents of every joint over frame-major `poses`.
fn extents(poses: &[Transform], num_joints: usize) -> Vec<JointExtent> {
    // Unlike `f32::max`, keeps a NaN, so that the check refuses it.
    let widest = |a: f32, b: f32| if a.is_nan() || a >= b { a } else { b };
    let mut out = vec![JointExtent::default(); num_joints];
    for frame in poses.chunks_exact(num_joints) {
        for (e, p) in out.iter_mut().zip(frame) {
            e.translation_m = p.translation.abs().to_array().into_iter().fold(e.translation_m, widest);
            e.scale = p.scale.abs().to_array().into_iter().fold(e.scale, widest);
            e.bad_rotation |= !normalises_to_rotation(p.rotation);
        }
    }
    out
}

/// How a clip's frames are held.
#[derive(Clone, Debug, PartialEq)]
enum Storage {
    /// One [`Transform`] per joint-frame.
    Full(Vec<Transform>),
    /// Quantised joint-frames ([`compact`]), boxed: with its decode's field table it is
    /// ten times a `Vec`'s size.
    Compact(Box<CompactPoses>),
}

impl Clip {
    /// Resamples tracks at `sample_rate_hz` (rounded so that frames fall exactly on 0 and the
    /// duration). The duration is the last key time of any track; a clip whose tracks all have
    /// one key is a static pose of duration 0. Rotations are made hemisphere-consistent frame
    /// to frame, so interpolation never takes the long way round.
    pub fn from_tracks(
        name: impl Into<String>,
        rig: &Rig,
        tracks: &[JointTracks],
        sample_rate_hz: f32,
        looping: bool,
    ) -> Result<Self, ClipError> {
        let name = name.into();
        let num_joints = rig.num_joints();
        if tracks.len() != num_joints {
            return Err(ClipError::JointCount { clip: name, tracks: tracks.len(), rig_joints: num_joints });
        }
        if !(sample_rate_hz.is_finite() && sample_rate_hz > 0.0) {
            return Err(ClipError::SampleRate(sample_rate_hz));
        }
        let mut duration_s: f32 = 0.0;
        for (joint, jt) in tracks.iter().enumerate() {
            if let Some(t) = &jt.translation {
                t.validate(joint, "translation")?;
                duration_s = duration_s.max(t.end_time());
            }
            if let Some(t) = &jt.rotation {
                t.validate(joint, "rotation")?;
                duration_s = duration_s.max(t.end_time());
            }
            if let Some(t) = &jt.scale {
                t.validate(joint, "scale")?;
                duration_s = duration_s.max(t.end_time());
            }
        }
        let intervals = (duration_s * sample_rate_hz).ceil() as usize;
        if intervals >= MAX_FRAMES {
            return Err(ClipError::BadFrame {
                clip: name,
                frame: intervals,
                what: format!("{duration_s} s at {sample_rate_hz} Hz is over {MAX_FRAMES} frames"),
            });
        }
        let num_frames = intervals + 1;
        let rest = rig.rest_pose();
        let mut poses = Vec::with_capacity(num_frames * num_joints);
        for frame in 0..num_frames {
            let time_s = if intervals == 0 { 0.0 } else { duration_s * frame as f32 / intervals as f32 };
            for (joint, jt) in tracks.iter().enumerate() {
                let r = rest[joint];
                poses.push(Transform {
                    translation: jt.translation.as_ref().map_or(r.translation, |t| t.sample(time_s)),
                    rotation: jt.rotation.as_ref().map_or(r.rotation, |t| t.sample(time_s)).normalize(),
                    scale: jt.scale.as_ref().map_or(r.scale, |t| t.sample(time_s)),
                });
            }
        }
        Self::from_poses(name, num_joints, poses, duration_s, looping)
    }

    /// Builds a clip from poses already at a uniform rate: `poses` is frame-major
    /// (`frame * num_joints + joint`), frame 0 at time 0 and the last frame at `duration_s`.
    pub fn from_poses(
        name: impl Into<String>,
        num_joints: usize,
        mut poses: Vec<Transform>,
        duration_s: f32,
        looping: bool,
    ) -> Result<Self, ClipError> {
        let name = name.into();
        if num_joints == 0 || poses.is_empty() || !poses.len().is_multiple_of(num_joints) {
            return Err(ClipError::BadFrame {
                clip: name,
                frame: 0,
                what: format!("{} transforms is not a whole number of {num_joints}-joint frames", poses.len()),
            });
        }
        let num_frames = poses.len() / num_joints;
        if !(duration_s.is_finite() && duration_s >= 0.0) || (num_frames > 1 && duration_s == 0.0) {
            return Err(ClipError::BadFrame {
                clip: name,
                frame: 0,
                what: format!("duration {duration_s} s for {num_frames} frames"),
            });
        }
        if let Some(i) = poses.iter().position(|p| !p.is_finite()) {
            return Err(ClipError::BadFrame {
                clip: name,
                frame: i / num_joints,
                what: format!("joint {} is not finite", i % num_joints),
            });
        }
        for (i, p) in poses.iter().enumerate() {
            let checks = [
                ("translation", p.translation.abs().max_element(), MAX_TRANSLATION_M),
                ("scale", p.scale.abs().max_element(), MAX_SCALE),
            ];
            if let Some(&(what, value, limit)) = checks.iter().find(|(_, value, limit)| value > limit) {
                return Err(ClipError::OutOfBounds {
                    clip: name,
                    frame: i / num_joints,
                    joint: i % num_joints,
                    what,
                    value,
                    limit,
                });
            }
        }
        for frame in 0..num_frames {
            for joint in 0..num_joints {
                let i = frame * num_joints + joint;
                // A zero quaternion (or one whose squared length underflows) is finite but has
                // no direction: normalising it would store NaN; one whose squared length
                // overflows normalises to zero, which the sampling's nlerp would turn into NaN.
                if !normalises_to_rotation(poses[i].rotation) {
                    return Err(ClipError::BadFrame {
                        clip: name,
                        frame,
                        what: format!("joint {joint}'s rotation has no length to normalise"),
                    });
                }
                let mut q = poses[i].rotation.normalize();
                if frame > 0 && q.dot(poses[i - num_joints].rotation) < 0.0 {
                    q = -q;
                }
                poses[i].rotation = q;
            }
        }
        let extents = extents(&poses, num_joints);
        Ok(Self {
            name,
            num_joints,
            num_frames,
            duration_s,
            looping,
            storage: Storage::Full(poses),
            events: Vec::new(),
            markers: Vec::new(),
            curves: Vec::new(),
            extents,
        })
    }

    /// This clip in the cheapest [`CompactFormat`] whose decoded frames keep every joint of
    /// `rig` within `max_error_m` metres of the original in model space, on every frame
    /// ([`compact::DEFAULT_MAX_ERROR_M`] is a sensible bound), with a report of what was
    /// chosen and measured. A clip no format satisfies, or whose scales change, comes back at
    /// full precision, and the report says why ([`compact::KeptFull`]). Events, name, duration
    /// and loop flag are kept.
    ///
    /// # Errors
    /// [`ClipError::JointCount`] when the rig's joint count differs from the clip's;
    /// [`ClipError::BadErrorBound`] for a negative, NaN or infinite bound;
    /// [`ClipError::AlreadyCompact`] for a clip already compact.
    ///
    /// ```
    /// use throng::clip::compact::DEFAULT_MAX_ERROR_M;
    /// use throng::demo::DemoCharacter;
    ///
    /// let demo = DemoCharacter::humanoid();
    /// let walk = &demo.clips[demo.clip_index("walk").unwrap()];
    /// let (compact, report) = walk.compress(&demo.rig, DEFAULT_MAX_ERROR_M)?;
    /// assert!(report.worst_error_m <= DEFAULT_MAX_ERROR_M);
    /// assert!(compact.storage_bytes() < walk.storage_bytes());
    /// # Ok::<(), throng::ClipError>(())
    /// ```
    pub fn compress(&self, rig: &Rig, max_error_m: f32) -> Result<(Self, CompressionReport), ClipError> {
        self.compress_against(rig, None, max_error_m)
    }

    /// [`Clip::compress`] for an additive delta ([`Clip::to_additive`]): the error is measured
    /// with every frame applied at full weight onto `reference` (one transform per joint; the
    /// pose the delta was taken against is the natural choice), where `compress` would measure
    /// the delta as if it were a pose, whose near-zero translations hide what a rotation's error
    /// does to the joints below it.
    ///
    /// # Errors
    /// As [`Clip::compress`]; [`ClipError::JointCount`] also when `reference` does not hold
    /// one transform per joint (`tracks` is its length).
    ///
    /// ```
    /// use throng::clip::compact::DEFAULT_MAX_ERROR_M;
    /// use throng::demo::DemoCharacter;
    ///
    /// let demo = DemoCharacter::humanoid();
    /// let idle = demo.clips[demo.clip_index("idle").unwrap()].frame(0).into_owned();
    /// let lean = demo.clips[demo.clip_index("lean").unwrap()].to_additive(&idle);
    /// let (compact, report) = lean.compress_additive(&demo.rig, &idle, DEFAULT_MAX_ERROR_M)?;
    /// assert!(report.worst_error_m <= DEFAULT_MAX_ERROR_M);
    /// assert!(compact.storage_bytes() <= lean.storage_bytes());
    /// # Ok::<(), throng::ClipError>(())
    /// ```
    pub fn compress_additive(
        &self,
        rig: &Rig,
        reference: &[Transform],
        max_error_m: f32,
    ) -> Result<(Self, CompressionReport), ClipError> {
        if reference.len() != self.num_joints {
            return Err(ClipError::JointCount {
                clip: self.name.clone(),
                tracks: reference.len(),
                rig_joints: self.num_joints,
            });
        }
        self.compress_against(rig, Some(reference), max_error_m)
    }

    fn compress_against(
        &self,
        rig: &Rig,
        reference: Option<&[Transform]>,
        max_error_m: f32,
    ) -> Result<(Self, CompressionReport), ClipError> {
        if rig.num_joints() != self.num_joints {
            return Err(ClipError::JointCount {
                clip: self.name.clone(),
                tracks: self.num_joints,
                rig_joints: rig.num_joints(),
            });
        }
        if !(max_error_m.is_finite() && max_error_m >= 0.0) {
            return Err(ClipError::BadErrorBound { clip: self.name.clone(), max_error_m });
        }
        let Storage::Full(poses) = &self.storage else {
            return Err(ClipError::AlreadyCompact { clip: self.name.clone() });
        };
        let (compact, report) = compact::choose(&self.name, rig, poses, reference, max_error_m);
        let mut clip = self.clone();
        if let Some(compact) = compact {
            clip.storage = Storage::Compact(Box::new(compact));
        }
        Ok((clip, report))
    }

    /// This clip at full precision: a compact clip's frames decoded once, as sampling decodes
    /// them; a full clip unchanged.
    #[must_use]
    pub fn decompressed(&self) -> Self {
        let mut clip = self.clone();
        if let Storage::Compact(c) = &self.storage {
            clip.storage = Storage::Full(c.decode_all());
        }
        clip
    }

    /// The compact format the frames are stored in; `None` at full precision.
    #[must_use]
    pub fn compact_format(&self) -> Option<CompactFormat> {
        match &self.storage {
            Storage::Full(_) => None,
            Storage::Compact(c) => Some(c.format),
        }
    }

    /// Bytes the frames take in memory (and on the GPU, less its 16-byte alignment of the
    /// per-joint ranges): joint-frames, plus a compact clip's per-joint ranges.
    #[must_use]
    pub fn storage_bytes(&self) -> usize {
        match &self.storage {
            Storage::Full(p) => size_of_val(p.as_slice()),
            Storage::Compact(c) => size_of_val(c.words.as_slice()) + size_of_val(c.ranges.as_slice()),
        }
    }

    /// The compact storage, for the GPU upload.
    pub(crate) fn compact_poses(&self) -> Option<&CompactPoses> {
        match &self.storage {
            Storage::Full(_) => None,
            Storage::Compact(c) => Some(c),
        }
    }

    /// This clip as an additive delta against `reference` (one transform per joint, usually a
    /// frame of the clip the pose was authored over): every frame becomes
    /// `inverse(reference) * frame` (translations `frame − reference`, scales `frame / reference`),
    /// for a layer whose blend is additive.
    ///
    /// The delta is at full precision even when this clip is compact; compress it afterwards
    /// with [`Clip::compress_additive`].
    #[must_use]
    pub fn to_additive(&self, reference: &[Transform]) -> Self {
        let mut poses = self.poses().into_owned();
        for frame in poses.chunks_exact_mut(self.num_joints) {
            let pose = frame.to_vec();
            crate::pose::make_additive(reference, &pose, frame);
        }
        Self { extents: extents(&poses, self.num_joints), storage: Storage::Full(poses), ..self.clone() }
    }

    /// What joint `joint` (below [`Clip::num_joints`]) reaches over the frames.
    pub(crate) fn extent(&self, joint: usize) -> JointExtent {
        self.extents[joint]
    }

    /// The clip's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Joints per frame.
    #[must_use]
    pub fn num_joints(&self) -> usize {
        self.num_joints
    }

    /// Frames stored, including both ends.
    #[must_use]
    pub fn num_frames(&self) -> usize {
        self.num_frames
    }

    /// Length in seconds; 0 for a static pose.
    #[must_use]
    pub fn duration_s(&self) -> f32 {
        self.duration_s
    }

    /// Whether sampling past the end wraps (true) or holds the last frame (false).
    #[must_use]
    pub fn is_looping(&self) -> bool {
        self.looping
    }

    /// Sets the loop flag.
    pub fn set_looping(&mut self, looping: bool) {
        self.looping = looping;
    }

    /// The clip's animation events (imported from glTF `extras`, or set with
    /// [`Clip::with_events`]).
    #[must_use]
    pub fn events(&self) -> &[ClipEvent] {
        &self.events
    }

    /// The clip with `events` in place of its events.
    ///
    /// # Errors
    /// [`ClipError::BadEvent`] for the first event with an empty name or a time that is not
    /// finite or lies outside `[0, duration]`.
    pub fn with_events(mut self, events: Vec<ClipEvent>) -> Result<Self, ClipError> {
        self.check_moments(&events)?;
        self.events = events;
        Ok(self)
    }

    /// [`ClipError::BadEvent`] for the first of `moments` (events or markers) with an empty name
    /// or a time that is not finite or lies outside `[0, duration]`.
    fn check_moments(&self, moments: &[ClipEvent]) -> Result<(), ClipError> {
        match first_bad_event(moments, self.duration_s) {
            Some((index, what)) => Err(ClipError::BadEvent {
                clip: self.name.clone(),
                index,
                name: moments[index].name.clone(),
                time_s: moments[index].time_s,
                duration_s: self.duration_s,
                what,
            }),
            None => Ok(()),
        }
    }

    /// The clip's sync markers (imported from glTF `extras.syncMarkers`, or set with
    /// [`Clip::with_markers`]): named moments that transitions syncing by marker line up
    /// (`docs/state-machine.md#sync`).
    #[must_use]
    pub fn markers(&self) -> &[ClipEvent] {
        &self.markers
    }

    /// The clip with `markers` in place of its sync markers.
    ///
    /// # Errors
    /// [`ClipError::BadEvent`] for the first marker with an empty name or a time that is not
    /// finite or lies outside `[0, duration]`.
    pub fn with_markers(mut self, markers: Vec<ClipEvent>) -> Result<Self, ClipError> {
        self.check_moments(&markers)?;
        self.markers = markers;
        Ok(self)
    }

    /// All frames, frame-major (`frame * num_joints + joint`): borrowed at full precision,
    /// decoded (a new `Vec`) for a compact clip.
    #[must_use]
    pub fn poses(&self) -> Cow<'_, [Transform]> {
        match &self.storage {
            Storage::Full(p) => Cow::Borrowed(p),
            Storage::Compact(c) => Cow::Owned(c.decode_all()),
        }
    }

    /// One frame's local pose (the last frame for an index past it): borrowed at full
    /// precision, decoded for a compact clip.
    #[must_use]
    pub fn frame(&self, frame: usize) -> Cow<'_, [Transform]> {
        let frame = frame.min(self.num_frames - 1);
        match &self.storage {
            Storage::Full(p) => {
                let start = frame * self.num_joints;
                Cow::Borrowed(&p[start..start + self.num_joints])
            }
            Storage::Compact(c) => Cow::Owned(c.decode_frame(frame)),
        }
    }

    /// Joint `joint` (below [`Clip::num_joints`]) of frame `frame` (clamped to the last),
    /// decoded alone: what sampling reads.
    #[must_use]
    pub(crate) fn joint(&self, frame: usize, joint: usize) -> Transform {
        debug_assert!(joint < self.num_joints);
        let frame = frame.min(self.num_frames - 1);
        match &self.storage {
            Storage::Full(p) => p[frame * self.num_joints + joint],
            Storage::Compact(c) => c.decode(frame, joint),
        }
    }

    /// Frames `f0` and `f1` (in range) of every joint, to be interpolated at `alpha`
    /// ([`interpolate_frames`]) four joints at a time: what sampling and the blend read. A
    /// compact clip decodes the joints of the two frames as they are read, never a whole frame.
    #[inline]
    pub(crate) fn frame_pair(&self, (f0, f1, alpha): (usize, usize, f32)) -> FramePair<'_> {
        match &self.storage {
            Storage::Full(p) => {
                let n = self.num_joints;
                FramePair::Full { from: &p[f0 * n..(f0 + 1) * n], to: &p[f1 * n..(f1 + 1) * n], alpha }
            }
            Storage::Compact(c) => FramePair::Compact(c.frame_pair(f0, f1, alpha)),
        }
    }

    /// Maps any time to the clip's local time: wrapped into `[0, duration)` when looping,
    /// clamped to `[0, duration]` otherwise. NaN and infinite times map to 0.
    #[must_use]
    pub fn local_time(&self, time_s: f32, looping: bool) -> f32 {
        if !time_s.is_finite() || self.duration_s == 0.0 {
            return 0.0;
        }
        if looping {
            let t = time_s.rem_euclid(self.duration_s);
            // `rem_euclid` can round up to the divisor for tiny negative inputs.
            if t >= self.duration_s { 0.0 } else { t }
        } else {
            time_s.clamp(0.0, self.duration_s)
        }
    }

    /// The frame pair and blend factor for `time_s`: `(frame, next_frame, alpha)`, that is
    /// [`frame_at`](Self::frame_at) of [`frame_coordinate`](Self::frame_coordinate).
    #[must_use]
    pub fn frame_position(&self, time_s: f32, looping: bool) -> (usize, usize, f32) {
        self.frame_at(self.frame_coordinate(time_s, looping))
    }

    /// Where `time_s` falls between the clip's frames, counted in frames from the first: in
    /// `[0, frames - 1]` (after [`local_time`](Self::local_time)), 0 for a clip of one frame.
    /// The GPU evaluator resolves it once a frame for each sample (`shaders/sample_positions.wgsl`),
    /// then every joint reads it ([`frame_at`](Self::frame_at)).
    ///
    /// ```
    /// # use throng::{Clip, Transform};
    /// // Five frames over two seconds: a frame every half second.
    /// let clip = Clip::from_poses("walk", 1, vec![Transform::IDENTITY; 5], 2.0, true).unwrap();
    /// assert_eq!(clip.frame_coordinate(0.75, true), 1.5);
    /// assert_eq!(clip.frame_coordinate(2.75, true), 1.5);
    /// assert_eq!(clip.frame_coordinate(2.75, false), 4.0);
    /// assert_eq!(clip.frame_at(1.5), (1, 2, 0.5));
    /// assert_eq!(clip.frame_at(4.0), (3, 4, 1.0));
    /// ```
    #[must_use]
    #[inline]
    pub fn frame_coordinate(&self, time_s: f32, looping: bool) -> f32 {
        let t = self.local_time(time_s, looping);
        if self.num_frames == 1 {
            return 0.0;
        }
        t / self.duration_s * (self.num_frames - 1) as f32
    }

    /// The frame pair and blend factor at frame coordinate `x`
    /// ([`frame_coordinate`](Self::frame_coordinate)): `(frame, next_frame, alpha)`, the last
    /// pair at factor 1 at the last frame, and `(0, 0, 0.0)` for a clip of one frame.
    #[must_use]
    #[inline]
    pub fn frame_at(&self, x: f32) -> (usize, usize, f32) {
        if self.num_frames == 1 {
            return (0, 0, 0.0);
        }
        let frame = (x.floor() as usize).min(self.num_frames - 2);
        (frame, frame + 1, (x - frame as f32).clamp(0.0, 1.0))
    }

    /// Samples every joint at `time_s`, looping or clamping as the clip's loop flag says.
    /// `out` must hold [`Clip::num_joints`] transforms; extra entries are left alone.
    pub fn sample(&self, time_s: f32, out: &mut [Transform]) {
        self.sample_with(time_s, self.looping, out);
    }

    /// Samples every joint at `time_s`, looping or clamping as `looping` says.
    pub fn sample_with(&self, time_s: f32, looping: bool, out: &mut [Transform]) {
        self.frame_pair(self.frame_position(time_s, looping)).for_each(out, |o, p| *o = p);
    }
}

/// A clip's two frames and the factor between them ([`Clip::frame_pair`]), read four joints at
/// a time.
pub(crate) enum FramePair<'a> {
    /// Full precision: each frame's transforms.
    Full { from: &'a [Transform], to: &'a [Transform], alpha: f32 },
    /// Compact: decoded as read.
    Compact(compact::FramePair<'a>),
}

impl FramePair<'_> {
    /// Joints `4 * group ..` (the group in range) interpolated, one per lane; lanes past the
    /// clip's last joint repeat the group's first.
    #[inline(always)]
    pub fn group(&self, group: usize) -> TransformLanes {
        match self {
            Self::Full { from, to, alpha } => {
                let first = 4 * group;
                let joint = |lane: usize| {
                    let j = if first + lane < from.len() { first + lane } else { first };
                    interpolate_frames(&from[j], &to[j], *alpha)
                };
                TransformLanes::from_transforms([&joint(0), &joint(1), &joint(2), &joint(3)])
            }
            Self::Compact(pair) => pair.group(group),
        }
    }

    /// Every joint interpolated, handed to `visit` with `out`'s entry for the joint, in joint
    /// order; entries past the clip's joints are left alone.
    #[inline(always)]
    pub fn for_each(&self, out: &mut [Transform], mut visit: impl FnMut(&mut Transform, Transform)) {
        match self {
            Self::Full { from, to, alpha } => {
                for ((o, a), b) in out.iter_mut().zip(*from).zip(*to) {
                    visit(o, interpolate_frames(a, b, *alpha));
                }
            }
            Self::Compact(pair) => {
                let joints = out.len().min(pair.num_joints());
                for (group, out) in out[..joints].chunks_mut(4).enumerate() {
                    for (o, t) in out.iter_mut().zip(pair.group(group).to_transforms()) {
                        visit(o, t);
                    }
                }
            }
        }
    }
}

/// Interpolates two adjacent resampled frames: lerp for vectors, normalised lerp for rotations
/// (adjacent frames are on one hemisphere and close, where nlerp and slerp agree to well under
/// the GPU tolerance). Mirrored by `sample_frames` in `shaders/sample.wgsl`.
#[inline]
#[must_use]
pub fn interpolate_frames(a: &Transform, b: &Transform, alpha: f32) -> Transform {
    Transform {
        translation: a.translation.lerp(b.translation, alpha),
        rotation: a.rotation.lerp(b.rotation, alpha),
        scale: a.scale.lerp(b.scale, alpha),
    }
}

/// [`interpolate_frames`] of four joints at once, one per lane: its arithmetic (glam's `lerp`
/// of vectors, and `Quat::lerp`'s hemisphere flip and normalisation) lane-wise, with glam's
/// order of every sum, so that each lane gets the bits `interpolate_frames` gives its joint.
#[inline(always)]
pub(crate) fn interpolate_lanes(a: &TransformLanes, b: &TransformLanes, alpha: f32) -> TransformLanes {
    let (from_share, to_share) = (Vec4::splat(1.0 - alpha), Vec4::splat(alpha));
    let lerp = |a: Vec4, b: Vec4| a * from_share + b * to_share;
    // `Quat::lerp` negates the end where the dot product's sign bit is set.
    let hemisphere = Vec4::ONE.copysign(quat_dot_lanes(&a.rotation, &b.rotation));
    let q = |c: usize| lerp(a.rotation[c], b.rotation[c] * hemisphere);
    let q = [q(0), q(1), q(2), q(3)];
    let length = quat_dot_lanes(&q, &q).sqrt();
    let t = |c: usize| lerp(a.translation[c], b.translation[c]);
    let s = |c: usize| lerp(a.scale[c], b.scale[c]);
    TransformLanes {
        translation: [t(0), t(1), t(2)],
        rotation: [q[0] / length, q[1] / length, q[2] / length, q[3] / length],
        scale: [s(0), s(1), s(2)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_joint_rig() -> Rig {
        Rig::new(vec!["j".into()], vec![None], vec![Transform::IDENTITY], None).unwrap()
    }

    #[test]
    fn linear_track_mid_key() {
        let t = Track::linear(vec![0.0, 1.0, 3.0], vec![Vec3::ZERO, Vec3::X * 2.0, Vec3::X * 6.0]);
        assert_eq!(t.sample(0.5), Vec3::X);
        assert_eq!(t.sample(2.0), Vec3::X * 4.0);
        assert_eq!(t.sample(-1.0), Vec3::ZERO);
        assert_eq!(t.sample(10.0), Vec3::X * 6.0);
    }

    #[test]
    fn step_track_holds_until_next_key() {
        let t =
            Track { times_s: vec![0.0, 1.0], values: vec![Vec3::ZERO, Vec3::ONE], interpolation: Interpolation::Step };
        assert_eq!(t.sample(0.999), Vec3::ZERO);
        assert_eq!(t.sample(1.0), Vec3::ONE);
    }

    #[test]
    fn cubic_spline_track_matches_hermite() {
        // Keys at 0 and 2 s, values 0 and 1, out-tangent of key 0 = 1/s, in-tangent of key 1 = 0.
        // p(s) = h00*0 + h10*dt*1 + h01*1 + h11*dt*0 with s = 0.5, dt = 2:
        // h10 = 0.125 - 0.5 + 0.5 = 0.125, h01 = -0.25 + 0.75 = 0.5 → 0.25 + 0.5 = 0.75.
        let t = Track {
            times_s: vec![0.0, 2.0],
            values: vec![Vec3::ZERO, Vec3::ZERO, Vec3::X, Vec3::ZERO, Vec3::X, Vec3::ZERO],
            interpolation: Interpolation::CubicSpline,
        };
        assert!((t.sample(1.0).x - 0.75).abs() < 1e-6);
        assert_eq!(t.sample(2.0), Vec3::X);
    }

    #[test]
    fn rotation_track_takes_short_way() {
        // 350° about Y is -10°: halfway from 0 must be -5°, not 175°.
        let a = Quat::IDENTITY;
        let b = Quat::from_rotation_y(350f32.to_radians());
        let t = Track::linear(vec![0.0, 1.0], vec![a, b]);
        let mid = t.sample(0.5);
        assert!(mid.angle_between(Quat::from_rotation_y(-5f32.to_radians())) < 1e-4);
    }

    fn ramp_clip(looping: bool) -> Clip {
        // x goes 0 → 1 over 1 s, resampled at 10 Hz.
        let tracks = [JointTracks {
            translation: Some(Track::linear(vec![0.0, 1.0], vec![Vec3::ZERO, Vec3::X])),
            ..Default::default()
        }];
        Clip::from_tracks("ramp", &one_joint_rig(), &tracks, 10.0, looping).unwrap()
    }

    #[test]
    fn clip_samples_mid_key_wraps_and_clamps() {
        let mut out = [Transform::IDENTITY];
        let clip = ramp_clip(true);
        assert_eq!(clip.num_frames(), 11);
        clip.sample(0.25, &mut out);
        assert!((out[0].translation.x - 0.25).abs() < 1e-6);
        clip.sample(1.25, &mut out);
        assert!((out[0].translation.x - 0.25).abs() < 1e-5, "loop wrap");
        clip.sample(-0.25, &mut out);
        assert!((out[0].translation.x - 0.75).abs() < 1e-5, "negative time wraps");
        let clip = ramp_clip(false);
        clip.sample(7.0, &mut out);
        assert_eq!(out[0].translation.x, 1.0, "clamp past the end");
        clip.sample(f32::NAN, &mut out);
        assert_eq!(out[0].translation.x, 0.0, "NaN time samples the start");
    }

    #[test]
    fn resampled_rotations_share_a_hemisphere() {
        let q = Quat::from_rotation_x(1.0);
        let tracks = [JointTracks {
            rotation: Some(Track { times_s: vec![0.0, 1.0], values: vec![q, -q], interpolation: Interpolation::Step }),
            ..Default::default()
        }];
        let clip = Clip::from_tracks("flip", &one_joint_rig(), &tracks, 4.0, false).unwrap();
        for pair in clip.poses().windows(2) {
            assert!(pair[0].rotation.dot(pair[1].rotation) > 0.0);
        }
    }

    #[test]
    fn refuses_bad_tracks() {
        let rig = one_joint_rig();
        let bad = |jt: JointTracks| Clip::from_tracks("bad", &rig, &[jt], 30.0, true).unwrap_err();
        let e = bad(JointTracks {
            translation: Some(Track::linear(vec![0.0, 1.0], vec![Vec3::ZERO])),
            ..Default::default()
        });
        assert!(matches!(e, ClipError::KeyCount { joint: 0, channel: "translation", times: 2, values: 1, .. }));
        let e = bad(JointTracks {
            scale: Some(Track::linear(vec![1.0, 0.5], vec![Vec3::ONE, Vec3::ONE])),
            ..Default::default()
        });
        assert!(matches!(e, ClipError::TimesNotIncreasing { key: 1, .. }));
        let e = bad(JointTracks {
            scale: Some(Track::linear(vec![0.0, f32::NAN], vec![Vec3::ONE, Vec3::ONE])),
            ..Default::default()
        });
        assert!(matches!(e, ClipError::NonFinite { joint: 0, channel: "scale", key: 1 }), "{e}");
        let e = bad(JointTracks {
            scale: Some(Track::linear(vec![0.0, 1e9], vec![Vec3::ONE, Vec3::ONE])),
            ..Default::default()
        });
        assert!(matches!(e, ClipError::BadFrame { .. }));
        assert!(matches!(Clip::from_tracks("x", &rig, &[], 30.0, true), Err(ClipError::JointCount { .. })));
    }
}
