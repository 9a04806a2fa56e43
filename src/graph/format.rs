//! The authoring format: PlayCanvas's state-graph JSON in both forms its engine loads, plus
//! throng's extensions, read into one normalised description.
//!
//! Documented key by key in `docs/graph-format.md`. Reading goes element by element so that a
//! malformed element is reported with its JSON path (`layers[0].transitions[3]`).
//!
//! This file is long on purpose (about 850 lines): it is one reader that walks the JSON element by
//! element carrying the path for errors, in the order `docs/graph-format.md` documents the keys;
//! split by element, each piece would need the path-tracking reader and the docs' order would be lost.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{GraphError, MAX_JSON_DEPTH};

/// A whole graph, read from either PlayCanvas form.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphDesc {
    /// Layers, base first.
    pub layers: Vec<LayerDesc>,
    /// Parameters in key order (the compiler sorts them by name).
    pub parameters: Vec<ParameterDesc>,
    /// throng extension `defaultSwitch`: the switch used by transitions that name none.
    pub default_switch: Option<SwitchDesc>,
    /// throng extension `chainWeights`: procedural chains whose weight a parameter or a clip
    /// curve drives, in list order; empty when absent.
    pub chain_weights: Vec<ChainWeightDesc>,
}

/// A procedural chain of a character's setup (`program::ProceduralSetup`), as a graph names
/// it: `"lookAt N"`, `"twoBone N"` (the N-th chain of that kind, from 0) or `"ground"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainRef {
    /// Look-at chain N.
    LookAt(u16),
    /// Two-bone chain N.
    TwoBone(u16),
    /// The feet on the ground (one weight for every foot).
    Ground,
}

impl ChainRef {
    /// Reads `"lookAt N"`, `"twoBone N"` or `"ground"`; `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        if text == "ground" {
            return Some(Self::Ground);
        }
        let (kind, index) = text.split_once(' ')?;
        let index: u16 = index.parse().ok()?;
        match kind {
            "lookAt" => Some(Self::LookAt(index)),
            "twoBone" => Some(Self::TwoBone(index)),
            _ => None,
        }
    }
}

impl std::fmt::Display for ChainRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::LookAt(i) => write!(f, "lookAt {i}"),
            Self::TwoBone(i) => write!(f, "twoBone {i}"),
            Self::Ground => f.write_str("ground"),
        }
    }
}

/// throng extension: one entry of `chainWeights`, a chain's weight bound to exactly one of a
/// FLOAT parameter or a clip curve.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainWeightDesc {
    /// `chain`.
    pub chain: ChainRef,
    /// What drives the weight.
    pub source: ChainWeightSourceDesc,
}

/// What drives a bound chain weight.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainWeightSourceDesc {
    /// `parameter`: a FLOAT parameter, clamped to [0, 1].
    Parameter(String),
    /// `curve` (with `layer`, the base layer when absent): the clips' curve of that name,
    /// blended by the weights of the pose the layer shows, clamped to [0, 1].
    Curve {
        /// The curve's name in the clips.
        curve: String,
        /// The layer whose pose weights blend it; `None` for the base layer.
        layer: Option<String>,
    },
}

/// One layer: a state machine with its blend settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerDesc {
    /// Layer name, unique in the graph.
    pub name: String,
    /// States, START/END/ANY included.
    pub states: Vec<StateDesc>,
    /// Transitions of the layer's top machine, in list order.
    pub transitions: Vec<TransitionDesc>,
    /// `blendType`: override (PlayCanvas `OVERWRITE`) or additive.
    pub blend_type: Option<LayerBlendDesc>,
    /// `weight` in [0, 1]; 1 when absent.
    pub weight: Option<f32>,
    /// throng extension `mask`: joint name → weight in [0, 1]; joints not named weigh 0.
    pub mask: Option<BTreeMap<String, f32>>,
    /// throng extension `space`: where masked joints blend.
    pub space: Option<LayerSpaceDesc>,
    /// throng extension `weightParameter`: a FLOAT parameter that scales `weight` per
    /// character each update (clamped to [0, 1]), so gameplay can fade a layer in and out.
    pub weight_parameter: Option<String>,
    /// throng extension `slot`: one-shots may play on the layer
    /// (`state::Crowd::play_one_shot`); never the base layer. `false` when absent.
    pub slot: Option<bool>,
}

/// How a layer combines with the layers below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum LayerBlendDesc {
    /// Replaces the pose below, by weight and mask.
    #[serde(rename = "OVERWRITE", alias = "override", alias = "OVERRIDE")]
    Override,
    /// Adds its difference from a reference pose onto the pose below.
    #[serde(rename = "ADDITIVE", alias = "additive")]
    Additive,
}

