//! glTF import: the Khronos sample models RiggedSimple and RiggedFigure (from `../shared/data`),
//! GLB containers built from them, small synthetic files for each sampler and for the remapping
//! rules, and malformed files that must each give a typed error.

mod support;

use std::path::{Path, PathBuf};

use glam::{Mat4, Quat, Vec3};
use support::compare::{nan_max, nan_min};
use support::files::TempDir;
use support::{encode_base64, glb};
use throng::import::gltf::{GltfAsset, GltfError, GltfOptions, decode_base64, load_gltf, load_gltf_from_slice};
use throng::{ClipError, RigError, Transform};

// ---------------------------------------------------------------------------------------------
// Helpers

/// The sample model folder, or `None` (after saying so) when the shared data is absent.
/// With `THRONG_REQUIRE_DATA=1` a missing folder fails the test instead.
fn sample_dir(name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gltf").join(name);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("THRONG_REQUIRE_DATA").as_deref() != Ok("1"),
        "THRONG_REQUIRE_DATA=1 but {} is missing",
        dir.display()
    );
    eprintln!("skipping: glTF sample data not found at {}", dir.display());
    None
}

fn opts() -> GltfOptions {
    GltfOptions::default()
}

/// Rotations compared up to sign (q and -q are one rotation).
#[track_caller]
fn assert_quat_near(got: Quat, want: [f32; 4], tol: f32, what: &str) {
    let want = Quat::from_array(want);
    let aligned = if got.dot(want) < 0.0 { -got } else { got };
    assert!(aligned.abs_diff_eq(want, tol), "{what}: expected {want:?}, got {got:?}");
}

#[track_caller]
fn assert_vec3_near(got: Vec3, want: [f32; 3], tol: f32, what: &str) {
    assert!(got.abs_diff_eq(Vec3::from(want), tol), "{what}: expected {want:?}, got {got:?}");
}

fn sample(asset: &GltfAsset, clip: usize, time_s: f32) -> Vec<Transform> {
    let clip = &asset.clips[clip];
    let mut out = vec![Transform::IDENTITY; clip.num_joints()];
    // Not looping, so that sampling at the duration gives the last key rather than the first.
    clip.sample_with(time_s, false, &mut out);
    out
}

/// A GLB holding the .gltf's JSON (its one buffer's URI removed) and the .bin as BIN chunk.
fn glb_from(gltf_path: &Path, bin_path: &Path) -> Vec<u8> {
    let mut root: gltf::json::Root = gltf::json::deserialize::from_slice(&std::fs::read(gltf_path).unwrap()).unwrap();
    root.buffers[0].uri = None;
    let json = gltf::json::serialize::to_vec(&root).unwrap();
    glb(&json, &std::fs::read(bin_path).unwrap())
}

/// Builds a glTF document with one data-URI buffer, one buffer view per accessor.
#[derive(Default)]
struct Doc {
    bin: Vec<u8>,
    views: Vec<String>,
    accessors: Vec<String>,
}

