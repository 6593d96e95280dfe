#include "master/metrics.h"

#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

void Family(std::string* out, const char* name, const char* type,
            const char* help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type,
                  "\n");
}

// A label value as the exposition format quotes it: backslash, double
// quote and line feed escaped.
std::string LabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string CauseLabels(const AuditCause& cause) {
  return absl::StrCat("{action=\"", LabelValue(cause.action), "\",outcome=\"",
                      LabelValue(cause.outcome), "\",user=\"",
                      LabelValue(cause.principal), "\"}");
}

}  // namespace

std::string RenderUserStreams(
    const std::map<std::string, UserStreams::Count>& counts) {
  std::string out;
  Family(&out, "tiresias_user_streams", "gauge",
         "Streams a user holds open on the master (event watches and "
         "attached sessions), against --max-streams-per-user.");
  for (const auto& [user, count] : counts) {
    if (count.open == 0) continue;
    absl::StrAppend(&out, "tiresias_user_streams{user=\"", LabelValue(user),
                    "\"} ", count.open, "\n");
  }
  Family(&out, "tiresias_user_streams_refused_total", "counter",
         "Streams refused because their user held --max-streams-per-user.");
  for (const auto& [user, count] : counts) {
    if (count.refused == 0) continue;
    absl::StrAppend(&out, "tiresias_user_streams_refused_total{user=\"",
                    LabelValue(user), "\"} ", count.refused, "\n");
  }
  return out;
}

