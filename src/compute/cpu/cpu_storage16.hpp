#pragma once
// The CPU backend's 16-bit NHWC storage (backend.hpp, "Storage"): an op given such
// views converts its inputs into fp32 NCHW copies, runs its fp32 code on them, and
// rounds the results back into 16 bits. That is the arithmetic the CUDA kernels
// do on 16-bit storage (read exactly, compute in fp32, round on store), so these
// ops are the CPU twins of kernels/nhwc16.cu, and the reference of the GPU tests.
// No speed-up is intended: the CPU keeps fp32 activations unless asked.
#include <initializer_list>  // std::initializer_list
#include <vector>            // std::vector

#include "compute/tensor.hpp"  // ConstTensorView, TensorView, Storage

namespace trainer::compute::cpu {

bool any_16bit(std::initializer_list<Storage> storages);

// Element-wise conversion between storages of one shape (rounding into 16 bits).
void convert_on_host(ConstTensorView src, TensorView dst);

// An fp32 NCHW copy of a view in any storage; an fp32 view is used as it is.
class Float32Input {
 public:
  explicit Float32Input(ConstTensorView v);
  // A bare pointer in the storage of `like` (a batch-norm residual).
  Float32Input(const float* data, ConstTensorView like);
  ConstTensorView view() const { return view_; }
  const float* data() const { return view_.data; }

 private:
  std::vector<float> copy_;
  ConstTensorView view_;
};

// An fp32 NCHW stand-in for an output view in any storage: the op writes view(),
// then store() rounds it into the target (nothing to do for an fp32 target).
class Float32Output {
 public:
  explicit Float32Output(TensorView target);
  TensorView view() const { return view_; }
  void store();

 private:
  std::vector<float> copy_;
  TensorView target_, view_;
};

}  // namespace trainer::compute::cpu
