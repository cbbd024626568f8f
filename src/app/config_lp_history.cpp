// Keys of earlier lightning-pose versions (1.x and 2.x, and the 0.0.x releases before
// them) that its current config_default.yaml no longer has: an old project's
// config.yaml is read, not stopped at its first line. Each is accepted (silently when
// it changed nothing in lightning-pose either, by the time it was dropped), or refused
// by name when its value asks for a feature that is gone. Found by walking the history
// of lightning-pose's scripts/configs/*.yaml over its release tags; docs/CONFIG.md has
// a row for each, with the version that dropped it.
#include "app/config_lp_keys.hpp"   // lp_history_rules, LpKeyRule
#include "app/config_lp_rules.hpp"  // ignored, ignored_section, only_if, note_unless, never, is_false, is_true

namespace trainer::app::config_detail {

std::vector<LpKeyRule> lp_history_rules() {
  const char* scripts = "lightning-pose's FiftyOne and plotting scripts (not training): accepted, not used";
  return {
      // data
      // <= 1.4: checked against the frames; since #187 (1.5) sizes come from the images, as here.
      ignored_section("data.image_orig_dims", "frame size of lightning-pose <= 1.4: accepted, not used (read "
                                              "from the images)"),
      // 1.5.x: a two-stage detector + crop pipeline, dropped in 1.6 as unused.
      only_if("data.dynamic_crop", "false accepted; true refused (lightning-pose 1.5's two-stage crop)", is_false,
              "the two-stage dynamic crop of lightning-pose 1.5 is not supported (1.6 dropped it)",
              "remove data.dynamic_crop; crop the frames beforehand"),
      ignored_section("data.detector", "lightning-pose 1.5's crop detector settings: accepted, not used"),
      only_if("data.num_max_instances", "1 accepted; more refused (lightning-pose 1.5)", equals_number(1),
              "one animal per frame only: more instances are not supported",
              "remove data.num_max_instances (1)"),
      // training
      // <= 1.5: the one GPU to train on; 1.6 replaced it by training.num_gpus.
      note_unless("training.gpu_id", "lightning-pose <= 1.5's GPU index: accepted, no effect", equals_number(0),
                  "lightning-pose <= 1.5's GPU index has no effect; the GPUs come from distributed.devices "
                  "(e.g. --devices [N]) and the launcher"),
      // model
      // 0.0.x: the linear context model, removed in #112 (before 1.0).
      only_if("model.do_context", "false accepted; true refused unless model.model_type is heatmap_mhcrnn",
              [](const YamlLeaf& leaf, const ValueLookup& others) {
                const std::string* type = others("model.model_type");
                return is_false(leaf, others) || (type && *type == "heatmap_mhcrnn");
              },
              "lightning-pose's linear context model (model.do_context: true) was removed before lightning-pose "
              "1.0 (#112)",
              "for context frames set model.model_type: heatmap_mhcrnn and remove model.do_context"),
      // 0.0.1: learned unsupervised loss weights, removed before 0.0.2.
      only_if("model.learn_weights", "false accepted; true refused (lightning-pose 0.0.1)", is_false,
              "learned unsupervised loss weights were removed from lightning-pose (0.0.2)",
              "set the weights with losses.<loss>.log_weight"),
      // dali: the video reader's own settings
      ignored_section("dali.general", "NVIDIA DALI's seed, threads and device (lightning-pose <= 1.7): accepted, "
                                      "not used"),
      only_if("dali.context.train.consecutive_sequences", "true accepted; false refused (lightning-pose 0.0.1)",
              is_true, "unlabelled video frames are read as consecutive sequences only (lightning-pose 0.0.2 "
                       "dropped the option)",
              "remove dali.context.train.consecutive_sequences"),
      // training: Lightning Trainer settings of 0.0.1 are the current rules' (limit_train_batches, ...).
      // eval: scripts/predict_new_vids.py and the FiftyOne app of lightning-pose <= 2.0
      ignored("eval.create_labeled_video", "scripts/predict_new_vids.py's labeled videos (lightning-pose <= 1.3): "
                                           "accepted, not used (see eval.save_vids_after_training)"),
      ignored_section("eval.fiftyone", scripts),
      ignored("eval.hydra_paths", scripts),
      ignored("eval.saved_vid_preds_dir", scripts),
      ignored("eval.video_file_to_plot", scripts),
      ignored("eval.pred_csv_files_to_plot", scripts),
  };
}

}  // namespace trainer::app::config_detail
