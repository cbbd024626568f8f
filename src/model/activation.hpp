#pragma once
// A layer-owned device buffer for an output or input-gradient tensor that grows
// when the batch shape grows and is reused from step to step.
#include "compute/backend.hpp"  // compute::Backend, DeviceBuffer, ensure_capacity
#include "compute/tensor.hpp"   // compute::Shape4, TensorView

namespace trainer::model {

class Activation {
 public:
  compute::TensorView ensure(compute::Backend& backend, compute::Shape4 shape) {
    compute::ensure_capacity(backend, buffer_, shape.numel());
    shape_ = shape;
    return {buffer_.data(), shape_};
  }
  compute::TensorView view() { return {buffer_.data(), shape_}; }
  compute::Shape4 shape() const { return shape_; }

 private:
  compute::DeviceBuffer buffer_;
  compute::Shape4 shape_;
};

}  // namespace trainer::model
