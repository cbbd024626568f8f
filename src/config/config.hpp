#pragma once
// The effective configuration of a run. Keys mirror lightning-pose's YAML: its own
// config.yaml is read directly (app/config_lp_keys.cpp), the INI file has one section
// per struct below, and every key is also a command-line option `--<section>.<key>`.
// Plain data, below every layer that reads it (src/LAYERS); parsing, validation,
// --print-config and the key table live in app/config_*.cpp. A NAME key's accepted
// names are exported by the layer that implements the choice.
#include <cstdint>  // std::uint64_t
#include <optional> // std::optional
#include <string>   // std::string
#include <vector>   // std::vector

namespace trainer {

struct DataConfig {
  std::vector<std::string> data_files;     // HDF5 files or glob patterns; empty: synthetic demo data
  int image_resize_height = 256;           // image_resize_dims.height (multiple of 32)
  int image_resize_width = 256;            // image_resize_dims.width (multiple of 32)
  int num_keypoints = 0;                   // 0: take it from the data
  std::vector<std::string> keypoint_names; // empty: take them from the data
  int downsample_factor = 2;               // heatmap = image / 2^d, d in {1,2,3}
  std::string synthetic_file = "outputs/synthetic.h5"; // generated on first use when data_files is empty
  std::string data_dir;                    // lightning-pose project folder: csv_file and image paths are relative to it
  std::string csv_file;                    // labels to import (cached HDF5 next to the run); empty: use data_files
  std::string video_dir;                   // unlabelled videos for the unsupervised losses (a folder or one file)
  std::vector<std::vector<int>> mirrored_column_matches;  // pca_multiview: per view, the keypoints matched across views
  std::vector<int> columns_for_singleview_pca;  // pca_singleview: keypoints in the PCA; empty: all
};

struct TrainingConfig {
  std::string imgaug = "dlc";              // one of data::imgaug_names()
  bool imgaug_hflip = false;               // random horizontal flips, _left/_right keypoints swapped
  int train_batch_size = 16;               // global, across all GPUs
  int val_batch_size = 32;                 // global
  int test_batch_size = 32;                // not divided
  int context_batch_size = 16;             // heatmap_mhcrnn only (dali.context.train.batch_size)
  int unlabeled_sequence_length = 32;      // global unlabelled frames per step (dali.base.train.sequence_length)
  int num_gpus = 0;                        // 0: from devices/world (warns when set to 0 explicitly)
  int num_workers = -1;                    // -1: from the batch plan
  int max_epochs = 300;
  int min_epochs = 300;                    // lightning-pose's default; only matters with early_stopping
  long max_steps = -1;                     // -1: unlimited
  double train_prob = 0.95;
  std::optional<double> val_prob = 0.05;  // empty (null): half of 1 - train_prob, as lightning-pose
  double train_frames = 1.0;               // lightning-pose: <= 1 a fraction of the train split, > 1 a count
  std::uint64_t rng_seed_data_pt = 0;
  std::uint64_t rng_seed_model_pt = 0;
  std::string optimizer = "Adam";          // one of train::optimizer_names()
  double learning_rate = 1e-3;
  // AdamW only. Empty (`auto`): torch's default for the optimizer, which lightning-pose's
  // AdamW (built with the learning rate alone) trains with: train::default_weight_decay.
  std::optional<double> weight_decay;
  std::vector<int> lr_scheduler_milestones = {150, 200, 250}; // multisteplr.milestones
  double lr_scheduler_gamma = 0.5;         // multisteplr.gamma
  std::string lr_scaling = "none";         // one of runtime::lr_scaling_names()
  int reference_batch_size = 16;           // batch the learning rate was tuned for
  int unfreezing_epoch = 20;
  int log_every_n_steps = 10;
  int check_val_every_n_epoch = 5;
  int early_stop_patience = 3;             // in validation checks
  bool early_stopping = false;             // lightning-pose's default: train max_epochs
  int ckpt_every_n_epochs = 0;             // 0 (null): none; n: checkpoints/epoch=E-step=S.h5 (+ .ckpt) every n epochs, all kept
  int accumulate_grad_batches = 1;         // batches per optimizer step (Lightning's gradient accumulation)
  // Lightning's count-or-fraction settings, as text (train/batch_limit.hpp reads them):
  std::string limit_train_batches;         // "" (null): lightning-pose's steps per epoch; batches, or a share of the loader
  std::string val_check_interval;          // "" (null): at each validated epoch's end; every n batches, or a share of the epoch
  bool save_weights_only = false;          // best.h5/last.h5 without the optimizer state
  bool uniform_heatmaps_for_nan_keypoints = true;  // missing labels: uniform target that counts in the loss
  bool drop_last = false;
};

struct ModelConfig {
  std::string model_type = "heatmap";      // heatmap | heatmap_mhcrnn
  std::string model_name = "test";         // TensorBoard run name: tb_logs/<model_name>/version_<n>
  std::string backbone = "resnet50";       // resnet18 | resnet34 | resnet50
  std::string backbone_weights;            // pretrained backbone: .pth, .safetensors or trainer .h5; empty: random
  std::string checkpoint;                  // lightning-pose .ckpt (or model folder) whose weights start the run; empty: none
  std::string backbone_checkpoint;         // vitb_imagenet: a ViT-MAE file laid over the encoder's weights; empty: none
  std::string heatmap_loss_type = "mse";   // one of compute::heatmap_loss_names()
  std::vector<std::string> losses_to_use;  // unsupervised losses, each one of train::unsupervised_loss_names()
  std::string precision = "32";            // one of compute::precision_names() (emulated on CPUs)
  std::string float32_matmul_precision = "highest";  // one of compute::float32_matmul_precision_names()
  std::string conv_algorithms = "auto";              // one of compute::conv_algorithms_names()
  bool cuda_graphs = true;                           // one-GPU runs: replay each step's recorded device work
};

struct DistributedConfig {
  std::string backend = "auto";            // one of runtime::backend_names()
  std::string accelerator = "auto";        // one of runtime::accelerator_names()
  std::string devices = "";                // Lightning's table; empty: all visible GPUs
  int num_nodes = 0;                       // 0: from the launcher
  bool broadcast_buffers = true;
  bool sync_batchnorm = true;
  bool manual_gradient_reduction = false;
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  std::string nccl_debug = "";             // one of comm::nccl_debug_names(); sets NCCL_DEBUG when non-empty
  int nccl_socket_nthreads = 0;            // sets NCCL_SOCKET_NTHREADS when > 0
  double collective_timeout = 600.0;       // seconds
  bool slurm_auto_requeue = true;          // on SIGUSR1 under SLURM: checkpoint, then scontrol requeue
};

// What happens after training (lightning-pose's eval section; its defaults).
struct EvalConfig {
  bool predict_vids_after_training = true;  // predict every video of test_videos_directory
  std::string test_videos_directory;        // empty: no videos to predict
  bool save_vids_after_training = false;    // also labeled_videos/<video>_labeled.mp4
  std::string colormap = "cool";            // one of labeled_video_colormap_names()
  double confidence_thresh_for_vid = 0.9;   // keypoints below it are not drawn
  // Video prediction's frames per batch, as lightning-pose's
  // dali.{base,context}.predict.sequence_length: heatmap models predict L frames a
  // batch; heatmap_mhcrnn reads L frames and predicts the L - 4 that have their two
  // context frames on each side.
  int video_sequence_length = 96;
  int context_video_sequence_length = 96;
};

// lightning-pose's unsupervised losses (losses.<name>.*) and the warm-up of their
// weight (callbacks.anneal_weight.*); read only for the losses in model.losses_to_use.
// A loss's weight is 1 / (2 exp(log_weight)); epsilon in original-frame pixels.
struct LossesConfig {
  double temporal_log_weight = 11.0;
  std::vector<double> temporal_epsilon = {20.0};  // one value, or one per keypoint
  double temporal_prob_threshold = 0.05;          // frames whose confidence is below it are left out
  double pca_singleview_log_weight = 11.0;
  std::string pca_singleview_components_to_keep = "0.99";  // a count (3) or a fraction of variance (0.99)
  double pca_singleview_epsilon = -1;                     // < 0: empirical (null in lightning-pose)
  double pca_singleview_empirical_epsilon_percentile = 99.0;
  double pca_singleview_empirical_epsilon_multiplier = 1.0;
  std::string pca_singleview_centering_method;  // "" (null: none), or compute::pca_centering_names()
  double pca_multiview_log_weight = 11.0;
  std::string pca_multiview_components_to_keep = "3";
  double pca_multiview_epsilon = -1;
  double pca_multiview_empirical_epsilon_percentile = 99.0;
  double pca_multiview_empirical_epsilon_multiplier = 1.0;
  double anneal_init_val = 0.0;        // the unsupervised weight's factor at epoch 0
  double anneal_increase_factor = 0.01;  // added per epoch after freeze_until_epoch
  double anneal_final_val = 1.0;
  int anneal_freeze_until_epoch = 60;
};

struct Config {
  DataConfig data;
  TrainingConfig training;
  ModelConfig model;
  DistributedConfig distributed;
  EvalConfig eval;
  LossesConfig losses;
  std::string source_description;          // e.g. "inputs/demo.cfg + command line"
};

}  // namespace trainer
