// What the master does with a job's traffic profile, with a fake clock and
// real SQLite: it asks for one while it has none, keeps a valid one (with
// the job and by signature), refuses a malformed one, asks no more once it
// has one and its placements are measured, a restarted master places the
// job by it again; and PACKLIMIT is learnt from the runs measured.
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

v1::TaskStatus WithProfile(v1::TaskStatus task, double skew,
                           double iteration_s = 0.25) {
  v1::TrafficProfile* p = task.mutable_profile();
  p->set_periodic(true);
  p->set_tensor_skew(skew);
  p->set_iteration_s(iteration_s);
  p->set_bytes_per_iteration(1e6);
  p->set_messages_per_iteration(10);
  return task;
}

class MasterProfileTest : public MasterFixture {};

TEST_F(MasterProfileTest, KeepsAValidProfileAndPlacesByItAfterARestart) {
  Open();
  const int64_t node = Register("n1", 4);
  const JobId id = Submit(Spec(2, {"python3", "ps_train.py"}));
  Pass();
  auto starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_TRUE(starts[0].profile()) << "a first launch is profiled";
  std::vector<int> gpus(starts[0].gpu_indexes().begin(),
                        starts[0].gpu_indexes().end());
  Beat(node, {Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0)});
  EXPECT_EQ(master_->PlacementSkewOf(id), std::nullopt);

  // Malformed figures from an agent are not kept.
  for (double bad : {1.5, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    Beat(node, {WithProfile(
                   Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0), bad)});
    EXPECT_EQ(master_->PlacementSkewOf(id), std::nullopt) << bad;
    EXPECT_FALSE(Get(id).profile.has_value()) << bad;
  }
  // A valid one (a running task's, read after its recording stopped).
  Beat(node, {WithProfile(
                 Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0), 0.3)});
  EXPECT_EQ(master_->PlacementSkewOf(id), 0.3);
  ASSERT_TRUE(Get(id).profile.has_value());
  EXPECT_EQ(Get(id).profile->tensor_skew, 0.3);
  EXPECT_EQ(Get(id).profile->measured_job_id, id);
  // Reported again in every heartbeat: one event.
  Beat(node, {WithProfile(
                 Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0), 0.3)});
  int events = 0;
  for (const JobEvent& e : Get(id).events) events += e.kind == "profiled";
  EXPECT_EQ(events, 1);

  // A restarted master places the job by its stored skew once it adopts
  // it again (a running job is not in the scheduler until its node is
  // back).
  master_.reset();
  Open();
  Register("n1", 4, {Task(id, 1, 0, TASK_STATE_RUNNING, gpus, {}, 1001.0)});
  Pass();
  EXPECT_EQ(Get(id).state, JobRecordState::kRunning);
  EXPECT_EQ(master_->PlacementSkewOf(id), 0.3);
  EXPECT_EQ(Get(id).profile->tensor_skew, 0.3);
}

// Once its skew is known and its placement measured
// profiled_runs_per_placement times (here once), a job runs unprofiled.
TEST_F(MasterProfileTest, AJobWithAProfileIsNotProfiledAgain) {
  options_.profiled_runs_per_placement = 1;
  Open();
  const int64_t node = Register("n1", 4);
  const JobId first = Submit(Spec(1, {"python3", "ps_train.py"}));
  Pass();
  auto starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_TRUE(starts[0].profile());
  std::vector<int> gpus(starts[0].gpu_indexes().begin(),
                        starts[0].gpu_indexes().end());
  Beat(node, {WithProfile(
                 Task(first, 1, 0, TASK_STATE_EXITED, gpus, 0, 1001.0), 0.7)});
  EXPECT_EQ(Get(first).state, JobRecordState::kFinished);
  EXPECT_EQ(Get(first).profile->tensor_skew, 0.7);

  const JobId again = Submit(Spec(1, {"python3", "ps_train.py"}));
  EXPECT_EQ(master_->PlacementSkewOf(again), 0.7);
  EXPECT_EQ(Get(again).profile->measured_job_id, first);
  Pass();
  starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), again);
  EXPECT_FALSE(starts[0].profile())
      << "its skew is known and its placement measured";
}

