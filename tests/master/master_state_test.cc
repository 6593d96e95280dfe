// MasterState with a fake clock and real SQLite files: the job lifecycle
// driven by agent messages, bad requests, preemption, node failure and
// restart recovery.
#include "master/master_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

bool HasEvent(const JobRecord& rec, const std::string& kind) {
  return std::any_of(rec.events.begin(), rec.events.end(),
                     [&](const JobEvent& e) { return e.kind == kind; });
}

class MasterStateTest : public MasterFixture {};

TEST_F(MasterStateTest, JobRunsToCompletion) {
  Open();
  JobRequest spec = Spec(2, {"python3", "train.py"});
  spec.env["LR"] = "0.1";
  spec.workdir = "/home/alice/runs";
  spec.output = "out-%j-%R-%r.txt";
  spec.error = "/logs/%%j-%j.err";
  const JobId id = Submit(spec);
  ASSERT_GT(id, 0);
  master_.reset();  // the store holds its file exclusively
  {  // durable before the id was returned
    auto store = SqliteStore::Open(options_.state_dir + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status();
    auto rec = (*store)->GetJob(id);
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(rec->spec, spec);
    EXPECT_EQ(rec->state, JobRecordState::kPending);
  }
  Open();
  const int64_t node = Register("n1", 4);
  Pass();
  v1::HeartbeatResponse resp = Beat(node);
  auto starts = Starts(resp);
  ASSERT_EQ(starts.size(), 1u);
  const v1::StartTask& start = starts[0];
  EXPECT_EQ(start.task().job_id(), id);
  EXPECT_EQ(start.task().attempt(), 1);
  EXPECT_EQ(start.task().rank(), 0);
  EXPECT_EQ(start.world_size(), 1);
  EXPECT_EQ(start.gpu_indexes_size(), 2);
  EXPECT_EQ(start.master_addr(), "n1.local");
  EXPECT_GT(start.master_port(), 0);
  EXPECT_EQ(start.command(1), "train.py");
  EXPECT_EQ(start.env().at("LR"), "0.1");
  // Where it starts, and its output files with this task's placeholders.
  EXPECT_EQ(start.workdir(), "/home/alice/runs");
  EXPECT_EQ(start.output(), absl::StrCat("out-", id, "-1-0.txt"));
  EXPECT_EQ(start.error(), absl::StrCat("/logs/%j-", id, ".err"));
  EXPECT_EQ(start.restart_count(), 0);
  EXPECT_EQ(Get(id).state, JobRecordState::kStarting);  // not yet reported

  std::vector<int> gpus(start.gpu_indexes().begin(), start.gpu_indexes().end());
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);
  clock_.Advance(Seconds{10});
  resp = Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, gpus, 0, 1001.0)});
  ASSERT_EQ(resp.acknowledged_size(), 1);
  JobRecord done = Get(id);
  EXPECT_EQ(done.state, JobRecordState::kFinished);
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_NEAR(done.executed.count(), 10, 1e-6);
  EXPECT_NEAR(done.attained_gpu_seconds, 20, 1e-6);
  EXPECT_TRUE(HasEvent(done, "started"));
  EXPECT_TRUE(HasEvent(done, "finished"));
}

TEST_F(MasterStateTest, FailedTaskFailsTheJob) {
  Open();
  const JobId id = Submit(Spec(1));
  const int64_t node = Register("n1", 1);
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {0}, 3)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kFailed);
  EXPECT_EQ(rec.exit_code, 3);
}

