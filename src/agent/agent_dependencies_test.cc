// AgentDaemon with dependencies given from outside (agent_dependencies.h):
// faults that the real system reaches only with a broken disk or a
// starved machine, injected by wrappers that pass every other call to the
// real parts. A real master (MasterServer over loopback, real SQLite state
// in a temporary folder) and real task processes, as agent_daemon_test.
#include "agent/agent_dependencies.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/agent_daemon.h"
#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"

namespace tiresias {
namespace {

using agent_testing::Gone;
using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The real file system, except that while `fail_record` is set every write
// of a task record (a path ending in /tasks.json) fails as a full disk
// would, writing nothing.
class RecordFailingStore final : public FileStore {
 public:
  absl::StatusOr<std::optional<std::string>> Read(
      const std::string& path) override {
    return RealFileStore()->Read(path);
  }
  absl::Status WriteAtomically(const std::string& path,
                               std::string_view contents) override {
    if (fail_record && absl::EndsWith(path, "/tasks.json")) {
      ++failed_writes;
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": injected: no space left on device"));
    }
    return RealFileStore()->WriteAtomically(path, contents);
  }

  std::atomic<bool> fail_record{false};
  std::atomic<int> failed_writes{0};
};

// The real launcher, whose Start takes `start_delay` longer (a fork and
// exec on a machine short of memory, a working folder on a slow network
// file system), and which counts the starts of each task.
class SlowLauncher final : public ProcessLauncher {
 public:
  SlowLauncher(std::unique_ptr<ProcessLauncher> real, milliseconds start_delay,
               std::map<std::string, int>* starts, std::mutex* mu)
      : real_(std::move(real)), delay_(start_delay), starts_(starts), mu_(mu) {}

  absl::StatusOr<TaskHandle> Start(const TaskSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(*mu_);
      ++(*starts_)[absl::StrCat(spec.job_id, "/", spec.attempt, "/",
                                spec.rank)];
    }
    starting = true;
    std::this_thread::sleep_for(delay_);
    absl::StatusOr<TaskHandle> handle = real_->Start(spec);
    starting = false;
    return handle;
  }
  absl::Status Adopt(const TaskHandle& handle, std::optional<StopReason> stop,
                     milliseconds grace) override {
    return real_->Adopt(handle, stop, grace);
  }
  absl::Status RequestStop(const TaskHandle& handle, StopReason reason,
                           milliseconds grace) override {
    return real_->RequestStop(handle, reason, grace);
  }
  absl::StatusOr<TaskExit> Stop(const TaskHandle& handle, StopReason reason,
                                milliseconds grace) override {
    return real_->Stop(handle, reason, grace);
  }
  absl::StatusOr<std::optional<TaskExit>> Poll(
      const TaskHandle& handle) override {
    return real_->Poll(handle);
  }
  std::vector<TaskExit> PollAll() override { return real_->PollAll(); }

  std::atomic<bool> starting{false};  // inside Start, before the real one

 private:
  std::unique_ptr<ProcessLauncher> real_;
  milliseconds delay_;
  std::map<std::string, int>* starts_;
  std::mutex* mu_;
};

// The real stub to the master, whose heartbeats can be lost on the way
// (`drop_requests`: the master never sees them) or on the way back
// (`drop_answers`: the master applied the report, the agent gets
// UNAVAILABLE), as over a flaky network. Register and the desired-state
// watch pass through.
class LossyMasterStub final : public v1::AgentRegistry::StubInterface {
 public:
  explicit LossyMasterStub(
      std::unique_ptr<v1::AgentRegistry::StubInterface> real)
      : real_(std::move(real)) {}

