//! Compact clip storage: quantised rotations and translations, chosen per clip against an
//! error bound in model space. Decoded four joints at a time by `Clip` on the CPU and per
//! joint by `shaders/shared/compact.wgsl` on the GPU, with the same arithmetic.
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
//! joint. Within a frame, joints go four to a group, their words side by side: word `i` of
//! the group's four joint-frames is one `[u32; 4]` (a `vec4<u32>` on the GPU), so that the CPU
//! reads word `i` of four joints with one load and decodes them in the SIMD lanes. A group
//! takes as many words as its longest joint-frame; each joint's range records where its first
//! word lies within a frame, its next words 4 apart.
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

use glam::{BVec4A, Mat4, Vec3, Vec4};

use crate::pose::TransformLanes;
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
    /// The joint-frame's first `u32` word within a frame; its next words lie 4 apart (four
    /// joints' words side by side: [`CompactPoses::words`]).
    pub word_offset: u32,
}

/// The index of `q`'s component of largest magnitude (the first, on a tie).
fn largest_component(q: Vec4) -> usize {
    (0..4).fold(0, |best, c| if q[c].abs() > q[best].abs() { c } else { best })
}

/// A clip's frames in a [`CompactFormat`]: per-joint ranges and the packed joint-frames,
/// frame-major like full storage, and within a frame four joints to a group, their words side
/// by side (`docs/compression.md`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CompactPoses {
    pub format: CompactFormat,
    pub num_joints: usize,
    pub ranges: Vec<JointRange>,
    /// Entries of `words` per frame: every group's.
    pub vec4s_per_frame: usize,
    /// The packed frames. Entry `frame * vec4s_per_frame + start + i` of a group starting at
    /// `start` holds word `i` of its four joint-frames, joint `4 * group + lane`'s in `[lane]`;
    /// read as `u32`s, a joint-frame's word `i` is word `4 * frame * vec4s_per_frame +
    /// word_offset + 4 * i` (its range's `word_offset`). A group takes as many entries as its
    /// longest joint-frame has words; the words past a shorter joint-frame's end are zero, and
    /// the lanes past the rig's last joint repeat the group's first joint.
    pub words: Vec<[u32; 4]>,
    /// `ranges` four joints to a group, component by component, for the CPU's decode.
    groups: Vec<RangeGroup>,
    /// Where each field of a joint-frame lies, for the CPU's decode.
    fields: Fields,
}

/// Four joints' [`JointRange`]s laid out for decoding them together, one joint per SIMD lane:
/// each `Vec4` holds one component of the four joints' ranges. The clip's last group repeats
/// its first joint in the lanes past the rig's last joint (decoded, then dropped).
#[derive(Clone, Debug, PartialEq)]
struct RangeGroup {
    /// Joints of the group that exist: 4, or fewer in the last group.
    joints: usize,
    /// The group's first entry in a frame's words.
    start: usize,
    /// Indexed by quaternion component (x, y, z, w).
    rotation_min: [Vec4; 4],
    rotation_step: [Vec4; 4],
    /// Indexed by translation component.
    translation_min: [Vec4; 3],
    translation_step: [Vec4; 3],
    translated: BVec4A,
    /// Whether any of the group's joints stores its translation.
    any_translated: bool,
    /// Indexed by scale component.
    scale: [Vec4; 3],
}

impl RangeGroup {
    fn new(ranges: &[JointRange], start: usize) -> Self {
        let lane = |i: usize| ranges.get(i).unwrap_or(&ranges[0]);
        let lanes = |f: &dyn Fn(&JointRange) -> f32| Vec4::new(f(lane(0)), f(lane(1)), f(lane(2)), f(lane(3)));
        Self {
            joints: ranges.len(),
            start,
            rotation_min: std::array::from_fn(|c| lanes(&|r| r.rotation_min[c])),
            rotation_step: std::array::from_fn(|c| lanes(&|r| r.rotation_step[c])),
            translation_min: std::array::from_fn(|c| lanes(&|r| r.translation_min[c])),
            translation_step: std::array::from_fn(|c| lanes(&|r| r.translation_step[c])),
            translated: BVec4A::new(lane(0).translated, lane(1).translated, lane(2).translated, lane(3).translated),
            any_translated: ranges.iter().any(|r| r.translated),
            scale: std::array::from_fn(|c| lanes(&|r| r.scale[c])),
        }
    }
}

