// Backend::cache_filters16 on the GPU (src/compute/cuda/filter_cache.cpp): the
// 16-bit filter copies made for all filters in one launch give the convolutions the
// bits of their own per-call casts, the optimizer's update drops them, and a
// ResNet-18 trains alike with and without them (TRAINER_FILTER_CACHE=0).
#include <catch2/catch.hpp>

#include <vector>  // std::vector

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "gpu_test_util.hpp"
#include "host_batch.hpp"  // HostBatch
#include "model/heatmap_model.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"

using namespace trainer;
using namespace trainer::compute;
using compute::gpu_test::HostBatch;
using compute::gpu_test::random_vector;
using compute::gpu_test::rel_error;

TEST_CASE("cuda 16-bit filter copies give the per-convolution casts' bits; the update drops them",
          "[gpu][storage16]") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO(precision_name(p));
    auto gpu = make_cuda_backend(0, p);
    Stream& s = gpu->default_stream();
    const auto up = [&](const std::vector<float>& v) {
      DeviceBuffer b(*gpu, v.size());
      gpu->upload(b.data(), v.data(), v.size(), s);
      return b;
    };
    const auto down = [&](const DeviceBuffer& b) {
      std::vector<float> v(b.size());
      gpu->download(v.data(), b.data(), v.size(), s);
      s.synchronize();
      return v;
    };
    ConvGeometry g;
    g.in_channels = 24, g.out_channels = 40, g.kernel = 3, g.stride = 1, g.pad = 1;
    const Shape4 xs{2, 24, 11, 9}, ys{2, 40, 11, 9};
    auto x = up(random_vector(xs.numel(), 1, -2.f, 2.f));
    auto dy = up(random_vector(ys.numel(), 2));
    auto w = up(random_vector(std::size_t(40) * 24 * 9, 3));
    DeviceBuffer y(*gpu, ys.numel()), dx(*gpu, xs.numel());
    const auto run = [&] {
      gpu->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, s);
      gpu->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s);
      return std::make_pair(down(y), down(dx));
    };
    const auto plain = run();  // each convolution casts w itself
    // The filter, another of another shape, and a 1x1 one, cast in one launch.
    auto w1 = up(random_vector(std::size_t(16) * 40, 4)), w7 = up(random_vector(std::size_t(8) * 3 * 49, 5));
    const Backend::Filter filters[] = {{w7.data(), 8, 3, 7}, {w.data(), 40, 24, 3}, {w1.data(), 16, 40, 1}};
    gpu->cache_filters16(filters, 3, s);
    const auto cached = run();
    CHECK(cached.first == plain.first);  // the same 16-bit filter, so the same bits
    // (cuDNN's backward-data algorithms may sum in another order from run to run)
    CHECK(rel_error(cached.second, plain.second) < 1e-6);
    // Both gradients from one dy (the path a ResNet's backward takes), reading the copy.
    DeviceBuffer dw(*gpu, w.size()), dx_both(*gpu, xs.numel());
    gpu->conv2d_backward({x.data(), xs}, {dy.data(), ys}, w.data(), dw.data(), {dx_both.data(), xs}, g, s);
    CHECK(rel_error(down(dx_both), plain.second) < 1e-6);
    // New weights written behind the cache's back, then an optimizer update (of any
    // buffer): the copies are dropped, and the convolutions cast the new weights.
    gpu->upload(w.data(), random_vector(w.size(), 6).data(), w.size(), s);
    auto params = up(std::vector<float>(4, 1.f)), grads = up(std::vector<float>(4, 0.5f));
    auto m = up(std::vector<float>(4, 0.f)), v = up(std::vector<float>(4, 0.f));
    gpu->adam_update(params.data(), grads.data(), m.data(), v.data(), 4, AdamParams{}, s);
    const auto after = run();
    auto fresh = make_cuda_backend(0, p);  // no cache at all
    Stream& fs = fresh->default_stream();
    std::vector<float> wv(w.size()), xv(xs.numel());
    gpu->download(wv.data(), w.data(), wv.size(), s);
    gpu->download(xv.data(), x.data(), xv.size(), s);
    s.synchronize();
    DeviceBuffer fw(*fresh, wv.size()), fx(*fresh, xv.size()), fy(*fresh, ys.numel());
    fresh->upload(fw.data(), wv.data(), wv.size(), fs);
    fresh->upload(fx.data(), xv.data(), xv.size(), fs);
    fresh->conv2d_forward({fx.data(), xs}, fw.data(), {fy.data(), ys}, g, fs);
    std::vector<float> expected(ys.numel());
    fresh->download(expected.data(), fy.data(), expected.size(), fs);
    fs.synchronize();
    CHECK(after.first == expected);
    CHECK(after.first != plain.first);
  }
}

TEST_CASE("a ResNet-18 trains alike with its filters cast once per forward and per convolution",
          "[gpu][storage16][step]") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO(precision_name(p));
    std::vector<float> params[2];
    double losses[2][3];
    for (int cached = 0; cached < 2; ++cached) {
      auto backend = make_cuda_backend(0, p);
      backend->set_caches_filters16(cached == 1);
      Stream& s = backend->default_stream();
      model::HeatmapModel net(*backend, model::ModelSpec{"resnet18", 3, 2});
      net.initialize(11, s);
      train::Optimizer optimizer(net.store(), train::OptimizerConfig{});
      optimizer.set_group(model::ParamGroup::head, 1e-3, true);
      optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
      train::StepRunner runner(*backend, s, net, heatmap_mse_loss());
      train::LocalGradientSync sync;
      HostBatch b0(*backend, 4, 64, 3, 1), b1(*backend, 4, 64, 3, 2);
      for (int step = 0; step < 3; ++step) {
        runner.train_step(step % 2 ? b1.batch : b0.batch, optimizer, sync, true, nullptr);
        runner.request_loss();
        losses[cached][step] = runner.requested_loss();
      }
      params[cached].resize(net.store().parameter_count());
      backend->download(params[cached].data(), net.store().params_data(), params[cached].size(), s);
      s.synchronize();
    }
    // The same bits into every convolution; cuDNN's weight-gradient atomics may
    // reorder sums between the runs.
    for (int step = 0; step < 3; ++step) CHECK(losses[1][step] == Approx(losses[0][step]).epsilon(1e-5));
    CHECK(rel_error(params[1], params[0]) < 1e-4);
  }
}
