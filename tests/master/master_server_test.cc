// MasterServer over real gRPC on loopback, with a real client stub and real
// SQLite files.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/event_watch.h"
#include "master/server.h"
#include "master_test_util.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias::master_testing {
namespace {

class MasterServerTest : public MasterFixture {
 protected:
  // A master over options_ (real clock) on a loopback port, and a channel
  // to it.
  void StartOnLoopback() {
    auto state = MasterState::Open(options_, &real_clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    live_state_ = std::move(*state);
    auto server =
        MasterServer::Start(live_state_.get(), &real_clock_, "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  master::RealClock real_clock_;
  std::unique_ptr<MasterState> live_state_;
  std::unique_ptr<MasterServer> server_;  // before live_state_ goes
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(MasterServerTest, SubmitListAndRejectOverGrpc) {
  master::RealClock clock;
  auto state = MasterState::Open(options_, &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  auto channel = grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()),
      grpc::InsecureChannelCredentials());
  auto stub = v1::Tiresias::NewStub(channel);
  auto agents = v1::AgentRegistry::NewStub(channel);

  auto submit = [&](int gpus, std::vector<std::string> command,
                    v1::SubmitJobResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(gpus);
    for (auto& arg : command) req.mutable_spec()->add_command(arg);
    return stub->SubmitJob(&ctx, req, resp);
  };

  v1::SubmitJobResponse first;
  ASSERT_TRUE(submit(1, {"sleep", "1"}, &first).ok());
  EXPECT_GT(first.job_id(), 0);

  v1::SubmitJobResponse bad;
  grpc::Status status = submit(-1, {"sleep"}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.gpus"), std::string::npos);
  status = submit(0, {"sleep"}, &bad);  // no GPU and no CPU
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.cpus"), std::string::npos);
  status = submit(1, {}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(12345);
    v1::GetJobResponse resp;
    EXPECT_EQ(stub->GetJob(&ctx, req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {  // an agent with 2 GPUs; the scheduling thread starts the job
    grpc::ClientContext ctx;
    v1::RegisterRequest req;
    req.set_name("n1");
    req.set_address("127.0.0.1");
    req.set_gpus(2);
    req.set_agent_token("the-agent-token-of-n1");
    v1::RegisterResponse resp;
    grpc::Status registered = agents->Register(&ctx, req, &resp);
    ASSERT_TRUE(registered.ok()) << registered.error_message();
    EXPECT_GT(resp.node_id(), 0);
  }
  v1::SubmitJobResponse second;
  ASSERT_TRUE(submit(2, {"sleep", "2"}, &second).ok());  // still serving
  status = submit(3, {"sleep"}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext ctx;
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
  ASSERT_EQ(list.jobs_size(), 2);
  EXPECT_EQ(list.jobs(0).id(), first.job_id());
  EXPECT_EQ(list.jobs(1).id(), second.job_id());
  EXPECT_EQ(list.jobs(1).spec().gpus(), 2);
  EXPECT_EQ(list.jobs(0).events_size(), 0);

  grpc::ClientContext nodes_ctx;
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(stub->ListNodes(&nodes_ctx, v1::ListNodesRequest(), &nodes).ok());
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).state(), v1::NODE_STATE_UP);
  (*server)->Shutdown();
  (*server)->Shutdown();  // idempotent
}

// Reads one event from a watch stream on another thread, waiting at most
// `timeout` (a blocked Read cannot be given a deadline of its own).
class WatchReader {
 public:
  WatchReader(v1::Tiresias::Stub* stub, const v1::WatchEventsRequest& req) {
    reader_ = stub->WatchEvents(&ctx_, req);
    thread_ = std::thread([this] {
      v1::JobEvent event;
      while (reader_->Read(&event)) {
        std::lock_guard<std::mutex> lock(mu_);
        events_.push_back(event);
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    });
  }
  ~WatchReader() {
    ctx_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }
  // Waits until `n` events arrived (true) or `timeout` passed.
  bool WaitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout,
                        [&] { return events_.size() >= n || done_; }) &&
           events_.size() >= n;
  }
  bool WaitDone(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_; });
  }
  std::vector<v1::JobEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  grpc::Status Finish() {
    if (thread_.joinable()) thread_.join();
    return reader_->Finish();
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1::JobEvent> events_;
  bool done_ = false;
};

TEST_F(MasterServerTest, WatchEventsReplaysThenStreamsLive) {
  master::RealClock clock;
  auto state = MasterState::Open(options_, &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()),
      grpc::InsecureChannelCredentials());
  auto stub = v1::Tiresias::NewStub(channel);
  auto submit = [&]() -> int64_t {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("sleep");
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(stub->SubmitJob(&ctx, req, &resp).ok());
    return resp.job_id();
  };
  auto cancel = [&](int64_t id) {
    grpc::ClientContext ctx;
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    EXPECT_TRUE(stub->CancelJob(&ctx, req, &resp).ok());
  };
  using std::chrono::milliseconds;

  const int64_t first = submit();
  const int64_t second = submit();
  {  // an unknown job, a bad id
    grpc::ClientContext ctx;
    v1::WatchEventsRequest req;
    req.set_job_id(999);
    auto reader = stub->WatchEvents(&ctx, req);
    v1::JobEvent event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }

  // Every job from the start: both "submitted" events, in order.
  v1::WatchEventsRequest all;
  all.set_after_sequence(0);
  WatchReader everything(stub.get(), all);
  ASSERT_TRUE(everything.WaitFor(2, milliseconds(5000)));
  std::vector<v1::JobEvent> seen = everything.events();
  EXPECT_EQ(seen[0].job_id(), first);
  EXPECT_EQ(seen[0].kind(), "submitted");
  EXPECT_EQ(seen[1].job_id(), second);
  EXPECT_EQ(seen[1].kind(), "submitted");
  EXPECT_LT(seen[0].sequence(), seen[1].sequence());

  // One job only, skipping what was seen: nothing yet.
  v1::WatchEventsRequest one;
  one.set_job_id(first);
  one.set_after_sequence(seen[0].sequence());
  WatchReader just_first(stub.get(), one);
  // Live only (no after_sequence).
  WatchReader live(stub.get(), v1::WatchEventsRequest());
  EXPECT_FALSE(just_first.WaitFor(1, milliseconds(300)));
  EXPECT_TRUE(live.events().empty());

  // A cancel arrives on every open stream within a second.
  const auto before = std::chrono::steady_clock::now();
  cancel(first);
  ASSERT_TRUE(everything.WaitFor(3, milliseconds(1000)));
  ASSERT_TRUE(just_first.WaitFor(1, milliseconds(1000)));
  ASSERT_TRUE(live.WaitFor(1, milliseconds(1000)));
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(1000));
  EXPECT_EQ(everything.events()[2].kind(), "cancelled");
  EXPECT_EQ(everything.events()[2].job_id(), first);
  EXPECT_EQ(just_first.events()[0].kind(), "cancelled");
  EXPECT_EQ(live.events()[0].kind(), "cancelled");
  EXPECT_EQ(live.events()[0].sequence(), everything.events()[2].sequence());

  // Another job's event reaches the unfiltered streams only.
  cancel(second);
  ASSERT_TRUE(live.WaitFor(2, milliseconds(1000)));
  EXPECT_EQ(live.events()[1].job_id(), second);
  EXPECT_FALSE(just_first.WaitFor(2, milliseconds(200)));

  // After a sequence: only the later events replayed.
  v1::WatchEventsRequest later;
  later.set_after_sequence(seen[1].sequence());
  WatchReader tail(stub.get(), later);
  ASSERT_TRUE(tail.WaitFor(2, milliseconds(5000)));
  EXPECT_EQ(tail.events()[0].kind(), "cancelled");
  EXPECT_EQ(tail.events()[0].job_id(), first);
  EXPECT_EQ(tail.events()[1].job_id(), second);

  // A client that goes away ends its stream on the server.
  {
    WatchReader gone(stub.get(), v1::WatchEventsRequest());
  }

  // Shutdown with streams open returns promptly and ends them.
  const auto stop = std::chrono::steady_clock::now();
  (*server)->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - stop, milliseconds(1500));
  ASSERT_TRUE(live.WaitDone(milliseconds(2000)));
  grpc::Status status = live.Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

}  // namespace
}  // namespace tiresias::master_testing

namespace tiresias::master_testing {
namespace {

// 7. Slow hand-off: decisions used to wait for the agent's next heartbeat.
// Now the master pushes a wake-up (the node's new desired-state version)
// on the agent's WatchDesiredState stream as soon as the decision is
// durable. With a heartbeat interval of minutes (node timeout 1 h) and no
// heartbeat due, the agent learns of the start at once and reports for it.
TEST_F(MasterServerTest, DecisionIsPushedToTheAgentWithoutAHeartbeat) {
  options_.node_timeout = Seconds{3600};
  options_.heartbeat_interval = Seconds{600};
  ASSERT_NO_FATAL_FAILURE(StartOnLoopback());
  auto clients = v1::Tiresias::NewStub(channel_);
  auto agents = v1::AgentRegistry::NewStub(channel_);
  v1::RegisterResponse reg;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(agents->Register(&ctx, RegisterRequest("n1", 1), &reg).ok());
  }
  ASSERT_EQ(reg.heartbeat_interval_seconds(), 360);  // node timeout / 10
  // The stream, read on another thread.
  grpc::ClientContext watch_ctx;
  v1::WatchDesiredStateRequest watch;
  watch.set_node_id(reg.node_id());
  watch.set_session(reg.session());
  watch.set_after_version(reg.desired().version());
  auto reader = agents->WatchDesiredState(&watch_ctx, watch);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<v1::DesiredState> pushed;
  std::thread read([&] {
    v1::DesiredState desired;
    while (reader->Read(&desired)) {
      std::lock_guard<std::mutex> lock(mu);
      pushed.push_back(desired);
      cv.notify_all();
    }
  });
  v1::SubmitJobResponse submitted;
  {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("train");
    ASSERT_TRUE(clients->SubmitJob(&ctx, req, &submitted).ok());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] {
      return !pushed.empty() &&
             pushed.back().version() > reg.desired().version();
    })) << "no newer desired state was pushed";
    // A wake-up: session and version only; the state comes with the
    // agent's next report.
    EXPECT_EQ(pushed.back().session(), reg.session());
    EXPECT_EQ(pushed.back().run_size(), 0);
  }
  {
    grpc::ClientContext ctx;
    v1::HeartbeatRequest beat;
    beat.set_node_id(reg.node_id());
    beat.set_session(reg.session());
    v1::HeartbeatResponse answer;
    ASSERT_TRUE(agents->Heartbeat(&ctx, beat, &answer).ok());
    ASSERT_EQ(answer.desired().run_size(), 1);
    EXPECT_EQ(answer.desired().run(0).task().job_id(), submitted.job_id());
  }
  watch_ctx.TryCancel();
  read.join();
  server_->Shutdown();
}