/// Where a `width`-bit field (1 to 16 bits) at bit `at` of a joint-frame lies in its words:
/// the word holding its first bit shifted down, or-ed with the next word shifted up where the
/// field straddles the two, then masked. The same for every joint-frame of the clip, so the
/// decode reads a field of four joints with the same shifts, kept here in the form SSE2's
/// shifts and masks read.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Field {
    /// The word holding the field's first bit (0 to 3).
    word: usize,
    /// The word holding its last bit: `word`, or the next where the field straddles the two.
    next: usize,
    /// Right shift of `word`, in the first lane (the count a shift by a vector reads).
    down: [u32; 4],
    /// Left shift of `next`, in the first lane; 32 where the field does not straddle, which
    /// shifts it out whole.
    up: [u32; 4],
    /// The field's width of ones, in every lane.
    mask: [u32; 4],
}

impl Field {
    const fn new(at: u32, width: u32) -> Self {
        let (word, down) = ((at / 32) as usize, at % 32);
        let straddles = down + width > 32;
        Self {
            word,
            next: if straddles { word + 1 } else { word },
            down: [down, 0, 0, 0],
            up: [if straddles { 32 - down } else { 32 }, 0, 0, 0],
            mask: [(1 << width) - 1; 4],
        }
    }

    /// The field of each lane's joint-frame in `words` (a group's words 0 to 3), as floats.
    #[inline(always)]
    fn read(&self, words: &[[u32; 4]; 4]) -> Vec4 {
        // Below 4 by construction (a joint-frame has at most 4 words); the mask spares a
        // bounds check.
        let (word, next) = (Words::new(words[self.word & 3]), Words::new(words[self.next & 3]));
        word.shr(Shift::new(self.down)).or(next.shl(Shift::new(self.up))).and(Words::new(self.mask)).to_f32()
    }
}

/// The fields of a format's joint-frames past the header: the three stored rotation
/// components, then the translation's three.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fields {
    rotation: [Field; 3],
    translation: [Field; 3],
}

impl Fields {
    /// The fields of `k`-bit rotation and `m`-bit translation components.
    const fn new(k: u32, m: u32) -> Self {
        let (r, t) = (HEADER_BITS, HEADER_BITS + 3 * k);
        Self {
            rotation: [Field::new(r, k), Field::new(r + k, k), Field::new(r + 2 * k, k)],
            translation: [Field::new(t, m), Field::new(t + m, m), Field::new(t + 2 * m, m)],
        }
    }
}

/// Four `u32` lanes (word `i` of a group's four joint-frames) and the integer operations the
/// decode needs: SSE2 on x86_64, which every x86_64 CPU has (LLVM turned the same code on
/// `glam::UVec4` into scalar funnel shifts where the shifts were constants), four scalars
/// elsewhere.
#[cfg(target_arch = "x86_64")]
mod word_lanes {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_castps_si128, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_cvtepi32_ps,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi32, _mm_sll_epi32, _mm_slli_epi32, _mm_srl_epi32,
    };

    use glam::Vec4;

    /// Four `u32`s, one per lane.
    #[derive(Clone, Copy)]
    pub(super) struct Words(__m128i);

    /// A shift of every lane by one count; 32 or more shifts every bit out.
    #[derive(Clone, Copy)]
    pub(super) struct Shift(__m128i);

    impl Shift {
        /// The count in the first lane (the others are zero), as SSE2's shifts read it.
        #[inline(always)]
        pub fn new(count: [u32; 4]) -> Self {
            Self(bytemuck::cast(count))
        }
    }

    impl Words {
        #[inline(always)]
        pub fn new(words: [u32; 4]) -> Self {
            Self(bytemuck::cast(words))
        }

        #[inline(always)]
        pub fn splat(word: u32) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_set1_epi32(word as i32)) }
        }

        #[inline(always)]
        pub fn from_f32_bits(v: Vec4) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_castps_si128(v.into())) }
        }

        #[inline(always)]
        pub fn shr(self, by: Shift) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_srl_epi32(self.0, by.0)) }
        }

        #[inline(always)]
        pub fn shl(self, by: Shift) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_sll_epi32(self.0, by.0)) }
        }

        /// Shifted left by a constant below 32.
        #[inline(always)]
        pub fn shl_by<const BITS: i32>(self) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_slli_epi32::<BITS>(self.0)) }
        }

        #[inline(always)]
        pub fn or(self, other: Self) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_or_si128(self.0, other.0)) }
        }

        #[inline(always)]
        pub fn and(self, other: Self) -> Self {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { Self(_mm_and_si128(self.0, other.0)) }
        }

        /// Each lane converted to a float, exactly for lanes below 2^24 (the signed conversion:
        /// one instruction).
        #[inline(always)]
        pub fn to_f32(self) -> Vec4 {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { _mm_cvtepi32_ps(self.0).into() }
        }

        /// Each lane's bits as a float's.
        #[inline(always)]
        pub fn to_f32_bits(self) -> Vec4 {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { _mm_castsi128_ps(self.0).into() }
        }

        /// Whether every lane equals `other`'s.
        #[inline(always)]
        pub fn all_eq(self, other: Self) -> bool {
            // SAFETY: SSE2 is in x86_64's baseline: every x86_64 CPU has it.
            unsafe { _mm_movemask_epi8(_mm_cmpeq_epi32(self.0, other.0)) == 0xffff }
        }
    }
}

