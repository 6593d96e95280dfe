// A shared node's isolation judged from inside the jobs (issue 23): a real
// master and a real agent as root with cgroups on (the default when it can
// make them), 2 emulated GPUs, and real task processes. What a job could
// open, how much memory it got, and where it ran are what the job itself
// wrote to its log. Needs root and the v1 hierarchies (as this machine and
// CI have); elsewhere each test says why it skips. AgentIsolationV2Test
// runs the agent on the v2 hierarchy (--cgroups v2) instead.
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/agent_daemon.h"
#include "agent/agent_testing.h"
#include "agent/cgroups.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using std::chrono::seconds;
using ::testing::HasSubstr;

class AgentIsolationTest : public testing::Test {
 protected:
  // Which hierarchy the agent is told to use.
  virtual AgentOptions::Cgroups Which() const {
    return AgentOptions::Cgroups::kOn;
  }
  // The last word on the agent's options.
  virtual void Configure(AgentOptions&) {}

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
    std::ifstream in("/proc/self/mounts");
    std::stringstream mounts;
    mounts << in.rdbuf();
    const bool v2 = Which() == AgentOptions::Cgroups::kV2;
    auto found =
        v2 ? FindCgroup2Mount(mounts.str()) : FindCgroupMounts(mounts.str());
    if (!found.ok()) GTEST_SKIP() << found.status();
    mounts_ = *found;
    // Memory limits where the hierarchy offers them.
    bool memory = !v2;
    if (v2) {
      auto offered = Cgroup2Controllers(mounts_.at(kCgroup2));
      ASSERT_TRUE(offered.ok()) << offered.status();
      memory = offered->contains("memory");
    }
    std::filesystem::create_directories(dir_.path() / "master");
    MasterOptions options;
    options.state_dir = dir_.File("master");
    options.checkpoint_base = dir_.File("checkpoints");
    options.policy = "tiresias-l";
    options.queues = *QueueConfig::Create({3600.0});
    options.heartbeat_interval = Seconds{0.1};
    options.node_timeout = Seconds{60};
    auto state = MasterState::Open(options, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    auto server = MasterServer::Start(state_.get(), &clock_, "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    AgentOptions agent;
    agent.master_address = absl::StrCat("127.0.0.1:", server_->port());
    agent.node_name = absl::StrCat("iso-", getpid());
    agent.emulate_gpus = 2;
    agent.state_dir = dir_.File("agent");
    agent.grace = seconds(3);
    agent.allow_root_tasks = true;
    agent.cgroups = Which();
    agent.memory_per_gpu_bytes = memory ? 64 << 20 : 0;
    Configure(agent);
    agent_options_ = agent;
    agent.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(std::string(line));
    };
    agent_ = std::make_unique<AgentDaemon>(std::move(agent));
    ASSERT_TRUE(agent_->Start().ok());
    ASSERT_TRUE(WaitUntil([&] { return agent_->node_id() != 0; }));
    parent_ = agent_->cgroup_parent();
    ASSERT_THAT(parent_, ::testing::StartsWith(
                             absl::StrCat("tiresias/iso-", getpid(), "-")));
  }

  void TearDown() override {
    if (agent_ != nullptr) {
      EXPECT_TRUE(
          WaitUntil([&] { return agent_->task_count() == 0; }, seconds(5)));
      agent_.reset();
    }
    if (server_) server_->Shutdown();
    for (const auto& [controller, mount] : mounts_) {
      if (!parent_.empty()) rmdir(absl::StrCat(mount, "/", parent_).c_str());
    }
    if (HasFailure()) {
      std::lock_guard<std::mutex> lock(log_mu_);
      for (const std::string& line : log_) {
        std::fprintf(stderr, "agent: %s\n", line.c_str());
      }
    }
  }

  JobId Submit(const std::string& script, int gpus = 1) {
    JobRequest req;
    req.name = "iso";
    req.user = "root";
    req.num_gpus = gpus;
    req.command = {"/bin/sh", "-c", script};
    auto id = state_->SubmitJob(req);
    EXPECT_TRUE(id.ok()) << id.status();
    server_->Notify();
    return id.ok() ? *id : 0;
  }

  // The job's last event says the kernel killed it at its memory limit.
  void ExpectEndedOutOfMemory(JobId id) {
    auto full = state_->GetJob(id);
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_FALSE(full->events.empty());
    EXPECT_THAT(full->events.back().detail, HasSubstr("out of memory"))
        << full->events.back().detail;
  }

