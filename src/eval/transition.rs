//! The transition stage: one layer's pose while a transition runs — cut, frozen snapshot,
//! crossfade, or inertialization capture and decay. Mirrored by `shaders/transition.wgsl`.
//!
//! | mode | on the switch frame | every frame |
//! |---|---|---|
//! | cut | — | destination |
//! | frozen | snapshot ← displayed pose | `mix(snapshot, destination, blend)` |
//! | crossfade | — | `mix(source, destination, blend)` |
//! | inertialize | offsets ← displayed − destination, velocities from the last two displayed poses and the destination one step earlier | destination + decayed offset |
//!
//! A crossfade that is interrupted is turned into a frozen fade by the state step (the
//! displayed mix becomes the snapshot), so no mode ever needs more than one source. A switch
//! before any pose was displayed is a cut.

use crate::program::{LayerProgram, SwitchMode, FLAG_SWITCHED};
use crate::rig::Transform;

use super::inertialize::{self, Decay, JointOffset};
use super::sample::mix_from;

/// What a layer remembers between frames.
#[derive(Debug)]
pub struct LayerMemory<'a> {
    /// The pose this layer displayed last frame.
    pub displayed: &'a mut [Transform],
    /// The pose it displayed the frame before.
    pub previous: &'a mut [Transform],
    /// The frozen snapshot.
    pub snapshot: &'a mut [Transform],
    /// Inertialization offsets captured at the last switch.
    pub offsets: &'a mut [JointOffset],
    /// Frames displayed so far, saturating at 2.
    pub frames_shown: &'a mut u8,
}

/// The decay curve an inertializing program asks for.
#[must_use]
pub fn decay_of(program: &LayerProgram) -> Option<Decay> {
    match SwitchMode::from_code(program.mode) {
        SwitchMode::InertializeQuintic => Some(Decay::Quintic { duration_s: program.duration_s, overshoot_control: false }),
        SwitchMode::InertializeQuinticOvershootControl => {
            Some(Decay::Quintic { duration_s: program.duration_s, overshoot_control: true })
        }
        SwitchMode::InertializeSpring => Some(Decay::Spring { halflife_s: program.duration_s }),
        _ => None,
    }
}

/// Turns the destination pose (already sampled into `pose`) into the pose this layer shows,
/// and updates the layer's memory. `second` is the second sample set, sampled (the crossfade
/// source, or the destination one step earlier on an inertialization's switch frame); `dt_s`
/// is the real time since last frame.
pub fn transition(program: &LayerProgram, second: Option<&[Transform]>, dt_s: f32, memory: LayerMemory<'_>, pose: &mut [Transform]) {
    let mode = SwitchMode::from_code(program.mode);
    let switched = program.flags & FLAG_SWITCHED != 0;
    let shown = *memory.frames_shown;
    match mode {
        SwitchMode::Cut => {}
        SwitchMode::Crossfade => {
            if let Some(source) = second {
                mix_from(source, program.blend, pose);
            }
        }
        SwitchMode::Frozen => {
            if switched {
                let from: &[Transform] = if shown > 0 { memory.displayed } else { pose };
                memory.snapshot.copy_from_slice(from);
            }
            mix_from(memory.snapshot, program.blend, pose);
        }
        SwitchMode::InertializeQuintic | SwitchMode::InertializeQuinticOvershootControl | SwitchMode::InertializeSpring => {
            if switched {
                if shown == 0 {
                    memory.offsets.fill(JointOffset::default());
                } else {
                    let previous: &[Transform] = if shown > 1 { memory.previous } else { memory.displayed };
                    let new_previous = second.unwrap_or(pose);
                    inertialize::capture(memory.displayed, previous, pose, new_previous, dt_s, memory.offsets);
                }
            }
            if let Some(decay) = decay_of(program) {
                inertialize::apply(memory.offsets, decay, program.elapsed_s, pose);
            }
        }
    }
    memory.previous.copy_from_slice(memory.displayed);
    memory.displayed.copy_from_slice(pose);
    *memory.frames_shown = shown.saturating_add(1).min(2);
}
