#include "compute/cuda/conv_plans.hpp"

#include <algorithm>  // std::min
#include <sstream>    // std::ostringstream for error messages
#include <vector>   // std::vector of perf results

#include "compute/cuda/cuda_check.hpp"  // CUDNN_CHECK
#include "util/error.hpp"               // SystemError

namespace trainer::compute::cuda {
std::string describe(const ConvProblem& p) {
  std::ostringstream os;
  os << "x [" << p.n << "," << p.c << "," << p.h << "," << p.w << "] * w [" << p.k << "," << p.c
     << "," << p.r << "," << p.r << "] stride " << p.stride << " pad " << p.pad << " -> y ["
     << p.n << "," << p.k << "," << p.oh << "," << p.ow << "] precision " << precision_name(p.precision);
  return os.str();
}

namespace {

// The first (fastest, or best by heuristic) usable result: it succeeded, fits the
// workspace limit and max_bytes, and, for fp32 problems, uses FMA math unless TF32 is
// allowed. 16-bit problems take tensor-op math (that is their point). The fit is
// checked on workspace_of(algo), the bytes the call will be given, as well as on the
// result's own estimate; `bytes` receives them.
template <typename Perf, typename WorkspaceOf>
const Perf* pick(const std::vector<Perf>& results, int returned, const ConvSettings& s, const ConvProblem& p,
                 std::size_t max_bytes, WorkspaceOf workspace_of, std::size_t& bytes) {
  const bool fma_only = p.precision == Precision::fp32 && !s.allow_tf32;
  const std::size_t cap = std::min(s.workspace_limit, max_bytes);
  for (int i = 0; i < returned; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (r.memory > cap) continue;
    if (fma_only && r.mathType != CUDNN_FMA_MATH && r.mathType != CUDNN_DEFAULT_MATH) continue;
    bytes = workspace_of(r.algo);
    if (bytes > cap) continue;
    return &r;
  }
  return nullptr;
}

cudnnDataType_t data_type(Precision p) {
  switch (p) {
    case Precision::bf16: return CUDNN_DATA_BFLOAT16;
    case Precision::fp16: return CUDNN_DATA_HALF;
    case Precision::fp32: break;
  }
  return CUDNN_DATA_FLOAT;
}

[[noreturn]] void no_algorithm(const char* what, const ConvProblem& p) {
  throw SystemError(std::string("cuDNN offers no usable ") + what + " algorithm for " + describe(p) +
                    " (check the workspace limit and the math mode)");
}

}  // namespace

ConvProblem conv2d_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g, Precision precision) {
  TRAINER_ASSERT(x.c == g.in_channels && y.c == g.out_channels && x.n == y.n && y.h == g.conv_out(x.h) &&
                     y.w == g.conv_out(x.w),
                 "conv2d shapes " << x.str() << " -> " << y.str() << " disagree with the geometry");
  return ConvProblem{x.n, x.c, x.h, x.w, y.c, g.kernel, g.stride, g.pad, y.h, y.w, precision};
}

ConvProblem deconv2d_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g, Precision precision) {
  TRAINER_ASSERT(x.c == g.in_channels && y.c == g.out_channels && x.n == y.n && y.h == g.deconv_out(x.h) &&
                     y.w == g.deconv_out(x.w) && g.output_padding < g.stride,
                 "deconv2d shapes " << x.str() << " -> " << y.str() << " disagree with the geometry");
  return ConvProblem{y.n, y.c, y.h, y.w, x.c, g.kernel, g.stride, g.pad, x.h, x.w, precision};
}

