#pragma once
// The CPUs this process may run on: its affinity mask (taskset, mpirun --bind-to,
// srun --cpu-bind, a cgroup's cpuset), which std::thread::hardware_concurrency does
// not see. The CPU path sizes its compute threads from it (runtime/batch_plan.hpp).
#include <vector>  // std::vector

namespace trainer {

// The ids of the CPUs in this process's affinity mask; empty when the mask cannot be
// read (then callers fall back to std::thread::hardware_concurrency).
std::vector<int> usable_cpu_ids();

// How many CPUs this process may run on: the mask's count, else the hardware's; at least 1.
int usable_cpu_count();

}  // namespace trainer
