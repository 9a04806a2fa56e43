//! throng crowds in Bevy (`docs/bevy.md`): characters as entities, the state step in Bevy's
//! schedule, evaluation on Bevy's own wgpu device in the render app.
//!
//! ```text
//! main world, PostUpdate (ThrongSystems)                 render world
//! ──────────────────────────────────────                 ────────────
//! Sync:    CrowdAgent added ─► Crowd::spawn, Character   ExtractSchedule: the FramePacket
//!          CrowdAgent removed ─► Crowd::despawn        ┐ Render, PrepareResources: each archetype's
//!          AgentParams changed ─► set_float… batches   │   row changes (resize, swap_remove), then
//! Step:    LOD rates, Crowd::update(Time::delta)       │   set_frame_records on RenderDevice/
//!          root motion (records' base layers)          │   RenderQueue, or the CPU evaluator
//!            ─► Transform (RootMotion)                 │   (ExpandJob, FrameJob) uploaded to a buffer
//!          animation events ─► CrowdEvent messages     │ RenderGraph, before camera_driver:
//! Publish: (after transform propagation) FramePacket: ─┘   GpuCrowd::encode into Bevy's encoder
//!          state records, blend inputs, clock, dt,         (the expand pass, then the frame)
//!          due rows, row changes, placements             Core3d, after the opaque pass: one
//!                                                          instanced draw per archetype with a mesh
//! ```
//!
//! ```no_run
//! use std::sync::Arc;
//! use bevy::prelude::*;
//! use throng::demo::{DemoCharacter, LOCOMOTION_GRAPH};
//! use throng::graph::CompiledGraph;
//! use throng_bevy::{AgentParams, CrowdAgent, RootMotion, ThrongCrowd, ThrongPlugin};
//!
//! let demo = DemoCharacter::humanoid();
//! let bound = demo.bind(Arc::new(CompiledGraph::from_json(LOCOMOTION_GRAPH).unwrap())).unwrap();
//! let mut app = App::new();
//! app.add_plugins((DefaultPlugins, ThrongPlugin::default()));
//! let mut crowd = app.world_mut().resource_mut::<ThrongCrowd>();
//! let walkers = crowd.add_archetype(bound.archetype, demo.rig, bound.clips, bound.layers).unwrap();
//! let speed = crowd.param(walkers, "speed").unwrap();
//! let mut params = AgentParams::default();
//! params.set_float(speed, 1.5);
//! app.world_mut().spawn((CrowdAgent::new(walkers), params, RootMotion, Transform::default()));
//! app.run();
//! ```

mod draw;
mod readback;
mod render;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::core_pipeline::core_3d::main_opaque_pass_3d;
use bevy::core_pipeline::schedule::{Core3d, Core3dSystems, camera_driver};
use bevy::prelude::*;
use bevy::render::renderer::{RenderGraph, RenderGraphSystems};
use bevy::render::{ExtractSchedule, Render, RenderApp, RenderSystems};
use throng::Clip;
use throng::blend_space::BlendTrees;
use throng::eval::root_motion::{RootDelta, records_root_motion};
use throng::mesh::SkinnedMesh;
use throng::program::{DueRows, ExpandTables, LayerSetup, OutputLayout, OwnedRecordFrame};
use throng::rig::Rig;
use throng::runtime::RuntimeError;
use throng::state::{AnimationEvent, Archetype, ArchetypeId, CharacterHandle, Crowd, ParamId, StateError};

pub use readback::{ImagePixels, ReadbackError, read_image_blocking};
pub use render::{CrowdEvaluator, EvaluatorError, ThrongRender};

/// Where throng's matrices are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Evaluation {
    /// throng's GPU evaluator on Bevy's `RenderDevice` and `RenderQueue`; the CPU evaluator
    /// where the device lacks what it needs ([`ThrongRender::fallback`] says why).
    #[default]
    Gpu,
    /// The CPU evaluator, its matrices uploaded to a storage buffer on Bevy's device.
    Cpu,
}

