// A task's own end always wins (issue: "a job that ended must never run
// again"). The master decides a stop (a preemption, a requeue, a drain, a
// cancel) and, before the stop reaches the task, the task ends on its own:
// the agent reports it EXITED with its code (it judges by the task's end
// time against the stop's delivery, see launcher.cc). That exit is the
// job's: it ends finished or failed and does not run again. And a master
// that stalled judges its nodes only after taking the reports that waited
// for it. MasterState with a fake clock, real SQLite, the agents' reports
// by hand.
#include <string>
#include <tuple>
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
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

bool Anyone(const JobRecord&) { return true; }

class OwnEndTest : public MasterFixture {
 protected:
  // A 1-GPU job running on n1 (1 GPU) since 1000.
  void RunOneJob() {
    Open();
    n1_ = Register("n1", 1);
    id_ = Submit(Spec(1));
    Pass();
    Beat(n1_, {Running(id_, 1)});
  }
  static v1::TaskStatus Running(JobId id, int attempt, int rank = 0) {
    return Task(id, attempt, rank, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  }
  // What an agent reports for a task that exited with `code` at `end`
  // before any stop reached it.
  static v1::TaskStatus Exited(JobId id, int attempt, int code, double end,
                               int rank = 0) {
    v1::TaskStatus t =
        Task(id, attempt, rank, TASK_STATE_EXITED, {0}, code, 1000.0);
    t.set_end_time(end);
    return t;
  }
  // ... and for one our stop ended (SIGTERM, checkpoint, exit 143).
  static v1::TaskStatus Stopped(JobId id, int attempt, v1::StopReason why,
                                double end, int rank = 0) {
    v1::TaskStatus t =
        Task(id, attempt, rank, TASK_STATE_PREEMPTED, {0}, 143, 1000.0);
    t.set_stop_reason(why);
    t.set_end_time(end);
    return t;
  }
  void Requeue(JobId id) {
    auto results = master_->UpdateJobs(JobAction::kRequeue, {id}, Anyone);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
  }
  // Every start any node's desired state asks for, over a few passes.
  std::vector<v1::StartTask> StartsAfterPasses(std::vector<int64_t> nodes) {
    std::vector<v1::StartTask> all;
    for (int i = 0; i < 3; ++i) {
      clock_.Advance(Seconds{1});
      Pass();
      for (int64_t node : nodes) {
        for (const v1::StartTask& s : Starts(Beat(node))) all.push_back(s);
      }
    }
    return all;
  }
  std::vector<std::string> EventKinds(JobId id) {
    std::vector<std::string> kinds;
    auto events = master_->EventsAfter(0, 1000);
    EXPECT_TRUE(events.ok()) << events.status();
    for (const JobEvent& e : events.value_or(std::vector<JobEvent>{})) {
      if (e.job_id == id) kinds.push_back(e.kind);
    }
    return kinds;
  }

  // A 2-GPU job running as ranks 0 and 1 on "na" and "nb" (1 GPU each),
  // requeued 5 s later. Returns the two nodes and the job.
  std::tuple<int64_t, int64_t, JobId> RequeueARunningGang() {
    Open();
    const int64_t na = Register("na", 1);
    const int64_t nb = Register("nb", 1);
    const JobId id = Submit(Spec(2));
    Pass();
    Beat(na, {Running(id, 1, 0)});
    Beat(nb, {Running(id, 1, 1)});
    clock_.Advance(Seconds{5});
    Requeue(id);
    return {na, nb, id};
  }

  // RunOneJob with a node timeout of 4 s, then n1 goes silent and is lost
  // and the job runs again on n2 (1 GPU): n2 and that attempt.
  void LoseN1AndRunAgainOnN2(int64_t* n2, int* later) {
    options_.node_timeout = Seconds{4};
    RunOneJob();
    *n2 = Register("n2", 1);
    clock_.Advance(Seconds{5});
    Beat(*n2);
    ASSERT_TRUE(master_->CheckTimeouts().ok());  // n1 lost
    Pass();
    std::vector<v1::StartTask> second = Starts(Beat(*n2));
    ASSERT_EQ(second.size(), 1u);
    *later = second[0].task().attempt();
    ASSERT_GT(*later, 1);
    Beat(*n2, {Running(id_, *later)});
  }

  int64_t n1_ = 0;
  JobId id_ = 0;
};

// Requeued at 1005; the task had exited 0 at 1004.9, before the stop
// reached it: the job finished, with no preemption, and never starts again.
TEST_F(OwnEndTest, ATaskThatExitedZeroBeforeARequeueFinished) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  Requeue(id_);
  ASSERT_EQ(Get(id_).state, JobRecordState::kPreempted);
  Beat(n1_, {Exited(id_, 1, 0, 1004.9)});
  JobRecord rec = Get(id_);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_EQ(rec.exit_code, 0);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_TRUE(StartsAfterPasses({n1_}).empty());
  EXPECT_EQ(EventKinds(id_).back(), "finished");
}

