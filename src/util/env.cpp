#include "util/env.hpp"

#include <cerrno>   // errno
#include <cstdlib>  // std::strtol

extern char** environ;  // POSIX: the process environment

namespace trainer {

Env capture_environment() {
  Env env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string item(*entry);
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(item.substr(0, eq), item.substr(eq + 1));
  }
  return env;
}

std::optional<std::string> env_get(const Env& env, const std::string& key) {
  const auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

std::optional<long> env_int(const Env& env, const std::string& key) {
  const auto value = env_get(env, key);
  if (!value || value->empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long number = std::strtol(value->c_str(), &end, 10);
  if (errno != 0 || end == value->c_str() || *end != '\0') return std::nullopt;
  return number;
}

}  // namespace trainer
