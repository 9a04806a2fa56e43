//! Animations → clips: channels on skin joints resampled into clips, with their events and
//! curves (from `extras.curves` and from morph-weight channels).

use std::collections::HashMap;

use glam::Quat;
use gltf::accessor::{DataType, Dimensions};
use gltf::animation::{Interpolation as GltfInterpolation, Property};

use super::accessor::{Accept, read_accessor, vec3s};
use super::rig::SkinRig;
use super::{GltfError, GltfOptions};
use crate::clip::{Clip, ClipEvent, Interpolation, JointTracks, Track};

/// A channel's sampler: its interpolation and its key times (the input accessor), for joint
/// tracks and morph-weight curves alike.
fn sampler_keys(
    anim: usize,
    sampler: &gltf::animation::Sampler,
    buffers: &[Vec<u8>],
) -> Result<(Interpolation, Vec<f32>), GltfError> {
    let interpolation = match sampler.interpolation() {
        GltfInterpolation::Linear => Interpolation::Linear,
        GltfInterpolation::Step => Interpolation::Step,
        GltfInterpolation::CubicSpline => Interpolation::CubicSpline,
    };
    let times_s = read_accessor(
        buffers,
        &sampler.input(),
        &|| format!("animation {anim} sampler {} input", sampler.index()),
        Dimensions::Scalar,
        Accept::Float,
    )?;
    Ok((interpolation, times_s))
}

/// Adds one animation's channels on skin joints to `tracks`; returns whether any channel
/// touched the skin.
fn add_animation_tracks(
    animation: &gltf::Animation,
    buffers: &[Vec<u8>],
    skin: &SkinRig,
    tracks: &mut [JointTracks],
) -> Result<bool, GltfError> {
    let joint_of_node: HashMap<usize, usize> = skin.joint_nodes.iter().enumerate().map(|(j, &n)| (n, j)).collect();
    let anim = animation.index();
    let mut touched = false;
    for channel in animation.channels() {
        let property = channel.target().property();
        let Some(&joint) = joint_of_node.get(&channel.target().node().index()) else { continue };
        if property == Property::MorphTargetWeights {
            continue;
        }
        let sampler = channel.sampler();
        let (interpolation, times_s) = sampler_keys(anim, &sampler, buffers)?;
        let output = sampler.output();
        let what = |name: &str| format!("animation {anim} sampler {} {name} output", sampler.index());
        let baked = skin.baked[joint];
        // Baking is linear in the key values (for rotations, left-multiplication by a unit
        // quaternion), so tangents are transformed by the same map without the translation,
        // and LINEAR, STEP and CUBICSPLINE curves all commute with it.
        let cubic = interpolation == Interpolation::CubicSpline;
        let is_value = |i: usize| !cubic || i % 3 == 1;
        let jt = &mut tracks[joint];
        match property {
            Property::Translation | Property::Scale => {
                let values =
                    vec3s(&read_accessor(buffers, &output, &|| what("vector"), Dimensions::Vec3, Accept::Float)?);
                if property == Property::Translation {
                    let values = values
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| if is_value(i) { baked.point(v) } else { baked.vector(v) })
                        .collect();
                    jt.translation = Some(Track { times_s, values, interpolation });
                } else {
                    let values = values.iter().map(|&v| v * baked.scale).collect();
                    jt.scale = Some(Track { times_s, values, interpolation });
                }
            }
            Property::Rotation => {
                const INTS: &[DataType] = &[DataType::I8, DataType::U8, DataType::I16, DataType::U16];
                let flat = read_accessor(
                    buffers,
                    &output,
                    &|| what("rotation"),
                    Dimensions::Vec4,
                    Accept::FloatOrNormalized(INTS),
                )?;
                let values = flat.chunks_exact(4).map(|q| baked.rotation * Quat::from_slice(q)).collect();
                jt.rotation = Some(Track { times_s, values, interpolation });
            }
            // Read as curves by `animation_morph_curves`.
            Property::MorphTargetWeights => continue,
        }
        touched = true;
    }
    Ok(touched)
}

