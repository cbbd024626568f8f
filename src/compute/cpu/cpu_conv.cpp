// Convolutions and transposed convolutions on oneDNN.
//
// Every shape is described once as a forward convolution x -> y with weights
// w[Cout, Cin, k, k] (PyTorch OIHW), and cached as a ConvPlan holding its three
// primitives (forward, backward data, backward weights).
//
// A transposed convolution (PyTorch ConvTranspose2d, weights IOHW) is exactly the
// backward-data pass of the convolution that maps its output back to its input,
// whose OIHW weights are the same bytes as the IOHW deconvolution weights:
//   deconv forward        = conv backward data   (conv x = deconv y, conv y = deconv x)
//   deconv backward data  = conv forward
//   deconv backward wghts = conv backward weights with conv x = deconv dy, conv dy = deconv x
// cuDNN users do the same; it keeps one code path and PyTorch's semantics exactly.
//
// Layouts: primitives are created with format_tag::any so oneDNN picks its fastest
// (blocked) layouts; user tensors stay plain NCHW/OIHW and are reordered into and
// out of the backend's staging buffers only when the chosen layout differs
// (TRAINER_CPU_CONV_LAYOUT=plain keeps everything plain; slower, see
// docs/PERFORMANCE.md).
//
// Mixed precision (bf16 / fp16): the GPU runs these convolutions on 16-bit operands
// with fp32 accumulation and a 16-bit result. Here the same rounding points are
// emulated around the fp32 primitives: both operands are rounded copies
// (compute/float16.hpp, the rules the CUDA cast kernels use), the fp32 result is
// rounded in place. Same numerics as the GPU up to fp32 summation order; no
// speed-up (oneDNN still computes in fp32). The deconvolution bias and its
// gradient stay fp32, from the unrounded dy.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/cpu_storage16.hpp"  // any_16bit, Float32Input, Float32Output
#include "compute/cpu/cpu_conv_plan.hpp"
#include "compute/cpu/dnnl_check.hpp"
#include "compute/float16.hpp"  // f16::round_bf16, round_half
#include "util/error.hpp"

namespace trainer::compute::cpu {

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Makes `user` (plain) available in layout `want`: either the user memory itself or
// the staging buffer, reordered from the user data when `input` is true.
memory stage(StagingBuffer& buf, memory user, const memory::desc& want, const dnnl::engine& eng,
             dnnl::stream& strm, bool input) {
  if (user.get_desc() == want) return user;
  memory staged(want, eng, buf.reserve(want.get_size()));
  if (input) dnnl::reorder(user, staged).execute(strm, user, staged);
  return staged;
}

void unstage(memory staged, memory user, dnnl::stream& strm) {
  if (staged.get() != user.get()) dnnl::reorder(staged, user).execute(strm, staged, user);
}

}  // namespace

ConvPlan& CpuBackend::conv_plan(int n, int cin, int h, int w, int cout, int oh, int ow,
                                int kernel, int stride, int pad) {
  char key[160];
  std::snprintf(key, sizeof key, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", n, cin, h, w, cout, oh, ow,
                kernel, stride, pad);
  auto it = conv_plans_.find(key);
  if (it != conv_plans_.end()) return *it->second;

  // Right padding from the sizes, as PyTorch's oneDNN path does: it may be smaller
  // than the left padding when the last input rows are never reached.
  const memory::dims strides{stride, stride};
  const memory::dims pad_l{pad, pad};
  const memory::dims pad_r{(oh - 1) * stride + kernel - h - pad, (ow - 1) * stride + kernel - w - pad};
  auto plan = std::make_unique<ConvPlan>();
  plan->x_md = memory::desc({n, cin, h, w}, dt::f32, tag::nchw);
  plan->w_md = memory::desc({cout, cin, kernel, kernel}, dt::f32, tag::oihw);
  plan->y_md = memory::desc({n, cout, oh, ow}, dt::f32, tag::nchw);
  const memory::desc x_any = blocked_layouts_ ? memory::desc({n, cin, h, w}, dt::f32, tag::any) : plan->x_md;
  const memory::desc w_any = blocked_layouts_ ? memory::desc({cout, cin, kernel, kernel}, dt::f32, tag::any) : plan->w_md;
  const memory::desc y_any = blocked_layouts_ ? memory::desc({n, cout, oh, ow}, dt::f32, tag::any) : plan->y_md;
  try {
    plan->fwd_pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                        strides, pad_l, pad_r),
        engine_);
    plan->bwd_data_pd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, x_any, w_any,
                                              y_any, strides, pad_l, pad_r),
        engine_, plan->fwd_pd);
    plan->bwd_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, x_any,
                                                 w_any, y_any, strides, pad_l, pad_r),
        engine_, plan->fwd_pd);
  } catch (const dnnl::error& e) {
    throw SystemError(std::string("oneDNN: cannot create convolution primitives for shape ") +
                      key + ": " + e.what());
  }
  return *conv_plans_.emplace(key, std::move(plan)).first->second;
}

