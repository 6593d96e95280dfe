#include "agent/task_env.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TaskSpec Spec() {
  TaskSpec spec = agent_testing::SampleTaskSpec();
  spec.argv = {"train"};
  spec.checkpoint_dir = "/ckpt/42";
  spec.log_path = "/logs/42.log";
  return spec;
}

const TaskAccount& Alice() {
  static const TaskAccount alice{
      .name = "alice", .ids = {}, .home = "/home/alice", .shell = "/bin/bash"};
  return alice;
}

TEST(TaskEnvTest, LayersAccountSpecAndFrameworkVariables) {
  TaskSpec spec = Spec();
  spec.env = {{"FOO", "bar"},
              {"HOME", "/u"},
              {"CUDA_VISIBLE_DEVICES", "7"},
              {"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}};
  const std::vector<std::string> env = BuildTaskEnvironment(spec, Alice());
  EXPECT_EQ(FindEnv(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(FindEnv(env, "HOME"), "/u");  // the spec's over the account's
  EXPECT_EQ(FindEnv(env, "FOO"), "bar");
  EXPECT_EQ(FindEnv(env, "CUDA_VISIBLE_DEVICES"), "1,3");  // ours win
  EXPECT_EQ(FindEnv(env, "CUDA_DEVICE_ORDER"), "FASTEST_FIRST");
  EXPECT_EQ(FindEnv(env, "RANK"), "1");
  EXPECT_EQ(FindEnv(env, "TIRESIAS_ATTEMPT"), "3");
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
}

// Issue 21: the agent's environment is no input at all. What a task starts
// from is what a login of its account gives; what the submitter exported
// wins over that, and ours win over both.
TEST(TaskEnvTest, StartsFromTheAccountNotTheAgent) {
  TaskSpec spec = Spec();
  std::vector<std::string> env = BuildTaskEnvironment(spec, Alice());
  std::vector<std::string> expected = {
      "CUDA_DEVICE_ORDER=PCI_BUS_ID",
      "CUDA_VISIBLE_DEVICES=1,3",
      "HOME=/home/alice",
      "LOCAL_RANK=0",
      "LOGNAME=alice",
      "MASTER_ADDR=10.0.0.5",
      "MASTER_PORT=29500",
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "RANK=1",
      "SHELL=/bin/bash",
      absl::StrCat("TF_CONFIG=", TfConfigJson(spec)),
      "TIRESIAS_ATTEMPT=3",
      "TIRESIAS_CHECKPOINT_DIR=/ckpt/42",
      "TIRESIAS_JOB_ID=42",
      "TIRESIAS_RESTART_COUNT=2",
      "TMPDIR=/tmp",
      "USER=alice",
      "WORLD_SIZE=2",
      // torchrun's other names, and Slurm's.
      "LOCAL_WORLD_SIZE=1",
      "GROUP_RANK=1",
      "GROUP_WORLD_SIZE=2",
      "ROLE_RANK=1",
      "ROLE_WORLD_SIZE=2",
      "SLURM_JOB_ID=42",
      "SLURM_JOBID=42",
      "SLURM_PROCID=1",
      "SLURM_LOCALID=0",
      "SLURM_NTASKS=2",
      "SLURM_NPROCS=2",
      "SLURM_NTASKS_PER_NODE=1",
      "SLURM_NODEID=1",
      "SLURM_NNODES=2",
      "SLURM_JOB_NUM_NODES=2",
      "SLURM_GPUS_ON_NODE=2",
      "SLURM_JOB_GPUS=1,3",
      "SLURM_STEP_GPUS=1,3",
      "SLURM_RESTART_COUNT=2",
      "SLURM_JOB_USER=alice",
  };
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(env, expected);  // nothing else at all

  spec.env = {{"PATH", "/opt/conda/bin:/usr/bin"},
              {"TMPDIR", "/scratch/tmp"},
              {"SHELL", "/bin/zsh"},
              {"USER", "alias"},
              {"TIRESIAS_JOB_ID", "1"}};
  env = BuildTaskEnvironment(spec, Alice());
  EXPECT_EQ(FindEnv(env, "PATH"), "/opt/conda/bin:/usr/bin");
  EXPECT_EQ(FindEnv(env, "TMPDIR"), "/scratch/tmp");
  EXPECT_EQ(FindEnv(env, "SHELL"), "/bin/zsh");
  EXPECT_EQ(FindEnv(env, "USER"), "alias");
  EXPECT_EQ(FindEnv(env, "LOGNAME"), "alice");
  EXPECT_EQ(FindEnv(env, "TIRESIAS_JOB_ID"), "42");
}

// A task of several processes (rank 1 of 2 nodes, processes 2 and 3 of
// 4): each its own RANK and LOCAL_RANK, as torchrun and srun number them,
// and the same GPUs.
TEST(TaskEnvTest, EachProcessGetsItsRanksUnderBothNames) {
  TaskSpec spec = Spec();
  spec.processes = 2;
  spec.first_process = 2;
  spec.total_processes = 4;
  spec.node_names = {"gpu2", "gpu1"};
  spec.node_name = "gpu2";
  spec.working_dir = "/work";
  ASSERT_TRUE(ValidateTaskSpec(spec).ok());
  for (int p = 0; p < 2; ++p) {
    SCOPED_TRACE(p);
    const std::vector<std::string> env = BuildTaskEnvironment(spec, Alice(), p);
    const std::string rank = absl::StrCat(2 + p), local = absl::StrCat(p);
    EXPECT_EQ(FindEnv(env, "RANK"), rank);
    EXPECT_EQ(FindEnv(env, "SLURM_PROCID"), rank);
    EXPECT_EQ(FindEnv(env, "ROLE_RANK"), rank);
    EXPECT_EQ(FindEnv(env, "LOCAL_RANK"), local);
    EXPECT_EQ(FindEnv(env, "SLURM_LOCALID"), local);
    EXPECT_EQ(FindEnv(env, "WORLD_SIZE"), "4");
    EXPECT_EQ(FindEnv(env, "SLURM_NTASKS"), "4");
    EXPECT_EQ(FindEnv(env, "LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(FindEnv(env, "SLURM_NTASKS_PER_NODE"), "2");
    EXPECT_EQ(FindEnv(env, "GROUP_RANK"), "1");
    EXPECT_EQ(FindEnv(env, "SLURM_NODEID"), "1");
    EXPECT_EQ(FindEnv(env, "SLURM_NNODES"), "2");
    EXPECT_EQ(FindEnv(env, "SLURM_JOB_NODELIST"), "gpu[1-2]");
    EXPECT_EQ(FindEnv(env, "SLURMD_NODENAME"), "gpu2");
    EXPECT_EQ(FindEnv(env, "SLURM_SUBMIT_DIR"), "/work");
    EXPECT_EQ(FindEnv(env, "CUDA_VISIBLE_DEVICES"), "1,3");
    const nlohmann::json tf =
        nlohmann::json::parse(std::string(FindEnv(env, "TF_CONFIG")));
    EXPECT_EQ(tf["task"]["index"], 2 + p);
    EXPECT_EQ(tf["cluster"]["worker"].size(), 4u);
  }
  spec.first_process = 3;  // 3 and 4 of 0..3
  EXPECT_THAT(std::string(ValidateTaskSpec(spec).message()),
              HasSubstr("'first_process': expected 0..2"));
  spec.first_process = 0;
  spec.processes = 0;
  EXPECT_THAT(std::string(ValidateTaskSpec(spec).message()),
              HasSubstr("'processes': expected 1..64, got 0"));
}

TEST(TaskEnvTest, NodeListsAreWrittenAsSlurmWritesThem) {
  EXPECT_EQ(SlurmHostlist({}), "");
  EXPECT_EQ(SlurmHostlist({"login"}), "login");
  EXPECT_EQ(SlurmHostlist({"gpu7"}), "gpu7");
  EXPECT_EQ(SlurmHostlist({"gpu2", "gpu1", "gpu3", "login"}), "gpu[1-3],login");
  EXPECT_EQ(SlurmHostlist({"node12", "node9", "node10"}), "node[9-10,12]");
  EXPECT_EQ(SlurmHostlist({"n02", "n01", "n10"}), "n[01-02,10]");
  EXPECT_EQ(SlurmHostlist({"gpu1", "gpu1"}), "gpu1");
  EXPECT_EQ(SlurmHostlist({"r1-n4", "r2-n1", "r1-n3"}), "r1-n[3-4],r2-n1");
  EXPECT_EQ(SlurmHostlist({"b", "a"}), "a,b");
}

// An agent whose uid has no passwd entry (a container's) runs tasks
// without USER, LOGNAME or HOME rather than with someone else's.
TEST(TaskEnvTest, AnAccountWithoutEntryLeavesItsVariablesOut) {
  const std::vector<std::string> env =
      BuildTaskEnvironment(Spec(), TaskAccount{});
  for (const char* name : {"USER", "LOGNAME", "HOME", "SHELL"}) {
    EXPECT_EQ(FindEnv(env, name), "") << name;
  }
  EXPECT_EQ(FindEnv(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
}

// A job of an array is told its array, index and the array's shape;
// others get no TIRESIAS_ARRAY_* at all, and the job's own cannot fake them.
TEST(TaskEnvTest, ArrayJobsGetTheirArrayVariables) {
  TaskSpec spec = Spec();
  spec.env = {{"TIRESIAS_ARRAY_TASK_ID", "99"}};
  std::vector<std::string> env = BuildTaskEnvironment(spec, Alice());
  EXPECT_EQ(FindEnv(env, "TIRESIAS_ARRAY_JOB_ID"), "");
  spec.array_job_id = 40;
  spec.array_task_id = 8;
  spec.array_task_count = 4;
  spec.array_task_min = 0;
  spec.array_task_max = 12;
  env = BuildTaskEnvironment(spec, Alice());
  for (const std::string prefix : {"TIRESIAS_ARRAY_", "SLURM_ARRAY_"}) {
    EXPECT_EQ(FindEnv(env, prefix + "JOB_ID"), "40") << prefix;
    EXPECT_EQ(FindEnv(env, prefix + "TASK_ID"), "8") << prefix;
    EXPECT_EQ(FindEnv(env, prefix + "TASK_COUNT"), "4") << prefix;
    EXPECT_EQ(FindEnv(env, prefix + "TASK_MIN"), "0") << prefix;
    EXPECT_EQ(FindEnv(env, prefix + "TASK_MAX"), "12") << prefix;
  }
}

TEST(TaskEnvTest, NoGpusHidesAllOfThem) {
  TaskSpec spec = Spec();
  spec.gpus.clear();
  const std::vector<std::string> env = BuildTaskEnvironment(spec, Alice());
  EXPECT_NE(std::find(env.begin(), env.end(), "CUDA_VISIBLE_DEVICES="),
            env.end());
  EXPECT_EQ(FindEnv(env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
}

TEST(TaskEnvTest, TfConfigListsOneWorkerPerRank) {
  TaskSpec spec = Spec();
  nlohmann::json config = nlohmann::json::parse(TfConfigJson(spec));
  EXPECT_EQ(config["cluster"]["worker"],
            nlohmann::json({"10.0.0.5:29501", "10.0.0.5:29502"}));
  EXPECT_EQ(config["task"], nlohmann::json({{"type", "worker"}, {"index", 1}}));
  spec.worker_addrs = {"a:1", "b:2"};
  config = nlohmann::json::parse(TfConfigJson(spec));
  EXPECT_EQ(config["cluster"]["worker"], nlohmann::json({"a:1", "b:2"}));
}

TEST(TaskEnvTest, ValidationNamesTheField) {
  struct Case {
    void (*mutate)(TaskSpec&);
    const char* field;
  };
  const Case cases[] = {
      {[](TaskSpec& s) { s.argv.clear(); }, "'argv'"},
      {[](TaskSpec& s) { s.world_size = 0; }, "'world_size'"},
      {[](TaskSpec& s) { s.rank = 2; }, "'rank'"},
      {[](TaskSpec& s) { s.local_rank = -1; }, "'local_rank'"},
      {[](TaskSpec& s) {
         s.gpus = {1, 1};
       },
       "'gpus'"},
      {[](TaskSpec& s) { s.master_port = 70000; }, "'master_port'"},
      {[](TaskSpec& s) { s.log_path.clear(); }, "'log_path'"},
      {[](TaskSpec& s) { s.worker_addrs = {"a:1"}; }, "'worker_addrs'"},
      {[](TaskSpec& s) { s.env["A=B"] = "c"; }, "'env'"},
      {[](TaskSpec& s) { s.restart_count = -1; }, "'restart_count'"},
  };
  EXPECT_TRUE(ValidateTaskSpec(Spec()).ok());
  for (const Case& c : cases) {
    TaskSpec spec = Spec();
    c.mutate(spec);
    absl::Status status = ValidateTaskSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.field));
  }
}

TEST(ResolveCommandTest, SearchesPathLikeExecvp) {
  agent_testing::TestDir dir;
  const std::string tool = dir.Write("bin/tool", "#!/bin/sh\n", 0755);
  dir.Write("bin/data", "not executable", 0644);
  const std::string path_var = "/nonexistent:" + dir.File("bin");
  EXPECT_EQ(ResolveCommand("tool", path_var, "").value(), tool);
  EXPECT_EQ(ResolveCommand("./x/y", path_var, "").value(), "./x/y");
  EXPECT_EQ(ResolveCommand("tool", "bin", dir.path().string()).value(),
            dir.File("bin") + "/tool");
  absl::StatusOr<std::string> missing = ResolveCommand("data", path_var, "");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("command 'data'"));
  EXPECT_THAT(ResolveCommand("sh", "", "").value(), ::testing::EndsWith("/sh"));
}

}  // namespace
}  // namespace tiresias
