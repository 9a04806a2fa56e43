//! Root motion: the root joint's horizontal travel and yaw between two clip times, handed to
//! the caller so gameplay moves characters by their animation, and removed from the pose.
//!
//! A looping clip's root keeps going across the wrap: from `t0` to `t1` over `k` wraps the
//! travel is `(end − root(t0)) + (k − 1)·(end − start) + (root(t1) − start)`, where `start` and
//! `end` are the root at the clip's first and last frame.
//!
//! [`crate::eval::frame_layers::FrameJob`] reports root motion as it evaluates; an engine evaluating
//! on the GPU, which reports none, calls [`crowd_root_motion`] on the same pose programs, or
//! [`records_root_motion`] on the state step's records, expanding each character's base layer
//! alone.

use glam::{Quat, Vec3};
use rayon::prelude::*;

use super::EvalError;
use super::expand::{ExpandError, validate_records_frame};
use super::sample::Normalised;
use crate::blend_space::{BlendTrees, TreeScratch};
use crate::clip::Clip;
use crate::program::{
    ClipSample, ExpandTables, LayerProgram, RecordFrame, SwitchMode, counted, expand_layer, validate_layer_programs,
    validate_records,
};
use crate::rig::Transform;

/// Root travel over one step: horizontal translation (metres, in the clip's model space, y = 0)
/// and yaw about +Y (radians).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RootDelta {
    /// Horizontal displacement, metres; `y` is always 0.
    pub translation: Vec3,
    /// Rotation about +Y, radians.
    pub yaw: f32,
}

impl RootDelta {
    /// `self` scaled by a blend weight.
    #[must_use]
    pub fn scaled(self, weight: f32) -> Self {
        Self { translation: self.translation * weight, yaw: self.yaw * weight }
    }
}

/// Weighted blends of deltas add.
impl std::ops::Add for RootDelta {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self { translation: self.translation + other.translation, yaw: self.yaw + other.yaw }
    }
}

/// The root's horizontal position and yaw at one clip time.
fn root_at(clip: &Clip, root: usize, time_s: f32) -> (Vec3, f32) {
    let (f0, f1, alpha) = clip.frame_position(time_s, clip.is_looping());
    let a = clip.joint(f0, root);
    let b = clip.joint(f1, root);
    let t = a.translation.lerp(b.translation, alpha);
    let q = a.rotation.lerp(b.rotation, alpha).normalize();
    (Vec3::new(t.x, 0.0, t.z), yaw_of(q))
}

/// The rotation's heading about +Y, radians: the angle of its rotated +Z axis in the XZ plane.
#[must_use]
pub fn yaw_of(q: Quat) -> f32 {
    let forward = q * Vec3::Z;
    forward.x.atan2(forward.z)
}

/// The root's travel from `t0_s` to `t1_s` (unwrapped clip times, `t1_s >= t0_s`) of `clip`.
/// A looping clip accumulates whole loops; a clamped clip stops at its ends.
#[must_use]
pub fn clip_root_delta(clip: &Clip, root: usize, t0_s: f32, t1_s: f32) -> RootDelta {
    let duration = clip.duration_s();
    if !(t1_s > t0_s) || !t0_s.is_finite() || !t1_s.is_finite() || duration == 0.0 {
        return RootDelta::default();
    }
    let (p0, y0) = root_at(clip, root, t0_s);
    let (p1, y1) = root_at(clip, root, t1_s);
    if !clip.is_looping() {
        return RootDelta { translation: p1 - p0, yaw: wrap_angle(y1 - y0) };
    }
    let (start, ys) = root_at(clip, root, 0.0);
    let (end, ye) = {
        let last = clip.joint(clip.num_frames() - 1, root);
        (Vec3::new(last.translation.x, 0.0, last.translation.z), yaw_of(last.rotation))
    };
    // Whole loops crossed, in f64 (`t / duration` overflows f32 for a finite time over a short
    // clip) and at most `u32::MAX`, as the state step counts them, so the travel stays finite:
    // at most 2^32 loops of at most 2 × MAX_TRANSLATION_M each.
    let loops = (f64::from(t1_s) / f64::from(duration)).floor() - (f64::from(t0_s) / f64::from(duration)).floor();
    let wraps = loops.clamp(0.0, f64::from(u32::MAX)) as f32;
    if wraps == 0.0 {
        return RootDelta { translation: p1 - p0, yaw: wrap_angle(y1 - y0) };
    }
    let per_loop = end - start;
    let yaw_per_loop = wrap_angle(ye - ys);
    RootDelta {
        translation: (end - p0) + per_loop * (wraps - 1.0) + (p1 - start),
        yaw: wrap_angle(ye - y0) + yaw_per_loop * (wraps - 1.0) + wrap_angle(y1 - ys),
    }
}

