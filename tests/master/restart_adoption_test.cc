// A master restart (or a standby taking the lead) in the moment between a
// launch's release and its "running" report: the agent may have started the
// task, which the store must not forget (JobRecord::live_attempt). Judged
// from what the new master tells the agent (starts and stops) and from the
// job's record and events. MasterState with a fake clock and real SQLite
// files; the agent's messages are built by hand.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_RUNNING;

// "kind attempt-detail" of every event of the job, oldest first.
std::vector<std::string> EventKinds(const JobRecord& rec) {
  std::vector<std::string> kinds;
  for (const JobEvent& e : rec.events) kinds.push_back(e.kind);
  return kinds;
}

int Count(const std::vector<std::string>& list, const std::string& word) {
  return static_cast<int>(std::count(list.begin(), list.end(), word));
}

class RestartAdoptionTest : public MasterFixture {
 protected:
  // One 1-GPU node "n1" and a 1-GPU job decided there, its start sent to
  // the agent (the heartbeat's answer) but no "running" report yet.
  JobId StartSentNotReported(int64_t* node) {
    Open();
    *node = Register("n1", 1);
    const JobId id = Submit(Spec(1));
    Pass();
    const std::vector<v1::StartTask> starts = Starts(Beat(*node));
    EXPECT_EQ(starts.size(), 1u);
    if (!starts.empty()) {
      EXPECT_EQ(starts[0].task().job_id(), id);
      EXPECT_EQ(starts[0].task().attempt(), 1);
    }
    return id;
  }
};

// The task started, its report never reached the disk: the new master
// adopts it (attempt 1 runs on), rather than stop it as an orphan and run
// the job again as attempt 2.
TEST_F(RestartAdoptionTest, AStartedLaunchWhoseReportWasLostIsAdopted) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  ASSERT_NE(Get(id).state, JobRecordState::kRunning);  // still starting
  master_.reset();

  clock_.Advance(Seconds{2});
  Open();
  const v1::TaskStatus running =
      Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1001.0);
  v1::RegisterResponse registered;
  n1 = Register("n1", 1, {running}, &registered);
  EXPECT_TRUE(Stops(registered).empty()) << "the started task was stopped";
  Pass();
  const v1::HeartbeatResponse beat = Beat(n1, {running});
  // What should run there is attempt 1 (the desired state lists the
  // running task: the agent stops whatever is not listed), and nothing is
  // stopped.
  const std::vector<v1::StartTask> wanted = Starts(beat);
  ASSERT_EQ(wanted.size(), 1u);
  EXPECT_EQ(wanted[0].task().job_id(), id);
  EXPECT_EQ(wanted[0].task().attempt(), 1);
  EXPECT_TRUE(Stops(beat).empty());
  // Past the adoption window too: nothing changes.
  clock_.Advance(Seconds{31});
  Beat(n1, {running});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  EXPECT_TRUE(Stops(Beat(n1, {running})).empty());

  const JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(rec.preemptions, 0);
  ASSERT_TRUE(rec.first_start_time.has_value());
  EXPECT_EQ(rec.first_start_time->count(), 1001.0);  // its task's start
  const std::vector<std::string> kinds = EventKinds(rec);
  EXPECT_EQ(Count(kinds, "started"), 1);
  EXPECT_EQ(Count(kinds, "adopted"), 1);
  EXPECT_EQ(Count(kinds, "preempted"), 0);
  // And once more across a second restart, now stored running.
  master_.reset();
  Open();
  n1 = Register("n1", 1, {running});
  Pass();
  EXPECT_TRUE(Stops(Beat(n1, {running})).empty());
  EXPECT_EQ(Get(id).attempt, 1);
}

// A gang: adopted once each rank's node has reported its task, and
// running (with one "started") from then on.
TEST_F(RestartAdoptionTest, AStartingGangIsAdoptedOnceEveryRankReportsIn) {
  options_.node_timeout = Seconds{30};
  Open();
  int64_t n1 = Register("n1", 1);
  int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const std::vector<v1::StartTask> s1 = Starts(Beat(n1));
  const std::vector<v1::StartTask> s2 = Starts(Beat(n2));
  ASSERT_EQ(s1.size(), 1u);
  ASSERT_EQ(s2.size(), 1u);
  const v1::TaskStatus t1 =
      Task(id, 1, s1[0].task().rank(), TASK_STATE_RUNNING, {0}, {}, 1001.0);
  const v1::TaskStatus t2 =
      Task(id, 1, s2[0].task().rank(), TASK_STATE_RUNNING, {0}, {}, 1001.5);
  master_.reset();
  clock_.Advance(Seconds{2});
  Open();
  n1 = Register("n1", 1, {t1});
  Pass();
  EXPECT_NE(Get(id).state, JobRecordState::kRunning);  // n2 not heard yet
  n2 = Register("n2", 1, {t2});
  Pass();
  for (int64_t node : {n1, n2}) {
    const v1::HeartbeatResponse beat = Beat(node, {node == n1 ? t1 : t2});
    const std::vector<v1::StartTask> wanted = Starts(beat);
    ASSERT_EQ(wanted.size(), 1u);
    EXPECT_EQ(wanted[0].task().attempt(), 1);
    EXPECT_TRUE(Stops(beat).empty());
  }
  const JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(rec.preemptions, 0);
  ASSERT_TRUE(rec.first_start_time.has_value());
  EXPECT_EQ(rec.first_start_time->count(), 1001.5);  // its last rank's start
  EXPECT_EQ(Count(EventKinds(rec), "started"), 1);
  EXPECT_EQ(Count(EventKinds(rec), "adopted"), 1);
}

