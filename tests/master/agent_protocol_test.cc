// The agent protocol as an agent under attack or failure sees it, one test
// per way the one-shot command protocol broke (issue: "no job ever runs
// twice, no launch is lost"): MasterState with a fake clock and real SQLite
// files; the agent's messages are built by hand, the way a slow, restarted,
// stopped or lying agent would send them.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_EXITING;
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

// The job ids of the tasks an answer says should run.
template <typename Response>
std::vector<JobId> RunIds(const Response& resp) {
  std::vector<JobId> ids;
  for (const v1::StartTask& s : Starts(resp)) ids.push_back(s.task().job_id());
  return ids;
}

class AgentProtocolTest : public MasterFixture {
 protected:
  struct OneJob {
    int64_t node = 0;
    JobId id = 0;
    v1::TaskStatus running;  // attempt 1, rank 0, on GPU 0
  };
  // Opens the master with one 1-GPU node "n1" and a 1-GPU job decided
  // there; with report_running, n1 has reported its attempt running.
  OneJob OneJobOnOneGpu(bool report_running) {
    Open();
    OneJob one;
    one.node = Register("n1", 1);
    one.id = Submit(Spec(1));
    Pass();
    one.running = Task(one.id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
    if (report_running) Beat(one.node, {one.running});
    return one;
  }
};

// 1. Stop before start. The master decides to run a job and the user
// cancels it before the agent heard of it (the agent was stopped, or slow).
// The agent's next report must not start it: it is no longer wanted, and
// the job ends cancelled at once (nothing of it ever ran). With one-shot
// commands the queued stop was ignored (nothing to stop) and the queued
// start then ran the task forever.
TEST_F(AgentProtocolTest, CancelBeforeTheAgentSawItsStartNeverStartsIt) {
  Open();
  const int64_t node = Register("n1", 1);
  const JobId id = Submit(Spec(1, {"/bin/sleep", "300"}));
  Pass();  // decided and released; the agent has not reported since
  ASSERT_TRUE(master_->CancelJob(id).ok());
  v1::HeartbeatResponse resp = Beat(node);  // the agent has nothing
  EXPECT_TRUE(Starts(resp).empty()) << resp.DebugString();
  EXPECT_EQ(Get(id).state, JobRecordState::kCancelled);
  // And the GPU is free for the next job.
  const JobId next = Submit(Spec(1));
  Pass();
  EXPECT_EQ(RunIds(Beat(node)), std::vector<JobId>{next});
}

// 2. A lost start. The agent died after the master sent the start, came
// back with its session and reports nothing: the launch is still wanted,
// so every answer asks for it again until the agent reports it running.
// With one-shot commands the start left the outbox once and the job stayed
// "starting", holding its GPUs, forever.
TEST_F(AgentProtocolTest, LostStartIsAskedForAgainUntilTheAgentRunsIt) {
  Open();
  const int64_t node = Register("n1", 2);
  const JobId id = Submit(Spec(2));
  Pass();
  ASSERT_EQ(RunIds(Beat(node)), std::vector<JobId>{id});
  for (int beat = 0; beat < 3; ++beat) {  // lost: never started
    clock_.Advance(Seconds{1});
    v1::HeartbeatResponse resp = Beat(node);
    ASSERT_EQ(RunIds(resp), std::vector<JobId>{id}) << "beat " << beat;
    EXPECT_EQ(Starts(resp)[0].task().attempt(), 1);  // the same launch
    EXPECT_EQ(Get(id).state, JobRecordState::kStarting);
  }
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1003.0)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
}

