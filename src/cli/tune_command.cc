// `tiresias tune`: the scheduling settings (K queues and their bounds,
// PROMOTEKNOB, queue order, placement) that would have served a window of
// jobs best, from a trace file or from a running master's own jobs, and
// with --apply / --auto the master's live settings changed to them when
// the gain predicted on held-out recent jobs is large enough (tune/tune.h).
#include "cli/tune_command.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cluster_client.h"
#include "cli/progress.h"
#include "cli/sweep.h"
#include "cli/tune_window.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "place/placement.h"
#include "trace/cluster_spec.h"
#include "trace/trace_reader.h"
#include "tune/drift.h"
#include "tune/tune.h"

namespace tiresias {
namespace {

// Set by SIGINT/SIGTERM under --auto: no change is sent after it.
volatile std::sig_atomic_t g_stop = 0;

struct TuneFlags {
  std::string master;
  std::string trace;
  std::string format = "auto";
  std::string cluster;
  std::string window = "14d";
  double end_hours = -1;  // trace: where the window ends; < 0: its last job
  std::string policy = "tiresias-l";
  std::string thresholds = "3600";
  std::string promote_knob = "inf";
  std::string queue_order = "stable";
  std::string placement;
  std::string search_thresholds;
  std::string search_knobs = "inf,2,4,8,16";
  std::string search_orders = "stable,start-time";
  std::string search_placements;
  std::string search = "halving";
  double holdout = 0.25;
  std::string objective = "avg";
  double slowdown_margin = 0.05;
  double wait_margin = 0.05;
  double p95_margin = 0.05;
  int finalists = 5;
  int threads = 0;
  uint64_t seed = 1;
  int top = 15;
  bool json = false;
  bool apply = false;
  double min_gain = 0.05;
  std::string auto_interval;
};

// "14d", "36h", "90m", "45s" or seconds.
absl::StatusOr<double> ParseSpan(const std::string& flag,
                                 const std::string& text) {
  double unit = 1;
  std::string number = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 'd':
        unit = 86400;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'm':
        unit = 60;
        break;
      case 's':
        unit = 1;
        break;
      default:
        unit = 0;
        break;
    }
    if (unit > 0) number = text.substr(0, text.size() - 1);
    if (unit == 0) unit = 1;
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value) ||
      value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " ", text,
        ": expected a positive span: days, hours, minutes or seconds "
        "(14d, 36h, 90m, 45s)"));
  }
  return value * unit;
}

std::vector<std::string> Items(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipWhitespace());
}

absl::StatusOr<TuneSpace> MakeSpace(const TuneFlags& f,
                                    const TuneSettings& current) {
  TuneSpace space = TuneSpace::Default(current);
  if (!f.search_thresholds.empty()) {
    space.queues.clear();
    for (const std::string& item : Items(f.search_thresholds)) {
      absl::StatusOr<QueueConfig> q = QueueConfig::Parse(item);
      if (!q.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--search-thresholds: ", q.status().message()));
      }
      space.queues.push_back(*q);
    }
  }
  space.knobs.clear();
  for (const std::string& item : Items(f.search_knobs)) {
    absl::StatusOr<double> knob = ParseKnob(item);
    if (!knob.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--search-knobs: ", knob.status().message()));
    }
    space.knobs.push_back(*knob);
  }
  space.orders.clear();
  for (const std::string& item : Items(f.search_orders)) {
    absl::StatusOr<QueueOrder> order = ParseQueueOrder(item);
    if (!order.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--search-orders: ", order.status().message()));
    }
    space.orders.push_back(*order);
  }
  if (!f.search_placements.empty()) {
    space.placements.clear();
    for (const std::string& item : Items(f.search_placements)) {
      if (absl::Status s = MakePlacer(item).status(); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--search-placements: ", s.message()));
      }
      space.placements.push_back(item);
    }
  }
  return space;
}

