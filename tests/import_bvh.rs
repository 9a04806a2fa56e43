//! BVH import: real motion-capture files checked against values read off their text by hand,
//! forward kinematics against an independent reference, and malformed files against the
//! typed error (and line) each must produce.
//!
//! Reference numbers were worked out with a short Python script that parses the files on its
//! own (plain `split()`, no code shared with the importer) and chains 3×3 rotation matrices
//! and offsets for forward kinematics; the expected quaternions are composed here with glam
//! from the raw degrees copied out of the file.

// Numbers are copied as the files and the reference script write them, digits and all.
#![allow(clippy::excessive_precision)]

mod support;

use std::path::{Path, PathBuf};

use glam::{Mat4, Quat, Vec3};
use support::compare::largest;
use throng::eval::local_to_model::local_to_model;
use throng::import::bvh::{BvhAsset, BvhError, BvhOptions, PositionChannels, load_bvh, parse_bvh};
use throng::{MAX_JOINTS, RigError, Transform};

/// The folder of third-party BVH files, or `None` (with a message) when it is absent and
/// `THRONG_REQUIRE_DATA=1` is not set.
fn data_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/bvh");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("THRONG_REQUIRE_DATA").as_deref() != Ok("1"),
        "THRONG_REQUIRE_DATA=1 but the test data folder {} is missing",
        dir.display()
    );
    eprintln!("skipping: test data folder {} is absent (set THRONG_REQUIRE_DATA=1 to fail instead)", dir.display());
    None
}

