// A fleet of emulated agents against a real master process: the issue-27
// scale targets measured from outside, the master in its default (TLS,
// tokens) as a user runs it.
//
// The bench starts `tiresias master` (--init-ca, a fresh state folder) and
// emulates N agents in this one process (fleet_agents.h: each its own TLS
// connection and certificate, the agent protocol as `tiresias agent`
// speaks it, no thread per agent). The master's clients are gRPC calls
// with the admin token.
//
//   build/bench/fleet_bench --tiresias build/src/cli/tiresias
//       [--agents 2000] [--gpus 8] [--jobs 100000] [--idle-seconds 30]
//       [--load 2] [--churn-rate 250] [--churn-seconds 20] [--dir DIR]
//       [--standby 0|1] [--attempt-ms 5000] [--stop-after restart]
//
// With --standby 1 the agents are given a second master address, where
// nothing listens (a standby), as an HA deployment gives them every
// master's: their connections then ping every few seconds
// (security::Dial), which the idle phase counts, and a connection attempt
// is given up after --attempt-ms (5000, as `tiresias agent` asks).
//
// Phases, each judged from what the emulated agents saw (ground truth: which
// tasks ran, which were stopped and why) and from the master process's own
// CPU time (/proc/PID/stat):
//   register  all agents register at once;
//   fill      agents x gpus long 1-GPU jobs, all started; then the rest of
//             --jobs as a backlog of long jobs that cannot start;
//   idle      nothing changes: the master's CPU, threads, memory;
//   restart   the master is SIGKILLed and started again on its state, with
//             --load busy processes on the host: time until every agent is
//             registered again, tasks stopped or fenced (the target: none);
//             then idle again;
//   list      every job read page by page: the master's memory after;
//   churn     the backlog cancelled and 1/8 of the GPUs freed, then
//             --churn-rate jobs/s of 0.5-2 s offered by 8 submitters: submit
//             latency, jobs ended, the scheduling pass (from /metrics).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/open_files.h"
#include "fleet_agents.h"
#include "fleet_master.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/pem_files.h"
#include "security/pki.h"
#include "security/tls.h"

namespace {

namespace v1 = tiresias::v1;
namespace security = tiresias::security;
using tiresias::fleet::Fleet;
using tiresias::fleet::FreePort;
using tiresias::fleet::Key;
using tiresias::fleet::Master;
using tiresias::fleet::Metrics;
using tiresias::fleet::Now;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "fleet_bench: %s\n", why.c_str());
  std::exit(1);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");  // printed "nan": nothing to rank
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// ---- The master's clients ------------------------------------------------

struct Client {
  std::unique_ptr<v1::Tiresias::Stub> stub;
  std::string token;

  template <typename Fn>
  grpc::Status Call(Fn fn, double deadline_s = 60) {
    grpc::ClientContext ctx;
    security::AttachToken(&ctx, token);
    ctx.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
    return fn(&ctx);
  }
};

v1::JobSpec Spec(const std::string& name, double seconds) {
  v1::JobSpec spec;
  spec.set_name(name);
  spec.set_gpus(1);
  spec.add_command("sleep");
  spec.add_command(seconds == INFINITY ? "1000000000" : absl::StrCat(seconds));
  return spec;
}

// Submits `count` jobs named `name` in batches; their ids.
std::vector<int64_t> SubmitMany(Client& c, int count, const std::string& name,
                                double seconds) {
  std::vector<int64_t> ids;
  for (int done = 0; done < count;) {
    v1::SubmitJobsRequest req;
    const int n = std::min(2000, count - done);
    for (int i = 0; i < n; ++i) *req.add_jobs() = Spec(name, seconds);
    v1::SubmitJobsResponse resp;
    grpc::Status s = c.Call([&](grpc::ClientContext* ctx) {
      return c.stub->SubmitJobs(ctx, req, &resp);
    });
    if (!s.ok()) Die("SubmitJobs: " + s.error_message());
    ids.insert(ids.end(), resp.job_ids().begin(), resp.job_ids().end());
    done += n;
  }
  return ids;
}

bool WaitFor(const std::function<bool()>& done, double seconds,
             double poll = 0.1) {
  const double deadline = Now() + seconds;
  while (Now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll));
  }
  return done();
}

