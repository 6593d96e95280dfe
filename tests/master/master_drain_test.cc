// MasterState node drain and pending reasons, with a fake clock and real
// SQLite: a drained node takes no new launch, keeps what runs there (or
// preempts it with `preempt`), keeps its drain across a restart; waiting
// jobs say why they wait.
#include "master/master_state.h"

#include <string>

#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

class MasterDrainTest : public MasterFixture {
 protected:
  void SetUp() override { options_.policy = "fifo"; }

  v1::Node NodeNamed(const std::string& name) {
    auto nodes = master_->ListNodes();
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    for (const v1::Node& n : *nodes) {
      if (n.name() == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return {};
  }

  // Starts `job` (2 GPUs) on node `node`: a pass, then its task reported
  // running. Returns its GPUs there.
  std::vector<int> RunOn(int64_t node, JobId job) {
    Pass();
    auto starts = Starts(Beat(node));
    for (const v1::StartTask& s : starts) {
      if (s.task().job_id() != job) continue;
      std::vector<int> gpus(s.gpu_indexes().begin(), s.gpu_indexes().end());
      Beat(node, {Task(job, s.task().attempt(), 0, TASK_STATE_RUNNING, gpus,
                       {}, clock_.NowUnixSeconds().count())});
      return gpus;
    }
    ADD_FAILURE() << "job " << job << " not started on node " << node;
    return {};
  }
};

// A: 2 GPUs, job 1 runs there. Drained: job 1 keeps running; a new 2-GPU
// job goes to B; a third waits for GPUs (B is full, A drained), a 4-GPU one
// because A is drained.
TEST_F(MasterDrainTest, DrainedNodeKeepsItsJobsAndTakesNoNewOnes) {
  Open();
  const int64_t a = Register("A", 2);
  const JobId j1 = Submit(Spec(2));
  const std::vector<int> gpus = RunOn(a, j1);
  const v1::TaskStatus running = Task(j1, 1, 0, TASK_STATE_RUNNING, gpus);
  const int64_t b = Register("B", 2);
  auto drained = master_->DrainNode("A", "swap fan", false);
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_TRUE(drained->preempted.empty());
  EXPECT_TRUE(drained->node.drained());
  EXPECT_EQ(drained->node.drain_reason(), "swap fan");
  EXPECT_EQ(drained->node.gpus_free(), 0);
  EXPECT_EQ(Get(j1).state, JobRecordState::kRunning);
  EXPECT_TRUE(Stops(Beat(a, {running})).empty());

  const JobId j2 = Submit(Spec(2));
  RunOn(b, j2);
  EXPECT_EQ(Get(j2).nodes, std::vector<std::string>{"B"});
  const JobId j3 = Submit(Spec(2));
  const JobId j4 = Submit(Spec(4));
  Pass();
  EXPECT_EQ(Get(j3).state, JobRecordState::kPending);
  EXPECT_EQ(Get(j3).pending_reason, "needs 2 GPUs, only 0 free");
  EXPECT_EQ(Get(j4).pending_reason,
            "needs 4 GPUs, nodes not drained have 2 (nodes drained)");
  EXPECT_EQ(Get(j4).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kDrained));
  EXPECT_EQ(Get(j1).pending_reason, "");  // running: no reason
  EXPECT_EQ(Get(j1).state, JobRecordState::kRunning);

  // Job 1 ends on A: A's GPUs still go to nobody.
  Beat(a, {Task(j1, 1, 0, v1::TASK_STATE_EXITED, gpus, 0, 1000.0)});
  EXPECT_EQ(Get(j1).state, JobRecordState::kFinished);
  Pass();
  EXPECT_EQ(Get(j3).state, JobRecordState::kPending);
  EXPECT_TRUE(Starts(Beat(a)).empty());
  auto metrics = master_->SnapshotMetrics();
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->nodes_drained, 1);
  EXPECT_EQ(metrics->gpus_drained, 2);
  EXPECT_EQ(metrics->gpus_drained_idle, 2);

