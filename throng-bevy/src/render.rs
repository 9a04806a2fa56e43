//! The render app's side: each archetype's evaluator on Bevy's `RenderDevice` and
//! `RenderQueue`, fed the frame the main world's step extracted.

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::renderer::{RenderContext, RenderDevice, RenderQueue};
use throng::eval::EvalError;
use throng::eval::expand::ExpandJob;
use throng::eval::frame_layers::{EvalContext, FrameJob};
use throng::gpu::{GpuCrowd, GpuCrowdOptions, GpuError};
use throng::program::{ClipSample, LayerProgram, OutputLayout, swap_remove_row};

use crate::{ArchetypeAssets, ArchetypeFrame, Evaluation, FramePacket, RowChange};

/// Why an evaluator refused a frame or a readback; the frame's output is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluatorError {
    /// The GPU evaluator refused (records its checks refuse, a lost device, a failed map).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The CPU evaluator refused.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Reading the CPU evaluator's uploaded buffer back failed.
    #[error("reading the output back failed: {0}")]
    Readback(String),
}

/// One archetype's evaluator and the output buffer its draw reads (character `i`, joint `j` at
/// matrix `i × joints + j`, in the plugin's layout).
#[expect(clippy::large_enum_variant, reason = "one per archetype, made once and never moved in a frame")]
pub enum CrowdEvaluator {
    /// throng's GPU evaluator on Bevy's device, given the archetype's expansion when made: each
    /// frame's state records are expanded on the device.
    Gpu(GpuCrowd),
    /// The CPU evaluator (the records expanded, then evaluated); its matrices uploaded to
    /// `buffer` each frame.
    Cpu(CpuCrowd),
}

/// The CPU evaluator's state for one archetype.
pub struct CpuCrowd {
    context: EvalContext,
    /// The frame's records expanded (`ExpandJob`).
    programs: Vec<LayerProgram>,
    samples: Vec<ClipSample>,
    /// Every row's matrices; with animation LOD the rows not due keep their last.
    matrices: Vec<f32>,
    floats_per_row: usize,
    clips_sampled: Vec<u32>,
    buffer: Option<wgpu::Buffer>,
    device: wgpu::Device,
    queue: wgpu::Queue,
}

impl CrowdEvaluator {
    /// The buffer holding every character's matrices, once a frame was evaluated. A GPU crowd
    /// larger than one buffer of the device has none (`GpuCrowd::output_buffers`).
    #[must_use]
    pub fn output(&self) -> Option<&wgpu::Buffer> {
        match self {
            Self::Gpu(gpu) => gpu.output(),
            Self::Cpu(cpu) => cpu.buffer.as_ref(),
        }
    }

    /// Reads the output back from Bevy's device, waiting for it: characters × joints × the
    /// layout's floats. For tests and tools.
    ///
    /// # Errors
    /// [`EvaluatorError::Gpu`] or [`EvaluatorError::Readback`] when the map fails.
    pub fn read_output_blocking(&self) -> Result<Vec<f32>, EvaluatorError> {
        match self {
            Self::Gpu(gpu) => Ok(gpu.read_output_blocking()?),
            Self::Cpu(cpu) => cpu.read_output_blocking(),
        }
    }

    fn apply(&mut self, change: RowChange) {
        match (self, change) {
            (Self::Gpu(gpu), RowChange::Resize(rows)) => gpu.resize(rows),
            (Self::Gpu(gpu), RowChange::SwapRemove(row)) => gpu.swap_remove(row),
            (Self::Cpu(cpu), RowChange::Resize(rows)) => {
                cpu.context.resize(rows);
                cpu.matrices.resize(rows * cpu.floats_per_row, 0.0);
            }
            (Self::Cpu(cpu), RowChange::SwapRemove(row)) => {
                // The matrices move with their character: a row not due next frame shows them.
                cpu.context.swap_remove(row);
                swap_remove_row(&mut cpu.matrices, row, cpu.floats_per_row);
            }
        }
    }