struct Options {
  std::string tiresias, dir, stop_after;
  int agents = 2000, gpus = 8, jobs = 100000, load = 2, standby = 0,
      attempt_ms = 5000;
  double idle_seconds = 30, churn_rate = 250, churn_seconds = 20;
};

Options Parse(int argc, char** argv) {
  Options o;
  o.dir = (std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp") +
          std::string("/tiresias-fleet-bench");
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Die(flag + ": expected a value");
    const std::string v = argv[i + 1];
    auto number = [&](double* out) {
      if (!absl::SimpleAtod(v, out) || *out < 0) {
        Die(flag + ": expected a number >= 0, got '" + v + "'");
      }
    };
    double x = 0;
    if (flag == "--tiresias") {
      o.tiresias = v;
    } else if (flag == "--dir") {
      o.dir = v;
    } else if (flag == "--agents") {
      number(&x), o.agents = static_cast<int>(x);
    } else if (flag == "--gpus") {
      number(&x), o.gpus = static_cast<int>(x);
    } else if (flag == "--jobs") {
      number(&x), o.jobs = static_cast<int>(x);
    } else if (flag == "--standby") {
      number(&x), o.standby = static_cast<int>(x);
    } else if (flag == "--stop-after") {
      if (v != "restart")
        Die("--stop-after: expected 'restart', got '" + v + "'");
      o.stop_after = v;
    } else if (flag == "--attempt-ms") {
      number(&x), o.attempt_ms = static_cast<int>(x);
    } else if (flag == "--load") {
      number(&x), o.load = static_cast<int>(x);
    } else if (flag == "--idle-seconds") {
      number(&o.idle_seconds);
    } else if (flag == "--churn-rate") {
      number(&o.churn_rate);
    } else if (flag == "--churn-seconds") {
      number(&o.churn_seconds);
    } else {
      Die("unknown flag " + flag);
    }
  }
  if (o.tiresias.empty()) Die("--tiresias PATH (the tiresias binary) needed");
  if (o.agents < 1 || o.gpus < 1) Die("--agents and --gpus must be >= 1");
  if (o.attempt_ms < 1) Die("--attempt-ms must be >= 1");
  return o;
}

// Busy processes (nice 0) loading the host, killed by the destructor.
struct Load {
  std::vector<pid_t> pids;
  explicit Load(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (uint64_t x = 0;; ++x) {
          asm volatile("" : : "r"(x));  // kept: the loop is the load
        }
      }
      pids.push_back(pid);
    }
  }
  ~Load() {
    for (pid_t pid : pids) kill(pid, SIGKILL);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  }
};

// This network namespace's TCP counters (/proc/net/snmp): connections
// opened (connect(2) that reached SYN-SENT), attempts that failed, and
// established ones reset. On a quiet host the bench is what opens
// connections, its agents nearly all of them (and its /metrics probes,
// 20 a second while it waits for the master): how often they dial, seen
// from the kernel rather than from the master.
struct TcpCounters {
  long opened = 0, failed = 0, reset = 0;
  static TcpCounters Now() {
    std::ifstream in("/proc/net/snmp");
    std::string names, values;
    TcpCounters out;
    while (std::getline(in, names) && std::getline(in, values)) {
      if (names.rfind("Tcp:", 0) != 0) continue;
      std::istringstream n(names), v(values);
      std::string name, value;
      while (n >> name && v >> value) {
        long x = 0;
        if (!absl::SimpleAtoi(value, &x)) continue;
        if (name == "ActiveOpens") out.opened = x;
        if (name == "AttemptFails") out.failed = x;
        if (name == "EstabResets") out.reset = x;
      }
    }
    return out;
  }
  TcpCounters operator-(const TcpCounters& o) const {
    return {opened - o.opened, failed - o.failed, reset - o.reset};
  }
};

struct Sample {
  double cpu, wall;
};

