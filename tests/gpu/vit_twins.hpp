#pragma once
// What the CUDA TransformerOps twin tests share (test_cuda_transformer_ops.cpp in
// fp32, test_cuda_transformer_autocast.cpp in bf16 / fp16): ViT-S's sizes and the
// Linear layers' checks.
#include <catch2/catch.hpp>

#include <cstddef>  // std::size_t
#include <limits>   // std::numeric_limits (NaN)
#include <vector>   // std::vector

#include "gpu_test_util.hpp"  // Twins, random_vector, rel_error

namespace trainer::compute::gpu_test {

// 257 tokens (a 256x256 image in 16x16 patches plus CLS), 6 heads of 64, width 384.
constexpr int kBatch = 2, kTokens = 257, kHeads = 6, kHeadDim = 64, kWidth = kHeads * kHeadDim;
constexpr int kRows = kBatch * kTokens;

// What check_linear_twins ran: its inputs and the GPU's output.
struct LinearTwinRun {
  int in = 0, out = 0;
  std::vector<float> x, w, bias, gpu_y;
};

// nn.Linear at fc1's shape (fc2's backward reads its transpose), forward and backward
// on both twins: y, dx and dw within `product_tolerance`, the bias gradient (fp32
// column sums either way) within `bias_tolerance`.
inline LinearTwinRun check_linear_twins(Twins& t, double product_tolerance, double bias_tolerance) {
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  const int in = kWidth, out = 4 * kWidth;
  auto x = random_vector(std::size_t(kRows) * in, 1), w = random_vector(std::size_t(out) * in, 2, -0.05f, 0.05f);
  auto bias = random_vector(out, 3), dy = random_vector(std::size_t(kRows) * out, 4);
  auto gx = t.device(x), gw = t.device(w), gb = t.device(bias), gdy = t.device(dy);
  auto gy = t.zeros(std::size_t(kRows) * out), gdx = t.zeros(x.size()), gdw = t.zeros(w.size()), gdb = t.zeros(out);
  std::vector<float> y(gy.size()), dx(x.size()), dw(w.size()), db(out);
  g_ops.linear_forward(gx.data(), nullptr, gw.data(), gb.data(), gy.data(), kRows, in, out, t.gs());
  c_ops.linear_forward(x.data(), nullptr, w.data(), bias.data(), y.data(), kRows, in, out, t.cs());
  const std::vector<float> gpu_y = t.host(gy);
  CHECK(rel_error(gpu_y, y) < product_tolerance);
  g_ops.linear_backward(gx.data(), nullptr, gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(), kRows, in, out,
                        t.gs());
  c_ops.linear_backward(x.data(), nullptr, w.data(), dy.data(), dx.data(), dw.data(), db.data(), kRows, in, out,
                        t.cs());
  CHECK(rel_error(t.host(gdx), dx) < product_tolerance);
  CHECK(rel_error(t.host(gdw), dw) < product_tolerance);
  CHECK(rel_error(t.host(gdb), db) < bias_tolerance);
  return {in, out, x, w, bias, gpu_y};
}

// Attention's query, key and value as three Linear layers on one input
// (linears_forward / linears_backward; the key without a bias, as DINOv3's, and with
// half the outputs, so the layers' spans differ): each y, dw and the summed dx within
// `product_tolerance`, the bias gradients within `bias_tolerance`. The GPU's outputs
// start as NaN: a product that added where it should write would show.
inline void check_shared_linears_twins(Twins& t, double product_tolerance, double bias_tolerance) {
  auto& g_ops = t.gpu->transformer_ops();
  auto& c_ops = t.cpu->transformer_ops();
  const int C = kWidth, outs[3] = {C, C / 2, C};
  const std::size_t n = std::size_t(kRows) * C;
  const auto x = random_vector(n, 31);
  const auto nan = [](std::size_t count) { return std::vector<float>(count, std::numeric_limits<float>::quiet_NaN()); };
  std::vector<std::vector<float>> w, bias, dy, y, dw, db;
  for (unsigned i = 0; i < 3; ++i) {
    const std::size_t out = std::size_t(outs[i]);
    w.push_back(random_vector(out * C, 32 + i, -0.05f, 0.05f));
    bias.push_back(random_vector(out, 35 + i));
    dy.push_back(random_vector(kRows * out, 38 + i));
    y.emplace_back(kRows * out), dw.emplace_back(out * C), db.emplace_back(out);
  }
  auto gx = t.device(x);
  std::vector<DeviceBuffer> gw, gb, gdy, gy, gdw, gdb;
  SharedInputLinear g[3], c[3];
  for (int i = 0; i < 3; ++i) {
    gw.push_back(t.device(w[i])), gb.push_back(t.device(bias[i])), gdy.push_back(t.device(dy[i]));
    gy.push_back(t.device(nan(y[i].size()))), gdw.push_back(t.device(nan(dw[i].size())));
    gdb.push_back(t.device(nan(db[i].size())));
    const bool has_bias = i != 1;
    g[i].out = c[i].out = outs[i];
    g[i].w = gw[i].data(), c[i].w = w[i].data();
    g[i].bias = has_bias ? gb[i].data() : nullptr, c[i].bias = has_bias ? bias[i].data() : nullptr;
    g[i].y = gy[i].data(), c[i].y = y[i].data();
    g[i].dy = gdy[i].data(), c[i].dy = dy[i].data();
    g[i].dw = gdw[i].data(), c[i].dw = dw[i].data();
    g[i].dbias = has_bias ? gdb[i].data() : nullptr, c[i].dbias = has_bias ? db[i].data() : nullptr;
  }
  g_ops.linears_forward(gx.data(), nullptr, g, 3, kRows, C, t.gs());
  c_ops.linears_forward(x.data(), nullptr, c, 3, kRows, C, t.cs());
  auto gdx = t.device(nan(n));
  std::vector<float> dx(n);
  g_ops.linears_backward(gx.data(), nullptr, g, 3, gdx.data(), kRows, C, t.gs());
  c_ops.linears_backward(x.data(), nullptr, c, 3, dx.data(), kRows, C, t.cs());
  for (int i = 0; i < 3; ++i) {
    INFO("layer " << i);
    CHECK(rel_error(t.host(gy[i]), y[i]) < product_tolerance);
    CHECK(rel_error(t.host(gdw[i]), dw[i]) < product_tolerance);
    if (i != 1) CHECK(rel_error(t.host(gdb[i]), db[i]) < bias_tolerance);
  }
  CHECK(rel_error(t.host(gdx), dx) < product_tolerance);
  // Without dx (a first layer's input needs none): the weight gradients alone.
  for (int i = 0; i < 3; ++i) t.gpu->fill(gdw[i].data(), std::numeric_limits<float>::quiet_NaN(), dw[i].size(), t.gs());
  g_ops.linears_backward(gx.data(), nullptr, g, 3, nullptr, kRows, C, t.gs());
  for (int i = 0; i < 3; ++i) {
    INFO("layer " << i << ", no dx");
    CHECK(rel_error(t.host(gdw[i]), dw[i]) < product_tolerance);
  }
}

}  // namespace trainer::compute::gpu_test
