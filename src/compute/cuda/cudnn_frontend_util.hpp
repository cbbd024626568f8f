#pragma once
// What the graph-API users (conv_graphs, attention_graphs) share of cudnn-frontend:
// binding the frontend to the libcudnn this process links, the FE_CHECK rule for its
// error_t results, and reading cuDNN's serialized device properties for deviceless
// building. Include only where TRAINER_HAVE_CUDNN_FRONTEND is set.
#include <cudnn_frontend.h>

#include <memory>  // std::shared_ptr
#include <string>  // std::string

#include "compute/precision.hpp"  // Precision
#include "util/error.hpp"         // SystemError

namespace trainer::compute::cuda {

// Points the frontend (built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) at the
// libcudnn already loaded; once per process. SystemError if it cannot be found.
void load_cudnn_for_frontend();

// The graph data type of a precision's tensors in memory.
inline cudnn_frontend::DataType_t io_data_type(Precision p) {
  switch (p) {
    case Precision::bf16: return cudnn_frontend::DataType_t::BFLOAT16;
    case Precision::fp16: return cudnn_frontend::DataType_t::HALF;
    case Precision::fp32: break;
  }
  return cudnn_frontend::DataType_t::FLOAT;
}

// The device properties in `json` (cuDNN's serialization, as the device check saves
// it), for a graph built without a device; UserError if cuDNN refuses them.
std::shared_ptr<cudnn_frontend::DeviceProperties> deserialize_device_properties(const std::string& json);
// The SM version those properties name ("deviceVer": 900 -> 90); UserError without it.
int sm_version_of(const std::string& device_properties_json);

}  // namespace trainer::compute::cuda

// A frontend call that must succeed (its error_t is [[nodiscard]]); `what` names the
// graph for the message.
#define FE_CHECK(expr, what)                                                                                     \
  do {                                                                                                           \
    ::cudnn_frontend::error_t fe_status_ = (expr);                                                               \
    if (fe_status_.is_bad())                                                                                     \
      throw ::trainer::SystemError(std::string("cuDNN graph API: ") + #expr + " failed for " + (what) + ": " +   \
                                   fe_status_.get_message() + " (" + __FILE__ + ":" + std::to_string(__LINE__) + \
                                   ")");                                                                         \
  } while (0)
