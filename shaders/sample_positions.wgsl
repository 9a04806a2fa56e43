// Sample positions: each of the frame's samples resolved, once a frame, to its frame coordinate
// in its clip, before the kernels that read it for every joint (`frame_position` in
// `sample.wgsl`), so that no joint wraps the clip's time or divides by its duration. Mirrors
// `throng::eval::sample_positions` (`throng::Clip::frame_coordinate`).
//
// Written over each sample's fourth word (`ClipSample::position`), which on the device nothing
// else reads. Only the clip and the time are read, so a second run over the same samples
// writes the same.

// Group 0 is the archetype's (`shared/bindings.wgsl`), of which this stage reads the clips.
@group(0) @binding(1) var<storage, read> clip_data: array<vec4<u32>>;
// Group 1: one binding's window of the frame's samples.
@group(1) @binding(0) var<uniform> positions: PositionsParams;
@group(1) @binding(1) var<storage, read_write> samples: array<ClipSample>;

// The clip's local time: wrapped into [0, duration) when looping, clamped to [0, duration]
// otherwise (`Clip::local_time`; times are finite, validation sees to that).
fn local_time(h: ClipHeader, time_s: f32) -> f32 {
    if h.duration_s == 0.0 {
        return 0.0;
    }
    if h.looping != 0u {
        var t = time_s % h.duration_s;
        if t < 0.0 {
            t += h.duration_s;
        }
        // As `rem_euclid`: a tiny negative time can round up to the duration.
        if t >= h.duration_s {
            t = 0.0;
        }
        return t;
    }
    return clamp(time_s, 0.0, h.duration_s);
}

// Where `time_s` falls between the clip's frames, in frames from the first (`Clip::frame_coordinate`):
// in [0, frames − 1] but for the division's rounding (a GPU's need not be exact: the frames'
// `frame_position` holds the last pair whatever lies past it), 0 for a clip of one frame.
fn frame_coordinate(h: ClipHeader, time_s: f32) -> f32 {
    let t = local_time(h, time_s);
    if h.num_frames == 1u {
        return 0.0;
    }
    return t / h.duration_s * f32(h.num_frames - 1u);
}

// A thread a sample, on a grid of rows as the frame's (`group_index`).
@compute @workgroup_size(WORKGROUP_SIZE)
fn sample_positions_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) thread: u32) {
    let i = group_index(wg, groups) * WORKGROUP_SIZE + thread;
    if i >= positions.count {
        return;
    }
    let s = samples[i];
    samples[i].position = frame_coordinate(clip_header(s.clip), s.time_s);
}
