#pragma once
// PyTorch's own weight files without Python: a .pth/.pt written by torch.save (a zip
// archive since PyTorch 1.6 holding `<name>/data.pkl`, a pickle, and one entry
// `<name>/data/<key>` per storage). A minimal unpickler understands what torch.save
// writes for a state dict (OrderedDict, _rebuild_tensor_v2, persistent storage ids)
// and treats anything else in the file (optimizer state, mmpose's `meta`) as opaque,
// so a training checkpoint of another framework reads as long as its tensors do.
#include <functional>  // std::function
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/stored_tensor.hpp"  // StoredTensor

namespace trainer {

// The tensors of the state dict in `path`: the top-level dict itself, or its
// `state_dict` (mmpose, Lightning) or `model` entry. UserError when the file is not a
// zip-format torch file or its pickle cannot be read.
std::vector<StoredTensor> read_torch_state_dict(const std::string& path);

// The same from the bytes of data.pkl and a storage reader (tests, fuzzing).
std::vector<StoredTensor> parse_torch_pickle(const std::string& pickle, const std::string& what,
                                             const std::function<std::string(const std::string& key)>& storage);

}  // namespace trainer
