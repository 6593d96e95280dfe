// MasterState: nodes as operators see and change them (ListNodes, drain
// and resume), and why waiting jobs wait (pending reasons on reads).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/utf8.h"
#include "master/master_state.h"
#include "master/proto_convert.h"

namespace tiresias {

bool MasterState::ReservedNode(int64_t id) const {
  auto server = server_of_node_.find(id);
  return cluster_ != nullptr && server != server_of_node_.end() &&
         cluster_->reserved(server->second);
}

v1::Node MasterState::NodeView(int64_t id, const NodeInfo& info) const {
  v1::Node node;
  NodeToProto(info.record, &node);
  std::set<JobId> jobs;
  int free = 0;
  for (const LaunchKey& key : table_.BusyGpus(id)) {
    if (key.first == 0) {
      ++free;
    } else {
      jobs.insert(key.first);
    }
  }
  // What a new job may take: nothing on a leaving or drained node, nor on
  // one an exclusive job holds.
  const bool takes_jobs =
      info.up() && !info.leaving() && !info.record.drained && !ReservedNode(id);
  node.set_gpus_free(takes_jobs ? free : 0);
  // CPU-only jobs' parts hold no GPU.
  for (const auto& [key, rank] : table_.PartsOn(id)) {
    const Launch& launch = *table_.Find(key);
    if (launch.phase != Phase::kDeferred && !launch.parts[rank].ended() &&
        launch.parts[rank].local_gpus.empty()) {
      jobs.insert(key.first);
    }
  }
  for (JobId job : jobs) node.add_job_ids(job);
  node.set_gpu_model(info.gpu_model);
  node.mutable_features()->Assign(info.features.begin(), info.features.end());
  node.set_cpus(info.cpus);
  node.set_memory_mib(info.memory_mib);
  node.set_spare_cpus(info.spare_cpus);
  node.set_spare_memory_mib(info.spare_memory_mib);
  auto server = server_of_node_.find(id);
  if (cluster_ != nullptr && server != server_of_node_.end() && takes_jobs) {
    node.set_spare_cpus_free(cluster_->spare_free_cpus(server->second));
    node.set_spare_memory_mib_free(
        cluster_->spare_free_memory_mib(server->second));
  }
  return node;
}

absl::StatusOr<std::vector<v1::Node>> MasterState::ListNodes() {
  MutexLock lock(&mu_);
  std::vector<v1::Node> out;
  for (const auto& [id, info] : table_.nodes()) {
    out.push_back(NodeView(id, info));
  }
  return out;
}

namespace {

absl::Status CheckDrainReason(const std::string& reason) {
  if (reason.empty()) {
    return absl::InvalidArgumentError(
        "reason: required: say why the node is drained (e.g. --reason "
        "\"replace GPU 3\")");
  }
  if (reason.size() > MasterState::kMaxDrainReasonBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("reason: at most ", MasterState::kMaxDrainReasonBytes,
                     " bytes, got ", reason.size()));
  }
  if (size_t bad = FirstInvalidUtf8(reason); bad != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("reason: not valid UTF-8 at byte ", bad));
  }
  for (char c : reason) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(
          "reason: control characters are not allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status UnknownNode(const std::string& name) {
  return absl::NotFoundError(absl::StrCat(
      "node ", name, ": no such node (tiresias nodes lists them)"));
}

}  // namespace

absl::StatusOr<MasterState::DrainResult> MasterState::DrainNode(
    const std::string& name, const std::string& reason, bool preempt) {
  RETURN_IF_ERROR(CheckDrainReason(reason));
  MutexLock lock(&mu_);
  NodeInfo* info = table_.FindNodeByName(name);
  if (info == nullptr) return UnknownNode(name);
  const int64_t id = info->record.id;
  const Seconds now = clock_->NowUnixSeconds();
  // Persist, then change memory.
  RETURN_IF_ERROR(store_->SetNodeDrain(id, true, reason));
  info->record.drained = true;
  info->record.drain_reason = reason;
  DrainResult result;
  if (preempt) {
    // Every job the scheduler holds running with a GPU there: Rebuild
    // preempts them (checkpoint, requeue) as if they had lost the node.
    for (const auto& [key, launch] : table_.launches()) {
      if (launch.phase == Phase::kStopping) continue;
      for (const Part& part : launch.parts) {
        if (part.node_id == id && !part.ended()) {
          result.preempted.push_back(key.first);
          break;
        }
      }
    }
  }
  RETURN_IF_ERROR(Rebuild(now, preempt ? id : 0));
  for (JobId job : result.preempted) {
    AddEvent(job, now, EventKind::kDrain,
             absl::StrCat("node ", name, " drained with preemption: ",
                          reason));
    MarkDirty(job);
  }
  pass_wanted_ = true;
  RETURN_IF_ERROR(Commit());
  QueueAdminNotification(
      "node_drain", name,
      absl::StrCat(reason.empty() ? "no reason given" : reason,
                   preempt ? " (its jobs preempted)" : ""),
      now);
  result.node = NodeView(id, *info);
  return result;
}

