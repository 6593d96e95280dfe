// AgentDaemon against a real master (MasterServer over loopback, real
// SQLite state in a temporary folder) and real child processes.
#include "agent/agent_daemon.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent_daemon_fixture.h"
#include "agent/agent_testing.h"
#include "agent/proc_table.h"
#include "agent/task_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {
namespace {

using agent_testing::MessageOf;
using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::ThrowawayUser;
using agent_testing::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::milliseconds;
using std::chrono::seconds;

using agent_testing::AgentDaemonTest;

TEST_F(AgentDaemonTest, RegistersAndRunsAJobToTheEnd) {
  StartMaster();
  AgentDaemon* agent = StartAgent();
  auto nodes = state_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name(), "node-a");
  EXPECT_EQ((*nodes)[0].gpus(), 2);

  JobId id = Submit(1, "echo hello; sleep 0.3");
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished)) << "job stuck";
  EXPECT_NE(LogOf(id, 1).find("hello"), std::string::npos);
  EXPECT_EQ(Job(id).exit_code, 0);
  // The end was acknowledged: the agent forgets the task.
  EXPECT_TRUE(WaitUntil([&] { return agent->task_count() == 0; }));
  EXPECT_EQ(ReadFile(dir_.File("agent/tasks.json")).find("\"job_id\""),
            std::string::npos);
}

TEST_F(AgentDaemonTest, CommandThatCannotStartFailsTheJobNotTheAgent) {
  StartMaster();
  AgentDaemon* agent = StartAgent();
  JobRequest req;
  req.num_gpus = 1;
  req.user = "root";  // see Options
  req.command = {"/nonexistent/tiresias-no-such-command"};
  auto bad = state_->SubmitJob(req);
  ASSERT_TRUE(bad.ok()) << bad.status();
  server_->Notify();
  ASSERT_TRUE(WaitState(*bad, JobRecordState::kFailed));
  EXPECT_EQ(Job(*bad).exit_code, 127);
  EXPECT_NE(LogOf(*bad, 1).find("cannot start"), std::string::npos);
  // The agent still serves.
  JobId good = Submit(1, "echo ok");
  EXPECT_TRUE(WaitState(good, JobRecordState::kFinished));
  EXPECT_TRUE(WaitUntil([&] { return agent->task_count() == 0; }));
}

// As root (as CI runs), the agent runs a job's task as the Unix account of
// the job's owner: a throwaway account here, whose ids the task reports.
TEST_F(AgentDaemonTest, JobRunsAsItsOwnersAccount) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (useradd, setuid)";
  ThrowawayUser user;
  ASSERT_TRUE(user.ok());
  const std::string ckpt = user.OwnedFolder(dir_.path(), "work") + "/ckpt";
  StartMaster();
  StartAgent(OperatorOptions());
  EXPECT_EQ(CountLog("running as root: tasks run as their owner's Unix "
                     "account; root tasks refused"),
            1);
  JobId id = Submit(1, "id -u; id -g; echo $USER", user.name(), ckpt);
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished)) << LogOf(id, 1);
  EXPECT_EQ(LogOf(id, 1), absl::StrCat(user.uid(), "\n", user.gid(), "\n",
                                       user.name(), "\n"));
  EXPECT_EQ(CountLog(absl::StrCat(" as uid ", user.uid(), " on GPUs")), 1);
}

// A task that may not run as its owner (no such account; root, without
// --allow-root-tasks) fails to start: exit code 127, the reason in the
// job's log and the agent's. The agent carries on.
TEST_F(AgentDaemonTest, JobWhoseOwnerItMayNotRunAsFailsToStart) {
  if (geteuid() != 0) GTEST_SKIP() << "an agent not root runs tasks as itself";
  StartMaster();
  StartAgent(OperatorOptions());
  const JobId nobody = Submit(1, "echo task-ran", "tiresias-no-such-owner");
  const JobId root = Submit(1, "echo task-ran", "root");
  for (JobId id : {nobody, root}) {
    ASSERT_TRUE(WaitState(id, JobRecordState::kFailed)) << id;
    EXPECT_EQ(Job(id).exit_code, 127);
    EXPECT_THAT(LogOf(id, 1), HasSubstr("tiresias agent: cannot start the "
                                        "task: cannot start job "));
    EXPECT_THAT(LogOf(id, 1), Not(HasSubstr("task-ran")));
  }
  EXPECT_THAT(LogOf(nobody, 1),
              HasSubstr("owner \"tiresias-no-such-owner\": no Unix account"));
  EXPECT_THAT(LogOf(root, 1), HasSubstr("is root (uid 0)"));
  // Once per attempt: the master retries a job that failed to start.
  EXPECT_GE(CountLog("owner \"tiresias-no-such-owner\": no Unix account"), 1);
  EXPECT_GE(CountLog("--allow-root-tasks"), 1);
}

