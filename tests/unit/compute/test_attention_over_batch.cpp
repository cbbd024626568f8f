// The GPU's batched attention (src/compute/cuda/attention_over_batch.hpp: the generic
// products re-strided to go one head at a time over the batch) run on the CPU's
// matmul, as cuda_transformer_attention32.cpp runs them, against the generic
// attention: the same values, with as many queries as keys and with fewer (SAM2's
// pooled queries). The strides are checked here, where no GPU is needed.
#include <catch2/catch.hpp>

#include <cmath>   // std::fabs
#include <random>  // std::mt19937
#include <vector>  // std::vector

#include "compute/backend.hpp"                    // make_cpu_backend
#include "compute/cuda/attention_over_batch.hpp"  // over_batch, the products' Views

using namespace trainer::compute;
using namespace trainer::compute::cuda;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

TEST_CASE("the over-batch attention products give the generic attention, fewer queries included",
          "[compute][transformer][sam2]") {
  auto backend = make_cpu_backend(2);
  TransformerOps& ops = backend->transformer_ops();
  Stream& s = backend->default_stream();
  AttentionShape a;
  a.batch = 5, a.tokens = 12, a.heads = 3, a.head_dim = 4;
  a.query_tokens = GENERATE(0, 3);
  const int Q = a.queries(), T = a.tokens, D = a.head_dim, W = a.width();
  INFO(Q << " queries over " << T << " keys");
  const std::size_t nq = std::size_t(a.batch) * Q * W, n = std::size_t(a.batch) * T * W;
  const auto q = random_values(nq, 1), k = random_values(n, 2), v = random_values(n, 3), dout = random_values(nq, 4);

  std::vector<float> probs(a.probs_count()), out(nq), dq(nq), dk(n), dv(n), scratch(a.scratch_count());
  ops.attention_forward(q.data(), k.data(), v.data(), probs.data(), out.data(), a, s);
  ops.attention_backward(q.data(), k.data(), v.data(), probs.data(), out.data(), dout.data(), dq.data(), dk.data(),
                         dv.data(), scratch.data(), a, s);

  // attention_forward32 / attention_backward32's sequence on the CPU's matmul.
  const std::size_t plane = std::size_t(Q) * T;
  const AttentionProducts p = attention_products(a);
  std::vector<float> p2(a.probs_count()), out2(nq), dscores(a.probs_count()), dq2(nq), dk2(n), dv2(n);
  for (int h = 0; h < a.heads; ++h)
    ops.matmul(over_batch(p.scores, a, kScoresViews), q.data() + h * D, k.data() + h * D, p2.data() + h * plane, s);
  ops.softmax_forward(p2.data(), p2.data(), a.batch * a.heads * Q, T, s);
  for (int h = 0; h < a.heads; ++h)
    ops.matmul(over_batch(p.context, a, kContextViews), p2.data() + h * plane, v.data() + h * D, out2.data() + h * D,
               s);
  CHECK(max_diff(p2, probs) < 1e-6);
  CHECK(max_diff(out2, out) < 1e-6);
  for (int h = 0; h < a.heads; ++h)
    ops.matmul(over_batch(p.dprobs, a, kDprobsViews), dout.data() + h * D, v.data() + h * D,
               dscores.data() + h * plane, s);
  ops.softmax_backward(p2.data(), dscores.data(), dscores.data(), a.batch * a.heads * Q, T, s);
  for (int h = 0; h < a.heads; ++h) {
    ops.matmul(over_batch(p.dv, a, kDvViews), p2.data() + h * plane, dout.data() + h * D, dv2.data() + h * D, s);
    ops.matmul(over_batch(p.dq, a, kDqViews), dscores.data() + h * plane, k.data() + h * D, dq2.data() + h * D, s);
    ops.matmul(over_batch(p.dk, a, kDkViews), dscores.data() + h * plane, q.data() + h * D, dk2.data() + h * D, s);
  }
  CHECK(max_diff(dv2, dv) < 1e-6);
  CHECK(max_diff(dq2, dq) < 1e-6);
  CHECK(max_diff(dk2, dk) < 1e-6);
}
