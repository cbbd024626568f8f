// Synthetic frames: deterministic, keypoints inside the frame and on their marks.
#include <catch2/catch.hpp>

#include <cmath>  // std::abs

#include "data/synth.hpp"
#include "util/error.hpp"

using namespace trainer::data;

TEST_CASE("synthetic frames are deterministic for a seed", "[data]") {
  SynthOptions o;
  o.size = 64;
  const SynthFrame a = render_synth_frame(o, 3), b = render_synth_frame(o, 3), c = render_synth_frame(o, 4);
  CHECK(a.image == b.image);
  CHECK(a.keypoints == b.keypoints);
  CHECK(a.image != c.image);
  o.seed = 1;
  CHECK(render_synth_frame(o, 3).keypoints != a.keypoints);
}

TEST_CASE("synthetic keypoints are inside the frame and sit on their coloured marks", "[data]") {
  SynthOptions o;
  o.size = 128;
  o.keypoints = 9;
  // Paw colours (RGB) of paw_LF, paw_RF, paw_LH, paw_RH (keypoints 3..6).
  const int paw[4][3] = {{230, 60, 60}, {60, 210, 60}, {70, 90, 240}, {240, 230, 70}};
  int on_mark = 0, total = 0;
  for (int i = 0; i < 100; ++i) {
    const SynthFrame f = render_synth_frame(o, i);
    REQUIRE(f.keypoints.size() == 18);
    for (float v : f.keypoints) {
      CHECK(v >= 0.0f);
      CHECK(v < o.size);
    }
    for (int p = 0; p < 4; ++p) {
      const int x = static_cast<int>(f.keypoints[2 * (3 + p)]), y = static_cast<int>(f.keypoints[2 * (3 + p) + 1]);
      const std::uint8_t* px = f.image.data() + (static_cast<size_t>(y) * o.size + x) * 3;
      bool close = true;
      for (int c = 0; c < 3; ++c) close = close && std::abs(int(px[c]) - paw[p][c]) <= 40;
      on_mark += close;
      ++total;
    }
  }
  CHECK(on_mark >= total * 95 / 100);  // the tail may rarely cross a paw
}

TEST_CASE("videos move smoothly and number their frames", "[data]") {
  SynthOptions o;
  o.frames = 20;
  o.videos = 3;  // 7, 7, 6 frames
  o.size = 96;
  CHECK(render_synth_frame(o, 6).video_id == 0);
  CHECK(render_synth_frame(o, 7).video_id == 1);
  CHECK(render_synth_frame(o, 7).frame_number == 0);
  CHECK(render_synth_frame(o, 19).video_id == 2);
  CHECK(render_synth_frame(o, 19).frame_number == 5);
  const SynthFrame a = render_synth_frame(o, 8), b = render_synth_frame(o, 9);
  for (size_t k = 0; k < a.keypoints.size(); ++k) CHECK(std::abs(a.keypoints[k] - b.keypoints[k]) < 0.12f * o.size);
}

TEST_CASE("synth options are validated", "[data]") {
  SynthOptions o;
  o.keypoints = 16;
  CHECK_THROWS_AS(validate(o), trainer::UserError);
  o = SynthOptions{};
  o.channels = 2;
  CHECK_THROWS_AS(validate(o), trainer::UserError);
  o = SynthOptions{};
  o.frames = 1;
  CHECK_THROWS_AS(validate(o), trainer::UserError);
}

#include <filesystem>  // std::filesystem

#include "data/dataset.hpp"
#include "scratch_dir.hpp"

TEST_CASE("ensure_synthetic_dataset writes once, atomically", "[data]") {
  testing::ScratchDir dir("ensure");
  SynthOptions o;
  o.frames = 6;
  o.size = 48;
  const std::string path = dir.file("outputs/synthetic.h5");  // the folder is created
  CHECK(ensure_synthetic_dataset(path, o));
  CHECK_FALSE(ensure_synthetic_dataset(path, o));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "outputs")) {
    ++files;
    CHECK(e.path().filename() == "synthetic.h5");  // no temporary file left
  }
  CHECK(files == 1);
  const Dataset ds = Dataset::open({path});
  CHECK(ds.size() == 6);
  CHECK(ds.num_keypoints() == o.keypoints);
  CHECK(ds.keypoint_names().front() == "nose");
}
