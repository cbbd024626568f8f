// The CPU's fused batch-norm ops against the separate ops they replace: apply +
// (add) + ReLU forward bit for bit; the ReLU-masked backward reduce and apply
// against relu_backward followed by the plain backward ops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "compute/backend.hpp"
#include "test_util.hpp"  // random_vector, rel_error

using namespace trainer::compute;

using test::random_vector;
using test::rel_error;

TEST_CASE("cpu batchnorm_apply_relu and the ReLU-masked backward match the separate ops", "[compute][fused_norm]") {
  auto b = make_cpu_backend(2);
  auto& s = b->default_stream();
  const Shape4 shape{3, 5, 7, 9};
  const std::size_t n = shape.numel();
  const int c = shape.c;
  auto x = random_vector(n, 1, -2.f, 2.f);
  x[4] = std::nanf("");  // NaN propagates through the ReLU as relu_forward does
  const auto residual = random_vector(n, 2, -1.f, 1.f);
  const auto dy = random_vector(n, 3, -1.f, 1.f);
  const auto mean = random_vector(c, 4, -0.5f, 0.5f);
  const auto invstd = random_vector(c, 5, 0.5f, 2.f);
  const auto gamma = random_vector(c, 6, -1.5f, 1.5f);  // negative gammas flip the mask
  const auto beta = random_vector(c, 7, -0.5f, 0.5f);

  for (bool with_residual : {false, true}) {
    INFO("residual " << with_residual);
    std::vector<float> fused(n), separate(n);
    b->batchnorm_apply_relu({x.data(), shape}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                            with_residual ? residual.data() : nullptr, {fused.data(), shape}, s);
    b->batchnorm_apply({x.data(), shape}, mean.data(), invstd.data(), gamma.data(), beta.data(),
                       {separate.data(), shape}, s);
    if (with_residual) b->add_relu_forward(separate.data(), residual.data(), separate.data(), n, s);
    else b->relu_forward(separate.data(), separate.data(), n, s);
    CHECK(std::isnan(fused[4]));
    fused[4] = separate[4] = 0;
    CHECK(fused == separate);
  }

  // Backward through relu(bn(x)): the separate path masks dy by the forward's output.
  std::vector<float> y(n), masked(n), reduce_sep(2 * c), reduce_fused(2 * c), dx_sep(n), dx_fused(n);
  auto xf = x;
  xf[4] = 0.3f;
  b->batchnorm_apply_relu({xf.data(), shape}, mean.data(), invstd.data(), gamma.data(), beta.data(), nullptr,
                          {y.data(), shape}, s);
  b->relu_backward(y.data(), dy.data(), masked.data(), n, s);
  b->batchnorm_backward_reduce({masked.data(), shape}, {xf.data(), shape}, mean.data(), reduce_sep.data(), s);
  b->batchnorm_relu_backward_reduce({dy.data(), shape}, {xf.data(), shape}, mean.data(), invstd.data(), gamma.data(),
                                    beta.data(), reduce_fused.data(), s);
  CHECK(rel_error(reduce_fused, reduce_sep) < 1e-6);
  const double count = double(shape.n) * shape.h * shape.w;
  b->batchnorm_backward_apply({masked.data(), shape}, {xf.data(), shape}, mean.data(), invstd.data(), gamma.data(),
                              reduce_sep.data(), count, {dx_sep.data(), shape}, s);
  b->batchnorm_relu_backward_apply({dy.data(), shape}, {xf.data(), shape}, mean.data(), invstd.data(), gamma.data(),
                                   beta.data(), reduce_sep.data(), count, {dx_fused.data(), shape}, s);
  CHECK(dx_fused == dx_sep);  // elementwise, same reduce: bit for bit
  const auto zeros = std::count(masked.begin(), masked.end(), 0.f);
  CHECK(zeros > long(n) / 5);  // the mask really masks
  CHECK(zeros < long(n) * 4 / 5);
}
