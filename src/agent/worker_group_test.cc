// A task of several processes (TaskSpec::processes, spawn.h): the real
// launcher against real /bin/sh processes, judged from what each process
// recorded about itself.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent_testing.h"
#include "agent/launcher.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

class WorkerGroupTest : public ::testing::Test {
 protected:
  // Node 1 of 2, processes 3..5 of 6, with the grace for the peers of a
  // process that failed (and for fencing) `grace`.
  TaskSpec Spec(const std::string& script,
                milliseconds grace = milliseconds(2000)) const {
    TaskSpec spec = agent_testing::SampleTaskSpec();
    spec.argv = {"/bin/sh", "-c", script};
    spec.processes = 3;
    spec.first_process = 3;
    spec.total_processes = 6;
    spec.node_names = {"n0", "n1"};
    spec.checkpoint_dir = dir_.File("ckpt");
    spec.log_path = dir_.File("logs/42/rank1.log");
    spec.working_dir = dir_.path().string();
    spec.fence_grace = grace;
    return spec;
  }

  TaskExit WaitExit(const TaskHandle& handle) {
    return agent_testing::WaitExit(launcher_, handle);
  }

  TestDir dir_;
  PosixLauncher launcher_{agent_testing::RootTasksAllowed()};
};

// Each process writes its own line; all are in the task's process group
// and see the same GPUs.
TEST_F(WorkerGroupTest, EveryProcessRunsWithItsOwnRanks) {
  absl::StatusOr<TaskHandle> handle = launcher_.Start(
      Spec("echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE "
           "$SLURM_PROCID $SLURM_NODEID $SLURM_JOB_NODELIST "
           "$CUDA_VISIBLE_DEVICES $(ps -o pgid= -p $$ | tr -d ' ')\" "
           "> rank-$RANK"));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const TaskExit exit = WaitExit(*handle);
  EXPECT_EQ(exit.outcome, TaskOutcome::kFinished) << exit.Describe();
  for (int p = 0; p < 3; ++p) {
    SCOPED_TRACE(p);
    const std::string line = ReadFile(dir_.File(absl::StrCat("rank-", 3 + p)));
    EXPECT_EQ(line, absl::StrCat(3 + p, " ", p, " 6 3 ", 3 + p,
                                 " 1 n[0-1] 1,3 ", handle->pgid, "\n"));
  }
}

// One process fails: the others get SIGTERM at once (well inside the
// grace) and the task's status is the failed one's exit code.
TEST_F(WorkerGroupTest, OneFailureStopsThePeersAndIsTheTasksStatus) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TaskHandle> handle = launcher_.Start(
      Spec("if [ $LOCAL_RANK = 1 ]; then sleep 0.3; exit 3; fi; "
           "trap 'echo term > term-$LOCAL_RANK; exit 143' TERM; "
           "sleep 30 & wait",
           milliseconds(20000)));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const TaskExit exit = WaitExit(*handle);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(exit.outcome, TaskOutcome::kFailed) << exit.Describe();
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_LT(took, std::chrono::seconds(10));  // not the 20 s grace
  EXPECT_EQ(ReadFile(dir_.File("term-0")), "term\n");
  EXPECT_EQ(ReadFile(dir_.File("term-2")), "term\n");
}

// A peer that ignores SIGTERM is killed once the grace is over.
TEST_F(WorkerGroupTest, APeerThatIgnoresTheStopIsKilledAfterTheGrace) {
  absl::StatusOr<TaskHandle> handle = launcher_.Start(
      Spec("if [ $LOCAL_RANK = 0 ]; then sleep 0.3; exit 5; fi; "
           "trap '' TERM; echo $$ > pid-$LOCAL_RANK; "
           "while :; do sleep 0.05; done",
           milliseconds(300)));
  ASSERT_TRUE(handle.ok()) << handle.status();
  const TaskExit exit = WaitExit(*handle);
  EXPECT_EQ(exit.outcome, TaskOutcome::kFailed) << exit.Describe();
  EXPECT_EQ(exit.exit_code, 5);
  for (int p : {1, 2}) {
    const pid_t pid = std::stoi(ReadFile(dir_.File(absl::StrCat("pid-", p))));
    EXPECT_TRUE(WaitUntil([&] { return kill(pid, 0) != 0; })) << p;
  }
}

// A stop reaches every process (the group's SIGTERM); each checkpoints.
TEST_F(WorkerGroupTest, APreemptionStopsEveryProcess) {
  absl::StatusOr<TaskHandle> handle = launcher_.Start(
      Spec("trap 'echo saved > ckpt-$RANK; exit 0' TERM; touch up-$RANK; "
           "sleep 30 & wait"));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(WaitUntil([&] {
    return std::filesystem::exists(dir_.File("up-3")) &&
           std::filesystem::exists(dir_.File("up-4")) &&
           std::filesystem::exists(dir_.File("up-5"));
  }));
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(*handle, StopReason::kPreempt, milliseconds(5000));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kPreempted);
  for (int r : {3, 4, 5}) {
    EXPECT_EQ(ReadFile(dir_.File(absl::StrCat("ckpt-", r))), "saved\n") << r;
  }
}

// submit --signal: the shim sends it to every process once, not before
// it is due, and outlives it.
TEST_F(WorkerGroupTest, TheWarningSignalReachesEveryProcessOnceWhenDue) {
  TaskSpec spec = Spec(
      "trap 'echo $(($(date +%s%N) / 1000000)) >> usr1-$LOCAL_RANK; "
      "exit 0' USR1; touch up-$LOCAL_RANK; sleep 30 & wait");
  spec.warn_signal = SIGUSR1;
  spec.warn_after = milliseconds(400);
  const auto start_ms = std::chrono::duration_cast<milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
  ASSERT_TRUE(handle.ok()) << handle.status();
  const TaskExit exit = WaitExit(*handle);
  EXPECT_EQ(exit.outcome, TaskOutcome::kFinished) << exit.Describe();
  for (int p = 0; p < 3; ++p) {
    const std::string got = ReadFile(dir_.File(absl::StrCat("usr1-", p)));
    ASSERT_FALSE(got.empty()) << p;
    EXPECT_EQ(got.find('\n'), got.size() - 1) << "more than once: " << got;
    EXPECT_GE(std::stoll(got), start_ms.count() + 400) << p;
  }
  spec.warn_signal = SIGKILL;  // the shim would die of it
  EXPECT_FALSE(launcher_.Start(spec).ok());
}

// A spec with more processes than a task may have is refused up front.
TEST_F(WorkerGroupTest, TooManyProcessesAreRefused) {
  TaskSpec spec = Spec("true");
  spec.processes = 65;
  spec.total_processes = 68;
  absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("'processes': expected 1..64, got 65"));
}

}  // namespace
}  // namespace tiresias
