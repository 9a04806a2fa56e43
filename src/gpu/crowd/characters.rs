use super::{GpuCrowd, LAYER_STATE_BYTES, MIN_BUFFER_BYTES, Runs};
use crate::gpu::types::GpuLayerState;

impl GpuCrowd {
    /// Forgets what `character` of a layered crowd displayed, so that its next switch is a cut
    /// (a character reused for someone new, or teleported by gameplay), as
    /// [`crate::eval::frame_layers::EvalContext::reset_character`]. Out-of-range characters, and
    /// crowds without layers, are ignored. Takes effect with the next submitted frame.
    pub fn reset_character(&self, character: usize) {
        let memory = self
            .frame
            .as_ref()
            .filter(|f| character < f.num_characters)
            .and_then(|f| f.layered.as_ref())
            .map(|(_, m)| m);
        if let Some((buffer, states)) = memory.and_then(|m| self.memory_blocks(m, character)) {
            for at in states {
                self.queue.write_buffer(buffer, at, bytemuck::bytes_of(&GpuLayerState::default()));
            }
        }
    }

    /// The buffer holding `character`'s layer memory and the byte offset of each of its
    /// [`GpuLayerState`]s (one per layer with memory): what forgetting what it showed clears.
    fn memory_blocks<'m>(
        &self,
        memory: &'m Runs,
        character: usize,
    ) -> Option<(&'m wgpu::Buffer, impl Iterator<Item = u64> + use<'m>)> {
        let (buffer, at) = memory.locate(character)?;
        let per_layer = self.layer_block_bytes();
        Some((buffer, (0..self.num_memory_layers() as u64).map(move |l| at + l * per_layer)))
    }

    /// Tells the crowd it has `num_characters` characters, after spawns between frames, as
    /// [`crate::eval::frame_layers::EvalContext::resize`] does on the CPU: characters past the last
    /// frame's have shown nothing, and a [`swap_remove`](Self::swap_remove) before the next
    /// frame then moves the row [`crate::state::Crowd::despawn`] moves (a despawn after a spawn
    /// moves the newcomer, not the last character the device knows). Nothing is submitted; the
    /// next [`set_frame`](Self::set_frame) sizes the buffers.
    pub fn resize(&mut self, num_characters: usize) {
        self.live_characters = num_characters;
    }

    /// Removes `character`, moving the last character's memory and output matrices into its
    /// place on the device, as
    /// [`crate::state::Crowd::despawn`] moves the last row of an archetype into the removed one
    /// and [`crate::eval::frame_layers::EvalContext::swap_remove`] does on the CPU: every other
    /// character keeps what it displayed, so its transitions in flight carry on, and the next
    /// [`set_frame`](Self::set_frame) has one character fewer (plus any added, which start
    /// having shown nothing even where they take the freed row). Several removals between
    /// frames apply in order, each to the crowd the one before left. After spawns, call
    /// [`resize`](Self::resize) first, so that the row moved is the crowd's last, not the last
    /// frame's. Out-of-range characters are ignored.
    ///
    /// The copies are submitted at once (`memory_bytes_per_character` bytes and
    /// `output_bytes_per_character` bytes, each twice, through a scratch buffer: wgpu copies
    /// between distinct buffers only), so call this between frames, after the previous frame's
    /// commands were submitted.
    pub fn swap_remove(&mut self, character: usize) {
        if character >= self.live_characters {
            return;
        }
        let last = self.live_characters - 1;
        self.live_characters = last;
        let Some(frame) = self.frame.as_ref() else {
            return;
        };
        let memory_bytes = self.memory_bytes_per_character();
        let output_bytes = self.output_bytes_per_character();
        // A crowd whose layers all lack memory keeps none to move, only its output.
        let memory = frame.layered.as_ref().map(|(_, memory)| memory).filter(|_| memory_bytes > 0);
        let forget = |encoder: &mut wgpu::CommandEncoder, row: usize| {
            if let Some((buffer, states)) = memory.and_then(|memory| self.memory_blocks(memory, row)) {
                for at in states {
                    encoder.clear_buffer(buffer, at, Some(LAYER_STATE_BYTES));
                }
            }
        };
        if character >= frame.num_characters {
            // A character added since the last frame leaves: the device holds nothing of it.
            return;
        }
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng.swap_remove") });
        if last >= frame.num_characters {
            // The character moved into `character` was added since the last frame and has shown
            // nothing: the row forgets what its last occupant showed (its output is rewritten,
            // since a newcomer is due at once).
            forget(&mut encoder, character);
            self.queue.submit([encoder.finish()]);
            return;
        }
        if character != last {
            let scratch = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("throng.swap_remove"),
                size: memory_bytes.max(output_bytes).max(MIN_BUFFER_BYTES),
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut relocate = |runs: &Runs, bytes: u64| {
                if let (Some((from, from_at)), Some((to, to_at))) = (runs.locate(last), runs.locate(character)) {
                    encoder.copy_buffer_to_buffer(from, from_at, &scratch, 0, bytes);
                    encoder.copy_buffer_to_buffer(&scratch, 0, to, to_at, bytes);
                }
            };
            if let Some(memory) = memory {
                relocate(memory, memory_bytes);
            }
            // The output row moves too: a character that animation LOD skips next frame keeps
            // showing the matrices it had (`set_frame_due`).
            if output_bytes > 0 {
                relocate(&frame.output, output_bytes);
            }
        }
        // The freed row forgets what it showed, for whoever is added there before the crowd
        // shrinks (a despawn and a spawn in the same frame keep the count).
        forget(&mut encoder, last);
        self.queue.submit([encoder.finish()]);
    }
}
