#pragma once
// All parameters, gradients and buffers (BN running statistics) of a model in flat
// device buffers. Layers register their tensors in forward order with their
// PyTorch state_dict names and PyTorch layouts, then hold indices (views) into
// the store. One flat gradient buffer makes the all-reduce a few large calls; one
// flat parameter buffer makes the optimizer one call per group.
//
// Life cycle: register (add_*) -> allocate() -> initialize(seed) or load values.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t, std::uint64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"  // compute::Backend, DeviceBuffer
#include "model/hooks.hpp"      // Context

namespace trainer::model {

// Optimizer group of a parameter: lightning-pose freezes and then slowly unfreezes
// the backbone while the head trains at the full learning rate.
enum class ParamGroup { backbone, head };
const char* group_name(ParamGroup g);

// How a tensor starts out (see docs/MODEL.md, "Initialization").
struct InitRule {
  enum Kind { zeros, ones, kaiming_normal_fan_out, xavier_uniform } kind = zeros;
  double gain = 1.0;
  double fan_in = 0, fan_out = 0;
};

struct TensorEntry {
  std::string name;          // PyTorch state_dict key, e.g. backbone.layer1.0.conv1.weight
  std::vector<int> shape;    // PyTorch layout
  std::size_t offset = 0;    // into the flat parameter (or buffer) storage
  std::size_t count = 0;
  ParamGroup group = ParamGroup::head;
  InitRule init;
  // The forward never reads it (DINOv2's mask_token, SAM's rel_pos and neck, kept for
  // their checkpoint names): PyTorch leaves its grad None, so its optimizer neither
  // steps nor decays it, and neither does ours (ParameterStore::trained_ranges).
  bool unused = false;
};

// num_batches_tracked of a batch norm layer: an int64 counter kept on the host.
struct CounterEntry {
  std::string name;
  std::int64_t value = 0;
};

class ParameterStore {
 public:
  explicit ParameterStore(compute::Backend& backend) : backend_(&backend) {}
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  // Registration (before allocate()). Returns the index used for access.
  std::size_t add_parameter(const std::string& name, std::vector<int> shape, ParamGroup group,
                            InitRule init);
  std::size_t add_buffer(const std::string& name, std::vector<int> shape, ParamGroup group,
                         InitRule init);
  std::size_t add_counter(const std::string& name);

  // Allocates the flat storage (zeroed). Registration is closed afterwards.
  void allocate();
  bool allocated() const { return allocated_; }
  // Sets every parameter and buffer from its InitRule with a deterministic RNG
  // (model/init.hpp) seeded by `seed`, in registration order; counters to 0.
  void initialize(std::uint64_t seed, compute::Stream& stream);

  // Access (after allocate()).
  float* param(std::size_t i) { return params_.data() + parameters_[i].offset; }
  float* grad(std::size_t i) { return grads_.data() + parameters_[i].offset; }
  float* buffer(std::size_t i) { return buffers_.data() + buffers_list_[i].offset; }
  std::int64_t& counter(std::size_t i) { return counters_[i].value; }

  const std::vector<TensorEntry>& parameters() const { return parameters_; }
  const std::vector<TensorEntry>& buffers() const { return buffers_list_; }
  std::vector<CounterEntry>& counters() { return counters_; }
  const std::vector<CounterEntry>& counters() const { return counters_; }

  // Flat storage.
  std::size_t parameter_count() const { return param_total_; }
  std::size_t buffer_count() const { return buffer_total_; }
  float* params_data() { return params_.data(); }
  float* grads_data() { return grads_.data(); }
  float* buffers_data() { return buffers_.data(); }

  // The contiguous range [offset, offset + count) of a group's parameters
  // (groups are registered contiguously: backbone first, then head).
  struct Range {
    std::size_t offset = 0, count = 0;
  };
  Range group_range(ParamGroup g) const;
  // A group's range without its unused tensors, as few contiguous ranges as that
  // leaves (one where every tensor is used), in offset order.
  std::vector<Range> trained_ranges(ParamGroup g) const;
  // Marks parameter i as never read by the forward (TensorEntry::unused).
  void mark_unused(std::size_t i) { parameters_.at(i).unused = true; }

  // Host copies of one entry, for checkpoints and tests.
  std::vector<float> download_param(std::size_t i, compute::Stream& s);
  std::vector<float> download_buffer(std::size_t i, compute::Stream& s);
  void upload_param(std::size_t i, const std::vector<float>& values, compute::Stream& s);
  void upload_buffer(std::size_t i, const std::vector<float>& values, compute::Stream& s);

  // Every name in PyTorch state_dict order (per module: parameters, then
  // buffers, then num_batches_tracked), as registered.
  enum class Kind { parameter, buffer, counter };
  struct Key {
    Kind kind;
    std::size_t index;
  };
  const std::vector<Key>& state_dict_order() const { return order_; }
  std::vector<std::string> state_dict_names() const;

  // Index by state_dict name, or -1.
  long find_parameter(const std::string& name) const;
  long find_buffer(const std::string& name) const;
  long find_counter(const std::string& name) const;

  compute::Backend& backend() { return *backend_; }

 private:
  void check_open(const std::string& name) const;

  compute::Backend* backend_;
  std::vector<TensorEntry> parameters_, buffers_list_;
  std::vector<CounterEntry> counters_;
  std::vector<Key> order_;
  std::size_t param_total_ = 0, buffer_total_ = 0;
  bool allocated_ = false;
  compute::DeviceBuffer params_, grads_, buffers_;
};

// Tells the Context's listener (if any) that parameter i's gradient is final.
void announce_gradient(const Context& ctx, const ParameterStore& store, std::size_t param_index);
// The same for several parameters, highest offset first (the order the gradient
// buckets fill in), each once: shared tensors (a qkv split into query, key and value)
// may be named more than once.
void announce_gradients(const Context& ctx, const ParameterStore& store, std::vector<std::size_t> params);

}  // namespace trainer::model
