// The CUDA TransformerOps against their CPU twins (compute/transformer_ops.hpp) at
// ViT-S sizes: 257 tokens (a 256x256 image in 16x16 patches plus CLS), 6 heads of
// 64, width 384, MLP 1536. fp32 with TF32 off: relative error below 1e-5.
#include <catch2/catch.hpp>

#include <cmath>   // std::cos, std::sin, std::pow
#include <vector>  // std::vector

#include "gpu_test_util.hpp"
#include "vit_twins.hpp"  // kBatch, kTokens, ..., check_linear_twins

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;


TEST_CASE("cuda transformer matmul and linear match the CPU", "[gpu][transformer]") {
  Twins t;
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  check_linear_twins(t, kTolerance, kTolerance);
  check_shared_linears_twins(t, kTolerance, kTolerance);

  // A strided, transposed, batched product with alpha and beta.
  MatmulShape g;
  g.m = 33, g.n = 17, g.k = 20, g.batch = 4, g.transpose_a = true, g.transpose_b = true;
  g.lda = 40, g.ldb = 25, g.ldc = 19, g.stride_a = 40 * 20, g.stride_b = 25 * 17, g.stride_c = 19 * 33;
  g.alpha = 0.5f, g.beta = 2.f;
  auto a = random_vector(std::size_t(g.stride_a) * g.batch, 5), b = random_vector(std::size_t(g.stride_b) * g.batch, 6);
  auto c = random_vector(std::size_t(g.stride_c) * g.batch, 7);
  auto ga = t.device(a), gb = t.device(b), gc = t.device(c);
  g_ops.matmul(g, ga.data(), gb.data(), gc.data(), t.gs());
  c_ops.matmul(g, a.data(), b.data(), c.data(), t.cs());
  CHECK(rel_error(t.host(gc), c) < kTolerance);
}

