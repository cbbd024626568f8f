// TransformerOps on the CPU (see cpu_transformer_ops.hpp). Formulas: docs/COMPUTE.md,
// "Transformer ops"; the same ones the CUDA kernels in kernels/transformer.cu use.
#include "compute/cpu/cpu_transformer_ops.hpp"

#include <omp.h>

#include <algorithm>  // std::max, std::copy, std::fill
#include <cmath>      // std::erf, std::exp, std::sqrt
#include <string>     // std::to_string
#include <vector>     // std::vector of per-thread partial sums

#include <oneapi/dnnl/dnnl.h>  // dnnl_sgemm

#include "compute/cpu/gelu_erf.hpp"  // gelu, gelu_slope
#include "compute/float16.hpp"       // f16::round_bf16, round_half
#include "util/error.hpp"        // SystemError, detail::throw_system_error

namespace trainer::compute::cpu {
namespace {

#define SGEMM_CHECK(call)                                                                                  \
  do {                                                                                                     \
    const dnnl_status_t trainer_sgemm_rc_ = (call);                                                        \
    if (trainer_sgemm_rc_ != dnnl_success)                                                                 \
      ::trainer::detail::throw_system_error("oneDNN", #call, "status " + std::to_string(int(trainer_sgemm_rc_)), \
                                            __FILE__, __LINE__);                                           \
  } while (0)

// Row-major C = alpha op(A) op(B) + beta C through oneDNN's GEMM.
void sgemm(bool ta, bool tb, long long m, long long n, long long k, float alpha, const float* a, long long lda,
           const float* b, long long ldb, float beta, float* c, long long ldc) {
  SGEMM_CHECK(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

// out[j] = sum over rows i of term(i, j): each thread sums a fixed range of rows in
// double, then the partials are added in thread order (no atomics, no races, the
// same result for the same thread count).
template <class Term>
void column_reduce(int rows, int width, int threads, float* out, Term term) {
  std::vector<double> partial(std::size_t(threads) * width, 0.0);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int begin = int(static_cast<long long>(rows) * t / nt), end = int(static_cast<long long>(rows) * (t + 1) / nt);
    double* acc = partial.data() + std::size_t(t) * width;
    for (int i = begin; i < end; ++i)
      for (int j = 0; j < width; ++j) acc[j] += term(i, j);
  }
  for (int j = 0; j < width; ++j) {
    double sum = 0;
    for (int t = 0; t < threads; ++t) sum += partial[std::size_t(t) * width + j];
    out[j] = float(sum);
  }
}

}  // namespace

void CpuTransformerOps::enter() const { omp_set_num_threads(threads_); }

const float* CpuTransformerOps::operand(int slot, const float* src, const std::uint16_t* src16, std::size_t count,
                                        bool autocast) {
  const Precision p = autocast_precision();
  if (!autocast || p == Precision::fp32) return src;
  std::vector<float>& dst = rounded_[slot];
  if (dst.size() < count) dst.resize(count);
  const long n = long(count);
  if (src16 && p == Precision::bf16) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) dst[i] = f16::bf16_to_float(src16[i]);
  } else if (src16) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) dst[i] = f16::half_to_float(src16[i]);
  } else if (p == Precision::bf16) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) dst[i] = f16::round_bf16(src[i]);
  } else {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) dst[i] = f16::round_half(src[i]);
  }
  return dst.data();
}

void CpuTransformerOps::write_copy(const float* y, std::uint16_t* y16, std::size_t count) const {
  if (!y16) return;
  const Precision p = autocast_precision();
  if (p == Precision::fp32) throw SystemError("internal error: a 16-bit activation copy asked for in fp32");
  const long n = long(count);
  if (p == Precision::bf16) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) y16[i] = f16::float_to_bf16(y[i]);
  } else {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) y16[i] = f16::float_to_half(y[i]);
  }
}

void CpuTransformerOps::matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) {
  matmul_with_copies(g, a, nullptr, b, nullptr, c, s);
}

void CpuTransformerOps::matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16,
                                           const float* b, const std::uint16_t* b16, float* c, Stream&) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    throw SystemError("internal error: matmul [" + std::to_string(g.m) + " x " + std::to_string(g.k) + "] * [" +
                      std::to_string(g.k) + " x " + std::to_string(g.n) + "] x " + std::to_string(g.batch));
  enter();
  a = operand(0, a, a16, matmul_span_a(g), g.autocast);
  b = operand(1, b, b16, matmul_span_b(g), g.autocast);
  const auto one = [&](int i) {
    sgemm(g.transpose_a, g.transpose_b, g.m, g.n, g.k, g.alpha, a + i * g.stride_a, g.lda, b + i * g.stride_b, g.ldb,
          g.beta, c + i * g.stride_c, g.ldc);
  };
  if (g.batch >= threads_ && threads_ > 1) {
    // Small products (one attention head each): one per thread beats splitting each.
    // oneDNN runs single-threaded inside a parallel region.
    std::string failure;
#pragma omp parallel for schedule(dynamic) num_threads(threads_)
    for (int i = 0; i < g.batch; ++i) {
      try {
        one(i);
      } catch (const std::exception& e) {
#pragma omp critical(trainer_cpu_matmul)
        failure = e.what();
      }
    }
    if (!failure.empty()) throw SystemError(failure);
  } else {
    for (int i = 0; i < g.batch; ++i) one(i);
  }
}

