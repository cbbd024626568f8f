// Step recording policy and store (see step_recorder.hpp).
#include "train/step_recorder.hpp"

#include <utility>  // std::move

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

void StepRecorder::enable(std::function<void(const std::string&)> warn) {
  enabled_ = true;
  warn_ = std::move(warn);
}

namespace {

bool same_image_size(const compute::Shape4& a, const compute::Shape4& b) { return a.h == b.h && a.w == b.w; }

}  // namespace

StepRecorder::Action StepRecorder::decide(const Shape& shape, const Key& key, std::uint64_t generation) {
  if (!enabled_) return Action::run;
  ++(shape.prediction ? counts_.predictions : counts_.steps);
  keep_image_size(shape.images);
  if (have_generation_ && generation != generation_) slots_.clear();  // a block they may use is gone
  have_generation_ = true;
  generation_ = generation;
  current_ = shape;
  // Buffers only grow, so a shape sized before stays sized after another grew them.
  if (!sized(shape)) {
    sized_.push_back(shape);
    return Action::run;  // the warm-up: sizes every buffer of this shape
  }
  if (find(shape, key)) {
    ++(shape.prediction ? counts_.predictions_replayed : counts_.replayed);
    return Action::replay;
  }
  if (slots_.size() >= kMaxRecordings) slots_.clear();
  return Action::record;
}

void StepRecorder::unrecorded_step(const Shape& shape) {
  if (!enabled_) return;
  keep_image_size(shape.images);
  if (!sized(shape)) sized_.push_back(shape);
}

void StepRecorder::other_work(const compute::Shape4& images) { keep_image_size(images); }

void StepRecorder::keep_image_size(const compute::Shape4& images) {
  if (!sized_.empty() && !same_image_size(sized_.front().images, images)) forget();
}

void StepRecorder::forget() {
  slots_.clear();
  sized_.clear();
}

bool StepRecorder::sized(const Shape& shape) const {
  for (const Shape& s : sized_)
    if (s == shape) return true;
  return false;
}

const StepRecorder::Slot* StepRecorder::find(const Shape& shape, const Key& key) const {
  for (const Slot& s : slots_)
    if (s.shape == shape && s.key == key) return &s;
  return nullptr;
}

compute::RecordedWork& StepRecorder::recording(const Key& key) {
  const Slot* s = find(current_, key);
  TRAINER_ASSERT(s != nullptr, "no recording for this staging slot");
  return *s->work;
}

const std::vector<std::int64_t>& StepRecorder::counter_deltas(const Key& key) const {
  const Slot* s = find(current_, key);
  TRAINER_ASSERT(s != nullptr, "no recording for this staging slot");
  return s->counter_deltas;
}

void StepRecorder::keep(const Key& key, std::unique_ptr<compute::RecordedWork> work,
                        std::vector<std::int64_t> counter_deltas) {
  TRAINER_ASSERT(find(current_, key) == nullptr, "a staging slot recorded twice");
  slots_.push_back(Slot{current_, key, std::move(work), std::move(counter_deltas)});
  ++counts_.recorded;
}

void StepRecorder::fail(const std::string& what) {
  forget();
  enabled_ = false;
  if (warn_) warn_("model.cuda_graphs: recording " + std::string(current_.prediction ? "a prediction" : "a training step") +
                   " failed (" + what + "); the run goes on without CUDA graphs");
}

}  // namespace trainer::train
