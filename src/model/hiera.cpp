// SAM2's Hiera backbone (see hiera.hpp). Shapes: B images; a block's input grid
// H x W (R_in = B * H * W token rows, width dim) and output grid H' x W' (halved when
// it pools; R_out rows, width dim_out); M its MLP width. Every activation is
// [rows, width] in raster order, as Hugging Face's [B, H, W, C] tensors are laid out.
#include "model/hiera.hpp"

#include <algorithm>  // std::max, std::find
#include <utility>    // std::swap

#include "model/bicubic_resize.hpp"     // bicubic_resize_matrix_2d
#include "model/hugging_face_init.hpp"  // hugging_face_normal, ones_init
#include "util/error.hpp"               // UserError, SystemError

namespace trainer::model {

using compute::DeviceBuffer;
using compute::ensure_capacity;
using compute::MatmulShape;
using compute::SharedInputLinear;

HieraSpec hiera_spec(const std::string& name) {
  HieraSpec s;
  s.name = name;
  if (name == "vitt_sam2") {
    s.model_id = "facebook/sam2.1-hiera-tiny";  // Sam2HieraDetConfig's defaults
  } else if (name == "vits_sam2") {
    s.model_id = "facebook/sam2.1-hiera-small";
    s.blocks = {1, 2, 11, 2}, s.global_blocks = {7, 10, 13};
  } else if (name == "vitb_sam2") {
    s.model_id = "facebook/sam2.1-hiera-base-plus";
    s.dims = {112, 224, 448, 896}, s.heads = {2, 4, 8, 16}, s.blocks = {2, 3, 16, 3};
    s.global_blocks = {12, 16, 20}, s.background = 14;
  } else {
    throw UserError("unknown backbone '" + name + "'", "the SAM2 backbones are vitt_sam2, vits_sam2 and vitb_sam2");
  }
  return s;
}

Hiera::Linear Hiera::add_linear(ParameterStore& store, const std::string& name, int in, int out) {
  Linear l;
  l.in = in, l.out = out;
  l.weight = store.add_parameter(name + ".weight", {out, in}, ParamGroup::backbone, hugging_face_normal());
  l.bias = store.add_parameter(name + ".bias", {out}, ParamGroup::backbone, InitRule{});
  return l;
}

Hiera::LayerNorm Hiera::add_layer_norm(ParameterStore& store, const std::string& name, int width) {
  LayerNorm n;
  n.weight = store.add_parameter(name + ".weight", {width}, ParamGroup::backbone, ones_init());
  n.bias = store.add_parameter(name + ".bias", {width}, ParamGroup::backbone, InitRule{});
  return n;
}

Hiera::Hiera(ParameterStore& store, const HieraSpec& spec, const std::string& prefix) : spec_(spec), store_(&store) {
  const std::string root = prefix + "vision_encoder.";
  const int C0 = spec.dims[0], bg = spec.background, w0 = spec.windows[0], k = spec.patch_kernel;
  // Sam2HieraDetModel's state_dict: its own parameters, then patch_embed, then blocks.
  // Both tables start at zero, as _init_weights leaves them.
  pos_embed_ = store.add_parameter(root + "pos_embed", {1, C0, bg, bg}, ParamGroup::backbone, InitRule{});
  pos_embed_window_ = store.add_parameter(root + "pos_embed_window", {1, C0, w0, w0}, ParamGroup::backbone, InitRule{});
  patch_embedding_.in = 3 * k * k, patch_embedding_.out = C0;
  patch_embedding_.weight = store.add_parameter(root + "patch_embed.projection.weight", {C0, 3, k, k},
                                                ParamGroup::backbone, hugging_face_normal());
  patch_embedding_.bias =
      store.add_parameter(root + "patch_embed.projection.bias", {C0}, ParamGroup::backbone, InitRule{});
  int index = 0;
  for (std::size_t stage = 0; stage < spec.dims.size(); ++stage) {
    for (int j = 0; j < spec.blocks[stage]; ++j, ++index) {
      // Sam2MultiScaleBlock: a stage's first block takes the previous stage's width and
      // window; stages 1..pool_stages start with a query stride of 2.
      Block b;
      const bool first = stage > 0 && j == 0;
      b.dim = first ? spec.dims[stage - 1] : spec.dims[stage];
      b.dim_out = spec.dims[stage];
      b.heads = spec.heads[stage];
      b.window = first ? spec.windows[stage - 1] : spec.windows[stage];
      if (std::find(spec.global_blocks.begin(), spec.global_blocks.end(), index) != spec.global_blocks.end())
        b.window = 0;
      b.pool = first && int(stage) <= spec.pool_stages;
      b.has_proj = b.dim != b.dim_out;
      if (b.pool != b.has_proj || b.dim_out % b.heads != 0 || (b.pool && b.window % 2 != 0))
        throw SystemError("internal error: " + spec.name + " block " + std::to_string(index) +
                          " pools without changing width, or the other way round");
      const std::string block = root + "blocks." + std::to_string(index) + ".";
      const int mlp = int(float(b.dim_out) * spec.mlp_ratio);
      b.norm1 = add_layer_norm(store, block + "layer_norm1", b.dim);
      const Linear qkv = add_linear(store, block + "attn.qkv", b.dim, 3 * b.dim_out);
      for (Linear* part : {&b.query, &b.key, &b.value}) {
        *part = qkv;
        part->out = b.dim_out;
      }
      b.key.first_row = b.dim_out, b.value.first_row = 2 * b.dim_out;
      b.attn_proj = add_linear(store, block + "attn.proj", b.dim_out, b.dim_out);
      b.norm2 = add_layer_norm(store, block + "layer_norm2", b.dim_out);
      b.fc1 = add_linear(store, block + "mlp.proj_in", b.dim_out, mlp);
      b.fc2 = add_linear(store, block + "mlp.proj_out", mlp, b.dim_out);
      if (b.has_proj) b.proj = add_linear(store, block + "proj", b.dim, b.dim_out);
      blocks_.push_back(std::move(b));
    }
  }
  hidden_.resize(blocks_.size() + 1);
}

const float* Hiera::weight(const Linear& l) const { return store_->param(l.weight) + std::size_t(l.first_row) * l.in; }
const float* Hiera::bias(const Linear& l) const { return store_->param(l.bias) + l.first_row; }
float* Hiera::weight_grad(const Linear& l) const { return store_->grad(l.weight) + std::size_t(l.first_row) * l.in; }
float* Hiera::bias_grad(const Linear& l) const { return store_->grad(l.bias) + l.first_row; }

SharedInputLinear Hiera::shared_input(const Linear& l, float* y, const float* dy) const {
  SharedInputLinear s;
  s.out = l.out;
  s.w = weight(l);
  s.bias = bias(l);
  s.y = y;
  s.dy = dy;
  s.dw = weight_grad(l);
  s.dbias = bias_grad(l);
  return s;
}

std::uint16_t* Hiera::copy16(DeviceBuffer& buffer) const {
  return copies_ ? reinterpret_cast<std::uint16_t*>(buffer.data()) : nullptr;
}

compute::WindowGrid Hiera::input_windows(const Block& b) const { return {batch_, b.in_h, b.in_w, b.window}; }

compute::WindowGrid Hiera::output_windows(const Block& b) const {
  return {batch_, b.out_h, b.out_w, b.pool ? b.window / 2 : b.window};
}

compute::TokenPoolGrid Hiera::pool_grid(const Block& b) const { return {batch_, b.in_h, b.in_w}; }

compute::AttentionShape Hiera::attention_shape(const Block& b) const {
  compute::AttentionShape a;
  a.heads = b.heads, a.head_dim = b.dim_out / b.heads;
  if (b.window > 0) {
    const compute::WindowGrid g = input_windows(b);
    const int out_window = output_windows(b).window;
    a.batch = batch_ * g.windows_h() * g.windows_w();
    a.tokens = b.window * b.window;
    if (b.pool) a.query_tokens = out_window * out_window;
  } else {
    a.batch = batch_;
    a.tokens = b.in_h * b.in_w;
    if (b.pool) a.query_tokens = b.out_h * b.out_w;
  }
  return a;
}

std::size_t Hiera::query_rows(const Block& b) const {
  return b.window > 0 ? std::size_t(output_windows(b).window_rows()) : out_rows(b);
}

std::size_t Hiera::key_rows(const Block& b) const {
  return b.window > 0 ? std::size_t(input_windows(b).window_rows()) : in_rows(b);
}

void Hiera::set_geometry(int grid_h, int grid_w) {
  int h = grid_h, w = grid_w;
  for (Block& b : blocks_) {
    b.in_h = h, b.in_w = w;
    if (b.pool) {
      // Pooling inside windows equals pooling the padded grid only for even grids,
      // which images in multiples of the stride guarantee.
      if (h % 2 != 0 || w % 2 != 0)
        throw SystemError("internal error: " + spec_.name + " pools an odd grid " + std::to_string(h) + "x" +
                          std::to_string(w));
      h /= 2, w /= 2;
    }
    b.out_h = h, b.out_w = w;
  }
}

void Hiera::ensure_buffers(compute::Backend& backend) {
  auto& ops = backend.transformer_ops();
  const std::size_t cells = std::size_t(grid_h_) * grid_w_, C0 = std::size_t(spec_.dims[0]);
  ensure_capacity(backend, patches_, std::size_t(batch_) * cells * patch_embedding_.in);
  ensure_capacity(backend, positions_, cells * C0);
  ensure_capacity(backend, hidden_[0], std::size_t(batch_) * cells * C0);
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = blocks_[i];
    const std::size_t Ri = in_rows(b), Ro = out_rows(b), D = std::size_t(b.dim), Do = std::size_t(b.dim_out);
    const std::size_t M = std::size_t(b.fc1.out);
    const bool windowed = b.window > 0;
    ensure_capacity(backend, b.ln1, Ri * D);
    ensure_capacity(backend, b.mean1, Ri);
    ensure_capacity(backend, b.rstd1, Ri);
    if (b.pool) ensure_capacity(backend, b.q_tokens, Ri * Do);
    if (windowed) {
      for (DeviceBuffer& t : projected_) ensure_capacity(backend, t, Ri * Do);
      ensure_capacity(backend, b.context_tokens, Ro * Do);
      if (b.pool) ensure_capacity(backend, b.q_pooled, Ro * Do);
    }
    ensure_capacity(backend, b.q, query_rows(b) * Do);
    ensure_capacity(backend, b.context, query_rows(b) * Do);
    ensure_capacity(backend, b.k, key_rows(b) * Do);
    ensure_capacity(backend, b.v, key_rows(b) * Do);
    ensure_capacity(backend, b.probs, ops.attention_state_count(attention_shape(b)));
    if (b.has_proj) {
      ensure_capacity(backend, b.proj_out, Ri * Do);
      if (b.pool) ensure_capacity(backend, b.residual, Ro * Do);
    }
    for (DeviceBuffer* t : {&b.mid, &b.ln2}) ensure_capacity(backend, *t, Ro * Do);
    ensure_capacity(backend, b.mean2, Ro);
    ensure_capacity(backend, b.rstd2, Ro);
    ensure_capacity(backend, b.fc1_out, Ro * M);
    ensure_capacity(backend, b.gelu_out, Ro * M);
    ensure_capacity(backend, hidden_[i + 1], Ro * Do);
    if (copies_) {  // 16-bit values, two to a float
      ensure_capacity(backend, b.ln1_16, (Ri * D + 1) / 2);
      ensure_capacity(backend, b.ln2_16, (Ro * Do + 1) / 2);
      ensure_capacity(backend, b.gelu_16, (Ro * M + 1) / 2);
    }
  }
  const Block& last = blocks_.back();
  ensure_capacity(backend, features_, out_rows(last) * std::size_t(last.dim_out));
}

