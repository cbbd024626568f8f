// Atomic file writing and the removal of stale temporary files (see atomic_write.hpp).
#include "util/atomic_write.hpp"

#include <dirent.h>    // opendir, readdir, closedir
#include <fcntl.h>     // open, O_* flags
#include <signal.h>    // kill
#include <sys/stat.h>  // lstat, S_ISREG
#include <unistd.h>    // getpid, fsync, write, close, unlink

#include <cerrno>   // errno, ESRCH, EINTR, EINVAL, ENOTSUP
#include <cstdio>   // std::rename
#include <cstring>  // std::strerror
#include <memory>   // std::unique_ptr (the DIR handle)

#include "util/fd.hpp"  // Fd: the descriptor owner
#include "util/error.hpp"           // UserError, SystemError
#include "util/signal_cleanup.hpp"  // register_temp_path, unregister_temp_path

namespace trainer {
namespace {

constexpr const char kTempMarker[] = ".tmp-";


std::string errno_text() { return std::strerror(errno); }

// fsync(2) of a file or folder by name. Some file systems cannot sync a folder
// (EINVAL, ENOTSUP): there is nothing more to do for the rename then.
void sync_path(const std::string& path, int flags) {
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (fd.get() < 0) throw SystemError("cannot open '" + path + "' to sync it: " + errno_text());
  if (::fsync(fd.get()) == 0) return;
  if ((flags & O_DIRECTORY) && (errno == EINVAL || errno == ENOTSUP)) return;
  throw SystemError("cannot sync '" + path + "' to disk: " + errno_text());
}

}  // namespace

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

namespace {
// The extension of a file name: from its last '.', if that is not its first character
// and the name has a stem ("a.mp4" -> ".mp4"; ".bashrc", "a" -> "").
std::string extension_of(const std::string& name) {
  const auto slash = name.rfind('/');
  const auto dot = name.rfind('.');
  const std::size_t start = slash == std::string::npos ? 0 : slash + 1;
  if (dot == std::string::npos || dot <= start || dot + 1 == name.size()) return "";
  return name.substr(dot);
}
}  // namespace

std::string temp_path_for(const std::string& path, TempName name) {
  return path + kTempMarker + std::to_string(::getpid()) + (name == TempName::keep_extension ? extension_of(path) : "");
}

PendingFile::PendingFile(std::string path, TempName name)
    : path_(std::move(path)), temp_path_(temp_path_for(path_, name)) {
  signal_slot_ = register_temp_path(temp_path_);
}

PendingFile::~PendingFile() {
  if (!committed_) ::unlink(temp_path_.c_str());  // ENOENT when it was never created: fine
  unregister_temp_path(signal_slot_);
}

void PendingFile::commit() {
  try {
    sync_path(temp_path_, O_RDONLY);
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0)
      throw SystemError("cannot rename '" + temp_path_ + "' to '" + path_ + "': " + errno_text());
  } catch (...) {
    ::unlink(temp_path_.c_str());
    throw;
  }
  committed_ = true;
  // The rename is only durable once the folder's entry is on disk.
  sync_path(folder_of(path_), O_RDONLY | O_DIRECTORY);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  PendingFile pending(path);
  const std::string& temp = pending.temp_path();
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    throw UserError("cannot write '" + temp + "': " + errno_text(), "is the output folder writable?");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UserError("cannot write '" + temp + "': " + errno_text(), "is the disk full?");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || !fd.close())
    throw UserError("cannot write '" + temp + "': " + errno_text(), "is the disk full?");
  pending.commit();
}

void check_output_file(const std::string& path, const std::string& what) {
  if (path.empty()) throw UserError(what + " is empty", "name the file to write");
  struct stat st {};
  if (path.back() == '/' || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    throw UserError(what + " '" + path + "' is a directory, not a file",
                    "name a file (a new one, or one to replace), or move the directory away");
}

long temp_file_pid(const std::string& file_name) {
  const auto at = file_name.rfind(kTempMarker);
  if (at == std::string::npos || at == 0) return 0;
  std::string digits = file_name.substr(at + sizeof kTempMarker - 1);
  // TempName::keep_extension: the name's own extension repeated after the pid.
  const std::string extension = extension_of(file_name.substr(0, at));
  if (!extension.empty() && digits.size() > extension.size() &&
      digits.compare(digits.size() - extension.size(), extension.size(), extension) == 0)
    digits.resize(digits.size() - extension.size());
  // The labeled-video writer of 2026-11-24 (before this rule) named its temporary file
  // `.<stem>.tmp-<pid>.mp4`; a kill left it behind, so the clean-up still knows it.
  else if (file_name[0] == '.' && digits.size() > 4 && digits.compare(digits.size() - 4, 4, ".mp4") == 0)
    digits.resize(digits.size() - 4);
  if (digits.empty() || digits.size() > 9 || digits[0] == '0') return 0;  // pids are below 2^22 on Linux
  for (char c : digits)
    if (c < '0' || c > '9') return 0;
  return std::stol(digits);
}

std::vector<std::string> remove_stale_temp_files(const std::string& folder) {
  std::vector<std::string> removed;
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(folder.c_str()), ::closedir);
  if (!dir) return removed;
  const long self = ::getpid();
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    const long pid = temp_file_pid(name);
    if (pid == 0 || pid == self) continue;
    // Only a pid that names no process at all: EPERM means it lives (another user's).
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string path = folder + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::unlink(path.c_str()) == 0) removed.push_back(path);
  }
  return removed;
}

}  // namespace trainer
