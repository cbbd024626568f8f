#pragma once
// Which training steps and predictions run as recorded work (a CUDA graph per staging
// slot and shape) and which run op by op, and the recordings themselves
// (model.cuda_graphs).
//
// A recording bakes in every buffer address the step used. Buffers only grow, and a
// grown buffer is a new block: so a recording stays valid while no device block has
// been released since it was made (the memory generation: Backend::released_blocks()
// plus the stream's scratch_reallocations()). When the generation moves, every
// recording is dropped. A shape (batch size, image size, whether the backbone's
// backward runs, optimizer groups) records only after one unrecorded step of it has sized its buffers (its
// warm-up); recordings of several shapes live side by side, so an epoch's short last
// batch and the full batches after it all replay. Each staging slot of the batch
// stager is its own recording, since the staged images' addresses differ (with a
// semi-supervised step's unlabelled frames, each pair of slots). Whatever changes the
// step's work or its buffers' sizes is part of the shape: a step that also measures
// its training keypoints, a semi-supervised step's frames and whether their losses
// run backward.
//
// Some device data depends on the image size without being rewritten by the step (a
// ViT's position-embedding resize, its eval-mode RoPE tables): every recording holds
// one image size, and work at another size (a training step or validation) forgets
// them all, with the sized shapes.
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
  // What a recording depends on apart from the staging slots: what sizes its buffers.
  struct Shape {
    compute::Shape4 images, heatmaps;
    bool train_backbone = false;
    unsigned optimizer_groups = 0;  // Optimizer::updated_groups()
    // A semi-supervised step's unlabelled frames (all zero without), and whether their
    // losses run backward (not in lightning-pose's warm-up epochs): the backward pass
    // sizes buffers that the forward-only step does not.
    compute::Shape4 unlabeled;
    bool unlabeled_backward = false;
    // A step that also measures its training keypoints (the logged RMSE): its
    // soft-argmax needs stream scratch the unmeasured step may not have grown.
    bool measured = false;
    // A prediction (StepRunner::predict): the evaluation forward and the soft-argmax
    // keypoints, no loss, no optimizer.
    bool prediction = false;
    // A prediction on one frame sequence (heatmap_mhcrnn on a video, StagedBatch::
    // sequence_rows): the same image count can be rows of five frames elsewhere.
    int sequence_rows = 0;
    bool operator==(const Shape& o) const {
      return images == o.images && heatmaps == o.heatmaps && train_backbone == o.train_backbone &&
             optimizer_groups == o.optimizer_groups && unlabeled == o.unlabeled &&
             unlabeled_backward == o.unlabeled_backward && measured == o.measured && prediction == o.prediction &&
             sequence_rows == o.sequence_rows;
    }
  };
  enum class Action { run, record, replay };

  // Off until enabled; `warn` gets one line when a recording fails and recording
  // stops for the rest of the run.
  void enable(std::function<void(const std::string&)> warn);
  bool enabled() const { return enabled_; }

  // Which recording of a shape: one per staging slot (the staged images' address).
  struct Key {
    const void* slot = nullptr;            // the staged images of the slot
    const void* unlabeled_slot = nullptr;  // a semi-supervised step's staged frames
    bool operator==(const Key& o) const { return slot == o.slot && unlabeled_slot == o.unlabeled_slot; }
  };
  // A step of `shape` that could be recorded, at memory generation `generation`
  // (see above): replay its recording, record it (its shape ran unrecorded before),
  // or run it op by op (a shape's warm-up). A moved generation drops every recording
  // first; another image size forgets everything.
  Action decide(const Shape& shape, const Key& key, std::uint64_t generation);
  // A step that cannot be recorded (accumulation, synchronized batch norm) sizes its shape too.
  void unrecorded_step(const Shape& shape);
  // Work other than training steps (validation, prediction) on images of `images`'
  // size: keeps the recordings when it is theirs (a buffer it grows moves the
  // generation, which the next decide() sees), else forgets them.
  void other_work(const compute::Shape4& images);
  // Drops every recording and sized shape.
  void forget();

  // The recording for `key` of the shape of the last decide() (which said replay).
  compute::RecordedWork& recording(const Key& key);
  // Keeps the step just recorded (of the last decide()'s shape), and the host
  // counters' change it made.
  void keep(const Key& key, std::unique_ptr<compute::RecordedWork> work, std::vector<std::int64_t> counter_deltas);
  const std::vector<std::int64_t>& counter_deltas(const Key& key) const;
  // A recording failed (`what`): warns once and records nothing more in this run.
  void fail(const std::string& what);

  std::size_t recordings() const { return slots_.size(); }
  // Since enable(): the training steps decide() saw and how many of them replayed a
  // recording, the same for predictions, and the recordings made (of either).
  struct Counts {
    long steps = 0, replayed = 0, recorded = 0;
    long predictions = 0, predictions_replayed = 0;
  };
  const Counts& counts() const { return counts_; }

  // More would be a run whose batches keep changing size; they all go then. A
  // semi-supervised run may hold 4 pairings of the two stagers' slots (validation
  // advances only the labelled one) for each of its shapes (measured or not, the
  // short last batch, forward-only warm-up epochs): 32 could be reached and cleared.
  static constexpr std::size_t kMaxRecordings = 64;

 private:
  struct Slot {
    Shape shape;
    Key key;
    std::unique_ptr<compute::RecordedWork> work;
    std::vector<std::int64_t> counter_deltas;
  };
  const Slot* find(const Shape& shape, const Key& key) const;
  bool sized(const Shape& shape) const;
  // Forgets everything unless `images` has the recordings' image size.
  void keep_image_size(const compute::Shape4& images);

  bool enabled_ = false;
  std::function<void(const std::string&)> warn_;
  std::vector<Shape> sized_;  // shapes run unrecorded since the last forget, one image size
  Shape current_;             // the last decide()'s
  bool have_generation_ = false;
  std::uint64_t generation_ = 0;  // the memory generation the recordings were made at
  std::vector<Slot> slots_;
  Counts counts_;
};

}  // namespace trainer::train
