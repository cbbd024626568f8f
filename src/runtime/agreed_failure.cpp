#include "runtime/agreed_failure.hpp"

#include <mpi.h>  // MPI_Bcast

#include <exception>  // std::rethrow_exception
#include <vector>     // std::vector

#include "runtime/watchdog.hpp"  // watch: a deadline for the exchange
#include "util/error.hpp"        // UserError, MPI_CHECK, kExitFailure

namespace trainer::runtime {

namespace {

struct ErrorText {
  std::string message;
  std::string hint;
  int exit_code = kExitFailure;
};

ErrorText describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const UserError& e) {
    return {e.what(), e.hint(), e.exit_code()};
  } catch (const std::exception& e) {
    return {e.what(), {}, kExitFailure};
  } catch (...) {
    return {"unknown error", {}, kExitFailure};
  }
}

// `text` of rank `root` on every rank of `comm`.
std::string broadcast_text(MPI_Comm comm, int root, const std::string& text) {
  long long n = static_cast<long long>(text.size());
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm));
  std::string out = text;
  out.resize(static_cast<std::size_t>(n));
  if (n > 0) MPI_CHECK(MPI_Bcast(&out[0], static_cast<int>(n), MPI_CHAR, root, comm));
  return out;
}

}  // namespace

void agree_on_failure(MpiSession& session, std::exception_ptr error) {
  const World& world = session.world();
  const std::vector<int> failed = all_ranks_ok(world, error == nullptr);
  if (failed.empty()) return;
  session.failure_is_collective();
  const int root = failed.front();
  ErrorText text = error ? describe(error) : ErrorText{};
  if (world.comm != MPI_COMM_NULL && world.size > 1) {
    const auto stage = watch(world.watchdog, "start-up: sharing rank " + std::to_string(root) + "'s error");
    text.message = broadcast_text(world.comm, root, text.message);
    text.hint = broadcast_text(world.comm, root, text.hint);
    MPI_CHECK(MPI_Bcast(&text.exit_code, 1, MPI_INT, root, world.comm));
  }
  if (error) std::rethrow_exception(error);
  const std::string where = failed.size() == 1 ? "rank " + std::to_string(root)
                                               : std::to_string(failed.size()) + " ranks, first rank " +
                                                     std::to_string(root);
  throw UserError(text.message + " (on " + where + ")", text.hint, text.exit_code);
}

}  // namespace trainer::runtime
