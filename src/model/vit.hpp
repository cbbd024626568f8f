#pragma once
// lightning-pose's ViT backbones: the encoder of Hugging Face's ViTModel
// (vits_dino, vitb_dino: facebook/dino-vits16, dino-vitb16; vitb_imagenet: MAE's
// facebook/vit-mae-base read as a ViTModel; add_pooling_layer=False, run with
// interpolate_pos_encoding=True), Dinov2Model (vits_dinov2, vitb_dinov2:
// facebook/dinov2-small, -base, whose 14x14 patch kernels lightning-pose resizes to
// 16x16 once at load) or DINOv3ViTModel (vits_dinov3, vitb_dinov3:
// facebook/dinov3-vits16-pretrain-lvd1689m, -vitb16-), its CLS (and register) tokens
// dropped and its patch tokens laid out as a stride-16 feature map
// (lightning_pose/models/backbones/vit.py, vit_dino.py):
//
//   images [N,3,H,W] -> Conv2d(3, C, 16, stride 16) as a Linear over 16x16 patches
//   -> [CLS; patches] + position embeddings (bicubic-resized from 14x14 to H/16 x W/16)
//      (DINOv3: [CLS; 4 registers; patches], no position embeddings)
//   -> L pre-norm blocks: h += proj(attention(LN(h))); h += fc2(GELU(fc1(LN(h))))
//      (DINOv2, DINOv3: each branch times its layer scale, lambda1, before the residual
//      add; DINOv3: the patch tokens' queries and keys turned by a 2-D rotary
//      position embedding, model/rope_tables.hpp, and no key bias)
//   -> LayerNorm -> patch tokens -> features [N, C, H/16, W/16]
//
// vitb_sam is SAM's image encoder (Hugging Face's SamVisionEncoder of
// facebook/sam-vit-base) as lightning-pose's VisionEncoderSam runs it (vit_sam.py):
// patches + a position table [1, H/16, W/16, C] (the checkpoint's 64x64 table,
// resized once at load for the run's image size, then trained at that size), no CLS
// token; the same pre-norm blocks with one qkv Linear, attention inside 14x14
// windows of the patch grid (zero-padded at the bottom and right) except in the
// global layers 2, 5, 8 and 11; no relative position terms (lightning-pose turns
// them off), no final LayerNorm and no neck: the last block's tokens are the
// features. The unused rel_pos_* and neck.* tensors are kept, with zero gradients,
// so that checkpoints hold every tensor of lightning-pose's.
//
// Tensors are registered as lightning-pose names them: "backbone.vision_encoder."
// followed by Hugging Face's state_dict keys (embeddings.cls_token,
// encoder.layer.<i>.attention.attention.query.weight, ..., layernorm.bias; DINOv2's
// norm1/norm2, mlp.fc1/fc2, layer_scale1/2.lambda1 and an unused mask_token;
// DINOv3's embeddings.register_tokens, layer.<i>.attention.{k,v,q,o}_proj,
// mlp.up_proj/down_proj, norm; SAM's pos_embed, patch_embed.projection,
// layers.<i>.{layer_norm1, attn.qkv, attn.proj, layer_norm2, mlp.lin1, mlp.lin2}),
// in the state_dict's order. Every op goes through compute::TransformerOps.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint16_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::Backend, DeviceBuffer
#include "model/backbone.hpp"         // Backbone
#include "model/parameter_store.hpp"  // ParameterStore
#include "model/rope_tables.hpp"      // RopeTables
#include "util/stored_tensor.hpp"     // StoredTensor

namespace trainer::model {

struct VitSpec {
  std::string name;      // vits_dino | vitb_dino | vits_dinov2 | vitb_dinov2 | vits_dinov3 | vitb_dinov3 | vitb_imagenet | vitb_sam
  std::string model_id;  // the Hugging Face model its weights come from
  bool dinov2 = false;   // Dinov2Model's names and layer scale
  bool dinov3 = false;   // DINOv3ViTModel's names, layer scale, register tokens, RoPE, no key bias
  int registers = 0;     // DINOv3's register tokens, between CLS and the patches
  float rope_theta = 100.f;  // DINOv3ViTConfig.rope_theta
  // DINOv3ViTConfig.pos_embed_rescale: in train mode the RoPE coordinates are
  // multiplied by a log-uniform factor in [1 / rescale, rescale] per forward (2 for
  // both checkpoints; 0: none).
  float rope_rescale = 0.f;
  int hidden = 384, layers = 12, heads = 6, mlp = 1536, patch = 16;
  int pretrained_patch = 16;       // the checkpoint's (DINOv2: 14, resized to `patch` at load)
  int pretrained_grid = 14;        // position embeddings for 14 x 14 patches (224 x 224 images) + CLS
  float layer_norm_eps = 1e-12f;  // ViTConfig's default, which the DINO checkpoints keep (DINOv2: 1e-6, DINOv3: 1e-5)
  // SamVisionEncoder's names and layout (see above): window is the windowed
  // attention's (14), global_layers the layers that attend over the whole grid.
  bool sam = false;
  int window = 0;
  std::vector<int> global_layers;
  bool layer_scale() const { return dinov2 || dinov3; }
  int prefix_tokens() const { return sam ? 0 : 1 + registers; }  // CLS and registers, dropped from the features
  int layer_window(int layer) const;  // the layer's attention window; 0: global
};
// Throws UserError for an unknown name.
VitSpec vit_spec(const std::string& name);

class VisionTransformer final : public Backbone {
 public:
  // image: the input size SAM's position table is made for (the checkpoint's
  // 1024 x 1024 when not given); the other ViTs take any size.
  VisionTransformer(ParameterStore& store, const VitSpec& spec, const std::string& prefix, ImageSize image = {});