TEST_CASE("cuda layer norm, GELU, softmax, bias, layer scale and add match the CPU", "[gpu][transformer]") {
  Twins t;
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  const std::size_t n = std::size_t(kRows) * kWidth;
  auto x = random_vector(n, 8, -3.f, 3.f), gamma = random_vector(kWidth, 9, 0.5f, 1.5f);
  auto beta = random_vector(kWidth, 10), dy = random_vector(n, 11);
  auto gx = t.device(x), gg = t.device(gamma), gb = t.device(beta), gdy = t.device(dy);

  // LayerNorm (eps as HF ViT's layer_norm_eps: 1e-12 for DINO, 1e-6 for DINOv2).
  for (float eps : {1e-12f, 1e-6f}) {
    INFO("eps " << eps);
    auto gy = t.zeros(n), gmean = t.zeros(kRows), grstd = t.zeros(kRows), gdx = t.zeros(n), gdg = t.zeros(kWidth),
         gdb = t.zeros(kWidth);
    std::vector<float> y(n), mean(kRows), rstd(kRows), dx(n), dg(kWidth), db(kWidth);
    g_ops.layer_norm_forward(gx.data(), gg.data(), gb.data(), gy.data(), nullptr, gmean.data(), grstd.data(), kRows,
                             kWidth, eps, t.gs());
    c_ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), nullptr, mean.data(), rstd.data(), kRows,
                             kWidth, eps, t.cs());
    CHECK(rel_error(t.host(gy), y) < kTolerance);
    CHECK(rel_error(t.host(grstd), rstd) < kTolerance);
    g_ops.layer_norm_backward(gx.data(), gg.data(), gmean.data(), grstd.data(), gdy.data(), gdx.data(), gdg.data(),
                              gdb.data(), kRows, kWidth, t.gs());
    c_ops.layer_norm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(), dg.data(),
                              db.data(), kRows, kWidth, t.cs());
    CHECK(rel_error(t.host(gdx), dx) < kTolerance);
    CHECK(rel_error(t.host(gdg), dg) < kTolerance);
    CHECK(rel_error(t.host(gdb), db) < kTolerance);
  }

  {  // GELU
    auto gy = t.zeros(n), gdx = t.zeros(n);
    std::vector<float> y(n), dx(n);
    g_ops.gelu_forward(gx.data(), gy.data(), nullptr, n, t.gs());
    c_ops.gelu_forward(x.data(), y.data(), nullptr, n, t.cs());
    CHECK(rel_error(t.host(gy), y) < kTolerance);
    g_ops.gelu_backward(gx.data(), gdy.data(), gdx.data(), n, t.gs());
    c_ops.gelu_backward(x.data(), dy.data(), dx.data(), n, t.cs());
    CHECK(rel_error(t.host(gdx), dx) < kTolerance);
  }
  {  // softmax over attention rows (257 columns: not a multiple of the warp)
    const int rows = kBatch * kHeads * kTokens / 4, cols = kTokens;
    auto s = random_vector(std::size_t(rows) * cols, 12, -8.f, 8.f), ds = random_vector(s.size(), 13);
    auto gs_ = t.device(s), gds = t.device(ds), gp = t.zeros(s.size());
    std::vector<float> p(s.size());
    g_ops.softmax_forward(gs_.data(), gp.data(), rows, cols, t.gs());
    c_ops.softmax_forward(s.data(), p.data(), rows, cols, t.cs());
    CHECK(rel_error(t.host(gp), p) < kTolerance);
    g_ops.softmax_backward(gp.data(), gds.data(), gds.data(), rows, cols, t.gs());
    c_ops.softmax_backward(p.data(), ds.data(), ds.data(), rows, cols, t.cs());
    CHECK(rel_error(t.host(gds), ds) < kTolerance);
  }
  {  // bias add, column sums, layer scale, add
    auto gy = t.device(x), gsum = t.zeros(kWidth), gs2 = t.zeros(n), gdx = t.zeros(n), gdg = t.zeros(kWidth);
    std::vector<float> y = x, sum(kWidth), s2(n), dx(n), dg(kWidth);
    g_ops.add_bias(gy.data(), gb.data(), kRows, kWidth, t.gs());
    c_ops.add_bias(y.data(), beta.data(), kRows, kWidth, t.cs());
    CHECK(rel_error(t.host(gy), y) < kTolerance);
    // 514 rows: three row chunks (the last partial) added by a second kernel; 100: one.
    for (const int rows : {kRows, 100}) {
      INFO("column sums over " << rows << " rows");
      g_ops.column_sums(gdy.data(), gsum.data(), rows, kWidth, t.gs());
      c_ops.column_sums(dy.data(), sum.data(), rows, kWidth, t.cs());
      CHECK(rel_error(t.host(gsum), sum) < kTolerance);
    }
    g_ops.layer_scale_forward(gx.data(), gg.data(), gs2.data(), kRows, kWidth, t.gs());
    c_ops.layer_scale_forward(x.data(), gamma.data(), s2.data(), kRows, kWidth, t.cs());
    CHECK(rel_error(t.host(gs2), s2) < kTolerance);
    g_ops.layer_scale_backward(gx.data(), gg.data(), gdy.data(), gdx.data(), gdg.data(), kRows, kWidth, t.gs());
    c_ops.layer_scale_backward(x.data(), gamma.data(), dy.data(), dx.data(), dg.data(), kRows, kWidth, t.cs());
    CHECK(rel_error(t.host(gdx), dx) < kTolerance);
    CHECK(rel_error(t.host(gdg), dg) < kTolerance);
    g_ops.add(gx.data(), gdy.data(), gs2.data(), n, t.gs());
    c_ops.add(x.data(), dy.data(), s2.data(), n, t.cs());
    CHECK(rel_error(t.host(gs2), s2) < kTolerance);
  }
}

