//! Affine 3×4 output is the mat4 output's top three rows, on both evaluators: the built-in
//! humanoid with its graph (root motion, an additive and a masked layer, inertialized
//! switches) run for two seconds, every frame's matrices compared bit for bit on the CPU and
//! within DESIGN.md's 1e-4 on the GPU.
//!
//! The GPU half skips with a message when no adapter exists, unless `THRONG_REQUIRE_GPU=1`.

use std::sync::Arc;

use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::gpu::{GpuCrowd, GpuCrowdOptions};
use throng::graph::CompiledGraph;
use throng::program::{ClipSample, LayerProgram, LayerSetup, OutputLayout};
use throng::state::Crowd;
use throng::{Clip, Rig};

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::{gpu, layered_frame};
use support::compare::{GPU_TOLERANCE, assert_matrices_close};

const DT: f32 = 1.0 / 60.0;
const CHARACTERS: usize = 40;
const FRAMES: usize = 120;

/// `affine`'s 12 floats per joint against the top three rows of `mat4`'s column-major 16:
/// row `r`, column `c` is `mat4[c * 4 + r]` and `affine[r * 4 + c]`; the dropped bottom row
/// must be `(0, 0, 0, 1)`.
fn check_rows(what: &str, mat4: &[f32], affine: &[f32], tolerance: f32) {
    assert_eq!(mat4.len() / 16, affine.len() / 12, "{what}: matrix counts differ");
    for (m, (full, rows)) in mat4.chunks_exact(16).zip(affine.chunks_exact(12)).enumerate() {
        for r in 0..3 {
            for c in 0..4 {
                let (want, got) = (full[c * 4 + r], rows[r * 4 + c]);
                assert!(
                    (want - got).abs() <= tolerance,
                    "{what}: matrix {m} row {r} column {c}: mat4 {want}, affine {got}"
                );
            }
        }
        let bottom = [full[3], full[7], full[11], full[15]];
        assert!(
            bottom.iter().zip([0.0, 0.0, 0.0, 1.0]).all(|(a, b)| (a - b).abs() <= 1e-5),
            "{what}: matrix {m} bottom row {bottom:?}"
        );
    }
}

struct Frames {
    rig: Rig,
    clips: Vec<Clip>,
    layers: Vec<LayerSetup>,
    /// Every frame's samples and programs from the real state step.
    frames: Vec<(Vec<ClipSample>, Vec<LayerProgram>)>,
}

/// The demo crowd driven through walks, runs, jumps, leans and waves, each character on its
/// own schedule.
fn demo_frames() -> Frames {
    let demo = DemoCharacter::humanoid();
    let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap())).unwrap();
    let mut crowd = Crowd::new();
    let kind = crowd.add_archetype(bound.archetype);
    let handles: Vec<_> = (0..CHARACTERS).map(|_| crowd.spawn(kind).unwrap()).collect();
    let param = |name| crowd.param(kind, name).unwrap();
    let (speed, jump, lean, wave) = (param("speed"), param("jump"), param("lean"), param("wave"));
    let mut frames = Vec::with_capacity(FRAMES);
    for frame in 0..FRAMES {
        let phase = |c: usize, period: usize| ((frame + 7 * c) % period) as f32 / period as f32;
        let speeds: Vec<f32> = (0..CHARACTERS).map(|c| 4.0 * phase(c, 50 + c % 13)).collect();
        crowd.set_float(speed, &handles, &speeds).unwrap();
        let leans: Vec<f32> = (0..CHARACTERS).map(|c| phase(c, 37)).collect();
        crowd.set_float(lean, &handles, &leans).unwrap();
        let waves: Vec<f32> = (0..CHARACTERS).map(|c| if phase(c, 45) < 0.5 { 1.0 } else { 0.3 }).collect();
        crowd.set_float(wave, &handles, &waves).unwrap();
        let jumpers: Vec<_> =
            handles.iter().enumerate().filter(|(c, _)| (frame + c) % 70 == 0).map(|(_, h)| *h).collect();
        crowd.set_trigger(jump, &jumpers, false).unwrap();
        crowd.update(DT).unwrap();
        frames.push((crowd.samples(kind).unwrap().to_vec(), crowd.programs(kind).unwrap().to_vec()));
    }
    let switched = frames.iter().flat_map(|(_, p)| p).filter(|p| p.flags & LayerProgram::SWITCHED != 0).count();
    assert!(switched > CHARACTERS, "the script switches states ({switched} switches)");
    Frames { rig: demo.rig, clips: bound.clips, layers: bound.layers, frames }
}

/// Runs the CPU evaluator over every frame in `layout`, returning each frame's output.
fn cpu_run(f: &Frames, layout: OutputLayout) -> Vec<Vec<f32>> {
    let joints = f.rig.num_joints();
    let mut context = EvalContext::new(CHARACTERS, f.layers.len(), joints);
    let mut clips_sampled = vec![0; CHARACTERS];
    f.frames
        .iter()
        .map(|(samples, programs)| {
            let mut output = vec![0.0; CHARACTERS * joints * layout.floats_per_joint()];
            // The low-level job: it replays the recorded frames once per layout, each from fresh memory.
            FrameJob {
                rig: &f.rig,
                clips: &f.clips,
                layers: &f.layers,
                samples,
                programs,
                dt_s: DT,
                context: &mut context,
                layout,
                output: &mut output,
                clips_sampled: &mut clips_sampled,
                root_motion: &mut [],
            }
            .run()
            .unwrap();
            output
        })
        .collect()
}

#[test]
fn cpu_affine_output_is_the_mat4_top_three_rows_bit_for_bit() {
    let f = demo_frames();
    let (mat4, affine) = (cpu_run(&f, OutputLayout::Mat4), cpu_run(&f, OutputLayout::Affine3x4));
    for (frame, (m, a)) in mat4.iter().zip(&affine).enumerate() {
        check_rows(&format!("CPU frame {frame}"), m, a, 0.0);
    }
}

#[test]
fn gpu_affine_output_is_the_mat4_top_three_rows() {
    let Some(gpu) = gpu() else { return };
    let f = demo_frames();
    let run = |layout: OutputLayout| -> Vec<Vec<f32>> {
        let options = GpuCrowdOptions { layout, ..Default::default() };
        let mut crowd = GpuCrowd::with_layers(&gpu.device, &gpu.queue, &f.rig, &f.clips, &f.layers, options).unwrap();
        f.frames.iter().map(|(samples, programs)| layered_frame(&gpu, &mut crowd, samples, programs, DT)).collect()
    };
    let (mat4, affine) = (run(OutputLayout::Mat4), run(OutputLayout::Affine3x4));
    let cpu_affine = cpu_run(&f, OutputLayout::Affine3x4);
    for (frame, ((m, a), c)) in mat4.iter().zip(&affine).zip(&cpu_affine).enumerate() {
        check_rows(&format!("GPU frame {frame}"), m, a, GPU_TOLERANCE);
        assert_matrices_close(
            c,
            a,
            12,
            f.rig.num_joints(),
            GPU_TOLERANCE,
            &format!("GPU frame {frame}: affine output against the CPU's"),
        );
    }
}
