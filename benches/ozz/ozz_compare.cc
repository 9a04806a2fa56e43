// ozz-animation's half of the comparison (scripts/ozz-compare.sh, BENCHMARKS.md "ozz-animation,
// built and run beside throng"): the work of examples/ozz_compare.rs, through ozz's own jobs,
// timed the same way. Built against ozz-animation 0.16's sources by the script; not part of
// throng's build.
//
//   ozz_compare EXPORT CHECK [--characters N] [--frames F] [--threads T]
//               [--work whole|sample_blend] [--optimize]
//
// EXPORT is `ozz_compare --export`'s file (the humanoid's rig, walk and run), CHECK its
// `--check` file (throng's skinning matrices of the first characters at frame 0). The rig and
// clips go through ozz's offline builders as an ozz user's would (AnimationBuilder quantises the
// keys; --optimize also runs AnimationOptimizer at its default tolerances, removing keys). Per
// character and frame: SamplingJob on walk and on run, each with the character's own
// SamplingJob::Context (ozz's per-character cache), BlendingJob of the two, LocalToModelJob, and
// skinning matrices (model * inverse bind, ozz's SIMD Float4x4 product) stored as column-major
// mat4 (`whole`); or the first two alone (`sample_blend`). With T threads each takes a
// contiguous T-th of the crowd. Each frame is timed by its threads' CPU time summed and divided
// by T, and by wall time, as throng's side is. Before timing, the first characters'
// matrices are compared with throng's: the largest difference is printed, and a difference over
// 0.01 (0.05 with --optimize, whose decimation is lossy by design: about 0.016 on these clips)
// or a NaN fails, so both sides are known to do the same work.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ozz/animation/offline/animation_builder.h"
#include "ozz/animation/offline/animation_optimizer.h"
#include "ozz/animation/offline/raw_animation.h"
#include "ozz/animation/offline/raw_skeleton.h"
#include "ozz/animation/offline/skeleton_builder.h"
#include "ozz/animation/runtime/animation.h"
#include "ozz/animation/runtime/blending_job.h"
#include "ozz/animation/runtime/local_to_model_job.h"
#include "ozz/animation/runtime/sampling_job.h"
#include "ozz/animation/runtime/skeleton.h"
#include "ozz/base/maths/simd_math.h"
#include "ozz/base/maths/soa_transform.h"
#include "ozz/base/memory/unique_ptr.h"
#include "ozz/base/span.h"

namespace {

const float kDt = 1.f / 60.f;
const int kChecked = 16;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "ozz_compare: %s\n", message.c_str());
  std::exit(2);
}

struct Reader {
  std::vector<char> bytes;
  size_t at = 0;
  void Take(void* out, size_t n) {
    if (at + n > bytes.size()) Fail("export file truncated");
    std::memcpy(out, bytes.data() + at, n);
    at += n;
  }
  uint32_t U32() { uint32_t v; Take(&v, 4); return v; }
  int32_t I32() { int32_t v; Take(&v, 4); return v; }
  float F32() { float v; Take(&v, 4); return v; }
  std::string Name() {
    std::string s(U32(), '\0');
    Take(s.data(), s.size());
    return s;
  }
  ozz::math::Transform Transform() {
    ozz::math::Transform t;
    t.translation.x = F32(); t.translation.y = F32(); t.translation.z = F32();
    t.rotation.x = F32(); t.rotation.y = F32(); t.rotation.z = F32(); t.rotation.w = F32();
    t.scale.x = F32(); t.scale.y = F32(); t.scale.z = F32();
    return t;
  }
};

std::vector<char> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(std::string("cannot read ") + path);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

struct Clip {
  std::string name;
  float duration;
  uint32_t frames;
  std::vector<ozz::math::Transform> poses;  // frame-major, throng's joint order
};

struct Export {
  std::vector<std::string> names;
  std::vector<int> parents;
  std::vector<ozz::math::Transform> rest;
  std::vector<std::array<float, 16>> inverse_bind;
  std::vector<Clip> clips;
};