// 3. Two attempts at once. A preempted job's attempt 1 is still
// checkpointing on n1 when the scheduler decides attempt 2 on another node
// whose GPUs are free. Attempt 2 must wait until attempt 1 has reported
// its end (both would write the same checkpoint folder). Only its own new
// GPUs used to be checked.
TEST_F(AgentProtocolTest, NextAttemptWaitsUntilThePreviousOneHasEnded) {
  options_.queues = *QueueConfig::Create({10.0});  // 10 GPU-seconds
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  Pass();
  ASSERT_EQ(RunIds(Beat(n1)), std::vector<JobId>{a});
  const v1::TaskStatus a1_running =
      Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {a1_running});
  clock_.Advance(Seconds{11});  // demoted at +10 s
  const JobId b = Submit(Spec(1));
  Pass();  // b (queue 0) preempts a (queue 1) on n1
  ASSERT_EQ(Get(a).state, JobRecordState::kPreempted);
  const int64_t n2 = Register("n2", 1);  // a free GPU appears
  Pass();  // a's attempt 2 is decided on n2
  ASSERT_EQ(Get(a).attempt, 2);
  // a1 checkpoints (SIGTERM received, not yet exited): a2 waits.
  const v1::TaskStatus a1_exiting =
      Task(a, 1, 0, TASK_STATE_EXITING, {0}, {}, 1000.0);
  v1::HeartbeatResponse on_n1 = Beat(n1, {a1_exiting});
  ASSERT_EQ(Stops(on_n1).size(), 1u);
  EXPECT_EQ(Stops(on_n1)[0].job_id(), a);
  EXPECT_TRUE(RunIds(Beat(n2)).empty()) << "attempt 2 started while attempt "
                                           "1 still ran";
  EXPECT_EQ(Get(a).state, JobRecordState::kStarting);
  clock_.Advance(Seconds{5});
  EXPECT_TRUE(RunIds(Beat(n2)).empty());
  // a1 has ended: a2 goes to n2, b to n1's freed GPU.
  Beat(n1, {Task(a, 1, 0, TASK_STATE_PREEMPTED, {0}, 143, 1000.0)});
  v1::HeartbeatResponse on_n2 = Beat(n2);
  ASSERT_EQ(RunIds(on_n2), std::vector<JobId>{a});
  EXPECT_EQ(Starts(on_n2)[0].task().attempt(), 2);
  EXPECT_EQ(RunIds(Beat(n1)), std::vector<JobId>{b});
}

// One attempt at a time across a master restart: the restarted master does
// not know whether a's attempt 1 still checkpoints on n1 until n1 reports
// in (or its lease must have lapsed: one node timeout after the restart).
TEST_F(AgentProtocolTest, AfterARestartAJobWaitsForTheNodesOfItsLastLaunch) {
  options_.queues = *QueueConfig::Create({10.0});
  options_.node_timeout = Seconds{30};
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  int64_t n1 = one.node;
  const JobId a = one.id;
  clock_.Advance(Seconds{11});
  const JobId b = Submit(Spec(1));
  Pass();  // a preempted on n1: its task is told to stop
  ASSERT_EQ(Get(a).state, JobRecordState::kPreempted);
  master_.reset();  // the master dies while a1 checkpoints

  Open();
  const int64_t n2 = Register("n2", 1);
  Pass();  // a or b is decided on n2
  const JobRecord first = Get(a);
  // Whatever was decided, a does not start while n1 is unheard of.
  for (JobId id : RunIds(Beat(n2))) EXPECT_NE(id, a) << "a1 may still run";
  // n1 reports in, a1 still checkpointing: an orphan now (this master did
  // not stop it), stopped, and a keeps waiting.
  n1 = Register("n1", 1, {Task(a, 1, 0, TASK_STATE_EXITING, {0}, {}, 1000.0)});
  Pass();
  for (JobId id : RunIds(Beat(n2))) EXPECT_NE(id, a);
  for (JobId id : RunIds(Beat(n1, {Task(a, 1, 0, TASK_STATE_EXITING, {0}, {},
                                        1000.0)}))) {
    EXPECT_NE(id, a);
  }
  // a1 has ended: now a may start (on whichever node is free).
  Beat(n1, {Task(a, 1, 0, TASK_STATE_PREEMPTED, {0}, 143, 1000.0)});
  Pass();
  std::vector<JobId> running = RunIds(Beat(n1));
  for (JobId id : RunIds(Beat(n2))) running.push_back(id);
  std::sort(running.begin(), running.end());
  EXPECT_EQ(running, (std::vector<JobId>{a, b})) << "first: " << first.attempt;
}

