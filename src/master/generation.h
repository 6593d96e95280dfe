// A counter that watchers wait on: a writer bumps it after each change a
// watcher may want (events written, a desired state changed), and a watcher
// reads it, looks at the state, and waits until it moves. Reading it
// before looking means a change made meanwhile is never slept past.
//
//   uint64_t seen = generation.Get();
//   while (...) {
//     ... look at the state ...
//     seen = generation.WaitChange(seen, std::chrono::milliseconds(200));
//   }
//
// Thread-safe; its own lock is a leaf (taken inside others, never around).
#ifndef TIRESIAS_MASTER_GENERATION_H_
#define TIRESIAS_MASTER_GENERATION_H_

#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"

namespace tiresias {

class Generation {
 public:
  uint64_t Get() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return value_;
  }
  // Moves it on and wakes every waiter.
  void Bump() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      ++value_;
    }
    cv_.SignalAll();
  }
  // Waits until it differs from `seen` or `timeout` passes; its value then.
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout)
      ABSL_LOCKS_EXCLUDED(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (value_ == seen) {
      if (cv_.WaitUntil(&mu_, deadline)) break;
    }
    return value_;
  }

 private:
  Mutex mu_;
  SteadyCondVar cv_;
  uint64_t value_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_GENERATION_H_
