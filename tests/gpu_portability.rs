//! What the software adapter forgives and real GPUs may not: static checks of the WGSL modules
//! against rules that lavapipe never exercises, and crowds on devices with the limits engines
//! and browsers request rather than lavapipe's.
//!
//! Tests that need an adapter skip with a message when there is none, unless
//! `THRONG_REQUIRE_GPU=1` (CI on lavapipe), where a missing adapter fails them.

use glam::{Quat, Vec3};
use throng::gpu::{GpuCrowd, GpuCrowdOptions, GpuError, ShaderModuleKind, shader_source};
use throng::program::{ClipSample, LayerProgram, LayerSetup};
use throng::{Clip, Rig, Transform};
use wgpu::naga;

#[path = "support/gpu.rs"]
mod gpu_support;
mod support;
use gpu_support::{encode_and_read, frame, gpu, gpu_with_limits, layered_frame, test_rig};

/// Where `block` (of a function whose expressions `info` types) stores one component of a
/// vector that lives in storage or workgroup memory, shared between invocations.
fn component_stores(
    module: &naga::Module,
    info: &naga::valid::FunctionInfo,
    function: &naga::Function,
    block: &naga::Block,
    found: &mut Vec<String>,
) {
    use naga::{AddressSpace, Expression, Statement, TypeInner};
    for statement in block.iter() {
        match statement {
            Statement::Block(inner) => component_stores(module, info, function, inner, found),
            Statement::If { accept, reject, .. } => {
                component_stores(module, info, function, accept, found);
                component_stores(module, info, function, reject, found);
            }
            Statement::Switch { cases, .. } => {
                cases.iter().for_each(|case| component_stores(module, info, function, &case.body, found))
            }
            Statement::Loop { body, continuing, .. } => {
                component_stores(module, info, function, body, found);
                component_stores(module, info, function, continuing, found);
            }
            Statement::Store { pointer, .. } => {
                let (Expression::Access { base, .. } | Expression::AccessIndex { base, .. }) =
                    function.expressions[*pointer]
                else {
                    continue;
                };
                let shared =
                    |space: AddressSpace| matches!(space, AddressSpace::Storage { .. } | AddressSpace::WorkGroup);
                let vector_in_shared_memory = match *info[base].ty.inner_with(&module.types) {
                    TypeInner::Pointer { base, space } => {
                        shared(space) && matches!(module.types[base].inner, TypeInner::Vector { .. })
                    }
                    TypeInner::ValuePointer { size: Some(_), space, .. } => shared(space),
                    _ => false,
                };
                if vector_in_shared_memory {
                    found.push(function.name.clone().unwrap_or_default());
                }
            }
            _ => {}
        }
    }
}

/// WGSL does not let two invocations write different components of one vector at once: "a write
/// access to a component of a vector may access all of the memory locations associated with
/// that vector" (the WGSL spec, after gpuweb/gpuweb#2112 and #2152). lavapipe, and naga's HLSL
/// (a 4-byte `Store` into a byte-address buffer), write just the component, so the tests pass
/// there. The MSL spec does not: assigning a component "may need to read the existing value,
/// modify it, and write the result back", and two threads doing so at once is undefined — seen
/// through wgpu on Metal in gfx-rs/wgpu#6096. `store_slot` (`shaders/transition.wgsl`) has the
/// threads of joints `2n` and `2n + 1` write the two halves of one `vec4` of packed scale y/z;
/// on Apple GPUs one half can keep its old bits (zero for a new character), and the frozen
/// snapshot of an interrupted crossfade then squashes that joint. `skip_layer`'s `.x` store has
/// a single writer and is harmless, but flagged by the same simple rule: every store into
/// shared memory writes whole vectors (or scalars of an array of scalars).
#[test]
fn no_shader_stores_one_component_of_a_vector_in_shared_memory() {
    let mut found = Vec::new();
    for kind in ShaderModuleKind::ALL {
        let source = shader_source(kind, 64, true);
        let module =
            naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{kind:?}: {}", e.emit_to_string(&source)));
        for (handle, function) in module.functions.iter() {
            component_stores(&module, &info[handle], function, &function.body, &mut found);
        }
        for (i, entry) in module.entry_points.iter().enumerate() {
            component_stores(&module, info.get_entry_point(i), &entry.function, &entry.function.body, &mut found);
        }
    }
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "functions storing one component of a shared vector (a whole-vector read-modify-write on Metal): {found:?}"
    );
}

