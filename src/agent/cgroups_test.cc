// TaskCgroup on the machine's real cgroup hierarchies, v1 and v2, with
// real processes judged from inside: what they could open, allocate, fork
// and run on. Needs root and writable hierarchies (as this machine and CI
// have: scripts/setup.sh); elsewhere each test says why it skips. This
// machine's v2 hierarchy offers few controllers (they are v1's): there the
// v2 cases of memory, CPUs and pids skip, saying so, and the device, stale
// and naming cases run; on a v2-only host all of them run.
#include "agent/cgroups.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/testing/test_dir.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// 16 CPUs (numbered 0-7 and 16-23, as a two-socket machine may have
// them) for 8 GPUs: two each, in order; 2 CPUs for 4 GPUs: shared round.
TEST(CpusForGpusTest, EachGpuHasItsOwnBlockOfTheNodesCpus) {
  const std::vector<int> cpus = {0,  1,  2,  3,  4,  5,  6,  7,
                                 16, 17, 18, 19, 20, 21, 22, 23};
  EXPECT_EQ(CpusForGpus(cpus, 8, {0}, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(CpusForGpus(cpus, 8, {7, 4}, 0),  // CPUs 8-9 and 14-15 of 16
            (std::vector<int>{16, 17, 22, 23}));
  EXPECT_EQ(CpusForGpus(cpus, 8, {1}, 4), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(CpusForGpus(cpus, 8, {7}, 4),  // 28-31: past the end, wraps
            (std::vector<int>{20, 21, 22, 23}));
  EXPECT_EQ(CpusForGpus({0, 1}, 4, {3}, 0), (std::vector<int>{1}));
  EXPECT_EQ(CpusForGpus({0, 1}, 4, {0, 2}, 0), (std::vector<int>{0}));
  EXPECT_EQ(CpusForGpus({0, 1, 2}, 2, {1}, 0), (std::vector<int>{1}));
  EXPECT_TRUE(CpusForGpus(cpus, 8, {}, 0).empty());  // no GPU: no binding
  EXPECT_TRUE(CpusForGpus({}, 8, {0}, 0).empty());
  // Tasks holding different GPUs never share a CPU (when there are enough).
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      for (int cpu : CpusForGpus(cpus, 8, {a}, 0)) {
        const std::vector<int> other = CpusForGpus(cpus, 8, {b}, 0);
        EXPECT_EQ(std::count(other.begin(), other.end(), cpu), 0);
      }
    }
  }
}

// A job's --cpus-per-gpu takes the first CPUs of each of its GPUs' blocks,
// which stay where the node's layout puts them.
TEST(CpusForGpusTest, AJobTakesTheFirstCpusOfEachBlock) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(CpusForGpus(cpus, 2, {1}, 0, 1), (std::vector<int>{4}));
  EXPECT_EQ(CpusForGpus(cpus, 2, {0, 1}, 0, 2), (std::vector<int>{0, 1, 4, 5}));
  // More than a block holds: the block (the scheduler never places so).
  EXPECT_EQ(CpusForGpus(cpus, 2, {1}, 0, 9), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(CpusForGpus(cpus, 4, {3}, 0, 0), (std::vector<int>{6, 7}));
}

// A task is denied the device minors of the GPUs it was not given, which
// need not be their indexes.
TEST(DeniedGpuMinorsTest, DeniesTheOthersByTheirDeviceMinor) {
  EXPECT_EQ(DeniedGpuMinors({0, 1, 2, 3}, {3, 2, 1, 0}, {1}),
            (std::vector<int>{3, 1, 0}));
  EXPECT_EQ(DeniedGpuMinors({0, 1, 2}, {}, {0, 2}), (std::vector<int>{1}));
  EXPECT_EQ(DeniedGpuMinors({0, 1}, {5, -1}, {}), (std::vector<int>{5, 1}));
  EXPECT_TRUE(DeniedGpuMinors({0, 1}, {1, 0}, {0, 1}).empty());
}

TEST(FindCgroupMountsTest, ReadsControllersFromMountOptions) {
  const char kMounts[] =
      "sysfs /sys sysfs rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
      "cgroup /sys/fs/cgroup/devices cgroup rw,devices 0 0\n"
      "cgroup /sys/fs/cgroup/pids cgroup rw,nosuid,pids 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
  auto mounts = FindCgroupMounts(kMounts);
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(mounts->at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts->at("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(mounts->at("pids"), "/sys/fs/cgroup/pids");
  EXPECT_EQ(mounts->size(), 5u);
  // Without a pids hierarchy (cgroup2 only, say): says which is missing.
  auto partial = FindCgroupMounts(
      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
      "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("cpuset"), std::string::npos)
      << partial.status();
}

// The parameter: the cgroup version.
class TaskCgroupTest : public testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
    const std::string text = Slurp("/proc/self/mounts");
    auto mounts =
        GetParam() == 2 ? FindCgroup2Mount(text) : FindCgroupMounts(text);
    if (!mounts.ok()) GTEST_SKIP() << mounts.status();
    mounts_ = *mounts;
    if (IsCgroup2(mounts_)) {
      auto offered = Cgroup2Controllers(mounts_.at(kCgroup2));
      ASSERT_TRUE(offered.ok()) << offered.status();
      offered_ = *offered;
    }
    // One folder per test process, removed by it alone: tests run in
    // parallel, and one removing a shared folder another was making in
    // would fail the other.
    parent_ = absl::StrCat("tiresias-test-", getpid());
  }
  void TearDown() override {
    if (mounts_.empty()) return;
    TaskCgroup::RemoveStale(mounts_, parent_, {}).IgnoreError();
    for (const auto& [controller, mount] : mounts_) {
      rmdir(absl::StrCat(mount, "/", parent_).c_str());
    }
  }

  // On v2, whether the hierarchy offers `controller` (v1: always).
  bool Offers(const std::string& controller) const {
    return !IsCgroup2(mounts_) || offered_.contains(controller);
  }

  std::unique_ptr<TaskCgroup> Make(const std::string& name,
                                   const CgroupLimits& limits) {
    auto group = TaskCgroup::Create(mounts_, parent_, name, limits);
    EXPECT_TRUE(group.ok()) << group.status();
    return group.ok() ? *std::move(group) : nullptr;
  }

  // Forks a child that joins `group` itself (OpenProcsFiles, JoinSelf)
  // and then runs `body`, whose return value is its exit code; waits for
  // it. Returns the wait status.
  template <typename Body>
  int RunInside(const TaskCgroup& group, Body body) {
    auto fds = group.OpenProcsFiles();
    EXPECT_TRUE(fds.ok()) << fds.status();
    if (!fds.ok()) return -1;
    const pid_t child = fork();
    if (child == 0) {
      if (!JoinSelf(*fds)) _exit(120);
      _exit(body());
    }
    for (int fd : *fds) close(fd);
    int status = 0;
    waitpid(child, &status, 0);
    return status;
  }

  std::map<std::string, std::string> mounts_;
  std::set<std::string> offered_;
  std::string parent_;
};

INSTANTIATE_TEST_SUITE_P(Versions, TaskCgroupTest, testing::Values(1, 2),
                         [](const testing::TestParamInfo<int>& info) {
                           return absl::StrCat("V", info.param);
                         });

TEST_P(TaskCgroupTest, ATaskPastItsMemoryIsKilledAndTheKillIsCounted) {
  if (!Offers("memory")) GTEST_SKIP() << "the v2 hierarchy has no memory";
  CgroupLimits limits;
  limits.memory_bytes = 32 << 20;
  auto group = Make("memory-hog", limits);
  ASSERT_NE(group, nullptr);
  const int status = RunInside(*group, [] {
    const size_t size = 256 << 20;
    // volatile: the compiler may not drop writes nobody reads.
    volatile char* block = static_cast<char*>(malloc(size));
    if (block == nullptr) return 3;
    for (size_t i = 0; i < size; i += 4096) block[i] = 1;
    return 0;  // survived: the limit did nothing
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  auto usage = group->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->oom_kills, 1);
  EXPECT_GT(usage->memory_peak_bytes, 16 << 20);
  EXPECT_LE(usage->memory_peak_bytes, 32 << 20);
  EXPECT_TRUE(group->Remove().ok());
  for (const std::string& dir : group->dirs()) EXPECT_FALSE(fs::exists(dir));
}

TEST_P(TaskCgroupTest, ATaskWithinItsMemoryRunsAndIsNotCountedAsKilled) {
  if (!Offers("memory")) GTEST_SKIP() << "the v2 hierarchy has no memory";
  CgroupLimits limits;
  limits.memory_bytes = 64 << 20;
  auto group = Make("fits", limits);
  ASSERT_NE(group, nullptr);
  const int status = RunInside(*group, [] {
    const size_t size = 8 << 20;
    volatile char* block = static_cast<char*>(malloc(size));
    for (size_t i = 0; block != nullptr && i < size; i += 4096) block[i] = 1;
    return block == nullptr ? 3 : 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto usage = group->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->oom_kills, 0);
  EXPECT_GE(usage->memory_peak_bytes, 8 << 20);
  EXPECT_GE(usage->cpu_seconds, 0.0);
}

TEST_P(TaskCgroupTest, ATaskRunsOnlyOnItsCpusAndForksOnlyItsPids) {
  if (!Offers("cpuset") || !Offers("pids")) {
    GTEST_SKIP() << "the v2 hierarchy lacks cpuset or pids";
  }
  CgroupLimits limits;
  limits.cpus = {0};
  limits.pids = 3;  // itself and two more
  auto group = Make("cpus-pids", limits);
  ASSERT_NE(group, nullptr);
  const int status = RunInside(*group, [] {
    std::ifstream in("/proc/self/status");
    std::string line, cpus;
    while (std::getline(in, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        cpus = line.substr(line.find_first_not_of(" \t", line.find(':') + 1));
      }
    }
    if (cpus != "0") return 4;
    std::vector<pid_t> made;
    int refused = 0;
    for (int i = 0; i < 5; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        pause();
        _exit(0);
      }
      if (pid > 0) made.push_back(pid);
      if (pid < 0 && errno == EAGAIN) ++refused;
    }
    for (pid_t pid : made) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    return made.size() == 2 && refused == 3 ? 0 : 5;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "4: not on CPU 0 alone; 5: forks";
}

TEST_P(TaskCgroupTest, ATaskCannotOpenTheGpusItWasNotGiven) {
  test_support::TestDir dir;
  // Device nodes of GPUs 0 and 1 (no driver here: opening an allowed one
  // fails ENXIO, a denied one EPERM).
  for (int minor : {0, 1}) {
    const std::string path = dir.File(absl::StrCat("nvidia", minor));
    ASSERT_EQ(mknod(path.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)),
              0)
        << std::strerror(errno);
  }
  CgroupLimits limits;
  limits.denied_gpu_minors = {1};
  auto group = Make("gpu0", limits);
  ASSERT_NE(group, nullptr);
  const std::string gpu0 = dir.File("nvidia0");
  const std::string gpu1 = dir.File("nvidia1");
  const int status = RunInside(*group, [&] {
    const int fd0 = open(gpu0.c_str(), O_RDWR);
    const int errno0 = fd0 < 0 ? errno : 0;
    const int fd1 = open(gpu1.c_str(), O_RDWR);
    const int errno1 = fd1 < 0 ? errno : 0;
    if (errno0 == EPERM) return 6;              // its own GPU was denied
    if (fd1 >= 0 || errno1 != EPERM) return 7;  // another's was not
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Outside the group both open as far as the missing driver allows.
  const int fd1 = open(gpu1.c_str(), O_RDWR);
  EXPECT_TRUE(fd1 >= 0 || errno != EPERM);
  if (fd1 >= 0) close(fd1);
}

TEST_P(TaskCgroupTest, StaleGroupsGoButBusyAndKeptOnesStay) {
  auto stale = Make("job-1-1-0", {});
  auto kept = Make("job-2-1-0", {});
  auto busy = Make("job-3-1-0", {});
  ASSERT_TRUE(stale && kept && busy);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    char byte;
    close(pipe_fds[1]);
    read(pipe_fds[0], &byte, 1);  // until the parent closes its end
    _exit(0);
  }
  close(pipe_fds[0]);
  ASSERT_TRUE(busy->Join(child).ok());
  auto removed = TaskCgroup::RemoveStale(mounts_, parent_, {"job-2-1-0"});
  ASSERT_TRUE(removed.ok()) << removed.status();
  for (const std::string& dir : stale->dirs()) EXPECT_FALSE(fs::exists(dir));
  for (const std::string& dir : kept->dirs()) EXPECT_TRUE(fs::exists(dir));
  for (const std::string& dir : busy->dirs()) EXPECT_TRUE(fs::exists(dir));
  EXPECT_EQ(busy->Remove().code(), absl::StatusCode::kFailedPrecondition);
  close(pipe_fds[1]);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(busy->Remove().ok());
  EXPECT_TRUE(kept->Remove().ok());
}

TEST_P(TaskCgroupTest, BadNamesAreRefused) {
  for (const char* name : {"../escape", "a/b", "", "."}) {
    auto group = TaskCgroup::Create(mounts_, parent_, name, {});
    EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
}

}  // namespace
}  // namespace tiresias
