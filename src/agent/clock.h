// The agent's source of time, behind an interface so that tests can replace
// it (STYLE rule 4).
//
// Two clocks, because they answer different questions: the steady clock
// measures intervals (grace periods, deadlines) and never jumps; the wall
// clock stamps events the master accounts from (when a task really started
// and stopped), and is comparable across machines.
#ifndef TIRESIAS_AGENT_CLOCK_H_
#define TIRESIAS_AGENT_CLOCK_H_

#include <chrono>

namespace tiresias {

class Clock {
 public:
  virtual ~Clock() = default;

  virtual std::chrono::steady_clock::time_point SteadyNow() = 0;
  virtual std::chrono::system_clock::time_point WallNow() = 0;
  // Blocks the calling thread for `duration` (a fake clock may just advance).
  virtual void SleepFor(std::chrono::nanoseconds duration) = 0;
};

// The process-wide real clock (std::chrono::steady_clock / system_clock).
// Never null, never destroyed, thread-safe.
Clock* RealClock();

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_CLOCK_H_
