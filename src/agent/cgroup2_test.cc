// The cgroup v2 back end's parts that do not need a process inside:
// the eBPF device program (run here by a small interpreter of the few
// instructions it uses, over every case that matters), the mount and
// controller discovery, the interface files written for each limit (on a
// folder tree standing in for the kernel's, since this machine's v2
// hierarchy offers few controllers), and the refusal of a limit whose
// controller the real hierarchy lacks. cgroups_test.cc runs real
// processes in real v2 groups.
#include <linux/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/cgroups.h"
#include "agent/device_filter.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `program` on a bpf_cgroup_dev_ctx as the kernel would, for the
// instructions DeviceFilterProgram emits; -1 on anything else (or a jump
// out of the program).
int RunFilter(const std::vector<bpf_insn>& program, uint32_t access_type,
              uint32_t major, uint32_t minor) {
  const uint32_t ctx[3] = {access_type, major, minor};
  uint64_t r[11] = {0};
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const bpf_insn& i = program[pc];
    switch (i.code) {
      case BPF_LDX | BPF_W | BPF_MEM:
        if (i.src_reg != BPF_REG_1 || i.off % 4 != 0 || i.off < 0 ||
            i.off > 8) {
          return -1;
        }
        r[i.dst_reg] = ctx[i.off / 4];
        break;
      case BPF_ALU64 | BPF_AND | BPF_K:
        r[i.dst_reg] &= static_cast<uint64_t>(static_cast<int64_t>(i.imm));
        break;
      case BPF_ALU64 | BPF_MOV | BPF_K:
        r[i.dst_reg] = static_cast<uint64_t>(static_cast<int64_t>(i.imm));
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (r[i.dst_reg] != static_cast<uint64_t>(i.imm)) pc += i.off;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        if (r[i.dst_reg] == static_cast<uint64_t>(i.imm)) pc += i.off;
        break;
      case BPF_JMP | BPF_EXIT:
        return static_cast<int>(r[BPF_REG_0]);
      default:
        return -1;
    }
  }
  return -1;  // fell off the end
}

constexpr uint32_t Access(uint32_t access, uint32_t type) {
  return (access << 16) | type;
}

// Only the listed minors of char major 195 are refused, for every access
// (read, write, mknod); block devices, other majors and other minors pass.
TEST(DeviceFilterProgramTest, RefusesExactlyTheListedGpus) {
  for (const std::vector<int>& denied :
       {std::vector<int>{}, std::vector<int>{1}, std::vector<int>{0, 2, 7},
        std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10}}) {
    const std::vector<bpf_insn> program =
        DeviceFilterProgram(kNvidiaMajor, denied);
    EXPECT_EQ(program.size(), 10 + denied.size());
    for (uint32_t minor = 0; minor < 12; ++minor) {
      const bool listed =
          std::find(denied.begin(), denied.end(), minor) != denied.end();
      for (uint32_t access : std::vector<uint32_t>{
               BPF_DEVCG_ACC_READ, BPF_DEVCG_ACC_WRITE, BPF_DEVCG_ACC_MKNOD,
               BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE}) {
        EXPECT_EQ(
            RunFilter(program, Access(access, BPF_DEVCG_DEV_CHAR), 195, minor),
            listed ? 0 : 1)
            << "minor " << minor << " of " << denied.size();
        EXPECT_EQ(
            RunFilter(program, Access(access, BPF_DEVCG_DEV_BLOCK), 195, minor),
            1);
        EXPECT_EQ(
            RunFilter(program, Access(access, BPF_DEVCG_DEV_CHAR), 1, minor),
            1);  // /dev/null, /dev/zero ...
      }
    }
    // nvidiactl (195:255) and nvidia-modeset (195:254) stay usable.
    EXPECT_EQ(RunFilter(program, Access(BPF_DEVCG_ACC_READ, BPF_DEVCG_DEV_CHAR),
                        195, 255),
              1);
  }
}

TEST(FindCgroup2MountTest, FindsTheUnifiedHierarchy) {
  auto hybrid = FindCgroup2Mount(
      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n");
  ASSERT_TRUE(hybrid.ok()) << hybrid.status();
  EXPECT_TRUE(IsCgroup2(*hybrid));
  EXPECT_EQ(hybrid->at(kCgroup2), "/sys/fs/cgroup/unified");
  EXPECT_EQ(hybrid->size(), 1u);
  auto none =
      FindCgroup2Mount("cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(IsCgroup2({{"memory", "/sys/fs/cgroup/memory"}}));
}

// A stand-in for a v2 hierarchy offering cpuset, cpu, memory and pids:
// the interface files are plain files the test made, so what Create
// wrote can be read back.
class Cgroup2FilesTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.File("unified");
    for (const std::string& d :
         {root_, root_ + "/tiresias", root_ + "/tiresias/node-a",
          root_ + "/tiresias/node-a/job-7-1-0"}) {
      std::filesystem::create_directories(d);
      std::ofstream(d + "/cgroup.subtree_control");
    }
    std::ofstream(root_ + "/cgroup.controllers") << "cpuset cpu io memory "
                                                    "pids\n";
    for (const char* file : {"cpuset.cpus", "cpu.max", "memory.max",
                             "memory.swap.max", "pids.max"}) {
      std::ofstream(Leaf(file));
    }
  }
  std::string Leaf(const std::string& file) const {
    return root_ + "/tiresias/node-a/job-7-1-0/" + file;
  }

  test_support::TestDir dir_;
  std::string root_;
};