void CpuTransformerOps::layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                                           std::uint16_t* y16, float* mean, float* rstd, int rows, int width, float eps,
                                           Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const float* xi = x + std::size_t(i) * width;
    double sum = 0;
    for (int j = 0; j < width; ++j) sum += xi[j];
    const double mu = sum / width;
    double sq = 0;
    for (int j = 0; j < width; ++j) sq += (xi[j] - mu) * (xi[j] - mu);
    const float r = float(1.0 / std::sqrt(sq / width + double(eps)));
    const float m = float(mu);
    float* yi = y + std::size_t(i) * width;
    for (int j = 0; j < width; ++j) yi[j] = (xi[j] - m) * r * gamma[j] + beta[j];
    mean[i] = m;
    rstd[i] = r;
  }
  write_copy(y, y16, std::size_t(rows) * width);
}

void CpuTransformerOps::layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                            const float* dy, float* dx, float* dgamma, float* dbeta, int rows,
                                            int width, Stream&) {
  enter();
  const auto xhat = [&](int i, int j) { return (x[std::size_t(i) * width + j] - mean[i]) * rstd[i]; };
  // Parameter gradients first: dx may not alias anything, but keep dy intact for them.
  column_reduce(rows, width, threads_, dgamma, [&](int i, int j) { return double(dy[std::size_t(i) * width + j]) * xhat(i, j); });
  column_reduce(rows, width, threads_, dbeta, [&](int i, int j) { return double(dy[std::size_t(i) * width + j]); });
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const float* dyi = dy + std::size_t(i) * width;
    double sum_g = 0, sum_gx = 0;
    for (int j = 0; j < width; ++j) {
      const double g = double(dyi[j]) * gamma[j];
      sum_g += g;
      sum_gx += g * xhat(i, j);
    }
    const float mg = float(sum_g / width), mgx = float(sum_gx / width);
    float* dxi = dx + std::size_t(i) * width;
    for (int j = 0; j < width; ++j) dxi[j] = rstd[i] * (dyi[j] * gamma[j] - mg - xhat(i, j) * mgx);
  }
}

// Vectorized by the compiler (gelu_erf.hpp; this file is built with -fno-trapping-math,
// without which GCC keeps the exponential's clamp a branch).
void CpuTransformerOps::gelu_forward(const float* x, float* y, std::uint16_t* y16, std::size_t count, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) y[i] = gelu(x[i]);
  write_copy(y, y16, count);
}

void CpuTransformerOps::gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) dx[i] = dy[i] * gelu_slope(x[i]);
}

void CpuTransformerOps::softmax_forward(const float* x, float* y, int rows, int cols, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const float* xi = x + std::size_t(i) * cols;
    float* yi = y + std::size_t(i) * cols;
    float top = xi[0];
    for (int j = 1; j < cols; ++j) top = std::max(top, xi[j]);
    double sum = 0;
    for (int j = 0; j < cols; ++j) {
      yi[j] = std::exp(xi[j] - top);
      sum += yi[j];
    }
    const float inv = float(1.0 / sum);
    for (int j = 0; j < cols; ++j) yi[j] *= inv;
  }
}

void CpuTransformerOps::softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const float* yi = y + std::size_t(i) * cols;
    const float* dyi = dy + std::size_t(i) * cols;
    double dot = 0;
    for (int j = 0; j < cols; ++j) dot += double(dyi[j]) * yi[j];
    float* dxi = dx + std::size_t(i) * cols;
    for (int j = 0; j < cols; ++j) dxi[j] = yi[j] * (dyi[j] - float(dot));
  }
}

void CpuTransformerOps::add_bias(float* x, const float* bias, int rows, int width, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) x[std::size_t(i) * width + j] += bias[j];
}

void CpuTransformerOps::column_sums(const float* dy, float* dbias, int rows, int width, Stream&) {
  enter();
  column_reduce(rows, width, threads_, dbias, [&](int i, int j) { return double(dy[std::size_t(i) * width + j]); });
}