TEST_F(AgentProtocolTest, AfterARestartANodeThatNeverReturnsIsFencedByTheTimeout) {
  options_.queues = *QueueConfig::Create({10.0});
  options_.node_timeout = Seconds{30};
  const JobId a = OneJobOnOneGpu(/*report_running=*/true).id;
  clock_.Advance(Seconds{11});
  Submit(Spec(1));
  Pass();
  master_.reset();
  Open();
  const int64_t n2 = Register("n2", 2);
  Pass();
  std::vector<JobId> ids = RunIds(Beat(n2));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), a), 0);
  clock_.Advance(Seconds{20});
  Beat(n2, {});
  clock_.Advance(Seconds{11});  // n1's lease lapsed long ago
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  ids = RunIds(Beat(n2));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), a), 1);
}

// 5. One bad report wedges nothing. A NaN end time used to make the job's
// record unwritable, failing every later write of every agent.
TEST_F(AgentProtocolTest, ImpossibleReportIsRefusedAloneAndWedgesNothing) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  const int64_t node = RunIds(Beat(n1)).empty() ? n2 : n1;
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  v1::TaskStatus bad = Task(id, 1, 0, TASK_STATE_EXITED, {0}, 0, 1000.0);
  bad.set_end_time(std::nan(""));
  v1::HeartbeatResponse resp = Beat(node, {bad});
  ASSERT_EQ(resp.rejected_size(), 1);
  EXPECT_NE(resp.rejected(0).message().find("tasks[0].end_time"),
            std::string::npos)
      << resp.rejected(0).message();
  EXPECT_NE(resp.rejected(0).message().find("nan"), std::string::npos);
  EXPECT_EQ(resp.acknowledged_size(), 0);  // not applied
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);
  // Other agents and clients go on.
  Beat(node == n1 ? n2 : n1);
  Register("n3", 1);
  EXPECT_GT(Submit(Spec(1)), 0);
  // Other impossible fields, each refused with its field named (beside
  // the running task's own report).
  const v1::TaskStatus running =
      Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  auto refused = [&](v1::TaskStatus t, const std::string& field) {
    v1::HeartbeatResponse r = Beat(node, {running, t});
    ASSERT_EQ(r.rejected_size(), 1) << field;
    EXPECT_NE(r.rejected(0).message().find("tasks[1]"), std::string::npos);
    EXPECT_NE(r.rejected(0).message().find(field), std::string::npos)
        << r.rejected(0).message();
  };
  v1::TaskStatus t = Task(id, 1, 0, TASK_STATE_RUNNING, {5}, {}, 1000.0);
  refused(t, "gpu_indexes[0]");
  t = Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, -3.0);
  refused(t, "start_time");
  t = Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {},
           std::numeric_limits<double>::infinity());
  refused(t, "start_time");
  t = Task(id, 1, 0, TASK_STATE_EXITED, {0}, 0, 1000.0);
  t.set_end_time(999.0);
  refused(t, "end_time");  // before its start
  t = Task(id, 1, 0, TASK_STATE_EXITED, {0}, 0, 1e12);  // year 33658
  refused(t, "start_time");
  t = Task(id, 0, 0, TASK_STATE_RUNNING, {0});
  refused(t, "attempt");
  // Launches that never existed.
  refused(Task(id + 1000, 1, 0, TASK_STATE_RUNNING, {0}), "task.job_id");
  refused(Task(id, 7, 0, TASK_STATE_RUNNING, {0}), "task.attempt");
  // The same report, possible this time, is applied.
  Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {0}, 0, 1000.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kFinished);
}

