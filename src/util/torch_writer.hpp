#pragma once
// Writing PyTorch's own file format without Python: the zip archive torch.save makes
// since PyTorch 1.6 (`archive/data.pkl`, a pickle of protocol 2; `archive/data/<key>`,
// one entry per storage; `archive/version`, `archive/byteorder`), which torch.load
// reads. The value written is a tree of PickleValues: dicts (plain, or
// collections.OrderedDict as state dicts are), lists, strings, numbers, booleans,
// None and tensors. The reader side is util/torch_file.hpp.
#include <cstdint>  // std::int64_t
#include <memory>   // std::shared_ptr
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "util/stored_tensor.hpp"  // StoredTensor, StoredType

namespace trainer {

class PickleValue {
 public:
  enum class Kind { none, boolean, integer, real, string, list, dict, ordered_dict, tensor };

  PickleValue() = default;  // None
  static PickleValue boolean(bool b);
  static PickleValue integer(std::int64_t i);
  static PickleValue real(double d);
  static PickleValue string(std::string s);
  static PickleValue list(std::vector<PickleValue> items = {});
  static PickleValue dict();          // {} with string keys, in insertion order
  static PickleValue ordered_dict();  // collections.OrderedDict()
  // A contiguous tensor (f32 or i64 only: what state dicts of these models hold).
  static PickleValue tensor(StoredTensor t);

  // For dict and ordered_dict: appends key -> value (keys are not checked for repeats).
  PickleValue& set(const std::string& key, PickleValue value);
  // For list.
  PickleValue& append(PickleValue value);

  Kind kind() const { return kind_; }

 private:
  friend class PickleWriter;
  Kind kind_ = Kind::none;
  bool bool_ = false;
  std::int64_t int_ = 0;
  double real_ = 0;
  std::string string_;
  std::vector<PickleValue> items_;
  std::vector<std::pair<std::string, PickleValue>> entries_;
  std::shared_ptr<const StoredTensor> tensor_;
};

// The pickle (protocol 2) of `root` and the storages its tensors refer to, in
// order: storages[i] is `archive/data/<i>`.
struct TorchPickle {
  std::string pickle;
  std::vector<std::shared_ptr<const StoredTensor>> storages;
};
TorchPickle pickle_for_torch(const PickleValue& root);

// torch.save(root, path), written atomically (a temporary file renamed into place).
// UserError when the file cannot be written.
void write_torch_file(const std::string& path, const PickleValue& root);

}  // namespace trainer