TEST_F(MasterStateTest, BadRequestsGetClearErrors) {
  Open();
  auto zero = master_->SubmitJob(Spec(0));
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("spec.cpus"), std::string::npos);
  auto empty = master_->SubmitJob(Spec(1, {}));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("spec.command"), std::string::npos);
  // No node up yet: any positive count is accepted and waits.
  EXPECT_TRUE(master_->SubmitJob(Spec(64)).ok());
  Register("n1", 4);
  auto too_many = master_->SubmitJob(Spec(5));
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("cluster has 4"),
            std::string::npos)
      << too_many.status();
  EXPECT_EQ(master_->GetJob(999).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(master_->CancelJob(999).status().code(),
            absl::StatusCode::kNotFound);
  v1::HeartbeatRequest beat;
  beat.set_node_id(77);
  EXPECT_EQ(master_->Heartbeat(beat).status().code(),
            absl::StatusCode::kNotFound);
  v1::RegisterRequest reg;
  reg.set_name("n2");
  EXPECT_EQ(master_->Register(reg).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MasterStateTest, CancelPendingAndRunning) {
  Open();
  const int64_t node = Register("n1", 1);
  const JobId running = Submit(Spec(1));
  const JobId pending = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(running, 1, 0, TASK_STATE_RUNNING, {0})});
  auto cancelled = master_->CancelJob(pending);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state, JobRecordState::kCancelled);
  auto stopping = master_->CancelJob(running);
  ASSERT_TRUE(stopping.ok());
  EXPECT_EQ(stopping->state, JobRecordState::kRunning);
  auto stops = Stops(Beat(node, {Task(running, 1, 0, TASK_STATE_RUNNING, {0})}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_CANCEL);
  Beat(node, {Task(running, 1, 0, TASK_STATE_PREEMPTED, {0}, 143)});
  EXPECT_EQ(Get(running).state, JobRecordState::kCancelled);
  EXPECT_EQ(master_->CancelJob(running).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(MasterStateTest, DemotedJobIsPreemptedForANewOne) {
  options_.policy = "tiresias-l";
  options_.queues = *QueueConfig::Create({10.0});  // 10 GPU-seconds
  Open();
  const int64_t node = Register("n1", 2);
  const JobId big = Submit(Spec(2));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(big, 1, 0, TASK_STATE_RUNNING, {0, 1})});
  clock_.Advance(Seconds{10});  // 20 GPU-seconds: demoted at +5 s
  const JobId small = Submit(Spec(1));
  Pass();
  EXPECT_EQ(Get(big).queue, 1);
  v1::HeartbeatResponse resp =
      Beat(node, {Task(big, 1, 0, TASK_STATE_RUNNING, {0, 1})});
  auto stops = Stops(resp);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].job_id(), big);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_PREEMPT);
  EXPECT_TRUE(Starts(resp).empty());  // GPUs still busy
  EXPECT_EQ(Get(big).state, JobRecordState::kPreempted);

  resp = Beat(node, {Task(big, 1, 0, TASK_STATE_PREEMPTED, {0, 1}, 143)});
  auto starts = Starts(resp);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), small);
  EXPECT_EQ(starts[0].gpu_indexes_size(), 1);
  JobRecord rec = Get(big);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_EQ(rec.preemptions, 1);
  EXPECT_TRUE(HasEvent(rec, "demoted"));
}

// A job being cancelled whose node goes silent before its tasks report the
// stop ends cancelled (nothing will ever report them).
TEST_F(MasterStateTest, CancelledJobOnALostNodeEnds) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t node = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0})});
  ASSERT_TRUE(master_->CancelJob(id).ok());
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);  // being stopped
  clock_.Advance(Seconds{31});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kCancelled);
  EXPECT_TRUE(rec.end_time.has_value());
}

TEST_F(MasterStateTest, SilentNodesJobMovesToAnotherNode) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId id = Submit(Spec(2));
  Pass();
  auto s1 = Starts(Beat(n1));
  auto s2 = Starts(Beat(n2));
  ASSERT_EQ(s1.size() + s2.size(), 1u);
  const int64_t first = s1.empty() ? n2 : n1;
  const int64_t other = s1.empty() ? n1 : n2;
  Beat(first, {Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1})});
  clock_.Advance(Seconds{20});
  Beat(other);
  clock_.Advance(Seconds{15});
  Beat(other);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_TRUE(HasEvent(rec, "node_down"));
  Pass();
  auto again = Starts(Beat(other));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].task().attempt(), 2);
  EXPECT_EQ(again[0].restart_count(), 1);
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const v1::Node& n : *nodes) {
    EXPECT_EQ(n.state(), n.id() == first ? v1::NODE_STATE_DOWN
                                         : v1::NODE_STATE_UP);
  }
  v1::HeartbeatRequest beat;
  beat.set_node_id(first);
  EXPECT_EQ(master_->Heartbeat(beat).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(MasterStateTest, RestartAdoptsRunningTasksAndStopsOrphans) {
  Open();
  int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(2));
  const JobId waiting = Submit(Spec(2));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  const v1::TaskStatus running =
      Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0);
  Beat(node, {running});
  master_.reset();  // no clean shutdown

  clock_.Advance(Seconds{5});
  Open();
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);
  EXPECT_EQ(Get(waiting).state, JobRecordState::kPending);
  v1::RegisterResponse reg;
  node = Register("n1", 2,
                  {running, Task(999, 1, 0, TASK_STATE_RUNNING, {})}, &reg);
  // The adopted task stays in the desired state (no new launch: attempt
  // 1); the unknown one is left out, so the agent stops it.
  auto runs = Starts(reg);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].task().job_id(), id);
  EXPECT_EQ(runs[0].task().attempt(), 1);
  EXPECT_TRUE(Stops(reg).empty());
  Pass();
  v1::HeartbeatResponse resp = Beat(node, {running});
  ASSERT_EQ(Starts(resp).size(), 1u) << resp.DebugString();
  EXPECT_EQ(Starts(resp)[0].task().attempt(), 1);
  EXPECT_TRUE(Stops(resp).empty()) << resp.DebugString();
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_TRUE(HasEvent(rec, "adopted"));
  clock_.Advance(Seconds{5});
  Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {0, 1}, 0, 1000.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kFinished);
  Pass();  // the waiting job gets the freed GPUs
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
}

