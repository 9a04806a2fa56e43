//! BVH (Biovision Hierarchy) import: a motion-capture file into one [`Rig`] and one [`Clip`].
//!
//! A BVH file has two sections:
//!
//! ```text
//! HIERARCHY
//! ROOT Hips                       ← a joint (JOINT inside a block)
//! {
//!   OFFSET 0 0 0                  ← rest translation from the parent, file units
//!   CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
//!   JOINT Chest { … }
//!   End Site { OFFSET 0 10 0 }    ← a bone tip, not a joint
//! }
//! MOTION
//! Frames: 2
//! Frame Time: 0.033333
//! 0 90 0  0 0 0  …                ← one value per channel, in hierarchy order
//! 0 90 1  5 0 0  …
//! ```
//!
//! How the importer reads it (the choices DESIGN.md fixes, then what users of Blender expect):
//!
//! | item | reading |
//! |---|---|
//! | joints | every ROOT and JOINT, in file order (so parents precede children); several ROOTs give several roots |
//! | End Site | skipped: it only marks where the last bone ends |
//! | rest pose | translation = `OFFSET × unit_scale`, identity rotation; inverse binds derived from it |
//! | rotation channels | degrees, composed in the order CHANNELS lists them: `Zrotation Xrotation Yrotation` gives `Rz · Rx · Ry` |
//! | position channels | each replaces the matching OFFSET component ([`PositionChannels::Replace`], Blender's reading) or is added to it ([`PositionChannels::Add`]); scaled by `unit_scale` |
//! | joints without position channels | keep OFFSET as their translation in every frame |
//! | root motion | stays in the root joint's translation track |
//! | frames | already uniform: frame `i` is at `i × Frame Time`; the clip lasts `(Frames − 1) × Frame Time` |
//!
//! The text is read leniently where exporters differ and strictly where a mistake would shift
//! data silently: keywords and channel names ignore ASCII case; LF, CRLF and CR line ends, tabs
//! and blank lines are all accepted; a joint's name is the rest of its line (up to a `{` that opens its block there). A joint's channel
//! names must sit on its CHANNELS line, and each frame normally sits on one line; a frame may
//! wrap onto several lines, but must end at a line end, so that a frame with a value missing or
//! one too many is reported at its own line rather than as a short last frame.
//!
//! This file is long on purpose (about 860 lines): it reads one file format top to bottom in the
//! file's own order (hierarchy, then motion, then the conversion to a rig and a clip), and each
//! part is short and only makes sense beside the others' line-numbered errors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::{DQuat, DVec3};

use super::{FileError, MAX_FILE_BYTES, read_regular_file};
use crate::clip::{Clip, ClipError, MAX_FRAMES};
use crate::rig::{MAX_JOINTS, Rig, RigError, Transform};

/// How a joint's position channels combine with its OFFSET.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PositionChannels {
    /// Each position channel replaces the matching component of the OFFSET, so the channels
    /// hold the joint's whole local position (Blender's reading, and the usual one for a root
    /// whose OFFSET is zero). Components without a channel keep the OFFSET's value.
    #[default]
    Replace,
    /// Position channels are added to the OFFSET: the channels hold a displacement from the
    /// rest position. Some exporters write files meant to be read this way.
    Add,
}

/// How to read a BVH file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhOptions {
    /// Metres per file unit, multiplying every OFFSET and position channel: 1.0 (the default)
    /// for files in metres, 0.01 for files in centimetres. Must be positive and finite.
    pub unit_scale: f32,
    /// How position channels combine with OFFSETs; [`PositionChannels::Replace`] by default.
    pub position_channels: PositionChannels,
    /// The loop flag of the imported clip; true by default.
    pub looping: bool,
}

impl Default for BvhOptions {
    fn default() -> Self {
        Self { unit_scale: 1.0, position_channels: PositionChannels::Replace, looping: true }
    }
}