// PACKLIMIT learnt. Nodes: n1 with 2 GPUs, n2 and n3 with 1 each. Two
// 2-GPU jobs under `profiled` placement (start PACKLIMIT 0.5), both below
// it so packed: "a" (skew 0.45) runs 1 s an iteration on n1 and 2 s spread
// over n2 and n3 (n1 held by a blocker), costly; "b" (skew 0.05) 1 s both
// ways. Four samples, two costly: the fit's boundary is their midpoint,
// 0.25, once pack_limit_refresh has passed.
class PackLimitLearningTest : public MasterProfileTest {
 protected:
  void SetUp() override {
    options_.placement = "profiled";
    options_.pack_limit_refresh = Seconds{10};
    options_.pack_limit_learning.min_samples = 4;
  }
  JobRequest A() { return Spec(2, {"a"}); }
  JobRequest B() { return Spec(2, {"b"}); }
  // Runs `spec` to its end; reports `skew` and `iteration_s` from rank 0.
  // Returns the nodes it ran on.
  std::set<int64_t> RunToEnd(const JobRequest& spec, double skew,
                             double iteration_s) {
    const JobId id = Submit(spec);
    Pass();
    std::map<int64_t, v1::StartTask> started;
    for (int64_t node : {n1_, n2_, n3_}) {
      for (const v1::StartTask& s : Starts(Beat(node))) {
        if (s.task().job_id() == id) started[node] = s;
      }
    }
    EXPECT_FALSE(started.empty()) << "job " << id << " did not start";
    for (auto& [node, s] : started) {
      EXPECT_TRUE(s.profile()) << "a launch to measure";
      std::vector<int> gpus(s.gpu_indexes().begin(), s.gpu_indexes().end());
      v1::TaskStatus end = Task(id, s.task().attempt(), s.task().rank(),
                                v1::TASK_STATE_EXITED, gpus, 0, 1001.0);
      if (s.task().rank() == 0) end = WithProfile(end, skew, iteration_s);
      Beat(node, {end});
    }
    EXPECT_EQ(Get(id).state, JobRecordState::kFinished);
    std::set<int64_t> nodes;
    for (const auto& [node, s] : started) nodes.insert(node);
    return nodes;
  }
  // Four runs, both jobs both ways; `blocker` holds n1 at the end.
  void MeasureBothWays(JobId* blocker) {
    Open();
    n1_ = Register("n1", 2);
    n2_ = Register("n2", 1);
    n3_ = Register("n3", 1);
    EXPECT_EQ(RunToEnd(A(), 0.45, 1.0), std::set<int64_t>{n1_});
    EXPECT_EQ(RunToEnd(B(), 0.05, 1.0), std::set<int64_t>{n1_});
    *blocker = Submit(Spec(2, {"blocker"}));
    Pass();
    auto starts = Starts(Beat(n1_));
    ASSERT_EQ(starts.size(), 1u);
    std::vector<int> gpus(starts[0].gpu_indexes().begin(),
                          starts[0].gpu_indexes().end());
    Beat(n1_, {Task(*blocker, 1, 0, v1::TASK_STATE_RUNNING, gpus, {}, 1001.0)});
    EXPECT_EQ(RunToEnd(A(), 0.45, 2.0), (std::set<int64_t>{n2_, n3_}));
    EXPECT_EQ(RunToEnd(B(), 0.05, 1.0), (std::set<int64_t>{n2_, n3_}));
  }
  MasterState::Metrics Metrics() {
    auto m = master_->SnapshotMetrics();
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : MasterState::Metrics();
  }
  int64_t n1_ = 0, n2_ = 0, n3_ = 0;
};

TEST_F(PackLimitLearningTest, LearntFromRunsMeasuredBothWaysAndPlacesByIt) {
  JobId blocker = 0;
  MeasureBothWays(&blocker);
  MasterState::Metrics m = Metrics();
  EXPECT_EQ(m.pack_limit_runs, 4);
  EXPECT_EQ(m.pack_limit, 0.5) << "not refitted before the refresh is due";
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  EXPECT_EQ(Metrics().pack_limit, 0.5);

  clock_.Advance(Seconds{11});
  Beat(n1_);  // the nodes stay up
  Beat(n2_);
  Beat(n3_);
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  m = Metrics();
  EXPECT_TRUE(m.pack_limit_learning);
  EXPECT_EQ(m.placement, "profiled");
  EXPECT_EQ(m.pack_limit_fit, "fitted");
  EXPECT_EQ(m.pack_limit_samples, 4);
  EXPECT_NEAR(m.pack_limit, 0.25, 1e-6);

  // "a" (0.45) is above PACKLIMIT now: consolidated, so it waits for n1
  // instead of spreading over the free n2 and n3 as it did before.
  const JobId a = Submit(A());
  Pass();
  for (int64_t node : {n2_, n3_}) EXPECT_TRUE(Starts(Beat(node)).empty());
  EXPECT_EQ(Get(a).state, JobRecordState::kPending);
  // "b" (0.05) still spreads.
  const JobId b = Submit(B());
  Pass();
  auto on_n2 = Starts(Beat(n2_));
  ASSERT_EQ(on_n2.size(), 1u);
  EXPECT_EQ(on_n2[0].task().job_id(), b);

  // A restarted master refits on the stored runs at once.
  master_.reset();
  Open();
  m = Metrics();
  EXPECT_EQ(m.pack_limit_runs, 4);
  EXPECT_EQ(m.pack_limit_samples, 4);
  EXPECT_NEAR(m.pack_limit, 0.25, 1e-6);
}

TEST_F(PackLimitLearningTest, AFixedPackLimitIsKeptWhileRunsAreRecorded) {
  options_.learn_pack_limit = false;
  JobId blocker = 0;
  MeasureBothWays(&blocker);
  clock_.Advance(Seconds{11});
  ASSERT_TRUE(master_->CheckTimeouts().ok());
  MasterState::Metrics m = Metrics();
  EXPECT_FALSE(m.pack_limit_learning);
  EXPECT_EQ(m.pack_limit_runs, 4);
  EXPECT_EQ(m.pack_limit_samples, 4);  // fitted, for the record
  EXPECT_EQ(m.pack_limit, 0.5);
  // "a" (0.45 < 0.5) still spreads.
  const JobId a = Submit(A());
  Pass();
  auto on_n2 = Starts(Beat(n2_));
  ASSERT_EQ(on_n2.size(), 1u);
  EXPECT_EQ(on_n2[0].task().job_id(), a);
}

}  // namespace
}  // namespace tiresias::master_testing
