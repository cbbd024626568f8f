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

#include <cstdint>  // std::uint16_t
#include <cstring>  // std::memcpy
#include <iostream>  // std::cerr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/float16.hpp"  // f16::float_to_bf16, float_to_half, bf16_to_float, half_to_float

#include "gpu_test_util.hpp"
#include "vit_twins.hpp"  // kBatch, kTokens, ..., check_linear_twins
#include "../shared/model_step.hpp"  // test_shared::ModelStep

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {
constexpr double kProductTolerance = 1e-4;
double rounded_tolerance(Precision p) { return p == Precision::bf16 ? 1e-2 : 2e-3; }

struct MixedTwins : Twins {
  explicit MixedTwins(Precision p) {
    cpu = make_cpu_backend(2, p);
    gpu = make_cuda_backend(0, p);
  }
  // `count` 16-bit values of device memory.
  std::vector<std::uint16_t> host16(const std::uint16_t* device_ptr, std::size_t count) {
    const std::vector<float> words = host(reinterpret_cast<const float*>(device_ptr), (count + 1) / 2);
    std::vector<std::uint16_t> out(count);
    std::memcpy(out.data(), words.data(), count * sizeof(std::uint16_t));
    return out;
  }
};

std::uint16_t bits16(Precision p, float v) {
  return p == Precision::bf16 ? f16::float_to_bf16(v) : f16::float_to_half(v);
}
float widen16(Precision p, std::uint16_t v) {
  return p == Precision::bf16 ? f16::bf16_to_float(v) : f16::half_to_float(v);
}

// How many of `copy` are not the 16-bit bits of `values`.
std::size_t copy_mismatches(Precision p, const std::vector<std::uint16_t>& copy, const std::vector<float>& values) {
  REQUIRE(copy.size() == values.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < copy.size(); ++i) wrong += copy[i] != bits16(p, values[i]);
  return wrong;
}
}  // namespace

