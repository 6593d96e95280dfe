// MasterState: the cluster's history (cluster_history.h), sampled from the
// same snapshot /metrics reports and kept in the store, so that it
// survives a restart of the master.
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::RecordClusterSample() {
  ASSIGN_OR_RETURN(Metrics m, SnapshotMetrics());
  ClusterSample sample{.time = clock_->NowUnixSeconds(),
                       .gpus_busy = m.gpus_busy,
                       .gpus_total = m.gpus_up};
  for (const auto& [queue, count] : m.waiting_by_queue) {
    sample.jobs_waiting += count;
  }
  sample.jobs_running = m.jobs_by_state[JobRecordState::kRunning] +
                        m.jobs_by_state[JobRecordState::kStarting];
  return store_->AddClusterSample(sample, options_.history_retention);
}

Seconds MasterState::NowForHistory() const {
  return clock_->NowUnixSeconds();
}

absl::StatusOr<std::vector<ClusterSample>> MasterState::ClusterHistory(
    Seconds since, Seconds until, int max_points) {
  ASSIGN_OR_RETURN(std::vector<ClusterSample> samples,
                   store_->ClusterHistory(since, until));
  return ThinSamples(std::move(samples), max_points);
}

}  // namespace tiresias
