//! Timeline plots: what `throng-trace --plot` draws is where the trace says it should be.

use std::process::Command;

use throng::plot::{self, LayerFrame, LayerTrack, MarkKind, PlotError, Timeline};
use throng::trace::{Script, TraceLine};

mod support;
use support::files::TempDir;

const DT: f64 = 1.0 / 30.0;
const FRAMES: usize = 90;

/// Idle → Walk by a cut when `speed` rises (frame 20), Walk → Jump by a 0.25 s crossfade on a
/// trigger (frame 50), Jump back to Walk by exit time; `wave` is a trigger nothing uses.
fn script(clip_map: bool) -> String {
    let map = if clip_map {
        r#", "character": "demo", "clipMap": { "Idle": "idle", "Walk": "walk", "Jump": "jump" }"#
    } else {
        ""
    };
    format!(
        r#"{{
  "stateGraph": {{
    "layers": [{{ "name": "Base",
      "states": [{{ "name": "START" }}, {{ "name": "Idle" }}, {{ "name": "Walk" }}, {{ "name": "Jump", "loop": false }}],
      "transitions": [
        {{ "from": "START", "to": "Idle" }},
        {{ "from": "Idle", "to": "Walk", "switch": "cut",
           "conditions": [{{ "parameterName": "speed", "predicate": "GREATER_THAN", "value": 0.5 }}] }},
        {{ "from": "Walk", "to": "Jump", "time": 0.25, "switch": "crossfade",
           "conditions": [{{ "parameterName": "jump", "predicate": "EQUAL_TO", "value": true }}] }},
        {{ "from": "Jump", "to": "Walk", "time": 0.2, "exitTime": 0.8, "switch": "cut" }}
      ] }}],
    "parameters": {{
      "speed": {{ "name": "speed", "type": "FLOAT", "value": 0 }},
      "jump": {{ "name": "jump", "type": "TRIGGER" }},
      "wave": {{ "name": "wave", "type": "TRIGGER" }}
    }}
  }},
  "clips": {{ "Idle": 3.0, "Walk": 1.0, "Jump": 1.0 }},
  "dt": {DT}, "frames": {FRAMES},
  "events": [
    {{ "frame": 20, "set": {{ "speed": 1.5 }} }},
    {{ "frame": 40, "triggerSingleFrame": ["wave"] }},
    {{ "frame": 50, "trigger": ["jump"] }}
  ]{map}
}}"#
    )
}

fn timeline(clip_map: bool) -> (Timeline, Vec<TraceLine>) {
    let script = Script::parse(&script(clip_map)).unwrap();
    plot::from_script(&script, "test").unwrap()
}

/// A fresh folder for this test's files.
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("plot-{name}"))
}

#[test]
fn the_png_has_the_layout_size_and_the_band_changes_colour_where_the_active_state_does() {
    let (t, lines) = timeline(false);
    let layout = t.layout().unwrap();
    // Title, one layer (band + weights), three parameters, the axis and one legend line.
    let rows = plot::TITLE_H
        + plot::BAND_H
        + plot::WEIGHTS_H
        + 3.0 * plot::PARAM_H
        + plot::AXIS_H
        + 6.0 * plot::GAP
        + plot::LEGEND_LINE_H;
    let png = image::load_from_memory(&t.to_png_bytes().unwrap()).unwrap().to_rgb8();
    assert_eq!((png.width(), png.height()), (plot::WIDTH_PX, (rows + plot::GAP).ceil() as u32));
    assert_eq!((layout.width, layout.height), (png.width(), png.height()));

    let band = layout.bands[0];
    // Above the state-name labels, so only the band's fill and hatching are there.
    let y = (band.y + 3.0) as u32;
    let colour_at = |frame: usize| {
        let (x0, x1) = layout.frame_span(frame).unwrap();
        png.get_pixel(((x0 + x1) * 0.5) as u32, y).0
    };
    let column = |frame: usize| {
        let (x0, x1) = layout.frame_span(frame).unwrap();
        let x = ((x0 + x1) * 0.5) as u32;
        (band.y as u32 + 1..(band.y + band.height) as u32 - 1).map(|y| png.get_pixel(x, y).0).collect::<Vec<_>>()
    };
    let colour = |name: &str| layout.state_colour(name).unwrap();
    let changes: Vec<usize> = (1..FRAMES).filter(|&f| lines[f].active_state != lines[f - 1].active_state).collect();
    assert_eq!(changes.len(), 3, "Idle → Walk → Jump → Walk: {changes:?}");
    for &f in &changes {
        let (old, new) = (&lines[f - 1].active_state, &lines[f].active_state);
        assert_eq!(colour_at(f - 1), colour(old), "frame {} plays {old}", f - 1);
        if lines[f].transitioning {
            // A crossfade's first frame: the new state's colour, hatched with the old one's.
            let col = column(f);
            assert!(col.contains(&colour(new)) && col.contains(&colour(old)), "frame {f}: {old} → {new} hatched");
        } else {
            assert_eq!(colour_at(f), colour(new), "frame {f} cuts to {new}");
        }
    }
    assert_ne!(colour("Idle"), colour("Walk"));
    assert_ne!(colour("Walk"), colour("Jump"));
    let legend: Vec<&str> = layout.colours.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(legend, ["Idle", "Walk", "Jump"], "control states never play, so they get no colour");
}

