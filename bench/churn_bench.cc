// The master under churn: short jobs submitted, started, and ended as fast
// as a busy cluster turns them over, with the store's every commit a real
// fsync. In-process MasterState on the real clock, its SQLite file on disk
// (not /dev/shm: the fsyncs are what is measured), threads as the master's
// callers are:
//   submitters  --submitters threads, together --rate 1-GPU jobs/s, each
//               job lasting a uniform --min-s to --max-s seconds;
//   agents      --agent-threads threads sharing --nodes nodes of --gpus
//               GPUs; a node heartbeats as soon as one of its tasks ended
//               or a start reached it, else every 2 s, as a real agent;
//   the loop    a scheduling pass whenever one is wanted, at most every
//               20 ms, and the timeout check every second (MasterServer's
//               loop).
//
//   build/bench/churn_bench [--nodes 250] [--gpus 8] [--seconds 10]
//                           [--rate 250] [--submitters 8]
//                           [--agent-threads 16] [--min-s 0.5] [--max-s 2]
//                           [--dir /tmp] [--write-delay-ms 0]
//
// --write-delay-ms adds that long to every store write (after it
// committed, in the writer's call), as a slower disk or a synchronous
// replica's round trip would.
//
// Prints jobs submitted and finished per second, the store's writes per
// second (MasterState::commit_stats: each one transaction, one fsync), the
// latency of SubmitJob and of heartbeats that carried a change (p50, p99),
// and the share of wall time the master's commits took.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "master/clock.h"
#include "master/fault_store.h"
#include "master/master_state.h"
#include "master/sqlite_store.h"

namespace {

using tiresias::JobRequest;
using tiresias::MasterOptions;
using tiresias::MasterState;
using tiresias::Mutex;
using tiresias::MutexLock;
namespace v1 = tiresias::v1;
using Steady = std::chrono::steady_clock;

double Ms(Steady::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

struct Config {
  int nodes = 250;
  int gpus = 8;
  double seconds = 10;
  double rate = 250;
  int submitters = 8;
  int agent_threads = 16;
  double min_s = 0.5;
  double max_s = 2;
  std::string dir = "/tmp";
  double write_delay_ms = 0;
};

// One emulated node: its tasks as its agent would report them.
struct Node {
  int64_t id = 0;
  uint64_t session = 0;
  struct Task {
    v1::TaskStatus status;
    Steady::time_point ends;
  };
  std::map<std::tuple<int64_t, int, int>, Task> tasks;
  Steady::time_point next_beat;
  bool changed = false;  // a start arrived: report it running at once
};

// Each job's duration, drawn at submission (the job id names it).
class Durations {
 public:
  void Set(tiresias::JobId id, double s) {
    MutexLock lock(&mu_);
    of_[id] = s;
  }
  double Get(tiresias::JobId id) {
    MutexLock lock(&mu_);
    auto it = of_.find(id);
    return it == of_.end() ? 1.0 : it->second;
  }

 private:
  Mutex mu_;
  std::map<tiresias::JobId, double> of_ ABSL_GUARDED_BY(mu_);
};

// Sends one heartbeat for `node` (its tasks as they stand) and applies the
// answer: acknowledged ends forgotten, new starts running from now, stops
// ended. Returns false on an error.
bool Beat(MasterState& state, Node& node, Durations& durations,
          std::vector<double>* latencies, std::atomic<int64_t>* finished) {
  const auto now = Steady::now();
  v1::HeartbeatRequest req;
  req.set_node_id(node.id);
  req.set_session(node.session);
  bool carries_change = node.changed;
  for (auto& [key, task] : node.tasks) {
    if (task.status.state() == v1::TASK_STATE_RUNNING && now >= task.ends) {
      task.status.set_state(v1::TASK_STATE_EXITED);
      task.status.set_exit_code(0);
      task.status.set_end_time(
          std::chrono::duration<double>(
              std::chrono::system_clock::now().time_since_epoch())
              .count());
    }
    if (task.status.state() != v1::TASK_STATE_RUNNING) carries_change = true;
    *req.add_tasks() = task.status;
  }
  const auto begin = Steady::now();
  auto resp = state.Heartbeat(req);
  if (!resp.ok()) {
    std::fprintf(stderr, "heartbeat: %s\n", resp.status().ToString().c_str());
    return false;
  }
  if (carries_change) latencies->push_back(Ms(Steady::now() - begin));
  node.changed = false;
  for (const v1::TaskRef& ack : resp->acknowledged()) {
    auto it = node.tasks.find({ack.job_id(), ack.attempt(), ack.rank()});
    if (it != node.tasks.end() &&
        it->second.status.state() != v1::TASK_STATE_RUNNING) {
      if (it->second.status.state() == v1::TASK_STATE_EXITED) ++*finished;
      node.tasks.erase(it);
    }
  }
  const double wall = std::chrono::duration<double>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const v1::StartTask& run : resp->desired().run()) {
    const auto key = std::make_tuple(run.task().job_id(), run.task().attempt(),
                                     run.task().rank());
    if (node.tasks.contains(key)) continue;
    Node::Task& task = node.tasks[key];
    *task.status.mutable_task() = run.task();
    task.status.set_state(v1::TASK_STATE_RUNNING);
    *task.status.mutable_gpu_indexes() = run.gpu_indexes();
    task.status.set_start_time(wall);
    task.ends =
        Steady::now() +
        std::chrono::duration_cast<Steady::duration>(
            std::chrono::duration<double>(durations.Get(run.task().job_id())));
    node.changed = true;
  }
  for (const v1::StopTask& stop : resp->desired().stop()) {
    for (auto& [key, task] : node.tasks) {
      if (std::get<0>(key) != stop.job_id() ||
          std::get<1>(key) != stop.attempt() ||
          task.status.state() != v1::TASK_STATE_RUNNING) {
        continue;
      }
      task.status.set_state(v1::TASK_STATE_PREEMPTED);
      task.status.set_stop_reason(stop.reason());
      task.status.set_exit_code(143);
      task.status.set_end_time(wall);
    }
  }
  return true;
}

int Run(const Config& c) {
  const std::string dir = absl::StrCat(c.dir, "/tiresias-churn-bench");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  tiresias::master::RealClock clock;
  MasterOptions options;
  options.state_dir = dir;
  auto sqlite = tiresias::SqliteStore::Open(dir + "/state.db");
  if (!sqlite.ok()) {
    std::fprintf(stderr, "%s\n", sqlite.status().ToString().c_str());
    return 1;
  }
  auto faults = std::make_shared<tiresias::StoreFaults>();
  if (c.write_delay_ms > 0) {
    faults->SetAfterWrite([&c](int64_t, tiresias::StoreWriteKind) {
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(c.write_delay_ms));
    });
  }
  auto opened = MasterState::Open(
      options, &clock,
      std::make_unique<tiresias::FaultStore>(*std::move(sqlite), faults));
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  MasterState& state = **opened;
  std::vector<Node> nodes(c.nodes);
  for (int n = 0; n < c.nodes; ++n) {
    v1::RegisterRequest req;
    req.set_name(absl::StrCat("node-", n));
    req.set_address("127.0.0.1");
    req.set_gpus(c.gpus);
    req.set_agent_token(absl::StrCat("bench-agent-token-", n));
    auto resp = state.Register(req);
    if (!resp.ok()) {
      std::fprintf(stderr, "%s\n", resp.status().ToString().c_str());
      return 1;
    }
    nodes[n].id = resp->node_id();
    nodes[n].session = resp->session();
    nodes[n].next_beat = Steady::now();
  }
  Durations durations;
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> submitted{0};
  std::atomic<int64_t> finished{0};
  const MasterState::CommitStats commits_before = state.commit_stats();
  const auto start = Steady::now();
  const auto end = start + std::chrono::duration_cast<Steady::duration>(
                               std::chrono::duration<double>(c.seconds));

