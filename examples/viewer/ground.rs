//! The ground the characters walk on, and the procedural pose that meets it: each foot put on
//! the ground under it (throng's feet-on-the-ground stage, fed world-space "raycast hits" from an
//! analytic ground standing in for an engine's physics), and heads turning toward a moving point
//! or the camera (a look-at chain), on whichever evaluator draws the crowd.

use glam::{Mat4, Quat, Vec3};
use throng::demo::ANKLE_HEIGHT_M;
use throng::eval::frame_layers::ProceduralInputs;
use throng::program::{ProceduralRig, ProceduralSetup, ProceduralTargets};
use throng::rig::{Rig, Transform};

/// A setting a key cycles and a flag names ([`Ground`] with `G` and `--ground`, [`Look`] with
/// `K` and `--look`).
pub trait Choice: Copy + PartialEq + 'static {
    /// The values, in the order the key cycles them.
    const ALL: &'static [Self];

    /// The name the flag takes.
    fn name(self) -> &'static str;

    /// The value the flag's `name` names.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The next value (the key).
    fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&c| c == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// The ground's shape. Every shape is a profile along world X, the same along Z, repeating every
/// [`PERIOD_M`] so that any crowd size walks over the same terrain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ground {
    /// Level at height 0: the ground the clips were authored on.
    Flat,
    /// Ridges and valleys of [`SLOPE_RAD`] slopes.
    Slope,
    /// Stairs of [`STEP_HEIGHT_M`] risers every [`STEP_DEPTH_M`], up then down.
    Steps,
}

/// Half a period: a slope rises (or the stairs climb) for this long, then falls.
const HALF_PERIOD_M: f32 = 12.0;
/// The terrain repeats every this many metres along X.
pub const PERIOD_M: f32 = 2.0 * HALF_PERIOD_M;
/// The slopes' angle: about 14°, within the feet's tilt limit (0.4 rad).
pub const SLOPE_RAD: f32 = 0.25;
/// One step's rise, metres.
pub const STEP_HEIGHT_M: f32 = 0.15;
/// One step's depth, metres.
pub const STEP_DEPTH_M: f32 = 1.0;

impl Choice for Ground {
    const ALL: &'static [Self] = &[Ground::Flat, Ground::Slope, Ground::Steps];

    fn name(self) -> &'static str {
        match self {
            Ground::Flat => "flat",
            Ground::Slope => "slope",
            Ground::Steps => "steps",
        }
    }
}

impl Ground {
    /// Distance climbed from the last valley at `x`, metres along X, in [0, HALF_PERIOD_M], and
    /// whether X climbs there (+1) or descends (−1).
    fn climb(x: f32) -> (f32, f32) {
        let u = x.rem_euclid(PERIOD_M);
        if u < HALF_PERIOD_M { (u, 1.0) } else { (PERIOD_M - u, -1.0) }
    }

    /// The ground's height at world `(x, z)`, metres.
    pub fn height(self, x: f32, _z: f32) -> f32 {
        let (climbed, _) = Self::climb(x);
        match self {
            Ground::Flat => 0.0,
            Ground::Slope => SLOPE_RAD.tan() * climbed,
            Ground::Steps => STEP_HEIGHT_M * (climbed / STEP_DEPTH_M).floor(),
        }
    }

    /// The ground's unit normal at world `(x, z)` (on a riser's edge, the tread's).
    pub fn normal(self, x: f32, _z: f32) -> Vec3 {
        match self {
            Ground::Flat | Ground::Steps => Vec3::Y,
            Ground::Slope => {
                let (_, direction) = Self::climb(x);
                Vec3::new(-direction * SLOPE_RAD.tan(), 1.0, 0.0).normalize()
            }
        }
    }

