// The 16-bit NHWC activation kernels (kernels/nhwc16.cu) against their CPU twins
// (the CPU backend's ops on 16-bit views, compute/cpu/cpu_storage16.hpp), the
// convolutions reading and writing 16-bit storage in place, and whole ResNet steps
// in 16-bit storage against fp32 activations (TRAINER_NHWC16=0, the path measured
// on 2026-11-26). Both sides read the same 16-bit values and round once on store,
// so element-wise results differ by at most one 16-bit ulp (an FMA on the device
// against a multiply and an add on the host), and per-channel sums only by fp32
// summation order.
#include <catch2/catch.hpp>

#include <algorithm>  // std::max
#include <cmath>      // std::sqrt, std::fabs, std::floor, std::isnan, NAN
#include <cstdint>    // std::uint16_t
#include <vector>     // std::vector

#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"  // HeatmapModel

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {

double tolerance16(Precision p) { return p == Precision::bf16 ? 1e-2 : 1e-3; }

// One tensor in 16-bit storage on both backends, made from the same fp32 values.
struct Tensor16 {
  Shape4 shape;
  Storage storage;
  std::vector<std::uint16_t> host;  // the CPU twin's copy
  DeviceBuffer device;
  TensorView cpu() { return {reinterpret_cast<float*>(host.data()), shape, storage}; }
  TensorView gpu() { return {device.data(), shape, storage}; }
};

struct Pair16 {
  Precision precision;
  Storage storage = storage_16bit_of(precision);
  std::unique_ptr<Backend> cpu = make_cpu_backend(2, precision);
  std::unique_ptr<Backend> gpu = make_cuda_backend(0, precision);

  Tensor16 make(Shape4 d, const std::vector<float>& values) {
    Tensor16 t{d, storage, std::vector<std::uint16_t>(d.numel()), DeviceBuffer(*gpu, storage_floats(d.numel(), storage))};
    cpu->convert_storage({values.data(), d}, t.cpu(), cpu->default_stream());
    gpu->upload(t.device.data(), reinterpret_cast<const float*>(t.host.data()), storage_floats(d.numel(), storage),
                gpu->default_stream());
    return t;
  }
  Tensor16 zeros(Shape4 d) { return make(d, std::vector<float>(d.numel(), 0.f)); }
  // Both copies as fp32 NCHW: {gpu's, cpu's}.
  std::pair<std::vector<float>, std::vector<float>> values(Tensor16& t) {
    std::vector<std::uint16_t> bits(t.shape.numel());
    gpu->download(reinterpret_cast<float*>(bits.data()), t.device.data(), storage_floats(bits.size(), storage),
                  gpu->default_stream());
    gpu->default_stream().synchronize();
    std::vector<float> g(bits.size()), c(bits.size());
    cpu->convert_storage({reinterpret_cast<float*>(bits.data()), t.shape, storage}, {g.data(), t.shape},
                         cpu->default_stream());
    cpu->convert_storage(t.cpu(), {c.data(), t.shape}, cpu->default_stream());
    return {g, c};
  }
  DeviceBuffer device(const std::vector<float>& v) {
    DeviceBuffer b(*gpu, v.size());
    gpu->upload(b.data(), v.data(), v.size(), gpu->default_stream());
    return b;
  }
  std::vector<float> host(const DeviceBuffer& b) {
    std::vector<float> v(b.size());
    gpu->download(v.data(), b.data(), v.size(), gpu->default_stream());
    gpu->default_stream().synchronize();
    return v;
  }
};

}  // namespace