// The number of threads of this process (the master runs in it).
int Threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// 2,000 agents used to hold 2,000 of the master's threads, one per
// WatchDesiredState stream, each waking 5 times a second. Now 48 open
// streams add no thread of the master's (a few of gRPC's own at most),
// each still gets its node's wake-up, an ended session ends its stream
// with NOT_FOUND, and a shutdown ends the others with UNAVAILABLE.
TEST_F(MasterServerTest, WatchingAgentsHoldNoThreadEach) {
  constexpr int kAgents = 48;
  options_.node_timeout = Seconds{3600};
  ASSERT_NO_FATAL_FAILURE(StartOnLoopback());
  auto agents = v1::AgentRegistry::NewStub(channel_);
  std::vector<v1::RegisterResponse> regs(kAgents);
  for (int i = 0; i < kAgents; ++i) {
    grpc::ClientContext ctx;
    ASSERT_TRUE(
        agents
            ->Register(&ctx, RegisterRequest(absl::StrCat("n", i), 1), &regs[i])
            .ok());
  }
  const int before = Threads();
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::DesiredState>>> readers;
  for (int i = 0; i < kAgents; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() +
                                  std::chrono::seconds(30));
    v1::WatchDesiredStateRequest watch;
    watch.set_node_id(regs[i].node_id());
    watch.set_session(regs[i].session());
    watch.set_after_version(regs[i].desired().version());
    readers.push_back(agents->WatchDesiredState(contexts.back().get(), watch));
  }
  // Every stream is open on the master before the count.
  for (int tries = 0; tries < 100 && server_->open_watches() < kAgents;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server_->open_watches(), kAgents);
  EXPECT_LT(Threads() - before, 8) << "threads before the streams: " << before;
  // One 1-GPU job per node: each node's desired state changes.
  auto clients = v1::Tiresias::NewStub(channel_);
  for (int i = 0; i < kAgents; ++i) {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("train");
    v1::SubmitJobResponse submitted;
    ASSERT_TRUE(clients->SubmitJob(&ctx, req, &submitted).ok());
  }
  for (int i = 0; i < kAgents; ++i) {
    v1::DesiredState pushed;
    ASSERT_TRUE(readers[i]->Read(&pushed)) << "node " << i;
    EXPECT_EQ(pushed.session(), regs[i].session());
    EXPECT_GT(pushed.version(), regs[i].desired().version());
  }
  // Node 0 registers again: its old session's stream ends, NOT_FOUND.
  {
    grpc::ClientContext ctx;
    v1::RegisterResponse again;
    ASSERT_TRUE(agents->Register(&ctx, RegisterRequest("n0", 1), &again).ok());
  }
  v1::DesiredState more;
  while (readers[0]->Read(&more)) {
  }
  EXPECT_EQ(readers[0]->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  server_->Shutdown();
  for (int i = 1; i < kAgents; ++i) {
    while (readers[i]->Read(&more)) {
    }
    EXPECT_EQ(readers[i]->Finish().error_code(), grpc::StatusCode::UNAVAILABLE)
        << "node " << i;
  }
}

