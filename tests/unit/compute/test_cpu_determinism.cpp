#include <catch2/catch.hpp>

#include <cstring>

#include "compute/backend.hpp"
#include "compute/losses/heatmap_js.hpp"  // heatmap_js_loss
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

// --resume must reproduce a run bit for bit on the CPU: the same op on the same
// inputs with the same thread count gives identical bits (no arrival-order sums).
TEST_CASE("cpu ops are bit-reproducible run to run (3 threads)", "[compute]") {
  auto run = [](std::vector<float>& out) {
    auto be = make_cpu_backend(3);
    Stream& s = be->default_stream();
    const ConvGeometry g{8, 16, 3, 1, 1, 0};
    const Shape4 xs{4, 8, 12, 12}, ys{4, 16, 12, 12};
    auto x = random_vector(xs.numel(), 1), w = random_vector(16 * 8 * 9, 2);
    auto dy = random_vector(ys.numel(), 3);
    std::vector<float> y(ys.numel()), dx(xs.numel()), dw(w.size()), stats(32), red(32);
    be->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, s);
    be->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s);
    be->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, s);
    be->batchnorm_stats({y.data(), ys}, stats.data(), s);
    std::vector<float> mean(16, 0.1f);
    be->batchnorm_backward_reduce({dy.data(), ys}, {y.data(), ys}, mean.data(), red.data(), s);
    const Shape4 hs{4, 5, 8, 8};
    auto p = random_vector(hs.numel(), 4, 0.f, 1.f), t = random_vector(hs.numel(), 5, 0.f, 1.f);
    float loss = 0;
    std::vector<float> dp(hs.numel());
    be->heatmap_loss({p.data(), hs}, {t.data(), hs}, nullptr, heatmap_js_loss(), &loss, dp.data(),
                     1.f, s);
    out = y;
    out.insert(out.end(), dx.begin(), dx.end());
    out.insert(out.end(), dw.begin(), dw.end());
    out.insert(out.end(), stats.begin(), stats.end());
    out.insert(out.end(), red.begin(), red.end());
    out.insert(out.end(), dp.begin(), dp.end());
    out.push_back(loss);
  };
  std::vector<float> a, b;
  run(a);
  for (int i = 0; i < 3; ++i) {
    run(b);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}