TEST_CASE("cuda 16-bit NHWC conversion, batch norm, pooling and elementwise kernels match the CPU twins",
          "[gpu][storage16]") {
  // 64 channels take the 16-byte path, 6 the one-value path. 8 x 64 x 32 x 32 splits
  // the rows of the channel sums over 8 blocks (their partials summed in a second
  // pass); 300 channels (one value per thread) fill 256 lanes and a second chunk of 44.
  for (const Shape4 d : {Shape4{4, 64, 9, 7}, Shape4{3, 6, 5, 4}, Shape4{8, 64, 32, 32}, Shape4{2, 300, 5, 5}}) {
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      INFO(precision_name(p) << " " << d.str());
      Pair16 t{p};
      Stream& gs = t.gpu->default_stream();
      Stream& cs = t.cpu->default_stream();
      const int c = d.c;
      const auto xv = random_vector(d.numel(), 401, -2.f, 2.f);
      // The conversion kernels: the same bits as the host rules.
      DeviceBuffer gx32 = t.device(xv);
      Tensor16 x = t.make(d, xv), r = t.make(d, random_vector(d.numel(), 402)),
               dy = t.make(d, random_vector(d.numel(), 403)), y = t.zeros(d), dx = t.zeros(d);
      Tensor16 converted = t.zeros(d);
      t.gpu->convert_storage({gx32.data(), d}, converted.gpu(), gs);
      CHECK(t.values(converted).first == t.values(x).second);
      DeviceBuffer back(*t.gpu, d.numel());
      t.gpu->convert_storage(x.gpu(), {back.data(), d}, gs);
      CHECK(t.host(back) == t.values(x).second);

      const auto mean = random_vector(c, 404, -0.5f, 0.5f), invstd = random_vector(c, 405, 0.5f, 2.f),
                 gamma = random_vector(c, 406, -1.5f, 1.5f), beta = random_vector(c, 407, -0.5f, 0.5f);
      auto gmean = t.device(mean), ginv = t.device(invstd), ggamma = t.device(gamma), gbeta = t.device(beta);

      // Statistics: moments and plain sums.
      DeviceBuffer gm(*t.gpu, batchnorm_moments_size(c)), gsum(*t.gpu, 2 * std::size_t(c));
      std::vector<float> m(batchnorm_moments_size(c)), sums(2 * c);
      t.gpu->batchnorm_moments(x.gpu(), gm.data(), gs);
      t.cpu->batchnorm_moments(x.cpu(), m.data(), cs);
      {
        // Each part on its own scale (compute/batchnorm_moments.hpp's layout): the means
        // (two floats each) are ~0.03 against an M2 of ~count and the count itself.
        const auto g = t.host(gm);
        double mean_error = 0;
        for (int ch = 0; ch < c; ++ch)
          mean_error = std::max(mean_error, std::fabs((double(g[ch]) + g[c + ch]) - (double(m[ch]) + m[c + ch])));
        CHECK(mean_error < 1e-6);
        const std::vector<float> m2_g(g.begin() + 2 * c, g.begin() + 3 * c), m2_c(m.begin() + 2 * c, m.begin() + 3 * c);
        CHECK(rel_error(m2_g, m2_c) < kTolerance);
        CHECK(g[3 * c] == m[3 * c]);  // the count
      }
      t.gpu->batchnorm_stats(x.gpu(), gsum.data(), gs);
      t.cpu->batchnorm_stats(x.cpu(), sums.data(), cs);
      CHECK(rel_error(t.host(gsum), sums) < kTolerance);

      // Apply: plain, with ReLU, with residual and ReLU.
      for (int mode = 0; mode < 3; ++mode) {
        INFO("apply mode " << mode);
        if (mode == 0) {
          t.gpu->batchnorm_apply(x.gpu(), gmean.data(), ginv.data(), ggamma.data(), gbeta.data(), y.gpu(), gs);
          t.cpu->batchnorm_apply(x.cpu(), mean.data(), invstd.data(), gamma.data(), beta.data(), y.cpu(), cs);
        } else {
          t.gpu->batchnorm_apply_relu(x.gpu(), gmean.data(), ginv.data(), ggamma.data(), gbeta.data(),
                                      mode == 2 ? r.device.data() : nullptr, y.gpu(), gs);
          t.cpu->batchnorm_apply_relu(x.cpu(), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                      mode == 2 ? r.cpu().data : nullptr, y.cpu(), cs);
        }
        const auto [g, h] = t.values(y);
        CHECK(rel_error(g, h) < tolerance16(p));
      }

      // Backward: reduce and apply, plain and through the ReLU.
      const double count = double(d.n) * d.h * d.w;
      for (bool relu : {false, true}) {
        INFO("backward relu " << relu);
        DeviceBuffer greduce(*t.gpu, 2 * std::size_t(c));
        std::vector<float> reduce(2 * c);
        if (relu) {
          t.gpu->batchnorm_relu_backward_reduce(dy.gpu(), x.gpu(), gmean.data(), ginv.data(), ggamma.data(),
                                                gbeta.data(), greduce.data(), gs);
          t.cpu->batchnorm_relu_backward_reduce(dy.cpu(), x.cpu(), mean.data(), invstd.data(), gamma.data(),
                                                beta.data(), reduce.data(), cs);
        } else {
          t.gpu->batchnorm_backward_reduce(dy.gpu(), x.gpu(), gmean.data(), greduce.data(), gs);
          t.cpu->batchnorm_backward_reduce(dy.cpu(), x.cpu(), mean.data(), reduce.data(), cs);
        }
        CHECK(rel_error(t.host(greduce), reduce) < kTolerance);
        auto same_reduce = t.device(reduce);  // so dx compares the apply alone
        if (relu) {
          t.gpu->batchnorm_relu_backward_apply(dy.gpu(), x.gpu(), gmean.data(), ginv.data(), ggamma.data(),
                                               gbeta.data(), same_reduce.data(), count, dx.gpu(), gs);
          t.cpu->batchnorm_relu_backward_apply(dy.cpu(), x.cpu(), mean.data(), invstd.data(), gamma.data(),
                                               beta.data(), reduce.data(), count, dx.cpu(), cs);
        } else {
          t.gpu->batchnorm_backward_apply(dy.gpu(), x.gpu(), gmean.data(), ginv.data(), ggamma.data(),
                                          same_reduce.data(), count, dx.gpu(), gs);
          t.cpu->batchnorm_backward_apply(dy.cpu(), x.cpu(), mean.data(), invstd.data(), gamma.data(), reduce.data(),
                                          count, dx.cpu(), cs);
        }
        const auto [g, h] = t.values(dx);
        CHECK(rel_error(g, h) < tolerance16(p));
      }

      // Max pooling 3x3 / 2, pad 1 (the stem's), forward and backward.
      PoolGeometry pool;
      const Shape4 pd{d.n, d.c, (d.h + 2 - 3) / 2 + 1, (d.w + 2 - 3) / 2 + 1};
      Tensor16 py = t.zeros(pd), pdy = t.make(pd, random_vector(pd.numel(), 408)), pdx = t.zeros(d);
      t.gpu->maxpool2d_forward(x.gpu(), py.gpu(), pool, gs);
      t.cpu->maxpool2d_forward(x.cpu(), py.cpu(), pool, cs);
      {
        const auto [g, h] = t.values(py);
        CHECK(g == h);  // a copy of one input: exact
      }
      t.gpu->maxpool2d_backward(x.gpu(), pdy.gpu(), pdx.gpu(), pool, gs);
      t.cpu->maxpool2d_backward(x.cpu(), pdy.cpu(), pdx.cpu(), pool, cs);
      {
        const auto [g, h] = t.values(pdx);
        CHECK(g == h);  // the same sums in the same order
      }

      // The residual join's ReLU backward and gradient add.
      t.gpu->relu_backward_tensor(x.gpu(), dy.gpu(), dx.gpu(), gs);
      t.cpu->relu_backward_tensor(x.cpu(), dy.cpu(), dx.cpu(), cs);
      {
        const auto [g, h] = t.values(dx);
        CHECK(g == h);
      }
      t.gpu->accumulate_tensor(r.gpu(), dx.gpu(), gs);
      t.cpu->accumulate_tensor(r.cpu(), dx.cpu(), cs);
      {
        const auto [g, h] = t.values(dx);
        CHECK(g == h);  // one fp32 add of exact values, one rounding
      }
    }
  }
}

