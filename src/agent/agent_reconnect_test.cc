// An agent finds a master that comes back quickly, however long it was
// gone: the agent's channel reconnects at least every second (gRPC's
// default backoff grows to 120 s, so an agent of a master away for 30 s
// came back 15-19 s after it), and its own retries wait at most two
// seconds. A real master (MasterServer over loopback, real SQLite state)
// stopped and served again on the same port; a real task keeps running
// through it.
#include <chrono>
#include <string>
#include <thread>

#include "agent/agent_daemon_fixture.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::AgentDaemonTest;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The master's last heartbeat from the one node, master's clock.
double LastHeartbeat(MasterState& state) {
  auto nodes = state.ListNodes();
  return nodes.ok() && nodes->size() == 1 ? (*nodes)[0].last_heartbeat_time()
                                          : 0;
}

TEST_F(AgentDaemonTest, AnAgentIsBackWithinTwoSecondsOfTheMaster) {
  StartMaster();
  AgentDaemon* agent = StartAgent();
  const JobId id = Submit(1, "sleep 60");
  ASSERT_TRUE(WaitState(id, JobRecordState::kRunning));
  const int port = server_->port();
  const pid_t pid = RecordedPid(id);

  // Gone for 12 s: long enough for gRPC's default backoff to wait 6-10 s
  // between attempts by then.
  server_->Shutdown();
  server_.reset();
  std::this_thread::sleep_for(seconds(12));
  ASSERT_GT(CountLog("heartbeat to"), 0);  // it did notice

  const auto back = std::chrono::steady_clock::now();
  const double served_at = clock_.NowUnixSeconds().count();
  ServeOn("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(WaitUntil([&] { return LastHeartbeat(*state_) > served_at; },
                        seconds(20)));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - back)
          .count();
  EXPECT_LT(took, 2.5) << "the agent's first heartbeat came " << took
                       << " s after the master was back";
  // The task ran through it, once.
  EXPECT_EQ(RecordedPid(id), pid);
  EXPECT_FALSE(Exited(pid));
  EXPECT_EQ(Job(id).state, JobRecordState::kRunning);
  EXPECT_EQ(agent->task_count(), 1);
}

}  // namespace
}  // namespace tiresias
