//! The orbit camera: a target on the ground, seen from a heading, a pitch and a distance.

use glam::camera::rh::{proj::directx, view::look_at_mat4};
use glam::{Mat4, Vec3};

use crate::scene::Scene;

/// Vertical field of view, radians.
const FOV_Y_RAD: f32 = 0.8;
/// The farthest the starting view stands from its target, in character heights.
const MAX_FRAMING_HEIGHTS: f32 = 25.0;

/// Looks at `target` from `distance_m` away, `yaw_rad` about +Y and `pitch_rad` above the
/// ground.
#[derive(Clone, Copy, Debug)]
pub struct Orbit {
    pub target: Vec3,
    pub yaw_rad: f32,
    pub pitch_rad: f32,
    pub distance_m: f32,
}

impl Orbit {
    /// A view of the field from above one corner: all of a small crowd; for a large one, close
    /// enough that people read as people, with the crowd running to the horizon.
    pub fn framing(scene: &Scene) -> Self {
        let height = scene.model.height_m;
        Self {
            target: Vec3::new(0.0, 0.4 * height, 0.0),
            yaw_rad: 0.6,
            pitch_rad: 0.45,
            distance_m: (1.5 * scene.field_half_m + 3.0 * height).min(MAX_FRAMING_HEIGHTS * height),
        }
    }

    /// The camera's position.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = self.pitch_rad.sin_cos();
        self.target + self.distance_m * Vec3::new(cp * sy, sp, cp * cy)
    }

    /// Projection × view; wgpu's clip space has depth in [0, 1] and y up, DirectX's convention.
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let far = self.distance_m * 8.0 + 100.0;
        directx::perspective(FOV_Y_RAD, aspect.max(1e-3), (self.distance_m * 0.01).max(0.05), far)
            * look_at_mat4(self.eye(), self.target, Vec3::Y)
    }

    /// Mouse drag by `(dx, dy)` pixels.
    pub fn rotate(&mut self, dx: f32, dy: f32) {
        self.yaw_rad -= dx * 0.005;
        self.pitch_rad = (self.pitch_rad + dy * 0.005).clamp(0.05, 1.5);
    }

    /// Wheel by `lines` (positive: closer).
    pub fn zoom(&mut self, lines: f32) {
        self.distance_m = (self.distance_m * 0.9f32.powf(lines)).clamp(1.0, 5000.0);
    }

    /// Moves the target along the ground: `forward` and `right` in units of the distance, so
    /// that panning feels the same near and far.
    pub fn pan(&mut self, forward: f32, right: f32) {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let ahead = Vec3::new(-sy, 0.0, -cy);
        let side = Vec3::new(cy, 0.0, -sy);
        self.target += (ahead * forward + side * right) * self.distance_m;
    }
}