  const std::string& name() const override { return spec_.name; }
  int out_channels() const override { return spec_.hidden; }
  int stride() const override { return spec_.patch; }
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  void backward(const Context& ctx, compute::TensorView dy) override;
  // DINOv3: one RoPE coordinate factor per training forward of the step
  // (rope_rescale_draw), written to the device; the forwards make their tables from it.
  void prepare_training_step(const Context& ctx, const StepKey& key, int forwards) override;
  std::vector<std::pair<std::string, std::vector<float>>> training_draws() const override;

 private:
  struct Linear {
    std::size_t weight = 0, bias = 0;
    bool has_bias = true;  // DINOv3's k_proj has none
    int in = 0, out = 0;
    int first_row = 0;  // its rows of a shared tensor (SAM's qkv: query 0, key C, value 2C)
  };
  struct LayerNorm {
    std::size_t weight = 0, bias = 0;
  };
  // One encoder layer and what its backward needs from its forward.
  struct Block {
    Linear query, key, value, proj, fc1, fc2;
    LayerNorm before, after;
    std::size_t layer_scale1 = 0, layer_scale2 = 0;  // DINOv2 and DINOv3 only
    std::size_t rel_pos_h = 0, rel_pos_w = 0;         // SAM's, unused
    // SAM's windowed layers: q, k, v and the attention's output are kept in the
    // windows' layout (window_grid), and the projection reads that output back in
    // token order (context_tokens).
    int window = 0;
    compute::DeviceBuffer context_tokens;
    compute::DeviceBuffer ln1, mean1, rstd1, q, k, v, probs, context, mid, ln2, mean2, rstd2, fc1_out, gelu_out;
    compute::DeviceBuffer attention_out, mlp_out;  // the branches before their layer scale (DINOv2, DINOv3)
    // The 16-bit copies of ln1, ln2 and gelu_out that their producers write and the
    // Linear layers read (compute::TransformerOps::activation_copies; empty without).
    compute::DeviceBuffer ln1_16, ln2_16, gelu_16;
  };

  Linear add_linear(ParameterStore& store, const std::string& name, int in, int out, bool bias = true);
  LayerNorm add_layer_norm(ParameterStore& store, const std::string& name);
  void add_attention(ParameterStore& store, Block& b, const std::string& layer);  // query, key, value, output
  void add_dinov3_layer(ParameterStore& store, Block& b, const std::string& layer);
  void add_embeddings(ParameterStore& store, const std::string& root);
  void add_sam_encoder(ParameterStore& store, const std::string& root, ImageSize image);
  // The Linear's tensors: its rows of a shared weight and bias, and their gradients.
  const float* weight(const Linear& l) const;
  const float* bias(const Linear& l) const;  // null without one
  float* weight_grad(const Linear& l) const;
  float* bias_grad(const Linear& l) const;
  // A block's attention: over all tokens of each image, or (SAM's windowed layers)
  // over each window.
  compute::WindowGrid window_grid(const Block& b) const;
  compute::AttentionShape attention_shape(const Block& b) const;
  std::size_t attention_rows(const Block& b) const;
  // The rows every image's tokens start from (positions_), for this step's grid.
  void embedding_rows(const Context& ctx);
  void embedding_backward(const Context& ctx, const float* d_tokens);
  // DINOv3: the RoPE tables this forward turns with (rope_cos_now_ / _sin_now_): the
  // eval-mode ones, or in a training forward with a drawn factor, tables made from it.
  void rope_tables_for_forward(const Context& ctx);
  compute::RotaryShape rotary_shape() const;
  // x16: x's 16-bit copy, or null.
  void linear_forward(const Context& ctx, const Linear& l, const float* x, const std::uint16_t* x16, float* y);
  // Gradients of a Linear's weight and bias from x and dy; dx too when not null.
  void linear_backward(const Context& ctx, const Linear& l, const float* x, const std::uint16_t* x16,
                       const float* dy, float* dx);
  // A 16-bit copy buffer as what it holds, or null when this step's forward keeps none.
  std::uint16_t* copy16(compute::DeviceBuffer& buffer) const;
  // l as one of several layers on one input (query, key, value): its weights and
  // gradients, with output y (forward; null for the backward).
  compute::SharedInputLinear shared_input(const Linear& l, float* y);
  void block_forward(const Context& ctx, Block& b, const float* x, float* out);
  // dout: the gradient of the block's output (kept); dx: of its input (written).
  void block_backward(const Context& ctx, Block& b, const float* x, const float* dout, float* dx);
  void ensure_buffers(compute::Backend& backend);