impl Doc {
    /// Adds an accessor over `bytes`; `extra` is spliced into its JSON (e.g. `"normalized":true`).
    fn accessor(&mut self, bytes: &[u8], count: usize, component_type: u32, ty: &str, extra: &str) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        self.views.push(format!(r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#, self.bin.len(), bytes.len()));
        self.bin.extend(bytes);
        let extra = if extra.is_empty() { String::new() } else { format!(",{extra}") };
        self.accessors.push(format!(
            r#"{{"bufferView":{},"componentType":{component_type},"count":{count},"type":"{ty}"{extra}}}"#,
            self.views.len() - 1
        ));
        self.accessors.len() - 1
    }

    fn floats(&mut self, values: &[f32], ty: &str) -> usize {
        let per = match ty {
            "SCALAR" => 1,
            "VEC3" => 3,
            "VEC4" => 4,
            "MAT4" => 16,
            _ => panic!("test helper: unknown type {ty}"),
        };
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let extra = if ty == "VEC3" {
            // POSITION needs bounds; harmless elsewhere.
            let (mut min, mut max) = ([f32::MAX; 3], [f32::MIN; 3]);
            for v in values.chunks(3) {
                for i in 0..3 {
                    min[i] = min[i].min(v[i]);
                    max[i] = max[i].max(v[i]);
                }
            }
            format!(r#""min":{min:?},"max":{max:?}"#)
        } else {
            String::new()
        };
        self.accessor(&bytes, values.len() / per, 5126, ty, &extra)
    }

    /// The whole document; `body` holds the nodes, skins, meshes and animations members.
    fn json(&self, body: &str) -> String {
        format!(
            r#"{{"asset":{{"version":"2.0"}},{body},"buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{}"}}],"bufferViews":[{}],"accessors":[{}]}}"#,
            self.bin.len(),
            encode_base64(&self.bin),
            self.views.join(","),
            self.accessors.join(",")
        )
    }
}

fn load_str(json: &str, options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    load_gltf_from_slice(json.as_bytes(), None, options)
}

// ---------------------------------------------------------------------------------------------
// RiggedSimple

/// RiggedSimple's keys are at multiples of 1/24 s (0.041667, 1.041667, 2.083333); resampling at
/// the file's own 24 Hz puts a frame on every key, so key values survive resampling exactly.
fn simple_at_24hz(dir: &Path) -> GltfAsset {
    load_gltf(&dir.join("RiggedSimple.gltf"), &GltfOptions { sample_rate_hz: 24.0, ..opts() }).unwrap()
}

#[test]
fn rigged_simple_rig_and_clips() {
    let Some(dir) = sample_dir("RiggedSimple") else { return };
    let asset = load_gltf(&dir.join("RiggedSimple.gltf"), &opts()).unwrap();
    // Skin 0 lists nodes 2 and 3; node 3 is node 2's child. The nodes have no names.
    assert_eq!(asset.rig.names(), ["node2", "node3"]);
    assert_eq!((asset.rig.parent(0), asset.rig.parent(1)), (None, Some(0)));
    assert_eq!(asset.joint_nodes, [2, 3]);
    // Two unnamed animations, one per joint, both keyed 0.041667 ..= 2.083333 s (accessors 5, 9).
    let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["animation0", "animation1"]);
    for clip in &asset.clips {
        assert!((clip.duration_s() - 2.083_333).abs() < 1e-6, "{}: {}", clip.name(), clip.duration_s());
        assert!(clip.is_looping());
    }
    let merged = load_gltf(&dir.join("RiggedSimple.gltf"), &GltfOptions { merge_animations: true, ..opts() }).unwrap();
    assert_eq!(merged.clips.len(), 1);
    assert_eq!(merged.clips[0].name(), "merged");
    assert_eq!(merged.clip_animations, [vec![0, 1]]);
}

#[test]
fn rigged_simple_keys_survive_import() {
    let Some(dir) = sample_dir("RiggedSimple") else { return };
    let asset = simple_at_24hz(&dir);
    // Animation 1 rotates node 3 (rig joint 1): times accessor 9, rotations accessor 11.
    let key0 = [-0.002_052_110_4, -9.947_895e-8, -0.000_291_370_87, -0.999_997_85];
    let key1 = [0.293_378_5, -8.614_855e-5, -0.000_278_344_15, -0.955_996_3];
    let tol = 1e-5;
    // Before the first key (0.041667 s) the first key holds: file times are not shifted to 0.
    assert_quat_near(sample(&asset, 1, 0.0)[1].rotation, key0, tol, "t = 0 (before key 0)");
    assert_quat_near(sample(&asset, 1, 0.041_666_62)[1].rotation, key0, tol, "key 0");
    assert_quat_near(sample(&asset, 1, 1.041_667)[1].rotation, key1, tol, "key 1");
    assert_quat_near(sample(&asset, 1, 2.083_333)[1].rotation, key0, tol, "key 2 (= key 0)");
    // Halfway between keys 0 and 1 (0.541667 s): slerp at 1/2 = (key0 + key1) / |key0 + key1|
    // since their dot product (0.956) is positive.
    let mid = [0.147_315_31, -4.361_312_5e-5, -0.000_288_088_36, -0.989_089_5];
    assert_quat_near(sample(&asset, 1, 0.541_666_8)[1].rotation, mid, tol, "mid key 0-1");
    // A quarter of the way from key 1 to key 2 (1.302083 s): slerp(key1, key0, 0.25), angle
    // between them 34.2°, weights sin(0.75θ)/sinθ and sin(0.25θ)/sinθ.
    let quarter = [0.220_967_3, -6.506_351e-5, -0.000_284_013_66, -0.975_281_2];
    assert_quat_near(sample(&asset, 1, 1.302_083_5)[1].rotation, quarter, tol, "1/4 key 1-2");
}

#[test]
fn rigged_simple_bakes_the_y_up_node_into_the_root() {
    let Some(dir) = sample_dir("RiggedSimple") else { return };
    let asset = simple_at_24hz(&dir);
    // Node 0 (matrix: -90° about X, Blender's Z-up to glTF's Y-up) and node 4 (identity) are
    // above root joint node 2. Animation 0 keys node 2 constant: translation (accessor 6)
    // (0, -3.156e-7, -4.18033) and rotation (accessor 7) (-0.70474, 0, 0, -0.70947).
    // Baked: translation R(x, y, z) = (x, z, -y); rotation q0 * q with q0 = (-√½, 0, 0, √½):
    // x = √½(0.70947 - 0.70474) = 0.0033409, w = -√½(0.70947 + 0.70474) = -0.99999438.
    for t in [0.0, 1.0, 2.0] {
        let root = sample(&asset, 0, t)[0];
        assert_vec3_near(root.translation, [0.0, -4.180_33, 3.156_06e-7], 1e-5, "root translation");
        assert_quat_near(root.rotation, [0.003_340_938_5, 0.0, 0.0, -0.999_994_4], 1e-5, "root rotation");
    }
    // The rest pose gets the same baking.
    assert_vec3_near(asset.rig.rest_pose()[0].translation, [0.0, -4.180_33, 3.156_06e-7], 1e-5, "root rest");
}

/// Model-space rest pose times each inverse bind matrix, per joint.
fn rest_skinning(asset: &GltfAsset) -> Vec<Mat4> {
    asset.rig.rest_model().iter().zip(asset.rig.inverse_bind()).map(|(m, ibm)| *m * *ibm).collect()
}

#[test]
fn rest_pose_skins_to_identity() {
    // Both files bind the mesh in the armature's own (Z-up) space, and the mesh node sits under
    // the same Y-up node 0 as the armature. With node 0 baked into the root joint, the rest pose
    // therefore skins to node 0's matrix, which puts the mesh exactly where a glTF viewer shows
    // it; applied to that matrix's inverse, it is the identity. Tolerance 1e-4: the files store
    // rest rotations and inverse bind matrices separately, rounded to f32 after Blender's export.
    let y_up = Mat4::from_rotation_x(-std::f32::consts::FRAC_PI_2);
    for (name, file) in [("RiggedSimple", "RiggedSimple.gltf"), ("RiggedFigure", "RiggedFigure.gltf")] {
        let Some(dir) = sample_dir(name) else { return };
        let asset = load_gltf(&dir.join(file), &opts()).unwrap();
        for (joint, m) in rest_skinning(&asset).iter().enumerate() {
            let m = y_up.inverse() * *m;
            assert!(m.abs_diff_eq(Mat4::IDENTITY, 1e-4), "{name} joint {joint}: {m:?}");
        }
    }
}

#[test]
fn rigged_simple_mesh() {
    let Some(dir) = sample_dir("RiggedSimple") else { return };
    let mesh = load_gltf(&dir.join("RiggedSimple.gltf"), &opts()).unwrap().mesh.unwrap();
    // Accessors 3 (POSITION, 96), 0 (indices, 564).
    assert_eq!(mesh.num_vertices(), 96);
    assert_eq!(mesh.indices.len(), 564);
    assert_eq!(mesh.normals.len(), 96);
    for (v, (j, w)) in mesh.joints.iter().zip(&mesh.weights).enumerate() {
        assert!(j.iter().all(|&j| j < 2), "vertex {v} joints {j:?}");
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6, "vertex {v} weights {w:?}");
    }
    // The cylinder runs along model-space Z from -4.575 to 4.575 (accessor 3's min and max):
    // positions stay in the mesh's own space, not moved by any node.
    let z = mesh.positions.iter().map(|p| p[2]);
    assert_eq!(z.clone().fold(f32::MAX, nan_min), -4.575_077);
    assert_eq!(z.fold(f32::MIN, nan_max), 4.575_077);
}

// ---------------------------------------------------------------------------------------------
// RiggedFigure

/// RiggedFigure's skin joints (nodes) in file order; every parent already precedes its children.
const FIGURE_NODES: [usize; 19] = [2, 11, 12, 19, 20, 16, 13, 17, 14, 18, 15, 7, 3, 8, 4, 9, 5, 10, 6];

