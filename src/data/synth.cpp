// Synthetic animal frames (see synth.hpp).
#include "data/synth.hpp"

#include <opencv2/imgproc.hpp>    // cv::ellipse, cv::circle, cv::line, cv::GaussianBlur

#include <algorithm>   // std::min, std::max
#include <cmath>       // std::cos, std::sin
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream

#include "data/format.hpp"        // DatasetWriter
#include "data/media_loader.hpp"  // media_api: write_image (the media module)
#include "data/rng.hpp"           // KeyedRng, RngPurpose
#include "util/error.hpp"         // UserError

namespace trainer::data {

namespace {

constexpr double kPi = 3.141592653589793;

// Pose of the animal; lengths in units of the body length L.
struct Pose {
  double cx = 0, cy = 0;    // body centre, pixels (continuous coordinates)
  double length = 40;       // body length L in pixels
  double heading = 0;       // radians, direction of the head
  double head_yaw = 0;      // head turn relative to the body
  double tail_curl = 0;     // bend per tail segment
  double stride = 0;        // leg phase
};

struct Vec {
  double x, y;
};

// Rendering colours (RGB); grayscale frames use their luminance, which stays distinct.
const cv::Scalar kBody(200, 185, 160), kHead(225, 210, 185), kLeg(150, 135, 115);
const cv::Scalar kPawLF(230, 60, 60), kPawRF(60, 210, 60), kPawLH(70, 90, 240), kPawRH(240, 230, 70);
const cv::Scalar kEarL(40, 40, 40), kEarR(250, 250, 250), kNose(20, 20, 20);
const cv::Scalar kTail(190, 170, 140), kTailMark(250, 140, 250), kTailBase(120, 60, 20);

// Keypoint positions of a pose, in the order of synth_keypoint_names().
std::vector<Vec> skeleton(const Pose& p) {
  const double L = p.length;
  const double ch = std::cos(p.heading), sh = std::sin(p.heading);
  auto body = [&](double u, double v) {  // body frame (u forward, v left) to image
    return Vec{p.cx + L * (u * ch - v * sh), p.cy + L * (u * sh + v * ch)};
  };
  const Vec neck = body(0.45, 0.0);
  const double ha = p.heading + p.head_yaw;
  const Vec head{neck.x + 0.25 * L * std::cos(ha), neck.y + 0.25 * L * std::sin(ha)};
  const Vec nose{head.x + 0.22 * L * std::cos(ha), head.y + 0.22 * L * std::sin(ha)};
  // Left is +v; image y grows downwards, so "left" is a mirror convention, fixed here.
  const Vec ear_l{head.x - 0.13 * L * std::sin(ha), head.y + 0.13 * L * std::cos(ha)};
  const Vec ear_r{head.x + 0.13 * L * std::sin(ha), head.y - 0.13 * L * std::cos(ha)};
  const double s = 0.12 * std::sin(p.stride);
  const Vec paw_lf = body(0.28 + s, 0.34), paw_rf = body(0.28 - s, -0.34);
  const Vec paw_lh = body(-0.30 - s, 0.34), paw_rh = body(-0.30 + s, -0.34);
  const Vec tail_base = body(-0.5, 0.0);
  std::vector<Vec> tail{tail_base};
  double ta = p.heading + kPi;
  for (int i = 0; i < 4; ++i) {
    ta += p.tail_curl;
    const Vec& last = tail.back();
    tail.push_back({last.x + 0.19 * L * std::cos(ta), last.y + 0.19 * L * std::sin(ta)});
  }
  const Vec centre{p.cx, p.cy};
  // nose, ear_left, ear_right, paw_LF, paw_RF, paw_LH, paw_RH, tail_base, tail_tip,
  // head, neck, tail_mid, body_center, tail_1, tail_3
  return {nose, ear_l, ear_r, paw_lf, paw_rf, paw_lh, paw_rh, tail[0], tail[4], head, neck, tail[2], centre, tail[1], tail[3]};
}

// OpenCV draws with integer pixel centres and `shift` fractional bits.
constexpr int kShift = 4;
cv::Point fixed(const Vec& v) {
  return {static_cast<int>(std::lround((v.x - 0.5) * (1 << kShift))), static_cast<int>(std::lround((v.y - 0.5) * (1 << kShift)))};
}
int fixed_len(double len) { return std::max(1, static_cast<int>(std::lround(len * (1 << kShift)))); }

void draw_animal(cv::Mat& img, const Pose& p) {
  const auto k = skeleton(p);
  const double L = p.length;
  const int aa = cv::LINE_AA;
  const int thick_leg = std::max(1, static_cast<int>(std::lround(0.07 * L)));
  // Legs under the body.
  const Vec hips[4] = {{0.25, 0.15}, {0.25, -0.15}, {-0.27, 0.15}, {-0.27, -0.15}};
  const double ch = std::cos(p.heading), sh = std::sin(p.heading);
  for (int i = 0; i < 4; ++i) {
    const Vec hip{p.cx + L * (hips[i].x * ch - hips[i].y * sh), p.cy + L * (hips[i].x * sh + hips[i].y * ch)};
    cv::line(img, fixed(hip), fixed(k[3 + i]), kLeg, thick_leg, aa, kShift);
  }
  // Tail: tapering segments.
  const Vec tail[5] = {k[7], k[13], k[11], k[14], k[8]};
  for (int i = 0; i < 4; ++i) {
    const int t = std::max(1, static_cast<int>(std::lround((0.09 - 0.015 * i) * L)));
    cv::line(img, fixed(tail[i]), fixed(tail[i + 1]), kTail, t, aa, kShift);
  }
  // Body and head.
  cv::ellipse(img, fixed({p.cx, p.cy}), cv::Size(fixed_len(0.52 * L), fixed_len(0.22 * L)), p.heading * 180.0 / kPi, 0,
              360, kBody, cv::FILLED, aa, kShift);
  const double ha = (p.heading + p.head_yaw) * 180.0 / kPi;
  cv::ellipse(img, fixed(k[9]), cv::Size(fixed_len(0.24 * L), fixed_len(0.15 * L)), ha, 0, 360, kHead, cv::FILLED, aa,
              kShift);
  // Marks on the keypoints.
  const int mark = fixed_len(std::max(1.5, 0.055 * L));
  cv::circle(img, fixed(k[0]), mark, kNose, cv::FILLED, aa, kShift);
  cv::circle(img, fixed(k[1]), mark, kEarL, cv::FILLED, aa, kShift);
  cv::circle(img, fixed(k[2]), mark, kEarR, cv::FILLED, aa, kShift);
  const cv::Scalar paws[4] = {kPawLF, kPawRF, kPawLH, kPawRH};
  for (int i = 0; i < 4; ++i) cv::circle(img, fixed(k[3 + i]), fixed_len(std::max(1.8, 0.075 * L)), paws[i], cv::FILLED, aa, kShift);
  cv::circle(img, fixed(k[7]), mark, kTailBase, cv::FILLED, aa, kShift);
  cv::circle(img, fixed(k[8]), mark, kTailMark, cv::FILLED, aa, kShift);
}

// Moves the pose so every keypoint is at least `margin` pixels inside the frame.
void keep_inside(Pose& p, int size, double margin) {
  const auto k = skeleton(p);
  double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
  for (const auto& v : k) {
    x0 = std::min(x0, v.x);
    x1 = std::max(x1, v.x);
    y0 = std::min(y0, v.y);
    y1 = std::max(y1, v.y);
  }
  if (x0 < margin) p.cx += margin - x0;
  else if (x1 > size - margin) p.cx -= x1 - (size - margin);
  if (y0 < margin) p.cy += margin - y0;
  else if (y1 > size - margin) p.cy -= y1 - (size - margin);
}

Pose random_pose(KeyedRng& rng, int size) {
  Pose p;
  p.length = rng.uniform(0.26, 0.36) * size;
  p.cx = rng.uniform(0.25, 0.75) * size;
  p.cy = rng.uniform(0.25, 0.75) * size;
  p.heading = rng.uniform(-kPi, kPi);
  p.head_yaw = rng.uniform(-0.5, 0.5);
  p.tail_curl = rng.uniform(-0.45, 0.45);
  p.stride = rng.uniform(-kPi, kPi);
  return p;
}

// Frame t of a video: smooth functions of t with phases drawn once per video.
Pose video_pose(std::uint64_t seed, int video, int t, int size) {
  KeyedRng rng(seed, static_cast<std::uint64_t>(RngPurpose::kSynth), 1000003ull + static_cast<std::uint64_t>(video));
  Pose base = random_pose(rng, size);
  const double ph[6] = {rng.uniform(0, 2 * kPi), rng.uniform(0, 2 * kPi), rng.uniform(0, 2 * kPi),
                        rng.uniform(0, 2 * kPi), rng.uniform(0, 2 * kPi), rng.uniform(0, 2 * kPi)};
  const double turn = rng.uniform(-0.04, 0.04);
  Pose p = base;
  p.cx += 0.12 * size * std::sin(0.05 * t + ph[0]);
  p.cy += 0.12 * size * std::sin(0.04 * t + ph[1]);
  p.heading += turn * t + 0.3 * std::sin(0.03 * t + ph[2]);
  p.head_yaw = 0.45 * std::sin(0.09 * t + ph[3]);
  p.tail_curl = 0.4 * std::sin(0.07 * t + ph[4]);
  p.stride = 0.35 * t + ph[5];
  return p;
}

void draw_background(cv::Mat& img, KeyedRng& rng) {
  const int size = img.rows;
  const double base = rng.uniform(50, 110);
  img.setTo(cv::Scalar::all(base));
  // A few soft blobs give low-frequency structure.
  cv::Mat blobs(img.size(), img.type(), cv::Scalar::all(0));
  for (int i = 0; i < 6; ++i) {
    const cv::Point c(static_cast<int>(rng.below(static_cast<std::uint64_t>(size))),
                      static_cast<int>(rng.below(static_cast<std::uint64_t>(size))));
    const int r = static_cast<int>(rng.uniform(0.08, 0.25) * size);
    cv::circle(img, c, r, cv::Scalar::all(base + rng.uniform(-35, 35)), cv::FILLED, cv::LINE_AA);
  }
  const int k = (size / 16) | 1;
  cv::GaussianBlur(img, img, cv::Size(k, k), 0);
}

void add_noise(cv::Mat& img, KeyedRng& rng) {
  auto* p = img.ptr<std::uint8_t>();
  const size_t n = img.total() * img.channels();
  for (size_t i = 0; i < n; ++i) {
    // Sum of two uniforms: a cheap bell-shaped noise of about +-12 grey levels.
    const double v = p[i] + (rng.uniform() + rng.uniform() - 1.0) * 12.0;
    p[i] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
  }
}

std::string format_path(const char* fmt, int a, int b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

const std::vector<std::string>& synth_keypoint_names() {
  static const std::vector<std::string> names = {
      "nose", "ear_left", "ear_right", "paw_LF", "paw_RF", "paw_LH", "paw_RH", "tail_base",
      "tail_tip", "head", "neck", "tail_mid", "body_center", "tail_1", "tail_3"};
  return names;
}

void validate(const SynthOptions& o) {
  // The writer keeps per-frame metadata in memory: a bound keeps that small.
  if (o.frames < 2 || o.frames > kMaxSynthFrames)
    throw UserError("synth: --frames must be between 2 and " + std::to_string(kMaxSynthFrames));
  if (o.size < 32 || o.size > 4096) throw UserError("synth: --size must be between 32 and 4096");
  if (o.keypoints < 1 || o.keypoints > kMaxSynthKeypoints)
    throw UserError("synth: --keypoints must be between 1 and " + std::to_string(kMaxSynthKeypoints));
  if (o.videos < 0 || o.videos > o.frames) throw UserError("synth: --videos must be between 0 and --frames");
  if (o.channels != 1 && o.channels != 3) throw UserError("synth: --channels must be 1 or 3");
  if (o.deflate_level < 0 || o.deflate_level > 9) throw UserError("synth: --deflate must be between 0 and 9");
}

SynthFrame render_synth_frame(const SynthOptions& o, std::int64_t index) {
  SynthFrame out;
  Pose pose;
  KeyedRng rng(o.seed, static_cast<std::uint64_t>(RngPurpose::kSynth), static_cast<std::uint64_t>(index));
  if (o.videos > 0) {
    // Videos of (nearly) equal length: the first (frames % videos) get one more frame.
    const std::int64_t per = o.frames / o.videos, extra = o.frames % o.videos;
    const std::int64_t long_total = extra * (per + 1);
    const int video = static_cast<int>(index < long_total ? index / (per + 1) : extra + (index - long_total) / per);
    const int t = static_cast<int>(index < long_total ? index % (per + 1) : (index - long_total) % per);
    pose = video_pose(o.seed, video, t, o.size);
    out.video_id = video;
    out.frame_number = t;
    out.frame_path = format_path("labeled-data/video%03d/img%05d.png", video, t);
  } else {
    pose = random_pose(rng, o.size);
    out.frame_path = format_path("labeled-data/img%05d.png", static_cast<int>(index));
  }
  keep_inside(pose, o.size, 0.04 * o.size + 2.0);
  cv::Mat img(o.size, o.size, CV_8UC3);
  if (o.videos > 0) {
    // One background per video, so context frames differ only by the animal and the noise.
    KeyedRng background(o.seed, static_cast<std::uint64_t>(RngPurpose::kSynth), 2000003ull + out.video_id);
    draw_background(img, background);
  } else {
    draw_background(img, rng);
  }
  draw_animal(img, pose);
  add_noise(img, rng);
  if (o.channels == 1) {
    cv::Mat gray;
    cv::cvtColor(img, gray, cv::COLOR_RGB2GRAY);
    img = gray;
  }
  out.image.assign(img.datastart, img.dataend);
  const auto k = skeleton(pose);
  for (int i = 0; i < o.keypoints; ++i) {
    out.keypoints.push_back(static_cast<float>(k[static_cast<size_t>(i)].x));
    out.keypoints.push_back(static_cast<float>(k[static_cast<size_t>(i)].y));
  }
  return out;
}

void write_synthetic_dataset(const std::string& path, const SynthOptions& o) {
  validate(o);
  DatasetShape shape;
  shape.num_frames = o.frames;
  shape.height = shape.width = o.size;
  shape.channels = o.channels;
  const auto& all = synth_keypoint_names();
  shape.keypoint_names.assign(all.begin(), all.begin() + o.keypoints);
  WriterOptions w;
  w.deflate_level = o.deflate_level;
  w.with_video_info = o.videos > 0;
  w.source = "trainer synth --frames " + std::to_string(o.frames) + " --size " + std::to_string(o.size) +
             " --keypoints " + std::to_string(o.keypoints) + " --seed " + std::to_string(o.seed) + " --videos " +
             std::to_string(o.videos) + " --channels " + std::to_string(o.channels);
  DatasetWriter writer(path, shape, w);
  for (std::int64_t i = 0; i < o.frames; ++i) {
    const SynthFrame f = render_synth_frame(o, i);
    writer.write_frame(i, f.image.data(), f.keypoints.data(), f.frame_path, f.video_id, f.frame_number);
  }
  writer.finish();
}

void export_synthetic_project(const std::string& dir, const SynthOptions& o) {
  validate(o);
  // Before anything is written: without the media module no image could be.
  const media::Api& media = media_api("writing the frames of --export-dir as PNG files");
  namespace fs = std::filesystem;
  const auto& all = synth_keypoint_names();
  std::ofstream csv(fs::path(dir) / "CollectedData.csv");
  if (!csv) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    csv.open(fs::path(dir) / "CollectedData.csv");
  }
  if (!csv) throw UserError("cannot write " + (fs::path(dir) / "CollectedData.csv").string());
  csv << "scorer";
  for (int k = 0; k < o.keypoints; ++k) csv << ",synth,synth";
  csv << "\nbodyparts";
  for (int k = 0; k < o.keypoints; ++k) csv << ',' << all[static_cast<size_t>(k)] << ',' << all[static_cast<size_t>(k)];
  csv << "\ncoords";
  for (int k = 0; k < o.keypoints; ++k) csv << ",x,y";
  csv << '\n';
  char number[32];
  for (std::int64_t i = 0; i < o.frames; ++i) {
    const SynthFrame f = render_synth_frame(o, i);
    const fs::path image_path = fs::path(dir) / f.frame_path;
    std::error_code ec;
    fs::create_directories(image_path.parent_path(), ec);
    cv::Mat img(o.size, o.size, o.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<std::uint8_t*>(f.image.data()));
    cv::Mat bgr;
    if (o.channels == 3) cv::cvtColor(img, bgr, cv::COLOR_RGB2BGR);
    else bgr = img;
    if (!media.write_image(image_path.string(), bgr)) throw UserError("cannot write " + image_path.string());
    csv << f.frame_path;
    for (float v : f.keypoints) {
      std::snprintf(number, sizeof number, "%.9g", static_cast<double>(v));  // round-trips float32 exactly
      csv << ',' << number;
    }
    csv << '\n';
  }
  csv.flush();
  if (!csv) throw UserError("cannot write " + (fs::path(dir) / "CollectedData.csv").string() + " (disk full?)");
}

bool ensure_synthetic_dataset(const std::string& path, const SynthOptions& options) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return false;
  write_synthetic_dataset(path, options);
  return true;
}

}  // namespace trainer::data
