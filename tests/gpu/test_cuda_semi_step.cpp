// Semi-supervised training steps on the GPU against the CPU backend: a labelled
// batch plus a clip of unlabelled frames whose soft-argmax keypoints feed the
// temporal and pca_singleview losses (StepRunner::train_step with unlabeled frames,
// as cmd_train drives it). This is the path that runs the CUDA soft-argmax forward
// and backward, the keypoint losses and their gradients through the whole network.
//
// Both backends start from the same trained parameters (start_trained), as the
// parity rule asks, and the gradients are held to what the function's own
// sensitivity allows (check_gradients_match). With a fixed 1e-3 per tensor from an
// untrained network the H200 failed on 2026-11-26 by up to 0.8% of a layer1
// tensor; on the CPU alone, frames nudged by one ulp moved that tensor by the same 0.8%.
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
    const auto kp = random_vector(std::size_t(n) * kKeypoints * 2, seed + 1, 4.f, float(kSize) - 5.f);
    if (labels) batch.keypoints.assign(kp.begin(), kp.end());
    draw_blobs(kp);
  }
  // Dimmed noise plus a bright blob at each keypoint (keypoint k in channel k % 3):
  // frames a few steps of training learn to find, so the heatmaps peak.
  void draw_blobs(const std::vector<float>& kp) {
    for (int i = 0; i < batch.size; ++i)
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < kSize; ++y)
          for (int x = 0; x < kSize; ++x) {
            float& v = images[((std::size_t(i) * 3 + c) * kSize + y) * kSize + x];
            v *= 0.3f;
            for (int k = c; k < kKeypoints; k += 3) {
              const float dx = x - kp[(std::size_t(i) * kKeypoints + k) * 2];
              const float dy = y - kp[(std::size_t(i) * kKeypoints + k) * 2 + 1];
              v += 2.f * std::exp(-(dx * dx + dy * dy) / 8.f);
            }
          }
  }
  ~HostFrames() { owner.release_host(images); }
};

// The unsupervised settings: weights 1/2 (log_weight 0) so that the terms weigh as
// much as the supervised loss; epsilons and the confidence threshold zero so that
// every keypoint is penalized (a zero loss would test nothing); two of six PCA
// components kept.
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
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-4, true);
    runner.set_unsupervised(&losses);
  }
  void take_parameters_of(SemiTrainer& other) {
    auto& from = other.net.store();
    auto& to = net.store();
    for (std::size_t i = 0; i < from.parameters().size(); ++i)
      to.upload_param(i, from.download_param(i, other.backend->default_stream()), backend->default_stream());
    backend->default_stream().synchronize();
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

// Trains a CPU network for 60 supervised steps on `frames` (the loss falls from
// 0.022 to 0.007) and gives its parameters to the twins; their optimizers start
// fresh, so they go on from one trained state in step. `nudged` (CPU) takes them
// with every other value moved by one ulp: how far that moves the CPU's own
// gradients shows how much of the GPU's difference rounding alone explains.
void start_trained(const data::Batch& frames, SemiTrainer& cpu, SemiTrainer& gpu, SemiTrainer& nudged) {
  SemiTrainer teacher(compute::make_cpu_backend(2));
  train::LocalGradientSync sync;
  for (int step = 0; step < 60; ++step) teacher.runner.train_step(frames, teacher.optimizer, sync, true, nullptr);
  cpu.take_parameters_of(teacher);
  gpu.take_parameters_of(teacher);
  nudged.take_parameters_of(teacher);
  auto& store = nudged.net.store();
  compute::Stream& s = nudged.backend->default_stream();
  for (std::size_t i = 0; i < store.parameters().size(); ++i) {
    auto values = store.download_param(i, s);
    for (std::size_t j = 0; j < values.size(); j += 2) values[j] = std::nextafter(values[j], 10.f);
    store.upload_param(i, values, s);
  }
  s.synchronize();
}

// ||a - b|| / ||b|| over the parameters of `entries` in gradient vectors a and b.
double relative_l2(const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<model::TensorEntry>& entries) {
  double num = 0, den = 0;
  for (const auto& e : entries)
    for (std::size_t i = e.offset; i < e.offset + e.count; ++i) {
      num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      den += double(b[i]) * b[i];
    }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? 1e30 : 0.0);
}

