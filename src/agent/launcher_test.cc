// The real launcher against real processes: /bin/sh scripts, real signals,
// real log files, each test in its own temporary folder.
#include "agent/launcher.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/agent_testing.h"
#include "agent/clock.h"
#include "agent/proc_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

using agent_testing::Gone;
using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

pid_t ReadPid(const std::string& path) {
  return static_cast<pid_t>(std::stol(ReadFile(path)));
}

// How tasks start, stop and end; the tasks run as the test's own user
// (agent_testing::RootTasksAllowed).
class LauncherTest : public ::testing::Test {
 protected:
  TaskSpec Spec(const std::string& script) const {
    TaskSpec spec = agent_testing::SampleTaskSpec();
    spec.argv = {"/bin/sh", "-c", script};
    spec.checkpoint_dir = dir_.File("ckpt");
    spec.log_path = dir_.File("logs/42/rank1.log");
    spec.working_dir = dir_.path().string();
    return spec;
  }

  TaskHandle StartOk(const TaskSpec& spec) {
    absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
    EXPECT_TRUE(handle.ok()) << handle.status();
    return handle.value_or(TaskHandle{});
  }

  // Starts `script` and waits until it has created the file "ready".
  TaskHandle StartReady(const std::string& script) {
    TaskHandle handle = StartOk(Spec(script));
    EXPECT_TRUE(
        WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
    return handle;
  }

  TaskExit WaitExit(const TaskHandle& handle) {
    return agent_testing::WaitExit(launcher_, handle);
  }

  TestDir dir_;
  PosixLauncher launcher_{agent_testing::RootTasksAllowed()};
};

TEST_F(LauncherTest, ChildSeesItsEnvironment) {
  TaskSpec spec = Spec("env > env.txt; pwd > pwd.txt");
  spec.env = {{"USER_VAR", "hello world"}, {"RANK", "99"}, {"PWD", "/x"}};
  const TaskHandle handle = StartOk(spec);
  ASSERT_EQ(WaitExit(handle).outcome, TaskOutcome::kFinished);
  std::map<std::string, std::string> env;
  std::istringstream lines(ReadFile(dir_.File("env.txt")));
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  const std::map<std::string, std::string> expected = {
      {"USER_VAR", "hello world"},
      {"CUDA_VISIBLE_DEVICES", "1,3"},
      {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
      {"MASTER_ADDR", "10.0.0.5"},
      {"MASTER_PORT", "29500"},
      {"WORLD_SIZE", "2"},
      {"RANK", "1"},  // not the user's 99
      {"LOCAL_RANK", "0"},
      {"TIRESIAS_JOB_ID", "42"},
      {"TIRESIAS_ATTEMPT", "3"},
      {"TIRESIAS_CHECKPOINT_DIR", dir_.File("ckpt")},
      {"TIRESIAS_RESTART_COUNT", "2"},
  };
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(env[name], value) << name;
  }
  EXPECT_EQ(nlohmann::json::parse(env["TF_CONFIG"]),
            nlohmann::json::parse(R"({"cluster": {"worker":
                ["10.0.0.5:29501", "10.0.0.5:29502"]},
                "task": {"type": "worker", "index": 1}})"));
  EXPECT_EQ(ReadFile(dir_.File("pwd.txt")), dir_.path().string() + "\n");
  // $PWD says where it started (a program that reads it, not getcwd, sees
  // its job's folder), even against the submitter's.
  EXPECT_EQ(env["PWD"], dir_.path().string());
}

