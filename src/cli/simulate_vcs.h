// `tiresias simulate --vcs FILE|from-trace`: the trace on the cluster shared
// by virtual clusters, beside the same cluster without VCs and each VC
// alone on a private cluster of its quota (static partitioning), per
// policy; then, per VC, its queueing delay shared against private (HiveD's
// sharing anomaly).
#ifndef TIRESIAS_CLI_SIMULATE_VCS_H_
#define TIRESIAS_CLI_SIMULATE_VCS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/job.h"
#include "core/topology.h"
#include "sim/engine.h"
#include "sim/metrics.h"

namespace tiresias {

struct VcSimulation {
  std::string trace;
  std::string vcs;            // a VC file, or "from-trace"
  std::vector<JobSpec> jobs;  // those that fit the cluster, models drawn
  Topology topology;
  SimConfig base;
  std::vector<std::string> policies;
  bool json = false;
  std::string out;  // a folder for vcs.csv and summary.csv, or ""
  int threads = 1;
  BinOptions bins;
  double warmup_s = 0;
};

absl::Status SimulateVcs(VcSimulation sim);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_SIMULATE_VCS_H_
