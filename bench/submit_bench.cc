// Submission throughput and latency of the master, end to end: a client
// stub calls SubmitJob over gRPC on loopback, one call at a time; each
// answer comes only after the job is durable in SQLite (WAL, synchronous =
// FULL, one fsync per job). Prints jobs/s and the p50 / p99 / max latency.
//
//   build/bench/submit_bench [--jobs N] [--state-dir DIR]
//
// Without --state-dir it uses a fresh folder under /tmp (removed after).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"

namespace {

using tiresias::MasterOptions;
using tiresias::MasterServer;
using tiresias::MasterState;

double PercentileMs(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1));
  return v[i] * 1000;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 500;
  std::string state_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) {
      jobs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--state-dir")) {
      state_dir = argv[i + 1];
    }
  }
  if (jobs < 1) {
    std::fprintf(stderr, "submit_bench: --jobs must be positive\n");
    return 2;
  }
  const bool temporary = state_dir.empty();
  if (temporary) {
    state_dir = absl::StrCat("/tmp/tiresias-submit-bench-", getpid());
  }
  std::filesystem::create_directories(state_dir);
  tiresias::master::RealClock clock;
  MasterOptions options;
  options.state_dir = state_dir;
  auto state = MasterState::Open(options, &clock);
  if (!state.ok()) {
    std::fprintf(stderr, "submit_bench: %s\n",
                 std::string(state.status().message()).c_str());
    return 1;
  }
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  if (!server.ok()) {
    std::fprintf(stderr, "submit_bench: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  auto stub = tiresias::v1::Tiresias::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()),
      grpc::InsecureChannelCredentials()));

  std::vector<double> latency_s;
  latency_s.reserve(jobs);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < jobs; ++i) {
    tiresias::v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("true");
    tiresias::v1::SubmitJobResponse resp;
    grpc::ClientContext ctx;
    const auto t0 = std::chrono::steady_clock::now();
    grpc::Status status = stub->SubmitJob(&ctx, req, &resp);
    latency_s.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - t0)
                            .count());
    if (!status.ok()) {
      std::fprintf(stderr, "submit_bench: %s\n",
                   status.error_message().c_str());
      return 1;
    }
  }
  const double total_s = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  std::printf(
      "%d jobs submitted and durable in %.2f s: %.0f jobs/s; latency p50 "
      "%.2f ms, p99 %.2f ms, max %.2f ms (state dir %s)\n",
      jobs, total_s, jobs / total_s, PercentileMs(latency_s, 0.5),
      PercentileMs(latency_s, 0.99), PercentileMs(latency_s, 1.0),
      state_dir.c_str());
  (*server)->Shutdown();
  server->reset();
  state->reset();
  if (temporary) std::filesystem::remove_all(state_dir);
  return 0;
}