// The agent has the task but its process is still starting (an image
// being pulled): adopted (not started again), and running only once a
// report says its process runs.
TEST_F(RestartAdoptionTest, ATaskStillStartingIsAdoptedAndRunsAtItsReport) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  master_.reset();
  clock_.Advance(Seconds{2});
  Open();
  const v1::TaskStatus starting =
      Task(id, 1, 0, v1::TASK_STATE_STARTING, {0}, {}, {});
  n1 = Register("n1", 1, {starting});
  Pass();
  for (const v1::StartTask& start : Starts(Beat(n1, {starting}))) {
    EXPECT_EQ(start.task().attempt(), 1);
  }
  JobRecord rec = Get(id);
  EXPECT_NE(rec.state, JobRecordState::kRunning);
  EXPECT_FALSE(rec.first_start_time.has_value());
  EXPECT_EQ(Count(EventKinds(rec), "started"), 0);
  clock_.Advance(Seconds{3});
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1005.0)});
  Pass();
  rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  ASSERT_TRUE(rec.first_start_time.has_value());
  EXPECT_EQ(rec.first_start_time->count(), 1005.0);
  EXPECT_EQ(Count(EventKinds(rec), "started"), 1);
  EXPECT_EQ(Count(EventKinds(rec), "adopted"), 1);
}

// Its spawn failed (kStartFailedExitCode) while the master was down: a
// failed start, retried as its next attempt, not a failure of the job.
TEST_F(RestartAdoptionTest, ASpawnThatFailedDuringTheRestartIsAFailedStart) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  master_.reset();
  Open();
  n1 = Register("n1", 1,
                {Task(id, 1, 0, v1::TASK_STATE_EXITED, {0},
                      LaunchTable::kStartFailedExitCode, {})});
  Pass();
  const JobRecord rec = Get(id);
  EXPECT_FALSE(IsFinal(rec.state)) << JobRecordStateName(rec.state);
  EXPECT_EQ(rec.failed_starts, 1);
  EXPECT_EQ(rec.preemptions, 0);
  const std::vector<v1::StartTask> starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
}

// The agent never received the start (the master stopped first): when its
// node registers without the task, the job waits again at once, without a
// preemption, and starts as its next attempt; not only after the adoption
// window.
TEST_F(RestartAdoptionTest, AStartTheAgentNeverGotRunsAgainOnceItsNodeSaysSo) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  master_.reset();
  Open();
  n1 = Register("n1", 1, {});
  Pass();
  const std::vector<v1::StartTask> starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), id);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  const JobRecord rec = Get(id);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_EQ(Count(EventKinds(rec), "requeued"), 1);
}

// Until then, the job waits for its node: a second node that registers
// first does not get it, though it is free.
TEST_F(RestartAdoptionTest,
       AStartingJobDoesNotStartElsewhereBeforeItsNodeReports) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  master_.reset();
  Open();
  const int64_t n2 = Register("n2", 1);
  Pass();
  EXPECT_TRUE(Starts(Beat(n2)).empty()) << "attempt 1 may run on n1";
  // n1 never returns: the adoption window ends, and the job runs on n2.
  clock_.Advance(Seconds{31});
  Beat(n2);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  const std::vector<v1::StartTask> starts = Starts(Beat(n2));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), id);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  // It had not run: no preemption is counted.
  const JobRecord rec = Get(id);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_EQ(Count(EventKinds(rec), "preempted"), 1);  // says why
}

// A running job whose node registers without its task (the agent lost it)
// is preempted at once, and runs again as its next attempt; not only when
// the adoption window ends.
TEST_F(RestartAdoptionTest,
       ARunningJobWhoseNodeReturnsWithoutItIsPreemptedAtOnce) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  ASSERT_EQ(Get(id).state, JobRecordState::kRunning);
  master_.reset();
  Open();
  n1 = Register("n1", 1, {});
  Pass();
  const std::vector<v1::StartTask> starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  EXPECT_EQ(Get(id).preemptions, 1);
}

// A report of the task that is refused (here a GPU index past the node's
// count) is not its absence: the task may still run, so the job is not
// given up before the adoption window ends.
TEST_F(RestartAdoptionTest, ARefusedReportOfTheTaskDoesNotGiveItUp) {
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  master_.reset();
  Open();
  v1::RegisterResponse registered;
  n1 = Register("n1", 1, {Task(id, 1, 0, TASK_STATE_RUNNING, {3}, {}, 1001.0)},
                &registered);
  ASSERT_EQ(registered.rejected_size(), 1);
  Pass();
  EXPECT_TRUE(Starts(Beat(n1)).empty());
  EXPECT_EQ(Get(id).preemptions, 0);
}

