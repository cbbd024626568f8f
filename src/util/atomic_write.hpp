#pragma once
// Files that appear whole or not at all. Every writer of a shared file (checkpoints,
// data sets, config.ini, split.csv, metrics.csv, predictions) writes `<path>.tmp-<pid>`
// and renames it over `path` when complete:
//   - the temporary file is fsynced before the rename and its folder after it, so a
//     power loss leaves either the old file or the new one, never an empty one;
//   - an exception on the way removes the temporary file;
//   - SIGINT, SIGTERM or SIGHUP during the write removes it too (signal_cleanup.hpp);
//   - a kill -9 cannot be caught: remove_stale_temp_files() at the next start removes
//     the temporary files of processes that no longer exist.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer {

// The folder of a file path ("." for a bare file name): where its temporary twin
// lives and which folder a commit fsyncs.
std::string folder_of(const std::string& path);

// `<path>.tmp-<pid of this process>`.
std::string temp_path_for(const std::string& path);

// The temporary twin of `path` while it is being written; commit() makes it `path`.
class PendingFile {
 public:
  explicit PendingFile(std::string path);
  // Without commit(): removes the temporary file (if it was created).
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  // fsync the (closed) temporary file, rename it to path(), fsync the folder.
  // Failure is a SystemError and the temporary file is removed.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  int signal_slot_ = -1;  // signal_cleanup.hpp registration
  bool committed_ = false;
};

// Writes `text` to `path` atomically (PendingFile). A temporary file that cannot
// be created or written is a UserError naming it (an unwritable folder, a full disk).
void write_file_atomically(const std::string& path, const std::string& text);

// Removes, in `folder`, the files named `<name>.tmp-<pid>` (the temporary files of
// PendingFile) whose pid is not a live process on this host: what a killed writer
// left. Other files, and temporary files of live processes, are left alone. Returns
// the removed paths. A missing folder has nothing to remove.
std::vector<std::string> remove_stale_temp_files(const std::string& folder);

// The pid that `file_name` carries as a temporary file's name (`x.tmp-123` -> 123),
// or 0 when the name is not of that form.
long temp_file_pid(const std::string& file_name);

}  // namespace trainer
