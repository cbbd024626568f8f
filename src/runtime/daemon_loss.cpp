// A PMIx handler for the loss of the launcher's daemon (see daemon_loss.hpp).
#include "runtime/daemon_loss.hpp"

#include <dlfcn.h>  // dlopen, dlsym, RTLD_NOLOAD

#include <cstddef>  // std::size_t
#include <mutex>    // std::mutex

#include "runtime/watchdog.hpp"  // Watchdog::exit_without_mpi
#include "util/error.hpp"        // kExitLauncherLost

namespace trainer::runtime {

namespace {

// The few PMIx declarations needed, from pmix_common.h and pmix.h (stable C ABI since
// PMIx 2; only pointers and ints cross it). The loss of the connection is
// PMIX_ERR_LOST_CONNECTION (-61) since PMIx 4 and PMIX_ERR_LOST_CONNECTION_TO_SERVER
// (-101) before; both are watched.
using pmix_status_t = int;
constexpr pmix_status_t kLostConnection = -61;
constexpr pmix_status_t kLostConnectionToServer = -101;
constexpr pmix_status_t kEventNoActionTaken = -331;  // PMIX_EVENT_NO_ACTION_TAKEN: pass it on
using OpDone = void (*)(pmix_status_t status, void* cbdata);
using NotificationDone = void (*)(pmix_status_t status, void* results, std::size_t nresults, OpDone cbfunc,
                                  void* thiscbdata, void* notification_cbdata);
using Handler = void (*)(std::size_t registration, pmix_status_t status, const void* source, void* info,
                         std::size_t ninfo, void* results, std::size_t nresults, NotificationDone cbfunc,
                         void* cbdata);
using RegisteredDone = void (*)(pmix_status_t status, std::size_t reference, void* cbdata);
using RegisterHandler = pmix_status_t (*)(pmix_status_t codes[], std::size_t ncodes, void* info, std::size_t ninfo,
                                          Handler handler, RegisteredDone cbfunc, void* cbdata);

// What the handler needs. PMIx calls it with no pointer of ours, so this is the one
// process-wide state here: set once by the session, read by PMIx's thread.
struct Watch {
  std::mutex mutex;
  const Watchdog* watchdog = nullptr;  // null: not watching (before, or at MPI_Finalize)
  std::string who = "this process";
};
Watch& watch() {
  static Watch instance;
  return instance;
}

void on_lost_connection(std::size_t, pmix_status_t status, const void*, void*, std::size_t, void*, std::size_t,
                        NotificationDone done, void* cbdata) {
  const Watchdog* watchdog = nullptr;
  std::string who;
  {
    Watch& w = watch();
    const std::lock_guard<std::mutex> lock(w.mutex);
    watchdog = w.watchdog;
    who = w.who;
  }
  if (!watchdog) {
    // Closing on purpose: Open MPI's handlers decide.
    if (done) done(kEventNoActionTaken, nullptr, 0, nullptr, nullptr, cbdata);
    return;
  }
  watchdog->exit_without_mpi(
      "error: [" + who + "] lost the connection to the launcher's daemon on this host (Open MPI's orted or prted, "
          "mpirun, or srun's slurmstepd; PMIx status " + std::to_string(status) +
          "): it died or was killed, and without it this rank can reach no other rank, so the job ends here "
          "(exit code " + std::to_string(kExitLauncherLost) + ")\n"
          "hint: nothing in the run was wrong: find out why the daemon ended (killed by hand, the out-of-memory "
          "killer: dmesg, the batch system's log), then continue from the last checkpoint with --resume auto\n",
      kExitLauncherLost);
}

RegisterHandler find_register() {
  if (void* f = ::dlsym(RTLD_DEFAULT, "PMIx_Register_event_handler")) return reinterpret_cast<RegisterHandler>(f);
  // Open MPI loads its PMIx component, and the library with it, with local symbols.
  for (const char* name : {"libpmix.so.2", "libpmix.so"}) {
    if (void* lib = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {
      void* f = ::dlsym(lib, "PMIx_Register_event_handler");
      ::dlclose(lib);  // drops only the reference RTLD_NOLOAD added: Open MPI keeps it loaded
      if (f) return reinterpret_cast<RegisterHandler>(f);
    }
  }
  return nullptr;
}

}  // namespace

bool watch_launcher_daemon(const Watchdog& watchdog, const std::string& who) {
  const RegisterHandler register_handler = find_register();
  if (!register_handler) return false;
  {
    Watch& w = watch();
    const std::lock_guard<std::mutex> lock(w.mutex);
    w.watchdog = &watchdog;
    w.who = who;
  }
  pmix_status_t codes[] = {kLostConnection, kLostConnectionToServer};
  // No completion callback: a blocking registration, which returns the handler's
  // reference (>= 0) or an error.
  return register_handler(codes, 2, nullptr, 0, on_lost_connection, nullptr, nullptr) >= 0;
}

void name_for_launcher_daemon_loss(const std::string& who) {
  Watch& w = watch();
  const std::lock_guard<std::mutex> lock(w.mutex);
  w.who = who;
}

void stop_watching_launcher_daemon() {
  Watch& w = watch();
  const std::lock_guard<std::mutex> lock(w.mutex);
  w.watchdog = nullptr;
}

}  // namespace trainer::runtime