// TRAINER_BN_KERNELS: the tiled batch-norm kernels (the default) against the flat ones an
// H200 ran on 2026-11-27, on the same GPU; and TRAINER_BN_WIDE_SUMS: the tiled channel
// sums of layers over 32 lanes in blocks of 32 lanes by 8 rows (the default since
// 2026-11-28) against the tiled layout that ran ("lane rows"). Element-wise results
// are the same bits (the same arithmetic per value); per-channel sums add their double
// partials in another fixed order before rounding to float.
TEST_CASE("cuda tiled batch-norm kernels give the 2026-11-27 kernels' values (TRAINER_BN_KERNELS=0)",
          "[gpu][storage16]") {
  // 16 x 64 x 128 x 128: 262,144 rows in 256 splits, eight per lane of the split sums,
  // and many rows per thread; 2048 channels: one chunk of 256 lanes (ResNet-50's last
  // stage) in the 2026-11-27 layout, 8 chunks of 32 lanes in the wide one; 300 and 6
  // channels: one value per thread, 300 in two chunks (ten of 32 in the wide layout).
  // With at most 32 splits (the second to fourth: 16, 11 and 2) each lane holds one partial
  // and lane 0 adds them in split order, so the 2026-11-27 layout's sums are the flat
  // kernels' bits too. `wide`: whether the wide layout applies (more than 32 lanes).
  // The last two reach the wide layout's cap on splits (kMaxSplits / chunks): 512
  // channels of 32 x 32 at batch 40 (64 lanes, 2 chunks, 640 splits wanted, 512 run),
  // and 2044 channels (one a thread: 64 chunks, 20 splits wanted, 16 run).
  struct Case {
    Shape4 d;
    bool same_bits, wide;
  };
  for (const Case k : {Case{Shape4{16, 64, 128, 128}, false, false}, Case{Shape4{8, 2048, 8, 8}, true, true},
                       Case{Shape4{4, 300, 9, 9}, true, true}, Case{Shape4{2, 6, 33, 31}, true, false},
                       Case{Shape4{40, 512, 32, 32}, false, true}, Case{Shape4{5, 2044, 16, 16}, false, true}}) {
    const Shape4 d = k.d;
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      INFO(precision_name(p) << " " << d.str());
      Pair16 t{p};
      Backend& gpu = *t.gpu;
      Stream& gs = gpu.default_stream();
      const int c = d.c;
      Tensor16 x = t.make(d, random_vector(d.numel(), 511, -2.f, 2.f)), r = t.make(d, random_vector(d.numel(), 512)),
               dy = t.make(d, random_vector(d.numel(), 513)), out = t.zeros(d);
      auto mean = t.device(random_vector(c, 514, -0.5f, 0.5f)), invstd = t.device(random_vector(c, 515, 0.5f, 2.f)),
           gamma = t.device(random_vector(c, 516, -1.5f, 1.5f)), beta = t.device(random_vector(c, 517, -0.5f, 0.5f)),
           reduce = t.device(random_vector(2 * std::size_t(c), 518, -100.f, 100.f));
      const double count = double(d.n) * d.h * d.w;
      struct Results {
        std::vector<float> moments, stats;
        std::vector<std::vector<float>> reduces, elementwise;
      };
      enum class Kernels { flat, lane_rows, wide };
      const auto run = [&](Kernels kernels) {
        gpu.set_tiled_batchnorm(kernels != Kernels::flat);
        gpu.set_wide_sum_blocks16(kernels == Kernels::wide);
        Results res;
        DeviceBuffer m(gpu, batchnorm_moments_size(c)), sums(gpu, 2 * std::size_t(c));
        gpu.batchnorm_moments(x.gpu(), m.data(), gs);
        res.moments = t.host(m);
        gpu.batchnorm_stats(x.gpu(), sums.data(), gs);
        res.stats = t.host(sums);
        gpu.batchnorm_apply(x.gpu(), mean.data(), invstd.data(), gamma.data(), beta.data(), out.gpu(), gs);
        res.elementwise.push_back(t.values(out).first);
        const float* residuals[] = {nullptr, r.device.data()};
        for (const float* residual : residuals) {
          gpu.batchnorm_apply_relu(x.gpu(), mean.data(), invstd.data(), gamma.data(), beta.data(), residual, out.gpu(),
                                   gs);
          res.elementwise.push_back(t.values(out).first);
        }
        gpu.batchnorm_backward_reduce(dy.gpu(), x.gpu(), mean.data(), sums.data(), gs);
        res.reduces.push_back(t.host(sums));
        gpu.batchnorm_relu_backward_reduce(dy.gpu(), x.gpu(), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                           sums.data(), gs);
        res.reduces.push_back(t.host(sums));
        // Both kernels sets apply the same reduce, so dx compares the apply alone.
        gpu.batchnorm_backward_apply(dy.gpu(), x.gpu(), mean.data(), invstd.data(), gamma.data(), reduce.data(), count,
                                     out.gpu(), gs);
        res.elementwise.push_back(t.values(out).first);
        gpu.batchnorm_relu_backward_apply(dy.gpu(), x.gpu(), mean.data(), invstd.data(), gamma.data(), beta.data(),
                                          reduce.data(), count, out.gpu(), gs);
        res.elementwise.push_back(t.values(out).first);
        return res;
      };
      // Sums added in another order: each part of the moments on its own scale
      // (compute/batchnorm_moments.hpp's layout): the means, two floats each, against
      // their size; M2; the count.
      const auto sums_close = [c](const Results& a, const Results& b) {
        double mean_error = 0;
        for (int ch = 0; ch < c; ++ch)
          mean_error = std::max(mean_error, std::fabs((double(a.moments[ch]) + a.moments[c + ch]) -
                                                      (double(b.moments[ch]) + b.moments[c + ch])));
        CHECK(mean_error < 1e-7);
        const auto m2 = [c](const std::vector<float>& m) {
          return std::vector<float>(m.begin() + 2 * c, m.begin() + 3 * c);
        };
        CHECK(rel_error(m2(a.moments), m2(b.moments)) < 1e-6);
        CHECK(a.moments[3 * c] == b.moments[3 * c]);  // the count
        CHECK(rel_error(a.stats, b.stats) < 1e-6);
        for (std::size_t i = 0; i < b.reduces.size(); ++i) CHECK(rel_error(a.reduces[i], b.reduces[i]) < 1e-6);
      };
      const Results flat = run(Kernels::flat), lane_rows = run(Kernels::lane_rows), wide = run(Kernels::wide);
      if (k.same_bits) {
        CHECK(lane_rows.moments == flat.moments);
        CHECK(lane_rows.stats == flat.stats);
        CHECK(lane_rows.reduces == flat.reduces);
      } else {
        sums_close(lane_rows, flat);
      }
      if (k.wide) {
        INFO("blocks of 32 lanes by 8 rows against the lane rows");
        sums_close(wide, lane_rows);
      } else {
        CHECK(wide.moments == lane_rows.moments);
        CHECK(wide.stats == lane_rows.stats);
        CHECK(wide.reduces == lane_rows.reduces);
      }
      REQUIRE(lane_rows.elementwise.size() == 5);
      for (std::size_t i = 0; i < flat.elementwise.size(); ++i) {
        INFO("element-wise op " << i << " (apply, with ReLU, with residual and ReLU, backward, through the ReLU)");
        CHECK(lane_rows.elementwise[i] == flat.elementwise[i]);
        CHECK(wide.elementwise[i] == flat.elementwise[i]);
      }
    }
  }
}