TEST_F(MasterStateTest, UnadoptedRunningJobIsPreemptedAfterTimeout) {
  options_.node_timeout = Seconds{30};
  Open();
  int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(2));
  Pass();
  Beat(node);
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1})});
  master_.reset();
  Open();
  node = Register("n2", 2);  // n1 never comes back
  clock_.Advance(Seconds{31});
  Beat(node);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  EXPECT_EQ(Get(id).state, JobRecordState::kPreempted);
  Pass();
  auto starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
}

// Gang start: one part of a 2-node job fails to start (exit 127) while the
// other runs; the other is stopped and the job waits again, restart counted.
// Three failed starts in a row fail the job.
TEST_F(MasterStateTest, FailedGangStartGoesBackToPendingThenFails) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId id = Submit(Spec(4));
  std::vector<v1::StartTask> s1;  // n1's starts (from its last beat)
  for (int attempt = 1; attempt <= MasterState::kMaxFailedStarts; ++attempt) {
    Pass();
    if (attempt == 1) s1 = Starts(Beat(n1));
    auto s2 = Starts(Beat(n2));
    ASSERT_EQ(s1.size(), 1u) << "attempt " << attempt;
    ASSERT_EQ(s2.size(), 1u);
    EXPECT_EQ(s1[0].task().attempt(), attempt);
    EXPECT_EQ(s1[0].restart_count(), attempt - 1);
    EXPECT_EQ(s1[0].world_size(), 2);
    const int r1 = s1[0].task().rank();
    const int r2 = s2[0].task().rank();
    Beat(n1, {Task(id, attempt, r1, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0)});
    clock_.Advance(Seconds{1});
    auto resp = Beat(n2, {Task(id, attempt, r2, TASK_STATE_EXITED, {0, 1},
                               127)});
    EXPECT_EQ(resp.acknowledged_size(), 1);
    JobRecord rec = Get(id);
    auto stops = Stops(Beat(n1, {Task(id, attempt, r1, TASK_STATE_RUNNING,
                                      {0, 1}, {}, 1000.0)})
                           );
    ASSERT_EQ(stops.size(), 1u);
    EXPECT_EQ(stops[0].job_id(), id);
    EXPECT_EQ(stops[0].attempt(), attempt);
    if (attempt < MasterState::kMaxFailedStarts) {
      EXPECT_EQ(rec.state, JobRecordState::kPending);
      EXPECT_EQ(rec.restarts, attempt);
      EXPECT_NEAR(rec.executed.count(), 0, 1e-9);
      EXPECT_TRUE(HasEvent(rec, "start_failed"));
      EXPECT_FALSE(HasEvent(rec, "failed"));
      EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_PREEMPT);
      // Not restarted while n1's part still holds its GPUs.
      Pass();
      EXPECT_TRUE(Starts(Beat(n2)).empty());
    } else {
      EXPECT_EQ(rec.state, JobRecordState::kFailed);
      EXPECT_EQ(rec.exit_code, 127);
      ASSERT_FALSE(rec.events.empty());
      EXPECT_EQ(rec.events.back().kind, "failed");
      EXPECT_NE(rec.events.back().detail.find("3 failed starts in a row"),
                std::string::npos)
          << rec.events.back().detail;
    }
    // Its GPUs free again: the next attempt's start (decided by the pass
    // above) goes out with this reply.
    resp = Beat(n1, {Task(id, attempt, r1, TASK_STATE_PREEMPTED, {0, 1}, 143)});
    EXPECT_EQ(resp.acknowledged_size(), 1);
    s1 = Starts(resp);
  }
  EXPECT_TRUE(s1.empty());
  Pass();
  EXPECT_TRUE(Starts(Beat(n1)).empty());
  EXPECT_TRUE(Starts(Beat(n2)).empty());
}

