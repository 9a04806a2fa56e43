//! Compact clip storage: quantised rotations and translations, chosen per clip against an
//! error bound in model space. Decoded per joint by `Clip` on the CPU and by
//! `shaders/shared/compact.wgsl` on the GPU, with the same arithmetic.
//!
//! One joint-frame is a little-endian bit stream of whole `u32` words (`docs/compression.md`):
//!
//! ```text
//! bit 0      2      3          3+k        3+2k       3+3k       3+3k+m     3+3k+2m
//!     │ index│ sign │ a (k)    │ b (k)    │ c (k)    │ tx (m)   │ ty (m)   │ tz (m)   │ spare
//! ```
//!
//! A joint whose translation never changes over the clip stores no translation bits (most
//! joints of most rigs: only the root travels), so joint-frames differ in size from joint to
//! joint: each joint's range records where its joint-frame starts within a frame.
//!
//! The rotation is "smallest three": `index` names the quaternion's largest component (x, y,
//! z, w), `a b c` are the other three in order, each on `k` bits, and the largest is rebuilt
//! as `√(1 − a² − b² − c²)`, negated when `sign` is set, so that a decoded frame keeps the
//! hemisphere of the frame before it. Each component is range-reduced: quantised between the
//! joint's smallest and largest value of it over the clip (on the frames where it is stored),
//! a range inside `[-1/√2, 1/√2]` and, for most joints, a small part of it, so `k` bits buy
//! far finer steps than the whole range would. Translations are range-quantised the same way,
//! on `m` bits a component. Scale is one value per joint for the whole clip: a clip whose
//! scales change is kept at full precision.

use glam::{BVec4A, Mat4, Quat, UVec4, Vec3, Vec4};

use crate::rig::{Rig, Transform};

/// Bits of a joint-frame's header: the largest component's index (2) and its sign (1).
const HEADER_BITS: u32 = 3;

/// A scale counts as constant when every frame lies within this much (relative to the
/// larger of 1 and the first frame's magnitude) of the first frame's: float noise from an
/// exporter, not animation.
pub const SCALE_TOLERANCE: f32 = 1e-5;

/// The default error bound of [`crate::Clip::compress`]: 0.1 mm (ACL's default), well
/// under a pixel for a human-sized character filling a 4K screen.
pub const DEFAULT_MAX_ERROR_M: f32 = 1e-4;

/// The quantisation of a compact clip: bits per rotation component and per translation
/// component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompactFormat {
    rotation_bits: u8,
    translation_bits: u8,
}

impl CompactFormat {
    /// The formats [`crate::Clip::compress`] tries, in order of what they cost the clip at
    /// hand: the splits that fill a rotation-only joint-frame's 1 word (`k` ≤ 9) or a
    /// translated one's 2 words, then 3 words, then 4, with the most bits each size allows.
    pub const CANDIDATES: [Self; 9] = [
        Self { rotation_bits: 8, translation_bits: 12 },
        Self { rotation_bits: 9, translation_bits: 11 },
        Self { rotation_bits: 9, translation_bits: 16 },
        Self { rotation_bits: 10, translation_bits: 10 },
        Self { rotation_bits: 11, translation_bits: 9 },
        Self { rotation_bits: 12, translation_bits: 8 },
        Self { rotation_bits: 16, translation_bits: 15 },
        Self { rotation_bits: 15, translation_bits: 16 },
        Self { rotation_bits: 16, translation_bits: 16 },
    ];

    /// A format of `rotation_bits` per smallest-three component and `translation_bits` per
    /// translation component, each in `1..=16`; `None` outside that range.
    #[must_use]
    pub fn new(rotation_bits: u32, translation_bits: u32) -> Option<Self> {
        let ok = |b: u32| (1..=16).contains(&b);
        (ok(rotation_bits) && ok(translation_bits))
            .then_some(Self { rotation_bits: rotation_bits as u8, translation_bits: translation_bits as u8 })
    }

    /// Bits per smallest-three rotation component, 1 to 16.
    #[must_use]
    pub fn rotation_bits(self) -> u32 {
        u32::from(self.rotation_bits)
    }

    /// Bits per translation component, 1 to 16.
    #[must_use]
    pub fn translation_bits(self) -> u32 {
        u32::from(self.translation_bits)
    }

    /// Bits one joint-frame uses: 3 of header and 3 rotation components, and 3 translation
    /// components for a joint whose translation changes (`translated`).
    #[must_use]
    pub fn bits_per_joint_frame(self, translated: bool) -> u32 {
        HEADER_BITS + 3 * self.rotation_bits() + if translated { 3 * self.translation_bits() } else { 0 }
    }