TEST_CASE("cuda attention forward and backward match the CPU", "[gpu][transformer]") {
  Twins t;
  AttentionShape a;
  a.batch = kBatch, a.tokens = kTokens, a.heads = kHeads, a.head_dim = kHeadDim;
  const std::size_t n = std::size_t(kRows) * kWidth;
  auto q = random_vector(n, 14), k = random_vector(n, 15), v = random_vector(n, 16), dout = random_vector(n, 17);
  auto gq = t.device(q), gk = t.device(k), gv = t.device(v), gdout = t.device(dout);
  auto gp = t.zeros(a.probs_count()), go = t.zeros(n), gdq = t.zeros(n), gdk = t.zeros(n), gdv = t.zeros(n),
       gscratch = t.zeros(a.scratch_count());
  std::vector<float> p(a.probs_count()), o(n), dq(n), dk(n), dv(n), scratch(a.scratch_count());
  t.gpu->transformer_ops().attention_forward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), a, t.gs());
  t.cpu->transformer_ops().attention_forward(q.data(), k.data(), v.data(), p.data(), o.data(), a, t.cs());
  CHECK(rel_error(t.host(gp), p) < kTolerance);
  CHECK(rel_error(t.host(go), o) < kTolerance);
  t.gpu->transformer_ops().attention_backward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), gdout.data(),
                                              gdq.data(), gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  t.cpu->transformer_ops().attention_backward(q.data(), k.data(), v.data(), p.data(), o.data(), dout.data(), dq.data(),
                                              dk.data(), dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdq), dq) < kTolerance);
  CHECK(rel_error(t.host(gdk), dk) < kTolerance);
  CHECK(rel_error(t.host(gdv), dv) < kTolerance);
}

TEST_CASE("cuda rotary embedding forward and backward match the CPU", "[gpu][transformer]") {
  Twins t;
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  RotaryShape r;  // DINOv3 ViT-S at 256x256: CLS + 4 registers + 16 x 16 patches
  r.batch = kBatch, r.tokens = 5 + 256, r.prefix = 5, r.heads = kHeads, r.head_dim = kHeadDim;
  const auto angles = random_vector(r.table_count(), 40, -6.3f, 6.3f);
  std::vector<float> cos(angles.size()), sin(angles.size());
  for (std::size_t i = 0; i < angles.size(); ++i) cos[i] = std::cos(angles[i]), sin[i] = std::sin(angles[i]);
  auto x = random_vector(std::size_t(r.batch) * r.tokens * kWidth, 41);
  auto gx = t.device(x), gcos = t.device(cos), gsin = t.device(sin);
  g_ops.rotary_forward(gx.data(), gcos.data(), gsin.data(), r, t.gs());
  c_ops.rotary_forward(x.data(), cos.data(), sin.data(), r, t.cs());
  CHECK(rel_error(t.host(gx), x) < kTolerance);
  auto dy = random_vector(x.size(), 42);
  auto gdy = t.device(dy);
  g_ops.rotary_backward(gdy.data(), gcos.data(), gsin.data(), r, t.gs());
  c_ops.rotary_backward(dy.data(), cos.data(), sin.data(), r, t.cs());
  CHECK(rel_error(t.host(gdy), dy) < kTolerance);
}

TEST_CASE("cuda rotary tables match the CPU's, the factor read from device memory", "[gpu][transformer][rope]") {
  Twins t;
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  const int h = 16, w = 12, D = kHeadDim;  // a 256 x 192 image in 16 x 16 patches
  const std::size_t count = std::size_t(h) * w * (D / 2);
  std::vector<float> inv_freq(D / 4);
  for (int j = 0; j < D / 4; ++j) inv_freq[std::size_t(j)] = 1.f / std::pow(100.f, 4.f * j / D);
  for (float factor : {1.f, 0.5f, 1.7320508f}) {
    INFO("factor " << factor);
    std::vector<float> f = {factor}, cos(count), sin(count);
    auto gf = t.device(f), ginv = t.device(inv_freq), gcos = t.device(cos), gsin = t.device(sin);
    g_ops.rotary_tables(gf.data(), ginv.data(), gcos.data(), gsin.data(), h, w, D, t.gs());
    c_ops.rotary_tables(f.data(), inv_freq.data(), cos.data(), sin.data(), h, w, D, t.cs());
    // The same float32 angle on both, its cos / sin in double: equal but for a rare
    // last-ulp difference of the device's double cos.
    CHECK(rel_error(t.host(gcos), cos) < 1e-7);
    CHECK(rel_error(t.host(gsin), sin) < 1e-7);
  }
}

