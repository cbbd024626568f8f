#pragma once
// Where a video's decoding runs start (data/video_batches.hpp): the frames [begin,
// ...) are cut into chunks of `chunk_frames`, and a run of consecutive chunks is
// decoded by one thread after one seek. A seek decodes from the keyframe before its
// frame, so a run starts at the first chunk whose first decoded frame (`lead` frames
// before the chunk: a context model's two) is at or after a keyframe. Returns the
// chunk indices where runs start, ascending, beginning with 0, then `num_chunks`.
// Without keyframes every chunk is a run (a seek each).
#include <vector>

namespace trainer::data {

std::vector<long> video_runs(const std::vector<long>& keyframes, long begin, long chunk_frames, long num_chunks,
                             long lead);

}  // namespace trainer::data