TEST_CASE("cuda 16-bit max pooling keeps the tie and NaN rules with 8 channels a thread", "[gpu][storage16]") {
  // Few distinct values (ties in most windows) and some NaNs; 16 channels take the
  // 8-channel kernels, 6 the per-value ones: both must give the CPU twin's bits.
  for (const Shape4 d : {Shape4{2, 16, 9, 11}, Shape4{2, 6, 9, 11}}) {
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      INFO(precision_name(p) << " " << d.str());
      Pair16 t{p};
      std::vector<float> values = random_vector(d.numel(), 521, 0.f, 4.f);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = i % 37 == 5 ? NAN : std::floor(values[i]);
      const Shape4 pd{d.n, d.c, (d.h + 2 - 3) / 2 + 1, (d.w + 2 - 3) / 2 + 1};
      Tensor16 x = t.make(d, values), y = t.zeros(pd), dy = t.make(pd, random_vector(pd.numel(), 522)),
               dx = t.zeros(d);
      PoolGeometry pool;
      t.gpu->maxpool2d_forward(x.gpu(), y.gpu(), pool, t.gpu->default_stream());
      t.cpu->maxpool2d_forward(x.cpu(), y.cpu(), pool, t.cpu->default_stream());
      const auto [gy, hy] = t.values(y);
      std::size_t differ = 0;  // NaN != NaN: compare the bits' meaning
      for (std::size_t i = 0; i < gy.size(); ++i)
        differ += !(gy[i] == hy[i] || (std::isnan(gy[i]) && std::isnan(hy[i])));
      CHECK(differ == 0);
      t.gpu->maxpool2d_backward(x.gpu(), dy.gpu(), dx.gpu(), pool, t.gpu->default_stream());
      t.cpu->maxpool2d_backward(x.cpu(), dy.cpu(), dx.cpu(), pool, t.cpu->default_stream());
      const auto [gd, hd] = t.values(dx);
      CHECK(gd == hd);
    }
  }
}

