#pragma once
// Where the training loop gets its batches: one epoch at a time, in the order the
// (distributed) sampler decides. The app layer adapts the data loader to this;
// tests use small in-memory sources.
#include "data/batch.hpp"  // data::Batch

namespace trainer::train {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Starts (or restarts) epoch `epoch`; the order depends only on the seed and epoch.
  virtual void start_epoch(int epoch) = 0;
  // The next batch of this epoch, or nullptr when the epoch is done. The batch
  // stays valid until the next call.
  virtual const data::Batch* next() = 0;
  // Batches this rank gets per epoch (the same on every rank).
  virtual long batches_per_epoch() const = 0;
};

// Unlabelled video frames for the unsupervised losses: one batch per training step,
// on every rank (the app adapts data::UnlabeledFrames to this).
class UnlabeledSource {
 public:
  virtual ~UnlabeledSource() = default;
  // Starts epoch `epoch` at step `first_step` (a resumed run starts mid-epoch).
  virtual void start_epoch(int epoch, long first_step) = 0;
  // The next step's frames; valid until the next call.
  virtual const data::Batch& next() = 0;
};

}  // namespace trainer::train
