#include "master/fault_store.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tiresias {

std::string_view StoreWriteKindName(StoreWriteKind kind) {
  switch (kind) {
    case StoreWriteKind::kCreateJobs:
      return "CreateJobs";
    case StoreWriteKind::kWrite:
      return "Write";
    case StoreWriteKind::kUpsertNode:
      return "UpsertNode";
    case StoreWriteKind::kSetNodeDrain:
      return "SetNodeDrain";
    case StoreWriteKind::kCreateToken:
      return "CreateToken";
    case StoreWriteKind::kRevokeToken:
      return "RevokeToken";
    case StoreWriteKind::kAppendAudit:
      return "AppendAudit";
    case StoreWriteKind::kSaveProfile:
      return "SaveProfile";
    case StoreWriteKind::kAddPlacementRun:
      return "AddPlacementRun";
    case StoreWriteKind::kAddClusterSample:
      return "AddClusterSample";
    case StoreWriteKind::kPutVc:
      return "PutVc";
    case StoreWriteKind::kPutQos:
      return "PutQos";
    case StoreWriteKind::kPutSetting:
      return "PutSetting";
  }
  return "?";
}

void StoreFaults::FailNth(int64_t n, Effect effect) {
  MutexLock lock(&mu_);
  fail_at_ = {writes_ + n, effect};
}

void StoreFaults::FailEvery(StoreWriteKind kind, Effect effect) {
  MutexLock lock(&mu_);
  fail_every_[kind] = effect;
}

void StoreFaults::Heal() {
  MutexLock lock(&mu_);
  fail_at_.reset();
  fail_every_.clear();
}

void StoreFaults::SetAfterWrite(
    std::function<void(int64_t, StoreWriteKind)> hook) {
  MutexLock lock(&mu_);
  after_write_ = std::move(hook);
}

int64_t StoreFaults::writes() const {
  MutexLock lock(&mu_);
  return writes_;
}

int64_t StoreFaults::failures() const {
  MutexLock lock(&mu_);
  return failures_;
}

std::vector<StoreWriteKind> StoreFaults::history() const {
  MutexLock lock(&mu_);
  return history_;
}

std::optional<StoreFaults::Effect> StoreFaults::Next(StoreWriteKind kind) {
  MutexLock lock(&mu_);
  ++writes_;
  history_.push_back(kind);
  std::optional<Effect> effect;
  if (fail_at_ && fail_at_->first == writes_) {
    effect = fail_at_->second;
    fail_at_.reset();
  } else if (auto it = fail_every_.find(kind); it != fail_every_.end()) {
    effect = it->second;
  }
  if (effect) ++failures_;
  return effect;
}

void StoreFaults::AfterWrite(StoreWriteKind kind) {
  std::function<void(int64_t, StoreWriteKind)> hook;
  int64_t n = 0;
  {
    MutexLock lock(&mu_);
    hook = after_write_;
    n = writes_;
  }
  if (hook) hook(n, kind);
}

absl::Status StoreFaults::InjectedError(StoreWriteKind kind) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("injected fault: ", std::string(StoreWriteKindName(kind)),
                   ": database or disk is full"));
}

FaultStore::FaultStore(std::unique_ptr<Store> inner,
                       std::shared_ptr<StoreFaults> faults)
    : inner_(std::move(inner)), faults_(std::move(faults)) {}

template <typename Result, typename Fn>
Result FaultStore::Apply(StoreWriteKind kind, Fn write) {
  const std::optional<StoreFaults::Effect> effect = faults_->Next(kind);
  if (!effect) {
    Result result = write();
    faults_->AfterWrite(kind);
    return result;
  }
  if (*effect == StoreFaults::Effect::kAppliedThenFailed) {
    // Its answer, whatever it was, is lost with the acknowledgement.
    write().IgnoreError();
  }
  return faults_->InjectedError(kind);
}

absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> FaultStore::CreateJobs(
    const std::vector<NewJob>& jobs, Seconds submit_time) {
  return Apply<absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>>>(
      StoreWriteKind::kCreateJobs,
      [&] { return inner_->CreateJobs(jobs, submit_time); });
}