/// What a BVH file yields: its skeleton and its motion.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhAsset {
    /// One joint per ROOT/JOINT, in file order; End Sites are not joints.
    pub rig: Rig,
    /// Every frame of the MOTION section for every joint of [`BvhAsset::rig`], named after the
    /// file's stem ([`load_bvh`]) or `"bvh"` ([`parse_bvh`]).
    pub clip: Clip,
    /// Seconds between frames, as the file's `Frame Time:` line says; positive.
    pub frame_time_s: f32,
    /// Frames in the file, at least 1 (one frame is a static pose of duration 0).
    pub num_frames: usize,
}

/// Why a BVH file was refused. Line numbers count from 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BvhError {
    /// The file could not be read.
    #[error("cannot read BVH file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The path names a folder, device, FIFO or socket, not a regular file.
    #[error("cannot read BVH file {path}: not a regular file (a folder, device, FIFO or socket)")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("cannot read BVH file {path}: {bytes} bytes is over the {max_bytes}-byte limit")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// [`MAX_FILE_BYTES`].
        max_bytes: u64,
    },
    /// [`BvhOptions::unit_scale`] is zero, negative or not finite.
    #[error("unit scale {unit_scale} is not positive and finite")]
    InvalidUnitScale {
        /// The scale given.
        unit_scale: f32,
    },
    /// A word that does not belong where it stands.
    #[error("line {line}: expected {expected}, found {found:?}")]
    UnexpectedToken {
        /// Where the word is.
        line: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// The word found.
        found: String,
    },
    /// The file ends early (a truncated file).
    #[error("line {line}: the file ends where {expected} was expected (truncated?)")]
    UnexpectedEof {
        /// The file's last line.
        line: usize,
        /// What was still expected.
        expected: &'static str,
    },
    /// A word that should be a number is not one, is not finite, or does not fit once scaled.
    #[error("line {line}: {text:?} is not {what}")]
    BadNumber {
        /// Where the word is.
        line: usize,
        /// The word.
        text: String,
        /// What kind of number was expected.
        what: &'static str,
    },
    /// A joint's rest position in model space (its OFFSET plus its ancestors', after
    /// `unit_scale`) is beyond `f32` range, though each OFFSET alone is within it.
    #[error(
        "line {line}: joint {joint:?}'s rest position {position_m:?} m (its OFFSET plus its ancestors') is beyond f32 range"
    )]
    RestOutOfRange {
        /// The joint's OFFSET line.
        line: usize,
        /// The joint.
        joint: String,
        /// The position, metres, summed in f64.
        position_m: [f64; 3],
    },
    /// A CHANNELS line names something other than `X/Y/Z` + `position`/`rotation`.
    #[error(
        "line {line}: joint {joint:?} has unknown channel {channel:?} (expected Xposition, Yposition, Zposition, Xrotation, Yrotation or Zrotation)"
    )]
    UnknownChannel {
        /// The CHANNELS line.
        line: usize,
        /// The joint.
        joint: String,
        /// The unknown name.
        channel: String,
    },
    /// A CHANNELS line's count disagrees with the names after it, or is over 6.
    #[error(
        "line {line}: joint {joint:?} declares {declared} channels and lists {listed} (a joint has 0 to 6, all on its CHANNELS line)"
    )]
    ChannelCount {
        /// The CHANNELS line.
        line: usize,
        /// The joint.
        joint: String,
        /// The count the line declares.
        declared: usize,
        /// The names it lists.
        listed: usize,
    },
    /// A joint lists the same channel twice.
    #[error("line {line}: joint {joint:?} lists channel {channel:?} twice")]
    DuplicateChannel {
        /// The CHANNELS line.
        line: usize,
        /// The joint.
        joint: String,
        /// The repeated channel.
        channel: String,
    },
    /// A joint has a second CHANNELS or OFFSET line.
    #[error("line {line}: joint {joint:?} has a second {keyword} line")]
    Repeated {
        /// The second line.
        line: usize,
        /// The joint.
        joint: String,
        /// `"OFFSET"` or `"CHANNELS"`.
        keyword: &'static str,
    },
    /// A joint's block closes without an OFFSET.
    #[error("line {line}: joint {joint:?} has no OFFSET")]
    MissingOffset {
        /// The joint's ROOT/JOINT line.
        line: usize,
        /// The joint.
        joint: String,
    },
    /// Two joints share a name, so neither could be found by name.
    #[error("line {line}: joint name {name:?} is already used on line {first_line}")]
    DuplicateJoint {
        /// The second joint's line.
        line: usize,
        /// The shared name.
        name: String,
        /// The first joint's line.
        first_line: usize,
    },
    /// `Frames: 0`: a clip needs at least one frame.
    #[error("line {line}: the file declares no frames")]
    NoFrames {
        /// The `Frames:` line.
        line: usize,
    },
    /// `Frames:` declares more frames than a clip may hold; refused before anything is
    /// allocated for them.
    #[error("line {line}: {frames} frames declared; at most {max} are supported")]
    TooManyFrames {
        /// The `Frames:` line.
        line: usize,
        /// The count declared.
        frames: u64,
        /// [`MAX_FRAMES`].
        max: usize,
    },
    /// `Frame Time:` is zero or negative (NaN and infinity are [`BvhError::BadNumber`]).
    #[error("line {line}: frame time {frame_time_s} s is not positive")]
    BadFrameTime {
        /// The `Frame Time:` line.
        line: usize,
        /// The value read, seconds.
        frame_time_s: f64,
    },
    /// A frame holds fewer or more values than the joints have channels.
    #[error("line {line}: frame {frame} has {found} values; every frame has {expected}, one per channel")]
    FrameValues {
        /// The frame's index, from 0.
        frame: usize,
        /// The line the frame starts on.
        line: usize,
        /// The total channel count of the hierarchy.
        expected: usize,
        /// Values found for the frame (for a frame that runs into the next line, those before
        /// that line).
        found: usize,
    },
    /// `Frames:` disagrees with the number of frames of data that follow.
    #[error("line {line}: the file declares {declared} frames but holds {found}")]
    FrameCount {
        /// The `Frames:` line.
        line: usize,
        /// The count declared.
        declared: usize,
        /// Frames of data found (whole frames; a partial extra frame counts as one).
        found: usize,
    },
    /// The hierarchy makes an invalid rig, e.g. more than [`MAX_JOINTS`] joints.
    #[error("line {line}: {source}")]
    Rig {
        /// The line of the joint concerned.
        line: usize,
        /// Why the rig was refused.
        #[source]
        source: RigError,
    },
    /// The motion makes an invalid clip (e.g. a duration that overflows).
    #[error("BVH motion: {0}")]
    Clip(#[from] ClipError),
}

