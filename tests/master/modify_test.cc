// Changing a waiting job (MasterState::ModifyJob, `tiresias update`) and
// begin times (`submit --begin`), with a fake clock, real SQLite and
// agents' reports by hand: what starts, when, and what a restarted master
// remembers.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using master_testing::MasterFixture;
using master_testing::Spec;
using master_testing::Starts;
using master_testing::Stops;
using master_testing::Task;
using v1::TASK_STATE_RUNNING;

class ModifyJobTest : public MasterFixture {
 protected:
  absl::StatusOr<JobRecord> Modify(JobId id,
                                   const MasterState::JobChanges& changes) {
    return master_->ModifyJob(id, changes, nullptr);
  }
  void CheckTimeouts() { ASSERT_TRUE(master_->CheckTimeouts().ok()); }
  // The job ids the node is told to start.
  std::vector<JobId> Started(int64_t node) {
    std::vector<JobId> ids;
    for (const v1::StartTask& start : Starts(Beat(node))) {
      ids.push_back(start.task().job_id());
    }
    return ids;
  }
  static bool HasEvent(const JobRecord& rec, const std::string& kind,
                       const std::string& detail) {
    for (const JobEvent& e : rec.events) {
      if (e.kind == kind && e.detail.find(detail) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
};

// Submitted at 1000 to begin at 1030 on an idle node: it waits, saying
// why, until a check at or after 1030 lets it go.
TEST_F(ModifyJobTest, ABeginTimeHoldsTheJobUntilItComes) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.begin = Seconds{1030};
  const JobId id = Submit(spec);
  Pass();
  EXPECT_TRUE(Started(n1).empty());
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kBeginTime));
  EXPECT_EQ(rec.pending_reason, "begins in 30s (its --begin time)");
  clock_.Advance(Seconds{29});
  CheckTimeouts();
  Pass();
  EXPECT_TRUE(Started(n1).empty());
  clock_.Advance(Seconds{1.5});
  CheckTimeouts();
  Pass();
  EXPECT_EQ(Started(n1), std::vector<JobId>{id});
  EXPECT_TRUE(HasEvent(Get(id), "begin", "its begin time came"));
}

// The wait is rebuilt from the stored spec: a master restarted before the
// begin time does not start the job early.
TEST_F(ModifyJobTest, ABeginTimeSurvivesAMasterRestart) {
  Open();
  Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.begin = Seconds{1020};
  const JobId id = Submit(spec);
  master_.reset();
  Open();
  const int64_t n1 = Register("n1", 1);
  Pass();
  EXPECT_TRUE(Started(n1).empty());
  clock_.Advance(Seconds{21});
  CheckTimeouts();
  Pass();
  EXPECT_EQ(Started(n1), std::vector<JobId>{id});
}

// A user's hold outlasts the begin time; the release lets it run.
TEST_F(ModifyJobTest, AHeldJobStaysHeldPastItsBeginTime) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.begin = Seconds{1010};
  spec.hold = true;
  const JobId id = Submit(spec);
  clock_.Advance(Seconds{11});
  CheckTimeouts();
  Pass();
  EXPECT_TRUE(Started(n1).empty());
  EXPECT_EQ(Get(id).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kHeld));
  auto released = master_->UpdateJobs(JobAction::kRelease, {id},
                                      [](const JobRecord&) { return true; });
  ASSERT_TRUE(released.ok()) << released.status();
  Pass();
  EXPECT_EQ(Started(n1), std::vector<JobId>{id});
}

// Moving the begin time to now (0) releases the job at once; moving it
// later holds it again.
TEST_F(ModifyJobTest, ModifyingTheBeginTimeMovesTheWait) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  const JobId later = Submit(spec);
  spec.begin = Seconds{1000 + 3600};
  const JobId soon = Submit(spec);
  // `later` would run first (submitted first): pushed back an hour.
  auto moved = Modify(later, {.begin = Seconds{1000 + 7200}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->pending_reason_kind,
            static_cast<int>(PendingReasonKind::kBeginTime));
  auto now = Modify(soon, {.begin = Seconds{0}});
  ASSERT_TRUE(now.ok()) << now.status();
  Pass();
  EXPECT_EQ(Started(n1), std::vector<JobId>{soon});
  EXPECT_TRUE(HasEvent(Get(later), "modified", "begin none -> "));
}