  // Resumed: job 3 starts there.
  ASSERT_TRUE(master_->ResumeNode("A").ok());
  RunOn(a, j3);
  EXPECT_EQ(Get(j3).nodes, std::vector<std::string>{"A"});
}

// The drain and its reason are in the store: a restarted master, and the
// node's agent registering again, keep them.
TEST_F(MasterDrainTest, DrainSurvivesRestartAndReregistration) {
  Open();
  Register("A", 2);
  ASSERT_TRUE(master_->DrainNode("A", "rack move", false).ok());
  master_.reset();
  Open();
  EXPECT_TRUE(NodeNamed("A").drained());
  const int64_t a = Register("A", 2);
  EXPECT_TRUE(NodeNamed("A").drained());
  EXPECT_EQ(NodeNamed("A").drain_reason(), "rack move");
  const JobId j = Submit(Spec(1));
  Pass();
  EXPECT_EQ(Get(j).pending_reason, "needs 1 GPU; every up node is drained");
  // Resumed with nothing else happening: the next pass starts the job.
  ASSERT_TRUE(master_->ResumeNode("A").ok());
  Pass();
  auto starts = Starts(Beat(a));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), j);
  master_.reset();
  Open();
  EXPECT_FALSE(NodeNamed("A").drained());
  EXPECT_EQ(NodeNamed("A").drain_reason(), "");
}

// With preemption: job 1 on A is stopped as a preemption (PREEMPT), and
// once its task has ended it resumes on B.
TEST_F(MasterDrainTest, DrainWithPreemptMovesTheJob) {
  Open();
  const int64_t a = Register("A", 2);
  const JobId j1 = Submit(Spec(2));
  const std::vector<int> gpus = RunOn(a, j1);
  const int64_t b = Register("B", 2);
  clock_.Advance(Seconds{5});
  auto drained = master_->DrainNode("A", "reboot", true);
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->preempted, std::vector<JobId>{j1});
  auto stops = Stops(Beat(a, {Task(j1, 1, 0, TASK_STATE_RUNNING, gpus)}));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].reason(), v1::STOP_REASON_PREEMPT);
  JobRecord rec = Get(j1);
  EXPECT_EQ(rec.preemptions, 1);
  // Its new launch waits for the old one's tasks to stop.
  Pass();
  EXPECT_TRUE(Starts(Beat(b)).empty());
  rec = Get(j1);
  EXPECT_EQ(rec.state, JobRecordState::kStarting);
  EXPECT_EQ(rec.pending_reason,
            "waiting for its previous launch's tasks to stop");
  EXPECT_EQ(rec.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kCheckpointing));
  v1::TaskStatus ended = Task(j1, 1, 0, TASK_STATE_PREEMPTED, gpus, 0);
  Beat(a, {ended});
  Pass();
  auto starts = Starts(Beat(b));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), j1);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  EXPECT_EQ(starts[0].restart_count(), 1);
  EXPECT_TRUE(Starts(Beat(a)).empty());
}

TEST_F(MasterDrainTest, BadRequestsGetClearErrors) {
  Open();
  Register("A", 2);
  auto unknown = master_->DrainNode("nosuch", "x", false);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(),
            "node nosuch: no such node (tiresias nodes lists them)");
  EXPECT_EQ(master_->DrainNode("A", "", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(master_->DrainNode("A", std::string(300, 'x'), false)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(master_->DrainNode("A", "bad\xff", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(master_->DrainNode("A", "two\nlines", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(master_->ResumeNode("nosuch").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(NodeNamed("A").drained());
  EXPECT_TRUE(master_->ResumeNode("A").ok());  // not drained: nothing to do
}

// With no node up a waiting job says so.
TEST_F(MasterDrainTest, NoNodeUpIsAReason) {
  Open();
  const JobId j = Submit(Spec(1));
  Pass();
  EXPECT_EQ(Get(j).pending_reason, "no node is up");
}

}  // namespace
}  // namespace tiresias::master_testing