    /// Whole `u32` words per joint-frame (1 to 4), so every joint-frame starts 4-byte aligned.
    #[must_use]
    pub fn words_per_joint_frame(self, translated: bool) -> usize {
        self.bits_per_joint_frame(translated).div_ceil(32) as usize
    }
}

/// One joint's constants for a whole compact clip: where its rotation components and
/// translations start, the step of one quantum of each, and its one scale. Mirrored on the
/// GPU as five `vec4` (see `shaders/shared/compact.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct JointRange {
    /// Smallest value of each quaternion component (x, y, z, w) over the frames where it is
    /// one of the smallest three.
    pub rotation_min: Vec4,
    /// Per quantum, per component; 0 where the component never changes (or is never stored).
    pub rotation_step: Vec4,
    pub translation_min: Vec3,
    /// Metres per quantum, per component; 0 where the translation never changes.
    pub translation_step: Vec3,
    pub scale: Vec3,
    /// Whether the translation changes over the clip, so that joint-frames store it; when
    /// not, it is `translation_min`.
    pub translated: bool,
    /// Where the joint's joint-frame starts within a frame, in words.
    pub word_offset: u32,
}

/// The index of `q`'s component of largest magnitude (the first, on a tie).
fn largest_component(q: Vec4) -> usize {
    (0..4).fold(0, |best, c| if q[c].abs() > q[best].abs() { c } else { best })
}

/// A clip's frames in a [`CompactFormat`]: per-joint ranges and the packed joint-frames,
/// frame-major like full storage.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CompactPoses {
    pub format: CompactFormat,
    pub num_joints: usize,
    pub ranges: Vec<JointRange>,
    /// Words of one frame: every joint's joint-frame, in joint order.
    pub words_per_frame: usize,
    /// `frame * words_per_frame + ranges[joint].word_offset` is a joint-frame's first word.
    pub words: Vec<u32>,
    /// `ranges` four joints to a group, component by component, for the CPU's decode.
    groups: Vec<RangeGroup>,
}

/// Four joints' [`JointRange`]s laid out for decoding them together, one joint per SIMD lane:
/// each `Vec4` holds one component of the four joints' ranges. The clip's last group repeats
/// its first joint in the lanes past the rig's last joint (decoded, then dropped).
#[derive(Clone, Debug, PartialEq)]
struct RangeGroup {
    /// Joints of the group that exist: 4, or fewer in the last group.
    joints: usize,
    /// Indexed by quaternion component (x, y, z, w).
    rotation_min: [Vec4; 4],
    rotation_step: [Vec4; 4],
    /// Indexed by translation component.
    translation_min: [Vec4; 3],
    translation_step: [Vec4; 3],
    translated: BVec4A,
    word_offset: [u32; 4],
    translated_words: [usize; 4],
    scale: [Vec3; 4],
    /// `scale` by component, one joint per lane.
    scale_lanes: [Vec4; 3],
}

impl RangeGroup {
    fn new(ranges: &[JointRange], format: CompactFormat) -> Self {
        let lane = |i: usize| ranges.get(i).unwrap_or(&ranges[0]);
        let lanes = |f: &dyn Fn(&JointRange) -> f32| Vec4::new(f(lane(0)), f(lane(1)), f(lane(2)), f(lane(3)));
        Self {
            joints: ranges.len(),
            rotation_min: std::array::from_fn(|c| lanes(&|r| r.rotation_min[c])),
            rotation_step: std::array::from_fn(|c| lanes(&|r| r.rotation_step[c])),
            translation_min: std::array::from_fn(|c| lanes(&|r| r.translation_min[c])),
            translation_step: std::array::from_fn(|c| lanes(&|r| r.translation_step[c])),
            translated: BVec4A::new(lane(0).translated, lane(1).translated, lane(2).translated, lane(3).translated),
            word_offset: std::array::from_fn(|i| lane(i).word_offset),
            translated_words: std::array::from_fn(|i| format.words_per_joint_frame(lane(i).translated)),
            scale: std::array::from_fn(|i| lane(i).scale),
            scale_lanes: std::array::from_fn(|c| lanes(&|r| r.scale[c])),
        }
    }
}

/// The `width`-bit field (at most 16 bits) at bit `at` of each lane's joint-frame, as floats;
/// `words[i]` holds word `i` of the four joint-frames. The same field of every lane at once:
/// the format, so every field's place, is the clip's.
#[inline(always)]
fn field_lanes(words: &[UVec4; 4], at: u32, width: u32) -> Vec4 {
    let (word, shift) = ((at / 32) as usize, at % 32);
    let mut bits = words[word] >> shift;
    if shift + width > 32 {
        bits |= words[word + 1] << (32 - shift);
    }
    // Below 2^16, so the signed conversion (one instruction on every SIMD target) is exact.
    (bits & UVec4::splat((1 << width) - 1)).as_ivec4().as_vec4()
}