void CpuBackend::run_conv_forward(ConvPlan& p, const float* x, const float* w, float* y) {
  if (!p.fwd) p.fwd.emplace(p.fwd_pd);
  memory ux(p.x_md, engine_, const_cast<float*>(x));
  memory uw(p.w_md, engine_, const_cast<float*>(w));
  memory uy(p.y_md, engine_, y);
  memory sx = stage(staging_[0], ux, p.fwd_pd.src_desc(), engine_, dnnl_stream_, true);
  memory sw = stage(staging_[1], uw, p.fwd_pd.weights_desc(), engine_, dnnl_stream_, true);
  memory sy = stage(staging_[2], uy, p.fwd_pd.dst_desc(), engine_, dnnl_stream_, false);
  p.fwd->execute(dnnl_stream_, {{DNNL_ARG_SRC, sx}, {DNNL_ARG_WEIGHTS, sw}, {DNNL_ARG_DST, sy}});
  unstage(sy, uy, dnnl_stream_);
  dnnl_stream_.wait();
}

void CpuBackend::run_conv_backward_data(ConvPlan& p, const float* dy, const float* w, float* dx) {
  if (!p.bwd_data) p.bwd_data.emplace(*p.bwd_data_pd);
  memory udy(p.y_md, engine_, const_cast<float*>(dy));
  memory uw(p.w_md, engine_, const_cast<float*>(w));
  memory udx(p.x_md, engine_, dx);
  memory sdy = stage(staging_[0], udy, p.bwd_data_pd->diff_dst_desc(), engine_, dnnl_stream_, true);
  memory sw = stage(staging_[1], uw, p.bwd_data_pd->weights_desc(), engine_, dnnl_stream_, true);
  memory sdx = stage(staging_[2], udx, p.bwd_data_pd->diff_src_desc(), engine_, dnnl_stream_, false);
  p.bwd_data->execute(dnnl_stream_,
                      {{DNNL_ARG_DIFF_DST, sdy}, {DNNL_ARG_WEIGHTS, sw}, {DNNL_ARG_DIFF_SRC, sdx}});
  unstage(sdx, udx, dnnl_stream_);
  dnnl_stream_.wait();
}

void CpuBackend::run_conv_backward_weights(ConvPlan& p, const float* x, const float* dy,
                                           float* dw) {
  if (!p.bwd_weights) p.bwd_weights.emplace(*p.bwd_weights_pd);
  memory ux(p.x_md, engine_, const_cast<float*>(x));
  memory udy(p.y_md, engine_, const_cast<float*>(dy));
  memory udw(p.w_md, engine_, dw);
  memory sx = stage(staging_[0], ux, p.bwd_weights_pd->src_desc(), engine_, dnnl_stream_, true);
  memory sdy = stage(staging_[1], udy, p.bwd_weights_pd->diff_dst_desc(), engine_, dnnl_stream_, true);
  memory sdw =
      stage(staging_[2], udw, p.bwd_weights_pd->diff_weights_desc(), engine_, dnnl_stream_, false);
  p.bwd_weights->execute(dnnl_stream_,
                         {{DNNL_ARG_SRC, sx}, {DNNL_ARG_DIFF_DST, sdy}, {DNNL_ARG_DIFF_WEIGHTS, sdw}});
  unstage(sdw, udw, dnnl_stream_);
  dnnl_stream_.wait();
}

// ---- convolution ------------------------------------------------------------

