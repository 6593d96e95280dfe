#include "cli/tune_window.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "sim/engine.h"

namespace tiresias {

TuneWindow CutWindow(std::vector<JobSpec> all, double end, double window_s,
                     const Topology& topology) {
  TuneWindow w;
  w.end = end;
  w.start = end - window_s;
  std::stable_sort(all.begin(), all.end(),
                   [](const JobSpec& a, const JobSpec& b) {
                     return a.submit_time < b.submit_time;
                   });
  for (JobSpec& job : all) {
    const double t = job.submit_time.count();
    if (t < w.start || t > w.end) continue;
    if (job.num_gpus <= 0 || !job.duration) {
      ++w.left_out;
      continue;
    }
    w.jobs.push_back(std::move(job));
  }
  w.left_out +=
      static_cast<int64_t>(RemoveUnfittable(&w.jobs, topology).size());
  const double first = w.jobs.empty() ? 0 : w.jobs.front().submit_time.count();
  for (JobSpec& job : w.jobs) {
    job.submit_time = Seconds{job.submit_time.count() - first};
    w.known_sizes.push_back(job.num_gpus * job.duration->count());
  }
  return w;
}

TuneWindow MasterWindow(const std::vector<v1::Job>& jobs, double now,
                        double window_s, const Topology& topology,
                        uint64_t seed) {
  std::vector<double> ended;  // durations of ended jobs that ran
  for (const v1::Job& job : jobs) {
    const bool over = job.has_end_time();
    if (over && job.total_executed_seconds() > 0) {
      ended.push_back(job.total_executed_seconds());
    }
  }
  std::sort(ended.begin(), ended.end());
  std::mt19937_64 rng(seed);
  std::vector<JobSpec> specs;
  int64_t censored = 0, left_out = 0;
  for (const v1::Job& job : jobs) {
    const int gpus = job.spec().gpus();
    double duration = job.total_executed_seconds();
    if (gpus <= 0 || (job.has_end_time() && duration <= 0)) {
      ++left_out;
      continue;
    }
    if (!job.has_end_time()) {
      ++censored;
      const double ran = duration;
      auto from = std::lower_bound(ended.begin(), ended.end(), ran);
      if (from == ended.end()) {
        duration = ran > 0 ? 2 * ran : 60;
      } else {
        std::uniform_int_distribution<size_t> pick(
            0, static_cast<size_t>(ended.end() - from) - 1);
        duration = std::max(ran, *(from + pick(rng)));
      }
    }
    JobSpec spec{job.id(), gpus, Seconds{job.submit_time()},
                 Seconds{std::max(1.0, duration)}, ""};
    specs.push_back(std::move(spec));
  }
  TuneWindow w = CutWindow(std::move(specs), now, window_s, topology);
  w.censored = censored;
  w.left_out += left_out;
  // The drift baseline, as the master counts the jobs it compares with:
  // finished jobs (exit 0) that hold GPUs.
  w.known_sizes.clear();
  for (const v1::Job& job : jobs) {
    if (job.state() == v1::JOB_STATE_FINISHED &&
        job.total_executed_seconds() > 0 && job.spec().gpus() > 0) {
      w.known_sizes.push_back(job.spec().gpus() * job.total_executed_seconds());
    }
  }
  return w;
}

absl::StatusOr<Topology> TopologyOfNodes(const v1::ListNodesResponse& nodes) {
  std::vector<ServerSpec> servers;
  for (const v1::Node& n : nodes.nodes()) {
    if (n.state() != v1::NODE_STATE_UP || n.gpus() <= 0) continue;
    ServerSpec s;
    s.num_gpus = n.gpus();
    s.name = n.name();
    servers.push_back(std::move(s));
  }
  if (servers.empty()) {
    return absl::FailedPreconditionError(
        "the master has no up node with GPUs to tune for");
  }
  return Topology::Create(std::move(servers));
}

}  // namespace tiresias