// A task of a job that named no folder starts in /, not in the agent's
// own folder (whatever that is: here the test's).
TEST_F(LauncherTest, NoWorkingDirStartsInRoot) {
  TaskSpec spec = Spec("pwd > " + dir_.File("pwd.txt"));
  spec.working_dir.clear();
  const TaskHandle handle = StartOk(spec);
  ASSERT_EQ(WaitExit(handle).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(ReadFile(dir_.File("pwd.txt")), "/\n");
}

// Issue 21: a root agent started from an admin's shell handed that shell's
// TIRESIAS_TOKEN (the admin's token) and cloud keys to every task. A task
// starts from a clean environment made for its account, whatever the
// agent's own holds: PATH and TMPDIR fixed, HOME, USER, LOGNAME and SHELL
// from the account's passwd entry (here the test's own: the tasks of these
// tests run as the test's user); what the submitter exported wins over
// those.
TEST_F(LauncherTest, AgentsOwnEnvironmentNeverReachesTheTask) {
  const agent_testing::ScopedEnv agent_env({
      {"TIRESIAS_TOKEN", "tsk_admin_secret"},
      {"AWS_SECRET_ACCESS_KEY", "aws-secret"},
      {"PYENV_ROOT", "/root/.pyenv"},
      {"PWD", "/root/secret-project"},
      {"_", "/usr/local/bin/tiresias"},
      {"PATH", "/root/.pyenv/shims:/usr/bin:/bin"},
      {"TMPDIR", "/root/tmp"},
      {"HOME", "/agent/home"},
      {"USER", "agent-user"},
      {"LOGNAME", "agent-user"},
      {"SHELL", "/agent/shell"},
  });
  PosixLauncher launcher(agent_testing::RootTasksAllowed());  // its environ
  const passwd* pw = getpwuid(geteuid());
  ASSERT_NE(pw, nullptr);
  const std::string shell =
      pw->pw_shell != nullptr && *pw->pw_shell ? pw->pw_shell : "/bin/sh";

  TaskSpec spec = Spec("env > env.txt");
  absl::StatusOr<TaskHandle> handle = launcher.Start(spec);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    exit = launcher.Poll(*handle).value_or(std::nullopt);
    return exit.has_value();
  }));
  ASSERT_EQ(exit->outcome, TaskOutcome::kFinished) << ReadFile(spec.log_path);
  std::map<std::string, std::string> env =
      agent_testing::ReadEnvFile(dir_.File("env.txt"));
  for (const char* leaked :
       {"TIRESIAS_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYENV_ROOT"}) {
    EXPECT_FALSE(env.contains(leaked)) << leaked << "=" << env[leaked];
  }
  EXPECT_NE(env["PWD"], "/root/secret-project");  // the shell's own, if any
  EXPECT_NE(env["_"], "/usr/local/bin/tiresias");
  EXPECT_EQ(env["PATH"], "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(env["TMPDIR"], "/tmp");
  EXPECT_EQ(env["HOME"], pw->pw_dir);
  EXPECT_EQ(env["USER"], pw->pw_name);
  EXPECT_EQ(env["LOGNAME"], pw->pw_name);
  EXPECT_EQ(env["SHELL"], shell);
  EXPECT_EQ(env["TIRESIAS_JOB_ID"], "42");  // the agent's own still set

  // What the submitter exported wins over the account's defaults.
  spec.env = {{"PATH", "/opt/conda/bin:/usr/bin:/bin"},
              {"TMPDIR", "/scratch"},
              {"HOME", "/scratch/home"},
              {"SHELL", "/bin/bash"}};
  handle = launcher.Start(spec);
  ASSERT_TRUE(handle.ok()) << handle.status();
  exit.reset();
  ASSERT_TRUE(WaitUntil([&] {
    exit = launcher.Poll(*handle).value_or(std::nullopt);
    return exit.has_value();
  }));
  env = agent_testing::ReadEnvFile(dir_.File("env.txt"));
  EXPECT_EQ(env["PATH"], "/opt/conda/bin:/usr/bin:/bin");
  EXPECT_EQ(env["TMPDIR"], "/scratch");
  EXPECT_EQ(env["HOME"], "/scratch/home");
  EXPECT_EQ(env["SHELL"], "/bin/bash");
  EXPECT_FALSE(env.contains("TIRESIAS_TOKEN"));
}

TEST_F(LauncherTest, ExitZeroIsFinished) {
  const auto before = std::chrono::system_clock::now();
  const TaskHandle handle = StartOk(Spec("exit 0"));
  EXPECT_GT(handle.pid, 0);
  EXPECT_EQ(handle.pgid, handle.pid);
  EXPECT_NE(handle.proc_start_ticks, 0u);
  EXPECT_GE(handle.start_time, before);
  EXPECT_EQ(handle.job_id, 42);
  const TaskExit exit = WaitExit(handle);
  EXPECT_EQ(exit.outcome, TaskOutcome::kFinished);
  EXPECT_EQ(exit.exit_code, 0);
  EXPECT_FALSE(exit.signal.has_value());
  EXPECT_GE(exit.end_time, handle.start_time);
  // Forgotten once reported.
  EXPECT_EQ(launcher_.Poll(handle).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(LauncherTest, NonZeroExitIsFailedWithItsCode) {
  const TaskExit exit = WaitExit(StartOk(Spec("exit 3")));
  EXPECT_EQ(exit.outcome, TaskOutcome::kFailed);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_EQ(exit.Describe(), "failed (exit code 3)");
}

TEST_F(LauncherTest, SignalWeDidNotSendIsFailed) {
  const TaskExit exit = WaitExit(StartOk(Spec("kill -KILL $$")));
  EXPECT_EQ(exit.outcome, TaskOutcome::kFailed);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_EQ(exit.Describe(), "failed (killed by signal 9 (SIGKILL))");
}

TEST_F(LauncherTest, CommandNotFoundIsAStartError) {
  TaskSpec spec = Spec("");
  spec.argv = {"no-such-command-for-tiresias", "--flag"};
  absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("command 'no-such-command-for-tiresias' not found"));
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("job 42 rank 1"));
  EXPECT_TRUE(launcher_.PollAll().empty());
}

