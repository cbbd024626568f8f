// The ViTs' Linear bias added inside cuBLASLt's product (CudaBackendOptions::
// vit_bias_epilogue, TRAINER_VIT_BIAS_EPILOGUE=1; cuda/lt_bias_gemm.hpp) against the
// CPU twin's product followed by add_bias: the same fp32 sum, so the products differ
// only by summation order (fp32 with TF32 off: kTolerance; 16-bit operands: 1e-4, as
// test_cuda_transformer_autocast.cpp). One Linear at fc1's shape and the qkv layers on
// a shared input (one without a bias), forward and backward. Every product must have
// gone through the epilogue: none may have fallen back to the separate add.
#include <catch2/catch.hpp>

#include <algorithm>  // std::max
#include <cmath>      // std::fabs
#include <string>     // std::string
#include <vector>     // std::vector

#include "compute/cuda/cuda_backend.hpp"          // CudaBackendOptions, make_cuda_backend
#include "compute/cuda/cuda_transformer_ops.hpp"  // CudaTransformerOps::bias_epilogue_note
#include "gpu_test_util.hpp"
#include "vit_twins.hpp"  // check_linear_twins, check_shared_linears_twins

using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("cuda Linear bias epilogue matches the CPU's product and add", "[gpu][transformer][bias_epilogue]") {
  const Precision p = GENERATE(Precision::fp32, Precision::bf16, Precision::fp16);
  INFO(precision_name(p));
  Twins t;
  t.cpu = make_cpu_backend(2, p);
  CudaBackendOptions options;
  options.precision = p;
  options.vit_bias_epilogue = true;
  t.gpu = make_cuda_backend(0, options);
  const auto* ops = dynamic_cast<const cuda::CudaTransformerOps*>(&t.gpu->transformer_ops());
  REQUIRE(ops != nullptr);

  const double product_tolerance = p == Precision::fp32 ? kTolerance : 1e-4;
  const LinearTwinRun l = check_linear_twins(t, product_tolerance, kTolerance);
  check_shared_linears_twins(t, product_tolerance, kTolerance);
  const std::string note = ops->bias_epilogue_note();
  INFO("fell back: " << note);
  CHECK(note.empty());

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
}
