//! Curves on clips: named float tracks ("left foot planted" from 0 to 1, "look at weight"),
//! resampled to the clip's frames like its joints, sampled at the clip's time and blended by
//! the pose's weights (`eval::sample::blend_curve`), for gameplay to read per character or to
//! drive a procedural chain's weight. Set in code with [`Clip::with_curve`], or loaded from a
//! glTF animation's `extras.curves` (`{ "planted": { "times": […], "values": […] } }`, linear
//! keys; `docs/embedding.md`, "Clip curves") or from its morph-weight channels (one curve per
//! morph target, named from the mesh's `extras.targetNames`; `import::gltf`).

use super::{Clip, ClipError, Track, TrackValue};

/// One named curve of a clip: a value per frame of the clip.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipCurve {
    name: String,
    values: Vec<f32>,
}

impl ClipCurve {
    /// The curve's name, unique in its clip.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One value per frame of the clip.
    #[must_use]
    pub fn values(&self) -> &[f32] {
        &self.values
    }
}

impl TrackValue for f32 {
    fn interpolate(a: Self, b: Self, t: f32) -> Self {
        a + (b - a) * t
    }
    fn hermite(v0: Self, m0: Self, v1: Self, m1: Self, t: f32, dt: f32) -> Self {
        let [h00, h10, h01, h11] = super::hermite_basis(t);
        v0 * h00 + m0 * (h10 * dt) + v1 * h01 + m1 * (h11 * dt)
    }
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Clip {
    /// The clip with a curve called `name` added, `track` resampled at the clip's frame times
    /// (before its first key it holds the first value, after its last the last).
    ///
    /// ```
    /// use throng::{Clip, Track, Transform};
    /// let clip = Clip::from_poses("step", 1, vec![Transform::IDENTITY; 31], 1.0, true)?
    ///     .with_curve("planted", &Track::linear(vec![0.0, 0.5, 1.0], vec![1.0, 0.0, 1.0]))?;
    /// let planted = clip.curve_index("planted").unwrap();
    /// assert!((clip.sample_curve(planted, 0.25).unwrap() - 0.5).abs() < 1e-6);
    /// # Ok::<(), throng::ClipError>(())
    /// ```
    ///
    /// # Errors
    /// [`ClipError::BadCurve`] for an empty name, a name the clip already has, or a track
    /// whose keys are malformed (counts, order, values not finite).
    pub fn with_curve(mut self, name: impl Into<String>, track: &Track<f32>) -> Result<Self, ClipError> {
        let name = name.into();
        let bad = |clip: &str, name: &str, what: String| ClipError::BadCurve {
            clip: clip.to_owned(),
            curve: name.to_owned(),
            what,
        };
        if name.is_empty() {
            return Err(bad(&self.name, &name, "the name is empty".into()));
        }
        if self.curve_index(&name).is_some() {
            return Err(bad(&self.name, &name, "the clip already has a curve of this name".into()));
        }
        track.validate(0, "curve").map_err(|e| bad(&self.name, &name, e.to_string()))?;
        let intervals = self.num_frames.saturating_sub(1).max(1) as f32;
        let values = (0..self.num_frames).map(|f| track.sample(self.duration_s * f as f32 / intervals)).collect();
        self.curves.push(ClipCurve { name, values });
        Ok(self)
    }

    /// The clip's curves, in the order added.
    #[must_use]
    pub fn curves(&self) -> &[ClipCurve] {
        &self.curves
    }

    /// The index of the curve called `name`.
    #[must_use]
    pub fn curve_index(&self, name: &str) -> Option<usize> {
        self.curves.iter().position(|c| c.name == name)
    }

    /// Curve `curve` at `time_s`, looping or clamping as the clip's loop flag says, between
    /// frames as the joints are; `None` when the clip has no such curve.
    #[must_use]
    pub fn sample_curve(&self, curve: usize, time_s: f32) -> Option<f32> {
        let values = &self.curves.get(curve)?.values;
        let (a, b, alpha) = self.frame_position(time_s, self.looping);
        Some(f32::interpolate(values[a], values[b], alpha))
    }
}
