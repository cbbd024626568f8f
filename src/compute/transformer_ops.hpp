#pragma once
// The ops of a vision transformer (the ViTs of DINO / DINOv2 / DINOv3 as Hugging Face builds
// them), reached through Backend::transformer_ops(). One implementation per device:
// the CPU (oneDNN's sgemm + OpenMP loops, src/compute/cpu/cpu_transformer_ops.*) and
// CUDA (cuBLAS + kernels/transformer.cu, src/compute/cuda/cuda_transformer_ops.*).
//
// Conventions (as Backend's): float32 in memory, element counts, every op takes its
// Stream and overwrites its outputs (no accumulation). Tensors are row-major [rows, width]:
// tokens are rows ([batch * tokens, width], as the activations of a ViT are laid out
// [B, T, C]), and weights keep PyTorch's layouts (nn.Linear: [out, in]).
// Semantics follow PyTorch: nn.Linear, nn.LayerNorm, nn.GELU() (exact, erf), softmax
// over the last dimension; docs/COMPUTE.md, "Transformer ops".
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint16_t
#include <string>   // std::string

#include "compute/precision.hpp"    // Precision
#include "compute/stream.hpp"       // Stream
#include "compute/hiera_rule.hpp"   // TokenPoolGrid, ConvPatchGrid
#include "compute/window_rule.hpp"  // WindowGrid

namespace trainer::compute {

// One (batched) row-major matrix product: for i < batch,
//   C_i = alpha * op(A_i) * op(B_i) + beta * C_i,   op(X) = X or its transpose,
// with op(A_i) [m, k], op(B_i) [k, n], C_i [m, n]. lda / ldb / ldc are the row
// strides of the matrices as stored (before op); stride_* the element distance from
// one problem to the next (0: the same matrix for every problem). C is not read
// when beta is 0.
struct MatmulShape {
  int m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  long long lda = 0, ldb = 0, ldc = 0;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 1;
  float alpha = 1.f, beta = 0.f;
  // A product that torch.autocast runs in 16-bit (nn.Linear, the patch embedding's
  // Conv2d, attention's products): under the ops' autocast precision (see
  // TransformerOps::autocast_precision) A and B are rounded to that 16-bit type, the
  // sum is accumulated in fp32 and C stays fp32. false: fp32 operands in every
  // precision (e.g. the position embeddings' bicubic resize, fp32 under autocast).
  bool autocast = false;
};

// 16-bit activation copies (TransformerOps::activation_copies): an activation that
// autocast products read (a LayerNorm's or GELU's output, attention's output) can come
// with a copy of its values in the autocast precision's 16-bit format (raw bits), which
// its producer writes beside the fp32 values. A product then reads the copy instead of
// rounding the fp32 values again: the same bits, so results do not change, and on a GPU
// one cast kernel less per product. A null copy means "round the fp32 values".

// One of several nn.Linear layers reading the same input (attention's query, key and
// value): TransformerOps::linears_forward / linears_backward.
struct SharedInputLinear {
  int out = 0;
  const float* w = nullptr;     // [out, in]
  const float* bias = nullptr;  // [out]; null: none
  float* y = nullptr;           // forward: [rows, out]
  const float* dy = nullptr;    // backward: [rows, out]
  float* dw = nullptr;          // backward: [out, in]
  float* dbias = nullptr;       // backward: [out]; null: skipped
};

// How many elements of A (B) a product reads from its first: the last problem's
// last stored row's end, (batch - 1) * stride + (rows - 1) * ld + cols, of the
// matrix as stored (before op). A 16-bit copy of that span keeps every offset, so
// the product runs on it with the same shape.
inline std::size_t matmul_span(int stored_rows, int stored_cols, long long ld, long long stride, int batch) {
  return std::size_t((batch - 1) * stride + (stored_rows - 1) * ld + stored_cols);
}
inline std::size_t matmul_span_a(const MatmulShape& g) {
  return g.transpose_a ? matmul_span(g.k, g.m, g.lda, g.stride_a, g.batch)
                       : matmul_span(g.m, g.k, g.lda, g.stride_a, g.batch);
}
inline std::size_t matmul_span_b(const MatmulShape& g) {
  return g.transpose_b ? matmul_span(g.n, g.k, g.ldb, g.stride_b, g.batch)
                       : matmul_span(g.k, g.n, g.ldb, g.stride_b, g.batch);
}

// Multi-head scaled dot-product attention over [batch, tokens, heads * head_dim]
// queries, keys and values (the Linear layers' outputs; head h is columns
// h*head_dim .. (h+1)*head_dim - 1, as HF's ViTSelfAttention splits them). The
// attention probabilities are [batch, heads, tokens, tokens].
struct AttentionShape {
  int batch = 0, tokens = 0, heads = 0, head_dim = 0;
  // Fewer queries than keys and values (Hiera's pooled queries at a stage change):
  // q and the output are [batch, query_tokens, width]; 0: as many as `tokens`.
  int query_tokens = 0;
  int queries() const { return query_tokens > 0 ? query_tokens : tokens; }
  int width() const { return heads * head_dim; }
  std::size_t probs_count() const { return std::size_t(batch) * heads * queries() * tokens; }
  // attention_backward's scratch: one batch row's probabilities gradient.
  std::size_t scratch_count() const { return std::size_t(heads) * queries() * tokens; }
};

// The rows a rotary position embedding turns: queries or keys [batch, tokens,
// heads * head_dim] whose first `prefix` tokens of each image (DINOv3's CLS and
// register tokens) are left alone; the other tokens - prefix are the patches, each
// with its own angles. head_dim is even.
struct RotaryShape {
  int batch = 0, tokens = 0, prefix = 0, heads = 0, head_dim = 0;
  int patches() const { return tokens - prefix; }
  // The cos / sin tables' size: [patches, head_dim / 2].
  std::size_t table_count() const { return std::size_t(patches()) * (head_dim / 2); }
};

class TransformerOps {
 public:
  // `precision`: the backend's (model.precision). In bf16 / fp16 the autocast
  // products (MatmulShape::autocast; linear_* and attention_* set it) take 16-bit
  // operands; LayerNorm, GELU, softmax and the adds stay fp32, as torch.autocast
  // keeps layer_norm and softmax in fp32 (docs/GPU.md, "Mixed precision").
  explicit TransformerOps(Precision precision = Precision::fp32) : precision_(precision) {}
  virtual ~TransformerOps() = default;

