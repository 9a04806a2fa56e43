//! Seed 000's measurements on the built-in character, shared by the `transition_report`
//! example and the tests that pin its orderings (`tests/report.rs`).

use std::sync::Arc;

use glam::Vec3;
use throng::demo::{DemoArchetype, DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::eval::local_to_model::local_to_model;
use throng::eval::root_motion::RootDelta;
use throng::eval::skinning::read_matrix;
use throng::graph::CompiledGraph;
use throng::plot::{LayerFrame, LayerTrack, Mark, MarkKind, ParamKind, ParamTrack, Timeline};
use throng::program::{ClipSample, LayerProgram, LayerSetup, LayerSpace, OutputLayout};
use throng::runtime::CrowdRuntime;
use throng::setup::mask_of;
use throng::state::{ArchetypeId, CharacterHandle};

/// Frames per second of every run.
pub const FPS: f32 = 60.0;

/// How fast the script's gameplay changes speed, m/s².
pub const ACCELERATION_MPS2: f32 = 8.0;

/// The larger of `a` and `b`, NaN when either is: `f32::max` drops a NaN, which would let a
/// NaN pose pass `tests/report.rs`'s bounds on these measurements.
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { f32::NAN } else { a.max(b) }
}

/// The smaller of `a` and `b`, NaN when either is (`f32::min` drops a NaN).
fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() { f32::NAN } else { a.min(b) }
}

/// One character of the demo graph, stepped and evaluated on the CPU frame by frame.
pub struct Sim {
    pub demo: DemoCharacter,
    pub bound: DemoArchetype,
    pub runtime: CrowdRuntime,
    pub kind: ArchetypeId,
    pub handle: CharacterHandle,
    output: Vec<f32>,
    rest_model: Vec<Vec3>,
    /// Model-space joint positions this frame (root motion removed).
    pub positions: Vec<Vec3>,
    /// The character's place in the world, accumulated from root motion.
    pub world: Vec3,
    /// Clips sampled this frame.
    pub clips_sampled: u32,
}