compute::TensorView Hiera::forward(const Context& ctx, compute::ConstTensorView x) {
  const int S = spec_.stride();
  check_network_input(x, S, spec_.name + "'s stride");
  if (x.storage != compute::Storage::f32_nchw)
    throw SystemError("internal error: " + spec_.name + " takes fp32 NCHW images");
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  batch_ = x.shape.n, grid_h_ = x.shape.h / spec_.patch_stride, grid_w_ = x.shape.w / spec_.patch_stride;
  set_geometry(grid_h_, grid_w_);
  copies_ = ops.activation_copies();
  ensure_buffers(ctx.backend);
  position_rows(ctx);

  // Tokens: every image's rows start as the positions; the patch embedding (a Linear
  // over the zero-padded 7x7 patches) adds into them.
  const int cells = grid_h_ * grid_w_, C0 = spec_.dims[0], K = patch_embedding_.in;
  float* tokens = hidden_[0].data();
  for (int b = 0; b < batch_; ++b)
    ctx.backend.copy(tokens + std::size_t(b) * cells * C0, positions_.data(), std::size_t(cells) * C0, s);
  const compute::ConvPatchGrid patches{batch_, 3, x.shape.h, x.shape.w, spec_.patch_kernel, spec_.patch_stride,
                                       spec_.patch_pad};
  ops.conv_patches(x.data, patches_.data(), patches, s);
  MatmulShape embed;
  embed.m = batch_ * cells, embed.n = C0, embed.k = K;
  embed.transpose_b = true;
  embed.lda = K, embed.ldb = K, embed.ldc = C0;
  embed.beta = 1.f;
  embed.autocast = true;  // a Conv2d: 16-bit under torch.autocast
  ops.matmul(embed, patches_.data(), store_->param(patch_embedding_.weight), tokens, s);

  for (std::size_t l = 0; l < blocks_.size(); ++l)
    block_forward(ctx, blocks_[l], hidden_[l].data(), hidden_[l + 1].data());
  // The last stage's tokens [h * w, C] become the map [C, h, w].
  const Block& last = blocks_.back();
  const int N = last.out_h * last.out_w, C = last.dim_out;
  ops.transpose(hidden_.back().data(), C, static_cast<long long>(N) * C, features_.data(),
                static_cast<long long>(C) * N, batch_, N, C, s);
  return {features_.data(), {batch_, C, last.out_h, last.out_w}};
}