/// Reads a BVH file; the clip is named after the file's stem. Bytes that are not UTF-8 (as in
/// Latin-1 joint names) become U+FFFD rather than failing the load. The path must name a
/// regular file of at most [`MAX_FILE_BYTES`] ("Reading files" in `docs/errors.md`).
pub fn load_bvh(path: &Path, options: &BvhOptions) -> Result<BvhAsset, BvhError> {
    let bytes = read_regular_file(path, MAX_FILE_BYTES).map_err(|e| {
        let path = path.to_path_buf();
        match e {
            FileError::Io(source) => BvhError::Io { path, source },
            FileError::NotAFile => BvhError::NotAFile { path },
            FileError::TooLarge { bytes, max_bytes } => BvhError::FileTooLarge { path, bytes, max_bytes },
        }
    })?;
    let name = path.file_stem().map_or_else(|| "bvh".to_owned(), |s| s.to_string_lossy().into_owned());
    parse_named(&String::from_utf8_lossy(&bytes), name, options)
}

/// Parses BVH text; the clip is named `"bvh"`.
///
/// ```
/// use throng::import::bvh::{parse_bvh, BvhOptions};
/// let text = "HIERARCHY
/// ROOT hips
/// {
///   OFFSET 0 0 0
///   CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
///   JOINT spine
///   {
///     OFFSET 0 10 0
///     CHANNELS 3 Zrotation Xrotation Yrotation
///     End Site
///     {
///       OFFSET 0 10 0
///     }
///   }
/// }
/// MOTION
/// Frames: 2
/// Frame Time: 0.5
/// 0 90 0 0 0 0 0 0 0
/// 0 90 50 0 0 0 90 0 0
/// ";
/// let options = BvhOptions { unit_scale: 0.01, ..BvhOptions::default() };
/// let bvh = parse_bvh(text, &options).unwrap();
/// assert_eq!(bvh.rig.names(), ["hips", "spine"]);
/// assert_eq!(bvh.clip.duration_s(), 0.5);
/// // Root motion: the position channels (centimetres) are the root's translation in metres.
/// let hips = bvh.clip.frame(1)[0].translation;
/// assert!((hips - glam::Vec3::new(0.0, 0.9, 0.5)).length() < 1e-6);
/// ```
pub fn parse_bvh(text: &str, options: &BvhOptions) -> Result<BvhAsset, BvhError> {
    parse_named(text, "bvh".to_owned(), options)
}