TEST_CASE("cuda transformer 16-bit linear and matmul match the CPU emulation", "[gpu][transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(precision_name(p));
  MixedTwins t(p);
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  REQUIRE(g_ops.autocast_precision() == p);
  const LinearTwinRun l = check_linear_twins(t, kProductTolerance, kTolerance);  // the bias gradient stays fp32
  check_shared_linears_twins(t, kProductTolerance, kTolerance);

  // The 16-bit path really rounds: fp32 products of the same inputs differ.
  auto fp32_cpu = make_cpu_backend(2);
  std::vector<float> y32(l.gpu_y.size());
  fp32_cpu->transformer_ops().linear_forward(l.x.data(), nullptr, l.w.data(), l.bias.data(), y32.data(), kRows, l.in,
                                             l.out, fp32_cpu->default_stream());
  CHECK(rel_error(l.gpu_y, y32) > 1e-5);

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

// 16-bit activation copies (TransformerOps::activation_copies): LayerNorm and GELU write
// the 16-bit bits of their fp32 outputs beside them, and a Linear that reads the copy
// gives the bits of the one that casts the fp32 values (the same cuBLAS call on the same
// operands), in both passes.
TEST_CASE("cuda LayerNorm and GELU write 16-bit copies that the Linear layers read", "[gpu][transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(precision_name(p));
  MixedTwins t(p);
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  REQUIRE(g_ops.activation_copies());
  const std::size_t n = std::size_t(kRows) * kWidth;
  auto x = random_vector(n, 41, -3.f, 3.f), gamma = random_vector(kWidth, 42), beta = random_vector(kWidth, 43);
  auto gx = t.device(x), gg = t.device(gamma), gb = t.device(beta);
  auto gy = t.zeros(n), gmean = t.zeros(kRows), grstd = t.zeros(kRows), gy16 = t.zeros((n + 1) / 2);
  auto* y16 = reinterpret_cast<std::uint16_t*>(gy16.data());
  std::vector<float> y(n), mean(kRows), rstd(kRows);
  g_ops.layer_norm_forward(gx.data(), gg.data(), gb.data(), gy.data(), y16, gmean.data(), grstd.data(), kRows, kWidth,
                           1e-6f, t.gs());
  c_ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), nullptr, mean.data(), rstd.data(), kRows,
                           kWidth, 1e-6f, t.cs());
  const std::vector<float> gpu_y = t.host(gy);
  CHECK(rel_error(gpu_y, y) < kTolerance);
  CHECK(copy_mismatches(p, t.host16(y16, n), gpu_y) == 0);

  const std::size_t wide = std::size_t(kRows) * 4 * kWidth;
  auto h = random_vector(wide, 44, -4.f, 4.f);
  auto gh = t.device(h), gg_out = t.zeros(wide), gg16 = t.zeros((wide + 1) / 2);
  auto* g16 = reinterpret_cast<std::uint16_t*>(gg16.data());
  std::vector<float> gelu(wide);
  g_ops.gelu_forward(gh.data(), gg_out.data(), g16, wide, t.gs());
  c_ops.gelu_forward(h.data(), gelu.data(), nullptr, wide, t.cs());
  const std::vector<float> gpu_gelu = t.host(gg_out);
  CHECK(rel_error(gpu_gelu, gelu) < kTolerance);
  CHECK(copy_mismatches(p, t.host16(g16, wide), gpu_gelu) == 0);

  // fc1 on LayerNorm's output, with and without its copy: the same bits.
  const int out = 4 * kWidth;
  auto w = random_vector(std::size_t(out) * kWidth, 45, -0.05f, 0.05f);
  auto dy = random_vector(std::size_t(kRows) * out, 46);
  auto gw = t.device(w), gdy = t.device(dy);
  auto z = t.zeros(std::size_t(kRows) * out), z_plain = t.zeros(z.size()), dw = t.zeros(w.size()),
       dw_plain = t.zeros(w.size()), dx = t.zeros(n), dx_plain = t.zeros(n);
  g_ops.linear_forward(gy.data(), y16, gw.data(), nullptr, z.data(), kRows, kWidth, out, t.gs());
  g_ops.linear_forward(gy.data(), nullptr, gw.data(), nullptr, z_plain.data(), kRows, kWidth, out, t.gs());
  CHECK(t.host(z) == t.host(z_plain));
  g_ops.linear_backward(gy.data(), y16, gw.data(), gdy.data(), dx.data(), dw.data(), nullptr, kRows, kWidth, out,
                        t.gs());
  g_ops.linear_backward(gy.data(), nullptr, gw.data(), gdy.data(), dx_plain.data(), dw_plain.data(), nullptr, kRows,
                        kWidth, out, t.gs());
  CHECK(t.host(dw) == t.host(dw_plain));
  CHECK(t.host(dx) == t.host(dx_plain));
  // The copy is what the product reads: GELU's copy in its place gives another product.
  g_ops.linear_forward(gy.data(), g16, gw.data(), nullptr, z.data(), kRows, kWidth, out, t.gs());
  CHECK(t.host(z) != t.host(z_plain));

  // The query/key/value layers on LayerNorm's output, with and without its copy.
  auto wq = t.device(random_vector(std::size_t(kWidth) * kWidth, 47, -0.05f, 0.05f));
  auto wk = t.device(random_vector(std::size_t(kWidth) * kWidth, 48, -0.05f, 0.05f));
  auto dq = t.device(random_vector(n, 49)), dk = t.device(random_vector(n, 50));
  auto yq = t.zeros(n), yk = t.zeros(n), yq_plain = t.zeros(n), yk_plain = t.zeros(n);
  auto dwq = t.zeros(std::size_t(kWidth) * kWidth), dwk = t.zeros(dwq.size()), dwq_plain = t.zeros(dwq.size()),
       dwk_plain = t.zeros(dwq.size()), dln = t.zeros(n), dln_plain = t.zeros(n);
  const auto layers = [&](DeviceBuffer& q_out, DeviceBuffer& k_out, DeviceBuffer& dwq_out, DeviceBuffer& dwk_out) {
    SharedInputLinear l[2];
    l[0].out = l[1].out = kWidth;
    l[0].w = wq.data(), l[1].w = wk.data();
    l[0].y = q_out.data(), l[1].y = k_out.data();
    l[0].dy = dq.data(), l[1].dy = dk.data();
    l[0].dw = dwq_out.data(), l[1].dw = dwk_out.data();
    return std::vector<SharedInputLinear>(l, l + 2);
  };
  const auto with = layers(yq, yk, dwq, dwk), without = layers(yq_plain, yk_plain, dwq_plain, dwk_plain);
  g_ops.linears_forward(gy.data(), y16, with.data(), 2, kRows, kWidth, t.gs());
  g_ops.linears_forward(gy.data(), nullptr, without.data(), 2, kRows, kWidth, t.gs());
  CHECK(t.host(yq) == t.host(yq_plain));
  CHECK(t.host(yk) == t.host(yk_plain));
  g_ops.linears_backward(gy.data(), y16, with.data(), 2, dln.data(), kRows, kWidth, t.gs());
  g_ops.linears_backward(gy.data(), nullptr, without.data(), 2, dln_plain.data(), kRows, kWidth, t.gs());
  CHECK(t.host(dwq) == t.host(dwq_plain));
  CHECK(t.host(dwk) == t.host(dwk_plain));
  CHECK(t.host(dln) == t.host(dln_plain));
}

