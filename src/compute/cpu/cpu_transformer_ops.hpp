#pragma once
// TransformerOps on the CPU: matrix products through oneDNN's sgemm (its JIT GEMM
// kernels, row-major, any leading dimension, so head views and transposes need no
// copies and no primitive cache), everything else as OpenMP loops over rows.
// Reductions over rows (bias and LayerNorm parameter gradients) sum per-thread
// partials in a fixed order, so results do not depend on scheduling.
// Mixed precision is emulated as the convolutions' (cpu_conv.cpp): an autocast
// product rounds copies of its operands to the 16-bit type (compute/float16.hpp, the
// rules of the CUDA cast kernels) and runs the fp32 sgemm on them, so it gives the
// GPU's 16-bit products with fp32 accumulation, up to the order of the sums.
#include <vector>  // std::vector

#include "compute/transformer_ops.hpp"  // TransformerOps

namespace trainer::compute::cpu {

class CpuTransformerOps final : public TransformerOps {
 public:
  // Every op runs on an OpenMP team of `threads` threads (as CpuBackend's ops).
  CpuTransformerOps(int threads, Precision precision) : TransformerOps(precision), threads_(threads) {}

  void matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) override;
  // An operand's 16-bit copy is widened where its fp32 values would be rounded: the
  // same values when the copy is right, so a wrong copy shows on the CPU too.
  void matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16, const float* b,
                          const std::uint16_t* b16, float* c, Stream& s) override;
  void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, std::uint16_t* y16,
                          float* mean, float* rstd, int rows, int width, float eps, Stream& s) override;
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                           const float* dy, float* dx, float* dgamma, float* dbeta, int rows, int width,
                           Stream& s) override;
  void gelu_forward(const float* x, float* y, std::uint16_t* y16, std::size_t count, Stream& s) override;
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) override;
  void softmax_forward(const float* x, float* y, int rows, int cols, Stream& s) override;
  void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream& s) override;
  void add_bias(float* x, const float* bias, int rows, int width, Stream& s) override;
  void column_sums(const float* dy, float* dbias, int rows, int width, Stream& s) override;
  void layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width, Stream& s) override;
  void layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                            int rows, int width, Stream& s) override;
  void rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override;
  void rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override;
  void rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h, int grid_w,
                     int head_dim, Stream& s) override;
  void add(const float* a, const float* b, float* y, std::size_t count, Stream& s) override;
  void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride, int batch,
                 int rows, int cols, Stream& s) override;
  void patchify(const float* images, float* patches, int batch, int channels, int height, int width, int patch,
                Stream& s) override;
  void window_partition(const float* tokens, float* windows, const float* fill, const WindowGrid& g, int width,
                        Stream& s) override;
  void window_unpartition(const float* windows, float* tokens, const WindowGrid& g, int width, Stream& s) override;
  void conv_patches(const float* images, float* patches, const ConvPatchGrid& g, Stream& s) override;
  void max_pool_forward(const float* x, float* y, const TokenPoolGrid& g, int width, Stream& s) override;
  void max_pool_backward(const float* x, const float* dy, float* dx, const TokenPoolGrid& g, int width,
                         Stream& s) override;

 private:
  void enter() const;  // sets the calling thread's OpenMP team size
  // `src` itself, or (an autocast product in a 16-bit autocast precision) a copy of
  // its `count` elements rounded to that type (widened from src16 when given), in
  // rounded_[slot].
  const float* operand(int slot, const float* src, const std::uint16_t* src16, std::size_t count, bool autocast);
  // y16[0, count) = the autocast precision's 16-bit bits of y (a producer's copy).
  void write_copy(const float* y, std::uint16_t* y16, std::size_t count) const;
  int threads_;
  std::vector<float> rounded_[2];  // A's and B's rounded copies, reused across calls
};

}  // namespace trainer::compute::cpu
