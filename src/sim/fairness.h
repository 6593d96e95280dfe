// Fairness of a simulated run, per job and summarized: what a policy that
// wins on average JCT does to the jobs it makes wait.
//
//   slowdown  JCT / the job's run time alone (its trace duration): 1 is a
//             job that never waited and ran at full speed.
//   FTF       finish-time fairness (Themis, NSDI'20): rho = JCT / (duration
//             x N), N the average number of active (submitted, unfinished)
//             jobs over the job's life, itself included: the JCT it would
//             have with 1/N of the cluster. rho > 1: worse off than an equal
//             share.
//   Jain      Jain's index over slowdowns, (sum x)^2 / (n sum x^2), in
//             (0, 1]: 1 when every job is slowed down alike.
//
// Jobs with a duration of 0 have no slowdown or FTF and are left out of
// those (counted in `jobs_without_duration`).
#ifndef TIRESIAS_SIM_FAIRNESS_H_
#define TIRESIAS_SIM_FAIRNESS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/engine.h"

namespace tiresias {

struct JobFairness {
  std::optional<double> slowdown;  // unset: no duration
  std::optional<double> ftf;
  double active_jobs = 1;  // N: average active jobs over its life
};

struct FairnessSummary {
  double avg_slowdown = 0;
  double max_slowdown = 0;
  double p95_slowdown = 0;
  double ftf_max = 0;
  double ftf_over_1_share = 0;  // of the jobs with an FTF
  double jain_slowdown = 0;
  double longest_wait_s = 0;  // the largest queueing delay
  int64_t jobs_without_duration = 0;
};

// Per job, in the order of `jobs`. O(n log n).
std::vector<JobFairness> PerJobFairness(const std::vector<JobResult>& jobs);

FairnessSummary SummarizeFairness(const std::vector<JobResult>& jobs,
                                  const std::vector<JobFairness>& per_job);

}  // namespace tiresias

#endif  // TIRESIAS_SIM_FAIRNESS_H_
