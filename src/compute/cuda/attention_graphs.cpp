// cuDNN's fused attention through cudnn-frontend (see attention_graphs.hpp).
#include "compute/cuda/attention_graphs.hpp"

#include <cmath>  // std::sqrt

#include "util/error.hpp"  // SystemError

#if TRAINER_HAVE_CUDNN_FRONTEND
#include <cstdint>        // std::int64_t
#include <map>            // std::map
#include <tuple>          // std::tie
#include <unordered_map>  // the variant pack
#include <vector>         // std::vector

#include "compute/cuda/cudnn_frontend_util.hpp"  // load_cudnn_for_frontend, FE_CHECK, io_data_type
#endif

namespace trainer::compute::cuda {

const char* attention_pass_name(AttentionPass pass) {
  return pass == AttentionPass::forward ? "forward" : "backward";
}

bool fused_attention_takes(const AttentionShape& a, Precision p) {
  return p != Precision::fp32 && a.batch > 0 && a.tokens > 0 && a.queries() == a.tokens && a.heads > 0 &&
         a.head_dim > 0 && a.head_dim % 8 == 0 && a.head_dim <= 128;
}

#if !TRAINER_HAVE_CUDNN_FRONTEND

struct AttentionGraphCache::Impl {};
AttentionGraphCache::AttentionGraphCache() {
  throw AttentionUnsupported("this trainer was built without cudnn-frontend's headers, so without cuDNN's fused attention; "
                    "run scripts/fetch_cudnn_frontend.sh and rebuild");
}
AttentionGraphCache::~AttentionGraphCache() = default;
std::size_t AttentionGraphCache::prepare(cudnnHandle_t, const AttentionShape&, Precision, AttentionPass) { return 0; }
void AttentionGraphCache::run(cudnnHandle_t, const AttentionShape&, Precision, AttentionPass,
                              const AttentionOperands&, void*) {}
DevicelessBuild build_attention_graph_deviceless(const std::string&, const AttentionShape&, Precision,
                                                 AttentionPass) {
  throw SystemError("this trainer was built without cudnn-frontend's headers");
}

#else  // TRAINER_HAVE_CUDNN_FRONTEND

namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

enum : std::int64_t { kQ = 1, kK, kV, kO, kStats, kDout, kDq, kDk, kDv };

std::string describe(const AttentionShape& a, Precision p, AttentionPass pass) {
  return std::string("attention ") + attention_pass_name(pass) + " of batch " + std::to_string(a.batch) + ", " +
         std::to_string(a.tokens) + " tokens, " + std::to_string(a.heads) + " heads of " +
         std::to_string(a.head_dim) + " (" + precision_name(p) + ")";
}

// [batch, tokens, heads * head_dim] memory seen as [batch, heads, tokens, head_dim].
TensorPtr token_major(fe::graph::Graph& g, const char* name, std::int64_t uid, const AttentionShape& a) {
  const std::int64_t B = a.batch, T = a.tokens, H = a.heads, D = a.head_dim;
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({B, H, T, D}).set_stride({T * H * D, D, H * D, 1}));
}

void as_token_major_output(const TensorPtr& t, std::int64_t uid, const AttentionShape& a) {
  const std::int64_t B = a.batch, T = a.tokens, H = a.heads, D = a.head_dim;
  t->set_output(true).set_uid(uid).set_dim({B, H, T, D}).set_stride({T * H * D, D, H * D, 1});
}

std::vector<std::int64_t> stats_dims(const AttentionShape& a) { return {a.batch, a.heads, a.tokens, 1}; }
std::vector<std::int64_t> stats_strides(const AttentionShape& a) {
  return {std::int64_t(a.heads) * a.tokens, a.tokens, 1, 1};
}

// The one-node graph of (a, p, pass). Deviceless: `props` and `sm_version` describe
// the target GPU; they are set before the node is added, since a node takes the
// graph's context (and with it the device to query) when it is made.
std::shared_ptr<fe::graph::Graph> describe_graph(const AttentionShape& a, Precision p, AttentionPass pass,
                                                 std::shared_ptr<fe::DeviceProperties> props = nullptr,
                                                 int sm_version = 0) {
  if (!fused_attention_takes(a, p))
    throw SystemError("internal error: the fused attention does not take the " + describe(a, p, pass));
  auto g = std::make_shared<fe::graph::Graph>();
  if (props) g->set_device_properties(props).set_sm_version(sm_version);
  g->set_io_data_type(io_data_type(p))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const float scale = 1.f / std::sqrt(float(a.head_dim));  // as the batched-matmul attention's scores
  auto q = token_major(*g, "q", kQ, a), k = token_major(*g, "k", kK, a), v = token_major(*g, "v", kV, a);
  if (pass == AttentionPass::forward) {
    auto [o, stats] =
        g->sdpa(q, k, v, fe::graph::SDPA_attributes().set_name("attention").set_generate_stats(true).set_attn_scale(scale));
    as_token_major_output(o, kO, a);
    stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim(stats_dims(a)).set_stride(
        stats_strides(a));
  } else {
    auto o = token_major(*g, "o", kO, a), dout = token_major(*g, "dout", kDout, a);
    auto stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("stats")
                               .set_uid(kStats)
                               .set_dim(stats_dims(a))
                               .set_stride(stats_strides(a))
                               .set_data_type(fe::DataType_t::FLOAT));
    auto [dq, dk, dv] = g->sdpa_backward(
        q, k, v, o, dout, stats, fe::graph::SDPA_backward_attributes().set_name("attention_backward").set_attn_scale(scale));
    as_token_major_output(dq, kDq, a);
    as_token_major_output(dk, kDk, a);
    as_token_major_output(dv, kDv, a);
  }
  return g;
}

