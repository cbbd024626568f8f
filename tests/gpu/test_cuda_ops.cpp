// Every CUDA op against its CPU twin (make_cpu_backend) on fresh random inputs:
// fp32 with TF32 off must agree to a relative error below 1e-5.
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy
#include <cmath>      // std::nanf, std::isfinite, NAN
#include <cstdint>    // std::uint8_t
#include <cstdio>     // std::printf
#include <limits>     // quiet_NaN

#include <cuda_runtime_api.h>  // cudaStream_t, cudaGetLastError

#include "compute/keypoint_rule.hpp"  // kUniformTargetMark
#include "compute/losses/heatmap_loss_registry.hpp"  // heatmap_losses
#include "gpu_test_util.hpp"
#include "heatmap.cuh"  // kernels::soft_argmax with an explicit chunk

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;
namespace kernels = trainer::kernels;

TEST_CASE("cuda fill, scale, copy, accumulate", "[gpu]") {
  Twins t;
  const std::size_t n = 100003;
  auto a = random_vector(n, 1), b = random_vector(n, 2);
  auto da = t.device(a), db = t.device(b), dc = t.zeros(n);
  t.gpu->fill(dc.data(), 2.5f, n, t.gs());
  CHECK(t.host(dc) == std::vector<float>(n, 2.5f));
  t.gpu->copy(dc.data(), da.data(), n, t.gs());
  t.gpu->scale(dc.data(), -3.f, n, t.gs());
  t.gpu->accumulate(db.data(), dc.data(), n, t.gs());
  std::vector<float> ref = a;
  t.cpu->scale(ref.data(), -3.f, n, t.cs());
  t.cpu->accumulate(b.data(), ref.data(), n, t.cs());
  CHECK(rel_error(t.host(dc), ref) < kTolerance);
}

TEST_CASE("cuda affine_points matches the CPU twin", "[gpu]") {
  Twins t;
  const std::size_t points = 50001;
  auto xy = random_vector(2 * points, 5, -100.f, 300.f);
  AffineMap2D map;
  const float m[6] = {0.93f, -0.17f, 4.5f, 0.21f, 1.08f, -6.25f};
  std::copy(m, m + 6, map.m);
  auto d = t.device(xy);
  auto dmap = t.device(std::vector<float>(map.m, map.m + 6));  // read from device memory when it runs
  t.gpu->affine_points(d.data(), points, dmap.data(), t.gs());
  t.cpu->affine_points(xy.data(), points, map.m, t.cs());
  CHECK(rel_error(t.host(d), xy) < kTolerance);
}

TEST_CASE("cuda conv2d forward / backward-data / backward-weights", "[gpu]") {
  Twins t;
  struct Case { int n, cin, cout, h, w, k, stride, pad; };
  const Case cases[] = {{2, 3, 8, 33, 30, 7, 2, 3}, {2, 8, 8, 16, 17, 3, 1, 1},
                        {3, 8, 16, 15, 15, 1, 2, 0}, {2, 16, 8, 14, 13, 3, 2, 1}};
  unsigned seed = 10;
  for (const Case& c : cases) {
    ConvGeometry g;
    g.in_channels = c.cin;
    g.out_channels = c.cout;
    g.kernel = c.k;
    g.stride = c.stride;
    g.pad = c.pad;
    const Shape4 xs{c.n, c.cin, c.h, c.w}, ys{c.n, c.cout, g.conv_out(c.h), g.conv_out(c.w)};
    auto x = random_vector(xs.numel(), seed++), w = random_vector(std::size_t(c.cout) * c.cin * c.k * c.k, seed++);
    auto dy = random_vector(ys.numel(), seed++);
    auto dx_ = t.device(x), dw_ = t.device(w), ddy = t.device(dy);
    auto dy_out = t.zeros(ys.numel()), ddx = t.zeros(xs.numel()), ddw = t.zeros(w.size());
    t.gpu->conv2d_forward({dx_.data(), xs}, dw_.data(), {dy_out.data(), ys}, g, t.gs());
    t.gpu->conv2d_backward_data({ddy.data(), ys}, dw_.data(), {ddx.data(), xs}, g, t.gs());
    t.gpu->conv2d_backward_weights({dx_.data(), xs}, {ddy.data(), ys}, ddw.data(), g, t.gs());
    std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size());
    t.cpu->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, t.cs());
    t.cpu->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, t.cs());
    t.cpu->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, t.cs());
    INFO("conv k" << c.k << " s" << c.stride << " p" << c.pad << " x " << xs.str());
    CHECK(rel_error(t.host(dy_out), y) < kTolerance);
    CHECK(rel_error(t.host(ddx), dx) < kTolerance);
    CHECK(rel_error(t.host(ddw), dw) < kTolerance);
    // The cached plan is reused on a second call with the same shapes.
    t.gpu->conv2d_forward({dx_.data(), xs}, dw_.data(), {dy_out.data(), ys}, g, t.gs());
    CHECK(rel_error(t.host(dy_out), y) < kTolerance);
  }
}