/// The root's travel over a blend of samples: each sample's clip from last frame's time
/// (`time_s - advance_s`) to this one's, by normalised weight; zero when no weight counts
/// ([`crate::program::weighs`]). Samples naming no clip of `clips` add nothing (the callers validate).
pub(crate) fn blend_root_delta(clips: &[Clip], samples: &[ClipSample]) -> RootDelta {
    let Some(weights) = Normalised::of(samples) else {
        return RootDelta::default();
    };
    counted(samples).fold(RootDelta::default(), |acc, s| match clips.get(s.clip as usize) {
        Some(clip) => acc + clip_root_delta(clip, 0, s.time_s - s.advance_s, s.time_s).scaled(weights.share(s.weight)),
        None => acc,
    })
}

/// Root motion for a whole crowd from the state step's pose programs alone, exactly as
/// [`crate::eval::frame_layers::FrameJob`] reports it, for callers that evaluate poses on the GPU
/// (which removes root motion from the pose but reports none). Character `i`'s base layer is
/// `programs[i * num_layers]`; the root is joint 0. `out[i]` gets the travel of the samples
/// the base layer shows (both sides during a crossfade) when its program has
/// [`LayerProgram::ROOT_MOTION`], zero otherwise. Translation is in the character's model
/// space: rotate it by the character's heading before adding it to its position.
///
/// ```
/// use std::sync::Arc;
/// use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
/// use throng::eval::root_motion::{crowd_root_motion, RootDelta};
/// use throng::graph::CompiledGraph;
/// use throng::state::Crowd;
///
/// let demo = DemoCharacter::humanoid();
/// let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH)?))?;
/// let mut crowd = Crowd::new();
/// let kind = crowd.add_archetype(bound.archetype.clone());
/// let walker = crowd.spawn(kind)?;
/// let speed = crowd.param(kind, "speed")?;
/// crowd.set_float(speed, &[walker], &[1.5])?;
/// let mut travel = [RootDelta::default()];
/// let mut forward_m = 0.0;
/// for _ in 0..120 {
///     crowd.update(1.0 / 60.0)?;
///     crowd_root_motion(&bound.clips, crowd.samples(kind)?, crowd.programs(kind)?, bound.layers.len(), &mut travel)?;
///     forward_m += travel[0].translation.z;
/// }
/// // Two seconds, mostly at walking pace (1.5 m/s) after a quarter-second blend from idle.
/// assert!((2.0..3.0).contains(&forward_m), "{forward_m}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`EvalError::RootMotionCount`] when `out` does not hold one entry per character
/// (`programs.len() / num_layers`), and the programs' checks shared with both evaluators
/// ([`crate::program::validate_layer_programs`]) as [`EvalError::Program`]; nothing is written
/// then.
pub fn crowd_root_motion(
    clips: &[Clip],
    samples: &[ClipSample],
    programs: &[LayerProgram],
    num_layers: usize,
    out: &mut [RootDelta],
) -> Result<(), EvalError> {
    validate_layer_programs(programs, num_layers, samples, clips.len())?;
    let characters = programs.len() / num_layers;
    if out.len() != characters {
        return Err(EvalError::RootMotionCount { got: out.len(), characters });
    }
    out.par_iter_mut().zip(programs.par_chunks(num_layers)).with_min_len(ROOT_MOTION_CHUNK).for_each(
        |(delta, layers)| {
            *delta = layers.first().map_or_else(RootDelta::default, |base| program_root_delta(clips, samples, base));
        },
    );
    Ok(())
}

