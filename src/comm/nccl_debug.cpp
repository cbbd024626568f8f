// The values of distributed.nccl_debug (see nccl_debug.hpp).
#include "comm/nccl_debug.hpp"

#include "util/error.hpp"      // UserError
#include "util/name_list.hpp"  // join_names

namespace trainer::comm {

const std::vector<std::string>& nccl_debug_names() {
  static const std::vector<std::string> names = {"", "VERSION", "WARN", "INFO", "TRACE"};
  return names;
}

const std::string& parse_nccl_debug(const std::string& name) {
  for (const auto& known : nccl_debug_names()) {
    if (known == name) return name;
  }
  throw UserError("distributed.nccl_debug=\"" + name + "\" is not one of " + join_names(nccl_debug_names()),
                  "(empty) leaves NCCL_DEBUG as the environment has it");
}

}  // namespace trainer::comm
