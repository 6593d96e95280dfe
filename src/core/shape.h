// Jobs with a shape (`submit --nodes N --gpus-per-node G`, JobSpec::nodes):
// exactly N servers with G free GPUs each, whatever the placement scheme.
// The scheduler and the pending reasons place every job through PlaceJob,
// so a shaped job is placed by this rule and any other by its scheme.
//
// The rule: best fit per server. Servers are taken in order of their free
// GPUs, fewest first (G, then G + 1, ...), by index among equals, and each
// gives its G lowest free GPUs: holes are filled before whole servers are
// broken into, as `consolidate` does for a one-server job.
#ifndef TIRESIAS_CORE_SHAPE_H_
#define TIRESIAS_CORE_SHAPE_H_

#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/placer.h"
#include "core/rng.h"

namespace tiresias {

// Chooses the GPUs of shaped `job` (JobSpec::shaped) and appends them to
// *gpus; false, leaving *gpus unchanged, when fewer than `nodes` servers
// have `gpus_per_node` free GPUs each.
bool PlaceShaped(const Cluster& cluster, const Job& job,
                 std::vector<GpuId>* gpus);

// Servers of `cluster` with at least `gpus` free GPUs (cordoned ones have
// none).
int ServersWithAtLeast(const Cluster& cluster, int gpus);

// `placer` for a job without a shape, PlaceShaped for one with (the
// contract of Placer::Place). A job with a node filter (JobSpec::filter)
// is placed so on the servers its filter admits, as if the others were
// cordoned: O(servers) to find them, and a copy of `cluster` when they
// have enough free GPUs. An exclusive job (JobSpec::exclusive) likewise on
// the servers entirely free.
bool PlaceJob(const Placer& placer, const Cluster& cluster, const Job& job,
              Rng& rng, std::vector<GpuId>* gpus);

// Placer::MightFit, exact for a shaped job: at least `nodes` servers with
// avail[s] >= gpus_per_node. Counts only the servers a node filter admits
// (and for an exclusive job those whose every GPU is available).
bool JobMightFit(const Placer& placer, const Topology& topology,
                 const std::vector<int>& avail, int total, const Job& job);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_SHAPE_H_
