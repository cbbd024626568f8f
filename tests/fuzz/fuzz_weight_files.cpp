// libFuzzer harness: the readers of pretrained weight files (model.backbone_weights):
// the .safetensors header and data, and torch.save's pickle (util/torch_file.cpp,
// util/safetensors_file.cpp). The first byte picks the reader; storages come from the
// input's tail. An accepted tensor's bytes must match its shape and type.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <string>   // std::string

#include "fuzz_support.hpp"           // ScratchFile, expect_user_errors_only
#include "util/safetensors_file.hpp"  // parse_safetensors
#include "util/torch_file.hpp"        // parse_torch_pickle

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainer::fuzz::expect_user_errors_only([&] {
    std::vector<trainer::StoredTensor> tensors;
    if (data[0] & 1) {
      tensors = trainer::parse_safetensors(bytes, "fuzz.safetensors");
    } else {
      // Every storage is the input itself: offsets and sizes past it must be refused.
      tensors = trainer::parse_torch_pickle(bytes, "fuzz.pth", [&](const std::string&) { return bytes; });
    }
    for (const auto& t : tensors) {
      std::size_t count = 1;
      for (auto d : t.shape) count *= std::size_t(d);
      if (t.bytes.size() != count * trainer::bytes_per_element(t.type))
        trainer::fuzz::ScratchFile::finding("tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) +
                                            " bytes for " + std::to_string(count) + " elements");
    }
  });
  return 0;
}