TEST_CASE("cuda transformer 16-bit attention matches the CPU emulation", "[gpu][transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  const bool autocast = GENERATE(true, false);  // false: TRAINER_VIT_AUTOCAST=0, the fp32 attention
  INFO(precision_name(p) << (autocast ? ", autocast" : ", autocast off"));
  MixedTwins t(p);
  t.gpu->transformer_ops().set_autocast(autocast);
  // The batched-matmul attention (TRAINER_VIT_FUSED_ATTENTION=0), whose probabilities
  // are compared below; the fused one keeps other state (next case).
  t.gpu->transformer_ops().set_fused_attention(false);
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
  t.gpu->transformer_ops().attention_backward(gq.data(), gk.data(), gv.data(), gp_cpu.data(), go.data(), gdout.data(),
                                              gdq.data(), gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  t.cpu->transformer_ops().attention_backward(q.data(), k.data(), v.data(), pr.data(), o.data(), dout.data(), dq.data(),
                                              dk.data(), dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdv), dv) < product);
  CHECK(rel_error(t.host(gdq), dq) < rounded);
  CHECK(rel_error(t.host(gdk), dk) < rounded);
}

// cuDNN's fused attention (cuda_transformer_attention_fused.cpp) against the CPU
// emulation of the batched-matmul attention. They differ by more than the summation
// order: the fused attention rounds its unnormalized probabilities (the CPU its
// normalized ones) before the second product, and rounds the output and dq, dk, dv to
// 16 bits. Hence twice the batched path's bounds; a wrong layout or scale gives O(1).
TEST_CASE("cuda fused attention (cuDNN) matches the CPU emulation", "[gpu][transformer][autocast][fused_attention]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  // ViT-S at 256x256 (CLS + 256 patches), DINOv3's 4 registers more, and a 64x64 image.
  // as<int>: with a variable first, Catch2 v2 deduces Generators<const int&> and keeps
  // references to the temporaries after it (on an H200 this case then ran with
  // 738,219,456 tokens until the check's time ran out).
  const int tokens = GENERATE(as<int>{}, kTokens, kTokens + 4, 17);
  const bool copies = GENERATE(true, false);  // false: TRAINER_VIT_16BIT_COPIES=0
  INFO(precision_name(p) << ", " << tokens << " tokens" << (copies ? "" : ", no activation copies"));
  MixedTwins t(p);
  auto& g_ops = t.gpu->transformer_ops();
  g_ops.set_activation_copies(copies);
  REQUIRE(g_ops.fused_attention());
  const AttentionShape a{kBatch, tokens, kHeads, kHeadDim};
  const std::size_t n = std::size_t(kBatch) * tokens * kWidth;
  auto q = random_vector(n, 24), k = random_vector(n, 25), v = random_vector(n, 26), dout = random_vector(n, 27);
  auto gq = t.device(q), gk = t.device(k), gv = t.device(v), gdout = t.device(dout);
  // The fused state: one softmax statistic per query row, not the probability planes
  // (with copies: padded to 256 bytes, then the 16-bit q, k, v and output).
  const std::size_t state = g_ops.attention_state_count(a);
  INFO("fused attention note: " << g_ops.fused_attention_note());
  REQUIRE(g_ops.fused_attention_note().empty());  // cuDNN built both passes: the fused path runs
  const std::size_t stats = std::size_t(kBatch) * kHeads * tokens;
  CHECK(state == (copies ? (stats + 63) / 64 * 64 + 2 * n : stats));
  auto gstate = t.zeros(state), go = t.zeros(n), gdq = t.zeros(n), gdk = t.zeros(n), gdv = t.zeros(n),
       gscratch = t.zeros(a.scratch_count());
  std::vector<float> pr(a.probs_count()), o(n), dq(n), dk(n), dv(n), scratch(a.scratch_count());
  g_ops.attention_forward(gq.data(), gk.data(), gv.data(), gstate.data(), go.data(), a, t.gs());
  t.cpu->transformer_ops().attention_forward(q.data(), k.data(), v.data(), pr.data(), o.data(), a, t.cs());
  const double tolerance = 2 * rounded_tolerance(p);
  const std::vector<float> fused_out = t.host(go);
  CHECK(rel_error(fused_out, o) < tolerance);
  // With copies the state keeps the 16-bit output that `go` was widened from, for the
  // output projection to read.
  const std::uint16_t* out16 = g_ops.attention_output16(gstate.data(), a);
  CHECK((out16 != nullptr) == copies);
  if (out16) {
    const std::vector<std::uint16_t> kept = t.host16(out16, n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += widen16(p, kept[i]) != fused_out[i];
    CHECK(wrong == 0);
  }
  // The backward from the fused forward's own state and output.
  g_ops.attention_backward(gq.data(), gk.data(), gv.data(), gstate.data(), go.data(), gdout.data(), gdq.data(),
                           gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  t.cpu->transformer_ops().attention_backward(q.data(), k.data(), v.data(), pr.data(), o.data(), dout.data(), dq.data(),
                                              dk.data(), dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdv), dv) < tolerance);
  CHECK(rel_error(t.host(gdq), dq) < tolerance);
  CHECK(rel_error(t.host(gdk), dk) < tolerance);
  // A backward after the switch is turned off still follows its forward's (fused) path.
  g_ops.set_fused_attention(false);
  CHECK(g_ops.attention_state_count(a) == a.probs_count());
  auto gdq_again = t.zeros(n);
  g_ops.attention_backward(gq.data(), gk.data(), gv.data(), gstate.data(), go.data(), gdout.data(), gdq_again.data(),
                           gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  CHECK(rel_error(t.host(gdq_again), dq) < tolerance);
  // Switched off, the same ops run the batched-matmul attention: the probabilities are
  // written (into a buffer of their size), and the output agrees with the fused one.
  auto gprobs = t.zeros(a.probs_count()), go_batched = t.zeros(n);
  g_ops.attention_forward(gq.data(), gk.data(), gv.data(), gprobs.data(), go_batched.data(), a, t.gs());
  CHECK(rel_error(t.host(gprobs), pr) < kProductTolerance);
  CHECK(rel_error(t.host(go_batched), fused_out) < tolerance);
}

TEST_CASE("cuda ViT step at bf16-mixed / 16-mixed follows the CPU emulation", "[gpu][vit][autocast]") {
  const std::string name = GENERATE(as<std::string>{}, "vits_dino", "vits_dinov3", "vitb_sam", "vitt_sam2");
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  // The ViT keeps fp32 activations either way; `fused` false is TRAINER_VIT_FUSED_ATTENTION=0.
  const auto fp32_activations = [](bool fused) {
    return [fused](Backend& b) {
      b.set_activation_storage(Storage::f32_nchw);
      b.transformer_ops().set_fused_attention(fused);
    };
  };
  const Shape4 in{2, 3, 128, 128};
  const auto images = random_vector(in.numel(), 1);
  // 16-mixed trains with GradScaler's loss scale (65536 at the start): without it the
  // backbone's gradients fall below fp16's range (test_vit_autocast.cpp).
  const float loss_scale = p == Precision::fp16 ? 65536.f : 1.f;
  const auto dy = random_vector(std::size_t(2) * 3 * 32 * 32, 2, -1e-2f * loss_scale, 1e-2f * loss_scale);
  // The CPU has no fused attention: one CPU step is the twin of both GPU paths.
  test_shared::ModelStep cpu(make_cpu_backend(2, p), name, fp32_activations(false), {128, 128});
  cpu.run(images, in, dy);
  for (const bool fused : {true, false}) {
    const std::string what = name + " " + precision_name(p) + (fused ? ", fused attention" : ", batched-matmul attention");
    INFO(what);
    // If the device check's time runs out here, the line says which GPU step was under way.
    std::cerr << "cuda ViT step twin: " << what << std::endl;
    test_shared::ModelStep gpu(make_cuda_backend(0, p), name, fp32_activations(fused), {128, 128});
    gpu.run(images, in, dy);
    INFO("fused attention note: " << gpu.backend->transformer_ops().fused_attention_note());
    CHECK(gpu.backend->transformer_ops().fused_attention_note().empty());  // fused where asked: cuDNN took it
    // Each 16-bit rounding point can move a value one step apart between the twins;
    // twelve blocks and the head's convolutions add those up.
    const double tolerance = p == Precision::bf16 ? 5e-2 : 1e-2;
    CHECK(rel_error(gpu.heatmaps, cpu.heatmaps) < tolerance);
    for (const auto& e : cpu.net.store().parameters()) {
      if (test_shared::gradient_is_zero_in_exact_arithmetic(e.name, cpu.net.store())) continue;  // rounding noise on both sides
      INFO(e.name);
      CHECK(rel_error(gpu.grad(e), cpu.grad(e)) < tolerance);
    }
  }
}

// TRAINER_VIT_16BIT_COPIES: a ViT step whose Linear layers read the 16-bit copies that
// LayerNorm, GELU and the fused attention write gives the step that casts its fp32
// activations. With the batched attention, bit for bit: the same cuBLAS calls on the
// same operand bits. The fused backward accumulates dq with atomics, so two fused steps
// differ by rounding noise whatever the copies; hence the twin test's bound there.
TEST_CASE("cuda ViT step with 16-bit activation copies gives the step without them", "[gpu][vit][autocast]") {
  // dinov2: layer scale; dinov3: q and k turned in place before the attention copies them.
  // vitb_sam: windowed layers, whose projection reads no copy of the windows' output.
  // vitt_sam2: pooled-query blocks (never fused) beside fused square windows.
  const std::string name =
      GENERATE(as<std::string>{}, "vits_dino", "vits_dinov2", "vits_dinov3", "vitb_sam", "vitt_sam2");
  const bool fused = GENERATE(true, false);
  const Precision p = Precision::bf16;
  INFO(name << (fused ? ", fused attention" : ", batched-matmul attention"));
  std::cerr << "cuda ViT copies step: " << name << (fused ? ", fused attention" : ", batched-matmul attention")
            << std::endl;
  const auto setup = [fused](bool copies) {
    return [fused, copies](Backend& b) {
      b.set_activation_storage(Storage::f32_nchw);
      b.transformer_ops().set_fused_attention(fused);
      b.transformer_ops().set_activation_copies(copies);
    };
  };
  test_shared::ModelStep with(make_cuda_backend(0, p), name, setup(true), {128, 128}),
      without(make_cuda_backend(0, p), name, setup(false), {128, 128});
  REQUIRE(with.backend->transformer_ops().activation_copies());
  REQUIRE_FALSE(without.backend->transformer_ops().activation_copies());
  const Shape4 in{2, 3, 128, 128};
  const auto images = random_vector(in.numel(), 3);
  const auto dy = random_vector(std::size_t(2) * 3 * 32 * 32, 4, -1e-2f, 1e-2f);
  with.run(images, in, dy);
  without.run(images, in, dy);
  CHECK(with.backend->transformer_ops().fused_attention_note().empty());
  CHECK(with.heatmaps == without.heatmaps);  // the forwards have no atomics
  if (!fused) {
    CHECK(with.grads == without.grads);
    return;
  }
  for (const auto& e : with.net.store().parameters()) {
    if (test_shared::gradient_is_zero_in_exact_arithmetic(e.name, with.net.store())) continue;
    INFO(e.name);
    CHECK(rel_error(with.grad(e), without.grad(e)) < 5e-2);  // the CPU/GPU twin step's bf16 bound
  }
}

// SAM2's pooled-query attention (AttentionShape::query_tokens < tokens) through the
// batched 16-bit path, which pads the probability planes to the 16-bit row stride:
// vitt_sam2's block 1 (16 queries of a pooled 4x4 over an 8x8 window of 64 keys, 2
// heads of 96) and block 10 (49 over a padded 14x14 window of 196, 8 heads).
TEST_CASE("cuda 16-bit pooled-query attention (Hiera) matches the CPU emulation", "[gpu][transformer][autocast][sam2]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  const bool last_stage = GENERATE(false, true);
  INFO(precision_name(p) << (last_stage ? ", 49 queries over 196 keys" : ", 16 queries over 64 keys"));
  MixedTwins t(p);
  t.gpu->transformer_ops().set_fused_attention(false);  // cuDNN's fused graphs stay square
  AttentionShape a;
  a.batch = last_stage ? 4 : 16, a.tokens = last_stage ? 196 : 64, a.query_tokens = last_stage ? 49 : 16;
  a.heads = last_stage ? 8 : 2, a.head_dim = 96;
  const std::size_t nq = std::size_t(a.batch) * a.queries() * a.width(), n = std::size_t(a.batch) * a.tokens * a.width();
  auto q = random_vector(nq, 44), k = random_vector(n, 45), v = random_vector(n, 46), dout = random_vector(nq, 47);
  auto gq = t.device(q), gk = t.device(k), gv = t.device(v), gdout = t.device(dout);
  auto gp = t.zeros(a.probs_count()), go = t.zeros(nq), gdq = t.zeros(nq), gdk = t.zeros(n), gdv = t.zeros(n),
       gscratch = t.zeros(a.scratch_count());
  std::vector<float> pr(a.probs_count()), o(nq), dq(nq), dk(n), dv(n), scratch(a.scratch_count());
  t.gpu->transformer_ops().attention_forward(gq.data(), gk.data(), gv.data(), gp.data(), go.data(), a, t.gs());
  t.cpu->transformer_ops().attention_forward(q.data(), k.data(), v.data(), pr.data(), o.data(), a, t.cs());
  CHECK(rel_error(t.host(gp), pr) < kProductTolerance);
  CHECK(rel_error(t.host(go), o) < rounded_tolerance(p));
  auto gp_cpu = t.device(pr);
  t.gpu->transformer_ops().attention_backward(gq.data(), gk.data(), gv.data(), gp_cpu.data(), go.data(), gdout.data(),
                                              gdq.data(), gdk.data(), gdv.data(), gscratch.data(), a, t.gs());
  t.cpu->transformer_ops().attention_backward(q.data(), k.data(), v.data(), pr.data(), o.data(), dout.data(), dq.data(),
                                              dk.data(), dv.data(), scratch.data(), a, t.cs());
  CHECK(rel_error(t.host(gdv), dv) < kProductTolerance);
  CHECK(rel_error(t.host(gdq), dq) < rounded_tolerance(p));
  CHECK(rel_error(t.host(gdk), dk) < rounded_tolerance(p));
}
