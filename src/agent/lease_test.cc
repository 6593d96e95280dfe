// Fencing by the task shim: a task whose lease lapses is stopped by its
// shim alone (SIGTERM, the grace period, SIGKILL), with nobody polling it,
// as when its agent is stopped, dead or cut off from the master. Real
// processes, real signals, real lease files.
#include "agent/lease.h"

#include <signal.h>

#include <filesystem>

#include "agent/agent_testing.h"
#include "agent/exit_file.h"
#include "agent/launcher.h"
#include "agent/proc_table.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::Gone;
using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;

constexpr int64_t kMs = 1'000'000;

class LeaseTest : public ::testing::Test {
 protected:
  TaskSpec Spec(const std::string& script, const LeaseFile& lease) {
    TaskSpec spec = agent_testing::SampleTaskSpec();
    spec.argv = {"/bin/sh", "-c", script};
    spec.log_path = dir_.File("task.log");
    spec.exit_path = dir_.File("task.exit");
    spec.working_dir = dir_.path().string();
    spec.lease = lease.word();
    spec.fence_grace = milliseconds(300);
    return spec;
  }

  TestDir dir_;
  // Tasks run as the test's own user (agent_testing::RootTasksAllowed).
  PosixLauncher launcher_{agent_testing::RootTasksAllowed()};
};

TEST_F(LeaseTest, RenewedLeaseKeepsTheTaskRunning) {
  auto lease = LeaseFile::Create(dir_.File("lease"), BootTimeNs() + 300 * kMs);
  ASSERT_TRUE(lease.ok()) << lease.status();
  auto handle = launcher_.Start(Spec("touch ready; sleep 30", **lease));
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int i = 0; i < 10; ++i) {  // 1 s, renewed every 100 ms
    (*lease)->Renew(BootTimeNs() + 300 * kMs);
    std::this_thread::sleep_for(milliseconds(100));
    ASSERT_FALSE(Gone(handle->pid)) << "fenced while renewed";
  }
  ASSERT_TRUE(launcher_.Stop(*handle, StopReason::kCancel, milliseconds(0)).ok());
}

// The shim sends SIGTERM once the lease lapses; the task checkpoints and
// exits; the exit file says it was fenced, and so does the launcher, which
// reports it preempted (a system stop, not the job's failure).
TEST_F(LeaseTest, LapsedLeaseStopsTheTaskWithNobodyPolling) {
  auto lease = LeaseFile::Create(dir_.File("lease"), BootTimeNs() + 300 * kMs);
  ASSERT_TRUE(lease.ok());
  auto handle = launcher_.Start(Spec(
      "trap 'echo checkpointed > term; exit 143' TERM; "
      "touch ready; while true; do sleep 0.02; done",
      **lease));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  // Nobody renews, nobody polls: the shim acts on its own.
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_.File("term")); },
                        milliseconds(3000)))
      << "the task got no SIGTERM after its lease lapsed";
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_.File("task.exit")); }));
  auto recorded = ReadExitFile(dir_.File("task.exit"));
  ASSERT_TRUE(recorded.ok() && recorded->has_value()) << recorded.status();
  EXPECT_TRUE((*recorded)->fenced);
  EXPECT_EQ((*recorded)->exit_code, 143);
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    auto polled = launcher_.Poll(*handle);
    if (polled.ok()) exit = *polled;
    return exit.has_value();
  }));
  EXPECT_TRUE(exit->fenced);
  EXPECT_EQ(exit->outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exit->exit_code, 143);  // the task's own status, not the shim's
}

// A task whose lease lapses as it finishes its work, and that exits 0
// anyway (the fence's SIGTERM too late to matter), ended on its own: not
// fenced, not preempted, so that its job is not run again.
TEST_F(LeaseTest, ATaskThatExitsZeroAfterItsLeaseLapsedEndedOnItsOwn) {
  auto lease = LeaseFile::Create(dir_.File("lease"), BootTimeNs() + 300 * kMs);
  ASSERT_TRUE(lease.ok());
  auto handle =
      launcher_.Start(Spec("trap 'echo term > term; exit 0' TERM; "
                           "touch ready; while true; do sleep 0.02; done",
                           **lease));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("term")); },
                milliseconds(3000)))
      << "the task got no SIGTERM after its lease lapsed";
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    auto polled = launcher_.Poll(*handle);
    if (polled.ok()) exit = *polled;
    return exit.has_value();
  }));
  EXPECT_FALSE(exit->fenced);
  EXPECT_NE(exit->outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exit->exit_code, 0);
}

// A task that ignores SIGTERM is killed after the grace period, and so is
// whatever it started in its group.
TEST_F(LeaseTest, TaskThatIgnoresTheFenceIsKilledAfterTheGrace) {
  auto lease = LeaseFile::Create(dir_.File("lease"), BootTimeNs() + 200 * kMs);
  ASSERT_TRUE(lease.ok());
  auto handle = launcher_.Start(Spec(
      "trap '' TERM; sleep 60 & echo $! > child; touch ready; "
      "while true; do sleep 0.02; done",
      **lease));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  const pid_t child = std::stoi(ReadFile(dir_.File("child")));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return Gone(child); }, milliseconds(5000)))
      << "the task's child outlived the fence";
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, milliseconds(400));  // lease 200 ms + grace 300 ms, about
  auto recorded = ReadExitFile(dir_.File("task.exit"));
  ASSERT_TRUE(recorded.ok() && recorded->has_value());
  EXPECT_TRUE((*recorded)->fenced);
  EXPECT_EQ((*recorded)->signal, SIGKILL);
}

// An agent stopped between deciding to start a task and forking it may
// wake after its node was declared lost: the shim does not start a task
// whose lease has already lapsed, and nothing is left behind.
TEST_F(LeaseTest, TaskIsNotStartedOnceItsLeaseHasLapsed) {
  auto lease = LeaseFile::Create(dir_.File("lease"), BootTimeNs() - 1);
  ASSERT_TRUE(lease.ok());
  auto handle = launcher_.Start(Spec("touch started", **lease));
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kAborted)
      << handle.status();
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("started")));
  EXPECT_TRUE(launcher_.PollAll().empty());
}

// The GPUs go with the lease file, for a restarted agent that finds a
// lease it has no record of.
TEST_F(LeaseTest, LeaseFileKeepsItsTasksGpus) {
  auto lease = LeaseFile::Create(dir_.File("lease"), 42, {1, 3});
  ASSERT_TRUE(lease.ok());
  auto reopened = LeaseFile::Open(dir_.File("lease"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->deadline_ns(), 42);
  EXPECT_EQ((*reopened)->gpus(), (std::vector<int>{1, 3}));
}

TEST_F(LeaseTest, ExitFileWithoutFenceParsesAsBefore) {
  auto plain = ParseExitFile("exit 3 1700000000000000000\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->fenced);
  auto fenced = ParseExitFile("signal 9 1700000000000000000 fenced\n");
  ASSERT_TRUE(fenced.ok());
  EXPECT_TRUE(fenced->fenced);
  EXPECT_FALSE(ParseExitFile("exit 3 17 fencd\n").ok());
}

}  // namespace
}  // namespace tiresias