void CpuTransformerOps::layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width,
                                            Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) y[std::size_t(i) * width + j] = x[std::size_t(i) * width + j] * gamma[j];
}

void CpuTransformerOps::layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx,
                                             float* dgamma, int rows, int width, Stream&) {
  enter();
  column_reduce(rows, width, threads_, dgamma,
                [&](int i, int j) { return double(dy[std::size_t(i) * width + j]) * x[std::size_t(i) * width + j]; });
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) dx[std::size_t(i) * width + j] = dy[std::size_t(i) * width + j] * gamma[j];
}

void CpuTransformerOps::add(const float* a, const float* b, float* y, std::size_t count, Stream&) {
  enter();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

void CpuTransformerOps::transpose(const float* in, long long in_ld, long long in_stride, float* out,
                                  long long out_stride, int batch, int rows, int cols, Stream&) {
  enter();
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < batch; ++i)
    for (int c = 0; c < cols; ++c) {
      float* o = out + i * out_stride + std::size_t(c) * rows;
      const float* src = in + i * in_stride + c;
      for (int r = 0; r < rows; ++r) o[r] = src[r * in_ld];
    }
}

void CpuTransformerOps::patchify(const float* images, float* patches, int batch, int channels, int height, int width,
                                 int patch, Stream&) {
  enter();
  const int ph = height / patch, pw = width / patch, row = channels * patch * patch;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < batch; ++b)
    for (int py = 0; py < ph; ++py)
      for (int px = 0; px < pw; ++px) {
        float* dst = patches + (std::size_t(b) * ph * pw + std::size_t(py) * pw + px) * row;
        for (int c = 0; c < channels; ++c)
          for (int ky = 0; ky < patch; ++ky) {
            const float* src =
                images + ((std::size_t(b) * channels + c) * height + std::size_t(py) * patch + ky) * width + px * patch;
            for (int kx = 0; kx < patch; ++kx) dst[(c * patch + ky) * patch + kx] = src[kx];
          }
      }
}

void CpuTransformerOps::window_partition(const float* tokens, float* windows, const float* fill, const WindowGrid& g,
                                         int width, Stream&) {
  enter();
  const long long rows = g.window_rows();
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; ++r) {
    float* dst = windows + r * width;
    const long long t = g.token_of(r);
    if (t < 0 && fill == nullptr) {
      std::fill(dst, dst + width, 0.f);
    } else if (t < 0) {
      std::copy(fill, fill + width, dst);
    } else {
      std::copy(tokens + t * width, tokens + (t + 1) * width, dst);
    }
  }
}

void CpuTransformerOps::window_unpartition(const float* windows, float* tokens, const WindowGrid& g, int width,
                                           Stream&) {
  enter();
  const long long rows = g.token_rows();
#pragma omp parallel for schedule(static)
  for (long long t = 0; t < rows; ++t) {
    const float* src = windows + g.window_of(t) * width;
    std::copy(src, src + width, tokens + t * width);
  }
}

void CpuTransformerOps::conv_patches(const float* images, float* patches, const ConvPatchGrid& g, Stream&) {
  enter();
  const long long rows = g.rows();
  const int cols = g.row_width();
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const long long src = g.source_of(r, c);
      patches[r * cols + c] = src >= 0 ? images[src] : 0.f;
    }
}

void CpuTransformerOps::max_pool_forward(const float* x, float* y, const TokenPoolGrid& g, int width, Stream&) {
  enter();
  const long long rows = g.out_rows();
#pragma omp parallel for schedule(static)
  for (long long o = 0; o < rows; ++o) {
    const float* taps[4];
    for (int t = 0; t < 4; ++t) taps[t] = x + g.input_of(o, t) * width;
    for (int c = 0; c < width; ++c) {
      const float v[4] = {taps[0][c], taps[1][c], taps[2][c], taps[3][c]};
      y[o * width + c] = v[max_tap(v)];
    }
  }
}

void CpuTransformerOps::max_pool_backward(const float* x, const float* dy, float* dx, const TokenPoolGrid& g,
                                          int width, Stream&) {
  enter();
  const long long rows = g.in_rows();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < rows; ++i) {
    int tap = -1;
    const long long o = g.output_of(i, tap);
    float* d = dx + i * width;
    if (o < 0) {
      std::fill(d, d + width, 0.f);
      continue;
    }
    const float* taps[4];
    for (int t = 0; t < 4; ++t) taps[t] = x + g.input_of(o, t) * width;
    for (int c = 0; c < width; ++c) {
      const float v[4] = {taps[0][c], taps[1][c], taps[2][c], taps[3][c]};
      d[c] = max_tap(v) == tap ? dy[o * width + c] : 0.f;
    }
  }
}

}  // namespace trainer::compute::cpu