impl Sim {
    /// The demo graph with `default_switch` (JSON) as every transition's switch mode, and the
    /// layer setups altered by `layers`.
    pub fn new(default_switch: &str, layers: impl FnOnce(&DemoCharacter, &mut [LayerSetup])) -> Self {
        let json = LOCOMOTION_GRAPH.replacen(
            r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#,
            &format!(r#""defaultSwitch": {default_switch}"#),
            1,
        );
        let graph = Arc::new(CompiledGraph::from_json(&json).expect("the demo graph with a switch mode loads"));
        let demo = DemoCharacter::humanoid();
        let mut bound = demo.bind(graph).expect("the demo graph binds to the demo");
        layers(&demo, &mut bound.layers);
        let mut runtime = CrowdRuntime::new();
        let kind = runtime
            .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
            .expect("one setup per layer");
        let handle = runtime.spawn(kind).expect("archetype exists");
        let joints = demo.rig.num_joints();
        let rest_model = demo.rig.rest_model().iter().map(|m| m.w_axis.truncate()).collect();
        Self {
            output: vec![0.0; joints * 16],
            positions: vec![Vec3::ZERO; joints],
            world: Vec3::ZERO,
            clips_sampled: 0,
            rest_model,
            demo,
            bound,
            runtime,
            kind,
            handle,
        }
    }

    pub fn set_float(&mut self, name: &str, value: f32) {
        let p = self.runtime.param(self.kind, name).expect("parameter exists");
        self.runtime.set_float(p, &[self.handle], &[value]).expect("finite value");
    }

    pub fn trigger(&mut self, name: &str) {
        let p = self.runtime.param(self.kind, name).expect("parameter exists");
        self.runtime.set_trigger(p, &[self.handle], false).expect("trigger parameter");
    }

    /// The layer programs of the last step.
    pub fn programs(&self) -> &[LayerProgram] {
        self.runtime.crowd().programs(self.kind).expect("archetype exists")
    }

    /// Model-space joint positions of the base layer showing `samples` alone (root motion
    /// removed), without touching the character's memory.
    pub fn evaluate_base(&self, samples: &[ClipSample]) -> Vec<Vec3> {
        let joints = self.demo.rig.num_joints();
        let mut output = vec![0.0; joints * 16];
        let program = LayerProgram {
            num_target: samples.len() as u32,
            target_weight: 1.0,
            weight: 1.0,
            flags: LayerProgram::ROOT_MOTION,
            ..LayerProgram::default()
        };
        // The low-level job: a pose on its own memory, leaving the character's untouched.
        FrameJob {
            rig: &self.demo.rig,
            clips: &self.bound.clips,
            layers: &self.bound.layers[..1],
            samples,
            programs: &[program],
            dt_s: 1.0 / FPS,
            context: &mut EvalContext::new(1, 1, joints),
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut [0],
            root_motion: &mut [RootDelta::default()],
        }
        .run()
        .expect("last frame's samples are valid");
        (0..joints)
            .map(|j| read_matrix(OutputLayout::Mat4, &output[j * 16..]).transform_point3(self.rest_model[j]))
            .collect()
    }

    /// One frame: the runtime's state step, then its CPU evaluation.
    pub fn step(&mut self) {
        self.runtime.update(1.0 / FPS).expect("finite dt");
        let mut root = [RootDelta::default()];
        self.runtime
            .evaluate(self.kind, OutputLayout::Mat4, &mut self.output, &mut root)
            .expect("the state step writes valid programs");
        self.clips_sampled = self.runtime.clips_sampled(self.kind).expect("archetype exists")[0];
        self.world += root[0].translation;
        for (j, p) in self.positions.iter_mut().enumerate() {
            *p = read_matrix(OutputLayout::Mat4, &self.output[j * 16..]).transform_point3(self.rest_model[j]);
        }
    }
}

/// One run of seed 000's script for one switch mode.
#[derive(Clone, Debug)]
pub struct SwitchReport {
    /// The mode's name.
    pub name: &'static str,
    /// The worst joint jump at a switch, centimetres.
    pub worst_jump_cm: f32,
    /// Mean clips sampled per frame over the script.
    pub mean_clips: f32,
    /// Peak clips sampled in a frame.
    pub peak_clips: u32,
    /// Mean clips sampled per frame while a base-layer transition is in flight.
    pub mean_clips_transitioning: f32,
}

/// The switch modes of the report, with their `defaultSwitch` JSON.
pub const MODES: [(&str, &str); 6] = [
    ("cut", r#""cut""#),
    ("frozen", r#"{ "mode": "frozen" }"#),
    ("crossfade", r#"{ "mode": "crossfade" }"#),
    ("inertialize (seed quintic)", r#"{ "mode": "inertialize" }"#),
    ("inertialize (Bollo, overshoot control)", r#"{ "mode": "inertialize", "quintic": { "overshootControl": true } }"#),
    ("inertialize (spring, halflife 0.06 s)", r#"{ "mode": "inertialize", "spring": { "halflife": 0.06 } }"#),
];

/// Seed 000's script: stand, walk, run, stop, jump, walk, jump while walking, stop; 13.5 s at
/// 60 fps, 0.25 s blends. The measure is seed 000's: on the frame a transition starts, how far
/// the worst joint is from where the old state would have put it (the old state evaluated
/// alone this frame, with this frame's parameters).
pub fn seed_script(name: &'static str, default_switch: &str) -> (SwitchReport, Timeline) {
    let mut sim = Sim::new(default_switch, |_, _| {});
    // The state machine's decisions do not depend on the switch mode, so a crossfading twin
    // stepped in lockstep holds, on each switch frame, the old state's samples for this frame.
    let mut twin = Sim::new(r#"{ "mode": "crossfade" }"#, |_, _| {});
    let graph = sim.bound.archetype.graph().clone();
    let base_states: Vec<usize> = (0..graph.states().len()).filter(|&s| graph.states()[s].layer == 0).collect();
    let local = |state: usize| base_states.iter().position(|&s| s == state).unwrap_or(0);
    let mut band = LayerTrack::new("Base", base_states.iter().map(|&s| graph.states()[s].name.clone()).collect());
    let mut speed_track =
        ParamTrack { name: "speed".into(), kind: ParamKind::Float, values: Vec::new(), marks: Vec::new() };
    let mut jump_track =
        ParamTrack { name: "jump".into(), kind: ParamKind::Trigger, values: Vec::new(), marks: Vec::new() };
    let (mut times_s, mut jumps_cm, mut clips) = (Vec::new(), Vec::new(), Vec::new());
    let frames = (13.5 * FPS) as usize;
    let at = |t: f32| (t * FPS) as usize;
    let (mut worst, mut total, mut peak) = (0.0f32, 0u64, 0u32);
    let (mut during, mut during_frames) = (0u64, 0u64);
    // Gameplay eases speed towards its target (an acceleration, as a character controller
    // does), so the blend space moves smoothly and what pops is the switches alone.
    let (mut speed, mut target) = (0.0f32, 0.0f32);
    for frame in 0..frames {
        match frame {
            f if f == at(1.0) => target = 1.5,
            f if f == at(3.0) => target = 4.0,
            f if f == at(5.0) => target = 0.0,
            f if f == at(6.5) => {
                sim.trigger("jump");
                twin.trigger("jump");
                jump_track.marks.push(Mark { frame, kind: MarkKind::TriggerSet });
            }
            f if f == at(8.0) => target = 1.5,
            f if f == at(9.5) => {
                sim.trigger("jump");
                twin.trigger("jump");
                jump_track.marks.push(Mark { frame, kind: MarkKind::TriggerSet });
            }
            f if f == at(11.5) => target = 0.0,
            _ => {}
        }
        speed += (target - speed).clamp(-ACCELERATION_MPS2 / FPS, ACCELERATION_MPS2 / FPS);
        sim.set_float("speed", speed);
        twin.set_float("speed", speed);
        twin.step();
        sim.step();
        let base = sim.programs()[0];
        total += u64::from(sim.clips_sampled);
        peak = peak.max(sim.clips_sampled);
        if base.flags & LayerProgram::TRANSITIONING != 0 {
            during += u64::from(sim.clips_sampled);
            during_frames += 1;
        }
        let twin_base = twin.programs()[0];
        let mut jump_cm = 0.0;
        if base.flags & LayerProgram::SWITCHED != 0 && frame > 0 {
            debug_assert!(twin_base.flags & LayerProgram::SWITCHED != 0, "the twin switches on the same frame");
            let source = twin_base.secondary_range();
            let old = twin.evaluate_base(
                &twin.runtime.crowd().samples(twin.kind).expect("archetype")
                    [source.start as usize..source.end as usize],
            );
            let jump = sim.positions.iter().zip(&old).map(|(p, o)| p.distance(*o)).fold(0.0, nan_max);
            worst = nan_max(worst, jump);
            jump_cm = jump * 100.0;
        }
        let rb = sim.runtime.readback(sim.handle, 0).expect("live character");
        let mut weights = vec![(local(rb.active_state), rb.active_weight)];
        if let Some(previous) = rb.previous_state.filter(|_| rb.transitioning) {
            weights.push((local(previous), rb.previous_weight));
        }
        band.frames.push(LayerFrame {
            active: local(rb.active_state),
            previous: rb.previous_state.filter(|_| rb.transitioning).map(local),
            transitioning: rb.transitioning,
            weights,
        });
        speed_track.values.push(speed);
        jump_track.values.push(0.0);
        times_s.push(f64::from(frame as f32 + 1.0) / f64::from(FPS));
        jumps_cm.push(jump_cm);
        clips.push(sim.clips_sampled);
    }
    let report = SwitchReport {
        name,
        worst_jump_cm: worst * 100.0,
        mean_clips: total as f32 / frames as f32,
        peak_clips: peak,
        mean_clips_transitioning: during as f32 / during_frames.max(1) as f32,
    };
    let timeline = Timeline {
        title: format!("seed 000's script, {name}"),
        times_s,
        layers: vec![band],
        params: vec![speed_track, jump_track],
        jump_cm: Some(jumps_cm),
        jump_label: "jump at a switch vs the old state alone (cm)".into(),
        clips_sampled: Some(clips),
    };
    (report, timeline)
}

/// Foot slide in centimetres per metre walked: each frame, the horizontal world travel (model
/// position plus root motion) of whichever foot point (ankle or toe, either foot) moved least —
/// the one that should be planted, heel or ball —
/// summed over 4 s of walking and divided by the distance walked, with the wave layer at full
/// weight and `mask` (`None` = the whole body).
pub fn foot_slide_cm_per_m(mask: Option<&[(String, f32)]>) -> f32 {
    let mut sim = Sim::new(r#"{ "mode": "inertialize" }"#, |demo, layers| {
        layers[2].mask = mask.map(|m| mask_of(m, &demo.rig).expect("mask fits the demo rig"));
    });
    sim.set_float("speed", 1.5);
    sim.set_float("wave", 1.0);
    let feet =
        ["foot_l", "toe_l", "foot_r", "toe_r"].map(|name| sim.demo.rig.find_joint(name).expect("the demo has feet"));
    // Settle into the walk first.
    for _ in 0..FPS as usize {
        sim.step();
    }
    let start = sim.world;
    let world = |sim: &Sim| feet.map(|j| sim.positions[j] + sim.world);
    let mut last = world(&sim);
    let mut slide = 0.0;
    for _ in 0..(4.0 * FPS) as usize {
        sim.step();
        let now = world(&sim);
        let moved = |k: usize| Vec3::new(now[k].x - last[k].x, 0.0, now[k].z - last[k].z).length();
        slide += (0..feet.len()).map(moved).fold(f32::INFINITY, nan_min);
        last = now;
    }
    let walked = Vec3::new(sim.world.x - start.x, 0.0, sim.world.z - start.z).length();
    slide * 100.0 / walked.max(1e-6)
}

/// The waving arm's mean angle (degrees) from the direction the wave clip authors for it, in
/// model space, over 3 s of running with the wave layer on the right arm only.
pub fn arm_angle_deg(space: LayerSpace, lean: bool) -> f32 {
    let arm_mask = vec![("clavicle_r/*".to_owned(), 1.0)];
    let mut sim = Sim::new(r#"{ "mode": "inertialize" }"#, |demo, layers| {
        layers[2].mask = Some(mask_of(&arm_mask, &demo.rig).expect("the right arm exists"));
        layers[2].space = space;
    });
    sim.set_float("speed", 4.0);
    sim.set_float("wave", 1.0);
    sim.set_float("lean", if lean { 1.0 } else { 0.0 });
    let rig = sim.demo.rig.clone();
    let (upper, lower) =
        (rig.find_joint("upperarm_r").expect("upperarm_r"), rig.find_joint("lowerarm_r").expect("lowerarm_r"));
    let wave = sim.demo.clip_index("wave").expect("wave");
    for _ in 0..FPS as usize {
        sim.step();
    }
    let (mut sum, mut n) = (0.0f32, 0);
    let mut pose = rig.rest_pose().to_vec();
    let mut model = vec![glam::Mat4::IDENTITY; rig.num_joints()];
    for _ in 0..(3.0 * FPS) as usize {
        sim.step();
        // The wave clip alone at the time the wave layer sampled it: the authored direction.
        let program = sim.programs()[2];
        let sample = sim.runtime.crowd().samples(sim.kind).expect("archetype")[program.first_sample as usize];
        debug_assert_eq!(sample.clip as usize, wave);
        sim.bound.clips[wave].sample(sample.time_s, &mut pose);
        local_to_model(rig.parents(), &pose, &mut model);
        let authored = (model[lower].w_axis - model[upper].w_axis).truncate().normalize();
        let shown = (sim.positions[lower] - sim.positions[upper]).normalize();
        sum += authored.angle_between(shown).to_degrees();
        n += 1;
    }
    sum / n as f32
}
