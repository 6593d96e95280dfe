// A real AgentDaemon and real task processes against a scripted master: a
// gRPC AgentRegistry on loopback whose answers the test sets, so that it
// can send what a real master sends only under faults: late and reordered
// desired states, states of another session, a replay of an ended launch,
// an answer so slow that what it says may be out of date. The ground truth
// is what the tasks themselves record.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "agent/agent_daemon.h"
#include "agent/agent_testing.h"
#include "agent/task_record.h"
#include "gtest/gtest.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kSession = 7;

// Answers Register with `registered` and every Heartbeat with `answer`
// (set by the test), acknowledging every ended task reported.
class ScriptedMaster final : public v1::AgentRegistry::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    registration_ = *req;
    resp->set_node_id(1);
    resp->set_session(kSession);
    resp->set_heartbeat_interval_seconds(0.05);
    resp->set_lease_seconds(60);
    resp->set_epoch(epoch_);
    *resp->mutable_desired() = registered_;
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override {
    milliseconds delay{0};
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const v1::TaskStatus& t : req->tasks()) {
        if (t.state() == v1::TASK_STATE_EXITED ||
            t.state() == v1::TASK_STATE_PREEMPTED) {
          *resp->add_acknowledged() = t.task();
        }
      }
      *resp->mutable_desired() = answer_;
      resp->set_epoch(epoch_);
      resp->set_heartbeat_interval_seconds(interval_);
      delay = std::exchange(delay_next_, milliseconds(0));
      last_report_ = *req;
    }
    std::this_thread::sleep_for(delay);
    std::lock_guard<std::mutex> lock(mu_);
    ++answered_;
    answered_at_.push_back(std::chrono::system_clock::now());
    cv_.notify_all();
    return grpc::Status::OK;
  }
  grpc::Status WatchDesiredState(grpc::ServerContext*,
                                 const v1::WatchDesiredStateRequest*,
                                 grpc::ServerWriter<v1::DesiredState>*) override {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no pushes here");
  }

  // The leader epoch of every answer from now on (0: none, as before
  // epochs).
  void SetEpoch(uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mu_);
    epoch_ = epoch;
  }
  // The heartbeat interval every heartbeat answer tells from now on (0:
  // none, as from an older master).
  void SetInterval(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    interval_ = seconds;
  }
  int answered() {
    std::lock_guard<std::mutex> lock(mu_);
    return answered_;
  }
  void SetRegistered(v1::DesiredState d) {
    std::lock_guard<std::mutex> lock(mu_);
    registered_ = std::move(d);
  }
  // Answers from now on with `d`; returns the answer count before.
  int Answer(v1::DesiredState d, milliseconds delay_next = milliseconds(0)) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(d);
    delay_next_ = delay_next;
    return answered_;
  }
  // Waits until `n` more heartbeats than `since` have been answered.
  bool WaitAnswered(int since, int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, seconds(10),
                        [&] { return answered_ >= since + n; });
  }
  v1::RegisterRequest registration() {
    std::lock_guard<std::mutex> lock(mu_);
    return registration_;
  }
  v1::HeartbeatRequest last_report() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_report_;
  }
  std::chrono::system_clock::time_point answered_at(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    return answered_at_.at(i);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  v1::DesiredState registered_;
  v1::DesiredState answer_;
  milliseconds delay_next_{0};
  uint64_t epoch_ = 0;
  double interval_ = 0;
  int answered_ = 0;
  std::vector<std::chrono::system_clock::time_point> answered_at_;
  v1::HeartbeatRequest last_report_;
  v1::RegisterRequest registration_;
};