// The semi-supervised gradients are ill-conditioned, even from a trained state: the
// soft-argmax at T = 1000 turns tiny heatmap changes into keypoint changes, and the
// keypoint losses' gradients run back through the whole network. On the CPU alone,
// parameters nudged by one ulp moved the gradients of this setup by 0.09%
// (unsupervised only) and 1.4% (with the supervised loss) in L2, and single
// tensors by up to 2% of their size; a fixed 1e-3 per element cannot hold. So the
// whole step is held to L2 errors (5% over all parameters, 10% per tensor) that a
// wrong, missing or misweighted term exceeds many times over; the ops inside are
// held to float precision by their own twin tests (soft-argmax, keypoint losses).
// INFO shows the nudged CPU twin's error beside the GPU's. The last head layer's
// bias feeds the spatial softmax, so its true gradient is zero: exempt.
void check_gradients_match(SemiTrainer& cpu, SemiTrainer& gpu, SemiTrainer& nudged) {
  const auto gc = cpu.grads(), gg = gpu.grads(), gn = nudged.grads();
  std::vector<model::TensorEntry> entries;
  std::string last_bias;  // entries are in layer order
  for (const auto& e : cpu.net.store().parameters())
    if (e.name.rfind("head.deconv", 0) == 0 && e.name.size() > 5 && e.name.substr(e.name.size() - 5) == ".bias")
      last_bias = e.name;
  REQUIRE(!last_bias.empty());
  for (const auto& e : cpu.net.store().parameters())
    if (e.name != last_bias) entries.push_back(e);
  double largest = 0;
  for (float v : gc) largest = std::max(largest, double(std::fabs(v)));
  CHECK(largest > 0);  // the unsupervised terms reach the parameters
  INFO("all parameters: relative L2 gpu " << relative_l2(gg, gc, entries) << ", nudged cpu "
                                          << relative_l2(gn, gc, entries));
  CHECK(relative_l2(gg, gc, entries) <= 0.05);
  for (const auto& e : entries) {
    const std::vector<model::TensorEntry> one{e};
    INFO(e.name << ": relative L2 gpu " << relative_l2(gg, gc, one) << ", nudged cpu " << relative_l2(gn, gc, one));
    CHECK(relative_l2(gg, gc, one) <= 0.1);
  }
  CHECK(entries.size() > 20);
}

}  // namespace

TEST_CASE("cuda semi-supervised step: the unsupervised gradients match the CPU backend tensor by tensor",
          "[gpu][step]") {
  // Labels all NaN: the supervised loss counts no keypoint and gives zero gradient,
  // so every gradient below comes from the temporal and PCA losses through the
  // soft-argmax backward (importance 1: no warm-up).
  SemiTrainer cpu(compute::make_cpu_backend(2)), gpu(compute::make_cuda_backend(0)),
      nudged(compute::make_cpu_backend(2));
  HostFrames labelled(*gpu.backend, 4, 31, true), clip(*gpu.backend, 6, 33, false);
  start_trained(labelled.batch, cpu, gpu, nudged);
  std::fill(labelled.batch.keypoints.begin(), labelled.batch.keypoints.end(), NAN);
  train::LocalGradientSync sync;
  cpu.runner.train_step(labelled.batch, cpu.optimizer, sync, true, nullptr, &clip.batch, 1.0);
  gpu.runner.train_step(labelled.batch, gpu.optimizer, sync, true, nullptr, &clip.batch, 1.0);
  nudged.runner.train_step(labelled.batch, nudged.optimizer, sync, true, nullptr, &clip.batch, 1.0);

  const auto terms_c = cpu.runner.take_unsupervised_sums(), terms_g = gpu.runner.take_unsupervised_sums();
  REQUIRE(terms_c.size() == 2);
  REQUIRE(terms_g.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    INFO("term " << cpu.runner.unsupervised_terms()[t].name << ": cpu " << terms_c[t] << " gpu " << terms_g[t]);
    CHECK(terms_c[t] > 0);  // the term is active
    // T = 1000 turns the forward's convolution-level differences into ~1e-4 px.
    CHECK(std::fabs(terms_g[t] - terms_c[t]) <= 1e-3 * std::fabs(terms_c[t]));
  }

  check_gradients_match(cpu, gpu, nudged);
}

TEST_CASE("cuda semi-supervised steps match the CPU backend step for step", "[gpu][step]") {
  SemiTrainer cpu(compute::make_cpu_backend(2)), gpu(compute::make_cuda_backend(0)),
      nudged(compute::make_cpu_backend(2));
  HostFrames l0(*gpu.backend, 4, 41, true), l1(*gpu.backend, 4, 43, true);
  HostFrames u0(*gpu.backend, 6, 45, false), u1(*gpu.backend, 6, 47, false);
  start_trained(l0.batch, cpu, gpu, nudged);
  l0.batch.keypoints[1] = NAN;  // one unlabeled keypoint
  train::LocalGradientSync sync;
  for (int step = 0; step < 3; ++step) {
    const data::Batch& labelled = (step % 2 ? l1 : l0).batch;
    const data::Batch& clip = (step % 2 ? u1 : u0).batch;
    cpu.runner.train_step(labelled, cpu.optimizer, sync, true, nullptr, &clip, 1.0);
    gpu.runner.train_step(labelled, gpu.optimizer, sync, true, nullptr, &clip, 1.0);
    nudged.runner.train_step(labelled, nudged.optimizer, sync, true, nullptr, &clip, 1.0);
    // The first step's gradients, supervised and unsupervised together. Not later
    // ones: Adam's first steps move each weight by about lr whatever the gradient's
    // size, so the twins' trajectories part (on the CPU alone, after two steps the
    // nudged twin's gradients differed by up to 60% of a tensor's largest value).
    if (step == 0) check_gradients_match(cpu, gpu, nudged);
    cpu.runner.request_loss();
    gpu.runner.request_loss();
    const double lc = cpu.runner.requested_loss(), lg = gpu.runner.requested_loss();
    const auto tc = cpu.runner.take_unsupervised_sums(), tg = gpu.runner.take_unsupervised_sums(),
               tn = nudged.runner.take_unsupervised_sums();
    INFO("step " << step << " supervised loss cpu " << lc << " gpu " << lg);
    CHECK(std::fabs(lg - lc) <= 1e-4 * std::fabs(lc));
    REQUIRE(tc.size() == 2);
    REQUIRE(tg.size() == 2);
    REQUIRE(tn.size() == 2);
    for (std::size_t t = 0; t < 2; ++t) {
      INFO("term " << t << ": cpu " << tc[t] << " gpu " << tg[t] << " nudged cpu " << tn[t]);
      CHECK(tc[t] > 0);
      // From the second step on, the terms follow the parted trajectories: on an H200
      // (2026-11-27, three runs) term 0 was 0.24% apart at step 2 while the supervised
      // losses still agreed to 3e-5 (the nudged CPU twin: 0.016%; the GPU's
      // convolutions part further than one ulp of the weights). A stale per-step map
      // moves a term by 10% or more (the recorded-steps case below), so 1% after the
      // first step still catches one.
      const double bound = step == 0 ? 1e-3 : 1e-2;
      CHECK(std::fabs(tg[t] - tc[t]) <= bound * std::fabs(tc[t]));
    }
  }
}