// This process's CPU time: the emulated agents' side of every call and
// handshake, which on a real cluster runs on the nodes, not beside the
// master.
double OwnCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void PrintIdle(const char* phase, const Master& m, double cpu_s, double wall_s,
               long heartbeats, const std::map<std::string, double>& before,
               const std::map<std::string, double>& after) {
  auto delta = [&](const std::string& k) {
    auto a = after.find(k), b = before.find(k);
    return (a == after.end() ? 0 : a->second) -
           (b == before.end() ? 0 : b->second);
  };
  const double passes = delta("tiresias_scheduling_passes_total");
  const double pass_s = delta("tiresias_scheduling_pass_seconds_total");
  std::printf(
      "%-8s master CPU %5.1f%% of a core over %.0f s, %ld threads, RSS %ld "
      "MB, %.0f heartbeats/s, %.0f passes (%.2f ms each)\n",
      phase, 100 * cpu_s / wall_s, wall_s, m.Status("Threads"),
      m.Status("VmRSS") / 1024, heartbeats / wall_s, passes,
      passes > 0 ? 1000 * pass_s / passes : 0.0);
  std::printf("         threads: %s\n", m.ThreadNames().c_str());
}

int Run(const Options& o) {
  std::printf("raised this process's open-file limit to %ld\n",
              static_cast<long>(tiresias::RaiseOpenFileLimit()));
  std::filesystem::remove_all(o.dir);
  std::filesystem::create_directories(o.dir);
  Master master{.binary = o.tiresias, .dir = o.dir};
  master.port = FreePort();
  master.http_port = FreePort();
  master.Start();
  const std::string token_path = o.dir + "/state/admin-token";
  if (!WaitFor([&] { return std::filesystem::exists(token_path); }, 30)) {
    Die("the master wrote no admin token; see " + o.dir + "/master.log");
  }
  std::string token;
  std::getline(std::ifstream(token_path) >> std::ws, token);
  const std::string tls = o.dir + "/state/tls";
  auto ca_pem = security::ReadPem(tls + "/ca.pem");
  auto ca_key =
      security::ReadPem(tls + "/ca-key.pem", security::PemKind::kPrivateKey);
  if (!ca_pem.ok() || !ca_key.ok()) Die("no CA in " + tls);
  const std::string address = absl::StrCat("127.0.0.1:", master.port);
  Client client;
  client.token = token;
  client.stub = v1::Tiresias::NewStub(
      security::Dial(address, security::TlsConfig{.ca_pem = *ca_pem}, {}));
  auto metrics = [&] { return Metrics(master.http_port, token); };

  // register
  double t0 = Now();
  const std::string agents_dial =
      o.standby > 0 ? absl::StrCat(address, ",127.0.0.1:", FreePort())
                    : address;
  Fleet fleet(agents_dial, {*ca_pem, *ca_key}, o.agents, o.gpus, o.attempt_ms);
  std::printf("certificates for %d agents issued in %.1f s\n", o.agents,
              Now() - t0);
  t0 = Now();
  TcpCounters tcp0 = TcpCounters::Now();
  fleet.StartTicking();
  if (!WaitFor([&] { return fleet.RegisteredSince(0) == o.agents; }, 300)) {
    Die(absl::StrCat("only ", fleet.RegisteredSince(0), " of ", o.agents,
                     " agents registered in 300 s"));
  }
  TcpCounters tcp = TcpCounters::Now() - tcp0;
  std::printf(
      "register all %d agents at once: %.1f s, %ld failed calls retried; "
      "TCP connections opened %ld (failed %ld, reset %ld)\n",
      o.agents, Now() - t0, fleet.counters().register_failures.load(),
      tcp.opened, tcp.failed, tcp.reset);

  // fill
  const int slots = o.agents * o.gpus;
  t0 = Now();
  const std::vector<int64_t> long_ids =
      SubmitMany(client, std::min(slots, o.jobs), "long", INFINITY);
  if (!WaitFor([&] { return fleet.Running().size() >= long_ids.size(); }, 600,
               0.5)) {
    Die(absl::StrCat(fleet.Running().size(), " of ", long_ids.size(),
                     " long jobs running after 600 s"));
  }
  std::printf("fill     %zu long jobs submitted and running: %.1f s\n",
              long_ids.size(), Now() - t0);
  t0 = Now();
  const int backlog = std::max(0, o.jobs - slots);
  {
    const auto m0 = metrics();
    SubmitMany(client, backlog, "backlog", INFINITY);
    const double submitted = Now() - t0;
    std::this_thread::sleep_for(std::chrono::seconds(5));
    const auto m1 = metrics();
    auto delta = [&](const std::string& k) {
      return (m1.count(k) ? m1.at(k) : 0) - (m0.count(k) ? m0.at(k) : 0);
    };
    const double passes = delta("tiresias_scheduling_passes_total");
    std::printf(
        "fill     %d backlog jobs submitted: %.1f s; %.0f passes meanwhile, "
        "%.2f ms each\n",
        backlog, submitted, passes,
        passes > 0
            ? 1000 * delta("tiresias_scheduling_pass_seconds_total") / passes
            : 0.0);
  }

  // idle: --idle-seconds of nothing changing, the master's cost
  auto idle = [&] {
    const auto m0 = metrics();
    const double c0 = master.CpuSeconds(), w0 = Now();
    const long h0 = fleet.counters().heartbeats;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    PrintIdle("idle", master, master.CpuSeconds() - c0, Now() - w0,
              fleet.counters().heartbeats - h0, m0, metrics());
  };
  idle();

  // restart
  {
    const std::set<Key> before = fleet.Running();
    const long stopped0 = fleet.counters().stopped,
               fenced0 = fleet.counters().fenced,
               register_failures0 = fleet.counters().register_failures,
               heartbeat_failures0 = fleet.counters().heartbeat_failures;
    auto load = std::make_unique<Load>(o.load);
    tcp0 = TcpCounters::Now();
    const double own0 = OwnCpuSeconds();
    const double killed = Now();
    master.Kill();
    master.Start();
    if (!WaitFor([&] { return Metrics(master.http_port, token).size() > 0; },
                 300, 0.05)) {
      Die("the restarted master did not answer /metrics in 300 s");
    }
    const double answering = Now();
    const bool all = WaitFor(
        [&] { return fleet.RegisteredSince(killed) == o.agents; }, 300, 0.05);
    const double c_restart = master.CpuSeconds();
    tcp = TcpCounters::Now() - tcp0;
    const double own = OwnCpuSeconds() - own0;
    std::vector<double> back = fleet.RegistrationTimes(killed);
    const double last =
        back.empty() ? 0 : *std::max_element(back.begin(), back.end());
    for (double& t : back) t -= answering;
    std::this_thread::sleep_for(std::chrono::seconds(10));
    const std::set<Key> after = fleet.Running();
    load.reset();
    long kept = 0;
    for (const Key& k : before) kept += after.count(k);
    std::printf(
        "restart  SIGKILL, %d busy processes: the new master answered after "
        "%.1f s; %s%zu agents registered again %.1f s after it answered "
        "(%.1f s after the kill), master CPU %.1f s until then; of %zu tasks "
        "running before, %ld still running 10 s later; stopped by the "
        "master %ld, fenced by a lease %ld; TCP connections opened until "
        "all were back %ld (failed %ld, reset %ld)\n",
        o.load, answering - killed, all ? "all " : "only ", back.size(),
        last - answering, last - killed, c_restart, before.size(), kept,
        fleet.counters().stopped - stopped0, fleet.counters().fenced - fenced0,
        tcp.opened, tcp.failed, tcp.reset);
    std::printf(
        "         registered again after the master answered: p10 %.1f s, "
        "p50 %.1f s, p90 %.1f s; calls failed meanwhile: Register %ld, "
        "Heartbeat %ld; the agents' emulator's CPU %.1f s\n",
        Percentile(back, 0.1), Percentile(back, 0.5), Percentile(back, 0.9),
        fleet.counters().register_failures - register_failures0,
        fleet.counters().heartbeat_failures - heartbeat_failures0, own);
    idle();
  }
  if (o.stop_after == "restart") {
    fleet.StopTicking();
    master.Stop();
    return 0;
  }

  // list: every job, page by page, as `tiresias jobs --all` reads them
  {
    const long rss0 = master.Status("VmRSS");
    t0 = Now();
    size_t listed = 0;
    int pages = 0;
    v1::ListJobsRequest req;
    req.set_page_size(5000);
    do {
      v1::ListJobsResponse resp;
      grpc::Status s = client.Call([&](grpc::ClientContext* ctx) {
        return client.stub->ListJobs(ctx, req, &resp);
      });
      if (!s.ok()) Die("ListJobs: " + s.error_message());
      listed += resp.jobs_size();
      ++pages;
      req.set_page_token(resp.next_page_token());
    } while (!req.page_token().empty());
    const double took = Now() - t0;
    const long rss1 = master.Status("VmRSS");
    std::this_thread::sleep_for(std::chrono::seconds(5));
    std::printf(
        "list     %zu jobs in %d pages: %.2f s; master RSS %ld MB before, "
        "%ld MB after, %ld MB 5 s later\n",
        listed, pages, took, rss0 / 1024, rss1 / 1024,
        master.Status("VmRSS") / 1024);
  }

  // churn
  {
    t0 = Now();
    v1::UpdateJobsRequest cancel;
    cancel.set_action(v1::JOB_ACTION_CANCEL);
    cancel.set_name("backlog");
    v1::UpdateJobsResponse resp;
    grpc::Status s = client.Call([&](grpc::ClientContext* ctx) {
      return client.stub->UpdateJobs(ctx, cancel, &resp);
    });
    if (!s.ok()) Die("cancel the backlog: " + s.error_message());
    v1::UpdateJobsRequest free;
    free.set_action(v1::JOB_ACTION_CANCEL);
    const int freed = static_cast<int>(long_ids.size()) / 8;
    for (int i = 0; i < freed; ++i) free.add_job_ids(long_ids[i]);
    s = client.Call([&](grpc::ClientContext* ctx) {
      return client.stub->UpdateJobs(ctx, free, &resp);
    });
    if (!s.ok()) Die("cancel long jobs: " + s.error_message());
    WaitFor([&] { return fleet.Running().size() <= long_ids.size() - freed; },
            120, 0.5);
    std::printf("churn    backlog cancelled and %d GPUs freed: %.1f s\n", freed,
                Now() - t0);

    const int submitters = 8;
    std::mutex mu;
    std::vector<double> latencies;
    std::atomic<long> refused{0};
    const long exited0 = fleet.counters().exited,
               started0 = fleet.counters().started;
    const auto m0 = metrics();
    const double c0 = master.CpuSeconds(), w0 = Now();
    std::vector<std::thread> threads;
    for (int t = 0; t < submitters; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(t + 1);
        std::uniform_real_distribution<double> seconds(0.5, 2.0);
        const double gap = submitters / o.churn_rate;
        double next = w0 + t * gap / submitters;
        std::vector<double> mine;
        // Offered on a schedule, but not past its end however slow the
        // answers.
        while (next < w0 + o.churn_seconds && Now() < w0 + o.churn_seconds) {
          const double wait = next - Now();
          if (wait > 0) {
            std::this_thread::sleep_for(std::chrono::duration<double>(wait));
          }
          v1::SubmitJobRequest req;
          *req.mutable_spec() =
              Spec("churn", std::round(seconds(rng) * 10) / 10);
          v1::SubmitJobResponse r;
          const double sent = Now();
          grpc::Status st = client.Call(
              [&](grpc::ClientContext* ctx) {
                return client.stub->SubmitJob(ctx, req, &r);
              },
              10);
          if (st.ok()) {
            mine.push_back(Now() - sent);
          } else {
            refused++;
          }
          next += gap;
        }
        std::lock_guard lock(mu);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
      });
    }
    for (auto& t : threads) t.join();
    const double wall = Now() - w0;
    const double cpu = master.CpuSeconds() - c0;
    const auto m1 = metrics();
    auto delta = [&](const std::string& k) {
      return (m1.count(k) ? m1.at(k) : 0) - (m0.count(k) ? m0.at(k) : 0);
    };
    const double passes = delta("tiresias_scheduling_passes_total");
    const double pass_s = delta("tiresias_scheduling_pass_seconds_total");
    std::printf(
        "churn    %.0f jobs/s offered for %.0f s: %.1f submitted/s (%ld "
        "refused), submit p50 %.1f ms p99 %.1f ms; tasks started %.1f/s, "
        "ended %.1f/s; master CPU %.0f%% of a core; %.0f passes, %.2f ms "
        "each\n",
        o.churn_rate, wall, latencies.size() / wall, refused.load(),
        1000 * Percentile(latencies, 0.5), 1000 * Percentile(latencies, 0.99),
        (fleet.counters().started - started0) / wall,
        (fleet.counters().exited - exited0) / wall, 100 * cpu / wall, passes,
        passes > 0 ? 1000 * pass_s / passes : 0.0);
  }
  fleet.StopTicking();
  master.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, nullptr, _IOLBF, 0);  // not copied into forked children
  return Run(Parse(argc, argv));
}
