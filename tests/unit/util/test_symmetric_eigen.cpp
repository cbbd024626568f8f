#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "util/error.hpp"
#include "util/symmetric_eigen.hpp"

using trainer::symmetric_eigen;

namespace {
// max |A v_i - lambda_i v_i| and max |V V^T - I|.
void check_decomposition(const std::vector<double>& a, int n, double tol) {
  const auto e = symmetric_eigen(a, n);
  REQUIRE(e.values.size() == std::size_t(n));
  for (int i = 0; i + 1 < n; ++i) CHECK(e.values[i] >= e.values[i + 1]);
  double residual = 0, ortho = 0;
  for (int i = 0; i < n; ++i) {
    for (int r = 0; r < n; ++r) {
      double av = 0;
      for (int c = 0; c < n; ++c) av += a[r * n + c] * e.vectors[i * n + c];
      residual = std::max(residual, std::fabs(av - e.values[i] * e.vectors[i * n + r]));
    }
    for (int j = 0; j < n; ++j) {
      double d = 0;
      for (int c = 0; c < n; ++c) d += e.vectors[i * n + c] * e.vectors[j * n + c];
      ortho = std::max(ortho, std::fabs(d - (i == j ? 1.0 : 0.0)));
    }
  }
  CHECK(residual < tol);
  CHECK(ortho < 1e-12);
}
}  // namespace

TEST_CASE("symmetric_eigen: 2x2 by hand", "[util]") {
  // [[2, 1], [1, 2]]: 3 with (1, 1)/sqrt2, 1 with (1, -1)/sqrt2.
  const auto e = symmetric_eigen({2, 1, 1, 2}, 2);
  CHECK(e.values[0] == Approx(3.0).epsilon(1e-14));
  CHECK(e.values[1] == Approx(1.0).epsilon(1e-14));
  CHECK(std::fabs(e.vectors[0]) == Approx(std::sqrt(0.5)).epsilon(1e-14));
  CHECK(e.vectors[0] * e.vectors[1] > 0);
  CHECK(e.vectors[2] * e.vectors[3] < 0);
}

TEST_CASE("symmetric_eigen: diagonal, 1x1 and empty", "[util]") {
  const auto d = symmetric_eigen({1, 0, 0, 0, 5, 0, 0, 0, -2}, 3);
  CHECK(d.values == std::vector<double>{5, 1, -2});
  CHECK(d.vectors == std::vector<double>{0, 1, 0, 1, 0, 0, 0, 0, 1});
  CHECK(symmetric_eigen({7}, 1).values == std::vector<double>{7});
  CHECK(symmetric_eigen({}, 0).values.empty());
}

TEST_CASE("symmetric_eigen: random symmetric and low-rank PSD matrices up to 100", "[util]") {
  std::mt19937 rng(3);
  std::normal_distribution<double> g;
  for (int n : {3, 8, 34, 100}) {
    std::vector<double> a(std::size_t(n) * n);
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j) a[i * n + j] = a[j * n + i] = g(rng);
    INFO("n = " << n);
    check_decomposition(a, n, 1e-11 * n);
    // Rank 3 PSD: B B^T, B [n, 3] -> three positive eigenvalues, the rest ~0.
    std::vector<double> b(std::size_t(n) * 3), p(std::size_t(n) * n, 0.0);
    for (double& v : b) v = g(rng);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < 3; ++k) p[i * n + j] += b[i * 3 + k] * b[j * 3 + k];
    check_decomposition(p, n, 1e-11 * n);
    const auto e = symmetric_eigen(p, n);
    CHECK(e.values[2] > 1e-3);
    if (n > 3) CHECK(std::fabs(e.values[3]) < 1e-10 * e.values[0]);
  }
}

TEST_CASE("symmetric_eigen: only the upper triangle is read; non-finite input throws", "[util]") {
  const auto e = symmetric_eigen({2, 1, 999, 2}, 2);
  CHECK(e.values[0] == Approx(3.0));
  CHECK_THROWS_AS(symmetric_eigen({1, NAN, NAN, 1}, 2), trainer::SystemError);
}
