//! A graph binds procedural chain weights (`chainWeights`) to a parameter or a clip curve:
//! compiled with the graph, read per crowd (`Crowd::chain_weight_bindings`), written into the
//! procedural targets before the stage (`ChainWeightsJob`); every bad binding is refused with
//! a typed error.

use std::sync::Arc;

use glam::{Mat4, Quat, Vec3};
use throng::eval::EvalError;
use throng::eval::procedural::{ChainWeightsJob, ProceduralJob};
use throng::graph::format::ChainRef;
use throng::graph::{ChainWeightSource, CompiledGraph, GraphError, ProblemKind};
use throng::program::{
    ChainPart, ChainWeightBinding, ChainWeightInput, LookAtChain, ProceduralError, ProceduralRig, ProceduralSetup,
    ProceduralTargets, TwoBoneChain,
};
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd};
use throng::{Clip, Interpolation, Rig, Track, Transform};

const DT_S: f32 = 0.1;

/// hip → knee → ankle, and a neck → head apart from it.
fn rig() -> Rig {
    Rig::new(
        ["hip", "knee", "ankle", "neck", "head"].map(String::from).to_vec(),
        vec![None, Some(0), Some(1), None, Some(3)],
        vec![
            Transform::from_translation(Vec3::Y),
            Transform::from_translation_rotation(Vec3::NEG_Y * 0.45, Quat::from_rotation_x(-0.3)),
            Transform::from_translation(Vec3::NEG_Y * 0.45),
            Transform::from_translation(Vec3::Y * 1.5),
            Transform::from_translation(Vec3::Y * 0.1),
        ],
        None,
    )
    .unwrap()
}

fn setup(rig: &Rig) -> ProceduralRig {
    ProceduralSetup {
        look_at: vec![LookAtChain::even(vec![3, 4], Vec3::Z)],
        two_bone: vec![TwoBoneChain::new(0, 1, 2)],
        ground: None,
    }
    .check(rig)
    .unwrap()
}

/// A one-second looping walk whose "planted" curve is 1 for its first half, 0 for the second.
fn walk(rig: &Rig) -> Clip {
    Clip::from_poses("walk", rig.num_joints(), rig.rest_pose().repeat(31), 1.0, true)
        .unwrap()
        .with_curve(
            "planted",
            &Track { times_s: vec![0.0, 0.5], values: vec![1.0, 0.0], interpolation: Interpolation::Step },
        )
        .unwrap()
}

fn graph(chain_weights: &str, parameters: &str) -> String {
    format!(
        r#"{{
            "layers": [{{
                "name": "Base",
                "states": [{{ "name": "START" }}, {{ "name": "Walk", "speed": 1, "loop": true }}],
                "transitions": [{{ "from": "START", "to": "Walk" }}]
            }}],
            "parameters": {{ {parameters} }}
            {chain_weights}
        }}"#
    )
}

const LOOK: &str = r#""look": { "name": "look", "type": "FLOAT", "value": 0 }"#;

fn crowd(json: &str, characters: usize) -> (Crowd, ArchetypeId, Vec<throng::state::CharacterHandle>) {
    let graph = Arc::new(CompiledGraph::from_json(json).unwrap());
    let archetype = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 })]).unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(archetype);
    let handles = (0..characters).map(|_| crowd.spawn(kind).unwrap()).collect();
    (crowd, kind, handles)
}

/// Writes the crowd's bound weights into `targets`, as a frame does before the stage.
fn resolve(crowd: &Crowd, kind: ArchetypeId, clips: &[Clip], targets: &mut ProceduralTargets) -> Result<(), EvalError> {
    let bindings = crowd.chain_weight_bindings(kind).unwrap();
    let num_layers = crowd.archetype(kind).unwrap().graph().layers().len();
    ChainWeightsJob {
        clips,
        samples: crowd.samples(kind).unwrap(),
        programs: crowd.programs(kind).unwrap(),
        num_layers,
        bindings: &bindings,
        targets,
    }
    .run()
}

fn ankle(rig: &Rig, pose: &[Transform]) -> Vec3 {
    let mut model = vec![Mat4::IDENTITY; pose.len()];
    throng::pose::local_to_model(rig.parents(), pose, &mut model);
    model[2].w_axis.truncate()
}