void Hiera::position_rows(const Context& ctx) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int C0 = spec_.dims[0], bg = spec_.background, w0 = spec_.windows[0];
  const int cells = grid_h_ * grid_w_;
  // _get_pos_embed: pos_embed bicubic-resized to the grid on every forward, plus
  // pos_embed_window tiled over it. Both are linear in the tables: fixed matrices for
  // this grid, applied to the parameters (and transposed in the backward).
  if (resized_h_ != grid_h_ || resized_w_ != grid_w_) {
    resize_host_ = bicubic_resize_matrix_2d(bg, bg, grid_h_, grid_w_);
    tile_host_.assign(std::size_t(cells) * w0 * w0, 0.f);
    for (int y = 0; y < grid_h_; ++y)
      for (int x = 0; x < grid_w_; ++x)
        tile_host_[(std::size_t(y) * grid_w_ + x) * w0 * w0 + std::size_t(y % w0) * w0 + x % w0] = 1.f;
    ensure_capacity(ctx.backend, resize_, resize_host_.size());
    ensure_capacity(ctx.backend, tile_, tile_host_.size());
    ctx.backend.upload(resize_.data(), resize_host_.data(), resize_host_.size(), s);
    ctx.backend.upload(tile_.data(), tile_host_.data(), tile_host_.size(), s);
    resized_h_ = grid_h_, resized_w_ = grid_w_;
  }
  // positions [cells, C0] = resize [cells, bg^2] * pos_embed^T (pos_embed is [C0, bg^2])
  //                       + tile [cells, w0^2] * pos_embed_window^T; fp32, as autocast leaves them.
  MatmulShape table;
  table.m = cells, table.n = C0;
  table.transpose_b = true;
  table.ldc = C0;
  table.k = bg * bg, table.lda = table.ldb = bg * bg;
  ops.matmul(table, resize_.data(), store_->param(pos_embed_), positions_.data(), s);
  table.k = w0 * w0, table.lda = table.ldb = w0 * w0;
  table.beta = 1.f;
  ops.matmul(table, tile_.data(), store_->param(pos_embed_window_), positions_.data(), s);
  ops.add_bias(positions_.data(), store_->param(patch_embedding_.bias), cells, C0, s);
}

