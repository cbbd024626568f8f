// The ViTs' Linear bias added inside cuBLASLt's product (CudaBackendOptions::
// vit_bias_epilogue, TRAINER_VIT_BIAS_EPILOGUE=1; cuda/lt_bias_gemm.hpp) against the
// CPU twin's product followed by add_bias: the same fp32 sum, so the products differ
// only by summation order (fp32 with TF32 off: kTolerance; 16-bit operands: 1e-4, as
// test_cuda_transformer_autocast.cpp; TF32: 5e-3). One Linear at fc1's shape and the
// qkv layers on a shared input (one without a bias), forward and backward: every
// product must have gone through the epilogue, none falling back to the separate add.
// Then a bias and an output off their 256-byte alignment, epilogue or fallback.
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy, std::max
#include <cmath>      // std::fabs
#include <cstddef>    // std::size_t
#include <string>     // std::string
#include <vector>     // std::vector

#include "compute/cuda/cuda_backend.hpp"          // CudaBackendOptions, make_cuda_backend
#include "compute/cuda/cuda_transformer_ops.hpp"  // CudaTransformerOps::bias_epilogue_note
#include "gpu_test_util.hpp"
#include "vit_twins.hpp"  // check_linear_twins, check_shared_linears_twins

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda Linear bias epilogue matches the CPU's product and add", "[gpu][transformer][bias_epilogue]") {
  struct Setting {
    Precision precision;
    bool tf32;
    double product_tolerance;  // TF32 rounds the fp32 operands to 10-bit mantissas
  };
  const Setting settings[] = {{Precision::fp32, false, kTolerance},
                              {Precision::fp32, true, 5e-3},
                              {Precision::bf16, false, 1e-4},
                              {Precision::fp16, false, 1e-4}};
  const Setting setting = settings[GENERATE(0, 1, 2, 3)];
  const Precision p = setting.precision;
  INFO(precision_name(p) << (setting.tf32 ? " with TF32" : ""));
  Twins t;
  t.cpu = make_cpu_backend(2, p);
  CudaBackendOptions options;
  options.precision = p;
  options.allow_tf32 = setting.tf32;
  options.vit_bias_epilogue = true;
  t.gpu = make_cuda_backend(0, options);
  const auto* ops = dynamic_cast<const cuda::CudaTransformerOps*>(&t.gpu->transformer_ops());
  REQUIRE(ops != nullptr);

  const LinearTwinRun l = check_linear_twins(t, setting.product_tolerance, kTolerance);
  check_shared_linears_twins(t, setting.product_tolerance, kTolerance);
  {
    const std::string note = ops->bias_epilogue_note();
    INFO("fell back: " << note);
    CHECK(note.empty());
  }

  // The epilogue really added the bias: the same Linear without it differs by it.
  auto gx = t.device(l.x), gw = t.device(l.w);
  auto gy = t.zeros(l.gpu_y.size());
  t.gpu->transformer_ops().linear_forward(gx.data(), nullptr, gw.data(), nullptr, gy.data(), kRows, l.in, l.out,
                                          t.gs());
  const std::vector<float> no_bias = t.host(gy);
  double largest = 0;
  for (std::size_t i = 0; i < no_bias.size(); ++i) {
    const double bias_seen = double(l.gpu_y[i]) - no_bias[i];
    largest = std::max(largest, std::fabs(bias_seen - l.bias[i % l.out]));
  }
  CHECK(largest < 1e-3);

  // A bias and an output one float off their buffers' 256-byte starts: through the
  // epilogue (planned for that alignment) or its fallback, the same values.
  std::vector<float> bias1(l.out + 1, 0.f), y1((l.gpu_y.size() + 1), 0.f);
  std::copy(l.bias.begin(), l.bias.end(), bias1.begin() + 1);
  auto gb1 = t.device(bias1), gy1 = t.zeros(y1.size());
  t.gpu->transformer_ops().linear_forward(gx.data(), nullptr, gw.data(), gb1.data() + 1, gy1.data() + 1, kRows, l.in,
                                          l.out, t.gs());
  t.cpu->transformer_ops().linear_forward(l.x.data(), nullptr, l.w.data(), bias1.data() + 1, y1.data() + 1, kRows,
                                          l.in, l.out, t.cs());
  const std::vector<float> gpu_y1 = t.host(gy1);
  CHECK(rel_error(std::vector<float>(gpu_y1.begin() + 1, gpu_y1.end()), std::vector<float>(y1.begin() + 1, y1.end())) <
        setting.product_tolerance);
}
