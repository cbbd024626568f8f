// MbConvOps on the CPU (see cpu_mbconv_ops.hpp).
#include "compute/cpu/cpu_mbconv_ops.hpp"

#include <omp.h>

#include "compute/depthwise_shape_check.hpp"  // check_depthwise_shapes
#include "compute/mbconv_rule.hpp"  // depthwise_output, depthwise_input_gradient, silu_*, mbconv_sigmoid

namespace trainer::compute::cpu {

void CpuMbConvOps::depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                                     Stream&) {
  check_depthwise_shapes(x, y, g);
  const Shape4 in = x.shape, out = y.shape;
  const int k = g.kernel;
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (long p = 0; p < long(in.n) * in.c; ++p) {
    const float* plane = x.data + std::size_t(p) * in.plane();
    const float* f = w + std::size_t(p % in.c) * k * k;
    float* o = y.data + std::size_t(p) * out.plane();
    for (int oy = 0; oy < out.h; ++oy)
      for (int ox = 0; ox < out.w; ++ox)
        o[oy * out.w + ox] = depthwise_output(plane, in.h, in.w, f, k, g.stride, g.pad, oy, ox);
  }
}

void CpuMbConvOps::depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                                           Stream&) {
  check_depthwise_shapes(dx, dy, g);
  const Shape4 in = dx.shape, out = dy.shape;
  const int k = g.kernel;
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (long p = 0; p < long(in.n) * in.c; ++p) {
    const float* d = dy.data + std::size_t(p) * out.plane();
    const float* f = w + std::size_t(p % in.c) * k * k;
    float* o = dx.data + std::size_t(p) * in.plane();
    for (int iy = 0; iy < in.h; ++iy)
      for (int ix = 0; ix < in.w; ++ix)
        o[iy * in.w + ix] = depthwise_input_gradient(d, out.h, out.w, f, k, g.stride, g.pad, iy, ix);
  }
}

void CpuMbConvOps::depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                                              Stream&) {
  check_depthwise_shapes(x, dy, g);
  const Shape4 in = x.shape, out = dy.shape;
  const int k = g.kernel;
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int c = 0; c < in.c; ++c) {
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        double sum = 0;
        for (int n = 0; n < in.n; ++n) {
          const float* plane = x.data + (std::size_t(n) * in.c + c) * in.plane();
          const float* d = dy.data + (std::size_t(n) * in.c + c) * out.plane();
          for (int oy = 0; oy < out.h; ++oy) {
            const int iy = oy * g.stride - g.pad + i;
            if (iy < 0 || iy >= in.h) continue;
            for (int ox = 0; ox < out.w; ++ox) {
              const int ix = ox * g.stride - g.pad + j;
              if (ix < 0 || ix >= in.w) continue;
              sum += double(d[oy * out.w + ox]) * plane[iy * in.w + ix];
            }
          }
        }
        dw[(std::size_t(c) * k + i) * k + j] = float(sum);
      }
  }
}

void CpuMbConvOps::silu_forward(const float* x, float* y, std::size_t count, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (long i = 0; i < long(count); ++i) y[i] = silu_value(x[i]);
}

void CpuMbConvOps::silu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (long i = 0; i < long(count); ++i) dx[i] = silu_gradient(x[i], dy[i]);
}

void CpuMbConvOps::gate_forward(const float* x, const float* z, float* y, int rows, int width, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int r = 0; r < rows; ++r) {
    const float s = mbconv_sigmoid(z[r]);
    const std::size_t base = std::size_t(r) * width;
    for (int j = 0; j < width; ++j) y[base + j] = x[base + j] * s;
  }
}

void CpuMbConvOps::gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows,
                                 int width, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int r = 0; r < rows; ++r) {
    const float s = mbconv_sigmoid(z[r]);
    const std::size_t base = std::size_t(r) * width;
    double sum = 0;
    for (int j = 0; j < width; ++j) {
      sum += double(dy[base + j]) * x[base + j];
      dx[base + j] = dy[base + j] * s;
    }
    dz[r] = float(sum) * s * (1.f - s);
  }
}

void CpuMbConvOps::row_mean_forward(const float* x, float* out, int rows, int width, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    const float* row = x + std::size_t(r) * width;
    for (int j = 0; j < width; ++j) sum += row[j];
    out[r] = float(sum / width);
  }
}

void CpuMbConvOps::row_mean_backward_add(const float* dmean, float* dx, int rows, int width, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int r = 0; r < rows; ++r) {
    const float share = dmean[r] / float(width);
    float* row = dx + std::size_t(r) * width;
    for (int j = 0; j < width; ++j) row[j] += share;
  }
}

void CpuMbConvOps::scale_rows(const float* x, const float* factors, float* y, int rows, int width, Stream&) {
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (int r = 0; r < rows; ++r) {
    const float f = factors[r];
    const std::size_t base = std::size_t(r) * width;
    for (int j = 0; j < width; ++j) y[base + j] = x[base + j] * f;
  }
}

void CpuMbConvOps::stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                                            Stream&) {
  for (int r = 0; r < rows; ++r) factors[r] = stochastic_depth_factor(key[0], key[1], salt, std::uint32_t(r), p);
}

}  // namespace trainer::compute::cpu
