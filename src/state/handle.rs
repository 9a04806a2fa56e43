//! Handles: characters (slot, generation, crowd tag packed in 64 bits), archetypes and parameters.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::graph::ParamSlot;

// Only named in docs.
#[cfg(doc)]
use super::{Crowd, StateError};

/// Bits of a handle's slot index, its generation and its crowd's tag, packed in 64 bits.
pub(super) const INDEX_BITS: u32 = 24;
pub(super) const GENERATION_BITS: u32 = 20;
const CROWD_BITS: u32 = 64 - INDEX_BITS - GENERATION_BITS;

/// Most character slots one crowd holds, live, free and retired together (2²⁴): a handle's
/// index has 24 bits. [`Crowd::spawn`] past it is refused as [`StateError::CrowdFull`].
pub const MAX_CHARACTER_SLOTS: u32 = 1 << INDEX_BITS;

/// A slot's last generation (2²⁰ − 1). A character despawned at it retires its slot for good
/// rather than wrap to generation 0, so that no stale handle ever names a live character.
pub const MAX_GENERATION: u32 = (1 << GENERATION_BITS) - 1;

/// The next crowd's tag. Tags run 1 to 2²⁰ − 1 and then start again, so crowds made
/// 2²⁰ − 1 apart share one; that a handle from one of them is taken for the other's then
/// needs the same slot at the same generation too.
static NEXT_CROWD_TAG: AtomicU32 = AtomicU32::new(0);

pub(super) fn next_crowd_tag() -> u32 {
    1 + NEXT_CROWD_TAG.fetch_add(1, Ordering::Relaxed) % ((1 << CROWD_BITS) - 1)
}

/// A character: its crowd's tag, slot index and generation. Stays valid until the character is
/// removed, and only in the crowd that spawned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CharacterHandle {
    pub(super) index: u32,
    pub(super) generation: u32,
    pub(super) crowd: u32,
}

impl CharacterHandle {
    /// The handle as one integer, `crowd << 44 | generation << 24 | index` (a 20-bit crowd tag,
    /// never 0, so no handle is 0; a 20-bit generation; a 24-bit slot index): for a C caller
    /// (`throng::capi`) or a save file.
    #[must_use]
    pub const fn to_bits(self) -> u64 {
        (self.crowd as u64) << (INDEX_BITS + GENERATION_BITS)
            | (self.generation as u64) << INDEX_BITS
            | self.index as u64
    }

    /// The handle [`CharacterHandle::to_bits`] gave. Any integer is accepted: one that names no
    /// live character is refused by the [`Crowd`] as [`StateError::StaleHandle`], one of
    /// another crowd as [`StateError::ForeignHandle`].
    #[must_use]
    pub const fn from_bits(bits: u64) -> Self {
        Self {
            index: (bits & ((1 << INDEX_BITS) - 1)) as u32,
            generation: (bits >> INDEX_BITS & ((1 << GENERATION_BITS) - 1)) as u32,
            crowd: (bits >> (INDEX_BITS + GENERATION_BITS)) as u32,
        }
    }
}

/// An archetype registered in a [`Crowd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArchetypeId(pub(super) u32);

impl ArchetypeId {
    /// The archetype's position in its crowd, in the order they were added.
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// A parameter of one graph, resolved once by name for fast batch setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamId {
    pub(super) slot: ParamSlot,
    pub(super) graph: u64,
}