Export Load(const char* path) {
  Reader r{ReadFile(path)};
  char magic[8];
  r.Take(magic, 8);
  if (std::memcmp(magic, "THRONGOZ", 8) != 0 || r.U32() != 1) Fail("not an ozz_compare export, version 1");
  Export e;
  uint32_t joints = r.U32();
  for (uint32_t j = 0; j < joints; ++j) {
    e.names.push_back(r.Name());
    e.parents.push_back(r.I32());
    e.rest.push_back(r.Transform());
    std::array<float, 16> m;
    for (float& f : m) f = r.F32();
    e.inverse_bind.push_back(m);
  }
  uint32_t clips = r.U32();
  for (uint32_t c = 0; c < clips; ++c) {
    Clip clip;
    clip.name = r.Name();
    clip.duration = r.F32();
    clip.frames = r.U32();
    for (uint32_t i = 0; i < clip.frames * joints; ++i) clip.poses.push_back(r.Transform());
    e.clips.push_back(std::move(clip));
  }
  return e;
}

void AddChildren(const Export& e, int parent, ozz::animation::offline::RawSkeleton::Joint::Children* out) {
  for (size_t j = 0; j < e.names.size(); ++j) {
    if (e.parents[j] != parent) continue;
    out->emplace_back();
    out->back().name = e.names[j].c_str();
    out->back().transform = e.rest[j];
    AddChildren(e, static_cast<int>(j), &out->back().children);
  }
}

struct Options {
  int characters = 10000;
  int frames = 60;
  int threads = 1;
  bool whole = true;
  bool optimize = false;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--optimize") { o.optimize = true; continue; }
    if (i + 1 >= argc) Fail(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--work") {
      if (v != "whole" && v != "sample_blend") Fail("unknown work " + v);
      o.whole = v == "whole";
      continue;
    }
    int n = std::atoi(v.c_str());
    if (n <= 0) Fail("bad number " + v);
    if (a == "--characters") o.characters = n;
    else if (a == "--frames") o.frames = n;
    else if (a == "--threads") o.threads = n;
    else Fail("unknown argument " + a);
  }
  if (!o.whole && o.threads != 1) Fail("--work sample_blend runs on one thread");
  return o;
}

uint64_t ThreadCpuNs() {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) Fail("no thread CPU clock");
  return uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
}

// One character's state: its clocks, its weight and its sampling caches.
struct Character {
  float time[2];
  float weight[2];
  ozz::animation::SamplingJob::Context context[2];
};

// Scratch for one thread.
struct Scratch {
  std::vector<ozz::math::SoaTransform> sampled[2];
  std::vector<ozz::math::SoaTransform> blended;
  std::vector<ozz::math::Float4x4> models;
};

struct Crowd {
  ozz::unique_ptr<ozz::animation::Skeleton> skeleton;
  ozz::unique_ptr<ozz::animation::Animation> animations[2];
  std::vector<ozz::math::Float4x4> inverse_bind;  // ozz's joint order
  std::vector<int> throng_of;                     // throng's joint of each ozz joint
  std::vector<Character> characters;
  std::vector<float> output;                      // per character, ozz joint order, mat4

  void Evaluate(int character, bool whole, Scratch* s) {
    Character& c = characters[character];
    for (int k = 0; k < 2; ++k) {
      const float duration = animations[k]->duration();
      ozz::animation::SamplingJob job;
      job.animation = animations[k].get();
      job.context = &c.context[k];
      job.ratio = std::fmod(c.time[k], duration) / duration;
      job.output = ozz::make_span(s->sampled[k]);
      if (!job.Run()) Fail("sampling failed");
    }
    ozz::animation::BlendingJob::Layer layers[2];
    for (int k = 0; k < 2; ++k) {
      layers[k].transform = ozz::make_span(s->sampled[k]);
      layers[k].weight = c.weight[k];
    }
    ozz::animation::BlendingJob blend;
    blend.layers = layers;
    blend.rest_pose = skeleton->joint_rest_poses();
    blend.output = ozz::make_span(s->blended);
    if (!blend.Run()) Fail("blending failed");
    if (!whole) return;
    ozz::animation::LocalToModelJob ltm;
    ltm.skeleton = skeleton.get();
    ltm.input = ozz::make_span(s->blended);
    ltm.output = ozz::make_span(s->models);
    if (!ltm.Run()) Fail("local-to-model failed");
    const size_t joints = s->models.size();
    float* out = output.data() + size_t(character) * joints * 16;
    for (size_t j = 0; j < joints; ++j) {
      const ozz::math::Float4x4 m = s->models[j] * inverse_bind[j];
      for (int col = 0; col < 4; ++col) ozz::math::StorePtrU(m.cols[col], out + j * 16 + col * 4);
    }
  }

