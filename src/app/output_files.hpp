#pragma once
// The folders a command writes into: the run folder's default name, creating it,
// and clearing out what killed writers left there.
#include <string>  // std::string

#include "util/log.hpp"  // Log

namespace trainer::app {

// The checkpoint's run folder: <run>/checkpoints/x.h5 -> <run>; a lightning-pose model
// folder's <model>/tb_logs/<name>/version_<n>/checkpoints/x.ckpt(.trainer.h5) -> <model>
// (any other folder: the checkpoint's own).
std::string run_dir_of_checkpoint(const std::string& path);
// outputs/YYYY-MM-DD/HH-MM-SS (local time), as lightning-pose's hydra folders.
std::string timestamped_output_dir();
// mkdir -p; throws UserError when it cannot.
void make_directories(const std::string& path);
// At start: removes the temporary files that killed writers left in `folder`
// (remove_stale_temp_files, util/atomic_write.hpp) and says which.
void remove_stale_temp_files_in(const std::string& folder, const Log& log);

}  // namespace trainer::app