TEST_CASE("cuda transposed conv forward / backward with bias", "[gpu]") {
  Twins t;
  ConvGeometry g;
  g.in_channels = 12;
  g.out_channels = 5;
  g.kernel = 3;
  g.stride = 2;
  g.pad = 1;
  g.output_padding = 1;
  const Shape4 xs{2, 12, 9, 11}, ys{2, 5, g.deconv_out(9), g.deconv_out(11)};
  auto x = random_vector(xs.numel(), 31), w = random_vector(std::size_t(12) * 5 * 9, 32);
  auto bias = random_vector(5, 33), dy = random_vector(ys.numel(), 34);
  auto gx = t.device(x), gw = t.device(w), gb = t.device(bias), gdy = t.device(dy);
  auto gy = t.zeros(ys.numel()), gdx = t.zeros(xs.numel()), gdw = t.zeros(w.size()), gdb = t.zeros(5);
  t.gpu->deconv2d_forward({gx.data(), xs}, gw.data(), gb.data(), {gy.data(), ys}, g, t.gs());
  t.gpu->deconv2d_backward_data({gdy.data(), ys}, gw.data(), {gdx.data(), xs}, g, t.gs());
  t.gpu->deconv2d_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), gdb.data(), g, t.gs());
  std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size()), db(5);
  t.cpu->deconv2d_forward({x.data(), xs}, w.data(), bias.data(), {y.data(), ys}, g, t.cs());
  t.cpu->deconv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, t.cs());
  t.cpu->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, t.cs());
  CHECK(rel_error(t.host(gy), y) < kTolerance);
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);
  CHECK(rel_error(t.host(gdw), dw) < kTolerance);
  CHECK(rel_error(t.host(gdb), db) < kTolerance);
  // Without bias.
  t.gpu->deconv2d_forward({gx.data(), xs}, gw.data(), nullptr, {gy.data(), ys}, g, t.gs());
  t.cpu->deconv2d_forward({x.data(), xs}, w.data(), nullptr, {y.data(), ys}, g, t.cs());
  CHECK(rel_error(t.host(gy), y) < kTolerance);
}

TEST_CASE("cuda batch norm moments of 2 ranks match float64 on a channel with mean 1000 and std 0.01", "[gpu]") {
  Twins t;
  const Shape4 xs{8, 2, 32, 32};
  const int C = xs.c;
  const std::size_t block = batchnorm_moments_size(C);
  std::vector<float> x[2];
  auto gathered = t.zeros(2 * block);
  for (int r = 0; r < 2; ++r) {
    x[r] = random_vector(xs.numel(), 60 + r, -1.f, 1.f);
    for (std::size_t j = 0; j < x[r].size(); ++j)
      if ((j / xs.plane()) % C == 0) x[r][j] = float(1000.0 + 0.0173 * x[r][j] + 0.01 * r);
    auto gx = t.device(x[r]);
    t.gpu->batchnorm_moments({gx.data(), xs}, gathered.data() + r * block, t.gs());
  }
  auto gmean = t.zeros(C), ginv = t.zeros(C);
  t.gpu->batchnorm_finalize(gathered.data(), 2, C, 1e-5f, 0.1f, gmean.data(), ginv.data(), nullptr, nullptr, t.gs());
  const auto mean = t.host(gmean), inv = t.host(ginv);
  for (int ch = 0; ch < C; ++ch) {
    double mu = 0, m2 = 0, count = 0;  // float64, two passes over both ranks
    for (int pass = 0; pass < 2; ++pass) {
      for (int r = 0; r < 2; ++r)
        for (std::size_t j = 0; j < x[r].size(); ++j) {
          if (int((j / xs.plane()) % C) != ch) continue;
          if (pass == 0) {
            mu += x[r][j];
            ++count;
          } else {
            m2 += (x[r][j] - mu) * (x[r][j] - mu);
          }
        }
      if (pass == 0) mu /= count;
    }
    CHECK(std::abs(mean[ch] - mu) < 1e-6 * (std::abs(mu) + 1));
    CHECK(inv[ch] == Approx(1 / std::sqrt(m2 / count + 1e-5)).epsilon(1e-5));
  }
}

