//! The crowd brain: gameplay stand-in that gives every character something to do, so that
//! every state, blend and layer of the demo graph shows somewhere in the crowd.
//!
//! Each character keeps a goal (a speed, a turn rate, whether to wave or lean) until a timer
//! of 1–5 s runs out, then picks another; speed eases towards the goal at a character
//! controller's acceleration, so the 1D blend space slides between idle, walk and run; now and
//! then it jumps. Characters that reach the field's edge turn back towards its centre.

/// How fast speed changes, m/s².
const ACCELERATION_MPS2: f32 = 2.5;
/// How fast the lean and wave layers fade in and out, weight per second.
const LAYER_FADE_PER_S: f32 = 2.0;
/// Largest turn rate while walking, radians per second.
const MAX_TURN_RAD_PER_S: f32 = 0.7;

/// What the brain decided this frame beyond the parameter columns.
pub struct Orders {
    /// Characters to jump.
    pub jump: Vec<usize>,
}

/// Per-character goals and the parameter values derived from them (one entry per character).
pub struct Brain {
    rng: Rng,
    /// `speed`, m/s.
    pub speed_mps: Vec<f32>,
    /// `lean` layer weight, 0..1.
    pub lean: Vec<f32>,
    /// `wave` layer weight, 0..1.
    pub wave: Vec<f32>,
    /// Heading change this frame, radians.
    pub turn_rad: Vec<f32>,
    goal_speed_mps: Vec<f32>,
    goal_turn_rad_per_s: Vec<f32>,
    goal_lean: Vec<f32>,
    goal_wave: Vec<f32>,
    timer_s: Vec<f32>,
}

impl Brain {
    /// Goals for `n` characters; the first decisions come at spread-out times so that the
    /// crowd does not start walking in step.
    pub fn new(n: usize, seed: u64) -> Self {
        let mut rng = Rng(seed | 1);
        let timer_s = (0..n).map(|_| rng.range(0.0, 1.5)).collect();
        Self {
            rng,
            speed_mps: vec![0.0; n],
            lean: vec![0.0; n],
            wave: vec![0.0; n],
            turn_rad: vec![0.0; n],
            goal_speed_mps: vec![0.0; n],
            goal_turn_rad_per_s: vec![0.0; n],
            goal_lean: vec![0.0; n],
            goal_wave: vec![0.0; n],
            timer_s,
        }
    }

    /// Three numbers in [-1, 1] for character `i`, the same every run: spawn jitter and heading.
    pub fn jitter(&self, i: usize) -> [f32; 3] {
        let mut r = Rng((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        [r.range(-1.0, 1.0), r.range(-1.0, 1.0), r.range(-1.0, 1.0)]
    }

    /// Advances every goal by `dt_s` and writes this frame's parameter values. `placements`
    /// are `[x, y, z, heading]` per character.
    pub fn think(&mut self, dt_s: f32, placements: &[[f32; 4]], field_half_m: f32) -> Orders {
        let mut jump = Vec::new();
        for i in 0..self.speed_mps.len() {
            self.timer_s[i] -= dt_s;
            if self.timer_s[i] <= 0.0 {
                self.timer_s[i] = self.rng.range(1.0, 5.0);
                self.decide(i, &mut jump);
            }
            let p = placements.get(i).copied().unwrap_or_default();
            if p[0].abs() > field_half_m || p[2].abs() > field_half_m {
                // Turn towards the centre: heading h faces (sin h, cos h) in (x, z) and a
                // growing h turns it towards (cos h, -sin h); turn that way if the centre lies
                // on that side.
                let towards_centre = -p[0] * p[3].cos() + p[2] * p[3].sin();
                self.goal_turn_rad_per_s[i] = MAX_TURN_RAD_PER_S.copysign(towards_centre);
                self.goal_speed_mps[i] = self.goal_speed_mps[i].max(1.5);
            }
            self.speed_mps[i] = approach(self.speed_mps[i], self.goal_speed_mps[i], ACCELERATION_MPS2 * dt_s);
            self.lean[i] = approach(self.lean[i], self.goal_lean[i], LAYER_FADE_PER_S * dt_s);
            self.wave[i] = approach(self.wave[i], self.goal_wave[i], LAYER_FADE_PER_S * dt_s);
            // Turning only while moving: standing characters do not spin on the spot.
            let moving = (self.speed_mps[i] / 1.5).min(1.0);
            self.turn_rad[i] = self.goal_turn_rad_per_s[i] * moving * dt_s;
        }
        Orders { jump }
    }

    fn decide(&mut self, i: usize, jump: &mut Vec<usize>) {
        let r = self.rng.unit();
        self.goal_speed_mps[i] = match r {
            r if r < 0.25 => 0.0,
            r if r < 0.65 => self.rng.range(1.0, 1.8),
            r if r < 0.85 => self.rng.range(2.2, 3.0),
            _ => self.rng.range(3.5, 4.0),
        };
        self.goal_turn_rad_per_s[i] = self.rng.range(-MAX_TURN_RAD_PER_S, MAX_TURN_RAD_PER_S);
        if self.rng.unit() < 0.2 {
            jump.push(i);
        }
        // Waving and leaning are what people do standing or strolling.
        let slow = self.goal_speed_mps[i] < 2.0;
        self.goal_wave[i] = if slow && self.rng.unit() < 0.3 { 1.0 } else { 0.0 };
        self.goal_lean[i] = if self.rng.unit() < 0.25 { 1.0 } else { 0.0 };
    }
}

fn approach(value: f32, goal: f32, step: f32) -> f32 {
    if value < goal { (value + step).min(goal) } else { (value - step).max(goal) }
}

/// xorshift64*: deterministic, so that a headless run renders the same picture every time.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32
    }

    fn range(&mut self, low: f32, high: f32) -> f32 {
        low + (high - low) * self.unit()
    }
}