/// Where a layer's masked joints blend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum LayerSpaceDesc {
    /// Parent-relative: the joint keeps the layer's angle to its parent.
    #[serde(rename = "local")]
    Local,
    /// Model-space: the joint keeps the layer's direction relative to the character.
    #[serde(rename = "mesh")]
    Mesh,
}

/// One state: an animation state, a control state (START, END, ANY) or a sub-state machine.
#[derive(Debug, Clone, PartialEq)]
pub struct StateDesc {
    /// Name, unique in its machine; `START`, `END` and `ANY` are the control states.
    pub name: String,
    /// `speed` multiplier, finite and ≥ 0; 1 when absent.
    pub speed: Option<f32>,
    /// throng extension `speedParameter` (Unity's speed multiplier parameter): a FLOAT
    /// parameter whose value multiplies `speed` each update; none when absent.
    pub speed_parameter: Option<String>,
    /// `loop`; true when absent (as PlayCanvas).
    pub looping: Option<bool>,
    /// `defaultState`: where START leads when START has no transition.
    pub default_state: bool,
    /// throng extension `rootMotion`: the root's horizontal travel and yaw are extracted and
    /// handed to the caller (base layer only); false when absent.
    pub root_motion: bool,
    /// `blendTree`, when the state blends several clips.
    pub blend_tree: Option<BlendTreeDesc>,
    /// throng extension: a sub-state machine's states and transitions.
    pub machine: Option<MachineDesc>,
}

/// A sub-state machine's contents (throng extension).
#[derive(Debug, Clone, PartialEq)]
pub struct MachineDesc {
    /// Inner states, with START (the entry) and END (the exit).
    pub states: Vec<StateDesc>,
    /// Inner transitions.
    pub transitions: Vec<TransitionDesc>,
}

/// A blend tree or one of its children.
#[derive(Debug, Clone, PartialEq)]
pub struct BlendTreeDesc {
    /// `type`: how the tree's parameters weight its children.
    pub kind: BlendTypeDesc,
    /// `parameter` (1D) or `parameters` (2D: x and y; DIRECT: one per child), FLOAT or INTEGER.
    pub parameters: Vec<String>,
    /// `syncAnimations` (PlayCanvas) or `syncDurations`: children share one phase. True when absent.
    pub sync: bool,
    /// `children`, each a leaf clip or a nested tree.
    pub children: Vec<BlendChildDesc>,
}

/// One child of a blend tree.
#[derive(Debug, Clone, PartialEq)]
pub struct BlendChildDesc {
    /// Name, unique among its siblings; a leaf is bound to a clip as `"State.Child"`.
    pub name: String,
    /// `point`: a number in a 1D tree, `[x, y]` in a 2D tree.
    pub point: Vec<f32>,
    /// `speed` multiplier of this child's clip; 1 when absent.
    pub speed: Option<f32>,
    /// A nested tree, when the child has `children`.
    pub tree: Option<Box<BlendTreeDesc>>,
}

/// Blend tree types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum BlendTypeDesc {
    /// Children on a line.
    #[serde(rename = "1D")]
    OneD,
    /// Gradient band in Cartesian coordinates.
    #[serde(rename = "2D_CARTESIAN")]
    Cartesian,
    /// Gradient band in polar coordinates.
    #[serde(rename = "2D_DIRECTIONAL")]
    Directional,
    /// throng extension: barycentric on a Delaunay triangulation.
    #[serde(rename = "2D_FREEFORM")]
    Freeform,
    /// throng extension: a full rectangular grid, bilinear.
    #[serde(rename = "2D_GRID")]
    Grid,
    /// One parameter per child; each child weighs its parameter's share of their sum.
    #[serde(rename = "DIRECT")]
    Direct,
}

/// A transition as authored.
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionDesc {
    /// Source state name (`ANY` for any state, `START` for the entry).
    pub from: String,
    /// Destination state name (`END` to leave the machine).
    pub to: String,
    /// `time`: duration, ≥ 0, in `duration_unit`; 0 when absent.
    pub time: f32,
    /// `durationUnit` (throng extension).
    pub duration_unit: DurationUnitDesc,
    /// `priority`: lower first; 0 when absent.
    pub priority: f64,
    /// `exitTime` as a fraction of the source state's duration; `None` or 0 = no gate.
    pub exit_time: Option<f32>,
    /// `transitionOffset` in [0, 1]: where the destination starts.
    pub offset: f32,
    /// `interruptionSource`.
    pub interruption: InterruptionDesc,
    /// `conditions`, all of which must hold.
    pub conditions: Vec<ConditionDesc>,
    /// `conditionGroups` (throng extension): when not empty, at least one group must hold
    /// too, every condition of it (an OR of ANDs). Each group holds at least one condition.
    pub condition_groups: Vec<Vec<ConditionDesc>>,
    /// `switch` (throng extension); the graph's default when absent.
    pub switch: Option<SwitchDesc>,
    /// `sync` (throng extension): where the destination starts, from the source's position;
    /// at `transitionOffset` when absent.
    pub sync: Option<SyncDesc>,
}

