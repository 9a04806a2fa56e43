//! The simulated side of the viewer: which character, its crowds (one per switch mode, stepped
//! in lockstep), the crowd brain that sets their parameters, root motion, animation LOD
//! (evaluation rates by distance from the camera), and the ground with the procedural pose
//! that meets it (`ground.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use glam::{Mat4, Quat, Vec3};
use rayon::prelude::*;
use throng::blend_space::{BlendTrees, TreeScratch};
use throng::clip::Clip;
use throng::demo::{CLIP_NAMES, DemoCharacter, IDLE, LOCOMOTION_GRAPH};
use throng::eval::frame_layers::ProceduralInputs;
use throng::eval::procedural::ChainWeightsJob;
use throng::eval::root_motion::{RootDelta, records_root_motion};
use throng::graph::{CompiledGraph, Easing, ParamKind, ParamValue, SwitchMode, TransitionTiming};
use throng::import::gltf::{GltfOptions, load_gltf};
use throng::mesh::SkinnedMesh;
use throng::program::{
    ClipSample, DueRows, ExpandTables, LayerProgram, LayerSetup, ProceduralSetup, RecordFrame, expand_character,
};
use throng::rig::Rig;
use throng::setup::{bind_archetype, layer_setups};
use throng::state::{Archetype, ArchetypeId, CharacterHandle, ClipBinding, Crowd, LayerReadback, ParamId, StartPhases};
use throng::trace::TraceLine;

use crate::brain::Brain;
use crate::ground::{Ground, Look, Procedural, clearance, sole};
use crate::pick::Capsule;

