// A condition variable for an absl::Mutex whose timed waits run on the
// monotonic (steady) clock.
//
// Why not absl::CondVar: the abseil this project builds with (Debian 12's
// 20220623) times a CondVar's waits against the wall clock (an absolute
// CLOCK_REALTIME futex deadline), so a wall clock stepped back by NTP or an
// operator stretches every wait in progress by the step: an agent's
// heartbeat sleep could outlast its tasks' leases. std::condition_variable
// (and _any, used here) waits on CLOCK_MONOTONIC, as the code did before
// its locks became absl::Mutex.
//
//   absl::MutexLock lock(&mu_);
//   while (!done_) {
//     if (cv_.WaitFor(&mu_, std::chrono::seconds(1))) break;  // timed out
//   }
//
// Waits may wake spuriously: loop on the condition, as above. Signal and
// SignalAll may be called with or without the mutex held. Thread-safe.
#ifndef TIRESIAS_CORE_STEADY_COND_VAR_H_
#define TIRESIAS_CORE_STEADY_COND_VAR_H_

#include <chrono>
#include <condition_variable>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tiresias {

class SteadyCondVar {
 public:
  // Releases `mu` (held by the caller), waits for a signal, and takes `mu`
  // again before returning.
  void Wait(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Held held{mu};
    cv_.wait(held);
  }
  // As Wait, but also returns at `deadline`; true if it returned because
  // the deadline passed.
  bool WaitUntil(absl::Mutex* mu,
                 std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Held held{mu};
    return cv_.wait_until(held, deadline) == std::cv_status::timeout;
  }
  // As WaitUntil, `timeout` from now.
  bool WaitFor(absl::Mutex* mu, std::chrono::steady_clock::duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // The mutex as std::condition_variable_any wants it (lock, unlock). The
  // analysis cannot see that the wait gives back the mutex it releases, so
  // these two are left unchecked; the callers above are checked.
  struct Held {
    absl::Mutex* mu;
    void lock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Lock(); }
    void unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Unlock(); }
  };

  std::condition_variable_any cv_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_STEADY_COND_VAR_H_
