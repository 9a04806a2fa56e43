//! A camera's image target read back from Bevy's device, for tests and tools: the `crowd`
//! example's headless PNG and the draw test's pixels.

use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::renderer::{RenderDevice, RenderQueue};
use bevy::render::texture::GpuImage;

/// Why an image could not be read back; nothing was read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadbackError {
    /// The handle names no image on Bevy's device: the render app uploads an image in the
    /// first update after it was added.
    #[error("the image is not on the device (read it back after an update)")]
    NotOnDevice,
    /// The image's texture cannot be copied from: its `texture_descriptor.usage` lacks
    /// `TextureUsages::COPY_SRC`.
    #[error("the image's texture lacks COPY_SRC usage")]
    NotCopySource,
    /// The texture is not 8-bit RGBA (`Rgba8Unorm` or `Rgba8UnormSrgb`).
    #[error("cannot read a {0:?} texture as RGBA8")]
    Format(wgpu::TextureFormat),
    /// Waiting for the device failed (a lost device).
    #[error("waiting for the device: {0}")]
    Poll(#[from] wgpu::PollError),
    /// Mapping the copied pixels failed.
    #[error("mapping the pixels: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
    /// The mapped pixels could not be viewed.
    #[error("viewing the mapped pixels: {0}")]
    View(#[from] wgpu::MapRangeError),
}

/// An image's pixels: 8-bit RGBA, `width × height`, rows top to bottom with no padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePixels {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// `width × height × 4` bytes.
    pub rgba: Vec<u8>,
}

/// Copies `image`, a render target on Bevy's device (`Image::new_target_texture` with
/// `TextureUsages::COPY_SRC` added), back from the device as it stands after the last update,
/// waiting for the device. `render_world` is the render app's world
/// (`app.sub_app(RenderApp).world()`).
///
/// # Errors
/// [`ReadbackError`]: the image not on the device, not copyable, not RGBA8; the device lost or
/// the map refused.
pub fn read_image_blocking(render_world: &World, image: &Handle<Image>) -> Result<ImagePixels, ReadbackError> {
    let gpu_image = render_world
        .get_resource::<RenderAssets<GpuImage>>()
        .and_then(|images| images.get(image))
        .ok_or(ReadbackError::NotOnDevice)?;
    let texture: &wgpu::Texture = &gpu_image.texture;
    if !texture.usage().contains(wgpu::TextureUsages::COPY_SRC) {
        return Err(ReadbackError::NotCopySource);
    }
    if !matches!(texture.format(), wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb) {
        return Err(ReadbackError::Format(texture.format()));
    }
    let device = render_world.resource::<RenderDevice>().wgpu_device();
    let queue: &wgpu::Queue = render_world.resource::<RenderQueue>();
    let (width, height) = (texture.width(), texture.height());
    // Rows of a texture copy are padded to 256 bytes.
    let row_bytes = width * 4;
    let padded_row = row_bytes.next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("throng-bevy.readback"),
        size: u64::from(padded_row) * u64::from(height),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("throng-bevy.readback") });
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(padded_row), rows_per_image: None },
        },
        wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
    );
    queue.submit([encoder.finish()]);
    let (sender, receiver) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver outlives the poll below.
        let _ = sender.send(result);
    });
    device.poll(wgpu::PollType::wait_indefinitely())?;
    // A callback dropped unsent is a map that never completed.
    receiver.recv().unwrap_or(Err(wgpu::BufferAsyncError))?;
    let padded = staging.get_mapped_range(..)?;
    let rgba = padded.chunks(padded_row as usize).flat_map(|row| &row[..row_bytes as usize]).copied().collect();
    Ok(ImagePixels { width, height, rgba })
}
