#pragma once
// A lightning-pose model directory opened here (issue 27, item 3): its config.yaml and
// the Lightning checkpoint that lightning-pose's ckpt_path_from_base_path picks, turned
// into a trainer checkpoint that `predict` reads. The trainer checkpoint is kept beside
// the .ckpt as `<ckpt>.trainer.h5` (written atomically, remade when the .ckpt is newer),
// so a kill leaves no partial file and a second prediction converts nothing.
#include <string>  // std::string
#include <vector>  // std::vector

#include "app/commands.hpp"           // Args
#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore

namespace trainer::app {

// Whether `dir` is a lightning-pose model directory: config.yaml and tb_logs/, and no
// trainer checkpoints/ (a trainer run folder has both since it writes config.yaml too).
bool is_lightning_pose_model_dir(const std::string& dir);

struct LightningPoseModel {
  std::string config_yaml;  // DIR/config.yaml
  std::string ckpt;         // the Lightning checkpoint used
  std::string checkpoint;   // the trainer checkpoint made of it (.h5)
};

// Finds the checkpoint as lightning-pose does (tb_logs/<model_name>/version_*/
// checkpoints/*.ckpt: the newest version's *-best.ckpt, else its highest step) and
// converts it, reading config.yaml with the configuration changes among `user_args`
// (--overrides, --section.key) and its data folders cleared first
// (model_folder_overrides). UserError (exit 2) for a directory without a checkpoint, a
// model type or backbone this trainer does not have, and a .ckpt whose tensors do not
// fit the model its config.yaml describes.
LightningPoseModel open_lightning_pose_model(const std::string& dir, const Args& user_args = {});

// Overrides that clear what predicting from a lightning-pose model folder does not use,
// and its config.yaml may name through lightning-pose's own resolvers
// (${LP_ROOT_PATH:}/data/...): the unlabelled videos (data.video_dir,
// eval.test_videos_directory, and model.losses_to_use, whose unsupervised losses need
// them) and, unless it predicts labelled frames, the labelled data's folder
// (data.data_dir).
std::vector<std::string> model_folder_overrides(bool labelled_frames);

// The weights file a folder named as backbone weights stands for: a lightning-pose
// model directory's checkpoint (as above, not converted: the pretrained-weights reader
// takes .ckpt files), a trainer run folder's checkpoints/best.h5 (else last.h5);
// `path` itself when it is not such a folder.
std::string weights_file_of(const std::string& path);

// lightning-pose's model.checkpoint: the .ckpt a path names (itself; in a folder, the
// one a lightning-pose model directory's ckpt_path_from_base_path picks, else the
// first *.ckpt below it in name order, as lightning-pose globs it). UserError when
// there is none.
std::string lightning_pose_ckpt_of(const std::string& path);

struct LightningPoseWeights {
  int loaded = 0;   // tensors of the model loaded from the .ckpt
  int skipped = 0;  // tensors of the .ckpt that fit none of the model's (another head, the losses')
  int kept = 0;     // tensors of the model the .ckpt lacks (they keep their initial values)
};

// Loads a lightning-pose .ckpt's state_dict into `store` as lightning-pose's
// model.checkpoint does (load_state_dict(strict=False)): each tensor that maps to one
// of the model's by name and shape, the others skipped; not its optimizer state.
// UserError when none fits.
LightningPoseWeights load_lightning_pose_weights(const std::string& ckpt, model::ParameterStore& store,
                                                 compute::Stream& stream);

}  // namespace trainer::app
