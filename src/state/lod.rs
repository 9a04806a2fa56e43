//! Animation LOD (`docs/lod.md`): per-character evaluation rates, the stagger, and each update's due rows.

use crate::program::DueRows;

use super::columns::Group;
use super::{ArchetypeId, CharacterHandle, Crowd, StateError};

/// The evaluation rates [`Crowd::set_update_rate`] accepts: a character at rate `r` is
/// evaluated every `r`-th update (its state machine still steps every update).
pub const UPDATE_RATES: [u8; 5] = [1, 2, 4, 8, 16];

/// Stagger phases: a character's phase is its handle index modulo this (a multiple of every
/// rate), so characters spawned together spread over the frames of any rate.
pub(super) const LOD_PHASES: u32 = 16;

/// A group's due rows and their seconds since their last evaluation ([`Crowd::due`]).
#[derive(Clone, Debug, Default)]
pub(super) struct DueList {
    pub(super) rows: Vec<u32>,
    pub(super) dt_s: Vec<f32>,
}

impl DueList {
    /// Fills the list from the LOD columns, keeping its buffers.
    pub(super) fn fill(mut self, due: &[bool], elapsed_s: &[f32]) -> Self {
        self.rows.clear();
        self.dt_s.clear();
        for (row, (&due, &elapsed_s)) in due.iter().zip(elapsed_s).enumerate() {
            if due {
                self.rows.push(row as u32);
                self.dt_s.push(elapsed_s);
            }
        }
        self
    }
}

impl Group {
    /// Forgets the due list after rows changed; [`Crowd::due`] builds it again from the columns.
    pub(super) fn drop_due(&mut self) {
        if let Some(list) = self.due.take() {
            self.spare_due = list;
        }
    }

    /// The due list, built from the columns if a spawn or despawn dropped it.
    pub(super) fn due_list(&self) -> &DueList {
        self.due.get_or_init(|| DueList::default().fill(&self.lod_due, &self.lod_elapsed_s))
    }

    /// Picks this update's due characters (animation LOD): a rate-`r` character is due when
    /// `(update + phase) % r == 0`, or when skipping once more would leave it unevaluated for
    /// longer than `r` updates (after a rate change, or before its first evaluation).
    pub(super) fn schedule(&mut self, dt_s: f32) {
        self.drop_due();
        let frame = self.lod_frame;
        self.lod_frame = frame.wrapping_add(1);
        let columns = self
            .lod_rate
            .iter()
            .zip(&self.lod_phase)
            .zip(&mut self.lod_skipped)
            .zip(&mut self.lod_elapsed_s)
            .zip(&mut self.lod_due)
            .zip(&self.time_scale);
        for (((((&rate, &phase), skipped), elapsed_s), due), &time_scale) in columns {
            let rate = u32::from(rate);
            // The seconds are the character's own (its time scale's, so a paused character's
            // evaluation moves nothing on). Saturating: the skipped updates' dts (each finite)
            // must not add up to infinity, which the evaluators refuse as a row's seconds.
            let dt_s = (dt_s * time_scale).min(f32::MAX);
            *elapsed_s = if *due { dt_s } else { (*elapsed_s + dt_s).min(f32::MAX) };
            *due = frame.wrapping_add(u32::from(phase)) % rate == 0 || u32::from(*skipped) + 1 >= rate;
            if *due {
                *skipped = 0;
            } else {
                *skipped += 1;
            }
        }
    }
}

impl Crowd {
    /// Sets how often characters are evaluated (animation LOD, as Unreal's update-rate
    /// optimisation): a character at rate `r` (1, 2, 4, 8 or 16, [`UPDATE_RATES`]) is due for
    /// evaluation every `r`-th update, staggered by a phase taken from its handle so that an
    /// archetype's evaluation work per update is about `Σ 1/r` characters. Its state machine
    /// still steps every update: states, transitions, events and root motion stay exact. New
    /// characters are rate 1. A change takes effect at the next update, and never leaves a
    /// character unevaluated for longer than its new rate: after 4 → 1 it is due at once.
    /// All-or-nothing. See [`Crowd::due`] and `docs/lod.md`.
    ///
    /// # Errors
    /// [`StateError::LengthMismatch`], [`StateError::StaleHandle`], [`StateError::ForeignHandle`],
    /// [`StateError::BadUpdateRate`] naming the first character given a rate outside
    /// [`UPDATE_RATES`].
    pub fn set_update_rate(&mut self, handles: &[CharacterHandle], rates: &[u8]) -> Result<(), StateError> {
        if handles.len() != rates.len() {
            return Err(StateError::LengthMismatch { handles: handles.len(), values: rates.len() });
        }
        for (&h, &rate) in handles.iter().zip(rates) {
            self.locate(h)?;
            if !UPDATE_RATES.contains(&rate) {
                return Err(StateError::BadUpdateRate { index: h.index, rate });
            }
        }
        for (&h, &rate) in handles.iter().zip(rates) {
            let (g, row) = self.locate(h)?;
            self.groups[g].lod_rate[row] = rate;
        }
        Ok(())
    }

    /// A character's evaluation rate ([`Crowd::set_update_rate`]).
    ///
    /// # Errors
    /// [`StateError::StaleHandle`], [`StateError::ForeignHandle`].
    pub fn update_rate(&self, handle: CharacterHandle) -> Result<u8, StateError> {
        let (g, row) = self.locate(handle)?;
        Ok(self.groups[g].lod_rate[row])
    }

    /// The characters of an archetype due for evaluation after the last update (animation
    /// LOD): their rows ascending, and per row the seconds since it was last evaluated (the
    /// updates it skipped plus the last one). Pass it to `eval::frame_layers::FrameJob::run_due` or
    /// `gpu::GpuCrowd::set_frame_due`: rows not listed are not evaluated and keep showing their
    /// last pose. A character that switched state on the update is listed whatever its rate (a
    /// switch is never deferred); one spawned since is listed with 0 s; with every rate 1, every
    /// row is listed with the update's `dt`. Spawns and despawns after the update keep the list
    /// true for the rows as they are now (it is rebuilt from per-row columns when next asked
    /// for, so a despawn costs no more than moving a row).
    ///
    /// # Errors
    /// [`StateError::UnknownArchetype`].
    pub fn due(&self, id: ArchetypeId) -> Result<DueRows<'_>, StateError> {
        let group = self.group(id)?;
        let list = group.due_list();
        Ok(DueRows { rows: &list.rows, dt_s: &list.dt_s })
    }
}
