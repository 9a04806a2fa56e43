//! Draw windows: runs of characters whose skinning matrices one storage binding can hold, for
//! renderers that bind throng's output buffer in a vertex shader.

use super::GpuError;

/// A run of characters whose matrices fit one storage binding, starting at an offset the
/// device can bind: one draw (instances `first_character..first_character + num_characters`)
/// with output buffer `buffer` bound at `offset`, `size` bytes, and `first_character` given to
/// the shader so that it reads matrix `(instance − first_character) × J + j` of its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkinWindow {
    /// The run's first character (row).
    pub first_character: u32,
    /// Characters in the run, at least 1.
    pub num_characters: u32,
    /// Byte offset of the run's matrices in its output buffer: `(first_character − the
    /// buffer's first character) × bytes_per_character`, a multiple of
    /// `min_storage_buffer_offset_alignment`.
    pub offset: u64,
    /// Bytes of the run's matrices, at most `max_storage_buffer_binding_size`.
    pub size: u64,
    /// Which of [`crate::gpu::GpuCrowd::output_buffers`] holds the run (0 unless the output is
    /// split); `offset` counts from that buffer's start.
    pub buffer: u32,
}

/// Splits `num_characters` characters of `bytes_per_character` bytes of matrices each
/// ([`crate::gpu::GpuCrowd::output_bytes_per_character`]) into as few windows as `limits`
/// allow: each starts at a character whose offset is a multiple of
/// `min_storage_buffer_offset_alignment` and holds at most `max_storage_buffer_binding_size`
/// bytes (and `max_buffer_size`). One window covers the whole crowd when it fits; none for an
/// empty crowd. [`crate::gpu::GpuCrowd::skin_windows`] calls this with the crowd's figures.
///
/// ```
/// use throng::gpu::skin_windows;
/// let limits = wgpu::Limits { max_storage_buffer_binding_size: 1 << 20, ..wgpu::Limits::default() };
/// // 26 joints of 48-byte matrices: 1,248 bytes per character, 840 per mebibyte window.
/// let windows = skin_windows(2_000, 1_248, &limits)?;
/// assert_eq!(windows.iter().map(|w| w.num_characters).collect::<Vec<_>>(), [840, 840, 320]);
/// assert!(windows.iter().all(|w| w.offset % 256 == 0 && w.size <= 1 << 20));
/// # Ok::<(), throng::gpu::GpuError>(())
/// ```
///
/// # Errors
/// [`GpuError::CrowdTooLarge`] (`what` = `"output window"`) when no aligned window can hold even
/// the smallest aligned run of characters, or a window index would pass `u32`.
pub fn skin_windows(
    num_characters: usize,
    bytes_per_character: u64,
    limits: &wgpu::Limits,
) -> Result<Vec<SkinWindow>, GpuError> {
    if num_characters == 0 || bytes_per_character == 0 {
        return Ok(Vec::new());
    }
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let alignment = u64::from(limits.min_storage_buffer_offset_alignment.max(1));
    // Runs start at multiples of `step` characters: the first character whose offset is a
    // multiple of the alignment, `alignment / gcd(alignment, bytes_per_character)`.
    let step = alignment / gcd(alignment, bytes_per_character);
    let fit = binding / bytes_per_character;
    let per_window = if fit >= num_characters as u64 { num_characters as u64 } else { fit - fit % step };
    let too_large = || GpuError::CrowdTooLarge {
        characters: num_characters,
        what: "output window",
        bytes: step.saturating_mul(bytes_per_character),
        limit: binding,
        limit_name: "max_storage_buffer_binding_size",
    };
    if per_window == 0 || num_characters as u64 > u64::from(u32::MAX) {
        return Err(too_large());
    }
    let total = num_characters as u64;
    Ok((0..total)
        .step_by(per_window as usize)
        .map(|first| {
            let count = per_window.min(total - first);
            // Both below `num_characters`, checked to fit in u32 above.
            SkinWindow {
                first_character: first as u32,
                num_characters: count as u32,
                offset: first * bytes_per_character,
                size: count * bytes_per_character,
                buffer: 0,
            }
        })
        .collect())
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(binding: u64, alignment: u32) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: binding,
            max_buffer_size: 1 << 40,
            min_storage_buffer_offset_alignment: alignment,
            ..wgpu::Limits::default()
        }
    }

    #[test]
    fn windows_are_aligned_within_the_binding_and_cover_the_crowd_once() {
        for (characters, bytes, binding, alignment) in [
            (100_000, 4_096, 128 << 20, 256),
            (100_000, 1_248, 128 << 20, 256),
            (1_000, 48 * 7, 10_000, 64),
            (300, 100, 7_000, 256),
            (5, 1_248, 1 << 30, 256),
        ] {
            let windows = skin_windows(characters, bytes, &limits(binding, alignment)).unwrap();
            let mut next = 0;
            for w in &windows {
                assert_eq!(w.first_character, next, "windows follow each other");
                assert!(w.num_characters > 0 && w.size <= binding && w.offset % u64::from(alignment) == 0, "{w:?}");
                assert_eq!(
                    (w.offset, w.size),
                    (u64::from(w.first_character) * bytes, u64::from(w.num_characters) * bytes)
                );
                next += w.num_characters;
            }
            assert_eq!(next as usize, characters, "every character in one window");
            // As few windows as the alignment allows: each but the last is full to within one step.
            let step = u64::from(alignment) / gcd(u64::from(alignment), bytes);
            assert!(
                windows.iter().rev().skip(1).all(|w| (u64::from(w.num_characters) + step) * bytes > binding),
                "{windows:?}"
            );
        }
    }

    #[test]
    fn a_crowd_that_fits_is_one_window_and_none_is_none() {
        assert_eq!(
            skin_windows(10, 4_096, &limits(1 << 20, 256)).unwrap(),
            [SkinWindow { first_character: 0, num_characters: 10, offset: 0, size: 40_960, buffer: 0 }]
        );
        assert!(skin_windows(0, 4_096, &limits(1 << 20, 256)).unwrap().is_empty());
    }

    #[test]
    fn a_binding_smaller_than_one_aligned_run_is_refused() {
        // 100 bytes a character with 256-byte alignment: runs start every 64 characters
        // (6,400 bytes), which a 1,000-byte binding cannot hold.
        let e = skin_windows(100, 100, &limits(1_000, 256)).unwrap_err();
        assert!(matches!(e, GpuError::CrowdTooLarge { what: "output window", bytes: 6_400, limit: 1_000, .. }), "{e}");
    }
}