// A waiting 2-GPU job behind a running one on a 2-GPU node fits once it
// asks for 1; the new size is stored.
TEST_F(ModifyJobTest, FewerGpusLetAWaitingJobStart) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId running = Submit(Spec(1));
  const JobId waiting = Submit(Spec(2));
  Pass();
  EXPECT_EQ(Started(n1), std::vector<JobId>{running});
  Beat(n1, {Task(running, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  Pass();
  auto changed = Modify(waiting, {.gpus = 1});
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed->spec.num_gpus, 1);
  Pass();
  const std::vector<v1::StartTask> starts = Starts(
      Beat(n1, {Task(running, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)}));
  ASSERT_EQ(starts.size(), 2u);  // the running one is still desired
  EXPECT_EQ(starts[1].task().job_id(), waiting);
  ASSERT_EQ(starts[1].gpu_indexes_size(), 1);
  EXPECT_EQ(starts[1].gpu_indexes(0), 1);
  EXPECT_TRUE(HasEvent(Get(waiting), "modified", "GPUs 2 -> 1"));
  master_.reset();
  Open();
  EXPECT_EQ(Get(waiting).spec.num_gpus, 1);
}

// A new time limit on a held job holds once it runs.
TEST_F(ModifyJobTest, ANewTimeLimitIsEnforced) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.hold = true;
  const JobId id = Submit(spec);
  auto changed = Modify(id, {.time_limit = Seconds{2}});
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(changed->held);
  ASSERT_TRUE(master_
                  ->UpdateJobs(JobAction::kRelease, {id},
                               [](const JobRecord&) { return true; })
                  .ok());
  Pass();
  const v1::TaskStatus running =
      Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {running});
  clock_.Advance(Seconds{2.5});
  CheckTimeouts();
  const auto stops = Stops(Beat(n1, {running}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_CANCEL);
  EXPECT_TRUE(Get(id).timeout_requested);
}