/// Four `u32` lanes (word `i` of a group's four joint-frames) and the integer operations the
/// decode needs: the portable form of the SSE2 module above, lane by lane.
#[cfg(not(target_arch = "x86_64"))]
mod word_lanes {
    use glam::Vec4;

    /// Four `u32`s, one per lane.
    #[derive(Clone, Copy)]
    pub(super) struct Words([u32; 4]);

    /// A shift of every lane by one count; 32 or more shifts every bit out.
    #[derive(Clone, Copy)]
    pub(super) struct Shift(u32);

    impl Shift {
        /// The count in the first lane.
        #[inline(always)]
        pub fn new(count: [u32; 4]) -> Self {
            Self(count[0])
        }
    }

    impl Words {
        #[inline(always)]
        pub fn new(words: [u32; 4]) -> Self {
            Self(words)
        }

        #[inline(always)]
        pub fn splat(word: u32) -> Self {
            Self([word; 4])
        }

        #[inline(always)]
        pub fn from_f32_bits(v: Vec4) -> Self {
            Self(v.to_array().map(f32::to_bits))
        }

        #[inline(always)]
        pub fn shr(self, by: Shift) -> Self {
            Self(self.0.map(|w| w.checked_shr(by.0).unwrap_or(0)))
        }

        #[inline(always)]
        pub fn shl(self, by: Shift) -> Self {
            Self(self.0.map(|w| w.checked_shl(by.0).unwrap_or(0)))
        }

        /// Shifted left by a constant below 32.
        #[inline(always)]
        pub fn shl_by<const BITS: i32>(self) -> Self {
            Self(self.0.map(|w| w << BITS))
        }

        #[inline(always)]
        pub fn or(self, other: Self) -> Self {
            Self(std::array::from_fn(|i| self.0[i] | other.0[i]))
        }

        #[inline(always)]
        pub fn and(self, other: Self) -> Self {
            Self(std::array::from_fn(|i| self.0[i] & other.0[i]))
        }

        /// Each lane converted to a float, exactly for lanes below 2^24.
        #[inline(always)]
        pub fn to_f32(self) -> Vec4 {
            Vec4::from_array(self.0.map(|w| w as i32 as f32))
        }

        /// Each lane's bits as a float's.
        #[inline(always)]
        pub fn to_f32_bits(self) -> Vec4 {
            Vec4::from_array(self.0.map(f32::from_bits))
        }

        /// Whether every lane equals `other`'s.
        #[inline(always)]
        pub fn all_eq(self, other: Self) -> bool {
            self.0 == other.0
        }
    }
}

use word_lanes::{Shift, Words};

/// Four joints' joint-frames decoded, component by component, one joint per lane.
#[derive(Clone, Copy)]
struct JointLanes {
    /// Quaternion components x, y, z, w.
    rotation: [Vec4; 4],
    /// Translation components x, y, z, metres.
    translation: [Vec4; 3],
}

/// Two frames of a compact clip and the factor between them, read four joints at a time
/// ([`CompactPoses::frame_pair`]).
pub(crate) struct FramePair<'a> {
    poses: &'a CompactPoses,
    /// The clip's words from each frame's first on.
    from: &'a [[u32; 4]],
    to: &'a [[u32; 4]],
    alpha: f32,
}

