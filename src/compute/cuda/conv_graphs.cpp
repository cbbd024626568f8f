#include "compute/cuda/conv_graphs.hpp"

#include <cstdint>  // std::uintptr_t
#include <tuple>    // std::tie

#include "util/error.hpp"  // SystemError, UserError

#if TRAINER_HAVE_CUDNN_FRONTEND
#include <algorithm>  // std::min, std::max
#include <map>      // std::map
#include <set>      // std::set
#include <unordered_map>
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "compute/cuda/cuda_check.hpp"           // CUDA_CHECK, CUDNN_CHECK
#include "compute/cuda/fastest_run.hpp"          // fastest_run_ms, stream_capturing
#include "compute/cuda/cudnn_frontend_util.hpp"  // load_cudnn_for_frontend, FE_CHECK, device properties
#endif

namespace trainer::compute::cuda {

bool ConvAlignment::operator<(const ConvAlignment& o) const {
  return std::tie(a, b, out) < std::tie(o.a, o.b, o.out);
}

ConvAlignment alignment_of(const void* a, const void* b, const void* out) {
  auto of = [](const void* ptr) {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    std::int64_t bytes = 16;
    while (bytes > 1 && address % static_cast<std::uintptr_t>(bytes) != 0) bytes /= 2;
    return bytes;
  };
  return {of(a), of(b), of(out)};
}

const char* conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "forward";
    case ConvPass::backward_data: return "backward-data";
    case ConvPass::backward_filter: return "backward-filter";
  }
  return "?";
}

#if !TRAINER_HAVE_CUDNN_FRONTEND

bool cudnn_graph_api_built() { return false; }

struct ConvGraphCache::Impl {};

ConvGraphCache::ConvGraphCache(ConvGraphSettings) {
  throw SystemError("this trainer was built without cudnn-frontend's headers, so without cuDNN's graph API "
                    "(model.conv_algorithms graph | graph-autotune); run scripts/fetch_cudnn_frontend.sh and rebuild");
}
ConvGraphCache::~ConvGraphCache() = default;
std::size_t ConvGraphCache::prepare(cudnnHandle_t, const ConvProblem&, ConvPass) { return 0; }
void ConvGraphCache::run(cudnnHandle_t, const ConvProblem&, ConvPass, const void*, const void*, void*, void*,
                         std::size_t) {}
bool ConvGraphCache::try_run(cudnnHandle_t, const ConvProblem&, ConvPass, const void*, const void*, void*, void*,
                             std::size_t) {
  return false;
}
std::size_t ConvGraphCache::size() const { return 0; }

DevicelessBuild build_conv_graph_deviceless(const std::string&, const ConvProblem&, ConvPass,
                                            const ConvGraphSettings&, ConvAlignment) {
  throw SystemError("this trainer was built without cudnn-frontend's headers");
}

#else  // TRAINER_HAVE_CUDNN_FRONTEND

namespace {

namespace fe = cudnn_frontend;

std::string describe(const ConvProblem& p, ConvPass pass, ConvAlignment al = {}) {
  std::string what = std::string(conv_pass_name(pass)) + " of " + cuda::describe(p);
  if (!al.full())
    what += " with operands aligned to " + std::to_string(al.a) + "/" + std::to_string(al.b) + "/" +
            std::to_string(al.out) + " bytes";
  return what;
}

// Dims and strides of a [n, c, h, w] tensor (or [k, c, r, r] filter) in the layout the
// legacy plans use: fp32 NCHW / OIHW, 16-bit NHWC / KRSC.
std::vector<std::int64_t> strides_of(Precision p, std::int64_t c, std::int64_t h, std::int64_t w) {
  if (p == Precision::fp32) return {c * h * w, h * w, w, 1};
  return {c * h * w, 1, c * w, c};
}

enum : std::int64_t { kUidA = 1, kUidB = 2, kUidOut = 3 };

std::shared_ptr<fe::graph::Tensor_attributes> operand(fe::graph::Graph& g, const char* name, std::int64_t uid,
                                                      Precision p, std::int64_t n, std::int64_t c, std::int64_t h,
                                                      std::int64_t w, std::int64_t alignment) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({n, c, h, w})
                      .set_stride(strides_of(p, c, h, w))
                      .set_alignment(alignment));
}