  Scratch NewScratch() const {
    Scratch s;
    for (auto& v : s.sampled) v.resize(skeleton->num_soa_joints());
    s.blended.resize(skeleton->num_soa_joints());
    s.models.resize(skeleton->num_joints());
    return s;
  }
};

ozz::unique_ptr<ozz::animation::Animation> BuildAnimation(const Export& e, const Clip& clip,
                                                          const ozz::animation::Skeleton& skeleton,
                                                          const std::vector<int>& throng_of, bool optimize) {
  ozz::animation::offline::RawAnimation raw;
  raw.duration = clip.duration;
  raw.name = clip.name.c_str();
  raw.tracks.resize(skeleton.num_joints());
  const size_t joints = e.names.size();
  for (int o = 0; o < skeleton.num_joints(); ++o) {
    auto& track = raw.tracks[o];
    for (uint32_t f = 0; f < clip.frames; ++f) {
      const float time = clip.frames == 1 ? 0.f : clip.duration * float(f) / float(clip.frames - 1);
      const ozz::math::Transform& t = clip.poses[f * joints + throng_of[o]];
      track.translations.push_back({time, t.translation});
      track.rotations.push_back({time, t.rotation});
      track.scales.push_back({time, t.scale});
    }
  }
  if (!raw.Validate()) Fail("raw animation " + clip.name + " is invalid");
  if (optimize) {
    ozz::animation::offline::RawAnimation optimized;
    ozz::animation::offline::AnimationOptimizer optimizer;
    if (!optimizer(raw, skeleton, &optimized)) Fail("optimizer failed");
    raw = optimized;
  }
  ozz::animation::offline::AnimationBuilder builder;
  auto animation = builder(raw);
  if (!animation) Fail("animation builder failed");
  return animation;
}