    /// The ground as triangles over `[-half_m, half_m]²`, each vertex a position and a normal:
    /// its profile along X (slopes, treads and risers) drawn the length of Z.
    pub fn mesh(self, half_m: f32) -> Vec<[[f32; 3]; 2]> {
        // The profile: (x, height) corners, each segment a quad with its own normal.
        let mut corners: Vec<(f32, f32)> = Vec::new();
        let first = (-half_m / PERIOD_M).floor() as i32;
        let last = (half_m / PERIOD_M).ceil() as i32;
        match self {
            Ground::Flat => corners.extend([(-half_m, 0.0), (half_m, 0.0)]),
            Ground::Slope => {
                let top = self.height(HALF_PERIOD_M, 0.0);
                for k in first..=last {
                    let x = k as f32 * PERIOD_M;
                    corners.extend([(x, 0.0), (x + HALF_PERIOD_M, top)]);
                }
            }
            Ground::Steps => {
                let steps = (HALF_PERIOD_M / STEP_DEPTH_M).round() as i32;
                for k in first..=last {
                    let valley = k as f32 * PERIOD_M;
                    // Treads up the near side, then down the far side; consecutive treads at
                    // different heights make the risers between them.
                    for s in 0..steps {
                        let (x, y) = (valley + s as f32 * STEP_DEPTH_M, s as f32 * STEP_HEIGHT_M);
                        corners.extend([(x, y), (x + STEP_DEPTH_M, y)]);
                    }
                    for s in (0..steps).rev() {
                        let (x, y) = (valley + PERIOD_M - (s + 1) as f32 * STEP_DEPTH_M, s as f32 * STEP_HEIGHT_M);
                        corners.extend([(x, y), (x + STEP_DEPTH_M, y)]);
                    }
                }
            }
        }
        let mut triangles = Vec::with_capacity(corners.len() * 6);
        for pair in corners.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            // Clipped to the drawn square (the profile overshoots it by up to a period).
            if (x0 == x1 && y0 == y1) || x1 < -half_m || x0 > half_m {
                continue;
            }
            let at = |x: f32| if x1 > x0 { y0 + (y1 - y0) * (x - x0) / (x1 - x0) } else { y0 };
            let (cx0, cx1) = (x0.max(-half_m), x1.min(half_m));
            let (x0, y0, x1, y1) =
                (cx0, if cx0 == x0 { y0 } else { at(cx0) }, cx1, if cx1 == x1 { y1 } else { at(cx1) });
            // Along the profile × -Z: up from a tread or slope, toward the lower tread from a riser.
            let along = Vec3::new(x1 - x0, y1 - y0, 0.0);
            let normal = along.cross(Vec3::NEG_Z).normalize_or(Vec3::Y);
            let n = normal.to_array();
            let v = |x: f32, y: f32, z: f32| [[x, y, z], n];
            let (near, far) = (-half_m, half_m);
            triangles.extend([
                v(x0, y0, near),
                v(x1, y1, far),
                v(x1, y1, near),
                v(x0, y0, near),
                v(x0, y0, far),
                v(x1, y1, far),
            ]);
        }
        triangles
    }
}

/// Where heads look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Nowhere in particular: the clips' heads.
    Off,
    /// At a point circling over the field ([`Procedural::look_point`]), drawn as a marker.
    Point,
    /// At the camera.
    Camera,
}

impl Choice for Look {
    const ALL: &'static [Self] = &[Look::Off, Look::Point, Look::Camera];

    fn name(self) -> &'static str {
        match self {
            Look::Off => "off",
            Look::Point => "point",
            Look::Camera => "camera",
        }
    }
}

/// The look-at point's height above the ground under it, in mesh heights: about eye level.
const LOOK_HEIGHT: f32 = 0.95;
/// The look-at point's angular speed around the field's centre, radians per second.
const LOOK_RAD_PER_S: f32 = 0.35;

/// The crowd's procedural pose: the humanoid's setup (look-at chain, feet on the ground), one
/// row of targets per character (the crowd's row is the viewer's character index), and where
/// each foot's sole stood in the last frame drawn, from which its ground is found.
pub struct Procedural {
    setup: ProceduralRig,
    targets: ProceduralTargets,
    num_joints: usize,
    /// The leg's end joint (ankle) of each foot, and each joint's bind-pose position in model
    /// space (a skinning matrix times it is the joint's model position).
    ankles: [usize; 2],
    ankle_bind: [Vec3; 2],
    /// The look-at chain's end joint (the head) and its bind-pose model matrix.
    head: usize,
    head_bind: Mat4,
    /// Per character and foot, the world point under the sole in the last frame drawn (where
    /// the engine's raycast would start); `None` before the first.
    soles: Option<Vec<[Vec3; 2]>>,
    /// The look-at point, world space, as last set.
    look_point: Vec3,
}

