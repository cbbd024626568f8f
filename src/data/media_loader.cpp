// Loading the media module on demand (see media_loader.hpp).
#include "data/media_loader.hpp"

#include <dlfcn.h>   // dlopen, dlsym, dlerror
#include <unistd.h>  // readlink

#include <filesystem>  // std::filesystem::path
#include <vector>      // std::vector

#include "util/error.hpp"  // UserError

namespace trainer::data {

namespace {

namespace fs = std::filesystem;

// The outcome of the one attempt to load the module: the module, or why not.
struct LoadedModule {
  const media::Api* api = nullptr;
  std::string path;   // where it was found (or the first place looked)
  std::string error;  // empty when api is set
};

std::vector<fs::path> candidate_paths() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {fs::path(kTrainerMediaModuleName)};  // the loader's own search path
  exe[n] = '\0';
  const fs::path dir = fs::path(exe).parent_path();
  return {dir / kTrainerMediaModuleName, dir.parent_path() / "lib" / kTrainerMediaModuleName,
          dir.parent_path() / kTrainerMediaModuleName};
}

LoadedModule load_module() {
  LoadedModule out;
  std::error_code ec;
  for (const fs::path& candidate : candidate_paths()) {
    if (out.path.empty()) out.path = candidate.string();
    if (candidate.has_parent_path() && !fs::exists(candidate, ec)) continue;
    out.path = candidate.string();
    // Loaded for the life of the process and never closed: FFmpeg and OpenCV keep
    // state (codec registries, threads) that does not survive an unload.
    void* handle = ::dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      out.error = why ? why : "dlopen failed";
      return out;
    }
    using Entry = const media::Api* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, kTrainerMediaApiSymbol));
    const media::Api* api = entry ? entry() : nullptr;
    if (!api) {
      out.error = std::string("it does not export ") + kTrainerMediaApiSymbol;
    } else if (api->version != media::kApiVersion || api->size != sizeof(media::Api)) {
      out.error = "it was built for another version of trainer (interface " + std::to_string(api->version) +
                  ", this program expects " + std::to_string(media::kApiVersion) + ")";
    } else {
      out.api = api;
    }
    return out;
  }
  out.path.clear();
  for (const fs::path& candidate : candidate_paths()) out.path += (out.path.empty() ? "" : ", ") + candidate.string();
  out.error = "not installed";
  return out;
}

// One attempt per process (thread-safe static initialization), read-only afterwards.
const LoadedModule& loaded_module() {
  static const LoadedModule module = load_module();
  return module;
}

}  // namespace

const media::Api& media_api(const std::string& purpose) {
  const LoadedModule& m = loaded_module();
  if (m.api) return *m.api;
  const std::string where = m.error == "not installed" ? " (looked for " + m.path + ")"
                                                         : " from " + m.path + ": " + m.error;
  throw UserError(purpose + " needs trainer's media module (" + std::string(kTrainerMediaModuleName) +
                      ": OpenCV image codecs and FFmpeg video I/O), which is " +
                      (m.error == "not installed" ? "not installed" : "installed but cannot be loaded") + where,
                  "the module sits beside the trainer binary (or in ../lib, or ..): copy " +
                      std::string(kTrainerMediaModuleName) + " there with the binary (make -f Makefile.hpc install "
                      "does); a bundle made by scripts/bundle.sh without --media leaves it out (training, benchmarks "
                      "and prediction from HDF5 work without it): make it with --media, or unpack its media archive "
                      "into the bundle folder");
}

std::string media_module_status() {
  const LoadedModule& m = loaded_module();
  if (m.api) return std::string(m.api->description) + " (" + m.path + ")";
  if (m.error == "not installed")
    return "not installed: image and video files cannot be read or written (looked for " + m.path + ")";
  return "cannot be loaded: image and video files cannot be read or written (" + m.path + ": " + m.error + ")";
}

}  // namespace trainer::data
