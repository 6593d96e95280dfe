// MasterState: a node that comes up joins the cluster in place
// (JoinCluster): running jobs are left alone, the new node takes jobs, a
// node lost and back joins again, and after a restart a job spread over
// several nodes is adopted whatever order its nodes come back in, winning
// its GPUs over a launch decided meanwhile; agents heartbeat less often as
// the cluster grows.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

int CountEvents(const JobRecord& rec, const std::string& kind) {
  return static_cast<int>(
      std::count_if(rec.events.begin(), rec.events.end(),
                    [&](const JobEvent& e) { return e.kind == kind; }));
}

class NodeJoinTest : public MasterFixture {
 protected:
  void SetUp() override { options_.policy = "fifo"; }

  // What a pass started of `job`: node id -> its tasks (from each node's
  // beat, reporting `reports` of it: a task it leaves out has ended).
  std::map<int64_t, std::vector<v1::StartTask>> StartsOn(
      const std::vector<int64_t>& nodes, JobId job,
      std::map<int64_t, std::vector<v1::TaskStatus>> reports = {}) {
    std::map<int64_t, std::vector<v1::StartTask>> out;
    for (int64_t node : nodes) {
      for (const v1::StartTask& s : Starts(Beat(node, reports[node]))) {
        if (s.task().job_id() == job) out[node].push_back(s);
      }
    }
    return out;
  }
  static v1::TaskStatus Running(const v1::StartTask& s) {
    return Task(
        s.task().job_id(), s.task().attempt(), s.task().rank(),
        TASK_STATE_RUNNING,
        std::vector<int>(s.gpu_indexes().begin(), s.gpu_indexes().end()), {},
        1000.0);
  }
};

TEST_F(NodeJoinTest, AJoiningNodeLeavesRunningJobsAlone) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId first = Submit(Spec(2));
  const JobId second = Submit(Spec(2));
  Pass();
  auto started = StartsOn({n1}, first);
  ASSERT_EQ(started[n1].size(), 1u);
  const v1::TaskStatus running = Running(started[n1][0]);
  Beat(n1, {running});
  ASSERT_EQ(Get(first).state, JobRecordState::kRunning);
  clock_.Advance(Seconds{10});

  const int64_t n2 = Register("n2", 2);
  JobRecord rec = Get(first);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(CountEvents(rec, "preempted"), 0);
  v1::HeartbeatResponse beat = Beat(n1, {running});
  ASSERT_EQ(Starts(beat).size(), 1u);
  EXPECT_EQ(Starts(beat)[0].task().job_id(), first);
  EXPECT_TRUE(Stops(beat).empty()) << beat.DebugString();
  // The second job goes to the new node, its GPUs numbered there.
  Pass();
  auto second_started = StartsOn({n1, n2}, second);
  ASSERT_EQ(second_started.size(), 1u);
  ASSERT_EQ(second_started[n2].size(), 1u);
  EXPECT_EQ(second_started[n2][0].gpu_indexes_size(), 2);
  EXPECT_NEAR(Get(first).executed.count(), 10, 1e-6);
}

TEST_F(NodeJoinTest, ANodeLostAndBackTakesJobsAgain) {
  options_.node_timeout = Seconds{30};
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId wide = Submit(Spec(4));
  clock_.Advance(Seconds{31});
  Beat(n2);
  ASSERT_TRUE(master_->CheckTimeouts().ok());  // n1 is down
  Pass();
  EXPECT_EQ(Get(wide).state, JobRecordState::kPending);
  // Back: its server now comes after n2's, and a job needs both.
  ASSERT_EQ(Register("n1", 2), n1);
  Pass();
  auto started = StartsOn({n1, n2}, wide);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[n1].size(), 1u);
  EXPECT_EQ(started[n2].size(), 1u);
}

// A 4-GPU job on two of three 2-GPU nodes: after a restart the third
// node comes back first (the cluster is built), then the job's nodes, last
// first (each joins in place): the job is adopted once both are back, and
// the third node takes the next job.
TEST_F(NodeJoinTest, RestartAdoptsASpreadJobWhateverOrderItsNodesReturn) {
  Open();
  const std::vector<int64_t> nodes = {Register("n1", 2), Register("n2", 2),
                                      Register("n3", 2)};
  const JobId wide = Submit(Spec(4));
  Pass();
  auto started = StartsOn(nodes, wide);
  ASSERT_EQ(started.size(), 2u);
  std::map<int64_t, v1::TaskStatus> tasks;
  for (const auto& [node, starts] : started) {
    ASSERT_EQ(starts.size(), 1u);
    tasks[node] = Running(starts[0]);
    Beat(node, {tasks[node]});
  }
  ASSERT_EQ(Get(wide).state, JobRecordState::kRunning);
  master_.reset();  // no clean shutdown
  clock_.Advance(Seconds{5});
  Open();
  std::vector<int> order;  // indexes into nodes
  for (int i = 2; i >= 0; --i) {
    if (!tasks.contains(nodes[i])) order.insert(order.begin(), i);
    if (tasks.contains(nodes[i])) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    std::vector<v1::TaskStatus> reported;
    if (tasks.contains(nodes[i])) reported.push_back(tasks[nodes[i]]);
    ASSERT_EQ(Register("n" + std::to_string(i + 1), 2, reported), nodes[i]);
    // Adopted with its last node, not before.
    EXPECT_EQ(CountEvents(Get(wide), "adopted"), k + 1 == order.size() ? 1 : 0)
        << "after node " << i + 1;
  }
  JobRecord rec = Get(wide);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_EQ(CountEvents(rec, "adopted"), 1);
  EXPECT_EQ(CountEvents(rec, "preempted"), 0);
  const JobId next = Submit(Spec(2));
  Pass();
  int64_t free_node = 0;
  for (int64_t node : nodes) {
    if (!tasks.contains(node)) free_node = node;
  }
  std::map<int64_t, std::vector<v1::TaskStatus>> reports;
  for (const auto& [node, task] : tasks) reports[node] = {task};
  auto next_started = StartsOn(nodes, next, reports);
  ASSERT_EQ(next_started.size(), 1u);
  EXPECT_EQ(next_started.begin()->first, free_node);
  for (const auto& [node, task] : tasks) {
    v1::HeartbeatResponse beat = Beat(node, {task});
    EXPECT_TRUE(Stops(beat).empty()) << beat.DebugString();
  }
}