// 6. System stops are preemptions. An agent that shuts down (or is fenced)
// stops its tasks itself and reports them PREEMPTED; nobody at the master
// asked for that stop, and it is not the user's failure: the job waits and
// resumes. It used to be "failed, exit 143".
TEST_F(AgentProtocolTest, StopByTheAgentItselfPreemptsTheJob) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  const int64_t node = one.node;
  const JobId id = one.id;
  clock_.Advance(Seconds{10});
  v1::TaskStatus stopped = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 143,
                                1000.0);
  stopped.set_end_time(1009.0);
  stopped.set_stop_reason(v1::STOP_REASON_FENCED);
  Beat(node, {stopped});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_EQ(rec.preemptions, 1);
  EXPECT_FALSE(rec.exit_code.has_value());
  EXPECT_NEAR(rec.executed.count(), 9, 1e-6);  // to the reported end
  ASSERT_FALSE(rec.events.empty());
  EXPECT_NE(rec.events.back().detail.find("fenced"), std::string::npos)
      << rec.events.back().detail;
  Pass();
  v1::HeartbeatResponse resp = Beat(node);
  ASSERT_EQ(RunIds(resp), std::vector<JobId>{id});
  EXPECT_EQ(Starts(resp)[0].task().attempt(), 2);
  EXPECT_EQ(Starts(resp)[0].restart_count(), 1);
}

// A task the agent reported running and then no longer reports at all
// ended without a status (its agent lost it): also a preemption.
TEST_F(AgentProtocolTest, TaskMissingFromItsAgentsReportPreemptsTheJob) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  const int64_t node = one.node;
  const JobId id = one.id;
  Beat(node);  // gone
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_EQ(rec.preemptions, 1);
}

// A leaving agent: the master starts nothing more there, preempts what runs
// there (the agent stops it, the job waits to resume elsewhere), and takes
// the node down once nothing runs there.
TEST_F(AgentProtocolTest, LeavingAgentHandsItsJobsBackAndGoesDown) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  const int64_t n1 = one.node;
  const JobId id = one.id;
  const v1::TaskStatus& running = one.running;
  v1::HeartbeatResponse resp = Beat(n1, {running}, /*leaving=*/true);
  ASSERT_EQ(Stops(resp).size(), 1u);
  EXPECT_EQ(Stops(resp)[0].reason(), v1::STOP_REASON_PREEMPT);
  EXPECT_TRUE(Starts(resp).empty());
  const JobId other = Submit(Spec(1));
  Pass();
  EXPECT_TRUE(RunIds(Beat(n1, {running}, true)).empty()) << "placed on a "
                                                            "leaving node";
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 143, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_SHUTDOWN);
  Beat(n1, {ended}, true);  // acknowledged: the agent forgets it
  EXPECT_EQ(Get(id).state, JobRecordState::kPreempted);
  Beat(n1, {}, true);  // nothing left: the node goes down
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].state(), v1::NODE_STATE_DOWN);
  // Both jobs wait for a node; a new one takes them.
  const int64_t n2 = Register("n2", 2);
  Pass();
  std::vector<JobId> ids = RunIds(Beat(n2));
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<JobId>{id, other}));
}

