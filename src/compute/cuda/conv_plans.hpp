#pragma once
// cuDNN convolution plans: descriptors plus the forward, backward-data and
// backward-filter algorithms for one problem shape, chosen once (benchmarked with
// cudnnFind* or taken from the cudnnGet*_v7 heuristics) and cached for the life of
// the backend. Transposed convolutions are expressed as the same problems with the
// roles of input and output swapped (see cuda_backend.cpp).
//
// Precision is part of the problem: fp32 plans describe the fp32 NCHW tensors
// themselves (FMA math unless TF32 is allowed); bf16 / fp16 plans describe the
// backend's 16-bit NHWC copies (CUDNN_DATA_BFLOAT16 / CUDNN_DATA_HALF data,
// CUDNN_DATA_FLOAT compute type, CUDNN_TENSOR_OP_MATH).
#include <cudnn.h>   // descriptors, algorithm enums
#include <cstddef>   // std::size_t
#include <map>       // std::map
#include <memory>    // std::unique_ptr
#include <optional>  // std::optional
#include <string>    // std::string
#include <tuple>     // std::tie for ordering

#include "compute/backend.hpp"          // ConvGeometry
#include "compute/cuda/cudnn_raii.hpp"  // TensorDesc, FilterDesc, ConvDesc
#include "compute/tensor.hpp"           // Shape4
#include "compute/precision.hpp"        // Precision

namespace trainer::compute::cuda {

// A cross-correlation of x [n, c, h, w] with a filter [k, c, r, r] giving
// y [n, k, oh, ow] (square stride and padding, no dilation), in `precision`.
struct ConvProblem {
  int n = 0, c = 0, h = 0, w = 0;
  int k = 0, r = 1, stride = 1, pad = 0;
  int oh = 0, ow = 0;
  Precision precision = Precision::fp32;
  bool operator<(const ConvProblem& o) const {
    return std::tie(n, c, h, w, k, r, stride, pad, oh, ow, precision) <
           std::tie(o.n, o.c, o.h, o.w, o.k, o.r, o.stride, o.pad, o.oh, o.ow, o.precision);
  }
};

// "x [n,c,h,w] * w [k,c,r,r] stride s pad p -> y [...] precision": for messages.
std::string describe(const ConvProblem& p);

// The problem of conv2d x -> y, and the convolution whose backward-data is the
// transposed convolution (deconv2d) x -> y; SystemError if the shapes disagree with
// the geometry.
ConvProblem conv2d_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g, Precision precision);
ConvProblem deconv2d_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g, Precision precision);

struct ConvSettings {
  bool allow_tf32 = false;     // fp32 problems: false means FMA-only kernels (parity with the CPU)
  bool benchmark = true;       // cudnnFind* (runs each algorithm once) vs heuristics
  std::size_t workspace_limit = std::size_t(1) << 30;  // bytes per convolution call
};

struct ConvPlan {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  std::optional<cudnnConvolutionFwdAlgo_t> fwd;
  std::optional<cudnnConvolutionBwdDataAlgo_t> bwd_data;
  std::optional<cudnnConvolutionBwdFilterAlgo_t> bwd_filter;
  std::size_t fwd_bytes = 0, bwd_data_bytes = 0, bwd_filter_bytes = 0;
};

class ConvPlanCache {
 public:
  explicit ConvPlanCache(ConvSettings settings) : settings_(settings) {}
  // The plan for `p` with descriptors set; algorithms are chosen on first use by
  // the select_* calls (they may synchronize the device: once per shape), within the
  // workspace limit and, where given, within `max_bytes` (a caller whose workspace is
  // already carved).
  ConvPlan& plan(const ConvProblem& p);
  void select_forward(cudnnHandle_t handle, ConvPlan& plan, const ConvProblem& p,
                      std::size_t max_bytes = kAnyWorkspace);
  void select_backward_data(cudnnHandle_t handle, ConvPlan& plan, const ConvProblem& p,
                            std::size_t max_bytes = kAnyWorkspace);
  void select_backward_filter(cudnnHandle_t handle, ConvPlan& plan, const ConvProblem& p,
                              std::size_t max_bytes = kAnyWorkspace);
  static constexpr std::size_t kAnyWorkspace = ~std::size_t(0);
  std::size_t size() const { return plans_.size(); }

 private:
  ConvSettings settings_;
  std::map<ConvProblem, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace trainer::compute::cuda
