#pragma once
// One convolution shape's oneDNN primitives, created lazily and kept for the life
// of the backend (creating a primitive costs far more than running a small one).
#include <optional>  // std::optional for the lazily created primitives

#include <oneapi/dnnl/dnnl.hpp>  // primitive descriptors, primitives, memory

namespace trainer::compute::cpu {

struct ConvPlan {
  // Plain (user) layouts: x, y NCHW; w OIHW.
  dnnl::memory::desc x_md, w_md, y_md;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  std::optional<dnnl::convolution_forward> fwd;
  std::optional<dnnl::convolution_backward_data::primitive_desc> bwd_data_pd;
  std::optional<dnnl::convolution_backward_data> bwd_data;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> bwd_weights_pd;
  std::optional<dnnl::convolution_backward_weights> bwd_weights;
};

}  // namespace trainer::compute::cpu
