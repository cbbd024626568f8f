#include "compute/cuda/conv_runner.hpp"

#include <algorithm>  // std::max
#include <string>     // std::string, std::to_string

#include "compute/cuda/cuda_check.hpp"   // CUDNN_CHECK
#include "compute/cuda/fastest_run.hpp"  // fastest_run_ms, stream_capturing
#include "util/error.hpp"                // SystemError

namespace trainer::compute::cuda {
namespace {

bool uses_graph_api(ConvAlgorithms a) {
  return a == ConvAlgorithms::graph || a == ConvAlgorithms::graph_autotune ||
         ((a == ConvAlgorithms::automatic || a == ConvAlgorithms::autotune) && cudnn_graph_api_built());
}

}  // namespace

ConvRunner::ConvRunner(ConvAlgorithms algorithms, bool allow_tf32, std::size_t workspace_limit)
    : plans_(ConvSettings{allow_tf32,
                          algorithms == ConvAlgorithms::benchmark || algorithms == ConvAlgorithms::autotune,
                          workspace_limit}),
      misaligned_plans_(ConvSettings{allow_tf32, false, workspace_limit}) {
  if (!uses_graph_api(algorithms)) return;
  const bool tune = algorithms == ConvAlgorithms::graph_autotune || algorithms == ConvAlgorithms::autotune;
  const ConvGraphSettings settings{allow_tf32, tune, workspace_limit};
  if (algorithms == ConvAlgorithms::graph || algorithms == ConvAlgorithms::graph_autotune) {
    graphs_ = std::make_unique<ConvGraphCache>(settings);
    return;
  }
  try {
    graphs_ = std::make_unique<ConvGraphCache>(settings);
    legacy_fallback_ = true;
    race_paths_ = algorithms == ConvAlgorithms::autotune;
  } catch (const SystemError&) {
    // cudnn-frontend could not load the cuDNN library it calls: auto and autotune keep
    // the legacy calls, which the backend has already loaded, rather than refusing the run.
  }
}

std::string ConvRunner::path() const {
  if (!race_paths_) return graphs_ ? "cuDNN graph API" : "cuDNN legacy calls";
  const std::string path = "cuDNN graph API or legacy calls, the faster per shape";
  if (races_ == 0) return path;
  return path + " (" + std::to_string(races_) + " passes raced, " + std::to_string(legacy_wins_) +
         " won by the legacy calls)";
}

std::size_t ConvRunner::misaligned_legacy_bytes(const ConvProblem& p, ConvPass pass) const {
  const auto it = misaligned_legacy_bytes_.find({p, pass});
  return it == misaligned_legacy_bytes_.end() ? 0 : it->second;
}

bool ConvRunner::on_graph_api(const ConvProblem& p, ConvPass pass) const {
  return graphs_ && legacy_shapes_.count({p, pass}) == 0;
}

bool ConvRunner::race_pending(const ConvProblem& p, ConvPass pass) const {
  return race_paths_ && raced_.count({p, pass}) == 0;
}

std::size_t ConvRunner::prepare(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass) {
  if (on_graph_api(p, pass)) {
    if (!legacy_fallback_) return graphs_->prepare(handle, p, pass);
    std::size_t bytes = 0;
    try {
      bytes = graphs_->prepare(handle, p, pass);
    } catch (const SystemError&) {
      // No engine (or no plan that builds) for this shape: auto runs it through the
      // legacy calls, which pick among cuDNN's older kernels, rather than failing the run.
      legacy_shapes_.insert({p, pass});
      return select_legacy(handle, plans_, plans_.plan(p), p, pass, ConvPlanCache::kAnyWorkspace);
    }
    // Misaligned operands run() sent to the legacy calls keep their algorithm, chosen
    // within an earlier call's bytes, which autotune's race may since have shrunk.
    bytes = std::max(bytes, misaligned_legacy_bytes(p, pass));
    if (!race_pending(p, pass)) return bytes;
    try {  // autotune: both paths' workspace until the race has decided
      return std::max(bytes, select_legacy(handle, plans_, plans_.plan(p), p, pass, ConvPlanCache::kAnyWorkspace));
    } catch (const SystemError&) {
      raced_.insert({p, pass});  // cudnnFind has no algorithm for it: the graph API runs it
      return bytes;
    }
  }
  return select_legacy(handle, plans_, plans_.plan(p), p, pass, ConvPlanCache::kAnyWorkspace);
}

void ConvRunner::run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b,
                     void* out, void* workspace, std::size_t bytes) {
  if (on_graph_api(p, pass)) {
    if (!legacy_fallback_) {
      graphs_->run(handle, p, pass, a, b, out, workspace, bytes);
      return;
    }
    if (race_pending(p, pass) && alignment_of(a, b, out).full()) {
      race(handle, p, pass, a, b, out, workspace, bytes);
      return;
    }
    if (graphs_->try_run(handle, p, pass, a, b, out, workspace, bytes)) return;
    // auto: these operands are off 16-byte alignment and no graph plan for them fits
    // the workspace prepare() sized for the aligned plan, so the legacy calls run them
    // (cuDNN's legacy path accepts any alignment), with an algorithm chosen within
    // that workspace: the caller's bytes are already carved.
    ConvPlan& plan = misaligned_plans_.plan(p);
    try {
      const std::size_t needed = select_legacy(handle, misaligned_plans_, plan, p, pass, bytes);
      std::size_t& kept = misaligned_legacy_bytes_[{p, pass}];
      kept = std::max(kept, needed);
    } catch (const SystemError& e) {
      throw SystemError(std::string(e.what()) + "; the graph API had no plan for these operands (off 16-byte " +
                        "alignment) within the " + std::to_string(bytes) + " bytes of workspace either");
    }
    run_legacy(handle, plan, p, pass, a, b, out, workspace, bytes);
    return;
  }
  run_legacy(handle, plans_.plan(p), p, pass, a, b, out, workspace, bytes);  // chosen by prepare()
}