#[test]
fn a_foot_is_pinned_only_while_the_clips_planted_curve_says_so() {
    let rig = rig();
    let setup = setup(&rig);
    let clips = vec![walk(&rig)];
    let json = graph(r#", "chainWeights": [{ "chain": "twoBone 0", "curve": "planted", "layer": "Base" }]"#, "");
    let (mut crowd, kind, _) = crowd(&json, 1);
    let mut targets = ProceduralTargets::new(&setup, 1);
    let target = Vec3::new(0.0, 0.3, 0.3);
    // The target is set once, at weight 0: the curve alone decides when the foot goes there.
    targets.set_two_bone(0, &[0], &[target], &[Vec3::Z], &[Quat::IDENTITY], &[0.0]).unwrap();
    let (mut pinned, mut free) = (0, 0);
    for frame in 0..30 {
        crowd.update(DT_S).unwrap();
        resolve(&crowd, kind, &clips, &mut targets).unwrap();
        let time_s = crowd.samples(kind).unwrap()[0].time_s;
        let planted = clips[0].sample_curve(0, time_s).unwrap();
        let weight = targets.two_bone()[0].weight[0];
        assert!((weight - planted).abs() <= 1e-6, "frame {frame} at {time_s} s: weight {weight}, curve {planted}");
        let mut pose = rig.rest_pose().to_vec();
        ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut pose }.run().unwrap();
        if weight == 1.0 {
            pinned += 1;
            let miss = ankle(&rig, &pose).distance(target);
            assert!(miss < 1e-3, "frame {frame}: the planted foot misses its target by {miss} m");
        } else if weight == 0.0 {
            free += 1;
            assert_eq!(pose, rig.rest_pose(), "frame {frame}: the lifted foot is left as animated");
        }
    }
    assert!(pinned >= 10 && free >= 10, "both halves of the step were seen: {pinned} pinned, {free} free");
}

#[test]
fn a_parameter_bound_look_at_weight_follows_the_parameter_each_update() {
    let rig = rig();
    let setup = setup(&rig);
    let clips = vec![walk(&rig)];
    let json = graph(r#", "chainWeights": [{ "chain": "lookAt 0", "parameter": "look" }]"#, LOOK);
    let (mut crowd, kind, handles) = crowd(&json, 3);
    let look = crowd.param(kind, "look").unwrap();
    let mut targets = ProceduralTargets::new(&setup, 3);
    targets.set_look_at(0, &[0, 1, 2], &[Vec3::new(2.0, 1.6, 1.0); 3], &[0.0; 3]).unwrap();
    for values in [[0.0, 0.5, 1.0], [0.25, 2.0, -1.0], [1.0, 0.0, 0.75]] {
        crowd.set_float(look, &handles, &values).unwrap();
        crowd.update(DT_S).unwrap();
        resolve(&crowd, kind, &clips, &mut targets).unwrap();
        let expected = values.map(|v| v.clamp(0.0, 1.0));
        assert_eq!(targets.look_at()[0].weight, expected, "parameter {values:?}");
        let mut poses = rig.rest_pose().repeat(3);
        ProceduralJob { rig: &rig, setup: &setup, targets: &targets, poses: &mut poses }.run().unwrap();
        for (c, &w) in expected.iter().enumerate() {
            let same = poses[c * 5..(c + 1) * 5] == *rig.rest_pose();
            assert_eq!(same, w == 0.0, "character {c} at weight {w}");
        }
    }
}

#[test]
fn graphs_compile_their_chain_weights_and_playcanvas_graphs_have_none() {
    let plain = CompiledGraph::from_json(&graph("", LOOK)).unwrap();
    assert!(plain.chain_weights().is_empty());
    let json = graph(
        r#", "chainWeights": [
            { "chain": "lookAt 0", "parameter": "look" },
            { "chain": "twoBone 1", "curve": "planted" },
            { "chain": "ground", "curve": "grounded", "layer": "Base" }
        ]"#,
        LOOK,
    );
    let compiled = CompiledGraph::from_json(&json).unwrap();
    let w = compiled.chain_weights();
    assert_eq!(w.len(), 3);
    assert_eq!(w[0].chain, ChainRef::LookAt(0));
    assert!(
        matches!(w[0].source, ChainWeightSource::Parameter(slot) if slot == compiled.parameter("look").unwrap().slot)
    );
    assert_eq!(w[1].chain, ChainRef::TwoBone(1));
    assert_eq!(w[1].source, ChainWeightSource::Curve { curve: "planted".into(), layer: 0 });
    assert_eq!(w[2].chain, ChainRef::Ground);
    let (crowd, kind, _) = crowd(&json, 2);
    let bindings = crowd.chain_weight_bindings(kind).unwrap();
    assert_eq!(bindings[0].part, ChainPart::LookAt(0));
    assert!(matches!(bindings[0].input, ChainWeightInput::Parameter(column) if column == [0.0, 0.0]));
    assert_eq!(
        bindings[1],
        ChainWeightBinding {
            part: ChainPart::TwoBone(1),
            input: ChainWeightInput::Curve { name: "planted", layer: 0 }
        }
    );
    assert_eq!(bindings[2].part, ChainPart::Ground);
}