class ScriptedMasterTest : public testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&master_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (agent_) agent_->Stop();
    // Whatever a failing test left running.
    for (const auto& entry :
         std::filesystem::directory_iterator(dir_.path())) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("pid-")) {
        const pid_t pid = std::stoi(ReadFile(entry.path().string()));
        if (pid > 0) kill(pid, SIGKILL);
      }
    }
    server_->Shutdown();
  }

  void StartAgent() {
    AgentOptions options;
    options.master_address = absl::StrCat("127.0.0.1:", port_);
    options.node_name = "scripted";
    options.emulate_gpus = 2;
    options.state_dir = dir_.File("agent");
    options.grace = milliseconds(200);
    options.max_answer_age = milliseconds(1000);
    // The tasks are root's (Run): this test is about the protocol, and its
    // tasks write to the test's folder, which only root may (CI runs as
    // root). An agent that is not root runs them as itself anyway.
    options.allow_root_tasks = true;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_ += std::string(line) + "\n";
    };
    agent_ = std::make_unique<AgentDaemon>(options);
    ASSERT_TRUE(agent_->Start().ok());
  }

  // Task (job, attempt 1, rank 0): records "start <unix ns>" in
  // start-<job>, its pid in pid-<job>, then sleeps.
  v1::StartTask Run(int64_t job) const {
    v1::StartTask start;
    start.mutable_task()->set_job_id(job);
    start.mutable_task()->set_attempt(1);
    start.set_world_size(1);
    start.add_gpu_indexes(0);
    start.set_owner("root");
    const std::string marker = dir_.File(absl::StrCat("start-", job));
    start.add_command("/bin/sh");
    start.add_command("-c");
    start.add_command(absl::StrCat("echo start $(date +%s%N) >> ", marker,
                                   "; echo $$ > ",
                                   dir_.File(absl::StrCat("pid-", job)),
                                   "; exec sleep 30"));
    return start;
  }
  static v1::DesiredState State(uint64_t session, uint64_t version,
                                std::vector<v1::StartTask> runs,
                                std::vector<v1::StopTask> stops = {}) {
    v1::DesiredState d;
    d.set_session(session);
    d.set_version(version);
    for (auto& r : runs) *d.add_run() = r;
    for (auto& s : stops) *d.add_stop() = s;
    return d;
  }
  static v1::StopTask Stop(int64_t job) {
    v1::StopTask stop;
    stop.set_job_id(job);
    stop.set_attempt(1);
    stop.set_reason(v1::STOP_REASON_CANCEL);
    return stop;
  }
  int Starts(int64_t job) const {
    const std::string text = ReadFile(dir_.File(absl::StrCat("start-", job)));
    int n = 0;
    for (size_t at = text.find("start"); at != std::string::npos;
         at = text.find("start", at + 1)) {
      ++n;
    }
    return n;
  }
  bool Reports(int64_t job) {
    // A copy: a range-for over a temporary's field would outlive it.
    const v1::HeartbeatRequest report = master_.last_report();
    for (const v1::TaskStatus& t : report.tasks()) {
      if (t.task().job_id() == job) return true;
    }
    return false;
  }

  TestDir dir_;
  ScriptedMaster master_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AgentDaemon> agent_;
  std::mutex log_mu_;
  std::string log_;
};

TEST_F(ScriptedMasterTest, LateReorderedOrReplayedStatesNeverRestartAStoppedTask) {
  master_.SetRegistered(State(kSession, 1, {Run(1)}));
  master_.Answer(State(kSession, 1, {Run(1)}));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Starts(1) == 1; }));
  // Cancelled: stopped, reported, acknowledged, forgotten.
  int since = master_.Answer(State(kSession, 2, {}, {Stop(1)}));
  ASSERT_TRUE(master_.WaitAnswered(since, 1));
  ASSERT_TRUE(WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
  // A late copy of the state that started it (version 1 < 2).
  since = master_.Answer(State(kSession, 1, {Run(1)}));
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(Starts(1), 1) << "a late state restarted a cancelled task";
  // A state of another session (an earlier registration, or a forgery).
  since = master_.Answer(State(kSession + 1, 9, {Run(2)}));
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(Starts(2), 0) << "a state of another session was obeyed";
  // A newer state that replays the ended launch (a confused master).
  since = master_.Answer(State(kSession, 4, {Run(1)}));
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(Starts(1), 1) << "an ended launch was started again";
  EXPECT_FALSE(Reports(1));
  // And a new launch still starts (the agent is not simply deaf).
  master_.Answer(State(kSession, 5, {Run(3)}));
  EXPECT_TRUE(WaitUntil([&] { return Starts(3) == 1; }));
}

