// How fast a decision becomes a running process, measured from the tasks'
// own output, with a real master (MasterServer on loopback, SQLite in WAL,
// synchronous = FULL) and a real agent (AgentDaemon, real child processes)
// in this process, as `tiresias up` runs them.
//
// 1. Submit to start on an idle cluster: the time from just before the
//    SubmitJob call to the first instruction of the job's command (it
//    prints the clock), `--jobs` times, one job at a time.
// 2. Back-to-back: `--gap-jobs` jobs of `--task-seconds` each submitted at
//    once to one GPU; the idle gap of the GPU between one job's last
//    instruction and the next one's first, and the fraction of the span the
//    GPU ran a task.
//
// `--cgroups on` runs every task in cgroups of its own (the agent's
// --cgroups on: needs root and writable v1 hierarchies), `off` without;
// the default is the agent's own, auto.
//
//   build/bench/handoff_bench [--jobs 40] [--gap-jobs 20] [--task-seconds 1]
//                             [--cgroups auto|on|off]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent_daemon.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"

namespace {

using tiresias::AgentDaemon;
using tiresias::AgentOptions;
using tiresias::MasterOptions;
using tiresias::MasterServer;
using tiresias::MasterState;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

void Print(const char* what, const std::vector<double>& ms) {
  std::printf("%-34s n=%-4zu p50 %7.1f ms  p90 %7.1f ms  max %7.1f ms\n",
              what, ms.size(), Percentile(ms, 0.5), Percentile(ms, 0.9),
              *std::max_element(ms.begin(), ms.end()));
}

// The clock readings (ns) the job printed, in order.
std::vector<int64_t> Stamps(const std::string& log) {
  std::ifstream in(log);
  std::vector<int64_t> out;
  std::string line;
  while (std::getline(in, line)) {
    int64_t ns;
    if (absl::SimpleAtoi(line, &ns)) out.push_back(ns);
  }
  return out;
}

class Bench {
 public:
  Bench(std::string dir, AgentOptions::Cgroups cgroups)
      : dir_(std::move(dir)), cgroups_(cgroups) {}

