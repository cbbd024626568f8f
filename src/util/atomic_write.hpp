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

// The one rule for temporary names, which the start-up cleanup knows:
//   plain            `<path>.tmp-<pid>`
//   keep_extension   `<path>.tmp-<pid><ext>`, `<ext>` being path's own extension
//                    (`v_labeled.mp4.tmp-123.mp4`), for writers whose library picks
//                    the format by the file name's extension (video writers).
enum class TempName { plain, keep_extension };
std::string temp_path_for(const std::string& path, TempName name = TempName::plain);

// Before the work: a file that PendingFile will write must have a name, and what is
// there now must be something a rename can replace: a folder of that name would make
// the commit fail after all the work ("cannot rename ...: Is a directory"). A
// UserError naming `what` ("synth --out", "config.ini of the run") if not.
void check_output_file(const std::string& path, const std::string& what);

// The temporary twin of `path` while it is being written; commit() makes it `path`.
class PendingFile {
 public:
  explicit PendingFile(std::string path, TempName name = TempName::plain);
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

// The pid that `file_name` carries as a temporary file's name (`x.tmp-123` -> 123,
// `v.mp4.tmp-123.mp4` -> 123; also `.v_labeled.tmp-123.mp4`, the name the labeled-video
// writer used before the rule), or 0 when the name is not of a form temp_path_for makes.
long temp_file_pid(const std::string& file_name);

}  // namespace trainer