std::string RenderPrometheusMetrics(const MasterState::Metrics& m) {
  std::string out;
  Family(&out, "tiresias_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, count] : m.jobs_by_state) {
    const std::string_view name = JobRecordStateName(state);
    absl::StrAppend(&out, "tiresias_jobs{state=\"",
                    ToAbsl(name), "\"} ", count,
                    "\n");
  }
  if (m.open_files >= 0 && m.open_files_limit > 0) {
    Family(&out, "tiresias_master_open_files", "gauge",
           "File descriptors the master has open (a connection each).");
    absl::StrAppend(&out, "tiresias_master_open_files ", m.open_files, "\n");
    Family(&out, "tiresias_master_open_files_limit", "gauge",
           "Its open-file limit: connections past it are refused.");
    absl::StrAppend(&out, "tiresias_master_open_files_limit ",
                    m.open_files_limit, "\n");
  }
  if (m.leader) {
    Family(&out, "tiresias_master_leader", "gauge",
           "1: this master leads its state dir (a standby serves nothing).");
    absl::StrAppend(&out, "tiresias_master_leader 1\n");
    Family(&out, "tiresias_master_epoch", "gauge",
           "Its leader epoch: one more at each start or takeover.");
    absl::StrAppend(&out, "tiresias_master_epoch ", m.leader->epoch, "\n");
    Family(&out, "tiresias_master_lead_since_seconds", "gauge",
           "When it took the lead (Unix seconds).");
    absl::StrAppend(&out, "tiresias_master_lead_since_seconds ",
                    absl::StrFormat("%.3f", m.leader->since), "\n");
    Family(&out, "tiresias_master_standbys", "gauge",
           "Masters waiting on the same state dir to take over.");
    absl::StrAppend(&out, "tiresias_master_standbys ", m.standbys.size(), "\n");
    if (m.store.kind == "etcd") {
      Family(&out, "tiresias_store_log_index", "gauge",
             "The last etcd log entry the leader's copy of the state holds.");
      absl::StrAppend(&out, "tiresias_store_log_index ", m.store.log_index,
                      "\n");
      Family(&out, "tiresias_store_member_up", "gauge",
             "1: the etcd member answered the leader's last ask, is in a "
             "quorum (knows a raft leader) and raises no alarm.");
      for (const StoreMemberHealth& h : m.store.members) {
        absl::StrAppend(
            &out, "tiresias_store_member_up{member=\"", LabelValue(h.endpoint),
            "\"} ", h.error.empty() && h.has_leader && h.alarms.empty() ? 1 : 0,
            "\n");
      }
      Family(&out, "tiresias_store_member_db_bytes", "gauge",
             "Each answering etcd member's database file size.");
      for (const StoreMemberHealth& h : m.store.members) {
        if (!h.error.empty()) continue;
        absl::StrAppend(&out, "tiresias_store_member_db_bytes{member=\"",
                        LabelValue(h.endpoint), "\"} ", h.db_size, "\n");
      }
    }
  }
  Family(&out, "tiresias_jobs_submitted_total", "counter",
         "Jobs ever accepted.");
  absl::StrAppend(&out, "tiresias_jobs_submitted_total ", m.jobs_submitted,
                  "\n");
  Family(&out, "tiresias_job_preemptions_total", "counter",
         "Preemptions, summed over all jobs.");
  absl::StrAppend(&out, "tiresias_job_preemptions_total ", m.preemptions, "\n");
  Family(&out, "tiresias_job_promotions_total", "counter",
         "Promotions to the first queue (starvation avoidance), summed over "
         "all jobs.");
  absl::StrAppend(&out, "tiresias_job_promotions_total ", m.promotions, "\n");
  // A gauge: running tasks' readings are in it, and a master restart
  // forgets those until the agents report again.
  Family(&out, "tiresias_jobs_cpu_seconds", "gauge",
         "CPU time of every job's tasks, from their cgroups.");
  absl::StrAppend(&out, "tiresias_jobs_cpu_seconds ",
                  absl::StrFormat("%.3f", m.cpu_seconds), "\n");
  Family(&out, "tiresias_running_job_cpu_seconds", "gauge",
         "CPU time a running job's tasks used so far (every attempt).");
  for (const auto& u : m.running_usage) {
    absl::StrAppend(&out, "tiresias_running_job_cpu_seconds{job=\"", u.id,
                    "\",user=\"", LabelValue(u.user), "\"} ",
                    absl::StrFormat("%.3f", u.cpu_seconds), "\n");
  }
  Family(&out, "tiresias_running_job_memory_peak_bytes", "gauge",
         "The largest memory peak of any task of a running job.");
  for (const auto& u : m.running_usage) {
    absl::StrAppend(&out, "tiresias_running_job_memory_peak_bytes{job=\"", u.id,
                    "\",user=\"", LabelValue(u.user), "\"} ",
                    u.max_memory_bytes, "\n");
  }
  Family(&out, "tiresias_waiting_jobs", "gauge",
         "Pending and preempted jobs by queue (0 = highest priority).");
  for (const auto& [queue, count] : m.waiting_by_queue) {
    absl::StrAppend(&out, "tiresias_waiting_jobs{queue=\"", queue, "\"} ",
                    count, "\n");
  }
  Family(&out, "tiresias_nodes", "gauge", "Nodes by state.");
  absl::StrAppend(&out, "tiresias_nodes{state=\"up\"} ", m.nodes_up, "\n",
                  "tiresias_nodes{state=\"down\"} ", m.nodes_down, "\n");
  Family(&out, "tiresias_drained_nodes", "gauge",
         "Up nodes drained for maintenance (no new launches).");
  absl::StrAppend(&out, "tiresias_drained_nodes ", m.nodes_drained, "\n");
  Family(&out, "tiresias_drained_gpus", "gauge",
         "GPUs of the drained up nodes, busy or not.");
  absl::StrAppend(&out, "tiresias_drained_gpus ", m.gpus_drained, "\n");
  Family(&out, "tiresias_gpus", "gauge",
         "GPUs of the up nodes: held by a launch (assigned, starting, running "
         "or being stopped), free, or idle on a drained node.");
  absl::StrAppend(
      &out, "tiresias_gpus{state=\"busy\"} ", m.gpus_busy, "\n",
      "tiresias_gpus{state=\"free\"} ",
      m.gpus_up - m.gpus_busy - m.gpus_drained_idle, "\n",
      "tiresias_gpus{state=\"drained\"} ", m.gpus_drained_idle, "\n");
  Family(&out, "tiresias_gpus_running", "gauge",
         "GPUs held by a task its agent reports running: busy GPUs minus "
         "those assigned to a task not started yet.");
  absl::StrAppend(&out, "tiresias_gpus_running ", m.gpus_running, "\n");
  if (!m.vcs.empty()) {
    Family(&out, "tiresias_vc_quota_gpus", "gauge",
           "GPUs of each virtual cluster's quota (its cells).");
    for (const MasterState::VcView& v : m.vcs) {
      absl::StrAppend(&out, "tiresias_vc_quota_gpus{vc=\"",
                      LabelValue(v.vc.name), "\"} ", v.quota_gpus, "\n");
    }
    // A family with one sample per VC and value of `label`.
    using Value = int MasterState::VcView::*;
    auto per_vc =
        [&](const char* name, const char* help, const char* label,
            std::initializer_list<std::pair<const char*, Value>> values) {
          Family(&out, name, "gauge", help);
          for (const MasterState::VcView& v : m.vcs) {
            for (const auto& [word, value] : values) {
              absl::StrAppend(&out, name, "{vc=\"", LabelValue(v.vc.name),
                              "\",", label, "=\"", word, "\"} ", v.*value,
                              "\n");
            }
          }
        };
    per_vc("tiresias_vc_gpus",
           "GPUs each virtual cluster's running jobs hold: on its quota "
           "(guaranteed) or beyond it (borrowed).",
           "kind",
           {{"guaranteed", &MasterState::VcView::guaranteed_gpus},
            {"borrowed", &MasterState::VcView::borrowed_gpus}});
    per_vc("tiresias_vc_jobs",
           "Each virtual cluster's unfinished jobs, running or waiting.",
           "state",
           {{"running", &MasterState::VcView::running_jobs},
            {"waiting", &MasterState::VcView::waiting_jobs}});
    Family(&out, "tiresias_vc_reclaims_total", "counter",
           "Borrowers preempted to give a virtual cluster its quota back, "
           "since the master started.");
    absl::StrAppend(&out, "tiresias_vc_reclaims_total ", m.vc_reclaims, "\n");
  }
  if (!m.qos.empty()) {
    Family(&out, "tiresias_qos_jobs", "gauge",
           "Each priority level's (QOS) unfinished jobs, running or waiting.");
    for (const MasterState::QosView& q : m.qos) {
      for (const auto& [word, value] : {std::pair{"running", q.running_jobs},
                                        std::pair{"waiting", q.waiting_jobs}}) {
        absl::StrAppend(&out, "tiresias_qos_jobs{qos=\"",
                        LabelValue(q.qos.name), "\",state=\"", word, "\"} ",
                        value, "\n");
      }
    }
    Family(&out, "tiresias_qos_gpus", "gauge",
           "GPUs each priority level's (QOS) running jobs hold.");
    for (const MasterState::QosView& q : m.qos) {
      absl::StrAppend(&out, "tiresias_qos_gpus{qos=\"", LabelValue(q.qos.name),
                      "\"} ", q.gpus, "\n");
    }
  }
  Family(&out, "tiresias_scheduling_passes_total", "counter",
         "Scheduling passes since the master started.");
  absl::StrAppend(&out, "tiresias_scheduling_passes_total ", m.passes, "\n");
  Family(&out, "tiresias_scheduling_pass_seconds_total", "counter",
         "Wall time spent in scheduling passes since the master started.");
  absl::StrAppend(&out, "tiresias_scheduling_pass_seconds_total ",
                  absl::StrFormat("%.17g", m.pass_seconds), "\n");
  Family(&out, "tiresias_store_commits_total", "counter",
         "Store transactions of the master's changes (job states, events, "
         "launches, re-registered nodes' rows; submissions and other writes "
         "apart), each one fsync; failed ones included.");
  absl::StrAppend(&out, "tiresias_store_commits_total ", m.commits.writes,
                  "\n");
  Family(&out, "tiresias_store_commit_seconds_total", "counter",
         "Wall time spent in those transactions, the master's lock held.");
  absl::StrAppend(&out, "tiresias_store_commit_seconds_total ",
                  absl::StrFormat("%.17g", m.commits.write_seconds), "\n");
  Family(&out, "tiresias_heartbeats_committed_total", "counter",
         "Heartbeats and registrations that waited for a commit of their "
         "reports before their answer (also when it failed).");
  absl::StrAppend(&out, "tiresias_heartbeats_committed_total ",
                  m.commits.reports, "\n");
  Family(&out, "tiresias_heartbeat_commits_total", "counter",
         "Commits one of those waiting led for itself and those that came "
         "meanwhile (a pass's commit may cover them too): heartbeats "
         "committed / this is how many shared a commit they led.");
  absl::StrAppend(&out, "tiresias_heartbeat_commits_total ",
                  m.commits.report_commits, "\n");
  Family(&out, "tiresias_events_total", "counter",
         "Job events recorded (the last event sequence number).");
  absl::StrAppend(&out, "tiresias_events_total ", m.last_event_sequence, "\n");
  const v1::TuningStatus& t = m.tuning;
  Family(&out, "tiresias_queue_threshold_gpu_seconds", "gauge",
         "The upper bound of each Tiresias queue but the last, in GPU-seconds "
         "(source: flags or applied by `tiresias tune --apply`).");
  for (int q = 0; q < t.tuning().thresholds_size(); ++q) {
    absl::StrAppend(&out, "tiresias_queue_threshold_gpu_seconds{queue=\"", q,
                    "\",source=\"", t.source(), "\"} ",
                    absl::StrFormat("%.17g", t.tuning().thresholds(q)), "\n");
  }
  Family(&out, "tiresias_promote_knob", "gauge",
         "PROMOTEKNOB; +Inf: no promotion.");
  absl::StrAppend(&out, "tiresias_promote_knob{queue_order=\"",
                  t.tuning().queue_order(), "\"} ",
                  t.tuning().promote_knob() == 0
                      ? std::string("+Inf")
                      : absl::StrFormat("%.17g", t.tuning().promote_knob()),
                  "\n");
  Family(&out, "tiresias_tuning_applied_timestamp_seconds", "gauge",
         "When the scheduling settings in force were applied (0: the "
         "master's flags).");
  absl::StrAppend(&out, "tiresias_tuning_applied_timestamp_seconds ",
                  absl::StrFormat("%.17g", t.applied_at()), "\n");
  Family(&out, "tiresias_tuning_drift", "gauge",
         "1 when the sizes of recently finished jobs differ from those the "
         "settings were tuned on (two-sample KS test, p < 0.01).");
  absl::StrAppend(&out, "tiresias_tuning_drift ", t.drift() ? 1 : 0, "\n");
  Family(&out, "tiresias_tuning_drift_p_value", "gauge",
         "The drift test's p value (1 without applied settings).");
  absl::StrAppend(
      &out, "tiresias_tuning_drift_p_value ",
      absl::StrFormat("%.17g",
                      t.source() == "applied" ? t.drift_p_value() : 1.0),
      "\n");
  Family(&out, "tiresias_pack_limit", "gauge",
         "PACKLIMIT: jobs with a higher tensor skew are consolidated "
         "(profiled placement). Learnt when learning=\"true\".");
  absl::StrAppend(&out, "tiresias_pack_limit{placement=\"", m.placement,
                  "\",learning=\"", m.pack_limit_learning ? "true" : "false",
                  "\",fit=\"", m.pack_limit_fit, "\"} ",
                  absl::StrFormat("%.17g", m.pack_limit), "\n");
  Family(&out, "tiresias_pack_limit_runs", "gauge",
         "Launches whose iteration time was measured with their placement.");
  absl::StrAppend(&out, "tiresias_pack_limit_runs ", m.pack_limit_runs, "\n");
  Family(&out, "tiresias_pack_limit_samples", "gauge",
         "Measured runs the PACKLIMIT classifier was last fitted on (their "
         "job measured both spread and consolidated).");
  absl::StrAppend(&out, "tiresias_pack_limit_samples ", m.pack_limit_samples,
                  "\n");
  Family(&out, "tiresias_audit_refusals_total", "counter",
         "Calls refused (audit log outcome denied or unauthenticated) since "
         "the master started, by call, outcome and user (\"-\": none).");
  for (const AuditCauseCount& c : m.audit_refusals) {
    absl::StrAppend(&out, "tiresias_audit_refusals_total", CauseLabels(c.cause),
                    " ", c.refusals, "\n");
  }
  Family(&out, "tiresias_audit_refusals_unrecorded_total", "counter",
         "Of those, refusals over the audit log's rate limit: counted in a "
         "summary entry, without their details.");
  for (const AuditCauseCount& c : m.audit_refusals) {
    absl::StrAppend(&out, "tiresias_audit_refusals_unrecorded_total",
                    CauseLabels(c.cause), " ", c.unrecorded, "\n");
  }
  return out;
}

}  // namespace tiresias