/// Four joints' joint-frames decoded, component by component, one joint per lane.
#[derive(Clone, Copy)]
struct JointLanes {
    /// Quaternion components x, y, z, w.
    rotation: [Vec4; 4],
    /// Translation components x, y, z, metres.
    translation: [Vec4; 3],
}

/// Where a stored clip's first scale that changes lies.
fn first_animated_scale(poses: &[Transform], num_joints: usize) -> Option<(usize, usize)> {
    let first = poses.get(..num_joints)?;
    poses.chunks_exact(num_joints).enumerate().find_map(|(frame, pose)| {
        pose.iter()
            .zip(first)
            .position(|(p, f)| {
                let tolerance = SCALE_TOLERANCE * f.scale.abs().max_element().max(1.0);
                !((p.scale - f.scale).abs().max_element() <= tolerance)
            })
            .map(|joint| (frame, joint))
    })
}

fn put_bits(words: &mut [u32], bit: u32, width: u32, value: u32) {
    let (w, s) = ((bit / 32) as usize, bit % 32);
    words[w] |= value << s;
    if s + width > 32 {
        words[w + 1] |= value >> (32 - s);
    }
}

/// The largest value `bits` bits hold, as a float.
#[inline]
fn quanta(bits: u32) -> f32 {
    ((1u32 << bits) - 1) as f32
}

/// `value` as the nearest of `bits`-bit steps of `step` above `min`; 0 where the range is
/// empty.
fn quantise(value: f32, min: f32, step: f32, bits: u32) -> u32 {
    if step > 0.0 { ((value - min) / step).round().clamp(0.0, quanta(bits)) as u32 } else { 0 }
}

impl CompactPoses {
    /// Quantises `poses` (frame-major, finite, rotations unit) in `format`. Scales are taken
    /// from frame 0: callers check [`first_animated_scale`] first.
    fn encode(poses: &[Transform], num_joints: usize, format: CompactFormat) -> Self {
        let k = format.rotation_bits();
        let m = format.translation_bits();
        // The `*_step` fields hold each maximum until the steps are worked out below.
        let mut ranges: Vec<JointRange> = poses[..num_joints]
            .iter()
            .map(|p| JointRange {
                rotation_min: Vec4::INFINITY,
                rotation_step: Vec4::NEG_INFINITY,
                translation_min: p.translation,
                translation_step: p.translation,
                scale: p.scale,
                translated: false,
                word_offset: 0,
            })
            .collect();
        for pose in poses.chunks_exact(num_joints) {
            for (r, p) in ranges.iter_mut().zip(pose) {
                r.translation_min = r.translation_min.min(p.translation);
                r.translation_step = r.translation_step.max(p.translation);
                let q = Vec4::from(p.rotation);
                let largest = largest_component(q);
                for c in (0..4).filter(|&c| c != largest) {
                    r.rotation_min[c] = r.rotation_min[c].min(q[c]);
                    r.rotation_step[c] = r.rotation_step[c].max(q[c]);
                }
            }
        }
        let mut words_per_frame = 0;
        for r in &mut ranges {
            r.translated = r.translation_step != r.translation_min;
            r.word_offset = words_per_frame as u32;
            words_per_frame += format.words_per_joint_frame(r.translated);
            r.translation_step = (r.translation_step - r.translation_min) / quanta(m);
            // A component that is the largest on every frame is never stored: range 0.
            let stored = r.rotation_min.cmple(r.rotation_step);
            r.rotation_min = Vec4::select(stored, r.rotation_min, Vec4::ZERO);
            r.rotation_step = Vec4::select(stored, (r.rotation_step - r.rotation_min) / quanta(k), Vec4::ZERO);
        }
        let mut words = vec![0u32; poses.len() / num_joints * words_per_frame];
        for (pose, frame) in poses.chunks_exact(num_joints).zip(words.chunks_exact_mut(words_per_frame)) {
            for (p, r) in pose.iter().zip(&ranges) {
                let out = &mut frame[r.word_offset as usize..];
                let q = Vec4::from(p.rotation);
                let largest = largest_component(q);
                put_bits(out, 0, 2, largest as u32);
                put_bits(out, 2, 1, u32::from(q[largest] < 0.0));
                let mut bit = HEADER_BITS;
                for c in (0..4).filter(|&c| c != largest) {
                    put_bits(out, bit, k, quantise(q[c], r.rotation_min[c], r.rotation_step[c], k));
                    bit += k;
                }
                if r.translated {
                    for c in 0..3 {
                        put_bits(
                            out,
                            bit,
                            m,
                            quantise(p.translation[c], r.translation_min[c], r.translation_step[c], m),
                        );
                        bit += m;
                    }
                }
            }
        }
        let groups = ranges.chunks(4).map(|group| RangeGroup::new(group, format)).collect();
        Self { format, num_joints, ranges, words_per_frame, words, groups }
    }

