#include <catch2/catch.hpp>

#include <cmath>

#include "compute/backend.hpp"
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {
// Training-mode batch norm forward through the split API, as the model runs it.
std::vector<float> bn_train(Backend& be, const std::vector<float>& x, Shape4 s,
                            const std::vector<float>& gamma, const std::vector<float>& beta,
                            std::vector<float>& mean, std::vector<float>& invstd,
                            std::vector<float>* rm = nullptr, std::vector<float>* rv = nullptr) {
  Stream& st = be.default_stream();
  std::vector<float> stats(batchnorm_moments_size(s.c)), y(x.size());
  mean.assign(s.c, 0.f);
  invstd.assign(s.c, 0.f);
  be.batchnorm_moments({x.data(), s}, stats.data(), st);
  be.batchnorm_finalize(stats.data(), 1, s.c, 1e-5f, 0.1f, mean.data(),
                        invstd.data(), rm ? rm->data() : nullptr, rv ? rv->data() : nullptr, st);
  be.batchnorm_apply({x.data(), s}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                     {y.data(), s}, st);
  return y;
}
}  // namespace

TEST_CASE("batch norm forward (train) matches PyTorch's formulas, running stats included",
          "[compute]") {
  auto be = make_cpu_backend(2);
  const Shape4 s{3, 4, 5, 6};
  auto x = random_vector(s.numel(), 7, -2.f, 3.f);
  auto gamma = random_vector(s.c, 8, 0.5f, 1.5f), beta = random_vector(s.c, 9);
  std::vector<float> rm(s.c, 0.f), rv(s.c, 1.f), mean, invstd;
  auto y = bn_train(*be, x, s, gamma, beta, mean, invstd, &rm, &rv);
  const double cnt = double(s.n) * s.h * s.w;
  for (int c = 0; c < s.c; ++c) {
    double mu = 0, var = 0;
    for (int n = 0; n < s.n; ++n)
      for (std::size_t i = 0; i < s.plane(); ++i) mu += x[(std::size_t(n) * s.c + c) * s.plane() + i];
    mu /= cnt;
    for (int n = 0; n < s.n; ++n)
      for (std::size_t i = 0; i < s.plane(); ++i) {
        const double d = x[(std::size_t(n) * s.c + c) * s.plane() + i] - mu;
        var += d * d;
      }
    var /= cnt;  // biased
    CHECK(mean[c] == Approx(mu).epsilon(1e-5));
    CHECK(invstd[c] == Approx(1 / std::sqrt(var + 1e-5)).epsilon(1e-5));
    CHECK(rm[c] == Approx(0.1 * mu).epsilon(1e-5));
    CHECK(rv[c] == Approx(0.9 + 0.1 * var * cnt / (cnt - 1)).epsilon(1e-5));  // unbiased
    for (int n = 0; n < s.n; ++n)
      for (std::size_t i = 0; i < s.plane(); ++i) {
        const std::size_t j = (std::size_t(n) * s.c + c) * s.plane() + i;
        REQUIRE(y[j] == Approx((x[j] - mu) / std::sqrt(var + 1e-5) * gamma[c] + beta[c]).margin(1e-5));
      }
  }
  // inference stats from the running statistics
  std::vector<float> m2(s.c), is2(s.c);
  be->batchnorm_inference_stats(rm.data(), rv.data(), s.c, 1e-5f, m2.data(), is2.data(),
                                be->default_stream());
  CHECK(m2[1] == rm[1]);
  CHECK(is2[1] == Approx(1 / std::sqrt(rv[1] + 1e-5)).epsilon(1e-6));
}