  bool Start() {
    MasterOptions options;
    options.state_dir = dir_ + "/master";
    std::filesystem::create_directories(options.state_dir);
    auto state = MasterState::Open(options, &clock_);
    if (!state.ok()) return Fail(state.status().ToString());
    state_ = *std::move(state);
    auto server = MasterServer::Start(state_.get(), &clock_, "127.0.0.1:0");
    if (!server.ok()) return Fail(server.status().ToString());
    server_ = *std::move(server);
    const std::string address = absl::StrCat("127.0.0.1:", server_->port());
    AgentOptions agent;
    agent.master_address = address;
    agent.node_name = "bench-node";
    agent.emulate_gpus = 1;
    agent.state_dir = dir_ + "/agent";
    agent.grace = std::chrono::seconds(5);
    // The jobs are root's (Submit): run as root, the bench's tasks run as
    // root; not root, they run as the bench's user anyway.
    agent.allow_root_tasks = true;
    agent.cgroups = cgroups_;
    agent.log = [](std::string_view) {};
    agent_ = std::make_unique<AgentDaemon>(agent);
    if (absl::Status s = agent_->Start(); !s.ok()) return Fail(s.ToString());
    stub_ = tiresias::v1::Tiresias::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    for (int i = 0; i < 500 && agent_->node_id() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return agent_->node_id() != 0 || Fail("the agent did not register");
  }

  void Stop() {
    if (agent_) agent_->Stop();
    if (server_) server_->Shutdown();
  }

  int64_t Submit(const std::string& script) {
    grpc::ClientContext ctx;
    tiresias::v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->set_user("root");
    req.mutable_spec()->add_command("/bin/sh");
    req.mutable_spec()->add_command("-c");
    req.mutable_spec()->add_command(script);
    tiresias::v1::SubmitJobResponse resp;
    grpc::Status s = stub_->SubmitJob(&ctx, req, &resp);
    return s.ok() ? resp.job_id() : 0;
  }

  bool WaitEnded(int64_t id) {
    for (int i = 0; i < 6000; ++i) {
      auto rec = state_->GetJob(id);
      if (rec.ok() && tiresias::IsFinal(rec->state)) {
        return rec->state == tiresias::JobRecordState::kFinished;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  std::string LogOf(int64_t id) const {
    return absl::StrCat(dir_, "/agent/logs/job-", id, "-attempt-1-rank-0.log");
  }

 private:
  bool Fail(const std::string& why) {
    std::fprintf(stderr, "handoff_bench: %s\n", why.c_str());
    return false;
  }

  std::string dir_;
  AgentOptions::Cgroups cgroups_;
  tiresias::master::RealClock clock_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<AgentDaemon> agent_;
  std::unique_ptr<tiresias::v1::Tiresias::Stub> stub_;
};

}  // namespace

int main(int argc, char** argv) {
  int jobs = 40;
  int gap_jobs = 20;
  double task_seconds = 1;
  std::string cgroups = "auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) {
      jobs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--gap-jobs")) {
      gap_jobs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--task-seconds")) {
      task_seconds = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--cgroups")) {
      cgroups = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: handoff_bench [--jobs N] [--gap-jobs M] "
                   "[--task-seconds S] [--cgroups auto|on|off]\n");
      return 2;
    }
  }
  if (jobs < 1 || gap_jobs < 2 || !(task_seconds > 0) ||
      (cgroups != "auto" && cgroups != "on" && cgroups != "off")) {
    std::fprintf(stderr,
                 "handoff_bench: --jobs >= 1, --gap-jobs >= 2, "
                 "--task-seconds > 0, --cgroups auto, on or off\n");
    return 2;
  }
  std::printf("cgroups: %s\n", cgroups.c_str());
  const std::string dir =
      absl::StrCat("/tmp/tiresias-handoff-bench-", getpid());
  std::filesystem::remove_all(dir);
  Bench bench(dir, cgroups == "on"    ? AgentOptions::Cgroups::kOn
                   : cgroups == "off" ? AgentOptions::Cgroups::kOff
                                      : AgentOptions::Cgroups::kAuto);
  if (!bench.Start()) return 1;

  // 1. One job at a time on an idle cluster.
  std::vector<double> to_start_ms;
  for (int i = 0; i < jobs; ++i) {
    const int64_t submitted = NowNs();
    const int64_t id = bench.Submit("date +%s%N");
    if (id == 0 || !bench.WaitEnded(id)) {
      std::fprintf(stderr, "handoff_bench: job %d did not finish\n", i);
      return 1;
    }
    std::vector<int64_t> stamps = Stamps(bench.LogOf(id));
    if (stamps.empty()) return 1;
    to_start_ms.push_back((stamps[0] - submitted) / 1e6);
  }
  Print("submit to start, idle cluster", to_start_ms);

  // 2. Back-to-back jobs on the one GPU.
  const std::string script =
      absl::StrCat("date +%s%N; sleep ", task_seconds, "; date +%s%N");
  std::vector<int64_t> ids;
  for (int i = 0; i < gap_jobs; ++i) ids.push_back(bench.Submit(script));
  std::vector<std::pair<int64_t, int64_t>> runs;  // start, end (ns)
  for (int64_t id : ids) {
    if (id == 0 || !bench.WaitEnded(id)) return 1;
    std::vector<int64_t> stamps = Stamps(bench.LogOf(id));
    if (stamps.size() != 2) return 1;
    runs.push_back({stamps[0], stamps[1]});
  }
  std::sort(runs.begin(), runs.end());
  std::vector<double> gaps_ms;
  double busy_ns = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    busy_ns += runs[i].second - runs[i].first;
    if (i > 0) gaps_ms.push_back((runs[i].first - runs[i - 1].second) / 1e6);
  }
  Print("idle gap between back-to-back jobs", gaps_ms);
  std::printf("GPU busy fraction over %d x %g s jobs: %.3f\n", gap_jobs,
              task_seconds,
              busy_ns / (runs.back().second - runs.front().first));
  bench.Stop();
  std::filesystem::remove_all(dir);
  return 0;
}
