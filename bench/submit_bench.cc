// Submission throughput and latency of the master, end to end: N client
// threads, each with its own channel (its own TCP connection) and stub, call
// SubmitJob over gRPC on loopback back to back, against a real MasterServer
// in this process; each answer comes only after the job is durable in SQLite
// (WAL, synchronous = FULL). Concurrent submissions share a transaction
// (MasterState's group commit), so with N clients one fsync carries up to N
// jobs. Prints jobs/s, the p50 / p99 / max latency and the jobs per store
// transaction.
//
//   build/bench/submit_bench [--jobs N] [--clients N] [--state-dir DIR]
//                            [--tls] [--store etcd://HOST:PORT,...]
//
// --jobs is the total over all clients (default 500), --clients the number
// of client threads (default 1). Without --state-dir it uses a fresh folder
// under /tmp (removed after). --tls serves as a production master does: TLS
// with a certificate from a fresh in-memory CA, authentication required,
// each client a user with its own bearer token on every call (the cost of
// security on the submission path). --store etcd://... leads an etcd store
// (master/etcd_store.h) as `master --store` does: every transaction is
// also appended to the store's log in etcd before it is answered
// (bench/store_compare.sh starts three members and compares with SQLite).
// Built with -DSUBMIT_BENCH_NO_STATS it
// needs nothing newer than MasterServer (and has no --tls), so that the
// same file measures code from before group commit for a before/after ratio
// (BENCHMARKS.md).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "proto/tiresias.grpc.pb.h"
#ifndef SUBMIT_BENCH_NO_STATS
#include "master/etcd_store.h"
#include "security/identity.h"
#include "security/pki.h"
#include "security/tls.h"
#endif

namespace {

using tiresias::MasterOptions;
using tiresias::MasterServer;
using tiresias::MasterState;

double PercentileMs(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1));
  return v[i] * 1000;
}

// How clients reach the master: plaintext, or TLS against `ca_pem` with a
// bearer token per client.
struct ClientSecurity {
  bool tls = false;
  std::string ca_pem;
  std::vector<std::string> tokens;  // one per client, with tls
};

// One client: its own channel (a local subchannel pool, so no TCP
// connection is shared with another client) and `jobs` submissions back to
// back. Appends each call's latency to `latency_s`; false on an error.
bool RunClient(const std::string& address, int jobs,
               const ClientSecurity& security, int client,
               std::vector<double>* latency_s) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::Channel> channel;
#ifndef SUBMIT_BENCH_NO_STATS
  if (security.tls) {
    tiresias::security::TlsConfig tls;
    tls.ca_pem = security.ca_pem;
    tiresias::security::DialOptions dial;
    dial.args = args;
    channel = tiresias::security::Dial(address, tls, dial);
  }
