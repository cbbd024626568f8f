// TRAINER_BN_KERNELS over fp32 NCHW activations: the tiled kernels (the default,
// kernels/batchnorm_tiles.cuh) against the CPU twins and against the flat kernels an
// H200 ran on 2026-11-27 and 28, on the same GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "gpu_test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {

struct Results {
  std::vector<float> moments, stats, mean, invstd;
  std::vector<std::vector<float>> reduces;      // plain, through the ReLU
  std::vector<std::vector<float>> elementwise;  // apply, with ReLU, with residual and ReLU, backward, through the ReLU
};

struct Inputs {
  std::vector<float> x, residual, dy;
  // Given to apply and the backward ops on every run, so those compare the kernels
  // alone (a mean one float apart would flip ReLU masks).
  std::vector<float> mean, invstd, gamma, beta, reduce;
};

// Every fp32 batch-norm op once, on views `offset` floats into their buffers (an
// offset of 1 leaves them 4-byte aligned only, which the tiled kernels decline).
Results run_ops(Backend& be, Stream& s, Shape4 d, std::size_t offset, const Inputs& in) {
  const std::size_t numel = d.numel();
  const int c = d.c;
  const double count = double(d.n) * d.h * d.w;
  const auto make = [&](const std::vector<float>& host) {
    DeviceBuffer b(be, host.size() + offset);
    be.upload(b.data() + offset, host.data(), host.size(), s);
    return b;
  };
  DeviceBuffer bx = make(in.x), br = make(in.residual), bdy = make(in.dy), bout = make(std::vector<float>(numel)),
               bg = make(in.gamma), bb = make(in.beta), bred = make(in.reduce), bmean = make(in.mean),
               binv = make(in.invstd), bm = make(std::vector<float>(batchnorm_moments_size(c))),
               bsums = make(std::vector<float>(2 * c)), bfmean = make(std::vector<float>(c)),
               bfinv = make(std::vector<float>(c));
  const auto at = [&](DeviceBuffer& b) { return b.data() + offset; };
  const auto back = [&](DeviceBuffer& b, std::size_t n) {
    std::vector<float> h(n);
    be.download(h.data(), at(b), n, s);
    s.synchronize();
    return h;
  };
  Results r;
  be.batchnorm_moments({at(bx), d}, at(bm), s);
  r.moments = back(bm, batchnorm_moments_size(c));
  be.batchnorm_finalize(at(bm), 1, c, 1e-5f, 0.1f, at(bfmean), at(bfinv), nullptr, nullptr, s);
  r.mean = back(bfmean, c);
  r.invstd = back(bfinv, c);
  be.batchnorm_stats({at(bx), d}, at(bsums), s);
  r.stats = back(bsums, 2 * c);
  be.batchnorm_apply({at(bx), d}, at(bmean), at(binv), at(bg), at(bb), {at(bout), d}, s);
  r.elementwise.push_back(back(bout, numel));
  for (float* res : {static_cast<float*>(nullptr), at(br)}) {
    be.batchnorm_apply_relu({at(bx), d}, at(bmean), at(binv), at(bg), at(bb), res, {at(bout), d}, s);
    r.elementwise.push_back(back(bout, numel));
  }
  be.batchnorm_backward_reduce({at(bdy), d}, {at(bx), d}, at(bmean), at(bsums), s);
  r.reduces.push_back(back(bsums, 2 * c));
  be.batchnorm_relu_backward_reduce({at(bdy), d}, {at(bx), d}, at(bmean), at(binv), at(bg), at(bb), at(bsums), s);
  r.reduces.push_back(back(bsums, 2 * c));
  // The same given reduce on every run, so dx compares the apply alone.
  be.batchnorm_backward_apply({at(bdy), d}, {at(bx), d}, at(bmean), at(binv), at(bg), at(bred), count,
                              {at(bout), d}, s);
  r.elementwise.push_back(back(bout, numel));
  be.batchnorm_relu_backward_apply({at(bdy), d}, {at(bx), d}, at(bmean), at(binv), at(bg), at(bb), at(bred), count,
                                   {at(bout), d}, s);
  r.elementwise.push_back(back(bout, numel));
  return r;
}

}  // namespace

