#include "util/cpu_affinity.hpp"

#include <sched.h>  // sched_getaffinity, cpu_set_t, CPU_ISSET

#include <thread>  // std::thread::hardware_concurrency

namespace trainer {

std::vector<int> usable_cpu_ids() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> ids;
  // A machine with more CPUs than cpu_set_t holds (CPU_SETSIZE, 1024) fails with
  // EINVAL: then the mask is unknown, and the hardware count stands in.
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return ids;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) ids.push_back(cpu);
  return ids;
}

int usable_cpu_count() {
  const std::size_t in_mask = usable_cpu_ids().size();
  if (in_mask > 0) return static_cast<int>(in_mask);
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

}  // namespace trainer