/// `sync` values: how a transition lines its destination up with its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum SyncDesc {
    /// At the source's normalised phase.
    #[serde(rename = "phase")]
    Phase,
    /// At the source's position relative to its next sync marker, on the destination's marker
    /// of the same name.
    #[serde(rename = "marker")]
    Marker,
}

/// `durationUnit` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum DurationUnitDesc {
    /// Seconds of real time.
    #[default]
    #[serde(rename = "seconds")]
    Seconds,
    /// A fraction of the source state's duration at its playback speed.
    #[serde(rename = "normalized")]
    Normalized,
}

/// `interruptionSource` values, as PlayCanvas spells them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum InterruptionDesc {
    /// Nothing interrupts.
    #[default]
    #[serde(rename = "NONE")]
    None,
    /// The previous (source) state's transitions, then ANY's.
    #[serde(rename = "PREV_STATE")]
    Prev,
    /// The next (destination) state's transitions, then ANY's.
    #[serde(rename = "NEXT_STATE")]
    Next,
    /// The previous state's, then the next state's, then ANY's.
    #[serde(rename = "PREV_STATE_NEXT_STATE")]
    PrevNext,
    /// The next state's, then the previous state's, then ANY's.
    #[serde(rename = "NEXT_STATE_PREV_STATE")]
    NextPrev,
}

/// One condition.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ConditionDesc {
    /// `parameterName`.
    #[serde(rename = "parameterName")]
    pub parameter: String,
    /// `predicate`.
    pub predicate: PredicateDesc,
    /// `value`: a number for FLOAT/INTEGER parameters, a boolean for BOOLEAN/TRIGGER, or
    /// another parameter of the same type.
    pub value: ComparandDesc,
}

/// What a condition compares its parameter with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ComparandDesc {
    /// A literal.
    Value(ConditionValueDesc),
    /// `{ "parameter": "name" }` (throng extension): another parameter's value.
    Parameter(ParameterRefDesc),
}

/// `{ "parameter": "name" }`: a condition's value read from another parameter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterRefDesc {
    /// The other parameter's name.
    pub parameter: String,
}

/// A condition's comparison value.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ConditionValueDesc {
    /// `true` / `false`.
    Bool(bool),
    /// Any JSON number.
    Number(f64),
}

/// Predicates, as PlayCanvas spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub enum PredicateDesc {
    #[serde(rename = "GREATER_THAN")]
    GreaterThan,
    #[serde(rename = "LESS_THAN")]
    LessThan,
    #[serde(rename = "GREATER_THAN_EQUAL_TO")]
    GreaterThanEqualTo,
    #[serde(rename = "LESS_THAN_EQUAL_TO")]
    LessThanEqualTo,
    #[serde(rename = "EQUAL_TO")]
    EqualTo,
    #[serde(rename = "NOT_EQUAL_TO")]
    NotEqualTo,
}

/// A parameter declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct ParameterDesc {
    /// `name` (the map key when `name` is absent).
    pub name: String,
    /// `type`.
    pub kind: ParameterTypeDesc,
    /// `value`: the default; `None` = zero / false.
    pub value: Option<ConditionValueDesc>,
}

/// Parameter types, as PlayCanvas spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ParameterTypeDesc {
    /// 32-bit float.
    #[serde(rename = "FLOAT")]
    Float,
    /// 32-bit signed integer.
    #[serde(rename = "INTEGER")]
    Integer,
    /// Boolean.
    #[serde(rename = "BOOLEAN")]
    Boolean,
    /// A boolean that a taken transition resets.
    #[serde(rename = "TRIGGER")]
    Trigger,
}

/// throng extension `switch`: how the pose moves from the old state to the new one.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchDesc {
    /// `mode`.
    pub mode: SwitchModeDesc,
    /// `easing` of the transition weight (crossfade, frozen); linear when absent.
    #[serde(default)]
    pub easing: EasingDesc,
    /// `quintic` options of an inertialized switch.
    #[serde(default)]
    pub quintic: Option<QuinticDesc>,
    /// `spring` options of an inertialized switch.
    #[serde(default)]
    pub spring: Option<SpringDesc>,
}

