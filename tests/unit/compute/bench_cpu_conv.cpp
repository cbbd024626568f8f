// Micro-benchmark of the convolutions of a ResNet-18 heatmap model at 128x128,
// batch 16 (the `trainer bench step` configuration). Hidden from normal runs:
//   build/tests/unit_tests "[bench]"   (threads: OMP_NUM_THREADS, default 2)
// Prints per-layer and total milliseconds for forward, backward data and backward
// weights; tests/parity/ops_bench_torch.py times PyTorch on the same shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {
struct Layer {
  const char* name;
  int cin, cout, kernel, stride, pad, size, count;  // count: how often it occurs
  bool deconv;
  bool needs_dx;  // the stem's input is the image: no gradient needed
};

// Best of `reps` calls after a warm-up (primitive creation, first touch), in ms.
// With TRAINER_BENCH_CPU_TIME=1 it measures process CPU time instead of wall time:
// on a shared, oversubscribed machine wall time mostly measures the scheduler; CPU
// time (run with OMP_WAIT_POLICY=passive so waiting threads sleep) measures work.
template <class F>
double time_ms(F&& f, int reps) {
  static const bool cpu_time = std::getenv("TRAINER_BENCH_CPU_TIME") != nullptr;
  f();
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    f();
    const double ms = cpu_time ? 1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC
                               : std::chrono::duration<double, std::milli>(
                                     std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
  }
  return best;
}
}  // namespace

TEST_CASE("benchmark: ResNet-18 heatmap model convolutions, 128x128, batch 16", "[.bench]") {
  const char* env = std::getenv("OMP_NUM_THREADS");
  auto be = make_cpu_backend(env ? 0 : 2);
  Stream& s = be->default_stream();
  const int N = 16, reps = 5;
  const Layer layers[] = {
      {"stem 7x7/2 3->64 @128", 3, 64, 7, 2, 3, 128, 1, false, false},
      {"l1 3x3 64->64 @32", 64, 64, 3, 1, 1, 32, 4, false, true},
      {"l2 3x3/2 64->128 @32", 64, 128, 3, 2, 1, 32, 1, false, true},
      {"l2 3x3 128->128 @16", 128, 128, 3, 1, 1, 16, 3, false, true},
      {"l2 ds 1x1/2 64->128 @32", 64, 128, 1, 2, 0, 32, 1, false, true},
      {"l3 3x3/2 128->256 @16", 128, 256, 3, 2, 1, 16, 1, false, true},
      {"l3 3x3 256->256 @8", 256, 256, 3, 1, 1, 8, 3, false, true},
      {"l3 ds 1x1/2 128->256 @16", 128, 256, 1, 2, 0, 16, 1, false, true},
      {"l4 3x3/2 256->512 @8", 256, 512, 3, 2, 1, 8, 1, false, true},
      {"l4 3x3 512->512 @4", 512, 512, 3, 1, 1, 4, 3, false, true},
      {"l4 ds 1x1/2 256->512 @8", 256, 512, 1, 2, 0, 8, 1, false, true},
      {"head deconv 128->17 @8", 128, 17, 3, 2, 1, 8, 1, true, true},
      {"head deconv 17->17 @16", 17, 17, 3, 2, 1, 16, 1, true, true},
  };
  std::printf("%s, batch %d, best of %d, %s time\n%-28s %9s %9s %9s  (ms per call; x count in totals)\n",
              be->description().c_str(), N, reps,
              std::getenv("TRAINER_BENCH_CPU_TIME") ? "process CPU" : "wall", "layer", "fwd", "bwd-data", "bwd-wght");
  double tf = 0, td = 0, tw = 0;
  for (const Layer& l : layers) {
    ConvGeometry g{l.cin, l.cout, l.kernel, l.stride, l.pad, l.deconv ? 1 : 0};
    const int out = l.deconv ? g.deconv_out(l.size) : g.conv_out(l.size);
    const Shape4 xs{N, l.cin, l.size, l.size}, ys{N, l.cout, out, out};
    auto x = random_vector(xs.numel(), 1), w = random_vector(std::size_t(l.cin) * l.cout * l.kernel * l.kernel, 2);
    auto dy = random_vector(ys.numel(), 3), b = random_vector(l.cout, 4);
    std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size()), db(b.size());
    double f, d = 0, wt;
    if (l.deconv) {
      f = time_ms([&] { be->deconv2d_forward({x.data(), xs}, w.data(), b.data(), {y.data(), ys}, g, s); }, reps);
      d = time_ms([&] { be->deconv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s); }, reps);
      wt = time_ms([&] { be->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, s); }, reps);
    } else {
      f = time_ms([&] { be->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, s); }, reps);
      if (l.needs_dx)
        d = time_ms([&] { be->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s); }, reps);
      wt = time_ms([&] { be->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, s); }, reps);
    }
    std::printf("%-28s %9.2f %9.2f %9.2f  x%d\n", l.name, f, d, wt, l.count);
    tf += f * l.count;
    td += d * l.count;
    tw += wt * l.count;
  }
  std::printf("%-28s %9.1f %9.1f %9.1f  total %.1f ms per step (convolutions only)\n", "total", tf,
              td, tw, tf + td + tw);
  CHECK(tf > 0);
}