/// Words `start..start + 4` of `frame`, read where they lie; past the clip's end, copied into
/// `tail` and zero-padded: four whatever the group's length (the words after it are never
/// among the fields read), so that the read does not branch on it.
#[inline(always)]
fn group_words<'a>(frame: &'a [[u32; 4]], start: usize, tail: &'a mut [[u32; 4]; 4]) -> &'a [[u32; 4]; 4] {
    match frame.get(start..start + 4).and_then(|w| w.try_into().ok()) {
        Some(words) => words,
        None => {
            for (t, w) in tail.iter_mut().zip(frame.get(start..).unwrap_or_default()) {
                *t = *w;
            }
            tail
        }
    }
}

/// The rebuilt largest component, `√(1 − a² − b² − c²)` given the sign of `sign`'s lanes (the
/// stored sign bit, in a float's sign position): each lane's `sqrt` is at least +0, so setting
/// its sign bit negates it as the stored sign says (+0 becomes −0, as a negation would).
#[inline(always)]
fn rebuilt_component(a: Vec4, b: Vec4, c: Vec4, sign: Words) -> Vec4 {
    let w = (Vec4::ONE - (a * a + b * b + c * c)).max(Vec4::ZERO).sqrt();
    Words::from_f32_bits(w).or(sign).to_f32_bits()
}

