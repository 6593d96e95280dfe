#include "master/server.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/open_files.h"
#include "master/job_limits.h"

namespace tiresias {
namespace {

// Server threads kept polling for calls when idle (gRPC's default: 2).
constexpr int kMaxIdleServerThreads = 16;

// This process's resident bytes (/proc/self/statm); -1 if unreadable.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

MasterServer::MasterServer(MasterState* state, master::Clock* clock,
                           const security::TlsConfig& tls)
    : state_(state),
      clock_(clock),
      tiresias_service_(state, [this] { Notify(); }, tls),
      agent_service_(state, [this] { Notify(); }),
      admin_service_(state) {}

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(
    MasterState* state, master::Clock* clock, const std::string& address,
    const security::TlsConfig& tls) {
  std::unique_ptr<MasterServer> server(new MasterServer(state, clock, tls));
  server->notifier_ = std::make_unique<Notifier>(
      NotifierOptions{.key = state->options().notify_key,
                      .sendmail = state->options().sendmail,
                      .log = [](const std::string& line) {
                        std::fprintf(stderr, "%s\n", line.c_str());
                      }});
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, so a second master on the same port
  // would bind too and clients would reach either at random.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Clients and agents given several masters ping their connection every
  // few seconds (security::Dial), to leave a master that stopped answering
  // (frozen) for the next: allowed, idle too, without a strike.
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // Room for a SubmitJobs of many jobs (gRPC's default is 4 MiB).
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(job_limits::kMaxRequestBytes));
  // Clients may present a certificate (users may use one instead of a
  // token); agents must, checked per call (CallAuth::Agent).
  builder.AddListeningPort(
      address,
      security::ServerCredentials(tls, security::ClientCerts::kRequestAndVerify),
      &server->port_);
  // gRPC's synchronous server keeps 1 to 2 threads polling for calls and
  // starts another whenever every poller is busy, ending it once more than
  // the maximum poll: at 2,000 agents' heartbeats (1,000 calls/s) that made
  // and ended threads all the time (BENCHMARKS.md, "2,000 agents against a
  // real master"). Threads kept polling between calls cost nothing.
  builder.SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  builder.SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
      kMaxIdleServerThreads);
  builder.RegisterService(&server->tiresias_service_);
  builder.RegisterService(&server->agent_service_);
  builder.RegisterService(&server->admin_service_);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address,
                     " (is another master or program using that port? "
                     "--listen 127.0.0.1:0 picks a free port, and the "
                     "address taken is printed)"));
  }
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  return server;
}

MasterServer::~MasterServer() { Shutdown(); }

void MasterServer::Notify() {
  {
    MutexLock lock(&mu_);
    notified_ = true;
  }
  cv_.Signal();
}

void MasterServer::Shutdown() {
  {
    MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable() && !server_) return;
    stopping_ = true;
  }
  cv_.Signal();
  tiresias_service_.Stop();  // open WatchEvents streams end now
  agent_service_.Stop();     // and WatchDesiredState streams
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }
  if (thread_.joinable()) thread_.join();
  notifier_.reset();  // what is still being retried is logged, not sent
}

void MasterServer::ReleaseFreedMemory() {
  constexpr int64_t kGrowth = int64_t{64} << 20;
  const int64_t rss = ResidentBytes();
  if (rss < 0) return;
  // The first reading, or one that shrank on its own, is the new base.
  if (trimmed_rss_ == 0 || rss < trimmed_rss_) trimmed_rss_ = rss;
  if (rss < trimmed_rss_ + kGrowth) return;
  malloc_trim(0);
  trimmed_rss_ = ResidentBytes();
}

void MasterServer::WatchOpenFiles(std::chrono::steady_clock::time_point now) {
  if (now < next_files_check_) return;
  next_files_check_ = now + std::chrono::seconds(10);
  const int64_t open = OpenFiles(), limit = OpenFileSoftLimit();
  if (open < 0 || limit <= 0 || open * 10 < limit * 9 ||
      now < next_files_warning_) {
    return;
  }
  next_files_warning_ = now + std::chrono::minutes(1);
  std::fprintf(stderr,
               "tiresias master: WARNING: %lld of %lld open files in use: "
               "agents and clients past the limit are refused a connection; "
               "raise it (ulimit -Hn as root, LimitNOFILE= in a systemd "
               "unit) and restart\n",
               static_cast<long long>(open), static_cast<long long>(limit));
}

void MasterServer::Loop() {
  using std::chrono::duration;
  auto next_check = std::chrono::steady_clock::now();
  // When timeouts were last checked: a longer gap than a beat (kStallAfter)
  // is the master's own stall, not its nodes' silence (OnStall).
  auto last_check = next_check;
  constexpr auto kCheckEvery = std::chrono::seconds(1);
  constexpr auto kStallAfter = std::chrono::seconds(2);
  // The cluster's history: a sample at start, then every history_interval.
  const Seconds history_interval = state_->options().history_interval;
  auto next_sample = std::chrono::steady_clock::now();
  while (true) {
    // Sleep until notified, the policy's next wakeup, or the next timeout
    // check (every second), whichever comes first.
    const double to_wakeup =
        (state_->NextWakeup() - clock_->NowUnixSeconds()).count();
    auto deadline = next_check;
    if (history_interval.count() > 0) {
      deadline = std::min(deadline, next_sample);
    }
    if (std::isfinite(to_wakeup)) {
      deadline = std::min(
          deadline, std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<
                            std::chrono::steady_clock::duration>(
                            duration<double>(std::max(0.05, to_wakeup))));
    }
    {
      MutexLock lock(&mu_);
      while (!notified_ && !stopping_) {
        if (cv_.WaitUntil(&mu_, deadline)) break;
      }
      if (stopping_) return;
      notified_ = false;
    }
    if (const auto now = std::chrono::steady_clock::now(); now >= next_check) {
      const auto gap = now - last_check;
      next_check = now + kCheckEvery;
      last_check = now;
      if (gap > kStallAfter) {
        // Nodes are judged at the next check, once the reports that waited
        // for the master have been taken.
        const Seconds stall =
            std::chrono::duration_cast<Seconds>(gap - kCheckEvery);
        state_->OnStall(stall);
        std::fprintf(stderr,
                     "tiresias master: stalled for %.1f s: node timeouts "
                     "moved on by it before any node is judged\n",
                     stall.count());
      } else if (absl::Status s = state_->CheckTimeouts(); !s.ok()) {
        std::fprintf(stderr, "tiresias master: %s\n", s.ToString().c_str());
      }
      // Refusals held back by the audit log's rate limit, summarized.
      state_->FlushAudit();
      WatchOpenFiles(now);
      ReleaseFreedMemory();
    }
    if (history_interval.count() > 0 &&
        std::chrono::steady_clock::now() >= next_sample) {
      next_sample =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              history_interval);
      if (absl::Status s = state_->RecordClusterSample(); !s.ok()) {
        std::fprintf(stderr, "tiresias master: cluster history: %s\n",
                     s.ToString().c_str());
      }
    }
    const bool due = state_->NextWakeup() <= clock_->NowUnixSeconds();
    if (state_->TakePassWanted() || due) {
      if (absl::Status s = state_->RunPass(); !s.ok()) {
        std::fprintf(stderr, "tiresias master: %s\n", s.ToString().c_str());
      }
    }
    // What the calls and the pass since wrote (at most a second old).
    notifier_->Send(state_->TakeNotifications());
  }
}

}  // namespace tiresias
