// A condition variable for a Mutex (core/mutex.h) whose timed waits run on
// the monotonic (steady) clock.
//
// Why not absl::CondVar: the abseil this project builds with (Debian 12's
// 20220623) times a CondVar's waits against the wall clock (an absolute
// CLOCK_REALTIME futex deadline), so a wall clock stepped back by NTP or an
// operator stretches every wait in progress by the step: an agent's
// heartbeat sleep could outlast its tasks' leases.
// std::condition_variable waits on CLOCK_MONOTONIC.
//
//   MutexLock lock(&mu_);
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
#include "core/mutex.h"

namespace tiresias {

class SteadyCondVar {
 public:
  // Releases `mu` (held by the caller), waits for a signal, and takes `mu`
  // again before returning.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Held held(mu->mu_);
    cv_.wait(held.lock);
  }
  // As Wait, but also returns at `deadline`; true if it returned because
  // the deadline passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Held held(mu->mu_);
    return cv_.wait_until(held.lock, deadline) == std::cv_status::timeout;
  }
  // As WaitUntil, `timeout` from now.
  bool WaitFor(Mutex* mu, std::chrono::steady_clock::duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // The held mutex as std::condition_variable wants it: a unique_lock
  // adopting it for the wait (which releases and retakes it) and giving it
  // back, still held, after.
  struct Held {
    explicit Held(std::mutex& mu) : lock(mu, std::adopt_lock) {}
    ~Held() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_STEADY_COND_VAR_H_
