// The signal-time cleanup of temporary files (see signal_cleanup.hpp).
#include "util/signal_cleanup.hpp"

#include <signal.h>  // sigaction, raise
#include <unistd.h>  // unlink

#include <array>    // std::array
#include <atomic>   // std::atomic
#include <cstring>  // std::memcpy
#include <mutex>    // std::once_flag, std::call_once

namespace trainer {
namespace {

constexpr int kSlots = 32;
constexpr std::size_t kMaxPath = 4096;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};

struct Slot {
  std::atomic<bool> claimed{false};  // owned by a writer
  std::atomic<bool> armed{false};    // path is complete: the handler may unlink it
  char path[kMaxPath];
};

// Which stop signals a handler records instead of ending the process (signal_cleanup.hpp).
enum class Recording { nothing, slurm_warning, every_stop_signal };

// Why global: a signal handler has no other way to find the paths (see the header).
struct Registry {
  std::array<Slot, kSlots> slots;
  std::atomic<Recording> recording{Recording::nothing};
  std::atomic<int> stop_signal{0};  // the first signal recorded
  struct sigaction previous[sizeof kSignals / sizeof kSignals[0]];
  std::once_flag installed;
};
Registry& registry() {
  static Registry r;
  return r;
}

void on_signal(int sig) {
  Registry& r = registry();
  const Recording recording = r.recording.load();
  const bool recorded = sig == SIGUSR1 ? recording != Recording::nothing
                                       : sig != SIGHUP && recording == Recording::every_stop_signal;
  if (recorded) {
    int none = 0;
    if (r.stop_signal.compare_exchange_strong(none, sig) || r.stop_signal.load() != sig) return;
    // The same signal again: the user insists.
  }
  for (Slot& slot : r.slots) {
    if (slot.armed.load(std::memory_order_acquire)) ::unlink(slot.path);
  }
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    if (kSignals[i] == sig) ::sigaction(sig, &r.previous[i], nullptr);
  }
  ::raise(sig);  // the previous action: by default the process ends by this signal
}

void install_handlers() {
  Registry& r = registry();
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    ::sigaction(kSignals[i], nullptr, &r.previous[i]);
    if (r.previous[i].sa_handler == SIG_IGN) continue;  // an ignored signal stays ignored (e.g. nohup)
    // SIGUSR1 is only ours while training stops gracefully; its default action (end
    // the process) is what it does otherwise, cleanup included.
    struct sigaction action {};
    action.sa_handler = on_signal;
    // A recorded signal must not fail a read or a wait it happened to interrupt.
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int s : kSignals) sigaddset(&action.sa_mask, s);  // one cleanup at a time
    ::sigaction(kSignals[i], &action, nullptr);
  }
}

}  // namespace

int register_temp_path(const std::string& path) {
  Registry& r = registry();
  std::call_once(r.installed, install_handlers);
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = r.slots[static_cast<std::size_t>(i)];
    bool expected = false;
    if (!slot.claimed.compare_exchange_strong(expected, true)) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.armed.store(true, std::memory_order_release);
    return i;
  }
  return -1;
}

GracefulStop::GracefulStop() {
  Registry& r = registry();
  std::call_once(r.installed, install_handlers);
  r.stop_signal.store(0);
  r.recording.store(Recording::slurm_warning);
}

GracefulStop::~GracefulStop() { registry().recording.store(Recording::nothing); }

void GracefulStop::in_training_loop(bool inside) {
  registry().recording.store(inside ? Recording::every_stop_signal : Recording::slurm_warning);
}

void remove_temp_paths_now() {
  for (Slot& slot : registry().slots) {
    if (slot.armed.load(std::memory_order_acquire)) ::unlink(slot.path);
  }
}

int GracefulStop::signal_received() const { return registry().stop_signal.load(); }

void unregister_temp_path(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  Slot& s = registry().slots[static_cast<std::size_t>(slot)];
  s.armed.store(false, std::memory_order_release);
  s.claimed.store(false, std::memory_order_release);
}

}  // namespace trainer