#endif
  if (!channel) {
    channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
  }
  auto stub = tiresias::v1::Tiresias::NewStub(channel);
  tiresias::v1::SubmitJobRequest req;
  req.mutable_spec()->set_gpus(1);
  req.mutable_spec()->add_command("true");
  for (int i = 0; i < jobs; ++i) {
    tiresias::v1::SubmitJobResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
#ifndef SUBMIT_BENCH_NO_STATS
    if (security.tls) {
      tiresias::security::AttachToken(&ctx, security.tokens[client]);
    }
#else
    (void)client;
#endif
    const auto t0 = std::chrono::steady_clock::now();
    grpc::Status status = stub->SubmitJob(&ctx, req, &resp);
    latency_s->push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
    if (!status.ok()) {
      std::fprintf(stderr, "submit_bench: %s\n",
                   status.error_message().c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 500;
  int clients = 1;
  std::string state_dir;
  std::string store_url;
  int linger_us = 500;  // MasterOptions::submit_linger, on etcd
  ClientSecurity security;
  for (int i = 1; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tls")) {
#ifdef SUBMIT_BENCH_NO_STATS
      std::fprintf(stderr, "submit_bench: --tls needs the security library\n");
      return 2;
#endif
      security.tls = true;
      --i;  // a flag without a value
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "submit_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--jobs")) {
      jobs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--clients")) {
      clients = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--state-dir")) {
      state_dir = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--store")) {
      store_url = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--linger-us")) {
      linger_us = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "submit_bench: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (jobs < 1 || clients < 1 || clients > jobs) {
    std::fprintf(stderr, "submit_bench: expected --jobs >= --clients >= 1\n");
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
  options.require_auth = security.tls;
#ifndef SUBMIT_BENCH_NO_STATS
  std::shared_ptr<tiresias::EtcdLead> lead;
  std::shared_ptr<tiresias::EtcdLog> log;
  std::unique_ptr<tiresias::Store> store;
  if (!store_url.empty()) {
    auto opened = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(tiresias::EtcdUrl url,
                       tiresias::ParseEtcdUrl(store_url));
      ASSIGN_OR_RETURN(
          std::shared_ptr<tiresias::EtcdClient> client,
          tiresias::EtcdClient::Connect({.endpoints = url.endpoints}));
      // A prefix of its own: a fresh log each run.
      const std::string prefix =
          absl::StrCat(url.prefix, "submit-bench-", getpid(), "/");
      ASSIGN_OR_RETURN(std::string id,
                       tiresias::EtcdClusterId(*client, prefix));
      ASSIGN_OR_RETURN(std::unique_ptr<tiresias::SqliteStore> copy,
                       tiresias::SqliteStore::Open(
                           state_dir + "/state.db",
                           {.sync_every_commit = false, .cluster_id = id}));
      ASSIGN_OR_RETURN(lead, tiresias::EtcdLead::Join(client, prefix, {}));
      ASSIGN_OR_RETURN(bool led, lead->TryLead());
      if (!led) return absl::InternalError("another leads the bench's prefix");
      log = std::make_shared<tiresias::EtcdLog>(client, prefix);
      RETURN_IF_ERROR(log->StartLeading(*copy, lead.get()));
      store = std::move(copy);
      options.submit_linger = std::chrono::microseconds(linger_us);
      return absl::OkStatus();
    }();
    if (!opened.ok()) {
      std::fprintf(stderr, "submit_bench: --store %s: %s\n", store_url.c_str(),
                   std::string(opened.message()).c_str());
      return 1;
    }
  }
  auto state = store != nullptr
                   ? MasterState::Open(options, &clock, std::move(store))
                   : MasterState::Open(options, &clock);
#else
  auto state = MasterState::Open(options, &clock);
#endif
  if (!state.ok()) {
    std::fprintf(stderr, "submit_bench: %s\n",
                 std::string(state.status().message()).c_str());
    return 1;
  }
#ifndef SUBMIT_BENCH_NO_STATS
  tiresias::security::TlsConfig server_tls =
      tiresias::security::InsecureTlsConfig();
  if (security.tls) {
    auto ca = tiresias::security::CreateCa("submit_bench CA");
    if (!ca.ok()) {
      std::fprintf(stderr, "submit_bench: %s\n",
                   std::string(ca.status().message()).c_str());
      return 1;
    }
    tiresias::security::CertRequest req;
    req.common_name = tiresias::security::CommonName(
        {tiresias::security::IdentityKind::kMaster, ""});
    req.dns_names = {"localhost"};
    req.ip_addresses = {"127.0.0.1"};
    req.server_auth = true;
    req.client_auth = true;
    auto pair = tiresias::security::IssueCertificate(*ca, req);
    if (!pair.ok()) {
      std::fprintf(stderr, "submit_bench: %s\n",
                   std::string(pair.status().message()).c_str());
      return 1;
    }
    server_tls = {false, ca->cert_pem, pair->cert_pem, pair->key_pem};
    security.ca_pem = ca->cert_pem;
    for (int c = 0; c < clients; ++c) {
      auto token = (*state)->CreateToken(absl::StrCat("bench", c), false,
                                         std::nullopt, "submit_bench");
      if (!token.ok()) {
        std::fprintf(stderr, "submit_bench: %s\n",
                     std::string(token.status().message()).c_str());
        return 1;
      }
      security.tokens.push_back(token->text);
    }
  }
  auto server =
      MasterServer::Start(state->get(), &clock, "127.0.0.1:0", server_tls);
#else
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
#endif
  if (!server.ok()) {
    std::fprintf(stderr, "submit_bench: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());

  std::vector<std::vector<double>> latencies(clients);
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < clients; ++c) {
    // The first jobs % clients clients take one more.
    const int mine = jobs / clients + (c < jobs % clients ? 1 : 0);
    threads.emplace_back([&, c, mine] {
      latencies[c].reserve(mine);
      if (!RunClient(address, mine, security, c, &latencies[c])) ok = false;
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double total_s = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  if (!ok) return 1;
  std::vector<double> latency_s;
  for (const auto& list : latencies) {
    latency_s.insert(latency_s.end(), list.begin(), list.end());
  }
  std::string batching;
#ifndef SUBMIT_BENCH_NO_STATS
  const MasterState::SubmitStats stats = (*state)->submit_stats();
  batching = absl::StrCat("; ", stats.batches, " transactions, ",
                          absl::SixDigits(static_cast<double>(stats.jobs) /
                                          std::max<int64_t>(1, stats.batches)),
                          " jobs each");
#endif
  std::printf(
      "%d jobs from %d client%s submitted and durable in %.2f s: %.0f jobs/s; "
      "latency p50 %.2f ms, p99 %.2f ms, max %.2f ms%s%s (state dir %s%s)\n",
      jobs, clients, clients == 1 ? "" : "s", total_s, jobs / total_s,
      PercentileMs(latency_s, 0.5), PercentileMs(latency_s, 0.99),
      PercentileMs(latency_s, 1.0), batching.c_str(),
      security.tls ? "; TLS + bearer tokens" : "", state_dir.c_str(),
      store_url.empty() ? "" : ", replicated through etcd");
  (*server)->Shutdown();
  server->reset();
  state->reset();  // before the log its store writes through
#ifndef SUBMIT_BENCH_NO_STATS
  log.reset();
  lead.reset();
#endif
  if (temporary) std::filesystem::remove_all(state_dir);
  return 0;
}