/// The plugin: [`ThrongCrowd`] in the main world, [`ThrongRender`] in the render app.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThrongPlugin {
    /// Where the matrices are computed.
    pub evaluation: Evaluation,
    /// How each skinning matrix is written in the output buffers.
    pub layout: OutputLayout,
    /// Animation LOD by distance to the camera; `None` evaluates every character every frame.
    pub lod: Option<Lod>,
}

/// Animation LOD (`docs/lod.md`) by distance to the first 3D camera: a character farther than
/// `distances_m[k]` is evaluated every `2^(k+1)`-th update (2, 4, 8, 16) and shows its last
/// pose in between; its states, events and root motion stay exact every update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lod {
    /// Metres, ascending: where rates 2, 4, 8 and 16 begin.
    pub distances_m: [f32; 4],
}

impl Lod {
    /// The update rate of a character `distance_m` from the camera.
    #[must_use]
    pub fn rate(&self, distance_m: f32) -> u8 {
        let past = self.distances_m.iter().filter(|&&d| distance_m > d).count();
        1 << past
    }
}

/// The plugin's main-world systems, in order, in `PostUpdate` before transform propagation.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThrongSystems {
    /// Spawns and despawns characters for added and removed [`CrowdAgent`]s, and writes
    /// changed [`AgentParams`] to throng in batches.
    Sync,
    /// The state step, root motion onto transforms, and events.
    Step,
    /// After transform propagation: each drawn character's placement, and the frame handed to
    /// the render app.
    Publish,
}

impl Plugin for ThrongPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ThrongCrowd { lod: self.lod, ..ThrongCrowd::default() })
            .init_resource::<FramePacket>()
            .add_message::<CrowdEvent>()
            .add_message::<ThrongError>()
            .configure_sets(
                PostUpdate,
                (ThrongSystems::Sync, ThrongSystems::Step).chain().before(TransformSystems::Propagate),
            )
            .configure_sets(PostUpdate, ThrongSystems::Publish.after(TransformSystems::Propagate))
            .add_systems(PostUpdate, (sync_agents, write_params).chain().in_set(ThrongSystems::Sync))
            .add_systems(PostUpdate, step.in_set(ThrongSystems::Step))
            .add_systems(PostUpdate, publish.in_set(ThrongSystems::Publish));
        if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
            render_app
                .insert_resource(ThrongRender::new(self.evaluation, self.layout))
                .init_resource::<FramePacket>()
                .add_systems(ExtractSchedule, (render::extract_frame, draw::extract_lights))
                .init_resource::<draw::SceneLights>()
                .init_resource::<draw::CrowdDraw>()
                .add_systems(Render, render::prepare.in_set(RenderSystems::PrepareResources))
                .add_systems(Render, draw::prepare_draw.in_set(RenderSystems::PrepareBindGroups))
                .add_systems(RenderGraph, render::encode.in_set(RenderGraphSystems::Render).before(camera_driver))
                .add_systems(Core3d, draw::draw_crowds.in_set(Core3dSystems::MainPass).after(main_opaque_pass_3d));
        }
    }
}

/// What an archetype's evaluation reads: the rig, the clip table its samples index and one
/// layer setup per graph layer (what `throng::setup::bind_archetype` returns), and what
/// expands its state records (`Archetype::expansion`).
#[derive(Debug)]
pub struct ArchetypeAssets {
    /// The skeleton.
    pub rig: Rig,
    /// The clip table (additive layers' clips as deltas).
    pub clips: Vec<Clip>,
    /// One per graph layer, base first.
    pub layers: Vec<LayerSetup>,
    /// The archetype's expand tables: its leaves, clocks and sample slots.
    pub tables: ExpandTables,
    /// The archetype's graph's blend trees.
    pub trees: BlendTrees,
}

