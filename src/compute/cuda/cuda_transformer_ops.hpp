#pragma once
// TransformerOps on CUDA: matrix products through cuBLAS (cublasGemmStridedBatchedEx,
// fp32 compute; TF32 tensor cores only when the backend allows TF32), the rest as
// our kernels (kernels/transformer.cuh). Every call enqueues on the given stream
// and never synchronizes.
// Mixed precision (bf16 / fp16, torch.autocast's products): an autocast product
// casts its operands into 16-bit copies in the stream's scratch (kernels/cast.cu)
// and multiplies them with CUDA_R_16BF / CUDA_R_16F inputs, fp32 accumulation
// (CUBLAS_COMPUTE_32F) and an fp32 result, so nothing is cast back. Attention casts
// q, k, v (and dout, the probabilities) once per call rather than per product
// (cuda_transformer_attention16.cpp), or runs it as cuDNN's fused attention
// (cuda_transformer_attention_fused.cpp, attention_graphs.hpp) where cuDNN takes the
// shape and fused_attention() is on. The CPU twin rounds the same operands.
#include <cstdint>  // std::uint16_t
#include <map>      // std::map
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <tuple>    // std::tuple

#include "compute/cuda/cudnn_raii.hpp"  // CublasHandle, CudnnHandle
#include "compute/transformer_ops.hpp"  // TransformerOps

namespace trainer::compute::cuda {

class AttentionGraphCache;
class LtBiasGemm;

class CudaTransformerOps final : public TransformerOps {
 public:
  // The cuBLAS handle is made at the first product, on the device current then
  // (the backend's: it selects its device before any op runs). bias_epilogue: a
  // Linear's bias is added inside its product by cuBLASLt (lt_bias_gemm.hpp) where
  // cuBLASLt has an algorithm for it, instead of add_bias's pass over the output.
  CudaTransformerOps(bool allow_tf32, Precision precision, bool bias_epilogue = false);
  ~CudaTransformerOps() override;

