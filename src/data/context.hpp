#pragma once
// Context frames for heatmap_mhcrnn, by lightning-pose's rule for labelled frames:
// frame numbers t-2 .. t+2 of the same video (for imported labels: the same folder and
// file-name pattern, see import.hpp), negative numbers floored at 0, and a neighbour
// that does not exist replaced by the centre frame: frame 0 gets (0, 0, 0, 1, 2), the
// last frame L (L-2, L-1, L, L, L), and L-1 gets (L-3, L-2, L-1, L, L-1).
#include <array>    // std::array
#include <cstdint>  // std::int64_t
#include <map>      // std::map
#include <utility>  // std::pair

namespace trainer::data {

class Dataset;

inline constexpr int kContextFrames = 5;
inline constexpr int kHalfContext = kContextFrames / 2;  // frames on either side of the centre

class ContextIndex {
 public:
  // Throws UserError when the dataset has no /video_id and /frame_number.
  explicit ContextIndex(const Dataset& dataset);
  // Global indices of frames t-2, t-1, t, t+1, t+2 around global frame `frame`; a
  // negative value v is the context-only frame -1 - v (Dataset::read_context_image).
  std::array<std::int64_t, kContextFrames> around(std::int64_t frame) const;
  // Labelled frames none of whose neighbours exist: their context is the frame five
  // times (a project that labelled every 5th frame and kept only those images).
  std::int64_t frames_without_neighbours() const;

 private:
  const Dataset* dataset_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> by_video_frame_;
};

}  // namespace trainer::data