// Each path's timed runs overwrite `out` with the same convolution (beta = 0), so the
// call's result stands whichever ran last. The graph path's warm-up tunes its own
// candidates first (graph-autotune), outside the times. A legacy call cuDNN refuses
// (a status error when enqueued) loses the race, as graph-autotune skips a refused
// plan; the graph path has already run, so the call's output stands.
void ConvRunner::race(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b,
                      void* out, void* workspace, std::size_t bytes) {
  cudaStream_t stream = nullptr;
  CUDNN_CHECK(cudnnGetStream(handle, &stream));
  if (stream_capturing(stream)) {  // nothing can be timed: the race waits for a call outside the capture
    graphs_->run(handle, p, pass, a, b, out, workspace, bytes);
    return;
  }
  raced_.insert({p, pass});
  const ConvPlan& plan = plans_.plan(p);  // cudnnFind's pick, made by prepare()
  const double graph_ms = fastest_run_ms(stream, [&] {
    graphs_->run(handle, p, pass, a, b, out, workspace, bytes);
    return true;
  });
  const double legacy_ms = fastest_run_ms(stream, [&] {
    try {
      run_legacy(handle, plan, p, pass, a, b, out, workspace, bytes);
      return true;
    } catch (const SystemError&) {
      return false;
    }
  });
  ++races_;
  if (legacy_ms >= 0 && legacy_ms < graph_ms) {
    legacy_shapes_.insert({p, pass});
    ++legacy_wins_;
  }
}

std::size_t ConvRunner::select_legacy(cudnnHandle_t handle, ConvPlanCache& cache, ConvPlan& plan,
                                      const ConvProblem& p, ConvPass pass, std::size_t max_bytes) {
  switch (pass) {
    case ConvPass::forward:
      cache.select_forward(handle, plan, p, max_bytes);
      return plan.fwd_bytes;
    case ConvPass::backward_data:
      cache.select_backward_data(handle, plan, p, max_bytes);
      return plan.bwd_data_bytes;
    case ConvPass::backward_filter:
      cache.select_backward_filter(handle, plan, p, max_bytes);
      return plan.bwd_filter_bytes;
  }
  return 0;
}

void ConvRunner::run_legacy(cudnnHandle_t handle, const ConvPlan& plan, const ConvProblem& p, ConvPass pass,
                            const void* a, const void* b, void* out, void* workspace, std::size_t bytes) {
  const std::size_t needed = pass == ConvPass::forward         ? plan.fwd_bytes
                             : pass == ConvPass::backward_data ? plan.bwd_data_bytes
                                                               : plan.bwd_filter_bytes;
  if (needed > bytes)  // chosen for a larger workspace than this call carved
    throw SystemError("cuDNN: the " + std::string(conv_pass_name(pass)) + " pass of " + describe(p) + " needs " +
                      std::to_string(needed) + " bytes of workspace, more than the " + std::to_string(bytes) +
                      " prepared");
  const float one = 1.f, zero = 0.f;
  switch (pass) {
    case ConvPass::forward:
      CUDNN_CHECK(cudnnConvolutionForward(handle, &one, plan.x, a, plan.w, b, plan.conv, *plan.fwd, workspace, bytes,
                                          &zero, plan.y, out));
      return;
    case ConvPass::backward_data:
      CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, plan.w, b, plan.y, a, plan.conv, *plan.bwd_data,
                                               workspace, bytes, &zero, plan.x, out));
      return;
    case ConvPass::backward_filter:
      CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, plan.x, a, plan.y, b, plan.conv, *plan.bwd_filter,
                                                 workspace, bytes, &zero, plan.w, out));
      return;
  }
}

}  // namespace trainer::compute::cuda