TEST_CASE("recorded semi-supervised steps (CUDA graphs) give the unrecorded steps' losses and weights",
          "[gpu][cuda_graphs]") {
  // Each step's unlabelled clip comes with its own augmentation map and frame scale,
  // and the importance steps from lightning-pose's warm-up (0: the clip runs forward
  // only) to 0.5: a replay must read them from device memory (stage_unlabeled's
  // maps), not repeat the recorded step's. A replay that kept a recorded map would move
  // the unsupervised losses by 10% or more per step; the bounds below allow what
  // cuDNN's reordered sums do to this ill-conditioned step (see check_gradients_match).
  SemiTrainer plain(compute::make_cuda_backend(0)), recorded(compute::make_cuda_backend(0));
  recorded.take_parameters_of(plain);
  std::vector<std::string> warnings;
  recorded.runner.record_steps([&warnings](const std::string& w) { warnings.push_back(w); });
  HostFrames labelled(*plain.backend, 4, 51, true), clip(*plain.backend, 6, 53, false);
  train::LocalGradientSync sync;
  train::StepRecorder::Counts forward_only;
  for (int step = 0; step < 9; ++step) {
    const double importance = step < 4 ? 0.0 : 0.5;
    if (step == 4) forward_only = recorded.runner.recording_counts();
    clip.batch.keypoint_unwarp = {1.f - 0.03f * step, 0.05f, 1.5f * step, -0.04f, 1.f + 0.02f * step, -2.f};
    clip.batch.scale_x.assign(clip.batch.scale_x.size(), 1.f + 0.25f * step);
    clip.batch.scale_y.assign(clip.batch.scale_y.size(), 1.5f - 0.1f * step);
    double loss[2];
    std::vector<double> terms[2];
    SemiTrainer* runs[2] = {&plain, &recorded};
    for (int r = 0; r < 2; ++r) {
      runs[r]->runner.train_step(labelled.batch, runs[r]->optimizer, sync, true, nullptr, &clip.batch, importance);
      runs[r]->runner.request_loss();
      loss[r] = runs[r]->runner.requested_loss();
      terms[r] = runs[r]->runner.take_unsupervised_sums();
    }
    INFO("step " << step << " importance " << importance << " loss " << loss[0] << " recorded " << loss[1]);
    CHECK(std::fabs(loss[1] - loss[0]) <= 1e-3 * std::fabs(loss[0]));
    REQUIRE(terms[0].size() == 2);
    REQUIRE(terms[1].size() == 2);
    for (std::size_t t = 0; t < 2; ++t) {
      INFO("term " << t << ": " << terms[0][t] << " recorded " << terms[1][t]);
      CHECK(terms[0][t] > 0);
      CHECK(std::fabs(terms[1][t] - terms[0][t]) <= 1e-2 * std::fabs(terms[0][t]));
    }
  }
  CHECK(warnings.empty());
  for (const auto& w : warnings) WARN(w);
  // Steps 0-3 run forward-only clips (a warm-up, two recordings, a replay); from step
  // 4 the clips run backward too, another shape: a warm-up, two recordings, replays.
  const auto counts = recorded.runner.recording_counts();
  WARN("semi-supervised steps: " << counts.replayed << " replays, " << counts.recorded << " recordings of 9");
  CHECK(counts.recorded >= 4);
  CHECK(counts.replayed - forward_only.replayed >= 2);  // steps 7 and 8 replay the backward shape
  const auto pp = plain.params(), pr = recorded.params();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < pp.size(); ++i) {
    num += (double(pr[i]) - pp[i]) * (double(pr[i]) - pp[i]);
    den += double(pp[i]) * pp[i];
  }
  CHECK(std::sqrt(num / den) < 1e-3);
}