TEST_F(AgentDaemonTest, MalformedUserMapStopsTheAgentAtStart) {
  StartMaster();
  AgentOptions options = Options();
  options.user_map_file = dir_.Write("users", "alice alice\nbob\n");
  AgentDaemon agent(options);
  absl::Status started = agent.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(started),
              HasSubstr(options.user_map_file + ":2: expected two fields"));
}

TEST_F(AgentDaemonTest, PreemptedJobCheckpointsAndResumes) {
  // 0.5 GPU-seconds: a 2-GPU job is demoted after ~0.25 s of running.
  StartMaster({0.5});
  StartAgent();
  JobId long_job = Submit(
      2, "trap \"echo ckpt; exit 0\" TERM; while true; do sleep 0.05; done");
  ASSERT_TRUE(WaitState(long_job, JobRecordState::kRunning));
  ASSERT_TRUE(WaitUntil([&] { return Job(long_job).queue > 0; }, seconds(5)))
      << "never demoted";
  JobId short_job = Submit(1, "echo short; sleep 0.3");
  ASSERT_TRUE(WaitState(short_job, JobRecordState::kFinished, seconds(8)));
  EXPECT_NE(LogOf(long_job, 1).find("ckpt"), std::string::npos);
  // Resumed as attempt 2 once the short job left.
  ASSERT_TRUE(WaitUntil(
      [&] {
        JobRecord rec = Job(long_job);
        return rec.state == JobRecordState::kRunning && rec.attempt == 2;
      },
      seconds(5)));
  JobRecord rec = Job(long_job);
  EXPECT_EQ(rec.preemptions, 1);
  EXPECT_EQ(rec.restarts, 1);
  EXPECT_EQ(CountLog("job " + std::to_string(long_job) +
                     " attempt 1 rank 0: preempted"),
            1);
}

TEST_F(AgentDaemonTest, RestartedAgentAdoptsItsRunningTask) {
  StartMaster();
  AgentDaemon* first = StartAgent();
  JobId id = Submit(1, "echo started; sleep 1.5");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  first->Stop();  // tasks keep running
  ASSERT_NE(ReadFile(dir_.File("agent/tasks.json")).find("\"job_id\""),
            std::string::npos);

  AgentDaemon* second = StartAgent();
  EXPECT_EQ(CountLog("adopted running pid"), 1);
  EXPECT_EQ(Job(id).state, JobRecordState::kRunning);
  // Ends once the process exits, with no second launch; the new agent is
  // not the task's parent and learns its exit code from the shim's file.
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished));
  JobRecord rec = Job(id);
  EXPECT_EQ(rec.exit_code, 0);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(rec.preemptions, 0);
  EXPECT_EQ(CountLog("started pid"), 1);
  std::string log = LogOf(id, 1);
  EXPECT_EQ(log.find("started"), log.rfind("started"));  // ran once
  EXPECT_TRUE(WaitUntil([&] { return second->task_count() == 0; }));
}

