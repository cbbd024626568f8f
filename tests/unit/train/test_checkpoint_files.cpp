// Checkpoint files as inputs and outputs: a configuration of any size is saved (and
// checked before training), older checkpoints with the configuration as an attribute
// still read, a damaged file is a UserError naming it (exit 2, no build path) whether
// its checksum or HDF5 finds the damage, and --init-weights refuses a file of another
// backbone.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>  // std::filesystem
#include <fstream>     // std::fstream
#include <functional>  // std::function
#include <string>      // std::string

#include "../scratch_dir.hpp"  // unit_test::ScratchDir
#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"
#include "train/checkpoint.hpp"
#include "train/optimizer.hpp"
#include "util/error.hpp"
#include "util/h5.hpp"
#include "util/h5_checksum.hpp"  // kChecksumBlockBytes
#include "util/h5_io.hpp"

using namespace trainer;

namespace {


struct Net {
  explicit Net(const std::string& backbone = "resnet18") : net(*backend, model::ModelSpec{backbone, 2, 2}) {
    net.initialize(7, backend->default_stream());
  }
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(1);
  model::HeatmapModel net;
  void save(const std::string& path, const train::TrainingState& state) {
    train::Optimizer optimizer(net.store(), train::OptimizerConfig{});
    train::save_checkpoint(path, net.store(), &optimizer, state, backend->default_stream());
  }
};

// Overwrites bytes of a file in place.
void overwrite(const std::string& path, std::uint64_t at, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("a checkpoint stores a configuration of any size and reads it back", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("ckfiles-config");
  const std::string dir = scratch_dir.str();
  Net n;
  train::TrainingState state;
  state.global_step = 5;
  // A 70 KB model_name made H5Acreate2 fail ("object header message is too large")
  // at every checkpoint, after the whole run had trained.
  state.config_text = "[model]\nmodel_name = " + std::string(70000, 'm') + "\n[data]\nx = " +
                      std::string(10 << 20, 'v') + "\n";
  CHECK_NOTHROW(train::check_state_writable(state));
  n.save(dir + "/big.h5", state);
  const train::TrainingState back = train::load_training_state(dir + "/big.h5");
  CHECK(back.config_text == state.config_text);
  CHECK(back.global_step == 5);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoints with the configuration as a /state attribute (before) still read", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("ckfiles-old");
  const std::string dir = scratch_dir.str();
  Net n;
  train::TrainingState state;
  state.config_text = "[training]\nmax_epochs = 3\n";
  n.save(dir + "/old.h5", state);
  {  // Rewrite /state/config as the attribute older versions wrote.
    h5::silence_errors_on_this_thread();
    h5::Handle file = H5_OWN(file, H5Fopen((dir + "/old.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    h5::Handle st = H5_OWN(group, H5Gopen2(file.get(), "state", H5P_DEFAULT));
    H5_CHECK(H5Ldelete(st.get(), "config", H5P_DEFAULT));
    h5::write_fixed_string_attribute(st.get(), "config", "[training]\nmax_epochs = 4\n");
  }
  h5::write_checksum_record(dir + "/old.h5");  // the edit is on purpose
  CHECK(train::load_training_state(dir + "/old.h5").config_text == "[training]\nmax_epochs = 4\n");
  std::filesystem::remove_all(dir);
}

// The address of an object's header, for damaging it.
haddr_t header_of(const std::string& path, const std::string& object) {
  h5::silence_errors_on_this_thread();
  h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  H5O_info_t info{};
  H5_CHECK(H5Oget_info_by_name2(file.get(), object.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT));
  return info.addr;  // relative to the superblock: after the user block, if any
}

// Loading must fail with the UserError that names the file as damaged.
void expect_damaged(const std::function<void()>& load, const std::string& path, const std::string& why) {
  try {
    load();
    FAIL("a damaged checkpoint loaded");
  } catch (const UserError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("checkpoint '" + path + "' is truncated or damaged: ") == 0);
    CHECK(what.find(why) != std::string::npos);
    const std::string test_file = __FILE__;  // <repository>/tests/unit/train/...: the build's absolute paths
    CHECK(what.find(test_file.substr(0, test_file.find("/tests/unit/")) + "/src/") == std::string::npos);
    CHECK(e.exit_code() == kExitUsage);
    CHECK(e.hint().find("earlier checkpoint") != std::string::npos);
  }
}

TEST_CASE("a damaged checkpoint is a UserError naming the file, caught by its checksum", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("ckfiles-damaged");
  const std::string dir = scratch_dir.str();
  Net n;
  const std::string path = dir + "/last.h5";
  n.save(path, {});
  // The first tensor's object header: its first message's size made odd, which HDF5
  // reports as "message not aligned" from H5Dopen2 (the review's case, exit 1).
  const haddr_t header = header_of(path, "model/" + n.net.store().parameters().front().name);
  overwrite(path, h5::kChecksumBlockBytes + header + 16 + 2, std::string("\x03\x00", 2));
  expect_damaged([&] { train::load_model(path, n.net.store(), n.backend->default_stream()); }, path,
                 "its checksum is");
  // Cut short: the size no longer matches the record.
  n.save(path, {});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  expect_damaged([&] { train::load_training_state(path); }, path, "its checksum record says");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a damaged checkpoint without a checksum (older versions) is still a UserError", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("ckfiles-damaged-old");
  const std::string dir = scratch_dir.str();
  const std::string path = dir + "/old.h5";
  {  // What older versions wrote, as far as load_training_state looks: /state with attributes.
    h5::silence_errors_on_this_thread();
    h5::Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    h5::Handle state = H5_OWN(group, H5Gcreate2(file.get(), "state", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5::write_int_attribute(state.get(), "global_step", 7);
  }
  REQUIRE(train::load_training_state(path).global_step == 7);
  overwrite(path, header_of(path, "state") + 16 + 2, std::string("\x03\x00", 2));
  // HDF5's own error, once exit 1 with the build folder's path in it.
  expect_damaged([&] { train::load_training_state(path); }, path, "HDF5 call failed");
  std::filesystem::remove_all(dir);
}

TEST_CASE("--init-weights refuses a checkpoint of another backbone", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("ckfiles-backbone");
  const std::string dir = scratch_dir.str();
  {
    Net resnet18;
    resnet18.save(dir + "/r18.h5", {});
  }
  // docs/MODEL.md: a tensor the file lacks is an error; it used to load the 100
  // tensors the two share and say so.
  Net resnet34("resnet34");
  CHECK_THROWS_WITH(train::load_backbone_weights(dir + "/r18.h5", resnet34.net.store(),
                                                 resnet34.backend->default_stream()),
                    Catch::Matchers::Contains("lacks") && Catch::Matchers::Contains("of the backbone's tensors"));
  // And a ResNet-34 file for a ResNet-18: tensors the model does not have.
  resnet34.save(dir + "/r34.h5", {});
  Net resnet18;
  CHECK_THROWS_WITH(train::load_backbone_weights(dir + "/r34.h5", resnet18.net.store(),
                                                 resnet18.backend->default_stream()),
                    Catch::Matchers::Contains("but this backbone has no such tensor"));
  // The same backbone loads every tensor.
  CHECK(train::load_backbone_weights(dir + "/r18.h5", resnet18.net.store(), resnet18.backend->default_stream()) > 0);
  std::filesystem::remove_all(dir);
}