TEST_CASE("cuda tiled fp32 batch-norm kernels match the CPU twins and the 2026-11-28 kernels (TRAINER_BN_KERNELS=0)",
          "[gpu][bn_tiles]") {
  // ResNet-50's stage-1 planes (64 x 64) and last stage (2048 channels of 8 x 8, 16
  // channels a block); 14 x 14 planes (49 float4s, five channels a block and threads
  // left over); 17 channels of 16 x 16 (four a block, the last block part empty); a
  // 512 x 512 plane (more float4 columns than 64 chunks of 256 threads); and two the
  // tiled kernels decline, where both settings run the flat kernels: a 13 x 11 plane
  // (not whole float4s) and views one float into their buffers.
  struct Case {
    Shape4 d;
    std::size_t offset;
    bool tiled_runs;
  };
  for (const Case k : {Case{Shape4{8, 64, 64, 64}, 0, true}, Case{Shape4{16, 2048, 8, 8}, 0, true},
                       Case{Shape4{3, 300, 14, 14}, 0, true}, Case{Shape4{5, 17, 16, 16}, 0, true},
                       Case{Shape4{2, 3, 512, 512}, 0, true},
                       Case{Shape4{4, 6, 13, 11}, 0, false}, Case{Shape4{5, 17, 16, 16}, 1, false}}) {
    const Shape4 d = k.d;
    INFO(d.str() << ", offset " << k.offset);
    Twins t;
    const int c = d.c;
    const Inputs in{random_vector(d.numel(), 611, -2.f, 3.f), random_vector(d.numel(), 612),
                    random_vector(d.numel(), 613),  random_vector(c, 614, -0.5f, 0.5f),
                    random_vector(c, 615, 0.5f, 2.f), random_vector(c, 616, -1.5f, 1.5f),
                    random_vector(c, 617, -0.5f, 0.5f), random_vector(2 * std::size_t(c), 618, -100.f, 100.f)};
    const auto on_gpu = [&](bool tiled) {
      t.gpu->set_tiled_batchnorm(tiled);
      return run_ops(*t.gpu, t.gs(), d, k.offset, in);
    };
    const Results tiled = on_gpu(true), flat = on_gpu(false);
    const Results cpu = run_ops(*t.cpu, t.cs(), d, 0, in);

    // Against the CPU twins, as the flat kernels' tests do.
    CHECK(rel_error(tiled.mean, cpu.mean) < kTolerance);
    CHECK(rel_error(tiled.invstd, cpu.invstd) < kTolerance);
    CHECK(rel_error(tiled.stats, cpu.stats) < kTolerance);
    for (std::size_t i = 0; i < cpu.reduces.size(); ++i) CHECK(rel_error(tiled.reduces[i], cpu.reduces[i]) < kTolerance);
    REQUIRE(tiled.elementwise.size() == cpu.elementwise.size());
    for (std::size_t i = 0; i < cpu.elementwise.size(); ++i) {
      INFO("element-wise op " << i << " (apply, with ReLU, with residual and ReLU, backward, through the ReLU)");
      CHECK(rel_error(tiled.elementwise[i], cpu.elementwise[i]) < kTolerance);
    }

    // Against the flat kernels, from the same given inputs: the same arithmetic per
    // value, so the forward's values are the same bits; the backward applies, the
    // same expression compiled twice, within a float's rounding; the sums, added in
    // another order in double, within 1e-6 (the same bits where both settings ran
    // the flat kernels).
    for (std::size_t i = 0; i < 3; ++i) CHECK(tiled.elementwise[i] == flat.elementwise[i]);
    for (std::size_t i = 3; i < 5; ++i) CHECK(rel_error(tiled.elementwise[i], flat.elementwise[i]) < 1e-6);
    if (!k.tiled_runs) {
      CHECK(tiled.moments == flat.moments);
      CHECK(tiled.stats == flat.stats);
      CHECK(tiled.reduces == flat.reduces);
      CHECK(tiled.elementwise == flat.elementwise);
      continue;
    }
    double mean_error = 0;  // the means, two floats each (compute/batchnorm_moments.hpp)
    for (int ch = 0; ch < c; ++ch)
      mean_error = std::max(mean_error, std::fabs((double(tiled.moments[ch]) + tiled.moments[c + ch]) -
                                                  (double(flat.moments[ch]) + flat.moments[c + ch])));
    CHECK(mean_error < 1e-6);
    const auto m2 = [c](const std::vector<float>& m) { return std::vector<float>(m.begin() + 2 * c, m.begin() + 3 * c); };
    CHECK(rel_error(m2(tiled.moments), m2(flat.moments)) < 1e-6);
    CHECK(tiled.moments[3 * c] == flat.moments[3 * c]);  // the count
    CHECK(rel_error(tiled.stats, flat.stats) < 1e-6);
    for (std::size_t i = 0; i < flat.reduces.size(); ++i) CHECK(rel_error(tiled.reduces[i], flat.reduces[i]) < 1e-6);
  }
}