    /// Uploads the frame's state records (the GPU evaluator: its one records upload, expanded by
    /// the pass before the frame's) or evaluates them (the CPU evaluator, uploading the
    /// matrices); the GPU evaluator's dispatches are recorded later, in the render graph.
    fn prepare(&mut self, frame: &ArchetypeFrame, layout: OutputLayout) -> Result<(), EvaluatorError> {
        match self {
            Self::Gpu(gpu) => {
                let records = frame.records.frame();
                match &frame.due {
                    Some(due) => gpu.set_frame_records_due(&records, frame.dt_s, due.as_rows())?,
                    None => gpu.set_frame_records(&records, frame.dt_s)?,
                }
                Ok(())
            }
            Self::Cpu(cpu) => cpu.evaluate(frame, layout),
        }
    }
}

impl CpuCrowd {
    fn new(assets: &ArchetypeAssets, layout: OutputLayout, device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self {
            context: EvalContext::for_layers(0, &assets.layers, assets.rig.num_joints()),
            programs: Vec::new(),
            samples: Vec::new(),
            matrices: Vec::new(),
            floats_per_row: assets.rig.num_joints() * layout.floats_per_joint(),
            clips_sampled: Vec::new(),
            buffer: None,
            device: device.clone(),
            queue: queue.clone(),
        }
    }

    fn evaluate(&mut self, frame: &ArchetypeFrame, layout: OutputLayout) -> Result<(), EvaluatorError> {
        let assets = &frame.assets;
        let layers = assets.layers.len().max(1);
        let records = frame.records.frame();
        let characters = records.records().len() / layers;
        self.programs.resize(records.records().len(), LayerProgram::default());
        self.samples.resize(characters * assets.tables.samples_per_character(), ClipSample::default());
        ExpandJob::of_frame(&assets.tables, &assets.trees, &records, &mut self.programs, &mut self.samples)
            .run()
            .map_err(EvalError::from)?;
        let floats = characters * assets.rig.num_joints() * layout.floats_per_joint();
        self.matrices.resize(floats, 0.0);
        self.clips_sampled.resize(characters, 0);
        self.context.resize(characters);
        let job = FrameJob {
            rig: &assets.rig,
            clips: &assets.clips,
            layers: &assets.layers,
            samples: &self.samples,
            programs: &self.programs,
            dt_s: frame.dt_s,
            context: &mut self.context,
            layout,
            output: &mut self.matrices,
            clips_sampled: &mut self.clips_sampled,
            root_motion: &mut [],
        };
        match &frame.due {
            Some(due) => job.run_due(due.as_rows())?,
            None => job.run()?,
        };
        let bytes: &[u8] = bytemuck::cast_slice(&self.matrices);
        let size = (bytes.len() as u64).max(MIN_BUFFER_BYTES);
        if self.buffer.as_ref().is_none_or(|buffer| buffer.size() < size) {
            self.buffer = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("throng-bevy.cpu_output"),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }));
        }
        if let Some(buffer) = &self.buffer
            && !bytes.is_empty()
        {
            self.queue.write_buffer(buffer, 0, bytes);
        }
        Ok(())
    }

    fn read_output_blocking(&self) -> Result<Vec<f32>, EvaluatorError> {
        let bytes = (self.matrices.len() * size_of::<f32>()) as u64;
        let Some(buffer) = self.buffer.as_ref().filter(|_| bytes > 0) else {
            return Ok(Vec::new());
        };
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("throng-bevy.readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng-bevy.readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // The receiver outlives the poll below.
            let _ = sender.send(result);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| EvaluatorError::Readback(e.to_string()))?;
        match receiver.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(EvaluatorError::Readback(e.to_string())),
            Err(e) => return Err(EvaluatorError::Readback(e.to_string())),
        }
        let data = staging
            .get_mapped_range(..)
            .map(|view| bytemuck::pod_collect_to_vec(&view))
            .map_err(|e| EvaluatorError::Readback(e.to_string()));
        staging.unmap();
        data
    }
}

/// Smallest buffer made for an empty crowd, so that it can still be bound.
const MIN_BUFFER_BYTES: u64 = 64;

/// The render app's crowds: one evaluator per archetype, in the order they were added.
#[derive(Resource)]
pub struct ThrongRender {
    evaluation: Evaluation,
    layout: OutputLayout,
    crowds: Vec<CrowdEvaluator>,
    fallback: Option<GpuError>,
    errors: Vec<EvaluatorError>,
    /// Per archetype, whether this frame's upload was accepted: what the graph dispatches.
    ready: Vec<bool>,
    frame: u64,
    /// Wall time of the last prepare: row changes, uploads, and the CPU evaluator's work.
    prepare_time: Duration,
}