fn parse_named(text: &str, name: String, options: &BvhOptions) -> Result<BvhAsset, BvhError> {
    let unit_scale = options.unit_scale;
    if !(unit_scale.is_finite() && unit_scale > 0.0) {
        return Err(BvhError::InvalidUnitScale { unit_scale });
    }
    let mut lexer = Lexer::new(text);
    let joints = parse_hierarchy(&mut lexer, f64::from(unit_scale))?;
    check_rest_positions(&joints)?;
    let channels: Vec<Channel> = joints.iter().flat_map(|j| j.channels.iter().copied()).collect();
    let motion = parse_motion(&mut lexer, &channels, f64::from(unit_scale))?;

    let rest: Vec<Transform> = joints.iter().map(|j| Transform::from_translation(j.offset.as_vec3())).collect();
    let rig = Rig::new(
        joints.iter().map(|j| j.name.clone()).collect(),
        joints.iter().map(|j| j.parent).collect(),
        rest.clone(),
        None,
    )
    .map_err(|source| {
        let joint = match &source {
            RigError::ParentNotBefore { joint, .. }
            | RigError::NonFinite { joint, .. }
            | RigError::SingularRest { joint, .. } => Some(*joint),
            RigError::DuplicateName { second, .. } => Some(*second),
            _ => None,
        };
        let line = joint.and_then(|j| joints.get(j)).map_or(1, |j| j.line);
        BvhError::Rig { line, source }
    })?;

    let poses = build_poses(&joints, &rest, &motion, options.position_channels);
    let duration_s = ((motion.num_frames - 1) as f64 * motion.frame_time_s) as f32;
    let clip = Clip::from_poses(name, joints.len(), poses, duration_s, options.looping)?;
    Ok(BvhAsset { rig, clip, frame_time_s: motion.frame_time_s as f32, num_frames: motion.num_frames })
}

/// One word of the file and the line it is on.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    line: usize,
}

/// Splits the text into whitespace-separated words, counting lines; cheap to clone for a peek.
#[derive(Clone)]
struct Lexer<'a> {
    rest: &'a str,
    /// The line the read position is on.
    line: usize,
    /// The line of the last word read: where a truncated file is reported to end, rather than
    /// on the empty line after its final line break.
    last_line: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Self { rest: text.strip_prefix('\u{feff}').unwrap_or(text), line: 1, last_line: 1 }
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.rest.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if !b.is_ascii_whitespace() {
                break;
            }
            // A lone CR is a line end too (classic Mac files); CRLF counts once, at the LF.
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                self.line += 1;
            }
            i += 1;
        }
        let start = i;
        while bytes.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
            i += 1;
        }
        // Both cuts sit next to an ASCII byte or at the end, so they are char boundaries.
        let text = self.rest.get(start..i).unwrap_or_default();
        self.rest = self.rest.get(i..).unwrap_or_default();
        if text.is_empty() {
            return None;
        }
        self.last_line = self.line;
        Some(Token { text, line: self.line })
    }

    fn peek(&self) -> Option<Token<'a>> {
        self.clone().next()
    }

    fn expect(&mut self, expected: &'static str) -> Result<Token<'a>, BvhError> {
        self.next().ok_or(BvhError::UnexpectedEof { line: self.last_line, expected })
    }

    /// Takes the next word, which must be `keyword` (ASCII case ignored).
    fn keyword(&mut self, keyword: &'static str) -> Result<Token<'a>, BvhError> {
        let token = self.expect(keyword)?;
        if token.text.eq_ignore_ascii_case(keyword) {
            Ok(token)
        } else {
            Err(BvhError::UnexpectedToken { line: token.line, expected: keyword, found: token.text.to_owned() })
        }
    }

    /// Takes the words left on `line`.
    fn rest_of_line(&mut self, line: usize) -> Vec<Token<'a>> {
        let mut words = Vec::new();
        while let Some(token) = self.peek().filter(|t| t.line == line) {
            words.push(token);
            self.next();
        }
        words
    }

    fn count_rest(&self) -> usize {
        let mut lexer = self.clone();
        std::iter::from_fn(|| lexer.next()).count()
    }
}

