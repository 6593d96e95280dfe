// The master's /metrics page: MasterState::Metrics in the Prometheus text
// exposition format (version 0.0.4), every family with HELP and TYPE:
//
//   tiresias_jobs{state="running"} 3            gauge, every state listed
//   tiresias_jobs_submitted_total 12            counter
//   tiresias_job_preemptions_total 4            counter (summed over jobs)
//   tiresias_job_promotions_total 0             counter
//   tiresias_jobs_cpu_seconds 812.5              gauge (cgroups' CPU time)
//   tiresias_running_job_cpu_seconds{job="7",user="alice"} 30.2   gauge
//   tiresias_running_job_memory_peak_bytes{job="7",user="alice"} 1.2e9
//                                               gauge, per running job
//   tiresias_waiting_jobs{queue="1"} 2          gauge, queues with waiters
//   tiresias_nodes{state="up"} 2                gauge
//   tiresias_gpus{state="busy"} 3               gauge (up nodes: busy, free)
//   tiresias_scheduling_passes_total 57         counter
//   tiresias_scheduling_pass_seconds_total 0.01 counter
//   tiresias_store_commits_total 90             counter (one fsync each)
//   tiresias_store_commit_seconds_total 0.2     counter
//   tiresias_heartbeats_committed_total 120     counter
//   tiresias_heartbeat_commits_total 60         counter (heartbeats per
//     commit: committed / commits)
//   tiresias_events_total 40                    counter
//   tiresias_audit_refusals_total{action="UpdateJobs",outcome="denied",
//     user="mallory"} 120                       counter, by cause
//   tiresias_audit_refusals_unrecorded_total{...} 100  counter (only in a
//     summary entry of the audit log: over its rate limit)
//
// and, from the gRPC service rather than the state (RenderUserStreams):
//
//   tiresias_user_streams{user="alice"} 3       gauge (watches and attached
//     sessions open, against --max-streams-per-user)
//   tiresias_user_streams_refused_total{user="alice"} 2   counter (refused
//     at that limit since the master started)
#ifndef TIRESIAS_MASTER_METRICS_H_
#define TIRESIAS_MASTER_METRICS_H_

#include <map>
#include <string>

#include "master/master_state.h"
#include "master/user_streams.h"

namespace tiresias {

// Pure.
std::string RenderPrometheusMetrics(const MasterState::Metrics& metrics);
// Pure: the two families above for `counts` (UserStreams::Counts), both
// with their HELP and TYPE even when no user holds a stream.
std::string RenderUserStreams(
    const std::map<std::string, UserStreams::Count>& counts);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_METRICS_H_