absl::StatusOr<TuneOptions> MakeOptions(const TuneFlags& f) {
  TuneOptions o;
  o.policy = f.policy;
  if (f.search == "grid") {
    o.search = TuneSearch::kGrid;
  } else if (f.search != "halving") {
    return absl::InvalidArgumentError(
        absl::StrCat("--search ", f.search, ": expected halving or grid"));
  }
  if (f.objective == "p95") {
    o.objective = TuneObjective::kP95Jct;
  } else if (f.objective != "avg") {
    return absl::InvalidArgumentError(
        absl::StrCat("--objective ", f.objective, ": expected avg or p95"));
  }
  o.holdout_fraction = f.holdout;
  o.slowdown_margin = f.slowdown_margin;
  o.wait_margin = f.wait_margin;
  o.p95_margin = f.p95_margin;
  o.finalists = f.finalists;
  o.threads =
      f.threads > 0
          ? f.threads
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  o.base.scheduler.seed = f.seed;
  if (!(f.min_gain >= 0) || !std::isfinite(f.min_gain)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min-gain ", f.min_gain, ": expected a non-negative fraction"));
  }
  return o;
}

std::string Hours(double seconds) {
  return absl::StrFormat("%.2f h", seconds / 3600);
}

std::string Percent(double fraction) {
  return absl::StrFormat("%+.1f%%", 100 * fraction);
}

nlohmann::json MetricsJson(const TuneMetrics& m) {
  return {{"jobs", m.jobs},
          {"avg_jct_s", m.avg_jct_s},
          {"p95_jct_s", m.p95_jct_s},
          {"max_slowdown", m.max_slowdown},
          {"longest_wait_s", m.longest_wait_s},
          {"jain_slowdown", m.jain}};
}

nlohmann::json SettingsJson(const TuneSettings& s) {
  return {{"thresholds", s.queues.thresholds()},
          {"promote_knob", std::isinf(s.promote_knob)
                               ? nlohmann::json("inf")
                               : nlohmann::json(s.promote_knob)},
          {"queue_order", std::string(QueueOrderName(s.queue_order))},
          {"placement", s.placement},
          {"flags", s.Flags()}};
}

// What one tuning round found and, when asked, did.
struct Round {
  TuneWindow window;
  TuneResult result;
  double seconds = 0;
  bool would_apply = false;
  std::string why;  // why it is (not) applied
};

