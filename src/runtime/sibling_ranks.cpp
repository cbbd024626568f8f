#include "runtime/sibling_ranks.hpp"

#include <dirent.h>  // opendir, readdir
#include <unistd.h>  // getpid, getppid, readlink

#include <cstdlib>   // std::strtol
#include <fstream>   // std::ifstream for /proc files
#include <iterator>  // std::istreambuf_iterator
#include <map>       // std::map
#include <memory>    // std::unique_ptr
#include <vector>    // std::vector

#include "runtime/heartbeats.hpp"  // local_process_state

namespace trainer::runtime {

namespace {

// The launchers' rank and size variables, in the order they are trusted.
constexpr std::pair<const char*, const char*> kRankVariables[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                                  {"SLURM_PROCID", "SLURM_NTASKS"},
                                                                  {"PMI_RANK", "PMI_SIZE"}};

long parent_of(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  const auto paren = line.rfind(')');  // "pid (comm) S ppid ...": comm may hold spaces
  if (paren == std::string::npos || paren + 4 >= line.size()) return -1;
  return std::strtol(line.c_str() + paren + 4, nullptr, 10);
}

// The value of `key` in process `pid`'s environment, or -1.
long environ_int(long pid, const std::string& key) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string wanted = key + "=";
  for (std::size_t pos = 0; pos < all.size();) {
    const std::size_t end = all.find('\0', pos);
    const std::size_t stop = end == std::string::npos ? all.size() : end;
    if (all.compare(pos, wanted.size(), wanted) == 0) {
      char* used = nullptr;
      const std::string value = all.substr(pos + wanted.size(), stop - pos - wanted.size());
      const long v = std::strtol(value.c_str(), &used, 10);
      return used && *used == '\0' && !value.empty() ? v : -1;
    }
    pos = stop + 1;
  }
  return -1;
}

// Whether `ancestor` is among the parents of `pid` (a few levels: MPI's daemon sits
// between a --nprocs parent and its copies).
bool descends_from(long pid, long ancestor) {
  for (int level = 0; level < 8 && pid > 1; ++level) {
    pid = parent_of(pid);
    if (pid == ancestor) return true;
  }
  return false;
}

std::string executable_of(long pid) {
  char buffer[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// "1, 2, 3" (at most 8, then a count).
std::string rank_list(const std::vector<long>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) text += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return text;
}

}  // namespace

bool launcher_names_ranks(const Env& env) {
  for (const auto& [rank, size] : kRankVariables) {
    (void)size;
    if (env_int(env, rank)) return true;
  }
  return false;
}

std::vector<std::string> describe_spawned_ranks(int count) {
  std::vector<std::string> lines;
  const long me = static_cast<long>(getpid());
  const std::string self = executable_of(me);
  std::map<long, long> pid_of_rank;  // rank in the run -> pid
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc || self.empty()) return {"the spawned rank(s) cannot be looked up (/proc is not readable)"};
  while (const dirent* entry = readdir(proc.get())) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == me || !descends_from(pid, me) || executable_of(pid) != self)
      continue;
    const long world_rank = environ_int(pid, "OMPI_COMM_WORLD_RANK");
    pid_of_rank[world_rank >= 0 ? world_rank + 1 : -pid] = pid;  // a copy without the variable: keyed by its pid
  }
  std::vector<long> running, missing;
  for (const auto& [rank, pid] : pid_of_rank) {
    const std::string state = local_process_state(pid);
    const std::string name = rank > 0 ? "rank " + std::to_string(rank) : "a spawned copy";
    if (state.rfind("running", 0) == 0 || state.rfind("sleeping", 0) == 0) {
      if (rank > 0) running.push_back(rank);
      continue;
    }
    lines.push_back(name + " (pid " + std::to_string(pid) + ", spawned by --nprocs): the process is " +
                    (state.empty() ? "in an unknown state" : state));
  }
  for (long rank = 1; rank <= count; ++rank)
    if (!pid_of_rank.count(rank)) missing.push_back(rank);
  if (!missing.empty())
    lines.push_back("rank(s) " + rank_list(missing) +
                    " (spawned by --nprocs): not running (never started, or gone: exited or killed)");
  if (lines.empty())
    lines.push_back("rank(s) " + rank_list(running) + " (spawned by --nprocs) are running but did not join "
                    "(MPI_Comm_spawn or the merge of the worlds did not complete)");
  return lines;
}

std::vector<std::string> describe_sibling_ranks(const Env& env) {
  std::vector<std::string> lines;
  const char* rank_key = nullptr;
  long my_rank = -1, size = -1;
  for (const auto& [r, s] : kRankVariables) {
    if (const auto rank = env_int(env, r)) {
      rank_key = r;
      my_rank = *rank;
      size = env_int(env, s).value_or(-1);
      break;
    }
  }
  if (!rank_key) return lines;

  const long me = static_cast<long>(getpid()), parent = static_cast<long>(getppid());
  std::map<long, long> pid_of_rank;  // the local siblings
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return lines;
  while (const dirent* entry = readdir(proc.get())) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == me || parent_of(pid) != parent) continue;
    const long rank = environ_int(pid, rank_key);
    if (rank >= 0) pid_of_rank[rank] = pid;
  }
  for (const auto& [rank, pid] : pid_of_rank) {
    const std::string state = local_process_state(pid);
    if (state.rfind("running", 0) == 0 || state.rfind("sleeping", 0) == 0) continue;
    lines.push_back("rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ", this host): the process is " +
                    (state.empty() ? "in an unknown state" : state));
  }
  if (size > 0) {
    std::string absent;
    int count = 0;
    for (long rank = 0; rank < size; ++rank) {
      if (rank == my_rank || pid_of_rank.count(rank)) continue;
      if (++count <= 8) absent += (absent.empty() ? "" : ", ") + std::to_string(rank);
    }
    if (count > 8) absent += ", ... (" + std::to_string(count) + " in all)";
    if (count > 0) lines.push_back("rank(s) " + absent + ": not running on this host (another host, or never started)");
  }
  return lines;
}

}  // namespace trainer::runtime
