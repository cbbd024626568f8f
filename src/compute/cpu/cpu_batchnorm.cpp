// Batch norm in the split form that synchronized batch norm needs (local sums,
// then a finalize from the global sums), PyTorch semantics: biased variance to
// normalize, unbiased variance in running_var, running = (1-m)*running + m*batch.
// Plain loops over NCHW, parallel over channels; sums accumulate per plane in
// float and across planes in double. Statistics are (count, mean, M2) per plane
// (two passes over the plane in float: the second sums deviations, which are
// small) merged across planes and ranks with Chan's formula in double
// (compute/batchnorm_moments.hpp).
#include <cmath>  // std::sqrt

#include "compute/batchnorm_apply_rule.hpp"  // batchnorm_affine_of, batchnorm_affine, relu_masked, store_param_grads
#include "compute/batchnorm_moments.hpp"      // Moments, merge_moments, store_moments, finalize_channel

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/cpu_storage16.hpp"  // any_16bit, Float32Input, Float32Output
#include "util/error.hpp"

namespace trainer::compute::cpu {

void CpuBackend::batchnorm_stats(ConstTensorView x, float* stats, Stream& s) {
  if (is_16bit(x.storage)) return batchnorm_stats(Float32Input(x).view(), stats, s);

  enter();
  const int n = x.shape.n, c = x.shape.c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0, sumsq = 0;
    for (int b = 0; b < n; ++b) {
      const float* p = x.data + (long(b) * c + ch) * hw;
      float s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
      for (long i = 0; i < hw; ++i) {
        s1 += p[i];
        s2 += p[i] * p[i];
      }
      sum += s1;
      sumsq += s2;
    }
    stats[ch] = float(sum);
    stats[c + ch] = float(sumsq);
  }
}

void CpuBackend::batchnorm_moments(ConstTensorView x, float* moments, Stream& s) {
  if (is_16bit(x.storage)) return batchnorm_moments(Float32Input(x).view(), moments, s);

  enter();
  const int n = x.shape.n, c = x.shape.c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < c; ++ch) {
    Moments m;
    for (int b = 0; b < n && hw > 0; ++b) {
      const float* p = x.data + (long(b) * c + ch) * hw;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (long i = 0; i < hw; ++i) s += p[i];
      const float shift = s / float(hw);  // the plane's mean, to within float rounding
      float d1 = 0, d2 = 0;
#pragma omp simd reduction(+ : d1, d2)
      for (long i = 0; i < hw; ++i) {
        const float d = p[i] - shift;
        d1 += d;
        d2 += d * d;
      }
      // Corrected two-pass: d1 (zero in exact arithmetic) removes the shift's rounding.
      const double plane_mean = double(shift) + double(d1) / double(hw);
      const double plane_m2 = double(d2) - double(d1) * double(d1) / double(hw);
      merge_moments(m, double(hw), plane_mean, plane_m2 > 0 ? plane_m2 : 0.0);
    }
    store_moments(moments, c, ch, m.mean, m.m2);
  }
  moments[3 * c] = float(double(n) * double(hw));
}

void CpuBackend::batchnorm_finalize(const float* moments, int ranks, int channels, float eps,
                                    float momentum, float* mean, float* invstd,
                                    float* running_mean, float* running_var, Stream&) {
  const std::size_t block = batchnorm_moments_size(channels);
  for (int ch = 0; ch < channels; ++ch) {
    Moments m;
    for (int r = 0; r < ranks; ++r) merge_moments(m, moments + std::size_t(r) * block, channels, ch);
    TRAINER_ASSERT(m.count > 0, "batchnorm_finalize over zero values");
    finalize_channel(m, ch, eps, momentum, mean, invstd, running_mean, running_var);
  }
}

void CpuBackend::batchnorm_inference_stats(const float* running_mean, const float* running_var,
                                           int channels, float eps, float* mean, float* invstd,
                                           Stream&) {
  for (int ch = 0; ch < channels; ++ch) {
    mean[ch] = running_mean[ch];
    invstd[ch] = float(1.0 / std::sqrt(double(running_var[ch]) + double(eps)));
  }
}