// As the agents' streams, the clients' WatchEvents streams hold no master
// thread each while they wait (before, each held one of gRPC's synchronous
// server threads: any user could hold the master's threads by watching).
// Each still gets the events it asked for, and a shutdown ends them.
TEST_F(MasterServerTest, WatchingClientsHoldNoThreadEach) {
  constexpr int kClients = 48;
  ASSERT_NO_FATAL_FAILURE(StartOnLoopback());
  auto clients = v1::Tiresias::NewStub(channel_);
  auto submit = [&] {
    grpc::ClientContext ctx;
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("train");
    v1::SubmitJobResponse submitted;
    EXPECT_TRUE(clients->SubmitJob(&ctx, req, &submitted).ok());
    return submitted.job_id();
  };
  const int64_t first = submit();
  const int before = Threads();
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::JobEvent>>> readers;
  for (int i = 0; i < kClients; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() +
                                  std::chrono::seconds(30));
    v1::WatchEventsRequest watch;  // even: every job, live; odd: the first
    if (i % 2 == 1) {
      watch.set_job_id(first);
      watch.set_after_sequence(0);
    }
    readers.push_back(clients->WatchEvents(contexts.back().get(), watch));
  }
  for (int tries = 0; tries < 100 && server_->open_event_watches() < kClients;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server_->open_event_watches(), kClients);
  EXPECT_LT(Threads() - before, 8) << "threads before the streams: " << before;
  const int64_t second = submit();
  for (int i = 0; i < kClients; ++i) {
    v1::JobEvent event;
    ASSERT_TRUE(readers[i]->Read(&event)) << "client " << i;
    EXPECT_EQ(event.kind(), "submitted");
    EXPECT_EQ(event.job_id(), i % 2 == 1 ? first : second) << "client " << i;
  }
  server_->Shutdown();
  for (int i = 0; i < kClients; ++i) {
    v1::JobEvent more;
    while (readers[i]->Read(&more)) {
      EXPECT_EQ(more.job_id(), i % 2 == 1 ? first : second);
    }
    EXPECT_EQ(readers[i]->Finish().error_code(), grpc::StatusCode::UNAVAILABLE)
        << "client " << i;
  }
}

