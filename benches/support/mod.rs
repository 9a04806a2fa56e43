//! Shared generators for the benches: crowds of the built-in character, and a locomotion crowd
//! with varied parameters. Each bench uses a part of this module.
#![allow(dead_code)]

pub mod cpu_time;

use std::ops::Range;
use std::sync::Arc;

use glam::{Quat, Vec3};
use throng::demo::DemoCharacter;
use throng::graph::CompiledGraph;
use throng::program::{ClipSample, LayerBlend, LayerProgram, LayerSetup, LayerSpace, SwitchMode};
use throng::program::{LookAtChain, ProceduralRig, ProceduralSetup, ProceduralTargets, TwoBoneChain};
use throng::setup::mask_of;
use throng::state::{Archetype, ArchetypeId, ClipBinding, Crowd, OneShot};
use throng::{Clip, ClipEvent, Rig, Transform};

/// Every character samples clips `a` and `b` at its own time (spread over a few seconds so
/// that characters read different frames) with a blend weight varying across the crowd.
pub fn two_clip_crowd(num_characters: usize, a: u32, b: u32) -> (Vec<ClipSample>, Vec<Range<u32>>) {
    let mut samples = Vec::with_capacity(num_characters * 2);
    let mut ranges = Vec::with_capacity(num_characters);
    for i in 0..num_characters {
        let time_s = (i as f32 * 0.618_034).fract() * 3.0;
        let weight = (i as f32 * 0.414_213_5).fract();
        let start = samples.len() as u32;
        samples.push(ClipSample::new(a, time_s, 1.0 - weight));
        samples.push(ClipSample::new(b, time_s * 0.7, weight));
        ranges.push(start..start + 2);
    }
    (samples, ranges)
}

/// Frames a bench character spends between switches in [`layered_frame`], and of those, how
/// many a transition runs: a quarter of the crowd is transitioning on any frame.
const SWITCH_PERIOD: usize = 32;
const TRANSITION_FRAMES: usize = 8;

/// One frame of a three-layer crowd (base, a masked override, an additive layer; see
/// [`humanoid_scenario`]): every base layer blends clips 0 and 1 at its own time; a quarter of
/// the crowd is transitioning, alternately by crossfade (both states sampled) and quintic
/// inertialization (switch frame sampled twice); the override layer plays clip 1 and the
/// additive layer clip 2 (a delta).
pub fn layered_frame(num_characters: usize, frame: usize) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    let dt = 1.0 / 60.0;
    let mut samples = Vec::with_capacity(num_characters * 5);
    let mut programs = Vec::with_capacity(num_characters * 3);
    for i in 0..num_characters {
        let time_s = (i as f32 * 0.618_034).fract() * 3.0 + frame as f32 * dt;
        let weight = (i as f32 * 0.414_213_5).fract();
        let phase = (i + frame) % SWITCH_PERIOD;
        let crossfade = (i / 4) % 2 == 0;
        let first_sample = samples.len() as u32;
        let mut base = LayerProgram {
            first_sample,
            num_target: 2,
            target_weight: 1.0,
            progress: 1.0,
            weight: 1.0,
            transition: u32::MAX,
            ..Default::default()
        };
        let mut push_state = |time_s: f32, scale: f32| {
            samples.push(ClipSample::new(0, time_s, (1.0 - weight) * scale));
            samples.push(ClipSample::new(1, time_s * 0.7, weight * scale));
        };
        if phase < TRANSITION_FRAMES {
            let blend = phase as f32 / TRANSITION_FRAMES as f32;
            base.flags = LayerProgram::TRANSITIONING | if phase == 0 { LayerProgram::SWITCHED } else { 0 };
            base.transition = 0;
            base.progress = blend;
            if crossfade {
                base.mode = SwitchMode::Crossfade as u32;
                base.target_weight = blend;
                push_state(time_s, blend);
                push_state(time_s + 1.3, 1.0 - blend);
                base.num_secondary = 2;
            } else {
                base.mode = SwitchMode::InertializeQuintic as u32;
                base.decay_s = TRANSITION_FRAMES as f32 * dt;
                push_state(time_s, 1.0);
                if phase == 0 {
                    push_state(time_s - dt, 1.0);
                    base.num_secondary = 2;
                }
            }
        } else {
            push_state(time_s, 1.0);
        }
        programs.push(base);
        let layer = |first_sample: u32, weight: f32| LayerProgram {
            first_sample,
            num_target: 1,
            target_weight: 1.0,
            progress: 1.0,
            weight,
            transition: u32::MAX,
            ..Default::default()
        };
        programs.push(layer(samples.len() as u32, 0.8));
        samples.push(ClipSample::new(1, time_s * 1.1, 1.0));
        programs.push(layer(samples.len() as u32, 0.5));
        samples.push(ClipSample::new(2, time_s * 0.9, 1.0));
    }
    (samples, programs)
}

