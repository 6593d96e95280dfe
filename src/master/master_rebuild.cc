// MasterState: rebuilding the Cluster and the Scheduler when the set of up
// nodes changes, and rebuilding scheduler jobs from records.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {
namespace {

// A waiting Job whose counters are exactly these. Job only changes through
// its transitions, so they are replayed at made-up instants chosen to land
// on the right values: a first run from `first_start` holding the time run
// before the last promotion, then one ending at `last_stop` holding
// `executed`.
Job BuildWaitingJob(JobSpec spec, std::optional<Seconds> first_start,
                    Seconds executed, Seconds total, Seconds last_stop,
                    int queue) {
  Job job(spec);
  if (first_start) {
    const std::vector<GpuId> placeholder(spec.num_gpus, 0);
    const int server = spec.cpu_only() ? 0 : -1;  // a placeholder too
    const Seconds before_promotion = std::max(Seconds{0}, total - executed);
    job.Start(*first_start, placeholder, server);
    job.Preempt(*first_start + before_promotion);
    if (before_promotion > Seconds{0}) {
      job.Promote(*first_start + before_promotion);
    }
    job.Start(last_stop - executed, placeholder, server);
    job.Preempt(last_stop);
  }
  job.set_queue(queue);
  return job;
}

}  // namespace

JobSpec MasterState::SchedulerSpecOf(const JobRecord& rec) const {
  JobSpec spec = CoreJobSpec(rec.id, rec.spec, rec.submit_time, rec.profile);
  spec.vc = vcs_.SchedulerName(spec.vc);
  if (!qos_.contains(spec.qos)) spec.qos.clear();
  return spec;
}

Job MasterState::JobFromRecord(const JobRecord& rec) const {
  return BuildWaitingJob(SchedulerSpecOf(rec), rec.first_start_time,
                         rec.executed, rec.total_executed, rec.last_stop_time,
                         rec.queue);
}

absl::Status MasterState::ReplaceSchedulerJob(const Job& job, Seconds now) {
  MarkDirty(job.id());  // its record follows at the next Commit
  return scheduler_->Replace(job, now);
}

namespace {
// The job's first start if it ran before its current (or last) run.
std::optional<Seconds> EarlierFirstStart(const Job& old, Seconds run_start) {
  if (old.first_start() && *old.first_start() < run_start) {
    return old.first_start();
  }
  return std::nullopt;
}
}  // namespace

Job MasterState::ShiftRunStart(const Job& old, Seconds run_start) const {
  const Seconds at = old.run_start();
  const std::optional<Seconds> first = EarlierFirstStart(old, at);
  Job job = BuildWaitingJob(old.spec(), first, old.Executed(at),
                            old.TotalExecuted(at),
                            first ? old.last_stop() : old.spec().submit_time,
                            old.queue());
  job.Start(run_start, old.gpus(), old.cpu_server());
  return job;
}

Job MasterState::StopRunAt(const Job& old, Seconds end) const {
  return BuildWaitingJob(old.spec(), old.first_start(), old.Executed(end),
                         old.TotalExecuted(end), end, old.queue());
}

Job MasterState::ShiftStop(const Job& old, Seconds end) const {
  const Seconds extra = end - old.last_stop();
  return BuildWaitingJob(old.spec(), old.first_start(),
                         old.Executed(old.last_stop()) + extra,
                         old.TotalExecuted(old.last_stop()) + extra, end,
                         old.queue());
}

namespace {
// `old` waiting again as if its current (or last) run, from run_start(),
// never happened: a job that never ran before is as submitted; otherwise
// it keeps `executed` and `total` and waits from `last_stop`.
Job WithoutLastRun(const Job& old, Seconds executed, Seconds total,
                   Seconds last_stop) {
  const std::optional<Seconds> first = EarlierFirstStart(old, old.run_start());
  if (!first) {
    Job job(old.spec());
    job.set_queue(old.queue());
    return job;
  }
  return BuildWaitingJob(old.spec(), first, executed, total, last_stop,
                         old.queue());
}
}  // namespace

Job MasterState::UndoRun(const Job& old, Seconds now) const {
  const Seconds at = old.run_start();
  return WithoutLastRun(old, old.Executed(at), old.TotalExecuted(at), now);
}

Job MasterState::UndoStoppedRun(const Job& old) const {
  const Seconds ran = old.last_stop() - old.run_start();
  return WithoutLastRun(old, old.Executed(old.last_stop()) - ran,
                        old.TotalExecuted(old.last_stop()) - ran,
                        old.last_stop());
}