void Hiera::block_forward(const Context& ctx, Block& b, const float* x, float* out) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int Ri = int(in_rows(b)), Ro = int(out_rows(b)), D = b.dim, Do = b.dim_out;
  const int M = b.fc1.out;
  const bool windowed = b.window > 0;
  ops.layer_norm_forward(x, store_->param(b.norm1.weight), store_->param(b.norm1.bias), b.ln1.data(),
                         copy16(b.ln1_16), b.mean1.data(), b.rstd1.data(), Ri, D, spec_.layer_norm_eps, s);
  // q, k, v (and the residual's proj) of LN(x), per token. Windowed blocks cut them
  // into windows afterwards with the qkv biases as the padding's rows: Hugging Face
  // pads LN(x) with zero tokens before the qkv Linear, whose output there is the bias.
  float* q_out = b.pool ? b.q_tokens.data() : windowed ? projected_[0].data() : b.q.data();
  float* k_out = windowed ? projected_[1].data() : b.k.data();
  float* v_out = windowed ? projected_[2].data() : b.v.data();
  SharedInputLinear layers[4] = {shared_input(b.query, q_out, nullptr), shared_input(b.key, k_out, nullptr),
                                 shared_input(b.value, v_out, nullptr)};
  int count = 3;
  if (b.has_proj) layers[count++] = shared_input(b.proj, b.proj_out.data(), nullptr);
  ops.linears_forward(b.ln1.data(), copy16(b.ln1_16), layers, count, Ri, D, s);
  const float* residual = x;
  if (b.has_proj) {
    residual = b.proj_out.data();
    if (b.pool) {
      ops.max_pool_forward(b.proj_out.data(), b.residual.data(), pool_grid(b), Do, s);
      residual = b.residual.data();
    }
  }
  // Query pooling: max over each 2x2 of the grid, which is each 2x2 inside a window
  // (windows start at multiples of an even size).
  const float* q_grid = q_out;  // q on the output grid, token order
  if (b.pool) {
    float* pooled = windowed ? b.q_pooled.data() : b.q.data();
    ops.max_pool_forward(b.q_tokens.data(), pooled, pool_grid(b), Do, s);
    q_grid = pooled;
  }
  if (windowed) {
    ops.window_partition(q_grid, b.q.data(), layers[0].bias, output_windows(b), Do, s);
    ops.window_partition(k_out, b.k.data(), layers[1].bias, input_windows(b), Do, s);
    ops.window_partition(v_out, b.v.data(), layers[2].bias, input_windows(b), Do, s);
  }
  const compute::AttentionShape a = attention_shape(b);
  ops.attention_forward(b.q.data(), b.k.data(), b.v.data(), b.probs.data(), b.context.data(), a, s);
  // A fused attention's own 16-bit output, where it kept one (in token order only).
  const std::uint16_t* context16 = copies_ && !windowed ? ops.attention_output16(b.probs.data(), a) : nullptr;
  const float* context = b.context.data();
  if (windowed) {  // the padding's outputs are cropped
    ops.window_unpartition(b.context.data(), b.context_tokens.data(), output_windows(b), Do, s);
    context = b.context_tokens.data();
  }
  ops.linear_forward(context, context16, weight(b.attn_proj), bias(b.attn_proj), b.mid.data(), Ro, Do, Do, s);
  ops.add(b.mid.data(), residual, b.mid.data(), std::size_t(Ro) * Do, s);
  ops.layer_norm_forward(b.mid.data(), store_->param(b.norm2.weight), store_->param(b.norm2.bias), b.ln2.data(),
                         copy16(b.ln2_16), b.mean2.data(), b.rstd2.data(), Ro, Do, spec_.layer_norm_eps, s);
  ops.linear_forward(b.ln2.data(), copy16(b.ln2_16), weight(b.fc1), bias(b.fc1), b.fc1_out.data(), Ro, Do, M, s);
  ops.gelu_forward(b.fc1_out.data(), b.gelu_out.data(), copy16(b.gelu_16), std::size_t(Ro) * M, s);
  ops.linear_forward(b.gelu_out.data(), copy16(b.gelu_16), weight(b.fc2), bias(b.fc2), out, Ro, M, Do, s);
  ops.add(out, b.mid.data(), out, std::size_t(Ro) * Do, s);
}