TEST_CASE("batch norm backward (train) matches finite differences", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const Shape4 s{2, 3, 4, 3};
  auto x = random_vector(s.numel(), 11, -1.f, 2.f);
  auto gamma = random_vector(s.c, 12, 0.5f, 1.5f), beta = random_vector(s.c, 13);
  auto r = random_vector(s.numel(), 14);  // loss = sum(y * r), so dy = r
  std::vector<float> mean, invstd;
  bn_train(*be, x, s, gamma, beta, mean, invstd);
  std::vector<float> reduce(2 * s.c), dgamma(s.c), dbeta(s.c), dx(s.numel());
  be->batchnorm_backward_reduce({r.data(), s}, {x.data(), s}, mean.data(), reduce.data(), st);
  be->batchnorm_param_grads(reduce.data(), invstd.data(), s.c, dgamma.data(), dbeta.data(), st);
  be->batchnorm_backward_apply({r.data(), s}, {x.data(), s}, mean.data(), invstd.data(),
                               gamma.data(), reduce.data(), double(s.n) * s.h * s.w,
                               {dx.data(), s}, st);
  auto loss = [&](const std::vector<float>& xx, const std::vector<float>& g,
                  const std::vector<float>& b) {
    std::vector<float> m, is;
    return dot(bn_train(*be, xx, s, g, b, m, is), r);
  };
  const float h = 1e-2f;
  for (std::size_t i = 0; i < x.size(); i += 5) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    CHECK(dx[i] == Approx((loss(xp, gamma, beta) - loss(xm, gamma, beta)) / (2 * h)).margin(2e-3));
  }
  for (int c = 0; c < s.c; ++c) {
    auto gp = gamma, gm = gamma, bp = beta, bm = beta;
    gp[c] += h;
    gm[c] -= h;
    bp[c] += h;
    bm[c] -= h;
    CHECK(dgamma[c] == Approx((loss(x, gp, beta) - loss(x, gm, beta)) / (2 * h)).margin(2e-3));
    CHECK(dbeta[c] == Approx((loss(x, gamma, bp) - loss(x, gamma, bm)) / (2 * h)).margin(2e-3));
  }
}

TEST_CASE("batch norm statistics of 2 ranks merged match float64 on a channel with mean 1000 and std 0.01",
          "[compute][batchnorm]") {
  // E[x^2] - E[x]^2 in float loses every digit here (x^2 ~ 1e6 with ulp 0.06,
  // var 1e-4); per-rank (mean, M2, count) merged with Chan's formula does not.
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const Shape4 s{8, 3, 32, 32};  // per rank: 8 images, a layer1-sized plane at 128x128
  const double centers[3] = {1000.0, -3.0, 0.0}, spreads[3] = {0.01, 1.0, 2.0};
  std::vector<float> x[2];
  for (int r = 0; r < 2; ++r) {
    x[r] = random_vector(s.numel(), 90 + r, -1.f, 1.f);
    for (std::size_t j = 0; j < x[r].size(); ++j) {
      const int ch = int(j / s.plane()) % s.c;
      x[r][j] = float(centers[ch] + spreads[ch] * 1.7320508 * x[r][j] + (r == 1 ? spreads[ch] : 0.0));
    }
  }
  const std::size_t block = batchnorm_moments_size(s.c);
  std::vector<float> gathered(2 * block);
  for (int r = 0; r < 2; ++r) be->batchnorm_moments({x[r].data(), s}, gathered.data() + r * block, st);
  std::vector<float> mean(s.c), invstd(s.c), rm(s.c, 0.f), rv(s.c, 1.f);
  be->batchnorm_finalize(gathered.data(), 2, s.c, 1e-5f, 0.1f, mean.data(), invstd.data(), rm.data(), rv.data(),
                         st);
  const double count = 2.0 * s.n * s.plane();
  CHECK(gathered[3 * s.c] == float(s.n * s.plane()));
  for (int ch = 0; ch < s.c; ++ch) {
    double mu = 0, m2 = 0;  // float64 reference, two passes over both ranks
    for (int r = 0; r < 2; ++r)
      for (int n = 0; n < s.n; ++n)
        for (std::size_t i = 0; i < s.plane(); ++i) mu += x[r][(std::size_t(n) * s.c + ch) * s.plane() + i];
    mu /= count;
    for (int r = 0; r < 2; ++r)
      for (int n = 0; n < s.n; ++n)
        for (std::size_t i = 0; i < s.plane(); ++i) {
          const double d = x[r][(std::size_t(n) * s.c + ch) * s.plane() + i] - mu;
          m2 += d * d;
        }
    const double var = m2 / count;
    INFO("channel " << ch << ": mean " << mean[ch] << " vs " << mu << ", invstd " << invstd[ch] << " vs "
                    << 1 / std::sqrt(var + 1e-5));
    CHECK(std::abs(mean[ch] - mu) <= 1e-6 * std::abs(mu) + 1e-6 * spreads[ch]);
    CHECK(invstd[ch] == Approx(1 / std::sqrt(var + 1e-5)).epsilon(1e-5));
    CHECK(rv[ch] == Approx(0.9 + 0.1 * m2 / (count - 1)).epsilon(1e-5));
    CHECK(rm[ch] == Approx(0.1 * mu).epsilon(1e-5));
  }
}

