// CPU-only jobs through the master: placed on a node's spare CPUs, sent
// to its agent with no GPU, waiting with a reason while those are held,
// and kept (never run twice) across a master restart.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

class CpuOnlyMasterTest : public MasterFixture {
 protected:
  // n1: 2 GPUs, and 2 spare CPUs with 1024 MiB for CPU-only jobs.
  int64_t RegisterSpare(std::vector<v1::TaskStatus> tasks = {},
                        v1::RegisterResponse* out = nullptr) {
    v1::RegisterRequest req = RegisterRequest("n1", 2, tasks);
    req.set_cpus(8);
    req.set_memory_mib(8192);
    req.set_spare_cpus(2);
    req.set_spare_memory_mib(1024);
    auto resp = master_->Register(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return 0;
    sessions_[resp->node_id()] = resp->session();
    if (out) *out = *resp;
    return resp->node_id();
  }
  static JobRequest CpuSpec(int cpus) {
    JobRequest spec = Spec(0);
    spec.cpus = cpus;
    return spec;
  }
};

TEST_F(CpuOnlyMasterTest, RunsOnSpareCpusAndSurvivesARestart) {
  Open();
  int64_t node = RegisterSpare();
  const JobId gpu = Submit(Spec(2));
  const JobId first = Submit(CpuSpec(2));
  const JobId second = Submit(CpuSpec(1));
  Pass();
  std::vector<v1::StartTask> starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 2u);  // the GPU job and the first CPU-only one
  const v1::StartTask* cpu_task = nullptr;
  for (const v1::StartTask& s : starts) {
    if (s.task().job_id() == first) cpu_task = &s;
  }
  ASSERT_NE(cpu_task, nullptr);
  EXPECT_EQ(cpu_task->gpu_indexes_size(), 0);
  EXPECT_EQ(cpu_task->cpus(), 2);
  EXPECT_EQ(cpu_task->mem_mib(), 1024);  // the spare CPUs' whole share
  EXPECT_EQ(cpu_task->processes(), 1);
  JobRecord rec = Get(second);
  EXPECT_EQ(rec.state, JobRecordState::kPending);
  EXPECT_THAT(rec.pending_reason,
              HasSubstr("needs 1 spare CPU on one node, the most free on one "
                        "node is 0"));
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].spare_cpus(), 2);
  EXPECT_EQ((*nodes)[0].spare_cpus_free(), 0);
  EXPECT_THAT((*nodes)[0].job_ids(),
              ::testing::UnorderedElementsAre(gpu, first));

  const v1::TaskStatus running =
      Task(first, 1, 0, TASK_STATE_RUNNING, {}, {}, 1000.0);
  const v1::TaskStatus gpu_running =
      Task(gpu, 1, 0, TASK_STATE_RUNNING, {0, 1}, {}, 1000.0);
  Beat(node, {running, gpu_running});
  master_.reset();  // no clean shutdown

  clock_.Advance(Seconds{5});
  Open();
  v1::RegisterResponse reg;
  node = RegisterSpare({running, gpu_running}, &reg);
  Pass();
  // Adopted where it runs: no new attempt, and the waiting one still
  // waits (the spare CPUs are held again).
  starts = Starts(Beat(node, {running, gpu_running}));
  ASSERT_EQ(starts.size(), 2u);
  for (const v1::StartTask& s : starts) {
    EXPECT_EQ(s.task().attempt(), 1);
    EXPECT_NE(s.task().job_id(), second);
  }
  EXPECT_EQ(Get(first).state, JobRecordState::kRunning);
  EXPECT_EQ(Get(second).state, JobRecordState::kPending);

  clock_.Advance(Seconds{5});
  Beat(node,
       {Task(first, 1, 0, TASK_STATE_EXITED, {}, 0, 1000.0), gpu_running});
  EXPECT_EQ(Get(first).state, JobRecordState::kFinished);
  Pass();
  starts = Starts(Beat(node, {gpu_running}));
  ASSERT_EQ(starts.size(), 2u);
  bool second_started = false;
  for (const v1::StartTask& s : starts) {
    if (s.task().job_id() == second) {
      second_started = true;
      EXPECT_EQ(s.cpus(), 1);
      EXPECT_EQ(s.mem_mib(), 512);
    }
  }
  EXPECT_TRUE(second_started);
  EXPECT_EQ(Get(first).attempt, 1);  // it never ran again
}

// A cancelled CPU-only job's task still stopping holds its spare CPUs:
// the next one is decided but sent only once that task reported its end
// (as GPUs of a stopping task are never given away).
TEST_F(CpuOnlyMasterTest, AStoppingTasksSpareCpusAreNotGivenAway) {
  Open();
  const int64_t node = RegisterSpare();
  const JobId first = Submit(CpuSpec(2));
  Pass();
  ASSERT_EQ(Starts(Beat(node)).size(), 1u);
  const v1::TaskStatus running =
      Task(first, 1, 0, TASK_STATE_RUNNING, {}, {}, 1000.0);
  Beat(node, {running});
  const JobId second = Submit(CpuSpec(1));
  ASSERT_TRUE(master_->CancelJob(first).ok());
  Pass();
  v1::HeartbeatResponse resp = Beat(node, {running});
  EXPECT_TRUE(Starts(resp).empty()) << resp.DebugString();
  ASSERT_EQ(Stops(resp).size(), 1u);
  EXPECT_EQ(Stops(resp)[0].job_id(), first);
  clock_.Advance(Seconds{1});
  Beat(node, {Task(first, 1, 0, v1::TASK_STATE_PREEMPTED, {}, 143, 1000.0)});
  Pass();
  std::vector<v1::StartTask> starts = Starts(Beat(node));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), second);
  EXPECT_EQ(Get(first).state, JobRecordState::kCancelled);
}

// A node without GPUs registers only if it keeps spare CPUs, and then
// takes CPU-only jobs (and no GPU job).
TEST_F(CpuOnlyMasterTest, ANodeWithoutGpusTakesCpuOnlyJobs) {
  Open();
  v1::RegisterRequest bare = RegisterRequest("c1", 0);
  auto refused = master_->Register(bare);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("or 0 with spare_cpus"));
  bare.set_spare_cpus(2);
  bare.set_spare_memory_mib(2048);
  bare.set_report_seq(NextSeq());
  auto resp = master_->Register(bare);
  ASSERT_TRUE(resp.ok()) << resp.status();
  sessions_[resp->node_id()] = resp->session();
  // The cluster has no GPU: a GPU job is more than it has.
  auto gpu = master_->SubmitJob(Spec(1));
  EXPECT_THAT(std::string(gpu.status().message()),
              HasSubstr("the cluster has 0"));
  const JobId cpu = Submit(CpuSpec(2));
  Pass();
  std::vector<v1::StartTask> starts = Starts(Beat(resp->node_id()));
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].task().job_id(), cpu);
  EXPECT_EQ(starts[0].gpu_indexes_size(), 0);
  auto nodes = master_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[0].gpus(), 0);
  EXPECT_EQ((*nodes)[0].spare_cpus(), 2);
}

}  // namespace
}  // namespace tiresias::master_testing