/// Two looping clips whose joints swing about their rest pose, in opposite directions.
fn swing_clips(rig: &Rig) -> Vec<Clip> {
    [0.6f32, -0.4]
        .iter()
        .enumerate()
        .map(|(k, &amplitude)| {
            let poses = (0..9)
                .flat_map(|f| {
                    let angle = amplitude * (f as f32 * 0.7).sin();
                    rig.rest_pose().iter().map(move |rest| Transform {
                        rotation: rest.rotation * Quat::from_axis_angle(Vec3::X, angle),
                        ..*rest
                    })
                })
                .collect();
            Clip::from_poses(format!("swing {k}"), rig.num_joints(), poses, 0.8, true).unwrap()
        })
        .collect()
}

/// The limits a device gets from `wgpu::DeviceDescriptor::default()` — what an engine that does
/// not raise them passes, and what WebGPU guarantees — where they bind what the evaluator binds:
/// 8 storage buffers per shader stage (lavapipe has 32) and 4 bind groups.
fn webgpu_defaults(limits: &mut wgpu::Limits) {
    let defaults = wgpu::Limits::default();
    limits.max_storage_buffers_per_shader_stage = defaults.max_storage_buffers_per_shader_stage;
    limits.max_bind_groups = defaults.max_bind_groups;
    limits.min_storage_buffer_offset_alignment = defaults.min_storage_buffer_offset_alignment;
    limits.min_uniform_buffer_offset_alignment = defaults.min_uniform_buffer_offset_alignment;
}

/// The production frame (`set_samples`, `frame_main`) binds 6 storage buffers; the
/// stage-by-stage pipelines, which bind 8, are built only for a crowd with stage buffers. A
/// crowd without them runs on an engine's default device, and shows what it shows on the
/// adapter's own limits.
#[test]
fn a_crowd_runs_on_a_device_with_webgpu_default_limits() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(webgpu_defaults) else { return };
    let rig = test_rig(24);
    let clips = swing_clips(&rig);
    let samples: Vec<ClipSample> = (0..10)
        .flat_map(|c| [ClipSample::new(0, 0.1 * c as f32, 0.7), ClipSample::new(1, 0.05 * c as f32, 0.3)])
        .collect();
    let ranges: Vec<_> = (0..10u32).map(|c| 2 * c..2 * c + 2).collect();
    let mut own = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, GpuCrowdOptions::default()).unwrap();
    let expected = frame(&gpu, &mut own, &samples, &ranges);
    let mut crowd = match GpuCrowd::new(&device, &queue, &rig, &clips, GpuCrowdOptions::default()) {
        Ok(crowd) => crowd,
        Err(e) => panic!("refused on WebGPU's default limits, though its frame binds 6 storage buffers: {e}"),
    };
    crowd.set_samples(&samples, &ranges).unwrap();
    let got = encode_and_read(&device, &queue, &crowd);
    assert!(
        expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()) && expected.len() == got.len(),
        "output differs on default limits"
    );
}

