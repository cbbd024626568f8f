#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compute/backend.hpp"
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

TEST_CASE("max pool 3x3/2 pad 1: PyTorch values, first maximum wins, gradient routing",
          "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const PoolGeometry g{3, 2, 1};
  const Shape4 xs{2, 3, 9, 8}, ys{2, 3, g.out(9), g.out(8)};
  auto x = random_vector(xs.numel(), 21, -3.f, -1.f);  // all negative: padding must not win
  std::vector<float> y(ys.numel());
  be->maxpool2d_forward({x.data(), xs}, {y.data(), ys}, g, st);
  for (int p = 0; p < xs.n * xs.c; ++p)
    for (int oy = 0; oy < ys.h; ++oy)
      for (int ox = 0; ox < ys.w; ++ox) {
        float m = -std::numeric_limits<float>::infinity();
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
            if (iy >= 0 && iy < xs.h && ix >= 0 && ix < xs.w)
              m = std::max(m, x[(std::size_t(p) * xs.h + iy) * xs.w + ix]);
          }
        REQUIRE(y[(std::size_t(p) * ys.h + oy) * ys.w + ox] == m);
      }
  auto dy = random_vector(ys.numel(), 22);
  std::vector<float> dx(xs.numel(), 5.f);
  be->maxpool2d_backward({x.data(), xs}, {dy.data(), ys}, {dx.data(), xs}, g, st);
  // the gradient's total mass is preserved and lands on input maxima
  double sdx = 0, sdy = 0;
  for (float v : dx) sdx += v;
  for (float v : dy) sdy += v;
  CHECK(sdx == Approx(sdy).epsilon(1e-5));

  // ties: a constant plane routes each window's gradient to its first (top-left) element
  const Shape4 ts{1, 1, 4, 4}, tys{1, 1, 2, 2};
  std::vector<float> tx(16, 1.f), tdy{1.f, 10.f, 100.f, 1000.f}, tdx(16);
  be->maxpool2d_backward({tx.data(), ts}, {tdy.data(), tys}, {tdx.data(), ts}, g, st);
  // window (0,0) covers rows/cols -1..1 -> first valid is (0,0); (0,1) covers cols 1..3 -> (0,1)
  CHECK(tdx[0] == 1.f);
  CHECK(tdx[1] == 10.f);
  CHECK(tdx[4] == 100.f);
  CHECK(tdx[5] == 1000.f);

  // NaN propagates and takes the gradient (PyTorch)
  std::vector<float> nx(16, 1.f), ny(4), ndx(16);
  nx[5] = std::numeric_limits<float>::quiet_NaN();
  nx[6] = 2.f;
  be->maxpool2d_forward({nx.data(), ts}, {ny.data(), tys}, g, st);
  CHECK(std::isnan(ny[0]));
  CHECK(std::isnan(ny[1]));
  CHECK(std::isnan(ny[3]));
  be->maxpool2d_backward({nx.data(), ts}, {tdy.data(), tys}, {ndx.data(), ts}, g, st);
  CHECK(ndx[5] == 1.f + 10.f + 100.f + 1000.f);  // every window contains (1,1)
  CHECK(ndx[6] == 0.f);
}

TEST_CASE("relu, relu backward, residual add+relu, accumulate", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  std::vector<float> x{-2.f, -0.f, 0.5f, 3.f}, y(4), dy{1.f, 2.f, 3.f, 4.f}, dx(4);
  be->relu_forward(x.data(), y.data(), 4, st);
  CHECK(y == std::vector<float>{0.f, 0.f, 0.5f, 3.f});
  be->relu_backward(y.data(), dy.data(), dx.data(), 4, st);
  CHECK(dx == std::vector<float>{0.f, 0.f, 3.f, 4.f});
  be->relu_backward(y.data(), dy.data(), dy.data(), 4, st);  // in place
  CHECK(dy == std::vector<float>{0.f, 0.f, 3.f, 4.f});
  std::vector<float> a{1.f, -1.f, 2.f, -5.f}, b{-2.f, 3.f, 1.f, 1.f}, r(4);
  be->add_relu_forward(a.data(), b.data(), r.data(), 4, st);
  CHECK(r == std::vector<float>{0.f, 2.f, 3.f, 0.f});
  be->accumulate(a.data(), b.data(), 4, st);
  CHECK(b == std::vector<float>{-1.f, 2.f, 3.f, -4.f});
  // large sizes take the parallel path
  auto big = random_vector(100000, 3);
  std::vector<float> bigy(big.size());
  be->relu_forward(big.data(), bigy.data(), big.size(), st);
  for (std::size_t i = 0; i < big.size(); ++i) REQUIRE(bigy[i] == std::max(big[i], 0.f));
}

TEST_CASE("pixel shuffle follows PyTorch's channel order and backward inverts it", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const int r = 2;
  const Shape4 xs{2, 8, 3, 4}, ys{2, 2, 6, 8};
  auto x = random_vector(xs.numel(), 31);
  std::vector<float> y(ys.numel()), back(xs.numel());
  be->pixel_shuffle_forward({x.data(), xs}, {y.data(), ys}, r, st);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 6; ++h)
        for (int w = 0; w < 8; ++w) {
          const int ic = c * r * r + (h % r) * r + (w % r);
          REQUIRE(y[((std::size_t(n) * 2 + c) * 6 + h) * 8 + w] ==
                  x[((std::size_t(n) * 8 + ic) * 3 + h / r) * 4 + w / r]);
        }
  be->pixel_shuffle_backward({y.data(), ys}, {back.data(), xs}, r, st);
  CHECK(back == x);
}

TEST_CASE("affine_points maps (x, y) pairs; its transposed linear part carries their gradient back",
          "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& st = be->default_stream();
  AffineMap2D map;
  const float m[6] = {0.9f, -0.2f, 5.f, 0.3f, 1.1f, -7.f};
  std::copy(m, m + 6, map.m);
  std::vector<float> xy{1.f, 2.f, -3.f, 10.f};
  be->affine_points(xy.data(), 2, map.m, st);  // CPU "device" memory is host memory
  CHECK(xy[0] == Approx(0.9f - 0.4f + 5.f));
  CHECK(xy[1] == Approx(0.3f + 2.2f - 7.f));
  CHECK(xy[2] == Approx(-2.7f - 2.f + 5.f));
  CHECK(xy[3] == Approx(-0.9f + 11.f - 7.f));
  // d/dp of g . (A p + b) is A^T g.
  std::vector<float> g{1.f, 0.f, 0.f, 1.f};
  const AffineMap2D back = map.transposed_linear();
  be->affine_points(g.data(), 2, back.m, st);
  CHECK(g == std::vector<float>{0.9f, -0.2f, 0.3f, 1.1f});
}