  grpc::Status Register(grpc::ClientContext* context,
                        const v1::RegisterRequest& request,
                        v1::RegisterResponse* response) override {
    return real_->Register(context, request, response);
  }
  grpc::Status Heartbeat(grpc::ClientContext* context,
                         const v1::HeartbeatRequest& request,
                         v1::HeartbeatResponse* response) override {
    if (drop_requests) {
      ++dropped;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "injected: request lost");
    }
    grpc::Status status = real_->Heartbeat(context, request, response);
    if (status.ok() && drop_answers) {
      ++dropped;
      response->Clear();
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "injected: answer lost");
    }
    if (status.ok()) ++delivered;
    return status;
  }

  std::atomic<bool> drop_requests{false};
  std::atomic<bool> drop_answers{false};
  std::atomic<int> dropped{0};
  std::atomic<int> delivered{0};

 private:
  using RegisterReader =
      grpc::ClientAsyncResponseReaderInterface<v1::RegisterResponse>;
  using HeartbeatReader =
      grpc::ClientAsyncResponseReaderInterface<v1::HeartbeatResponse>;
  using DesiredReader = grpc::ClientAsyncReaderInterface<v1::DesiredState>;

  // The agent calls none of the asynchronous forms; they pass through.
  RegisterReader* AsyncRegisterRaw(grpc::ClientContext* context,
                                   const v1::RegisterRequest& request,
                                   grpc::CompletionQueue* cq) override {
    return real_->AsyncRegister(context, request, cq).release();
  }
  RegisterReader* PrepareAsyncRegisterRaw(grpc::ClientContext* context,
                                          const v1::RegisterRequest& request,
                                          grpc::CompletionQueue* cq) override {
    return real_->PrepareAsyncRegister(context, request, cq).release();
  }
  HeartbeatReader* AsyncHeartbeatRaw(grpc::ClientContext* context,
                                     const v1::HeartbeatRequest& request,
                                     grpc::CompletionQueue* cq) override {
    return real_->AsyncHeartbeat(context, request, cq).release();
  }
  HeartbeatReader* PrepareAsyncHeartbeatRaw(
      grpc::ClientContext* context, const v1::HeartbeatRequest& request,
      grpc::CompletionQueue* cq) override {
    return real_->PrepareAsyncHeartbeat(context, request, cq).release();
  }
  grpc::ClientReaderInterface<v1::DesiredState>* WatchDesiredStateRaw(
      grpc::ClientContext* context,
      const v1::WatchDesiredStateRequest& request) override {
    return real_->WatchDesiredState(context, request).release();
  }
  DesiredReader* AsyncWatchDesiredStateRaw(
      grpc::ClientContext* context, const v1::WatchDesiredStateRequest& request,
      grpc::CompletionQueue* cq, void* tag) override {
    return real_->AsyncWatchDesiredState(context, request, cq, tag).release();
  }
  DesiredReader* PrepareAsyncWatchDesiredStateRaw(
      grpc::ClientContext* context, const v1::WatchDesiredStateRequest& request,
      grpc::CompletionQueue* cq) override {
    return real_->PrepareAsyncWatchDesiredState(context, request, cq).release();
  }

  std::unique_ptr<v1::AgentRegistry::StubInterface> real_;
};