impl FramePair<'_> {
    /// Joints of the clip.
    pub fn num_joints(&self) -> usize {
        self.poses.num_joints
    }

    /// Joints `4 * group ..` of both frames, decoded and interpolated in the lanes
    /// ([`crate::clip::interpolate_lanes`]); lanes past the rig's last joint repeat the
    /// group's first joint.
    #[inline(always)]
    pub fn group(&self, group: usize) -> TransformLanes {
        // The decode compiled once for each candidate format, with its fields' places as
        // constants (shifts by an immediate, loads of a known word, no straddle where there is
        // none), and once with the clip's own, for any other.
        macro_rules! specialised {
            ($(($k:literal, $m:literal)),*) => {
                match (self.poses.format.rotation_bits(), self.poses.format.translation_bits()) {
                    $(($k, $m) => self.group_with(group, &const { Fields::new($k, $m) }),)*
                    _ => self.group_with(group, &self.poses.fields),
                }
            };
        }
        specialised!((8, 12), (9, 11), (9, 16), (10, 10), (11, 9), (12, 8), (16, 15), (15, 16), (16, 16))
    }

    /// [`Self::group`] with the format's `fields`.
    #[inline(always)]
    fn group_with(&self, group: usize, fields: &Fields) -> TransformLanes {
        let g = &self.poses.groups[group];
        let (a, b) = (self.decode(self.from, g, fields), self.decode(self.to, g, fields));
        crate::clip::interpolate_lanes(
            &TransformLanes { translation: a.translation, rotation: a.rotation, scale: g.scale },
            &TransformLanes { translation: b.translation, rotation: b.rotation, scale: g.scale },
            self.alpha,
        )
    }

    /// The hot path of sampling a compact clip: one frame's joints of group `g` decoded into
    /// lanes, `frame` the clip's words from the frame's first on. The group's words are read
    /// once, word `i` of the four joints in one vector, and every field is a shift and a mask of
    /// all four lanes at once; the floating-point work (range, rebuilt component, sign, which
    /// component is the largest) is lane-wise too, without a branch on any joint's fields but
    /// one: whether every lane's largest component is w, as it is for most joints of most clips
    /// (a joint within a right angle of its rest orientation on every axis), which skips placing
    /// each lane's components.
    #[inline(always)]
    fn decode(&self, frame: &[[u32; 4]], g: &RangeGroup, fields: &Fields) -> JointLanes {
        let mut tail = [[0; 4]; 4];
        let words = group_words(frame, g.start, &mut tail);
        let header = Words::new(words[0]);
        // The sign bit, bit 2, moved to a float's sign bit.
        let sign = header.shl_by::<29>().and(Words::splat(1 << 31));
        let [qa, qb, qc] = [0, 1, 2].map(|i| fields.rotation[i].read(words));
        let (min, step) = (&g.rotation_min, &g.rotation_step);
        let rotation = if header.and(Words::splat(3)).all_eq(Words::splat(3)) {
            let (a, b, c) = (min[0] + qa * step[0], min[1] + qb * step[1], min[2] + qc * step[2]);
            [a, b, c, rebuilt_component(a, b, c, sign)]
        } else {
            let largest = header.and(Words::splat(3)).to_f32();
            // Stored component `i` is quaternion component `i` before the largest and `i + 1`
            // from it on.
            let stored = |i: usize, quanta: Vec4| {
                let before = largest.cmpgt(Vec4::splat(i as f32));
                Vec4::select(before, min[i], min[i + 1]) + quanta * Vec4::select(before, step[i], step[i + 1])
            };
            let (a, b, c) = (stored(0, qa), stored(1, qb), stored(2, qc));
            let w = rebuilt_component(a, b, c, sign);
            let is = |i: f32| largest.cmpeq(Vec4::splat(i));
            [
                Vec4::select(is(0.0), w, a),
                Vec4::select(is(0.0), a, Vec4::select(is(1.0), w, b)),
                Vec4::select(is(3.0), c, Vec4::select(is(2.0), w, b)),
                Vec4::select(is(3.0), w, c),
            ]
        };
        let translation = if g.any_translated {
            let translation = |i: usize| {
                let quanta = fields.translation[i].read(words);
                Vec4::select(g.translated, g.translation_min[i] + quanta * g.translation_step[i], g.translation_min[i])
            };
            [translation(0), translation(1), translation(2)]
        } else {
            g.translation_min
        };
        JointLanes { rotation, translation }
    }
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
        for r in &mut ranges {
            r.translated = r.translation_step != r.translation_min;
            r.translation_step = (r.translation_step - r.translation_min) / quanta(m);
            // A component that is the largest on every frame is never stored: range 0.
            let stored = r.rotation_min.cmple(r.rotation_step);
            r.rotation_min = Vec4::select(stored, r.rotation_min, Vec4::ZERO);
            r.rotation_step = Vec4::select(stored, (r.rotation_step - r.rotation_min) / quanta(k), Vec4::ZERO);
        }
        // Each group takes its longest joint-frame's words; a joint's words lie 4 apart.
        let mut vec4s_per_frame = 0;
        let mut group_starts = Vec::with_capacity(num_joints.div_ceil(4));
        for ranges in ranges.chunks_mut(4) {
            group_starts.push(vec4s_per_frame);
            for (lane, r) in ranges.iter_mut().enumerate() {
                r.word_offset = (4 * vec4s_per_frame + lane) as u32;
            }
            vec4s_per_frame += ranges.iter().map(|r| format.words_per_joint_frame(r.translated)).max().unwrap_or(0);
        }
        let mut words = vec![[0u32; 4]; poses.len() / num_joints * vec4s_per_frame];
        for (pose, frame) in poses.chunks_exact(num_joints).zip(words.chunks_exact_mut(vec4s_per_frame)) {
            for (joint, (p, r)) in pose.iter().zip(&ranges).enumerate() {
                let mut out = [0u32; 4];
                let q = Vec4::from(p.rotation);
                let largest = largest_component(q);
                put_bits(&mut out, 0, 2, largest as u32);
                put_bits(&mut out, 2, 1, u32::from(q[largest] < 0.0));
                let mut bit = HEADER_BITS;
                for c in (0..4).filter(|&c| c != largest) {
                    put_bits(&mut out, bit, k, quantise(q[c], r.rotation_min[c], r.rotation_step[c], k));
                    bit += k;
                }
                if r.translated {
                    for c in 0..3 {
                        put_bits(
                            &mut out,
                            bit,
                            m,
                            quantise(p.translation[c], r.translation_min[c], r.translation_step[c], m),
                        );
                        bit += m;
                    }
                }
                let start = group_starts[joint / 4];
                for (i, w) in out.iter().enumerate().take(format.words_per_joint_frame(r.translated)) {
                    frame[start + i][joint % 4] = *w;
                }
            }
            // The last group's lanes past the rig's last joint repeat its first joint, as its
            // ranges do.
            if let (Some(&start), 1..) = (group_starts.last(), num_joints % 4) {
                for entry in &mut frame[start..] {
                    let first = entry[0];
                    entry[num_joints % 4..].fill(first);
                }
            }
        }
        let groups = ranges.chunks(4).zip(&group_starts).map(|(group, &start)| RangeGroup::new(group, start)).collect();
        Self { format, num_joints, ranges, vec4s_per_frame, words, groups, fields: Fields::new(k, m) }
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
    fn decode_group(&self, frame: usize, group: usize) -> [Transform; 4] {
        let g = &self.groups[group];
        let lanes =
            self.frame_pair(frame, frame, 0.0).decode(&self.words[frame * self.vec4s_per_frame..], g, &self.fields);
        TransformLanes { translation: lanes.translation, rotation: lanes.rotation, scale: g.scale }.to_transforms()
    }

    /// Frames `f0` and `f1` (in range), to be interpolated at `alpha` four joints at a time.
    #[inline]
    pub(crate) fn frame_pair(&self, f0: usize, f1: usize, alpha: f32) -> FramePair<'_> {
        FramePair {
            poses: self,
            from: &self.words[f0 * self.vec4s_per_frame..],
            to: &self.words[f1 * self.vec4s_per_frame..],
            alpha,
        }
    }

    /// `u32` words of one frame, for the GPU's clip header.
    pub fn words_per_frame(&self) -> usize {
        4 * self.vec4s_per_frame
    }

    /// Frames stored.
    pub fn num_frames(&self) -> usize {
        self.words.len() / self.vec4s_per_frame
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
            (compact.vec4s_per_frame, compact)
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
            report.bytes_per_joint_frame =
                size_of_val(&compact.words[..compact.vec4s_per_frame]) as f32 / num_joints as f32;
            report.storage_bytes = size_of_val(compact.words.as_slice()) + size_of_val(compact.ranges.as_slice());
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
    use glam::Quat;

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
        // A joint-frame's words lie 4 apart among the `u32`s of its frame.
        let start = frame * c.words_per_frame() + r.word_offset as usize;
        let words: Vec<u32> =
            (0..c.format.words_per_joint_frame(r.translated)).map(|i| c.words.as_flattened()[start + 4 * i]).collect();
        let words = words.as_slice();
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
    /// (`interpolate_frames` of the two decoded frames), for every candidate format (each its
    /// own compiled decode) and formats outside them (the decode with the clip's own field
    /// places), at interpolation factors across [0, 1], on frame pairs where rotations change
    /// hemisphere.
    #[test]
    fn lane_interpolation_matches_one_joint_at_a_time() {
        let num_joints = 7;
        let poses = varied_poses(num_joints);
        let others = [(1, 1), (13, 7), (16, 1), (7, 16)].map(|(k, m)| CompactFormat::new(k, m).unwrap());
        assert!(others.iter().all(|f| !CompactFormat::CANDIDATES.contains(f)));
        for format in CompactFormat::CANDIDATES.into_iter().chain(others) {
            let compact = CompactPoses::encode(&poses, num_joints, format);
            for frame in 0..compact.num_frames() {
                // The next frame, and one far off whose rotations lie on other hemispheres.
                for other in [(frame + 1) % compact.num_frames(), (frame + 9) % compact.num_frames()] {
                    for alpha in [0.0, 0.3, 0.5, 0.999, 1.0] {
                        // One entry past the joints, which the lanes must leave alone.
                        let mut got = vec![Transform::IDENTITY; num_joints + 1];
                        crate::clip::FramePair::Compact(compact.frame_pair(frame, other, alpha))
                            .for_each(&mut got[..num_joints], |o, p| *o = p);
                        assert_eq!(got[num_joints], Transform::IDENTITY);
                        for (joint, g) in got[..num_joints].iter().enumerate() {
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

    /// The decode's two readings of a group, every lane's largest component w and not, give
    /// the field-by-field reading's bits: frames whose four first joints all turn less than a
    /// right angle, and frames where one of them turns further, on every candidate format.
    #[test]
    fn decode_matches_a_field_by_field_reading_with_and_without_w_largest_everywhere() {
        let num_joints = 5;
        let poses: Vec<Transform> = (0..16)
            .flat_map(|f| {
                (0..num_joints).map(move |j| {
                    let angle = if f % 2 == 1 && j == 2 { 2.5 } else { 0.3 + 0.1 * j as f32 + 0.02 * f as f32 };
                    let axis = Vec3::new(1.0, j as f32, 0.5 * f as f32).normalize();
                    Transform::from_translation_rotation(Vec3::Y * j as f32, Quat::from_axis_angle(axis, angle))
                })
            })
            .collect();
        let w_largest =
            |frame: usize| (0..4).all(|j| largest_component(Vec4::from(poses[frame * num_joints + j].rotation)) == 3);
        assert!(w_largest(0) && !w_largest(1), "both readings are exercised");
        for format in CompactFormat::CANDIDATES {
            let compact = CompactPoses::encode(&poses, num_joints, format);
            for frame in 0..compact.num_frames() {
                for joint in 0..num_joints {
                    let (got, want) = (compact.decode(frame, joint), reference_decode(&compact, frame, joint));
                    assert_eq!(transform_bits(&got), transform_bits(&want), "{format:?} frame {frame} joint {joint}");
                }
            }
        }
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
