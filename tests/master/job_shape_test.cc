// What the master tells agents to run for the shapes DL launchers expect
// (`submit --nodes --gpus-per-node --tasks-per-node`) and for `--signal`:
// MasterState with a fake clock and real SQLite, agents as messages.
#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using namespace master_testing;  // NOLINT: the fixture's own helpers
using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

class JobShapeTest : public MasterFixture {
 protected:
  // Each node's StartTasks after a pass.
  std::map<std::string, std::vector<v1::StartTask>> StartsByNode(
      const std::map<std::string, int64_t>& nodes) {
    std::map<std::string, std::vector<v1::StartTask>> out;
    for (const auto& [name, id] : nodes) {
      for (const v1::StartTask& s : Starts(Beat(id))) out[name].push_back(s);
    }
    return out;
  }
};

// 2 x 2 on n1 (4 GPUs), n2 (4) and n3 (2): the fullest nodes that hold 2
// each are n3 and then n1 (n2 stays whole). One task per node, each of
// two processes seeing its two GPUs; processes numbered node by node.
TEST_F(JobShapeTest, AShapedJobIsOneTaskPerNodeWithAProcessPerGpu) {
  Open();
  const std::map<std::string, int64_t> nodes = {{"n1", Register("n1", 4)},
                                                {"n2", Register("n2", 4)},
                                                {"n3", Register("n3", 2)}};
  JobRequest spec = Spec(4);
  spec.nodes = 2;
  spec.gpus_per_node = 2;
  const JobId id = Submit(spec);
  Pass();
  auto starts = StartsByNode(nodes);
  ASSERT_EQ(starts["n1"].size(), 1u);
  ASSERT_EQ(starts["n3"].size(), 1u);
  EXPECT_TRUE(starts["n2"].empty());
  std::vector<std::string> names;
  for (const std::string node : {"n1", "n3"}) {
    const v1::StartTask& s = starts[node][0];
    EXPECT_EQ(s.task().job_id(), id);
    EXPECT_EQ(s.gpu_indexes_size(), 2) << node;
    EXPECT_EQ(s.processes(), 2) << node;
    EXPECT_EQ(s.total_processes(), 4);
    EXPECT_EQ(s.first_process(), 2 * s.task().rank()) << node;
    EXPECT_EQ(s.world_size(), 2);
    EXPECT_EQ(s.worker_addresses_size(), 4);
    names.assign(s.node_names().begin(), s.node_names().end());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"n1", "n3"}));
  EXPECT_EQ(Get(id).spec.nodes, 2);  // stored as submitted
}

// --tasks-per-node K: K processes per node whatever its GPUs (1 for a
// launcher of its own, more than the GPUs for a CPU-bound helper).
TEST_F(JobShapeTest, TasksPerNodeReplacesOnePerGpu) {
  Open();
  const int64_t n1 = Register("n1", 4);
  JobRequest one = Spec(3);
  one.tasks_per_node = 1;
  const JobId a = Submit(one);
  JobRequest three = Spec(1);
  three.tasks_per_node = 3;
  const JobId b = Submit(three);
  Pass();
  const auto starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 2u);
  for (const v1::StartTask& s : starts) {
    const int want = s.task().job_id() == a ? 1 : 3;
    EXPECT_TRUE(s.task().job_id() == a || s.task().job_id() == b);
    EXPECT_EQ(s.processes(), want);
    EXPECT_EQ(s.total_processes(), want);
    EXPECT_EQ(s.first_process(), 0);
    EXPECT_EQ(s.worker_addresses_size(), want);
  }
}

// A shape no set of nodes can hold waits, saying so.
TEST_F(JobShapeTest, AShapeNoNodesCanHoldWaitsSayingSo) {
  Open();
  Register("n1", 2);
  Register("n2", 2);
  JobRequest three = Spec(3);
  three.nodes = 3;
  three.gpus_per_node = 1;
  const JobId never = Submit(three);
  Pass();
  EXPECT_EQ(Get(never).pending_reason,
            "needs 3 nodes with 1 GPU each, up nodes have 2 such: cannot run "
            "as configured");
}

// Enough free GPUs, but not two nodes with two of them free: a 2x1 job
// holds one GPU of n1 and n2 each (the first two of the equally full).
TEST_F(JobShapeTest, AShapeTheFreeGpusCannotHoldNowSaysHowManyNodesCould) {
  Open();
  Register("n1", 2);
  Register("n2", 2);
  Register("n3", 2);
  JobRequest pair = Spec(2);
  pair.nodes = 2;
  pair.gpus_per_node = 1;
  Submit(pair);
  Pass();
  JobRequest wide = Spec(4);
  wide.nodes = 2;
  wide.gpus_per_node = 2;
  const JobId blocked = Submit(wide);
  Pass();
  EXPECT_EQ(Get(blocked).pending_reason,
            "needs 2 nodes with 2 free GPUs each, 1 node has that many free");
}

// --signal USR1@60 with --time 10:00: due 540 s into the first run; after
// 100 s run and a requeue, 440 s into the next.
TEST_F(JobShapeTest, TheWarningSignalIsDueWhatIsLeftBeforeTheLimit) {
  Open();
  const int64_t n1 = Register("n1", 1);
  JobRequest spec = Spec(1);
  spec.time_limit = Seconds{600};
  spec.warn = {.signal = SIGUSR1, .seconds = 60};
  const JobId id = Submit(spec);
  Pass();
  auto starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].warn_signal(), SIGUSR1);
  EXPECT_DOUBLE_EQ(starts[0].warn_after_seconds(), 540);
  Beat(n1, {Task(id, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0)});
  clock_.Advance(Seconds{100});
  auto results = master_->UpdateJobs(JobAction::kRequeue, {id},
                                     [](const JobRecord&) { return true; });
  ASSERT_TRUE(results.ok() && (*results)[0].status.ok());
  v1::TaskStatus ended = Task(id, 1, 0, TASK_STATE_PREEMPTED, {0}, 0, 1000.0);
  ended.set_stop_reason(v1::STOP_REASON_PREEMPT);
  ended.set_end_time(1100.0);
  Beat(n1, {ended});
  Pass();
  starts = Starts(Beat(n1));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().attempt(), 2);
  EXPECT_NEAR(starts[0].warn_after_seconds(), 440, 1e-6);
}

}  // namespace
}  // namespace tiresias