void PrintRound(const TuneFlags& f, const Round& r, const std::string& where,
                const std::string& topology) {
  const TuneResult& t = r.result;
  if (f.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const TuneRow& row = t.rows[i];
      rows.push_back({{"settings", SettingsJson(row.settings)},
                      {"search", MetricsJson(row.search)},
                      {"rounds", row.rounds},
                      {"eligible", row.eligible},
                      {"failed", row.failed},
                      {"holdout", row.holdout ? MetricsJson(*row.holdout)
                                              : nlohmann::json(nullptr)},
                      {"current", static_cast<int>(i) == t.current},
                      {"chosen", static_cast<int>(i) == t.chosen}});
    }
    nlohmann::json out = {{"source", where},
                          {"cluster", topology},
                          {"jobs", r.window.jobs.size()},
                          {"censored_jobs", r.window.censored},
                          {"left_out_jobs", r.window.left_out},
                          {"search_jobs", t.search_jobs},
                          {"holdout_jobs", t.holdout_jobs},
                          {"runs", t.runs},
                          {"seconds", r.seconds},
                          {"current", SettingsJson(t.rows[t.current].settings)},
                          {"chosen", SettingsJson(t.rows[t.chosen].settings)},
                          {"holdout_current", MetricsJson(t.current_holdout)},
                          {"holdout_chosen", MetricsJson(t.chosen_holdout)},
                          {"predicted_gain", t.predicted_gain},
                          {"holdout_keeps_floors", t.holdout_eligible},
                          {"apply", r.would_apply},
                          {"why", r.why},
                          {"rows", std::move(rows)}};
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf(
      "Tuned on %zu jobs from %s on %s (%lld still running or waiting, "
      "their durations drawn; %lld left out): the first %lld searched, the "
      "last %lld held out; %lld runs (%s) in %.1f s.\n\n",
      r.window.jobs.size(), where.c_str(), topology.c_str(),
      static_cast<long long>(r.window.censored),
      static_cast<long long>(r.window.left_out),
      static_cast<long long>(t.search_jobs),
      static_cast<long long>(t.holdout_jobs), static_cast<long long>(t.runs),
      f.search.c_str(), r.seconds);
  std::printf("%4s  %-17s %5s  %-10s %-11s %9s %9s %9s %10s %5s %9s\n", "RANK",
              "THRESHOLDS", "KNOB", "ORDER", "PLACEMENT", "AVG JCT", "P95 JCT",
              "SLOWDOWN", "WAIT", "JAIN", "HELD-OUT");
  const int shown = std::min<int>(static_cast<int>(t.rows.size()), f.top);
  for (int i = 0; i < static_cast<int>(t.rows.size()); ++i) {
    if (i >= shown && i != t.current && i != t.chosen) continue;
    const TuneRow& row = t.rows[i];
    std::string mark;
    if (i == t.chosen) mark = " chosen";
    if (i == t.current) mark += " current";
    if (!row.failed.empty()) {
      mark += " (failed: a job never progressed)";
    } else if (!row.eligible) {
      mark += " (past a floor)";
    }
    if (row.rounds < t.rows[t.current].rounds) {
      mark += absl::StrCat(" (dropped after round ", row.rounds, ")");
    }
    std::printf("%4d  %-17s %5s  %-10s %-11s %9s %9s %9.1f %10s %5.3f %9s%s\n",
                i + 1, row.settings.ThresholdsText().c_str(),
                row.settings.KnobText().c_str(),
                std::string(QueueOrderName(row.settings.queue_order)).c_str(),
                row.settings.placement.empty() ? "default"
                                               : row.settings.placement.c_str(),
                Hours(row.search.avg_jct_s).c_str(),
                Hours(row.search.p95_jct_s).c_str(), row.search.max_slowdown,
                Hours(row.search.longest_wait_s).c_str(), row.search.jain,
                row.holdout ? Hours(row.holdout->avg_jct_s).c_str() : "-",
                mark.c_str());
  }
  const TuneMetrics& a = t.current_holdout;
  const TuneMetrics& b = t.chosen_holdout;
  std::printf("\nChosen: %s\n", t.rows[t.chosen].settings.Flags().c_str());
  std::printf(
      "On the %lld held-out jobs, against the current settings: average JCT "
      "%s -> %s (predicted gain %s), p95 %s -> %s, largest slowdown %.1f -> "
      "%.1f, longest wait %s -> %s%s\n",
      static_cast<long long>(b.jobs), Hours(a.avg_jct_s).c_str(),
      Hours(b.avg_jct_s).c_str(), Percent(t.predicted_gain).c_str(),
      Hours(a.p95_jct_s).c_str(), Hours(b.p95_jct_s).c_str(), a.max_slowdown,
      b.max_slowdown, Hours(a.longest_wait_s).c_str(),
      Hours(b.longest_wait_s).c_str(),
      t.holdout_eligible ? "" : " (past a fairness floor)");
  if (!r.why.empty()) std::printf("%s\n", r.why.c_str());
}

TuneSettings SettingsOf(const v1::ClusterStatus& status) {
  const v1::Tuning& t = status.tuning().tuning();
  TuneSettings s;
  std::vector<double> thresholds(t.thresholds().begin(), t.thresholds().end());
  if (absl::StatusOr<QueueConfig> q = QueueConfig::Create(thresholds); q.ok()) {
    s.queues = *q;
  }
  s.promote_knob = t.promote_knob() == 0
                       ? std::numeric_limits<double>::infinity()
                       : t.promote_knob();
  if (absl::StatusOr<QueueOrder> o = ParseQueueOrder(t.queue_order()); o.ok()) {
    s.queue_order = *o;
  }
  // The placement in force, named, so that applying keeps it unless the
  // search changed it.
  s.placement = status.placement();
  return s;
}

void ToProto(const TuneSettings& s, v1::Tuning* out) {
  out->mutable_thresholds()->Assign(s.queues.thresholds().begin(),
                                    s.queues.thresholds().end());
  out->set_promote_knob(std::isinf(s.promote_knob) ? 0 : s.promote_knob);
  out->set_queue_order(std::string(QueueOrderName(s.queue_order)));
  out->set_placement(s.placement);
}

// Decides whether the chosen settings are worth applying.
void Judge(const TuneFlags& f, Round* r) {
  const TuneResult& t = r->result;
  if (t.chosen == t.current) {
    r->why = "The current settings are the best found: nothing to apply.";
    return;
  }
  if (!t.holdout_eligible) {
    r->why =
        "Not applied: on the held-out jobs the chosen settings pass a "
        "fairness floor.";
    return;
  }
  if (t.holdout_jobs == 0) {
    r->why =
        "Not applied: no job was held out to judge the choice on (a "
        "larger window, or --holdout above 0).";
    return;
  }
  if (t.predicted_gain < f.min_gain) {
    r->why = absl::StrFormat(
        "Not applied: the predicted gain %s is under --min-gain %s.",
        Percent(t.predicted_gain), Percent(f.min_gain));
    return;
  }
  r->would_apply = true;
}

