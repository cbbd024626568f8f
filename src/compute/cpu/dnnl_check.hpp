#pragma once
// DNNL_CHECK(expr): runs a oneDNN C++ API expression and turns a dnnl::error into a
// SystemError naming the call, file, line and oneDNN's own message and status,
// like MPI_CHECK does for MPI.
#include <string>  // std::string for the message

#include <oneapi/dnnl/dnnl.hpp>  // dnnl::error

#include "util/error.hpp"  // trainer::detail::throw_system_error

#define DNNL_CHECK(expr)                                                                          \
  do {                                                                                            \
    try {                                                                                         \
      expr;                                                                                       \
    } catch (const dnnl::error& trainer_dnnl_e_) {                                                \
      ::trainer::detail::throw_system_error(                                                      \
          "oneDNN", #expr,                                                                        \
          std::string(trainer_dnnl_e_.what()) + " (status " +                                     \
              std::to_string(int(trainer_dnnl_e_.status)) + ")",                                  \
          __FILE__, __LINE__);                                                                    \
    }                                                                                             \
  } while (0)
