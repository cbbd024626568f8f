// The ViT backbone (see vit.hpp). Shapes: B images, T = prefix + N tokens (N patches;
// the prefix is CLS, and DINOv3's 4 registers after it),
// R = B * T token rows, C hidden width, M MLP width; every activation is [R, width].
#include "model/vit.hpp"

#include <algorithm>  // std::max
#include <cstdint>    // std::int64_t
#include <cstring>    // std::memcpy
#include <utility>    // std::swap

#include "model/bicubic_resize.hpp"     // bicubic_resize_matrix_2d
#include "model/hugging_face_init.hpp"  // hugging_face_normal, ones_init
#include "model/rope_tables.hpp"     // rope_tables
#include "util/error.hpp"            // UserError

namespace trainer::model {
namespace {

using compute::DeviceBuffer;
using compute::ensure_capacity;
using compute::MatmulShape;
using compute::SharedInputLinear;


// A float32 or float64 tensor's elements (the resizes below check the type first).
std::vector<double> stored_values(const StoredTensor& tensor) {
  const bool f32 = tensor.type == StoredType::f32;
  std::vector<double> values(tensor.bytes.size() / (f32 ? sizeof(float) : sizeof(double)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (f32) {
      float v;
      std::memcpy(&v, tensor.bytes.data() + i * sizeof v, sizeof v);
      values[i] = v;
    } else {
      std::memcpy(&values[i], tensor.bytes.data() + i * sizeof(double), sizeof(double));
    }
  }
  return values;
}

}  // namespace

VitSpec vit_spec(const std::string& name) {
  VitSpec s;
  s.name = name;
  if (name == "vits_dino") {
    s.model_id = "facebook/dino-vits16";
  } else if (name == "vitb_dino") {
    s.model_id = "facebook/dino-vitb16";
    s.hidden = 768, s.heads = 12, s.mlp = 3072;
  } else if (name == "vits_dinov2" || name == "vitb_dinov2") {
    // Dinov2Config: image 518 in 14 x 14 patches (a 37 x 37 grid), LayerNorm eps 1e-6,
    // layer scale; lightning-pose resizes the patch kernels to 16 x 16.
    s.dinov2 = true;
    s.model_id = name == "vits_dinov2" ? "facebook/dinov2-small" : "facebook/dinov2-base";
    if (name == "vitb_dinov2") s.hidden = 768, s.heads = 12, s.mlp = 3072;
    s.pretrained_patch = 14, s.pretrained_grid = 37, s.layer_norm_eps = 1e-6f;
  } else if (name == "vits_dinov3" || name == "vitb_dinov3") {
    // DINOv3ViTConfig as the lvd1689m checkpoints set it: 4 register tokens, RoPE with
    // theta 100, LayerNorm eps 1e-5, layer scale, a plain GELU MLP, no key bias.
    s.dinov3 = true;
    s.model_id = name == "vits_dinov3" ? "facebook/dinov3-vits16-pretrain-lvd1689m"
                                       : "facebook/dinov3-vitb16-pretrain-lvd1689m";
    if (name == "vitb_dinov3") s.hidden = 768, s.heads = 12, s.mlp = 3072;
    s.registers = 4, s.rope_theta = 100.f, s.layer_norm_eps = 1e-5f;
    s.rope_rescale = 2.f;  // pos_embed_rescale; pos_embed_shift and _jitter are None
  } else if (name == "vitb_imagenet") {
    // lightning-pose loads MAE's checkpoint into a plain ViTModel (vit.py's
    // VisionEncoder): no masking, its fixed sin-cos position embeddings become
    // trainable parameters like DINO's; ViTMAEConfig's eps is ViTConfig's 1e-12.
    s.model_id = "facebook/vit-mae-base";
    s.hidden = 768, s.heads = 12, s.mlp = 3072;
  } else if (name == "vitb_sam") {
    // SamVisionConfig of facebook/sam-vit-base: 1024 x 1024 images (a 64 x 64 table),
    // LayerNorm eps 1e-6, windows of 14, global attention in layers 2, 5, 8, 11.
    s.sam = true;
    s.model_id = "facebook/sam-vit-base";
    s.hidden = 768, s.heads = 12, s.mlp = 3072;
    s.pretrained_grid = 64, s.layer_norm_eps = 1e-6f;
    s.window = 14, s.global_layers = {2, 5, 8, 11};
  } else {
    throw UserError("unknown backbone '" + name + "'",
                    "the ViT backbones are vits_dino, vitb_dino, vits_dinov2, vitb_dinov2, vits_dinov3, vitb_dinov3, "
                    "vitb_imagenet and vitb_sam");
  }
  return s;
}

int VitSpec::layer_window(int layer) const {
  for (int g : global_layers)
    if (g == layer) return 0;
  return window;
}

VisionTransformer::Linear VisionTransformer::add_linear(ParameterStore& store, const std::string& name, int in,
                                                        int out, bool bias) {
  Linear l;
  l.in = in, l.out = out, l.has_bias = bias;
  l.weight = store.add_parameter(name + ".weight", {out, in}, ParamGroup::backbone, hugging_face_normal());
  if (bias) l.bias = store.add_parameter(name + ".bias", {out}, ParamGroup::backbone, InitRule{});
  return l;
}

void VisionTransformer::add_dinov3_layer(ParameterStore& store, Block& b, const std::string& layer) {
  // DINOv3ViTLayer: norm1, attention (k_proj without bias, v_proj, q_proj, o_proj, in
  // that order), layer_scale1, norm2, mlp (up_proj, down_proj), layer_scale2.
  const int C = spec_.hidden;
  b.before = add_layer_norm(store, layer + "norm1");
  b.key = add_linear(store, layer + "attention.k_proj", C, C, /*bias=*/false);
  b.value = add_linear(store, layer + "attention.v_proj", C, C);
  b.query = add_linear(store, layer + "attention.q_proj", C, C);
  b.proj = add_linear(store, layer + "attention.o_proj", C, C);
  b.layer_scale1 = store.add_parameter(layer + "layer_scale1.lambda1", {C}, ParamGroup::backbone, ones_init());
  b.after = add_layer_norm(store, layer + "norm2");
  b.fc1 = add_linear(store, layer + "mlp.up_proj", C, spec_.mlp);
  b.fc2 = add_linear(store, layer + "mlp.down_proj", spec_.mlp, C);
  b.layer_scale2 = store.add_parameter(layer + "layer_scale2.lambda1", {C}, ParamGroup::backbone, ones_init());
}

void VisionTransformer::add_embeddings(ParameterStore& store, const std::string& root) {
  // Hugging Face's state_dict order: the embeddings' own parameters, then the patch
  // projection (DINOv3's is the Conv2d itself: patch_embeddings.weight).
  const int C = spec_.hidden, G = spec_.pretrained_grid, P = spec_.patch;
  cls_token_ =
      store.add_parameter(root + "embeddings.cls_token", {1, 1, C}, ParamGroup::backbone, hugging_face_normal());
  if (spec_.dinov2)
    mask_token_ = long(store.add_parameter(root + "embeddings.mask_token", {1, C}, ParamGroup::backbone, InitRule{}));
  if (spec_.dinov3) {
    mask_token_ =
        long(store.add_parameter(root + "embeddings.mask_token", {1, 1, C}, ParamGroup::backbone, InitRule{}));
    register_tokens_ = store.add_parameter(root + "embeddings.register_tokens", {1, spec_.registers, C},
                                           ParamGroup::backbone, hugging_face_normal());
  }
  if (mask_token_ >= 0) store.mark_unused(std::size_t(mask_token_));
  if (!spec_.dinov3) {
    position_embeddings_ = store.add_parameter(root + "embeddings.position_embeddings", {1, G * G + 1, C},
                                               ParamGroup::backbone, hugging_face_normal());
  }
  const std::string projection =
      root + (spec_.dinov3 ? "embeddings.patch_embeddings" : "embeddings.patch_embeddings.projection");
  patch_embedding_.in = 3 * P * P, patch_embedding_.out = C;
  patch_embedding_.weight =
      store.add_parameter(projection + ".weight", {C, 3, P, P}, ParamGroup::backbone, hugging_face_normal());
  patch_embedding_.bias = store.add_parameter(projection + ".bias", {C}, ParamGroup::backbone, InitRule{});
}

void VisionTransformer::add_sam_encoder(ParameterStore& store, const std::string& root, ImageSize image) {
  // SamVisionEncoder's state_dict: pos_embed, patch_embed.projection, layers.<i>
  // (layer_norm1, attn.rel_pos_h/_w, attn.qkv, attn.proj, layer_norm2, mlp.lin1/2), neck.
  const int C = spec_.hidden, P = spec_.patch, G = spec_.pretrained_grid;
  if (image.height == 0 && image.width == 0) image = {G * P, G * P};
  if (image.height < P || image.width < P || image.height % P != 0 || image.width % P != 0)
    throw UserError(spec_.name + " cannot take " + std::to_string(image.height) + "x" + std::to_string(image.width) +
                        " images: its position table needs multiples of " + std::to_string(P),
                    "set data.image_resize_dims.height/width (INI: data.image_resize_height/width) to multiples of " +
                        std::to_string(P));
  sam_grid_h_ = image.height / P, sam_grid_w_ = image.width / P;
  position_embeddings_ =
      store.add_parameter(root + "pos_embed", {1, sam_grid_h_, sam_grid_w_, C}, ParamGroup::backbone, InitRule{});
  patch_embedding_.in = 3 * P * P, patch_embedding_.out = C;
  patch_embedding_.weight =
      store.add_parameter(root + "patch_embed.projection.weight", {C, 3, P, P}, ParamGroup::backbone,
                          hugging_face_normal());
  patch_embedding_.bias =
      store.add_parameter(root + "patch_embed.projection.bias", {C}, ParamGroup::backbone, InitRule{});
  const int head_dim = C / spec_.heads;
  for (int i = 0; i < spec_.layers; ++i) {
    Block& b = blocks_[std::size_t(i)];
    const std::string layer = root + "layers." + std::to_string(i) + ".";
    b.window = spec_.layer_window(i);
    // Sized as SamVisionAttention makes them: for the window, or for the pretrained grid.
    const int span = 2 * (b.window > 0 ? b.window : G) - 1;
    b.before = add_layer_norm(store, layer + "layer_norm1");
    b.rel_pos_h = store.add_parameter(layer + "attn.rel_pos_h", {span, head_dim}, ParamGroup::backbone, InitRule{});
    b.rel_pos_w = store.add_parameter(layer + "attn.rel_pos_w", {span, head_dim}, ParamGroup::backbone, InitRule{});
    store.mark_unused(b.rel_pos_h);  // lightning-pose turns use_rel_pos off
    store.mark_unused(b.rel_pos_w);
    const Linear qkv = add_linear(store, layer + "attn.qkv", C, 3 * C);
    for (Linear* part : {&b.query, &b.key, &b.value}) {
      *part = qkv;
      part->out = C;
    }
    b.key.first_row = C, b.value.first_row = 2 * C;
    b.proj = add_linear(store, layer + "attn.proj", C, C);
    b.after = add_layer_norm(store, layer + "layer_norm2");
    b.fc1 = add_linear(store, layer + "mlp.lin1", C, spec_.mlp);
    b.fc2 = add_linear(store, layer + "mlp.lin2", spec_.mlp, C);
  }
  // SamVisionNeck (256 channels), which lightning-pose's forward skips.
  const int neck = 256;
  InitRule conv = hugging_face_normal();
  sam_neck_ = {store.add_parameter(root + "neck.conv1.weight", {neck, C, 1, 1}, ParamGroup::backbone, conv),
               store.add_parameter(root + "neck.layer_norm1.weight", {neck}, ParamGroup::backbone, ones_init()),
               store.add_parameter(root + "neck.layer_norm1.bias", {neck}, ParamGroup::backbone, InitRule{}),
               store.add_parameter(root + "neck.conv2.weight", {neck, neck, 3, 3}, ParamGroup::backbone, conv),
               store.add_parameter(root + "neck.layer_norm2.weight", {neck}, ParamGroup::backbone, ones_init()),
               store.add_parameter(root + "neck.layer_norm2.bias", {neck}, ParamGroup::backbone, InitRule{})};
  for (const std::size_t i : sam_neck_) store.mark_unused(i);
}

void VisionTransformer::add_attention(ParameterStore& store, Block& b, const std::string& layer) {
  const int C = spec_.hidden;
  b.query = add_linear(store, layer + "attention.attention.query", C, C);
  b.key = add_linear(store, layer + "attention.attention.key", C, C);
  b.value = add_linear(store, layer + "attention.attention.value", C, C);
  b.proj = add_linear(store, layer + "attention.output.dense", C, C);
}

VisionTransformer::LayerNorm VisionTransformer::add_layer_norm(ParameterStore& store, const std::string& name) {
  LayerNorm n;
  n.weight = store.add_parameter(name + ".weight", {spec_.hidden}, ParamGroup::backbone, ones_init());
  n.bias = store.add_parameter(name + ".bias", {spec_.hidden}, ParamGroup::backbone, InitRule{});
  return n;
}

VisionTransformer::VisionTransformer(ParameterStore& store, const VitSpec& spec, const std::string& prefix,
                                     ImageSize image)
    : spec_(spec), store_(&store), blocks_(std::size_t(spec.layers)), hidden_(std::size_t(spec.layers) + 1) {
  if (spec.hidden % spec.heads != 0)
    throw SystemError("internal error: ViT width " + std::to_string(spec.hidden) + " is not a multiple of " +
                      std::to_string(spec.heads) + " heads");
  if (spec.dinov3 && (spec.hidden / spec.heads) % 4 != 0)
    throw SystemError("internal error: DINOv3's RoPE needs a head width divisible by 4");
  const int C = spec.hidden;
  const std::string root = prefix + "vision_encoder.";
  if (spec.sam) {
    add_sam_encoder(store, root, image);
    return;
  }
  add_embeddings(store, root);
  // Each layer's tensors in Hugging Face's order (ViTLayer: attention, intermediate,
  // output, layernorm_before/after).
  for (int i = 0; i < spec.layers; ++i) {
    Block& b = blocks_[std::size_t(i)];
    const std::string layer = root + (spec.dinov3 ? "layer." : "encoder.layer.") + std::to_string(i) + ".";
    if (spec.dinov3) {
      add_dinov3_layer(store, b, layer);
    } else if (spec.dinov2) {  // Dinov2Layer: norm1, attention, layer_scale1, norm2, mlp, layer_scale2
      b.before = add_layer_norm(store, layer + "norm1");
      add_attention(store, b, layer);
      b.layer_scale1 = store.add_parameter(layer + "layer_scale1.lambda1", {C}, ParamGroup::backbone, ones_init());
      b.after = add_layer_norm(store, layer + "norm2");
      b.fc1 = add_linear(store, layer + "mlp.fc1", C, spec.mlp);
      b.fc2 = add_linear(store, layer + "mlp.fc2", spec.mlp, C);
      b.layer_scale2 = store.add_parameter(layer + "layer_scale2.lambda1", {C}, ParamGroup::backbone, ones_init());
    } else {  // ViTLayer: attention, intermediate, output, layernorm_before, layernorm_after
      add_attention(store, b, layer);
      b.fc1 = add_linear(store, layer + "intermediate.dense", C, spec.mlp);
      b.fc2 = add_linear(store, layer + "output.dense", spec.mlp, C);
      b.before = add_layer_norm(store, layer + "layernorm_before");
      b.after = add_layer_norm(store, layer + "layernorm_after");
    }
  }
  final_norm_ = add_layer_norm(store, root + (spec.dinov3 ? "norm" : "layernorm"));
}

void VisionTransformer::ensure_buffers(compute::Backend& backend) {
  const std::size_t R = std::size_t(batch_) * tokens_, C = std::size_t(spec_.hidden), M = std::size_t(spec_.mlp);
  const std::size_t N = std::size_t(tokens_) - spec_.prefix_tokens(), P = std::size_t(spec_.patch);
  ensure_capacity(backend, patches_, std::size_t(batch_) * N * 3 * P * P);
  ensure_capacity(backend, positions_, std::size_t(tokens_) * C);
  for (auto& h : hidden_) ensure_capacity(backend, h, R * C);
  for (auto& b : blocks_) {
    // The attention's rows (SAM's windows: padding included) and its saved state:
    // its probabilities, or far less where a device fuses it.
    const std::size_t A = attention_rows(b);
    const std::size_t probs = backend.transformer_ops().attention_state_count(attention_shape(b));
    for (DeviceBuffer* t : {&b.ln1, &b.mid, &b.ln2}) ensure_capacity(backend, *t, R * C);
    for (DeviceBuffer* t : {&b.q, &b.k, &b.v, &b.context}) ensure_capacity(backend, *t, A * C);
    if (b.window > 0) {
      ensure_capacity(backend, b.context_tokens, R * C);
      for (DeviceBuffer& t : qkv_tokens_) ensure_capacity(backend, t, R * C);
    }
    for (DeviceBuffer* t : {&b.mean1, &b.rstd1, &b.mean2, &b.rstd2}) ensure_capacity(backend, *t, R);
    ensure_capacity(backend, b.probs, probs);
    if (spec_.layer_scale()) {
      ensure_capacity(backend, b.attention_out, R * C);
      ensure_capacity(backend, b.mlp_out, R * C);
    }
    ensure_capacity(backend, b.fc1_out, R * M);
    ensure_capacity(backend, b.gelu_out, R * M);
    if (copies_) {  // 16-bit values, two to a float
      ensure_capacity(backend, b.ln1_16, (R * C + 1) / 2);
      ensure_capacity(backend, b.ln2_16, (R * C + 1) / 2);
      ensure_capacity(backend, b.gelu_16, (R * M + 1) / 2);
    }
  }
  ensure_capacity(backend, final_out_, R * C);
  ensure_capacity(backend, final_mean_, R);
  ensure_capacity(backend, final_rstd_, R);
  ensure_capacity(backend, features_, std::size_t(batch_) * C * N);
}

const float* VisionTransformer::weight(const Linear& l) const {
  return store_->param(l.weight) + std::size_t(l.first_row) * l.in;
}
const float* VisionTransformer::bias(const Linear& l) const {
  return l.has_bias ? store_->param(l.bias) + l.first_row : nullptr;
}
float* VisionTransformer::weight_grad(const Linear& l) const {
  return store_->grad(l.weight) + std::size_t(l.first_row) * l.in;
}
float* VisionTransformer::bias_grad(const Linear& l) const {
  return l.has_bias ? store_->grad(l.bias) + l.first_row : nullptr;
}

compute::WindowGrid VisionTransformer::window_grid(const Block& b) const {
  return {batch_, grid_h_, grid_w_, b.window};
}

compute::AttentionShape VisionTransformer::attention_shape(const Block& b) const {
  const int head_dim = spec_.hidden / spec_.heads;
  if (b.window == 0) return {batch_, tokens_, spec_.heads, head_dim};
  const compute::WindowGrid g = window_grid(b);
  return {batch_ * g.windows_h() * g.windows_w(), b.window * b.window, spec_.heads, head_dim};
}

std::size_t VisionTransformer::attention_rows(const Block& b) const {
  const compute::AttentionShape a = attention_shape(b);
  return std::size_t(a.batch) * a.tokens;
}

void VisionTransformer::linear_forward(const Context& ctx, const Linear& l, const float* x, const std::uint16_t* x16,
                                       float* y) {
  ctx.backend.transformer_ops().linear_forward(x, x16, weight(l), bias(l), y, batch_ * tokens_, l.in, l.out,
                                               ctx.stream);
}

std::uint16_t* VisionTransformer::copy16(DeviceBuffer& buffer) const {
  return copies_ ? reinterpret_cast<std::uint16_t*>(buffer.data()) : nullptr;
}

compute::SharedInputLinear VisionTransformer::shared_input(const Linear& l, float* y) {
  compute::SharedInputLinear s;
  s.out = l.out;
  s.w = weight(l);
  s.bias = bias(l);
  s.y = y;
  s.dw = weight_grad(l);
  s.dbias = bias_grad(l);
  return s;
}

void VisionTransformer::linear_backward(const Context& ctx, const Linear& l, const float* x, const std::uint16_t* x16,
                                        const float* dy, float* dx) {
  ctx.backend.transformer_ops().linear_backward(x, x16, weight(l), dy, dx, weight_grad(l), bias_grad(l),
                                                batch_ * tokens_, l.in, l.out, ctx.stream);
}

compute::TensorView VisionTransformer::forward(const Context& ctx, compute::ConstTensorView x) {
  const int P = spec_.patch, C = spec_.hidden;
  check_network_input(x, P, spec_.name + "'s patch size");
  if (x.storage != compute::Storage::f32_nchw)
    throw SystemError("internal error: " + spec_.name + " takes fp32 NCHW images");
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  batch_ = x.shape.n, grid_h_ = x.shape.h / P, grid_w_ = x.shape.w / P;
  const int N = grid_h_ * grid_w_, prefix = spec_.prefix_tokens();
  tokens_ = prefix + N;
  const int T = tokens_, K = 3 * P * P;
  copies_ = ops.activation_copies();
  ensure_buffers(ctx.backend);
  embedding_rows(ctx);

  // Tokens: every image's rows start as the positions; the patch embedding (a Linear
  // over the flattened 16 x 16 patches) adds into the patch rows.
  float* tokens = hidden_[0].data();
  for (int b = 0; b < batch_; ++b) ctx.backend.copy(tokens + std::size_t(b) * T * C, positions_.data(), std::size_t(T) * C, s);
  ops.patchify(x.data, patches_.data(), batch_, 3, x.shape.h, x.shape.w, P, s);
  MatmulShape embed;
  embed.m = N, embed.n = C, embed.k = K;
  embed.transpose_b = true;
  embed.lda = K, embed.ldb = K, embed.ldc = C;
  embed.stride_a = static_cast<long long>(N) * K, embed.stride_b = 0, embed.stride_c = static_cast<long long>(T) * C;
  embed.batch = batch_;
  embed.beta = 1.f;
  embed.autocast = true;  // the patch embedding is a Conv2d: 16-bit under torch.autocast
  ops.matmul(embed, patches_.data(), store_->param(patch_embedding_.weight), tokens + std::size_t(prefix) * C, s);

  for (std::size_t l = 0; l < blocks_.size(); ++l) block_forward(ctx, blocks_[l], hidden_[l].data(), hidden_[l + 1].data());
  const float* last = hidden_.back().data();  // SAM's features: the last block's tokens
  if (!spec_.sam) {
    ops.layer_norm_forward(hidden_.back().data(), store_->param(final_norm_.weight), store_->param(final_norm_.bias),
                           final_out_.data(), nullptr, final_mean_.data(), final_rstd_.data(), batch_ * T, C,
                           spec_.layer_norm_eps, s);
    last = final_out_.data();
  }
  // The CLS (and register) tokens are dropped; patch tokens [N, C] become the map [C, h, w].
  ops.transpose(last + std::size_t(prefix) * C, C, static_cast<long long>(T) * C, features_.data(),
                static_cast<long long>(C) * N, batch_, N, C, s);
  return {features_.data(), {batch_, C, grid_h_, grid_w_}};
}

void VisionTransformer::embedding_rows(const Context& ctx) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int C = spec_.hidden, G = spec_.pretrained_grid, N = grid_h_ * grid_w_, prefix = spec_.prefix_tokens();
  float* rows = positions_.data();
  if (spec_.sam) {  // the table, made for one grid at load, plus the patch-embedding bias
    if (grid_h_ != sam_grid_h_ || grid_w_ != sam_grid_w_)
      throw UserError(spec_.name + "'s position table is for " + std::to_string(sam_grid_h_ * spec_.patch) + "x" +
                          std::to_string(sam_grid_w_ * spec_.patch) + " images, not " +
                          std::to_string(grid_h_ * spec_.patch) + "x" + std::to_string(grid_w_ * spec_.patch),
                      "a vitb_sam model takes the image size it was made for (data.image_resize_dims of "
                      "its training)");
    ctx.backend.copy(rows, store_->param(position_embeddings_), std::size_t(N) * C, s);
    ops.add_bias(rows, store_->param(patch_embedding_.bias), N, C, s);
    return;
  }
  if (spec_.dinov3) {
    // [CLS; registers; patch-embedding bias]: DINOv3 has no additive position
    // embedding; positions enter as the rotation of each patch's queries and keys.
    rope_tables_for_forward(ctx);
    ctx.backend.copy(rows, store_->param(cls_token_), std::size_t(C), s);
    ctx.backend.copy(rows + C, store_->param(register_tokens_), std::size_t(spec_.registers) * C, s);
    ctx.backend.fill(rows + std::size_t(prefix) * C, 0.f, std::size_t(N) * C, s);
    ops.add_bias(rows + std::size_t(prefix) * C, store_->param(patch_embedding_.bias), N, C, s);
    return;
  }
  // Position embeddings for this grid: Hugging Face resizes the pretrained 14 x 14
  // grid bicubically on every forward (the parameter keeps its 197 rows), so the
  // resize is a fixed matrix applied to the parameter, and its transpose in backward.
  if (resized_h_ != grid_h_ || resized_w_ != grid_w_) {
    resize_host_ = bicubic_resize_matrix_2d(G, G, grid_h_, grid_w_);
    ensure_capacity(ctx.backend, resize_, resize_host_.size());
    ctx.backend.upload(resize_.data(), resize_host_.data(), resize_host_.size(), s);
    resized_h_ = grid_h_, resized_w_ = grid_w_;
  }
  const float* pos = store_->param(position_embeddings_);
  ops.add(store_->param(cls_token_), pos, rows, std::size_t(C), s);  // row 0: CLS + its position
  MatmulShape resize;
  resize.m = N, resize.n = C, resize.k = G * G;
  resize.lda = G * G, resize.ldb = C, resize.ldc = C;
  ops.matmul(resize, resize_.data(), pos + C, rows + C, s);
  ops.add_bias(rows + C, store_->param(patch_embedding_.bias), N, C, s);
}

void VisionTransformer::rope_tables_for_forward(const Context& ctx) {
  auto& s = ctx.stream;
  const int head_dim = spec_.hidden / spec_.heads;
  if (rope_h_ != grid_h_ || rope_w_ != grid_w_) {
    rope_host_ = rope_tables(grid_h_, grid_w_, head_dim, spec_.rope_theta);
    ensure_capacity(ctx.backend, rope_cos_, rope_host_.cos.size());
    ensure_capacity(ctx.backend, rope_sin_, rope_host_.sin.size());
    ensure_capacity(ctx.backend, rope_inv_freq_, rope_host_.inv_freq.size());
    ctx.backend.upload(rope_cos_.data(), rope_host_.cos.data(), rope_host_.cos.size(), s);
    ctx.backend.upload(rope_sin_.data(), rope_host_.sin.data(), rope_host_.sin.size(), s);
    ctx.backend.upload(rope_inv_freq_.data(), rope_host_.inv_freq.data(), rope_host_.inv_freq.size(), s);
    rope_h_ = grid_h_, rope_w_ = grid_w_;
  }
  rope_cos_now_ = rope_cos_.data(), rope_sin_now_ = rope_sin_.data();
  if (!ctx.training || forward_in_step_ >= int(drawn_scales_.size())) return;
  // A training forward with its drawn factor: this forward's tables, made on the
  // device from the factor there (so a replayed recording uses each step's).
  ensure_capacity(ctx.backend, rope_train_cos_, rope_host_.cos.size());
  ensure_capacity(ctx.backend, rope_train_sin_, rope_host_.sin.size());
  ctx.backend.transformer_ops().rotary_tables(rope_scales_.data() + forward_in_step_, rope_inv_freq_.data(),
                                              rope_train_cos_.data(), rope_train_sin_.data(), grid_h_, grid_w_,
                                              head_dim, s);
  ++forward_in_step_;
  rope_cos_now_ = rope_train_cos_.data(), rope_sin_now_ = rope_train_sin_.data();
}

void VisionTransformer::prepare_training_step(const Context& ctx, const StepKey& key, int forwards) {
  if (!spec_.dinov3 || !(spec_.rope_rescale > 1.f)) return;
  if (forwards < 1 || std::size_t(forwards) > compute::Backend::kMaxSetValues)
    throw SystemError("internal error: " + std::to_string(forwards) + " training forwards in a step");
  drawn_scales_.clear();
  for (int f = 0; f < forwards; ++f) drawn_scales_.push_back(rope_rescale_draw(key, f, spec_.rope_rescale));
  ensure_capacity(ctx.backend, rope_scales_, compute::Backend::kMaxSetValues);
  ctx.backend.set_values(rope_scales_.data(), drawn_scales_.data(), drawn_scales_.size(), ctx.stream);
  forward_in_step_ = 0;
}

std::vector<std::pair<std::string, std::vector<float>>> VisionTransformer::training_draws() const {
  if (drawn_scales_.empty()) return {};
  return {{"rope_rescale", drawn_scales_}};
}

compute::RotaryShape VisionTransformer::rotary_shape() const {
  return {batch_, tokens_, spec_.prefix_tokens(), spec_.heads, spec_.hidden / spec_.heads};
}

void VisionTransformer::block_forward(const Context& ctx, Block& b, const float* x, float* out) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int R = batch_ * tokens_, C = spec_.hidden;
  const std::size_t RC = std::size_t(R) * C;
  const bool windowed = b.window > 0;
  // Windowed (SAM): SamVisionLayer pads ln1's output with zero tokens and projects the
  // windows, so a padding token's q, k and v are the biases alone. The projections run
  // here on the tokens only and the windows' padding rows are filled with the biases:
  // the same values, without projecting the padding (at 256x256, two thirds of the
  // windows' rows). The projection after the attention is per token too: it runs on
  // the windows' output put back in token order (SAM crops the padding's rows).
  ops.layer_norm_forward(x, store_->param(b.before.weight), store_->param(b.before.bias), b.ln1.data(),
                         copy16(b.ln1_16), b.mean1.data(), b.rstd1.data(), R, C, spec_.layer_norm_eps, s);
  float* const projected[3] = {windowed ? qkv_tokens_[0].data() : b.q.data(),
                               windowed ? qkv_tokens_[1].data() : b.k.data(),
                               windowed ? qkv_tokens_[2].data() : b.v.data()};
  const SharedInputLinear qkv[3] = {shared_input(b.query, projected[0]), shared_input(b.key, projected[1]),
                                     shared_input(b.value, projected[2])};
  ops.linears_forward(b.ln1.data(), copy16(b.ln1_16), qkv, 3, R, C, s);
  if (windowed) {
    float* const windows[3] = {b.q.data(), b.k.data(), b.v.data()};
    for (int i = 0; i < 3; ++i) ops.window_partition(projected[i], windows[i], qkv[i].bias, window_grid(b), C, s);
  }
  if (spec_.dinov3) {  // q and k are kept turned: the attention's backward reads them
    ops.rotary_forward(b.q.data(), rope_cos_now_, rope_sin_now_, rotary_shape(), s);
    ops.rotary_forward(b.k.data(), rope_cos_now_, rope_sin_now_, rotary_shape(), s);
  }
  const compute::AttentionShape a = attention_shape(b);
  ops.attention_forward(b.q.data(), b.k.data(), b.v.data(), b.probs.data(), b.context.data(), a, s);
  // A fused attention's own 16-bit output, where it kept one (in token order only).
  const std::uint16_t* context16 = copies_ && !windowed ? ops.attention_output16(b.probs.data(), a) : nullptr;
  const float* context = b.context.data();
  if (windowed) {
    ops.window_unpartition(b.context.data(), b.context_tokens.data(), window_grid(b), C, s);
    context = b.context_tokens.data();
  }
  if (spec_.layer_scale()) {
    linear_forward(ctx, b.proj, context, context16, b.attention_out.data());
    ops.layer_scale_forward(b.attention_out.data(), store_->param(b.layer_scale1), b.mid.data(), R, C, s);
  } else {
    linear_forward(ctx, b.proj, context, context16, b.mid.data());
  }
  ops.add(b.mid.data(), x, b.mid.data(), RC, s);  // residual
  ops.layer_norm_forward(b.mid.data(), store_->param(b.after.weight), store_->param(b.after.bias), b.ln2.data(),
                         copy16(b.ln2_16), b.mean2.data(), b.rstd2.data(), R, C, spec_.layer_norm_eps, s);
  linear_forward(ctx, b.fc1, b.ln2.data(), copy16(b.ln2_16), b.fc1_out.data());
  ops.gelu_forward(b.fc1_out.data(), b.gelu_out.data(), copy16(b.gelu_16), std::size_t(R) * spec_.mlp, s);
  if (spec_.layer_scale()) {
    linear_forward(ctx, b.fc2, b.gelu_out.data(), copy16(b.gelu_16), b.mlp_out.data());
    ops.layer_scale_forward(b.mlp_out.data(), store_->param(b.layer_scale2), out, R, C, s);
  } else {
    linear_forward(ctx, b.fc2, b.gelu_out.data(), copy16(b.gelu_16), out);
  }
  ops.add(out, b.mid.data(), out, RC, s);  // residual
}

