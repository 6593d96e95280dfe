// The master's scheduling pass (MasterState::RunPass: the scheduler's
// decisions, launches, one durable SQLite transaction) with many agents and
// a deep backlog, in-process with a fake clock; the store is a real SQLite
// file (WAL, synchronous = FULL) on /dev/shm when it exists, else /tmp.
//
//   build/bench/master_pass_bench [--nodes 40] [--gpus 8] [--jobs 5000]
//                                 [--policy tiresias-l] [--repeat 20]
//                                 [--dir FOLDER]   (default /dev/shm)
//
// Prints, in milliseconds:
//   first pass   the backlog meets an empty cluster: every GPU is decided;
//   idle pass    nothing changed since the last pass (min, median);
//   churn pass   one job finished (its agent's report) and the freed GPU is
//                decided again: what a pass costs in steady state (median).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/clock.h"
#include "master/master_state.h"

namespace {

using tiresias::JobRequest;
using tiresias::MasterOptions;
using tiresias::MasterState;
using tiresias::Seconds;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Node {
  int64_t id = 0;
  uint64_t session = 0;
  // Tasks it runs: what its heartbeats report.
  std::map<std::tuple<int64_t, int, int>, tiresias::v1::TaskStatus> tasks;
};

}  // namespace

int main(int argc, char** argv) {
  int nodes = 40, gpus = 8, jobs = 5000, repeat = 20;
  std::string policy = "tiresias-l";
  std::string root =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--gpus")) gpus = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--policy")) policy = argv[i + 1];
    else if (!std::strcmp(argv[i], "--dir")) root = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: master_pass_bench [--nodes N] [--gpus G] "
                           "[--jobs J] [--policy P] [--repeat R]\n");
      return 2;
    }
  }
  if (nodes < 1 || gpus < 1 || jobs < 1 || repeat < 1) {
    std::fprintf(stderr, "master_pass_bench: counts must be positive\n");
    return 2;
  }
  const std::string dir = absl::StrCat(root, "/tiresias-pass-bench-", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  tiresias::master::FakeClock clock{Seconds{1000}};
  MasterOptions options;
  options.state_dir = dir;
  options.policy = policy;
  auto opened = MasterState::Open(options, &clock);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  MasterState& master = **opened;
  std::vector<Node> agents(nodes);
  for (int n = 0; n < nodes; ++n) {
    tiresias::v1::RegisterRequest req;
    req.set_name(absl::StrCat("node-", n));
    req.set_address("127.0.0.1");
    req.set_gpus(gpus);
    req.set_agent_token(absl::StrCat("bench-agent-token-", n));
    auto resp = master.Register(req);
    if (!resp.ok()) return 1;
    agents[n].id = resp->node_id();
    agents[n].session = resp->session();
  }
  std::mt19937 rng(1);
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 8};
  for (int i = 0; i < jobs; ++i) {
    JobRequest spec;
    spec.num_gpus = std::min(gpus, sizes[rng() % 8]);
    spec.command = {"train"};
    if (!master.SubmitJob(spec).ok()) return 1;
  }
  // Every agent reports what it should run as running.
  auto beat = [&](Node& node) {
    tiresias::v1::HeartbeatRequest req;
    req.set_node_id(node.id);
    req.set_session(node.session);
    for (const auto& [key, t] : node.tasks) *req.add_tasks() = t;
    auto resp = master.Heartbeat(req);
    if (!resp.ok()) return false;
    for (const auto& ack : resp->acknowledged()) {
      node.tasks.erase({ack.job_id(), ack.attempt(), ack.rank()});
    }
    for (const auto& run : resp->desired().run()) {
      auto key = std::make_tuple(run.task().job_id(), run.task().attempt(),
                                 run.task().rank());
      if (node.tasks.contains(key)) continue;
      tiresias::v1::TaskStatus t;
      *t.mutable_task() = run.task();
      t.set_state(tiresias::v1::TASK_STATE_RUNNING);
      for (int g : run.gpu_indexes()) t.add_gpu_indexes(g);
      t.set_start_time(clock.NowUnixSeconds().count());
      node.tasks[key] = t;
    }
    return true;
  };

  auto running = [&] {
    auto listed = master.ListJobs(tiresias::JobRecordState::kStarting);
    auto run = master.ListJobs(tiresias::JobRecordState::kRunning);
    return (listed.ok() ? listed->size() : 0) + (run.ok() ? run->size() : 0);
  };
  auto begin = Clock::now();
  if (!master.RunPass().ok()) return 1;
  const double first_ms = Ms(Clock::now() - begin);
  const size_t first_started = running();
  for (Node& node : agents) {
    if (!beat(node) || !beat(node)) return 1;
  }
  std::vector<double> idle, churn;
  size_t churn_started = 0;
  for (int r = 0; r < repeat; ++r) {
    clock.Advance(Seconds{1});
    begin = Clock::now();
    if (!master.RunPass().ok()) return 1;
    idle.push_back(Ms(Clock::now() - begin));
  }
  for (int r = 0; r < repeat; ++r) {
    // One task of some node ends; its report frees the GPUs, a pass
    // decides them again.
    Node& node = agents[r % nodes];
    if (node.tasks.empty()) continue;
    auto& t = node.tasks.begin()->second;
    t.set_state(tiresias::v1::TASK_STATE_EXITED);
    t.set_exit_code(0);
    t.set_end_time(clock.NowUnixSeconds().count());
    clock.Advance(Seconds{1});
    if (!beat(node)) return 1;
    const size_t before = running();
    begin = Clock::now();
    if (!master.RunPass().ok()) return 1;
    churn.push_back(Ms(Clock::now() - begin));
    churn_started += running() - before;
    for (Node& n : agents) {
      if (!beat(n)) return 1;
    }
  }
  std::printf("%d nodes x %d GPUs, %d pending jobs, %s, store in %s\n",
              nodes, gpus, jobs, policy.c_str(), root.c_str());
  std::printf("  first pass  %8.2f ms (%zu jobs started, one transaction)\n",
              first_ms, first_started);
  std::printf("  idle pass   %8.3f ms min, %8.3f ms median\n",
              *std::min_element(idle.begin(), idle.end()), Median(idle));
  if (!churn.empty()) {
    std::printf("  churn pass  %8.3f ms min, %8.3f ms median (one job ended, "
                "its GPUs decided again: %zu starts in %zu passes)\n",
                *std::min_element(churn.begin(), churn.end()), Median(churn),
                churn_started, churn.size());
  }
  opened->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
