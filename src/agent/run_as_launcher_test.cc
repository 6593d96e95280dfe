// Tasks running as their owner's Unix account, with real processes: a
// throwaway account made for each test (useradd), a launcher running as
// root, tasks that say who they are. Needs root; skipped otherwise.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/agent_testing.h"
#include "agent/launcher.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::Gone;
using agent_testing::ProcessesOf;
using agent_testing::MessageOf;
using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::ThrowawayUser;
using agent_testing::WaitExit;
using agent_testing::WaitUntil;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The real, effective, saved and filesystem uids of `pid` ("Uid:" line of
// /proc/<pid>/status).
std::vector<uid_t> UidsOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::vector<uid_t> uids;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream ids(line.substr(4));
    for (uid_t id; ids >> id;) uids.push_back(id);
  }
  return uids;
}

struct stat StatOf(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st;
}

class RunAsLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (useradd, setuid)";
    user_ = std::make_unique<ThrowawayUser>();
    ASSERT_TRUE(user_->ok());
    work_ = user_->OwnedFolder(dir_.path(), "work");
  }

  // A task of the account's, in its own folder "work", with its checkpoint
  // dir (not made yet) in there.
  TaskSpec Spec(const std::string& script) const {
    TaskSpec spec = agent_testing::SampleTaskSpec();
    spec.owner = user_->name();
    spec.argv = {"/bin/sh", "-c", script};
    spec.checkpoint_dir = work_ + "/ckpt";
    spec.log_path = dir_.File("logs/task.log");
    spec.working_dir = work_;
    return spec;
  }

  std::unique_ptr<PosixLauncher> Launcher(RunAsPolicy policy = {}) const {
    return std::make_unique<PosixLauncher>(
        PosixLauncherOptions{.run_as = std::move(policy)});
  }

  // Runs `spec` to its end; the task must finish (exit 0).
  void RunToTheEnd(PosixLauncher& launcher, const TaskSpec& spec) {
    absl::StatusOr<TaskHandle> handle = launcher.Start(spec);
    ASSERT_TRUE(handle.ok()) << handle.status();
    const TaskExit exit = WaitExit(launcher, *handle);
    EXPECT_EQ(exit.outcome, TaskOutcome::kFinished)
        << exit.Describe() << "; log: " << ReadFile(spec.log_path);
  }

  // Starts a task that sleeps; returns it and its own pid (the shim's
  // child).
  std::pair<TaskHandle, pid_t> StartSleeper(PosixLauncher& launcher) {
    absl::StatusOr<TaskHandle> handle =
        launcher.Start(Spec("echo $$ > task.pid; exec sleep 30"));
    EXPECT_TRUE(handle.ok()) << handle.status();
    const std::string pid_file = work_ + "/task.pid";
    EXPECT_TRUE(WaitUntil([&] { return !ReadFile(pid_file).empty(); }));
    const std::string pid = ReadFile(pid_file);
    return {handle.value_or(TaskHandle{}), pid.empty() ? 0 : std::stoi(pid)};
  }

  static constexpr const char* kWhoAmI =
      "{ id -u; id -g; id -G; echo \"$HOME $USER $LOGNAME\"; } "
      "> \"$TIRESIAS_CHECKPOINT_DIR/id.txt\"";

  TestDir dir_;
  std::unique_ptr<ThrowawayUser> user_;
  std::string work_;  // the account's folder
};

TEST_F(RunAsLauncherTest, TaskRunsAsItsOwnersAccountWithItsGroups) {
  auto launcher = Launcher();
  const TaskSpec spec = Spec(kWhoAmI);
  absl::StatusOr<TaskHandle> handle = launcher->Start(spec);
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(handle->uid, user_->uid());
  ASSERT_EQ(WaitExit(*launcher, *handle).outcome, TaskOutcome::kFinished)
      << ReadFile(spec.log_path);
  std::istringstream said(ReadFile(spec.checkpoint_dir + "/id.txt"));
  uid_t uid = 0;
  gid_t gid = 0;
  std::string groups_line, env_line;
  said >> uid >> gid;
  said.ignore();
  std::getline(said, groups_line);
  std::getline(said, env_line);
  EXPECT_EQ(uid, user_->uid());
  EXPECT_EQ(gid, user_->gid());
  std::istringstream groups_in(groups_line);
  std::vector<gid_t> groups;
  for (gid_t g; groups_in >> g;) groups.push_back(g);
  EXPECT_THAT(groups,
              ::testing::UnorderedElementsAre(user_->gid(), user_->extra_gid()));
  EXPECT_EQ(env_line, absl::StrCat(user_->home(), " ", user_->name(), " ",
                                   user_->name()));
}

