#include "train/loss_scaler.hpp"

#include <cmath>  // std::isfinite

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

LossScaler::LossScaler(compute::Precision precision, LossScalerOptions options)
    : enabled_(precision == compute::Precision::fp16), options_(options) {
  TRAINER_ASSERT(options.init_scale > 0 && options.growth_factor > 1 && options.backoff_factor > 0 &&
                     options.backoff_factor < 1 && options.growth_interval > 0,
                 "LossScalerOptions out of range");
  state_.scale = options.init_scale;
}

bool LossScaler::unscale_and_check(compute::Backend& backend, float* grads, std::size_t count,
                                   compute::Stream& stream) {
  if (!enabled_) return true;
  if (!backend_) {
    backend_ = &backend;
    flag_ = compute::DeviceBuffer(backend, 1);
    host_flag_ = compute::HostBuffer<float>(backend, 1);
  }
  TRAINER_ASSERT(backend_ == &backend, "LossScaler used with two different backends");
  // Powers of two in practice, so 1/scale is exact (torch: reciprocal in double, then float).
  const float inv_scale = float(1.0 / double(state_.scale));
  backend.fill(flag_.data(), 0.f, 1, stream);
  backend.unscale_and_check(grads, count, inv_scale, flag_.data(), stream);
  backend.download(host_flag_.data(), flag_.data(), 1, stream);
  // The one host synchronization of a 16-mixed step (GradScaler's found_inf.item()).
  stream.synchronize();
  const bool found_inf = host_flag_[0] != 0.f;
  update(found_inf);
  return !found_inf;
}

void LossScaler::update(bool found_inf) {
  if (!enabled_) return;
  if (found_inf) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
    ++skipped_;
    return;
  }
  if (++state_.growth_tracker == options_.growth_interval) {
    const float grown = state_.scale * options_.growth_factor;
    if (std::isfinite(grown)) state_.scale = grown;  // torch keeps the scale when growth overflows
    state_.growth_tracker = 0;
  }
}

}  // namespace trainer::train