void VisionTransformer::block_backward(const Context& ctx, Block& b, const float* x, const float* dout, float* dx) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int R = batch_ * tokens_, C = spec_.hidden;
  const std::size_t RC = std::size_t(R) * C;
  // MLP branch: out = mid + [layer scale *] fc2(gelu(fc1(LN(mid)))).
  const float* d_mlp = dout;
  if (spec_.layer_scale()) {
    ops.layer_scale_backward(b.mlp_out.data(), store_->param(b.layer_scale2), dout, d_branch_.data(),
                             store_->grad(b.layer_scale2), R, C, s);
    d_mlp = d_branch_.data();
  }
  linear_backward(ctx, b.fc2, b.gelu_out.data(), copy16(b.gelu_16), d_mlp, d_wide_.data());
  ops.gelu_backward(b.fc1_out.data(), d_wide_.data(), d_wide_.data(), std::size_t(R) * spec_.mlp, s);
  linear_backward(ctx, b.fc1, b.ln2.data(), copy16(b.ln2_16), d_wide_.data(), d_tmp_.data());
  ops.layer_norm_backward(b.mid.data(), store_->param(b.after.weight), b.mean2.data(), b.rstd2.data(), d_tmp_.data(),
                          d_mid_.data(), store_->grad(b.after.weight), store_->grad(b.after.bias), R, C, s);
  ops.add(d_mid_.data(), dout, d_mid_.data(), RC, s);
  // Attention branch: mid = x + [layer scale *] proj(attention(q, k, v of LN(x))).
  const float* d_attention = d_mid_.data();
  if (spec_.layer_scale()) {
    ops.layer_scale_backward(b.attention_out.data(), store_->param(b.layer_scale1), d_mid_.data(), d_branch_.data(),
                             store_->grad(b.layer_scale1), R, C, s);
    d_attention = d_branch_.data();
  }
  const bool windowed = b.window > 0;
  const compute::AttentionShape a = attention_shape(b);
  const std::uint16_t* context16 = copies_ && !windowed ? ops.attention_output16(b.probs.data(), a) : nullptr;
  linear_backward(ctx, b.proj, windowed ? b.context_tokens.data() : b.context.data(), context16, d_attention,
                  d_tmp_.data());
  const float* d_context = d_tmp_.data();
  if (windowed) {  // the cropped padding's outputs have no gradient
    ops.window_partition(d_tmp_.data(), d_windows_.data(), nullptr, window_grid(b), C, s);
    d_context = d_windows_.data();
  }
  ops.attention_backward(b.q.data(), b.k.data(), b.v.data(), b.probs.data(), b.context.data(), d_context,
                         d_q_.data(), d_k_.data(), d_v_.data(), d_scratch_.data(), a, s);
  if (spec_.dinov3) {  // back through the rotations to the projections' outputs
    ops.rotary_backward(d_q_.data(), rope_cos_now_, rope_sin_now_, rotary_shape(), s);
    ops.rotary_backward(d_k_.data(), rope_cos_now_, rope_sin_now_, rotary_shape(), s);
  }
  // d LN(x) = dq Wq + dk Wk + dv Wv (the first product writes, the others add), and
  // the three layers' weight and bias gradients.
  SharedInputLinear qkv[3] = {shared_input(b.query, nullptr), shared_input(b.key, nullptr),
                              shared_input(b.value, nullptr)};
  const float* d_qkv[3] = {d_q_.data(), d_k_.data(), d_v_.data()};
  for (int i = 0; i < 3; ++i) qkv[i].dy = d_qkv[i];
  if (windowed) {
    // The weights and ln1 see the tokens' rows, put back in token order; the biases
    // see every row of the windows, the padding's included (there q, k, v are the
    // biases themselves).
    const int window_rows = int(attention_rows(b));
    for (int i = 0; i < 3; ++i) {
      ops.window_unpartition(d_qkv[i], qkv_tokens_[i].data(), window_grid(b), C, s);
      ops.column_sums(d_qkv[i], qkv[i].dbias, window_rows, C, s);
      qkv[i].dy = qkv_tokens_[i].data();
      qkv[i].dbias = nullptr;
    }
  }
  ops.linears_backward(b.ln1.data(), copy16(b.ln1_16), qkv, 3, d_tmp_.data(), R, C, s);
  ops.layer_norm_backward(x, store_->param(b.before.weight), b.mean1.data(), b.rstd1.data(), d_tmp_.data(), dx,
                          store_->grad(b.before.weight), store_->grad(b.before.bias), R, C, s);
  ops.add(dx, d_mid_.data(), dx, RC, s);
  std::vector<std::size_t> done = {b.before.weight, b.before.bias, b.after.weight, b.after.bias};
  for (const Linear* l : {&b.query, &b.key, &b.value, &b.proj, &b.fc1, &b.fc2}) {
    done.push_back(l->weight);
    if (l->has_bias) done.push_back(l->bias);
  }
  if (spec_.layer_scale()) done.insert(done.end(), {b.layer_scale1, b.layer_scale2});
  if (spec_.sam) done.insert(done.end(), {b.rel_pos_h, b.rel_pos_w});  // unused: gradients 0
  announce_gradients(ctx, *store_, std::move(done));
}

