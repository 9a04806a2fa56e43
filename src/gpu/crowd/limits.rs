use std::borrow::Cow;

use crate::gpu::GpuError;
use crate::gpu::pipelines::{FrameKernel, kernel_module, storage_buffers_needed};
use crate::gpu::types::WORKGROUP_SIZE;

/// The device limits the pipelines for a rig of `num_joints` need, checked before anything is
/// created so that a too-small device is a typed error rather than wgpu's uncaptured-error
/// panic. A `layered` crowd binds a fourth group; each pipeline built binds
/// [`storage_buffers_needed`] at most. The workgroup's threads and memory are the rig's: a level
/// kernel's crowd of up to 128 joints runs 128 threads and 8 KiB where 256 joints take 256 and
/// 16 KiB.
pub(super) fn check_limits(
    limits: &wgpu::Limits,
    kernel: FrameKernel,
    num_joints: usize,
    layered: bool,
    stage_buffers: bool,
) -> Result<(), GpuError> {
    // The stage path and the transition stage run 64-thread workgroups whatever the kernel.
    let threads = u64::from(kernel.workgroup_threads_for(num_joints).max(WORKGROUP_SIZE));
    let groups = if layered {
        4
    } else if stage_buffers {
        3
    } else {
        2
    };
    let needs: [(&'static str, u64, u64); 5] = [
        ("max_bind_groups", groups, limits.max_bind_groups.into()),
        (
            "max_storage_buffers_per_shader_stage",
            storage_buffers_needed(layered, stage_buffers).into(),
            limits.max_storage_buffers_per_shader_stage.into(),
        ),
        ("max_compute_invocations_per_workgroup", threads, limits.max_compute_invocations_per_workgroup.into()),
        ("max_compute_workgroup_size_x", threads, limits.max_compute_workgroup_size_x.into()),
        (
            "max_compute_workgroup_storage_size",
            kernel
                .workgroup_memory_bytes_for(num_joints)
                .max(FrameKernel::Fused.workgroup_memory_bytes_for(num_joints)),
            limits.max_compute_workgroup_storage_size.into(),
        ),
    ];
    for (limit, needed, got) in needs {
        if got < needed {
            return Err(GpuError::DeviceLimit { limit, needed, got });
        }
    }
    Ok(())
}

/// Whether `device` (which has wgpu's `SUBGROUP` feature) splits a workgroup of
/// [`WORKGROUP_SIZE`] threads into full subgroups whose lanes count their index
/// (`shaders/shared/subgroup_probe.wgsl`): what [`crate::gpu::Hierarchy::Subgroup`]'s kernels
/// assume and no limit states (wgpu builds pipelines allowing varying subgroup sizes, without
/// requiring full ones). Asked of the probe's own pipeline, whose subgroups a driver forms as it
/// forms the kernels' on every device known, by dispatching one workgroup and reading its answer
/// back: a wait on the device (for everything queued on it), when a crowd would compose its
/// hierarchy in a subgroup. Any error building or running the probe (validation, the driver's
/// own, out of memory) answers no rather than reaching the device's uncaptured-error handler;
/// a device lost on the way is [`GpuError::Poll`] or [`GpuError::Readback`].
pub(super) fn subgroups_are_full(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<bool, GpuError> {
    const LABEL: &str = "throng.subgroup_probe";
    // A driver that cannot build or run the probe cannot be trusted with the kernels either:
    // its error is the answer, not the device's uncaptured error. Scopes pop in reverse.
    let scopes = [wgpu::ErrorFilter::Validation, wgpu::ErrorFilter::Internal, wgpu::ErrorFilter::OutOfMemory]
        .map(|filter| device.push_error_scope(filter));
    let source = format!(
        "const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n{}",
        include_str!("../../../shaders/shared/subgroup_probe.wgsl")
    );
    let module = kernel_module(device, LABEL, Cow::Owned(source));
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(LABEL),
        layout: None,
        module: &module,
        entry_point: Some("subgroup_probe_main"),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    });
    let bytes = u64::from(WORKGROUP_SIZE) * 4;
    let full = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(LABEL),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(LABEL),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: full.as_entire_binding() }],
    });
    let answers: Vec<u32> =
        crate::gpu::run_pass_and_read(device, queue, LABEL, &full, bytes, "the subgroup probe", |pass| {
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        })?;
    let mut clean = true;
    for scope in scopes.into_iter().rev() {
        clean &= pollster::block_on(scope.pop()).is_none();
    }
    Ok(clean && answers.iter().all(|&answer| answer == 1))
}