void Hiera::backward(const Context& ctx, compute::TensorView dy) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const Block& last = blocks_.back();
  const int N = last.out_h * last.out_w, C = last.dim_out;
  if (dy.shape != compute::Shape4{batch_, C, last.out_h, last.out_w})
    throw SystemError("internal error: " + spec_.name + " backward of " + dy.shape.str() + " after a forward of " +
                      compute::Shape4{batch_, C, last.out_h, last.out_w}.str());
  // Scratch for the widest block of each kind.
  std::size_t hidden = std::size_t(batch_) * grid_h_ * grid_w_ * spec_.dims[0], wide = 0, out_width = 0;
  std::size_t queries = 0, keys = 0, in_width = 0, ln1 = 0;
  std::size_t scratch = std::size_t(grid_h_) * grid_w_ * spec_.dims[0];  // the embeddings' positions
  for (const Block& b : blocks_) {
    const std::size_t Ri = in_rows(b), Ro = out_rows(b), Do = std::size_t(b.dim_out);
    hidden = std::max(hidden, Ro * Do);
    out_width = std::max(out_width, Ro * Do);
    wide = std::max(wide, Ro * std::size_t(b.fc1.out));
    queries = std::max(queries, query_rows(b) * Do);
    keys = std::max(keys, key_rows(b) * Do);
    in_width = std::max(in_width, Ri * Do);
    ln1 = std::max(ln1, Ri * std::size_t(b.dim));
    scratch = std::max(scratch, attention_shape(b).scratch_count());
  }
  for (DeviceBuffer* t : {&d_hidden_a_, &d_hidden_b_}) ensure_capacity(ctx.backend, *t, std::max(hidden, ln1));
  for (DeviceBuffer* t : {&d_mid_, &d_tmp_, &d_q_pooled_}) ensure_capacity(ctx.backend, *t, out_width);
  for (DeviceBuffer* t : {&d_q_, &d_windows_}) ensure_capacity(ctx.backend, *t, queries);
  for (DeviceBuffer* t : {&d_k_, &d_v_}) ensure_capacity(ctx.backend, *t, keys);
  for (DeviceBuffer* t : {&d_q_tokens_, &d_k_tokens_, &d_v_tokens_, &d_proj_})
    ensure_capacity(ctx.backend, *t, in_width);
  ensure_capacity(ctx.backend, d_wide_, wide);
  ensure_capacity(ctx.backend, d_ln1_, ln1);
  ensure_capacity(ctx.backend, d_scratch_, scratch);

  DeviceBuffer* d_out = &d_hidden_b_;
  DeviceBuffer* d_in = &d_hidden_a_;
  ops.transpose(dy.data, N, static_cast<long long>(C) * N, d_out->data(), static_cast<long long>(N) * C, batch_, C,
                N, s);
  for (std::size_t l = blocks_.size(); l-- > 0;) {
    block_backward(ctx, blocks_[l], hidden_[l].data(), d_out->data(), d_in->data());
    std::swap(d_out, d_in);
  }
  embedding_backward(ctx, d_out->data());
}

