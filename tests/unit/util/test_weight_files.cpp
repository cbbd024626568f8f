// The readers of pretrained weight files without Python: .safetensors and torch's
// pickle. The real files PyTorch writes are read in tests/integration/pretrained_weights.sh;
// here, the edge cases and the findings of fuzz_weight_files.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "util/error.hpp"
#include "util/safetensors_file.hpp"
#include "util/torch_file.hpp"

using namespace trainer;

namespace {
std::string safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(&out[0], &n, 8);
  return out + header + data;
}
}  // namespace

TEST_CASE("safetensors: tensors with their type, shape and bytes; metadata skipped", "[util][weights]") {
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x3c", 10);  // 1.0f, 2.0f, half 1.0
  const auto t = parse_safetensors(
      safetensors(R"({"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                  R"( "b.c": {"dtype":"F16","shape":[1,1],"data_offsets":[8,10]}})",
                  data),
      "t.safetensors");
  REQUIRE(t.size() == 2);
  CHECK(t[0].name == "a");
  CHECK(t[0].type == StoredType::f32);
  CHECK(t[0].shape == std::vector<std::int64_t>{2});
  CHECK(t[0].bytes == data.substr(0, 8));
  CHECK(t[1].name == "b.c");
  CHECK(t[1].type == StoredType::f16);
  CHECK(t[1].bytes.size() == 2);
}

TEST_CASE("safetensors: malformed files are user errors naming the file", "[util][weights]") {
  CHECK_THROWS_AS(parse_safetensors("short", "x.safetensors"), UserError);
  CHECK_THROWS_AS(parse_safetensors(safetensors("{", ""), "x.safetensors"), UserError);
  CHECK_THROWS_AS(parse_safetensors(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "x.safetensors"),
                  UserError);
  // Offsets past the data, and a shape that disagrees with its bytes.
  CHECK_THROWS_AS(parse_safetensors(safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                                                std::string(8, '\0')), "x.safetensors"), UserError);
  CHECK_THROWS_AS(parse_safetensors(safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                                std::string(8, '\0')), "x.safetensors"), UserError);
  CHECK_THROWS_WITH(parse_safetensors(safetensors(R"({"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}})",
                                                  std::string(1, '\0')), "x.safetensors"),
                    Catch::Contains("dtype I8"));
}

TEST_CASE("torch pickle: a list holding itself is refused, not leaked (fuzz finding)", "[util][weights]") {
  // PROTO 2, EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP
  const std::string pickle("\x80\x02]q\x00h\x00" "a.", 9);
  CHECK_THROWS_AS(parse_torch_pickle(pickle, "cycle.pth", [](const std::string&) { return std::string(); }),
                  UserError);
}

TEST_CASE("torch pickle: truncated input and a tensor past its storage are user errors", "[util][weights]") {
  CHECK_THROWS_AS(parse_torch_pickle(std::string("\x80\x02}", 3), "t.pth", [](const std::string&) { return std::string(); }),
                  UserError);
  // torch.save(OrderedDict(w=torch.zeros(8)))'s data.pkl, with a storage of 4 floats instead of 8.
  const std::string pickle("\x80\x02\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a\x71\x00\x29\x52\x71\x01\x58\x01\x00\x00\x00\x77\x71\x02\x63\x74\x6f\x72\x63\x68\x2e\x5f\x75\x74\x69\x6c\x73\x0a\x5f\x72\x65\x62\x75\x69\x6c\x64\x5f\x74\x65\x6e\x73\x6f\x72\x5f\x76\x32\x0a\x71\x03\x28\x28\x58\x07\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x04\x63\x74\x6f\x72\x63\x68\x0a\x46\x6c\x6f\x61\x74\x53\x74\x6f\x72\x61\x67\x65\x0a\x71\x05\x58\x01\x00\x00\x00\x30\x71\x06\x58\x03\x00\x00\x00\x63\x70\x75\x71\x07\x4b\x08\x74\x71\x08\x51\x4b\x00\x4b\x08\x85\x71\x09\x4b\x01\x85\x71\x0a\x89\x68\x00\x29\x52\x71\x0b\x74\x71\x0c\x52\x71\x0d\x73\x2e", 165);
  CHECK_THROWS_WITH(parse_torch_pickle(pickle, "t.pth", [](const std::string&) { return std::string(16, '\0'); }),
                    Catch::Contains("past the end of its storage"));
  const auto ok = parse_torch_pickle(pickle, "t.pth", [](const std::string&) { return std::string(32, '\0'); });
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].name == "w");
  CHECK(ok[0].shape == std::vector<std::int64_t>{8});
  CHECK(ok[0].bytes.size() == 32);
}