absl::StatusOr<v1::Node> MasterState::ResumeNode(const std::string& name) {
  MutexLock lock(&mu_);
  NodeInfo* info = table_.FindNodeByName(name);
  if (info == nullptr) return UnknownNode(name);
  const int64_t id = info->record.id;
  if (info->record.drained) {
    RETURN_IF_ERROR(store_->SetNodeDrain(id, false, ""));
    info->record.drained = false;
    info->record.drain_reason.clear();
    RETURN_IF_ERROR(Rebuild(clock_->NowUnixSeconds()));
    pass_wanted_ = true;
    RETURN_IF_ERROR(Commit());
  }
  return NodeView(id, *info);
}

void MasterState::FillPendingReason(JobRecord& rec, Seconds now) const {
  rec.pending_reason.clear();
  rec.pending_reason_kind = 0;
  if (std::optional<PendingReason> reason = PendingReasonOf(rec, now)) {
    rec.pending_reason = FormatPendingReason(*reason);
    rec.pending_reason_kind = static_cast<int>(reason->kind);
  }
}

std::optional<PendingReason> MasterState::PendingReasonOf(const JobRecord& rec,
                                                          Seconds now) const {
  PendingReason reason;
  if (rec.state == JobRecordState::kStarting) {
    const Launch* launch = table_.Find({rec.id, rec.attempt});
    if (launch == nullptr || launch->phase != Phase::kDeferred) {
      return std::nullopt;
    }
    // Deferred: its GPUs are still held by the stopping tasks of another
    // launch (a preemption's checkpoint), or of its own previous one.
    reason.kind = PendingReasonKind::kCheckpointing;
    reason.blocker = rec.id;
    reason.own_launch = true;
    for (const Part& part : launch->parts) {
      const std::vector<LaunchKey> busy = table_.BusyGpus(part.node_id);
      for (int gpu : part.local_gpus) {
        if (gpu < 0 || gpu >= static_cast<int>(busy.size())) continue;
        const JobId holder = busy[gpu].first;
        if (holder != 0 && holder != rec.id) {
          reason.blocker = holder;
          reason.own_launch = false;
        }
      }
    }
  } else if (rec.held) {
    // Out of the scheduler's sets while held (Scheduler::Hold).
    reason.kind = PendingReasonKind::kHeld;
  } else if (const DependencyCheck* wait = deps_.WaitOf(rec.id);
             wait != nullptr && wait->index < rec.spec.dependencies.size()) {
    // Held in the scheduler too, until its dependencies are met. The
    // check indexes the record's own (never changing) dependencies.
    const DependencyCheck& check = *wait;
    const JobDependency& first = rec.spec.dependencies[check.index];
    reason.kind = PendingReasonKind::kDependency;
    reason.blocker = first.job_id;
    reason.dependency = first.kind;
    reason.unmet = check.unmet;
  } else if (WaitsForBegin(rec)) {
    // Held in the scheduler until its begin time (ReleaseDueBegins).
    reason.kind = PendingReasonKind::kBeginTime;
    reason.begin_in = (rec.spec.begin - now).count();
  } else if (WaitsForArraySlot(rec)) {
    // Held in the scheduler until a job of its array frees a slot.
    const ArraySlotTable::Slots& slots = *array_slots_.Find(rec.array_id);
    reason.kind = PendingReasonKind::kArrayLimit;
    reason.blocker = rec.array_id;
    reason.ahead = static_cast<int>(slots.holding.size());
    reason.capacity = slots.max_running;
  } else if (rec.state == JobRecordState::kPending ||
             rec.state == JobRecordState::kPreempted) {
    if (reasons_pass_ != passes_) {
      reasons_.clear();
      if (cluster_) {
        for (auto& [id, r] : ExplainWaiting(*scheduler_, *cluster_)) {
          reasons_.emplace(id, r);
        }
      }
      reasons_pass_ = passes_;
    }
    auto it = reasons_.find(rec.id);
    // Not there: it came (or came back) after the last pass.
    if (!cluster_) {
      reason.kind = PendingReasonKind::kNoNodes;
    } else if (it != reasons_.end()) {
      reason = it->second;
    } else {
      reason.kind = PendingReasonKind::kNextPass;
    }
  } else {
    return std::nullopt;
  }
  return reason;
}

}  // namespace tiresias
