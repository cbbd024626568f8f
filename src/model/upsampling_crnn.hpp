#pragma once
// lightning-pose's UpsamplingCRNN (multi-frame branch of the heatmap_mhcrnn head),
// registered as <prefix>W_pre (upsampling_factor 2 only), W_f, H_f.0, H_f.1, W_b,
// H_b.0, H_b.1 (.weight / .bias, PyTorch layouts):
//   per frame:  x_t = W_pre(PixelShuffle(2)(features_t))      factor 2: ConvT 3/2/1/1, C/4 -> K
//               x_t = PixelShuffle(2)(features_t)              factor 1: C/4 channels
//   forward:    s_0 = W_f(x_0);  s_t = W_f(x_t) + H_f(s_{t-1})  t = 1..F-1
//   backward:   same with W_b, H_b over the frames in reverse order
//   logits    = (s_fwd + s_bwd) / 2   (the caller applies the spatial softmax)
// lightning-pose takes factor 2 for stride-32 backbones (the ResNets) and 1 for
// stride-16 ones (the ViTs): logits are at 8x (factor 2) or 4x (factor 1) the
// features' size, the input / 4 either way. W_f, W_b: ConvT 3/2/1/1, K -> K (factor
// 2) or C/4 -> K (factor 1). H = Conv2d(K -> 16K, k2 s2, groups K) then
// ConvTranspose2d(16K -> K, k2 s2, groups K), both with bias, no activation.
// Init: Xavier-uniform gain 1 on every weight, zero biases.
//
// The backend has no grouped convolution: each grouped weight [16K, 1, 2, 2] is
// expanded into a dense block-diagonal one [16K, K, 2, 2] (zeros off the group;
// same shape for the conv's OIHW and the transposed conv's IOHW), and the dense
// weight gradient is read back on the diagonal. Exact, at K times the FLOPs of
// these two small layers. The conv bias uses batchnorm_apply (x * 1 + bias) and
// its gradient batchnorm_stats (sum of dy over N, H, W).
#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::ConvGeometry, DeviceBuffer
#include "model/activation.hpp"       // Activation
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

class UpsamplingCRNN {
 public:
  static constexpr int kFiltersPerKeypoint = 16;  // lightning-pose's nfilters_channel

  // upsampling_factor: 2 or 1 (lightning-pose's, from the backbone's stride 32 or 16).
  UpsamplingCRNN(ParameterStore& store, const std::string& prefix, int in_channels, int num_keypoints,
                 int upsampling_factor = 2);

  // features: [B * F, C, h, w], row b * F + f = frame f of sample b (f = 0 is t-2).
  // Returns logits [B, K, 4 * factor * h, 4 * factor * w], valid until the next forward.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView features, int frames);
  // dlogits: gradient with respect to forward's output. Writes (and announces,
  // in decreasing offset order) every gradient of this module; returns the
  // gradient with respect to the features unless need_dx is false.
  compute::TensorView backward(const Context& ctx, compute::ConstTensorView dlogits, bool need_dx);

 private:
  struct Deconv {  // ConvT 3/2/1/1 with bias
    std::size_t weight = 0, bias = 0;
    compute::ConvGeometry g;
  };
  // One recurrence direction: W (input) and H (hidden: grouped conv, grouped deconv).
  struct Direction {
    Deconv w;
    std::size_t h0_weight = 0, h0_bias = 0, h1_weight = 0, h1_bias = 0;
    compute::DeviceBuffer h0_dense, h1_dense;      // expanded weights
    compute::DeviceBuffer h0_dense_grad, h1_dense_grad;  // accumulated dense gradients
    std::vector<Activation> s;                     // s_t, t = 0..F-1
    std::vector<Activation> z_raw, z;              // H.0 output before / after bias, t = 1..F-1
  };

  Deconv make_deconv(const std::string& name, int in, int out);
  void register_direction(Direction& d, const std::string& w_name, const std::string& h_name, int inputs);
  compute::ConvGeometry hidden_geometry() const;
  void expand(const Context& ctx, const float* grouped, float* dense);
  void extract_diagonal(const Context& ctx, const float* dense, float* grouped);
  void forward_direction(const Context& ctx, Direction& d, bool reverse);
  void backward_direction(const Context& ctx, Direction& d, bool reverse);
  void deconv_backward_accumulate(const Context& ctx, const Deconv& l, compute::ConstTensorView x,
                                  compute::ConstTensorView dy, float* dx_accumulator);
  void accumulate(const Context& ctx, const float* x, float* out, std::size_t count);

  ParameterStore* store_;
  int in_channels_, keypoints_, factor_;
  Deconv pre_;  // factor 2 only
  Direction fwd_, bwd_;
  int frames_ = 0, batch_ = 0;
  compute::Shape4 feature_shape_;
  Activation shuffled_, pre_out_, logits_;
  std::vector<Activation> x_;        // per frame [B, K, 4h, 4w] (frame-major copies)
  std::vector<Activation> dx_;       // their gradients
  Activation dhalf_, ds_a_, ds_b_, dz_, tmp_k_, tmp_x_, dpre_, dshuffled_, dfeatures_;
  compute::DeviceBuffer ones_, zeros_, bias_sums_, tmp_w_, tmp_b_, tmp_dense_;
};

}  // namespace trainer::model