void Check(Crowd& crowd, const char* path, int characters, float tolerance) {
  std::vector<char> bytes = ReadFile(path);
  const size_t joints = crowd.throng_of.size();
  if (bytes.size() != size_t(kChecked) * joints * 16 * 4) Fail("check file has the wrong size");
  std::vector<float> expected(bytes.size() / 4);
  std::memcpy(expected.data(), bytes.data(), bytes.size());
  Scratch s = crowd.NewScratch();
  float worst = 0.f;
  for (int c = 0; c < std::min(kChecked, characters); ++c) {
    crowd.Evaluate(c, true, &s);
    for (size_t o = 0; o < joints; ++o) {
      for (int k = 0; k < 16; ++k) {
        const float got = crowd.output[(size_t(c) * joints + o) * 16 + k];
        const float want = expected[(size_t(c) * joints + crowd.throng_of[o]) * 16 + k];
        const float d = std::fabs(got - want);
        if (!(d <= worst)) worst = d;  // NaN wins and fails below
      }
    }
  }
  std::printf("check: largest difference from throng's matrices %.6f\n", worst);
  if (!(worst <= tolerance)) Fail("ozz and throng disagree: not the same work");
  for (Character& c : crowd.characters) {
    for (auto& ctx : c.context) ctx.Invalidate();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: ozz_compare EXPORT CHECK [options]");
  const Options o = Parse(argc, argv);
  const Export e = Load(argv[1]);

  ozz::animation::offline::RawSkeleton raw;
  AddChildren(e, -1, &raw.roots);
  if (!raw.Validate()) Fail("raw skeleton is invalid");
  Crowd crowd;
  crowd.skeleton = ozz::animation::offline::SkeletonBuilder()(raw);
  if (!crowd.skeleton) Fail("skeleton builder failed");
  std::map<std::string, int> throng_joint;
  for (size_t j = 0; j < e.names.size(); ++j) throng_joint[e.names[j]] = int(j);
  for (const char* name : crowd.skeleton->joint_names()) crowd.throng_of.push_back(throng_joint.at(name));
  for (int t : crowd.throng_of) {
    ozz::math::Float4x4 m;
    for (int col = 0; col < 4; ++col) m.cols[col] = ozz::math::simd_float4::LoadPtrU(&e.inverse_bind[t][col * 4]);
    crowd.inverse_bind.push_back(m);
  }
  size_t walk = e.clips.size(), run = e.clips.size();
  for (size_t c = 0; c < e.clips.size(); ++c) {
    if (e.clips[c].name == "walk") walk = c;
    if (e.clips[c].name == "run") run = c;
  }
  if (walk == e.clips.size() || run == e.clips.size()) Fail("the export lacks walk or run");
  crowd.animations[0] = BuildAnimation(e, e.clips[walk], *crowd.skeleton, crowd.throng_of, o.optimize);
  crowd.animations[1] = BuildAnimation(e, e.clips[run], *crowd.skeleton, crowd.throng_of, o.optimize);

  const int n = std::max(o.characters, kChecked);
  crowd.characters = std::vector<Character>(n);
  for (int i = 0; i < n; ++i) {
    // As examples/ozz_compare.rs's `character_samples`, in f32.
    const float a = float(i) * 0.618034f, b = float(i) * 0.4142135f;
    const float time = (a - std::trunc(a)) * 3.f, weight = b - std::trunc(b);
    Character& c = crowd.characters[i];
    c.time[0] = time;
    c.time[1] = time * 0.7f;
    c.weight[0] = 1.f - weight;
    c.weight[1] = weight;
    for (auto& ctx : c.context) ctx.Resize(crowd.skeleton->num_joints());
  }
  crowd.output.resize(size_t(n) * crowd.skeleton->num_joints() * 16);
  Check(crowd, argv[2], n, o.optimize ? 0.05f : 0.01f);

  std::vector<Scratch> scratch;
  for (int t = 0; t < o.threads; ++t) scratch.push_back(crowd.NewScratch());
  std::vector<double> cpu, wall;
  std::vector<uint64_t> busy(o.threads);
  for (int frame = 0; frame <= o.frames; ++frame) {
    const auto start = std::chrono::steady_clock::now();
    if (o.threads == 1) {
      const uint64_t begin = ThreadCpuNs();
      for (int c = 0; c < o.characters; ++c) crowd.Evaluate(c, o.whole, &scratch[0]);
      busy[0] = ThreadCpuNs() - begin;
    } else {
      std::vector<std::thread> workers;
      for (int t = 0; t < o.threads; ++t) {
        workers.emplace_back([&, t] {
          const uint64_t begin = ThreadCpuNs();
          const int first = int(int64_t(o.characters) * t / o.threads);
          const int end = int(int64_t(o.characters) * (t + 1) / o.threads);
          for (int c = first; c < end; ++c) crowd.Evaluate(c, o.whole, &scratch[t]);
          busy[t] = ThreadCpuNs() - begin;
        });
      }
      for (auto& w : workers) w.join();
    }
    const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start).count();
    // Frame 0 is untimed, so that the data is in memory as in a game's frame.
    if (frame > 0) {
      uint64_t threads_ns = 0;
      for (uint64_t b : busy) threads_ns += b;
      cpu.push_back(double(threads_ns) / o.threads / 1e3 / o.characters);
      wall.push_back(double(wall_ns) / 1e3 / o.characters);
    }
    for (Character& c : crowd.characters) {
      c.time[0] += kDt;
      c.time[1] += kDt;
    }
  }
  std::sort(cpu.begin(), cpu.end());
  std::sort(wall.begin(), wall.end());
  std::printf("ozz%s %s threads=%d characters=%d frames=%d median_us=%.3f least_us=%.3f wall_median_us=%.3f\n",
              o.optimize ? "-optimized" : "", o.whole ? "whole" : "sample_blend", o.threads, o.characters,
              o.frames, cpu[cpu.size() / 2], cpu[0], wall[wall.size() / 2]);
  return 0;
}
