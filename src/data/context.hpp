#pragma once
// Context frames for heatmap_mhcrnn: frames t-2 .. t+2 of the same video. Where a
// neighbour does not exist (the ends of a video, or a gap), the nearest existing
// frame towards the centre is repeated, so frame 0 of a video gets (0, 0, 0, 1, 2).
#include <array>    // std::array
#include <cstdint>  // std::int64_t
#include <map>      // std::map
#include <utility>  // std::pair

namespace trainer::data {

class Dataset;

inline constexpr int kContextFrames = 5;

class ContextIndex {
 public:
  // Throws UserError when the dataset has no /video_id and /frame_number.
  explicit ContextIndex(const Dataset& dataset);
  // Global indices of frames t-2, t-1, t, t+1, t+2 around global frame `frame`.
  std::array<std::int64_t, kContextFrames> around(std::int64_t frame) const;

 private:
  const Dataset* dataset_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> by_video_frame_;
};

}  // namespace trainer::data