// The failed-start count is stored: a master restart between failed starts
// does not give the job a fresh set of kMaxFailedStarts.
TEST_F(MasterStateTest, FailedStartCountSurvivesMasterRestart) {
  Open();
  int64_t node = Register("n1", 1);
  const JobId id = Submit(Spec(1, {"no-such-command"}));
  auto fail_to_start = [&](int attempt) {
    Pass();
    auto starts = Starts(Beat(node));
    ASSERT_EQ(starts.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(starts[0].task().attempt(), attempt);
    Beat(node, {Task(id, attempt, 0, TASK_STATE_EXITED, {0},
                     MasterState::kStartFailedExitCode)});
  };
  fail_to_start(1);
  fail_to_start(2);
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPending);
  EXPECT_EQ(rec.failed_starts, 2);

  master_.reset();
  clock_.Advance(Seconds{60});
  Open();
  rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPending);
  EXPECT_EQ(rec.failed_starts, 2);
  node = Register("n1", 1);
  fail_to_start(3);  // the third in a row, not the first of three more
  rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kFailed);
  EXPECT_EQ(rec.exit_code, MasterState::kStartFailedExitCode);
  ASSERT_FALSE(rec.events.empty());
  EXPECT_NE(rec.events.back().detail.find("3 failed starts in a row"),
            std::string::npos)
      << rec.events.back().detail;
  Pass();
  EXPECT_TRUE(Starts(Beat(node)).empty());
}

// A launch that fully runs ends the streak, in the store too.
TEST_F(MasterStateTest, RunningLaunchResetsStoredFailedStarts) {
  Open();
  const int64_t node = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {0},
                   MasterState::kStartFailedExitCode)});
  EXPECT_EQ(Get(id).failed_starts, 1);
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(id, 2, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.failed_starts, 0);
}

std::vector<JobId> Ids(const absl::StatusOr<std::vector<JobRecord>>& jobs) {
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  std::vector<JobId> ids;
  if (jobs.ok()) {
    for (const JobRecord& job : *jobs) ids.push_back(job.id);
  }
  return ids;
}

// A job is starting from the pass that decides it until every part of its
// launch has reported RUNNING; ListJobs filters on the state shown.
TEST_F(MasterStateTest, StartingFromDecisionUntilEveryPartRuns) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId id = Submit(Spec(4));  // one part on each node
  const JobId other = Submit(Spec(1));  // waits: no GPU left
  EXPECT_EQ(Get(id).state, JobRecordState::kPending);
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kPending)),
            (std::vector<JobId>{id, other}));
  Pass();
  // Decided, StartTasks queued but not yet sent.
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kStarting);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(rec.nodes.size(), 2u);
  EXPECT_EQ(Get(other).state, JobRecordState::kPending);
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kStarting)),
            (std::vector<JobId>{id}));
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kPending)),
            (std::vector<JobId>{other}));
  EXPECT_TRUE(Ids(master_->ListJobs(JobRecordState::kRunning)).empty());
  auto all = master_->ListJobs();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].state, JobRecordState::kStarting);
  EXPECT_EQ((*all)[1].state, JobRecordState::kPending);

  auto s1 = Starts(Beat(n1));
  auto s2 = Starts(Beat(n2));
  ASSERT_EQ(s1.size(), 1u);
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(Get(id).state, JobRecordState::kStarting);  // sent, no report
  Beat(n1, {Task(id, 1, s1[0].task().rank(), TASK_STATE_RUNNING, {0, 1}, {},
                 1000.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kStarting);  // one part of two
  EXPECT_FALSE(HasEvent(Get(id), "started"));
  Beat(n2, {Task(id, 1, s2[0].task().rank(), TASK_STATE_RUNNING, {0, 1}, {},
                 1000.0)});
  rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_TRUE(HasEvent(rec, "started"));
  EXPECT_TRUE(Ids(master_->ListJobs(JobRecordState::kStarting)).empty());
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kRunning)),
            (std::vector<JobId>{id}));
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kPending)),
            (std::vector<JobId>{other}));
}

