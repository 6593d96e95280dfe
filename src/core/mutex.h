// The project's mutex: std::mutex with the lock annotations clang's
// -Wthread-safety checks (scripts/check_thread_safety.sh), and a scoped
// lock for it, spelled as abseil's (Mutex, MutexLock(&mu)).
//
// Why not absl::Mutex: the abseil this project builds with (Debian 12's
// 20220623) is not built for ThreadSanitizer, and absl::Mutex synchronizes
// with atomics and futexes TSan cannot see inside an uninstrumented
// library, so a TSan build reported a race on every access an absl::Mutex
// guarded. std::mutex is pthread's, whose calls TSan intercepts: a TSan
// build sees the same happens-before the code relies on.
//
//   Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   ...
//   MutexLock lock(&mu_);
//   ++count_;
//
// Conditions are waited on with SteadyCondVar (steady_cond_var.h).
#ifndef TIRESIAS_CORE_MUTEX_H_
#define TIRESIAS_CORE_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tiresias {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return mu_.try_lock();
  }

 private:
  friend class SteadyCondVar;  // waits on the std::mutex itself
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_MUTEX_H_