  // Makes char devices 195:0 and 195:1 (the node's GPUs' minors) in the
  // test's folder; returns Python lines (`os` imported) that try to open
  // each and print `label` (an expression of n, the minor) and "opened",
  // "refused" (EPERM) or "not-refused".
  std::string OpenGpusProbe(const std::string& label);
  // Runs a job given one GPU of two that tries to open both; its log.
  std::string RunGpuProbe(JobId* id);

  JobRecord WaitEnded(JobId id) {
    JobRecord job;
    EXPECT_TRUE(WaitUntil(
        [&] {
          auto rec = state_->GetJob(id);
          if (rec.ok()) job = *rec;
          return rec.ok() && IsFinal(rec->state);
        },
        seconds(20)));
    return job;
  }

  std::string Log(JobId id) {
    return ReadFile(dir_.File(
        absl::StrCat("agent/logs/job-", id, "-attempt-1-rank-0.log")));
  }

  TestDir dir_;
  master::RealClock clock_;
  std::map<std::string, std::string> mounts_;
  std::string parent_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<AgentDaemon> agent_;
  AgentOptions agent_options_;  // what agent_ was started with
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// The job is given one of the node's two GPUs: from inside, its own
// device node opens as far as the (absent) driver allows, the other's is
// refused (EPERM), whichever path the node has; /proc/self/cgroup names
// the job's groups; and they are gone once it ended.
std::string AgentIsolationTest::OpenGpusProbe(const std::string& label) {
  for (int minor : {0, 1}) {
    const std::string path = dir_.File(absl::StrCat("nvidia", minor));
    EXPECT_EQ(mknod(path.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)),
              0);
  }
  return absl::StrCat(
      "for n in (0, 1):\n"
      "    try:\n"
      "        os.close(os.open('",
      dir_.File("nvidia"),
      "%d' % n, os.O_RDWR))\n"
      "        how = 'opened'\n"
      "    except OSError as e:\n"
      "        how = 'refused' if e.errno == 1 else 'not-refused'\n"
      "    print(",
      label, ", how)\n");
}

std::string AgentIsolationTest::RunGpuProbe(JobId* id) {
  const std::string probe = absl::StrCat(
      "import os\n"
      "mine = int(os.environ['CUDA_VISIBLE_DEVICES'])\n",
      OpenGpusProbe("('mine' if n == mine else 'other')"),
      "print(open('/proc/self/cgroup').read())\n");
  std::ofstream(dir_.File("probe.py")) << probe;
  *id = Submit(absl::StrCat("/usr/bin/python3 ", dir_.File("probe.py")));
  const JobRecord job = WaitEnded(*id);
  EXPECT_EQ(job.state, JobRecordState::kFinished) << Log(*id);
  const std::string log = Log(*id);
  EXPECT_THAT(log, HasSubstr("mine not-refused\n"));  // ENXIO: no driver
  EXPECT_THAT(log, HasSubstr("other refused\n"));     // EPERM
  const std::string group = absl::StrCat(mounts_.begin()->second, "/", parent_,
                                         "/", TaskCgroupName(*id, 1, 0));
  EXPECT_TRUE(
      WaitUntil([&] { return !std::filesystem::exists(group); }, seconds(5)))
      << group;
  return log;
}

TEST_F(AgentIsolationTest, AJobCannotOpenTheGpuItWasNotGiven) {
  JobId id = 0;
  const std::string log = RunGpuProbe(&id);
  EXPECT_THAT(log, HasSubstr(absl::StrCat(":devices:/", parent_, "/",
                                          TaskCgroupName(id, 1, 0))));
  EXPECT_THAT(log, HasSubstr(absl::StrCat(":memory:/", parent_, "/",
                                          TaskCgroupName(id, 1, 0))));
}

// A job past its memory (64 MiB per GPU, one GPU) is killed by the kernel,
// and its failure says out of memory; a job within it finishes.
TEST_F(AgentIsolationTest, AJobPastItsMemoryFailsOutOfMemory) {
  const JobId hog = Submit(
      "/usr/bin/python3 -c \"b = b'x' * (512 << 20); print('survived')\"");
  const JobRecord job = WaitEnded(hog);
  EXPECT_EQ(job.state, JobRecordState::kFailed);
  EXPECT_EQ(job.exit_code, 137);  // SIGKILL
  EXPECT_THAT(Log(hog), ::testing::Not(HasSubstr("survived")));
  ExpectEndedOutOfMemory(hog);

  const JobId fits =
      Submit("/usr/bin/python3 -c \"b = b'x' * (8 << 20); print('fits')\"");
  const JobRecord ok = WaitEnded(fits);
  EXPECT_EQ(ok.state, JobRecordState::kFinished) << Log(fits);
  EXPECT_THAT(Log(fits), HasSubstr("fits"));
}

