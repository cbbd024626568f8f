// The fused batch-norm + (residual add) + ReLU kernels against their CPU twins, and
// the fused path of a whole ResNet step against the separate kernels of the path
// that ran on an H100 on 2026-11-22 (TRAINER_FUSED_NORM=0), on the GPU.
#include <catch2/catch.hpp>

#include <cmath>

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"  // HeatmapModel

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda fused batch norm + ReLU ops match the CPU twins", "[gpu][fused_norm]") {
  Twins t;
  const Shape4 shape{4, 6, 13, 11};
  const std::size_t n = shape.numel();
  const int c = shape.c;
  const auto x = random_vector(n, 201, -2.f, 2.f), residual = random_vector(n, 202), dy = random_vector(n, 203);
  const auto mean = random_vector(c, 204, -0.5f, 0.5f), invstd = random_vector(c, 205, 0.5f, 2.f),
             gamma = random_vector(c, 206, -1.5f, 1.5f), beta = random_vector(c, 207, -0.5f, 0.5f);
  auto gx = t.device(x), gres = t.device(residual), gdy = t.device(dy), gmean = t.device(mean),
       ginv = t.device(invstd), ggamma = t.device(gamma), gbeta = t.device(beta), gy = t.zeros(n),
       greduce = t.zeros(2 * c), gdx = t.zeros(n);
  for (bool with_residual : {false, true}) {
    INFO("residual " << with_residual);
    std::vector<float> y(n);
    t.gpu->batchnorm_apply_relu({gx.data(), shape}, gmean.data(), ginv.data(), ggamma.data(), gbeta.data(),
                                with_residual ? gres.data() : nullptr, {gy.data(), shape}, t.gs());
    t.cpu->batchnorm_apply_relu({x.data(), shape}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                                with_residual ? residual.data() : nullptr, {y.data(), shape}, t.cs());
    CHECK(rel_error(t.host(gy), y) < kTolerance);
  }
  std::vector<float> reduce(2 * c), dx(n);
  t.gpu->batchnorm_relu_backward_reduce({gdy.data(), shape}, {gx.data(), shape}, gmean.data(), ginv.data(),
                                        ggamma.data(), gbeta.data(), greduce.data(), t.gs());
  t.cpu->batchnorm_relu_backward_reduce({dy.data(), shape}, {x.data(), shape}, mean.data(), invstd.data(),
                                        gamma.data(), beta.data(), reduce.data(), t.cs());
  CHECK(rel_error(t.host(greduce), reduce) < kTolerance);
  const double count = double(shape.n) * shape.h * shape.w;
  auto gcpu_reduce = t.device(reduce);  // the same reduce on both, so dx compares the apply alone
  t.gpu->batchnorm_relu_backward_apply({gdy.data(), shape}, {gx.data(), shape}, gmean.data(), ginv.data(),
                                       ggamma.data(), gbeta.data(), gcpu_reduce.data(), count, {gdx.data(), shape},
                                       t.gs());
  t.cpu->batchnorm_relu_backward_apply({dy.data(), shape}, {x.data(), shape}, mean.data(), invstd.data(),
                                       gamma.data(), beta.data(), reduce.data(), count, {dx.data(), shape}, t.cs());
  CHECK(rel_error(t.host(gdx), dx) < kTolerance);
}

namespace {
// Heatmaps and gradients of one ResNet-50 forward/backward on the GPU.
std::pair<std::vector<float>, std::vector<float>> gpu_step(bool fused) {
  auto b = make_cuda_backend(0);
  b->set_fuses_norm_activation(fused);
  auto& s = b->default_stream();
  trainer::model::HeatmapModel m(*b, trainer::model::ModelSpec{"resnet50", 17, 2});
  m.initialize(5, s);
  const Shape4 in{4, 3, 128, 128};
  const auto images = random_vector(in.numel(), 301);
  DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  trainer::model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  std::vector<float> kp(std::size_t(in.n) * 17 * 2);
  for (std::size_t i = 0; i < kp.size(); ++i) kp[i] = float(3 + (i * 7) % 26);
  DeviceBuffer gkp(*b, kp.size()), targets(*b, y.shape.numel()), mask(*b, std::size_t(in.n) * 17), loss(*b, 1),
      dpred(*b, y.shape.numel());
  b->upload(gkp.data(), kp.data(), kp.size(), s);
  b->heatmap_targets(gkp.data(), {targets.data(), y.shape}, 1.25f, mask.data(), s);
  b->heatmap_loss(y, {targets.data(), y.shape}, mask.data(), heatmap_mse_loss(), loss.data(), dpred.data(), 1.f, s);
  std::vector<float> heatmaps(y.shape.numel()), grads(m.store().parameter_count());
  b->download(heatmaps.data(), y.data, heatmaps.size(), s);
  m.backward(ctx, {dpred.data(), y.shape}, true);
  b->download(grads.data(), m.store().grads_data(), grads.size(), s);
  s.synchronize();
  return {heatmaps, grads};
}
}  // namespace

TEST_CASE("cuda ResNet-50 step: fused batch norm + ReLU gives the separate kernels' numbers", "[gpu][fused_norm]") {
  const auto fused = gpu_step(true), separate = gpu_step(false);
  CHECK(rel_error(fused.first, separate.first) < 1e-6);
  CHECK(rel_error(fused.second, separate.second) < 1e-5);
}