fn finite(token: Token<'_>, what: &'static str) -> Result<f64, BvhError> {
    token.text.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| BvhError::BadNumber {
        line: token.line,
        text: token.text.to_owned(),
        what,
    })
}

/// A length in file units, scaled to metres; it must stay finite as an `f32`.
fn length(token: Token<'_>, unit_scale: f64) -> Result<f64, BvhError> {
    let what = "a finite length (after unit_scale, within f32 range)";
    let metres = finite(token, what)? * unit_scale;
    if (metres as f32).is_finite() {
        Ok(metres)
    } else {
        Err(BvhError::BadNumber { line: token.line, text: token.text.to_owned(), what })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    X,
    Y,
    Z,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Channel {
    Position(Axis),
    Rotation(Axis),
}

impl Channel {
    fn parse(name: &str) -> Option<Self> {
        const NAMES: [(&str, Channel); 6] = [
            ("Xposition", Channel::Position(Axis::X)),
            ("Yposition", Channel::Position(Axis::Y)),
            ("Zposition", Channel::Position(Axis::Z)),
            ("Xrotation", Channel::Rotation(Axis::X)),
            ("Yrotation", Channel::Rotation(Axis::Y)),
            ("Zrotation", Channel::Rotation(Axis::Z)),
        ];
        NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, c)| c)
    }
}

/// A joint as the HIERARCHY section describes it.
struct Joint {
    name: String,
    parent: Option<usize>,
    /// Its ROOT/JOINT line.
    line: usize,
    /// Metres (already scaled).
    offset: DVec3,
    /// Its OFFSET line (0 until read).
    offset_line: usize,
    has_offset: bool,
    has_channels: bool,
    channels: Vec<Channel>,
}

/// The blocks open while reading the hierarchy, innermost last.
enum Open {
    Joint(usize),
    EndSite,
}