// The one-node graph of (p, pass): operands a, b, out with the uids above.
std::shared_ptr<fe::graph::Graph> describe_graph(const ConvProblem& p, ConvPass pass, ConvAlignment al) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io_data_type(p.precision))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<std::int64_t> pad{p.pad, p.pad}, stride{p.stride, p.stride}, dilation{1, 1};
  std::shared_ptr<fe::graph::Tensor_attributes> out;
  switch (pass) {
    case ConvPass::forward: {
      auto x = operand(*g, "x", kUidA, p.precision, p.n, p.c, p.h, p.w, al.a);
      auto w = operand(*g, "w", kUidB, p.precision, p.k, p.c, p.r, p.r, al.b);
      out = g->conv_fprop(x, w, fe::graph::Conv_fprop_attributes().set_padding(pad).set_stride(stride).set_dilation(dilation));
      out->set_dim({p.n, p.k, p.oh, p.ow}).set_stride(strides_of(p.precision, p.k, p.oh, p.ow));
      break;
    }
    case ConvPass::backward_data: {
      auto dy = operand(*g, "dy", kUidA, p.precision, p.n, p.k, p.oh, p.ow, al.a);
      auto w = operand(*g, "w", kUidB, p.precision, p.k, p.c, p.r, p.r, al.b);
      out = g->conv_dgrad(dy, w, fe::graph::Conv_dgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(dilation));
      out->set_dim({p.n, p.c, p.h, p.w}).set_stride(strides_of(p.precision, p.c, p.h, p.w));
      break;
    }
    case ConvPass::backward_filter: {
      auto x = operand(*g, "x", kUidA, p.precision, p.n, p.c, p.h, p.w, al.a);
      auto dy = operand(*g, "dy", kUidB, p.precision, p.n, p.k, p.oh, p.ow, al.b);
      out = g->conv_wgrad(dy, x, fe::graph::Conv_wgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(dilation));
      out->set_dim({p.k, p.c, p.r, p.r}).set_stride(strides_of(p.precision, p.c, p.r, p.r));
      break;
    }
  }
  out->set_uid(kUidOut).set_output(true).set_data_type(io_data_type(p.precision)).set_alignment(al.out);
  return g;
}

// A graph with its heuristic candidates queried and filtered, ready for plans.
struct Candidates {
  std::shared_ptr<fe::graph::Graph> graph;
  int count = 0;
};

// validate -> operation graph -> heuristics (mode A, then the fallback list) ->
// filter: what prepare() and the deviceless build share. handle == nullptr: deviceless
// (the graph carries device properties).
Candidates query_candidates(std::shared_ptr<fe::graph::Graph> g, cudnnHandle_t handle, const ConvProblem& p,
                            ConvPass pass, ConvAlignment al, const ConvGraphSettings& s) {
  const std::string what = describe(p, pass, al);
  FE_CHECK(g->validate(), what);
  if (handle)
    FE_CHECK(g->build_operation_graph(handle), what);
  else
    FE_CHECK(g->build_operation_graph(), what);
  FE_CHECK(g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), what);
  // fp32 without TF32: no tensor-core engine (they round the inputs to TF32).
  if (p.precision == Precision::fp32 && !s.allow_tf32)
    g->deselect_numeric_notes({fe::NumericalNote_t::TENSOR_CORE, fe::NumericalNote_t::DOWN_CONVERT_INPUTS});
  // check_support fails only when no candidate is left; each one's own status is
  // known when its plan is built.
  const fe::error_t support = g->check_support();
  Candidates c{g, static_cast<int>(g->get_execution_plan_count())};
  if (support.is_bad()) c.count = 0;
  return c;
}

