#pragma once
// The launcher's daemon dying mid-run: a clean error instead of Open MPI's silent exit.
//
// Each rank talks to a daemon on its host through PMIx: Open MPI's orted (which a
// `--nprocs` run starts itself) or prted, mpirun itself on its own host, SLURM's
// slurmstepd under srun. When that process dies (killed by hand or by the
// out-of-memory killer), the rank's PMIx client loses its connection, and Open MPI's
// default handler of that event ends the rank from its progress thread with
// _exit(PMIX_ERR_LOST_CONNECTION) = _exit(-61): exit code 195 within a second and
// nothing on stderr (issue 26; found with gdb on `_exit`).
//
// So, once MPI is up, a handler for exactly that event is registered with PMIx
// itself; handlers of a specific event run before Open MPI's catch-all one. It
// prints one `error:` line naming the rank and what happened, with a hint, and ends
// the rank with kExitLauncherLost (3) through Watchdog::exit_without_mpi: a
// `--nprocs` parent kills the copies it started, temporary files are removed.
//
// PMIx is reached through the library Open MPI already loaded (dlopen with
// RTLD_NOLOAD, its stable C ABI declared in daemon_loss.cpp): nothing is linked or
// required, and with another MPI (no PMIx loaded) nothing is watched.
#include <string>  // std::string

namespace trainer::runtime {

class Watchdog;

// Starts watching (after MPI_Init). `who` names this process in the error
// ("rank 0", "this process"); true when a handler is in place.
bool watch_launcher_daemon(const Watchdog& watchdog, const std::string& who);

// Renames this process in the error once its rank is known.
void name_for_launcher_daemon_loss(const std::string& who);

// Before MPI_Finalize: the connection closes on purpose then, and the event, if any,
// is passed on to Open MPI's handlers.
void stop_watching_launcher_daemon();

}  // namespace trainer::runtime
