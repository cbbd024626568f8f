#include "runtime/debug_stop.hpp"

#include <cctype>  // std::isdigit

#include "util/error.hpp"  // UserError

namespace trainer::runtime {

DebugStop parse_debug_stop(const std::string& text) {
  DebugStop stop;
  if (text.empty()) return stop;
  const auto colon = text.find(':');
  const bool digits = colon != std::string::npos && colon > 0 && colon <= 6 &&
                      text.find_first_not_of("0123456789") == colon;
  if (!digits || colon + 1 == text.size()) {
    throw UserError("TRAINER_DEBUG_STOP='" + text + "' is not <rank>:<place>",
                    "e.g. TRAINER_DEBUG_STOP=1:MPI_Comm_dup or TRAINER_DEBUG_STOP=1:'collective #5'");
  }
  stop.rank = std::stoi(text.substr(0, colon));
  stop.place = text.substr(colon + 1);
  return stop;
}

}  // namespace trainer::runtime
