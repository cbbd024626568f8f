#pragma once
// lightning-pose's ViT backbones: the encoder of Hugging Face's ViTModel
// (vits_dino, vitb_dino: facebook/dino-vits16, dino-vitb16; add_pooling_layer=False,
// run with interpolate_pos_encoding=True) or Dinov2Model (vits_dinov2, vitb_dinov2:
// facebook/dinov2-small, -base, whose 14x14 patch kernels lightning-pose resizes to
// 16x16 once at load), its CLS token dropped and its patch tokens laid out as a
// stride-16 feature map (lightning_pose/models/backbones/vit.py, vit_dino.py):
//
//   images [N,3,H,W] -> Conv2d(3, C, 16, stride 16) as a Linear over 16x16 patches
//   -> [CLS; patches] + position embeddings (bicubic-resized from 14x14 to H/16 x W/16)
//   -> L pre-norm blocks: h += proj(attention(LN(h))); h += fc2(GELU(fc1(LN(h))))
//      (DINOv2: each branch times its layer scale, lambda1, before the residual add)
//   -> LayerNorm -> patch tokens -> features [N, C, H/16, W/16]
//
// Tensors are registered as lightning-pose names them: "backbone.vision_encoder."
// followed by Hugging Face's state_dict keys (embeddings.cls_token,
// encoder.layer.<i>.attention.attention.query.weight, ..., layernorm.bias; DINOv2's
// norm1/norm2, mlp.fc1/fc2, layer_scale1/2.lambda1 and an unused mask_token), in the
// state_dict's order. Every op goes through compute::TransformerOps.
#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::Backend, DeviceBuffer
#include "model/backbone.hpp"         // Backbone
#include "model/parameter_store.hpp"  // ParameterStore
#include "util/stored_tensor.hpp"     // StoredTensor

namespace trainer::model {

struct VitSpec {
  std::string name;      // vits_dino | vitb_dino | vits_dinov2 | vitb_dinov2
  std::string model_id;  // the Hugging Face model its weights come from
  bool dinov2 = false;   // Dinov2Model's names and layer scale
  int hidden = 384, layers = 12, heads = 6, mlp = 1536, patch = 16;
  int pretrained_patch = 16;       // the checkpoint's (DINOv2: 14, resized to `patch` at load)
  int pretrained_grid = 14;        // position embeddings for 14 x 14 patches (224 x 224 images) + CLS
  float layer_norm_eps = 1e-12f;  // ViTConfig's default, which the DINO checkpoints keep (DINOv2: 1e-6)
};
// Throws UserError for an unknown name.
VitSpec vit_spec(const std::string& name);

class VisionTransformer final : public Backbone {
 public:
  VisionTransformer(ParameterStore& store, const VitSpec& spec, const std::string& prefix);

  const std::string& name() const override { return spec_.name; }
  int out_channels() const override { return spec_.hidden; }
  int stride() const override { return spec_.patch; }
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  void backward(const Context& ctx, compute::TensorView dy) override;

 private:
  struct Linear {
    std::size_t weight = 0, bias = 0;
    int in = 0, out = 0;
  };
  struct LayerNorm {
    std::size_t weight = 0, bias = 0;
  };
  // One encoder layer and what its backward needs from its forward.
  struct Block {
    Linear query, key, value, proj, fc1, fc2;
    LayerNorm before, after;
    std::size_t layer_scale1 = 0, layer_scale2 = 0;  // DINOv2 only
    compute::DeviceBuffer ln1, mean1, rstd1, q, k, v, probs, context, mid, ln2, mean2, rstd2, fc1_out, gelu_out;
    compute::DeviceBuffer attention_out, mlp_out;  // the branches before their layer scale (DINOv2)
  };

  Linear add_linear(ParameterStore& store, const std::string& name, int in, int out);
  LayerNorm add_layer_norm(ParameterStore& store, const std::string& name);
  void add_attention(ParameterStore& store, Block& b, const std::string& layer);  // query, key, value, output
  void linear_forward(const Context& ctx, const Linear& l, const float* x, float* y);
  // Gradients of a Linear's weight and bias from x and dy; dx too when not null.
  void linear_backward(const Context& ctx, const Linear& l, const float* x, const float* dy, float* dx);
  void block_forward(const Context& ctx, Block& b, const float* x, float* out);
  // dout: the gradient of the block's output (kept); dx: of its input (written).
  void block_backward(const Context& ctx, Block& b, const float* x, const float* dout, float* dx);
  // Tells the gradient listener that these parameters' gradients are final, highest offset first.
  void announce(const Context& ctx, std::vector<std::size_t> params) const;
  void ensure_buffers(compute::Backend& backend);

  VitSpec spec_;
  ParameterStore* store_;
  std::size_t cls_token_ = 0, position_embeddings_ = 0;
  long mask_token_ = -1;  // DINOv2's (unused by the forward, as lightning-pose's; its gradient stays 0)
  Linear patch_embedding_;
  std::vector<Block> blocks_;
  LayerNorm final_norm_;

  // The step's geometry (set by forward).
  int batch_ = 0, grid_h_ = 0, grid_w_ = 0, tokens_ = 0;
  int resized_h_ = 0, resized_w_ = 0;       // the grid resize_ was made for
  std::vector<float> resize_host_;          // its host copy (an upload reads it later on a GPU stream)
  compute::DeviceBuffer resize_;            // [patches, pretrained_grid^2]: bicubic position-embedding resize
  compute::DeviceBuffer patches_;           // [N * patches, 3 * patch^2]
  compute::DeviceBuffer positions_;         // [tokens, C]: CLS + pos[0]; resized pos + patch-embedding bias
  std::vector<compute::DeviceBuffer> hidden_;  // layers + 1 residual streams [N * tokens, C]
  compute::DeviceBuffer final_out_, final_mean_, final_rstd_, features_;
  // Backward scratch, shared by the blocks.
  compute::DeviceBuffer d_hidden_a_, d_hidden_b_, d_mid_, d_tmp_, d_branch_, d_wide_, d_q_, d_k_, d_v_, d_scratch_;
};

// The registry's factory for vits_dino | vitb_dino | vits_dinov2 | vitb_dinov2.
std::unique_ptr<Backbone> make_vit(ParameterStore& store, const std::string& name, const std::string& prefix);

// A pretrained file's patch-embedding kernel [C, 3, p, p] (f32 or f64) for a model
// whose kernel is [C, 3, q, q]: resized as lightning-pose's VisionEncoderDino does
// (F.interpolate(bicubic, align_corners=True, antialias=True)), into f32. `tensor`
// keeps its name. Throws UserError for another element type or layout.
StoredTensor resize_patch_embedding(const StoredTensor& tensor, int to);

}  // namespace trainer::model