impl Procedural {
    /// `setup` (the humanoid's: a look-at chain and two feet) checked against `rig`, for
    /// `num_characters` characters, every weight 0.
    pub fn new(setup: &ProceduralSetup, rig: &Rig, num_characters: usize) -> Result<Self, String> {
        let setup = setup.clone().check(rig).map_err(|e| format!("the procedural setup: {e}"))?;
        let feet = setup.setup().ground.as_ref().map_or(&[][..], |g| &g.feet[..]);
        let [Some(left), Some(right)] = [feet.first(), feet.get(1)] else {
            return Err("the procedural setup has no two feet".into());
        };
        let Some(&head) = setup.setup().look_at.first().and_then(|chain| chain.joints.last()) else {
            return Err("the procedural setup has no look-at chain".into());
        };
        let ankles = [left.leg.joints[2] as usize, right.leg.joints[2] as usize];
        let bind = rig.rest_model();
        let ankle_bind = ankles.map(|j| bind[j].w_axis.truncate());
        let head = usize::from(head);
        let targets = ProceduralTargets::new(&setup, num_characters);
        Ok(Self {
            setup,
            targets,
            num_joints: rig.num_joints(),
            ankles,
            ankle_bind,
            head,
            head_bind: bind[head],
            soles: None,
            look_point: Vec3::ZERO,
        })
    }

    /// The look-at point at `time_s`: circling the field's centre at `radius_m`, about eye level
    /// above the ground under it (`unit_m`: the mesh's height).
    pub fn look_point(ground: Ground, time_s: f64, radius_m: f32, unit_m: f32) -> Vec3 {
        let angle = (time_s * f64::from(LOOK_RAD_PER_S)) as f32;
        let (x, z) = (radius_m * angle.cos(), radius_m * angle.sin());
        Vec3::new(x, ground.height(x, z) + LOOK_HEIGHT * unit_m, z)
    }

    /// The look-at point as last set.
    pub fn last_look_point(&self) -> Vec3 {
        self.look_point
    }

    /// Sets every character's targets for the coming frame: with `ik`, each foot's ground (the
    /// point under last frame's sole and the normal there, as an engine's raycast down from the
    /// foot returns them; under the character's root before any frame was drawn) at weight 1;
    /// with a look target, every head toward it at weight 1; 0 for what is off.
    pub fn aim(
        &mut self,
        ground: Ground,
        ik: bool,
        look_at: Option<Vec3>,
        placements: &[[f32; 4]],
    ) -> Result<(), String> {
        let n = placements.len();
        self.targets.resize(n);
        if !ik && look_at.is_none() && self.inputs().is_none() {
            // Everything off and every weight already 0: the default viewer pays nothing here.
            return Ok(());
        }
        let rows: Vec<u32> = (0..n as u32).collect();
        let worlds: Vec<Transform> = placements.iter().map(placement).collect();
        let ground_weight = if ik { 1.0 } else { 0.0 };
        self.targets.set_ground_weight(&rows, &vec![ground_weight; n]).map_err(|e| e.to_string())?;
        if ik {
            for foot in 0..2 {
                let points: Vec<Vec3> = (0..n)
                    .map(|i| {
                        let under = self
                            .soles
                            .as_ref()
                            .and_then(|s| s.get(i))
                            .map_or_else(|| Vec3::new(placements[i][0], 0.0, placements[i][2]), |soles| soles[foot]);
                        Vec3::new(under.x, ground.height(under.x, under.z), under.z)
                    })
                    .collect();
                let normals: Vec<Vec3> = points.iter().map(|p| ground.normal(p.x, p.z)).collect();
                self.targets.set_ground_world(foot, &rows, &worlds, &points, &normals).map_err(|e| e.to_string())?;
            }
        }
        let (target, weight) = match look_at {
            Some(point) => (point, 1.0),
            None => (Vec3::ZERO, 0.0),
        };
        self.look_point = target;
        self.targets
            .set_look_at_world(0, &rows, &worlds, &vec![target; n], &vec![weight; n])
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The stage's inputs, when any weight is on; `None` runs the frame without the stage.
    pub fn inputs(&self) -> Option<ProceduralInputs<'_>> {
        let on = |w: &[f32]| w.iter().any(|&w| w > 0.0);
        let active = on(self.targets.ground_weight()) || self.targets.look_at().iter().any(|c| on(&c.weight));
        active.then_some(ProceduralInputs { setup: &self.setup, targets: &self.targets })
    }

