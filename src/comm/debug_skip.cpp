#include "comm/debug_skip.hpp"

#include <stdexcept>  // std::logic_error (from std::stoi)

#include "util/error.hpp"  // UserError

namespace trainer::comm {

SkipCollective parse_skip_collective(const std::string& text) {
  SkipCollective skip;
  if (text.empty()) return skip;
  const auto colon = text.find(':');
  const auto bad = [&] {
    return UserError("TRAINER_DEBUG_SKIP_COLLECTIVE='" + text + "' is not <rank>:<n>",
                     "e.g. TRAINER_DEBUG_SKIP_COLLECTIVE=1:3 makes rank 1 never join its 3rd collective");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw bad();
  try {
    std::size_t used = 0;
    const std::string rank_text = text.substr(0, colon);
    const std::string index_text = text.substr(colon + 1);
    skip.rank = std::stoi(rank_text, &used);
    if (used != rank_text.size()) throw bad();
    skip.index = std::stol(index_text, &used);
    if (used != index_text.size()) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (skip.rank < 0 || skip.index < 1) throw bad();
  return skip;
}

SkipCollective skip_collective_from_env(const Env& env) {
  return parse_skip_collective(env_get(env, "TRAINER_DEBUG_SKIP_COLLECTIVE").value_or(""));
}

}  // namespace trainer::comm