// The same with exit code 3: the job failed with its code.
TEST_F(OwnEndTest, ATaskThatFailedBeforeARequeueFailedWithItsCode) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  Requeue(id_);
  Beat(n1_, {Exited(id_, 1, 3, 1004.9)});
  JobRecord rec = Get(id_);
  EXPECT_EQ(rec.state, JobRecordState::kFailed);
  EXPECT_EQ(rec.exit_code, 3);
  EXPECT_TRUE(StartsAfterPasses({n1_}).empty());
}

// The requeue did reach the task (it checkpointed and exited 143 on
// SIGTERM): a preemption, and attempt 2 runs. The rule above is about the
// task's own end, not any end while stopping.
TEST_F(OwnEndTest, ATaskTheStopEndedRunsAgain) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  Requeue(id_);
  Beat(n1_, {Stopped(id_, 1, v1::STOP_REASON_PREEMPT, 1005.2)});
  EXPECT_EQ(Get(id_).preemptions, 1);
  const std::vector<v1::StartTask> starts = StartsAfterPasses({n1_});
  ASSERT_FALSE(starts.empty());
  EXPECT_EQ(starts[0].task().attempt(), 2);
}

// A preemption by the scheduler: a (queue 1 after 10 GPU-seconds) gives
// way to b. Meanwhile a free GPU appears on n2 and a's attempt 2 is decided
// there, waiting for attempt 1 to end. Attempt 1 had exited 0 on its own:
// a finished, attempt 2 is dropped (never sent to n2) and b runs on n1.
TEST_F(OwnEndTest, APreemptedTaskThatHadFinishedIsNotResumedElsewhere) {
  options_.queues = *QueueConfig::Create({10.0});
  Open();
  n1_ = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  Pass();
  Beat(n1_, {Running(a, 1)});
  clock_.Advance(Seconds{11});
  const JobId b = Submit(Spec(1));
  Pass();  // b preempts a
  ASSERT_EQ(Get(a).state, JobRecordState::kPreempted);
  const int64_t n2 = Register("n2", 1);
  Pass();  // a's attempt 2 decided on n2, deferred behind attempt 1
  ASSERT_EQ(Get(a).attempt, 2);
  EXPECT_TRUE(Starts(Beat(n2)).empty());
  Beat(n1_, {Exited(a, 1, 0, 1010.5)});
  JobRecord rec = Get(a);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_EQ(rec.preemptions, 0);
  std::vector<JobId> started;
  for (const v1::StartTask& s : StartsAfterPasses({n1_, n2})) {
    EXPECT_NE(s.task().job_id(), a) << "attempt " << s.task().attempt();
    started.push_back(s.task().job_id());
  }
  EXPECT_NE(std::find(started.begin(), started.end(), b), started.end());
}

// Cancelled at 1005; the task had exited 0 at 1004.9: it finished (its
// work is done), not cancelled.
TEST_F(OwnEndTest, ATaskThatExitedZeroBeforeACancelFinished) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  ASSERT_TRUE(master_->CancelJob(id_).ok());
  ASSERT_FALSE(IsFinal(Get(id_).state));
  Beat(n1_, {Exited(id_, 1, 0, 1004.9)});
  EXPECT_EQ(Get(id_).state, JobRecordState::kFinished);
  EXPECT_TRUE(StartsAfterPasses({n1_}).empty());
}

// Drained with --preempt: the same.
TEST_F(OwnEndTest, ATaskThatExitedZeroBeforeADrainFinished) {
  RunOneJob();
  const int64_t n2 = Register("n2", 1);
  clock_.Advance(Seconds{5});
  ASSERT_TRUE(master_->DrainNode("n1", "maintenance", true).ok());
  ASSERT_FALSE(IsFinal(Get(id_).state));
  Beat(n1_, {Exited(id_, 1, 0, 1004.9)});
  EXPECT_EQ(Get(id_).state, JobRecordState::kFinished);
  EXPECT_TRUE(StartsAfterPasses({n1_, n2}).empty());
}