namespace {
void check_conv(const Shape4& x, const Shape4& y, const ConvGeometry& g, const char* op) {
  TRAINER_ASSERT(x.c == g.in_channels && y.c == g.out_channels && x.n == y.n &&
                     y.h == g.conv_out(x.h) && y.w == g.conv_out(x.w),
                 op << ": x " << x.str() << " y " << y.str() << " do not match the geometry");
}
void check_deconv(const Shape4& x, const Shape4& y, const ConvGeometry& g, const char* op) {
  TRAINER_ASSERT(x.c == g.in_channels && y.c == g.out_channels && x.n == y.n &&
                     y.h == g.deconv_out(x.h) && y.w == g.deconv_out(x.w) &&
                     g.output_padding < g.stride,
                 op << ": x " << x.str() << " y " << y.str() << " do not match the geometry");
}
}  // namespace

void CpuBackend::conv2d_forward(ConstTensorView x, const float* w, TensorView y,
                                const ConvGeometry& g, Stream& s) {
  if (any_16bit({x.storage, y.storage})) {
    Float32Input x32(x);
    Float32Output y32(y);
    conv2d_forward(x32.view(), w, y32.view(), g, s);
    y32.store();
    return;
  }

  check_conv(x.shape, y.shape, g, "conv2d_forward");
  enter();
  ConvPlan& p = conv_plan(x.shape.n, x.shape.c, x.shape.h, x.shape.w, y.shape.c, y.shape.h,
                          y.shape.w, g.kernel, g.stride, g.pad);
  const float* xr = rounded_operand(0, x.data, x.shape.numel());
  const float* wr = rounded_operand(1, w, std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel);
  DNNL_CHECK(run_conv_forward(p, xr, wr, y.data));
  round_result(y.data, y.shape.numel());
}

void CpuBackend::conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                      const ConvGeometry& g, Stream& s) {
  if (any_16bit({dy.storage, dx.storage})) {
    Float32Input dy32(dy);
    Float32Output dx32(dx);
    conv2d_backward_data(dy32.view(), w, dx32.view(), g, s);
    dx32.store();
    return;
  }

  check_conv(dx.shape, dy.shape, g, "conv2d_backward_data");
  enter();
  ConvPlan& p = conv_plan(dx.shape.n, dx.shape.c, dx.shape.h, dx.shape.w, dy.shape.c, dy.shape.h,
                          dy.shape.w, g.kernel, g.stride, g.pad);
  const float* dyr = rounded_operand(0, dy.data, dy.shape.numel());
  const float* wr = rounded_operand(1, w, std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel);
  DNNL_CHECK(run_conv_backward_data(p, dyr, wr, dx.data));
  round_result(dx.data, dx.shape.numel());
}

void CpuBackend::conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                         const ConvGeometry& g, Stream& s) {
  if (any_16bit({x.storage, dy.storage})) {
    Float32Input x32(x), dy32(dy);
    conv2d_backward_weights(x32.view(), dy32.view(), dw, g, s);
    return;
  }

  check_conv(x.shape, dy.shape, g, "conv2d_backward_weights");
  enter();
  ConvPlan& p = conv_plan(x.shape.n, x.shape.c, x.shape.h, x.shape.w, dy.shape.c, dy.shape.h,
                          dy.shape.w, g.kernel, g.stride, g.pad);
  const float* xr = rounded_operand(0, x.data, x.shape.numel());
  const float* dyr = rounded_operand(1, dy.data, dy.shape.numel());
  const std::size_t wcount = std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel;
  DNNL_CHECK(run_conv_backward_weights(p, xr, dyr, dw));
  round_result(dw, wcount);
}

// ---- transposed convolution --------------------------------------------------
// The equivalent convolution maps deconv y [N, Cout, OH, OW] to deconv x [N, Cin, H, W]
// with Cin output channels: its OIHW weights are the deconv's IOHW weights.

