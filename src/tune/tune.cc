#include "tune/tune.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "sched/policy.h"
#include "sim/metrics.h"

namespace tiresias {
namespace {

// Slack on the floors: a candidate equal to the current settings keeps
// them whatever rounding did.
constexpr double kSlowdownSlack = 1e-9;
constexpr double kWaitSlackS = 1.0;

double Objective(const TuneMetrics& m, TuneObjective objective) {
  return objective == TuneObjective::kP95Jct ? m.p95_jct_s : m.avg_jct_s;
}

bool KeepsFloors(const TuneMetrics& m, const TuneMetrics& current,
                 const TuneOptions& o) {
  return m.max_slowdown <=
             current.max_slowdown * (1 + o.slowdown_margin) + kSlowdownSlack &&
         m.p95_jct_s <= current.p95_jct_s * (1 + o.p95_margin) + kWaitSlackS &&
         m.longest_wait_s <=
             current.longest_wait_s * (1 + o.wait_margin) + kWaitSlackS;
}

absl::Status CheckOptions(const TuneOptions& o, const TuneSpace& space) {
  ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                   MakePolicy(o.policy, PolicyOptions{}));
  if (!policy->traits().multi_level_queues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy ", o.policy,
        " has no queues to tune: expected tiresias-l or tiresias-g"));
  }
  if (!(o.holdout_fraction >= 0 && o.holdout_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("held-out fraction ", o.holdout_fraction,
                     ": expected at least 0 and under 1"));
  }
  if (o.finalists < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("finalists ", o.finalists, ": expected 0 or more"));
  }
  for (double margin : {o.slowdown_margin, o.wait_margin, o.p95_margin}) {
    if (!(margin >= 0) || !std::isfinite(margin)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fairness margin ", margin, ": expected a non-negative fraction"));
    }
  }
  if (space.queues.empty() || space.knobs.empty() || space.orders.empty() ||
      space.placements.empty()) {
    return absl::InvalidArgumentError(
        "the search space is empty: every setting needs at least one value");
  }
  for (double knob : space.knobs) {
    if (!(knob > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PROMOTEKNOB ", knob, ": expected a positive number or inf"));
    }
  }
  if (o.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads ", o.threads, ": expected at least 1"));
  }
  return absl::OkStatus();
}

struct RunTask {
  int row;
  const std::vector<JobSpec>* jobs;
  double count_from;
  TuneMetrics* out;
};

// Runs every task over `threads`; the first failure wins.
// A candidate whose run fails because the settings never let a job
// progress (the simulator's FailedPrecondition) is marked failed: never
// eligible, ranked last. Any other failure, or the current settings',
// ends the search.
absl::Status RunAll(std::vector<TuneRow>& rows,
                    const std::vector<RunTask>& tasks, const Topology& topology,
                    const TuneOptions& options, std::atomic<int64_t>* done,
                    int64_t planned, const TuneProgressFn& progress) {
  std::atomic<size_t> next{0};
  std::vector<absl::Status> failures(tasks.size());
  auto work = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      const RunTask& task = tasks[i];
      SimConfig config = options.base;
      config.policy = options.policy;
      config.record_timeseries = false;
      ApplyTuneSettings(rows[task.row].settings, &config);
      absl::StatusOr<SimResult> result =
          Simulate(*task.jobs, topology, config);
      if (!result.ok()) {
        failures[i] = result.status();
      } else {
        *task.out = MeasureRun(*result, task.count_from);
      }
      const int64_t d = ++*done;
      if (progress) progress(d, planned);
    }
  };
  const int n = std::max(
      1, std::min<int>(options.threads, static_cast<int>(tasks.size())));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const absl::Status& s = failures[i];
    if (s.ok()) continue;
    TuneRow& row = rows[tasks[i].row];
    if (tasks[i].row == 0 ||
        s.code() != absl::StatusCode::kFailedPrecondition) {
      return s;
    }
    if (row.failed.empty()) row.failed = std::string(s.message());
  }
  return absl::OkStatus();
}

}  // namespace

std::string TuneSettings::ThresholdsText() const {
  return absl::StrJoin(queues.thresholds(), ":", [](std::string* out, double t) {
    absl::StrAppend(out, absl::StrFormat("%g", t));
  });
}

std::string TuneSettings::KnobText() const {
  return std::isinf(promote_knob) ? "inf"
                                  : absl::StrFormat("%g", promote_knob);
}

std::string TuneSettings::Flags() const {
  std::string flags = absl::StrCat(
      "--thresholds ", ThresholdsText(), " --promote-knob ", KnobText(),
      " --queue-order ", std::string(QueueOrderName(queue_order)));
  if (!placement.empty()) absl::StrAppend(&flags, " --placement ", placement);
  return flags;
}

bool TuneSettings::operator==(const TuneSettings& o) const {
  return queues.thresholds() == o.queues.thresholds() &&
         (promote_knob == o.promote_knob ||
          (std::isinf(promote_knob) && std::isinf(o.promote_knob))) &&
         queue_order == o.queue_order && placement == o.placement;
}

