#pragma once
// The convolutions through cuDNN's graph API (cudnn-frontend), the alternative to
// conv_plans' legacy cudnnConvolution* calls: model.conv_algorithms = graph takes the
// first engine that cuDNN's heuristics (mode A, then the fallback list) rank, that
// builds and fits the workspace limit; graph-autotune builds up to
// kAutotuneCandidates of them and times each once per shape on its first call (it
// waits for the stream once per shape, as model.conv_algorithms = benchmark does). Plans are built
// once per problem and pass and kept for the life of the backend.
//
// Why: the legacy API reaches only cuDNN's older engines (the H100's profile had
// cudnnFind choosing the legacy wgrad_alg0 kernel for 30% of a bf16 step); the graph
// API reaches every engine, runtime-compiled ones included.
//
// Tensors are described as conv_plans describes them, so the same buffers serve both
// paths: fp32 NCHW with OIHW filters, or the precision's 16-bit NHWC with KRSC
// filters, fp32 accumulation. fp32 without TF32 excludes tensor-core engines (parity
// with the CPU backend).
//
// Operand alignment: cudnn-frontend declares every tensor 16-byte aligned unless told,
// and an engine chosen on that promise refuses a pointer that breaks it at execution
// (CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER). The flat parameter store packs tensors
// back to back, so a filter after an odd-length bias (the heatmap head's second
// transposed convolution, after 17 keypoints' biases) sits 4 bytes off. run() reads
// each operand's alignment and, where one is under 16 bytes, executes a plan built
// for exactly that alignment, within the workspace prepare() sized.
//
// Deviceless building (build_conv_graph_deviceless): cuDNN >= 9.11 builds plans from
// serialized device properties alone, so CI checks on CPU that every graph a step
// needs has an engine for the GPU those properties describe (tests/cudnn_plans).
//
// Without cudnn-frontend's headers at build time (scripts/fetch_cudnn_frontend.sh)
// cudnn_graph_api_built() is false and constructing a ConvGraphCache throws.
#include <cudnn.h>  // cudnnHandle_t

#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string

#include "compute/cuda/conv_plans.hpp"  // ConvProblem

namespace trainer::compute::cuda {

// Which of a convolution's three problems. Operands of run(): forward (a = x,
// b = w, out = y), backward_data (a = dy, b = w, out = dx), backward_filter (a = x,
// b = dy, out = dw).
enum class ConvPass { forward, backward_data, backward_filter };
const char* conv_pass_name(ConvPass pass);

struct ConvGraphSettings {
  bool allow_tf32 = false;  // fp32 problems: false keeps tensor-core (TF32) engines out
  bool autotune = false;    // time the built candidates once per shape (first call)
  std::size_t workspace_limit = std::size_t(1) << 30;  // bytes per convolution call
};

// The byte alignment of each operand (a, b, out as ConvPass documents) that a plan may
// assume: 16, or the largest power of two under it that divides the address.
struct ConvAlignment {
  std::int64_t a = 16, b = 16, out = 16;
  bool full() const { return a == 16 && b == 16 && out == 16; }
  bool operator<(const ConvAlignment& o) const;
};
ConvAlignment alignment_of(const void* a, const void* b, const void* out);

// How many heuristic candidates graph-autotune builds and times per shape.
inline constexpr int kAutotuneCandidates = 8;

// Whether this build has the graph API (cudnn-frontend's headers were found).
bool cudnn_graph_api_built();

class ConvGraphCache {
 public:
  explicit ConvGraphCache(ConvGraphSettings settings);  // SystemError without the graph API
  ~ConvGraphCache();
  ConvGraphCache(const ConvGraphCache&) = delete;
  ConvGraphCache& operator=(const ConvGraphCache&) = delete;

  // The workspace bytes run() needs for (p, pass), building its plan on first use:
  // the largest of its plans' (the 16-byte one and those run() built for misaligned
  // operands). With autotune the 16-byte plan counts its largest candidate's until the
  // first run() has timed them.
  std::size_t prepare(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass);
  // out = pass(a, b) on the handle's stream; workspace holds workspace_bytes, at least
  // prepare()'s. Operands under 16-byte alignment take a plan built for their
  // alignment (first use: built then, without autotuning, within workspace_bytes).
  void run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b, void* out,
           void* workspace, std::size_t workspace_bytes);
  // run() for a caller with another way to run the convolution (auto's legacy calls):
  // false, with nothing enqueued, when no plan for these operands builds within
  // workspace_bytes. Remembered: the next call for such operands answers at once.
  bool try_run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b, void* out,
               void* workspace, std::size_t workspace_bytes);
  std::size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What building (p, pass) without a device found, for the deviceless tests.
struct DevicelessBuild {
  bool built = false;
  int candidates = 0;           // engine configurations the heuristics offered
  std::int64_t workspace = 0;   // bytes, of the engine chosen
  std::string engine;           // the chosen engine's tag, or why none was built
  // Not built, but only because finalizing the chosen engine's plan loads its kernel
  // through the CUDA driver (cuDNN's runtime-compiled engines, e.g. fused attention),
  // and this machine has none: cuDNN accepted the graph for that device.
  bool needs_driver = false;
};

// Builds (p, pass) for the GPU that `device_properties_json` describes (cuDNN's
// serialized device properties, as the device check saves them), without a device:
// the same graph and the same engine choice as ConvGraphCache::prepare (or, with an
// alignment under 16 bytes, as run() makes for such operands), minus autotuning.
// UserError if cuDNN does not accept the properties.
DevicelessBuild build_conv_graph_deviceless(const std::string& device_properties_json, const ConvProblem& p,
                                            ConvPass pass, const ConvGraphSettings& settings,
                                            ConvAlignment alignment = {});

}  // namespace trainer::compute::cuda