#[test]
fn a_state_name_keeps_its_colour_across_layers() {
    let mut t = Timeline::new("two layers", vec![0.5, 1.0]);
    let mut base = LayerTrack::new("Base", vec!["Idle".into(), "Wave".into()]);
    base.frames = vec![LayerFrame::settled(0), LayerFrame::settled(1)];
    let mut upper = LayerTrack::new("Upper", vec!["Wave".into()]);
    upper.frames = vec![LayerFrame::settled(0); 2];
    t.layers = vec![base, upper];
    let layout = t.layout().unwrap();
    assert_eq!(layout.colours.len(), 2);
    let png = t.to_raster().unwrap();
    let pixel = |x: f32, y: f32| {
        let i = (y as usize * png.width() as usize + x as usize) * 3;
        [png.pixels()[i], png.pixels()[i + 1], png.pixels()[i + 2]]
    };
    let (x0, x1) = layout.frame_span(1).unwrap();
    let x = x1 - 3.0;
    let wave = layout.state_colour("Wave").unwrap();
    assert_eq!(pixel(x, layout.bands[0].y + 2.0), wave);
    assert_eq!(pixel(x, layout.bands[1].y + 2.0), wave);
    assert!(x1 - x0 > 6.0);
}

#[test]
fn triggers_are_marked_where_set_consumed_and_expired_and_speed_where_it_changed() {
    let (t, _) = timeline(false);
    let marks = |name: &str| t.params.iter().find(|p| p.name == name).unwrap().marks.clone();
    let jump = marks("jump");
    assert!(jump.iter().any(|m| m.frame == 50 && m.kind == MarkKind::TriggerSet), "{jump:?}");
    assert!(jump.iter().any(|m| m.frame == 50 && m.kind == MarkKind::TriggerConsumed), "{jump:?}");
    let wave = marks("wave");
    assert!(wave.iter().any(|m| m.frame == 40 && m.kind == MarkKind::TriggerExpired), "nothing uses wave: {wave:?}");
    assert!(wave.iter().all(|m| m.kind != MarkKind::TriggerConsumed), "{wave:?}");
    let speed = marks("speed");
    assert_eq!(speed.iter().map(|m| (m.frame, m.kind)).collect::<Vec<_>>(), [(20, MarkKind::Changed)]);
    let speed_values = &t.params.iter().find(|p| p.name == "speed").unwrap().values;
    assert_eq!((speed_values[19], speed_values[20]), (0.0, 1.5));
}

#[test]
fn with_a_clip_map_the_cut_pops_and_the_crossfade_samples_both_states() {
    let (t, lines) = timeline(true);
    let jump = t.jump_cm.as_ref().unwrap();
    let clips = t.clips_sampled.as_ref().unwrap();
    let cut = 20;
    assert_eq!(lines[cut].active_state, "Walk");
    let mut quiet: Vec<f32> =
        jump[2..].iter().enumerate().filter(|(f, _)| !(18..24).contains(&(f + 2))).map(|(_, v)| *v).collect();
    quiet.sort_by(f32::total_cmp);
    let median = quiet[quiet.len() / 2];
    // Idle's T-ish arms to a walk's swing in one frame: many centimetres, far above the walk's own.
    assert!(jump[cut] > 5.0 && jump[cut] > 5.0 * median, "cut {} cm, median {median} cm", jump[cut]);
    for (f, line) in lines.iter().enumerate() {
        let expected = if line.transitioning && line.weights.len() == 2 { 2 } else { 1 };
        assert_eq!(clips[f], expected, "frame {f}: {line:?}");
    }
    assert!(lines.iter().any(|l| l.transitioning), "the crossfade ran");
    let without = timeline(false).0.layout().unwrap().height;
    let with = t.layout().unwrap().height;
    assert!(with >= without + (plot::JUMP_H + plot::CLIPS_H + 2.0 * plot::GAP) as u32, "{with} vs {without}");
}

/// Checks that every tag is closed in order; returns the text of `<text>` elements.
fn parse_svg(doc: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut texts = Vec::new();
    let mut rest = doc;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unclosed <") + open;
        let tag = &rest[open + 1..close];
        let after = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap().to_owned();
            if name == "text" {
                texts.push(after[..after.find('<').unwrap()].to_owned());
            }
            stack.push(name);
        }
        rest = after;
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    texts
}