/// The most characters one dispatch may evaluate: few enough that the largest window a chunk
/// binds (`window_bytes_per_character` each), plus up to one storage alignment of slack before
/// it, fits in one storage binding, and that the grid holds: `max_compute_workgroups_per_dimension`
/// workgroups of one character with `one_dimensional` (the fused kernels), else that limit cubed
/// ([`grid`]) of `per_workgroup` characters. `requested` lowers it (to at least 1).
pub(super) fn chunk_characters(
    window_bytes_per_character: u64,
    limits: &wgpu::Limits,
    (one_dimensional, per_workgroup): (bool, u32),
    requested: Option<u32>,
) -> u32 {
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let slack = u64::from(limits.min_storage_buffer_offset_alignment);
    let by_binding =
        (binding.saturating_sub(slack) / window_bytes_per_character.max(1)).clamp(1, u64::from(u32::MAX)) as u32;
    let per_dimension = u64::from(limits.max_compute_workgroups_per_dimension);
    let grid = if one_dimensional {
        per_dimension
    } else {
        per_dimension.saturating_pow(3).saturating_mul(u64::from(per_workgroup))
    };
    let device_max = by_binding.min(grid.min(u64::from(u32::MAX)) as u32).max(1);
    requested.map_or(device_max, |n| n.clamp(1, device_max))
}