/// A change of an archetype's rows between two frames, which the evaluator's per-row memory
/// must follow in order (`docs/embedding.md`, §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowChange {
    /// The archetype now has this many characters (after spawns).
    Resize(usize),
    /// The character at this row left; the last row moved into it.
    SwapRemove(usize),
}

/// One archetype's frame, as the state step left it.
#[derive(Debug)]
pub struct ArchetypeFrame {
    /// What the evaluator reads.
    pub assets: Arc<ArchetypeAssets>,
    /// Row changes since the last frame, in order.
    pub changes: Vec<RowChange>,
    /// The state step's records, `characters × layers`, their one-shot parts, the blend inputs
    /// and the clock, with when each changed (`Crowd::record_frame`, kept): what the evaluators
    /// expand into programs and samples (the GPU on the device, sent only where changed).
    pub records: OwnedRecordFrame,
    /// Seconds of this step.
    pub dt_s: f32,
    /// With animation LOD, the rows due this frame and each one's seconds since it was last
    /// evaluated (`Crowd::due`); `None` evaluates every row with `dt_s`.
    pub due: Option<DueList>,
    /// The mesh drawn for each character, if the archetype has one ([`ThrongCrowd::set_mesh`]).
    pub mesh: Option<Arc<SkinnedMesh>>,
    /// Per row, the entity's `GlobalTransform` after propagation (identity without one); empty
    /// for an archetype without a mesh.
    pub placements: Vec<Placement>,
}

/// Rows due this frame, owned ([`throng::program::DueRows`] borrowed from it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DueList {
    /// Rows, ascending.
    pub rows: Vec<u32>,
    /// Per row, seconds since its last evaluation.
    pub dt_s: Vec<f32>,
}

impl DueList {
    /// The borrowed form the evaluators take.
    #[must_use]
    pub fn as_rows(&self) -> DueRows<'_> {
        DueRows { rows: &self.rows, dt_s: &self.dt_s }
    }
}

/// A character's placement in the world: its entity's world-from-model matrix, column-major.
pub type Placement = [f32; 16];

/// Why a mesh was refused for an archetype; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// The id names no archetype of this crowd.
    #[error("archetype {id:?} was not added to this crowd")]
    UnknownArchetype {
        /// The id given.
        id: ArchetypeId,
    },
    /// The mesh cannot be skinned to the archetype's rig: a vertex names a joint the rig lacks,
    /// or an index a vertex the mesh lacks ([`SkinnedMesh::validate`]).
    #[error(transparent)]
    Mesh(#[from] throng::mesh::MeshError),
}

/// The frame handed to the render app: one entry per archetype, in the order they were added.
#[derive(Resource, Clone, Debug, Default)]
pub struct FramePacket {
    /// The frame's number, counting the state steps from 1 (0: none yet).
    pub frame: u64,
    /// Per archetype.
    pub archetypes: Arc<Vec<ArchetypeFrame>>,
}

/// Makes an entity a throng character of an archetype of [`ThrongCrowd`]. Adding it spawns the
/// character (the plugin inserts [`Character`]); removing it, or despawning the entity,
/// despawns the character.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrowdAgent {
    /// The archetype, from [`ThrongCrowd::add_archetype`].
    pub archetype: ArchetypeId,
}

impl CrowdAgent {
    /// An agent of `archetype`.
    #[must_use]
    pub fn new(archetype: ArchetypeId) -> Self {
        Self { archetype }
    }
}

/// The throng character of an entity, inserted by the plugin when its [`CrowdAgent`] spawned.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Character(CharacterHandle);

impl Character {
    /// The character's handle in [`ThrongCrowd::crowd`].
    #[must_use]
    pub fn handle(self) -> CharacterHandle {
        self.0
    }
}

/// Opts an entity into root motion: each step moves its `Transform` by the travel throng
/// reports for its character (turned by the entity's rotation), and turns it by the yaw.
#[derive(Component, Clone, Copy, Debug, Default)]
pub struct RootMotion;