#[test]
fn the_svg_is_well_formed_and_names_every_state_and_parameter() {
    let (t, _) = timeline(true);
    let doc = t.to_svg_string().unwrap();
    assert!(doc.starts_with("<svg"), "{}", &doc[..40]);
    let texts = parse_svg(&doc);
    for name in ["Idle", "Walk", "Jump", "speed", "jump", "wave", "Base"] {
        assert!(texts.iter().any(|t| t == name), "no text {name:?}");
    }
    let layout = t.layout().unwrap();
    assert!(doc.contains(&format!("width=\"{}\" height=\"{}\"", layout.width, layout.height)));
}

#[test]
fn a_timeline_whose_rows_disagree_is_refused_with_where() {
    let mut t = Timeline::new("t", vec![0.1, 0.2, 0.3]);
    let mut layer = LayerTrack::new("Upper", vec!["Rest".into()]);
    layer.frames = vec![LayerFrame::settled(0); 2];
    t.layers.push(layer);
    let err = t.to_png_bytes().unwrap_err();
    assert!(matches!(&err, PlotError::Invalid(m) if m.contains("Upper") && m.contains("2 frames")), "{err}");
    t.layers[0].frames.push(LayerFrame::settled(1));
    let err = t.to_svg_string().unwrap_err().to_string();
    assert!(err.contains("Upper") && err.contains("frame 2"), "{err}");
    t.layers[0].frames[2] = LayerFrame::settled(0);
    t.times_s[1] = f64::NAN;
    assert!(t.to_svg_string().unwrap_err().to_string().contains("times_s[1]"));
}

#[test]
fn saving_to_an_unknown_extension_or_an_unwritable_path_is_an_error_naming_the_path() {
    let (t, _) = timeline(false);
    let dir = scratch("save");
    let txt = dir.join("timeline.txt");
    let err = t.save(&txt).unwrap_err();
    assert!(matches!(&err, PlotError::Extension { path } if *path == txt), "{err}");
    assert!(!txt.exists(), "nothing written for a refused extension");
    let missing = dir.join("no_such_folder").join("timeline.png");
    let err = t.save(&missing).unwrap_err();
    assert!(matches!(&err, PlotError::Io { path, .. } if *path == missing), "{err}");
    assert!(err.to_string().contains("no_such_folder"), "{err}");
}

fn trace_tool(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_throng-trace")).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_trace_tool_writes_png_and_svg_and_refuses_bad_plot_arguments_with_code_2() {
    let dir = scratch("cli");
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script(true)).unwrap();
    let s = script_path.to_str().unwrap();

    for ext in ["png", "svg"] {
        let out = dir.join(format!("timeline.{ext}"));
        let (code, err) = trace_tool(&[s, "--plot", out.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{err}");
        let bytes = std::fs::read(&out).unwrap();
        match ext {
            "png" => assert!(image::load_from_memory(&bytes).is_ok()),
            _ => assert!(bytes.starts_with(b"<svg")),
        }
    }

    let jpg = dir.join("timeline.jpg");
    let (code, err) = trace_tool(&[s, "--plot", jpg.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("timeline.jpg") && err.contains(".png or .svg"), "{err}");
    assert!(!jpg.exists());

    // A folder that does not exist, and one that is a file.
    for out in [dir.join("missing").join("t.png"), script_path.join("t.png")] {
        let (code, err) = trace_tool(&[s, "--plot", out.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{}", out.display());
        assert!(err.contains("cannot write") && err.contains("t.png"), "{err}");
    }

    let (code, err) = trace_tool(&[s, "--plot"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("usage"), "{err}");
}

#[test]
fn clip_maps_and_masks_the_character_cannot_honour_are_errors_that_say_where() {
    let bad_clip = script(true).replace(r#""Walk": "walk""#, r#""Walk": "stroll""#);
    let err = Script::parse(&bad_clip).unwrap_err().to_string();
    assert!(err.contains("clipMap.Walk") && err.contains("stroll"), "{err}");
    let unmapped = script(true).replace(r#", "Jump": "jump""#, "");
    let err = Script::parse(&unmapped).unwrap_err().to_string();
    assert!(err.contains("clipMap") && err.contains("\"Jump\""), "{err}");
    let bad_character = script(true).replace(r#""character": "demo""#, r#""character": "robot""#);
    assert!(Script::parse(&bad_character).unwrap_err().to_string().contains("character"));

    let masked = script(true).replace(r#"{ "name": "Base","#, r#"{ "name": "Base", "mask": { "chest": 1.0 },"#);
    assert!(masked.contains("chest"));
    let err = plot::from_script(&Script::parse(&masked).unwrap(), "t").unwrap_err().to_string();
    assert!(err.contains("Base") && err.contains("chest"), "{err}");
}