void VisionTransformer::backward(const Context& ctx, compute::TensorView dy) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int T = tokens_, prefix = spec_.prefix_tokens(), N = T - prefix, C = spec_.hidden;
  const int R = batch_ * T;
  const std::size_t RC = std::size_t(R) * C;
  if (dy.shape != compute::Shape4{batch_, C, grid_h_, grid_w_})
    throw SystemError("internal error: " + spec_.name + " backward of " + dy.shape.str() + " after a forward of " +
                      compute::Shape4{batch_, C, grid_h_, grid_w_}.str());
  for (DeviceBuffer* t : {&d_hidden_a_, &d_hidden_b_, &d_mid_, &d_tmp_, &d_branch_})
    ensure_capacity(ctx.backend, *t, RC);
  std::size_t attention = RC, scratch = std::size_t(T) * C;  // the widest block's
  for (const Block& b : blocks_) {
    const compute::AttentionShape a = attention_shape(b);
    attention = std::max(attention, attention_rows(b) * C);
    scratch = std::max(scratch, a.scratch_count());
    if (b.window > 0) ensure_capacity(ctx.backend, d_windows_, attention_rows(b) * C);
  }
  for (DeviceBuffer* t : {&d_q_, &d_k_, &d_v_}) ensure_capacity(ctx.backend, *t, attention);
  ensure_capacity(ctx.backend, d_wide_, std::size_t(R) * spec_.mlp);
  ensure_capacity(ctx.backend, d_scratch_, scratch);

  // The map back into patch-token rows; the dropped CLS (and register) tokens' gradient is 0.
  DeviceBuffer* d_out = &d_hidden_b_;
  DeviceBuffer* d_in = &d_hidden_a_;
  if (spec_.sam) {  // the features are the last block's tokens; the neck is unused
    ops.transpose(dy.data, N, static_cast<long long>(C) * N, d_hidden_b_.data(), static_cast<long long>(T) * C,
                  batch_, C, N, s);
    announce_gradients(ctx, *store_, sam_neck_);
  } else {
    ctx.backend.fill(d_hidden_a_.data(), 0.f, RC, s);
    ops.transpose(dy.data, N, static_cast<long long>(C) * N, d_hidden_a_.data() + std::size_t(prefix) * C,
                  static_cast<long long>(T) * C, batch_, C, N, s);
    ops.layer_norm_backward(hidden_.back().data(), store_->param(final_norm_.weight), final_mean_.data(),
                            final_rstd_.data(), d_hidden_a_.data(), d_hidden_b_.data(),
                            store_->grad(final_norm_.weight), store_->grad(final_norm_.bias), R, C, s);
    announce_gradients(ctx, *store_, {final_norm_.weight, final_norm_.bias});
  }
  for (std::size_t l = blocks_.size(); l-- > 0;) {
    block_backward(ctx, blocks_[l], hidden_[l].data(), d_out->data(), d_in->data());
    std::swap(d_out, d_in);
  }
  embedding_backward(ctx, d_out->data());  // the gradient of the embeddings' output
}

