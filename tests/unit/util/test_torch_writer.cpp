// torch.save's format written without Python (util/torch_writer.hpp), read back
// through the reader of pretrained weights (util/torch_file.hpp). PyTorch itself
// loads these files in tests/integration/lp_model_dir.sh.
#include <catch2/catch.hpp>

#include <cstdint>  // std::int64_t
#include <cstdio>   // std::remove
#include <cstring>  // std::memcpy
#include <string>   // std::string
#include <unistd.h>  // getpid
#include <vector>   // std::vector

#include "util/torch_file.hpp"    // read_torch_state_dict, parse_torch_pickle
#include "util/torch_writer.hpp"  // PickleValue, write_torch_file, pickle_for_torch
#include "util/zip_archive.hpp"   // ZipArchive

using namespace trainer;

namespace {
StoredTensor floats(const std::string& name, std::vector<std::int64_t> shape, float start) {
  StoredTensor t;
  t.name = name;
  t.shape = std::move(shape);
  std::size_t n = 1;
  for (auto d : t.shape) n *= std::size_t(d);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + float(i) * 0.5f;
  t.bytes.assign(reinterpret_cast<const char*>(v.data()), n * sizeof(float));
  return t;
}
}  // namespace

TEST_CASE("torch writer: a Lightning-style checkpoint reads back tensor for tensor", "[util][weights]") {
  PickleValue state = PickleValue::ordered_dict();
  state.set("backbone.0.weight", PickleValue::tensor(floats("", {2, 3, 1, 1}, -1.f)));
  state.set("head.upsampling_layers.1.bias", PickleValue::tensor(floats("", {4}, 7.f)));
  StoredTensor count;
  count.type = StoredType::i64;  // a BatchNorm's num_batches_tracked: a 0-d int64 tensor
  const std::int64_t steps = 1234567890123;
  count.bytes.assign(reinterpret_cast<const char*>(&steps), sizeof steps);
  state.set("backbone.1.num_batches_tracked", PickleValue::tensor(count));
  PickleValue hparams = PickleValue::dict();
  hparams.set("num_keypoints", PickleValue::integer(17))
      .set("backbone", PickleValue::string("resnet18"))
      .set("pretrained", PickleValue::boolean(false))
      .set("num_targets", PickleValue())
      .set("learning_rate", PickleValue::real(1e-3))
      .set("milestones", PickleValue::list({PickleValue::integer(150), PickleValue::integer(-3000000000LL)}));
  PickleValue root = PickleValue::dict();
  root.set("epoch", PickleValue::integer(4)).set("state_dict", state).set("hyper_parameters", hparams);

  const std::string path = "torch_writer_test." + std::to_string(::getpid()) + ".ckpt";
  write_torch_file(path, root);
  const ZipArchive zip(path);
  CHECK(zip.read("archive/version") == "3\n");
  CHECK(zip.read("archive/byteorder") == "little");
  CHECK(zip.contains("archive/data/2"));
  const auto tensors = read_torch_state_dict(path);  // the `state_dict` entry, as for Lightning files
  std::remove(path.c_str());
  REQUIRE(tensors.size() == 3);
  CHECK(tensors[0].name == "backbone.0.weight");
  CHECK(tensors[0].shape == std::vector<std::int64_t>{2, 3, 1, 1});
  CHECK(tensors[0].bytes == floats("", {2, 3, 1, 1}, -1.f).bytes);
  CHECK(tensors[1].name == "head.upsampling_layers.1.bias");
  CHECK(tensors[1].bytes == floats("", {4}, 7.f).bytes);
  CHECK(tensors[2].type == StoredType::i64);
  CHECK(tensors[2].shape.empty());
  std::int64_t back = 0;
  REQUIRE(tensors[2].bytes.size() == sizeof back);
  std::memcpy(&back, tensors[2].bytes.data(), sizeof back);
  CHECK(back == steps);
}

TEST_CASE("torch writer: tensors go to storages in order; the pickle is protocol 2", "[util][weights]") {
  PickleValue root = PickleValue::ordered_dict();
  root.set("a", PickleValue::tensor(floats("", {3}, 0.f))).set("b", PickleValue::tensor(floats("", {2, 2}, 1.f)));
  const TorchPickle p = pickle_for_torch(root);
  REQUIRE(p.storages.size() == 2);
  CHECK(p.pickle.substr(0, 2) == std::string("\x80\x02", 2));
  CHECK(p.pickle.back() == '.');
  const auto tensors = parse_torch_pickle(p.pickle, "mem", [&](const std::string& key) {
    return p.storages.at(std::stoul(key))->bytes;
  });
  REQUIRE(tensors.size() == 2);
  CHECK(tensors[1].name == "b");
  CHECK(tensors[1].shape == std::vector<std::int64_t>{2, 2});
}
