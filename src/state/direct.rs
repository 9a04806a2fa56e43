//! Directing a crowd (`docs/state-machine.md#directing-a-crowd`): per-character time scales and
//! start phases, batch calls beside the parameter setters.

use super::{ArchetypeId, CharacterHandle, Crowd, MAX_CHARACTER_SLOTS, StateError};

/// Where the default states of a batch of new characters start ([`Crowd::spawn_phased`]), as a
/// fraction of each state's duration (every layer of a character starts at the same phase, so
/// its layers stay in step with one another).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StartPhases<'a> {
    /// One character per phase, each in `[0, 1)`, honoured exactly.
    Explicit(&'a [f32]),
    /// `count` characters at phases spread uniformly over `[0, 1)` by `seed`: the same seed
    /// gives the same phases, character `i` of the batch the `i`-th of the sequence.
    Spread {
        /// Characters to spawn.
        count: usize,
        /// The sequence's seed.
        seed: u64,
    },
}

impl StartPhases<'_> {
    /// Characters the batch spawns.
    #[must_use]
    pub fn count(&self) -> usize {
        match *self {
            Self::Explicit(phases) => phases.len(),
            Self::Spread { count, .. } => count,
        }
    }

    /// Phase `i` of the batch (`i < count()`).
    fn phase(&self, i: usize) -> f32 {
        match *self {
            Self::Explicit(phases) => phases[i],
            Self::Spread { seed, .. } => spread_phase(seed, i as u64),
        }
    }
}

/// Element `i` of the spread sequence of `seed`: SplitMix64 of the `i`-th step from the seed,
/// its top 24 bits over 2²⁴, so the phase is exactly representable and below 1.
fn spread_phase(seed: u64, i: u64) -> f32 {
    let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u32 << 24) as f32
}

impl Crowd {
    /// Adds characters as [`Crowd::spawn`] does, each layer's default state started at a phase
    /// of its own rather than at 0, so that a crowd spawned at once does not move in lockstep:
    /// explicit phases, or phases spread by a seed. The first update fires the events from that
    /// phase on (the starting point included). All or nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use throng::graph::CompiledGraph;
    /// use throng::state::{Archetype, ClipBinding, Crowd, StartPhases};
    ///
    /// let graph = Arc::new(CompiledGraph::from_json(r#"{ "layers": [{ "name": "Base",
    ///     "states": [{ "name": "START" }, { "name": "Walk" }],
    ///     "transitions": [{ "from": "START", "to": "Walk" }] }] }"#)?);
    /// let walk = Archetype::from_bindings(graph, &[("Walk", ClipBinding { clip: 0, duration_s: 1.0 })])?;
    /// let mut crowd = Crowd::new();
    /// let kind = crowd.add_archetype(walk);
    /// let pair = crowd.spawn_phased(kind, StartPhases::Explicit(&[0.0, 0.5]))?;
    /// assert_eq!(crowd.readback(pair[1], 0)?.phase, 0.5);
    /// let many = crowd.spawn_phased(kind, StartPhases::Spread { count: 100, seed: 7 })?;
    /// assert_eq!(many.len(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`]; [`StateError::BadStartPhase`] for an explicit phase
    /// outside `[0, 1)`; [`StateError::CrowdFull`] when the batch does not fit. Nothing is
    /// spawned then.
    pub fn spawn_phased(
        &mut self,
        id: ArchetypeId,
        phases: StartPhases<'_>,
    ) -> Result<Vec<CharacterHandle>, StateError> {
        self.group(id)?;
        if let StartPhases::Explicit(list) = phases
            && let Some((at, &value)) = list.iter().enumerate().find(|(_, p)| !(0.0..1.0).contains(*p))
        {
            return Err(StateError::BadStartPhase { at, value });
        }
        if phases.count() > self.spawnable() {
            return Err(StateError::CrowdFull { slots: MAX_CHARACTER_SLOTS });
        }
        (0..phases.count()).map(|i| self.spawn_at_phase(id, phases.phase(i))).collect()
    }

    /// Sets characters' time scales: `scales[i]` multiplies `dt` for `handles[i]` from the next
    /// update on — its clocks, transitions, exit times and events, and the seconds its evaluation
    /// is given ([`Crowd::due`]), so that its inertializations decay in its own time. 1 is real
    /// time (a new character's), 0.5 half speed, 0 pauses: the pose holds, and an
    /// inertialization taken while paused captures zero velocity. All or nothing.
    ///
    /// # Errors
    /// [`StateError::LengthMismatch`], [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`StateError::BadTimeScale`] for a negative, NaN or infinite scale.
    pub fn set_time_scale(&mut self, handles: &[CharacterHandle], scales: &[f32]) -> Result<(), StateError> {
        if handles.len() != scales.len() {
            return Err(StateError::LengthMismatch { handles: handles.len(), values: scales.len() });
        }
        for (at, (&h, &value)) in handles.iter().zip(scales).enumerate() {
            self.locate(h)?;
            if !(value.is_finite() && value >= 0.0) {
                return Err(StateError::BadTimeScale { at, value });
            }
        }
        for (&h, &scale) in handles.iter().zip(scales) {
            let (g, row) = self.locate(h)?;
            self.groups[g].time_scale[row] = scale;
        }
        Ok(())
    }

    /// A character's time scale ([`Crowd::set_time_scale`]).
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn time_scale(&self, handle: CharacterHandle) -> Result<f32, StateError> {
        let (g, row) = self.locate(handle)?;
        Ok(self.groups[g].time_scale[row])
    }
}

#[cfg(test)]
mod tests {
    use super::spread_phase;

    #[test]
    fn spread_phases_lie_in_the_unit_interval_and_follow_the_seed() {
        let a: Vec<f32> = (0..1000).map(|i| spread_phase(42, i)).collect();
        assert!(a.iter().all(|p| (0.0..1.0).contains(p)), "every phase in [0, 1)");
        assert_eq!(a, (0..1000).map(|i| spread_phase(42, i)).collect::<Vec<_>>(), "the same seed, the same phases");
        assert_ne!(a, (0..1000).map(|i| spread_phase(43, i)).collect::<Vec<_>>(), "another seed, other phases");
    }
}