// Builds candidates in heuristic order until `wanted` plans fit the workspace limit;
// returns their indices (empty: none).
std::vector<std::int64_t> build_plans(fe::graph::Graph& g, int count, int wanted, std::size_t workspace_limit) {
  std::vector<std::int64_t> built;
  for (std::int64_t i = 0; i < count && static_cast<int>(built.size()) < wanted; ++i) {
    if (g.build_plan_at_index(i).is_bad()) continue;
    std::int64_t bytes = 0;
    if (g.get_workspace_size_plan_at_index(i, bytes).is_bad()) continue;
    if (bytes < 0 || static_cast<std::size_t>(bytes) > workspace_limit) continue;
    built.push_back(i);
  }
  return built;
}

[[noreturn]] void no_engine(const ConvProblem& p, ConvPass pass, ConvAlignment al, int candidates) {
  throw SystemError("cuDNN's graph API offers no usable engine for the " + describe(p, pass, al) + " (" +
                    std::to_string(candidates) +
                    " candidates; check the workspace limit and the math mode, or use model.conv_algorithms "
                    "heuristics)");
}

}  // namespace

bool cudnn_graph_api_built() { return true; }

struct ConvGraphCache::Impl {
  struct Key {
    ConvProblem p;
    ConvPass pass;
    ConvAlignment alignment;
    bool operator<(const Key& o) const {
      if (p < o.p) return true;
      if (o.p < p) return false;
      if (pass != o.pass) return pass < o.pass;
      return alignment < o.alignment;
    }
  };
  struct Entry {
    std::shared_ptr<fe::graph::Graph> graph;
    std::int64_t plan = 0;        // index of the plan run() executes
    std::size_t workspace = 0;    // its bytes (with autotune pending: the largest candidate's)
    bool tune_pending = false;    // autotune: time the candidates at the first run()
    // autotune: the plans built within the workspace limit. Not the graph's whole
    // list: cudnn-frontend's own autotune runs every plan that built, those over the
    // limit too, which most likely made an fp32 engine wanting more than 1 GiB write
    // past the workspace (H200, 2026-11-28: flip_filter, cudaErrorIllegalAddress).
    std::vector<std::int64_t> candidates;
  };
  ConvGraphSettings settings;
  std::map<Key, Entry> entries;

  std::set<Key> unavailable;  // try_run(): operands without a plan within their workspace

  static void tune(cudnnHandle_t handle, Entry& e, std::unordered_map<std::int64_t, void*>& pack, void* workspace,
                   const std::string& what);
  // The plan run() executes for operands of `alignment` within `workspace_bytes`;
  // SystemError when none builds or fits (before anything is enqueued).
  Entry& plan_for(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, ConvAlignment alignment,
                  std::size_t workspace_bytes);
  void execute(cudnnHandle_t handle, Entry& e, const std::string& what, const void* a, const void* b, void* out,
               void* workspace);

  // The largest workspace of the plans kept for (p, pass) at any alignment: what a
  // caller must carve, since a plan run() built for misaligned operands (within an
  // earlier call's bytes) must still fit after tuning shrinks the aligned one's.
  std::size_t largest_workspace(const ConvProblem& p, ConvPass pass) const {
    std::size_t bytes = 0;
    for (auto it = entries.lower_bound(Key{p, pass, ConvAlignment{0, 0, 0}}); it != entries.end(); ++it) {
      const Key& k = it->first;
      if (p < k.p || k.p < p || k.pass != pass) break;
      bytes = std::max(bytes, it->second.workspace);
    }
    return bytes;
  }