  void matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) override;
  // With the bias epilogue on and a bias: the product and the bias in one cuBLASLt
  // call; the generic Linear (product, then add_bias) otherwise.
  void linear_forward(const float* x, const std::uint16_t* x16, const float* w, const float* bias, float* y,
                      int rows, int in, int out, Stream& s) override;
  // Why a Linear with the bias epilogue on added its bias separately (the first
  // reason; "" if none did).
  std::string bias_epilogue_note() const;
  // An autocast product reads an operand's 16-bit copy where given and casts only the
  // others.
  void matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16, const float* b,
                          const std::uint16_t* b16, float* c, Stream& s) override;
  // In a 16-bit autocast precision dy is cast once for both products (the generic
  // Linear's two products would cast it twice), and x not at all when its copy is
  // given; the same products otherwise.
  void linear_backward(const float* x, const std::uint16_t* x16, const float* w, const float* dy, float* dx,
                       float* dw, float* dbias, int rows, int in, int out, Stream& s) override;
  // In a 16-bit autocast precision x is cast once for every layer (not at all when its
  // copy is given; and, backward, each dy once for its two products); the same
  // products otherwise.
  void linears_forward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count,
                       int rows, int in, Stream& s) override;
  void linears_backward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count,
                        float* dx, int rows, int in, Stream& s) override;
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
  // fp32: each head's products strided-batched over the batch
  // (cuda_transformer_attention32.cpp); 16-bit: cuDNN's fused attention where
  // fused_attention_ready(), else cuda_transformer_attention16.cpp. Fewer queries
  // than keys (SAM2's pooled queries): never fused; the fp32 / 16-bit paths take them.
  void attention_forward(const float* q, const float* k, const float* v, float* probs, float* out,
                         const AttentionShape& a, Stream& s) override;
  void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* out,
                          const float* dout, float* dq, float* dk, float* dv, float* scratch, const AttentionShape& a,
                          Stream& s) override;
  std::string fused_attention_note() const override { return fused_note_; }
  std::size_t attention_state_count(const AttentionShape& a) override;
  const std::uint16_t* attention_output16(const float* state, const AttentionShape& a) override;

 private:
  cublasHandle_t cublas_on(Stream& s);  // the handle, bound to `s`
  // C (fp32) = alpha op(A) op(B) + beta C with A and B 16-bit copies in the
  // autocast precision's type (raw bits), fp32 accumulation.
  void gemm16(const MatmulShape& g, const std::uint16_t* a, const std::uint16_t* b, float* c, Stream& s);
  // y = op(a) op(b) + bias through cuBLASLt (a and b fp32 or, in a 16-bit autocast
  // precision, 16-bit copies); false, with nothing enqueued, where it has no algorithm.
  // workspace: LtBiasGemm::kWorkspaceBytes of the stream's scratch.
  bool lt_linear(const MatmulShape& g, const void* a, const void* b, float* y, const float* bias, void* workspace,
                 Stream& s);
  // dst = the autocast precision's 16-bit rounding of src[0, count).
  void cast16(const float* src, std::uint16_t* dst, std::size_t count, Stream& s);
  // `copy` when given (an operand's 16-bit copy), else src[0, count) cast into `scratch`.
  const std::uint16_t* copy_or_cast(const float* src, const std::uint16_t* copy, std::uint16_t* scratch,
                                    std::size_t count, Stream& s);
  // The same for `rows` rows of `cols` contiguous values into rows `dst_ld` apart.
  void cast16_rows(const float* src, std::uint16_t* dst, long long rows, int cols, long long dst_ld, Stream& s);
  // fp32: the generic products one head at a time over the batch (cuda_transformer_attention32.cpp).
  void attention_forward32(const float* q, const float* k, const float* v, float* probs, float* out,
                           const AttentionShape& a, Stream& s);
  void attention_backward32(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                            float* dq, float* dk, float* dv, const AttentionShape& a, Stream& s);
  void attention_forward16(const float* q, const float* k, const float* v, float* probs, float* out,
                           const AttentionShape& a, Stream& s);
  // 16-bit: the same over 16-bit copies (cuda_transformer_attention16.cpp), where
  // cuDNN's fused attention is off or cannot take the shape.
  void attention_backward16(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                            float* dq, float* dk, float* dv, const AttentionShape& a, Stream& s);
  // cuDNN's fused attention (cuda_transformer_attention_fused.cpp). Ready: on, a
  // 16-bit autocast precision, a shape cuDNN takes, and both passes' plans built
  // (tried once per shape).
  bool fused_attention_ready(const AttentionShape& a);
  struct StatePath {
    bool fused = false;
    bool copies = false;  // the fused forward kept its 16-bit copies in the state
  };
  // The path of the forward that wrote `state` (the backward takes it, even if a
  // switch changed since); unknown state: fused_attention_ready(a), without copies.
  StatePath state_path(const float* state, const AttentionShape& a);
  // keep_copies: the 16-bit q, k, v and output stay in `state` after the statistics
  // (attention_state_count made room); copies_kept: the forward did that.
  void attention_forward_fused(const float* q, const float* k, const float* v, float* state, float* out,
                               const AttentionShape& a, bool keep_copies, Stream& s);
  void attention_backward_fused(const float* q, const float* k, const float* v, const float* state,
                                const float* out, const float* dout, float* dq, float* dk, float* dv,
                                const AttentionShape& a, bool copies_kept, Stream& s);
  cudnnHandle_t cudnn_handle();       // made at first use (plans are built on it unbound)
  cudnnHandle_t cudnn_on(Stream& s);  // the handle, bound to `s`
  // float(src[0, count)) of the autocast precision's 16-bit values.
  void widen16(const std::uint16_t* src, float* dst, std::size_t count, Stream& s);
  bool allow_tf32_;
  bool bias_epilogue_;
  std::unique_ptr<CublasHandle> cublas_;
  std::unique_ptr<LtBiasGemm> lt_;  // made at the first Linear with the bias epilogue on
  std::unique_ptr<CudnnHandle> cudnn_;
  std::unique_ptr<AttentionGraphCache> attention_graphs_;
  // (batch, tokens, heads, head_dim, precision) -> whether the fused attention runs it.
  std::map<std::tuple<int, int, int, int, Precision>, bool> fused_ready_;
  std::map<const float*, StatePath> fused_state_;  // attention state buffer -> the path its forward took
  std::string fused_note_;  // the first reason a shape runs unfused
};

}  // namespace trainer::compute::cuda
