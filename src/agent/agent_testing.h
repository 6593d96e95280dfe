// Test-only helpers for the agent's tests: a fresh temporary folder per
// test, small file helpers, waiting for a condition with a deadline, and a
// throwaway Unix account for the tests of tasks running as their owner.
#ifndef TIRESIAS_AGENT_AGENT_TESTING_H_
#define TIRESIAS_AGENT_AGENT_TESTING_H_

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "agent/launcher.h"
#include "agent/proc_table.h"
#include "core/testing/test_dir.h"
#include "gtest/gtest.h"

namespace tiresias::agent_testing {

using TestDir = test_support::TestDir;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Launcher options for the tests of how tasks start, stop and end, whoever
// they run as. Run as root (as CI does), a launcher refuses a task without
// an owner, and root's unless allowed: these tests' tasks are root's
// (SampleTaskSpec, OwnedByRoot) and root tasks are allowed, so that they
// run as the test's own user, root or not, and can write to its folder.
// Whom tasks run as is run_as_launcher_test's subject.
inline PosixLauncherOptions RootTasksAllowed(PosixLauncherOptions options =
                                                 {}) {
  options.run_as.allow_root_tasks = true;
  return options;
}
inline TaskSpec OwnedByRoot(TaskSpec spec) {
  spec.owner = "root";
  return spec;
}

// Rank 1 of a 2-rank launch (job 42, attempt 3, restarted twice) on GPUs 1
// and 3, one process per node (so RANK 1 of WORLD_SIZE 2), rank 0 at
// 10.0.0.5:29500, owned by root (see RootTasksAllowed). Tests add argv and
// paths.
inline TaskSpec SampleTaskSpec() {
  TaskSpec spec;
  spec.owner = "root";
  spec.job_id = 42;
  spec.attempt = 3;
  spec.rank = 1;
  spec.world_size = 2;
  spec.local_rank = 0;
  spec.processes = 1;
  spec.first_process = 1;
  spec.total_processes = 2;
  spec.gpus = {1, 3};
  spec.restart_count = 2;
  spec.master_addr = "10.0.0.5";
  spec.master_port = 29500;
  return spec;
}

// A status's message as a std::string, for gMock's string matchers (which
// do not take Debian abseil's own string_view).
inline std::string MessageOf(const absl::Status& status) {
  return std::string(status.message());
}

// Sets environment variables of this process (the agent's own
// environment, as a launcher built with default options copies it) and
// puts back what was there before when the object goes.
class ScopedEnv {
 public:
  explicit ScopedEnv(
      std::vector<std::pair<std::string, std::string>> variables) {
    for (const auto& [name, value] : variables) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old != nullptr ? std::optional<std::string>(old)
                                             : std::nullopt});
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old) {
        setenv(name.c_str(), old->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The variables of a file written by `env` ("K=V" lines; a value holding a
// newline is cut there).
inline std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::istringstream lines(ReadFile(path));
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// This process's peak resident set (VmHWM in /proc/self/status), in KiB;
// -1 if unreadable. ResetPeakRss starts a new peak from the current size,
// so that a test can see what one call allocated at most.
inline long PeakRssKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}
inline void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// A sparse file of `bytes` at `path` (ftruncate: no disk, no memory), as a
// task that wants to balloon the agent would leave it.
inline void MakeSparseFile(const std::string& path, off_t bytes) {
  std::ofstream(path).close();
  ASSERT_EQ(truncate(path.c_str(), bytes), 0) << path;
}

// True if the process is gone or a zombie.
inline bool Gone(pid_t pid) {
  absl::StatusOr<std::optional<ProcStat>> stat = RealProcessTable()->Stat(pid);
  return stat.ok() && (!stat->has_value() || (*stat)->exited());
}

// Polls `condition` every 5 ms until it holds or `timeout` passes.
template <typename Condition>
bool WaitUntil(Condition condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Polls `launcher` until the task of `handle` has exited (WaitUntil's
// limit) and returns its exit; a failed expectation and an empty TaskExit
// if it did not, or if polling failed.
inline TaskExit WaitExit(ProcessLauncher& launcher, const TaskHandle& handle) {
  std::optional<TaskExit> exit;
  EXPECT_TRUE(WaitUntil([&] {
    absl::StatusOr<std::optional<TaskExit>> polled = launcher.Poll(handle);
    EXPECT_TRUE(polled.ok()) << polled.status();
    if (polled.ok()) exit = *polled;
    return !polled.ok() || exit.has_value();
  }));
  return exit.value_or(TaskExit{});
}

// Runs `command` with /bin/sh, retrying while it fails: useradd and
// userdel fail while another process holds /etc/passwd's lock (parallel
// tests). True once it succeeded.
inline bool RunRetrying(const std::string& command, int tries = 50) {
  for (int i = 0; i < tries; ++i) {
    if (std::system(command.c_str()) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// The pids of every live process (zombies left out: an earlier test's task
// may wait for init to reap it) running as `uid`, from /proc/<pid>/status,
// to check that a task that failed to start left nothing behind.
inline std::vector<pid_t> ProcessesOf(uid_t uid) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(entry.path() / "status");
    bool live = true;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("State:", 0) == 0) {
        live = line.find_first_of("ZX", 6) == std::string::npos;
      }
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream ids(line.substr(4));
      uid_t real = 0;
      if (live && ids >> real && real == uid) pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// A Unix account made for one test (useradd --system --no-create-home
// --user-group), a member of one more group of its own, both removed
// (userdel, groupdel) when the object goes, also when the test failed.
// Names are unique per process and object ("tiresias-t-<pid>-<n>"), so
// parallel test runs do not collide. Needs root: construct it only after
// checking geteuid() == 0.
class ThrowawayUser {
 public:
  ThrowawayUser() {
    static std::atomic<int> next{0};
    const std::string suffix =
        std::to_string(getpid()) + "-" + std::to_string(next++);
    name_ = "tiresias-t-" + suffix;
    group_ = "tiresias-g-" + suffix;
    if (!RunRetrying("groupadd --system " + group_)) {
      ADD_FAILURE() << "groupadd " << group_ << " failed";
      return;
    }
    made_group_ = true;
    if (!RunRetrying("useradd --system --no-create-home --user-group "
                     "--groups " + group_ + " " + name_)) {
      ADD_FAILURE() << "useradd " << name_ << " failed";
      return;
    }
    made_user_ = true;
    const passwd* pw = getpwnam(name_.c_str());
    if (pw == nullptr) {
      ADD_FAILURE() << "no account " << name_ << " after useradd";
      return;
    }
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    home_ = pw->pw_dir;
    group_gid_ = GidOf(group_);
  }
  ~ThrowawayUser() {
    // What a failed test left running as the account (userdel refuses an
    // account in use), by pid.
    if (uid_ != 0) {
      for (pid_t pid : ProcessesOf(uid_)) kill(pid, SIGKILL);
      WaitUntil([&] { return ProcessesOf(uid_).empty(); });
    }
    // Its user group goes with it (USERGROUPS_ENAB); groupdel catches a
    // system where it does not.
    if (made_user_ && !RunRetrying("userdel " + name_ + " 2>/dev/null", 20)) {
      ADD_FAILURE() << "userdel " << name_ << " failed";
    }
    if (made_user_) RunRetrying("groupdel " + name_ + " 2>/dev/null", 1);
    if (made_group_ && !RunRetrying("groupdel " + group_, 20)) {
      ADD_FAILURE() << "groupdel " << group_ << " failed";
    }
  }
  ThrowawayUser(const ThrowawayUser&) = delete;
  ThrowawayUser& operator=(const ThrowawayUser&) = delete;

  bool ok() const { return uid_ != 0; }
  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }  // its own group's
  const std::string& home() const { return home_; }
  gid_t extra_gid() const { return group_gid_; }  // the other group's

  // Makes `top`/`name` a folder owned by the account, and lets others
  // search `top` (a test's own temporary folder, mode 0700), so that the
  // account can reach it. Returns its path.
  std::string OwnedFolder(const std::filesystem::path& top,
                          const std::string& name) const {
    const std::filesystem::path path = top / name;
    std::filesystem::create_directories(path);
    EXPECT_EQ(chown(path.c_str(), uid_, gid_), 0) << path;
    std::filesystem::permissions(top, std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
    return path.string();
  }

 private:
  static gid_t GidOf(const std::string& group) {
    std::ifstream in("/etc/group");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(group + ":", 0) != 0) continue;
      std::istringstream fields(line);
      std::string name, password, gid;
      std::getline(fields, name, ':');
      std::getline(fields, password, ':');
      std::getline(fields, gid, ':');
      return static_cast<gid_t>(std::stoul(gid));
    }
    ADD_FAILURE() << "no group " << group << " in /etc/group";
    return 0;
  }

  std::string name_, group_, home_;
  uid_t uid_ = 0;
  gid_t gid_ = 0, group_gid_ = 0;
  bool made_user_ = false, made_group_ = false;
};


}  // namespace tiresias::agent_testing

#endif  // TIRESIAS_AGENT_AGENT_TESTING_H_
