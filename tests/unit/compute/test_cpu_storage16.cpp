// 16-bit NHWC storage on the CPU backend (compute/cpu/cpu_storage16.hpp): the layout
// and rounding of convert_storage, and the ops on 16-bit views computing exactly
// "read 16 bits, compute in fp32, round the result" (the CUDA kernels' contract).
#include <catch2/catch.hpp>

#include <cstdint>  // std::uint16_t
#include <vector>   // std::vector

#include "compute/backend.hpp"   // make_cpu_backend, Storage
#include "compute/float16.hpp"   // f16::*
#include "test_util.hpp"         // random_vector

using namespace trainer::compute;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::vector<float> v = trainer::compute::test::random_vector(n, seed);
  for (std::size_t i = 0; i < n; ++i) v[i] *= 3.f;
  return v;
}

// A 16-bit NHWC copy of fp32 NCHW `x` (through the backend) as raw bits.
std::vector<std::uint16_t> to16(Backend& b, const std::vector<float>& x, Shape4 d, Storage st) {
  std::vector<std::uint16_t> out(d.numel());
  b.convert_storage({x.data(), d}, {reinterpret_cast<float*>(out.data()), d, st}, b.default_stream());
  return out;
}
std::vector<float> to32(Backend& b, std::vector<std::uint16_t>& x, Shape4 d, Storage st) {
  std::vector<float> out(d.numel());
  b.convert_storage({reinterpret_cast<float*>(x.data()), d, st}, {out.data(), d}, b.default_stream());
  return out;
}
std::vector<float> rounded(std::vector<float> v, Storage st) {
  for (float& x : v) x = st == Storage::bf16_nhwc ? f16::round_bf16(x) : f16::round_half(x);
  return v;
}

}  // namespace

TEST_CASE("convert_storage lays 16-bit tensors out channels-last and rounds by the shared rules", "[compute][storage16]") {
  auto b = make_cpu_backend(1, Precision::bf16);
  const Shape4 d{2, 3, 4, 5};
  const auto x = random_values(d.numel(), 3);
  for (Storage st : {Storage::bf16_nhwc, Storage::f16_nhwc}) {
    INFO(storage_name(st));
    auto bits = to16(*b, x, d, st);
    for (int n = 0; n < d.n; ++n)
      for (int c = 0; c < d.c; ++c)
        for (int h = 0; h < d.h; ++h)
          for (int w = 0; w < d.w; ++w) {
            const float v = x[((std::size_t(n) * d.c + c) * d.h + h) * d.w + w];
            const std::uint16_t expect = st == Storage::bf16_nhwc ? f16::float_to_bf16(v) : f16::float_to_half(v);
            REQUIRE(bits[((std::size_t(n) * d.h + h) * d.w + w) * d.c + c] == expect);
          }
    CHECK(to32(*b, bits, d, st) == rounded(x, st));
  }
  CHECK(storage_floats(7, Storage::bf16_nhwc) == 4);
  CHECK(storage_floats(7, Storage::f32_nchw) == 7);
}

TEST_CASE("CPU ops on 16-bit views compute in fp32 on the exact values and round the result", "[compute][storage16]") {
  const Shape4 d{2, 8, 6, 5};
  const int c = d.c;
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const Storage st = storage_16bit_of(p);
    INFO(storage_name(st));
    auto b = make_cpu_backend(1, p);
    auto& s = b->default_stream();
    auto x16 = to16(*b, random_values(d.numel(), 11), d, st), r16 = to16(*b, random_values(d.numel(), 12), d, st),
         dy16 = to16(*b, random_values(d.numel(), 13), d, st);
    const auto x = to32(*b, x16, d, st), r = to32(*b, r16, d, st), dy = to32(*b, dy16, d, st);
    const ConstTensorView vx(reinterpret_cast<float*>(x16.data()), d, st), vr(reinterpret_cast<float*>(r16.data()), d, st),
        vdy(reinterpret_cast<float*>(dy16.data()), d, st);
    const auto mean = trainer::compute::test::random_vector(c, 14), invstd = random_values(c, 15),
               gamma = random_values(c, 16), beta = random_values(c, 17);
    std::vector<std::uint16_t> out16(d.numel());
    const TensorView vout{reinterpret_cast<float*>(out16.data()), d, st};
    std::vector<float> out32(d.numel());

    b->batchnorm_apply_relu(vx, mean.data(), invstd.data(), gamma.data(), beta.data(), vr.data, vout, s);
    b->batchnorm_apply_relu({x.data(), d}, mean.data(), invstd.data(), gamma.data(), beta.data(), r.data(),
                            {out32.data(), d}, s);
    CHECK(to32(*b, out16, d, st) == rounded(out32, st));

    std::vector<float> m16(batchnorm_moments_size(c)), m32(m16.size());
    b->batchnorm_moments(vx, m16.data(), s);
    b->batchnorm_moments({x.data(), d}, m32.data(), s);
    CHECK(m16 == m32);

    std::vector<float> red16(2 * c), red32(2 * c);
    b->batchnorm_relu_backward_reduce(vdy, vx, mean.data(), invstd.data(), gamma.data(), beta.data(), red16.data(), s);
    b->batchnorm_relu_backward_reduce({dy.data(), d}, {x.data(), d}, mean.data(), invstd.data(), gamma.data(),
                                      beta.data(), red32.data(), s);
    CHECK(red16 == red32);
    // A gradient that is not all zero, so the comparison below means something.
    bool any = false;
    for (float v : red32) any = any || v != 0.f;
    CHECK(any);

    b->batchnorm_relu_backward_apply(vdy, vx, mean.data(), invstd.data(), gamma.data(), beta.data(), red32.data(),
                                     60.0, vout, s);
    b->batchnorm_relu_backward_apply({dy.data(), d}, {x.data(), d}, mean.data(), invstd.data(), gamma.data(),
                                     beta.data(), red32.data(), 60.0, {out32.data(), d}, s);
    CHECK(to32(*b, out16, d, st) == rounded(out32, st));

    // Residual join: out = dy + x, and the ReLU mask of y = x.
    std::copy(dy16.begin(), dy16.end(), out16.begin());
    b->accumulate_tensor(vx, vout, s);
    for (std::size_t i = 0; i < out32.size(); ++i) out32[i] = dy[i] + x[i];
    CHECK(to32(*b, out16, d, st) == rounded(out32, st));
    b->relu_backward_tensor(vx, vdy, vout, s);
    for (std::size_t i = 0; i < out32.size(); ++i) out32[i] = x[i] > 0.f ? dy[i] : 0.f;
    CHECK(to32(*b, out16, d, st) == out32);
  }
}

TEST_CASE("a 16-bit storage must be the precision's own", "[compute][storage16]") {
  auto b = make_cpu_backend(1, Precision::bf16);
  b->set_activation_storage(Storage::bf16_nhwc);
  CHECK(b->activation_storage() == Storage::bf16_nhwc);
  CHECK_THROWS(b->set_activation_storage(Storage::f16_nhwc));
  auto f = make_cpu_backend(1, Precision::fp32);
  CHECK_THROWS(f->set_activation_storage(Storage::bf16_nhwc));
  f->set_activation_storage(Storage::f32_nchw);
  CHECK(f->activation_storage() == Storage::f32_nchw);
}
