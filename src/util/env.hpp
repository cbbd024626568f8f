#pragma once
// The process environment as a value, and the only way this program reads it:
// code that reads a variable (launcher SLURM_* / OMPI_*, CUDA_VISIBLE_DEVICES,
// OMP_NUM_THREADS, the TRAINER_* debugging switches, GLOO_SOCKET_IFNAME) takes an
// Env argument instead of calling getenv, so unit tests can inject any environment.
#include <map>       // std::map
#include <optional>  // std::optional
#include <string>    // std::string

namespace trainer {

using Env = std::map<std::string, std::string>;

// A copy of this process's environment (environ).
Env capture_environment();

// The value of `key`, or nothing when unset.
std::optional<std::string> env_get(const Env& env, const std::string& key);

// The value of `key` as an integer; nothing when unset, empty or not a whole
// number (launchers sometimes write forms like "2(x3)", which are not counts).
std::optional<long> env_int(const Env& env, const std::string& key);

}  // namespace trainer