/// Parameter values for an entity's character. Written to throng, in one batch per parameter
/// across all entities, on the frames this component changed; triggers fire once.
#[derive(Component, Clone, Debug, Default)]
pub struct AgentParams {
    floats: Vec<(ParamId, f32)>,
    ints: Vec<(ParamId, i32)>,
    bools: Vec<(ParamId, bool)>,
    triggers: Vec<ParamId>,
}

impl AgentParams {
    /// Sets a FLOAT parameter (replacing an earlier value of it).
    pub fn set_float(&mut self, param: ParamId, value: f32) {
        upsert(&mut self.floats, param, value);
    }

    /// Sets an INTEGER parameter.
    pub fn set_int(&mut self, param: ParamId, value: i32) {
        upsert(&mut self.ints, param, value);
    }

    /// Sets a BOOLEAN parameter.
    pub fn set_bool(&mut self, param: ParamId, value: bool) {
        upsert(&mut self.bools, param, value);
    }

    /// Fires a TRIGGER at the next step (consumed by the first transition it enables).
    pub fn fire(&mut self, param: ParamId) {
        if !self.triggers.contains(&param) {
            self.triggers.push(param);
        }
    }

    /// The FLOAT value set for `param`, if any.
    #[must_use]
    pub fn float(&self, param: ParamId) -> Option<f32> {
        self.floats.iter().find(|(p, _)| *p == param).map(|&(_, v)| v)
    }
}

fn upsert<T>(list: &mut Vec<(ParamId, T)>, param: ParamId, value: T) {
    match list.iter_mut().find(|(p, _)| *p == param) {
        Some(slot) => slot.1 = value,
        None => list.push((param, value)),
    }
}

/// An animation event of an entity's character, once per step that fired it.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct CrowdEvent {
    /// The entity whose character fired it.
    pub entity: Entity,
    /// What throng reported (its name: the archetype's `event_name(event.event)`).
    pub event: AnimationEvent,
}

/// A request the plugin refused: nothing of it was applied.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ThrongError {
    /// The entity it was for, where one was.
    pub entity: Option<Entity>,
    /// Why.
    pub error: StateError,
}

/// throng's crowd in the main world: the state step, the archetypes' assets, and the mapping
/// between entities and characters (kept right as throng's despawns move rows).
#[derive(Resource, Default)]
pub struct ThrongCrowd {
    crowd: Crowd,
    archetypes: Vec<ArchetypeEntry>,
    entity_of: HashMap<CharacterHandle, Entity>,
    handle_of: HashMap<Entity, CharacterHandle>,
    frame: u64,
    lod: Option<Lod>,
    /// Wall time of the last step system: throng's update, root motion, events, the frame's copy.
    step_time: Duration,
    /// The last step's frames, published with their placements after transform propagation.
    stepped: Vec<ArchetypeFrame>,
}

struct ArchetypeEntry {
    id: ArchetypeId,
    assets: Arc<ArchetypeAssets>,
    mesh: Option<Arc<SkinnedMesh>>,
    changes: Vec<RowChange>,
    root_motion: Vec<RootDelta>,
}

impl ThrongCrowd {
    /// Registers an archetype with what its evaluation reads (see [`ArchetypeAssets`]).
    ///
    /// # Errors
    /// [`RuntimeError::LayerCount`] when the layer setups are not one per graph layer.
    pub fn add_archetype(
        &mut self,
        archetype: Archetype,
        rig: Rig,
        clips: Vec<Clip>,
        layers: Vec<LayerSetup>,
    ) -> Result<ArchetypeId, RuntimeError> {
        throng::runtime::check_layer_count(&archetype, &layers)?;
        let (tables, trees) = archetype.expansion();
        let (tables, trees) = (tables.clone(), trees.clone());
        let id = self.crowd.add_archetype(archetype);
        self.archetypes.push(ArchetypeEntry {
            id,
            assets: Arc::new(ArchetypeAssets { rig, clips, layers, tables, trees }),
            mesh: None,
            changes: Vec::new(),
            root_motion: Vec::new(),
        });
        Ok(id)
    }

