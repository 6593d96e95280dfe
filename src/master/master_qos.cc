// MasterState: priority levels (QOS). Admins set them (durable in the
// store, audited by the Admin service; checked by QosRegistry); the
// scheduler gets them whenever they change (Scheduler::SetQos re-keys
// every unfinished job); submissions are refused a QOS their user may not
// use, and --no-preempt without one that allows it.
#include <algorithm>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

absl::Status MasterState::LoadQos() {
  ASSIGN_OR_RETURN(std::vector<QosRecord> qos, store_->ListQos());
  RETURN_IF_ERROR(qos_.Load(std::move(qos)));
  if (qos_.records().empty()) return absl::OkStatus();
  return scheduler_->SetQos(qos_.SchedulerQos(), clock_->NowUnixSeconds());
}

absl::Status MasterState::SetQos(QosRecord qos, bool create,
                                 const std::optional<QosRecord>& expected) {
  MutexLock lock(&mu_);
  if (expected && !create) {
    auto now = qos_.records().find(qos.name);
    if (now != qos_.records().end() && !(now->second == *expected)) {
      return absl::AbortedError(absl::StrCat(
          "QOS \"", qos.name,
          "\" was changed by someone else meanwhile: read it again and redo "
          "the change"));
    }
  }
  RETURN_IF_ERROR(qos_.CheckSet(qos, create));
  RETURN_IF_ERROR(store_->PutQos(qos));
  qos_.Put(std::move(qos));
  RETURN_IF_ERROR(
      scheduler_->SetQos(qos_.SchedulerQos(), clock_->NowUnixSeconds()));
  reasons_pass_ = -1;
  pass_wanted_ = true;
  return absl::OkStatus();
}

absl::Status MasterState::RemoveQos(const std::string& name) {
  MutexLock lock(&mu_);
  if (!qos_.contains(name)) {
    return absl::NotFoundError(absl::StrCat("QOS \"", name, "\": no such QOS"));
  }
  int count = 0;
  JobId example = 0;
  for (const auto& [id, rec] : records_) {
    if (IsFinal(rec.state) || rec.spec.qos != name) continue;
    if (count++ == 0) example = id;
  }
  // Arrays' jobs not written yet are unfinished jobs too.
  for (const auto& [array_id, a] : splits_.arrays()) {
    if (a.qos != name) continue;
    if (count == 0) example = array_id + a.split;
    count += a.count - a.split;
  }
  if (count > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "QOS \"", name, "\" has ", count, " unfinished job(s) (job ", example,
        " first); cancel them or wait until they end"));
  }
  RETURN_IF_ERROR(store_->RemoveQos(name));
  qos_.Remove(name);
  RETURN_IF_ERROR(
      scheduler_->SetQos(qos_.SchedulerQos(), clock_->NowUnixSeconds()));
  reasons_pass_ = -1;
  pass_wanted_ = true;
  return absl::OkStatus();
}

absl::Status MasterState::ResolveQos(const JobRequest& spec, bool admin,
                                     std::string_view field) {
  MutexLock lock(&mu_);
  return qos_.Resolve(spec, admin, options_.no_preempt_users, field);
}

std::vector<MasterState::QosView> MasterState::ListQos() {
  MutexLock lock(&mu_);
  std::vector<QosView> views;
  if (qos_.records().empty()) return views;
  std::map<std::string_view, QosView*> by_name;
  for (const auto& [name, qos] : qos_.records()) {
    views.push_back(QosView{.qos = qos});
  }
  for (QosView& view : views) by_name[view.qos.name] = &view;
  // One pass over the unfinished jobs.
  for (const auto& [id, rec] : records_) {
    if (IsFinal(rec.state) || rec.spec.qos.empty()) continue;
    auto it = by_name.find(rec.spec.qos);
    if (it == by_name.end()) continue;
    const Job* job = scheduler_->Find(id);
    if (job != nullptr && job->running()) {
      ++it->second->running_jobs;
      it->second->gpus += job->num_gpus();
    } else {
      ++it->second->waiting_jobs;
    }
  }
  // Arrays' jobs not written yet wait too.
  for (const auto& [array_id, a] : splits_.arrays()) {
    if (auto it = by_name.find(a.qos); it != by_name.end()) {
      it->second->waiting_jobs += a.count - a.split;
    }
  }
  std::stable_sort(views.begin(), views.end(),
                   [](const QosView& a, const QosView& b) {
                     return a.qos.priority > b.qos.priority;
                   });
  return views;
}

}  // namespace tiresias