// A master with a 100 ms heartbeat interval on a free loopback port, and
// one agent (2 emulated GPUs, root's test tasks allowed as in
// agent_daemon_test) with the dependencies a test gives it.
class AgentDependenciesTest : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "master");
    MasterOptions options;
    options.state_dir = dir_.File("master");
    options.checkpoint_base = dir_.File("checkpoints");
    options.policy = "tiresias-l";
    options.queues = *QueueConfig::Create({3600.0});
    options.heartbeat_interval = Seconds{0.1};
    options.node_timeout = Seconds{60};
    auto state = MasterState::Open(options, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    auto server = MasterServer::Start(state_.get(), &clock_, "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  void TearDown() override {
    if (agent_ != nullptr) {
      auto jobs = state_->ListJobs();
      if (jobs.ok()) {
        for (const JobRecord& job : *jobs) {
          if (!IsFinal(job.state)) state_->CancelJob(job.id).IgnoreError();
        }
      }
      EXPECT_TRUE(
          WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
      agent_.reset();
    }
    if (server_) server_->Shutdown();
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mu_);
      for (const std::string& line : log_) {
        std::fprintf(stderr, "agent: %s\n", line.c_str());
      }
    }
  }

  void StartAgent(AgentDependencies deps) {
    AgentOptions options;
    options.master_address = absl::StrCat("127.0.0.1:", server_->port());
    options.node_name = "node-a";
    options.emulate_gpus = 2;
    options.state_dir = dir_.File("agent");
    options.grace = seconds(3);
    options.allow_root_tasks = true;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(std::string(line));
    };
    agent_ = std::make_unique<AgentDaemon>(std::move(options), std::move(deps));
    ASSERT_TRUE(agent_->Start().ok());
    ASSERT_TRUE(WaitUntil([&] { return agent_->node_id() != 0; }));
  }

  // The real dependencies, the launcher wrapped in a SlowLauncher
  // (launcher() points to it once the agent started).
  AgentDependencies WithSlowLauncher(milliseconds delay,
                                     std::map<std::string, int>* starts,
                                     std::mutex* mu) {
    AgentDependencies deps = RealAgentDependencies();
    deps.make_launcher =
        [this, delay, starts, mu,
         real = std::move(deps.make_launcher)](PosixLauncherOptions options) {
          auto slow = std::make_unique<SlowLauncher>(real(std::move(options)),
                                                     delay, starts, mu);
          slow_launcher_ = slow.get();
          return slow;
        };
    return deps;
  }

  // The real dependencies, the master stub wrapped in a LossyMasterStub
  // (lossy_stub_ points to it once the agent started).
  AgentDependencies WithLossyMasterStub() {
    AgentDependencies deps = RealAgentDependencies();
    deps.make_master_stub = [this, real = std::move(deps.make_master_stub)](
                                const AgentOptions& options) {
      auto lossy = std::make_unique<LossyMasterStub>(real(options));
      lossy_stub_ = lossy.get();
      return lossy;
    };
    return deps;
  }

  JobId Submit(const std::string& script) {
    JobRequest req;
    req.name = "t";
    req.user = "root";
    req.num_gpus = 1;
    req.command = {"/bin/sh", "-c", script};
    auto id = state_->SubmitJob(req);
    EXPECT_TRUE(id.ok()) << id.status();
    server_->Notify();
    return id.ok() ? *id : 0;
  }

  JobRecord Job(JobId id) {
    auto rec = state_->GetJob(id);
    EXPECT_TRUE(rec.ok()) << rec.status();
    return rec.ok() ? *rec : JobRecord{};
  }

  std::vector<std::string> LogLinesWith(std::string_view needle) {
    std::lock_guard<std::mutex> lock(log_mu_);
    std::vector<std::string> lines;
    for (const std::string& line : log_) {
      if (line.find(needle) != std::string::npos) lines.push_back(line);
    }
    return lines;
  }

  // The pids of the "started pid N" lines the agent logged.
  std::vector<pid_t> StartedPids() {
    std::vector<pid_t> pids;
    for (const std::string& line : LogLinesWith("started pid ")) {
      const size_t at = line.find("started pid ") + 12;
      int pid = 0;
      if (absl::SimpleAtoi(line.substr(at, line.find(' ', at) - at), &pid)) {
        pids.push_back(pid);
      }
    }
    return pids;
  }

  TestDir dir_;
  master::RealClock clock_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<AgentDaemon> agent_;
  SlowLauncher* slow_launcher_ = nullptr;  // the agent's, if slow
  LossyMasterStub* lossy_stub_ = nullptr;  // the agent's, if lossy
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// A task the agent cannot record (tasks.json cannot be written) would be
// invisible to the next agent on this state dir, which could start it a
// second time: the agent stops it at once instead, reports it, and keeps
// serving; once the disk is back the job runs to its end.
TEST_F(AgentDependenciesTest,
       ATaskThatCannotBeRecordedIsStoppedNotLeftRunning) {
  RecordFailingStore store;
  AgentDependencies deps = RealAgentDependencies();
  deps.files = &store;
  StartAgent(std::move(deps));
  store.fail_record = true;

  const JobId id = Submit("sleep 3; echo done");
  // The task was started (its process ran), then stopped for the record.
  ASSERT_TRUE(WaitUntil([&] { return !StartedPids().empty(); }, seconds(5)));
  ASSERT_TRUE(WaitUntil([&] { return !LogLinesWith("; stopping it").empty(); },
                        seconds(5)));
  EXPECT_THAT(LogLinesWith("task record: ")[0],
              HasSubstr("injected: no space left on device"));
  const pid_t first = StartedPids()[0];
  EXPECT_TRUE(WaitUntil([&] { return Gone(first); }, seconds(2)))
      << "pid " << first << " still runs unrecorded";
  EXPECT_GE(store.failed_writes.load(), 1);
  // Nothing of it reached the record, and the agent carries on.
  EXPECT_EQ(ReadFile(dir_.File("agent/tasks.json")).find("\"job_id\""),
            std::string::npos);
  EXPECT_TRUE(agent_->fatal().ok());
  EXPECT_NE(Job(id).state, JobRecordState::kFinished);

  // The disk is back: a later attempt is recorded and runs to its end.
  store.fail_record = false;
  ASSERT_TRUE(WaitUntil(
      [&] { return Job(id).state == JobRecordState::kFinished; }, seconds(20)))
      << "state " << static_cast<int>(Job(id).state);
  EXPECT_GE(Job(id).attempt, 2);
  EXPECT_EQ(Job(id).exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return agent_->task_count() == 0; }));
  // Every process it started while the record failed was stopped: none of
  // them got to "done" (only the last attempt's log has it).
  const std::vector<pid_t> pids = StartedPids();
  ASSERT_GE(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << pid;
  for (int attempt = 1; attempt < Job(id).attempt; ++attempt) {
    EXPECT_THAT(
        ReadFile(dir_.File(absl::StrCat("agent/logs/job-", id, "-attempt-",
                                        attempt, "-rank-0.log"))),
        ::testing::Not(HasSubstr("done")))
        << "attempt " << attempt;
  }
}

