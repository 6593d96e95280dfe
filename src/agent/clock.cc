#include "agent/clock.h"

#include <thread>

namespace tiresias {
namespace {

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point SteadyNow() override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point WallNow() override {
    return std::chrono::system_clock::now();
  }
  void SleepFor(std::chrono::nanoseconds duration) override {
    std::this_thread::sleep_for(duration);
  }
};

}  // namespace

Clock* RealClock() {
  static SystemClock* const clock = new SystemClock();
  return clock;
}

}  // namespace tiresias