TEST_F(Cgroup2FilesTest, EachLimitGoesInItsFileAndParentsEnableIt) {
  CgroupLimits limits;
  limits.cpus = {2, 3};
  limits.cpu_quota_cpus = 2;
  limits.memory_bytes = 64 << 20;
  limits.pids = 64;
  auto group = TaskCgroup::Create({{kCgroup2, root_}}, "tiresias/node-a",
                                  "job-7-1-0", limits);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)->dirs(),
            std::vector<std::string>{root_ + "/tiresias/node-a/job-7-1-0"});
  EXPECT_EQ(Slurp(Leaf("cpuset.cpus")), "2,3");
  EXPECT_EQ(Slurp(Leaf("cpu.max")), "200000 100000");
  EXPECT_EQ(Slurp(Leaf("memory.max")), "67108864");
  EXPECT_EQ(Slurp(Leaf("memory.swap.max")), "0");
  EXPECT_EQ(Slurp(Leaf("pids.max")), "64");
  for (const std::string& level :
       {root_, root_ + "/tiresias", root_ + "/tiresias/node-a"}) {
    EXPECT_EQ(Slurp(level + "/cgroup.subtree_control"),
              "+cpuset +cpu +memory +pids")
        << level;
  }
  // The task's own folder enables nothing: processes live in it.
  EXPECT_EQ(Slurp(Leaf("cgroup.subtree_control")), "");
}

TEST_F(Cgroup2FilesTest, UsageAndOomKillsComeFromTheV2Files) {
  std::ofstream(Leaf("cpu.stat")) << "usage_usec 1500000\nuser_usec 1000000\n"
                                     "system_usec 500000\n";
  std::ofstream(Leaf("memory.peak")) << "123456789\n";
  std::ofstream(Leaf("memory.events")) << "low 0\nhigh 0\nmax 4\noom 1\n"
                                          "oom_kill 1\noom_group_kill 0\n";
  auto group =
      TaskCgroup::Open({{kCgroup2, root_}}, "tiresias/node-a", "job-7-1-0");
  ASSERT_TRUE(group.ok()) << group.status();
  auto usage = (*group)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 1.5);
  EXPECT_EQ(usage->memory_peak_bytes, 123456789);
  EXPECT_EQ(usage->oom_kills, 1);
  // Without the memory controller's files: no peak, no kills, no error.
  std::filesystem::remove(Leaf("memory.peak"));
  std::filesystem::remove(Leaf("memory.events"));
  usage = (*group)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->memory_peak_bytes, 0);
  EXPECT_EQ(usage->oom_kills, 0);
}

TEST_F(Cgroup2FilesTest, ALimitWithoutItsControllerIsAnErrorNamingIt) {
  std::ofstream(root_ + "/cgroup.controllers") << "cpu io pids\n";
  CgroupLimits limits;
  limits.memory_bytes = 64 << 20;
  auto group = TaskCgroup::Create({{kCgroup2, root_}}, "tiresias/node-a",
                                  "job-8-1-0", limits);
  ASSERT_EQ(group.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(group.status().message(), HasSubstr("no memory controller"));
  EXPECT_THAT(group.status().message(), HasSubstr("\"cpu io pids\""));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/tiresias/node-a/job-8-1-0"));
  // v1 has no quota: it binds CPUs instead.
  CgroupLimits quota;
  quota.cpu_quota_cpus = 1;
  std::map<std::string, std::string> v1;
  for (const char* controller : kTaskControllers) v1[controller] = root_;
  EXPECT_EQ(TaskCgroup::Create(v1, "tiresias", "x", quota).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// On the machine's own v2 hierarchy: a limit it cannot hold is refused
// before anything is made (this machine's offers no memory controller; a
// host whose does skips).
TEST(Cgroup2RealTest, AMemoryLimitWithoutTheControllerIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
  auto mounts = FindCgroup2Mount(Slurp("/proc/self/mounts"));
  if (!mounts.ok()) GTEST_SKIP() << mounts.status();
  auto offered = Cgroup2Controllers(mounts->at(kCgroup2));
  ASSERT_TRUE(offered.ok()) << offered.status();
  if (offered->contains("memory")) GTEST_SKIP() << "memory is offered here";
  CgroupLimits limits;
  limits.memory_bytes = 64 << 20;
  const std::string parent = absl::StrCat("tiresias-test2-", getpid());
  auto group = TaskCgroup::Create(*mounts, parent, "job-1-1-0", limits);
  EXPECT_EQ(group.status().code(), absl::StatusCode::kFailedPrecondition)
      << group.status();
  EXPECT_THAT(group.status().message(), HasSubstr("no memory controller"));
  EXPECT_FALSE(std::filesystem::exists(
      absl::StrCat(mounts->at(kCgroup2), "/", parent, "/job-1-1-0")));
  rmdir(absl::StrCat(mounts->at(kCgroup2), "/", parent).c_str());
}

}  // namespace
}  // namespace tiresias