// Adoption needs nothing new for a task running as its owner: it already
// runs as its account; the record notes the uid.
TEST_F(AgentDaemonTest, RestartedAgentAdoptsATaskRunningAsItsOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (useradd, setuid)";
  ThrowawayUser user;
  ASSERT_TRUE(user.ok());
  const std::string ckpt = user.OwnedFolder(dir_.path(), "work") + "/ckpt";
  StartMaster();
  AgentDaemon* first = StartAgent(OperatorOptions());
  JobId id = Submit(1, "id -u; sleep 1.5", user.name(), ckpt);
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  first->Stop();
  auto entries = ParseTaskRecord(ReadFile(dir_.File("agent/tasks.json")));
  ASSERT_TRUE(entries.ok() && entries->size() == 1u) << entries.status();
  EXPECT_EQ((*entries)[0].handle.uid, user.uid());

  StartAgent(OperatorOptions());
  EXPECT_EQ(CountLog("adopted running pid"), 1);
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished));
  EXPECT_EQ(Job(id).exit_code, 0);
  EXPECT_EQ(Job(id).attempt, 1);
  EXPECT_EQ(LogOf(id, 1), absl::StrCat(user.uid(), "\n"));
}

TEST_F(AgentDaemonTest, TaskThatEndsWhileNoAgentRunsKeepsItsExitCode) {
  StartMaster();
  AgentDaemon* first = StartAgent();
  const std::string go = dir_.File("go");
  JobId id = Submit(1, "while [ ! -e " + go + " ]; do sleep 0.01; done; exit 3");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  first->Stop();
  std::ofstream(go) << "";
  // The task ends with nobody to wait for it but its shim, which writes the
  // exit file and ends too (a zombie: this test process is its parent).
  const pid_t shim = RecordedPid(id);
  ASSERT_TRUE(WaitUntil([&] {
    return std::filesystem::exists(
               dir_.File("agent/exits/job-" + std::to_string(id) +
                         "-attempt-1-rank-0.exit")) &&
           Exited(shim);
  }));
  // A leftover of a crash between forgetting a task and removing its exit
  // file: the next agent removes it.
  std::ofstream(dir_.File("agent/exits/job-99-attempt-1-rank-0.exit"))
      << "exit 0 1\n";
  AgentDaemon* second = StartAgent();
  EXPECT_FALSE(std::filesystem::exists(
      dir_.File("agent/exits/job-99-attempt-1-rank-0.exit")));
  ASSERT_TRUE(WaitState(id, JobRecordState::kFailed));
  EXPECT_EQ(Job(id).exit_code, 3);
  EXPECT_EQ(CountLog("exited while no agent ran (failed (exit code 3))"), 1);
  // Acknowledged: the record and the exit file are gone.
  EXPECT_TRUE(WaitUntil([&] { return second->task_count() == 0; }));
  EXPECT_FALSE(std::filesystem::exists(dir_.File(
      "agent/exits/job-" + std::to_string(id) + "-attempt-1-rank-0.exit")));
}

TEST_F(AgentDaemonTest, KilledShimTakesItsTaskAndTheTasksChildrenWithIt) {
  StartMaster();
  AgentDaemon* first = StartAgent();
  const std::string child_pid = dir_.File("child.pid");
  JobId id = Submit(1, "sleep 30 & echo $! > " + child_pid + "; wait");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(child_pid).empty(); }));
  const pid_t child = std::stoi(ReadFile(child_pid));
  first->Stop();
  // While no agent runs, the shim is SIGKILLed (say, `pkill -9`): the task
  // dies with it (parent-death signal), but its own child lives on.
  const pid_t shim = RecordedPid(id);
  ASSERT_EQ(kill(shim, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return Exited(shim); }));
  EXPECT_FALSE(Exited(child));
  // The next agent finds the shim gone and kills what is left of the group,
  // so the job's GPUs are really free when the master reuses them.
  StartAgent();
  EXPECT_TRUE(WaitUntil([&] { return Exited(child); }));
  // Its status was lost with the shim: a system stop, not the user's
  // failure. The job is preempted and runs again.
  ASSERT_TRUE(WaitUntil([&] { return Job(id).attempt == 2; }));
  JobRecord rec = Job(id);
  EXPECT_EQ(rec.preemptions, 1);
  EXPECT_NE(rec.state, JobRecordState::kFailed);
}

