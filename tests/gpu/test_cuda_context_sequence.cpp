// The context model (heatmap_mhcrnn) on one sequence of frames, as its unlabelled
// batches and its video predictions arrive since 2026-11-29 (MhcrnnModel::
// forward_sequence: the backbone once a frame, the rows' feature maps gathered, each
// frame's gradient summed over the rows that read it). On the GPU against the same
// device's forward on the rows written out (eval mode: the same function), and
// against the CPU backend in both passes. fp32, from the same initial weights; the
// bounds catch a wrong gather or sum (errors of the heatmaps' own size), not rounding.
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy, std::max
#include <cmath>      // std::fabs, std::sqrt
#include <vector>     // std::vector

#include "gpu_test_util.hpp"
#include "model/mhcrnn_model.hpp"

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

namespace {

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("cuda context model on a frame sequence: forward's rows, and the CPU's heatmaps and gradients",
          "[gpu][mhcrnn]") {
  Twins t;
  const int rows = 3, size = 64;
  const Shape4 seq{rows + 4, 3, size, size}, expanded{rows * 5, 3, size, size};
  const std::size_t frame = std::size_t(3) * size * size;
  const auto frames = random_vector(seq.numel(), 21);
  std::vector<float> written(expanded.numel());
  for (int i = 0; i < rows; ++i)
    std::copy(frames.begin() + long(std::size_t(i) * frame), frames.begin() + long(std::size_t(i + 5) * frame),
              written.begin() + long(std::size_t(i) * 5 * frame));
  model::MhcrnnModel gm(*t.gpu, model::ModelSpec{"resnet18", 2, 2});
  model::MhcrnnModel cm(*t.cpu, model::ModelSpec{"resnet18", 2, 2});
  gm.initialize(5, t.gs());
  cm.initialize(5, t.cs());
  auto xs = t.device(frames), xe = t.device(written);

  model::Context gpu_eval{*t.gpu, t.gs(), false, nullptr, nullptr};
  model::Context cpu_eval{*t.cpu, t.cs(), false, nullptr, nullptr};
  auto y = gm.forward_sequence(gpu_eval, {xs.data(), seq}, rows);
  const auto from_sequence = t.host(y.data, y.shape.numel());
  y = gm.forward(gpu_eval, {xe.data(), expanded});
  const auto from_rows = t.host(y.data, y.shape.numel());
  CHECK(max_abs_difference(from_sequence, from_rows) < 1e-5);  // heatmaps sum to 1 per plane
  auto c = cm.forward_sequence(cpu_eval, {frames.data(), seq}, rows);
  std::vector<float> on_cpu(c.shape.numel());
  t.cpu->download(on_cpu.data(), c.data, on_cpu.size(), t.cs());
  t.cs().synchronize();
  CHECK(max_abs_difference(from_sequence, on_cpu) < 1e-4);

  // Training mode: batch statistics over the sequence's frames; the same random
  // gradient of the heatmaps on both devices.
  model::Context gpu_train{*t.gpu, t.gs(), true, nullptr, nullptr};
  model::Context cpu_train{*t.cpu, t.cs(), true, nullptr, nullptr};
  y = gm.forward_sequence(gpu_train, {xs.data(), seq}, rows);
  c = cm.forward_sequence(cpu_train, {frames.data(), seq}, rows);
  const auto dheatmaps = random_vector(y.shape.numel(), 22);
  auto gd = t.device(dheatmaps);
  gm.backward(gpu_train, {gd.data(), y.shape}, true);
  cm.backward(cpu_train, {dheatmaps.data(), c.shape}, true);
  const std::size_t count = cm.store().parameter_count();
  const auto gpu_grads = t.host(gm.store().grads_data(), count);
  std::vector<float> cpu_grads(count);
  t.cpu->download(cpu_grads.data(), cm.store().grads_data(), count, t.cs());
  t.cs().synchronize();
  double largest = 0;
  for (float v : cpu_grads) largest = std::max(largest, double(std::fabs(v)));
  CHECK(largest > 0);
  // From initialization float32 noise alone is about 1e-3 (docs: parity tests); a
  // frame's gradient summed over the wrong rows is of the gradient's own size.
  CHECK(relative_l2(gpu_grads, cpu_grads) < 2e-2);
  const auto first_conv = std::size_t(cm.store().find_parameter("backbone.conv1.weight"));
  const auto& e = cm.store().parameters()[first_conv];
  const std::vector<float> g_stem(gpu_grads.begin() + long(e.offset), gpu_grads.begin() + long(e.offset + e.count));
  const std::vector<float> c_stem(cpu_grads.begin() + long(e.offset), cpu_grads.begin() + long(e.offset + e.count));
  CHECK(relative_l2(g_stem, c_stem) < 2e-2);  // the first layer: every frame's summed gradient passes here
}
