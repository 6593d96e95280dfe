// The cluster's history: how many GPUs were busy and how many jobs waited,
// sampled by the master every few seconds (MasterServer's loop) and kept
// in the store (Store::AddClusterSample, schema version 13), so that the
// dashboard's chart survives a page reload and a master restart.
//
// The table stays bounded: points younger than `full_resolution` are kept
// as sampled; older ones are thinned to one per `coarse_bucket` (the first
// sampled in each bucket); points older than `keep` are dropped, and never
// more than `max_rows` are kept (the oldest go first). With the defaults
// and a 10 s interval: 8,640 points for the last day, 1,728 for the six
// before it.
#ifndef TIRESIAS_MASTER_CLUSTER_HISTORY_H_
#define TIRESIAS_MASTER_CLUSTER_HISTORY_H_

#include <cstdint>
#include <vector>

#include "core/time.h"

namespace tiresias {

struct ClusterSample {
  Seconds time{0};           // Unix seconds
  int64_t gpus_busy = 0;     // held by a launch
  int64_t gpus_total = 0;    // of the up nodes
  int64_t jobs_waiting = 0;  // pending and preempted (held included)
  int64_t jobs_running = 0;  // starting and running

  friend bool operator==(const ClusterSample&, const ClusterSample&) = default;
};

struct HistoryRetention {
  Seconds full_resolution{24 * 3600};
  Seconds coarse_bucket{300};
  Seconds keep{7 * 24 * 3600};
  int64_t max_rows = 20000;
};

// At most `max_points` of `samples` (in time order), evenly spread: every
// k-th one with k = ceil(size / max_points), and always the last (the
// newest matters most on a chart). max_points <= 0: all of them.
std::vector<ClusterSample> ThinSamples(std::vector<ClusterSample> samples,
                                       int max_points);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_CLUSTER_HISTORY_H_
