#pragma once
// Rank-local work that must fail on every rank or on none: when one rank cannot do
// its part (rank 0 cannot create --out, one node cannot read the checkpoint), the
// others would otherwise walk on into the next collective and end with a transport
// error ("connection closed by peer") or a timeout instead of the cause. Here every
// rank learns the first failing rank's error and throws it, and the session knows
// the failure is collective, so MPI_Finalize is safe while unwinding.
//
//   auto backend = runtime::on_every_rank_or_none(session, "backend", [&] { return make_backend(...); });
#include <exception>    // std::exception_ptr, std::current_exception
#include <optional>     // std::optional
#include <string>       // std::string
#include <type_traits>  // std::is_void_v
#include <utility>      // std::move

#include "runtime/mpi_session.hpp"  // MpiSession

namespace trainer::runtime {

// Collective over the session's world. With `error` null on every rank, returns;
// otherwise every rank throws: the failing rank its own exception, the others a
// UserError with the lowest failing rank's message, hint and exit code.
void agree_on_failure(MpiSession& session, std::exception_ptr error);

template <typename Work>
auto on_every_rank_or_none(MpiSession& session, Work&& work) {
  using Result = decltype(work());
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    agree_on_failure(session, error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(work());
    } catch (...) {
      error = std::current_exception();
    }
    agree_on_failure(session, error);
    return std::move(*result);
  }
}

}  // namespace trainer::runtime