#[test]
fn rigged_figure_rig_and_merged_walk() {
    let Some(dir) = sample_dir("RiggedFigure") else { return };
    let options = GltfOptions { merge_animations: true, ..opts() };
    let asset = load_gltf(&dir.join("RiggedFigure.gltf"), &options).unwrap();
    assert_eq!(asset.rig.num_joints(), 19);
    assert_eq!(asset.joint_nodes, FIGURE_NODES);
    let names: Vec<String> = FIGURE_NODES.iter().map(|n| format!("node{n}")).collect();
    assert_eq!(asset.rig.names(), names.as_slice());
    // From the node tree: 2 → {11, 7, 3}; 11 → 12 → {19, 16, 13}; 19 → 20; 16 → 17 → 18;
    // 13 → 14 → 15; 7 → 8 → 9 → 10; 3 → 4 → 5 → 6. In rig indices:
    let parents: Vec<Option<usize>> = (0..19).map(|j| asset.rig.parent(j)).collect();
    let want = [
        None,
        Some(0),
        Some(1),
        Some(2),
        Some(3),
        Some(2),
        Some(2),
        Some(5),
        Some(6),
        Some(7),
        Some(8),
        Some(0),
        Some(0),
        Some(11),
        Some(12),
        Some(13),
        Some(14),
        Some(15),
        Some(16),
    ];
    assert_eq!(parents, want);
    // 19 unnamed single-joint animations, keys at 0 and 1.25 s: one walk clip of 1.25 s.
    assert_eq!(asset.clips.len(), 1);
    assert_eq!(asset.clips[0].name(), "merged");
    assert_eq!(asset.clips[0].duration_s(), 1.25);
    assert_eq!(asset.clip_animations, [(0..19).collect::<Vec<_>>()]);

    let separate = load_gltf(&dir.join("RiggedFigure.gltf"), &opts()).unwrap();
    assert_eq!(separate.clips.len(), 19);
    assert!(separate.clips.iter().all(|c| c.duration_s() == 1.25));
}

#[test]
fn rigged_figure_walk_samples() {
    let Some(dir) = sample_dir("RiggedFigure") else { return };
    let options = GltfOptions { merge_animations: true, ..opts() };
    let asset = load_gltf(&dir.join("RiggedFigure.gltf"), &options).unwrap();
    let tol = 1e-5;
    // Animation 5 rotates node 16 (rig joint 5): accessor 27, keys at 0 and 1.25 s.
    let k0 = [0.618_297_9, 0.538_041_2, -0.474_371_2, -0.321_234_67];
    let k1 = [0.678_943_3, 0.687_945_3, -0.240_675_03, -0.088_561_85];
    assert_quat_near(sample(&asset, 0, 0.0)[5].rotation, k0, tol, "node 16 key 0");
    assert_quat_near(sample(&asset, 0, 1.25)[5].rotation, k1, tol, "node 16 key 1");
    // Halfway: dot(k0, k1) = 0.93 > 0, so slerp at 1/2 is the normalised sum.
    let mid = [0.659_842_5, 0.623_598_8, -0.363_708_7, -0.208_443_25];
    assert_quat_near(sample(&asset, 0, 0.625)[5].rotation, mid, tol, "node 16 mid");
    // Animation 8 rotates node 13 (rig joint 6): accessor 39; a quarter of the way (0.3125 s).
    let quarter = [0.446_293_84, 0.247_580_06, -0.574_330_5, -0.640_054_9];
    assert_quat_near(sample(&asset, 0, 0.3125)[6].rotation, quarter, tol, "node 13 1/4");
    // Animation 0 keys root node 2 at translation (4.6e-10, -1.15066e-7, 0.686) (accessor 6);
    // node 0's Y-up rotation maps (x, y, z) to (x, z, -y): hips 0.686 m above the ground.
    assert_vec3_near(sample(&asset, 0, 0.7)[0].translation, [0.0, 0.686, 1.150_66e-7], 1e-6, "hips");
}

#[test]
fn rigged_figure_mesh_uses_rig_joints() {
    let Some(dir) = sample_dir("RiggedFigure") else { return };
    let mesh = load_gltf(&dir.join("RiggedFigure.gltf"), &opts()).unwrap().mesh.unwrap();
    // Accessors 3 (POSITION, 370) and 0 (indices, 768).
    assert_eq!(mesh.num_vertices(), 370);
    assert_eq!(mesh.indices.len(), 768);
    assert!(mesh.joints.iter().flatten().all(|&j| j < 19));
    assert!(mesh.weights.iter().all(|w| (w.iter().sum::<f32>() - 1.0).abs() < 1e-6));
    assert!(mesh.normals.iter().all(|n| (Vec3::from(*n).length() - 1.0).abs() < 1e-3));
}

// ---------------------------------------------------------------------------------------------
// GLB

#[test]
fn glb_loads_like_gltf() {
    for (name, stem) in [("RiggedSimple", "RiggedSimple"), ("RiggedFigure", "RiggedFigure")] {
        let Some(dir) = sample_dir(name) else { return };
        let gltf_path = dir.join(format!("{stem}.gltf"));
        let glb = glb_from(&gltf_path, &dir.join(format!("{stem}0.bin")));
        let options = GltfOptions { merge_animations: true, ..opts() };
        let from_glb = load_gltf_from_slice(&glb, None, &options).unwrap();
        let from_gltf = load_gltf(&gltf_path, &options).unwrap();
        assert_eq!(from_glb, from_gltf, "{name}");
        // And through a file, where the content (not the extension) says GLB.
        let tmp = TempDir::new("gltf-glb");
        let path = tmp.join(format!("{stem}.glb"));
        std::fs::write(&path, &glb).unwrap();
        assert_eq!(load_gltf(&path, &options).unwrap(), from_gltf, "{name} from file");
    }
}

// ---------------------------------------------------------------------------------------------
// Synthetic files: samplers

/// One joint (node 0) with the given animation channels; returns the asset at 30 Hz, not looping.
fn one_joint_anim(doc: &Doc, samplers: &str, channels: &str) -> GltfAsset {
    let body = format!(
        r#""nodes":[{{"name":"j"}}],"skins":[{{"joints":[0]}}],"animations":[{{"name":"a","samplers":[{samplers}],"channels":[{channels}]}}]"#
    );
    load_str(&doc.json(&body), &GltfOptions { looping: false, ..opts() }).unwrap()
}