  // The precision of the autocast products: the backend's, or fp32 when autocast is
  // off (TRAINER_VIT_AUTOCAST=0 keeps the fp32 ViT products of before 2026-11-26).
  Precision autocast_precision() const { return autocast_ ? precision_ : Precision::fp32; }
  void set_autocast(bool on) { autocast_ = on; }

  virtual void matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) = 0;
  // The same product with A's and/or B's 16-bit copy (a16 / b16; null: none), which an
  // autocast product in a 16-bit precision reads instead of rounding a / b (the same
  // bits). Here the copies are ignored; a device that can use them overrides this.
  virtual void matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16, const float* b,
                                  const std::uint16_t* b16, float* c, Stream& s) {
    (void)a16, (void)b16;
    matmul(g, a, b, c, s);
  }

  // Whether the model should keep 16-bit copies of the activations its autocast
  // products read and pass them along (see "16-bit activation copies" above): in a
  // 16-bit autocast precision, unless turned off (TRAINER_VIT_16BIT_COPIES=0 keeps the
  // path where every product casts its operands). Virtual so that a wrapper answers
  // for the ops it forwards to.
  virtual bool activation_copies() const { return activation_copies_ && autocast_precision() != Precision::fp32; }
  void set_activation_copies(bool on) { activation_copies_ = on; }

  // nn.Linear: y[rows, out] = x[rows, in] * w^T + bias; w is [out, in]; bias may be null.
  // x16: x's 16-bit copy or null (both passes). Written once over matmul_with_copies
  // and add_bias (transformer_linear.cpp).
  virtual void linear_forward(const float* x, const std::uint16_t* x16, const float* w, const float* bias, float* y,
                              int rows, int in, int out, Stream& s);
  // Its gradients: dx = dy * w (skipped when dx is null), dw = dy^T * x, and
  // dbias = the column sums of dy (skipped when dbias is null).
  virtual void linear_backward(const float* x, const std::uint16_t* x16, const float* w, const float* dy, float* dx,
                               float* dw, float* dbias, int rows, int in, int out, Stream& s);

  // Several Linear layers on one input x[rows, in] (x16: its copy or null): each
  // layer's y. Written once over linear_forward (transformer_linear.cpp); a device may
  // cast x once for all.
  virtual void linears_forward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count,
                               int rows, int in, Stream& s);
  // Their gradients: each layer's dw and dbias, and dx = sum_i dy_i w_i (the first
  // layer's product writes, the others add, in order; skipped when dx is null).
  virtual void linears_backward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count,
                                float* dx, int rows, int in, Stream& s);

  // nn.LayerNorm over the last dimension: y = (x - mean) * rstd * gamma + beta, with
  // the biased variance and rstd = 1 / sqrt(var + eps); mean and rstd [rows] are
  // kept for the backward. y16 (null: none; only in a 16-bit autocast precision): y's
  // 16-bit copy, written too.
  virtual void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                                  std::uint16_t* y16, float* mean, float* rstd, int rows, int width, float eps,
                                  Stream& s) = 0;
  virtual void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                   const float* dy, float* dx, float* dgamma, float* dbeta, int rows, int width,
                                   Stream& s) = 0;

  // nn.GELU() (HF's "gelu"): y = x * Phi(x), Phi the normal CDF through erf; y16 as
  // layer_norm_forward's.
  virtual void gelu_forward(const float* x, float* y, std::uint16_t* y16, std::size_t count, Stream& s) = 0;
  virtual void gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) = 0;

  // Softmax of each row of [rows, cols] (y may be x). The backward:
  // dx = y * (dy - sum_j dy_j y_j) (dx may be dy).
  virtual void softmax_forward(const float* x, float* y, int rows, int cols, Stream& s) = 0;
  virtual void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream& s) = 0;

  // x[rows, width] += bias[width] (a Linear's bias added after a separate product).
  virtual void add_bias(float* x, const float* bias, int rows, int width, Stream& s) = 0;
  // dbias[width] = the column sums of dy[rows, width].
  virtual void column_sums(const float* dy, float* dbias, int rows, int width, Stream& s) = 0;
  // Layer scale (DINOv2's Dinov2LayerScale): y = x * gamma per column. Backward:
  // dx = dy * gamma (dx may be dy), dgamma = the column sums of dy * x.
  virtual void layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width,
                                   Stream& s) = 0;
  virtual void layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                                    int rows, int width, Stream& s) = 0;
  // 2-D rotary position embedding (DINOv3's RoPE), in place on x (rotary_rule.hpp):
  // for patch token p (token prefix + p of its image), every head and i < head_dim/2,
  // the pair (x[i], x[i + head_dim/2]) turns by the angle whose cosine and sine are
  // cos[p * head_dim/2 + i] and sin[...] (a head's two halves share the angles, as
  // Hugging Face's tiled tables do). The backward turns the gradient back: the
  // inverse rotation of dy, in place.
  virtual void rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r, Stream& s) = 0;
  virtual void rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r, Stream& s) = 0;
  // The tables those take, for a grid_h x grid_w grid of patches, with every patch
  // coordinate times *scale (DINOv3's train-time rescale; read from device memory when
  // the work runs, so a recorded step's replay takes each step's factor): cos and sin
  // [grid_h * grid_w, head_dim / 2] of rotary_angle (rotary_rule.hpp) from inv_freq
  // [head_dim / 4]. Eval-mode tables are model/rope_tables.hpp's, made on the host.
  virtual void rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h,
                             int grid_w, int head_dim, Stream& s) = 0;
  // Residual connection: y = a + b (y may be a or b).
  virtual void add(const float* a, const float* b, float* y, std::size_t count, Stream& s) = 0;

  // Batched transpose: out_i[c, r] = in_i[r, c] for r < rows, c < cols, i < batch;
  // `in` rows are in_ld apart and problems in_stride apart; `out` problems are
  // out_stride apart, each a dense [cols, rows]. Patch tokens [N, C] become a
  // [C, h, w] feature map, and back.
  virtual void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride,
                         int batch, int rows, int cols, Stream& s) = 0;
  // The non-overlapping patches of images [batch, channels, height, width] as rows:
  // patches[b, py * (width / patch) + px, (c * patch + ky) * patch + kx] =
  // images[b, c, py * patch + ky, px * patch + kx], so a Conv2d(kernel = stride = patch)
  // is a Linear with the convolution's [out, c, ky, kx] weight read as [out, in].
  virtual void patchify(const float* images, float* patches, int batch, int channels, int height, int width,
                        int patch, Stream& s) = 0;
  // SAM's windowed attention (window_rule.hpp): tokens [g.token_rows(), width] into
  // the windowed layout [g.window_rows(), width], each padding row a copy of
  // fill[width] (null: zeros); and back, each token row from the windowed row that
  // holds it (the padding rows are dropped). With zero padding each is the other's
  // backward.
  virtual void window_partition(const float* tokens, float* windows, const float* fill, const WindowGrid& g,
                                int width, Stream& s) = 0;
  virtual void window_unpartition(const float* windows, float* tokens, const WindowGrid& g, int width,
                                  Stream& s) = 0;
  // SAM2's Hiera (hiera_rule.hpp): a Conv2d's input patches as rows, for its patch
  // embedding as a Linear; and the 2x2 max pooling of tokens [g.in_rows(), width] into
  // [g.out_rows(), width], whose backward writes dx for every input row: the output's
  // gradient at the tap that held its max (max_tap), 0 elsewhere.
  virtual void conv_patches(const float* images, float* patches, const ConvPatchGrid& g, Stream& s) = 0;
  virtual void max_pool_forward(const float* x, float* y, const TokenPoolGrid& g, int width, Stream& s) = 0;
  virtual void max_pool_backward(const float* x, const float* dy, float* dx, const TokenPoolGrid& g, int width,
                                 Stream& s) = 0;

  // Attention, written once over matmul and softmax (transformer_attention.cpp); a
  // device may override it with a fused kernel. Forward: probs = softmax(q k^T /
  // sqrt(head_dim)) per batch row and head, out = probs v ([batch, tokens, width]).
  // `probs` (attention_state_count(a) floats) is the state the backward reads: the
  // probabilities here; a fused attention keeps its own, smaller state there instead
  // (CUDA's: one softmax statistic per query row), so callers must not read it as
  // probabilities.
  virtual void attention_forward(const float* q, const float* k, const float* v, float* probs, float* out,
                                 const AttentionShape& a, Stream& s);
  // Backward from the forward's state (`probs`) and output (`out`, as the forward
  // wrote it; a fused backward reads it): dq, dk, dv (each [batch, tokens, width]);
  // `scratch` holds a.scratch_count() floats.
  virtual void attention_backward(const float* q, const float* k, const float* v, const float* probs,
                                  const float* out, const float* dout, float* dq, float* dk, float* dv,
                                  float* scratch, const AttentionShape& a, Stream& s);
  // The floats attention_forward keeps in `probs` for this shape: a.probs_count()
  // here; where a device fuses it, its own state (CUDA: the softmax statistics, and
  // with activation copies the 16-bit q, k, v and output, which at a few tokens can
  // exceed the planes). Asked again before every forward (a buffer sized once may
  // have to grow when a switch below changes).
  virtual std::size_t attention_state_count(const AttentionShape& a) { return a.probs_count(); }
  // Whether a device may run attention as one fused operation (CUDA: cuDNN's, in a
  // 16-bit autocast precision, where the shape allows); false keeps the batched-matmul
  // attention above (TRAINER_VIT_FUSED_ATTENTION=0). CPUs have only that one.
  bool fused_attention() const { return fused_attention_; }
  void set_fused_attention(bool on) { fused_attention_ = on; }
  // The 16-bit copy of the output of the attention_forward that wrote `state`, where
  // that forward made one (a fused attention computes its output in 16-bit and keeps
  // it for its backward); null here.
  virtual const std::uint16_t* attention_output16(const float* state, const AttentionShape& a) {
    (void)state, (void)a;
    return nullptr;
  }
  // Why an attention that could have been fused ran unfused ("" if none did): the
  // first reason, for `bench step` to print.
  virtual std::string fused_attention_note() const { return {}; }

 private:
  Precision precision_;
  bool autocast_ = true;
  bool fused_attention_ = true;
  bool activation_copies_ = true;
};

// The products of attention over one batch row (all heads of it in one batched
// product; head views, no copies), shared by the generic attention
// (transformer_attention.cpp) and any device's own, so that both run the same
// products. All are autocast products.
struct AttentionProducts {
  MatmulShape scores;   // q_h k_h^T / sqrt(d) -> a [tokens, tokens] plane per head
  MatmulShape context;  // probs_h v_h -> out, in the merged-heads layout
  MatmulShape dv;       // probs_h^T dout_h
  MatmulShape dprobs;   // dout_h v_h^T -> planes
  MatmulShape dq;       // dS_h k_h / sqrt(d)
  MatmulShape dk;       // dS_h^T q_h / sqrt(d)
};
// The products of nn.Linear (transformer_linear.cpp), shared by the generic Linear
// and any device's own, so that both run the same products. All are autocast products.
struct LinearProducts {
  MatmulShape y;   // x w^T
  MatmulShape dx;  // dy w
  MatmulShape dw;  // dy^T x
};
LinearProducts linear_products(int rows, int in, int out);

// Throws SystemError for a shape with a non-positive extent.
void check_attention_shape(const AttentionShape& a);
AttentionProducts attention_products(const AttentionShape& a);

}  // namespace trainer::compute