/// Switch modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[allow(missing_docs)]
pub enum SwitchModeDesc {
    #[serde(rename = "cut")]
    Cut,
    #[serde(rename = "frozen")]
    Frozen,
    #[serde(rename = "crossfade")]
    Crossfade,
    #[serde(rename = "inertialize")]
    Inertialize,
}

/// Weight easing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub enum EasingDesc {
    #[default]
    #[serde(rename = "linear")]
    Linear,
    #[serde(rename = "smoothstep")]
    Smoothstep,
    /// `{ "cubicBezier": [x1, y1, x2, y2] }`, as CSS's `cubic-bezier(x1, y1, x2, y2)`.
    #[serde(rename = "cubicBezier")]
    CubicBezier([f32; 4]),
}

/// Quintic inertialization options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuinticDesc {
    /// `overshootControl`: choose the starting acceleration and clamp the duration so the
    /// offset never overshoots.
    #[serde(rename = "overshootControl", default)]
    pub overshoot_control: bool,
}

/// Spring inertialization options.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpringDesc {
    /// `halflife` in seconds, ≥ 0; 0 = cut.
    pub halflife: f32,
}

// ---------------------------------------------------------------------------------------------
// Reading.

#[derive(Deserialize)]
struct RawLayer {
    name: String,
    #[serde(default)]
    states: Vec<Value>,
    #[serde(default)]
    transitions: Vec<Value>,
    #[serde(rename = "blendType", default)]
    blend_type: Option<LayerBlendDesc>,
    #[serde(default)]
    weight: Option<f32>,
    #[serde(default)]
    mask: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    space: Option<LayerSpaceDesc>,
    #[serde(rename = "weightParameter", default)]
    weight_parameter: Option<String>,
    #[serde(default)]
    slot: Option<bool>,
}

#[derive(Deserialize)]
struct RawState {
    name: String,
    #[serde(default)]
    speed: Option<f32>,
    #[serde(rename = "speedParameter", default)]
    speed_parameter: Option<String>,
    #[serde(rename = "loop", default)]
    looping: Option<bool>,
    #[serde(rename = "defaultState", default)]
    default_state: Option<bool>,
    #[serde(rename = "rootMotion", default)]
    root_motion: Option<bool>,
    #[serde(rename = "blendTree", default)]
    blend_tree: Option<Value>,
    #[serde(default)]
    states: Option<Vec<Value>>,
    #[serde(default)]
    transitions: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct RawTree {
    #[serde(rename = "type")]
    kind: BlendTypeDesc,
    #[serde(default)]
    parameter: Option<String>,
    #[serde(default)]
    parameters: Option<Vec<String>>,
    #[serde(rename = "syncAnimations", alias = "syncDurations", default)]
    sync: Option<bool>,
    #[serde(default)]
    children: Vec<Value>,
}

#[derive(Deserialize)]
struct RawChild {
    name: String,
    #[serde(default)]
    point: Option<Value>,
    #[serde(default)]
    speed: Option<f32>,
    #[serde(default)]
    children: Option<Value>,
}

#[derive(Deserialize)]
struct RawTransition {
    from: Value,
    to: Value,
    #[serde(default)]
    time: Option<f32>,
    #[serde(rename = "durationUnit", default)]
    duration_unit: Option<DurationUnitDesc>,
    #[serde(default)]
    priority: Option<f64>,
    #[serde(rename = "exitTime", default)]
    exit_time: Option<f32>,
    #[serde(rename = "transitionOffset", default)]
    offset: Option<f32>,
    #[serde(rename = "interruptionSource", default)]
    interruption: Option<InterruptionDesc>,
    #[serde(default)]
    conditions: Option<Value>,
    #[serde(rename = "conditionGroups", default)]
    condition_groups: Option<Value>,
    #[serde(default)]
    switch: Option<Value>,
    #[serde(default)]
    sync: Option<SyncDesc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChainWeight {
    chain: String,
    #[serde(default)]
    parameter: Option<String>,
    #[serde(default)]
    curve: Option<String>,
    #[serde(default)]
    layer: Option<String>,
}

#[derive(Deserialize)]
struct RawParameter {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "type")]
    kind: ParameterTypeDesc,
    #[serde(default)]
    value: Option<ConditionValueDesc>,
}

fn shape(path: &str, message: impl Into<String>) -> GraphError {
    GraphError::Shape { path: path.to_owned(), message: message.into() }
}

fn parse<T: for<'de> Deserialize<'de>>(value: &Value, path: &str) -> Result<T, GraphError> {
    T::deserialize(value).map_err(|e| shape(path, e.to_string()))
}