TEST_F(AgentDaemonTest, MasterReadsTaskLogsFromTheAgent) {
  StartMaster();
  StartAgent();
  v1::ReadJobLogResponse resp;
  const std::string go = dir_.File("go");
  JobId id = Submit(1, "printf 'line1\\nline2\\n'; while [ ! -e " + go +
                           " ]; do sleep 0.01; done; echo done");
  ASSERT_TRUE(WaitUntil([&] {
    resp.Clear();
    return ReadLog(id, 0, 0, 0, 0, &resp).ok() && resp.data().size() == 12;
  }));
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  ASSERT_TRUE(ReadLog(id, 0, 0, 0, 0, &resp).ok());
  EXPECT_EQ(resp.data(), "line1\nline2\n");
  EXPECT_EQ(resp.attempt(), 1);
  EXPECT_EQ(resp.current_attempt(), 1);
  EXPECT_EQ(resp.node(), "node-a");
  EXPECT_EQ(resp.next_offset(), 12);
  EXPECT_FALSE(resp.complete());  // still running: more may come
  EXPECT_EQ(resp.job_state(), v1::JOB_STATE_RUNNING);

  // Waits behind it for both GPUs: never started, so no log yet.
  JobId waiting = Submit(2, "true");
  grpc::Status s = ReadLog(waiting, 0, 0, 0, 0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("has not started"), std::string::npos)
      << s.error_message();

  std::ofstream(go) << "";
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished));
  ASSERT_TRUE(ReadLog(id, 1, 0, 12, 0, &resp).ok());
  EXPECT_EQ(resp.data(), "done\n");
  EXPECT_EQ(resp.next_offset(), 17);
  EXPECT_TRUE(resp.complete());
  EXPECT_EQ(resp.job_state(), v1::JOB_STATE_FINISHED);
  // A slice: offset 6, 3 bytes; not the end, so not complete.
  ASSERT_TRUE(ReadLog(id, 0, 0, 6, 3, &resp).ok());
  EXPECT_EQ(resp.data(), "lin");
  EXPECT_EQ(resp.next_offset(), 9);
  EXPECT_FALSE(resp.complete());
  // Past the end: nothing, complete.
  ASSERT_TRUE(ReadLog(id, 0, 0, 100, 0, &resp).ok());
  EXPECT_EQ(resp.data(), "");
  EXPECT_TRUE(resp.complete());

  // Bad requests get clear errors; the master keeps serving.
  EXPECT_EQ(ReadLog(999, 0, 0, 0, 0, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  s = ReadLog(id, 2, 0, 0, 0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("launched 1 time(s)"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(ReadLog(id, 0, 1, 0, 0, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ReadLog(id, 0, 0, -1, 0, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ReadLog(id, -1, 0, 0, 0, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(ReadLog(id, 0, 0, 0, 0, &resp).ok());
  ASSERT_TRUE(WaitState(waiting, JobRecordState::kFinished));
}

TEST_F(AgentDaemonTest, LogsStayReadableAcrossAnAgentRestartAndNotWhileItIsGone) {
  StartMaster();
  AgentDaemon* first = StartAgent();
  JobId id = Submit(1, "echo from-the-task");
  ASSERT_TRUE(WaitState(id, JobRecordState::kFinished));
  EXPECT_TRUE(WaitUntil([&] { return first->task_count() == 0; }));
  first->Stop();  // its log service goes with it; the node is not down yet
  v1::ReadJobLogResponse resp;
  grpc::Status s = ReadLog(id, 0, 0, 0, 0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("node-a"), std::string::npos)
      << s.error_message();
  // The restarted agent serves on another port, told in its heartbeats.
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] {
    resp.Clear();
    return ReadLog(id, 0, 0, 0, 0, &resp).ok();
  }));
  EXPECT_EQ(resp.data(), "from-the-task\n");
  EXPECT_TRUE(resp.complete());
}

// 4. Fencing. An agent cut off from the master (here: the master stops
// serving) stops renewing its tasks' leases; once they lapse the shims stop
// the tasks (SIGTERM: the job checkpoints), before the master may give the
// job to another node. When the master is back, the agent reports the
// fenced task PREEMPTED and the job resumes: a preemption, not a failure.
TEST_F(AgentDaemonTest, CutOffAgentFencesItsTasksAndTheJobResumes) {
  StartMaster({3600.0}, Seconds{6});  // lease 6 - 3 (grace) - 1 = 2 s
  StartAgent();
  const std::string term = dir_.File("term");
  JobId id = Submit(1, "trap \"echo $TIRESIAS_ATTEMPT >> " + term +
                           "; exit 143\" TERM; while true; do sleep 0.02; "
                           "done");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  const int port = server_->port();
  server_->Shutdown();  // unreachable: no heartbeat succeeds any more
  const auto cut = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(term).empty(); }, seconds(6)))
      << "the task ran on with its lease lapsed";
  const auto fenced_after = std::chrono::steady_clock::now() - cut;
  EXPECT_GE(fenced_after, milliseconds(1500));  // not before the lease ends
  EXPECT_EQ(ReadFile(term), "1\n");  // attempt 1 got SIGTERM
  ServeOn("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(WaitUntil(
      [&] {
        JobRecord rec = Job(id);
        return rec.state == JobRecordState::kRunning && rec.attempt == 2;
      },
      seconds(15)))
      << "the job did not resume: " << JobRecordStateName(Job(id).state);
  JobRecord rec = Job(id);
  EXPECT_EQ(rec.preemptions, 1);
  EXPECT_FALSE(rec.exit_code.has_value());
  for (const JobEvent& e : rec.events) EXPECT_NE(e.kind, "failed");
}

