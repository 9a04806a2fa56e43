//! Clip sampling and weighted blend: a character's clips at their times, blended into one
//! local pose. Mirrored by `shaders/sample.wgsl`.

use glam::{Quat, Vec4};

use crate::clip::{Clip, FramePair};
use crate::pose::{TransformLanes, quat_dot_lanes};
use crate::program::{ClipSample, LayerProgram, SwitchMode, counted};
use crate::rig::Transform;

/// How a sample list's weights normalise to sum to one, for poses, curves and root motion alike.
pub(crate) struct Normalised {
    total: f32,
    /// What each weight is multiplied by before it is summed and divided: 1, or
    /// [`OVERFLOW_WEIGHT_SCALE`] when the weights summed past `f32::MAX` (each is finite). A power
    /// of two, so it changes no ratio and rounds nothing but weights below `2^-62`, whose shares
    /// are below `2^-190` of such a sum; ordinary weights' arithmetic stays `w / total` bit for
    /// bit. `shaders/sample.wgsl`'s `sum_weights` does the same.
    scale: f32,
}

/// The weights' scale where they sum past `f32::MAX` (`2^-64`): `n` weights of at most
/// `f32::MAX` then sum to at most `n · 2^64`.
const OVERFLOW_WEIGHT_SCALE: f32 = 1.0 / 18_446_744_073_709_551_616.0;

impl Normalised {
    /// Over the weights that count ([`weighs`](crate::program::weighs)); `None` when none does
    /// (no samples, or every weight 0 or subnormal).
    pub(crate) fn of(samples: &[ClipSample]) -> Option<Self> {
        let total: f32 = counted(samples).map(|s| s.weight).sum();
        let normalised = if total.is_infinite() {
            let scale = OVERFLOW_WEIGHT_SCALE;
            Self { total: counted(samples).map(|s| s.weight * scale).sum(), scale }
        } else {
            Self { total, scale: 1.0 }
        };
        (normalised.total > 0.0).then_some(normalised)
    }

    /// `weight`'s share of the total.
    pub(crate) fn share(&self, weight: f32) -> f32 {
        weight * self.scale / self.total
    }
}

/// Samples each of `samples` and blends them into `out` (one transform per joint).
///
/// Weights are normalised to sum to one. Each rotation is brought onto the hemisphere of the
/// running sum before it is added, so blending `q` and `-q` never cancels out. When there are
/// no samples, or no weight counts ([`weighs`](crate::program::weighs): zero and subnormal
/// weights do not), `out` is the rest pose. Inputs are assumed valid (see
/// [`super::EvalCrowdJob::validate`]).
///
/// Full-precision clips are blended one joint at a time (`blend_joints`): each joint's
/// reading is two loads, and the blend's arithmetic is cheapest on the transforms as they come.
/// A list with any compact clip is blended four joints at a time, one per SIMD lane, from each
/// clip's decoding to the final normalisation (`blend_lanes`), so that the decode's lanes
/// become transforms once per character rather than once per sample. Both give the same bits,
/// and both are compiled for AVX where the CPU has it (`with_avx`: no FMA, the same bits).
pub fn sample_blend(clips: &[Clip], samples: &[ClipSample], rest: &[Transform], out: &mut [Transform]) {
    let Some(weights) = Normalised::of(samples) else {
        out.copy_from_slice(rest);
        return;
    };
    if let [only] = samples {
        clips[only.clip as usize].sample(only.time_s, out);
        return;
    }
    // Each closure is inlined into both builds of `with_avx`, not called from them.
    if samples.iter().all(|s| clips[s.clip as usize].compact_format().is_none()) {
        super::with_avx(
            #[inline(always)]
            || blend_joints(clips, samples, &weights, out),
        );
    } else {
        super::with_avx(
            #[inline(always)]
            || blend_lanes(clips, samples, &weights, out),
        );
    }
}