/// The editor form orders ids as JavaScript orders object keys: integer keys ascending
/// first, then the others (alphabetically here, as JSON objects carry no order once parsed).
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|(a, _), (b, _)| match (a.parse::<u32>(), b.parse::<u32>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    });
    entries
}

impl GraphDesc {
    /// Reads JSON text in either PlayCanvas form.
    ///
    /// # Errors
    /// [`GraphError::Json`] for text that is not JSON, [`GraphError::Shape`] (with the JSON
    /// path) for JSON that is not a state graph.
    pub fn from_json(text: &str) -> Result<Self, GraphError> {
        let value: Value = serde_json::from_str(text).map_err(|e| GraphError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Self::from_value(&value)
    }

    /// Reads an already parsed JSON value in either PlayCanvas form. The value is only
    /// borrowed, so the caller drops it (serde_json drops a value recursively: a value nested
    /// far deeper than [`MAX_JSON_DEPTH`] is the caller's to take apart).
    ///
    /// # Errors
    /// [`GraphError::TooDeep`] for a value nesting deeper than [`MAX_JSON_DEPTH`], checked
    /// first; [`GraphError::Shape`] with the JSON path of the first malformed element (in the
    /// editor form also an id listed twice, or ids whose names would copy more than
    /// [`MAX_JSON_DEPTH`] times the input).
    pub fn from_value(value: &Value) -> Result<Self, GraphError> {
        let input_size = check_depth(value)?;
        let root = value.as_object().ok_or_else(|| shape("$", "a state graph is a JSON object"))?;
        let layers_value = root.get("layers").ok_or_else(|| shape("$", "missing key `layers`"))?;
        let default_switch = match root.get("defaultSwitch") {
            Some(v) => Some(read_switch(v, "defaultSwitch")?),
            None => None,
        };
        let parameters = read_parameters(root.get("parameters"))?;
        let chain_weights = read_chain_weights(root.get("chainWeights"))?;
        let layers = match layers_value {
            Value::Array(layers) => layers
                .iter()
                .enumerate()
                .map(|(i, layer)| read_layer(layer, &format!("layers[{i}]"), None))
                .collect::<Result<_, _>>()?,
            Value::Object(layers) => {
                let editor = EditorTables::read(root, input_size)?;
                js_key_order(layers)
                    .into_iter()
                    .map(|(id, layer)| read_layer(layer, &format!("layers.{id}"), Some(&editor)))
                    .collect::<Result<_, _>>()?
            }
            _ => {
                return Err(shape(
                    "layers",
                    "`layers` is an array (runtime form) or an object keyed by id (editor form)",
                ));
            }
        };
        Ok(Self { layers, parameters, default_switch, chain_weights })
    }
}

/// One step down a JSON path: an array index or an object key.
enum Step<'a> {
    Index(usize),
    Key(&'a str),
}

/// The children still to visit of one array or object on the walk's stack.
enum Children<'a> {
    Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    Object(serde_json::map::Iter<'a>),
}

impl<'a> Children<'a> {
    fn of(value: &'a Value) -> Option<Self> {
        match value {
            Value::Array(items) => Some(Self::Array(items.iter().enumerate())),
            Value::Object(map) => Some(Self::Object(map.iter())),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<(Step<'a>, &'a Value)> {
        match self {
            Self::Array(items) => items.next().map(|(i, v)| (Step::Index(i), v)),
            Self::Object(map) => map.next().map(|(k, v)| (Step::Key(k.as_str()), v)),
        }
    }
}

/// Refuses a value that nests arrays and objects deeper than [`MAX_JSON_DEPTH`]. Reading
/// recurses (serde clones sub-values, `read_state` and `read_tree` call themselves), so this
/// walk runs first, on a stack of its own that never holds more than the limit.
///
/// Returns the value's size: one per value, plus the bytes of every string and key (fewer
/// than its JSON text holds), which bounds what the editor form may copy by id.
fn check_depth(value: &Value) -> Result<usize, GraphError> {
    let mut size = 1 + value.as_str().map_or(0, str::len);
    let mut stack: Vec<(Option<Step<'_>>, Children<'_>)> = Vec::new();
    stack.extend(Children::of(value).map(|c| (None, c)));
    while let Some((_, children)) = stack.last_mut() {
        let Some((step, child)) = children.next() else {
            stack.pop();
            continue;
        };
        let key_len = match step {
            Step::Key(k) => k.len(),
            Step::Index(_) => 0,
        };
        size = size.saturating_add(1 + key_len + child.as_str().map_or(0, str::len));
        let Some(grandchildren) = Children::of(child) else { continue };
        if stack.len() == MAX_JSON_DEPTH {
            let mut path = String::new();
            for step in stack.iter().filter_map(|(s, _)| s.as_ref()).chain([&step]) {
                match step {
                    Step::Index(i) => path.push_str(&format!("[{i}]")),
                    Step::Key(k) if path.is_empty() => path.push_str(k),
                    Step::Key(k) => path.push_str(&format!(".{k}")),
                }
            }
            return Err(GraphError::TooDeep { path, limit: MAX_JSON_DEPTH });
        }
        stack.push((Some(step), grandchildren));
    }
    Ok(size)
}

/// The editor form's id-keyed `states` and `transitions` tables, and what reading them has
/// resolved so far.
///
/// Ids are where the editor form could make reading cost more than its input: a state listed
/// by many ids would be read once per listing, and a long state name named by many `from`/`to`
/// ids copied once per transition. So every state and transition id is listed at most once in
/// the whole graph (each belongs to one layer, as the editor saves them), and the names that
/// `from`/`to` ids resolve to may copy at most [`MAX_JSON_DEPTH`] times the input's size.
struct EditorTables<'a> {
    states: &'a Map<String, Value>,
    transitions: &'a Map<String, Value>,
    /// Each state id listed so far, with the path of its listing.
    listed_states: RefCell<HashMap<String, String>>,
    /// Each transition id listed so far, with the path of its listing.
    listed_transitions: RefCell<HashMap<String, String>>,
    /// Bytes `from`/`to` ids may still copy from state names.
    name_bytes_left: Cell<usize>,
}

impl<'a> EditorTables<'a> {
    /// `input_size` is the whole value's size as [`check_depth`] measures it.
    fn read(root: &'a Map<String, Value>, input_size: usize) -> Result<Self, GraphError> {
        let table = |key: &str| -> Result<&'a Map<String, Value>, GraphError> {
            root.get(key)
                .and_then(Value::as_object)
                .ok_or_else(|| shape("$", format!("the editor form needs an object `{key}` keyed by id")))
        };
        Ok(Self {
            states: table("states")?,
            transitions: table("transitions")?,
            listed_states: RefCell::default(),
            listed_transitions: RefCell::default(),
            name_bytes_left: Cell::new(input_size.saturating_mul(MAX_JSON_DEPTH)),
        })
    }

