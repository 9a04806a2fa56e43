//! Graphs as JSON values built in code from fuzz bytes, shared by the `graph_value` fuzz
//! target and its smoke run in `tests/fuzz_smoke.rs` so both read bytes the same way. Not a
//! stable API.
//!
//! The bytes are a program for a stack machine; each instruction is one byte (its value
//! modulo 8) and its arguments the bytes after it (a missing argument reads as 0):
//!
//! | op | arguments | effect |
//! |---|---|---|
//! | 0 | `i` | push string `NAMES[i]` (control states, dotted names, types, predicates…) |
//! | 1 | `i` | push number `NUMBERS[i]` (0, ±1, huge, tiny…) |
//! | 2 | `b` | push `b & 1 == 1` |
//! | 3 | | push `null` |
//! | 4 | `n` | pop up to `n` values into an array, in the order pushed |
//! | 5 | `k` | pop a value and set it as key `KEYS[k % 128]` of the object below it; of a new object when `k ≥ 128` or no object is below |
//! | 6 | `t`, `lo`, `hi` | wrap the top value `lo + 256·hi` times in template `t % 4`: `[v]`; a sub-machine `{ "name", "states": [v] }`; a blend child `{ "name", "type": "1D", "parameter": "speed", "children": [v] }`; `{ KEYS[t / 4]: v }` |
//! | 7 | `i`, `lo`, `hi` | push an array of `lo + 256·hi` objects `{ "name": NAMES[i], "point": j }` |
//!
//! The result is the top of the stack (`null` when empty). At most [`MAX_VALUES`] values are
//! built, so memory and time stay small whatever the bytes say (the smoke run feeds hundreds
//! of inputs), yet one input can nest or list that many: far past [`super::MAX_JSON_DEPTH`]
//! and every count limit. Counts of 100,000 are tested in `tests/graph_hostile.rs`.

use serde_json::{Map, Value};

use super::format::GraphDesc;
use super::{CompiledGraph, GraphError};

/// Most values one input builds; later instructions are ignored, and instructions 6 and 7
/// repeat at most what is left.
pub const MAX_VALUES: usize = 1 << 14;

const NAMES: [&str; 45] = [
    "START",
    "END",
    "ANY",
    "Base",
    "Idle",
    "Move",
    "Walk",
    "Run",
    "Move.Walk",
    "Combat",
    "Aim",
    "Combat.Aim",
    "Combat.Aim.Up",
    "",
    ".",
    "a..b",
    "speed",
    "go",
    "1D",
    "2D_CARTESIAN",
    "2D_DIRECTIONAL",
    "2D_FREEFORM",
    "2D_GRID",
    "DIRECT",
    "FLOAT",
    "INTEGER",
    "BOOLEAN",
    "TRIGGER",
    "GREATER_THAN",
    "LESS_THAN",
    "EQUAL_TO",
    "NOT_EQUAL_TO",
    "OVERWRITE",
    "ADDITIVE",
    "normalized",
    "cut",
    "crossfade",
    "inertialize",
    "NEXT_STATE",
    "PREV_STATE",
    "phase",
    "marker",
    "lookAt 0",
    "twoBone 1",
    "ground",
];

const KEYS: [&str; 40] = [
    "layers",
    "name",
    "states",
    "transitions",
    "parameters",
    "blendTree",
    "type",
    "parameter",
    "children",
    "point",
    "speed",
    "loop",
    "defaultState",
    "from",
    "to",
    "time",
    "exitTime",
    "transitionOffset",
    "priority",
    "conditions",
    "parameterName",
    "predicate",
    "value",
    "switch",
    "mode",
    "defaultSwitch",
    "weight",
    "mask",
    "blendType",
    "durationUnit",
    "interruptionSource",
    "weightParameter",
    "conditionGroups",
    "speedParameter",
    "slot",
    "sync",
    "chainWeights",
    "chain",
    "curve",
    "layer",
];

const NUMBERS: [f64; 12] =
    [0.0, 1.0, -1.0, 0.5, 2.0, 4294967296.0, 1e39, -1e39, 1e300, f64::MAX, 1e-45, f64::MIN_POSITIVE];

