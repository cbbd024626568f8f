// 16-bit NHWC storage on the CPU (see cpu_storage16.hpp).
#include "compute/cpu/cpu_storage16.hpp"

#include <algorithm>  // std::copy_n
#include <cstdint>    // std::uint16_t

#include "compute/float16.hpp"  // f16::float_to_bf16, bf16_to_float, float_to_half, half_to_float
#include "util/error.hpp"       // TRAINER_ASSERT

namespace trainer::compute::cpu {
namespace {

float load16(std::uint16_t v, Storage s) { return s == Storage::bf16_nhwc ? f16::bf16_to_float(v) : f16::half_to_float(v); }
std::uint16_t store16(float v, Storage s) { return s == Storage::bf16_nhwc ? f16::float_to_bf16(v) : f16::float_to_half(v); }

// Visits every element with its NCHW and NHWC offsets.
template <typename F>
void for_each_element(const Shape4& d, F&& f) {
  for (int n = 0; n < d.n; ++n)
    for (int c = 0; c < d.c; ++c)
      for (int h = 0; h < d.h; ++h)
        for (int w = 0; w < d.w; ++w) {
          const std::size_t nchw = ((std::size_t(n) * d.c + c) * d.h + h) * d.w + w;
          const std::size_t nhwc = ((std::size_t(n) * d.h + h) * d.w + w) * d.c + c;
          f(nchw, nhwc);
        }
}

}  // namespace

bool any_16bit(std::initializer_list<Storage> storages) {
  for (Storage s : storages)
    if (is_16bit(s)) return true;
  return false;
}

void convert_on_host(ConstTensorView src, TensorView dst) {
  TRAINER_ASSERT(src.shape == dst.shape, "convert_storage shapes " << src.shape.str() << " -> " << dst.shape.str());
  const Shape4& d = src.shape;
  if (src.storage == dst.storage) {
    const std::size_t bytes = d.numel() * (is_16bit(src.storage) ? 2 : 4);
    if (bytes && src.data != dst.data) std::copy_n(reinterpret_cast<const char*>(src.data), bytes, reinterpret_cast<char*>(dst.data));
    return;
  }
  if (!is_16bit(src.storage)) {  // fp32 NCHW -> 16-bit NHWC
    auto* out = reinterpret_cast<std::uint16_t*>(dst.data);
    for_each_element(d, [&](std::size_t nchw, std::size_t nhwc) { out[nhwc] = store16(src.data[nchw], dst.storage); });
  } else if (!is_16bit(dst.storage)) {  // 16-bit NHWC -> fp32 NCHW
    const auto* in = reinterpret_cast<const std::uint16_t*>(src.data);
    for_each_element(d, [&](std::size_t nchw, std::size_t nhwc) { dst.data[nchw] = load16(in[nhwc], src.storage); });
  } else {  // bf16 <-> fp16, both NHWC: through fp32
    const auto* in = reinterpret_cast<const std::uint16_t*>(src.data);
    auto* out = reinterpret_cast<std::uint16_t*>(dst.data);
    for (std::size_t i = 0; i < d.numel(); ++i) out[i] = store16(load16(in[i], src.storage), dst.storage);
  }
}

Float32Input::Float32Input(ConstTensorView v) : view_(v) {
  if (!is_16bit(v.storage)) return;
  copy_.resize(v.shape.numel());
  convert_on_host(v, TensorView{copy_.data(), v.shape});
  view_ = ConstTensorView(copy_.data(), v.shape);
}

Float32Input::Float32Input(const float* data, ConstTensorView like)
    : Float32Input(data ? ConstTensorView(data, like.shape, like.storage) : ConstTensorView()) {}

Float32Output::Float32Output(TensorView target) : target_(target), view_(target) {
  if (!is_16bit(target.storage)) return;
  copy_.assign(target.shape.numel(), 0.f);
  view_ = TensorView{copy_.data(), target.shape};
}

void Float32Output::store() {
  if (is_16bit(target_.storage)) convert_on_host(view_, target_);
}

}  // namespace trainer::compute::cpu