    /// Draws `mesh` (skinned to the archetype's rig) for each of the archetype's characters, at
    /// its entity's `GlobalTransform`, in every 3D camera.
    ///
    /// # Errors
    /// [`MeshError`]: an unknown archetype, a vertex skinned to a joint the rig lacks, an index
    /// past the vertices.
    pub fn set_mesh(&mut self, id: ArchetypeId, mesh: SkinnedMesh) -> Result<(), MeshError> {
        let entry = self.entry_mut(id).ok_or(MeshError::UnknownArchetype { id })?;
        mesh.validate(entry.assets.rig.num_joints())?;
        entry.mesh = Some(Arc::new(mesh));
        Ok(())
    }

    /// Resolves a parameter of an archetype's graph by name, for [`AgentParams`].
    ///
    /// # Errors
    /// As [`Crowd::param`].
    pub fn param(&self, id: ArchetypeId, name: &str) -> Result<ParamId, StateError> {
        self.crowd.param(id, name)
    }

    /// The state step, for everything it reads back (rows, states, programs, event names).
    #[must_use]
    pub fn crowd(&self) -> &Crowd {
        &self.crowd
    }

    /// The character of an entity.
    #[must_use]
    pub fn character(&self, entity: Entity) -> Option<CharacterHandle> {
        self.handle_of.get(&entity).copied()
    }

    /// The entity of a character.
    #[must_use]
    pub fn entity(&self, handle: CharacterHandle) -> Option<Entity> {
        self.entity_of.get(&handle).copied()
    }

    /// The entity whose character is at `row` of an archetype.
    #[must_use]
    pub fn entity_at(&self, id: ArchetypeId, row: usize) -> Option<Entity> {
        self.crowd.handle_at(id, row).and_then(|handle| self.entity(handle))
    }

    /// Wall time of the last step (throng's state step, root motion onto transforms, events,
    /// and the copy of the frame for the render app), for frame-time splits.
    #[must_use]
    pub fn last_step_time(&self) -> Duration {
        self.step_time
    }

    /// The last step's root travel of each row of an archetype (empty before the first step).
    #[must_use]
    pub fn root_motion(&self, id: ArchetypeId) -> &[RootDelta] {
        self.archetypes.iter().find(|entry| entry.id == id).map_or(&[], |entry| &entry.root_motion)
    }

    fn despawn(&mut self, entity: Entity) -> Result<(), StateError> {
        let Some(handle) = self.handle_of.remove(&entity) else { return Ok(()) };
        self.entity_of.remove(&handle);
        let (id, row) = self.crowd.row_of(handle)?;
        self.crowd.despawn(handle)?;
        if let Some(entry) = self.entry_mut(id) {
            entry.changes.push(RowChange::SwapRemove(row));
        }
        Ok(())
    }

    /// The entry of an archetype of this crowd (archetypes are few: a scan).
    fn entry_mut(&mut self, id: ArchetypeId) -> Option<&mut ArchetypeEntry> {
        self.archetypes.iter_mut().find(|entry| entry.id == id)
    }
}