TuneSpace TuneSpace::Default(const TuneSettings& current) {
  TuneSpace space;
  const std::vector<double> bounds = {900, 1800, 3600, 7200, 14400, 28800};
  for (double b : bounds) space.queues.push_back(*QueueConfig::Create({b}));
  for (size_t i = 0; i < bounds.size(); ++i) {
    for (size_t j = i + 1; j < bounds.size(); ++j) {
      space.queues.push_back(*QueueConfig::Create({bounds[i], bounds[j]}));
    }
  }
  space.knobs = {std::numeric_limits<double>::infinity(), 2, 4, 8, 16};
  space.orders = {QueueOrder::kStable, QueueOrder::kStartTime};
  space.placements = {current.placement};
  return space;
}

std::vector<TuneSettings> TuneSpace::Candidates(
    const TuneSettings& current) const {
  std::vector<TuneSettings> out = {current};
  for (const QueueConfig& q : queues) {
    for (double knob : knobs) {
      for (QueueOrder order : orders) {
        for (const std::string& placement : placements) {
          TuneSettings s{q, knob, order, placement};
          if (!(s == current)) out.push_back(std::move(s));
        }
      }
    }
  }
  return out;
}

void ApplyTuneSettings(const TuneSettings& settings, SimConfig* config) {
  config->scheduler.queues = settings.queues;
  config->scheduler.promote_knob = settings.promote_knob;
  config->scheduler.queue_order = settings.queue_order;
  if (!settings.placement.empty()) config->placement = settings.placement;
}

TuneMetrics MeasureRun(const SimResult& result, double from) {
  TuneMetrics m;
  std::vector<double> jcts;
  double sum_slowdown = 0, sum_slowdown2 = 0;
  int64_t with_slowdown = 0;
  for (const JobResult& job : result.jobs) {
    if (job.submit < from) continue;
    jcts.push_back(job.jct());
    m.longest_wait_s = std::max(m.longest_wait_s, job.queueing());
    if (job.duration > 0) {
      const double slowdown = job.jct() / job.duration;
      m.max_slowdown = std::max(m.max_slowdown, slowdown);
      sum_slowdown += slowdown;
      sum_slowdown2 += slowdown * slowdown;
      ++with_slowdown;
    }
  }
  m.jobs = static_cast<int64_t>(jcts.size());
  if (jcts.empty()) return m;
  double sum = 0;
  for (double j : jcts) sum += j;
  m.avg_jct_s = sum / static_cast<double>(jcts.size());
  std::sort(jcts.begin(), jcts.end());
  m.p95_jct_s = Percentile(jcts, 0.95);
  if (with_slowdown > 0 && sum_slowdown2 > 0) {
    m.jain = sum_slowdown * sum_slowdown /
             (static_cast<double>(with_slowdown) * sum_slowdown2);
  }
  return m;
}

