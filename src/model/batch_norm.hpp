#pragma once
// BatchNorm2d (PyTorch semantics: eps 1e-5, momentum 0.1, biased variance for
// normalization, unbiased for the running variance). Registers <name>.weight,
// .bias (parameters), .running_mean, .running_var (buffers), .num_batches_tracked.
// With a BatchNormSync in the Context, statistics and their gradient sums cover
// the global batch (SyncBatchNorm).
#include <cstddef>  // std::size_t
#include <string>   // std::string

#include "compute/backend.hpp"        // compute::DeviceBuffer
#include "model/activation.hpp"       // Activation
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

class BatchNorm2d {
 public:
  BatchNorm2d(ParameterStore& store, const std::string& name, int channels, ParamGroup group);

  // Training: batch statistics, running statistics updated. Eval: running statistics.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x);
  // dy may be overwritten. Writes dweight/dbias (announced), returns dx.
  compute::TensorView backward(const Context& ctx, compute::ConstTensorView dy);

  // The batch norm with the ReLU that follows it: relu(bn(x) + residual), residual
  // may be null. One fused op when the backend fuses (Backend::fuses_norm_activation),
  // else the separate ops; the same numbers either way.
  compute::TensorView forward_relu(const Context& ctx, compute::ConstTensorView x,
                                   const float* residual = nullptr);
  // The backward of forward_relu without a residual, from dy at the ReLU's output
  // (dy may be overwritten). With a residual, mask dy by the output (relu_backward)
  // and call backward(): the masked gradient also feeds the shortcut.
  compute::TensorView backward_relu(const Context& ctx, compute::TensorView dy);

  static constexpr float kEps = 1e-5f;
  static constexpr float kMomentum = 0.1f;

 private:
  void ensure_scratch(compute::Backend& backend);
  // mean_ and invstd_ for x (batch or running statistics), and x_ kept for backward.
  void statistics(const Context& ctx, compute::ConstTensorView x);
  // sums_ from dy (through the ReLU's mask with `relu`), the parameter gradients from
  // them, announced, and the sync BN all-reduce of sums_.
  void backward_sums(const Context& ctx, compute::ConstTensorView dy, bool relu);

  ParameterStore* store_;
  int channels_;
  std::size_t weight_, bias_, running_mean_, running_var_, tracked_;
  compute::ConstTensorView x_;
  Activation y_, dx_;
  compute::DeviceBuffer mean_, invstd_, sums_;  // sums_: 2C per-channel sums (backward)
  compute::DeviceBuffer moments_, gathered_;    // this rank's moments; every rank's (sync BN)
  double count_ = 0;                            // values per channel in the (global) batch
};

}  // namespace trainer::model