    fn lookup(
        table: &'a Map<String, Value>,
        id: &Value,
        path: &str,
        what: &str,
    ) -> Result<(String, &'a Value), GraphError> {
        let key = match id {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return Err(shape(path, format!("a {what} id is a number or a string"))),
        };
        let value = table.get(&key).ok_or_else(|| shape(path, format!("no {what} with id {key}")))?;
        Ok((key, value))
    }

    /// The state a layer lists at `path`, refused if any layer listed its id before.
    fn list_state(&self, id: &Value, path: &str) -> Result<(String, &'a Value), GraphError> {
        let (key, state) = Self::lookup(self.states, id, path, "state")?;
        Self::list_once(&self.listed_states, &key, path, "state")?;
        Ok((key, state))
    }

    /// The transition a layer lists at `path`, refused if any layer listed its id before.
    fn list_transition(&self, id: &Value, path: &str) -> Result<(String, &'a Value), GraphError> {
        let (key, transition) = Self::lookup(self.transitions, id, path, "transition")?;
        Self::list_once(&self.listed_transitions, &key, path, "transition")?;
        Ok((key, transition))
    }

    fn list_once(
        listed: &RefCell<HashMap<String, String>>,
        key: &str,
        path: &str,
        what: &str,
    ) -> Result<(), GraphError> {
        let mut listed = listed.borrow_mut();
        if let Some(first) = listed.get(key) {
            return Err(shape(
                path,
                format!("{what} id {key} is listed again (first at {first}): list each {what} once, in one layer"),
            ));
        }
        listed.insert(key.to_owned(), path.to_owned());
        Ok(())
    }

    /// The name of the state a `from`/`to` id names, charged to the copy budget.
    fn state_name(&self, id: &Value, path: &str) -> Result<String, GraphError> {
        let (_, state) = Self::lookup(self.states, id, path, "state")?;
        let name = state
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(path, "the state this id names has no `name`"))?;
        let left = self.name_bytes_left.get().checked_sub(name.len()).ok_or_else(|| {
            shape(
                path,
                format!("state names resolved by `from`/`to` ids pass {MAX_JSON_DEPTH} times the input's size: shorten the names"),
            )
        })?;
        self.name_bytes_left.set(left);
        Ok(name.to_owned())
    }
}