    /// The targets, for the graph's bound chain weights (`ChainWeightsJob`).
    pub fn targets_mut(&mut self) -> &mut ProceduralTargets {
        &mut self.targets
    }

    /// The left and right feet's ankle joints.
    pub fn ankle_joints(&self) -> [usize; 2] {
        self.ankles
    }

    /// Each character's ankles in world space, from skinning matrices of a frame (character
    /// `i`'s left and right ankles at `i * per_character + at[foot]`: all its joints, or only
    /// those read back) and each character's world matrix.
    pub fn ankles(
        &self,
        matrices: &[Mat4],
        per_character: usize,
        at: [usize; 2],
        worlds: impl Iterator<Item = Mat4>,
    ) -> Vec<[Vec3; 2]> {
        worlds
            .enumerate()
            .map(|(i, world)| {
                [0, 1].map(|f| {
                    let m = matrices.get(i * per_character + at[f]).copied().unwrap_or(Mat4::IDENTITY);
                    world.transform_point3(m.transform_point3(self.ankle_bind[f]))
                })
            })
            .collect()
    }

    /// Per character, the angle between its head's forward axis (the chain's, +Z) and the
    /// direction from the head to the look-at point as last set, degrees, in the frame of
    /// `matrices` (skinning matrices, `i * J + j`) placed by `worlds`.
    pub fn look_angles_deg(&self, matrices: &[Mat4], worlds: impl Iterator<Item = Mat4>) -> Vec<f32> {
        let forward = self.setup.setup().look_at.first().map_or(Vec3::Z, |chain| chain.forward);
        worlds
            .enumerate()
            .map(|(i, world)| {
                let skin = matrices.get(i * self.num_joints + self.head).copied().unwrap_or(Mat4::IDENTITY);
                let head = world * skin * self.head_bind;
                let to_target = self.look_point - head.w_axis.truncate();
                head.transform_vector3(forward).angle_between(to_target).to_degrees()
            })
            .collect()
    }

    /// Forgets where the soles stood (feet not read back: their next ground is under the roots).
    pub fn forget_soles(&mut self) {
        self.soles = None;
    }

    /// Keeps where each sole stood in a frame drawn with ground weight `weight`: below its ankle
    /// by the ankle height, along the ground's normal when the stage tilted the foot to it.
    pub fn observe(&mut self, ground: Ground, ankles: Vec<[Vec3; 2]>, weight: f32) {
        self.soles = Some(ankles.into_iter().map(|pair| pair.map(|a| sole(ground, a, weight))).collect());
    }
}

/// A character's placement as a transform: its position, turned by its heading about +Y.
fn placement(p: &[f32; 4]) -> Transform {
    Transform::from_translation_rotation(Vec3::new(p[0], p[1], p[2]), Quat::from_rotation_y(p[3]))
}

/// The sole under an ankle at `ankle` (world space) on `ground`: [`ANKLE_HEIGHT_M`] below it
/// along the ground's normal as far as a foot tilted by `weight` follows it.
pub fn sole(ground: Ground, ankle: Vec3, weight: f32) -> Vec3 {
    let up = Vec3::Y.lerp(ground.normal(ankle.x, ankle.z), weight).normalize_or(Vec3::Y);
    ankle - up * ANKLE_HEIGHT_M
}

/// How far a sole at `sole` (world space) is above the ground, metres (negative: below it).
pub fn clearance(ground: Ground, sole: Vec3) -> f32 {
    sole.y - ground.height(sole.x, sole.z)
}
