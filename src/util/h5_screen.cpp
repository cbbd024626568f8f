// The foreign-file screen: an HDF5 file without a checksum walked in a child process
// first (see h5_screen.hpp).
#include "util/h5_screen.hpp"

#include <fcntl.h>         // O_CLOEXEC, O_RDONLY, O_WRONLY
#include <malloc.h>        // mallopt, M_TOP_PAD
#include <poll.h>          // poll
#include <signal.h>        // kill, SIGKILL, sigset_t
#include <spawn.h>         // posix_spawn
#include <sys/resource.h>  // setrlimit
#include <sys/stat.h>      // stat
#include <sys/wait.h>      // waitpid
#include <unistd.h>        // pipe2, read

#include <algorithm>  // std::min
#include <cerrno>    // errno
#include <chrono>    // std::chrono::steady_clock
#include <cmath>     // std::ceil
#include <cstdio>    // std::snprintf
#include <cstdlib>   // std::strtod, std::strtoull
#include <cstring>   // std::strerror, strsignal
#include <iostream>  // std::cout
#include <mutex>     // std::mutex
#include <optional>  // std::optional
#include <set>       // std::set
#include <thread>    // std::this_thread::sleep_for
#include <tuple>     // std::tuple
#include <vector>    // std::vector

#include <hdf5.h>  // H5Fis_hdf5

#include "util/error.hpp"        // UserError, SystemError
#include "util/fd.hpp"           // Fd
#include "util/h5.hpp"           // silence_errors_on_this_thread
#include "util/h5_checksum.hpp"  // verify_checksum
#include "util/h5_walk.hpp"      // walk_file

extern char** environ;

namespace trainer::h5 {

namespace {

// Files that passed in this process: (device, inode, size, mtime seconds, nanoseconds).
using Identity = std::tuple<dev_t, ino_t, off_t, long, long>;

// The process's screen: its settings (set once by main) and the files it passed. One
// instance, as the checksum's list of verified files: the readers that ask are many
// layers below main and run on several threads.
struct Screen {
  std::mutex mutex;
  std::optional<ScreenSettings> settings;
  std::set<Identity> passed;
};
Screen& screen() {
  static Screen instance;
  return instance;
}

std::optional<Identity> identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return Identity{st.st_dev, st.st_ino, st.st_size, static_cast<long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec};
}

// posix_spawn's attribute and file-action objects, destroyed on every path out.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The child, killed and reaped if it is still there when we leave (an exception, a
// time-out): a screen never leaves a process behind.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);  // its process group: anything it started goes too
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // The wait status once the child ended, or nothing if it has not (yet).
  std::optional<int> poll_exit() {
    int status = 0;
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      return status;
    }
    if (got < 0 && errno != EINTR) throw SystemError(std::string("waitpid failed: ") + std::strerror(errno));
    return std::nullopt;
  }

 private:
  pid_t pid_;
};

struct Outcome {
  bool timed_out = false;
  int status = 0;      // the wait status when not timed out
  std::string report;  // the child's stdout: what failed
};

