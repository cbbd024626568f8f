#pragma once
// NCCL_CHECK(call, rank): throws trainer::SystemError naming the call, file, line,
// NCCL's error string (ncclGetErrorString) and the rank that saw the failure.
#include <nccl.h>  // ncclResult_t, ncclGetErrorString
#include <string>  // std::string, std::to_string

#include "util/error.hpp"  // trainer::detail::throw_system_error

#define NCCL_CHECK(call, rank)                                                                     \
  do {                                                                                             \
    ncclResult_t trainer_nccl_rc_ = (call);                                                        \
    if (trainer_nccl_rc_ != ncclSuccess) {                                                         \
      ::trainer::detail::throw_system_error(                                                       \
          "NCCL", #call,                                                                           \
          std::string(ncclGetErrorString(trainer_nccl_rc_)) + " on rank " + std::to_string(rank),  \
          __FILE__, __LINE__);                                                                     \
    }                                                                                              \
  } while (0)
