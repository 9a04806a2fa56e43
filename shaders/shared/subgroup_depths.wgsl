// The rig's depths as one subgroup takes them (`throng::gpu::Hierarchy::Subgroup`): the
// composing subgroup, and a lane's joint of a depth from the rig's joints in depth order
// (`RigJoint::by_depth`). Read by `shared/subgroup.wgsl` and `shared/subgroup_mesh.wgsl`, and put
// before them.

// One lane's joint at one depth: the joint, the lane holding its parent's result, and whether
// the lane has a joint there (`present`).
struct LevelItem {
    joint: u32,
    parent_lane: u32,
    present: bool,
}

// Where depth `d`'s joints end in depth order (`d` below the joint count).
fn level_end(d: u32) -> u32 {
    return rig_joints[d].by_depth >> BY_DEPTH_LEVEL_END_SHIFT;
}

// Lane `lane`'s joint among the places from `start` to `end` (a depth's).
fn level_item(start: u32, end: u32, lane: u32, num_joints: u32) -> LevelItem {
    let place = start + lane;
    let row = rig_joints[min(place, num_joints - 1u)].by_depth;
    return LevelItem(row & BY_DEPTH_JOINT_MASK, (row >> BY_DEPTH_PARENT_LANE_SHIFT) & BY_DEPTH_JOINT_MASK, place < end);
}

// Whether this thread's subgroup composes the hierarchy (the one holding thread 0). The same
// answer in every lane of a subgroup, so the shuffles under it run with every lane of that
// subgroup, whose lanes count their index (`subgroupExclusiveAdd(1u)`): a 64-thread workgroup
// splits into full subgroups, which the crowd asked the device before choosing this file
// (`shared/subgroup_probe.wgsl`; `docs/gpu.md`, "The hierarchy: walks, one subgroup, pointer
// doubling"). Every thread must call it.
fn composes_hierarchy(thread: u32) -> bool {
    return subgroupAny(thread == 0u);
}