// A 2-node gang preempted: rank 0 had exited 0 on its own, rank 1 was
// stopped by the preemption. The job's work is not done (rank 1 did not
// finish): it is a preemption and resumes as a whole.
TEST_F(OwnEndTest, AGangWithOneRankStoppedIsPreempted) {
  const auto [na, nb, id] = RequeueARunningGang();
  Beat(na, {Exited(id, 1, 0, 1004.9, 0)});
  EXPECT_FALSE(IsFinal(Get(id).state));
  Beat(nb, {Stopped(id, 1, v1::STOP_REASON_PREEMPT, 1005.3, 1)});
  EXPECT_EQ(Get(id).preemptions, 1);
  EXPECT_FALSE(StartsAfterPasses({na, nb}).empty());
}

// Both ranks exited 0 on their own: finished.
TEST_F(OwnEndTest, AGangWhoseRanksAllExitedZeroFinished) {
  const auto [na, nb, id] = RequeueARunningGang();
  Beat(na, {Exited(id, 1, 0, 1004.9, 0)});
  Beat(nb, {Exited(id, 1, 0, 1004.95, 1)});
  EXPECT_EQ(Get(id).state, JobRecordState::kFinished);
  EXPECT_TRUE(StartsAfterPasses({na, nb}).empty());
}

// A master stall. Node timeout 6 s; the master froze for 8 s while its
// node's task exited 0 and the agent's report waited. Judged at once, the
// node would be lost and the job run again; the stall moves the node's
// silence on by 7 s, the waiting report is taken, and the job finished.
TEST_F(OwnEndTest, AfterAStallTheWaitingReportsComeBeforeAnyNodeIsLost) {
  options_.node_timeout = Seconds{6};
  RunOneJob();
  clock_.Advance(Seconds{8});  // frozen
  master_->OnStall(Seconds{7});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].state(), v1::NODE_STATE_UP);
  EXPECT_EQ(Get(id_).state, JobRecordState::kRunning);
  Beat(n1_, {Exited(id_, 1, 0, 1003.0)});
  EXPECT_EQ(Get(id_).state, JobRecordState::kFinished);
  EXPECT_EQ(Get(id_).preemptions, 0);
}

// A stall does not hide a node that really died: one that stays silent is
// lost a node timeout after the stall.
TEST_F(OwnEndTest, ANodeSilentAfterAStallIsLostOneTimeoutLater) {
  options_.node_timeout = Seconds{6};
  RunOneJob();
  clock_.Advance(Seconds{8});
  master_->OnStall(Seconds{7});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  EXPECT_EQ(Get(id_).state, JobRecordState::kRunning);
  clock_.Advance(Seconds{6.5});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  EXPECT_EQ(Get(id_).state, JobRecordState::kPreempted);
}

// The master went down while the requeue's stop was on its way; the task
// exited 0 meanwhile. The restarted master forgot the launch (the job is
// stored preempted); n1 reports the end when it registers again, after
// another node came up and the job was decided there (deferred until n1
// is heard from): the job finished, and the new attempt never starts.
TEST_F(OwnEndTest, AnOwnEndReportedAfterAMasterRestartFinishesTheJob) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  Requeue(id_);
  master_.reset();  // the master dies
  Open();
  const int64_t n2 = Register("n2", 1);
  Pass();  // decided on n2, deferred: n1 has not reported in
  EXPECT_TRUE(Starts(Beat(n2)).empty());
  Register("n1", 1, {Exited(id_, 1, 0, 1004.9)});
  JobRecord rec = Get(id_);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_EQ(rec.exit_code, 0);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_TRUE(StartsAfterPasses({n2}).empty());
}

// After a restart, an end the stop caused (143, PREEMPTED) is no own end:
// the job runs again.
TEST_F(OwnEndTest, AStoppedEndReportedAfterAMasterRestartRunsTheJobAgain) {
  RunOneJob();
  clock_.Advance(Seconds{5});
  Requeue(id_);
  master_.reset();
  Open();
  const int64_t n1 = Register(
      "n1", 1, {Stopped(id_, 1, v1::STOP_REASON_PREEMPT, 1005.2)});
  EXPECT_FALSE(IsFinal(Get(id_).state));
  EXPECT_FALSE(StartsAfterPasses({n1}).empty());
}