    /// Joint `joint` of frame `frame` (both in range), decoded: the arithmetic of
    /// `decode_joint` in `shaders/shared/compact.wgsl`, on the joint's group of four.
    pub fn decode(&self, frame: usize, joint: usize) -> Transform {
        self.decode_group(frame, joint / 4)[joint % 4]
    }

    /// Frame `frame`'s joints `4 * group ..` (both in range), decoded together, one joint per
    /// SIMD lane: the arithmetic of `decode_joint` in `shaders/shared/compact.wgsl`, lane by
    /// lane, so each joint decodes to the same bits as the GPU's reading of it. Entries past
    /// the group's joints repeat its first joint.
    #[inline(always)]
    pub(crate) fn decode_group(&self, frame: usize, group: usize) -> [Transform; 4] {
        let lanes = self.decode_lanes(frame, group);
        let [x, y, z, w] = lanes.rotation;
        let quaternion = Mat4::from_cols(x, y, z, w).transpose();
        let [x, y, z] = lanes.translation;
        let translation = Mat4::from_cols(x, y, z, Vec4::ZERO).transpose();
        let scale = &self.groups[group].scale;
        std::array::from_fn(|lane| Transform {
            translation: translation.col(lane).truncate(),
            rotation: Quat::from_vec4(quaternion.col(lane)),
            scale: scale[lane],
        })
    }

    /// The hot path of sampling a compact clip: frame `frame`'s joints `4 * group ..` decoded
    /// into lanes. Each lane's joint-frame words are read once, laid side by side (word `i` of
    /// the four joints in one vector), and every field is a shift and a mask of all four lanes
    /// at once; the floating-point work (range, rebuilt component, sign, which component is the
    /// largest) is lane-wise too, without a branch on any joint's fields.
    #[inline(always)]
    fn decode_lanes(&self, frame: usize, group: usize) -> JointLanes {
        let k = self.format.rotation_bits();
        let m = self.format.translation_bits();
        let g = &self.groups[group];
        let frame_start = frame * self.words_per_frame;
        // Written out rather than with `array::from_fn`, which the compiler kept out of line.
        let lane =
            |lane: usize| self.joint_frame_words(frame_start + g.word_offset[lane] as usize, g.translated_words[lane]);
        let (l0, l1, l2, l3) = (lane(0), lane(1), lane(2), lane(3));
        let word = |i: usize| UVec4::new(l0[i], l1[i], l2[i], l3[i]);
        let words = [word(0), word(1), word(2), word(3)];
        let largest = field_lanes(&words, 0, 2);
        let sign = Vec4::select(field_lanes(&words, 2, 1).cmpeq(Vec4::ONE), Vec4::NEG_ONE, Vec4::ONE);
        // Stored component `i` is quaternion component `i` before the largest and `i + 1` from
        // it on.
        let (min, step) = (&g.rotation_min, &g.rotation_step);
        let stored = |i: usize| {
            let before = largest.cmpgt(Vec4::splat(i as f32));
            let quanta = field_lanes(&words, HEADER_BITS + i as u32 * k, k);
            Vec4::select(before, min[i], min[i + 1]) + quanta * Vec4::select(before, step[i], step[i + 1])
        };
        let (a, b, c) = (stored(0), stored(1), stored(2));
        // Unit to within a quantum: sampling's nlerp and blend normalise what they build, so a
        // second normalisation here would only cost its square root and division. The stored
        // sign negates the rebuilt component (never NaN, and +0 becomes −0 as the sign bit
        // would make it).
        let w = (Vec4::ONE - (a * a + b * b + c * c)).max(Vec4::ZERO).sqrt() * sign;
        let is = |i: f32| largest.cmpeq(Vec4::splat(i));
        let rotation = [
            Vec4::select(is(0.0), w, a),
            Vec4::select(is(0.0), a, Vec4::select(is(1.0), w, b)),
            Vec4::select(is(3.0), c, Vec4::select(is(2.0), w, b)),
            Vec4::select(is(3.0), w, c),
        ];
        let translation = |i: usize| {
            let quanta = field_lanes(&words, HEADER_BITS + 3 * k + i as u32 * m, m);
            Vec4::select(g.translated, g.translation_min[i] + quanta * g.translation_step[i], g.translation_min[i])
        };
        JointLanes { rotation, translation: [translation(0), translation(1), translation(2)] }
    }

