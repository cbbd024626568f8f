#include "data/video_runs.hpp"

namespace trainer::data {

std::vector<long> video_runs(const std::vector<long>& keyframes, long begin, long chunk_frames, long num_chunks,
                             long lead) {
  std::vector<long> starts{0};
  if (keyframes.empty()) {
    for (long c = 1; c <= num_chunks; ++c) starts.push_back(c);
    return starts;
  }
  // keyframe_positions() counts packets in decode order, which B-frames can put a few
  // frames from display order: kSlack keeps a run from starting just before its
  // keyframe (whose seek would go back a whole group of pictures).
  constexpr long kSlack = 4;
  for (const long k : keyframes) {
    if (k <= begin) continue;  // the first run, from begin, is past it already
    const long offset = k + lead + kSlack - begin;
    const long c = (offset + chunk_frames - 1) / chunk_frames;
    if (c < num_chunks && c > starts.back()) starts.push_back(c);
  }
  starts.push_back(num_chunks);
  return starts;
}

}  // namespace trainer::data