/// The blend of [`sample_blend`] one sample and one joint at a time: the first sample scaled
/// by its share, each next one added with its share, negated where the dot product with the
/// running sum is below zero, and each rotation normalised at the end. The GPU's `blend_add`
/// (`shaders/sample.wgsl`) adds the first sample to a zero sum instead, the same product (but
/// for a negative zero's sign), so that its clip loop has no branch; here the first sample's
/// store spares a pass zeroing `out`.
#[inline(always)]
fn blend_joints(clips: &[Clip], samples: &[ClipSample], weights: &Normalised, out: &mut [Transform]) {
    let mut first = true;
    for s in counted(samples) {
        let clip = &clips[s.clip as usize];
        let w = weights.share(s.weight);
        clip.frame_pair(clip.frame_position(s.time_s, clip.is_looping())).for_each(out, |o, p| {
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

#[inline]
fn accumulate(acc: &mut Transform, p: &Transform, w: f32) {
    acc.translation += p.translation * w;
    acc.scale += p.scale * w;
    let q = Vec4::from(p.rotation);
    let sum = Vec4::from(acc.rotation);
    let signed_w = if sum.dot(q) < 0.0 { -w } else { w };
    acc.rotation = Quat::from_vec4(sum + q * signed_w);
}

/// Samples `blend_lanes` reads in one pass over the joints.
const SAMPLES_PER_PASS: usize = 8;

/// The blend of [`sample_blend`], joint group by joint group: each sample's clip is read four
/// joints at a time ([`Clip::frame_pair`], its per-sample work done once for every joint),
/// weighted and summed in the lanes, and the sum normalised there, so that a joint's
/// transform is assembled once rather than once per sample. Up to [`SAMPLES_PER_PASS`] samples
/// a pass; a longer list carries the running sums in `out` from pass to pass (the lanes'
/// round trip through `out` is exact). The arithmetic is `blend_joints`'s, lane by lane,
/// with glam's order of every sum, so each joint gets its bits.
#[inline(always)]
fn blend_lanes(clips: &[Clip], samples: &[ClipSample], weights: &Normalised, out: &mut [Transform]) {
    let mut pending = counted(samples).peekable();
    let mut first = true;
    while pending.peek().is_some() {
        let mut pass: [Option<(FramePair, Vec4)>; SAMPLES_PER_PASS] = [const { None }; SAMPLES_PER_PASS];
        let mut len = 0;
        for (slot, s) in pass.iter_mut().zip(&mut pending) {
            let clip = &clips[s.clip as usize];
            let pair = clip.frame_pair(clip.frame_position(s.time_s, clip.is_looping()));
            *slot = Some((pair, Vec4::splat(weights.share(s.weight))));
            len += 1;
        }
        let last = pending.peek().is_none();
        for (group, out) in out.chunks_mut(4).enumerate() {
            let mut reads = pass[..len].iter().flatten().map(|(pair, w)| (pair.group(group), *w));
            // The first pass starts from its first sample, a later one from the sums so far.
            let mut sum = match if first { reads.next() } else { None } {
                Some((p, w)) => TransformLanes {
                    translation: p.translation.map(|c| c * w),
                    rotation: p.rotation.map(|c| c * w),
                    scale: p.scale.map(|c| c * w),
                },
                None => {
                    let o = |lane: usize| out.get(lane).unwrap_or(&out[0]);
                    TransformLanes::from_transforms([o(0), o(1), o(2), o(3)])
                }
            };
            for (p, w) in reads {
                for c in 0..3 {
                    sum.translation[c] += p.translation[c] * w;
                    sum.scale[c] += p.scale[c] * w;
                }
                let negative = quat_dot_lanes(&sum.rotation, &p.rotation).cmplt(Vec4::ZERO);
                let signed_w = Vec4::select(negative, -w, w);
                for c in 0..4 {
                    sum.rotation[c] += p.rotation[c] * signed_w;
                }
            }
            if last {
                let length = quat_dot_lanes(&sum.rotation, &sum.rotation).sqrt();
                sum.rotation = sum.rotation.map(|c| c / length);
            }
            for (o, t) in out.iter_mut().zip(sum.to_transforms()) {
                *o = t;
            }
        }
        first = false;
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
/// past the binding's table) counts 0; no samples, or no weight that counts, give 0.
#[must_use]
pub fn blend_curve(clips: &[Clip], samples: &[ClipSample], binding: &CurveBinding) -> f32 {
    let Some(weights) = Normalised::of(samples) else {
        return 0.0;
    };
    let mut value = 0.0;
    for s in counted(samples) {
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

/// Mixes `from` into `pose` in place: `pose = from * (1 - w) + pose * w`, rotations by
/// shortest-path nlerp. `w` is the weight of what `pose` already holds (the destination).
pub fn mix_from(from: &[Transform], w: f32, pose: &mut [Transform]) {
    for (p, a) in pose.iter_mut().zip(from) {
        *p = Transform {
            translation: a.translation.lerp(p.translation, w),
            // glam's `lerp` takes the shortest path and normalises.
            rotation: a.rotation.lerp(p.rotation, w),
            scale: a.scale.lerp(p.scale, w),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::Rig;
    use glam::Vec3;

    /// A 7-joint rig (a group of four and one of three) and four clips of varied rotations on
    /// both hemispheres, translations and scales: two at full precision, the same two compact.
    fn varied_clips() -> (Rig, Vec<Clip>) {
        let joints: usize = 7;
        let rig = Rig::new(
            (0..joints).map(|j| format!("j{j}")).collect(),
            (0..joints).map(|j| j.checked_sub(1)).collect(),
            vec![Transform::IDENTITY; joints],
            None,
        )
        .unwrap();
        let clip = |seed: f32| {
            let poses = (0..31)
                .flat_map(|f| {
                    (0..joints).map(move |j| {
                        let t = f as f32 * 0.21 + j as f32 * 1.7 + seed;
                        let axis = Vec3::new(t.sin(), (1.3 * t).cos(), 0.5).normalize();
                        Transform {
                            translation: Vec3::new(t.cos(), 0.3 * j as f32, (0.7 * t).sin()),
                            rotation: Quat::from_axis_angle(axis, 3.0 * (0.9 * t).sin()),
                            scale: Vec3::splat(1.0 + 0.1 * j as f32),
                        }
                    })
                })
                .collect();
            Clip::from_poses(format!("c{seed}"), joints, poses, 1.0, true).unwrap()
        };
        let full = [clip(0.0), clip(5.0)];
        let compact = full.iter().map(|c| c.compress(&rig, 1e-3).unwrap().0).collect::<Vec<_>>();
        assert!(compact.iter().all(|c| c.compact_format().is_some()));
        (rig, full.into_iter().chain(compact).collect())
    }

    /// The lanes give the one-joint blend's bits: full clips, compact clips and the two mixed,
    /// lists of two to twenty samples (past [`SAMPLES_PER_PASS`], so the sums go round
    /// through `out`), some weights zero, clips on opposite hemispheres.
    #[test]
    fn lane_blend_matches_one_joint_at_a_time() {
        let (rig, clips) = varied_clips();
        let joints = rig.num_joints();
        let mut lanes = vec![Transform::IDENTITY; joints];
        let mut reference = vec![Transform::IDENTITY; joints];
        for len in [2, 3, 8, 9, 20] {
            for case in 0..12u32 {
                let samples: Vec<ClipSample> = (0..len as u32)
                    .map(|i| {
                        let k = case * 31 + i * 7;
                        let weight = if k % 5 == 3 { 0.0 } else { 0.1 + (k % 11) as f32 * 0.3 };
                        ClipSample::new(k % 4, (k % 13) as f32 * 0.137 - 0.4, weight)
                    })
                    .collect();
                let weights = Normalised::of(&samples).expect("a weight above 0");
                blend_lanes(&clips, &samples, &weights, &mut lanes);
                blend_joints(&clips, &samples, &weights, &mut reference);
                for (j, (l, r)) in lanes.iter().zip(&reference).enumerate() {
                    let bits = |t: &Transform| {
                        [t.translation.to_array(), t.scale.to_array()]
                            .concat()
                            .into_iter()
                            .chain(t.rotation.to_array())
                            .map(f32::to_bits)
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bits(l), bits(r), "{samples:?}, joint {j}: {l:?} against {r:?}");
                }
            }
        }
    }

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