void CpuBackend::deconv2d_forward(ConstTensorView x, const float* w, const float* bias,
                                  TensorView y, const ConvGeometry& g, Stream&) {
  check_deconv(x.shape, y.shape, g, "deconv2d_forward");
  enter();
  ConvPlan& p = conv_plan(y.shape.n, y.shape.c, y.shape.h, y.shape.w, x.shape.c, x.shape.h,
                          x.shape.w, g.kernel, g.stride, g.pad);
  const float* xr = rounded_operand(0, x.data, x.shape.numel());
  const float* wr = rounded_operand(1, w, std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel);
  DNNL_CHECK(run_conv_backward_data(p, xr, wr, y.data));
  round_result(y.data, y.shape.numel());
  if (bias) {
    const long planes = long(y.shape.n) * y.shape.c;
    const long hw = long(y.shape.plane());
    const int c = y.shape.c;
    float* out = y.data;
#pragma omp parallel for schedule(static)
    for (long pl = 0; pl < planes; ++pl) {
      const float b = bias[pl % c];
      float* o = out + pl * hw;
      for (long i = 0; i < hw; ++i) o[i] += b;
    }
  }
}

void CpuBackend::deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                        const ConvGeometry& g, Stream&) {
  check_deconv(dx.shape, dy.shape, g, "deconv2d_backward_data");
  enter();
  ConvPlan& p = conv_plan(dy.shape.n, dy.shape.c, dy.shape.h, dy.shape.w, dx.shape.c, dx.shape.h,
                          dx.shape.w, g.kernel, g.stride, g.pad);
  const float* dyr = rounded_operand(0, dy.data, dy.shape.numel());
  const float* wr = rounded_operand(1, w, std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel);
  DNNL_CHECK(run_conv_forward(p, dyr, wr, dx.data));
  round_result(dx.data, dx.shape.numel());
}

void CpuBackend::deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                           float* dbias, const ConvGeometry& g, Stream&) {
  check_deconv(x.shape, dy.shape, g, "deconv2d_backward_weights");
  enter();
  ConvPlan& p = conv_plan(dy.shape.n, dy.shape.c, dy.shape.h, dy.shape.w, x.shape.c, x.shape.h,
                          x.shape.w, g.kernel, g.stride, g.pad);
  const float* dyr = rounded_operand(0, dy.data, dy.shape.numel());
  const float* xr = rounded_operand(1, x.data, x.shape.numel());
  DNNL_CHECK(run_conv_backward_weights(p, dyr, xr, dw));
  round_result(dw, std::size_t(g.out_channels) * g.in_channels * g.kernel * g.kernel);
  if (dbias) {
    const int n = dy.shape.n, c = dy.shape.c;
    const long hw = long(dy.shape.plane());
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ++ch) {
      double acc = 0;
      for (int b = 0; b < n; ++b) {
        const float* d = dy.data + (long(b) * c + ch) * hw;
        // In double: a plane's terms can cancel hundreds to one (a deconvolution
        // between two others at downsample_factor 1), where a float running sum
        // keeps 1e-3 of the total.
        double part = 0;
        for (long i = 0; i < hw; ++i) part += d[i];
        acc += part;
      }
      dbias[ch] = float(acc);
    }
  }
}

// ---- mixed-precision emulation ---------------------------------------------

namespace {
template <typename Round>
void round_copy(const float* src, float* dst, std::size_t count, Round round) {
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (long i = 0; i < n; ++i) dst[i] = round(src[i]);
}
}  // namespace

const float* CpuBackend::rounded_operand(int slot, const float* src, std::size_t count) {
  if (precision_ == Precision::fp32) return src;
  auto* dst = static_cast<float*>(rounded_[slot].reserve(count * sizeof(float)));
  if (precision_ == Precision::bf16)
    round_copy(src, dst, count, f16::round_bf16);
  else
    round_copy(src, dst, count, f16::round_half);
  return dst;
}

void CpuBackend::round_result(float* data, std::size_t count) {
  if (precision_ == Precision::bf16)
    round_copy(data, data, count, f16::round_bf16);
  else if (precision_ == Precision::fp16)
    round_copy(data, data, count, f16::round_half);
}

StagingBuffer::~StagingBuffer() { std::free(data_); }

void* StagingBuffer::reserve(std::size_t bytes) {
  if (bytes > bytes_) {
    std::free(data_);
    data_ = nullptr;
    bytes_ = 0;
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded);
    if (!data_) throw SystemError("out of host memory staging " + std::to_string(bytes) + " bytes");
    bytes_ = rounded;
  }
  return data_;
}

}  // namespace trainer::compute::cpu
