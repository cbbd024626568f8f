#pragma once
// The `devices` setting, parsed exactly as PyTorch Lightning's table:
//   "" (not set)          all visible GPUs (Lightly Train's default)
//   3, "3"                the first 3 GPUs: [0, 1, 2]
//   [1, 3], "1, 3", "1,3" GPUs 1 and 3 ("3," is the list [3])
//   -1, "-1"              all visible GPUs
//   0, "[]"               no GPU (an error with accelerator gpu)
// Ids are relative to CUDA_VISIBLE_DEVICES, as the CUDA runtime numbers them.
// Errors name the input: duplicates, ids beyond the visible GPUs, negatives other
// than -1, anything that is not a number.
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

namespace trainer::runtime {

struct DeviceRequest {
  enum class Kind { all, count, list };
  Kind kind = Kind::all;
  int count = 0;         // Kind::count
  std::vector<int> ids;  // Kind::list
  std::string text;      // the input as written, for messages; empty when not set

  bool is_set() const { return !text.empty(); }
  bool asks_for_none() const {
    return (kind == Kind::count && count == 0) || (kind == Kind::list && ids.empty());
  }
};

// Syntax only (no knowledge of the machine). Throws UserError.
DeviceRequest parse_devices(const std::string& text);

// The GPU ids the request names on a node that sees `visible_gpus` GPUs. Throws
// UserError when it names GPUs the node does not have or names none.
// `cuda_visible_devices` (may be empty) is quoted in the hint.
std::vector<int> resolve_devices(const DeviceRequest& request, int visible_gpus,
                                 const std::string& cuda_visible_devices = {});

// The GPU this rank drives: the local_rank-th entry of the node's device list; or,
// when the process sees exactly one GPU while several ranks share the node (SLURM
// bound one GPU to each task), that GPU. Throws UserError (hint: --ntasks-per-node)
// when more ranks share the node than there are GPUs for them. `warning` receives a
// note when GPUs stay idle.
int select_device(const DeviceRequest& request, int visible_gpus, int local_rank, int local_size,
                  const std::string& cuda_visible_devices, std::string* warning);

// "[0, 1, 2]"
std::string format_ids(const std::vector<int>& ids);

}  // namespace trainer::runtime
