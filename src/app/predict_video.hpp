#pragma once
// Keypoints for every frame of videos: `trainer predict --video PATH...` and
// lightning-pose's eval.predict_vids_after_training. Writes lightning-pose's
// video_preds/<video>.csv (and <video>_temporal_norm.csv, and with PCA keypoints in the
// configuration <video>_pca_singleview_error.csv / _pca_multiview_error.csv) per video,
// and with
// --labeled-video / eval.save_vids_after_training video_preds/labeled_videos/<video>_labeled.mp4.
#include <string>  // std::string
#include <vector>  // std::vector

#include "app/commands.hpp"      // Args
#include "app/config_parse.hpp"  // CommandLine
#include "config/config.hpp"     // Config
#include "data/dataset.hpp"      // data::Dataset
#include "data/split.hpp"        // data::Split
#include "util/log.hpp"          // Log

namespace trainer::runtime {
class MpiSession;
}

namespace trainer::app {

struct VideoPredictRequest {
  std::string checkpoint;
  std::vector<std::string> inputs;  // video files or folders of videos
  std::string out_dir;              // the video_preds folder (created by rank 0)
  std::vector<std::string> keypoint_names;
  // Also <out_dir>/labeled_videos/<video>_labeled.mp4 (rank 0 encodes), drawn with
  // config.eval.colormap and confidence_thresh_for_vid.
  bool labeled_videos = false;
  // The training split's labels [frames, K, 2] in pixels of the stored frames
  // (label_width x label_height), for the PCA error files: scaled to each video's
  // frame size and fitted as the loss fits them. Empty: no PCA error files.
  std::vector<float> pca_labels;
  int label_width = 0, label_height = 0;
  std::string precision = "32";  // of the forward pass (predict --precision)
};

// The request's pca_labels from the run's data: the training split's labels.
void set_pca_labels(VideoPredictRequest& request, const data::Dataset& dataset, const data::Split& split);

// Collective over the session's ranks: the frames of all videos, in order, are cut
// into one contiguous range per rank (so one long video is shared too); each rank
// predicts its range with decoding threads ahead of inference, and rank 0 writes
// every CSV atomically from the ranks' rows. The result does not depend on the
// number of ranks. Errors (a missing, empty or damaged video) stop every rank.
void predict_videos(runtime::MpiSession& session, const Config& config, const VideoPredictRequest& request,
                    const Log& log);

// `trainer predict --video ...` after its command line was parsed (cmd_predict.cpp).
int run_predict_video(const CommandLine& cl, const Args& args, const std::string& config_note);

}  // namespace trainer::app
