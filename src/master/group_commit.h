// Group commit for writers that change state under one mutex and make it
// durable with a commit that also runs under it (MasterState's agent
// reports: each heartbeat applies its tasks' ends in memory, and must not
// be answered, its ends acknowledged, before they are on disk).
//
// Without it every writer commits alone: one transaction, one fsync each,
// the mutex held across every one. With it a writer that has applied its
// changes joins (Join); if no commit is being led, it leads: it lets go of
// the mutex for a moment, so that writers queued on it apply theirs and
// join as followers, then commits once for all of them. A follower returns
// when a commit that began after its changes ends (led by anyone: any
// commit of the mutex's owner writes everything changed so far), with that
// commit's status. LevelDB's DBImpl::Write batches its writers the same
// way; here the write itself stays under the mutex. While the leader
// yields and followers wait, other callers of the mutex do see changes
// applied but not yet durable (as after a failed write before): what
// makes that safe is that a writer answers, and acknowledges what it was
// told, only after a commit covered it; an agent sends an unacknowledged
// end again.
//
//   // under mu_, changes applied:
//   RETURN_IF_ERROR(group_.Join(&mu_, [&] { return Commit(); }));
//   ...
//   absl::Status Commit() {  // under mu_
//     const uint64_t covers = group_.Covering(&mu_);
//     absl::Status s = Write();
//     group_.Ended(&mu_, covers, s);
//     return s;
//   }
//
// Every member takes the owner's mutex, held (its state is guarded by it).
#ifndef TIRESIAS_MASTER_GROUP_COMMIT_H_
#define TIRESIAS_MASTER_GROUP_COMMIT_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"

namespace tiresias {

class GroupCommit {
 public:
  // The caller's changes are applied (under `mu`): returns once a commit
  // that covers them ended: OK once one that succeeded did, else the
  // failed one's error (a failed commit keeps what it did not write, so a
  // later one may still write it). May release `mu` meanwhile
  // (the caller re-reads what it needs after). `commit` must call Covering
  // and Ended as above.
  absl::Status Join(Mutex* mu, const std::function<absl::Status()>& commit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t mine = ++applied_;
    ++joined_;
    while (durable_ < mine) {
      if (failed_ >= mine) return failure_;
      if (leading_) {
        ended_.Wait(mu);
        continue;
      }
      leading_ = true;
      // Writers waiting for the mutex apply their changes and follow, one
      // at a time (an unlock wakes one waiter): again while one came, up to
      // kMaxRounds.
      for (int round = 0; round < kMaxRounds; ++round) {
        const uint64_t seen = applied_;
        mu->Unlock();
        std::this_thread::yield();
        mu->Lock();
        if (applied_ == seen) break;
      }
      ++led_;
      absl::Status status = commit();
      leading_ = false;
      ended_.SignalAll();  // a follower whose changes came after leads next
      if (durable_ >= mine) break;  // also if another commit wrote them
      if (failed_ >= mine) return failure_;
      return status.ok() ? absl::InternalError(
                               "GroupCommit: the commit did not say what "
                               "it covered (Ended)")
                         : status;
    }
    return absl::OkStatus();
  }

  // A commit is about to write everything applied so far: what it covers.
  uint64_t Covering(Mutex* mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return applied_;
  }

  // The commit that covered `covers` ended with `status` (a failed one
  // keeps its changes for the next: its followers get the error).
  void Ended(Mutex* mu, uint64_t covers, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (status.ok()) {
      if (covers > durable_) durable_ = covers;
    } else if (covers > failed_) {
      failed_ = covers;
      failure_ = status;
    }
    ended_.SignalAll();
  }

  // Writers that joined, and commits a joined writer led: joined / led is
  // how many writers shared a commit.
  int64_t joined(Mutex* mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return joined_;
  }
  int64_t led(Mutex* mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return led_;
  }

 private:
  static constexpr int kMaxRounds = 32;
  // Guarded by the owner's mutex (every member takes it).
  uint64_t applied_ = 0;  // writers' changes applied, numbered
  uint64_t durable_ = 0;  // of them, written by a commit that succeeded
  uint64_t failed_ = 0;   // of them, in a commit that failed (failure_)
  absl::Status failure_;
  bool leading_ = false;
  int64_t joined_ = 0;
  int64_t led_ = 0;
  SteadyCondVar ended_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_GROUP_COMMIT_H_
