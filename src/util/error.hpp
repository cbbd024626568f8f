#pragma once
// Errors are exceptions. A UserError carries a message the user can act on, an
// optional hint, and the process exit code; main() turns it into
//   error: <message>
//   hint: <hint>
// on stderr. Nothing below main() calls exit().
#include <sstream>    // std::ostringstream for TRAINER_FAIL
#include <initializer_list>  // the roots source_path looks for
#include <stdexcept>  // std::runtime_error
#include <string>     // std::string

namespace trainer {

// Exit codes: 2 for usage, configuration and data errors (the user can fix them),
// 1 for internal or system failures.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFailure = 1;
// 3: the launcher's daemon on this host (Open MPI's orted/prted, mpirun itself) died
// mid-run; without it this rank can reach no other, and it ends (runtime/daemon_loss.hpp).
// Nothing in the run itself was wrong: a resume continues it.
inline constexpr int kExitLauncherLost = 3;

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message, std::string hint = {}, int exit_code = kExitUsage)
      : std::runtime_error(message), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

// A failed library or system call: reported with the call, file and line.
class SystemError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
// `__FILE__` as the path inside the repository ("src/util/h5_io.cpp"): the compiler
// gives the build machine's absolute path, which means nothing to a user and is not
// theirs to see. The last "/src/" or "/kernels/" starts the repository's part.
inline const char* source_path(const char* file) {
  const char* start = file;
  for (const char* p = file; *p != '\0'; ++p) {
    if (*p != '/') continue;
    for (const char* root : {"src/", "kernels/"}) {
      const char* a = p + 1;
      const char* b = root;
      while (*b != '\0' && *a == *b) ++a, ++b;
      if (*b == '\0') start = p + 1;
    }
  }
  return start;
}

// "<library> call failed: <call>: <what> (src/x.cpp:12)"
inline std::string system_error_text(const char* library, const char* call, const std::string& what,
                                     const char* file, int line) {
  std::ostringstream os;
  os << library << " call failed: " << call << ": " << what << " (" << source_path(file) << ":" << line << ")";
  return os.str();
}

[[noreturn]] inline void throw_system_error(const char* library, const char* call, const std::string& what,
                                            const char* file, int line) {
  throw SystemError(system_error_text(library, call, what, file, line));
}
}  // namespace detail

}  // namespace trainer

// Internal invariant: a programming error, not a user error.
#define TRAINER_ASSERT(cond, msg)                                                                  \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream trainer_assert_os_;                                                       \
      trainer_assert_os_ << "internal error: " << msg << " [" #cond "] ("                          \
                         << ::trainer::detail::source_path(__FILE__) << ":" << __LINE__ << ")";    \
      throw ::trainer::SystemError(trainer_assert_os_.str());                                      \
    }                                                                                              \
  } while (0)

// MPI_CHECK(MPI_Bcast(...)): throws SystemError with MPI's own error string.
#define MPI_CHECK(call)                                                                            \
  do {                                                                                             \
    int trainer_mpi_rc_ = (call);                                                                  \
    if (trainer_mpi_rc_ != MPI_SUCCESS) {                                                          \
      char trainer_mpi_msg_[MPI_MAX_ERROR_STRING];                                                 \
      int trainer_mpi_len_ = 0;                                                                    \
      MPI_Error_string(trainer_mpi_rc_, trainer_mpi_msg_, &trainer_mpi_len_);                      \
      ::trainer::detail::throw_system_error("MPI", #call,                                          \
                                            std::string(trainer_mpi_msg_, trainer_mpi_len_),       \
                                            __FILE__, __LINE__);                                   \
    }                                                                                              \
  } while (0)
