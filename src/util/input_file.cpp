// User-named inputs checked before they are opened (see input_file.hpp).
#include "util/input_file.hpp"

#include <fcntl.h>     // open, O_RDONLY, O_NONBLOCK, O_CLOEXEC
#include <sys/stat.h>  // stat, fstat, S_IS*
#include <unistd.h>    // read, close, access, getcwd

#include <cerrno>   // errno
#include <cstring>  // std::strerror

#include "util/error.hpp"  // UserError
#include "util/fd.hpp"     // Fd

namespace trainer {

namespace {

// What a non-regular, non-folder file is, for the message.
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

[[noreturn]] void refuse(const std::string& subject, const std::string& reason, const std::string& hint) {
  throw UserError(subject + ": " + reason, hint);
}

// stat() of the path, or a UserError saying why there is nothing to open.
struct stat status_of(const std::string& path, const std::string& subject, const std::string& hint) {
  if (path.empty()) refuse(subject, "the path is empty", hint);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) refuse(subject, "no such file" + from_working_directory(path), hint);
    if (error == EACCES) refuse(subject, "permission denied", hint);
    refuse(subject, std::strerror(error), hint);
  }
  return st;
}

}  // namespace

std::string from_working_directory(const std::string& path) {
  if (path.empty() || path.front() == '/') return "";
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return "";
  return std::string(" (a relative path: from the working directory ") + cwd + ")";
}

void check_input_file(const std::string& path, const std::string& subject, const std::string& hint) {
  const struct stat st = status_of(path, subject, hint);
  if (S_ISDIR(st.st_mode)) refuse(subject, "is a directory", hint);
  if (!S_ISREG(st.st_mode)) refuse(subject, std::string("not a regular file (") + kind_of(st.st_mode) + ")", hint);
  if (::access(path.c_str(), R_OK) != 0) refuse(subject, "permission denied", hint);
}

void check_input_folder(const std::string& path, const std::string& subject, const std::string& hint) {
  const struct stat st = status_of(path, subject, hint);
  if (!S_ISDIR(st.st_mode)) refuse(subject, "not a folder", hint);
  if (::access(path.c_str(), R_OK | X_OK) != 0) refuse(subject, "permission denied", hint);
}

std::string read_input_file(const std::string& path, const std::string& subject, std::size_t max_bytes,
                            const std::string& hint) {
  check_input_file(path, subject, hint);
  // O_NONBLOCK: a FIFO put in the file's place after the check opens at once instead
  // of waiting for a writer; fstat below then refuses it.
  const Fd owned(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  const int fd = owned.get();
  if (fd < 0) refuse(subject, errno == EACCES ? "permission denied" : std::strerror(errno), hint);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) refuse(subject, "not a regular file", hint);
  if (static_cast<unsigned long long>(st.st_size) > max_bytes)
    refuse(subject, "is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                        " this input may have",
           hint);
  // Read to the end, but never past the limit: a file that grows while it is read
  // (or lies about its size) ends here too.
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  for (;;) {
    if (done == text.size()) text.resize(text.size() + 65536);
    const ssize_t got = ::read(fd, &text[done], text.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) refuse(subject, std::string("read failed: ") + std::strerror(errno), hint);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
    if (done > max_bytes) refuse(subject, "grew past " + std::to_string(max_bytes) + " bytes", hint);
  }
  text.resize(done);
  return text;
}

}  // namespace trainer
