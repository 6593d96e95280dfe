// Job control in MasterState (fake clock, real SQLite, agents' reports by
// hand): time limits end jobs TIMEOUT, hold and release, requeue, bulk
// cancel with per-job refusals, and the no-preempt admission limit.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using master_testing::MasterFixture;
using master_testing::Spec;
using master_testing::Starts;
using master_testing::Stops;
using master_testing::Task;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

class JobControlTest : public MasterFixture {
 protected:
  static bool Anyone(const JobRecord&) { return true; }

  std::vector<MasterState::JobActionResult> Act(JobAction action,
                                                std::vector<JobId> ids) {
    auto results = master_->UpdateJobs(action, std::move(ids), Anyone);
    EXPECT_TRUE(results.ok()) << results.status();
    if (!results.ok()) return {};
    return *std::move(results);
  }
  void CheckTimeouts() { ASSERT_TRUE(master_->CheckTimeouts().ok()); }
};

// A 3 s limit. The job starts at 1000 (reported), has run 2 s at 1002:
// nothing happens. At 1003.5 the master stops it (reason CANCEL); once its
// task has ended, it is timeout, with its executed time counted to the
// stop (as a cancel counts it).
TEST_F(JobControlTest, JobPastItsTimeLimitIsStoppedAndEndsTimeout) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.time_limit = Seconds{3};
  const JobId id = Submit(spec);
  Pass();
  const v1::TaskStatus running =
      Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {running});
  clock_.Advance(Seconds{2});
  CheckTimeouts();
  EXPECT_TRUE(Stops(Beat(n1, {running})).empty());
  clock_.Advance(Seconds{1.5});
  CheckTimeouts();
  const auto stops = Stops(Beat(n1, {running}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_CANCEL);
  EXPECT_FALSE(IsFinal(Get(id).state));
  EXPECT_TRUE(Get(id).timeout_requested);
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 143, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_CANCEL);
  ended.set_end_time(1003.6);
  Beat(n1, {ended});
  Pass();
  const JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kTimeout);
  EXPECT_NEAR(rec.total_executed.count(), 3.5, 0.01);
}

// The stop at the limit is stored: a master restarted while the task is
// still stopping ends the job timeout, not cancelled.
TEST_F(JobControlTest, TimeoutSurvivesAMasterRestart) {
  Open();
  int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.time_limit = Seconds{1};
  const JobId id = Submit(spec);
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{2});
  CheckTimeouts();
  master_.reset();
  Open();
  n1 = Register("n1", 1);  // its task is gone
  Pass();
  CheckTimeouts();
  EXPECT_EQ(Get(id).state, JobRecordState::kTimeout);
}

// Submitted held: never started while held, also across a master restart;
// released, it starts at the next pass.
TEST_F(JobControlTest, HeldJobStartsOnlyOnceReleased) {
  Open();
  JobRequest spec = Spec(1);
  spec.hold = true;
  const JobId id = Submit(spec);
  int64_t n1 = Register("n1", 1);
  Pass();
  EXPECT_TRUE(Starts(Beat(n1)).empty());
  EXPECT_TRUE(Get(id).held);
  master_.reset();
  Open();
  n1 = Register("n1", 1);
  Pass();
  EXPECT_TRUE(Starts(Beat(n1)).empty());
  EXPECT_TRUE(Get(id).held);
  auto released = Act(JobAction::kRelease, {id});
  ASSERT_EQ(released.size(), 1u);
  EXPECT_TRUE(released[0].status.ok()) << released[0].status;
  EXPECT_FALSE(released[0].job.held);
  Pass();
  ASSERT_EQ(Starts(Beat(n1)).size(), 1u);
  // A second release changes nothing.
  released = Act(JobAction::kRelease, {id});
  EXPECT_TRUE(released[0].unchanged);
}

// Only waiting jobs can be held: a running one is refused with the reason;
// a held waiting job is not started when GPUs free up.
TEST_F(JobControlTest, HoldRefusesARunningJobAndHoldsAWaitingOne) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId running = Submit(Spec(1));
  const JobId waiting = Submit(Spec(1));
  Pass();
  auto results = Act(JobAction::kHold, {running, waiting});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(results[0].status.message().find("only a pending or preempted"),
            std::string::npos)
      << results[0].status;
  EXPECT_TRUE(results[1].status.ok()) << results[1].status;
  EXPECT_TRUE(Get(waiting).held);
  Beat(n1, {Task(running, 1, 0, v1::TASK_STATE_EXITED, {0}, 0, 1000.0)});
  Pass();
  EXPECT_EQ(Get(running).state, JobRecordState::kFinished);
  EXPECT_TRUE(Starts(Beat(n1)).empty());  // the held job stays put
}