fn sync_agents(
    mut commands: Commands,
    mut crowd: ResMut<ThrongCrowd>,
    mut removed: RemovedComponents<CrowdAgent>,
    added: Query<(Entity, &CrowdAgent), Without<Character>>,
    mut errors: MessageWriter<ThrongError>,
) {
    for entity in removed.read() {
        if let Err(error) = crowd.despawn(entity) {
            errors.write(ThrongError { entity: Some(entity), error });
        }
        if let Ok(mut entity_commands) = commands.get_entity(entity) {
            entity_commands.try_remove::<Character>();
        }
    }
    let mut grown = vec![false; crowd.archetypes.len()];
    for (entity, agent) in &added {
        let result = crowd.crowd.spawn(agent.archetype);
        match result {
            Ok(handle) => {
                crowd.entity_of.insert(handle, entity);
                crowd.handle_of.insert(entity, handle);
                if let Some(slot) = crowd.archetypes.iter().position(|entry| entry.id == agent.archetype) {
                    grown[slot] = true;
                }
                commands.entity(entity).insert(Character(handle));
            }
            Err(error) => {
                errors.write(ThrongError { entity: Some(entity), error });
            }
        }
    }
    let ThrongCrowd { crowd: state, archetypes, .. } = &mut *crowd;
    for (entry, grown) in archetypes.iter_mut().zip(grown) {
        if grown {
            let rows = state.num_characters(entry.id).expect("a known archetype");
            entry.changes.push(RowChange::Resize(rows));
        }
    }
}

/// One parameter's values across entities, for one batched call.
#[derive(Default)]
struct Batch<T> {
    entities: Vec<Entity>,
    handles: Vec<CharacterHandle>,
    values: Vec<T>,
}

impl<T> Batch<T> {
    fn push(&mut self, entity: Entity, handle: CharacterHandle, value: T) {
        self.entities.push(entity);
        self.handles.push(handle);
        self.values.push(value);
    }
}

fn write_params(
    mut crowd: ResMut<ThrongCrowd>,
    mut agents: Query<(Entity, &Character, &mut AgentParams), Changed<AgentParams>>,
    mut errors: MessageWriter<ThrongError>,
) {
    let mut floats: HashMap<ParamId, Batch<f32>> = HashMap::new();
    let mut ints: HashMap<ParamId, Batch<i32>> = HashMap::new();
    let mut bools: HashMap<ParamId, Batch<bool>> = HashMap::new();
    let mut triggers: HashMap<ParamId, Batch<()>> = HashMap::new();
    for (entity, character, mut params) in &mut agents {
        for &(param, value) in &params.floats {
            floats.entry(param).or_default().push(entity, character.0, value);
        }
        for &(param, value) in &params.ints {
            ints.entry(param).or_default().push(entity, character.0, value);
        }
        for &(param, value) in &params.bools {
            bools.entry(param).or_default().push(entity, character.0, value);
        }
        for &param in &params.triggers {
            triggers.entry(param).or_default().push(entity, character.0, ());
        }
        // Fired triggers are spent; clearing them is not a change of the parameters asked for.
        params.bypass_change_detection().triggers.clear();
    }
    let crowd = &mut crowd.crowd;
    let mut report = |batch_entities: &[Entity], result: Result<(), StateError>| {
        if let Err(error) = result {
            errors.write(ThrongError { entity: (batch_entities.len() == 1).then(|| batch_entities[0]), error });
        }
    };
    for (param, batch) in floats {
        report(&batch.entities, crowd.set_float(param, &batch.handles, &batch.values));
    }
    for (param, batch) in ints {
        report(&batch.entities, crowd.set_int(param, &batch.handles, &batch.values));
    }
    for (param, batch) in bools {
        report(&batch.entities, crowd.set_bool(param, &batch.handles, &batch.values));
    }
    for (param, batch) in triggers {
        report(&batch.entities, crowd.set_trigger(param, &batch.handles, false));
    }
}

