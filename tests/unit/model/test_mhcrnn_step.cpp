// The training step with the context model: 5 frames per row go in, both branches
// are scored against the same targets (loss = mean of the two branch losses, as
// lightning-pose's single mean over the concatenation), and predictions take the
// more confident branch per keypoint.
#include <catch2/catch.hpp>

#include <vector>

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "data/batch.hpp"
#include "model/mhcrnn_model.hpp"
#include "model_test_util.hpp"
#include "train/step.hpp"
#include "util/error.hpp"

using namespace trainer;

TEST_CASE("StepRunner with heatmap_mhcrnn: loss over both branches, merged predictions", "[model][mhcrnn][train]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  const int B = 2, K = 3, H = 64, W = 64, F = 5;
  model::MhcrnnModel m(*b, model::ModelSpec{"resnet18", K, 2});
  m.initialize(21, s);
  train::StepRunner runner(*b, s, m, compute::heatmap_mse_loss());

  auto images = model_test::random_vector(std::size_t(B) * F * 3 * H * W, 8);
  data::Batch batch;
  batch.size = B;
  batch.context_frames = F;
  batch.height = H;
  batch.width = W;
  batch.num_keypoints = K;
  batch.images = images.data();
  batch.keypoints = model_test::random_keypoints(B, K, H, 9);
  batch.is_real.assign(B, 1);
  batch.frame_index = {0, 1};
  train::Predictions p;
  const train::EvalSums sums = runner.evaluate(batch, &p);
  REQUIRE(sums.loss_count == 2 * B * K);  // every keypoint counted once per branch
  const double loss = sums.loss_weighted / sums.loss_count;

  // Reference: the same forward, each branch scored and decoded on its own.
  compute::DeviceBuffer x(*b, images.size());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, false, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), {B * F, 3, H, W}});
  REQUIRE(y.shape == compute::Shape4{2 * B, K, H / 4, W / 4});
  const compute::Shape4 half{B, K, H / 4, W / 4};
  std::vector<float> kp(batch.keypoints);
  for (auto& v : kp) v *= 0.25f;  // network-input pixels -> heatmap pixels
  compute::DeviceBuffer kp_d(*b, kp.size()), targets(*b, half.numel()), mask(*b, B * K), l(*b, 1),
      coords(*b, 2 * B * K * 2), conf(*b, 2 * B * K);
  b->upload(kp_d.data(), kp.data(), kp.size(), s);
  b->heatmap_targets(kp_d.data(), {targets.data(), half}, train::kHeatmapSigma, mask.data(), s);
  double branch_loss[2];
  for (int br = 0; br < 2; ++br) {
    float v = 0;
    b->heatmap_loss({y.data + br * half.numel(), half}, {targets.data(), half}, mask.data(), compute::heatmap_mse_loss(),
                    l.data(), nullptr, 1.f, s);
    b->download(&v, l.data(), 1, s);
    s.synchronize();
    branch_loss[br] = v;
  }
  CHECK(loss == Approx(0.5 * (branch_loss[0] + branch_loss[1])).epsilon(1e-5));
  CHECK(branch_loss[0] != Approx(branch_loss[1]).epsilon(1e-6));  // two different branches

  b->soft_argmax(y, 2, train::kSoftArgmaxTemperature, coords.data(), conf.data(), s);
  std::vector<float> c(2 * B * K * 2), k(2 * B * K), ec, ek;
  b->download(c.data(), coords.data(), c.size(), s);
  b->download(k.data(), conf.data(), k.size(), s);
  s.synchronize();
  model::MhcrnnModel::select_keypoints(B, K, c, k, ec, ek);
  REQUIRE(p.coords.size() == ec.size());
  for (std::size_t i = 0; i < ec.size(); ++i) CHECK(p.coords[i] == Approx(ec[i]).margin(1e-4));
  for (std::size_t i = 0; i < ek.size(); ++i) CHECK(p.confidence[i] == Approx(ek[i]).margin(1e-6));

  // A batch without context frames is a user error, not a crash.
  batch.context_frames = 1;
  CHECK_THROWS_AS(runner.evaluate(batch, &p), UserError);
}
