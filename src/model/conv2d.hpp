#pragma once
// Conv2d without bias (every ResNet convolution), weight OIHW, named <name>.weight.
#include <cstddef>  // std::size_t
#include <string>   // std::string

#include "compute/backend.hpp"        // compute::ConvGeometry
#include "model/activation.hpp"       // Activation
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore, ParamGroup

namespace trainer::model {

// torchvision's init of a convolution filter [out, in_per_group, k, k]:
// kaiming_normal_(mode="fan_out"), gain sqrt(2), with PyTorch's fans (size(0) or size(1)
// times the kernel area, whatever the groups).
InitRule conv_filter_init(int out_channels, int in_per_group, int kernel);

class Conv2d {
 public:
  Conv2d(ParameterStore& store, const std::string& name, int in_channels, int out_channels,
         int kernel, int stride, int pad, ParamGroup group);

  compute::Shape4 output_shape(compute::Shape4 in) const;
  // Keeps a view of x for backward: x must stay untouched until then.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x);
  // Writes the weight gradient (and announces it); returns dx unless need_dx is false.
  compute::TensorView backward(const Context& ctx, compute::ConstTensorView dy, bool need_dx);

  std::size_t weight_index() const { return weight_; }

 private:
  ParameterStore* store_;
  std::size_t weight_;
  compute::ConvGeometry geometry_;
  compute::ConstTensorView x_;
  Activation y_, dx_;
};

}  // namespace trainer::model