// After a restart, one node of a spread job is back and a pass puts a
// waiting job on its GPUs (on paper: they are busy, so the launch waits).
// When the job's other node returns, the job is adopted and the launch
// decided meanwhile gives way.
TEST_F(NodeJoinTest, AnAdoptionWinsOverALaunchDecidedMeanwhile) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const int64_t n2 = Register("n2", 2);
  const JobId wide = Submit(Spec(4));
  Pass();
  auto started = StartsOn({n1, n2}, wide);
  ASSERT_EQ(started.size(), 2u);
  const v1::TaskStatus on1 = Running(started[n1][0]);
  const v1::TaskStatus on2 = Running(started[n2][0]);
  Beat(n1, {on1});
  Beat(n2, {on2});
  const JobId waiting = Submit(Spec(2));
  master_.reset();
  clock_.Advance(Seconds{5});
  Open();
  ASSERT_EQ(Register("n1", 2, {on1}), n1);
  Pass();
  EXPECT_TRUE(StartsOn({n1}, waiting, {{n1, {on1}}}).empty());  // busy GPUs
  // Decided on n1's GPUs, waiting for them: the conflict to come.
  ASSERT_EQ(Get(waiting).state, JobRecordState::kStarting);
  ASSERT_EQ(Register("n2", 2, {on2}), n2);
  JobRecord rec = Get(wide);
  EXPECT_EQ(rec.state, JobRecordState::kRunning);
  EXPECT_EQ(CountEvents(rec, "adopted"), 1);
  EXPECT_EQ(CountEvents(rec, "preempted"), 0);
  EXPECT_EQ(Get(waiting).state, JobRecordState::kPending);
  Pass();
  EXPECT_TRUE(StartsOn({n1, n2}, waiting, {{n1, {on1}}, {n2, {on2}}}).empty());
  // The spread job ends: the waiting one gets GPUs.
  clock_.Advance(Seconds{5});
  auto ended = [](v1::TaskStatus t) {
    t.set_state(TASK_STATE_EXITED);
    t.set_exit_code(0);
    return t;
  };
  Beat(n1, {ended(on1)});
  Beat(n2, {ended(on2)});
  ASSERT_EQ(Get(wide).state, JobRecordState::kFinished);
  Pass();
  EXPECT_EQ(StartsOn({n1, n2}, waiting).size(), 1u);
}

// Agents heartbeat less often as the cluster grows past
// max_heartbeat_rate x the interval, the ones registered first too (their
// heartbeats' answers say so), never above node_timeout / 5 nor a third of
// the node's lease; with no rate, always the base interval.
TEST_F(NodeJoinTest, HeartbeatIntervalGrowsWithTheCluster) {
  options_.heartbeat_interval = Seconds{2};
  options_.node_timeout = Seconds{60};
  options_.max_heartbeat_rate = 1;  // one heartbeat a second in all
  Open();
  v1::RegisterResponse first;
  const int64_t n1 = Register("n1", 1, {}, &first);
  EXPECT_DOUBLE_EQ(first.heartbeat_interval_seconds(), 2);  // 1 node: base
  EXPECT_DOUBLE_EQ(Beat(n1).heartbeat_interval_seconds(), 2);
  for (int i = 2; i <= 4; ++i) Register("n" + std::to_string(i), 1);
  // 4 nodes at one a second: every 4 s, told to the first node too.
  EXPECT_DOUBLE_EQ(Beat(n1).heartbeat_interval_seconds(), 4);
  for (int i = 5; i <= 20; ++i) Register("n" + std::to_string(i), 1);
  // 20 s: node timeout / 5 (a third of the 58 s lease would be 19.3 s).
  EXPECT_DOUBLE_EQ(Beat(n1).heartbeat_interval_seconds(), 12);
  // A node with a long grace has a short lease (60 - 48 - 1 = 11 s): a
  // third of it.
  v1::RegisterRequest late = RegisterRequest("late", 1);
  late.set_grace_seconds(48);
  auto resp = master_->Register(late);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_DOUBLE_EQ(resp->lease_seconds(), 11);
  EXPECT_DOUBLE_EQ(resp->heartbeat_interval_seconds(), 11.0 / 3);
  // The shortest lease Register takes, 3 base intervals: the base.
  late.set_grace_seconds(53);
  late.set_report_seq(NextSeq());
  resp = master_->Register(late);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_DOUBLE_EQ(resp->lease_seconds(), 6);
  EXPECT_DOUBLE_EQ(resp->heartbeat_interval_seconds(), 2);

  // No rate: the base interval whatever the size.
  options_.max_heartbeat_rate = 0;
  master_.reset();
  Open();
  EXPECT_EQ(Register("n1", 1, {}, &first), n1);
  EXPECT_DOUBLE_EQ(first.heartbeat_interval_seconds(), 2);
  EXPECT_DOUBLE_EQ(Beat(n1).heartbeat_interval_seconds(), 2);
}

}  // namespace
}  // namespace tiresias::master_testing