// Requeue: the running launch is stopped as a preemption, and once its
// task has ended the job starts again as attempt 2.
TEST_F(JobControlTest, RequeueStopsTheLaunchAndRunsTheJobAgain) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{5});
  auto results = Act(JobAction::kRequeue, {id});
  ASSERT_TRUE(results[0].status.ok()) << results[0].status;
  EXPECT_EQ(results[0].job.state, JobRecordState::kPreempted);
  const auto stops = Stops(Beat(
      n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_PREEMPT);
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 0, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_PREEMPT);
  ended.set_end_time(1005.2);
  Beat(n1, {ended});
  Pass();
  const auto starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  EXPECT_EQ(Get(id).preemptions, 1);
  // A waiting job needs nothing; an ended one is refused.
  const JobId other = Submit(Spec(1));
  EXPECT_TRUE(Act(JobAction::kRequeue, {other})[0].unchanged);
  ASSERT_TRUE(master_->CancelJob(other).ok());
  EXPECT_EQ(Act(JobAction::kRequeue, {other})[0].status.code(),
            absl::StatusCode::kFailedPrecondition);
}

// requeue --hold: the running launch is stopped as a preemption and the
// job is held in the same step: once its task has ended, passes do not
// start it again until it is released; then it runs as attempt 2. A
// waiting job is held; one waiting and held needs nothing.
TEST_F(JobControlTest, RequeueHoldStopsTheJobAndKeepsItWaitingUntilReleased) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{5});
  auto results = Act(JobAction::kRequeueHold, {id});
  ASSERT_TRUE(results[0].status.ok()) << results[0].status;
  EXPECT_FALSE(results[0].unchanged);
  EXPECT_EQ(results[0].job.state, JobRecordState::kPreempted);
  EXPECT_TRUE(results[0].job.held);
  const auto stops =
      Stops(Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_PREEMPT);
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 0, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_PREEMPT);
  ended.set_end_time(1005.2);
  Beat(n1, {ended});
  for (int i = 0; i < 3; ++i) {
    Pass();
    EXPECT_TRUE(Starts(Beat(n1)).empty()) << "pass " << i;
  }
  EXPECT_TRUE(Get(id).held);
  EXPECT_TRUE(Act(JobAction::kRequeueHold, {id})[0].unchanged);
  ASSERT_TRUE(Act(JobAction::kRelease, {id})[0].status.ok());
  Pass();
  const auto starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  // A waiting job is held.
  const JobId other = Submit(Spec(1));
  results = Act(JobAction::kRequeueHold, {other});
  ASSERT_TRUE(results[0].status.ok()) << results[0].status;
  EXPECT_FALSE(results[0].unchanged);
  EXPECT_TRUE(Get(other).held);
}

// Several ids in one call: each gets its own result; one the caller may
// not act on and an unknown one are refused alone.
TEST_F(JobControlTest, CancelOfManyJobsRefusesEachBadOneAlone) {
  Open();
  JobRequest mine = Spec(1);
  mine.user = "alice";
  JobRequest theirs = Spec(1);
  theirs.user = "bob";
  const JobId a = Submit(mine);
  const JobId b = Submit(mine);
  const JobId c = Submit(theirs);
  auto results = master_->UpdateJobs(
      JobAction::kCancel, {c, a, 999, b, a},
      [](const JobRecord& job) { return job.spec.user == "alice"; });
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 4u);  // in id order, duplicates once
  EXPECT_EQ((*results)[0].id, a);
  EXPECT_EQ((*results)[0].job.state, JobRecordState::kCancelled);
  EXPECT_EQ((*results)[1].id, b);
  EXPECT_TRUE((*results)[1].status.ok());
  EXPECT_EQ((*results)[2].id, c);
  EXPECT_EQ((*results)[2].status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ((*results)[3].id, 999);
  EXPECT_EQ((*results)[3].status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Get(c).state, JobRecordState::kPending);
}

// A filter acts on the unfinished jobs that match every condition, and on
// those the caller may act on only; an ended state is refused.
TEST_F(JobControlTest, CancelByFilterTakesOnlyMatchingJobs) {
  Open();
  JobRequest x = Spec(1);
  x.name = "x";
  JobRequest y = Spec(1);
  y.name = "y";
  const JobId x1 = Submit(x);
  const JobId x2 = Submit(x);
  const JobId y1 = Submit(y);
  MasterState::JobFilter filter;
  filter.name = "x";
  auto results = master_->UpdateMatchingJobs(JobAction::kCancel, filter,
                                             Anyone);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].id, x1);
  EXPECT_EQ((*results)[1].id, x2);
  EXPECT_EQ(Get(y1).state, JobRecordState::kPending);
  filter = {};
  filter.state = JobRecordState::kFinished;
  EXPECT_EQ(master_->UpdateMatchingJobs(JobAction::kCancel, filter, Anyone)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(JobControlTest, NoPreemptJobsAreBoundedByTheMastersLimit) {
  options_.max_no_preempt_gpus = 0;
  Open();
  JobRequest spec = Spec(1);
  spec.no_preempt = true;
  auto refused = master_->SubmitJob(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--max-no-preempt-gpus"),
            std::string::npos);
  master_.reset();
  options_.max_no_preempt_gpus = 1;
  Open();
  EXPECT_TRUE(master_->SubmitJob(spec).ok());
  spec.num_gpus = 2;
  EXPECT_FALSE(master_->SubmitJob(spec).ok());
  spec.no_preempt = false;
  EXPECT_TRUE(master_->SubmitJob(spec).ok());
  // A limit that is not a finite number of seconds >= 0 is refused.
  spec.time_limit = Seconds{-1};
  EXPECT_EQ(master_->SubmitJob(spec).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tiresias