#[test]
fn linear_sampler() {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 1.0, 2.0], "SCALAR");
    let values = doc.floats(&[0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 6.0, 0.0, 0.0], "VEC3");
    let asset = one_joint_anim(
        &doc,
        &format!(r#"{{"input":{times},"output":{values},"interpolation":"LINEAR"}}"#),
        r#"{"sampler":0,"target":{"node":0,"path":"translation"}}"#,
    );
    assert_eq!(asset.clips[0].name(), "a");
    assert_eq!(asset.clips[0].duration_s(), 2.0);
    // x: 0 → 2 over the first second, 2 → 6 over the next.
    for (t, x) in [(0.0, 0.0), (0.5, 1.0), (1.0, 2.0), (1.5, 4.0), (2.0, 6.0)] {
        assert_vec3_near(sample(&asset, 0, t)[0].translation, [x, 0.0, 0.0], 1e-5, &format!("t = {t}"));
    }
}

#[test]
fn a_non_finite_key_time_is_named_as_such() {
    // NaN compares false with every time, which once read as "times not increasing".
    for (bad, key) in [(f32::NAN, 1), (f32::INFINITY, 2), (f32::NAN, 0)] {
        let mut times = [0.0, 1.0, 2.0];
        times[key] = bad;
        let mut doc = Doc::default();
        let times = doc.floats(&times, "SCALAR");
        let values = doc.floats(&[0.0; 9], "VEC3");
        let body = format!(
            r#""nodes":[{{"name":"j"}}],"skins":[{{"joints":[0]}}],"animations":[{{"name":"a","samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":0,"path":"translation"}}}}]}}]"#
        );
        let err = load_str(&doc.json(&body), &opts()).unwrap_err();
        assert!(
            matches!(&err, GltfError::Clip { animation, source: ClipError::NonFinite { joint: 0, channel: "translation", key: k } } if animation == "a" && *k == key),
            "{bad} at key {key}: {err}"
        );
    }
}

#[test]
fn step_sampler_with_normalized_rotation() {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 1.0], "SCALAR");
    let scales = doc.floats(&[1.0, 1.0, 1.0, 2.0, 2.0, 2.0], "VEC3");
    // Rotations as normalised i16: identity, then 90° about Y, (0, √½, 0, √½) ≈ 23170 / 32767.
    let rot: Vec<u8> = [0i16, 0, 0, 32767, 0, 23170, 0, 23170].iter().flat_map(|v| v.to_le_bytes()).collect();
    let rotations = doc.accessor(&rot, 2, 5122, "VEC4", r#""normalized":true"#);
    let asset = one_joint_anim(
        &doc,
        &format!(
            r#"{{"input":{times},"output":{scales},"interpolation":"STEP"}},{{"input":{times},"output":{rotations},"interpolation":"STEP"}}"#
        ),
        r#"{"sampler":0,"target":{"node":0,"path":"scale"}},{"sampler":1,"target":{"node":0,"path":"rotation"}}"#,
    );
    // The first key holds until the second: at 0.95 s (between 30 Hz frames 28 and 29, both
    // before the step) the scale is still 1, from 1 s on it is 2.
    assert_vec3_near(sample(&asset, 0, 0.95)[0].scale, [1.0; 3], 1e-6, "scale before step");
    assert_vec3_near(sample(&asset, 0, 1.0)[0].scale, [2.0; 3], 1e-6, "scale at step");
    assert_quat_near(sample(&asset, 0, 0.5)[0].rotation, [0.0, 0.0, 0.0, 1.0], 1e-6, "rotation before step");
    let q = sample(&asset, 0, 1.0)[0].rotation;
    assert!(q.angle_between(Quat::from_rotation_y(std::f32::consts::FRAC_PI_2)) < 1e-4, "{q:?}");
}

#[test]
fn cubic_spline_sampler() {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 2.0], "SCALAR");
    // Per key: in-tangent, value, out-tangent. Key 0: value 0, out-tangent 1/s along x;
    // key 1: in-tangent 0, value 1. Hermite at s = 1/2 with dt = 2 s:
    // h10·dt·1 + h01·1 = 0.125·2 + 0.5 = 0.75; at s = 1/4: (0.140625·2 + 0.15625) = 0.4375.
    #[rustfmt::skip]
    let values = doc.floats(&[
        9.0, 9.0, 9.0,  0.0, 0.0, 0.0,  1.0, 0.0, 0.0,
        0.0, 0.0, 0.0,  1.0, 0.0, 0.0,  9.0, 9.0, 9.0,
    ], "VEC3");
    let asset = one_joint_anim(
        &doc,
        &format!(r#"{{"input":{times},"output":{values},"interpolation":"CUBICSPLINE"}}"#),
        r#"{"sampler":0,"target":{"node":0,"path":"translation"}}"#,
    );
    // 30 Hz over 2 s puts frames on 0.5 s and 1 s; the unused outer tangents (9) never show.
    for (t, x) in [(0.0, 0.0), (0.5, 0.4375), (1.0, 0.75), (2.0, 1.0)] {
        assert_vec3_near(sample(&asset, 0, t)[0].translation, [x, 0.0, 0.0], 1e-5, &format!("t = {t}"));
    }
}

#[test]
fn an_animation_of_morph_weights_alone_makes_no_clip_and_unrelated_animations_are_skipped() {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 1.0], "SCALAR");
    let weights = doc.floats(&[0.0, 1.0], "SCALAR");
    let values = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], "VEC3");
    let body = format!(
        r#""nodes":[{{"name":"j"}},{{"name":"other"}}],"skins":[{{"joints":[0]}}],"animations":[
        {{"name":"weights_only","samplers":[{{"input":{times},"output":{weights}}}],"channels":[{{"sampler":0,"target":{{"node":0,"path":"weights"}}}}]}},
        {{"name":"other_node","samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":1,"path":"translation"}}}}]}},
        {{"name":"moves_j","samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":0,"path":"translation"}}}}]}}]"#
    );
    let asset = load_str(&doc.json(&body), &opts()).unwrap();
    let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["moves_j"]);
    assert_eq!(asset.clip_animations, [vec![2]]);
}

