// The CUDA MBConv ops (kernels/mbconv.cu) against their CPU twins at EfficientNet-B0
// sizes, fp32: the depthwise convolutions (3x3 and 5x5, strides 1 and 2), SiLU, the
// squeeze-excitation gate and pool, row scaling and stochastic depth's draws (exact:
// the same hash). Then whole efficientnet_b0 training steps, GPU against CPU, and
// recorded (CUDA graphs) against unrecorded, with stochastic depth drawing per step.
#include <catch2/catch.hpp>

#include <cmath>   // std::fabs
#include <vector>  // std::vector

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "gpu_test_util.hpp"
#include "host_batch.hpp"  // HostBatch
#include "model/heatmap_model.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda depthwise convolutions match the CPU", "[gpu][mbconv]") {
  Twins t;
  struct Case {
    int n, c, h, w, k, stride;
  };
  for (const Case k : {Case{4, 96, 32, 32, 3, 2}, Case{4, 144, 16, 16, 5, 1}, Case{2, 32, 17, 13, 5, 2}}) {
    INFO("c " << k.c << " " << k.h << "x" << k.w << " k " << k.k << " stride " << k.stride);
    ConvGeometry g;
    g.in_channels = g.out_channels = k.c;
    g.kernel = k.k, g.stride = k.stride, g.pad = (k.k - 1) / 2;
    const Shape4 xs{k.n, k.c, k.h, k.w}, ys{k.n, k.c, g.conv_out(k.h), g.conv_out(k.w)};
    auto x = random_vector(xs.numel(), 1), w = random_vector(std::size_t(k.c) * k.k * k.k, 2);
    auto dy = random_vector(ys.numel(), 3);
    auto gx = t.device(x), gw = t.device(w), gdy = t.device(dy);
    auto gy = t.zeros(ys.numel()), gdx = t.zeros(xs.numel()), gdw = t.zeros(w.size());
    std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size());
    t.gpu->mbconv_ops().depthwise_forward({gx.data(), xs}, gw.data(), {gy.data(), ys}, g, t.gs());
    t.gpu->mbconv_ops().depthwise_backward_data({gdy.data(), ys}, gw.data(), {gdx.data(), xs}, g, t.gs());
    t.gpu->mbconv_ops().depthwise_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), g, t.gs());
    t.cpu->mbconv_ops().depthwise_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, t.cs());
    t.cpu->mbconv_ops().depthwise_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, t.cs());
    t.cpu->mbconv_ops().depthwise_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, t.cs());
    CHECK(rel_error(t.host(gy), y) < kTolerance);
    CHECK(rel_error(t.host(gdx), dx) < kTolerance);
    CHECK(rel_error(t.host(gdw), dw) < kTolerance);
  }
}

TEST_CASE("cuda depthwise weight gradients: the chunked sums and the per-tap blocks match the CPU", "[gpu][mbconv]") {
  // TRAINER_DEPTHWISE_CHUNKS: both layouts, at a layer of few channels over many rows
  // (many chunks), one of 576 channels (one chunk each), rows fewer than the chunks
  // wanted, and a 7x7 filter (no chunked kernel: the per-tap one runs either way).
  Twins t;
  struct Case {
    int n, c, h, w, k, stride;
  };
  for (const Case k : {Case{8, 32, 64, 64, 3, 1}, Case{2, 576, 8, 8, 5, 1}, Case{1, 24, 3, 40, 3, 2},
                       Case{2, 16, 12, 12, 7, 1}}) {
    for (const bool chunked : {true, false}) {
      INFO("c " << k.c << " " << k.h << "x" << k.w << " k " << k.k << " stride " << k.stride << " chunked "
                << chunked);
      ConvGeometry g;
      g.in_channels = g.out_channels = k.c;
      g.kernel = k.k, g.stride = k.stride, g.pad = (k.k - 1) / 2;
      const Shape4 xs{k.n, k.c, k.h, k.w}, ys{k.n, k.c, g.conv_out(k.h), g.conv_out(k.w)};
      const auto x = random_vector(xs.numel(), 7), dy = random_vector(ys.numel(), 8);
      auto gx = t.device(x), gdy = t.device(dy);
      auto gdw = t.device(std::vector<float>(std::size_t(k.c) * k.k * k.k, 7.f));  // every value overwritten
      std::vector<float> dw(std::size_t(k.c) * k.k * k.k);
      t.gpu->mbconv_ops().set_chunked_depthwise_weights(chunked);
      t.gpu->mbconv_ops().depthwise_backward_weights({gx.data(), xs}, {gdy.data(), ys}, gdw.data(), g, t.gs());
      t.cpu->mbconv_ops().depthwise_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, t.cs());
      CHECK(rel_error(t.host(gdw), dw) < 1e-6);  // double sums both ways: float rounding apart at most
    }
  }
  t.gpu->mbconv_ops().set_chunked_depthwise_weights(true);
}

