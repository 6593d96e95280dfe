// Deltas, not snapshots (issue 22): heartbeat answers against the version
// the agent holds. MasterState with a fake clock and real SQLite.
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

class DesiredDeltaTest : public MasterFixture {
 protected:
  // After job 1: jobs 2..625 held (they take ids, never GPUs), then a
  // 1-GPU job, whose default port is job 1's. Its id.
  JobId SubmitJob626() {
    JobRequest held = Spec(1);
    held.hold = true;
    EXPECT_TRUE(
        master_->SubmitJobs(std::vector<JobRequest>(624, held), "").ok());
    return Submit(Spec(1));
  }
};

// Heartbeat answers carry only what changed since the version the agent
// names (HeartbeatRequest.desired_version), when that is the version it was
// last answered with; otherwise (none named, or a gap) the whole state.
TEST_F(DesiredDeltaTest, HeartbeatAnswersAreDeltasAgainstTheVersionHeld) {
  Open();
  v1::RegisterResponse reg;
  const int64_t node = Register("n1", 2, {}, &reg);
  EXPECT_FALSE(reg.desired().delta());
  const JobId a = Submit(Spec(1));
  Pass();
  // Named nothing: whole.
  v1::HeartbeatResponse whole = Beat(node);
  ASSERT_EQ(whole.desired().run_size(), 1);
  EXPECT_FALSE(whole.desired().delta());
  const uint64_t va = whole.desired().version();
  auto beat_holding = [&](uint64_t held,
                          std::vector<v1::TaskStatus> tasks) {
    v1::HeartbeatRequest req = BeatRequest(node, tasks);
    req.set_desired_version(held);
    auto resp = master_->Heartbeat(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->desired() : v1::DesiredState();
  };
  const v1::TaskStatus a_runs = Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {},
                                     1000.0);
  // Nothing changed since va: an empty delta (no command, no env again).
  v1::DesiredState same = beat_holding(va, {a_runs});
  EXPECT_TRUE(same.delta());
  EXPECT_EQ(same.base_version(), va);
  EXPECT_EQ(same.version(), va);
  EXPECT_EQ(same.run_size(), 0);
  EXPECT_EQ(same.removed_size(), 0);
  EXPECT_LT(same.ByteSizeLong(), whole.desired().ByteSizeLong());
  // A second job placed there: only it is sent.
  const JobId b = Submit(Spec(1));
  Pass();
  v1::DesiredState added = beat_holding(va, {a_runs});
  EXPECT_TRUE(added.delta());
  EXPECT_GT(added.version(), va);
  ASSERT_EQ(added.run_size(), 1);
  EXPECT_EQ(added.run(0).task().job_id(), b);
  EXPECT_FALSE(added.run(0).command().empty());
  // Job a ends: it is removed, b is not sent again.
  v1::TaskStatus a_done = a_runs;
  a_done.set_state(TASK_STATE_EXITED);
  a_done.set_exit_code(0);
  a_done.set_end_time(1001.0);
  const v1::TaskStatus b_runs = Task(b, 1, 0, TASK_STATE_RUNNING, {1}, {},
                                     1000.5);
  v1::DesiredState ended = beat_holding(added.version(), {a_done, b_runs});
  EXPECT_TRUE(ended.delta());
  EXPECT_EQ(ended.run_size(), 0);
  ASSERT_EQ(ended.removed_size(), 1);
  EXPECT_EQ(ended.removed(0).job_id(), a);
  EXPECT_EQ(Get(a).state, JobRecordState::kFinished);
  // An agent that lost that answer still names the version before it: a
  // gap, so the whole state (only b).
  v1::DesiredState gap = beat_holding(added.version(), {b_runs});
  EXPECT_FALSE(gap.delta());
  ASSERT_EQ(gap.run_size(), 1);
  EXPECT_EQ(gap.run(0).task().job_id(), b);
}

// Job 1 and job 626 have one default MASTER_PORT (29500 + 16 x id +
// attempt mod 10000 = 29517). Running at once on one node, the second is
// given the next free port, not one its node's other job listens on.
TEST_F(DesiredDeltaTest, JobsWhoseDefaultPortsMeetListenOnDifferentPorts) {
  Open();
  const int64_t node = Register("n1", 4);
  const JobId first = Submit(Spec(1));
  Pass();
  const JobId second = SubmitJob626();
  ASSERT_EQ(first, 1);
  ASSERT_EQ(second, 626);
  Pass();
  std::map<JobId, int> port;
  for (const v1::StartTask& start : Starts(Beat(node))) {
    port[start.task().job_id()] = start.master_port();
    ASSERT_EQ(start.worker_addresses_size(), 1);
    EXPECT_EQ(start.worker_addresses(0),
              absl::StrCat("n1.local:", start.master_port()));
  }
  ASSERT_EQ(port.size(), 2u);
  EXPECT_EQ(port[first], 29517);
  EXPECT_EQ(port[second], 29518);
}

// After a restart, a launch re-adopted from its node's report is taken to
// hold its default ports: job 626, started beside the re-adopted job 1,
// still moves past 29517.
TEST_F(DesiredDeltaTest, AReadoptedLaunchKeepsItsPortsFromANewOne) {
  Open();
  int64_t node = Register("n1", 4);
  const JobId first = Submit(Spec(1));
  Pass();
  const v1::TaskStatus runs =
      Task(first, 1, 0, TASK_STATE_RUNNING,
           {Starts(Beat(node))[0].gpu_indexes(0)}, {}, 1000.0);
  Beat(node, {runs});
  master_.reset();
  Open();
  node = Register("n1", 4, {runs});
  Pass();
  const JobId second = SubmitJob626();
  ASSERT_EQ(second, 626);
  Pass();
  std::map<JobId, int> port;
  for (const v1::StartTask& start : Starts(Beat(node, {runs}))) {
    port[start.task().job_id()] = start.master_port();
  }
  ASSERT_EQ(port.count(second), 1u);
  EXPECT_EQ(port[second], 29518);
}

}  // namespace
}  // namespace tiresias::master_testing
