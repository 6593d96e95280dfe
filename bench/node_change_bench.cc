// What the master's routine operations cost as its backlog grows, with N
// pending jobs: MasterState::Register (a node joining, see "Node set
// changes" in master_state.h), one heartbeat, and one /metrics snapshot
// (MasterState::SnapshotMetrics), and with --restart every node
// registering again with its running tasks after a master restart.
// In-process, no gRPC; the state dir is on /dev/shm when it exists, so the
// one fsync of each write costs little and the CPU work shows.
//
//   build/bench/node_change_bench [--jobs N,N,...] [--nodes M] [--restart]
//
// For each N: submits N 1-GPU jobs with no node up, then registers M nodes
// of 8 GPUs one after another and reports the mean time per Register, then
// the mean time of a heartbeat from a node with no task, then the time of
// one metrics snapshot. With --restart: one pass starts what fits, every
// node reports its tasks running, the master is closed and opened again
// (as after a crash), and the M nodes register again in a shuffled order,
// each with its tasks: the time they all take, the mean per Register, and
// how many of the running jobs the new master kept running (adopted),
// then the time of a metrics snapshot and of ListNodes with them running.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/metrics.h"

namespace {

using tiresias::JobRequest;
using tiresias::MasterOptions;
using tiresias::MasterState;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Every node's running tasks, as it would report them.
using Tasks = std::map<int64_t, std::vector<tiresias::v1::TaskStatus>>;

// One pass, then each node reports what it was told to run as running.
// Returns the tasks per node, or nullopt on an error (printed).
std::optional<Tasks> StartAll(
    MasterState& state, const std::vector<std::pair<int64_t, uint64_t>>& ids) {
  if (absl::Status s = state.RunPass(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return std::nullopt;
  }
  Tasks tasks;
  for (const auto& [id, session] : ids) {
    tiresias::v1::HeartbeatRequest req;
    req.set_node_id(id);
    req.set_session(session);
    auto resp = state.Heartbeat(req);
    if (!resp.ok()) return std::nullopt;
    for (const tiresias::v1::StartTask& run : resp->desired().run()) {
      tiresias::v1::TaskStatus& t = tasks[id].emplace_back();
      *t.mutable_task() = run.task();
      t.set_state(tiresias::v1::TASK_STATE_RUNNING);
      *t.mutable_gpu_indexes() = run.gpu_indexes();
      t.set_start_time(1000);
    }
    *req.mutable_tasks() = {tasks[id].begin(), tasks[id].end()};
    if (!state.Heartbeat(req).ok()) return std::nullopt;
  }
  return tasks;
}

int Run(int jobs, int nodes, bool restart, const std::string& root) {
  const std::string dir = absl::StrCat(root, "/tiresias-node-bench-", jobs);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  tiresias::master::FakeClock clock{tiresias::Seconds{1000}};
  MasterOptions options;
  options.state_dir = dir;
  auto state = MasterState::Open(options, &clock);
  if (!state.ok()) {
    std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
    return 1;
  }
  JobRequest spec;
  spec.num_gpus = 1;
  spec.command = {"train"};
  for (int i = 0; i < jobs; ++i) {
    if (!(*state)->SubmitJob(spec).ok()) return 1;
  }
  std::vector<std::pair<int64_t, uint64_t>> ids;  // node id, session
  const auto begin = Clock::now();
  for (int n = 0; n < nodes; ++n) {
    tiresias::v1::RegisterRequest req;
    req.set_name(absl::StrCat("node-", n));
    req.set_address("127.0.0.1");
    req.set_gpus(8);
    req.set_agent_token(absl::StrCat("bench-agent-token-", n));
    auto resp = (*state)->Register(req);
    if (!resp.ok()) {
      std::fprintf(stderr, "%s\n", resp.status().ToString().c_str());
      return 1;
    }
    ids.push_back({resp->node_id(), resp->session()});
  }
  const double register_ms = Ms(Clock::now() - begin) / nodes;
  const auto beat_begin = Clock::now();
  for (const auto& [id, session] : ids) {
    tiresias::v1::HeartbeatRequest req;
    req.set_node_id(id);
    req.set_session(session);
    if (!(*state)->Heartbeat(req).ok()) return 1;
  }
  const double beat_us = 1000 * Ms(Clock::now() - beat_begin) / nodes;
  const auto scrape_begin = Clock::now();
  if (!(*state)->SnapshotMetrics().ok()) return 1;
  const double scrape_ms = Ms(Clock::now() - scrape_begin);
  std::printf(
      "%8d pending  %4d nodes  register %8.3f ms  heartbeat %7.1f us  "
      "metrics %7.3f ms\n",
      jobs, nodes, register_ms, beat_us, scrape_ms);
  if (restart) {
    std::optional<Tasks> tasks = StartAll(**state, ids);
    if (!tasks) return 1;
    size_t running = 0;
    for (const auto& [id, list] : *tasks) running += list.size();
    state->reset();
    clock.Advance(tiresias::Seconds{5});
    state = MasterState::Open(options, &clock);
    if (!state.ok()) {
      std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
      return 1;
    }
    std::vector<int> order(nodes);
    for (int n = 0; n < nodes; ++n) order[n] = n;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
    const auto again = Clock::now();
    for (int n : order) {
      tiresias::v1::RegisterRequest req;
      req.set_name(absl::StrCat("node-", n));
      req.set_address("127.0.0.1");
      req.set_gpus(8);
      req.set_agent_token(absl::StrCat("bench-agent-token-", n));
      const auto& mine = (*tasks)[ids[n].first];
      *req.mutable_tasks() = {mine.begin(), mine.end()};
      if (auto resp = (*state)->Register(req); !resp.ok()) {
        std::fprintf(stderr, "%s\n", resp.status().ToString().c_str());
        return 1;
      }
    }
    const double all_ms = Ms(Clock::now() - again);
    size_t kept = 0;
    for (const auto& [id, list] : *tasks) {
      for (const tiresias::v1::TaskStatus& t : list) {
        auto rec = (*state)->GetJob(t.task().job_id());
        kept += rec.ok() && rec->state == tiresias::JobRecordState::kRunning;
      }
    }
    std::printf(
        "%8d pending  %4d nodes  after a restart: all registered again in "
        "%9.1f ms (%7.3f ms each); %zu of %zu running jobs kept\n",
        jobs, nodes, all_ms, all_ms / nodes, kept, running);
    // The read paths with every job running: one /metrics page (snapshot
    // and text) and one ListNodes (each node with its jobs), min of 5.
    double metrics_ms = 1e18;
    double list_ms = 1e18;
    size_t page_bytes = 0;
    for (int r = 0; r < 5; ++r) {
      const auto m0 = Clock::now();
      auto snapshot = (*state)->SnapshotMetrics();
      if (!snapshot.ok()) return 1;
      page_bytes = tiresias::RenderPrometheusMetrics(*snapshot).size();
      metrics_ms = std::min(metrics_ms, Ms(Clock::now() - m0));
      const auto l0 = Clock::now();
      if (!(*state)->ListNodes().ok()) return 1;
      list_ms = std::min(list_ms, Ms(Clock::now() - l0));
    }
    std::printf(
        "%8d pending  %4d nodes  with %zu running: metrics page %7.3f ms "
        "(%zu bytes)  ListNodes %7.3f ms\n",
        jobs, nodes, kept, metrics_ms, page_bytes, list_ms);
  }
  state->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> jobs = {1000, 10000, 100000};
  int nodes = 100;
  bool restart = false;
  for (int i = 1; i < argc; i += 2) {
    if (std::strcmp(argv[i], "--restart") == 0) {
      restart = true;
      --i;  // a flag: no value
    } else if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: expected a value\n", argv[i]);
      return 2;
    } else if (std::strcmp(argv[i], "--jobs") == 0) {
      jobs.clear();
      for (absl::string_view v : absl::StrSplit(argv[i + 1], ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(v, &n) || n < 0) {
          std::fprintf(stderr, "--jobs: expected counts, got %s\n", argv[i + 1]);
          return 2;
        }
        jobs.push_back(n);
      }
    } else if (std::strcmp(argv[i], "--nodes") == 0) {
      if (!absl::SimpleAtoi(argv[i + 1], &nodes) || nodes < 1) {
        std::fprintf(stderr, "--nodes: expected a count >= 1\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: node_change_bench [--jobs N,...] [--nodes M] "
                   "[--restart]\n");
      return 2;
    }
  }
  const std::string root =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  for (int n : jobs) {
    if (Run(n, nodes, restart, root) != 0) return 1;
  }
  return 0;
}
