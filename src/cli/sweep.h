// Parameter sweeps for `tiresias simulate --sweep KEY=V1,V2,...`: the grid
// of every combination, each a set of (key, value) settings.
//
// Keys: thresholds (a value is one K: 3600, or 3250:7200 for K = 3),
// knob (a number or inf), arrival-scale, placement, pack-limit,
// queue-order (stable or start-time).
#ifndef TIRESIAS_CLI_SWEEP_H_
#define TIRESIAS_CLI_SWEEP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/engine.h"

namespace tiresias {

using Setting = std::pair<std::string, std::string>;  // key, value
using GridPoint = std::vector<Setting>;

// Parses each "KEY=V1,V2" and returns the cross product (one empty point
// when there are no sweeps). Rejects unknown keys and repeated keys.
absl::StatusOr<std::vector<GridPoint>> ParseSweeps(
    const std::vector<std::string>& sweeps);

// Applies one setting to `config` (and to the arrival scale, which acts on
// the trace rather than the config). Values are validated here.
absl::Status ApplySetting(const Setting& setting, SimConfig* config,
                          double* arrival_scale);

// "inf" / "infinity" or a positive number (0 would promote a job the
// instant it is preempted).
absl::StatusOr<double> ParseKnob(const std::string& text);

// --queue-order, as `simulate` and `master` take it: its help, and its value
// parsed with the flag named in the error.
inline constexpr const char* kQueueOrderHelp =
    "Order within a Tiresias queue: stable (the original simulator's: a "
    "running job keeps its place, no preemption within a queue) or "
    "start-time (FIFO by first start, re-sorted every pass)";
absl::StatusOr<QueueOrder> ParseQueueOrderFlag(const std::string& text);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_SWEEP_H_
