#pragma once
// lightning-pose's SAM2 backbones (vitt_sam2, vits_sam2, vitb_sam2): the Hiera image
// encoder of SAM 2.1 (Hugging Face's Sam2HieraDetModel, Sam2Model.vision_encoder.backbone
// of facebook/sam2.1-hiera-tiny, -small, -base-plus) as lightning-pose's
// VisionEncoderSam2 runs it (vit_sam2.py): the last stage's tokens as a stride-32
// feature map, the FPN neck dropped.
//
//   images [N,3,H,W] -> Conv2d(3, C0, 7, stride 4, padding 3), as a Linear over the
//      padded 7x7 patches -> tokens [N, H/4, W/4, C0]
//   + position embedding: pos_embed [1, C0, b, b] bicubic-resized to H/4 x W/4 on every
//      forward, plus pos_embed_window [1, C0, 8, 8] tiled over the grid
//   -> 4 stages of pre-norm blocks (widths C0, 2 C0, 4 C0, 8 C0; heads doubling):
//      h = residual + proj(attention(LN(h)));  h += proj_out(GELU(proj_in(LN(h))))
//      Attention within windows of the grid (zero-padded at the bottom and right, as
//      SAM's; the windows per stage 8, 4, 14, 7) but in the global blocks. The first
//      block of stages 1-3 changes the width and halves the grid: its queries are
//      max-pooled 2x2 inside each window (the previous stage's window, halved for the
//      output), and its residual is max_pool(Linear(LN(h))) instead of h.
//   -> features [N, 8 C0, H/32, W/32]
//
// Tensors are registered as lightning-pose names them: "backbone.vision_encoder."
// followed by Sam2HieraDetModel's state_dict keys (pos_embed, pos_embed_window,
// patch_embed.projection, blocks.<i>.{layer_norm1, attn.qkv, attn.proj, layer_norm2,
// mlp.proj_in, mlp.proj_out, proj}), in that order. Every op goes through
// compute::TransformerOps.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint16_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::Backend, DeviceBuffer
#include "model/backbone.hpp"         // Backbone
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

// Sam2HieraDetConfig as transformers' converter sets it for each SAM 2.1 checkpoint.
struct HieraSpec {
  std::string name;      // vitt_sam2 | vits_sam2 | vitb_sam2
  std::string model_id;  // the Hugging Face model its weights come from
  std::vector<int> dims = {96, 192, 384, 768};   // embed_dim_per_stage
  std::vector<int> heads = {1, 2, 4, 8};         // num_attention_heads_per_stage
  std::vector<int> blocks = {1, 2, 7, 2};        // blocks_per_stage
  std::vector<int> windows = {8, 4, 14, 7};      // window_size_per_stage
  std::vector<int> global_blocks = {5, 7, 9};    // global_attention_blocks
  int background = 7;                            // window_positional_embedding_background_size
  int pool_stages = 3;                           // num_query_pool_stages (query stride 2)
  int patch_kernel = 7, patch_stride = 4, patch_pad = 3;
  float mlp_ratio = 4.f;
  float layer_norm_eps = 1e-6f;
  int stride() const { return patch_stride << pool_stages; }
};
// Throws UserError for an unknown name.
HieraSpec hiera_spec(const std::string& name);

class Hiera final : public Backbone {
 public:
  Hiera(ParameterStore& store, const HieraSpec& spec, const std::string& prefix);

  const std::string& name() const override { return spec_.name; }
  int out_channels() const override { return spec_.dims.back(); }
  int stride() const override { return spec_.stride(); }
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  void backward(const Context& ctx, compute::TensorView dy) override;

 private:
  struct Linear {
    std::size_t weight = 0, bias = 0;
    int in = 0, out = 0;
    int first_row = 0;  // its rows of a shared tensor (qkv: query 0, key C, value 2C)
  };
  struct LayerNorm {
    std::size_t weight = 0, bias = 0;
  };
  // One Sam2MultiScaleBlock and what its backward needs from its forward.
  struct Block {
    int dim = 0, dim_out = 0, heads = 0;
    int window = 0;      // of its input grid; 0: global attention
    bool pool = false;   // query stride 2 (the first block of stages 1-3)
    bool has_proj = false;  // dim != dim_out: the residual is max_pool(proj(LN(x)))
    LayerNorm norm1, norm2;
    Linear query, key, value, attn_proj, fc1, fc2, proj;
    // This step's grids: the input's and the output's (halved when pooling).
    int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
    compute::DeviceBuffer ln1, mean1, rstd1, ln2, mean2, rstd2;
    // q as projected, before its pooling (pooling blocks only: their backward finds
    // the max taps in it), q pooled (windowed pooling blocks), and q, k, v as the
    // attention takes them (windows, or tokens).
    compute::DeviceBuffer q_tokens, q_pooled, q, k, v;
    compute::DeviceBuffer probs, context, context_tokens;
    compute::DeviceBuffer proj_out, residual;  // has_proj: proj(LN(x)) and its pooling
    compute::DeviceBuffer mid, fc1_out, gelu_out;
    // The 16-bit copies of ln1, ln2 and gelu_out that their producers write and the
    // Linear layers read (compute::TransformerOps::activation_copies; empty without).
    compute::DeviceBuffer ln1_16, ln2_16, gelu_16;
  };