TEST_CASE("benchmark: ResNet-18 non-convolution ops, 128x128, batch 16", "[.bench]") {
  const char* env = std::getenv("OMP_NUM_THREADS");
  auto be = make_cpu_backend(env ? 0 : 2);
  Stream& s = be->default_stream();
  const int N = 16, reps = 5;
  // (channels, size, how many BN+ReLU of that shape per step)
  struct Act { int c, size, count; };
  const Act acts[] = {{64, 64, 1}, {64, 32, 8}, {128, 16, 8}, {256, 8, 8}, {512, 4, 8}};
  double bn_f = 0, bn_b = 0, relu_f = 0, relu_b = 0;
  std::printf("%-22s %9s %9s %9s %9s  (ms per call)\n", "activation", "bn-fwd", "bn-bwd",
              "relu-fwd", "relu-bwd");
  for (const Act& a : acts) {
    const Shape4 xs{N, a.c, a.size, a.size};
    auto x = random_vector(xs.numel(), 1), dy = random_vector(xs.numel(), 2);
    std::vector<float> y(xs.numel()), dx(xs.numel()), gamma(a.c, 1.f), beta(a.c, 0.f),
        rm(a.c, 0.f), rv(a.c, 1.f), mean(a.c), invstd(a.c), stats(trainer::compute::batchnorm_moments_size(a.c)), red(2 * a.c),
        dg(a.c), db(a.c);
    const double cnt = double(N) * a.size * a.size;
    const double f = time_ms([&] {
      be->batchnorm_moments({x.data(), xs}, stats.data(), s);
      be->batchnorm_finalize(stats.data(), 1, a.c, 1e-5f, 0.1f, mean.data(), invstd.data(),
                             rm.data(), rv.data(), s);
      be->batchnorm_apply({x.data(), xs}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                          {y.data(), xs}, s);
    }, reps);
    const double b = time_ms([&] {
      be->batchnorm_backward_reduce({dy.data(), xs}, {x.data(), xs}, mean.data(), red.data(), s);
      be->batchnorm_param_grads(red.data(), invstd.data(), a.c, dg.data(), db.data(), s);
      be->batchnorm_backward_apply({dy.data(), xs}, {x.data(), xs}, mean.data(), invstd.data(),
                                   gamma.data(), red.data(), cnt, {dx.data(), xs}, s);
    }, reps);
    const double rf = time_ms([&] { be->relu_forward(x.data(), y.data(), x.size(), s); }, reps);
    const double rb = time_ms([&] { be->relu_backward(y.data(), dy.data(), dx.data(), x.size(), s); }, reps);
    std::printf("%-22s %9.2f %9.2f %9.2f %9.2f  x%d\n", xs.str().c_str(), f, b, rf, rb, a.count);
    bn_f += f * a.count;
    bn_b += b * a.count;
    relu_f += rf * a.count;
    relu_b += rb * a.count;
  }
  const PoolGeometry g{3, 2, 1};
  const Shape4 ps{N, 64, 64, 64}, pys{N, 64, 32, 32};
  auto px = random_vector(ps.numel(), 3), pdy = random_vector(pys.numel(), 4);
  std::vector<float> py(pys.numel()), pdx(ps.numel());
  const double mf = time_ms([&] { be->maxpool2d_forward({px.data(), ps}, {py.data(), pys}, g, s); }, reps);
  const double mb = time_ms([&] { be->maxpool2d_backward({px.data(), ps}, {pdy.data(), pys}, {pdx.data(), ps}, g, s); }, reps);
  std::printf("maxpool 3x3/2 %s: fwd %.2f bwd %.2f\n", ps.str().c_str(), mf, mb);
  std::printf("total: bn %.1f + %.1f, relu %.1f + %.1f, maxpool %.1f + %.1f = %.1f ms per step\n",
              bn_f, bn_b, relu_f, relu_b, mf, mb, bn_f + bn_b + relu_f + relu_b + mf + mb);
  CHECK(bn_f > 0);
}

TEST_CASE("benchmark: heatmap ops for 17 keypoints, 128x128 input (32x32 heatmaps), batch 16",
          "[.bench]") {
  const char* env = std::getenv("OMP_NUM_THREADS");
  auto be = make_cpu_backend(env ? 0 : 2);
  Stream& s = be->default_stream();
  const Shape4 hs{16, 17, 32, 32};
  auto raw = random_vector(hs.numel(), 5, -3.f, 3.f);
  std::vector<float> hm(hs.numel()), dx(hs.numel()), t(hs.numel()), mask(16 * 17), coords(16 * 17 * 2),
      conf(16 * 17), kp = random_vector(16 * 17 * 2, 6, 0.f, 31.f);
  float loss = 0;
  const double sf = time_ms([&] { be->spatial_softmax_forward({raw.data(), hs}, 1.f, {hm.data(), hs}, s); }, 5);
  const double sb = time_ms([&] { be->spatial_softmax_backward({hm.data(), hs}, {raw.data(), hs}, 1.f, {dx.data(), hs}, s); }, 5);
  const double tg = time_ms([&] { be->heatmap_targets(kp.data(), {t.data(), hs}, 1.25f, mask.data(), s); }, 5);
  const double ls = time_ms([&] { be->heatmap_loss({hm.data(), hs}, {t.data(), hs}, mask.data(), heatmap_mse_loss(), &loss, dx.data(), 1.f, s); }, 5);
  const double sa = time_ms([&] { be->soft_argmax({hm.data(), hs}, 2, 1000.f, coords.data(), conf.data(), s); }, 5);
  std::printf("%s: softmax fwd %.2f bwd %.2f, targets %.2f, mse loss+grad %.2f, soft-argmax (d=2) %.2f ms\n",
              hs.str().c_str(), sf, sb, tg, ls, sa);
  CHECK(sa > 0);
}
