// The run folder's lightning-pose files (app/lp_model_dir.hpp): the Lightning
// checkpoint holds every tensor of the trainer checkpoint under lightning-pose's
// name with the same values, its name says the epoch and step, one best checkpoint
// stays; train_status.json. PyTorch loads the checkpoint into lightning-pose's module
// layout in tests/integration/lp_model_dir.sh.
#include <catch2/catch.hpp>

#include <cstring>     // std::memcmp
#include <filesystem>  // std::filesystem::temp_directory_path, remove_all
#include <fstream>     // std::ifstream
#include <algorithm>   // std::equal
#include <map>         // std::map
#include <sstream>     // std::stringstream
#include <unistd.h>    // getpid
#include <vector>      // std::vector

#include "app/lp_model_dir.hpp"
#include "app/lp_model_import.hpp"  // lightning_pose_ckpt_of, load_lightning_pose_weights
#include "compute/backend.hpp"
#include "config/config.hpp"
#include "model/heatmap_model.hpp"
#include "model/lightning_pose_names.hpp"
#include "model/make_model.hpp"  // make_pose_model
#include "train/checkpoint.hpp"
#include "util/error.hpp"  // UserError
#include "util/torch_file.hpp"

using namespace trainer;

namespace {
struct TempDir {
  std::string path = (std::filesystem::temp_directory_path() / ("lp_model_dir_" + std::to_string(::getpid()))).string();
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};
}  // namespace

TEST_CASE("lightning-pose checkpoint: every tensor under lightning-pose's name, same values", "[app][lp_model_dir]") {
  TempDir dir;
  auto backend = compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  model::HeatmapModel net(*backend, model::ModelSpec{"resnet18", 3, 2});
  net.initialize(7, stream);
  net.store().counters()[0].value = 42;
  train::TrainingState state;
  state.epochs_completed = 5;
  state.global_step = 120;
  state.model_type = "heatmap";
  state.backbone = "resnet18";
  state.num_keypoints = 3;
  state.downsample_factor = 2;
  const std::string h5 = dir.path + "/best.h5";
  train::save_checkpoint(h5, net.store(), nullptr, state, stream);

  Config config;
  config.model.backbone = "resnet18";
  const std::string version = dir.path + "/tb_logs/test/version_0";
  std::filesystem::create_directories(version + "/checkpoints");
  std::ofstream(version + "/checkpoints/epoch=1-step=40-best.ckpt") << "older";
  const std::string ckpt = app::write_lightning_pose_checkpoint(config, h5, version);
  CHECK(ckpt == version + "/checkpoints/epoch=4-step=120-best.ckpt");
  CHECK(!std::filesystem::exists(version + "/checkpoints/epoch=1-step=40-best.ckpt"));  // one best

  const auto tensors = read_torch_state_dict(ckpt);
  const auto names = net.store().state_dict_names();
  REQUIRE(tensors.size() == names.size());
  std::map<std::string, const StoredTensor*> by_name;
  for (const auto& t : tensors) by_name[t.name] = &t;
  for (std::size_t i = 0; i < net.store().parameters().size(); ++i) {
    const auto& e = net.store().parameters()[i];
    const auto it = by_name.find(model::lightning_pose_state_name(e.name));
    REQUIRE(it != by_name.end());
    const auto values = net.store().download_param(i, stream);
    INFO(e.name);
    REQUIRE(it->second->bytes.size() == values.size() * sizeof(float));
    CHECK(std::memcmp(it->second->bytes.data(), values.data(), it->second->bytes.size()) == 0);
  }
  const auto counter = by_name.find("backbone.1.num_batches_tracked");
  REQUIRE(counter != by_name.end());
  std::int64_t tracked = 0;
  std::memcpy(&tracked, counter->second->bytes.data(), sizeof tracked);
  CHECK(tracked == 42);
}

TEST_CASE("train_status.json as lightning-pose's progress tracker writes it", "[app][lp_model_dir]") {
  TempDir dir;
  app::write_train_status(dir.path, "COMPLETED", 3, 3);
  std::ifstream in(dir.path + "/train_status.json");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().rfind("{\"status\": \"COMPLETED\", \"progress\": {\"completed\": 3, \"total\": 3, \"timestamp\": ", 0) == 0);
}

