// cuDNN's serialized device properties (CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, cuDNN
// >= 9.8): the JSON that lets cuDNN build execution plans for this GPU on a machine
// without one (deviceless ahead-of-time compilation, cudnn-frontend's
// DeviceProperties). A device check saves it (TRAINER_DEVICE_PROPS_OUT), so sessions
// without a GPU can check that every graph the step needs builds for it.
#include <catch2/catch.hpp>

#include <cudnn.h>  // cudnnBackend*

#include <cstdint>   // std::int32_t, std::int64_t
#include <cstdlib>   // std::getenv
#include <fstream>   // std::ofstream
#include <string>    // std::string

#include "compute/cuda/cuda_check.hpp"  // CUDNN_CHECK
#include "compute/cuda/cudnn_raii.hpp"  // cuda::CudnnHandle

namespace {
// The backend descriptor, destroyed on every path.
struct BackendDescriptor {
  cudnnBackendDescriptor_t d = nullptr;
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type) { CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d)); }
  ~BackendDescriptor() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
};
}  // namespace

TEST_CASE("cuda device properties serialize for deviceless cuDNN plans", "[gpu][cudnn]") {
  if (cudnnGetVersion() < 90800) {
    WARN("cuDNN " << cudnnGetVersion() << " has no serialized device properties (9.8 and up)");
    CHECK(cudnnGetVersion() > 0);
    return;
  }
  trainer::compute::cuda::CudnnHandle handle;
  BackendDescriptor props(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  cudnnHandle_t h = handle;
  CUDNN_CHECK(cudnnBackendSetAttribute(props.d, CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CUDNN_CHECK(cudnnBackendFinalize(props.d));
  std::int64_t size = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(props.d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0,
                                       &size, nullptr));
  REQUIRE(size > 2);
  std::string json(static_cast<std::size_t>(size), '\0');
  CUDNN_CHECK(cudnnBackendGetAttribute(props.d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, size,
                                       &size, json.data()));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  INFO(json.substr(0, 400));
  CHECK(json.find('{') != std::string::npos);
  // The round trip: a descriptor made from the JSON alone (what a machine without a
  // GPU does) finalizes.
  BackendDescriptor again(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  CUDNN_CHECK(cudnnBackendSetAttribute(again.d, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                       static_cast<std::int64_t>(json.size()), json.data()));
  CHECK(cudnnBackendFinalize(again.d) == CUDNN_STATUS_SUCCESS);
  if (const char* out = std::getenv("TRAINER_DEVICE_PROPS_OUT")) {
    std::ofstream(out) << json << "\n";
    WARN("cuDNN device properties (" << cudnnGetVersion() << ") written to " << out);
  }
}