// Catching up past a page (EventWatches::kPage events read at once): every
// event once, in order, for a watcher of every job and for one of the last
// job (whose events come after two pages of others'); a client that goes
// ends its stream on the master.
TEST_F(MasterServerTest, WatchersCatchUpPastAPageWithAndWithoutAFilter) {
  constexpr int kJobs = 2 * EventWatches::kPage + 100;
  ASSERT_NO_FATAL_FAILURE(StartOnLoopback());
  auto clients = v1::Tiresias::NewStub(channel_);
  v1::SubmitJobsRequest batch;
  for (int i = 0; i < kJobs; ++i) {
    v1::JobSpec* spec = batch.add_jobs();
    spec->set_gpus(1);
    spec->add_command("train");
  }
  v1::SubmitJobsResponse submitted;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(clients->SubmitJobs(&ctx, batch, &submitted).ok());
  }
  ASSERT_EQ(submitted.job_ids_size(), kJobs);
  const int64_t last = submitted.job_ids(kJobs - 1);
  auto open = [&](grpc::ClientContext* ctx, int64_t job) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(30));
    v1::WatchEventsRequest watch;
    watch.set_job_id(job);
    watch.set_after_sequence(0);
    return clients->WatchEvents(ctx, watch);
  };
  grpc::ClientContext all_ctx, last_ctx;
  auto all = open(&all_ctx, 0);
  auto just_last = open(&last_ctx, last);
  v1::JobEvent event;
  int64_t sequence = 0;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(all->Read(&event)) << "event " << i;
    EXPECT_EQ(event.kind(), "submitted");
    EXPECT_EQ(event.job_id(), submitted.job_ids(i));
    EXPECT_GT(event.sequence(), sequence);
    sequence = event.sequence();
  }
  ASSERT_TRUE(just_last->Read(&event));
  EXPECT_EQ(event.job_id(), last);
  EXPECT_EQ(event.kind(), "submitted");
  {
    grpc::ClientContext ctx;
    v1::CancelJobRequest cancel;
    cancel.set_job_id(last);
    v1::CancelJobResponse cancelled;
    ASSERT_TRUE(clients->CancelJob(&ctx, cancel, &cancelled).ok());
  }
  ASSERT_TRUE(just_last->Read(&event));
  EXPECT_EQ(event.job_id(), last);
  EXPECT_EQ(event.kind(), "cancelled");
  ASSERT_TRUE(all->Read(&event));
  EXPECT_EQ(event.job_id(), last);
  EXPECT_EQ(event.kind(), "cancelled");
  EXPECT_EQ(server_->open_event_watches(), 2);
  last_ctx.TryCancel();
  EXPECT_EQ(just_last->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int tries = 0; tries < 100 && server_->open_event_watches() > 1;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(server_->open_event_watches(), 1);
  server_->Shutdown();
  while (all->Read(&event)) {
  }
  EXPECT_EQ(all->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Two masters on one port: gRPC's SO_REUSEPORT let both listen and clients
// reached either at random. The second is refused now.
TEST_F(MasterServerTest, SecondMasterOnTheSamePortIsRefused) {
  master::RealClock clock;
  auto state = MasterState::Open(options_, &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  auto first = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  MasterOptions other = options_;
  other.state_dir = dir_.File("other-state");
  auto other_state = MasterState::Open(other, &clock);
  ASSERT_TRUE(other_state.ok()) << other_state.status();
  auto second = MasterServer::Start(
      other_state->get(), &clock,
      absl::StrCat("127.0.0.1:", (*first)->port()));
  ASSERT_FALSE(second.ok()) << "two masters listen on one port";
  EXPECT_NE(second.status().message().find("cannot listen"),
            std::string::npos)
      << second.status();
  (*first)->Shutdown();
}

}  // namespace
}  // namespace tiresias::master_testing