TEST_F(ModifyJobTest, OnlyAWaitingJobCanChangeAndOnlyToAValidRequest) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId running = Submit(Spec(1));
  JobRequest shaped = Spec(2);
  shaped.nodes = 2;
  shaped.gpus_per_node = 1;
  shaped.hold = true;
  const JobId two_nodes = Submit(shaped);
  JobRequest cpu = Spec(0);
  cpu.cpus = 1;
  cpu.hold = true;
  const JobId cpu_only = Submit(cpu);
  Pass();
  Beat(n1, {Task(running, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});

  // A running job: its time limit alone.
  auto status = Modify(running, {.gpus = 2}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("only its time limit can change"),
            std::string::npos)
      << status;
  status =
      Modify(running, {.time_limit = Seconds{60}, .qos = "other"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(Get(running).spec.time_limit, Seconds{0});
  status = Modify(two_nodes, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  status = Modify(two_nodes, {.gpus = 3}).status();
  EXPECT_EQ(status.message(),
            "gpus: job 2 has a shape of 2 nodes (--nodes); expected a "
            "multiple of 2, got 3");
  status = Modify(two_nodes, {.gpus = 0}).status();
  EXPECT_EQ(status.message(), "gpus: expected at least 1, got 0");
  status = Modify(two_nodes, {.gpus = 4}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("the cluster has 2"), std::string::npos)
      << status;
  status = Modify(cpu_only, {.gpus = 1}).status();
  EXPECT_NE(status.message().find("is CPU-only"), std::string::npos) << status;
  status = Modify(two_nodes, {.time_limit = Seconds{-1}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  status = Modify(999, {.gpus = 1}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  // Nothing refused changed anything.
  EXPECT_EQ(Get(two_nodes).spec.num_gpus, 2);
  EXPECT_EQ(Get(two_nodes).spec.time_limit, Seconds{0});
  // A valid change keeps the shape: 2 nodes of 1.
  auto ok = Modify(two_nodes, {.time_limit = Seconds{60}, .gpus = 2});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->spec.gpus_per_node, 1);
  EXPECT_EQ(ok->spec.time_limit, Seconds{60});
}

// An array of 4 with at most 2 running on a 4-GPU node: its first two
// jobs moved to begin an hour later give their slots to the other two; one
// moved back waits for a slot, and takes the first one freed.
TEST_F(ModifyJobTest, AJobWaitingForItsBeginTimeTakesNoArraySlot) {
  Open();
  const int64_t n1 = Register("n1", 4);
  JobRequest spec = Spec(1);
  spec.array.indices = "0-3";
  spec.array.max_running = 2;
  spec.hold = true;  // so that nothing starts before the updates
  const JobId first = Submit(spec);
  for (JobId id = first; id < first + 4; ++id) {
    if (id < first + 2) {
      ASSERT_TRUE(Modify(id, {.begin = Seconds{1000 + 3600}}).ok());
    }
    ASSERT_TRUE(master_
                    ->UpdateJobs(JobAction::kRelease, {id},
                                 [](const JobRecord&) { return true; })
                    .ok());
  }
  Pass();
  std::vector<JobId> started = Started(n1);
  std::sort(started.begin(), started.end());
  EXPECT_EQ(started, (std::vector<JobId>{first + 2, first + 3}));
  EXPECT_EQ(Get(first).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kBeginTime));
  // Back to now: the array's two slots are taken, so it waits for one.
  ASSERT_TRUE(Modify(first, {.begin = Seconds{0}}).ok());
  Pass();
  EXPECT_EQ(Get(first).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  Beat(n1, {Task(first + 2, 1, 0, v1::TASK_STATE_EXITED, {0}, 0, 1000.0),
            Task(first + 3, 1, 0, TASK_STATE_RUNNING, {1}, {}, 1000.0)});
  Pass();
  started.clear();
  for (const v1::StartTask& start : Starts(Beat(
           n1, {Task(first + 3, 1, 0, TASK_STATE_RUNNING, {1}, {}, 1000.0)}))) {
    started.push_back(start.task().job_id());
  }
  EXPECT_THAT(started, testing::Contains(first));
  EXPECT_THAT(started, testing::Not(testing::Contains(first + 1)));
}

// A job that has run has begun: a begin time no longer applies to it.
TEST_F(ModifyJobTest, ABeginTimeIsRefusedForAJobThatRan) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  ASSERT_TRUE(master_
                  ->UpdateJobs(JobAction::kRequeueHold, {id},
                               [](const JobRecord&) { return true; })
                  .ok());
  auto status = Modify(id, {.begin = Seconds{5000}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("has run before"), std::string::npos)
      << status;
  // Its GPUs may still change while it waits.
  EXPECT_TRUE(Modify(id, {.time_limit = Seconds{600}}).ok());
}

// A running job's time limit changes where it runs: extended, it is not
// stopped at the old limit; shortened below what it has run, it is stopped
// (timeout) at the next check. A restarted master keeps the new limit.
TEST_F(ModifyJobTest, ARunningJobsTimeLimitCanChange) {
  Open();
  int64_t n1 = Register("n1", 2);
  JobRequest spec = Spec(1);
  spec.time_limit = Seconds{3};
  const JobId extended = Submit(spec);
  spec.time_limit = Seconds{0};
  const JobId shortened = Submit(spec);
  Pass();
  auto runs = [&](JobId id, int gpu) {
    return Task(id, 1, 0, TASK_STATE_RUNNING, {gpu}, {}, 1000.0);
  };
  Beat(n1, {runs(extended, 0), runs(shortened, 1)});
  clock_.Advance(Seconds{2});
  auto longer = Modify(extended, {.time_limit = Seconds{100}});
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(longer->spec.time_limit, Seconds{100});
  EXPECT_EQ(longer->state, JobRecordState::kRunning);
  auto shorter = Modify(shortened, {.time_limit = Seconds{1}});
  ASSERT_TRUE(shorter.ok()) << shorter.status();
  EXPECT_TRUE(HasEvent(Get(extended), "modified", "time limit 3s -> 1m40s"));
  EXPECT_TRUE(HasEvent(Get(shortened), "modified", "time limit none -> 1s"));
  clock_.Advance(Seconds{2});  // 4 s run: past 3 s, and past 1 s
  CheckTimeouts();
  std::vector<JobId> stopped;
  for (const v1::StopTask& stop :
       Stops(Beat(n1, {runs(extended, 0), runs(shortened, 1)}))) {
    stopped.push_back(stop.job_id());
  }
  EXPECT_EQ(stopped, std::vector<JobId>{shortened});
  EXPECT_TRUE(Get(shortened).timeout_requested);
  // The limit it has already: nothing to change.
  auto same = Modify(extended, {.time_limit = Seconds{100}, .gpus = 1});
  EXPECT_EQ(same.status().code(), absl::StatusCode::kInvalidArgument)
      << same.status();
  // Being stopped, it cannot change any more.
  auto late = Modify(shortened, {.time_limit = Seconds{100}});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  // Stored: a restarted master stops the extended job at 100 s, not 3.
  master_.reset();
  Open();
  EXPECT_EQ(Get(extended).spec.time_limit, Seconds{100});
}

// A job signalled before its limit (--signal) was told when at its start:
// its limit cannot change while it runs, only while it waits.
TEST_F(ModifyJobTest, ASignalledJobsLimitChangesOnlyWhileItWaits) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.time_limit = Seconds{600};
  spec.warn.signal = 10;  // SIGUSR1
  spec.warn.seconds = 60;
  const JobId id = Submit(spec);
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  auto status = Modify(id, {.time_limit = Seconds{1200}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("--signal"), std::string::npos) << status;
  EXPECT_EQ(Get(id).spec.time_limit, Seconds{600});
}

}  // namespace
}  // namespace tiresias
