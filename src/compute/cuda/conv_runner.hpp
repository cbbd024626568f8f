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
//
// "autotune" races the two paths once per shape and pass, on the first call with
// 16-byte aligned operands outside a stream capture: graph-autotune's fastest plan
// against the algorithm cudnnFind picks, each timed on the caller's own buffers
// (fastest_run.hpp), and the faster runs from then on. Why: fp32 without TF32 on an
// H200 (2026-11-28) spent about 24 ms of a 31 ms step in the engines the graph API's
// heuristics rank first (wgrad_alg0 at 265 us a call), while PyTorch's cudnnFind
// picks ran the same network's convolutions in about 19 ms (H100 profile, 2026-11-22).
// Until a shape has raced, prepare() asks for the larger of the two workspaces. A
// shape whose operands are never 16-byte aligned never races; it runs as under auto.
#include <cudnn.h>  // cudnnHandle_t

#include <cstddef>  // std::size_t
#include <map>      // std::map
#include <memory>   // std::unique_ptr
#include <set>      // std::set
#include <string>   // std::string
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
  // Which cuDNN path the convolutions take, for the backend's description line; with
  // autotune, how the races so far went.
  std::string path() const;

 private:
  using Shape = std::pair<ConvProblem, ConvPass>;
  bool on_graph_api(const ConvProblem& p, ConvPass pass) const;
  bool race_pending(const ConvProblem& p, ConvPass pass) const;
  std::size_t misaligned_legacy_bytes(const ConvProblem& p, ConvPass pass) const;
  // autotune: runs (p, pass) on both paths, timing each, and keeps the faster.
  void race(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b, void* out,
            void* workspace, std::size_t bytes);
  // Chooses (once) the legacy algorithm of plan's pass within max_bytes; its bytes.
  static std::size_t select_legacy(cudnnHandle_t handle, ConvPlanCache& cache, ConvPlan& plan,
                                   const ConvProblem& p, ConvPass pass, std::size_t max_bytes);
  static void run_legacy(cudnnHandle_t handle, const ConvPlan& plan, const ConvProblem& p, ConvPass pass,
                         const void* a, const void* b, void* out, void* workspace, std::size_t bytes);

  ConvPlanCache plans_;
  ConvPlanCache misaligned_plans_;  // auto: heuristics within the carved workspace, for misaligned operands
  std::unique_ptr<ConvGraphCache> graphs_;  // null: the legacy path
  bool legacy_fallback_ = false;            // auto: a shape without a graph engine goes legacy
  std::set<Shape> legacy_shapes_;           // those shapes (auto), and those the legacy calls won (autotune)
  bool race_paths_ = false;                 // autotune with the graph API
  std::set<Shape> raced_;                   // autotune: shapes decided (or with one path only)
  std::size_t races_ = 0, legacy_wins_ = 0;  // autotune: for the description line
  // The workspace of the legacy algorithm run() chose for misaligned operands, per shape.
  std::map<Shape, std::size_t> misaligned_legacy_bytes_;
};

}  // namespace trainer::compute::cuda