TEST_CASE("cuda 16-bit element-wise kernels take one value per thread on views not 16-byte aligned",
          "[gpu][storage16]") {
  // 512 values, a multiple of 8: only the views' 2-byte offset keeps the 16-byte packs out.
  const Shape4 d{2, 16, 4, 4};
  const Shape4 flat{1, 1, 1, int(d.numel()) + 8};
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO(precision_name(p));
    Pair16 t{p};
    Tensor16 y = t.make(flat, random_vector(flat.numel(), 501)), dy = t.make(flat, random_vector(flat.numel(), 502)),
             dx = t.zeros(flat);
    const auto offset = [&](Tensor16& x, bool gpu) {  // the view one 16-bit value in
      auto* base = gpu ? reinterpret_cast<std::uint16_t*>(x.device.data()) : x.host.data();
      return TensorView{reinterpret_cast<float*>(base + 1), d, t.storage};
    };
    t.gpu->relu_backward_tensor(offset(y, true), offset(dy, true), offset(dx, true), t.gpu->default_stream());
    t.cpu->relu_backward_tensor(offset(y, false), offset(dy, false), offset(dx, false), t.cpu->default_stream());
    {
      const auto [g, h] = t.values(dx);
      CHECK(g == h);
    }
    t.gpu->accumulate_tensor(offset(y, true), offset(dx, true), t.gpu->default_stream());
    t.cpu->accumulate_tensor(offset(y, false), offset(dx, false), t.cpu->default_stream());
    {
      const auto [g, h] = t.values(dx);
      CHECK(g == h);
    }
    // The channel sums on such a view: 16 channels, but one channel a thread, so the
    // layout (lanes, splits, scratch) must be the one-channel one.
    DeviceBuffer gsum(*t.gpu, 2 * std::size_t(d.c));
    std::vector<float> sums(2 * std::size_t(d.c));
    t.gpu->batchnorm_stats(offset(y, true), gsum.data(), t.gpu->default_stream());
    t.cpu->batchnorm_stats(offset(y, false), sums.data(), t.cpu->default_stream());
    CHECK(rel_error(t.host(gsum), sums) < 1e-6);
  }
}

