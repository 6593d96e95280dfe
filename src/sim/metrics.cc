#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace tiresias {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

namespace {

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / v.size();
}

std::string BinOf(const JobResult& job, const BinOptions& options) {
  std::string bin;
  bin += job.gpus <= options.small_max_gpus ? 'S' : 'L';
  bin += job.duration < options.short_max_seconds ? 'S' : 'L';
  return bin;
}

}  // namespace

bool CountsInMetrics(const SimResult& result, const JobResult& job,
                     double warmup_s) {
  return job.submit >= result.first_submit + warmup_s;
}

Summary Summarize(const SimResult& result, const BinOptions& bin_options,
                  double warmup_s) {
  Summary s;
  s.policy = result.policy;
  s.placement = result.placement;
  s.preemptions = result.preemptions;
  s.preemption_overhead_s = result.overhead_seconds;
  s.learnt_pack_limit = result.learnt_pack_limit;
  s.pack_limit_samples = result.pack_limit_samples;
  s.pack_limit_fit = result.pack_limit_fit;
  s.pack_limit_updates = result.pack_limit_updates;
  s.makespan_s = result.last_end - result.first_submit;
  if (s.makespan_s > 0 && result.total_gpus > 0) {
    s.gpu_utilization =
        result.busy_gpu_seconds / (result.total_gpus * s.makespan_s);
  }
  std::vector<double> jct, queueing;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>
      by_bin;
  for (const char* bin : {"SS", "SL", "LS", "LL"}) by_bin[bin];
  std::vector<JobResult> counted;
  for (const JobResult& job : result.jobs) {
    if (!CountsInMetrics(result, job, warmup_s)) continue;
    counted.push_back(job);
    jct.push_back(job.jct());
    queueing.push_back(job.queueing());
    auto& [bin_jct, bin_queueing] = by_bin[BinOf(job, bin_options)];
    bin_jct.push_back(job.jct());
    bin_queueing.push_back(job.queueing());
  }
  s.avg_jct_s = Mean(jct);
  s.avg_queueing_s = Mean(queueing);
  std::sort(jct.begin(), jct.end());
  s.median_jct_s = Percentile(jct, 0.5);
  s.p95_jct_s = Percentile(jct, 0.95);
  s.max_jct_s = jct.empty() ? 0 : jct.back();
  s.jobs = static_cast<int64_t>(counted.size());
  // N (active jobs over a job's life) counts warm-up jobs too: they held
  // the cluster.
  const std::vector<JobFairness> all = PerJobFairness(result.jobs);
  std::vector<JobFairness> kept;
  for (size_t i = 0; i < result.jobs.size(); ++i) {
    if (CountsInMetrics(result, result.jobs[i], warmup_s)) {
      kept.push_back(all[i]);
    }
  }
  s.fairness = SummarizeFairness(counted, kept);
  for (auto& [bin, values] : by_bin) {
    auto& [bin_jct, bin_queueing] = values;
    BinSummary b;
    b.jobs = static_cast<int64_t>(bin_jct.size());
    b.avg_jct_s = Mean(bin_jct);
    b.avg_queueing_s = Mean(bin_queueing);
    std::sort(bin_jct.begin(), bin_jct.end());
    b.p95_jct_s = Percentile(bin_jct, 0.95);
    s.bins[bin] = b;
  }
  return s;
}

std::vector<std::pair<double, double>> Tail(std::vector<double> values,
                                            int per_decade) {
  std::vector<std::pair<double, double>> points;
  if (values.empty() || per_decade < 1) return points;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  size_t last = values.size();  // index of the last point taken
  for (int k = 0;; ++k) {
    const double above = std::pow(10.0, -static_cast<double>(k) / per_decade);
    // The point with floor(above x n) values above it (n - 1 at most).
    const double count_above = std::floor(above * n + 1e-9);
    if (count_above < 1) break;
    const double c = std::min(count_above, n - 1);
    if (c < 1) break;  // nothing above: off a log axis
    const size_t i = static_cast<size_t>(n - 1 - c);
    if (i != last) {
      points.push_back({values[i], c / n});
      last = i;
    }
  }
  return points;
}

std::vector<std::pair<double, double>> Cdf(std::vector<double> values,
                                           int max_points) {
  std::vector<std::pair<double, double>> points;
  if (values.empty() || max_points < 1) return points;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const size_t step = std::max<size_t>(1, (n + max_points - 1) / max_points);
  for (size_t i = step - 1; i < n; i += step) {
    points.push_back({values[i], static_cast<double>(i + 1) / n});
  }
  if (points.back().second < 1.0) points.push_back({values.back(), 1.0});
  return points;
}

namespace {

// `value` of the time series averaged over at most `max_points` equal
// windows spanning the run.
template <typename Value>
std::vector<std::pair<double, double>> SeriesMeans(const SimResult& result,
                                                   int max_points,
                                                   Value value) {
  std::vector<std::pair<double, double>> points;
  const auto& series = result.timeseries;
  const double start = result.first_submit, end = result.last_end;
  if (series.empty() || max_points < 1 || end <= start) return points;
  const double width = (end - start) / max_points;
  size_t k = 0;  // series[k] is in force at the window's start
  for (int w = 0; w < max_points; ++w) {
    const double lo = start + w * width, hi = lo + width;
    double area = 0;
    while (k + 1 < series.size() && series[k + 1].time <= lo) ++k;
    for (size_t j = k; j < series.size() && series[j].time < hi; ++j) {
      const double from = std::max(lo, series[j].time);
      const double to =
          j + 1 < series.size() ? std::min(hi, series[j + 1].time) : hi;
      if (to > from) area += value(series[j]) * (to - from);
    }
    points.push_back({lo, area / width});
  }
  return points;
}

}  // namespace

std::vector<std::pair<double, double>> UtilizationSeries(
    const SimResult& result, int max_points) {
  return SeriesMeans(result, max_points,
                     [](const TimePoint& p) { return p.busy_gpus; });
}

std::vector<std::pair<double, double>> WaitingSeries(const SimResult& result,
                                                     int max_points) {
  return SeriesMeans(result, max_points,
                     [](const TimePoint& p) { return p.pending_jobs; });
}

}  // namespace tiresias
