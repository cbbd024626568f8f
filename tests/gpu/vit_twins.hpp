#pragma once
// What the CUDA TransformerOps twin tests share (test_cuda_transformer_ops.cpp in
// fp32, test_cuda_transformer_autocast.cpp in bf16 / fp16): ViT-S's sizes and the
// Linear layer's check.
#include <catch2/catch.hpp>

#include <cstddef>  // std::size_t
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
  g_ops.linear_forward(gx.data(), gw.data(), gb.data(), gy.data(), kRows, in, out, t.gs());
  c_ops.linear_forward(x.data(), w.data(), bias.data(), y.data(), kRows, in, out, t.cs());
  const std::vector<float> gpu_y = t.host(gy);
  CHECK(rel_error(gpu_y, y) < product_tolerance);
  g_ops.linear_backward(gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(), kRows, in, out, t.gs());
  c_ops.linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), kRows, in, out, t.cs());
  CHECK(rel_error(t.host(gdx), dx) < product_tolerance);
  CHECK(rel_error(t.host(gdw), dw) < product_tolerance);
  CHECK(rel_error(t.host(gdb), db) < bias_tolerance);
  return {in, out, x, w, bias, gpu_y};
}

}  // namespace trainer::compute::gpu_test