absl::StatusOr<TuneResult> Tune(const std::vector<JobSpec>& jobs,
                                const Topology& topology,
                                const TuneSettings& current,
                                const TuneSpace& space,
                                const TuneOptions& options,
                                const TuneProgressFn& progress) {
  RETURN_IF_ERROR(CheckOptions(options, space));
  if (jobs.empty()) {
    return absl::InvalidArgumentError("no jobs in the window to tune on");
  }
  const double first = jobs.front().submit_time.count();
  TuneResult result;
  // The split: the submit time of the first held-out job, by count.
  const size_t held = static_cast<size_t>(
      std::floor(options.holdout_fraction * static_cast<double>(jobs.size())));
  result.split_time =
      held == 0 ? first : jobs[jobs.size() - held].submit_time.count();
  std::vector<JobSpec> search;
  for (const JobSpec& job : jobs) {
    if (held == 0 || job.submit_time.count() < result.split_time) {
      search.push_back(job);
    }
  }
  if (search.empty()) {
    return absl::InvalidArgumentError(
        "no jobs before the held-out part: widen the window or hold out less");
  }
  result.search_jobs = static_cast<int64_t>(search.size());
  for (const JobSpec& job : jobs) {
    if (held > 0 && job.submit_time.count() >= result.split_time) {
      ++result.holdout_jobs;
    }
  }

  std::vector<TuneRow> rows;
  for (TuneSettings& s : space.Candidates(current)) {
    rows.push_back(TuneRow{std::move(s)});
  }
  // Rounds: the prefixes of the search jobs each round replays.
  std::vector<size_t> prefixes = {search.size()};
  if (options.search == TuneSearch::kHalving && rows.size() > 6) {
    prefixes = {std::max<size_t>(1, search.size() / 4),
                std::max<size_t>(1, search.size() / 2), search.size()};
  }
  int64_t planned = 1 + options.finalists;  // the held-out runs, at most
  {
    size_t alive = rows.size();
    for (size_t r = 0; r < prefixes.size(); ++r) {
      planned += static_cast<int64_t>(alive);
      alive = std::min(alive, 1 + (alive + 2) / 3);
    }
  }
  std::atomic<int64_t> done{0};
  std::vector<int> alive(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) alive[i] = static_cast<int>(i);
  auto rank = [&](const std::vector<int>& ids) {
    const TuneMetrics& cur = rows[0].search;
    std::vector<int> order = ids;
    for (int i : order) {
      rows[i].eligible =
          rows[i].failed.empty() && KeepsFloors(rows[i].search, cur, options);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const bool fa = !rows[a].failed.empty(), fb = !rows[b].failed.empty();
      if (fa != fb) return fb;  // failed runs last
      if (rows[a].eligible != rows[b].eligible) return rows[a].eligible;
      return Objective(rows[a].search, options.objective) <
             Objective(rows[b].search, options.objective);
    });
    return order;
  };
  std::vector<int> ranked;
  for (size_t r = 0; r < prefixes.size(); ++r) {
    const std::vector<JobSpec> prefix(search.begin(),
                                      search.begin() + prefixes[r]);
    std::vector<RunTask> tasks;
    for (int i : alive) {
      tasks.push_back({i, &prefix, first, &rows[i].search});
      rows[i].rounds = static_cast<int>(r) + 1;
    }
    RETURN_IF_ERROR(RunAll(rows, tasks, topology, options, &done, planned,
                           progress));
    result.runs += static_cast<int64_t>(tasks.size());
    ranked = rank(alive);
    if (r + 1 < prefixes.size()) {
      const size_t keep = (ranked.size() + 2) / 3;
      std::vector<int> next(ranked.begin(), ranked.begin() + keep);
      if (std::find(next.begin(), next.end(), 0) == next.end()) {
        next.push_back(0);  // the current settings run every round
      }
      alive = next;
    }
  }
  // The final order: those in the last round, ranked; then the others by
  // the round they reached (later first), then their rank there.
  std::vector<int> order = ranked;
  std::vector<int> dropped;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (std::find(ranked.begin(), ranked.end(), static_cast<int>(i)) ==
        ranked.end()) {
      dropped.push_back(static_cast<int>(i));
    }
  }
  std::stable_sort(dropped.begin(), dropped.end(), [&](int a, int b) {
    const bool fa = !rows[a].failed.empty(), fb = !rows[b].failed.empty();
    if (fa != fb) return fb;
    if (rows[a].rounds != rows[b].rounds)
      return rows[a].rounds > rows[b].rounds;
    if (rows[a].eligible != rows[b].eligible) return rows[a].eligible;
    return Objective(rows[a].search, options.objective) <
           Objective(rows[b].search, options.objective);
  });
  order.insert(order.end(), dropped.begin(), dropped.end());
  // Finalists: the current settings and the best `finalists` eligible
  // rows that ran on every search job replay the whole window, counted
  // from the split. The choice is the best of them on those held-out jobs
  // among those that keep the floors there too (the current ones do).
  // Only rows ranked ahead of the current settings: a row that did worse
  // on the search jobs is never chosen for the held-out ones alone.
  std::vector<int> finalists = {0};
  for (int i : order) {
    if (i == 0) break;
    if (static_cast<int>(finalists.size()) > options.finalists) break;
    if (rows[i].eligible &&
        rows[i].rounds == static_cast<int>(prefixes.size())) {
      finalists.push_back(i);
    }
  }
  std::vector<TuneMetrics> judged(finalists.size());
  std::vector<RunTask> holdout;
  for (size_t k = 0; k < finalists.size(); ++k) {
    holdout.push_back({finalists[k], &jobs, result.split_time, &judged[k]});
  }
  RETURN_IF_ERROR(RunAll(rows, holdout, topology, options, &done,
                         result.runs + static_cast<int64_t>(holdout.size()),
                         progress));
  result.runs += static_cast<int64_t>(holdout.size());
  size_t best = 0;
  for (size_t k = 0; k < finalists.size(); ++k) {
    if (!rows[finalists[k]].failed.empty()) continue;  // failed held out
    rows[finalists[k]].holdout = judged[k];
    if (k > 0 && KeepsFloors(judged[k], judged[0], options) &&
        Objective(judged[k], options.objective) <
            Objective(judged[best], options.objective)) {
      best = k;
    }
  }
  const int chosen_row = finalists[best];
  result.current_holdout = judged[0];
  result.chosen_holdout = judged[best];
  const double cur = Objective(result.current_holdout, options.objective);
  const double cho = Objective(result.chosen_holdout, options.objective);
  result.predicted_gain = cur > 0 ? 1 - cho / cur : 0;
  result.holdout_eligible =
      KeepsFloors(result.chosen_holdout, result.current_holdout, options);

  for (int i : order) result.rows.push_back(rows[i]);
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == 0) result.current = static_cast<int>(i);
    if (order[i] == chosen_row) result.chosen = static_cast<int>(i);
  }
  return result;
}

}  // namespace tiresias