  // The plan of (p, pass) for operands of `alignment`, built on first use within
  // `workspace_limit`. Autotuning applies to the 16-byte plans alone: the others are
  // built inside run(), where the caller's workspace is already fixed.
  Entry& entry(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, ConvAlignment alignment,
               std::size_t workspace_limit) {
    const Key key{p, pass, alignment};
    auto it = entries.find(key);
    if (it != entries.end()) return it->second;
    Candidates c = query_candidates(describe_graph(p, pass, alignment), handle, p, pass, alignment, settings);
    const bool autotune = settings.autotune && alignment.full();
    const std::vector<std::int64_t> built =
        build_plans(*c.graph, c.count, autotune ? kAutotuneCandidates : 1, workspace_limit);
    if (built.empty()) no_engine(p, pass, alignment, c.count);
    Entry e;
    e.graph = c.graph;
    e.plan = built.front();
    for (std::int64_t i : built) {
      std::int64_t bytes = 0;
      FE_CHECK(e.graph->get_workspace_size_plan_at_index(i, bytes), describe(p, pass, alignment));
      if (i == e.plan || autotune) e.workspace = std::max(e.workspace, static_cast<std::size_t>(bytes));
    }
    e.tune_pending = autotune && built.size() > 1;
    if (e.tune_pending) e.candidates = built;
    return entries.emplace(key, std::move(e)).first->second;
  }
};

ConvGraphCache::ConvGraphCache(ConvGraphSettings settings) : impl_(std::make_unique<Impl>()) {
  load_cudnn_for_frontend();
  impl_->settings = settings;
}

ConvGraphCache::~ConvGraphCache() = default;

std::size_t ConvGraphCache::prepare(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass) {
  impl_->entry(handle, p, pass, ConvAlignment{}, impl_->settings.workspace_limit);
  return impl_->largest_workspace(p, pass);
}

ConvGraphCache::Impl::Entry& ConvGraphCache::Impl::plan_for(cudnnHandle_t handle, const ConvProblem& p,
                                                             ConvPass pass, ConvAlignment alignment,
                                                             std::size_t workspace_bytes) {
  Entry& e = alignment.full() ? entry(handle, p, pass, alignment, settings.workspace_limit)
                              : entry(handle, p, pass, alignment, std::min(workspace_bytes, settings.workspace_limit));
  // cudnn-frontend's execute takes no workspace size: a plan needing more than the
  // caller carved would write past it.
  if (e.workspace > workspace_bytes)
    throw SystemError("cuDNN graph API: the " + describe(p, pass, alignment) + " needs " +
                      std::to_string(e.workspace) + " bytes of workspace, more than the " +
                      std::to_string(workspace_bytes) + " prepared");
  return e;
}

void ConvGraphCache::Impl::execute(cudnnHandle_t handle, Entry& e, const std::string& what, const void* a,
                                   const void* b, void* out, void* workspace) {
  std::unordered_map<std::int64_t, void*> pack{
      {kUidA, const_cast<void*>(a)}, {kUidB, const_cast<void*>(b)}, {kUidOut, out}};
  if (e.tune_pending) tune(handle, e, pack, workspace, what);
  FE_CHECK(e.graph->execute_plan_at_index(handle, pack, workspace, e.plan), what);
}

void ConvGraphCache::run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a, const void* b,
                         void* out, void* workspace, std::size_t workspace_bytes) {
  const ConvAlignment alignment = alignment_of(a, b, out);
  Impl::Entry& e = impl_->plan_for(handle, p, pass, alignment, workspace_bytes);
  impl_->execute(handle, e, describe(p, pass, alignment), a, b, out, workspace);
}