TEST_CASE("cuda batch norm split API (moments, finalize, apply, backward)", "[gpu]") {
  Twins t;
  const Shape4 xs{4, 6, 13, 11};
  const int C = xs.c;
  const double count = double(xs.n) * xs.plane();
  auto x = random_vector(xs.numel(), 41, -2.f, 3.f), dy = random_vector(xs.numel(), 42);
  auto gamma = random_vector(C, 43, 0.5f, 1.5f), beta = random_vector(C, 44);
  auto rm = random_vector(C, 45), rv = random_vector(C, 46, 0.5f, 2.f);
  auto gx = t.device(x), gdy = t.device(dy), gg = t.device(gamma), gb = t.device(beta);
  auto grm = t.device(rm), grv = t.device(rv);
  auto gstats = t.zeros(batchnorm_moments_size(C)), gmean = t.zeros(C), ginv = t.zeros(C), gy = t.zeros(xs.numel());
  auto gred = t.zeros(2 * C), gdg = t.zeros(C), gdb = t.zeros(C), gdx = t.zeros(xs.numel());
  std::vector<float> stats(batchnorm_moments_size(C)), mean(C), inv(C), y(xs.numel()), red(2 * C), dg(C), db(C),
      dx(xs.numel());

  t.gpu->batchnorm_moments({gx.data(), xs}, gstats.data(), t.gs());
  t.gpu->batchnorm_finalize(gstats.data(), 1, C, 1e-5f, 0.1f, gmean.data(), ginv.data(),
                            grm.data(), grv.data(), t.gs());
  t.gpu->batchnorm_apply({gx.data(), xs}, gmean.data(), ginv.data(), gg.data(), gb.data(),
                         {gy.data(), xs}, t.gs());
  t.gpu->batchnorm_backward_reduce({gdy.data(), xs}, {gx.data(), xs}, gmean.data(), gred.data(), t.gs());
  t.gpu->batchnorm_param_grads(gred.data(), ginv.data(), C, gdg.data(), gdb.data(), t.gs());
  t.gpu->batchnorm_backward_apply({gdy.data(), xs}, {gx.data(), xs}, gmean.data(), ginv.data(),
                                  gg.data(), gred.data(), count, {gdx.data(), xs}, t.gs());

  t.cpu->batchnorm_moments({x.data(), xs}, stats.data(), t.cs());
  t.cpu->batchnorm_finalize(stats.data(), 1, C, 1e-5f, 0.1f, mean.data(), inv.data(), rm.data(),
                            rv.data(), t.cs());
  t.cpu->batchnorm_apply({x.data(), xs}, mean.data(), inv.data(), gamma.data(), beta.data(),
                         {y.data(), xs}, t.cs());
  t.cpu->batchnorm_backward_reduce({dy.data(), xs}, {x.data(), xs}, mean.data(), red.data(), t.cs());
  t.cpu->batchnorm_param_grads(red.data(), inv.data(), C, dg.data(), db.data(), t.cs());
  t.cpu->batchnorm_backward_apply({dy.data(), xs}, {x.data(), xs}, mean.data(), inv.data(),
                                  gamma.data(), red.data(), count, {dx.data(), xs}, t.cs());

  CHECK(rel_error(t.host(gstats), stats) < kTolerance);
  CHECK(rel_error(t.host(gmean), mean) < kTolerance);
  CHECK(rel_error(t.host(ginv), inv) < kTolerance);
  CHECK(rel_error(t.host(grm), rm) < kTolerance);
  CHECK(rel_error(t.host(grv), rv) < kTolerance);
  CHECK(rel_error(t.host(gy), y) < kTolerance);
  CHECK(rel_error(t.host(gred), red) < kTolerance);
  CHECK(rel_error(t.host(gdg), dg) < kTolerance);
  CHECK(rel_error(t.host(gdb), db) < kTolerance);
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);

  // Inference statistics, and null gamma / beta.
  t.gpu->batchnorm_inference_stats(grm.data(), grv.data(), C, 1e-5f, gmean.data(), ginv.data(), t.gs());
  t.cpu->batchnorm_inference_stats(rm.data(), rv.data(), C, 1e-5f, mean.data(), inv.data(), t.cs());
  CHECK(rel_error(t.host(gmean), mean) < kTolerance);
  CHECK(rel_error(t.host(ginv), inv) < kTolerance);
  t.gpu->batchnorm_apply({gx.data(), xs}, gmean.data(), ginv.data(), nullptr, nullptr, {gy.data(), xs}, t.gs());
  t.cpu->batchnorm_apply({x.data(), xs}, mean.data(), inv.data(), nullptr, nullptr, {y.data(), xs}, t.cs());
  CHECK(rel_error(t.host(gy), y) < kTolerance);
  t.gpu->batchnorm_backward_apply({gdy.data(), xs}, {gx.data(), xs}, gmean.data(), ginv.data(),
                                  nullptr, gred.data(), count, {gdx.data(), xs}, t.gs());
  t.cpu->batchnorm_backward_apply({dy.data(), xs}, {x.data(), xs}, mean.data(), inv.data(), nullptr,
                                  red.data(), count, {dx.data(), xs}, t.cs());
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);
}