TEST_CASE("cuda SiLU, gate, row mean, row scaling and stochastic depth draws match the CPU", "[gpu][mbconv]") {
  Twins t;
  auto& g_ops = t.gpu->mbconv_ops();
  auto& c_ops = t.cpu->mbconv_ops();
  const int rows = 4 * 96, width = 16 * 16;
  const std::size_t n = std::size_t(rows) * width;
  auto x = random_vector(n, 4, -6.f, 6.f), dy = random_vector(n, 5), z = random_vector(rows, 6, -3.f, 3.f);
  auto gx = t.device(x), gdy = t.device(dy), gz = t.device(z);

  auto gy = t.zeros(n), gdx = t.zeros(n);
  std::vector<float> y(n), dx(n);
  g_ops.silu_forward(gx.data(), gy.data(), n, t.gs());
  g_ops.silu_backward(gx.data(), gdy.data(), gdx.data(), n, t.gs());
  c_ops.silu_forward(x.data(), y.data(), n, t.cs());
  c_ops.silu_backward(x.data(), dy.data(), dx.data(), n, t.cs());
  CHECK(rel_error(t.host(gy), y) < kTolerance);
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);

  auto gdz = t.zeros(rows);
  std::vector<float> dz(rows);
  g_ops.gate_forward(gx.data(), gz.data(), gy.data(), rows, width, t.gs());
  g_ops.gate_backward(gx.data(), gz.data(), gdy.data(), gdx.data(), gdz.data(), rows, width, t.gs());
  c_ops.gate_forward(x.data(), z.data(), y.data(), rows, width, t.cs());
  c_ops.gate_backward(x.data(), z.data(), dy.data(), dx.data(), dz.data(), rows, width, t.cs());
  CHECK(rel_error(t.host(gy), y) < kTolerance);
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);
  CHECK(rel_error(t.host(gdz), dz) < kTolerance);

  auto gmean = t.zeros(rows);
  std::vector<float> mean(rows);
  g_ops.row_mean_forward(gx.data(), gmean.data(), rows, width, t.gs());
  c_ops.row_mean_forward(x.data(), mean.data(), rows, width, t.cs());
  CHECK(rel_error(t.host(gmean), mean) < kTolerance);
  auto gacc = t.device(dy);
  std::vector<float> acc(dy);
  g_ops.row_mean_backward_add(gz.data(), gacc.data(), rows, width, t.gs());
  c_ops.row_mean_backward_add(z.data(), acc.data(), rows, width, t.cs());
  CHECK(rel_error(t.host(gacc), acc) < kTolerance);

  const std::vector<float> key{4242.f, 99.f};
  auto gkey = t.device(key), gfactors = t.zeros(rows);
  std::vector<float> factors(rows);
  g_ops.stochastic_depth_factors(gkey.data(), 17, 0.15f, gfactors.data(), rows, t.gs());
  c_ops.stochastic_depth_factors(key.data(), 17, 0.15f, factors.data(), rows, t.cs());
  CHECK(t.host(gfactors) == factors);  // the same hash, the same bits
  g_ops.scale_rows(gx.data(), gfactors.data(), gy.data(), rows, width, t.gs());
  c_ops.scale_rows(x.data(), factors.data(), y.data(), rows, width, t.cs());
  CHECK(t.host(gy) == y);
}

namespace {

struct EfficientRun {
  std::unique_ptr<Backend> backend;
  model::HeatmapModel net;
  train::Optimizer optimizer;
  train::StepRunner runner;
  EfficientRun(std::unique_ptr<Backend> b, bool record)
      : backend(std::move(b)),
        net(*backend, model::ModelSpec{"efficientnet_b0", 3, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, backend->default_stream(), net, heatmap_mse_loss()) {
    net.initialize(5, backend->default_stream());
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
    runner.set_model_seed(3);
    if (record) runner.record_steps([](const std::string& w) { WARN(w); });
  }
  double step(const data::Batch& b, train::GradientSync& sync) {
    runner.train_step(b, optimizer, sync, true, nullptr);
    runner.request_loss();
    return runner.requested_loss();
  }
  std::vector<float> params() {
    std::vector<float> p(net.store().parameter_count());
    backend->download(p.data(), net.store().params_data(), p.size(), backend->default_stream());
    backend->default_stream().synchronize();
    return p;
  }
};

}  // namespace

TEST_CASE("cuda efficientnet_b0 steps match the CPU's, and recorded steps the unrecorded ones",
          "[gpu][mbconv][efficientnet][cuda_graphs]") {
  EfficientRun cpu(make_cpu_backend(2), false), gpu(make_cuda_backend(0), false), recorded(make_cuda_backend(0), true);
  gpu_test::HostBatch b0(*gpu.backend, 4, 64, 3, 1), b1(*gpu.backend, 4, 64, 3, 2);
  train::LocalGradientSync sync;
  for (int step = 0; step < 6; ++step) {
    data::Batch& b = step % 2 ? b1.batch : b0.batch;
    b.index = step;  // each step its own stochastic depth draws
    const double lc = cpu.step(b, sync), lg = gpu.step(b, sync), lr = recorded.step(b, sync);
    INFO("step " << step << " cpu " << lc << " gpu " << lg << " recorded " << lr);
    CHECK(std::fabs(lg - lc) <= 1e-4 * std::fabs(lc));
    CHECK(std::fabs(lr - lg) <= 1e-5 * std::fabs(lg));
  }
  CHECK(recorded.runner.recording_counts().replayed >= 2);
  // Adam divides by sqrt(v): tiny gradient differences move weights by up to ~lr.
  CHECK(rel_error(gpu.params(), cpu.params()) < 1e-3);
  CHECK(rel_error(recorded.params(), gpu.params()) < 1e-4);
}