  VitSpec spec_;
  ParameterStore* store_;
  std::size_t cls_token_ = 0, position_embeddings_ = 0;  // no position embeddings in DINOv3
  long mask_token_ = -1;  // DINOv2's and DINOv3's (unused by the forward, as lightning-pose's; its gradient stays 0)
  std::vector<std::size_t> sam_neck_;  // SAM's neck.*: unused, gradients 0
  int sam_grid_h_ = 0, sam_grid_w_ = 0;  // the grid SAM's position table is for
  std::size_t register_tokens_ = 0;  // DINOv3's [1, registers, C]
  Linear patch_embedding_;
  std::vector<Block> blocks_;
  LayerNorm final_norm_;

  // The step's geometry (set by forward).
  int batch_ = 0, grid_h_ = 0, grid_w_ = 0, tokens_ = 0;  // tokens: prefix + patches
  bool copies_ = false;  // the forward keeps 16-bit activation copies (its backward reads them)
  int resized_h_ = 0, resized_w_ = 0;       // the grid resize_ was made for
  std::vector<float> resize_host_;          // its host copy (an upload reads it later on a GPU stream)
  compute::DeviceBuffer resize_;            // [patches, pretrained_grid^2]: bicubic position-embedding resize
  compute::DeviceBuffer patches_;           // [N * patches, 3 * patch^2]
  compute::DeviceBuffer positions_;         // [tokens, C]: CLS + pos[0]; resized pos + patch-embedding bias
                                            // (DINOv3: CLS; registers; patch-embedding bias)
  RopeTables rope_host_;                      // DINOv3: this grid's eval-mode RoPE tables, host copies
  compute::DeviceBuffer rope_cos_, rope_sin_;  // [patches, head_dim / 2], eval mode
  compute::DeviceBuffer rope_inv_freq_;        // [head_dim / 4]
  int rope_h_ = 0, rope_w_ = 0;                // the grid they were made for
  // Train mode: the step's factors (one per forward), this forward's tables, and
  // which tables the blocks turn with (those of the latest forward).
  compute::DeviceBuffer rope_scales_, rope_train_cos_, rope_train_sin_;
  std::vector<float> drawn_scales_;  // what prepare_training_step drew
  int forward_in_step_ = 0;          // training forwards of the step so far
  const float* rope_cos_now_ = nullptr;
  const float* rope_sin_now_ = nullptr;
  std::vector<compute::DeviceBuffer> hidden_;  // layers + 1 residual streams [N * tokens, C]
  compute::DeviceBuffer final_out_, final_mean_, final_rstd_, features_;
  // Backward scratch, shared by the blocks.
  compute::DeviceBuffer d_hidden_a_, d_hidden_b_, d_mid_, d_tmp_, d_branch_, d_wide_, d_q_, d_k_, d_v_, d_scratch_;
  compute::DeviceBuffer d_windows_;  // SAM's windowed layers: a gradient in the windows' layout
  // SAM's windowed layers: q, k, v in token order before they are cut into windows
  // (forward), and their gradients back in token order (backward).
  compute::DeviceBuffer qkv_tokens_[3];
};

// The registry's factory for every name vit_spec knows.
std::unique_ptr<Backbone> make_vit(ParameterStore& store, const std::string& name, const std::string& prefix,
                                   ImageSize image);

// A pretrained file's patch-embedding kernel [C, 3, p, p] (f32 or f64) for a model
// whose kernel is [C, 3, q, q]: resized as lightning-pose's VisionEncoderDino does
// (F.interpolate(bicubic, align_corners=True, antialias=True)), into f32. `tensor`
// keeps its name. Throws UserError for another element type or layout.
StoredTensor resize_patch_embedding(const StoredTensor& tensor, int to);

// SAM's position table [1, h, w, C] (f32 or f64) for a model whose table is `shape`
// [1, h', w', C]: resized as lightning-pose's VisionEncoderSam does
// (F.interpolate(bicubic, antialias=True) of its [1, C, h, w] view), into f32; as it
// is when the grids agree. Throws UserError for another element type or layout.
StoredTensor resize_position_table(const StoredTensor& tensor, const std::vector<int>& shape);

}  // namespace trainer::model
