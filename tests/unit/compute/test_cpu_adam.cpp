#include <catch2/catch.hpp>

#include <cmath>

#include "compute/adam_factors.hpp"  // AdamFactors, adam_factors
#include "compute/backend.hpp"
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {
// torch.optim.Adam / AdamW step, written out in double.
void ref_adam(std::vector<double>& p, const std::vector<float>& g, std::vector<double>& m,
              std::vector<double>& v, const AdamParams& a) {
  const double bc1 = 1 - std::pow(double(a.beta1), double(a.step));
  const double bc2 = 1 - std::pow(double(a.beta2), double(a.step));
  for (std::size_t i = 0; i < p.size(); ++i) {
    double gi = g[i];
    if (a.decoupled_weight_decay) p[i] *= 1 - double(a.lr) * a.weight_decay;
    else gi += a.weight_decay * p[i];
    m[i] = a.beta1 * m[i] + (1 - a.beta1) * gi;
    v[i] = a.beta2 * v[i] + (1 - a.beta2) * gi * gi;
    p[i] -= a.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + a.eps);
  }
}
}  // namespace

TEST_CASE("adam and adamw steps follow torch.optim", "[compute]") {
  auto be = make_cpu_backend(2);
  for (bool decoupled : {false, true}) {
    for (float wd : {0.f, 0.05f}) {
      INFO("decoupled " << decoupled << " wd " << wd);
      const std::size_t n = 1000;
      auto p = random_vector(n, 41);
      std::vector<float> m(n, 0.f), v(n, 0.f);
      std::vector<double> pr(p.begin(), p.end()), mr(n, 0.0), vr(n, 0.0);
      AdamParams a;
      a.lr = 1e-2f;
      a.weight_decay = wd;
      a.decoupled_weight_decay = decoupled;
      for (long step = 1; step <= 5; ++step) {
        a.step = step;
        auto g = random_vector(n, unsigned(50 + step));
        be->adam_update(p.data(), g.data(), m.data(), v.data(), n, a, be->default_stream());
        ref_adam(pr, g, mr, vr, a);
      }
      std::vector<float> prf(pr.begin(), pr.end());
      CHECK(rel_error(p, prf) < 1e-5);
    }
  }
}

TEST_CASE("adam's moments blend by 1 - beta formed in double, as PyTorch's Python floats", "[compute]") {
  // From 0.999f, 1 - beta2 is 1.3e-5 off 0.001: every second moment was that far from
  // PyTorch's (the ViT parity test showed it). Now only float rounding remains.
  auto be = make_cpu_backend(2);
  const std::size_t n = 1000;
  auto p = random_vector(n, 7);
  const auto g = random_vector(n, 8);
  std::vector<float> m(n, 0.f), v(n, 0.f);
  AdamParams a;
  be->adam_update(p.data(), g.data(), m.data(), v.data(), n, a, be->default_stream());
  std::vector<float> m_ref(n), v_ref(n);
  for (std::size_t i = 0; i < n; ++i) {
    m_ref[i] = float((1 - 0.9) * double(g[i]));
    v_ref[i] = float((1 - 0.999) * double(g[i]) * double(g[i]));
  }
  CHECK(rel_error(m, m_ref) < 1e-6);
  CHECK(rel_error(v, v_ref) < 1e-6);
}

TEST_CASE("adam reads its step factors from memory as it would from its arguments", "[compute]") {
  // AdamParams::device_factors (what a replayed CUDA graph reads) gives the same bits
  // as lr and step passed by value, for Adam and AdamW; set_values writes them.
  auto be = make_cpu_backend(2);
  Stream& s = be->default_stream();
  for (bool decoupled : {false, true}) {
    INFO("decoupled " << decoupled);
    const std::size_t n = 777;
    auto by_value = random_vector(n, 3), from_memory = by_value;
    std::vector<float> m1(n, 0.f), v1(n, 0.f), m2(n, 0.f), v2(n, 0.f);
    std::vector<float> factors(AdamFactors::kCount, -1.f);
    for (long step = 1; step <= 4; ++step) {
      AdamParams a;
      a.lr = step == 3 ? 3e-3f : 1e-2f;  // an lr change mid-way, as a scheduler makes
      a.weight_decay = 0.02f;
      a.decoupled_weight_decay = decoupled;
      a.step = step;
      const auto g = random_vector(n, unsigned(90 + step));
      be->adam_update(by_value.data(), g.data(), m1.data(), v1.data(), n, a, s);
      const AdamFactors f = adam_factors(a.lr, a.beta1, a.beta2, a.weight_decay, decoupled, step);
      const float values[AdamFactors::kCount] = {f.step_size, f.inv_sqrt_bc2, f.decay};
      be->set_values(factors.data(), values, AdamFactors::kCount, s);
      CHECK(factors[0] == f.step_size);
      AdamParams read = a;
      read.lr = 99.f, read.step = 0;  // ignored with device_factors
      read.device_factors = factors.data();
      be->adam_update(from_memory.data(), g.data(), m2.data(), v2.data(), n, read, s);
    }
    CHECK(from_memory == by_value);
    CHECK(m2 == m1);
    CHECK(v2 == v1);
  }
}

TEST_CASE("cpu Adam counted on the device (16-mixed): a skipped step neither updates nor counts",
          "[compute][adam]") {
  // count_adam_step then adam_update reading its factors must give the update with the
  // step passed by value, for the steps that ran; a set skip flag leaves parameters,
  // moments, the count and the factors as they were.
  auto be = make_cpu_backend(2);
  Stream& s = be->default_stream();
  for (bool decoupled : {false, true}) {
    INFO("decoupled " << decoupled);
    const std::size_t n = 513;
    auto by_value = random_vector(n, 4), counted = by_value;
    std::vector<float> m1(n, 0.f), v1(n, 0.f), m2(n, 0.f), v2(n, 0.f);
    std::vector<float> factors(AdamFactors::kCount, -1.f);
    float step_count = 0.f, flag = 0.f;
    const float lr = 2e-3f;
    long taken = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
      const bool skipped = attempt == 1 || attempt == 3;
      const auto g = random_vector(n, unsigned(40 + attempt));
      AdamParams a;
      a.weight_decay = 0.01f;
      a.decoupled_weight_decay = decoupled;
      a.device_factors = factors.data();
      a.skip = &flag;
      flag = skipped ? 1.f : 0.f;
      const auto params_before = counted;
      const auto factors_before = factors;
      be->count_adam_step(&step_count, factors.data(), &lr, a, s);
      be->adam_update(counted.data(), g.data(), m2.data(), v2.data(), n, a, s);
      if (skipped) {
        CHECK(counted == params_before);
        CHECK(factors == factors_before);
        continue;
      }
      ++taken;
      CHECK(step_count == float(taken));
      AdamParams plain;
      plain.lr = lr;
      plain.weight_decay = a.weight_decay;
      plain.decoupled_weight_decay = decoupled;
      plain.step = taken;
      be->adam_update(by_value.data(), g.data(), m1.data(), v1.data(), n, plain, s);
    }
    CHECK(taken == 3);
    CHECK(counted == by_value);
    CHECK(m2 == m1);
    CHECK(v2 == v1);
  }
}