TEST_CASE("cuda max pooling forward / backward", "[gpu]") {
  Twins t;
  PoolGeometry g;  // 3x3, stride 2, pad 1 (ResNet stem)
  // Odd sizes, and a stem-sized plane count (the backward's grid runs over planes).
  const Shape4 xs = GENERATE(Shape4{2, 5, 17, 14}, Shape4{8, 64, 40, 33});
  const Shape4 ys{xs.n, xs.c, g.out(xs.h), g.out(xs.w)};
  INFO("x " << xs.str());
  auto x = random_vector(xs.numel(), 51), dy = random_vector(ys.numel(), 52);
  x[7] = x[8];  // a tie: the first maximum wins on both backends
  auto gx = t.device(x), gdy = t.device(dy), gy = t.zeros(ys.numel()), gdx = t.zeros(xs.numel());
  std::vector<float> y(ys.numel()), dx(xs.numel());
  t.gpu->maxpool2d_forward({gx.data(), xs}, {gy.data(), ys}, g, t.gs());
  t.gpu->maxpool2d_backward({gx.data(), xs}, {gdy.data(), ys}, {gdx.data(), xs}, g, t.gs());
  t.cpu->maxpool2d_forward({x.data(), xs}, {y.data(), ys}, g, t.cs());
  t.cpu->maxpool2d_backward({x.data(), xs}, {dy.data(), ys}, {dx.data(), xs}, g, t.cs());
  CHECK(t.host(gy) == y);
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);
}

TEST_CASE("cuda relu, residual add+relu, pixel shuffle", "[gpu]") {
  Twins t;
  const std::size_t n = 4 * 8 * 6 * 5;
  auto a = random_vector(n, 61), b = random_vector(n, 62), dy = random_vector(n, 63);
  auto ga = t.device(a), gb = t.device(b), gdy = t.device(dy), gy = t.zeros(n);
  std::vector<float> y(n), dx(n);
  t.gpu->relu_forward(ga.data(), gy.data(), n, t.gs());
  t.cpu->relu_forward(a.data(), y.data(), n, t.cs());
  CHECK(t.host(gy) == y);
  t.gpu->relu_backward(gy.data(), gdy.data(), gdy.data(), n, t.gs());  // dx aliases dy
  t.cpu->relu_backward(y.data(), dy.data(), dx.data(), n, t.cs());
  CHECK(t.host(gdy) == dx);
  t.gpu->add_relu_forward(ga.data(), gb.data(), gy.data(), n, t.gs());
  t.cpu->add_relu_forward(a.data(), b.data(), y.data(), n, t.cs());
  CHECK(t.host(gy) == y);

  const Shape4 xs{2, 12, 5, 7}, ys{2, 3, 10, 14};
  auto x = random_vector(xs.numel(), 64), g2 = random_vector(ys.numel(), 65);
  auto gx = t.device(x), gg = t.device(g2), gps = t.zeros(ys.numel()), gpx = t.zeros(xs.numel());
  std::vector<float> ps(ys.numel()), px(xs.numel());
  t.gpu->pixel_shuffle_forward({gx.data(), xs}, {gps.data(), ys}, 2, t.gs());
  t.gpu->pixel_shuffle_backward({gg.data(), ys}, {gpx.data(), xs}, 2, t.gs());
  t.cpu->pixel_shuffle_forward({x.data(), xs}, {ps.data(), ys}, 2, t.cs());
  t.cpu->pixel_shuffle_backward({g2.data(), ys}, {px.data(), xs}, 2, t.cs());
  CHECK(t.host(gps) == ps);
  CHECK(t.host(gpx) == px);
}