fn parse_hierarchy(lexer: &mut Lexer<'_>, unit_scale: f64) -> Result<Vec<Joint>, BvhError> {
    lexer.keyword("HIERARCHY")?;
    let mut joints: Vec<Joint> = Vec::new();
    let mut first_line_of: HashMap<String, usize> = HashMap::new();
    let mut open: Vec<Open> = Vec::new();
    loop {
        let expected = match open.last() {
            None if joints.is_empty() => "ROOT",
            None => "ROOT or MOTION",
            Some(Open::Joint(_)) => "OFFSET, CHANNELS, JOINT, End Site or }",
            Some(Open::EndSite) => "OFFSET or }",
        };
        let token = lexer.expect(expected)?;
        let word = token.text;
        let is = |k: &str| word.eq_ignore_ascii_case(k);
        match open.last() {
            None if is("ROOT") => {
                start_joint(lexer, token, None, &mut joints, &mut first_line_of)?;
                open.push(Open::Joint(joints.len() - 1));
            }
            None if is("MOTION") && !joints.is_empty() => return Ok(joints),
            Some(&Open::Joint(parent)) if is("JOINT") => {
                start_joint(lexer, token, Some(parent), &mut joints, &mut first_line_of)?;
                open.push(Open::Joint(joints.len() - 1));
            }
            Some(&Open::Joint(_)) if is("End") => {
                lexer.keyword("Site")?;
                lexer.keyword("{")?;
                open.push(Open::EndSite);
            }
            Some(&Open::Joint(j)) if is("OFFSET") => {
                let offset = read_offset(lexer, unit_scale)?;
                let joint = joints.get_mut(j).ok_or_else(|| unexpected(token, expected))?;
                if joint.has_offset {
                    return Err(BvhError::Repeated { line: token.line, joint: joint.name.clone(), keyword: "OFFSET" });
                }
                joint.offset = offset;
                joint.offset_line = token.line;
                joint.has_offset = true;
            }
            Some(&Open::Joint(j)) if is("CHANNELS") => {
                let joint = joints.get_mut(j).ok_or_else(|| unexpected(token, expected))?;
                if joint.has_channels {
                    return Err(BvhError::Repeated {
                        line: token.line,
                        joint: joint.name.clone(),
                        keyword: "CHANNELS",
                    });
                }
                joint.channels = read_channels(lexer, token.line, &joint.name)?;
                joint.has_channels = true;
            }
            Some(&Open::Joint(j)) if is("}") => {
                let joint = joints.get(j).ok_or_else(|| unexpected(token, expected))?;
                if !joint.has_offset {
                    return Err(BvhError::MissingOffset { line: joint.line, joint: joint.name.clone() });
                }
                open.pop();
            }
            Some(Open::EndSite) if is("OFFSET") => {
                // The bone tip has no joint; its offset is read only to check it.
                read_offset(lexer, unit_scale)?;
            }
            Some(Open::EndSite) if is("}") => {
                open.pop();
            }
            _ => return Err(unexpected(token, expected)),
        }
    }
}

/// Refuses a joint whose rest position in model space, its OFFSET plus its ancestors', leaves
/// `f32` range: each OFFSET alone is checked as it is read, but a chain of large ones would
/// overflow when the rig derives its inverse binds.
fn check_rest_positions(joints: &[Joint]) -> Result<(), BvhError> {
    let mut model = Vec::with_capacity(joints.len());
    for joint in joints {
        let position = joint.parent.and_then(|p| model.get(p).copied()).unwrap_or(DVec3::ZERO) + joint.offset;
        if !position.as_vec3().is_finite() {
            return Err(BvhError::RestOutOfRange {
                line: joint.offset_line,
                joint: joint.name.clone(),
                position_m: position.to_array(),
            });
        }
        model.push(position);
    }
    Ok(())
}

fn unexpected(token: Token<'_>, expected: &'static str) -> BvhError {
    BvhError::UnexpectedToken { line: token.line, expected, found: token.text.to_owned() }
}

/// Reads a joint's name (the rest of the ROOT/JOINT line) and its opening brace.
fn start_joint(
    lexer: &mut Lexer<'_>,
    keyword: Token<'_>,
    parent: Option<usize>,
    joints: &mut Vec<Joint>,
    first_line_of: &mut HashMap<String, usize>,
) -> Result<(), BvhError> {
    let line = keyword.line;
    // The name runs to the end of the line, or to a `{` opening the block on the same line.
    let mut words = Vec::new();
    while let Some(word) = lexer.peek().filter(|t| t.line == line && t.text != "{") {
        words.push(word.text);
        lexer.next();
    }
    if words.is_empty() {
        return Err(match lexer.peek() {
            Some(next) => unexpected(next, "a joint name"),
            None => BvhError::UnexpectedEof { line: lexer.last_line, expected: "a joint name" },
        });
    }
    let name = words.join(" ");
    lexer.keyword("{")?;
    if joints.len() == MAX_JOINTS {
        return Err(BvhError::Rig { line, source: RigError::TooManyJoints { num_joints: MAX_JOINTS + 1 } });
    }
    if let Some(&first_line) = first_line_of.get(&name) {
        return Err(BvhError::DuplicateJoint { line, name, first_line });
    }
    first_line_of.insert(name.clone(), line);
    joints.push(Joint {
        name,
        parent,
        line,
        offset: DVec3::ZERO,
        offset_line: 0,
        has_offset: false,
        has_channels: false,
        channels: Vec::new(),
    });
    Ok(())
}