TEST_CASE("cuda convolutions read and write 16-bit storage in place, as the cast path computes",
          "[gpu][storage16]") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO(precision_name(p));
    Pair16 t{p};
    Stream& gs = t.gpu->default_stream();
    ConvGeometry g;
    g.in_channels = 16;
    g.out_channels = 32;
    g.kernel = 3;
    g.stride = 2;
    g.pad = 1;
    const Shape4 xs{2, 16, 15, 14}, ys{2, 32, g.conv_out(15), g.conv_out(14)};
    const auto xv = random_vector(xs.numel(), 501, -2.f, 2.f), dyv = random_vector(ys.numel(), 502);
    const auto w = random_vector(std::size_t(32) * 16 * 9, 503);
    auto gw = t.device(w);
    Tensor16 x = t.make(xs, xv), dy = t.make(ys, dyv), y = t.zeros(ys), dx = t.zeros(xs);
    // The fp32 path's operands: the same 16-bit values, as fp32 NCHW.
    auto x32 = t.device(t.values(x).second), dy32 = t.device(t.values(dy).second);
    DeviceBuffer y32(*t.gpu, ys.numel()), dx32(*t.gpu, xs.numel()), dw32(*t.gpu, w.size()), dw16(*t.gpu, w.size());
    t.gpu->conv2d_forward(x.gpu(), gw.data(), y.gpu(), g, gs);
    t.gpu->conv2d_forward({x32.data(), xs}, gw.data(), {y32.data(), ys}, g, gs);
    CHECK(t.values(y).first == t.host(y32));  // the same cuDNN call on the same bits
    t.gpu->conv2d_backward(x.gpu(), dy.gpu(), gw.data(), dw16.data(), dx.gpu(), g, gs);
    t.gpu->conv2d_backward({x32.data(), xs}, {dy32.data(), ys}, gw.data(), dw32.data(), {dx32.data(), xs}, g, gs);
    // Some backward algorithms add with atomics, so only the forward is compared bit for bit.
    CHECK(rel_error(t.host(dw16), t.host(dw32)) < tolerance16(p));
    CHECK(rel_error(t.values(dx).first, t.host(dx32)) < tolerance16(p));
    // And against the CPU emulation.
    std::vector<float> yc(ys.numel());
    t.cpu->conv2d_forward(x.cpu(), w.data(), {yc.data(), ys}, g, t.cpu->default_stream());
    CHECK(rel_error(t.host(y32), yc) < tolerance16(p));
  }
}

