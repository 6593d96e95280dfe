// Virtual clusters in the simulator: quotas from a trace's own tenants,
// each VC's private cluster, and the comparison of the shared cluster
// against them (HiveD's sharing anomaly).
#ifndef TIRESIAS_SIM_VC_RUNS_H_
#define TIRESIAS_SIM_VC_RUNS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/topology.h"
#include "sched/vcs.h"
#include "sim/engine.h"

namespace tiresias {

// One VC per distinct JobSpec::vc of `jobs` (a job without one goes to
// "default"), largest share first (ties by name). Its quota: its share of
// the trace's GPU demand (GPUs x duration) of the cluster's GPUs, rounded
// down, the GPUs left over going one each to the largest remainders; as
// cells: whole servers of the cluster's largest power-of-two server size,
// then the rest in powers of two (13 on 8-GPU servers: 1x8,1x4,1x1).
// Borrowing and lending unlimited, weight 1. Fails if those cells do not
// fit the cluster (servers of mixed sizes: write a VC file instead).
// Every job in `jobs` gets its VC's name.
absl::StatusOr<std::vector<VcSpec>> VcsFromTrace(std::vector<JobSpec>* jobs,
                                                 const Topology& topology);

// A VC's cluster of its own: its cells as servers, as the scheduler sees
// its quota. Fails on a VC without cells.
absl::StatusOr<Topology> PrivateTopology(const VcSpec& vc);

// The jobs of one VC, in order, their vc cleared.
std::vector<JobSpec> JobsOf(const std::vector<JobSpec>& jobs,
                            const std::string& vc);

// Several runs as one (static partitioning: each VC alone on its quota):
// jobs in submit order, busy GPU-seconds and preemptions summed, the
// span from the first submission to the last end, `total_gpus` GPUs.
SimResult MergeResults(const std::vector<const SimResult*>& parts,
                       std::string policy, int total_gpus);

struct VcRow {
  std::string name;
  std::string cells;  // CellsText; "" without a quota
  int quota_gpus = 0;
  double demand_share = 0;  // of the trace's GPU time
  int64_t jobs = 0;
  double shared_avg_jct_s = 0, shared_avg_queueing_s = 0;
  // Its private cluster (absent without cells): the jobs that fit it, and,
  // over those same jobs, the shared cluster's average queueing delay.
  bool has_private = false;
  int64_t private_jobs = 0;
  double private_avg_jct_s = 0, private_avg_queueing_s = 0;
  double shared_same_avg_queueing_s = 0;
  // shared_same - private: above 0 is a sharing anomaly.
  double anomaly_s() const {
    return shared_same_avg_queueing_s - private_avg_queueing_s;
  }
};

// Per VC, from the shared run and each VC's private run (nullptr: none).
std::vector<VcRow> CompareVcs(const std::vector<VcSpec>& vcs,
                              const std::vector<JobSpec>& jobs,
                              const SimResult& shared,
                              const std::vector<const SimResult*>& privates);

}  // namespace tiresias

#endif  // TIRESIAS_SIM_VC_RUNS_H_
