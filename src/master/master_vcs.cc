// MasterState: virtual clusters (teams). Admins set them (durable in the
// store, audited by the Admin service; checked by VcRegistry); the
// scheduler gets them, with a cell-less VC "" for jobs that have none,
// whenever they or the cluster change (ChangeVcs: running jobs are adopted
// into their quota where they run); submissions are given their user's VC
// and refused outside it.
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::LoadVcs() {
  ASSIGN_OR_RETURN(std::vector<VcRecord> vcs, store_->ListVcs());
  return vcs_.Load(std::move(vcs));
}

void MasterState::ApplyVcs(Seconds now) {
  if (!cluster_ || (vcs_.empty() && scheduler_->vcs().empty())) return;
  absl::Status changed =
      scheduler_->ChangeVcs(vcs_.SchedulerVcs(), cluster_->topology(), now);
  if (!changed.ok()) {
    // Every job's VC is in the list (VcRegistry::SchedulerName): an
    // invariant.
    std::fprintf(stderr, "tiresias master: virtual clusters not applied: %s\n",
                 std::string(changed.message()).c_str());
  }
  reasons_pass_ = -1;
  pass_wanted_ = true;
}

absl::Status MasterState::SetVc(VcRecord vc, bool create,
                                const std::optional<VcRecord>& expected) {
  MutexLock lock(&mu_);
  if (expected && !create) {
    auto now = vcs_.records().find(vc.name);
    if (now != vcs_.records().end() && !(now->second == *expected)) {
      return absl::AbortedError(absl::StrCat(
          "virtual cluster \"", vc.name,
          "\" was changed by someone else meanwhile: read it again and "
          "redo the change"));
    }
  }
  // Every VC's quota at once must fit the registered nodes (down ones
  // too: a node in maintenance comes back), so each can always get its
  // own; with no node registered yet, the first to come are checked.
  std::vector<ServerSpec> servers;
  for (const auto& [id, node] : table_.nodes()) {
    if (node.record.gpus > 0) {
      servers.push_back(ServerSpec{0, node.record.gpus, node.record.name});
    }
  }
  std::optional<Topology> registered;
  if (!servers.empty()) {
    ASSIGN_OR_RETURN(registered, Topology::Create(std::move(servers)));
  }
  ASSIGN_OR_RETURN(
      VcSpec spec,
      vcs_.CheckSet(vc, create, registered ? &*registered : nullptr));
  RETURN_IF_ERROR(store_->PutVc(vc));
  vcs_.Put(std::move(vc), std::move(spec));
  ApplyVcs(clock_->NowUnixSeconds());
  return absl::OkStatus();
}

absl::Status MasterState::RemoveVc(const std::string& name) {
  MutexLock lock(&mu_);
  if (!vcs_.contains(name)) {
    return absl::NotFoundError(
        absl::StrCat("virtual cluster \"", name, "\": no such VC"));
  }
  int count = 0;
  JobId example = 0;
  for (const auto& [id, rec] : records_) {
    if (IsFinal(rec.state) || rec.spec.vc != name) continue;
    if (count++ == 0) example = id;
  }
  // Arrays' jobs not written yet are unfinished jobs too.
  for (const auto& [array_id, a] : splits_.arrays()) {
    if (a.vc != name) continue;
    if (count == 0) example = array_id + a.split;
    count += a.count - a.split;
  }
  if (count > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("virtual cluster \"", name, "\" has ", count,
                     " unfinished job(s) (job ", example,
                     " first); cancel them or wait until they end"));
  }
  RETURN_IF_ERROR(store_->RemoveVc(name));
  vcs_.Remove(name);
  ApplyVcs(clock_->NowUnixSeconds());
  return absl::OkStatus();
}

absl::Status MasterState::ResolveVc(JobRequest& spec, bool admin,
                                    std::string_view field) {
  MutexLock lock(&mu_);
  return vcs_.Resolve(spec, admin, field);
}

std::vector<MasterState::VcView> MasterState::ListVcs() {
  MutexLock lock(&mu_);
  std::vector<VcView> views;
  if (vcs_.records().empty()) return views;
  const std::vector<VcSpec>& sched = scheduler_->vcs();
  // Running and waiting jobs per VC, in one pass over the unfinished jobs.
  std::map<std::string_view, std::pair<int, int>> jobs;
  for (const auto& [id, rec] : records_) {
    if (IsFinal(rec.state)) continue;
    const Job* job = scheduler_->Find(id);
    auto& [running, waiting] = jobs[rec.spec.vc];
    ++(job != nullptr && job->running() ? running : waiting);
  }
  // Arrays' jobs not written yet wait too.
  for (const auto& [array_id, a] : splits_.arrays()) {
    jobs[a.vc].second += a.count - a.split;
  }
  for (const auto& [name, vc] : vcs_.records()) {
    VcView view;
    view.vc = vc;
    view.quota_gpus = vcs_.QuotaGpus(name);
    int v = -1;
    for (size_t i = 0; i < sched.size(); ++i) {
      if (sched[i].name == name) v = static_cast<int>(i);
    }
    if (v >= 0 && cluster_) {
      const Scheduler::VcUsage usage = scheduler_->Usage(v);
      view.guaranteed_gpus = usage.guaranteed;
      view.borrowed_gpus = usage.borrowed;
      const Topology& topology = cluster_->topology();
      for (const PhysicalCell& cell : scheduler_->BoundCells(v)) {
        if (cell.server < 0) continue;
        view.bound_cells.push_back(
            absl::StrCat(topology.server(cell.server).name, ":", cell.offset,
                         "-", cell.offset + cell.size - 1));
      }
    }
    if (auto it = jobs.find(name); it != jobs.end()) {
      std::tie(view.running_jobs, view.waiting_jobs) = it->second;
    }
    views.push_back(std::move(view));
  }
  return views;
}

bool MasterState::Borrowing(JobId id) const {
  if (scheduler_->vcs().empty()) return false;
  const Job* job = scheduler_->Find(id);
  return job != nullptr && job->running() && !job->cpu_only() &&
         !scheduler_->Guaranteed(id);
}

}  // namespace tiresias