/// An animation's named moments from its `extras` under `key`: `"events"` (`{ "events": [{
/// "name": "footstep", "time": 0.4 }] }`) or `"syncMarkers"` (the same shape), appended to
/// `out`. Extras without the key (other tools' data) add nothing.
fn animation_moments(animation: &gltf::Animation, key: &str, out: &mut Vec<ClipEvent>) -> Result<(), GltfError> {
    let index = animation.index();
    // Events keep the paths they always had; markers name their list.
    let prefix = if key == "events" { "" } else { key };
    let bad = |at: String, what| GltfError::BadEvents { animation: index, at: format!("{prefix}{at}"), what };
    let Some(raw) = animation.extras() else {
        return Ok(());
    };
    let Ok(serde_json::Value::Object(extras)) = serde_json::from_str::<serde_json::Value>(raw.get()) else {
        return Ok(());
    };
    let Some(events) = extras.get(key) else {
        return Ok(());
    };
    let list = events.as_array().ok_or_else(|| bad(String::new(), "expected an array of events"))?;
    for (i, e) in list.iter().enumerate() {
        let name = e
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad(format!("[{i}].name"), "expected a string"))?;
        let time_s = e
            .get("time")
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| bad(format!("[{i}].time"), "expected a number of seconds"))?;
        out.push(ClipEvent::new(name, time_s as f32));
    }
    Ok(())
}

/// An animation's curves from its `extras`
/// (`{ "curves": { "planted": { "times": [0.0, 0.5], "values": [1.0, 0.0] } } }`, keys linear),
/// appended to `out`. Extras without `curves` add nothing.
fn animation_curves(animation: &gltf::Animation, out: &mut Vec<(String, Track<f32>)>) -> Result<(), GltfError> {
    let index = animation.index();
    let bad = |at: String, what| GltfError::BadCurves { animation: index, at, what };
    let Some(raw) = animation.extras() else {
        return Ok(());
    };
    let Ok(serde_json::Value::Object(extras)) = serde_json::from_str::<serde_json::Value>(raw.get()) else {
        return Ok(());
    };
    let Some(curves) = extras.get("curves") else {
        return Ok(());
    };
    let curves = curves.as_object().ok_or_else(|| bad(String::new(), "expected an object of named curves"))?;
    for (name, curve) in curves {
        let numbers = |key: &str| -> Result<Vec<f32>, GltfError> {
            let list = curve
                .get(key)
                .and_then(serde_json::Value::as_array)
                .ok_or_else(|| bad(format!(".{name}.{key}"), "expected an array of numbers"))?;
            list.iter()
                .map(|v| {
                    v.as_f64()
                        .map(|v| v as f32)
                        .ok_or_else(|| bad(format!(".{name}.{key}"), "expected an array of numbers"))
                })
                .collect()
        };
        out.push((name.clone(), Track::linear(numbers("times")?, numbers("values")?)));
    }
    Ok(())
}

/// An animation's morph-weight channels (`"path": "weights"`) as curves, one per morph target
/// of the channel's mesh, appended to `out`: named from the mesh's `extras.targetNames` where
/// it has one per target, else `"{node}/{i}"` (the node's name, or `node{n}`). A name already
/// in `out` (two meshes sharing target names, usually driven alike) keeps its first curve.
fn animation_morph_curves(
    animation: &gltf::Animation,
    buffers: &[Vec<u8>],
    out: &mut Vec<(String, Track<f32>)>,
) -> Result<(), GltfError> {
    const INTS: &[DataType] = &[DataType::I8, DataType::U8, DataType::I16, DataType::U16];
    let anim = animation.index();
    for channel in animation.channels().filter(|c| c.target().property() == Property::MorphTargetWeights) {
        let bad = |what: String| GltfError::BadMorphWeights { animation: anim, channel: channel.index(), what };
        let node = channel.target().node();
        let mesh = node.mesh().ok_or_else(|| bad(format!("node {} has no mesh to weight", node.index())))?;
        let targets = mesh.primitives().next().map_or(0, |p| p.morph_targets().len());
        if targets == 0 {
            return Err(bad(format!("mesh {} has no morph targets", mesh.index())));
        }
        let sampler = channel.sampler();
        let (interpolation, times_s) = sampler_keys(anim, &sampler, buffers)?;
        let weights = read_accessor(
            buffers,
            &sampler.output(),
            &|| format!("animation {anim} sampler {} weights output", sampler.index()),
            Dimensions::Scalar,
            Accept::FloatOrNormalized(INTS),
        )?;
        // Per key, one weight per target; a cubic spline key holds in-tangents, values and
        // out-tangents, each one per target.
        let per_key = if interpolation == Interpolation::CubicSpline { 3 } else { 1 };
        if weights.len() != times_s.len() * per_key * targets {
            return Err(bad(format!(
                "{} weights for {} keys of {targets} targets; expected {}",
                weights.len(),
                times_s.len(),
                times_s.len() * per_key * targets
            )));
        }
        let names = target_names(&mesh).filter(|n| n.len() == targets);
        for target in 0..targets {
            let name = match &names {
                Some(names) => names[target].clone(),
                None => {
                    format!("{}/{target}", node.name().map_or_else(|| format!("node{}", node.index()), str::to_owned))
                }
            };
            if out.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let values = weights.iter().skip(target).step_by(targets).copied().collect();
            out.push((name, Track { times_s: times_s.clone(), values, interpolation }));
        }
    }
    Ok(())
}

