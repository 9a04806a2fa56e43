//! Compresses every clip of the built-in humanoids (26 and 64 joints) and, when present, of
//! the shared test data (`../shared/data`: glTF sample models and BVH takes in centimetres),
//! and prints a table: the format chosen, bytes per joint-frame, the worst model-space joint
//! error over every frame, and the bytes a sample of one joint reads, full against compact.
//!
//! `cargo run --example compression_report -- [--max-error-mm 0.1] [--data ../shared/data]`

use std::path::PathBuf;

use throng::clip::compact::{CompressionReport, DEFAULT_MAX_ERROR_M};
use throng::demo::DemoCharacter;
use throng::gpu::types::{COMPACT_RANGE_VEC4S, GpuTransform};
use throng::import::bvh::{BvhOptions, load_bvh};
use throng::import::gltf::{GltfOptions, load_gltf};
use throng::{Clip, Rig};

struct Args {
    max_error_m: f32,
    data: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { max_error_m: DEFAULT_MAX_ERROR_M, data: PathBuf::from("../shared/data") };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--max-error-mm" => {
                let mm: f32 = it.next().and_then(|v| v.parse().ok()).ok_or("--max-error-mm needs a number")?;
                args.max_error_m = mm * 1e-3;
            }
            "--data" => args.data = it.next().ok_or("--data needs a folder")?.into(),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// The rigs and clips to report on: the built-in humanoids, then whatever shared data loads.
fn assets(data: &std::path::Path) -> Vec<(String, Rig, Vec<Clip>)> {
    let mut out = Vec::new();
    for (name, demo) in [("humanoid", DemoCharacter::humanoid()), ("humanoid_64", DemoCharacter::humanoid_64())] {
        out.push((name.to_owned(), demo.rig, demo.clips));
    }
    for model in ["RiggedSimple", "RiggedFigure"] {
        let path = data.join("gltf").join(model).join(format!("{model}.gltf"));
        match load_gltf(&path, &GltfOptions::default()) {
            Ok(asset) => out.push((model.to_owned(), asset.rig, asset.clips)),
            Err(e) => eprintln!("skipping {}: {e}", path.display()),
        }
    }
    for take in ["test_mocapbank", "test_freebvh", "locomotion_long"] {
        let path = data.join("bvh").join(format!("{take}.bvh"));
        match load_bvh(&path, &BvhOptions { unit_scale: 0.01, ..BvhOptions::default() }) {
            Ok(bvh) => out.push((take.to_owned(), bvh.rig, vec![bvh.clip])),
            Err(e) => eprintln!("skipping {}: {e}", path.display()),
        }
    }
    out
}

fn row(asset: &str, r: &CompressionReport) {
    let (bits, note) = match r.format {
        Some(f) => (format!("{}/{}", f.rotation_bits(), f.translation_bits()), String::new()),
        None => ("full".to_owned(), format!("  kept full: {:?}", r.kept_full)),
    };
    println!(
        "{asset:<16} {:<14} {bits:>6} {:>6.2} {:>10.4} {:>10} {:>10} {:>6.1}x{note}",
        r.clip,
        r.bytes_per_joint_frame,
        r.worst_error_m * 1e3,
        r.full_storage_bytes,
        r.storage_bytes,
        r.full_storage_bytes as f64 / r.storage_bytes as f64,
    );
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!("bound: {:.4} mm of model-space joint position, every joint of every frame\n", args.max_error_m * 1e3);
    println!(
        "{:<16} {:<14} {:>6} {:>6} {:>10} {:>10} {:>10} {:>7}",
        "asset", "clip", "bits", "B/jf", "worst mm", "full B", "compact B", "ratio"
    );
    let (mut full_bytes, mut compact_bytes) = (0usize, 0usize);
    // (joint-frames, bytes) of the compact clips, for the mean bytes per joint-frame.
    let (mut joint_frames, mut frame_bytes) = (0usize, 0.0f64);
    for (asset, rig, clips) in assets(&args.data) {
        for clip in &clips {
            match clip.compress(&rig, args.max_error_m) {
                Ok((_, report)) => {
                    row(&asset, &report);
                    full_bytes += report.full_storage_bytes;
                    compact_bytes += report.storage_bytes;
                    if report.format.is_some() {
                        let n = clip.num_frames() * clip.num_joints();
                        joint_frames += n;
                        frame_bytes += n as f64 * f64::from(report.bytes_per_joint_frame);
                    }
                }
                Err(e) => eprintln!("{asset} {}: {e}", clip.name()),
            }
        }
    }
    println!(
        "\nall clips: {full_bytes} bytes full, {compact_bytes} compact ({:.1}x smaller)",
        full_bytes as f64 / compact_bytes.max(1) as f64
    );
    // A sample of one joint reads two adjacent joint-frames; a compact clip also reads the
    // joint's range record, which every sample of that clip's joint shares (cache-resident).
    let full = 2 * size_of::<GpuTransform>();
    let compact = 2.0 * frame_bytes / joint_frames.max(1) as f64;
    println!(
        "bytes of frame data per sampled joint (two frames), over every joint-frame of the compact clips: full {full}, compact {compact:.1} ({:.1}x less), plus a {} B joint range the clip's samples of that joint share",
        full as f64 / compact,
        COMPACT_RANGE_VEC4S as usize * 16
    );
}