// A task killed at its memory limit while no agent ran (stopped, its tasks
// kept): the next agent on the state dir still reports it out of memory,
// with what it used, from the group the task left behind.
TEST_F(AgentIsolationTest, AnOutOfMemoryKillWhileNoAgentRanIsStillReported) {
  const std::string go = dir_.File("go");
  const JobId hog = Submit(absl::StrCat(
      "while [ ! -e ", go, " ]; do sleep 0.05; done; ",
      "/usr/bin/python3 -c \"b = b'x' * (512 << 20); print('survived')\""));
  ASSERT_TRUE(WaitUntil([&] {
    auto rec = state_->GetJob(hog);
    return rec.ok() && rec->state == JobRecordState::kRunning;
  }));
  agent_->Stop();
  agent_.reset();
  std::ofstream(go) << "1";
  // The kernel kills it meanwhile: its group holds no process once it ended.
  const std::string group = absl::StrCat(mounts_.at("memory"), "/", parent_,
                                         "/", TaskCgroupName(hog, 1, 0));
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFile(group + "/cgroup.procs").empty(); }, seconds(20)));
  agent_ = std::make_unique<AgentDaemon>(agent_options_);
  ASSERT_TRUE(agent_->Start().ok());
  const JobRecord job = WaitEnded(hog);
  EXPECT_EQ(job.state, JobRecordState::kFailed) << Log(hog);
  EXPECT_THAT(Log(hog), ::testing::Not(HasSubstr("survived")));
  ExpectEndedOutOfMemory(hog);
  EXPECT_GT(job.max_memory_bytes, int64_t{32} << 20);
  EXPECT_FALSE(std::filesystem::exists(group));  // removed by the new agent
}

// What the job used, as its cgroups measured it, reaches its record: CPU
// time it burnt (about half a second) and the memory it touched (24 MiB).
TEST_F(AgentIsolationTest, WhatAJobUsedIsInItsRecord) {
  const JobId id = Submit(
      "/usr/bin/python3 -c \"import time\n"
      "b = bytearray(24 << 20)\n"
      "for i in range(0, len(b), 4096): b[i] = 1\n"
      "t = time.process_time()\n"
      "while time.process_time() - t < 0.5: pass\n"
      "print('done')\"");
  const JobRecord job = WaitEnded(id);
  EXPECT_EQ(job.state, JobRecordState::kFinished) << Log(id);
  EXPECT_GE(job.cpu_seconds, 0.4) << Log(id);
  EXPECT_LT(job.cpu_seconds, 30.0);
  EXPECT_GE(job.max_memory_bytes, int64_t{24} << 20);
  EXPECT_LE(job.max_memory_bytes, int64_t{64} << 20);  // its limit
}

// Two 1-GPU jobs at once each run on their GPU's own CPUs, and a 2-GPU
// job on both blocks, as seen from inside (sched_getaffinity); the
// blocks are this machine's CPUs (those the test may use) shared by 2.
TEST_F(AgentIsolationTest, EachJobRunsOnItsGpusCpus) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  std::vector<int> node_cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mine)) node_cpus.push_back(cpu);
  }
  auto expected = [&](std::vector<int> gpus) {
    return absl::StrCat(
        "[", absl::StrJoin(CpusForGpus(node_cpus, 2, gpus, 0), ", "), "]");
  };
  const std::string probe =
      "/usr/bin/python3 -c \"import os, time; time.sleep(0.5); "
      "print('gpus', os.environ['CUDA_VISIBLE_DEVICES'], 'cpus', "
      "sorted(os.sched_getaffinity(0)))\"";
  const JobId a = Submit(probe);
  const JobId b = Submit(probe);
  for (JobId id : {a, b}) {
    EXPECT_EQ(WaitEnded(id).state, JobRecordState::kFinished) << Log(id);
  }
  for (JobId id : {a, b}) {
    const std::string log = Log(id);
    const int gpu = log.find("gpus 1 ") != std::string::npos ? 1 : 0;
    EXPECT_THAT(log, HasSubstr(absl::StrCat("gpus ", gpu, " cpus ",
                                            expected({gpu}), "\n")));
  }
  EXPECT_NE(Log(a).substr(0, 7), Log(b).substr(0, 7));  // two GPUs
  const JobId both = Submit(probe, 2);
  EXPECT_EQ(WaitEnded(both).state, JobRecordState::kFinished) << Log(both);
  EXPECT_THAT(Log(both),
              HasSubstr(absl::StrCat("cpus ", expected({0, 1}), "\n")));
}