// The fp32 element-wise passes move float4s where every operand is 16-byte aligned,
// then the tail one value at a time, and one value at a time elsewhere.
TEST_CASE("cuda fp32 element-wise passes give the CPU's values on float4s, tails and unaligned views", "[gpu]") {
  Twins t;
  for (std::size_t n : {std::size_t(1), std::size_t(960), std::size_t(100003)}) {
    for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      INFO(n << " values, views " << offset << " floats into their buffers");
      auto a = random_vector(n, 71), b = random_vector(n, 72), dy = random_vector(n, 73);
      a[0] = std::nanf("");  // NaN propagates through the ReLU, as on the CPU
      const auto at = [&](const std::vector<float>& host) {
        std::vector<float> padded(offset, 0.f);
        padded.insert(padded.end(), host.begin(), host.end());
        return t.device(padded);
      };
      auto ga = at(a), gb = at(b), gdy = at(dy), gout = at(std::vector<float>(n));
      const auto back = [&](const DeviceBuffer& d) { return t.host(d.data() + offset, n); };
      const auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
          if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
        return true;
      };
      std::vector<float> y(n), dx(n), sum = b;
      t.gpu->relu_forward(ga.data() + offset, gout.data() + offset, n, t.gs());
      t.cpu->relu_forward(a.data(), y.data(), n, t.cs());
      CHECK(same(back(gout), y));
      t.gpu->relu_backward(gout.data() + offset, gdy.data() + offset, gdy.data() + offset, n, t.gs());
      t.cpu->relu_backward(y.data(), dy.data(), dx.data(), n, t.cs());
      CHECK(same(back(gdy), dx));
      t.gpu->add_relu_forward(ga.data() + offset, gb.data() + offset, gout.data() + offset, n, t.gs());
      t.cpu->add_relu_forward(a.data(), b.data(), y.data(), n, t.cs());
      CHECK(same(back(gout), y));
      t.gpu->accumulate(ga.data() + offset, gb.data() + offset, n, t.gs());
      t.cpu->accumulate(a.data(), sum.data(), n, t.cs());
      CHECK(same(back(gb), sum));
    }
  }
}

TEST_CASE("cuda normalize_images from host and device frames", "[gpu]") {
  Twins t;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  for (int channels : {1, 3}) {
    const Shape4 ds{3, 3, 19, 23};
    std::vector<std::uint8_t> img(std::size_t(ds.n) * ds.plane() * channels);
    auto r = random_vector(img.size(), 70 + channels, 0.f, 255.99f);
    for (std::size_t i = 0; i < img.size(); ++i) img[i] = std::uint8_t(r[i]);
    std::vector<float> ref(ds.numel());
    t.cpu->normalize_images(img.data(), channels, {ref.data(), ds}, mean, stdv, t.cs());
    auto out = t.zeros(ds.numel());
    // pageable host frames are staged through the stream's scratch
    t.gpu->normalize_images(img.data(), channels, {out.data(), ds}, mean, stdv, t.gs());
    CHECK(rel_error(t.host(out), ref) < kTolerance);
    // pinned host frames
    auto* pinned = static_cast<std::uint8_t*>(t.gpu->allocate_host(img.size()));
    std::copy(img.begin(), img.end(), pinned);
    t.gpu->fill(out.data(), 0.f, out.size(), t.gs());
    t.gpu->normalize_images(pinned, channels, {out.data(), ds}, mean, stdv, t.gs());
    CHECK(rel_error(t.host(out), ref) < kTolerance);
    t.gpu->release_host(pinned);
  }
}

TEST_CASE("cuda heatmap targets and masks", "[gpu]") {
  Twins t;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int H = 24, W = 20;
  const float mark = kUniformTargetMark;  // a missing label with uniform_heatmaps_for_nan_keypoints
  std::vector<float> kp{3.3f, 2.7f, nan, 1.f, -1.f, 9.f, 21.f, 0.f, -1.5f, 2.f,
                        3.f,  25.5f, 19.2f, 23.9f, 0.f, nan, 10.5f, 12.25f, 0.f, 0.f, mark, mark};
  const int K = int(kp.size() / 2);
  const Shape4 ts{1, K, H, W};
  auto gkp = t.device(kp), gt = t.zeros(ts.numel()), gm = t.zeros(K);
  std::vector<float> tr(ts.numel()), mr(K);
  t.gpu->heatmap_targets(gkp.data(), {gt.data(), ts}, 1.25f, gm.data(), t.gs());
  t.cpu->heatmap_targets(kp.data(), {tr.data(), ts}, 1.25f, mr.data(), t.cs());
  CHECK(t.host(gm) == mr);
  CHECK(rel_error(t.host(gt), tr) < kTolerance);
  // host keypoints and no mask
  t.gpu->fill(gt.data(), 7.f, gt.size(), t.gs());
  t.gpu->heatmap_targets(kp.data(), {gt.data(), ts}, 2.f, nullptr, t.gs());
  t.cpu->heatmap_targets(kp.data(), {tr.data(), ts}, 2.f, nullptr, t.cs());
  CHECK(rel_error(t.host(gt), tr) < kTolerance);
}