absl::StatusOr<std::vector<CreatedJob>> FaultStore::CreateJobsAllOrNothing(
    const std::vector<NewJob>& jobs, Seconds submit_time) {
  return Apply<absl::StatusOr<std::vector<CreatedJob>>>(
      StoreWriteKind::kCreateJobs,
      [&] { return inner_->CreateJobsAllOrNothing(jobs, submit_time); });
}

absl::StatusOr<std::vector<JobRecord>> FaultStore::SplitArray(JobId array_id,
                                                              int from,
                                                              int split_to) {
  return Apply<absl::StatusOr<std::vector<JobRecord>>>(
      StoreWriteKind::kCreateJobs,
      [&] { return inner_->SplitArray(array_id, from, split_to); });
}

absl::Status FaultStore::Write(const StoreWrite& write) {
  return Apply<absl::Status>(StoreWriteKind::kWrite,
                             [&] { return inner_->Write(write); });
}

absl::StatusOr<int64_t> FaultStore::UpsertNode(const NodeRecord& node) {
  return Apply<absl::StatusOr<int64_t>>(
      StoreWriteKind::kUpsertNode, [&] { return inner_->UpsertNode(node); });
}

absl::Status FaultStore::SetNodeDrain(int64_t id, bool drained,
                                      const std::string& reason) {
  return Apply<absl::Status>(StoreWriteKind::kSetNodeDrain, [&] {
    return inner_->SetNodeDrain(id, drained, reason);
  });
}

absl::StatusOr<int64_t> FaultStore::CreateToken(const TokenRecord& token) {
  return Apply<absl::StatusOr<int64_t>>(
      StoreWriteKind::kCreateToken, [&] { return inner_->CreateToken(token); });
}

absl::Status FaultStore::RevokeToken(int64_t id, Seconds at) {
  return Apply<absl::Status>(StoreWriteKind::kRevokeToken,
                             [&] { return inner_->RevokeToken(id, at); });
}

absl::Status FaultStore::PutVc(const VcRecord& vc) {
  return Apply<absl::Status>(StoreWriteKind::kPutVc,
                             [&] { return inner_->PutVc(vc); });
}

absl::Status FaultStore::RemoveVc(const std::string& name) {
  return Apply<absl::Status>(StoreWriteKind::kPutVc,
                             [&] { return inner_->RemoveVc(name); });
}

absl::Status FaultStore::PutQos(const QosRecord& qos) {
  return Apply<absl::Status>(StoreWriteKind::kPutQos,
                             [&] { return inner_->PutQos(qos); });
}

absl::Status FaultStore::PutSetting(const std::string& name,
                                    const std::string& bytes) {
  return Apply<absl::Status>(StoreWriteKind::kPutSetting,
                             [&] { return inner_->PutSetting(name, bytes); });
}

absl::Status FaultStore::RemoveQos(const std::string& name) {
  return Apply<absl::Status>(StoreWriteKind::kPutQos,
                             [&] { return inner_->RemoveQos(name); });
}

absl::Status FaultStore::AppendAudit(const AuditRecord& record) {
  return Apply<absl::Status>(StoreWriteKind::kAppendAudit,
                             [&] { return inner_->AppendAudit(record); });
}

absl::Status FaultStore::SaveProfile(JobId job, const std::string& signature,
                                     const JobProfile& profile) {
  return Apply<absl::Status>(StoreWriteKind::kSaveProfile, [&] {
    return inner_->SaveProfile(job, signature, profile);
  });
}

absl::Status FaultStore::AddPlacementRun(const PlacementRunRecord& run) {
  return Apply<absl::Status>(StoreWriteKind::kAddPlacementRun,
                             [&] { return inner_->AddPlacementRun(run); });
}

absl::Status FaultStore::AddClusterSample(const ClusterSample& sample,
                                          const HistoryRetention& retention) {
  return Apply<absl::Status>(StoreWriteKind::kAddClusterSample, [&] {
    return inner_->AddClusterSample(sample, retention);
  });
}

}  // namespace tiresias