/// Every frame of one switch period of [`layered_frame`] as one crowd of `SWITCH_PERIOD ×
/// num_characters` characters (each frame's sample indices moved past the frames before it): a
/// frame's mix of programs with each character's transition phase counted once, for averages
/// such as the GPU work model's (`throng::gpu::work_model`).
pub fn layered_period(num_characters: usize) -> (Vec<ClipSample>, Vec<LayerProgram>) {
    let mut samples = Vec::new();
    let mut programs = Vec::new();
    for frame in 0..SWITCH_PERIOD {
        let (frame_samples, frame_programs) = layered_frame(num_characters, frame);
        let offset = samples.len() as u32;
        programs
            .extend(frame_programs.into_iter().map(|p| LayerProgram { first_sample: p.first_sample + offset, ..p }));
        samples.extend(frame_samples);
    }
    (samples, programs)
}

mod locomotion;
pub use locomotion::{LOCOMOTION, LOCOMOTION_CLIPS};

/// `n` characters of the locomotion graph, spread over its states and blend positions.
pub fn locomotion_crowd(n: usize) -> (Crowd, ArchetypeId) {
    locomotion_crowd_with_events(n, false)
}

/// [`locomotion_crowd`] with its upper-body layer declared a slot and a tenth of the crowd
/// (every tenth character) directed: playing a looping one-shot (clip 7, past the graph's,
/// 1.3 s) on the slot and at time scale 0.8, settled past the one-shot's blend-in.
pub fn directed_crowd(n: usize) -> (Crowd, ArchetypeId) {
    let upper = r#""name": "UpperBody","#;
    let json = LOCOMOTION.replacen(upper, r#""name": "UpperBody", "slot": true,"#, 1);
    let graph = Arc::new(CompiledGraph::from_json(&json).expect("the bench graph loads"));
    let bindings: Vec<(&str, ClipBinding)> = LOCOMOTION_CLIPS
        .iter()
        .enumerate()
        .map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d }))
        .collect();
    let mut durations: Vec<f32> = LOCOMOTION_CLIPS.iter().map(|&(_, d)| d).collect();
    durations.push(1.3);
    let archetype = Archetype::from_bindings(graph, &bindings)
        .expect("every leaf is bound")
        .with_clip_durations(&durations)
        .expect("positive durations");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(archetype);
    let handles: Vec<_> = (0..n).map(|_| crowd.spawn(kind).expect("archetype exists")).collect();
    let speed = crowd.param(kind, "speed").expect("speed");
    let speeds: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.05).collect();
    crowd.set_float(speed, &handles, &speeds).expect("finite speeds");
    let directed: Vec<_> = handles.iter().copied().step_by(10).collect();
    crowd.set_time_scale(&directed, &vec![0.8; directed.len()]).expect("a finite scale");
    let cheer = OneShot { looping: true, ..OneShot::new(LOCOMOTION_CLIPS.len() as u32) };
    crowd.play_one_shot(&directed, "UpperBody", cheer).expect("a slot and a clip with a duration");
    for _ in 0..45 {
        crowd.update(1.0 / 60.0).expect("finite dt");
    }
    (crowd, kind)
}