impl ThrongRender {
    pub(crate) fn new(evaluation: Evaluation, layout: OutputLayout) -> Self {
        Self {
            evaluation,
            layout,
            crowds: Vec::new(),
            fallback: None,
            errors: Vec::new(),
            ready: Vec::new(),
            frame: 0,
            prepare_time: Duration::ZERO,
        }
    }

    /// The evaluator of the archetype added `index`-th.
    #[must_use]
    pub fn crowd(&self, index: usize) -> Option<&CrowdEvaluator> {
        self.crowds.get(index)
    }

    /// Why the GPU evaluator was not used though asked for (the device lacks a limit throng
    /// needs): the CPU evaluator runs instead.
    #[must_use]
    pub fn fallback(&self) -> Option<&GpuError> {
        self.fallback.as_ref()
    }

    /// The refusals of the last frame, one per archetype that kept its previous output.
    #[must_use]
    pub fn errors(&self) -> &[EvaluatorError] {
        &self.errors
    }

    /// The main world's frame number the outputs show (0: none yet).
    #[must_use]
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Wall time of the last frame's prepare (row changes, uploads, and with the CPU evaluator
    /// its evaluation), for frame-time splits; the GPU's own time is not in it.
    #[must_use]
    pub fn last_prepare_time(&self) -> Duration {
        self.prepare_time
    }

    /// The layout of every output buffer.
    #[must_use]
    pub fn layout(&self) -> OutputLayout {
        self.layout
    }

    fn evaluator(&mut self, assets: &ArchetypeAssets, device: &wgpu::Device, queue: &wgpu::Queue) -> CrowdEvaluator {
        if self.evaluation == Evaluation::Gpu && self.fallback.is_none() {
            let options = GpuCrowdOptions { layout: self.layout, ..GpuCrowdOptions::default() };
            let gpu = GpuCrowd::with_layers(device, queue, &assets.rig, &assets.clips, &assets.layers, options)
                .and_then(|mut gpu| gpu.set_expansion(&assets.tables, &assets.trees).map(|()| gpu));
            match gpu {
                Ok(gpu) => return CrowdEvaluator::Gpu(gpu),
                Err(error) => self.fallback = Some(error),
            }
        }
        CrowdEvaluator::Cpu(CpuCrowd::new(assets, self.layout, device, queue))
    }
}

pub(crate) fn extract_frame(main: Extract<Res<FramePacket>>, mut packet: ResMut<FramePacket>) {
    if main.frame != packet.frame {
        *packet = main.clone();
    }
}

/// Prepare: each archetype's row changes in order, then the frame's upload (or the CPU
/// evaluation), on Bevy's device and queue.
pub(crate) fn prepare(
    packet: Res<FramePacket>,
    mut render: ResMut<ThrongRender>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
) {
    if packet.frame == render.frame {
        return;
    }
    let started = Instant::now();
    let device = device.wgpu_device();
    let queue: &wgpu::Queue = &queue;
    render.errors.clear();
    render.ready.clear();
    for (index, frame) in packet.archetypes.iter().enumerate() {
        if index == render.crowds.len() {
            let evaluator = render.evaluator(&frame.assets, device, queue);
            render.crowds.push(evaluator);
        }
        let layout = render.layout;
        let crowd = &mut render.crowds[index];
        for &change in &frame.changes {
            crowd.apply(change);
        }
        let result = crowd.prepare(frame, layout);
        render.ready.push(result.is_ok());
        if let Err(error) = result {
            render.errors.push(error);
        }
    }
    render.frame = packet.frame;
    render.prepare_time = started.elapsed();
}

/// The render graph, before the cameras: each GPU crowd's dispatches into Bevy's encoder, so
/// that the cameras' passes, recorded after, read this frame's matrices.
pub(crate) fn encode(mut context: RenderContext, mut render: ResMut<ThrongRender>) {
    let ThrongRender { crowds, ready, .. } = &mut *render;
    for (crowd, ready) in crowds.iter().zip(ready.iter_mut()) {
        if let (CrowdEvaluator::Gpu(gpu), true) = (crowd, *ready) {
            gpu.encode(context.command_encoder());
        }
        // Dispatched once: a frame the main world did not step is not evaluated again.
        *ready = false;
    }
}
