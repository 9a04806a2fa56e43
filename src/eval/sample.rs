//! Clip sampling and weighted blend: a character's clips at their times, blended into one
//! local pose. Mirrored by `shaders/sample.wgsl`.

use glam::{Quat, Vec4};

use crate::clip::Clip;
use crate::program::{ClipSample, LayerProgram, SwitchMode};
use crate::rig::Transform;

/// How a sample list's weights normalise to sum to one, for poses and curves alike.
struct Normalised {
    total: f32,
    /// The largest weight, when the weights summed past f32::MAX: each is divided by it first,
    /// which brings the sum back into range without changing any ratio (and leaves ordinary
    /// weights' arithmetic as is).
    largest: Option<f32>,
}

impl Normalised {
    /// `None` when the weights sum to 0 (no samples, or all weights 0).
    fn of(samples: &[ClipSample]) -> Option<Self> {
        let total: f32 = samples.iter().map(|s| s.weight).sum();
        let normalised = if total.is_infinite() {
            let largest = samples.iter().map(|s| s.weight).fold(0.0, f32::max);
            Self { total: samples.iter().map(|s| s.weight / largest).sum(), largest: Some(largest) }
        } else {
            Self { total, largest: None }
        };
        (normalised.total > 0.0).then_some(normalised)
    }

    /// `weight`'s share of the total.
    fn share(&self, weight: f32) -> f32 {
        match self.largest {
            Some(largest) => weight / largest / self.total,
            None => weight / self.total,
        }
    }
}

/// Samples each of `samples` and blends them into `out` (one transform per joint).
///
/// Weights are normalised to sum to one. Each rotation is brought onto the hemisphere of the
/// running sum before it is added, so blending `q` and `-q` never cancels out. When there are
/// no samples, or the weights sum to zero, `out` is the rest pose. Inputs are assumed valid
/// (see [`super::EvalCrowdJob::validate`]).
pub fn sample_blend(clips: &[Clip], samples: &[ClipSample], rest: &[Transform], out: &mut [Transform]) {
    let Some(weights) = Normalised::of(samples) else {
        out.copy_from_slice(rest);
        return;
    };
    if let [only] = samples {
        clips[only.clip as usize].sample(only.time_s, out);
        return;
    }
    let mut first = true;
    for s in samples.iter().filter(|s| s.weight > 0.0) {
        let clip = &clips[s.clip as usize];
        let position = clip.frame_position(s.time_s, clip.is_looping());
        let w = weights.share(s.weight);
        // A compact clip decodes each joint of the two frames here, never a whole frame.
        clip.interpolate_each(position, out, |o, p| {
            if first {
                *o = Transform { translation: p.translation * w, rotation: p.rotation * w, scale: p.scale * w };
            } else {
                accumulate(o, &p, w);
            }
        });
        first = false;
    }
    for o in out.iter_mut() {
        o.rotation = o.rotation.normalize();
    }
}

/// Which curve of each clip of a table carries one name ([`CurveBinding::new`]): found once,
/// so that blending reads indices, never names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurveBinding {
    /// Per clip of the table, the index of its curve of that name, if it has one.
    per_clip: Vec<Option<usize>>,
}

impl CurveBinding {
    /// The curve called `name` in each of `clips`.
    #[must_use]
    pub fn new(clips: &[Clip], name: &str) -> Self {
        Self { per_clip: clips.iter().map(|c| c.curve_index(name)).collect() }
    }

    /// Whether any clip has the curve.
    #[must_use]
    pub fn is_bound(&self) -> bool {
        self.per_clip.iter().any(Option::is_some)
    }
}

/// A curve's value over `samples`, blended as [`sample_blend`] blends poses: each sample's
/// clip's value at its time, weighted by the normalised weight. A clip without the curve (or
/// past the binding's table) counts 0; no samples, or weights summing to 0, give 0.
#[must_use]
pub fn blend_curve(clips: &[Clip], samples: &[ClipSample], binding: &CurveBinding) -> f32 {
    let Some(weights) = Normalised::of(samples) else {
        return 0.0;
    };
    let mut value = 0.0;
    for s in samples.iter().filter(|s| s.weight > 0.0) {
        let curve = binding.per_clip.get(s.clip as usize).copied().flatten();
        if let Some(v) = curve.and_then(|c| clips.get(s.clip as usize)?.sample_curve(c, s.time_s)) {
            value += v * weights.share(s.weight);
        }
    }
    value
}