void VisionTransformer::embedding_backward(const Context& ctx, const float* d_tokens) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int T = tokens_, prefix = spec_.prefix_tokens(), N = T - prefix, C = spec_.hidden;
  const int G = spec_.pretrained_grid, K = 3 * spec_.patch * spec_.patch;
  // Every image's rows started as the positions: their gradient is the sum over images.
  float* d_positions = d_scratch_.data();
  ops.column_sums(d_tokens, d_positions, batch_, T * C, s);
  std::vector<std::size_t> embeddings = {patch_embedding_.weight, patch_embedding_.bias};
  if (spec_.sam) {  // the table is used as it is: its gradient is the positions'
    ctx.backend.copy(store_->grad(position_embeddings_), d_positions, std::size_t(N) * C, s);
    embeddings.push_back(position_embeddings_);
  } else if (spec_.dinov3) {
    ctx.backend.copy(store_->grad(cls_token_), d_positions, std::size_t(C), s);
    embeddings.push_back(cls_token_);
    ctx.backend.copy(store_->grad(register_tokens_), d_positions + C, std::size_t(spec_.registers) * C, s);
    embeddings.push_back(register_tokens_);
  } else {
    ctx.backend.copy(store_->grad(cls_token_), d_positions, std::size_t(C), s);
    embeddings.push_back(cls_token_);
    float* d_pos = store_->grad(position_embeddings_);
    ctx.backend.copy(d_pos, d_positions, std::size_t(C), s);
    MatmulShape resize_t;  // the resize's transpose
    resize_t.m = G * G, resize_t.n = C, resize_t.k = N;
    resize_t.transpose_a = true;
    resize_t.lda = G * G, resize_t.ldb = C, resize_t.ldc = C;
    ops.matmul(resize_t, resize_.data(), d_positions + C, d_pos + C, s);
    embeddings.push_back(position_embeddings_);
  }
  const float* d_patch_rows = d_positions + std::size_t(prefix) * C;
  ops.column_sums(d_patch_rows, store_->grad(patch_embedding_.bias), N, C, s);
  MatmulShape d_weight;  // sum over images of d_patch_rows^T [C, N] * patches [N, K]
  d_weight.m = C, d_weight.n = K, d_weight.k = N;
  d_weight.transpose_a = true;
  d_weight.lda = C, d_weight.ldb = K, d_weight.ldc = K;
  d_weight.autocast = true;  // the patch embedding's weight gradient, as its forward
  for (int b = 0; b < batch_; ++b) {
    d_weight.beta = b == 0 ? 0.f : 1.f;
    ops.matmul(d_weight, d_tokens + (std::size_t(b) * T + prefix) * C, patches_.data() + std::size_t(b) * N * K,
               store_->grad(patch_embedding_.weight), s);
  }
  if (mask_token_ >= 0) embeddings.push_back(std::size_t(mask_token_));  // its gradient: 0 since allocation
  announce_gradients(ctx, *store_, std::move(embeddings));
}


