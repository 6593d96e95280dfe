// Time in Tiresias: one typed quantity, seconds as a double.
//
// Both instants (seconds since the start of a trace, or since the Unix epoch
// in the master) and durations are `Seconds`; a double keeps demotion
// instants exact enough (sub-microsecond over a year) without rounding them
// to a tick. GPU-time is a plain double named `..._gpu_seconds`.
#ifndef TIRESIAS_CORE_TIME_H_
#define TIRESIAS_CORE_TIME_H_

#include <chrono>
#include <limits>

namespace tiresias {

using Seconds = std::chrono::duration<double>;

inline constexpr Seconds kNever{std::numeric_limits<double>::infinity()};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_TIME_H_
