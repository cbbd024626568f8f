#pragma once
// The values of distributed.nccl_debug, exported as NCCL_DEBUG before the NCCL
// communicator is created (see make_communicator.hpp, NcclSettings).
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::comm {

// "" (leave NCCL_DEBUG alone), then NCCL's own levels: "VERSION", "WARN", "INFO", "TRACE".
const std::vector<std::string>& nccl_debug_names();
// `name` when it is one of nccl_debug_names(); otherwise a UserError listing them.
const std::string& parse_nccl_debug(const std::string& name);

}  // namespace trainer::comm