TEST_CASE("cuda spatial softmax forward / backward", "[gpu]") {
  Twins t;
  const Shape4 s{3, 5, 16, 12};
  auto x = random_vector(s.numel(), 81, -3.f, 3.f), dy = random_vector(s.numel(), 82);
  auto gx = t.device(x), gdy = t.device(dy), gy = t.zeros(s.numel()), gdx = t.zeros(s.numel());
  for (float temperature : {1.f, 3.5f}) {
    std::vector<float> y(s.numel()), dx(s.numel());
    t.gpu->spatial_softmax_forward({gx.data(), s}, temperature, {gy.data(), s}, t.gs());
    t.gpu->spatial_softmax_backward({gy.data(), s}, {gdy.data(), s}, temperature, {gdx.data(), s}, t.gs());
    t.cpu->spatial_softmax_forward({x.data(), s}, temperature, {y.data(), s}, t.cs());
    t.cpu->spatial_softmax_backward({y.data(), s}, {dy.data(), s}, temperature, {dx.data(), s}, t.cs());
    INFO("temperature " << temperature);
    CHECK(rel_error(t.host(gy), y) < kTolerance);
    CHECK(rel_error(t.host(gdx), dx) < kTolerance);
  }
}

TEST_CASE("cuda masked heatmap loss (every registered loss) forward / backward", "[gpu]") {
  Twins t;
  const Shape4 s{2, 4, 16, 16};
  auto logits = random_vector(s.numel(), 91, -2.f, 2.f);
  std::vector<float> pred(s.numel());
  t.cpu->spatial_softmax_forward({logits.data(), s}, 1.f, {pred.data(), s}, t.cs());
  std::vector<float> kp{3.f, 4.f, 8.5f, 9.5f, std::nanf(""), 1.f, 15.f, 2.f,
                        0.f, 0.f, 7.f, 7.f, 40.f, 3.f, 12.f, 11.f};
  std::vector<float> target(s.numel()), mask(8);
  t.cpu->heatmap_targets(kp.data(), {target.data(), s}, 1.25f, mask.data(), t.cs());
  auto gp = t.device(pred), gt = t.device(target), gm = t.device(mask);
  auto gloss = t.zeros(1), gd = t.zeros(s.numel());
  for (const HeatmapLoss* type : heatmap_losses()) {
    for (bool with_mask : {true, false}) {
      std::vector<float> loss(1), d(s.numel());
      t.gpu->heatmap_loss({gp.data(), s}, {gt.data(), s}, with_mask ? gm.data() : nullptr, *type,
                          gloss.data(), gd.data(), 3.f, t.gs());
      t.cpu->heatmap_loss({pred.data(), s}, {target.data(), s}, with_mask ? mask.data() : nullptr,
                          *type, loss.data(), d.data(), 3.f, t.cs());
      INFO("loss " << type->name() << (with_mask ? " with mask" : " without mask"));
      CHECK(rel_error(t.host(gloss), loss) < kTolerance);
      CHECK(rel_error(t.host(gd), d) < kTolerance);
    }
  }
  // No counted keypoint: zero loss and gradient on both.
  std::vector<float> none(8, 0.f), loss(1, 5.f);
  auto gnone = t.device(none);
  for (const HeatmapLoss* type : heatmap_losses()) {
    INFO("loss " << type->name());
    t.gpu->heatmap_loss({gp.data(), s}, {gt.data(), s}, gnone.data(), *type, gloss.data(),
                        gd.data(), 1.f, t.gs());
    CHECK(t.host(gloss) == std::vector<float>{0.f});
    CHECK(t.host(gd) == std::vector<float>(s.numel(), 0.f));
  }
}

TEST_CASE("cuda soft-argmax with confidence", "[gpu]") {
  Twins t;
  const Shape4 s{2, 3, 12, 10};
  // Peaked heatmaps, as the head produces after its softmax.
  std::vector<float> kp{2.f, 3.f, 7.4f, 6.2f, 9.f, 11.f, 0.5f, 0.5f, 5.f, 5.f, 4.2f, 8.8f};
  std::vector<float> maps(s.numel());
  t.cpu->heatmap_targets(kp.data(), {maps.data(), s}, 1.25f, nullptr, t.cs());
  auto noise = random_vector(s.numel(), 101, 0.f, 1e-3f);
  for (std::size_t i = 0; i < maps.size(); ++i) maps[i] += noise[i];
  auto gmaps = t.device(maps), gc = t.zeros(12), gconf = t.zeros(6);
  for (int d : {0, 1, 2, 3}) {
    std::vector<float> c(12), conf(6);
    t.gpu->soft_argmax({gmaps.data(), s}, d, 1000.f, gc.data(), gconf.data(), t.gs());
    t.cpu->soft_argmax({maps.data(), s}, d, 1000.f, c.data(), conf.data(), t.cs());
    INFO("downsample factor " << d);
    CHECK(rel_error(t.host(gc), c) < kTolerance);
    CHECK(rel_error(t.host(gconf), conf) < kTolerance);
  }
  t.gpu->soft_argmax({gmaps.data(), s}, 2, 1000.f, gc.data(), nullptr, t.gs());  // no confidence
  t.gs().synchronize();
}

