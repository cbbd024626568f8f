// Output folders (see output_files.hpp).
#include "app/output_files.hpp"

#include <sys/stat.h>  // mkdir, stat

#include <cerrno>   // errno
#include <cstring>  // std::strerror
#include <ctime>    // std::time, localtime_r, strftime
#include <filesystem>  // std::filesystem::path: a lightning-pose model folder

#include "util/atomic_write.hpp"  // remove_stale_temp_files
#include "util/error.hpp"         // UserError

namespace trainer::app {

std::string run_dir_of_checkpoint(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const auto parent = dir.rfind('/');
  if (dir.size() >= 11 && dir.compare(dir.size() - 11, 11, "checkpoints") == 0) {
    const std::string run = parent == std::string::npos ? "." : dir.substr(0, parent);
    // lightning-pose keeps its checkpoints under tb_logs/<name>/version_<n>/: the model
    // folder is the one that holds tb_logs (where its config.yaml and predictions are).
    const std::filesystem::path version(run);
    if (version.filename().string().rfind("version_", 0) == 0 &&
        version.parent_path().parent_path().filename() == "tb_logs") {
      const std::string model = version.parent_path().parent_path().parent_path().string();
      return model.empty() ? "." : model;
    }
    return run;
  }
  return dir;
}

std::string timestamped_output_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "outputs/%Y-%m-%d/%H-%M-%S", &tm);
  return buf;
}

void make_directories(const std::string& path) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0775) != 0 && errno != EEXIST)
      throw UserError("cannot create folder '" + partial + "': " + std::strerror(errno),
                      "choose another --out folder");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UserError("'" + path + "' is not a folder", "choose another --out folder");
}

void remove_stale_temp_files_in(const std::string& folder, const Log& log) {
  for (const auto& path : remove_stale_temp_files(folder))
    log.info("removed " + path + ", a temporary file left by a process that no longer runs");
}

}  // namespace trainer::app