// A launch deferred until a preempted job's tasks free their GPUs is
// starting; the preempted job shows preempted meanwhile.
TEST_F(MasterStateTest, DeferredLaunchIsStarting) {
  options_.queues = *QueueConfig::Create({10.0});  // 10 GPU-seconds
  Open();
  const int64_t node = Register("n1", 2);
  const JobId big = Submit(Spec(2));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(big, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0)});
  clock_.Advance(Seconds{10});  // demoted
  const JobId small = Submit(Spec(1));
  Pass();  // big preempted, small decided onto one of its GPUs
  EXPECT_EQ(Get(big).state, JobRecordState::kPreempted);
  EXPECT_EQ(Get(small).state, JobRecordState::kStarting);
  v1::HeartbeatResponse resp =
      Beat(node, {Task(big, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0)});
  ASSERT_EQ(Stops(resp).size(), 1u);
  EXPECT_TRUE(Starts(resp).empty());  // deferred: GPUs busy
  EXPECT_EQ(Get(small).state, JobRecordState::kStarting);
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kStarting)),
            (std::vector<JobId>{small}));
  EXPECT_TRUE(Ids(master_->ListJobs(JobRecordState::kPending)).empty());
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kPreempted)),
            (std::vector<JobId>{big}));

  resp = Beat(node, {Task(big, 1, 0, TASK_STATE_PREEMPTED, {0, 1}, 143)});
  auto starts = Starts(resp);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), small);
  EXPECT_EQ(Get(small).state, JobRecordState::kStarting);
  std::vector<int> gpus(starts[0].gpu_indexes().begin(),
                        starts[0].gpu_indexes().end());
  Beat(node, {Task(small, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1011.0)});
  EXPECT_EQ(Get(small).state, JobRecordState::kRunning);
  EXPECT_TRUE(Ids(master_->ListJobs(JobRecordState::kStarting)).empty());
}

// A launch preempted before it ever started (deferred while the GPUs it
// was given were still checkpointing) counts no time, and its job's record
// follows (a write syncs only the jobs something happened to), in memory
// and on disk.
TEST_F(MasterStateTest, PreemptedDeferredLaunchUpdatesTheRecord) {
  options_.policy = "las";
  Open();
  const int64_t node = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{10});  // 1010
  const JobId b = Submit(Spec(1));
  Pass();  // a preempted; b decided onto a's GPU, deferred while a stops
  ASSERT_EQ(Get(b).state, JobRecordState::kStarting);
  clock_.Advance(Seconds{5});  // 1015
  const JobId c = Submit(Spec(1));
  Pass();  // b (attained 5 as the scheduler counted it) yields to c
  JobRecord rec = Get(b);
  EXPECT_EQ(rec.state, JobRecordState::kPending);  // it never ran
  EXPECT_EQ(rec.executed, Seconds{0});
  EXPECT_EQ(rec.attained_gpu_seconds, 0);
  EXPECT_NEAR(rec.last_stop_time.count(), 1010, 1e-6);  // waiting since submit
  EXPECT_EQ(Get(c).state, JobRecordState::kStarting);
  master_.reset();
  Open();  // what was stored
  EXPECT_EQ(Get(b).executed, Seconds{0});
  EXPECT_NEAR(Get(b).last_stop_time.count(), 1010, 1e-6);
}

