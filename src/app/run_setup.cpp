// Shared run setup for train and predict (see run_setup.hpp).
#include "app/run_setup.hpp"

#include <mpi.h>       // MPI_Bcast, MPI_Barrier
#include <sys/stat.h>  // mkdir, stat

#include <cerrno>   // errno
#include <cstring>  // std::strerror
#include <ctime>    // std::time, localtime_r, strftime

#include "compute/precision.hpp"  // compute::parse_precision
#ifdef TRAINER_WITH_CUDA
#include "compute/cuda/cuda_backend.hpp"  // CudaBackendOptions (TF32)
#endif
#include "data/sampler.hpp"          // data::samples_per_rank
#include "data/synth.hpp"            // data::ensure_synthetic_dataset
#include "runtime/watchdog.hpp"      // runtime::watch: deadlines for the collectives here
#include "util/atomic_write.hpp"     // write_file_atomically, remove_stale_temp_files
#include "util/error.hpp"            // UserError, MPI_CHECK

namespace trainer::app {

std::string cpu_precision_warning(const std::string& precision) {
  return "precision " + precision +
         " on CPU emulates the 16-bit rounding of the GPU path in fp32: same numerics, no speed-up";
}

std::unique_ptr<compute::Backend> make_backend(const BackendRequest& request, const Log& log) {
  const compute::Precision precision = compute::parse_precision(request.precision);
#ifdef TRAINER_WITH_CUDA
  if (request.gpu) {
    compute::CudaBackendOptions options;
    options.precision = precision;
    options.allow_tf32 = request.float32_matmul == "high";
    return compute::make_cuda_backend(request.device, options);
  }
#endif
  if (request.gpu)
    throw UserError("a GPU was asked for, but this trainer was built without the GPU path",
                    "rebuild with -DTRAINER_CUDA=ON or use --accelerator cpu");
  if (precision != compute::Precision::fp32) log.warn(cpu_precision_warning(request.precision));
  return compute::make_cpu_backend(request.cpu_threads, precision);
}

std::unique_ptr<compute::Backend> make_run_backend(const Config& config, const runtime::RunPlan& plan,
                                                   const Log& log) {
  BackendRequest request;
  request.gpu = plan.accelerator == "gpu";
  request.device = plan.rank.device;
  request.precision = config.model.precision;
  request.float32_matmul = config.model.float32_matmul_precision;
  return make_backend(request, log);
}

void barrier(const runtime::World& world) {
  if (world.comm == MPI_COMM_NULL || world.size == 1) return;
  const auto stage = runtime::watch(world.watchdog, "start-up: barrier (waiting for every rank)");
  MPI_CHECK(MPI_Barrier(world.comm));
}

std::string broadcast_string(const runtime::World& world, const std::string& value) {
  if (world.comm == MPI_COMM_NULL || world.size == 1) return value;
  const auto stage = runtime::watch(world.watchdog, "start-up: broadcast from rank 0");
  long long n = static_cast<long long>(value.size());
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, world.comm));
  std::string out = world.rank == 0 ? value : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) MPI_CHECK(MPI_Bcast(&out[0], static_cast<int>(n), MPI_CHAR, 0, world.comm));
  return out;
}

RunData open_run_data(const Config& config, const runtime::World& world, const Log& log) {
  RunData run;
  if (config.data.data_files.empty()) {
    const std::string path = config.data.synthetic_file;
    std::string error;
    if (world.rank == 0) {
      try {
        data::SynthOptions options;
        options.keypoints = config.data.num_keypoints > 0 ? config.data.num_keypoints : options.keypoints;
        options.seed = config.training.rng_seed_data_pt;
        const auto slash = path.rfind('/');
        if (slash != std::string::npos) make_directories(path.substr(0, slash));
        remove_stale_temp_files_in(folder_of(path), log);
        if (data::ensure_synthetic_dataset(path, options))
          log.info("generated the synthetic demo data set " + path + " (" + std::to_string(options.frames) +
                   " frames, " + std::to_string(options.size) + "x" + std::to_string(options.size) + ")");
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    // Every rank learns whether rank 0 succeeded, so none waits forever.
    error = broadcast_string(world, error);
    if (!error.empty()) throw UserError("could not create the synthetic data set: " + error);
    run.files = {path};
  } else {
    run.files = data::expand_data_files(config.data.data_files);
  }
  data::DatasetExpectations expect;
  expect.num_keypoints = config.data.num_keypoints;
  expect.keypoint_names = config.data.keypoint_names;
  run.dataset = std::make_unique<data::Dataset>(data::Dataset::open(run.files, expect));
  const auto sizes = data::split_sizes_from_probabilities(run.dataset->size(), config.training.train_prob,
                                                          config.training.val_prob);
  run.split = data::make_split(run.dataset->size(), sizes, config.training.rng_seed_data_pt);
  return run;
}

void check_train_batch_fits(const Config& config, const runtime::RunPlan& plan, const RunData& run,
                            const runtime::World& world) {
  const auto frames = static_cast<std::int64_t>(run.split.train.size());
  data::check_batch_fits("train", frames, config.training.train_batch_size, config.training.drop_last, run.files[0]);
  // With drop_last each rank keeps floor(frames / ranks) rows: fewer than its batch is no step at all.
  const std::int64_t per_rank = data::samples_per_rank(frames, world.size, config.training.drop_last);
  if (config.training.drop_last && per_rank < plan.rank.train_batch_size)
    throw UserError("the train split of " + run.files[0] + " (" + std::to_string(frames) + " frames) gives each of " +
                        std::to_string(world.size) + " ranks " + std::to_string(per_rank) +
                        " frames, fewer than its batch of " + std::to_string(plan.rank.train_batch_size) +
                        ": with drop_last there would be no batch at all",
                    "lower training.train_batch_size, set drop_last = false, or label more frames");
}

std::string timestamped_output_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "outputs/%Y-%m-%d/%H-%M-%S", &tm);
  return buf;
}

void make_directories(const std::string& path) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0775) != 0 && errno != EEXIST)
      throw UserError("cannot create folder '" + partial + "': " + std::strerror(errno),
                      "choose another --out folder");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UserError("'" + path + "' is not a folder", "choose another --out folder");
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void remove_stale_temp_files_in(const std::string& folder, const Log& log) {
  for (const auto& path : remove_stale_temp_files(folder))
    log.info("removed " + path + ", a temporary file left by a process that no longer runs");
}

void write_text_atomically(const std::string& path, const std::string& text) { write_file_atomically(path, text); }

}  // namespace trainer::app
