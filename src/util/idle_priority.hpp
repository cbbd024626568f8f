#pragma once
// Background threads that must never take a core from the training thread (the
// checkpoint snapshot's copier, the metrics.csv writer): Linux's SCHED_IDLE for the
// calling thread only. Waking such a thread at normal priority, even at nice 19, cost
// the training thread 1-5 ms at epoch boundaries on a 2-core node: the scheduler ran
// the woken thread on its core. An idle-priority thread runs on cores nothing else
// wants; when the training thread waits for its work, that wait frees a core.
// Best effort: where the policy is not permitted the thread keeps its priority,
// which is only slower, so failure is not an error.
#include <sched.h>        // sched_setscheduler, SCHED_IDLE
#include <sys/syscall.h>  // SYS_gettid
#include <unistd.h>       // syscall

namespace trainer {

inline void run_this_thread_at_idle_priority() noexcept {
  sched_param none{};
  (void)::sched_setscheduler(static_cast<pid_t>(::syscall(SYS_gettid)), SCHED_IDLE, &none);
}

}  // namespace trainer