// 8. Front door, agents: impossible registrations are refused with the
// field named; the node registry is not touched.
TEST_F(AgentProtocolTest, ImpossibleRegistrationsAreRefused) {
  Open();
  auto refused = [&](v1::RegisterRequest req, const std::string& field) {
    auto resp = master_->Register(req);
    ASSERT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument)
        << field << ": " << resp.status();
    EXPECT_NE(resp.status().message().find(field), std::string::npos)
        << resp.status();
  };
  refused(RegisterRequest("big", 30'000'000), "gpus");
  refused(RegisterRequest("big", 1'000'000'000), "gpus");
  refused(RegisterRequest("zero", 0), "gpus");
  refused(RegisterRequest("bad\nname", 1), "name");
  refused(RegisterRequest(std::string("n\xff", 2), 1), "name");
  refused(RegisterRequest("", 1), "name");
  v1::RegisterRequest req = RegisterRequest("n1", 1);
  req.set_agent_token("short");
  refused(req, "agent_token");
  req = RegisterRequest("n1", 1);
  req.set_grace_seconds(std::nan(""));
  refused(req, "grace_seconds");
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
  // The per-node maximum is the operator's to set.
  options_.max_gpus_per_node = 4;
  master_.reset();
  Open();
  refused(RegisterRequest("n8", 8), "gpus");
  EXPECT_GT(Register("n4", 4), 0);
}

// Two agents with one --name used to merge into one node silently. A
// second agent (another identity token) is refused while the first is
// live; the first, restarted, proves itself with its token and gets a new
// session (the old one's heartbeats are refused: register again).
TEST_F(AgentProtocolTest, SecondAgentWithALiveNodesNameIsRefused) {
  options_.node_timeout = Seconds{30};
  Open();
  v1::RegisterResponse first;
  const int64_t node = Register("n1", 2, {}, &first);
  v1::RegisterRequest impostor = RegisterRequest("n1", 2);
  impostor.set_agent_token("another-agents-token");
  impostor.set_boot_id("another-machine");
  auto refused = master_->Register(impostor);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(refused.status().message().find("n1"), std::string::npos);

  v1::RegisterResponse again;
  EXPECT_EQ(Register("n1", 2, {}, &again), node);  // same token: same agent
  EXPECT_NE(again.session(), first.session());
  v1::HeartbeatRequest stale;
  stale.set_node_id(node);
  stale.set_session(first.session());
  EXPECT_EQ(master_->Heartbeat(stale).status().code(),
            absl::StatusCode::kNotFound);

  // Once the node has been silent for the node timeout, the name is free.
  clock_.Advance(Seconds{31});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  EXPECT_TRUE(master_->Register(impostor).ok());
}

// The identity is durable: right after a master restart, before the real
// agent has re-registered, another agent cannot take its node's name.
TEST_F(AgentProtocolTest, NodeIdentitySurvivesAMasterRestart) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t node = Register("n1", 2);
  master_.reset();
  Open();
  v1::RegisterRequest impostor = RegisterRequest("n1", 2);
  impostor.set_agent_token("another-agents-token");
  EXPECT_EQ(master_->Register(impostor).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Register("n1", 2), node);  // the real one comes back
}