void Hiera::block_backward(const Context& ctx, Block& b, const float* x, const float* dout, float* dx) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int Ri = int(in_rows(b)), Ro = int(out_rows(b)), D = b.dim, Do = b.dim_out, M = b.fc1.out;
  const bool windowed = b.window > 0;
  // MLP branch: out = mid + proj_out(GELU(proj_in(LN(mid)))).
  ops.linear_backward(b.gelu_out.data(), copy16(b.gelu_16), weight(b.fc2), dout, d_wide_.data(), weight_grad(b.fc2),
                      bias_grad(b.fc2), Ro, M, Do, s);
  ops.gelu_backward(b.fc1_out.data(), d_wide_.data(), d_wide_.data(), std::size_t(Ro) * M, s);
  ops.linear_backward(b.ln2.data(), copy16(b.ln2_16), weight(b.fc1), d_wide_.data(), d_tmp_.data(), weight_grad(b.fc1),
                      bias_grad(b.fc1), Ro, Do, M, s);
  ops.layer_norm_backward(b.mid.data(), store_->param(b.norm2.weight), b.mean2.data(), b.rstd2.data(), d_tmp_.data(),
                          d_mid_.data(), store_->grad(b.norm2.weight), store_->grad(b.norm2.bias), Ro, Do, s);
  ops.add(d_mid_.data(), dout, d_mid_.data(), std::size_t(Ro) * Do, s);
  // Attention branch: mid = residual + proj(attention(q, k, v of LN(x))).
  const float* context = windowed ? b.context_tokens.data() : b.context.data();
  const std::uint16_t* context16 =
      copies_ && !windowed ? ops.attention_output16(b.probs.data(), attention_shape(b)) : nullptr;
  ops.linear_backward(context, context16, weight(b.attn_proj), d_mid_.data(), d_tmp_.data(), weight_grad(b.attn_proj),
                      bias_grad(b.attn_proj), Ro, Do, Do, s);
  const float* d_context = d_tmp_.data();
  if (windowed) {  // the cropped padding's outputs have no gradient
    ops.window_partition(d_tmp_.data(), d_windows_.data(), nullptr, output_windows(b), Do, s);
    d_context = d_windows_.data();
  }
  ops.attention_backward(b.q.data(), b.k.data(), b.v.data(), b.probs.data(), b.context.data(), d_context,
                         d_q_.data(), d_k_.data(), d_v_.data(), d_scratch_.data(), attention_shape(b), s);
  // Back to the projections' outputs in token order. Windowed: their biases see every
  // row of the windows, the padding's included (there q, k, v are the biases).
  SharedInputLinear layers[4] = {shared_input(b.query, nullptr, d_q_.data()),
                                 shared_input(b.key, nullptr, d_k_.data()),
                                 shared_input(b.value, nullptr, d_v_.data())};
  const float* d_q_grid = d_q_.data();  // the gradient of q on the output grid, token order
  if (windowed) {
    ops.column_sums(d_q_.data(), layers[0].dbias, int(query_rows(b)), Do, s);
    ops.column_sums(d_k_.data(), layers[1].dbias, int(key_rows(b)), Do, s);
    ops.column_sums(d_v_.data(), layers[2].dbias, int(key_rows(b)), Do, s);
    for (SharedInputLinear& l : layers) l.dbias = nullptr;
    float* q_grid = b.pool ? d_q_pooled_.data() : d_q_tokens_.data();
    ops.window_unpartition(d_q_.data(), q_grid, output_windows(b), Do, s);
    ops.window_unpartition(d_k_.data(), d_k_tokens_.data(), input_windows(b), Do, s);
    ops.window_unpartition(d_v_.data(), d_v_tokens_.data(), input_windows(b), Do, s);
    d_q_grid = q_grid;
    layers[1].dy = d_k_tokens_.data();
    layers[2].dy = d_v_tokens_.data();
  }
  layers[0].dy = d_q_grid;
  if (b.pool) {  // to the taps that held the maxima
    ops.max_pool_backward(b.q_tokens.data(), d_q_grid, d_q_tokens_.data(), pool_grid(b), Do, s);
    layers[0].dy = d_q_tokens_.data();
  }
  int count = 3;
  if (b.has_proj) {
    layers[count] = shared_input(b.proj, nullptr, d_mid_.data());
    if (b.pool) {
      ops.max_pool_backward(b.proj_out.data(), d_mid_.data(), d_proj_.data(), pool_grid(b), Do, s);
      layers[count].dy = d_proj_.data();
    }
    ++count;
  }
  ops.linears_backward(b.ln1.data(), copy16(b.ln1_16), layers, count, d_ln1_.data(), Ri, D, s);
  ops.layer_norm_backward(x, store_->param(b.norm1.weight), b.mean1.data(), b.rstd1.data(), d_ln1_.data(), dx,
                          store_->grad(b.norm1.weight), store_->grad(b.norm1.bias), Ri, D, s);
  if (!b.has_proj) ops.add(dx, d_mid_.data(), dx, std::size_t(Ri) * D, s);  // the residual is x itself
  std::vector<std::size_t> done = {b.norm1.weight, b.norm1.bias, b.norm2.weight, b.norm2.bias};
  for (const Linear* l : {&b.query, &b.attn_proj, &b.fc1, &b.fc2}) done.insert(done.end(), {l->weight, l->bias});
  if (b.has_proj) done.insert(done.end(), {b.proj.weight, b.proj.bias});
  announce_gradients(ctx, *store_, std::move(done));
}

