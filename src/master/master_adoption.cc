// MasterState: adopting after a restart. The jobs that were running when
// the master stopped are adopted from what re-registering agents report
// (no new start), given up when a node comes back without its part, and
// stopped where found when the adoption window (the node timeout) ends;
// jobs cancelled before the restart end once their nodes have reported.
// The agent protocol itself: master_agents.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "master/master_state.h"

namespace tiresias {

void MasterState::AdoptOrOrphan(int64_t node_id, const v1::TaskStatus& task,
                                Seconds now) {
  const JobId job = task.task().job_id();
  const int attempt = task.task().attempt();
  const int rank = task.task().rank();
  const LaunchKey key{job, attempt};
  const std::string node_name = table_.NodeName(node_id);
  auto rec = records_.find(job);
  if (!restart_.Adopting(job) || rec == records_.end() ||
      rec->second.attempt != attempt || rank < 0 ||
      rank >= static_cast<int>(rec->second.nodes.size()) ||
      rec->second.nodes[rank] != node_name) {
    return;  // not a part of a launch being re-adopted: Reconcile decides
  }
  const int ranks = static_cast<int>(rec->second.nodes.size());
  Launch& launch = table_.Adopted(key, ranks);
  if (launch.first_port == 0) {
    // Its ports are not stored: taken to be the default ones (a launch
    // that had moved past another's keeps its real ones unknown), so that
    // a new launch on its nodes moves past them.
    const JobRequest& spec = rec->second.spec;
    launch.first_port = DefaultPort(key);
    launch.port_span = spec.tasks_per_node > 0 ? spec.tasks_per_node * ranks
                                               : std::max(spec.num_gpus, ranks);
  }
  if (launch.parts[rank].node_id != 0) return;
  // Ended tasks of a running job are adopted as running too; Reconcile then
  // accounts for their end. A launch that was still starting runs only
  // where a report says its process ran (a task still starting, or whose
  // spawn failed, is left to Reconcile as before the restart).
  Part& part = table_.PlacePart(launch, rank, node_id);
  part.local_gpus.assign(task.gpu_indexes().begin(), task.gpu_indexes().end());
  if (rec->second.state == JobRecordState::kRunning ||
      LaunchTable::ShowsRun(task)) {
    part.MarkRunning(task.has_start_time() ? Seconds{task.start_time()} : now);
  }
  table_.TouchNode(node_id);
}

void MasterState::GiveUpAdoptionsOn(int64_t node_id,
                                    const std::set<LaunchKey>& reported,
                                    Seconds now) {
  const std::string node_name = table_.NodeName(node_id);
  const std::vector<JobId> ids = restart_.AdoptingOn(node_name);
  std::vector<std::pair<JobId, int>> missing;  // job, its rank here
  for (JobId id : ids) {
    const JobRecord& rec = records_.at(id);
    if (reported.contains({id, rec.attempt})) continue;
    for (size_t rank = 0; rank < rec.nodes.size(); ++rank) {
      if (rec.nodes[rank] == node_name) {
        missing.emplace_back(id, static_cast<int>(rank));
        break;
      }
    }
  }
  for (const auto& [id, rank] : missing) {
    JobRecord& rec = records_.at(id);
    if (rec.state != JobRecordState::kRunning && rec.nodes.size() == 1) {
      restart_.StopAdopting(id);
      AddEvent(id, now, EventKind::kRequeued,
               absl::StrCat("attempt ", rec.attempt, ": ", node_name,
                            " registered after a master restart without its "
                            "task, which had not started"));
      MarkDirty(id);
      // Loaded just now and kept out of the scheduler while adopted:
      // Restore fails only on a duplicate.
      scheduler_->Restore(JobFromRecord(rec), now).IgnoreError();
      pass_wanted_ = true;
      continue;
    }
    StopAdopting(id, now,
                 absl::StrCat(node_name,
                              " registered after a master restart without "
                              "its rank ",
                              rank, " task"));
  }
}

void MasterState::StopAdopting(JobId id, Seconds now, const std::string& why) {
  JobRecord& rec = records_.at(id);
  // A launch that was still starting (stored pending or preempted) had not
  // run: as OnSystemStop says of one, no preemption is counted.
  const bool ran = rec.state == JobRecordState::kRunning;
  Launch* launch = table_.Find({id, rec.attempt});
  if (!restart_.closed()) {
    // Its ranks on nodes not heard from yet may still run until their
    // agents' leases lapse: the next attempt waits for those nodes, or for
    // the window's end (EarlierAttemptMayRun). The parts are done with.
    std::set<std::string> unheard;
    for (size_t rank = 0; rank < rec.nodes.size(); ++rank) {
      if (launch == nullptr || rank >= launch->parts.size() ||
          launch->parts[rank].node_id == 0) {
        unheard.insert(rec.nodes[rank]);
      }
    }
    if (launch != nullptr) {
      for (Part& part : launch->parts) {
        if (part.node_id == 0) part.MarkEnded();
      }
    }
    restart_.Fence(id, std::move(unheard));  // if not empty
  }
  if (launch != nullptr && launch->phase == Phase::kActive) {
    table_.Stop(*launch, v1::STOP_REASON_PREEMPT);
    launch->preemption_counted = ran;
  }
  if (ran) {
    MoveJob(rec, JobRecordState::kPreempted);
    rec.last_stop_time = now;
    ++rec.preemptions;
  } else {
    MoveJob(rec, rec.first_start_time ? JobRecordState::kPreempted
                                      : JobRecordState::kPending);
  }
  AddEvent(id, now, EventKind::kPreempted,
           absl::StrCat("attempt ", rec.attempt, ": ", why,
                        ran ? "" : " (while starting: it had not run yet)"));
  MarkDirty(id);
  restart_.StopAdopting(id);
  // The record was just reloaded from the store; Restore fails only on a
  // duplicate, and an adopting job is not in the scheduler.
  scheduler_->Restore(JobFromRecord(rec), now).IgnoreError();
  pass_wanted_ = true;
  // Nothing of it left running: done with (at the window's end, all such
  // launches are, below).
  if (launch != nullptr && !restart_.closed() && launch->AllEnded()) {
    table_.Erase({id, rec.attempt});
  }
}

void MasterState::FinishRestartCancels(Seconds now) {
  for (JobId id : restart_.CancellingJobs()) {
    std::set<std::string>* nodes = restart_.CancelNodesOf(id);
    if (nodes == nullptr) continue;  // ended meanwhile (nothing does so now)
    table_.EraseUpNodes(nodes);      // those up have reported in
    auto rec = records_.find(id);
    const bool heard_all = nodes->empty() || restart_.closed();
    if (rec == records_.end() || IsFinal(rec->second.state)) {
      restart_.EndCancel(id);
    } else if (heard_all && !table_.HasOrphans(id)) {
      const bool timeout = rec->second.timeout_requested;
      Finalize(rec->second,
               timeout ? JobRecordState::kTimeout : JobRecordState::kCancelled,
               now, std::nullopt,
               timeout ? "its tasks stopped (at its time limit, before a "
                         "master restart)"
                       : "its tasks stopped (cancelled before a master "
                         "restart)");
      restart_.EndCancel(id);
    }
  }
}

void MasterState::EndAdoptionWindow(Seconds now) {
  const std::vector<JobId> unadopted = restart_.Close();
  // A part whose node never reported in is fenced by now (its agent's lease
  // lapsed within the node timeout of the restart): it has ended.
  table_.EndUnadoptedParts();
  for (JobId id : unadopted) {
    StopAdopting(id, now,
                 "not re-adopted within the node timeout after a master "
                 "restart");
  }
  // Launches whose every part has now ended are done with.
  std::vector<LaunchKey> done;
  for (const auto& [key, launch] : table_.launches()) {
    if (launch.phase != Phase::kDeferred && launch.AllEnded()) {
      done.push_back(key);
    }
  }
  for (const LaunchKey& key : done) {
    const bool cancelling =
        table_.Find(key)->stop_reason == v1::STOP_REASON_CANCEL;
    table_.Erase(key);
    if (cancelling) MaybeFinishCancel(key.first, now, "its tasks stopped");
  }
}

}  // namespace tiresias
