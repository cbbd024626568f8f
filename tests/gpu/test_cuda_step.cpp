// Whole training steps on the GPU against the CPU backend: the staged batch copy
// (pinned host memory, copy stream, two slots), targets, forward, loss, backward
// and Adam, queued without host waits, must give the CPU's losses and weights
// (fp32, TF32 off) over several steps, and batches must not be overwritten while
// their copy is in flight.
#include <catch2/catch.hpp>

#include <cmath>   // NAN
#include <vector>  // std::vector

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "gpu_test_util.hpp"
#include "host_batch.hpp"  // HostBatch
#include "data/batch.hpp"
#include "model/heatmap_model.hpp"
#include "train/batch_stager.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"

using namespace trainer;
using compute::gpu_test::HostBatch;
using compute::gpu_test::rel_error;

namespace {

struct Trainer {
  std::unique_ptr<compute::Backend> backend;
  model::HeatmapModel net;
  train::Optimizer optimizer;
  train::StepRunner runner;
  explicit Trainer(std::unique_ptr<compute::Backend> b)
      : backend(std::move(b)),
        net(*backend, model::ModelSpec{"resnet18", 3, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss()) {
    net.initialize(7, backend->default_stream());
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
  }
  std::vector<float> params() {
    std::vector<float> p(net.store().parameter_count());
    backend->download(p.data(), net.store().params_data(), p.size(), backend->default_stream());
    backend->default_stream().synchronize();
    return p;
  }
};

}  // namespace

TEST_CASE("cuda training steps match the CPU backend step for step", "[gpu][step]") {
  Trainer cpu(compute::make_cpu_backend(2)), gpu(compute::make_cuda_backend(0));
  HostBatch b0(*gpu.backend, 4, 64, 3, 1), b1(*gpu.backend, 4, 64, 3, 2);
  train::LocalGradientSync sync;
  for (int step = 0; step < 4; ++step) {
    const data::Batch& batch = (step % 2 ? b1 : b0).batch;
    cpu.runner.train_step(batch, cpu.optimizer, sync, true, nullptr);
    gpu.runner.train_step(batch, gpu.optimizer, sync, true, nullptr);
    cpu.runner.request_loss();
    gpu.runner.request_loss();
    const double lc = cpu.runner.requested_loss(), lg = gpu.runner.requested_loss();
    INFO("step " << step << " cpu loss " << lc << " gpu loss " << lg);
    CHECK(std::fabs(lg - lc) <= 1e-4 * std::fabs(lc));
  }
  // Adam divides by sqrt(v): tiny gradient differences move weights by up to ~lr.
  CHECK(rel_error(gpu.params(), cpu.params()) < 1e-3);
  const auto sums_c = cpu.runner.take_loss_sum(), sums_g = gpu.runner.take_loss_sum();
  CHECK(sums_g.second == 4);
  CHECK(sums_g.first == Approx(sums_c.first).epsilon(1e-4));
}

TEST_CASE("a staged batch is copied before release returns, into alternating slots", "[gpu][step]") {
  auto backend = compute::make_cuda_backend(0);
  compute::Stream& stream = backend->default_stream();
  HostBatch host(*backend, 2, 32, 3, 3);
  const std::vector<float> first(host.images, host.images + host.batch.image_floats());
  train::BatchStager stager(*backend);
  train::StageLayout layout;
  layout.heatmap_height = layout.heatmap_width = 8;
  const train::StagedBatch& a = stager.stage(host.batch, layout, stream);
  const float* a_images = a.images;
  stager.release(stream);
  // The host batch may be reused now: overwrite it and stage it again.
  std::fill(host.images, host.images + host.batch.image_floats(), 0.25f);
  const train::StagedBatch& b = stager.stage(host.batch, layout, stream);
  CHECK(b.images != a_images);
  stager.release(stream);
  std::vector<float> got(first.size());
  backend->download(got.data(), a_images, got.size(), stream);
  stream.synchronize();
  CHECK(got == first);
  backend->download(got.data(), b.images, got.size(), stream);
  stream.synchronize();
  CHECK(got == std::vector<float>(got.size(), 0.25f));
}