TEST_CASE("cuda soft-argmax backward", "[gpu]") {
  Twins t;
  const Shape4 s{2, 3, 12, 10};
  std::vector<float> kp{2.f, 3.f, 7.4f, 6.2f, 9.f, 11.f, 0.5f, 0.5f, 5.f, 5.f, 4.2f, 8.8f};
  std::vector<float> maps(s.numel());
  t.cpu->heatmap_targets(kp.data(), {maps.data(), s}, 1.25f, nullptr, t.cs());
  auto noise = random_vector(s.numel(), 102, 0.f, 1e-3f);
  for (std::size_t i = 0; i < maps.size(); ++i) maps[i] += noise[i];
  const auto dcoords = random_vector(12, 103);
  auto gmaps = t.device(maps), gdc = t.device(dcoords), gd = t.zeros(s.numel());
  for (int d : {0, 1, 2, 3}) {
    std::vector<float> dm(s.numel());
    t.gpu->soft_argmax_backward({gmaps.data(), s}, d, 1000.f, gdc.data(), {gd.data(), s}, t.gs());
    t.cpu->soft_argmax_backward({maps.data(), s}, d, 1000.f, dcoords.data(), {dm.data(), s}, t.cs());
    INFO("downsample factor " << d);
    CHECK(rel_error(t.host(gd), dm) < kTolerance);
  }
}

namespace {
// Heatmaps as the head produces them: a Gaussian (sigma 1.25) per plane at a
// random place, plus noise.
std::vector<float> peaked_heatmaps(Backend& cpu, Shape4 s, unsigned seed) {
  const std::size_t planes = std::size_t(s.n) * s.c;
  const auto kx = random_vector(planes, seed, 0.f, float(s.w) - 1.f);
  const auto ky = random_vector(planes, seed + 1, 0.f, float(s.h) - 1.f);
  std::vector<float> kp(2 * planes), maps(s.numel());
  for (std::size_t i = 0; i < planes; ++i) kp[2 * i] = kx[i], kp[2 * i + 1] = ky[i];
  cpu.heatmap_targets(kp.data(), {maps.data(), s}, 1.25f, nullptr, cpu.default_stream());
  const auto noise = random_vector(s.numel(), seed + 2, 0.f, 1e-3f);
  for (std::size_t i = 0; i < maps.size(); ++i) maps[i] += noise[i];
  return maps;
}

// The soft-argmax forward and backward on both backends; returns the three
// relative errors (coords, confidence, gradient) and prints them (docs/GPU.md).
struct SoftArgmaxErrors {
  double coords = 1, confidence = 1, gradient = 1;
};
SoftArgmaxErrors compare_soft_argmax(Twins& t, Shape4 s, int d, const std::vector<float>& maps, unsigned seed) {
  const std::size_t planes = std::size_t(s.n) * s.c;
  const auto dcoords = random_vector(2 * planes, seed);
  auto gmaps = t.device(maps), gdc = t.device(dcoords), gc = t.zeros(2 * planes), gconf = t.zeros(planes);
  auto gd = t.zeros(s.numel());
  t.gpu->soft_argmax({gmaps.data(), s}, d, 1000.f, gc.data(), gconf.data(), t.gs());
  t.gpu->soft_argmax_backward({gmaps.data(), s}, d, 1000.f, gdc.data(), {gd.data(), s}, t.gs());
  std::vector<float> c(2 * planes), conf(planes), dm(s.numel());
  t.cpu->soft_argmax({maps.data(), s}, d, 1000.f, c.data(), conf.data(), t.cs());
  t.cpu->soft_argmax_backward({maps.data(), s}, d, 1000.f, dcoords.data(), {dm.data(), s}, t.cs());
  SoftArgmaxErrors e{rel_error(t.host(gc), c), rel_error(t.host(gconf), conf), rel_error(t.host(gd), dm)};
  std::printf("cuda soft-argmax vs CPU, %s d=%d T=1000: coords %.2e, confidence %.2e, gradient %.2e\n",
              s.str().c_str(), d, e.coords, e.confidence, e.gradient);
  return e;
}
}  // namespace

