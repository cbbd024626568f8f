// libFuzzer harness: a real checkpoint with 1 to 8 bytes overwritten
// (damage_mutator.hpp), read as --resume reads it (training state, model, Adam
// state) and as --init-weights does. Any failed HDF5 call must come back as the
// UserError that names the file as damaged (exit 2); before, it reached the user as
// "HDF5 call failed: H5Dopen2(...) (message not aligned)" with exit 1.
//
// The seed is a checkpoint written by train::save_checkpoint for the small model
// below (the layout of every checkpoint: /model tensors, /optimizer moments and
// attributes, /state attributes and the configuration dataset), small enough for
// libFuzzer's -max_len. It is regenerated with
//   TRAINER_FUZZ_WRITE_SEED=tests/fuzz/corpus/fuzz_damaged_checkpoint/tiny.h5 build-fuzz/fuzz_damaged_checkpoint
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <cstdio>   // std::printf
#include <cstdlib>  // std::getenv, std::exit
#include <memory>   // std::unique_ptr

#include "compute/backend.hpp"        // compute::make_cpu_backend
#include "damage_mutator.hpp"         // LLVMFuzzerCustomMutator
#include "fuzz_support.hpp"           // ScratchFile, expect_user_errors_only
#include "model/parameter_store.hpp"  // model::ParameterStore
#include "train/checkpoint.hpp"       // load_*, save_checkpoint
#include "train/optimizer.hpp"        // train::Optimizer

namespace {

using namespace trainer;

// A backbone conv with batch norm and a head layer: every kind of entry a model has.
struct TinyModel {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(1);
  model::ParameterStore store{*backend};
  std::unique_ptr<train::Optimizer> optimizer;
  TinyModel() {
    const model::InitRule init{model::InitRule::kaiming_normal_fan_out, 1.0, 27, 36};
    store.add_parameter("backbone.conv1.weight", {4, 3, 3, 3}, model::ParamGroup::backbone, init);
    store.add_parameter("backbone.bn1.weight", {4}, model::ParamGroup::backbone, {model::InitRule::ones});
    store.add_parameter("backbone.bn1.bias", {4}, model::ParamGroup::backbone, {});
    store.add_buffer("backbone.bn1.running_mean", {4}, model::ParamGroup::backbone, {});
    store.add_buffer("backbone.bn1.running_var", {4}, model::ParamGroup::backbone, {model::InitRule::ones});
    store.add_counter("backbone.bn1.num_batches_tracked");
    store.add_parameter("head.weight", {2, 4, 1, 1}, model::ParamGroup::head, init);
    store.add_parameter("head.bias", {2}, model::ParamGroup::head, {});
    store.allocate();
    store.initialize(3, backend->default_stream());
    optimizer = std::make_unique<train::Optimizer>(store, train::OptimizerConfig{});
  }
};

TinyModel& tiny() {
  static TinyModel model;
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("TRAINER_FUZZ_WRITE_SEED")) {
    train::TrainingState state;
    state.epochs_completed = 2;
    state.global_step = 6;
    state.config_text = "[data]\ndata_files = d.h5\n[model]\nbackbone = resnet18\n";
    state.model_type = "heatmap";
    state.backbone = "resnet18";
    state.num_keypoints = 2;
    state.downsample_factor = 2;
    train::save_checkpoint(seed, tiny().store, tiny().optimizer.get(), state, tiny().backend->default_stream());
    std::printf("wrote %s\n", seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::ScratchFile input(".h5");
  input.write(data, size);
  TinyModel& m = tiny();
  fuzz::expect_user_errors_only([&] { train::load_training_state(input.path()); });
  fuzz::expect_user_errors_only([&] { train::load_model(input.path(), m.store, m.backend->default_stream()); });
  fuzz::expect_user_errors_only(
      [&] { train::load_optimizer(input.path(), *m.optimizer, m.backend->default_stream()); });
  fuzz::expect_user_errors_only(
      [&] { train::load_backbone_weights(input.path(), m.store, m.backend->default_stream()); });
  fuzz::expect_no_open_hdf5_objects();
  return 0;
}