// validate -> operation graph -> heuristics (mode A, then the fallback list): the
// number of candidates left, and when none, cuDNN's reason in `why`. handle ==
// nullptr: deviceless.
int query_candidates(fe::graph::Graph& g, cudnnHandle_t handle, std::string& why) {
  fe::error_t status = g.validate();
  if (status.is_good()) status = handle ? g.build_operation_graph(handle) : g.build_operation_graph();
  if (status.is_good()) status = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (status.is_good()) status = g.check_support();
  if (status.is_bad()) {
    why = status.get_message();
    return 0;
  }
  return static_cast<int>(g.get_execution_plan_count());
}

}  // namespace

struct AttentionGraphCache::Impl {
  struct Key {
    int batch, tokens, heads, head_dim;
    Precision precision;
    AttentionPass pass;
    bool operator<(const Key& o) const {
      return std::tie(batch, tokens, heads, head_dim, precision, pass) <
             std::tie(o.batch, o.tokens, o.heads, o.head_dim, o.precision, o.pass);
    }
  };
  struct Entry {
    std::shared_ptr<fe::graph::Graph> graph;
    std::int64_t plan = 0;
    std::size_t workspace = 0;
  };
  std::map<Key, Entry> entries;

  Entry& entry(cudnnHandle_t handle, const AttentionShape& a, Precision p, AttentionPass pass) {
    const Key key{a.batch, a.tokens, a.heads, a.head_dim, p, pass};
    auto it = entries.find(key);
    if (it != entries.end()) return it->second;
    const std::string what = describe(a, p, pass);
    Entry e;
    e.graph = describe_graph(a, p, pass);
    std::string last_error = "cuDNN offered no engine";
    const int candidates = query_candidates(*e.graph, handle, last_error);
    for (std::int64_t i = 0; i < candidates; ++i) {
      fe::error_t built = e.graph->build_plan_at_index(i);
      if (built.is_bad()) {
        last_error = built.get_message();
        continue;
      }
      std::int64_t bytes = 0;
      FE_CHECK(e.graph->get_workspace_size_plan_at_index(i, bytes), what);
      e.plan = i;
      e.workspace = static_cast<std::size_t>(bytes);
      return entries.emplace(key, std::move(e)).first->second;
    }
    throw AttentionUnsupported("cuDNN's fused attention has no usable engine for the " + what + " (" +
                               std::to_string(candidates) + " candidates; " + last_error + ")");
  }
};

AttentionGraphCache::AttentionGraphCache() : impl_(std::make_unique<Impl>()) { load_cudnn_for_frontend(); }
AttentionGraphCache::~AttentionGraphCache() = default;

std::size_t AttentionGraphCache::prepare(cudnnHandle_t handle, const AttentionShape& a, Precision p,
                                         AttentionPass pass) {
  return impl_->entry(handle, a, p, pass).workspace;
}

void AttentionGraphCache::run(cudnnHandle_t handle, const AttentionShape& a, Precision p, AttentionPass pass,
                              const AttentionOperands& x, void* workspace) {
  Impl::Entry& e = impl_->entry(handle, a, p, pass);
  auto in = [](const void* ptr) { return const_cast<void*>(ptr); };
  std::unordered_map<std::int64_t, void*> pack{{kQ, in(x.q)}, {kK, in(x.k)}, {kV, in(x.v)}, {kO, x.o}, {kStats, x.stats}};
  if (pass == AttentionPass::backward) {
    pack.emplace(kDout, in(x.dout));
    pack.emplace(kDq, x.dq);
    pack.emplace(kDk, x.dk);
    pack.emplace(kDv, x.dv);
  }
  FE_CHECK(e.graph->execute_plan_at_index(handle, pack, workspace, e.plan), describe(a, p, pass));
}

DevicelessBuild build_attention_graph_deviceless(const std::string& device_properties_json, const AttentionShape& a,
                                                 Precision p, AttentionPass pass) {
  auto g = describe_graph(a, p, pass, deserialize_device_properties(device_properties_json),
                          sm_version_of(device_properties_json));
  const std::string what = describe(a, p, pass);
  DevicelessBuild result;
  std::string why;
  result.candidates = query_candidates(*g, nullptr, why);
  if (result.candidates == 0) {
    result.engine = "no engine: " + why;
    // cuDNN's message when no libcuda can be loaded names neither; say what serves.
    if (why.empty() || why.find("No valid engine") != std::string::npos)
      result.engine += " (cuDNN's attention engines need a loadable libcuda: a driver, or the CUDA toolkit's stub on "
                       "LD_LIBRARY_PATH)";
    return result;
  }
  bool every_failure_needs_driver = true;
  std::string last_error;
  for (std::int64_t i = 0; i < result.candidates; ++i) {
    fe::error_t built = g->build_plan_at_index(i);
    if (built.is_bad()) {
      // Finalizing a runtime-compiled engine's plan loads its kernel through the
      // driver: without a GPU that is as far as a plan gets.
      last_error = built.get_message();
      if (last_error.find("CUDA_DRIVER") == std::string::npos) every_failure_needs_driver = false;
      continue;
    }
    result.built = true;
    FE_CHECK(g->get_workspace_size_plan_at_index(i, result.workspace), what);
    FE_CHECK(g->get_plan_name_at_index(i, result.engine), what);
    return result;
  }
  result.needs_driver = every_failure_needs_driver;
  if (g->get_plan_name_at_index(0, result.engine).is_bad() || result.engine.empty())
    result.engine = "engine 0";
  if (!result.needs_driver) result.engine = "no candidate built: " + last_error;
  return result;
}

#endif  // TRAINER_HAVE_CUDNN_FRONTEND

}  // namespace trainer::compute::cuda