absl::StatusOr<Round> TuneOnce(const TuneFlags& f, const TuneSettings& current,
                               TuneWindow window, const Topology& topology,
                               const TuneOptions& options) {
  ASSIGN_OR_RETURN(TuneSpace space, MakeSpace(f, current));
  AssignModels(&window.jobs, options.base.models, f.seed);
  Round r;
  r.window = std::move(window);
  std::atomic<int64_t> done{0}, planned{0};
  const auto began = std::chrono::steady_clock::now();
  {
    ProgressLine line([&] {
      return absl::StrFormat("tune: %d of about %d runs", done.load(),
                             planned.load());
    });
    ASSIGN_OR_RETURN(r.result, Tune(r.window.jobs, topology, current, space,
                                    options, [&](int64_t d, int64_t p) {
                                      done = d;
                                      planned = p;
                                    }));
  }
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count();
  return r;
}

int TuneTrace(const TuneFlags& f) {
  absl::StatusOr<TraceFormat> format = ParseTraceFormat(f.format);
  if (!format.ok()) return cli::Fail(std::string(format.status().message()));
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(f.trace, *format, &notes);
  if (!jobs.ok()) return cli::Fail(std::string(jobs.status().message()));
  absl::StatusOr<Topology> topology = ParseClusterSpec(f.cluster);
  if (!topology.ok())
    return cli::Fail(std::string(topology.status().message()));
  absl::StatusOr<double> window = ParseSpan("--window", f.window);
  if (!window.ok()) return cli::Fail(std::string(window.status().message()));
  absl::StatusOr<TuneOptions> options = MakeOptions(f);
  if (!options.ok()) return cli::Fail(std::string(options.status().message()));
  TuneSettings current;
  absl::StatusOr<QueueConfig> queues = QueueConfig::Parse(f.thresholds);
  if (!queues.ok()) {
    return cli::Fail(absl::StrCat("--thresholds: ", queues.status().message()));
  }
  current.queues = *queues;
  absl::StatusOr<double> knob = ParseKnob(f.promote_knob);
  if (!knob.ok()) return cli::Fail(std::string(knob.status().message()));
  current.promote_knob = *knob;
  absl::StatusOr<QueueOrder> order = ParseQueueOrderFlag(f.queue_order);
  if (!order.ok()) return cli::Fail(std::string(order.status().message()));
  current.queue_order = *order;
  current.placement = f.placement;
  if (jobs->empty()) return cli::Fail(absl::StrCat(f.trace, ": no jobs"));
  double first = jobs->front().submit_time.count(), last = first;
  for (const JobSpec& j : *jobs) {
    first = std::min(first, j.submit_time.count());
    last = std::max(last, j.submit_time.count());
  }
  const double end = f.end_hours >= 0 ? first + f.end_hours * 3600 : last;
  TuneWindow w = CutWindow(std::move(*jobs), end, *window, *topology);
  absl::StatusOr<Round> r =
      TuneOnce(f, current, std::move(w), *topology, *options);
  if (!r.ok()) return cli::Fail(absl::StrCat("tune: ", r.status().message()));
  Judge(f, &*r);
  if (r->would_apply) {
    r->why =
        "A trace has no master to apply to: run the master with the "
        "flags above.";
    r->would_apply = false;
  }
  PrintRound(f, *r,
             absl::StrFormat("%s (hours %.1f to %.1f)", f.trace,
                             std::max(0.0, end - *window - first) / 3600,
                             (end - first) / 3600),
             f.cluster);
  return 0;
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

}  // namespace

void AddTuneCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Find the scheduling settings (K queues and their bounds, PROMOTEKNOB, "
      "queue order, placement) that would have served a window of jobs best: "
      "a running master's own jobs (default) or a trace's. Each candidate "
      "replays the window's earlier jobs in the simulator; the best average "
      "JCT that keeps the fairness floors is chosen and judged on the most "
      "recent jobs, held out. --apply changes the master's settings when "
      "the predicted gain reaches --min-gain; --auto does so periodically "
      "and on drift");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--trace", f->trace,
                  "Tune on a trace file instead of the master's jobs (with "
                  "--cluster)");
  cmd->add_option("--format", f->format, "The trace's format (as simulate's)")
      ->capture_default_str();
  cmd->add_option("--cluster", f->cluster,
                  "With --trace: NxG, RxNxG or a cluster spec CSV");
  cmd->add_option("--window", f->window,
                  "How far back the window reaches: 14d, 36h, 90m, 45s")
      ->capture_default_str();
  cmd->add_option("--end-hours", f->end_hours,
                  "With --trace: the window ends this many hours after the "
                  "trace's first job (default: at its last)");
  cmd->add_option("--policy", f->policy,
                  "With --trace: tiresias-l or tiresias-g (a master: its own)")
      ->capture_default_str();
  cmd->add_option("--thresholds", f->thresholds,
                  "With --trace: the current queue bounds (a master: its own)")
      ->capture_default_str();
  cmd->add_option("--promote-knob", f->promote_knob,
                  "With --trace: the current PROMOTEKNOB")
      ->capture_default_str();
  cmd->add_option("--queue-order", f->queue_order,
                  "With --trace: the current queue order")
      ->capture_default_str();
  cmd->add_option("--placement", f->placement,
                  "With --trace: the current placement (default: the "
                  "policy's)");
  cmd->add_option("--search-thresholds", f->search_thresholds,
                  "Queue bounds to try, comma-separated, colons within one "
                  "(900,3600,1800:7200); default: K = 2 with 900 to 28800 "
                  "GPU-seconds (doubling) and K = 3 with every pair of those");
  cmd->add_option("--search-knobs", f->search_knobs,
                  "PROMOTEKNOB values to try (inf: off)")
      ->capture_default_str();
  cmd->add_option("--search-orders", f->search_orders, "Queue orders to try")
      ->capture_default_str();
  cmd->add_option("--search-placements", f->search_placements,
                  "Placements to try (default: only the current one)");
  cmd->add_option("--search", f->search,
                  "halving (successive halving over growing parts of the "
                  "window) or grid (every candidate on every job)")
      ->capture_default_str();
  cmd->add_option("--holdout", f->holdout,
                  "The most recent part of the window (a fraction of its "
                  "jobs) held out of the search, to judge the choice on")
      ->capture_default_str();
  cmd->add_option("--objective", f->objective, "avg or p95 JCT")
      ->capture_default_str();
  cmd->add_option("--slowdown-margin", f->slowdown_margin,
                  "Fairness floor: the largest slowdown may be at most this "
                  "fraction worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--wait-margin", f->wait_margin,
                  "Fairness floor: the longest wait may be at most this "
                  "fraction worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--p95-margin", f->p95_margin,
                  "Fairness floor: the p95 JCT may be at most this fraction "
                  "worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--finalists", f->finalists,
                  "The search's best this many are judged on the held-out "
                  "jobs, the best of them there chosen")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads,
                  "Runs in parallel (default: one per core)");
  cmd->add_option("--seed", f->seed,
                  "Seed for drawn models and censored durations")
      ->capture_default_str();
  cmd->add_option("--top", f->top, "Rows shown (the current and chosen always)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_flag("--apply", f->apply,
                "Change the master's settings to the chosen ones (an admin), "
                "when the predicted gain on held-out jobs is at least "
                "--min-gain and they keep the floors there");
  cmd->add_option("--min-gain", f->min_gain,
                  "Least predicted gain in the objective to apply, a fraction")
      ->capture_default_str();
  cmd->add_option("--auto", f->auto_interval,
                  "Tune and apply every INTERVAL (1d, 6h, ...), and at once "
                  "when the master reports drift; runs until interrupted");
  cmd->callback([f, exit_code] {
    if (!f->trace.empty()) {
      if (f->apply || !f->auto_interval.empty()) {
        *exit_code = cli::Fail(
            "tune --apply/--auto change a master's settings: leave out "
            "--trace");
        return;
      }
      if (f->cluster.empty()) {
        *exit_code = cli::Fail("tune --trace needs --cluster");
        return;
      }
      *exit_code = TuneTrace(*f);
      return;
    }
    *exit_code = TuneMaster(*f);
  });
}

}  // namespace tiresias