    /// The joint-frame of `words` words at `start`, padded to four words.
    ///
    /// Four words whatever the joint-frame's length (the words after it are never among the
    /// fields read), so that the read does not branch on each joint's length; the clip's last
    /// joint-frames take the exact slice.
    #[inline(always)]
    fn joint_frame_words(&self, start: usize, words: usize) -> [u32; 4] {
        match self.words.get(start..start + 4) {
            Some(&[a, b, c, d]) => [a, b, c, d],
            _ => {
                let mut padded = [0; 4];
                padded[..words].copy_from_slice(&self.words[start..start + words]);
                padded
            }
        }
    }

    /// Interpolates frames `f0` and `f1` at `alpha` for every joint and hands each to `visit`
    /// with `out`'s entry for the joint (as [`crate::Clip::interpolate_each`]). Four joints at
    /// a time from decoding to interpolation: [`crate::clip::interpolate_frames`]'s arithmetic
    /// (glam's `lerp` of vectors and `Quat::lerp`, its hemisphere flip and normalisation)
    /// lane-wise, with glam's order of every sum, so each joint gets the bits the one-joint
    /// reading gives.
    #[inline]
    pub(crate) fn interpolate_each(
        &self,
        (f0, f1, alpha): (usize, usize, f32),
        out: &mut [Transform],
        mut visit: impl FnMut(&mut Transform, Transform),
    ) {
        let (from_share, to_share) = (Vec4::splat(1.0 - alpha), Vec4::splat(alpha));
        let lerp = |a: Vec4, b: Vec4| a * from_share + b * to_share;
        // glam's four-component dot product: (x + z) + (y + w).
        let dot = |a: &[Vec4; 4], b: &[Vec4; 4]| (a[0] * b[0] + a[2] * b[2]) + (a[1] * b[1] + a[3] * b[3]);
        for ((group, g), out) in self.groups.iter().enumerate().zip(out.chunks_mut(4)) {
            let (a, b) = (self.decode_lanes(f0, group), self.decode_lanes(f1, group));
            // `Quat::lerp` negates the end where the dot product's sign bit is set.
            let hemisphere = Vec4::ONE.copysign(dot(&a.rotation, &b.rotation));
            let q = |c: usize| lerp(a.rotation[c], b.rotation[c] * hemisphere);
            let q = [q(0), q(1), q(2), q(3)];
            let length = dot(&q, &q).sqrt();
            let rotation = Mat4::from_cols(q[0] / length, q[1] / length, q[2] / length, q[3] / length).transpose();
            let t = |c: usize| lerp(a.translation[c], b.translation[c]);
            let translation = Mat4::from_cols(t(0), t(1), t(2), Vec4::ZERO).transpose();
            let s = |c: usize| lerp(g.scale_lanes[c], g.scale_lanes[c]);
            let scale = Mat4::from_cols(s(0), s(1), s(2), Vec4::ZERO).transpose();
            for (lane, o) in out.iter_mut().enumerate().take(g.joints) {
                visit(
                    o,
                    Transform {
                        translation: translation.col(lane).truncate(),
                        rotation: Quat::from_vec4(rotation.col(lane)),
                        scale: scale.col(lane).truncate(),
                    },
                );
            }
        }
    }

    /// Frames stored.
    pub fn num_frames(&self) -> usize {
        self.words.len() / self.words_per_frame
    }

    /// Every frame decoded, frame-major.
    pub fn decode_all(&self) -> Vec<Transform> {
        (0..self.num_frames()).flat_map(|f| self.decode_frame(f)).collect()
    }

    /// Frame `frame` (in range) decoded.
    pub fn decode_frame(&self, frame: usize) -> Vec<Transform> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(group, g)| self.decode_group(frame, group).into_iter().take(g.joints))
            .collect()
    }
}

/// Model-space joint positions of every frame of `poses`, frame-major; with a `reference`,
/// of each frame applied as an additive delta onto it.
fn model_positions(
    parents: &[u16],
    poses: &[Transform],
    num_joints: usize,
    reference: Option<&[Transform]>,
) -> Vec<Vec3> {
    let mut model = vec![Mat4::IDENTITY; num_joints];
    let mut applied = reference.map(<[Transform]>::to_vec);
    let mut out = Vec::with_capacity(poses.len());
    for pose in poses.chunks_exact(num_joints) {
        // A delta is measured where it is seen: applied at full weight onto its reference.
        let pose = match (&mut applied, reference) {
            (Some(applied), Some(reference)) => {
                applied.copy_from_slice(reference);
                crate::pose::apply_additive(applied, pose, 1.0, None);
                &applied[..]
            }
            _ => pose,
        };
        crate::pose::local_to_model(parents, pose, &mut model);
        out.extend(model.iter().map(|m| m.w_axis.truncate()));
    }
    out
}

