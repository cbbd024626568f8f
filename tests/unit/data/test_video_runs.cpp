// Where video prediction's decoding runs start (data/video_runs.hpp): at the first
// chunk past each keyframe, so a run's one seek decodes less than a chunk in vain.
#include <catch2/catch.hpp>

#include <vector>

#include "data/video_runs.hpp"

using trainer::data::video_runs;
using Starts = std::vector<long>;

TEST_CASE("video runs start at the first chunk past each keyframe", "[data]") {
  // lightning-pose's test_vid.mp4: 994 frames, keyframes 0, 192, 432, 682, 932; 64-frame
  // chunks (16): the chunks from 196, 436, 686 and 936 on start at 256, 448, 704, 960.
  const Starts keys{0, 192, 432, 682, 932};
  CHECK(video_runs(keys, 0, 64, 16, 0) == Starts{0, 4, 7, 11, 15, 16});
  // A context model's chunk decodes from 2 frames before it: 698 + 2 still fits 704.
  CHECK(video_runs(keys, 0, 64, 16, 2) == Starts{0, 4, 7, 11, 15, 16});
  // A keyframe a chunk's slack before its start moves the run to the next chunk: 62 + 4
  // is past 64, so the chunk from 128 (a seek at 64 would land on the keyframe at 0).
  CHECK(video_runs({0, 62}, 0, 64, 4, 0) == Starts{0, 2, 4});
  // Keyframes at or before `begin` (a rank's share from frame 300) start nothing; the
  // ones past the last chunk nothing either.
  CHECK(video_runs(keys, 300, 64, 6, 0) == Starts{0, 3, 6});  // 436 - 300 -> chunk 3 (from 492)
  CHECK(video_runs({0, 5000}, 0, 64, 3, 0) == Starts{0, 3});
  // Two keyframes in one chunk: one run start.
  CHECK(video_runs({0, 70, 80}, 0, 64, 5, 0) == Starts{0, 2, 5});
}

TEST_CASE("video runs without keyframes: every chunk a run; no chunks, no runs", "[data]") {
  CHECK(video_runs({}, 0, 64, 3, 0) == Starts{0, 1, 2, 3});
  CHECK(video_runs({0, 192}, 0, 64, 0, 0) == Starts{0, 0});
  CHECK(video_runs({}, 0, 64, 0, 0) == Starts{0});
}
