// GroupCommit: a writer returns only once a commit that began after its
// changes ended, with that commit's status; concurrent writers share
// commits. Real threads and a commit that takes time, as an fsync does.
#include "master/group_commit.h"

#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

// The owner: a mutex, a count of changes applied under it, and every
// commit's (changes it covered, status), as MasterState's Commit would
// write them. Every third commit fails when `failing`.
class Owner {
 public:
  explicit Owner(bool failing) : failing_(failing) {}

  // One writer: applies a change, joins; its change's number and status.
  std::pair<uint64_t, absl::Status> Write() {
    MutexLock lock(&mu_);
    const uint64_t mine = ++changes_;
    absl::Status status = group_.Join(
        &mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Commit(); });
    return {mine, status};
  }

  // A commit from elsewhere (a scheduling pass), not through Join.
  absl::Status CommitFromElsewhere() {
    MutexLock lock(&mu_);
    return Commit();
  }

  std::vector<std::pair<uint64_t, absl::Status>> log() {
    MutexLock lock(&mu_);
    return log_;
  }
  int64_t joined() {
    MutexLock lock(&mu_);
    return group_.joined(&mu_);
  }
  int64_t led() {
    MutexLock lock(&mu_);
    return group_.led(&mu_);
  }

 private:
  absl::Status Commit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t covers = group_.Covering(&mu_);
    EXPECT_EQ(covers, changes_);  // every change applied so far
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the fsync
    absl::Status status = failing_ && log_.size() % 3 == 2
                              ? absl::UnavailableError("disk")
                              : absl::OkStatus();
    log_.push_back({covers, status});
    group_.Ended(&mu_, covers, status);
    return status;
  }

  const bool failing_;
  Mutex mu_;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<uint64_t, absl::Status>> log_ ABSL_GUARDED_BY(mu_);
  GroupCommit group_ ABSL_GUARDED_BY(mu_);
};

// Whether a commit with `ok` status covered change `mine`.
bool Covered(const std::vector<std::pair<uint64_t, absl::Status>>& log,
             uint64_t mine, bool ok) {
  for (const auto& [covers, status] : log) {
    if (covers >= mine && status.ok() == ok) return true;
  }
  return false;
}

// Many writers at once, each many times: every one is answered only by a
// commit that covered its change (OK by one that succeeded, an error by
// one that failed), and they share commits.
void RunWriters(Owner& owner) {
  constexpr int kThreads = 16;
  constexpr int kRounds = 20;
  std::vector<std::vector<std::pair<uint64_t, absl::Status>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) got[t].push_back(owner.Write());
    });
  }
  for (std::thread& t : threads) t.join();
  const auto log = owner.log();
  for (const auto& results : got) {
    for (const auto& [mine, status] : results) {
      // OK only once written; an error only from a commit that had it.
      EXPECT_TRUE(Covered(log, mine, status.ok())) << "change " << mine;
    }
  }
  EXPECT_EQ(owner.joined(), kThreads * kRounds);
  // 320 writers, commits of 2 ms: some shared one (the old way, one commit
  // each, would give exactly 320).
  EXPECT_LT(log.size(), static_cast<size_t>(kThreads * kRounds));
  EXPECT_LE(owner.led(), static_cast<int64_t>(log.size()));
}

TEST(GroupCommitTest, ALoneWriterLeadsItsOwnCommit) {
  Owner owner(/*failing=*/false);
  auto [mine, status] = owner.Write();
  EXPECT_EQ(mine, 1u);
  EXPECT_TRUE(status.ok()) << status;
  ASSERT_EQ(owner.log().size(), 1u);
  EXPECT_EQ(owner.log()[0].first, 1u);
  EXPECT_EQ(owner.led(), 1);
}

TEST(GroupCommitTest, WritersShareCommitsAndEachWaitsForItsOwn) {
  Owner owner(/*failing=*/false);
  RunWriters(owner);
}

TEST(GroupCommitTest, AFailedCommitAnswersOnlyTheWritersItCovered) {
  Owner owner(/*failing=*/true);
  RunWriters(owner);
  int failed = 0;
  for (const auto& [covers, status] : owner.log()) failed += !status.ok();
  EXPECT_GT(failed, 0);
}

TEST(GroupCommitTest, AWriterAfterAFailureSucceedsWithTheNextCommit) {
  Owner owner(/*failing=*/true);
  EXPECT_TRUE(owner.Write().second.ok());         // commit 1
  EXPECT_TRUE(owner.CommitFromElsewhere().ok());  // commit 2
  EXPECT_FALSE(owner.Write().second.ok());        // commit 3 fails
  EXPECT_TRUE(owner.Write().second.ok());         // commit 4
}

}  // namespace
}  // namespace tiresias