/// A mesh's `extras.targetNames` (the de facto convention of Blender's and other exporters),
/// when it is a list of strings.
fn target_names(mesh: &gltf::Mesh) -> Option<Vec<String>> {
    let raw = mesh.extras().as_ref()?;
    let extras: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    extras.get("targetNames")?.as_array()?.iter().map(|n| n.as_str().map(str::to_owned)).collect()
}

pub(super) fn build_clips(
    doc: &gltf::Document,
    buffers: &[Vec<u8>],
    skin: &SkinRig,
    options: &GltfOptions,
) -> Result<(Vec<Clip>, Vec<Vec<usize>>), GltfError> {
    let num_joints = skin.rig.num_joints();
    let name_of = |a: &gltf::Animation| a.name().map_or_else(|| format!("animation{}", a.index()), str::to_owned);
    let make = |name: String,
                tracks: &[JointTracks],
                (events, markers): (Vec<ClipEvent>, Vec<ClipEvent>),
                curves: Vec<(String, Track<f32>)>| {
        Clip::from_tracks(name.clone(), &skin.rig, tracks, options.sample_rate_hz, options.looping)
            .and_then(|clip| clip.with_events(events))
            .and_then(|clip| clip.with_markers(markers))
            .and_then(|clip| curves.iter().try_fold(clip, |clip, (curve, track)| clip.with_curve(curve.clone(), track)))
            .map_err(|source| GltfError::Clip { animation: name, source })
    };
    let mut clips = Vec::new();
    let mut sources = Vec::new();
    if options.merge_animations {
        let mut tracks = vec![JointTracks::default(); num_joints];
        let mut used = Vec::new();
        let mut name = None;
        let (mut events, mut markers) = (Vec::new(), Vec::new());
        let mut curves = Vec::new();
        for animation in doc.animations() {
            if add_animation_tracks(&animation, buffers, skin, &mut tracks)? {
                name.get_or_insert_with(|| animation.name().unwrap_or("merged").to_owned());
                used.push(animation.index());
                animation_moments(&animation, "events", &mut events)?;
                animation_moments(&animation, "syncMarkers", &mut markers)?;
                animation_curves(&animation, &mut curves)?;
                animation_morph_curves(&animation, buffers, &mut curves)?;
            }
        }
        if let Some(name) = name {
            clips.push(make(name, &tracks, (events, markers), curves)?);
            sources.push(used);
        }
    } else {
        for animation in doc.animations() {
            let mut tracks = vec![JointTracks::default(); num_joints];
            if add_animation_tracks(&animation, buffers, skin, &mut tracks)? {
                let (mut events, mut markers, mut curves) = (Vec::new(), Vec::new(), Vec::new());
                animation_moments(&animation, "events", &mut events)?;
                animation_moments(&animation, "syncMarkers", &mut markers)?;
                animation_curves(&animation, &mut curves)?;
                animation_morph_curves(&animation, buffers, &mut curves)?;
                clips.push(make(name_of(&animation), &tracks, (events, markers), curves)?);
                sources.push(vec![animation.index()]);
            }
        }
    }
    Ok((clips, sources))
}
