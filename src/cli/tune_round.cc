// `tiresias tune`: one tuning round (cli/tune_round.h).
#include "cli/tune_round.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/progress.h"
#include "cli/sweep.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "place/placement.h"
#include "sim/engine.h"

namespace tiresias::tune_cli {

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

}  // namespace tiresias::tune_cli
