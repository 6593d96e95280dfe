// Which of the `tiresias master` processes on one state dir leads it.
//
// Any number of masters may be started on a state dir; one leads (opens
// the state, listens, schedules), the others wait as standbys and take
// over when the leader's process ends, however it ends (a crash or
// SIGKILL included): the lead is an flock(2) on <state-dir>/lead/lock,
// which the kernel releases with the process. A standby neither opens the
// state nor listens, so clients and agents given every master's address
// (`--master a,b`) reach the leader alone.
//
// Each lead has an epoch, one more than the last (kept in
// <state-dir>/lead/leader with the leader's pid, host, start and address,
// written atomically and synced): the master puts it in its answers to
// agents, which refuse a lower one than they have seen (a deposed leader).
// Each master process also holds a lock on a file of its own
// (lead/master-<pid>@<host>#<random>), so the leader can list the live
// standbys.
//
// On one host, or on a shared file system whose locks follow the
// processes (NFSv4). A leader frozen (SIGSTOP) keeps the lead: the
// standbys wait, and nobody commands beside it. docs/ARCHITECTURE.md
// ("Standby masters").
#ifndef TIRESIAS_MASTER_STATE_DIR_LEAD_H_
#define TIRESIAS_MASTER_STATE_DIR_LEAD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "master/master_lead.h"

namespace tiresias {

class StateDirLead final : public MasterLead {
 public:
  // Record (MasterLead's): what lead/leader says of the last master to take
  // the lead.

  // Joins the masters of `state_dir` (which must exist): makes lead/ and
  // this process's file there. Does not take the lead.
  static absl::StatusOr<std::unique_ptr<StateDirLead>> Join(
      const std::string& state_dir);
  ~StateDirLead();
  StateDirLead(const StateDirLead&) = delete;
  StateDirLead& operator=(const StateDirLead&) = delete;

  // Takes the lead if no other process holds it, without waiting: then the
  // next epoch is written (durably) before it returns true. False: another
  // leads. Once true, it leads until destroyed or the process ends. Not
  // thread-safe (called before serving); the rest is.
  absl::StatusOr<bool> TryLead();
  bool leading() const { return epoch_.load() != 0; }
  // This lead's epoch (0 until leading) and record (a copy).
  uint64_t epoch() const override { return epoch_.load(); }
  Record record() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Where this leader listens, written to its record.
  absl::Status SetAddress(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  // The record in lead/leader (nullopt: no master ever led), e.g. for a
  // standby to say whom it waits on. Errors name the file and the field.
  absl::StatusOr<std::optional<Record>> ReadLeader() const;

  // The other live masters of the state dir, as "pid@host", sorted.
  std::vector<std::string> Standbys() const override ABSL_LOCKS_EXCLUDED(mu_);

  std::string dir() const { return dir_; }
  // "sqlite", at the state dir.
  StoreHealth Store() const override;

 private:
  StateDirLead(std::string dir, std::string self_name, int self_fd)
      : dir_(std::move(dir)),
        self_name_(std::move(self_name)),
        self_fd_(self_fd) {}

  const std::string dir_;        // <state-dir>/lead
  const std::string self_name_;  // master-<pid>@<host>#<random>
  const int self_fd_;            // locked for this process's life
  int lock_fd_ = -1;             // lead/lock, once leading (TryLead's)
  std::atomic<uint64_t> epoch_{0};
  // Also serializes Standbys(): two at once would take each other's try
  // of a file's lock for a live master's.
  mutable Mutex mu_;
  Record record_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_STATE_DIR_LEAD_H_