// Issue 21: a root agent started from an admin's shell (TIRESIAS_TOKEN, a
// cloud key, its pyenv and folder) gave all of it to another user's job,
// which then held the admin's token. The job gets an environment made for
// its owner from the owner's passwd entry, and none of the agent's.
TEST_F(RunAsLauncherTest, TaskStartsFromItsOwnersCleanEnvironment) {
  const agent_testing::ScopedEnv agent_env({
      {"TIRESIAS_TOKEN", "tsk_admin_secret"},
      {"TIRESIAS_TOKEN_FILE", "/root/.tiresias/token"},
      {"AWS_SECRET_ACCESS_KEY", "aws-secret"},
      {"PYENV_ROOT", "/root/.pyenv"},
      {"PATH", "/root/.pyenv/shims:/usr/bin:/bin"},
      {"PWD", "/root/secret-project"},
      {"HOME", "/root"},
      {"USER", "root"},
      {"SHELL", "/root/shell"},
  });
  PosixLauncher launcher;  // the default: the agent's own environ
  const passwd* pw = getpwnam(user_->name().c_str());
  ASSERT_NE(pw, nullptr);
  const std::string shell =
      pw->pw_shell != nullptr && *pw->pw_shell ? pw->pw_shell : "/bin/sh";
  const TaskSpec spec = Spec("env > \"$TIRESIAS_CHECKPOINT_DIR/env.txt\"");
  RunToTheEnd(launcher, spec);
  std::map<std::string, std::string> env =
      agent_testing::ReadEnvFile(spec.checkpoint_dir + "/env.txt");
  ASSERT_FALSE(env.empty());
  for (const char* leaked : {"TIRESIAS_TOKEN", "TIRESIAS_TOKEN_FILE",
                             "AWS_SECRET_ACCESS_KEY", "PYENV_ROOT"}) {
    EXPECT_FALSE(env.contains(leaked)) << leaked << "=" << env[leaked];
  }
  EXPECT_NE(env["PWD"], "/root/secret-project");
  EXPECT_EQ(env["PATH"], "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(env["TMPDIR"], "/tmp");
  EXPECT_EQ(env["USER"], user_->name());
  EXPECT_EQ(env["LOGNAME"], user_->name());
  EXPECT_EQ(env["HOME"], user_->home());
  EXPECT_EQ(env["SHELL"], shell);
}

TEST_F(RunAsLauncherTest, LogAndCheckpointDirBelongToTheAccount) {
  auto launcher = Launcher();
  const TaskSpec spec = Spec("echo hello");
  RunToTheEnd(*launcher, spec);
  const struct stat log = StatOf(spec.log_path);
  EXPECT_EQ(log.st_uid, user_->uid());
  EXPECT_EQ(log.st_gid, user_->gid());
  EXPECT_EQ(log.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadFile(spec.log_path), "hello\n");
  const struct stat ckpt = StatOf(spec.checkpoint_dir);
  EXPECT_TRUE(S_ISDIR(ckpt.st_mode));
  EXPECT_EQ(ckpt.st_uid, user_->uid());
  EXPECT_EQ(ckpt.st_mode & 0777, 0700u);
}

TEST_F(RunAsLauncherTest, OnlyTheTaskSwitchesItsShimStaysRoot) {
  auto launcher = Launcher();
  const auto [handle, task] = StartSleeper(*launcher);
  ASSERT_GT(task, 0);
  const uid_t u = user_->uid();
  EXPECT_THAT(UidsOf(task), ElementsAre(u, u, u, u));
  EXPECT_THAT(UidsOf(handle.pid), ElementsAre(0, 0, 0, 0));
  // The shim (root) still stops it, and the group with it.
  EXPECT_EQ(launcher->Stop(handle, StopReason::kCancel, milliseconds(2000))
                ->outcome,
            TaskOutcome::kCancelled);
  EXPECT_TRUE(Gone(task));
}

// The kernel clears the parent-death signal when a process's ids change:
// it must be set after the switch, or the task would outlive its shim.
TEST_F(RunAsLauncherTest, TaskRunningAsItsAccountDiesWithItsShim) {
  auto launcher = Launcher();
  const auto [handle, task] = StartSleeper(*launcher);
  ASSERT_GT(task, 0);
  ASSERT_EQ(kill(handle.pid, SIGKILL), 0);
  EXPECT_TRUE(WaitUntil([&] { return Gone(task); }));
  if (!Gone(task)) kill(task, SIGKILL);
  EXPECT_EQ(WaitExit(*launcher, handle).signal, SIGKILL);
}

TEST_F(RunAsLauncherTest, AnOwnerWithoutAccountDoesNotStart) {
  auto launcher = Launcher();
  TaskSpec spec = Spec("exit 0");
  spec.owner = user_->name() + "-gone";
  absl::StatusOr<TaskHandle> handle = launcher->Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(MessageOf(handle.status()),
              HasSubstr("cannot start job 42 rank 1: owner \"" + spec.owner +
                        "\": no Unix account"));
  EXPECT_TRUE(launcher->PollAll().empty());

  spec.owner = "";
  handle = launcher->Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_THAT(MessageOf(handle.status()), HasSubstr("no owner"));
}

TEST_F(RunAsLauncherTest, RootRunsOnlyWithAllowRootTasks) {
  // "alice" maps to root: refused like root itself.
  RunAsPolicy policy;
  policy.user_map = *UserMap::Parse("alice root\n", "users.map");
  TaskSpec spec = Spec("id -u > \"$TIRESIAS_CHECKPOINT_DIR/uid\"");
  spec.owner = "alice";
  spec.checkpoint_dir = dir_.File("root-ckpt");
  absl::StatusOr<TaskHandle> refused = Launcher(policy)->Start(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(MessageOf(refused.status()), HasSubstr("--allow-root-tasks"));

  policy.allow_root_tasks = true;
  auto launcher = Launcher(policy);
  RunToTheEnd(*launcher, spec);
  EXPECT_EQ(ReadFile(spec.checkpoint_dir + "/uid"), "0\n");
}

TEST_F(RunAsLauncherTest, MappedOwnerRunsAsTheMappedAccount) {
  RunAsPolicy policy;
  policy.user_map =
      *UserMap::Parse(absl::StrCat("alice ", user_->name(), "\n"), "m");
  TaskSpec spec = Spec(kWhoAmI);
  spec.owner = "alice";
  auto launcher = Launcher(policy);
  RunToTheEnd(*launcher, spec);
  EXPECT_THAT(ReadFile(spec.checkpoint_dir + "/id.txt"),
              ::testing::StartsWith(absl::StrCat(user_->uid(), "\n")));
}

// The user's output file is opened by the task's account: it owns it, and
// a file the account may not write to is a start error.
TEST_F(RunAsLauncherTest, OutputFilesAreTheAccountsOwn) {
  auto launcher = Launcher();
  TaskSpec spec = Spec("echo out; echo err >&2");
  spec.output_path = "out.txt";
  RunToTheEnd(*launcher, spec);
  EXPECT_EQ(ReadFile(work_ + "/out.txt"), "out\nerr\n");
  const struct stat st = StatOf(work_ + "/out.txt");
  EXPECT_EQ(st.st_uid, user_->uid());
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ofstream(dir_.File("roots-file")) << "root's\n";
  spec.output_path = dir_.File("roots-file");
  absl::StatusOr<TaskHandle> handle = launcher->Start(spec);
  ASSERT_FALSE(handle.ok());
  EXPECT_THAT(MessageOf(handle.status()),
              HasSubstr("cannot open output file (--output) " +
                        dir_.File("roots-file") + ": Permission denied"));
  EXPECT_EQ(ReadFile(dir_.File("roots-file")), "root's\n");
}

TEST_F(RunAsLauncherTest, WhatTheAccountCannotUseIsAStartError) {
  auto launcher = Launcher();
  // Root's folders: the account can neither create in one, nor enter the
  // other, nor write to the third.
  std::filesystem::create_directories(dir_.File("roots/readonly"));
  std::filesystem::create_directories(dir_.File("private"));
  std::filesystem::permissions(dir_.File("private"),
                               std::filesystem::perms::owner_all);
  struct Case {
    std::string checkpoint_dir, working_dir, says;
  };
  const std::string as = absl::StrCat("cannot start job 42 rank 1 as ",
                                      user_->name(), " (uid ", user_->uid(),
                                      "): ");
  const Case cases[] = {
      {dir_.File("roots/ckpt"), work_,
       as + "checkpoint dir " + dir_.File("roots/ckpt") +
           ": cannot create it, or read, write and enter it: "
           "Permission denied"},
      {dir_.File("roots/readonly"), work_,
       as + "checkpoint dir " + dir_.File("roots/readonly") +
           ": cannot create it, or read, write and enter it: "
           "Permission denied"},
      {work_ + "/ckpt", dir_.File("private"),
       as + "chdir to " + dir_.File("private") + ": Permission denied"},
  };
  for (const Case& c : cases) {
    TaskSpec spec = Spec("touch started");
    spec.checkpoint_dir = c.checkpoint_dir;
    spec.working_dir = c.working_dir;
    absl::StatusOr<TaskHandle> handle = launcher->Start(spec);
    ASSERT_FALSE(handle.ok()) << c.says;
    EXPECT_THAT(MessageOf(handle.status()), HasSubstr(c.says));
    EXPECT_THAT(ProcessesOf(user_->uid()), IsEmpty());  // none left behind
  }
  EXPECT_FALSE(std::filesystem::exists(work_ + "/started"));
  EXPECT_TRUE(launcher->PollAll().empty());
}

// The master's default checkpoint dir (checkpoint_dir.h): "~" stands for
// the account's home; this one has none (useradd --no-create-home), so it
// gets a folder of its own under the agent's fallback, made for it.
TEST_F(RunAsLauncherTest, DefaultCheckpointDirWithoutAHomeIsTheAccounts) {
  const std::string fallback = dir_.File("fallback");
  auto launcher = std::make_unique<PosixLauncher>(
      PosixLauncherOptions{.checkpoint_fallback_dir = fallback});
  TaskSpec spec = Spec(
      "echo \"$TIRESIAS_CHECKPOINT_DIR\" > said; touch "
      "\"$TIRESIAS_CHECKPOINT_DIR/made\"");
  spec.checkpoint_dir = "~/.tiresias/checkpoints/c0ffee/job-1";
  // The agent's own umask (the daemons' 077) is not the task's.
  const mode_t agent_umask = umask(077);
  RunToTheEnd(*launcher, spec);
  umask(agent_umask);
  const std::string own = fallback + "/" + user_->name();
  const std::string ckpt = own + "/.tiresias/checkpoints/c0ffee/job-1";
  EXPECT_EQ(ReadFile(work_ + "/said"), ckpt + "\n");
  EXPECT_EQ(StatOf(fallback).st_mode & 0777, 0711u);
  EXPECT_EQ(StatOf(fallback).st_uid, 0u);
  for (const std::string& folder :
       {own, own + "/.tiresias", own + "/.tiresias/checkpoints", ckpt}) {
    const struct stat st = StatOf(folder);
    EXPECT_EQ(st.st_uid, user_->uid()) << folder;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << folder;
  }
  EXPECT_EQ(StatOf(ckpt + "/made").st_mode & 0777, 0644u);  // umask 022
}

// With the master's --checkpoint-base, the agent makes <base>/<owner> for
// the account; one that someone else made first is refused, not used.
TEST_F(RunAsLauncherTest, CheckpointBaseFolderIsTheAccountsOrRefused) {
  auto launcher = Launcher();
  const std::string base = dir_.File("base");
  TaskSpec spec = Spec("echo \"$TIRESIAS_CHECKPOINT_DIR\" > said");
  spec.checkpoint_base = base;
  spec.checkpoint_dir = base + "/" + user_->name() + "/c0ffee/job-1";
  RunToTheEnd(*launcher, spec);
  EXPECT_EQ(ReadFile(work_ + "/said"), spec.checkpoint_dir + "\n");
  const struct stat own = StatOf(base + "/" + user_->name());
  EXPECT_EQ(own.st_uid, user_->uid());
  EXPECT_EQ(own.st_mode & 0777, 0700u);
  EXPECT_EQ(StatOf(spec.checkpoint_dir).st_uid, user_->uid());

  std::filesystem::create_directories(base + "/planted");
  spec.checkpoint_dir = base + "/planted/c0ffee/job-2";
  absl::StatusOr<TaskHandle> refused = launcher->Start(spec);
  EXPECT_THAT(MessageOf(refused.status()),
              HasSubstr("owned by uid 0, not by account"));
  spec.checkpoint_dir = base + "/../elsewhere/c0ffee/job-3";
  EXPECT_THAT(MessageOf(launcher->Start(spec).status()),
              HasSubstr("expected <checkpoint base"));
}

}  // namespace
}  // namespace tiresias