TEST_F(AgentProtocolTest, GraceThatDoesNotFitTheNodeTimeoutIsRefused) {
  options_.node_timeout = Seconds{30};
  Open();
  v1::RegisterRequest req = RegisterRequest("n1", 1);
  req.set_grace_seconds(30);
  auto resp = master_->Register(req);
  ASSERT_EQ(resp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(resp.status().message().find("--grace <= 23"), std::string::npos)
      << resp.status();
  EXPECT_NE(resp.status().message().find("--node-timeout >= 37"),
            std::string::npos)
      << resp.status();
  // One that fits gets its lease: node timeout - grace - margin.
  req.set_grace_seconds(10);
  resp = master_->Register(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_DOUBLE_EQ(resp->lease_seconds(), 30 - 10 - 1);
  EXPECT_DOUBLE_EQ(resp->heartbeat_interval_seconds(), 2);
}

// The pushed desired state: its version grows with its content, and only
// then; an old session is refused.
TEST_F(AgentProtocolTest, DesiredStateVersionGrowsWithItsContent) {
  Open();
  v1::RegisterResponse reg;
  const int64_t node = Register("n1", 1, {}, &reg);
  const uint64_t v0 = reg.desired().version();
  auto unchanged = master_->DesiredStateAfter(node, reg.session(), v0);
  ASSERT_TRUE(unchanged.ok()) << unchanged.status();
  EXPECT_FALSE(unchanged->has_value());
  const JobId id = Submit(Spec(1));
  Pass();
  auto changed = master_->DesiredStateAfter(node, reg.session(), v0);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->has_value());
  EXPECT_GT((*changed)->version(), v0);
  // A push is a wake-up: the version, nothing else.
  EXPECT_EQ((*changed)->session(), reg.session());
  EXPECT_EQ((*changed)->run_size(), 0);
  EXPECT_EQ((*changed)->stop_size(), 0);
  const uint64_t v1 = (*changed)->version();
  // The agent's report then gets the state: its version, with the job.
  v1::HeartbeatResponse first = Beat(node);
  EXPECT_EQ(first.desired().version(), v1);
  ASSERT_EQ(first.desired().run_size(), 1);
  EXPECT_EQ(first.desired().run(0).task().job_id(), id);
  // A report that changes nothing for the node: same version, same state.
  v1::HeartbeatResponse resp =
      Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  EXPECT_EQ(resp.desired().version(), v1);
  EXPECT_EQ(resp.desired().SerializeAsString(),
            first.desired().SerializeAsString());
  EXPECT_EQ(master_->DesiredStateAfter(node, reg.session() + 1, 0)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

// From the review of this protocol: each of these failed before its fix.

// A report that waited at the master after its agent gave up on it (a
// timeout) and sent newer ones must not be taken for the truth: it would
// say a task that runs has vanished, and the job would run twice.
TEST_F(AgentProtocolTest, LateReportIsRefused) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/false);
  const int64_t n1 = one.node;
  const JobId id = one.id;
  v1::HeartbeatRequest stale = BeatRequest(n1, {});  // built, not yet sent
  Beat(n1);
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  auto late = master_->Heartbeat(stale);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kAborted)
      << late.status();
  Pass();
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(rec.preemptions, 0);
}

// A cancel asked for while the tasks ran is stored: a master restarted
// before they stopped does not adopt the job back and resume it, it
// finishes the cancel.
TEST_F(AgentProtocolTest, CancelSurvivesAMasterRestart) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  int64_t n1 = one.node;
  const JobId id = one.id;
  ASSERT_TRUE(master_->CancelJob(id).ok());
  master_.reset();
  Open();
  n1 = Register("n1", 1, {Task(id, 1, 0, TASK_STATE_EXITING, {0}, {}, 1000.0)});
  Pass();
  EXPECT_NE(Get(id).state, JobRecordState::kCancelled);  // still stopping
  EXPECT_TRUE(Starts(Beat(n1, {Task(id, 1, 0, TASK_STATE_EXITING, {0}, {},
                                    1000.0)}))
                  .empty());
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 143, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_CANCEL);
  Beat(n1, {ended});
  Pass();
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kCancelled);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_TRUE(Starts(Beat(n1)).empty());
}

// A gang: rank 1 fails on its lost peer (exit 1) just before the report
// that rank 0 was stopped by its agent's shutdown. The job is preempted,
// not failed: the other ranks are stopped and the job is judged once all
// have ended.
TEST_F(AgentProtocolTest, GangRankFailingAfterASystemStopIsAPreemption) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const int r1 = Starts(Beat(n1))[0].task().rank();
  const int r2 = Starts(Beat(n2))[0].task().rank();
  Beat(n1, {Task(id, 1, r1, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_EXITED, {0}, 1, 1000.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);  // not judged yet
  v1::TaskStatus shut = Task(id, 1, r1, TASK_STATE_PREEMPTED, {0}, 143, 1000.0);
  shut.set_stop_reason(v1::STOP_REASON_SHUTDOWN);
  Beat(n1, {shut}, true);
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_EQ(rec.preemptions, 1);
}

// ... and a gang whose rank really failed still fails, once its other
// ranks (stopped for it) have ended, with the failing rank's code.
TEST_F(AgentProtocolTest, GangRankFailingOnItsOwnFailsTheJob) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const int r1 = Starts(Beat(n1))[0].task().rank();
  const int r2 = Starts(Beat(n2))[0].task().rank();
  const v1::TaskStatus t1 = Task(id, 1, r1, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {t1});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  Beat(n2, {Task(id, 1, r2, TASK_STATE_EXITED, {0}, 3, 1000.0)});
  v1::HeartbeatResponse resp = Beat(n1, {t1});
  ASSERT_EQ(Stops(resp).size(), 1u);  // the other rank is told to stop
  v1::TaskStatus stopped = Task(id, 1, r1, TASK_STATE_PREEMPTED, {0}, 143,
                                1000.0);
  stopped.set_stop_reason(v1::STOP_REASON_PREEMPT);  // our own stop
  Beat(n1, {stopped});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kFailed);
  EXPECT_EQ(rec.exit_code, 3);
}