bool ConvGraphCache::try_run(cudnnHandle_t handle, const ConvProblem& p, ConvPass pass, const void* a,
                             const void* b, void* out, void* workspace, std::size_t workspace_bytes) {
  const ConvAlignment alignment = alignment_of(a, b, out);
  const Impl::Key key{p, pass, alignment};
  if (impl_->unavailable.count(key)) return false;
  Impl::Entry* e = nullptr;
  try {
    e = &impl_->plan_for(handle, p, pass, alignment, workspace_bytes);
  } catch (const SystemError&) {
    // Aligned operands have the plan prepare() built and sized: a failure here is the
    // caller's (fewer bytes than prepare() asked for), not a missing plan.
    if (alignment.full()) throw;
    impl_->unavailable.insert(key);  // nothing ran: the caller's other path takes these operands
    return false;
  }
  impl_->execute(handle, *e, describe(p, pass, alignment), a, b, out, workspace);
  return true;
}

std::size_t ConvGraphCache::size() const { return impl_->entries.size(); }

// Times each candidate on these operands (out is overwritten by the plan run() then
// executes) and keeps the fastest (fastest_run_ms: one warm-up, then the best of three),
// on the handle's stream. Waits for that stream, once per shape. A candidate cuDNN refuses to
// execute is skipped, as cudnn-frontend's autotune does; with none timed the
// heuristics' first choice stays, and run() reports its refusal. Inside a stream
// capture nothing can be timed: tuning waits for the next call outside one.
void ConvGraphCache::Impl::tune(cudnnHandle_t handle, Entry& e, std::unordered_map<std::int64_t, void*>& pack,
                                void* workspace, const std::string& what) {
  cudaStream_t stream = nullptr;
  CUDNN_CHECK(cudnnGetStream(handle, &stream));
  if (stream_capturing(stream)) return;
  e.tune_pending = false;
  double best_ms = -1;
  for (std::int64_t i : e.candidates) {
    const double ms = fastest_run_ms(
        stream, [&] { return !e.graph->execute_plan_at_index(handle, pack, workspace, i).is_bad(); });
    if (ms < 0) continue;  // refused
    if (best_ms < 0 || ms < best_ms) best_ms = ms, e.plan = i;
  }
  std::int64_t bytes = 0;
  FE_CHECK(e.graph->get_workspace_size_plan_at_index(e.plan, bytes), what);
  e.workspace = static_cast<std::size_t>(bytes);  // never more than the largest candidate's
  e.candidates.clear();
}

DevicelessBuild build_conv_graph_deviceless(const std::string& device_properties_json, const ConvProblem& p,
                                            ConvPass pass, const ConvGraphSettings& settings,
                                            ConvAlignment alignment) {
  // Operands off 16-byte alignment: run() builds their plan within the workspace the
  // aligned plan was given, so the check does too (the aligned plan's, at most the limit).
  std::size_t workspace_limit = settings.workspace_limit;
  if (!alignment.full()) {
    DevicelessBuild aligned = build_conv_graph_deviceless(device_properties_json, p, pass, settings);
    if (!aligned.built) {
      aligned.engine = "the 16-byte plan: " + aligned.engine;
      return aligned;
    }
    workspace_limit = std::min(workspace_limit, static_cast<std::size_t>(aligned.workspace));
  }
  auto props = deserialize_device_properties(device_properties_json);
  auto g = describe_graph(p, pass, alignment);
  g->set_device_properties(props).set_sm_version(sm_version_of(device_properties_json));
  DevicelessBuild result;
  Candidates c = query_candidates(g, nullptr, p, pass, alignment, settings);
  result.candidates = c.count;
  const std::vector<std::int64_t> built = build_plans(*c.graph, c.count, 1, workspace_limit);
  if (built.empty()) {
    result.engine = "no candidate built within the workspace limit";
    return result;
  }
  result.built = true;
  FE_CHECK(c.graph->get_workspace_size_plan_at_index(built.front(), result.workspace), describe(p, pass, alignment));
  FE_CHECK(c.graph->get_plan_name_at_index(built.front(), result.engine), describe(p, pass, alignment));
  return result;
}

#endif  // TRAINER_HAVE_CUDNN_FRONTEND

}  // namespace trainer::compute::cuda
