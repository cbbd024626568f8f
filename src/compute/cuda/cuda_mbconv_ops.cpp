// MbConvOps on CUDA (see cuda_mbconv_ops.hpp).
#include "compute/cuda/cuda_mbconv_ops.hpp"

#include "compute/cuda/cuda_check.hpp"        // CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"       // as_cuda
#include "compute/depthwise_chunks.hpp"       // depthwise_weight_chunks
#include "compute/depthwise_shape_check.hpp"  // check_depthwise_shapes
#include "mbconv.cuh"                         // kernels::depthwise_*, silu_*, gate_*, row_mean_*, scale_rows

namespace trainer::compute::cuda {

void CudaMbConvOps::depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                                      Stream& s) {
  check_depthwise_shapes(x, y, g);
  const Shape4 in = x.shape, out = y.shape;
  kernels::depthwise_forward(x.data, w, y.data, in.n, in.c, in.h, in.w, out.h, out.w, g.kernel, g.stride, g.pad,
                             as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                                            Stream& s) {
  check_depthwise_shapes(dx, dy, g);
  const Shape4 in = dx.shape, out = dy.shape;
  kernels::depthwise_backward_data(dy.data, w, dx.data, in.n, in.c, in.h, in.w, out.h, out.w, g.kernel, g.stride,
                                   g.pad, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                               const ConvGeometry& g, Stream& s) {
  check_depthwise_shapes(x, dy, g);
  const Shape4 in = x.shape, out = dy.shape;
  const DepthwiseWeightChunks plan = depthwise_weight_chunks(in.n, in.c, out.h, g.kernel);
  if (chunked_weights_ && plan.chunks > 0) {
    CudaStream& cs = as_cuda(s);
    auto* partials = static_cast<double*>(cs.scratch(plan.partials * sizeof(double)));
    kernels::depthwise_backward_weights_chunked(x.data, dy.data, dw, partials, plan, in.n, in.c, in.h, in.w, out.h,
                                                out.w, g.kernel, g.stride, g.pad, cs.get());
    CUDA_CHECK_LAUNCH();
    return;
  }
  kernels::depthwise_backward_weights(x.data, dy.data, dw, in.n, in.c, in.h, in.w, out.h, out.w, g.kernel, g.stride,
                                      g.pad, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::silu_forward(const float* x, float* y, std::size_t count, Stream& s) {
  kernels::silu_forward(x, y, count, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::silu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) {
  kernels::silu_backward(x, dy, dx, count, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::gate_forward(const float* x, const float* z, float* y, int rows, int width, Stream& s) {
  kernels::gate_forward(x, z, y, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows,
                                  int width, Stream& s) {
  kernels::gate_backward(x, z, dy, dx, dz, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::row_mean_forward(const float* x, float* out, int rows, int width, Stream& s) {
  kernels::row_mean_forward(x, out, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::row_mean_backward_add(const float* dmean, float* dx, int rows, int width, Stream& s) {
  kernels::row_mean_backward_add(dmean, dx, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::scale_rows(const float* x, const float* factors, float* y, int rows, int width, Stream& s) {
  kernels::scale_rows(x, factors, y, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaMbConvOps::stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                                             Stream& s) {
  kernels::stochastic_depth_factors(key, salt, p, factors, rows, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

}  // namespace trainer::compute::cuda