TEST_CASE("cuda tiled fp32 batch-norm kernels give the same bits run to run", "[gpu][bn_tiles]") {
  Twins t;
  const Shape4 d{16, 256, 32, 32};
  const int c = d.c;
  const Inputs in{random_vector(d.numel(), 621, -2.f, 3.f), random_vector(d.numel(), 622),
                  random_vector(d.numel(), 623), random_vector(c, 624, -0.5f, 0.5f), random_vector(c, 625, 0.5f, 2.f),
                  random_vector(c, 626), random_vector(c, 627), random_vector(2 * std::size_t(c), 628)};
  const Results a = run_ops(*t.gpu, t.gs(), d, 0, in), b = run_ops(*t.gpu, t.gs(), d, 0, in);
  CHECK(a.moments == b.moments);
  CHECK(a.stats == b.stats);
  CHECK(a.reduces == b.reduces);
  CHECK(a.elementwise == b.elementwise);
}

// A transposed convolution's bias gradient adds the tiled partials with its own
// second pass (first_sums_kernel).
// Not named "cuda tiled fp32 batch-norm..." so the sanitizer step (its cases by that
// name) leaves out cuDNN's backward-filter kernels here.
TEST_CASE("cuda transposed convolutions' bias gradients from the tiled fp32 sums match the flat ones",
          "[gpu][bn_tiles]") {
  Twins t;
  ConvGeometry g;
  g.in_channels = 64;
  g.out_channels = 17;
  g.kernel = 3;
  g.stride = 2;
  g.pad = 1;
  g.output_padding = 1;
  const Shape4 xs{16, 64, 32, 32}, ys{16, 17, g.deconv_out(32), g.deconv_out(32)};  // 64 x 64 heatmaps
  const auto x = random_vector(xs.numel(), 631), dy = random_vector(ys.numel(), 632);
  auto gx = t.device(x), gdy = t.device(dy), gdw = t.zeros(std::size_t(64) * 17 * 9), gdb = t.zeros(17);
  std::vector<float> dw(std::size_t(64) * 17 * 9), db(17);
  t.cpu->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, t.cs());
  std::vector<float> by_setting[2];
  for (bool tiled : {true, false}) {
    t.gpu->set_tiled_batchnorm(tiled);
    t.gpu->deconv2d_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), gdb.data(), g, t.gs());
    by_setting[tiled] = t.host(gdb);
    CHECK(rel_error(by_setting[tiled], db) < kTolerance);
  }
  CHECK(rel_error(by_setting[1], by_setting[0]) < 1e-6);
}