fn read_offset(lexer: &mut Lexer<'_>, unit_scale: f64) -> Result<DVec3, BvhError> {
    let mut xyz = [0.0; 3];
    for v in &mut xyz {
        *v = length(lexer.expect("an OFFSET value")?, unit_scale)?;
    }
    Ok(DVec3::from_array(xyz))
}

fn read_channels(lexer: &mut Lexer<'_>, line: usize, joint: &str) -> Result<Vec<Channel>, BvhError> {
    let count = lexer.expect("a channel count")?;
    let declared = count.text.parse::<usize>().map_err(|_| BvhError::BadNumber {
        line: count.line,
        text: count.text.to_owned(),
        what: "a channel count (0 to 6)",
    })?;
    let names = lexer.rest_of_line(count.line);
    if declared > 6 || names.len() != declared {
        return Err(BvhError::ChannelCount { line, joint: joint.to_owned(), declared, listed: names.len() });
    }
    let mut channels: Vec<Channel> = Vec::with_capacity(declared);
    for name in names {
        let channel = Channel::parse(name.text).ok_or_else(|| BvhError::UnknownChannel {
            line,
            joint: joint.to_owned(),
            channel: name.text.to_owned(),
        })?;
        if channels.contains(&channel) {
            return Err(BvhError::DuplicateChannel { line, joint: joint.to_owned(), channel: name.text.to_owned() });
        }
        channels.push(channel);
    }
    Ok(channels)
}

/// The MOTION section: frame-major values, positions already scaled to metres.
struct Motion {
    num_frames: usize,
    frame_time_s: f64,
    values: Vec<f64>,
}

fn parse_motion(lexer: &mut Lexer<'_>, channels: &[Channel], unit_scale: f64) -> Result<Motion, BvhError> {
    // "Frames:" is one word in every exporter seen; "Frames :" is accepted too.
    let frames_word = lexer.expect("Frames:")?;
    let frames_line = frames_word.line;
    if frames_word.text.eq_ignore_ascii_case("Frames") {
        lexer.keyword(":")?;
    } else if !frames_word.text.eq_ignore_ascii_case("Frames:") {
        return Err(unexpected(frames_word, "Frames:"));
    }
    let count = lexer.expect("a frame count")?;
    let declared = count.text.parse::<u64>().map_err(|_| BvhError::BadNumber {
        line: count.line,
        text: count.text.to_owned(),
        what: "a frame count",
    })?;
    if declared == 0 {
        return Err(BvhError::NoFrames { line: frames_line });
    }
    let num_frames = match usize::try_from(declared) {
        Ok(n) if n <= MAX_FRAMES => n,
        _ => return Err(BvhError::TooManyFrames { line: frames_line, frames: declared, max: MAX_FRAMES }),
    };
    lexer.keyword("Frame")?;
    let time_word = lexer.expect("Time:")?;
    if time_word.text.eq_ignore_ascii_case("Time") {
        lexer.keyword(":")?;
    } else if !time_word.text.eq_ignore_ascii_case("Time:") {
        return Err(unexpected(time_word, "Time:"));
    }
    let time = lexer.expect("a frame time")?;
    let frame_time_s = finite(time, "a finite frame time in seconds")?;
    // Checked as f32 too: a time that rounds to 0 would make every frame land at 0 s.
    if !(frame_time_s > 0.0 && (frame_time_s as f32) > 0.0) {
        return Err(BvhError::BadFrameTime { line: time.line, frame_time_s });
    }
    let values = read_frames(lexer, channels, num_frames, frames_line, unit_scale)?;
    Ok(Motion { num_frames, frame_time_s, values })
}