// A task whose exit status was lost (its shim killed, the machine
// rebooted): a system stop, not the job's failure.
TEST_F(AgentProtocolTest, LostExitStatusIsNotAFailure) {
  const OneJob one = OneJobOnOneGpu(/*report_running=*/true);
  const int64_t n1 = one.node;
  const JobId id = one.id;
  Beat(n1, {Task(id, 1, 0, TASK_STATE_EXITED, {0}, std::nullopt, 1000.0)});
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kPreempted);
  EXPECT_EQ(rec.preemptions, 1);
}

// After a restart a waiting job may be decided on GPUs that a running
// 2-node job's tasks really hold, before that job's second node reports
// in. The running job is adopted all the same; the waiting one gives way.
TEST_F(AgentProtocolTest, RunningGangIsReadoptedAheadOfAWaitingJob) {
  options_.node_timeout = Seconds{30};
  Open();
  int64_t n1 = Register("n1", 1);
  int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(2));
  Pass();
  const int r1 = Starts(Beat(n1))[0].task().rank();
  const int r2 = Starts(Beat(n2))[0].task().rank();
  const v1::TaskStatus t1 = Task(id, 1, r1, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  const v1::TaskStatus t2 = Task(id, 1, r2, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {t1});
  Beat(n2, {t2});
  const JobId waiting = Submit(Spec(1));
  Pass();
  master_.reset();
  Open();
  n1 = Register("n1", 1, {t1});
  Pass();  // the waiting job is decided on n1's GPU, on paper
  n2 = Register("n2", 1, {t2});
  Pass();
  clock_.Advance(Seconds{31});  // past the adoption window
  Beat(n1, {t1});
  Beat(n2, {t2});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  Pass();
  JobRecord rec = Get(id);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_NE(Get(waiting).state, JobRecordState::kRunning);
}

// Timeouts run on a monotonic clock: a wall clock stepped forward (NTP, an
// operator) does not declare nodes lost before their leases lapsed.
TEST_F(AgentProtocolTest, WallClockStepDoesNotDeclareNodesLost) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t n1 = Register("n1", 1);
  clock_.Set(clock_.NowUnixSeconds() + Seconds{3600});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].state(), v1::NODE_STATE_UP);
  Beat(n1);
}

// An agent speaks for its own node: a live task it reports that was never
// placed there is refused (it would otherwise hold up that job's next
// attempt anywhere, as an orphan).
TEST_F(AgentProtocolTest, ReportOfAnotherNodesTaskIsRefused) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const int64_t n2 = Register("n2", 1);
  const JobId id = Submit(Spec(1));
  Pass();
  const int64_t runs_on = RunIds(Beat(n1)).empty() ? n2 : n1;
  const int64_t other = runs_on == n1 ? n2 : n1;
  v1::HeartbeatResponse resp =
      Beat(other, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  ASSERT_EQ(resp.rejected_size(), 1);
  EXPECT_NE(resp.rejected(0).message().find("never placed on node"),
            std::string::npos)
      << resp.rejected(0).message();
  // Its own node reports it running, and it runs.
  Beat(runs_on, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);
}

}  // namespace
}  // namespace tiresias::master_testing
