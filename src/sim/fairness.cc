#include "sim/fairness.h"

#include <algorithm>
#include <utility>

#include "sim/metrics.h"

namespace tiresias {

std::vector<JobFairness> PerJobFairness(const std::vector<JobResult>& jobs) {
  // active(t) = jobs with submit <= t < end. Its integral from the first
  // event to each event time, so the integral over any [a, b] is a
  // difference of two interpolated prefix values.
  std::vector<std::pair<double, int>> events;
  events.reserve(2 * jobs.size());
  for (const JobResult& j : jobs) {
    events.push_back({j.submit, +1});
    events.push_back({j.end, -1});
  }
  std::sort(events.begin(), events.end());
  std::vector<double> times;     // distinct event times
  std::vector<double> integral;  // of active(t) from times[0] to times[i]
  std::vector<int> active_after;  // active(t) on [times[i], times[i + 1])
  int active = 0;
  for (size_t i = 0; i < events.size();) {
    const double t = events[i].first;
    if (times.empty()) {
      integral.push_back(0);
    } else {
      integral.push_back(integral.back() +
                         active_after.back() * (t - times.back()));
    }
    times.push_back(t);
    for (; i < events.size() && events[i].first == t; ++i) {
      active += events[i].second;
    }
    active_after.push_back(active);
  }
  auto prefix = [&](double t) {
    // The last event time <= t (t is always one of them here).
    const size_t k =
        std::upper_bound(times.begin(), times.end(), t) - times.begin() - 1;
    return integral[k] + active_after[k] * (t - times[k]);
  };

  std::vector<JobFairness> out(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobResult& j = jobs[i];
    JobFairness& f = out[i];
    const double life = j.end - j.submit;
    if (life > 0) f.active_jobs = (prefix(j.end) - prefix(j.submit)) / life;
    if (!(j.duration > 0)) continue;
    f.slowdown = j.jct() / j.duration;
    f.ftf = j.jct() / (j.duration * f.active_jobs);
  }
  return out;
}

FairnessSummary SummarizeFairness(const std::vector<JobResult>& jobs,
                                  const std::vector<JobFairness>& per_job) {
  FairnessSummary s;
  std::vector<double> slowdowns;
  double sum = 0, sum_sq = 0;
  int64_t ftfs = 0, over_1 = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    s.longest_wait_s = std::max(s.longest_wait_s, jobs[i].queueing());
    const JobFairness& f = per_job[i];
    if (!f.slowdown) {
      ++s.jobs_without_duration;
      continue;
    }
    slowdowns.push_back(*f.slowdown);
    sum += *f.slowdown;
    sum_sq += *f.slowdown * *f.slowdown;
    ++ftfs;
    over_1 += *f.ftf > 1;
    s.ftf_max = std::max(s.ftf_max, *f.ftf);
  }
  if (slowdowns.empty()) return s;
  std::sort(slowdowns.begin(), slowdowns.end());
  const double n = static_cast<double>(slowdowns.size());
  s.avg_slowdown = sum / n;
  s.max_slowdown = slowdowns.back();
  s.p95_slowdown = Percentile(slowdowns, 0.95);
  s.jain_slowdown = sum_sq > 0 ? sum * sum / (n * sum_sq) : 0;
  s.ftf_over_1_share = static_cast<double>(over_1) / ftfs;
  return s;
}

}  // namespace tiresias
