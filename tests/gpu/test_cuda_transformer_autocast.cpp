// The ViT ops' mixed precision on the GPU (cuBLAS with CUDA_R_16BF / CUDA_R_16F
// operands, fp32 accumulation and result; attention's 16-bit path,
// cuda_transformer_attention16.cpp) against the CPU backend's emulation (operands
// rounded to the same 16-bit values, fp32 sgemm), at ViT-S sizes: 257 tokens, 6
// heads of 64, width 384, MLP 1536.
//
// Tolerances: a product of two 16-bit values is exact in fp32, so an autocast
// product differs from its twin only by the fp32 summation order (1e-4 relative).
// Attention rounds its fp32 probabilities (and the scores' gradient) to 16 bits
// before the next product: a value that the two softmax kernels put on opposite
// sides of a rounding boundary moves one 16-bit step, hence 1e-2 (bf16) / 2e-3
// (fp16) for what those products feed. A whole ViT step also goes through the
// head's 16-bit convolutions, whose results round to 16 bits (their own twin test:
// test_cuda_mixed_precision.cpp).
#include <catch2/catch.hpp>

#include <string>  // std::string
#include <vector>  // std::vector

#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {
constexpr int kBatch = 2, kTokens = 257, kHeads = 6, kHeadDim = 64, kWidth = kHeads * kHeadDim;
constexpr int kRows = kBatch * kTokens;
constexpr double kProductTolerance = 1e-4;
double rounded_tolerance(Precision p) { return p == Precision::bf16 ? 1e-2 : 2e-3; }

struct MixedTwins : Twins {
  explicit MixedTwins(Precision p) {
    cpu = make_cpu_backend(2, p);
    gpu = make_cuda_backend(0, p);
  }
};
}  // namespace

TEST_CASE("cuda transformer 16-bit linear and matmul match the CPU emulation", "[gpu][transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(precision_name(p));
  MixedTwins t(p);
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  REQUIRE(g_ops.autocast_precision() == p);
  const int in = kWidth, out = 4 * kWidth;  // fc1's shape; fc2's backward reads its transpose
  auto x = random_vector(std::size_t(kRows) * in, 1), w = random_vector(std::size_t(out) * in, 2, -0.05f, 0.05f);
  auto bias = random_vector(out, 3), dy = random_vector(std::size_t(kRows) * out, 4);
  auto gx = t.device(x), gw = t.device(w), gb = t.device(bias), gdy = t.device(dy);
  auto gy = t.zeros(std::size_t(kRows) * out), gdx = t.zeros(x.size()), gdw = t.zeros(w.size()), gdb = t.zeros(out);
  std::vector<float> y(gy.size()), dx(x.size()), dw(w.size()), db(out);
  g_ops.linear_forward(gx.data(), gw.data(), gb.data(), gy.data(), kRows, in, out, t.gs());
  c_ops.linear_forward(x.data(), w.data(), bias.data(), y.data(), kRows, in, out, t.cs());
  CHECK(rel_error(t.host(gy), y) < kProductTolerance);
  g_ops.linear_backward(gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(), kRows, in, out, t.gs());
  c_ops.linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), kRows, in, out, t.cs());
  CHECK(rel_error(t.host(gdx), dx) < kProductTolerance);
  CHECK(rel_error(t.host(gdw), dw) < kProductTolerance);
  CHECK(rel_error(t.host(gdb), db) < kTolerance);  // the bias gradient stays fp32

  // The 16-bit path really rounds: fp32 products of the same inputs differ.
  auto fp32_cpu = make_cpu_backend(2);
  std::vector<float> y32(y.size());
  fp32_cpu->transformer_ops().linear_forward(x.data(), w.data(), bias.data(), y32.data(), kRows, in, out,
                                             fp32_cpu->default_stream());
  CHECK(rel_error(t.host(gy), y32) > 1e-5);

  // A strided, transposed, batched autocast product with alpha and beta, then the
  // same shape not marked autocast (fp32 on both sides).
  MatmulShape g;
  g.m = 33, g.n = 17, g.k = 20, g.batch = 4, g.transpose_a = true, g.transpose_b = true;
  g.lda = 40, g.ldb = 25, g.ldc = 19, g.stride_a = 40 * 20, g.stride_b = 25 * 17, g.stride_c = 19 * 33;
  g.alpha = 0.5f, g.beta = 2.f;
  for (bool autocast : {true, false}) {
    INFO("autocast " << autocast);
    g.autocast = autocast;
    auto a = random_vector(std::size_t(g.stride_a) * g.batch, 5);
    auto b = random_vector(std::size_t(g.stride_b) * g.batch, 6);
    auto c = random_vector(std::size_t(g.stride_c) * g.batch, 7);
    auto ga = t.device(a), gb2 = t.device(b), gc = t.device(c);
    g_ops.matmul(g, ga.data(), gb2.data(), gc.data(), t.gs());
    c_ops.matmul(g, a.data(), b.data(), c.data(), t.cs());
    CHECK(rel_error(t.host(gc), c) < (autocast ? kProductTolerance : kTolerance));
  }
}