TEST_F(LauncherTest, ExecFailureCarriesErrno) {
  TaskSpec spec = Spec("");
  spec.argv = {dir_.Write("not-executable", "#!/bin/sh\n", 0644)};
  absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
  EXPECT_FALSE(handle.ok());
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("exec " + spec.argv[0] + ": Permission denied"));
  spec.argv = {"/nonexistent/train.py"};
  handle = launcher_.Start(spec);
  EXPECT_THAT(
      std::string(handle.status().message()),
      HasSubstr("exec /nonexistent/train.py: No such file or directory"));
  spec = Spec("exit 0");
  spec.working_dir = dir_.File("missing");
  handle = launcher_.Start(spec);
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("chdir to " + spec.working_dir));
  EXPECT_TRUE(launcher_.PollAll().empty());
}

TEST_F(LauncherTest, LogGetsStdoutAndStderrAppended) {
  const std::string script = "echo out; echo err >&2; cat";  // cat: stdin EOF
  EXPECT_EQ(WaitExit(StartOk(Spec(script))).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(WaitExit(StartOk(Spec(script))).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(ReadFile(dir_.File("logs/42/rank1.log")), "out\nerr\nout\nerr\n");
}

// submit --output / --error: the user's files get exactly their stream,
// appended (a resumed attempt adds to them), relative to the working dir;
// the task log (what `tiresias logs` serves) still gets both.
TEST_F(LauncherTest, OutputAndErrorFilesGetTheirStreamAndTheLogBoth) {
  TaskSpec spec = Spec("echo o1; echo e1 >&2; echo o2");
  spec.output_path = "out.txt";
  spec.error_path = dir_.File("err.txt");
  EXPECT_EQ(WaitExit(StartOk(spec)).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(WaitExit(StartOk(spec)).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(ReadFile(dir_.File("out.txt")), "o1\no2\no1\no2\n");
  EXPECT_EQ(ReadFile(dir_.File("err.txt")), "e1\ne1\n");
  // Two pipes: each stream's order is kept, not their interleaving.
  std::vector<std::string> log_lines;
  std::istringstream log(ReadFile(spec.log_path));
  for (std::string line; std::getline(log, line);) log_lines.push_back(line);
  std::sort(log_lines.begin(), log_lines.end());
  EXPECT_EQ(log_lines,
            (std::vector<std::string>{"e1", "e1", "o1", "o1", "o2", "o2"}));
  struct stat st = {};
  ASSERT_EQ(stat(dir_.File("out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Without --error, stderr goes with stdout, in the order the task wrote.
TEST_F(LauncherTest, OutputAloneGetsBothStreamsInOrder) {
  TaskSpec spec = Spec("echo o1; echo e1 >&2; echo o2; echo e2 >&2");
  spec.output_path = "both-42.txt";
  spec.error_path = "both-42.txt";  // the same file: one pipe, in order
  EXPECT_EQ(WaitExit(StartOk(spec)).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(ReadFile(dir_.File("both-42.txt")), "o1\ne1\no2\ne2\n");
  EXPECT_EQ(ReadFile(spec.log_path), "o1\ne1\no2\ne2\n");
  spec.error_path = "";
  spec.output_path = "big.txt";
  // More than a pipe holds, written just before the task exits: none lost.
  spec.argv = {"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x"};
  EXPECT_EQ(WaitExit(StartOk(spec)).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(std::filesystem::file_size(dir_.File("big.txt")), 1000000u);
  EXPECT_EQ(ReadFile(dir_.File("big.txt")), std::string(1000000, 'x'));
}

TEST_F(LauncherTest, ErrorAloneLeavesStdoutToTheLog) {
  TaskSpec spec = Spec("echo o1; echo e1 >&2");
  spec.error_path = "err.txt";
  EXPECT_EQ(WaitExit(StartOk(spec)).outcome, TaskOutcome::kFinished);
  EXPECT_EQ(ReadFile(dir_.File("err.txt")), "e1\n");
  EXPECT_THAT(ReadFile(spec.log_path), HasSubstr("o1\n"));
  EXPECT_THAT(ReadFile(spec.log_path), HasSubstr("e1\n"));
}

TEST_F(LauncherTest, AnOutputFileThatCannotBeOpenedIsAStartError) {
  TaskSpec spec = Spec("touch started");
  spec.output_path = "missing/out-%j.txt";
  absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_THAT(
      std::string(handle.status().message()),
      HasSubstr("cannot open output file (--output) " + dir_.path().string() +
                "/missing/out-%j.txt: No such file or directory"));
  spec.output_path = "";
  spec.error_path = dir_.path().string();  // a directory
  handle = launcher_.Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_THAT(std::string(handle.status().message()),
              HasSubstr("cannot open error file (--error) " +
                        dir_.path().string() + ": Is a directory"));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("started")));
  EXPECT_TRUE(launcher_.PollAll().empty());
}

TEST_F(LauncherTest, PreemptedJobCheckpointsOnTerm) {
  const TaskHandle handle = StartReady(
      "trap 'echo checkpointed > ckpt.txt; exit 0' TERM; sleep 30 & "
      "touch ready; wait");
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(handle, StopReason::kPreempt, milliseconds(3000));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(ReadFile(dir_.File("ckpt.txt")), "checkpointed\n");
}

TEST_F(LauncherTest, IgnoredTermIsKilledAfterGraceWithItsGroup) {
  const TaskHandle handle = StartReady(
      "trap '' TERM; sleep 30 & echo $! > grandchild; touch ready; wait");
  const pid_t grandchild = ReadPid(dir_.File("grandchild"));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(handle, StopReason::kPreempt, milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_TRUE(WaitUntil([&] { return Gone(grandchild); }));
}

TEST_F(LauncherTest, CancelledJob) {
  const TaskHandle handle = StartReady("touch ready; exec sleep 30");
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(handle, StopReason::kCancel, milliseconds(3000));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kCancelled);
  EXPECT_EQ(exit->signal, SIGTERM);
}

TEST_F(LauncherTest, StopAfterTheTaskExitedKeepsItsOwnOutcome) {
  const TaskHandle handle = StartOk(Spec("exit 5"));
  ASSERT_TRUE(WaitUntil([&] { return Gone(handle.pid); }));  // a zombie
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(handle, StopReason::kPreempt, milliseconds(300));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kFailed);
  EXPECT_EQ(exit->exit_code, 5);
}

TEST_F(LauncherTest, LeftoverProcessesOfAFinishedTaskAreKilled) {
  const TaskHandle handle =
      StartOk(Spec("sleep 30 & echo $! > grandchild; exit 0"));
  EXPECT_EQ(WaitExit(handle).outcome, TaskOutcome::kFinished);
  EXPECT_TRUE(
      WaitUntil([&] { return Gone(ReadPid(dir_.File("grandchild"))); }));
}

// A clock whose steady time only moves when the test says so.
class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point SteadyNow() override { return now_; }
  std::chrono::system_clock::time_point WallNow() override {
    return std::chrono::system_clock::now();
  }
  void SleepFor(std::chrono::nanoseconds d) override { now_ += d; }
  void Advance(std::chrono::nanoseconds d) { now_ += d; }

 private:
  std::chrono::steady_clock::time_point now_;
};

TEST_F(LauncherTest, RequestStopReturnsAtOnceAndPollEscalatesOnTheClock) {
  ManualClock clock;
  PosixLauncherOptions options;
  options.clock = &clock;
  PosixLauncher launcher(agent_testing::RootTasksAllowed(options));
  absl::StatusOr<TaskHandle> handle = launcher.Start(
      Spec("trap '' TERM; touch ready; while :; do sleep 0.01; done"));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  ASSERT_TRUE(
      launcher.RequestStop(*handle, StopReason::kPreempt, std::chrono::hours(1))
          .ok());
  // Real time passes, the clock's does not: no SIGKILL yet.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(launcher.PollAll().empty());
  clock.Advance(std::chrono::hours(1));
  std::vector<TaskExit> exits;
  ASSERT_TRUE(WaitUntil([&] {
    for (TaskExit& e : launcher.PollAll()) exits.push_back(e);
    return !exits.empty();
  }));
  EXPECT_EQ(exits[0].outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exits[0].signal, SIGKILL);
}

TEST_F(LauncherTest, AdoptedTaskIsWatchedThroughProc) {
  const TaskHandle handle = StartReady("touch ready; exec sleep 30");
  PosixLauncher successor;  // an agent restarted: not the task's parent
  ASSERT_TRUE(successor.Adopt(handle, std::nullopt, milliseconds(0)).ok());
  EXPECT_EQ(successor.Adopt(handle, std::nullopt, milliseconds(0)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(successor.Poll(handle).value().has_value());
  ASSERT_TRUE(
      successor.RequestStop(handle, StopReason::kCancel, milliseconds(3000))
          .ok());
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    exit = successor.Poll(handle).value();
    return exit.has_value();
  }));
  EXPECT_EQ(exit->outcome, TaskOutcome::kCancelled);
  EXPECT_FALSE(exit->exit_code.has_value());    // not its parent: status lost
  EXPECT_EQ(WaitExit(handle).signal, SIGTERM);  // the parent reaps it
}

TEST_F(LauncherTest, ShimRecordsTheExitAndOutlivesTheStopSignal) {
  TaskSpec spec = Spec(
      "trap 'echo checkpointed; exit 7' TERM; touch ready; "
      "while :; do sleep 0.05; done");
  spec.exit_path = dir_.File("exits/task.exit");
  const TaskHandle handle = StartOk(spec);
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  // The shim leads the group: SIGTERM reaches the task, the shim waits on.
  const TaskExit exit =
      launcher_.Stop(handle, StopReason::kPreempt, milliseconds(5000)).value();
  EXPECT_EQ(exit.outcome, TaskOutcome::kPreempted);
  EXPECT_EQ(exit.exit_code, 7);  // the task's code, passed on by the shim
  EXPECT_FALSE(exit.signal.has_value());
  EXPECT_THAT(ReadFile(dir_.File("exits/task.exit")),
              ::testing::StartsWith("exit 7 "));
  EXPECT_THAT(ReadFile(spec.log_path), HasSubstr("checkpointed"));
}

TEST_F(LauncherTest, ShimPassesOnTheSignalThatKilledTheTask) {
  TaskSpec spec = Spec("kill -USR1 $$");
  spec.exit_path = dir_.File("task.exit");
  const TaskExit exit = WaitExit(StartOk(spec));
  EXPECT_EQ(exit.outcome, TaskOutcome::kFailed);
  EXPECT_EQ(exit.signal, SIGUSR1);  // the shim ignores USR1, the task did not
  EXPECT_THAT(ReadFile(dir_.File("task.exit")),
              ::testing::StartsWith(absl::StrCat("signal ", SIGUSR1, " ")));
}

TEST_F(LauncherTest, TaskDiesWithItsShim) {
  const TaskHandle handle =
      StartReady("echo $$ > task.pid; touch ready; exec sleep 30");
  const pid_t task = ReadPid(dir_.File("task.pid"));
  EXPECT_NE(task, handle.pid);  // the shim leads the group, the task is in it
  EXPECT_EQ(getpgid(task), handle.pgid);
  ASSERT_EQ(kill(handle.pid, SIGKILL), 0);
  EXPECT_TRUE(WaitUntil([&] { return Gone(task); }));
  EXPECT_EQ(WaitExit(handle).signal, SIGKILL);
}

TEST_F(LauncherTest, AdoptedTaskExitStatusComesFromItsExitFile) {
  TaskSpec spec =
      Spec("touch ready; while [ ! -e go ]; do sleep 0.01; done; exit 3");
  spec.exit_path = dir_.File("exits/task.exit");
  const TaskHandle handle = StartOk(spec);
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  PosixLauncher successor;  // an agent restarted: not the shim's parent
  ASSERT_TRUE(successor.Adopt(handle, std::nullopt, milliseconds(0)).ok());
  EXPECT_FALSE(successor.Poll(handle).value().has_value());
  const auto before_exit = std::chrono::system_clock::now();
  std::ofstream(dir_.File("go")) << "";
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    exit = successor.Poll(handle).value();
    return exit.has_value();
  }));
  EXPECT_EQ(exit->outcome, TaskOutcome::kFailed);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_GE(exit->end_time, before_exit);  // when the shim saw it end
  EXPECT_LE(exit->end_time, std::chrono::system_clock::now());
  EXPECT_EQ(WaitExit(handle).exit_code, 3);  // the parent reaps the shim
}

TEST_F(LauncherTest, AdoptedPidNowHeldByAnotherProcessIsLeftAlone) {
  const TaskHandle handle = StartReady("touch ready; exec sleep 30");
  TaskHandle recorded = handle;  // as if the recorded task's pid was reused
  recorded.proc_start_ticks += 1;
  PosixLauncher successor;
  ASSERT_TRUE(
      successor.Adopt(recorded, StopReason::kPreempt, milliseconds(0)).ok());
  absl::StatusOr<std::optional<TaskExit>> exit = successor.Poll(recorded);
  ASSERT_TRUE(exit.ok() && exit->has_value());
  EXPECT_EQ((*exit)->outcome, TaskOutcome::kPreempted);
  // Adopt sent no signal to a process that is not the task.
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(Gone(handle.pid));
  EXPECT_EQ(
      launcher_.Stop(handle, StopReason::kCancel, milliseconds(1000))->outcome,
      TaskOutcome::kCancelled);
}

// /proc as it was when frozen: a process that has exited still reads as
// running, as it does in the moment between a task's end and its shim's.
class FrozenProcessTable final : public ProcessTable {
 public:
  explicit FrozenProcessTable(ProcStat running) : running_(running) {}
  absl::StatusOr<std::optional<ProcStat>> Stat(pid_t pid) override {
    if (frozen_) return std::optional<ProcStat>(running_);
    return RealProcessTable()->Stat(pid);
  }
  void Thaw() { frozen_ = false; }

 private:
  ProcStat running_;
  std::atomic<bool> frozen_{true};
};

// A stop that reaches a task after it ended on its own (its exit recorded,
// its shim not yet gone) does not turn its exit into a stop: it finished,
// and must not run again.
TEST_F(LauncherTest, AStopSentAfterTheTaskEndedKeepsItsOwnExit) {
  TaskSpec spec =
      Spec("touch ready; while [ ! -e go ]; do sleep 0.01; done; exit 0");
  spec.exit_path = dir_.File("exits/task.exit");
  const TaskHandle handle = StartOk(spec);
  ASSERT_TRUE(
      WaitUntil([&] { return std::filesystem::exists(dir_.File("ready")); }));
  absl::StatusOr<std::optional<ProcStat>> running =
      RealProcessTable()->Stat(handle.pid);
  ASSERT_TRUE(running.ok() && running->has_value());
  FrozenProcessTable table(**running);
  PosixLauncher successor({.process_table = &table});
  ASSERT_TRUE(successor.Adopt(handle, std::nullopt, milliseconds(0)).ok());
  std::ofstream(dir_.File("go")) << "";
  ASSERT_TRUE(WaitUntil(
      [&] { return std::filesystem::exists(dir_.File("exits/task.exit")); }));
  std::this_thread::sleep_for(milliseconds(20));  // the recorded end is past
  // The task's end is recorded; /proc (frozen) still says it runs.
  ASSERT_TRUE(
      successor.RequestStop(handle, StopReason::kPreempt, milliseconds(0))
          .ok());
  table.Thaw();
  std::optional<TaskExit> exit;
  ASSERT_TRUE(WaitUntil([&] {
    exit = successor.Poll(handle).value();
    return exit.has_value();
  }));
  EXPECT_EQ(exit->outcome, TaskOutcome::kFinished) << exit->Describe();
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(WaitExit(handle).exit_code, 0);  // the parent reaps the shim
}

// The same stop sent while the task still runs is a stop, even when the
// task then exits 0 (it checkpointed on SIGTERM): it resumes later.
TEST_F(LauncherTest, AnExitAfterTheStopIsTheStop) {
  const TaskHandle handle =
      StartReady("trap 'exit 0' TERM; touch ready; while :; do sleep 0.01; done");
  absl::StatusOr<TaskExit> exit =
      launcher_.Stop(handle, StopReason::kPreempt, milliseconds(3000));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->outcome, TaskOutcome::kPreempted) << exit->Describe();
  EXPECT_EQ(exit->exit_code, 0);
}

}  // namespace
}  // namespace tiresias