// A gang one of whose nodes registers without its rank: stopped at once on
// the nodes that have theirs, and its next attempt starts only once that
// rank has ended.
TEST_F(RestartAdoptionTest, AGangMissingARankIsStoppedAtOnce) {
  options_.node_timeout = Seconds{30};
  Open();
  int64_t n1 = Register("n1", 1);
  int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const int r1 = Starts(Beat(n1))[0].task().rank();
  const int r2 = Starts(Beat(n2))[0].task().rank();
  const v1::TaskStatus t1 =
      Task(id, 1, r1, TASK_STATE_RUNNING, {0}, {}, 1001.0);
  Beat(n1, {t1});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  ASSERT_EQ(Get(id).state, JobRecordState::kRunning);
  master_.reset();
  Open();
  n1 = Register("n1", 1, {t1});
  n2 = Register("n2", 1, {});
  Pass();
  // Preempted (its next attempt may be decided, waiting: "starting").
  const JobRecord rec = Get(id);
  EXPECT_NE(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.preemptions, 1);
  v1::HeartbeatResponse beat = Beat(n1, {t1});
  EXPECT_TRUE(Starts(beat).empty());
  ASSERT_EQ(Stops(beat).size(), 1u);
  EXPECT_EQ(Stops(beat)[0].attempt(), 1);
  EXPECT_TRUE(Starts(Beat(n2)).empty()) << "rank " << r1 << " still runs";
  // Its rank on n1 has ended: the next attempt starts.
  Beat(n1, {Task(id, 1, r1, v1::TASK_STATE_PREEMPTED, {0}, 143, 1001.0)});
  Pass();
  std::vector<v1::StartTask> starts = Starts(Beat(n1));
  for (const v1::StartTask& s : Starts(Beat(n2))) starts.push_back(s);
  ASSERT_EQ(starts.size(), 2u);
  for (const v1::StartTask& s : starts) EXPECT_EQ(s.task().attempt(), 2);
}

// Given up early, a gang's next attempt still waits for its nodes not
// heard from yet (their ranks may run until their leases lapse), until the
// adoption window ends, though a free node could take it.
TEST_F(RestartAdoptionTest, AGangGivenUpEarlyWaitsForItsUnheardNodes) {
  options_.node_timeout = Seconds{30};
  Open();
  int64_t n1 = Register("n1", 1);
  int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const int r1 = Starts(Beat(n1))[0].task().rank();
  const int r2 = Starts(Beat(n2))[0].task().rank();
  Beat(n1, {Task(id, 1, r1, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  master_.reset();
  Open();
  n1 = Register("n1", 1, {});  // lost its rank; n2 not heard from
  const int64_t n3 = Register("n3", 2);
  Pass();
  EXPECT_EQ(Get(id).preemptions, 1);
  EXPECT_TRUE(Starts(Beat(n3)).empty()) << "n2's rank may still run";
  clock_.Advance(Seconds{31});
  Beat(n1);
  Beat(n3);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  const std::vector<v1::StartTask> starts = Starts(Beat(n3));
  ASSERT_FALSE(starts.empty());
  EXPECT_EQ(starts[0].task().job_id(), id);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  EXPECT_EQ(Get(id).preemptions, 1);  // not counted twice
}

// A launch stopped while it was starting (preempted before any report) is
// not live any more: a new master that finds its task running stops it as
// an orphan, and does not adopt it.
TEST_F(RestartAdoptionTest, ALaunchStoppedWhileStartingIsNotAdopted) {
  options_.queues = *QueueConfig::Create({10.0});
  options_.node_timeout = Seconds{30};
  int64_t n1 = 0;
  const JobId id = StartSentNotReported(&n1);
  clock_.Advance(Seconds{11});
  Submit(Spec(1));
  Pass();  // the first job has passed its queue's limit: preempted
  ASSERT_EQ(Get(id).state, JobRecordState::kPreempted);
  master_.reset();
  Open();
  v1::RegisterResponse registered;
  n1 = Register("n1", 1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1001.0)},
                &registered);
  Pass();
  const v1::HeartbeatResponse beat =
      Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1001.0)});
  // Not in what should run there: the agent stops it (an orphan).
  for (const auto* resp : {&registered.desired(), &beat.desired()}) {
    for (const v1::StartTask& start : resp->run()) {
      EXPECT_FALSE(start.task().job_id() == id && start.task().attempt() == 1)
          << "the stopped launch was adopted";
    }
  }
  EXPECT_NE(Get(id).state, JobRecordState::kRunning);
  EXPECT_EQ(Count(EventKinds(Get(id)), "adopted"), 0);
}

}  // namespace
}  // namespace tiresias::master_testing