/// The largest distance between matching positions, with its index; infinite when a
/// distance is not a number (a quantisation that overflowed).
fn worst_distance(a: &[Vec3], b: &[Vec3]) -> (f32, usize) {
    a.iter().zip(b).enumerate().fold((0.0, 0), |(worst, at), (i, (a, b))| {
        let d = a.distance(*b);
        if d.is_nan() {
            (f32::INFINITY, i)
        } else if d > worst {
            (d, i)
        } else {
            (worst, at)
        }
    })
}

/// Why [`crate::Clip::compress`] kept a clip at full precision.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum KeptFull {
    /// The clip's scale changes: joint `joint` at frame `frame` differs from frame 0 by more
    /// than [`SCALE_TOLERANCE`]. Compact clips hold one scale per joint.
    ScaleAnimated {
        /// The first joint whose scale changes.
        joint: usize,
        /// The first frame where it does.
        frame: usize,
    },
    /// No [`CompactFormat::CANDIDATES`] format keeps every joint within the bound.
    OverBound {
        /// The smallest worst-joint error of any candidate, metres.
        best_error_m: f32,
    },
}

/// What [`crate::Clip::compress`] chose for one clip and the error it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressionReport {
    /// The clip's name.
    pub clip: String,
    /// The bound asked for, metres of model-space joint position.
    pub max_error_m: f32,
    /// The format chosen; `None` when the clip stays at full precision ([`Self::kept_full`]).
    pub format: Option<CompactFormat>,
    /// Bytes one joint-frame takes in the chosen storage, the mean over the joints: each
    /// takes 4 to 16 (less where its translation never changes), or
    /// `size_of::<Transform>()` (48) at full precision.
    pub bytes_per_joint_frame: f32,
    /// Bytes of all frames: joint-frames plus, for a compact clip, its per-joint ranges.
    pub storage_bytes: usize,
    /// Bytes of all frames at full precision, for comparison.
    pub full_storage_bytes: usize,
    /// The largest model-space distance between an original joint and its decoded one over
    /// every joint of every frame, metres; 0 at full precision.
    pub worst_error_m: f32,
    /// The joint of [`Self::worst_error_m`].
    pub worst_joint: usize,
    /// The frame of [`Self::worst_error_m`].
    pub worst_frame: usize,
    /// Why the clip stays at full precision, when it does.
    pub kept_full: Option<KeptFull>,
}

