// cudnn-frontend's binding and device properties (see cudnn_frontend_util.hpp).
#if TRAINER_HAVE_CUDNN_FRONTEND
#include "compute/cuda/cudnn_frontend_util.hpp"

#include <dlfcn.h>  // dladdr, dlopen: the loaded libcudnn for the frontend

#include <cstdint>  // std::uint8_t
#include <mutex>    // std::once_flag
#include <regex>    // the device properties' deviceVer
#include <vector>   // std::vector

// The frontend reaches cuDNN through this handle, which it declares and leaves to the
// program to define: the libcudnn this process already links (set once, below).
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace trainer::compute::cuda {

void load_cudnn_for_frontend() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cudnnGetVersion), &info) == 0 || info.dli_fname == nullptr)
      throw SystemError("cuDNN's graph API: cannot locate the loaded libcudnn");
    cudnn_frontend::cudnn_dlhandle = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (cudnn_frontend::cudnn_dlhandle == nullptr)
      throw SystemError(std::string("cuDNN's graph API: dlopen(") + info.dli_fname + ") failed: " + dlerror());
  });
}

std::shared_ptr<cudnn_frontend::DeviceProperties> deserialize_device_properties(const std::string& json) {
  load_cudnn_for_frontend();
  std::vector<std::uint8_t> bytes(json.begin(), json.end());
  bytes.push_back(0);
  auto props = std::make_shared<cudnn_frontend::DeviceProperties>();
  cudnn_frontend::error_t accepted = props->deserialize(bytes);
  if (accepted.is_bad())
    throw UserError("cuDNN does not accept these device properties: " + accepted.get_message(),
                    "use the file the device check saves (logs/cudnn-device-properties.json); "
                    "CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr names the missing field");
  return props;
}

int sm_version_of(const std::string& json) {
  static const std::regex device_ver("\"deviceVer\"\\s*:\\s*([0-9]+)");
  std::smatch m;
  if (!std::regex_search(json, m, device_ver)) throw UserError("cuDNN device properties without \"deviceVer\"");
  return std::stoi(m[1]) / 10;  // 900 -> 90
}

}  // namespace trainer::compute::cuda
#endif  // TRAINER_HAVE_CUDNN_FRONTEND
