//! Malformed graphs never panic: thousands of random edits of the documented example either
//! load and run, or are refused with an error.

use std::sync::Arc;

use serde_json::{Value, json};
use throng::graph::CompiledGraph;
use throng::state::{Archetype, ClipBinding, Crowd};

mod support;
use support::Rng;

fn example() -> Value {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/graph-format.md")).unwrap();
    let start = doc.find("## Complete example").unwrap();
    let block = &doc[start..];
    let open = block.find("```json\n").unwrap() + "```json\n".len();
    let close = block[open..].find("```").unwrap();
    serde_json::from_str(&block[open..open + close]).unwrap()
}

/// Counts the nodes of a JSON tree.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(o) => o.values().map(count).sum(),
        _ => 0,
    }
}

/// Replaces (or, inside an object, sometimes removes) the `target`-th node in pre-order.
fn mutate(v: &mut Value, target: &mut usize, rng: &mut Rng) -> bool {
    if *target == 0 {
        let replacements = [
            json!(null),
            json!(-1),
            json!(0),
            json!(1e9),
            json!(0.5),
            json!(f32::MAX),
            json!("START"),
            json!("ANY"),
            json!("END"),
            json!("Idle"),
            json!("speed"),
            json!(true),
            json!([]),
            json!({}),
            json!([1, 2]),
            json!("GREATER_THAN"),
        ];
        *v = replacements[rng.below(replacements.len())].clone();
        return true;
    }
    *target -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| mutate(c, target, rng)),
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                if *target == 0 && rng.below(3) == 0 {
                    o.remove(&k);
                    return true;
                }
                if let Some(c) = o.get_mut(&k)
                    && mutate(c, target, rng)
                {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

#[test]
fn random_edits_of_a_valid_graph_load_or_are_refused_never_panic() {
    let base = example();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..4000 {
        let mut g = base.clone();
        for _ in 0..1 + rng.below(3) {
            let mut target = rng.below(count(&g));
            mutate(&mut g, &mut target, &mut rng);
        }
        match CompiledGraph::from_json(&g.to_string()) {
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
            Ok(graph) => {
                loaded += 1;
                let graph = Arc::new(graph);
                let arch =
                    Archetype::new(Arc::clone(&graph), |_| Some(ClipBinding { clip: 0, duration_s: 0.8 })).unwrap();
                let mut crowd = Crowd::new();
                let kind = crowd.add_archetype(arch);
                let handles: Vec<_> = (0..4).map(|_| crowd.spawn(kind).unwrap()).collect();
                for f in 0..30i32 {
                    for p in graph.parameters() {
                        let id = crowd.param(kind, &p.name).unwrap();
                        match p.slot.kind {
                            throng::graph::ParamKind::Float => {
                                let v: Vec<f32> = (0..4).map(|i| ((f * 7 + i * 3) % 11) as f32 * 0.4 - 1.0).collect();
                                crowd.set_float(id, &handles, &v).unwrap();
                            }
                            throng::graph::ParamKind::Int => crowd.set_int(id, &handles, &[f % 3; 4]).unwrap(),
                            throng::graph::ParamKind::Bool => crowd.set_bool(id, &handles, &[f % 4 < 2; 4]).unwrap(),
                            throng::graph::ParamKind::Trigger => {
                                if f % 5 == 0 {
                                    crowd.set_trigger(id, &handles, f % 10 == 0).unwrap();
                                }
                            }
                        }
                    }
                    crowd.update(1.0 / 30.0).unwrap();
                    for p in crowd.programs(kind).unwrap() {
                        assert!(p.target_weight.is_finite() && p.progress.is_finite());
                    }
                    assert!(crowd.samples(kind).unwrap().iter().all(|s| s.time_s.is_finite() && s.weight.is_finite()));
                }
            }
        }
    }
    assert!(loaded > 50 && refused > 50, "the edits exercise both paths: {loaded} loaded, {refused} refused");
}