TEST_CASE("model.checkpoint: lightning-pose's strict=False load, head included when it fits", "[app][lp_model_dir]") {
  TempDir dir;
  auto backend = compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  model::HeatmapModel source(*backend, model::ModelSpec{"resnet18", 3, 2});
  source.initialize(7, stream);
  train::TrainingState state;
  state.model_type = "heatmap";
  state.backbone = "resnet18";
  state.num_keypoints = 3;
  state.downsample_factor = 2;
  const std::string h5 = dir.path + "/best.h5";
  train::save_checkpoint(h5, source.store(), nullptr, state, stream);
  Config config;
  config.model.backbone = "resnet18";
  const std::string ckpt = app::write_lightning_pose_checkpoint(config, h5, dir.path + "/tb_logs/test/version_0");
  // A folder finds its .ckpt; a file is itself.
  CHECK(app::lightning_pose_ckpt_of(dir.path + "/tb_logs") == ckpt);
  CHECK(app::lightning_pose_ckpt_of(ckpt) == ckpt);
  CHECK_THROWS_AS(app::lightning_pose_ckpt_of(dir.path + "/none.ckpt"), UserError);

  const auto params = [&](model::HeatmapModel& m) {
    std::vector<float> all;
    for (std::size_t i = 0; i < m.store().parameters().size(); ++i) {
      const auto v = m.store().download_param(i, stream);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  SECTION("the same model: every tensor") {
    model::HeatmapModel same(*backend, model::ModelSpec{"resnet18", 3, 2});
    same.initialize(99, stream);
    const auto got = app::load_lightning_pose_weights(ckpt, same.store(), stream);
    CHECK(got.kept == 0);
    CHECK(got.skipped == 0);
    CHECK(params(same) == params(source));
  }
  SECTION("another keypoint count: the backbone, the head keeps its initial weights") {
    model::HeatmapModel other(*backend, model::ModelSpec{"resnet18", 5, 2});
    other.initialize(99, stream);
    const auto head = other.store().group_range(model::ParamGroup::head);
    const auto before = params(other);
    const auto got = app::load_lightning_pose_weights(ckpt, other.store(), stream);
    CHECK(got.skipped == 4);  // the head's two transposed convolutions, weight and bias
    CHECK(got.kept == 4);
    const auto after = params(other), src = params(source);
    CHECK(std::equal(after.begin() + long(head.offset), after.end(), before.begin() + long(head.offset)));
    CHECK(std::equal(after.begin(), after.begin() + long(head.offset), src.begin()));
  }
}

TEST_CASE("lightning-pose checkpoint of the context model: every tensor and alias, same values",
          "[app][lp_model_dir]") {
  TempDir dir;
  auto backend = compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  const auto net = model::make_pose_model(*backend, "heatmap_mhcrnn", model::ModelSpec{"resnet18", 3, 2});
  net->initialize(11, stream);
  train::TrainingState state;
  state.epochs_completed = 2;
  state.global_step = 8;
  state.model_type = "heatmap_mhcrnn";
  state.backbone = "resnet18";
  state.num_keypoints = 3;
  state.downsample_factor = 2;
  const std::string h5 = dir.path + "/best.h5";
  train::save_checkpoint(h5, net->store(), nullptr, state, stream);
  Config config;
  config.model.backbone = "resnet18";
  config.model.model_type = "heatmap_mhcrnn";
  const std::string ckpt = app::write_lightning_pose_checkpoint(config, h5, dir.path + "/tb_logs/ctx/version_0");

  const auto tensors = read_torch_state_dict(ckpt);
  std::map<std::string, const StoredTensor*> by_name;
  for (const auto& t : tensors) by_name[t.name] = &t;
  std::size_t aliases = 0;
  for (std::size_t i = 0; i < net->store().parameters().size(); ++i) {
    const auto& e = net->store().parameters()[i];
    const auto values = net->store().download_param(i, stream);
    std::vector<std::string> names = {model::lightning_pose_state_name(e.name)};
    for (const auto& alias : model::lightning_pose_state_aliases(e.name, true)) names.push_back(alias);
    aliases += names.size() - 1;
    for (const auto& name : names) {
      INFO(e.name << " as " << name);
      const auto it = by_name.find(name);
      REQUIRE(it != by_name.end());
      REQUIRE(it->second->bytes.size() == values.size() * sizeof(float));
      CHECK(std::memcmp(it->second->bytes.data(), values.data(), it->second->bytes.size()) == 0);
    }
  }
  CHECK(aliases == 14);
  CHECK(tensors.size() == net->store().state_dict_names().size() + aliases);
  // And back: the .ckpt's tensors fill a fresh context model exactly (the aliases skipped).
  const auto fresh = model::make_pose_model(*backend, "heatmap_mhcrnn", model::ModelSpec{"resnet18", 3, 2});
  fresh->initialize(99, stream);
  const auto got = app::load_lightning_pose_weights(ckpt, fresh->store(), stream);
  CHECK(got.kept == 0);
  CHECK(got.skipped == 14);
  for (std::size_t i = 0; i < net->store().parameters().size(); ++i)
    CHECK(fresh->store().download_param(i, stream) == net->store().download_param(i, stream));
}
