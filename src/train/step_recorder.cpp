// Step recording policy and store (see step_recorder.hpp).
#include "train/step_recorder.hpp"

#include <utility>  // std::move

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

void StepRecorder::enable(std::function<void(const std::string&)> warn) {
  enabled_ = true;
  warn_ = std::move(warn);
}

StepRecorder::Action StepRecorder::decide(const Shape& shape, const Key& key) {
  if (!enabled_) return Action::run;
  ++counts_.steps;
  if (!have_shape_ || !(shape == shape_)) {
    forget();
    have_shape_ = true;
    shape_ = shape;
    return Action::run;  // the warm-up: sizes every buffer of this shape
  }
  if (find(key)) {
    ++counts_.replayed;
    return Action::replay;
  }
  return Action::record;
}

void StepRecorder::unrecorded_step(const Shape& shape) {
  if (!enabled_) return;
  if (!have_shape_ || !(shape == shape_)) {
    forget();
    have_shape_ = true;
    shape_ = shape;
  }
}

void StepRecorder::forget() {
  slots_.clear();
  have_shape_ = false;
}

const StepRecorder::Slot* StepRecorder::find(const Key& key) const {
  for (const Slot& s : slots_)
    if (s.key == key) return &s;
  return nullptr;
}

compute::RecordedWork& StepRecorder::recording(const Key& key) {
  const Slot* s = find(key);
  TRAINER_ASSERT(s != nullptr, "no recording for this staging slot");
  return *s->work;
}

const std::vector<std::int64_t>& StepRecorder::counter_deltas(const Key& key) const {
  const Slot* s = find(key);
  TRAINER_ASSERT(s != nullptr, "no recording for this staging slot");
  return s->counter_deltas;
}

void StepRecorder::keep(const Key& key, std::unique_ptr<compute::RecordedWork> work,
                        std::vector<std::int64_t> counter_deltas) {
  TRAINER_ASSERT(find(key) == nullptr, "a staging slot recorded twice");
  slots_.push_back(Slot{key, std::move(work), std::move(counter_deltas)});
  ++counts_.recorded;
}

void StepRecorder::fail(const std::string& what) {
  forget();
  enabled_ = false;
  if (warn_) warn_("model.cuda_graphs: recording a training step failed (" + what +
                   "); training goes on without CUDA graphs");
}

}  // namespace trainer::train