/// A joint and a face mesh of two morph targets (with `mesh_extras` on the mesh), animated by
/// one animation that moves the joint and weights the face with `weights` over keys 0 s and 1 s
/// (`interpolation`); `count` overrides the weights accessor's count.
fn morph_file(mesh_extras: &str, weights: &[f32], interpolation: &str, count: Option<usize>) -> String {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 1.0], "SCALAR");
    let moves = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], "VEC3");
    let bytes: Vec<u8> = weights.iter().flat_map(|v| v.to_le_bytes()).collect();
    let weights = doc.accessor(&bytes, count.unwrap_or(weights.len()), 5126, "SCALAR", "");
    let positions = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0], "VEC3");
    let jaw = doc.floats(&[0.0, -0.1, 0.0, 0.0, -0.1, 0.0, 0.0, 0.0, 0.0], "VEC3");
    let blink = doc.floats(&[0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "VEC3");
    let body = format!(
        r#""nodes":[{{"name":"j"}},{{"name":"face","mesh":0}}],"skins":[{{"joints":[0]}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":{positions}}},"targets":[{{"POSITION":{jaw}}},{{"POSITION":{blink}}}]}}],"weights":[0,0]{mesh_extras}}}],
        "animations":[{{"name":"talk","samplers":[{{"input":{times},"output":{moves}}},{{"input":{times},"output":{weights},"interpolation":"{interpolation}"}}],
        "channels":[{{"sampler":0,"target":{{"node":0,"path":"translation"}}}},{{"sampler":1,"target":{{"node":1,"path":"weights"}}}}]}}]"#
    );
    doc.json(&body)
}

#[test]
fn morph_weight_channels_become_clip_curves_named_by_target() {
    // Per key, one weight per target: jawOpen 0 → 1, blink 1 → 0.5.
    let keys = [0.0, 1.0, 1.0, 0.5];
    let once = GltfOptions { looping: false, ..opts() };
    let named = load_str(&morph_file(r#","extras":{"targetNames":["jawOpen","blink"]}"#, &keys, "LINEAR", None), &once)
        .unwrap();
    let clip = &named.clips[0];
    let names: Vec<&str> = clip.curves().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["jawOpen", "blink"]);
    for (t, jaw, blink) in [(0.0, 0.0, 1.0), (0.5, 0.5, 0.75), (1.0, 1.0, 0.5)] {
        let got = [clip.sample_curve(0, t).unwrap(), clip.sample_curve(1, t).unwrap()];
        assert!((got[0] - jaw).abs() < 1e-6 && (got[1] - blink).abs() < 1e-6, "t = {t}: {got:?}");
    }
    // Without targetNames (or with the wrong number of them), curves are named by index.
    for extras in ["", r#","extras":{"targetNames":["only"]}"#] {
        let asset = load_str(&morph_file(extras, &keys, "STEP", None), &opts()).unwrap();
        let names: Vec<&str> = asset.clips[0].curves().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["face/0", "face/1"], "{extras}");
        let blink = asset.clips[0].sample_curve(1, 0.9).unwrap();
        assert!((blink - 1.0).abs() < 1e-6, "a step holds the first key: {blink}");
    }
    // A cubic spline's keys carry in-tangents, values and out-tangents per target.
    #[rustfmt::skip]
    let cubic = [
        9.0, 9.0,  0.0, 1.0,  0.0, 0.0,
        0.0, 0.0,  1.0, 0.5,  9.0, 9.0,
    ];
    let asset = load_str(&morph_file("", &cubic, "CUBICSPLINE", None), &opts()).unwrap();
    let jaw = asset.clips[0].sample_curve(0, 0.5).unwrap();
    assert!((jaw - 0.5).abs() < 1e-6, "flat tangents ease through the middle: {jaw}");
}

#[test]
fn hostile_morph_weight_channels_are_typed_errors() {
    // One weight short of two keys × two targets.
    let err = load_str(&morph_file("", &[0.0, 1.0, 1.0], "LINEAR", None), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::BadMorphWeights { animation: 0, channel: 1, .. }), "{err}");
    // An accessor that claims more weights than its bytes hold (a truncated buffer).
    let err = load_str(&morph_file("", &[0.0, 1.0, 1.0, 0.5], "LINEAR", Some(400)), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::AccessorOutOfRange { .. }), "{err}");
    // A weights channel on the joint, which has no mesh.
    let file = morph_file("", &[0.0, 1.0, 1.0, 0.5], "LINEAR", None)
        .replace(r#""sampler":1,"target":{"node":1"#, r#""sampler":1,"target":{"node":0"#);
    let err = load_str(&file, &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::BadMorphWeights { what, .. } if what.contains("no mesh")), "{err}");
    // Weights that are not finite make no curve.
    let err = load_str(&morph_file("", &[0.0, f32::NAN, 1.0, 0.5], "LINEAR", None), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::Clip { .. }), "{err}");
}

/// Two one-joint animations of 2 s with the given `extras` JSON on the first.
fn animations_with_extras(extras: &str, options: &GltfOptions) -> Result<GltfAsset, GltfError> {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 2.0], "SCALAR");
    let values = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], "VEC3");
    let body = format!(
        r#""nodes":[{{"name":"j"}}],"skins":[{{"joints":[0]}}],"animations":[
        {{"name":"walk","extras":{extras},"samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":0,"path":"translation"}}}}]}},
        {{"name":"idle","extras":{{"events":[{{"name":"blink","time":1.0}}]}},"samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":0,"path":"translation"}}}}]}}]"#
    );
    load_str(&doc.json(&body), options)
}

#[test]
fn animation_extras_events_become_clip_events() {
    use throng::clip::ClipEvent;
    let asset = animations_with_extras(
        r#"{"author":"x","events":[{"name":"footstep","time":0.4},{"name":"footstep","time":1.4}]}"#,
        &opts(),
    )
    .unwrap();
    assert_eq!(asset.clips[0].events(), [ClipEvent::new("footstep", 0.4), ClipEvent::new("footstep", 1.4)]);
    assert_eq!(asset.clips[1].events(), [ClipEvent::new("blink", 1.0)]);
    // Merged animations pool their events on the one clip.
    let merged = animations_with_extras(
        r#"{"events":[{"name":"footstep","time":0.4}]}"#,
        &GltfOptions { merge_animations: true, ..opts() },
    )
    .unwrap();
    assert_eq!(merged.clips[0].events(), [ClipEvent::new("footstep", 0.4), ClipEvent::new("blink", 1.0)]);
    // Extras that are not about events are some other tool's, and are left alone.
    for extras in [r#""a string""#, r#"{"author":"x"}"#, "[1, 2]"] {
        assert!(animations_with_extras(extras, &opts()).unwrap().clips[0].events().is_empty(), "{extras}");
    }
}

