// AgentDaemonTest: an AgentDaemon against a real master (MasterServer over
// loopback, real SQLite state in a temporary folder) and real child
// processes. The fixture of agent_daemon_test and agent_reconnect_test.
#ifndef TIRESIAS_AGENT_AGENT_DAEMON_FIXTURE_H_
#define TIRESIAS_AGENT_AGENT_DAEMON_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent_daemon.h"
#include "agent/agent_testing.h"
#include "agent/proc_table.h"
#include "agent/task_record.h"
#include "gtest/gtest.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias::agent_testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A master with a 100 ms heartbeat interval, serving on a free port.
class AgentDaemonTest : public testing::Test {
 protected:
  void StartMaster(std::vector<double> thresholds = {3600.0},
                   Seconds node_timeout = Seconds{60}) {
    std::filesystem::create_directories(dir_.path() / "master");
    MasterOptions options;
    options.state_dir = dir_.File("master");
    // Root's test jobs checkpoint in the test's folder, not root's home.
    options.checkpoint_base = dir_.File("checkpoints");
    options.policy = "tiresias-l";
    options.queues = *QueueConfig::Create(thresholds);
    options.heartbeat_interval = Seconds{0.1};
    options.node_timeout = node_timeout;
    auto state = MasterState::Open(options, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    ServeOn("127.0.0.1:0");
  }

  void ServeOn(const std::string& address) {
    auto server = MasterServer::Start(state_.get(), &clock_, address);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  void TearDown() override {
    // Ends whatever still runs, so no task outlives the test.
    if (state_ != nullptr && !agents_.empty()) {
      auto jobs = state_->ListJobs();
      if (jobs.ok()) {
        for (const JobRecord& job : *jobs) {
          if (!IsFinal(job.state)) (void)state_->CancelJob(job.id);
        }
      }
      AgentDaemon* live = agents_.back().get();
      EXPECT_TRUE(
          WaitUntil([&] { return live->task_count() == 0; }, seconds(5)));
    }
    agents_.clear();
    if (server_) server_->Shutdown();
    if (HasFailure()) {  // what the agents said, to see why
      std::lock_guard<std::mutex> lock(log_mu_);
      for (const std::string& line : log_)
        std::fprintf(stderr, "agent: %s\n", line.c_str());
    }
  }

  AgentOptions Options(const std::string& name = "node-a") {
    AgentOptions options;
    options.master_address = "127.0.0.1:" + std::to_string(server_->port());
    options.node_name = name;
    options.emulate_gpus = 2;
    options.state_dir =
        dir_.File(name == "node-a" ? std::string("agent") : "agent-" + name);
    options.grace = seconds(3);
    // The jobs are root's (Submit): these tests are about the agent's
    // protocol, and their tasks write to the test's folder, which only root
    // may (CI runs as root); an agent that is not root runs them as itself
    // anyway. Tests of whom tasks run as set this back to false.
    options.allow_root_tasks = true;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(std::string(line));
    };
    return options;
  }

  AgentDaemon* StartAgent(const std::string& name = "node-a") {
    return StartAgent(Options(name));
  }
  // An agent as an operator starts one: root tasks refused. For the tests
  // of whom tasks run as.
  AgentOptions OperatorOptions(const std::string& name = "node-a") {
    AgentOptions options = Options(name);
    options.allow_root_tasks = false;
    return options;
  }
  AgentDaemon* StartAgent(AgentOptions options) {
    agents_.push_back(std::make_unique<AgentDaemon>(std::move(options)));
    EXPECT_TRUE(agents_.back()->Start().ok());
    EXPECT_TRUE(WaitUntil([&] { return agents_.back()->node_id() != 0; }));
    return agents_.back().get();
  }

  JobId Submit(int gpus, std::string script, std::string user = "root",
               std::string checkpoint_dir = "") {
    JobRequest req;
    req.name = "t";
    req.user = std::move(user);
    req.checkpoint_dir = std::move(checkpoint_dir);
    req.num_gpus = gpus;
    req.command = {"/bin/sh", "-c", std::move(script)};
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

  bool WaitState(JobId id, JobRecordState want,
                 milliseconds timeout = seconds(5)) {
    return WaitUntil([&] { return Job(id).state == want; }, timeout);
  }

  std::string LogOf(JobId id, int attempt) {
    return ReadFile(dir_.File("agent/logs/job-" + std::to_string(id) +
                              "-attempt-" + std::to_string(attempt) +
                              "-rank-0.log"));
  }

  int CountLog(std::string_view needle) {
    std::lock_guard<std::mutex> lock(log_mu_);
    int n = 0;
    for (const std::string& line : log_) {
      if (line.find(needle) != std::string::npos) ++n;
    }
    return n;
  }

  // The pid (the task's shim) the agent recorded for job `id`'s task.
  pid_t RecordedPid(JobId id) {
    auto entries = ParseTaskRecord(ReadFile(dir_.File("agent/tasks.json")));
    EXPECT_TRUE(entries.ok()) << entries.status();
    for (const TaskRecordEntry& e :
         entries.value_or(std::vector<TaskRecordEntry>{})) {
      if (e.handle.job_id == id) return e.handle.pid;
    }
    ADD_FAILURE() << "job " << id << " is not in the task record";
    return 0;
  }

  // Gone, or a zombie.
  static bool Exited(pid_t pid) {
    auto stat = RealProcessTable()->Stat(pid);
    return stat.ok() && (!stat->has_value() || (*stat)->exited());
  }

  // ReadJobLog on the master, over gRPC as a client calls it.
  grpc::Status ReadLog(JobId id, int attempt, int rank, int64_t offset,
                       int max_bytes, v1::ReadJobLogResponse* resp) {
    if (client_ == nullptr) {
      client_ = v1::Tiresias::NewStub(
          grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                              grpc::InsecureChannelCredentials()));
    }
    v1::ReadJobLogRequest req;
    req.set_job_id(id);
    req.set_attempt(attempt);
    req.set_rank(rank);
    req.set_offset(offset);
    req.set_max_bytes(max_bytes);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
    return client_->ReadJobLog(&ctx, req, resp);
  }

  TestDir dir_;
  std::unique_ptr<v1::Tiresias::Stub> client_;
  master::RealClock clock_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  std::vector<std::unique_ptr<AgentDaemon>> agents_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

}  // namespace tiresias::agent_testing

#endif  // TIRESIAS_AGENT_AGENT_DAEMON_FIXTURE_H_
