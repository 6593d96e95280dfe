// Group commit of submissions at the MasterState level: concurrent
// SubmitJob calls share store transactions, every one gets its own job, and
// a batch whose transaction fails leaves nothing behind, in the store or in
// memory. The failure is a real one: the process's file size limit stops
// the WAL from growing (SQLite sees EFBIG), as a full disk would.
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

class SubmitGroupCommitTest : public MasterFixture {};

TEST_F(SubmitGroupCommitTest, ConcurrentSubmittersShareTransactions) {
  Open();
  constexpr int kThreads = 16, kEach = 20;
  std::vector<std::vector<JobId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        // Half of them with a request id, each its own.
        const std::string request_id =
            i % 2 == 0 ? absl::StrCat("t", t, "-", i) : "";
        auto result = master_->SubmitJob(Spec(1), request_id);
        if (result.ok() && !result->existing) ids[t].push_back(result->id);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<JobId> all;
  for (const std::vector<JobId>& list : ids) {
    EXPECT_EQ(list.size(), static_cast<size_t>(kEach));
    // One thread's jobs get increasing ids: each is acknowledged before
    // the next is submitted.
    for (size_t i = 1; i < list.size(); ++i) EXPECT_LT(list[i - 1], list[i]);
    all.insert(list.begin(), list.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kEach);
  const MasterState::SubmitStats stats = master_->submit_stats();
  EXPECT_EQ(stats.jobs, kThreads * kEach);
  EXPECT_LT(stats.batches, stats.jobs);  // some shared a transaction
  // Every job is in the scheduler and the store.
  EXPECT_EQ(master_->SnapshotMetrics()->jobs_by_state[JobRecordState::kPending],
            kThreads * kEach);
  master_.reset();
  Open();
  EXPECT_EQ(master_->ListJobs()->size(), static_cast<size_t>(kThreads * kEach));
}

// Sets RLIMIT_FSIZE for the life of the object (SIGXFSZ ignored, so that a
// write past the limit fails with EFBIG instead of killing the test).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_;
  sighandler_t old_handler_;
};

TEST_F(SubmitGroupCommitTest, AFailedBatchFailsEveryWriterAndLeavesNothing) {
  Open();
  EXPECT_EQ(Submit(Spec(1)), 1);
  const std::string wal = options_.state_dir + "/state.db-wal";
  ASSERT_TRUE(std::filesystem::exists(wal));
  constexpr int kThreads = 8;
  std::vector<absl::Status> results(kThreads);
  {
    // The WAL cannot grow: the next transaction cannot commit.
    FileSizeLimit limit(std::filesystem::file_size(wal));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        JobRequest spec = Spec(1);
        spec.command.push_back(std::string(8192, 'x'));  // a page or more
        results[t] = master_->SubmitJob(spec).status();
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (const absl::Status& status : results) {
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  // Nothing of them in memory (the scheduler, the counts) or on disk.
  auto metrics = master_->SnapshotMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->jobs_submitted, 1);
  EXPECT_EQ(metrics->jobs_by_state[JobRecordState::kPending], 1);
  EXPECT_EQ(master_->ListJobs()->size(), 1u);
  // The master goes on: the next job is the next id, and all is durable.
  EXPECT_EQ(Submit(Spec(1)), 2);
  master_.reset();
  Open();
  EXPECT_EQ(master_->ListJobs()->size(), 2u);
}

}  // namespace
}  // namespace tiresias::master_testing