fn step(
    time: Res<Time>,
    mut crowd: ResMut<ThrongCrowd>,
    mut movers: Query<&mut Transform, With<RootMotion>>,
    placed: Query<&GlobalTransform>,
    cameras: Query<&GlobalTransform, With<Camera3d>>,
    mut events: MessageWriter<CrowdEvent>,
    mut errors: MessageWriter<ThrongError>,
) {
    let started = Instant::now();
    let dt_s = time.delta_secs();
    let ThrongCrowd { crowd: state, archetypes, entity_of, frame, stepped, lod, step_time, .. } = &mut *crowd;
    // Rates from where everyone stood last frame (the transforms this step's travel continues).
    if let (Some(lod), Some(eye)) = (lod.as_ref(), cameras.iter().next()) {
        let eye = eye.translation();
        let (mut handles, mut rates) = (Vec::new(), Vec::new());
        for (&handle, &entity) in entity_of.iter() {
            if let Ok(at) = placed.get(entity) {
                handles.push(handle);
                rates.push(lod.rate(at.translation().distance(eye)));
            }
        }
        if let Err(error) = state.set_update_rate(&handles, &rates) {
            errors.write(ThrongError { entity: None, error });
        }
    }
    if let Err(error) = state.update(dt_s) {
        errors.write(ThrongError { entity: None, error });
        return;
    }
    *frame += 1;
    let mut frames = Vec::with_capacity(archetypes.len());
    for entry in archetypes.iter_mut() {
        let id = entry.id;
        let records = state.record_frame(id).expect("a known archetype");
        let rows = state.num_characters(id).expect("a known archetype");
        entry.root_motion.clear();
        entry.root_motion.resize(rows, RootDelta::default());
        let assets = &entry.assets;
        // The state step's own records over its own clips (each base layer expanded alone, the
        // others left to the evaluator): a refusal would be a throng bug, not applied.
        let (tables, trees) = (&assets.tables, &assets.trees);
        let travel = &mut entry.root_motion;
        if records_root_motion(&assets.clips, tables, trees, &records, travel).is_ok() {
            for (row, delta) in entry.root_motion.iter().enumerate() {
                let entity = state.handle_at(id, row).and_then(|handle| entity_of.get(&handle));
                if let Some(mut transform) = entity.and_then(|&entity| movers.get_mut(entity).ok()) {
                    let travel = Vec3::from_array(delta.translation.to_array());
                    let turned = transform.rotation * travel;
                    transform.translation += turned;
                    transform.rotation *= Quat::from_rotation_y(delta.yaw);
                }
            }
        }
        for event in state.events(id).expect("a known archetype") {
            if let Some(&entity) = entity_of.get(&event.character) {
                events.write(CrowdEvent { entity, event: *event });
            }
        }
        frames.push(ArchetypeFrame {
            assets: Arc::clone(assets),
            changes: std::mem::take(&mut entry.changes),
            records: OwnedRecordFrame::new(&records),
            dt_s,
            due: match lod {
                Some(_) => {
                    let due = state.due(id).expect("a known archetype");
                    Some(DueList { rows: due.rows.to_vec(), dt_s: due.dt_s.to_vec() })
                }
                None => None,
            },
            mesh: entry.mesh.clone(),
            placements: Vec::new(),
        });
    }
    *stepped = frames;
    *step_time = started.elapsed();
}

fn publish(mut crowd: ResMut<ThrongCrowd>, mut packet: ResMut<FramePacket>, placed: Query<&GlobalTransform>) {
    let ThrongCrowd { crowd: state, archetypes, entity_of, frame, stepped, .. } = &mut *crowd;
    if stepped.is_empty() && packet.frame == *frame {
        return;
    }
    for (entry, stepped) in archetypes.iter().zip(stepped.iter_mut()) {
        if stepped.mesh.is_none() {
            continue;
        }
        let rows = stepped.records.frame().records().len() / stepped.assets.layers.len().max(1);
        stepped.placements = (0..rows)
            .map(|row| {
                let entity = state.handle_at(entry.id, row).and_then(|handle| entity_of.get(&handle));
                let placed = entity.and_then(|&entity| placed.get(entity).ok());
                placed.map_or(Mat4::IDENTITY, GlobalTransform::to_matrix).to_cols_array()
            })
            .collect();
    }
    *packet = FramePacket { frame: *frame, archetypes: Arc::new(std::mem::take(stepped)) };
}
