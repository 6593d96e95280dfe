// The jobs `tiresias tune` replays: a window of a trace file, or of a
// running master's own jobs (tune_window.cc).
#ifndef TIRESIAS_CLI_TUNE_WINDOW_H_
#define TIRESIAS_CLI_TUNE_WINDOW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/topology.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

struct TuneWindow {
  std::vector<JobSpec> jobs;  // by submit time, the first at 0
  double start = 0;           // the window's first instant (trace or Unix s)
  double end = 0;
  int64_t censored = 0;  // jobs still running or waiting: drawn
  int64_t left_out = 0;  // never ran and ended (cancelled), CPU-only,
                         // or larger than the cluster
  // Sizes (GPU-seconds) of the jobs whose duration is known (a master's:
  // those that finished, the drift test's baseline).
  std::vector<double> known_sizes;
};

// The jobs of `all` (any order) submitted in [end - window_s, end], each
// with a duration, shifted so that the first comes at 0; those that cannot
// fit `topology` left out.
TuneWindow CutWindow(std::vector<JobSpec> all, double end, double window_s,
                     const Topology& topology);

// A master's jobs as a window ending at `now`: an ended job's duration is
// its run time (Job.total_executed_seconds; one that never ran is left
// out); an unfinished job's is censored: drawn (seeded by `seed`) from the
// durations of the ended jobs that ran at least as long as it has so far,
// at least what it ran (twice that if none ran longer).
TuneWindow MasterWindow(const std::vector<v1::Job>& jobs, double now,
                        double window_s, const Topology& topology,
                        uint64_t seed);

// The up nodes' GPUs as a topology (one rack). InvalidArgument if none.
absl::StatusOr<Topology> TopologyOfNodes(const v1::ListNodesResponse& nodes);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_TUNE_WINDOW_H_
