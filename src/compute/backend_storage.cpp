// Backend's storage choice and the fp32 defaults of its storage-aware ops (see
// backend.hpp, "Storage"). A backend that offers 16-bit storage overrides the three
// ops; these defaults take fp32 NCHW views only.
#include "compute/backend.hpp"

#include <initializer_list>  // std::initializer_list

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::compute {

Storage storage_16bit_of(Precision precision) {
  switch (precision) {
    case Precision::bf16: return Storage::bf16_nhwc;
    case Precision::fp16: return Storage::f16_nhwc;
    case Precision::fp32: break;
  }
  return Storage::f32_nchw;
}

void Backend::set_activation_storage(Storage storage) {
  TRAINER_ASSERT(!is_16bit(storage) || storage == storage_16bit_of(precision()),
                 "activation storage " << storage_name(storage) << " in precision " << precision_name(precision()));
  activation_storage_ = storage;
}

namespace {
void require_f32(std::initializer_list<Storage> storages, const char* op) {
  for (Storage s : storages)
    TRAINER_ASSERT(s == Storage::f32_nchw, op << ": this backend has no " << storage_name(s) << " storage");
}
}  // namespace

void Backend::convert_storage(ConstTensorView src, TensorView dst, Stream& s) {
  TRAINER_ASSERT(src.shape == dst.shape, "convert_storage shapes " << src.shape.str() << " -> " << dst.shape.str());
  require_f32({src.storage, dst.storage}, "convert_storage");
  copy(dst.data, src.data, src.shape.numel(), s);
}

void Backend::accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) {
  TRAINER_ASSERT(x.shape == out.shape, "accumulate_tensor shapes " << x.shape.str() << " vs " << out.shape.str());
  require_f32({x.storage, out.storage}, "accumulate_tensor");
  accumulate(x.data, out.data, x.shape.numel(), s);
}

void Backend::relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) {
  TRAINER_ASSERT(y.shape == dy.shape && y.shape == dx.shape, "relu_backward_tensor shapes");
  require_f32({y.storage, dy.storage, dx.storage}, "relu_backward_tensor");
  relu_backward(y.data, dy.data, dx.data, dy.shape.numel(), s);
}

}  // namespace trainer::compute
