#include "train/loss_scaler.hpp"

#include <vector>  // std::vector

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

LossScaler::LossScaler(compute::Backend& backend, compute::Stream& stream, LossScalerOptions options)
    : backend_(backend),
      stream_(stream),
      enabled_(backend.precision() == compute::Precision::fp16),
      options_(options) {
  const compute::LossScaleRule& r = options.rule;
  TRAINER_ASSERT(options.init_scale > 0 && r.growth_factor > 1 && r.backoff_factor > 0 && r.backoff_factor < 1 &&
                     r.growth_interval > 0,
                 "LossScalerOptions out of range");
  host_state_.scale = options.init_scale;
  if (!enabled_) return;
  state_ = compute::DeviceBuffer(backend, compute::kLossScaleSlots);
  backend.fill(state_.data(), 0.f, compute::kLossScaleSlots, stream);
  restore(host_state_);
}

void LossScaler::scale_gradient(float* x, std::size_t count) {
  if (enabled_) backend_.scale_by(x, count, state_.data() + compute::kLossScale, stream_);
}

void LossScaler::unscale_and_update(float* grads, std::size_t count) {
  if (!enabled_) return;
  float* found_inf = state_.data() + compute::kLossScaleFoundInf;
  backend_.fill(found_inf, 0.f, 1, stream_);
  backend_.unscale_and_check(grads, count, state_.data() + compute::kLossScaleInverse, found_inf, stream_);
  backend_.update_loss_scale(state_.data(), options_.rule, stream_);
}

void LossScaler::restore(const LossScalerState& state) {
  host_state_ = state;
  if (!enabled_) return;
  // The first three slots; the flag and the skipped count stay.
  static_assert(compute::kLossScale == 0 && compute::kLossScaleInverse == 1 && compute::kLossScaleGrowthTracker == 2);
  const float values[3] = {state.scale, compute::loss_scale_inverse(state.scale), float(state.growth_tracker)};
  backend_.set_values(state_.data(), values, 3, stream_);
}

namespace {

std::vector<float> read_state(compute::Backend& backend, const compute::DeviceBuffer& state,
                              compute::Stream& stream) {
  std::vector<float> values(compute::kLossScaleSlots);
  backend.download(values.data(), state.data(), values.size(), stream);
  stream.synchronize();
  return values;
}

}  // namespace

LossScalerState LossScaler::state() {
  if (!enabled_) return host_state_;
  const std::vector<float> v = read_state(backend_, state_, stream_);
  return LossScalerState{v[compute::kLossScale], int(v[compute::kLossScaleGrowthTracker])};
}

long LossScaler::skipped_steps() {
  if (!enabled_) return 0;
  return long(read_state(backend_, state_, stream_)[compute::kLossScaleSkipped]);
}

}  // namespace trainer::train
