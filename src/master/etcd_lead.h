// The lead among masters on an etcd store (--store etcd://...), on any
// machines: each master holds an etcd lease it keeps alive; the leader is
// the one whose lease holds <prefix>leader, created by a transaction that
// succeeds only if no such key exists. The key goes with the lease: a
// leader that dies, or stops renewing (frozen, cut off), loses it when the
// lease's TTL runs out, and a standby's next try takes it.
//
// The epoch is the key's create revision, which etcd makes larger for each
// new leader. A leader steps down (calls `on_lost`, which ends the master)
// when it cannot confirm a renewal before its lease may have lapsed, so
// that it issues nothing once another may lead; Holds() says whether that
// moment has passed. Every write of the replicated store (etcd_store.h) is
// fenced by the key too. Each master also keeps <prefix>masters/<name>
// under its lease, for Standbys().
//
// docs/ARCHITECTURE.md ("Standby masters on etcd").
#ifndef TIRESIAS_MASTER_ETCD_LEAD_H_
#define TIRESIAS_MASTER_ETCD_LEAD_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "master/etcd_client.h"
#include "master/master_lead.h"

namespace tiresias {

class EtcdLead final : public MasterLead {
 public:
  struct Options {
    // The lease's TTL: how long a dead leader's lead outlives it.
    std::chrono::seconds ttl{5};
    // Called once, from the lease's thread, when this leader loses the
    // lead (or cannot tell that it still has it), with why. Must not
    // return into serving: the master ends.
    std::function<void(const std::string&)> on_lost;
    // What Store() says: the store's URL, and the last log entry this
    // master's copy holds (called from the health thread).
    std::string where;
    std::function<int64_t()> log_index;
    // While leading, the standbys and each member's status are asked this
    // often, apart from any request (Standbys() and Store() answer from
    // memory).
    std::chrono::milliseconds health_period{1000};
  };

  // Joins the masters of the store at `prefix` (a lease, this master's
  // key). Does not take the lead.
  static absl::StatusOr<std::unique_ptr<EtcdLead>> Join(
      std::shared_ptr<EtcdClient> client, std::string prefix, Options options);
  ~EtcdLead() override;  // revokes the lease: a standby takes over at once
  EtcdLead(const EtcdLead&) = delete;
  EtcdLead& operator=(const EtcdLead&) = delete;

  // Takes the lead if nobody holds it; false if another master does.
  absl::StatusOr<bool> TryLead() ABSL_LOCKS_EXCLUDED(mu_);
  bool leading() const { return epoch() != 0; }
  // Whether this lead is certainly still held: a renewal was confirmed
  // less than a TTL (less a margin) ago. False once lost.
  bool Holds() const override ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t epoch() const override ABSL_LOCKS_EXCLUDED(mu_);
  LeaderRecord record() const override ABSL_LOCKS_EXCLUDED(mu_);
  // As last asked (the health thread, or RefreshHealth).
  std::vector<std::string> Standbys() const override ABSL_LOCKS_EXCLUDED(mu_);
  StoreHealth Store() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the standbys and each member now (each within 500 ms).
  void RefreshHealth() ABSL_LOCKS_EXCLUDED(mu_);

  // Where this leader listens, written to its record.
  absl::Status SetAddress(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // The current leader's record (nullopt: nobody leads).
  absl::StatusOr<std::optional<LeaderRecord>> ReadLeader() const;

  const std::string& leader_key() const { return leader_key_; }
  const std::string& prefix() const { return prefix_; }
  // Calls on_lost (once) with `why`: for the store, whose fenced write
  // found the lead gone.
  void Lost(const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Steady = std::chrono::steady_clock;
  EtcdLead(std::shared_ptr<EtcdClient> client, std::string prefix,
           Options options);
  absl::Status NewLease() ABSL_LOCKS_EXCLUDED(mu_);
  void KeepAliveLoop();
  void HealthLoop();

  const std::shared_ptr<EtcdClient> client_;
  const std::string prefix_;
  const std::string leader_key_;
  const Options options_;
  std::string self_name_;  // pid@host#random
  mutable Mutex mu_;
  int64_t lease_ ABSL_GUARDED_BY(mu_) = 0;
  Steady::time_point valid_until_ ABSL_GUARDED_BY(mu_);
  LeaderRecord record_ ABSL_GUARDED_BY(mu_);  // epoch 0 until leading
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> standbys_ ABSL_GUARDED_BY(mu_);
  StoreHealth health_ ABSL_GUARDED_BY(mu_);
  std::thread keeper_;
  std::thread health_thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ETCD_LEAD_H_
