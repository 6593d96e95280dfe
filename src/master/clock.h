// The master's sources of time, behind an interface so that tests can
// drive time by hand (STYLE rule 4): wall-clock time as Unix seconds
// (`Seconds`, the unit the store and the RPC contract use), and a
// monotonic time for every timeout (a node's silence, the adoption window):
// a wall clock stepped by NTP or an operator must not declare nodes lost
// before their agents' leases have lapsed.
//
// In namespace tiresias::master because the agent has its own, different
// `tiresias::Clock` (steady + wall + sleep) and a binary may link both.
#ifndef TIRESIAS_MASTER_CLOCK_H_
#define TIRESIAS_MASTER_CLOCK_H_

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"
#include "core/time.h"

namespace tiresias::master {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since the Unix epoch. Thread-safe.
  virtual Seconds NowUnixSeconds() = 0;
  // Seconds since an arbitrary start; never goes back, never jumps.
  // Thread-safe.
  virtual Seconds NowMonotonic() = 0;
};

// std::chrono::system_clock.
class RealClock final : public Clock {
 public:
  Seconds NowUnixSeconds() override {
    return std::chrono::duration_cast<Seconds>(
        std::chrono::system_clock::now().time_since_epoch());
  }
  Seconds NowMonotonic() override {
    return std::chrono::duration_cast<Seconds>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

// A clock that moves only when told to (both readings move together; Set
// moves only the wall clock, as a stepped clock does). Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Seconds start = Seconds{1000}) : now_(start) {}
  Seconds NowUnixSeconds() override {
    MutexLock lock(&mu_);
    return now_;
  }
  Seconds NowMonotonic() override {
    MutexLock lock(&mu_);
    return monotonic_;
  }
  void Advance(Seconds by) {
    MutexLock lock(&mu_);
    now_ += by;
    monotonic_ += by;
  }
  void Set(Seconds to) {
    MutexLock lock(&mu_);
    now_ = to;
  }

 private:
  Mutex mu_;
  Seconds now_ ABSL_GUARDED_BY(mu_);
  Seconds monotonic_ ABSL_GUARDED_BY(mu_) = Seconds{0};
};

}  // namespace tiresias::master

#endif  // TIRESIAS_MASTER_CLOCK_H_