// An agent told to stop hands its jobs back: the master preempts them (no
// new launch there), the agent stops them itself too (SIGTERM: they
// checkpoint), reports the ends and goes; the jobs resume on another node.
// Stopping an agent used to leave "failed, exit 143" behind.
TEST_F(AgentDaemonTest, DrainingAgentHandsItsJobsBackToResumeElsewhere) {
  StartMaster();
  AgentDaemon* a = StartAgent("node-a");
  const std::string term = dir_.File("term");
  JobId id =
      Submit(2, "trap \"echo $TIRESIAS_NODE_NAME $LOCAL_RANK >> " + term +
                    "; exit 143\" TERM; touch " + dir_.File("ready-") +
                    "$LOCAL_RANK; while true; do sleep 0.02; done");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  // Both processes (one per GPU) have their trap.
  ASSERT_TRUE(WaitUntil([&] {
    return std::filesystem::exists(dir_.File("ready-0")) &&
           std::filesystem::exists(dir_.File("ready-1"));
  }));
  StartAgent("node-b");
  ASSERT_TRUE(a->Drain(seconds(10)).ok());
  // Checkpointed there by each of its two processes (one per GPU). A
  // shell's child forked for `sleep` and signalled before its exec runs
  // the trap too (the shell's race, not ours): lines may repeat.
  std::set<std::string> lines;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(term), '\n', absl::SkipEmpty())) {
    lines.insert(std::string(line));
  }
  EXPECT_EQ(lines, (std::set<std::string>{"node-a 0", "node-a 1"}))
      << ReadFile(term);
  ASSERT_TRUE(WaitUntil(
      [&] {
        JobRecord rec = Job(id);
        return rec.state == JobRecordState::kRunning && rec.attempt == 2;
      },
      seconds(10)));
  JobRecord rec = Job(id);
  EXPECT_EQ(rec.nodes, std::vector<std::string>{"node-b"});
  EXPECT_EQ(rec.preemptions, 1);
  auto nodes = state_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const v1::Node& n : *nodes) {
    EXPECT_EQ(n.state(), n.name() == "node-a" ? v1::NODE_STATE_DOWN
                                              : v1::NODE_STATE_UP);
  }
}

// Two agents on one state dir would adopt, orphan and stop each other's
// tasks: the second is refused at start, saying why.
TEST_F(AgentDaemonTest, SecondAgentOnTheSameStateDirIsRefused) {
  StartMaster();
  StartAgent("node-a");
  AgentOptions options = Options("node-a");
  options.node_name = "node-other";
  AgentDaemon second(options);
  absl::Status started = second.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.message().find("in use by another agent"),
            std::string::npos)
      << started;
}

}  // namespace
}  // namespace tiresias
