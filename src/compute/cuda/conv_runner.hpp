#pragma once
// One convolution pass through the cuDNN path model.conv_algorithms chose: the legacy
// cudnnConvolution* calls with algorithms from heuristics or cudnnFind (conv_plans),
// or the graph API (conv_graphs). Both read and write the same buffers, described
// the same way, so the CUDA backend's casts and scratch carving do not depend on it.
// "auto" takes the graph API where this build has it (and cudnn-frontend can load
// cuDNN), and the legacy heuristics for a shape whose graph finds no engine, and for
// operands off 16-byte alignment whose graph finds none within the workspace already
// carved, so the default never refuses a convolution the legacy calls could run. The
// fallback is silent: the legacy path computes the same convolution.
#include <cudnn.h>  // cudnnHandle_t

#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <set>      // std::set
#include <utility>  // std::pair

#include "compute/cuda/conv_graphs.hpp"  // ConvGraphCache, ConvPass
#include "compute/cuda/conv_plans.hpp"   // ConvPlanCache, ConvProblem
#include "compute/precision.hpp"         // ConvAlgorithms

namespace trainer::compute::cuda {

class ConvRunner {
 public:
  ConvRunner(ConvAlgorithms algorithms, bool allow_tf32, std::size_t workspace_limit);
  // The workspace bytes of (p, pass), choosing its algorithm or building its plan on
  // first use (cudnnFind and graph-autotune may synchronize the device then).
  std::size_t prepare(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass);
  // out = pass(a, b), operands as ConvPass documents, right after prepare();
  // `workspace` holds the `workspace_bytes` that call returned (ask again before every
  // run: the bytes change as the graph API builds plans for operands off 16-byte
  // alignment and as graph-autotune settles on one).
  void run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b, void* out,
           void* workspace, std::size_t workspace_bytes);
  // Which cuDNN path the convolutions take, for the backend's description line.
  const char* path() const { return graphs_ ? "cuDNN graph API" : "cuDNN legacy calls"; }

 private:
  bool on_graph_api(const ConvProblem& p, ConvPass pass) const;
  // Chooses (once) the legacy algorithm of plan's pass within max_bytes; its bytes.
  static std::size_t select_legacy(cudnnHandle_t handle, ConvPlanCache& cache, ConvPlan& plan,
                                   const ConvProblem& p, ConvPass pass, std::size_t max_bytes);
  static void run_legacy(cudnnHandle_t handle, const ConvPlan& plan, const ConvProblem& p, ConvPass pass,
                         const void* a, const void* b, void* out, void* workspace, std::size_t bytes);

  ConvPlanCache plans_;
  ConvPlanCache misaligned_plans_;  // auto: heuristics within the carved workspace, for misaligned operands
  std::unique_ptr<ConvGraphCache> graphs_;  // null: the legacy path
  bool legacy_fallback_ = false;            // auto: a shape without a graph engine goes legacy
  std::set<std::pair<ConvProblem, ConvPass>> legacy_shapes_;  // those shapes (auto only)
};

}  // namespace trainer::compute::cuda