// The interval a heartbeat's answer tells replaces the one Register told
// (a master lengthens it as its cluster grows); an answer without one (an
// older master) leaves it as it is.
TEST_F(ScriptedMasterTest, HeartbeatIntervalFollowsTheAnswers) {
  master_.SetRegistered(State(kSession, 1, {}));
  master_.Answer(State(kSession, 1, {}));
  StartAgent();
  // Register's 50 ms, and no interval in the answers: it stays.
  ASSERT_TRUE(master_.WaitAnswered(0, 3));
  int before = master_.answered();
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_GE(master_.answered() - before, 6) << "50 ms apart";
  // Told 400 ms: at most two in the next 600 ms, after the one in flight.
  master_.SetInterval(0.4);
  ASSERT_TRUE(master_.WaitAnswered(master_.answered(), 2));
  before = master_.answered();
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_LE(master_.answered() - before, 2) << "400 ms apart";
  // Back to 50 ms.
  master_.SetInterval(0.05);
  ASSERT_TRUE(master_.WaitAnswered(master_.answered(), 2));
  before = master_.answered();
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_GE(master_.answered() - before, 6) << "50 ms apart again";
}

// A master that lost the lead (its epoch below one the agent has followed)
// is not obeyed: neither its stops nor its starts, until a master of the
// epoch followed answers again; the epoch is kept with the session.
TEST_F(ScriptedMasterTest, AnAnswerOfAnOlderLeaderEpochIsIgnored) {
  master_.SetEpoch(5);
  master_.SetRegistered(State(kSession, 1, {Run(1)}));
  master_.Answer(State(kSession, 1, {Run(1)}));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Starts(1) == 1; }));
  EXPECT_NE(ReadFile(dir_.File("agent/session.json")).find("\"epoch\":5"),
            std::string::npos)
      << ReadFile(dir_.File("agent/session.json"));
  // The deposed leader (epoch 4) would stop job 1 and start job 2.
  master_.SetEpoch(4);
  int since = master_.Answer(State(kSession, 2, {Run(2)}, {Stop(1)}));
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(Starts(2), 0) << "a deposed leader started a task";
  EXPECT_EQ(agent_->task_count(), 1);
  EXPECT_TRUE(Reports(1)) << "job 1 was stopped by a deposed leader";
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    EXPECT_NE(log_.find("older than epoch 5"), std::string::npos) << log_;
  }
  // The leader of epoch 5 (or a newer one) is obeyed again.
  master_.SetEpoch(6);
  master_.Answer(State(kSession, 3, {Run(1), Run(3)}));
  EXPECT_TRUE(WaitUntil([&] { return Starts(3) == 1; }));
  EXPECT_EQ(Starts(1), 1);
  EXPECT_EQ(Starts(2), 0);
  EXPECT_TRUE(WaitUntil([&] {
    return ReadFile(dir_.File("agent/session.json")).find("\"epoch\":6") !=
           std::string::npos;
  }));
}

// Heartbeat answers as deltas (DesiredState.delta): tasks the delta does
// not name keep running (a delta is not the whole state: they are no
// orphans), removed ones stop, and a delta against a version the agent does
// not hold is not applied (it reports the version it holds instead).
TEST_F(ScriptedMasterTest, DeltasAreAppliedToTheStateHeld) {
  master_.SetRegistered(State(kSession, 1, {Run(1)}));
  master_.Answer(State(kSession, 1, {Run(1)}));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Starts(1) == 1; }));
  ASSERT_TRUE(WaitUntil(
      [&] { return master_.last_report().desired_version() == 1; }));
  // Version 2 against 1: task 2 added; task 1 not named, so it stays.
  v1::DesiredState add = State(kSession, 2, {Run(2)});
  add.set_delta(true);
  add.set_base_version(1);
  int since = master_.Answer(add);
  ASSERT_TRUE(WaitUntil([&] { return Starts(2) == 1; }));
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(agent_->task_count(), 2) << "a task a delta did not name stopped";
  EXPECT_TRUE(Reports(1));
  EXPECT_EQ(master_.last_report().desired_version(), 2);
  // Version 3 against 2: task 1 removed (an orphan now: stopped).
  v1::DesiredState remove = State(kSession, 3, {});
  remove.set_delta(true);
  remove.set_base_version(2);
  v1::TaskRef* gone = remove.add_removed();
  gone->set_job_id(1);
  gone->set_attempt(1);
  master_.Answer(remove);
  ASSERT_TRUE(WaitUntil([&] { return !Reports(1); }, seconds(10)));
  EXPECT_TRUE(Reports(2));
  EXPECT_EQ(Starts(1), 1);
  // A delta against version 7, which this agent never held: not applied.
  v1::DesiredState foreign = State(kSession, 8, {Run(3)});
  foreign.set_delta(true);
  foreign.set_base_version(7);
  since = master_.Answer(foreign);
  ASSERT_TRUE(master_.WaitAnswered(since, 5));
  EXPECT_EQ(Starts(3), 0) << "a delta against a version not held was applied";
  EXPECT_EQ(master_.last_report().desired_version(), 3);
  // The whole state then replaces what it holds: task 2 stays, 3 starts.
  master_.Answer(State(kSession, 8, {Run(2), Run(3)}));
  ASSERT_TRUE(WaitUntil([&] { return Starts(3) == 1; }));
  EXPECT_EQ(Starts(2), 1);
  EXPECT_TRUE(Reports(2));
}

