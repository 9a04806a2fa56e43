//! The transition stage: one layer's pose while a transition runs — cut, frozen snapshot,
//! crossfade, or inertialization capture and decay. Mirrored by `shaders/transition.wgsl`.
//!
//! | program | on the switch update | every update |
//! |---|---|---|
//! | cut | — | destination |
//! | `SOURCE_SNAPSHOT` (frozen, or an interrupted crossfade) | snapshot ← displayed pose | `mix(snapshot, destination, target_weight)` |
//! | crossfade | — | both states' samples blended at once (in the sample stage) |
//! | inertialize | offsets ← old motion carried one step − destination; velocity from the last two displayed poses and the destination one step earlier (none after a step under `MIN_VELOCITY_DT_S`) | destination + offset decayed in real time, each component within `MAX_OFFSET_M` / `MAX_OFFSET_RAD` |
//!
//! A layer that has shown nothing (new, reset, or back from weight 0) treats a fade in flight as
//! starting from its destination: there is no displayed pose to freeze.
//!
//! Any switch ends an offset still decaying: a frozen or interrupting switch starts from the
//! displayed pose, offset included, and an inertialized one re-captures from it, so rapid
//! switches stay continuous. A switch before anything was displayed is a cut.
//!
//! Where the last two displayed poses live is the one thing the mirror does differently: here
//! [`LayerMemory`] keeps them as poses; the GPU frames keep each as the replay entry that made it
//! (its samples and what turned them into the pose) and replay it into its slot only when a
//! switch reads it (`store_switch_sources`, "Memory layout" in the shader), which moves a few
//! dozen bytes a layer a frame instead of 32 a joint. The arithmetic a switch applies to them is
//! the same on both sides.

use crate::program::LayerProgram;
use crate::rig::Transform;

use super::inertialize::{self, Decay, JointOffset, OffsetLanes};
use super::sample::mix_from;
use crate::program::SwitchMode;

/// A layer's running inertialization: its curve and the real time since its switch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Inertia {
    /// The curve, or `None` when no offset is decaying.
    pub decay: Option<Decay>,
    /// Real seconds since the switch.
    pub elapsed_s: f32,
    /// Largest offset component at the switch (metres or radians), to tell when it is spent.
    pub largest_offset: f32,
    /// Largest offset velocity component at the switch.
    pub largest_velocity: f32,
    /// The offset groups with translations ([`inertialize::translating_groups`]).
    pub translating: u64,
}

/// What a layer remembers between frames.
///
/// The last two displayed poses live in two slots that trade places every frame (`newest_in_b`
/// says which holds the newer), so showing a pose costs one copy, not two.
#[derive(Debug)]
pub struct LayerMemory<'a> {
    /// One of the last two displayed poses.
    pub slot_a: &'a mut [Transform],
    /// The other.
    pub slot_b: &'a mut [Transform],
    /// Whether `slot_b` holds the pose displayed last frame.
    pub newest_in_b: &'a mut bool,
    /// The frozen snapshot.
    pub snapshot: &'a mut [Transform],
    /// Inertialization offsets captured at the last switch, four joints to a group
    /// ([`OffsetLanes::groups_for`]).
    pub offsets: &'a mut [OffsetLanes],
    /// The running inertialization.
    pub inertia: &'a mut Inertia,
    /// Frames displayed so far, saturating at 2.
    pub frames_shown: &'a mut u8,
}

/// The decay curve an inertializing program asks for.
#[must_use]
pub fn decay_of(program: &LayerProgram) -> Option<Decay> {
    match program.switch_mode() {
        SwitchMode::InertializeQuintic => {
            Some(Decay::Quintic { duration_s: program.decay_s, overshoot_control: false })
        }
        SwitchMode::InertializeQuinticOvershootControl => {
            Some(Decay::Quintic { duration_s: program.decay_s, overshoot_control: true })
        }
        SwitchMode::InertializeSpring => Some(Decay::Spring { halflife_s: program.decay_s }),
        _ => None,
    }
}

/// Turns the destination pose (already sampled into `pose`) into the pose this layer shows,
/// and updates the layer's memory. `step_back` is the destination one step earlier (sampled
/// from the program's second set on an inertialization's switch update); `dt_s` is the real time
/// since last frame.
pub fn transition(
    program: &LayerProgram,
    step_back: Option<&[Transform]>,
    dt_s: f32,
    memory: LayerMemory<'_>,
    pose: &mut [Transform],
) {
    let switched = program.flags & LayerProgram::SWITCHED != 0;
    let (displayed, previous) = if *memory.newest_in_b {
        (&mut *memory.slot_b, &mut *memory.slot_a)
    } else {
        (&mut *memory.slot_a, &mut *memory.slot_b)
    };
    let shown = *memory.frames_shown;
    if switched {
        *memory.inertia = Inertia::default();
    }
    if program.flags & LayerProgram::SOURCE_SNAPSHOT != 0 {
        if switched && shown > 0 {
            memory.snapshot.copy_from_slice(displayed);
        } else if switched || shown == 0 {
            // Nothing displayed to freeze (a new or reset character, or a layer back from
            // weight 0 in the middle of a fade whose switch it never showed): fade from the
            // destination itself, as after a cut.
            memory.snapshot.copy_from_slice(pose);
        }
        mix_from(memory.snapshot, program.target_weight, pose);
    } else if switched
        && shown > 0
        && let Some(decay) = decay_of(program)
    {
        let before: &[Transform] = if shown > 1 { previous } else { displayed };
        let new_previous = step_back.unwrap_or(pose);
        inertialize::capture(displayed, before, pose, new_previous, dt_s, memory.offsets);
        let largest = |f: fn(&JointOffset) -> [f32; 6]| {
            inertialize::joint_offsets(memory.offsets, pose.len())
                .flat_map(|o| f(&o))
                .fold(0.0f32, |m, v| m.max(v.abs()))
        };
        *memory.inertia = Inertia {
            decay: Some(decay),
            elapsed_s: 0.0,
            largest_offset: largest(|o| {
                [o.translation.x, o.translation.y, o.translation.z, o.rotation.x, o.rotation.y, o.rotation.z]
            }),
            largest_velocity: largest(|o| {
                let (t, r) = (o.translation_velocity, o.rotation_velocity);
                [t.x, t.y, t.z, r.x, r.y, r.z]
            }),
            translating: inertialize::translating_groups(memory.offsets),
        };
    }
    let inertia = &mut *memory.inertia;
    if let Some(decay) = inertia.decay {
        if decay.is_active(inertia.largest_offset, inertia.largest_velocity, inertia.elapsed_s) {
            inertialize::apply(memory.offsets, inertia.translating, decay, inertia.elapsed_s, pose);
            inertia.elapsed_s += dt_s;
        } else {
            inertia.decay = None;
        }
    }
    // The older slot takes this frame's pose and becomes the newer.
    previous.copy_from_slice(pose);
    *memory.newest_in_b = !*memory.newest_in_b;
    *memory.frames_shown = shown.saturating_add(1).min(2);
}
