// What `throng::gpu::Hierarchy::Subgroup`'s kernels assume of a device, asked of it once when a
// crowd would run them (`gpu::crowd::limits::subgroups_are_full`): that a workgroup of
// `WORKGROUP_SIZE` threads splits into full subgroups, so that a lane's count of the active
// lanes below it (`subgroupExclusiveAdd(1u)`, `shared/subgroup_depths.wgsl`) is its invocation
// id, the lane `subgroupShuffle` reads. Each thread writes 1 where that holds for it, 0 where
// not. Prefixed with the `WORKGROUP_SIZE` line.

@group(0) @binding(0) var<storage, read_write> full: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn subgroup_probe_main(
    @builtin(local_invocation_index) thread: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let present = subgroupAdd(1u);
    let below = subgroupExclusiveAdd(1u);
    full[thread] = select(0u, 1u, present == size && below == lane);
}
