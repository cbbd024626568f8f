// Semi-supervised training steps on the GPU against the CPU backend: a labelled
// batch plus a clip of unlabelled frames whose soft-argmax keypoints feed the
// temporal and pca_singleview losses (StepRunner::train_step with unlabeled frames,
// as cmd_train drives it). This is the path that runs the CUDA soft-argmax forward
// and backward, the keypoint losses and their gradients through the whole network.
// Without a GPU the binary skips visibly (tests/gpu/main.cpp).
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy, std::max
#include <cmath>      // NAN, std::fabs
#include <memory>     // std::unique_ptr
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "config/config.hpp"               // LossesConfig, DataConfig
#include "data/batch.hpp"
#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"
#include "train/unsupervised_losses.hpp"

using namespace trainer;
using compute::gpu_test::random_vector;
using compute::gpu_test::rel_error;

namespace {

constexpr int kKeypoints = 3;
constexpr int kSize = 64;  // network input; heatmaps 16 x 16, soft-argmax at 64 x 64 (d = 2)

// A batch in pinned host memory of `owner` (read by both backends).
struct HostFrames {
  compute::Backend& owner;
  data::Batch batch;
  float* images = nullptr;
  HostFrames(compute::Backend& b, int n, unsigned seed, bool labels) : owner(b) {
    batch.size = n;
    batch.height = batch.width = kSize;
    batch.num_keypoints = kKeypoints;
    images = static_cast<float*>(b.allocate_host(batch.image_floats() * sizeof(float)));
    const auto v = random_vector(batch.image_floats(), seed);
    std::copy(v.begin(), v.end(), images);
    batch.images = images;
    batch.is_real.assign(std::size_t(n), 1);
    batch.scale_x.assign(std::size_t(n), 1.f);
    batch.scale_y.assign(std::size_t(n), 1.f);
    if (labels) {
      const auto kp = random_vector(std::size_t(n) * kKeypoints * 2, seed + 1, 4.f, float(kSize) - 5.f);
      batch.keypoints.assign(kp.begin(), kp.end());
    }
  }
  ~HostFrames() { owner.release_host(images); }
};

// The unsupervised settings: weights 1/2 (log_weight 0) so that the terms weigh as
// much as the supervised loss; epsilons and the confidence threshold low enough
// that an untrained network's keypoints are penalized (a zero loss would test
// nothing); two of six PCA components kept.
LossesConfig semi_losses() {
  LossesConfig c;
  c.temporal_log_weight = 0.0;
  c.temporal_epsilon = {0.0};
  c.temporal_prob_threshold = 0.0;
  c.pca_singleview_log_weight = 0.0;
  c.pca_singleview_components_to_keep = "2";
  c.pca_singleview_epsilon = 0.0;
  return c;
}

// The training split's labels the PCA is fitted on, in frame pixels [40, K, 2]:
// a pose that moves and stretches, plus noise.
std::vector<float> pca_labels() {
  const int frames = 40;
  const auto shift = random_vector(std::size_t(frames) * 2, 900, -8.f, 8.f);
  const auto stretch = random_vector(std::size_t(frames), 901, 0.8f, 1.2f);
  const auto noise = random_vector(std::size_t(frames) * kKeypoints * 2, 902, -0.7f, 0.7f);
  const float base[kKeypoints][2] = {{-10.f, -6.f}, {4.f, 9.f}, {11.f, -3.f}};
  std::vector<float> kp(std::size_t(frames) * kKeypoints * 2);
  for (int f = 0; f < frames; ++f)
    for (int k = 0; k < kKeypoints; ++k)
      for (int a = 0; a < 2; ++a) {
        const std::size_t at = (std::size_t(f) * kKeypoints + k) * 2 + a;
        kp[at] = 32.f + shift[2 * f + a] + stretch[f] * base[k][a] + noise[at];
      }
  return kp;
}

struct SemiTrainer {
  std::unique_ptr<compute::Backend> backend;
  model::HeatmapModel net;
  train::Optimizer optimizer;
  train::UnsupervisedLosses losses;
  train::StepRunner runner;
  explicit SemiTrainer(std::unique_ptr<compute::Backend> b)
      : backend(std::move(b)),
        net(*backend, model::ModelSpec{"resnet18", kKeypoints, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        losses(*backend, backend->default_stream(), {"temporal", "pca_singleview"}, semi_losses(), DataConfig{},
               kKeypoints, pca_labels(), nullptr),
        runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss()) {
    net.initialize(11, backend->default_stream());
    sharpen_head();
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
    runner.set_unsupervised(&losses);
  }
  // lightning-pose initializes the head with xavier gain 0.01: its heatmaps are then
  // nearly uniform whatever the frame, keypoints move by 1e-4 px from frame to
  // frame, and a temporal loss of such moves is mostly the backends' rounding. Both
  // head layers scaled by 30 (the same on both backends) give heatmaps that follow
  // the frames, as a trained network's do.
  void sharpen_head() {
    compute::Stream& s = backend->default_stream();
    auto& store = net.store();
    for (std::size_t i = 0; i < store.parameters().size(); ++i) {
      if (store.parameters()[i].name.rfind("head.", 0) != 0) continue;
      auto values = store.download_param(i, s);
      for (float& v : values) v *= 30.f;
      store.upload_param(i, values, s);
    }
    s.synchronize();
  }
  std::vector<float> download(const float* device, std::size_t count) {
    std::vector<float> out(count);
    backend->download(out.data(), device, count, backend->default_stream());
    backend->default_stream().synchronize();
    return out;
  }
  std::vector<float> params() { return download(net.store().params_data(), net.store().parameter_count()); }
  std::vector<float> grads() { return download(net.store().grads_data(), net.store().parameter_count()); }
};

}  // namespace

TEST_CASE("cuda semi-supervised step: the unsupervised gradients match the CPU backend tensor by tensor",
          "[gpu][step]") {
  // Labels all NaN: the supervised loss counts no keypoint and gives zero gradient,
  // so every gradient below comes from the temporal and PCA losses through the
  // soft-argmax backward (importance 1: no warm-up).
  SemiTrainer cpu(compute::make_cpu_backend(2)), gpu(compute::make_cuda_backend(0));
  HostFrames labelled(*gpu.backend, 4, 31, true), clip(*gpu.backend, 6, 33, false);
  std::fill(labelled.batch.keypoints.begin(), labelled.batch.keypoints.end(), NAN);
  train::LocalGradientSync sync;
  cpu.runner.train_step(labelled.batch, cpu.optimizer, sync, true, nullptr, &clip.batch, 1.0);
  gpu.runner.train_step(labelled.batch, gpu.optimizer, sync, true, nullptr, &clip.batch, 1.0);

  const auto terms_c = cpu.runner.take_unsupervised_sums(), terms_g = gpu.runner.take_unsupervised_sums();
  REQUIRE(terms_c.size() == 2);
  REQUIRE(terms_g.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    INFO("term " << cpu.runner.unsupervised_terms()[t].name << ": cpu " << terms_c[t] << " gpu " << terms_g[t]);
    CHECK(terms_c[t] > 0);  // the term is active
    // T = 1000 turns the forward's convolution-level differences into ~1e-4 px.
    CHECK(std::fabs(terms_g[t] - terms_c[t]) <= 1e-3 * std::fabs(terms_c[t]));
  }

  const auto gc = cpu.grads(), gg = gpu.grads();
  double global = 0;
  for (float v : gc) global = std::max(global, double(std::fabs(v)));
  CHECK(global > 0);  // the unsupervised terms reach the parameters
  int compared = 0;
  for (const auto& e : cpu.net.store().parameters()) {
    double diff = 0, scale = 0;
    for (std::size_t i = e.offset; i < e.offset + e.count; ++i) {
      diff = std::max(diff, std::fabs(double(gg[i]) - gc[i]));
      scale = std::max(scale, std::fabs(double(gc[i])));
    }
    // Relative to the tensor's own scale, but no tighter than 1% of the largest
    // gradient (a tensor whose gradient nearly cancels has no meaningful digits).
    INFO(e.name << ": max |gpu - cpu| " << diff << ", max |cpu| " << scale << ", largest gradient " << global);
    CHECK(diff <= 1e-3 * std::max(scale, 1e-2 * global));
    ++compared;
  }
  CHECK(compared > 20);
}

TEST_CASE("cuda semi-supervised steps match the CPU backend step for step", "[gpu][step]") {
  SemiTrainer cpu(compute::make_cpu_backend(2)), gpu(compute::make_cuda_backend(0));
  HostFrames l0(*gpu.backend, 4, 41, true), l1(*gpu.backend, 4, 43, true);
  HostFrames u0(*gpu.backend, 6, 45, false), u1(*gpu.backend, 6, 47, false);
  l0.batch.keypoints[1] = NAN;  // one unlabeled keypoint
  train::LocalGradientSync sync;
  for (int step = 0; step < 3; ++step) {
    const data::Batch& labelled = (step % 2 ? l1 : l0).batch;
    const data::Batch& clip = (step % 2 ? u1 : u0).batch;
    cpu.runner.train_step(labelled, cpu.optimizer, sync, true, nullptr, &clip, 1.0);
    gpu.runner.train_step(labelled, gpu.optimizer, sync, true, nullptr, &clip, 1.0);
    cpu.runner.request_loss();
    gpu.runner.request_loss();
    const double lc = cpu.runner.requested_loss(), lg = gpu.runner.requested_loss();
    const auto tc = cpu.runner.take_unsupervised_sums(), tg = gpu.runner.take_unsupervised_sums();
    INFO("step " << step << " supervised loss cpu " << lc << " gpu " << lg);
    CHECK(std::fabs(lg - lc) <= 1e-4 * std::fabs(lc));
    REQUIRE(tc.size() == 2);
    REQUIRE(tg.size() == 2);
    for (std::size_t t = 0; t < 2; ++t) {
      INFO("term " << t << ": cpu " << tc[t] << " gpu " << tg[t]);
      CHECK(tc[t] > 0);
      CHECK(std::fabs(tg[t] - tc[t]) <= 1e-3 * std::fabs(tc[t]));
    }
  }
  // Adam divides by sqrt(v): tiny gradient differences move weights by up to ~lr.
  CHECK(rel_error(gpu.params(), cpu.params()) < 1e-3);
}