fn problems(json: &str) -> Vec<ProblemKind> {
    match CompiledGraph::from_json(json) {
        Err(GraphError::Invalid { problems }) => problems.into_iter().map(|p| p.kind).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

fn shape_path(json: &str) -> String {
    match CompiledGraph::from_json(json) {
        Err(GraphError::Shape { path, .. }) => path,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn every_bad_chain_weight_is_refused() {
    let bound = |entries: &str, params: &str| graph(&format!(r#", "chainWeights": [{entries}]"#), params);
    // Unknown parameter, one not FLOAT, an unknown layer, a chain bound twice.
    let found = problems(&bound(r#"{ "chain": "lookAt 0", "parameter": "nope" }"#, LOOK));
    assert!(matches!(&found[..], [ProblemKind::UnknownParameter { name }] if name == "nope"), "{found:?}");
    let flag = r#""flag": { "name": "flag", "type": "BOOLEAN", "value": false }"#;
    let found = problems(&bound(r#"{ "chain": "lookAt 0", "parameter": "flag" }"#, flag));
    assert!(matches!(&found[..], [ProblemKind::ChainWeightParameterType { .. }]), "{found:?}");
    let found = problems(&bound(r#"{ "chain": "twoBone 0", "curve": "planted", "layer": "Upper" }"#, ""));
    assert!(matches!(&found[..], [ProblemKind::UnknownLayer { chain }] if chain == "twoBone 0"), "{found:?}");
    let twice = r#"{ "chain": "ground", "curve": "a" }, { "chain": "ground", "parameter": "look" }"#;
    let found = problems(&bound(twice, LOOK));
    assert!(matches!(&found[..], [ProblemKind::DuplicateName { .. }]), "{found:?}");
    // Malformed entries, each at its path.
    for (entry, path) in [
        (r#"{ "chain": "head", "parameter": "look" }"#, "chainWeights[0].chain"),
        (r#"{ "chain": "lookAt x", "parameter": "look" }"#, "chainWeights[0].chain"),
        (r#"{ "chain": "lookAt 0" }"#, "chainWeights[0]"),
        (r#"{ "chain": "lookAt 0", "parameter": "look", "curve": "c" }"#, "chainWeights[0]"),
        (r#"{ "chain": "lookAt 0", "parameter": "look", "layer": "Base" }"#, "chainWeights[0]"),
        (r#"{ "chain": "lookAt 0", "parameter": "look", "weight": 1 }"#, "chainWeights[0]"),
        (r#"3"#, "chainWeights[0]"),
    ] {
        assert_eq!(shape_path(&bound(entry, LOOK)), path, "{entry}");
    }
    assert_eq!(shape_path(&graph(r#", "chainWeights": {}"#, LOOK)), "chainWeights");

    // Against a crowd's setup and clips: an unknown chain or curve, a bad layer or column.
    let rig = rig();
    let setup = setup(&rig);
    let clips = vec![walk(&rig)];
    let mut targets = ProceduralTargets::new(&setup, 2);
    let before = targets.clone();
    let run = |bindings: &[ChainWeightBinding<'_>], programs_len: usize, targets: &mut ProceduralTargets| {
        let programs = vec![throng::program::LayerProgram::default(); programs_len];
        ChainWeightsJob { clips: &clips, samples: &[], programs: &programs, num_layers: 1, bindings, targets }
            .run()
            .unwrap_err()
    };
    let curve = |name, layer| ChainWeightBinding {
        part: ChainPart::TwoBone(0),
        input: ChainWeightInput::Curve { name, layer },
    };
    let err = run(
        &[curve("planted", 0), ChainWeightBinding { part: ChainPart::TwoBone(1), ..curve("planted", 0) }],
        2,
        &mut targets,
    );
    assert!(matches!(err, EvalError::Procedural(ProceduralError::UnknownChain { index: 1, .. })), "{err:?}");
    let err = run(&[ChainWeightBinding { part: ChainPart::Ground, ..curve("planted", 0) }], 2, &mut targets);
    assert!(matches!(err, EvalError::Procedural(ProceduralError::UnknownChain { .. })), "{err:?}");
    let err = run(&[curve("gone", 0)], 2, &mut targets);
    assert!(matches!(err, EvalError::Procedural(ProceduralError::UnknownCurve { binding: 0, .. })), "{err:?}");
    let err = run(&[curve("planted", 1)], 2, &mut targets);
    assert!(matches!(err, EvalError::Procedural(ProceduralError::BadBinding { binding: 0, .. })), "{err:?}");
    let short = ChainWeightBinding { part: ChainPart::LookAt(0), input: ChainWeightInput::Parameter(&[1.0]) };
    let err = run(&[short], 2, &mut targets);
    assert!(matches!(err, EvalError::Procedural(ProceduralError::BadBinding { binding: 0, .. })), "{err:?}");
    let err = run(&[curve("planted", 0)], 3, &mut targets);
    assert!(matches!(err, EvalError::ProgramCount { .. }), "{err:?}");
    assert_eq!(targets, before, "nothing refused was written");
}