#[test]
fn malformed_animation_events_are_typed_errors() {
    for (extras, at) in [
        (r#"{"events":{"name":"x"}}"#, ""),
        (r#"{"events":[{"time":0.5}]}"#, "[0].name"),
        (r#"{"events":[{"name":"x","time":0.5},{"name":"y","time":"soon"}]}"#, "[1].time"),
    ] {
        match animations_with_extras(extras, &opts()) {
            Err(GltfError::BadEvents { animation: 0, at: got, .. }) => assert_eq!(got, at, "{extras}"),
            other => panic!("{extras}: expected BadEvents, got {other:?}"),
        }
    }
    // A time past the clip's end is the clip's error, naming the animation.
    match animations_with_extras(r#"{"events":[{"name":"late","time":2.5}]}"#, &opts()) {
        Err(GltfError::Clip { animation, source: throng::clip::ClipError::BadEvent { name, .. } }) => {
            assert_eq!((animation.as_str(), name.as_str()), ("walk", "late"));
        }
        other => panic!("expected a clip error, got {other:?}"),
    }
}

#[test]
fn animation_extras_curves_become_clip_curves() {
    let asset = animations_with_extras(
        r#"{"events":[],"curves":{"planted":{"times":[0.0,1.0,2.0],"values":[1.0,0.0,1.0]},"look":{"times":[0.0],"values":[0.5]}}}"#,
        &opts(),
    )
    .unwrap();
    let walk = &asset.clips[0];
    let planted = walk.curve_index("planted").expect("the planted curve");
    for (time_s, expected) in [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0), (1.5, 0.5)] {
        let got = walk.sample_curve(planted, time_s).unwrap();
        assert!((got - expected).abs() < 1e-6, "planted at {time_s} s: {got}, expected {expected}");
    }
    let look = walk.curve_index("look").expect("the look curve");
    assert_eq!(walk.sample_curve(look, 1.3), Some(0.5));
    assert!(asset.clips[1].curves().is_empty(), "the idle animation has none");
    for (extras, at) in [
        (r#"{"curves":[1]}"#, ""),
        (r#"{"curves":{"planted":{"values":[1.0]}}}"#, ".planted.times"),
        (r#"{"curves":{"planted":{"times":[0.0],"values":["up"]}}}"#, ".planted.values"),
    ] {
        match animations_with_extras(extras, &opts()) {
            Err(GltfError::BadCurves { animation: 0, at: got, .. }) => assert_eq!(got, at, "{extras}"),
            other => panic!("{extras}: expected BadCurves, got {other:?}"),
        }
    }
    // Keys that do not make a track are the clip's error, naming the animation.
    match animations_with_extras(r#"{"curves":{"planted":{"times":[0.0,1.0],"values":[1.0]}}}"#, &opts()) {
        Err(GltfError::Clip { animation, source: throng::clip::ClipError::BadCurve { curve, .. } }) => {
            assert_eq!((animation.as_str(), curve.as_str()), ("walk", "planted"));
        }
        other => panic!("expected a clip error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Synthetic files: hierarchy, baking, remapping

#[test]
fn joints_reordered_parent_first_and_mesh_remapped() {
    let mut doc = Doc::default();
    // One triangle, no NORMAL (computed), vertex v bound to skin joint v % 2.
    let positions = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0], "VEC3");
    let joints = doc.accessor(&[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], 3, 5121, "VEC4", "");
    // Weights as normalised u8 that do not sum to 255: renormalised to 1.
    let weights = doc.accessor(&[100, 0, 0, 0, 200, 0, 0, 0, 50, 50, 0, 0], 3, 5121, "VEC4", r#""normalized":true"#);
    // Node 0: armature, translation (0, 0, 5), 90° about Y, uniform scale 2 — baked into the
    // root. Node 1: root joint at (1, 0, 0). Node 2: child joint at (0, 1, 0).
    // The skin lists the child first.
    let body = format!(
        r#""nodes":[
          {{"name":"armature","translation":[0,0,5],"rotation":[0,0.70710677,0,0.70710677],"scale":[2,2,2],"children":[1]}},
          {{"name":"root","translation":[1,0,0],"children":[2]}},
          {{"name":"tip","translation":[0,1,0]}},
          {{"name":"body","mesh":0,"skin":0}}],
        "skins":[{{"joints":[2,1]}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":{positions},"JOINTS_0":{joints},"WEIGHTS_0":{weights}}}}}]}}]"#
    );
    let asset = load_str(&doc.json(&body), &opts()).unwrap();
    assert_eq!(asset.rig.names(), ["root", "tip"]);
    assert_eq!(asset.rig.parent(1), Some(0));
    assert_eq!(asset.joint_nodes, [1, 2]);
    assert_eq!(asset.skin_joint_indices, [1, 0]);
    // Root rest: armature ∘ (1, 0, 0): rotate (2, 0, 0) by 90° about Y → (0, 0, -2), plus
    // (0, 0, 5) → (0, 0, 3); rotation 90° about Y; scale 2. The child is left as it is.
    let rest = asset.rig.rest_pose();
    assert_vec3_near(rest[0].translation, [0.0, 0.0, 3.0], 1e-6, "baked root translation");
    assert_vec3_near(rest[0].scale, [2.0; 3], 1e-6, "baked root scale");
    assert_vec3_near(rest[1].translation, [0.0, 1.0, 0.0], 0.0, "child translation");
    // No inverseBindMatrices: derived, so the rest pose skins to identity.
    for m in rest_skinning(&asset) {
        assert!(m.abs_diff_eq(Mat4::IDENTITY, 1e-5), "{m:?}");
    }
    let mesh = asset.mesh.unwrap();
    // Skin joint 0 is node 2 ("tip", rig joint 1); skin joint 1 is node 1 (rig joint 0).
    assert_eq!(mesh.joints, [[1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]]);
    assert_eq!(mesh.weights[0], [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(mesh.weights[2], [0.5, 0.5, 0.0, 0.0]);
    // Counter-clockwise in the XY plane: +Z.
    assert!(mesh.normals.iter().all(|n| *n == [0.0, 0.0, 1.0]), "{:?}", mesh.normals);
    assert_eq!(mesh.indices, [0, 1, 2]);
}

#[test]
fn baked_armature_moves_root_keys() {
    let mut doc = Doc::default();
    let times = doc.floats(&[0.0, 1.0], "SCALAR");
    let values = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], "VEC3");
    // Armature: translation (0, 2, 0), 90° about Z, scale 3. A root key at (1, 0, 0) lands at
    // (0, 2, 0) + Rz(90°)(3, 0, 0) = (0, 5, 0); at t = 0.5, (0.5, 0, 0) → (0, 3.5, 0).
    let body = format!(
        r#""nodes":[{{"translation":[0,2,0],"rotation":[0,0,0.70710677,0.70710677],"scale":[3,3,3],"children":[1]}},{{"name":"root"}}],
        "skins":[{{"joints":[1]}}],
        "animations":[{{"samplers":[{{"input":{times},"output":{values}}}],"channels":[{{"sampler":0,"target":{{"node":1,"path":"translation"}}}}]}}]"#
    );
    let asset = load_str(&doc.json(&body), &GltfOptions { looping: false, ..opts() }).unwrap();
    assert_eq!(asset.clips[0].name(), "animation0");
    assert_vec3_near(sample(&asset, 0, 1.0)[0].translation, [0.0, 5.0, 0.0], 1e-5, "key 1");
    assert_vec3_near(sample(&asset, 0, 0.5)[0].translation, [0.0, 3.5, 0.0], 1e-5, "mid");
    assert_vec3_near(sample(&asset, 0, 0.5)[0].scale, [3.0; 3], 1e-6, "scale");
}

// ---------------------------------------------------------------------------------------------
// Bad files

/// The sample model `name` copied into a scratch folder: its `.gltf` and the folder.
fn copy_sample(name: &str, tag: &str) -> Option<(PathBuf, TempDir)> {
    let src = sample_dir(name)?;
    let dir = TempDir::new(&format!("gltf-{tag}"));
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    Some((dir.join(format!("{name}.gltf")), dir))
}

#[test]
fn truncated_bin_is_an_error() {
    let Some((gltf, dir)) = copy_sample("RiggedSimple", "trunc-bin") else { return };
    let bin = dir.join("RiggedSimple0.bin");
    let file = std::fs::OpenOptions::new().write(true).open(&bin).unwrap();
    file.set_len(6000).unwrap();
    drop(file);
    let err = load_gltf(&gltf, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::TruncatedBuffer { buffer: 0, declared_bytes: 6128, actual_bytes: 6000 }), "{err}");
    assert!(err.to_string().contains("6128"), "{err}");
}

#[test]
fn missing_bin_is_an_io_error_naming_the_file() {
    let Some((gltf, dir)) = copy_sample("RiggedSimple", "missing-bin") else { return };
    std::fs::remove_file(dir.join("RiggedSimple0.bin")).unwrap();
    let err = load_gltf(&gltf, &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::Io { path, .. } if path.ends_with("RiggedSimple0.bin")), "{err}");
}

#[test]
fn truncated_glb_is_an_error() {
    let Some(dir) = sample_dir("RiggedSimple") else { return };
    let glb = glb_from(&dir.join("RiggedSimple.gltf"), &dir.join("RiggedSimple0.bin"));
    for len in [glb.len() - 1, glb.len() / 2, 30, 11, 4] {
        let err = load_gltf_from_slice(&glb[..len], None, &opts()).unwrap_err();
        assert!(matches!(err, GltfError::Glb { .. }), "{len} bytes: {err}");
    }
    // A header that lies about a shorter BIN chunk: the buffer is then truncated.
    let mut short = glb.clone();
    let bin_len_at = 12 + 8 + u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    short[bin_len_at..bin_len_at + 4].copy_from_slice(&100u32.to_le_bytes());
    let err = load_gltf_from_slice(&short, None, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::TruncatedBuffer { buffer: 0, declared_bytes: 6128, actual_bytes: 100 }), "{err}");
}

fn two_joint_body(extra_skin: &str) -> String {
    format!(
        r#""nodes":[{{"name":"a","children":[1]}},{{"name":"b","translation":[0,1,0]}}],"skins":[{{"joints":[0,1]{extra_skin}}}]"#
    )
}

#[test]
fn too_few_inverse_bind_matrices() {
    let mut doc = Doc::default();
    let ibm = doc.floats(&Mat4::IDENTITY.to_cols_array(), "MAT4");
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::InverseBindCount { skin: 0, matrices: 1, joints: 2, .. }), "{err}");
}

#[test]
fn inverse_bind_matrices_are_used_and_reordered() {
    let mut doc = Doc::default();
    // Skin order [1, 0] (child first): the second matrix belongs to the root.
    let child = Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0));
    let root = Mat4::from_scale(Vec3::splat(0.5));
    let flat: Vec<f32> = child.to_cols_array().into_iter().chain(root.to_cols_array()).collect();
    let ibm = doc.floats(&flat, "MAT4");
    let body = format!(
        r#""nodes":[{{"name":"a","children":[1]}},{{"name":"b","translation":[0,1,0]}}],"skins":[{{"joints":[1,0],"inverseBindMatrices":{ibm}}}]"#
    );
    let asset = load_str(&doc.json(&body), &opts()).unwrap();
    assert_eq!(asset.rig.inverse_bind(), [root, child]);
}

/// An inverse bind matrix whose last row is not `(0, 0, 0, 1)` (glTF's rule) is refused, naming
/// the skin, the rig joint and the row.
#[test]
fn projective_inverse_bind_matrix_is_refused() {
    let mut doc = Doc::default();
    let mut projective = Mat4::IDENTITY.to_cols_array();
    projective[7] = 0.5;
    let flat: Vec<f32> = Mat4::IDENTITY.to_cols_array().into_iter().chain(projective).collect();
    let ibm = doc.floats(&flat, "MAT4");
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(
        matches!(&err, GltfError::Rig { skin: 0, source: RigError::NotAffine { joint: 1, row, .. } } if *row == [0.0, 0.5, 0.0, 1.0]),
        "{err}"
    );
}

#[test]
fn skin_over_256_joints() {
    let nodes: Vec<String> =
        (0..257).map(|i| if i < 256 { format!(r#"{{"children":[{}]}}"#, i + 1) } else { "{}".to_owned() }).collect();
    let joints: Vec<String> = (0..257).map(|i| i.to_string()).collect();
    let body = format!(r#""nodes":[{}],"skins":[{{"joints":[{}]}}]"#, nodes.join(","), joints.join(","));
    let err = load_str(&Doc::default().json(&body), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Rig { skin: 0, source: RigError::TooManyJoints { num_joints: 257 } }), "{err}");
}

#[test]
fn accessor_past_its_buffer_view() {
    let mut doc = Doc::default();
    let ibm = doc.floats(&[Mat4::IDENTITY.to_cols_array(), Mat4::IDENTITY.to_cols_array()].concat(), "MAT4");
    // Claim 3 matrices (192 bytes) in a 128-byte view.
    doc.accessors[ibm] = doc.accessors[ibm].replace(r#""count":2"#, r#""count":3"#);
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::AccessorOutOfRange { accessor, .. } if *accessor == ibm), "{err}");
    // A byte offset that pushes the same two matrices past the view's end.
    let mut doc = Doc::default();
    let ibm = doc.floats(&[Mat4::IDENTITY.to_cols_array(), Mat4::IDENTITY.to_cols_array()].concat(), "MAT4");
    doc.accessors[ibm] = doc.accessors[ibm].replace(r#""count":2"#, r#""count":2,"byteOffset":4"#);
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::AccessorOutOfRange { accessor, .. } if *accessor == ibm), "{err}");
}

#[test]
fn buffer_view_past_its_buffer() {
    let mut doc = Doc::default();
    let ibm = doc.floats(&[Mat4::IDENTITY.to_cols_array(), Mat4::IDENTITY.to_cols_array()].concat(), "MAT4");
    doc.views[0] = doc.views[0].replace(r#""byteOffset":0"#, r#""byteOffset":64"#);
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(
        matches!(&err, GltfError::AccessorOutOfRange { accessor, what } if *accessor == ibm && what.contains("buffer 0")),
        "{err}"
    );
}

#[test]
fn wrong_accessor_type_for_a_semantic() {
    let mut doc = Doc::default();
    // Inverse bind matrices given as VEC4.
    let ibm = doc.floats(&[0.0; 8], "VEC4");
    let err = load_str(&doc.json(&two_joint_body(&format!(r#","inverseBindMatrices":{ibm}"#))), &opts()).unwrap_err();
    assert!(matches!(&err, GltfError::UnsupportedAccessor { accessor, .. } if *accessor == ibm), "{err}");
}

#[test]
fn garbage_and_missing_skins() {
    let err = load_gltf_from_slice(b"\x00\x01 this is not JSON", None, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Parse { .. }), "{err}");
    let err = load_gltf_from_slice(b"", None, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Parse { .. }), "{err}");
    let no_skin = Doc::default().json(r#""nodes":[{"name":"a"}]"#);
    assert!(matches!(load_str(&no_skin, &opts()), Err(GltfError::SkinNotFound { skin: 0, num_skins: 0 })));
    let err = load_str(&Doc::default().json(&two_joint_body("")), &GltfOptions { skin: 3, ..opts() }).unwrap_err();
    assert!(matches!(err, GltfError::SkinNotFound { skin: 3, num_skins: 1 }), "{err}");
    let err = load_gltf(Path::new("/nonexistent/throng.gltf"), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Io { .. }), "{err}");
}

#[test]
fn bad_buffer_uris() {
    let with_uri = |uri: &str| {
        format!(
            r#"{{"asset":{{"version":"2.0"}},{},"buffers":[{{"byteLength":4,"uri":"{uri}"}}]}}"#,
            two_joint_body("")
        )
    };
    let err = load_str(&with_uri("data:application/octet-stream;base64,AA!A"), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Base64 { buffer: 0, position: 2 }), "{err}");
    let err = load_str(&with_uri("https://example.com/a.bin"), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::UnsupportedUri { buffer: 0, .. }), "{err}");
    let err = load_str(&with_uri("a.bin"), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::UnsupportedUri { buffer: 0, .. }), "no base folder: {err}");
    // A data URI shorter than byteLength.
    let err = load_str(&with_uri("data:application/octet-stream;base64,AAA="), &opts()).unwrap_err();
    assert!(matches!(err, GltfError::TruncatedBuffer { buffer: 0, declared_bytes: 4, actual_bytes: 2 }), "{err}");
    assert_eq!(decode_base64(b"AAA=").unwrap(), [0, 0]);
}

#[test]
fn joint_index_past_the_skin() {
    let mut doc = Doc::default();
    let positions = doc.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0], "VEC3");
    let joints = doc.accessor(&[0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0], 3, 5121, "VEC4", "");
    let weights = doc.floats(&[1.0, 0.0, 0.0, 0.0].repeat(3), "VEC4");
    let body = format!(
        r#""nodes":[{{"name":"a","children":[1]}},{{"name":"b"}},{{"mesh":0,"skin":0}}],"skins":[{{"joints":[0,1]}}],
        "meshes":[{{"primitives":[{{"attributes":{{"POSITION":{positions},"JOINTS_0":{joints},"WEIGHTS_0":{weights}}}}}]}}]"#
    );
    let err = load_str(&doc.json(&body), &opts()).unwrap_err();
    assert!(
        matches!(&err, GltfError::BadPrimitive { mesh: 0, primitive: 0, what } if what.contains("vertex 2")),
        "{err}"
    );
}