Outcome run_child(const std::string& path, const ScreenSettings& settings) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw SystemError(std::string("pipe2 failed: ") + std::strerror(errno));
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  SpawnSetup setup;
  // stdout is the report; stdin and stderr are /dev/null (HDF5's or a sanitizer's
  // noise is not ours to show). The child's descriptors beyond those are closed by
  // the child itself (run_screen_child), so it never holds this process's sockets.
  posix_spawn_file_actions_adddup2(&setup.actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Default signal actions and no blocked signals (this process ignores SIGPIPE and
  // may block others), and its own process group: a Ctrl-C at the terminal goes to
  // this process, which answers it, not to the child, whose death would read as damage.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  const std::string seconds = std::to_string(settings.seconds);
  const std::string bytes = std::to_string(settings.address_space_bytes);
  std::vector<char*> argv = {const_cast<char*>(settings.program.c_str()), const_cast<char*>(kScreenSubcommand),
                             const_cast<char*>(seconds.c_str()), const_cast<char*>(bytes.c_str()),
                             const_cast<char*>(path.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, settings.program.c_str(), &setup.actions, &setup.attr, argv.data(), environ);
  if (rc != 0)
    throw SystemError("cannot start the check of '" + path + "' (" + settings.program + "): " + std::strerror(rc));
  Child child(pid);
  write_end.close();

  // The report until the child closes its stdout, then its exit, both by the deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(settings.seconds);
  const auto ms_left = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return left.count() > 0 ? static_cast<int>(std::min<long long>(left.count(), 1 << 30)) : 0;
  };
  Outcome outcome;
  for (bool open = true; open;) {
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_left());
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw SystemError(std::string("poll failed: ") + std::strerror(errno));
    if (ready == 0) {
      outcome.timed_out = true;
      return outcome;  // ~Child kills and reaps it
    }
    char buffer[1024];
    const ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    open = got > 0;
    if (got > 0 && outcome.report.size() < 4096) outcome.report.append(buffer, static_cast<std::size_t>(got));
  }
  for (;;) {
    if (const auto status = child.poll_exit()) {
      outcome.status = *status;
      return outcome;
    }
    if (ms_left() == 0) {
      outcome.timed_out = true;
      return outcome;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string first_line(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "no reason given" : line;
}

// Why the file is refused, or nothing when the walk was clean.
std::optional<std::string> judge(const Outcome& outcome, const ScreenSettings& settings) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", settings.seconds);
  if (outcome.timed_out)
    return std::string("HDF5 did not finish reading its structure within ") + seconds +
           " s, as HDF5 loops on some damage (TRAINER_H5_SCREEN_SECONDS raises the limit for a slow file system)";
  const int status = outcome.status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kScreenDamaged) return "HDF5 cannot read it: " + first_line(outcome.report);
  if (WIFSIGNALED(status))
    return std::string("HDF5 crashed reading it (") + ::strsignal(WTERMSIG(status)) +
           "; it has no checksum, so it was read in a separate process first)";
  return "the check of it in a separate process ended with exit status " + std::to_string(WEXITSTATUS(status));
}

void set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  ::setrlimit(resource, &limit);  // best effort: a limit already lower stays
}

void close_inherited_descriptors() {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
  if (::close_range(3, ~0u, 0) == 0) return;
#endif
  const long most = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
  for (int fd = 3; fd < most; ++fd) ::close(fd);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

}  // namespace

void enable_screen(const ScreenSettings& settings) {
  Screen& s = screen();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.settings = settings;
}

void disable_screen() {
  Screen& s = screen();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.settings.reset();
  s.passed.clear();
}

void check_before_parsing(const std::string& path, const std::string& subject, const std::string& hint) {
  if (verify_checksum(path, subject, hint)) return;
  Screen& s = screen();
  std::optional<ScreenSettings> settings;
  const std::optional<Identity> identity = identity_of(path);
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.settings || !identity || s.passed.count(*identity)) return;  // off, not a file (the caller says why), or passed
    settings = s.settings;
  }
  const Outcome outcome = run_child(path, *settings);
  if (const auto why = judge(outcome, *settings)) throw UserError(subject + " is truncated or damaged: " + *why, hint);
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.passed.insert(*identity);
}

int run_screen_child(const std::vector<std::string>& args) {
  // The parent's descriptors (MPI's sockets among them) are not ours to hold open.
  close_inherited_descriptors();
  if (args.size() != 3) return 2;
  const double seconds = std::strtod(args[0].c_str(), nullptr);
  const unsigned long long bytes = std::strtoull(args[1].c_str(), nullptr, 10);
  const std::string& path = args[2];
  // CPU time a little past the parent's deadline: a loop ends here even if the parent
  // is gone. The address space bounds what a damaged length can make HDF5 allocate
  // (not under AddressSanitizer, which reserves terabytes of shadow memory).
  if (seconds > 0) set_limit(RLIMIT_CPU, static_cast<rlim_t>(std::ceil(seconds)) + 1);
  if (!kAddressSanitizer && bytes > 0) set_limit(RLIMIT_AS, static_cast<rlim_t>(bytes));
  // HDF5's bugs on damage are mostly reads past a buffer, which fault only where no
  // memory is mapped beyond it. With no padding at the top of the heap, the buffers
  // HDF5 allocates last (its metadata images) end near unmapped memory, so such a read
  // faults here, where it costs nothing, even when it would not in the parent (a file
  // that crashed the trainer with its stderr on a file and not on a terminal crashes
  // this walk every time with the padding off, never with it on).
  ::mallopt(M_TOP_PAD, 0);
  try {
    silence_errors_on_this_thread();
    // Not HDF5 at all: the reader's own check says so, in its words.
    if (H5Fis_hdf5(path.c_str()) <= 0) return 0;
    walk_file(path);
    return 0;
  } catch (const std::bad_alloc&) {
    std::cout << "it claims more memory than " << (bytes >> 20) << " MiB\n" << std::flush;
  } catch (const std::exception& e) {
    std::cout << e.what() << "\n" << std::flush;
  }
  return kScreenDamaged;
}

}  // namespace trainer::h5