fn load(file: &str, options: &BvhOptions) -> Option<BvhAsset> {
    let path = data_dir()?.join(file);
    Some(load_bvh(&path, options).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// `Zrotation Xrotation Yrotation` in degrees, composed in that order.
fn zxy(z: f32, x: f32, y: f32) -> Quat {
    Quat::from_rotation_z(z.to_radians())
        * Quat::from_rotation_x(x.to_radians())
        * Quat::from_rotation_y(y.to_radians())
}

/// `Zrotation Yrotation Xrotation` in degrees, composed in that order.
fn zyx(z: f32, y: f32, x: f32) -> Quat {
    Quat::from_rotation_z(z.to_radians())
        * Quat::from_rotation_y(y.to_radians())
        * Quat::from_rotation_x(x.to_radians())
}

/// Distance between two unit quaternions as rotations (`q` and `-q` are the same rotation).
/// Used instead of `angle_between`, whose `acos` turns one ulp of rounding near 1 into 1e-3 rad.
fn rotation_distance(a: Quat, b: Quat) -> f32 {
    (a - b).length().min((a + b).length())
}

fn assert_rotation(bvh: &BvhAsset, frame: usize, joint: &str, expected: Quat) {
    let j = bvh.rig.find_joint(joint).unwrap_or_else(|| panic!("no joint {joint}"));
    let got = bvh.clip.frame(frame)[j].rotation;
    let distance = rotation_distance(got, expected);
    assert!(distance < 1e-5, "{joint} frame {frame}: rotation {got} vs {expected} ({distance} apart)");
}

fn assert_translation(bvh: &BvhAsset, frame: usize, joint: &str, expected: Vec3, tolerance: f32) {
    let j = bvh.rig.find_joint(joint).unwrap_or_else(|| panic!("no joint {joint}"));
    let got = bvh.clip.frame(frame)[j].translation;
    assert!(got.abs_diff_eq(expected, tolerance), "{joint} frame {frame}: translation {got} vs {expected}");
}

fn assert_parent(bvh: &BvhAsset, joint: &str, parent: &str) {
    let j = bvh.rig.find_joint(joint).unwrap_or_else(|| panic!("no joint {joint}"));
    let p = bvh.rig.parent(j).map(|p| bvh.rig.names()[p].as_str());
    assert_eq!(p, Some(parent), "parent of {joint}");
}

/// Samples the clip at `frame`'s time and returns each joint's model-space position.
fn model_positions_at_frame(bvh: &BvhAsset, frame: usize) -> Vec<Vec3> {
    let mut local = vec![Transform::IDENTITY; bvh.rig.num_joints()];
    bvh.clip.sample(frame as f32 * bvh.frame_time_s, &mut local);
    let mut model = vec![Mat4::IDENTITY; bvh.rig.num_joints()];
    local_to_model(bvh.rig.parents(), &local, &mut model);
    model.iter().map(|m| m.w_axis.truncate()).collect()
}

fn assert_model_position(bvh: &BvhAsset, model: &[Vec3], joint: &str, expected: Vec3, tolerance: f32) {
    let j = bvh.rig.find_joint(joint).unwrap_or_else(|| panic!("no joint {joint}"));
    assert!(model[j].abs_diff_eq(expected, tolerance), "{joint}: model position {} vs {expected}", model[j]);
}

#[test]
fn mocapbank_hierarchy_and_motion() {
    let Some(bvh) = load("test_mocapbank.bvh", &BvhOptions::default()) else { return };
    assert_eq!(bvh.rig.num_joints(), 19, "End Sites are not joints");
    assert_eq!(&bvh.rig.names()[..4], ["Hips", "Chest", "Chest2", "LeftCollar"]);
    assert_eq!(bvh.rig.names()[18], "RightAnkle");
    assert_eq!(bvh.rig.parent(0), None);
    assert_parent(&bvh, "LeftWrist", "LeftElbow");
    assert_parent(&bvh, "Neck", "Chest2");
    assert_parent(&bvh, "RightHip", "Hips");
    assert_eq!(bvh.num_frames, 455);
    assert_eq!(bvh.clip.num_frames(), 455);
    assert_eq!(bvh.clip.name(), "test_mocapbank");
    assert_eq!(bvh.frame_time_s, 0.033333);
    assert!((bvh.clip.duration_s() - 454.0 * 0.033333).abs() < 1e-4);
    assert!(bvh.clip.is_looping());

    // Rest pose: line 8, `OFFSET -0.1728 10.2870 0.1254` of Chest.
    let chest = bvh.rig.find_joint("Chest").unwrap();
    assert_eq!(bvh.rig.rest_pose()[chest].translation, Vec3::new(-0.1728, 10.2870, 0.1254));
    assert_eq!(bvh.rig.rest_pose()[chest].rotation, Quat::IDENTITY);
    // A joint without position channels keeps its OFFSET in every frame.
    assert_translation(&bvh, 300, "Chest", Vec3::new(-0.1728, 10.2870, 0.1254), 0.0);

    // Frame 100 is line 220 (frame 0 is line 120). Columns 1-3: Hips position.
    assert_translation(&bvh, 100, "Hips", Vec3::new(-21.1003, 96.7096, 231.1368), 1e-4);
    // Columns 4-6: Hips `Zrotation Xrotation Yrotation`.
    assert_rotation(&bvh, 100, "Hips", zxy(-0.71, -2.66, -2.26));
    // Columns 19-21: LeftElbow.
    assert_rotation(&bvh, 100, "LeftElbow", zxy(8.04, -47.97, -3.84));
    // Columns 40-42: Head.
    assert_rotation(&bvh, 100, "Head", zxy(-8.97, 12.30, 17.24));
    // Last frame (454), line 574: columns 1-3 and RightKnee in columns 55-57.
    assert_translation(&bvh, 454, "Hips", Vec3::new(-47.3922, 94.1088, 230.5628), 1e-4);
    assert_rotation(&bvh, 454, "RightKnee", zxy(-2.18, 15.77, -0.85));
}

#[test]
fn mocapbank_forward_kinematics() {
    let Some(bvh) = load("test_mocapbank.bvh", &BvhOptions::default()) else { return };
    // Frame 100, centimetres, from the reference script.
    let model = model_positions_at_frame(&bvh, 100);
    assert_model_position(&bvh, &model, "Hips", Vec3::new(-21.10030, 96.70960, 231.13680), 0.01);
    assert_model_position(&bvh, &model, "LeftWrist", Vec3::new(-15.71184, 88.98956, 250.76575), 0.01);
    assert_model_position(&bvh, &model, "RightAnkle", Vec3::new(-45.18690, 11.48361, 229.07176), 0.01);
    assert_model_position(&bvh, &model, "Head", Vec3::new(-12.29339, 141.62842, 252.47683), 0.01);
}

#[test]
fn freebvh_hierarchy_and_motion() {
    let Some(bvh) = load("test_freebvh.bvh", &BvhOptions::default()) else { return };
    assert_eq!(bvh.rig.num_joints(), 55);
    // Mixamo names contain a colon; HeadTop_End has CHANNELS so it is a joint.
    assert_eq!(bvh.rig.names()[0], "mixamorig:Hips");
    assert_eq!(bvh.rig.names()[6], "mixamorig:HeadTop_End");
    assert_eq!(bvh.rig.names()[54], "mixamorig:LeftToeBase");
    assert_parent(&bvh, "mixamorig:HeadTop_End", "mixamorig:Head");
    assert_parent(&bvh, "mixamorig:LeftHandThumb1", "mixamorig:LeftHand");
    assert_parent(&bvh, "mixamorig:RightShoulder", "mixamorig:Spine2");
    assert_parent(&bvh, "mixamorig:LeftUpLeg", "mixamorig:Hips");
    assert_eq!(bvh.num_frames, 69);
    assert_eq!(bvh.frame_time_s, 0.0333333);
    assert!((bvh.clip.duration_s() - 68.0 * 0.0333333).abs() < 1e-5);
    // Line 8, tab-separated: `OFFSET	0.0000	9.9235	-1.2273` of Spine.
    let spine = bvh.rig.find_joint("mixamorig:Spine").unwrap();
    assert_eq!(bvh.rig.rest_pose()[spine].translation, Vec3::new(0.0, 9.9235, -1.2273));

    // Frame 40 is line 380 (frame 0 is line 340); this rig lists `Zrotation Yrotation Xrotation`.
    assert_translation(&bvh, 40, "mixamorig:Hips", Vec3::new(5.3409, 96.5722, 83.1385), 1e-4);
    // Columns 4-6: a large root rotation, where composing in the wrong order shows at once.
    assert_rotation(&bvh, 40, "mixamorig:Hips", zyx(172.4056, 45.9637, 171.1746));
    // Columns 37-39 and 145-147.
    assert_rotation(&bvh, 40, "mixamorig:LeftForeArm", zyx(-0.5330, -8.1499, -0.2093));
    assert_rotation(&bvh, 40, "mixamorig:RightUpLeg", zyx(-14.9781, -15.3131, 6.4675));
    let wrong_order = zxy(172.4056, 171.1746, 45.9637);
    let hips = bvh.clip.frame(40)[0].rotation;
    assert!(rotation_distance(hips, wrong_order) > 0.1, "Z·X·Y would be a different rotation");
}

#[test]
fn freebvh_forward_kinematics() {
    let Some(bvh) = load("test_freebvh.bvh", &BvhOptions::default()) else { return };
    let model = model_positions_at_frame(&bvh, 40);
    assert_model_position(&bvh, &model, "mixamorig:Hips", Vec3::new(5.34090, 96.57220, 83.13850), 0.01);
    assert_model_position(&bvh, &model, "mixamorig:LeftHand", Vec3::new(-27.85497, 88.07244, 64.16719), 0.01);
    assert_model_position(&bvh, &model, "mixamorig:RightFoot", Vec3::new(-0.76248, 11.49575, 109.33057), 0.01);
    assert_model_position(&bvh, &model, "mixamorig:Head", Vec3::new(11.72798, 155.25612, 75.78111), 0.01);
}

fn centimetres(position_channels: PositionChannels) -> BvhOptions {
    BvhOptions { unit_scale: 0.01, position_channels, ..BvhOptions::default() }
}

#[test]
fn locomotion_in_metres_with_root_motion() {
    let Some(bvh) = load("locomotion_long.bvh", &centimetres(PositionChannels::Replace)) else { return };
    assert_eq!(bvh.rig.num_joints(), 22);
    assert_eq!(bvh.rig.names()[..3], ["Hips", "LeftUpLeg", "LeftLeg"]);
    assert_parent(&bvh, "RightToe", "RightFoot");
    assert_parent(&bvh, "LeftShoulder", "Spine2");
    assert_parent(&bvh, "Head", "Neck");
    assert_eq!(bvh.num_frames, 3945);
    assert_eq!(bvh.frame_time_s, 0.033333);
    assert!((bvh.clip.duration_s() - 3944.0 * 0.033333).abs() < 1e-3);
    // Line 12, `OFFSET 43.500000 -0.000019 0.000002` of LeftLeg, in metres.
    assert_translation(&bvh, 0, "LeftLeg", Vec3::new(0.435, -0.000_000_19, 0.000_000_02), 1e-7);

    // Frame 2000 is line 2135 (frame 0 is line 135), `Zrotation Yrotation Xrotation`.
    assert_translation(&bvh, 2000, "Hips", Vec3::new(1.75173996, 0.90329826, 5.17692383), 1e-6);
    assert_rotation(&bvh, 2000, "Hips", zyx(79.696635, 12.763929, -98.384886));
    assert_rotation(&bvh, 2000, "LeftLeg", zyx(-70.183561, 1.249154, 0.343174)); // columns 10-12
    assert_rotation(&bvh, 2000, "RightArm", zyx(40.472067, -35.639579, -12.338487)); // columns 61-63
    // Last frame, line 4079, columns 1-3.
    assert_translation(&bvh, 3944, "Hips", Vec3::new(-3.20273590, 0.90870338, 5.60019775), 1e-6);

    // Root motion stays in the root's track: the hips wander about 68 m (horizontal path
    // summed frame to frame by the reference script: 68.1997 m) over 131 s of walking.
    let hips = bvh.rig.find_joint("Hips").unwrap();
    let horizontal = |f: usize| {
        let t = bvh.clip.frame(f)[hips].translation;
        glam::Vec2::new(t.x, t.z)
    };
    let path_m: f32 = (1..bvh.num_frames).map(|f| horizontal(f).distance(horizontal(f - 1))).sum();
    assert!((path_m - 68.1997).abs() < 0.01, "hips path {path_m} m");
    let fastest_m_per_s =
        largest((1..bvh.num_frames).map(|f| horizontal(f).distance(horizontal(f - 1)) / bvh.frame_time_s));
    assert!(fastest_m_per_s < 10.0, "no frame teleports the root ({fastest_m_per_s} m/s)");
    let heights: Vec<f32> = bvh.clip.poses().chunks(22).map(|p| p[hips].translation.y).collect();
    assert!(heights.iter().all(|y| (0.35..1.1).contains(y)), "hips height stays human, in metres");
}

#[test]
fn locomotion_forward_kinematics_in_metres() {
    let Some(bvh) = load("locomotion_long.bvh", &centimetres(PositionChannels::Replace)) else { return };
    let model = model_positions_at_frame(&bvh, 2000);
    assert_model_position(&bvh, &model, "Hips", Vec3::new(1.75174, 0.90330, 5.17692), 1e-4);
    assert_model_position(&bvh, &model, "LeftFoot", Vec3::new(1.82441, 0.30414, 4.84347), 1e-4);
    assert_model_position(&bvh, &model, "Head", Vec3::new(1.67425, 1.47015, 4.88093), 1e-4);
    assert_model_position(&bvh, &model, "RightHand", Vec3::new(2.19514, 1.08810, 4.84381), 1e-4);
}

#[test]
fn position_channels_add_to_offset_when_asked() {
    let Some(replace) = load("locomotion_long.bvh", &centimetres(PositionChannels::Replace)) else { return };
    let Some(add) = load("locomotion_long.bvh", &centimetres(PositionChannels::Add)) else { return };
    // This file's root OFFSET (line 4) equals frame 0's position (line 135, columns 1-3), so
    // adding counts it twice.
    let offset = Vec3::new(1.93614899, 0.90217430, 3.58243408);
    assert_translation(&replace, 0, "Hips", offset, 1e-6);
    assert_translation(&add, 0, "Hips", offset * 2.0, 1e-6);
    // Frame 2000: position (line 2135) plus OFFSET.
    assert_translation(&add, 2000, "Hips", Vec3::new(1.75173996, 0.90329826, 5.17692383) + offset, 1e-6);
    // Joints without position channels, and every rotation, are the same either way.
    for frame in [0, 2000, 3944] {
        let (r, a) = (replace.clip.frame(frame), add.clip.frame(frame));
        assert_eq!(r[0].rotation, a[0].rotation);
        assert_eq!(r[1..], a[1..]);
    }
}

// ---------------------------------------------------------------------------------------
// Small inline files.

/// A two-joint file; the line numbers in the tests below refer to it.
const SMALL: &str = "HIERARCHY
ROOT hips
{
  OFFSET 1 2 3
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT spine
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 10 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.5
0 90 0 0 0 0 0 0 0
0 90 5 0 0 0 10 0 0
0 90 10 0 0 0 20 0 0
";

/// `SMALL` with its 1-based line `line` replaced.
fn with_line(line: usize, text: &str) -> String {
    SMALL.lines().enumerate().map(|(i, l)| if i + 1 == line { text } else { l }).collect::<Vec<_>>().join("\n")
}

fn parse_err(text: &str) -> BvhError {
    match parse_bvh(text, &BvhOptions::default()) {
        Ok(_) => panic!("parsed but should not have:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn small_file_reads_as_documented() {
    let bvh = parse_bvh(SMALL, &BvhOptions::default()).unwrap();
    assert_eq!(bvh.rig.names(), ["hips", "spine"]);
    assert_eq!(bvh.clip.name(), "bvh");
    assert_eq!(bvh.clip.duration_s(), 1.0);
    assert_eq!(bvh.rig.rest_pose()[0].translation, Vec3::new(1.0, 2.0, 3.0));
    // Replace: frame 1's channels are the whole position, the OFFSET 1 2 3 is gone.
    assert_eq!(bvh.clip.frame(1)[0].translation, Vec3::new(0.0, 90.0, 5.0));
    assert!(rotation_distance(bvh.clip.frame(2)[1].rotation, Quat::from_rotation_z(20f32.to_radians())) < 1e-6);
    let add =
        parse_bvh(SMALL, &BvhOptions { position_channels: PositionChannels::Add, ..BvhOptions::default() }).unwrap();
    assert_eq!(add.clip.frame(1)[0].translation, Vec3::new(1.0, 92.0, 8.0));
    let stay = parse_bvh(SMALL, &BvhOptions { looping: false, ..BvhOptions::default() }).unwrap();
    assert!(!stay.clip.is_looping());
}

#[test]
fn rotations_compose_in_listed_order() {
    let order = |channels: &str| {
        let text = format!(
            "HIERARCHY\nROOT a\n{{\n OFFSET 0 0 0\n CHANNELS 3 {channels}\n}}\nMOTION\nFrames: 1\nFrame Time: 0.1\n30 60 90\n"
        );
        parse_bvh(&text, &BvhOptions::default()).unwrap().clip.frame(0)[0].rotation
    };
    let (x, y, z) = (
        Quat::from_rotation_x(30f32.to_radians()),
        Quat::from_rotation_y(60f32.to_radians()),
        Quat::from_rotation_z(90f32.to_radians()),
    );
    assert!(rotation_distance(order("Xrotation Yrotation Zrotation"), x * y * z) < 1e-6);
    let (y2, x2, z2) = (Quat::from_rotation_y(30f32.to_radians()), Quat::from_rotation_x(60f32.to_radians()), z);
    assert!(rotation_distance(order("Yrotation Xrotation Zrotation"), y2 * x2 * z2) < 1e-6);
    assert!(rotation_distance(x * y * z, z * y * x) > 0.1, "the orders really differ");
}

#[test]
fn lenient_layouts_are_accepted() {
    // CRLF, tabs, a brace on the name's line, a name with a space, lower-case keywords, a
    // joint with no CHANNELS, a position-only joint, and a frame wrapped over two lines.
    let text = "HIERARCHY\r\nroot Body Root {\r\n\tOFFSET 0 0 0\r\n\tCHANNELS 3 Xposition Yposition Zposition\r\n\
                \tJOINT fixed\r\n\t{\r\n\t\tOFFSET 1 0 0\r\n\t}\r\n\tJOINT slider\r\n\t{\r\n\t\tOFFSET 0 1 0\r\n\
                \t\tCHANNELS 1 yposition\r\n\t}\r\n}\r\nMOTION\r\nFrames:\t2\r\nFrame Time:\t0.25\r\n\
                1 2 3\t4\r\n\r\n5 6\r\n7 8\r\n";
    let bvh = parse_bvh(text, &BvhOptions::default()).unwrap();
    assert_eq!(bvh.rig.names(), ["Body Root", "fixed", "slider"]);
    assert_eq!(bvh.clip.frame(0)[0].translation, Vec3::new(1.0, 2.0, 3.0));
    assert_eq!(bvh.clip.frame(0)[1].translation, Vec3::X, "no channels: OFFSET in every frame");
    assert_eq!(bvh.clip.frame(0)[2].translation, Vec3::new(0.0, 4.0, 0.0), "Y replaced, X and Z from OFFSET");
    assert_eq!(bvh.clip.frame(1)[0].translation, Vec3::new(5.0, 6.0, 7.0));
    assert_eq!(bvh.clip.frame(1)[2].translation, Vec3::new(0.0, 8.0, 0.0));
}

#[test]
fn single_frame_is_a_static_pose() {
    let text =
        "HIERARCHY\nROOT a\n{\n OFFSET 0 0 0\n CHANNELS 1 Zrotation\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n45\n";
    let bvh = parse_bvh(text, &BvhOptions::default()).unwrap();
    assert_eq!((bvh.num_frames, bvh.clip.duration_s()), (1, 0.0));
    let mut out = [Transform::IDENTITY];
    bvh.clip.sample(3.7, &mut out);
    assert!(rotation_distance(out[0].rotation, Quat::from_rotation_z(45f32.to_radians())) < 1e-6);
}

#[test]
fn truncated_files_are_typed_errors_at_the_last_line() {
    let hierarchy_only: String = SMALL.lines().take(9).map(|l| format!("{l}\n")).collect();
    let e = parse_err(&hierarchy_only);
    assert!(matches!(e, BvhError::UnexpectedEof { line: 9, .. }), "{e:?}");
    assert!(e.to_string().contains("line 9"), "{e}");

    assert!(matches!(parse_err(""), BvhError::UnexpectedEof { line: 1, .. }));
    assert!(matches!(parse_err("HIERARCHY\nROOT"), BvhError::UnexpectedEof { line: 2, .. }));
    assert!(matches!(parse_err("HIERARCHY\nROOT a\n{\nOFFSET 0 0"), BvhError::UnexpectedEof { line: 4, .. }));
    let no_frames: String = SMALL.lines().take(17).map(|l| format!("{l}\n")).collect();
    assert!(matches!(parse_err(&no_frames), BvhError::UnexpectedEof { line: 17, .. }));

    // Cut in the middle of frame 2 (line 21).
    let cut = &SMALL[..SMALL.find("0 90 10 0").unwrap() + "0 90 10 0".len()];
    let e = parse_err(cut);
    assert!(matches!(e, BvhError::FrameValues { frame: 2, line: 21, expected: 9, found: 4 }), "{e:?}");
    // Cut after frame 1: whole frames, but fewer than `Frames:` (line 17) says.
    let two_frames: String = SMALL.lines().take(20).map(|l| format!("{l}\n")).collect();
    let e = parse_err(&two_frames);
    assert!(matches!(e, BvhError::FrameCount { line: 17, declared: 3, found: 2 }), "{e:?}");
}

#[test]
fn channel_errors_name_the_line_and_joint() {
    let e = parse_err(&with_line(9, "    CHANNELS 3 Xrotation Yrotation"));
    assert!(
        matches!(&e, BvhError::ChannelCount { line: 9, joint, declared: 3, listed: 2 } if joint == "spine"),
        "{e:?}"
    );
    let e = parse_err(&with_line(9, "    CHANNELS 2 Xrotation Yrotation Zrotation"));
    assert!(matches!(e, BvhError::ChannelCount { line: 9, declared: 2, listed: 3, .. }), "{e:?}");
    let seven = "CHANNELS 7 Xposition Yposition Zposition Xrotation Yrotation Zrotation Xrotation";
    assert!(matches!(parse_err(&with_line(5, seven)), BvhError::ChannelCount { line: 5, declared: 7, .. }));
    let e = parse_err(&with_line(9, "    CHANNELS 3 Zrotation Xrotation Wrotation"));
    assert!(matches!(&e, BvhError::UnknownChannel { line: 9, channel, .. } if channel == "Wrotation"), "{e:?}");
    let e = parse_err(&with_line(9, "    CHANNELS 3 Zrotation Xrotation Zrotation"));
    assert!(matches!(e, BvhError::DuplicateChannel { line: 9, .. }), "{e:?}");
    let e = parse_err(&with_line(9, "    CHANNELS three Zrotation Xrotation Yrotation"));
    assert!(matches!(e, BvhError::BadNumber { line: 9, .. }), "{e:?}");
}

#[test]
fn frame_errors_name_the_frame_and_line() {
    let e = parse_err(&with_line(20, "0 90 5 0 0 0 10 0"));
    assert!(matches!(e, BvhError::FrameValues { frame: 1, line: 20, expected: 9, found: 8 }), "{e:?}");
    assert!(e.to_string().contains("line 20") && e.to_string().contains("frame 1"), "{e}");
    let e = parse_err(&with_line(20, "0 90 5 0 0 0 10 0 0 0"));
    assert!(matches!(e, BvhError::FrameValues { frame: 1, line: 20, expected: 9, found: 10 }), "{e:?}");
    let e = parse_err(&with_line(20, "0 90 5 abc 0 0 10 0 0"));
    assert!(matches!(&e, BvhError::BadNumber { line: 20, text, .. } if text == "abc"), "{e:?}");
    let e = parse_err(&with_line(21, "0 90 10 0 nan 0 20 0 0"));
    assert!(matches!(e, BvhError::BadNumber { line: 21, .. }), "NaN is refused: {e:?}");
    let e = parse_err(&with_line(8, "    OFFSET 0 ten 0"));
    assert!(matches!(e, BvhError::BadNumber { line: 8, .. }), "{e:?}");
    let e = parse_err(&format!("{SMALL}1 2 3 4 5 6 7 8 9\n"));
    assert!(matches!(e, BvhError::FrameCount { line: 17, declared: 3, found: 4 }), "{e:?}");
}

#[test]
fn header_errors() {
    for bad in ["Frame Time: 0", "Frame Time: -0.1", "Frame Time: 1e-60"] {
        let e = parse_err(&with_line(18, bad));
        assert!(matches!(e, BvhError::BadFrameTime { line: 18, .. }), "{bad}: {e:?}");
    }
    assert!(matches!(parse_err(&with_line(18, "Frame Time: nan")), BvhError::BadNumber { line: 18, .. }));
    let e = parse_err(&with_line(17, "Frames: 99999999999"));
    assert!(matches!(e, BvhError::TooManyFrames { line: 17, frames: 99_999_999_999, .. }), "{e:?}");
    let e = parse_err(&with_line(17, "Frames: 999999999999999999999999"));
    assert!(matches!(e, BvhError::BadNumber { line: 17, .. }), "{e:?}");
    assert!(matches!(parse_err(&with_line(17, "Frames: 0")), BvhError::NoFrames { line: 17 }));
    assert!(matches!(parse_err(&with_line(17, "Frames: -3")), BvhError::BadNumber { line: 17, .. }));
    let e = parse_err(&with_line(1, "HIERACHY"));
    assert!(matches!(&e, BvhError::UnexpectedToken { line: 1, found, .. } if found == "HIERACHY"), "{e:?}");
    let e = parse_bvh(SMALL, &BvhOptions { unit_scale: 0.0, ..BvhOptions::default() }).unwrap_err();
    assert!(matches!(e, BvhError::InvalidUnitScale { .. }), "{e:?}");
    let e = parse_bvh(SMALL, &BvhOptions { unit_scale: 1e37, ..BvhOptions::default() }).unwrap_err();
    assert!(matches!(e, BvhError::BadNumber { line: 19, .. }), "a position that overflows once scaled: {e:?}");
}

#[test]
fn a_rest_position_beyond_f32_range_is_named_at_its_offset() {
    // Each OFFSET fits f32, their sum down the chain does not; this once surfaced as the rig's
    // "zero scale" message.
    let text = with_line(4, "  OFFSET 0 3e38 0").replace("    OFFSET 0 10 0", "    OFFSET 0 3e38 0");
    let e = parse_err(&text);
    assert!(
        matches!(&e, BvhError::RestOutOfRange { line: 8, joint, position_m } if joint == "spine" && position_m[1] == 6e38),
        "{e:?}"
    );
    assert!(e.to_string().contains("line 8") && !e.to_string().contains("zero scale"), "{e}");
}

#[test]
fn hierarchy_errors() {
    let e = parse_err(&with_line(6, "  JOINT hips"));
    assert!(matches!(&e, BvhError::DuplicateJoint { line: 6, name, first_line: 2 } if name == "hips"), "{e:?}");
    let e = parse_err(&with_line(8, "    CHANNELS 1 Xrotation"));
    assert!(matches!(e, BvhError::Repeated { line: 9, keyword: "CHANNELS", .. }), "{e:?}");
    let e = parse_err(&with_line(8, ""));
    assert!(matches!(&e, BvhError::MissingOffset { line: 6, joint } if joint == "spine"), "{e:?}");
    let e = parse_err(&with_line(6, "  ROOT spine"));
    assert!(matches!(e, BvhError::UnexpectedToken { line: 6, .. }), "ROOT inside a joint: {e:?}");
    let e = parse_err(&with_line(12, "      CHANNELS 1 Xrotation"));
    assert!(matches!(e, BvhError::UnexpectedToken { line: 12, .. }), "an End Site has no channels: {e:?}");
    let e = parse_err(&with_line(16, "MOTON"));
    assert!(matches!(e, BvhError::UnexpectedToken { line: 16, .. }), "{e:?}");
}

#[test]
fn more_than_max_joints_is_a_rig_error_at_the_extra_joint() {
    // A root and 256 sibling joints, one line each: joint k (0-based) starts on line k + 2.
    let mut text = String::from("HIERARCHY\nROOT j0 { OFFSET 0 0 0 CHANNELS 0\n");
    for k in 1..=MAX_JOINTS {
        text.push_str(&format!("JOINT j{k} {{ OFFSET 0 1 0 }}\n"));
    }
    text.push_str("}\nMOTION\nFrames: 1\nFrame Time: 0.1\n\n");
    let e = parse_err(&text);
    let line = MAX_JOINTS + 2;
    assert!(
        matches!(e, BvhError::Rig { line: l, source: RigError::TooManyJoints { num_joints: 257 } } if l == line),
        "{e:?}"
    );
    // One joint fewer loads, channel-less joints and all.
    let fewer = text.replace(&format!("JOINT j{MAX_JOINTS} {{ OFFSET 0 1 0 }}\n"), "");
    let bvh = parse_bvh(&fewer, &BvhOptions::default()).unwrap();
    assert_eq!(bvh.rig.num_joints(), MAX_JOINTS);
}

#[test]
fn missing_file_names_the_path() {
    let path = Path::new("/nonexistent/walk.bvh");
    match load_bvh(path, &BvhOptions::default()) {
        Err(BvhError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn truncation_at_any_byte_never_panics() {
    let Some(dir) = data_dir() else { return };
    let text = std::fs::read_to_string(dir.join("test_freebvh.bvh")).unwrap();
    let motion = text.find("MOTION").unwrap();
    // Every byte through the header and first frame, then a spread of cuts through the data.
    let offsets = (0..motion + 1500).chain((motion + 1500..text.len()).step_by(3001));
    let mut ok = 0;
    for cut in offsets {
        let Some(prefix) = text.get(..cut) else { continue };
        if let Ok(bvh) = parse_bvh(prefix, &BvhOptions::default()) {
            assert!(bvh.clip.poses().iter().all(Transform::is_finite), "cut at byte {cut}");
            ok += 1;
        }
    }
    // A cut exactly at the end of a line of data holds whole frames but too few of them; only
    // the untruncated file parses.
    assert_eq!(ok, 0);
    assert!(parse_bvh(&text, &BvhOptions::default()).is_ok());
}
