// `tiresias tune` against a running master: its settings, nodes and jobs,
// and --apply / --auto (cli/tune_round.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cluster_client.h"
#include "cli/tune_round.h"
#include "cli/tune_window.h"
#include "master/tuning_convert.h"
#include "tune/drift.h"

namespace tiresias::tune_cli {

volatile std::sig_atomic_t g_stop = 0;

namespace {

TuneSettings SettingsOf(const v1::ClusterStatus& status) {
  TuneSettings s;
  if (absl::StatusOr<Scheduler::Tuning> t =
          TuningFromProto(status.tuning().tuning());
      t.ok()) {
    s.queues = t->queues;
    s.promote_knob = t->promote_knob;
    s.queue_order = t->queue_order;
  }
  // The placement in force, named, so that applying keeps it unless the
  // search changed it.
  s.placement = status.placement();
  return s;
}

void ToProto(const TuneSettings& s, v1::Tuning* out) {
  TuningToProto({s.queues, s.promote_knob, s.queue_order}, s.placement, out);
}

absl::StatusOr<v1::ClusterStatus> GetStatus(cli::MasterClient& client,
                                            const std::string& master) {
  v1::ClusterStatus status;
  grpc::Status s =
      client.stub().GetClusterStatus(client.Context().get(), {}, &status);
  if (!s.ok()) {
    return absl::UnavailableError(cli::DescribeRpcError(s, master, "tune"));
  }
  return status;
}

// One round against the master: read its settings, nodes and jobs, tune,
// and apply when asked and worth it. Returns the exit code.
int TuneMasterOnce(const TuneFlags& f, cli::MasterClient& client,
                   double window_s, bool apply) {
  absl::StatusOr<v1::ClusterStatus> status = GetStatus(client, f.master);
  if (!status.ok()) return cli::Fail(std::string(status.status().message()));
  v1::ListNodesResponse nodes;
  grpc::Status s = client.stub().ListNodes(client.Context().get(), {}, &nodes);
  if (!s.ok()) return cli::Fail(cli::DescribeRpcError(s, f.master, "tune"));
  absl::StatusOr<Topology> topology = TopologyOfNodes(nodes);
  if (!topology.ok()) {
    return cli::Fail(absl::StrCat("tune: ", topology.status().message()));
  }
  TuneFlags flags = f;
  flags.policy = status->policy();
  absl::StatusOr<TuneOptions> options = MakeOptions(flags);
  if (!options.ok()) return cli::Fail(std::string(options.status().message()));
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  v1::ListJobsRequest req;
  req.set_submitted_since(now - window_s);
  req.set_page_size(5000);
  std::vector<v1::Job> jobs;
  if (absl::Status listed = cli::ForEachListedJob(
          client, req, "tune",
          [&](v1::Job& job) { jobs.push_back(std::move(job)); });
      !listed.ok()) {
    return cli::Fail(std::string(listed.message()));
  }
  const TuneSettings current = SettingsOf(*status);
  TuneWindow w = MasterWindow(jobs, now, window_s, *topology, f.seed);
  const std::vector<double> sizes = QuantileSample(w.known_sizes, 2000);
  absl::StatusOr<Round> r =
      TuneOnce(flags, current, std::move(w), *topology, *options);
  if (!r.ok()) return cli::Fail(absl::StrCat("tune: ", r.status().message()));
  Judge(f, &*r);
  const std::string cluster = absl::StrCat(topology->num_servers(), " nodes, ",
                                           topology->total_gpus(), " GPUs");
  const std::string where =
      absl::StrCat("the last ", f.window, " of the master at ", f.master);
  if (!apply) {
    if (r->would_apply) {
      r->why = "Not applied: pass --apply to apply it.";
    }
    PrintRound(f, *r, where, cluster);
    return 0;
  }
  // Applied: the chosen settings; kept: the current ones again, so that
  // drift is judged against the window just tuned on.
  const TuneResult& t = r->result;
  const TuneSettings& sent =
      t.rows[r->would_apply ? t.chosen : t.current].settings;
  v1::SetTuningRequest set;
  ToProto(sent, set.mutable_tuning());
  *set.mutable_expected() = status->tuning().tuning();
  if (set.expected().placement().empty()) {
    set.mutable_expected()->set_placement(status->placement());
  }
  if (g_stop) return 130;  // interrupted: nothing sent
  set.set_note(absl::StrFormat(
      "tune %s: predicted gain %s in %s JCT on %lld held-out jobs of "
      "the last %s (%lld runs)",
      r->would_apply ? "applied" : "kept", Percent(t.predicted_gain),
      f.objective == "p95" ? "p95" : "average",
      static_cast<long long>(t.holdout_jobs), f.window,
      static_cast<long long>(t.runs)));
  set.mutable_window_sizes()->Assign(sizes.begin(), sizes.end());
  auto admin = v1::Admin::NewStub(client.channel());
  v1::SetTuningResponse resp;
  s = admin->SetTuning(client.Context().get(), set, &resp);
  if (!s.ok()) {
    PrintRound(f, *r, where, cluster);
    return cli::Fail(cli::DescribeRpcError(s, f.master, "tune --apply"));
  }
  r->why = r->would_apply
               ? absl::StrFormat(
                     "Applied: the master schedules with %s from now on.",
                     sent.Flags())
               : absl::StrCat(r->why,
                              " Drift is judged against this window from "
                              "now on.");
  PrintRound(f, *r, where, cluster);
  return 0;
}

}  // namespace

int TuneMaster(const TuneFlags& f) {
  absl::StatusOr<double> window = ParseSpan("--window", f.window);
  if (!window.ok()) return cli::Fail(std::string(window.status().message()));
  cli::MasterClient client(f.master);
  if (f.auto_interval.empty()) {
    return TuneMasterOnce(f, client, *window, f.apply);
  }
  absl::StatusOr<double> interval = ParseSpan("--auto", f.auto_interval);
  if (!interval.ok())
    return cli::Fail(std::string(interval.status().message()));
  // The first signal stops after the round (sending nothing more); a
  // second one ends the process at once.
  auto on_signal = [](int sig) {
    g_stop = 1;
    std::signal(sig, SIG_DFL);
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // With --json, stdout holds only the rounds' documents.
  std::FILE* log = f.json ? stderr : stdout;
  // Drift is looked for this often between rounds.
  const double drift_every = std::min(60.0, *interval);
  while (!g_stop) {
    std::fprintf(log, "%s: tuning\n",
                 cli::FormatTime(std::time(nullptr)).c_str());
    std::fflush(log);
    // A failed round (the master away) is said and tried again at the
    // next interval, not at the next drift check.
    const bool ok = TuneMasterOnce(f, client, *window, /*apply=*/true) == 0;
    std::fflush(stdout);
    const auto next = std::chrono::steady_clock::now() +
                      std::chrono::duration<double>(*interval);
    auto drift_check = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(drift_every);
    bool drift = false;
    while (!g_stop && !drift && std::chrono::steady_clock::now() < next) {
      if (!ok) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (std::chrono::steady_clock::now() < drift_check) continue;
      drift_check = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(drift_every);
      absl::StatusOr<v1::ClusterStatus> status = GetStatus(client, f.master);
      if (status.ok() && status->tuning().drift()) {
        std::fprintf(log,
                     "%s: drift (KS D = %.3f, p = %.2g): tuning again now\n",
                     cli::FormatTime(std::time(nullptr)).c_str(),
                     status->tuning().drift_statistic(),
                     status->tuning().drift_p_value());
        drift = true;
      }
    }
  }
  return 0;
}

}  // namespace tiresias::tune_cli