TEST_CASE("cuda transpose and patchify match the CPU", "[gpu][transformer]") {
  Twins t;
  const std::size_t n = std::size_t(kRows) * kWidth;
  auto tokens = random_vector(n, 18);
  auto g_tokens = t.device(tokens), g_map = t.zeros(std::size_t(kBatch) * kWidth * (kTokens - 1));
  std::vector<float> map(g_map.size());
  const long long ld = kWidth, stride = static_cast<long long>(kTokens) * kWidth;
  const long long map_stride = static_cast<long long>(kTokens - 1) * kWidth;
  t.gpu->transformer_ops().transpose(g_tokens.data() + kWidth, ld, stride, g_map.data(), map_stride, kBatch,
                                     kTokens - 1, kWidth, t.gs());
  t.cpu->transformer_ops().transpose(tokens.data() + kWidth, ld, stride, map.data(), map_stride, kBatch, kTokens - 1,
                                     kWidth, t.cs());
  CHECK(t.host(g_map) == map);

  const int channels = 3, height = 256, width = 192, patch = 16;
  auto images = random_vector(std::size_t(kBatch) * channels * height * width, 19);
  auto g_images = t.device(images), g_patches = t.zeros(images.size());
  std::vector<float> patches(images.size());
  t.gpu->transformer_ops().patchify(g_images.data(), g_patches.data(), kBatch, channels, height, width, patch, t.gs());
  t.cpu->transformer_ops().patchify(images.data(), patches.data(), kBatch, channels, height, width, patch, t.cs());
  CHECK(t.host(g_patches) == patches);
}

TEST_CASE("cuda window partition and unpartition match the CPU", "[gpu][transformer][sam]") {
  Twins t;
  // SAM at 256x256: a 16x16 grid in windows of 14, padded to 28x28 (4 windows).
  const WindowGrid g{kBatch, 16, 16, 14};
  const int width = 768;
  auto tokens = random_vector(std::size_t(g.token_rows()) * width, 20);
  auto g_tokens = t.device(tokens), g_windows = t.zeros(std::size_t(g.window_rows()) * width);
  std::vector<float> windows(g_windows.size());
  t.gpu->transformer_ops().window_partition(g_tokens.data(), g_windows.data(), nullptr, g, width, t.gs());
  t.cpu->transformer_ops().window_partition(tokens.data(), windows.data(), nullptr, g, width, t.cs());
  CHECK(t.host(g_windows) == windows);
  // Padding rows filled with a row (the qkv biases), not zeros.
  auto fill = random_vector(std::size_t(width), 21);
  auto g_fill = t.device(fill);
  t.gpu->transformer_ops().window_partition(g_tokens.data(), g_windows.data(), g_fill.data(), g, width, t.gs());
  t.cpu->transformer_ops().window_partition(tokens.data(), windows.data(), fill.data(), g, width, t.cs());
  CHECK(t.host(g_windows) == windows);
  auto g_back = t.zeros(tokens.size());
  std::vector<float> back(tokens.size());
  t.gpu->transformer_ops().window_unpartition(g_windows.data(), g_back.data(), g, width, t.gs());
  t.cpu->transformer_ops().window_unpartition(windows.data(), back.data(), g, width, t.cs());
  CHECK(t.host(g_back) == back);
  CHECK(back == tokens);
}