/// The switch modes the viewer offers (keys 1–4), with their `defaultSwitch` JSON.
pub const MODES: [(&str, &str); 4] = [
    ("cut", r#""cut""#),
    ("frozen", r#"{ "mode": "frozen" }"#),
    ("crossfade", r#"{ "mode": "crossfade" }"#),
    ("inertialize", r#"{ "mode": "inertialize", "quintic": { "overshootControl": true } }"#),
];

/// Animation LOD bands: a character nearer the camera than `distance × mesh height` is
/// evaluated every `rate`-th frame (the first band that holds); farther than the last, every
/// [`LOD_FAR_RATE`]-th. For the 1.8 m humanoid: every frame within 27 m, every 2nd to 54 m,
/// every 4th to 108 m.
pub const LOD_BANDS: [(f32, u8); 3] = [(15.0, 1), (30.0, 2), (60.0, 4)];
/// The rate beyond the last [`LOD_BANDS`] band.
pub const LOD_FAR_RATE: u8 = 8;

/// What the crowd is made of: rig, clip table, layers, mesh and one archetype per switch mode
/// (a single one for an imported character, whose one-state graph never switches).
pub struct Model {
    /// The skeleton.
    pub rig: Rig,
    /// The clip table the archetypes' samples index.
    pub clips: Vec<Clip>,
    /// The graph's layers, for the evaluators.
    pub layers: Vec<LayerSetup>,
    /// The skinned mesh drawn per character.
    pub mesh: SkinnedMesh,
    /// `(mode name, archetype)`, in the order of [`MODES`] for the demo.
    pub archetypes: Vec<(&'static str, Archetype)>,
    /// Whether the brain drives the demo graph's parameters (`speed`, `jump`, `lean`, `wave`).
    pub driven: bool,
    /// The mesh's height in the bind pose, metres (spacing and camera framing scale with it).
    pub height_m: f32,
    /// What did not fit the character in a `--graph` file (leaves naming no clip), one line
    /// each: shown by the lab and printed by headless runs.
    pub problems: Vec<String>,
    /// The humanoid's procedural setup (look-at chain, feet on the ground); `None` for a glTF.
    pub procedural: Option<ProceduralSetup>,
}

impl Model {
    /// The built-in humanoid on the locomotion graph, once per switch mode.
    pub fn demo() -> Result<Self, String> {
        Self::demo_with(LOCOMOTION_GRAPH, "the demo graph")
    }

    /// The built-in humanoid on the PlayCanvas state graph in the file at `path`, once per
    /// switch mode: each leaf plays the demo clip its last path segment names, lower-cased
    /// (`"Move.Walk"` plays `walk`). A leaf naming no demo clip plays `idle` and is listed in
    /// [`Model::problems`]; a file that is no graph, or a mask naming a joint the rig lacks, is
    /// an error.
    pub fn demo_graph(path: &Path) -> Result<Self, String> {
        let bytes = throng::import::read_regular_file(path, MAX_GRAPH_BYTES)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| format!("cannot read {}: not UTF-8 ({e})", path.display()))?;
        Self::demo_with(&text, &path.display().to_string())
    }

    /// The built-in humanoid on the graph `json` (named `what` in messages).
    fn demo_with(json: &str, what: &str) -> Result<Self, String> {
        let demo = DemoCharacter::humanoid();
        let reference = demo.clip(IDLE).map(|idle| idle.frame(0));
        let idle = demo.clip_index(IDLE).ok_or("the demo character has no idle clip")?;
        let mut archetypes = Vec::new();
        let mut bound_clips = Vec::new();
        let mut layers = Vec::new();
        let mut problems = Vec::new();
        for (name, switch) in MODES {
            let graph = graph_with_switch(json, switch, what)?;
            // Every mode's graph has the same leaves: their problems are listed once.
            let mut unknown = Vec::new();
            let bound = bind_archetype(Arc::new(graph), &demo.rig, &demo.clips, reference.as_deref(), |path| {
                let clip = path.rsplit('.').next().unwrap_or(path).to_lowercase();
                demo.clip_index(&clip).or_else(|| {
                    unknown.push(format!(
                        "leaf {path:?}: no demo clip {clip:?} (the demo's: {}); it plays idle",
                        CLIP_NAMES.join(", ")
                    ));
                    Some(idle)
                })
            })
            .map_err(|e| format!("binding {what} ({name}): {e}"))?;
            if archetypes.is_empty() {
                problems = unknown;
            }
            bound_clips = bound.clips;
            layers = bound.layers;
            archetypes.push((name, bound.archetype));
        }
        let graph = archetypes[0].1.graph();
        let kind = |name: &str| graph.parameter(name).map(|p| p.slot.kind);
        let driven = kind("speed") == Some(ParamKind::Float)
            && kind("jump") == Some(ParamKind::Trigger)
            && kind("lean") == Some(ParamKind::Float)
            && kind("wave") == Some(ParamKind::Float);
        let height_m = mesh_height(&demo.mesh, &demo.rig);
        let procedural = demo.procedural_setup();
        Ok(Self {
            rig: demo.rig,
            clips: bound_clips,
            layers,
            mesh: demo.mesh,
            archetypes,
            driven,
            height_m,
            problems,
            procedural,
        })
    }

    /// A skinned glTF playing its animations (merged into one clip) on a one-state graph.
    pub fn gltf(path: &Path) -> Result<Self, String> {
        let options = GltfOptions { merge_animations: true, ..GltfOptions::default() };
        let asset = load_gltf(path, &options).map_err(|e| format!("{}: {e}", path.display()))?;
        let mesh = asset.mesh.ok_or_else(|| format!("{}: no skinned mesh uses the first skin", path.display()))?;
        let clip = asset.clips.first().ok_or_else(|| format!("{}: no animation moves the skin", path.display()))?;
        let graph = CompiledGraph::from_json(
            r#"{ "parameters": {}, "layers": [ { "name": "Base", "states": [ { "name": "START" }, { "name": "Play", "defaultState": true } ] } ] }"#,
        )
        .map_err(|e| format!("the viewer's one-state graph: {e}"))?;
        let graph = Arc::new(graph);
        let layers = layer_setups(&graph, &asset.rig).map_err(|e| e.to_string())?;
        let archetype =
            Archetype::from_bindings(graph, &[("Play", ClipBinding { clip: 0, duration_s: clip.duration_s() })])
                .map_err(|e| format!("binding {}: {e}", path.display()))?;
        let height_m = mesh_height(&mesh, &asset.rig);
        Ok(Self {
            rig: asset.rig,
            clips: asset.clips,
            layers,
            mesh,
            archetypes: vec![("play", archetype)],
            driven: false,
            height_m,
            problems: Vec::new(),
            procedural: None,
        })
    }
}

/// `graph` (named `what` in messages) with every transition's default switch replaced by
/// `switch` (JSON).
fn graph_with_switch(graph: &str, switch: &str, what: &str) -> Result<CompiledGraph, String> {
    let mut value: serde_json::Value = serde_json::from_str(graph).map_err(|e| format!("{what}: {e}"))?;
    let switch: serde_json::Value = serde_json::from_str(switch).map_err(|e| format!("switch {switch}: {e}"))?;
    let object = value.as_object_mut().ok_or_else(|| format!("{what} is not a JSON object"))?;
    object.insert("defaultSwitch".into(), switch);
    CompiledGraph::from_json(&value.to_string()).map_err(|e| format!("{what}: {e}"))
}

/// Largest graph file `--graph` reads.
const MAX_GRAPH_BYTES: u64 = 16 << 20;

/// The mesh's height as drawn in the rest pose, metres: skinned by `rest model × inverse
/// bind`, which differs from the bind positions' own height when a file's skeleton is scaled.
fn mesh_height(mesh: &SkinnedMesh, rig: &Rig) -> f32 {
    let rest = rig.rest_model();
    let skin: Vec<Mat4> = rest.iter().zip(rig.inverse_bind()).map(|(m, ib)| *m * *ib).collect();
    let (low, high) = mesh.positions.iter().zip(&mesh.joints).fold((f32::MAX, f32::MIN), |(lo, hi), (p, j)| {
        let m = skin.get(usize::from(j[0])).copied().unwrap_or(Mat4::IDENTITY);
        let y = m.transform_point3(Vec3::from_array(*p)).y;
        (lo.min(y), hi.max(y))
    });
    if high > low { high - low } else { 1.0 }
}

/// The active crowd's state records after a step ([`Scene::records`]): per character and layer
/// a record, per character the blend inputs, the clock they are read against, and the
/// archetype's tables and blend trees that expand them.
pub struct Records<'a> {
    /// The archetype's expand tables (`Archetype::expansion`).
    pub tables: &'a ExpandTables,
    /// Its graph's blend trees.
    pub trees: &'a BlendTrees,
    /// The step's records, shot records, blend inputs and clock, with what changed
    /// (`Crowd::record_frame`).
    pub frame: RecordFrame<'a>,
}

/// One crowd per archetype of the model, all holding the same characters in the same rows.
struct ModeCrowd {
    crowd: Crowd,
    kind: ArchetypeId,
    handles: Vec<CharacterHandle>,
    params: Option<Params>,
    /// Every parameter of the graph, in the order of `CompiledGraph::parameters`.
    all_params: Vec<ParamId>,
}

/// Characters whose parameters are set by hand (the lab's sliders, or a trace script) instead
/// of by the brain: one picked character, a selection or the whole crowd, all held at the same
/// values.
#[derive(Clone, Debug)]
pub struct Hand {
    /// The characters, ascending, none repeated ([`Hand::new`]).
    characters: Vec<usize>,
    /// Per graph parameter (in `CompiledGraph::parameters` order), the value to hold it at, or
    /// `None` to leave it as it is. A `Trigger(true)` is a pulse: set once, then `None`.
    pub values: Vec<Option<ParamValue>>,
}

impl Hand {
    /// A hand on `characters` (in any order, repeats dropped) holding `values`.
    pub fn new(mut characters: Vec<usize>, values: Vec<Option<ParamValue>>) -> Self {
        characters.sort_unstable();
        characters.dedup();
        Self { characters, values }
    }

    /// The characters driven, ascending.
    pub fn characters(&self) -> &[usize] {
        &self.characters
    }

    /// Whether character `i` is driven.
    pub fn drives(&self, i: usize) -> bool {
        self.characters.binary_search(&i).is_ok()
    }
}

#[derive(Clone, Copy)]
struct Params {
    speed: ParamId,
    jump: ParamId,
    lean: ParamId,
    wave: ParamId,
}

/// One change to a transition's timing ([`Scene::edit_transition`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimingEdit {
    /// The blend time (seconds, or a fraction of the source state for a normalized one).
    Duration(f32),
    /// The switch mode.
    Switch(SwitchMode),
    /// The weight's easing.
    Easing(Easing),
    /// Back to the file's timing.
    Reset,
}

/// Wall-clock costs of one [`Scene::step`], milliseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepTimes {
    /// The active crowd's state step (`Crowd::update`).
    pub state_ms: f64,
    /// Keeping the other modes' crowds in step, so that a mode switch keeps every state.
    pub other_modes_ms: f64,
    /// The brain and root motion.
    pub brain_ms: f64,
}

/// The characters: crowds, brain, and where each stands.
pub struct Scene {
    pub model: Model,
    crowds: Vec<ModeCrowd>,
    active: usize,
    brain: Brain,
    /// Per character: world position (x, y, z) and heading (radians about +Y), as the
    /// renderer's instance data.
    pub placements: Vec<[f32; 4]>,
    /// Half the side of the square field the characters stay on, metres.
    pub field_half_m: f32,
    root_motion: Vec<RootDelta>,
    /// Whether animation LOD picks evaluation rates by distance (`--no-lod` turns it off).
    lod: bool,
    /// Where the camera is, for LOD distances (world space, metres).
    eye: Vec3,
    /// Each character's evaluation rate, as last given to the crowds.
    rates: Vec<u8>,
    /// The characters driven by hand, the brain's orders for them ignored.
    hand: Option<Hand>,
    /// Simulation time: the sum of every step's seconds.
    time_s: f64,
    /// The ground under the crowd.
    ground: Ground,
    /// Feet on the ground (the procedural stage's ground part) on or off.
    ik: bool,
    /// Where heads look.
    look: Look,
    /// The procedural pose's setup and targets; `None` for a character without a setup.
    procedural: Option<Procedural>,
}

impl Scene {
    /// `num_characters` characters on a grid over the field, facing every way; `mode` indexes
    /// the model's archetypes. `varied` spreads their start phases and time scales (see below);
    /// without it every character starts at phase 0 and plays at time scale 1, as a
    /// `throng-trace` script's character does, so that a replayed script matches it.
    pub fn new(model: Model, num_characters: usize, mode: usize, seed: u64, varied: bool) -> Result<Self, String> {
        let spacing_m = 2.0 * model.height_m;
        let side = (num_characters as f32).sqrt().ceil().max(1.0);
        let field_half_m = 0.5 * side * spacing_m;
        let mut crowds = Vec::new();
        for (_, archetype) in &model.archetypes {
            let mut crowd = Crowd::new();
            let kind = crowd.add_archetype(archetype.clone());
            // Varied: spread start phases and time scales within ±10 %, so the crowd does not
            // move in lockstep (the same every run: from the seed and the index).
            let in_step = vec![0.0; if varied { 0 } else { num_characters }];
            let phases = if varied {
                StartPhases::Spread { count: num_characters, seed }
            } else {
                StartPhases::Explicit(&in_step)
            };
            let handles = crowd.spawn_phased(kind, phases).map_err(|e| e.to_string())?;
            if varied {
                let scales: Vec<f32> =
                    (0..num_characters).map(|i| 0.9 + 0.2 * ((i * 37) % 101) as f32 / 100.0).collect();
                crowd.set_time_scale(&handles, &scales).map_err(|e| e.to_string())?;
            }
            let params = if model.driven {
                let p = |name: &str| crowd.param(kind, name).map_err(|e| format!("demo graph parameter {name}: {e}"));
                Some(Params { speed: p("speed")?, jump: p("jump")?, lean: p("lean")?, wave: p("wave")? })
            } else {
                None
            };
            let all_params = archetype
                .graph()
                .parameters()
                .iter()
                .map(|p| crowd.param(kind, &p.name))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            crowds.push(ModeCrowd { crowd, kind, handles, params, all_params });
        }
        let procedural =
            model.procedural.as_ref().map(|setup| Procedural::new(setup, &model.rig, num_characters)).transpose()?;
        let brain = Brain::new(num_characters, seed);
        let placements = (0..num_characters)
            .map(|i| {
                let (row, col) = ((i as f32 / side).floor(), (i as f32 % side));
                let jitter = brain.jitter(i);
                let x = (col + 0.5) * spacing_m - field_half_m + jitter[0] * 0.3 * spacing_m;
                let z = (row + 0.5) * spacing_m - field_half_m + jitter[1] * 0.3 * spacing_m;
                [x, 0.0, z, jitter[2] * std::f32::consts::PI]
            })
            .collect();
        Ok(Self {
            active: mode.min(crowds.len().saturating_sub(1)),
            crowds,
            brain,
            placements,
            field_half_m,
            root_motion: vec![RootDelta::default(); num_characters],
            lod: false,
            eye: Vec3::ZERO,
            rates: vec![1; num_characters],
            hand: None,
            time_s: 0.0,
            ground: Ground::Flat,
            ik: false,
            look: Look::Off,
            procedural,
            model,
        })
    }

    /// Turns animation LOD on (rates by distance from [`Scene::set_eye`]'s camera, from the next
    /// step) or off (every character every frame).
    pub fn set_lod(&mut self, on: bool) {
        self.lod = on;
    }

    /// Whether animation LOD is on.
    pub fn lod(&self) -> bool {
        self.lod
    }

    /// The camera position LOD measures distances from; the next step uses it.
    pub fn set_eye(&mut self, eye: Vec3) {
        self.eye = eye;
    }

    /// The rows the evaluator must evaluate this frame, with their seconds since they were last
    /// evaluated, when LOD is on; `None` when every row is evaluated with the frame's `dt`. With
    /// the procedural stage on, it runs on the due rows alone too (the others keep showing the
    /// pose they last showed, feet and heads included).
    pub fn due(&self) -> Option<DueRows<'_>> {
        let c = &self.crowds[self.active];
        self.lod.then(|| c.crowd.due(c.kind).ok()).flatten()
    }

    /// The ground under the crowd.
    pub fn ground(&self) -> Ground {
        self.ground
    }

    /// Changes the ground; characters stand on it from the next step.
    pub fn set_ground(&mut self, ground: Ground) {
        self.ground = ground;
    }

    /// Whether feet are put on the ground (the procedural stage's ground part).
    pub fn ik(&self) -> bool {
        self.ik
    }

    /// Where heads look.
    pub fn look(&self) -> Look {
        self.look
    }

    /// Turns feet on the ground on or off and sets where heads look, from the next step;
    /// refused for a character without a procedural setup (a glTF) unless both are off.
    pub fn set_procedural(&mut self, ik: bool, look: Look) -> Result<(), String> {
        if self.procedural.is_none() && (ik || look != Look::Off) {
            return Err(
                "this character has no procedural setup (feet on the ground, look-at): the built-in humanoid has"
                    .into(),
            );
        }
        (self.ik, self.look) = (ik, look);
        Ok(())
    }

    /// Whether the character has a procedural setup (the GPU evaluator then keeps the stage
    /// path's buffers).
    pub fn has_procedural(&self) -> bool {
        self.procedural.is_some()
    }

    /// The procedural stage's inputs for the last step's frame; `None` while nothing of it is on.
    pub fn procedural_inputs(&self) -> Option<ProceduralInputs<'_>> {
        self.procedural.as_ref().and_then(Procedural::inputs)
    }

    /// Where the heads look, when at a point of their own (drawn as a marker).
    pub fn look_marker(&self) -> Option<Vec3> {
        let p = self.procedural.as_ref().filter(|_| self.look == Look::Point)?;
        Some(p.last_look_point())
    }

    /// The joints whose matrices must be read back after evaluation ([`Scene::observe_feet`]),
    /// the left and right ankles, when the frame's feet are needed: each foot's ground is found
    /// under where its sole last stood, which matters only on ground that is not flat.
    pub fn needs_feet(&self) -> Option<[usize; 2]> {
        let p = self.procedural.as_ref().filter(|_| self.ik && self.ground != Ground::Flat)?;
        Some(p.ankle_joints())
    }

    /// Keeps where each sole stands in the frame just evaluated (`ankles`: each character's
    /// skinning matrices of [`Scene::needs_feet`]'s two joints, `2 i + foot`), so that the next
    /// step finds each foot's ground under it, as an engine raycasts down from last frame's
    /// feet.
    pub fn observe_feet(&mut self, ankles: &[Mat4]) {
        let worlds: Vec<Mat4> = (0..self.num_characters()).map(|i| self.world_of(i)).collect();
        let (ground, weight) = (self.ground, if self.ik { 1.0 } else { 0.0 });
        if let Some(p) = &mut self.procedural {
            let ankles = p.ankles(ankles, 2, [0, 1], worlds.into_iter());
            p.observe(ground, ankles, weight);
        }
    }

    /// Per character, how far its head's forward axis is from pointing at where the heads look,
    /// degrees, in the frame of `matrices` (its skinning matrices); empty while they look nowhere.
    pub fn look_angles_deg(&self, matrices: &[Mat4]) -> Vec<f32> {
        let Some(p) = self.procedural.as_ref().filter(|_| self.look != Look::Off) else { return Vec::new() };
        p.look_angles_deg(matrices, (0..self.num_characters()).map(|i| self.world_of(i)))
    }

    /// Per character and foot, how far the sole is above the ground in the frame of `matrices`
    /// (its skinning matrices), metres: the ankle's world position less the ankle height along
    /// the ground's normal where the stage tilted the foot to it (straight down otherwise).
    pub fn foot_clearances(&self, matrices: &[Mat4]) -> Vec<[f32; 2]> {
        let Some(p) = &self.procedural else { return Vec::new() };
        let weight = if self.ik { 1.0 } else { 0.0 };
        let worlds = (0..self.num_characters()).map(|i| self.world_of(i));
        p.ankles(matrices, self.model.rig.num_joints(), p.ankle_joints(), worlds)
            .into_iter()
            .map(|pair| pair.map(|a| clearance(self.ground, sole(self.ground, a, weight))))
            .collect()
    }

    /// Characters evaluated in the last step's frame.
    pub fn evaluated(&self) -> usize {
        self.due().map_or(self.num_characters(), |d| d.len())
    }

    /// The HUD's LOD part: how many characters the frame evaluates, and how many hold each
    /// rate.
    pub fn lod_line(&self) -> String {
        if !self.lod {
            return "LOD off".to_owned();
        }
        let bands: Vec<String> = self.lod_counts().iter().map(|(r, n)| format!("1/{r}: {n}")).collect();
        format!("LOD {} of {} evaluated ({})", self.evaluated(), self.num_characters(), bands.join(", "))
    }

    /// Gives every character its rate for the coming step: by distance from the camera with LOD
    /// on, 1 with it off. Every switch mode's crowd gets the same, so a mode switch keeps them.
    fn choose_rates(&mut self) -> Result<(), String> {
        let unit_m = self.model.height_m;
        let (eye, lod) = (self.eye, self.lod);
        self.rates.par_iter_mut().zip(&self.placements).for_each(|(rate, p)| {
            let distance = eye.distance(Vec3::new(p[0], p[1], p[2])) / unit_m;
            *rate = if lod { LOD_BANDS.iter().find(|b| distance < b.0).map_or(LOD_FAR_RATE, |b| b.1) } else { 1 };
        });
        for c in &mut self.crowds {
            c.crowd.set_update_rate(&c.handles, &self.rates).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Simulation time, seconds: the sum of every step's.
    pub fn time_s(&self) -> f64 {
        self.time_s
    }

    /// Characters in the crowd.
    pub fn num_characters(&self) -> usize {
        self.placements.len()
    }

    /// The active switch mode's index and name.
    pub fn mode(&self) -> (usize, &'static str) {
        (self.active, self.model.archetypes.get(self.active).map_or("", |a| a.0))
    }

    /// Switches every transition to the archetype `mode` (ignored when out of range). The
    /// crowds run in lockstep, so every character keeps its state and phase.
    pub fn set_mode(&mut self, mode: usize) {
        if mode < self.crowds.len() {
            self.active = mode;
        }
    }

    /// The active crowd's samples and layer programs after the last step: its records expanded
    /// on the CPU (`Crowd::programs`), which the CPU evaluator (`--cpu`) runs; the GPU
    /// evaluator takes [`Scene::records`] instead.
    pub fn frame(&self) -> (&[ClipSample], &[LayerProgram]) {
        let c = &self.crowds[self.active];
        (c.crowd.samples(c.kind).unwrap_or(&[]), c.crowd.programs(c.kind).unwrap_or(&[]))
    }

    /// The active crowd's state records after the last step, with what expands them: what the
    /// GPU evaluator uploads (`GpuCrowd::set_expansion`, `set_frame_records`), nothing expanded
    /// on the CPU.
    pub fn records(&self) -> Result<Records<'_>, String> {
        let c = &self.crowds[self.active];
        let (tables, trees) = c.crowd.archetype(c.kind).map_err(|e| e.to_string())?.expansion();
        Ok(Records { tables, trees, frame: c.crowd.record_frame(c.kind).map_err(|e| e.to_string())? })
    }

    /// Clips the evaluator samples for the last step: the active crowd's programs, of the due
    /// characters alone under LOD. It expands the crowd's records on the CPU (`Crowd::programs`)
    /// where nothing else did: the CPU evaluator's figure.
    pub fn clips_sampled(&self) -> usize {
        let c = &self.crowds[self.active];
        let Some(due) = self.due() else {
            return c.crowd.clips_sampled(c.kind).unwrap_or(0);
        };
        let layers = self.model.layers.len().max(1);
        let programs = c.crowd.programs(c.kind).unwrap_or(&[]);
        due.rows
            .iter()
            .filter_map(|&row| programs.get(row as usize * layers..(row as usize + 1) * layers))
            .flatten()
            .map(|p| (p.num_target + p.num_secondary) as usize)
            .sum()
    }

    /// One frame of `dt_s` seconds: the brain sets parameters, every crowd steps, and the
    /// characters move by last frame's root motion (of the pose now on screen).
    pub fn step(&mut self, dt_s: f32) -> Result<StepTimes, String> {
        let mut times = StepTimes::default();
        self.time_s += f64::from(dt_s);
        let start = Instant::now();
        let brain = throng::zone!("viewer.brain");
        self.move_characters();
        let orders = self.brain.think(dt_s, &self.placements, self.field_half_m);
        for c in &mut self.crowds {
            let Some(p) = c.params else { continue };
            let set = |crowd: &mut Crowd, param, values: &[f32]| -> Result<(), String> {
                crowd.float_column_mut(c.kind, param).map_err(|e| e.to_string())?.copy_from_slice(values);
                Ok(())
            };
            set(&mut c.crowd, p.speed, &self.brain.speed_mps)?;
            set(&mut c.crowd, p.lean, &self.brain.lean)?;
            set(&mut c.crowd, p.wave, &self.brain.wave)?;
            let by_hand = |i: usize| self.hand.as_ref().is_some_and(|h| h.drives(i));
            let jumpers: Vec<CharacterHandle> =
                orders.jump.iter().filter(|&&i| !by_hand(i)).map(|&i| c.handles[i]).collect();
            c.crowd.set_trigger(p.jump, &jumpers, false).map_err(|e| e.to_string())?;
        }
        self.apply_hand()?;
        self.stand_on_ground();
        self.choose_rates()?;
        brain.end();
        times.brain_ms = ms(start);
        for (i, c) in self.crowds.iter_mut().enumerate() {
            let start = Instant::now();
            c.crowd.update(dt_s).map_err(|e| e.to_string())?;
            if i == self.active {
                times.state_ms += ms(start);
            } else {
                times.other_modes_ms += ms(start);
            }
        }
        let start = Instant::now();
        let _zone = throng::zone!("viewer.root_motion");
        self.root_motion_from_records();
        self.aim()?;
        times.brain_ms += ms(start);
        Ok(times)
    }

    /// Puts each character's root on the ground under it.
    fn stand_on_ground(&mut self) {
        let ground = self.ground;
        self.placements.par_iter_mut().for_each(|p| p[1] = ground.height(p[0], p[2]));
    }

    /// The procedural targets for the coming frame: each foot's ground and the heads' target,
    /// then the weights the active graph binds (`chainWeights`, a `--graph` file's) over them,
    /// as `CrowdRuntime` writes them.
    fn aim(&mut self) -> Result<(), String> {
        let observed = self.needs_feet().is_some();
        let Some(p) = &mut self.procedural else { return Ok(()) };
        if !observed {
            p.forget_soles();
        }
        let look_at = match self.look {
            Look::Off => None,
            Look::Point => {
                Some(Procedural::look_point(self.ground, self.time_s, 0.5 * self.field_half_m, self.model.height_m))
            }
            Look::Camera => Some(self.eye),
        };
        p.aim(self.ground, self.ik, look_at, &self.placements)?;
        let c = &self.crowds[self.active];
        let graph = c.crowd.archetype(c.kind).map_err(|e| e.to_string())?.graph();
        if graph.chain_weights().is_empty() {
            return Ok(());
        }
        let bindings = c.crowd.chain_weight_bindings(c.kind).map_err(|e| e.to_string())?;
        ChainWeightsJob {
            clips: &self.model.clips,
            samples: c.crowd.samples(c.kind).map_err(|e| e.to_string())?,
            programs: c.crowd.programs(c.kind).map_err(|e| e.to_string())?,
            num_layers: graph.layers().len(),
            bindings: &bindings,
            targets: p.targets_mut(),
        }
        .run()
        .map_err(|e| format!("the graph's chainWeights: {e}"))
    }

    /// Overrides this frame's root motion with the CPU evaluator's (`FrameJob::root_motion`);
    /// [`Scene::step`] already computed the same from the samples.
    pub fn root_motion_mut(&mut self) -> &mut [RootDelta] {
        &mut self.root_motion
    }

    /// The GPU evaluator returns no root motion, so it is computed here from the state step's
    /// records, as `FrameJob` reports it (`records_root_motion`: each character's base layer
    /// alone expanded, the shown samples' travel by normalised weight, both sides during a
    /// crossfade). A refusal (a throng bug: the step's own records) leaves no travel.
    fn root_motion_from_records(&mut self) {
        let mut out = std::mem::take(&mut self.root_motion);
        let done = self.records().and_then(|f| {
            records_root_motion(&self.model.clips, f.tables, f.trees, &f.frame, &mut out).map_err(|e| e.to_string())
        });
        if done.is_err() {
            out.fill(RootDelta::default());
        }
        self.root_motion = out;
    }

    /// Applies the root motion of the frame just evaluated, plus the brain's steering, to the
    /// characters' placements.
    fn move_characters(&mut self) {
        let turns = &self.brain.turn_rad;
        self.placements.iter_mut().zip(&self.root_motion).zip(turns).for_each(|((p, delta), turn)| {
            let heading = Quat::from_rotation_y(p[3]);
            let travel = heading * delta.translation;
            p[0] += travel.x;
            p[2] += travel.z;
            p[3] = wrap(p[3] + delta.yaw + turn);
        });
    }

    /// Holds the hand-driven characters' parameters at their hand values in every mode's crowd,
    /// over what the brain wrote, one batch call per parameter; a trigger pulse is spent once
    /// set.
    fn apply_hand(&mut self) -> Result<(), String> {
        let Some(hand) = &mut self.hand else { return Ok(()) };
        for c in &mut self.crowds {
            let handles: Vec<CharacterHandle> =
                hand.characters.iter().filter_map(|&i| c.handles.get(i)).copied().collect();
            let n = handles.len();
            for (&param, value) in c.all_params.iter().zip(&hand.values) {
                let set = match *value {
                    None => continue,
                    Some(ParamValue::Float(x)) => c.crowd.set_float(param, &handles, &vec![x; n]),
                    Some(ParamValue::Int(x)) => c.crowd.set_int(param, &handles, &vec![x; n]),
                    Some(ParamValue::Bool(x)) => c.crowd.set_bool(param, &handles, &vec![x; n]),
                    Some(ParamValue::Trigger(true)) => c.crowd.set_trigger(param, &handles, false),
                    Some(ParamValue::Trigger(false)) => c.crowd.reset_trigger(param, &handles),
                };
                set.map_err(|e| e.to_string())?;
            }
        }
        for value in &mut hand.values {
            if *value == Some(ParamValue::Trigger(true)) {
                *value = None;
            }
        }
        Ok(())
    }

    /// Drives characters by hand (or gives them back to the brain with `None`); an index past
    /// the crowd is refused.
    pub fn set_hand(&mut self, hand: Option<Hand>) -> Result<(), String> {
        if let Some(&last) = hand.as_ref().and_then(|h| h.characters.last())
            && last >= self.num_characters()
        {
            return Err(format!("character {last} is not in the crowd of {}", self.num_characters()));
        }
        self.hand = hand;
        Ok(())
    }

    /// The hand on the hand-driven characters, if any.
    pub fn hand(&self) -> Option<&Hand> {
        self.hand.as_ref()
    }

    /// The hand on the hand-driven characters, if any, to change what it holds.
    pub fn hand_mut(&mut self) -> Option<&mut Hand> {
        self.hand.as_mut()
    }

    /// The active switch mode's compiled graph, as the lab's edits left it.
    pub fn graph(&self) -> &CompiledGraph {
        let c = &self.crowds[self.active];
        c.crowd.archetype(c.kind).map_or_else(|_| self.file_graph(), |a| a.graph())
    }

    /// The active switch mode's graph as the file has it, before any edit.
    pub fn file_graph(&self) -> &CompiledGraph {
        self.model.archetypes.get(self.active).map_or_else(|| self.model.archetypes[0].1.graph(), |a| a.1.graph())
    }

    /// Changes one part of transition `t`'s timing (an index into the graph's transitions) in
    /// every switch mode's crowd, the other parts as each crowd has them, so the crowds stay in
    /// lockstep; [`TimingEdit::Reset`] gives each crowd the file's timing back. Characters
    /// keep their states, and a transition in flight finishes as it was taken
    /// (`Crowd::replace_graph`).
    pub fn edit_transition(&mut self, t: usize, edit: TimingEdit) -> Result<(), String> {
        for (c, (_, file)) in self.crowds.iter_mut().zip(&self.model.archetypes) {
            let graph = c.crowd.archetype(c.kind).map_err(|e| e.to_string())?.graph();
            let now = graph.transitions().get(t).ok_or_else(|| format!("no transition {t} in the graph"))?;
            let timing = match edit {
                TimingEdit::Duration(duration) => TransitionTiming { duration, ..TransitionTiming::of(now) },
                TimingEdit::Switch(switch) => TransitionTiming { switch, ..TransitionTiming::of(now) },
                TimingEdit::Easing(easing) => TransitionTiming { easing, ..TransitionTiming::of(now) },
                TimingEdit::Reset => file
                    .graph()
                    .transitions()
                    .get(t)
                    .map(TransitionTiming::of)
                    .ok_or_else(|| format!("no transition {t} in the file's graph"))?,
            };
            let edited = graph.with_transition_timing(t, timing).map_err(|e| e.to_string())?;
            c.crowd.replace_graph(c.kind, edited).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Every switch mode's transition timings as its crowd has them now: (mode, transition
    /// index, timing).
    pub fn transition_timings(&self) -> Vec<(&'static str, usize, TransitionTiming)> {
        let mut timings = Vec::new();
        for (c, &(mode, _)) in self.crowds.iter().zip(&self.model.archetypes) {
            if let Ok(archetype) = c.crowd.archetype(c.kind) {
                timings.extend(
                    archetype
                        .graph()
                        .transitions()
                        .iter()
                        .map(TransitionTiming::of)
                        .enumerate()
                        .map(|(t, timing)| (mode, t, timing)),
                );
            }
        }
        timings
    }

    /// What each layer of character `i` is doing in the active mode's crowd.
    pub fn readback(&self, i: usize) -> Result<Vec<LayerReadback>, String> {
        let c = &self.crowds[self.active];
        let handle = *c.handles.get(i).ok_or_else(|| format!("no character {i}"))?;
        (0..self.graph().layers().len()).map(|l| c.crowd.readback(handle, l).map_err(|e| e.to_string())).collect()
    }

    /// Character `i`'s layer programs in the active mode's crowd after the last step, each
    /// with the samples of its active state (a blend tree's children by weight).
    pub fn layer_programs(&self, i: usize) -> Result<Vec<(LayerProgram, Vec<ClipSample>)>, String> {
        let c = &self.crowds[self.active];
        let handle = *c.handles.get(i).ok_or_else(|| format!("no character {i}"))?;
        let (_, row) = c.crowd.row_of(handle).map_err(|e| e.to_string())?;
        // That character's records alone expanded, not the crowd's.
        let frame = self.records()?;
        let (layers, num_inputs) = (frame.tables.num_layers(), frame.trees.num_inputs());
        let records = frame.frame.records().get(row * layers..(row + 1) * layers);
        let shots = frame.frame.shots().get(row * layers..(row + 1) * layers);
        let inputs = frame.frame.inputs().get(row * num_inputs..(row + 1) * num_inputs);
        let (Some(records), Some(shots), Some(inputs)) = (records, shots, inputs) else {
            return Err(format!("no records for character {i}"));
        };
        let mut programs = vec![LayerProgram::default(); layers];
        let mut samples = vec![ClipSample::default(); frame.tables.samples_per_character()];
        let (tables, trees, clock) = (frame.tables, frame.trees, frame.frame.clock());
        let scratch = &mut TreeScratch::new();
        expand_character(tables, trees, inputs, clock, 0, records, shots, &mut programs, &mut samples, scratch);
        Ok(programs
            .iter()
            .map(|p| {
                let range = p.target_range();
                (*p, samples.get(range.start as usize..range.end as usize).unwrap_or(&[]).to_vec())
            })
            .collect())
    }

    /// Character `i`'s parameter values, in `CompiledGraph::parameters` order.
    pub fn param_values(&self, i: usize) -> Result<Vec<ParamValue>, String> {
        let c = &self.crowds[self.active];
        let handle = *c.handles.get(i).ok_or_else(|| format!("no character {i}"))?;
        c.all_params.iter().map(|&p| c.crowd.get(p, handle).map_err(|e| e.to_string())).collect()
    }

    /// Character `i`'s last step as `throng-trace` prints it: one line per layer, each state's
    /// share of the layer's pose merged by name and the events its layers fired.
    pub fn trace_lines(&self, i: usize, frame: usize, t: f64) -> Result<Vec<TraceLine>, String> {
        let c = &self.crowds[self.active];
        let handle = *c.handles.get(i).ok_or_else(|| format!("no character {i}"))?;
        let (graph, archetype) = (self.graph(), &self.model.archetypes[self.active].1);
        let name = |s: usize| graph.states().get(s).map_or_else(String::new, |s| s.name.clone());
        let fired = c.crowd.events(c.kind).map_err(|e| e.to_string())?;
        let readback = self.readback(i)?;
        Ok(readback
            .iter()
            .zip(graph.layers())
            .enumerate()
            .map(|(l, (r, layer))| {
                let mut weights = vec![(name(r.active_state), r.active_weight)];
                if r.transitioning
                    && r.previous_weight > 0.0
                    && let Some(p) = r.previous_state
                {
                    match weights.iter_mut().find(|(n, _)| *n == name(p)) {
                        Some(w) => w.1 += r.previous_weight,
                        None => weights.push((name(p), r.previous_weight)),
                    }
                }
                weights.retain(|w| w.1 > 0.0);
                let events = fired
                    .iter()
                    .filter(|e| e.character == handle && e.layer as usize == l)
                    .map(|e| (archetype.event_name(e.event).unwrap_or_default().to_owned(), e.weight, e.count))
                    .collect();
                TraceLine {
                    frame,
                    t,
                    layer: layer.name.clone(),
                    active_state: name(r.active_state),
                    previous_state: r.previous_state.map(name),
                    transitioning: r.transitioning,
                    transition_progress: r.transition_progress,
                    weights,
                    events,
                }
            })
            .collect())
    }

    /// How many characters hold each evaluation rate (the LOD bands' rates, then the far one).
    pub fn lod_counts(&self) -> Vec<(u8, usize)> {
        LOD_BANDS
            .iter()
            .map(|b| b.1)
            .chain([LOD_FAR_RATE])
            .map(|r| (r, self.rates.iter().filter(|&&x| x == r).count()))
            .collect()
    }

    /// Every character's bounding capsule (world space) for the pose of `matrices`, the last
    /// frame's skinning matrices (`i * J + j`): around its joints, each placed by its skinning
    /// matrix as the vertex shader places the vertices bound to it. `None` for a character
    /// whose matrices are missing or not finite.
    pub fn capsules(&self, matrices: &[Mat4]) -> Vec<Option<Capsule>> {
        let rest = self.model.rig.rest_model();
        let joints = rest.len();
        let margin_m = 0.08 * self.model.height_m;
        (0..self.num_characters())
            .into_par_iter()
            .map(|i| {
                let skins = matrices.get(i * joints..(i + 1) * joints)?;
                let world = self.world_of(i);
                let placed = skins
                    .iter()
                    .zip(&rest)
                    .map(|(m, b)| world.transform_point3(m.transform_point3(b.w_axis.truncate())));
                Capsule::around(placed, margin_m)
            })
            .collect()
    }

    /// Character `i`'s model-to-world matrix, as the vertex shader builds it.
    pub fn world_of(&self, i: usize) -> Mat4 {
        let p = self.placements.get(i).copied().unwrap_or_default();
        Mat4::from_rotation_translation(Quat::from_rotation_y(p[3]), Vec3::new(p[0], p[1], p[2]))
    }
}

fn wrap(a: f32) -> f32 {
    (a + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}
