// The GPU's split of a depthwise weight gradient (compute/depthwise_chunks.hpp, run
// by kernels/mbconv.cu's chunked kernel), checked without a GPU: every output row is
// in exactly one chunk, no chunk is empty, the scratch size is what the kernel
// writes, and the sums taken chunk by chunk, as the two kernels take them, give the
// CPU backend's weight gradient.
#include <catch2/catch.hpp>

#include <algorithm>  // std::min
#include <vector>     // std::vector

#include "compute/backend.hpp"           // make_cpu_backend, ConvGeometry
#include "compute/depthwise_chunks.hpp"  // depthwise_weight_chunks
#include "test_util.hpp"                 // random_vector, rel_error

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {

// dw as the chunked kernels compute it: per chunk, every tap's sum over the chunk's
// rows (row = image * oh + oy); then the chunks' sums in chunk order.
std::vector<float> chunked_weight_gradient(const std::vector<float>& x, const std::vector<float>& dy, const Shape4& xs,
                                           const Shape4& ys, const ConvGeometry& g,
                                           const DepthwiseWeightChunks& plan) {
  const int k = g.kernel, kk = k * k;
  std::vector<double> partials(plan.partials, 0.0);
  for (int chunk = 0; chunk < plan.chunks; ++chunk)
    for (int c = 0; c < xs.c; ++c)
      for (int row = chunk * plan.rows_per_chunk; row < std::min(xs.n * ys.h, (chunk + 1) * plan.rows_per_chunk);
           ++row) {
        const int image = row / ys.h, oy = row % ys.h;
        const std::size_t plane = std::size_t(image) * xs.c + c;
        for (int ox = 0; ox < ys.w; ++ox)
          for (int ti = 0; ti < k; ++ti)
            for (int tj = 0; tj < k; ++tj) {
              const int iy = oy * g.stride - g.pad + ti, ix = ox * g.stride - g.pad + tj;
              if (iy < 0 || iy >= xs.h || ix < 0 || ix >= xs.w) continue;
              partials[(std::size_t(chunk) * xs.c + c) * kk + ti * k + tj] +=
                  double(dy[plane * ys.h * ys.w + std::size_t(oy) * ys.w + ox]) *
                  x[plane * xs.h * xs.w + std::size_t(iy) * xs.w + ix];
            }
      }
  std::vector<float> dw(std::size_t(xs.c) * kk);
  for (std::size_t i = 0; i < dw.size(); ++i) {
    double sum = 0;
    for (int chunk = 0; chunk < plan.chunks; ++chunk) sum += partials[std::size_t(chunk) * dw.size() + i];
    dw[i] = float(sum);
  }
  return dw;
}

}  // namespace

TEST_CASE("depthwise weight chunks: every row once, no empty chunk, about the blocks aimed at", "[compute][mbconv]") {
  for (const int k : {3, 5}) {
    for (const int n : {1, 2, 16, 64}) {
      for (const int c : {1, 16, 32, 96, 144, 511, 512, 1152}) {
        for (const int oh : {1, 4, 7, 64, 128}) {
          INFO("n " << n << " c " << c << " oh " << oh << " k " << k);
          const DepthwiseWeightChunks plan = depthwise_weight_chunks(n, c, oh, k);
          REQUIRE(plan.chunks >= 1);
          CHECK(plan.rows_per_chunk >= 1);
          CHECK(std::size_t(plan.chunks) * plan.rows_per_chunk >= std::size_t(n) * oh);         // covers every row
          CHECK(std::size_t(plan.chunks - 1) * plan.rows_per_chunk < std::size_t(n) * oh);      // the last not empty
          CHECK(plan.partials == std::size_t(plan.chunks) * c * k * k);
          CHECK(plan.chunks * c < 2 * kDepthwiseChunkBlocks + c);  // scratch stays small
          if (c >= kDepthwiseChunkBlocks) CHECK(plan.chunks == 1);
          if (std::size_t(n) * oh * c >= std::size_t(kDepthwiseChunkBlocks))
            CHECK(std::size_t(plan.chunks) * c >= std::size_t(kDepthwiseChunkBlocks) / 2);  // fills the GPU
        }
      }
    }
  }
  // Other kernel sizes and empty layers keep the per-tap kernel.
  CHECK(depthwise_weight_chunks(2, 8, 8, 7).chunks == 0);
  CHECK(depthwise_weight_chunks(2, 8, 8, 1).chunks == 0);
  CHECK(depthwise_weight_chunks(2, 0, 8, 3).chunks == 0);
}

TEST_CASE("depthwise weight chunks: summed chunk by chunk they give the CPU's weight gradient", "[compute][mbconv]") {
  auto be = make_cpu_backend(2);
  Stream& s = be->default_stream();
  struct Case {
    int n, c, h, w, k, stride;
  };
  for (const Case t : {Case{3, 5, 9, 8, 3, 1}, Case{2, 4, 10, 7, 5, 2}, Case{1, 600, 4, 4, 3, 1}, Case{4, 2, 5, 9, 5, 1}}) {
    INFO("n " << t.n << " c " << t.c << " " << t.h << "x" << t.w << " k " << t.k << " stride " << t.stride);
    ConvGeometry g;
    g.in_channels = g.out_channels = t.c;
    g.kernel = t.k, g.stride = t.stride, g.pad = (t.k - 1) / 2;
    const Shape4 xs{t.n, t.c, t.h, t.w}, ys{t.n, t.c, g.conv_out(t.h), g.conv_out(t.w)};
    const auto x = random_vector(xs.numel(), 1), dy = random_vector(ys.numel(), 3);
    const DepthwiseWeightChunks plan = depthwise_weight_chunks(t.n, t.c, ys.h, t.k);
    REQUIRE(plan.chunks >= 1);
    std::vector<float> dw(std::size_t(t.c) * t.k * t.k);
    be->mbconv_ops().depthwise_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, s);
    CHECK(rel_error(chunked_weight_gradient(x, dy, xs, ys, g, plan), dw) < 1e-6);
  }
}
