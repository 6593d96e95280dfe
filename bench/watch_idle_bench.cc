// What watching agents cost an idle master: a real MasterServer on
// loopback (insecure, in this process), N nodes registered over gRPC, each
// with its WatchDesiredState stream open (the agents' side opens them and
// reads nothing: nothing changes), then the process's CPU time, threads and
// context switches over a quiet interval. Client-side gRPC idles in the same
// process, so the numbers bound the master's from above.
//
//   build/bench/watch_idle_bench [--agents 1000] [--seconds 10]
//
// Prints: streams open, threads, CPU as a share of one core, and context
// switches per second.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"

namespace {

using tiresias::MasterOptions;
using tiresias::MasterServer;
using tiresias::MasterState;

struct Usage {
  double cpu_s = 0;
  long switches = 0;
};

Usage Now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
              u.ru_stime.tv_usec / 1e6,
          u.ru_nvcsw + u.ru_nivcsw};
}

int Threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

int Run(int agents, int seconds) {
  const std::string root =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  const std::string dir = root + "/tiresias-watch-idle-bench";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MasterOptions options;
  options.state_dir = dir;
  options.node_timeout = tiresias::Seconds{3600};
  options.heartbeat_interval = tiresias::Seconds{600};
  tiresias::master::RealClock clock;
  auto state = MasterState::Open(options, &clock);
  if (!state.ok()) {
    std::fprintf(stderr, "%s\n", state.status().ToString().c_str());
    return 1;
  }
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  // A connection per 50 agents, as separate agents would have their own.
  std::vector<std::unique_ptr<tiresias::v1::AgentRegistry::Stub>> stubs;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<tiresias::v1::DesiredState>>>
      streams;
  for (int i = 0; i < agents; ++i) {
    if (i % 50 == 0) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      stubs.push_back(
          tiresias::v1::AgentRegistry::NewStub(grpc::CreateCustomChannel(
              address, grpc::InsecureChannelCredentials(), args)));
    }
    tiresias::v1::RegisterRequest req;
    req.set_name(absl::StrCat("node-", i));
    req.set_address("127.0.0.1");
    req.set_gpus(8);
    req.set_agent_token(absl::StrCat("bench-agent-token-", i));
    req.set_grace_seconds(1);
    tiresias::v1::RegisterResponse reg;
    grpc::ClientContext ctx;
    if (grpc::Status s = stubs.back()->Register(&ctx, req, &reg); !s.ok()) {
      std::fprintf(stderr, "register: %s\n", s.error_message().c_str());
      return 1;
    }
    tiresias::v1::WatchDesiredStateRequest watch;
    watch.set_node_id(reg.node_id());
    watch.set_session(reg.session());
    watch.set_after_version(reg.desired().version());
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(
        stubs.back()->WatchDesiredState(contexts.back().get(), watch));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // all settled
  const int threads = Threads();
  const Usage begin = Now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const Usage end = Now();
  std::printf(
      "%5d agents watching  %5d threads  idle CPU %5.1f%% of a core  "
      "%8.0f context switches/s\n",
      agents, threads, 100 * (end.cpu_s - begin.cpu_s) / seconds,
      (end.switches - begin.switches) / static_cast<double>(seconds));
  for (auto& ctx : contexts) ctx->TryCancel();
  (*server)->Shutdown();
  streams.clear();
  server->reset();
  state->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int agents = 1000;
  int seconds = 10;
  for (int i = 1; i < argc; i += 2) {
    int* into = i + 1 >= argc                            ? nullptr
                : std::strcmp(argv[i], "--agents") == 0  ? &agents
                : std::strcmp(argv[i], "--seconds") == 0 ? &seconds
                                                         : nullptr;
    if (into == nullptr || !absl::SimpleAtoi(argv[i + 1], into) || *into < 1) {
      std::fprintf(stderr,
                   "usage: watch_idle_bench [--agents N] [--seconds S] "
                   "(both >= 1)\n");
      return 2;
    }
  }
  return Run(agents, seconds);
}