void Hiera::embedding_backward(const Context& ctx, const float* d_tokens) {
  auto& ops = ctx.backend.transformer_ops();
  auto& s = ctx.stream;
  const int cells = grid_h_ * grid_w_, C0 = spec_.dims[0], K = patch_embedding_.in;
  const int bg2 = spec_.background * spec_.background, w02 = spec_.windows[0] * spec_.windows[0];
  // Every image's rows started as the positions: their gradient is the sum over images.
  float* d_positions = d_scratch_.data();
  ops.column_sums(d_tokens, d_positions, batch_, cells * C0, s);
  ops.column_sums(d_positions, store_->grad(patch_embedding_.bias), cells, C0, s);
  // d table [C0, cells'] = d_positions^T [C0, cells] * the table's matrix [cells, cells'].
  MatmulShape table;
  table.m = C0, table.k = cells;
  table.transpose_a = true;
  table.lda = C0;
  table.n = bg2, table.ldb = table.ldc = bg2;
  ops.matmul(table, d_positions, resize_.data(), store_->grad(pos_embed_), s);
  table.n = w02, table.ldb = table.ldc = w02;
  ops.matmul(table, d_positions, tile_.data(), store_->grad(pos_embed_window_), s);
  MatmulShape d_weight;  // d_tokens^T [C0, rows] * patches [rows, K]
  d_weight.m = C0, d_weight.n = K, d_weight.k = batch_ * cells;
  d_weight.transpose_a = true;
  d_weight.lda = C0, d_weight.ldb = K, d_weight.ldc = K;
  d_weight.autocast = true;  // as its forward
  ops.matmul(d_weight, d_tokens, patches_.data(), store_->grad(patch_embedding_.weight), s);
  announce_gradients(ctx, *store_,
                     {pos_embed_, pos_embed_window_, patch_embedding_.weight, patch_embedding_.bias});
}

std::unique_ptr<Backbone> make_hiera(ParameterStore& store, const std::string& name, const std::string& prefix,
                                     ImageSize /*any size a multiple of the stride*/) {
  return std::make_unique<Hiera>(store, hiera_spec(name), prefix);
}

}  // namespace trainer::model