namespace {
double l2_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

// Heatmaps and gradients of one ResNet forward/backward on the GPU in `precision`,
// with 16-bit or fp32 activation storage, for a random O(1) gradient at the heatmaps.
std::pair<std::vector<float>, std::vector<float>> gpu_step(const char* backbone, Precision precision, bool storage16) {
  auto b = make_cuda_backend(0, precision);
  b->set_activation_storage(storage16 ? storage_16bit_of(precision) : Storage::f32_nchw);
  auto& s = b->default_stream();
  model::HeatmapModel m(*b, model::ModelSpec{backbone, 17, 2});
  m.initialize(5, s);
  const Shape4 in{4, 3, 128, 128};
  const auto images = random_vector(in.numel(), 301);
  DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  const auto g = random_vector(y.shape.numel(), 302);
  DeviceBuffer dpred(*b, y.shape.numel());
  b->upload(dpred.data(), g.data(), g.size(), s);
  std::vector<float> heatmaps(y.shape.numel()), grads(m.store().parameter_count());
  b->download(heatmaps.data(), y.data, heatmaps.size(), s);
  m.backward(ctx, {dpred.data(), y.shape}, true);
  b->download(grads.data(), m.store().grads_data(), grads.size(), s);
  s.synchronize();
  return {heatmaps, grads};
}
}  // namespace

TEST_CASE("cuda ResNet steps: 16-bit NHWC activations cost no more accuracy than the 16-bit convolutions",
          "[gpu][storage16]") {
  // As tests/unit/model/test_nhwc16_storage.cpp on the CPU: at initialization a
  // ResNet's gradients are ill-conditioned (bf16 rounding alone moves ResNet-50's by
  // O(1)), so both 16-bit paths are measured against fp32 and the storage may cost
  // at most a quarter more than the 16-bit convolutions do.
  for (const char* backbone : {"resnet18", "resnet50"}) {
    const auto exact = gpu_step(backbone, Precision::fp32, false);
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      INFO(backbone << " " << precision_name(p));
      const auto stored = gpu_step(backbone, p, true), convs = gpu_step(backbone, p, false);
      const double heat = l2_error(stored.first, convs.first);
      const double grads_stored = l2_error(stored.second, exact.second), grads_convs = l2_error(convs.second, exact.second);
      INFO("heatmaps 16-bit vs fp32 activations " << heat << "; gradients vs fp32: 16-bit activations " << grads_stored
                                                 << ", fp32 activations " << grads_convs);
      CHECK(heat < (p == Precision::bf16 ? 1e-3 : 1e-4));
      CHECK(grads_stored <= 1.25 * grads_convs + 0.02);
      CHECK(grads_stored > 0.0);
    }
  }
}
