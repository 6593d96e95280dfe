// What the agent protocol costs the master at scale: bytes of each
// heartbeat answer and the master's CPU per heartbeat, with many emulated
// agents in steady state (every GPU busy, every task reported running), in
// one run for both kinds of agent:
//   whole  an agent that names no desired version (as before deltas): every
//          answer carries the node's whole desired state, commands and
//          environments included;
//   delta  an agent that names the version it holds
//          (HeartbeatRequest.desired_version): an answer carries only what
//          changed since (nothing, in steady state).
// In-process MasterState, fake clock, the store a real SQLite file on
// /dev/shm when it exists, else /tmp.
//
//   build/bench/heartbeat_bench [--nodes 1000] [--gpus 8] [--rounds 5]
//                               [--env 20] [--dir FOLDER]
//
// Prints, per kind: the median answer size in bytes, the total bytes of one
// round (every node beats once), and the master's median CPU time per
// heartbeat (thread CPU time around MasterState::Heartbeat), and the ratios.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/clock.h"
#include "master/master_state.h"

namespace {

using tiresias::JobRequest;
using tiresias::MasterOptions;
using tiresias::MasterState;
using tiresias::Seconds;

double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Node {
  int64_t id = 0;
  uint64_t session = 0;
  uint64_t held = 0;  // the desired version it holds (delta agents)
  std::map<std::tuple<int64_t, int, int>, tiresias::v1::TaskStatus> tasks;
};

struct Round {
  std::vector<double> bytes;   // per answer
  std::vector<double> cpu_us;  // per heartbeat
};

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1000, gpus = 8, rounds = 5, env = 20;
  std::string root = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes"))
      nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--gpus"))
      gpus = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--env"))
      env = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir"))
      root = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: heartbeat_bench [--nodes N] [--gpus G] "
                   "[--rounds R] [--env E] [--dir FOLDER]\n");
      return 2;
    }
  }
  if (nodes < 1 || gpus < 1 || rounds < 1 || env < 0) {
    std::fprintf(stderr,
                 "heartbeat_bench: --nodes, --gpus and --rounds must "
                 "be >= 1, --env >= 0\n");
    return 2;
  }
  const std::string dir =
      absl::StrCat(root, "/tiresias-heartbeat-bench-", getpid());
  std::filesystem::remove_all(dir);
  tiresias::master::FakeClock clock(Seconds{1000});
  MasterOptions options;
  options.state_dir = dir;
  options.node_timeout = Seconds{3600};
  options.max_nodes = nodes + 1;
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
    req.set_address(absl::StrCat("10.0.", n / 250, ".", n % 250, ":7000"));
    req.set_gpus(gpus);
    req.set_agent_token(absl::StrCat("bench-agent-token-", n));
    auto resp = master.Register(req);
    if (!resp.ok()) {
      std::fprintf(stderr, "%s\n", resp.status().ToString().c_str());
      return 1;
    }
    agents[n].id = resp->node_id();
    agents[n].session = resp->session();
  }
  // One 1-GPU job per GPU, each with a training command line and an
  // environment of `env` variables, as real jobs carry.
  for (int i = 0; i < nodes * gpus; ++i) {
    JobRequest spec;
    spec.num_gpus = 1;
    spec.command = {"/usr/bin/python3", "/home/alice/project/train.py",
                    "--model",          "resnet50",
                    "--batch-size",     "256",
                    "--data",           "/datasets/imagenet",
                    "--epochs",         "90"};
    for (int e = 0; e < env; ++e) {
      spec.env[absl::StrCat("VARIABLE_", e)] =
          absl::StrCat("/some/path/value-", e, "-of-a-typical-length");
    }
    spec.user = "alice";
    if (!master.SubmitJob(spec).ok()) return 1;
  }
  if (!master.RunPass().ok()) return 1;

  // One heartbeat; `delta`: the agent names the version it holds.
  auto beat = [&](Node& node, bool delta, Round* round) {
    tiresias::v1::HeartbeatRequest req;
    req.set_node_id(node.id);
    req.set_session(node.session);
    if (delta) req.set_desired_version(node.held);
    for (const auto& [key, t] : node.tasks) *req.add_tasks() = t;
    const double before = ThreadCpuUs();
    auto resp = master.Heartbeat(req);
    const double cpu = ThreadCpuUs() - before;
    if (!resp.ok()) {
      std::fprintf(stderr, "%s\n", resp.status().ToString().c_str());
      return false;
    }
    if (round != nullptr) {
      round->cpu_us.push_back(cpu);
      round->bytes.push_back(static_cast<double>(resp->ByteSizeLong()));
    }
    node.held = resp->desired().version();
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
  // Everything starts and is reported running (twice: the second report
  // finds the jobs running).
  for (Node& node : agents) {
    if (!beat(node, false, nullptr) || !beat(node, false, nullptr)) return 1;
  }
  Round whole, delta;
  for (int r = 0; r < rounds; ++r) {
    clock.Advance(Seconds{1});
    for (Node& node : agents) {
      if (!beat(node, false, &whole)) return 1;
    }
    clock.Advance(Seconds{1});
    for (Node& node : agents) {
      if (!beat(node, true, &delta)) return 1;
    }
  }
  auto sum = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  };
  std::printf(
      "%d nodes x %d GPUs, %d running 1-GPU jobs (%d env variables "
      "each), %d rounds, store in %s\n",
      nodes, gpus, nodes * gpus, env, rounds, root.c_str());
  std::printf("  %-6s %12s %16s %16s\n", "agent", "answer (B)", "round (KiB)",
              "master CPU (us)");
  for (const auto& [name, round] :
       {std::pair<const char*, const Round&>{"whole", whole},
        std::pair<const char*, const Round&>{"delta", delta}}) {
    std::printf("  %-6s %12.0f %16.1f %16.1f\n", name, Median(round.bytes),
                sum(round.bytes) / rounds / 1024, Median(round.cpu_us));
  }
  std::printf("  whole/delta: bytes %.1fx, master CPU %.2fx\n",
              Median(whole.bytes) / std::max(1.0, Median(delta.bytes)),
              Median(whole.cpu_us) / std::max(1e-3, Median(delta.cpu_us)));
  opened->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