/// The layered production frame (`set_frame`, `frame_layers_main`) binds 8 storage buffers
/// (the archetype's 3, the chunk's 3, the layered group's 2: clip headers ride in the clip data,
/// the layer table in the ancestor paths' buffer), so it runs on an engine's default device and
/// shows what it shows on the adapter's own limits. Its stage path, for tests and profiling,
/// needs 10 and says so.
#[test]
fn a_layered_crowd_runs_on_a_device_with_webgpu_default_limits() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(webgpu_defaults) else { return };
    let rig = test_rig(24);
    let clips = swing_clips(&rig);
    let layers = [LayerSetup::default()];
    let samples: Vec<ClipSample> = (0..10).map(|c| ClipSample::new(c % 2, 0.1 * c as f32, 1.0)).collect();
    let programs: Vec<LayerProgram> = (0..10u32)
        .map(|c| LayerProgram {
            first_sample: c,
            num_target: 1,
            target_weight: 1.0,
            progress: 1.0,
            weight: 1.0,
            transition: u32::MAX,
            ..Default::default()
        })
        .collect();
    let stage_path = GpuCrowdOptions { stage_buffers: true, ..GpuCrowdOptions::default() };
    match GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, stage_path) {
        Err(GpuError::DeviceLimit { limit: "max_storage_buffers_per_shader_stage", needed: 10, got: 8 }) => {}
        other => panic!("the layered stage path on WebGPU's default limits: {:?}", other.map(|_| "a crowd")),
    }
    let mut own =
        GpuCrowd::with_layers(&gpu.device, &gpu.queue, &rig, &clips, &layers, GpuCrowdOptions::default()).unwrap();
    let expected = layered_frame(&gpu, &mut own, &samples, &programs, 1.0 / 60.0);
    let mut crowd = match GpuCrowd::with_layers(&device, &queue, &rig, &clips, &layers, GpuCrowdOptions::default()) {
        Ok(crowd) => crowd,
        Err(e) => panic!("refused on WebGPU's default limits: {e}"),
    };
    crowd.set_frame(&samples, &programs, 1.0 / 60.0).unwrap();
    let got = encode_and_read(&device, &queue, &crowd);
    assert!(
        expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()) && expected.len() == got.len(),
        "output differs on default limits"
    );
}

/// Vulkan and DX12 drivers report a storage binding limit of 2³¹ − 1 bytes, not a multiple of 4,
/// and a binding's size must be one. A frame whose samples outgrow one binding binds each
/// chunk's window of them; the chunks' first bindings, before those windows, must be a whole
/// number of samples too. Here the limit is 1 MiB + 3 bytes and the samples 1.25 MiB.
#[test]
fn samples_past_a_binding_limit_that_is_no_multiple_of_four_bind_whole_samples() {
    let Some(gpu) = gpu() else { return };
    let Some((device, queue)) = gpu_with_limits(|limits| limits.max_storage_buffer_binding_size = (1 << 20) + 3) else {
        return;
    };
    let rig = test_rig(2);
    let clips = swing_clips(&rig);
    let characters = 41_000u32;
    let samples: Vec<ClipSample> = (0..characters)
        .flat_map(|c| [ClipSample::new(0, 0.001 * c as f32, 0.6), ClipSample::new(1, 0.002 * c as f32, 0.4)])
        .collect();
    assert!(samples.len() * size_of::<ClipSample>() > (1 << 20) + 3, "the samples outgrow one binding");
    let ranges: Vec<_> = (0..characters).map(|c| 2 * c..2 * c + 2).collect();
    let options = GpuCrowdOptions { max_chunk_characters: Some(4096), ..GpuCrowdOptions::default() };
    let mut own = GpuCrowd::new(&gpu.device, &gpu.queue, &rig, &clips, options).unwrap();
    let expected = frame(&gpu, &mut own, &samples, &ranges);
    let mut crowd = GpuCrowd::new(&device, &queue, &rig, &clips, options).unwrap();
    crowd.set_samples(&samples, &ranges).unwrap();
    let got = encode_and_read(&device, &queue, &crowd);
    assert!(
        expected.len() == got.len() && expected.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
        "output differs under the odd binding limit"
    );
}