void CpuBackend::batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd,
                                 const float* gamma, const float* beta, TensorView y, Stream& s) {
  if (any_16bit({x.storage, y.storage})) {
    Float32Output y32(y);
    batchnorm_apply(Float32Input(x).view(), mean, invstd, gamma, beta, y32.view(), s);
    y32.store();
    return;
  }

  TRAINER_ASSERT(x.shape == y.shape, "batchnorm_apply shapes " << x.shape.str() << " "
                                                               << y.shape.str());
  enter();
  const int c = x.shape.c;
  const long planes = long(x.shape.n) * c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const BatchnormAffine a = batchnorm_affine_of(mean, invstd, gamma, beta, int(pl % c));
    const float* in = x.data + pl * hw;
    float* out = y.data + pl * hw;
    for (long i = 0; i < hw; ++i) out[i] = batchnorm_affine(in[i], a);
  }
}

void CpuBackend::batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd,
                                      const float* gamma, const float* beta, const float* residual, TensorView y,
                                      Stream& s) {
  if (any_16bit({x.storage, y.storage})) {
    Float32Output y32(y);
    batchnorm_apply_relu(Float32Input(x).view(), mean, invstd, gamma, beta, Float32Input(residual, x).data(),
                         y32.view(), s);
    y32.store();
    return;
  }

  TRAINER_ASSERT(x.shape == y.shape, "batchnorm_apply_relu shapes " << x.shape.str() << " " << y.shape.str());
  enter();
  const int c = x.shape.c;
  const long planes = long(x.shape.n) * c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const BatchnormAffine a = batchnorm_affine_of(mean, invstd, gamma, beta, int(pl % c));
    const float* in = x.data + pl * hw;
    float* out = y.data + pl * hw;
    if (residual) {
      const float* r = residual + pl * hw;
      for (long i = 0; i < hw; ++i) out[i] = batchnorm_add_relu(in[i], a, r[i]);
    } else {
      for (long i = 0; i < hw; ++i) out[i] = batchnorm_relu(in[i], a);
    }
  }
}

namespace {
// What reaches a batch norm's backward from above, per element: dy itself, or dy
// masked by the ReLU that followed it (the mask recomputed from x).
struct Unmasked {
  float operator()(float dy, float) const { return dy; }
};
struct ReluMasked {
  BatchnormAffine affine;
  float operator()(float dy, float x) const { return relu_masked(dy, x, affine); }
};

// reduce[0..C) = sum g; reduce[C..2C) = sum g * (x - mean), g = gradient_of(ch)(dy, x):
// per plane in float, across planes in double.
template <typename GradientOf>
void backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean, float* reduce,
                     const GradientOf& gradient_of) {
  const int n = x.shape.n, c = x.shape.c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (int ch = 0; ch < c; ++ch) {
    const auto gradient = gradient_of(ch);
    double sdy = 0, sdyx = 0;
    const float mu = mean[ch];
    for (int b = 0; b < n; ++b) {
      const long off = (long(b) * c + ch) * hw;
      const float* d = dy.data + off;
      const float* p = x.data + off;
      float s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
      for (long i = 0; i < hw; ++i) {
        const float g = gradient(d[i], p[i]);
        s1 += g;
        s2 += g * (p[i] - mu);
      }
      sdy += s1;
      sdyx += s2;
    }
    reduce[ch] = float(sdy);
    reduce[c + ch] = float(sdyx);
  }
}