ServerSpec MasterState::ServerSpecOf(const NodeInfo& info) {
  return ServerSpec{0,
                    info.record.gpus,
                    info.record.name,
                    info.gpu_model,
                    info.features,
                    info.cpus,
                    info.memory_mib,
                    info.spare_cpus,
                    info.spare_memory_mib};
}

bool MasterState::MapLaunchGpus(const Cluster& cluster, const Launch& launch,
                                int64_t evacuate_node,
                                std::vector<GpuId>* gpus) const {
  for (const Part& part : launch.parts) {
    auto server = server_of_node_.find(part.node_id);
    if (part.ended() || server == server_of_node_.end()) return false;
    if (part.node_id == evacuate_node) return false;
    if (launch.phase == Phase::kDeferred && cluster.cordoned(server->second)) {
      return false;
    }
    const Server& s = cluster.topology().server(server->second);
    for (int gpu : part.local_gpus) {
      if (gpu < 0 || gpu >= s.num_gpus) return false;
      gpus->push_back(s.first_gpu + gpu);
    }
  }
  return true;
}

bool MasterState::HoldLaunch(Cluster& cluster, JobId id, const JobSpec& spec,
                             const Launch& launch,
                             const std::vector<GpuId>& gpus,
                             int* server) const {
  if (static_cast<int>(gpus.size()) != spec.num_gpus) return false;
  if (!spec.cpu_only()) {
    return cluster.Allocate(id, gpus, spec.exclusive).ok();
  }
  if (launch.parts.size() != 1) return false;
  *server = server_of_node_.at(launch.parts[0].node_id);
  return cluster.AllocateSpare(*server, spec).ok();
}

absl::StatusOr<MasterState::Adoption> MasterState::AdoptOnto(
    Cluster& cluster, JobId id, Seconds now, int64_t evacuate_node) {
  JobRecord& rec = records_.at(id);
  Launch* launch = table_.Find({rec.id, rec.attempt});
  std::vector<GpuId> gpus;
  if (launch == nullptr ||
      !MapLaunchGpus(cluster, *launch, evacuate_node, &gpus)) {
    return Adoption::kIncomplete;
  }
  Job job = JobFromRecord(rec);
  int server = -1;
  if (!HoldLaunch(cluster, rec.id, job.spec(), *launch, gpus, &server)) {
    return Adoption::kConflict;
  }
  Seconds run_start = now;
  for (const Part& part : launch->parts) {
    if (part.start_time) run_start = std::min(run_start, *part.start_time);
  }
  // A launch that was still starting when the master stopped (stored
  // pending or preempted) runs from its tasks' start, never before the
  // stop its record holds.
  const bool was_starting = rec.state != JobRecordState::kRunning;
  if (was_starting) run_start = std::max(run_start, rec.last_stop_time);
  job.Start(run_start, gpus, server);
  RETURN_IF_ERROR(scheduler_->Restore(job, now));
  restart_.StopAdopting(id);
  if (was_starting) {
    // As before the restart: it runs (and says it started) once every part
    // has reported its process running, now or at a later report.
    MaybeMarkRunning(*launch, now);
  } else {
    launch->all_running = true;
  }
  AddEvent(rec.id, now, EventKind::kAdopted, table_.Describe(*launch));
  MarkDirty(rec.id);
  return Adoption::kAdopted;
}

absl::Status MasterState::JoinCluster(int64_t node_id, Seconds now,
                                      std::span<const JobId> reported) {
  // The first node, a node already there (a new agent session: its shape
  // may have changed), or VCs (their cells are bound on the whole
  // cluster): built afresh.
  // So is a cluster that its node maps do not describe (a rebuild that
  // failed midway).
  if (!cluster_ || server_of_node_.contains(node_id) || !vcs_.empty() ||
      !scheduler_->vcs().empty() ||
      node_of_server_.size() !=
          static_cast<size_t>(cluster_->topology().num_servers())) {
    return Rebuild(now);
  }
  const NodeInfo& info = *table_.FindNode(node_id);
  ASSIGN_OR_RETURN(const int server, cluster_->AddServer(ServerSpecOf(info)));
  server_of_node_[node_id] = server;
  node_of_server_.push_back(node_id);
  if (info.record.drained) cluster_->SetCordoned(server, true);
  reasons_pass_ = -1;
  scheduler_->CapacityChanged();
  // A running job keeps its GPUs (numbered as before). A job being adopted
  // can only be complete now if it has a part here, or if a rebuild found
  // its GPUs taken (tried again at each registration, as a rebuild would);
  // one whose GPUs a launch decided meanwhile holds (on paper) wins them in
  // a full rebuild.
  std::vector<JobId> candidates(reported.begin(), reported.end());
  const std::vector<JobId> conflicts = restart_.Conflicts();
  candidates.insert(candidates.end(), conflicts.begin(), conflicts.end());
  for (JobId id : candidates) {
    if (!restart_.Adopting(id)) continue;
    ASSIGN_OR_RETURN(const Adoption adoption, AdoptOnto(*cluster_, id, now, 0));
    if (adoption == Adoption::kConflict) return Rebuild(now);
  }
  return absl::OkStatus();
}

