//! Seed 000's transition and layer measurements on the built-in character, printed beside the
//! seed's own figures.
//!
//! `cargo run --release --example transition_report [-- --plot DIR]`
//!
//! With `--plot DIR`, one timeline PNG per switch mode is written to `DIR`: the state band,
//! the speed and jump parameters, the jump at each switch and the clips sampled per frame.
//!
//! Switch modes: seed 000's script (stand, walk, run, stop, jump, walk, jump while walking,
//! stop; 13.5 s at 60 fps, 0.25 s blends) through the demo graph, once per mode: the worst joint
//! jump at a switch, and the clips sampled per frame. Layers: foot slide with the wave on the
//! whole body against an upper-body mask, and the waving arm's angle from its authored
//! direction during a run in local space, local space with the additive lean, and mesh space.

mod measure;

use throng::demo::LOCOMOTION_GRAPH;
use throng::graph::CompiledGraph;
use throng::program::LayerSpace;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plot_dir = match args.as_slice() {
        [] => None,
        [flag, dir] if flag == "--plot" => Some(std::path::PathBuf::from(dir)),
        _ => {
            eprintln!("transition_report: usage: transition_report [--plot DIR]");
            std::process::exit(2);
        }
    };
    if let Some(Err(e)) = plot_dir.as_ref().map(std::fs::create_dir_all) {
        eprintln!("transition_report: cannot create the plot folder: {e}");
        std::process::exit(2);
    }
    let seed_pops = ["28.9", "9.1", "0.4", "1.3", "—", "—"];
    println!("Switch modes: seed 000's script on the built-in character (13.5 s, 60 fps, 0.25 s blends)\n");
    println!(
        "| mode | worst joint jump at a switch (cm) | seed (cm) | clips/frame mean | peak | mean while transitioning |"
    );
    println!("|---|---|---|---|---|---|");
    for ((name, json), seed) in measure::MODES.iter().zip(seed_pops) {
        let (r, timeline) = measure::seed_script(name, json);
        if let Some(dir) = &plot_dir {
            let slug: String =
                name.split_whitespace().next().unwrap_or(name).chars().filter(char::is_ascii_alphanumeric).collect();
            let file = dir.join(format!(
                "{slug}{}.png",
                if name.contains("spring") {
                    "_spring"
                } else if name.contains("Bollo") {
                    "_bollo"
                } else {
                    ""
                }
            ));
            if let Err(e) = timeline.save(&file) {
                eprintln!("transition_report: {e}");
                std::process::exit(2);
            }
        }
        println!(
            "| {} | {:.1} | {seed} | {:.2} | {} | {:.2} |",
            r.name, r.worst_jump_cm, r.mean_clips, r.peak_clips, r.mean_clips_transitioning
        );
    }
    let graph = CompiledGraph::from_json(LOCOMOTION_GRAPH).expect("the demo graph loads");
    let upper_body = graph.layers()[2].mask.clone();
    println!("\nLayers\n");
    println!("| measure | throng | seed |");
    println!("|---|---|---|");
    println!(
        "| foot slide, wave on the whole body (cm per m walked) | {:.1} | 199.7 |",
        measure::foot_slide_cm_per_m(None)
    );
    println!(
        "| foot slide, wave with the upper-body mask (cm per m) | {:.1} | 0.2 |",
        measure::foot_slide_cm_per_m(Some(&upper_body))
    );
    println!(
        "| waving arm off its authored direction, running, local space (°) | {:.1} | 7.7 |",
        measure::arm_angle_deg(LayerSpace::Local, false)
    );
    println!(
        "| … local space with the additive lean (°) | {:.1} | 27.8 |",
        measure::arm_angle_deg(LayerSpace::Local, true)
    );
    println!("| … mesh space (°) | {:.1} | 0.0 |", measure::arm_angle_deg(LayerSpace::Mesh, false));
}
