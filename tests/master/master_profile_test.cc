// What the master does with a job's traffic profile, with a fake clock and
// real SQLite: it asks for one while it has none, keeps a valid one (with
// the job and by signature), refuses a malformed one, asks no more once it
// has one, and a restarted master places the job by it again.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

v1::TaskStatus WithProfile(v1::TaskStatus task, double skew) {
  v1::TrafficProfile* p = task.mutable_profile();
  p->set_periodic(true);
  p->set_tensor_skew(skew);
  p->set_iteration_s(0.25);
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

TEST_F(MasterProfileTest, AJobWithAProfileIsNotProfiledAgain) {
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
  EXPECT_FALSE(starts[0].profile()) << "its skew is known";
}

}  // namespace
}  // namespace tiresias::master_testing
