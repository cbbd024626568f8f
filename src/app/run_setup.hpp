#pragma once
// What `train` and `predict` share before the model exists: the dataset (the
// configured files, or the synthetic demo data generated on first use), the
// train/val/test split, the output folder, and small collective helpers.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"      // Config
#include "compute/backend.hpp"  // compute::Backend
#include "data/dataset.hpp"    // data::Dataset
#include "data/split.hpp"      // data::Split
#include "runtime/run_plan.hpp"  // runtime::RunPlan
#include "runtime/world.hpp"   // runtime::World
#include "util/log.hpp"        // Log

namespace trainer::app {

struct RunData {
  std::vector<std::string> files;
  std::unique_ptr<data::Dataset> dataset;
  data::Split split;
};

// Collective: with no data_files, rank 0 writes the synthetic demo data set
// (data.synthetic_file) if it does not exist yet; every rank then opens the data.
RunData open_run_data(const Config& config, const runtime::World& world, const Log& log);

// Every rank, before any work: a train batch larger than the train split (or, with
// drop_last, than a rank's share of it) is a UserError instead of a run of no steps.
void check_train_batch_fits(const Config& config, const runtime::RunPlan& plan, const RunData& run,
                            const runtime::World& world);

// What a command asks of the compute backend.
struct BackendRequest {
  bool gpu = false;                         // CUDA on `device`, else the CPU
  int device = 0;
  std::string precision = "32";             // model.precision
  std::string float32_matmul = "highest";   // model.float32_matmul_precision (GPU only)
  int cpu_threads = 0;                      // 0: OMP_NUM_THREADS or all cores
};

// The one place backends are made (train, predict, bench step): a GPU asked of a
// CPU-only build is a user error; a mixed precision on the CPU is emulated (same
// numerics as the GPU, no speed-up) and rank 0 warns once.
std::unique_ptr<compute::Backend> make_backend(const BackendRequest& request, const Log& log);

// The run's backend: CUDA on the planned GPU, or the CPU, with the configured precision.
std::unique_ptr<compute::Backend> make_run_backend(const Config& config, const runtime::RunPlan& plan,
                                                   const Log& log);

// The warning for a mixed `precision` ("bf16-mixed", "16-mixed") on the CPU.
std::string cpu_precision_warning(const std::string& precision);

// Rank 0's string on every rank (collective).
std::string broadcast_string(const runtime::World& world, const std::string& value);
// Collective barrier on the run's communicator.
void barrier(const runtime::World& world);

// outputs/YYYY-MM-DD/HH-MM-SS (local time), as lightning-pose's hydra folders.
std::string timestamped_output_dir();
// mkdir -p; throws UserError when it cannot.
void make_directories(const std::string& path);
// The folder of a file path ("." for a bare file name).
std::string folder_of(const std::string& path);
// At start: removes the temporary files that killed writers left in `folder`
// (remove_stale_temp_files, util/atomic_write.hpp) and says which.
void remove_stale_temp_files_in(const std::string& folder, const Log& log);
// Writes a text file atomically (temporary file, fsync, rename, fsync of the folder).
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace trainer::app