/// Reads `num_frames × channels.len()` values. A frame may span lines but must end at a line
/// end; see the module docs for why.
fn read_frames(
    lexer: &mut Lexer<'_>,
    channels: &[Channel],
    num_frames: usize,
    frames_line: usize,
    unit_scale: f64,
) -> Result<Vec<f64>, BvhError> {
    let per_frame = channels.len();
    if per_frame == 0 {
        return match lexer.next() {
            None => Ok(Vec::new()),
            Some(first) => {
                let found = 1 + lexer.rest_of_line(first.line).len();
                Err(BvhError::FrameValues { frame: 0, line: first.line, expected: 0, found })
            }
        };
    }
    // Each value takes at least two bytes with its separator, which bounds the allocation by
    // the text actually present, whatever `Frames:` claims.
    let capacity = num_frames.saturating_mul(per_frame).min(lexer.rest.len() / 2 + 1);
    let mut values = Vec::with_capacity(capacity);
    let mut frame = 0;
    let mut in_frame = 0;
    let mut frame_line = 0;
    let mut line = 0;
    let mut in_frame_at_line_start = 0;
    while let Some(token) = lexer.next() {
        if frame == num_frames {
            let extra = 1 + lexer.count_rest();
            let found = num_frames + extra.div_ceil(per_frame);
            return Err(BvhError::FrameCount { line: frames_line, declared: num_frames, found });
        }
        if token.line != line {
            line = token.line;
            in_frame_at_line_start = in_frame;
        }
        if in_frame == 0 {
            frame_line = token.line;
        }
        let value = match channels.get(in_frame) {
            Some(Channel::Position(_)) => length(token, unit_scale)?,
            _ => finite(token, "a finite channel value")?,
        };
        values.push(value);
        in_frame += 1;
        if in_frame == per_frame {
            if lexer.peek().is_some_and(|next| next.line == line) {
                let found = if frame_line == line {
                    per_frame + lexer.rest_of_line(line).len()
                } else {
                    in_frame_at_line_start
                };
                return Err(BvhError::FrameValues { frame, line: frame_line, expected: per_frame, found });
            }
            in_frame = 0;
            frame += 1;
        }
    }
    if in_frame > 0 {
        return Err(BvhError::FrameValues { frame, line: frame_line, expected: per_frame, found: in_frame });
    }
    if frame < num_frames {
        return Err(BvhError::FrameCount { line: frames_line, declared: num_frames, found: frame });
    }
    Ok(values)
}

/// Turns the channel values into local poses, frame-major.
fn build_poses(joints: &[Joint], rest: &[Transform], motion: &Motion, mode: PositionChannels) -> Vec<Transform> {
    let per_frame: usize = joints.iter().map(|j| j.channels.len()).sum();
    if per_frame == 0 {
        return rest.iter().copied().cycle().take(rest.len() * motion.num_frames).collect();
    }
    debug_assert_eq!(motion.values.len(), per_frame * motion.num_frames);
    let mut poses = Vec::with_capacity(joints.len() * motion.num_frames);
    for frame in motion.values.chunks_exact(per_frame) {
        let mut values = frame.iter();
        for joint in joints {
            let mut translation = joint.offset;
            let mut rotation = DQuat::IDENTITY;
            for (&channel, &value) in joint.channels.iter().zip(values.by_ref()) {
                match channel {
                    Channel::Position(axis) => {
                        let component = match axis {
                            Axis::X => &mut translation.x,
                            Axis::Y => &mut translation.y,
                            Axis::Z => &mut translation.z,
                        };
                        match mode {
                            PositionChannels::Replace => *component = value,
                            PositionChannels::Add => *component += value,
                        }
                    }
                    Channel::Rotation(axis) => {
                        let radians = value.to_radians();
                        rotation *= match axis {
                            Axis::X => DQuat::from_rotation_x(radians),
                            Axis::Y => DQuat::from_rotation_y(radians),
                            Axis::Z => DQuat::from_rotation_z(radians),
                        };
                    }
                }
            }
            poses.push(Transform::from_translation_rotation(translation.as_vec3(), rotation.normalize().as_quat()));
        }
    }
    poses
}
