#pragma once
// Which training steps run as recorded work (a CUDA graph per staging slot and shape)
// and which run op by op, and the recordings themselves (model.cuda_graphs).
//
// A recording bakes in every buffer address the step used. Addresses change only
// when a buffer grows, and buffers grow only for a shape not seen before (a larger
// batch, another image size, validation, prediction). So the recorder keeps its
// recordings while the steps keep one shape (`Shape`), forgets them all on any other
// shape or other work, and records a shape only after one unrecorded step of it has
// sized every buffer (its warm-up). Each staging slot of the batch stager is its own
// recording, since the staged images' addresses differ, and so is each variant of the
// step's work (a step that also measures its training keypoints does more).
//
// What else a replay must repeat on the host, the recorder keeps too: the change the
// recorded step made to the model's host counters (batch norm's num_batches_tracked).
#include <cstdint>     // std::int64_t
#include <functional>  // std::function
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <vector>      // std::vector

#include "compute/stream.hpp"  // compute::RecordedWork
#include "compute/tensor.hpp"  // compute::Shape4

namespace trainer::train {

class StepRecorder {
 public:
  // What a recording depends on apart from the staging slot.
  struct Shape {
    compute::Shape4 images, heatmaps;
    bool train_backbone = false;
    unsigned optimizer_groups = 0;  // Optimizer::updated_groups()
    bool operator==(const Shape& o) const {
      return images == o.images && heatmaps == o.heatmaps && train_backbone == o.train_backbone &&
             optimizer_groups == o.optimizer_groups;
    }
  };
  enum class Action { run, record, replay };

  // Off until enabled; `warn` gets one line when a recording fails and recording
  // stops for the rest of the run.
  void enable(std::function<void(const std::string&)> warn);
  bool enabled() const { return enabled_; }

  // Which recording of a slot: the step's work differs by variant (0, or 1 for a
  // step that measures its keypoints) but not its buffers' sizes.
  struct Key {
    const void* slot = nullptr;  // the staged images of the slot
    int variant = 0;
    bool operator==(const Key& o) const { return slot == o.slot && variant == o.variant; }
  };
  // A step of `shape` that could be recorded: replay its recording, record it (its
  // shape ran unrecorded before), or run it op by op (a new shape: forgets every
  // recording).
  Action decide(const Shape& shape, const Key& key);
  // A step that cannot be recorded (a semi-supervised step): keeps the recordings
  // when its shape is theirs, else forgets them.
  void unrecorded_step(const Shape& shape);
  // Work other than training steps (validation, prediction): forgets every recording.
  void forget();

  // The recording for `key` (decide() said replay).
  compute::RecordedWork& recording(const Key& key);
  // Keeps the step just recorded, and the host counters' change it made.
  void keep(const Key& key, std::unique_ptr<compute::RecordedWork> work, std::vector<std::int64_t> counter_deltas);
  const std::vector<std::int64_t>& counter_deltas(const Key& key) const;
  // A recording failed (`what`): warns once and records nothing more in this run.
  void fail(const std::string& what);

  std::size_t recordings() const { return slots_.size(); }
  // Since enable(): the steps decide() saw, how many of them replayed a recording,
  // and the recordings made.
  struct Counts {
    long steps = 0, replayed = 0, recorded = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Slot {
    Key key;
    std::unique_ptr<compute::RecordedWork> work;
    std::vector<std::int64_t> counter_deltas;
  };
  const Slot* find(const Key& key) const;

  bool enabled_ = false;
  std::function<void(const std::string&)> warn_;
  bool have_shape_ = false;  // shape_ ran unrecorded since the last forget
  Shape shape_;
  std::vector<Slot> slots_;
  Counts counts_;
};

}  // namespace trainer::train
