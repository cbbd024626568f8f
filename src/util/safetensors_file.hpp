#pragma once
// The .safetensors format (Hugging Face): an 8-byte little-endian header length, a
// JSON header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the tensors' bytes. Read without a JSON library: the
// header is parsed by a small strict reader of the subset the format uses.
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/stored_tensor.hpp"  // StoredTensor

namespace trainer {

// UserError naming the file for anything malformed (a bad header, offsets outside
// the data, a shape that does not match its byte count, an unsupported dtype).
std::vector<StoredTensor> read_safetensors(const std::string& path);
std::vector<StoredTensor> parse_safetensors(const std::string& bytes, const std::string& what);

}  // namespace trainer