/// Every WGSL file under `shaders/`, comments (`//` and `/* */`) removed: what the kernels are
/// made of.
fn shader_files() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, files: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "wgsl") {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                files.push((path.display().to_string(), without_comments(&text)));
            }
        }
    }
    let mut files = Vec::new();
    walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders"), &mut files);
    files.sort();
    files
}

/// `text` with its line comments and (nested) block comments blanked out, lines kept.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut block, mut line) = (0, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\n', _) => {
                line = false;
                out.push('\n');
            }
            _ if line => {}
            ('/', Some('*')) => {
                chars.next();
                block += 1;
            }
            ('*', Some('/')) if block > 0 => {
                chars.next();
                block -= 1;
            }
            _ if block > 0 => {}
            ('/', Some('/')) => line = true,
            _ => out.push(c),
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The text from `open` (an opening bracket) to its closing one, both excluded.
fn bracketed(text: &str, open: usize) -> &str {
    let (opening, closing) = match text.as_bytes()[open] {
        b'(' => (b'(', b')'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0;
    for (i, &b) in text.as_bytes().iter().enumerate().skip(open) {
        if b == opening {
            depth += 1;
        } else if b == closing {
            depth -= 1;
            if depth == 0 {
                return &text[open + 1..i];
            }
        }
    }
    panic!("unbalanced brackets after byte {open}")
}

/// Where `text` holds `word` as a whole identifier (not a field: no `.` before it).
fn word_at(text: &str, word: &str) -> Vec<usize> {
    text.match_indices(word)
        .map(|(i, _)| i)
        .filter(|&i| {
            !text[..i].ends_with(|c: char| is_ident(c) || c == '.') && !text[i + word.len()..].starts_with(is_ident)
        })
        .collect()
}

/// Whether `body` may write `name`: assigns it or an element or field of it (`name = `,
/// `name[i] += `, `name.x++`…; a comparison is not one), or takes its address (`&name`), through
/// which a call could write it.
fn assigns(body: &str, name: &str) -> bool {
    word_at(body, name).into_iter().any(|i| {
        if body[..i].trim_end().ends_with('&') && !body[..i].trim_end().ends_with("&&") {
            return true;
        }
        let mut after = body[i + name.len()..].trim_start();
        loop {
            if after.starts_with('[') {
                after = after[bracket_end(after)..].trim_start();
            } else if let Some(field) = after.strip_prefix('.') {
                after = field.trim_start_matches(is_ident).trim_start();
            } else {
                break;
            }
        }
        after.starts_with("++")
            || after.starts_with("--")
            || ["+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "&=", "^="].iter().any(|op| after.starts_with(op))
            || (after.starts_with('=') && !after.starts_with("=="))
    })
}

/// The length of `text`'s leading `[…]`, brackets included.
fn bracket_end(text: &str) -> usize {
    let mut depth = 0;
    for (i, b) in text.bytes().enumerate() {
        depth += i32::from(b == b'[') - i32::from(b == b']');
        if depth == 0 {
            return i + 1;
        }
    }
    text.len()
}

/// The steps a loop's counter may take besides 1 (`i++`): positive constants of the kernels, and
/// `threads`, the thread count `store_replay_entry` is passed, which every call gives as a
/// constant or passes on from `end_switch`, whose every call gives a constant (checked below).
const LOOP_STEPS: [&str; 4] = ["WORKGROUP_SIZE", "GROUP_THREADS", "FILL_THREADS / GROUP_CHARACTERS", "threads"];

/// throng builds its kernels without wgpu's loop bounding (`throng::gpu::pipelines`'s
/// `kernel_module`; it cost the layered frame about a tenth of its instructions), which is sound
/// only where no loop can run forever. So every loop of `shaders/` is a `for` whose header ends
/// it by itself: its update steps a counter by 1 or by a positive constant, its condition is
/// `&&` terms (no `||`) of which one is `counter < bound`, and its body writes neither the
/// counter nor the bound (nor takes their address). No `while`, no `loop`. Whatever the storage
/// buffers hold, such a loop ends: a counter that steps by 1 reaches any bound; one that steps by
/// a constant `s` could wrap only past a bound above `u32::MAX − s`, and those loops' bounds are
/// the joint count the host writes (at most `MAX_JOINTS`), a count masked to 8 bits or a
/// constant.
#[test]
fn every_kernel_loop_ends_by_its_header() {
    let mut wrong = Vec::new();
    let mut loops = 0;
    for (file, code) in shader_files() {
        for keyword in ["while", "loop"] {
            if !word_at(&code, keyword).is_empty() {
                wrong.push(format!("{file}: a `{keyword}` (write a `for` that a counter ends)"));
            }
        }
        for at in word_at(&code, "for") {
            let Some(open) = code[at + 3..].find(|c: char| !c.is_whitespace()).map(|o| at + 3 + o) else {
                continue;
            };
            if code.as_bytes()[open] != b'(' {
                wrong.push(format!("{file}: a `for` at byte {at} without a header"));
                continue;
            }
            loops += 1;
            let header = bracketed(&code, open);
            let after = open + header.len() + 2;
            let body = bracketed(&code, after + code[after..].find('{').expect("a body"));
            let parts: Vec<&str> = header.split(';').map(str::trim).collect();
            let [_, condition, update] = parts[..] else {
                wrong.push(format!("{file}: `for ({header})` is not `for (init; condition; update)`"));
                continue;
            };
            let (counter, step) = match update.strip_suffix("++") {
                Some(counter) => (counter.trim(), "1"),
                None => match update.split_once("+=") {
                    Some((counter, step)) => (counter.trim(), step.trim()),
                    None => {
                        wrong.push(format!("{file}: `for ({header})` does not step a counter up"));
                        continue;
                    }
                },
            };
            if step != "1" && !LOOP_STEPS.contains(&step) {
                wrong.push(format!("{file}: `for ({header})` steps by `{step}`, not a known positive constant"));
            }
            if condition.contains("||") {
                wrong.push(format!("{file}: `for ({header})` has `||` in its condition"));
                continue;
            }
            let bound = condition.split("&&").map(str::trim).find_map(|term| {
                term.strip_prefix(counter).and_then(|rest| rest.trim_start().strip_prefix('<')).map(str::trim)
            });
            let Some(bound) = bound.filter(|b| !b.starts_with('=') && word_at(b, counter).is_empty()) else {
                wrong.push(format!("{file}: `for ({header})` has no `{counter} < bound` term"));
                continue;
            };
            if assigns(body, counter) {
                wrong.push(format!("{file}: `for ({header})` writes its counter in its body"));
            }
            for name in bound.split(|c: char| !is_ident(c)).filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
            {
                if assigns(body, name) {
                    wrong.push(format!("{file}: `for ({header})` writes `{name}`, in its bound, in its body"));
                }
            }
        }
        // `threads`: every call of `store_replay_entry` passes a constant or `end_switch`'s own,
        // and every call of `end_switch` a constant.
        for (callee, passed_on) in [
            ("store_replay_entry", &["threads", "1u", "WORKGROUP_SIZE"][..]),
            ("end_switch", &["1u", "WORKGROUP_SIZE"][..]),
        ] {
            for at in word_at(&code, callee) {
                let Some(open) = code[at..].find('(').map(|o| at + o) else { continue };
                let args = bracketed(&code, open);
                let threads = args.rsplit(',').next().unwrap_or("").trim();
                if !args.contains(": u32") && !passed_on.contains(&threads) {
                    wrong.push(format!("{file}: `{callee}` passed `{threads}` threads, not a positive constant"));
                }
            }
        }
    }
    assert!(loops > 50, "only {loops} loops found in shaders/: is the scan reading the files?");
    assert!(wrong.is_empty(), "loops that may not end by their headers:\n{}", wrong.join("\n"));
}
