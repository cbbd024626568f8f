#pragma once
// A debugging aid (`trainer train --dump-gradients FILE.h5`): the gradients of one
// training step, written by rank 0 to an HDF5 file so tests can compare the
// gradients of R ranks with those of one rank directly instead of reconstructing
// them from the optimizer state (tests/integration/equivalence_ddp.sh).
//
// What is written is the flat gradient buffer as the optimizer read it: after the
// gradient all-reduce (averaged over ranks) and, with precision 16-mixed, after the
// loss scaler's unscale; without weight decay (AdamW/Adam add it inside the
// update). Layout: /gradients/<state_dict name> (float32, PyTorch shape), one
// dataset per parameter that trained in the step (every one in training, the frozen
// backbone's too); attributes on /gradients: global_step (the step's number,
// 1-based as in the progress line) and world_size; /parameter_order lists the
// dataset names in registration order (backbone first, the last layer last).
#include <string>  // std::string

#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore

namespace trainer::train {

// Downloads the gradients (waits for `stream`) and writes them atomically to
// `path`. Call on rank 0 only, after the step's train_step.
void write_gradient_dump(const std::string& path, model::ParameterStore& store, bool backbone_trained,
                         long global_step, int world_size, compute::Stream& stream);

}  // namespace trainer::train