// An agent keeping its last CPU for CPU-only jobs (--spare-cpus 1): the
// master hears of it, and a CPU-only job runs bound to that CPU with no
// GPU (both of the node's refused), under its own memory limit (past it:
// out of memory).
class AgentIsolationSpareTest : public AgentIsolationTest {
 protected:
  void Configure(AgentOptions& agent) override {
    agent.spare_cpus = 1;
    agent.spare_memory_bytes = 256 << 20;
  }

  JobId SubmitCpuOnly(const std::string& script, int64_t mem_mib) {
    JobRequest req;
    req.name = "cpu";
    req.user = "root";
    req.num_gpus = 0;
    req.cpus = 1;
    req.mem_mib = mem_mib;
    req.command = {"/bin/sh", "-c", script};
    auto id = state_->SubmitJob(req);
    EXPECT_TRUE(id.ok()) << id.status();
    server_->Notify();
    return id.ok() ? *id : 0;
  }
};

TEST_F(AgentIsolationSpareTest, ACpuOnlyJobRunsOnTheSpareCpuWithoutGpus) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mine)) last = cpu;
  }
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto nodes = state_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].spare_cpus(), 1);
  EXPECT_EQ((*nodes)[0].spare_memory_mib(), 256);
  const std::string probe = absl::StrCat(
      "import os\n"
      "print('cuda [%s]' % os.environ.get('CUDA_VISIBLE_DEVICES'))\n"
      "print('cpus', sorted(os.sched_getaffinity(0)))\n",
      OpenGpusProbe("'gpu', n"));
  std::ofstream(dir_.File("probe.py")) << probe;
  const JobId id = SubmitCpuOnly(
      absl::StrCat("/usr/bin/python3 ", dir_.File("probe.py")), 0);
  EXPECT_EQ(WaitEnded(id).state, JobRecordState::kFinished) << Log(id);
  const std::string log = Log(id);
  EXPECT_THAT(log, HasSubstr("cuda []\n"));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("cpus [", last, "]\n")));
  EXPECT_THAT(log, HasSubstr("gpu 0 refused\n"));
  EXPECT_THAT(log, HasSubstr("gpu 1 refused\n"));

  const JobId big =
      SubmitCpuOnly("exec /usr/bin/python3 -c \"x = 'x' * (96 << 20)\"", 32);
  EXPECT_EQ(WaitEnded(big).state, JobRecordState::kFailed) << Log(big);
  ExpectEndedOutOfMemory(big);
}

// The same agent on the unified hierarchy (--cgroups v2): the other GPU
// is refused by the eBPF device filter, the job's one group is named in
// /proc/self/cgroup ("0::/..."), and it goes once the job ended.
class AgentIsolationV2Test : public AgentIsolationTest {
 protected:
  AgentOptions::Cgroups Which() const override {
    return AgentOptions::Cgroups::kV2;
  }
};

TEST_F(AgentIsolationV2Test, AJobCannotOpenTheGpuItWasNotGiven) {
  JobId id = 0;
  const std::string log = RunGpuProbe(&id);
  EXPECT_THAT(log, HasSubstr(absl::StrCat("0::/", parent_, "/",
                                          TaskCgroupName(id, 1, 0), "\n")));
}

// Without --mem-per-gpu, a task that asks no memory is held to its GPUs'
// equal shares of what the node offers (--memory 128M over 2 GPUs: 64M
// each), so that it cannot take memory the master promised another job.
class AgentIsolationDefaultMemoryTest : public AgentIsolationTest {
 protected:
  void Configure(AgentOptions& agent) override {
    agent.memory_per_gpu_bytes = 0;
    agent.memory_mib = 128;
  }
};

TEST_F(AgentIsolationDefaultMemoryTest, ATaskGetsItsGpusShareOfMemory) {
  const JobId hog = Submit(
      "/usr/bin/python3 -c \"b = b'x' * (256 << 20); print('survived')\"");
  const JobRecord job = WaitEnded(hog);
  EXPECT_EQ(job.state, JobRecordState::kFailed) << Log(hog);
  EXPECT_THAT(Log(hog), ::testing::Not(HasSubstr("survived")));
  const JobId fits =
      Submit("/usr/bin/python3 -c \"b = b'x' * (8 << 20); print('fits')\"");
  EXPECT_EQ(WaitEnded(fits).state, JobRecordState::kFinished) << Log(fits);
}

}  // namespace
}  // namespace tiresias
