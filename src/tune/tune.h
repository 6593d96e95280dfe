// Tuning a cluster's scheduling settings from its own history (`tiresias
// tune`): replay a window of jobs under a search over the K queues and
// their thresholds, PROMOTEKNOB, the order within a queue and placement,
// pick the setting with the best average (or p95) JCT among those that keep
// the fairness floors, and predict its gain on the window's most recent
// part, held out from the search.
//
// The window is split by submit time: the last holdout_fraction of its
// jobs (those submitted at or after the first of them) are held out, the
// others are the search's; each candidate replays them alone. The held-out
// prediction replays the whole window under the chosen and the current settings
// and counts only the jobs submitted after the split (the earlier ones warm the
// queues up), so it is judged on jobs the search never saw.
//
// Floors: a candidate is eligible only when its largest slowdown, its p95
// JCT and its longest wait are no worse than the current settings' (on the
// same jobs) by more than the margins. The current settings are always a
// candidate, so there is always a choice.
//
// The choice: the search's best few eligible candidates ranked ahead of
// the current settings (`finalists`) and
// the current settings are replayed on the whole window and judged on the
// held-out jobs; the best there that keeps the floors there too is chosen
// (else the current settings). Its gain on those jobs is the prediction:
// mildly optimistic, as they also served to pick among the finalists.
//
// Search: `grid` replays every candidate on all the search jobs;
// `halving` (successive halving) replays every candidate on the first
// quarter of them, keeps the best third (and the current settings), then
// on the first half, the best third again, then on all. Runs go in
// parallel over `threads`; each is deterministic (seeded).
#ifndef TIRESIAS_TUNE_TUNE_H_
#define TIRESIAS_TUNE_TUNE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/topology.h"
#include "sched/queues.h"
#include "sched/scheduler.h"
#include "sim/engine.h"

namespace tiresias {

// One candidate.
struct TuneSettings {
  QueueConfig queues = QueueConfig::PaperDefault();
  double promote_knob = std::numeric_limits<double>::infinity();
  QueueOrder queue_order = QueueOrder::kStable;
  std::string placement;  // empty: the policy's default

  // "3600" or "3250:7200".
  std::string ThresholdsText() const;
  // "inf" or the number.
  std::string KnobText() const;
  // The `simulate` / `master` flags that give these settings.
  std::string Flags() const;
  bool operator==(const TuneSettings& o) const;
};

// The values searched: every combination is a candidate.
struct TuneSpace {
  std::vector<QueueConfig> queues;
  std::vector<double> knobs;
  std::vector<QueueOrder> orders;
  std::vector<std::string> placements;  // "" is the policy's default

  // The default space around `current`: K = 2 with a bound of 0.25, 0.5,
  // 1, 2, 4 or 8 GPU-hours, K = 3 with every ascending pair of those; the
  // knob off, 2, 4, 8 or 16; both queue orders; the current placement.
  // 21 x 5 x 2 = 210 candidates (plus the current one if outside).
  static TuneSpace Default(const TuneSettings& current);
  // Every combination, the current settings first.
  std::vector<TuneSettings> Candidates(const TuneSettings& current) const;
};

// What a run is judged by, over the jobs it counts.
struct TuneMetrics {
  int64_t jobs = 0;
  double avg_jct_s = 0;
  double p95_jct_s = 0;
  double max_slowdown = 0;
  double longest_wait_s = 0;
  double jain = 0;  // Jain's index over slowdowns
};

enum class TuneObjective { kAverageJct, kP95Jct };
enum class TuneSearch { kGrid, kHalving };

struct TuneOptions {
  std::string policy = "tiresias-l";
  // Everything but the tuned settings (models, preemption cost, seed).
  SimConfig base;
  TuneObjective objective = TuneObjective::kAverageJct;
  TuneSearch search = TuneSearch::kHalving;
  // Of the window's jobs, the most recent part held out (0: none; the
  // prediction is then made on the search jobs themselves).
  double holdout_fraction = 0.25;
  // Fairness floors, as fractions: 0.05 allows 5% worse than current.
  double slowdown_margin = 0.05;
  double wait_margin = 0.05;
  double p95_margin = 0.05;
  // How many of the search's best eligible rows are judged on the held-out
  // jobs (with the current settings) to choose from.
  int finalists = 5;
  int threads = 1;
};

struct TuneRow {
  TuneSettings settings;
  TuneMetrics search;  // on the search jobs (the last round it ran in)
  int rounds = 0;      // halving rounds it ran in (grid: 1)
  bool eligible = false;  // keeps the floors against the current settings
  // A finalist's metrics on the held-out jobs.
  std::optional<TuneMetrics> holdout;
  // Why its run failed (the settings never let some job progress: see
  // sim/engine.h); such a row is never eligible.
  std::string failed;
};

struct TuneResult {
  // Best first: eligible rows by the objective (in the last round), then
  // the rest. Rows eliminated by halving come after those that ran on
  // every search job.
  std::vector<TuneRow> rows;
  int current = 0;  // index into rows
  int chosen = 0;
  int64_t search_jobs = 0;
  int64_t holdout_jobs = 0;
  double split_time = 0;  // submit time from which jobs are held out
  int64_t runs = 0;       // simulations made
  // The held-out part under the current and the chosen settings (the
  // same when the current ones are chosen).
  TuneMetrics current_holdout;
  TuneMetrics chosen_holdout;
  // 1 - chosen / current of the objective on the held-out jobs.
  double predicted_gain = 0;
  // Whether the chosen settings keep the floors on the held-out jobs too.
  bool holdout_eligible = true;
};

// Called with (runs done, runs planned); from any thread.
using TuneProgressFn = std::function<void(int64_t done, int64_t planned)>;

// `jobs` sorted by submit time, each with a duration, every one fitting
// `topology`. Fails on an empty window, a bad option or a failed run.
absl::StatusOr<TuneResult> Tune(const std::vector<JobSpec>& jobs,
                                const Topology& topology,
                                const TuneSettings& current,
                                const TuneSpace& space,
                                const TuneOptions& options,
                                const TuneProgressFn& progress = {});

// Metrics of `result` over the jobs submitted at or after `from`.
TuneMetrics MeasureRun(const SimResult& result, double from);

// The settings applied to a simulator configuration.
void ApplyTuneSettings(const TuneSettings& settings, SimConfig* config);

}  // namespace tiresias

#endif  // TIRESIAS_TUNE_TUNE_H_
