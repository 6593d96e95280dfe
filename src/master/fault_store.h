// A Store that fails on purpose, for tests: FaultStore wraps a real Store
// and makes chosen writes fail as a full disk would (ResourceExhausted),
// so that a test can check what the master does when a write does not
// reach the disk (LevelDB's fault_injection_test does the same for its
// Env).
//
//   auto faults = std::make_shared<StoreFaults>();
//   faults->FailNth(3);                       // the 3rd write from now
//   faults->FailEvery(StoreWriteKind::kWrite);  // every job change
//   ASSIGN_OR_RETURN(auto sqlite, SqliteStore::Open(path));
//   auto master = MasterState::Open(
//       options, &clock,
//       std::make_unique<FaultStore>(std::move(sqlite), faults));
//
// A write is one call of a Store method that changes the store (the
// StoreWriteKind list); reads always pass through. What a failed write
// leaves in the inner store is the fault's Effect: kNotApplied (the inner
// store is not called: a transaction that did not commit) or
// kAppliedThenFailed (the inner store commits, then the caller gets the
// error: an acknowledgement lost on the way, as when the fsync of a commit
// fails after its pages reached the disk).
//
// StoreFaults is shared, so that it outlives a master and carries its
// count over to the FaultStore of the master reopened after a restart.
// Both classes are thread-safe.
#ifndef TIRESIAS_MASTER_FAULT_STORE_H_
#define TIRESIAS_MASTER_FAULT_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "master/store.h"

namespace tiresias {

// Every Store method that writes.
enum class StoreWriteKind {
  kCreateJobs,  // CreateJobs, CreateJobsAllOrNothing and SplitArray
  kWrite,       // job changes, events and launch records (Commit)
  kUpsertNode,
  kSetNodeDrain,
  kCreateToken,
  kRevokeToken,
  kAppendAudit,
  kSaveProfile,
  kAddPlacementRun,
  kAddClusterSample,
  kPutVc,   // PutVc and RemoveVc
  kPutQos,  // PutQos and RemoveQos
  kPutSetting,
};
// "CreateJobs", "Write", ...: the method's name.
std::string_view StoreWriteKindName(StoreWriteKind kind);

// Which writes fail, and a count of every write seen.
class StoreFaults {
 public:
  enum class Effect { kNotApplied, kAppliedThenFailed };

  // The `n`th write from now on (1: the next one), of any kind, fails once.
  // Replaces an earlier FailNth not yet reached.
  void FailNth(int64_t n, Effect effect = Effect::kNotApplied);
  // Every write of `kind` fails, until Heal.
  void FailEvery(StoreWriteKind kind, Effect effect = Effect::kNotApplied);
  // No write fails any more.
  void Heal();

  // Called after each write that succeeded (with its number, counted as
  // writes() counts), outside this object's lock and after the inner store
  // returned: a test may read the inner store there.
  void SetAfterWrite(std::function<void(int64_t, StoreWriteKind)> hook);

  int64_t writes() const;    // writes seen, failed ones included
  int64_t failures() const;  // writes failed on purpose
  // The kind of every write seen, in order.
  std::vector<StoreWriteKind> history() const;

  // For FaultStore: counts a write of `kind` and says whether it fails, and
  // how. The error a failed write returns.
  std::optional<Effect> Next(StoreWriteKind kind);
  void AfterWrite(StoreWriteKind kind);
  absl::Status InjectedError(StoreWriteKind kind) const;

 private:
  mutable Mutex mu_;
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  // Absolute number.
  std::optional<std::pair<int64_t, Effect>> fail_at_ ABSL_GUARDED_BY(mu_);
  std::map<StoreWriteKind, Effect> fail_every_ ABSL_GUARDED_BY(mu_);
  std::vector<StoreWriteKind> history_ ABSL_GUARDED_BY(mu_);
  std::function<void(int64_t, StoreWriteKind)> after_write_
      ABSL_GUARDED_BY(mu_);
};

class FaultStore final : public Store {
 public:
  FaultStore(std::unique_ptr<Store> inner, std::shared_ptr<StoreFaults> faults);

  // The wrapped store, for a test's own reads (and writes: not counted).
  Store& inner() { return *inner_; }

  absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> CreateJobs(
      const std::vector<NewJob>& jobs, Seconds submit_time) override;
  absl::StatusOr<std::vector<CreatedJob>> CreateJobsAllOrNothing(
      const std::vector<NewJob>& jobs, Seconds submit_time) override;
  absl::Status Write(const StoreWrite& write) override;
  // Counted as kCreateJobs: it writes an array's jobs.
  absl::StatusOr<std::vector<JobRecord>> SplitArray(JobId array_id, int from,
                                                    int split_to) override;
  absl::StatusOr<int64_t> UpsertNode(const NodeRecord& node) override;
  absl::Status SetNodeDrain(int64_t id, bool drained,
                            const std::string& reason) override;
  absl::StatusOr<int64_t> CreateToken(const TokenRecord& token) override;
  absl::Status RevokeToken(int64_t id, Seconds at) override;
  absl::Status AppendAudit(const AuditRecord& record) override;
  absl::Status SaveProfile(JobId job, const std::string& signature,
                           const JobProfile& profile) override;
  absl::Status AddPlacementRun(const PlacementRunRecord& run) override;
  absl::Status AddClusterSample(const ClusterSample& sample,
                                const HistoryRetention& retention) override;
  absl::Status PutVc(const VcRecord& vc) override;
  absl::Status RemoveVc(const std::string& name) override;
  absl::Status PutQos(const QosRecord& qos) override;
  absl::Status RemoveQos(const std::string& name) override;
  absl::Status PutSetting(const std::string& name,
                          const std::string& bytes) override;
  absl::StatusOr<std::optional<std::string>> GetSetting(
      const std::string& name) const override {
    return inner_->GetSetting(name);
  }

  // Reads: the inner store's.
  absl::StatusOr<JobRecord> GetJob(JobId id) const override {
    return inner_->GetJob(id);
  }
  absl::StatusOr<JobPage> QueryJobs(const JobQuery& query) const override {
    return inner_->QueryJobs(query);
  }
  absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() const override {
    return inner_->ListUnfinishedJobs();
  }
  absl::StatusOr<std::vector<JobRecord>> ListSplittingArrays() const override {
    return inner_->ListSplittingArrays();
  }
  absl::StatusOr<std::vector<JobEvent>> Events(JobId job) const override {
    return inner_->Events(job);
  }
  absl::StatusOr<std::vector<JobEvent>> EventsAfter(int64_t after_sequence,
                                                    int limit) const override {
    return inner_->EventsAfter(after_sequence, limit);
  }
  absl::StatusOr<JobTotals> Totals() const override { return inner_->Totals(); }
  absl::StatusOr<std::vector<std::string>> LaunchNodes(
      JobId job, int attempt) const override {
    return inner_->LaunchNodes(job, attempt);
  }
  absl::StatusOr<std::vector<NodeRecord>> ListNodes() const override {
    return inner_->ListNodes();
  }
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() const override {
    return inner_->ListTokens();
  }
  absl::StatusOr<std::vector<AuditRecord>> AuditAfter(
      int64_t after, int limit) const override {
    return inner_->AuditAfter(after, limit);
  }
  absl::StatusOr<std::vector<PlacementRunRecord>> ListPlacementRuns()
      const override {
    return inner_->ListPlacementRuns();
  }
  absl::StatusOr<std::vector<VcRecord>> ListVcs() const override {
    return inner_->ListVcs();
  }
  absl::StatusOr<std::vector<QosRecord>> ListQos() const override {
    return inner_->ListQos();
  }
  absl::StatusOr<std::vector<ClusterSample>> ClusterHistory(
      Seconds since, Seconds until) const override {
    return inner_->ClusterHistory(since, until);
  }
  const std::string& cluster_id() const override {
    return inner_->cluster_id();
  }

 private:
  // Runs `write` (a call of the inner store) unless the faults say it
  // fails: then its error, the inner store called or not as they say.
  template <typename Result, typename Fn>
  Result Apply(StoreWriteKind kind, Fn write);

  std::unique_ptr<Store> inner_;
  std::shared_ptr<StoreFaults> faults_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_FAULT_STORE_H_