// The two ops a batch norm without synchronized statistics calls (local statistics,
// backward sums with parameter gradients) must give what the split ops give: the CUDA
// backend folds their steps into fewer kernels (TRAINER_BN_FOLD), and the CPU backend
// composes them from the split ops.
TEST_CASE("batch norm's local statistics and backward sums with gradients equal the split ops", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const Shape4 s{3, 5, 7, 6};
  const int c = s.c;
  const auto x = random_vector(s.numel(), 31, -2.f, 3.f), dy = random_vector(s.numel(), 32);
  const auto gamma = random_vector(c, 33, 0.5f, 1.5f), beta = random_vector(c, 34);
  const auto rm0 = random_vector(c, 35), rv0 = random_vector(c, 36, 0.5f, 2.f);

  std::vector<float> moments(batchnorm_moments_size(c)), mean(c), invstd(c), rm = rm0, rv = rv0;
  be->batchnorm_local_statistics({x.data(), s}, moments.data(), 1e-5f, 0.1f, mean.data(), invstd.data(), rm.data(),
                                 rv.data(), st);
  std::vector<float> moments2(moments.size()), mean2(c), invstd2(c), rm2 = rm0, rv2 = rv0;
  be->batchnorm_moments({x.data(), s}, moments2.data(), st);
  be->batchnorm_finalize(moments2.data(), 1, c, 1e-5f, 0.1f, mean2.data(), invstd2.data(), rm2.data(), rv2.data(), st);
  CHECK(moments == moments2);
  CHECK(mean == mean2);
  CHECK(invstd == invstd2);
  CHECK(rm == rm2);
  CHECK(rv == rv2);
  CHECK(rm != rm0);  // the running statistics moved

  for (bool relu : {false, true}) {
    INFO((relu ? "through the ReLU" : "plain"));
    std::vector<float> reduce(2 * c), dgamma(c), dbeta(c);
    be->batchnorm_backward_reduce_grads({dy.data(), s}, {x.data(), s}, mean.data(), invstd.data(), gamma.data(),
                                        beta.data(), relu, reduce.data(), dgamma.data(), dbeta.data(), st);
    std::vector<float> reduce2(2 * c), dgamma2(c), dbeta2(c);
    if (relu)
      be->batchnorm_relu_backward_reduce({dy.data(), s}, {x.data(), s}, mean.data(), invstd.data(), gamma.data(),
                                         beta.data(), reduce2.data(), st);
    else
      be->batchnorm_backward_reduce({dy.data(), s}, {x.data(), s}, mean.data(), reduce2.data(), st);
    be->batchnorm_param_grads(reduce2.data(), invstd.data(), c, dgamma2.data(), dbeta2.data(), st);
    CHECK(reduce == reduce2);
    CHECK(dgamma == dgamma2);
    CHECK(dbeta == dbeta2);
    for (int ch = 0; ch < c; ++ch) {
      CHECK(dbeta[ch] == reduce[ch]);
      CHECK(dgamma[ch] == reduce[c + ch] * invstd[ch]);
    }
  }
}
