// The master's source of wall-clock time, behind an interface so that tests
// can drive time by hand (STYLE rule 4). Times are Unix seconds as
// `Seconds`, the unit the store and the RPC contract use.
//
// In namespace tiresias::master because the agent has its own, different
// `tiresias::Clock` (steady + wall + sleep) and a binary may link both.
#ifndef TIRESIAS_MASTER_CLOCK_H_
#define TIRESIAS_MASTER_CLOCK_H_

#include <chrono>
#include <mutex>

#include "core/time.h"

namespace tiresias::master {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since the Unix epoch. Thread-safe.
  virtual Seconds NowUnixSeconds() = 0;
};

// std::chrono::system_clock.
class RealClock final : public Clock {
 public:
  Seconds NowUnixSeconds() override {
    return std::chrono::duration_cast<Seconds>(
        std::chrono::system_clock::now().time_since_epoch());
  }
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Seconds start = Seconds{1000}) : now_(start) {}
  Seconds NowUnixSeconds() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(Seconds by) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += by;
  }
  void Set(Seconds to) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = to;
  }

 private:
  std::mutex mu_;
  Seconds now_;
};

}  // namespace tiresias::master

#endif  // TIRESIAS_MASTER_CLOCK_H_