ConvPlan& ConvPlanCache::plan(const ConvProblem& p) {
  auto it = plans_.find(p);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<ConvPlan>();
  const bool fp32 = p.precision == Precision::fp32;
  const cudnnDataType_t dt = data_type(p.precision);
  // The 16-bit copies are NHWC (filters KRSC): the layout tensor-core kernels use
  // without transposing. The fp32 tensors are the user's NCHW tensors themselves.
  const cudnnTensorFormat_t layout = fp32 ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, layout, dt, p.n, p.c, p.h, p.w));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y, layout, dt, p.n, p.k, p.oh, p.ow));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->w, dt, layout, p.k, p.c, p.r, p.r));
  // fp32 accumulation in every precision.
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan->conv, p.pad, p.pad, p.stride, p.stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // fp32: FMA math excludes TF32 tensor-core kernels, which would break parity with
  // the CPU backend on Ampere and Hopper. 16-bit: tensor cores.
  CUDNN_CHECK(cudnnSetConvolutionMathType(
      plan->conv, !fp32 ? CUDNN_TENSOR_OP_MATH : settings_.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  // cuDNN must agree on the output shape we were given.
  int n = 0, k = 0, oh = 0, ow = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->w, &n, &k, &oh, &ow));
  TRAINER_ASSERT(n == p.n && k == p.k && oh == p.oh && ow == p.ow,
                 "convolution output shape disagrees with cuDNN for " << describe(p));
  auto& slot = plans_[p];
  slot = std::move(plan);
  return *slot;
}

void ConvPlanCache::select_forward(cudnnHandle_t handle, ConvPlan& plan, const ConvProblem& p,
                                  std::size_t max_bytes) {
  if (plan.fwd) return;
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(max_count > 0 ? max_count : 1);
  int returned = 0;
  if (settings_.benchmark)
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, plan.x, plan.w, plan.conv, plan.y,
                                                     max_count, &returned, results.data()));
  else
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, plan.x, plan.w, plan.conv, plan.y,
                                                       max_count, &returned, results.data()));
  const auto workspace_of = [&](cudnnConvolutionFwdAlgo_t algo) {
    std::size_t bytes = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x, plan.w, plan.conv, plan.y, algo, &bytes));
    return bytes;
  };
  const auto* best = pick(results, returned, settings_, p, max_bytes, workspace_of, plan.fwd_bytes);
  if (!best) no_algorithm("forward", p);
  plan.fwd = best->algo;
}

void ConvPlanCache::select_backward_data(cudnnHandle_t handle, ConvPlan& plan, const ConvProblem& p,
                                        std::size_t max_bytes) {
  if (plan.bwd_data) return;
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(max_count > 0 ? max_count : 1);
  int returned = 0;
  if (settings_.benchmark)
    CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle, plan.w, plan.y, plan.conv, plan.x,
                                                          max_count, &returned, results.data()));
  else
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, plan.w, plan.y, plan.conv, plan.x,
                                                            max_count, &returned, results.data()));
  const auto workspace_of = [&](cudnnConvolutionBwdDataAlgo_t algo) {
    std::size_t bytes = 0;
    CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataWorkspaceSize(handle, plan.w, plan.y, plan.conv, plan.x, algo, &bytes));
    return bytes;
  };
  const auto* best = pick(results, returned, settings_, p, max_bytes, workspace_of, plan.bwd_data_bytes);
  if (!best) no_algorithm("backward-data", p);
  plan.bwd_data = best->algo;
}

void ConvPlanCache::select_backward_filter(cudnnHandle_t handle, ConvPlan& plan,
                                           const ConvProblem& p, std::size_t max_bytes) {
  if (plan.bwd_filter) return;
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(max_count > 0 ? max_count : 1);
  int returned = 0;
  if (settings_.benchmark)
    CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle, plan.x, plan.y, plan.conv, plan.w,
                                                            max_count, &returned, results.data()));
  else
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, plan.x, plan.y, plan.conv, plan.w, max_count, &returned, results.data()));
  const auto workspace_of = [&](cudnnConvolutionBwdFilterAlgo_t algo) {
    std::size_t bytes = 0;
    CUDNN_CHECK(
        cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, plan.x, plan.y, plan.conv, plan.w, algo, &bytes));
    return bytes;
  };
  const auto* best = pick(results, returned, settings_, p, max_bytes, workspace_of, plan.bwd_filter_bytes);
  if (!best) no_algorithm("backward-filter", p);
  plan.bwd_filter = best->algo;
}

}  // namespace trainer::compute::cuda