#[test]
fn node_cycles_and_shared_children() {
    // Node 0 → 1 → 0: a cycle with no root, which must not hang the walk up to a joint parent.
    let cycle = Doc::default().json(r#""nodes":[{"children":[1]},{"children":[0]}],"skins":[{"joints":[0,1]}]"#);
    let err = load_str(&cycle, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Hierarchy { .. }), "{err}");
    // Node 2 claimed by nodes 0 and 1.
    let shared = Doc::default().json(r#""nodes":[{"children":[2]},{"children":[2]},{}],"skins":[{"joints":[0,1,2]}]"#);
    let err = load_str(&shared, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Hierarchy { node: 2, .. }), "{err}");
    // A joint listed twice.
    let twice = Doc::default().json(r#""nodes":[{"children":[1]},{}],"skins":[{"joints":[0,1,1]}]"#);
    let err = load_str(&twice, &opts()).unwrap_err();
    assert!(matches!(err, GltfError::Hierarchy { node: 1, .. }), "{err}");
}

#[test]
fn animation_extras_sync_markers_become_clip_markers() {
    use throng::clip::ClipEvent;
    let extras = r#"{"events":[{"name":"footstep","time":0.4}],"syncMarkers":[{"name":"left","time":0.4},{"name":"right","time":1.4}]}"#;
    let asset = animations_with_extras(extras, &opts()).unwrap();
    assert_eq!(asset.clips[0].markers(), [ClipEvent::new("left", 0.4), ClipEvent::new("right", 1.4)]);
    assert_eq!(asset.clips[0].events(), [ClipEvent::new("footstep", 0.4)], "events and markers stay apart");
    assert!(asset.clips[1].markers().is_empty());
    match animations_with_extras(r#"{"syncMarkers":[{"name":"left"}]}"#, &opts()) {
        Err(GltfError::BadEvents { animation: 0, at, .. }) => assert_eq!(at, "syncMarkers[0].time"),
        other => panic!("expected BadEvents, got {other:?}"),
    }
}