/// [`locomotion_crowd`], with two footstep events on every clip when `events` is set.
pub fn locomotion_crowd_with_events(n: usize, events: bool) -> (Crowd, ArchetypeId) {
    let graph = Arc::new(CompiledGraph::from_json(LOCOMOTION).expect("the bench graph loads"));
    let bindings: Vec<(&str, ClipBinding)> = LOCOMOTION_CLIPS
        .iter()
        .enumerate()
        .map(|(i, &(p, d))| (p, ClipBinding { clip: i as u32, duration_s: d }))
        .collect();
    let mut archetype = Archetype::from_bindings(graph, &bindings).expect("every leaf is bound");
    if events {
        for (i, &(_, d)) in LOCOMOTION_CLIPS.iter().enumerate() {
            let steps = [ClipEvent::new("left", 0.25 * d), ClipEvent::new("right", 0.75 * d)];
            archetype = archetype.with_clip_events(i as u32, &steps).expect("times inside the clip");
        }
    }
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(archetype);
    let handles: Vec<_> = (0..n).map(|_| crowd.spawn(kind).expect("archetype exists")).collect();
    let speed = crowd.param(kind, "speed").expect("speed");
    let speeds: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.05).collect();
    crowd.set_float(speed, &handles, &speeds).expect("finite speeds");
    let jump = crowd.param(kind, "jump").expect("jump");
    let wave = crowd.param(kind, "wave").expect("wave");
    let jumpers: Vec<_> = handles.iter().copied().step_by(7).collect();
    let wavers: Vec<_> = handles.iter().copied().step_by(5).collect();
    // Settle into a mix of states: some moving, some mid-jump, some waving.
    for frame in 0..45 {
        if frame == 30 {
            crowd.set_trigger(jump, &jumpers, false).expect("trigger");
            crowd.set_trigger(wave, &wavers, false).expect("trigger");
        }
        crowd.update(1.0 / 60.0).expect("finite dt");
    }
    (crowd, kind)
}

/// The GPU benches' scenario (issue 5's) on a built-in humanoid (the 64-joint one unless
/// [`scenario_of`] says otherwise), for [`layered_frame`].
pub struct Scenario {
    /// The humanoid's rig.
    pub rig: Rig,
    /// Walk (0), run (1) and lean as an additive delta over idle's first frame (2).
    pub clips: Vec<Clip>,
    /// The base; an override in mesh space masked to the upper body (`spine_01/*`), playing
    /// clip 1; a whole-body additive layer playing clip 2.
    pub layers: Vec<LayerSetup>,
    /// Idle's first frame, which clip 2's delta is taken against (`Clip::compress_additive`
    /// measures a compressed delta on it).
    pub reference: Vec<Transform>,
}

/// [`Scenario`] for `DemoCharacter::humanoid_64`.
pub fn humanoid_scenario() -> Scenario {
    scenario_of(DemoCharacter::humanoid_64())
}

/// [`Scenario`] for either built-in humanoid (the 26-joint one has the same clips and spine).
pub fn scenario_of(demo: DemoCharacter) -> Scenario {
    let clip = |name: &str| demo.clip(name).expect("the demo's clips");
    let reference = clip("idle").frame(0).to_vec();
    let clips = vec![clip("walk").clone(), clip("run").clone(), clip("lean").to_additive(&reference)];
    let mask = mask_of(&[("spine_01/*".to_owned(), 1.0)], &demo.rig).expect("the demo has a spine");
    let layers = vec![
        LayerSetup::default(),
        LayerSetup { blend: LayerBlend::Override, space: LayerSpace::Mesh, mask: Some(mask), ..LayerSetup::default() },
        LayerSetup { blend: LayerBlend::Additive, space: LayerSpace::Local, mask: None, ..LayerSetup::default() },
    ];
    Scenario { rig: demo.rig, clips, layers, reference }
}

/// Animation LOD's realistic mix of update rates, by share of the crowd in percent: 10 % every
/// frame, 20 % every 2nd, 30 % every 4th, 40 % every 8th — about a third of the crowd evaluated
/// per frame (`Σ share / rate` = 0.325).
pub const LOD_MIX: [(u8, usize); 4] = [(1, 10), (2, 20), (4, 30), (8, 40)];

/// Character `i`'s rate in [`LOD_MIX`]: the shares interleaved over the crowd (`7 i mod 100`
/// walks every percentile), so that every chunk holds the mix.
pub fn lod_mix_rate(i: usize) -> u8 {
    let percent = i * 7 % 100;
    let mut below = 0;
    LOD_MIX
        .iter()
        .find(|(_, share)| {
            below += share;
            percent < below
        })
        .map_or(1, |(rate, _)| *rate)
}

/// The rows `state::Crowd::due` lists at update `frame` for characters at [`lod_mix_rate`]
/// with phase `i % 16` (the schedule of `docs/lod.md`, steady), each with `rate × dt_s`.
pub fn lod_mix_due(num_characters: usize, frame: usize, dt_s: f32) -> (Vec<u32>, Vec<f32>) {
    (0..num_characters)
        .filter_map(|i| {
            let rate = usize::from(lod_mix_rate(i));
            (frame + i % 16).is_multiple_of(rate).then_some((i as u32, rate as f32 * dt_s))
        })
        .unzip()
}