fn read_layer(value: &Value, path: &str, editor: Option<&EditorTables<'_>>) -> Result<LayerDesc, GraphError> {
    let raw: RawLayer = parse(value, path)?;
    let (states, transitions) = match editor {
        None => {
            let states = raw
                .states
                .iter()
                .enumerate()
                .map(|(i, s)| read_state(s, &format!("{path}.states[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            let transitions = raw
                .transitions
                .iter()
                .enumerate()
                .map(|(i, t)| read_transition(t, &format!("{path}.transitions[{i}]"), &|v, p| state_ref(v, p, None)))
                .collect::<Result<Vec<_>, _>>()?;
            (states, transitions)
        }
        Some(tables) => {
            let mut states = Vec::with_capacity(raw.states.len());
            for (i, id) in raw.states.iter().enumerate() {
                let (key, state) = tables.list_state(id, &format!("{path}.states[{i}]"))?;
                states.push(read_state(state, &format!("states.{key}"))?);
            }
            let mut transitions = Vec::with_capacity(raw.transitions.len());
            for (i, id) in raw.transitions.iter().enumerate() {
                let (key, t) = tables.list_transition(id, &format!("{path}.transitions[{i}]"))?;
                let resolve = |v: &Value, p: &str| state_ref(v, p, Some(tables));
                transitions.push(read_transition(t, &format!("transitions.{key}"), &resolve)?);
            }
            (states, transitions)
        }
    };
    Ok(LayerDesc {
        name: raw.name,
        states,
        transitions,
        blend_type: raw.blend_type,
        weight: raw.weight,
        mask: raw.mask,
        space: raw.space,
        weight_parameter: raw.weight_parameter,
        slot: raw.slot,
    })
}

/// A `from`/`to`: a state name, or in the editor form a state id.
fn state_ref(value: &Value, path: &str, editor: Option<&EditorTables<'_>>) -> Result<String, GraphError> {
    match (value, editor) {
        (Value::String(name), None) => Ok(name.clone()),
        (Value::Number(_), Some(tables)) | (Value::String(_), Some(tables)) => tables.state_name(value, path),
        _ => Err(shape(path, "a state reference is a state name")),
    }
}

fn read_state(value: &Value, path: &str) -> Result<StateDesc, GraphError> {
    let raw: RawState = parse(value, path)?;
    let blend_tree = match &raw.blend_tree {
        Some(Value::Null) | None => None,
        Some(tree) => Some(read_tree(tree, &format!("{path}.blendTree"))?),
    };
    let machine = match (&raw.states, &raw.transitions) {
        (None, None) => None,
        (states, transitions) => {
            let states = states
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, s)| read_state(s, &format!("{path}.states[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            let transitions = transitions
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| read_transition(t, &format!("{path}.transitions[{i}]"), &|v, p| state_ref(v, p, None)))
                .collect::<Result<Vec<_>, _>>()?;
            Some(MachineDesc { states, transitions })
        }
    };
    Ok(StateDesc {
        name: raw.name,
        speed: raw.speed,
        speed_parameter: raw.speed_parameter,
        looping: raw.looping,
        default_state: raw.default_state.unwrap_or(false),
        root_motion: raw.root_motion.unwrap_or(false),
        blend_tree,
        machine,
    })
}

fn read_tree(value: &Value, path: &str) -> Result<BlendTreeDesc, GraphError> {
    let raw: RawTree = parse(value, path)?;
    let parameters = match (raw.parameter, raw.parameters) {
        (Some(p), _) => vec![p],
        (None, Some(ps)) => ps,
        (None, None) => {
            return Err(shape(path, "a blend tree names its `parameter` (1D) or `parameters` (2D, DIRECT)"));
        }
    };
    let mut children = Vec::with_capacity(raw.children.len());
    for (i, child) in raw.children.iter().enumerate() {
        let cpath = format!("{path}.children[{i}]");
        let raw_child: RawChild = parse(child, &cpath)?;
        let point = match &raw_child.point {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Number(n)) => vec![n.as_f64().unwrap_or(f64::NAN) as f32],
            Some(v @ Value::Array(_)) => parse::<Vec<f32>>(v, &format!("{cpath}.point"))?,
            Some(_) => return Err(shape(&format!("{cpath}.point"), "a point is a number (1D) or [x, y] (2D)")),
        };
        let tree = match raw_child.children {
            Some(Value::Array(_)) => Some(Box::new(read_tree(child, &cpath)?)),
            _ => None,
        };
        children.push(BlendChildDesc { name: raw_child.name, point, speed: raw_child.speed, tree });
    }
    Ok(BlendTreeDesc { kind: raw.kind, parameters, sync: raw.sync.unwrap_or(true), children })
}

type RefResolver<'a> = dyn Fn(&Value, &str) -> Result<String, GraphError> + 'a;

fn read_transition(value: &Value, path: &str, resolve: &RefResolver<'_>) -> Result<TransitionDesc, GraphError> {
    let raw: RawTransition = parse(value, path)?;
    let conditions = match &raw.conditions {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, c)| parse(c, &format!("{path}.conditions[{i}]")))
            .collect::<Result<_, _>>()?,
        // The editor keeps conditions keyed by id and leaves half-edited ones without a
        // parameter; PlayCanvas skips those, and so does throng.
        Some(Value::Object(map)) => js_key_order(map)
            .into_iter()
            .filter(|(_, c)| c.get("parameterName").is_some_and(|p| p.as_str().is_some_and(|s| !s.is_empty())))
            .map(|(id, c)| parse(c, &format!("{path}.conditions.{id}")))
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(shape(&format!("{path}.conditions"), "conditions are an array or an object keyed by id"));
        }
    };
    let condition_groups = read_condition_groups(raw.condition_groups.as_ref(), &format!("{path}.conditionGroups"))?;
    let switch = match &raw.switch {
        None | Some(Value::Null) => None,
        Some(v) => Some(read_switch(v, &format!("{path}.switch"))?),
    };
    Ok(TransitionDesc {
        from: resolve(&raw.from, &format!("{path}.from"))?,
        to: resolve(&raw.to, &format!("{path}.to"))?,
        time: raw.time.unwrap_or(0.0),
        duration_unit: raw.duration_unit.unwrap_or_default(),
        priority: raw.priority.unwrap_or(0.0),
        exit_time: raw.exit_time,
        offset: raw.offset.unwrap_or(0.0),
        interruption: raw.interruption.unwrap_or_default(),
        conditions,
        condition_groups,
        switch,
        sync: raw.sync,
    })
}

