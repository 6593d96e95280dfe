// What a simulation run means to a user: JCT statistics, queueing delay,
// makespan, preemptions, GPU utilization, and the paper's four bins.
//
// Bins: the first letter is size, S(mall) <= small_max_gpus GPUs (4) else
// L(arge); the second is length, S(hort) when the job's trace duration is
// under short_max_seconds (800 s) else L(ong). So "SL" is small and long.
#ifndef TIRESIAS_SIM_METRICS_H_
#define TIRESIAS_SIM_METRICS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "sim/fairness.h"

namespace tiresias {

struct BinOptions {
  int small_max_gpus = 4;
  double short_max_seconds = 800;
};

struct BinSummary {
  int64_t jobs = 0;
  double avg_jct_s = 0;
  double p95_jct_s = 0;
  double avg_queueing_s = 0;
};

struct Summary {
  std::string policy;
  std::string placement;
  int64_t jobs = 0;
  double avg_jct_s = 0;
  double median_jct_s = 0;
  double p95_jct_s = 0;
  double max_jct_s = 0;
  double avg_queueing_s = 0;
  double makespan_s = 0;
  int64_t preemptions = 0;
  double preemption_overhead_s = 0;
  double gpu_utilization = 0;  // busy GPU-seconds / (GPUs x makespan)
  std::map<std::string, BinSummary> bins;  // "SS", "SL", "LS", "LL"
  FairnessSummary fairness;  // sim/fairness.h
  // Learnt PACKLIMIT (SimConfig::learn_pack_limit under `profiled`).
  std::optional<double> learnt_pack_limit;
  int64_t pack_limit_samples = 0;
  std::string pack_limit_fit;
  int64_t pack_limit_updates = 0;
};

// `warmup_s`: jobs submitted in the run's first warmup_s seconds are left
// out of every job metric (JCT, queueing, bins, fairness); they still ran,
// and makespan and utilization are the whole run's.
Summary Summarize(const SimResult& result, const BinOptions& bins = {},
                  double warmup_s = 0);

// The jobs of `result` the metrics count: those submitted at or after
// first_submit + warmup_s.
bool CountsInMetrics(const SimResult& result, const JobResult& job,
                     double warmup_s);

// Nearest-rank percentile of `sorted` (ascending, non-empty), q in [0, 1].
double Percentile(const std::vector<double>& sorted, double q);

// Empirical CDF of `values` as (value, fraction <= value) points, at most
// `max_points` of them (evenly spaced in rank), always ending at (max, 1).
std::vector<std::pair<double, double>> Cdf(std::vector<double> values,
                                           int max_points);

// The tail of `values` as (value, fraction of values above it) points, at
// fractions spaced evenly on a log scale (`per_decade` a decade) from the
// smallest value down to 1/n: what a 1 - CDF plot on log axes needs, which
// a rank-spaced CDF leaves at its top.
std::vector<std::pair<double, double>> Tail(std::vector<double> values,
                                            int per_decade);

// Busy GPUs over time, averaged over at most `max_points` equal windows
// spanning the run: each point is (window start, mean busy GPUs).
std::vector<std::pair<double, double>> UtilizationSeries(
    const SimResult& result, int max_points);
// The same for waiting (pending) jobs.
std::vector<std::pair<double, double>> WaitingSeries(const SimResult& result,
                                                     int max_points);

}  // namespace tiresias

#endif  // TIRESIAS_SIM_METRICS_H_