// Starting is not stored: a restarted master has forgotten the launch and
// shows the job as it was stored (pending) until it decides again.
TEST_F(MasterStateTest, RestartForgetsAStartingLaunch) {
  Open();
  int64_t node = Register("n1", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  EXPECT_EQ(Get(id).state, JobRecordState::kStarting);
  master_.reset();
  Open();
  EXPECT_EQ(Get(id).state, JobRecordState::kPending);
  EXPECT_EQ(Ids(master_->ListJobs(JobRecordState::kPending)),
            (std::vector<JobId>{id}));
  node = Register("n1", 1);
  Pass();
  EXPECT_EQ(Get(id).state, JobRecordState::kStarting);
  auto starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
}

// Executed time follows the agents' reported start and end, not the
// master's decisions.
TEST_F(MasterStateTest, ExecutedTimeFollowsReportedTimes) {
  Open();
  const int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(2));
  Pass();  // decided at 1000
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  clock_.Advance(Seconds{5});
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1005.0)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  ASSERT_TRUE(rec.first_start_time.has_value());
  EXPECT_NEAR(rec.first_start_time->count(), 1005, 1e-9);
  clock_.Advance(Seconds{10});  // 1015
  EXPECT_NEAR(Get(id).executed.count(), 10, 1e-6);  // not 15
  clock_.Advance(Seconds{2});   // the exit reaches the master late
  v1::TaskStatus done = Task(id, 1, 0, TASK_STATE_EXITED, {0, 1}, 0, 1005.0);
  done.set_end_time(1015.0);
  Beat(node, {done});
  rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_NEAR(rec.executed.count(), 10, 1e-6);
  EXPECT_NEAR(rec.attained_gpu_seconds, 20, 1e-6);
}

// A preempted launch's run lasts until its parts report their end
// (checkpointing), not just until the decision.
TEST_F(MasterStateTest, PreemptedRunCountsUntilReportedEnd) {
  options_.queues = *QueueConfig::Create({10.0});
  Open();
  const int64_t node = Register("n1", 2);
  const JobId big = Submit(Spec(2));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(big, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0)});
  clock_.Advance(Seconds{10});  // 1010
  Submit(Spec(1));
  Pass();  // preempted at 1010 after 10 s
  ASSERT_EQ(Get(big).state, JobRecordState::kPreempted);
  EXPECT_NEAR(Get(big).executed.count(), 10, 1e-6);
  clock_.Advance(Seconds{4});  // 1014
  v1::TaskStatus stopped =
      Task(big, 1, 0, TASK_STATE_PREEMPTED, {0, 1}, 143, 1000.0);
  stopped.set_end_time(1013.0);
  Beat(node, {stopped});
  JobRecord rec = Get(big);
  EXPECT_NEAR(rec.executed.count(), 13, 1e-6);
  EXPECT_NEAR(rec.total_executed.count(), 13, 1e-6);
  EXPECT_NEAR(rec.last_stop_time.count(), 1013, 1e-6);
}

// A run shorter than the heartbeat interval: the task's first report
// already says it exited. The job still gets its "started" event (at the
// reported start) before "finished", and its executed time.
TEST_F(MasterStateTest, TaskEndedAtFirstReportStillStarts) {
  Open();
  const int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(1));
  Pass();  // decided at 1000
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  clock_.Advance(Seconds{3});  // 1003: the next heartbeat
  v1::TaskStatus done = Task(id, 1, 0, TASK_STATE_EXITED, {0}, 0, 1001.0);
  done.set_end_time(1002.0);
  v1::HeartbeatResponse resp = Beat(node, {done});
  EXPECT_EQ(resp.acknowledged_size(), 1);
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kFinished);
  EXPECT_EQ(rec.exit_code, 0);
  std::vector<std::string> kinds;
  for (const JobEvent& e : rec.events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"submitted", "started", "finished"}));
  ASSERT_EQ(rec.events.size(), 3u);
  EXPECT_NEAR(rec.events[1].time.count(), 1001, 1e-9);
  ASSERT_TRUE(rec.first_start_time.has_value());
  EXPECT_NEAR(rec.first_start_time->count(), 1001, 1e-9);
  EXPECT_NEAR(rec.executed.count(), 1, 1e-6);
}

// A failed spawn (exit 127) reported at once is not a start.
TEST_F(MasterStateTest, SpawnFailureAtFirstReportIsNoStart) {
  Open();
  const int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(1));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {0},
                   MasterState::kStartFailedExitCode, 1000.0)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPending);
  EXPECT_FALSE(HasEvent(rec, "started"));
  EXPECT_TRUE(HasEvent(rec, "start_failed"));
}

}  // namespace
}  // namespace tiresias::master_testing