// dx = (g - mean(g) - (x - mu) * invstd^2 * mean(g * (x - mu))) * invstd * gamma.
template <typename GradientOf>
void backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                    const float* gamma, const float* reduce, double count, TensorView dx,
                    const GradientOf& gradient_of) {
  const int c = x.shape.c;
  const long planes = long(x.shape.n) * c;
  const long hw = long(x.shape.plane());
#pragma omp parallel for schedule(static)
  for (long pl = 0; pl < planes; ++pl) {
    const int ch = int(pl % c);
    const auto gradient = gradient_of(ch);
    const float is = invstd[ch];
    const float g = gamma ? gamma[ch] : 1.f;
    const float mean_dy = float(reduce[ch] / count);
    const float proj = float(reduce[c + ch] / count) * is * is;
    const float mu = mean[ch];
    const float k = is * g;
    const float* d = dy.data + pl * hw;
    const float* p = x.data + pl * hw;
    float* o = dx.data + pl * hw;
    for (long i = 0; i < hw; ++i) o[i] = (gradient(d[i], p[i]) - mean_dy - (p[i] - mu) * proj) * k;
  }
}
}  // namespace

void CpuBackend::batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x,
                                           const float* mean, float* reduce, Stream& s) {
  if (any_16bit({dy.storage, x.storage}))
    return batchnorm_backward_reduce(Float32Input(dy).view(), Float32Input(x).view(), mean, reduce, s);

  TRAINER_ASSERT(x.shape == dy.shape, "batchnorm_backward_reduce shapes");
  enter();
  backward_reduce(dy, x, mean, reduce, [](int) { return Unmasked{}; });
}

void CpuBackend::batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                const float* invstd, const float* gamma, const float* beta,
                                                float* reduce, Stream& s) {
  if (any_16bit({dy.storage, x.storage}))
    return batchnorm_relu_backward_reduce(Float32Input(dy).view(), Float32Input(x).view(), mean, invstd, gamma, beta,
                                          reduce, s);

  TRAINER_ASSERT(x.shape == dy.shape, "batchnorm_relu_backward_reduce shapes");
  enter();
  backward_reduce(dy, x, mean, reduce,
                  [&](int ch) { return ReluMasked{batchnorm_affine_of(mean, invstd, gamma, beta, ch)}; });
}

void CpuBackend::batchnorm_param_grads(const float* reduce, const float* invstd, int channels,
                                       float* dgamma, float* dbeta, Stream&) {
  for (int ch = 0; ch < channels; ++ch) store_param_grads(reduce[ch], reduce[channels + ch], invstd[ch], ch, dgamma, dbeta);
}

void CpuBackend::batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x,
                                          const float* mean, const float* invstd,
                                          const float* gamma, const float* reduce, double count,
                                          TensorView dx, Stream& s) {
  if (any_16bit({dy.storage, x.storage, dx.storage})) {
    Float32Output dx32(dx);
    batchnorm_backward_apply(Float32Input(dy).view(), Float32Input(x).view(), mean, invstd, gamma, reduce, count,
                             dx32.view(), s);
    dx32.store();
    return;
  }

  TRAINER_ASSERT(x.shape == dy.shape && x.shape == dx.shape, "batchnorm_backward_apply shapes");
  enter();
  backward_apply(dy, x, mean, invstd, gamma, reduce, count, dx, [](int) { return Unmasked{}; });
}

void CpuBackend::batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                               const float* invstd, const float* gamma, const float* beta,
                                               const float* reduce, double count, TensorView dx, Stream& s) {
  if (any_16bit({dy.storage, x.storage, dx.storage})) {
    Float32Output dx32(dx);
    batchnorm_relu_backward_apply(Float32Input(dy).view(), Float32Input(x).view(), mean, invstd, gamma, beta, reduce,
                                  count, dx32.view(), s);
    dx32.store();
    return;
  }

  TRAINER_ASSERT(x.shape == dy.shape && x.shape == dx.shape, "batchnorm_relu_backward_apply shapes");
  enter();
  backward_apply(dy, x, mean, invstd, gamma, reduce, count, dx,
                 [&](int ch) { return ReluMasked{batchnorm_affine_of(mean, invstd, gamma, beta, ch)}; });
}

}  // namespace trainer::compute::cpu