/// The built-in character (64 joints) on the demo graph, bound, with its crowd.
pub struct DemoCrowd {
    /// The character: rig and clips.
    pub demo: DemoCharacter,
    /// The demo graph bound to its clips; layers as `bind_archetype` derives them (the lean and
    /// wave layers without memory).
    pub bound: throng::setup::BoundArchetype,
    /// `n` characters, settled into a mix of states.
    pub crowd: Crowd,
    /// Their archetype.
    pub kind: ArchetypeId,
}

/// `n` built-in characters on the demo graph (base, additive lean, masked wave), speeds spread
/// from standing to running, a third leaning and a fifth waving at weights of their own, every
/// seventh jumping; stepped 45 updates so that they spread over states and transitions.
pub fn demo_crowd(n: usize) -> DemoCrowd {
    let demo = DemoCharacter::humanoid_64();
    let graph = Arc::new(CompiledGraph::from_json(throng::demo::LOCOMOTION_GRAPH).expect("the demo graph loads"));
    let bound = demo.bind(graph).expect("the demo binds");
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype.clone());
    let handles: Vec<_> = (0..n).map(|_| crowd.spawn(kind).expect("archetype exists")).collect();
    let spread = |i: usize, k: f32| (i as f32 * k).fract();
    let speeds: Vec<f32> = (0..n).map(|i| 4.0 * spread(i, 0.618_034)).collect();
    let leans: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { spread(i, 0.414_214) } else { 0.0 }).collect();
    let waves: Vec<f32> = (0..n).map(|i| if i % 5 == 0 { 0.3 + 0.7 * spread(i, 0.732_051) } else { 0.0 }).collect();
    for (name, values) in [("speed", speeds), ("lean", leans), ("wave", waves)] {
        let param = crowd.param(kind, name).expect("demo parameter");
        crowd.set_float(param, &handles, &values).expect("finite values");
    }
    let jump = crowd.param(kind, "jump").expect("jump");
    let jumpers: Vec<_> = handles.iter().copied().step_by(7).collect();
    for frame in 0..45 {
        if frame == 30 {
            crowd.set_trigger(jump, &jumpers, false).expect("trigger");
        }
        crowd.update(1.0 / 60.0).expect("finite dt");
    }
    DemoCrowd { demo, bound, crowd, kind }
}

/// Every character of `rig` (a built-in humanoid) looking at its own point with a four-joint
/// neck chain (`spine_05`, `neck_01`, `neck_02`, `head`) and reaching with both feet
/// (`thigh`–`calf`–`foot`) for points a few centimetres off their rest positions, pole forward,
/// every weight 1: issue #21's procedural load per character (`eval_cpu/stage_procedural`, the
/// GPU proxies and `gpu_variants`' frame with the stage).
pub fn procedural_crowd(rig: &Rig, n: usize) -> (ProceduralRig, ProceduralTargets) {
    let joint = |name: &str| rig.find_joint(name).expect("a demo joint") as u16;
    let leg = |side: &str| {
        TwoBoneChain::new(
            joint(&format!("thigh_{side}")),
            joint(&format!("calf_{side}")),
            joint(&format!("foot_{side}")),
        )
    };
    let setup = ProceduralSetup {
        look_at: vec![LookAtChain::even(
            vec![joint("spine_05"), joint("neck_01"), joint("neck_02"), joint("head")],
            Vec3::Z,
        )],
        two_bone: vec![leg("l"), leg("r")],
        ground: None,
    }
    .check(rig)
    .expect("the demo rig has these chains");
    let mut targets = ProceduralTargets::new(&setup, n);
    let rows: Vec<u32> = (0..n as u32).collect();
    let ones = vec![1.0; n];
    let looks: Vec<Vec3> = (0..n).map(|c| Vec3::new((c % 17) as f32 - 8.0, 1.7, 3.0 + (c % 5) as f32)).collect();
    targets.set_look_at(0, &rows, &looks, &ones).expect("valid targets");
    let rest = rig.rest_model();
    for (chain, side) in ["l", "r"].iter().enumerate() {
        let ankle = rest[joint(&format!("foot_{side}")) as usize].w_axis.truncate();
        let reach: Vec<Vec3> = (0..n).map(|c| ankle + Vec3::new(0.0, 0.05 + 0.01 * (c % 7) as f32, 0.1)).collect();
        let poles = vec![Vec3::Z; n];
        targets.set_two_bone(chain, &rows, &reach, &poles, &vec![Quat::IDENTITY; n], &ones).expect("valid targets");
    }
    (setup, targets)
}
