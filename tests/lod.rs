//! Animation LOD (`CrowdRuntime::set_update_rate`, `Crowd::due`, `FrameJob::run_due`,
//! `GpuCrowd::set_frame_due`) on the built-in humanoid and the demo graph, each crowd a
//! `CrowdRuntime` (which evaluates the due rows and holds the others' matrices), driven by a script
//! that walks, runs, stops and jumps so that transitions keep happening: the state machine at
//! rate 4 is exactly the one at rate 1; the pose lags rate 1 by no more than the skipped time
//! allows; changing a character's rate makes no jump larger than the coarser rate makes
//! anyway; skipped characters' output is left alone and costs nothing; churn with mixed rates
//! leaves everyone else bit for bit; and the GPU matches the CPU under LOD.

use std::sync::Arc;

use glam::{Mat4, Vec3};
use support::compare::{
    GPU_TOLERANCE, assert_matrices_close, assert_matrices_close_with, largest, nan_max, worst_abs_diff,
};
use throng::clip::ClipEvent;
use throng::demo::{DemoArchetype, DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::EvalError;
use throng::eval::frame_layers::{EvalContext, FrameJob, FrameStats};
use throng::eval::root_motion::RootDelta;
use throng::gpu::{GpuCrowd, GpuCrowdOptions, Stage};
use throng::graph::CompiledGraph;
use throng::program::{DueRows, LayerProgram, OutputLayout, ProgramError};
use throng::runtime::{CrowdRuntime, RuntimeError};
use throng::state::{AnimationEvent, ArchetypeId, CharacterHandle, LayerReadback, StateError};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use support::drive::{DemoInputs, drive_demo};

const FPS: f32 = 60.0;
const DT: f32 = 1.0 / FPS;

/// What gameplay asks of script `id` at `frame`: target speed (m/s), a jump trigger, and the
/// lean and wave layers' weights. Every character runs the same story shifted by `id`: walk,
/// run, stop, jump, walk and jump again, stop, walk.
fn script(id: usize, frame: usize) -> DemoInputs {
    let f = frame as i64 - (id % 29) as i64 * 4;
    let at = |t: f32| (t * FPS).round() as i64;
    let target = match f {
        f if f < at(0.2) => 0.0,
        f if f < at(1.2) => 1.5,
        f if f < at(2.0) => 4.0,
        f if f < at(3.5) => 0.0,
        f if f < at(4.6) => 1.5,
        f if f < at(5.4) => 0.0,
        _ => 1.5,
    };
    let jump = f == at(2.6) || f == at(4.2);
    let t = frame as f32 * DT;
    let swell = |period_s: f32, phase: f32| {
        ((std::f32::consts::TAU * (t / period_s + phase)).sin() * 1.6 - 0.3).clamp(0.0, 1.0)
    };
    DemoInputs { target_speed_mps: target, jump, lean: swell(2.7, id as f32 / 7.0), wave: swell(3.3, id as f32 / 11.0) }
}

/// The demo graph with `default_switch` in place of its own (inertialization), bound to the demo.
fn demo_graph(demo: &DemoCharacter, default_switch: Option<&str>) -> DemoArchetype {
    let own = r#""defaultSwitch": { "mode": "inertialize", "quintic": { "overshootControl": true } }"#;
    assert!(LOCOMOTION_GRAPH.contains(own), "the demo graph's default switch is where this test edits it");
    let json = match default_switch {
        Some(switch) => LOCOMOTION_GRAPH.replacen(own, &format!(r#""defaultSwitch": {switch}"#), 1),
        None => LOCOMOTION_GRAPH.to_owned(),
    };
    let graph = Arc::new(CompiledGraph::from_json(&json).expect("the demo graph variant loads"));
    let mut bound = demo.bind(graph).expect("the demo graph binds to the demo");
    // Footsteps, so that the events rate 1 and rate 4 fire can be compared.
    for name in ["walk", "run"] {
        let clip = bound.clips.iter().position(|c| c.name() == name).expect("the demo has walk and run clips");
        let d = bound.clips[clip].duration_s();
        let steps = [ClipEvent::new("footstep", 0.25 * d), ClipEvent::new("footstep", 0.75 * d)];
        bound.archetype = bound.archetype.with_clip_events(clip as u32, &steps).expect("events inside the clip");
    }
    bound
}

/// One crowd of one archetype in a runtime, and its last output.
struct World {
    bound: DemoArchetype,
    runtime: CrowdRuntime,
    kind: ArchetypeId,
    handles: Vec<CharacterHandle>,
    /// Script id per handle (same order as `handles`).
    ids: Vec<usize>,
    speeds: Vec<f32>,
    output: Vec<f32>,
    root_motion: Vec<RootDelta>,
    frame: usize,
}

impl World {
    /// Rows whose programs took a switch on the last update (LOD evaluates them on it whatever
    /// their rate).
    fn switching_rows(&self) -> Vec<usize> {
        let layers = self.bound.layers.len();
        let programs = self.runtime.crowd().programs(self.kind).expect("archetype");
        (0..self.handles.len())
            .filter(|&row| {
                programs[row * layers..(row + 1) * layers].iter().any(|p| p.flags & LayerProgram::SWITCHED != 0)
            })
            .collect()
    }

    fn new(demo: &DemoCharacter, bound: DemoArchetype, num_characters: usize) -> Self {
        let mut runtime = CrowdRuntime::new();
        let kind = runtime
            .add_archetype(bound.archetype.clone(), demo.rig.clone(), bound.clips.clone(), bound.layers.clone())
            .expect("one setup per layer");
        let handles = runtime.spawn_many(kind, num_characters).expect("archetype");
        Self {
            output: Vec::new(),
            root_motion: Vec::new(),
            bound,
            runtime,
            kind,
            ids: (0..num_characters).collect(),
            speeds: vec![0.0; num_characters],
            handles,
            frame: 0,
        }
    }

    fn set_rates(&mut self, rate: impl Fn(usize) -> u8) {
        let rates: Vec<u8> = self.ids.iter().map(|&id| rate(id)).collect();
        self.runtime.set_update_rate(&self.handles, &rates).expect("valid rates");
    }

    /// Applies the script and steps the state machine.
    fn update(&mut self) {
        let (ids, frame) = (&self.ids, self.frame);
        drive_demo(&mut self.runtime, self.kind, &self.handles, &mut self.speeds, DT, |k| script(ids[k], frame));
        self.runtime.update(DT).expect("finite dt");
        self.frame += 1;
    }

    /// Evaluates the frame on the CPU: the runtime evaluates every row while every rate is 1,
    /// and the due rows only once one is above. Rows the runtime did not write stay NaN.
    fn evaluate(&mut self) -> FrameStats {
        let floats = self.runtime.floats_needed(self.kind, OutputLayout::Mat4).expect("archetype");
        let rows = self.runtime.crowd().num_characters(self.kind).expect("archetype");
        self.output.clear();
        self.output.resize(floats, f32::NAN);
        self.root_motion.resize(rows, RootDelta::default());
        self.runtime
            .evaluate(self.kind, OutputLayout::Mat4, &mut self.output, &mut self.root_motion)
            .expect("the state step writes valid programs")
    }

    /// The output of the character with handle `h`.
    fn matrices(&self, h: CharacterHandle, joints: usize) -> &[f32] {
        let (_, row) = self.runtime.crowd().row_of(h).expect("live");
        &self.output[row * joints * 16..(row + 1) * joints * 16]
    }

    fn readbacks(&self) -> Vec<LayerReadback> {
        let mut all = Vec::new();
        let mut layer = Vec::new();
        for l in 0..self.bound.layers.len() {
            self.runtime.crowd().readback_rows(self.kind, l, &mut layer).expect("layer");
            all.extend_from_slice(&layer);
        }
        all
    }

    /// The last update's events, with the handle left out: each world is its own crowd, whose
    /// tag its handles carry, so worlds compare by the row.
    fn events(&self) -> Vec<AnimationEvent> {
        self.runtime
            .events(self.kind)
            .expect("archetype")
            .iter()
            .map(|e| AnimationEvent { character: CharacterHandle::from_bits(0), ..*e })
            .collect()
    }
}

/// Model-space joint positions from skinning matrices (`model × inverse_bind`).
fn joint_positions(matrices: &[f32], demo: &DemoCharacter) -> Vec<Vec3> {
    matrices
        .chunks_exact(16)
        .zip(demo.rig.inverse_bind())
        .map(|(m, ib)| (Mat4::from_cols_slice(m) * ib.inverse()).w_axis.truncate())
        .collect()
}

/// Largest distance between corresponding joints, metres.
fn largest_gap(a: &[Vec3], b: &[Vec3]) -> f32 {
    largest(a.iter().zip(b).map(|(p, q)| p.distance(*q)))
}

/// Base-layer switches in the programs.
fn switches(world: &World) -> usize {
    let layers = world.bound.layers.len();
    world
        .runtime
        .crowd()
        .programs(world.kind)
        .expect("archetype")
        .chunks_exact(layers)
        .filter(|p| p[0].flags & LayerProgram::SWITCHED != 0)
        .count()
}

#[test]
fn at_rate_4_states_transitions_events_and_root_motion_match_rate_1_every_frame() {
    let demo = DemoCharacter::humanoid();
    let n = 48;
    let mut full = World::new(&demo, demo_graph(&demo, None), n);
    let mut lod = World::new(&demo, demo_graph(&demo, None), n);
    lod.set_rates(|_| 4);
    let (mut transitions, mut events) = (0, 0);
    for frame in 0..480 {
        full.update();
        lod.update();
        full.evaluate();
        lod.evaluate();
        assert_eq!(full.readbacks(), lod.readbacks(), "frame {frame}: states and transitions differ");
        assert_eq!(full.events(), lod.events(), "frame {frame}: events differ");
        for (row, (a, b)) in full.root_motion.iter().zip(&lod.root_motion).enumerate() {
            assert!(
                a.translation.to_array() == b.translation.to_array() && a.yaw.to_bits() == b.yaw.to_bits(),
                "frame {frame} row {row}: root motion {a:?} at rate 1, {b:?} at rate 4"
            );
        }
        transitions += switches(&full);
        events += full.events().len();
    }
    println!("{transitions} transitions, {events} events");
    assert!(transitions >= 4 * n, "the script should make transitions happen: {transitions}");
    assert!(events > 0, "the demo's clips fire events");
}

/// With crossfades (which read nothing from past frames), a rate-4 character shows bit for bit
/// what rate 1 showed at its last evaluated frame: the pose it holds is one rate 1 displayed.
#[test]
fn at_rate_4_the_held_pose_is_rate_1_s_pose_at_the_last_due_frame_bit_for_bit() {
    let demo = DemoCharacter::humanoid();
    let n = 32;
    let crossfade = Some(r#"{ "mode": "crossfade" }"#);
    let mut full = World::new(&demo, demo_graph(&demo, crossfade), n);
    let mut lod = World::new(&demo, demo_graph(&demo, crossfade), n);
    lod.set_rates(|id| [1, 2, 4, 8, 16][id % 5]);
    let per = demo.rig.num_joints() * 16;
    // Per row, rate 1's output at the row's last due frame.
    let mut shown_at_due = vec![0.0f32; n * per];
    let mut due_frames = vec![0usize; n];
    let mut switches = vec![0usize; n];
    for frame in 0..400 {
        full.update();
        lod.update();
        let switching = lod.switching_rows();
        for &row in &switching {
            switches[row] += 1;
            assert!(
                lod.runtime.crowd().due(lod.kind).expect("archetype").rows.contains(&(row as u32)),
                "frame {frame}: row {row} switched but is not evaluated"
            );
        }
        full.evaluate();
        lod.evaluate();
        for &row in lod.runtime.crowd().due(lod.kind).expect("archetype").rows {
            let span = row as usize * per..(row as usize + 1) * per;
            shown_at_due[span.clone()].copy_from_slice(&full.output[span]);
            due_frames[row as usize] += 1;
        }
        for row in 0..n {
            let span = row * per..(row + 1) * per;
            let same =
                lod.output[span.clone()].iter().zip(&shown_at_due[span]).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "frame {frame} row {row} (rate {}): the held pose is not what rate 1 showed at its last due frame",
                lod.runtime.crowd().update_rate(lod.handles[row]).unwrap()
            );
        }
    }
    // Every `rate` frames, plus the frames it switched on (never deferred).
    for (row, &count) in due_frames.iter().enumerate() {
        let rate = [1, 2, 4, 8, 16][row % 5];
        let (fewest, most) = (400 / rate - 1, 400 / rate + switches[row] + 1);
        assert!(
            (fewest..=most).contains(&count),
            "row {row} at rate {rate} was evaluated {count} times in 400 frames ({} switches)",
            switches[row]
        );
    }
    assert!(switches.iter().sum::<usize>() > n, "the script switches states");
}

/// Under the demo graph's inertialization, a rate-4 pose lags rate 1 by what the character moves
/// in the skipped time: at most the fastest joint's travel over 3 frames held, plus as much again
/// for a switch started from the held pose.
#[test]
fn at_rate_4_the_pose_error_against_rate_1_stays_within_motion_times_skipped_time() {
    let demo = DemoCharacter::humanoid();
    let n = 32;
    let mut full = World::new(&demo, demo_graph(&demo, None), n);
    let mut lod = World::new(&demo, demo_graph(&demo, None), n);
    lod.set_rates(|_| 4);
    let per = demo.rig.num_joints() * 16;
    let mut previous: Vec<Vec<Vec3>> = vec![Vec::new(); n];
    let mut fastest_m_per_frame = 0.0f32;
    let mut worst = (0.0f32, 0, 0);
    for frame in 0..480 {
        full.update();
        lod.update();
        full.evaluate();
        lod.evaluate();
        for (row, before) in previous.iter_mut().enumerate() {
            let a = joint_positions(&full.output[row * per..(row + 1) * per], &demo);
            let b = joint_positions(&lod.output[row * per..(row + 1) * per], &demo);
            if !before.is_empty() {
                fastest_m_per_frame = nan_max(fastest_m_per_frame, largest_gap(before, &a));
            }
            let error = largest_gap(&a, &b);
            // A NaN error replaces a number and stays, so the bound below fails on it.
            if !worst.0.is_nan() && (error.is_nan() || error > worst.0) {
                worst = (error, frame, row);
            }
            *before = a;
        }
    }
    let bound = 2.0 * 4.0 * fastest_m_per_frame;
    println!(
        "rate 4 vs rate 1: worst joint error {:.4} m (frame {}, row {}); fastest joint {fastest_m_per_frame:.4} m/frame; bound {bound:.4} m",
        worst.0, worst.1, worst.2
    );
    assert!(fastest_m_per_frame > 0.01, "the script should move the character: {fastest_m_per_frame} m/frame");
    assert!(worst.0 > 0.0, "rate 4 should lag rate 1 somewhere");
    assert!(
        worst.0 <= bound,
        "rate 4 strays {} m from rate 1 at frame {} row {}; the bound is {bound} m",
        worst.0,
        worst.1,
        worst.2
    );
}

/// Largest joint jump between consecutive displayed frames over `window` for each character,
/// with its rate set from `before` to `after` at frame `change(id)`.
fn largest_jumps(
    demo: &DemoCharacter,
    n: usize,
    before: u8,
    after: u8,
    change: impl Fn(usize) -> usize,
    window: usize,
) -> Vec<f32> {
    let mut world = World::new(demo, demo_graph(demo, None), n);
    world.set_rates(|_| before);
    let per = demo.rig.num_joints() * 16;
    let mut previous: Vec<Vec<Vec3>> = vec![Vec::new(); n];
    let mut jumps = vec![0.0f32; n];
    let last = (0..n).map(&change).max().unwrap_or(0) + window;
    for frame in 0..last {
        for (k, &h) in world.handles.clone().iter().enumerate() {
            if frame == change(k) {
                world.runtime.set_update_rate(&[h], &[after]).expect("valid rate");
            }
        }
        world.update();
        world.evaluate();
        for row in 0..n {
            let p = joint_positions(&world.output[row * per..(row + 1) * per], demo);
            let c = change(row);
            if frame + window >= c && frame < c + window && !previous[row].is_empty() {
                jumps[row] = nan_max(jumps[row], largest_gap(&previous[row], &p));
            }
            previous[row] = p;
        }
    }
    jumps
}

#[test]
fn changing_the_rate_makes_no_jump_larger_than_the_coarser_steady_rate() {
    let demo = DemoCharacter::humanoid();
    let n = 24;
    // Changes spread over the script: while walking, running, stopping and jumping.
    let change = |id: usize| 40 + id * 13;
    let window = 20;
    for (before, after) in [(1u8, 4u8), (4, 1), (8, 1), (1, 16), (16, 2)] {
        let coarse = before.max(after);
        let steady = largest_jumps(&demo, n, coarse, coarse, change, window);
        let changed = largest_jumps(&demo, n, before, after, change, window);
        let (steady_max, changed_max) = (largest(steady.iter().copied()), largest(changed.iter().copied()));
        println!("rate {before} → {after}: largest jump {changed_max:.4} m; steady rate {coarse}: {steady_max:.4} m");
        assert!(steady_max > 0.0, "the characters should move");
        assert!(
            changed_max <= steady_max,
            "rate {before} → {after}: a jump of {changed_max} m, larger than steady rate {coarse}'s {steady_max} m"
        );
    }
}

/// `FrameJob::run_due` itself, under the runtime: the rows not due are left untouched (the
/// runtime shows its held matrices there) and sample nothing.
#[test]
fn skipped_rows_keep_their_output_and_sample_nothing() {
    let demo = DemoCharacter::humanoid();
    let n = 16;
    let mut world = World::new(&demo, demo_graph(&demo, None), n);
    world.set_rates(|id| if id % 2 == 0 { 1 } else { 8 });
    let per = demo.rig.num_joints() * 16;
    let mut context = EvalContext::for_layers(n, &world.bound.layers, demo.rig.num_joints());
    let mut output = vec![0.0; n * per];
    let mut clips_sampled = vec![0; n];
    let mut run_due = |world: &World, output: &mut [f32], clips_sampled: &mut [u32]| {
        let crowd = world.runtime.crowd();
        // The low-level job: the test is about what `run_due` leaves alone, which the runtime fills.
        FrameJob {
            rig: &demo.rig,
            clips: &world.bound.clips,
            layers: &world.bound.layers,
            samples: crowd.samples(world.kind).expect("archetype"),
            programs: crowd.programs(world.kind).expect("archetype"),
            dt_s: DT,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output,
            clips_sampled,
            root_motion: &mut [],
        }
        .run_due(crowd.due(world.kind).expect("archetype"))
        .expect("the state step writes valid programs")
    };
    for _ in 0..31 {
        world.update();
        run_due(&world, &mut output, &mut clips_sampled);
    }
    world.update();
    let due: Vec<u32> = world.runtime.crowd().due(world.kind).unwrap().rows.to_vec();
    // The 32nd update (counter 31): every rate-1 row, and the rate-8 rows whose phase (the
    // handle's index, here the row) lands on it: rows 1 and 9.
    let expected: Vec<u32> = (0..n as u32).filter(|r| r % 2 == 0 || (31 + r) % 8 == 0).collect();
    assert_eq!(due, expected);
    assert!(due.len() < n);
    let sentinel = f32::from_bits(0x7fc0_1234);
    output.fill(sentinel);
    let stats = run_due(&world, &mut output, &mut clips_sampled);
    for row in 0..n {
        let untouched = output[row * per..(row + 1) * per].iter().all(|v| v.to_bits() == sentinel.to_bits());
        let is_due = due.contains(&(row as u32));
        assert_eq!(untouched, !is_due, "row {row} (due: {is_due}): output untouched = {untouched}");
        if !is_due {
            assert_eq!(clips_sampled[row], 0, "row {row} is skipped but sampled clips");
        }
    }
    assert_eq!(stats.characters_evaluated, due.len() as u64);
}

#[test]
fn everyone_at_rate_4_evaluates_a_quarter_of_the_crowd_per_frame() {
    let demo = DemoCharacter::humanoid();
    let n = 64;
    let mut full = World::new(&demo, demo_graph(&demo, None), n);
    let mut lod = World::new(&demo, demo_graph(&demo, None), n);
    lod.set_rates(|_| 4);
    let (mut full_clips, mut lod_clips) = (0u64, 0u64);
    for frame in 0..120 {
        full.update();
        lod.update();
        let (a, b) = (full.evaluate(), lod.evaluate());
        assert_eq!(a.characters_evaluated, n as u64);
        // Every new character is due on its first frame; then a quarter each frame, and those
        // switching state on it.
        let switching = lod.switching_rows().len();
        let (fewest, most) = if frame == 0 { (n, n) } else { (n / 4, n / 4 + switching) };
        assert!(
            (fewest as u64..=most as u64).contains(&b.characters_evaluated),
            "frame {frame}: {} evaluated, {switching} switching",
            b.characters_evaluated
        );
        if frame > 0 {
            full_clips += a.clips_sampled;
            lod_clips += b.clips_sampled;
        }
    }
    let ratio = lod_clips as f64 / full_clips as f64;
    println!("clips sampled at rate 4 / rate 1: {ratio:.3}");
    assert!((0.2..0.3).contains(&ratio), "clips sampled at rate 4 are {ratio} of rate 1's");
}

/// Despawning (before and after an update) and spawning with mixed rates leaves every survivor's
/// output bit for bit what a crowd without the churn shows: rates and phases follow the rows.
/// Where there is a GPU, its evaluator follows the same churn (`GpuCrowd::swap_remove`) and
/// matches the CPU for everyone, newcomers included.
#[test]
fn churn_with_mixed_rates_keeps_everyone_else_bit_for_bit() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let n = 40;
    let rate = |id: usize| [1u8, 2, 4, 8, 16, 4, 2][id % 7];
    let mut steady = World::new(&demo, demo_graph(&demo, None), n);
    let mut churned = World::new(&demo, demo_graph(&demo, None), n);
    steady.set_rates(rate);
    churned.set_rates(rate);
    let device = gpu_support::gpu();
    let mut gpu = device.as_ref().map(|d| {
        let options = GpuCrowdOptions { max_chunk_characters: Some(8), ..Default::default() };
        let mut crowd =
            GpuCrowd::with_layers(&d.device, &d.queue, &demo.rig, &churned.bound.clips, &churned.bound.layers, options)
                .expect("the demo fits the device");
        let (tables, trees) = churned.bound.archetype.expansion();
        crowd.set_expansion(tables, trees).expect("the archetype's own expansion");
        crowd
    });
    let victims = [3usize, 17, 39, 0, 22, 9];
    let newcomer = 1000;
    for frame in 0..240 {
        // Removes script `id` from the churned world; returns its row before the removal.
        let remove = |world: &mut World, id: usize| {
            let k = world.ids.iter().position(|&i| i == id).expect("victim alive");
            let h = world.handles.remove(k);
            world.ids.remove(k);
            world.speeds.remove(k);
            let (_, row) = world.runtime.crowd().row_of(h).expect("live");
            world.runtime.despawn(h).expect("live");
            row
        };
        // Odd victims go between frames; even ones between the update and the evaluation.
        let victim = (frame % 40 == 20).then(|| victims[frame / 40]);
        if let Some(id) = victim.filter(|id| id % 2 == 1) {
            let row = remove(&mut churned, id);
            if let Some(gpu) = &mut gpu {
                gpu.swap_remove(row);
            }
        }
        if frame == 150 {
            // A newcomer takes a freed slot, at rate 4.
            let h = churned.runtime.spawn(churned.kind).expect("archetype");
            churned.runtime.set_update_rate(&[h], &[4]).expect("valid rate");
            churned.handles.push(h);
            churned.ids.push(newcomer);
            churned.speeds.push(0.0);
        }
        steady.update();
        churned.update();
        if let Some(id) = victim.filter(|id| id % 2 == 0) {
            let row = remove(&mut churned, id);
            if let Some(gpu) = &mut gpu {
                gpu.swap_remove(row);
            }
        }
        steady.evaluate();
        churned.evaluate();
        // Each world is its own crowd: the steady one's character of the same id (never churned,
        // so its handle is `handles[id]`).
        for (&h, &id) in churned.handles.iter().zip(&churned.ids).filter(|&(_, &id)| id != newcomer) {
            let same = steady
                .matrices(steady.handles[id], joints)
                .iter()
                .zip(churned.matrices(h, joints))
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "frame {frame}: character {h:?} differs after churn");
        }
        if let (Some(gpu), Some(d)) = (&mut gpu, &device) {
            let (frame_records, due) = (
                churned.runtime.crowd().record_frame(churned.kind).unwrap(),
                churned.runtime.crowd().due(churned.kind).unwrap(),
            );
            gpu.set_frame_records_due(&frame_records, DT, due).expect("the GPU takes what FrameJob takes");
            let mut encoder = d.device.create_command_encoder(&Default::default());
            gpu.encode(&mut encoder);
            d.queue.submit([encoder.finish()]);
            let got = gpu.read_output_blocking().expect("readback");
            assert_matrices_close(
                &churned.output,
                &got,
                16,
                joints,
                GPU_TOLERANCE,
                &format!("GPU after churn: frame {frame}"),
            );
        }
    }
    assert_eq!(churned.handles.len(), n - victims.len() + 1);
}

#[test]
fn bad_rates_and_due_lists_are_refused() {
    let demo = DemoCharacter::humanoid();
    let mut world = World::new(&demo, demo_graph(&demo, None), 4);
    let h = world.handles.clone();
    assert_eq!(world.runtime.crowd().update_rate(h[0]), Ok(1), "new characters are rate 1");
    for bad in [0u8, 3, 5, 32, 255] {
        let err = world.runtime.set_update_rate(&h[..2], &[4, bad]).unwrap_err();
        assert!(
            matches!(err, RuntimeError::State(StateError::BadUpdateRate { index, rate }) if index == h[1].to_bits() as u32 && rate == bad),
            "{err}"
        );
        assert_eq!(world.runtime.crowd().update_rate(h[0]), Ok(1), "all or nothing");
    }
    assert!(matches!(
        world.runtime.set_update_rate(&h, &[2]),
        Err(RuntimeError::State(StateError::LengthMismatch { handles: 4, values: 1 }))
    ));
    let gone = h[3];
    world.runtime.despawn(gone).unwrap();
    world.handles.pop();
    world.ids.pop();
    world.speeds.pop();
    assert!(matches!(
        world.runtime.set_update_rate(&[gone], &[2]),
        Err(RuntimeError::State(StateError::StaleHandle { .. }))
    ));
    assert!(matches!(world.runtime.crowd().update_rate(gone), Err(StateError::StaleHandle { .. })));

    world.update();
    let joints = demo.rig.num_joints();
    let mut context = EvalContext::for_layers(3, &world.bound.layers, joints);
    let mut output = vec![0.0; 3 * joints * 16];
    let crowd = world.runtime.crowd();
    let mut run = |rows: &[u32], dt_s: &[f32]| {
        // The low-level job: the test is about the due lists `run_due` refuses.
        FrameJob {
            rig: &demo.rig,
            clips: &world.bound.clips,
            layers: &world.bound.layers,
            samples: crowd.samples(world.kind).unwrap(),
            programs: crowd.programs(world.kind).unwrap(),
            dt_s: DT,
            context: &mut context,
            layout: OutputLayout::Mat4,
            output: &mut output,
            clips_sampled: &mut [0; 3],
            root_motion: &mut [],
        }
        .run_due(DueRows { rows, dt_s })
    };
    assert!(matches!(run(&[0, 1], &[DT]), Err(EvalError::Program(ProgramError::DueLength { rows: 2, dt: 1 }))));
    let bad_row = |r: Result<FrameStats, EvalError>, at: usize, row: u32| matches!(r, Err(EvalError::Program(ProgramError::BadDueRow { index, row: r, .. })) if index == at && r == row);
    assert!(bad_row(run(&[0, 3], &[DT, DT]), 1, 3), "past the crowd");
    assert!(bad_row(run(&[1, 1], &[DT, DT]), 1, 1), "repeated");
    assert!(bad_row(run(&[2, 0], &[DT, DT]), 1, 0), "descending");
    assert!(bad_row(run(&[0, 2], &[DT, f32::NAN]), 1, 2), "NaN seconds");
    assert!(bad_row(run(&[0], &[-DT]), 0, 0), "negative seconds");
    assert!(run(&[], &[]).is_ok(), "an empty due list evaluates nothing");
}

/// The GPU under LOD, fused frame and stage by stage, against `FrameJob::run_due`: mixed rates
/// that change mid-run, chunks of 8 so that chunks hold some, all or none of their characters
/// due. Every character's matrices, due or held, within 1e-4 every frame.
#[test]
fn gpu_matches_cpu_under_lod() {
    let Some(gpu) = gpu_support::gpu() else { return };
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let n = 40;
    let mut world = World::new(&demo, demo_graph(&demo, None), n);
    // The first chunk, then the last, all at a low rate: often none of them is due.
    world.set_rates(|id| if id < 8 { 16 } else { [1, 2, 4, 8, 16][id % 5] });
    let crowd = |stage_buffers| {
        let options = GpuCrowdOptions { max_chunk_characters: Some(8), stage_buffers, ..Default::default() };
        let mut crowd =
            GpuCrowd::with_layers(&gpu.device, &gpu.queue, &demo.rig, &world.bound.clips, &world.bound.layers, options)
                .expect("the demo fits the device");
        let (tables, trees) = world.bound.archetype.expansion();
        crowd.set_expansion(tables, trees).expect("the archetype's own expansion");
        crowd
    };
    let (mut fused, mut staged) = (crowd(false), crowd(true));
    let mut skipped_chunks = 0;
    for frame in 0..240 {
        if frame == 100 {
            world.set_rates(|id| if id >= 32 { 8 } else { [8, 1, 16, 2, 4][id % 5] });
        }
        world.update();
        world.evaluate();
        let (records, due) =
            (world.runtime.crowd().record_frame(world.kind).unwrap(), world.runtime.crowd().due(world.kind).unwrap());
        fused.set_frame_records_due(&records, DT, due).expect("the GPU takes what FrameJob takes");
        staged.set_frame_records_due(&records, DT, due).expect("the GPU takes what FrameJob takes");
        assert_eq!(fused.characters_dispatched(), due.len(), "frame {frame}: one workgroup per due character");
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        fused.encode(&mut encoder);
        for stage in Stage::LAYERED {
            staged.encode_stage(&mut encoder, stage).expect("stage buffers");
        }
        gpu.queue.submit([encoder.finish()]);
        skipped_chunks += (0..n.div_ceil(8)).filter(|k| !due.rows.iter().any(|&r| r as usize / 8 == *k)).count();
        for (name, got) in [
            ("fused", fused.read_output_blocking().expect("readback")),
            ("staged", staged.read_output_blocking().expect("readback")),
        ] {
            assert_matrices_close_with(
                &world.output,
                &got,
                16,
                joints,
                GPU_TOLERANCE,
                &format!("{name}: frame {frame}"),
                |row| {
                    format!(
                        "row {row} has rate {}, due: {}",
                        world.runtime.crowd().update_rate(world.handles[row]).unwrap(),
                        due.rows.contains(&(row as u32))
                    )
                },
            );
        }
    }
    assert!(skipped_chunks > 0, "some frames should leave whole chunks undispatched");
}

/// A character spawned between an update and the evaluation is due at once: the evaluation
/// shows its first pose instead of leaving its output row as nobody wrote it.
#[test]
fn a_character_spawned_after_the_update_is_evaluated_with_it() {
    let demo = DemoCharacter::humanoid();
    let joints = demo.rig.num_joints();
    let mut world = World::new(&demo, demo_graph(&demo, None), 8);
    world.set_rates(|_| 8);
    for _ in 0..5 {
        world.update();
        world.evaluate();
    }
    let newcomer = world.runtime.spawn(world.kind).expect("archetype");
    let (_, row) = world.runtime.crowd().row_of(newcomer).expect("live");
    let due = world.runtime.crowd().due(world.kind).expect("archetype");
    assert_eq!(
        (due.rows.last(), due.dt_s.last()),
        (Some(&(row as u32)), Some(&0.0)),
        "the newcomer is listed, having shown nothing"
    );
    // `evaluate` fills the output with NaN first: a row the runtime did not write stays NaN.
    world.evaluate();
    let matrices = &world.output[row * joints * 16..];
    assert!(matrices.iter().all(|v| v.is_finite()), "the newcomer's matrices were written");
    // Its root's skinning matrix is a rigid transform, as a pose's must be, not the NaN left there.
    let root = Mat4::from_cols_slice(&matrices[..16]);
    assert!((root.determinant() - 1.0).abs() < 1e-3, "root matrix {root}");
    // And it is its start state's first frame, as a character spawned and stepped by 0 s shows,
    // not the rig's bind pose (identity skinning matrices) for a frame.
    let mut alone = World::new(&demo, demo_graph(&demo, None), 1);
    alone.runtime.update(0.0).expect("dt 0");
    alone.evaluate();
    let worst = worst_abs_diff(&alone.output, matrices);
    assert!(worst <= 1e-5, "the newcomer differs from a character spawned and stepped by 0 s by {worst}");
    assert!(
        matrices.chunks_exact(16).any(|m| !Mat4::from_cols_slice(m).abs_diff_eq(Mat4::IDENTITY, 1e-3)),
        "the newcomer shows the bind pose"
    );
}

/// Skipped updates' seconds add up, but never past what a due list may hold: two updates of
/// `f32::MAX` (each a step `update` accepts) leave every row's seconds finite, so the crowd's
/// own due list is one `run_due` takes, and the matrices stay finite.
#[test]
fn extreme_steps_leave_a_due_list_the_evaluator_takes() {
    let demo = DemoCharacter::humanoid();
    let mut world = World::new(&demo, demo_graph(&demo, None), 8);
    world.set_rates(|id| [2, 4, 8, 16][id % 4]);
    for dt_s in [DT, f32::MAX, f32::MAX, DT] {
        world.runtime.update(dt_s).expect("a finite, non-negative step");
        let due = world.runtime.crowd().due(world.kind).expect("archetype");
        assert!(due.dt_s.iter().all(|s| s.is_finite()), "due seconds {:?}", due.dt_s);
        world.evaluate();
        assert!(world.output.iter().all(|v| v.is_finite()), "after a step of {dt_s} s: non-finite matrices");
    }
}