absl::Status MasterState::Rebuild(Seconds now, int64_t evacuate_node) {
  std::vector<ServerSpec> servers;
  server_of_node_.clear();
  node_of_server_.clear();
  for (const auto& [id, info] : table_.nodes()) {
    if (!info.up() || info.leaving()) continue;
    server_of_node_[id] = static_cast<int>(servers.size());
    node_of_server_.push_back(id);
    servers.push_back(ServerSpecOf(info));
  }
  std::unique_ptr<Cluster> cluster;
  if (!servers.empty()) {
    ASSIGN_OR_RETURN(Topology topology, Topology::Create(std::move(servers)));
    cluster = std::make_unique<Cluster>(std::move(topology));
    // Drained nodes stay in the cluster (what runs there keeps its GPUs)
    // but take no new job.
    for (const auto& [id, server] : server_of_node_) {
      if (table_.FindNode(id)->record.drained) {
        cluster->SetCordoned(server, true);
      }
    }
  }
  reasons_pass_ = -1;  // the cluster changed under the reasons
  scheduler_->CapacityChanged();
  // The scheduler itself holds nothing of the topology but the GPU ids of
  // running jobs: waiting jobs stay as they are (no O(jobs) re-insertion),
  // running ones are re-numbered onto the new cluster, or stopped.
  Scheduler* sched = scheduler_.get();

  // Jobs running at a master restart, once every task has been reported:
  // first, since their tasks really hold their GPUs (a launch decided
  // meanwhile on those GPUs only on paper gives way below).
  std::set<JobId> adopted;
  if (cluster) {
    for (JobId id : restart_.AdoptingJobs()) {
      ASSIGN_OR_RETURN(const Adoption adoption,
                       AdoptOnto(*cluster, id, now, evacuate_node));
      if (adoption == Adoption::kAdopted) adopted.insert(id);
      if (adoption == Adoption::kConflict) restart_.Conflict(id);
    }
  }
  // Replace only overwrites an element of jobs(), never adds one.
  for (const Job& old : scheduler_->jobs()) {
    if (!old.running() || adopted.contains(old.id())) continue;
    Launch* launch = CurrentLaunch(old.id());
    std::vector<GpuId> gpus;
    int server = -1;
    const bool keep =
        cluster && launch && launch->phase != Phase::kStopping &&
        MapLaunchGpus(*cluster, *launch, evacuate_node, &gpus) &&
        HoldLaunch(*cluster, old.id(), old.spec(), *launch, gpus, &server);
    // Kept: the counters as of its run start, then it starts again there.
    // Lost: it stops now; a launch that was never released (deferred) ran
    // no time at all.
    Job job = old;
    if (keep) {
      job = BuildWaitingJob(old.spec(), old.first_start(),
                            old.Executed(old.run_start()),
                            old.TotalExecuted(old.run_start()),
                            old.last_stop(), old.queue());
      job.Start(old.run_start(), gpus, server);
    } else if (launch && launch->phase == Phase::kDeferred) {
      table_.Erase({old.id(), launch->attempt});
      job = UndoRun(old, now);
    } else {
      if (launch && launch->phase == Phase::kActive) {
        PreemptLaunch(old.id(), now);
      }
      job = StopRunAt(old, now);
    }
    if (!keep) MarkDirty(old.id());  // stopped now: its record follows
    RETURN_IF_ERROR(sched->Replace(job, now));
  }

  cluster_ = std::move(cluster);
  // The VCs on the new cluster: cells stay bound on the same nodes, and
  // jobs adopted just now (or moved) hold their quota where they run.
  ApplyVcs(now);
  return absl::OkStatus();
}

}  // namespace tiresias