TEST_CASE("cuda transformer 16-bit attention matches the CPU emulation", "[gpu][transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  const bool autocast = GENERATE(true, false);  // false: TRAINER_VIT_AUTOCAST=0, the fp32 attention
  INFO(precision_name(p) << (autocast ? ", autocast" : ", autocast off"));
  MixedTwins t(p);
  t.gpu->transformer_ops().set_autocast(autocast);
  t.cpu->transformer_ops().set_autocast(autocast);
  AttentionShape a;
  a.batch = kBatch, a.tokens = kTokens, a.heads = kHeads, a.head_dim = kHeadDim;
  const std::size_t n = std::size_t(kRows) * kWidth;
  auto q = random_vector(n, 14), k = random_vector(n, 15), v = random_vector(n, 16), dout = random_vector(n, 17);
  auto gq = t.device(q), gk = t.device(k), gv = t.device(v), gdout = t.device(dout);
  auto gp = t.zeros(a.probs_count()), go = t.zeros(n), gdq = t.zeros(n), gdk = t.zeros(n), gdv = t.zeros(n),
       gscratch = t.zeros(a.scratch_count());
  std::vector<float> pr(a.probs_count()), o(n), dq(n), dk(n), dv(n), scratch(a.scratch_count());
  t.gpu->transformer_ops().attention_forward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), a, t.gs());
  t.cpu->transformer_ops().attention_forward(q.data(), k.data(), v.data(), pr.data(), o.data(), a, t.cs());
  const double product = autocast ? kProductTolerance : kTolerance;
  const double rounded = autocast ? rounded_tolerance(p) : kTolerance;
  CHECK(rel_error(t.host(gp), pr) < product);
  CHECK(rel_error(t.host(go), o) < rounded);
  // Backward from the CPU's probabilities on both sides, so each product's inputs agree.
  auto gp_cpu = t.device(pr);
  t.gpu->transformer_ops().attention_backward(gq.data(), gk.data(), gv.data(), gp_cpu.data(), gdout.data(), gdq.data(),
                                              gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  t.cpu->transformer_ops().attention_backward(q.data(), k.data(), v.data(), pr.data(), dout.data(), dq.data(),
                                              dk.data(), dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdv), dv) < product);
  CHECK(rel_error(t.host(gdq), dq) < rounded);
  CHECK(rel_error(t.host(gdk), dk) < rounded);
}

TEST_CASE("cuda ViT step at bf16-mixed / 16-mixed follows the CPU emulation", "[gpu][vit][autocast]") {
  const std::string name = GENERATE(as<std::string>{}, "vits_dino", "vits_dinov3");
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(name << " " << precision_name(p));
  struct Run {
    std::unique_ptr<Backend> backend;
    model::HeatmapModel net;
    std::vector<float> heatmaps, grads;
    Run(std::unique_ptr<Backend> b, const std::string& n) : backend(std::move(b)), net(*backend, {n, 3, 2}) {
      backend->set_activation_storage(Storage::f32_nchw);  // the ViT keeps fp32 activations either way
      net.initialize(11, backend->default_stream());
    }
    void step(const std::vector<float>& images, Shape4 in, const std::vector<float>& dy_host) {
      auto& s = backend->default_stream();
      DeviceBuffer x(*backend, images.size()), dy(*backend, dy_host.size());
      backend->upload(x.data(), images.data(), images.size(), s);
      backend->upload(dy.data(), dy_host.data(), dy_host.size(), s);
      model::Context ctx{*backend, s, true, nullptr, nullptr};
      const auto y = net.forward(ctx, {x.data(), in});
      heatmaps.resize(y.shape.numel());
      backend->download(heatmaps.data(), y.data, heatmaps.size(), s);
      net.backward(ctx, {dy.data(), y.shape}, true);
      grads.resize(net.store().parameter_count());
      backend->download(grads.data(), net.store().grads_data(), grads.size(), s);
      s.synchronize();
    }
  } cpu(make_cpu_backend(2, p), name), gpu(make_cuda_backend(0, p), name);
  const Shape4 in{2, 3, 128, 128};
  const auto images = random_vector(in.numel(), 1);
  // 16-mixed trains with GradScaler's loss scale (65536 at the start): without it the
  // backbone's gradients fall below fp16's range (test_vit_autocast.cpp).
  const float loss_scale = p == Precision::fp16 ? 65536.f : 1.f;
  const auto dy = random_vector(std::size_t(2) * 3 * 32 * 32, 2, -1e-2f * loss_scale, 1e-2f * loss_scale);
  cpu.step(images, in, dy);
  gpu.step(images, in, dy);
  // Each 16-bit rounding point can move a value one step apart between the twins;
  // twelve blocks and the head's convolutions add those up.
  const double tolerance = p == Precision::bf16 ? 5e-2 : 1e-2;
  CHECK(rel_error(gpu.heatmaps, cpu.heatmaps) < tolerance);
  for (const auto& e : cpu.net.store().parameters()) {
    if (e.name.find("attention.key.bias") != std::string::npos || e.name == "head.deconv0.bias" ||
        e.name.find("mask_token") != std::string::npos)
      continue;  // zero in exact arithmetic: rounding noise on both sides
    INFO(e.name);
    const std::vector<float> g(gpu.grads.begin() + long(e.offset), gpu.grads.begin() + long(e.offset + e.count));
    const std::vector<float> c(cpu.grads.begin() + long(e.offset), cpu.grads.begin() + long(e.offset + e.count));
    CHECK(rel_error(g, c) < tolerance);
  }
}
