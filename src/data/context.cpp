// Context frame lookup (see context.hpp).
#include "data/context.hpp"

#include <algorithm>  // std::max

#include "data/dataset.hpp"  // Dataset
#include "util/error.hpp"    // UserError

namespace trainer::data {

ContextIndex::ContextIndex(const Dataset& dataset) : dataset_(&dataset) {
  if (!dataset.has_video_info()) {
    throw UserError("model_type heatmap_mhcrnn needs context frames, but data file " + dataset.files().front() +
                        " has no /video_id and /frame_number datasets",
                    "re-import the labels with this version of `trainer import` (it records frame numbers), generate video data "
                    "with `trainer synth --videos V`, or use model_type = heatmap");
  }
  for (std::int64_t i = 0; i < dataset.size(); ++i) {
    // A repeated (video, frame) keeps its first occurrence.
    by_video_frame_.emplace(std::make_pair(dataset.video_id(i), dataset.frame_number(i)), i);
  }
  // Frames that are only context (a labelled frame with the same number wins).
  for (std::int64_t j = 0; j < dataset.context_size(); ++j)
    by_video_frame_.emplace(std::make_pair(dataset.context_video_id(j), dataset.context_frame_number(j)), -1 - j);
}

std::array<std::int64_t, kContextFrames> ContextIndex::around(std::int64_t frame) const {
  // lightning-pose's rule (utils/io.py get_context_img_paths and its dataset): frame
  // numbers t-2 .. t+2, negative ones floored at 0; a frame that does not exist is
  // replaced by the centre frame.
  const std::int64_t video = dataset_->video_id(frame);
  const std::int64_t t = dataset_->frame_number(frame);
  std::array<std::int64_t, kContextFrames> out{};
  constexpr int half = kContextFrames / 2;
  for (int d = -half; d <= half; ++d) {
    const auto it = by_video_frame_.find({video, std::max<std::int64_t>(t + d, 0)});
    out[static_cast<size_t>(d + half)] = it != by_video_frame_.end() ? it->second : frame;
  }
  return out;
}

std::int64_t ContextIndex::frames_without_neighbours() const {
  std::int64_t alone = 0;
  for (std::int64_t frame = 0; frame < dataset_->size(); ++frame) {
    const auto context = around(frame);
    bool any = false;
    for (std::int64_t f : context) any = any || f != frame;
    alone += any ? 0 : 1;
  }
  return alone;
}

}  // namespace trainer::data