StoredTensor resize_patch_embedding(const StoredTensor& tensor, int to) {
  const auto& sh = tensor.shape;
  if (sh.size() != 4 || sh[2] != sh[3] || (tensor.type != StoredType::f32 && tensor.type != StoredType::f64))
    throw UserError("patch embedding '" + tensor.name + "' is not a float32/float64 [C, 3, p, p] kernel",
                    "give the model's model.safetensors as Hugging Face publishes it");
  const int from = int(sh[2]);
  const std::size_t kernels = std::size_t(sh[0]) * std::size_t(sh[1]);
  const auto m = antialiased_bicubic_resize_matrix(from, to, /*align_corners=*/true);
  const std::vector<double> in = stored_values(tensor);
  // Separable, rows then columns, as ATen's antialiased kernel runs it.
  std::vector<float> out(kernels * to * to);
  std::vector<double> rows(std::size_t(from) * to);
  for (std::size_t k = 0; k < kernels; ++k) {
    const double* src = in.data() + k * from * from;
    for (int y = 0; y < from; ++y)
      for (int x = 0; x < to; ++x) {
        double v = 0;
        for (int i = 0; i < from; ++i) v += m[std::size_t(x) * from + i] * src[y * from + i];
        rows[std::size_t(y) * to + x] = v;
      }
    for (int y = 0; y < to; ++y)
      for (int x = 0; x < to; ++x) {
        double v = 0;
        for (int i = 0; i < from; ++i) v += m[std::size_t(y) * from + i] * rows[std::size_t(i) * to + x];
        out[k * to * to + std::size_t(y) * to + x] = float(v);
      }
  }
  return float32_tensor(tensor.name, std::vector<std::int64_t>{sh[0], sh[1], to, to}, out);
}

