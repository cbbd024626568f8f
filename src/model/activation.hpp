#pragma once
// A layer-owned device buffer for an output or input-gradient tensor that grows
// when the batch shape grows and is reused from step to step, in fp32 NCHW or, for
// the backbone's tensors in 16-bit training, a 16-bit storage (half the bytes).
#include "compute/backend.hpp"  // compute::Backend, DeviceBuffer, ensure_capacity
#include "compute/tensor.hpp"   // compute::Shape4, TensorView

namespace trainer::model {

class Activation {
 public:
  compute::TensorView ensure(compute::Backend& backend, compute::Shape4 shape,
                             compute::Storage storage = compute::Storage::f32_nchw) {
    compute::ensure_capacity(backend, buffer_, compute::storage_floats(shape.numel(), storage));
    shape_ = shape;
    storage_ = storage;
    return view();
  }
  compute::TensorView view() { return {buffer_.data(), shape_, storage_}; }
  compute::Shape4 shape() const { return shape_; }

 private:
  compute::DeviceBuffer buffer_;
  compute::Shape4 shape_;
  compute::Storage storage_ = compute::Storage::f32_nchw;
};

}  // namespace trainer::model