  Linear add_linear(ParameterStore& store, const std::string& name, int in, int out);
  LayerNorm add_layer_norm(ParameterStore& store, const std::string& name, int width);
  const float* weight(const Linear& l) const;
  const float* bias(const Linear& l) const;
  float* weight_grad(const Linear& l) const;
  float* bias_grad(const Linear& l) const;
  compute::SharedInputLinear shared_input(const Linear& l, float* y, const float* dy) const;
  // A 16-bit copy buffer as what it holds, or null when this step's forward keeps none.
  std::uint16_t* copy16(compute::DeviceBuffer& buffer) const;
  // The block's windows over its input grid (k, v) and its output grid (q, output).
  compute::WindowGrid input_windows(const Block& b) const;
  compute::WindowGrid output_windows(const Block& b) const;
  compute::TokenPoolGrid pool_grid(const Block& b) const;
  compute::AttentionShape attention_shape(const Block& b) const;
  std::size_t in_rows(const Block& b) const { return std::size_t(batch_) * b.in_h * b.in_w; }
  std::size_t out_rows(const Block& b) const { return std::size_t(batch_) * b.out_h * b.out_w; }
  // Rows of q (and the output) and of k, v as the attention takes them.
  std::size_t query_rows(const Block& b) const;
  std::size_t key_rows(const Block& b) const;
  void set_geometry(int grid_h, int grid_w);
  void ensure_buffers(compute::Backend& backend);
  void position_rows(const Context& ctx);
  void block_forward(const Context& ctx, Block& b, const float* x, float* out);
  // dout: the gradient of the block's output (kept); dx: of its input (written).
  void block_backward(const Context& ctx, Block& b, const float* x, const float* dout, float* dx);
  void embedding_backward(const Context& ctx, const float* d_tokens);

  HieraSpec spec_;
  ParameterStore* store_;
  std::size_t pos_embed_ = 0, pos_embed_window_ = 0;
  Linear patch_embedding_;
  std::vector<Block> blocks_;

  // The step's geometry (set by forward).
  int batch_ = 0, grid_h_ = 0, grid_w_ = 0;  // the patch embedding's grid (H/4, W/4)
  bool copies_ = false;  // the forward keeps 16-bit activation copies (its backward reads them)
  int resized_h_ = 0, resized_w_ = 0;         // the grid the tables below were made for
  // [grid cells, background^2]: the bicubic resize of pos_embed; [grid cells, window^2]:
  // which cell of pos_embed_window each grid cell adds (the tiling). Host copies are
  // kept: an upload reads them later on a GPU stream.
  std::vector<float> resize_host_, tile_host_;
  compute::DeviceBuffer resize_, tile_;
  compute::DeviceBuffer patches_;    // [N * cells, 3 * 7 * 7]
  compute::DeviceBuffer positions_;  // [cells, C0]: the position embedding + the patch-embedding bias
  std::vector<compute::DeviceBuffer> hidden_;  // blocks + 1 residual streams
  compute::DeviceBuffer features_;
  // Windowed blocks' q (when not pooled), k and v in token order, before they are cut
  // into windows: read by the forward only, so shared by the blocks.
  compute::DeviceBuffer projected_[3];
  // Backward scratch, shared by the blocks.
  compute::DeviceBuffer d_hidden_a_, d_hidden_b_, d_mid_, d_tmp_, d_wide_, d_windows_, d_q_, d_k_, d_v_;
  compute::DeviceBuffer d_q_tokens_, d_k_tokens_, d_v_tokens_, d_q_pooled_, d_proj_, d_ln1_, d_scratch_;
};

// The registry's factory for every name hiera_spec knows.
std::unique_ptr<Backbone> make_hiera(ParameterStore& store, const std::string& name, const std::string& prefix,
                                     ImageSize image);

}  // namespace trainer::model