StoredTensor resize_position_table(const StoredTensor& tensor, const std::vector<int>& shape) {
  const auto& sh = tensor.shape;
  if (sh == std::vector<std::int64_t>(shape.begin(), shape.end())) return tensor;  // any element type
  if (sh.size() != 4 || sh[0] != 1 || shape.size() != 4 || sh[3] != shape[3] ||
      (tensor.type != StoredType::f32 && tensor.type != StoredType::f64))
    throw UserError("position table '" + tensor.name + "' is not a float32/float64 [1, h, w, " +
                        std::to_string(shape.size() == 4 ? shape[3] : 0) + "] table",
                    "give the model's model.safetensors as Hugging Face publishes it");
  const int in_h = int(sh[1]), in_w = int(sh[2]), out_h = shape[1], out_w = shape[2], C = shape[3];
  const std::vector<double> in = stored_values(tensor);
  // F.interpolate(bicubic, antialias=True) of the [1, C, h, w] view, separable: along
  // the width, then the height, as ATen's antialiased kernel runs it.
  const auto mh = antialiased_bicubic_resize_matrix(in_h, out_h, /*align_corners=*/false);
  const auto mw = antialiased_bicubic_resize_matrix(in_w, out_w, /*align_corners=*/false);
  std::vector<double> rows(std::size_t(in_h) * out_w * C, 0.0);
  for (int y = 0; y < in_h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int i = 0; i < in_w; ++i) {
        const double w = mw[std::size_t(x) * in_w + i];
        if (w == 0.0) continue;
        const double* src = in.data() + (std::size_t(y) * in_w + i) * C;
        double* dst = rows.data() + (std::size_t(y) * out_w + x) * C;
        for (int c = 0; c < C; ++c) dst[c] += w * src[c];
      }
  std::vector<double> out(std::size_t(out_h) * out_w * C, 0.0);
  for (int y = 0; y < out_h; ++y)
    for (int i = 0; i < in_h; ++i) {
      const double w = mh[std::size_t(y) * in_h + i];
      if (w == 0.0) continue;
      for (std::size_t k = 0; k < std::size_t(out_w) * C; ++k)
        out[std::size_t(y) * out_w * C + k] += w * rows[std::size_t(i) * out_w * C + k];
    }
  return float32_tensor(tensor.name, std::vector<int>{1, out_h, out_w, C}, std::vector<float>(out.begin(), out.end()));
}

std::unique_ptr<Backbone> make_vit(ParameterStore& store, const std::string& name, const std::string& prefix,
                                   ImageSize image) {
  return std::make_unique<VisionTransformer>(store, vit_spec(name), prefix, image);
}

}  // namespace trainer::model
