// What a job's tasks used (TaskStatus.cpu_seconds, memory_peak_bytes, read
// by agents from the tasks' cgroups): summed CPU time and the largest
// memory peak, live while the tasks run, stored once they ended, kept
// across a master restart, and in the metrics. MasterState with a fake
// clock and real SQLite, agents as messages.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/metrics.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using namespace master_testing;  // NOLINT: the fixture's own helpers
using ::testing::HasSubstr;

class JobUsageTest : public MasterFixture {
 protected:
  // A status of `rank` with a usage reading.
  v1::TaskStatus Used(JobId job, int rank, v1::TaskState state, double cpu,
                      int64_t memory, std::optional<int> exit = std::nullopt) {
    v1::TaskStatus t = Task(job, 1, rank, state, gpus_[rank], exit,
                            clock_.NowUnixSeconds().count());
    t.set_cpu_seconds(cpu);
    t.set_memory_peak_bytes(memory);
    if (exit) t.set_end_time(clock_.NowUnixSeconds().count());
    return t;
  }

  // Opens the master, starts a 1-GPU job on a 1-GPU node (rank 0 on GPU
  // 0); the node and the job.
  std::pair<int64_t, JobId> OneRankStarted() {
    Open();
    const int64_t n = Register("n1", 1);
    const JobId job = Submit(Spec(1));
    Pass();
    Beat(n);
    gpus_[0] = {0};
    node_of_[0] = n;
    return {n, job};
  }

  // Reports `rank`'s status with a usage reading from its node.
  void Report(JobId job, int rank, v1::TaskState state, double cpu,
              int64_t memory, std::optional<int> exit = std::nullopt) {
    v1::HeartbeatResponse resp =
        Beat(node_of_[rank], {Used(job, rank, state, cpu, memory, exit)});
    EXPECT_EQ(resp.rejected_size(), 0)
        << (resp.rejected_size() ? resp.rejected(0).message() : "");
  }

  std::map<int, std::vector<int>> gpus_;  // rank -> its GPUs
  std::map<int, int64_t> node_of_;        // rank -> its node
};

constexpr int64_t kMiB = int64_t{1} << 20;

TEST_F(JobUsageTest, RanksAddUpLiveAndAreKeptOnceEnded) {
  Open();
  // Two 1-GPU nodes: a 2-GPU job runs a rank on each.
  const int64_t a = Register("n1", 1);
  const int64_t b = Register("n2", 1);
  const JobId job = Submit(Spec(2));
  Pass();
  for (int64_t n : {a, b}) {
    for (const v1::StartTask& s : Starts(Beat(n))) {
      node_of_[s.task().rank()] = n;
      gpus_[s.task().rank()].assign(s.gpu_indexes().begin(),
                                    s.gpu_indexes().end());
    }
  }
  ASSERT_EQ(gpus_.size(), 2u);
  Report(job, 0, v1::TASK_STATE_RUNNING, 10, 100 * kMiB);
  Report(job, 1, v1::TASK_STATE_RUNNING, 4, 300 * kMiB);
  EXPECT_DOUBLE_EQ(Get(job).cpu_seconds, 14);
  EXPECT_EQ(Get(job).max_memory_bytes, 300 * kMiB);
  auto metrics = master_->SnapshotMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_DOUBLE_EQ(metrics->cpu_seconds, 14);
  ASSERT_EQ(metrics->running_usage.size(), 1u);
  EXPECT_EQ(metrics->running_usage[0].id, job);
  const std::string page = RenderPrometheusMetrics(*metrics);
  EXPECT_THAT(page,
              HasSubstr(absl::StrCat("tiresias_running_job_cpu_seconds{job=\"",
                                     job, "\",user=\"\"} 14.000\n")));
  EXPECT_THAT(page, HasSubstr(absl::StrCat(
                        "tiresias_running_job_memory_peak_bytes{job=\"", job,
                        "\",user=\"\"} ", 300 * kMiB, "\n")));

  // Rank 0 ends: its final reading is the record's, rank 1's latest adds.
  clock_.Advance(Seconds{5});
  Report(job, 0, v1::TASK_STATE_EXITED, 12, 120 * kMiB, 0);
  Report(job, 1, v1::TASK_STATE_RUNNING, 6, 300 * kMiB);
  EXPECT_DOUBLE_EQ(Get(job).cpu_seconds, 18);
  // A late, older reading changes nothing.
  Report(job, 1, v1::TASK_STATE_RUNNING, 3, 200 * kMiB);
  EXPECT_DOUBLE_EQ(Get(job).cpu_seconds, 18);
  EXPECT_EQ(Get(job).max_memory_bytes, 300 * kMiB);

  clock_.Advance(Seconds{5});
  Report(job, 1, v1::TASK_STATE_EXITED, 7, 310 * kMiB, 0);
  JobRecord done = Get(job);
  EXPECT_EQ(done.state, JobRecordState::kFinished);
  EXPECT_DOUBLE_EQ(done.cpu_seconds, 19);
  EXPECT_EQ(done.max_memory_bytes, 310 * kMiB);

  // Stored: a restarted master says the same, and counts it in the total.
  master_.reset();
  Open();
  done = Get(job);
  EXPECT_DOUBLE_EQ(done.cpu_seconds, 19);
  EXPECT_EQ(done.max_memory_bytes, 310 * kMiB);
  metrics = master_->SnapshotMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_DOUBLE_EQ(metrics->cpu_seconds, 19);
  EXPECT_TRUE(metrics->running_usage.empty());
}

// A node lost with a rank running: that rank's last reading stays the
// job's, though no end is ever reported for it.
TEST_F(JobUsageTest, ALostNodesLastReadingIsKept) {
  options_.node_timeout = Seconds{30};
  const auto [n, job] = OneRankStarted();
  Report(job, 0, v1::TASK_STATE_RUNNING, 42, 100 * kMiB);
  clock_.Advance(Seconds{31});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  const JobRecord rec = Get(job);
  EXPECT_NE(rec.state, JobRecordState::kRunning);
  EXPECT_DOUBLE_EQ(rec.cpu_seconds, 42);
  EXPECT_EQ(rec.max_memory_bytes, 100 * kMiB);
}

TEST_F(JobUsageTest, ImpossibleReadingsAreRejectedNamingTheField) {
  const auto [n, job] = OneRankStarted();
  v1::TaskStatus bad = Used(job, 0, v1::TASK_STATE_RUNNING, -1, 0);
  v1::HeartbeatResponse resp = Beat(n, {bad});
  ASSERT_EQ(resp.rejected_size(), 1);
  EXPECT_THAT(resp.rejected(0).message(), HasSubstr("tasks[0].cpu_seconds"));
  bad = Used(job, 0, v1::TASK_STATE_RUNNING, 1, -5);
  resp = Beat(n, {bad});
  ASSERT_EQ(resp.rejected_size(), 1);
  EXPECT_THAT(resp.rejected(0).message(),
              HasSubstr("tasks[0].memory_peak_bytes"));
  EXPECT_DOUBLE_EQ(Get(job).cpu_seconds, 0);
}

}  // namespace
}  // namespace tiresias