/// [`crowd_root_motion`] from the state step's records (`state::Crowd::record_frame`, with
/// `Archetype::expansion`'s tables and trees) instead of its programs: each character's base layer alone is expanded
/// ([`crate::program::expand_layer`], the one expansion), and only where its record extracts
/// root motion, so a caller expanding records on the GPU (`GpuCrowd::set_frame_records`) never
/// expands the crowd's other layers on the CPU. `out[i]` is what [`crowd_root_motion`] gives on
/// the programs `Crowd::programs` expands from the same records, bit for bit.
///
/// # Errors
/// [`EvalError::RootMotionCount`] when `out` is not one entry per character;
/// [`crate::eval::expand::ExpandJob::validate`]'s checks of the tables, trees and the frame's
/// inputs, records, shot records and clock ([`EvalError::Expand`]), a leaf playing a clip past `clips`
/// ([`ExpandError::LeafClip`]), and [`crate::program::validate_records`]' ([`EvalError::Program`]);
/// nothing is written then.
pub fn records_root_motion(
    clips: &[Clip],
    tables: &ExpandTables,
    trees: &BlendTrees,
    frame: &RecordFrame<'_>,
    out: &mut [RootDelta],
) -> Result<(), EvalError> {
    let (records, shots, inputs, clock) = (frame.records(), frame.shots(), frame.inputs(), frame.clock());
    validate_records_frame(tables, trees, inputs, records, shots, clock, None)?;
    if let Some((leaf, l)) = tables.leaves().iter().enumerate().find(|(_, l)| l.clip as usize >= clips.len()) {
        return Err(ExpandError::LeafClip { leaf, clip: l.clip, num_clips: clips.len() }.into());
    }
    let num_layers = tables.num_layers();
    validate_records(records, shots, num_layers, tables, clips.len(), clock)?;
    let characters = records.len() / num_layers;
    if out.len() != characters {
        return Err(EvalError::RootMotionCount { got: out.len(), characters });
    }
    let num_inputs = trees.num_inputs();
    let slots = tables.layer_slots(0).len();
    out.par_iter_mut().enumerate().with_min_len(ROOT_MOTION_CHUNK).for_each_init(
        || (TreeScratch::new(), vec![ClipSample::default(); slots]),
        |(scratch, samples), (row, delta)| {
            let (base, shot) = (&records[row * num_layers], &shots[row * num_layers]);
            *delta = RootDelta::default();
            if u32::from(base.flags) & LayerProgram::ROOT_MOTION == 0 {
                return;
            }
            let own = &inputs[row * num_inputs..(row + 1) * num_inputs];
            let program = expand_layer(tables, trees, own, clock, base, shot, 0, samples, scratch);
            *delta = program_root_delta(clips, samples, &program);
        },
    );
    Ok(())
}

/// One character's root motion from its base layer's program alone, as the frame evaluator
/// reports it: the shown samples' travel (both sides of a crossfade), zero for a state that
/// does not extract root motion. Animation LOD uses it for characters it does not evaluate.
pub(crate) fn program_root_delta(clips: &[Clip], samples: &[ClipSample], base: &LayerProgram) -> RootDelta {
    if base.flags & LayerProgram::ROOT_MOTION == 0 {
        return RootDelta::default();
    }
    let crossfade = base.switch_mode() == SwitchMode::Crossfade && base.flags & LayerProgram::SOURCE_SNAPSHOT == 0;
    let shown = if crossfade { base.sample_range() } else { base.target_range() };
    samples
        .get(shown.start as usize..shown.end as usize)
        .map_or_else(RootDelta::default, |s| blend_root_delta(clips, s))
}

/// Characters per rayon task in [`crowd_root_motion`]: a character costs a few clip lookups,
/// so small tasks would cost more to schedule than to run.
const ROOT_MOTION_CHUNK: usize = 1024;