/// The grid of `groups` workgroups: rows of at most `max_per_dimension`, and past that many rows
/// layers of them (the level kernels read their index as `(z × height + y) × width + x`,
/// `shared/levels.wgsl`); the workgroups past `groups` find no character and only keep the
/// barriers. Every dimension stays within the limit for any `groups` below its cube. No
/// workgroups, `(0, 0, 0)`: nothing to dispatch.
pub(super) fn grid(groups: u32, max_per_dimension: u32) -> (u32, u32, u32) {
    if groups == 0 {
        return (0, 0, 0);
    }
    let max = max_per_dimension.max(1);
    let width = groups.clamp(1, max);
    let rows = groups.div_ceil(width);
    let height = rows.clamp(1, max);
    (width, height, rows.div_ceil(height))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_JOINTS;

    #[test]
    fn the_limits_asked_for_are_those_of_the_pipelines_built() {
        // WebGPU's defaults (8 storage buffers a stage, 4 groups) run the plain and the layered
        // frame and the plain stage path; only the layered stage path needs 10. The error names
        // the limit.
        let webgpu = wgpu::Limits::default();
        assert!(
            [(false, false), (false, true), (true, false)].into_iter().all(|(layered, stages)| check_limits(
                &webgpu,
                FrameKernel::Fused,
                64,
                layered,
                stages
            )
            .is_ok())
        );
        assert!(matches!(
            check_limits(&webgpu, FrameKernel::Fused, 64, true, true),
            Err(GpuError::DeviceLimit { limit: "max_storage_buffers_per_shader_stage", needed: 10, got: 8 })
        ));
        let mut device = wgpu::Limits { max_storage_buffers_per_shader_stage: 7, ..webgpu };
        assert!(check_limits(&device, FrameKernel::Fused, 64, false, false).is_ok());
        assert!(matches!(
            check_limits(&device, FrameKernel::Fused, 64, true, false),
            Err(GpuError::DeviceLimit { limit: "max_storage_buffers_per_shader_stage", needed: 8, got: 7 })
        ));
        device.max_storage_buffers_per_shader_stage = 10;
        assert!(check_limits(&device, FrameKernel::Fused, 64, true, true).is_ok());
        device.max_bind_groups = 3;
        assert!(check_limits(&device, FrameKernel::Fused, 64, false, true).is_ok());
        assert!(matches!(
            check_limits(&device, FrameKernel::Fused, 64, true, false),
            Err(GpuError::DeviceLimit { limit: "max_bind_groups", needed: 4, got: 3 })
        ));
    }

    fn limits(binding_mib: u64, workgroups: u32) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: binding_mib << 20,
            max_buffer_size: 1 << 40,
            max_compute_workgroups_per_dimension: workgroups,
            min_storage_buffer_offset_alignment: 256,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn chunks_fit_one_binding_and_the_workgroup_limit() {
        // lavapipe: 128 MiB bindings. A 64-joint mat4 character is 4 KiB: 32,767 characters
        // (not 32,768: the window may start up to 256 bytes before the chunk).
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), None), 32_767);
        // A large binding leaves the workgroup limit as the bound.
        assert_eq!(chunk_characters(4096, &limits(4096, 65_535), (true, 1), None), 65_535);
        // The level kernels' grid of rows leaves the binding as the only bound, but on a device
        // of 2 workgroups a dimension, 8 workgroups of 4 characters.
        assert_eq!(chunk_characters(4096, &limits(4096, 65_535), (false, 4), None), 1_048_575);
        assert_eq!(chunk_characters(4096, &limits(4096, 2), (false, 4), None), 32);
        // A test's request lowers the chunk but never raises it past the device, nor to 0.
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(7)), 7);
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(0)), 1);
        assert_eq!(chunk_characters(4096, &limits(128, 65_535), (true, 1), Some(100_000)), 32_767);
    }

    #[test]
    fn level_kernels_ask_for_their_rigs_workgroup() {
        // A rig of more than 128 joints: 256 threads and 16 KiB of workgroup memory, WebGPU's
        // defaults exactly.
        let webgpu = wgpu::Limits::default();
        assert!(check_limits(&webgpu, FrameKernel::Levels, 200, true, false).is_ok());
        let small = wgpu::Limits { max_compute_invocations_per_workgroup: 128, ..webgpu.clone() };
        assert!(check_limits(&small, FrameKernel::Fused, 200, true, false).is_ok());
        assert!(matches!(
            check_limits(&small, FrameKernel::Levels, 200, true, false),
            Err(GpuError::DeviceLimit { limit: "max_compute_invocations_per_workgroup", needed: 256, got: 128 })
        ));
        // Up to 128 joints, 128 threads and 8 KiB: such a device runs them.
        assert!(check_limits(&small, FrameKernel::Levels, 128, true, false).is_ok());
        // wgpu's downlevel defaults allow 16,352 bytes: the level kernel's 64-joint crowd fits,
        // its 256-joint one does not, and `Fused` takes 12 KiB for 256 joints.
        let downlevel = wgpu::Limits::downlevel_defaults().max_compute_workgroup_storage_size;
        assert_eq!(downlevel, 16_352);
        let small = wgpu::Limits { max_compute_workgroup_storage_size: downlevel, ..webgpu };
        assert!(check_limits(&small, FrameKernel::Levels, 64, false, false).is_ok());
        assert!(check_limits(&small, FrameKernel::Fused, MAX_JOINTS, true, false).is_ok());
        assert!(matches!(
            check_limits(&small, FrameKernel::Levels, MAX_JOINTS, false, false),
            Err(GpuError::DeviceLimit { limit: "max_compute_workgroup_storage_size", needed: 16_384, got: 16_352 })
        ));
    }

    #[test]
    fn grids_cover_every_workgroup_in_rows() {
        assert_eq!(grid(0, 65_535), (0, 0, 0));
        assert_eq!(grid(10, 65_535), (10, 1, 1));
        assert_eq!(grid(65_535, 65_535), (65_535, 1, 1));
        // 250,000 workgroups (a million 64-joint characters, 4 a workgroup): 4 rows.
        assert_eq!(grid(250_000, 65_535), (65_535, 4, 1));
        assert_eq!(grid(7, 3), (3, 3, 1));
        // Past the limit's square, layers of rows.
        assert_eq!(grid(7, 2), (2, 2, 2));
        assert_eq!(grid(9, 2), (2, 2, 3));
    }
}