/// Per character, a curve's value on layer `layer` of `programs` (`characters × num_layers`,
/// as `state::Crowd::programs` writes them): blended over the samples the layer shows, both
/// sides of a crossfade by their shares, the destination alone otherwise (a frozen fade or an
/// inertialization shows the new state's curve at once). Writes one value per character.
pub fn layer_curve(
    clips: &[Clip],
    samples: &[ClipSample],
    programs: &[LayerProgram],
    num_layers: usize,
    layer: usize,
    binding: &CurveBinding,
    out: &mut [f32],
) {
    for (value, programs) in out.iter_mut().zip(programs.chunks_exact(num_layers.max(1))) {
        *value = programs.get(layer).map_or(0.0, |p| {
            let crossfade = p.switch_mode() == SwitchMode::Crossfade && p.flags & LayerProgram::SOURCE_SNAPSHOT == 0;
            let range = if crossfade { p.sample_range() } else { p.target_range() };
            samples.get(range.start as usize..range.end as usize).map_or(0.0, |s| blend_curve(clips, s, binding))
        });
    }
}

#[inline]
fn accumulate(acc: &mut Transform, p: &Transform, w: f32) {
    acc.translation += p.translation * w;
    acc.scale += p.scale * w;
    let q = Vec4::from(p.rotation);
    let sum = Vec4::from(acc.rotation);
    let signed_w = if sum.dot(q) < 0.0 { -w } else { w };
    acc.rotation = Quat::from_vec4(sum + q * signed_w);
}

/// Mixes `from` into `pose` in place: `pose = from * (1 - w) + pose * w`, rotations by
/// shortest-path nlerp. `w` is the weight of what `pose` already holds (the destination).
pub fn mix_from(from: &[Transform], w: f32, pose: &mut [Transform]) {
    for (p, a) in pose.iter_mut().zip(from) {
        let qb = if a.rotation.dot(p.rotation) < 0.0 { -p.rotation } else { p.rotation };
        *p = Transform {
            translation: a.translation.lerp(p.translation, w),
            rotation: a.rotation.lerp(qb, w).normalize(),
            scale: a.scale.lerp(p.scale, w),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::Rig;
    use glam::Vec3;

    fn static_clip(name: &str, t: Vec3, q: Quat) -> Clip {
        Clip::from_poses(name, 1, vec![Transform::from_translation_rotation(t, q)], 0.0, true).unwrap()
    }

    #[test]
    fn weights_are_normalised_and_hemispheres_aligned() {
        let q = Quat::from_rotation_y(0.5);
        let clips = [static_clip("a", Vec3::ZERO, q), static_clip("b", Vec3::X * 2.0, -q)];
        let samples = [ClipSample::new(0, 0.0, 3.0), ClipSample::new(1, 0.0, 1.0)];
        let mut out = [Transform::IDENTITY];
        sample_blend(&clips, &samples, &[Transform::IDENTITY], &mut out);
        assert!((out[0].translation.x - 0.5).abs() < 1e-6);
        // -q is the same rotation as q: the blend must be q, not a cancellation.
        assert!(out[0].rotation.angle_between(q) < 1e-4);
    }

    #[test]
    fn zero_weights_show_rest_pose() {
        let rig = Rig::new(vec!["j".into()], vec![None], vec![Transform::from_translation(Vec3::Y)], None).unwrap();
        let clips = [static_clip("a", Vec3::X, Quat::IDENTITY)];
        let mut out = [Transform::IDENTITY];
        sample_blend(&clips, &[ClipSample::new(0, 0.0, 0.0)], rig.rest_pose(), &mut out);
        assert_eq!(out[0].translation, Vec3::Y);
        sample_blend(&clips, &[], rig.rest_pose(), &mut out);
        assert_eq!(out[0].translation, Vec3::Y);
    }
}