// The master died while a 1-GPU launch was released on n1 but not yet
// reported running; n1 stayed away past the adoption window (4 s), so the
// job ran again on n2. Then n1 reports that the first attempt had exited 0
// on its own: that end is the job's. It finishes with exit 0 and the
// attempt on n2, a duplicate, is stopped and never starts again.
TEST_F(OwnEndTest, AnOwnEndReportedAfterTheAdoptionWindowStillEndsTheJob) {
  options_.node_timeout = Seconds{4};
  Open();
  n1_ = Register("n1", 1);
  id_ = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(n1_)).size(), 1u);  // released, never reported
  master_.reset();
  Open();
  const int64_t n2 = Register("n2", 1);
  clock_.Advance(Seconds{5});
  Beat(n2);
  ASSERT_TRUE(master_->CheckTimeouts().ok());  // the window ends
  Pass();
  std::vector<v1::StartTask> second = Starts(Beat(n2));
  ASSERT_EQ(second.size(), 1u);
  ASSERT_GT(second[0].task().attempt(), 1);
  const int later = second[0].task().attempt();
  Beat(n2, {Running(id_, later)});
  Register("n1", 1, {Exited(id_, 1, 0, 1000.5)});
  JobRecord rec = Get(id_);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_EQ(rec.exit_code, 0);
  const std::vector<v1::StopTask> stops =
      Stops(Beat(n2, {Running(id_, later)}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].attempt(), later);
  Beat(n2, {Stopped(id_, later, v1::STOP_REASON_CANCEL, 1006.0)});
  EXPECT_TRUE(StartsAfterPasses({n1_, n2}).empty());
  EXPECT_EQ(Get(id_).state, JobRecordState::kFinished);
}

// The same without a restart: n1 went silent and was lost, the job ran
// again on n2, and n1 comes back reporting that the first attempt had
// failed with code 3 on its own before its lease lapsed. The job failed
// with that code; its attempt on n2 is stopped.
TEST_F(OwnEndTest, AnOwnEndOfALostNodeReportedLateEndsTheJob) {
  int64_t n2 = 0;
  int later = 0;
  ASSERT_NO_FATAL_FAILURE(LoseN1AndRunAgainOnN2(&n2, &later));
  Register("n1", 1, {Exited(id_, 1, 3, 1002.0)});
  JobRecord rec = Get(id_);
  EXPECT_EQ(rec.state, JobRecordState::kFailed);
  EXPECT_EQ(rec.exit_code, 3);
  ASSERT_EQ(Stops(Beat(n2, {Running(id_, later)})).size(), 1u);
}

// A node cannot end a job it never ran: n2 reporting an own end of the
// attempt that ran on n1 changes nothing.
TEST_F(OwnEndTest, AnOwnEndFromANodeTheAttemptDidNotRunOnIsIgnored) {
  int64_t n2 = 0;
  int later = 0;
  ASSERT_NO_FATAL_FAILURE(LoseN1AndRunAgainOnN2(&n2, &later));
  Beat(n2, {Running(id_, later), Exited(id_, 1, 0, 1002.0)});
  EXPECT_EQ(Get(id_).state, JobRecordState::kRunning);
  EXPECT_TRUE(Stops(Beat(n2, {Running(id_, later)})).empty());
}

// The master froze right after a restart, past its adoption window, and an
// agent's heartbeat was taken before the master's loop saw the stall. The
// fence on n1 holds until the window is judged (CheckTimeouts, after the
// stall moved it on), so n1's report of the requeued task's own end comes
// first: the job finished and never started on n2.
TEST_F(OwnEndTest, AStallAfterARestartKeepsTheFenceUntilTheWindowIsJudged) {
  options_.node_timeout = Seconds{4};
  RunOneJob();
  clock_.Advance(Seconds{1});
  Requeue(id_);
  master_.reset();
  Open();
  const int64_t n2 = Register("n2", 1);
  Pass();
  clock_.Advance(Seconds{7});  // frozen
  EXPECT_TRUE(Starts(Beat(n2)).empty());
  Pass();
  EXPECT_TRUE(Starts(Beat(n2)).empty());
  master_->OnStall(Seconds{6});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Register("n1", 1, {Exited(id_, 1, 0, 1000.9)});
  EXPECT_EQ(Get(id_).state, JobRecordState::kFinished);
  EXPECT_TRUE(StartsAfterPasses({n1_, n2}).empty());
}

}  // namespace
}  // namespace tiresias
