#pragma once
// lightning-pose's heatmap head: PixelShuffle(2), then n = log2(stride) - d - 1
// ConvTranspose2d(kernel 3, stride 2, padding 1, output_padding 1) layers (stride:
// the backbone's, 32 for the ResNets, 16 for the ViTs, as lightning-pose's
// BACKBONE_STRIDES); the
// first takes C/4 channels, all output K. No activation between them (as
// lightning-pose). Weights IOHW, Xavier-uniform (gain 0.01), zero bias; named
// head.deconv<i>.weight / .bias with i = 0..n-1 in order.
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::ConvGeometry
#include "model/activation.hpp"       // Activation
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

class HeatmapHead {
 public:
  // input_stride: the backbone's (a power of 2); the upsampling undoes all of it but
  // 2^downsample_factor. UserError when that leaves no transposed convolution.
  HeatmapHead(ParameterStore& store, const std::string& prefix, int in_channels, int num_keypoints,
              int downsample_factor, int input_stride);

  // The transposed convolutions such a head has (lightning-pose's n_layers), with the
  // constructor's checks: UserError when there would be none.
  static int layer_count(int downsample_factor, int input_stride);

  int num_deconvs() const { return int(layers_.size()); }
  // x: [N, C, h, w] backbone features; returns logits [N, K, h * 2^(n+1), w * 2^(n+1)].
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x);
  // Returns the gradient with respect to the backbone features (dy is read only);
  // skipped (empty view) when need_dx is false, e.g. while the backbone is frozen.
  compute::TensorView backward(const Context& ctx, compute::ConstTensorView dy, bool need_dx);

 private:
  struct Deconv {
    std::size_t weight, bias;
    compute::ConvGeometry geometry;
    compute::ConstTensorView x;
    Activation y, dx;
  };
  ParameterStore* store_;
  std::vector<Deconv> layers_;
  Activation shuffled_, dfeatures_;
  compute::Shape4 in_shape_;
};

}  // namespace trainer::model