// An answer that arrives more than AgentOptions::max_answer_age after its
// report was sent may be out of date (the master may have cancelled since):
// the agent reports again and starts only from a fresh answer.
TEST_F(ScriptedMasterTest, AnswerTooOldIsNotStartedFrom) {
  master_.SetRegistered(State(kSession, 1, {}));
  master_.Answer(State(kSession, 1, {}));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return agent_->node_id() != 0; }));
  const int since =
      master_.Answer(State(kSession, 2, {Run(1)}), milliseconds(1500));
  ASSERT_TRUE(master_.WaitAnswered(since, 2));
  ASSERT_TRUE(WaitUntil([&] { return Starts(1) == 1; }));
  // Started after the fresh answer, not from the slow one.
  const std::string text = ReadFile(dir_.File("start-1"));
  const int64_t started_ns = std::stoll(text.substr(text.find(' ') + 1));
  const int64_t fresh_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          master_.answered_at(since + 1).time_since_epoch())
          .count();
  EXPECT_GE(started_ns, fresh_ns - 5'000'000);
  std::lock_guard<std::mutex> lock(log_mu_);
  EXPECT_NE(log_.find("reporting again before starting anything"),
            std::string::npos)
      << log_;
}

// A task that ends at once can end "before" it started: the shim stamps the
// end, the agent reads the clock for the start after exec returns. The
// master refuses an end before the start (an impossible report), so an
// agent that sent one had its task's end refused forever and the job never
// ended (seen under load). The agent reports the end no earlier than the
// start.
TEST_F(ScriptedMasterTest, EndIsNeverReportedBeforeTheStart) {
  // A task a previous agent recorded, started at T, whose shim wrote an end
  // 3 ms before T; its process is gone.
  const auto started = std::chrono::system_clock::now();
  TaskHandle handle;
  handle.job_id = 5;
  handle.attempt = 1;
  handle.pid = 999999;  // no such process
  handle.pgid = 999999;
  handle.start_time = started;
  handle.exit_path = dir_.File("agent/exits/job-5-attempt-1-rank-0.exit");
  std::filesystem::create_directories(dir_.File("agent/exits"));
  const int64_t end_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          (started - milliseconds(3)).time_since_epoch())
          .count();
  std::ofstream(handle.exit_path) << "exit 0 " << end_ns << "\n";
  auto record = TaskRecord::Open(dir_.File("agent/tasks.json"));
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_TRUE(record->Put(TaskRecordEntry{handle, std::nullopt}).ok());
  master_.SetRegistered(State(kSession, 1, {}));
  master_.Answer(State(kSession, 1, {}));
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return agent_->node_id() != 0; }));
  const v1::RegisterRequest reg = master_.registration();
  ASSERT_EQ(reg.tasks_size(), 1);
  const v1::TaskStatus& t = reg.tasks(0);
  EXPECT_EQ(t.state(), v1::TASK_STATE_EXITED);
  ASSERT_TRUE(t.has_start_time() && t.has_end_time());
  EXPECT_GE(t.end_time(), t.start_time());
}

}  // namespace
}  // namespace tiresias