// A slow start (the launcher takes 1.5 s to exec the task, through ~15 of
// the master's heartbeat intervals, each a chance to be told again to start
// it) starts the task exactly once, and the job runs to its end.
TEST_F(AgentDependenciesTest, ASlowStartStartsTheTaskOnce) {
  std::mutex mu;
  std::map<std::string, int> starts;
  StartAgent(WithSlowLauncher(milliseconds(1500), &starts, &mu));
  const JobId id = Submit("echo ran; sleep 0.5");
  ASSERT_TRUE(WaitUntil(
      [&] { return Job(id).state == JobRecordState::kFinished; }, seconds(10)));
  EXPECT_EQ(Job(id).exit_code, 0);
  EXPECT_EQ(Job(id).attempt, 1);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(starts,
            (std::map<std::string, int>{{absl::StrCat(id, "/1/0"), 1}}));
  EXPECT_EQ(ReadFile(dir_.File(
                absl::StrCat("agent/logs/job-", id, "-attempt-1-rank-0.log"))),
            "ran\n");
}

// A job cancelled while its task is being started (the launcher takes
// 1.5 s to exec it): the start completes, then the agent stops the task at
// the master's next answer; the job ends cancelled, the task never got
// past its first line, and the agent carries on with the next job.
TEST_F(AgentDependenciesTest, AJobCancelledDuringASlowStartIsStopped) {
  std::mutex mu;
  std::map<std::string, int> starts;
  StartAgent(WithSlowLauncher(milliseconds(1500), &starts, &mu));
  const JobId id = Submit("echo ran; sleep 3; echo done");
  ASSERT_TRUE(
      WaitUntil([&] { return slow_launcher_->starting.load(); }, seconds(5)));
  ASSERT_TRUE(state_->CancelJob(id).ok());
  server_->Notify();
  ASSERT_TRUE(
      WaitUntil([&] { return Job(id).state == JobRecordState::kCancelled; },
                seconds(10)));
  EXPECT_TRUE(WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
  ASSERT_EQ(StartedPids().size(), 1u);
  EXPECT_TRUE(Gone(StartedPids()[0]));
  EXPECT_THAT(ReadFile(dir_.File(absl::StrCat("agent/logs/job-", id,
                                              "-attempt-1-rank-0.log"))),
              ::testing::Not(HasSubstr("done")));
  const JobId next = Submit("echo next");
  EXPECT_TRUE(
      WaitUntil([&] { return Job(next).state == JobRecordState::kFinished; },
                seconds(10)));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(starts,
            (std::map<std::string, int>{{absl::StrCat(id, "/1/0"), 1},
                                        {absl::StrCat(next, "/1/0"), 1}}));
}

// Heartbeats lost on a flaky network while a task runs and ends: first
// the master hears nothing for a second (ten heartbeats), then for a
// second it hears every report, its end included, but the agent never
// gets an answer. Judged from the ground truth: the task's process started
// once and ran to its end, its log says so once, and the job ends
// finished on its first attempt, never preempted or started again.
TEST_F(AgentDependenciesTest, LostHeartbeatsNeitherRepeatNorLoseATask) {
  StartAgent(WithLossyMasterStub());
  ASSERT_NE(lossy_stub_, nullptr);
  const JobId id = Submit("echo ran; sleep 1.2; echo done");
  ASSERT_TRUE(WaitUntil(
      [&] { return Job(id).state == JobRecordState::kRunning; }, seconds(10)));
  lossy_stub_->drop_requests = true;
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_EQ(Job(id).state, JobRecordState::kRunning);  // the master heard nothing
  lossy_stub_->drop_requests = false;
  lossy_stub_->drop_answers = true;
  // The end reaches the master while no answer reaches the agent.
  ASSERT_TRUE(WaitUntil(
      [&] { return Job(id).state == JobRecordState::kFinished; }, seconds(10)));
  std::this_thread::sleep_for(milliseconds(500));
  lossy_stub_->drop_answers = false;
  EXPECT_TRUE(WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
  // More heartbeats after the losses, and nothing changes.
  const int delivered = lossy_stub_->delivered.load();
  ASSERT_TRUE(WaitUntil(
      [&] { return lossy_stub_->delivered.load() >= delivered + 5; },
      seconds(5)));
  EXPECT_GE(lossy_stub_->dropped.load(), 10);
  const JobRecord job = Job(id);
  EXPECT_EQ(job.state, JobRecordState::kFinished);
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.attempt, 1);
  EXPECT_EQ(job.preemptions, 0);
  EXPECT_EQ(StartedPids().size(), 1u);
  EXPECT_EQ(ReadFile(dir_.File(
                absl::StrCat("agent/logs/job-", id, "-attempt-1-rank-0.log"))),
            "ran\ndone\n");
  EXPECT_TRUE(agent_->fatal().ok());
}

// A cancel the agent cannot hear (every heartbeat answer lost: the watch
// only wakes it, and the stop would come in the answer), raced by the
// task's own end: the task, never told to stop, runs to its end and exits
// 0, and its own end wins over the stop nobody delivered: the job ends
// finished, with its exit code, once.
TEST_F(AgentDependenciesTest, ACancelLostOnTheWayLosesToTheTasksOwnEnd) {
  StartAgent(WithLossyMasterStub());
  ASSERT_NE(lossy_stub_, nullptr);
  const JobId id = Submit("echo ran; sleep 1; echo done");
  ASSERT_TRUE(WaitUntil(
      [&] { return Job(id).state == JobRecordState::kRunning; }, seconds(10)));
  lossy_stub_->drop_answers = true;
  ASSERT_TRUE(state_->CancelJob(id).ok());
  server_->Notify();
  ASSERT_TRUE(WaitUntil([&] { return IsFinal(Job(id).state); }, seconds(10)));
  lossy_stub_->drop_answers = false;
  EXPECT_TRUE(WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
  const JobRecord job = Job(id);
  EXPECT_EQ(job.state, JobRecordState::kFinished);
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.attempt, 1);
  EXPECT_EQ(StartedPids().size(), 1u);
  EXPECT_EQ(ReadFile(dir_.File(
                absl::StrCat("agent/logs/job-", id, "-attempt-1-rank-0.log"))),
            "ran\ndone\n");
}

}  // namespace
}  // namespace tiresias