/// Builds the value the program in `bytes` describes (see the module docs). Drop it with
/// [`drop_value`]: it may nest deeper than serde_json's recursive drop survives.
#[must_use]
pub fn graph_value(bytes: &[u8]) -> Value {
    let mut stack: Vec<Value> = Vec::new();
    let mut built = 0usize;
    let mut at = 0;
    let arg = |at: &mut usize| {
        let b = bytes.get(*at).copied().unwrap_or(0);
        *at += 1;
        b
    };
    while at < bytes.len() && built < MAX_VALUES {
        let op = arg(&mut at) % 8;
        match op {
            0 => stack.push(Value::from(NAMES[usize::from(arg(&mut at)) % NAMES.len()])),
            1 => stack.push(Value::from(NUMBERS[usize::from(arg(&mut at)) % NUMBERS.len()])),
            2 => stack.push(Value::Bool(arg(&mut at) & 1 == 1)),
            3 => stack.push(Value::Null),
            4 => {
                let n = usize::from(arg(&mut at)).min(stack.len());
                let items = stack.split_off(stack.len() - n);
                stack.push(Value::Array(items));
            }
            5 => {
                let k = arg(&mut at);
                let key = KEYS[usize::from(k % 128) % KEYS.len()].to_owned();
                let Some(value) = stack.pop() else { continue };
                match stack.last_mut() {
                    Some(Value::Object(map)) if k < 128 => {
                        if let Some(replaced) = map.insert(key, value) {
                            drop_value(replaced);
                        }
                    }
                    _ => stack.push(Value::Object(Map::from_iter([(key, value)]))),
                }
            }
            6 => {
                let template = arg(&mut at);
                let times = usize::from(arg(&mut at)) + 256 * usize::from(arg(&mut at));
                let times = times.min(MAX_VALUES - built);
                let mut value = stack.pop().unwrap_or(Value::Null);
                for _ in 0..times {
                    value = wrap(value, template);
                }
                built += times;
                stack.push(value);
            }
            _ => {
                let name = NAMES[usize::from(arg(&mut at)) % NAMES.len()];
                let count = usize::from(arg(&mut at)) + 256 * usize::from(arg(&mut at));
                let count = count.min(MAX_VALUES - built);
                let children = (0..count).map(|j| {
                    Value::Object(Map::from_iter([
                        ("name".to_owned(), Value::from(name)),
                        ("point".to_owned(), Value::from(j)),
                    ]))
                });
                stack.push(Value::Array(children.collect()));
                built += count;
            }
        }
        built += 1;
    }
    let top = stack.pop().unwrap_or(Value::Null);
    for rest in stack {
        drop_value(rest);
    }
    top
}

/// One level of instruction 6's nesting.
fn wrap(value: Value, template: u8) -> Value {
    let object =
        |entries: Vec<(&str, Value)>| Value::Object(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    let name = Value::from(NAMES[usize::from(template / 4) % NAMES.len()]);
    match template % 4 {
        0 => Value::Array(vec![value]),
        1 => object(vec![("name", name), ("states", Value::Array(vec![value]))]),
        2 => object(vec![
            ("name", name),
            ("type", Value::from("1D")),
            ("parameter", Value::from("speed")),
            ("children", Value::Array(vec![value])),
        ]),
        _ => object(vec![(KEYS[usize::from(template / 4) % KEYS.len()], value)]),
    }
}

/// Drops a value of any depth without recursing: serde_json drops nested arrays and objects
/// recursively, which overflows the stack some ten thousand levels down.
pub fn drop_value(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// What the fuzz target runs: builds the value of `bytes`, reads it with
/// [`GraphDesc::from_value`], compiles what it reads, and drops the value with [`drop_value`].
///
/// # Errors
/// Whatever reading or compiling refuses.
pub fn load(bytes: &[u8]) -> Result<CompiledGraph, GraphError> {
    let value = graph_value(bytes);
    let graph = GraphDesc::from_value(&value).and_then(|desc| CompiledGraph::compile(&desc));
    drop_value(value);
    graph
}