TEST_CASE("cuda Hiera patch rows, max pool and pooled-query attention match the CPU", "[gpu][transformer][sam2]") {
  Twins t;
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  // vitt_sam2 at 256x256: the 7x7 stride-4 patch rows of a 64x64 grid...
  const ConvPatchGrid pg{kBatch, 3, 256, 256, 7, 4, 3};
  auto images = random_vector(std::size_t(kBatch) * 3 * 256 * 256, 30);
  auto g_images = t.device(images), g_rows = t.zeros(std::size_t(pg.rows()) * pg.row_width());
  std::vector<float> rows(g_rows.size());
  g_ops.conv_patches(g_images.data(), g_rows.data(), pg, t.gs());
  c_ops.conv_patches(images.data(), rows.data(), pg, t.cs());
  CHECK(t.host(g_rows) == rows);
  // ... block 1's pooling of the 64x64 grid at width 192 (ties included: a constant patch) ...
  const TokenPoolGrid g{kBatch, 64, 64};
  const int width = 192;
  auto x = random_vector(std::size_t(g.in_rows()) * width, 31);
  for (int c = 0; c < width; ++c) x[std::size_t(c)] = x[std::size_t(width + c)] = 0.5f;  // taps 0 and 1 of output 0
  auto dy = random_vector(std::size_t(g.out_rows()) * width, 32);
  auto gx = t.device(x), gdy = t.device(dy), gy = t.zeros(std::size_t(g.out_rows()) * width), gdx = t.zeros(x.size());
  std::vector<float> y(gy.size()), dx(x.size());
  g_ops.max_pool_forward(gx.data(), gy.data(), g, width, t.gs());
  c_ops.max_pool_forward(x.data(), y.data(), g, width, t.cs());
  CHECK(t.host(gy) == y);
  g_ops.max_pool_backward(gx.data(), gdy.data(), gdx.data(), g, width, t.gs());
  c_ops.max_pool_backward(x.data(), dy.data(), dx.data(), g, width, t.cs());
  CHECK(t.host(gdx) == dx);
  // ... and its attention: 16 queries (a pooled 4x4) over 64 keys (an 8x8 window), 2 heads
  // of 96 (block 1); 49 (a pooled 7x7) over 196 (a padded 14x14 window), 8 heads (block 10).
  const bool last_stage = GENERATE(false, true);
  AttentionShape a;
  a.batch = kBatch * (last_stage ? 4 : 64), a.tokens = last_stage ? 196 : 64, a.query_tokens = last_stage ? 49 : 16;
  a.heads = last_stage ? 8 : 2, a.head_dim = 96;
  const std::size_t nq = std::size_t(a.batch) * a.queries() * a.width(), n = std::size_t(a.batch) * a.tokens * a.width();
  auto q = random_vector(nq, 33), k = random_vector(n, 34), v = random_vector(n, 35), dout = random_vector(nq, 36);
  auto gq = t.device(q), gk = t.device(k), gv = t.device(v), gdout = t.device(dout);
  auto gp = t.zeros(g_ops.attention_state_count(a)), go = t.zeros(nq), gdq = t.zeros(nq), gdk = t.zeros(n),
       gdv = t.zeros(n), gscratch = t.zeros(a.scratch_count());
  std::vector<float> p(a.probs_count()), o(nq), dq(nq), dk(n), dv(n), scratch(a.scratch_count());
  g_ops.attention_forward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), a, t.gs());
  c_ops.attention_forward(q.data(), k.data(), v.data(), p.data(), o.data(), a, t.cs());
  CHECK(rel_error(t.host(go), o) < kTolerance);
  g_ops.attention_backward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), gdout.data(), gdq.data(), gdk.data(),
                           gdv.data(), gscratch.data(), a, t.gs());
  c_ops.attention_backward(q.data(), k.data(), v.data(), p.data(), o.data(), dout.data(), dq.data(), dk.data(),
                           dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdq), dq) < kTolerance);
  CHECK(rel_error(t.host(gdk), dk) < kTolerance);
  CHECK(rel_error(t.host(gdv), dv) < kTolerance);
}
