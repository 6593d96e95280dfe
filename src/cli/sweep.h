// Parameter sweeps for `tiresias simulate --sweep KEY=V1,V2,...`: the grid
// of every combination, each a set of (key, value) settings. Commas
// separate a key's values; a K-queue list is written with colons, here as
// in --thresholds (3250:7200 is one K = 3 setting).
//
// Keys: seed, cluster (a --cluster spec: 88x8; no commas), arrival-scale,
// placement, pack-limit, thresholds, promote-knob (a number or inf; `knob`
// is the same key), queue-order (stable or start-time).
#ifndef TIRESIAS_CLI_SWEEP_H_
#define TIRESIAS_CLI_SWEEP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sched/policy.h"
#include "sim/engine.h"

namespace tiresias {

using Setting = std::pair<std::string, std::string>;  // key, value
using GridPoint = std::vector<Setting>;

// Parses each "KEY=V1,V2" and returns the cross product (one empty point
// when there are no sweeps). Rejects unknown keys and repeated keys.
absl::StatusOr<std::vector<GridPoint>> ParseSweeps(
    const std::vector<std::string>& sweeps);

// What a run is made of besides its SimConfig: they act on the trace and
// the cluster rather than the scheduler.
struct RunInputs {
  double arrival_scale = 1;
  uint64_t seed = 1;     // models drawn for jobs without one; the scheduler's
  std::string cluster;   // a --cluster spec
};

// Applies one setting to `config` or `inputs`. Values are validated here.
absl::Status ApplySetting(const Setting& setting, SimConfig* config,
                          RunInputs* inputs);

// Whether sweeping `key` can change the result of `policy` under `config`
// (its placement resolved against the policy's default): the queue keys
// matter only to policies with K queues, pack-limit only under `profiled`
// placement, and gandiva ignores placement and queues. A run whose every
// swept key that matters equals an earlier run's is not run again.
bool KeyMatters(const std::string& key, const std::string& policy,
                const SimConfig& config);

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