fn wrap_angle(a: f32) -> f32 {
    (a + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI
}

/// Removes the root's horizontal translation and yaw from a pose, leaving height, pitch and
/// roll, so that the caller's transform (moved by [`RootDelta`]s) places the character.
pub fn remove_root_motion(pose: &mut [Transform], root: usize) {
    if let Some(r) = pose.get_mut(root) {
        r.translation.x = 0.0;
        r.translation.z = 0.0;
        r.rotation = (heading_inverse(r.rotation) * r.rotation).normalize();
    }
}

/// The rotation about +Y that undoes `q`'s heading: `Quat::from_rotation_y(-yaw_of(q))`,
/// computed without a trigonometric function (`shaders/transition.wgsl` runs the same
/// arithmetic once the axis is rotated). With `f` the rotated +Z axis and `len` its length in the XZ plane, half the
/// heading's sine and cosine are `(f.x, len + f.z)` normalised; where `f.z < 0` the same
/// direction is written `±(len − f.z, f.x)`, so that nothing cancels near a half turn. The
/// identity where the axis is vertical (no heading).
///
/// ```
/// use glam::Quat;
/// use throng::eval::root_motion::{heading_inverse, yaw_of};
///
/// let q = Quat::from_rotation_y(2.5) * Quat::from_rotation_x(0.3);
/// let by_angle = Quat::from_rotation_y(-yaw_of(q));
/// assert!(heading_inverse(q).abs_diff_eq(by_angle, 1e-6));
/// ```
#[must_use]
pub fn heading_inverse(q: Quat) -> Quat {
    let f = q * Vec3::Z;
    let len = (f.x * f.x + f.z * f.z).sqrt();
    let sign = if f.x < 0.0 { -1.0 } else { 1.0 };
    let (sin, cos) = if f.z < 0.0 { ((len - f.z) * sign, f.x * sign) } else { (f.x, len + f.z) };
    let h = Quat::from_xyzw(0.0, -sin, 0.0, cos);
    let len2 = h.length_squared();
    if len2 > 0.0 { h * len2.sqrt().recip() } else { Quat::IDENTITY }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One joint walking +Z at 1.5 m/s for a 1.2 s loop, turning 0.3 rad per loop.
    fn walk(looping: bool) -> Clip {
        let poses = (0..=36)
            .map(|f| {
                let t = f as f32 / 30.0;
                Transform::from_translation_rotation(Vec3::new(0.0, 0.9, 1.5 * t), Quat::from_rotation_y(0.25 * t))
            })
            .collect();
        Clip::from_poses("walk", 1, poses, 1.2, looping).unwrap()
    }

    #[test]
    fn accumulates_across_loops() {
        let clip = walk(true);
        let d = clip_root_delta(&clip, 0, 0.0, 1.2 * 3.0);
        assert!((d.translation.z - 1.5 * 3.6).abs() < 1e-4, "{d:?}");
        assert!((d.yaw - 0.3 * 3.0).abs() < 1e-4, "{d:?}");
        // Steps of one frame across the wrap sum to the same thing: no pop at the wrap.
        let mut sum = RootDelta::default();
        let dt = 1.0 / 60.0;
        for i in 0..216 {
            sum = sum + clip_root_delta(&clip, 0, i as f32 * dt, (i + 1) as f32 * dt);
        }
        assert!((sum.translation.z - 1.5 * 3.6).abs() < 1e-3, "{sum:?}");
    }

    #[test]
    fn clamped_clip_stops_at_its_end() {
        let d = clip_root_delta(&walk(false), 0, 1.0, 5.0);
        assert!((d.translation.z - 0.3).abs() < 1e-4);
    }

    /// Every heading, a half turn either way and a hair from it included, with pitch and roll
    /// under it: the same rotation as the angle's, to float precision.
    #[test]
    fn heading_inverse_matches_the_heading_angle() {
        let pi = std::f32::consts::PI;
        let yaws = (-32..=32).map(|i| i as f32 * pi / 32.0).chain([pi - 1e-6, 1e-7, -1e-7, -pi + 1e-6]);
        for yaw in yaws {
            for tilt in [Quat::IDENTITY, Quat::from_rotation_x(0.4) * Quat::from_rotation_z(-0.3)] {
                let q = Quat::from_rotation_y(yaw) * tilt;
                let by_angle = Quat::from_rotation_y(-yaw_of(q));
                let h = heading_inverse(q);
                let aligned = if h.dot(by_angle) < 0.0 { -by_angle } else { by_angle };
                let error = (h - aligned).length();
                assert!(error < 1e-6, "yaw {yaw}: {h:?} against {by_angle:?} ({error})");
                assert!(h.w >= 0.0, "yaw {yaw}: the short way round, as the angle's");
            }
        }
        // Facing (nearly) straight up or down: whatever heading rounding leaves, a unit rotation.
        for pitch in [std::f32::consts::FRAC_PI_2, -std::f32::consts::FRAC_PI_2] {
            let h = heading_inverse(Quat::from_rotation_x(pitch));
            assert!((h.length() - 1.0).abs() < 1e-6 && h.x == 0.0 && h.z == 0.0, "{h:?}");
        }
    }

    #[test]
    fn removal_keeps_height_and_drops_heading() {
        let mut pose = [Transform::from_translation_rotation(
            Vec3::new(1.0, 0.9, 2.0),
            Quat::from_rotation_y(0.7) * Quat::from_rotation_x(0.2),
        )];
        remove_root_motion(&mut pose, 0);
        assert_eq!(pose[0].translation, Vec3::new(0.0, 0.9, 0.0));
        assert!(yaw_of(pose[0].rotation).abs() < 1e-5);
        assert!(pose[0].rotation.angle_between(Quat::from_rotation_x(0.2)) < 1e-5);
    }
}