TEST_CASE("cuda soft-argmax at training size (16 x 17 keypoints, 64 x 64 maps, d = 2, T = 1000)", "[gpu]") {
  Twins t;
  const Shape4 s{16, 17, 64, 64};
  // 272 planes of 256 x 256 after upsampling: three chunks (128, 128, 16) within
  // the 64 MiB scratch bound.
  const int planes = s.n * s.c;
  REQUIRE(kernels::soft_argmax_chunk_planes(planes, s.h, s.w, 2) < planes);
  const auto maps = peaked_heatmaps(*t.cpu, s, 120);
  const SoftArgmaxErrors e = compare_soft_argmax(t, s, 2, maps, 123);
  // The kernels do the CPU twin's float arithmetic op for op (the upsampling and
  // its adjoint bit for bit; tests/unit/compute/test_soft_argmax_emulation.cpp):
  // what is left is the order of double sums and exp's last bit (the host
  // emulation of the kernels is within 2e-7 of the CPU).
  CHECK(e.coords < kTolerance);
  CHECK(e.confidence < kTolerance);
  CHECK(e.gradient < kTolerance);
}

TEST_CASE("cuda soft-argmax: any chunk size gives the same bits (one chunk, the bound's, chunks of 5)", "[gpu]") {
  Twins t;
  const Shape4 s{16, 17, 64, 64};
  const int planes = s.n * s.c, d = 2;
  const auto maps = peaked_heatmaps(*t.cpu, s, 140);
  const auto dcoords = random_vector(2 * std::size_t(planes), 141);
  auto gmaps = t.device(maps), gdc = t.device(dcoords);
  auto stream = static_cast<cudaStream_t>(t.gs().native());
  // One scratch for the largest chunk (all planes: 142 MB), shared by every run.
  DeviceBuffer scratch(*t.gpu, kernels::soft_argmax_scratch_floats(planes, s.h, s.w, d));
  std::vector<float> coords[3], conf[3], grad[3];
  const int chunks[3] = {planes, kernels::soft_argmax_chunk_planes(planes, s.h, s.w, d), 5};  // 5: the last holds 2
  for (int k = 0; k < 3; ++k) {
    INFO("chunk " << chunks[k]);
    auto gc = t.zeros(2 * std::size_t(planes)), gconf = t.zeros(planes), gd = t.zeros(s.numel());
    t.gpu->fill(gc.data(), NAN, gc.size(), t.gs());  // every plane must be written
    t.gpu->fill(gd.data(), NAN, gd.size(), t.gs());
    kernels::soft_argmax(gmaps.data(), planes, s.h, s.w, d, 1000.f, gc.data(), gconf.data(), chunks[k],
                         scratch.data(), stream);
    kernels::soft_argmax_backward(gmaps.data(), planes, s.h, s.w, d, 1000.f, gdc.data(), gd.data(), chunks[k],
                                  scratch.data(), stream);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    coords[k] = t.host(gc);
    conf[k] = t.host(gconf);
    grad[k] = t.host(gd);
    for (float v : coords[k]) REQUIRE(std::isfinite(v));
    for (float v : grad[k]) REQUIRE(std::isfinite(v));
  }
  for (int k = 1; k < 3; ++k) {
    INFO("chunk " << chunks[k] << " against one chunk of " << planes);
    CHECK(coords[k] == coords[0]);
    CHECK(conf[k] == conf[0]);
    CHECK(grad[k] == grad[0]);
  }
}

TEST_CASE("cuda fused Adam and AdamW", "[gpu]") {
  Twins t;
  const std::size_t n = 70001;
  for (bool decoupled : {false, true}) {
    auto p = random_vector(n, 111), m = std::vector<float>(n, 0.f), v = std::vector<float>(n, 0.f);
    auto gp = t.device(p), gm = t.device(m), gv = t.device(v);
    AdamParams a;
    a.lr = 1e-3f;
    a.weight_decay = 0.01f;
    a.decoupled_weight_decay = decoupled;
    for (long step = 1; step <= 5; ++step) {
      auto g = random_vector(n, 200 + unsigned(step));
      auto gg = t.device(g);
      a.step = step;
      t.gpu->adam_update(gp.data(), gg.data(), gm.data(), gv.data(), n, a, t.gs());
      t.cpu->adam_update(p.data(), g.data(), m.data(), v.data(), n, a, t.cs());
      t.gs().synchronize();  // gg goes out of scope
    }
    INFO((decoupled ? "AdamW" : "Adam"));
    CHECK(rel_error(t.host(gp), p) < kTolerance);
    CHECK(rel_error(t.host(gm), m) < kTolerance);
    CHECK(rel_error(t.host(gv), v) < kTolerance);
  }
}