  std::vector<std::vector<double>> submit_ms(c.submitters);
  std::vector<std::thread> threads;
  for (int s = 0; s < c.submitters; ++s) {
    threads.emplace_back([&, s] {
      std::mt19937 rng(s + 1);
      std::uniform_real_distribution<double> length(c.min_s, c.max_s);
      const auto every = std::chrono::duration_cast<Steady::duration>(
          std::chrono::duration<double>(c.submitters / c.rate));
      auto next = start + every * s / c.submitters;
      JobRequest spec;
      spec.num_gpus = 1;
      spec.command = {"train"};
      while (!stop && Steady::now() < end) {
        std::this_thread::sleep_until(next);
        next += every;
        const auto begin = Steady::now();
        auto id = state.SubmitJob(spec);
        if (!id.ok()) {
          std::fprintf(stderr, "submit: %s\n", id.status().ToString().c_str());
          failed = true;
          return;
        }
        submit_ms[s].push_back(Ms(Steady::now() - begin));
        durations.Set(*id, length(rng));
        ++submitted;
      }
    });
  }
  std::vector<std::vector<double>> beat_ms(c.agent_threads);
  for (int a = 0; a < c.agent_threads; ++a) {
    threads.emplace_back([&, a] {
      while (!stop && Steady::now() < end) {
        const auto now = Steady::now();
        for (int n = a; n < c.nodes; n += c.agent_threads) {
          Node& node = nodes[n];
          bool due = node.changed || now >= node.next_beat;
          for (const auto& [key, task] : node.tasks) {
            if (due) break;
            due = task.status.state() != v1::TASK_STATE_RUNNING ||
                  now >= task.ends;
          }
          if (!due) continue;
          if (!Beat(state, node, durations, &beat_ms[a], &finished)) {
            failed = true;
            return;
          }
          node.next_beat = Steady::now() + std::chrono::seconds(2);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  auto next_check = Steady::now() + std::chrono::seconds(1);
  auto last_pass = Steady::now();
  int64_t passes = 0;
  while (Steady::now() < end && !failed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (Steady::now() >= next_check) {
      next_check += std::chrono::seconds(1);
      if (absl::Status s = state.CheckTimeouts(); !s.ok()) {
        std::fprintf(stderr, "check: %s\n", s.ToString().c_str());
        failed = true;
      }
    }
    if (Steady::now() - last_pass >= std::chrono::milliseconds(20) &&
        state.TakePassWanted()) {
      last_pass = Steady::now();
      ++passes;
      if (absl::Status s = state.RunPass(); !s.ok()) {
        std::fprintf(stderr, "pass: %s\n", s.ToString().c_str());
        failed = true;
      }
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  const double wall =
      std::chrono::duration<double>(Steady::now() - start).count();
  const MasterState::CommitStats commits = state.commit_stats();
  std::vector<double> submits;
  for (const auto& v : submit_ms)
    submits.insert(submits.end(), v.begin(), v.end());
  std::vector<double> beats;
  for (const auto& v : beat_ms) beats.insert(beats.end(), v.begin(), v.end());
  const int64_t writes = commits.writes - commits_before.writes;
  const int64_t reports = commits.reports - commits_before.reports;
  const int64_t led = commits.report_commits - commits_before.report_commits;
  const MasterState::SubmitStats batches = state.submit_stats();
  const double write_s = commits.write_seconds - commits_before.write_seconds;
  std::printf(
      "nodes %d x %d GPUs, %.0f s, %.0f jobs/s offered (%.1f-%.1f s each), "
      "+%.1f ms a write\n"
      "  submitted %.1f jobs/s, finished %.1f jobs/s, %lld passes\n"
      "  store writes %.1f/s (%.2f s of every second in them), submission "
      "batches %.1f/s\n"
      "  heartbeats that waited for a commit %.1f/s, %.2f per commit one "
      "led\n"
      "  heartbeats with a change: %zu, p50 %.2f ms, p99 %.2f ms\n"
      "  submit p50 %.2f ms, p99 %.2f ms\n",
      c.nodes, c.gpus, c.seconds, c.rate, c.min_s, c.max_s, c.write_delay_ms,
      submitted / wall, finished / wall, static_cast<long long>(passes),
      writes / wall, write_s / wall, batches.batches / wall, reports / wall,
      led == 0 ? 0.0 : static_cast<double>(reports) / led, beats.size(),
      Percentile(beats, 0.5), Percentile(beats, 0.99), Percentile(submits, 0.5),
      Percentile(submits, 0.99));
  std::filesystem::remove_all(dir);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&]() -> bool {
      if (value == nullptr) {
        std::fprintf(stderr, "%s: needs a value\n", flag.c_str());
        return false;
      }
      ++i;
      return true;
    };
    bool ok = true;
    if (flag == "--nodes") {
      ok = need() && absl::SimpleAtoi(value, &c.nodes) && c.nodes > 0;
    } else if (flag == "--gpus") {
      ok = need() && absl::SimpleAtoi(value, &c.gpus) && c.gpus > 0;
    } else if (flag == "--seconds") {
      ok = need() && absl::SimpleAtod(value, &c.seconds) && c.seconds > 0;
    } else if (flag == "--rate") {
      ok = need() && absl::SimpleAtod(value, &c.rate) && c.rate > 0;
    } else if (flag == "--submitters") {
      ok = need() && absl::SimpleAtoi(value, &c.submitters) && c.submitters > 0;
    } else if (flag == "--agent-threads") {
      ok = need() && absl::SimpleAtoi(value, &c.agent_threads) &&
           c.agent_threads > 0;
    } else if (flag == "--min-s") {
      ok = need() && absl::SimpleAtod(value, &c.min_s) && c.min_s > 0;
    } else if (flag == "--max-s") {
      ok = need() && absl::SimpleAtod(value, &c.max_s) && c.max_s >= c.min_s;
    } else if (flag == "--write-delay-ms") {
      ok = need() && absl::SimpleAtod(value, &c.write_delay_ms) &&
           c.write_delay_ms >= 0;
    } else if (flag == "--dir") {
      ok = need();
      if (ok) c.dir = value;
    } else {
      std::fprintf(stderr,
                   "usage: churn_bench [--nodes N] [--gpus G] [--seconds S] "
                   "[--rate JOBS_PER_S] [--submitters N] [--agent-threads N] "
                   "[--min-s S] [--max-s S] [--dir FOLDER] "
                   "[--write-delay-ms MS]\n");
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "%s: expected a positive number, got %s\n",
                   flag.c_str(), value == nullptr ? "nothing" : value);
      return 2;
    }
  }
  return Run(c);
}