/// `conditionGroups`: a non-empty array of non-empty arrays of conditions.
fn read_condition_groups(value: Option<&Value>, path: &str) -> Result<Vec<Vec<ConditionDesc>>, GraphError> {
    let groups = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(groups)) if !groups.is_empty() => groups,
        Some(_) => return Err(shape(path, "`conditionGroups` is a non-empty array of groups")),
    };
    groups
        .iter()
        .enumerate()
        .map(|(g, group)| match group {
            Value::Array(list) if !list.is_empty() => list
                .iter()
                .enumerate()
                .map(|(i, c)| parse(c, &format!("{path}[{g}][{i}]")))
                .collect::<Result<Vec<_>, _>>(),
            _ => Err(shape(&format!("{path}[{g}]"), "a condition group is a non-empty array of conditions")),
        })
        .collect()
}

/// `"cut"` is shorthand for `{ "mode": "cut" }`.
fn read_switch(value: &Value, path: &str) -> Result<SwitchDesc, GraphError> {
    match value {
        Value::String(_) => {
            let mode: SwitchModeDesc = parse(value, path)?;
            Ok(SwitchDesc { mode, easing: EasingDesc::Linear, quintic: None, spring: None })
        }
        _ => parse(value, path),
    }
}

fn read_parameters(value: Option<&Value>) -> Result<Vec<ParameterDesc>, GraphError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(shape("parameters", "`parameters` is an object keyed by name or id")),
    };
    js_key_order(map)
        .into_iter()
        .map(|(key, p)| {
            let raw: RawParameter = parse(p, &format!("parameters.{key}"))?;
            Ok(ParameterDesc { name: raw.name.unwrap_or_else(|| key.clone()), kind: raw.kind, value: raw.value })
        })
        .collect()
}

fn read_chain_weights(value: Option<&Value>) -> Result<Vec<ChainWeightDesc>, GraphError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(shape("chainWeights", "`chainWeights` is an array")),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("chainWeights[{i}]");
            let raw: RawChainWeight = parse(item, &path)?;
            let chain = ChainRef::parse(&raw.chain).ok_or_else(|| {
                shape(
                    &format!("{path}.chain"),
                    format!("{:?} is not \"lookAt N\", \"twoBone N\" or \"ground\"", raw.chain),
                )
            })?;
            let source = match (raw.parameter, raw.curve, raw.layer) {
                (Some(parameter), None, None) => ChainWeightSourceDesc::Parameter(parameter),
                (None, Some(curve), layer) => ChainWeightSourceDesc::Curve { curve, layer },
                (Some(_), None, Some(_)) => return Err(shape(&path, "`layer` goes with `curve`, not `parameter`")),
                _ => return Err(shape(&path, "a chain weight has exactly one of `parameter` and `curve`")),
            };
            Ok(ChainWeightDesc { chain, source })
        })
        .collect()
}
