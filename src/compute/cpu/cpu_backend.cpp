// CPU backend: construction, thread count, streams and memory. The ops live in
// the other cpu_*.cpp files, one op family each.
#include "compute/cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>  // std::copy
#include <chrono>  // steady_clock: timed events
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "compute/cpu/cpu_conv_plan.hpp"
#include "util/cpu_affinity.hpp"  // usable_cpu_count
#include "util/env.hpp"  // Env: OMP_NUM_THREADS, TRAINER_CPU_CONV_LAYOUT
#include "util/error.hpp"

namespace trainer::compute {

namespace {

// Work on the CPU runs immediately on the calling thread, so a stream is only a
// name for "in program order" and events are already complete when recorded.
class CpuEvent final : public Event {};

// A recorded moment of the host clock: the work before it is done by then.
class CpuTimedEvent final : public Event {
 public:
  double elapsed_ms_since(const Event& start) const override {
    const auto* s = dynamic_cast<const CpuTimedEvent*>(&start);
    if (s == nullptr) return Event::elapsed_ms_since(start);
    return std::chrono::duration<double, std::milli>(at_ - s->at_).count();
  }

 private:
  std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

class CpuStream final : public Stream {
 public:
  std::unique_ptr<Event> record() override { return std::make_unique<CpuEvent>(); }
  std::unique_ptr<Event> record_timed() override { return std::make_unique<CpuTimedEvent>(); }
  void wait(const Event&) override {}
  void synchronize() override {}
  void* native() const override { return nullptr; }
};

int resolve_threads(int requested, const Env& env) {
  if (requested > 0) return requested;
  if (const auto value = env_get(env, "OMP_NUM_THREADS")) {
    const int n = std::atoi(value->c_str());  // "4" or "4,2": the first level counts
    if (n > 0) return n;
  }
  return usable_cpu_count();  // the affinity mask's CPUs: taskset or a launcher's binding counts
}

// TRAINER_CPU_CONV_LAYOUT=plain|blocked (default: blocked); see docs/PERFORMANCE.md.
bool blocked_layouts_from_env(const Env& env) {
  const std::string value = env_get(env, "TRAINER_CPU_CONV_LAYOUT").value_or("");
  if (value.empty() || value == "blocked") return true;
  if (value == "plain") return false;
  throw UserError("TRAINER_CPU_CONV_LAYOUT must be 'plain' or 'blocked', not '" + value + "'",
                  "unset it to let oneDNN choose its layouts");
}

constexpr std::size_t kAlignment = 64;  // one cache line; what oneDNN prefers

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision) {
  return std::make_unique<cpu::CpuBackend>(threads, precision);
}

namespace cpu {

CpuBackend::CpuBackend(int threads, Precision precision)
    : CpuBackend(threads, precision, capture_environment()) {}

CpuBackend::CpuBackend(int threads, Precision precision, const Env& env)
    : threads_(resolve_threads(threads, env)),
      precision_(precision),
      blocked_layouts_(blocked_layouts_from_env(env)),
      engine_(dnnl::engine::kind::cpu, 0),
      dnnl_stream_(engine_),
      default_stream_(std::make_unique<CpuStream>()) {}

CpuBackend::~CpuBackend() = default;

void CpuBackend::enter() const { omp_set_num_threads(threads_); }

std::string CpuBackend::description() const {
  const dnnl_version_t* v = dnnl_version();
  return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + ", " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads") +
         (blocked_layouts_ ? "" : ", plain layouts") +
         (precision_ == Precision::fp32 ? std::string(")")
                                        : std::string(", precision ") + precision_name(precision_) +
                                              (is_16bit(activation_storage()) ? " with 16-bit NHWC activations" : "") +
                                              " emulated in fp32: no speed-up)");
}

Stream& CpuBackend::default_stream() { return *default_stream_; }
std::unique_ptr<Stream> CpuBackend::create_stream() { return std::make_unique<CpuStream>(); }

float* CpuBackend::allocate(std::size_t count) {
  void* p = allocate_host(count * sizeof(float));
  std::memset(p, 0, count * sizeof(float));
  return static_cast<float*>(p);
}

void CpuBackend::release(float* ptr) noexcept {
  if (!ptr) return;
  release_host(ptr);
  released_blocks_.fetch_add(1, std::memory_order_relaxed);
}

void* CpuBackend::allocate_host(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
  if (!p) throw SystemError("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void CpuBackend::release_host(void* ptr) noexcept { std::free(ptr); }

void CpuBackend::upload(float* dst, const float* host_src, std::size_t count, Stream& s) {
  copy(dst, host_src, count, s);
}

void CpuBackend::download(float* host_dst, const float* src, std::size_t count, Stream& s) {
  copy(host_dst, src, count, s);
}

void CpuBackend::copy(float* dst, const float* src, std::size_t count, Stream&) {
  if (dst != src && count) std::memcpy(dst, src, count * sizeof(float));
}

void CpuBackend::fill(float* dst, float value, std::size_t count, Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (long i = 0; i < n; ++i) dst[i] = value;
}

void CpuBackend::set_values(float* dst, const float* values, std::size_t count, Stream&) {
  TRAINER_ASSERT(count <= kMaxSetValues, "set_values: " << count << " values");
  enter();
  std::copy(values, values + count, dst);
}

void CpuBackend::scale(float* x, float alpha, std::size_t count, Stream&) {
  enter();
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (long i = 0; i < n; ++i) x[i] *= alpha;
}

// CPU twin of kernels::unscale_and_check: the flag is written only when set, so
// several ranges can share it; per-thread flags keep the loop free of races.
void CpuBackend::unscale_and_check(float* grads, std::size_t count, const float* inv_scale_at, float* found_inf,
                                   Stream&) {
  enter();
  const float inv_scale = inv_scale_at[0];
  const long n = long(count);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(|| : bad) if (n > 65536)
  for (long i = 0; i < n; ++i) {
    const float v = grads[i] * inv_scale;
    grads[i] = v;
    if (!std::isfinite(v)) bad = 1;
  }
  if (bad) found_inf[0] = 1.f;
}

void CpuBackend::update_loss_scale(float* state, const LossScaleRule& rule, Stream&) {
  advance_loss_scale(state, rule);
}

void CpuBackend::scale_by(float* x, std::size_t count, const float* factor, Stream& s) {
  scale(x, factor[0], count, s);
}

}  // namespace cpu
}  // namespace trainer::compute