/// The cheapest candidate within `max_error_m` for `poses` (additive deltas against
/// `reference`, when given), or why there is none.
pub(crate) fn choose(
    name: &str,
    rig: &Rig,
    poses: &[Transform],
    reference: Option<&[Transform]>,
    max_error_m: f32,
) -> (Option<CompactPoses>, CompressionReport) {
    let num_joints = rig.num_joints();
    let full_storage_bytes = size_of_val(poses);
    let mut report = CompressionReport {
        clip: name.to_owned(),
        max_error_m,
        format: None,
        bytes_per_joint_frame: size_of::<Transform>() as f32,
        storage_bytes: full_storage_bytes,
        full_storage_bytes,
        worst_error_m: 0.0,
        worst_joint: 0,
        worst_frame: 0,
        kept_full: None,
    };
    if let Some((frame, joint)) = first_animated_scale(poses, num_joints) {
        report.kept_full = Some(KeptFull::ScaleAnimated { joint, frame });
        return (None, report);
    }
    let original = model_positions(rig.parents(), poses, num_joints, reference);
    // Candidates in order of the words a frame of this clip takes in them; for each cost in
    // turn, the candidate with the smallest error is kept if it is within the bound.
    let mut candidates: Vec<(usize, CompactPoses)> = CompactFormat::CANDIDATES
        .into_iter()
        .map(|format| {
            let compact = CompactPoses::encode(poses, num_joints, format);
            (compact.words_per_frame, compact)
        })
        .collect();
    candidates.sort_by_key(|(cost, _)| *cost);
    let mut best_error_m = f32::INFINITY;
    for group in candidates.chunk_by(|a, b| a.0 == b.0) {
        let mut best: Option<(&CompactPoses, f32, usize)> = None;
        for (_, compact) in group {
            let decoded = model_positions(rig.parents(), &compact.decode_all(), num_joints, reference);
            let (error, at) = worst_distance(&original, &decoded);
            if best.is_none_or(|b| error < b.1) {
                best = Some((compact, error, at));
            }
        }
        let Some((compact, error, at)) = best else { continue };
        best_error_m = best_error_m.min(error);
        if error <= max_error_m {
            report.format = Some(compact.format);
            report.bytes_per_joint_frame = (compact.words_per_frame * 4) as f32 / num_joints as f32;
            report.storage_bytes = compact.words.len() * 4 + compact.ranges.len() * size_of::<JointRange>();
            report.worst_error_m = error;
            report.worst_joint = at % num_joints;
            report.worst_frame = at / num_joints;
            return (Some(compact.clone()), report);
        }
    }
    report.kept_full = Some(KeptFull::OverBound { best_error_m });
    (None, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get_bits(words: &[u32], bit: u32, width: u32) -> u32 {
        let (w, s) = ((bit / 32) as usize, bit % 32);
        let mut v = words[w] >> s;
        if s + width > 32 {
            v |= words[w + 1] << (32 - s);
        }
        v & ((1u32 << width) - 1)
    }

    #[test]
    fn bits_round_trip_across_word_boundaries() {
        let mut words = [0u32; 3];
        put_bits(&mut words, 27, 13, 0x1abc);
        put_bits(&mut words, 40, 16, 0xfedc);
        put_bits(&mut words, 0, 2, 3);
        assert_eq!(get_bits(&words, 27, 13), 0x1abc);
        assert_eq!(get_bits(&words, 40, 16), 0xfedc);
        assert_eq!(get_bits(&words, 0, 2), 3);
    }

    #[test]
    fn no_candidate_is_dominated() {
        // A candidate with at least the bits of another at no more words for either kind of
        // joint-frame would make the other pointless.
        let words = |f: CompactFormat| (f.words_per_joint_frame(false), f.words_per_joint_frame(true));
        for (i, a) in CompactFormat::CANDIDATES.iter().enumerate() {
            assert!(a.bits_per_joint_frame(true) <= 32 * words(*a).1 as u32);
            for b in CompactFormat::CANDIDATES.iter().skip(i + 1) {
                for (x, y) in [(a, b), (b, a)] {
                    let dominates = y.rotation_bits() >= x.rotation_bits()
                        && y.translation_bits() >= x.translation_bits()
                        && words(*y).0 <= words(*x).0
                        && words(*y).1 <= words(*x).1;
                    assert!(!dominates, "{y:?} dominates {x:?}");
                }
            }
        }
        assert_eq!(CompactFormat::new(17, 8), None);
        assert_eq!(CompactFormat::new(0, 8), None);
    }

    #[test]
    fn rotations_keep_their_sign_and_land_within_a_quantum() {
        let poses: Vec<Transform> =
            [Quat::from_rotation_x(3.0), -Quat::from_rotation_y(0.3), Quat::from_xyzw(0.5, -0.5, 0.5, -0.5)]
                .into_iter()
                .map(|q| Transform::from_translation_rotation(Vec3::ZERO, q))
                .collect();
        let format = CompactFormat::new(10, 10).unwrap();
        let compact = CompactPoses::encode(&poses, 1, format);
        for (f, p) in poses.iter().enumerate() {
            let got = compact.decode(f, 0).rotation;
            // Half a quantum of the whole range on three components moves the quaternion by
            // at most this much.
            let quantum = std::f32::consts::SQRT_2 / quanta(10);
            assert!(
                (Vec4::from(got) - Vec4::from(p.rotation)).length() < 2.0 * quantum,
                "frame {f}: {got:?} vs {:?}",
                p.rotation
            );
        }
    }

    /// The packed layout read field by field, as the format describes it (a 2-bit largest
    /// component, a sign bit, three rotation fields, then the translation's three when the
    /// joint stores one): the reference `decode`'s shortcuts must agree with, bit for bit.
    fn reference_decode(c: &CompactPoses, frame: usize, joint: usize) -> Transform {
        let (k, m) = (c.format.rotation_bits(), c.format.translation_bits());
        let r = &c.ranges[joint];
        let start = frame * c.words_per_frame + r.word_offset as usize;
        let words = &c.words[start..start + c.format.words_per_joint_frame(r.translated)];
        let largest = get_bits(words, 0, 2) as usize;
        let mut q = [0.0f32; 4];
        let mut stored = Vec3::ZERO;
        for (i, comp) in (0..4).filter(|&comp| comp != largest).enumerate() {
            stored[i] =
                r.rotation_min[comp] + get_bits(words, HEADER_BITS + i as u32 * k, k) as f32 * r.rotation_step[comp];
            q[comp] = stored[i];
        }
        let w = (1.0 - stored.dot(stored)).max(0.0).sqrt();
        q[largest] = if get_bits(words, 2, 1) == 1 { -w } else { w };
        let mut t = r.translation_min;
        if r.translated {
            for i in 0..3 {
                t[i] += get_bits(words, HEADER_BITS + 3 * k + i as u32 * m, m) as f32 * r.translation_step[i];
            }
        }
        Transform { translation: t, rotation: Quat::from_array(q), scale: r.scale }
    }

    /// Four joints interpolated in lanes give each joint the bits of the one-joint reading
    /// (`interpolate_frames` of the two decoded frames), for every candidate format, at
    /// interpolation factors across [0, 1], on frame pairs where rotations change hemisphere.
    #[test]
    fn lane_interpolation_matches_one_joint_at_a_time() {
        let num_joints = 7;
        let poses = varied_poses(num_joints);
        for format in CompactFormat::CANDIDATES {
            let compact = CompactPoses::encode(&poses, num_joints, format);
            for frame in 0..compact.num_frames() {
                // The next frame, and one far off whose rotations lie on other hemispheres.
                for other in [(frame + 1) % compact.num_frames(), (frame + 9) % compact.num_frames()] {
                    for alpha in [0.0, 0.3, 0.5, 0.999, 1.0] {
                        let mut got = vec![Transform::IDENTITY; num_joints];
                        let mut visits = 0;
                        compact.interpolate_each((frame, other, alpha), &mut got, |o, p| {
                            *o = p;
                            visits += 1;
                        });
                        assert_eq!(visits, num_joints, "one visit per joint, none for the padding lanes");
                        for (joint, g) in got.iter().enumerate() {
                            let want = crate::clip::interpolate_frames(
                                &compact.decode(frame, joint),
                                &compact.decode(other, joint),
                                alpha,
                            );
                            assert_eq!(
                                transform_bits(g),
                                transform_bits(&want),
                                "{format:?} frames {frame}/{other} at {alpha}, joint {joint}: {g:?} against {want:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    fn transform_bits(t: &Transform) -> Vec<u32> {
        [t.translation.to_array(), t.scale.to_array()]
            .concat()
            .into_iter()
            .chain(t.rotation.to_array())
            .map(f32::to_bits)
            .collect()
    }

    /// `num_joints` joints over 23 frames: rotations about moving axes (every component the
    /// largest somewhere, both signs), joints 0 and 3 translating, the others not.
    fn varied_poses(num_joints: usize) -> Vec<Transform> {
        (0..23)
            .flat_map(|f| {
                (0..num_joints).map(move |j| {
                    let t = f as f32 * 0.37 + j as f32;
                    let axis = Vec3::new(t.sin(), (1.3 * t).cos(), 0.4 + 0.3 * (0.7 * t).sin()).normalize();
                    let rotation = Quat::from_axis_angle(axis, 3.0 * (0.9 * t).sin() + j as f32);
                    // Joints 0 and 3 translate; the others keep their offset.
                    let translation = if j % 3 == 0 {
                        Vec3::new(t.cos(), 0.1 * t, -0.5 * t.sin())
                    } else {
                        Vec3::new(0.0, 0.2 * j as f32, 0.0)
                    };
                    Transform::from_translation_rotation(translation, rotation)
                })
            })
            .collect()
    }

    /// Every candidate format, on joints that translate and joints that do not, with every
    /// component the largest somewhere and both signs, through the last joint-frames of the clip
    /// (where fewer than four words follow): `decode` equals the field-by-field reading.
    #[test]
    fn decode_matches_a_field_by_field_reading_for_every_format() {
        let num_joints = 5;
        let poses = varied_poses(num_joints);
        let mut largest_seen = [false; 4];
        let mut signs_seen = [false; 2];
        for format in CompactFormat::CANDIDATES {
            let compact = CompactPoses::encode(&poses, num_joints, format);
            assert!(compact.ranges.iter().any(|r| r.translated) && compact.ranges.iter().any(|r| !r.translated));
            for frame in 0..compact.num_frames() {
                for joint in 0..num_joints {
                    let (got, want) = (compact.decode(frame, joint), reference_decode(&compact, frame, joint));
                    assert_eq!(
                        transform_bits(&got),
                        transform_bits(&want),
                        "{format:?} frame {frame} joint {joint}: {got:?} against {want:?}"
                    );
                    let q = Vec4::from(poses[frame * num_joints + joint].rotation);
                    largest_seen[largest_component(q)] = true;
                    signs_seen[usize::from(q[largest_component(q)] < 0.0)] = true;
                }
            }
        }
        assert_eq!(
            (largest_seen, signs_seen),
            ([true; 4], [true; 2]),
            "the poses exercise every largest component and sign"
        );
    }
}
